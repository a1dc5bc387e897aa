/*
 * Top-(K+, K-) association rules Qv => s and Qv => not s (SPEC section 2).
 *
 * Antecedents are enumerated depth-first over attribute subsets in
 * increasing attribute order, so the groups of a subset S + {a} are the
 * groups of S refined by attribute a: each distinct tuple q carries its group
 * id at every depth and one open-addressing lookup of (parent group, code)
 * gives the child group. Groups smaller than min_support can never yield a
 * rule (both supports are <= n(Qv)), so they are marked dead and their whole
 * subtree is skipped. Per subset, the distinct (q, s) pairs of the records are
 * counting-sorted by group to get n(Qv, s). Candidates go to two bounded heaps
 * (worst rule at the root), so memory is O(|Q| * depth + K) and a candidate
 * that does not beat the root is rejected in O(1).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "constraints.h"

#define DEAD  UINT32_MAX /* group id of a tuple in a group below min_support */
#define EMPTY UINT32_MAX /* free hash slot */

/* A candidate rule. Confidence is num/den with den = n(Qv); the support of
 * both kinds equals num (n(Qv,s) for positive, n(Qv) - n(Qv,s) for negative).
 * The antecedent is the attributes of mask with the values of tuple q. */
struct cand {
	uint64_t num, den;
	uint32_t mask, q, s;
};

/* Bounded heap of the best k candidates, worst at the root. */
struct heap {
	struct cand *v;
	size_t n, cap, k;
};

struct miner {
	const struct dataset *ds;
	size_t na, nq, ns, t;
	uint64_t min_support;
	const uint32_t *tuples;
	/* distinct (q, s) of the records with their counts */
	size_t n_pairs;
	uint32_t *pair_q, *pair_s, *pair_c;
	uint32_t *gid; /* (na + 1) * nq: group of tuple q at each depth */
	/* hash table over (parent group, code) and per-group data */
	uint32_t *table;
	unsigned table_bits;
	uint32_t *key_parent, *key_code, *rep;
	uint64_t *gn;
	size_t *gend;	 /* counting sort of pairs by group: end of each group */
	uint32_t *order; /* pair indices, grouped */
	uint64_t *cnt;	 /* n(Qv, s) scratch, all zero between groups */
	uint32_t *touched;
	struct heap pos, neg;
	/* the caller's stop (miner_options), and the attribute sets so far */
	int (*stop)(void *ctx);
	void *stop_ctx;
	uint64_t sets;
};

/* Canonical antecedent order: (attribute, value) pairs by increasing
 * attribute, compared pair by pair; a proper prefix first. Value codes are
 * in bytewise order, so codes compare like values. */
static int antecedent_cmp(const struct miner *m, const struct cand *a, const struct cand *b)
{
	const uint32_t *ta = m->tuples + (size_t)a->q * m->na;
	const uint32_t *tb = m->tuples + (size_t)b->q * m->na;
	uint32_t ma = a->mask, mb = b->mask;

	while (ma && mb) {
		int ia = __builtin_ctz(ma), ib = __builtin_ctz(mb);

		if (ia != ib)
			return ia < ib ? -1 : 1;
		if (ta[ia] != tb[ia])
			return ta[ia] < tb[ia] ? -1 : 1;
		ma &= ma - 1;
		mb &= mb - 1;
	}
	if (ma == mb)
		return 0;
	return ma ? 1 : -1;
}

/* < 0 when a ranks before b. Confidences compare exactly: counts are below
 * 2^32, so the cross products fit in 64 bits. */
static int cand_cmp(const struct miner *m, const struct cand *a, const struct cand *b)
{
	uint64_t l = a->num * b->den, r = b->num * a->den;
	int c;

	if (l != r)
		return l > r ? -1 : 1;
	if (a->num != b->num)
		return a->num > b->num ? -1 : 1;
	c = antecedent_cmp(m, a, b);
	if (c)
		return c;
	if (a->s != b->s)
		return a->s < b->s ? -1 : 1;
	return 0;
}

