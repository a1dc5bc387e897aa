/*
 * The paper's method (Section 6): maximise H(y) = -sum y ln y subject to
 * A y = c through the Lagrangian dual. With y_j = exp(sum_{i ∋ j} λ_i)
 * the dual is the smooth convex function
 *
 *     D(λ) = sum_j exp(a_j·λ) - c·λ,   ∇D = A y(λ) - c,
 *
 * so the gradient is exactly the constraint violation in records and the
 * stopping test is max |∇D| <= tolerance, never liblbfgs's own tests.
 * The caller has removed every cell forced to zero (zeros.c): then the
 * optimum is interior and the multipliers are finite.
 *
 * Variables are scaled, λ_i = u_i / sqrt(w_i) with w_i the row's
 * right-hand side: ∂²D/∂λ_i² = sum_{j∈i} y_j = c_i at the optimum, so the
 * scaled Hessian has a unit diagonal and L-BFGS's scalar initial Hessian
 * fits all rows, from one-record QI rows to thousand-record rules.
 */
#include <lbfgs.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "maxent.h"
#include "solve.h"
#include "stop.h"

/* exp() argument cap: keeps trial points of the line search finite. */
#define EXP_CAP 600.0

/* The active part of the system, renumbered: m cells, r rows. */
struct maxent_dual {
	size_t m, r;
	size_t *row_off; /* r + 1, CSR over local cells */
	uint32_t *row_cell;
	size_t *cell_off; /* m + 1, CSR over local rows (transpose) */
	uint32_t *cell_row;
	/* coefficients both ways, or NULL: every one 1 (the system's rows) */
	double *row_coef, *cell_coef;
	double *rhs, *scale; /* scale = 1/sqrt(w) */
	/* interval rows (lo <= a.y <= hi), the last ones from first_l1 on:
	 * rhs their midpoint, half their half width; their scale makes the
	 * L1 weight of every one l1_c (OWL-QN's single weight) */
	size_t first_l1;
	double *half, l1_c;
	uint32_t *row_global; /* local row -> inv row */
	uint32_t *global;     /* local cell -> inv cell */
	/* the dropped SA row of each bucket, for the violation measure:
	 * cells drop_cell[drop_off[k] ..) must sum to drop_rhs[k] */
	size_t n_drop;
	size_t *drop_off;
	uint32_t *drop_cell;
	double *drop_rhs;
	double *nb, *sa_sum; /* per bucket: n(b), sum of the kept SA rows */
	double *y, *lambda;
	/* base point of the current L-BFGS run: D is evaluated as the change
	 * from it, sum_j y0_j expm1(Δe_j) - Δλ·c, which keeps full relative
	 * precision when the change is tiny next to D itself (~N); without it
	 * the line search fails on rounding near the optimum */
	double *y0, *lambda0;
	double last_violation; /* of the last evaluation */
	/* for a probe (maxent_solve's probe): y and λ at the last two
	 * iterates */
	double *cur, *prv, *lcur, *lprv;
};

void maxent_dual_destroy(struct maxent_dual *d)
{
	if (!d)
		return;
	free(d->row_off);
	free(d->row_cell);
	free(d->cell_off);
	free(d->cell_row);
	free(d->row_coef);
	free(d->cell_coef);
	free(d->rhs);
	free(d->scale);
	free(d->half);
	free(d->row_global);
	free(d->global);
	free(d->drop_off);
	free(d->drop_cell);
	free(d->drop_rhs);
	free(d->y);
	free(d->lambda);
	free(d->y0);
	free(d->lambda0);
	free(d->nb);
	free(d->sa_sum);
	free(d->cur);
	free(d->prv);
	free(d->lcur);
	free(d->lprv);
	free(d);
}

/* Exponent of cell j, a_j·λ, relative to the base (delta) or not. */
static double dual_exponent(const struct maxent_dual *d, size_t j, int delta)
{
	double e = 0;

	for (size_t k = d->cell_off[j]; k < d->cell_off[j + 1]; k++) {
		size_t i = d->cell_row[k];

		e += (d->cell_coef ? d->cell_coef[k] : 1) *
		     (delta ? d->lambda[i] - d->lambda0[i] : d->lambda[i]);
	}
	return e < EXP_CAP ? e : EXP_CAP;
}

