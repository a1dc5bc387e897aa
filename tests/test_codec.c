/*
 * JSON codec: every input error (data-driven from tests/data/codec_bad.txt;
 * the limits too large for a file here), both dataset forms, numbers as
 * values, the output documents and their round trips. The pipeline that
 * runs them has its own tests (test_pipeline.c).
 */
#include <dirent.h>
#include <jansson.h>

#include "check.h"
#include "random_table.h"
#include "test_data.h"

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
	struct dataset *small = data_dataset("codec_small.json");
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
		j = data_json(file);
		CHECK(run_bad_case(file, j, small, &err) == PM_ERR_INPUT);
		if (strcmp(err.field, field) != 0 || !strstr(err.message, msg))
			fprintf(stderr, "case %s: got %s: %s\n", file, err.field, err.message);
		CHECK_STR(err.field, field);
		CHECK_CONTAINS(err.message, msg);
		json_decref(j);
		cases++;
	}
	CHECK(cases >= 99);
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
	     "rules[0].probability", "1.5 is outside the limit [0, 1]"},
	    {"{\"rules\": [{\"if\": {\"sex\": \"M\"}, \"then\": \"flu\"}]}", "rules[0]",
	     "needs \"probability\""},
	};
	struct dataset *ds = data_dataset("codec_small.json");

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

/* A knowledge document with n rules (P(flu | sex=M) = 0.5 each). */
static json_t *many_rules(size_t n)
{
	json_t *rules = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(rules, json_pack("{s:{s:s}, s:s, s:f}", "if", "sex", "M",
						       "then", "flu", "probability", 0.5));
	return json_pack("{s:o}", "rules", rules);
}

/* MAX_RULES user rules are fine, one more is refused before any is read. */
static void test_rules_limit(void)
{
	struct dataset *ds = data_dataset("codec_small.json");
	struct pm_error err = {0};
	struct miner_options mine;
	struct knowledge k;
	int has_mine;
	json_t *j = many_rules(100000);

	knowledge_init(&k);
	CHECK(codec_knowledge(j, ds, &k, &mine, &has_mine, &err) == PM_OK);
	CHECK(k.n == 100000);
	knowledge_finish(&k);
	json_array_append_new(json_object_get(j, "rules"), json_integer(0));
	CHECK(codec_knowledge(j, ds, &k, &mine, &has_mine, &err) == PM_ERR_INPUT);
	CHECK_STR(err.field, "rules");
	CHECK_STR(err.message, "has 100001 rules; at most 100000 are allowed");
	CHECK(k.n == 0);
	knowledge_finish(&k);
	json_decref(j);
	dataset_destroy(ds);
}

/* The largest K is accepted (the miner finds what exists). */
static void test_mine_limit_itself(void)
{
	struct dataset *ds = data_dataset("codec_small.json");
	struct pm_error err = {0};
	struct miner_options m;
	struct knowledge k;
	int has_mine;
	json_t *j = json_loads("{\"mine\": {\"positive\": 100000, \"negative\": 100000}}", 0, NULL);

	knowledge_init(&k);
	CHECK(codec_knowledge(j, ds, &k, &m, &has_mine, &err) == PM_OK);
	CHECK(m.positive == 100000 && m.negative == 100000);
	knowledge_finish(&k);
	json_decref(j);
	dataset_destroy(ds);
}

/* 100 KB of user text in a key, an attribute, a value: the field and the
 * message quote at most 64 bytes of it. */
static void test_messages_are_short(void)
{
	static const char *const docs[] = {
	    "{\"mine\": {\"%s\": 1}}",
	    "{\"rules\": [{\"if\": {\"%s\": \"M\"}, \"then\": \"flu\", \"probability\": 0}]}",
	    "{\"rules\": [{\"if\": {\"sex\": \"%s\"}, \"then\": \"flu\", \"probability\": 0}]}",
	    "{\"statements\": [{\"terms\": [{\"person\": \"%s\", \"then\": \"flu\"}], \"value\": "
	    "0}]}",
	    "{\"statements\": [{\"terms\": [{\"if\": {}, \"then\": [\"flu\", \"%s\"]}], \"min\": "
	    "0}]}",
	    "{\"individuals\": [{\"name\": \"a\", \"qi\": [\"young\", \"F\"], \"group\": \"%s\"}]}",
	};
	struct dataset *ds = data_dataset("codec_small.json");
	size_t n = 100000;
	char *big = malloc(n + 1), *doc = malloc(n + 128);

	memset(big, 'z', n);
	big[n] = '\0';
	for (size_t i = 0; ds && i < sizeof docs / sizeof docs[0]; i++) {
		struct pm_error err = {0};
		struct miner_options m;
		struct knowledge k;
		int has_mine;
		json_t *j;

		snprintf(doc, n + 128, docs[i], big);
		j = json_loads(doc, 0, NULL);
		knowledge_init(&k);
		CHECK(codec_knowledge(j, ds, &k, &m, &has_mine, &err) == PM_ERR_INPUT);
		CHECK(strlen(err.field) < 100 && strlen(err.message) < 200);
		CHECK_CONTAINS(i == 0 ? err.field : err.message, "zzz...");
		knowledge_finish(&k);
		json_decref(j);
	}
	free(big);
	free(doc);
	dataset_destroy(ds);
}

