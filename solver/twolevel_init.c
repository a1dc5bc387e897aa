/*
 * The two-level dual's setup (twolevel.c): the coupled buckets of one
 * component with their offsets, the open rows and their classes (the
 * slots they pass through: per cell its class, per class its rows and
 * cells, per row its classes), the chunks G's passes hand out, each
 * thread's scratch, and the start (the closed form less the zeros), then
 * twolevel_hessian_init's sizes for forming H.
 * Flat arrays throughout (CSR-like), no allocation per cell.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "components.h"
#include "metrics.h"
#include "parallel.h"
#include "scaling.h"
#include "schur.h"
#include "solve.h"
#include "twolevel.h"

/* Scratch cap (doubles) for the per-row sums of one bucket. */
#define PQ_MAX ((size_t)1 << 20)
/*
 * G's chunks: about EVAL_CELLS cells each, at most EVAL_CHUNKS. Threads take them
 * as they come free: with a static half each, one thread would wait for
 * the other, as the inner solves' steps vary from bucket to bucket and
 * from one trial point to the next. The chunks and the order of their
 * sums do not depend on which thread took which: the result is the same
 * every run.
 */
#define EVAL_CELLS  2048
#define EVAL_CHUNKS 64
/*
 * The gradient's chunks of classes, about GRAD_CELLS cells each: a
 * class's cells are summed in a pass of their own once every bucket is
 * scaled, a gather in the class's cell order, then each row's sum is its
 * classes' (eval_pass). Scattered into per-chunk vectors during the
 * buckets' pass, the sums would be a store-to-load chain through the few
 * rows of a bucket at every cell and row: a large part of an
 * evaluation's fixed cost.
 */
#define GRAD_CELLS 4096

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

/*
 * Slot to class numbers while the classes are made: a table of every
 * slot where the component holds a good part of the cells, else open
 * addressing over the component's slots (at most its cells): a small
 * component must not pay for the table's size.
 */
struct slot_map {
	size_t mask;	     /* hashed: capacity - 1; direct: SIZE_MAX */
	uint32_t *key, *val; /* key: slot + 1, 0 empty (hashed only) */
};

static enum pm_status map_init(struct slot_map *m, size_t slots, size_t cells)
{
	size_t cap = 16;

	if (slots <= 4 * cells) {
		m->mask = SIZE_MAX;
		m->val = calloc(slots + 1, sizeof *m->val);
		return m->val ? PM_OK : PM_ERR_NOMEM;
	}
	while (cap < 2 * cells + 2)
		cap *= 2;
	m->mask = cap - 1;
	m->key = calloc(cap, sizeof *m->key);
	m->val = calloc(cap, sizeof *m->val);
	return m->key && m->val ? PM_OK : PM_ERR_NOMEM;
}

/* Where slot s's class number is (0: none yet); with add, a hashed
 * slot not met before gets its entry. NULL: not there (add 0). */
static uint32_t *map_at(struct slot_map *m, uint32_t s, int add)
{
	size_t i;

	if (m->mask == SIZE_MAX)
		return &m->val[s];
	for (i = (s * UINT64_C(0x9e3779b97f4a7c15)) >> 20 & m->mask; m->key[i];
	     i = (i + 1) & m->mask)
		if (m->key[i] == s + 1)
			return &m->val[i];
	if (!add)
		return NULL;
	m->key[i] = s + 1;
	return &m->val[i];
}

/*
 * Per open row its classes (rk_cls at rk_off: its slots', each once: a
 * row's slots are distinct), the classes numbered from 1 in order of
 * first appearance.
 */
static enum pm_status class_lists(struct twolevel *t, struct slot_map *m)
{
	t->rk_off = malloc((t->r + 1) * sizeof *t->rk_off);
	if (!t->rk_off)
		return PM_ERR_NOMEM;
	t->rk_off[0] = 0;
	for (size_t k = 0; k < t->r; k++) {
		size_t ns;

		invariants_row_slots(t->inv, t->row[k], &ns);
		t->rk_off[k + 1] = t->rk_off[k] + ns;
	}
	t->rk_cls = malloc((t->rk_off[t->r] + 1) * sizeof *t->rk_cls);
	if (!t->rk_cls)
		return PM_ERR_NOMEM;
	for (size_t k = 0; k < t->r; k++) {
		size_t ns;
		const uint32_t *slots = invariants_row_slots(t->inv, t->row[k], &ns);

		for (size_t e = 0; e < ns; e++) {
			uint32_t *v = map_at(m, slots[e], 1);

			if (!*v)
				*v = (uint32_t)++t->ncls;
			t->rk_cls[t->rk_off[k] + e] = *v;
		}
	}
	return PM_OK;
}

/* Per class its rows ascending (cl_row at cl_off, class 0 none): the
 * lists of class_lists transposed; ck_max the longest. */
static enum pm_status class_rows(struct twolevel *t)
{
	size_t n = t->rk_off[t->r];

