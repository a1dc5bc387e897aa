/*
 * What the estimate y (records) says: the posterior P*(s|q) =
 * sum_b y[q,s,b] / n(q), the entropy of x = y / N, and the estimation
 * accuracy, the weighted KL distance
 *     sum_q P(q) sum_s P(s|q) ln(P(s|q) / P*(s|q))
 * from the original records; the baseline is the same measure for the
 * no-knowledge estimate of Eq. 9, P(s|q,b) = n(s,b) / n(b).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solver.h"

void metrics_closed_form(const struct dataset *ds, const struct invariants *inv, size_t b,
			 double *y)
{
	double nb = ds->group_size[b];
	size_t c = inv->cell_off[b];

	/* Theorem 5: with no knowledge the bucket's maximum is the product of
	 * its marginals. */
	for (size_t i = ds->bq_off[b]; i < ds->bq_off[b + 1]; i++)
		for (size_t j = ds->bs_off[b]; j < ds->bs_off[b + 1]; j++)
			y[c++] = (double)ds->bq_count[i] * ds->bs_count[j] / nb;
}

double metrics_max_violation(const struct invariants *inv, const double *y)
{
	double worst = 0;
	double *nb = calloc(inv->n_groups + 1, sizeof *nb);
	double *sa = calloc(inv->n_groups + 1, sizeof *sa);

	if (!nb || !sa) {
		worst = INFINITY;
		goto out;
	}
	for (size_t i = 0; i < inv->n_rows; i++) {
		double s = 0;

		for (size_t e = inv->row_off[i]; e < inv->row_off[i + 1]; e++)
			s += y[inv->row_cell[e]];
		worst = fmax(worst, fabs(s - inv->rhs[i]));
		if (inv->row_kind[i] != ROW_KNOWLEDGE)
			(inv->row_kind[i] == ROW_QI ? nb : sa)[inv->row_ref[i]] += inv->rhs[i];
	}
	/* the dropped SA row of each bucket: its last SA value */
	for (size_t b = 0; b < inv->n_groups; b++) {
		size_t lo = inv->cell_off[b], hi = inv->cell_off[b + 1], h = 0;
		double s = 0;

		while (lo + h < hi && inv->cell_tuple[lo + h] == inv->cell_tuple[lo])
			h++;
		for (size_t c = lo + h - 1; h && c < hi; c += h)
			s += y[c];
		worst = fmax(worst, fabs(s - (nb[b] - sa[b])));
	}
out:
	free(nb);
	free(sa);
	return worst;
}

/* Accumulates, per tuple, the cells of every bucket it occurs in. The
 * cells of tuple q are found through a CSR of (bucket, position) pairs. */
struct by_tuple {
	size_t *off;
	uint32_t *first_cell, *h; /* first cell of q's row in the bucket, width */
};

static enum pm_status by_tuple_init(const struct dataset *ds, const struct invariants *inv,
				    struct by_tuple *t)
{
	size_t n = ds->bq_off[ds->n_groups], *fill;

	t->off = calloc(ds->n_tuples + 2, sizeof *t->off);
	t->first_cell = malloc((n + 1) * sizeof *t->first_cell);
	t->h = malloc((n + 1) * sizeof *t->h);
	if (!t->off || !t->first_cell || !t->h)
		return PM_ERR_NOMEM;
	fill = t->off + 1;
	for (size_t i = 0; i < n; i++)
		t->off[ds->bq_tuple[i] + 2]++;
	for (size_t q = 0; q < ds->n_tuples; q++)
		t->off[q + 2] += t->off[q + 1];
	for (size_t b = 0; b < ds->n_groups; b++) {
		size_t h = ds->bs_off[b + 1] - ds->bs_off[b];

		for (size_t i = ds->bq_off[b]; i < ds->bq_off[b + 1]; i++) {
			size_t at = fill[ds->bq_tuple[i]]++;

			t->first_cell[at] = (uint32_t)(inv->cell_off[b] + (i - ds->bq_off[b]) * h);
			t->h[at] = (uint32_t)h;
		}
	}
	return PM_OK;
}

static void by_tuple_finish(struct by_tuple *t)
{
	free(t->off);
	free(t->first_cell);
	free(t->h);
}

/* acc[s] += y over tuple q's cells; returns the number of distinct s
 * touched, listed in seen[]. */
