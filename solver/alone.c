/*
 * A bucket that no open knowledge row couples, with forced zeros, solved
 * alone (solver.c gives the ones without zeros the closed form):
 *
 * - by peeling, exactly, where the zeros allow it (peel_bucket);
 * - else by matrix scaling (scaling.c) in a canonical order of its rows
 *   and columns: rows and columns sorted by count, zeros and the pattern
 *   of their zeros, refined a few rounds. The answer is kept under the
 *   sorted counts and zero pattern (the bucket's "shape") and reused for
 *   every bucket of that shape: Anatomy makes buckets alike (l records,
 *   one per row and column, a zero or two), so a few shapes cover most
 *   of them. A shape's answer is the scaling of the shape itself,
 *   whichever bucket met it first, so it does not depend on the order
 *   of the buckets or on the threads.
 */
#include <stdlib.h>
#include <string.h>

#include "alone.h"
#include "scaling.h"
#include "solve.h"

/* Buckets up to this many rows, columns and cells have a shape; larger
 * ones are scaled as they are. */
#define SHAPE_SIDE  16
#define SHAPE_CELLS 64
/* A rescaled iterate (alone_rescale) is kept when its scaling gets this
 * close (records) to the counts: ZERO_RECORDS, where a scaling that
 * stalls on a nearly decomposable pattern still ends. */
#define RESCALE_TARGET ZERO_RECORDS
/* Rounds of the canonical sort. */
#define SHAPE_ROUNDS 4
/* Scaling: violation target (records); a bucket that misses it falls back
 * to the dual. */
#define ALONE_TARGET 1e-12

/* A shape: counts in canonical order (rows then columns), zeros (bit
 * i * h + j), and the scaling's answer, or its failure. */
struct shape {
	uint32_t g, h, count[2 * SHAPE_SIDE];
	uint64_t zero, hash;
	double y[SHAPE_CELLS];
	int ok;
};

struct alone_work {
	/* peeling, per row then per column: what is left of its count, its
	 * free cells, still in the block */
	double *left;
	size_t *free;
	uint8_t *on;
	uint8_t *kz; /* alone_rescale: the kernel's zeros, g_max x h_max */
	struct scaling_work sw;
	/* the shapes met, and an open-addressing index of them */
	struct shape *shapes;
	size_t n, cap;
	int32_t *slot;
	size_t n_slots;
	/* the bucket at hand in canonical order: row and column order, zero
	 * flags, start, log-scalings */
	uint8_t ri[SHAPE_SIDE], ci[SHAPE_SIDE], zero[SHAPE_CELLS];
	double y0[SHAPE_CELLS], ab[2 * SHAPE_SIDE];
};

enum pm_status alone_work_create(size_t g_max, size_t h_max, struct alone_work **out)
{
	struct alone_work *w = calloc(1, sizeof *w);

	*out = w;
	if (!w)
		return PM_ERR_NOMEM;
	w->left = malloc((g_max + h_max) * sizeof *w->left);
	w->free = malloc((g_max + h_max) * sizeof *w->free);
	w->on = malloc(g_max + h_max);
	w->kz = malloc(g_max * h_max + 1);
	if (!w->left || !w->free || !w->on || !w->kz || scaling_work_init(&w->sw, g_max, h_max))
		return PM_ERR_NOMEM;
	return PM_OK;
}

void alone_work_destroy(struct alone_work *w)
{
	if (!w)
		return;
	free(w->left);
	free(w->free);
	free(w->on);
	free(w->kz);
	scaling_work_finish(&w->sw);
	free(w->shapes);
	free(w->slot);
	free(w);
}

/* Row i of g (k = i) or column j (k = g + j) gives the free cell (i, j)
 * in the block its whole count: its line leaves the block, the crossing
 * line loses the count and a free cell. */
static void peel_line(struct alone_work *w, size_t g, size_t h, const uint8_t *zero, double *y,
		      size_t k)
{
	int row = k < g;
	size_t n = row ? h : g;

	for (size_t x = 0; x < n; x++) {
		size_t i = row ? k : x, j = row ? x : k - g, other = row ? g + x : x;

		if (!w->on[other] || zero[i * h + j])
			continue;
		y[i * h + j] = w->left[k];
		w->left[other] -= w->left[k];
		w->free[other]--;
		break;
	}
	w->on[k] = 0;
}

