/*
 * solver_run against the independent reference solver (reference.h): a
 * randomized cross-check on hundreds of small random instances with
 * knowledge mined from their own records, where solver_run must agree
 * with the reference on every posterior P*(s|q) to 1e-8, and with the
 * closed form of Theorem 5 when there is no knowledge; interval rules, a
 * min that leaves no room, the last chance and warm starts against it
 * too. The reference on its own is in test_reference.c.
 */
#include <inttypes.h>
#include <time.h>

#include "check.h"
#include "random_table.h"
#include "reference.h"
#include "zeros.h"
#include "solver.h"

#define AGREE	      1e-8
#define N_KNOWLEDGE   250
#define N_CLOSED_FORM 50
#define SEED	      UINT64_C(20080609)

/* ---- randomized cross-check --------------------------------------------- */

struct worst {
	double post, cells, violation, entropy, accuracy, baseline, closed;
	long sweeps;
	size_t forced, rules;
};

static void note(double *worst, double v)
{
	if (!(v <= *worst)) /* NaN sticks */
		*worst = v;
}

/* Theorem 5 from the reference's own counts: sum_b n(q,b) n(s,b)/n(b) / n(q). */
static void closed_form(const struct reference_system *sys, double *post)
{
	for (size_t q = 0; q < sys->n_q; q++)
		for (size_t s = 0; s < sys->n_s; s++) {
			double y = 0.0;
			for (size_t b = 0; b < sys->n_b; b++) {
				double nb = 0.0;
				for (size_t p = 0; p < sys->n_q; p++)
					nb += sys->qb[p * sys->n_b + b];
				y += (double)sys->qb[q * sys->n_b + b] * sys->sb[s * sys->n_b + b] /
				     nb;
			}
			post[q * sys->n_s + s] = y / sys->nq[q];
		}
}

/* sum_q P(q) sum_s P(s|q) ln(P(s|q) / post(s|q)) from the records; sets
 * *infinite when some P(s|q) > 0 has post 0. */
static double accuracy(const struct dataset *ds, const struct reference_system *sys,
		       const double *post, int *infinite)
{
	size_t ns = sys->n_s;
	double acc = 0.0;
	uint32_t *nqs = calloc(sys->n_q * ns + 1, sizeof(*nqs));
	*infinite = 0;
	if (!nqs)
		return NAN;
	for (size_t i = 0; i < ds->n_records; i++)
		nqs[(size_t)ds->rec_tuple[i] * ns + ds->rec_sa[i]]++;
	for (size_t c = 0; c < sys->n_q * ns; c++) {
		double p = (double)nqs[c] / sys->nq[c / ns];
		if (!nqs[c])
			continue;
		if (post[c] <= 0.0)
			*infinite = 1;
		else
			acc += (double)nqs[c] / (double)ds->n_records * log(p / post[c]);
	}
	free(nqs);
	return acc;
}

/* The solver's cells against the reference's, and the solver's cells put
 * through the reference's own rows (an independent feasibility check). */
static void compare_cells(const struct reference_system *sys, const struct invariants *inv,
			  const struct solver_result *r, struct worst *w)
{
	double *y = calloc(sys->n_cells + 1, sizeof(*y)), diff = 0.0, viol;
	size_t unmapped = 0;
	CHECK(inv->n_cells == sys->n_cells);
	CHECK(r->cells != NULL && y != NULL);
	if (!r->cells || !y)
		goto out;
	for (size_t c = 0; c < inv->n_cells; c++) {
		size_t q = inv->cell_tuple[c], s = inv->cell_sa[c], b = inv->cell_group[c];
		long at = q < sys->n_q && s < sys->n_s && b < sys->n_b
			      ? sys->cell_at[(q * sys->n_s + s) * sys->n_b + b]
			      : -1;
		if (at < 0) {
			unmapped++;
			continue;
		}
		y[at] = r->cells[c];
		note(&diff, fabs(r->cells[c] - sys->y[at]));
	}
	CHECK(unmapped == 0);
	viol = reference_violation(sys, y);
	CHECK_NEAR(diff, 0.0, AGREE);
	CHECK_NEAR(viol, 0.0, AGREE);
	note(&w->cells, diff);
	note(&w->violation, viol);
out:
	free(y);
}

