/*
 * The solve step: forced zeros (zeros.c); every bucket that no open
 * knowledge row couples (rows the zeros make implied need no multiplier)
 * alone, by the closed form of Theorem 5 (the paper's irrelevant-bucket
 * optimization) or, with forced zeros, by alone.c; the two-level or the
 * full dual for the rest; the metrics.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alone.h"
#include "components.h"
#include "lifted_internal.h"
#include "loops.h"
#include "maxent.h"
#include "metrics.h"
#include "parallel.h"
#include "privacy.h"
#include "solve.h"
#include "zeros.h"

const char *solver_phase_name(enum solver_phase phase)
{
	static const char *const names[] = {"setup", "zeros", "iterate", "metrics"};

	return (unsigned)phase < sizeof names / sizeof *names ? names[phase] : "unknown";
}

void solver_options_init(struct solver_options *o)
{
	memset(o, 0, sizeof *o);
	o->tolerance = 1e-6;
	o->max_iterations = 10000;
	privacy_options_init(&o->privacy);
}

void solver_result_finish(struct solver_result *r)
{
	if (!r)
		return;
	free(r->cells);
	free(r->zero);
	free(r->post_off);
	free(r->post_sa);
	free(r->post_p);
	free(r->achieved);
	free(r->binding);
	free(r->st_achieved);
	free(r->st_binding);
	free(r->person_off);
	free(r->person_group);
	free(r->person_sa);
	free(r->person_p);
	memset(r, 0, sizeof *r);
}

/* Is bucket b coupled to others by a knowledge row that needs a
 * multiplier (not implied by the invariants and the zeros)? */
static int coupled(const struct invariants *inv, const uint8_t *implied, size_t b)
{
	for (size_t c = inv->cell_off[b]; c < inv->cell_off[b + 1]; c++) {
		size_t n;
		const uint32_t *rows = invariants_cell_rows(inv, c, &n);

		for (size_t e = 0; e < n; e++)
			if (!implied[rows[e]])
				return 1;
	}
	return 0;
}

struct solver_pool {
	struct parallel *threads;
};

enum pm_status solver_pool_create(int threads, struct solver_pool **out)
{
	struct solver_pool *p = calloc(1, sizeof *p);

	*out = NULL;
	if (!p || parallel_create(threads, &p->threads)) {
		free(p);
		return PM_ERR_NOMEM;
	}
	*out = p;
	return PM_OK;
}

void solver_pool_destroy(struct solver_pool *p)
{
	if (!p)
		return;
	parallel_destroy(p->threads);
	free(p);
}

/* Work arrays of one run; the pool and a scaling scratch per part. */
struct run {
	struct cancel *cancel; /* what the caller is told, and the clock */
	struct zeros z;
	uint8_t *active, *cpl;
	uint8_t *closed; /* per bucket: the closed form of Theorem 5 */
	/* what a probe leaves: its previous iterate, its runaway rows */
	struct solver_probe probe;
	struct parallel *pool;
	int own_pool; /* created for this run (not the caller's) */
	int parts;
	struct alone_work **w;	    /* per part */
	struct closed_memo *memo;   /* per part */
	size_t *n_coupled, *n_zero; /* per item of the split pass */
	double *violation;	    /* per item: the closed-form buckets' largest */
	double closed_violation;    /* over all of them */
	double *untouched;	    /* per chunk: that of the untouched ones */
	int early;		    /* the untouched buckets are done */
	int point;		    /* r->cells holds an estimate in every bucket */
	struct maxent_stats ms;
	/* with a time limit: the last solve that ran to its end, its closed
	 * buckets and their violation (keep_point; valid if kept_valid) */
	double *kept;
	uint8_t *kept_closed;
	double kept_violation;
	int kept_valid;
	/* the arguments of the split pass */
	const struct dataset *ds;
	const struct invariants *inv;
	const uint8_t *split_implied;
	double *y;
	const uint32_t *split_list; /* its buckets (NULL: all), per item */
	size_t split_n, split_chunk;
};

/* Buckets per item of the split pass over all buckets (and of the pass
 * over the untouched ones), and over the touched ones only: those take
 * microseconds each (alone.c) and may sit together at one end of the
 * bucket order (few rules touch few buckets, often neighbours), where
 * large chunks would leave one thread with the others' work. */
