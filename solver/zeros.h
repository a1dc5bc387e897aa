/*
 * zeros: the forced zeros, the cells that every solution of {y >= 0,
 * A y = c} holds at zero. With deterministic knowledge the
 * maximum-entropy optimum lies on the boundary of that set, where its
 * multipliers are infinite and every dual method crawls; without those
 * cells the optimum is interior. This header is the search's one entry
 * point (struct zeros, zeros_deepen) and, below it, what its files share
 * among themselves:
 *
 *   zeros.c               the entry point: the depths, in order
 *   zeros_propagate.c     rows tight at their bounds, per-bucket flows
 *   zeros_relax.c         the per-value relaxations
 *   zeros_ipm.c           the interior point method, for a relaxation and
 *                         for a whole component alike
 *   zeros_ipm_normal.c    its normal equations
 *   zeros_lp.c            GLPK's simplex, in slices, and its exact simplex
 *   zeros_lp_component.c  a component's programs, and the zero finder:
 *                         the last word on a component
 *   zeros_lp_conflict.c   the rules of a conflict named
 *   lp_guard.c            GLPK's fatal errors caught
 *
 * Every zero written is proved (to ZERO_RECORDS): zeros are only ever
 * added, so each depth starts from what the ones before it found.
 */
#ifndef PMAXENT_ZEROS_H
#define PMAXENT_ZEROS_H

#include <float.h>
#include <math.h>

#include "cancel.h"
#include "components.h"
#include "solver.h"

/* ---- zeros.c: the entry point ------------------------------------------- */

/* How hard to look, each depth including the ones before it. */
enum zeros_depth {
	ZEROS_NONE = 0, /* nothing looked at yet */
	/* knowledge rows with right-hand side 0, then propagation to a
	 * fixpoint: rows tight at their bounds, a flow argument per bucket */
	ZEROS_CHEAP,
	/* the per-value relaxations (zeros_relax.c) of the values whose
	 * open rows hold few free cells (ZEROS_SMALL_CELLS), each round
	 * followed by propagation */
	ZEROS_SMALL,
	/* every per-value relaxation */
	ZEROS_RELAXED,
	/* every component with an open row decided (zeros_ipm.c, else
	 * zeros_lp_component.c): the zeros are complete */
	ZEROS_EXACT,
};

/*
 * The relaxations of values whose open rows hold at most this many free
 * cells, counted once per row (the entries of the relaxation's rows),
 * are ZEROS_SMALL's: they cost well under a millisecond per thousand
 * entries, less than a solve that fails for want of them; the large
 * ones can cost more than a solve that needs none of them.
 */
#define ZEROS_SMALL_CELLS 8192

/*
 * One search, deepened on demand (zeros_deepen). The results: zero
 * (n_cells flags), implied (n_rows flags: knowledge rows that need no
 * multiplier, as the zeros make them a sum of invariant rows or, found
 * by the interior point method of ZEROS_EXACT, they depend on the other
 * rows and hold) and open, the
 * components of buckets linked by open rows (neither implied nor
 * without a free cell), whose zeros are not decided yet: empty at
 * ZEROS_EXACT. Caller-owned struct; zeros_init/zeros_finish.
 */
struct zeros {
	const struct dataset *ds;
	const struct knowledge *k; /* for conflict messages; may be NULL */
	const struct invariants *inv;
	uint8_t *zero, *implied;
	/* the rows the search itself sets aside: the implied ones, and
	 * those of interval rules (invariants_interval), which it leaves out (a
	 * relaxation: every zero it proves without them is forced) */
	uint8_t *settled;
	struct components open;
	enum zeros_depth depth; /* reached */
	size_t found;		/* forced zeros so far */
	size_t added;		/* of which the last zeros_deepen found */
	double seconds;		/* in zeros_deepen, every call */
	/* components whose exact decision was too large (zeros_lp_component.c's
	 * LP_MAX_ENTRIES, after the interior point method's CENTER_ROWS):
	 * their forced zeros stay unknown, the solve's to run down */
	size_t undecided;
	struct relax_memo *memo;
	int threads; /* of the interior point methods' pools (<= 0: all); the caller's */
};

