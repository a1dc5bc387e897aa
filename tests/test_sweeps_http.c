/*
 * Sweeps over HTTP (server/sweeps.c, issue 24 point 2): a sweep of Figure
 * 1 gives sweep_run's points, its chart is SVG, bad requests are 422
 * naming the field, DELETE cancels a running one, another tenant sees
 * nothing, and a sweep running at a shutdown runs again after it. Slow
 * sweeps stall on purpose (http_options.test_stall) at each solve that
 * iterates, so no timing depends on the solver.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <math.h>
#include <signal.h>

#include "http_client.h"

static const char *request = "{\"kinds\": [\"positive\", \"mixed\"], \"k\": [0, 1, 2],"
			     " \"min_support\": 1}";
/* On generated_json: the first point (no rules) is solved in closed form,
 * the second iterates, so it stalls (Figure 1's points never iterate). */
static const char *slow = "{\"kinds\": [\"mixed\"], \"k\": [0, 40], \"qi_attributes\": [1],"
			  " \"solver\": {\"method\": \"full-dual\"}}";

static struct http_server *start_opts(const char *dir, double stall, const char *tokens)
{
	struct http_options o;

	http_options_init(&o);
	o.workers = 1;
	o.test_stall = stall;
	o.token_file = tokens;
	return start_with(dir, &o);
}

/* Uploads tests/data/figure1.csv; its id (caller frees). */
static char *upload_figure1(unsigned port)
{
	char *csv = data_file("figure1.csv"), *id;
	struct resp r = call(port, "POST", "/v1/datasets?sa=disease&group=group",
			     "Content-Type: text/csv\r\n", csv, strlen(csv));

	CHECK(r.status == 201);
	id = r.status == 201 ? strdup(jstr(r.json, "id")) : NULL;
	resp_free(&r);
	free(csv);
	return id;
}

/* Starts a sweep; its id (caller frees). */
static char *start_sweep(unsigned port, const char *ds, const char *body)
{
	char path[128], loc[128], want[128];
	struct resp r;
	char *id;

	snprintf(path, sizeof path, "/v1/datasets/%s/sweeps", ds);
	r = post_json(port, path, body);
	if (r.status != 202)
		fprintf(stderr, "sweep: %d %s\n", r.status, r.body ? r.body : "");
	CHECK(r.status == 202);
	id = r.status == 202 ? strdup(jstr(r.json, "id")) : NULL;
	CHECK(id && !strncmp(id, "sw_", 3));
	CHECK(finished(jstr(r.json, "status")) == 0);
	snprintf(want, sizeof want, "/v1/sweeps/%s", id ? id : "");
	CHECK_STR(hdr(&r, "Location", loc, sizeof loc), want);
	resp_free(&r);
	return id;
}

/* Polls the sweep until it has left "queued" (until_running) or has
 * finished, or for 120 s; its last GET. */
static struct resp wait_sweep(unsigned port, const char *id, int until_running)
{
	char path[128];
	struct resp r = {0};
	double t0 = solver_now();
	const char *st;

	snprintf(path, sizeof path, "/v1/sweeps/%s", id);
	for (;;) {
		resp_free(&r);
		r = get(port, path);
		st = jstr(r.json, "status");
		if (r.status != 200 || solver_now() - t0 > 120 ||
		    (until_running ? st && strcmp(st, "queued") : finished(st)))
			return r;
		usleep(20000);
	}
}

/* Polls until the sweep has done n points (or 60 s); its last GET. */
static struct resp wait_points(unsigned port, const char *id, json_int_t n)
{
	char path[128];
	struct resp r = {0};
	double t0 = solver_now();

	snprintf(path, sizeof path, "/v1/sweeps/%s", id);
	for (;;) {
		resp_free(&r);
		r = get(port, path);
		if (r.status != 200 || solver_now() - t0 > 60 ||
		    json_integer_value(
			json_object_get(json_object_get(r.json, "progress"), "points_done")) >= n)
			return r;
		usleep(20000);
	}
}

