/*
 * JSON codec and pipeline: every input error (data-driven from
 * tests/data/codec_bad.txt), both dataset forms, numbers as values, the
 * output documents and their round trips, and a solved case checked against
 * the closed form of Theorem 5.
 */
#include <jansson.h>

#include "check.h"
#include "server.h"

static const char *data_dir(void)
{
	const char *d = getenv("PMAXENT_TEST_DATA");

	return d ? d : "tests/data";
}

static json_t *load(const char *name)
{
	char path[1024];
	json_error_t je;
	json_t *j;

	snprintf(path, sizeof path, "%s/%s", data_dir(), name);
	j = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		fprintf(stderr, "cannot load %s: %s\n", path, je.text);
	CHECK(j != NULL);
	return j;
}

static struct dataset *load_dataset(const char *name)
{
	struct pm_error err = {0};
	struct dataset *ds = NULL;
	json_t *j = load(name);

	CHECK(codec_dataset(j, &ds, &err) == PM_OK);
	if (!ds)
		fprintf(stderr, "%s: %s: %s\n", name, err.field, err.message);
	json_decref(j);
	return ds;
}

/* ---- input errors ------------------------------------------------------- */

/* Runs the codec the file name selects; returns its status. */
static enum pm_status run_bad_case(const char *file, const json_t *j, const struct dataset *small,
				   struct pm_error *err)
{
	struct dataset *ds = NULL;
	struct knowledge k;
	struct miner_options mine;
	struct solver_options o;
	enum pm_status st;
	int has_mine = 0;

	if (strncmp(file, "codec_bad_ds_", 13) == 0) {
		st = codec_dataset(j, &ds, err);
		CHECK(ds == NULL);
		dataset_destroy(ds);
		return st;
	}
	if (strncmp(file, "codec_bad_kn_", 13) == 0) {
		knowledge_init(&k);
		st = codec_knowledge(j, small, &k, &mine, &has_mine, err);
		knowledge_finish(&k);
		return st;
	}
	solver_options_init(&o);
	return codec_solver_options(j, &o, err);
}

static void test_bad_inputs(void)
{
	char path[1024], line[1024];
	struct dataset *small = load_dataset("codec_small.json");
	FILE *f;
	int cases = 0;

	snprintf(path, sizeof path, "%s/codec_bad.txt", data_dir());
	f = fopen(path, "r");
	CHECK(f != NULL);
	while (f && small && fgets(line, sizeof line, f)) {
		char *file = strtok(line, "\t\n"), *field = strtok(NULL, "\t\n");
		char *msg = strtok(NULL, "\t\n");
		struct pm_error err = {0};
		json_t *j;

		if (!file || file[0] == '#')
			continue;
		/* an empty field makes strtok skip it: "" then message */
		if (!msg) {
			msg = field;
			field = "";
		}
		j = load(file);
		CHECK(run_bad_case(file, j, small, &err) == PM_ERR_INPUT);
		if (strcmp(err.field, field) != 0 || !strstr(err.message, msg))
			fprintf(stderr, "case %s: got %s: %s\n", file, err.field, err.message);
		CHECK_STR(err.field, field);
		CHECK_CONTAINS(err.message, msg);
		json_decref(j);
		cases++;
	}
	CHECK(cases >= 60);
	if (f)
		fclose(f);
	dataset_destroy(small);
}

