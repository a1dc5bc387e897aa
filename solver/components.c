/*
 * Independent components. Buckets that no open knowledge row links have
 * nothing to do with each other: the two-level dual separates into one
 * outer problem per connected component of the graph whose vertices are
 * the coupled buckets and whose edges are the open rows (the paper's
 * irrelevant-bucket optimization of Section 6, generalized). Each
 * component gets its own Newton iteration, stopping test and line search,
 * so a component that converges in three steps is not dragged through the
 * fifteen another one needs.
 *
 * They run on all cores: components too large to be one thread's item
 * (more than LARGE_SHARE of the cells per part, and enough buckets for
 * the pool: TWOLEVEL_POOL_BUCKETS) one after the other, each on the whole
 * pool; the rest as items of one parallel pass, largest first, each on
 * one thread. Every component's answer is the same
 * whichever thread solves it, and the outcomes are merged in component
 * order.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "components.h"
#include "maxent.h"
#include "parallel.h"
#include "solve.h"
#include "twolevel.h"

/* A component is solved on the whole pool when its cells exceed this
 * share of all cells per part. */
#define LARGE_SHARE 0.5

static uint32_t root(uint32_t *p, uint32_t x)
{
	while (p[x] != x) {
		p[x] = p[p[x]];
		x = p[x];
	}
	return x;
}

void components_finish(struct components *cs)
{
	free(cs->b_off);
	free(cs->r_off);
	free(cs->bucket);
	free(cs->row);
	free(cs->pos);
	memset(cs, 0, sizeof *cs);
}

/* The bucket of row r's first cell (r not empty). */
static uint32_t row_bucket(const struct invariants *inv, size_t r)
{
	return inv->cell_group[inv->row_cell[inv->row_off[r]]];
}

/* Is knowledge row r one of the problem's: open, not empty, through a
 * bucket in the set? */
static int row_used(const struct invariants *inv, const uint8_t *in, const uint8_t *row_out,
		    size_t r)
{
	return !(row_out && row_out[r]) && inv->row_off[r] < inv->row_off[r + 1] &&
	       in[row_bucket(inv, r)];
}

/* Joins the sets of x and y (the smaller root wins, as root() assumes). */
static void join(uint32_t *parent, uint32_t x, uint32_t y)
{
	x = root(parent, x);
	y = root(parent, y);
	if (x < y)
		parent[y] = x;
	else
		parent[x] = y;
}

/*
 * Links the buckets of every used row (union-find in parent over the
 * buckets, then the slots, then the knowledge rows: each set's root its
 * first bucket; rused: which rows, by the buckets first given); a bucket
 * a used row passes through joins the set (in).
 * A row takes its slots whole, so a row joins its slots, and a cell with
 * a used row joins its bucket to its slot: a step per slot of a row and
 * one per cell, not one per pair of a cell and a row (ten times the
 * cells on rules of one attribute).
 */
static void link_rows(const struct invariants *inv, uint8_t *in, const uint8_t *row_out,
		      uint32_t *parent, uint8_t *used, uint8_t *rused)
{
	size_t nb = inv->n_groups, ns = inv->n_slots, first = inv->n_qi_rows + inv->n_sa_rows;

	memset(used, 0, ns);
	for (size_t r = first; r < inv->n_rows; r++) {
		size_t n;
		const uint32_t *slots;

		if (!(rused[r - first] = (uint8_t)row_used(inv, in, row_out, r)))
			continue;
		slots = invariants_row_slots(inv, r, &n);
		for (size_t e = 0; e < n; e++) {
			join(parent, (uint32_t)(nb + slots[e]), (uint32_t)(nb + ns + r - first));
			used[slots[e]] = 1;
		}
	}
	for (size_t b = 0; b < nb; b++)
		for (size_t c = inv->cell_off[b]; c < inv->cell_off[b + 1]; c++)
			if (used[inv->cell_slot[c]]) {
				in[b] = 1;
				join(parent, (uint32_t)b, (uint32_t)(nb + inv->cell_slot[c]));
			}
}

/* Numbers the components (id per root, by their first bucket) and lays
 * out their buckets and rows, ascending. */
