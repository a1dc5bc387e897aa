/*
 * The search for forced zeros, by depth (zeros.h): the cheap arguments
 * first (rows with right-hand side 0 zero their cells; zeros_propagate.c
 * settles every component whose knowledge rows are all tight, as
 * deterministic knowledge makes them, exactly), then the zeros that
 * combinations of one value's rows force (zeros_relax.c, each proved),
 * then, for each component of buckets that open rows still link, the
 * exact decision: the interior point method of zeros_ipm.c, and where
 * that does not settle, the linear program of zeros_lp_component.c. Untouched
 * buckets keep the strictly positive closed form and are never looked at.
 *
 * The solver deepens only as far as its own solve shows a need
 * (solver.c): most knowledge bounds are done after the cheap depths.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "components.h"
#include "solve.h"
#include "zeros.h"

enum pm_status zeros_init(struct zeros *z, const struct dataset *ds, const struct knowledge *k,
			  const struct invariants *inv)
{
	memset(z, 0, sizeof *z);
	z->ds = ds;
	z->k = k;
	z->inv = inv;
	z->zero = calloc(inv->n_cells + 1, 1);
	z->implied = calloc(inv->n_rows + 1, 1);
	z->settled = calloc(inv->n_rows + 1, 1);
	z->memo = calloc(1, sizeof *z->memo);
	if (!z->zero || !z->implied || !z->settled || !z->memo)
		return PM_ERR_NOMEM;
	for (size_t r = 0; r < inv->n_rows; r++)
		z->settled[r] = invariants_interval(inv, r);
	return PM_OK;
}

void zeros_finish(struct zeros *z)
{
	if (!z)
		return;
	free(z->zero);
	free(z->implied);
	free(z->settled);
	relax_memo_finish(z->memo);
	free(z->memo);
	components_finish(&z->open);
	memset(z, 0, sizeof *z);
}

/* Knowledge rows bounded by 0 (an equality's rhs, an interval's hi) zero
 * all their cells. */
static void direct_zeros(struct zeros *z)
{
	const struct invariants *inv = z->inv;

	for (size_t i = inv->n_qi_rows + inv->n_sa_rows; i < inv->n_rows; i++)
		for (size_t e = inv->row_off[i]; inv->hi[i] <= 0 && e < inv->row_off[i + 1]; e++)
			z->zero[inv->row_cell[e]] = 1;
}

/*
 * A knowledge row with no cell at all cannot hold unless its rhs (an
 * interval's lower bound) is 0, to ZERO_RECORDS: P(s | Q) = 3e-10 over
 * two records (6e-10 records) holds here as it does where the row has a
 * cell that is zero to 1e-9 records.
 */
static enum pm_status empty_rows(const struct zeros *z, struct pm_error *err)
{
	const struct invariants *inv = z->inv;

	for (size_t i = inv->n_qi_rows + inv->n_sa_rows; i < inv->n_rows; i++) {
		char msg[600] = "";

		if (inv->row_off[i] < inv->row_off[i + 1] || inv->rhs[i] <= ZERO_RECORDS)
			continue;
		zeros_describe_row(z, i, msg, sizeof msg);
		return error_set(err, PM_ERR_INCONSISTENT, "rules",
				 "no distribution satisfies this rule: %s (no bucket holds both a "
				 "matching record and the sensitive value)",
				 msg);
	}
	return PM_OK;
}

/*
 * An interval row's reach: per bucket b, its q hold qsum records of
 * which at most min(qsum, n(s, b)) and at least qsum - (n(b) - n(s, b))
 * can have its s, summed into [*l, *u] (the zeros left aside: a wider
 * range, so an interval outside it is out of reach all the more).
 */
