/*
 * The two-level dual's setup (twolevel.c): the coupled buckets of one
 * component with their offsets, the open rows with their cells by local
 * number and the transposed lists (per cell its rows), the chunks G's
 * passes hand out, each thread's scratch, and the start (the closed form
 * less the zeros), then twolevel_hessian_init's patterns for forming H.
 * Flat arrays throughout (CSR-like), no allocation per cell.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solver_internal.h"

/* Scratch cap (doubles) for the per-row sums of one bucket. */
#define PQ_MAX ((size_t)1 << 20)
/*
 * G's chunks: about EVAL_CELLS cells each, at most EVAL_CHUNKS. Threads take them
 * as they come free: a static half each left one thread waiting up to
 * 25% of an evaluation on Adult, K+ = K- = 250, qi_attributes 1 (the
 * inner solves' steps vary from bucket to bucket and from one trial
 * point to the next). The chunks and the order of their sums do not
 * depend on which thread took which: the result is the same every run.
 */
#define EVAL_CELLS  2048
#define EVAL_CHUNKS 64
/*
 * The gradient's chunks of rows, about GRAD_ENTRIES cells each: a row's
 * cells are summed in a pass of their own once every bucket is scaled, a
 * gather in the row's cell order. Scattered into per-chunk vectors
 * during the buckets' pass, the sums cost 7.5 ns per entry of ck (a
 * store-to-load chain through the few rows of a bucket, and the
 * branches of cells with 0, 1 or 2 rows), 40% of an evaluation's fixed
 * cost on Adult, K+ = K- = 250, qi_attributes 1.
 */
#define GRAD_ENTRIES 4096

/* The coupled buckets bk, their α/β/cell/factor offsets; *g_max, *h_max
 * the widest shape. */
static enum pm_status init_buckets(struct twolevel *t, const uint32_t *bk, size_t nb, size_t *g_max,
				   size_t *h_max)
{
	const struct dataset *ds = t->ds;

	t->bk = malloc((nb + 1) * sizeof *t->bk);
	t->qoff = malloc((nb + 1) * sizeof *t->qoff);
	t->soff = malloc((nb + 1) * sizeof *t->soff);
	t->coff = malloc((nb + 1) * sizeof *t->coff);
	t->foff = malloc((nb + 1) * sizeof *t->foff);
	if (!t->bk || !t->qoff || !t->soff || !t->coff || !t->foff)
		return PM_ERR_NOMEM;
	t->qoff[0] = t->soff[0] = t->coff[0] = t->foff[0] = 0;
	*g_max = *h_max = 1;
	for (size_t k = 0; k < nb; k++) {
		size_t b = bk[k];
		size_t g = ds->bq_off[b + 1] - ds->bq_off[b], h = ds->bs_off[b + 1] - ds->bs_off[b];

		t->bk[k] = (uint32_t)b;
		t->qoff[k + 1] = t->qoff[k] + g;
		t->soff[k + 1] = t->soff[k] + h;
		t->coff[k + 1] = t->coff[k] + g * h;
		t->foff[k + 1] = t->foff[k] + schur_size(g, h);
		*g_max = g > *g_max ? g : *g_max;
		*h_max = h > *h_max ? h : *h_max;
	}
	t->nb = nb;
	t->alpha = calloc(t->qoff[nb] + 1, sizeof *t->alpha);
	t->beta = calloc(t->soff[nb] + 1, sizeof *t->beta);
	t->fac = malloc((t->foff[nb] + 1) * sizeof *t->fac);
	return t->alpha && t->beta && t->fac ? PM_OK : PM_ERR_NOMEM;
}

/* Local number of cell c (inv numbering) of a coupled bucket; pos: the
 * buckets' places (struct components). */
static size_t local_cell(const struct twolevel *t, const uint32_t *pos, uint32_t c)
{
	uint32_t b = t->inv->cell_group[c];

	return t->coff[pos[b]] + (c - t->inv->cell_off[b]);
}