	t->cl_off = calloc(t->ncls + 3, sizeof *t->cl_off);
	t->cl_row = malloc((n + 1) * sizeof *t->cl_row);
	if (!t->cl_off || !t->cl_row)
		return PM_ERR_NOMEM;
	for (size_t e = 0; e < n; e++)
		t->cl_off[t->rk_cls[e] + 2]++;
	for (size_t v = 0; v <= t->ncls; v++) {
		t->ck_max = t->cl_off[v + 2] > t->ck_max ? t->cl_off[v + 2] : t->ck_max;
		t->cl_off[v + 2] += t->cl_off[v + 1];
	}
	for (size_t k = 0; k < t->r; k++)
		for (size_t e = t->rk_off[k]; e < t->rk_off[k + 1]; e++)
			t->cl_row[t->cl_off[t->rk_cls[e] + 1]++] = (uint32_t)k;
	return PM_OK;
}

/* Every local cell's class (cls), and per class its cells ascending
 * (cc_cell at cc_off). */
static enum pm_status class_cells(struct twolevel *t, struct slot_map *m)
{
	const struct invariants *inv = t->inv;
	size_t cells = t->coff[t->nb];

	t->cls = malloc((cells + 1) * sizeof *t->cls);
	t->cc_off = calloc(t->ncls + 3, sizeof *t->cc_off);
	if (!t->cls || !t->cc_off)
		return PM_ERR_NOMEM;
	for (size_t k = 0; k < t->nb; k++) {
		const uint32_t *slot = inv->cell_slot + inv->cell_off[t->bk[k]];

		for (size_t c = t->coff[k]; c < t->coff[k + 1]; c++) {
			uint32_t *v = map_at(m, slot[c - t->coff[k]], 0);

			t->cls[c] = v ? *v : 0;
			t->cc_off[t->cls[c] + 2] += t->cls[c] != 0;
		}
	}
	for (size_t v = 0; v <= t->ncls; v++)
		t->cc_off[v + 2] += t->cc_off[v + 1];
	t->cc_cell = malloc((t->cc_off[t->ncls + 2] + 1) * sizeof *t->cc_cell);
	if (!t->cc_cell)
		return PM_ERR_NOMEM;
	for (size_t c = 0; c < cells; c++)
		if (t->cls[c])
			t->cc_cell[t->cc_off[t->cls[c] + 1]++] = (uint32_t)c;
	return PM_OK;
}

/*
 * The open rows by class. A knowledge row takes each slot (q, s) whole
 * (invariants_build), so the open rows through a cell are those through
 * its slot: a class is a slot that open rows pass through, and a cell
 * keeps its class alone (cls; 0: no open row), not its rows, which
 * would be an entry per cell and row, ten times the cells on rules of
 * one attribute (five hundred million at ten million records). A pass
 * over a bucket's cells takes their rows' sums per class, once per pass
 * (kernel, the products), and the rows' sums of y come from the
 * classes' (eval_pass). Checked: the rows' cells, counted, are their
 * classes' cells (else PM_ERR_INTERNAL: a row that takes part of a
 * slot would be solved wrong).
 */
static enum pm_status init_classes(struct twolevel *t)
{
	struct slot_map m = {0};
	size_t slots = t->inv->n_slots, cells = t->coff[t->nb], sum = 0;
	enum pm_status ret = map_init(&m, slots, cells);

	if (!ret)
		ret = class_lists(t, &m);
	if (!ret)
		ret = class_rows(t);
	if (!ret)
		ret = class_cells(t, &m);
	free(m.key);
	free(m.val);
	if (ret)
		return ret;
	for (size_t k = 0; k < t->r; k++)
		for (size_t e = t->rk_off[k]; e < t->rk_off[k + 1]; e++)
			sum += t->cc_off[t->rk_cls[e] + 1] - t->cc_off[t->rk_cls[e]];
	t->n_entries = sum;
	t->cdm = malloc((t->ncls + 1) * sizeof *t->cdm);
	t->cex = malloc((t->ncls + 1) * sizeof *t->cex);
	t->cem = malloc((t->ncls + 1) * sizeof *t->cem);
	t->csum = malloc((t->ncls + 1) * sizeof *t->csum);
	t->cv = malloc((t->ncls + 1) * sizeof *t->cv);
	if (!t->cdm || !t->cex || !t->cem || !t->csum || !t->cv)
		return PM_ERR_NOMEM;
	return sum == t->rc_off[t->r] ? PM_OK : PM_ERR_INTERNAL;
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
	t->blk_val = malloc((nr + 1) * sizeof *t->blk_val);
	if (!at || !t->blk_off || !t->blk_of || !t->blk_val) {
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
		t->blk_val[t->nblk] = row_key(inv, t->row[k]);
	}
	t->blk_off[++t->nblk] = nr;
	if (!nr)
		t->nblk = 0;
	return PM_OK;
}

/* The open rows, and their classes (init_classes). */
static enum pm_status init_rows(struct twolevel *t, const uint32_t *rows, size_t nr)
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
	if (!t->row || !t->rhs || !t->scale || !t->mu || !t->mu0 || !t->dd || !t->ex || !t->xm ||
	    !t->rc_off || init_blocks(t, rows, nr))
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
	return init_classes(t);
}

