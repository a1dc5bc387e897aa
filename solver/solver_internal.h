/*
 * Internal to the solver component: the thread pool, the per-bucket
 * Schur complement and Newton pieces of the two-level dual, the dense
 * factorization. Not part of solver.h; the forced-zero search shares
 * its own header, zeros.h.
 */
#ifndef PMAXENT_SOLVER_INTERNAL_H
#define PMAXENT_SOLVER_INTERNAL_H

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <time.h>

#include "components.h"
#include "maxent.h"
#include "metrics.h"
#include "privacy.h"
#include "solve.h"
#include "solver.h"

/*
 * Calls fn(args..., h) with h a constant for the usual bucket widths, so
 * that the compiler unrolls the short loops over h (buckets of 5 records
 * under 5-diversity have h = 5): the same arithmetic in the same order as
 * the general case, only without its loop overhead.
 */
#define BY_WIDTH_CASE(k, fn, ...)                                                                  \
	case k:                                                                                    \
		fn(__VA_ARGS__, k);                                                                \
		break
#define BY_WIDTH(fn, h, ...)                                                                       \
	do {                                                                                       \
		switch (h) {                                                                       \
			BY_WIDTH_CASE(2, fn, __VA_ARGS__);                                         \
			BY_WIDTH_CASE(3, fn, __VA_ARGS__);                                         \
			BY_WIDTH_CASE(4, fn, __VA_ARGS__);                                         \
			BY_WIDTH_CASE(5, fn, __VA_ARGS__);                                         \
			BY_WIDTH_CASE(6, fn, __VA_ARGS__);                                         \
			BY_WIDTH_CASE(7, fn, __VA_ARGS__);                                         \
			BY_WIDTH_CASE(8, fn, __VA_ARGS__);                                         \
		default:                                                                           \
			fn(__VA_ARGS__, h);                                                        \
		}                                                                                  \
	} while (0)
/* For the functions BY_WIDTH specializes (inlined into each case), and
 * their loops over h (unrolled where h is a constant). */
#define INLINE static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8")

/* fmin and fmax where no NaN is expected, without the call GCC makes for
 * those (minsd and maxsd do not treat NaN as they must): for the loops
 * over buckets and cells. As with fmin and fmax, a NaN b leaves a. */
static inline double num_min(double a, double b)
{
	return b < a ? b : a;
}

static inline double num_max(double a, double b)
{
	return b > a ? b : a;
}

/* Four doubles as one vector (two SSE2 registers, or one AVX2 register
 * in the clone VEC_CLONES makes, picked at load time: the same
 * arithmetic in the same order either way, so results do not depend on
 * the CPU). */
typedef double v4d __attribute__((vector_size(4 * sizeof(double))));
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define VEC_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define VEC_CLONES
#endif

/* Monotonic seconds, for the phases' timings and the time limit. */
static inline double solver_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/*
 * Has the caller asked the solve to stop? o's tick (o may be NULL) with no
 * iteration to report (0, NaN): a cancel, or the time limit, both of
 * which solver.c's tick checks before it tells the caller where the
 * solve is. Polled between the steps of the zero search (relaxations,
 * interior point iterations, LP slices), which have no iterations of
 * their own to report.
 */
static inline int solver_stop_asked(const struct solver_options *o)
{
	return o && o->tick && o->tick(o->tick_ctx, 0, NAN);
}

/*
 * Records to which a value counts as zero, everywhere the forced zeros are
 * decided: a cell is forced to zero when no solution puts more than this
 * in it (the relaxations' and the interior point method's certificates),
 * a knowledge row at one of its bounds within this is tight
 * (propagation), and a rule whose row has no cell holds when it asks for
 * no more (zeros.c). One bound, so that the decisions agree: a cell of
 * 3e-9 records zeroed by a looser one made the accuracy infinite.
 */
#define ZERO_RECORDS 1e-9

/* ---- parallel.c --------------------------------------------------------- */

struct parallel;

/* A pool of `threads` parts (<= 0: parallel_cpus()), the calling
 * thread included. Caller frees with parallel_destroy, which returns at
 * once: the workers finish on their own, the last one freeing the pool. */
