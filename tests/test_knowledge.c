/* knowledge.c: user rules (resolution and every input error), matching,
 * n(Qv) counting, descriptions and the growable array. */
#include "check.h"
#include "constraints.h"

/* age, sex, zip -> disease; 6 records in 2 buckets. */
static struct dataset *make_dataset(void)
{
	static const char *const attrs[] = {"age", "sex", "zip"};
	static const char *const rows[][5] = {
	    {"30", "Male", "100", "1", "Flu"},	{"30", "Female", "100", "1", "Breast Cancer"},
	    {"40", "Male", "200", "1", "Flu"},	{"40", "Female", "200", "2", "Cold"},
	    {"30", "Male", "200", "2", "Cold"}, {"30", "Male", "100", "2", "Flu"},
	};
	struct pm_error err = {0};
	struct dataset_builder *b = dataset_builder_create("k", attrs, 3, "disease", &err);
	struct dataset *ds = NULL;

	CHECK(b != NULL);
	if (!b)
		return NULL;
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
		CHECK(dataset_builder_add_record(b, rows[i], rows[i][3], rows[i][4], &err) ==
		      PM_OK);
	CHECK(dataset_builder_finish(b, &ds, &err) == PM_OK);
	dataset_builder_destroy(b);
	return ds;
}

/* Adds one equality rule; returns the status, err filled. */
static enum pm_status add(struct knowledge *k, const struct dataset *ds, const char *a1,
			  const char *v1, const char *a2, const char *v2, const char *sa, double p,
			  struct pm_error *err)
{
	const char *attrs[2] = {a1, a2}, *values[2] = {v1, v2};
	size_t n = a2 ? 2 : a1 ? 1 : 0;

	memset(err, 0, sizeof *err);
	return knowledge_add_user(k, ds, attrs, values, n, sa, 1, p, 0, 0, 0, 0, "rules[3]", err);
}

static void check_error(enum pm_status st, const struct pm_error *err, const char *field,
			const char *message)
{
	CHECK(st == PM_ERR_INPUT);
	CHECK(err->status == PM_ERR_INPUT);
	CHECK_STR(err->field, field);
	CHECK_STR(err->message, message);
}