/* Makes the current λ the base point. */
static void dual_rebase(struct maxent_dual *d)
{
	memcpy(d->lambda0, d->lambda, d->r * sizeof *d->lambda);
	for (size_t j = 0; j < d->m; j++)
		d->y0[j] = exp(dual_exponent(d, j, 0));
}

/* Row i's violation at s = a.y, records: off its value; an interval's
 * off the bound its multiplier's sign says binds (λ > 0: lo, λ < 0: hi,
 * the optimality conditions of its L1 term: complementarity and sign),
 * or outside its interval (λ = 0). */
static double row_violation(const struct maxent_dual *d, size_t i, double s)
{
	double r = s - d->rhs[i];

	if (i < d->first_l1)
		return fabs(r);
	if (d->lambda[i] != 0)
		return fabs(r + (d->lambda[i] > 0 ? d->half[i] : -d->half[i]));
	return fmax(fabs(r) - d->half[i], 0);
}

/* D(λ) - D(λ0) and its gradient; y = exp(A^T λ); the violation of every
 * row (dropped SA rows included) goes to last_violation. */
static double dual_eval(struct maxent_dual *d, double *grad)
{
	double f = 0, worst = 0;

	for (size_t j = 0; j < d->m; j++) {
		double de = dual_exponent(d, j, 1);

		d->y[j] = d->y0[j] * exp(de);
		f += d->y0[j] * expm1(de);
	}
	for (size_t i = 0; i < d->r; i++) {
		double s = 0;

		for (size_t k = d->row_off[i]; k < d->row_off[i + 1]; k++)
			s += (d->row_coef ? d->row_coef[k] : 1) * d->y[d->row_cell[k]];
		f -= (d->lambda[i] - d->lambda0[i]) * d->rhs[i];
		if (grad)
			grad[i] = (s - d->rhs[i]) * d->scale[i];
		worst = fmax(worst, row_violation(d, i, s));
	}
	for (size_t k = 0; k < d->n_drop; k++) {
		double s = 0;

		for (size_t e = d->drop_off[k]; e < d->drop_off[k + 1]; e++)
			s += d->y[d->drop_cell[e]];
		if (fabs(s - d->drop_rhs[k]) > worst)
			worst = fabs(s - d->drop_rhs[k]);
	}
	d->last_violation = worst;
	return f;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * OWL-QN (liblbfgs) minimizes f(u) + c Σ |u_i| over one run of variables
 * with one weight c; an interval's dual term is half_i |λ_i| (Kazama &
 * Tsujii 2003). With λ_i = u_i c / half_i every interval gets weight c;
 * c is the median of half_i scale_i, so that an interval's scale stays
 * near the 1/sqrt(rhs) that gives the Hessian a unit diagonal.
 */
static void l1_scales(struct maxent_dual *d)
{
	size_t n = d->r - d->first_l1;
	double *w = d->half + d->first_l1, *v;

	if (!n || !(v = malloc(n * sizeof *v)))
		return;
	for (size_t i = 0; i < n; i++)
		v[i] = w[i] * d->scale[d->first_l1 + i];
	qsort(v, n, sizeof *v, cmp_double);
	d->l1_c = v[n / 2];
	for (size_t i = 0; i < n; i++)
		d->scale[d->first_l1 + i] = d->l1_c / w[i];
	free(v);
}