enum pm_status parallel_create(int threads, struct parallel **out);
void parallel_destroy(struct parallel *p);
int parallel_parts(const struct parallel *p);
/* Runs fn(ctx, part, parts) for every part, the caller doing part 0, and
 * returns when all are done. p may be NULL (one part, inline). */
void parallel_run(struct parallel *p, void (*fn)(void *ctx, int part, int parts), void *ctx);
/* The items [*lo, *hi) of part `part`, balanced by the weights whose
 * prefix sums are off[0..n] (NULL: unit weights). */
void parallel_range(size_t n, const size_t *off, int part, int parts, size_t *lo, size_t *hi);
/* Runs fn(ctx, item, part) once for every item in [0, n), each taken by
 * whichever thread is free (part: which one, for its scratch), and
 * returns when all are done. p may be NULL (inline, part 0). */
void parallel_items(struct parallel *p, size_t n, void (*fn)(void *ctx, size_t item, int part),
		    void *ctx);
/* parallel_items in two halves, so that the caller can do other work
 * while the workers take items: start wakes them (with no workers it does
 * nothing), finish takes what is left and waits; both with the same
 * arguments, and no other phase between them. */
void parallel_items_start(struct parallel *p, size_t n,
			  void (*fn)(void *ctx, size_t item, int part), void *ctx);
void parallel_items_finish(struct parallel *p, size_t n,
			   void (*fn)(void *ctx, size_t item, int part), void *ctx);

/* ---- alone.c ------------------------------------------------------------ */

/* Scratch of alone_solve for buckets up to g_max x h_max, and the shapes
 * it has solved; caller frees *out with alone_work_destroy (also after a
 * failure). */
struct alone_work;
enum pm_status alone_work_create(size_t g_max, size_t h_max, struct alone_work **out);
void alone_work_destroy(struct alone_work *w);
/*
 * The maximum-entropy estimate of bucket b alone with its forced zeros
 * (zero: n_cells flags), written to its cells of y: exactly by peeling
 * where the zeros allow, else by matrix scaling. PM_ERR_INTERNAL when the
 * scaling misses its target (the bucket then needs the dual).
 */
enum pm_status alone_solve(const struct dataset *ds, const struct invariants *inv, size_t b,
			   const uint8_t *zero, double *y, struct alone_work *w);
/*
 * Bucket b's cells of y scaled to its counts with themselves as the
 * kernel (a cell at 0 stays 0): the iterate of a solve the time limit
 * stopped, made to hold the bucket's invariants. PM_ERR_INTERNAL when the
 * scaling misses its target (the cells are then its last fill).
 */
enum pm_status alone_rescale(const struct dataset *ds, const struct invariants *inv, size_t b,
			     double *y, struct alone_work *w);

/* ---- metrics.c ---------------------------------------------------------- */

/*
 * Fills posterior, entropy, accuracies and max_violation of r from
 * r->cells, on the pool (may be NULL); the numbers do not depend on its
 * size. closed (n_groups entries, may be NULL) marks the buckets whose
 * cells are the closed form of Theorem 5 (metrics_closed_bucket): their
 * entropy comes from their marginals, and closed_violation is the largest
 * violation over their rows.
 */
enum pm_status metrics_compute(const struct dataset *ds, const struct invariants *inv,
			       const uint8_t *closed, double closed_violation,
			       struct parallel *pool, struct solver_result *r,
			       struct pm_error *err);
/* With an interval rule among k's (else nothing), r->achieved and
 * r->binding from r->cells (struct solver_result), owned by r. */
enum pm_status metrics_achieved(const struct knowledge *k, const struct invariants *inv,
				double tolerance, struct solver_result *r);
/* The last closed form metrics_closed_bucket computed (g == 0: none), to
 * copy when the next bucket has the same counts in the same order, as most
 * buckets of an Anatomy table do (l records, one per tuple and value). */
#define CLOSED_MEMO 64
struct closed_memo {
	uint32_t g, h, nb, count[CLOSED_MEMO]; /* nb = n(b); n(q,b) then n(s,b) */
	double y[CLOSED_MEMO], violation;
};
/* metrics_closed_form, and *violation, the largest |A y - c| over the
 * bucket's QI and SA rows, while its cells are at hand; memo (may be
 * NULL) is one thread's. */