/* sweep_run's points of request on Figure 1. */
static json_t *reference_points(void)
{
	char *csv = data_file("figure1.csv");
	struct csv_table t = {0};
	struct dataset *ds = NULL;
	struct sweep_request q = {0};
	struct solver_options o;
	struct pm_error err = {0};
	json_t *req = json_loads(request, 0, NULL), *out = NULL, *points;

	solver_options_init(&o);
	CHECK(!csv_parse(csv, strlen(csv), &t, &err));
	CHECK(!csv_dataset(&t, "disease", "group", NULL, &ds, &err));
	CHECK(!codec_sweep_request(req, ds, &q, &err));
	CHECK(!sweep_run(ds, &q, &o, NULL, &out, &err));
	points = json_incref(json_object_get(out, "points"));
	json_decref(out);
	json_decref(req);
	sweep_request_finish(&q);
	dataset_destroy(ds);
	csv_table_finish(&t);
	free(csv);
	return points;
}

/* The sweep's points are sweep_run's, to 1e-12. */
static void check_points(const json_t *sweep)
{
	json_t *want = reference_points(), *got = json_object_get(sweep, "points"), *p;
	const json_t *progress = json_object_get(sweep, "progress");
	size_t i;

	CHECK(json_array_size(got) == 6 && json_array_size(want) == 6);
	CHECK(json_integer_value(json_object_get(progress, "points_done")) == 6);
	CHECK(json_integer_value(json_object_get(progress, "points_total")) == 6);
	json_array_foreach(want, i, p)
	{
		const json_t *g = json_array_get(got, i);
		const json_t *a = json_object_get(g, "estimation_accuracy");
		const json_t *b = json_object_get(p, "estimation_accuracy");

		CHECK_STR(jstr(g, "kind"), jstr(p, "kind"));
		CHECK(json_integer_value(json_object_get(g, "k")) ==
		      json_integer_value(json_object_get(p, "k")));
		CHECK(json_is_null(a) == json_is_null(b));
		if (json_is_number(a) && json_is_number(b))
			CHECK(fabs(json_number_value(a) - json_number_value(b)) <= 1e-12);
	}
	json_decref(want);
}

static void check_chart(unsigned port, const char *id)
{
	char path[128], ct[64];
	struct resp r;

	snprintf(path, sizeof path, "/v1/sweeps/%s/chart.svg", id);
	r = get(port, path);
	CHECK(r.status == 200);
	CHECK_STR(hdr(&r, "Content-Type", ct, sizeof ct), "image/svg+xml");
	CHECK(r.body && strstr(r.body, "<svg") && strstr(r.body, "mixed"));
	resp_free(&r);
	check_etag(port, path);
}

/* A sweep of Figure 1 from start to end, its chart, then its delete. */
static void test_sweep(void)
{
	char *dir = temp_dir(), path[128];
	struct http_server *h = start_opts(dir, 0, NULL);
	unsigned port = http_port(h);
	char *ds = upload_figure1(port), *id = start_sweep(port, ds, request);
	struct resp r = wait_sweep(port, id, 0);

	CHECK_STR(jstr(r.json, "status"), "succeeded");
	CHECK_STR(jstr(r.json, "dataset_id"), ds);
	CHECK(json_is_object(json_object_get(r.json, "request")));
	check_points(r.json);
	resp_free(&r);
	/* /metrics counts it */
	r = get(port, "/metrics");
	CHECK(r.status == 200 && r.body &&
	      strstr(r.body, "pmaxent_sweeps{state=\"succeeded\"} 1\n"));
	resp_free(&r);
	/* the dataset's list has it, without its points */
	snprintf(path, sizeof path, "/v1/datasets/%s/sweeps", ds);
	r = get(port, path);
	CHECK(r.status == 200 && json_array_size(json_object_get(r.json, "items")) == 1);
	CHECK_STR(jstr(json_array_get(json_object_get(r.json, "items"), 0), "id"), id);
	CHECK(!json_object_get(json_array_get(json_object_get(r.json, "items"), 0), "points"));
	resp_free(&r);
	snprintf(path, sizeof path, "/v1/sweeps/%s", id);
	check_etag(port, path);
	check_chart(port, id);
	r = del(port, path);
	CHECK(r.status == 204);
	resp_free(&r);
	check_status(port, "GET", path, 404, id);
	http_stop(h);
	free(ds);
	free(id);
	rm_tree(dir);
	free(dir);
}

