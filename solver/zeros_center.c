/*
 * Forced zeros of a whole component by an interior point method, for what
 * propagation and the per-value relaxations leave open (zeros.c). The
 * component's system {y >= 0, A y = c} (its buckets' QI and SA rows, all
 * h of them, and its open knowledge rows) with a zero objective:
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
 * some s_j slightly negative; with u_j >= y_j (the smaller of its QI and
 * SA counts) the bound becomes y_j <= (-c^T w + Σ_{s_k < 0} -s_k u_k) / s_j,
 * and a cell is claimed only when that is below ZERO_RECORDS (a
 * solve without it then differs by no more than that). Both -c^T w and
 * each s_j are sums whose terms grow with w while the sums stay small:
 * they are summed with compensation and carry their rounding bounds
 * (struct csum), -c^T w taken at its largest, s_k at its smallest.
 * Without that, one iterate proved ten cells zero whose largest value is
 * 5e-6 records, and consistent knowledge was reported inconsistent.
 * Each iterate's w is a certificate of its own, once purified (purify:
 * projected so that s vanishes on the positive side, whose Σ s_k y_k of
 * about n mu would otherwise dominate -c^T w). When every cell on the
 * zero side (y < s) is proved and every other is clearly positive
 * (y >= CENTER_GAP s) at a feasible iterate, the zeros are complete
 * ("settled"); otherwise the caller's linear program decides.
 *
 * The normal equations A D A^T Δw = r (D = y / s) have the structure of
 * the two-level Hessian: each bucket's block E^T D_b E is the scaling
 * Hessian of schur.c; eliminating it leaves a dense Schur complement over
 * the open rows, formed bucket by bucket and factored by
 * schur_dense_factor.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

struct center {
	const struct center_problem *p;
	const struct invariants *inv;
	size_t nb, nr, n;
	size_t *loff, *qoff, *foff; /* per bucket: cells, rows + columns, factorization */
	size_t *ck_off;		    /* per local cell: its open rows ck[..] */
	uint32_t *ck;
	uint8_t *fixed; /* local cell known to be zero */
	/* per cell: iterate, D = y / s, scratch, dual residual, step,
	 * Mehrotra's second-order term, bound */
	double *y, *s, *d, *v, *rd, *dy, *ds, *corr, *u;
	double *w, *dw, *rp, *rhs; /* per bucket row or column */
	double *mu, *dmu, *rk, *rhsk;
	double *w0, *mu0; /* the iterate's dual while purify changes it */
	double *fac, *S, *scratch;
	double *tw;   /* 2 (g + h) of the widest bucket */
	size_t width; /* g + h of the widest bucket */
	struct parallel *pool;
	int parts;
	struct center_part *part;
};

/* Forming S on one part of the pool: its share of S (part 0: c->S), and
 * per bucket its distinct rows, their sums and solves. */
struct center_part {
	double *S;
	uint32_t *loc, *rows;
	uint64_t *stamp, tick;
	double *pq, *ab; /* per row of the bucket: P, and per pattern M^+ P */
	size_t cap;
	uint32_t *pat, *first; /* per row its pattern; per pattern its first row */
	double *key, *t;       /* per pattern Σ P; the patterns' P . M^+ P' */
	size_t tcap;
	int failed;
};

static size_t bucket_g(const struct center *c, size_t k)
{
	return (c->loff[k + 1] - c->loff[k]) / c->inv->bucket_h[c->p->buckets[k]];
}

static size_t bucket_h(const struct center *c, size_t k)
{
	return c->inv->bucket_h[c->p->buckets[k]];
}

