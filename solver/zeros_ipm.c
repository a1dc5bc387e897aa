/*
 * Forced zeros by an interior point method, of a problem in blocks
 * (struct ipm_problem): a whole component that propagation and the
 * relaxations leave open (zeros.c), or one value's relaxation
 * (zeros_relax.c). The system {y >= 0, A y = c} (each block's rows and
 * columns, all of them, and the knowledge rows) with a zero objective:
 *
 *     min 0  s.t.  A y = c, y >= 0;     max c^T w  s.t.  A^T w + s = 0, s >= 0.
 *
 * Every feasible y is optimal, so a path-following primal-dual method
 * converges to a strictly complementary pair: y positive exactly on the
 * cells some solution makes positive, s = -A^T w positive exactly on the
 * forced zeros. That s is also the proof: for every feasible y,
 *
 *     Σ_j s_j y_j = -w^T A y = -c^T w,
 *
 * so with s >= 0 every cell obeys y_j <= -c^T w / s_j. Rounding leaves
 * some s_j slightly negative; with u_j >= y_j (the smaller of its row and
 * column sums) the bound becomes y_j <= (-c^T w + Σ_{s_k < 0} -s_k u_k) / s_j,
 * and a cell is claimed only when that is below ZERO_RECORDS (a
 * solve without it then differs by no more than that). Both -c^T w and
 * each s_j are sums whose terms grow with w while the sums stay small:
 * they are summed with compensation and carry their rounding bounds
 * (struct csum), -c^T w taken at its largest, s_k at its smallest.
 * Without that, an iterate can prove cells zero that hold some 1e-6
 * records, and consistent knowledge comes out inconsistent.
 * Each iterate's w is a certificate of its own, once purified (purify:
 * projected so that s vanishes on the positive side, whose Σ s_k y_k of
 * about n mu would otherwise dominate -c^T w). When every cell on the
 * zero side (y < s) is proved and every other is clearly positive
 * (y >= CENTER_GAP s) at a feasible iterate, the zeros are complete
 * ("settled"); otherwise the caller's linear program decides.
 *
 * The normal equations A D A^T Δw = r (D = y / s) are zeros_ipm_normal.c's.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "parallel.h"
#include "schur.h"
#include "solve.h"
#include "zeros.h"

#define CENTER_MAX_ITER 80
/* A cell on the positive side is clearly so when y >= CENTER_GAP s. */
#define CENTER_GAP 1e6
/* Iterates with mu below this (times the largest count) try to certify. */
#define CENTER_CERTIFY 1e-8
/* Open rows up to which the dense Schur complement is formed (r^2
 * doubles per part of the pool, before the dependent rows go: 512 MiB
 * at most); larger components are left to the caller's LP, which is
 * slower still. */
#define CENTER_ROWS 8192

static void center_free(struct ipm_state *c)
{
	void *all[] = {c->loff, c->qoff,    c->foff, c->ck_off, c->ck,	c->fixed, c->y,	   c->s,
		       c->d,	c->v,	    c->rd,   c->dy,	c->ds,	c->corr,  c->u,	   c->w,
		       c->dw,	c->rp,	    c->rhs,  c->mu,	c->dmu, c->rk,	  c->rhsk, c->fac,
		       c->S,	c->scratch, c->tw,   c->w0,	c->mu0};

	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		free(all[i]);
	for (int p = 0; c->part && p < c->parts; p++) {
		struct ipm_part *pt = &c->part[p];

		if (p > 0)
			free(pt->S);
		free(pt->loc);
		free(pt->rows);
		free(pt->stamp);
		free(pt->pq);
		free(pt->ab);
		free(pt->pat);
		free(pt->first);
		free(pt->key);
		free(pt->t);
	}
	free(c->part);
	parallel_destroy(c->pool);
}

/* Offsets of every block's cells, rows + columns and factorization. */
static enum pm_status layout(struct ipm_state *c)
{
	const struct ipm_problem *p = c->p;