#define SPLIT_CHUNK   64
#define TOUCHED_CHUNK 4

/* Bucket b alone: the closed form of Theorem 5 without zeros (the paper's
 * irrelevant buckets; *worst takes its violation), alone.c with them; 1
 * if it stays coupled (scaling missed its target). Part p's scratch. */
static int split_bucket(struct run *u, size_t b, int p, double *worst)
{
	const struct invariants *inv = u->inv;
	size_t c0 = inv->cell_off[b], c1 = inv->cell_off[b + 1];

	u->closed[b] = !memchr(u->z.zero + c0, 1, c1 - c0);
	if (u->closed[b]) {
		double v;

		metrics_closed_bucket(u->ds, inv, b, u->y, &u->memo[p], &v);
		*worst = num_max(*worst, v);
	} else if (alone_solve(u->ds, inv, b, u->z.zero, u->y, u->w[p]))
		return 1;
	return 0;
}

/* The untouched buckets of chunk k, while the forced zeros of the others
 * are being found. */
static void untouched_item(void *ctx, size_t k, int p)
{
	struct run *u = ctx;
	size_t b1 =
	    (k + 1) * SPLIT_CHUNK < u->inv->n_groups ? (k + 1) * SPLIT_CHUNK : u->inv->n_groups;

	double worst = 0; /* stored once: see split_item */

	for (size_t b = k * SPLIT_CHUNK; b < b1; b++) {
		double v;

		if (invariants_touched(u->inv, b))
			continue;
		metrics_closed_bucket(u->ds, u->inv, b, u->y, &u->memo[p], &v);
		worst = num_max(worst, v);
		u->closed[b] = 1;
	}
	u->untouched[k] = worst;
}

/*
 * Buckets no open knowledge row couples are solved alone (split_bucket),
 * the others get cpl[b] = 1, y = 0 and (full dual) active[c] = 1 on their free cells
 * for the dual. With implied NULL (the paper's method) every touched
 * bucket is coupled. Counts coupled buckets and zeros per chunk, on the
 * stack and stored once: counters of neighbouring chunks share cache
 * lines, and another thread may be doing the next chunk.
 */
static void split_item(void *ctx, size_t k, int p)
{
	struct run *u = ctx;
	const struct invariants *inv = u->inv;
	size_t i1 = (k + 1) * u->split_chunk < u->split_n ? (k + 1) * u->split_chunk : u->split_n;
	size_t nc = 0, nz = 0;
	double worst = 0;

	for (size_t i = k * u->split_chunk; i < i1; i++) {
		size_t b = u->split_list ? u->split_list[i] : i;
		size_t c0 = inv->cell_off[b], c1 = inv->cell_off[b + 1];
		int t = u->split_implied ? coupled(inv, u->split_implied, b)
					 : invariants_touched(inv, b);

		u->closed[b] = 0;
		if (!t)
			t = split_bucket(u, b, p, &worst);
		if (t)
			memset(u->y + c0, 0, (c1 - c0) * sizeof *u->y);
		/* active: only coupled buckets' cells, now or before */
		for (size_t c = c0; u->active && (t || u->cpl[b]) && c < c1; c++)
			u->active[c] = t && !u->z.zero[c];
		for (size_t c = c0; !u->closed[b] && c < c1; c++)
			nz += u->z.zero[c];
		nc += (size_t)t;
		u->cpl[b] = (uint8_t)t;
	}
	u->n_coupled[k] = nc;
	u->n_zero[k] = nz;
	u->violation[k] = worst;
}

/* Returns how many buckets are coupled; *zeros the forced zeros. Once the
 * untouched buckets are done (find_zeros), only the touched ones. */
