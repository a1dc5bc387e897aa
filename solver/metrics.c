/*
 * What the estimate y (records) says: the posterior P*(s|q) =
 * sum_b y[q,s,b] / n(q), the entropy of x = y / N, and the estimation
 * accuracy, the weighted KL distance
 *     sum_q P(q) sum_s P(s|q) ln(P(s|q) / P*(s|q))
 * from the original records; the baseline is the same measure for the
 * no-knowledge estimate of Eq. 9, P(s|q,b) = n(s,b) / n(b); and the
 * largest violation of the rows.
 *
 * The work is one parallel pass: tuples for the posterior and the
 * accuracies, buckets for the entropy and the invariant rows, knowledge
 * rows for their violation. Sums run over fixed chunks of CHUNK tuples or
 * buckets, each chunk in order, the chunks added in order: the numbers do
 * not depend on how many threads share the pass.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solver_internal.h"

/* Tuples or buckets per chunk of a sum. */
#define CHUNK 256

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

/* fmax without the call: worst is never NaN, and a NaN v leaves it. */
static double max_of(double worst, double v)
{
	return v > worst ? v : worst;
}

/* Largest |A y - c| over bucket b's QI rows and all its SA rows, the
 * dropped one included (its right-hand side n(s,b) is what the others
 * leave of n(b), exactly: counts are whole numbers). */
static double bucket_violation(const struct dataset *ds, const struct invariants *inv, size_t b,
			       const double *y)
{
	size_t g = ds->bq_off[b + 1] - ds->bq_off[b], h = ds->bs_off[b + 1] - ds->bs_off[b];
	const double *yb = y + inv->cell_off[b];
	const uint32_t *nq = ds->bq_count + ds->bq_off[b], *ns = ds->bs_count + ds->bs_off[b];
	double worst = 0;

	for (size_t i = 0; i < g; i++) {
		double s = 0;

		for (size_t j = 0; j < h; j++)
			s += yb[i * h + j];
		worst = max_of(worst, fabs(s - nq[i]));
	}
	for (size_t j = 0; j < h; j++) {
		double s = 0;

		for (size_t i = 0; i < g; i++)
			s += yb[i * h + j];
		worst = max_of(worst, fabs(s - ns[j]));
	}
	return worst;
}

static double row_violation(const struct invariants *inv, size_t r, const double *y)
{
	double s = 0;

	for (size_t e = inv->row_off[r]; e < inv->row_off[r + 1]; e++)
		s += y[inv->row_cell[e]];
	return fabs(s - inv->rhs[r]);
}

enum pm_status metrics_max_violation(const struct dataset *ds, const struct invariants *inv,
				     const double *y, double *out)
{
	double worst = 0;

	for (size_t b = 0; b < inv->n_groups; b++)
		worst = fmax(worst, bucket_violation(ds, inv, b, y));
	for (size_t r = inv->n_qi_rows + inv->n_sa_rows; r < inv->n_rows; r++)
		worst = fmax(worst, row_violation(inv, r, y));
	*out = worst;
	return PM_OK;
}

/* One thread's scratch for the tuples: per SA value, sums (-1 when not
 * seen) and record counts; per value of one tuple, in order: the value
 * and its sums. */
struct part {
	double *acc, *acc0, *sum, *base;
	uint32_t *seen, *cnt;
};

struct metrics {
	const struct dataset *ds;
	const struct invariants *inv;
	const uint8_t *closed;
	struct solver_result *r;
	/* tuple q's rows: in bucket occ_b[o], cells occ_cell[o] + 0 .. occ_h[o]
	 * for o in occ_off[q] .. occ_off[q + 1] */
	size_t *occ_off;
	uint32_t *occ_b, *occ_cell, *occ_h;
	size_t *rec_off; /* records of tuple q: rec_sa[rec_off[q] ..) */
	uint32_t *rec_sa;
	double *klogk; /* k ln k for the counts 0 .. n(b) */
	size_t n_tc, n_bc;
	/* per tuple chunk: first posterior slot (its tuples' cells before
	 * it, an upper bound), entries written, accuracy sums */
	size_t *slot, *n_post;
	double *est, *base;
	int *est_inf, *base_inf;
	double *entropy;   /* per bucket chunk */
	double *violation; /* per part */
	struct part *part;
	int parts;
};

