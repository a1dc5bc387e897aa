/* The solve step end to end on the paper's Figure 1 setting (known
 * answers, exact boundaries, conflicts) and the closed form of Theorem 5
 * on random tables. */
#include <stdint.h>
#include <time.h>

#include "check.h"
#include "random_table.h"
#include "solver.h"

#define TOL 1e-9

static struct dataset *load_csv(const char *name)
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
static void add_rule(struct knowledge *k, const struct dataset *ds, const char *a1, const char *v1,
		     const char *a2, const char *v2, const char *then, double p)
{
	const char *attrs[2] = {a1, a2}, *vals[2] = {v1, v2};
	struct pm_error err = {0};

	CHECK(knowledge_add_user(k, ds, attrs, vals, a2 ? 2 : 1, then, 1, p, 0, 0, 0, 0, "rules",
				 &err) == PM_OK);
}

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

/* A table of n records in buckets of 5, SA depending on the QI values, so
 * that mined single-attribute rules are mostly probabilistic. */
static struct dataset *bigger_table(size_t n, uint64_t seed)
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
static void mine_single(const struct dataset *ds, size_t n, struct knowledge *k,
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

/* ---- the time limit ------------------------------------------------------ */

static double wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The largest |A y - c| over every row of inv, from the cells alone;
 * *invariant gets the largest over each bucket's QI and SA sums (the SA
 * row that inv drops too), from the dataset's counts. */
static double violation_of(const struct dataset *ds, const struct invariants *inv, const double *y,
			   double *invariant)
{
	double worst = 0;

	*invariant = 0;
	for (size_t b = 0; b < ds->n_groups; b++) {
		for (size_t i = ds->bq_off[b]; i < ds->bq_off[b + 1]; i++) {
			double sum = 0;

			for (size_t c = inv->cell_off[b]; c < inv->cell_off[b + 1]; c++)
				sum += inv->cell_tuple[c] == ds->bq_tuple[i] ? y[c] : 0;
			*invariant = fmax(*invariant, fabs(sum - ds->bq_count[i]));
		}
		for (size_t j = ds->bs_off[b]; j < ds->bs_off[b + 1]; j++) {
			double sum = 0;

			for (size_t c = inv->cell_off[b]; c < inv->cell_off[b + 1]; c++)
				sum += inv->cell_sa[c] == ds->bs_value[j] ? y[c] : 0;
			*invariant = fmax(*invariant, fabs(sum - ds->bs_count[j]));
		}
	}
	for (size_t row = 0; row < inv->n_rows; row++) {
		double sum = 0;

		for (size_t e = inv->row_off[row]; e < inv->row_off[row + 1]; e++)
			sum += y[inv->row_cell[e]];
		worst = fmax(worst, fabs(sum - inv->rhs[row]));
	}
	return fmax(worst, *invariant);
}

/* A result the time limit stopped: not converged, reason "time_limit",
 * every cell set, the invariants held in every bucket (each tuple's
 * posterior sums to 1) and max_violation the true one. */
static void check_best_point(const struct dataset *ds, const struct invariants *inv,
			     const struct solver_result *r)
{
	double invariant, worst;
	size_t bad = 0;

	CHECK(r->status == SOLVER_NOT_CONVERGED);
	CHECK_STR(r->reason, "time_limit");
	for (size_t c = 0; c < inv->n_cells; c++)
		bad += !(isfinite(r->cells[c]) && r->cells[c] >= 0);
	CHECK(bad == 0);
	worst = violation_of(ds, inv, r->cells, &invariant);
	CHECK(invariant <= 1e-9);
	CHECK_NEAR(r->max_violation, worst, 1e-12 * fmax(1, worst));
	for (size_t q = 0; q < ds->n_tuples; q++) {
		double sum = 0;

		for (size_t e = r->post_off[q]; e < r->post_off[q + 1]; e++)
			sum += r->post_p[e];
		CHECK_NEAR(sum, 1, 1e-9);
	}
}