/*
 * Every open row's cells by their local numbers (rc). Through a table of
 * every cell's local number when the component holds a good part of the
 * cells (filled bucket by bucket, in order): one load per entry instead
 * of local_cell's chain of four (the entries are scattered over the
 * buckets): init_rows 3.1 -> 2.7 ms (medians of 5 cold runs) on Adult,
 * K+ = K- = 250, qi_attributes 1. Without memory for the table,
 * local_cell per entry.
 */
static void local_cells(struct twolevel *t, const uint32_t *pos)
{
	const struct invariants *inv = t->inv;
	uint32_t *lc =
	    t->coff[t->nb] >= inv->n_cells / 4 ? malloc((inv->n_cells + 1) * sizeof *lc) : NULL;

	for (size_t k = 0; lc && k < t->nb; k++)
		for (size_t c = 0; c < t->coff[k + 1] - t->coff[k]; c++)
			lc[inv->cell_off[t->bk[k]] + c] = (uint32_t)(t->coff[k] + c);
	for (size_t k = 0; k < t->r; k++) {
		const uint32_t *rc = inv->row_cell + inv->row_off[t->row[k]];

		for (size_t x = t->rc_off[k]; x < t->rc_off[k + 1]; x++)
			t->rc[x] = lc ? lc[rc[x - t->rc_off[k]]]
				      : (uint32_t)local_cell(t, pos, rc[x - t->rc_off[k]]);
	}
	free(lc); /* NULL (no memory for it, or a small component): slow path */
}

/* Do the coupled buckets' local cell numbers equal the invariants'? */
static int local_is_global(const struct twolevel *t)
{
	for (size_t k = 0; k < t->nb; k++)
		if (t->coff[k] != t->inv->cell_off[t->bk[k]])
			return 0;
	return 1;
}

/* Per row its local cells (rc, or the invariants' rows where the numbers
 * are the same), then per local cell the open rows through it (ck) and
 * each entry's cell (ce): the local numbers found once. */
static enum pm_status init_entries(struct twolevel *t, const uint32_t *pos)
{
	size_t cells = t->coff[t->nb], n = t->rc_off[t->r];
	int same = local_is_global(t);

	t->ck_off = calloc(cells + 2, sizeof *t->ck_off);
	t->rc = same ? NULL : malloc((n + 1) * sizeof *t->rc);
	t->ck = malloc((n + 1) * sizeof *t->ck);
	t->ce = malloc((n + 1) * sizeof *t->ce);
	if (!t->ck_off || (!same && !t->rc) || !t->ck || !t->ce)
		return PM_ERR_NOMEM;
	t->rcb = same ? t->inv->row_cell : t->rc;
	for (size_t k = 0; k < t->r; k++)
		t->rc_at[k] = same ? t->inv->row_off[t->row[k]] : t->rc_off[k];
	if (!same)
		local_cells(t, pos);
	for (size_t k = 0; k < t->r; k++)
		for (size_t x = 0; x < t->rc_off[k + 1] - t->rc_off[k]; x++)
			t->ck_off[t->rcb[t->rc_at[k] + x] + 2]++;
	for (size_t c = 0; c < cells; c++) {
		t->ck_max = t->ck_off[c + 2] > t->ck_max ? t->ck_off[c + 2] : t->ck_max;
		t->ck_off[c + 2] += t->ck_off[c + 1];
	}
	for (size_t k = 0; k < t->r; k++)
		for (size_t x = 0; x < t->rc_off[k + 1] - t->rc_off[k]; x++) {
			uint32_t c = t->rcb[t->rc_at[k] + x];

			t->ck[t->ck_off[c + 1]] = (uint32_t)k;
			t->ce[t->ck_off[c + 1]++] = c;
		}
	return PM_OK;
}

/* A row's block key: the SA value of its first cell. */
static uint32_t row_key(const struct invariants *inv, uint32_t r)
{
	return inv->row_off[r] < inv->row_off[r + 1] ? inv->cell_sa[inv->row_cell[inv->row_off[r]]]
						     : 0;
}

/*
 * t->row: rows ordered by key (stable), and the blocks: runs of one key
 * cut at TWOLEVEL_BLOCK_ROWS. Rows with one SA value (a rule's) couple
 * most within it: they share the cells' column sums in every bucket and,
 * across attributes, the cells themselves.
 */