static void sift_down(const struct miner *m, struct cand *v, size_t n, size_t i)
{
	struct cand x = v[i];

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && cand_cmp(m, &v[c + 1], &v[c]) > 0)
			c++;
		if (cand_cmp(m, &v[c], &x) <= 0)
			break;
		v[i] = v[c];
		i = c;
	}
	v[i] = x;
}

static void sift_up(const struct miner *m, struct cand *v, size_t i)
{
	struct cand x = v[i];

	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (cand_cmp(m, &v[p], &x) >= 0)
			break;
		v[i] = v[p];
		i = p;
	}
	v[i] = x;
}

/* Offers c to h. Returns 1 if kept, 0 if it ranks no better than the k-th
 * best so far, -1 when out of memory. The heap grows lazily so that a huge
 * K costs nothing until that many candidates exist. */
static int heap_offer(const struct miner *m, struct heap *h, const struct cand *c)
{
	if (h->n < h->k) {
		if (h->n == h->cap) {
			size_t cap = h->cap ? 2 * h->cap : 64;
			struct cand *v;

			if (cap > h->k)
				cap = h->k;
			v = realloc(h->v, cap * sizeof *v);
			if (!v)
				return -1;
			h->v = v;
			h->cap = cap;
		}
		h->v[h->n] = *c;
		sift_up(m, h->v, h->n++);
		return 1;
	}
	if (h->k == 0 || cand_cmp(m, c, &h->v[0]) >= 0)
		return 0;
	h->v[0] = *c;
	sift_down(m, h->v, h->n, 0);
	return 1;
}

/* Heapsort in place: afterwards v[0 .. n) is best first. */
static void heap_sort(const struct miner *m, struct heap *h)
{
	for (size_t n = h->n; n > 1; n--) {
		struct cand t = h->v[0];

		h->v[0] = h->v[n - 1];
		h->v[n - 1] = t;
		sift_down(m, h->v, n - 1, 0);
	}
}

/* Offers the rules of one antecedent group: n = n(Qv), rep a tuple of it,
 * pairs order[lo .. hi). */
static int offer_group(struct miner *m, uint32_t mask, uint32_t rep, uint64_t n, size_t lo,
		       size_t hi)
{
	uint64_t ms = m->min_support;
	size_t nt = 0;
	int rc = 0, more_pos, more_neg;

	for (size_t i = lo; i < hi; i++) {
		uint32_t p = m->order[i], s = m->pair_s[p];

		if (m->cnt[s] == 0)
			m->touched[nt++] = s;
		m->cnt[s] += m->pair_c[p];
	}
	for (size_t i = 0; i < nt && rc >= 0; i++) {
		uint32_t s = m->touched[i];
		uint64_t c = m->cnt[s];
		struct cand pc = {c, n, mask, rep, s}, nc = {n - c, n, mask, rep, s};

		if (c >= ms)
			rc = heap_offer(m, &m->pos, &pc);
		if (rc >= 0 && n - c >= ms)
			rc = heap_offer(m, &m->neg, &nc);
	}
	/* s absent from Qv: negative confidence 1 and support n; positive (only
	 * with min_support 0) confidence 0. Within the group these differ only
	 * by s, so the first rejection ends each kind. */
	more_pos = ms == 0;
	more_neg = n >= ms;
	for (uint32_t s = 0; s < m->ns && (more_pos || more_neg) && rc >= 0; s++) {
		struct cand pc = {0, n, mask, rep, s}, nc = {n, n, mask, rep, s};

		if (m->cnt[s])
			continue;
		if (more_pos)
			more_pos = rc = heap_offer(m, &m->pos, &pc);
		if (more_neg && rc >= 0)
			more_neg = rc = heap_offer(m, &m->neg, &nc);
	}
	for (size_t i = 0; i < nt; i++)
		m->cnt[m->touched[i]] = 0;
	return rc < 0 ? -1 : 0;
}

