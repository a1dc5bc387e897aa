/* Small random bucketized tables for the randomized tests (seeded,
 * reproducible): splitmix64 and a records-form generator. */
#ifndef PMAXENT_TEST_RANDOM_TABLE_H
#define PMAXENT_TEST_RANDOM_TABLE_H

#include <stdint.h>
#include <stdio.h>

#include "constraints.h"

static __attribute__((unused)) uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15u);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

static __attribute__((unused)) size_t rng_in(uint64_t *s, size_t lo, size_t hi)
{
	return lo + (size_t)(rng_next(s) % (hi - lo + 1));
}

/* Ranges [lo, hi] of a random table's sizes. */
struct random_shape {
	size_t attrs[2], values[2], sa[2], records[2], bucket[2];
};

/* A records-form table of the given shape (at most 3 attributes of 4
 * values, 6 SA values), in consecutive buckets (one record more where a
 * lone one would be left). Caller frees with dataset_destroy. */
static __attribute__((unused)) struct dataset *random_dataset_shaped(uint64_t *rng,
								     const struct random_shape *sh)
{
	static const char *const attrs[] = {"a0", "a1", "a2"};
	static const char *const vals[] = {"v0", "v1", "v2", "v3"};
	static const char *const sas[] = {"s0", "s1", "s2", "s3", "s4", "s5"};
	size_t d = rng_in(rng, sh->attrs[0], sh->attrs[1]), nv[3];
	size_t ns = rng_in(rng, sh->sa[0], sh->sa[1]),
	       n = rng_in(rng, sh->records[0], sh->records[1]);
	size_t left = 0, g = 0;
	struct pm_error err = {0};
	struct dataset *ds = NULL;
	struct dataset_builder *b = dataset_builder_create(NULL, attrs, d, "sa", &err);
	if (!b)
		return NULL;
	for (size_t a = 0; a < d; a++)
		nv[a] = rng_in(rng, sh->values[0], sh->values[1]);
	for (size_t i = 0; i < n; i++) {
		const char *qi[3];
		char group[24];
		if (left == 0) {
			left = rng_in(rng, sh->bucket[0], sh->bucket[1]);
			left = left > n - i ? n - i : left;
			left += n - i - left == 1;
			g++;
		}
		left--;
		snprintf(group, sizeof(group), "g%zu", g);
		for (size_t a = 0; a < d; a++)
			qi[a] = vals[rng_in(rng, 0, nv[a] - 1)];
		if (dataset_builder_add_record(b, qi, group, sas[rng_in(rng, 0, ns - 1)], &err))
			goto out;
	}
	if (dataset_builder_finish(b, &ds, &err))
		fprintf(stderr, "random_dataset: %s: %s\n", err.field, err.message);
out:
	dataset_builder_destroy(b);
	return ds;
}

/* 2-3 QI attributes of 2-3 values, SA of 2-4 values, 8-40 records in
 * consecutive buckets of 2-5 (6 where a lone record would be left). */
static __attribute__((unused)) struct dataset *random_dataset(uint64_t *rng)
{
	static const struct random_shape small = {
	    .attrs = {2, 3}, .values = {2, 3}, .sa = {2, 4}, .records = {8, 40}, .bucket = {2, 5}};

	return random_dataset_shaped(rng, &small);
}

#endif
