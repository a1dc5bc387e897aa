/*
 * Bounded work in the analysis resources (server/analyses.c, jobs.c):
 * solve time limits, the service's defaults and caps for analyses and
 * POST /v1/solve, and a synchronous solve cancelled when its client goes
 * away. Solves are made slow on purpose (http_options.test_stall: each
 * solve that iterates waits at its first progress check, honouring the
 * time limit and cancels), so that no timing depends on the solver.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>

#include "http_client.h"
#include "http_internal.h"
#include "isolate.h"

/* needs Newton iterations (a probabilistic rule), so the stall applies */
static const char *iterates =
    "{\"rules\": [{\"if\": {\"sex\": \"M\"}, \"then\": \"flu\", \"probability\": 0.5}]}";

static struct http_server *start_stalled(const char *dir, size_t workers, double stall,
					 double solve_limit, double analysis_limit)
{
	struct http_options o;

	http_options_init(&o);
	o.workers = workers;
	o.test_stall = stall;
	o.solve_time_limit = solve_limit;
	o.analysis_time_limit = analysis_limit;
	return start_with(dir, &o);
}

static void check_time_limit_result(const json_t *res)
{
	CHECK_STR(jstr(res, "status"), "not_converged");
	CHECK_STR(jstr(res, "reason"), "time_limit");
	CHECK(json_array_size(json_object_get(res, "posterior")) > 0);
}

/* POST /v1/solve: the service's default limit, a shorter one asked for,
 * and a longer one refused. */
static void test_sync_limits(void)
{
	char *dir = temp_dir(), *small = data_file("codec_small.json"), body[8192];
	struct http_server *h = start_stalled(dir, 1, 60, 1, 60);
	unsigned port = http_port(h);
	struct resp r;
	double t0 = solver_now();

	snprintf(body, sizeof body, "{\"dataset\": %s, \"knowledge\": %s}", small, iterates);
	r = post_json(port, "/v1/solve", body);
	CHECK(r.status == 200);
	check_time_limit_result(r.json);
	CHECK(solver_now() - t0 > 0.9 && solver_now() - t0 < 5);
	resp_free(&r);
	snprintf(body, sizeof body,
		 "{\"dataset\": %s, \"knowledge\": %s, \"solver\": {\"time_limit\": 0.2}}", small,
		 iterates);
	t0 = solver_now();
	r = post_json(port, "/v1/solve", body);
	CHECK(r.status == 200);
	check_time_limit_result(r.json);
	CHECK(solver_now() - t0 < 0.9);
	resp_free(&r);
	snprintf(body, sizeof body,
		 "{\"dataset\": %s, \"knowledge\": %s, \"solver\": {\"time_limit\": 5}}", small,
		 iterates);
	r = post_json(port, "/v1/solve", body);
	check_problem(&r, 422, "solver.time_limit", "at most 1 seconds on this service");
	CHECK_CONTAINS(jstr(r.json, "detail"), "--solve-time-limit");
	resp_free(&r);
	http_stop(h);
	free(small);
	rm_tree(dir);
	free(dir);
}

/* An analysis that runs out of time still succeeds, with that result;
 * one asking for more than the service allows is refused. */
static void test_analysis_limits(void)
{
	char *dir = temp_dir(), *small = data_file("codec_small.json"), *ds, *an, body[512];
	struct http_server *h = start_stalled(dir, 1, 60, 1, 0.5);
	unsigned port = http_port(h);
	struct resp r;

	ds = upload(port, small);
	snprintf(body, sizeof body, "{\"knowledge\": %s}", iterates);
	an = analyse(port, ds, body);
	r = wait_done(port, an);
	CHECK_STR(jstr(r.json, "status"), "succeeded");
	check_time_limit_result(json_object_get(r.json, "result"));
	resp_free(&r);
	free(an);
	snprintf(body, sizeof body, "{\"knowledge\": %s, \"solver\": {\"time_limit\": 60}}",
		 iterates);
	snprintf(body + 256, 256, "/v1/datasets/%s/analyses", ds);
	r = post_json(port, body + 256, body);
	check_problem(&r, 422, "solver.time_limit", "--analysis-time-limit");
	resp_free(&r);
	http_stop(h);
	free(ds);
	free(small);
	rm_tree(dir);
	free(dir);
}