/* Content errors come from knowledge_add_user under the rule's field. */
static void test_knowledge_content_errors(void)
{
	static const struct {
		const char *json, *field, *msg;
	} cases[] = {
	    {"{\"rules\": [{\"if\": {\"height\": \"tall\"}, \"then\": \"flu\", \"probability\": "
	     "0.5}]}",
	     "rules[0].if.height", "unknown QI attribute"},
	    {"{\"rules\": [{\"if\": {\"sex\": \"X\"}, \"then\": \"flu\", \"probability\": 0.5}]}",
	     "rules[0].if.sex", "does not occur in the data"},
	    {"{\"rules\": [{\"if\": {\"sex\": \"M\"}, \"then\": \"gout\", \"probability\": 0.5}]}",
	     "rules[0].then", "unknown sensitive value"},
	    {"{\"rules\": [{\"if\": {\"sex\": \"M\"}, \"then\": \"flu\", \"probability\": 1.5}]}",
	     "rules[0].probability", "must be between 0 and 1"},
	    {"{\"rules\": [{\"if\": {\"sex\": \"M\"}, \"then\": \"flu\"}]}", "rules[0]",
	     "needs \"probability\""},
	};
	struct dataset *ds = load_dataset("codec_small.json");

	for (size_t i = 0; ds && i < sizeof cases / sizeof cases[0]; i++) {
		struct pm_error err = {0};
		struct knowledge k;
		struct miner_options mine;
		int has_mine;
		json_t *j = json_loads(cases[i].json, 0, NULL);

		knowledge_init(&k);
		CHECK(codec_knowledge(j, ds, &k, &mine, &has_mine, &err) == PM_ERR_INPUT);
		CHECK_STR(err.field, cases[i].field);
		CHECK_CONTAINS(err.message, cases[i].msg);
		knowledge_finish(&k);
		json_decref(j);
	}
	dataset_destroy(ds);
}

/* ---- datasets in -------------------------------------------------------- */

static void test_records_form(void)
{
	struct dataset *ds = load_dataset("codec_small.json");

	if (!ds)
		return;
	CHECK_STR(ds->name, "small");
	CHECK(ds->has_ground_truth);
	CHECK(ds->n_attrs == 2);
	CHECK_STR(ds->attr_names[1], "sex");
	CHECK_STR(ds->sa_name, "disease");
	CHECK(ds->n_records == 11);
	CHECK(ds->n_groups == 3);
	CHECK(ds->n_tuples == 4);
	CHECK(ds->sa_values.n == 3);
	CHECK_STR(ds->group_labels[2], "3");
	CHECK_STR(dataset_tuple_value(ds, 1, 0), "old");
	dataset_destroy(ds);
}

/* The published form of the same table gives the same buckets. */
static void test_published_form(void)
{
	struct dataset *r = load_dataset("codec_small.json");
	struct dataset *p = load_dataset("codec_published.json");

	if (!r || !p)
		goto out;
	CHECK(!p->has_ground_truth);
	CHECK(p->n_records == r->n_records && p->n_groups == r->n_groups);
	CHECK(p->n_tuples == r->n_tuples);
	for (size_t b = 0; b < r->n_groups; b++) {
		CHECK(p->bq_off[b + 1] == r->bq_off[b + 1] && p->bs_off[b + 1] == r->bs_off[b + 1]);
		CHECK(p->group_size[b] == r->group_size[b]);
	}
	for (size_t i = 0; i < r->bs_off[r->n_groups]; i++)
		CHECK(p->bs_value[i] == r->bs_value[i] && p->bs_count[i] == r->bs_count[i]);
	for (size_t i = 0; i < r->bq_off[r->n_groups]; i++)
		CHECK(p->bq_tuple[i] == r->bq_tuple[i] && p->bq_count[i] == r->bq_count[i]);
out:
	dataset_destroy(r);
	dataset_destroy(p);
}