/* Offers every rule whose antecedent uses exactly the attributes of mask;
 * groups at depth d (G of them) are in gid[d]. */
static int collect(struct miner *m, size_t d, uint32_t n_groups, uint32_t mask)
{
	const uint32_t *g = m->gid + d * m->nq;
	size_t lo = 0;

	memset(m->gend, 0, (n_groups + 1) * sizeof *m->gend);
	for (size_t p = 0; p < m->n_pairs; p++)
		if (g[m->pair_q[p]] != DEAD)
			m->gend[g[m->pair_q[p]] + 1]++;
	for (uint32_t i = 0; i < n_groups; i++)
		m->gend[i + 1] += m->gend[i];
	/* placing through gend[g] leaves gend[g] at the end of group g */
	for (size_t p = 0; p < m->n_pairs; p++)
		if (g[m->pair_q[p]] != DEAD)
			m->order[m->gend[g[m->pair_q[p]]]++] = (uint32_t)p;
	for (uint32_t i = 0; i < n_groups; i++) {
		size_t hi = m->gend[i];

		if (m->gn[i] >= m->min_support && hi > lo &&
		    offer_group(m, mask, m->rep[i], m->gn[i], lo, hi) < 0)
			return -1;
		lo = hi;
	}
	return 0;
}

static uint32_t hash_pair(uint32_t parent, uint32_t code, unsigned bits)
{
	uint64_t k = ((uint64_t)parent << 32 | code) * UINT64_C(0x9E3779B97F4A7C15);

	return (uint32_t)(k >> (64 - bits));
}

/* Groups of subset S + {a} from those of S (depth d) into depth d + 1;
 * returns the number of groups (dead ones included), *live the live ones. */
static uint32_t project(struct miner *m, size_t d, size_t a, uint32_t *live)
{
	const uint32_t *pg = m->gid + d * m->nq;
	uint32_t *cg = m->gid + (d + 1) * m->nq, n_groups = 0, tmask;

	tmask = (UINT32_C(1) << m->table_bits) - 1;
	memset(m->table, 0xff, ((size_t)tmask + 1) * sizeof *m->table);
	for (size_t q = 0; q < m->nq; q++) {
		uint32_t code = m->tuples[q * m->na + a], h, gi;

		if (pg[q] == DEAD) {
			cg[q] = DEAD;
			continue;
		}
		h = hash_pair(pg[q], code, m->table_bits);
		while ((gi = m->table[h]) != EMPTY &&
		       (m->key_parent[gi] != pg[q] || m->key_code[gi] != code))
			h = (h + 1) & tmask;
		if (gi == EMPTY) {
			gi = m->table[h] = n_groups++;
			m->key_parent[gi] = pg[q];
			m->key_code[gi] = code;
			m->rep[gi] = (uint32_t)q;
			m->gn[gi] = 0;
		}
		m->gn[gi] += m->ds->tuple_count[q];
		cg[q] = gi;
	}
	*live = 0;
	for (uint32_t i = 0; i < n_groups; i++)
		*live += m->gn[i] >= m->min_support;
	for (size_t q = 0; q < m->nq; q++)
		if (cg[q] != DEAD && m->gn[cg[q]] < m->min_support)
			cg[q] = DEAD;
	return n_groups;
}

/* Attribute sets projected between two polls of the stop callback: each
 * is a pass over the tuples. */
#define STOP_EVERY 64

/* Extends subset mask (depth d, largest attribute below first) by each
 * attribute a >= first. Returns -1 when out of memory, -2 when stopped. */
