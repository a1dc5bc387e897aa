/* SPEC 4.1's privacy verdict (solver/privacy.c): the paper's Figure 1 by
 * hand, ties at the threshold and at the (c, l) boundary, and random
 * instances against a plain recomputation from the posterior; the
 * no-knowledge estimate on its own (privacy_baseline) likewise. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "privacy.h"
#include "random_table.h"

#define EXACT 1e-12

/* Figure 1 (tests/data/figure1.csv): gender, degree; disease; buckets. */
static struct dataset *figure1(void)
{
	static const char *const rows[][4] = {{"male", "college", "1", "Flu"},
					      {"male", "college", "1", "HIV"},
					      {"female", "junior", "1", "Breast Cancer"},
					      {"female", "college", "1", "Breast Cancer"},
					      {"male", "college", "2", "Lung Cancer"},
					      {"female", "college", "2", "Flu"},
					      {"male", "graduate", "3", "Flu"},
					      {"female", "graduate", "3", "Breast Cancer"}};
	static const char *const attrs[] = {"gender", "degree"};
	struct pm_error err = {0};
	struct dataset *ds = NULL;
	struct dataset_builder *b = dataset_builder_create(NULL, attrs, 2, "disease", &err);

	for (size_t i = 0; b && i < 8; i++)
		dataset_builder_add_record(b, rows[i], rows[i][2], rows[i][3], &err);
	if (b)
		dataset_builder_finish(b, &ds, &err);
	dataset_builder_destroy(b);
	return ds;
}

static int solve(const struct dataset *ds, const struct knowledge *k,
		 const struct privacy_options *po, struct solver_result *r)
{
	struct invariants inv = {0};
	struct solver_options o;
	struct pm_error err = {0};
	int st;

	solver_options_init(&o);
	o.tolerance = 1e-10;
	if (po)
		o.privacy = *po;
	st = invariants_build(ds, k, &inv, &err);
	if (!st)
		st = solver_run(ds, k, &inv, &o, r, &err);
	invariants_finish(&inv);
	return st;
}

/*
 * Figure 1 without knowledge. The estimate is the closed form: P(.|q)
 * is Flu 1/3, HIV 1/6, BC 1/3, LC 1/6 for (male, college) (2/3 in bucket
 * 1: 1/4, 1/4, 1/2; 1/3 in bucket 2: LC 1/2, Flu 1/2); (female, junior)
 * 1/4, 1/4, 1/2 (BC); (female, college) Flu 3/8, HIV 1/8, BC 1/4, LC
 * 1/4; the graduates 1/2, 1/2. P(s): Flu 3/8, HIV 1/8, BC 3/8, LC 1/8.
 *  - max_disclosure 1/2: (female, junior), BC, the first tuple to reach it;
 *  - at risk (>= 1/2): (female, junior) and both graduates: 3 of 8;
 *  - min_entropy_l: the graduates, exp(ln 2) = 2;
 *  - recursive (3, l): the graduates (1/2 < 3 * 1/2, no third value) 2;
 *    (female, college) stops at l = 3: at l = 4, 3/8 < 3 * 1/8 is a tie;
 *  - t_closeness: (female, junior) and the graduates, 1/2 of 1/2 = 1/4;
 *  - delta: (female, junior)'s HIV and (female, college)'s LC, ln 2.
 * The records: (male, college) Flu, HIV, LC 1/3 each; (female, junior)
 * BC; (female, college) BC, Flu 1/2 each; (male, graduate) Flu;
 * (female, graduate) BC.
 *  - max 1 at (female, junior); at risk: all but (male, college), with
 *    (female, college) at 1/2 exactly (a tie at the threshold counts): 5;
 *  - min_entropy_l 1; recursive l 1; t: (female, junior), BC 1 against
 *    3/8: (5/8 + 3/8 + 1/8 + 1/8) / 2 = 5/8; delta ln(8/3).
 */