/* Allocates z's arrays for inv (built from ds; k may be NULL if inv has
 * no knowledge rows); caller frees with zeros_finish, also after a
 * failure. */
enum pm_status zeros_init(struct zeros *z, const struct dataset *ds, const struct knowledge *k,
			  const struct invariants *inv);
void zeros_finish(struct zeros *z);

/*
 * Deepens the search to depth (nothing if z is there already). ray (per
 * row, may be NULL): the rows whose multipliers a failing probe saw still
 * moving (struct solver_probe), where a forced zero's certificate lies.
 * They are looked at first: each open component relaxed to them alone
 * (dropping rows is a relaxation, so every zero it proves is forced), at
 * a fraction of the cubic cost of its exact decision while they are few.
 * If that adds zeros, the call ends there (z->depth unchanged, z->added
 * counting them) for the caller to probe again; if not, the search goes
 * to depth. When no y satisfies the rows, PM_ERR_INCONSISTENT names an
 * irreducible set of conflicting rules. cancel (may be NULL): the
 * token polled for a cancel or the time limit (PM_ERR_CANCELLED, every
 * zero written so far proved); z->threads: the component interior point
 * method's.
 */
enum pm_status zeros_deepen(struct zeros *z, enum zeros_depth depth, const uint8_t *ray,
			    struct cancel *cancel, struct pm_error *err);

/* ---- zeros_propagate.c ------------------------------------------------- */

/*
 * Exact forced zeros found without a linear program, to a fixpoint: rows
 * tight at their per-bucket bounds, and a flow argument per bucket. Sets
 * resolved[row] (n_rows entries) for knowledge rows that the zeros make a
 * sum of invariant rows. *infeasible is set when a row or a bucket can
 * hold for no assignment.
 */
enum pm_status zeros_propagate(const struct invariants *inv, uint8_t *zero, uint8_t *resolved,
			       int *infeasible);
/* The same with the flows of every bucket, not only those knowledge rows
 * touch: the pseudonym model (lifted_run.c) zeros cells of buckets no
 * rule touches. */
enum pm_status zeros_propagate_all(const struct invariants *inv, uint8_t *zero, uint8_t *resolved,
				   int *infeasible);

/* ---- zeros_relax.c --------------------------------------------------- */

struct relax_memo;

/*
 * Forced zeros of one sensitive value at a time: the cells of value s in
 * the buckets its open knowledge rows touch, each between bounds from its
 * bucket, summing to n(s, b) per bucket, under those rows (a relaxation of
 * the whole system, so every zero it forces is forced). Identical buckets
 * and same-signature tuples are merged first; an interior point suggests
 * the cells held at a bound and a linear program proves the suggestion
 * before any zero is written. Adds to zero[] (n_cells), *found counts the
 * new zeros; *infeasible is set when the relaxation has no solution.
 * Values whose open rows hold more than max_cells free cells are left out.
 * cancel (may be NULL), polled: PM_ERR_CANCELLED, every zero written so
 * far proved.
 */
enum pm_status zeros_relax(const struct invariants *inv, const uint8_t *resolved, uint8_t *zero,
			   size_t max_cells, struct cancel *cancel, struct relax_memo *memo,
			   size_t *found, int *infeasible);

/*
 * What the rounds of one search have relaxed (memo of zeros_relax, may
 * be NULL; zero-initialized before the first round, relax_memo_finish
 * after the last): per value, the buckets its relaxation read and their
 * zeros once it had written its own (zeros are only ever added, so an
 * equal count means the same zeros). A value whose buckets have gained no
 * zero since is not relaxed again: its program can only have lost rows
 * (propagation resolves them), a weaker relaxation, and its own zeros
 * only fixed what every solution of it already held.
 */
