/*
 * The tuples most at risk (privacy.top, for the report): the PRIVACY_TOP
 * tuples of the largest P*(s|q), each with its top value, its effective
 * l and the no-knowledge estimate of that value, ranked as
 * GET /v1/analyses/{id}/risk ranks all of them: P* descending, then the
 * tuple's records, then the tuple's order.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "privacy.h"

/* Does a rank before b? */
static int before(const struct dataset *ds, const struct privacy_top *a,
		  const struct privacy_top *b)
{
	if (a->p != b->p)
		return a->p > b->p;
	if (ds->tuple_count[a->q] != ds->tuple_count[b->q])
		return ds->tuple_count[a->q] > ds->tuple_count[b->q];
	return a->q < b->q;
}

/* Tuple q's entry: its first largest P*, exp(H), and P0 of that value
 * from the baseline table b. */
static struct privacy_top entry(const struct solver_result *r, const struct privacy_table *b,
				uint32_t q)
{
	struct privacy_top t = {.q = q, .l = 0};
	double h = 0;

	for (size_t e = r->post_off[q]; e < r->post_off[q + 1]; e++) {
		double p = r->post_p[e];

		if (p > t.p) {
			t.p = p;
			t.s = r->post_sa[e];
		}
		h -= p > 0 ? p * log(p) : 0;
	}
	t.p = fmin(t.p, 1);
	t.l = fmax(1, exp(h)); /* exp(H) >= 1; a P* of 1 + 2e-16 rounds below */
	for (size_t e = b->off[q]; e < b->off[q + 1]; e++)
		if (b->sa[e] == t.s)
			t.baseline_p = b->p[e];
	return t;
}

enum pm_status privacy_top_list(const struct dataset *ds, struct solver_result *r)
{
	struct privacy_table b = {0};
	enum pm_status st = privacy_baseline(ds, &b);

	r->n_top = 0;
	for (uint32_t q = 0; !st && q < ds->n_tuples; q++) {
		struct privacy_top t = entry(r, &b, q);
		size_t at = r->n_top < PRIVACY_TOP ? r->n_top++ : PRIVACY_TOP;

		if (at == PRIVACY_TOP && !before(ds, &t, &r->top[PRIVACY_TOP - 1]))
			continue;
		at = at == PRIVACY_TOP ? PRIVACY_TOP - 1 : at;
		while (at > 0 && before(ds, &t, &r->top[at - 1])) { /* insertion, ranked */
			r->top[at] = r->top[at - 1];
			at--;
		}
		r->top[at] = t;
	}
	privacy_table_finish(&b);
	return st;
}