static enum pm_status lay_out(const struct invariants *inv, const uint8_t *in, const uint8_t *rused,
			      uint32_t *parent, int whole, struct components *cs)
{
	size_t nb = inv->n_groups, nr = 0, n_in = 0, first = inv->n_qi_rows + inv->n_sa_rows;
	uint32_t *id = parent; /* the numbers overwrite the roots, in order */

	for (size_t b = 0; b < nb; b++) {
		if (!in[b])
			continue;
		n_in++;
		parent[b] = root(parent, (uint32_t)b);
	}
	for (size_t r = first; r < inv->n_rows; r++)
		nr += rused[r - first];
	/* parent[b] is now b's root, a bucket at or before b: numbering the
	 * buckets in order, a root's number is in place before any later
	 * bucket of its set reads it, and no bucket's root is read after its
	 * own number overwrote it */
	for (size_t b = 0; b < nb; b++) {
		if (!in[b])
			continue;
		id[b] = parent[b] == b ? (uint32_t)(whole ? 0 : cs->n++) : id[parent[b]];
	}
	cs->n = whole ? 1 : cs->n;
	cs->b_off = calloc(cs->n + 2, sizeof *cs->b_off);
	cs->r_off = calloc(cs->n + 2, sizeof *cs->r_off);
	cs->bucket = malloc((n_in + 1) * sizeof *cs->bucket);
	cs->row = malloc((nr + 1) * sizeof *cs->row);
	cs->pos = malloc((nb + 1) * sizeof *cs->pos);
	if (!cs->b_off || !cs->r_off || !cs->bucket || !cs->row || !cs->pos)
		return PM_ERR_NOMEM;
	for (size_t b = 0; b < nb; b++)
		if (in[b])
			cs->b_off[id[b] + 2]++;
	for (size_t r = inv->n_qi_rows + inv->n_sa_rows; r < inv->n_rows; r++)
		if (rused[r - first])
			cs->r_off[id[row_bucket(inv, r)] + 2]++;
	for (size_t i = 0; i < cs->n; i++) {
		cs->b_off[i + 2] += cs->b_off[i + 1];
		cs->r_off[i + 2] += cs->r_off[i + 1];
	}
	for (size_t b = 0; b < nb; b++) {
		if (!in[b])
			continue;
		cs->pos[b] = (uint32_t)cs->b_off[id[b] + 1];
		cs->bucket[cs->b_off[id[b] + 1]++] = (uint32_t)b;
	}
	for (size_t b = 0; b < nb; b++) /* b_off[i] is now where i starts */
		if (in[b])
			cs->pos[b] -= (uint32_t)cs->b_off[id[b]];
	for (size_t r = inv->n_qi_rows + inv->n_sa_rows; r < inv->n_rows; r++)
		if (rused[r - first])
			cs->row[cs->r_off[id[row_bucket(inv, r)] + 1]++] = (uint32_t)r;
	return PM_OK;
}

enum pm_status components_build(const struct invariants *inv, const uint8_t *bucket_in,
				const uint8_t *row_out, int whole, struct components *cs)
{
	size_t nb = inv->n_groups, ns = inv->n_slots, nodes = nb + ns + inv->n_knowledge_rows;
	uint32_t *parent = malloc((nodes + 1) * sizeof *parent);
	uint8_t *in = malloc(nb + 1), *used = malloc(ns + 1),
		*rused = malloc(inv->n_knowledge_rows + 1);
	enum pm_status st = PM_ERR_NOMEM;

	memset(cs, 0, sizeof *cs);
	if (!parent || !in || !used || !rused)
		goto out;
	memcpy(in, bucket_in, nb);
	for (size_t x = 0; x < nodes; x++)
		parent[x] = (uint32_t)x;
	link_rows(inv, in, row_out, parent, used, rused);
	st = lay_out(inv, in, rused, parent, whole, cs);
out:
	if (st)
		components_finish(cs);
	free(parent);
	free(in);
	free(used);
	free(rused);
	return st;
}

/* The solve of every component, and what each came to. */
struct comp_solve {
	const struct dataset *ds;
	const struct invariants *inv;
	const uint8_t *zero;
	const struct solver_options *o;
	struct cancel *cancel; /* shared by the components (it is locked) */
	double *y;
	const struct solver_probe *probe;
	struct components cs;
	struct comp_size {
		size_t cells, buckets, i;
	} * order;	   /* components by cells, descending */
	size_t first_item; /* order[first_item ..]: the items */
	struct maxent_stats *st;
	enum pm_status *ret;
};

/* Component i alone, on the pool given (NULL: this thread). */
static void comp_one(struct comp_solve *s, size_t i, struct parallel *pool)
{
	const struct components *cs = &s->cs;
	struct twolevel t;
	enum pm_status ret;

	ret = twolevel_init_lists(&t, s->ds, s->inv, s->zero, cs, i, pool,
				  s->o->warm ? s->o->warm->y : NULL, s->y);
	/* a component that starts once another's progress callback asked
	 * to stop (a cancel, or the time limit) stops at its start */
	if (!ret && s->cancel && cancel_stopped(s->cancel))
		ret = PM_ERR_CANCELLED;
	else if (!ret)
		ret = twolevel_run(&t, s->o, s->cancel, s->probe, &s->st[i]);
	/* a cancelled one leaves its last iterate (solver.c's best point when
	 * the time limit stopped the solve) */
	if (!ret || ret == PM_ERR_CANCELLED)
		twolevel_store(&t);
	twolevel_finish(&t);
	s->ret[i] = ret;
}

