/*
 * components: the coupled buckets split into connected components, each
 * its own two-level problem (components.c). Internal to solver/.
 */
#ifndef PMAXENT_COMPONENTS_H
#define PMAXENT_COMPONENTS_H

#include "cancel.h"
#include "solver.h"

struct maxent_stats;
struct parallel;
struct solver_probe;

/* ---- components.c ------------------------------------------------------- */

/* Connected components of buckets linked by knowledge rows: component i
 * has the buckets bucket[b_off[i] .. b_off[i + 1]) and the rows
 * row[r_off[i] .. r_off[i + 1]), both ascending; pos[b] is bucket b's
 * place in its component's list (n_groups entries, set for its buckets). */
struct components {
	size_t n;
	size_t *b_off, *r_off;
	uint32_t *bucket, *row, *pos;
};

/* The components of the buckets with bucket_in[b] set, linked by the
 * knowledge rows through them, except empty rows and those with
 * row_out[r] set (row_out may be NULL); a bucket such a row passes through
 * joins. With whole, all of it as one component (n = 1). Free with
 * components_finish, also after a failure. */
enum pm_status components_build(const struct invariants *inv, const uint8_t *bucket_in,
				const uint8_t *row_out, int whole, struct components *cs);
void components_finish(struct components *cs);

/*
 * The two-level dual: Newton over one multiplier per open knowledge row
 * (not implied[]), each bucket with coupled[b] set solved exactly by
 * matrix scaling for the current multipliers. Writes the estimate of the
 * coupled buckets' cells into y. With probe (may be NULL) the solve is a
 * probe for forced zeros (struct solver_probe gets what it leaves), and
 * stops early (not converged) when it converges only linearly or stalls,
 * the signs of a multiplier running off to infinity.
 * Each connected component of the coupled buckets (components.c) is its
 * own problem; they run on the pool's threads (pool may be NULL) and
 * poll the one token cancel (may be NULL). iterations are the most any
 * component took.
 */
enum pm_status components_solve(const struct dataset *ds, const struct invariants *inv,
				const uint8_t *zero, const uint8_t *implied, const uint8_t *coupled,
				const struct solver_options *o, struct cancel *cancel,
				struct parallel *pool, double *y, const struct solver_probe *probe,
				struct maxent_stats *st, struct pm_error *err);

#endif
