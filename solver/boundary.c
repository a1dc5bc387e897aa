/*
 * Cells that are zero in every solution. With deterministic knowledge the
 * maximum-entropy optimum lies on the boundary of {y >= 0, A y = c}: its
 * multipliers are infinite and L-BFGS crawls. Removing every cell that no
 * feasible y makes positive leaves a problem whose optimum is interior.
 *
 * Exact test, one linear program per connected component of buckets linked
 * by knowledge rows (untouched buckets keep the strictly positive closed
 * form): homogenize with t >= 0 and bound z_j <= min(y_j, 1),
 *
 *     max sum_j z_j   s.t.  A y = c t,  z_j <= y_j,  0 <= z_j <= 1,  y >= 0.
 *
 * Feasible points form a convex cone, so one optimum has z_j = 1 for every
 * cell some solution makes positive and z_j = 0 for the others; every QI
 * row has c > 0, so t = 0 forces y = 0, and an optimum of 0 means that the
 * rows admit no solution at all.
 *
 * Cheaper arguments go first: rows with right-hand side 0 zero their
 * cells, propagate.c settles every component whose knowledge rows are all
 * tight (deterministic knowledge) exactly, boundary_relax.c finds the
 * zeros that combinations of one value's rows force (each proven by a
 * small linear program over that value alone), and a dual probe clears
 * open components that show no sign of a forced zero (component_probe, or
 * the caller's own solve); the program decides the rest.
 */
#include <glpk.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solver_internal.h"

/* A component: its buckets and knowledge rows (borrowed from the
 * struct components of boundary_find), with local cell numbers. */
struct component {
	size_t n_buckets, n_krows, m;
	const uint32_t *buckets, *krows;
	uint32_t *cells; /* local -> inv cell, non-zero cells only */
};

/* Invariant rows of each bucket, and components, shared by all LPs. */
struct boundary {
	const struct solver_options *o; /* progress callback for cancels; may be NULL */
	const struct dataset *ds;
	const struct knowledge *k;
	const struct invariants *inv;
	uint8_t *zero;
	size_t *brow_off; /* invariant rows of bucket b: brow[brow_off[b] ..) */
	uint32_t *brow;
	int32_t *local; /* inv cell -> local column, -1 if not in the LP */
};

/* The invariant rows of each bucket and the local columns, for the linear
 * programs: built when the first one is. */
static enum pm_status lp_index(struct boundary *bd)
{
	const struct invariants *inv = bd->inv;
	size_t nb = inv->n_groups, ninv = inv->n_qi_rows + inv->n_sa_rows;

	if (bd->local)
		return PM_OK;
	bd->brow_off = malloc((nb + 1) * sizeof *bd->brow_off);
	bd->brow = malloc((ninv + 1) * sizeof *bd->brow);
	bd->local = malloc((inv->n_cells + 1) * sizeof *bd->local);
	if (!bd->brow_off || !bd->brow || !bd->local)
		return PM_ERR_NOMEM;
	bd->brow_off[0] = 0;
	for (size_t b = 0; b < nb; b++) {
		size_t g = (inv->cell_off[b + 1] - inv->cell_off[b]) / inv->bucket_h[b];
		size_t n = bd->brow_off[b];

		for (size_t i = 0; i < g; i++)
			bd->brow[n++] = (uint32_t)(inv->qi_row0[b] + i);
		for (size_t j = 0; j + 1 < inv->bucket_h[b]; j++)
			bd->brow[n++] = (uint32_t)(inv->sa_row0[b] + j);
		bd->brow_off[b + 1] = n;
	}
	for (size_t c = 0; c < inv->n_cells; c++)
		bd->local[c] = -1;
	return PM_OK;
}

static void boundary_finish(struct boundary *bd)
{
	free(bd->brow_off);
	free(bd->brow);
	free(bd->local);
}

static void component_finish(struct component *c)
{
	free(c->cells);
	memset(c, 0, sizeof *c);
}

/* Knowledge rows with right-hand side 0 zero all their cells. */
static void direct_zeros(struct boundary *bd)
{
	const struct invariants *inv = bd->inv;

	for (size_t i = inv->n_qi_rows + inv->n_sa_rows; i < inv->n_rows; i++)
		for (size_t e = inv->row_off[i]; inv->rhs[i] <= 0 && e < inv->row_off[i + 1]; e++)
			bd->zero[inv->row_cell[e]] = 1;
}