/* Counting sort of the bucket occurrences and the records by tuple; the
 * posterior slots of each tuple chunk. */
static enum pm_status index_build(struct metrics *m)
{
	const struct dataset *ds = m->ds;
	size_t nq = ds->n_tuples, n = ds->bq_off[ds->n_groups], nr = ds->n_records;

	m->occ_off = calloc(nq + 2, sizeof *m->occ_off);
	m->occ_b = malloc((n + 1) * sizeof *m->occ_b);
	m->occ_cell = malloc((n + 1) * sizeof *m->occ_cell);
	m->occ_h = malloc((n + 1) * sizeof *m->occ_h);
	m->slot = calloc(m->n_tc + 2, sizeof *m->slot);
	if (!m->occ_off || !m->occ_b || !m->occ_cell || !m->occ_h || !m->slot)
		return PM_ERR_NOMEM;
	for (size_t i = 0; i < n; i++)
		m->occ_off[ds->bq_tuple[i] + 2]++;
	for (size_t q = 0; q < nq; q++)
		m->occ_off[q + 2] += m->occ_off[q + 1];
	for (size_t b = 0; b < ds->n_groups; b++) {
		size_t h = ds->bs_off[b + 1] - ds->bs_off[b];

		for (size_t i = ds->bq_off[b]; i < ds->bq_off[b + 1]; i++) {
			size_t at = m->occ_off[ds->bq_tuple[i] + 1]++;

			m->occ_b[at] = (uint32_t)b;
			m->occ_cell[at] = (uint32_t)(m->inv->cell_off[b] + (i - ds->bq_off[b]) * h);
			m->occ_h[at] = (uint32_t)h;
			m->slot[ds->bq_tuple[i] / CHUNK + 1] += h;
		}
	}
	for (size_t k = 0; k < m->n_tc; k++)
		m->slot[k + 1] += m->slot[k];
	if (!ds->has_ground_truth)
		return PM_OK;
	m->rec_off = calloc(nq + 2, sizeof *m->rec_off);
	m->rec_sa = malloc((nr + 1) * sizeof *m->rec_sa);
	if (!m->rec_off || !m->rec_sa)
		return PM_ERR_NOMEM;
	for (size_t i = 0; i < nr; i++)
		m->rec_off[ds->rec_tuple[i] + 2]++;
	for (size_t q = 0; q < nq; q++)
		m->rec_off[q + 2] += m->rec_off[q + 1];
	for (size_t i = 0; i < nr; i++)
		m->rec_sa[m->rec_off[ds->rec_tuple[i] + 1]++] = ds->rec_sa[i];
	return PM_OK;
}

static enum pm_status metrics_init(struct metrics *m, struct parallel *pool)
{
	const struct dataset *ds = m->ds;
	size_t ns = ds->sa_values.n + 1, top = 1;

