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

/*
 * GLPK's exact (rational) simplex from lp's basis, or the standard basis
 * when that one is singular. Each resume factorizes the basis again in
 * rational arithmetic, which may take longer than a slice: the slices
 * double, so that every one gets further than the last.
 */
static int exact_solve(struct glp_prob *lp, const struct solver_options *o)
{
	glp_smcp p;
	int ret;

	glp_init_smcp(&p);
	p.msg_lev = GLP_MSG_OFF;
	p.tm_lim = LP_SLICE_MS;
	ret = glp_exact(lp, &p);
	if (ret == GLP_EBADB || ret == GLP_ESING) {
		glp_std_basis(lp);
		ret = glp_exact(lp, &p);
	}
	while (ret == GLP_ETMLIM) {
		if (cancelled(o))
			return -2;
		p.tm_lim = p.tm_lim < INT_MAX / 2 ? 2 * p.tm_lim : INT_MAX;
		ret = glp_exact(lp, &p);
	}
	return ret ? -1 : lp_status(lp);
}

/*
 * GLPK's simplex has no callback, so it runs in slices of LP_SLICE_MS and
 * resumes from its current basis; between slices a cancel is honoured.
 * When the floating-point simplex fails, or ends "unbounded" (rows of
 * 5e-8 records: the zero finder of a consistent component), the exact
 * simplex takes over from the basis it reached.
 */
int lp_solve(struct glp_prob *lp, const struct solver_options *o)
{
	glp_smcp p;
	int ret;

	glp_init_smcp(&p);
	p.msg_lev = GLP_MSG_OFF;
	p.presolve = GLP_OFF; /* the presolver cannot hand back a partial basis */
	p.tm_lim = LP_SLICE_MS;
	glp_adv_basis(lp, 0);
	while ((ret = glp_simplex(lp, &p)) == GLP_ETMLIM)
		if (cancelled(o))
			return -2;
	if (ret != 0) {
		glp_std_basis(lp); /* singular or ill-conditioned start: retry */
		while ((ret = glp_simplex(lp, &p)) == GLP_ETMLIM)
			if (cancelled(o))
				return -2;
	}
	if (ret == 0 && lp_status(lp) >= 0)
		return lp_status(lp);
	return exact_solve(lp, o);
}
