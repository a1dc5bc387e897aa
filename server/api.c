/*
 * The resources of the HTTP API (SPEC section 6, issue 3): routing,
 * datasets, health, metrics and the OpenAPI document; analyses, their
 * posterior and the synchronous solve are in analyses.c, the risk list in
 * risk.c, sweeps in sweeps.c. http.c has already authenticated the request, checked the
 * route, the method and the body size; handlers validate everything else
 * before they touch the store, so a bad request changes nothing.
 *
 * Status codes: 400 when the body cannot be read as its media type
 * (malformed JSON or CSV, too deep, not UTF-8) or a query parameter is
 * wrong; 422 when it reads but does not validate (wrong types, unknown
 * keys or attributes, inconsistent knowledge), naming the field.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http_internal.h"
#include "jobs.h"

#if defined(__has_include)
#if __has_include("dashboard_html.h")
#include "dashboard_html.h"
#define HAVE_DASHBOARD_HTML 1
#endif
#if __has_include("openapi_yaml.h")
/* generated at build time from api-spec/openapi.yaml: openapi_yaml[] */
#include "openapi_yaml.h"
#define HAVE_OPENAPI_YAML 1
#endif
#endif

/* ---- routes ---------------------------------------------------------------- */

/* Copies an id segment of the given prefix ("ds_", "an_"); a malformed one
 * leaves id empty (404 without asking the store). */
static void take_id(const char *seg, size_t n, const char *prefix, char *id)
{
	id[0] = '\0';
	if (n != HTTP_ID_LEN || strncmp(seg, prefix, 3))
		return;
	for (size_t i = 3; i < n; i++)
		if (!((seg[i] >= '0' && seg[i] <= '9') || (seg[i] >= 'a' && seg[i] <= 'f')))
			return;
	memcpy(id, seg, n);
	id[n] = '\0';
}

/* A sub-resource of an item: "/v1/<coll>/<id>/<sub>". */
struct child_route {
	const char *sub;
	enum http_route route;
};

/* "/v1/<coll>/<id>[/<sub>]", sub one of kids[0 .. n): the route, or
 * ROUTE_NONE. */
static enum http_route item_route(const char *rest, const char *prefix, enum http_route item,
				  const struct child_route *kids, size_t n_kids, char *id)
{
	size_t n = strcspn(rest, "/");

	if (n == 0)
		return ROUTE_NONE;
	take_id(rest, n, prefix, id);
	if (rest[n] == '\0')
		return item;
	for (size_t i = 0; i < n_kids; i++)
		if (!strcmp(rest + n + 1, kids[i].sub))
			return kids[i].route;
	return ROUTE_NONE;
}

/* Ready when the store answers in time (/healthz says only that the
 * process runs). The problem names the store, never its path or URI. */
static void readyz(struct http_server *h, struct http_response *res)
{
	struct pm_error err = {0};

	if (__atomic_load_n(&h->draining, __ATOMIC_RELAXED)) {
		http_problem(res, 503, "store", "the service is stopping");
		res->retry_after = 5;
	} else if (store_ping(h->store, HTTP_READY_TIMEOUT, &err)) {
		http_problem(res, 503, "store", "the store is not ready: %s", err.message);
		res->retry_after = 5;
	} else {
		http_json(res, 200, json_pack("{s:s}", "status", "ready"));
	}
}

enum http_route api_route(const char *path, char *id)
{
	static const struct {
		const char *path;
		enum http_route route;
	} fixed[] = {
	    {"/v1/datasets", ROUTE_DATASETS},
	    {"/v1/solve", ROUTE_SOLVE},
	    {"/v1/openapi.yaml", ROUTE_OPENAPI},
	    {"/healthz", ROUTE_HEALTHZ},
	    {"/readyz", ROUTE_READYZ},
	    {"/metrics", ROUTE_METRICS},
	    {"/", ROUTE_DASHBOARD},
	};
	static const struct child_route dataset_kids[] = {{"analyses", ROUTE_DATASET_ANALYSES},
							  {"sweeps", ROUTE_DATASET_SWEEPS}},
					analysis_kids[] = {{"posterior", ROUTE_POSTERIOR},
							   {"risk", ROUTE_RISK},
							   {"report", ROUTE_REPORT}},
					sweep_kids[] = {{"chart.svg", ROUTE_SWEEP_CHART}};