/* Local numbering of active cells and of the rows that touch them. */
static enum pm_status dual_rows(struct maxent_dual *d, const struct invariants *inv,
				const uint8_t *active, const uint8_t *skip, uint32_t *local)
{
	size_t nnz = 0;

	for (size_t c = 0; c < inv->n_cells; c++)
		if (active[c]) {
			local[c] = (uint32_t)d->m;
			d->m++;
		}
	d->global = malloc((d->m + 1) * sizeof *d->global);
	d->row_off = malloc((inv->n_rows + 1) * sizeof *d->row_off);
	d->row_cell = malloc((inv->row_off[inv->n_rows] + 1) * sizeof *d->row_cell);
	d->rhs = malloc((inv->n_rows + 1) * sizeof *d->rhs);
	d->scale = malloc((inv->n_rows + 1) * sizeof *d->scale);
	d->row_global = malloc((inv->n_rows + 1) * sizeof *d->row_global);
	if (!d->global || !d->row_off || !d->row_cell || !d->rhs || !d->scale || !d->row_global)
		return PM_ERR_NOMEM;
	for (size_t c = 0; c < inv->n_cells; c++)
		if (active[c])
			d->global[local[c]] = (uint32_t)c;
	d->half = calloc(inv->n_rows + 1, sizeof *d->half);
	if (!d->half)
		return PM_ERR_NOMEM;
	/* the equalities, then the intervals (OWL-QN's L1 range is one run) */
	for (int pass = 0; pass < 2; pass++) {
		if (pass)
			d->first_l1 = d->r;
		for (size_t i = 0; i < inv->n_rows; i++) {
			size_t start = nnz;

			if ((skip && skip[i]) || invariants_interval(inv, i) != pass)
				continue; /* implied by the others: no multiplier */
			for (size_t e = inv->row_off[i]; e < inv->row_off[i + 1]; e++)
				if (active[inv->row_cell[e]])
					d->row_cell[nnz++] = local[inv->row_cell[e]];
			if (nnz == start)
				continue; /* no free cell: nothing to solve for */
			d->row_off[d->r] = start;
			d->row_global[d->r] = (uint32_t)i;
			d->rhs[d->r] = 0.5 * (inv->rhs[i] + inv->hi[i]);
			d->half[d->r] = 0.5 * (inv->hi[i] - inv->rhs[i]);
			d->scale[d->r] = 1.0 / sqrt(d->rhs[d->r] > 1.0 ? d->rhs[d->r] : 1.0);
			d->r++;
		}
	}
	d->row_off[d->r] = nnz;
	l1_scales(d);
	return PM_OK;
}

/* cell -> rows, the transpose of the row CSR. */
static enum pm_status dual_transpose(struct maxent_dual *d)
{
	size_t nnz = d->row_off[d->r];

	d->cell_off = calloc(d->m + 2, sizeof *d->cell_off);
	d->cell_row = malloc((nnz + 1) * sizeof *d->cell_row);
	if (d->row_coef && !(d->cell_coef = malloc((nnz + 1) * sizeof *d->cell_coef)))
		return PM_ERR_NOMEM;
	if (!d->cell_off || !d->cell_row)
		return PM_ERR_NOMEM;
	for (size_t k = 0; k < nnz; k++)
		d->cell_off[d->row_cell[k] + 2]++;
	for (size_t j = 0; j < d->m; j++)
		d->cell_off[j + 2] += d->cell_off[j + 1];
	for (size_t i = 0; i < d->r; i++)
		for (size_t k = d->row_off[i]; k < d->row_off[i + 1]; k++) {
			size_t at = d->cell_off[d->row_cell[k] + 1]++;

			d->cell_row[at] = (uint32_t)i;
			if (d->row_coef)
				d->cell_coef[at] = d->row_coef[k];
		}
	return PM_OK;
}

/* The SA row dropped from each bucket (conciseness theorem) is implied by
 * the others in exact arithmetic; it is checked too so that max_violation
 * covers every invariant. Its right-hand side is n(b) - sum of the kept SA
 * rows, with n(b) the sum of the bucket's QI rows. */
static enum pm_status dual_dropped(struct maxent_dual *d, const struct invariants *inv,
				   const uint8_t *active, const uint32_t *local, double *nb,
				   double *sa_sum)
{
	size_t n = 0, e = 0;

	for (size_t i = 0; i < inv->n_qi_rows + inv->n_sa_rows; i++)
		(inv->row_kind[i] == ROW_QI ? nb : sa_sum)[inv->row_ref[i]] += inv->rhs[i];
	d->drop_off = malloc((inv->n_groups + 1) * sizeof *d->drop_off);
	d->drop_rhs = malloc((inv->n_groups + 1) * sizeof *d->drop_rhs);
	d->drop_cell = malloc((d->m + 1) * sizeof *d->drop_cell);
	if (!d->drop_off || !d->drop_rhs || !d->drop_cell)
		return PM_ERR_NOMEM;
	for (size_t b = 0; b < inv->n_groups; b++) {
		size_t lo = inv->cell_off[b], hi = inv->cell_off[b + 1], start = e;
		size_t h = 0;

		while (lo + h < hi && inv->cell_tuple[lo + h] == inv->cell_tuple[lo])
			h++;
		for (size_t c = lo + h - 1; h && c < hi; c += h)
			if (active[c])
				d->drop_cell[e++] = local[c];
		if (e == start)
			continue;
		d->drop_off[n] = start;
		d->drop_rhs[n++] = nb[b] - sa_sum[b];
	}
	d->drop_off[n] = e;
	d->n_drop = n;
	return PM_OK;
}

