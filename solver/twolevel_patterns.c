/*
 * One bucket's patterns, for forming H (twolevel_hessian.c's
 * bucket_form): its open rows ascending, each with its pattern (rows
 * with the same cells in the bucket share one, numbered in order of
 * first row), and per bucket row the patterns through its cells. Found
 * bucket by bucket in each pass that forms H, into the part's scratch:
 * kept for every bucket they were an entry per pair of a cell and a row
 * (two arrays of them) and one per pair of a bucket and a row (two more),
 * gigabytes at ten million records on rules of one attribute, and
 * finding them again costs a fraction of the pass they serve.
 */
#include <stdlib.h>
#include <string.h>

#include "twolevel.h"

enum pm_status twolevel_patterns_create(const struct twolevel *t, size_t rows, size_t entries,
					size_t g, struct twolevel_patterns **out)
{
	struct twolevel_patterns *p = calloc(1, sizeof *p);

	*out = p;
	if (!p)
		return PM_ERR_NOMEM;
	p->rows = malloc((rows + 1) * sizeof *p->rows);
	p->pat = malloc((rows + 1) * sizeof *p->pat);
	p->rpat = malloc((entries + 1) * sizeof *p->rpat);
	p->rcell = malloc((entries + 1) * sizeof *p->rcell);
	p->at = malloc((g + 1) * sizeof *p->at);
	p->rp_n = malloc((g + 1) * sizeof *p->rp_n);
	p->lo = malloc((rows + 2) * sizeof *p->lo);
	p->key = malloc((rows + 1) * sizeof *p->key);
	p->pkey = malloc((rows + 1) * sizeof *p->pkey);
	p->first = malloc((rows + 1) * sizeof *p->first);
	p->cells = malloc((entries + 1) * sizeof *p->cells);
	p->bits = calloc(t->r / 64 + 1, sizeof *p->bits);
	for (p->mask = 1; p->mask < 2 * rows + 1; p->mask *= 2)
		;
	p->slot = malloc(p->mask * sizeof *p->slot);
	p->gen = calloc(p->mask, sizeof *p->gen);
	p->mask--;
	return p->rows && p->pat && p->rpat && p->rcell && p->at && p->rp_n && p->lo && p->key &&
		       p->pkey && p->first && p->cells && p->bits && p->slot && p->gen
		   ? PM_OK
		   : PM_ERR_NOMEM;
}

void twolevel_patterns_destroy(struct twolevel_patterns *p)
{
	if (!p)
		return;
	free(p->rows);
	free(p->pat);
	free(p->rpat);
	free(p->rcell);
	free(p->at);
	free(p->rp_n);
	free(p->lo);
	free(p->key);
	free(p->pkey);
	free(p->first);
	free(p->cells);
	free(p->bits);
	free(p->slot);
	free(p->gen);
	free(p);
}

size_t twolevel_bucket_rows(const struct twolevel *t, struct twolevel_part *pt, size_t k,
			    size_t *entries)
{
	size_t off, g, h, n = 0;

	twolevel_shape(t, k, &off, &g, &h);
	pt->tick++;
	*entries = 0;
	for (size_t c = off; c < off + g * h; c++) {
		size_t nr;
		const uint32_t *rows = twolevel_cell_rows(t, c, &nr);

		*entries += nr;
		for (size_t e = 0; e < nr; e++)
			if (pt->stamp[rows[e]] != pt->tick) {
				pt->stamp[rows[e]] = pt->tick;
				n++;
			}
	}
	return n;
}

static unsigned lowest_bit(uint64_t v)
{
#if defined(__GNUC__)
	return (unsigned)__builtin_ctzll(v);
#else
	unsigned b = 0;

	for (; !(v & 1); v >>= 1)
		b++;
	return b;
#endif
}

/* Bucket k's open rows, ascending and distinct, into p->rows (p->n), and
 * where each bucket row's entries start (p->at). The bitmap over all
 * rows sorts them as it drops repeats, and is left clear. */
static void sorted_rows(const struct twolevel *t, size_t k, struct twolevel_patterns *p)
{
	size_t off, g, h, n = 0, w0 = SIZE_MAX, w1 = 0;

	twolevel_shape(t, k, &off, &g, &h);
	p->at[0] = 0;
	for (size_t c = 0; c < g * h; c++) {
		size_t nr;
		const uint32_t *rows = twolevel_cell_rows(t, off + c, &nr);

		for (size_t e = 0; e < nr; e++) {
			size_t w = rows[e] >> 6;

			p->bits[w] |= UINT64_C(1) << (rows[e] & 63);
			w0 = w < w0 ? w : w0;
			w1 = w > w1 ? w : w1;
		}
	}
	for (size_t i = 0; i < g; i++) {
		size_t m = 0;

		for (size_t c = off + i * h; c < off + i * h + h; c++)
			m += t->cl_off[t->cls[c] + 1] - t->cl_off[t->cls[c]];
		p->at[i + 1] = p->at[i] + m;
	}
	for (size_t w = w0; w <= w1 && w0 != SIZE_MAX; w++)
		for (; p->bits[w]; p->bits[w] &= p->bits[w] - 1)
			p->rows[n++] = (uint32_t)(w * 64 + lowest_bit(p->bits[w]));
	p->n = n;
}