/* The touched buckets' components (components.c), every knowledge row
 * linking the buckets it touches; cs holds their lists. */
static enum pm_status components_split(struct boundary *bd, struct components *cs,
				       struct component **out, size_t *n_out)
{
	const struct invariants *inv = bd->inv;
	uint8_t *touched = malloc(inv->n_groups + 1);
	enum pm_status st = PM_ERR_NOMEM;

	*out = NULL;
	*n_out = 0;
	if (!touched)
		return st;
	for (size_t b = 0; b < inv->n_groups; b++)
		touched[b] = (uint8_t)invariants_touched(inv, b);
	st = components_build(inv, touched, NULL, 0, cs);
	free(touched);
	if (!st && !(*out = calloc(cs->n + 1, sizeof **out)))
		st = PM_ERR_NOMEM;
	for (size_t i = 0; !st && i < cs->n; i++) {
		struct component *c = &(*out)[i];

		c->buckets = cs->bucket + cs->b_off[i];
		c->n_buckets = cs->b_off[i + 1] - cs->b_off[i];
		c->krows = cs->row + cs->r_off[i];
		c->n_krows = cs->r_off[i + 1] - cs->r_off[i];
		for (size_t k = 0; k < c->n_buckets; k++)
			c->m += inv->cell_off[c->buckets[k] + 1] - inv->cell_off[c->buckets[k]];
	}
	*n_out = st ? 0 : cs->n;
	return st;
}

/* Local columns for the component's cells; with skip_zero, only those not
 * yet known to be zero. */
static enum pm_status component_cells(struct boundary *bd, struct component *c, int skip_zero)
{
	const struct invariants *inv = bd->inv;
	size_t m = 0, all = 0;

	if (lp_index(bd))
		return PM_ERR_NOMEM;
	for (size_t k = 0; k < c->n_buckets; k++)
		all += inv->cell_off[c->buckets[k] + 1] - inv->cell_off[c->buckets[k]];
	free(c->cells);
	c->cells = malloc((all + 1) * sizeof *c->cells);
	if (!c->cells)
		return PM_ERR_NOMEM;
	for (size_t k = 0; k < c->n_buckets; k++) {
		size_t b = c->buckets[k];

		for (size_t cell = inv->cell_off[b]; cell < inv->cell_off[b + 1]; cell++) {
			int z = skip_zero && bd->zero[cell];

			bd->local[cell] = z ? -1 : (int32_t)m;
			if (!z)
				c->cells[m++] = (uint32_t)cell;
		}
	}
	c->m = m;
	return PM_OK;
}

/* GLPK's matrix triplets, 1-based. */
struct triplets {
	size_t n, cap;
	int *ia, *ja;
	double *ar;
};

static int trip_add(struct triplets *t, int i, int j, double v)
{
	if (t->n + 1 >= t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 1024;
		int *ia = realloc(t->ia, cap * sizeof *ia);
		int *ja = realloc(t->ja, cap * sizeof *ja);
		double *ar = realloc(t->ar, cap * sizeof *ar);

		t->ia = ia ? ia : t->ia;
		t->ja = ja ? ja : t->ja;
		t->ar = ar ? ar : t->ar;
		if (!ia || !ja || !ar)
			return -1;
		t->cap = cap;
	}
	t->n++;
	t->ia[t->n] = i;
	t->ja[t->n] = j;
	t->ar[t->n] = v;
	return 0;
}

/* Adds inv row `row` as LP row i: its local cells, and -c t when
 * homogenized (column t_col), else the bound c. */
static int lp_row(struct boundary *bd, glp_prob *lp, struct triplets *t, int i, size_t row,
		  int t_col)
{
	const struct invariants *inv = bd->inv;

	for (size_t e = inv->row_off[row]; e < inv->row_off[row + 1]; e++) {
		int32_t l = bd->local[inv->row_cell[e]];

		if (l >= 0 && trip_add(t, i, l + 1, 1.0))
			return -1;
	}
	if (t_col)
		glp_set_row_bnds(lp, i, GLP_FX, 0, 0);
	else
		glp_set_row_bnds(lp, i, GLP_FX, inv->rhs[row], inv->rhs[row]);
	return t_col && trip_add(t, i, t_col, -inv->rhs[row]) ? -1 : 0;
}

