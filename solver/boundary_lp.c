/*
 * GLPK's simplex for the linear programs of boundary.c: the zero finder of
 * a component and the feasibility tests of conflict_report.
 */
#include <glpk.h>
#include <limits.h>
#include <math.h>

#include "solver_internal.h"

/* Longest stretch of simplex work between two cancel checks. */
#define LP_SLICE_MS 200
/* Iteration budget of a program: LP_ITER_BASE + LP_ITER_PER (rows + cols). */
#define LP_ITER_BASE 10000
#define LP_ITER_PER  20

/* Has the caller asked to stop? (the progress callback, with no
 * iteration to report yet) */
static int cancelled(const struct solver_options *o)
{
	return o && o->progress && o->progress(o->progress_ctx, 0, NAN);
}

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

/* Simplex iterations lp may take, in either arithmetic: far more than the
 * simplex needs (a few times the rows), so only a cycling one runs out. */
int lp_iteration_budget(struct glp_prob *lp)
{
	double n = LP_ITER_BASE +
		   LP_ITER_PER * ((double)glp_get_num_rows(lp) + (double)glp_get_num_cols(lp));

	return n < INT_MAX ? (int)n : INT_MAX;
}

/* The floating-point simplex from lp's basis, in slices, within *left
 * iterations (those it takes are taken off): GLPK's return code, or -2
 * when cancelled. */
static int float_slices(struct glp_prob *lp, const struct solver_options *o, int *left)
{
	glp_smcp p;
	int ret;

	glp_init_smcp(&p);
	p.msg_lev = GLP_MSG_OFF;
	p.presolve = GLP_OFF; /* the presolver cannot hand back a partial basis */
	p.tm_lim = LP_SLICE_MS;
	do {
		int it0 = glp_get_it_cnt(lp);

		if (*left <= 0)
			return GLP_EITLIM;
		p.it_lim = *left;
		ret = glp_simplex(lp, &p);
		*left -= glp_get_it_cnt(lp) - it0;
	} while (ret == GLP_ETMLIM && !cancelled(o));
	return ret == GLP_ETMLIM ? -2 : ret;
}

/*
 * GLPK's exact (rational) simplex from lp's basis, or the standard basis
 * when that one is singular, within the iteration budget. Each resume
 * factorizes the basis again in rational arithmetic, which may take longer
 * than a slice: the slices double, so that every one gets further than
 * the last.
 */
static int exact_solve(struct glp_prob *lp, const struct solver_options *o)
{
	glp_smcp p;
	int ret, left = lp_iteration_budget(lp), restarted = 0;

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
		if (cancelled(o))
			return -2;
		p.tm_lim = p.tm_lim < INT_MAX / 2 ? 2 * p.tm_lim : INT_MAX;
	}
	return ret ? -1 : lp_status(lp);
}

/*
 * GLPK's simplex has no callback, so it runs in slices of LP_SLICE_MS and
 * resumes from its current basis; between slices a cancel is honoured.
 * When the floating-point simplex fails, ends "unbounded" (rows of 5e-8
 * records: the zero finder of a consistent component) or runs out of
 * iterations (it cycled for ever on rows x = t and x = 0.9999999 t,
 * "numerical instability" after every refactorization), the exact
 * simplex takes over from the basis it reached; if that too runs out, the
 * solve fails rather than hangs.
 */
int lp_solve(struct glp_prob *lp, const struct solver_options *o)
{
	int left = lp_iteration_budget(lp), ret;

	glp_adv_basis(lp, 0);
	ret = float_slices(lp, o, &left);
	if (ret != 0 && ret != -2 && ret != GLP_EITLIM) {
		glp_std_basis(lp); /* singular or ill-conditioned start: retry */
		ret = float_slices(lp, o, &left);
	}
	if (ret == -2)
		return -2;
	if (ret == 0 && lp_status(lp) >= 0)
		return lp_status(lp);
	return exact_solve(lp, o);
}
