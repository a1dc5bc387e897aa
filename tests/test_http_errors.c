/*
 * The error statuses of the HTTP service end to end, with the client of
 * http_client.h: unknown routes and methods (404, 405), unreadable,
 * unsupported and oversize bodies (400, 413, 415), analyses that fail
 * validation (422) and bad paging parameters, each a problem document
 * naming the field; none of it stores anything.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_client.h"

static void check_405(unsigned port, const char *method, const char *path, const char *allow)
{
	struct resp r = call(port, method, path, NULL, NULL, 0);
	char buf[64];

	check_problem(&r, 405, NULL, method);
	CHECK_STR(hdr(&r, "Allow", buf, sizeof buf), allow);
	resp_free(&r);
}

/* A chunked body: refused at the gate (411), whatever its size, so that a
 * malformed chunk can never reach libmicrohttpd's own HTML error page. */
static void check_411_chunked(unsigned port, size_t total)
{
	const char *head = "POST /v1/datasets HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
			   "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
	size_t chunk = 8192, n = strlen(head), off = n;
	char *req = malloc(n + (total / chunk + 1) * (chunk + 16) + 64);
	struct resp r;

	memcpy(req, head, n);
	for (size_t sent = 0; sent < total; sent += chunk) {
		off += (size_t)sprintf(req + off, "%zx\r\n", chunk);
		memset(req + off, ' ', chunk);
		off += chunk;
		off += (size_t)sprintf(req + off, "\r\n");
	}
	off += (size_t)sprintf(req + off, "0\r\n\r\n");
	r = roundtrip(port, req, off);
	check_problem(&r, 411, NULL, "Content-Length");
	resp_free(&r);
	free(req);
}

static void errors_routes(unsigned port)
{
	check_status(port, "GET", "/nope", 404, "no resource at /nope");
	check_status(port, "GET", "/v1/datasets/", 404, "");
	check_status(port, "GET", "/v1/%FF%FE", 404, "no resource at /v1/??");
	check_status(port, "GET", "/v1/datasets/ds_0123456789abcdef", 404, "ds_0123456789abcdef");
	check_status(port, "GET", "/v1/datasets/not-an-id", 404, "not-an-id");
	check_status(port, "GET", "/v1/datasets/ds_0123456789abcdef/analyses", 404, "no dataset");
	check_status(port, "GET", "/v1/analyses/an_0123456789abcdef", 404, "no analysis");
	check_status(port, "GET", "/v1/analyses/an_0123456789abcdef/posterior", 404, "");
	check_status(port, "DELETE", "/v1/analyses/an_0123456789abcdef", 404, "");
	check_status(port, "DELETE", "/v1/datasets/ds_0123456789abcdef", 404, "");
	check_405(port, "PUT", "/v1/datasets", "GET, HEAD, POST");
	check_405(port, "DELETE", "/v1/solve", "POST");
	check_405(port, "POST", "/v1/analyses/an_0123456789abcdef", "GET, HEAD, DELETE");
	check_405(port, "POST", "/healthz", "GET, HEAD");
}

