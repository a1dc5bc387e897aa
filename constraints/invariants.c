/*
 * The linear system of Section 5: QI- and SA-invariants per bucket (one SA
 * row dropped per bucket, the conciseness theorem), zero-invariants by
 * giving variables only to (q,s,b) with q and s present in b, and one row
 * per knowledge rule P(s|Qv) = c:  sum_{b, q ~ Qv} y[q,s,b] = c n(Qv).
 * Everything is in records (y = N P), so right-hand sides are counts.
 */
#include <stdlib.h>
#include <string.h>

#include "constraints.h"

/* Per QI value, the tuples holding it (ascending), so a rule scans the
 * shortest list of its terms instead of every tuple. */

/* Per-bucket layout: widths, first rows, sizes. */
static enum pm_status build_bucket_layout(const struct dataset *ds, struct invariants *inv)
{
	size_t nb = ds->n_groups, qi = 0, sa = inv->n_qi_rows;

	inv->bucket_h = malloc((nb + 1) * sizeof *inv->bucket_h);
	inv->qi_row0 = malloc((nb + 1) * sizeof *inv->qi_row0);
	inv->sa_row0 = malloc((nb + 1) * sizeof *inv->sa_row0);
	inv->bucket_n = malloc((nb + 1) * sizeof *inv->bucket_n);
	inv->sa_last = malloc((nb + 1) * sizeof *inv->sa_last);
	if (!inv->bucket_h || !inv->qi_row0 || !inv->sa_row0 || !inv->bucket_n || !inv->sa_last)
		return PM_ERR_NOMEM;
	for (size_t b = 0; b < nb; b++) {
		size_t g = ds->bq_off[b + 1] - ds->bq_off[b], h = ds->bs_off[b + 1] - ds->bs_off[b];

		inv->bucket_h[b] = (uint32_t)h;
		inv->qi_row0[b] = qi;
		inv->sa_row0[b] = sa;
		inv->bucket_n[b] = ds->group_size[b];
		inv->sa_last[b] = h ? ds->bs_count[ds->bs_off[b + 1] - 1] : 0;
		qi += g;
		sa += h - 1;
	}
	inv->qi_row0[nb] = qi;
	inv->sa_row0[nb] = sa;
	return PM_OK;
}

/* Where each tuple occurs: its row in each bucket, ascending bucket. */
static enum pm_status build_occurrences(const struct dataset *ds, struct invariants *inv)
{
	size_t n = ds->bq_off[ds->n_groups], nq = ds->n_tuples;

	inv->occ_off = calloc(nq + 2, sizeof *inv->occ_off);
	inv->occ_bucket = malloc((n + 1) * sizeof *inv->occ_bucket);
	inv->occ_cell = malloc((n + 1) * sizeof *inv->occ_cell);
	inv->occ_count = malloc((n + 1) * sizeof *inv->occ_count);
	if (!inv->occ_off || !inv->occ_bucket || !inv->occ_cell || !inv->occ_count)
		return PM_ERR_NOMEM;
	/* counting sort, filling through occ_off + 1 so that it ends up as
	 * the offsets */
	for (size_t i = 0; i < n; i++)
		inv->occ_off[ds->bq_tuple[i] + 2]++;
	for (size_t q = 0; q < nq; q++)
		inv->occ_off[q + 2] += inv->occ_off[q + 1];
	for (size_t b = 0; b < ds->n_groups; b++) {
		size_t h = ds->bs_off[b + 1] - ds->bs_off[b];

		for (size_t i = ds->bq_off[b]; i < ds->bq_off[b + 1]; i++) {
			size_t at = inv->occ_off[ds->bq_tuple[i] + 1]++;

			inv->occ_bucket[at] = (uint32_t)b;
			inv->occ_cell[at] = (uint32_t)(inv->cell_off[b] + (i - ds->bq_off[b]) * h);
			inv->occ_count[at] = ds->bq_count[i];
		}
	}
	return PM_OK;
}

/* Lays out the cells, bucket by bucket, q-major. */
static enum pm_status build_cells(const struct dataset *ds, struct invariants *inv)
{
	size_t nb = ds->n_groups, n = 0;