/* The closed form of Theorem 5, n(q,b) n(s,b) / n(b), in every cell. */
static void closed_cells(const struct dataset *ds, const struct invariants *inv, double *y)
{
	for (size_t c = 0; c < inv->n_cells; c++) {
		size_t b = inv->cell_group[c], qi = ds->bq_off[b], si = ds->bs_off[b];

		while (ds->bq_tuple[qi] != inv->cell_tuple[c])
			qi++;
		while (ds->bs_value[si] != inv->cell_sa[c])
			si++;
		y[c] = (double)ds->bq_count[qi] * ds->bs_count[si] / ds->group_size[b];
	}
}

/* The figure's rule P(Flu | male) = 0.5, or a deterministic one, or the
 * top-12 single-attribute rules of a table of 3,000 records (the thread
 * pool's size). */
struct limit_case {
	const struct dataset *ds;
	struct knowledge k;
	struct invariants inv;
};

static void limit_case(struct limit_case *lc, const struct dataset *ds, const char *then, double p)
{
	struct pm_error err = {0};

	lc->ds = ds;
	if (!then) {
		mine_single(ds, 12, &lc->k, &lc->inv);
		return;
	}
	knowledge_init(&lc->k);
	add_rule(&lc->k, ds, "gender", "male", NULL, NULL, then, p);
	CHECK(invariants_build(ds, &lc->k, &lc->inv, &err) == PM_OK);
}

static void limit_case_finish(struct limit_case *lc)
{
	invariants_finish(&lc->inv);
	knowledge_finish(&lc->k);
}

/* With a time limit so small that the first check stops the solve (the
 * start of the zero search, for either method, deterministic rules
 * too): the closed form in every bucket, the rules' violation
 * reported. */
static void test_time_limit_first_check(const struct dataset *fig)
{
	static const char *const then[] = {"Flu", "Breast Cancer", NULL, NULL};
	struct dataset *big = bigger_table(3000, 7);

	for (int i = 0; i < 4; i++) {
		struct limit_case lc;
		struct solver_options o;
		struct solver_result r;
		struct pm_error err = {0};
		double *y;

		limit_case(&lc, i < 2 ? fig : big, then[i], i ? 0 : 0.5);
		solver_options_init(&o);
		o.time_limit = 1e-9;
		o.method = i % 2 ? SOLVER_FULL_DUAL : SOLVER_TWO_LEVEL;
		CHECK(solver_run(lc.ds, &lc.k, &lc.inv, &o, &r, &err) == PM_OK);
		check_best_point(lc.ds, &lc.inv, &r);
		CHECK(r.iterations == 0);
		CHECK(r.max_violation > 1e-3);
		y = malloc((lc.inv.n_cells + 1) * sizeof *y);
		closed_cells(lc.ds, &lc.inv, y);
		for (size_t c = 0; c < lc.inv.n_cells; c++)
			CHECK_NEAR(r.cells[c], y[c], 1e-12);
		free(y);
		solver_result_finish(&r);
		limit_case_finish(&lc);
	}
	dataset_destroy(big);
}

/* Lets the zero search's checks and the first direction's pass, then
 * sleeps past the limit at the first iteration reported: the limit stops
 * the solve there. */
struct late {
	double sleep;
	int reports;
};

static int sleep_at_first_iteration(void *ctx, const struct solver_progress *p)
{
	struct late *l = ctx;
	struct timespec ts = {0, (long)(l->sleep * 1e9)};

	if (p->iterations >= 1 && l->reports++ == 0)
		nanosleep(&ts, NULL);
	return 0;
}

/* The limit running out at the two-level solve's first iteration: its
 * iterate, consistent, and nearer the rules than the closed form. */
