/*
 * GLPK's simplex for the linear programs of the zero search: the
 * relaxations' proofs (zeros_relax.c), the zero finder of a component
 * that the interior point method leaves undecided, and the feasibility
 * tests that name the rules of a conflict.
 *
 * The zero finder, one program per component of buckets linked by
 * knowledge rows: homogenize with t >= 0 and bound z_j <= min(y_j, 1),
 *
 *     max sum_j z_j   s.t.  A y = c t,  z_j <= y_j,  0 <= z_j <= 1,  y >= 0.
 *
 * Feasible points form a convex cone, so one optimum has z_j = 1 for every
 * cell some solution makes positive and z_j = 0 for the others; every QI
 * row has c > 0, so t = 0 forces y = 0, and an optimum of 0 means that the
 * rows admit no solution at all.
 */
#include <glpk.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "components.h"
#include "solve.h"
#include "zeros.h"

/* Longest stretch of simplex work between two cancel checks. */
#define LP_SLICE_MS 200
/* The first, presolved slice of zeros_lp_simplex: the presolver hands back no
 * partial basis, so its work is lost when it runs out. */
#define LP_PRESOLVED_MS 1000
/* A floating-point optimum is clean when no basic variable is beyond its
 * bounds and no reduced cost improves by more than this. */
#define LP_CLEAN 1e-9
/* Iteration budget of a program: LP_ITER_BASE + LP_ITER_PER (rows + cols). */
#define LP_ITER_BASE 10000
#define LP_ITER_PER  20
/* Decimal places of the values that the exact simplex reads as decimals:
 * 10^9 times a count of a million records is still exact in a double. */
#define LP_DECIMALS 9

/* 1 optimal (feasible), 0 infeasible, -1 anything else: every program
 * here has a bounded objective, so "unbounded" is a numerical failure. */
static int lp_status(struct glp_prob *lp)
{
	switch (glp_get_status(lp)) {
	case GLP_OPT:
	case GLP_FEAS:
		return 1;
	case GLP_NOFEAS:
		return 0;
	}
	return -1;
}

struct glp_prob *zeros_lp_create(void)
{
	glp_term_out(GLP_OFF);
	return glp_create_prob();
}

/* Simplex iterations lp may take, in either arithmetic: far more than the
 * simplex needs (a few times the rows), so only a cycling one runs out. */
int zeros_lp_iteration_budget(struct glp_prob *lp)
{
	double n = LP_ITER_BASE +
		   LP_ITER_PER * ((double)glp_get_num_rows(lp) + (double)glp_get_num_cols(lp));

	return n < INT_MAX ? (int)n : INT_MAX;
}

/*
 * GLPK's simplex in slices of LP_SLICE_MS, between which o's cancel (or
 * the time limit behind it) is polled, within *left iterations (those it
 * takes are taken off): *glpk gets GLPK's return code; PM_ERR_CANCELLED
 * when stopped. tol_bnd 0 keeps GLPK's. The presolver hands back no
 * partial basis, so only the first slice may use it; a presolved slice
 * that runs out starts the next from the basis the program had.
 */
enum pm_status zeros_lp_simplex(struct glp_prob *lp, const struct solver_options *o, int presolve,
				double tol_bnd, int *left, int *glpk)
{
	glp_smcp p;
	int ret;

	glp_init_smcp(&p);
	p.msg_lev = GLP_MSG_OFF;
	p.presolve = presolve ? GLP_ON : GLP_OFF;
	if (tol_bnd > 0)
		p.tol_bnd = tol_bnd;
	/* a presolved slice that runs out loses its work: it gets longer */
	p.tm_lim = presolve ? LP_PRESOLVED_MS : LP_SLICE_MS;
	do {
		int it0 = glp_get_it_cnt(lp);

		if (*left <= 0) {
			*glpk = GLP_EITLIM;
			return PM_OK;
		}
		p.it_lim = *left;
		ret = glp_simplex(lp, &p);
		*left -= glp_get_it_cnt(lp) - it0;
		p.presolve = GLP_OFF;
		p.tm_lim = LP_SLICE_MS;
	} while (ret == GLP_ETMLIM && !solver_stop_asked(o));
	*glpk = ret;
	return ret == GLP_ETMLIM ? PM_ERR_CANCELLED : PM_OK;
}

