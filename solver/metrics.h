/*
 * metrics: what the estimate y says (metrics.c): the closed form of
 * Theorem 5, the posterior, the entropy, the accuracies and the
 * violation of the rows. Internal to solver/.
 */
#ifndef PMAXENT_METRICS_H
#define PMAXENT_METRICS_H

#include "solver.h"

struct parallel;

/* ---- metrics.c ---------------------------------------------------------- */

/* Closed form of Theorem 5 for bucket b: y = n(q,b) n(s,b) / n(b). */
void metrics_closed_form(const struct dataset *ds, const struct invariants *inv, size_t b,
			 double *y);
/* The same into bucket b's cells alone, y[i h + j] (h SA values). */
void metrics_closed_cells(const struct dataset *ds, size_t b, double *y);
/* max over rows of |A y - c|, records, into *out; inv built from ds. */
enum pm_status metrics_max_violation(const struct dataset *ds, const struct invariants *inv,
				     const double *y, double *out);

/*
 * Fills posterior, entropy, accuracies and max_violation of r from
 * r->cells, on the pool (may be NULL); the numbers do not depend on its
 * size. closed (n_groups entries, may be NULL) marks the buckets whose
 * cells are the closed form of Theorem 5 (metrics_closed_bucket): their
 * entropy comes from their marginals, and closed_violation is the largest
 * violation over their rows.
 */
enum pm_status metrics_compute(const struct dataset *ds, const struct invariants *inv,
			       const uint8_t *closed, double closed_violation,
			       struct parallel *pool, struct solver_result *r,
			       struct pm_error *err);
/* With an interval rule among k's (else nothing), r->achieved and
 * r->binding from r->cells (struct solver_result), owned by r. */
enum pm_status metrics_achieved(const struct knowledge *k, const struct invariants *inv,
				double tolerance, struct solver_result *r);
/* The last closed form metrics_closed_bucket computed (g == 0: none), to
 * copy when the next bucket has the same counts in the same order, as most
 * buckets of an Anatomy table do (l records, one per tuple and value). */
#define CLOSED_MEMO 64
struct closed_memo {
	uint32_t g, h, nb, count[CLOSED_MEMO]; /* nb = n(b); n(q,b) then n(s,b) */
	double y[CLOSED_MEMO], violation;
};
/* metrics_closed_form, and *violation, the largest |A y - c| over the
 * bucket's QI and SA rows, while its cells are at hand; memo (may be
 * NULL) is one thread's. */
void metrics_closed_bucket(const struct dataset *ds, const struct invariants *inv, size_t b,
			   double *y, struct closed_memo *memo, double *violation);

#endif