/* A dataset of 28 QI attributes and six records: mining every antecedent
 * size visits 2^28 attribute sets (half a minute). */
static char *wide_json(void)
{
	struct http_text_buf t = {0};
	char buf[64];

	http_put(&t, "{\"qi_attributes\": [", strlen("{\"qi_attributes\": ["));
	for (int a = 0; a < 28; a++) {
		int n = snprintf(buf, sizeof buf, "%s\"a%d\"", a ? ", " : "", a);

		http_put(&t, buf, (size_t)n);
	}
	snprintf(buf, sizeof buf, "], \"sa_attribute\": \"s\", \"records\": [");
	http_put(&t, buf, strlen(buf));
	for (int i = 0; i < 6; i++) {
		snprintf(buf, sizeof buf, "%s{\"qi\": [", i ? ", " : "");
		http_put(&t, buf, strlen(buf));
		for (int a = 0; a < 28; a++) {
			int n =
			    snprintf(buf, sizeof buf, "%s\"v%d\"", a ? ", " : "", (i * 7 + a) % 3);

			http_put(&t, buf, (size_t)n);
		}
		snprintf(buf, sizeof buf, "], \"group\": %d, \"sa\": \"s%d\"}", i / 2, i % 2);
		http_put(&t, buf, strlen(buf));
	}
	http_put(&t, "]}", 3);
	return t.s;
}

/* The time limit covers mining: a bound that would mine for half a
 * minute is refused at the limit, naming what to change. */
static void test_mining_limit(void)
{
	char *dir = temp_dir(), *ds = wide_json(), *body = malloc(strlen(ds) + 256);
	struct http_server *h = start_stalled(dir, 1, 0, 1, 1);
	struct resp r;
	double t0 = solver_now();

	sprintf(body,
		"{\"dataset\": %s, \"knowledge\": {\"mine\": {\"positive\": 5, "
		"\"negative\": 5, \"min_support\": 1}}}",
		ds);
	r = post_json(http_port(h), "/v1/solve", body);
	check_problem(&r, 422, "knowledge.mine",
		      "did not finish within the time limit of 1 seconds");
	CHECK(solver_now() - t0 < 3);
	resp_free(&r);
	http_stop(h);
	free(body);
	free(ds);
	rm_tree(dir);
	free(dir);
}

struct client {
	unsigned port;
	const char *body;
	double hold; /* seconds before hanging up */
};

/* Sends a request and hangs up after c->hold seconds, unanswered. */
static void *hang_up(void *arg)
{
	struct client *c = arg;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)c->port)};
	char head[256];
	int fd = socket(AF_INET, SOCK_STREAM, 0), n;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	n = snprintf(head, sizeof head,
		     "POST /v1/solve HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
		     "Content-Length: %zu\r\n\r\n",
		     strlen(c->body));
	if (!connect(fd, (struct sockaddr *)&a, sizeof a)) {
		send(fd, head, (size_t)n, MSG_NOSIGNAL);
		send(fd, c->body, strlen(c->body), MSG_NOSIGNAL);
		usleep((useconds_t)(c->hold * 1e6));
	}
	close(fd);
	return NULL;
}

/*
 * One synchronous slot (one worker), held by a solve stalled for a minute:
 * another solve gets 503 while it runs; once its client hangs up, the
 * solve is cancelled and the slot free within a second, and the
 * cancellation is counted.
 */