static int dfs(struct miner *m, size_t d, uint32_t mask, size_t first)
{
	for (size_t a = first; a < m->na; a++) {
		uint32_t child = mask | UINT32_C(1) << a, live, n_groups;
		int rc;

		if (m->stop && ++m->sets % STOP_EVERY == 0 && m->stop(m->stop_ctx))
			return -2;

		/* with T fixed, the attributes left must still reach T */
		if (m->t && d + 1 + (m->na - a - 1) < m->t)
			break;
		n_groups = project(m, d, a, &live);
		if (live == 0)
			continue;
		if ((!m->t || d + 1 == m->t) && collect(m, d + 1, n_groups, child) < 0)
			return -1;
		if ((!m->t || d + 1 < m->t) && (rc = dfs(m, d + 1, child, a + 1)) < 0)
			return rc;
	}
	return 0;
}

/* Distinct (q, s) pairs of the records with counts, via a counting sort of
 * the records by tuple; cnt/touched are the scratch of the miner. */
static int build_pairs(struct miner *m)
{
	const struct dataset *ds = m->ds;
	size_t *start = calloc(m->nq + 1, sizeof *start);
	uint32_t *recs = malloc((ds->n_records ? ds->n_records : 1) * sizeof *recs);
	int rc = -1;

	if (!start || !recs)
		goto out;
	for (size_t i = 0; i < ds->n_records; i++)
		start[ds->rec_tuple[i] + 1]++;
	for (size_t q = 0; q < m->nq; q++)
		start[q + 1] += start[q];
	for (size_t i = 0; i < ds->n_records; i++)
		recs[start[ds->rec_tuple[i]]++] = (uint32_t)i;
	for (size_t q = 0, lo = 0; q < m->nq; lo = start[q++]) {
		size_t nt = 0;

		for (size_t i = lo; i < start[q]; i++) {
			uint32_t s = ds->rec_sa[recs[i]];

			if (m->cnt[s]++ == 0)
				m->touched[nt++] = s;
		}
		for (size_t i = 0; i < nt; i++) {
			uint32_t s = m->touched[i];

			m->pair_q[m->n_pairs] = (uint32_t)q;
			m->pair_s[m->n_pairs] = s;
			m->pair_c[m->n_pairs++] = (uint32_t)m->cnt[s];
			m->cnt[s] = 0;
		}
	}
	rc = 0;
out:
	free(start);
	free(recs);
	return rc;
}

static int miner_alloc(struct miner *m)
{
	size_t nq = m->nq ? m->nq : 1, nr = m->ds->n_records ? m->ds->n_records : 1;
	size_t ns = m->ns ? m->ns : 1;

	m->table_bits = 4;
	while (((size_t)1 << m->table_bits) < 2 * nq)
		m->table_bits++;
	m->pair_q = malloc(nr * sizeof *m->pair_q);
	m->pair_s = malloc(nr * sizeof *m->pair_s);
	m->pair_c = malloc(nr * sizeof *m->pair_c);
	m->order = malloc(nr * sizeof *m->order);
	m->gid = calloc((m->na + 1) * nq, sizeof *m->gid);
	m->table = malloc(((size_t)1 << m->table_bits) * sizeof *m->table);
	m->key_parent = malloc(nq * sizeof *m->key_parent);
	m->key_code = malloc(nq * sizeof *m->key_code);
	m->rep = malloc(nq * sizeof *m->rep);
	m->gn = malloc(nq * sizeof *m->gn);
	m->gend = malloc((nq + 1) * sizeof *m->gend);
	m->cnt = calloc(ns, sizeof *m->cnt);
	m->touched = malloc(ns * sizeof *m->touched);
	if (!m->pair_q || !m->pair_s || !m->pair_c || !m->order || !m->gid || !m->table ||
	    !m->key_parent || !m->key_code || !m->rep || !m->gn || !m->gend || !m->cnt ||
	    !m->touched)
		return -1;
	return 0;
}

static void miner_free(struct miner *m)
{
	free(m->pair_q);
	free(m->pair_s);
	free(m->pair_c);
	free(m->order);
	free(m->gid);
	free(m->table);
	free(m->key_parent);
	free(m->key_code);
	free(m->rep);
	free(m->gn);
	free(m->gend);
	free(m->cnt);
	free(m->touched);
	free(m->pos.v);
	free(m->neg.v);
}