static void test_time_limit_iterate(const struct dataset *fig)
{
	struct dataset *big = bigger_table(3000, 7);

	for (int i = 0; i < 2; i++) {
		struct limit_case lc;
		struct late late = {.sleep = 0.25};
		struct solver_options o;
		struct solver_result r;
		struct pm_error err = {0};
		double *y, closed, invariant;

		limit_case(&lc, i ? big : fig, i ? NULL : "Flu", 0.5);
		solver_options_init(&o);
		o.time_limit = 0.2;
		o.progress = sleep_at_first_iteration;
		o.progress_ctx = &late;
		CHECK(solver_run(lc.ds, &lc.k, &lc.inv, &o, &r, &err) == PM_OK);
		check_best_point(lc.ds, &lc.inv, &r);
		CHECK(r.iterations == 1 && late.reports == 1);
		y = malloc((lc.inv.n_cells + 1) * sizeof *y);
		closed_cells(lc.ds, &lc.inv, y);
		closed = violation_of(lc.ds, &lc.inv, y, &invariant);
		CHECK(r.max_violation < 0.5 * closed);
		free(y);
		solver_result_finish(&r);
		limit_case_finish(&lc);
	}
	dataset_destroy(big);
}

/* Sleeps past the limit at the first iteration of a solve that starts
 * over (an iterate reported after a zero search that came after
 * iterates): the last report before it was the end of the last solve. */
struct restart {
	double sleep, last, first;
	int reports, searched, slept, mark;
};

static int sleep_at_restart(void *ctx, const struct solver_progress *p)
{
	struct restart *s = ctx;
	struct timespec ts = {0, (long)(s->sleep * 1e9)};

	if (p->phase == SOLVER_PHASE_ZEROS) {
		s->searched |= s->reports > 0;
		s->mark = p->iterations;
		return 0;
	}
	if (p->phase != SOLVER_PHASE_ITERATE || p->iterations <= s->mark)
		return 0; /* no new iterate */
	if (s->searched && !s->slept++) {
		s->first = p->max_violation;
		nanosleep(&ts, NULL);
	}
	s->last = s->slept ? s->last : p->max_violation;
	s->reports++;
	return 0;
}

/* A random table (seed found by search) whose solve goes deep: its first
 * probe is unclean, the zero search deepens after it, and the solve
 * starts again. Caller frees with deep_finish. */
struct deep {
	struct dataset *ds;
	struct knowledge k;
	struct invariants inv;
};

static void deep_make(struct deep *d)
{
	uint64_t rng = 0x7100000 + 27;
	struct miner_options mo;
	struct pm_error err = {0};

	d->ds = random_dataset(&rng);
	knowledge_init(&d->k);
	miner_options_init(&mo);
	mo.positive = rng_in(&rng, 0, 12);
	mo.negative = rng_in(&rng, 0, 12);
	mo.min_support = rng_in(&rng, 1, 3);
	mo.qi_attributes = rng_in(&rng, 0, d->ds->n_attrs);
	CHECK(miner_run(d->ds, &mo, &d->k, &err) == PM_OK);
	CHECK(invariants_build(d->ds, &d->k, &d->inv, &err) == PM_OK);
}

static void deep_finish(struct deep *d)
{
	invariants_finish(&d->inv);
	knowledge_finish(&d->k);
	dataset_destroy(d->ds);
}

/* A second probe starts over from mu = 0: stopped at its first iteration,
 * the answer is where the first probe ended, not that iterate. */
static void test_time_limit_restart(void)
{
	struct restart late = {.sleep = 0.25};
	struct deep d;
	struct solver_options o;
	struct solver_result r;
	struct pm_error err = {0};

	deep_make(&d);
	solver_options_init(&o);
	o.time_limit = 0.2;
	o.progress = sleep_at_restart;
	o.progress_ctx = &late;
	CHECK(solver_run(d.ds, &d.k, &d.inv, &o, &r, &err) == PM_OK);
	check_best_point(d.ds, &d.inv, &r);
	CHECK(late.slept == 1);
	/* the first probe ended at or below its last report (one more step,
	 * the one that stopped it, is not reported); the second was far */
	CHECK(r.max_violation <= late.last && r.max_violation < 0.5 * late.first);
	solver_result_finish(&r);
	deep_finish(&d);
}

