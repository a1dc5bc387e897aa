/*
 * The two-level dual. For fixed multipliers μ of the open knowledge rows,
 * the rest of the dual separates by bucket: bucket b's part is a matrix
 * scaling problem, y[q,s] = K[q,s] exp(α_q + β_s) with kernel
 * K = exp(sum of μ over the open rows through the cell) on its free cells,
 * rows summing to n(q,b) and columns to n(s,b). Solving it exactly gives
 *
 *     G(μ) = min_{α,β} D(α, β, μ) = N - Σ n(q,b) α_q - Σ n(s,b) β_s - c·μ,
 *
 * a smooth convex function of μ alone whose gradient is the violation of
 * the open rows, A_K y(μ) - c_K (envelope theorem). L-BFGS minimises G
 * over one variable per open row instead of one per row of the system.
 *
 * Everything is relative to a base point (μ0, y0): K = y0 exp(Δm) and
 * α, β are the log-scalings since the base, so G(μ) - G(μ0) =
 * -Σ n α - Σ n β - c·(μ - μ0) keeps full precision when the changes are
 * tiny; the inner scaling is warm-started from the previous evaluation.
 */
#include <lbfgs.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solver.h"

/* Inner scaling: sweep cap per evaluation (buckets have total support, so
 * the rate is linear; the cap only guards pathological inputs). */
#define INNER_SWEEPS 10000
/* Cap on a kernel exponent: keeps trial points of line searches finite. */
#define EXP_CAP 600.0

struct twolevel {
	const struct dataset *ds;
	const struct invariants *inv;
	const uint8_t *zero;
	size_t nb;
	uint32_t *bk;	      /* coupled buckets */
	size_t *qoff, *soff;  /* per coupled bucket: its α and β */
	double *alpha, *beta; /* log-scalings since the base */
	size_t r;
	uint32_t *row; /* open knowledge rows (inv rows) */
	double *rhs, *scale, *mu, *mu0;
	size_t *ck_off; /* per cell: the open rows through it (local) */
	uint32_t *ck;
	double *y0, *y;		 /* per cell of the system */
	double *sums, *dm, *fac; /* scratch, the widest coupled bucket */
	double inner_target;
};

static void twolevel_finish(struct twolevel *t)
{
	free(t->bk);
	free(t->qoff);
	free(t->soff);
	free(t->alpha);
	free(t->beta);
	free(t->row);
	free(t->rhs);
	free(t->scale);
	free(t->mu);
	free(t->mu0);
	free(t->ck_off);
	free(t->ck);
	free(t->y0);
	free(t->sums);
	free(t->dm);
	free(t->fac);
}

/* Sums of the g x h block yb along rows (cols = 0) or columns into out. */
static void block_sums(const double *yb, size_t g, size_t h, int cols, double *out)
{
	memset(out, 0, (cols ? h : g) * sizeof *out);
	for (size_t i = 0; i < g; i++)
		for (size_t j = 0; j < h; j++)
			out[cols ? j : i] += yb[i * h + j];
}

/* A wild trial point of a line search must not poison the warm start of
 * every later evaluation: non-finite scalings restart from the base. */
static void reset_if_broken(double *a, size_t g, double *be, size_t h)
{
	int broken = 0;

	for (size_t i = 0; i < g; i++)
		broken |= !isfinite(a[i]);
	for (size_t j = 0; j < h; j++)
		broken |= !isfinite(be[j]);
	if (broken) {
		memset(a, 0, g * sizeof *a);
		memset(be, 0, h * sizeof *be);
	}
}

/* Δm of every cell of coupled bucket k (sum of μ - μ0 over the open rows
 * through it) into dm, and the kernel times the current scalings into y. */