static size_t gather(const struct invariants *inv, const struct by_tuple *t, const double *y,
		     uint32_t q, double *acc, uint32_t *seen)
{
	size_t n = 0;

	for (size_t o = t->off[q]; o < t->off[q + 1]; o++) {
		for (uint32_t j = 0; j < t->h[o]; j++) {
			size_t c = t->first_cell[o] + j;
			uint32_t s = inv->cell_sa[c];

			if (acc[s] < 0) {
				acc[s] = 0;
				seen[n++] = s;
			}
			acc[s] += y ? y[c] : 0;
		}
	}
	return n;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* Scratch space for one pass over the tuples. */
struct tally {
	struct by_tuple t;
	size_t *rec_off; /* records of each tuple: rec_sa_of[rec_off[q] ..) */
	uint32_t *rec_sa_of, *seen, *seen0, *cnt;
	double *acc, *acc0, *y0;
};

static void tally_finish(struct tally *k)
{
	by_tuple_finish(&k->t);
	free(k->rec_off);
	free(k->rec_sa_of);
	free(k->seen);
	free(k->seen0);
	free(k->cnt);
	free(k->acc);
	free(k->acc0);
	free(k->y0);
}

static enum pm_status tally_init(const struct dataset *ds, const struct invariants *inv,
				 struct tally *k)
{
	size_t ns = ds->sa_values.n + 1, nr = ds->n_records;

	if (by_tuple_init(ds, inv, &k->t))
		return PM_ERR_NOMEM;
	k->rec_off = calloc(ds->n_tuples + 2, sizeof *k->rec_off);
	k->rec_sa_of = malloc((nr + 1) * sizeof *k->rec_sa_of);
	k->seen = malloc(ns * sizeof *k->seen);
	k->seen0 = malloc(ns * sizeof *k->seen0);
	k->cnt = calloc(ns, sizeof *k->cnt);
	k->acc = malloc(ns * sizeof *k->acc);
	k->acc0 = malloc(ns * sizeof *k->acc0);
	k->y0 = malloc((inv->n_cells + 1) * sizeof *k->y0);
	if (!k->rec_off || !k->rec_sa_of || !k->seen || !k->seen0 || !k->cnt || !k->acc ||
	    !k->acc0 || !k->y0)
		return PM_ERR_NOMEM;
	for (size_t s = 0; s < ns; s++)
		k->acc[s] = k->acc0[s] = -1;
	for (size_t i = 0; i < nr; i++)
		k->rec_off[ds->rec_tuple[i] + 2]++;
	for (size_t q = 0; q < ds->n_tuples; q++)
		k->rec_off[q + 2] += k->rec_off[q + 1];
	for (size_t i = 0; i < nr; i++)
		k->rec_sa_of[k->rec_off[ds->rec_tuple[i] + 1]++] = ds->rec_sa[i];
	for (size_t b = 0; b < ds->n_groups; b++)
		metrics_closed_form(ds, inv, b, k->y0);
	return PM_OK;
}

/* One term of the weighted KL sum: P(q) P(s|q) ln(P(s|q) / P*(s|q)). */
static void kl_add(double w, double p, double pstar, double *sum, int *infinite)
{
	if (pstar <= 0)
		*infinite = 1;
	else
		*sum += w * log(p / pstar);
}

/* Posterior entries of tuple q, and its accuracy terms. */
static void tally_tuple(const struct dataset *ds, const struct invariants *inv, struct tally *k,
			struct solver_result *r, uint32_t q, size_t *np)
{
	double nq = ds->tuple_count[q], n = (double)ds->n_records;
	size_t ns = gather(inv, &k->t, r->cells, q, k->acc, k->seen);

	gather(inv, &k->t, k->y0, q, k->acc0, k->seen0);
	qsort(k->seen, ns, sizeof *k->seen, cmp_u32);
	for (size_t i = 0; i < ns; i++) {
		uint32_t s = k->seen[i];

		if (k->acc[s] > 0) {
			r->post_sa[*np] = s;
			r->post_p[(*np)++] = k->acc[s] / nq;
		}
	}
	for (size_t e = k->rec_off[q]; ds->has_ground_truth && e < k->rec_off[q + 1]; e++)
		k->cnt[k->rec_sa_of[e]]++;
	for (size_t e = k->rec_off[q]; ds->has_ground_truth && e < k->rec_off[q + 1]; e++) {
		uint32_t s = k->rec_sa_of[e];
		double c = k->cnt[s];

		if (!c)
			continue; /* this value's term is already in */
		kl_add(c / n, c / nq, k->acc[s] / nq, &r->estimation_accuracy,
		       &r->estimation_infinite);
		kl_add(c / n, c / nq, k->acc0[s] / nq, &r->baseline_accuracy,
		       &r->baseline_infinite);
		k->cnt[s] = 0;
	}
	for (size_t i = 0; i < ns; i++)
		k->acc[k->seen[i]] = k->acc0[k->seen[i]] = -1;
}

enum pm_status metrics_compute(const struct dataset *ds, const struct invariants *inv,
			       struct solver_result *r, struct pm_error *err)
{
	struct tally k = {0};
	enum pm_status st = PM_ERR_NOMEM;
	size_t np = 0;

	r->post_off = malloc((ds->n_tuples + 1) * sizeof *r->post_off);
	r->post_sa = malloc((inv->n_cells + 1) * sizeof *r->post_sa);
	r->post_p = malloc((inv->n_cells + 1) * sizeof *r->post_p);
	if (!r->post_off || !r->post_sa || !r->post_p || tally_init(ds, inv, &k))
		goto out;
	r->has_accuracy = ds->has_ground_truth;
	r->estimation_accuracy = r->baseline_accuracy = 0;
	r->estimation_infinite = r->baseline_infinite = 0;
	for (uint32_t q = 0; q < ds->n_tuples; q++) {
		r->post_off[q] = np;
		tally_tuple(ds, inv, &k, r, q, &np);
	}
	r->post_off[ds->n_tuples] = np;
	r->entropy = 0;
	for (size_t c = 0; c < inv->n_cells; c++) {
		double x = r->cells[c] / (double)ds->n_records;

		if (x > 0)
			r->entropy -= x * log(x);
	}
	st = PM_OK;
out:
	if (st)
		error_set(err, st, "", "out of memory computing the metrics");
	tally_finish(&k);
	return st;
}