	c->loff = malloc((c->nb + 1) * sizeof *c->loff);
	c->qoff = malloc((c->nb + 1) * sizeof *c->qoff);
	c->foff = malloc((c->nb + 1) * sizeof *c->foff);
	if (!c->loff || !c->qoff || !c->foff)
		return PM_ERR_NOMEM;
	c->loff[0] = c->qoff[0] = c->foff[0] = 0;
	for (size_t k = 0; k < c->nb; k++) {
		size_t h = p->h[k], g = (p->cell_off[k + 1] - p->cell_off[k]) / h;

		c->loff[k + 1] = c->loff[k] + g * h;
		c->qoff[k + 1] = c->qoff[k] + g + h;
		c->foff[k + 1] = c->foff[k] + schur_size(g, h);
		c->width = g + h > c->width ? g + h : c->width;
	}
	c->n = c->loff[c->nb];
	return PM_OK;
}

/* Per cell, the rows through it (local numbers), known zeros left out. */
static enum pm_status row_index(struct ipm_state *c, const uint8_t *zero)
{
	const struct ipm_problem *p = c->p;

	c->ck_off = calloc(c->n + 2, sizeof *c->ck_off);
	if (!c->ck_off)
		return PM_ERR_NOMEM;
	for (size_t r = 0; r < c->nr; r++)
		for (size_t x = p->row_off[c->rows[r]]; x < p->row_off[c->rows[r] + 1]; x++)
			c->ck_off[p->row_cell[x] + 2] += !zero[p->row_cell[x]];
	for (size_t j = 0; j < c->n; j++)
		c->ck_off[j + 2] += c->ck_off[j + 1];
	c->ck = malloc((c->ck_off[c->n + 1] + 1) * sizeof *c->ck);
	if (!c->ck)
		return PM_ERR_NOMEM;
	for (size_t r = 0; r < c->nr; r++)
		for (size_t x = p->row_off[c->rows[r]]; x < p->row_off[c->rows[r] + 1]; x++)
			if (!zero[p->row_cell[x]])
				c->ck[c->ck_off[p->row_cell[x] + 1]++] = (uint32_t)r;
	return PM_OK;
}

static enum pm_status center_alloc(struct ipm_state *c)
{
	size_t n = c->n + 1, q = c->qoff[c->nb] + 1, r = c->nr + 1;
	double **vn[] = {&c->y, &c->s, &c->d, &c->v, &c->rd, &c->dy, &c->ds, &c->corr, &c->u};
	double **vq[] = {&c->w, &c->dw, &c->rp, &c->rhs, &c->w0};
	double **vr[] = {&c->mu, &c->dmu, &c->rk, &c->rhsk, &c->mu0};
	int ok = 1;

	for (size_t i = 0; i < sizeof vn / sizeof *vn; i++)
		ok &= (*vn[i] = calloc(n, sizeof(double))) != NULL;
	for (size_t i = 0; i < sizeof vq / sizeof *vq; i++)
		ok &= (*vq[i] = calloc(q, sizeof(double))) != NULL;
	for (size_t i = 0; i < sizeof vr / sizeof *vr; i++)
		ok &= (*vr[i] = calloc(r, sizeof(double))) != NULL;
	c->fixed = calloc(n, 1);
	c->fac = malloc((c->foff[c->nb] + 1) * sizeof *c->fac);
	c->S = malloc(r * r * sizeof *c->S);
	c->scratch = malloc(schur_dense_work(c->nr) * sizeof *c->scratch);
	c->tw = malloc((2 * c->width + 1) * sizeof *c->tw);
	if (!ok || !c->tw || !c->fixed || !c->fac || !c->S ||
	    parallel_create(c->p->threads, &c->pool))
		return PM_ERR_NOMEM;
	c->parts = parallel_parts(c->pool);
	c->part = calloc((size_t)c->parts, sizeof *c->part);
	for (int p = 0; c->part && p < c->parts; p++) {
		struct ipm_part *pt = &c->part[p];

		pt->S = p ? malloc(r * r * sizeof *pt->S) : c->S;
		pt->loc = malloc(r * sizeof *pt->loc);
		pt->rows = malloc(r * sizeof *pt->rows);
		pt->stamp = calloc(r, sizeof *pt->stamp);
		pt->pat = malloc(r * sizeof *pt->pat);
		pt->first = malloc(r * sizeof *pt->first);
		pt->key = malloc(r * sizeof *pt->key);
		if (!pt->S || !pt->loc || !pt->rows || !pt->stamp || !pt->pat || !pt->first ||
		    !pt->key)
			return PM_ERR_NOMEM;
	}
	return c->part ? PM_OK : PM_ERR_NOMEM;
}

