/*
 * The solve step: forced zeros (boundary.c); every bucket that no open
 * knowledge row couples (rows propagation proved implied need no
 * multiplier) alone, by the closed form of Theorem 5 (the paper's
 * irrelevant-bucket optimization) or matrix scaling around its zeros
 * (scaling.c); L-BFGS on the dual for the rest (maxent.c); the metrics.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "solver_internal.h"

/* Per-bucket scaling: violation target (records); a bucket that misses it
 * falls back to the dual. */
#define SCALING_TARGET 1e-12

void solver_options_init(struct solver_options *o)
{
	memset(o, 0, sizeof *o);
	o->tolerance = 1e-6;
	o->max_iterations = 10000;
}

void solver_result_finish(struct solver_result *r)
{
	if (!r)
		return;
	free(r->cells);
	free(r->post_off);
	free(r->post_sa);
	free(r->post_p);
	memset(r, 0, sizeof *r);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Is bucket b coupled to others by a knowledge row that needs a
 * multiplier (not implied by the invariants and the zeros)? */
static int coupled(const struct invariants *inv, const uint8_t *implied, size_t b)
{
	for (size_t e = inv->kb_off[b]; e < inv->kb_off[b + 1]; e++)
		if (!implied[inv->kb_row[e]])
			return 1;
	return 0;
}

/*
 * Buckets no open knowledge row couples are solved alone: the closed form
 * of Theorem 5 without zeros (the paper's irrelevant buckets), matrix
 * scaling with them. The others get active[c] = 1 on their free cells for
 * the dual; returns how many buckets that is.
 */
static size_t split_buckets(const struct dataset *ds, const struct invariants *inv,
			    const uint8_t *zero, const uint8_t *implied, uint8_t *active,
			    uint8_t *cpl, double *y, struct scaling_work *w)
{
	size_t n_coupled = 0;

	for (size_t b = 0; b < ds->n_groups; b++) {
		size_t lo = inv->cell_off[b], hi = inv->cell_off[b + 1];
		int t = coupled(inv, implied, b);

		if (!t && !memchr(zero + lo, 1, hi - lo))
			metrics_closed_form(ds, inv, b, y);
		else if (!t)
			t = scaling_bucket(ds, inv, b, zero, y, SCALING_TARGET, w) != PM_OK;
		n_coupled += t;
		cpl[b] = (uint8_t)t;
		for (size_t c = lo; c < hi; c++)
			active[c] = t && !zero[c];
	}
	return n_coupled;
}

static void fill_counts(const struct invariants *inv, const uint8_t *zero, struct solver_result *r)
{
	r->variables = inv->n_cells;
	r->qi_invariants = inv->n_qi_rows;
	r->sa_invariants = inv->n_sa_rows;
	r->knowledge = inv->n_knowledge_rows;
	r->zero_invariants = inv->zero_invariants;
	r->forced_zeros = 0;
	for (size_t c = 0; c < inv->n_cells; c++)
		r->forced_zeros += zero[c];
}

enum pm_status solver_run(const struct dataset *ds, const struct knowledge *k,
			  const struct invariants *inv, const struct solver_options *o,
			  struct solver_result *r, struct pm_error *err)
{
	size_t n = inv->n_cells + 1;
	uint8_t *zero = calloc(n, 1), *active = calloc(n, 1), *implied = calloc(inv->n_rows + 1, 1);
	uint8_t *cpl = calloc(ds->n_groups + 1, 1);
	struct maxent_stats ms = {0};
	struct scaling_work w = {0};
	size_t g_max = 1, h_max = 1;
	double t0 = now();
	enum pm_status st = PM_ERR_NOMEM;

	memset(r, 0, sizeof *r);
	r->cells = calloc(n, sizeof *r->cells);
	for (size_t b = 0; b < ds->n_groups; b++) {
		g_max = fmax(g_max, ds->bq_off[b + 1] - ds->bq_off[b]);
		h_max = fmax(h_max, ds->bs_off[b + 1] - ds->bs_off[b]);
	}
	if (!zero || !active || !implied || !cpl || !r->cells ||
	    scaling_work_init(&w, g_max, h_max)) {
		error_set(err, st, "", "out of memory");
		goto out;
	}
	st = inv->n_knowledge_rows ? boundary_find(ds, k, inv, o, zero, implied, err) : PM_OK;
	if (st)
		goto out;
	fill_counts(inv, zero, r);
	r->solved_buckets = split_buckets(ds, inv, zero, implied, active, cpl, r->cells, &w);
	if (o->method == SOLVER_FULL_DUAL || !r->solved_buckets)
		st = maxent_solve(inv, active, implied, o, r->cells, &ms, err);
	else
		st = twolevel_solve(ds, inv, zero, implied, cpl, o, r->cells, &ms, err);
	if (st)
		goto out;
	r->iterations = ms.iterations;
	r->max_violation = metrics_max_violation(inv, r->cells);
	r->status = r->max_violation <= o->tolerance ? SOLVER_CONVERGED : SOLVER_NOT_CONVERGED;
	if (r->status != SOLVER_CONVERGED)
		snprintf(r->reason, sizeof r->reason, "%s",
			 ms.reason[0] ? ms.reason : "violation above the tolerance");
	st = metrics_compute(ds, inv, r, err);
	r->seconds = now() - t0;
out:
	scaling_work_finish(&w);
	free(zero);
	free(active);
	free(implied);
	free(cpl);
	return st;
}