struct relax_seen {
	uint32_t *buckets; /* NULL: not relaxed yet */
	size_t n_buckets, zeros;
};
struct relax_memo {
	struct relax_seen *seen; /* per sensitive value, n_seen of them */
	size_t n_seen;
	size_t skipped; /* relaxations not run again, over every round */
};
void relax_memo_finish(struct relax_memo *m);

/* ---- zeros_relax.c's program ------------------------------------------- */

/*
 * x with 0 <= x_j <= u_j, sum of x over each group = d, and for each row
 * r: sum of x_j over the variables in r = c_r. Variables of a group are
 * contiguous. Rows of variable j: var_row[var_off[j] .. var_off[j + 1]).
 */
struct relax_problem {
	size_t n, n_groups, n_rows;
	const double *u;
	const uint32_t *group;
	const double *d;
	const size_t *var_off;
	const uint32_t *var_row;
	const double *c;
	struct cancel *cancel; /* for cancels (may be NULL) */
};

/* ---- zeros_ipm.c -------------------------------------------------------- */

/*
 * The feasibility problem of the interior point method: cells y >= 0 in
 * blocks, block k's cells cell_off[k] .. cell_off[k + 1] forming
 * g_k x h[k] (row-major), its rows summing to sums[sum_off[k] ..
 * sum_off[k] + g_k) and its columns to the h[k] after them; and the
 * knowledge rows, row r the sum of the cells row_cell[row_off[r] ..
 * row_off[r + 1]) equal to rhs[r]. An open component of zeros.c (its
 * buckets with their QI and SA counts, its open rows) and a value's
 * relaxation (zeros_relax.c: a block per group, each variable and its
 * distance to its bound a row of two cells) are both of this form. All
 * borrowed.
 */
struct ipm_problem {
	size_t n_blocks, n_rows;
	const size_t *cell_off, *sum_off, *row_off;
	const uint32_t *h, *row_cell;
	const double *sums, *rhs;
	struct cancel *cancel; /* for cancels (may be NULL) */
	int threads;	       /* of the pool forming the Schur complement (<= 0: all) */
	/* stop once every cell on the zero side is proved, whether or not
	 * the others are clearly positive (a relaxation claims no more) */
	int claims_only;
	/* out (n_rows flags, may be NULL): the rows that depend on the
	 * others and the blocks, left out of the method; with *settled, each
	 * holds at its end (implied: no multiplier needed) */
	uint8_t *dependent;
	/* out (per cell, may be NULL): the cells on the zero side of the last
	 * iterate, proved or not (what a linear program may check) */
	uint8_t *side;
};

/* Forced zeros of the problem by an interior point method: every cell
 * it proves zero (below ZERO_RECORDS in every solution) is set in zero
 * (per cell, in: the cells known to be zero), *found counts them.
 * *settled when the method converged to the centre and proved every
 * cell it puts on the zero side: then the others are positive there,
 * and the zeros are complete. PM_ERR_CANCELLED when p->cancel asks to stop
 * (the cells proved so far are set). */
enum pm_status zeros_ipm(const struct ipm_problem *p, uint8_t *zero, size_t *found, int *settled);

/*
 * Bounded variables in groups (struct relax_problem: 0 <= x_j <= u_j,
 * each group summing to its demand, and rows over the variables) as a
 * problem in blocks: each group a block of g x 2 cells, its row j the
 * variable x_j and its distance u_j - x_j to its bound (summing to u_j),
 * its columns summing to the demand and the rest; each row over its
 * variables' first cells. Variable j's cells are 2j and 2j + 1; zero
 * marks those of a variable with no room (u_j = 0), side receives the
 * zero side (claims_only). Caller frees with zeros_ipm_bounded_finish,
 * also after a failure.
 */
struct ipm_bounded {
	struct ipm_problem p;
	size_t *cell_off, *sum_off, *row_off;
	uint32_t *h, *row_cell;
	double *sums;
	uint8_t *zero, *side;
};
enum pm_status zeros_ipm_bounded(const struct relax_problem *p, struct ipm_bounded *b);
void zeros_ipm_bounded_finish(struct ipm_bounded *b);

/* ---- zeros_ipm.c, zeros_ipm_normal.c: the method's state --------------- */

