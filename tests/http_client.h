/*
 * What the HTTP service tests (test_http.c, test_http_queue.c,
 * test_http_errors.c) share: files and temporary directories, a tiny
 * blocking HTTP/1.1 client over a socket, problem-document checks, a
 * server on a free port, uploads and analyses, and the expected results
 * from pipeline_run.
 *
 * Everything is static (and may go unused) so that each test includes it
 * on its own. The including file defines _XOPEN_SOURCE 700 (nftw) before
 * any header.
 */
#ifndef PMAXENT_TEST_HTTP_CLIENT_H
#define PMAXENT_TEST_HTTP_CLIENT_H

#include <arpa/inet.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "check.h"
#include "server.h"
#include "test_data.h"

#define HTTP_CLIENT_FN static __attribute__((unused))

/* ---- files and directories ------------------------------------------------ */

HTTP_CLIENT_FN char *data_file(const char *name)
{
	char path[512];
	size_t len;

	snprintf(path, sizeof path, "%s/%s", data_dir(), name);
	return read_file(path, &len);
}

/* Written private (0600): token files must be (http.c refuses others). */
HTTP_CLIENT_FN void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

HTTP_CLIENT_FN int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

HTTP_CLIENT_FN void rm_tree(const char *dir)
{
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

HTTP_CLIENT_FN char *temp_dir(void)
{
	char tmpl[] = "/tmp/pmaxent-http-XXXXXX";

	return strdup(mkdtemp(tmpl));
}

/* ---- a tiny HTTP/1.1 client ------------------------------------------------ */

struct resp {
	int status;
	char *head; /* status line and headers */
	char *body;
	size_t len;
	json_t *json; /* the body, when it parses as JSON */
};

HTTP_CLIENT_FN void resp_free(struct resp *r)
{
	free(r->head);
	free(r->body);
	json_decref(r->json);
	memset(r, 0, sizeof *r);
}

/* Value of a response header (case-insensitive name) in buf, or NULL. */
HTTP_CLIENT_FN const char *hdr(const struct resp *r, const char *name, char *buf, size_t size)
{
	size_t n = strlen(name);

	for (const char *p = r->head ? strstr(r->head, "\r\n") : NULL; p; p = strstr(p, "\r\n")) {
		p += 2;
		if (!strncasecmp(p, name, n) && p[n] == ':') {
			p += n + 1;
			while (*p == ' ')
				p++;
			snprintf(buf, size, "%.*s", (int)strcspn(p, "\r\n"), p);
			return buf;
		}
	}
	return NULL;
}

HTTP_CLIENT_FN void parse_response(char *raw, size_t n, struct resp *out)
{
	char *end = strstr(raw, "\r\n\r\n");

	if (!end || strncmp(raw, "HTTP/1.1 ", 9)) {
		free(raw);
		return;
	}
	out->status = atoi(raw + 9);
	out->head = strndup(raw, (size_t)(end - raw) + 2);
	out->len = n - (size_t)(end + 4 - raw);
	out->body = malloc(out->len + 1);
	memcpy(out->body, end + 4, out->len);
	out->body[out->len] = '\0';
	out->json = json_loadb(out->body, out->len, 0, NULL);
	free(raw);
}

/* Sends the raw request and reads the response until the server closes
 * (every request says Connection: close). */
HTTP_CLIENT_FN struct resp roundtrip(unsigned port, const char *req, size_t req_len)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	struct timeval tv = {120, 0};
	struct resp out = {0};
	size_t n = 0, cap = 1 << 16;
	char *raw = malloc(cap + 1);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ssize_t k;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	if (connect(fd, (struct sockaddr *)&a, sizeof a)) {
		close(fd);
		free(raw);
		return out;
	}
	/* the server may answer early (401, 413) and stop reading */
	for (size_t s = 0; s < req_len && (k = send(fd, req + s, req_len - s, MSG_NOSIGNAL)) > 0;)
		s += (size_t)k;
	while ((k = recv(fd, raw + n, cap - n, 0)) > 0) {
		n += (size_t)k;
		if (n == cap)
			raw = realloc(raw, (cap *= 2) + 1);
	}
	close(fd);
	raw[n] = '\0';
	parse_response(raw, n, &out);
	return out;
}

/* The Authorization header lines every request of the current test adds. */
static char auth[160];

HTTP_CLIENT_FN struct resp call(unsigned port, const char *method, const char *path,
				const char *headers, const char *body, size_t len)
{
	size_t hlen = strlen(path) + strlen(headers ? headers : "") + 256;
	char *req = malloc(hlen + len);
	int h =
	    snprintf(req, hlen, "%s %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n%s%s",
		     method, path, auth, headers ? headers : "");
	struct resp r;

	if (body)
		h += snprintf(req + h, hlen - (size_t)h, "Content-Length: %zu\r\n", len);
	h += snprintf(req + h, hlen - (size_t)h, "\r\n");
	if (body)
		memcpy(req + h, body, len);
	r = roundtrip(port, req, (size_t)h + (body ? len : 0));
	free(req);
	return r;
}

