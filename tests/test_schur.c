/*
 * schur.c and the Newton scaling of scaling.c on random blocks: M x = v
 * solved exactly for right-hand sides in M's range (also when zeros split
 * a block), scaling_solve against plain Sinkhorn, and the two-level
 * Hessian formula H v = A (Y w - Y E M^+ E^T Y w), w = A^T v, against
 * central differences of the inner-solved gradient A y(μ).
 */
#include "check.h"
#include "solver_internal.h"

#define MAXG 8
#define MAXH 8
#define MAXR 4

struct block {
	size_t g, h;
	uint8_t zero[MAXG * MAXH];
	uint32_t nq[MAXG], ns[MAXH];
	double y0[MAXG * MAXH];
	uint8_t in_row[MAXR][MAXG * MAXH]; /* knowledge rows through cells */
	size_t r;
};

static unsigned long long rng_state = 88172645463325252ull;

static double rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (double)(rng_state >> 11) / 9007199254740992.0;
}

static size_t rnd_int(size_t n)
{
	return (size_t)(rnd() * (double)n) % n;
}

/* Margins from an integer matrix on the pattern, so every free cell is
 * positive in some solution. split: zeros make two disconnected blocks. */
static void block_random(struct block *k, int split)
{
	k->g = 1 + rnd_int(MAXG);
	k->h = 1 + rnd_int(MAXH);
	if (split && (k->g < 2 || k->h < 2))
		k->g = k->h = 3;
	memset(k->nq, 0, sizeof k->nq);
	memset(k->ns, 0, sizeof k->ns);
	for (size_t i = 0; i < k->g; i++) {
		for (size_t j = 0; j < k->h; j++) {
			size_t c = i * k->h + j;
			int off_block = split && ((i < k->g / 2) != (j < k->h / 2));

			k->zero[c] = off_block || (j != i % k->h && rnd() < 0.3);
			if (!k->zero[c]) {
				uint32_t v = 1 + (uint32_t)rnd_int(5);

				k->nq[i] += v;
				k->ns[j] += v;
			}
			k->y0[c] = k->zero[c] ? 0 : 0.2 + rnd();
		}
	}
	for (size_t j = 0; j < k->h; j++) /* an empty column: give it a cell */
		if (!k->ns[j]) {
			k->zero[j] = 0;
			k->y0[j] = 0.5;
			k->nq[0]++;
			k->ns[j]++;
		}
	k->r = 1 + rnd_int(MAXR);
	for (size_t x = 0; x < k->r; x++)
		for (size_t c = 0; c < k->g * k->h; c++)
			k->in_row[x][c] = rnd() < 0.35;
}

/* M (a, b): row sums of Y applied, column sums of Y applied. */
static void m_apply(const double *y, size_t g, size_t h, const double *a, const double *b,
		    double *p, double *q)
{
	memset(p, 0, g * sizeof *p);
	memset(q, 0, h * sizeof *q);
	for (size_t i = 0; i < g; i++)
		for (size_t j = 0; j < h; j++) {
			p[i] += y[i * h + j] * (a[i] + b[j]);
			q[j] += y[i * h + j] * (a[i] + b[j]);
		}
}

static double test_solve(const struct block *k)
{
	double y[MAXG * MAXH], f[MAXG + MAXH * MAXH], w[MAXG * MAXH];
	double p[MAXG], q[MAXH], a[MAXG], b[MAXH], p2[MAXG], q2[MAXH], worst = 0, scale = 1;

	for (size_t c = 0; c < k->g * k->h; c++) {
		y[c] = k->zero[c] ? 0 : 0.1 + 3 * rnd();
		w[c] = 2 * rnd() - 1;
	}
	/* v = E^T Y w lies in M's range */
	memset(p, 0, sizeof p);
	memset(q, 0, sizeof q);
	for (size_t i = 0; i < k->g; i++)
		for (size_t j = 0; j < k->h; j++) {
			p[i] += y[i * k->h + j] * w[i * k->h + j];
			q[j] += y[i * k->h + j] * w[i * k->h + j];
			scale = fmax(scale, y[i * k->h + j]);
		}
	schur_factor(y, k->g, k->h, f);
	schur_solve(f, y, k->g, k->h, p, q, a, b);
	m_apply(y, k->g, k->h, a, b, p2, q2);
	for (size_t i = 0; i < k->g; i++)
		worst = fmax(worst, fabs(p2[i] - p[i]));
	for (size_t j = 0; j < k->h; j++)
		worst = fmax(worst, fabs(q2[j] - q[j]));
	return worst / scale;
}

/* Inner solve of block k for multipliers mu; y, a, b out. */
static double inner(const struct block *k, const double *mu, double *y, double *a, double *b,
		    struct scaling_work *w)
{
	double dm[MAXG * MAXH];
	struct scaling_block blk = {.g = k->g,
				    .h = k->h,
				    .y0 = k->y0,
				    .dm = dm,
				    .zero = k->zero,
				    .nq = k->nq,
				    .ns = k->ns,
				    .a = a,
				    .b = b,
				    .y = y};

	for (size_t c = 0; c < k->g * k->h; c++) {
		dm[c] = 0;
		for (size_t x = 0; x < k->r; x++)
			dm[c] += k->in_row[x][c] * mu[x];
	}
	memset(a, 0, k->g * sizeof *a);
	memset(b, 0, k->h * sizeof *b);
	return scaling_solve(&blk, w, 1e-13);
}