	id[0] = '\0';
	for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
		if (!strcmp(path, fixed[i].path))
			return fixed[i].route;
	if (!strncmp(path, "/v1/datasets/", 13))
		return item_route(path + 13, "ds_", ROUTE_DATASET, dataset_kids, 2, id);
	if (!strncmp(path, "/v1/analyses/", 13))
		return item_route(path + 13, "an_", ROUTE_ANALYSIS, analysis_kids, 3, id);
	if (!strncmp(path, "/v1/sweeps/", 11))
		return item_route(path + 11, "sw_", ROUTE_SWEEP, sweep_kids, 1, id);
	return ROUTE_NONE;
}

const char *api_allow(enum http_route route)
{
	static const char *const allow[N_ROUTES] = {
	    [ROUTE_DATASETS] = "GET, HEAD, POST",
	    [ROUTE_DATASET] = "GET, HEAD, DELETE",
	    [ROUTE_DATASET_ANALYSES] = "GET, HEAD, POST",
	    [ROUTE_ANALYSIS] = "GET, HEAD, DELETE",
	    [ROUTE_POSTERIOR] = "GET, HEAD",
	    [ROUTE_RISK] = "GET, HEAD",
	    [ROUTE_REPORT] = "GET, HEAD",
	    [ROUTE_DATASET_SWEEPS] = "GET, HEAD, POST",
	    [ROUTE_SWEEP] = "GET, HEAD, DELETE",
	    [ROUTE_SWEEP_CHART] = "GET, HEAD",
	    [ROUTE_SOLVE] = "POST",
	    [ROUTE_OPENAPI] = "GET, HEAD",
	    [ROUTE_HEALTHZ] = "GET, HEAD",
	    [ROUTE_READYZ] = "GET, HEAD",
	    [ROUTE_DASHBOARD] = "GET, HEAD",
	    [ROUTE_METRICS] = "GET, HEAD",
	};

	return route < N_ROUTES ? allow[route] : NULL;
}

/* The query parameters a route and method take ("" for none). */
static const char *params_of(enum http_route route, const char *method)
{
	int get = !strcmp(method, "GET") || !strcmp(method, "HEAD");

	switch (route) {
	case ROUTE_DATASETS:
		return get ? "limit, cursor" : "sa, group, name";
	case ROUTE_DATASET_ANALYSES:
	case ROUTE_DATASET_SWEEPS:
	case ROUTE_POSTERIOR:
		return get ? "limit, cursor" : "";
	case ROUTE_RISK:
		return get ? "limit, cursor, people" : "";
	case ROUTE_ANALYSIS:
		return get ? "view" : "";
	default:
		return "";
	}
}

int api_check_params(const struct http_request *r, struct http_response *res)
{
	const char *allowed = params_of(r->route, r->method);

	for (size_t i = 0; r->target && i < r->target->n_params; i++) {
		const char *name = r->target->names[i], *a = allowed;
		size_t n = strlen(name);

		while (*a && !(!strncmp(a, name, n) && (a[n] == ',' || a[n] == '\0'))) {
			a += strcspn(a, ",");
			a += strspn(a, ", ");
		}
		if (*a)
			continue;
		if (*allowed)
			http_problem(res, 400, name, "unknown query parameter; %s %s takes %s",
				     r->method, r->path, allowed);
		else
			http_problem(res, 400, name, "unknown query parameter; %s %s takes none",
				     r->method, r->path);
		return -1;
	}
	return 0;
}

/* ---- shared pieces --------------------------------------------------------- */

void api_not_found(struct http_response *res, const struct http_request *r)
{
	int sweep = r->route == ROUTE_SWEEP || r->route == ROUTE_SWEEP_CHART;
	int dataset = r->route == ROUTE_DATASET || r->route == ROUTE_DATASET_ANALYSES ||
		      r->route == ROUTE_DATASET_SWEEPS;

	http_problem(res, 404, NULL, "no %s with id '%s'",
		     sweep     ? "sweep"
		     : dataset ? "dataset"
			       : "analysis",
		     r->path + (sweep ? 11 : 13));
}

/* A store error: not found is about the request's own id. */
void api_store_failed(struct http_response *res, const struct http_request *r,
		      const struct pm_error *err)
{
	if (err->status == PM_ERR_NOT_FOUND)
		api_not_found(res, r);
	else
		http_problem_err(res, err);
}

/* ---- jobs: analyses and sweeps ------------------------------------------ */