/* The component's LP: homogenized zero finder, or (homog = 0) the plain
 * feasibility problem A y = c, y >= 0 with the knowledge rows in use[]
 * (NULL: all). Returns NULL when out of memory. */
static glp_prob *lp_build(struct boundary *bd, const struct component *c, const uint8_t *use,
			  int homog)
{
	glp_prob *lp = lp_create();
	struct triplets t = {0};
	int m = (int)c->m, t_col = homog ? 2 * m + 1 : 0, i = 0, bad = 0, rows = 0;

	glp_set_obj_dir(lp, GLP_MAX);
	glp_add_cols(lp, homog ? 2 * m + 1 : m);
	for (int j = 1; j <= m; j++) {
		glp_set_col_bnds(lp, j, GLP_LO, 0, 0);
		if (homog) {
			glp_set_col_bnds(lp, m + j, GLP_DB, 0, 1);
			glp_set_obj_coef(lp, m + j, 1);
		}
	}
	if (homog)
		glp_set_col_bnds(lp, t_col, GLP_LO, 0, 0);
	for (size_t k = 0; k < c->n_buckets; k++)
		rows += (int)(bd->brow_off[c->buckets[k] + 1] - bd->brow_off[c->buckets[k]]);
	for (size_t k = 0; k < c->n_krows; k++)
		rows += !use || use[k];
	glp_add_rows(lp, rows + (homog ? m : 0));
	for (size_t k = 0; k < c->n_buckets; k++)
		for (size_t e = bd->brow_off[c->buckets[k]]; e < bd->brow_off[c->buckets[k] + 1];
		     e++)
			bad |= lp_row(bd, lp, &t, ++i, bd->brow[e], t_col);
	for (size_t k = 0; k < c->n_krows; k++)
		if (!use || use[k])
			bad |= lp_row(bd, lp, &t, ++i, c->krows[k], t_col);
	for (int j = 1; homog && j <= m; j++) {
		glp_set_row_bnds(lp, ++i, GLP_UP, 0, 0);
		bad |= trip_add(&t, i, m + j, 1) | trip_add(&t, i, j, -1);
	}
	if (!bad)
		glp_load_matrix(lp, (int)t.n, t.ia, t.ja, t.ar);
	free(t.ia);
	free(t.ja);
	free(t.ar);
	if (bad) {
		glp_delete_prob(lp);
		return NULL;
	}
	return lp;
}

/* Does propagation alone prove the component infeasible with the
 * knowledge rows in use[] (NULL: all of them)? Every other knowledge row
 * is set aside as resolved, which propagation skips. 1 yes, 0 no, -1 out
 * of memory. */
static int proved_infeasible(struct boundary *bd, const struct component *c, const uint8_t *use)
{
	const struct invariants *inv = bd->inv;
	uint8_t *zero = calloc(inv->n_cells + 1, 1), *resolved = malloc(inv->n_rows + 1);
	int infeasible = -1;

	if (zero && resolved) {
		memset(resolved, 1, inv->n_rows);
		for (size_t k = 0; k < c->n_krows; k++) {
			size_t r = c->krows[k];
			int used = !use || use[k];

			resolved[r] = (uint8_t)!used;
			for (size_t e = inv->row_off[r];
			     used && inv->rhs[r] <= 0 && e < inv->row_off[r + 1]; e++)
				zero[inv->row_cell[e]] = 1;
		}
		if (propagate_zeros(inv, zero, resolved, &infeasible))
			infeasible = -1;
	}
	free(zero);
	free(resolved);
	return infeasible;
}

/* Is the component feasible with the knowledge rows in use[]? Propagation
 * first (milliseconds, where GLPK takes minutes on 150,000 cells); with
 * no rule at all it is (the closed form); else the linear program, its
 * verdict confirmed by the exact simplex (an error path: the cost is
 * no matter, and the rules named must agree with component_solve's exact
 * verdict). */
static int feasible(struct boundary *bd, const struct component *c, const uint8_t *use)
{
	int proved = proved_infeasible(bd, c, use);
	glp_prob *lp;
	int r;

	if (proved)
		return proved > 0 ? 0 : -1;
	if (!memchr(use, 1, c->n_krows))
		return 1;
	if (!c->m)
		return 0; /* every cell zero, yet QI rows need records */
	lp = lp_build(bd, c, use, 0);
	if (!lp)
		return -1;
	r = lp_solve(lp, bd->o);
	if (r == 1) { /* named from exact verdicts, as component_solve's */
		int e = lp_exact(lp, bd->o);

		r = e == -1 ? r : e;
	}
	glp_delete_prob(lp);
	return r;
}

