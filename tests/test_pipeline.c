/*
 * The pipeline (load, mine, build, solve, result): a solved case checked
 * against the closed form of Theorem 5, knowledge that holds in the data,
 * the "mined" report of rules asked for and found, and its errors.
 */
#include <jansson.h>

#include "check.h"
#include "server.h"

static json_t *load(const char *name)
{
	const char *dir = getenv("PMAXENT_TEST_DATA");
	char path[1024];
	json_error_t je;
	json_t *j;

	snprintf(path, sizeof path, "%s/%s", dir ? dir : "tests/data", name);
	j = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		fprintf(stderr, "cannot load %s: %s\n", path, je.text);
	CHECK(j != NULL);
	return j;
}

/* The records of a records-form dataset JSON, as text keys. */
struct table {
	size_t n;
	char q[64][64], s[64][32], b[64][32];
};

static void read_table(const json_t *j, struct table *t)
{
	const json_t *recs = json_object_get(j, "records");

	t->n = json_array_size(recs) < 64 ? json_array_size(recs) : 64;
	for (size_t i = 0; i < t->n; i++) {
		const json_t *r = json_array_get(recs, i), *qi = json_object_get(r, "qi");

		snprintf(t->q[i], sizeof t->q[i], "%s|%s", json_string_value(json_array_get(qi, 0)),
			 json_string_value(json_array_get(qi, 1)));
		snprintf(t->s[i], sizeof t->s[i], "%s",
			 json_string_value(json_object_get(r, "sa")));
		snprintf(t->b[i], sizeof t->b[i], "%lld",
			 (long long)json_integer_value(json_object_get(r, "group")));
	}
}

/* n of records matching q (NULL: any), s (NULL: any) and bucket b. */
static double count(const struct table *t, const char *q, const char *s, const char *b)
{
	double n = 0;

	for (size_t i = 0; i < t->n; i++)
		n += (!q || !strcmp(t->q[i], q)) && (!s || !strcmp(t->s[i], s)) &&
		     (!b || !strcmp(t->b[i], b));
	return n;
}

/* Theorem 5: P*(s|q) = sum_b n(q,b) n(s,b) / n(b) / n(q). */
static double closed_form(const struct table *t, const char *q, const char *s)
{
	double sum = 0;

	for (size_t i = 0; i < t->n; i++) {
		int first = 1;

		for (size_t j = 0; j < i; j++)
			first &= strcmp(t->b[j], t->b[i]) != 0;
		if (first)
			sum += count(t, q, NULL, t->b[i]) * count(t, NULL, s, t->b[i]) /
			       count(t, NULL, NULL, t->b[i]);
	}
	return sum / count(t, q, NULL, NULL);
}

static void check_posterior(const json_t *post, const struct table *t)
{
	static const char *sa[] = {"cancer", "cold", "flu"};

	CHECK(json_array_size(post) == 4);
	for (size_t i = 0; i < json_array_size(post); i++) {
		const json_t *e = json_array_get(post, i), *qi = json_object_get(e, "qi");
		const json_t *p = json_object_get(e, "p");
		char q[64];
		size_t nonzero = 0;

		snprintf(q, sizeof q, "%s|%s", json_string_value(json_array_get(qi, 0)),
			 json_string_value(json_array_get(qi, 1)));
		CHECK(json_integer_value(json_object_get(e, "count")) ==
		      (json_int_t)count(t, q, NULL, NULL));
		for (size_t s = 0; s < 3; s++) {
			double want = closed_form(t, q, sa[s]);

			nonzero += want > 0;
			CHECK_NEAR(json_number_value(json_object_get(p, sa[s])), want, 1e-9);
		}
		CHECK(json_object_size(p) == nonzero);
	}
}

/* Figure-1 style table without knowledge: the closed form of Theorem 5. */
static void test_pipeline_closed_form(void)
{
	struct pm_error err = {0};
	json_t *ds = load("codec_small.json"), *out = NULL, *c;
	struct table t;

	read_table(ds, &t);
	CHECK(pipeline_run(ds, NULL, NULL, 0.5, &out, &err) == PM_OK);
	if (!out) {
		fprintf(stderr, "pipeline: %s: %s\n", err.field, err.message);
		json_decref(ds);
		return;
	}
	CHECK_STR(json_string_value(json_object_get(out, "status")), "converged");
	CHECK(json_real_value(json_object_get(out, "max_violation")) <= 1e-6);
	CHECK(json_real_value(json_object_get(json_object_get(out, "timings"), "load")) >= 0.5);
	c = json_object_get(out, "constraints");
	/* cells: buckets 1 and 2 have 3 q x 3 s, bucket 3 has 2 q x 3 s */
	CHECK(json_integer_value(json_object_get(c, "variables")) == 24);
	CHECK(json_integer_value(json_object_get(c, "zero_invariants")) == 4 * 3 * 3 - 24);
	CHECK(json_integer_value(json_object_get(c, "knowledge")) == 0);
	check_posterior(json_object_get(out, "posterior"), &t);
	/* Eq. 9 is the same estimate as Theorem 5 */
	CHECK_NEAR(json_real_value(json_object_get(out, "estimation_accuracy")),
		   json_real_value(json_object_get(out, "baseline_accuracy")), 1e-9);
	CHECK(json_real_value(json_object_get(out, "estimation_accuracy")) > 0);
	json_decref(out);
	json_decref(ds);
}