/* Block k's row i sum, and column j's. */
static double row_sum(const struct ipm_state *c, size_t k, size_t i)
{
	return c->p->sums[c->p->sum_off[k] + i];
}

static double col_sum(const struct ipm_state *c, size_t k, size_t j)
{
	return c->p->sums[c->p->sum_off[k] + bucket_g(c, k) + j];
}

/* Starting point: the closed form of each block on its free cells,
 * y = r_i c_j / n, s = 1; u_j the smaller of the cell's row and column
 * sums. zero: the cells known to be zero, and those of a row or column
 * that sums to 0 (no y >= 0 puts anything there). */
static void start(struct ipm_state *c, uint8_t *zero)
{
	for (size_t k = 0; k < c->nb; k++) {
		size_t g = bucket_g(c, k), h = bucket_h(c, k);
		double n = 0;

		for (size_t i = 0; i < g; i++)
			n += row_sum(c, k, i);
		for (size_t i = 0; i < g; i++)
			for (size_t j = 0; j < h; j++) {
				size_t l = c->loff[k] + i * h + j;
				double r = row_sum(c, k, i), cs = col_sum(c, k, j);

				zero[l] |= !(r > 0) || !(cs > 0);
				c->fixed[l] = zero[l];
				c->u[l] = fmin(r, cs);
				c->y[l] = c->fixed[l] ? 0 : r * cs / n;
				c->s[l] = c->fixed[l] ? 0 : 1;
			}
	}
}

/* A^T w at local cell l of bucket k (row i, column j), w = (bw, mw). */
static double at_w(const struct ipm_state *c, size_t k, size_t i, size_t j, const double *bw,
		   const double *mw)
{
	size_t l = c->loff[k] + i * bucket_h(c, k) + j;
	double t = bw[c->qoff[k] + i] + bw[c->qoff[k] + bucket_g(c, k) + j];

	for (size_t x = c->ck_off[l]; x < c->ck_off[l + 1]; x++)
		t += mw[c->ck[x]];
	return t;
}

/* rp, rk = c - A y (the caller's vector v instead of y when given), rd =
 * -A^T w - s; returns the largest primal residual. */
static double residuals(struct ipm_state *c, const double *v, double *rp, double *rk)
{
	double worst = 0;

	for (size_t r = 0; r < c->nr; r++)
		rk[r] = v ? 0 : c->p->rhs[c->rows[r]];
	for (size_t k = 0; k < c->nb; k++) {
		size_t g = bucket_g(c, k), h = bucket_h(c, k);
		double *rq = rp + c->qoff[k];

		for (size_t i = 0; i < g; i++)
			rq[i] = v ? 0 : row_sum(c, k, i);
		for (size_t j = 0; j < h; j++)
			rq[g + j] = v ? 0 : col_sum(c, k, j);
		for (size_t i = 0; i < g; i++)
			for (size_t j = 0; j < h; j++) {
				size_t l = c->loff[k] + i * h + j;
				double x = v ? v[l] : c->y[l];

				if (c->fixed[l])
					continue;
				rq[i] -= x;
				rq[g + j] -= x;
				for (size_t e = c->ck_off[l]; e < c->ck_off[l + 1]; e++)
					rk[c->ck[e]] -= x;
				if (!v)
					c->rd[l] = -at_w(c, k, i, j, c->w, c->mu) - c->s[l];
			}
	}
	for (size_t q = 0; !v && q < c->qoff[c->nb]; q++)
		worst = fmax(worst, fabs(rp[q]));
	for (size_t r = 0; !v && r < c->nr; r++)
		worst = fmax(worst, fabs(rk[r]));
	return worst;
}

/* D = y / s, the normal equations formed and factored
 * (zeros_ipm_factor). */
