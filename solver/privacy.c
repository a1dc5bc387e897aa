/*
 * The privacy verdict of SPEC 4.1 on a table of distributions P(s | q),
 * one per tuple: the MaxEnt posterior, the no-knowledge estimate (the
 * closed form of Theorem 5, summed over the buckets of each tuple) and,
 * with the records, the original table. Every metric reads only these
 * distributions, the tuples' counts and the table's SA distribution P(s).
 * privacy_baseline gives the no-knowledge estimate alone, from the
 * dataset (no invariants), for the per-tuple risk list of the service.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "privacy.h"

/* Probabilities within this of each other are a tie: at the threshold a
 * tie counts as reached (SPEC 4.1: >= threshold - 1e-9); in recursive
 * (c, l)-diversity's strict r_1 < c (...) it does not hold, whichever
 * way the rounding of the two sides fell. */
#define RISK_SLACK 1e-9

void privacy_options_init(struct privacy_options *o)
{
	o->threshold = 0.5;
	o->c = 3;
}

/* Compares doubles descending, for the sorted probabilities of a tuple. */
static int cmp_desc(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x < y) - (x > y);
}

/*
 * The largest l for which the sorted probabilities r[0 .. m) satisfy
 * recursive (c, l)-diversity, r_1 < c (r_l + ... + r_m) (Machanavajjhala
 * et al., Definition 4.2, on P(.|q) instead of counts: the same
 * inequality scaled by n(q)), a tie (RISK_SLACK) failing; 0 if not even
 * l = 1 holds. The tails fall as l grows, so the first l that fails ends
 * the search.
 */
static long recursive_l(const double *r, size_t m, double c)
{
	double tail = 0;
	long l = 0;

	for (size_t i = 0; i < m; i++)
		tail += r[i];
	for (size_t i = 0; i < m; i++) { /* l = i + 1: tail = r_{i+1} + ... */
		if (!(r[0] < c * tail - RISK_SLACK))
			break;
		l = (long)i + 1;
		tail -= r[i];
	}
	return l;
}

/* One tuple's contribution: its distribution p[0 .. n) over values sa[]. */
static void tuple_metrics(const struct dataset *ds, const double *ps, uint32_t q,
			  const uint32_t *sa, const double *p, size_t n,
			  const struct privacy_options *o, double *sorted,
			  struct privacy_report *out)
{
	double h = 0, top = 0, tv = 0, covered = 0;
	size_t m = 0;
	uint32_t top_s = 0;

	for (size_t e = 0; e < n; e++) {
		if (!(p[e] > 0))
			continue;
		if (p[e] > top) {
			top = p[e];
			top_s = sa[e];
		}
		h -= p[e] * log(p[e]);
		tv += fabs(p[e] - ps[sa[e]]);
		covered += ps[sa[e]];
		out->delta_disclosure = fmax(out->delta_disclosure, fabs(log(p[e] / ps[sa[e]])));
		sorted[m++] = p[e];
	}
	tv += fmax(0, 1 - covered); /* the values q has no mass on */
	if (top > out->max_p) {
		out->max_p = fmin(top, 1); /* a posterior of 1 + 2e-16 is 1 */
		out->max_q = q;
		out->max_s = top_s;
	}
	if (top >= o->threshold - RISK_SLACK)
		out->at_risk += ds->tuple_count[q];
	out->min_entropy_l = fmin(out->min_entropy_l, exp(h));
	out->t_closeness = fmax(out->t_closeness, 0.5 * tv);
	qsort(sorted, m, sizeof *sorted, cmp_desc);
	if (m) {
		long l = recursive_l(sorted, m, o->c);

		out->recursive_cl =
		    out->recursive_cl < 0 || l < out->recursive_cl ? l : out->recursive_cl;
	}
}

enum pm_status privacy_compute(const struct dataset *ds, const size_t *off, const uint32_t *sa,
			       const double *p, const struct privacy_options *o,
			       struct privacy_report *out)
{
	size_t ns = ds->sa_values.n, widest = 1;
	double *ps = calloc(ns + 1, sizeof *ps), *sorted;

