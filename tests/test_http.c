/*
 * The HTTP service end to end: http_start on a free port with a temporary
 * data directory, and the tiny blocking HTTP/1.1 client of http_client.h.
 * The answers are compared with pipeline_run on the same input. The error
 * statuses are in test_http_errors.c, the queue, restarts and concurrency
 * (with a slow analysis running) in test_http_queue.c, the real binary
 * (kill -9, poison jobs, flags, the service documents) in test_serve.c.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http_client.h"

/* ---- the main flow ----------------------------------------------------------- */

static const char *small_knowledge =
    "{\"rules\": [{\"if\": {\"sex\": \"M\"}, \"then\": \"flu\", \"probability\": 0.5}]}";

static void check_summary(const json_t *s)
{
	const json_t *qi = json_object_get(s, "qi_attributes");

	CHECK_STR(jstr(s, "name"), "small");
	CHECK(json_integer_value(json_object_get(s, "records")) == 11);
	CHECK(json_integer_value(json_object_get(s, "groups")) == 3);
	CHECK(json_integer_value(json_object_get(s, "tuples")) == 4);
	CHECK(json_array_size(qi) == 2);
	CHECK_STR(json_string_value(json_array_get(qi, 1)), "sex");
	CHECK_STR(jstr(s, "sa_attribute"), "disease");
	CHECK(json_array_size(json_object_get(s, "sa_domain")) == 3);
	CHECK_STR(json_string_value(json_array_get(json_object_get(s, "sa_domain"), 0)), "cancer");
	CHECK(json_is_true(json_object_get(s, "has_ground_truth")));
	CHECK(jstr(s, "created") && strlen(jstr(s, "created")) == 20);
}

/* Pages through the posterior with limit 3 and checks it against want. */
static void check_posterior_json(unsigned port, const char *an, const json_t *want)
{
	char path[160], link[256];
	struct resp r;
	json_t *all = json_array();

	snprintf(path, sizeof path, "/v1/analyses/%s/posterior?limit=3", an);
	r = get(port, path);
	CHECK(r.status == 200);
	CHECK(json_integer_value(json_object_get(r.json, "total")) == 4);
	CHECK_STR(jstr(r.json, "next_cursor"), "3");
	CHECK_STR(jstr(r.json, "sa_attribute"), "disease");
	CHECK_CONTAINS(hdr(&r, "Link", link, sizeof link), "cursor=3>; rel=\"next\"");
	json_array_extend(all, json_object_get(r.json, "items"));
	resp_free(&r);
	snprintf(path, sizeof path, "/v1/analyses/%s/posterior?limit=3&cursor=3", an);
	r = get(port, path);
	CHECK(r.status == 200 && json_is_null(json_object_get(r.json, "next_cursor")));
	CHECK(!hdr(&r, "Link", link, sizeof link));
	json_array_extend(all, json_object_get(r.json, "items"));
	CHECK(json_equal(all, json_object_get(want, "posterior")));
	resp_free(&r);
	json_decref(all);
}

/* The CSV form: one row per (q, s) with the same probabilities. */
static void check_posterior_csv(unsigned port, const char *an, const json_t *want)
{
	const json_t *post = json_object_get(want, "posterior"), *e;
	char path[160], ct[128], row[256], num[40];
	size_t i, rows = 0, at = 0;
	const char *s;
	json_t *p;
	struct resp r;

	snprintf(path, sizeof path, "/v1/analyses/%s/posterior", an);
	r = call(port, "GET", path, "Accept: text/csv\r\n", NULL, 0);
	CHECK(r.status == 200);
	CHECK_CONTAINS(hdr(&r, "Content-Type", ct, sizeof ct), "text/csv");
	CHECK(r.body && !strncmp(r.body, "age,sex,count,disease,p\r\n", 25));
	at = r.body ? 25 : 0;
	json_array_foreach(post, i, e)
	{
		json_object_foreach(json_object_get(e, "p"), s, p)
		{
			snprintf(num, sizeof num, "%.17g", json_number_value(p));
			snprintf(row, sizeof row, "%s,%s,%lld,%s,%s\r\n",
				 json_string_value(json_array_get(json_object_get(e, "qi"), 0)),
				 json_string_value(json_array_get(json_object_get(e, "qi"), 1)),
				 (long long)json_integer_value(json_object_get(e, "count")), s,
				 num);
			CHECK(r.body && !strncmp(r.body + at, row, strlen(row)));
			at += strlen(row);
			rows++;
		}
	}
	CHECK(rows == 12 && r.len == at);
	resp_free(&r);
}

