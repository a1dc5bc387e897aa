/*
 * The solve of the pseudonym model (SPEC 3.1), in order: the system's
 * forced zeros (zeros.c at ZEROS_CHEAP: every zero of the aggregated
 * system is one of the model's, as the model's solutions aggregate to
 * the system's), the model's own cheap ones, the two-level dual over the
 * open rows (lifted_dual.c), and, only when that does not converge, the exact
 * programs (lifted_lp.c): they name a conflict, or add the zeros the
 * dual was running down, and the dual goes on from where it was.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alone.h"
#include "lifted_internal.h"
#include "maxent.h"
#include "metrics.h"
#include "newton.h"
#include "solve.h"
#include "stop.h"
#include "zeros.h"

/* Rounds of exact zeros and the dual again: each adds zeros, so the
 * second finds none to add (the program is exact); one to spare. */
#define LIFTED_ROUNDS 3
/* Newton steps past the tolerance, toward a thousandth of it: quadratic
 * convergence gets there in one or two, a zero left to the dual gains a
 * factor e per step. */
#define LIFTED_POLISH 8
/* Entries of an exact program (lifted_lp.c) cheap enough to run before
 * the dual: a few milliseconds of simplex. */
#define LIFTED_LP_FIRST 20000

/* Cells every solution holds at 0 that a row shows alone: a row of
 * coefficients of one sign at its bound 0 (a person term's value 0, a
 * rule's max 0). */
static void sign_zeros(const struct lifted *m, uint8_t *zero)
{
	size_t first = m->inv->n_qi_rows + m->inv->n_sa_rows;

	for (size_t r = first; r < m->n_rows; r++) {
		int pos = 1, neg = 1;

		for (size_t e = m->row_off[r]; e < m->row_off[r + 1]; e++) {
			pos &= m->row_coef[e] >= 0;
			neg &= m->row_coef[e] <= 0;
		}
		if ((pos && m->hi[r] <= ZERO_RECORDS) || (neg && m->lo[r] >= -ZERO_RECORDS))
			for (size_t e = m->row_off[r]; e < m->row_off[r + 1]; e++)
				zero[m->row_cell[e]] |= m->row_coef[e] != 0;
	}
}

/* Occurrence (row of invariants.occ_*) of tuple q in bucket b. */
static size_t occurrence(const struct invariants *inv, uint32_t q, size_t b)
{
	size_t o = inv->occ_off[q];

	while (o + 1 < inv->occ_off[q + 1] && inv->occ_bucket[o] != b)
		o++;
	return o;
}

/* A tuple whose every record is named leaves its unnamed cells 0 (they
 * sum to n(q) less the named); so does a tuple in a bucket whose records
 * there are all named with that group, and then the tuple's people of
 * no known group are not in that bucket either. */
static enum pm_status named_zeros(const struct dataset *ds, const struct knowledge *k,
				  const struct lifted *m, uint8_t *zero)
{
	const struct invariants *inv = m->inv;
	uint32_t *per_q = calloc(ds->n_tuples + 1, sizeof *per_q);
	uint32_t *per_o = calloc(inv->occ_off[ds->n_tuples] + 1, sizeof *per_o);
	enum pm_status st = per_q && per_o ? PM_OK : PM_ERR_NOMEM;

	for (size_t i = 0; !st && i < k->n_people; i++) {
		per_q[k->people[i].tuple]++;
		if (k->people[i].group >= 0)
			per_o[occurrence(inv, k->people[i].tuple, (size_t)k->people[i].group)]++;
	}
	for (size_t q = 0; !st && q < ds->n_tuples; q++)
		for (size_t o = inv->occ_off[q]; o < inv->occ_off[q + 1]; o++) {
			int full = per_q[q] >= ds->tuple_count[q] || per_o[o] >= inv->occ_count[o];

			for (size_t j = 0; full && j < inv->bucket_h[inv->occ_bucket[o]]; j++)
				zero[inv->occ_cell[o] + j] = 1;
			per_o[o] = per_o[o] >= inv->occ_count[o]; /* now: full by its group */
		}
	for (size_t i = 0; !st && i < k->n_people; i++)
		for (size_t c = m->person_off[i];
		     k->people[i].group < 0 && c < m->person_off[i + 1]; c++) {
			size_t b = inv->cell_group[m->agg[c - inv->n_cells]];

			zero[c] |= per_o[occurrence(inv, k->people[i].tuple, b)];
		}
	free(per_q);
	free(per_o);
	return st;
}

/* The model's zeros from the system's (z.zero, of the aggregated cells:
 * a cell's people too), the cheap ones, and what those force in the
 * system: zeros_propagate (rows at their bounds, flows per bucket; not
 * the rows the search settled) on the aggregated cells all of whose
 * people are zero, back to each. */
