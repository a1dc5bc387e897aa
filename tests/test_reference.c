/*
 * The independent reference solver (reference.h) on hand-solved cases:
 * the closed form of Theorem 5, a zero and a fractional rule, a
 * deterministic bucket, inconsistent and unsupported input; then its
 * interval rules against its own equalities on random tables. solver_run
 * against the reference is in test_reference_solver.c.
 */
#include "check.h"
#include "random_table.h"
#include "reference.h"

#define SEED UINT64_C(20080609)

/* ---- helpers ------------------------------------------------------------ */

static long find_code(const struct dict *d, const char *s)
{
	for (size_t i = 0; i < d->n; i++)
		if (strcmp(d->str[i], s) == 0)
			return (long)i;
	return -1;
}

/* Index of the tuple with the given values, or -1. */
static long find_tuple(const struct dataset *ds, const char *const *qi)
{
	for (size_t q = 0; q < ds->n_tuples; q++) {
		size_t a = 0;
		while (a < ds->n_attrs && (long)ds->tuples[q * ds->n_attrs + a] ==
					      find_code(&ds->attr_values[a], qi[a]))
			a++;
		if (a == ds->n_attrs)
			return (long)q;
	}
	return -1;
}

/* Records form from rows {qi[0], ..., qi[n_attrs-1], group, sa}. */
static struct dataset *build(const char *const *attrs, size_t n_attrs, const char *const *rows,
			     size_t n_rows)
{
	struct pm_error err = {0};
	struct dataset *ds = NULL;
	struct dataset_builder *b = dataset_builder_create("test", attrs, n_attrs, "sa", &err);
	CHECK(b != NULL);
	if (!b)
		return NULL;
	for (size_t i = 0; i < n_rows; i++) {
		const char *const *row = rows + i * (n_attrs + 2);
		CHECK(dataset_builder_add_record(b, row, row[n_attrs], row[n_attrs + 1], &err) ==
		      PM_OK);
	}
	CHECK(dataset_builder_finish(b, &ds, &err) == PM_OK);
	if (!ds)
		fprintf(stderr, "build: %s: %s\n", err.field, err.message);
	dataset_builder_destroy(b);
	return ds;
}

/* An equality rule P(sa | attr = value) = p, single term. */
static struct rule make_rule(const struct dataset *ds, const char *const *attrs,
			     const char *const *values, size_t n_terms, const char *sa, double p)
{
	struct rule r;
	memset(&r, 0, sizeof(r));
	r.n_terms = (uint32_t)n_terms;
	for (size_t t = 0; t < n_terms; t++) {
		long a = -1;
		for (size_t i = 0; i < ds->n_attrs; i++)
			if (strcmp(ds->attr_names[i], attrs[t]) == 0)
				a = (long)i;
		CHECK(a >= 0);
		r.attr[t] = (uint32_t)a;
		r.value[t] = (uint32_t)find_code(&ds->attr_values[a], values[t]);
	}
	r.sa = (uint32_t)find_code(&ds->sa_values, sa);
	r.lo = r.hi = p;
	r.source = RULE_USER;
	return r;
}

/* P*(sa | qi) out of a reference posterior. */
static double post_of(const struct dataset *ds, const double *post, const char *const *qi,
		      const char *sa)
{
	long q = find_tuple(ds, qi), s = find_code(&ds->sa_values, sa);
	CHECK(q >= 0 && s >= 0);
	if (q < 0 || s < 0)
		return NAN;
	return post[(size_t)q * ds->sa_values.n + (size_t)s];
}

/* y of (qi, sa, bucket b) in the reference system. */
static double y_of(const struct dataset *ds, const struct reference_system *sys,
		   const char *const *qi, const char *sa, size_t b)
{
	long q = find_tuple(ds, qi), s = find_code(&ds->sa_values, sa);
	CHECK(q >= 0 && s >= 0);
	if (q < 0 || s < 0)
		return NAN;
	return reference_cell(sys, (size_t)q, (size_t)s, b);
}

/* ---- hand-solved cases -------------------------------------------------- */

static const char *const sex_degree[] = {"sex", "degree"};
static const char *const F_c[] = {"F", "college"}, *const M_c[] = {"M", "college"},
			 *const M_j[] = {"M", "junior"}, *const F_j[] = {"F", "junior"};

/* -sum x ln x of the closed form of the next test, x = y / 7. */
static double closed_entropy(void)
{
	static const double nq[] = {2, 2, 1}, ns[] = {3, 1, 1};
	double h = 4 * -(0.5 / 7 * log(0.5 / 7)); /* bucket 2: four cells of 1/2 */
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++)
			h -= nq[i] * ns[j] / 5 / 7 * log(nq[i] * ns[j] / 5 / 7);
	return h;
}