	inv->cell_off = malloc((nb + 1) * sizeof *inv->cell_off);
	if (!inv->cell_off)
		return PM_ERR_NOMEM;
	for (size_t b = 0; b < nb; b++) {
		inv->cell_off[b] = n;
		n += (ds->bq_off[b + 1] - ds->bq_off[b]) * (ds->bs_off[b + 1] - ds->bs_off[b]);
	}
	inv->cell_off[nb] = n;
	inv->n_cells = n;
	inv->cell_tuple = malloc((n ? n : 1) * sizeof *inv->cell_tuple);
	inv->cell_sa = malloc((n ? n : 1) * sizeof *inv->cell_sa);
	inv->cell_group = malloc((n ? n : 1) * sizeof *inv->cell_group);
	if (!inv->cell_tuple || !inv->cell_sa || !inv->cell_group)
		return PM_ERR_NOMEM;
	for (size_t b = 0, c = 0; b < nb; b++) {
		for (size_t i = ds->bq_off[b]; i < ds->bq_off[b + 1]; i++) {
			for (size_t j = ds->bs_off[b]; j < ds->bs_off[b + 1]; j++, c++) {
				inv->cell_tuple[c] = ds->bq_tuple[i];
				inv->cell_sa[c] = ds->bs_value[j];
				inv->cell_group[c] = (uint32_t)b;
			}
		}
	}
	return PM_OK;
}

/* The cells of each slot (q, s), ascending: cell[off[t] .. off[t + 1]) for
 * slot t. Built for the knowledge rows only, then freed. */
struct slot_cells {
	size_t *off;
	uint32_t *cell;
};

/*
 * Lists grouped by key, by a counting sort: n lists of items with keys
 * below n_keys (list i: items key[off[i] .. off[i + 1]); off NULL: one
 * item each, key[i]) give per key the lists that hold it, ascending:
 * out[out_off[k] .. out_off[k + 1]) are base + i. Both arrays malloc'd
 * into *out_off (n_keys + 1) and *out, the caller's to free, also after
 * a failure.
 */
static enum pm_status group_by_key(const size_t *off, const uint32_t *key, size_t n, size_t n_keys,
				   uint32_t base, size_t **out_off, uint32_t **out)
{
	size_t items = off ? off[n] : n;

	*out_off = calloc(n_keys + 2, sizeof **out_off);
	*out = malloc((items + 1) * sizeof **out);
	if (!*out_off || !*out)
		return PM_ERR_NOMEM;
	for (size_t e = 0; e < items; e++)
		(*out_off)[key[e] + 2]++;
	for (size_t k = 0; k < n_keys; k++)
		(*out_off)[k + 2] += (*out_off)[k + 1];
	for (size_t i = 0; i < n; i++)
		for (size_t e = off ? off[i] : i; e < (off ? off[i + 1] : i + 1); e++)
			(*out)[(*out_off)[key[e] + 1]++] = (uint32_t)(base + i);
	return PM_OK;
}

/* The cells of each slot, ascending. */
static enum pm_status slot_cells_build(const struct invariants *inv, size_t n_slots,
				       struct slot_cells *sc)
{
	return group_by_key(NULL, inv->cell_slot, inv->n_cells, n_slots, 0, &sc->off, &sc->cell);
}