static enum pm_status model_zeros(const struct dataset *ds, const struct knowledge *k,
				  const struct lifted *m, const uint8_t *sys,
				  const uint8_t *settled, uint8_t **out)
{
	const struct invariants *inv = m->inv;
	size_t nc = inv->n_cells;
	uint8_t *zero = malloc(m->n_cells + 1), *agg = malloc(nc + 1);
	/* the rows the search sets aside (intervals, which propagation would
	 * read as equalities at their lower bound; implied ones) */
	uint8_t *resolved = malloc(inv->n_rows + 1);
	enum pm_status st = zero && agg && resolved ? PM_OK : PM_ERR_NOMEM;
	int infeasible = 0;

	*out = zero;
	if (!st) {
		memcpy(resolved, settled, inv->n_rows);
		memcpy(zero, sys, nc);
		for (size_t c = nc; c < m->n_cells; c++)
			zero[c] = sys[m->agg[c - nc]];
		sign_zeros(m, zero);
		st = named_zeros(ds, k, m, zero);
	}
	if (!st) {
		memcpy(agg, zero, nc);
		for (size_t c = nc; c < m->n_cells; c++)
			agg[m->agg[c - nc]] &= zero[c];
		st = zeros_propagate_all(inv, agg, resolved, &infeasible);
	}
	for (size_t c = 0; !st && c < m->n_cells; c++) /* a conflict shows later */
		zero[c] |= agg[c < nc ? c : m->agg[c - nc]];
	free(agg);
	free(resolved);
	return st;
}

/* Writes bucket-local cells of s into y (model cells) and each open
 * row's multiplier into mu (per model row); marks s's buckets. */
static void keep(const struct lsys *s, const double *x, double *y, double *mu, uint8_t *touched)
{
	for (size_t v = 0; v < s->nl; v++)
		y[s->lcell[v]] = s->lzero[v] ? 0 : s->y[v];
	for (size_t i = 0; i < s->r; i++)
		mu[s->row[i]] = x[i];
	for (size_t k = 0; k < s->nb; k++)
		touched[s->bk[k].b] = 1;
}

/* One solve of the dual with the zeros so far, from mu; with the zeros
 * not exact yet it stops on stagnation (a forced zero's multiplier
 * running off). *empty: a row left without a free cell whose bounds
 * exclude 0 (SIZE_MAX: none). */
/* The two-level dual on s from x (each open row's multiplier). */
static enum pm_status newton_round(struct lsys *s, const struct solver_options *o,
				   struct cancel *cancel, int exact, double *x,
				   struct maxent_stats *ms)
{
	struct newton_problem np;
	struct newton *nw = NULL;
	/* rows that depend on others (a named person who fills their tuple's
	 * records in their bucket repeats its QI row): found at the first
	 * factor and left out */
	struct newton_null null = {.row = calloc(s->r, 1)};
	double target, big = 1;
	int stalled = 0;
	enum pm_status st = PM_ERR_NOMEM;

	for (size_t i = 0; i < s->r; i++)
		big = fmax(big, fabs(s->mid[i]));
	lifted_dual_start(s, x);
	lifted_dual_problem(s, &np);
	np.null = &null;
	np.cancel = cancel;
	np.stop = exact ? STOP_EARLY_NONE : STOP_EARLY_STALL;
	if (!null.row || newton_create(&np, &nw))
		goto out;
	/* to the tolerance, then a few steps further while they help: forced
	 * zeros the search did not find shrink a step at a time */
	target = stop_target(o->tolerance, big);
	st = newton_minimize(nw, o->max_iterations, o->tolerance, x, ms, &stalled);
	if (!st && !stalled && ms->max_violation > target) {
		st = newton_minimize(
		    nw, stop_polish_limit(ms->iterations, LIFTED_POLISH, o->max_iterations), target,
		    x, ms, &stalled);
	}
out:
	newton_destroy(nw);
	free(null.row);
	return st;
}

/* One solve of the dual with the zeros so far, from mu: the two-level
 * one (with the zeros not exact yet it stops on stagnation: a forced
 * zero's multiplier running off), or the full dual (lifted_full.c) when
 * o asks for it. *empty: a row left without a free cell whose bounds
 * exclude 0 (SIZE_MAX: none). */