/* x times 10^k rounded, if it is an integer to double precision. */
static int decimal_at(double x, int k, double *scaled)
{
	double s = x * pow(10, k), r = nearbyint(s);

	*scaled = r;
	return fabs(s - r) <= 1e-14 * fmax(1, fabs(s));
}

/* Decimal places (at most LP_DECIMALS) that x has to double precision,
 * or 0 if it has more. */
static int decimals(double x)
{
	double s;

	for (int k = 0; k <= LP_DECIMALS; k++)
		if (decimal_at(x, k, &s))
			return k;
	return 0;
}

/* x times 10^k, rounded to the integer it stands for if it is one. */
static double scale(double x, int k)
{
	double s;

	return decimal_at(x, k, &s) ? s : x * pow(10, k);
}

/*
 * Scales each row of lp by 10^k, k the most decimal places of its values
 * (coefficients and bounds, up to LP_DECIMALS), so that they become the
 * integers they stand for. GLPK's exact simplex reads a double as the
 * simplest fraction within 1e-10 of it: 0.999999997 becomes
 * 333333332/333333333, and rules of 3e-9 and 0.999999997 on two records
 * ask for more than two records: consistent knowledge found infeasible.
 * Only a help: skipped without memory.
 */
static void decimal_rows(struct glp_prob *lp)
{
	int m = glp_get_num_rows(lp), n = glp_get_num_cols(lp);
	int *ind = malloc((size_t)(n + 1) * sizeof *ind);
	double *val = malloc((size_t)(n + 1) * sizeof *val);

	for (int i = 1; ind && val && i <= m; i++) {
		int len = glp_get_mat_row(lp, i, ind, val), type = glp_get_row_type(lp, i);
		double lb = glp_get_row_lb(lp, i), ub = glp_get_row_ub(lp, i);
		int k = decimals(lb), d = decimals(ub);

		k = d > k ? d : k;
		for (int e = 1; e <= len; e++)
			k = (d = decimals(val[e])) > k ? d : k;
		/* a row scaled past DBL_MAX stays as it is: GLPK's exact
		 * simplex asserts on an infinite value */
		if (!k || !isfinite(scale(lb, k)) || !isfinite(scale(ub, k)))
			continue;
		for (int e = 1; e <= len; e++)
			val[e] = scale(val[e], k);
		glp_set_mat_row(lp, i, len, ind, val);
		glp_set_row_bnds(lp, i, type, scale(lb, k), scale(ub, k));
	}
	free(ind);
	free(val);
}

/*
 * GLPK's exact (rational) simplex from lp's basis, or the standard basis
 * when that one is singular, within the iteration budget, on lp's rows in
 * decimal (decimal_rows). Each resume factorizes the basis again in
 * rational arithmetic, which may take longer than a slice: the slices
 * double, so that every one gets further than the last.
 */
enum pm_status zeros_lp_exact(struct glp_prob *lp, const struct solver_options *o, int *feasible)
{
	glp_smcp p;
	int ret, left = zeros_lp_iteration_budget(lp), restarted = 0;

	decimal_rows(lp);
	glp_init_smcp(&p);
	p.msg_lev = GLP_MSG_OFF;
	p.tm_lim = LP_SLICE_MS;
	for (;;) {
		int it0 = glp_get_it_cnt(lp);

		p.it_lim = left;
		ret = glp_exact(lp, &p);
		left -= glp_get_it_cnt(lp) - it0;
		if ((ret == GLP_EBADB || ret == GLP_ESING) && !restarted++) {
			glp_std_basis(lp);
			continue;
		}
		if (ret != GLP_ETMLIM || left <= 0)
			break;
		if (solver_stop_asked(o))
			return PM_ERR_CANCELLED;
		p.tm_lim = p.tm_lim < INT_MAX / 2 ? 2 * p.tm_lim : INT_MAX;
	}
	*feasible = ret ? -1 : lp_status(lp);
	return *feasible < 0 ? PM_ERR_INTERNAL : PM_OK;
}

