/*
 * The proof of a relaxation's claims (zeros_relax.h): GLPK's
 * floating-point simplex finds which claims hold at an optimum of their
 * total distance from their bounds, and that optimum's duals bound the
 * distance in every solution (zeros_lp_safe_max); where that bound is not
 * within ZERO_RECORDS, GLPK's exact simplex decides.
 */
#include <glpk.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solve.h"
#include "zeros.h"
#include "zeros_relax.h"

/* The objective max sum_low x - sum_high x: the claims' total distance
 * from their bounds, less a constant. */
static void claims_objective(const struct value *v, glp_prob *lp)
{
	for (size_t j = 0; j < v->p.n; j++)
		glp_set_obj_coef(lp, (int)j + 1, v->low[j] ? 1.0 : v->high[j] ? -1.0 : 0.0);
}

/* Does GLPK's optimum hold every remaining claim? Drops the claims it
 * breaks; returns 1 when all hold, 0 to try again, -1 on failure. */
static int verify_round(struct value *v, glp_prob *lp, int *first)
{
	int ret, held = 1, left = zeros_lp_iteration_budget(lp); /* cycling: nothing proved */
	enum pm_status st;

	claims_objective(v, lp);
	/* tol_bnd: not GLPK's 1e-7, see below; in time slices, for cancels */
	st = zeros_lp_simplex(lp, v->p.cancel, *first, ZERO_RECORDS, &left, &ret);
	*first = 0;
	if (st)
		return -2;
	if (ret == GLP_ENOPFS || (!ret && glp_get_status(lp) == GLP_NOFEAS)) {
		v->x->infeasible = 1;
		return -1;
	}
	if (ret || glp_get_status(lp) != GLP_OPT)
		return -1;
	/* a claim holds to ZERO_RECORDS, as the certificate's: at a looser
	 * tolerance, a cell whose largest value is that tolerance (a rule of
	 * probability 1 - 1e-7 on one record leaves 1e-7 records) would be
	 * proved zero, and the knowledge would look inconsistent */
	for (size_t j = 0; j < v->p.n; j++) {
		double x = glp_get_col_prim(lp, (int)j + 1), tol = ZERO_RECORDS * fmax(1, v->u[j]);

		if (v->low[j] && x > tol)
			v->low[j] = 0, held = 0;
		if (v->high[j] && v->u[j] - x > tol)
			v->high[j] = 0, held = 0;
	}
	return held;
}

/* How far claim j (0 if none) is from its bound in lp's solution. */
static double claim_distance(const struct value *v, glp_prob *lp, size_t j)
{
	double x = glp_get_col_prim(lp, (int)j + 1);

	return v->low[j] ? x : v->high[j] ? v->u[j] - x : 0;
}

/*
 * The claims that the floating-point rounds held, confirmed by the exact
 * simplex from their optimum. Its tolerances let the float simplex hold a
 * claim whose largest value is below them (a rule of probability
 * 1 - 1e-8 on two records leaves 1e-8 records); such a cell zeroed makes
 * the rule look inconsistent. The exact optimum's
 * total distance bounds every claim's distance in every solution, so all
 * hold when it is within ZERO_RECORDS; else the claims away from their
 * bounds are dropped. 1 all hold, 0 try again, -1 nothing proved (no
 * exact optimum: the rows then hold only to the float tolerance, as
 * zeros proved to ZERO_RECORDS elsewhere may leave them).
 */
static int exact_round(struct value *v, glp_prob *lp)
{
	double total = 0;
	int feasible;

	claims_objective(v, lp);
	/* cancelled: nothing proved, and zeros_relax stops */
	if (zeros_lp_exact(lp, v->x->cancel, &feasible) || feasible != 1)
		return -1;
	for (size_t j = 0; j < v->p.n; j++)
		total += claim_distance(v, lp, j);
	if (total <= ZERO_RECORDS)
		return 1;
	for (size_t j = 0; j < v->p.n; j++)
		if (claim_distance(v, lp, j) > 0)
			v->low[j] = v->high[j] = 0;
	return 0;
}

/* The claims' total distance from their bounds is the objective
 * (claims_objective) plus this: the upper claims' bounds. */
static double high_total(const struct value *v)
{
	double t = 0;

	for (size_t j = 0; j < v->p.n; j++)
		t += v->high[j] ? v->u[j] : 0;
	return t;
}

/* exact_round until the claims left all hold: 1, else 0. */
static int exact_rounds(struct value *v, glp_prob *lp)
{
	for (int round = 0; round < 100; round++) {
		int r = exact_round(v, lp);

		if (r)
			return r > 0;
	}
	return 0;
}

struct verify_run {
	struct value *v;
	int *ia, *ja;
	double *ar;
	int r; /* 1 when every claim left is proved */
};

/* value_verify's program, under lp_guard_run. */
static enum pm_status verify_lp(void *ctx)
{
	struct verify_run *x = ctx;
	struct value *v = x->v;
	const struct relax_problem *p = &v->p;
	glp_prob *lp = zeros_lp_create();
	int *ia = x->ia, *ja = x->ja, nz = 0, first = 1, r = 0;
	double *ar = x->ar;

	glp_set_obj_dir(lp, GLP_MAX);
	glp_add_cols(lp, (int)p->n);
	glp_add_rows(lp, (int)(p->n_groups + p->n_rows));
	for (size_t g = 0; g < p->n_groups; g++)
		glp_set_row_bnds(lp, (int)g + 1, GLP_FX, p->d[g], p->d[g]);
	for (size_t k = 0; k < p->n_rows; k++)
		glp_set_row_bnds(lp, (int)(p->n_groups + k) + 1, GLP_FX, p->c[k], p->c[k]);
	for (size_t j = 0; j < p->n; j++) {
		glp_set_col_bnds(lp, (int)j + 1, GLP_DB, 0, p->u[j]);
		ia[++nz] = (int)p->group[j] + 1, ja[nz] = (int)j + 1, ar[nz] = 1;
		for (size_t e = p->var_off[j]; e < p->var_off[j + 1]; e++)
			ia[++nz] = (int)(p->n_groups + p->var_row[e]) + 1, ja[nz] = (int)j + 1,
			ar[nz] = 1;
	}
	glp_load_matrix(lp, nz, ia, ja, ar);
	for (int round = 0; round < 100 && (r = verify_round(v, lp, &first)) == 0; round++)
		;
	/* the floating-point optimum's duals prove the claims, or the exact
	 * simplex does */
	if (r == 1 && !(zeros_lp_safe_max(lp, high_total(v)) <= ZERO_RECORDS) &&
	    !exact_rounds(v, lp))
		r = 0;
	x->r = r;
	glp_delete_prob(lp);
	return PM_OK;
}

/* A fatal error of GLPK proves nothing, as a program it cannot solve: a
 * relaxation only adds zeros, and the exact stage decides without it. */
enum pm_status zeros_relax_verify(struct value *v)
{
	const struct relax_problem *p = &v->p;
	size_t n = 2 * p->var_off[p->n] + p->n + 2;
	struct verify_run x = {v, malloc(n * sizeof *x.ia), malloc(n * sizeof *x.ja),
			       malloc(n * sizeof *x.ar), 0};
	struct pm_error fatal;
	enum pm_status st = PM_ERR_NOMEM;

	if (x.ia && x.ja && x.ar) {
		st = PM_OK;
		lp_guard_run(verify_lp, &x, &fatal);
	}
	if (!st && x.r != 1) { /* unproven: use nothing */
		memset(v->low, 0, p->n);
		memset(v->high, 0, p->n);
	}
	free(x.ia);
	free(x.ja);
	free(x.ar);
	return st;
}
