/*
 * A bucket that no open knowledge row couples to others has, as its
 * maximum-entropy estimate, the matrix scaling y[q,s] = a_q c_s over its
 * free cells with row sums n(q,b) and column sums n(s,b): the I-projection
 * of the uniform vector onto the bucket's invariants with its forced zeros
 * (Theorem 5 is the case without zeros, a_q c_s = n(q,b) n(s,b) / n(b)).
 * Every free cell is positive in some solution (zeros.c removed all
 * others), so the pattern has total support and the scaling exists.
 *
 * scaling_solve does Newton steps on the log-scalings (a, b) with the
 * bucket's Schur complement (schur.c), halving a step until it reduces
 * the residual: quadratic convergence where alternating row and column
 * scaling (Sinkhorn) is linear, and slow on nearly decomposable zero
 * patterns. Sinkhorn remains as the fallback should Newton stall. The
 * two-level dual calls it with a kernel exp(dm) from the knowledge
 * multipliers, warm-started from the previous scalings.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "loops.h"
#include "metrics.h"
#include "scaling.h"
#include "schur.h"

/* Inner Newton steps per solve before Sinkhorn takes over, and the
 * halvings of a step that does not reduce the residual. */
#define NEWTON_STEPS	60
#define NEWTON_HALVINGS 30
/* Sinkhorn sweeps after Newton stalls (total support: linear rate), and
 * its stall: the violation not halved over SINKHORN_WINDOW sweeps. Newton
 * stalls mostly at the rounding floor, where Sinkhorn cannot go lower
 * either (with exponents near SCALING_CAP the floor can lie above a tight
 * target): sweeps that no longer halve the violation are stopped, not run
 * to SCALING_SWEEPS on every bucket at every trial point. */
#define SCALING_SWEEPS	10000
#define SINKHORN_WINDOW 64
/* Newton stalled this far (records) from the target of a trial point:
 * the point is wild (huge multipliers), not a rounding stall near the
 * optimum; a few sweeps tell. */
#define SCALING_FAR	   1e-6
#define SCALING_FAR_SWEEPS 20

enum pm_status scaling_work_init(struct scaling_work *w, size_t g, size_t h)
{
	size_t n = g * h + 1, m = (g > h ? g : h) + 1;

	w->yt = malloc(4 * n * sizeof *w->yt);
	w->f = malloc((schur_size(g, h) + 1) * sizeof *w->f);
	w->rs = malloc(4 * m * sizeof *w->rs);
	w->da = malloc(8 * m * sizeof *w->da);
	if (!w->yt || !w->f || !w->rs || !w->da) {
		scaling_work_finish(w);
		return PM_ERR_NOMEM;
	}
	w->cs = w->rs + m;
	w->p = w->rs + 2 * m;
	w->q = w->rs + 3 * m;
	w->db = w->da + m;
	w->ta = w->da + 2 * m;
	w->tb = w->da + 3 * m;
	w->ab = w->da + 4 * m;
	w->xa = w->da + 6 * m;
	w->xb = w->da + 7 * m;
	w->y0 = w->yt + n;
	w->kk = w->yt + 2 * n;
	w->em = w->yt + 3 * n;
	return PM_OK;
}

void scaling_work_finish(struct scaling_work *w)
{
	free(w->yt);
	free(w->f);
	free(w->rs);
	free(w->da);
	memset(w, 0, sizeof *w);
}

/*
 * The kernel of the solve, kk = y0 exp(dm) per free cell (0 on zeros), so
 * that a fill needs g + h exponentials, y = kk exp(a_i) exp(b_j), instead
 * of one per cell. When every |dm| is at most SCALING_SMALL, em =
 * expm1(dm) too (and kk = y0 + y0 em, em >= -0.4: no cancellation), for
 * excess(). The caller's own kk and em are used when it has them. Sets
 * w->kp, w->ep (NULL: no em) and w->dm_max, the largest |dm|.
 */