void metrics_closed_bucket(const struct dataset *ds, const struct invariants *inv, size_t b,
			   double *y, struct closed_memo *memo, double *violation);

/* ---- intern.c ----------------------------------------------------------- */

/* Interned lists of uint32 -> dense ids; zero-initialized is empty, and
 * intern_free empties it. */
struct intern {
	size_t n, cap, pool_n, pool_cap;
	int32_t *slot;
	size_t *off; /* id -> pool offset, n + 1 entries */
	uint32_t *pool;
	uint64_t *hash;
};

/* Id of list a[0..n) (a may be NULL when n = 0), new or not; -1 when out
 * of memory. The list's copy is t->pool[t->off[id] .. t->off[id + 1]),
 * borrowed, valid until the next intern_get or intern_free. */
int32_t intern_get(struct intern *t, const uint32_t *a, size_t n);
void intern_free(struct intern *t);
/* Grows the array *p of *cap elements of size bytes to hold need (by
 * doubling, from 256); -1 when out of memory, *p then unchanged. */
int intern_reserve(void **p, size_t *cap, size_t need, size_t size);

/* ---- schur.c ------------------------------------------------------------ */

/* Doubles of a factorization of a g x h block. */
size_t schur_size(size_t g, size_t h);
/* Factors the Hessian of the scaling problem of block y (g x h, row-major;
 * zero cells 0) into f (schur_size(g, h) doubles). */
void schur_factor(const double *y, size_t g, size_t h, double *f);
/* Solves M (a, b) = (p, q) (p: g row entries, q: h column entries) with
 * the factorization f of block y; a gets g values, b gets h. */
void schur_solve(const double *f, const double *y, size_t g, size_t h, const double *p,
		 const double *q, double *a, double *b);

/* A square root R of M^+ (v^T M^+ v' = (R v) . (R v') for v, v' in M's
 * range) from the factorization f of y: sc (g values) the diagonal of
 * its first g rows, which act on p alone; rt ((g + h) x h) the last h
 * entries of R's column e in its row e. */
void schur_root(const double *f, const double *y, size_t g, size_t h, double *rt, double *sc);
/* A pivot at most this fraction of its diagonal is a null direction:
 * rounding noise of a dependent row (schur_dense_factor's usual eps). */
#define SCHUR_PIVOT_EPS 1e-11
/*
 * The same, the first time a sequence of such matrices is factored
 * (newton.c, zeros_ipm.c), which decides once which rows depend on
 * the others: about the square root of the rounding unit, the usual
 * bound of a numerical rank. Rows that depend on others and the
 * invariants (rules on every value of one attribute with one s sum to
 * that value's SA rows) make those matrices singular; their pivots are
 * rounding noise, which SCHUR_PIVOT_EPS catches only where forming the
 * matrix cancelled little; a noise pivot left in makes the direction
 * along its row as long as the gradient's rounding over the noise.
 * Which rows depend
 * on which does not change with the point (the zeros decide it), so the
 * rows found once are dropped ever after, as zero rows.
 */
#define SCHUR_DEPENDENT 1e-8
/* The Schur complements formed over knowledge rows (the outer Hessian H,
 * the interior point methods' normal equations): a (n x n, lower
 * triangle, row major) factored in place as L D L^T, a pivot at most eps
 * times its diagonal entry taken as null (D = 0), the updates shared out
 * on pool (may be NULL); work: schur_dense_work(n) doubles. The solve
 * overwrites x with A^+ x, exact for x in A's range (a null pivot's
 * entry 0). */
size_t schur_dense_work(size_t n);
void schur_dense_factor(double *a, size_t n, double eps, double *work, struct parallel *pool);
void schur_dense_solve(const double *a, size_t n, double *x);
/* sum a[l] b[l] over l < n, as four interleaved sums (vectorized) */
double schur_dot(const double *a, const double *b, size_t n);

/* ---- newton.c ----------------------------------------------------------- */

/* The rows of a formed H found dependent (newton.c's NULL_PIVOT), kept
 * by the caller across newton_minimize calls on one problem: row has n
 * flags, known once they are decided (zero-initialized: not yet). */