static void errors_bodies(unsigned port, const char *ds)
{
	char path[128], deep[200];
	struct resp r;

	r = call(port, "POST", "/v1/datasets", "Content-Type: text/plain\r\n", "x", 1);
	check_problem(&r, 415, NULL, "text/plain");
	resp_free(&r);
	r = call(port, "POST", "/v1/datasets", NULL, "{}", 2);
	check_problem(&r, 415, NULL, "no Content-Type");
	resp_free(&r);
	r = post_json(port, "/v1/datasets", "{\"name\": \"x\",\n  oops}");
	check_problem(&r, 400, NULL, "malformed JSON at line 2, column");
	resp_free(&r);
	r = post_json(port, "/v1/datasets", "");
	check_problem(&r, 400, NULL, "empty");
	resp_free(&r);
	memset(deep, '[', 100);
	memset(deep + 100, ']', 99);
	deep[199] = '\0';
	r = post_json(port, "/v1/datasets", deep);
	check_problem(&r, 400, NULL, "nested deeper than 64");
	resp_free(&r);
	r = post_json(port, "/v1/datasets", "{\"name\": \"a\", \"name\": \"b\"}");
	check_problem(&r, 400, NULL, "duplicate");
	resp_free(&r);
	r = post_json(port, "/v1/datasets", "{\"qi_attributes\": 3}");
	check_problem(&r, 422, "qi_attributes", "");
	resp_free(&r);
	r = call(port, "POST", "/v1/datasets", "Content-Length: 10000000\r\n", NULL, 0);
	check_problem(&r, 413, NULL, "over the limit");
	resp_free(&r);
	check_411_chunked(port, 200000);
	check_411_chunked(port, 10);
	snprintf(path, sizeof path, "/v1/datasets/%s/analyses", ds);
	r = call(port, "POST", path, NULL, "{}", 2);
	check_problem(&r, 415, NULL, "application/json");
	resp_free(&r);
	r = post_json(port, path, "[1, 2");
	check_problem(&r, 400, NULL, "malformed JSON");
	resp_free(&r);
}

/* Requests for an analysis that fail validation before anything is stored. */
static void errors_analyses(unsigned port, const char *ds, const char *published)
{
	static const struct {
		const char *body, *field, *detail;
	} cases[] = {
	    {"[]", NULL, "JSON object"},
	    {"{\"extra\": 1}", "extra", "unknown key"},
	    {"{\"knowledge\": 5}", "knowledge", "object"},
	    {"{\"knowledge\": {\"rules\": [{\"if\": {\"nope\": \"M\"}, \"then\": \"flu\", "
	     "\"probability\": 1}]}}",
	     "knowledge.rules[0].if.nope", ""},
	    {"{\"knowledge\": {\"mine\": {\"positive\": -1}}}", "knowledge.mine.positive", ""},
	    {"{\"knowledge\": {\"solver\": {\"tolerance\": 0}}}", "knowledge.solver.tolerance", ""},
	    {"{\"solver\": {\"max_iterations\": 0}}", "solver.max_iterations", ""},
	    /* strict documents: a typo is an error, never a different analysis */
	    {"{\"knowledge\": {\"mine\": {\"positve\": 50, \"negative\": 50}}}",
	     "knowledge.mine.positve", "unknown key; did you mean \"positive\"?"},
	    {"{\"solver\": {\"tolerence\": 1e-6}}", "solver.tolerence",
	     "unknown key; did you mean \"tolerance\"?"},
	    {"{\"knowledge\": {\"rules\": [{\"if\": {\"sex\": \"M\"}, \"then\": \"flu\", "
	     "\"probabilty\": 0.5}]}}",
	     "knowledge.rules[0].probabilty", "did you mean \"probability\"?"},
	    {"{\"solver\": {\"time_limit\": 0}}", "solver.time_limit", ""},
	    /* statements and individuals (SPEC 3.1), named as in the request */
	    {"{\"knowledge\": {\"statements\": [{\"terms\": [{\"person\": \"alice\", \"then\": "
	     "\"flu\"}], \"value\": 0}]}}",
	     "knowledge.statements[0].terms[0].person",
	     "unknown person \"alice\"; no one is named (people are named in \"individuals\")"},
	    {"{\"knowledge\": {\"statements\": [{\"terms\": [{\"if\": {\"sex\": \"M\"}, "
	     "\"person\": "
	     "\"x\", \"then\": \"flu\"}], \"min\": 0}]}}",
	     "knowledge.statements[0].terms[0]", "has both \"if\" and \"person\""},
	    {"{\"knowledge\": {\"statements\": [{\"terms\": [{\"if\": {}, \"then\": \"flu\", "
	     "\"coef\": \"x\"}], \"min\": 0}]}}",
	     "knowledge.statements[0].terms[0].coef", "must be a number, got a string"},
	    {"{\"knowledge\": {\"individuals\": [{\"name\": \"alice\", \"qi\": [\"young\", \"F\"], "
	     "\"group\": 1}]}}",
	     "knowledge.individuals[0].group", "group \"1\" has no record with these QI values"},
	    {"{\"knowledge\": {\"statements\": [{\"terms\": [], \"value\": 1}]}}",
	     "knowledge.statements[0].terms", "is empty"},
	};
	char path[128];
	struct resp r;

	snprintf(path, sizeof path, "/v1/datasets/%s/analyses", ds);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		r = post_json(port, path, cases[i].body);
		check_problem(&r, 422, cases[i].field, cases[i].detail);
		resp_free(&r);
	}
	snprintf(path, sizeof path, "/v1/datasets/%s/analyses", published);
	r = post_json(port, path,
		      "{\"knowledge\": {\"mine\": {\"positive\": 1, \"negative\": 1}}}");
	check_problem(&r, 422, "knowledge.mine", "published form");
	resp_free(&r);
}