static enum pm_status solve_round(const struct dataset *ds, const struct lifted *m,
				  const uint8_t *zero, const uint8_t *implied,
				  const struct solver_options *o, struct cancel *cancel, int exact,
				  double *mu, double *y, uint8_t *touched, struct maxent_stats *ms,
				  size_t *empty)
{
	struct lsys s;
	double *x = NULL;
	enum pm_status st = lsys_init(&s, ds, m, zero, implied, o->tolerance, empty);

	if (st || *empty != SIZE_MAX || !s.r)
		goto out;
	st = PM_ERR_NOMEM;
	if (!(x = malloc(s.r * sizeof *x)))
		goto out;
	for (size_t i = 0; i < s.r; i++)
		x[i] = mu[s.row[i]];
	st = o->method == SOLVER_FULL_DUAL ? lifted_full(&s, o, cancel, ms)
					   : newton_round(&s, o, cancel, exact, x, ms);
	keep(&s, x, y, mu, touched);
out:
	ms->converged =
	    !st && *empty == SIZE_MAX && (!s.r || stop_converged(ms->max_violation, o->tolerance));
	if (!s.r && !st)
		ms->max_violation = 0;
	free(x);
	lsys_finish(&s);
	return st;
}

/* The buckets no open row touches: each alone (alone.c), with its zeros. */
static enum pm_status alone_buckets(const struct dataset *ds, const struct invariants *inv,
				    const uint8_t *zero, const uint8_t *touched, double *y)
{
	size_t gm = 1, hm = 1;
	struct alone_work *w = NULL;
	enum pm_status st;

	for (size_t b = 0; b < inv->n_groups; b++) {
		gm = invariants_bucket_g(inv, b) > gm ? invariants_bucket_g(inv, b) : gm;
		hm = inv->bucket_h[b] > hm ? inv->bucket_h[b] : hm;
	}
	if ((st = alone_work_create(gm, hm, &w)))
		goto out;
	for (size_t b = 0; b < inv->n_groups && !st; b++)
		if (!touched[b])
			st = alone_solve(ds, inv, b, zero, y, w);
out:
	alone_work_destroy(w);
	return st;
}

/* Rounds of the dual, and of the exact programs where it fails. */
static enum pm_status rounds(const struct dataset *ds, const struct knowledge *k,
			     struct lifted_answer *a, uint8_t *zero, const uint8_t *implied,
			     const struct solver_options *o, struct cancel *cancel,
			     uint8_t *touched, struct maxent_stats *ms, struct pm_error *err)
{
	double *mu = calloc(a->m.n_rows + 1, sizeof *mu);
	enum pm_status st = mu ? PM_OK : PM_ERR_NOMEM;
	size_t added = 0;
	/* a small program decides the zeros at once: cheaper than a dual
	 * that runs them down */
	int exact = !st && lifted_lp_entries(&a->m, zero, implied) <= LIFTED_LP_FIRST;

	if (exact)
		st = lifted_lp_zeros(ds, k, &a->m, zero, implied, cancel, &added, err);
	for (int round = 0; !st && round < LIFTED_ROUNDS; round++) {
		size_t empty;

		memset(touched, 0, a->m.inv->n_groups);
		st = solve_round(ds, &a->m, zero, implied, o, cancel, exact, mu, a->y, touched, ms,
				 &empty);
		if (st == PM_ERR_NOMEM)
			error_set(err, st, "", "out of memory");
		if (st == PM_ERR_CANCELLED)
			error_set(err, st, "", "the solve was cancelled");
		if (st || ms->converged)
			break;
		if (empty != SIZE_MAX) {
			st = lifted_lp_conflict(ds, k, &a->m, zero, implied, cancel, err);
			break;
		}
		if (exact)
			break;
		/* the dual stalled: the exact zeros, and once more to the end */
		st = lifted_lp_zeros(ds, k, &a->m, zero, implied, cancel, &added, err);
		exact = 1;
	}
	free(mu);
	return st;
}