/* One problem's iterate, its normal equations and their scratch (the
 * cells of block k: loff[k] .. loff[k + 1], row-major g x h). */
struct ipm_state {
	const struct ipm_problem *p;
	const uint32_t *rows; /* local row -> the problem's row */
	size_t nb, nr, n;
	size_t *loff, *qoff, *foff; /* per bucket: cells, rows + columns, factorization */
	size_t *ck_off;		    /* per local cell: its open rows ck[..] */
	uint32_t *ck;
	uint8_t *fixed; /* local cell known to be zero */
	/* per cell: iterate, D = y / s, scratch, dual residual, step,
	 * Mehrotra's second-order term, bound */
	double *y, *s, *d, *v, *rd, *dy, *ds, *corr, *u;
	double *w, *dw, *rp, *rhs; /* per bucket row or column */
	double *mu, *dmu, *rk, *rhsk;
	double *w0, *mu0; /* the iterate's dual while purify changes it */
	int proved;	  /* the last certify proved every zero-side cell */
	double *fac, *S, *scratch;
	double *tw;   /* 2 (g + h) of the widest bucket */
	size_t width; /* g + h of the widest bucket */
	struct parallel *pool;
	int parts;
	struct ipm_part *part;
};

/* Forming S on one part of the pool: its share of S (part 0: c->S), and
 * per bucket its distinct rows, their sums and solves. */
struct ipm_part {
	double *S;
	uint32_t *loc, *rows;
	uint64_t *stamp, tick;
	double *pq, *ab; /* per row of the bucket: P, and per pattern M^+ P */
	size_t cap;
	uint32_t *pat, *first; /* per row its pattern; per pattern its first row */
	double *key, *t;       /* per pattern Σ P; the patterns' P . M^+ P' */
	size_t tcap;
	int failed;
};

static inline size_t bucket_g(const struct ipm_state *c, size_t k)
{
	return (c->loff[k + 1] - c->loff[k]) / c->p->h[k];
}

static inline size_t bucket_h(const struct ipm_state *c, size_t k)
{
	return c->p->h[k];
}

/* ---- zeros_ipm_normal.c ------------------------------------------------- */

/* D = c->d: every block's M factored, S formed (the parts' shares added
 * in part order) and factored with pivot threshold eps; PM_ERR_NOMEM,
 * or PM_ERR_CANCELLED if the caller asked to stop in between. */
enum pm_status zeros_ipm_factor(struct ipm_state *c, double eps);
/* Solves A D A^T (dw, dmu) = (rhs, dmu) in place: the blocks' rows and
 * columns in c->rhs, the knowledge rows in c->dmu; the solution in c->dw
 * and c->dmu. */
void zeros_ipm_solve(struct ipm_state *c);

/* ---- zeros_ipm.c: the certificates' sums -------------------------------- */

/*
 * A sum with a bound on its rounding, for the certificates of
 * zeros_ipm.c: sums of duals in the thousands
 * that come out near zero. Compensated (Ogita, Rump and Oishi's Sum2, a
 * product split exactly by fma), so the error is about eps times the
 * result plus (n eps)^2 times the terms' sizes: cells whose sum is zero
 * but for rounding add next to nothing to a certificate's charges.
 */
struct csum {
	double s, c, size;
	size_t n;
};

static inline void csum_add(struct csum *a, double x)
{
	double t = a->s + x, z = t - a->s;

	a->c += (a->s - (t - z)) + (x - z);
	a->s = t;
	a->size += fabs(x);
	a->n++;
}

static inline void csum_mul(struct csum *a, double x, double y)
{
	double p = x * y;

	csum_add(a, p);
	csum_add(a, fma(x, y, -p));
}

static inline double csum_value(const struct csum *a)
{
	return a->s + a->c;
}

/* |csum_value - exact sum| is below this (with a factor 2 to spare). */
static inline double csum_error(const struct csum *a)
{
	double u = DBL_EPSILON / 2, g = 2.0 * (double)(a->n + 1) * u;

	return 2.0 * (u * fabs(csum_value(a)) + g * g * a->size);
}