static void check_bad(unsigned port, const char *path, const char *body, const char *field)
{
	struct resp r = post_json(port, path, body);

	check_problem(&r, 422, field, "");
	resp_free(&r);
}

/* Bad requests change nothing: 422 naming the field, 415, 404. */
static void test_bad_requests(void)
{
	char *dir = temp_dir(), path[128], *pub = data_file("codec_published.json");
	struct http_server *h = start_opts(dir, 0, NULL);
	unsigned port = http_port(h);
	char *ds = upload_figure1(port), *pds = upload(port, pub);
	struct resp r;

	snprintf(path, sizeof path, "/v1/datasets/%s/sweeps", ds);
	check_bad(port, path, "{\"kinds\": [\"postive\"], \"k\": [1]}", "kinds[0]");
	check_bad(port, path, "{\"kinds\": [\"positive\"], \"k\": [1, -1]}", "k[1]");
	check_bad(port, path, "{\"kinds\": [\"positive\"]}", "k");
	check_bad(port, path,
		  "{\"kinds\": [\"positive\"], \"k\": [1], \"solver\": {\"tolerance\": \"x\"}}",
		  "solver.tolerance");
	check_bad(port, path, "{\"kinds\": [\"positive\"], \"k\": [1], \"report\": {\"c\": \"x\"}}",
		  "report.c");
	/* beyond the service's limit for a point: 422 naming the setting */
	r = post_json(
	    port, path,
	    "{\"kinds\": [\"positive\"], \"k\": [1], \"solver\": {\"time_limit\": 7200}}");
	check_problem(&r, 422, "solver.time_limit", "at most 3600 seconds on this service");
	CHECK_CONTAINS(jstr(r.json, "detail"), "--analysis-time-limit, for each point");
	resp_free(&r);
	r = call(port, "POST", path, "Content-Type: text/plain\r\n", "x", 1);
	CHECK(r.status == 415);
	resp_free(&r);
	snprintf(path, sizeof path, "/v1/datasets/%s/sweeps", pds);
	r = post_json(port, path, "{\"kinds\": [\"positive\"], \"k\": [1]}");
	check_problem(&r, 422, NULL, "published form");
	resp_free(&r);
	check_status(port, "GET", "/v1/sweeps/sw_0123456789abcdef", 404, "sw_0123456789abcdef");
	check_status(port, "GET", "/v1/sweeps/an_0123456789abcdef", 404, "");
	http_stop(h);
	free(ds);
	free(pds);
	free(pub);
	rm_tree(dir);
	free(dir);
}

/* DELETE of a running sweep cancels it (200, "cancelled"); another
 * tenant sees none of it. */