void api_job_start(struct http_server *h, const struct http_request *r,
		   const struct api_job_kind *k, const char *request, struct http_response *res)
{
	struct store_row row = {0};
	struct pm_error err = {0};
	char id[HTTP_ID_SIZE];

	http_new_id(id, k->prefix);
	if (k->insert(h->store, id, r->tenant, r->id, request, &err)) {
		if (err.status == PM_ERR_BUSY) { /* this tenant's share of the queue */
			http_problem(res, 429, err.field, "%s", err.message);
			res->retry_after = 5;
		} else {
			api_store_failed(res, r, &err);
		}
		return;
	}
	if (jobs_submit(h->jobs, id, &err)) {
		struct pm_error ignored = {0};

		/* never queued: remove it, so the store holds no orphan */
		k->del(h->store, id, r->tenant, &ignored);
		http_problem_err(res, &err);
		res->retry_after = err.status == PM_ERR_BUSY ? 5 : 0;
		return;
	}
	if (k->get(h->store, id, r->tenant, &row, &err)) {
		http_problem_err(res, &err);
		return;
	}
	k->respond(h, res, 202, &row);
	if ((res->location = malloc(strlen(k->path) + sizeof id)))
		snprintf(res->location, strlen(k->path) + sizeof id, "%s%s", k->path, id);
	store_row_finish(&row);
}

void api_job_get(struct http_server *h, const struct http_request *r, const struct api_job_kind *k,
		 struct http_response *res)
{
	struct store_row row = {0};
	struct pm_error err = {0};

	if (k->get(h->store, r->id, r->tenant, &row, &err))
		api_store_failed(res, r, &err);
	else
		k->respond(h, res, 200, &row);
	store_row_finish(&row);
}

void api_job_delete(struct http_server *h, const struct http_request *r,
		    const struct api_job_kind *k, struct http_response *res)
{
	struct store_row row = {0};
	struct pm_error err = {0};
	enum pm_status st;

	if ((st = k->get(h->store, r->id, r->tenant, &row, &err)))
		goto out;
	if (!strcmp(row.status, "queued") || !strcmp(row.status, "running")) {
		st = jobs_cancel(h->jobs, r->id, &err);
		/* cancelled, or finished meanwhile: either way show it */
		store_row_finish(&row);
		if (st == PM_OK || st == PM_ERR_CONFLICT)
			st = k->get(h->store, r->id, r->tenant, &row, &err);
		if (!st)
			k->respond(h, res, 200, &row);
		goto out;
	}
	if (!(st = k->del(h->store, r->id, r->tenant, &err)))
		http_take(res, 204, NULL, NULL, 0);
out:
	if (st)
		api_store_failed(res, r, &err);
	store_row_finish(&row);
}

/* ---- datasets -------------------------------------------------------------- */

static json_t *string_list(char *const *s, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		if (json_array_append_new(a, json_string(s[i]))) {
			json_decref(a);
			return NULL;
		}
	return a;
}

static json_t *dataset_summary(const struct dataset *ds, const char *id)
{
	char created[32];

	http_time(time(NULL), created, sizeof created);
	return json_pack("{s:s, s:o, s:I, s:I, s:I, s:o, s:s, s:o, s:b, s:s}", "id", id, "name",
			 ds->name ? json_string(ds->name) : json_null(), "records",
			 (json_int_t)ds->n_records, "groups", (json_int_t)ds->n_groups, "tuples",
			 (json_int_t)ds->n_tuples, "qi_attributes",
			 string_list(ds->attr_names, ds->n_attrs), "sa_attribute", ds->sa_name,
			 "sa_domain", string_list(ds->sa_values.str, ds->sa_values.n),
			 "has_ground_truth", ds->has_ground_truth, "created", created);
}

/* The dataset of a JSON upload. What is stored is the dataset itself
 * (packed: store_dataset_put), as for CSV, not the upload's text. */
static int json_dataset(const struct http_request *r, struct dataset **ds,
			struct http_response *res)
{
	struct pm_error err = {0};
	json_t *upload = NULL;

	if (http_body_json(r, &upload, res))
		return -1;
	if (codec_dataset(upload, ds, &err)) {
		json_decref(upload);
		http_problem_err(res, &err);
		return -1;
	}
	json_decref(upload);
	return 0;
}

/* The query of a CSV upload: both columns named, the name in UTF-8. */
static int csv_params(const struct http_request *r, struct http_response *res)
{
	const char *sa = http_query(r, "sa"), *group = http_query(r, "group");
	const char *name = http_query(r, "name");

	if (!sa || !group) {
		http_problem(res, 400, sa ? "group" : "sa",
			     "a text/csv upload names its columns: ?sa=COLUMN&group=COLUMN");
		return -1;
	}
	if (name && http_utf8_invalid_at(name, strlen(name)) < strlen(name)) {
		http_problem(res, 400, "name", "is not valid UTF-8");
		return -1;
	}
	return 0;
}

