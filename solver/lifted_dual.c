/*
 * The two-level dual of the pseudonym model (struct lifted, SPEC 3.1):
 * one multiplier per open row (rules, named people, statements), every
 * bucket they touch scaled exactly for the current multipliers.
 *
 * A bucket's unnamed and named people of one tuple share its QI row, so
 * its scaling factors are shared too: with cell kernels K_v = exp(a_v.μ)
 * (a_v the open rows' coefficients on cell v) the cells are
 * y_v = K_v exp(α_q + β_s), and the bucket is the g x h scaling problem
 * of the aggregated kernel K_qs = Σ_{v of (q, s)} K_v (struct
 * scaling_block). The outer function G(μ) = Σ_b G_b(μ) - mid.μ
 * + Σ half_k |μ_k| (an interval's midpoint and half width, Kazama &
 * Tsujii 2003) has the gradient A y - mid and the Hessian
 * A (Y - Y E M^+ E^T Y) A^T, M the bucket's scaling Hessian at the
 * aggregated cells (schur.c), E the cells' QI and SA rows: newton.c
 * minimizes it, orthant-wise where there are intervals.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lifted_internal.h"
#include "newton.h"
#include "scaling.h"
#include "schur.h"

/* Open rows on more multipliers than this are left to products (CG with
 * Jacobi): H whole is n^2 doubles. */
#define LIFTED_DENSE 4096
/* Records by which a bucket's scaling may miss its counts at a point the
 * line search may take: far beyond the inner target, so that only a
 * bucket that cannot be scaled at all counts. */
#define LIFTED_INNER_BAD 1e-3

/* Per local cell v of bucket k: its aggregated cell (i h + j). */
static size_t agg_of(const struct lsys *s, size_t v)
{
	return s->lagg[v];
}

/* G_b(μ) - G_b(μ0) for bucket k, its cells y at μ; *viol gets its inner
 * violation. */
static double bucket_eval(struct lsys *s, size_t k, const double *mu, double *viol)
{
	const struct lbucket *B = &s->bk[k];
	double *e = s->e + B->loff, *kp = s->kp + B->loff, *y = s->y + B->loff;
	double *kagg = s->kagg + B->aoff, *a = s->alpha + B->qoff, *b = s->beta + B->soff;
	const double *a0 = s->alpha0 + B->qoff, *b0 = s->beta0 + B->soff;
	const uint32_t *nq = s->ds->bq_count + s->ds->bq_off[B->b];
	const uint32_t *ns = s->ds->bs_count + s->ds->bs_off[B->b];
	uint8_t *az = s->azero + B->aoff;
	double m = -INFINITY, df = 0;

	for (size_t v = 0; v < B->n; v++) {
		double x = -INFINITY;

		if (!s->lzero[B->loff + v]) {
			x = 0;
			for (size_t c = s->cr_off[B->loff + v]; c < s->cr_off[B->loff + v + 1]; c++)
				x += s->cr_coef[c] * mu[s->cr_row[c]];
		}
		e[v] = x;
		m = fmax(m, x);
	}
	memset(kagg, 0, B->g * B->h * sizeof *kagg);
	for (size_t v = 0; v < B->n; v++) {
		kp[v] = exp(e[v] - m);
		kagg[agg_of(s, B->loff + v)] += kp[v];
	}
	for (size_t c = 0; c < B->g * B->h; c++)
		az[c] = !(kagg[c] > 0);
	for (size_t i = 0; i < B->g; i++)
		a[i] = a0[i] + (m - s->mx0[k]);
	memcpy(b, b0, B->h * sizeof *b);
	{
		struct scaling_block blk = {.g = B->g,
					    .h = B->h,
					    .y0 = kagg,
					    .zero = az,
					    .nq = nq,
					    .ns = ns,
					    .a = a,
					    .b = b,
					    .y = s->yagg + B->aoff};

		*viol = scaling_solve(&blk, &s->w, s->inner_target);
	}
	s->sy[k] = 0;
	for (size_t v = 0; v < B->n; v++) {
		size_t c = agg_of(s, B->loff + v);

		y[v] = kp[v] > 0 ? kp[v] * exp(a[c / B->h] + b[c % B->h]) : 0;
		s->sy[k] += y[v];
	}
	/* G_b = Σ y - n_q.α - n_s.β with α = a - m: Σ y, not n(b), so that
	 * an inner solve to its target leaves an error of its square */
	for (size_t i = 0; i < B->g; i++)
		df -= nq[i] * (a[i] - a0[i]);
	for (size_t j = 0; j < B->h; j++)
		df -= ns[j] * (b[j] - b0[j]);
	s->mx[k] = m;
	return df + (s->sy[k] - s->sy0[k]) + (m - s->mx0[k]) * s->inv->bucket_n[B->b];
}

