/* The solve step end to end on the paper's Figure 1 setting (known
 * answers, exact boundaries, conflicts) and the closed form of Theorem 5
 * on random tables; the iteration limit, threads and a borrowed pool. The
 * time limit, the stall and progress are in test_solver_time_limit.c. */
#include <stdint.h>

#include "check.h"
#include "solver.h"
#include "solver_inputs.h"

#define TOL 1e-9

struct run {
	struct invariants inv;
	struct solver_result r;
	struct pm_error err;
	enum pm_status st;
};

static void solve(const struct dataset *ds, const struct knowledge *k, struct run *run)
{
	struct solver_options o;

	solver_options_init(&o);
	memset(run, 0, sizeof *run);
	CHECK(invariants_build(ds, k, &run->inv, &run->err) == PM_OK);
	run->st = solver_run(ds, k, &run->inv, &o, &run->r, &run->err);
}

static void run_finish(struct run *run)
{
	solver_result_finish(&run->r);
	invariants_finish(&run->inv);
}

/* P*(s | gender, degree), 0 when not listed. */
static double post(const struct dataset *ds, const struct solver_result *r, const char *g,
		   const char *d, const char *s)
{
	for (uint32_t q = 0; q < ds->n_tuples; q++) {
		if (strcmp(dataset_tuple_value(ds, q, 0), g) ||
		    strcmp(dataset_tuple_value(ds, q, 1), d))
			continue;
		for (size_t e = r->post_off[q]; e < r->post_off[q + 1]; e++)
			if (!strcmp(ds->sa_values.str[r->post_sa[e]], s))
				return r->post_p[e];
		return 0;
	}
	CHECK(!"tuple not found");
	return -1;
}

/* y[q,s,b] of the estimate, records. */
static double cell(const struct dataset *ds, const struct run *run, const char *group,
		   const char *g, const char *d, const char *s)
{
	for (size_t c = 0; c < run->inv.n_cells; c++) {
		uint32_t q = run->inv.cell_tuple[c];

		if (!strcmp(ds->group_labels[run->inv.cell_group[c]], group) &&
		    !strcmp(dataset_tuple_value(ds, q, 0), g) &&
		    !strcmp(dataset_tuple_value(ds, q, 1), d) &&
		    !strcmp(ds->sa_values.str[run->inv.cell_sa[c]], s))
			return run->r.cells[c];
	}
	return 0; /* no such cell: a zero-invariant */
}

static void test_no_knowledge(const struct dataset *ds)
{
	struct run run;

	solve(ds, NULL, &run);
	CHECK(run.st == PM_OK);
	CHECK(run.r.status == SOLVER_CONVERGED);
	CHECK(run.r.iterations == 0);
	CHECK_NEAR(post(ds, &run.r, "male", "college", "Flu"), 1.0 / 3, TOL);
	/* (2/3)(2/4) from bucket 1 */
	CHECK_NEAR(post(ds, &run.r, "male", "college", "Breast Cancer"), 1.0 / 3, TOL);
	CHECK_NEAR(post(ds, &run.r, "female", "college", "Flu"), 0.5 * 0.25 + 0.5 * 0.5, TOL);
	CHECK_NEAR(post(ds, &run.r, "female", "junior", "Breast Cancer"), 0.5, TOL);
	CHECK(run.r.variables == 3 * 3 + 2 * 2 + 2 * 2);
	CHECK(run.r.qi_invariants == 3 + 2 + 2);
	CHECK(run.r.sa_invariants == 2 + 1 + 1);
	/* |Q| = 5, |S| = 4, |B| = 3 */
	CHECK(run.r.zero_invariants == 5 * 4 * 3 - 17);
	CHECK(run.r.max_violation < 1e-12);
	CHECK(run.r.has_accuracy);
	CHECK_NEAR(run.r.estimation_accuracy, run.r.baseline_accuracy, 1e-15);
	CHECK(run.r.zeros_seconds == 0); /* no knowledge: no search */
	CHECK(run.r.metrics_seconds > 0 && run.r.metrics_seconds <= run.r.seconds);
	run_finish(&run);
}

