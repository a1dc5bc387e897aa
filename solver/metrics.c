/*
 * What the estimate y (records) says: the posterior P*(s|q) =
 * sum_b y[q,s,b] / n(q), the entropy of x = y / N, and the estimation
 * accuracy, the weighted KL distance
 *     sum_q P(q) sum_s P(s|q) ln(P(s|q) / P*(s|q))
 * from the original records; the baseline is the same measure for the
 * no-knowledge estimate of Eq. 9, P(s|q,b) = n(s,b) / n(b); and the
 * largest violation of the rows.
 *
 * The work is two parallel passes: y summed by slot (tuple and value),
 * cell by cell, beside the buckets (entropy, invariant rows) and the
 * knowledge rows (violation); then the tuples, their posterior and
 * accuracy terms from those sums. Sums run over fixed chunks of CHUNK
 * tuples or buckets, each chunk in order, the chunks added in order: the
 * numbers do not depend on how many threads share the passes.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "loops.h"
#include "metrics.h"
#include "parallel.h"

/* Tuples or buckets per chunk of a sum. */
#define CHUNK 256
/* Counts up to this have their logarithms in tables. */
#define TABLE 4096
/* Products beyond these bounds are renormalised (frexp). */
#define PROD_HIGH 0x1p500
#define PROD_LOW  0x1p-500
/* Slots with up to this many records go into the accuracy's products
 * (kl_sums)... */
#define PROD_COUNT 3
/* ...if their sum is at least this: s^3 keeps a product above PROD_LOW
 * a normal number. */
#define PROD_TINY 0x1p-150

/* One past the last tuple (or bucket) of chunk k of n. */
static size_t chunk_end(size_t k, size_t n)
{
	return (k + 1) * CHUNK < n ? (k + 1) * CHUNK : n;
}

void metrics_closed_form(const struct dataset *ds, const struct invariants *inv, size_t b,
			 double *y)
{
	metrics_closed_cells(ds, b, y + inv->cell_off[b]);
}

void metrics_closed_cells(const struct dataset *ds, size_t b, double *y)
{
	double nb = ds->group_size[b];
	size_t h = ds->bs_off[b + 1] - ds->bs_off[b];
	const uint32_t *ns = ds->bs_count + ds->bs_off[b];

	/* Theorem 5: with no knowledge the bucket's maximum is the product of
	 * its marginals. */
	for (size_t i = ds->bq_off[b]; i < ds->bq_off[b + 1]; i++, y += h) {
		double nq = ds->bq_count[i];

		for (size_t j = 0; j < h; j++)
			y[j] = nq * ns[j] / nb;
	}
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
		worst = num_max(worst, fabs(s - nq[i]));
	}
	for (size_t j = 0; j < h; j++) {
		double s = 0;

		for (size_t i = 0; i < g; i++)
			s += yb[i * h + j];
		worst = num_max(worst, fabs(s - ns[j]));
	}
	return worst;
}

/* How far row r's sum is outside [rhs, hi] (an equality: from rhs). */
static double row_violation(const struct invariants *inv, size_t r, const double *y)
{
	double s = 0;

	for (size_t e = inv->row_off[r]; e < inv->row_off[r + 1]; e++)
		s += y[inv->row_cell[e]];
	return fmax(0, fmax(inv->rhs[r] - s, s - inv->hi[r]));
}

/* Buckets up to this many SA values have the closed form and its
 * violation in one pass. */
#define CLOSED_WIDTH 32

/*
 * Does bucket b have the counts, in order, of the memo's closed form? g
 * (or h) whole counts of at least 1 summing to n(b) = g are all 1, in the
 * memo's bucket as in b: nothing to compare (a bucket of l records with
 * l tuples and l values, as Anatomy makes most of them).
 */
static int memo_holds(const struct closed_memo *memo, const uint32_t *nq, size_t g,
		      const uint32_t *ns, size_t h, uint32_t nb)
{
	return memo->g == g && memo->h == h && memo->nb == nb &&
	       (g == nb || !memcmp(memo->count, nq, g * sizeof *nq)) &&
	       (h == nb || !memcmp(memo->count + g, ns, h * sizeof *ns));
}