static void test_figure1(void)
{
	struct dataset *ds = figure1();
	struct solver_result r = {0};
	const struct privacy_report *p = r.privacy;

	CHECK(ds && solve(ds, NULL, NULL, &r) == PM_OK);
	for (int src = PRIVACY_POSTERIOR; ds && src <= PRIVACY_BASELINE; src++) {
		p = &r.privacy[src];
		CHECK(p->has);
		CHECK_NEAR(p->max_p, 0.5, EXACT);
		CHECK_STR(dataset_tuple_value(ds, p->max_q, 1), "junior");
		CHECK_STR(ds->sa_values.str[p->max_s], "Breast Cancer");
		CHECK(p->max_count == 1 && p->at_risk == 3);
		CHECK_NEAR(p->at_risk_fraction, 3.0 / 8, EXACT);
		CHECK_NEAR(p->min_entropy_l, 2, 1e-9);
		CHECK(p->recursive_cl == 2);
		CHECK_NEAR(p->t_closeness, 0.25, 1e-9);
		CHECK_NEAR(p->delta_disclosure, log(2), 1e-9);
	}
	p = &r.privacy[PRIVACY_TRUTH];
	CHECK(p->has && p->max_p == 1 && p->at_risk == 5 && p->recursive_cl == 1);
	CHECK_STR(dataset_tuple_value(ds, p->max_q, 1), "junior");
	CHECK_NEAR(p->min_entropy_l, 1, EXACT);
	CHECK_NEAR(p->t_closeness, 5.0 / 8, EXACT);
	CHECK_NEAR(p->delta_disclosure, log(8.0 / 3), EXACT);
	solver_result_finish(&r);
	dataset_destroy(ds);
}

/* The threshold's tie: (female, college) holds BC at 1/2 in the records;
 * a threshold within 1e-9 above still counts it, 1e-8 above does not.
 * The (c, l) boundary: (female, college)'s estimate 3/8, 1/4, 1/4, 1/8
 * has l = 3 at c = 3 (3/8 < 3/8 fails) and 4 just above. */
static void test_ties(void)
{
	struct dataset *ds = figure1();
	struct solver_result r = {0};
	struct privacy_options po;
	size_t off[6] = {0, 4, 4, 4, 4, 4}; /* one tuple's distribution, the rest empty */
	uint32_t sa[4] = {0, 1, 2, 3};
	double fc[4] = {0.375, 0.25, 0.25, 0.125};
	struct privacy_report rep;

	privacy_options_init(&po);
	po.threshold = 0.5 + 5e-10;
	CHECK(solve(ds, NULL, &po, &r) == PM_OK && r.privacy[PRIVACY_TRUTH].at_risk == 5);
	solver_result_finish(&r);
	po.threshold = 0.5 + 1e-8;
	CHECK(solve(ds, NULL, &po, &r) == PM_OK && r.privacy[PRIVACY_TRUTH].at_risk == 3);
	solver_result_finish(&r);
	privacy_options_init(&po);
	CHECK(privacy_compute(ds, off, sa, fc, &po, &rep) == PM_OK);
	CHECK(rep.recursive_cl == 3);
	po.c = 3 + 1e-8; /* 3/8 < (3 + 1e-8) / 8 by more than the tie's 1e-9 */
	CHECK(privacy_compute(ds, off, sa, fc, &po, &rep) == PM_OK);
	CHECK(rep.recursive_cl == 4);
	dataset_destroy(ds);
}

/* The index of tuple (a, b) of Figure 1. */
static uint32_t fig1_tuple(const struct dataset *ds, const char *a, const char *b)
{
	uint32_t q = 0;

	while (q < ds->n_tuples && (strcmp(dataset_tuple_value(ds, q, 0), a) ||
				    strcmp(dataset_tuple_value(ds, q, 1), b)))
		q++;
	CHECK(q < ds->n_tuples);
	return q;
}

/* P(s | q) of a sparse table, 0 where it has no entry. */
static double table_p(const struct dataset *ds, const struct privacy_table *t, uint32_t q,
		      const char *s)
{
	long code = dict_find(&ds->sa_values, s);

	for (size_t e = t->off[q]; e < t->off[q + 1]; e++)
		if ((long)t->sa[e] == code)
			return t->p[e];
	return 0;
}

/* Two reports are equal, field by field (exactly). */
static int same_report(const struct privacy_report *a, const struct privacy_report *b)
{
	return a->has == b->has && a->max_p == b->max_p && a->max_q == b->max_q &&
	       a->max_s == b->max_s && a->max_count == b->max_count && a->at_risk == b->at_risk &&
	       a->at_risk_fraction == b->at_risk_fraction && a->min_entropy_l == b->min_entropy_l &&
	       a->recursive_cl == b->recursive_cl && a->t_closeness == b->t_closeness &&
	       a->delta_disclosure == b->delta_disclosure;
}

/* privacy_baseline on Figure 1 by hand (the closed form of test_figure1's
 * comment): (male, college) Flu 1/3, HIV 1/6, BC 1/3, LC 1/6, its values
 * ascending; (female, junior) BC 1/2 and nothing of LC; and its metrics
 * are the result's privacy.baseline exactly. */