static enum pm_status factor(struct ipm_state *c)
{
	for (size_t l = 0; l < c->n; l++)
		c->d[l] = c->fixed[l] ? 0 : c->y[l] / c->s[l];
	return zeros_ipm_factor(c, SCHUR_PIVOT_EPS);
}

/*
 * The Newton direction for complementarity targets y_j s_j = a - corr_j
 * (corr NULL: 0): v = r_c / s - D r_d, then A D A^T Δw = r_p - A v by
 * eliminating each bucket's block, Δy = v + D A^T Δw,
 * Δs = r_d - A^T Δw.
 */
static void direction(struct ipm_state *c, double a, const double *corr)
{
	size_t nq = c->qoff[c->nb];

	for (size_t l = 0; l < c->n; l++)
		c->v[l] = c->fixed[l] ? 0
				      : (a - c->y[l] * c->s[l] - (corr ? corr[l] : 0)) / c->s[l] -
					    c->d[l] * c->rd[l];
	residuals(c, c->v, c->rhs, c->rhsk);
	for (size_t q = 0; q < nq; q++)
		c->rhs[q] += c->rp[q];
	for (size_t r = 0; r < c->nr; r++)
		c->dmu[r] = c->rhsk[r] + c->rk[r];
	zeros_ipm_solve(c);
	for (size_t k = 0; k < c->nb; k++) {
		size_t g = bucket_g(c, k), h = bucket_h(c, k);

		for (size_t i = 0; i < g; i++)
			for (size_t j = 0; j < h; j++) {
				size_t l = c->loff[k] + i * h + j;
				double t = at_w(c, k, i, j, c->dw, c->dmu);

				c->dy[l] = c->fixed[l] ? 0 : c->v[l] + c->d[l] * t;
				c->ds[l] = c->fixed[l] ? 0 : c->rd[l] - t;
			}
	}
}

/* Largest steps in (0, 1] keeping y and s positive. */
static void max_steps(const struct ipm_state *c, double *ap, double *ad)
{
	*ap = *ad = 1;
	for (size_t l = 0; l < c->n; l++) {
		if (c->dy[l] < 0)
			*ap = fmin(*ap, -c->y[l] / c->dy[l]);
		if (c->ds[l] < 0)
			*ad = fmin(*ad, -c->s[l] / c->ds[l]);
	}
}

static double mu_at(const struct ipm_state *c, double ap, double ad, size_t free)
{
	double sum = 0;

	for (size_t l = 0; l < c->n; l++)
		sum += (c->y[l] + ap * c->dy[l]) * (c->s[l] + ad * c->ds[l]);
	return free ? sum / (double)free : 0;
}

/* One Mehrotra predictor-corrector step: the affine direction, then the
 * corrector toward sigma mu with the second-order term dy ds. */
static enum pm_status step(struct ipm_state *c, size_t free)
{
	double ap, ad, mu = mu_at(c, 0, 0, free), sigma;
	enum pm_status f = factor(c);

	if (f)
		return f;
	direction(c, 0, NULL);
	max_steps(c, &ap, &ad);
	sigma = pow(mu_at(c, ap, ad, free) / mu, 3);
	sigma = sigma > 1 ? 1 : sigma;
	for (size_t l = 0; l < c->n; l++)
		c->corr[l] = c->dy[l] * c->ds[l];
	direction(c, sigma * mu, c->corr);
	max_steps(c, &ap, &ad);
	ap = fmin(1, 0.995 * ap);
	ad = fmin(1, 0.995 * ad);
	for (size_t l = 0; l < c->n; l++) {
		c->y[l] += ap * c->dy[l];
		c->s[l] += ad * c->ds[l];
	}
	for (size_t q = 0; q < c->qoff[c->nb]; q++)
		c->w[q] += ad * c->dw[q];
	for (size_t r = 0; r < c->nr; r++)
		c->mu[r] += ad * c->dmu[r];
	return PM_OK;
}

/* s_l = -A^T w at local cell l (bucket k, row i, column j) into c->v,
 * its rounding bound into c->corr (scratch between steps). */