static void row_reach(const struct invariants *inv, size_t r, double *l, double *u)
{
	size_t e = inv->row_off[r];

	*l = *u = 0;
	while (e < inv->row_off[r + 1]) {
		size_t c = inv->row_cell[e], b = inv->cell_group[c], h = inv->bucket_h[b];
		size_t j = (c - inv->cell_off[b]) % h;
		double qsum = 0, ns = invariants_sa_count(inv, b, j);

		for (; e < inv->row_off[r + 1] && inv->cell_group[inv->row_cell[e]] == b; e++)
			qsum +=
			    invariants_qi_count(inv, b, (inv->row_cell[e] - inv->cell_off[b]) / h);
		*u += fmin(qsum, ns);
		*l += fmax(0, qsum - (inv->bucket_n[b] - ns));
	}
}

/* An interval that its own row cannot reach (row_reach) is a conflict of
 * one rule: named at once, where the exact programs (interval_conflict
 * in solver.c) would cost a simplex over its whole component.
 * An interval whose min is all its row can reach leaves it no room: the
 * row is an equality at its min, which the search takes (not settled),
 * so that propagation fixes its cells at their most and zeros the rest.
 */
static enum pm_status unreachable_intervals(struct zeros *z, struct pm_error *err)
{
	const struct invariants *inv = z->inv;

	for (size_t r = inv->n_qi_rows + inv->n_sa_rows; r < inv->n_rows; r++) {
		double l, u, eps;
		char msg[600] = "";

		if (!invariants_interval(inv, r))
			continue;
		row_reach(inv, r, &l, &u);
		eps = 1e-9 * fmax(1, u);
		if (inv->rhs[r] <= u + eps && inv->hi[r] >= l - eps) {
			z->settled[r] = inv->rhs[r] < u - eps;
			continue;
		}
		zeros_describe_row(z, r, msg, sizeof msg);
		return error_set(err, PM_ERR_INCONSISTENT, "rules",
				 "no distribution satisfies this rule: %s (the buckets allow only "
				 "%.10g to %.10g records of it, the rule asks %.10g to %.10g)",
				 msg, l, u, inv->rhs[r], inv->hi[r]);
	}
	return PM_OK;
}

/* Knowledge row r's slots hashed, for duplicate_rows. */
static uint64_t slots_hash(const struct invariants *inv, size_t r)
{
	size_t n;
	const uint32_t *t = invariants_row_slots(inv, r, &n);
	uint64_t key = n;

	for (size_t e = 0; e < n; e++)
		key = (key ^ t[e]) * UINT64_C(0x100000001b3);
	return key;
}

/* Whether knowledge rows a and b take the same slots (the same cells). */
static int same_slots(const struct invariants *inv, size_t a, size_t b)
{
	size_t na, nb;
	const uint32_t *ta = invariants_row_slots(inv, a, &na),
		       *tb = invariants_row_slots(inv, b, &nb);

	return na == nb && (!na || !memcmp(ta, tb, na * sizeof *ta));
}

/*
 * An equality row with the same cells and right-hand side as an earlier
 * one is the same constraint: settled (it needs no multiplier; as an
 * open row its multiplier and the earlier one's could move in opposite
 * directions without end, a null direction of H). Mined rules give
 * such pairs wherever Top-K+ and Top-K- share a rule, many of them
 * when K is large. A row's slots
 * say its cells (it takes them whole), in the order of its tuples.
 */
static enum pm_status duplicate_rows(struct zeros *z)
{
	const struct invariants *inv = z->inv;
	size_t first = inv->n_qi_rows + inv->n_sa_rows, cap = 16;
	uint32_t *slot;

	while (cap < 2 * inv->n_knowledge_rows + 2)
		cap *= 2;
	if (!(slot = calloc(cap, sizeof *slot))) /* row + 1, 0 empty */
		return PM_ERR_NOMEM;
	for (size_t r = first; r < inv->n_rows; r++) {
		size_t i;

		if (z->settled[r] || invariants_interval(inv, r))
			continue;
		for (i = slots_hash(inv, r) & (cap - 1); slot[i]; i = (i + 1) & (cap - 1))
			if (inv->rhs[slot[i] - 1] == inv->rhs[r] && same_slots(inv, slot[i] - 1, r))
				break;
		if (slot[i])
			z->settled[r] = 1;
		else
			slot[i] = (uint32_t)(r + 1);
	}
	free(slot);
	return PM_OK;
}