/* Is variable k of lp (rows 1..m, then columns) clean? (LP_CLEAN) */
static int var_clean(struct glp_prob *lp, int k, int m, int max)
{
	int row = k <= m, i = row ? k : k - m;
	int stat = row ? glp_get_row_stat(lp, i) : glp_get_col_stat(lp, i);
	int type = row ? glp_get_row_type(lp, i) : glp_get_col_type(lp, i);
	double lb = row ? glp_get_row_lb(lp, i) : glp_get_col_lb(lp, i);
	double ub = row ? glp_get_row_ub(lp, i) : glp_get_col_ub(lp, i);
	double x = row ? glp_get_row_prim(lp, i) : glp_get_col_prim(lp, i);
	double d = (row ? glp_get_row_dual(lp, i) : glp_get_col_dual(lp, i)) * (max ? 1 : -1);
	int has_lb = type == GLP_LO || type == GLP_DB || type == GLP_FX;
	int has_ub = type == GLP_UP || type == GLP_DB || type == GLP_FX;

	if (stat == GLP_BS)
		return (!has_lb || x >= lb - LP_CLEAN * (1 + fabs(lb))) &&
		       (!has_ub || x <= ub + LP_CLEAN * (1 + fabs(ub)));
	if (stat == GLP_NL)
		return d <= LP_CLEAN;
	if (stat == GLP_NU)
		return d >= -LP_CLEAN;
	return stat != GLP_NF || fabs(d) <= LP_CLEAN;
}

/*
 * Is lp's floating-point optimum clean: every basic variable within its
 * bounds and no reduced cost improving, to LP_CLEAN? The simplex stops
 * within its tolerances (1e-7): a cell that only a step of that order
 * makes positive looks zero at its optimum, and the exact optimum differs.
 */
int zeros_lp_clean(struct glp_prob *lp)
{
	int m = glp_get_num_rows(lp), n = glp_get_num_cols(lp);
	int max = glp_get_obj_dir(lp) == GLP_MAX;

	for (int k = 1; k <= m + n; k++)
		if (!var_clean(lp, k, m, max))
			return 0;
	return 1;
}

/*
 * GLPK's simplex has no callback, so it runs in slices of LP_SLICE_MS and
 * resumes from its current basis; between slices a cancel is honoured.
 * When the floating-point simplex fails, ends "unbounded" (rows of 5e-8
 * records: the zero finder of a consistent component) or runs out of
 * iterations (it cycled for ever on rows x = t and x = 0.9999999 t,
 * "numerical instability" after every refactorization), the exact
 * simplex takes over from the basis it reached; if that too runs out, the
 * solve fails rather than hangs. It also decides where the float verdict
 * rests on GLPK's tolerances: "infeasible", or an optimum that is not
 * clean (rules that conflict by 1e-8 records look consistent in floating
 * point, and the solve then runs into its iteration limit).
 */
enum pm_status zeros_lp_solve(struct glp_prob *lp, const struct solver_options *o, int *feasible)
{
	int left = zeros_lp_iteration_budget(lp), ret, r, e;
	enum pm_status st;

	/* the program took a while to build: a check before the simplex's
	 * own slices begin */
	if (solver_stop_asked(o))
		return PM_ERR_CANCELLED;
	glp_adv_basis(lp, 0);
	st = zeros_lp_simplex(lp, o, 0, 0, &left, &ret);
	if (!st && ret != 0 && ret != GLP_EITLIM) {
		glp_std_basis(lp); /* singular or ill-conditioned start: retry */
		st = zeros_lp_simplex(lp, o, 0, 0, &left, &ret);
	}
	if (st)
		return st;
	r = ret ? -1 : lp_status(lp);
	*feasible = r;
	if (r == 1 && zeros_lp_clean(lp))
		return PM_OK;
	st = zeros_lp_exact(lp, o, &e);
	if (st == PM_ERR_CANCELLED)
		return st;
	*feasible = st ? r : e; /* the exact simplex failed: the float verdict */
	return *feasible < 0 ? PM_ERR_INTERNAL : PM_OK;
}

/* ---- the programs of a component ----------------------------------------- */

/* A component: its buckets and knowledge rows (borrowed from the
 * struct components of zeros_lp_conflict), with local cell numbers. */
struct component {
	size_t n_buckets, n_krows, m;
	const uint32_t *buckets, *krows;
	uint32_t *cells; /* local -> inv cell, non-zero cells only */
};

