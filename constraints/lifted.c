/*
 * The pseudonym model (SPEC 3.1, Section 6 of the paper): the system's
 * cells for the unnamed people of each (q, s, b), one cell per named
 * person, bucket and value, and rows with coefficients for the
 * statements. constraints.h (struct lifted) describes the layout.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "constraints.h"

/* Entries of the rows while they are built: cells and coefficients. */
struct row_buf {
	size_t n, cap;
	uint32_t *cell;
	double *coef;
	/* a statement's row: per cell its coefficient so far and whether
	 * it is listed (cells in touch[0 .. n_touch)) */
	double *acc;
	uint8_t *on;
	uint32_t *touch;
	size_t n_touch;
};

static int buf_push(struct row_buf *b, uint32_t cell, double coef)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 1024;
		uint32_t *c = realloc(b->cell, cap * sizeof *c);
		double *a;

		if (!c)
			return -1;
		b->cell = c;
		a = realloc(b->coef, cap * sizeof *a);
		if (!a)
			return -1;
		b->coef = a;
		b->cap = cap;
	}
	b->cell[b->n] = cell;
	b->coef[b->n++] = coef;
	return 0;
}

/* The person cells, bucket by bucket of each person's tuple (only its
 * group when known), every value of the bucket. */
static enum pm_status person_cells(const struct knowledge *k, const struct invariants *inv,
				   struct lifted *m)
{
	size_t n = 0, at;

	for (int pass = 0; pass < 2; pass++) {
		at = inv->n_cells;
		for (size_t i = 0; i < k->n_people; i++) {
			const struct individual *p = &k->people[i];

			if (pass)
				m->person_off[i] = at;
			for (size_t o = inv->occ_off[p->tuple]; o < inv->occ_off[p->tuple + 1];
			     o++) {
				size_t b = inv->occ_bucket[o], h = inv->bucket_h[b];

				if (p->group >= 0 && (size_t)p->group != b)
					continue;
				for (size_t j = 0; pass && j < h; j++)
					m->agg[at - inv->n_cells + j] =
					    inv->occ_cell[o] + (uint32_t)j;
				at += h;
			}
		}
		if (pass)
			break;
		n = at - inv->n_cells;
		m->person_off = malloc((k->n_people + 1) * sizeof *m->person_off);
		m->agg = malloc((n + 1) * sizeof *m->agg);
		if (!m->person_off || !m->agg)
			return PM_ERR_NOMEM;
	}
	m->person_off[k->n_people] = at;
	m->n_cells = at;
	return PM_OK;
}

/* Per bucket, its person cells (pb_*), and per system cell the person
 * cells aggregating into it (pc_off/pc_cell, returned). */
static enum pm_status cell_lists(const struct invariants *inv, struct lifted *m, size_t **pc_off,
				 uint32_t **pc_cell)
{
	size_t np = m->n_cells - inv->n_cells, nb = inv->n_groups;

	m->pb_off = calloc(nb + 2, sizeof *m->pb_off);
	m->pb_cell = malloc((np + 1) * sizeof *m->pb_cell);
	*pc_off = calloc(inv->n_cells + 2, sizeof **pc_off);
	*pc_cell = malloc((np + 1) * sizeof **pc_cell);
	if (!m->pb_off || !m->pb_cell || !*pc_off || !*pc_cell)
		return PM_ERR_NOMEM;
	for (size_t c = 0; c < np; c++) {
		m->pb_off[inv->cell_group[m->agg[c]] + 2]++;
		(*pc_off)[m->agg[c] + 2]++;
	}
	for (size_t b = 0; b < nb; b++)
		m->pb_off[b + 2] += m->pb_off[b + 1];
	for (size_t c = 0; c < inv->n_cells; c++)
		(*pc_off)[c + 2] += (*pc_off)[c + 1];
	for (size_t c = 0; c < np; c++) {
		m->pb_cell[m->pb_off[inv->cell_group[m->agg[c]] + 1]++] =
		    (uint32_t)(inv->n_cells + c);
		(*pc_cell)[(*pc_off)[m->agg[c] + 1]++] = (uint32_t)(inv->n_cells + c);
	}
	return PM_OK;
}

