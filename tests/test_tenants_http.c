/*
 * Tenants share the service fairly (issue 36, item 7), end to end with a
 * server in-process on port 0 and two tenants: one tenant's full share of
 * the queue is 429 for it alone, and the other's analysis is accepted and
 * runs next, not after all of the first's; the dataset and byte quotas
 * stop uploads (JSON and CSV) with 403 naming the quota; two
 * Authorization headers are 400; list cursors are opaque, bound to their
 * tenant and list, and still page (the sealing itself: http_cursor.c,
 * also checked here). Slow solves are slow on purpose (test_stall).
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <ctype.h>

#include "http_client.h"
#include "http_internal.h"

/* needs Newton iterations (a probabilistic rule), so the stall applies */
static const char *iterates = "{\"knowledge\": {\"rules\": [{\"if\": {\"sex\": \"M\"},"
			      " \"then\": \"flu\", \"probability\": 0.5}]}}";
static const char *tokens_text = "token-alice-0123456 alice\ntoken-bob-0123456789 bob\n";

/* A server with the two tenants' tokens in dir, workers 1, and stall. */
static struct http_server *start_tenants(const char *dir, double stall, struct http_options *o)
{
	char tokens[512];

	snprintf(tokens, sizeof tokens, "%s/tokens", dir);
	write_file(tokens, tokens_text);
	o->workers = 1;
	o->test_stall = stall;
	o->token_file = strdup(tokens);
	return start_with(dir, o);
}

static void stop_tenants(struct http_server *h, char *dir, struct http_options *o)
{
	http_stop(h);
	free((char *)o->token_file);
	rm_tree(dir);
	free(dir);
	as(NULL);
}

static char *post_analysis(unsigned port, const char *ds, struct resp *r)
{
	char path[128];

	snprintf(path, sizeof path, "/v1/datasets/%s/analyses", ds);
	*r = post_json(port, path, iterates);
	return r->status == 202 ? strdup(jstr(r->json, "id")) : NULL;
}

/* --queue 64 (default share 32): alice's 65 analyses fill her share and
 * get 429; bob's first is accepted (it was 503 behind alice's). */
static void test_queue_share(void)
{
	char *dir = temp_dir(), *small = data_file("codec_small.json"), *ds_a, *ds_b, *id, ra[16];
	struct http_options o;
	struct http_server *h;
	struct resp r;
	int accepted = 0, refused = 0;

	http_options_init(&o);
	h = start_tenants(dir, 60, &o);
	as("token-alice-0123456");
	ds_a = upload(http_port(h), small);
	for (int i = 0; i < 65; i++) {
		id = post_analysis(http_port(h), ds_a, &r);
		accepted += id != NULL;
		if (r.status == 429 && !refused++) {
			check_problem(&r, 429, "queue_per_tenant", "--queue-per-tenant 32");
			CHECK(hdr(&r, "Retry-After", ra, sizeof ra) && atoi(ra) > 0);
		}
		free(id);
		resp_free(&r);
	}
	/* 32 queued, and the one running (claimed at once or not yet) */
	CHECK(accepted >= 32 && accepted <= 33 && refused == 65 - accepted);
	as("token-bob-0123456789");
	ds_b = upload(http_port(h), small);
	id = post_analysis(http_port(h), ds_b, &r);
	if (!id)
		fprintf(stderr, "bob's analysis: %d %s\n", r.status, r.body);
	CHECK(id != NULL);
	free(id);
	resp_free(&r);
	free(ds_a);
	free(ds_b);
	free(small);
	stop_tenants(h, dir, &o);
}

/* One worker, each solve 0.4 s: alice queues six, then bob one. Bob's
 * runs second, when alice's first is done; before, it ran after all six. */
static void test_round_robin(void)
{
	char *dir = temp_dir(), *small = data_file("codec_small.json"), *ds_a, *ds_b, *a[6], *b;
	char path[64];
	struct http_options o;
	struct http_server *h;
	struct resp r;
	int done = 0;

	http_options_init(&o);
	h = start_tenants(dir, 0.4, &o);
	as("token-alice-0123456");
	ds_a = upload(http_port(h), small);
	for (int i = 0; i < 6; i++)
		a[i] = analyse(http_port(h), ds_a, iterates);
	as("token-bob-0123456789");
	ds_b = upload(http_port(h), small);
	b = analyse(http_port(h), ds_b, iterates);
	r = wait_done(http_port(h), b);
	CHECK_STR(jstr(r.json, "status"), "succeeded");
	resp_free(&r);
	as("token-alice-0123456");
	for (int i = 0; i < 6; i++) {
		snprintf(path, sizeof path, "/v1/analyses/%s", a[i]);
		r = get(http_port(h), path);
		done += finished(jstr(r.json, "status"));
		resp_free(&r);
		free(a[i]);
	}
	if (done > 2)
		fprintf(stderr, "%d of alice's analyses ran before bob's one\n", done);
	CHECK(done <= 2);
	free(b);
	free(ds_a);
	free(ds_b);
	free(small);
	stop_tenants(h, dir, &o);
}