static void test_breast_cancer(const struct dataset *ds)
{
	struct knowledge k;
	struct run run;

	knowledge_init(&k);
	add_rule(&k, ds, "gender", "male", NULL, NULL, "Breast Cancer", 0);
	solve(ds, &k, &run);
	CHECK(run.st == PM_OK);
	CHECK(run.r.status == SOLVER_CONVERGED);
	CHECK_NEAR(post(ds, &run.r, "female", "junior", "Breast Cancer"), 1, TOL);
	CHECK_NEAR(post(ds, &run.r, "female", "college", "Breast Cancer"), 0.5, TOL);
	CHECK_NEAR(post(ds, &run.r, "male", "college", "Breast Cancer"), 0, 0);
	CHECK_NEAR(post(ds, &run.r, "female", "graduate", "Breast Cancer"), 1, TOL);
	CHECK_NEAR(cell(ds, &run, "1", "male", "college", "Flu"), 1, TOL);
	CHECK_NEAR(cell(ds, &run, "1", "male", "college", "HIV"), 1, TOL);
	CHECK(run.r.knowledge == 1);
	CHECK(run.r.forced_zeros > 0);
	CHECK(run.r.iterations == 0 && run.r.solved_buckets == 0);
	CHECK(run.r.max_violation <= 1e-6);
	/* the knowledge is true, so the estimate can only get closer */
	CHECK(run.r.estimation_accuracy <= run.r.baseline_accuracy + 1e-12);
	run_finish(&run);
	knowledge_finish(&k);
}

/* q1 = (male, college), q2 = (female, junior), q3 = (female, college);
 * s1 = Flu, s2 = Breast Cancer, s3 = HIV. */
static void test_deterministic(const struct dataset *ds)
{
	struct knowledge k;
	struct run run;

	knowledge_init(&k);
	add_rule(&k, ds, "gender", "female", "degree", "junior", "Flu", 0);
	add_rule(&k, ds, "gender", "female", "degree", "college", "Flu", 0);
	add_rule(&k, ds, "gender", "female", "degree", "college", "Breast Cancer", 0);
	solve(ds, &k, &run);
	CHECK(run.st == PM_OK);
	CHECK(run.r.status == SOLVER_CONVERGED);
	CHECK_NEAR(cell(ds, &run, "1", "female", "college", "HIV"), 1, TOL);
	CHECK_NEAR(cell(ds, &run, "1", "female", "junior", "Breast Cancer"), 1, TOL);
	CHECK_NEAR(cell(ds, &run, "1", "male", "college", "Flu"), 1, TOL);
	CHECK_NEAR(cell(ds, &run, "1", "male", "college", "Breast Cancer"), 1, TOL);
	CHECK_NEAR(cell(ds, &run, "1", "male", "college", "HIV"), 0, 0);
	CHECK_NEAR(cell(ds, &run, "2", "female", "college", "Lung Cancer"), 1, TOL);
	CHECK_NEAR(post(ds, &run.r, "male", "college", "Flu"), 2.0 / 3, TOL);
	CHECK_NEAR(post(ds, &run.r, "female", "college", "HIV"), 0.5, TOL);
	/* every rule is implied once the zeros are known: no dual at all,
	 * each bucket solved alone, exact */
	CHECK(run.r.iterations == 0);
	CHECK(run.r.solved_buckets == 0);
	CHECK_NEAR(cell(ds, &run, "1", "female", "junior", "Breast Cancer"), 1, 1e-12);
	CHECK(run.r.max_violation <= 1e-12);
	run_finish(&run);
	knowledge_finish(&k);
}