struct upload *api_upload_begin(const struct http_request *r, int *oom)
{
	struct upload *u;

	*oom = 0;
	if (r->route != ROUTE_DATASETS || strcmp(r->method, "POST") ||
	    http_media_type(r) != MEDIA_CSV)
		return NULL;
	u = upload_create(http_query(r, "sa"), http_query(r, "group"), http_query(r, "name"));
	*oom = !u;
	return u;
}

/* A CSV upload (?sa=&group=[&name=]) as a records-form dataset: read as
 * it came (r->upload), or from a body at hand. */
static int csv_upload(const struct http_request *r, struct dataset **ds, struct http_response *res)
{
	struct upload *u = r->upload;
	int rc;

	if (csv_params(r, res))
		return -1;
	if (!u &&
	    (u = upload_create(http_query(r, "sa"), http_query(r, "group"), http_query(r, "name"))))
		upload_feed(u, r->body ? r->body : "", r->body_len);
	if (!u)
		return http_oom(res);
	rc = upload_finish(u, ds, res);
	if (u != r->upload)
		upload_destroy(u);
	return rc;
}

static void dataset_create(struct http_server *h, const struct http_request *r,
			   struct http_response *res)
{
	enum http_media mt = http_media_type(r);
	struct dataset *ds = NULL;
	struct pm_error err = {0};
	json_t *sum = NULL;
	char id[HTTP_ID_SIZE], *text = NULL;

	if (mt != MEDIA_JSON && mt != MEDIA_CSV) {
		http_unsupported(res, r, "application/json or text/csv");
		return;
	}
	if (mt == MEDIA_JSON ? json_dataset(r, &ds, res) : csv_upload(r, &ds, res))
		goto out;
	http_new_id(id, "ds_");
	sum = dataset_summary(ds, id);
	text = sum ? json_dumps(sum, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
	if (!text) {
		http_oom(res);
		goto out;
	}
	if (store_dataset_put(h->store, id, r->tenant, text, ds, &err)) {
		/* a quota: the tenant may store more only after deleting some */
		if (err.status == PM_ERR_TOO_LARGE)
			http_problem(res, 403, err.field, "%s", err.message);
		else
			http_problem_err(res, &err);
		goto out;
	}
	http_json(res, 201, json_incref(sum));
	if ((res->location = malloc(48)))
		snprintf(res->location, 48, "/v1/datasets/%s", id);
out:
	free(text);
	json_decref(sum);
	dataset_destroy(ds);
}

static void dataset_list(struct http_server *h, const struct http_request *r,
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
	if (store_dataset_list(h->store, r->tenant, after, limit + 1, &rows, &n, &err)) {
		http_problem_err(res, &err);
		return;
	}
	items = json_array();
	for (size_t i = 0; items && i < n && i < limit; i++)
		json_array_append_new(items, http_stored_json(rows[i].summary));
	http_page_respond(res, r, json_object(), items, http_list_next(h, r, rows, n, limit, cur),
			  limit);
	store_rows_free(rows, n);
}

static void dataset_get(struct http_server *h, const struct http_request *r,
			struct http_response *res)
{
	struct store_row row = {0};
	struct pm_error err = {0};
	json_t *sum;

	if (store_dataset_get(h->store, r->id, r->tenant, 0, &row, &err)) {
		api_store_failed(res, r, &err);
		return;
	}
	sum = http_stored_json(row.summary);
	if (sum)
		http_json(res, 200, sum);
	else
		http_problem(res, 500, NULL, "the stored summary of %s is unreadable", r->id);
	store_row_finish(&row);
}

/* Cancels the queued and running analyses of a dataset about to go, so no
 * worker keeps computing for it. */
static void cancel_analyses(struct http_server *h, const struct http_request *r)
{
	struct store_row *rows = NULL;
	struct pm_error err = {0};
	int64_t after = 0;
	size_t n = 0;

	while (!store_analysis_list(h->store, r->id, r->tenant, after, 256, &rows, &n, &err)) {
		for (size_t i = 0; i < n; i++)
			if (!strcmp(rows[i].status, "queued") || !strcmp(rows[i].status, "running"))
				jobs_cancel(h->jobs, rows[i].id, &err); /* or finished meanwhile */
		after = n ? rows[n - 1].seq : after;
		store_rows_free(rows, n);
		rows = NULL;
		if (n < 256)
			break;
	}
}

/* The same for its sweeps: a running one stops within one iteration,
 * rather than at its next point. */
static void cancel_sweeps(struct http_server *h, const struct http_request *r)
{
	struct pm_error err = {0};
	char **ids = NULL;
	size_t n = 0;

	if (store_sweep_unfinished(h->store, r->id, r->tenant, &ids, &n, &err))
		return; /* the delete still happens; the sweep stops at its next point */
	for (size_t i = 0; i < n; i++) {
		jobs_cancel(h->jobs, ids[i], &err); /* or finished meanwhile */
		free(ids[i]);
	}
	free(ids);
}

static void dataset_delete(struct http_server *h, const struct http_request *r,
			   struct http_response *res)
{
	struct store_row row = {0};
	struct pm_error err = {0};