HTTP_CLIENT_FN struct resp get(unsigned port, const char *path)
{
	return call(port, "GET", path, NULL, NULL, 0);
}

HTTP_CLIENT_FN struct resp post_json(unsigned port, const char *path, const char *body)
{
	return call(port, "POST", path, "Content-Type: application/json\r\n", body, strlen(body));
}

HTTP_CLIENT_FN struct resp del(unsigned port, const char *path)
{
	return call(port, "DELETE", path, NULL, NULL, 0);
}

HTTP_CLIENT_FN const char *jstr(const json_t *j, const char *key)
{
	return json_string_value(json_object_get(j, key));
}

/* A problem document (RFC 9457) with this status, field (NULL: none) and
 * a detail containing detail_part. */
HTTP_CLIENT_FN void check_problem(const struct resp *r, int status, const char *field,
				  const char *detail_part)
{
	char ct[128];

	if (r->status != status)
		fprintf(stderr, "expected %d, got %d: %s\n", status, r->status,
			r->body ? r->body : "(no response)");
	CHECK(r->status == status);
	CHECK_STR(hdr(r, "Content-Type", ct, sizeof ct), "application/problem+json");
	CHECK(json_integer_value(json_object_get(r->json, "status")) == status);
	CHECK(jstr(r->json, "title") && jstr(r->json, "type"));
	if (field)
		CHECK_STR(jstr(r->json, "field"), field);
	else if (json_object_get(r->json, "field"))
		fprintf(stderr, "unexpected field in %s", r->body);
	CHECK(field || !json_object_get(r->json, "field"));
	CHECK_CONTAINS(jstr(r->json, "detail"), detail_part);
}

HTTP_CLIENT_FN void check_status(unsigned port, const char *method, const char *path, int status,
				 const char *detail_part)
{
	struct resp r = call(port, method, path, NULL, NULL, 0);

	check_problem(&r, status, NULL, detail_part);
	resp_free(&r);
}

/* ---- server and data -------------------------------------------------------- */

/* A server on a free port with the options o (from http_options_init),
 * its database in dir, quiet. */
HTTP_CLIENT_FN struct http_server *start_with(const char *dir, struct http_options *o)
{
	struct http_server *h = NULL;
	struct pm_error err = {0};

	o->port = 0;
	o->data_dir = dir;
	o->quiet = 1;
	if (http_start(o, &h, &err))
		fprintf(stderr, "http_start: %s: %s\n", err.field, err.message);
	CHECK(h != NULL);
	CHECK(h && http_port(h) > 0);
	return h;
}

HTTP_CLIENT_FN struct http_server *start(const char *dir, size_t workers, size_t queue,
					 const char *token_file, size_t max_body)
{
	struct http_options o;

	http_options_init(&o);
	o.workers = workers;
	o.queue_capacity = queue;
	o.token_file = token_file;
	if (max_body) {
		o.max_body = max_body;
		o.max_solve_body = max_body / 4;
	}
	return start_with(dir, &o);
}

/* Uploads a JSON dataset; returns its id (caller frees) or NULL. */
HTTP_CLIENT_FN char *upload(unsigned port, const char *json)
{
	struct resp r = post_json(port, "/v1/datasets", json);
	char *id = r.status == 201 ? strdup(jstr(r.json, "id")) : NULL;

	if (r.status != 201)
		fprintf(stderr, "upload: %d %s\n", r.status, r.body ? r.body : "");
	CHECK(r.status == 201);
	resp_free(&r);
	return id;
}

/* Starts an analysis; returns its id (caller frees) or NULL. */
HTTP_CLIENT_FN char *analyse(unsigned port, const char *ds, const char *body)
{
	char path[128];
	struct resp r;
	char *id;

	snprintf(path, sizeof path, "/v1/datasets/%s/analyses", ds);
	r = post_json(port, path, body);
	id = r.status == 202 ? strdup(jstr(r.json, "id")) : NULL;
	if (r.status != 202)
		fprintf(stderr, "analyse: %d %s\n", r.status, r.body ? r.body : "");
	CHECK(r.status == 202);
	resp_free(&r);
	return id;
}

HTTP_CLIENT_FN int finished(const char *status)
{
	return status && strcmp(status, "queued") && strcmp(status, "running");
}

/* Polls the analysis until it is finished (or 120 s); its last GET. */
HTTP_CLIENT_FN struct resp wait_done(unsigned port, const char *id)
{
	char path[128];
	struct resp r = {0};
	double t0 = solver_now();

	snprintf(path, sizeof path, "/v1/analyses/%s", id);
	do {
		resp_free(&r);
		usleep(20000);
		r = get(port, path);
	} while (r.status == 200 && !finished(jstr(r.json, "status")) && solver_now() - t0 < 120);
	return r;
}

/* Polls until the analysis runs and has done at least one iteration. */
HTTP_CLIENT_FN int wait_running(unsigned port, const char *id)
{
	char path[128];
	double t0 = solver_now();
	struct resp r;
	int ok = 0;

	snprintf(path, sizeof path, "/v1/analyses/%s", id);
	while (!ok && solver_now() - t0 < 60) {
		r = get(port, path);
		ok = r.status == 200 && !strcmp(jstr(r.json, "status"), "running") &&
		     json_integer_value(
			 json_object_get(json_object_get(r.json, "progress"), "iterations")) > 0;
		resp_free(&r);
		if (!ok)
			usleep(10000);
	}
	return ok;
}

