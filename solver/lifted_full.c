/*
 * The paper's method on the pseudonym model (`--method full-dual`): one
 * multiplier for every row of the buckets the open rows touch and for
 * every open row, all at once (maxent_solve_rows: L-BFGS, OWL-QN with
 * intervals), over the free cells of those buckets.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lifted_internal.h"
#include "maxent.h"

/* The rows: each touched bucket's QI and SA rows (the model's, people
 * included), then the open rows with their (merged) bounds. */
struct full_rows {
	size_t n, nnz;
	size_t *off;
	uint32_t *cell;
	double *coef, *lo, *hi, *start;
};

static int rows_alloc(struct full_rows *f, size_t rows, size_t entries)
{
	f->off = malloc((rows + 1) * sizeof *f->off);
	f->cell = malloc((entries + 1) * sizeof *f->cell);
	f->coef = malloc((entries + 1) * sizeof *f->coef);
	f->lo = malloc((rows + 1) * sizeof *f->lo);
	f->hi = malloc((rows + 1) * sizeof *f->hi);
	f->start = malloc((rows + 1) * sizeof *f->start);
	return f->off && f->cell && f->coef && f->lo && f->hi && f->start ? 0 : -1;
}

/* Model row r as a row of f, over the free local cells (fidx[], from the
 * model's cells through lmap[]). */
static void add_row(struct full_rows *f, const struct lsys *s, const uint32_t *lmap,
		    const uint32_t *fidx, size_t r, double lo, double hi, double start)
{
	const struct lifted *m = s->m;

	f->off[f->n] = f->nnz;
	for (size_t e = m->row_off[r]; e < m->row_off[r + 1]; e++) {
		uint32_t v = lmap[m->row_cell[e]];

		if (v == UINT32_MAX || s->lzero[v] || m->row_coef[e] == 0)
			continue;
		f->cell[f->nnz] = fidx[v];
		f->coef[f->nnz++] = m->row_coef[e];
	}
	f->lo[f->n] = lo;
	f->hi[f->n] = hi;
	f->start[f->n++] = start;
}

/* Bucket k's QI and SA rows, started at the closed form of Theorem 5
 * (as maxent.c's dual_start: y = n(q,b) n(s,b) / n(b)). */
static void bucket_rows(struct full_rows *f, const struct lsys *s, const uint32_t *lmap,
			const uint32_t *fidx, size_t k)
{
	const struct invariants *inv = s->inv;
	size_t b = s->bk[k].b, g = s->bk[k].g, h = s->bk[k].h;
	double nb = inv->bucket_n[b], last = inv->sa_last[b];

	for (size_t i = 0; i < g; i++) {
		double n = invariants_qi_count(inv, b, i);

		add_row(f, s, lmap, fidx, inv->qi_row0[b] + i, n, n, log(n * last / nb));
	}
	for (size_t j = 0; j + 1 < h; j++) {
		double n = invariants_sa_count(inv, b, j);

		add_row(f, s, lmap, fidx, inv->sa_row0[b] + j, n, n, log(n / last));
	}
}

/* Numbers: lmap (model cell -> local), fidx (local -> free local);
 * returns the free cells. */
static size_t numbering(const struct lsys *s, uint32_t *lmap, uint32_t *fidx)
{
	size_t nf = 0;

	for (size_t c = 0; c < s->m->n_cells; c++)
		lmap[c] = UINT32_MAX;
	for (size_t v = 0; v < s->nl; v++) {
		lmap[s->lcell[v]] = (uint32_t)v;
		fidx[v] = s->lzero[v] ? UINT32_MAX : (uint32_t)nf++;
	}
	return nf;
}

enum pm_status lifted_full(struct lsys *s, const struct solver_options *o, struct cancel *cancel,
			   struct maxent_stats *ms)
{
	uint32_t *lmap = malloc((s->m->n_cells + 1) * sizeof *lmap);
	uint32_t *fidx = malloc((s->nl + 1) * sizeof *fidx);
	struct full_rows f = {0};
	struct pm_error err = {0};
	double *y = NULL;
	size_t rows = s->r, nf;
	enum pm_status st = PM_ERR_NOMEM;

	for (size_t k = 0; k < s->nb; k++)
		rows += s->bk[k].g + s->bk[k].h - 1;
	if (!lmap || !fidx || rows_alloc(&f, rows, s->m->row_off[s->m->n_rows]))
		goto out;
	nf = numbering(s, lmap, fidx);
	if (!(y = malloc((nf + 1) * sizeof *y)))
		goto out;
	for (size_t k = 0; k < s->nb; k++)
		bucket_rows(&f, s, lmap, fidx, k);
	for (size_t i = 0; i < s->r; i++)
		add_row(&f, s, lmap, fidx, s->row[i], s->mid[i] - s->half[i],
			s->mid[i] + s->half[i], 0);
	f.off[f.n] = f.nnz;
	st = maxent_solve_rows(
	    &(struct maxent_rows){nf, f.n, f.off, f.cell, f.coef, f.lo, f.hi, f.start}, o, cancel,
	    y, ms, &err);
	for (size_t v = 0; (st == PM_OK || st == PM_ERR_CANCELLED) && v < s->nl; v++)
		s->y[v] = s->lzero[v] ? 0 : y[fidx[v]];
out:
	free(lmap);
	free(fidx);
	free(y);
	free(f.off);
	free(f.cell);
	free(f.coef);
	free(f.lo);
	free(f.hi);
	free(f.start);
	return st;
}