static void kernel(const struct scaling_block *k, struct scaling_work *w)
{
	size_t n = k->g * k->h;
	double top = 0;

	for (size_t c = 0; k->dm && c < n; c++)
		top = k->zero[c] || fabs(k->dm[c]) <= top ? top : fabs(k->dm[c]);
	w->dm_max = top < SCALING_CAP ? top : SCALING_CAP;
	w->kp = k->kk && top <= SCALING_CAP ? k->kk : w->kk;
	w->ep = top > SCALING_SMALL ? NULL : k->kk && k->em ? k->em : w->em;
	if (w->kp == k->kk && (w->ep == k->em || !w->ep))
		return;
	for (size_t c = 0; c < n; c++) {
		double d = k->dm && !k->zero[c] ? k->dm[c] : 0;

		d = d < SCALING_CAP ? d > -SCALING_CAP ? d : -SCALING_CAP : SCALING_CAP;
		if (w->ep) {
			w->em[c] = d != 0 ? expm1(d) : 0;
			w->kk[c] = k->y0[c] + k->y0[c] * w->em[c];
		} else {
			w->kk[c] = d != 0 ? k->y0[c] * exp(d) : k->y0[c];
		}
		w->kk[c] = k->zero[c] ? 0 : w->kk[c];
	}
	w->kp = w->kk;
	w->ep = w->ep ? w->em : NULL;
}

/*
 * exp, expm1 and log near their expansion points, where the scalings of
 * the late evaluations sit (α, β are changes since the base point, tiny
 * once Newton converges): a few terms of the series, about 12
 * instructions, in place of a libm call of 45 to 50 (callgrind). Below
 * SERIES_MAX the first term left out is under 2^-54 of the result
 * (expm1's x^6/720 against x, log's u^7/7 against u), so the result is
 * within about an ulp of libm's.
 */
#define SERIES_MAX 0x1p-9

static inline double expm1_near0(double x)
{
	if (!(fabs(x) < SERIES_MAX))
		return expm1(x);
	return x * (1 + x * (1.0 / 2 + x * (1.0 / 6 + x * (1.0 / 24 + x * (1.0 / 120)))));
}

static inline double exp_near0(double x)
{
	if (!(fabs(x) < SERIES_MAX))
		return exp(x);
	return 1 + x * (1 + x * (1.0 / 2 + x * (1.0 / 6 + x * (1.0 / 24 + x * (1.0 / 120)))));
}

/* log(f) for f near 1: u = f - 1 is exact there (Sterbenz) */
static inline double log_near1(double f)
{
	double u = f - 1;

	if (!(fabs(u) < SERIES_MAX))
		return log(f);
	return u * (1 + u * (-1.0 / 2 + u * (1.0 / 3 + u * (-1.0 / 4 + u * (1.0 / 5 - u / 6)))));
}

/* The largest |v_i|; NaN if any is NaN. */
static double max_abs(const double *v, size_t n)
{
	double m = 0;

	for (size_t i = 0; i < n; i++)
		m = !(fabs(v[i]) <= m) ? fabs(v[i]) : m;
	return m;
}

/*
 * y = y0 exp(dm + a + b) on the free cells, as kk exp(a_i) exp(b_j) while
 * every exponent stays within SCALING_CAP (no overflow, nothing to cap),
 * cell by cell (capped) otherwise; row sums into rs.
 */
INLINE void fill_cells(const struct scaling_block *k, struct scaling_work *w, const double *a,
		       const double *b, double *y, double *rs, size_t h)
{
	size_t g = k->g;

	if (w->dm_max + max_abs(a, g) + max_abs(b, h) <= SCALING_CAP) {
		UNROLL
		for (size_t j = 0; j < h; j++)
			w->xb[j] = exp_near0(b[j]);
		for (size_t i = 0; i < g; i++) {
			double ea = exp_near0(a[i]), sum = 0;

			UNROLL
			for (size_t j = 0; j < h; j++) {
				double v = w->kp[i * h + j] * ea * w->xb[j];

				y[i * h + j] = v;
				sum += v;
			}
			rs[i] = sum;
		}
		return;
	}
	for (size_t i = 0; i < g; i++) {
		double sum = 0;

		for (size_t j = 0; j < h; j++) {
			size_t c = i * h + j;
			double e = a[i] + b[j] + (k->dm ? k->dm[c] : 0);

			y[c] = k->zero[c] ? 0 : k->y0[c] * exp(e < SCALING_CAP ? e : SCALING_CAP);
			sum += y[c];
		}
		rs[i] = sum;
	}
}

/* With rs the row sums of y: row and column residuals into rs, cs;
 * returns the largest violation, *ss the sum of squares. */