/* A generous limit changes nothing: the same result, bit for bit. */
static void test_time_limit_generous(void)
{
	struct dataset *ds = bigger_table(2000, 11);
	struct knowledge k;
	struct invariants inv;
	struct pm_error err = {0};

	mine_single(ds, 10, &k, &inv);
	for (int m = 0; m < 2; m++) {
		struct solver_options o;
		struct solver_result a, b;

		solver_options_init(&o);
		o.tolerance = 1e-8;
		o.method = m ? SOLVER_FULL_DUAL : SOLVER_TWO_LEVEL;
		CHECK(solver_run(ds, &k, &inv, &o, &a, &err) == PM_OK);
		o.time_limit = 1e6;
		CHECK(solver_run(ds, &k, &inv, &o, &b, &err) == PM_OK);
		CHECK(a.status == SOLVER_CONVERGED && b.status == SOLVER_CONVERGED);
		CHECK(a.iterations == b.iterations);
		CHECK(!memcmp(a.cells, b.cells, inv.n_cells * sizeof *a.cells));
		CHECK(a.post_off[ds->n_tuples] == b.post_off[ds->n_tuples]);
		CHECK(!memcmp(a.post_p, b.post_p, a.post_off[ds->n_tuples] * sizeof *a.post_p));
		CHECK(a.max_violation == b.max_violation && a.entropy == b.entropy);
		CHECK(a.estimation_accuracy == b.estimation_accuracy);
		solver_result_finish(&a);
		solver_result_finish(&b);
	}
	invariants_finish(&inv);
	knowledge_finish(&k);
	dataset_destroy(ds);
}

/* Cancels once it has been called `after` times. */
static int cancel_after(void *ctx, const struct solver_progress *p)
{
	int *left = ctx;

	(void)p;
	return --*left < 0;
}

/* The stall (tests only) waits at the first check: a time limit shorter
 * than it ends the solve at the limit, not after the stall; a cancel
 * during it is a cancel. */
static void test_stall(const struct dataset *ds)
{
	struct knowledge k;
	struct invariants inv;
	struct solver_options o;
	struct solver_result r;
	struct pm_error err = {0};
	int left = 3;
	double t0;

	knowledge_init(&k);
	add_rule(&k, ds, "gender", "male", NULL, NULL, "Flu", 0.5);
	CHECK(invariants_build(ds, &k, &inv, &err) == PM_OK);
	solver_options_init(&o);
	o.stall = 0.3;
	o.time_limit = 0.1;
	t0 = wall();
	CHECK(solver_run(ds, &k, &inv, &o, &r, &err) == PM_OK);
	t0 = wall() - t0;
	check_best_point(ds, &inv, &r);
	CHECK(t0 >= 0.1 && r.seconds >= 0.1);
	CHECK(t0 < 0.2 && r.seconds < 0.2); /* well under the stall */
	solver_result_finish(&r);
	o.time_limit = 0;
	o.progress = cancel_after;
	o.progress_ctx = &left;
	t0 = wall();
	CHECK(solver_run(ds, &k, &inv, &o, &r, &err) == PM_ERR_CANCELLED);
	CHECK_CONTAINS(err.message, "cancelled");
	CHECK(wall() - t0 < 0.2);
	solver_result_finish(&r);
	/* no limit, no cancel: the stall passes and the solve converges */
	o.progress = NULL;
	o.stall = 0.05;
	t0 = wall();
	CHECK(solver_run(ds, &k, &inv, &o, &r, &err) == PM_OK);
	CHECK(r.status == SOLVER_CONVERGED && wall() - t0 >= 0.05);
	solver_result_finish(&r);
	invariants_finish(&inv);
	knowledge_finish(&k);
}

/* Every report of a solve, checked as it comes: iterations never go
 * back, the violation is NaN only before the first iterate, setup is
 * never the solver's; stop_phase (>= 0) cancels at the first report of
 * that phase, sleep_phase (>= 0) sleeps at each of its reports (a long
 * phase, for the time limit). */