/* Warm start at the closed form of Theorem 5, y = n(q,b) n(s,b) / n(b):
 * λ_q = ln(n(q,b) n(s_h,b) / n(b)), λ_s = ln(n(s,b) / n(s_h,b)) with s_h the
 * dropped SA value; knowledge multipliers start at 0. */
static void dual_start(const struct maxent_dual *d, const struct invariants *inv, const double *nb,
		       const double *sa_sum, double *u)
{
	for (size_t k = 0; k < d->r; k++) {
		size_t i = d->row_global[k], b = inv->row_ref[i]; /* a bucket unless knowledge */

		u[k] = 0;
		if (inv->row_kind[i] == ROW_QI)
			u[k] = log(inv->rhs[i] * (nb[b] - sa_sum[b]) / nb[b]) / d->scale[k];
		else if (inv->row_kind[i] == ROW_SA)
			u[k] = log(inv->rhs[i] / (nb[b] - sa_sum[b])) / d->scale[k];
	}
}

/* The full dual as a maxent_driver problem. */
static double full_eval(void *ctx, const double *u, double *g, double *violation)
{
	struct maxent_dual *d = ctx;
	double f;

	for (size_t i = 0; i < d->r; i++)
		d->lambda[i] = u[i] * d->scale[i];
	f = dual_eval(d, g);
	*violation = d->last_violation;
	return f;
}

/* An iterate of L-BFGS, whose point was the last evaluated: kept, and
 * the one before it. */
static void full_step(void *ctx)
{
	struct maxent_dual *d = ctx;
	double *t = d->prv, *l = d->lprv;

	d->prv = d->cur;
	d->cur = t;
	memcpy(d->cur, d->y, d->m * sizeof *d->y);
	d->lprv = d->lcur;
	d->lcur = l;
	memcpy(d->lcur, d->lambda, d->r * sizeof *d->lambda);
}

/* A probe's ray (struct solver_probe): the rows whose multiplier the last
 * iterate still moved (SOLVER_MOVING). */
static void full_ray(const struct maxent_dual *d, uint8_t *ray)
{
	for (size_t i = 0; i < d->r; i++)
		ray[d->row_global[i]] |= fabs(d->lcur[i] - d->lprv[i]) > SOLVER_MOVING;
}

static void full_rebase(void *ctx, const double *u)
{
	struct maxent_dual *d = ctx;

	for (size_t i = 0; i < d->r; i++)
		d->lambda[i] = u[i] * d->scale[i];
	dual_rebase(d);
}

enum pm_status maxent_dual_create(const struct invariants *inv, const uint8_t *active,
				  const uint8_t *skip, struct maxent_dual **out)
{
	struct maxent_dual *d = calloc(1, sizeof *d);
	uint32_t *local = malloc((inv->n_cells + 1) * sizeof *local);
	enum pm_status st = PM_ERR_NOMEM;

	if (!d || !local)
		goto out;
	d->nb = calloc(inv->n_groups + 1, sizeof *d->nb);
	d->sa_sum = calloc(inv->n_groups + 1, sizeof *d->sa_sum);
	if (!d->nb || !d->sa_sum || dual_rows(d, inv, active, skip, local) || dual_transpose(d) ||
	    dual_dropped(d, inv, active, local, d->nb, d->sa_sum))
		goto out;
	d->y = malloc((d->m + 1) * sizeof *d->y);
	d->lambda = calloc(d->r + 1, sizeof *d->lambda);
	d->y0 = malloc((d->m + 1) * sizeof *d->y0);
	d->lambda0 = calloc(d->r + 1, sizeof *d->lambda0);
	if (!d->y || !d->lambda || !d->y0 || !d->lambda0)
		goto out;
	dual_rebase(d);
	st = PM_OK;
out:
	free(local);
	if (st) {
		maxent_dual_destroy(d);
		d = NULL;
	}
	*out = d;
	return st;
}

