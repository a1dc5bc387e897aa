/*
 * A bucket that no open knowledge row couples to others has, as its
 * maximum-entropy estimate, the matrix scaling y[q,s] = a_q c_s over its
 * free cells with row sums n(q,b) and column sums n(s,b): the I-projection
 * of the uniform vector onto the bucket's invariants with its forced zeros
 * (Theorem 5 is the case without zeros, a_q c_s = n(q,b) n(s,b) / n(b)).
 * Alternating row and column scaling (Sinkhorn) converges linearly because
 * every free cell is positive in some solution (boundary.c removed all
 * others): the pattern has total support.
 */
#include <math.h>
#include <stdlib.h>

#include "solver.h"

/* Scales rows (along = 0) or columns of the g x h block at y to their
 * targets; returns the largest violation seen before scaling. */
static double scale_pass(double *y, const uint8_t *zero, size_t g, size_t h, const uint32_t *target,
			 int along_columns)
{
	size_t outer = along_columns ? h : g, inner = along_columns ? g : h;
	double worst = 0;

	for (size_t a = 0; a < outer; a++) {
		double sum = 0, f;

		for (size_t b = 0; b < inner; b++) {
			size_t c = along_columns ? b * h + a : a * h + b;

			sum += zero[c] ? 0 : y[c];
		}
		worst = fmax(worst, fabs(sum - target[a]));
		f = sum > 0 ? target[a] / sum : 0;
		for (size_t b = 0; b < inner; b++)
			y[along_columns ? b * h + a : a * h + b] *= f;
	}
	return worst;
}

enum pm_status scaling_bucket(const struct dataset *ds, const struct invariants *inv, size_t b,
			      const uint8_t *zero, double *y, double target, int max_sweeps)
{
	size_t off = inv->cell_off[b];
	size_t g = ds->bq_off[b + 1] - ds->bq_off[b], h = ds->bs_off[b + 1] - ds->bs_off[b];
	const uint32_t *rows = ds->bq_count + ds->bq_off[b], *cols = ds->bs_count + ds->bs_off[b];
	double *yb = y + off;
	const uint8_t *zb = zero + off;

	/* start from the closed form on the free cells */
	metrics_closed_form(ds, inv, b, y);
	for (size_t c = 0; c < g * h; c++)
		if (zb[c])
			yb[c] = 0;
	for (int sweep = 0; sweep < max_sweeps; sweep++) {
		/* after a column pass the columns are exact, so the row
		 * violation bounds both; scaling the rows then moves the
		 * columns by no more than that */
		if (scale_pass(yb, zb, g, h, rows, 0) <= target && sweep > 0)
			return PM_OK;
		scale_pass(yb, zb, g, h, cols, 1);
	}
	return PM_ERR_INTERNAL; /* the caller falls back to the dual */
}
