/*
 * newton: Newton's method with preconditioned CG on a smooth convex
 * function, orthant-wise with L1 terms (newton.c), for the outer problem
 * of the two-level dual and of the pseudonym model. Internal to solver/.
 */
#ifndef PMAXENT_NEWTON_H
#define PMAXENT_NEWTON_H

#include "cancel.h"
#include "solver.h"
#include "stop.h"

struct maxent_stats;
struct parallel;

/* ---- newton.c ----------------------------------------------------------- */

/* The rows of a formed H found dependent (newton.c's NULL_PIVOT), kept
 * by the caller across newton_minimize calls on one problem: row has n
 * flags, known once they are decided (zero-initialized: not yet). */
struct newton_null {
	uint8_t *row;
	int known;
};

/* A smooth convex function of n variables for newton_minimize. */
struct newton_problem {
	void *ctx;
	size_t n;
	/* polled between steps, trials and CG products, each report with the
	 * iteration and the violation (may be NULL: never stops) */
	struct cancel *cancel;
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
	/* whether to stop short of the target (*stalled), once at most half
	 * the variables still move: for probes (stop_newton_early) */
	enum stop_early stop;
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

/* Newton steps from x until the violation is at most target, or
 * max_iterations (counted on from st->iterations), or the problem's
 * token stops it (PM_ERR_CANCELLED); *stalled when the line search
 * fails. */
enum pm_status newton_minimize(struct newton *nw, int max_iterations, double target, double *x,
			       struct maxent_stats *st, int *stalled);
/* Sets rows[var_row[k]] for each variable k that the direction of
 * newton_minimize's last step still moves (SOLVER_MOVING: a probe's
 * runaway multipliers). */
void newton_moving(const struct newton *nw, const uint32_t *var_row, uint8_t *rows);

#endif