static void slack(struct ipm_state *c, size_t k, size_t i, size_t j)
{
	size_t l = c->loff[k] + i * bucket_h(c, k) + j;
	struct csum t = {0};

	csum_add(&t, -c->w[c->qoff[k] + i]);
	csum_add(&t, -c->w[c->qoff[k] + bucket_g(c, k) + j]);
	for (size_t x = c->ck_off[l]; x < c->ck_off[l + 1]; x++)
		csum_add(&t, -c->mu[c->ck[x]]);
	c->v[l] = csum_value(&t);
	c->corr[l] = csum_error(&t);
}

/* -c^T w plus its rounding bound (the largest it can be), s = -A^T w into
 * c->v and the bounds of its entries into c->corr. */
static double dual_value(struct ipm_state *c)
{
	struct csum sum = {0};

	for (size_t r = 0; r < c->nr; r++)
		csum_mul(&sum, -c->p->rhs[c->rows[r]], c->mu[r]);
	for (size_t k = 0; k < c->nb; k++) {
		size_t g = bucket_g(c, k), h = bucket_h(c, k);

		for (size_t i = 0; i < g; i++)
			csum_mul(&sum, -row_sum(c, k, i), c->w[c->qoff[k] + i]);
		for (size_t j = 0; j < h; j++)
			csum_mul(&sum, -col_sum(c, k, j), c->w[c->qoff[k] + g + j]);
		for (size_t i = 0; i < g; i++)
			for (size_t j = 0; j < h; j++)
				slack(c, k, i, j);
	}
	return csum_value(&sum) + csum_error(&sum);
}

/* s = -A^T w into c->v (c->corr its rounding bounds), every cell. */
static void slacks(struct ipm_state *c)
{
	for (size_t k = 0; k < c->nb; k++)
		for (size_t i = 0; i < bucket_g(c, k); i++)
			for (size_t j = 0; j < bucket_h(c, k); j++)
				slack(c, k, i, j);
}

/*
 * The iterate's dual w as a certificate is only as good as Σ s_k y_k over
 * the cells on the positive side (y >= s), about n mu: with 10^5 cells
 * at the end of what double precision allows, 10^-8 records, where the
 * claims need 10^-9. Projecting w so that s = -A^T w vanishes on them,
 * w += z with A_P A_P^T z = A_P s_P (P the positive side, whose s_P =
 * -A_P^T w lies in A_P^T's range), removes that term: the normal
 * equations with D = 1 on P and 0 elsewhere, well conditioned where the
 * iterate's D spans 26 orders of magnitude. Twice, the second pass on
 * what rounding left of the first. The caller restores w.
 */
static enum pm_status purify(struct ipm_state *c)
{
	size_t nq = c->qoff[c->nb];
	enum pm_status f;

	for (size_t l = 0; l < c->n; l++)
		c->d[l] = c->fixed[l] || c->y[l] < c->s[l] ? 0 : 1;
	if ((f = zeros_ipm_factor(c, SCHUR_PIVOT_EPS)))
		return f;
	for (int pass = 0; pass < 2; pass++) {
		slacks(c);
		for (size_t l = 0; l < c->n; l++)
			c->v[l] = c->d[l] > 0 ? -c->v[l] : 0;
		residuals(c, c->v, c->rhs, c->dmu); /* A_P s_P */
		zeros_ipm_solve(c);
		for (size_t q = 0; q < nq; q++)
			c->w[q] += c->dw[q];
		for (size_t r = 0; r < c->nr; r++)
			c->mu[r] += c->dmu[r];
	}
	return PM_OK;
}

/* Claims the cells the iterate puts on the zero side (y < s) whose bound
 * from the certificate is below ZERO_RECORDS, and fixes them at 0 (the
 * iterations go on without them: their D is what spans the orders of
 * magnitude); returns how many it newly claims, *all whether every
 * zero-side cell is proved and every other one clearly positive,
 * *proved the first half of that. */