	m->parts = parallel_parts(pool);
	m->n_tc = (ds->n_tuples + CHUNK - 1) / CHUNK;
	m->n_bc = (ds->n_groups + CHUNK - 1) / CHUNK;
	for (size_t b = 0; b < ds->n_groups; b++)
		top = ds->group_size[b] > top ? ds->group_size[b] : top;
	m->klogk = malloc((top + 1) * sizeof *m->klogk);
	m->n_post = calloc(m->n_tc + 1, sizeof *m->n_post);
	m->est = calloc(2 * (m->n_tc + 1), sizeof *m->est);
	m->est_inf = calloc(2 * (m->n_tc + 1), sizeof *m->est_inf);
	m->entropy = calloc(m->n_bc + 1, sizeof *m->entropy);
	m->violation = calloc((size_t)m->parts, sizeof *m->violation);
	m->part = calloc((size_t)m->parts, sizeof *m->part);
	if (!m->klogk || !m->n_post || !m->est || !m->est_inf || !m->entropy || !m->violation ||
	    !m->part)
		return PM_ERR_NOMEM;
	m->base = m->est + m->n_tc + 1;
	m->base_inf = m->est_inf + m->n_tc + 1;
	m->klogk[0] = 0;
	for (size_t k = 1; k <= top; k++)
		m->klogk[k] = (double)k * log((double)k);
	for (int p = 0; p < m->parts; p++) {
		struct part *t = &m->part[p];

		t->acc = malloc(4 * ns * sizeof *t->acc);
		t->seen = malloc(ns * sizeof *t->seen);
		t->cnt = calloc(ns, sizeof *t->cnt);
		if (!t->acc || !t->seen || !t->cnt)
			return PM_ERR_NOMEM;
		t->acc0 = t->acc + ns;
		t->sum = t->acc + 2 * ns;
		t->base = t->acc + 3 * ns;
		for (size_t s = 0; s < 2 * ns; s++)
			t->acc[s] = -1;
	}
	return index_build(m);
}

