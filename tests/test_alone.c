/*
 * alone.c: a bucket with forced zeros solved alone. On random g x h
 * buckets whose zeros leave a positive solution (counts taken from a
 * matrix that is positive off the zeros):
 *  - alone_solve agrees with matrix scaling as it is (scaling_bucket) to
 *    1e-10 records, keeps the zeros and meets the counts;
 *  - the same bucket with rows and columns permuted gets the permuted
 *    answer, bit for bit when distinct counts order its rows and columns
 *    (its shape is then found again, not solved again);
 *  - a bucket too large for a shape is scaled as it is;
 *  - zeros that peel (a line with one free cell) give whole numbers there.
 */
#include <stdint.h>

#include "alone.h"
#include "check.h"
#include "random_table.h"
#include "scaling.h"

#define SIDE 24

struct bucket {
	size_t g, h;
	uint32_t x[SIDE][SIDE]; /* records per cell, 0 on the zeros */
	uint8_t z[SIDE][SIDE];
};

/* Random counts 1..3 off random zeros, every line keeping a free cell;
 * with peel, the zeros are row 0 but its first cell (it peels, and a
 * block without zeros is left). */
static void random_bucket(uint64_t *rng, size_t g, size_t h, int peel, struct bucket *k)
{
	k->g = g;
	k->h = h;
	for (size_t i = 0; i < g; i++)
		for (size_t j = 0; j < h; j++) {
			k->z[i][j] = peel ? i == 0 && j > 0 : rng_in(rng, 0, 5) == 0;
			k->x[i][j] = k->z[i][j] ? 0 : (uint32_t)rng_in(rng, 1, 3);
		}
	for (size_t i = 0; i < g; i++)
		if (!k->x[i][i % h])
			k->z[i][i % h] = 0, k->x[i][i % h] = 1;
	for (size_t j = 0; j < h; j++)
		if (!k->x[j % g][j])
			k->z[j % g][j] = 0, k->x[j % g][j] = 1;
}

/* Records of bucket `group`: row i is tuple "<prefix>i", column j value
 * "sJJ", x records each. */
static void add_bucket(struct dataset_builder *b, const struct bucket *k, char prefix,
		       const char *group)
{
	struct pm_error err = {0};

	for (size_t i = 0; i < k->g; i++)
		for (size_t j = 0; j < k->h; j++)
			for (uint32_t n = 0; n < k->x[i][j]; n++) {
				char q[16], s[16];
				const char *qi[1] = {q};

				snprintf(q, sizeof q, "%c%02u", prefix, (unsigned)i);
				snprintf(s, sizeof s, "s%02u", (unsigned)j);
				CHECK(dataset_builder_add_record(b, qi, group, s, &err) == PM_OK);
			}
}

/* k with rows pi and columns sigma: row i of the result is row pi[i]. */
static void permute(const struct bucket *k, const size_t *pi, const size_t *sigma,
		    struct bucket *out)
{
	out->g = k->g;
	out->h = k->h;
	for (size_t i = 0; i < k->g; i++)
		for (size_t j = 0; j < k->h; j++) {
			out->x[i][j] = k->x[pi[i]][sigma[j]];
			out->z[i][j] = k->z[pi[i]][sigma[j]];
		}
}

static void shuffle(uint64_t *rng, size_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = i;
	for (size_t i = n; i > 1; i--) {
		size_t j = rng_in(rng, 0, i - 1), t = p[i - 1];

		p[i - 1] = p[j];
		p[j] = t;
	}
}

/* Do the rows (or columns) of k have distinct counts? */
static int distinct(const struct bucket *k, int rows)
{
	uint32_t sum[SIDE] = {0};
	size_t n = rows ? k->g : k->h;

	for (size_t i = 0; i < k->g; i++)
		for (size_t j = 0; j < k->h; j++)
			sum[rows ? i : j] += k->x[i][j];
	for (size_t a = 0; a < n; a++)
		for (size_t b = a + 1; b < n; b++)
			if (sum[a] == sum[b])
				return 0;
	return 1;
}

