/*
 * The sweep resources of the HTTP API (SPEC 4.2 and 6, issue 24): POST
 * /v1/datasets/{id}/sweeps validates a sweep request and queues it on the
 * analyses' worker pool (jobs.c), GET /v1/sweeps/{id} shows it with the
 * points solved so far, DELETE cancels or deletes it as for analyses,
 * and /chart.svg draws the points so far (sweep_chart, as `pmaxent sweep
 * --svg`). api.c routes the requests here; its status code conventions.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_internal.h"

/* Points of a stored (validated) request: kinds x T x K. */
static size_t points_total(const json_t *req)
{
	size_t n_t = json_array_size(json_object_get(req, "qi_attributes"));

	return json_array_size(json_object_get(req, "kinds")) * (n_t ? n_t : 1) *
	       json_array_size(json_object_get(req, "k"));
}

/* The stored points, or before the first one, every point null: the
 * answer always has them all, in their order, null until solved. */
static json_t *points_json(const struct store_row *w, const json_t *req, size_t *done)
{
	json_t *p = w->result ? http_stored_json(w->result) : NULL, *v;
	size_t i;

	if (!json_is_array(p)) {
		json_decref(p);
		p = json_array();
		for (i = 0; p && i < points_total(req); i++)
			json_array_append_new(p, json_null());
	}
	*done = 0;
	json_array_foreach(p, i, v) *done += !json_is_null(v);
	return p;
}

/* The sweep resource. */
static json_t *sweep_json(const struct store_row *w)
{
	json_t *req = http_stored_json(w->request), *o, *points;
	char created[32], updated[32];
	size_t done;

	http_time(w->created, created, sizeof created);
	http_time(w->updated, updated, sizeof updated);
	points = points_json(w, req, &done);
	o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:O?, s:{s:I, s:I}, s:o?}", "id", w->id,
		      "dataset_id", w->dataset_id, "status", w->status, "created", created,
		      "updated", updated, "attempts", w->attempts, "request", req, "progress",
		      "points_done", (json_int_t)done, "points_total",
		      (json_int_t)json_array_size(points), "points", points);
	if (o && !strcmp(w->status, "failed") && w->problem)
		json_object_set_new(o, "problem", http_stored_json(w->problem));
	json_decref(req);
	return o;
}

/* GET /v1/datasets/{id}/sweeps: a page of the dataset's sweeps, each
 * without its points and progress (GET the sweep for them). */
static void sweep_list(struct http_server *h, const struct http_request *r,
		       struct http_response *res)
{
	struct store_row *rows = NULL;
	struct pm_error err = {0};
	size_t limit, n = 0;
	int64_t after;
	json_t *items;
	char cur[HTTP_CURSOR_SIZE];

	if (http_list_params(h, r, &limit, &after, res))
		return;
	if (store_sweep_list(h->store, r->id, r->tenant, after, limit + 1, &rows, &n, &err)) {
		api_store_failed(res, r, &err);
		return;
	}
	items = json_array();
	for (size_t i = 0; items && i < n && i < limit; i++) {
		json_t *o = sweep_json(&rows[i]);

		json_object_del(o, "points");
		json_object_del(o, "progress");
		json_array_append_new(items, o);
	}
	http_page_respond(res, r, json_object(), items, http_list_next(h, r, rows, n, limit, cur),
			  limit);
	store_rows_free(rows, n);
}

static void sweep_respond(struct http_server *h, struct http_response *res, unsigned status,
			  const struct store_row *w)
{
	json_t *o = sweep_json(w);

	(void)h;
	if (o)
		http_json(res, status, o);
	else
		http_oom(res);
}

static const struct api_job_kind SWEEPS = {"sw_",	    "/v1/sweeps/",	store_sweep_insert,
					   store_sweep_get, store_sweep_delete, sweep_respond};

/* The request's solver and report blocks, read as the worker will, and
 * its time limit within the service's. */
static enum pm_status check_options(const json_t *req, double max, struct pm_error *err)
{
	struct solver_options o;
	enum pm_status st;

