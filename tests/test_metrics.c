/*
 * metrics.c on tables large enough for several chunks of tuples and
 * buckets (skewed QI values, so that some tuples lie in many buckets; a
 * few buckets wider than CLOSED_WIDTH values; then buckets of 2, whose
 * tuples have more records of a value than any bucket has), with mined
 * knowledge solved by solver_run:
 *  - posterior, accuracies, entropy and max_violation against their
 *    definitions computed cell by cell here;
 *  - the closed-form entropy of untouched buckets (from their marginals)
 *    against the per-cell sum, and metrics_closed_bucket (with and
 *    without its memo) against metrics_closed_form and the violation;
 *  - 1 thread and 4 threads give the same numbers, bit for bit;
 *  - the memo on a table of buckets that agree in shape but not in
 *    counts (memo_cases).
 */
#include <stdint.h>

#include "check.h"
#include "metrics.h"
#include "parallel.h"
#include "random_table.h"

/* n records over QI (a, b) with a skewed toward small values, SA of
 * 3..40 values, buckets of `width` with now and then one of `wide`. */
static struct dataset *skewed_table(uint64_t *rng, size_t n, size_t width, size_t wide)
{
	static const char *const attrs[] = {"a", "b"};
	size_t ns = rng_in(rng, 3, 40), left = 0, g = 0;
	struct pm_error err = {0};
	struct dataset *ds = NULL;
	struct dataset_builder *b = dataset_builder_create(NULL, attrs, 2, "sa", &err);

	for (size_t i = 0; b && i < n; i++) {
		char va[16], vb[16], sa[16], group[16];
		const char *qi[2] = {va, vb};
		double u = (double)rng_in(rng, 0, 1000) / 1001;

		if (left == 0) {
			left = rng_in(rng, 0, 40) ? width : wide;
			g++;
		}
		left--;
		snprintf(va, sizeof va, "a%d", (int)(u * u * 100));
		snprintf(vb, sizeof vb, "b%zu", rng_in(rng, 0, 19));
		snprintf(sa, sizeof sa, "s%zu", rng_in(rng, 0, ns - 1));
		snprintf(group, sizeof group, "g%zu", g);
		if (dataset_builder_add_record(b, qi, group, sa, &err))
			break;
	}
	if (b && dataset_builder_finish(b, &ds, &err))
		fprintf(stderr, "skewed_table: %s\n", err.message);
	dataset_builder_destroy(b);
	return ds;
}

static double rel(double a, double b)
{
	return a == b ? 0 : fabs(a - b) / fmax(fabs(a), fabs(b));
}

/* The posterior of r against sum_b y[q,s,b] / n(q), cell by cell. */
static void check_posterior(const struct dataset *ds, const struct invariants *inv,
			    const struct solver_result *r)
{
	size_t ns = ds->sa_values.n;
	double *acc = malloc(ns * sizeof *acc);
	int bad = 0;

	for (uint32_t q = 0; q < ds->n_tuples; q++) {
		size_t e = r->post_off[q];

		for (size_t s = 0; s < ns; s++)
			acc[s] = 0;
		for (size_t c = 0; c < inv->n_cells; c++)
			if (inv->cell_tuple[c] == q)
				acc[inv->cell_sa[c]] += r->cells[c];
		for (uint32_t s = 0; s < ns; s++) {
			if (!(acc[s] > 0))
				continue;
			bad |= e >= r->post_off[q + 1] || r->post_sa[e] != s ||
			       r->post_p[e] != acc[s] / ds->tuple_count[q];
			e++;
		}
		bad |= e != r->post_off[q + 1];
	}
	CHECK(!bad);
	free(acc);
}

