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

/* A chunked body that grows past the limit: discarded, then 413. */
static void check_413_chunked(unsigned port, size_t total)
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
	check_problem(&r, 413, NULL, "over the limit");
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
	check_413_chunked(port, 200000);
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
	errors_paging(port);
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