/* Appends "rules[i] P(...) = p" for knowledge row `row` to msg. */
static void describe_row(struct boundary *bd, size_t row, char *msg, size_t len)
{
	size_t r = bd->inv->row_ref[row], used = strlen(msg);
	char text[512] = "";

	if (bd->k && r < bd->k->n)
		knowledge_describe(bd->ds, &bd->k->rules[r], text, sizeof text);
	if (used + 1 < len)
		snprintf(msg + used, len - used, "%srules[%zu] %s", used ? "; " : "", r, text);
}

/* Deletion filter in shrinking chunks: the rules left form an irreducible
 * infeasible set (each one is needed for the conflict). */
static enum pm_status conflict_report(struct boundary *bd, struct component *c,
				      struct pm_error *err)
{
	uint8_t *use = malloc(c->n_krows + 1), *save = malloc(c->n_krows + 1);
	char msg[sizeof err->message - 96] = "";
	size_t n = 0;
	enum pm_status st = PM_ERR_NOMEM;

	if (!use || !save || component_cells(bd, c, 0))
		goto out;
	memset(use, 1, c->n_krows);
	for (size_t chunk = c->n_krows > 1 ? c->n_krows / 2 : 1;; chunk = (chunk + 1) / 2) {
		for (size_t i = 0; i < c->n_krows; i += chunk) {
			size_t w = i + chunk < c->n_krows ? chunk : c->n_krows - i;
			int f;

			if (!memchr(use + i, 1, w))
				continue;
			memcpy(save, use + i, w);
			memset(use + i, 0, w);
			f = feasible(bd, c, use);
			if (f < 0) {
				st = f == -2 ? PM_ERR_CANCELLED : PM_ERR_INTERNAL;
				goto out;
			}
			if (f)
				memcpy(use + i, save, w); /* needed for the conflict */
		}
		if (chunk == 1)
			break;
	}
	for (size_t i = 0; i < c->n_krows; i++)
		if (use[i] && ++n)
			describe_row(bd, c->krows[i], msg, sizeof msg);
	st = error_set(err, PM_ERR_INCONSISTENT, "rules", "no distribution satisfies %s: %s",
		       n == 1 ? "this rule" : "these rules together", msg);
out:
	if (st == PM_ERR_NOMEM)
		error_set(err, st, "", "out of memory looking for conflicting rules");
	else if (st == PM_ERR_INTERNAL)
		error_set(err, st, "", "the linear program solver failed");
	else if (st == PM_ERR_CANCELLED)
		error_set(err, st, "", "the solve was cancelled");
	free(use);
	free(save);
	return st;
}

/*
 * The zero finder's verdict from lp's optimum: 1 with the cells it proves
 * zero in claim[] (z_j < 0.5), 0 when the rows admit no solution (only
 * y = 0, t = 0), -1 failure, -2 cancelled. Within GLPK's tolerances the
 * simplex stopped at t = 1 with a cell of 1e-8 records (P(cold | age=30)
 * = 0.99999999 on two records: z = 1e-8 < 0.5), which was claimed zero
 * and made the rule look inconsistent; an exact optimum puts z_j = 1 on
 * every cell that some solution makes positive. lp_solve has the exact
 * simplex decide where the float optimum is not clean; here also where it
 * claims a cell that is positive there, or finds no solution. A zero then
 * needs both; if the exact simplex fails, the float verdict stands.
 */
static int zero_claims(const struct boundary *bd, const struct component *c, glp_prob *lp,
		       uint8_t *claim)
{
	double t = glp_get_col_prim(lp, (int)(2 * c->m + 1));
	int feasible = glp_get_obj_val(lp) >= 0.5, doubt = !feasible, r;

	for (size_t j = 0; j < c->m; j++) {
		claim[j] = glp_get_col_prim(lp, (int)(c->m + j + 1)) < 0.5;
		doubt |= claim[j] && glp_get_col_prim(lp, (int)j + 1) > 1e-11 * t;
	}
	if (!doubt)
		return 1;
	r = lp_exact(lp, bd->o);
	if (r != 1)
		return r == -2 ? -2 : feasible;
	if (glp_get_obj_val(lp) < 0.5)
		return 0;
	for (size_t j = 0; j < c->m; j++)
		claim[j] &= glp_get_col_prim(lp, (int)(c->m + j + 1)) < 0.5;
	return 1;
}