/* The closed form of a bucket with counts nq (g) and ns (h) into its
 * cells y, q-major, and its violation: the sums of bucket_violation, in
 * its order, as the cells come. */
static double closed_narrow(const uint32_t *nq, size_t g, const uint32_t *ns, size_t h, double nb,
			    double *y)
{
	double cs[CLOSED_WIDTH] = {0}, worst = 0;

	for (size_t i = 0; i < g; i++) {
		double s = 0;

		for (size_t j = 0; j < h; j++) {
			y[i * h + j] = (double)nq[i] * ns[j] / nb;
			s += y[i * h + j];
			cs[j] += y[i * h + j];
		}
		worst = num_max(worst, fabs(s - nq[i]));
	}
	for (size_t j = 0; j < h; j++)
		worst = num_max(worst, fabs(cs[j] - ns[j]));
	return worst;
}

void metrics_closed_bucket(const struct dataset *ds, const struct invariants *inv, size_t b,
			   double *y, struct closed_memo *memo, double *violation)
{
	uint32_t nb = ds->group_size[b];
	size_t g = ds->bq_off[b + 1] - ds->bq_off[b], h = ds->bs_off[b + 1] - ds->bs_off[b];
	const uint32_t *nq = ds->bq_count + ds->bq_off[b], *ns = ds->bs_count + ds->bs_off[b];
	int fits = memo && g + h <= CLOSED_MEMO && g * h <= CLOSED_MEMO;

	y += inv->cell_off[b];
	if (fits && memo_holds(memo, nq, g, ns, h, nb)) {
		/* the same counts give the same numbers */
		memcpy(y, memo->y, g * h * sizeof *y);
		*violation = memo->violation;
		return;
	}
	if (h > CLOSED_WIDTH) {
		metrics_closed_form(ds, inv, b, y - inv->cell_off[b]);
		*violation = bucket_violation(ds, inv, b, y - inv->cell_off[b]);
		return;
	}
	*violation = closed_narrow(nq, g, ns, h, nb, y);
	if (fits) {
		memo->g = (uint32_t)g;
		memo->h = (uint32_t)h;
		memo->nb = nb;
		memo->violation = *violation;
		memcpy(memo->count, nq, g * sizeof *nq);
		memcpy(memo->count + g, ns, h * sizeof *ns);
		memcpy(memo->y, y, g * h * sizeof *y);
	}
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

/* One thread's scratch for a tuple: per slot, the sums of the closed
 * form. */
struct part {
	double *base;
};

struct metrics {
	const struct dataset *ds;
	const struct invariants *inv;
	const uint8_t *closed;
	double closed_violation;
	struct solver_result *r;
	/* k ln k and ln(k N) for k < top: top is 1 + the largest bucket, at
	 * most TABLE (record counts beyond it are computed) */
	double *klogk, *lnkn;
	size_t top;
	size_t n_tc, n_bc;
	/* per tuple chunk: entries written, accuracy sums */
	size_t *n_post;
	double *est, *base;
	int *est_inf, *base_inf;
	double *entropy;   /* per bucket chunk */
	double *violation; /* per part */
	struct part *part;
	int parts;
	uint8_t *open; /* per tuple: tuple_flags */
};

static enum pm_status metrics_init(struct metrics *m, struct parallel *pool)
{
	const struct dataset *ds = m->ds;
	size_t ns = ds->sa_values.n + 1, top = 1;
	double n = (double)ds->n_records;

	m->parts = parallel_parts(pool);
	m->n_tc = (ds->n_tuples + CHUNK - 1) / CHUNK;
	m->n_bc = (ds->n_groups + CHUNK - 1) / CHUNK;
	for (size_t b = 0; b < ds->n_groups; b++)
		top = ds->group_size[b] > top ? ds->group_size[b] : top;
	top = top < TABLE ? top + 1 : TABLE;
	m->klogk = malloc(2 * top * sizeof *m->klogk);
	m->n_post = calloc(m->n_tc + 1, sizeof *m->n_post);
	m->est = calloc(2 * (m->n_tc + 1), sizeof *m->est);
	m->est_inf = calloc(2 * (m->n_tc + 1), sizeof *m->est_inf);
	m->entropy = calloc(m->n_bc + 1, sizeof *m->entropy);
	m->violation = calloc((size_t)m->parts, sizeof *m->violation);
	m->part = calloc((size_t)m->parts, sizeof *m->part);
	m->open = malloc(ds->n_tuples + 1);
	if (!m->open || !m->klogk || !m->n_post || !m->est || !m->est_inf || !m->entropy ||
	    !m->violation || !m->part)
		return PM_ERR_NOMEM;
	m->base = m->est + m->n_tc + 1;
	m->base_inf = m->est_inf + m->n_tc + 1;
	m->top = top;
	m->lnkn = m->klogk + top;
	m->klogk[0] = m->lnkn[0] = 0;
	for (size_t k = 1; k < top; k++) {
		m->klogk[k] = (double)k * log((double)k);
		m->lnkn[k] = log((double)k * n);
	}
	for (int p = 0; p < m->parts; p++) {
		m->part[p].base = malloc(ns * sizeof *m->part[p].base);
		if (!m->part[p].base)
			return PM_ERR_NOMEM;
	}
	return PM_OK;
}

static void metrics_finish(struct metrics *m)
{
	for (int p = 0; m->part && p < m->parts; p++)
		free(m->part[p].base);
	free(m->part);
	free(m->open);
	free(m->klogk);
	free(m->n_post);
	free(m->est);
	free(m->est_inf);
	free(m->entropy);
	free(m->violation);
}

/* Marks the tuples with a row in a bucket not in the closed form (every
 * tuple when nothing is): the others have the closed form's sums, their
 * estimate is the baseline. A pass over the few such buckets' rows
 * instead of one over each tuple's buckets. */
static void tuple_flags(struct metrics *m)
{
	const struct dataset *ds = m->ds;

	memset(m->open, !m->closed, ds->n_tuples);
	for (size_t b = 0; m->closed && b < ds->n_groups; b++)
		if (!m->closed[b])
			for (size_t i = ds->bq_off[b]; i < ds->bq_off[b + 1]; i++)
				m->open[ds->bq_tuple[i]] = 1;
}

/*
 * The closed form of Theorem 5 summed over tuple q's cells by slot: the
 * baseline's P*(s|q) n(q). Its buckets in the closed form have it in y
 * already (sum, the estimate's sums), so those are taken as they are and
 * only the open ones corrected, in bucket order: a tuple is open through
 * a few of its buckets, and most of its cells are in closed ones.
 */
static void tuple_base(const struct metrics *m, struct part *t, size_t q, const double *sum)
{
	const struct invariants *inv = m->inv;
	const struct dataset *ds = m->ds;
	size_t s0 = inv->slot_off[q];

	for (size_t i = 0; i < inv->slot_off[q + 1] - s0; i++)
		t->base[i] = sum[i];
	for (size_t o = inv->occ_off[q]; o < inv->occ_off[q + 1]; o++) {
		size_t b = inv->occ_bucket[o], h = inv->bucket_h[b];
		const uint32_t *slot = inv->cell_slot + inv->occ_cell[o],
			       *ns = ds->bs_count + ds->bs_off[b];
		const double *y = m->r->cells + inv->occ_cell[o];
		double w = inv->occ_count[o] / inv->bucket_n[b];

		if (m->closed && m->closed[b])
			continue;
		for (size_t j = 0; j < h; j++)
			t->base[slot[j] - s0] += w * ns[j] - y[j];
	}
}

/*
 * One chunk's accuracy sums, kept on the stack of the thread that does
 * the chunk and stored once: chunks side by side in memory, done by
 * different threads, would otherwise fight over cache lines. A slot with
 * c records and sum s adds (c ln c - c ln s) / N; the c ln c are shared
 * by both sums, the c ln s gathered as products of s^c (times 2^pexp),
 * one logarithm per chunk, except for c > PROD_COUNT or tiny s. Side 0
 * is in both sums (tuples whose estimate is the baseline), 1 in the
 * estimate's only, 2 in the baseline's only.
 */
struct kl_sums {
	double clogc;
	double lns[3], prod[3];
	int pexp[3], inf[3];
};

static void kl_renorm(struct kl_sums *sk, int side)
{
	if (sk->prod[side] > PROD_HIGH || sk->prod[side] < PROD_LOW) {
		int e;

		sk->prod[side] = frexp(sk->prod[side], &e);
		sk->pexp[side] += e;
	}
}

/* c ln s of a slot with c > 0 records into a side; s = 0 makes it
 * infinite (P(s|q) > 0 = P*(s|q)). */
static void kl_term(uint32_t c, double s, struct kl_sums *sk, int side)
{
	if (!(s > 0)) {
		sk->inf[side] = 1;
		return;
	}
	if (c > PROD_COUNT || s < PROD_TINY) {
		sk->lns[side] += c * log(s);
		return;
	}
	for (uint32_t i = 0; i < c; i++)
		sk->prod[side] *= s;
	kl_renorm(sk, side);
}

static double klogk(const struct metrics *m, uint32_t k)
{
	return k < m->top ? m->klogk[k] : k * log((double)k);
}

/* The terms of tuple q's slots with records, se and sb its sums (from its
 * first slot on): side 0 if they are one (se == sb), else 1 and 2. */
static void record_terms(const struct metrics *m, size_t q, const double *se, const double *sb,
			 struct kl_sums *sk)
{
	const struct invariants *inv = m->inv;
	size_t s0 = inv->slot_off[q];

	for (size_t e = inv->rec_off[q]; e < inv->rec_off[q + 1]; e++) {
		uint32_t c = inv->rec_count[e];
		size_t at = inv->rec_slot[e] - s0;

		sk->clogc += klogk(m, c);
		if (se == sb) {
			kl_term(c, se[at], sk, 0);
			continue;
		}
		kl_term(c, se[at], sk, 1);
		kl_term(c, sb[at], sk, 2);
	}
}

/* Tuple q's accuracy terms, sum its slot sums. A closed-form tuple of one
 * record (most of them) is one factor of side 0's product: its sum is at
 * least 1 / n(b), whole counts over one bucket's size, and 1 ln 1 = 0. */
static void tuple_accuracy(const struct metrics *m, struct part *t, size_t q, const double *sum,
			   struct kl_sums *sk)
{
	const struct invariants *inv = m->inv;

	if (m->open[q]) {
		tuple_base(m, t, q, sum);
		record_terms(m, q, sum, t->base, sk);
	} else if (m->ds->tuple_count[q] == 1) {
		sk->prod[0] *= sum[inv->rec_slot[inv->rec_off[q]] - inv->slot_off[q]];
		kl_renorm(sk, 0);
	} else {
		record_terms(m, q, sum, sum, sk);
	}
}

/* Chunk k's sums, from the sides' logarithms. */
static void kl_store(struct metrics *m, const struct kl_sums *sk, size_t k)
{
	double all = (double)m->ds->n_records, side[3];

	for (int i = 0; i < 3; i++)
		side[i] = sk->lns[i] + log(sk->prod[i]) + sk->pexp[i] * M_LN2;
	m->est[k] = (sk->clogc - side[0] - side[1]) / all;
	m->base[k] = (sk->clogc - side[0] - side[2]) / all;
	m->est_inf[k] = sk->inf[0] | sk->inf[1];
	m->base_inf[k] = sk->inf[0] | sk->inf[2];
}

/*
 * Sums y by slot into post_p, cell by cell: a slot's cells come in bucket
 * order. y and the slots are read in order, the
 * sums (one per slot, 8 bytes each) stay in cache, where going tuple by
 * tuple reads each row of y at a place of its own.
 */
static void slot_sums(struct metrics *m)
{
	const struct invariants *inv = m->inv;
	const double *y = m->r->cells;
	double *sum = m->r->post_p;

	memset(sum, 0, inv->slot_off[m->ds->n_tuples] * sizeof *sum);
	for (size_t c = 0; c < inv->n_cells; c++)
		sum[inv->cell_slot[c]] += y[c];
}

/* Tuple q's posterior entries from its sums (which may be where they go:
 * entries never move up), at *np on. */
static void tuple_posterior(struct metrics *m, size_t q, const double *sum, size_t *np)
{
	const struct invariants *inv = m->inv;
	size_t s0 = inv->slot_off[q], n = inv->slot_off[q + 1] - s0, e = *np;
	const uint32_t *sa = inv->slot_sa + s0;
	uint32_t *post_sa = m->r->post_sa;
	double *post_p = m->r->post_p, nq = m->ds->tuple_count[q];

	/* written whether kept or not (the next entry goes over it), so that
	 * no branch depends on the sums */
	for (size_t i = 0; i < n; i++) {
		double p = sum[i];

		post_sa[e] = sa[i];
		post_p[e] = nq == 1 ? p : p / nq; /* most tuples: one record */
		e += p > 0;
	}
	*np = e;
}

/*
 * Posterior entries and accuracy terms of the tuples of chunk k, written
 * from the chunk's first slot on (at most one entry per slot) over the
 * slot sums of slot_sums, each tuple's read before its entries are
 * written. The baseline is summed here for the tuples with an open
 * bucket (tuple_flags); the others need nothing else.
 */
static void tuple_chunk(struct metrics *m, struct part *t, size_t k)
{
	const struct invariants *inv = m->inv;
	size_t q1 = chunk_end(k, m->ds->n_tuples), np = inv->slot_off[k * CHUNK];
	struct kl_sums sk = {.prod = {1, 1, 1}};

	for (size_t q = k * CHUNK; q < q1; q++) {
		const double *sum = m->r->post_p + inv->slot_off[q];

		m->r->post_off[q] = np;
		if (m->ds->has_ground_truth)
			tuple_accuracy(m, t, q, sum, &sk);
		tuple_posterior(m, q, sum, &np);
	}
	m->n_post[k] = np - inv->slot_off[k * CHUNK];
	kl_store(m, &sk, k);
}

/*
 * -sum x ln x over bucket b's cells, x = y / N. A closed-form bucket,
 * x = n(q,b) n(s,b) / (n(b) N), sums to
 *     (n(b) ln(n(b) N) - sum_q n(q,b) ln n(q,b) - sum_s n(s,b) ln n(s,b)) / N:
 * g + h table entries instead of g h logarithms.
 */
static double bucket_entropy(const struct metrics *m, size_t b, int closed)
{
	const struct dataset *ds = m->ds;
	const double *y = m->r->cells;
	uint32_t nb = ds->group_size[b];
	double n = (double)ds->n_records, h = 0;

	if (closed) {
		h = nb * (nb < m->top ? m->lnkn[nb] : log(nb * n));
		for (size_t i = ds->bq_off[b]; i < ds->bq_off[b + 1]; i++)
			h -= klogk(m, ds->bq_count[i]);
		for (size_t j = ds->bs_off[b]; j < ds->bs_off[b + 1]; j++)
			h -= klogk(m, ds->bs_count[j]);
		return h / n;
	}
	for (size_t c = m->inv->cell_off[b]; c < m->inv->cell_off[b + 1]; c++) {
		double x = y[c] / n;

		if (x > 0)
			h -= x * log(x);
	}
	return h;
}

/* Item k of the first pass: the slot sums, the tuples' flags, then bucket
 * chunks, then chunks of knowledge rows; violations go to the part's
 * maximum (any order gives the same maximum). */
static void metrics_item(void *ctx, size_t k, int p)
{
	struct metrics *m = ctx;
	const struct invariants *inv = m->inv;
	size_t first = inv->n_qi_rows + inv->n_sa_rows;
	double worst = m->violation[p];

	if (k < 2) {
		(k ? tuple_flags : slot_sums)(m);
		return;
	}
	k -= 2;
	if (k < m->n_bc) {
		double h = 0;

		for (size_t b = k * CHUNK; b < chunk_end(k, inv->n_groups); b++) {
			int closed = m->closed && m->closed[b];

			h += bucket_entropy(m, b, closed);
			if (!closed)
				worst =
				    num_max(worst, bucket_violation(m->ds, inv, b, m->r->cells));
		}
		m->entropy[k] = h;
	} else {
		size_t r1 = first + (k - m->n_bc + 1) * CHUNK;

		for (size_t r = first + (k - m->n_bc) * CHUNK; r < r1 && r < inv->n_rows; r++)
			worst = num_max(worst, row_violation(inv, r, m->r->cells));
	}
	m->violation[p] = worst;
}

/* Item k of the second pass: tuple chunk k. */
static void tuple_item(void *ctx, size_t k, int p)
{
	struct metrics *m = ctx;

	tuple_chunk(m, &m->part[p], k);
}

/* Moves each chunk's posterior entries down to follow the previous
 * chunk's, and adds up the chunks' sums in order. */
static void metrics_reduce(struct metrics *m)
{
	struct solver_result *r = m->r;
	size_t np = 0, nq = m->ds->n_tuples;

	for (size_t k = 0; k < m->n_tc; k++) {
		size_t from = m->inv->slot_off[k * CHUNK], n = m->n_post[k];
		size_t q1 = chunk_end(k, nq);

		/* in place until the first chunk with a zero in its posterior */
		if (from != np) {
			memmove(r->post_sa + np, r->post_sa + from, n * sizeof *r->post_sa);
			memmove(r->post_p + np, r->post_p + from, n * sizeof *r->post_p);
			for (size_t q = k * CHUNK; q < q1; q++)
				r->post_off[q] -= from - np;
		}
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
			       const uint8_t *closed, double closed_violation,
			       struct parallel *pool, struct solver_result *r, struct pm_error *err)
{
	struct metrics m = {
	    .ds = ds, .inv = inv, .closed = closed, .closed_violation = closed_violation, .r = r};
	enum pm_status st = PM_ERR_NOMEM;

	r->post_off = malloc((ds->n_tuples + 1) * sizeof *r->post_off);
	r->post_sa = malloc((inv->slot_off[ds->n_tuples] + 1) * sizeof *r->post_sa);
	r->post_p = malloc((inv->slot_off[ds->n_tuples] + 1) * sizeof *r->post_p);
	if (!r->post_off || !r->post_sa || !r->post_p || metrics_init(&m, pool))
		goto out;
	r->has_accuracy = ds->has_ground_truth;
	r->estimation_accuracy = r->baseline_accuracy = r->entropy = 0;
	r->max_violation = closed ? closed_violation : 0;
	r->estimation_infinite = r->baseline_infinite = 0;
	/* the slot sums first (with the buckets' and rows' items), then the
	 * tuples that read them */
	parallel_items(pool, 2 + m.n_bc + (inv->n_knowledge_rows + CHUNK - 1) / CHUNK, metrics_item,
		       &m);
	parallel_items(pool, m.n_tc, tuple_item, &m);
	metrics_reduce(&m);
	st = PM_OK;
out:
	if (st)
		error_set(err, st, "", "out of memory computing the metrics");
	metrics_finish(&m);
	return st;
}

/*
 * With an interval rule among the knowledge, each rule's left-hand side
 * at the solution and the bound that holds it: within the tolerance (in
 * records) of min or max; an equality is held by its value. Rules whose
 * row has no record (n(Qv) = 0) achieve 0.
 */
enum pm_status metrics_achieved(const struct knowledge *k, const struct invariants *inv,
				double tolerance, struct solver_result *r)
{
	if (!k || !k->n || (invariants_first_interval(inv) == inv->n_rows && !lifted_needed(k)))
		return PM_OK;
	r->achieved = calloc(k->n + 1, sizeof *r->achieved);
	r->binding = calloc(k->n + 1, 1);
	if (!r->achieved || !r->binding)
		return PM_ERR_NOMEM;
	for (size_t row = inv->n_qi_rows + inv->n_sa_rows; row < inv->n_rows; row++) {
		const struct rule *rule = &k->rules[inv->row_ref[row]];
		double s = 0, lo = inv->rhs[row], hi = inv->hi[row];

		for (size_t e = inv->row_off[row]; e < inv->row_off[row + 1]; e++)
			s += r->cells[inv->row_cell[e]];
		r->achieved[inv->row_ref[row]] = rule->n_qv ? s / (double)rule->n_qv : 0;
		r->binding[inv->row_ref[row]] = hi == lo		    ? SOLVER_BINDING_VALUE
						: fabs(s - lo) <= tolerance ? SOLVER_BINDING_MIN
						: fabs(s - hi) <= tolerance ? SOLVER_BINDING_MAX
									    : SOLVER_BINDING_NONE;
	}
	return PM_OK;
}