/* The weighted KL distance of the records from P*(s|q) = est[q * ns + s]. */
static double kl(const struct dataset *ds, const double *est)
{
	size_t ns = ds->sa_values.n;
	double *cnt = calloc(ds->n_tuples * ns, sizeof *cnt), sum = 0;

	for (size_t i = 0; i < ds->n_records; i++)
		cnt[ds->rec_tuple[i] * ns + ds->rec_sa[i]]++;
	for (size_t q = 0; q < ds->n_tuples; q++)
		for (size_t s = 0; s < ns; s++) {
			double c = cnt[q * ns + s], nq = ds->tuple_count[q];

			if (c)
				sum += c / ds->n_records * log((c / nq) / (est[q * ns + s] / nq));
		}
	free(cnt);
	return sum;
}

/* Accuracies, entropy and max_violation of r against their definitions. */
static void check_numbers(const struct dataset *ds, const struct invariants *inv,
			  const struct solver_result *r)
{
	size_t ns = ds->sa_values.n;
	double *est = calloc(ds->n_tuples * ns, sizeof *est);
	double *base = calloc(ds->n_tuples * ns, sizeof *base), h = 0, v;

	for (size_t b = 0; b < ds->n_groups; b++)
		for (size_t i = ds->bq_off[b]; i < ds->bq_off[b + 1]; i++)
			for (size_t j = ds->bs_off[b]; j < ds->bs_off[b + 1]; j++)
				base[ds->bq_tuple[i] * ns + ds->bs_value[j]] +=
				    (double)ds->bq_count[i] * ds->bs_count[j] / ds->group_size[b];
	for (size_t c = 0; c < inv->n_cells; c++) {
		double x = r->cells[c] / ds->n_records;

		est[inv->cell_tuple[c] * ns + inv->cell_sa[c]] += r->cells[c];
		h -= x > 0 ? x * log(x) : 0;
	}
	CHECK(!r->estimation_infinite && !r->baseline_infinite);
	CHECK(rel(r->estimation_accuracy, kl(ds, est)) < 1e-12);
	CHECK(rel(r->baseline_accuracy, kl(ds, base)) < 1e-12);
	CHECK(rel(r->entropy, h) < 1e-12);
	CHECK(metrics_max_violation(ds, inv, r->cells, &v) == PM_OK);
	CHECK(r->max_violation == v);
	free(est);
	free(base);
}

/* The cells of the untouched buckets are the closed form: closed[] and
 * their largest violation, through metrics_closed_bucket. */
static double closed_buckets(const struct dataset *ds, const struct invariants *inv,
			     const double *y, uint8_t *closed)
{
	double *cf = malloc((inv->n_cells + 1) * sizeof *cf),
	       *cb = malloc((inv->n_cells + 1) * sizeof *cb);
	double worst = 0;
	int bad = 0;
	static struct closed_memo memo;

	memo.g = 0;
	for (size_t b = 0; b < ds->n_groups; b++) {
		double v, v0;

		closed[b] = !invariants_touched(inv, b);
		metrics_closed_form(ds, inv, b, cf);
		metrics_closed_bucket(ds, inv, b, cb, NULL, &v0);
		bad |= memcmp(cf + inv->cell_off[b], cb + inv->cell_off[b],
			      (inv->cell_off[b + 1] - inv->cell_off[b]) * sizeof *cf);
		/* from the memo of the previous bucket when the counts agree */
		metrics_closed_bucket(ds, inv, b, cb, &memo, &v);
		bad |= v != v0;
		for (size_t c = inv->cell_off[b]; c < inv->cell_off[b + 1]; c++)
			bad |= cf[c] != cb[c] || (closed[b] && y[c] != cf[c]);
		if (closed[b])
			worst = fmax(worst, v);
	}
	CHECK(!bad);
	free(cf);
	free(cb);
	return worst;
}

static int same_result(const struct solver_result *a, const struct solver_result *b, size_t nq)
{
	size_t n = a->post_off[nq];

	return a->entropy == b->entropy && a->estimation_accuracy == b->estimation_accuracy &&
	       a->baseline_accuracy == b->baseline_accuracy &&
	       a->max_violation == b->max_violation && b->post_off[nq] == n &&
	       !memcmp(a->post_off, b->post_off, (nq + 1) * sizeof *a->post_off) &&
	       !memcmp(a->post_sa, b->post_sa, n * sizeof *a->post_sa) &&
	       !memcmp(a->post_p, b->post_p, n * sizeof *a->post_p);
}

