/* Random instances of the two-level problem for the solver's tests: a
 * small table, mined knowledge, its system, the exact forced zeros and
 * implied rows, and the coupled buckets. */
#ifndef PMAXENT_TEST_INSTANCE_H
#define PMAXENT_TEST_INSTANCE_H

#include <stdlib.h>
#include <string.h>

#include "random_table.h"
#include "zeros.h"

/* 3 QI attributes of 2-4 values, SA of 3-6 values, 60-400 records in
 * buckets of 2-6. */
static struct dataset *table(uint64_t *rng)
{
	static const struct random_shape shape = {.attrs = {3, 3},
						  .values = {2, 4},
						  .sa = {3, 6},
						  .records = {60, 400},
						  .bucket = {2, 6}};

	return random_dataset_shaped(rng, &shape);
}

/* One instance: the table, its knowledge and system, the exact zeros and
 * implied rows, and the coupled buckets. */
struct instance {
	struct dataset *ds;
	struct knowledge k;
	struct invariants inv;
	uint8_t *zero, *implied, *coupled;
	double *y;
};

/* Ranges of the knowledge: rules of each kind, QI attributes per rule;
 * the mined rules' vagueness (0: equalities). */
struct instance_knobs {
	size_t rules[2], qi[2];
	double vagueness;
};

/* The complete forced zeros (ZEROS_EXACT) and implied rows, into in. */
static int instance_zeros(struct instance *in, struct pm_error *err)
{
	struct zeros z;
	int ok = zeros_init(&z, in->ds, &in->k, &in->inv) == PM_OK &&
		 zeros_deepen(&z, ZEROS_EXACT, NULL, NULL, err) == PM_OK;

	if (ok) {
		memcpy(in->zero, z.zero, in->inv.n_cells);
		memcpy(in->implied, z.implied, in->inv.n_rows);
	}
	zeros_finish(&z);
	return ok;
}

static int instance_make_k(struct instance *in, uint64_t *rng, const struct instance_knobs *kn)
{
	struct miner_options mo;
	struct pm_error err = {0};

	memset(in, 0, sizeof *in);
	knowledge_init(&in->k);
	in->ds = table(rng);
	if (!in->ds)
		return 0;
	miner_options_init(&mo);
	mo.positive = rng_in(rng, kn->rules[0], kn->rules[1]);
	mo.negative = rng_in(rng, kn->rules[0], kn->rules[1]);
	mo.qi_attributes = rng_in(rng, kn->qi[0], kn->qi[1]);
	mo.vagueness = kn->vagueness;
	if (miner_run(in->ds, &mo, &in->k, &err))
		return 0;
	/* every other table repeats a few rules: rows equal to others, so H
	 * is singular along their differences (null pivots in its L D L^T) */
	for (size_t d = rng_in(rng, 0, 1) * 3; d > 0 && in->k.n > 0; d--) {
		struct rule r = in->k.rules[rng_in(rng, 0, in->k.n - 1)];

		if (knowledge_append(&in->k, &r, &err))
			return 0;
	}
	if (invariants_build(in->ds, &in->k, &in->inv, &err))
		return 0;
	in->zero = calloc(in->inv.n_cells + 1, 1);
	in->implied = calloc(in->inv.n_rows + 1, 1);
	in->coupled = calloc(in->inv.n_groups + 1, 1);
	in->y = calloc(in->inv.n_cells + 1, sizeof *in->y);
	if (!in->zero || !in->implied || !in->coupled || !in->y || !instance_zeros(in, &err))
		return 0;
	for (size_t c = 0; c < in->inv.n_cells; c++) {
		size_t n;
		const uint32_t *rows = invariants_cell_rows(&in->inv, c, &n);

		for (size_t e = 0; e < n; e++)
			in->coupled[in->inv.cell_group[c]] |= !in->implied[rows[e]];
	}
	return 1;
}

/* 5 to 40 rules of each kind, on 1 or 2 QI attributes. */
static __attribute__((unused)) int instance_make(struct instance *in, uint64_t *rng)
{
	static const struct instance_knobs kn = {{5, 40}, {1, 2}, 0};

	return instance_make_k(in, rng, &kn);
}

static __attribute__((unused)) void instance_free(struct instance *in)
{
	free(in->zero);
	free(in->implied);
	free(in->coupled);
	free(in->y);
	invariants_finish(&in->inv);
	knowledge_finish(&in->k);
	dataset_destroy(in->ds);
}

#endif