struct newton_null {
	uint8_t *row;
	int known;
};

/* When newton_minimize may stop short of its target (*stalled), once at
 * most half the variables still move (Newton's first steps from far away
 * move most of them): for probes (solver.c). */
enum newton_stop {
	NEWTON_STOP_NONE = 0, /* at the target, the limit or a failed line search */
	/* stagnation: the violation not halved over STALL_STEPS steps */
	NEWTON_STOP_STALL,
	/* that, or linear convergence, the mark of a minimum at infinity */
	NEWTON_STOP_LINEAR,
};

/* A smooth convex function of n variables for newton_minimize. */
struct newton_problem {
	void *ctx;
	size_t n;
	/* f(x) - f(prepared point), the gradient into g (may be NULL) and
	 * the largest violation (records) at x, of the variables without an
	 * l1 weight */
	double (*eval)(void *ctx, const double *x, double *g, double *violation);
	/* F = f + sum_k l1[k] |x_k| is what is minimized (l1 may be NULL:
	 * F = f). A box row lo <= a.y <= hi has the dual term
	 * min(lo x_k, hi x_k) = mid x_k - half |x_k|: its midpoint goes in
	 * f's linear term and its half width here (Kazama & Tsujii 2003 as
	 * an L1 term). Newton then runs orthant-wise (Andrew & Gao 2007):
	 * on the pseudo-gradient, each step within the orthant it starts
	 * in, a variable at 0 whose pseudo-gradient is 0 held there. Such a
	 * variable's violation is its pseudo-gradient: its row outside the
	 * box, or off the bound its multiplier's sign says binds. */
	const double *l1;
	/* x, the point of the last eval, is the new current point: values
	 * relative to it, and H at it */
	void (*prepare)(void *ctx, const double *x);
	void (*diag)(void *ctx, double *out);		     /* diag(H) */
	void (*hv)(void *ctx, const double *v, double *out); /* H v */
	/* H itself (lower triangle, n x n row major; with blocks, its
	 * diagonal blocks, see n_blocks), or NULL: then the direction
	 * comes from products alone. Used from the first step with
	 * `formed`; otherwise once the directions took more products than
	 * forming would have cost (block_budget, cg_budget), once form()
	 * (may be NULL) made the problem ready for it (0; nonzero: stay
	 * with products). */
	void (*hessian)(void *ctx, int blocks, double *out);
	/* H's diagonal blocks, variables block_off[b] .. block_off[b + 1]
	 * (n_blocks <= 1: one, H whole). hessian with blocks forms only
	 * them, each square and row major (lower triangle) one after the
	 * other in out: block-Jacobi for CG, never the exact step, and the
	 * dependent rows are those within a block. Their factor comes first
	 * (once the directions took block_budget products, their cost), H
	 * whole (if `whole`: it may be formed) once CG on the blocks took
	 * cg_budget products or broke down */
	size_t n_blocks;
	const size_t *block_off;
	int whole;
	long block_budget;
	int formed;
	long cg_budget;
	int (*form)(void *ctx);
	/* whether to stop short of the target (*stalled): for probes */
	enum newton_stop stop;
	/* rounding error of f: a decrease below it proves nothing */
	double f_noise;
	/* for factoring a large formed H on all cores (may be NULL) */
	struct parallel *pool;
	/* dependent rows, with H formed (may be NULL: not tracked) */
	struct newton_null *null;
};

/* newton_minimize's workspace for p (borrowed, outlives it): scratch
 * and the factor of H, kept across calls. *out: owned by the caller
 * (newton_destroy; NULL-safe). */
struct newton;
enum pm_status newton_create(const struct newton_problem *p, struct newton **out);
void newton_destroy(struct newton *nw);

/* Newton steps from x until the violation is at most target, the
 * iteration limit of o (iterations counted on from st->iterations) or a
 * cancel (PM_ERR_CANCELLED); *stalled when the line search fails. */
enum pm_status newton_minimize(struct newton *nw, const struct solver_options *o, double target,
			       double *x, struct maxent_stats *st, int *stalled);
/* Sets rows[var_row[k]] for each variable k that the direction of
 * newton_minimize's last step still moves (SOLVER_MOVING: a probe's
 * runaway multipliers). */
