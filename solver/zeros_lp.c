/*
 * GLPK's simplex for the linear programs of the zero search: the
 * relaxations' proofs (zeros_relax.c), the zero finder of a component
 * that the interior point method leaves undecided, and the feasibility
 * tests that name the rules of a conflict. This file drives GLPK (its
 * simplex, in slices, and its exact simplex); the programs are built in
 * zeros_lp_component.c, and zeros_lp_conflict.c names conflicts.
 */
#include <float.h>
#include <glpk.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>

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
enum pm_status zeros_lp_simplex(struct glp_prob *lp, struct cancel *cancel, int presolve,
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
	} while (ret == GLP_ETMLIM && !cancel_poll(cancel));
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
enum pm_status zeros_lp_exact(struct glp_prob *lp, struct cancel *cancel, int *feasible)
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
		if (cancel_poll(cancel))
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
 * iterations (it can cycle: rows such as x = t and x = 0.9999999 t give
 * "numerical instability" at every refactorization), the exact
 * simplex takes over from the basis it reached; if that too runs out, the
 * solve fails rather than hangs. It also decides where the float verdict
 * rests on GLPK's tolerances: "infeasible", or an optimum that is not
 * clean (rules that conflict by 1e-8 records look consistent in floating
 * point, and the solve then runs into its iteration limit).
 */
enum pm_status zeros_lp_solve(struct glp_prob *lp, struct cancel *cancel, int *feasible)
{
	int left = zeros_lp_iteration_budget(lp), ret, r, e;
	enum pm_status st;

	/* the program took a while to build: a check before the simplex's
	 * own slices begin */
	if (cancel_poll(cancel))
		return PM_ERR_CANCELLED;
	glp_adv_basis(lp, 0);
	st = zeros_lp_simplex(lp, cancel, 0, 0, &left, &ret);
	if (!st && ret != 0 && ret != GLP_EITLIM) {
		glp_std_basis(lp); /* singular or ill-conditioned start: retry */
		st = zeros_lp_simplex(lp, cancel, 0, 0, &left, &ret);
	}
	if (st)
		return st;
	r = ret ? -1 : lp_status(lp);
	*feasible = r;
	if (r == 1 && zeros_lp_clean(lp))
		return PM_OK;
	st = zeros_lp_exact(lp, cancel, &e);
	if (st == PM_ERR_CANCELLED)
		return st;
	*feasible = st ? r : e; /* the exact simplex failed: the float verdict */
	return *feasible < 0 ? PM_ERR_INTERNAL : PM_OK;
}

void zeros_lp_release(void)
{
	glp_free_env();
}

/*
 * A sum of doubles kept to twice the working precision (Ogita, Rump and
 * Oishi, "Accurate sum and dot product", SIAM J. Sci. Comput. 26, 2005:
 * TwoSum and, with fma, TwoProduct, their Sum2 and Dot2), with what its
 * error bound needs: the terms' count and magnitude.
 */
struct exact_sum {
	double s, c, mag;
	double n;
};

static void exact_add(struct exact_sum *a, double x)
{
	double t = a->s + x, z = t - a->s;

	a->c += (a->s - (t - z)) + (x - z);
	a->s = t;
	a->mag += fabs(x);
	a->n++;
}

static void exact_mul_add(struct exact_sum *a, double x, double y)
{
	double p = x * y;

	exact_add(a, p);
	exact_add(a, fma(x, y, -p));
}

/* An upper (lower, with sign -1) bound on the exact sum: Dot2's result
 * res is within u |res| + gamma_n^2 mag of it (u the unit roundoff; the
 * paper's Proposition 5.5), doubled for the rounding of this bound
 * itself and of a sum near the underflow range. */
static double exact_bound(const struct exact_sum *a, int sign)
{
	double u = DBL_EPSILON / 2, g = a->n * u / (1 - a->n * u), res = a->s + a->c;
	double err = 2 * (u * fabs(res) + g * g * a->mag) + (a->n + 1) * DBL_MIN;

	return res + sign * err;
}

/*
 * Column j's largest term over its bounds, the reduced cost r_j = c_j -
 * a_j^T y known only within [lo, hi]: with 0 <= l_j <= x_j <= u_j,
 * r x <= hi x, largest at u_j if hi > 0, else at l_j. Other bounds:
 * NaN (no bound offered).
 */
static void column_term(glp_prob *lp, int j, const double *y, int *ind, double *val,
			struct exact_sum *ub)
{
	struct exact_sum r = {0};
	int type = glp_get_col_type(lp, j), len = glp_get_mat_col(lp, j, ind, val);
	double l = glp_get_col_lb(lp, j), u = glp_get_col_ub(lp, j), hi;

	if ((type != GLP_DB && type != GLP_FX) || !(l >= 0) || !isfinite(u)) {
		exact_add(ub, NAN);
		return;
	}
	exact_add(&r, glp_get_obj_coef(lp, j));
	for (int k = 1; k <= len; k++)
		exact_mul_add(&r, -val[k], y[ind[k]]);
	hi = exact_bound(&r, 1);
	exact_mul_add(ub, hi, hi > 0 ? u : l);
}

/*
 * A rigorous upper bound on the optimum of lp (maximized, rows fixed,
 * columns within finite bounds l >= 0) plus offset, from the row duals y
 * of its last floating-point solution: for every feasible x, c^T x = y^T
 * b + (c - A^T y)^T x, and the second term is at most the columns' terms
 * (weak duality for any y: Neumaier and Shcherbina, "Safe bounds in
 * linear and mixed-integer linear programming", Math. Program. 99,
 * 2004). Evaluated with error-bounded sums, so the bound holds whatever
 * y is and however close it is; a good y makes it the optimum within
 * rounding of twice the working precision. NaN where lp has another
 * shape (no bound offered).
 */
double zeros_lp_safe_max(glp_prob *lp, double offset)
{
	int m = glp_get_num_rows(lp), n = glp_get_num_cols(lp);
	double *y = malloc(((size_t)m + 1) * sizeof *y),
	       *val = malloc(((size_t)m + 1) * sizeof *val);
	int *ind = malloc(((size_t)m + 1) * sizeof *ind);
	struct exact_sum ub = {0};

	if (!y || !val || !ind) {
		exact_add(&ub, NAN);
		goto out;
	}
	exact_add(&ub, offset);
	for (int i = 1; i <= m; i++) {
		y[i] = glp_get_row_dual(lp, i);
		if (glp_get_row_type(lp, i) != GLP_FX || !isfinite(y[i]))
			exact_add(&ub, NAN);
		exact_mul_add(&ub, y[i], glp_get_row_lb(lp, i));
	}
	for (int j = 1; j <= n && !isnan(ub.s); j++)
		column_term(lp, j, y, ind, val, &ub);
out:
	free(y);
	free(val);
	free(ind);
	return exact_bound(&ub, 1);
}