INLINE double residuals(const struct scaling_block *k, const double *y, double *rs, double *cs,
			double *ss, size_t h)
{
	size_t g = k->g;
	double worst = 0, sq = 0;

	UNROLL
	for (size_t j = 0; j < h; j++) {
		double sum = 0;

		for (size_t i = 0; i < g; i++)
			sum += y[i * h + j];
		cs[j] = sum - k->ns[j];
		sq += cs[j] * cs[j];
		worst = fabs(cs[j]) > worst ? fabs(cs[j]) : worst;
	}
	for (size_t i = 0; i < g; i++) {
		rs[i] -= k->nq[i];
		sq += rs[i] * rs[i];
		worst = fabs(rs[i]) > worst ? fabs(rs[i]) : worst;
	}
	*ss = sq;
	return isfinite(sq) ? worst : INFINITY;
}

/* y = y0 exp(dm + a + b) on the free cells, and residuals() */
INLINE double fill(const struct scaling_block *k, struct scaling_work *w, const double *a,
		   const double *b, double *y, double *rs, double *cs, double *ss, size_t h)
{
	fill_cells(k, w, a, b, y, rs, h);
	return residuals(k, y, rs, cs, ss, h);
}

/*
 * The start: y for the caller's (a, b), then Sinkhorn's row step (every
 * row sum made exact through a), and residuals(). From the caller's
 * first-order prediction, Newton then needs fewer steps: it starts with
 * the rows already at their counts, only the columns' residuals left.
 */
INLINE double fill_start(const struct scaling_block *k, struct scaling_work *w, double *ss,
			 size_t h)
{
	fill_cells(k, w, k->a, k->b, k->y, w->rs, h);
	for (size_t i = 0; i < k->g; i++) {
		double f = k->nq[i] / w->rs[i], sum = 0;

		if (!(w->rs[i] > 0 && f < INFINITY))
			continue; /* an empty row, or underflow: as it is */
		k->a[i] += log_near1(f);
		UNROLL
		for (size_t j = 0; j < h; j++) {
			k->y[i * h + j] *= f;
			sum += k->y[i * h + j];
		}
		w->rs[i] = sum;
	}
	return residuals(k, k->y, w->rs, w->cs, ss, h);
}

/* One damped Newton step on (a, b); 0 if no step reduced the residual. */
INLINE int newton_step(struct scaling_block *k, struct scaling_work *w, double *worst, double *ss,
		       size_t h)
{
	size_t g = k->g;

	schur_factor(k->y, g, h, w->f);
	for (size_t i = 0; i < g; i++)
		w->p[i] = -w->rs[i];
	UNROLL
	for (size_t j = 0; j < h; j++)
		w->q[j] = -w->cs[j];
	schur_solve(w->f, k->y, g, h, w->p, w->q, w->da, w->db);
	for (double t = 1; t > 0x1p-30; t *= 0.5) {
		double ss1, worst1;

		for (size_t i = 0; i < g; i++)
			w->ta[i] = k->a[i] + t * w->da[i];
		UNROLL
		for (size_t j = 0; j < h; j++)
			w->tb[j] = k->b[j] + t * w->db[j];
		worst1 = fill(k, w, w->ta, w->tb, w->yt, w->rs, w->cs, &ss1, h);
		if (ss1 < *ss) {
			memcpy(k->a, w->ta, g * sizeof *k->a);
			memcpy(k->b, w->tb, h * sizeof *k->b);
			memcpy(k->y, w->yt, g * h * sizeof *k->y);
			*worst = worst1;
			*ss = ss1;
			return 1;
		}
	}
	return 0;
}

/* Sinkhorn in log form: rows, then columns; the last call's fill leaves
 * rs/cs consistent with y. */
static double sinkhorn(struct scaling_block *k, struct scaling_work *w, double target,
		       int max_sweeps)
{
	double ss, worst = fill(k, w, k->a, k->b, k->y, w->rs, w->cs, &ss, k->h), mark = worst;

	for (int sweep = 0; sweep < max_sweeps && worst > target; sweep++) {
		w->sweeps++;
		if (sweep % SINKHORN_WINDOW == 0 && sweep > 0) {
			if (!(worst <= 0.5 * mark))
				break; /* at the rounding floor */
			mark = worst;
		}
		for (size_t i = 0; i < k->g; i++)
			if (w->rs[i] + k->nq[i] > 0)
				k->a[i] += log(k->nq[i] / (w->rs[i] + k->nq[i]));
		fill(k, w, k->a, k->b, k->y, w->rs, w->cs, &ss, k->h);
		for (size_t j = 0; j < k->h; j++)
			if (w->cs[j] + k->ns[j] > 0)
				k->b[j] += log(k->ns[j] / (w->cs[j] + k->ns[j]));
		worst = fill(k, w, k->a, k->b, k->y, w->rs, w->cs, &ss, k->h);
	}
	return worst;
}