static void test_cancel_and_tenants(void)
{
	char *dir = temp_dir(), path[128], tokens[512], *gen;
	struct http_server *h;
	unsigned port;
	char *ds, *id;
	struct resp r;

	snprintf(tokens, sizeof tokens, "%s/tokens", dir);
	write_file(tokens, "token-alice-0123456789 alice\ntoken-bob-0123456789 bob\n");
	h = start_opts(dir, 60, tokens);
	port = http_port(h);
	as("token-alice-0123456789");
	gen = generated_json(500);
	ds = upload(port, gen);
	id = start_sweep(port, ds, slow);
	/* the points appear as they finish: the first, while the second stalls */
	r = wait_points(port, id, 1);
	CHECK_STR(jstr(r.json, "status"), "running");
	CHECK(json_is_object(json_array_get(json_object_get(r.json, "points"), 0)));
	CHECK(json_is_null(json_array_get(json_object_get(r.json, "points"), 1)));
	resp_free(&r);
	check_chart(port, id);
	snprintf(path, sizeof path, "/v1/sweeps/%s", id);
	as("token-bob-0123456789");
	check_status(port, "GET", path, 404, id);
	check_status(port, "DELETE", path, 404, id);
	snprintf(path, sizeof path, "/v1/sweeps/%s/chart.svg", id);
	check_status(port, "GET", path, 404, id);
	snprintf(path, sizeof path, "/v1/datasets/%s/sweeps", ds);
	r = post_json(port, path, slow);
	check_problem(&r, 404, NULL, ds);
	resp_free(&r);
	as("token-alice-0123456789");
	snprintf(path, sizeof path, "/v1/sweeps/%s", id);
	r = del(port, path);
	if (r.status != 200)
		fprintf(stderr, "DELETE: %d %s\n", r.status, r.body ? r.body : "");
	CHECK(r.status == 200);
	CHECK_STR(jstr(r.json, "status"), "cancelled");
	resp_free(&r);
	r = wait_sweep(port, id, 0);
	CHECK_STR(jstr(r.json, "status"), "cancelled");
	CHECK(json_integer_value(json_object_get(json_object_get(r.json, "progress"),
						 "points_done")) == 1); /* kept */
	resp_free(&r);
	as(NULL);
	http_stop(h);
	free(gen);
	free(ds);
	free(id);
	rm_tree(dir);
	free(dir);
}

/* Deleting a dataset cancels its running sweep (the one worker is free
 * again at once) and deletes it. */
static void test_dataset_delete(void)
{
	char *dir = temp_dir(), *gen = generated_json(500), path[128];
	struct http_server *h = start_opts(dir, 60, NULL);
	unsigned port = http_port(h);
	char *ds = upload(port, gen), *fig = upload_figure1(port),
	     *id = start_sweep(port, ds, slow);
	char *next;
	struct resp r = wait_points(port, id, 1);

	resp_free(&r);
	snprintf(path, sizeof path, "/v1/datasets/%s", ds);
	r = del(port, path);
	CHECK(r.status == 204);
	resp_free(&r);
	snprintf(path, sizeof path, "/v1/sweeps/%s", id);
	check_status(port, "GET", path, 404, id);
	next = start_sweep(port, fig, request);
	r = wait_sweep(port, next, 0);
	CHECK_STR(jstr(r.json, "status"), "succeeded");
	resp_free(&r);
	http_stop(h);
	free(next);
	free(fig);
	free(gen);
	free(ds);
	free(id);
	rm_tree(dir);
	free(dir);
}

/* A sweep running at a shutdown is queued again (http_stop, as for
 * analyses), and runs again from its start after the restart. */
static void test_restart(void)
{
	char *dir = temp_dir(), *gen = generated_json(500);
	struct http_server *h = start_opts(dir, 60, NULL);
	unsigned port = http_port(h);
	char *ds = upload(port, gen), *id = start_sweep(port, ds, slow);
	struct resp r = wait_sweep(port, id, 1);
	const json_t *progress;

	CHECK_STR(jstr(r.json, "status"), "running");
	resp_free(&r);
	http_stop(h);
	h = start_opts(dir, 0, NULL);
	port = http_port(h);
	r = wait_sweep(port, id, 0);
	CHECK_STR(jstr(r.json, "status"), "succeeded");
	CHECK(json_integer_value(json_object_get(r.json, "attempts")) == 2);
	progress = json_object_get(r.json, "progress");
	CHECK(json_integer_value(json_object_get(progress, "points_done")) == 2);
	CHECK(json_integer_value(json_object_get(progress, "points_total")) == 2);
	CHECK(json_is_number(json_object_get(json_array_get(json_object_get(r.json, "points"), 1),
					     "estimation_accuracy")));
	resp_free(&r);
	http_stop(h);
	free(gen);
	free(ds);
	free(id);
	rm_tree(dir);
	free(dir);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	test_sweep();
	test_bad_requests();
	test_cancel_and_tenants();
	test_dataset_delete();
	test_restart();
	return check_done();
}