static void inner_start(struct twolevel *t, size_t k, double *dm)
{
	const struct dataset *ds = t->ds;
	size_t b = t->bk[k], off = t->inv->cell_off[b];
	size_t g = ds->bq_off[b + 1] - ds->bq_off[b], h = ds->bs_off[b + 1] - ds->bs_off[b];
	double *a = t->alpha + t->qoff[k], *be = t->beta + t->soff[k];

	reset_if_broken(a, g, be, h);
	for (size_t i = 0; i < g; i++) {
		for (size_t j = 0; j < h; j++) {
			size_t c = off + i * h + j;

			dm[i * h + j] = 0;
			for (size_t x = t->ck_off[c]; x < t->ck_off[c + 1]; x++)
				dm[i * h + j] += t->mu[t->ck[x]] - t->mu0[t->ck[x]];
			dm[i * h + j] = fmin(fmax(dm[i * h + j], -EXP_CAP), EXP_CAP);
			t->y[c] = t->zero[c] ? 0 : t->y0[c] * exp(dm[i * h + j] + a[i] + be[j]);
		}
	}
}

/*
 * Scales coupled bucket k exactly for the current μ. Returns the largest
 * row violation left (columns are exact after the last pass) and adds to
 * *f the bucket's share of D(α, β, μ) - D(base),
 *     Σ y0 expm1(Δm + α + β) - Σ n(q,b) α - Σ n(s,b) β,
 * which is stationary in (α, β), so an inner residual r moves it by O(r²).
 */
static double inner_bucket(struct twolevel *t, size_t k, double *f)
{
	const struct dataset *ds = t->ds;
	size_t b = t->bk[k], off = t->inv->cell_off[b];
	size_t g = ds->bq_off[b + 1] - ds->bq_off[b], h = ds->bs_off[b + 1] - ds->bs_off[b];
	const uint32_t *nq = ds->bq_count + ds->bq_off[b], *ns = ds->bs_count + ds->bs_off[b];
	double *a = t->alpha + t->qoff[k], *be = t->beta + t->soff[k], *yb = t->y + off, worst = 0;
	double *dm = t->dm, *sums = t->sums, *fac = t->fac;

	inner_start(t, k, dm);
	/* the sweeps multiply; one log per row and column at the end */
	for (size_t x = 0; x < g + h; x++)
		fac[x] = 1;
	for (int sweep = 0; sweep < INNER_SWEEPS; sweep++) {
		block_sums(yb, g, h, 0, sums);
		worst = 0;
		for (size_t i = 0; i < g; i++) {
			worst = fmax(worst, fabs(sums[i] - nq[i]));
			if (!(sums[i] > 0 && isfinite(sums[i])))
				continue; /* underflowed trial point: reported by worst */
			fac[i] *= nq[i] / sums[i];
			for (size_t j = 0; j < h; j++)
				yb[i * h + j] *= nq[i] / sums[i];
		}
		if (worst <= t->inner_target && sweep > 0)
			break;
		block_sums(yb, g, h, 1, sums);
		for (size_t j = 0; j < h; j++) {
			if (!(sums[j] > 0 && isfinite(sums[j])))
				continue;
			fac[g + j] *= ns[j] / sums[j];
			for (size_t i = 0; i < g; i++)
				yb[i * h + j] *= ns[j] / sums[j];
		}
	}
	for (size_t i = 0; i < g; i++)
		a[i] += log(fac[i]);
	for (size_t j = 0; j < h; j++)
		be[j] += log(fac[g + j]);
	for (size_t i = 0; i < g; i++) {
		*f -= nq[i] * a[i];
		for (size_t j = 0; j < h; j++)
			if (!t->zero[off + i * h + j])
				*f += t->y0[off + i * h + j] * expm1(dm[i * h + j] + a[i] + be[j]);
	}
	for (size_t j = 0; j < h; j++)
		*f -= ns[j] * be[j];
	return worst;
}