static void test_flow(void)
{
	char *dir = temp_dir(), *small = data_file("codec_small.json"), *ds, *an, *an2;
	struct http_server *h = start(dir, 2, 16, NULL, 0);
	unsigned port = http_port(h);
	json_t *want = expected(small, small_knowledge);
	char body[512], path[128], buf[128];
	struct resp r, g;

	r = post_json(port, "/v1/datasets", small);
	CHECK(r.status == 201);
	ds = strdup(jstr(r.json, "id") ? jstr(r.json, "id") : "");
	CHECK(strlen(ds) == 19 && !strncmp(ds, "ds_", 3));
	snprintf(path, sizeof path, "/v1/datasets/%s", ds);
	CHECK_STR(hdr(&r, "Location", buf, sizeof buf), path);
	check_summary(r.json);
	g = get(port, path);
	CHECK(g.status == 200 && json_equal(g.json, r.json));
	resp_free(&g);
	resp_free(&r);
	check_etag(port, path);

	snprintf(body, sizeof body, "{\"knowledge\": %s}", small_knowledge);
	an = analyse(port, ds, body);
	r = wait_done(port, an);
	CHECK_STR(jstr(r.json, "status"), "succeeded");
	CHECK_STR(jstr(r.json, "dataset_id"), ds);
	CHECK(json_integer_value(json_object_get(r.json, "attempts")) == 1);
	check_same_result(json_object_get(r.json, "result"), want);
	resp_free(&r);
	check_posterior_json(port, an, want);
	check_posterior_csv(port, an, want);
	snprintf(path, sizeof path, "/v1/analyses/%s", an);
	check_etag(port, path);

	snprintf(path, sizeof path, "/v1/datasets/%s/analyses", ds);
	r = get(port, path);
	CHECK(r.status == 200 && json_array_size(json_object_get(r.json, "items")) == 1);
	CHECK_STR(jstr(json_array_get(json_object_get(r.json, "items"), 0), "id"), an);
	CHECK(!json_object_get(json_array_get(json_object_get(r.json, "items"), 0), "result"));
	resp_free(&r);

	/* a finished analysis is deleted */
	snprintf(path, sizeof path, "/v1/analyses/%s", an);
	r = del(port, path);
	CHECK(r.status == 204 && r.len == 0);
	resp_free(&r);
	r = get(port, path);
	check_problem(&r, 404, NULL, an);
	resp_free(&r);

	/* deleting the dataset deletes its analyses */
	an2 = analyse(port, ds, "{}");
	r = wait_done(port, an2);
	resp_free(&r);
	snprintf(path, sizeof path, "/v1/datasets/%s", ds);
	r = del(port, path);
	CHECK(r.status == 204);
	resp_free(&r);
	r = get(port, path);
	check_problem(&r, 404, NULL, "no dataset");
	resp_free(&r);
	snprintf(path, sizeof path, "/v1/analyses/%s", an2);
	r = get(port, path);
	CHECK(r.status == 404);
	resp_free(&r);

	http_stop(h);
	json_decref(want);
	free(an);
	free(an2);
	free(ds);
	free(small);
	rm_tree(dir);
	free(dir);
}

/* ---- CSV uploads and the synchronous solve ------------------------------------- */