	solver_options_init(&o);
	if ((st = pipeline_solver_options(json_object_get(req, "solver"), max,
					  "--analysis-time-limit, for each point", &o, err)))
		return st;
	return codec_report_options(json_object_get(req, "report"), &o.privacy, err);
}

/* Validates the request against the stored dataset; 0, or -1 with the
 * problem in res. */
static int sweep_check(struct http_server *h, const struct http_request *r, const json_t *req,
		       struct http_response *res)
{
	const struct dataset *ds = NULL;
	struct sweep_request q = {0};
	struct pm_error err = {0};
	enum pm_status st;
	int rc = -1;

	if ((st = store_dataset_parsed(h->store, r->id, r->tenant, &ds, &err))) {
		if (st == PM_ERR_INTERNAL)
			http_problem(res, 500, NULL, "the stored dataset %s is unreadable", r->id);
		else
			api_store_failed(res, r, &err);
		goto out;
	}
	if (codec_sweep_request(req, ds, &q, &err) ||
	    check_options(req, h->o.analysis_time_limit, &err))
		http_problem_err(res, &err);
	else
		rc = 0;
out:
	sweep_request_finish(&q);
	store_dataset_release(h->store, ds);
	return rc;
}

static void sweep_create(struct http_server *h, const struct http_request *r,
			 struct http_response *res)
{
	json_t *req = NULL;
	char *text = NULL;

	if (http_media_type(r) != MEDIA_JSON) {
		http_unsupported(res, r, "application/json");
		return;
	}
	if (http_body_json(r, &req, res) || sweep_check(h, r, req, res))
		goto out;
	if (!(text = json_dumps(req, JSON_COMPACT | JSON_REAL_PRECISION(17))))
		http_oom(res);
	else
		api_job_start(h, r, &SWEEPS, text, res);
out:
	free(text);
	json_decref(req);
}

/* The chart of the points so far (an empty one before the first). The
 * request was checked against its dataset when posted; read back, only
 * its shape matters, so a stand-in with every attribute serves. */
static void sweep_chart_get(struct http_server *h, const struct http_request *r,
			    struct http_response *res)
{
	struct store_row row = {0}, ds = {0};
	struct dataset shape = {.n_attrs = DATASET_MAX_ATTRS, .has_ground_truth = 1};
	struct sweep_request q = {0};
	struct pm_error err = {0};
	json_t *req = NULL, *points = NULL, *sum = NULL;
	size_t len = 0, done;
	char *svg = NULL;

	if (store_sweep_get(h->store, r->id, r->tenant, &row, &err) ||
	    store_dataset_get(h->store, row.dataset_id, r->tenant, 0, &ds, &err)) {
		api_store_failed(res, r, &err);
		goto out;
	}
	req = http_stored_json(row.request);
	sum = http_stored_json(ds.summary);
	points = points_json(&row, req, &done);
	if (codec_sweep_request(req, &shape, &q, &err))
		http_problem(res, 500, NULL, "the stored request of %s is unreadable", r->id);
	else if ((svg = sweep_chart(json_string_value(json_object_get(sum, "name")), &q, points,
				    &len)))
		http_take(res, 200, "image/svg+xml", svg, len);
	else
		http_oom(res);
out:
	sweep_request_finish(&q);
	json_decref(points);
	json_decref(sum);
	json_decref(req);
	store_row_finish(&ds);
	store_row_finish(&row);
}

void sweeps_handle(struct http_server *h, const struct http_request *r, struct http_response *res)
{
	int del = !strcmp(r->method, "DELETE");

	switch (r->route) {
	case ROUTE_DATASET_SWEEPS:
		(!strcmp(r->method, "POST") ? sweep_create : sweep_list)(h, r, res);
		break;
	case ROUTE_SWEEP:
		(del ? api_job_delete : api_job_get)(h, r, &SWEEPS, res);
		break;
	case ROUTE_SWEEP_CHART:
		sweep_chart_get(h, r, res);
		break;
	default:
		http_problem(res, 404, NULL, "no resource at %s", r->path);
	}
}