/* Appends the heap's rules, best first, as knowledge rows. */
static enum pm_status emit(const struct miner *m, const struct heap *h, enum rule_source src,
			   double vagueness, struct knowledge *out, struct pm_error *err)
{
	for (size_t i = 0; i < h->n; i++) {
		const struct cand *c = &h->v[i];
		struct rule r;
		enum pm_status st;

		memset(&r, 0, sizeof r);
		for (uint32_t mask = c->mask; mask; mask &= mask - 1) {
			uint32_t a = (uint32_t)__builtin_ctz(mask);

			r.attr[r.n_terms] = a;
			r.value[r.n_terms++] = m->tuples[(size_t)c->q * m->na + a];
		}
		r.sa = c->s;
		r.source = src;
		r.support = c->num;
		r.n_qv = c->den;
		r.n_qv_s = src == RULE_POSITIVE ? c->num : c->den - c->num;
		r.lo = r.hi = (double)r.n_qv_s / (double)r.n_qv;
		if (vagueness > 0) {
			r.lo = fmax(0, r.lo - vagueness);
			r.hi = fmin(1, r.hi + vagueness);
		}
		st = knowledge_append(out, &r, err);
		if (st)
			return st;
	}
	return PM_OK;
}

void miner_options_init(struct miner_options *o)
{
	o->positive = 0;
	o->negative = 0;
	o->min_support = 3;
	o->qi_attributes = 0;
	o->vagueness = 0;
	o->stop = NULL;
	o->stop_ctx = NULL;
}

enum pm_status miner_run_counted(const struct dataset *ds, const struct miner_options *o,
				 struct knowledge *out, struct miner_found *found,
				 struct pm_error *err)
{
	struct miner m;
	enum pm_status st = PM_OK;
	int rc = 0;

	if (found)
		*found = (struct miner_found){0, 0};
	if (!ds->has_ground_truth)
		return error_set(err, PM_ERR_INPUT, "mine",
				 "mining needs the original records (records form); this "
				 "dataset is published form");
	if (o->qi_attributes > ds->n_attrs)
		return error_set(err, PM_ERR_INPUT, "mine.qi_attributes",
				 "is %zu, but the dataset has only %zu QI attributes",
				 o->qi_attributes, ds->n_attrs);
	if ((o->positive == 0 && o->negative == 0) || ds->n_records == 0)
		return PM_OK;
	memset(&m, 0, sizeof m);
	m.ds = ds;
	m.na = ds->n_attrs;
	m.nq = ds->n_tuples;
	m.ns = ds->sa_values.n;
	m.t = o->qi_attributes;
	m.min_support = o->min_support;
	m.tuples = ds->tuples;
	m.pos.k = o->positive;
	m.neg.k = o->negative;
	m.stop = o->stop;
	m.stop_ctx = o->stop_ctx;
	if (miner_alloc(&m) < 0 || build_pairs(&m) < 0 || (rc = dfs(&m, 0, 0, 0)) == -1) {
		st = error_set(err, PM_ERR_NOMEM, "mine", "out of memory while mining rules");
		goto out;
	}
	if (rc == -2) {
		st = error_set(err, PM_ERR_CANCELLED, "mine", "mining was stopped");
		goto out;
	}
	heap_sort(&m, &m.pos);
	heap_sort(&m, &m.neg);
	st = emit(&m, &m.pos, RULE_POSITIVE, o->vagueness, out, err);
	if (!st)
		st = emit(&m, &m.neg, RULE_NEGATIVE, o->vagueness, out, err);
	/* the heaps hold every rule that qualified, up to K */
	if (!st && found)
		*found = (struct miner_found){m.pos.n, m.neg.n};
out:
	miner_free(&m);
	return st;
}

enum pm_status miner_run(const struct dataset *ds, const struct miner_options *o,
			 struct knowledge *out, struct pm_error *err)
{
	return miner_run_counted(ds, o, out, NULL, err);
}
