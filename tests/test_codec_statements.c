/*
 * JSON codec, statements and named individuals (SPEC 3.1): the caps on
 * their numbers, the knowledge writer's round trip, and a result's
 * "statements" and "individuals". Their input errors are data-driven in
 * test_codec.c (tests/data/codec_bad.txt), the checks behind them in
 * test_statements.c.
 */
#include <jansson.h>

#include "check.h"
#include "test_data.h"

/* {"key": [n copies of element]}; consumes element. */
static json_t *list_of(const char *key, size_t n, json_t *element)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append(a, element);
	json_decref(element);
	return json_pack("{s:o}", key, a);
}

/* codec_knowledge on j against codec_small.json; *k is left filled. */
static enum pm_status read_knowledge(json_t *j, const struct dataset *ds, struct knowledge *k,
				     struct pm_error *err)
{
	struct miner_options mine;
	int has_mine;

	knowledge_finish(k);
	memset(err, 0, sizeof *err);
	return codec_knowledge(j, ds, k, &mine, &has_mine, err);
}

/* The caps on statements, individuals, terms and conditions: the largest
 * count is read, one more refused before any element is. */
static void test_statement_limits(void)
{
	struct dataset *ds = data_dataset("codec_small.json");
	struct pm_error err;
	struct knowledge k;
	json_t *j, *term = json_pack("{s:{}, s:s}", "if", "then", "flu"), *big_if = json_object();
	char key[16];

	knowledge_init(&k);
	j = list_of("statements", 100000, json_pack("{s:[O], s:i}", "terms", term, "min", 0));
	CHECK(ds && read_knowledge(j, ds, &k, &err) == PM_OK && k.n_statements == 100000);
	json_array_append_new(json_object_get(j, "statements"), json_integer(0));
	CHECK(read_knowledge(j, ds, &k, &err) == PM_ERR_INPUT);
	CHECK_STR(err.field, "statements");
	CHECK_STR(err.message, "has 100001 statements; at most 100000 are allowed");
	json_decref(j);
	j = list_of("individuals", 100001, json_integer(0));
	CHECK(read_knowledge(j, ds, &k, &err) == PM_ERR_INPUT);
	CHECK_STR(err.field, "individuals");
	CHECK_STR(err.message, "has 100001 individuals; at most 100000 are allowed");
	json_decref(j);
	j = list_of("terms", 10000, json_incref(term));
	json_object_set_new(j, "min", json_integer(0));
	j = json_pack("{s:[o]}", "statements", j);
	CHECK(read_knowledge(j, ds, &k, &err) == PM_OK && k.statements[0].n_terms == 10000);
	json_array_append_new(
	    json_object_get(json_array_get(json_object_get(j, "statements"), 0), "terms"),
	    json_integer(0));
	CHECK(read_knowledge(j, ds, &k, &err) == PM_ERR_INPUT);
	CHECK_STR(err.field, "statements[0].terms");
	CHECK_STR(err.message, "has 10001 terms; at most 10000 are allowed");
	json_decref(j);
	for (int i = 0; i < 33; i++) {
		snprintf(key, sizeof key, "a%d", i);
		json_object_set_new(big_if, key, json_string("x"));
	}
	j = json_pack("{s:[{s:[{s:o, s:s}], s:i}]}", "statements", "terms", "if", big_if, "then",
		      "flu", "min", 0);
	CHECK(read_knowledge(j, ds, &k, &err) == PM_ERR_INPUT);
	CHECK_STR(err.field, "statements[0].terms[0].if");
	CHECK_STR(err.message, "has 33 conditions, at most 32 are supported");
	json_decref(j);
	json_decref(term);
	knowledge_finish(&k);
	dataset_destroy(ds);
}

/* Statements and named people of SPEC 3.1 on codec_small.json: alice
 * (young, F: bucket 2 only), bob (old, M) in group 3, carol (old, F: all
 * three buckets). */