void newton_moving(const struct newton *nw, const uint32_t *var_row, uint8_t *rows);

/* ---- scaling.c ---------------------------------------------------------- */

/* Scratch for scaling_solve on blocks up to g x h (init/finish). */
struct scaling_work {
	double *yt, *f, *rs, *cs, *p, *q, *da, *db, *ta, *tb;
	double *kk, *em, *xa, *xb; /* the kernel, and per row and column */
	const double *kp, *ep;	   /* the kernel in use */
	double dm_max;
	int sweeps;	 /* Sinkhorn's, in the last solve (for tests) */
	double *y0, *ab; /* for scaling_bucket */
};
enum pm_status scaling_work_init(struct scaling_work *w, size_t g, size_t h);
void scaling_work_finish(struct scaling_work *w);

/* Cap on an exponent of the scaling: wild trial multipliers must not
 * overflow. Up to SCALING_SMALL, the excess takes the expm1 form. */
#define SCALING_CAP   600.0
#define SCALING_SMALL 0.5

/* One bucket's scaling problem: y = y0 exp(dm + a_i + b_j) on the cells
 * that are not zero, rows summing to nq and columns to ns. All borrowed. */
struct scaling_block {
	size_t g, h;
	const double *y0, *dm; /* g x h; dm may be NULL (0) */
	/* NULL or, precomputed by the caller (cheaper than g h exponentials),
	 * kk = y0 exp(dm) (0 on zeros) if every |dm| <= SCALING_CAP, and
	 * em = expm1(dm) (may be NULL) if every |dm| <= SCALING_SMALL */
	const double *kk, *em;
	const uint8_t *zero;
	const uint32_t *nq, *ns;
	double *a, *b; /* log-scalings: start (warm) and result */
	double *y;     /* result, g x h */
	double excess; /* result with dm: Σ y0 expm1(dm + a + b), precise */
	/* a trial point of an outer line search: if Newton stalls far from
	 * the target, a few Sinkhorn sweeps, not thousands (the caller
	 * rejects the point) */
	int trial;
};

/* Solves k until the largest row or column violation is at most target
 * records (Newton, then Sinkhorn); returns that violation. */
double scaling_solve(struct scaling_block *k, struct scaling_work *w, double target);

/*
 * The maximum-entropy estimate of bucket b alone, given its forced zeros:
 * the scaling of its free cells to the bucket's QI and SA counts, written
 * to y (the bucket's cells). PM_ERR_INTERNAL if target is not reached.
 * w must fit the bucket.
 */
enum pm_status scaling_bucket(const struct dataset *ds, const struct invariants *inv, size_t b,
			      const uint8_t *zero, double *y, double target,
			      struct scaling_work *w);

/* ---- twolevel.c, twolevel_hessian.c ------------------------------------ */

/*
 * The outer problem of the two-level dual (twolevel.c explains it): G over
 * the multipliers μ of the open knowledge rows, every coupled bucket
 * scaled exactly for the current μ. Relative to a base point (μ0, y0).
 */

/*
 * The loosest inner target (records) of a Newton evaluation far from the
 * optimum (eval_mu): 1e-8 took 49,000 inner Newton steps in the first
 * three evaluations of Adult, K+ = K- = 250, qi_attributes 1, this takes
 * 35,600, and the outer iterations and their violations stay the same.
 */
#define TWOLEVEL_LOOSE 1e-4

/* One bucket's patterns (twolevel_patterns.c): its n open rows
 * ascending (rows), each one's pattern (pat: rows with the same cells in
 * the bucket share one; np of them), per bucket row i the patterns
 * through its cells with their cells (rpat, rcell from at[i], rp_n[i] of
 * them; patterns and cells within a bucket, under 2^16: form_sizes), and
 * scratch (lo, key, pkey, first, cells; bits, one per open row). */
struct twolevel_patterns {
	size_t n, np, *at, *lo;
	uint32_t *rows, *rp_n, *first, *cells;
	uint16_t *pat, *rpat, *rcell;
	uint64_t *key, *pkey, *bits;
	/* the patterns by key: open addressing (mask + 1 slots), a slot
	 * in use in this bucket when its gen is the bucket's */
	uint16_t *slot;
	uint32_t *gen, now;
	size_t mask;
};