/*
 * The maximum-entropy estimate of bucket b alone with its zeros, exactly,
 * where the zeros allow it: a row or column with a single free cell puts
 * its whole count there (every solution does), and once none has, what is
 * left is either empty or a block; a block without zeros has, by Theorem
 * 5, the product of what is left of its marginals as its maximum. Counts
 * stay whole numbers, so this is exact. Returns 1 when b is solved, 0
 * when zeros remain in the block (matrix scaling's case).
 */
static int peel_bucket(const struct dataset *ds, const struct invariants *inv, size_t b,
		       const uint8_t *zero, double *y, struct alone_work *w)
{
	size_t g = ds->bq_off[b + 1] - ds->bq_off[b], h = ds->bs_off[b + 1] - ds->bs_off[b];
	size_t off = inv->cell_off[b], moved = 1;
	double n = 0;

	zero += off;
	y += off;
	for (size_t k = 0; k < g + h; k++) {
		w->left[k] =
		    k < g ? ds->bq_count[ds->bq_off[b] + k] : ds->bs_count[ds->bs_off[b] + k - g];
		w->free[k] = 0;
		w->on[k] = 1;
	}
	for (size_t c = 0; c < g * h; c++) {
		y[c] = 0;
		w->free[c / h] += !zero[c];
		w->free[g + c % h] += !zero[c];
	}
	while (moved) {
		moved = 0;
		for (size_t k = 0; k < g + h; k++)
			if (w->on[k] && w->free[k] == 1 && ++moved)
				peel_line(w, g, h, zero, y, k);
	}
	for (size_t k = 0; k < g + h; k++) {
		if (w->on[k] && !w->free[k] && w->left[k] != 0)
			return 0; /* not whole numbers after all: leave it to scaling */
		w->on[k] = w->on[k] && w->free[k];
	}
	for (size_t i = 0; i < g; i++)
		for (size_t j = 0; w->on[i] && j < h; j++)
			if (w->on[g + j] &&
			    (zero[i * h + j] || w->left[i] <= 0 || w->left[g + j] <= 0))
				return 0;
	for (size_t i = 0; i < g; i++)
		n += w->on[i] ? w->left[i] : 0;
	for (size_t i = 0; i < g; i++)
		for (size_t j = 0; w->on[i] && j < h; j++)
			if (w->on[g + j])
				y[i * h + j] = w->left[i] * w->left[g + j] / n;
	return 1;
}

/* Row (or column) a sorts before b: count, zeros, pattern of zeros over
 * the other side's current order, then index. */
static int line_before(const uint32_t *count, const uint32_t *nz, const uint64_t *mask, size_t a,
		       size_t b)
{
	if (count[a] != count[b])
		return count[a] < count[b];
	if (nz[a] != nz[b])
		return nz[a] < nz[b];
	if (mask[a] != mask[b])
		return mask[a] < mask[b];
	return a < b;
}

/* Sorts the n indices of order (insertion: n <= SHAPE_SIDE); returns
 * whether anything moved. */
static int sort_lines(uint8_t *order, size_t n, const uint32_t *count, const uint32_t *nz,
		      const uint64_t *mask)
{
	int moved = 0;

	for (size_t i = 1; i < n; i++) {
		uint8_t v = order[i];
		size_t k = i;

		for (; k > 0 && line_before(count, nz, mask, v, order[k - 1]); k--)
			order[k] = order[k - 1];
		moved |= k != i;
		order[k] = v;
	}
	return moved;
}

/* The zero pattern of each row over the columns in order ci (or of each
 * column over the rows in order ri). */
static void line_masks(const uint8_t *zero, size_t g, size_t h, int rows, const uint8_t *order,
		       uint64_t *mask)
{
	size_t n = rows ? g : h, m = rows ? h : g;

	for (size_t a = 0; a < n; a++) {
		mask[a] = 0;
		for (size_t p = 0; p < m; p++)
			if (rows ? zero[a * h + order[p]] : zero[order[p] * h + a])
				mask[a] |= (uint64_t)1 << p;
	}
}