/* The fields of a result that do not depend on timing. */
HTTP_CLIENT_FN void check_same_result(const json_t *got, const json_t *want)
{
	static const char *const keys[] = {
	    "status", "iterations", "max_violation",	   "entropy",	"constraints",
	    "rules",  "dataset",    "estimation_accuracy", "posterior", "baseline_accuracy",
	};

	CHECK(got != NULL);
	for (size_t i = 0; got && i < sizeof keys / sizeof keys[0]; i++) {
		if (!json_equal(json_object_get(got, keys[i]), json_object_get(want, keys[i])))
			fprintf(stderr, "result key %s differs\n", keys[i]);
		CHECK(json_equal(json_object_get(got, keys[i]), json_object_get(want, keys[i])));
	}
}

/* pipeline_run on dataset and knowledge JSON texts. */
HTTP_CLIENT_FN json_t *expected(const char *dataset, const char *knowledge)
{
	json_t *ds = json_loads(dataset, 0, NULL),
	       *k = knowledge ? json_loads(knowledge, 0, NULL) : NULL, *out = NULL;
	struct pm_error err = {0};

	CHECK(pipeline_run(ds, k, NULL, 0, &out, &err) == PM_OK);
	json_decref(ds);
	json_decref(k);
	return out;
}

/* ---- slow inputs, tokens, ETags ---------------------------------------------- */

/* A records-form table big enough that an analysis with single-attribute
 * mined rules runs for seconds: SA correlated with the QI, buckets of 5. */
HTTP_CLIENT_FN char *generated_json(size_t n)
{
	json_t *recs = json_array(), *doc;
	uint64_t x = 42;
	char *text;

	for (size_t i = 0; i < n; i++) {
		char a[4][16], s[16];
		unsigned v[4];

		for (int k = 0; k < 4; k++) {
			x = x * 6364136223846793005u + 1442695040888963407u;
			v[k] = (unsigned)(x >> 33) % (unsigned)(5 + 7 * k);
			snprintf(a[k], sizeof a[k], "v%u", v[k]);
		}
		x = x * 6364136223846793005u + 1442695040888963407u;
		snprintf(s, sizeof s, "s%u", (v[0] + v[1] + (unsigned)(x >> 60)) % 12);
		json_array_append_new(recs,
				      json_pack("{s:[ssss], s:I, s:s}", "qi", a[0], a[1], a[2],
						a[3], "group", (json_int_t)(i / 5), "sa", s));
	}
	doc = json_pack("{s:s, s:[ssss], s:s, s:o}", "name", "generated", "qi_attributes", "a", "b",
			"c", "d", "sa_attribute", "s", "records", recs);
	text = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	return text;
}

/* The slow dataset (Adult anatomized when the shared data is there) and
 * the knowledge that makes its analysis run for seconds. */
static __attribute__((unused)) char *slow_dataset;
static __attribute__((unused)) const char *slow_request;

HTTP_CLIENT_FN void slow_setup(void)
{
	slow_dataset = adult_json();
	/* the paper's full dual: seconds on this input (the default, ~0.5 s) */
	slow_request = "{\"knowledge\": {\"mine\": {\"positive\": 250, \"negative\": 250, "
		       "\"qi_attributes\": 1}}, \"solver\": {\"method\": \"full-dual\"}}";
	if (!slow_dataset) {
		printf("Adult not found: using a generated table\n");
		slow_dataset = generated_json(40000);
		slow_request = "{\"knowledge\": {\"mine\": {\"positive\": 100, \"negative\": 100, "
			       "\"qi_attributes\": 1}}, \"solver\": {\"tolerance\": 1e-10, "
			       "\"method\": \"full-dual\"}}";
	}
	CHECK(slow_dataset != NULL);
}

/* An ETag, 304 for it (in a list), 200 for another. */
HTTP_CLIENT_FN void check_etag(unsigned port, const char *path)
{
	char etag[64], again[64], inm[128];
	struct resp r = get(port, path), n;

	CHECK(r.status == 200 && hdr(&r, "ETag", etag, sizeof etag));
	snprintf(inm, sizeof inm, "If-None-Match: \"nope\", %s\r\n", etag);
	n = call(port, "GET", path, inm, NULL, 0);
	CHECK(n.status == 304 && n.len == 0);
	CHECK_STR(hdr(&n, "ETag", again, sizeof again), etag);
	resp_free(&n);
	n = call(port, "GET", path, "If-None-Match: \"0000000000000000\"\r\n", NULL, 0);
	CHECK(n.status == 200 && n.len == r.len);
	resp_free(&n);
	resp_free(&r);
}

/* The bearer token of the following requests (NULL: none). */
HTTP_CLIENT_FN void as(const char *token)
{
	if (token)
		snprintf(auth, sizeof auth, "Authorization: Bearer %s\r\n", token);
	else
		auth[0] = '\0';
}

#endif