/* Zero finder LP on one component; conflicts are reported. */
static enum pm_status component_solve(struct boundary *bd, struct component *c,
				      struct pm_error *err)
{
	glp_prob *lp = NULL;
	uint8_t *claim = NULL;
	int r = -3; /* out of memory */

	/* every cell, those known to be zero too: some are zero only to 1e-9
	 * records (the certificates), and without them an exact program may
	 * find no solution where there is one */
	if (component_cells(bd, c, 0))
		goto out;
	lp = lp_build(bd, c, NULL, 1);
	claim = malloc(c->m + 1);
	if (!lp || !claim)
		goto out;
	r = lp_solve(lp, bd->o);
	if (r > 0)
		r = zero_claims(bd, c, lp, claim);
	for (size_t j = 0; r > 0 && j < c->m; j++)
		if (claim[j])
			bd->zero[c->cells[j]] = 1;
out:
	if (lp)
		glp_delete_prob(lp);
	free(claim);
	if (r == -3)
		return error_set(err, PM_ERR_NOMEM, "", "out of memory");
	if (r == -2)
		return error_set(err, PM_ERR_CANCELLED, "", "the solve was cancelled");
	if (r < 0)
		return error_set(err, PM_ERR_INTERNAL, "", "the linear program solver failed");
	return r ? PM_OK : conflict_report(bd, c, err);
}

/*
 * A knowledge row with no cell at all cannot hold unless its rhs is 0, to
 * ZERO_RECORDS: P(s | Q) = 3e-10 over two records (6e-10 records) holds
 * here as it does where the row has a cell that is zero to 1e-9 records.
 */
static enum pm_status empty_rows(struct boundary *bd, struct pm_error *err)
{
	const struct invariants *inv = bd->inv;

	for (size_t i = inv->n_qi_rows + inv->n_sa_rows; i < inv->n_rows; i++) {
		char msg[600] = "";

		if (inv->row_off[i] < inv->row_off[i + 1] || inv->rhs[i] <= ZERO_RECORDS)
			continue;
		describe_row(bd, i, msg, sizeof msg);
		return error_set(err, PM_ERR_INCONSISTENT, "rules",
				 "no distribution satisfies this rule: %s (no bucket holds both a "
				 "matching record and the sensitive value)",
				 msg);
	}
	return PM_OK;
}

/*
 * Dual probe of a component propagation left open: solve it to about 1e-7
 * and then 1e-9 records of violation. A cell that some solution makes
 * positive converges to a positive value; a cell forced to zero can only be
 * as large as the violation allows (a small multiple of it), shrinks with
 * it or sits far below it, and often stalls L-BFGS (its multiplier runs to
 * infinity). So a probe that reaches both targets with every cell holding
 * at least half its value and at least PROBE_FLOOR records, 1000 times the
 * final violation, has found no forced zero and the component needs no LP;
 * anything else goes to the exact LP.
 */
#define PROBE_FLOOR 1e-6
static enum pm_status component_probe(struct boundary *bd, const struct component *c,
				      const uint8_t *resolved, const struct solver_options *base,
				      int *stable, struct pm_error *err)
{
	const struct invariants *inv = bd->inv;
	struct solver_options o = *base;
	struct maxent_stats st1, st2;
	uint8_t *active = calloc(inv->n_cells + 1, 1);
	double *y1 = calloc(inv->n_cells + 1, sizeof *y1),
	       *y2 = calloc(inv->n_cells + 1, sizeof *y2);
	enum pm_status ret = PM_ERR_NOMEM;

	*stable = 0;
	if (!active || !y1 || !y2)
		goto out;
	for (size_t k = 0; k < c->n_buckets; k++)
		for (size_t cell = inv->cell_off[c->buckets[k]];
		     cell < inv->cell_off[c->buckets[k] + 1]; cell++)
			active[cell] = !bd->zero[cell];
	o.max_iterations = base->max_iterations < 3000 ? base->max_iterations : 3000;
	o.tolerance = 1e-4; /* internal target 1e-7 */
	ret = maxent_solve(inv, active, resolved, &o, y1, &st1, err);
	if (ret || st1.max_violation > 1e-6)
		goto out;
	o.tolerance = 1e-6; /* internal target 1e-9 */
	ret = maxent_solve(inv, active, resolved, &o, y2, &st2, err);
	if (ret || st2.max_violation > 1e-8)
		goto out;
	*stable = 1;
	for (size_t cell = 0; cell < inv->n_cells; cell++)
		if (active[cell] && !(y2[cell] >= 0.5 * y1[cell] && y2[cell] >= PROBE_FLOOR))
			*stable = 0;
out:
	free(active);
	free(y1);
	free(y2);
	return ret;
}