/* Posterior CSR of r made dense, against ref. */
static void compare_posterior(const struct dataset *ds, const struct solver_result *r,
			      const double *ref, struct worst *w)
{
	size_t ns = ds->sa_values.n, bad = 0;
	double *dense = calloc(ds->n_tuples * ns + 1, sizeof(*dense)), diff = 0.0;
	CHECK(r->post_off != NULL && dense != NULL);
	if (!r->post_off || !dense)
		goto out;
	for (size_t q = 0; q < ds->n_tuples; q++)
		for (size_t e = r->post_off[q]; e < r->post_off[q + 1]; e++) {
			if (r->post_sa[e] >= ns || !(r->post_p[e] > 0.0))
				bad++;
			else
				dense[q * ns + r->post_sa[e]] = r->post_p[e];
		}
	CHECK(bad == 0);
	for (size_t c = 0; c < ds->n_tuples * ns; c++)
		note(&diff, fabs(dense[c] - ref[c]));
	CHECK_NEAR(diff, 0.0, AGREE);
	note(&w->post, diff);
out:
	free(dense);
}

/* Everything solver_run reports that the reference can vouch for but the
 * count of forced zeros (compare). */
static void compare_answer(const struct dataset *ds, const struct reference_system *sys,
			   const double *ref, const double *cf, const struct invariants *inv,
			   const struct solver_result *r, struct worst *w)
{
	int inf_ref, inf_cf;
	double acc = accuracy(ds, sys, ref, &inf_ref), base = accuracy(ds, sys, cf, &inf_cf);
	CHECK(r->status == SOLVER_CONVERGED);
	if (r->status != SOLVER_CONVERGED)
		fprintf(stderr,
			"solver: not converged after %d iterations, max_violation %.3g: %s\n",
			r->iterations, r->max_violation, r->reason);
	compare_cells(sys, inv, r, w);
	compare_posterior(ds, r, ref, w);
	CHECK_NEAR(r->entropy, reference_entropy(sys), AGREE);
	note(&w->entropy, fabs(r->entropy - reference_entropy(sys)));
	/* mined rules hold on the records, so every true (q,s) stays possible */
	CHECK(!inf_ref && !inf_cf);
	CHECK(r->has_accuracy && !r->estimation_infinite && !r->baseline_infinite);
	CHECK_NEAR(r->estimation_accuracy, acc, AGREE);
	CHECK_NEAR(r->baseline_accuracy, base, AGREE);
	note(&w->accuracy, fabs(r->estimation_accuracy - acc));
	note(&w->baseline, fabs(r->baseline_accuracy - base));
}

/* Everything solver_run reports that the reference can vouch for. */
static void compare(const struct dataset *ds, const struct reference_system *sys, const double *ref,
		    const double *cf, const struct invariants *inv, const struct solver_result *r,
		    struct worst *w)
{
	CHECK(r->forced_zeros == sys->n_forced);
	compare_answer(ds, sys, ref, cf, inv, r, w);
}

/* Random knowledge mined from the instance's own records, each rule an
 * interval of that vagueness about its value (0: equalities). */
static void mine(const struct dataset *ds, uint64_t *rng, struct knowledge *k, double vagueness)
{
	struct miner_options mo;
	struct pm_error err = {0};
	miner_options_init(&mo);
	mo.vagueness = vagueness;
	mo.positive = rng_in(rng, 0, 10);
	mo.negative = rng_in(rng, 0, 10);
	mo.min_support = rng_in(rng, 1, 3);
	mo.qi_attributes = rng_in(rng, 0, ds->n_attrs);
	CHECK(miner_run(ds, &mo, k, &err) == PM_OK);
	if (err.status)
		fprintf(stderr, "miner_run: %s: %s\n", err.field, err.message);
}

/* The reference side and, unless it failed, the solver side; returns
 * whether the reference succeeded. */
