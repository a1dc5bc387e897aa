/*
 * What the solver's tests (test_solver.c, test_solver_time_limit.c)
 * solve: the paper's Figure 1 read from tests/data, rules on it, a
 * bigger table in buckets of 5, and the top single-attribute rules mined
 * from a table with their invariants.
 *
 * Everything is static (and may go unused) so that each test includes it
 * on its own.
 */
#ifndef PMAXENT_TEST_SOLVER_INPUTS_H
#define PMAXENT_TEST_SOLVER_INPUTS_H

#include <stdint.h>

#include "check.h"
#include "solver.h"

#define SOLVER_INPUTS_FN static __attribute__((unused))

SOLVER_INPUTS_FN struct dataset *load_csv(const char *name)
{
	char path[512];
	static char text[1 << 16];
	struct csv_table t = {0};
	struct pm_error err = {0};
	struct dataset *ds = NULL;
	const char *dir = getenv("PMAXENT_TEST_DATA");
	FILE *f;
	size_t n;

	snprintf(path, sizeof path, "%s/%s", dir ? dir : "tests/data", name);
	f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "cannot open %s\n", path);
		exit(1);
	}
	n = fread(text, 1, sizeof text, f);
	fclose(f);
	CHECK(csv_parse(text, n, &t, &err) == PM_OK);
	CHECK(csv_dataset(&t, "disease", "group", name, &ds, &err) == PM_OK);
	csv_table_finish(&t);
	return ds;
}

/* A rule "P(then | a1=v1 [, a2=v2]) = p"; a2 may be NULL. */
SOLVER_INPUTS_FN void add_rule(struct knowledge *k, const struct dataset *ds, const char *a1,
			       const char *v1, const char *a2, const char *v2, const char *then,
			       double p)
{
	const char *attrs[2] = {a1, a2}, *vals[2] = {v1, v2};
	struct pm_error err = {0};

	CHECK(knowledge_add_user(k, ds, attrs, vals, a2 ? 2 : 1, then, 1, p, 0, 0, 0, 0, "rules",
				 &err) == PM_OK);
}

/* A table of n records in buckets of 5, SA depending on the QI values, so
 * that mined single-attribute rules are mostly probabilistic. */
SOLVER_INPUTS_FN struct dataset *bigger_table(size_t n, uint64_t seed)
{
	static const char *const attrs[] = {"a", "b", "c"};
	static const char *const vals[] = {"v0", "v1", "v2", "v3", "v4"};
	static const char *const sas[] = {"s0", "s1", "s2", "s3", "s4", "s5", "s6"};
	struct pm_error err = {0};
	struct dataset *ds = NULL;
	struct dataset_builder *b = dataset_builder_create("bigger", attrs, 3, "sa", &err);
	uint64_t x = seed;

	for (size_t i = 0; b && i < n; i++) {
		size_t q[3], s;
		const char *qi[3];
		char group[32];

		for (int a = 0; a < 3; a++) {
			x = x * 6364136223846793005u + 1442695040888963407u;
			q[a] = (size_t)(x >> 33) % (size_t)(3 + a);
			qi[a] = vals[q[a]];
		}
		x = x * 6364136223846793005u + 1442695040888963407u;
		s = ((x >> 33) % 4 == 0) ? (size_t)(x >> 40) % 7 : (q[0] + 2 * q[1] + q[2]) % 7;
		snprintf(group, sizeof group, "g%zu", i / 5);
		CHECK(dataset_builder_add_record(b, qi, group, sas[s], &err) == PM_OK);
	}
	CHECK(b && dataset_builder_finish(b, &ds, &err) == PM_OK);
	dataset_builder_destroy(b);
	return ds;
}

/* Top-n positive and negative single-attribute rules of ds into k, and
 * the invariants they make. */
SOLVER_INPUTS_FN void mine_single(const struct dataset *ds, size_t n, struct knowledge *k,
				  struct invariants *inv)
{
	struct miner_options mo;
	struct pm_error err = {0};

	knowledge_init(k);
	miner_options_init(&mo);
	mo.positive = mo.negative = n;
	mo.qi_attributes = 1;
	CHECK(miner_run(ds, &mo, k, &err) == PM_OK);
	CHECK(invariants_build(ds, k, inv, &err) == PM_OK);
}

#endif