/* pipeline_run_dataset on a CSV text. */
static json_t *expected_csv(const char *csv, const char *sa, const char *group)
{
	struct csv_table t = {0};
	struct dataset *ds = NULL;
	struct pm_error err = {0};
	json_t *out = NULL;

	CHECK(csv_parse(csv, strlen(csv), &t, &err) == PM_OK);
	CHECK(csv_dataset(&t, sa, group, "bucketized", &ds, &err) == PM_OK);
	CHECK(pipeline_run_dataset(ds, NULL, NULL, NULL, 0, &out, &err) == PM_OK);
	dataset_destroy(ds);
	csv_table_finish(&t);
	return out;
}

static struct resp post_csv(unsigned port, const char *query, const char *csv)
{
	char path[256];

	snprintf(path, sizeof path, "/v1/datasets%s", query);
	return call(port, "POST", path, "Content-Type: text/csv; charset=utf-8\r\n", csv,
		    strlen(csv));
}

static void test_csv_upload(void)
{
	char *dir = temp_dir(), *csv = data_file("cli_bucketized.csv"), *an;
	struct http_server *h = start(dir, 1, 4, NULL, 0);
	unsigned port = http_port(h);
	json_t *want = expected_csv(csv, "disease", "group");
	char path[128];
	struct resp r;

	r = post_csv(port, "?sa=disease&group=group&name=bucketized", csv);
	CHECK(r.status == 201);
	CHECK_STR(jstr(r.json, "name"), "bucketized");
	CHECK_STR(jstr(r.json, "sa_attribute"), "disease");
	CHECK(json_array_size(json_object_get(r.json, "qi_attributes")) == 2);
	CHECK(json_is_true(json_object_get(r.json, "has_ground_truth")));
	/* no body: an analysis without knowledge */
	snprintf(path, sizeof path, "/v1/datasets/%s/analyses", jstr(r.json, "id"));
	resp_free(&r);
	r = call(port, "POST", path, NULL, NULL, 0);
	CHECK(r.status == 202);
	an = strdup(jstr(r.json, "id") ? jstr(r.json, "id") : "an_x");
	resp_free(&r);
	r = wait_done(port, an);
	CHECK_STR(jstr(r.json, "status"), "succeeded");
	check_same_result(json_object_get(r.json, "result"), want);
	resp_free(&r);

	r = post_csv(port, "?group=group", csv);
	check_problem(&r, 400, "sa", "?sa=COLUMN&group=COLUMN");
	resp_free(&r);
	r = post_csv(port, "?sa=nope&group=group", csv);
	check_problem(&r, 422, "sa", "nope");
	resp_free(&r);
	r = post_csv(port, "?sa=disease&group=group", "age,group,sex,disease\n\"young,1,M,flu\n");
	check_problem(&r, 400, "line 2", "malformed CSV: quoted field is not terminated");
	resp_free(&r);
	r = post_csv(port, "?sa=disease&group=group", "age,group,sex,disease\nyo\xffng,1,M,flu\n");
	check_problem(&r, 400, NULL, "not valid UTF-8");
	resp_free(&r);
	r = get(port, "/v1/datasets");
	CHECK(json_array_size(json_object_get(r.json, "items")) == 1);
	resp_free(&r);

	http_stop(h);
	json_decref(want);
	free(an);
	free(csv);
	rm_tree(dir);
	free(dir);
}

/* An interval rule over HTTP: P(flu | M) at least 0.6 binds at min
 * (achieved 0.6); min above max, and the full dual, are 422 naming the
 * rule. */