/* Knowledge that holds in the data lowers the distance to the truth. */
static void test_pipeline_knowledge(void)
{
	struct pm_error err = {0};
	json_t *ds = load("codec_small.json"), *out = NULL;
	json_t *k = json_loads("{\"rules\": [{\"if\": {\"sex\": \"F\"}, \"then\": \"flu\", "
			       "\"probability\": 0.5}], \"mine\": {\"positive\": 2, "
			       "\"negative\": 1, \"min_support\": 1}}",
			       0, NULL);

	CHECK(pipeline_run(ds, k, NULL, 0, &out, &err) == PM_OK);
	if (out) {
		const json_t *rules = json_object_get(out, "rules");

		CHECK(json_array_size(rules) == 4);
		CHECK_STR(json_string_value(json_object_get(json_array_get(rules, 0), "source")),
			  "user");
		CHECK_STR(json_string_value(json_object_get(json_array_get(rules, 1), "source")),
			  "positive");
		CHECK_STR(json_string_value(json_object_get(json_array_get(rules, 3), "source")),
			  "negative");
		CHECK(json_integer_value(
			  json_object_get(json_object_get(out, "constraints"), "knowledge")) == 4);
		CHECK(json_real_value(json_object_get(out, "estimation_accuracy")) <
		      json_real_value(json_object_get(out, "baseline_accuracy")));
	}
	json_decref(out);
	json_decref(k);
	json_decref(ds);
}

/* asked/found of one kind in a result's "mined". */
static json_int_t mined(const json_t *result, const char *kind, const char *key)
{
	return json_integer_value(
	    json_object_get(json_object_get(json_object_get(result, "mined"), kind), key));
}

/*
 * Fewer rules exist than asked for. In codec_small (11 records), with
 * min_support 3, by hand: positive young=>flu, old=>cancer, M=>flu (3);
 * negative: young (not cold, not cancer), old (all 3), M (all 3), F (all
 * 3), young M (not cancer), old M (not cold) (13).
 */
static void test_pipeline_mined(void)
{
	struct pm_error err = {0};
	json_t *ds = load("codec_small.json"), *out = NULL;
	json_t *k = json_loads("{\"mine\": {\"positive\": 50, \"negative\": 50}}", 0, NULL);
	size_t pos = 0, neg = 0;

	CHECK(pipeline_run(ds, k, NULL, 0, &out, &err) == PM_OK);
	CHECK(mined(out, "positive", "asked") == 50 && mined(out, "positive", "found") == 3);
	CHECK(mined(out, "negative", "asked") == 50 && mined(out, "negative", "found") == 13);
	for (size_t i = 0; i < json_array_size(json_object_get(out, "rules")); i++) {
		const char *src = json_string_value(
		    json_object_get(json_array_get(json_object_get(out, "rules"), i), "source"));

		pos += !strcmp(src, "positive");
		neg += !strcmp(src, "negative");
	}
	CHECK(pos == 3 && neg == 13);
	json_decref(out);
	/* a mine block asking for nothing still reports; no block, no "mined" */
	json_decref(k);
	k = json_loads("{\"mine\": {\"positive\": 0, \"negative\": 2}}", 0, NULL);
	CHECK(pipeline_run(ds, k, NULL, 0, &out, &err) == PM_OK);
	CHECK(mined(out, "positive", "asked") == 0 && mined(out, "positive", "found") == 0);
	CHECK(mined(out, "negative", "asked") == 2 && mined(out, "negative", "found") == 2);
	json_decref(out);
	CHECK(pipeline_run(ds, NULL, NULL, 0, &out, &err) == PM_OK);
	CHECK(out && json_object_get(out, "mined") == NULL);
	json_decref(out);
	json_decref(k);
	json_decref(ds);
}

static void check_pipeline_error(const char *dataset, const char *knowledge, const char *solver,
				 enum pm_status want, const char *field, const char *msg)
{
	struct pm_error err = {0};
	json_t *ds = load(dataset), *out = NULL;
	json_t *k = knowledge ? json_loads(knowledge, 0, NULL) : NULL;
	json_t *s = solver ? json_loads(solver, 0, NULL) : NULL;

	CHECK(pipeline_run(ds, k, s, 0, &out, &err) == want);
	CHECK(out == NULL);
	CHECK_STR(err.field, field);
	CHECK_CONTAINS(err.message, msg);
	json_decref(ds);
	json_decref(k);
	json_decref(s);
	json_decref(out);
}