/* ZEROS_CHEAP: the rows with right-hand side 0, duplicates, then
 * propagation. */
static enum pm_status cheap(struct zeros *z, int *infeasible, struct pm_error *err)
{
	enum pm_status st;

	direct_zeros(z);
	st = empty_rows(z, err);
	if (!st)
		st = unreachable_intervals(z, err);
	if (!st)
		st = duplicate_rows(z);
	return st ? st : zeros_propagate(z->inv, z->zero, z->settled, infeasible);
}

/*
 * Zeros of the per-value relaxations (zeros_relax.c) of values whose
 * open rows hold at most max_cells free cells, each round followed by
 * propagation, until a round finds nothing new: what the relaxations
 * force, the rows and flows may carry further, and the other way round.
 * A value is relaxed again only where its buckets have new zeros (the
 * memo, kept for the whole search).
 */
static enum pm_status relax_and_propagate(struct zeros *z, size_t max_cells, struct cancel *cancel,
					  int *infeasible)
{
	enum pm_status st = PM_OK;
	size_t found = 1;

	while (!st && found && !*infeasible) {
		st = zeros_relax(z->inv, z->settled, z->zero, max_cells, cancel, z->memo, &found,
				 infeasible);
		if (!st && found && !*infeasible)
			st = zeros_propagate(z->inv, z->zero, z->settled, infeasible);
	}
	return st;
}

/* The buckets through which an open row (not implied, with cells) runs
 * into in (n_groups flags); how many rows are open. A row takes its
 * slots whole: the buckets of the cells of its slots (a flag per slot,
 * then a pass over the cells, not one over every pair of a cell and a
 * row). */
static enum pm_status open_buckets(const struct zeros *z, uint8_t *in, size_t *open)
{
	const struct invariants *inv = z->inv;
	uint8_t *slot = calloc(inv->n_slots + 1, 1);

	*open = 0;
	if (!slot)
		return PM_ERR_NOMEM;
	for (size_t r = inv->n_qi_rows + inv->n_sa_rows; r < inv->n_rows; r++) {
		size_t n;
		const uint32_t *slots;

		if (z->settled[r] || inv->row_off[r] == inv->row_off[r + 1])
			continue;
		++*open;
		slots = invariants_row_slots(inv, r, &n);
		for (size_t e = 0; e < n; e++)
			slot[slots[e]] = 1;
	}
	for (size_t b = 0; b < inv->n_groups; b++) {
		in[b] = 0;
		for (size_t c = inv->cell_off[b]; c < inv->cell_off[b + 1] && !in[b]; c++)
			in[b] = slot[inv->cell_slot[c]];
	}
	free(slot);
	return PM_OK;
}

/* z->open: the components that open rows link (the implied rows, sums of
 * invariant rows given the zeros, constrain nothing more). */
static enum pm_status open_components(struct zeros *z)
{
	uint8_t *in = malloc(z->inv->n_groups + 1);
	size_t open = 0;
	enum pm_status st = in ? PM_OK : PM_ERR_NOMEM;

	components_finish(&z->open);
	if (!st)
		st = open_buckets(z, in, &open);
	if (!st && open)
		st = components_build(z->inv, in, z->settled, 0, &z->open);
	free(in);
	return st;
}

/* Open component i as the interior point method's problem: its buckets
 * as blocks (rows the QI counts, columns the SA counts), its open rows
 * over their cells, the zeros so far (zero); cells numbered bucket by
 * bucket, in the component's order. */
struct component_problem {
	struct ipm_problem p;
	size_t *cell_off, *sum_off, *row_off;
	uint32_t *h, *row_cell;
	double *sums, *rhs;
	uint8_t *zero, *dependent;
	uint32_t *rows; /* its rows (the invariants' numbers) */
};