static void test_solve_interval(unsigned port, const char *small)
{
	static const char *const rule = "{\"if\": {\"sex\": \"M\"}, \"then\": \"flu\", ";
	char body[8192];
	json_t *r0;
	struct resp r;

	snprintf(body, sizeof body,
		 "{\"dataset\": %s, \"knowledge\": {\"rules\": [%s\"min\": 0.6}]}}", small, rule);
	r = post_json(port, "/v1/solve", body);
	CHECK(r.status == 200);
	r0 = json_array_get(json_object_get(r.json, "rules"), 0);
	CHECK_STR(jstr(r0, "binding"), "min");
	CHECK(fabs(json_real_value(json_object_get(r0, "achieved")) - 0.6) < 1e-9);
	resp_free(&r);
	snprintf(body, sizeof body,
		 "{\"dataset\": %s, \"knowledge\": {\"rules\": [%s\"min\": 0.6, \"max\": 0.5}]}}",
		 small, rule);
	r = post_json(port, "/v1/solve", body);
	check_problem(&r, 422, "knowledge.rules[0]", "\"min\" (0.6) is above \"max\" (0.5)");
	resp_free(&r);
	snprintf(body, sizeof body,
		 "{\"dataset\": %s, \"knowledge\": {\"rules\": [%s\"min\": 0.6}]}, "
		 "\"solver\": {\"method\": \"full-dual\"}}",
		 small, rule);
	r = post_json(port, "/v1/solve", body); /* the full dual takes intervals */
	CHECK(r.status == 200 && strstr(r.body, "\"binding\":\"min\""));
	resp_free(&r);
}

/* The privacy verdict over HTTP: "report" beside "solver" sets its
 * threshold and c (echoed in "privacy"), for /v1/solve and an analysis
 * alike; a bad one is 422 naming report.threshold. */
static void test_report(unsigned port, const char *small)
{
	char body[8192], *ds = upload(port, small), *an = NULL;
	struct resp r;
	json_t *p;

	snprintf(body, sizeof body,
		 "{\"dataset\": %s, \"report\": {\"threshold\": 0.75, \"c\": 2}}", small);
	r = post_json(port, "/v1/solve", body);
	CHECK(r.status == 200);
	p = json_object_get(r.json, "privacy");
	CHECK(json_real_value(json_object_get(p, "threshold")) == 0.75);
	CHECK(json_real_value(json_object_get(p, "c")) == 2);
	CHECK(json_object_get(p, "baseline") && json_object_get(p, "truth"));
	resp_free(&r);
	snprintf(body, sizeof body, "{\"dataset\": %s, \"report\": {\"threshold\": 1.5}}", small);
	r = post_json(port, "/v1/solve", body);
	check_problem(&r, 422, "report.threshold", "must be a number from 0 to 1");
	resp_free(&r);
	if (ds && (an = analyse(port, ds, "{\"report\": {\"threshold\": 0.25}}"))) {
		r = wait_done(port, an);
		p = json_object_get(json_object_get(r.json, "result"), "privacy");
		CHECK(json_real_value(json_object_get(p, "threshold")) == 0.25);
		resp_free(&r);
	}
	free(an);
	free(ds);
}

/* The same knowledge as an analysis of a stored dataset: it succeeds,
 * its result with the person and the statement's binding. */
static void test_analysis_people(unsigned port, const char *small, const char *ann)
{
	char body[4096], *ds = upload(port, small), *an = NULL;
	json_t *res;
	struct resp r = {0};

	snprintf(body, sizeof body,
		 "{\"knowledge\": %s{\"terms\": [{\"person\": \"ann\", \"then\": "
		 "\"flu\"}], \"value\": 0}]}}",
		 ann);
	if (ds && (an = analyse(port, ds, body))) {
		r = wait_done(port, an);
		res = json_object_get(r.json, "result");
		CHECK_STR(jstr(r.json, "status"), "succeeded");
		CHECK_STR(jstr(json_array_get(json_object_get(res, "individuals"), 0), "name"),
			  "ann");
		CHECK_STR(jstr(json_array_get(json_object_get(res, "statements"), 0), "binding"),
			  "value");
	}
	resp_free(&r);
	free(ds);
	free(an);
}

/* Statements and named people over HTTP: ann (young M) does not have
 * flu, so the person term binds at its value and ann's p has no flu;
 * two statements that cannot both hold are 422 naming both. */