static size_t split_buckets(struct run *u, const uint8_t *implied, double *y, size_t *zeros)
{
	size_t n = 0, items, groups = u->inv->n_groups;

	u->split_implied = implied;
	u->y = y;
	u->split_list = u->early ? u->inv->touched : NULL;
	u->split_n = u->early ? u->inv->n_touched : groups;
	u->split_chunk = u->early ? TOUCHED_CHUNK : SPLIT_CHUNK;
	items = (u->split_n + u->split_chunk - 1) / u->split_chunk;
	parallel_items(u->pool, items, split_item, u);
	*zeros = 0;
	u->closed_violation = 0;
	for (size_t k = 0; k < items; k++) {
		n += u->n_coupled[k];
		*zeros += u->n_zero[k];
		u->closed_violation = fmax(u->closed_violation, u->violation[k]);
	}
	for (size_t k = 0; u->early && k < (groups + SPLIT_CHUNK - 1) / SPLIT_CHUNK; k++)
		u->closed_violation = fmax(u->closed_violation, u->untouched[k]);
	return n;
}

static void fill_counts(const struct invariants *inv, struct solver_result *r)
{
	r->variables = inv->n_cells;
	r->qi_invariants = inv->n_qi_rows;
	r->sa_invariants = inv->n_sa_rows;
	r->knowledge = inv->n_knowledge_rows;
	r->zero_invariants = inv->zero_invariants;
}

static void run_finish(struct run *u)
{
	for (int p = 0; u->w && p < u->parts; p++)
		alone_work_destroy(u->w[p]);
	free(u->w);
	free(u->memo);
	free(u->n_coupled);
	free(u->n_zero);
	free(u->violation);
	free(u->untouched);
	if (u->own_pool)
		parallel_destroy(u->pool);
	zeros_finish(&u->z);
	free(u->active);
	free(u->cpl);
	free(u->closed);
	free(u->probe.prev);
	free(u->probe.ray);
	free(u->kept);
	free(u->kept_closed);
}

/* The caller's pool, or one for this run; one thread for small tables,
 * where waking a second costs more than it takes over. */
static enum pm_status run_pool(struct run *u, const struct dataset *ds,
			       const struct solver_options *o)
{
	if (ds->n_groups < 256)
		return PM_OK; /* NULL: every pass inline */
	if (o->pool) {
		u->pool = o->pool->threads;
		return PM_OK;
	}
	u->own_pool = 1;
	return parallel_create(o->threads, &u->pool);
}

static enum pm_status run_init(struct run *u, const struct dataset *ds, const struct knowledge *k,
			       const struct invariants *inv, const struct solver_options *o)
{
	size_t n = inv->n_cells + 1, g_max = 1, h_max = 1;

	for (size_t b = 0; b < ds->n_groups; b++) {
		size_t g = ds->bq_off[b + 1] - ds->bq_off[b], h = ds->bs_off[b + 1] - ds->bs_off[b];

		g_max = g > g_max ? g : g_max;
		h_max = h > h_max ? h : h_max;
	}
	if (zeros_init(&u->z, ds, k, inv))
		return PM_ERR_NOMEM;
	u->z.threads = o->threads;
	/* the cells the full dual solves for (the two-level dual takes cpl) */
	u->active = o->method == SOLVER_FULL_DUAL ? calloc(n, 1) : NULL;
	u->cpl = calloc(ds->n_groups + 1, 1);
	u->closed = calloc(ds->n_groups + 1, 1);
	/* items of the split pass: SPLIT_CHUNK > TOUCHED_CHUNK */
	u->n_coupled = calloc(ds->n_groups / TOUCHED_CHUNK + 1, sizeof *u->n_coupled);
	u->n_zero = calloc(ds->n_groups / TOUCHED_CHUNK + 1, sizeof *u->n_zero);
	u->violation = calloc(ds->n_groups / TOUCHED_CHUNK + 1, sizeof *u->violation);
	u->untouched = calloc(ds->n_groups / SPLIT_CHUNK + 1, sizeof *u->untouched);
	u->ds = ds;
	u->inv = inv;
	if (o->time_limit > 0) { /* for its best point (keep_point) */
		u->kept = malloc(n * sizeof *u->kept);
		u->kept_closed = malloc(ds->n_groups + 1);
		if (!u->kept || !u->kept_closed)
			return PM_ERR_NOMEM;
	}
	if ((o->method == SOLVER_FULL_DUAL && !u->active) || !u->cpl || !u->closed ||
	    !u->n_coupled || !u->n_zero || !u->violation || !u->untouched || run_pool(u, ds, o))
		return PM_ERR_NOMEM;
	u->parts = parallel_parts(u->pool);
	u->w = calloc((size_t)u->parts, sizeof *u->w);
	u->memo = calloc((size_t)u->parts, sizeof *u->memo);
	if (!u->w || !u->memo)
		return PM_ERR_NOMEM;
	for (int p = 0; p < u->parts; p++)
		if (alone_work_create(g_max, h_max, &u->w[p]))
			return PM_ERR_NOMEM;
	return PM_OK;
}