/* ---- datasets in -------------------------------------------------------- */

static void test_records_form(void)
{
	struct dataset *ds = data_dataset("codec_small.json");

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
	struct dataset *r = data_dataset("codec_small.json");
	struct dataset *p = data_dataset("codec_published.json");

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
	struct dataset *ds = data_dataset("codec_numbers.json");

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
	struct dataset *ds = data_dataset(name), *again = NULL;
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
	ds = data_dataset("codec_numbers.json");
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

/* codec_dataset_print writes what the tree dumps, byte for byte. */
static void check_printed(const struct dataset *ds, const char *what)
{
	struct pm_error err = {0};
	json_t *j = codec_dataset_json(ds);
	char *want = j ? json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(17)) : NULL,
	     *got = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&got, &n);
	int same;

	CHECK(want != NULL && f != NULL);
	if (!want || !f)
		goto out;
	CHECK(codec_dataset_print(ds, f, &err) == PM_OK);
	fclose(f);
	f = NULL;
	same = got && n == strlen(want) + 1 && !memcmp(got, want, n - 1) && got[n - 1] == '\n';
	CHECK(same);
	if (!same)
		fprintf(stderr, "codec_dataset_print differs on %s:\n%s\n--- want:\n%s\n", what,
			got ? got : "(null)", want);
out:
	if (f)
		fclose(f);
	free(got);
	free(want);
	json_decref(j);
}

/* Strings that need escapes (quotes, a newline, a control character,
 * non-ASCII) in the name, the attributes and the values. */
static void test_dataset_print_escapes(void)
{
	static const char *const attrs[] = {"a \"b\"", "line\nbreak"};
	static const char *const rows[][4] = {{"x\ty", "\xc3\xa9", "1", "s \"1\""},
					      {"\x01", "/", "1", "s\\2"},
					      {"x\ty", "z", "2", "s \"1\""},
					      {"w", "z", "2", "s\\2"}};
	struct pm_error err = {0};
	struct dataset *ds = NULL;
	struct dataset_builder *b = dataset_builder_create("n \"m\"\n", attrs, 2, "s\x7f", &err);

	CHECK(b != NULL);
	for (size_t i = 0; b && i < 4; i++)
		CHECK(dataset_builder_add_record(b, rows[i], rows[i][2], rows[i][3], &err) ==
		      PM_OK);
	if (b && dataset_builder_finish(b, &ds, &err) == PM_OK)
		check_printed(ds, "escapes");
	CHECK(ds != NULL);
	dataset_destroy(ds);
	dataset_builder_destroy(b);
}

/* Every dataset of tests/data that reads, both forms; random tables; names
 * and values that need escapes. */
static void test_dataset_print(void)
{
	DIR *d = opendir(data_dir());
	struct dirent *e;
	uint64_t rng = 7;
	int n = 0;

	while (d && (e = readdir(d))) {
		struct pm_error err = {0};
		struct dataset *ds = NULL;
		size_t len = strlen(e->d_name);
		char path[1024];
		json_t *j;

		if (len < 5 || strcmp(e->d_name + len - 5, ".json"))
			continue;
		snprintf(path, sizeof path, "%s/%s", data_dir(), e->d_name);
		j = json_load_file(path, 0, NULL);
		if (j && codec_dataset(j, &ds, &err) == PM_OK) {
			check_printed(ds, e->d_name);
			n++;
		}
		json_decref(j);
		dataset_destroy(ds);
	}
	if (d)
		closedir(d);
	CHECK(n >= 10);
	for (int i = 0; i < 40; i++) {
		struct dataset *ds = random_dataset(&rng);

		if (ds)
			check_printed(ds, "a random table");
		dataset_destroy(ds);
	}
	test_dataset_print_escapes();
}

/* ---- knowledge and options ---------------------------------------------- */

static void test_solver_options(void)
{
	struct pm_error err = {0};
	struct solver_options o, d;
	json_t *j = json_loads("{\"tolerance\": 0.001, \"max_iterations\": 50, \"time_limit\": 60}",
			       0, NULL);

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
	struct dataset *ds = data_dataset("codec_small.json");
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
	struct dataset *ds = data_dataset("codec_small.json");
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
	struct dataset *ds = data_dataset("codec_small.json");
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
	struct dataset *ds = data_dataset("codec_small.json");
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
	j = codec_result(ds, &k, &r, &t, NULL);
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
	CHECK(json_object_size(c) == 4 && json_object_get(c, "privacy"));
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
	j = codec_result(ds, NULL, &r, NULL, NULL);
	CHECK_STR(json_string_value(json_object_get(j, "status")), "converged");
	CHECK(json_object_get(j, "reason") == NULL);
	CHECK(json_is_null(json_object_get(j, "estimation_accuracy")));
	CHECK(json_is_false(json_object_get(j, "estimation_accuracy_infinite")));
	CHECK(json_is_null(json_object_get(j, "baseline_accuracy")));
	CHECK(json_array_size(json_object_get(j, "rules")) == 0);
	/* no statements or people: no such keys */
	CHECK(!json_object_get(j, "statements") && !json_object_get(j, "individuals"));
	json_decref(j);
	knowledge_finish(&k);
	dataset_destroy(ds);
}

