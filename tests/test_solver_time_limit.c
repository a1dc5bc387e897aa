/*
 * solver_run under a time limit, and what it reports while it runs: a
 * limit so small that the first check stops the solve (the closed form),
 * one that runs out at the first iteration or at a restart (the best
 * point so far, consistent), a generous one that changes nothing; the
 * stall (tests only) against a limit and a cancel; progress naming its
 * phases in order, a cancel in each of them, and a limit that runs out in
 * a long zero search.
 */
#include <stdint.h>
#include <time.h>

#include "check.h"
#include "random_table.h"
#include "solver.h"
#include "solver_inputs.h"

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

	test_time_limit_first_check(ds);
	test_time_limit_iterate(ds);
	test_stall(ds);
	dataset_destroy(ds);
	test_time_limit_generous();
	test_time_limit_restart();
	test_progress_phases();
	return check_done();
}