/* Row r of inv with the person cells of each of its cells. */
static int system_row(const struct invariants *inv, const size_t *pc_off, const uint32_t *pc_cell,
		      size_t r, struct row_buf *b)
{
	for (size_t e = inv->row_off[r]; e < inv->row_off[r + 1]; e++) {
		uint32_t c = inv->row_cell[e];

		if (buf_push(b, c, 1))
			return -1;
		for (size_t p = pc_off[c]; p < pc_off[c + 1]; p++)
			if (buf_push(b, pc_cell[p], 1))
				return -1;
	}
	return 0;
}

/* Adds coef to cell's entry of the statement row being summed. */
static void acc_add(struct row_buf *b, uint32_t cell, double coef)
{
	if (!b->on[cell]) {
		b->on[cell] = 1;
		b->touch[b->n_touch++] = cell;
	}
	b->acc[cell] += coef;
}

static int in_then(const struct statement_term *t, uint32_t s)
{
	for (size_t i = 0; i < t->n_then; i++)
		if (t->then[i] == s)
			return 1;
	return 0;
}

/* A distribution term: every cell (and person cell) of a tuple matching
 * its if, with a value of its then. */
static void dist_term(const struct dataset *ds, const struct invariants *inv, const size_t *pc_off,
		      const uint32_t *pc_cell, const struct statement_term *t, double coef,
		      struct row_buf *b)
{
	size_t lo, hi;
	const uint32_t *list = postings_candidates(ds, &t->cond, &lo, &hi);