/* Plain Sinkhorn from the same kernel, many sweeps. */
static void sinkhorn_ref(const struct block *k, const double *mu, double *y)
{
	for (size_t c = 0; c < k->g * k->h; c++) {
		double e = 0;

		for (size_t x = 0; x < k->r; x++)
			e += k->in_row[x][c] * mu[x];
		y[c] = k->zero[c] ? 0 : k->y0[c] * exp(e);
	}
	for (int sweep = 0; sweep < 20000; sweep++) {
		for (size_t i = 0; i < k->g; i++) {
			double s = 0;

			for (size_t j = 0; j < k->h; j++)
				s += y[i * k->h + j];
			for (size_t j = 0; j < k->h; j++)
				y[i * k->h + j] *= k->nq[i] / s;
		}
		for (size_t j = 0; j < k->h; j++) {
			double s = 0;

			for (size_t i = 0; i < k->g; i++)
				s += y[i * k->h + j];
			for (size_t i = 0; i < k->g; i++)
				y[i * k->h + j] *= k->ns[j] / s;
		}
	}
}

static void grad(const struct block *k, const double *y, double *gr)
{
	for (size_t x = 0; x < k->r; x++) {
		gr[x] = 0;
		for (size_t c = 0; c < k->g * k->h; c++)
			gr[x] += k->in_row[x][c] * y[c];
	}
}

/* |H v - finite difference| relative to |H v| + 1. */
static double test_hessian(const struct block *k, struct scaling_work *w)
{
	double mu[MAXR], v[MAXR], m1[MAXR], y[MAXG * MAXH], a[MAXG], b[MAXH];
	double f[MAXG + MAXH * MAXH], u[MAXG * MAXH], p[MAXG], q[MAXH], xa[MAXG], xb[MAXH];
	double hv[MAXR], gp[MAXR], gm[MAXR], eps = 1e-5, worst = 0, norm = 1;

	for (size_t x = 0; x < k->r; x++) {
		mu[x] = 2 * rnd() - 1;
		v[x] = 2 * rnd() - 1;
	}
	inner(k, mu, y, a, b, w);
	schur_factor(y, k->g, k->h, f);
	memset(p, 0, sizeof p);
	memset(q, 0, sizeof q);
	for (size_t i = 0; i < k->g; i++)
		for (size_t j = 0; j < k->h; j++) {
			size_t c = i * k->h + j;

			u[c] = 0;
			for (size_t x = 0; x < k->r; x++)
				u[c] += k->in_row[x][c] * v[x];
			u[c] *= y[c];
			p[i] += u[c];
			q[j] += u[c];
		}
	schur_solve(f, y, k->g, k->h, p, q, xa, xb);
	for (size_t i = 0; i < k->g; i++)
		for (size_t j = 0; j < k->h; j++)
			u[i * k->h + j] -= y[i * k->h + j] * (xa[i] + xb[j]);
	grad(k, u, hv);
	for (size_t x = 0; x < k->r; x++)
		m1[x] = mu[x] + eps * v[x];
	inner(k, m1, y, a, b, w);
	grad(k, y, gp);
	for (size_t x = 0; x < k->r; x++)
		m1[x] = mu[x] - eps * v[x];
	inner(k, m1, y, a, b, w);
	grad(k, y, gm);
	for (size_t x = 0; x < k->r; x++) {
		worst = fmax(worst, fabs(hv[x] - (gp[x] - gm[x]) / (2 * eps)));
		norm = fmax(norm, fabs(hv[x]));
	}
	return worst / norm;
}

int main(void)
{
	struct scaling_work w = {0};
	double worst_solve = 0, worst_scaling = 0, worst_ref = 0, worst_hess = 0;

	CHECK(scaling_work_init(&w, MAXG, MAXH) == PM_OK);
	for (int n = 0; n < 2000; n++) {
		struct block k;

		block_random(&k, n % 4 == 0);
		worst_solve = fmax(worst_solve, test_solve(&k));
	}
	for (int n = 0; n < 300; n++) {
		struct block k;
		double mu[MAXR], y[MAXG * MAXH], yr[MAXG * MAXH], a[MAXG], b[MAXH];

		block_random(&k, n % 4 == 0);
		for (size_t x = 0; x < k.r; x++)
			mu[x] = 6 * rnd() - 3;
		worst_scaling = fmax(worst_scaling, inner(&k, mu, y, a, b, &w));
		sinkhorn_ref(&k, mu, yr);
		for (size_t c = 0; c < k.g * k.h; c++)
			worst_ref = fmax(worst_ref, fabs(y[c] - yr[c]));
		worst_hess = fmax(worst_hess, test_hessian(&k, &w));
	}
	fprintf(stderr,
		"worst: M x - v %.3g; scaling residual %.3g; vs Sinkhorn %.3g; Hessian vs "
		"differences %.3g\n",
		worst_solve, worst_scaling, worst_ref, worst_hess);
	CHECK(worst_solve <= 1e-10);
	CHECK(worst_scaling <= 1e-13);
	CHECK(worst_ref <= 1e-9);
	CHECK(worst_hess <= 1e-6);
	scaling_work_finish(&w);
	scaling_work_finish(&w); /* finish twice is harmless */
	return check_done();
}