static void component_problem_finish(struct component_problem *cp)
{
	free(cp->cell_off), free(cp->sum_off), free(cp->row_off), free(cp->h);
	free(cp->row_cell), free(cp->sums), free(cp->rhs), free(cp->zero), free(cp->dependent);
	free(cp->rows);
}

/* The blocks: cells, sums and known zeros. */
static void component_blocks(const struct zeros *z, const struct components *cs, size_t i,
			     struct component_problem *cp)
{
	const struct invariants *inv = z->inv;

	for (size_t k = 0; k < cp->p.n_blocks; k++) {
		size_t b = cs->bucket[cs->b_off[i] + k],
		       n = inv->cell_off[b + 1] - inv->cell_off[b];
		size_t h = inv->bucket_h[b], g = n / h;

		cp->h[k] = (uint32_t)h;
		memcpy(cp->zero + cp->cell_off[k], z->zero + inv->cell_off[b], n);
		for (size_t x = 0; x < g; x++)
			cp->sums[cp->sum_off[k] + x] = invariants_qi_count(inv, b, x);
		for (size_t j = 0; j < h; j++)
			cp->sums[cp->sum_off[k] + g + j] = invariants_sa_count(inv, b, j);
	}
}

/* Its rows, over the component's own cell numbers (cs->pos: each
 * bucket's place in it). */
static void component_rows(const struct zeros *z, const struct components *cs,
			   struct component_problem *cp)
{
	const struct invariants *inv = z->inv;
	size_t n = 0;

	for (size_t r = 0; r < cp->p.n_rows; r++) {
		size_t row = cp->rows[r];

		cp->rhs[r] = inv->rhs[row];
		for (size_t e = inv->row_off[row]; e < inv->row_off[row + 1]; e++) {
			size_t c = inv->row_cell[e], b = inv->cell_group[c];

			cp->row_cell[n++] =
			    (uint32_t)(cp->cell_off[cs->pos[b]] + c - inv->cell_off[b]);
		}
		cp->row_off[r + 1] = n;
	}
}

/* Open component i with its open rows, or only those set in only (may be
 * NULL: all): fewer rows are a relaxation, whose zeros are forced too. */
static enum pm_status component_problem(const struct zeros *z, size_t i, const uint8_t *only,
					struct cancel *cancel, struct component_problem *cp)
{
	const struct invariants *inv = z->inv;
	const struct components *cs = &z->open;
	size_t nb = cs->b_off[i + 1] - cs->b_off[i], nr = 0;
	size_t cells = 0, sums = 0, entries = 0;

	memset(cp, 0, sizeof *cp);
	cp->rows = malloc((cs->r_off[i + 1] - cs->r_off[i] + 1) * sizeof *cp->rows);
	if (!cp->rows)
		return PM_ERR_NOMEM;
	for (size_t r = cs->r_off[i]; r < cs->r_off[i + 1]; r++)
		if (!only || only[cs->row[r]])
			cp->rows[nr++] = cs->row[r];
	for (size_t k = 0; k < nb; k++) {
		size_t b = cs->bucket[cs->b_off[i] + k],
		       n = inv->cell_off[b + 1] - inv->cell_off[b];

		cells += n;
		sums += n / inv->bucket_h[b] + inv->bucket_h[b];
	}
	for (size_t r = 0; r < nr; r++)
		entries += inv->row_off[cp->rows[r] + 1] - inv->row_off[cp->rows[r]];
	cp->cell_off = malloc((nb + 1) * sizeof *cp->cell_off);
	cp->sum_off = malloc((nb + 1) * sizeof *cp->sum_off);
	cp->row_off = calloc(nr + 1, sizeof *cp->row_off);
	cp->h = malloc((nb + 1) * sizeof *cp->h);
	cp->row_cell = malloc((entries + 1) * sizeof *cp->row_cell);
	cp->sums = malloc((sums + 1) * sizeof *cp->sums);
	cp->rhs = malloc((nr + 1) * sizeof *cp->rhs);
	cp->zero = malloc(cells + 1);
	cp->dependent = calloc(nr + 1, 1);
	if (!cp->cell_off || !cp->sum_off || !cp->row_off || !cp->h || !cp->row_cell || !cp->sums ||
	    !cp->rhs || !cp->zero || !cp->dependent)
		return PM_ERR_NOMEM;
	cp->cell_off[0] = cp->sum_off[0] = 0;
	for (size_t k = 0; k < nb; k++) {
		size_t b = cs->bucket[cs->b_off[i] + k],
		       n = inv->cell_off[b + 1] - inv->cell_off[b];

		cp->cell_off[k + 1] = cp->cell_off[k] + n;
		cp->sum_off[k + 1] = cp->sum_off[k] + n / inv->bucket_h[b] + inv->bucket_h[b];
	}
	cp->p = (struct ipm_problem){.n_blocks = nb,
				     .n_rows = nr,
				     .cell_off = cp->cell_off,
				     .sum_off = cp->sum_off,
				     .row_off = cp->row_off,
				     .h = cp->h,
				     .row_cell = cp->row_cell,
				     .sums = cp->sums,
				     .rhs = cp->rhs,
				     .cancel = cancel,
				     .threads = z->threads,
				     .dependent = cp->dependent};
	component_blocks(z, cs, i, cp);
	component_rows(z, cs, cp);
	return PM_OK;
}