/*
 * Numbers beyond their limits (issue 36): a statement bound of 1e308
 * aborted the process in GLPK, any tenant's request taking the server
 * down, and 1e-320 failed the solve with a 500. Each is now a 422 naming
 * the field and the limit, on /v1/solve and on an analysis (refused
 * before it is stored), and the server answers on after them.
 */
static void errors_numbers(unsigned port, const char *small, const char *ds)
{
	static const struct {
		const char *knowledge, *field, *detail;
	} cases[] = {
	    {"{\"statements\": [{\"terms\": [{\"if\": {}, \"then\": \"flu\"}], \"max\": 1e308}]}",
	     "knowledge.statements[0].max", "1e308 is outside the limit [-1e9, 1e9]"},
	    {"{\"statements\": [{\"terms\": [{\"if\": {}, \"then\": \"flu\"}], \"min\": -1e308}]}",
	     "knowledge.statements[0].min", "-1e308 is outside the limit [-1e9, 1e9]"},
	    {"{\"statements\": [{\"terms\": [{\"if\": {}, \"then\": \"flu\"}], \"value\": 1e308}]}",
	     "knowledge.statements[0].value", "1e308 is outside the limit [-1e9, 1e9]"},
	    {"{\"statements\": [{\"terms\": [{\"if\": {}, \"then\": \"flu\", \"coef\": 1e308}], "
	     "\"max\": 1}]}",
	     "knowledge.statements[0].terms[0].coef", "1e308 is outside the limit [-1e5, 1e5]"},
	    {"{\"statements\": [{\"terms\": [{\"if\": {}, \"then\": \"flu\", \"coef\": -1e308}], "
	     "\"max\": 1}]}",
	     "knowledge.statements[0].terms[0].coef", "-1e308 is outside the limit [-1e5, 1e5]"},
	    {"{\"statements\": [{\"terms\": [{\"if\": {}, \"then\": \"flu\", \"coef\": 1e-320}], "
	     "\"value\": 1e-320}]}",
	     "knowledge.statements[0].terms[0].coef", "1e-320 is subnormal"},
	};
	char *body = malloc(strlen(small) + 512), path[128];
	struct resp r;

	snprintf(path, sizeof path, "/v1/datasets/%s/analyses", ds);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		sprintf(body, "{\"dataset\": %s, \"knowledge\": %s}", small, cases[i].knowledge);
		r = post_json(port, "/v1/solve", body);
		check_problem(&r, 422, cases[i].field, cases[i].detail);
		resp_free(&r);
		sprintf(body, "{\"knowledge\": %s}", cases[i].knowledge);
		r = post_json(port, path, body);
		check_problem(&r, 422, cases[i].field, cases[i].detail);
		resp_free(&r);
	}
	/* still serving, and solving: -0 is 0 */
	sprintf(body,
		"{\"dataset\": %s, \"knowledge\": {\"statements\": [{\"terms\": [{\"if\": {}, "
		"\"then\": \"flu\", \"coef\": -0.0}], \"max\": -0.0}]}}",
		small);
	r = post_json(port, "/v1/solve", body);
	CHECK(r.status == 200);
	resp_free(&r);
	free(body);
}