/* Bucket b of ds (laid out as k): alone_solve against scaling_bucket. */
static void check_bucket(const struct dataset *ds, const struct invariants *inv, size_t b,
			 const struct bucket *k, struct alone_work *w, double *y, double *ref)
{
	size_t off = inv->cell_off[b], g = k->g, h = k->h;
	uint8_t *zero = calloc(inv->n_cells + 1, 1);
	struct scaling_work sw;
	int bad = 0;

	for (size_t i = 0; i < g; i++)
		for (size_t j = 0; j < h; j++)
			zero[off + i * h + j] = k->z[i][j];
	CHECK(scaling_work_init(&sw, g, h) == PM_OK);
	CHECK(scaling_bucket(ds, inv, b, zero, ref, 1e-12, &sw) == PM_OK);
	CHECK(alone_solve(ds, inv, b, zero, y, w) == PM_OK);
	for (size_t i = 0; i < g; i++) {
		double rs = 0;

		for (size_t j = 0; j < h; j++) {
			size_t c = off + i * h + j;

			bad |= fabs(y[c] - ref[c]) > 1e-10 || (k->z[i][j] && y[c] != 0);
			rs += y[c];
		}
		bad |= fabs(rs - ds->bq_count[ds->bq_off[b] + i]) > 1e-10;
	}
	CHECK(!bad);
	scaling_work_finish(&sw);
	free(zero);
}

static void instance(uint64_t seed, int peel)
{
	uint64_t rng = seed;
	size_t g = rng_in(&rng, 2, 6), h = rng_in(&rng, 2, 6), pi[SIDE], sigma[SIDE];
	static const char *const attrs[] = {"a"};
	static struct bucket k, kp, big;
	struct pm_error err = {0};
	struct dataset_builder *db = dataset_builder_create(NULL, attrs, 1, "sa", &err);
	struct dataset *ds = NULL;
	struct invariants inv;
	struct alone_work *w = NULL;
	double *y, *ref;
	int bad = 0;

	random_bucket(&rng, g, h, peel, &k);
	shuffle(&rng, pi, g);
	shuffle(&rng, sigma, h);
	permute(&k, pi, sigma, &kp);
	random_bucket(&rng, 20, 3, 0, &big);
	add_bucket(db, &k, 'p', "g1");
	add_bucket(db, &kp, 'r', "g2");
	add_bucket(db, &big, 't', "g3");
	CHECK(dataset_builder_finish(db, &ds, &err) == PM_OK);
	dataset_builder_destroy(db);
	CHECK(invariants_build(ds, NULL, &inv, &err) == PM_OK);
	CHECK(alone_work_create(20, 6, &w) == PM_OK);
	y = calloc(inv.n_cells + 1, sizeof *y);
	ref = calloc(inv.n_cells + 1, sizeof *ref);
	check_bucket(ds, &inv, 0, &k, w, y, ref);
	check_bucket(ds, &inv, 1, &kp, w, y, ref);
	check_bucket(ds, &inv, 2, &big, w, y, ref);
	for (size_t i = 0; i < g; i++)
		for (size_t j = 0; j < h; j++) {
			double a = y[inv.cell_off[0] + pi[i] * h + sigma[j]];
			double b = y[inv.cell_off[1] + i * h + j];

			bad |=
			    (distinct(&k, 1) && distinct(&k, 0) && a != b) || fabs(a - b) > 1e-10;
		}
	for (size_t j = 1; j < h; j++)
		peel &= k.z[0][j];	       /* the column fix-up may have freed a cell */
	for (size_t j = 0; peel && j < h; j++) /* row 0: its count on its one cell */
		bad |= y[inv.cell_off[0] + j] != (j ? 0 : (double)k.x[0][0]);
	CHECK(!bad);
	free(y);
	free(ref);
	alone_work_destroy(w);
	invariants_finish(&inv);
	dataset_destroy(ds);
}

int main(void)
{
	alone_work_destroy(NULL);
	for (uint64_t seed = 1; seed <= 300; seed++)
		instance(0xa1000000 + seed, (int)(seed % 3 == 0));
	return check_done();
}
