/*
 * maxent: the paper's method (Section 6), L-BFGS on the full Lagrangian
 * dual (maxent.c), and the L-BFGS driver it shares with the two-level
 * dual's fallback (maxent_lbfgs.c). Internal to solver/.
 */
#ifndef PMAXENT_MAXENT_H
#define PMAXENT_MAXENT_H

#include "cancel.h"
#include "solver.h"

struct solver_probe;

/* ---- maxent.c ----------------------------------------------------------- */

struct maxent_stats {
	int iterations;
	double max_violation;
	int converged;
	char reason[256];
};

/*
 * L-BFGS on the Lagrangian dual (Section 6) over every multiplier of the
 * rows that touch at least one free cell, for the cells with active[cell]
 * set (the rest are fixed by the caller), leaving out rows with skip[row]
 * set (skip may be NULL). y receives the estimate on the active cells;
 * probe (may be NULL) what a probe leaves (struct solver_probe); cancel
 * (may be NULL) is polled at every iteration.
 */
enum pm_status maxent_solve(const struct invariants *inv, const uint8_t *active,
			    const uint8_t *skip, const struct solver_options *o,
			    struct cancel *cancel, double *y, const struct solver_probe *probe,
			    struct maxent_stats *st, struct pm_error *err);

/*
 * The full dual of rows with coefficients, for the pseudonym model: m
 * cells, row i the cells row_cell[row_off[i] .. row_off[i + 1]) with
 * coefficients row_coef[..], lo[i] <= a.y <= hi[i] (lo == hi: an
 * equality), start (may be NULL: 0) each row's first multiplier. All
 * borrowed.
 */
struct maxent_rows {
	size_t m, r;
	const size_t *row_off;
	const uint32_t *row_cell;
	const double *row_coef, *lo, *hi, *start;
};

/* maxent_solve on in: y (m entries) the estimate, st the outcome. */
enum pm_status maxent_solve_rows(const struct maxent_rows *in, const struct solver_options *o,
				 struct cancel *cancel, double *y, struct maxent_stats *st,
				 struct pm_error *err);

/* The dual alone, for checks and experiments: D(λ) - D(0) and ∇D = A y - c
 * (records) over the rows maxent_solve would use, in its row order.
 * Caller frees with maxent_dual_destroy. */
struct maxent_dual;
enum pm_status maxent_dual_create(const struct invariants *inv, const uint8_t *active,
				  const uint8_t *skip, struct maxent_dual **out);
size_t maxent_dual_rows(const struct maxent_dual *d);
double maxent_dual_eval(struct maxent_dual *d, const double *lambda, double *grad);
void maxent_dual_destroy(struct maxent_dual *d);

/* ---- maxent_lbfgs.c ----------------------------------------------------- */

/*
 * L-BFGS on a dual, shared by the full dual and the two-level dual: eval
 * returns D(u) - D(base) and the gradient in u, and writes the largest
 * violation (records) of every constraint at u; rebase makes u the base
 * point (so that tiny decreases near the optimum stay visible). Stops when
 * the violation is at most target, restarting after line-search failures
 * while they help; u must come from lbfgs_malloc.
 */
struct maxent_driver {
	const struct solver_options *opt; /* its tolerance and iteration limit */
	struct cancel *cancel;		  /* polled at every iteration (may be NULL) */
	double target;
	void *ctx;
	double (*eval)(void *ctx, const double *u, double *g, double *violation);
	void (*rebase)(void *ctx, const double *u);
	/* called at each iterate of L-BFGS, after its point's eval (may be
	 * NULL) */
	void (*step)(void *ctx);
	double violation; /* of the last evaluation */
	int iterations, cancelled;
	/* OWL-QN: c Σ |u_i| over u[l1_start ..] added to the function (the
	 * dual term of interval rows); l1_c 0: none */
	double l1_c;
	size_t l1_start;
};

enum pm_status maxent_lbfgs(struct maxent_driver *drv, int n, double *u, struct maxent_stats *st);

#endif