static void test_client_gone(void)
{
	char *dir = temp_dir(), *small = data_file("codec_small.json"), body[8192], plain[8192];
	struct http_server *h = start_stalled(dir, 1, 60, 120, 120);
	struct client c = {http_port(h), body, 1.0};
	pthread_t t;
	struct resp r;
	double gone;

	snprintf(body, sizeof body, "{\"dataset\": %s, \"knowledge\": %s}", small, iterates);
	snprintf(plain, sizeof plain, "{\"dataset\": %s}", small); /* no iterations: no stall */
	pthread_create(&t, NULL, hang_up, &c);
	usleep(400000);
	r = post_json(c.port, "/v1/solve", plain);
	check_problem(&r, 503, NULL, "synchronous solves are running");
	resp_free(&r);
	pthread_join(t, NULL);
	gone = solver_now();
	do {
		resp_free(&r);
		usleep(20000);
		r = post_json(c.port, "/v1/solve", plain);
	} while (r.status == 503 && solver_now() - gone < 10);
	CHECK(r.status == 200);
	fprintf(stderr, "client gone: the slot was free again after %.2f s\n", solver_now() - gone);
	CHECK(solver_now() - gone < 1.5);
	resp_free(&r);
	r = get(c.port, "/metrics");
	CHECK_CONTAINS(r.body, "pmaxent_sync_solves_cancelled_total 1\n");
	resp_free(&r);
	http_stop(h);
	free(small);
	rm_tree(dir);
	free(dir);
}

/* One metrics sample's value (a line "name{labels} value"), -1 if
 * absent. */
static double sample(const char *text, const char *name)
{
	char line[128];
	const char *p;

	snprintf(line, sizeof line, "\n%s", name);
	p = strstr(text, line);
	return p ? strtod(p + strlen(line), NULL) : -1;
}

/* Parsed datasets are kept (store_cache.c): three analyses of one dataset
 * parse it once, the validation of the first included; a delete lets it
 * go; with --dataset-cache 0 every lookup parses. */
static void test_dataset_cache(size_t mb, double hits, double misses)
{
	char *dir = temp_dir(), *small = data_file("codec_small.json"), *ds, *an, path[128];
	struct http_options o;
	struct http_server *h;
	struct resp r;

	http_options_init(&o);
	o.workers = 1;
	o.dataset_cache_mb = mb;
	h = start_with(dir, &o);
	ds = upload(http_port(h), small);
	for (int i = 0; i < 3; i++) {
		an = analyse(http_port(h), ds, "{}");
		r = wait_done(http_port(h), an);
		CHECK_STR(jstr(r.json, "status"), "succeeded");
		resp_free(&r);
		free(an);
	}
	r = get(http_port(h), "/metrics");
	CHECK(sample(r.body, "pmaxent_dataset_cache_lookups_total{result=\"hit\"} ") == hits);
	CHECK(sample(r.body, "pmaxent_dataset_cache_lookups_total{result=\"miss\"} ") == misses);
	CHECK(sample(r.body, "pmaxent_dataset_cache_entries ") == (mb ? 1 : 0));
	CHECK(strstr(r.body, "\npmaxent_dataset_cache_load_seconds_total ") != NULL);
	resp_free(&r);
	snprintf(path, sizeof path, "/v1/datasets/%s", ds);
	r = del(http_port(h), path);
	CHECK(r.status == 204);
	resp_free(&r);
	r = get(http_port(h), "/metrics");
	CHECK(sample(r.body, "pmaxent_dataset_cache_entries ") == 0);
	CHECK(sample(r.body, "pmaxent_dataset_cache_bytes ") == 0);
	resp_free(&r);
	http_stop(h);
	free(ds);
	free(small);
	rm_tree(dir);
	free(dir);
}

/* A solve that crashes its worker process (the tests' hook: a dataset
 * named "crash-me" raises SIGSEGV in it) ends failed with the signal
 * named, as an analysis and as POST /v1/solve; an analysis running beside
 * it finishes, and the service goes on answering. */