static const char *const statements_doc =
    "{\"individuals\": [{\"name\": \"alice\", \"qi\": [\"young\", \"F\"]},"
    " {\"name\": \"bob\", \"qi\": [\"old\", \"M\"], \"group\": 3},"
    " {\"name\": \"carol\", \"qi\": [\"old\", \"F\"]}],"
    " \"statements\": [{\"name\": \"flu-over-cancer\", \"terms\": ["
    "{\"if\": {\"sex\": \"M\"}, \"then\": \"flu\"},"
    " {\"if\": {\"sex\": \"M\"}, \"then\": \"cancer\", \"coef\": -1}], \"min\": 0},"
    " {\"terms\": [{\"person\": \"alice\", \"then\": [\"flu\", \"cold\"]}], \"value\": 0},"
    " {\"terms\": [{\"person\": \"alice\", \"then\": \"flu\"}, {\"person\": \"bob\", "
    "\"then\": \"flu\"}, {\"person\": \"carol\", \"then\": \"flu\"}], \"min\": 2},"
    " {\"terms\": [{\"if\": {}, \"then\": \"cold\", \"coef\": 0.5}], \"min\": 0.1, "
    "\"max\": 0.75}]}";

static void read_statements_doc(const struct dataset *ds, struct knowledge *k)
{
	struct pm_error err = {0};
	json_t *j = json_loads(statements_doc, 0, NULL);

	CHECK(j != NULL);
	CHECK(read_knowledge(j, ds, k, &err) == PM_OK);
	if (err.status)
		fprintf(stderr, "%s: %s\n", err.field, err.message);
	CHECK(k->n_statements == 4 && k->n_people == 3);
	json_decref(j);
}

/* Statements and people -> JSON -> the same statements and people, and
 * the writer gives the same document again. */
static void test_statements_round_trip(void)
{
	struct dataset *ds = data_dataset("codec_small.json");
	struct pm_error err = {0};
	struct knowledge k, k2;
	json_t *out = NULL, *out2 = NULL, *text, *s;
	char *dump;

	knowledge_init(&k);
	knowledge_init(&k2);
	if (ds)
		read_statements_doc(ds, &k);
	if (k.n_statements != 4)
		goto out;
	out = codec_knowledge_json(ds, &k);
	s = json_array_get(json_object_get(out, "statements"), 0);
	CHECK_STR(json_string_value(json_object_get(s, "name")), "flu-over-cancer");
	CHECK(json_object_get(s, "max") == NULL && json_real_value(json_object_get(s, "min")) == 0);
	s = json_object_get(s, "terms");
	CHECK_STR(json_string_value(json_object_get(json_array_get(s, 0), "then")), "flu");
	CHECK(json_object_get(json_array_get(s, 0), "coef") == NULL);
	CHECK(json_real_value(json_object_get(json_array_get(s, 1), "coef")) == -1);
	s = json_array_get(json_object_get(out, "statements"), 1);
	CHECK(json_object_get(s, "name") == NULL);
	CHECK(json_real_value(json_object_get(s, "value")) == 0 && !json_object_get(s, "min"));
	s = json_array_get(json_object_get(s, "terms"), 0);
	CHECK_STR(json_string_value(json_object_get(s, "person")), "alice");
	CHECK(json_array_size(json_object_get(s, "then")) == 2); /* ascending */
	CHECK_STR(json_string_value(json_array_get(json_object_get(s, "then"), 0)), "cold");
	s = json_object_get(out, "individuals");
	CHECK(json_array_size(s) == 3);
	CHECK(json_object_get(json_array_get(s, 0), "group") == NULL);
	CHECK(json_integer_value(json_object_get(json_array_get(s, 1), "group")) == 3);
	CHECK_STR(json_string_value(json_array_get(json_object_get(json_array_get(s, 2), "qi"), 0)),
		  "old");
	dump = json_dumps(out, JSON_REAL_PRECISION(17) | JSON_COMPACT);
	text = json_loads(dump, 0, NULL);
	free(dump);
	CHECK(codec_knowledge(text, ds, &k2, &(struct miner_options){0}, &(int){0}, &err) == PM_OK);
	json_decref(text);
	out2 = codec_knowledge_json(ds, &k2);
	CHECK(json_equal(out, out2));
	CHECK(k2.n_statements == 4 && k2.statements[3].lo == 0.1 && k2.statements[3].hi == 0.75);
	CHECK(k2.n_people == 3 && k2.people[1].group == k.people[1].group);
out:
	json_decref(out);
	json_decref(out2);
	knowledge_finish(&k);
	knowledge_finish(&k2);
	dataset_destroy(ds);
}

/* A result's statements (achieved, binding) and people (p, groups) from
 * a hand-made solver result; without those arrays, the knowledge alone.
 * The result's knowledge part reads back as knowledge. */