/*
 * Paths are decoded once, strictly: a NUL or another control character
 * in a segment is 400, an escaped '/' 404, on every route and method,
 * with real ids behind them; nothing is touched (checked by the caller:
 * the dataset and its analysis are still there).
 */
static void errors_paths(unsigned port, const char *ds, const char *an)
{
	static const char *const routes[][2] = {
	    {"GET", "/v1/datasets%s"},
	    {"POST", "/v1/datasets%s"},
	    {"GET", "/v1/datasets/%s"},
	    {"DELETE", "/v1/datasets/%s"},
	    {"GET", "/v1/datasets/%s/analyses"},
	    {"POST", "/v1/datasets/%s/analyses"},
	    {"DELETE", "/v1/datasets/%s/analyses"},
	    {"GET", "/v1/analyses/%s"},
	    {"DELETE", "/v1/analyses/%s"},
	    {"GET", "/v1/analyses/%s/posterior"},
	    {"POST", "/v1/solve%s"},
	    {"GET", "/healthz%s"},
	    {"GET", "/metrics%s"},
	    {"GET", "/v1/openapi.yaml%s"},
	};
	static const struct {
		const char *suffix;
		int status;
		const char *detail;
	} bad[] = {
	    {"%00", 400, "control character (byte 0)"},
	    {"%00anything", 400, "control character"},
	    {"%0a", 400, "control character (byte 10)"},
	    {"%1F", 400, "control character"},
	    {"%7f", 400, "control character"},
	    {"%2F", 404, "escaped '/'"},
	    {"%2fx", 404, "escaped '/'"},
	    {"%", 400, "two hex digits"},
	    {"%zz", 400, "two hex digits"},
	    {"%0", 400, "two hex digits"},
	};
	char id[128], path[256];

	for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
		const char *own = strstr(routes[i][1], "analyses/") ? an : ds;

		for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
			struct resp r;

			/* the collections get the bad bytes on their own path */
			snprintf(id, sizeof id, "%s%s", strstr(routes[i][1], "/%s") ? own : "",
				 bad[k].suffix);
			snprintf(path, sizeof path, routes[i][1], id);
			r = call(port, routes[i][0], path, "Content-Type: application/json\r\n",
				 "{}", 2);
			if (r.status != bad[k].status)
				fprintf(stderr, "%s %s\n", routes[i][0], path);
			check_problem(&r, bad[k].status, NULL, bad[k].detail);
			resp_free(&r);
		}
	}
	/* the query too, and its names: exact, once each */
	check_status(port, "GET", "/v1/datasets?limit=5%00", 400, "control character");
	check_status(port, "GET", "/v1/datasets?limit=5&limit=6", 400, "given twice");
	{
		struct resp r = get(port, "/v1/datasets?limt=5");

		check_problem(&r, 400, "limt",
			      "unknown query parameter; GET /v1/datasets takes limit, cursor");
		resp_free(&r);
		r = get(port, "/healthz?x=1");
		check_problem(&r, 400, "x", "takes none");
		resp_free(&r);
	}
	check_status(port, "GET", "/v1/datasets#frag", 400, "fragment");
}

/* Datasets are strict too, and bounded: unknown keys at any depth, and a
 * name over 256 bytes is refused, not stored. */