static void test_pipeline_errors(void)
{
	check_pipeline_error("codec_bad_ds_qi_count.json", NULL, NULL, PM_ERR_INPUT,
			     "records[2].qi", "must be an array of 2 values");
	check_pipeline_error("codec_small.json", "{\"rules\": 3}", NULL, PM_ERR_INPUT, "rules",
			     "must be an array of rules");
	check_pipeline_error("codec_small.json", NULL, "{\"tolerance\": -1}", PM_ERR_INPUT,
			     "solver.tolerance", "must be a positive finite number");
	check_pipeline_error("codec_published.json", "{\"mine\": {\"positive\": 1}}", NULL,
			     PM_ERR_INPUT, "mine", "records form");
	/* P(flu|M) = 1 and P(cold|M) = 0.5 cannot both hold */
	check_pipeline_error("codec_small.json",
			     "{\"rules\": [{\"if\": {\"sex\": \"M\"}, \"then\": \"flu\", "
			     "\"probability\": 1}, {\"if\": {\"sex\": \"M\"}, \"then\": \"cold\", "
			     "\"probability\": 0.5}]}",
			     NULL, PM_ERR_INCONSISTENT, "rules", "no distribution satisfies");
}

/* A records-form table of n_attrs QI attributes (3 values each) and six
 * records: mining every antecedent size visits 2^n_attrs - 1 attribute
 * sets, about a second for 24 of them, minutes for 30. */
static struct dataset *wide(size_t n_attrs)
{
	json_t *attrs = json_array(), *recs = json_array(), *doc;
	struct dataset *ds = NULL;
	struct pm_error err = {0};
	char name[24];

	for (size_t a = 0; a < n_attrs; a++) {
		snprintf(name, sizeof name, "a%zu", a);
		json_array_append_new(attrs, json_string(name));
	}
	for (int i = 0; i < 6; i++) {
		json_t *qi = json_array();

		for (size_t a = 0; a < n_attrs; a++) {
			snprintf(name, sizeof name, "v%zu", (i * 7 + a) % 3);
			json_array_append_new(qi, json_string(name));
		}
		json_array_append_new(recs, json_pack("{s:o, s:i, s:s}", "qi", qi, "group", i / 2,
						      "sa", i % 2 ? "s1" : "s0"));
	}
	doc = json_pack("{s:o, s:s, s:o}", "qi_attributes", attrs, "sa_attribute", "s", "records",
			recs);
	CHECK(codec_dataset(doc, &ds, &err) == PM_OK);
	json_decref(doc);
	return ds;
}

static int cancel_now(void *ctx, const struct solver_progress *p)
{
	(void)ctx, (void)p;
	return 1;
}

/*
 * The time limit covers mining (exponential in the attributes): mining
 * that runs out is an input error naming the fix, within the limit; the
 * service's limit (base) is also the most the solver JSON may ask for;
 * a cancel stops mining as it does the solve.
 */
static void test_pipeline_mining_limit(void)
{
	struct dataset *ds = wide(30);
	json_t *know = json_pack("{s:{s:i, s:i, s:i}}", "mine", "positive", 5, "negative", 5,
				 "min_support", 1),
	       *solver = json_pack("{s:f}", "time_limit", 0.3),
	       *big = json_pack("{s:f}", "time_limit", 100.0), *out = NULL;
	struct pm_error err = {0};
	struct solver_options base;
	double t0 = solver_now();

	CHECK(pipeline_run_dataset(ds, know, solver, NULL, 0, &out, &err) == PM_ERR_INPUT);
	CHECK(solver_now() - t0 < 1.5);
	CHECK_STR(err.field, "mine");
	CHECK_CONTAINS(err.message, "did not finish within the time limit of 0.3 seconds");
	CHECK_CONTAINS(err.message, "mine.qi_attributes");
	solver_options_init(&base);
	base.time_limit = 0.2;
	t0 = solver_now();
	CHECK(pipeline_run_dataset(ds, know, big, &base, 0, &out, &err) == PM_ERR_INPUT);
	CHECK(solver_now() - t0 < 1.5);
	CHECK_CONTAINS(err.message, "time limit of 0.2 seconds");
	solver_options_init(&base);
	base.progress = cancel_now;
	CHECK(pipeline_run_dataset(ds, know, NULL, &base, 0, &out, &err) == PM_ERR_CANCELLED);
	CHECK(out == NULL);
	json_decref(know);
	json_decref(solver);
	json_decref(big);
	dataset_destroy(ds);
}

int main(void)
{
	test_pipeline_closed_form();
	test_pipeline_knowledge();
	test_pipeline_mined();
	test_pipeline_errors();
	test_pipeline_mining_limit();
	return check_done();
}