/* G's chunks (EVAL_CELLS): balanced by cells, at least one per part;
 * the gradient's (GRAD_CELLS) by cells of the classes. */
static enum pm_status init_chunks(struct twolevel *t)
{
	size_t n = t->pool ? t->coff[t->nb] / EVAL_CELLS : 1;
	size_t m = t->pool ? t->cc_off[t->ncls + 1] / GRAD_CELLS : 1;

	n = n < EVAL_CHUNKS ? n : EVAL_CHUNKS;
	n = n > (size_t)t->parts ? n : (size_t)t->parts;
	n = n < t->nb ? n : t->nb;
	t->n_ev = n ? n : 1;
	m = m > (size_t)t->parts ? m : (size_t)t->parts;
	m = m < t->ncls + 1 ? m : t->ncls + 1;
	t->n_gr = m ? m : 1;
	t->ev_off = malloc((t->n_ev + 1) * sizeof *t->ev_off);
	t->ev_f = malloc(t->n_ev * sizeof *t->ev_f);
	t->ev_worst = malloc(t->n_ev * sizeof *t->ev_worst);
	t->gr_off = malloc((t->n_gr + 1) * sizeof *t->gr_off);
	if (!t->ev_off || !t->ev_f || !t->ev_worst || !t->gr_off)
		return PM_ERR_NOMEM;
	for (size_t i = 0; i < t->n_ev; i++)
		parallel_range(t->nb, t->coff, (int)i, (int)t->n_ev, &t->ev_off[i],
			       &t->ev_off[i + 1]);
	for (size_t i = 0; i < t->n_gr; i++)
		parallel_range(t->ncls + 1, t->cc_off, (int)i, (int)t->n_gr, &t->gr_off[i],
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
		pt->cacc = malloc((t->ncls + 1) * sizeof *pt->cacc);
		pt->rt = malloc((g_max + h_max) * h_max * sizeof *pt->rt);
		pt->sc = malloc(g_max * sizeof *pt->sc);
		/* room for every row of the widest bucket, within reason */
		pt->pq_cap = (t->r + 1) * (g_max + h_max);
		pt->pq_cap = pt->pq_cap < PQ_MAX ? pt->pq_cap : PQ_MAX;
		pt->pq = malloc(pt->pq_cap * sizeof *pt->pq);
		if (!pt->dm || !pt->kk || !pt->em || !pt->t || !pt->u || !pt->vec || !pt->cacc ||
		    !pt->stamp || !pt->loc || !pt->rows || !pt->acc || !pt->pq)
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

struct start_ctx {
	struct twolevel *t;
	const uint8_t *zero;
	const double *start;
};

/* Part p's buckets of init_start: their zeros, base point and y. */
static void start_part(void *ctx, int p, int parts)
{
	struct start_ctx *c = ctx;
	struct twolevel *t = c->t;
	size_t lo, hi;

	twolevel_range(t, p, parts, &lo, &hi);
	for (size_t k = lo; k < hi; k++) {
		size_t off, g, h, b = t->bk[k];

		twolevel_shape(t, k, &off, &g, &h);
		memcpy(t->zero + off, c->zero + t->inv->cell_off[b], g * h);
		/* a warm start holds the invariants only to the earlier
		 * solve's tolerance: the first G scales it */
		t->exact[k] = 0;
		if (!(c->start && warm_bucket(t, c->start, k))) {
			metrics_closed_cells(t->ds, b, t->y0 + off);
			/* else the first G solves it */
			t->exact[k] = !memchr(t->zero + off, 1, g * h);
			for (size_t i = off; i < off + g * h; i++)
				t->y0[i] = t->zero[i] ? 0 : t->y0[i];
		}
		memcpy(t->y + off, t->y0 + off, g * h * sizeof *t->y);
	}
}

/* Start: μ = 0 and every coupled bucket's closed form less its zeros (the
 * local copy), or start's point there (warm_bucket): the base point,
 * exact for the closed form of buckets without zeros; the first
 * evaluation scales the others. On the pool: the first pass over every
 * cell, which also faults their pages in. */
static enum pm_status init_start(struct twolevel *t, const uint8_t *zero, const double *start)
{
	size_t cells = t->coff[t->nb];
	double widest = 1;
	struct start_ctx c = {t, zero, start};

	t->y0 = malloc((cells + 1) * sizeof *t->y0);
	t->y = malloc((cells + 1) * sizeof *t->y);
	t->zero = malloc(cells + 1);
	t->exact = malloc(t->nb + 1);
	if (!t->y0 || !t->y || !t->zero || !t->exact)
		return PM_ERR_NOMEM;
	parallel_run(t->pool, start_part, &c);
	for (size_t k = 0; k < t->nb; k++)
		widest = fmax(widest, t->ds->group_size[t->bk[k]]);
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
		ret = init_rows(t, cs->row + cs->r_off[i], cs->r_off[i + 1] - cs->r_off[i]);
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