static void center_free(struct center *c)
{
	void *all[] = {c->loff, c->qoff,    c->foff, c->ck_off, c->ck,	c->fixed, c->y,	   c->s,
		       c->d,	c->v,	    c->rd,   c->dy,	c->ds,	c->corr,  c->u,	   c->w,
		       c->dw,	c->rp,	    c->rhs,  c->mu,	c->dmu, c->rk,	  c->rhsk, c->fac,
		       c->S,	c->scratch, c->tw,   c->w0,	c->mu0};

	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		free(all[i]);
	for (int p = 0; c->part && p < c->parts; p++) {
		struct center_part *pt = &c->part[p];

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

/* Offsets of every bucket's cells, rows + columns and factorization. */
static int layout(struct center *c)
{
	const struct invariants *inv = c->inv;

	c->loff = malloc((c->nb + 1) * sizeof *c->loff);
	c->qoff = malloc((c->nb + 1) * sizeof *c->qoff);
	c->foff = malloc((c->nb + 1) * sizeof *c->foff);
	if (!c->loff || !c->qoff || !c->foff)
		return -1;
	c->loff[0] = c->qoff[0] = c->foff[0] = 0;
	for (size_t k = 0; k < c->nb; k++) {
		size_t b = c->p->buckets[k], h = inv->bucket_h[b];
		size_t g = (inv->cell_off[b + 1] - inv->cell_off[b]) / h;

		c->loff[k + 1] = c->loff[k] + g * h;
		c->qoff[k + 1] = c->qoff[k] + g + h;
		c->foff[k + 1] = c->foff[k] + schur_size(g, h);
		c->width = g + h > c->width ? g + h : c->width;
	}
	c->n = c->loff[c->nb];
	return 0;
}

/* Per local cell, the open rows through it (local numbers). */
static int row_index(struct center *c, int32_t *local)
{
	const struct invariants *inv = c->inv;
	c->ck_off = calloc(c->n + 2, sizeof *c->ck_off);
	if (!c->ck_off)
		return -1;
	for (size_t r = 0; r < c->nr; r++)
		for (size_t x = inv->row_off[c->p->rows[r]]; x < inv->row_off[c->p->rows[r] + 1];
		     x++)
			if (local[inv->row_cell[x]] >= 0)
				c->ck_off[local[inv->row_cell[x]] + 2]++;
	for (size_t j = 0; j < c->n; j++)
		c->ck_off[j + 2] += c->ck_off[j + 1];
	c->ck = malloc((c->ck_off[c->n + 1] + 1) * sizeof *c->ck);
	if (!c->ck)
		return -1;
	for (size_t r = 0; r < c->nr; r++)
		for (size_t x = inv->row_off[c->p->rows[r]]; x < inv->row_off[c->p->rows[r] + 1];
		     x++)
			if (local[inv->row_cell[x]] >= 0)
				c->ck[c->ck_off[local[inv->row_cell[x]] + 1]++] = (uint32_t)r;
	return 0;
}

static int center_alloc(struct center *c)
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
		return -1;
	c->parts = parallel_parts(c->pool);
	c->part = calloc((size_t)c->parts, sizeof *c->part);
	for (int p = 0; c->part && p < c->parts; p++) {
		struct center_part *pt = &c->part[p];

		pt->S = p ? malloc(r * r * sizeof *pt->S) : c->S;
		pt->loc = malloc(r * sizeof *pt->loc);
		pt->rows = malloc(r * sizeof *pt->rows);
		pt->stamp = calloc(r, sizeof *pt->stamp);
		pt->pat = malloc(r * sizeof *pt->pat);
		pt->first = malloc(r * sizeof *pt->first);
		pt->key = malloc(r * sizeof *pt->key);
		if (!pt->S || !pt->loc || !pt->rows || !pt->stamp || !pt->pat || !pt->first ||
		    !pt->key)
			return -1;
	}
	return c->part ? 0 : -1;
}

/* Starting point: the closed form of each bucket on its free cells, s = 1;
 * u_j the smaller of the cell's QI and SA counts. */
static void start(struct center *c)
{
	const struct invariants *inv = c->inv;

	for (size_t k = 0; k < c->nb; k++) {
		size_t b = c->p->buckets[k], g = bucket_g(c, k), h = bucket_h(c, k);

		for (size_t i = 0; i < g; i++)
			for (size_t j = 0; j < h; j++) {
				size_t l = c->loff[k] + i * h + j;
				double nq = invariants_qi_count(inv, b, i);
				double ns = invariants_sa_count(inv, b, j);

				c->fixed[l] = c->p->zero[inv->cell_off[b] + i * h + j];
				c->u[l] = fmin(nq, ns);
				c->y[l] = c->fixed[l] ? 0 : nq * ns / inv->bucket_n[b];
				c->s[l] = c->fixed[l] ? 0 : 1;
			}
	}
}

/* A^T w at local cell l of bucket k (row i, column j), w = (bw, mw). */
static double at_w(const struct center *c, size_t k, size_t i, size_t j, const double *bw,
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
static double residuals(struct center *c, const double *v, double *rp, double *rk)
{
	const struct invariants *inv = c->inv;
	double worst = 0;

	for (size_t r = 0; r < c->nr; r++)
		rk[r] = v ? 0 : inv->rhs[c->p->rows[r]];
	for (size_t k = 0; k < c->nb; k++) {
		size_t b = c->p->buckets[k], g = bucket_g(c, k), h = bucket_h(c, k);
		double *rq = rp + c->qoff[k];

		for (size_t i = 0; i < g; i++)
			rq[i] = v ? 0 : invariants_qi_count(inv, b, i);
		for (size_t j = 0; j < h; j++)
			rq[g + j] = v ? 0 : invariants_sa_count(inv, b, j);
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

/* Bucket k's distinct open rows, ascending: pt->rows[0 .. L), pt->loc[row]
 * their place. */
static size_t bucket_rows(const struct center *c, struct center_part *pt, size_t k)
{
	size_t n = 0;

	pt->tick++;
	for (size_t l = c->loff[k]; l < c->loff[k + 1]; l++)
		for (size_t x = c->ck_off[l]; x < c->ck_off[l + 1]; x++) {
			uint32_t r = c->ck[x];

			if (pt->stamp[r] != pt->tick) {
				pt->stamp[r] = pt->tick;
				pt->rows[n++] = r;
			}
		}
	for (size_t a = 1; a < n; a++) { /* insertion sort: a few dozen rows */
		uint32_t r = pt->rows[a];
		size_t b = a;

		for (; b > 0 && pt->rows[b - 1] > r; b--)
			pt->rows[b] = pt->rows[b - 1];
		pt->rows[b] = r;
	}
	for (size_t a = 0; a < n; a++)
		pt->loc[pt->rows[a]] = (uint32_t)a;
	return n;
}

static int reserve(struct center_part *pt, size_t need)
{
	double *a, *b;

	if (need <= pt->cap)
		return 0;
	a = realloc(pt->pq, need * sizeof *a);
	if (a)
		pt->pq = a;
	b = a ? realloc(pt->ab, need * sizeof *b) : NULL;
	if (b)
		pt->ab = b;
	if (!a || !b)
		return -1;
	pt->cap = need;
	return 0;
}

/*
 * Bucket k's part of S = K D K^T - K D E M^+ E^T D K^T (lower triangle):
 * D on the pairs of rows through each cell, less P_l . M^+ P_l' for the
 * row sums and column sums P_l of D over each row's cells.
 */
/* Rows of the bucket whose P is the same (the same cells: a rule's
 * tuples often coincide within a bucket) share one pattern: one solve and
 * one set of dot products for them all. Returns the number of patterns. */
static size_t bucket_patterns(struct center_part *pt, size_t L, size_t gh)
{
	size_t n = 0;

	for (size_t a = 0; a < L; a++) {
		const double *pa = pt->pq + a * gh;
		double key = 0;
		size_t u = 0;

		for (size_t e = 0; e < gh; e++)
			key += pa[e];
		for (; u < n; u++)
			if (pt->key[u] == key &&
			    !memcmp(pt->pq + pt->first[u] * gh, pa, gh * sizeof *pa))
				break;
		if (u == n) {
			pt->key[n] = key;
			pt->first[n++] = (uint32_t)a;
		}
		pt->pat[a] = (uint32_t)u;
	}
	return n;
}

/* Grows the patterns' table to n x n. */
static int reserve_t(struct center_part *pt, size_t n)
{
	double *t;

	if (n * n <= pt->tcap)
		return 0;
	t = realloc(pt->t, n * n * sizeof *t);
	if (!t)
		return -1;
	pt->t = t;
	pt->tcap = n * n;
	return 0;
}

static int form_bucket(const struct center *c, struct center_part *pt, size_t k)
{
	size_t g = bucket_g(c, k), h = bucket_h(c, k), gh = g + h, L = bucket_rows(c, pt, k), n;
	const double *d = c->d + c->loff[k], *f = c->fac + c->foff[k];
	double *S = pt->S;

	if (!L)
		return 0; /* no open row in this bucket: nothing of S */
	if (reserve(pt, L * gh) || reserve_t(pt, L))
		return -1;
	memset(pt->pq, 0, L * gh * sizeof *pt->pq);
	for (size_t i = 0; i < g; i++)
		for (size_t j = 0; j < h; j++) {
			size_t l = c->loff[k] + i * h + j;

			for (size_t x = c->ck_off[l]; x < c->ck_off[l + 1]; x++) {
				double *pl = pt->pq + pt->loc[c->ck[x]] * gh;

				pl[i] += d[i * h + j];
				pl[g + j] += d[i * h + j];
				/* ck is ascending: ck[z] <= ck[x] */
				for (size_t z = c->ck_off[l]; z <= x; z++)
					S[c->ck[x] * c->nr + c->ck[z]] += d[i * h + j];
			}
		}
	n = bucket_patterns(pt, L, gh);
	for (size_t u = 0; u < n; u++) {
		const double *pu = pt->pq + pt->first[u] * gh;

		schur_solve(f, d, g, h, pu, pu + g, pt->ab + u * gh, pt->ab + u * gh + g);
	}
	for (size_t u = 0; u < n; u++)
		for (size_t v = 0; v <= u; v++) {
			double t = 0;

			for (size_t e = 0; e < gh; e++)
				t += pt->pq[pt->first[u] * gh + e] * pt->ab[v * gh + e];
			pt->t[u * n + v] = pt->t[v * n + u] = t;
		}
	for (size_t a = 0; a < L; a++) { /* rows ascending: b <= a is the lower triangle */
		double *sa = S + pt->rows[a] * c->nr;
		const double *ta = pt->t + pt->pat[a] * n;

		for (size_t b = 0; b <= a; b++)
			sa[pt->rows[b]] -= ta[pt->pat[b]];
	}
	return 0;
}

/* Part p's buckets: their M factored, their share of S formed. */
static void form_part(void *ctx, int p, int parts)
{
	struct center *c = ctx;
	struct center_part *pt = &c->part[p];
	size_t lo, hi;

	parallel_range(c->nb, c->loff, p, parts, &lo, &hi);
	memset(pt->S, 0, c->nr * c->nr * sizeof *pt->S);
	pt->failed = 0;
	for (size_t k = lo; k < hi; k++) {
		schur_factor(c->d + c->loff[k], bucket_g(c, k), bucket_h(c, k),
			     c->fac + c->foff[k]);
		pt->failed |= form_bucket(c, pt, k);
	}
}

/* D = y / s, every bucket's M factored, S formed (the parts' shares added
 * in part order) and factored: 0, -1 on failure, 1 if the caller asked to
 * stop in between (forming and factoring take about as long, a quarter
 * of a second each on a thousand open rows and more). */
static int factor_d(struct center *c, double eps)
{
	int failed = 0;

	parallel_run(c->pool, form_part, c);
	for (int p = 0; p < c->parts; p++)
		failed |= c->part[p].failed;
	for (int p = 1; p < c->parts; p++)
		for (size_t i = 0; i < c->nr; i++)
			for (size_t j = 0; j <= i; j++)
				c->S[i * c->nr + j] += c->part[p].S[i * c->nr + j];
	if (failed)
		return -1;
	if (solver_stop_asked(c->p->o))
		return 1;
	schur_dense_factor(c->S, c->nr, eps, c->scratch, c->pool);
	return 0;
}

static int factor(struct center *c)
{
	for (size_t l = 0; l < c->n; l++)
		c->d[l] = c->fixed[l] ? 0 : c->y[l] / c->s[l];
	return factor_d(c, SCHUR_PIVOT_EPS);
}

/* rhs (bucket rows and columns) and dmu (open rows) hold r_p - A v; the
 * bucket blocks eliminated: dmu -= K D E M_b^+ rhs_b. */
static void eliminate(struct center *c)
{
	for (size_t k = 0; k < c->nb; k++) {
		size_t g = bucket_g(c, k), h = bucket_h(c, k);
		double *z = c->tw, *rq = c->rhs + c->qoff[k];

		schur_solve(c->fac + c->foff[k], c->d + c->loff[k], g, h, rq, rq + g, z, z + g);
		for (size_t i = 0; i < g; i++)
			for (size_t j = 0; j < h; j++) {
				size_t l = c->loff[k] + i * h + j;

				for (size_t x = c->ck_off[l]; x < c->ck_off[l + 1]; x++)
					c->dmu[c->ck[x]] -= c->d[l] * (z[i] + z[g + j]);
			}
	}
}

/*
 * Solves A D A^T (dw, dmu) = (rhs, rk0) for the right-hand side in c->rhs
 * (bucket rows and columns) and c->dmu (open rows), overwritten by the
 * solution: each bucket's block eliminated (eliminate), the Schur
 * complement solved, then each bucket's block back-substituted into dw.
 */
static void normal_solve(struct center *c)
{
	eliminate(c);
	schur_dense_solve(c->S, c->nr, c->dmu);
	for (size_t k = 0; k < c->nb; k++) {
		size_t g = bucket_g(c, k), h = bucket_h(c, k);
		double *pq = c->tw, *rq = c->rhs + c->qoff[k];

		memcpy(pq, rq, (g + h) * sizeof *pq);
		for (size_t i = 0; i < g; i++)
			for (size_t j = 0; j < h; j++) {
				size_t l = c->loff[k] + i * h + j;
				double t = 0;

				for (size_t x = c->ck_off[l]; x < c->ck_off[l + 1]; x++)
					t += c->dmu[c->ck[x]];
				pq[i] -= c->d[l] * t;
				pq[g + j] -= c->d[l] * t;
			}
		schur_solve(c->fac + c->foff[k], c->d + c->loff[k], g, h, pq, pq + g,
			    c->dw + c->qoff[k], c->dw + c->qoff[k] + g);
	}
}

/*
 * The Newton direction for complementarity targets y_j s_j = a - corr_j
 * (corr NULL: 0): v = r_c / s - D r_d, then A D A^T Δw = r_p - A v by
 * eliminating each bucket's block, Δy = v + D A^T Δw,
 * Δs = r_d - A^T Δw.
 */
static void direction(struct center *c, double a, const double *corr)
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
	normal_solve(c);
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
static void max_steps(const struct center *c, double *ap, double *ad)
{
	*ap = *ad = 1;
	for (size_t l = 0; l < c->n; l++) {
		if (c->dy[l] < 0)
			*ap = fmin(*ap, -c->y[l] / c->dy[l]);
		if (c->ds[l] < 0)
			*ad = fmin(*ad, -c->s[l] / c->ds[l]);
	}
}

static double mu_at(const struct center *c, double ap, double ad, size_t free)
{
	double sum = 0;

	for (size_t l = 0; l < c->n; l++)
		sum += (c->y[l] + ap * c->dy[l]) * (c->s[l] + ad * c->ds[l]);
	return free ? sum / (double)free : 0;
}

/* One Mehrotra predictor-corrector step: the affine direction, then the
 * corrector toward sigma mu with the second-order term dy ds. factor's
 * return codes. */
static int step(struct center *c, size_t free)
{
	double ap, ad, mu = mu_at(c, 0, 0, free), sigma;
	int f = factor(c);

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
	return 0;
}

/* s_l = -A^T w at local cell l (bucket k, row i, column j) into c->v,
 * its rounding bound into c->corr (scratch between steps). */
static void slack(struct center *c, size_t k, size_t i, size_t j)
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
static double dual_value(struct center *c)
{
	const struct invariants *inv = c->inv;
	struct csum sum = {0};

	for (size_t r = 0; r < c->nr; r++)
		csum_mul(&sum, -inv->rhs[c->p->rows[r]], c->mu[r]);
	for (size_t k = 0; k < c->nb; k++) {
		size_t b = c->p->buckets[k], g = bucket_g(c, k), h = bucket_h(c, k);

		for (size_t i = 0; i < g; i++)
			csum_mul(&sum, -invariants_qi_count(inv, b, i), c->w[c->qoff[k] + i]);
		for (size_t j = 0; j < h; j++)
			csum_mul(&sum, -invariants_sa_count(inv, b, j), c->w[c->qoff[k] + g + j]);
		for (size_t i = 0; i < g; i++)
			for (size_t j = 0; j < h; j++)
				slack(c, k, i, j);
	}
	return csum_value(&sum) + csum_error(&sum);
}

/* s = -A^T w into c->v (c->corr its rounding bounds), every cell. */
static void slacks(struct center *c)
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
static int purify(struct center *c)
{
	size_t nq = c->qoff[c->nb];
	int f;

	for (size_t l = 0; l < c->n; l++)
		c->d[l] = c->fixed[l] || c->y[l] < c->s[l] ? 0 : 1;
	if ((f = factor_d(c, SCHUR_PIVOT_EPS)))
		return f;
	for (int pass = 0; pass < 2; pass++) {
		slacks(c);
		for (size_t l = 0; l < c->n; l++)
			c->v[l] = c->d[l] > 0 ? -c->v[l] : 0;
		residuals(c, c->v, c->rhs, c->dmu); /* A_P s_P */
		normal_solve(c);
		for (size_t q = 0; q < nq; q++)
			c->w[q] += c->dw[q];
		for (size_t r = 0; r < c->nr; r++)
			c->mu[r] += c->dmu[r];
	}
	return 0;
}

/* Claims the cells the iterate puts on the zero side (y < s) whose bound
 * from the certificate is below ZERO_RECORDS, and fixes them at 0 (the
 * iterations go on without them: their D is what spans the orders of
 * magnitude); returns how many it newly claims, *all whether every
 * zero-side cell is proved and every other one clearly positive. */
static size_t certify(struct center *c, uint8_t *zero, int *all)
{
	double e = dual_value(c);
	size_t n = 0;

	*all = 1;
	for (size_t l = 0; l < c->n; l++) /* s_l at its smallest: v - corr */
		if (!c->fixed[l] && c->v[l] - c->corr[l] < 0)
			e += (c->corr[l] - c->v[l]) * c->u[l];
	e = fmax(e, 0);
	for (size_t k = 0; k < c->nb; k++) {
		uint8_t *z = zero + c->inv->cell_off[c->p->buckets[k]] - c->loff[k];

		for (size_t l = c->loff[k]; l < c->loff[k + 1]; l++) {
			if (c->fixed[l])
				continue;
			if (!(c->y[l] < c->s[l])) {
				*all &= c->y[l] >= CENTER_GAP * c->s[l];
				continue;
			}
			if (!(c->v[l] - c->corr[l] > 0) ||
			    !(e <= ZERO_RECORDS * (c->v[l] - c->corr[l]))) {
				*all &= z[l];
				continue;
			}
			n += !z[l];
			z[l] = 1;
			c->fixed[l] = 1;
			c->y[l] = 0;
			c->s[l] = 0;
		}
	}
	return n;
}

/* certify with the iterate's dual purified (purify), which is then
 * restored for the next step: factor's return codes. */
static int certify_purified(struct center *c, uint8_t *zero, size_t *found, int *all)
{
	size_t nq = c->qoff[c->nb];
	int f;

	memcpy(c->w0, c->w, nq * sizeof *c->w);
	memcpy(c->mu0, c->mu, c->nr * sizeof *c->mu);
	f = purify(c);
	if (!f)
		*found += certify(c, zero, all);
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
static enum pm_status iterate(struct center *c, uint8_t *zero, size_t *found, int *settled)
{
	double scale = 1, best = INFINITY;

	for (size_t l = 0; l < c->n; l++)
		scale = fmax(scale, c->u[l]);
	for (int it = 0; it < CENTER_MAX_ITER; it++) {
		double viol = residuals(c, NULL, c->rp, c->rk), mu;
		size_t free = 0;
		int f = 0, all = 0;

		for (size_t l = 0; l < c->n; l++)
			free += !c->fixed[l];
		mu = mu_at(c, 0, 0, free);
		if (viol > 1e3 * fmax(best, 1e-12 * scale))
			break;
		best = fmin(best, viol);
		if (mu <= CENTER_CERTIFY * scale && viol <= 1e-6 * scale)
			f = certify_purified(c, zero, found, &all);
		*settled = all && viol <= 1e-9 * scale;
		if (!f && !*settled && !(viol <= 1e-10 * scale && mu <= 1e-14 * scale)) {
			if (solver_stop_asked(c->p->o))
				return PM_ERR_CANCELLED;
			f = step(c, free);
		}
		if (f)
			return f > 0 ? PM_ERR_CANCELLED : PM_ERR_NOMEM;
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

/* The structure of c for p's buckets and rows (local: inv cell ->
 * local cell, -1 for zeros and cells of other buckets, n_cells entries);
 * -1 when out of memory. */
static int center_setup(struct center *c, const struct center_problem *p, int32_t *local)
{
	*c = (struct center){.p = p, .inv = p->inv, .nb = p->n_buckets, .nr = p->n_rows};
	if (layout(c))
		return -1;
	for (size_t x = 0; x < p->inv->n_cells; x++)
		local[x] = -1;
	for (size_t k = 0; k < c->nb; k++) {
		size_t c0 = p->inv->cell_off[p->buckets[k]];

		for (size_t l = c->loff[k]; l < c->loff[k + 1]; l++)
			local[c0 + l - c->loff[k]] = p->zero[c0 + l - c->loff[k]] ? -1 : (int32_t)l;
	}
	return row_index(c, local) || center_alloc(c) ? -1 : 0;
}

/*
 * The open rows that depend on the others and the invariants (rules on
 * every value of one attribute with one s sum to that value's SA rows:
 * half the open rows on Adult, K = 5000, qi_attributes 7): the null
 * pivots of S at the starting point, where D is the closed form (no cell
 * near a bound), found with SCHUR_DEPENDENT. They add nothing to the
 * system but their share of the cubic cost; keep[r] = 0 for them. The
 * number kept, or -1 (out of memory), -2 (cancelled).
 */
static long independent_rows(struct center *c, uint8_t *keep)
{
	size_t kept = 0;
	int f;

	start(c);
	for (size_t l = 0; l < c->n; l++)
		c->d[l] = c->fixed[l] ? 0 : c->y[l] / c->s[l];
	if ((f = factor_d(c, SCHUR_DEPENDENT)))
		return f > 0 ? -2 : -1;
	for (size_t r = 0; r < c->nr; r++)
		kept += (keep[r] = c->S[r * c->nr + r] > 0);
	return (long)kept;
}

/* Do the rows left out (keep[r] 0) hold at c's iterate, as rows implied
 * by the others must (to 1e-6 of the largest count)? If not, their
 * right-hand sides disagree with the others': no solution exists, and
 * "settled" stands for nothing (the linear program names the conflict). */
static int dropped_hold(const struct center *c, const struct center_problem *p, const uint8_t *keep,
			const int32_t *local)
{
	const struct invariants *inv = p->inv;
	double scale = 1;

	for (size_t l = 0; l < c->n; l++)
		scale = fmax(scale, c->u[l]);
	for (size_t r = 0; r < p->n_rows; r++) {
		size_t row = p->rows[r];
		double sum = 0;

		for (size_t x = inv->row_off[row]; !keep[r] && x < inv->row_off[row + 1]; x++)
			if (local[inv->row_cell[x]] >= 0)
				sum += c->y[local[inv->row_cell[x]]];
		if (!keep[r] && !(fabs(sum - inv->rhs[row]) <= 1e-6 * scale))
			return 0;
	}
	return 1;
}

/* The rounds of the method on c (CENTER_ROUNDS). */
static enum pm_status rounds(struct center *c, uint8_t *zero, size_t *found, int *settled)
{
	enum pm_status st = PM_OK;

	for (int round = 0; round < CENTER_ROUNDS; round++) {
		size_t before = *found;

		start(c); /* the zeros found so far fixed (zero is p->zero) */
		st = iterate(c, zero, found, settled);
		if (st || *settled || *found == before || zero != c->p->zero)
			break;
	}
	return st;
}

enum pm_status zeros_center(const struct center_problem *p, uint8_t *zero, size_t *found,
			    int *settled)
{
	struct center c = {0};
	struct center_problem q = *p;
	int32_t *local = malloc((p->inv->n_cells + 1) * sizeof *local);
	uint8_t *keep = malloc(p->n_rows + 1);
	uint32_t *rows = malloc((p->n_rows + 1) * sizeof *rows);
	enum pm_status st = PM_ERR_NOMEM;
	long kept;

	*found = 0;
	*settled = 0;
	if (p->n_rows > CENTER_ROWS) {
		st = PM_OK;
		goto out;
	}
	if (!local || !keep || !rows || center_setup(&c, p, local))
		goto out;
	kept = independent_rows(&c, keep);
	if (kept < 0) {
		st = kept == -2 ? PM_ERR_CANCELLED : PM_ERR_NOMEM;
		goto out;
	}
	if ((size_t)kept < p->n_rows) { /* the same without the dependent rows */
		q.n_rows = 0;
		for (size_t r = 0; r < p->n_rows; r++)
			if (keep[r])
				rows[q.n_rows++] = p->rows[r];
		q.rows = rows;
		center_free(&c);
		if (center_setup(&c, &q, local))
			goto out;
	}
	st = rounds(&c, zero, found, settled);
	if (!st && *settled && (size_t)kept < p->n_rows)
		*settled = dropped_hold(&c, p, keep, local);
	for (size_t r = 0; !st && p->dependent && r < p->n_rows; r++)
		p->dependent[r] = !keep[r];
out:
	free(local);
	free(keep);
	free(rows);
	center_free(&c);
	return st;
}