static void comp_item(void *ctx, size_t k, int part)
{
	struct comp_solve *s = ctx;

	(void)part;
	comp_one(s, s->order[s->first_item + k].i, NULL);
}

/* Larger components first; ties by number. */
static int by_cells(const void *a, const void *b)
{
	const struct comp_size *x = a, *y = b;

	if (x->cells != y->cells)
		return x->cells < y->cells ? 1 : -1;
	return (x->i > y->i) - (x->i < y->i);
}

/* The outcomes merged in component order: converged if all are; the
 * iterations and violation of the worst; the first failure's reason.
 * After a failure (a cancel) only the iterations, of those that ran. */
static enum pm_status comp_merge(const struct comp_solve *s, struct maxent_stats *st)
{
	enum pm_status ret = PM_OK;

	memset(st, 0, sizeof *st);
	st->converged = 1;
	for (size_t i = 0; i < s->cs.n; i++) {
		const struct maxent_stats *c = &s->st[i];

		st->iterations = c->iterations > st->iterations ? c->iterations : st->iterations;
		ret = ret ? ret : s->ret[i];
		if (ret)
			continue;
		st->max_violation = fmax(st->max_violation, c->max_violation);
		if (!c->converged && st->converged)
			memcpy(st->reason, c->reason, sizeof st->reason);
		st->converged &= c->converged;
	}
	return ret;
}

static int is_large(const struct comp_size *c, double share)
{
	return (double)c->cells > share && c->buckets >= TWOLEVEL_POOL_BUCKETS;
}

/* Large components on the pool, one after the other; the rest at once. */
static void comp_schedule(struct comp_solve *s, struct parallel *pool)
{
	size_t n = s->cs.n, total = 0, large = 0;
	int parts = parallel_parts(pool);
	double share;

	for (size_t k = 0; k < n; k++)
		total += s->order[k].cells;
	share = LARGE_SHARE * (double)total / parts;
	/* by cells, descending: the large ones come first */
	for (; large < n && (parts == 1 || is_large(&s->order[large], share)); large++)
		comp_one(s, s->order[large].i, pool);
	s->first_item = large;
	parallel_items(pool, n - large, comp_item, s);
}

enum pm_status components_solve(const struct dataset *ds, const struct invariants *inv,
				const uint8_t *zero, const uint8_t *implied, const uint8_t *coupled,
				const struct solver_options *o, struct cancel *cancel,
				struct parallel *pool, double *y, const struct solver_probe *probe,
				struct maxent_stats *st, struct pm_error *err)
{
	struct comp_solve s = {
	    .ds = ds, .inv = inv, .zero = zero, .o = o, .cancel = cancel, .y = y, .probe = probe};
	enum pm_status ret = components_build(inv, coupled, implied, 0, &s.cs);

	memset(st, 0, sizeof *st);
	if (!ret) {
		s.order = malloc((s.cs.n + 1) * sizeof *s.order);
		s.st = calloc(s.cs.n + 1, sizeof *s.st);
		s.ret = calloc(s.cs.n + 1, sizeof *s.ret);
		ret = s.order && s.st && s.ret ? PM_OK : PM_ERR_NOMEM;
	}
	if (!ret) {
		for (size_t i = 0; i < s.cs.n; i++) {
			s.order[i] = (struct comp_size){0, s.cs.b_off[i + 1] - s.cs.b_off[i], i};
			for (size_t k = s.cs.b_off[i]; k < s.cs.b_off[i + 1]; k++)
				s.order[i].cells += inv->cell_off[s.cs.bucket[k] + 1] -
						    inv->cell_off[s.cs.bucket[k]];
		}
		qsort(s.order, s.cs.n, sizeof *s.order, by_cells);
		comp_schedule(&s, pool);
		ret = comp_merge(&s, st);
	}
	if (ret == PM_ERR_NOMEM)
		error_set(err, ret, "", "out of memory in the two-level solver");
	else if (ret == PM_ERR_CANCELLED)
		error_set(err, ret, "", "the solve was cancelled");
	else if (ret)
		error_set(err, ret, "", "L-BFGS rejected its setup (internal error)");
	components_finish(&s.cs);
	free(s.order);
	free(s.st);
	free(s.ret);
	return ret;
}