/*
 * Σ y0 expm1(dm + a + b) over the free cells: Σ (y - y0) to full relative
 * precision when the changes are tiny. While |dm| + |a| + |b| stays
 * within SCALING_SMALL, from expm1(x + z) = X + Z + X Z (X = expm1(x),
 * Z = expm1(z)): em and g + h expm1 of the scalings, each term at most
 * e^SCALING_SMALL - 1, so the rounding stays at a few units of y0's last
 * place however the terms cancel. Larger exponents (far from the optimum,
 * where f is large) take Σ (y - y0) from the solve's y itself: each term
 * within a few units of the last place of y or y0, an error that f's
 * noise (f_noise, 64 ε per record) already allows for, and no expm1 per
 * cell (a large share of an evaluation's exponentials).
 */
INLINE double excess(const struct scaling_block *k, struct scaling_work *w, size_t h)
{
	size_t g = k->g;
	double s = 0;

	if (!w->ep || !(w->dm_max + max_abs(k->a, g) + max_abs(k->b, h) <= SCALING_SMALL)) {
		for (size_t c = 0; c < g * h; c++)
			s += k->zero[c] ? 0 : k->y[c] - k->y0[c];
		return s;
	}
	for (size_t i = 0; i < g; i++)
		w->xa[i] = expm1_near0(k->a[i]);
	UNROLL
	for (size_t j = 0; j < h; j++)
		w->xb[j] = expm1_near0(k->b[j]);
	for (size_t i = 0; i < g; i++) {
		UNROLL
		for (size_t j = 0; j < h; j++) {
			size_t c = i * h + j;
			double ab = w->xa[i] + w->xb[j] + w->xa[i] * w->xb[j];

			if (!k->zero[c])
				s += k->y0[c] * (w->ep[c] + ab + w->ep[c] * ab);
		}
	}
	return s;
}

INLINE void solve_width(struct scaling_block *k, struct scaling_work *w, double target, double *out,
			size_t h)
{
	double ss, worst;

	for (size_t i = 0; i < k->g; i++)
		if (!isfinite(k->a[i]))
			memset(k->a, 0, k->g * sizeof *k->a); /* wild trial point: restart */
	for (size_t j = 0; j < k->h; j++)
		if (!isfinite(k->b[j]))
			memset(k->b, 0, k->h * sizeof *k->b);
	kernel(k, w);
	w->sweeps = 0;
	worst = fill_start(k, w, &ss, h);
	for (int it = 0; it < NEWTON_STEPS && worst > target; it++)
		if (!newton_step(k, w, &worst, &ss, h))
			break;
	if (worst > target) /* Newton stalled (rounding, or a bad start) */
		worst =
		    sinkhorn(k, w, target,
			     k->trial && worst > SCALING_FAR ? SCALING_FAR_SWEEPS : SCALING_SWEEPS);
	k->excess = k->dm ? excess(k, w, h) : 0;
	*out = worst;
}

double scaling_solve(struct scaling_block *k, struct scaling_work *w, double target)
{
	double worst;

	BY_WIDTH(solve_width, k->h, k, w, target, &worst);
	return worst;
}

enum pm_status scaling_bucket(const struct dataset *ds, const struct invariants *inv, size_t b,
			      const uint8_t *zero, double *y, double target, struct scaling_work *w)
{
	size_t off = inv->cell_off[b];
	size_t g = ds->bq_off[b + 1] - ds->bq_off[b], h = ds->bs_off[b + 1] - ds->bs_off[b];
	double *y0 = w->y0, *ab = w->ab;
	struct scaling_block k = {.g = g,
				  .h = h,
				  .y0 = y0,
				  .zero = zero + off,
				  .nq = ds->bq_count + ds->bq_off[b],
				  .ns = ds->bs_count + ds->bs_off[b],
				  .a = ab,
				  .b = ab + g,
				  .y = y + off};

	/* start from the closed form of Theorem 5 on the free cells */
	metrics_closed_form(ds, inv, b, y);
	memcpy(y0, y + off, g * h * sizeof *y0);
	memset(ab, 0, (g + h) * sizeof *ab);
	return scaling_solve(&k, w, target) <= target ? PM_OK : PM_ERR_INTERNAL;
}