/* The interior point method of boundary_center.c on component c:
 * *settled when the zeros it proves are all there are. */
static enum pm_status component_center(struct boundary *bd, const struct component *c,
				       const uint8_t *resolved, int *settled, size_t *found,
				       struct pm_error *err)
{
	struct center_problem p = {.inv = bd->inv,
				   .o = bd->o,
				   .buckets = c->buckets,
				   .n_buckets = c->n_buckets,
				   .zero = bd->zero,
				   .threads = bd->o ? bd->o->threads : 0};
	uint32_t *rows = malloc((c->n_krows + 1) * sizeof *rows);
	size_t n = 0;
	enum pm_status st;

	*settled = 0;
	if (!rows)
		return error_set(err, PM_ERR_NOMEM, "", "out of memory");
	for (size_t k = 0; k < c->n_krows; k++)
		if (!resolved[c->krows[k]])
			rows[n++] = c->krows[k];
	p.rows = rows;
	p.n_rows = n;
	st = boundary_center(&p, bd->zero, found, settled);
	free(rows);
	if (st == PM_ERR_CANCELLED)
		return error_set(err, st, "", "the solve was cancelled");
	return st ? error_set(err, st, "", "out of memory") : PM_OK;
}

/* Are all knowledge rows of c implied by its buckets' invariants? */
static int component_resolved(const struct component *c, const uint8_t *resolved)
{
	for (size_t k = 0; k < c->n_krows; k++)
		if (!resolved[c->krows[k]])
			return 0;
	return 1;
}

/* Is some knowledge row with cells not implied by the invariants? */
static int open_rows(const struct invariants *inv, const uint8_t *resolved)
{
	for (size_t r = inv->n_qi_rows + inv->n_sa_rows; r < inv->n_rows; r++)
		if (!resolved[r] && inv->row_off[r] < inv->row_off[r + 1])
			return 1;
	return 0;
}

/*
 * The relaxations a first probe runs with (BOUNDARY_RELAX_SMALL): those
 * of values whose open rows hold at most this many free cells, counted
 * once per row (the entries of the relaxation's rows). They cost about
 * 0.3-0.5 us per entry (Adult: 2 ms for 7,237 entries, 12 ms for 23,431),
 * so each costs a few ms at most, less than a probe that fails for want
 * of them. Adult, K+ = K- = 250: with `qi_attributes` 2 the largest value
 * has 7,237 entries, and relaxing it first takes the solve from 13 to 7
 * iterations (30 -> 15 ms); with 1, six values hold 23,000 to 50,000
 * entries and take 290 ms together, the probe that needs none of them 45.
 */
#define RELAX_SMALL_CELLS 8192

/*
 * Zeros of the per-value relaxations (boundary_relax.c), each round
 * followed by propagation, until a round finds nothing new: what the
 * relaxations force, the rows and flows may carry further, and the other
 * way round. A value is relaxed again only where its buckets have new
 * zeros (struct relax_memo).
 */
static enum pm_status relax_and_propagate(const struct boundary *bd, uint8_t *resolved,
					  size_t max_cells, int *infeasible)
{
	const struct invariants *inv = bd->inv;
	uint8_t *zero = bd->zero;
	struct relax_memo memo = {0};
	enum pm_status st = PM_OK;
	size_t found = 1;

	while (!st && found && !*infeasible) {
		st = boundary_relax(inv, resolved, zero, max_cells, bd->o, &memo, &found,
				    infeasible);
		if (!st && found && !*infeasible)
			st = propagate_zeros(inv, zero, resolved, infeasible);
	}
	relax_memo_finish(&memo);
	return st;
}