/* (a) No knowledge: y = n(q,b) n(s,b) / n(b) in every bucket (Theorem 5). */
static void test_closed_form_by_hand(void)
{
	static const char *const rows[] = {
	    "F", "college", "1", "Flu",	   "M", "college", "1", "Flu",	   "M", "college",
	    "1", "BC",	    "M", "junior", "1", "HIV",	   "F", "college", "1", "Flu",
	    "M", "junior",  "2", "Flu",	   "F", "junior",  "2", "BC",
	};
	struct dataset *ds = build(sex_degree, 2, rows, 7);
	struct reference_system sys;
	double *post;
	if (!ds)
		return;
	post = calloc(ds->n_tuples * ds->sa_values.n, sizeof(*post));
	CHECK(reference_solve(ds, NULL, post, &sys) == REFERENCE_OK);
	CHECK(sys.n_cells == 3 * 3 + 2 * 2);
	CHECK(sys.n_forced == 0);
	CHECK_NEAR(y_of(ds, &sys, F_c, "Flu", 0), 2.0 * 3 / 5, 1e-12);
	CHECK_NEAR(y_of(ds, &sys, M_c, "BC", 0), 2.0 * 1 / 5, 1e-12);
	CHECK_NEAR(y_of(ds, &sys, M_j, "HIV", 0), 1.0 * 1 / 5, 1e-12);
	CHECK_NEAR(y_of(ds, &sys, M_j, "Flu", 1), 0.5, 1e-12);
	CHECK_NEAR(y_of(ds, &sys, F_j, "Flu", 0), 0.0, 0.0);
	CHECK_NEAR(post_of(ds, post, M_j, "Flu"), (0.6 + 0.5) / 2, 1e-12);
	CHECK_NEAR(post_of(ds, post, M_j, "BC"), (0.2 + 0.5) / 2, 1e-12);
	CHECK_NEAR(post_of(ds, post, M_j, "HIV"), 0.2 / 2, 1e-12);
	CHECK_NEAR(post_of(ds, post, F_c, "Flu"), 0.6, 1e-12);
	CHECK_NEAR(post_of(ds, post, F_j, "BC"), 0.5, 1e-12);
	CHECK_NEAR(post_of(ds, post, F_j, "HIV"), 0.0, 0.0);
	CHECK_NEAR(reference_entropy(&sys), closed_entropy(), 1e-12);
	reference_free(&sys);
	free(post);
	dataset_destroy(ds);
}

/*
 * (b) One bucket of three records, P(A | sex=F) = 0. Row and column sums
 * are 1 with y(F,A) = 0; swapping the two M tuples, or B and C, maps the
 * constraints onto themselves, so the unique maximum is symmetric:
 * y(F,B) = y(F,C) = 1/2, y(M*,A) = 1/2, y(M*,B) = y(M*,C) = 1/4.
 */
static void test_zero_rule_by_hand(void)
{
	static const char *const rows[] = {
	    "F", "college", "1", "B", "M", "college", "1", "A", "M", "junior", "1", "C",
	};
	static const char *const attr[] = {"sex"}, *const val[] = {"F"};
	struct dataset *ds = build(sex_degree, 2, rows, 3);
	struct reference_system sys;
	struct rule rule;
	struct knowledge k = {.n = 1, .cap = 1, .rules = &rule};
	double post[3 * 3];
	if (!ds)
		return;
	rule = make_rule(ds, attr, val, 1, "A", 0.0);
	CHECK(reference_solve(ds, &k, post, &sys) == REFERENCE_OK);
	CHECK(sys.n_cells == 9);
	CHECK(sys.n_forced == 1);
	CHECK_NEAR(y_of(ds, &sys, F_c, "A", 0), 0.0, 0.0);
	CHECK_NEAR(post_of(ds, post, F_c, "A"), 0.0, 0.0);
	CHECK_NEAR(post_of(ds, post, F_c, "B"), 0.5, 1e-10);
	CHECK_NEAR(post_of(ds, post, F_c, "C"), 0.5, 1e-10);
	CHECK_NEAR(post_of(ds, post, M_c, "A"), 0.5, 1e-10);
	CHECK_NEAR(post_of(ds, post, M_c, "B"), 0.25, 1e-10);
	CHECK_NEAR(post_of(ds, post, M_j, "C"), 0.25, 1e-10);
	CHECK_NEAR(post_of(ds, post, M_j, "A"), 0.5, 1e-10);
	CHECK(sys.max_violation <= REFERENCE_TOL * 3);
	reference_free(&sys);
	dataset_destroy(ds);
}

/*
 * Two mirrored buckets and P(A | sex=F) = 1/4, so the rule row is
 * y(F,A,1) + y(F,A,2) = 1/2. Swapping the buckets is a symmetry, hence
 * y(F,A,b) = 1/4 in both and the rest follows from the invariants.
 */