/* G(μ) - G(μ0) and its gradient in the scaled variables u. */
static double twolevel_eval(void *ctx, const double *u, double *grad, double *violation)
{
	struct twolevel *t = ctx;
	const struct invariants *inv = t->inv;
	double f = 0, worst = 0;

	for (size_t k = 0; k < t->r; k++)
		t->mu[k] = u[k] * t->scale[k];
	for (size_t k = 0; k < t->nb; k++)
		worst = fmax(worst, inner_bucket(t, k, &f));
	for (size_t k = 0; k < t->r; k++) {
		size_t r = t->row[k];
		double s = 0;

		for (size_t e = inv->row_off[r]; e < inv->row_off[r + 1]; e++)
			s += t->y[inv->row_cell[e]];
		f -= (t->mu[k] - t->mu0[k]) * t->rhs[k];
		if (grad)
			grad[k] = (s - t->rhs[k]) * t->scale[k];
		worst = fmax(worst, fabs(s - t->rhs[k]));
	}
	*violation = worst;
	return f;
}

/* The current point becomes the base: y0 = y, μ0 = μ, α = β = 0. */
static void twolevel_rebase(void *ctx, const double *u)
{
	struct twolevel *t = ctx;

	for (size_t k = 0; k < t->nb; k++) {
		size_t b = t->bk[k];

		memcpy(t->y0 + t->inv->cell_off[b], t->y + t->inv->cell_off[b],
		       (t->inv->cell_off[b + 1] - t->inv->cell_off[b]) * sizeof *t->y);
	}
	memcpy(t->mu0, t->mu, t->r * sizeof *t->mu);
	memset(t->alpha, 0, t->qoff[t->nb] * sizeof *t->alpha);
	memset(t->beta, 0, t->soff[t->nb] * sizeof *t->beta);
}

/* The coupled buckets, their α/β offsets, and the scratch size. */
static enum pm_status init_buckets(struct twolevel *t, const uint8_t *coupled)
{
	const struct dataset *ds = t->ds;
	size_t wide = 1, cells = 1;

	t->bk = malloc((ds->n_groups + 1) * sizeof *t->bk);
	t->qoff = malloc((ds->n_groups + 1) * sizeof *t->qoff);
	t->soff = malloc((ds->n_groups + 1) * sizeof *t->soff);
	if (!t->bk || !t->qoff || !t->soff)
		return PM_ERR_NOMEM;
	t->qoff[0] = t->soff[0] = 0;
	for (size_t b = 0; b < ds->n_groups; b++) {
		size_t g = ds->bq_off[b + 1] - ds->bq_off[b], h = ds->bs_off[b + 1] - ds->bs_off[b];

		if (!coupled[b])
			continue;
		t->bk[t->nb] = (uint32_t)b;
		t->qoff[t->nb + 1] = t->qoff[t->nb] + g;
		t->soff[t->nb + 1] = t->soff[t->nb] + h;
		t->nb++;
		wide = g > wide ? g : wide;
		wide = h > wide ? h : wide;
		cells = g * h > cells ? g * h : cells;
	}
	t->alpha = calloc(t->qoff[t->nb] + 1, sizeof *t->alpha);
	t->beta = calloc(t->soff[t->nb] + 1, sizeof *t->beta);
	t->sums = malloc(wide * sizeof *t->sums);
	t->dm = malloc(cells * sizeof *t->dm);
	t->fac = malloc(2 * wide * sizeof *t->fac);
	return t->alpha && t->beta && t->sums && t->dm && t->fac ? PM_OK : PM_ERR_NOMEM;
}

/* The open rows (knowledge rows not implied) and, per cell, the open rows
 * through it. */
static enum pm_status init_rows(struct twolevel *t, const uint8_t *implied, const uint8_t *coupled)
{
	const struct invariants *inv = t->inv;
	size_t first = inv->n_qi_rows + inv->n_sa_rows, n = inv->n_rows - first;