/* Per part of the thread pool: scratch and partial results. */
struct twolevel_part {
	struct scaling_work w;
	double *dm, *kk, *em;  /* cells of the widest bucket: the kernel, */
	double *t, *u;	       /* and for products */
	double *vec;	       /* r: diag(H) */
	double *cacc;	       /* per class: H v's sums over its cells */
	uint64_t *stamp, tick; /* r: distinct rows of a bucket */
	uint32_t *loc, *rows;  /* r: local numbers, and the rows of a bucket */
	double *pq, *acc;      /* per local row: g + h sums, and the total */
	size_t pq_cap;	       /* doubles in pq */
	/* forming H: this part's share (r x r lower triangle packed, fixed point; valid if hgen
	 * is the pass's), per local row the dense part of R z
	 * (twolevel_hessian.c), the local matrix, R, and per entry of a
	 * bucket row's patterns its y */
	uint64_t *hfix;
	unsigned long hgen;
	double *dx, *dl, *rt, *sc, *pv;
	struct twolevel_patterns *pat; /* the bucket's patterns (twolevel_hessian.c) */
};

/*
 * One two-level problem: a set of coupled buckets and the open rows among
 * them (a connected component, or all of them). Per-cell arrays (zero,
 * y, y0, cls) are local: bucket k's cells start at coff[k], so
 * a small component costs its own size, not the table's.
 */
struct twolevel {
	const struct dataset *ds;
	const struct invariants *inv;
	uint8_t *zero; /* local copy of the forced zeros */
	double *out;   /* the system's cells (inv numbering): twolevel_store */
	size_t nb;
	uint32_t *bk;	      /* coupled buckets, ascending */
	size_t *qoff, *soff;  /* per coupled bucket: its α and β */
	size_t *coff;	      /* cells before coupled bucket k: its local cells */
	size_t *foff;	      /* its factorization in fac */
	double *alpha, *beta; /* log-scalings since the base */
	double *fac;	      /* every bucket's M factored at the base */
	int factored;	      /* fac is current */
	/* the base's y0 and fac are still to be set (twolevel_base); the
	 * pass that forms H does it (form_base) */
	int base_pending, form_base;
	size_t r;
	uint32_t *row; /* open knowledge rows (inv rows) */
	double *rhs, *scale, *mu, *mu0;
	/* an interval row's half width (its rhs: the midpoint), the L1
	 * weight of its multiplier (newton_problem.l1); NULL without one */
	double *half;
	double *dd, *ex, *xm, dmu_max; /* μ - μ0, its exp and expm1; max |μ - μ0| */
	size_t *rc_off;		       /* prefix sums of the open rows' cell counts */
	/* the classes (twolevel_init.c's init_classes): per local cell its
	 * class (cls, 0: no open row), per class 1 .. ncls its open rows
	 * ascending (cl_row at cl_off) and its cells ascending (cc_cell at
	 * cc_off), per open row its classes (rk_cls at rk_off); n_entries
	 * pairs of a cell and an open row through it */
	uint32_t *cls, *cl_row, *cc_cell, *rk_cls;
	size_t ncls, *cl_off, *cc_off, *rk_off, n_entries;
	/* per class: Σ Δμ over its rows, Π exp(Δμ), expm1 of the sum
	 * (kernel), Σ y over its cells (the gradient), v summed (products) */
	double *cdm, *cex, *cem, *csum, *cv;
	size_t ck_max;	     /* most open rows through a cell */
	double *y0, *y;	     /* per local cell */
	uint8_t *exact;	     /* per coupled bucket: y = y0 solves it at μ0 */
	double inner_target; /* records */
	/* the inner target of G's pass now (eval_target): looser while the
	 * violation at the base (base_viol, of the last pass: last_viol) is
	 * large, for Newton, up to `loosest` (0: always exact), never near
	 * its target (outer) */
	double eval_target, base_viol, last_viol, outer, loosest;
	size_t row_len;	       /* most cells of an open row */
	struct parallel *pool; /* NULL: one part */
	int own_pool;	       /* created by twolevel_init, not borrowed */
	int parts;
	struct twolevel_part *part;
	/* G's pass (eval_mu) by chunks of buckets, ev_off[i] .. ev_off[i + 1],
	 * each taken by whichever thread is free, with sums of its own (ev_f,
	 * ev_worst) added in chunk order; then the gradient by chunks of
	 * classes (gr_off), each class's sum (csum) over its cells in order */
	size_t n_ev, *ev_off, n_gr, *gr_off;
	double *ev_f, *ev_worst;
	/* H is formed (worth it, and the scratch fits): each pass that forms
	 * it finds every bucket's patterns (rows with the same cells in the
	 * bucket) in its part's scratch (pat) */
	int dense, formable;
	long cg_budget;	   /* CG products a direction may take before forming H costs less */
	long block_budget; /* ... before forming its blocks costs less */
	/* H's blocks: the open rows are ordered by their first cell's SA
	 * value, and runs of one value (at most TWOLEVEL_BLOCK_ROWS rows)
	 * are blocks blk_off[b] .. blk_off[b + 1]; blk_of: each row's,
	 * blk_val: each block's value. With more open rows than one H may
	 * have (blocked), only the blocks are formed: block-Jacobi for CG */
	size_t nblk, *blk_off, *blk_pk; /* blk_pk: each block's in hfix */
	uint32_t *blk_of, *blk_val;
	int blocked, whole_ok; /* blocked: the pass forms the blocks only */
	double hscale;	       /* H's fixed point (fixed_scale) */
	int clamp_all;	       /* tests: every pair through the clamped conversion */
	unsigned long hgen;    /* passes that formed H */
};