static void test_result_statements(void)
{
	struct dataset *ds = data_dataset("codec_small.json");
	struct pm_error err = {0};
	struct knowledge k, k2;
	struct solver_result r;
	double achieved[4] = {0.25, 0, 2, 0.4};
	uint8_t binding[4] = {SOLVER_BINDING_NONE, SOLVER_BINDING_VALUE, SOLVER_BINDING_MIN,
			      SOLVER_BINDING_MAX};
	/* alice: bucket index 1 only; bob: 2; carol: 0, 1, 2 */
	size_t off[4] = {0, 3, 5, 9};
	uint32_t group[9] = {1, 1, 1, 2, 2, 0, 1, 2, 0}, sa[9];
	const char *sa_name[9] = {"cold", "flu",    "cancer", "cancer", "flu",
				  "flu",  "cancer", "cold",   "cancer"};
	double p[9] = {0.5, 0.5, 0, 0.75, 0.25, 0.25, 0.25, 0.25, 0.25};
	json_t *j, *s, *people, *know;

	knowledge_init(&k);
	knowledge_init(&k2);
	if (ds)
		read_statements_doc(ds, &k);
	if (k.n_statements != 4)
		goto out;
	for (size_t i = 0; i < 9; i++)
		sa[i] = (uint32_t)dict_find(&ds->sa_values, sa_name[i]);
	memset(&r, 0, sizeof r);
	r.st_achieved = achieved;
	r.st_binding = binding;
	r.person_off = off;
	r.person_group = group;
	r.person_sa = sa;
	r.person_p = p;
	j = codec_result(ds, &k, &r, NULL, NULL);
	s = json_object_get(j, "statements");
	CHECK(json_array_size(s) == 4);
	CHECK(json_real_value(json_object_get(json_array_get(s, 0), "achieved")) == 0.25);
	CHECK(json_is_null(json_object_get(json_array_get(s, 0), "binding")));
	CHECK_STR(json_string_value(json_object_get(json_array_get(s, 1), "binding")), "value");
	CHECK_STR(json_string_value(json_object_get(json_array_get(s, 2), "binding")), "min");
	CHECK_STR(json_string_value(json_object_get(json_array_get(s, 3), "binding")), "max");
	people = json_object_get(j, "individuals");
	CHECK(json_array_size(people) == 3);
	s = json_array_get(people, 0);
	CHECK_STR(json_string_value(json_object_get(s, "name")), "alice");
	CHECK(json_object_size(json_object_get(s, "p")) == 2); /* cancer: p = 0 */
	CHECK(json_real_value(json_object_get(json_object_get(s, "p"), "flu")) == 0.5);
	CHECK(json_object_size(json_object_get(s, "groups")) == 1);
	CHECK(json_real_value(json_object_get(json_object_get(s, "groups"), "2")) == 1);
	s = json_array_get(people, 1);
	CHECK(json_integer_value(json_object_get(s, "group")) == 3);
	CHECK(json_real_value(json_object_get(json_object_get(s, "p"), "cancer")) == 0.75);
	s = json_array_get(people, 2);
	CHECK(json_object_size(json_object_get(s, "p")) == 3);
	CHECK(json_real_value(json_object_get(json_object_get(s, "p"), "cancer")) == 0.5);
	CHECK(json_real_value(json_object_get(json_object_get(s, "groups"), "1")) == 0.5);
	CHECK(json_real_value(json_object_get(json_object_get(s, "groups"), "3")) == 0.25);
	know = json_pack("{s:O, s:O, s:O}", "rules", json_object_get(j, "rules"), "statements",
			 json_object_get(j, "statements"), "individuals", people);
	CHECK(read_knowledge(know, ds, &k2, &err) == PM_OK);
	CHECK(k2.n_statements == 4 && k2.n_people == 3);
	json_decref(know);
	json_decref(j);
	/* a solve without those arrays: the statements and people as given */
	memset(&r, 0, sizeof r);
	j = codec_result(ds, &k, &r, NULL, NULL);
	s = json_array_get(json_object_get(j, "statements"), 0);
	CHECK(json_object_get(s, "achieved") == NULL && json_object_get(s, "binding") == NULL);
	s = json_array_get(json_object_get(j, "individuals"), 0);
	CHECK(json_object_size(s) == 2 && json_object_get(s, "p") == NULL);
	json_decref(j);
out:
	knowledge_finish(&k);
	knowledge_finish(&k2);
	dataset_destroy(ds);
}

int main(void)
{
	test_statement_limits();
	test_statements_round_trip();
	test_result_statements();
	return check_done();
}
