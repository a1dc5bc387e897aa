/*
 * zeros: the forced zeros, the cells that every solution of {y >= 0,
 * A y = c} holds at zero. With deterministic knowledge the
 * maximum-entropy optimum lies on the boundary of that set, where its
 * multipliers are infinite and every dual method crawls; without those
 * cells the optimum is interior. This header is the search's one entry
 * point (struct zeros, zeros_deepen) and, below it, what its files share
 * among themselves:
 *
 *   zeros.c            the entry point: the depths, in order
 *   zeros_propagate.c  rows tight at their bounds, per-bucket flows
 *   zeros_relax.c      the per-value relaxations
 *   zeros_ipm.c        the interior point method of the relaxations
 *   zeros_center.c     the interior point method of a whole component
 *   zeros_lp.c         GLPK: the last word on a component, and conflicts
 *
 * Every zero written is proved (to ZERO_RECORDS): zeros are only ever
 * added, so each depth starts from what the ones before it found.
 */
#ifndef PMAXENT_ZEROS_H
#define PMAXENT_ZEROS_H

#include "solver_internal.h"

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
	/* every component with an open row decided (zeros_center.c, else
	 * zeros_lp.c): the zeros are complete */
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
 * (n_cells flags), implied (n_rows flags: knowledge rows that the zeros
 * make a sum of invariant rows, which need no multiplier) and open, the
 * components of buckets linked by open rows (neither implied nor
 * without a free cell), whose zeros are not decided yet: empty at
 * ZEROS_EXACT. Caller-owned struct; zeros_init/zeros_finish.
 */
struct zeros {
	const struct dataset *ds;
	const struct knowledge *k; /* for conflict messages; may be NULL */
	const struct invariants *inv;
	uint8_t *zero, *implied;
	struct components open;
	enum zeros_depth depth; /* reached */
	size_t found;		/* forced zeros so far */
	size_t added;		/* of which the last zeros_deepen found */
	double seconds;		/* in zeros_deepen, every call */
	struct relax_memo *memo;
};

/* Allocates z's arrays for inv (built from ds; k may be NULL if inv has
 * no knowledge rows); caller frees with zeros_finish, also after a
 * failure. */
enum pm_status zeros_init(struct zeros *z, const struct dataset *ds, const struct knowledge *k,
			  const struct invariants *inv);
void zeros_finish(struct zeros *z);

/*
 * Deepens the search to depth (nothing if z is there already). When no y
 * satisfies the rows, PM_ERR_INCONSISTENT names an irreducible set of
 * conflicting rules. o (may be NULL) for cancels and the time limit
 * (PM_ERR_CANCELLED, every zero written so far proved) and the threads of
 * the component interior point method.
 */
enum pm_status zeros_deepen(struct zeros *z, enum zeros_depth depth, const struct solver_options *o,
			    struct pm_error *err);

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
 * o (may be NULL) for cancels: PM_ERR_CANCELLED, every zero written so far
 * proved.
 */
enum pm_status zeros_relax(const struct invariants *inv, const uint8_t *resolved, uint8_t *zero,
			   size_t max_cells, const struct solver_options *o,
			   struct relax_memo *memo, size_t *found, int *infeasible);

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

/* ---- zeros_ipm.c ----------------------------------------------------- */

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
	const struct solver_options *o; /* for cancels (may be NULL) */
};

/* A variable of the last iterate within this fraction of its range from
 * a bound is claimed to be held there (zeros_relax.c proves it). */
#define RELAX_CLAIM 1e-6

/* Interior point iterates toward the relative interior of the feasible
 * set (zero objective), until the duals prove every claim (RELAX_CLAIM)
 * or the steps stop lowering the gap: x (n entries) receives the last iterate and
 * *converged whether residuals and complementarity reached rounding
 * (PM_ERR_CANCELLED when p->o asks to stop).
 * Then lo_bound[j] and up_bound[j] (n entries each) bound x_j and u_j -
 * x_j in every feasible x, from the duals of the last iterate (a claim
 * with a bound at rounding level is proved; INFINITY: no bound). */
enum pm_status zeros_ipm(const struct relax_problem *p, double *x, double *lo_bound,
			 double *up_bound, int *converged);