static enum pm_status init_blocks(struct twolevel *t, const uint32_t *rows, size_t nr)
{
	const struct invariants *inv = t->inv;
	size_t keys = 1, *at;

	for (size_t k = 0; k < nr; k++)
		keys = row_key(inv, rows[k]) + 1 > keys ? row_key(inv, rows[k]) + 1 : keys;
	at = calloc(keys + 1, sizeof *at);
	t->blk_off = malloc((nr + keys + 2) * sizeof *t->blk_off);
	t->blk_of = malloc((nr + 1) * sizeof *t->blk_of);
	if (!at || !t->blk_off || !t->blk_of) {
		free(at);
		return PM_ERR_NOMEM;
	}
	for (size_t k = 0; k < nr; k++)
		at[row_key(inv, rows[k]) + 1]++;
	for (size_t v = 0; v < keys; v++)
		at[v + 1] += at[v];
	for (size_t k = 0; k < nr; k++)
		t->row[at[row_key(inv, rows[k])]++] = rows[k];
	free(at);
	t->nblk = 0;
	t->blk_off[0] = 0;
	for (size_t k = 0; k < nr; k++) {
		if (k > 0 && (row_key(inv, t->row[k]) != row_key(inv, t->row[k - 1]) ||
			      k - t->blk_off[t->nblk] >= TWOLEVEL_BLOCK_ROWS))
			t->blk_off[++t->nblk] = k;
		t->blk_of[k] = (uint32_t)t->nblk;
	}
	t->blk_off[++t->nblk] = nr;
	if (!nr)
		t->nblk = 0;
	return PM_OK;
}

/* The open rows, and their cells (init_entries). */
static enum pm_status init_rows(struct twolevel *t, const uint32_t *rows, size_t nr,
				const uint32_t *pos)
{
	const struct invariants *inv = t->inv;

	t->row = malloc((nr + 1) * sizeof *t->row);
	t->rhs = malloc((nr + 1) * sizeof *t->rhs);
	t->scale = malloc((nr + 1) * sizeof *t->scale);
	t->mu = calloc(nr + 1, sizeof *t->mu);
	t->mu0 = calloc(nr + 1, sizeof *t->mu0);
	t->dd = malloc((nr + 1) * sizeof *t->dd);
	t->ex = malloc((nr + 1) * sizeof *t->ex);
	t->xm = malloc((nr + 1) * sizeof *t->xm);
	t->rc_off = malloc((nr + 1) * sizeof *t->rc_off);
	t->rc_at = malloc((nr + 1) * sizeof *t->rc_at);
	if (!t->row || !t->rhs || !t->scale || !t->mu || !t->mu0 || !t->dd || !t->ex || !t->xm ||
	    !t->rc_off || !t->rc_at || init_blocks(t, rows, nr))
		return PM_ERR_NOMEM;
	t->rc_off[0] = 0;
	for (size_t k = 0; k < nr && !t->half; k++)
		if (invariants_interval(inv, t->row[k]) &&
		    !(t->half = calloc(nr + 1, sizeof *t->half)))
			return PM_ERR_NOMEM;
	for (size_t k = 0; k < nr; k++) {
		size_t r = t->row[k], len = inv->row_off[r + 1] - inv->row_off[r];

		/* an interval lo..hi: its midpoint, and its half width as L1 */
		t->rhs[k] = (inv->rhs[r] + inv->hi[r]) / 2;
		if (t->half)
			t->half[k] = (inv->hi[r] - inv->rhs[r]) / 2;
		t->scale[k] = 1.0 / sqrt(fmax(1.0, inv->rhs[r]));
		t->row_len = len > t->row_len ? len : t->row_len;
		t->rc_off[k + 1] = t->rc_off[k] + len;
	}
	t->r = nr;
	return init_entries(t, pos);
}

/* G's chunks (EVAL_CELLS): balanced by cells, at least one per part;
 * the gradient's (GRAD_ENTRIES) by cells of the rows. */
static enum pm_status init_chunks(struct twolevel *t)
{
	size_t n = t->pool ? t->coff[t->nb] / EVAL_CELLS : 1;
	size_t m = t->pool ? t->rc_off[t->r] / GRAD_ENTRIES : 1;

