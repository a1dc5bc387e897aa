/*
 * The normal equations of the interior point method (zeros_ipm.c): A D
 * A^T, for the diagonal D of the current iterate, has the structure of
 * the two-level Hessian: each block's part E^T D_b E is the scaling
 * Hessian of schur.c; eliminating it leaves a dense Schur complement over
 * the knowledge rows, formed block by block (on the pool's parts, rows
 * with the same cells in a block sharing one pattern) and factored by
 * schur_dense_factor.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "parallel.h"
#include "schur.h"
#include "solve.h"
#include "zeros.h"

/* Bucket k's distinct open rows, ascending: pt->rows[0 .. L), pt->loc[row]
 * their place. */
static size_t bucket_rows(const struct ipm_state *c, struct ipm_part *pt, size_t k)
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

static int reserve(struct ipm_part *pt, size_t need)
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
static size_t bucket_patterns(struct ipm_part *pt, size_t L, size_t gh)
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
static int reserve_t(struct ipm_part *pt, size_t n)
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

static int form_bucket(const struct ipm_state *c, struct ipm_part *pt, size_t k)
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
	struct ipm_state *c = ctx;
	struct ipm_part *pt = &c->part[p];
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

/* D = c->d, every block's M factored, S formed (the parts' shares added
 * in part order) and factored (forming and factoring take about as long,
 * a quarter of a second each on a thousand open rows and more: the
 * caller's stop is polled in between). */
enum pm_status zeros_ipm_factor(struct ipm_state *c, double eps)
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
		return PM_ERR_NOMEM;
	if (cancel_poll(c->p->cancel))
		return PM_ERR_CANCELLED;
	schur_dense_factor(c->S, c->nr, eps, c->scratch, c->pool);
	return PM_OK;
}

/* rhs (bucket rows and columns) and dmu (open rows) hold r_p - A v; the
 * bucket blocks eliminated: dmu -= K D E M_b^+ rhs_b. */
static void eliminate(struct ipm_state *c)
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
void zeros_ipm_solve(struct ipm_state *c)
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