/* metrics_compute on the cells y into a fresh result. */
static void recompute(const struct dataset *ds, const struct invariants *inv, const uint8_t *closed,
		      double cv, struct parallel *pool, const double *y, struct solver_result *out)
{
	struct pm_error err = {0};

	memset(out, 0, sizeof *out);
	out->cells = malloc((inv->n_cells + 1) * sizeof *out->cells);
	memcpy(out->cells, y, inv->n_cells * sizeof *out->cells);
	CHECK(metrics_compute(ds, inv, closed, cv, pool, out, &err) == PM_OK);
}

/* A cell of a one-bucket tuple's slot with records set to v (its slot
 * sum is v): returns the cell, or n_cells if no tuple has one. */
static size_t set_record_cell(const struct dataset *ds, const struct invariants *inv, double *y,
			      double v)
{
	for (size_t q = 0; q < ds->n_tuples; q++) {
		size_t o = inv->occ_off[q], e = inv->rec_off[q];

		if (inv->occ_off[q + 1] - o != 1 || e == inv->rec_off[q + 1])
			continue;
		/* one bucket: its row's cells are the slots, in order */
		y[inv->occ_cell[o] + inv->rec_slot[e] - inv->slot_off[q]] = v;
		return inv->occ_cell[o] + inv->rec_slot[e] - inv->slot_off[q];
	}
	return inv->n_cells;
}

/* A sum too small for the accuracy's products (1e-300: times most of
 * their values it underflows) is taken by its logarithm; a zero sum under
 * records makes the estimate, not the baseline, infinite. */
static void tiny_sums(const struct dataset *ds, const struct invariants *inv,
		      const struct solver_result *r)
{
	double *y = malloc((inv->n_cells + 1) * sizeof *y);
	struct solver_result t, z;
	size_t c;

	memcpy(y, r->cells, inv->n_cells * sizeof *y);
	c = set_record_cell(ds, inv, y, 1e-300);
	CHECK(c < inv->n_cells);
	recompute(ds, inv, NULL, 0, NULL, y, &t);
	check_numbers(ds, inv, &t);
	CHECK(t.estimation_accuracy > 600.0 / ds->n_records); /* ln 1e300 = 690 */
	y[c] = 0;
	recompute(ds, inv, NULL, 0, NULL, y, &z);
	CHECK(z.estimation_infinite && !z.baseline_infinite);
	CHECK(rel(z.baseline_accuracy, t.baseline_accuracy) < 1e-12);
	solver_result_finish(&t);
	solver_result_finish(&z);
	free(y);
}

/* Buckets of 2: records of one tuple and value outnumber the widest
 * bucket, past the tables of k ln k (their accuracy terms read beyond
 * them once, and came out negative). */
static void instance(uint64_t seed, struct parallel *pool, size_t width, size_t wide)
{
	uint64_t rng = seed;
	struct dataset *ds = skewed_table(&rng, rng_in(&rng, 3000, 6000), width, wide);
	struct knowledge k;
	struct miner_options mo;
	struct invariants inv;
	struct solver_options o;
	struct solver_result r, a, b, c;
	struct pm_error err = {0};
	uint8_t *closed = malloc(ds->n_groups + 1);
	double cv;

	knowledge_init(&k);
	miner_options_init(&mo);
	mo.positive = mo.negative = rng_in(&rng, 0, 20);
	CHECK(miner_run(ds, &mo, &k, &err) == PM_OK);
	CHECK(invariants_build(ds, &k, &inv, &err) == PM_OK);
	solver_options_init(&o);
	CHECK(solver_run(ds, &k, &inv, &o, &r, &err) == PM_OK);
	CHECK(ds->n_tuples > 256 && ds->n_groups > 256); /* several chunks */
	check_posterior(ds, &inv, &r);
	check_numbers(ds, &inv, &r);
	cv = closed_buckets(ds, &inv, r.cells, closed);
	recompute(ds, &inv, NULL, 0, NULL, r.cells, &a);
	recompute(ds, &inv, closed, cv, NULL, r.cells, &b);
	recompute(ds, &inv, closed, cv, pool, r.cells, &c);
	check_numbers(ds, &inv, &a);
	check_numbers(ds, &inv, &b);
	/* the closed form's entropy and KL terms differ only by rounding */
	CHECK(rel(a.entropy, b.entropy) < 1e-12);
	CHECK(a.max_violation == b.max_violation);
	CHECK(same_result(&b, &c, ds->n_tuples));
	tiny_sums(ds, &inv, &r);
	solver_result_finish(&r);
	solver_result_finish(&a);
	solver_result_finish(&b);
	solver_result_finish(&c);
	free(closed);
	invariants_finish(&inv);
	knowledge_finish(&k);
	dataset_destroy(ds);
}