/* Numbers are values compared as their JSON text: 39 == "39", 7 == "7". */
static void test_numbers_as_values(void)
{
	struct dataset *ds = load_dataset("codec_numbers.json");

	if (!ds)
		return;
	CHECK(ds->n_records == 4);
	CHECK(ds->n_tuples == 3);
	CHECK(ds->tuple_count[0] == 2);
	CHECK(ds->n_groups == 2);
	CHECK_STR(ds->group_labels[0], "7");
	CHECK(ds->sa_values.n == 3);
	CHECK(dict_find(&ds->sa_values, "50000") >= 0);
	CHECK(dict_find(&ds->sa_values, "2.5") >= 0);
	CHECK_STR(dataset_tuple_value(ds, 0, 0), "39");
	CHECK_STR(dataset_tuple_value(ds, 0, 1), "13053");
	CHECK_STR(dataset_tuple_value(ds, 1, 0), "0.1");
	CHECK_STR(dataset_tuple_value(ds, 1, 1), "100");
	CHECK_STR(dataset_tuple_value(ds, 2, 0), "-4");
	CHECK_STR(dataset_tuple_value(ds, 2, 1), "1.5e+300");
	dataset_destroy(ds);
}

/* ---- datasets out ------------------------------------------------------- */

static void check_dataset_round_trip(const char *name, const char *rows_key)
{
	struct pm_error err = {0};
	struct dataset *ds = load_dataset(name), *again = NULL;
	json_t *j, *j2 = NULL, *row;

	if (!ds)
		return;
	j = codec_dataset_json(ds);
	CHECK(j != NULL);
	CHECK(json_array_size(json_object_get(j, rows_key)) == 11);
	row = json_array_get(json_object_get(j, rows_key), 0);
	/* decimal group labels are written as integers */
	CHECK(json_is_integer(json_object_get(row, "group")));
	CHECK(json_integer_value(json_object_get(row, "group")) == 1);
	CHECK(codec_dataset(j, &again, &err) == PM_OK);
	if (again) {
		CHECK(again->n_records == ds->n_records && again->n_tuples == ds->n_tuples);
		j2 = codec_dataset_json(again);
		CHECK(json_equal(j, j2));
	}
	json_decref(j);
	json_decref(j2);
	dataset_destroy(again);
	dataset_destroy(ds);
}

static void test_dataset_json(void)
{
	struct dataset *ds;
	json_t *j;

	check_dataset_round_trip("codec_small.json", "records");
	check_dataset_round_trip("codec_published.json", "qit");
	ds = load_dataset("codec_numbers.json");
	if (!ds)
		return;
	j = codec_dataset_json(ds);
	CHECK(json_array_size(json_object_get(j, "qi_attributes")) == 2);
	CHECK_STR(json_string_value(json_object_get(j, "sa_attribute")), "income");
	CHECK(json_object_get(j, "name") == NULL);
	CHECK(json_is_integer(
	    json_object_get(json_array_get(json_object_get(j, "records"), 0), "group")));
	json_decref(j);
	dataset_destroy(ds);
}

/* ---- knowledge and options ---------------------------------------------- */

static void test_solver_options(void)
{
	struct pm_error err = {0};
	struct solver_options o, d;
	json_t *j = json_loads("{\"tolerance\": 0.001, \"max_iterations\": 50, \"x\": 1}", 0, NULL);

	solver_options_init(&d);
	solver_options_init(&o);
	CHECK(codec_solver_options(NULL, &o, &err) == PM_OK);
	CHECK(o.tolerance == d.tolerance && o.max_iterations == d.max_iterations);
	CHECK(codec_solver_options(j, &o, &err) == PM_OK);
	CHECK(o.tolerance == 0.001);
	CHECK(o.max_iterations == 50);
	json_decref(j);
}

static void test_mine_block(void)
{
	struct pm_error err = {0};
	struct dataset *ds = load_dataset("codec_small.json");
	struct miner_options m;
	struct knowledge k;
	int has_mine = 0;
	json_t *j = json_loads("{\"mine\": {\"positive\": 5, \"negative\": 2, "
			       "\"qi_attributes\": 1}}",
			       0, NULL);

	knowledge_init(&k);
	CHECK(codec_knowledge(j, ds, &k, &m, &has_mine, &err) == PM_OK);
	CHECK(has_mine == 1);
	CHECK(k.n == 0);
	CHECK(m.positive == 5 && m.negative == 2 && m.qi_attributes == 1);
	CHECK(m.min_support == 3);
	has_mine = 7;
	CHECK(codec_knowledge(NULL, ds, &k, &m, &has_mine, &err) == PM_OK);
	CHECK(has_mine == 0);
	knowledge_finish(&k);
	json_decref(j);
	dataset_destroy(ds);
}