	t->row = malloc((n + 1) * sizeof *t->row);
	t->rhs = malloc((n + 1) * sizeof *t->rhs);
	t->scale = malloc((n + 1) * sizeof *t->scale);
	t->mu = calloc(n + 1, sizeof *t->mu);
	t->mu0 = calloc(n + 1, sizeof *t->mu0);
	t->ck_off = calloc(inv->n_cells + 2, sizeof *t->ck_off);
	if (!t->row || !t->rhs || !t->scale || !t->mu || !t->mu0 || !t->ck_off)
		return PM_ERR_NOMEM;
	for (size_t r = first; r < inv->n_rows; r++) {
		/* open rows of the coupled buckets (a row lies in one component) */
		if (implied[r] || inv->row_off[r] == inv->row_off[r + 1] ||
		    !coupled[inv->cell_group[inv->row_cell[inv->row_off[r]]]])
			continue;
		t->row[t->r] = (uint32_t)r;
		t->rhs[t->r] = inv->rhs[r];
		t->scale[t->r] = 1.0 / sqrt(fmax(1.0, inv->rhs[r]));
		for (size_t e = inv->row_off[r]; e < inv->row_off[r + 1]; e++)
			t->ck_off[inv->row_cell[e] + 2]++;
		t->r++;
	}
	for (size_t c = 0; c < inv->n_cells; c++)
		t->ck_off[c + 2] += t->ck_off[c + 1];
	t->ck = malloc((t->ck_off[inv->n_cells + 1] + 1) * sizeof *t->ck);
	if (!t->ck)
		return PM_ERR_NOMEM;
	for (size_t k = 0; k < t->r; k++)
		for (size_t e = inv->row_off[t->row[k]]; e < inv->row_off[t->row[k] + 1]; e++)
			t->ck[t->ck_off[inv->row_cell[e] + 1]++] = (uint32_t)k;
	return PM_OK;
}

/* Start: μ = 0, every coupled bucket scaled alone (y0 = y). */
static enum pm_status init_start(struct twolevel *t)
{
	const struct invariants *inv = t->inv;
	double widest = 1;

	t->y0 = calloc(inv->n_cells + 1, sizeof *t->y0);
	if (!t->y0)
		return PM_ERR_NOMEM;
	for (size_t k = 0; k < t->nb; k++) {
		size_t b = t->bk[k], lo = inv->cell_off[b], hi = inv->cell_off[b + 1];

		if (scaling_bucket(t->ds, inv, b, t->zero, t->y0, 1e-13, INNER_SWEEPS))
			metrics_closed_form(t->ds, inv, b, t->y0); /* refined by the inner loop */
		memcpy(t->y + lo, t->y0 + lo, (hi - lo) * sizeof *t->y);
		widest = fmax(widest, t->ds->group_size[b]);
	}
	/* as tight as rounding allows: function and gradient must agree */
	t->inner_target = fmax(1e-13, 1e-15 * widest);
	return PM_OK;
}

enum pm_status twolevel_solve(const struct dataset *ds, const struct invariants *inv,
			      const uint8_t *zero, const uint8_t *implied, const uint8_t *coupled,
			      const struct solver_options *o, double *y, struct maxent_stats *st,
			      struct pm_error *err)
{
	struct twolevel t = {.ds = ds, .inv = inv, .zero = zero, .y = y};
	double *u = NULL, max_rhs = 1;
	enum pm_status ret;

	memset(st, 0, sizeof *st);
	ret = init_buckets(&t, coupled);
	if (!ret)
		ret = init_rows(&t, implied, coupled);
	if (!ret)
		ret = init_start(&t);
	if (!ret && !(u = lbfgs_malloc((int)t.r + 1)))
		ret = PM_ERR_NOMEM;
	if (ret)
		goto out;
	memset(u, 0, (t.r + 1) * sizeof *u);
	for (size_t k = 0; k < t.r; k++)
		max_rhs = fmax(max_rhs, t.rhs[k]);
	{
		struct maxent_driver drv = {.opt = o,
					    .ctx = &t,
					    .eval = twolevel_eval,
					    .rebase = twolevel_rebase,
					    .target = fmax(o->tolerance * 1e-3, 1e-13 * max_rhs)};

		ret = maxent_lbfgs(&drv, (int)t.r, u, st);
	}
out:
	if (ret == PM_ERR_NOMEM)
		error_set(err, ret, "", "out of memory in the two-level solver");
	else if (ret == PM_ERR_CANCELLED)
		error_set(err, ret, "", "the solve was cancelled");
	else if (ret)
		error_set(err, ret, "", "L-BFGS rejected its setup (internal error)");
	lbfgs_free(u);
	twolevel_finish(&t);
	return ret;
}
