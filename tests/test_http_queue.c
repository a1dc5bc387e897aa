/*
 * The HTTP service with a slow analysis running (http_client.h's
 * slow_setup): one worker and a queue of one (a running analysis, a
 * queued one, then 503; cancelling the running one lets the queued one
 * through; its progress and /metrics), http_stop and http_start on the
 * same directory (everything still there, the running analysis runs
 * again), and 8 clients at once. The rest of the service is in
 * test_http.c.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http_client.h"

static const char *small_knowledge =
    "{\"rules\": [{\"if\": {\"sex\": \"M\"}, \"then\": \"flu\", \"probability\": 0.5}]}";

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
	    /* the counter agrees with the state (a DELETE cancelled it) */
	    "pmaxent_jobs_finished_total{outcome=\"cancelled\"} 1\n",
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

	t0 = solver_now();
	snprintf(path, sizeof path, "/v1/analyses/%s", slow ? slow : "");
	r = del(port, path);
	CHECK(r.status == 200);
	CHECK_STR(jstr(r.json, "status"), "cancelled");
	resp_free(&r);
	r = wait_done(port, next ? next : "");
	CHECK_STR(jstr(r.json, "status"), "succeeded");
	printf("queued analysis done %.2f s after the cancel\n", solver_now() - t0);
	CHECK(solver_now() - t0 < 10);
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

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	slow_setup();
	test_queue_and_cancel();
	test_restart();
	test_concurrency();
	free(slow_dataset);
	return check_done();
}