/*
 * The closed-form memo across buckets that agree in g and h but not in
 * their counts: n(b) apart with all-1 counts on one side (g = n(b) needs
 * no comparison only if the memo's bucket has n(b) = g too), and counts
 * that differ in order. Records: (a, SA) per bucket.
 */
static void memo_cases(void)
{
	static const char *const bucket[][5] = {
	    {"x1", "y1", "y2"},	      /* g 2 (1 2), h 2 (2 1), n 3 */
	    {"x1", "x2", "y1"},	      /* g 2 (2 1), h 2 (2 1), n 3 */
	    {"x1", "y2"},	      /* g 2, h 2, n 2: all 1 */
	    {"x1", "y2", "z3", "z3"}, /* g 3 (1 1 2), h 3 (1 1 2), n 4 */
	    {"x1", "y2", "z3"},	      /* g 3, h 3, n 3: all 1 */
	    {"x1", "y2", "z2"},	      /* g 3 all 1, h 2 (1 2), n 3 */
	    {"x1", "y1", "y2"},	      /* the first again */
	};
	static const char *const attrs[] = {"a"};
	struct pm_error err = {0};
	struct dataset_builder *b = dataset_builder_create(NULL, attrs, 1, "sa", &err);
	struct dataset *ds = NULL;
	struct knowledge k;
	struct invariants inv;

	for (size_t g = 0; b && g < sizeof bucket / sizeof *bucket; g++)
		for (size_t i = 0; i < 5 && bucket[g][i]; i++) {
			char qi[2] = {bucket[g][i][0]}, sa[3] = {'s', bucket[g][i][1]}, group[8];
			const char *q = qi;

			snprintf(group, sizeof group, "g%zu", g);
			CHECK(dataset_builder_add_record(b, &q, group, sa, &err) == PM_OK);
		}
	CHECK(b && dataset_builder_finish(b, &ds, &err) == PM_OK);
	dataset_builder_destroy(b);
	knowledge_init(&k);
	CHECK(ds && invariants_build(ds, &k, &inv, &err) == PM_OK);
	if (ds) {
		double *y = malloc((inv.n_cells + 1) * sizeof *y);
		uint8_t *closed = malloc(ds->n_groups + 1);

		CHECK(ds->n_groups == sizeof bucket / sizeof *bucket);
		for (size_t g = 0; g < ds->n_groups; g++)
			metrics_closed_form(ds, &inv, g, y);
		closed_buckets(ds, &inv, y, closed);
		free(y);
		free(closed);
		invariants_finish(&inv);
	}
	knowledge_finish(&k);
	dataset_destroy(ds);
}

int main(void)
{
	struct parallel *pool = NULL;

	memo_cases();
	CHECK(parallel_create(4, &pool) == PM_OK);
	for (uint64_t seed = 1; seed <= 6; seed++)
		instance(0x3e7c0000 + seed, pool, 5, 45);
	for (uint64_t seed = 7; seed <= 9; seed++)
		instance(0x3e7c0000 + seed, pool, 2, 2);
	parallel_destroy(pool);
	return check_done();
}
