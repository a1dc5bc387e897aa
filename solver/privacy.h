/*
 * privacy: SPEC 4.1's verdict on tables of distributions P(s | q)
 * (privacy.c) and the tuples most at risk (privacy_top.c), as solver_run
 * computes them; the options, the report and the no-knowledge table are
 * public (solver.h). Internal to solver/.
 */
#ifndef PMAXENT_PRIVACY_H
#define PMAXENT_PRIVACY_H

#include "solver.h"

/* ---- privacy.c ---------------------------------------------------------- */

/* The metrics of the distributions p[off[q] .. off[q + 1]) over the
 * values sa[..] of each tuple q of ds into *out. */
enum pm_status privacy_compute(const struct dataset *ds, const size_t *off, const uint32_t *sa,
			       const double *p, const struct privacy_options *o,
			       struct privacy_report *out);

/* r->privacy from r's posterior, the closed form and the records. */
struct invariants;
enum pm_status privacy_all(const struct dataset *ds, const struct invariants *inv,
			   const struct privacy_options *o, struct solver_result *r);

/* ---- privacy_top.c ------------------------------------------------------ */

/* r->top and r->n_top from r's posterior and ds's closed form
 * (privacy_top.c). */
enum pm_status privacy_top_list(const struct dataset *ds, struct solver_result *r);

#endif
