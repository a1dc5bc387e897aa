/*
 * The zero finder of a component that the interior point method leaves
 * undecided (zeros_lp_component), and the programs of a component that it
 * and the conflict tests (zeros_lp_conflict.c) solve. The zero finder, one
 * program per component of buckets linked by knowledge rows: homogenize
 * with t >= 0 and bound z_j <= min(y_j, 1),
 *
 *     max sum_j z_j   s.t.  A y = c t,  z_j <= y_j,  0 <= z_j <= 1,  y >= 0.
 *
 * Feasible points form a convex cone, so one optimum has z_j = 1 for every
 * cell some solution makes positive and z_j = 0 for the others; every QI
 * row has c > 0, so t = 0 forces y = 0, and an optimum of 0 means that the
 * rows admit no solution at all.
 */
#include <glpk.h>
#include <stdlib.h>
#include <string.h>

#include "components.h"
#include "zeros.h"

/* The invariant rows of each bucket and the local columns, for the linear
 * programs: built when the first one is. */
static enum pm_status lp_index(struct lp_context *bd)
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

void zeros_lp_context_finish(struct lp_context *bd)
{
	free(bd->brow_off);
	free(bd->brow);
	free(bd->local);
}

void zeros_lp_component_finish(struct component *c)
{
	free(c->cells);
	memset(c, 0, sizeof *c);
}

enum pm_status zeros_lp_cells(struct lp_context *bd, struct component *c, int skip_zero)
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

/*
 * The largest program built, in matrix entries: GLPK keeps each in a
 * list node, in the simplex's row and column copies and in the LU
 * factors' fill, some hundreds of bytes in all, and its exact simplex
 * more, hundreds of megabytes at a million entries, and the simplex's
 * time grows faster than the entries: the bound keeps a program within
 * what a solve can afford. Larger components stay undecided (struct
 * zeros.undecided).
 */
#define LP_MAX_ENTRIES 1000000

/* LP rows for inv row `row`: two for an interval when homogenized. */
static int lp_rows_of(const struct invariants *inv, size_t row, int homog)
{
	return 1 + (homog && invariants_interval(inv, row));
}

/* The entries of the program zeros_lp_build makes of c (rows selected by use,
 * may be NULL: all), before it is built. */