/* Canonical row order w->ri and column order w->ci of a g x h bucket. */
static void shape_order(struct alone_work *w, const uint32_t *nq, const uint32_t *ns,
			const uint8_t *zero, size_t g, size_t h)
{
	uint32_t rz[SHAPE_SIDE] = {0}, cz[SHAPE_SIDE] = {0};
	uint64_t rm[SHAPE_SIDE] = {0}, cm[SHAPE_SIDE] = {0};

	for (size_t i = 0; i < g; i++)
		w->ri[i] = (uint8_t)i;
	for (size_t j = 0; j < h; j++)
		w->ci[j] = (uint8_t)j;
	for (size_t c = 0; c < g * h; c++) {
		rz[c / h] += zero[c];
		cz[c % h] += zero[c];
	}
	sort_lines(w->ri, g, nq, rz, rm);
	sort_lines(w->ci, h, ns, cz, cm);
	for (int round = 0; round < SHAPE_ROUNDS; round++) {
		int moved;

		line_masks(zero, g, h, 1, w->ci, rm);
		moved = sort_lines(w->ri, g, nq, rz, rm);
		line_masks(zero, g, h, 0, w->ri, cm);
		moved |= sort_lines(w->ci, h, ns, cz, cm);
		if (!moved)
			break;
	}
}

/* Bucket b as a shape key in s (its answer not yet known). */
static void shape_key(struct alone_work *w, const struct dataset *ds, size_t b, const uint8_t *zero,
		      struct shape *s)
{
	const uint32_t *nq = ds->bq_count + ds->bq_off[b], *ns = ds->bs_count + ds->bs_off[b];
	size_t g = ds->bq_off[b + 1] - ds->bq_off[b], h = ds->bs_off[b + 1] - ds->bs_off[b];
	uint64_t hash = 1469598103934665603u;

	shape_order(w, nq, ns, zero, g, h);
	memset(s, 0, sizeof *s);
	s->g = (uint32_t)g;
	s->h = (uint32_t)h;
	for (size_t i = 0; i < g; i++)
		s->count[i] = nq[w->ri[i]];
	for (size_t j = 0; j < h; j++)
		s->count[g + j] = ns[w->ci[j]];
	for (size_t i = 0; i < g; i++)
		for (size_t j = 0; j < h; j++)
			if (zero[w->ri[i] * h + w->ci[j]])
				s->zero |= (uint64_t)1 << (i * h + j);
	for (size_t k = 0; k < g + h; k++)
		hash = (hash ^ s->count[k]) * 1099511628211u;
	s->hash = (hash ^ s->zero ^ (g << 8 | h)) * 1099511628211u;
}

static int shape_equal(const struct shape *a, const struct shape *b)
{
	return a->hash == b->hash && a->g == b->g && a->h == b->h && a->zero == b->zero &&
	       !memcmp(a->count, b->count, (a->g + a->h) * sizeof *a->count);
}

/* The scaling of shape s (in its own order) into s->y. */
static void shape_solve(struct alone_work *w, struct shape *s)
{
	size_t g = s->g, h = s->h;
	double nb = 0;
	struct scaling_block k = {.g = g,
				  .h = h,
				  .y0 = w->y0,
				  .zero = w->zero,
				  .nq = s->count,
				  .ns = s->count + g,
				  .a = w->ab,
				  .b = w->ab + g,
				  .y = s->y};

	for (size_t i = 0; i < g; i++)
		nb += s->count[i];
	/* from the closed form of Theorem 5, as scaling_bucket starts */
	for (size_t i = 0; i < g; i++)
		for (size_t j = 0; j < h; j++) {
			w->zero[i * h + j] = (uint8_t)(s->zero >> (i * h + j) & 1);
			w->y0[i * h + j] = (double)s->count[i] * s->count[g + j] / nb;
		}
	memset(w->ab, 0, (g + h) * sizeof *w->ab);
	s->ok = scaling_solve(&k, &w->sw, ALONE_TARGET) <= ALONE_TARGET;
}