/* The probe's verdict (stop_probe_cell): every free cell of the
 * undecided components clean. */
static int probe_clean(const struct invariants *inv, const struct run *u, const double *y)
{
	double floor = stop_probe_floor(u->ms.max_violation);
	const struct components *open = &u->z.open;

	if (!u->ms.converged)
		return 0;
	for (size_t k = 0; k < open->b_off[open->n]; k++) {
		size_t b = open->bucket[k];

		for (size_t c = inv->cell_off[b]; c < inv->cell_off[b + 1]; c++)
			if (!u->z.zero[c] && !stop_probe_cell(y[c], u->probe.prev[c], floor))
				return 0;
	}
	return 1;
}

/*
 * Before a solve starts over (a second probe, the solve after the exact
 * zeros): the last one, which ran to its end, is kept for the time
 * limit's best point (best_point). The new one starts from μ = 0, its
 * early iterates far from where the last one ended.
 */
static void keep_point(struct run *u, const double *y)
{
	if (!u->kept || !u->point)
		return;
	memcpy(u->kept, y, u->inv->n_cells * sizeof *y);
	memcpy(u->kept_closed, u->closed, u->inv->n_groups);
	u->kept_violation = u->closed_violation;
	u->kept_valid = 1;
}

/* Solves with the zeros of u: buckets alone, then the coupled ones. */
static enum pm_status solve_split(const struct dataset *ds, const struct invariants *inv,
				  const struct solver_options *o, int probe, struct run *u,
				  struct solver_result *r, struct pm_error *err)
{
	/* the full dual is the paper's method: every multiplier of the
	 * touched buckets, implied rows included */
	const uint8_t *implied = o->method == SOLVER_FULL_DUAL ? NULL : u->z.implied;

	fill_counts(inv, r);
	keep_point(u, r->cells);
	r->solved_buckets = split_buckets(u, implied, r->cells, &r->forced_zeros);
	/* a stopped solve leaves its last iterate in the coupled buckets */
	u->point = 1;
	if (!r->solved_buckets) { /* every bucket solved alone: no dual left */
		memset(&u->ms, 0, sizeof u->ms);
		u->ms.converged = 1;
		return PM_OK;
	}
	if (probe && !u->probe.prev &&
	    (!(u->probe.prev = calloc(inv->n_cells + 1, sizeof *u->probe.prev)) ||
	     !(u->probe.ray = calloc(inv->n_rows + 1, 1))))
		return error_set(err, PM_ERR_NOMEM, "", "out of memory");
	if (probe)
		memset(u->probe.ray, 0, inv->n_rows);
	if (o->method == SOLVER_FULL_DUAL)
		return maxent_solve(inv, u->active, implied, o, u->cancel, r->cells,
				    probe ? &u->probe : NULL, &u->ms, err);
	return components_solve(ds, inv, u->z.zero, u->z.implied, u->cpl, o, u->cancel, u->pool,
				r->cells, probe ? &u->probe : NULL, &u->ms, err);
}

/* The zero search deepened to depth, the rows of ray first (may be NULL;
 * zeros_deepen); the first time, the untouched buckets (which no zero can
 * change) go to the other threads meanwhile. */
static enum pm_status find_zeros(struct run *u, enum zeros_depth depth, const uint8_t *ray,
				 struct pm_error *err)
{
	size_t chunks = (u->inv->n_groups + SPLIT_CHUNK - 1) / SPLIT_CHUNK;
	enum pm_status st;

	if (!u->early)
		parallel_items_start(u->pool, chunks, untouched_item, u);
	st = zeros_deepen(&u->z, depth, ray, u->cancel, err);
	if (!u->early)
		parallel_items_finish(u->pool, chunks, untouched_item, u);
	u->early = 1;
	return st;
}

static int run_phase(struct run *u, enum solver_phase phase, int base, struct pm_error *err);