static int solve_both(const struct dataset *ds, const struct knowledge *k,
		      struct reference_system *sys, double *ref, double *cf, struct worst *w)
{
	struct pm_error err = {0};
	struct invariants inv;
	struct solver_options so;
	struct solver_result r;
	enum reference_status st = reference_solve(ds, k, ref, sys);
	memset(&inv, 0, sizeof(inv));
	memset(&r, 0, sizeof(r));
	CHECK(st == REFERENCE_OK);
	if (st != REFERENCE_OK)
		return 0;
	if (sys->sweeps > w->sweeps)
		w->sweeps = sys->sweeps;
	w->forced += sys->n_forced;
	closed_form(sys, cf);
	CHECK(invariants_build(ds, k, &inv, &err) == PM_OK);
	/* both methods: the default two-level dual and the paper's full dual */
	for (int method = SOLVER_TWO_LEVEL; !err.status && method <= SOLVER_FULL_DUAL; method++) {
		solver_options_init(&so);
		so.method = (enum solver_method)method;
		so.tolerance = 1e-10; /* 1e-8 agreement needs a tighter target than 1e-6 */
		CHECK(solver_run(ds, k, &inv, &so, &r, &err) == PM_OK);
		if (err.status)
			fprintf(stderr, "solver side (method %d): %s: %s\n", method, err.field,
				err.message);
		else
			compare(ds, sys, ref, cf, &inv, &r, w);
		solver_result_finish(&r);
	}
	invariants_finish(&inv);
	return 1;
}

/* One random instance; with_knowledge = 0 also checks the closed form. */
static void run_instance(uint64_t seed, int with_knowledge, struct worst *w)
{
	uint64_t rng = seed;
	int failed = check_failed;
	struct knowledge k;
	struct reference_system sys;
	struct dataset *ds = random_dataset(&rng);
	double *ref = NULL, *cf = NULL;
	knowledge_init(&k);
	memset(&sys, 0, sizeof(sys));
	CHECK(ds != NULL);
	if (!ds)
		goto out;
	ref = calloc(ds->n_tuples * ds->sa_values.n + 1, sizeof(*ref));
	cf = calloc(ds->n_tuples * ds->sa_values.n + 1, sizeof(*cf));
	if (with_knowledge)
		mine(ds, &rng, &k, 0);
	w->rules += k.n;
	if (solve_both(ds, &k, &sys, ref, cf, w) && !with_knowledge) {
		double diff = 0.0;
		for (size_t c = 0; c < ds->n_tuples * ds->sa_values.n; c++)
			note(&diff, fabs(ref[c] - cf[c]));
		CHECK_NEAR(diff, 0.0, AGREE);
		note(&w->closed, diff);
	}
out:
	if (check_failed > failed)
		fprintf(stderr,
			"  ^ instance seed %" PRIu64 " (%s knowledge; rerun alone with "
			"PMAXENT_REFERENCE_SEED=%" PRIu64 ")\n",
			seed, with_knowledge ? "mined" : "no", seed);
	free(ref);
	free(cf);
	reference_free(&sys);
	knowledge_finish(&k);
	dataset_destroy(ds);
}

/* A table of n records whose SA follows the QI values but for one record
 * in about `noise` (so that mined rules come near 0 and 1), in buckets
 * of 3 to 6 records. Caller frees with dataset_destroy. */
static struct dataset *skewed_table(uint64_t *rng, size_t n, size_t noise, size_t n_attrs)
{
	static const char *const attrs[] = {"a", "b", "c"};
	static const char *const vals[] = {"v0", "v1", "v2", "v3", "v4"};
	static const char *const sas[] = {"s0", "s1", "s2", "s3", "s4", "s5", "s6"};
	struct pm_error err = {0};
	struct dataset *ds = NULL;
	struct dataset_builder *b = dataset_builder_create("skewed", attrs, n_attrs, "sa", &err);
	size_t size = rng_in(rng, 3, 6);
	for (size_t i = 0; b && i < n; i++) {
		size_t q[3] = {0}, s;
		const char *qi[3];
		char group[32];
		for (size_t a = 0; a < n_attrs; a++) {
			q[a] = rng_in(rng, 0, 2 + a);
			qi[a] = vals[q[a]];
		}
		s = rng_in(rng, 0, noise) == 0 ? rng_in(rng, 0, 6) : (q[0] + 2 * q[1] + q[2]) % 7;
		snprintf(group, sizeof(group), "g%zu", i / size);
		CHECK(dataset_builder_add_record(b, qi, group, sas[s], &err) == PM_OK);
	}
	CHECK(b && dataset_builder_finish(b, &ds, &err) == PM_OK);
	dataset_builder_destroy(b);
	return ds;
}