size_t maxent_dual_rows(const struct maxent_dual *d)
{
	return d->r;
}

double maxent_dual_eval(struct maxent_dual *d, const double *lambda, double *grad)
{
	double f;

	memcpy(d->lambda, lambda, d->r * sizeof *lambda);
	f = dual_eval(d, grad);
	for (size_t i = 0; grad && i < d->r; i++)
		grad[i] /= d->scale[i];
	return f;
}

/* The message of a solve's failure (ret), into err. */
static void solve_error(enum pm_status ret, struct pm_error *err)
{
	if (ret == PM_ERR_NOMEM)
		error_set(err, ret, "", "out of memory in the maximum-entropy solver");
	else if (ret == PM_ERR_CANCELLED)
		error_set(err, ret, "", "the solve was cancelled");
	else if (ret == PM_ERR_INTERNAL)
		error_set(err, ret, "", "L-BFGS rejected its setup (internal error)");
}

/* L-BFGS (OWL-QN with intervals) on d from u to target; probing keeps
 * the last two iterates (d->cur, d->prv, ...). */
static enum pm_status dual_run(struct maxent_dual *d, const struct solver_options *o,
			       struct cancel *cancel, double *u, int probing, double target,
			       struct maxent_stats *st)
{
	struct maxent_driver drv = {.opt = o,
				    .cancel = cancel,
				    .ctx = d,
				    .eval = full_eval,
				    .rebase = full_rebase,
				    .step = probing ? full_step : NULL,
				    .l1_c = d->first_l1 < d->r ? d->l1_c : 0,
				    .l1_start = d->first_l1,
				    .target = target};

	st->converged = 1;
	if (!d->r)
		return PM_OK;
	if (probing) { /* the starting point counts as the first iterate */
		full_eval(d, u, NULL, &drv.violation);
		memcpy(d->cur, d->y, d->m * sizeof *d->y);
		memcpy(d->prv, d->y, d->m * sizeof *d->y);
		memcpy(d->lcur, d->lambda, d->r * sizeof *d->lambda);
		memcpy(d->lprv, d->lambda, d->r * sizeof *d->lambda);
	}
	return maxent_lbfgs(&drv, (int)d->r, u, st);
}

/* in's rows into d: the equalities, then the intervals, each scaled by
 * the size of its bounds (the Hessian's diagonal at the optimum, for
 * rows of coefficient 1). */
static enum pm_status rows_copy(struct maxent_dual *d, const struct maxent_rows *in)
{
	size_t nnz = 0, n = in->row_off[in->r];

	d->m = in->m;
	d->row_off = malloc((in->r + 1) * sizeof *d->row_off);
	d->row_cell = malloc((n + 1) * sizeof *d->row_cell);
	d->row_coef = malloc((n + 1) * sizeof *d->row_coef);
	d->rhs = malloc((in->r + 1) * sizeof *d->rhs);
	d->half = malloc((in->r + 1) * sizeof *d->half);
	d->scale = malloc((in->r + 1) * sizeof *d->scale);
	d->row_global = malloc((in->r + 1) * sizeof *d->row_global);
	if (!d->row_off || !d->row_cell || !d->row_coef || !d->rhs || !d->half || !d->scale ||
	    !d->row_global)
		return PM_ERR_NOMEM;
	for (int pass = 0; pass < 2; pass++) {
		if (pass)
			d->first_l1 = d->r;
		for (size_t i = 0; i < in->r; i++) {
			if ((in->hi[i] > in->lo[i]) != pass)
				continue;
			d->row_off[d->r] = nnz;
			for (size_t e = in->row_off[i]; e < in->row_off[i + 1]; e++, nnz++) {
				d->row_cell[nnz] = in->row_cell[e];
				d->row_coef[nnz] = in->row_coef[e];
			}
			d->row_global[d->r] = (uint32_t)i;
			d->rhs[d->r] = 0.5 * (in->lo[i] + in->hi[i]);
			d->half[d->r] = 0.5 * (in->hi[i] - in->lo[i]);
			d->scale[d->r] =
			    1.0 / sqrt(fmax(1, fmax(fabs(in->lo[i]), fabs(in->hi[i]))));
			d->r++;
		}
	}
	d->row_off[d->r] = nnz;
	l1_scales(d);
	return dual_transpose(d);
}

