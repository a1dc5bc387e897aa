/*
 * components: the coupled buckets split into connected components, each
 * its own two-level problem (components.c). Internal to solver/.
 */
#ifndef PMAXENT_COMPONENTS_H
#define PMAXENT_COMPONENTS_H

#include "solver.h"

struct maxent_stats;
struct parallel;
struct solver_probe;

/* ---- components.c ------------------------------------------------------- */

/*
 * The two-level dual: Newton over one multiplier per open knowledge row
 * (not implied[]), each bucket with coupled[b] set solved exactly by
 * matrix scaling for the current multipliers. Writes the estimate of the
 * coupled buckets' cells into y. With probe (may be NULL) the solve is a
 * probe for forced zeros (struct solver_probe gets what it leaves), and
 * stops early (not converged) when it converges only linearly or stalls,
 * the signs of a multiplier running off to infinity.
 * Each connected component of the coupled buckets (components.c) is its
 * own problem; they run on the pool's threads (pool may be NULL), and o's
 * progress callback is called from them, one at a time. iterations are
 * the most any component took.
 */
enum pm_status twolevel_solve(const struct dataset *ds, const struct invariants *inv,
			      const uint8_t *zero, const uint8_t *implied, const uint8_t *coupled,
			      const struct solver_options *o, struct parallel *pool, double *y,
			      const struct solver_probe *probe, struct maxent_stats *st,
			      struct pm_error *err);

#endif