/*
 * The last chance (solver/README.md): a probe whose failure would lead to
 * the exact zero decision runs to its end, and a converged one is the
 * answer even where cells still shrink. On these two tables (found by a
 * seed search over skewed_table, two-level method, duplicate rules
 * settled) it leaves 34 and 4 of the forced zeros unfound, each below
 * the tolerance: the answer must still agree with the reference's, whose
 * zeros are exact.
 */
static void test_last_chance(void)
{
	static const uint64_t seeds[] = {524, 786};
	for (size_t i = 0; i < sizeof(seeds) / sizeof(*seeds); i++) {
		uint64_t rng = seeds[i] * 7919 + 17;
		size_t n_attrs = rng_in(&rng, 2, 3), noise = rng_in(&rng, 2, 60);
		size_t n = rng_in(&rng, 100, 1200);
		struct dataset *ds = skewed_table(&rng, n, noise, n_attrs);
		struct knowledge k;
		struct miner_options mo;
		struct invariants inv;
		struct reference_system sys;
		struct solver_options so;
		struct solver_result r;
		struct pm_error err = {0};
		struct worst w;
		double *ref = calloc(ds->n_tuples * ds->sa_values.n + 1, sizeof(*ref));
		double *cf = calloc(ds->n_tuples * ds->sa_values.n + 1, sizeof(*cf));
		memset(&w, 0, sizeof(w));
		knowledge_init(&k);
		miner_options_init(&mo);
		mo.positive = rng_in(&rng, 5, 120);
		mo.negative = rng_in(&rng, 5, 120);
		mo.min_support = rng_in(&rng, 1, 3);
		mo.qi_attributes = rng_in(&rng, 1, ds->n_attrs);
		CHECK(miner_run(ds, &mo, &k, &err) == PM_OK);
		CHECK(invariants_build(ds, &k, &inv, &err) == PM_OK);
		CHECK(reference_solve(ds, &k, ref, &sys) == REFERENCE_OK);
		closed_form(&sys, cf);
		solver_options_init(&so);
		so.tolerance = 1e-10;
		CHECK(solver_run(ds, &k, &inv, &so, &r, &err) == PM_OK);
		CHECK(r.forced_zeros < sys.n_forced);
		compare_answer(ds, &sys, ref, cf, &inv, &r, &w);
		solver_result_finish(&r);
		reference_free(&sys);
		invariants_finish(&inv);
		knowledge_finish(&k);
		dataset_destroy(ds);
		free(ref);
		free(cf);
	}
}

/*
 * Interval rules through the solver (two-level method) against the
 * reference: random instances whose mined rules become intervals about
 * half the time, each holding the records' own value (so the knowledge
 * holds) at a random width, many of them binding; every fourth instance
 * mined with a vagueness of 0.05 to 0.2 instead (every rule an interval
 * about its value). The interval rows are
 * left out of the zero search (a relaxation), so the solver may find
 * fewer forced zeros than there are: compare_answer.
 */
/* A rule's reach in records: per bucket, min(its tuples' records, n(s, b)),
 * summed (the most its row can hold). */
static double reach(const struct invariants *inv, size_t row)
{
	double u = 0;

	for (size_t b = 0; b < inv->n_groups; b++) {
		double q = 0, ns = 0;
		int in = 0;

		for (size_t e = inv->row_off[row]; e < inv->row_off[row + 1]; e++) {
			size_t c = inv->row_cell[e], h = inv->bucket_h[b];

			if (inv->cell_group[c] != b)
				continue;
			q += invariants_qi_count(inv, b, (c - inv->cell_off[b]) / h);
			ns = invariants_sa_count(inv, b, (c - inv->cell_off[b]) % h);
			in = 1;
		}
		u += in ? fmin(q, ns) : 0;
	}
	return u;
}