/* The depth the zero search starts at: the two-level solve costs less
 * than most relaxations, the full dual more than all of them. */
static enum zeros_depth first_depth(const struct solver_options *o)
{
	return o->method == SOLVER_TWO_LEVEL ? ZEROS_SMALL : ZEROS_RELAXED;
}

/* A probe's options: its tolerance and iteration cap (stop.h), `used`
 * of the caller's iterations spent. */
static struct solver_options probe_options(const struct solver_options *o, int used)
{
	struct solver_options po = *o;

	po.tolerance = stop_probe_tolerance(o->tolerance);
	po.max_iterations = stop_probe_iterations(o->max_iterations, used);
	return po;
}

/*
 * Forced zeros and the solve, for both methods. The zero search goes only
 * as deep as the solve shows a need: at each depth with components left
 * undecided the solve is the probe (probe_clean), and a clean one is the
 * answer; otherwise the search looks at the rows the probe saw run off
 * (zeros_deepen) and, if they give new zeros, probes again at the same
 * depth, else goes one depth further (to ZEROS_EXACT once some probe's
 * rows gave zeros). A depth that adds no zero leaves the problem as it
 * was, so the last probe's verdict stands and the search goes on at
 * once; at ZEROS_EXACT such a probe's converged solve is the answer
 * (cells it left tiny, not a forced zero, made it look unclean). A
 * probe whose failure leads to ZEROS_EXACT is the last chance
 * (struct solver_probe.last): a probe cannot tell a forced zero from a
 * tiny positive cell, both shrinking by a steady factor, and the exact
 * decision only speeds up a solve that runs to its end anyway, so it
 * does, and a converged one is the answer, clean or not.
 */
static enum pm_status solve_all(const struct dataset *ds, const struct invariants *inv,
				const struct solver_options *o, struct run *u,
				struct solver_result *r, struct pm_error *err)
{
	enum pm_status st = PM_OK;
	int used = 0, solved = 0, rayed = 0;
	const uint8_t *ray = NULL;

	u->y = r->cells; /* for the untouched buckets (find_zeros) */
	if (!inv->n_knowledge_rows)
		return run_phase(u, SOLVER_PHASE_ITERATE, 0, err)
			   ? PM_ERR_CANCELLED
			   : solve_split(ds, inv, o, 0, u, r, err);
	for (enum zeros_depth d = first_depth(o); !st && d <= ZEROS_EXACT;) {
		int probe, hinted;
		struct solver_options so;

		if (run_phase(u, SOLVER_PHASE_ZEROS, used, err))
			return PM_ERR_CANCELLED;
		/* the last probe's rows, looked at once; once a ray gave zeros
		 * and the probe still fails, the next one that gives none
		 * leads to the exact decision, not to a relaxation and another
		 * probe (what is left is seldom a per-value argument) */
		if (rayed)
			d = ZEROS_EXACT;
		st = find_zeros(u, d, ray, err);
		ray = NULL;
		if (st)
			break;
		hinted = u->z.depth < d; /* the probe's rows gave zeros */
		rayed |= hinted;
		if (!hinted && solved && !u->z.added && (d < ZEROS_EXACT || u->ms.converged)) {
			d++;
			continue;
		}
		probe = u->z.depth < ZEROS_EXACT && u->z.open.n;
		/* a failure leads to ZEROS_EXACT (unless its ray gives zeros) */
		u->probe.last = rayed || u->z.depth >= ZEROS_RELAXED;
		if (run_phase(u, SOLVER_PHASE_ITERATE, used, err))
			return PM_ERR_CANCELLED;
		so = probe ? probe_options(o, used) : *o;
		if (!probe)
			so.max_iterations = o->max_iterations - used;
		st = solve_split(ds, inv, &so, probe, u, r, err);
		solved = 1;
		u->ms.iterations += used;
		used = u->ms.iterations;
		/* at the caller's limit: a best effort, not converged */
		if (st || !probe || (u->probe.last && u->ms.converged) ||
		    probe_clean(inv, u, r->cells) || used >= o->max_iterations)
			break;
		ray = u->probe.ray;
		d += !hinted;
	}
	return st;
}

/* The phase from now on, the iterations of the solves that ended being
 * base; 1 (err set) if the solve is to stop. */