/* ---- components.c ------------------------------------------------------ */

/* Connected components of buckets linked by knowledge rows: component i
 * has the buckets bucket[b_off[i] .. b_off[i + 1]) and the rows
 * row[r_off[i] .. r_off[i + 1]), both ascending; pos[b] is bucket b's
 * place in its component's list (n_groups entries, set for its buckets). */
struct components {
	size_t n;
	size_t *b_off, *r_off;
	uint32_t *bucket, *row, *pos;
};

/* The components of the buckets with bucket_in[b] set, linked by the
 * knowledge rows through them, except empty rows and those with
 * row_out[r] set (row_out may be NULL); a bucket such a row passes through
 * joins. With whole, all of it as one component (n = 1). Free with
 * components_finish, also after a failure. */
enum pm_status components_build(const struct invariants *inv, const uint8_t *bucket_in,
				const uint8_t *row_out, int whole, struct components *cs);
void components_finish(struct components *cs);

/* Problems of fewer buckets run on one thread: their passes are too short
 * to share. */
#define TWOLEVEL_POOL_BUCKETS 64
/* Rows of one block of H at most (twolevel.blk_off). */
#define TWOLEVEL_BLOCK_ROWS 2048

/* For the coupled buckets (coupled[b]), the open rows (knowledge rows not
 * implied[]): the problem at μ = 0, every bucket scaled alone, on a pool
 * of its own. twolevel_store writes the coupled buckets' estimate into y
 * (the system's cells). Free with twolevel_finish, also after a failure. */
enum pm_status twolevel_init(struct twolevel *t, const struct dataset *ds,
			     const struct invariants *inv, const uint8_t *zero,
			     const uint8_t *implied, const uint8_t *coupled, int threads,
			     double *y);
/* The same for component i of cs (its buckets and open rows), on the
 * borrowed pool (may be NULL: one thread), used only if the problem is
 * large enough; start (per cell of the system, may be NULL) a base point
 * other than the closed form (struct solver_warm.y), taken in the buckets
 * where it is positive on every free cell. */
enum pm_status twolevel_init_lists(struct twolevel *t, const struct dataset *ds,
				   const struct invariants *inv, const uint8_t *zero,
				   const struct components *cs, size_t i, struct parallel *pool,
				   const double *start, double *y);
void twolevel_finish(struct twolevel *t);
/* Copies the estimate into the system's cells (twolevel_init's y). */
void twolevel_store(const struct twolevel *t);
/* Newton (and L-BFGS should it stall) on t to o's tolerance; with probe
 * (may be NULL), a probe (twolevel_solve). st gets the outcome. */