/*
 * "A min that leaves no room forces zeros" (issue 23): a rule whose min
 * is all its row can reach. The cheap depth of the search finds the
 * zeros (the row's other cells), and both methods agree with the
 * reference.
 */
static void test_min_no_room(void)
{
	struct worst w;
	size_t zeros = 0, n_inst = 0;

	memset(&w, 0, sizeof w);
	for (uint64_t i = 0; i < 150; i++) {
		uint64_t rng = SEED * 7000003 + i;
		struct dataset *ds = random_dataset(&rng);
		struct knowledge k;
		struct reference_system sys;
		struct invariants inv = {0};
		struct pm_error err = {0};
		struct zeros z;
		size_t n = ds->n_tuples * ds->sa_values.n, last;
		double *ref = calloc(n + 1, sizeof *ref);

		knowledge_init(&k);
		mine(ds, &rng, &k, 0);
		if (!k.n || invariants_build(ds, &k, &inv, &err))
			goto next;
		last = inv.n_rows - 1; /* the last rule's row */
		k.rules[k.n - 1].lo = fmin(1, reach(&inv, last) / (double)k.rules[k.n - 1].n_qv);
		k.rules[k.n - 1].hi = 1;
		k.rules[k.n - 1].source = RULE_USER;
		invariants_finish(&inv);
		CHECK(invariants_build(ds, &k, &inv, &err) == PM_OK);
		memset(&sys, 0, sizeof sys);
		if (reference_solve(ds, &k, ref, &sys) != REFERENCE_OK) {
			reference_free(&sys);
			goto next;
		}
		CHECK(zeros_init(&z, ds, &k, &inv) == PM_OK);
		CHECK(zeros_deepen(&z, ZEROS_CHEAP, NULL, NULL, &err) == PM_OK);
		zeros += z.found;
		zeros_finish(&z);
		for (int method = SOLVER_TWO_LEVEL; method <= SOLVER_FULL_DUAL; method++) {
			struct solver_options so;
			struct solver_result r = {0};

			solver_options_init(&so);
			so.method = (enum solver_method)method;
			so.tolerance = 1e-10;
			CHECK(solver_run(ds, &k, &inv, &so, &r, &err) == PM_OK);
			CHECK(r.status == SOLVER_CONVERGED);
			if (r.post_off) {
				compare_cells(&sys, &inv, &r, &w);
				compare_posterior(ds, &r, ref, &w);
			}
			solver_result_finish(&r);
		}
		n_inst++;
		reference_free(&sys);
	next:
		invariants_finish(&inv);
		knowledge_finish(&k);
		dataset_destroy(ds);
		free(ref);
	}
	printf("min at the reach: %zu instances, %zu zeros at the cheap depth; posterior within "
	       "%.3g, cells %.3g\n",
	       n_inst, zeros, w.post, w.cells);
	CHECK(zeros > 0);
}