static void test_conflicts(const struct dataset *ds)
{
	struct knowledge k;
	struct run run;

	/* bucket 1 has one Flu for two women */
	knowledge_init(&k);
	add_rule(&k, ds, "gender", "female", NULL, NULL, "Flu", 1);
	solve(ds, &k, &run);
	CHECK(run.st == PM_ERR_INCONSISTENT);
	CHECK_STR(run.err.field, "rules");
	CHECK_CONTAINS(run.err.message, "rules[0] P(Flu | gender=female) = 1");
	run_finish(&run);
	knowledge_finish(&k);

	/* two Breast Cancer in bucket 1 and only one woman may have it; the
	 * third rule is true and not part of the conflict */
	knowledge_init(&k);
	add_rule(&k, ds, "degree", "college", NULL, NULL, "Flu", 0.4);
	add_rule(&k, ds, "gender", "female", "degree", "junior", "Breast Cancer", 0);
	add_rule(&k, ds, "gender", "male", NULL, NULL, "Breast Cancer", 0);
	solve(ds, &k, &run);
	CHECK(run.st == PM_ERR_INCONSISTENT);
	CHECK_CONTAINS(run.err.message, "these rules together");
	CHECK_CONTAINS(run.err.message,
		       "rules[1] P(Breast Cancer | gender=female, degree=junior) = 0");
	CHECK_CONTAINS(run.err.message, "rules[2] P(Breast Cancer | gender=male) = 0");
	CHECK(!strstr(run.err.message, "rules[0]"));
	run_finish(&run);
	knowledge_finish(&k);

	/* no graduate shares a bucket with HIV */
	knowledge_init(&k);
	add_rule(&k, ds, "degree", "graduate", NULL, NULL, "HIV", 0.5);
	solve(ds, &k, &run);
	CHECK(run.st == PM_ERR_INCONSISTENT);
	CHECK_CONTAINS(run.err.message, "rules[0] P(HIV | degree=graduate) = 0.5");
	run_finish(&run);
	knowledge_finish(&k);
}

/* Cancels at the first report of iteration 3; *last: the iteration of
 * the last report (reports repeat an iteration while its direction is
 * computed, never go back, never skip one, and none follows a cancel). */
static int cancel_at_3(void *ctx, const struct solver_progress *p)
{
	int *last = ctx;

	if (isnan(p->max_violation)) { /* before the first iterate */
		CHECK(p->iterations == 0 && p->phase != SOLVER_PHASE_METRICS);
		return 0;
	}
	CHECK(*last < 3);
	CHECK(p->iterations == *last || p->iterations == *last + 1);
	*last = p->iterations;
	CHECK(p->max_violation >= 0 && p->phase == SOLVER_PHASE_ITERATE);
	return p->iterations >= 3;
}

/* The iteration limit gives not_converged with its reason; a progress
 * callback sees every iteration and can cancel. */
static void test_limits(const struct dataset *ds)
{
	struct knowledge k;
	struct invariants inv;
	struct solver_options o;
	struct solver_result r;
	struct pm_error err = {0};
	int last = 0;

	/* strictly inside its bounds (0 and 3 records): needs the dual */
	knowledge_init(&k);
	add_rule(&k, ds, "gender", "male", NULL, NULL, "Flu", 0.5);
	CHECK(invariants_build(ds, &k, &inv, &err) == PM_OK);
	solver_options_init(&o);
	o.max_iterations = 1;
	o.tolerance = 1e-300;
	CHECK(solver_run(ds, &k, &inv, &o, &r, &err) == PM_OK);
	CHECK(r.status == SOLVER_NOT_CONVERGED);
	CHECK_STR(r.reason, "iteration limit (1) reached");
	CHECK(r.iterations == 1);
	CHECK(r.post_off != NULL); /* a best effort answer is still there */
	solver_result_finish(&r);
	solver_options_init(&o);
	o.tolerance = 1e-300;
	o.progress = cancel_at_3;
	o.progress_ctx = &last;
	CHECK(solver_run(ds, &k, &inv, &o, &r, &err) == PM_ERR_CANCELLED);
	CHECK_CONTAINS(err.message, "cancelled");
	CHECK(last == 3);
	solver_result_finish(&r);
	invariants_finish(&inv);
	knowledge_finish(&k);
}

/* Enough coupled buckets for the two-level solve to use its thread pool:
 * the same answer with 1 and 3 threads (to rounding), and the full dual's
 * to 1e-8. */