static void test_worker_crash(void)
{
	char *dir = temp_dir(), *small = data_file("codec_small.json"), body[8192], *crash;
	struct http_options o;
	struct http_server *h;
	unsigned port;
	char *ds, *bad, *slow, *dead;
	struct resp r;
	json_t *doc;

	if (!isolate_forks()) {
		printf("solves run in process in this build (sanitizer): crash skipped\n");
		free(small);
		rm_tree(dir);
		free(dir);
		return;
	}
	doc = json_loads(small, 0, NULL);
	json_object_set_new(doc, "name", json_string("crash-me"));
	crash = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	http_options_init(&o);
	o.workers = 2;
	o.test_stall = 2.0;
	o.test_crash = "crash-me";
	o.test_signal = SIGSEGV;
	h = start_with(dir, &o);
	port = http_port(h);
	ds = upload(port, small);
	bad = upload(port, crash);
	snprintf(body, sizeof body, "{\"knowledge\": %s}", iterates);
	slow = analyse(port, ds, body);
	dead = analyse(port, bad, body);
	r = wait_done(port, dead);
	CHECK_STR(jstr(r.json, "status"), "failed");
	CHECK_CONTAINS(jstr(json_object_get(r.json, "problem"), "detail"), "signal 11 (SIGSEGV)");
	resp_free(&r);
	snprintf(body, sizeof body, "/v1/analyses/%s", slow);
	r = get(port, body); /* the stall holds it for two seconds */
	CHECK_STR(jstr(r.json, "status"), "running");
	resp_free(&r);
	r = wait_done(port, slow);
	CHECK_STR(jstr(r.json, "status"), "succeeded");
	resp_free(&r);
	snprintf(body, sizeof body, "{\"dataset\": %s}", crash);
	r = post_json(port, "/v1/solve", body);
	check_problem(&r, 500, NULL, "signal 11 (SIGSEGV)");
	resp_free(&r);
	snprintf(body, sizeof body, "{\"dataset\": %s}", small);
	r = post_json(port, "/v1/solve", body);
	CHECK(r.status == 200 && jstr(r.json, "status"));
	resp_free(&r);
	http_stop(h);
	free(ds), free(bad), free(slow), free(dead), free(crash), free(small);
	rm_tree(dir);
	free(dir);
}

/* A solve over its worker's memory ends that job failed, naming the
 * limit, as an analysis and as POST /v1/solve. The limit counts what the
 * worker process adds to the heap it inherits, whose free space it may
 * use too: so this runs first, in a process that has freed little, on a
 * table whose solve needs tens of megabytes. */
static void test_worker_memory(void)
{
	char *dir = temp_dir(), *big = generated_json(20000), *body, *ds, *an;
	struct http_options o;
	struct http_server *h;
	struct resp r;
	unsigned port;

	if (!isolate_memory_limited()) {
		printf("worker memory not limited in this build (sanitizer): skipped\n");
		free(big);
		free(dir);
		return;
	}
	http_options_init(&o);
	o.workers = 1;
	o.worker_memory = (size_t)2 << 20;
	o.max_solve_body = (size_t)64 << 20;
	h = start_with(dir, &o);
	port = http_port(h);
	ds = upload(port, big);
	an = analyse(port, ds, "{}");
	r = wait_done(port, an);
	CHECK_STR(jstr(r.json, "status"), "failed");
	CHECK_CONTAINS(jstr(json_object_get(r.json, "problem"), "detail"),
		       "its worker may use at most 2 MiB (pmaxent serve --worker-memory)");
	resp_free(&r);
	body = malloc(strlen(big) + 32);
	sprintf(body, "{\"dataset\": %s}", big);
	r = post_json(port, "/v1/solve", body);
	CHECK(r.status == 500); /* before check_problem, which would print a result */
	if (r.status == 500)
		check_problem(&r, 500, NULL, "at most 2 MiB");
	resp_free(&r);
	http_stop(h);
	free(body), free(ds), free(an), free(big);
	rm_tree(dir);
	free(dir);
}