static void test_intervals_solver(void)
{
	struct worst w;
	int binding = 0;
	memset(&w, 0, sizeof(w));
	for (uint64_t i = 0; i < 200; i++) {
		uint64_t rng = SEED * 4000037 + i;
		struct dataset *ds = random_dataset(&rng);
		struct knowledge k;
		struct reference_system sys;
		struct invariants inv;
		struct solver_options so;
		struct solver_result r;
		struct pm_error err = {0};
		size_t n = ds->n_tuples * ds->sa_values.n;
		double *ref = calloc(n + 1, sizeof(*ref)), *cf = calloc(n + 1, sizeof(*cf));
		knowledge_init(&k);
		mine(ds, &rng, &k, i % 4 == 0 ? 0.05 * (double)rng_in(&rng, 1, 4) : 0);
		for (size_t j = 0; i % 4 && j < k.n; j++) {
			struct rule *rule = &k.rules[j];
			double c = rule->lo;
			if (rng_in(&rng, 0, 1))
				continue;
			rule->source = RULE_USER; /* rows lo n(Qv) to hi n(Qv) */
			rule->lo = fmax(0.0, c - 0.3 * (double)rng_in(&rng, 0, 100) / 100.0);
			rule->hi = fmin(1.0, c + 0.3 * (double)rng_in(&rng, 0, 100) / 100.0);
		}
		memset(&sys, 0, sizeof(sys));
		CHECK(reference_solve(ds, &k, ref, &sys) == REFERENCE_OK);
		closed_form(&sys, cf);
		CHECK(invariants_build(ds, &k, &inv, &err) == PM_OK);
		/* both methods: the full dual by OWL-QN, the two-level one by
		 * orthant-wise Newton */
		for (int method = SOLVER_TWO_LEVEL; method <= SOLVER_FULL_DUAL; method++) {
			solver_options_init(&so);
			so.method = (enum solver_method)method;
			so.tolerance = 1e-10;
			CHECK(solver_run(ds, &k, &inv, &so, &r, &err) == PM_OK);
			if (err.status)
				fprintf(stderr, "instance %llu, method %d: %s: %s\n",
					(unsigned long long)i, method, err.field, err.message);
			CHECK(r.forced_zeros <= sys.n_forced);
			if (r.status != SOLVER_CONVERGED)
				fprintf(stderr, "instance %llu, method %d: not converged\n",
					(unsigned long long)i, method);
			compare_answer(ds, &sys, ref, cf, &inv, &r, &w);
			if (method == SOLVER_TWO_LEVEL)
				solver_result_finish(&r);
		}
		for (size_t row = 0; row < sys.n_rows; row++)
			binding += sys.rhs[row] < sys.hi[row] && sys.z[row] != 0.0;
		solver_result_finish(&r);
		invariants_finish(&inv);
		reference_free(&sys);
		knowledge_finish(&k);
		dataset_destroy(ds);
		free(ref);
		free(cf);
	}
	CHECK(binding >= 100);
	printf("intervals: 200 instances, %d binding interval rows; worst |solver - reference|: "
	       "posterior %.3g, entropy %.3g, accuracy %.3g\n",
	       binding, w.post, w.entropy, w.accuracy);
}

/* The posteriors of two solves of one dataset: the largest difference. */
static double post_diff(const struct dataset *ds, const struct solver_result *a,
			const struct solver_result *b)
{
	size_t ns = ds->sa_values.n;
	double *d = calloc(ds->n_tuples * ns + 1, sizeof(*d)), worst = 0.0;
	CHECK(d != NULL);
	for (size_t q = 0; d && q < ds->n_tuples; q++) {
		for (size_t e = a->post_off[q]; e < a->post_off[q + 1]; e++)
			d[q * ns + a->post_sa[e]] += a->post_p[e];
		for (size_t e = b->post_off[q]; e < b->post_off[q + 1]; e++)
			d[q * ns + b->post_sa[e]] -= b->post_p[e];
	}
	for (size_t c = 0; d && c < ds->n_tuples * ns; c++)
		note(&worst, fabs(d[c]));
	free(d);
	return worst;
}

/* One solve of k (solve_case), warm from *warm (may be NULL). */
static void solve_case(const struct dataset *ds, const struct knowledge *k,
		       const struct solver_warm *warm, struct solver_result *r)
{
	struct invariants inv;
	struct solver_options so;
	struct pm_error err = {0};
	memset(&inv, 0, sizeof(inv));
	solver_options_init(&so);
	so.tolerance = 1e-10;
	so.warm = warm;
	CHECK(invariants_build(ds, k, &inv, &err) == PM_OK);
	CHECK(solver_run(ds, k, &inv, &so, r, &err) == PM_OK);
	if (err.status)
		fprintf(stderr, "solve_case: %s: %s\n", err.field, err.message);
	invariants_finish(&inv);
}

/*
 * Warm starts (struct solver_warm): a solve warm from the answer under a
 * subset of the rules (a sweep's point before) is the cold solve's answer,
 * and the reference's; with interval rules (every fifth instance, mined
 * with vagueness) the warm start is not taken, bit for bit.
 */