static void test_threads(void)
{
	struct dataset *ds = bigger_table(3000, 7);
	struct knowledge k;
	struct invariants inv;
	struct solver_result r[3];
	struct pm_error err = {0};
	double d13 = 0, d1f = 0;

	mine_single(ds, 12, &k, &inv);
	for (int i = 0; i < 3; i++) {
		struct solver_options o;

		solver_options_init(&o);
		o.tolerance = 1e-8;
		o.threads = i == 1 ? 3 : 1;
		o.method = i == 2 ? SOLVER_FULL_DUAL : SOLVER_TWO_LEVEL;
		CHECK(solver_run(ds, &k, &inv, &o, &r[i], &err) == PM_OK);
		CHECK(r[i].status == SOLVER_CONVERGED);
		/* the phases: both ran, and they are parts of the solve */
		CHECK(r[i].zeros_seconds > 0 && r[i].metrics_seconds > 0);
		CHECK(r[i].zeros_seconds + r[i].metrics_seconds <= r[i].seconds);
	}
	CHECK(r[0].solved_buckets >= 200);
	CHECK(r[0].iterations <= 30); /* Newton */
	for (size_t q = 0; q < r[0].post_off[ds->n_tuples]; q++) {
		d13 = fmax(d13, fabs(r[0].post_p[q] - r[1].post_p[q]));
		d1f = fmax(d1f, fabs(r[0].post_p[q] - r[2].post_p[q]));
	}
	fprintf(stderr,
		"threads: %zu coupled buckets, %d Newton iterations; 1 vs 3 threads %.3g, "
		"vs full dual %.3g\n",
		r[0].solved_buckets, r[0].iterations, d13, d1f);
	CHECK(d13 <= 1e-12);
	CHECK(d1f <= 1e-8);
	for (int i = 0; i < 3; i++)
		solver_result_finish(&r[i]);
	invariants_finish(&inv);
	knowledge_finish(&k);
	dataset_destroy(ds);
}

/* Solves borrowing one pool, one after the other and with both methods,
 * give exactly what solves with threads of their own give. */
static void test_pool(void)
{
	struct dataset *ds = bigger_table(2000, 11);
	struct knowledge k;
	struct invariants inv;
	struct solver_pool *pool = NULL;
	struct pm_error err = {0};

	mine_single(ds, 10, &k, &inv);
	CHECK(solver_pool_create(3, &pool) == PM_OK && pool);
	for (int i = 0; i < 4; i++) {
		struct solver_options o;
		struct solver_result own, borrowed;

		solver_options_init(&o);
		o.tolerance = 1e-8;
		o.threads = 3;
		o.method = i % 2 ? SOLVER_FULL_DUAL : SOLVER_TWO_LEVEL;
		CHECK(solver_run(ds, &k, &inv, &o, &own, &err) == PM_OK);
		o.threads = 1; /* the pool's count applies */
		o.pool = pool;
		CHECK(solver_run(ds, &k, &inv, &o, &borrowed, &err) == PM_OK);
		CHECK(own.status == SOLVER_CONVERGED && borrowed.status == SOLVER_CONVERGED);
		CHECK(own.iterations == borrowed.iterations);
		CHECK(own.post_off[ds->n_tuples] == borrowed.post_off[ds->n_tuples]);
		for (size_t e = 0; e < own.post_off[ds->n_tuples]; e++)
			CHECK(own.post_p[e] == borrowed.post_p[e]);
		CHECK(own.estimation_accuracy == borrowed.estimation_accuracy);
		solver_result_finish(&own);
		solver_result_finish(&borrowed);
	}
	solver_pool_destroy(pool);
	solver_pool_destroy(NULL);
	invariants_finish(&inv);
	knowledge_finish(&k);
	dataset_destroy(ds);
}

int main(void)
{
	struct dataset *ds = load_csv("figure1.csv");

	test_no_knowledge(ds);
	test_breast_cancer(ds);
	test_deterministic(ds);
	test_conflicts(ds);
	test_limits(ds);
	dataset_destroy(ds);
	test_threads();
	test_pool();
	return check_done();
}