struct phases {
	int reports[4], last_iterations, stop_phase, sleep_phase, after_stop;
	double sleep;
	enum solver_phase last;
};

static int record_phase(void *ctx, const struct solver_progress *p)
{
	struct phases *ph = ctx;
	struct timespec ts = {0, (long)(ph->sleep * 1e9)};

	CHECK(p->phase >= SOLVER_PHASE_ZEROS && p->phase <= SOLVER_PHASE_METRICS);
	CHECK(p->iterations >= ph->last_iterations);
	CHECK(!isnan(p->max_violation) || p->iterations == 0);
	ph->after_stop += ph->stop_phase >= 0 && ph->reports[ph->stop_phase] > 0;
	ph->last_iterations = p->iterations;
	ph->last = p->phase;
	ph->reports[p->phase]++;
	if ((int)p->phase == ph->sleep_phase)
		nanosleep(&ts, NULL);
	return (int)p->phase == ph->stop_phase;
}

/*
 * Progress names its phase and only moves forward, on the table whose
 * zero search goes deep (struct deep); a cancel works in each phase
 * (nothing is reported after it), and a time limit that runs out while
 * the zero search is long (each of its polls slow) ends the solve there,
 * with the best point.
 */
static void test_progress_phases(void)
{
	struct deep d;
	struct solver_options o;
	struct solver_result r;
	struct pm_error err = {0};
	struct phases ph = {.stop_phase = -1, .sleep_phase = -1};

	deep_make(&d);
	solver_options_init(&o);
	o.progress = record_phase;
	o.progress_ctx = &ph;
	CHECK(solver_run(d.ds, &d.k, &d.inv, &o, &r, &err) == PM_OK &&
	      r.status == SOLVER_CONVERGED);
	CHECK(ph.reports[SOLVER_PHASE_ZEROS] > 1 && ph.reports[SOLVER_PHASE_ITERATE] > 1);
	CHECK(ph.reports[SOLVER_PHASE_METRICS] == 1 && ph.last == SOLVER_PHASE_METRICS);
	CHECK(ph.last_iterations == r.iterations);
	solver_result_finish(&r);
	for (int stop = SOLVER_PHASE_ZEROS; stop <= SOLVER_PHASE_METRICS; stop++) {
		ph = (struct phases){.stop_phase = stop, .sleep_phase = -1};
		CHECK(solver_run(d.ds, &d.k, &d.inv, &o, &r, &err) == PM_ERR_CANCELLED);
		CHECK_CONTAINS(err.message, "cancelled");
		CHECK(ph.reports[stop] == 1 && ph.after_stop == 0);
		solver_result_finish(&r);
	}
	ph = (struct phases){.stop_phase = -1, .sleep_phase = SOLVER_PHASE_ZEROS, .sleep = 0.02};
	o.time_limit = 0.1;
	CHECK(solver_run(d.ds, &d.k, &d.inv, &o, &r, &err) == PM_OK);
	CHECK(r.status == SOLVER_NOT_CONVERGED && !strcmp(r.reason, "time_limit"));
	CHECK(r.seconds < 0.1 + 0.05 && ph.reports[SOLVER_PHASE_ITERATE] == 0);
	check_best_point(d.ds, &d.inv, &r);
	solver_result_finish(&r);
	deep_finish(&d);
}

int main(void)
{
	struct dataset *ds = load_csv("figure1.csv");

	test_no_knowledge(ds);
	test_breast_cancer(ds);
	test_deterministic(ds);
	test_conflicts(ds);
	test_limits(ds);
	test_time_limit_first_check(ds);
	test_time_limit_iterate(ds);
	test_stall(ds);
	dataset_destroy(ds);
	test_threads();
	test_pool();
	test_time_limit_generous();
	test_time_limit_restart();
	test_progress_phases();
	return check_done();
}