static void errors_documents(unsigned port)
{
	static const struct {
		const char *body, *field, *detail;
	} cases[] = {
	    {"{\"qi_attributes\": [\"a\"], \"sa_attribute\": \"s\", \"colour\": 1, \"records\": "
	     "[{\"qi\": [\"x\"], \"group\": 1, \"sa\": \"y\"}]}",
	     "colour", "unknown key"},
	    {"{\"qi_attributes\": [\"a\"], \"sa_attribute\": \"s\", \"records\": "
	     "[{\"qi\": [\"x\"], \"group\": 1, \"sa\": \"y\", \"colour\": 2}]}",
	     "records[0].colour", "unknown key"},
	    {"{\"qi_attributes\": [\"a\"], \"sa_attribute\": \"s\", \"recrods\": []}", "recrods",
	     "did you mean \"records\"?"},
	};
	char *big = malloc(40000);
	struct resp r;
	int n;

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		r = post_json(port, "/v1/datasets", cases[i].body);
		check_problem(&r, 422, cases[i].field, cases[i].detail);
		resp_free(&r);
	}
	n = sprintf(big, "{\"name\": \"");
	memset(big + n, 'n', 32768);
	sprintf(big + n + 32768, "\", \"qi_attributes\": [\"a\"], \"sa_attribute\": \"s\", "
				 "\"records\": [{\"qi\": [\"x\"], \"group\": 1, \"sa\": \"y\"}]}");
	r = post_json(port, "/v1/datasets", big);
	check_problem(&r, 422, "name", "at most 256 bytes");
	CHECK(r.len < 1024); /* the name is not echoed back */
	resp_free(&r);
	free(big);
}

static void errors_paging(unsigned port)
{
	struct resp r = get(port, "/v1/datasets?limit=0");

	check_problem(&r, 400, "limit", "from 1 to 1000");
	resp_free(&r);
	r = get(port, "/v1/datasets?limit=abc");
	check_problem(&r, 400, "limit", "abc");
	resp_free(&r);
	r = get(port, "/v1/datasets?cursor=-4");
	check_problem(&r, 400, "cursor", "-4");
	resp_free(&r);
}

static void test_errors(void)
{
	char *dir = temp_dir(), *small = data_file("codec_small.json"),
	     *pub = data_file("codec_published.json"), *ds, *pds, *an, body[40000];
	struct http_server *h = start(dir, 1, 4, NULL, 64 << 10);
	unsigned port = http_port(h);
	struct resp r;

	ds = upload(port, small);
	pds = upload(port, pub);
	errors_routes(port);
	errors_bodies(port, ds ? ds : "");
	errors_analyses(port, ds ? ds : "", pds ? pds : "");
	errors_numbers(port, small, ds ? ds : "");
	errors_paging(port);
	errors_documents(port);
	an = analyse(port, ds ? ds : "", "{}");
	r = wait_done(port, an ? an : "");
	resp_free(&r);
	errors_paths(port, ds ? ds : "", an ? an : "");
	snprintf(body, sizeof body, "/v1/analyses/%s", an ? an : "");
	r = get(port, body); /* still there */
	CHECK(r.status == 200 && !strcmp(jstr(r.json, "status"), "succeeded"));
	resp_free(&r);
	r = del(port, body);
	CHECK(r.status == 204);
	resp_free(&r);
	free(an);
	/* the synchronous solve has its own, smaller cap (16 KiB here) */
	memset(body, ' ', sizeof body - 1);
	body[sizeof body - 1] = '\0';
	memcpy(body, "{\"dataset\": ", 12);
	r = post_json(port, "/v1/solve", body);
	check_problem(&r, 413, NULL, "16384 bytes");
	resp_free(&r);
	/* none of it stored anything */
	r = get(port, "/v1/datasets");
	CHECK(r.status == 200 && json_array_size(json_object_get(r.json, "items")) == 2);
	resp_free(&r);
	snprintf(body, sizeof body, "/v1/datasets/%s/analyses", ds ? ds : "");
	r = get(port, body);
	CHECK(r.status == 200 && json_array_size(json_object_get(r.json, "items")) == 0);
	resp_free(&r);
	/* the published form analyses without ground truth: no accuracy */
	an = analyse(port, pds ? pds : "", "{}");
	r = wait_done(port, an ? an : "");
	CHECK_STR(jstr(r.json, "status"), "succeeded");
	CHECK(json_is_null(
	    json_object_get(json_object_get(r.json, "result"), "estimation_accuracy")));
	resp_free(&r);
	free(an);

	http_stop(h);
	free(ds);
	free(pds);
	free(small);
	free(pub);
	rm_tree(dir);
	free(dir);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	test_errors();
	return check_done();
}