static int run_phase(struct run *u, enum solver_phase phase, int base, struct pm_error *err)
{
	if (!cancel_phase(u->cancel, phase, base))
		return 0;
	error_set(err, PM_ERR_CANCELLED, "", "the solve was cancelled");
	return 1;
}

/* The pseudonym model's solve enters its iterations (lifted_run). */
static int lifted_iterate(void *ctx, struct pm_error *err)
{
	return run_phase(ctx, SOLVER_PHASE_ITERATE, 0, err);
}

/*
 * Chunk k of the best point: with an iterate (u->point), each coupled
 * bucket's cells scaled to its counts, the cells as the kernel (a
 * stopped full dual holds the invariants only at convergence, the
 * two-level inner solves only to their loose targets far from it),
 * or the closed form should the scaling miss; without one (the zero
 * search stopped before any solve), the closed form of Theorem 5 in
 * every bucket not yet done (the untouched ones are).
 */
static void best_item(void *ctx, size_t k, int p)
{
	struct run *u = ctx;
	size_t b1 =
	    (k + 1) * SPLIT_CHUNK < u->inv->n_groups ? (k + 1) * SPLIT_CHUNK : u->inv->n_groups;
	double worst = 0;

	for (size_t b = k * SPLIT_CHUNK; b < b1; b++) {
		double v;

		if (u->point && u->cpl[b] &&
		    alone_rescale(u->ds, u->inv, b, u->y, u->w[p]) != PM_OK)
			metrics_closed_form(u->ds, u->inv, b, u->y);
		if (u->point || u->closed[b])
			continue;
		metrics_closed_bucket(u->ds, u->inv, b, u->y, &u->memo[p], &v);
		worst = num_max(worst, v);
		u->closed[b] = 1;
	}
	u->violation[k] = worst;
}

/*
 * The time limit stopped the solve: its best point, complete and
 * consistent in every cell (best_item), for the metrics, or the last
 * solve that ran to its end (keep_point) where that one violates the
 * rows less. The knowledge rows may be violated; max_violation says by
 * how much.
 */
static void best_point(struct run *u, double *y)
{
	/* the chunks of untouched_item: untouched[k] is chunk k's */
	size_t items = (u->inv->n_groups + SPLIT_CHUNK - 1) / SPLIT_CHUNK;
	double last, kept;

	u->y = y;
	parallel_items(u->pool, items, best_item, u);
	for (size_t k = 0; !u->point && k < items; k++)
		u->closed_violation =
		    fmax(fmax(u->closed_violation, u->violation[k]), u->untouched[k]);
	if (!u->kept_valid)
		return;
	metrics_max_violation(u->ds, u->inv, y, &last);
	metrics_max_violation(u->ds, u->inv, u->kept, &kept);
	if (!(kept < last))
		return;
	memcpy(y, u->kept, u->inv->n_cells * sizeof *y);
	memcpy(u->closed, u->kept_closed, u->inv->n_groups);
	u->closed_violation = u->kept_violation;
}

/*
 * The zero search leaves the intervals out, so it cannot see that they
 * conflict (with each other or the rest); the solve then does not
 * converge. Then, and only then, the exact programs with the intervals'
 * bounds decide: PM_ERR_INCONSISTENT naming an irreducible conflicting
 * set, or PM_OK (no conflict: the result stands, not converged).
 */
static enum pm_status interval_conflict(struct run *u, const struct invariants *inv,
					struct pm_error *err)
{
	if (u->ms.converged || invariants_first_interval(inv) == inv->n_rows)
		return PM_OK;
	return zeros_lp_conflict(&u->z, u->cancel, 0, err);
}

/* o's warm start where it is exact (struct solver_warm), its zeros
 * seeding the search; NULL elsewhere. */
static const struct solver_warm *warm_start(const struct knowledge *k, const struct invariants *inv,
					    const struct solver_options *o, struct zeros *z)
{
	if (!o->warm || o->method != SOLVER_TWO_LEVEL || lifted_needed(k))
		return NULL;
	for (size_t i = inv->n_qi_rows + inv->n_sa_rows; i < inv->n_rows; i++)
		if (invariants_interval(inv, i))
			return NULL;
	for (size_t c = 0; c < inv->n_cells; c++)
		z->zero[c] |= o->warm->zero[c];
	return o->warm;
}