static double nt_eval(void *ctx, const double *mu, double *g, double *violation)
{
	struct lsys *s = ctx;
	double f = 0, worst = 0, v;

	for (size_t k = 0; k < s->nb; k++) {
		f += bucket_eval(s, k, mu, &v);
		worst = fmax(worst, v);
	}
	/* a point whose buckets cannot be scaled (kernels that underflow
	 * where the counts need them) has no valid G: a trial step too far */
	if (!(worst <= LIFTED_INNER_BAD))
		f = INFINITY;
	for (size_t k = 0; k < s->r; k++) {
		double sum = 0;

		for (size_t e = s->rc_off[k]; e < s->rc_off[k + 1]; e++)
			sum += s->rc_coef[e] * s->y[s->rc_cell[e]];
		sum -= s->mid[k];
		if (g)
			g[k] = sum;
		f -= s->mid[k] * (mu[k] - s->mu0[k]);
		/* newton.c judges the interval rows by their pseudo-gradient */
		if (!(s->half[k] > 0))
			worst = fmax(worst, fabs(sum));
	}
	*violation = isfinite(f) ? worst : INFINITY;
	return f;
}

static void nt_prepare(void *ctx, const double *mu)
{
	struct lsys *s = ctx;

	memcpy(s->mu0, mu, s->r * sizeof *mu);
	memcpy(s->alpha0, s->alpha, s->nq * sizeof *s->alpha);
	memcpy(s->beta0, s->beta, s->ns * sizeof *s->beta);
	memcpy(s->mx0, s->mx, s->nb * sizeof *s->mx);
	memcpy(s->sy0, s->sy, s->nb * sizeof *s->sy);
	memcpy(s->yp, s->y, s->nl * sizeof *s->y);
	memcpy(s->yaggp, s->yagg, s->na * sizeof *s->yagg);
	for (size_t k = 0; k < s->nb; k++) {
		const struct lbucket *B = &s->bk[k];

		schur_factor(s->yaggp + B->aoff, B->g, B->h, s->fac + B->foff);
	}
}

/*
 * One bucket's part of H t: w_v = y_v (t_v - α_q - β_s) into s->wv,
 * (α, β) solving M (α, β) = E^T Y t; (H t)_k = Σ_v a_kv w_v.
 */
static void bucket_product(struct lsys *s, size_t k, const double *t)
{
	const struct lbucket *B = &s->bk[k];
	double *p = s->pq, *q = s->pq + B->g, *ah = s->ab, *bh = s->ab + B->g;
	const double *y = s->yp + B->loff;

	memset(p, 0, (B->g + B->h) * sizeof *p);
	for (size_t v = 0; v < B->n; v++) {
		size_t c = agg_of(s, B->loff + v);
		double u = y[v] * t[v];

		p[c / B->h] += u;
		q[c % B->h] += u;
	}
	schur_solve(s->fac + B->foff, s->yaggp + B->aoff, B->g, B->h, p, q, ah, bh);
	for (size_t v = 0; v < B->n; v++) {
		size_t c = agg_of(s, B->loff + v);

		s->wv[v] = y[v] * (t[v] - ah[c / B->h] - bh[c % B->h]);
	}
}

static void nt_hv(void *ctx, const double *vin, double *out)
{
	struct lsys *s = ctx;

	memset(out, 0, s->r * sizeof *out);
	for (size_t k = 0; k < s->nb; k++) {
		const struct lbucket *B = &s->bk[k];

		for (size_t v = 0; v < B->n; v++) {
			size_t lv = B->loff + v;
			double x = 0;

			for (size_t e = s->cr_off[lv]; e < s->cr_off[lv + 1]; e++)
				x += s->cr_coef[e] * vin[s->cr_row[e]];
			s->t[v] = x;
		}
		bucket_product(s, k, s->t);
		for (size_t v = 0; v < B->n; v++)
			for (size_t e = s->cr_off[B->loff + v]; e < s->cr_off[B->loff + v + 1]; e++)
				out[s->cr_row[e]] += s->cr_coef[e] * s->wv[v];
	}
}

/* t = row l's coefficients on bucket k's cells. */
static void row_in_bucket(struct lsys *s, size_t k, size_t l)
{
	const struct lbucket *B = &s->bk[k];

	for (size_t v = 0; v < B->n; v++) {
		size_t lv = B->loff + v;

		s->t[v] = 0;
		for (size_t e = s->cr_off[lv]; e < s->cr_off[lv + 1]; e++)
			if (s->cr_row[e] == l)
				s->t[v] = s->cr_coef[e];
	}
}