/* ---- lp_guard.c --------------------------------------------------------- */

/*
 * fn(ctx) with GLPK's fatal errors caught, which would otherwise abort
 * the process: fn's status, or after such an error PM_ERR_INTERNAL ("the
 * LP solver failed: " and GLPK's message) in err, with GLPK's
 * environment of this thread freed and every program in it. So fn makes
 * and deletes its programs itself and holds none of an outer guard's
 * across a call that may fail (a nested guard frees those too); memory
 * it allocates otherwise belongs in ctx, for the caller to free. Guards
 * nest, the innermost catching.
 */
enum pm_status lp_guard_run(enum pm_status (*fn)(void *ctx), void *ctx, struct pm_error *err);

/* ---- zeros_lp.c ------------------------------------------------------ */

struct glp_prob; /* glpk.h's glp_prob */

/* Solves GLPK problem lp (whose objective must be bounded) from an
 * advanced basis, with the floating-point simplex and, where that fails or
 * runs out of iterations, the exact one: *feasible 1 optimal (feasible),
 * 0 infeasible; PM_ERR_INTERNAL solver failure (the exact simplex too
 * failed or ran out), PM_ERR_CANCELLED (cancel, may be NULL). */
enum pm_status zeros_lp_solve(struct glp_prob *lp, struct cancel *cancel, int *feasible);
/* GLPK's simplex in time slices, cancel polled between them, within
 * *left iterations (taken off): *glpk gets GLPK's return code;
 * PM_ERR_CANCELLED when stopped. presolve for the first slice only;
 * tol_bnd 0 keeps GLPK's. */
enum pm_status zeros_lp_simplex(struct glp_prob *lp, struct cancel *cancel, int presolve,
				double tol_bnd, int *left, int *glpk);
/* GLPK's exact simplex alone, from lp's basis (from a floating-point
 * optimum, to confirm it): zeros_lp_solve's results. */
enum pm_status zeros_lp_exact(struct glp_prob *lp, struct cancel *cancel, int *feasible);
/* A rigorous upper bound on the optimum of lp, maximized over fixed rows
 * and columns within finite bounds l >= 0, plus offset, from the row
 * duals of its last floating-point solution (weak duality, evaluated with
 * error-bounded sums): at most the optimum plus rounding of twice the
 * working precision when those duals are optimal. NaN for another
 * shape. Proves what only GLPK's exact simplex could, at the cost of a
 * pass over the matrix. */
double zeros_lp_safe_max(struct glp_prob *lp, double offset);
/* Is lp's floating-point optimum clean, with no basic variable beyond its
 * bounds and no improving reduced cost (both to 1e-9), so that GLPK's
 * tolerances played no part in it? */
int zeros_lp_clean(struct glp_prob *lp);
/* Simplex iterations allowed on lp in each arithmetic, floating-point and
 * exact; a simplex that needs more is taken to cycle. */
int zeros_lp_iteration_budget(struct glp_prob *lp);
/* A new, empty problem, GLPK's terminal output off: its environment is
 * made by the first call that needs it (most solves need no LP). NULL if
 * out of memory. Caller frees with
 * glp_delete_prob, and the environment with glp_free_env. */
struct glp_prob *zeros_lp_create(void);
/* Frees GLPK's environment of this thread, once every program is deleted
 * (a worker thread's would outlive it). */
void zeros_lp_release(void);

/* ---- zeros_lp_component.c: a component's programs, its zero finder ------ */

/* A component: its buckets and knowledge rows (borrowed from the
 * struct components of zeros_lp_conflict), with local cell numbers. */
struct component {
	size_t n_buckets, n_krows, m;
	const uint32_t *buckets, *krows;
	uint32_t *cells; /* local -> inv cell, non-zero cells only */
};