static size_t certify(struct ipm_state *c, uint8_t *zero, int *all, int *proved)
{
	double e = dual_value(c);
	size_t n = 0;

	*all = *proved = 1;
	for (size_t l = 0; l < c->n; l++) /* s_l at its smallest: v - corr */
		if (!c->fixed[l] && c->v[l] - c->corr[l] < 0)
			e += (c->corr[l] - c->v[l]) * c->u[l];
	e = fmax(e, 0);
	for (size_t k = 0; k < c->nb; k++) {
		uint8_t *z = zero;

		for (size_t l = c->loff[k]; l < c->loff[k + 1]; l++) {
			if (c->fixed[l])
				continue;
			if (!(c->y[l] < c->s[l])) {
				*all &= c->y[l] >= CENTER_GAP * c->s[l];
				continue;
			}
			if (!(c->v[l] - c->corr[l] > 0) ||
			    !(e <= ZERO_RECORDS * (c->v[l] - c->corr[l]))) {
				*proved &= z[l];
				continue;
			}
			n += !z[l];
			z[l] = 1;
			c->fixed[l] = 1;
			c->y[l] = 0;
			c->s[l] = 0;
		}
	}
	*all &= *proved;
	return n;
}

/* With no free cell on the zero side (y < s), as once the claimed cells
 * are fixed, there is nothing to prove: *all is whether every free cell
 * is clearly positive, and the certificate (a factorization) is not
 * needed. Returns 0 if some cell is on the zero side. */
static int nothing_to_prove(const struct ipm_state *c, int *all, int *proved)
{
	int clear = 1;

	for (size_t l = 0; l < c->n; l++) {
		if (c->fixed[l])
			continue;
		if (c->y[l] < c->s[l])
			return 0;
		clear &= c->y[l] >= CENTER_GAP * c->s[l];
	}
	*proved = 1;
	*all = clear;
	return 1;
}

/* certify with the iterate's dual purified (purify), which is then
 * restored for the next step. */
static enum pm_status certify_purified(struct ipm_state *c, uint8_t *zero, size_t *found, int *all,
				       int *proved)
{
	size_t nq = c->qoff[c->nb];
	enum pm_status f;

	if (nothing_to_prove(c, all, proved))
		return PM_OK;
	memcpy(c->w0, c->w, nq * sizeof *c->w);
	memcpy(c->mu0, c->mu, c->nr * sizeof *c->mu);
	f = purify(c);
	if (!f)
		*found += certify(c, zero, all, proved);
	memcpy(c->w, c->w0, nq * sizeof *c->w);
	memcpy(c->mu, c->mu0, c->nr * sizeof *c->mu);
	return f;
}

/*
 * Iterates until settled or converged. Every w is a certificate of its
 * own (only the primal side of "settled" needs a feasible y), so each
 * iterate of the endgame (mu below CENTER_CERTIFY) claims what it
 * proves. The endgame ends where rounding takes over: once the residual
 * grows a thousandfold over the best, the directions are noise.
 */
static enum pm_status iterate(struct ipm_state *c, uint8_t *zero, size_t *found, int *settled)
{
	double scale = 1, best = INFINITY;

	for (size_t l = 0; l < c->n; l++)
		scale = fmax(scale, c->u[l]);
	for (int it = 0; it < CENTER_MAX_ITER; it++) {
		double viol = residuals(c, NULL, c->rp, c->rk), mu;
		size_t free = 0;
		enum pm_status f = PM_OK;
		int all = 0, proved = 0;

		for (size_t l = 0; l < c->n; l++)
			free += !c->fixed[l];
		mu = mu_at(c, 0, 0, free);
		if (viol > 1e3 * fmax(best, 1e-12 * scale))
			break;
		best = fmin(best, viol);
		if (mu <= CENTER_CERTIFY * scale && viol <= 1e-6 * scale)
			f = certify_purified(c, zero, found, &all, &proved);
		*settled = all && viol <= 1e-9 * scale;
		c->proved = proved;
		if (c->p->claims_only && proved)
			break;
		if (!f && !*settled && !(viol <= 1e-10 * scale && mu <= 1e-14 * scale)) {
			if (cancel_poll(c->p->cancel))
				return PM_ERR_CANCELLED;
			f = step(c, free);
		}
		if (f)
			return f;
		if (*settled || !isfinite(mu_at(c, 0, 0, free)) ||
		    (viol <= 1e-10 * scale && mu <= 1e-14 * scale))
			break;
	}
	return PM_OK;
}

/*
 * An iterate may prove only some of its zero-side cells before rounding
 * ends the endgame; those are fixed, and the method starts again on what
 * is left, at most CENTER_ROUNDS times while each round proves more.
 */