static void test_errors(const struct dataset *ds)
{
	struct knowledge k;
	struct pm_error err;
	enum pm_status st;
	const char *a[1] = {"sex"}, *v[1] = {"Male"};

	knowledge_init(&k);
	st = add(&k, ds, "gender", "Male", NULL, NULL, "Flu", 0.5, &err);
	check_error(st, &err, "rules[3].if.gender", "unknown QI attribute \"gender\"");
	st = add(&k, ds, "disease", "Flu", NULL, NULL, "Flu", 0.5, &err);
	check_error(st, &err, "rules[3].if.disease", "unknown QI attribute \"disease\"");
	st = add(&k, ds, "sex", "X", NULL, NULL, "Flu", 0.5, &err);
	check_error(st, &err, "rules[3].if.sex", "value \"X\" does not occur in the data");
	st = add(&k, ds, "age", "30", "zip", "999", "Flu", 0.5, &err);
	check_error(st, &err, "rules[3].if.zip", "value \"999\" does not occur in the data");
	st = add(&k, ds, "sex", "Male", "sex", "Female", "Flu", 0.5, &err);
	check_error(st, &err, "rules[3].if.sex", "attribute \"sex\" is given more than once");
	/* SPEC 3.1: each value occurs, never together: P(. | if) is undefined */
	st = add(&k, ds, "age", "40", "zip", "100", "Flu", 0.5, &err);
	check_error(st, &err, "rules[3].if",
		    "matches no record of the data (no record has all these values together), so "
		    "no probability is defined given it");
	st = add(&k, ds, "sex", "Male", NULL, NULL, "Flux", 0.5, &err);
	check_error(st, &err, "rules[3].then",
		    "unknown sensitive value \"Flux\"; did you mean \"Flu\"?");
	st = add(&k, ds, "sex", "Male", NULL, NULL, "flu", 0.5, &err);
	check_error(st, &err, "rules[3].then",
		    "unknown sensitive value \"flu\"; did you mean \"Flu\"?");
	st = add(&k, ds, "sex", "Male", NULL, NULL, "Flu", 1.5, &err);
	check_error(st, &err, "rules[3].probability", "1.5 is outside the limit [0, 1]");
	st = add(&k, ds, "sex", "Male", NULL, NULL, "Flu", -0.25, &err);
	check_error(st, &err, "rules[3].probability", "-0.25 is outside the limit [0, 1]");
	st = add(&k, ds, "sex", "Male", NULL, NULL, "Flu", NAN, &err);
	check_error(st, &err, "rules[3].probability",
		    "must be a finite number within [0, 1], got nan");
	st = add(&k, ds, "sex", "Male", NULL, NULL, "Flu", INFINITY, &err);
	check_error(st, &err, "rules[3].probability",
		    "must be a finite number within [0, 1], got inf");

	memset(&err, 0, sizeof err);
	st = knowledge_add_user(&k, ds, a, v, 1, "Flu", 0, 0, 0, 0, 0, 0, "rules[3]", &err);
	check_error(st, &err, "rules[3]", "needs \"probability\" (or \"min\" and/or \"max\")");
	memset(&err, 0, sizeof err);
	st = knowledge_add_user(&k, ds, a, v, 1, "Flu", 1, 0.2, 0, 0, 1, 0.3, "rules[3]", &err);
	check_error(st, &err, "rules[3].max",
		    "cannot go with \"probability\": give the probability, or \"min\" and/or "
		    "\"max\"");
	memset(&err, 0, sizeof err);
	st = knowledge_add_user(&k, ds, a, v, 1, "Flu", 0, 0, 1, 0.4, 1, 0.3, "rules[3]", &err);
	check_error(st, &err, "rules[3]", "\"min\" (0.4) is above \"max\" (0.3)");
	memset(&err, 0, sizeof err);
	st = knowledge_add_user(&k, ds, a, v, 1, "Flu", 0, 0, 1, -0.1, 0, 0, "rules[3]", &err);
	check_error(st, &err, "rules[3].min", "-0.1 is outside the limit [0, 1]");
	memset(&err, 0, sizeof err);
	st = knowledge_add_user(&k, ds, a, v, 1, "Flu", 0, 0, 0, 0, 1, NAN, "rules[3]", &err);
	check_error(st, &err, "rules[3].max", "must be a finite number within [0, 1], got nan");
	memset(&err, 0, sizeof err);
	st = knowledge_add_user(&k, ds, a, v, 1, NULL, 1, 0.2, 0, 0, 0, 0, "rules[3]", &err);
	check_error(st, &err, "rules[3]", "needs \"then\"");
	/* an empty field prefix gives field names without a leading dot */
	memset(&err, 0, sizeof err);
	st = knowledge_add_user(&k, ds, a, v, 1, "Flu", 1, 2, 0, 0, 0, 0, "", &err);
	check_error(st, &err, "probability", "2 is outside the limit [0, 1]");
	CHECK(k.n == 0); /* nothing appended by a failed rule */
	/* an interval: min and/or max, the other side 0 or 1 */
	CHECK(knowledge_add_user(&k, ds, a, v, 1, "Flu", 0, 0, 1, 0.1, 1, 0.3, "r", &err) == PM_OK);
	CHECK(knowledge_add_user(&k, ds, a, v, 1, "Flu", 0, 0, 1, 0.1, 0, 0, "r", &err) == PM_OK);
	CHECK(knowledge_add_user(&k, ds, a, v, 1, "Flu", 0, 0, 0, 0, 1, 0.3, "r", &err) == PM_OK);
	CHECK(k.n == 3 && k.rules[0].lo == 0.1 && k.rules[0].hi == 0.3);
	CHECK(k.rules[1].lo == 0.1 && k.rules[1].hi == 1 && k.rules[2].lo == 0 &&
	      k.rules[2].hi == 0.3);
	knowledge_finish(&k);
}

/* Unknown names and values get a "did you mean" (error_suggest) and are
 * quoted at most 64 bytes long. */