	n = n < EVAL_CHUNKS ? n : EVAL_CHUNKS;
	n = n > (size_t)t->parts ? n : (size_t)t->parts;
	n = n < t->nb ? n : t->nb;
	t->n_ev = n ? n : 1;
	m = m > (size_t)t->parts ? m : (size_t)t->parts;
	m = m < t->r ? m : t->r;
	t->n_gr = m ? m : 1;
	t->ev_off = malloc((t->n_ev + 1) * sizeof *t->ev_off);
	t->ev_f = malloc(t->n_ev * sizeof *t->ev_f);
	t->ev_worst = malloc(t->n_ev * sizeof *t->ev_worst);
	t->gr_off = malloc((t->n_gr + 1) * sizeof *t->gr_off);
	t->gsum = malloc((t->r + 1) * sizeof *t->gsum);
	if (!t->ev_off || !t->ev_f || !t->ev_worst || !t->gr_off || !t->gsum)
		return PM_ERR_NOMEM;
	for (size_t i = 0; i < t->n_ev; i++)
		parallel_range(t->nb, t->coff, (int)i, (int)t->n_ev, &t->ev_off[i],
			       &t->ev_off[i + 1]);
	for (size_t i = 0; i < t->n_gr; i++)
		parallel_range(t->r, t->rc_off, (int)i, (int)t->n_gr, &t->gr_off[i],
			       &t->gr_off[i + 1]);
	return PM_OK;
}

/* The pool (borrowed, for problems large enough to share) and each part's
 * scratch. */
static enum pm_status init_parts(struct twolevel *t, struct parallel *pool, size_t g_max,
				 size_t h_max)
{
	size_t cells = g_max * h_max + 1;

	t->pool = t->nb < TWOLEVEL_POOL_BUCKETS ? NULL : pool;
	t->parts = parallel_parts(t->pool);
	t->part = calloc((size_t)t->parts, sizeof *t->part);
	if (!t->part)
		return PM_ERR_NOMEM;
	for (int p = 0; p < t->parts; p++) {
		struct twolevel_part *pt = &t->part[p];

		if (scaling_work_init(&pt->w, g_max, h_max))
			return PM_ERR_NOMEM;
		pt->dm = malloc(cells * sizeof *pt->dm);
		pt->kk = malloc(cells * sizeof *pt->kk);
		pt->em = malloc(cells * sizeof *pt->em);
		pt->t = malloc(cells * sizeof *pt->t);
		pt->u = malloc(cells * sizeof *pt->u);
		pt->vec = calloc(t->r + 1, sizeof *pt->vec);
		pt->stamp = calloc(t->r + 1, sizeof *pt->stamp);
		pt->loc = malloc((t->r + 1) * sizeof *pt->loc);
		pt->rows = malloc((t->r + 1) * sizeof *pt->rows);
		pt->acc = malloc((t->r + 1) * sizeof *pt->acc);
		/* room for every row of the widest bucket, within reason */
		pt->pq_cap = (t->r + 1) * (g_max + h_max);
		pt->pq_cap = pt->pq_cap < PQ_MAX ? pt->pq_cap : PQ_MAX;
		pt->pq = malloc(pt->pq_cap * sizeof *pt->pq);
		if (!pt->dm || !pt->kk || !pt->em || !pt->t || !pt->u || !pt->vec || !pt->stamp ||
		    !pt->loc || !pt->rows || !pt->acc || !pt->pq)
			return PM_ERR_NOMEM;
	}
	return init_chunks(t);
}

/* Bucket k's base point from start (struct solver_warm.y) if every free
 * cell holds at least ZERO_RECORDS there; 1 if taken. A smaller one is
 * most likely a forced zero the earlier solve left unfound (held below
 * its tolerance: the last chance, solver.c): from there its multiplier
 * is already far out and moves by about one a step, too little for the
 * probe's ray, and the solve runs it down step by step; from the closed
 * form the probe sees it shrink and the search finds it. */
