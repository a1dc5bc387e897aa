/*
 * Independent components (components.c) on random tables with mined
 * knowledge and their exact forced zeros:
 *  - the components of the coupled buckets against a slow closure: every
 *    coupled bucket and every open row in exactly one component, a row's
 *    buckets all in its component, each component connected by its rows,
 *    lists ascending, pos[] each bucket's place;
 *  - components_solve, each component its own Newton iteration and the small
 *    ones on two threads at once, against Newton on all of them as one
 *    problem: the same estimate;
 *  - the progress callback, called one at a time, and a cancel from it.
 */
#include <math.h>
#include <stdint.h>

#include "check.h"
#include "components.h"
#include "instance.h"
#include "maxent.h"
#include "parallel.h"
#include "twolevel.h"

#define N_TABLES 100
#define SEED	 UINT64_C(20261122)

/* The open rows of the instance: knowledge rows, not implied, not empty,
 * through a coupled bucket. */
static int row_open(const struct instance *in, size_t r)
{
	const struct invariants *inv = &in->inv;

	return r >= inv->n_qi_rows + inv->n_sa_rows && !in->implied[r] &&
	       inv->row_off[r] < inv->row_off[r + 1] &&
	       in->coupled[inv->cell_group[inv->row_cell[inv->row_off[r]]]];
}

/* Component i's buckets reached from its first through its rows, to a
 * fixed point: 1 if that is all of them. */
static int connected(const struct instance *in, const struct components *cs, size_t i,
		     uint8_t *reach)
{
	const struct invariants *inv = &in->inv;
	size_t n = 1, before = 0;

	memset(reach, 0, inv->n_groups);
	reach[cs->bucket[cs->b_off[i]]] = 1;
	while (n != before) {
		before = n;
		for (size_t k = cs->r_off[i]; k < cs->r_off[i + 1]; k++) {
			size_t r = cs->row[k], any = 0;

			for (size_t e = inv->row_off[r]; e < inv->row_off[r + 1]; e++)
				any |= reach[inv->cell_group[inv->row_cell[e]]];
			for (size_t e = inv->row_off[r]; any && e < inv->row_off[r + 1]; e++) {
				uint8_t *x = &reach[inv->cell_group[inv->row_cell[e]]];

				n += !*x;
				*x = 1;
			}
		}
	}
	return n == cs->b_off[i + 1] - cs->b_off[i];
}

/* Checks cs against the instance; comp[b] gets each bucket's component. */
static void check_partition(const struct instance *in, const struct components *cs, size_t *comp)
{
	const struct invariants *inv = &in->inv;
	uint8_t *reach = malloc(inv->n_groups + 1), *row_seen = calloc(inv->n_rows + 1, 1);
	size_t buckets = 0;

	for (size_t b = 0; b < inv->n_groups; b++)
		comp[b] = SIZE_MAX;
	for (size_t i = 0; i < cs->n; i++) {
		CHECK(cs->b_off[i + 1] > cs->b_off[i]);
		for (size_t k = cs->b_off[i]; k < cs->b_off[i + 1]; k++) {
			uint32_t b = cs->bucket[k];

			CHECK(in->coupled[b] && comp[b] == SIZE_MAX);
			CHECK(k == cs->b_off[i] || cs->bucket[k - 1] < b);
			CHECK(cs->pos[b] == k - cs->b_off[i]);
			comp[b] = i;
			buckets++;
		}
	}
	for (size_t i = 0; i < cs->n; i++) {
		for (size_t k = cs->r_off[i]; k < cs->r_off[i + 1]; k++) {
			size_t r = cs->row[k];

			CHECK(row_open(in, r) && !row_seen[r]);
			CHECK(k == cs->r_off[i] || cs->row[k - 1] < r);
			row_seen[r] = 1;
			for (size_t e = inv->row_off[r]; e < inv->row_off[r + 1]; e++)
				CHECK(comp[inv->cell_group[inv->row_cell[e]]] == i);
		}
		CHECK(reach && connected(in, cs, i, reach));
	}
	for (size_t b = 0; b < inv->n_groups; b++)
		CHECK(!in->coupled[b] || comp[b] != SIZE_MAX);
	for (size_t r = 0; r < inv->n_rows; r++)
		CHECK(!row_open(in, r) || row_seen[r]);
	free(reach);
	free(row_seen);
}

/* Components of at most a quarter of all cells (LARGE_SHARE / 2) or of
 * fewer than TWOLEVEL_POOL_BUCKETS buckets: components_solve's items on a
 * pool of two, on its two threads at once. */
static size_t small_ones(const struct invariants *inv, const struct components *cs)
{
	size_t total = 0, n = 0;

	for (size_t k = 0; k < cs->b_off[cs->n]; k++)
		total += inv->cell_off[cs->bucket[k] + 1] - inv->cell_off[cs->bucket[k]];
	for (size_t i = 0; i < cs->n; i++) {
		size_t cells = 0;

		for (size_t k = cs->b_off[i]; k < cs->b_off[i + 1]; k++)
			cells += inv->cell_off[cs->bucket[k] + 1] - inv->cell_off[cs->bucket[k]];
		n += 4 * cells <= total || cs->b_off[i + 1] - cs->b_off[i] < TWOLEVEL_POOL_BUCKETS;
	}
	return n;
}