static void nt_diag(void *ctx, double *out)
{
	struct lsys *s = ctx;

	memset(out, 0, s->r * sizeof *out);
	for (size_t k = 0; k < s->nb; k++)
		for (size_t e = s->lr_off[k]; e < s->lr_off[k + 1]; e++) {
			size_t l = s->lr_row[e];

			row_in_bucket(s, k, l);
			bucket_product(s, k, s->t);
			for (size_t v = 0; v < s->bk[k].n; v++)
				out[l] += s->t[v] * s->wv[v];
		}
}

/*
 * Rows in the span of the bucket rows (a named person who fills their
 * tuple's records in their bucket repeats its QI row) have H's diagonal
 * at rounding level, where newton.c's relative test of a pivot against
 * its diagonal sees noise over noise: such a row (diagonal at most
 * SCHUR_DEPENDENT of Σ a^2 y, what it would be without the buckets) is
 * emptied, a null pivot, which newton.c then leaves out for good.
 */
static void null_rows(const struct lsys *s, double *h)
{
	for (size_t k = 0; k < s->r; k++) {
		double raw = 0;

		for (size_t e = s->rc_off[k]; e < s->rc_off[k + 1]; e++)
			raw += s->rc_coef[e] * s->rc_coef[e] * s->yp[s->rc_cell[e]];
		if (h[k * s->r + k] > SCHUR_DEPENDENT * raw)
			continue;
		for (size_t j = 0; j < s->r; j++)
			h[(j > k ? j : k) * s->r + (j > k ? k : j)] = 0;
	}
}

/*
 * An interval's multiplier at its kink (0) that depends on other rows
 * (a box on P(S in T | if) next to a rule on the complement of T: their
 * rows sum to the buckets' counts) has a pivot that vanishes; newton.c's
 * small Levenberg-Marquardt shift keeps it, and the step runs off along
 * the dependence, the other rows' multipliers with it, until the orthant
 * clips the interval's alone. Doubling such a diagonal entry (a proximal
 * term on the kink's multipliers only) keeps the step the size of its
 * neighbours'; it changes the direction, never the function, and a
 * multiplier off its kink gets the exact Newton step.
 */
static void kink_shift(const struct lsys *s, double *h)
{
	for (size_t k = 0; k < s->r; k++)
		if (s->half[k] > 0 && s->mu0[k] == 0)
			h[k * s->r + k] *= 2;
}

/* H whole, lower triangle (r x r, row major): each bucket's column l,
 * its rows from l on. */
static void nt_hessian(void *ctx, int blocks, double *out)
{
	struct lsys *s = ctx;

	(void)blocks;
	memset(out, 0, s->r * s->r * sizeof *out);
	for (size_t k = 0; k < s->nb; k++) {
		const struct lbucket *B = &s->bk[k];

		for (size_t e = s->lr_off[k]; e < s->lr_off[k + 1]; e++) {
			size_t l = s->lr_row[e];

			row_in_bucket(s, k, l);
			bucket_product(s, k, s->t);
			for (size_t v = 0; v < B->n; v++)
				for (size_t c = s->cr_off[B->loff + v];
				     c < s->cr_off[B->loff + v + 1]; c++)
					if (s->cr_row[c] >= l)
						out[s->cr_row[c] * s->r + l] +=
						    s->cr_coef[c] * s->wv[v];
		}
	}
	null_rows(s, out);
	kink_shift(s, out);
}

void lifted_dual_problem(struct lsys *s, struct newton_problem *np)
{
	double records = 0;
	int formed = s->r <= LIFTED_DENSE;

	for (size_t k = 0; k < s->nb; k++)
		records += s->inv->bucket_n[s->bk[k].b];
	*np = (struct newton_problem){.ctx = s,
				      .n = s->r,
				      .eval = nt_eval,
				      .prepare = nt_prepare,
				      .diag = nt_diag,
				      .hv = nt_hv,
				      .hessian = formed ? nt_hessian : NULL,
				      .whole = 1,
				      .formed = formed,
				      .f_noise = 64 * DBL_EPSILON * records,
				      .l1 = s->any_interval ? s->half : NULL};
}

/* Evaluates G at mu (the start) and makes it the prepared point. */
void lifted_dual_start(struct lsys *s, const double *mu)
{
	double v;

	for (size_t k = 0; k < s->nb; k++)
		s->mx0[k] = 0;
	nt_eval(s, mu, NULL, &v);
	nt_prepare(s, mu);
}