/* Bucket row i of bucket k: the patterns through its cells, each once (a
 * pattern has one cell in a bucket row at most: a knowledge row's cells
 * are of one SA value), with its cell, from p->at[i]. */
static void row_patterns(const struct twolevel *t, struct twolevel_part *pt,
			 struct twolevel_patterns *p, size_t k, size_t i)
{
	size_t off, g, h, n = 0;
	uint16_t *rpat = p->rpat + p->at[i], *rcell = p->rcell + p->at[i];

	twolevel_shape(t, k, &off, &g, &h);
	pt->tick++; /* stamps by pattern, here */
	for (size_t c = i * h; c < i * h + h; c++) {
		size_t nr;
		const uint32_t *rows = twolevel_cell_rows(t, off + c, &nr);

		for (size_t e = 0; e < nr; e++) {
			uint16_t v = p->pat[pt->loc[rows[e]]];

			if (pt->stamp[v] == pt->tick)
				continue;
			pt->stamp[v] = pt->tick;
			rpat[n] = v;
			rcell[n++] = (uint16_t)c;
		}
	}
	p->rp_n[i] = (uint32_t)n;
}

/* Whether local rows l and m have the same cells (lists from cell_lists). */
static int same_cells(const size_t *lo, const uint32_t *cells, size_t l, size_t m)
{
	return lo[l + 1] - lo[l] == lo[m + 1] - lo[m] &&
	       !memcmp(cells + lo[l], cells + lo[m], (lo[l + 1] - lo[l]) * sizeof *cells);
}

/* Per local row of bucket k (numbers in pt->loc), its cells ascending:
 * p->cells[lo[l] .. lo[l + 1]). */
static void cell_lists(const struct twolevel *t, struct twolevel_part *pt, size_t k,
		       struct twolevel_patterns *p)
{
	size_t off, g, h, *lo = p->lo;

	twolevel_shape(t, k, &off, &g, &h);
	memset(lo, 0, (p->n + 2) * sizeof *lo);
	for (size_t c = off; c < off + g * h; c++) {
		size_t nr;
		const uint32_t *rows = twolevel_cell_rows(t, c, &nr);

		for (size_t e = 0; e < nr; e++)
			lo[pt->loc[rows[e]] + 2]++;
	}
	for (size_t l = 0; l < p->n; l++)
		lo[l + 2] += lo[l + 1];
	for (size_t c = off; c < off + g * h; c++) { /* cells in order */
		size_t nr;
		const uint32_t *rows = twolevel_cell_rows(t, c, &nr);

		for (size_t e = 0; e < nr; e++)
			p->cells[lo[pt->loc[rows[e]] + 1]++] = (uint32_t)(c - off);
	}
}

/*
 * Local row l's pattern: that of an earlier row with the same cells,
 * looked up by its key (against each pattern's first row), else a new
 * one, numbered next (*np): a step per row, where a scan of the
 * patterns so far took one per pattern (a hundred open rows in a bucket
 * and half as many patterns, on rules of one attribute).
 */
static uint16_t pattern_of(struct twolevel_patterns *p, size_t l, size_t *np)
{
	uint64_t key = p->key[l];
	size_t i = (size_t)((key ^ key >> 29) * UINT64_C(0xbf58476d1ce4e5b9) >> 32) & p->mask;

	for (;; i = (i + 1) & p->mask) {
		size_t q = p->slot[i];

		if (p->gen[i] != p->now) {
			p->gen[i] = p->now;
			p->slot[i] = (uint16_t)*np;
			p->pkey[*np] = key;
			p->first[*np] = (uint32_t)l;
			return (uint16_t)(*np)++;
		}
		if (p->pkey[q] == key && same_cells(p->lo, p->cells, l, p->first[q]))
			return (uint16_t)q;
	}
}

void twolevel_patterns_find(const struct twolevel *t, struct twolevel_part *pt, size_t k)
{
	struct twolevel_patterns *p = pt->pat;
	size_t np = 0, *lo = p->lo;

	sorted_rows(t, k, p);
	for (size_t l = 0; l < p->n; l++)
		pt->loc[p->rows[l]] = (uint32_t)l;
	cell_lists(t, pt, k, p);
	for (size_t l = 0; l < p->n; l++) { /* key: a hash of the cells */
		uint64_t key = lo[l + 1] - lo[l];

		for (size_t e = lo[l]; e < lo[l + 1]; e++)
			key = key * UINT64_C(0x100000001b3) ^ p->cells[e];
		p->key[l] = key;
	}
	if (++p->now == 0) { /* the generations wrapped: every slot free */
		memset(p->gen, 0, (p->mask + 1) * sizeof *p->gen);
		p->now = 1;
	}
	for (size_t l = 0; l < p->n; l++)
		p->pat[l] = pattern_of(p, l, &np);
	p->np = np;
	for (size_t i = 0; i < t->ds->bq_off[t->bk[k] + 1] - t->ds->bq_off[t->bk[k]]; i++)
		row_patterns(t, pt, p, k, i);
}