static void test_solve_people(unsigned port, const char *small)
{
	static const char *const ann = "{\"individuals\": [{\"name\": \"ann\", \"qi\": "
				       "[\"young\", \"M\"]}], \"statements\": [";
	char body[8192];
	json_t *st0, *p0;
	struct resp r;

	snprintf(body, sizeof body,
		 "{\"dataset\": %s, \"knowledge\": %s{\"terms\": [{\"person\": \"ann\", "
		 "\"then\": \"flu\"}], \"value\": 0}]}}",
		 small, ann);
	r = post_json(port, "/v1/solve", body);
	CHECK(r.status == 200);
	st0 = json_array_get(json_object_get(r.json, "statements"), 0);
	p0 = json_array_get(json_object_get(r.json, "individuals"), 0);
	CHECK_STR(jstr(st0, "binding"), "value");
	CHECK_STR(jstr(p0, "name"), "ann");
	CHECK(json_object_get(json_object_get(p0, "p"), "flu") == NULL);
	CHECK(json_object_size(json_object_get(p0, "p")) > 0);
	resp_free(&r);
	snprintf(body, sizeof body,
		 "{\"dataset\": %s, \"knowledge\": %s{\"terms\": [{\"person\": \"ann\", "
		 "\"then\": \"flu\"}], \"value\": 1}, {\"terms\": [{\"person\": \"ann\", "
		 "\"then\": \"cold\"}], \"value\": 1}]}}",
		 small, ann);
	r = post_json(port, "/v1/solve", body);
	check_problem(&r, 422, "knowledge.statements",
		      "these statements together: statements[0]; statements[1]");
	resp_free(&r);
	test_analysis_people(port, small, ann);
}

static void test_solve(void)
{
	char *dir = temp_dir(), *small = data_file("codec_small.json"),
	     *bad = data_file("cli_inconsistent.json"), body[8192];
	struct http_server *h = start(dir, 1, 4, NULL, 0);
	unsigned port = http_port(h);
	json_t *want = expected(small, small_knowledge);
	struct resp r;

	snprintf(body, sizeof body, "{\"dataset\": %s, \"knowledge\": %s}", small, small_knowledge);
	r = post_json(port, "/v1/solve", body);
	CHECK(r.status == 200);
	check_same_result(r.json, want);
	resp_free(&r);
	snprintf(body, sizeof body, "{\"dataset\": %s, \"knowledge\": %s}", small, bad);
	r = post_json(port, "/v1/solve", body);
	check_problem(&r, 422, "knowledge.rules", "no distribution satisfies");
	CHECK_STR(jstr(r.json, "type"), "urn:pmaxent:problem:inconsistent-knowledge");
	resp_free(&r);
	r = post_json(port, "/v1/solve", "{\"knowledge\": null}");
	check_problem(&r, 422, "dataset", "required");
	resp_free(&r);
	r = post_json(port, "/v1/solve",
		      "{\"dataset\": {\"qi_attributes\": [\"a\"], \"sa_attribute\": \"s\", "
		      "\"records\": [{\"qi\": [], \"group\": 1, \"sa\": \"x\"}]}}");
	check_problem(&r, 422, "dataset.records[0].qi", "");
	resp_free(&r);
	snprintf(body, sizeof body, "{\"dataset\": %s, \"solver\": {\"tolerance\": -1}}", small);
	r = post_json(port, "/v1/solve", body);
	check_problem(&r, 422, "solver.tolerance", "positive");
	resp_free(&r);
	snprintf(body, sizeof body, "{\"dataset\": %s, \"extra\": 1}", small);
	r = post_json(port, "/v1/solve", body);
	check_problem(&r, 422, "extra", "unknown key");
	resp_free(&r);
	test_solve_interval(port, small);
	test_solve_people(port, small);
	test_report(port, small);

	http_stop(h);
	json_decref(want);
	free(small);
	free(bad);
	rm_tree(dir);
	free(dir);
}