#define CENTER_ROUNDS 4

/* The structure of c for p's blocks and the rows rows[0 .. nr) of p,
 * the cells known to be zero (zero) left out. */
static enum pm_status center_setup(struct ipm_state *c, const struct ipm_problem *p,
				   const uint32_t *rows, size_t nr, const uint8_t *zero)
{
	*c = (struct ipm_state){.p = p, .rows = rows, .nb = p->n_blocks, .nr = nr};
	if (layout(c) || row_index(c, zero) || center_alloc(c))
		return PM_ERR_NOMEM;
	return PM_OK;
}

/*
 * The open rows that depend on the others and the invariants (rules on
 * every value of one attribute with one s sum to that value's SA rows):
 * the null
 * pivots of S at the starting point, where D is the closed form (no cell
 * near a bound), found with SCHUR_DEPENDENT. They add nothing to the
 * system but their share of the cubic cost; keep[r] = 0 for them, *kept
 * the others.
 */
static enum pm_status independent_rows(struct ipm_state *c, uint8_t *zero, uint8_t *keep,
				       size_t *kept)
{
	enum pm_status f;

	*kept = 0;
	start(c, zero);
	for (size_t l = 0; l < c->n; l++)
		c->d[l] = c->fixed[l] ? 0 : c->y[l] / c->s[l];
	if ((f = zeros_ipm_factor(c, SCHUR_DEPENDENT)))
		return f;
	for (size_t r = 0; r < c->nr; r++)
		*kept += (keep[r] = c->S[r * c->nr + r] > 0);
	return PM_OK;
}

/* Do the rows left out (keep[r] 0) hold at c's iterate, as rows implied
 * by the others must (to 1e-6 of the largest sum)? If not, their
 * right-hand sides disagree with the others': no solution exists, and
 * "settled" stands for nothing (the linear program names the conflict). */
static int dropped_hold(const struct ipm_state *c, const struct ipm_problem *p, const uint8_t *keep)
{
	double scale = 1;

	for (size_t l = 0; l < c->n; l++)
		scale = fmax(scale, c->u[l]);
	for (size_t r = 0; r < p->n_rows; r++) {
		double sum = 0;

		for (size_t x = p->row_off[r]; !keep[r] && x < p->row_off[r + 1]; x++)
			sum += c->y[p->row_cell[x]];
		if (!keep[r] && !(fabs(sum - p->rhs[r]) <= 1e-6 * scale))
			return 0;
	}
	return 1;
}

/* The rounds of the method on c (CENTER_ROUNDS), each starting with the
 * zeros found so far fixed. */
static enum pm_status rounds(struct ipm_state *c, uint8_t *zero, size_t *found, int *settled)
{
	enum pm_status st = PM_OK;

	for (int round = 0; round < CENTER_ROUNDS; round++) {
		size_t before = *found;

		start(c, zero);
		c->proved = 0;
		st = iterate(c, zero, found, settled);
		if (st || *settled || *found == before || (c->p->claims_only && c->proved))
			break;
	}
	return st;
}

/* The cells clearly on the zero side of c's last iterate (fixed, or
 * y < s and within SIDE_CLAIM of the smaller of the cell's sums) into
 * side (may be NULL): what a linear program may then check, not a cell
 * that an iterate short of convergence leaves merely small. */
#define SIDE_CLAIM 1e-6

static void zero_side(const struct ipm_state *c, uint8_t *side)
{
	for (size_t l = 0; side && l < c->n; l++)
		side[l] = c->fixed[l] || (c->y[l] < c->s[l] && c->y[l] <= SIDE_CLAIM * c->u[l]);
}

enum pm_status zeros_ipm(const struct ipm_problem *p, uint8_t *zero, size_t *found, int *settled)
{
	struct ipm_state c = {0};
	uint8_t *keep = malloc(p->n_rows + 1);
	uint32_t *rows = malloc((p->n_rows + 1) * sizeof *rows);
	enum pm_status st = PM_ERR_NOMEM;
	size_t nr = 0, kept;

