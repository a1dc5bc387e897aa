/* newton_minimize in a workspace of its own, for the newton tests. */
#ifndef PMAXENT_TEST_NEWTON_MINIMIZE_H
#define PMAXENT_TEST_NEWTON_MINIMIZE_H

#include "check.h"
#include "maxent.h"
#include "newton.h"

static __attribute__((unused)) enum pm_status minimize(const struct newton_problem *p,
						       const struct solver_options *o,
						       double target, double *x,
						       struct maxent_stats *st, int *stalled)
{
	struct newton *nw;
	enum pm_status ret;

	CHECK(newton_create(p, &nw) == PM_OK);
	ret = newton_minimize(nw, o->max_iterations, target, x, st, stalled);
	newton_destroy(nw);
	return ret;
}

#endif