	if (store_dataset_get(h->store, r->id, r->tenant, 0, &row, &err)) {
		api_store_failed(res, r, &err);
		return;
	}
	store_row_finish(&row);
	cancel_analyses(h, r);
	cancel_sweeps(h, r);
	if (store_dataset_delete(h->store, r->id, r->tenant, &err))
		api_store_failed(res, r, &err);
	else
		http_take(res, 204, NULL, NULL, 0);
}

/* ---- service documents ----------------------------------------------------- */

/* GET /: the dashboard, one page that talks to this API from the
 * browser (server/dashboard.html, compiled in). */
static void dashboard(struct http_response *res)
{
#ifdef HAVE_DASHBOARD_HTML
	http_text(res, 200, "text/html; charset=utf-8", (const char *)dashboard_html,
		  sizeof dashboard_html - 1);
#else
	http_problem(res, 404, NULL, "the dashboard is not built into this binary");
#endif
}

static void openapi(struct http_response *res)
{
#ifdef HAVE_OPENAPI_YAML
	http_text(res, 200, "application/yaml", (const char *)openapi_yaml,
		  sizeof openapi_yaml - 1);
#else
	/* not embedded in this build: the file, if it can be found */
	const char *path = getenv("PMAXENT_OPENAPI");
	FILE *f = fopen(path ? path : "api-spec/openapi.yaml", "rb");
	struct http_text_buf t = {0};
	char buf[8192];
	size_t n;

	while (f && (n = fread(buf, 1, sizeof buf, f)) > 0)
		http_put(&t, buf, n);
	if (f && !ferror(f) && !t.oom && t.len)
		http_take(res, 200, "application/yaml", t.s, t.len);
	else
		free(t.s);
	if (f)
		fclose(f);
	if (!res->status)
		http_problem(res, 404, NULL, "the OpenAPI document is not built into this binary");
#endif
}

void api_handle(struct http_server *h, const struct http_request *r, struct http_response *res)
{
	int post = !strcmp(r->method, "POST"), del = !strcmp(r->method, "DELETE");
	size_t len;
	char *text;

	if (r->route <= ROUTE_SWEEP_CHART && r->route != ROUTE_DATASETS && !r->id[0]) {
		api_not_found(res, r);
		return;
	}
	switch (r->route) {
	case ROUTE_DATASETS:
		(post ? dataset_create : dataset_list)(h, r, res);
		break;
	case ROUTE_DATASET:
		(del ? dataset_delete : dataset_get)(h, r, res);
		break;
	case ROUTE_DATASET_ANALYSES:
	case ROUTE_ANALYSIS:
	case ROUTE_POSTERIOR:
	case ROUTE_SOLVE:
		analyses_handle(h, r, res);
		break;
	case ROUTE_RISK:
	case ROUTE_REPORT:
		risk_handle(h, r, res);
		break;
	case ROUTE_DATASET_SWEEPS:
	case ROUTE_SWEEP:
	case ROUTE_SWEEP_CHART:
		sweeps_handle(h, r, res);
		break;
	case ROUTE_OPENAPI:
		openapi(res);
		break;
	case ROUTE_DASHBOARD:
		dashboard(res);
		break;
	case ROUTE_HEALTHZ:
		http_json(res, 200, json_pack("{s:s}", "status", "ok"));
		break;
	case ROUTE_READYZ:
		readyz(h, res);
		break;
	case ROUTE_METRICS:
		if ((text = metrics_render(h, &len)))
			http_take(res, 200, "text/plain; version=0.0.4; charset=utf-8", text, len);
		else
			http_oom(res);
		break;
	default:
		http_problem(res, 404, NULL, "no resource at %s", r->path);
	}
}