	*found = 0;
	*settled = 0;
	if (p->n_rows > CENTER_ROWS) {
		st = PM_OK;
		goto out;
	}
	for (size_t r = 0; rows && r < p->n_rows; r++)
		rows[r] = (uint32_t)r;
	if (!keep || !rows || center_setup(&c, p, rows, p->n_rows, zero))
		goto out;
	st = independent_rows(&c, zero, keep, &kept);
	if (st)
		goto out;
	st = PM_ERR_NOMEM;
	for (size_t r = 0; r < p->n_rows; r++)
		if (keep[r])
			rows[nr++] = (uint32_t)r;
	if (nr < p->n_rows) { /* the same without the dependent rows */
		center_free(&c);
		if (center_setup(&c, p, rows, nr, zero))
			goto out;
	}
	st = rounds(&c, zero, found, settled);
	if (!st && *settled && nr < p->n_rows)
		*settled = dropped_hold(&c, p, keep);
	for (size_t r = 0; !st && p->dependent && r < p->n_rows; r++)
		p->dependent[r] = !keep[r];
	if (!st)
		zero_side(&c, p->side);
out:
	free(keep);
	free(rows);
	center_free(&c);
	return st;
}

void zeros_ipm_bounded_finish(struct ipm_bounded *r)
{
	free(r->cell_off), free(r->sum_off), free(r->row_off), free(r->h), free(r->row_cell);
	free(r->sums), free(r->zero), free(r->side);
}

enum pm_status zeros_ipm_bounded(const struct relax_problem *p, struct ipm_bounded *r)
{
	size_t n = p->n, ng = p->n_groups, nr = p->n_rows, k = 0;

	memset(r, 0, sizeof *r);
	r->cell_off = malloc((ng + 1) * sizeof *r->cell_off);
	r->sum_off = malloc((ng + 1) * sizeof *r->sum_off);
	r->row_off = calloc(nr + 2, sizeof *r->row_off);
	r->h = malloc((ng + 1) * sizeof *r->h);
	r->row_cell = malloc((p->var_off[n] + 1) * sizeof *r->row_cell);
	r->sums = malloc((n + 2 * ng + 1) * sizeof *r->sums);
	r->zero = calloc(2 * n + 1, 1);
	r->side = calloc(2 * n + 1, 1);
	if (!r->cell_off || !r->sum_off || !r->row_off || !r->h || !r->row_cell || !r->sums ||
	    !r->zero || !r->side)
		return PM_ERR_NOMEM;
	r->cell_off[0] = r->sum_off[0] = 0;
	for (size_t j = 0; j < n; k++) { /* a group's variables are contiguous */
		size_t j0 = j, g = p->group[j];
		double all = 0;

		for (; j < n && p->group[j] == g; j++) {
			r->sums[r->sum_off[k] + j - j0] = p->u[j];
			all += p->u[j];
			r->zero[2 * j] = r->zero[2 * j + 1] = !(p->u[j] > 0);
		}
		r->h[k] = 2;
		r->sums[r->sum_off[k] + j - j0] = p->d[g];
		r->sums[r->sum_off[k] + j - j0 + 1] = fmax(all - p->d[g], 0);
		r->cell_off[k + 1] = 2 * j;
		r->sum_off[k + 1] = r->sum_off[k] + j - j0 + 2;
	}
	for (size_t e = 0; e < p->var_off[n]; e++)
		r->row_off[p->var_row[e] + 2]++;
	for (size_t x = 0; x < nr; x++)
		r->row_off[x + 2] += r->row_off[x + 1];
	for (size_t j = 0; j < n; j++)
		for (size_t e = p->var_off[j]; e < p->var_off[j + 1]; e++)
			r->row_cell[r->row_off[p->var_row[e] + 1]++] = (uint32_t)(2 * j);
	r->p = (struct ipm_problem){.n_blocks = k,
				    .n_rows = nr,
				    .cell_off = r->cell_off,
				    .sum_off = r->sum_off,
				    .row_off = r->row_off,
				    .h = r->h,
				    .row_cell = r->row_cell,
				    .sums = r->sums,
				    .rhs = p->c,
				    .cancel = p->cancel,
				    .threads = 1,
				    .claims_only = 1,
				    .side = r->side};
	return 0;
}