/* The default quota (1000 datasets) stops alice's 1001st upload, JSON or
 * CSV, with 403 naming it; bob still stores; a deletion makes room. */
static void test_dataset_quota(void)
{
	char *dir = temp_dir(), *small = data_file("codec_small.json"),
	     *csv = data_file("cli_bucketized.csv"), *first = NULL, path[64];
	const char *csv_path = "/v1/datasets?sa=disease&group=group";
	struct http_options o;
	struct http_server *h;
	struct resp r;
	int stored = 0;

	http_options_init(&o);
	h = start_tenants(dir, 0, &o);
	as("token-alice-0123456");
	for (int i = 0; i < 1001; i++) {
		r = post_json(http_port(h), "/v1/datasets", small);
		stored += r.status == 201;
		if (r.status == 201 && !first)
			first = strdup(jstr(r.json, "id"));
		if (r.status != 201)
			check_problem(&r, 403, "tenant_max_datasets", "--tenant-max-datasets 1000");
		resp_free(&r);
	}
	CHECK(stored == 1000);
	r = call(http_port(h), "POST", csv_path, "Content-Type: text/csv\r\n", csv, strlen(csv));
	check_problem(&r, 403, "tenant_max_datasets", "delete some");
	resp_free(&r);
	as("token-bob-0123456789");
	free(upload(http_port(h), small));
	as("token-alice-0123456");
	snprintf(path, sizeof path, "/v1/datasets/%s", first ? first : "");
	r = del(http_port(h), path);
	CHECK(r.status == 204);
	resp_free(&r);
	r = call(http_port(h), "POST", csv_path, "Content-Type: text/csv\r\n", csv, strlen(csv));
	CHECK(r.status == 201);
	resp_free(&r);
	free(first);
	free(csv);
	free(small);
	stop_tenants(h, dir, &o);
}

/* --tenant-max-bytes: a few small datasets fit, then 403 names it. */
static void test_byte_quota(void)
{
	char *dir = temp_dir(), *small = data_file("codec_small.json");
	struct http_options o;
	struct http_server *h;
	struct resp r;
	int stored = 0;

	http_options_init(&o);
	o.tenant_max_bytes = 4096;
	h = start_tenants(dir, 0, &o);
	as("token-alice-0123456");
	for (r = post_json(http_port(h), "/v1/datasets", small); r.status == 201 && stored < 100;
	     r = post_json(http_port(h), "/v1/datasets", small)) {
		stored++;
		resp_free(&r);
	}
	CHECK(stored >= 2 && stored < 100);
	check_problem(&r, 403, "tenant_max_bytes", "--tenant-max-bytes");
	resp_free(&r);
	as("token-bob-0123456789");
	free(upload(http_port(h), small));
	free(small);
	stop_tenants(h, dir, &o);
}

/* A raw request with two Authorization headers (alice's, then bob's). */
static void test_two_authorizations(void)
{
	char *dir = temp_dir();
	const char *req = "GET /v1/datasets HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
			  "Authorization: Bearer token-alice-0123456\r\n"
			  "Authorization: Bearer token-bob-0123456789\r\n\r\n";
	struct http_options o;
	struct http_server *h;
	struct resp r;

	http_options_init(&o);
	h = start_tenants(dir, 0, &o);
	r = roundtrip(http_port(h), req, strlen(req));
	check_problem(&r, 400, NULL, "more than one Authorization header");
	resp_free(&r);
	stop_tenants(h, dir, &o);
}

/* Pages path with limit=1 as the current tenant: the ids in order into
 * ids (n at most max), the cursors seen into cursors. */
static size_t page_all(unsigned port, const char *path, char ids[][32], char cursors[][64],
		       size_t max)
{
	char url[256], link[256];
	const char *next = NULL;
	size_t n = 0;
	struct resp r;

	snprintf(url, sizeof url, "%s?limit=1", path);
	for (;;) {
		r = get(port, url);
		CHECK(r.status == 200);
		if (r.status != 200 || n == max)
			break;
		snprintf(ids[n], 32, "%s",
			 jstr(json_array_get(json_object_get(r.json, "items"), 0), "id"));
		next = jstr(r.json, "next_cursor");
		cursors[n][0] = '\0';
		n++;
		if (!next)
			break;
		snprintf(cursors[n - 1], 64, "%s", next);
		CHECK(hdr(&r, "Link", link, sizeof link) && strstr(link, next));
		snprintf(url, sizeof url, "%s?limit=1&cursor=%s", path, next);
		resp_free(&r);
	}
	resp_free(&r);
	return n;
}

static void bad_cursor(unsigned port, const char *url)
{
	struct resp r = get(port, url);

	check_problem(&r, 400, "cursor", "not a cursor this service returned");
	resp_free(&r);
}