static struct rule make_rule(const struct dataset *ds, const char *attr, const char *value,
			     const char *sa, double p)
{
	struct rule r;
	long a = dataset_attr_index(ds, attr);

	memset(&r, 0, sizeof r);
	r.n_terms = 1;
	r.attr[0] = (uint32_t)a;
	r.value[0] = (uint32_t)dict_find(&ds->attr_values[a], value);
	r.sa = (uint32_t)dict_find(&ds->sa_values, sa);
	r.lo = r.hi = p;
	return r;
}

static void test_rule_json(void)
{
	struct dataset *ds = load_dataset("codec_small.json");
	struct rule pos, neg;
	json_t *j;

	if (!ds)
		return;
	/* positive: n(sex=M) = 5, n(sex=M, flu) = 3 */
	pos = make_rule(ds, "sex", "M", "flu", 0.6);
	pos.source = RULE_POSITIVE;
	pos.n_qv = 5;
	pos.n_qv_s = 3;
	pos.support = 3;
	j = codec_rule(ds, &pos);
	CHECK_STR(json_string_value(json_object_get(json_object_get(j, "if"), "sex")), "M");
	CHECK_STR(json_string_value(json_object_get(j, "then")), "flu");
	CHECK(json_real_value(json_object_get(j, "probability")) == 0.6);
	CHECK_STR(json_string_value(json_object_get(j, "source")), "positive");
	CHECK(json_integer_value(json_object_get(j, "support")) == 3);
	CHECK_NEAR(json_real_value(json_object_get(j, "confidence")), 0.6, 1e-15);
	CHECK(json_object_get(j, "min") == NULL);
	json_decref(j);
	/* negative Qv => not cancer: P(cancer | sex=M) = 2/5, confidence 3/5 */
	neg = make_rule(ds, "sex", "M", "cancer", 0.4);
	neg.source = RULE_NEGATIVE;
	neg.n_qv = 5;
	neg.n_qv_s = 2;
	neg.support = 3;
	j = codec_rule(ds, &neg);
	CHECK_STR(json_string_value(json_object_get(j, "source")), "negative");
	CHECK_NEAR(json_real_value(json_object_get(j, "confidence")), 0.6, 1e-15);
	CHECK(json_real_value(json_object_get(j, "probability")) == 0.4);
	json_decref(j);
	/* a range is written as min/max */
	neg.lo = 0.1;
	neg.hi = 0.3;
	neg.source = RULE_USER;
	j = codec_rule(ds, &neg);
	CHECK(json_object_get(j, "probability") == NULL);
	CHECK(json_real_value(json_object_get(j, "min")) == 0.1);
	CHECK(json_real_value(json_object_get(j, "max")) == 0.3);
	CHECK_STR(json_string_value(json_object_get(j, "source")), "user");
	CHECK(json_object_get(j, "support") == NULL);
	json_decref(j);
	dataset_destroy(ds);
}

/* User rules -> JSON -> user rules gives the same rules; the extra keys
 * "source", "support", "confidence" are accepted on input. */