static size_t lp_entries(const struct lp_context *bd, const struct component *c, const uint8_t *use,
			 int homog)
{
	const struct invariants *inv = bd->inv;
	size_t n = homog ? 2 * c->m : 0;

	for (size_t k = 0; k < c->n_buckets; k++)
		for (size_t e = bd->brow_off[c->buckets[k]]; e < bd->brow_off[c->buckets[k] + 1];
		     e++)
			n += inv->row_off[bd->brow[e] + 1] - inv->row_off[bd->brow[e]] + !!homog;
	for (size_t k = 0; k < c->n_krows; k++)
		if (!use || use[k])
			n += (inv->row_off[c->krows[k] + 1] - inv->row_off[c->krows[k]] + !!homog) *
			     (size_t)lp_rows_of(inv, c->krows[k], homog);
	return n;
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

/* Row `row`'s local cells as LP row i's. */
static int lp_cells(const struct lp_context *bd, struct triplets *t, int i, size_t row)
{
	const struct invariants *inv = bd->inv;

	for (size_t e = inv->row_off[row]; e < inv->row_off[row + 1]; e++) {
		int32_t l = bd->local[inv->row_cell[e]];

		if (l >= 0 && trip_add(t, i, l + 1, 1.0))
			return -1;
	}
	return 0;
}

/* Adds inv row `row` as LP row ++*i: its local cells and the bound c (an
 * interval's two), or when homogenized (column t_col) = c t; an interval
 * then takes two rows, >= lo t and <= hi t. */
static int lp_row(struct lp_context *bd, glp_prob *lp, struct triplets *t, int *i, size_t row,
		  int t_col)
{
	const struct invariants *inv = bd->inv;
	int box = invariants_interval(inv, row);

	if (lp_cells(bd, t, ++*i, row))
		return -1;
	if (!t_col) {
		glp_set_row_bnds(lp, *i, box ? GLP_DB : GLP_FX, inv->rhs[row], inv->hi[row]);
		return 0;
	}
	glp_set_row_bnds(lp, *i, box ? GLP_LO : GLP_FX, 0, 0);
	if (trip_add(t, *i, t_col, -inv->rhs[row]))
		return -1;
	if (!box)
		return 0;
	glp_set_row_bnds(lp, ++*i, GLP_UP, 0, 0);
	return lp_cells(bd, t, *i, row) || trip_add(t, *i, t_col, -inv->hi[row]) ? -1 : 0;
}

glp_prob *zeros_lp_build(struct lp_context *bd, const struct component *c, const uint8_t *use,
			 int homog)
{
	glp_prob *lp = zeros_lp_create();
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
		rows += !use || use[k] ? lp_rows_of(bd->inv, c->krows[k], homog) : 0;
	glp_add_rows(lp, rows + (homog ? m : 0));
	for (size_t k = 0; k < c->n_buckets; k++)
		for (size_t e = bd->brow_off[c->buckets[k]]; e < bd->brow_off[c->buckets[k] + 1];
		     e++)
			bad |= lp_row(bd, lp, &t, &i, bd->brow[e], t_col);
	for (size_t k = 0; k < c->n_krows; k++)
		if (!use || use[k])
			bad |= lp_row(bd, lp, &t, &i, c->krows[k], t_col);
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

/*
 * The zero finder's verdict from lp's optimum: 1 with the cells it proves
 * zero in claim[] (z_j < 0.5), 0 when the rows admit no solution (only
 * y = 0, t = 0), -1 failure, -2 cancelled. Within GLPK's tolerances the
 * simplex may stop at t = 1 with z_j < 0.5 on a cell that some solution
 * makes positive but tiny (a rule of probability 1 - 1e-8 on two records
 * leaves 1e-8 records: z = 1e-8), a false zero that makes consistent
 * rules look inconsistent; an exact optimum puts z_j = 1 on every cell
 * that some solution makes positive. zeros_lp_solve has the exact
 * simplex decide where the float optimum is not clean; here also where it
 * claims a cell that is positive there, or finds no solution. A zero then
 * needs both; if the exact simplex fails, the float verdict stands.
 */
static int zero_claims(const struct lp_context *bd, const struct component *c, glp_prob *lp,
		       uint8_t *claim)
{
	double t = glp_get_col_prim(lp, (int)(2 * c->m + 1));
	int feasible = glp_get_obj_val(lp) >= 0.5, doubt = !feasible, r;
	enum pm_status st;

	for (size_t j = 0; j < c->m; j++) {
		claim[j] = glp_get_col_prim(lp, (int)(c->m + j + 1)) < 0.5;
		doubt |= claim[j] && glp_get_col_prim(lp, (int)j + 1) > 1e-11 * t;
	}
	if (!doubt)
		return 1;
	st = zeros_lp_exact(lp, bd->cancel, &r);
	if (st || r != 1)
		return st == PM_ERR_CANCELLED ? -2 : feasible;
	if (glp_get_obj_val(lp) < 0.5)
		return 0;
	for (size_t j = 0; j < c->m; j++)
		claim[j] &= glp_get_col_prim(lp, (int)(c->m + j + 1)) < 0.5;
	return 1;
}

struct finder_run {
	struct lp_context *bd;
	const struct component *c;
	uint8_t *claim;
	int r; /* zeros_lp_component_solve's verdict; -3 out of memory */
};

/* zeros_lp_component_solve's program, under lp_guard_run. */
static enum pm_status finder_lp(void *ctx)
{
	struct finder_run *f = ctx;
	glp_prob *lp = zeros_lp_build(f->bd, f->c, NULL, 1);
	enum pm_status st;

	if (!lp)
		return PM_OK; /* f->r stays -3 */
	st = zeros_lp_solve(lp, f->bd->cancel, &f->r);
	if (st)
		f->r = st == PM_ERR_CANCELLED ? -2 : -1;
	if (f->r > 0)
		f->r = zero_claims(f->bd, f->c, lp, f->claim);
	glp_delete_prob(lp);
	return PM_OK;
}

enum pm_status zeros_lp_component_solve(struct lp_context *bd, struct component *c, int *undecided,
					struct pm_error *err)
{
	struct finder_run f = {bd, c, NULL, -3};
	int r = -3; /* out of memory */
	enum pm_status st = PM_OK;

	*undecided = 0;
	/* every cell, those known to be zero too: some are zero only to 1e-9
	 * records (the certificates), and without them an exact program may
	 * find no solution where there is one */
	if (zeros_lp_cells(bd, c, 0))
		goto out;
	if (lp_entries(bd, c, NULL, 1) > bd->max_entries) {
		*undecided = 1;
		return PM_OK;
	}
	if (!(f.claim = malloc(c->m + 1)))
		goto out;
	/* a fatal error of GLPK: its message in err */
	if ((st = lp_guard_run(finder_lp, &f, err)))
		goto out;
	r = f.r;
	for (size_t j = 0; r > 0 && j < c->m; j++)
		if (f.claim[j])
			bd->zero[c->cells[j]] = 1;
out:
	free(f.claim);
	if (st)
		return st;
	if (r == -3)
		return error_set(err, PM_ERR_NOMEM, "", "out of memory");
	if (r == -2)
		return error_set(err, PM_ERR_CANCELLED, "", "the solve was cancelled");
	if (r < 0)
		return error_set(err, PM_ERR_INTERNAL, "", "the linear program solver failed");
	return r ? PM_OK : zeros_lp_conflict_report(bd, c, err);
}

struct lp_context zeros_lp_context(const struct zeros *z, struct cancel *cancel)
{
	return (struct lp_context){.cancel = cancel,
				   .ds = z->ds,
				   .k = z->k,
				   .inv = z->inv,
				   .zero = z->zero,
				   .max_entries = LP_MAX_ENTRIES};
}

enum pm_status zeros_lp_component(struct zeros *z, const struct components *cs, size_t i,
				  struct cancel *cancel, struct pm_error *err)
{
	struct lp_context bd = zeros_lp_context(z, cancel);
	struct component c = {.buckets = cs->bucket + cs->b_off[i],
			      .n_buckets = cs->b_off[i + 1] - cs->b_off[i],
			      .krows = cs->row + cs->r_off[i],
			      .n_krows = cs->r_off[i + 1] - cs->r_off[i]};
	int undecided;
	enum pm_status st = zeros_lp_component_solve(&bd, &c, &undecided, err);

	z->undecided += (size_t)undecided;

	zeros_lp_component_finish(&c);
	zeros_lp_context_finish(&bd);
	return st;
}