	for (size_t at = lo; at < hi; at++) {
		uint32_t q = list ? list[at] : (uint32_t)at;

		if (!knowledge_matches(ds, &t->cond, q))
			continue;
		for (size_t o = inv->occ_off[q]; o < inv->occ_off[q + 1]; o++) {
			size_t bk = inv->occ_bucket[o], h = inv->bucket_h[bk];

			for (size_t j = 0; j < h; j++) {
				uint32_t c = inv->occ_cell[o] + (uint32_t)j;

				if (!in_then(t, inv->cell_sa[c]))
					continue;
				acc_add(b, c, coef);
				for (size_t p = pc_off[c]; p < pc_off[c + 1]; p++)
					acc_add(b, pc_cell[p], coef);
			}
		}
	}
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* Statement i's row: its terms summed cell by cell, scaled to records
 * by the smallest n(if) of its terms (1 with a person term). */
static int statement_row(const struct dataset *ds, const struct knowledge *k,
			 const struct invariants *inv, struct lifted *m, const size_t *pc_off,
			 const uint32_t *pc_cell, size_t i, struct row_buf *b)
{
	const struct statement *st = &k->statements[i];
	double sc = INFINITY, lo = 0, hi = 0;

	for (size_t t = 0; t < st->n_terms; t++)
		sc = fmin(sc, (double)st->terms[t].n_qv);
	b->n_touch = 0;
	for (size_t t = 0; t < st->n_terms; t++) {
		const struct statement_term *tm = &st->terms[t];
		double coef = tm->coef * sc / (double)tm->n_qv;

		lo += fmin(tm->coef, 0);
		hi += fmax(tm->coef, 0);
		if (tm->person < 0) {
			dist_term(ds, inv, pc_off, pc_cell, tm, coef, b);
			continue;
		}
		for (size_t c = m->person_off[tm->person]; c < m->person_off[tm->person + 1]; c++)
			if (in_then(tm, inv->cell_sa[m->agg[c - inv->n_cells]]))
				acc_add(b, (uint32_t)c, coef);
	}
	qsort(b->touch, b->n_touch, sizeof *b->touch, cmp_u32);
	for (size_t e = 0; e < b->n_touch; e++) {
		uint32_t c = b->touch[e];

		/* terms that cancel on a cell leave it out */
		if (b->acc[c] != 0 && buf_push(b, c, b->acc[c]))
			return -1;
		b->acc[c] = 0;
		b->on[c] = 0;
	}
	m->scale[i] = sc;
	/* a missing bound: one unit past what the row can reach */
	m->lo[m->statement_row0 + i] = (isfinite(st->lo) ? st->lo : lo - 1) * sc;
	m->hi[m->statement_row0 + i] = (isfinite(st->hi) ? st->hi : hi + 1) * sc;
	return 0;
}

/* Every row into b, and its bounds into m. */
static enum pm_status build_rows(const struct dataset *ds, const struct knowledge *k,
				 const struct invariants *inv, struct lifted *m,
				 const size_t *pc_off, const uint32_t *pc_cell, struct row_buf *b)
{
	size_t r = 0;

	for (; r < inv->n_rows; r++) {
		m->row_off[r] = b->n;
		m->lo[r] = inv->rhs[r];
		m->hi[r] = inv->hi[r];
		if (system_row(inv, pc_off, pc_cell, r, b))
			return PM_ERR_NOMEM;
	}
	for (size_t i = 0; i < k->n_people; i++, r++) {
		m->row_off[r] = b->n;
		m->lo[r] = m->hi[r] = 1;
		for (size_t c = m->person_off[i]; c < m->person_off[i + 1]; c++)
			if (buf_push(b, (uint32_t)c, 1))
				return PM_ERR_NOMEM;
	}
	for (size_t i = 0; i < k->n_statements; i++, r++) {
		m->row_off[r] = b->n;
		if (statement_row(ds, k, inv, m, pc_off, pc_cell, i, b))
			return PM_ERR_NOMEM;
	}
	m->row_off[r] = b->n;
	return PM_OK;
}

enum pm_status lifted_build(const struct dataset *ds, const struct knowledge *k,
			    const struct invariants *inv, struct lifted *m, struct pm_error *err)
{
	struct row_buf b = {0};
	size_t *pc_off = NULL;
	uint32_t *pc_cell = NULL;
	enum pm_status st;

	memset(m, 0, sizeof *m);
	m->inv = inv;
	m->n_people = k->n_people;
	m->n_statements = k->n_statements;
	m->person_row0 = inv->n_rows;
	m->statement_row0 = inv->n_rows + k->n_people;
	m->n_rows = m->statement_row0 + k->n_statements;
	if ((st = person_cells(k, inv, m)) || (st = cell_lists(inv, m, &pc_off, &pc_cell)))
		goto out;
	m->row_off = malloc((m->n_rows + 1) * sizeof *m->row_off);
	m->lo = malloc((m->n_rows + 1) * sizeof *m->lo);
	m->hi = malloc((m->n_rows + 1) * sizeof *m->hi);
	m->scale = malloc((k->n_statements + 1) * sizeof *m->scale);
	b.acc = calloc(m->n_cells + 1, sizeof *b.acc);
	b.on = calloc(m->n_cells + 1, 1);
	b.touch = malloc((m->n_cells + 1) * sizeof *b.touch);
	st = PM_ERR_NOMEM;
	if (!m->row_off || !m->lo || !m->hi || !m->scale || !b.acc || !b.on || !b.touch)
		goto out;
	if ((st = build_rows(ds, k, inv, m, pc_off, pc_cell, &b)))
		goto out;
	m->row_cell = b.cell;
	m->row_coef = b.coef;
	b.cell = NULL;
	b.coef = NULL;
out:
	if (st)
		error_set(err, st, "", "out of memory building the pseudonym model");
	free(b.cell);
	free(b.coef);
	free(b.acc);
	free(b.on);
	free(b.touch);
	free(pc_off);
	free(pc_cell);
	return st;
}

void lifted_finish(struct lifted *m)
{
	if (!m)
		return;
	free(m->person_off);
	free(m->agg);
	free(m->pb_off);
	free(m->pb_cell);
	free(m->row_off);
	free(m->row_cell);
	free(m->row_coef);
	free(m->lo);
	free(m->hi);
	free(m->scale);
	memset(m, 0, sizeof *m);
}