static void test_baseline_figure1(void)
{
	struct dataset *ds = figure1();
	struct privacy_table t = {0};
	struct solver_result r = {0};
	struct privacy_options po;
	struct privacy_report rep;
	uint32_t mc, fj;

	CHECK(ds && privacy_baseline(ds, &t) == PM_OK);
	mc = fig1_tuple(ds, "male", "college");
	fj = fig1_tuple(ds, "female", "junior");
	CHECK_NEAR(table_p(ds, &t, mc, "Flu"), 1.0 / 3, EXACT);
	CHECK_NEAR(table_p(ds, &t, mc, "HIV"), 1.0 / 6, EXACT);
	CHECK_NEAR(table_p(ds, &t, mc, "Breast Cancer"), 1.0 / 3, EXACT);
	CHECK_NEAR(table_p(ds, &t, mc, "Lung Cancer"), 1.0 / 6, EXACT);
	CHECK(t.off[mc + 1] - t.off[mc] == 4);
	for (size_t e = t.off[mc] + 1; e < t.off[mc + 1]; e++)
		CHECK(t.sa[e - 1] < t.sa[e]);
	CHECK_NEAR(table_p(ds, &t, fj, "Breast Cancer"), 0.5, EXACT);
	CHECK(t.off[fj + 1] - t.off[fj] == 3 && table_p(ds, &t, fj, "Lung Cancer") == 0);
	CHECK(t.off[ds->n_tuples] == 4 + 3 + 4 + 2 + 2);
	privacy_options_init(&po);
	CHECK(solve(ds, NULL, &po, &r) == PM_OK);
	CHECK(privacy_compute(ds, t.off, t.sa, t.p, &po, &rep) == PM_OK);
	CHECK(same_report(&rep, &r.privacy[PRIVACY_BASELINE]));
	solver_result_finish(&r);
	privacy_table_finish(&t);
	dataset_destroy(ds);
}

/* The dense table P[q * ns + s] of a source, recomputed from the data:
 * the posterior from r, the closed form from the buckets, the records. */
static void dense(const struct dataset *ds, const struct solver_result *r, int src, double *P)
{
	size_t ns = ds->sa_values.n;

	memset(P, 0, ds->n_tuples * ns * sizeof *P);
	if (src == PRIVACY_POSTERIOR)
		for (size_t q = 0; q < ds->n_tuples; q++)
			for (size_t e = r->post_off[q]; e < r->post_off[q + 1]; e++)
				P[q * ns + r->post_sa[e]] = r->post_p[e];
	for (size_t b = 0; src == PRIVACY_BASELINE && b < ds->n_groups; b++)
		for (size_t i = ds->bq_off[b]; i < ds->bq_off[b + 1]; i++)
			for (size_t j = ds->bs_off[b]; j < ds->bs_off[b + 1]; j++)
				P[ds->bq_tuple[i] * ns + ds->bs_value[j]] +=
				    (double)ds->bq_count[i] / ds->tuple_count[ds->bq_tuple[i]] *
				    ds->bs_count[j] / ds->group_size[b];
	for (size_t i = 0; src == PRIVACY_TRUTH && i < ds->n_records; i++)
		P[ds->rec_tuple[i] * ns + ds->rec_sa[i]] += 1.0 / ds->tuple_count[ds->rec_tuple[i]];
}