enum pm_status solver_run(const struct dataset *ds, const struct knowledge *k,
			  const struct invariants *inv, const struct solver_options *o,
			  struct solver_result *r, struct pm_error *err)
{
	struct run u = {0};
	struct lifted_answer la = {0};
	double t0 = solver_now(), t1;
	struct cancel c;
	struct solver_options wo = *o;
	enum pm_status st;

	memset(r, 0, sizeof *r);
	cancel_init(&c, o, t0);
	wo.warm = NULL; /* warm_start's to decide */
	u.cancel = &c;
	/* every cell is written by the split (solve_split) */
	r->cells = malloc((inv->n_cells + 1) * sizeof *r->cells);
	st = r->cells ? run_init(&u, ds, k, inv, o) : PM_ERR_NOMEM;
	if (st) {
		error_set(err, st, "", "out of memory");
		goto out;
	}
	if (lifted_needed(k)) {
		struct lifted_phase ph = {lifted_iterate, &u};

		st = lifted_run(ds, k, inv, &wo, &c, &ph, &la, r->cells, &u.ms, &r->forced_zeros,
				err);
	} else {
		wo.warm = warm_start(k, inv, o, &u.z);
		st = solve_all(ds, inv, &wo, &u, r, err);
		if (!st)
			st = interval_conflict(&u, inv, err);
		if (!st && !(r->zero = malloc(inv->n_cells + 1)))
			st = error_set(err, PM_ERR_NOMEM, "", "out of memory");
		else if (!st)
			memcpy(r->zero, u.z.zero, inv->n_cells);
	}
	if (st == PM_ERR_CANCELLED && cancel_expired(&c)) {
		if (!lifted_needed(k))
			best_point(&u, r->cells);
		st = error_set(err, PM_OK, "", "%s", ""); /* not a cancel */
	}
	if (st)
		goto out;
	r->iterations = u.ms.iterations;
	t1 = solver_now();
	if (!cancel_expired(&c) && cancel_phase(&c, SOLVER_PHASE_METRICS, u.ms.iterations)) {
		st = error_set(err, PM_ERR_CANCELLED, "", "the solve was cancelled");
		goto out;
	}
	st = lifted_needed(k)
		 ? metrics_compute(ds, inv, NULL, 0, u.pool, r, err)
		 : metrics_compute(ds, inv, u.closed, u.closed_violation, u.pool, r, err);
	if (!st && ((st = metrics_achieved(k, inv, o->tolerance, r)) ||
		    (lifted_needed(k) && (st = lifted_outputs(&la, k, o->tolerance, r)))))
		error_set(err, st, "", "out of memory");
	if (st)
		goto out;
	r->metrics_seconds = solver_now() - t1;
	t1 = solver_now();
	if ((st = privacy_all(ds, inv, &o->privacy, r))) {
		error_set(err, st, "", "out of memory");
		goto out;
	}
	r->privacy_seconds = solver_now() - t1;
	r->zeros_seconds = u.z.seconds;
	r->status = stop_converged(r->max_violation, o->tolerance) ? SOLVER_CONVERGED
								   : SOLVER_NOT_CONVERGED;
	/* stopped by the time limit: not converged, whatever its violation
	 * (SPEC section 3) */
	if (cancel_expired(&c))
		r->status = SOLVER_NOT_CONVERGED;
	if (r->status != SOLVER_CONVERGED)
		snprintf(r->reason, sizeof r->reason, "%s",
			 cancel_expired(&c) ? "time_limit"
			 : u.ms.reason[0]   ? u.ms.reason
					    : "violation above the tolerance");
	/* a forced zero left unknown keeps its cell shrinking step by step */
	if (r->status != SOLVER_CONVERGED && !cancel_expired(&c) && u.z.undecided)
		snprintf(r->reason + strlen(r->reason), sizeof r->reason - strlen(r->reason),
			 "; the forced zeros of %zu component(s) too large for the exact "
			 "search were left undecided",
			 u.z.undecided);
	r->seconds = solver_now() - t0;
out:
	lifted_answer_finish(&la);
	run_finish(&u);
	cancel_finish(&c);
	return st;
}