/* Invariant rows of each bucket, and components, shared by all LPs. */
struct lp_context {
	struct cancel *cancel; /* polled; may be NULL */
	const struct dataset *ds;
	const struct knowledge *k;
	const struct invariants *inv;
	uint8_t *zero;
	size_t *brow_off; /* invariant rows of bucket b: brow[brow_off[b] ..) */
	uint32_t *brow;
	int32_t *local;	    /* inv cell -> local column, -1 if not in the LP */
	size_t max_entries; /* the largest program built (LP_MAX_ENTRIES) */
};

/* The context of z's programs (the invariant rows of each bucket are
 * indexed when the first program is built); free it with
 * zeros_lp_context_finish. */
struct lp_context zeros_lp_context(const struct zeros *z, struct cancel *cancel);
void zeros_lp_context_finish(struct lp_context *bd);
/* Local columns for the component's cells; with skip_zero, only those not
 * yet known to be zero. */
enum pm_status zeros_lp_cells(struct lp_context *bd, struct component *c, int skip_zero);
/* Frees c->cells (zeros_lp_cells) and clears c. */
void zeros_lp_component_finish(struct component *c);
/* The component's LP: homogenized zero finder, or (homog = 0) the plain
 * feasibility problem A y = c, y >= 0 with the knowledge rows in use[]
 * (NULL: all). Returns NULL when out of memory; the caller deletes it
 * (glp_delete_prob). */
struct glp_prob *zeros_lp_build(struct lp_context *bd, const struct component *c,
				const uint8_t *use, int homog);
/* Zero finder LP on one component; conflicts are reported. *undecided
 * (and nothing done) when its program is over bd->max_entries
 * (LP_MAX_ENTRIES; a conflict check's LP_CHECK_ENTRIES). */
enum pm_status zeros_lp_component_solve(struct lp_context *bd, struct component *c, int *undecided,
					struct pm_error *err);
/*
 * The zero finder's program on component i of cs (its buckets' invariant
 * rows and its knowledge rows): every cell no solution makes positive
 * gets z->zero set; PM_ERR_INCONSISTENT, naming an irreducible set of
 * conflicting rules, when no solution exists. A program too large to
 * build (LP_MAX_ENTRIES) is not: z->undecided counts the component.
 */
enum pm_status zeros_lp_component(struct zeros *z, const struct components *cs, size_t i,
				  struct cancel *cancel, struct pm_error *err);

/* ---- zeros_lp_conflict.c: conflicting rules named ----------------------- */

/* The components of the touched buckets (every knowledge row linking
 * them, an interval's with both its bounds) are tried until one's
 * conflicting rules are named (PM_ERR_INCONSISTENT); PM_OK if none shows
 * a conflict. proved: propagation or a relaxation proved that no
 * solution exists, so that if the only candidates are too large to
 * build the verdict stands without the names; else the programs are
 * kept smaller (LP_CHECK_ENTRIES) and one too large means PM_OK
 * (unknown). */
enum pm_status zeros_lp_conflict(struct zeros *z, struct cancel *cancel, int proved,
				 struct pm_error *err);
/* c has no solution: PM_ERR_INCONSISTENT naming its conflicting rules,
 * those a deletion filter in shrinking chunks leaves, an irreducible
 * infeasible set (each one is needed for the conflict). */
enum pm_status zeros_lp_conflict_report(struct lp_context *bd, struct component *c,
					struct pm_error *err);
/*
 * A deletion filter in shrinking chunks over n rows: use[] (1 each on
 * entry) keeps the rows that stay needed for infeasible(ctx, use) == 0,
 * an irreducible infeasible set when it returns 0; stay[] (may be NULL)
 * rows never dropped. feasible returns 1, 0, or a negative code (-1
 * failure, -2 cancelled), which ends the filter with that code. save:
 * scratch of n bytes.
 */
int zeros_lp_filter(uint8_t *use, const uint8_t *stay, size_t n, uint8_t *save,
		    int (*feasible)(void *ctx, const uint8_t *use), void *ctx);
/* Appends "rules[i] P(...) = p" for knowledge row `row` to msg. */
void zeros_describe_row(const struct zeros *z, size_t row, char *msg, size_t len);

#endif