/* SPEC 4.1 straight from its definitions on P, against rep. */
static double recheck(const struct dataset *ds, const double *P, const struct privacy_options *o,
		      const struct privacy_report *rep)
{
	size_t ns = ds->sa_values.n;
	double *Ps = calloc(ns, sizeof *Ps), worst = 0, maxp = 0, minl = INFINITY, t = 0, d = 0;
	double *r = malloc(ns * sizeof *r);
	long cl = -1;
	uint64_t risk = 0;

	for (size_t i = 0; i < ds->n_records; i++)
		Ps[ds->rec_sa[i]] += 1.0 / ds->n_records;
	for (size_t q = 0; q < ds->n_tuples; q++) {
		double top = 0, h = 0, tv = 0, tail = 0;
		size_t m = 0;
		long l = 0;

		for (size_t s = 0; s < ns; s++) {
			double v = P[q * ns + s];

			top = fmax(top, v);
			h -= v > 0 ? v * log(v) : 0;
			tv += fabs(v - Ps[s]);
			d = v > 0 ? fmax(d, fabs(log(v / Ps[s]))) : d;
			if (v > 0)
				r[m++] = v;
		}
		for (size_t i = 0; i < m; i++) /* selection sort, descending */
			for (size_t j = i + 1; j < m; j++)
				if (r[j] > r[i]) {
					double x = r[i];
					r[i] = r[j];
					r[j] = x;
				}
		for (size_t i = 0; i < m; i++)
			tail += r[i];
		for (size_t i = 0; i < m && r[0] < o->c * tail - 1e-9; i++) {
			l = (long)i + 1;
			tail -= r[i];
		}
		cl = cl < 0 || l < cl ? l : cl;
		maxp = fmax(maxp, top);
		risk += top >= o->threshold - 1e-9 ? ds->tuple_count[q] : 0;
		minl = fmin(minl, exp(h));
		t = fmax(t, tv / 2);
	}
	worst = fmax(worst, fabs(maxp - rep->max_p));
	worst = fmax(worst, fabs(minl - rep->min_entropy_l));
	worst = fmax(worst, fabs(t - rep->t_closeness));
	worst = fmax(worst, fabs(d - rep->delta_disclosure));
	worst = fmax(worst, (double)(risk != rep->at_risk) + (double)(cl != rep->recursive_cl));
	worst = fmax(worst, fabs(P[rep->max_q * ns + rep->max_s] - rep->max_p));
	free(Ps);
	free(r);
	return worst;
}

/* privacy_baseline against the dense closed form P, and its metrics
 * against the result's privacy.baseline (the same arithmetic: exactly). */
static double recheck_baseline(const struct dataset *ds, const double *P,
			       const struct privacy_options *o, const struct privacy_report *rep)
{
	size_t ns = ds->sa_values.n, n = 0;
	struct privacy_table t = {0};
	struct privacy_report got;
	double worst = 0;

	CHECK(privacy_baseline(ds, &t) == PM_OK);
	for (size_t q = 0; q < ds->n_tuples; q++) {
		for (size_t e = t.off[q]; e < t.off[q + 1]; e++)
			worst = fmax(worst, fabs(t.p[e] - P[q * ns + t.sa[e]]));
		for (size_t s = 0; s < ns; s++)
			n += P[q * ns + s] > 0;
	}
	worst = fmax(worst, (double)(n != t.off[ds->n_tuples]));
	CHECK(privacy_compute(ds, t.off, t.sa, t.p, o, &got) == PM_OK);
	worst = fmax(worst, (double)!same_report(&got, rep));
	privacy_table_finish(&t);
	return worst;
}

/* Random tables with mined knowledge (some vague): each source's metrics
 * against the plain recomputation, at random thresholds and c. */
static void test_random(void)
{
	double worst = 0;
	int n = 0;

	for (uint64_t seed = 1; seed <= 100; seed++) {
		uint64_t rng = seed * 48271;
		struct dataset *ds = random_dataset(&rng);
		struct knowledge k;
		struct miner_options mo;
		struct privacy_options po;
		struct solver_result r = {0};
		struct pm_error err = {0};
		double *P = malloc(ds->n_tuples * ds->sa_values.n * sizeof *P);

		knowledge_init(&k);
		miner_options_init(&mo);
		mo.positive = rng_in(&rng, 0, 4);
		mo.negative = rng_in(&rng, 0, 4);
		mo.min_support = 1;
		mo.vagueness = seed % 3 ? 0 : 0.1;
		CHECK(miner_run(ds, &mo, &k, &err) == PM_OK);
		privacy_options_init(&po);
		po.threshold = (double)rng_in(&rng, 1, 10) / 10;
		po.c = (double)rng_in(&rng, 1, 8) / 2;
		if (solve(ds, &k, &po, &r) == PM_OK)
			for (int src = PRIVACY_POSTERIOR; src < PRIVACY_SOURCES; src++, n++) {
				dense(ds, &r, src, P);
				worst = fmax(worst, recheck(ds, P, &po, &r.privacy[src]));
				if (src == PRIVACY_BASELINE)
					worst = fmax(worst,
						     recheck_baseline(ds, P, &po, &r.privacy[src]));
			}
		solver_result_finish(&r);
		knowledge_finish(&k);
		dataset_destroy(ds);
		free(P);
	}
	printf("privacy: %d reports against the definitions, worst %.3g\n", n, worst);
	CHECK(n > 250 && worst <= 1e-12);
}

int main(void)
{
	test_figure1();
	test_ties();
	test_baseline_figure1();
	test_random();
	return check_done();
}