/* ---- access control ---------------------------------------------------------- */

static void check_401(unsigned port, const char *path, const char *www_part)
{
	struct resp r = get(port, path);
	char buf[128];

	check_problem(&r, 401, NULL, "");
	CHECK_CONTAINS(hdr(&r, "WWW-Authenticate", buf, sizeof buf), www_part);
	resp_free(&r);
}

/* Everything of alice's is 404 to bob. */
static void check_isolation(unsigned port, const char *ds, const char *an)
{
	char path[128];
	struct resp r;

	as("token-bob-0123456789");
	snprintf(path, sizeof path, "/v1/datasets/%s", ds);
	check_status(port, "GET", path, 404, ds);
	check_status(port, "DELETE", path, 404, ds);
	snprintf(path, sizeof path, "/v1/datasets/%s/analyses", ds);
	check_status(port, "GET", path, 404, ds);
	r = post_json(port, path, "{}");
	check_problem(&r, 404, NULL, ds);
	resp_free(&r);
	snprintf(path, sizeof path, "/v1/analyses/%s", an);
	check_status(port, "GET", path, 404, an);
	check_status(port, "DELETE", path, 404, an);
	snprintf(path, sizeof path, "/v1/analyses/%s/posterior", an);
	check_status(port, "GET", path, 404, an);
	r = get(port, "/v1/datasets");
	CHECK(r.status == 200 && json_array_size(json_object_get(r.json, "items")) == 0);
	resp_free(&r);
	as("token-alice-0123456789");
	r = get(port, "/v1/datasets");
	CHECK(r.status == 200 && json_array_size(json_object_get(r.json, "items")) == 1);
	resp_free(&r);
}

/* http_start refuses these settings with a message naming the field. */
static void check_refused(const struct http_options *o, enum pm_status st, const char *field,
			  const char *part)
{
	struct http_server *h = NULL;
	struct pm_error err = {0};

	CHECK(http_start(o, &h, &err) == st);
	CHECK(h == NULL);
	CHECK_STR(err.field, field);
	CHECK_CONTAINS(err.message, part);
	CHECK(!strstr(err.message, "s3cret-0123456789abc")); /* tokens never in messages */
}

static void test_start_settings(const char *dir)
{
	char tokens[512];
	struct http_options o;
	struct http_server *h = NULL;
	struct pm_error err = {0};

	http_options_init(&o);
	o.port = 0;
	o.data_dir = dir;
	o.quiet = 1;
	o.listen = "0.0.0.0";
	check_refused(&o, PM_ERR_INPUT, "listen", "--token-file");
	o.listen = "not-an-address";
	check_refused(&o, PM_ERR_INPUT, "listen", "not an IPv4 or IPv6 address");
	o.listen = "127.0.0.1";
	snprintf(tokens, sizeof tokens, "%s/bad-tokens", dir);
	o.token_file = tokens;
	write_file(tokens, "# comment\ns3cret-0123456789abc alice\ns3cret-0123456789abc-only\n");
	check_refused(&o, PM_ERR_INPUT, "token_file", "line 3: expected 'TOKEN TENANT'");
	write_file(tokens, "s3cret-0123456789abc alice\n\ns3cret-0123456789abc bob\n");
	check_refused(&o, PM_ERR_INPUT, "token_file", "line 3: the same token appears twice");
	write_file(tokens, "# nothing\n");
	check_refused(&o, PM_ERR_INPUT, "token_file", "no 'TOKEN TENANT' line");
	write_file(tokens, "s3cret-0123456789abc alice root\n");
	check_refused(&o, PM_ERR_INPUT, "token_file",
		      "line 1: the third field is the role, 'admin'");
	/* like ssh's keys: a token file others may read is refused */
	write_file(tokens, "s3cret-0123456789abc alice\n");
	chmod(tokens, 0640);
	check_refused(&o, PM_ERR_INPUT, "token_file", "accessible by group or others (mode 0640)");
	chmod(tokens, 0604);
	check_refused(&o, PM_ERR_INPUT, "token_file", "chmod 600");
	snprintf(tokens, sizeof tokens, "%s/missing", dir);
	check_refused(&o, PM_ERR_IO, "token_file", "cannot open");
	/* as many connections as the file descriptors allow, no more */
	o.token_file = NULL;
	o.max_connections = 100000000;
	check_refused(&o, PM_ERR_INPUT, "max_connections", "file descriptors, the hard limit is");
	o.max_connections = 1024;
	/* one server per data directory */
	o.token_file = NULL;
	CHECK(http_start(&o, &h, &err) == PM_OK);
	{
		char want[600];

		snprintf(want, sizeof want, "data directory %s is in use by pid %ld", dir,
			 (long)getpid());
		check_refused(&o, PM_ERR_IO, "data_dir", want);
	}
	http_stop(h);
	h = NULL;
	/* a public address with --insecure, and IPv6 loopback */
	o.token_file = NULL;
	o.listen = "0.0.0.0";
	o.insecure = 1;
	CHECK(http_start(&o, &h, &err) == PM_OK && http_port(h) > 0);
	http_stop(h);
	o.listen = "::1";
	o.insecure = 0;
	h = NULL;
	if (http_start(&o, &h, &err) == PM_OK)
		CHECK(http_port(h) > 0);
	else
		printf("no IPv6 loopback here: %s\n", err.message);
	http_stop(h);
}