/* Newton on every coupled bucket as one problem (twolevel_init), into y. */
static int joint(struct instance *in, double *y)
{
	struct twolevel t;
	struct solver_options o;
	struct maxent_stats st;
	int ok;

	solver_options_init(&o);
	ok = twolevel_init(&t, in->ds, &in->inv, in->zero, in->implied, in->coupled, 1, y) ==
		 PM_OK &&
	     twolevel_run(&t, &o, NULL, NULL, &st) == PM_OK && st.converged;
	if (ok)
		twolevel_store(&t);
	twolevel_finish(&t);
	return ok;
}

struct progress {
	int calls, inside, overlap, stop_at;
};

/* Counts calls; two at once would be seen as inside > 0 (components on
 * two threads share the callback). */
static int on_progress(void *ctx, const struct solver_progress *sp)
{
	struct progress *p = ctx;
	int stop;

	(void)sp;
	p->overlap |= p->inside++ > 0;
	p->calls++;
	stop = p->stop_at > 0 && p->calls >= p->stop_at;
	p->inside--;
	return stop;
}

/* The components' solve on a pool of two; the largest difference from
 * the joint solve, or -1 if either failed. */
static double check_solve(struct instance *in, struct parallel *pool, struct progress *pr)
{
	struct solver_options o;
	struct maxent_stats st;
	struct pm_error err = {0};
	double *y = calloc(in->inv.n_cells + 1, sizeof *y), worst = -1;
	struct cancel c;

	solver_options_init(&o);
	o.progress = on_progress;
	o.progress_ctx = pr;
	cancel_init(&c, &o, solver_now());
	if (y && joint(in, y) &&
	    components_solve(in->ds, &in->inv, in->zero, in->implied, in->coupled, &o, &c, pool,
			     in->y, NULL, &st, &err) == PM_OK &&
	    st.converged) {
		worst = 0;
		for (size_t b = 0; b < in->inv.n_groups; b++)
			for (size_t c = in->inv.cell_off[b];
			     in->coupled[b] && c < in->inv.cell_off[b + 1]; c++)
				worst = fmax(worst, fabs(y[c] - in->y[c]) / fmax(1, y[c]));
	}
	cancel_finish(&c);
	free(y);
	return worst;
}

/* A callback that asks to stop at its first call cancels the solve. */
static void check_cancel(struct instance *in, struct parallel *pool)
{
	struct solver_options o;
	struct maxent_stats st;
	struct pm_error err = {0};
	struct progress pr = {.stop_at = 1};
	struct cancel c;

	solver_options_init(&o);
	o.progress = on_progress;
	o.progress_ctx = &pr;
	cancel_init(&c, &o, solver_now());
	if (components_solve(in->ds, &in->inv, in->zero, in->implied, in->coupled, &o, &c, pool,
			     in->y, NULL, &st, &err) == PM_ERR_CANCELLED) {
		CHECK(pr.calls >= 1);
		CHECK(strstr(err.message, "cancelled") != NULL);
	} else {
		CHECK(pr.calls == 0); /* no iteration: nothing to cancel */
	}
	cancel_finish(&c);
}

int main(void)
{
	/* few rules on all 3 attributes (a tuple each): the buckets they do
	 * not link are separate components */
	static const struct instance_knobs knobs = {{1, 3}, {3, 3}, 0};
	struct parallel *pool = NULL;
	int many = 0, parallel = 0, solved = 0, overlap = 0, calls = 0;
	double worst = 0;

	CHECK(parallel_create(2, &pool) == PM_OK);
	for (uint64_t i = 0; i < N_TABLES; i++) {
		uint64_t rng = SEED * 1000003 + i;
		struct instance in;
		struct components cs, whole;
		struct progress pr = {0};
		size_t *comp;

		if (!instance_make_k(&in, &rng, &knobs)) {
			CHECK(0);
			instance_free(&in);
			continue;
		}
		comp = malloc((in.inv.n_groups + 1) * sizeof *comp);
		CHECK(comp && components_build(&in.inv, in.coupled, in.implied, 0, &cs) == PM_OK);
		CHECK(components_build(&in.inv, in.coupled, in.implied, 1, &whole) == PM_OK);
		if (comp)
			check_partition(&in, &cs, comp);
		CHECK(whole.n == 1 && whole.b_off[1] == cs.b_off[cs.n] &&
		      whole.r_off[1] == cs.r_off[cs.n]);
		many += cs.n >= 2;
		parallel += small_ones(&in.inv, &cs) >= 2;
		{
			double d = check_solve(&in, pool, &pr);

			CHECK(d >= 0);
			worst = fmax(worst, d);
			solved += d >= 0;
		}
		overlap |= pr.overlap;
		calls += pr.calls;
		check_cancel(&in, pool);
		components_finish(&cs);
		components_finish(&whole);
		free(comp);
		instance_free(&in);
	}
	parallel_destroy(pool);
	printf("%d tables, %d with two components or more (%d with two solved at once), %d "
	       "solved both ways; worst difference %.3g; %d progress calls\n",
	       N_TABLES, many, parallel, solved, worst, calls);
	CHECK(many >= N_TABLES / 10 && parallel >= N_TABLES / 10);
	CHECK(solved == N_TABLES);
	CHECK(worst <= 1e-9);
	CHECK(calls > 0 && !overlap);
	return check_done();
}