static int warm_bucket(struct twolevel *t, const double *start, size_t k)
{
	size_t off, g, h, b = t->bk[k];

	twolevel_shape(t, k, &off, &g, &h);
	start += t->inv->cell_off[b];
	for (size_t c = 0; c < g * h; c++)
		if (!t->zero[off + c] && !(start[c] >= ZERO_RECORDS && start[c] <= DBL_MAX))
			return 0;
	for (size_t c = 0; c < g * h; c++)
		t->y0[off + c] = t->zero[off + c] ? 0 : start[c];
	return 1;
}

/* Start: μ = 0 and every coupled bucket's closed form less its zeros (the
 * local copy), or start's point there (warm_bucket): the base point,
 * exact for the closed form of buckets without zeros; the first
 * evaluation scales the others. */
static enum pm_status init_start(struct twolevel *t, const uint8_t *zero, const double *start)
{
	const struct invariants *inv = t->inv;
	size_t cells = t->coff[t->nb];
	double widest = 1;

	t->y0 = malloc((cells + 1) * sizeof *t->y0);
	t->y = malloc((cells + 1) * sizeof *t->y);
	t->zero = malloc(cells + 1);
	t->exact = malloc(t->nb + 1);
	if (!t->y0 || !t->y || !t->zero || !t->exact)
		return PM_ERR_NOMEM;
	for (size_t k = 0; k < t->nb; k++) {
		size_t off, g, h, b = t->bk[k];

		twolevel_shape(t, k, &off, &g, &h);
		memcpy(t->zero + off, zero + inv->cell_off[b], g * h);
		widest = fmax(widest, t->ds->group_size[b]);
		/* a warm start holds the invariants only to the earlier
		 * solve's tolerance: the first G scales it */
		t->exact[k] = 0;
		if (start && warm_bucket(t, start, k))
			continue;
		metrics_closed_cells(t->ds, b, t->y0 + off);
		t->exact[k] = !memchr(t->zero + off, 1, g * h); /* else the first G solves it */
		for (size_t c = off; c < off + g * h; c++)
			t->y0[c] = t->zero[c] ? 0 : t->y0[c];
	}
	memcpy(t->y, t->y0, cells * sizeof *t->y);
	/* as tight as rounding allows: function and gradient must agree */
	t->inner_target = fmax(1e-13, 1e-15 * widest);
	return PM_OK;
}

enum pm_status twolevel_init_lists(struct twolevel *t, const struct dataset *ds,
				   const struct invariants *inv, const uint8_t *zero,
				   const struct components *cs, size_t i, struct parallel *pool,
				   const double *start, double *y)
{
	size_t g_max, h_max;
	enum pm_status ret;

	*t = (struct twolevel){.ds = ds, .inv = inv, .out = y};
	ret = init_buckets(t, cs->bucket + cs->b_off[i], cs->b_off[i + 1] - cs->b_off[i], &g_max,
			   &h_max);
	if (!ret)
		ret =
		    init_rows(t, cs->row + cs->r_off[i], cs->r_off[i + 1] - cs->r_off[i], cs->pos);
	if (!ret)
		ret = init_parts(t, pool, g_max, h_max);
	if (!ret)
		ret = init_start(t, zero, start);
	if (!ret)
		ret = twolevel_hessian_init(t);
	return ret;
}

enum pm_status twolevel_init(struct twolevel *t, const struct dataset *ds,
			     const struct invariants *inv, const uint8_t *zero,
			     const uint8_t *implied, const uint8_t *coupled, int threads, double *y)
{
	struct components cs;
	struct parallel *pool = NULL;
	enum pm_status ret;

	*t = (struct twolevel){0};
	ret = components_build(inv, coupled, implied, 1, &cs);

	/* the size at which init_parts takes the pool */
	if (!ret && cs.b_off[cs.n] >= TWOLEVEL_POOL_BUCKETS)
		ret = parallel_create(threads, &pool);
	if (!ret)
		ret = twolevel_init_lists(t, ds, inv, zero, &cs, 0, pool, NULL, y);
	if (t->pool != pool)
		parallel_destroy(pool);
	else
		t->own_pool = 1;
	components_finish(&cs);
	return ret;
}