/* Reads of a stored result (store_results.c, result_stream.c): the full
 * view streams exactly the stored text (more than one chunk here), with
 * the request; ?view=summary has neither request nor posterior; each view
 * has its own ETag; a 304 reads no chunk (it still comes when the chunks
 * are gone behind the service's back, while a full GET then breaks off). */
static void test_stored_reads(void)
{
	char *dir = temp_dir(), *big = generated_json(20000), path[256], inm[128], etag[64],
	     sum_etag[64], db_path[4200];
	struct http_server *h = start(dir, 1, 8, NULL, 0);
	unsigned port = http_port(h);
	char *ds = upload(port, big), *an = analyse(port, ds, "{}");
	struct resp r = wait_done(port, an), s;
	struct store_row row = {0};
	struct pm_error err = {0};
	json_t *stored;
	sqlite3 *db;

	CHECK_STR(jstr(r.json, "status"), "succeeded");
	CHECK(r.len > 2 * STORE_RESULT_CHUNK);
	CHECK(store_analysis_get(h->store, an, NULL, &row, &err) == PM_OK);
	stored = row.result ? json_loads(row.result, 0, NULL) : NULL;
	CHECK(stored && json_equal(stored, json_object_get(r.json, "result")));
	CHECK(json_is_object(json_object_get(r.json, "request")));
	json_decref(stored);
	store_row_finish(&row);
	CHECK(hdr(&r, "ETag", etag, sizeof etag) != NULL);
	snprintf(path, sizeof path, "/v1/analyses/%s?view=summary", an);
	s = get(port, path);
	CHECK(s.status == 200 && hdr(&s, "ETag", sum_etag, sizeof sum_etag));
	CHECK(strcmp(etag, sum_etag) && s.len < 20000);
	CHECK(json_is_object(json_object_get(json_object_get(s.json, "result"), "privacy")));
	CHECK(!json_object_get(json_object_get(s.json, "result"), "posterior"));
	CHECK(!json_object_get(json_object_get(s.json, "result"), "rules"));
	CHECK(!json_object_get(s.json, "request"));
	CHECK_STR(jstr(s.json, "status"), "succeeded");
	resp_free(&s);
	snprintf(path, sizeof path, "/v1/analyses/%s?view=nope", an);
	s = get(port, path);
	check_problem(&s, 400, "view", "must be");
	resp_free(&s);
	/* the chunks gone: a 304 and a summary never needed them */
	snprintf(db_path, sizeof db_path, "%s/pmaxent.db", dir);
	CHECK(sqlite3_open(db_path, &db) == SQLITE_OK);
	CHECK(sqlite3_exec(db, "DELETE FROM analysis_texts WHERE part = 1", NULL, NULL, NULL) ==
	      SQLITE_OK);
	sqlite3_close(db);
	snprintf(inm, sizeof inm, "If-None-Match: %s\r\n", etag);
	snprintf(path, sizeof path, "/v1/analyses/%s", an);
	s = call(port, "GET", path, inm, NULL, 0);
	CHECK(s.status == 304 && s.len == 0);
	resp_free(&s);
	snprintf(inm, sizeof inm, "If-None-Match: %s\r\n", sum_etag);
	snprintf(path, sizeof path, "/v1/analyses/%s?view=summary", an);
	s = call(port, "GET", path, inm, NULL, 0);
	CHECK(s.status == 304 && s.len == 0);
	resp_free(&s);
	snprintf(path, sizeof path, "/v1/analyses/%s", an);
	s = get(port, path);
	CHECK(!s.json && s.len < r.len);
	resp_free(&s);
	resp_free(&r);
	http_stop(h);
	free(ds), free(an), free(big);
	rm_tree(dir);
	free(dir);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	test_worker_memory();		/* first: see its comment */
	test_dataset_cache(1024, 5, 1); /* 3 POSTs and 3 runs: 6 lookups */
	test_dataset_cache(0, 0, 6);
	test_sync_limits();
	test_analysis_limits();
	test_client_gone();
	test_mining_limit();
	test_worker_crash();
	test_stored_reads();
	return check_done();
}
