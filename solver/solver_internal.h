/*
 * Internal to the solver component: the thread pool, the per-bucket
 * Schur complement and Newton pieces of the two-level dual, and the
 * per-value relaxations of the forced-zero search. Not part of solver.h.
 */
#ifndef PMAXENT_SOLVER_INTERNAL_H
#define PMAXENT_SOLVER_INTERNAL_H

#include <stddef.h>

#include "solver.h"

/* ---- parallel.c --------------------------------------------------------- */

struct parallel;

/* A pool of `threads` parts (<= 0: one per online CPU), the calling
 * thread included. Caller frees with parallel_destroy. */
enum pm_status parallel_create(int threads, struct parallel **out);
void parallel_destroy(struct parallel *p);
int parallel_parts(const struct parallel *p);
/* Runs fn(ctx, part, parts) for every part, the caller doing part 0, and
 * returns when all are done. p may be NULL (one part, inline). */
void parallel_run(struct parallel *p, void (*fn)(void *ctx, int part, int parts), void *ctx);
/* The items [*lo, *hi) of part `part`, balanced by the weights whose
 * prefix sums are off[0..n] (NULL: unit weights). */
void parallel_range(size_t n, const size_t *off, int part, int parts, size_t *lo, size_t *hi);

/* ---- boundary_relax.c --------------------------------------------------- */

/*
 * Forced zeros of one sensitive value at a time: the cells of value s in
 * the buckets its open knowledge rows touch, each between bounds from its
 * bucket, summing to n(s, b) per bucket, under those rows (a relaxation of
 * the whole system, so every zero it forces is forced). Identical buckets
 * and same-signature tuples are merged first; an interior point suggests
 * the cells held at a bound and a linear program proves the suggestion
 * before any zero is written. Adds to zero[] (n_cells), *found counts the
 * new zeros; *infeasible is set when the relaxation has no solution.
 */
enum pm_status boundary_relax(const struct invariants *inv, const uint8_t *resolved, uint8_t *zero,
			      size_t *found, int *infeasible);

/* ---- boundary_ipm.c ----------------------------------------------------- */

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
};

/* Interior point iterates toward the relative interior of the feasible
 * set (zero objective): x (n entries) receives the last iterate and
 * *converged whether residuals and complementarity reached rounding. */
enum pm_status relax_ipm(const struct relax_problem *p, double *x, int *converged);

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

/* ---- newton.c ----------------------------------------------------------- */

/* A smooth convex function of n variables for newton_minimize. */
struct newton_problem {
	void *ctx;
	size_t n;
	/* f(x) - f(prepared point), the gradient into g (may be NULL) and
	 * the largest violation (records) at x */
	double (*eval)(void *ctx, const double *x, double *g, double *violation);
	/* x, the point of the last eval, is the new current point: values
	 * relative to it, and H at it */
	void (*prepare)(void *ctx, const double *x);
	void (*diag)(void *ctx, double *out);		     /* diag(H) */
	void (*hv)(void *ctx, const double *v, double *out); /* H v */
	/* stop (*stalled) on linear convergence, the mark of a minimum at
	 * infinity: for probes */
	int linear_stop;
};

/* Newton steps from x until the violation is at most target, the
 * iteration limit of o (iterations counted on from st->iterations) or a
 * cancel (PM_ERR_CANCELLED); *stalled when the line search fails. */
enum pm_status newton_minimize(const struct newton_problem *p, const struct solver_options *o,
			       double target, double *x, struct maxent_stats *st, int *stalled);

/* ---- scaling.c ---------------------------------------------------------- */

/* Scratch for scaling_solve on blocks up to g x h (init/finish). */
struct scaling_work {
	double *yt, *f, *rs, *cs, *p, *q, *da, *db, *ta, *tb;
	double *y0, *ab; /* for scaling_bucket */
};
enum pm_status scaling_work_init(struct scaling_work *w, size_t g, size_t h);
void scaling_work_finish(struct scaling_work *w);

/* One bucket's scaling problem: y = y0 exp(dm + a_i + b_j) on the cells
 * that are not zero, rows summing to nq and columns to ns. All borrowed. */
struct scaling_block {
	size_t g, h;
	const double *y0, *dm; /* g x h; dm may be NULL (0) */
	const uint8_t *zero;
	const uint32_t *nq, *ns;
	double *a, *b; /* log-scalings: start (warm) and result */
	double *y;     /* result, g x h */
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

#endif
