/*
 * GLPK's simplex for the linear programs of boundary.c: the zero finder of
 * a component and the feasibility tests of conflict_report.
 */
#include <glpk.h>
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

/*
 * GLPK's simplex has no callback, so it runs in slices of LP_SLICE_MS and
 * resumes from its current basis; between slices a cancel is honoured.
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
	if (ret != 0)
		return -1;
	switch (glp_get_status(lp)) {
	case GLP_OPT:
	case GLP_FEAS:
		return 1;
	case GLP_NOFEAS:
		return 0;
	}
	return -1;
}
