/*
 * The tuples that hold each (attribute, value) of a dataset, built once
 * with it (dataset_builder_finish): a rule's matching tuples are found
 * among the shortest list of its terms' values rather than by a pass over
 * every tuple, for n(Qv) when a rule is read (knowledge.c) and for its
 * cells when its row is built (invariants.c): a rule costs its matches,
 * not the table.
 */
#include <stdlib.h>

#include "constraints.h"

void postings_finish(struct postings *o)
{
	if (!o)
		return;
	free(o->key0);
	free(o->key_off);
	free(o->with);
	o->key0 = o->key_off = NULL;
	o->with = NULL;
}

/* By counting: the lists of every key, then the tuples into them, so
 * each list ascends. */
enum pm_status postings_init(const struct dataset *ds, struct postings *o)
{
	size_t na = ds->n_attrs, nk, *fill;

	o->key0 = malloc((na + 1) * sizeof *o->key0);
	o->key_off = NULL;
	o->with = NULL;
	if (!o->key0)
		return PM_ERR_NOMEM;
	o->key0[0] = 0;
	for (size_t a = 0; a < na; a++)
		o->key0[a + 1] = o->key0[a] + ds->attr_values[a].n;
	nk = o->key0[na];
	o->key_off = calloc(nk + 2, sizeof *o->key_off);
	o->with = malloc((ds->n_tuples * na + 1) * sizeof *o->with);
	if (!o->key_off || !o->with)
		return PM_ERR_NOMEM;
	for (size_t q = 0; q < ds->n_tuples; q++)
		for (size_t a = 0; a < na; a++)
			o->key_off[o->key0[a] + ds->tuples[q * na + a] + 2]++;
	for (size_t k = 0; k < nk; k++)
		o->key_off[k + 2] += o->key_off[k + 1];
	fill = o->key_off + 1;
	for (size_t q = 0; q < ds->n_tuples; q++)
		for (size_t a = 0; a < na; a++)
			o->with[fill[o->key0[a] + ds->tuples[q * na + a]]++] = (uint32_t)q;
	return PM_OK;
}

const uint32_t *postings_candidates(const struct dataset *ds, const struct rule *r, size_t *lo,
				    size_t *hi)
{
	const struct postings *o = &ds->by_value;
	const uint32_t *list = NULL;

	*lo = 0;
	*hi = ds->n_tuples;
	for (uint32_t i = 0; o->with && i < r->n_terms; i++) {
		size_t k = o->key0[r->attr[i]] + r->value[i];

		if (!list || o->key_off[k + 1] - o->key_off[k] < *hi - *lo) {
			list = o->with;
			*lo = o->key_off[k];
			*hi = o->key_off[k + 1];
		}
	}
	return list;
}