static void test_knowledge_round_trip(void)
{
	struct pm_error err = {0};
	struct dataset *ds = load_dataset("codec_small.json");
	struct knowledge k, k2;
	struct miner_options m;
	int has_mine;
	json_t *j =
	    json_loads("{\"rules\": [{\"if\": {\"sex\": \"M\", \"age\": \"old\"}, \"then\": "
		       "\"cancer\", \"probability\": 0.1}, {\"if\": {\"age\": \"young\"}, "
		       "\"then\": \"flu\", \"probability\": 0.30000000000000004}]}",
		       0, NULL);
	json_t *out = NULL, *text;
	char *dump;

	knowledge_init(&k);
	knowledge_init(&k2);
	CHECK(codec_knowledge(j, ds, &k, &m, &has_mine, &err) == PM_OK);
	CHECK(k.n == 2);
	out = codec_knowledge_json(ds, &k);
	/* through text, as `pmaxent mine` output is read back by `pmaxent solve` */
	dump = json_dumps(out, JSON_REAL_PRECISION(17) | JSON_COMPACT);
	text = json_loads(dump, 0, NULL);
	free(dump);
	CHECK(codec_knowledge(text, ds, &k2, &m, &has_mine, &err) == PM_OK);
	CHECK(k2.n == 2);
	for (size_t i = 0; i < k.n && i < k2.n; i++) {
		CHECK(k.rules[i].n_terms == k2.rules[i].n_terms);
		CHECK(memcmp(k.rules[i].attr, k2.rules[i].attr, sizeof k.rules[i].attr) == 0);
		CHECK(memcmp(k.rules[i].value, k2.rules[i].value, sizeof k.rules[i].value) == 0);
		CHECK(k.rules[i].sa == k2.rules[i].sa);
		CHECK(k.rules[i].lo == k2.rules[i].lo && k.rules[i].hi == k2.rules[i].hi);
	}
	CHECK(k.rules[0].n_terms == 2);
	knowledge_finish(&k);
	knowledge_finish(&k2);
	json_decref(j);
	json_decref(out);
	json_decref(text);
	dataset_destroy(ds);
}

/* ---- results ------------------------------------------------------------ */