static void test_fractional_rule_by_hand(void)
{
	static const char *const rows[] = {
	    "F", "college", "1", "A", "M", "college", "1", "B",
	    "F", "college", "2", "B", "M", "college", "2", "A",
	};
	static const char *const attr[] = {"sex"}, *const val[] = {"F"};
	struct dataset *ds = build(sex_degree, 2, rows, 4);
	struct reference_system sys;
	struct rule rule;
	struct knowledge k = {.n = 1, .cap = 1, .rules = &rule};
	double post[2 * 2];
	if (!ds)
		return;
	rule = make_rule(ds, attr, val, 1, "A", 0.25);
	CHECK(reference_solve(ds, &k, post, &sys) == REFERENCE_OK);
	CHECK(sys.n_cells == 8 && sys.n_forced == 0);
	for (size_t b = 0; b < 2; b++) {
		CHECK_NEAR(y_of(ds, &sys, F_c, "A", b), 0.25, 1e-10);
		CHECK_NEAR(y_of(ds, &sys, F_c, "B", b), 0.75, 1e-10);
		CHECK_NEAR(y_of(ds, &sys, M_c, "A", b), 0.75, 1e-10);
		CHECK_NEAR(y_of(ds, &sys, M_c, "B", b), 0.25, 1e-10);
	}
	CHECK_NEAR(post_of(ds, post, F_c, "A"), 0.25, 1e-10);
	CHECK_NEAR(post_of(ds, post, M_c, "A"), 0.75, 1e-10);
	reference_free(&sys);
	dataset_destroy(ds);
}

/* The deterministic bucket: q1 x2, q2, q3 and s1 x2, s2, s3. */
static const char *const det_rows[] = {
    "x", "1", "1", "s1", "x", "1", "1", "s1", "x", "2", "1", "s2", "y", "1", "1", "s3",
};
static const char *const xy[] = {"a", "b"};
static const char *const q1[] = {"x", "1"}, *const q2[] = {"x", "2"}, *const q3[] = {"y", "1"};

/*
 * (c) P(s1|q2) = P(s1|q3) = P(s2|q3) = 0 leave one assignment: q3 -> s3,
 * so q2 -> s2 and q1 -> s1 twice. The LP must find all six zeros, three of
 * which no rule names.
 */
static void test_deterministic(void)
{
	struct dataset *ds = build(xy, 2, det_rows, 4);
	struct reference_system sys;
	struct rule rules[3];
	struct knowledge k = {.n = 3, .cap = 3, .rules = rules};
	double post[3 * 3];
	if (!ds)
		return;
	rules[0] = make_rule(ds, xy, q2, 2, "s1", 0.0);
	rules[1] = make_rule(ds, xy, q3, 2, "s1", 0.0);
	rules[2] = make_rule(ds, xy, q3, 2, "s2", 0.0);
	CHECK(reference_solve(ds, &k, post, &sys) == REFERENCE_OK);
	CHECK(sys.n_cells == 9);
	CHECK(sys.n_forced == 6);
	CHECK_NEAR(y_of(ds, &sys, q1, "s1", 0), 2.0, 1e-12);
	CHECK_NEAR(y_of(ds, &sys, q2, "s2", 0), 1.0, 1e-12);
	CHECK_NEAR(y_of(ds, &sys, q3, "s3", 0), 1.0, 1e-12);
	CHECK_NEAR(y_of(ds, &sys, q1, "s2", 0), 0.0, 0.0);
	CHECK_NEAR(y_of(ds, &sys, q2, "s3", 0), 0.0, 0.0);
	CHECK_NEAR(post_of(ds, post, q1, "s1"), 1.0, 1e-12);
	CHECK_NEAR(post_of(ds, post, q1, "s3"), 0.0, 0.0);
	CHECK_NEAR(post_of(ds, post, q2, "s2"), 1.0, 1e-12);
	CHECK_NEAR(post_of(ds, post, q3, "s3"), 1.0, 1e-12);
	CHECK_NEAR(reference_entropy(&sys), -(0.5 * log(0.5) + 2 * 0.25 * log(0.25)), 1e-12);
	reference_free(&sys);
	dataset_destroy(ds);
}

/* s1 x2 with P(s1|q1) = P(s1|q2) = 0 leaves only q3 (one record): no
 * assignment exists; nor does one with P(s1|q2) at most 0.5 beside
 * P(s1|q1) = 0 (q3's one record would take 1.5 s1). The published form
 * is refused (no records). */