/* Index of shape s among those met, or -1 (then *at is its free slot). */
static long shape_find(const struct alone_work *w, const struct shape *s, size_t *at)
{
	size_t i = w->n_slots ? s->hash & (w->n_slots - 1) : 0;

	for (; w->n_slots && w->slot[i] >= 0; i = (i + 1) & (w->n_slots - 1))
		if (shape_equal(&w->shapes[w->slot[i]], s))
			return w->slot[i];
	*at = i;
	return -1;
}

/* Keeps s, its answer found; -1 when out of memory. */
static long shape_add(struct alone_work *w, const struct shape *s)
{
	size_t at = 0;

	if (2 * (w->n + 1) > w->n_slots) {
		size_t n = w->n_slots ? 2 * w->n_slots : 64;
		int32_t *slot = malloc(n * sizeof *slot);

		if (!slot)
			return -1;
		free(w->slot);
		w->slot = slot;
		w->n_slots = n;
		for (size_t i = 0; i < n; i++)
			w->slot[i] = -1;
		for (size_t k = 0; k < w->n; k++) {
			shape_find(w, &w->shapes[k], &at);
			w->slot[at] = (int32_t)k;
		}
	}
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 16;
		struct shape *sh = realloc(w->shapes, cap * sizeof *sh);

		if (!sh)
			return -1;
		w->shapes = sh;
		w->cap = cap;
	}
	shape_find(w, s, &at);
	w->shapes[w->n] = *s;
	w->slot[at] = (int32_t)w->n;
	return (long)w->n++;
}

enum pm_status alone_solve(const struct dataset *ds, const struct invariants *inv, size_t b,
			   const uint8_t *zero, double *y, struct alone_work *w)
{
	size_t g = ds->bq_off[b + 1] - ds->bq_off[b], h = ds->bs_off[b + 1] - ds->bs_off[b];
	size_t off = inv->cell_off[b], at;
	struct shape s;
	long k;

	if (peel_bucket(ds, inv, b, zero, y, w))
		return PM_OK;
	if (g > SHAPE_SIDE || h > SHAPE_SIDE || g * h > SHAPE_CELLS)
		return scaling_bucket(ds, inv, b, zero, y, ALONE_TARGET, &w->sw);
	shape_key(w, ds, b, zero + off, &s);
	if ((k = shape_find(w, &s, &at)) < 0) {
		shape_solve(w, &s);
		if ((k = shape_add(w, &s)) < 0)
			return PM_ERR_NOMEM;
	}
	if (!w->shapes[k].ok)
		return PM_ERR_INTERNAL;
	for (size_t i = 0; i < g; i++)
		for (size_t j = 0; j < h; j++)
			y[off + w->ri[i] * h + w->ci[j]] = w->shapes[k].y[i * h + j];
	return PM_OK;
}

enum pm_status alone_rescale(const struct dataset *ds, const struct invariants *inv, size_t b,
			     double *y, struct alone_work *w)
{
	size_t g = ds->bq_off[b + 1] - ds->bq_off[b], h = ds->bs_off[b + 1] - ds->bs_off[b];
	size_t off = inv->cell_off[b];
	struct scaling_block k = {.g = g,
				  .h = h,
				  .y0 = w->sw.y0,
				  .zero = w->kz,
				  .nq = ds->bq_count + ds->bq_off[b],
				  .ns = ds->bs_count + ds->bs_off[b],
				  .a = w->sw.ab,
				  .b = w->sw.ab + g,
				  .y = y + off};

	for (size_t c = 0; c < g * h; c++) {
		w->sw.y0[c] = y[off + c];
		w->kz[c] = !(y[off + c] > 0);
	}
	memset(w->sw.ab, 0, (g + h) * sizeof *w->sw.ab);
	return scaling_solve(&k, &w->sw, ALONE_TARGET) <= RESCALE_TARGET ? PM_OK : PM_ERR_INTERNAL;
}
