/*
 * metrics: what the estimate y says (metrics.c): the closed form of
 * Theorem 5, the posterior, the entropy, the accuracies and the
 * violation of the rows. Internal to solver/.
 */
#ifndef PMAXENT_METRICS_H
#define PMAXENT_METRICS_H

#include "solver.h"

/* ---- metrics.c ---------------------------------------------------------- */

/* Closed form of Theorem 5 for bucket b: y = n(q,b) n(s,b) / n(b). */
void metrics_closed_form(const struct dataset *ds, const struct invariants *inv, size_t b,
			 double *y);
/* The same into bucket b's cells alone, y[i h + j] (h SA values). */
void metrics_closed_cells(const struct dataset *ds, size_t b, double *y);
/* max over rows of |A y - c|, records, into *out; inv built from ds. */
enum pm_status metrics_max_violation(const struct dataset *ds, const struct invariants *inv,
				     const double *y, double *out);

#endif