static void test_warm_start(void)
{
	struct worst w;
	double warm_cold = 0.0;
	size_t seeded = 0, n_inst = 150;
	memset(&w, 0, sizeof(w));
	for (uint64_t i = 0; i < n_inst; i++) {
		uint64_t rng = SEED * 5000011 + i;
		struct dataset *ds = random_dataset(&rng);
		struct knowledge k, sub;
		struct reference_system sys;
		struct solver_result r0, rw, rc;
		struct solver_warm warm;
		size_t n = ds->n_tuples * ds->sa_values.n;
		double *ref = calloc(n + 1, sizeof(*ref)), *cf = calloc(n + 1, sizeof(*cf));
		struct invariants inv;
		struct pm_error err = {0};
		knowledge_init(&k);
		knowledge_init(&sub);
		mine(ds, &rng, &k, i % 5 == 4 ? 0.1 : 0);
		for (size_t j = 0, m = rng_in(&rng, 0, k.n); j < m; j++)
			CHECK(knowledge_append(&sub, &k.rules[j], &err) == PM_OK);
		solve_case(ds, &sub, NULL, &r0);
		warm = (struct solver_warm){r0.zero, r0.cells};
		solve_case(ds, &k, &warm, &rw);
		solve_case(ds, &k, NULL, &rc);
		seeded += r0.forced_zeros > 0;
		memset(&sys, 0, sizeof(sys));
		memset(&inv, 0, sizeof(inv));
		CHECK(reference_solve(ds, &k, ref, &sys) == REFERENCE_OK);
		closed_form(&sys, cf);
		CHECK(invariants_build(ds, &k, &inv, &err) == PM_OK);
		compare_answer(ds, &sys, ref, cf, &inv, &rw, &w);
		if (i % 5 == 4)
			CHECK(!memcmp(rw.cells, rc.cells, inv.n_cells * sizeof(*rw.cells)));
		else
			note(&warm_cold, post_diff(ds, &rw, &rc));
		invariants_finish(&inv);
		solver_result_finish(&r0);
		solver_result_finish(&rw);
		solver_result_finish(&rc);
		reference_free(&sys);
		knowledge_finish(&k);
		knowledge_finish(&sub);
		dataset_destroy(ds);
		free(ref);
		free(cf);
	}
	printf("warm starts: %zu instances (%zu with zeros to seed); warm vs cold posterior %.3g, "
	       "vs reference %.3g\n",
	       n_inst, seeded, warm_cold, w.post);
	CHECK(seeded >= 20);
	CHECK_NEAR(warm_cold, 0.0, 1e-9);
}

static void test_cross_check(void)
{
	struct worst w;
	const char *only = getenv("PMAXENT_REFERENCE_SEED");
	clock_t t0 = clock();
	memset(&w, 0, sizeof(w));
	if (only && *only) {
		uint64_t seed = strtoull(only, NULL, 10);
		run_instance(seed, 1, &w);
		run_instance(seed, 0, &w);
	} else {
		for (uint64_t i = 0; i < N_KNOWLEDGE; i++)
			run_instance(SEED * 1000003 + i, 1, &w);
		for (uint64_t i = 0; i < N_CLOSED_FORM; i++)
			run_instance(SEED * 2000003 + i, 0, &w);
	}
	printf("cross-check: %d + %d instances, %zu mined rules, %zu forced zeros, "
	       "max %ld sweeps, %.2f s\n",
	       N_KNOWLEDGE, N_CLOSED_FORM, w.rules, w.forced, w.sweeps,
	       (double)(clock() - t0) / CLOCKS_PER_SEC);
	printf("worst |solver - reference|: posterior %.3g, cells %.3g, entropy %.3g, "
	       "accuracy %.3g, baseline %.3g; solver cells on reference rows %.3g; "
	       "reference vs closed form %.3g\n",
	       w.post, w.cells, w.entropy, w.accuracy, w.baseline, w.violation, w.closed);
}

int main(void)
{
	test_intervals_solver();
	test_min_no_room();
	test_last_chance();
	test_warm_start();
	test_cross_check();
	return check_done();
}