static void test_tokens(void)
{
	char *dir = temp_dir(), *small = data_file("codec_small.json"), tokens[512], *ds, *an;
	struct http_server *h;
	unsigned port;
	struct resp r;

	snprintf(tokens, sizeof tokens, "%s/tokens", dir);
	write_file(tokens, "# tenants\n\n  token-alice-0123456789 "
			   "alice\ntoken-bob-0123456789\tbob\ntoken-ops-0123456789 ops admin\n");
	h = start(dir, 1, 4, tokens, 0);
	port = http_port(h);
	as(NULL);
	check_401(port, "/v1/datasets", "Bearer realm=\"pmaxent\"");
	check_401(port, "/metrics", "Bearer");
	as("token-eve-0123456789");
	check_401(port, "/v1/datasets", "error=\"invalid_token\"");
	as("token-alice-012345678");
	check_401(port, "/v1/datasets", "invalid_token");
	snprintf(auth, sizeof auth, "Authorization: Basic dG9rZW4tYWxpY2U=\r\n");
	check_401(port, "/v1/datasets", "Bearer");
	r = call(port, "POST", "/v1/datasets", "Content-Length: 999999999\r\n", NULL, 0);
	check_problem(&r, 401, NULL, ""); /* 401 before 413 */
	resp_free(&r);
	as(NULL);
	r = get(port, "/healthz");
	CHECK(r.status == 200 && !strcmp(jstr(r.json, "status"), "ok"));
	resp_free(&r);
	/* /metrics shows every tenant's work: the admin role only */
	as("token-alice-0123456789");
	r = get(port, "/metrics");
	check_problem(&r, 403, NULL, "admin role");
	resp_free(&r);
	as("token-ops-0123456789");
	r = get(port, "/metrics");
	CHECK(r.status == 200 && strstr(r.body, "pmaxent_jobs_workers"));
	resp_free(&r);

	as("token-alice-0123456789");
	ds = upload(port, small);
	an = analyse(port, ds ? ds : "", "{}");
	r = wait_done(port, an ? an : "");
	CHECK_STR(jstr(r.json, "status"), "succeeded");
	resp_free(&r);
	check_isolation(port, ds ? ds : "", an ? an : "");
	as(NULL);
	http_stop(h);
	test_start_settings(dir);
	free(ds);
	free(an);
	free(small);
	rm_tree(dir);
	free(dir);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	test_flow();
	test_csv_upload();
	test_solve();
	test_tokens();
	return check_done();
}