static void metrics_finish(struct metrics *m)
{
	for (int p = 0; m->part && p < m->parts; p++) {
		free(m->part[p].acc);
		free(m->part[p].seen);
		free(m->part[p].cnt);
	}
	free(m->part);
	free(m->occ_off);
	free(m->occ_b);
	free(m->occ_cell);
	free(m->occ_h);
	free(m->rec_off);
	free(m->rec_sa);
	free(m->klogk);
	free(m->slot);
	free(m->n_post);
	free(m->est);
	free(m->est_inf);
	free(m->entropy);
	free(m->violation);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* Sorts the n values of seen[]: a tuple sees few (insertion sort); many
 * within a narrow range are read off the marks in acc[] in value order. */
static void sort_seen(struct part *t, size_t n)
{
	uint32_t lo = UINT32_MAX, hi = 0;
	size_t k = 0;

	if (n <= 24) {
		for (size_t i = 1; i < n; i++) {
			uint32_t v = t->seen[i];
			size_t j = i;

			for (; j > 0 && t->seen[j - 1] > v; j--)
				t->seen[j] = t->seen[j - 1];
			t->seen[j] = v;
		}
		return;
	}
	for (size_t i = 0; i < n; i++) {
		lo = t->seen[i] < lo ? t->seen[i] : lo;
		hi = t->seen[i] > hi ? t->seen[i] : hi;
	}
	if ((size_t)(hi - lo) > 8 * n) {
		qsort(t->seen, n, sizeof *t->seen, cmp_u32);
		return;
	}
	for (uint32_t s = lo; s <= hi; s++)
		if (t->acc[s] >= 0)
			t->seen[k++] = s;
}

/* Sums y and the closed form of Theorem 5 (a closed-form bucket's cells
 * are it already) by value over tuple q's cells, in bucket order, into
 * acc[] (-1 when not seen); then seen[] gets the values in order and
 * sum[], base[] their sums. Returns the number of values. */
static size_t gather(const struct metrics *m, struct part *t, uint32_t q)
{
	const struct dataset *ds = m->ds;
	size_t n = 0;

	for (size_t o = m->occ_off[q]; o < m->occ_off[q + 1]; o++) {
		size_t c = m->occ_cell[o], h = m->occ_h[o], b = m->occ_b[o];
		size_t i = ds->bq_off[b] + (c - m->inv->cell_off[b]) / h;
		const double *y = m->r->cells + c;
		const uint32_t *sa = m->inv->cell_sa + c, *ns = ds->bs_count + ds->bs_off[b];
		double nb = ds->group_size[b], nq = ds->bq_count[i];
		int closed = m->closed && m->closed[b];

		for (size_t j = 0; j < h; j++) {
			uint32_t s = sa[j];

			if (t->acc[s] < 0) {
				t->acc[s] = t->acc0[s] = 0;
				t->seen[n++] = s;
			}
			t->acc[s] += y[j];
			t->acc0[s] += closed ? y[j] : nq * ns[j] / nb;
		}
	}
	sort_seen(t, n);
	for (size_t i = 0; i < n; i++) {
		t->sum[i] = t->acc[t->seen[i]];
		t->base[i] = t->acc0[t->seen[i]];
		t->acc[t->seen[i]] = t->acc0[t->seen[i]] = -1;
	}
	return n;
}

/* One term of the weighted KL sum: P(q) P(s|q) ln(P(s|q) / P*(s|q)). */
static void kl_add(double w, double p, double pstar, double *sum, int *infinite)
{
	if (pstar <= 0)
		*infinite = 1;
	else
		*sum += w * log(p / pstar);
}

/* The accuracy terms of tuple q (its n values in seen[]), from its
 * records; every value of a record is among them. */
static void tuple_accuracy(struct metrics *m, struct part *t, uint32_t q, size_t n, size_t k)
{
	double nq = m->ds->tuple_count[q], all = (double)m->ds->n_records;

	for (size_t e = m->rec_off[q]; e < m->rec_off[q + 1]; e++)
		t->cnt[m->rec_sa[e]]++;
	for (size_t i = 0; i < n; i++) {
		double c = t->cnt[t->seen[i]];

		if (!c)
			continue;
		kl_add(c / all, c / nq, t->sum[i] / nq, &m->est[k], &m->est_inf[k]);
		kl_add(c / all, c / nq, t->base[i] / nq, &m->base[k], &m->base_inf[k]);
		t->cnt[t->seen[i]] = 0;
	}
}

/* Posterior entries and accuracy terms of the tuples of chunk k, written
 * from the chunk's first slot on. */
static void tuple_chunk(struct metrics *m, struct part *t, size_t k)
{
	struct solver_result *r = m->r;
	size_t q1 = (k + 1) * CHUNK < m->ds->n_tuples ? (k + 1) * CHUNK : m->ds->n_tuples;
	size_t np = m->slot[k];

	for (size_t q = k * CHUNK; q < q1; q++) {
		double nq = m->ds->tuple_count[q];
		size_t n = gather(m, t, (uint32_t)q);

		r->post_off[q] = np;
		for (size_t i = 0; i < n; i++) {
			if (t->sum[i] > 0) {
				r->post_sa[np] = t->seen[i];
				r->post_p[np++] = t->sum[i] / nq;
			}
		}
		if (m->rec_off)
			tuple_accuracy(m, t, (uint32_t)q, n, k);
	}
	m->n_post[k] = np - m->slot[k];
}

/*
 * -sum x ln x over bucket b's cells, x = y / N. A closed-form bucket,
 * x = n(q,b) n(s,b) / (n(b) N), sums to
 *     (n(b) ln(n(b) N) - sum_q n(q,b) ln n(q,b) - sum_s n(s,b) ln n(s,b)) / N:
 * g + h table entries instead of g h logarithms.
 */
static double bucket_entropy(const struct metrics *m, size_t b)
{
	const struct dataset *ds = m->ds;
	const double *y = m->r->cells;
	double n = (double)ds->n_records, nb = ds->group_size[b], h = 0;

	if (m->closed && m->closed[b]) {
		h = nb * log(nb * n);
		for (size_t i = ds->bq_off[b]; i < ds->bq_off[b + 1]; i++)
			h -= m->klogk[ds->bq_count[i]];
		for (size_t j = ds->bs_off[b]; j < ds->bs_off[b + 1]; j++)
			h -= m->klogk[ds->bs_count[j]];
		return h / n;
	}
	for (size_t c = m->inv->cell_off[b]; c < m->inv->cell_off[b + 1]; c++) {
		double x = y[c] / n;

		if (x > 0)
			h -= x * log(x);
	}
	return h;
}

static void metrics_part(void *ctx, int p, int parts)
{
	struct metrics *m = ctx;
	const struct invariants *inv = m->inv;
	size_t lo, hi, first = inv->n_qi_rows + inv->n_sa_rows;
	double worst = 0;

	parallel_range(m->n_tc, m->slot, p, parts, &lo, &hi);
	for (size_t k = lo; k < hi; k++)
		tuple_chunk(m, &m->part[p], k);
	parallel_range(m->n_bc, NULL, p, parts, &lo, &hi);
	for (size_t k = lo; k < hi; k++) {
		size_t b1 = (k + 1) * CHUNK < inv->n_groups ? (k + 1) * CHUNK : inv->n_groups;

		for (size_t b = k * CHUNK; b < b1; b++) {
			m->entropy[k] += bucket_entropy(m, b);
			worst = max_of(worst, bucket_violation(m->ds, inv, b, m->r->cells));
		}
	}
	parallel_range(inv->n_rows - first, NULL, p, parts, &lo, &hi);
	for (size_t r = first + lo; r < first + hi; r++)
		worst = max_of(worst, row_violation(inv, r, m->r->cells));
	m->violation[p] = worst;
}

/* Moves each chunk's posterior entries down to follow the previous
 * chunk's, and adds up the chunks' sums in order. */
static void metrics_reduce(struct metrics *m)
{
	struct solver_result *r = m->r;
	size_t np = 0, nq = m->ds->n_tuples;

	for (size_t k = 0; k < m->n_tc; k++) {
		size_t from = m->slot[k], n = m->n_post[k];
		size_t q1 = (k + 1) * CHUNK < nq ? (k + 1) * CHUNK : nq;

		memmove(r->post_sa + np, r->post_sa + from, n * sizeof *r->post_sa);
		memmove(r->post_p + np, r->post_p + from, n * sizeof *r->post_p);
		for (size_t q = k * CHUNK; q < q1; q++)
			r->post_off[q] -= from - np;
		np += n;
		r->estimation_accuracy += m->est[k];
		r->baseline_accuracy += m->base[k];
		r->estimation_infinite |= m->est_inf[k];
		r->baseline_infinite |= m->base_inf[k];
	}
	r->post_off[nq] = np;
	for (size_t k = 0; k < m->n_bc; k++)
		r->entropy += m->entropy[k];
	for (int p = 0; p < m->parts; p++)
		r->max_violation = fmax(r->max_violation, m->violation[p]);
}

enum pm_status metrics_compute(const struct dataset *ds, const struct invariants *inv,
			       const uint8_t *closed, struct parallel *pool,
			       struct solver_result *r, struct pm_error *err)
{
	struct metrics m = {.ds = ds, .inv = inv, .closed = closed, .r = r};
	enum pm_status st = PM_ERR_NOMEM;

	r->post_off = malloc((ds->n_tuples + 1) * sizeof *r->post_off);
	r->post_sa = malloc((inv->n_cells + 1) * sizeof *r->post_sa);
	r->post_p = malloc((inv->n_cells + 1) * sizeof *r->post_p);
	if (!r->post_off || !r->post_sa || !r->post_p || metrics_init(&m, pool))
		goto out;
	r->has_accuracy = ds->has_ground_truth;
	r->estimation_accuracy = r->baseline_accuracy = r->entropy = r->max_violation = 0;
	r->estimation_infinite = r->baseline_infinite = 0;
	parallel_run(pool, metrics_part, &m);
	metrics_reduce(&m);
	st = PM_OK;
out:
	if (st)
		error_set(err, st, "", "out of memory computing the metrics");
	metrics_finish(&m);
	return st;
}