/* Slot of SA value s in tuple q (its slots ascend by value), or -1. */
static long tuple_slot(const struct invariants *inv, uint32_t q, uint32_t s)
{
	size_t lo = inv->slot_off[q], hi = inv->slot_off[q + 1];

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (inv->slot_sa[mid] == s)
			return (long)mid;
		if (inv->slot_sa[mid] < s)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* Cells of knowledge rule r, appended to cells (capacity >= n_cells) in
 * the order of the tuples, and its slots to slots (capacity >= n_tuples,
 * *n_slots of them); returns how many cells, and n(Qv) through *n_qv.
 * The cells of (q, s) come whole from sc: on a large table a rule's tuples
 * occur in very many buckets, and a search of s in each would miss the
 * cache on every bucket. */
static size_t rule_cells(const struct dataset *ds, const struct invariants *inv,
			 const struct slot_cells *sc, const struct rule *r, uint32_t *cells,
			 uint64_t *n_qv, uint32_t *slots, size_t *n_slots)
{
	size_t n = 0, lo, hi;
	const uint32_t *list = postings_candidates(ds, r, &lo, &hi);

	*n_qv = 0;
	*n_slots = 0;
	for (size_t at = lo; at < hi; at++) {
		uint32_t q = list ? list[at] : (uint32_t)at;
		long t;

		if (!knowledge_matches(ds, r, q))
			continue;
		*n_qv += ds->tuple_count[q];
		if ((t = tuple_slot(inv, q, r->sa)) < 0)
			continue;
		slots[(*n_slots)++] = (uint32_t)t;
		memcpy(cells + n, sc->cell + sc->off[t],
		       (sc->off[t + 1] - sc->off[t]) * sizeof *cells);
		n += sc->off[t + 1] - sc->off[t];
	}
	return n;
}

/*
 * Sorts a[0 .. n) ascending (tmp: n more): insertion for a few, else LSD
 * radix by bytes, as many as the largest value has. A rule's cells come
 * tuple by tuple; ascending (bucket by bucket), the solver's passes over
 * a row walk its buckets in order instead of jumping about.
 */
static void sort_cells(uint32_t *a, uint32_t *tmp, size_t n)
{
	uint32_t top = 0, *from = a, *to = tmp;
	size_t count[256];

	if (n < 48) {
		for (size_t i = 1; i < n; i++) {
			uint32_t v = a[i];
			size_t j = i;

			for (; j > 0 && a[j - 1] > v; j--)
				a[j] = a[j - 1];
			a[j] = v;
		}
		return;
	}
	for (size_t i = 0; i < n; i++)
		top = a[i] > top ? a[i] : top;
	for (unsigned shift = 0; shift < 32 && (top >> shift); shift += 8) {
		uint32_t *swap;

		memset(count, 0, sizeof count);
		for (size_t i = 0; i < n; i++)
			count[(from[i] >> shift) & 255]++;
		for (size_t d = 0, at = 0; d < 256; d++) {
			size_t c = count[d];

			count[d] = at;
			at += c;
		}
		for (size_t i = 0; i < n; i++)
			to[count[(from[i] >> shift) & 255]++] = from[i];
		swap = from;
		from = to;
		to = swap;
	}
	if (from != a)
		memcpy(a, from, n * sizeof *a);
}

/* Appends one row; rows are built in order so row_off grows monotonically. */
struct row_buf {
	size_t n_rows, cap_rows, n_nz, cap_nz;
};

/* Grows *p to hold cap elements of size sz; 0 on success. */
static int grow(void *p, size_t cap, size_t sz)
{
	void *n = realloc(*(void **)p, cap * sz);

	if (!n)
		return -1;
	*(void **)p = n;
	return 0;
}

static enum pm_status row_reserve(struct invariants *inv, struct row_buf *rb, size_t nz)
{
	if (rb->n_rows + 1 >= rb->cap_rows) {
		size_t cap = rb->cap_rows ? 2 * rb->cap_rows : 64;

		if (grow(&inv->row_off, cap + 1, sizeof *inv->row_off) ||
		    grow(&inv->rhs, cap, sizeof *inv->rhs) ||
		    grow(&inv->hi, cap, sizeof *inv->hi) ||
		    grow(&inv->row_kind, cap, sizeof *inv->row_kind) ||
		    grow(&inv->row_ref, cap, sizeof *inv->row_ref))
			return PM_ERR_NOMEM;
		rb->cap_rows = cap;
	}
	if (rb->n_nz + nz > rb->cap_nz) {
		size_t cap = rb->cap_nz ? rb->cap_nz : 256;

		while (cap < rb->n_nz + nz)
			cap *= 2;
		if (grow(&inv->row_cell, cap, sizeof *inv->row_cell))
			return PM_ERR_NOMEM;
		rb->cap_nz = cap;
	}
	return PM_OK;
}

static enum pm_status row_push(struct invariants *inv, struct row_buf *rb, const uint32_t *cells,
			       size_t n, double rhs, enum row_kind kind, uint32_t ref)
{
	enum pm_status st = row_reserve(inv, rb, n);

	if (st)
		return st;
	inv->row_off[rb->n_rows] = rb->n_nz;
	memcpy(inv->row_cell + rb->n_nz, cells, n * sizeof *cells);
	rb->n_nz += n;
	inv->rhs[rb->n_rows] = inv->hi[rb->n_rows] = rhs;
	inv->row_kind[rb->n_rows] = (uint8_t)kind;
	inv->row_ref[rb->n_rows] = ref;
	rb->n_rows++;
	inv->row_off[rb->n_rows] = rb->n_nz;
	return PM_OK;
}

/* QI rows of every bucket, then SA rows but the last of each bucket. */
static enum pm_status build_invariant_rows(const struct dataset *ds, struct invariants *inv,
					   struct row_buf *rb, uint32_t *tmp)
{
	enum pm_status st = PM_OK;

	for (size_t b = 0; b < ds->n_groups && !st; b++) {
		size_t g = ds->bq_off[b + 1] - ds->bq_off[b], h = ds->bs_off[b + 1] - ds->bs_off[b];

		for (size_t i = 0; i < g && !st; i++) {
			for (size_t j = 0; j < h; j++)
				tmp[j] = (uint32_t)(inv->cell_off[b] + i * h + j);
			st = row_push(inv, rb, tmp, h, ds->bq_count[ds->bq_off[b] + i], ROW_QI,
				      (uint32_t)b);
		}
	}
	inv->n_qi_rows = rb->n_rows;
	for (size_t b = 0; b < ds->n_groups && !st; b++) {
		size_t g = ds->bq_off[b + 1] - ds->bq_off[b], h = ds->bs_off[b + 1] - ds->bs_off[b];

		for (size_t j = 0; j + 1 < h && !st; j++) {
			for (size_t i = 0; i < g; i++)
				tmp[i] = (uint32_t)(inv->cell_off[b] + i * h + j);
			st = row_push(inv, rb, tmp, g, ds->bs_count[ds->bs_off[b] + j], ROW_SA,
				      (uint32_t)b);
		}
	}
	inv->n_sa_rows = rb->n_rows - inv->n_qi_rows;
	return st;
}

/* The knowledge rows' slots, row by row (rows in order): slot at
 * off[row - first knowledge row], kept as the invariants' row_slot and
 * transposed by slot_rows. */
struct row_slots {
	size_t n, cap, *off;
	uint32_t *slot;
};

static enum pm_status row_slots_add(struct row_slots *rs, size_t r, const uint32_t *slots, size_t n)
{
	if (rs->n + n > rs->cap) {
		size_t cap = rs->cap ? rs->cap : 256;
		uint32_t *to;

		while (cap < rs->n + n)
			cap *= 2;
		if (!(to = realloc(rs->slot, cap * sizeof *to)))
			return PM_ERR_NOMEM;
		rs->slot = to;
		rs->cap = cap;
	}
	if (n)
		memcpy(rs->slot + rs->n, slots, n * sizeof *slots);
	rs->n += n;
	rs->off[r + 1] = rs->n;
	return PM_OK;
}

/* slot_row_off / slot_row: per slot the knowledge rows through it,
 * ascending (rs's lists transposed: rows in order). */
static enum pm_status slot_rows(const struct dataset *ds, struct invariants *inv,
				const struct row_slots *rs, size_t rules)
{
	return group_by_key(rs->off, rs->slot, rules, inv->slot_off[ds->n_tuples],
			    (uint32_t)(inv->n_qi_rows + inv->n_sa_rows), &inv->slot_row_off,
			    &inv->slot_row);
}

/*
 * One row per rule, its cells ascending, and the rows through each slot
 * (slot_rows): a rule takes the cells of each slot (q, s) it matches
 * whole, so the rows through a cell are its slot's.
 */
static enum pm_status build_knowledge_rows(const struct dataset *ds, const struct knowledge *k,
					   struct invariants *inv, struct row_buf *rb,
					   uint32_t *tmp)
{
	struct slot_cells sc = {0};
	size_t rules = k ? k->n : 0;
	struct row_slots rs = {.off = calloc(rules + 1, sizeof *rs.off)};
	enum pm_status st = !rs.off ? PM_ERR_NOMEM
			    : rules ? slot_cells_build(inv, inv->slot_off[ds->n_tuples], &sc)
				    : PM_OK;

	for (size_t r = 0; r < rules && !st; r++) {
		const struct rule *rule = &k->rules[r];
		uint32_t *slots = tmp + 2 * inv->n_cells;
		uint64_t n_qv;
		size_t n, n_slots;
		double rhs;

		n = rule_cells(ds, inv, &sc, rule, tmp, &n_qv, slots, &n_slots);
		st = row_slots_add(&rs, r, slots, n_slots);
		sort_cells(tmp, tmp + inv->n_cells, n);
		/* Mined rules carry the exact count n(Qv and s); user rules c n(Qv),
		 * an interval (either) lo n(Qv) to hi n(Qv) */
		rhs = rule->source == RULE_USER || rule->hi > rule->lo ? rule->lo * (double)n_qv
								       : (double)rule->n_qv_s;
		if (!st)
			st = row_push(inv, rb, tmp, n, rhs, ROW_KNOWLEDGE, (uint32_t)r);
		if (!st && rule->hi > rule->lo)
			inv->hi[rb->n_rows - 1] = rule->hi * (double)n_qv;
	}
	inv->n_knowledge_rows = rb->n_rows - inv->n_qi_rows - inv->n_sa_rows;
	if (!st)
		st = slot_rows(ds, inv, &rs, rules);
	free(sc.off);
	free(sc.cell);
	inv->row_slot_off = rs.off;
	inv->row_slot = rs.slot;
	return st;
}

/* touched: the buckets with a knowledge row, ascending, and their flags
 * (bucket_touched): those with a cell whose slot has a row. */
static enum pm_status build_touched(const struct dataset *ds, struct invariants *inv)
{
	size_t nb = ds->n_groups;

	inv->bucket_touched = calloc(nb + 1, 1);
	inv->touched = malloc((nb + 1) * sizeof *inv->touched);
	if (!inv->bucket_touched || !inv->touched)
		return PM_ERR_NOMEM;
	for (size_t b = 0; b < nb; b++) {
		for (size_t c = inv->cell_off[b]; c < inv->cell_off[b + 1]; c++) {
			uint32_t t = inv->cell_slot[c];

			if (inv->slot_row_off[t + 1] > inv->slot_row_off[t]) {
				inv->bucket_touched[b] = 1;
				break;
			}
		}
		if (inv->bucket_touched[b])
			inv->touched[inv->n_touched++] = (uint32_t)b;
	}
	return PM_OK;
}

/* Scratch of build_slots, per SA value: the slot of s in the current
 * tuple (valid when stamp[s] is the tuple + 1). */
struct slot_scratch {
	uint32_t *stamp, *at, *list;
};

/* Slots of tuple q from slot_off[q] on: its distinct values ascending
 * (insertion sort: a tuple has few), and each of its cells' slot. */
static void tuple_slots(const struct dataset *ds, struct invariants *inv, struct slot_scratch *w,
			uint32_t q)
{
	size_t n = 0, s0 = inv->slot_off[q];

	for (size_t o = inv->occ_off[q]; o < inv->occ_off[q + 1]; o++) {
		size_t b = inv->occ_bucket[o];

		for (size_t j = ds->bs_off[b]; j < ds->bs_off[b + 1]; j++) {
			uint32_t s = ds->bs_value[j];
			size_t i = n;

			if (w->stamp[s] == q + 1)
				continue;
			w->stamp[s] = q + 1;
			for (; i > 0 && w->list[i - 1] > s; i--)
				w->list[i] = w->list[i - 1];
			w->list[i] = s;
			n++;
		}
	}
	for (size_t i = 0; i < n; i++) {
		inv->slot_sa[s0 + i] = w->list[i];
		w->at[w->list[i]] = (uint32_t)(s0 + i);
	}
	inv->slot_off[q + 1] = s0 + n;
	for (size_t o = inv->occ_off[q]; o < inv->occ_off[q + 1]; o++)
		for (size_t j = 0; j < inv->bucket_h[inv->occ_bucket[o]]; j++)
			inv->cell_slot[inv->occ_cell[o] + j] =
			    w->at[inv->cell_sa[inv->occ_cell[o] + j]];
}

/* The slots with records and n(q,s) in them (a record's value is among
 * its tuple's: it is in the record's bucket), per tuple in slot order. */
static enum pm_status build_records(const struct dataset *ds, struct invariants *inv)
{
	size_t nq = ds->n_tuples, n = 0;
	uint32_t *count = calloc(inv->slot_off[nq] + 1, sizeof *count);

	inv->rec_off = calloc(nq + 1, sizeof *inv->rec_off);
	if (!count || !inv->rec_off) {
		free(count);
		return PM_ERR_NOMEM;
	}
	for (size_t i = 0; ds->has_ground_truth && i < ds->n_records; i++) {
		size_t lo = inv->slot_off[ds->rec_tuple[i]],
		       hi = inv->slot_off[ds->rec_tuple[i] + 1];

		while (lo + 1 < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (inv->slot_sa[mid] <= ds->rec_sa[i])
				lo = mid;
			else
				hi = mid;
		}
		n += count[lo]++ == 0;
	}
	inv->rec_slot = malloc((n + 1) * sizeof *inv->rec_slot);
	inv->rec_count = malloc((n + 1) * sizeof *inv->rec_count);
	for (size_t q = 0, e = 0; inv->rec_slot && inv->rec_count && q < nq; q++) {
		for (size_t at = inv->slot_off[q]; at < inv->slot_off[q + 1]; at++)
			if (count[at]) {
				inv->rec_slot[e] = (uint32_t)at;
				inv->rec_count[e++] = count[at];
			}
		inv->rec_off[q + 1] = e;
	}
	free(count);
	return inv->rec_slot && inv->rec_count ? PM_OK : PM_ERR_NOMEM;
}

/* The posterior's slots, and the records in them. */
static enum pm_status build_slots(const struct dataset *ds, struct invariants *inv)
{
	size_t ns = ds->sa_values.n + 1, nq = ds->n_tuples;
	struct slot_scratch w = {calloc(ns, sizeof *w.stamp), malloc(ns * sizeof *w.at),
				 malloc(ns * sizeof *w.list)};
	enum pm_status st = PM_ERR_NOMEM;

	inv->slot_off = calloc(nq + 1, sizeof *inv->slot_off);
	inv->slot_sa = malloc((inv->n_cells + 1) * sizeof *inv->slot_sa);
	inv->cell_slot = malloc((inv->n_cells + 1) * sizeof *inv->cell_slot);
	if (!w.stamp || !w.at || !w.list || !inv->slot_off || !inv->slot_sa || !inv->cell_slot)
		goto out;
	for (uint32_t q = 0; q < nq; q++)
		tuple_slots(ds, inv, &w, q);
	inv->n_slots = inv->slot_off[nq];
	st = build_records(ds, inv);
out:
	free(w.stamp);
	free(w.at);
	free(w.list);
	return st;
}

enum pm_status invariants_build(const struct dataset *ds, const struct knowledge *k,
				struct invariants *inv, struct pm_error *err)
{
	struct row_buf rb = {0};
	uint32_t *tmp = NULL, *shrunk;
	enum pm_status st;

	memset(inv, 0, sizeof *inv);
	inv->n_groups = ds->n_groups;
	st = build_cells(ds, inv);
	if (st)
		goto out;
	/* a row's cells, and as much again to sort them */
	tmp = malloc((2 * inv->n_cells + ds->n_tuples + 1) * sizeof *tmp);
	if (!tmp) {
		st = PM_ERR_NOMEM;
		goto out;
	}
	st = build_invariant_rows(ds, inv, &rb, tmp);
	if (!st)
		st = build_occurrences(ds, inv);
	/* the slots before the knowledge rows, which take their cells */
	if (!st)
		st = build_bucket_layout(ds, inv);
	if (!st)
		st = build_slots(ds, inv);
	if (!st)
		st = build_knowledge_rows(ds, k, inv, &rb, tmp);
	if (st)
		goto out;
	inv->n_rows = rb.n_rows;
	/* the rows' cells cut to their size: the doubling left up to half of
	 * them spare, hundreds of MB on large tables (kept if realloc fails) */
	if (rb.n_nz && (shrunk = realloc(inv->row_cell, rb.n_nz * sizeof *inv->row_cell)))
		inv->row_cell = shrunk;
	if (!inv->row_off && !(inv->row_off = calloc(1, sizeof *inv->row_off))) {
		st = PM_ERR_NOMEM;
		goto out;
	}
	st = build_touched(ds, inv);
	inv->zero_invariants =
	    (uint64_t)ds->n_tuples * ds->sa_values.n * ds->n_groups - inv->n_cells;
out:
	free(tmp);
	if (st == PM_ERR_NOMEM)
		error_set(err, st, "", "out of memory building the constraints");
	if (st)
		invariants_finish(inv);
	return st;
}

void invariants_finish(struct invariants *inv)
{
	if (!inv)
		return;
	free(inv->cell_off);
	free(inv->cell_tuple);
	free(inv->cell_sa);
	free(inv->cell_group);
	free(inv->row_off);
	free(inv->row_cell);
	free(inv->rhs);
	free(inv->hi);
	free(inv->row_kind);
	free(inv->row_ref);
	free(inv->slot_row_off);
	free(inv->slot_row);
	free(inv->row_slot_off);
	free(inv->row_slot);
	free(inv->bucket_touched);
	free(inv->touched);
	free(inv->bucket_h);
	free(inv->qi_row0);
	free(inv->sa_row0);
	free(inv->bucket_n);
	free(inv->sa_last);
	free(inv->occ_off);
	free(inv->occ_bucket);
	free(inv->occ_cell);
	free(inv->occ_count);
	free(inv->slot_off);
	free(inv->slot_sa);
	free(inv->cell_slot);
	free(inv->rec_off);
	free(inv->rec_slot);
	free(inv->rec_count);
	memset(inv, 0, sizeof *inv);
}