/* The result document of a hand-made solver result: keys and conventions. */
static void test_result_shape(void)
{
	struct dataset *ds = load_dataset("codec_small.json");
	struct knowledge k;
	struct solver_result r;
	struct codec_timings t = {0.5, 0.25, 0.125, 2};
	size_t off[5] = {0, 2, 3, 3, 4};
	uint32_t sa[4] = {0, 2, 1, 0};
	double p[4] = {0.25, 0.75, 1, 1};
	json_t *j, *c, *post;

	if (!ds)
		return;
	knowledge_init(&k);
	memset(&r, 0, sizeof r);
	r.status = SOLVER_NOT_CONVERGED;
	snprintf(r.reason, sizeof r.reason, "iteration limit reached");
	r.iterations = 42;
	r.max_violation = 0.5;
	r.seconds = 2;
	r.zeros_seconds = 0.5;
	r.metrics_seconds = 0.25;
	r.entropy = 1.25;
	r.variables = 20;
	r.qi_invariants = 9;
	r.sa_invariants = 5;
	r.zero_invariants = 16;
	r.forced_zeros = 1;
	r.has_accuracy = 1;
	r.estimation_infinite = 1;
	r.baseline_accuracy = 0.125;
	r.post_off = off;
	r.post_sa = sa;
	r.post_p = p;
	knowledge_append(&k, &(struct rule){.n_terms = 0, .sa = 1, .lo = 0.5, .hi = 0.5}, NULL);
	j = codec_result(ds, &k, &r, &t);
	CHECK_STR(json_string_value(json_object_get(j, "status")), "not_converged");
	CHECK_STR(json_string_value(json_object_get(j, "reason")), "iteration limit reached");
	CHECK(json_integer_value(json_object_get(j, "iterations")) == 42);
	CHECK(json_real_value(json_object_get(j, "max_violation")) == 0.5);
	CHECK(json_real_value(json_object_get(j, "seconds")) == 2);
	CHECK(json_real_value(json_object_get(j, "entropy")) == 1.25);
	c = json_object_get(j, "timings");
	CHECK(json_real_value(json_object_get(c, "load")) == 0.5);
	CHECK(json_real_value(json_object_get(c, "mine")) == 0.25);
	CHECK(json_real_value(json_object_get(c, "build")) == 0.125);
	CHECK(json_real_value(json_object_get(c, "solve")) == 2);
	c = json_object_get(j, "solve_phases");
	CHECK(json_object_size(c) == 3);
	CHECK(json_real_value(json_object_get(c, "forced_zeros")) == 0.5);
	CHECK(json_real_value(json_object_get(c, "iterate")) == 1.25);
	CHECK(json_real_value(json_object_get(c, "metrics")) == 0.25);
	c = json_object_get(j, "constraints");
	CHECK(json_integer_value(json_object_get(c, "variables")) == 20);
	CHECK(json_integer_value(json_object_get(c, "qi_invariants")) == 9);
	CHECK(json_integer_value(json_object_get(c, "sa_invariants")) == 5);
	CHECK(json_integer_value(json_object_get(c, "zero_invariants")) == 16);
	CHECK(json_integer_value(json_object_get(c, "knowledge")) == 0);
	CHECK(json_integer_value(json_object_get(c, "forced_zeros")) == 1);
	c = json_object_get(j, "dataset");
	CHECK_STR(json_string_value(json_object_get(c, "name")), "small");
	CHECK(json_integer_value(json_object_get(c, "records")) == 11);
	CHECK(json_integer_value(json_object_get(c, "groups")) == 3);
	CHECK(json_integer_value(json_object_get(c, "tuples")) == 4);
	CHECK(json_array_size(json_object_get(j, "rules")) == 1);
	CHECK_STR(json_string_value(
		      json_object_get(json_array_get(json_object_get(j, "rules"), 0), "then")),
		  "cold");
	CHECK(json_is_null(json_object_get(j, "estimation_accuracy")));
	CHECK(json_is_true(json_object_get(j, "estimation_accuracy_infinite")));
	CHECK(json_real_value(json_object_get(j, "baseline_accuracy")) == 0.125);
	CHECK(json_is_false(json_object_get(j, "baseline_accuracy_infinite")));
	post = json_object_get(j, "posterior");
	CHECK(json_array_size(post) == 4);
	c = json_array_get(post, 0);
	CHECK_STR(json_string_value(json_array_get(json_object_get(c, "qi"), 1)), "M");
	CHECK(json_integer_value(json_object_get(c, "count")) == 3);
	CHECK(json_object_size(json_object_get(c, "p")) == 2);
	CHECK(json_real_value(json_object_get(json_object_get(c, "p"), "cancer")) == 0.25);
	CHECK(json_real_value(json_object_get(json_object_get(c, "p"), "flu")) == 0.75);
	CHECK(json_object_size(json_object_get(json_array_get(post, 2), "p")) == 0);
	json_decref(j);
	/* converged: no "reason"; no ground truth: accuracies null, not infinite */
	r.status = SOLVER_CONVERGED;
	r.has_accuracy = 0;
	j = codec_result(ds, NULL, &r, NULL);
	CHECK_STR(json_string_value(json_object_get(j, "status")), "converged");
	CHECK(json_object_get(j, "reason") == NULL);
	CHECK(json_is_null(json_object_get(j, "estimation_accuracy")));
	CHECK(json_is_false(json_object_get(j, "estimation_accuracy_infinite")));
	CHECK(json_is_null(json_object_get(j, "baseline_accuracy")));
	CHECK(json_array_size(json_object_get(j, "rules")) == 0);
	json_decref(j);
	knowledge_finish(&k);
	dataset_destroy(ds);
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

static void test_results(void)
{
	test_result_shape();
	test_pipeline_closed_form();
	test_pipeline_knowledge();
	test_pipeline_errors();
}

int main(void)
{
	test_bad_inputs();
	test_knowledge_content_errors();
	test_records_form();
	test_published_form();
	test_numbers_as_values();
	test_dataset_json();
	test_solver_options();
	test_mine_block();
	test_rule_json();
	test_knowledge_round_trip();
	test_results();
	return check_done();
}