/*
 * A sum with a bound on its rounding, for the certificates of
 * zeros_ipm.c and zeros_center.c: sums of duals in the thousands
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

/* ---- zeros_lp.c ------------------------------------------------------ */

struct glp_prob; /* glpk.h's glp_prob */

/* Solves GLPK problem lp (whose objective must be bounded) from an
 * advanced basis, with the floating-point simplex and, where that fails or
 * runs out of iterations, the exact one: 1 optimal (feasible), 0
 * infeasible, -1 solver failure (the exact simplex too failed or ran out),
 * -2 cancelled (o's progress callback, may be NULL). */
int zeros_lp_solve(struct glp_prob *lp, const struct solver_options *o);
/* GLPK's simplex in time slices, o's cancel polled between them, within
 * *left iterations (taken off): GLPK's return code, -2 when stopped.
 * presolve for the first slice only; tol_bnd 0 keeps GLPK's. */
int zeros_lp_simplex(struct glp_prob *lp, const struct solver_options *o, int presolve,
		     double tol_bnd, int *left);
/* GLPK's exact simplex alone, from lp's basis (from a floating-point
 * optimum, to confirm it): zeros_lp_solve's return codes. */
int zeros_lp_exact(struct glp_prob *lp, const struct solver_options *o);
/* Is lp's floating-point optimum clean, with no basic variable beyond its
 * bounds and no improving reduced cost (both to 1e-9), so that GLPK's
 * tolerances played no part in it? */
int zeros_lp_clean(struct glp_prob *lp);
/* Simplex iterations allowed on lp in each arithmetic, floating-point and
 * exact; a simplex that needs more is taken to cycle. */
int zeros_lp_iteration_budget(struct glp_prob *lp);
/* A new, empty problem, GLPK's terminal output off: its environment is
 * made by the first call that needs it (30 us, of a 2 ms solve on Adult,
 * K = 50, that needs no LP). NULL if out of memory. Caller frees with
 * glp_delete_prob, and the environment with glp_free_env. */
struct glp_prob *zeros_lp_create(void);
/* Frees GLPK's environment of this thread, once every program is deleted
 * (a worker thread's would outlive it). */
void zeros_lp_release(void);

/*
 * The zero finder's program on component i of cs (its buckets' invariant
 * rows and its knowledge rows): every cell no solution makes positive
 * gets z->zero set; PM_ERR_INCONSISTENT, naming an irreducible set of
 * conflicting rules, when no solution exists.
 */
enum pm_status zeros_lp_component(struct zeros *z, const struct components *cs, size_t i,
				  const struct solver_options *o, struct pm_error *err);
/* Propagation or a relaxation proved that no solution exists: the
 * components of the touched buckets (every knowledge row linking them)
 * are tried until one's conflicting rules are named
 * (PM_ERR_INCONSISTENT); PM_OK if none shows a conflict. */
enum pm_status zeros_lp_conflict(struct zeros *z, const struct solver_options *o,
				 struct pm_error *err);
/* Appends "rules[i] P(...) = p" for knowledge row `row` to msg. */
void zeros_describe_row(const struct zeros *z, size_t row, char *msg, size_t len);

/* ---- zeros_center.c -------------------------------------------------- */

/* An open component (zeros.c): its buckets, its open knowledge rows (inv
 * rows) and the zeros known so far (zero, inv cells); o for cancels (may
 * be NULL). All borrowed. */
struct center_problem {
	const struct invariants *inv;
	const struct solver_options *o;
	const uint32_t *buckets, *rows;
	size_t n_buckets, n_rows;
	const uint8_t *zero;
	int threads; /* of the pool forming the Schur complement (<= 0: all) */
	/* out (n_rows flags, may be NULL): the rows that depend on the
	 * others and the invariants, left out of the method; with *settled,
	 * each holds at its end (implied: no multiplier needed) */
	uint8_t *dependent;
};

/* Forced zeros of the component by an interior point method: every cell
 * it proves zero (below 1e-9 records in every solution) is set in
 * zero_out (may be p->zero), *found counts them. *settled when the method
 * converged to the centre and proved every cell it puts on the zero side:
 * then the others are positive there, and the zeros are complete. */
enum pm_status zeros_center(const struct center_problem *p, uint8_t *zero_out, size_t *found,
			    int *settled);

#endif