static int all_digits(const char *s)
{
	while (*s && isdigit((unsigned char)*s))
		s++;
	return !*s;
}

/* Interleaved uploads: bob's pages list his three alone, with cursors
 * that are no numbers; alice cannot use them, nor can another list, and
 * a changed or numeric cursor is 400. A dataset's analyses page too. */
static void test_cursors(void)
{
	char *dir = temp_dir(), *small = data_file("codec_small.json"), *mine[3];
	char ids[8][32], cursors[8][64], url[256], forged[64];
	struct http_options o;
	struct http_server *h;
	unsigned port;
	struct resp r;

	http_options_init(&o);
	h = start_tenants(dir, 0, &o);
	port = http_port(h);
	for (int i = 0; i < 3; i++) {
		as("token-alice-0123456");
		free(upload(port, small));
		as("token-bob-0123456789");
		mine[i] = upload(port, small);
	}
	CHECK(page_all(port, "/v1/datasets", ids, cursors, 8) == 3);
	for (int i = 0; i < 3; i++)
		CHECK_STR(ids[i], mine[i]);
	for (int i = 0; i < 2; i++)
		CHECK(strlen(cursors[i]) == HTTP_CURSOR_SIZE - 1 && !all_digits(cursors[i]));
	CHECK(strcmp(cursors[0], cursors[1]) != 0);
	snprintf(url, sizeof url, "/v1/datasets?limit=1&cursor=%s", cursors[0]);
	r = get(port, url);
	CHECK(r.status == 200);
	CHECK_STR(jstr(json_array_get(json_object_get(r.json, "items"), 0), "id"), mine[1]);
	resp_free(&r);
	as("token-alice-0123456");
	bad_cursor(port, url);
	as("token-bob-0123456789");
	snprintf(forged, sizeof forged, "%s", cursors[0]);
	forged[5] = forged[5] == 'A' ? 'B' : 'A';
	snprintf(url, sizeof url, "/v1/datasets?cursor=%s", forged);
	bad_cursor(port, url);
	bad_cursor(port, "/v1/datasets?cursor=2");
	snprintf(url, sizeof url, "/v1/datasets/%s/analyses?cursor=%s", mine[0], cursors[0]);
	bad_cursor(port, url);
	for (int i = 0; i < 3; i++)
		free(analyse(port, mine[0], iterates));
	snprintf(url, sizeof url, "/v1/datasets/%s/analyses", mine[0]);
	CHECK(page_all(port, url, ids, cursors, 8) == 3);
	for (int i = 0; i < 3; i++)
		free(mine[i]);
	free(small);
	stop_tenants(h, dir, &o);
}

/* The sealing alone: it opens for its tenant and path only, any change
 * to the text fails, and the same seq seals differently each time. */
static void test_seal(void)
{
	unsigned char key[STORE_KEY_BYTES];
	char a[HTTP_CURSOR_SIZE], b[HTTP_CURSOR_SIZE];
	int64_t seq;

	for (size_t i = 0; i < sizeof key; i++)
		key[i] = (unsigned char)(i * 37 + 11);
	http_cursor_seal(key, "alice", "/v1/datasets", 123456789, a);
	http_cursor_seal(key, "alice", "/v1/datasets", 123456789, b);
	CHECK(strlen(a) == HTTP_CURSOR_SIZE - 1 && strcmp(a, b) != 0);
	CHECK(http_cursor_open(key, "alice", "/v1/datasets", a, &seq) == 0 && seq == 123456789);
	CHECK(http_cursor_open(key, "alice", "/v1/datasets", b, &seq) == 0 && seq == 123456789);
	CHECK(http_cursor_open(key, "bob", "/v1/datasets", a, &seq) == -1);
	CHECK(http_cursor_open(key, "alice", "/v1/datasets/x", a, &seq) == -1);
	CHECK(http_cursor_open(key, "alic", "e/v1/datasets", a, &seq) == -1);
	for (size_t i = 0; i < HTTP_CURSOR_SIZE - 1; i++) {
		snprintf(b, sizeof b, "%s", a);
		b[i] = b[i] == '-' ? '_' : '-';
		CHECK(http_cursor_open(key, "alice", "/v1/datasets", b, &seq) == -1);
	}
	CHECK(http_cursor_open(key, "alice", "/v1/datasets", "", &seq) == -1);
	CHECK(http_cursor_open(key, "alice", "/v1/datasets", "12", &seq) == -1);
	key[0] ^= 1; /* either half of the key */
	CHECK(http_cursor_open(key, "alice", "/v1/datasets", a, &seq) == -1);
	key[0] ^= 1;
	key[20] ^= 1;
	CHECK(http_cursor_open(key, "alice", "/v1/datasets", a, &seq) == -1);
}

int main(void)
{
	test_seal();
	test_two_authorizations();
	test_cursors();
	test_byte_quota();
	test_dataset_quota();
	test_queue_share();
	test_round_robin();
	return check_done();
}