static void test_suggestions(const struct dataset *ds)
{
	struct knowledge k;
	struct pm_error err;
	enum pm_status st;
	char big[1000];

	knowledge_init(&k);
	st = add(&k, ds, "sx", "Male", NULL, NULL, "Flu", 0.5, &err);
	check_error(st, &err, "rules[3].if.sx",
		    "unknown QI attribute \"sx\"; did you mean \"sex\"?");
	st = add(&k, ds, "sex", "male", NULL, NULL, "Flu", 0.5, &err);
	check_error(st, &err, "rules[3].if.sex",
		    "value \"male\" does not occur in the data; did you mean \"Male\"?");
	/* numbers get none: 31 is no typo of 30 */
	st = add(&k, ds, "age", "31", NULL, NULL, "Flu", 0.5, &err);
	check_error(st, &err, "rules[3].if.age", "value \"31\" does not occur in the data");
	memset(big, 'q', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	st = add(&k, ds, big, "Male", NULL, NULL, "Flu", 0.5, &err);
	CHECK(st == PM_ERR_INPUT && strlen(err.field) == strlen("rules[3].if.") + 64 + 3);
	CHECK(strlen(err.message) == strlen("unknown QI attribute \"\"") + 64 + 3);
	st = add(&k, ds, "sex", big, NULL, NULL, "Flu", 0.5, &err);
	CHECK(st == PM_ERR_INPUT && strlen(err.message) < 120);
	st = add(&k, ds, "sex", "Male", NULL, NULL, big, 0.5, &err);
	CHECK(st == PM_ERR_INPUT && strlen(err.message) < 120);
	CHECK(k.n == 0);
	knowledge_finish(&k);
}

static void test_add_and_count(const struct dataset *ds)
{
	struct knowledge k;
	struct pm_error err;
	const struct rule *r;

	knowledge_init(&k);
	/* terms given out of attribute order are stored sorted */
	CHECK(add(&k, ds, "sex", "Male", "age", "30", "Flu", 0.25, &err) == PM_OK);
	CHECK(add(&k, ds, NULL, NULL, NULL, NULL, "Flu", 0.5, &err) == PM_OK);
	CHECK(add(&k, ds, "sex", "Male", NULL, NULL, "Breast Cancer", 0, &err) == PM_OK);
	CHECK(add(&k, ds, "zip", "200", NULL, NULL, "Cold", 1, &err) == PM_OK);
	CHECK(k.n == 4);
	if (k.n != 4)
		goto out;
	r = &k.rules[0];
	CHECK(r->n_terms == 2);
	CHECK(r->attr[0] == 0 && r->attr[1] == 1);
	CHECK_STR(ds->attr_values[0].str[r->value[0]], "30");
	CHECK_STR(ds->attr_values[1].str[r->value[1]], "Male");
	CHECK_STR(ds->sa_values.str[r->sa], "Flu");
	CHECK(r->lo == 0.25 && r->hi == 0.25);
	CHECK(r->source == RULE_USER);
	CHECK(r->n_qv == 3); /* records 1, 5, 6 */
	CHECK(r->n_qv_s == 0 && r->support == 0);
	CHECK(k.rules[1].n_terms == 0);
	CHECK(k.rules[1].n_qv == 6);
	CHECK(k.rules[2].n_qv == 4);
	CHECK(k.rules[3].n_qv == 3);
	CHECK(knowledge_count_qv(ds, &k.rules[2]) == 4);
out:
	knowledge_finish(&k);
	CHECK(k.n == 0 && k.rules == NULL);
	knowledge_finish(&k); /* twice is harmless */
	knowledge_finish(NULL);
}

static void test_matches(const struct dataset *ds)
{
	struct rule r;
	size_t hits = 0;

	memset(&r, 0, sizeof r);
	for (size_t q = 0; q < ds->n_tuples; q++)
		CHECK(knowledge_matches(ds, &r, (uint32_t)q)); /* empty antecedent */
	r.n_terms = 2;
	r.attr[0] = 0;
	r.value[0] = (uint32_t)dict_find(&ds->attr_values[0], "30");
	r.attr[1] = 2;
	r.value[1] = (uint32_t)dict_find(&ds->attr_values[2], "100");
	for (size_t q = 0; q < ds->n_tuples; q++) {
		int m = knowledge_matches(ds, &r, (uint32_t)q);
		int want = strcmp(dataset_tuple_value(ds, (uint32_t)q, 0), "30") == 0 &&
			   strcmp(dataset_tuple_value(ds, (uint32_t)q, 2), "100") == 0;

		CHECK(m == want);
		hits += (size_t)m;
	}
	CHECK(hits == 2);			/* (30,Male,100) and (30,Female,100) */
	CHECK(knowledge_count_qv(ds, &r) == 3); /* (30,Male,100) occurs twice */
}

static void test_describe(const struct dataset *ds)
{
	struct knowledge k;
	struct pm_error err;
	struct rule r;
	char buf[256], small[12];

	knowledge_init(&k);
	CHECK(add(&k, ds, "sex", "Male", NULL, NULL, "Breast Cancer", 0, &err) == PM_OK);
	CHECK(add(&k, ds, NULL, NULL, NULL, NULL, "Flu", 0.5, &err) == PM_OK);
	CHECK(add(&k, ds, "zip", "100", "age", "30", "Flu", 0.1, &err) == PM_OK);
	CHECK(add(&k, ds, "zip", "100", NULL, NULL, "Flu", 1.0 / 3, &err) == PM_OK);
	if (k.n != 4)
		goto out;
	knowledge_describe(ds, &k.rules[0], buf, sizeof buf);
	CHECK_STR(buf, "P(Breast Cancer | sex=Male) = 0");
	knowledge_describe(ds, &k.rules[1], buf, sizeof buf);
	CHECK_STR(buf, "P(Flu) = 0.5");
	knowledge_describe(ds, &k.rules[2], buf, sizeof buf);
	CHECK_STR(buf, "P(Flu | age=30, zip=100) = 0.1");
	knowledge_describe(ds, &k.rules[3], buf, sizeof buf);
	CHECK_STR(buf, "P(Flu | zip=100) = 0.3333333333333333");
	r = k.rules[2];
	r.lo = 0.1;
	r.hi = 0.3;
	knowledge_describe(ds, &r, buf, sizeof buf);
	CHECK_STR(buf, "P(Flu | age=30, zip=100) in [0.1, 0.3]");
	r.hi = 1;
	knowledge_describe(ds, &r, buf, sizeof buf);
	CHECK_STR(buf, "P(Flu | age=30, zip=100) in [0.1, 1]");
	/* truncated, still terminated */
	knowledge_describe(ds, &k.rules[0], small, sizeof small);
	CHECK_STR(small, "P(Breast Ca");
out:
	knowledge_finish(&k);
}

static void test_append_growth(void)
{
	struct knowledge k;
	struct pm_error err = {0};
	struct rule r;
	int ok = 1;

	knowledge_init(&k);
	memset(&r, 0, sizeof r);
	for (uint32_t i = 0; i < 1000; i++) {
		r.sa = i;
		ok &= knowledge_append(&k, &r, &err) == PM_OK;
	}
	CHECK(ok);
	CHECK(k.n == 1000 && k.cap >= 1000);
	for (uint32_t i = 0; i < k.n; i++)
		ok &= k.rules[i].sa == i;
	CHECK(ok);
	knowledge_finish(&k);
}

/* Published form: n(Qv) is counted on the QIT rows. */
static void test_published(void)
{
	static const char *const attrs[] = {"sex"};
	static const char *const m[] = {"Male"}, *const f[] = {"Female"};
	struct pm_error err = {0};
	struct dataset_builder *b = dataset_builder_create(NULL, attrs, 1, "disease", &err);
	struct dataset *ds = NULL;
	struct knowledge k;
	enum pm_status st;

	knowledge_init(&k);
	if (!b)
		goto out;
	CHECK(dataset_builder_add_qit(b, m, "1", &err) == PM_OK);
	CHECK(dataset_builder_add_qit(b, m, "1", &err) == PM_OK);
	CHECK(dataset_builder_add_qit(b, f, "1", &err) == PM_OK);
	CHECK(dataset_builder_add_st(b, "1", "Flu", 2, &err) == PM_OK);
	CHECK(dataset_builder_add_st(b, "1", "Cold", 1, &err) == PM_OK);
	CHECK(dataset_builder_finish(b, &ds, &err) == PM_OK);
	if (!ds)
		goto out;
	st = add(&k, ds, "sex", "Male", NULL, NULL, "Cold", 0.5, &err);
	CHECK(st == PM_OK);
	CHECK(k.n == 1 && k.rules[0].n_qv == 2);
	st = add(&k, ds, "sex", "Male", NULL, NULL, "Measles", 0.5, &err);
	check_error(st, &err, "rules[3].then", "unknown sensitive value \"Measles\"");
out:
	knowledge_finish(&k);
	dataset_destroy(ds);
	dataset_builder_destroy(b);
}

int main(void)
{
	struct dataset *ds = make_dataset();

	if (ds) {
		test_errors(ds);
		test_suggestions(ds);
		test_add_and_count(ds);
		test_matches(ds);
		test_describe(ds);
	}
	test_append_growth();
	test_published();
	dataset_destroy(ds);
	return check_done();
}