enum pm_status maxent_solve_rows(const struct maxent_rows *in, const struct solver_options *o,
				 struct cancel *cancel, double *y, struct maxent_stats *st,
				 struct pm_error *err)
{
	struct maxent_dual *d = calloc(1, sizeof *d);
	double *u = NULL, big = 1;
	enum pm_status ret = PM_ERR_NOMEM;

	memset(st, 0, sizeof *st);
	if (!d || rows_copy(d, in) || !(u = lbfgs_malloc((int)d->r + 1)))
		goto out;
	d->y = malloc((d->m + 1) * sizeof *d->y);
	d->lambda = calloc(d->r + 1, sizeof *d->lambda);
	d->y0 = malloc((d->m + 1) * sizeof *d->y0);
	d->lambda0 = calloc(d->r + 1, sizeof *d->lambda0);
	if (!d->y || !d->lambda || !d->y0 || !d->lambda0)
		goto out;
	for (size_t k = 0; k < d->r; k++) {
		u[k] = in->start ? in->start[d->row_global[k]] / d->scale[k] : 0;
		big = fmax(big, fabs(d->rhs[k]));
	}
	dual_rebase(d);
	ret = dual_run(d, o, cancel, u, 0, stop_target(o->tolerance, big), st);
	for (size_t j = 0; (ret == PM_OK || ret == PM_ERR_CANCELLED) && j < d->m; j++)
		y[j] = d->y[j];
out:
	solve_error(ret, err);
	lbfgs_free(u);
	maxent_dual_destroy(d);
	return ret;
}

enum pm_status maxent_solve(const struct invariants *inv, const uint8_t *active,
			    const uint8_t *skip, const struct solver_options *o,
			    struct cancel *cancel, double *y, const struct solver_probe *probe,
			    struct maxent_stats *st, struct pm_error *err)
{
	double *prev = probe ? probe->prev : NULL;
	struct maxent_dual *d = NULL;
	double *u = NULL, max_rhs = 1;
	enum pm_status ret = PM_ERR_NOMEM;

	memset(st, 0, sizeof *st);
	if (maxent_dual_create(inv, active, skip, &d) || !(u = lbfgs_malloc((int)d->r + 1)))
		goto out;
	if (prev && (!(d->cur = malloc((d->m + 1) * sizeof *d->cur)) ||
		     !(d->prv = malloc((d->m + 1) * sizeof *d->prv)) ||
		     !(d->lcur = malloc((d->r + 1) * sizeof *d->lcur)) ||
		     !(d->lprv = malloc((d->r + 1) * sizeof *d->lprv))))
		goto out;
	for (size_t i = 0; i < d->r; i++)
		max_rhs = fmax(max_rhs, d->rhs[i]);
	dual_start(d, inv, d->nb, d->sa_sum, u);
	ret = dual_run(d, o, cancel, u, prev != NULL, stop_target(o->tolerance, max_rhs), st);
	/* a cancel leaves the last iterate (solver.c's best point when the
	 * time limit stopped the solve) */
	for (size_t j = 0; (ret == PM_OK || ret == PM_ERR_CANCELLED) && j < d->m; j++)
		y[d->global[j]] = d->y[j];
	for (size_t j = 0; prev && d->prv && ret == PM_OK && j < d->m; j++)
		prev[d->global[j]] = d->r ? d->prv[j] : d->y[j];
	if (prev && probe->ray && d->lcur && ret == PM_OK)
		full_ray(d, probe->ray);
out:
	solve_error(ret, err);
	lbfgs_free(u);
	maxent_dual_destroy(d);
	return ret;
}