/* The interior point method (zeros_ipm.c) on open component i, its rows
 * only those in only (may be NULL: all): the zeros it proves; with all
 * rows, *settled when they are all there are, and then the rows it found
 * dependent on the others (and saw hold) are implied. */
static enum pm_status component_center(struct zeros *z, size_t i, const uint8_t *only,
				       struct cancel *cancel, int *settled, struct pm_error *err)
{
	const struct invariants *inv = z->inv;
	const struct components *cs = &z->open;
	struct component_problem cp;
	size_t found = 0;
	enum pm_status st = component_problem(z, i, only, cancel, &cp);

	*settled = 0;
	if (!st)
		st = zeros_ipm(&cp.p, cp.zero, &found, settled);
	for (size_t k = 0; (!st || st == PM_ERR_CANCELLED) && k < cp.p.n_blocks; k++) {
		size_t b = cs->bucket[cs->b_off[i] + k];

		for (size_t c = inv->cell_off[b]; c < inv->cell_off[b + 1]; c++)
			z->zero[c] |= cp.zero[cp.cell_off[k] + c - inv->cell_off[b]];
	}
	*settled &= !only;
	for (size_t r = 0; !st && *settled && r < cp.p.n_rows; r++)
		z->settled[cp.rows[r]] |= cp.dependent[r];
	component_problem_finish(&cp);
	if (st == PM_ERR_CANCELLED)
		return error_set(err, st, "", "the solve was cancelled");
	return st ? error_set(err, st, "", "out of memory") : PM_OK;
}

/*
 * ZEROS_EXACT: every open component decided, the interior point method
 * first (the simplex is far slower on components of 100,000 cells), the
 * linear program where it does not settle (or not at all where that is
 * too large: z->undecided); then what the new zeros imply. Only the rows
 * a component's zeros could need are in it: the open ones.
 */
static enum pm_status exact(struct zeros *z, struct cancel *cancel, int *infeasible,
			    struct pm_error *err)
{
	enum pm_status st = PM_OK;

	for (size_t i = 0; !st && i < z->open.n; i++) {
		int settled = 0;

		st = component_center(z, i, NULL, cancel, &settled, err);
		if (!st && !settled)
			st = zeros_lp_component(z, &z->open, i, cancel, err);
	}
	if (!st)
		st = zeros_propagate(z->inv, z->zero, z->settled, infeasible);
	if (!st && *infeasible)
		st = error_set(err, PM_ERR_INTERNAL, "",
			       "forced-zero propagation and the linear program disagree");
	return st;
}

static size_t count(const uint8_t *a, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		k += a[i];
	return k;
}