/*
 * Propagation or the relaxations found no solution. A component that
 * propagation alone proves infeasible has its rules named, with no linear
 * program over any component (the zero finder of a consistent one, first
 * in line, once failed numerically and hid the conflict); otherwise (the
 * relaxations' proof) each component's program decides.
 */
static enum pm_status infeasible_components(struct boundary *bd, struct component *cs, size_t n,
					    struct pm_error *err)
{
	enum pm_status st = PM_OK;

	for (size_t i = 0; i < n; i++) {
		int p = proved_infeasible(bd, &cs[i], NULL);

		if (p)
			return p < 0 ? PM_ERR_NOMEM : conflict_report(bd, &cs[i], err);
	}
	for (size_t i = 0; !st && i < n; i++)
		st = component_solve(bd, &cs[i], err);
	return st;
}

enum pm_status boundary_find(const struct dataset *ds, const struct knowledge *k,
			     const struct invariants *inv, const struct solver_options *o,
			     uint8_t *zero, uint8_t *implied, uint8_t *deferred, unsigned flags,
			     struct pm_error *err)
{
	struct boundary bd = {.o = o, .ds = ds, .k = k, .inv = inv, .zero = zero};
	struct components lists = {0};
	struct component *cs = NULL;
	uint8_t *resolved = calloc(inv->n_rows + 1, 1);
	size_t n = 0, new_zeros = 0;
	size_t relax_cap = (flags & BOUNDARY_RELAX) || !deferred ? SIZE_MAX
			   : flags & BOUNDARY_RELAX_SMALL	 ? RELAX_SMALL_CELLS
								 : 0;
	int infeasible = 0;
	enum pm_status st = resolved ? PM_OK : PM_ERR_NOMEM;

	if (!st) {
		direct_zeros(&bd);
		st = empty_rows(&bd, err);
	}
	if (!st)
		st = propagate_zeros(inv, zero, resolved, &infeasible);
	/* a first probe goes without the relaxations of many cells, which cost
	 * more than a probe that needs none of them; the small ones cost less
	 * than a probe that fails for want of them (RELAX_SMALL_CELLS) */
	if (!st && relax_cap)
		st = relax_and_propagate(&bd, resolved, relax_cap, &infeasible);
	if (!st && (infeasible || open_rows(inv, resolved)))
		st = components_split(&bd, &lists, &cs, &n);
	/* the linear program only where propagation left a row open, or to
	 * name the rules of a conflict */
	if (!st && infeasible)
		st = infeasible_components(&bd, cs, n, err);
	for (size_t i = 0; !st && !infeasible && i < n; i++) {
		int stable = 0;
		size_t found = 0;

		if (component_resolved(&cs[i], resolved))
			continue;
		if (deferred) { /* the caller's solve is the probe */
			for (size_t b = 0; b < cs[i].n_buckets; b++)
				deferred[cs[i].buckets[b]] = 1;
			continue;
		}
		if (o && (flags & BOUNDARY_PROBE))
			st = component_probe(&bd, &cs[i], resolved, o, &stable, err);
		/* the interior point method first: simplex takes minutes on
		 * components of 100,000 cells */
		if (!st && !stable)
			st = component_center(&bd, &cs[i], resolved, &stable, &found, err);
		if (!st && !stable)
			st = component_solve(&bd, &cs[i], err);
		new_zeros += found;
	}
	/* what the new zeros imply, for the rows' multipliers */
	if (!st && new_zeros)
		st = propagate_zeros(inv, zero, resolved, &infeasible);
	if (!st && infeasible)
		st = error_set(err, PM_ERR_INTERNAL, "",
			       "forced-zero propagation and the linear program disagree");
	if (st == PM_ERR_NOMEM)
		error_set(err, st, "", "out of memory finding forced zeros");
	else if (st == PM_ERR_CANCELLED)
		error_set(err, st, "", "the solve was cancelled");
	for (size_t i = 0; i < n; i++)
		component_finish(&cs[i]);
	free(cs);
	components_finish(&lists);
	if (implied && resolved)
		memcpy(implied, resolved, inv->n_rows);
	free(resolved);
	boundary_finish(&bd);
	/* GLPK keeps a per-thread environment that would outlive a worker
	 * thread; every program of this call is deleted, so free it */
	glp_free_env();
	return st;
}