	memset(out, 0, sizeof *out);
	for (size_t q = 0; q < ds->n_tuples; q++)
		widest = off[q + 1] - off[q] > widest ? off[q + 1] - off[q] : widest;
	sorted = malloc(widest * sizeof *sorted);
	if (!ps || !sorted) {
		free(ps);
		free(sorted);
		return PM_ERR_NOMEM;
	}
	/* the table's SA distribution, from the published SA counts */
	for (size_t b = 0; b < ds->n_groups; b++)
		for (size_t e = ds->bs_off[b]; e < ds->bs_off[b + 1]; e++)
			ps[ds->bs_value[e]] += ds->bs_count[e] / (double)ds->n_records;
	out->min_entropy_l = INFINITY;
	out->recursive_cl = -1; /* none seen yet */
	for (size_t q = 0; q < ds->n_tuples; q++)
		tuple_metrics(ds, ps, (uint32_t)q, sa + off[q], p + off[q], off[q + 1] - off[q], o,
			      sorted, out);
	out->recursive_cl = out->recursive_cl < 0 ? 0 : out->recursive_cl;
	out->max_count = ds->n_tuples ? ds->tuple_count[out->max_q] : 0;
	out->at_risk_fraction = ds->n_records ? (double)out->at_risk / ds->n_records : 0;
	out->has = 1;
	free(ps);
	free(sorted);
	return PM_OK;
}

/* The no-knowledge estimate per slot of inv (Eq. 9 summed over the
 * buckets of q: sum_b n(q,b)/n(q) n(s,b)/n(b)) into p, or with truth the
 * records' n(q,s)/n(q). */
static void slot_table(const struct dataset *ds, const struct invariants *inv, int truth, double *p)
{
	memset(p, 0, inv->slot_off[ds->n_tuples] * sizeof *p);
	for (size_t q = 0; q < ds->n_tuples; q++) {
		double nq = ds->tuple_count[q];

		for (size_t e = inv->rec_off[q]; truth && e < inv->rec_off[q + 1]; e++)
			p[inv->rec_slot[e]] = inv->rec_count[e] / nq;
		for (size_t o = inv->occ_off[q]; !truth && o < inv->occ_off[q + 1]; o++) {
			size_t b = inv->occ_bucket[o];

			for (size_t j = 0; j < inv->bucket_h[b]; j++)
				p[inv->cell_slot[inv->occ_cell[o] + j]] +=
				    inv->occ_count[o] / nq * invariants_sa_count(inv, b, j) /
				    inv->bucket_n[b];
		}
	}
}

enum pm_status privacy_all(const struct dataset *ds, const struct invariants *inv,
			   const struct privacy_options *o, struct solver_result *r)
{
	double *p = malloc((inv->slot_off[ds->n_tuples] + 1) * sizeof *p);
	enum pm_status st = p ? privacy_compute(ds, r->post_off, r->post_sa, r->post_p, o,
						&r->privacy[PRIVACY_POSTERIOR])
			      : PM_ERR_NOMEM;

	r->privacy_options = *o;
	if (!st) {
		slot_table(ds, inv, 0, p);
		st = privacy_compute(ds, inv->slot_off, inv->slot_sa, p, o,
				     &r->privacy[PRIVACY_BASELINE]);
	}
	if (!st && ds->has_ground_truth) {
		slot_table(ds, inv, 1, p);
		st = privacy_compute(ds, inv->slot_off, inv->slot_sa, p, o,
				     &r->privacy[PRIVACY_TRUTH]);
	}
	if (!st)
		st = privacy_top_list(ds, r);
	free(p);
	return st;
}

/* ---- the no-knowledge estimate, on its own ------------------------------- */

void privacy_table_finish(struct privacy_table *t)
{
	free(t->off);
	free(t->sa);
	free(t->p);
	memset(t, 0, sizeof *t);
}

/* What privacy_baseline works with: the buckets of each tuple (the
 * dataset lists each bucket's tuples, not each tuple's buckets): tuple
 * q's entries of ds->bq_* are at[occ[q] .. occ[q + 1]), bucket order,
 * in bucket[..]; and |SA| scratch for one tuple, zero between tuples. */
struct baseline_work {
	size_t *occ, *at;
	uint32_t *bucket, *vals;
	double *acc;
	unsigned char *seen;
};