/* asked/found of one kind in a result's "mined". */
static json_int_t mined(const json_t *result, const char *kind, const char *key)
{
	return json_integer_value(
	    json_object_get(json_object_get(json_object_get(result, "mined"), kind), key));
}

/* "mined" as codec_result writes it: asked and found per kind. */
static void test_result_mined(void)
{
	struct dataset *ds = data_dataset("codec_small.json");
	struct codec_mined m = {.asked = {.positive = 50, .negative = 7},
				.found = {.positive = 12, .negative = 7}};
	struct solver_result r;
	json_t *j;

	if (!ds)
		return;
	memset(&r, 0, sizeof r);
	r.status = SOLVER_CONVERGED;
	j = codec_result(ds, NULL, &r, NULL, &m);
	CHECK(json_object_size(json_object_get(j, "mined")) == 2);
	CHECK(mined(j, "positive", "asked") == 50 && mined(j, "positive", "found") == 12);
	CHECK(mined(j, "negative", "asked") == 7 && mined(j, "negative", "found") == 7);
	CHECK(json_object_size(json_object_get(json_object_get(j, "mined"), "negative")) == 2);
	json_decref(j);
	dataset_destroy(ds);
}

/* codec_result_posterior's page against the same entries of the whole
 * text parsed, serialized alike. */
static int same_page(const char *text, size_t from, size_t limit)
{
	json_t *whole = json_loads(text, 0, NULL), *items = NULL, *want = json_array();
	json_t *post = json_object_get(whole, "posterior");
	size_t total = 0;
	char *a = NULL, *b = NULL;
	int ok;

	for (size_t i = from; i < json_array_size(post) && i - from < limit; i++)
		json_array_append(want, json_array_get(post, i));
	ok = !codec_result_posterior(text, strlen(text), from, limit, &items, &total) &&
	     total == json_array_size(post) && (a = json_dumps(items, JSON_COMPACT)) &&
	     (b = json_dumps(want, JSON_COMPACT)) && !strcmp(a, b);
	free(a);
	free(b);
	json_decref(items);
	json_decref(want);
	json_decref(whole);
	return ok;
}

/* A page of a stored posterior without parsing the rest: strings with
 * brackets, quotes and escapes, a nested "posterior" key, spacing. */
static void test_result_posterior(void)
{
	const char *text =
	    "{\"rules\": [{\"if\": {\"a]\\\"}{\": \"[\"}, \"posterior\": 1}],"
	    " \"posterior_x\": [0], \"posterior\" : [ {\"qi\": [\"m\", \"}\"], \"count\": 3,"
	    " \"p\": {\"Flu\": 0.5, \"HIV\": 0.5}} , {\"qi\": [\"f\", \"\\u00e9\"],"
	    " \"count\": 1, \"p\": {\"Flu\": 1e-300}}, {\"qi\": [], \"count\": 2, \"p\": {}} ]\n}";
	const char *bad[] = {"",
			     "[]",
			     "{\"posterior\": 3}",
			     "{\"posterior\": [{}, ]}",
			     "{\"posterior\": [{\"a\": \"]}",
			     "{\"posterior\": [{} {}]}",
			     "{\"rules\": [}"};
	json_t *items = NULL;
	size_t total = 9;

	CHECK(same_page(text, 0, 50));
	CHECK(same_page(text, 1, 1));
	CHECK(same_page(text, 2, 5));
	CHECK(same_page(text, 3, 5));
	CHECK(same_page(text, 7, 5));
	CHECK(same_page("{\"posterior\":[]}", 0, 50));
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		CHECK(codec_result_posterior(bad[i], strlen(bad[i]), 0, 50, &items, &total) ==
		      PM_ERR_INPUT);
		CHECK(!items);
	}
}

static void test_results(void)
{
	test_result_shape();
	test_result_mined();
	test_result_posterior();
}

int main(void)
{
	test_bad_inputs();
	test_rules_limit();
	test_mine_limit_itself();
	test_messages_are_short();
	test_knowledge_content_errors();
	test_records_form();
	test_published_form();
	test_numbers_as_values();
	test_dataset_json();
	test_dataset_print();
	test_solver_options();
	test_mine_block();
	test_rule_json();
	test_knowledge_round_trip();
	test_results();
	return check_done();
}