static void test_inconsistent_and_unsupported(void)
{
	struct dataset *ds = build(xy, 2, det_rows, 4);
	struct rule rules[2];
	struct knowledge k = {.n = 2, .cap = 2, .rules = rules};
	double post[3 * 3];
	if (!ds)
		return;
	rules[0] = make_rule(ds, xy, q1, 2, "s1", 0.0);
	rules[1] = make_rule(ds, xy, q2, 2, "s1", 0.0);
	fprintf(stderr, "(the next reference_solve message is expected)\n");
	CHECK(reference_solve(ds, &k, post, NULL) == REFERENCE_INCONSISTENT);
	rules[1].lo = 0.0, rules[1].hi = 0.5;
	fprintf(stderr, "(the next reference_solve message is expected)\n");
	CHECK(reference_solve(ds, &k, post, NULL) == REFERENCE_INCONSISTENT);
	ds->has_ground_truth = 0;
	fprintf(stderr, "(the next reference_solve message is expected)\n");
	CHECK(reference_solve(ds, &k, post, NULL) == REFERENCE_UNSUPPORTED);
	ds->has_ground_truth = 1;
	dataset_destroy(ds);
}

/* The reference's posterior for one rule r (NULL: none) on ds. */
static void one_rule(const struct dataset *ds, const struct rule *r, double *post)
{
	struct rule copy;
	struct knowledge k = {.n = 0, .cap = 1, .rules = &copy};
	if (r)
		copy = *r, k.n = 1;
	CHECK(reference_solve(ds, &k, post, NULL) == REFERENCE_OK);
}

static double max_diff(const double *a, const double *b, size_t n)
{
	double d = 0.0;
	for (size_t i = 0; i < n; i++)
		d = fmax(d, fabs(a[i] - b[i]));
	return d;
}

/*
 * Interval rules in the reference, against its own equalities, on random
 * tables with a rule on a tuple's first attribute value and a recorded
 * SA value: min = max = c is probability: c; an interval that holds the
 * no-knowledge P0 changes nothing; c halfway to the records' own P (both
 * feasible, so c is too) gives probability: c from [0, c] when c < P0 and
 * from [c, 1] when c > P0.
 */
static void test_intervals(void)
{
	int bound_sides[2] = {0, 0};
	for (uint64_t i = 0; i < 40; i++) {
		uint64_t rng = SEED * 3000017 + i;
		struct dataset *ds = random_dataset(&rng);
		size_t n = ds->n_tuples * ds->sa_values.n, q = rng_in(&rng, 0, ds->n_tuples - 1);
		double *p0 = calloc(n + 1, sizeof(*p0)), *pa = calloc(n + 1, sizeof(*pa));
		double *pb = calloc(n + 1, sizeof(*pb)), p, c;
		struct rule r;
		memset(&r, 0, sizeof(r));
		r.n_terms = 1;
		r.attr[0] = 0;
		r.value[0] = ds->tuples[q * ds->n_attrs];
		r.sa = ds->rec_sa[rng_in(&rng, 0, ds->n_records - 1)];
		r.source = RULE_USER;
		one_rule(ds, NULL, p0);
		/* P0(s | a0 = v) over the matching tuples, and the records' own */
		{
			double num = 0.0, den = 0.0, own = 0.0;
			for (size_t t = 0; t < ds->n_tuples; t++)
				if (ds->tuples[t * ds->n_attrs] == r.value[0]) {
					num += p0[t * ds->sa_values.n + r.sa] * ds->tuple_count[t];
					den += ds->tuple_count[t];
				}
			for (size_t j = 0; j < ds->n_records; j++)
				own += ds->tuples[ds->rec_tuple[j] * ds->n_attrs] == r.value[0] &&
				       ds->rec_sa[j] == r.sa;
			p = num / den;
			c = 0.5 * (p + own / den);
		}
		r.lo = r.hi = c;
		one_rule(ds, &r, pa);
		r.lo = c, r.hi = c;
		one_rule(ds, &r, pb);
		CHECK(max_diff(pa, pb, n) == 0.0);
		r.lo = fmax(0.0, p - 0.1), r.hi = fmin(1.0, p + 0.1);
		one_rule(ds, &r, pb);
		CHECK_NEAR(max_diff(p0, pb, n), 0.0, 1e-10);
		if (fabs(c - p) > 1e-3) {
			r.lo = c < p ? 0.0 : c, r.hi = c < p ? c : 1.0;
			one_rule(ds, &r, pb);
			CHECK_NEAR(max_diff(pa, pb, n), 0.0, 1e-10);
			bound_sides[c > p]++;
		}
		free(p0);
		free(pa);
		free(pb);
		dataset_destroy(ds);
	}
	CHECK(bound_sides[0] >= 5 && bound_sides[1] >= 5); /* both sides tried */
}

int main(void)
{
	test_closed_form_by_hand();
	test_zero_rule_by_hand();
	test_fractional_rule_by_hand();
	test_deterministic();
	test_inconsistent_and_unsupported();
	test_intervals();
	return check_done();
}