enum pm_status twolevel_run(struct twolevel *t, const struct solver_options *o,
			    const struct solver_probe *probe, struct maxent_stats *st);
/* G(μ) - G(μ0), the gradient (records) into g (may be NULL), the largest
 * violation of any row, inner ones included. */
double twolevel_eval(struct twolevel *t, const double *mu, double *g, double *violation);
/* μ, which the last twolevel_eval evaluated, becomes the base point; every
 * bucket's M is factored there. */
void twolevel_prepare(struct twolevel *t, const double *mu);
/* The outer problem of t for newton_minimize: callbacks, ctx and n; H is
 * offered (with `formed`) where t can form it, from the first step when
 * t->dense, else once CG has cost more than forming. */
void twolevel_problem(struct twolevel *t, int formed, struct newton_problem *np);
/* L-BFGS on G from μ = t->mu (the fallback of twolevel_run) until the
 * violation is within target; st->iterations goes on counting. */
enum pm_status twolevel_lbfgs(struct twolevel *t, const struct solver_options *o, double target,
			      struct maxent_stats *st);
/* Bucket k's share of a new base: y0 = y, M factored at it. */
void twolevel_base_bucket(struct twolevel *t, size_t k);
/* The new base's per-bucket share, if twolevel_prepare left it pending. */
void twolevel_base(struct twolevel *t);
/* Shape of coupled bucket k: its first cell, rows and columns (inline:
 * every per-bucket pass asks, 1% of a solve as a call). */
static inline void twolevel_shape(const struct twolevel *t, size_t k, size_t *off, size_t *g,
				  size_t *h)
{
	size_t b = t->bk[k];

	*off = t->coff[k];
	*g = t->ds->bq_off[b + 1] - t->ds->bq_off[b];
	*h = t->ds->bs_off[b + 1] - t->ds->bs_off[b];
}
/* The open rows through local cell c, *n of them: its class's. */
static inline const uint32_t *twolevel_cell_rows(const struct twolevel *t, size_t c, size_t *n)
{
	uint32_t v = t->cls[c];

	*n = t->cl_off[v + 1] - t->cl_off[v];
	return t->cl_row + t->cl_off[v];
}
/* The coupled buckets [*lo, *hi) of part p, balanced by cells. */
void twolevel_range(const struct twolevel *t, int p, int parts, size_t *lo, size_t *hi);

/* After twolevel_init's setup: whether H can be formed (formable) and
 * should be from the start (dense), and if so, the structure and scratch
 * for forming it (twolevel_hessian_enable: the same later, once CG has
 * shown the cost model too hopeful). */
enum pm_status twolevel_hessian_init(struct twolevel *t);
enum pm_status twolevel_hessian_enable(struct twolevel *t);
/* At the prepared point: H v, diag(H), and H formed (lower triangle of
 * r x r, row major; only if t->dense). */
void twolevel_hessian_apply(struct twolevel *t, const double *v, double *out);
void twolevel_hessian_diag(struct twolevel *t, double *out);
void twolevel_hessian_form(struct twolevel *t, int blocks, double *out);
/* A part's scratch for the patterns of buckets of up to rows open rows,
 * entries pairs of a cell and a row, g bucket rows; *out owned by the
 * caller (twolevel_patterns_destroy, also after a failure; NULL-safe). */
enum pm_status twolevel_patterns_create(const struct twolevel *t, size_t rows, size_t entries,
					size_t g, struct twolevel_patterns **out);
void twolevel_patterns_destroy(struct twolevel_patterns *p);
/* Bucket k's patterns into pt->pat (pt->loc, pt->stamp its scratch). */
void twolevel_patterns_find(const struct twolevel *t, struct twolevel_part *pt, size_t k);
/* Bucket k's distinct open rows, and in *entries its pairs of a cell and
 * an open row through it (pt->stamp its scratch). */
size_t twolevel_bucket_rows(const struct twolevel *t, struct twolevel_part *pt, size_t k,
			    size_t *entries);
/* Tests: over the buckets, the open rows that share a pattern with an
 * earlier row of the bucket (t must be formable). */
size_t twolevel_hessian_shared(struct twolevel *t);

#endif