/* Invariant rows of each bucket, and components, shared by all LPs. */
struct lp_context {
	const struct solver_options *o; /* progress callback for cancels; may be NULL */
	const struct dataset *ds;
	const struct knowledge *k;
	const struct invariants *inv;
	uint8_t *zero;
	size_t *brow_off; /* invariant rows of bucket b: brow[brow_off[b] ..) */
	uint32_t *brow;
	int32_t *local;	    /* inv cell -> local column, -1 if not in the LP */
	size_t max_entries; /* the largest program built (LP_MAX_ENTRIES) */
};

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

static void context_finish(struct lp_context *bd)
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

/* The touched buckets' components (components.c), every knowledge row
 * linking the buckets it touches; cs holds their lists. */
static enum pm_status components_split(struct lp_context *bd, struct components *cs,
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
static enum pm_status component_cells(struct lp_context *bd, struct component *c, int skip_zero)
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
 * more. The zero finder of a 1,000,000-record table's one component
 * (10,000,000 columns) took 11 GB before it was stopped; one of 24,000
 * cells ran longer than 16 minutes. Larger components stay undecided
 * (struct zeros.undecided).
 */
#define LP_MAX_ENTRIES 1000000
/* The same for a check whether knowledge with intervals conflicts, not
 * proved by anything (zeros_lp_conflict without proved): on Adult one of
 * about 10^6 entries and its deletion filter took over nine minutes. */
#define LP_CHECK_ENTRIES 100000

/* LP rows for inv row `row`: two for an interval when homogenized. */
static int lp_rows_of(const struct invariants *inv, size_t row, int homog)
{
	return 1 + (homog && invariants_interval(inv, row));
}

/* The entries of the program lp_build makes of c (rows selected by use,
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

/* The component's LP: homogenized zero finder, or (homog = 0) the plain
 * feasibility problem A y = c, y >= 0 with the knowledge rows in use[]
 * (NULL: all). Returns NULL when out of memory. */
static glp_prob *lp_build(struct lp_context *bd, const struct component *c, const uint8_t *use,
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

/* Does propagation alone prove the component infeasible with the
 * knowledge rows in use[] (NULL: all of them)? Every other knowledge row
 * is set aside as resolved, which propagation skips, and so is an
 * interval's (propagation reads equalities; without it, a relaxation).
 * 1 yes, 0 no, -1 out of memory. */
static int proved_infeasible(struct lp_context *bd, const struct component *c, const uint8_t *use)
{
	const struct invariants *inv = bd->inv;
	uint8_t *zero = calloc(inv->n_cells + 1, 1), *resolved = malloc(inv->n_rows + 1);
	int infeasible = -1;

	if (zero && resolved) {
		memset(resolved, 1, inv->n_rows);
		for (size_t k = 0; k < c->n_krows; k++) {
			size_t r = c->krows[k];
			int used = !use || use[k];

			resolved[r] = (uint8_t)(!used || invariants_interval(inv, r));
			for (size_t e = inv->row_off[r];
			     used && inv->hi[r] <= 0 && e < inv->row_off[r + 1]; e++)
				zero[inv->row_cell[e]] = 1;
		}
		if (zeros_propagate(inv, zero, resolved, &infeasible))
			infeasible = -1;
	}
	free(zero);
	free(resolved);
	return infeasible;
}

struct feasible_run {
	struct lp_context *bd;
	const struct component *c;
	const uint8_t *use;
	int r;
};

/* feasible's program, under lp_guard_run. */
static enum pm_status feasible_lp(void *ctx)
{
	struct feasible_run *f = ctx;
	glp_prob *lp = lp_build(f->bd, f->c, f->use, 0);
	enum pm_status st;

	if (!lp)
		return PM_ERR_NOMEM;
	st = zeros_lp_solve(lp, f->bd->o, &f->r);
	if (!st && f->r == 1) { /* named from exact verdicts, as component_solve's */
		int e;
		enum pm_status ex = zeros_lp_exact(lp, f->bd->o, &e);

		st = ex == PM_ERR_CANCELLED ? ex : PM_OK;
		f->r = ex ? f->r : e;
	}
	glp_delete_prob(lp);
	return st;
}

/* Is the component feasible with the knowledge rows in use[]? Propagation
 * first (milliseconds, where GLPK takes minutes on 150,000 cells); with
 * no rule at all it is (the closed form); else the linear program, its
 * verdict confirmed by the exact simplex (an error path: the cost is
 * no matter, and the rules named must agree with component_solve's exact
 * verdict). 1, 0, -1 failure (GLPK's fatal errors too), -2 cancelled. */
static int feasible(struct lp_context *bd, const struct component *c, const uint8_t *use)
{
	int proved = proved_infeasible(bd, c, use);
	struct feasible_run f = {bd, c, use, -1};
	struct pm_error e;
	enum pm_status st;

	if (proved)
		return proved > 0 ? 0 : -1;
	if (!memchr(use, 1, c->n_krows))
		return 1;
	if (!c->m)
		return 0; /* every cell zero, yet QI rows need records */
	st = lp_guard_run(feasible_lp, &f, &e);
	return st == PM_ERR_CANCELLED ? -2 : st ? -1 : f.r;
}

/* Appends "rules[i] P(...) = p" for knowledge row `row` to msg. */
static void describe_row(struct lp_context *bd, size_t row, char *msg, size_t len)
{
	size_t r = bd->inv->row_ref[row], used = strlen(msg);
	char text[512] = "";

	if (bd->k && r < bd->k->n)
		knowledge_describe(bd->ds, &bd->k->rules[r], text, sizeof text);
	if (used + 1 < len)
		snprintf(msg + used, len - used, "%srules[%zu] %s", used ? "; " : "", r, text);
}

int zeros_lp_filter(uint8_t *use, const uint8_t *stay, size_t n, uint8_t *save,
		    int (*feasible)(void *ctx, const uint8_t *use), void *ctx)
{
	for (size_t chunk = n > 1 ? n / 2 : 1;; chunk = (chunk + 1) / 2) {
		for (size_t i = 0; i < n; i += chunk) {
			size_t w = i + chunk < n ? chunk : n - i;
			int f;

			memcpy(save, use + i, w);
			for (size_t j = i; j < i + w; j++)
				use[j] &= stay && stay[j];
			if (!memcmp(save, use + i, w))
				continue;
			if ((f = feasible(ctx, use)) < 0)
				return f;
			if (f)
				memcpy(use + i, save, w); /* needed for the conflict */
		}
		if (chunk == 1)
			return 0;
	}
}

struct filter_ctx {
	struct lp_context *bd;
	struct component *c;
};

static int component_feasible(void *ctx, const uint8_t *use)
{
	struct filter_ctx *fc = ctx;

	return feasible(fc->bd, fc->c, use);
}

/* Deletion filter in shrinking chunks: the rules left form an irreducible
 * infeasible set (each one is needed for the conflict). */
static enum pm_status conflict_report(struct lp_context *bd, struct component *c,
				      struct pm_error *err)
{
	uint8_t *use = malloc(c->n_krows + 1), *save = malloc(c->n_krows + 1);
	char msg[sizeof err->message - 96] = "";
	size_t n = 0;
	enum pm_status st = PM_ERR_NOMEM;
	int f;

	if (!use || !save || component_cells(bd, c, 0))
		goto out;
	memset(use, 1, c->n_krows);
	if ((f = zeros_lp_filter(use, NULL, c->n_krows, save, component_feasible,
				 &(struct filter_ctx){bd, c})) < 0) {
		st = f == -2 ? PM_ERR_CANCELLED : PM_ERR_INTERNAL;
		goto out;
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
 * every cell that some solution makes positive. zeros_lp_solve has the exact
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
	st = zeros_lp_exact(lp, bd->o, &r);
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
	int r; /* component_solve's verdict; -3 out of memory */
};

/* component_solve's program, under lp_guard_run. */
static enum pm_status finder_lp(void *ctx)
{
	struct finder_run *f = ctx;
	glp_prob *lp = lp_build(f->bd, f->c, NULL, 1);
	enum pm_status st;

	if (!lp)
		return PM_OK; /* f->r stays -3 */
	st = zeros_lp_solve(lp, f->bd->o, &f->r);
	if (st)
		f->r = st == PM_ERR_CANCELLED ? -2 : -1;
	if (f->r > 0)
		f->r = zero_claims(f->bd, f->c, lp, f->claim);
	glp_delete_prob(lp);
	return PM_OK;
}

/* Zero finder LP on one component; conflicts are reported. *undecided
 * (and nothing done) when its program is over LP_MAX_ENTRIES. */
static enum pm_status component_solve(struct lp_context *bd, struct component *c, int *undecided,
				      struct pm_error *err)
{
	struct finder_run f = {bd, c, NULL, -3};
	int r = -3; /* out of memory */
	enum pm_status st = PM_OK;

	*undecided = 0;
	/* every cell, those known to be zero too: some are zero only to 1e-9
	 * records (the certificates), and without them an exact program may
	 * find no solution where there is one */
	if (component_cells(bd, c, 0))
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
	return r ? PM_OK : conflict_report(bd, c, err);
}

/*
 * Propagation or the relaxations found no solution. A component that
 * propagation alone proves infeasible has its rules named, with no linear
 * program over any component (the zero finder of a consistent one, first
 * in line, once failed numerically and hid the conflict); otherwise (the
 * relaxations' proof) each component's program decides.
 */
static enum pm_status infeasible_components(struct lp_context *bd, struct component *cs, size_t n,
					    int proved, struct pm_error *err)
{
	enum pm_status st = PM_OK;
	size_t large = 0, rules = 0;

	for (size_t i = 0; i < n; i++) {
		int p = proved_infeasible(bd, &cs[i], NULL);

		if (p)
			return p < 0 ? PM_ERR_NOMEM : conflict_report(bd, &cs[i], err);
	}
	for (size_t i = 0; !st && i < n; i++) {
		int undecided;

		st = component_solve(bd, &cs[i], &undecided, err);
		large += undecided;
		rules += undecided ? cs[i].n_krows : 0;
	}
	/* the conflict lies in a component too large to name its rules
	 * (when proved, as by propagation; else nothing is known) */
	if (!st && large && proved)
		st = error_set(err, PM_ERR_INCONSISTENT, "rules",
			       "no distribution satisfies the rules together; the conflict lies "
			       "among %zu of them, too many to name the conflicting ones",
			       rules);
	return st;
}

/* The context of z's programs (the invariant rows of each bucket are
 * indexed when the first program is built). */
static struct lp_context context_of(const struct zeros *z, const struct solver_options *o)
{
	return (struct lp_context){.o = o,
				   .ds = z->ds,
				   .k = z->k,
				   .inv = z->inv,
				   .zero = z->zero,
				   .max_entries = LP_MAX_ENTRIES};
}

enum pm_status zeros_lp_component(struct zeros *z, const struct components *cs, size_t i,
				  const struct solver_options *o, struct pm_error *err)
{
	struct lp_context bd = context_of(z, o);
	struct component c = {.buckets = cs->bucket + cs->b_off[i],
			      .n_buckets = cs->b_off[i + 1] - cs->b_off[i],
			      .krows = cs->row + cs->r_off[i],
			      .n_krows = cs->r_off[i + 1] - cs->r_off[i]};
	int undecided;
	enum pm_status st = component_solve(&bd, &c, &undecided, err);

	z->undecided += (size_t)undecided;

	component_finish(&c);
	context_finish(&bd);
	return st;
}

enum pm_status zeros_lp_conflict(struct zeros *z, const struct solver_options *o, int proved,
				 struct pm_error *err)
{
	struct lp_context bd = context_of(z, o);
	struct components lists = {0};
	struct component *cs = NULL;
	size_t n = 0;
	enum pm_status st = components_split(&bd, &lists, &cs, &n);

	if (!proved) /* only a check: no minutes of simplex on a hunch */
		bd.max_entries = LP_CHECK_ENTRIES;
	if (!st)
		st = infeasible_components(&bd, cs, n, proved, err);
	if (st == PM_ERR_NOMEM)
		error_set(err, st, "", "out of memory finding forced zeros");
	for (size_t i = 0; i < n; i++)
		component_finish(&cs[i]);
	free(cs);
	components_finish(&lists);
	context_finish(&bd);
	zeros_lp_release(); /* called outside zeros_deepen too (solver.c) */
	return st;
}

void zeros_describe_row(const struct zeros *z, size_t row, char *msg, size_t len)
{
	struct lp_context bd = context_of(z, NULL);

	describe_row(&bd, row, msg, len);
}

void zeros_lp_release(void)
{
	glp_free_env();
}