enum pm_status lifted_run(const struct dataset *ds, const struct knowledge *k,
			  const struct invariants *inv, const struct solver_options *o,
			  struct cancel *cancel, const struct lifted_phase *ph,
			  struct lifted_answer *a, double *cells, struct maxent_stats *ms,
			  size_t *forced, struct pm_error *err)
{
	struct zeros z;
	uint8_t *zero = NULL, *touched = calloc(inv->n_groups + 1, 1);
	enum pm_status st;

	memset(a, 0, sizeof *a);
	if ((st = zeros_init(&z, ds, k, inv)) || !touched) {
		st = error_set(err, PM_ERR_NOMEM, "", "out of memory");
		goto out;
	}
	z.threads = o->threads;
	if ((st = zeros_deepen(&z, ZEROS_CHEAP, NULL, cancel, err)) ||
	    (st = lifted_build(ds, k, inv, &a->m, err)))
		goto out;
	a->y = calloc(a->m.n_cells + 1, sizeof *a->y);
	if (!a->y || (st = model_zeros(ds, k, &a->m, z.zero, z.settled, &zero))) {
		st = error_set(err, PM_ERR_NOMEM, "", "out of memory");
		goto out;
	}
	st = ph && ph->iterate(ph->ctx, err)
		 ? PM_ERR_CANCELLED
		 : rounds(ds, k, a, zero, z.implied, o, cancel, touched, ms, err);
	if (st && st != PM_ERR_CANCELLED)
		goto out;
	/* a cancel too leaves an estimate (solver.c's time limit answers
	 * with it): the dual's last iterate, every other bucket alone */
	if (alone_buckets(ds, inv, zero, touched, a->y) && !st)
		st = error_set(err, PM_ERR_INTERNAL, "", "a bucket's scaling missed its target");
	*forced = 0;
	for (size_t c = 0; c < inv->n_cells; c++) {
		cells[c] = a->y[c];
		*forced += zero[c] && !z.zero[c];
	}
	*forced += z.found;
	for (size_t c = inv->n_cells; c < a->m.n_cells; c++)
		cells[a->m.agg[c - inv->n_cells]] += a->y[c];
out:
	if (st == PM_ERR_CANCELLED && !a->y) /* stopped before the model: the closed form */
		for (size_t b = 0; b < inv->n_groups; b++)
			metrics_closed_form(ds, inv, b, cells);
	free(zero);
	free(touched);
	zeros_finish(&z);
	return st;
}

/* Statement i's value at y and the bound holding it. */
static void statement_at(const struct lifted_answer *a, const struct statement *s, size_t i,
			 double tolerance, struct solver_result *r)
{
	const struct lifted *m = &a->m;
	size_t row = m->statement_row0 + i;
	double v = 0;

	for (size_t e = m->row_off[row]; e < m->row_off[row + 1]; e++)
		v += m->row_coef[e] * a->y[m->row_cell[e]];
	r->st_achieved[i] = v / m->scale[i];
	r->st_binding[i] = s->equality					    ? SOLVER_BINDING_VALUE
			   : isfinite(s->lo) && v - m->lo[row] <= tolerance ? SOLVER_BINDING_MIN
			   : isfinite(s->hi) && m->hi[row] - v <= tolerance ? SOLVER_BINDING_MAX
									    : SOLVER_BINDING_NONE;
	r->max_violation = fmax(r->max_violation, fmax(m->lo[row] - v, v - m->hi[row]));
}

enum pm_status lifted_outputs(const struct lifted_answer *a, const struct knowledge *k,
			      double tolerance, struct solver_result *r)
{
	const struct lifted *m = &a->m;
	size_t np;

	if (!a->y) /* stopped before the model was built */
		return PM_OK;
	np = m->n_cells - m->inv->n_cells;

	r->st_achieved = calloc(k->n_statements + 1, sizeof *r->st_achieved);
	r->st_binding = calloc(k->n_statements + 1, 1);
	r->person_off = malloc((k->n_people + 1) * sizeof *r->person_off);
	r->person_group = malloc((np + 1) * sizeof *r->person_group);
	r->person_sa = malloc((np + 1) * sizeof *r->person_sa);
	r->person_p = malloc((np + 1) * sizeof *r->person_p);
	if (!r->st_achieved || !r->st_binding || !r->person_off || !r->person_group ||
	    !r->person_sa || !r->person_p)
		return PM_ERR_NOMEM;
	for (size_t i = 0; i < k->n_statements; i++)
		statement_at(a, &k->statements[i], i, tolerance, r);
	for (size_t i = 0; i <= k->n_people; i++)
		r->person_off[i] = i < k->n_people ? m->person_off[i] - m->inv->n_cells : np;
	for (size_t c = 0; c < np; c++) {
		r->person_group[c] = m->inv->cell_group[m->agg[c]];
		r->person_sa[c] = m->inv->cell_sa[m->agg[c]];
		r->person_p[c] = a->y[m->inv->n_cells + c];
	}
	for (size_t i = 0; i < k->n_people; i++) {
		size_t row = m->person_row0 + i;
		double v = 0;

		for (size_t e = m->row_off[row]; e < m->row_off[row + 1]; e++)
			v += a->y[m->row_cell[e]];
		r->max_violation = fmax(r->max_violation, fabs(v - 1));
	}
	return PM_OK;
}

void lifted_answer_finish(struct lifted_answer *a)
{
	if (!a)
		return;
	lifted_finish(&a->m);
	free(a->y);
	memset(a, 0, sizeof *a);
}
