/*
 * The HTTP service end to end: http_start on a free port with a temporary
 * data directory, and a tiny blocking HTTP/1.1 client over a socket. The
 * answers are compared with pipeline_run on the same input. The kill -9
 * restart runs the real binary (PMAXENT_BIN).
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "server.h"

/* ---- files and directories ------------------------------------------------ */

static const char *data_dir(void)
{
	const char *d = getenv("PMAXENT_TEST_DATA");

	return d ? d : "tests/data";
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	if (buf) {
		buf[n] = '\0';
		*len = (size_t)n;
	}
	return buf;
}

static char *data_file(const char *name)
{
	char path[512];
	size_t len;

	snprintf(path, sizeof path, "%s/%s", data_dir(), name);
	return read_file(path, &len);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void rm_tree(const char *dir)
{
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static char *temp_dir(void)
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

static void resp_free(struct resp *r)
{
	free(r->head);
	free(r->body);
	json_decref(r->json);
	memset(r, 0, sizeof *r);
}

/* Value of a response header (case-insensitive name) in buf, or NULL. */
static const char *hdr(const struct resp *r, const char *name, char *buf, size_t size)
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

static void parse_response(char *raw, size_t n, struct resp *out)
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
static struct resp roundtrip(unsigned port, const char *req, size_t req_len)
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

static struct resp call(unsigned port, const char *method, const char *path, const char *headers,
			const char *body, size_t len)
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

static struct resp get(unsigned port, const char *path)
{
	return call(port, "GET", path, NULL, NULL, 0);
}

static struct resp post_json(unsigned port, const char *path, const char *body)
{
	return call(port, "POST", path, "Content-Type: application/json\r\n", body, strlen(body));
}

static struct resp del(unsigned port, const char *path)
{
	return call(port, "DELETE", path, NULL, NULL, 0);
}

static const char *jstr(const json_t *j, const char *key)
{
	return json_string_value(json_object_get(j, key));
}

/* A problem document (RFC 9457) with this status, field (NULL: none) and
 * a detail containing detail_part. */
static void check_problem(const struct resp *r, int status, const char *field,
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

/* ---- server and data -------------------------------------------------------- */

static struct http_server *start(const char *dir, size_t workers, size_t queue,
				 const char *token_file, size_t max_body)
{
	struct http_options o;
	struct http_server *h = NULL;
	struct pm_error err = {0};

	http_options_init(&o);
	o.port = 0;
	o.data_dir = dir;
	o.workers = workers;
	o.queue_capacity = queue;
	o.token_file = token_file;
	o.quiet = 1;
	if (max_body) {
		o.max_body = max_body;
		o.max_solve_body = max_body / 4;
	}
	if (http_start(&o, &h, &err))
		fprintf(stderr, "http_start: %s: %s\n", err.field, err.message);
	CHECK(h != NULL);
	CHECK(h && http_port(h) > 0);
	return h;
}

/* Uploads a JSON dataset; returns its id (caller frees) or NULL. */
static char *upload(unsigned port, const char *json)
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
static char *analyse(unsigned port, const char *ds, const char *body)
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

static int finished(const char *status)
{
	return status && strcmp(status, "queued") && strcmp(status, "running");
}

/* Polls the analysis until it is finished (or 120 s); its last GET. */
static struct resp wait_done(unsigned port, const char *id)
{
	char path[128];
	struct resp r = {0};
	double t0 = pipeline_now();

	snprintf(path, sizeof path, "/v1/analyses/%s", id);
	do {
		resp_free(&r);
		usleep(20000);
		r = get(port, path);
	} while (r.status == 200 && !finished(jstr(r.json, "status")) && pipeline_now() - t0 < 120);
	return r;
}

/* Polls until the analysis runs and has done at least one iteration. */
static int wait_running(unsigned port, const char *id)
{
	char path[128];
	double t0 = pipeline_now();
	struct resp r;
	int ok = 0;

	snprintf(path, sizeof path, "/v1/analyses/%s", id);
	while (!ok && pipeline_now() - t0 < 60) {
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
static void check_same_result(const json_t *got, const json_t *want)
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
static json_t *expected(const char *dataset, const char *knowledge)
{
	json_t *ds = json_loads(dataset, 0, NULL),
	       *k = knowledge ? json_loads(knowledge, 0, NULL) : NULL, *out = NULL;
	struct pm_error err = {0};

	CHECK(pipeline_run(ds, k, NULL, 0, &out, &err) == PM_OK);
	json_decref(ds);
	json_decref(k);
	return out;
}

/* A records-form table big enough that an analysis with single-attribute
 * mined rules runs for seconds: SA correlated with the QI, buckets of 5. */
static char *generated_json(size_t n)
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
static char *slow_dataset;
static const char *slow_request;

static char *adult_json(void)
{
	static const char *const qi[] = {"age",	 "type_employer", "marital", "relationship",
					 "race", "sex",		  "country", "education"};
	struct anatomy_options o = {5, 1, 0};
	struct csv_table t = {0};
	struct dataset *ds = NULL;
	struct pm_error err = {0};
	char path[512], *text, *out = NULL;
	size_t len, aside;
	json_t *j;

	snprintf(path, sizeof path, "%s/../../../shared/data/adult/adult.csv", data_dir());
	if (!(text = read_file(path, &len)))
		return NULL;
	if (!csv_parse(text, len, &t, &err) &&
	    !anatomy_run(&t, "occupation", qi, 8, &o, &ds, &aside, &err)) {
		j = codec_dataset_json(ds);
		out = json_dumps(j, JSON_COMPACT);
		json_decref(j);
	}
	dataset_destroy(ds);
	csv_table_finish(&t);
	free(text);
	return out;
}

static void slow_setup(void)
{
	slow_dataset = adult_json();
	slow_request = "{\"knowledge\": {\"mine\": {\"positive\": 250, \"negative\": 250, "
		       "\"qi_attributes\": 1}}}";
	if (!slow_dataset) {
		printf("Adult not found: using a generated table\n");
		slow_dataset = generated_json(40000);
		slow_request = "{\"knowledge\": {\"mine\": {\"positive\": 100, \"negative\": 100, "
			       "\"qi_attributes\": 1}}, \"solver\": {\"tolerance\": 1e-10}}";
	}
	CHECK(slow_dataset != NULL);
}

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

static void check_etag(unsigned port, const char *path)
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

	http_stop(h);
	json_decref(want);
	free(small);
	free(bad);
	rm_tree(dir);
	free(dir);
}

/* ---- errors ------------------------------------------------------------------ */

static void check_405(unsigned port, const char *method, const char *path, const char *allow)
{
	struct resp r = call(port, method, path, NULL, NULL, 0);
	char buf[64];

	check_problem(&r, 405, NULL, method);
	CHECK_STR(hdr(&r, "Allow", buf, sizeof buf), allow);
	resp_free(&r);
}

static void check_status(unsigned port, const char *method, const char *path, int status,
			 const char *detail_part)
{
	struct resp r = call(port, method, path, NULL, NULL, 0);

	check_problem(&r, status, NULL, detail_part);
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

/* ---- access control ---------------------------------------------------------- */

static void as(const char *token)
{
	if (token)
		snprintf(auth, sizeof auth, "Authorization: Bearer %s\r\n", token);
	else
		auth[0] = '\0';
}

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

	as("token-bob");
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
	as("token-alice");
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
	CHECK(!strstr(err.message, "s3cret")); /* tokens never in messages */
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
	write_file(tokens, "# comment\ns3cret alice\ns3cret-only\n");
	check_refused(&o, PM_ERR_INPUT, "token_file", "line 3: expected 'TOKEN TENANT'");
	write_file(tokens, "s3cret alice\n\ns3cret bob\n");
	check_refused(&o, PM_ERR_INPUT, "token_file", "line 3: the same token appears twice");
	write_file(tokens, "# nothing\n");
	check_refused(&o, PM_ERR_INPUT, "token_file", "no 'TOKEN TENANT' line");
	snprintf(tokens, sizeof tokens, "%s/missing", dir);
	check_refused(&o, PM_ERR_IO, "token_file", "cannot open");
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
	write_file(tokens, "# tenants\n\n  token-alice alice\ntoken-bob\tbob\n");
	h = start(dir, 1, 4, tokens, 0);
	port = http_port(h);
	as(NULL);
	check_401(port, "/v1/datasets", "Bearer realm=\"pmaxent\"");
	check_401(port, "/metrics", "Bearer");
	as("token-eve");
	check_401(port, "/v1/datasets", "error=\"invalid_token\"");
	as("token-alic");
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

	as("token-alice");
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

/* ---- the queue, cancellation, metrics ----------------------------------------- */

static void check_progress(unsigned port, const char *an)
{
	char path[128];
	struct resp r;
	const json_t *p;

	snprintf(path, sizeof path, "/v1/analyses/%s", an);
	r = get(port, path);
	p = json_object_get(r.json, "progress");
	CHECK_STR(jstr(r.json, "status"), "running");
	CHECK(json_integer_value(json_object_get(p, "iterations")) > 0);
	CHECK(json_is_number(json_object_get(p, "max_violation")));
	CHECK(json_number_value(json_object_get(p, "elapsed")) > 0);
	CHECK(!json_object_get(r.json, "result"));
	resp_free(&r);
}

static void check_metrics(unsigned port)
{
	static const char *const want[] = {
	    "# TYPE pmaxent_http_requests_total counter\n",
	    "pmaxent_http_requests_total{route=\"/v1/datasets/{id}/analyses\",method=\"POST\","
	    "status=\"503\"} 1\n",
	    "pmaxent_http_requests_total{route=\"/v1/datasets\",method=\"POST\",status=\"201\"} "
	    "1\n",
	    "# TYPE pmaxent_http_request_duration_seconds histogram\n",
	    "pmaxent_http_request_duration_seconds_bucket{route=\"/v1/analyses/{id}\",le=\"+Inf\"}",
	    "pmaxent_http_request_duration_seconds_count{route=\"/v1/analyses/{id}\"}",
	    "# TYPE pmaxent_jobs gauge\n",
	    "pmaxent_jobs{state=\"cancelled\"} 1\n",
	    "pmaxent_jobs{state=\"succeeded\"} 1\n",
	    "pmaxent_jobs_workers 1\n",
	    "pmaxent_jobs_queue_capacity 1\n",
	    "# TYPE pmaxent_solve_seconds summary\n",
	    "pmaxent_solve_seconds_count{mode=\"analysis\"} 1\n",
	    "pmaxent_solve_seconds_sum{mode=\"sync\"} 0\n",
	};
	struct resp r = get(port, "/metrics");
	char ct[128];

	CHECK(r.status == 200);
	CHECK_CONTAINS(hdr(&r, "Content-Type", ct, sizeof ct), "text/plain; version=0.0.4");
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
		CHECK_CONTAINS(r.body, want[i]);
	resp_free(&r);
}

/* One worker, a queue of one: a running analysis, a queued one, then 503;
 * cancelling the running one lets the queued one through. */
static void test_queue_and_cancel(void)
{
	char *dir = temp_dir(), *ds, *slow, *next, path[128], buf[64];
	struct http_server *h = start(dir, 1, 1, NULL, 0);
	unsigned port = http_port(h);
	struct resp r;
	double t0;

	ds = upload(port, slow_dataset);
	slow = analyse(port, ds ? ds : "", slow_request);
	CHECK(wait_running(port, slow ? slow : ""));
	check_progress(port, slow ? slow : "");
	next = analyse(port, ds ? ds : "", "{}");
	snprintf(path, sizeof path, "/v1/datasets/%s/analyses", ds ? ds : "");
	r = post_json(port, path, "{}");
	check_problem(&r, 503, NULL, "queue is full");
	CHECK_STR(hdr(&r, "Retry-After", buf, sizeof buf), "5");
	resp_free(&r);
	r = get(port, path); /* the refused one left nothing behind */
	CHECK(json_array_size(json_object_get(r.json, "items")) == 2);
	resp_free(&r);

	t0 = pipeline_now();
	snprintf(path, sizeof path, "/v1/analyses/%s", slow ? slow : "");
	r = del(port, path);
	CHECK(r.status == 200);
	CHECK_STR(jstr(r.json, "status"), "cancelled");
	resp_free(&r);
	r = wait_done(port, next ? next : "");
	CHECK_STR(jstr(r.json, "status"), "succeeded");
	printf("queued analysis done %.2f s after the cancel\n", pipeline_now() - t0);
	CHECK(pipeline_now() - t0 < 10);
	resp_free(&r);
	r = get(port, path);
	CHECK_STR(jstr(r.json, "status"), "cancelled");
	CHECK(!json_object_get(r.json, "progress"));
	resp_free(&r);
	snprintf(path, sizeof path, "/v1/analyses/%s/posterior", slow ? slow : "");
	check_status(port, "GET", path, 409, "cancelled");
	check_metrics(port);
	snprintf(path, sizeof path, "/v1/analyses/%s", slow ? slow : "");
	r = del(port, path);
	CHECK(r.status == 204);
	resp_free(&r);
	check_status(port, "GET", path, 404, "no analysis");

	http_stop(h);
	free(ds);
	free(slow);
	free(next);
	rm_tree(dir);
	free(dir);
}

/* ---- restarts ----------------------------------------------------------------- */

/* http_stop then http_start on the same directory: everything is still
 * there, and the analysis that was running runs again. */
static void test_restart(void)
{
	char *dir = temp_dir(), *small = data_file("codec_small.json"), *ds, *sds, *an, *slow;
	struct http_server *h = start(dir, 1, 4, NULL, 0);
	unsigned port = http_port(h);
	char path[128];
	struct resp r, before;

	ds = upload(port, small);
	an = analyse(port, ds ? ds : "", "{}");
	snprintf(path, sizeof path, "/v1/analyses/%s", an ? an : "");
	before = wait_done(port, an ? an : "");
	sds = upload(port, slow_dataset);
	slow = analyse(port, sds ? sds : "", slow_request);
	CHECK(wait_running(port, slow ? slow : ""));
	http_stop(h);

	h = start(dir, 1, 4, NULL, 0);
	port = http_port(h);
	r = get(port, path);
	CHECK(r.status == 200 && json_equal(r.json, before.json));
	resp_free(&r);
	r = get(port, "/v1/datasets");
	CHECK(json_array_size(json_object_get(r.json, "items")) == 2);
	resp_free(&r);
	CHECK(wait_running(port, slow ? slow : ""));
	snprintf(path, sizeof path, "/v1/analyses/%s", slow ? slow : "");
	r = get(port, path);
	CHECK(json_integer_value(json_object_get(r.json, "attempts")) == 2);
	resp_free(&r);
	r = del(port, path);
	CHECK_STR(jstr(r.json, "status"), "cancelled");
	resp_free(&r);

	http_stop(h);
	resp_free(&before);
	free(ds);
	free(sds);
	free(an);
	free(slow);
	free(small);
	rm_tree(dir);
	free(dir);
}

/* ---- concurrency ---------------------------------------------------------------- */

struct client {
	unsigned port;
	const char *dataset;
	const json_t *want;
	int ok, bad;
};

static void tally(struct client *c, int good, const char *what, const struct resp *r)
{
	if (good) {
		c->ok++;
		return;
	}
	c->bad++;
	fprintf(stderr, "client: %s: %d %s\n", what, r->status, r->body ? r->body : "");
}

/* Uploads, analyses, polls and reads back, a few times over. */
static void *client_run(void *arg)
{
	struct client *c = arg;
	char path[128], *ds, *an;
	struct resp r;

	for (int round = 0; round < 4; round++) {
		r = post_json(c->port, "/v1/datasets", c->dataset);
		tally(c, r.status == 201, "upload", &r);
		ds = strdup(jstr(r.json, "id") ? jstr(r.json, "id") : "ds_x");
		resp_free(&r);
		snprintf(path, sizeof path, "/v1/datasets/%s/analyses", ds);
		r = post_json(c->port, path,
			      "{\"knowledge\": {\"rules\": [{\"if\": {\"sex\": "
			      "\"M\"}, \"then\": \"flu\", \"probability\": 0.5}]}}");
		tally(c, r.status == 202, "analyse", &r);
		an = strdup(jstr(r.json, "id") ? jstr(r.json, "id") : "an_x");
		resp_free(&r);
		r = wait_done(c->port, an);
		tally(
		    c,
		    r.status == 200 && !strcmp(jstr(r.json, "status"), "succeeded") &&
			json_equal(json_object_get(json_object_get(r.json, "result"), "posterior"),
				   json_object_get(c->want, "posterior")),
		    "result", &r);
		resp_free(&r);
		snprintf(path, sizeof path, "/v1/datasets/%s", ds);
		r = get(c->port, path);
		tally(c, r.status == 200 && !strcmp(jstr(r.json, "id"), ds), "summary", &r);
		resp_free(&r);
		r = get(c->port, "/v1/datasets?limit=5");
		tally(c, r.status == 200 && json_array_size(json_object_get(r.json, "items")) == 5,
		      "list", &r);
		resp_free(&r);
		free(ds);
		free(an);
	}
	return NULL;
}

/* 8 clients at once while a slow analysis runs; every response right. */
static void test_concurrency(void)
{
	char *dir = temp_dir(), *small = data_file("codec_small.json"), *sds, *slow, path[128];
	struct http_server *h = start(dir, 2, 64, NULL, 0);
	unsigned port = http_port(h);
	json_t *want = expected(small, small_knowledge);
	struct client c[8];
	pthread_t t[8];
	struct resp r;
	int ok = 0, bad = 0;

	sds = upload(port, slow_dataset);
	slow = analyse(port, sds ? sds : "", slow_request);
	CHECK(wait_running(port, slow ? slow : ""));
	for (int i = 0; i < 8; i++) {
		c[i] = (struct client){port, small, want, 0, 0};
		pthread_create(&t[i], NULL, client_run, &c[i]);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		ok += c[i].ok;
		bad += c[i].bad;
	}
	CHECK(bad == 0);
	CHECK(ok == 8 * 4 * 5);
	snprintf(path, sizeof path, "/v1/analyses/%s", slow ? slow : "");
	r = del(port, path);
	CHECK(r.status == 200 || r.status == 204);
	resp_free(&r);

	http_stop(h);
	json_decref(want);
	free(sds);
	free(slow);
	free(small);
	rm_tree(dir);
	free(dir);
}

/* ---- kill -9: the real binary ----------------------------------------------------- */

static pid_t spawn(const char *bin, const char *dir, const char *tokens, const char *log)
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);

		dup2(fd, 2);
		execl(bin, bin, "serve", "--port", "0", "--data-dir", dir, "--workers", "1",
		      "--token-file", tokens, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* The port of the last "listening on" line of the log (waits up to 30 s). */
static unsigned wait_port(const char *log, int nth)
{
	const char *key = "pmaxent: listening on http://127.0.0.1:";
	double t0 = pipeline_now();

	while (pipeline_now() - t0 < 30) {
		size_t len;
		char *text = read_file(log, &len), *p = text;
		unsigned port = 0;
		int seen = 0;

		while (p && (p = strstr(p, key))) {
			p += strlen(key);
			if (++seen == nth)
				port = (unsigned)atoi(p);
		}
		free(text);
		if (port)
			return port;
		usleep(20000);
	}
	return 0;
}

static void kill9_check_log(const char *log)
{
	size_t len;
	char *text = read_file(log, &len);

	CHECK_CONTAINS(text, "\"method\":\"POST\",\"path\":\"/v1/datasets\",\"status\":201");
	CHECK_CONTAINS(text, "\"tenant\":\"auditor\"");
	CHECK_CONTAINS(text, "pmaxent: SIGTERM: shutting down\npmaxent: stopped\n");
	CHECK(text && !strstr(text, "kill9-secret"));
	free(text);
}

/* Kill -9 mid-analysis; the restarted service runs it again to the end. */
static void test_kill9(void)
{
	const char *bin = getenv("PMAXENT_BIN");
	char *dir = temp_dir(), tokens[512], log[512], path[128], *ds, *an;
	unsigned port;
	pid_t pid;
	struct resp r;
	int status = -1;

	if (!bin) {
		printf("PMAXENT_BIN not set: kill -9 test skipped\n");
		CHECK(bin == NULL);
		rm_tree(dir);
		free(dir);
		return;
	}
	snprintf(tokens, sizeof tokens, "%s/tokens", dir);
	snprintf(log, sizeof log, "%s/server.log", dir);
	write_file(tokens, "kill9-secret auditor\n");
	pid = spawn(bin, dir, tokens, log);
	port = wait_port(log, 1);
	CHECK(port > 0);
	as("kill9-secret");
	ds = upload(port, slow_dataset);
	an = analyse(port, ds ? ds : "", slow_request);
	CHECK(wait_running(port, an ? an : ""));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);

	pid = spawn(bin, dir, tokens, log);
	port = wait_port(log, 2);
	CHECK(port > 0);
	r = wait_done(port, an ? an : "");
	CHECK_STR(jstr(r.json, "status"), "succeeded");
	CHECK(json_integer_value(json_object_get(r.json, "attempts")) == 2);
	CHECK_STR(jstr(json_object_get(r.json, "result"), "status"), "converged");
	resp_free(&r);
	snprintf(path, sizeof path, "/v1/datasets/%s", ds ? ds : "");
	check_etag(port, path);

	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	kill9_check_log(log);
	as(NULL);
	free(ds);
	free(an);
	rm_tree(dir);
	free(dir);
}

/* ---- service documents and the command line ---------------------------------------- */

static void test_documents(void)
{
	char *dir = temp_dir(), spec[512], *yaml, ct[128], etag[64];
	struct http_server *h = start(dir, 1, 4, NULL, 0);
	unsigned port = http_port(h);
	struct resp r;
	size_t len = 0;

	/* embedded at build time, or read from this path when not */
	snprintf(spec, sizeof spec, "%s/../../api-spec/openapi.yaml", data_dir());
	setenv("PMAXENT_OPENAPI", spec, 1);
	yaml = read_file(spec, &len);
	r = get(port, "/v1/openapi.yaml");
	CHECK(r.status == 200);
	CHECK_CONTAINS(hdr(&r, "Content-Type", ct, sizeof ct), "application/yaml");
	CHECK(yaml && r.len == len && !memcmp(r.body, yaml, len));
	CHECK(r.body && !strncmp(r.body, "openapi: 3.1", 12));
	resp_free(&r);
	r = get(port, "/healthz");
	CHECK(r.status == 200 && !strcmp(r.body, "{\"status\":\"ok\"}\n"));
	resp_free(&r);
	r = call(port, "HEAD", "/v1/datasets", NULL, NULL, 0);
	CHECK(r.status == 200 && r.len == 0 && hdr(&r, "ETag", etag, sizeof etag));
	resp_free(&r);
	http_stop(h);
	free(yaml);
	rm_tree(dir);
	free(dir);
}

/* Runs pmaxent with args; its exit status, stdout and stderr in *out. */
static int run_bin(const char *bin, const char *const *args, char **out)
{
	char log[] = "/tmp/pmaxent-http-out-XXXXXX";
	int fd = mkstemp(log), status = -1;
	size_t len;
	pid_t pid = fork();

	if (pid == 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		execv(bin, (char *const *)args);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	close(fd);
	*out = read_file(log, &len);
	unlink(log);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_serve_flags(void)
{
	static const struct {
		const char *args[6];
		int status;
		const char *output;
	} cases[] = {
	    {{"serve", "--help"}, 0, "--token-file F"},
	    {{"serve", "--port", "70000"}, 2, "--port: must be from 0 to 65535, got 70000"},
	    {{"serve", "--workers", "x"}, 2, "--workers: expected an integer, got 'x'"},
	    {{"serve", "--bogus"}, 2, "unknown option '--bogus'"},
	    {{"serve", "extra"}, 2, "unexpected argument 'extra'"},
	    {{"serve", "--listen", "0.0.0.0", "--port", "0"},
	     2,
	     "pmaxent: --listen: refusing to listen on 0.0.0.0 without access control"},
	    {{"serve", "--token-file", "/nonexistent/tokens", "--port", "0"},
	     2,
	     "pmaxent: --token-file: cannot open /nonexistent/tokens"},
	};
	const char *bin = getenv("PMAXENT_BIN");
	const char *argv[8];
	char *out = NULL;

	for (size_t i = 0; bin && i < sizeof cases / sizeof cases[0]; i++) {
		argv[0] = bin;
		for (size_t k = 0; k < 6; k++)
			argv[k + 1] = cases[i].args[k];
		argv[7] = NULL;
		CHECK(run_bin(bin, argv, &out) == cases[i].status);
		CHECK_CONTAINS(out, cases[i].output);
		free(out);
	}
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	slow_setup();
	test_flow();
	test_csv_upload();
	test_solve();
	test_errors();
	test_tokens();
	test_queue_and_cancel();
	test_restart();
	test_concurrency();
	test_documents();
	test_serve_flags();
	test_kill9();
	free(slow_dataset);
	return check_done();
}