/*
 * The probe's rows first: each open component relaxed to the open rows
 * of ray (zeros.h), when they are at most half of its rows (an eighth
 * of the cubic cost of the whole), then propagation. *used when some
 * component was.
 */
static enum pm_status guided(struct zeros *z, const uint8_t *ray, struct cancel *cancel, int *used,
			     int *infeasible, struct pm_error *err)
{
	enum pm_status st = PM_OK;

	*used = 0;
	for (size_t i = 0; ray && !st && i < z->open.n; i++) {
		const struct components *cs = &z->open;
		size_t nr = 0, all = cs->r_off[i + 1] - cs->r_off[i];
		int settled;

		for (size_t r = cs->r_off[i]; r < cs->r_off[i + 1]; r++)
			nr += ray[cs->row[r]];
		if (!nr || 2 * nr > all)
			continue;
		*used = 1;
		st = component_center(z, i, ray, cancel, &settled, err);
	}
	if (!st && *used)
		st = zeros_propagate(z->inv, z->zero, z->settled, infeasible);
	if (!st && *used && !*infeasible)
		st = open_components(z);
	return st;
}

/* The stages from z->depth (exclusive) to depth; *infeasible when
 * propagation or a relaxation finds that no solution exists. */
static enum pm_status stages(struct zeros *z, enum zeros_depth depth, struct cancel *cancel,
			     int *infeasible, struct pm_error *err)
{
	enum pm_status st = PM_OK;

	if (z->depth < ZEROS_CHEAP)
		st = cheap(z, infeasible, err);
	if (!st && !*infeasible && depth >= ZEROS_SMALL && z->depth < ZEROS_SMALL)
		st = relax_and_propagate(z, ZEROS_SMALL_CELLS, cancel, infeasible);
	if (!st && !*infeasible && depth >= ZEROS_RELAXED && z->depth < ZEROS_RELAXED)
		st = relax_and_propagate(z, SIZE_MAX, cancel, infeasible);
	if (!st && !*infeasible)
		st = open_components(z);
	if (!st && !*infeasible && depth >= ZEROS_EXACT && z->open.n) {
		st = exact(z, cancel, infeasible, err);
		if (!st) /* every component decided (or left to the solve) */
			components_finish(&z->open);
	}
	return st;
}

enum pm_status zeros_deepen(struct zeros *z, enum zeros_depth depth, const uint8_t *ray,
			    struct cancel *cancel, struct pm_error *err)
{
	double t0 = solver_now();
	int infeasible = 0, used = 0;
	enum pm_status st;

	z->added = 0;
	if (depth <= z->depth)
		return PM_OK;
	st = guided(z, ray, cancel, &used, &infeasible, err);
	/* the probe's rows found new zeros: the caller probes again first */
	if (!st && !infeasible && used && count(z->zero, z->inv->n_cells) > z->found)
		depth = z->depth;
	else if (!st && !infeasible)
		st = stages(z, depth, cancel, &infeasible, err);
	/* propagation or the relaxations found no solution: the rules of the
	 * conflict named */
	if (!st && infeasible) {
		st = zeros_lp_conflict(z, cancel, 1, err);
		if (!st)
			st = error_set(err, PM_ERR_INTERNAL, "",
				       "forced-zero propagation and the linear program disagree");
	}
	if (st == PM_ERR_NOMEM)
		error_set(err, st, "", "out of memory finding forced zeros");
	else if (st == PM_ERR_CANCELLED)
		error_set(err, st, "", "the solve was cancelled");
	if (!st) {
		size_t found = count(z->zero, z->inv->n_cells);

		z->added = found - z->found;
		z->found = found;
		z->depth = depth;
		for (size_t r = 0; r < z->inv->n_rows; r++)
			z->implied[r] = z->settled[r] && !invariants_interval(z->inv, r);
	}
	/* GLPK keeps a per-thread environment that would outlive a worker
	 * thread; every program of this call is deleted, so free it */
	zeros_lp_release();
	z->seconds += solver_now() - t0;
	return st;
}