static void work_finish(struct baseline_work *w)
{
	free(w->occ);
	free(w->at);
	free(w->bucket);
	free(w->vals);
	free(w->acc);
	free(w->seen);
}

/* Allocates w and fills its bucket lists (a counting sort of bq_tuple). */
static enum pm_status work_init(const struct dataset *ds, struct baseline_work *w)
{
	size_t n = ds->bq_off[ds->n_groups], ns = ds->sa_values.n + 1, *next;

	w->occ = calloc(ds->n_tuples + 1, sizeof *w->occ);
	w->at = malloc((n + 1) * sizeof *w->at);
	w->bucket = malloc((n + 1) * sizeof *w->bucket);
	w->vals = malloc(ns * sizeof *w->vals);
	w->acc = calloc(ns, sizeof *w->acc);
	w->seen = calloc(ns, 1);
	next = malloc((ds->n_tuples + 1) * sizeof *next);
	if (!w->occ || !w->at || !w->bucket || !w->vals || !w->acc || !w->seen || !next) {
		free(next);
		return PM_ERR_NOMEM;
	}
	for (size_t e = 0; e < n; e++)
		w->occ[ds->bq_tuple[e] + 1]++;
	for (size_t q = 0; q < ds->n_tuples; q++)
		w->occ[q + 1] += w->occ[q];
	memcpy(next, w->occ, (ds->n_tuples + 1) * sizeof *next);
	for (size_t b = 0; b < ds->n_groups; b++)
		for (size_t e = ds->bq_off[b]; e < ds->bq_off[b + 1]; e++) {
			size_t k = next[ds->bq_tuple[e]]++;

			w->at[k] = e;
			w->bucket[k] = (uint32_t)b;
		}
	free(next);
	return PM_OK;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* Tuple q's estimate into t from entry k on, ascending value; returns the
 * entry after it. The same arithmetic as slot_table, so that the numbers
 * equal those of the result's privacy.baseline bit for bit. */
static size_t tuple_estimate(const struct dataset *ds, struct baseline_work *w, uint32_t q,
			     struct privacy_table *t, size_t k)
{
	double nq = ds->tuple_count[q];
	size_t m = 0;

	for (size_t i = w->occ[q]; i < w->occ[q + 1]; i++) {
		size_t b = w->bucket[i];

		for (size_t j = ds->bs_off[b]; j < ds->bs_off[b + 1]; j++) {
			uint32_t s = ds->bs_value[j];

			if (!w->seen[s]) {
				w->seen[s] = 1;
				w->vals[m++] = s;
			}
			w->acc[s] +=
			    ds->bq_count[w->at[i]] / nq * ds->bs_count[j] / ds->group_size[b];
		}
	}
	qsort(w->vals, m, sizeof *w->vals, cmp_u32);
	for (size_t i = 0; i < m; i++, k++) {
		t->sa[k] = w->vals[i];
		t->p[k] = w->acc[w->vals[i]];
		w->acc[w->vals[i]] = 0;
		w->seen[w->vals[i]] = 0;
	}
	return k;
}

enum pm_status privacy_baseline(const struct dataset *ds, struct privacy_table *out)
{
	struct baseline_work w = {0};
	enum pm_status st = work_init(ds, &w);
	size_t cells = 0, k = 0;

	memset(out, 0, sizeof *out);
	/* at most one entry per cell (q, s, b) */
	for (size_t b = 0; b < ds->n_groups; b++)
		cells += (ds->bq_off[b + 1] - ds->bq_off[b]) * (ds->bs_off[b + 1] - ds->bs_off[b]);
	out->off = malloc((ds->n_tuples + 1) * sizeof *out->off);
	out->sa = malloc((cells + 1) * sizeof *out->sa);
	out->p = malloc((cells + 1) * sizeof *out->p);
	if (!st && (!out->off || !out->sa || !out->p))
		st = PM_ERR_NOMEM;
	for (size_t q = 0; !st && q < ds->n_tuples; q++) {
		out->off[q] = k;
		k = tuple_estimate(ds, &w, (uint32_t)q, out, k);
	}
	if (!st)
		out->off[ds->n_tuples] = k;
	work_finish(&w);
	return st;
}
