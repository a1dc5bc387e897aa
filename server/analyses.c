/*
 * The analysis resources of the HTTP API (SPEC section 6, issue 3):
 * analyses of a stored dataset, run by the worker pool (jobs.c), their
 * posterior as JSON pages or CSV, and the synchronous POST /v1/solve on
 * the connection thread. api.c routes the requests here; the status code
 * conventions are those of api.c.
 */
#define _GNU_SOURCE /* POLLRDHUP */
#include <math.h>
#include <microhttpd.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "http_internal.h"
#include "isolate.h"
#include "jobs.h"

#define POSTERIOR_DEFAULT 100
#define POSTERIOR_MAX	  10000
#define POSTERIOR_CSV_MAX 100000000 /* CSV: everything unless limited */

/* ---- analyses -------------------------------------------------------------- */

/* Checks the knowledge and solver blocks of a request against ds exactly as
 * the pipeline will read them, so bad ones are 422 now and not a failed
 * analysis later. Fields are named as in the request. max_time (flag
 * names its setting) is the most time_limit may ask for. */
static enum pm_status check_analysis(const struct dataset *ds, const json_t *know,
				     const json_t *solver, double max_time, const char *flag,
				     struct pm_error *err)
{
	const json_t *inner = json_object_get(know, "solver");
	struct miner_options mine;
	struct solver_options o;
	struct knowledge k;
	int has_mine = 0;
	enum pm_status st;

	knowledge_init(&k);
	st = codec_knowledge(know, ds, &k, &mine, &has_mine, err);
	knowledge_finish(&k);
	if (!st && has_mine && !ds->has_ground_truth)
		st = error_set(err, PM_ERR_INPUT, "mine",
			       "mining needs the original records (records form); this dataset is "
			       "published form");
	solver_options_init(&o);
	if (!st && inner)
		st = pipeline_solver_options(inner, max_time, flag, &o, err);
	if (st) {
		error_prefix(err, "knowledge");
		return st;
	}
	solver_options_init(&o);
	st = pipeline_solver_options(solver, max_time, flag, &o, err);
	if (!st) /* "report" (moved into the knowledge: merge_report) */
		st = codec_report_options(json_object_get(know, "report"), &o.privacy, err);
	return st;
}

/* The solver block to run with: the request's, completed by a "solver"
 * block inside the knowledge document (the request's wins), as the CLI
 * does with flags and a knowledge file. New reference or NULL. */
static json_t *merged_solver(const json_t *know, const json_t *solver)
{
	json_t *inner = json_object_get(know, "solver"), *m;

	if (!json_is_object(inner) || (solver && !json_is_object(solver)))
		return solver ? json_incref((json_t *)solver) : NULL;
	m = solver ? json_deep_copy(solver) : json_object();
	if (m)
		json_object_update_missing(m, inner);
	return m;
}

/* A request's "report" (beside "solver", SPEC 4.1) moves into its
 * knowledge document, where the pipeline reads it (as a knowledge file
 * may carry one for the CLI); the request's wins. -1 out of memory. */
static int merge_report(json_t *req)
{
	json_t *report = json_object_get(req, "report"), *know = json_object_get(req, "knowledge");

	if (!report)
		return 0;
	if (!json_is_object(know)) {
		if (know && !json_is_null(know))
			return 0; /* the knowledge's own error comes first */
		if (json_object_set_new(req, "knowledge", know = json_object()))
			return -1;
	}
	if (json_object_set(know, "report", report))
		return -1;
	return json_object_del(req, "report");
}

/* The request envelope: an object with only the given keys. */
static int check_keys(const json_t *req, const char *const *keys, size_t n,
		      struct http_response *res)
{
	const char *key;
	json_t *v;

	if (!json_is_object(req)) {
		http_problem(res, 422, NULL, "the request body must be a JSON object");
		return -1;
	}
	json_object_foreach((json_t *)req, key, v)
	{
		size_t i = 0;

		while (i < n && strcmp(key, keys[i]))
			i++;
		if (i == n) {
			http_problem(res, 422, key, "unknown key; this request takes %s%s%s%s%s",
				     keys[0], n > 1 ? ", " : "", n > 1 ? keys[1] : "",
				     n > 2 ? ", " : "", n > 2 ? keys[2] : "");
			return -1;
		}
	}
	return 0;
}

/* A running job's progress: as its node stored it at the last heartbeat
 * (jobs.c), so that every node answers the same; before the first, the
 * setup phase. */
static json_t *progress_json(const struct store_row *a)
{
	json_t *p = a->progress ? http_stored_json(a->progress) : NULL;

	return p ? p
		 : json_pack("{s:s, s:i, s:n, s:f}", "phase", solver_phase_name(SOLVER_PHASE_SETUP),
			     "iterations", 0, "max_violation", "elapsed", 0.0);
}

/* The analysis resource; full adds the request, the progress and the
 * problem (the result is spliced in by analysis_respond). */
static json_t *analysis_json(struct http_server *h, const struct store_row *a, int full)
{
	char created[32], updated[32];
	json_t *o;

	http_time(a->created, created, sizeof created);
	http_time(a->updated, updated, sizeof updated);
	o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i}", "id", a->id, "dataset_id", a->dataset_id,
		      "status", a->status, "created", created, "updated", updated, "attempts",
		      a->attempts);
	if (!o || !full)
		return o;
	if (a->request)
		json_object_set_new(o, "request", http_stored_json(a->request));
	if (!strcmp(a->status, "running"))
		json_object_set_new(o, "progress", progress_json(a));
	if (!strcmp(a->status, "failed") && a->problem)
		json_object_set_new(o, "problem", http_stored_json(a->problem));
	return o;
}

/* Responds with the analysis. A stored result (megabytes for a large
 * posterior) is spliced in as text rather than parsed and re-printed. The
 * rest is printed with 15 digits, so that progress and the echoed request
 * read as typed (1.027, not 1.0269999999999999). */
static void analysis_respond(struct http_server *h, struct http_response *res, unsigned status,
			     const struct store_row *a)
{
	json_t *o = analysis_json(h, a, 1);
	char *env = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL, *buf;
	const char *result = !strcmp(a->status, "succeeded") ? a->result : NULL;
	size_t n = env ? strlen(env) : 0, m = result ? strlen(result) : 0, k;

	json_decref(o);
	if (!env || n < 2 || !(buf = malloc(n + m + 16))) {
		free(env);
		http_oom(res);
		return;
	}
	memcpy(buf, env, n - 1); /* all but the closing brace */
	k = n - 1;
	if (result) {
		k += (size_t)sprintf(buf + k, ",\"result\":");
		memcpy(buf + k, result, m);
		k += m;
	}
	buf[k++] = '}';
	buf[k++] = '\n';
	free(env);
	http_take(res, status, "application/json", buf, k);
}

/* The ETag of an analysis as stored: its envelope (status, times,
 * attempts, progress, problem), its result's tag and the view, so that a
 * 304 reads the row alone. */
static void analysis_etag(const char *env, size_t n, const struct store_result *m, const char *view,
			  char *out, size_t size)
{
	uint64_t x = pm_hash(PM_HASH_INIT, env, n);

	x = pm_hash(x, m->tag, strlen(m->tag));
	x = pm_hash(x, view, strlen(view) + 1);
	snprintf(out, size, "\"%016" PRIx64 "\"", x);
}

/* ?view=summary: the envelope and the stored summary of the result (no
 * request, posterior, rules, statements or risk); env is taken. */
static void summary_respond(struct http_response *res, char *env, size_t n,
			    const struct store_result *m)
{
	size_t k = m->summary ? strlen(m->summary) : 0;
	char *buf = realloc(env, n + k + 16);

	if (!buf) {
		free(env);
		http_oom(res);
		return;
	}
	n--; /* the closing brace */
	if (m->summary) {
		n += (size_t)sprintf(buf + n, ",\"result\":");
		memcpy(buf + n, m->summary, k);
		n += k;
	}
	buf[n++] = '}';
	buf[n++] = '\n';
	http_take(res, 200, "application/json", buf, n);
}

/* A result stored before schema 6 (in the row): read whole; its summary
 * is made here, once per GET (such rows only get fewer). */
static void legacy_respond(struct http_server *h, const struct http_request *r, int summary,
			   struct http_response *res)
{
	struct store_row row = {0};
	struct pm_error err = {0};
	json_t *j = NULL;

	if (store_analysis_get(h->store, r->id, r->tenant, &row, &err)) {
		api_store_failed(res, r, &err);
		return;
	}
	if (summary) {
		free(row.request);
		row.request = NULL;
		if (row.result && (j = json_loads(row.result, 0, NULL))) {
			for (size_t i = 0; jobs_summary_drop[i]; i++)
				json_object_del(j, jobs_summary_drop[i]);
			free(row.result);
			row.result = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(17));
			json_decref(j);
		}
	}
	analysis_respond(h, res, 200, &row);
	store_row_finish(&row);
}

/* GET /v1/analyses/{id}[?view=summary|full]: from the row's head, with
 * its ETag before any text is read; the full view streams the request
 * and the result (result_stream.c), never parsed. */
static void analysis_get(struct http_server *h, const struct http_request *r,
			 struct http_response *res)
{
	const char *view = http_query(r, "view");
	struct store_row row = {0};
	struct store_result m = {0};
	struct pm_error err = {0};
	json_t *o = NULL;
	char *env = NULL;
	size_t n;
	int first;

	if (view && strcmp(view, "summary") && strcmp(view, "full")) {
		http_problem(res, 400, "view", "must be \"summary\" or \"full\", got \"%.64s\"",
			     view);
		return;
	}
	view = view ? view : "full";
	/* the full view of a small analysis comes whole with its head, unless
	 * a 304 is likely (the client has a tag) */
	first = !strcmp(view, "full") && !http_header(r, "If-None-Match");
	if (store_analysis_head(h->store, r->id, r->tenant, first, &row, &m, &err)) {
		api_store_failed(res, r, &err);
		return;
	}
	if (m.legacy) {
		legacy_respond(h, r, !strcmp(view, "summary"), res);
		goto out;
	}
	if (!(o = analysis_json(h, &row, 1)) ||
	    !(env = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(15))) ||
	    (n = strlen(env)) < 2) {
		free(env);
		http_oom(res);
		goto out;
	}
	if (strcmp(row.status, "succeeded"))
		m.len = -1; /* a result only once succeeded */
	analysis_etag(env, n, &m, view, res->etag, sizeof res->etag);
	if (!strcmp(view, "summary"))
		summary_respond(res, env, n, &m);
	else
		result_stream_respond(h, res, r->id, env, n - 1, &m);
out:
	json_decref(o);
	store_row_finish(&row);
	store_result_finish(&m);
}

/* Reads the request of POST /v1/datasets/{id}/analyses (an empty body is
 * an analysis without knowledge). */
static int analysis_request(const struct http_request *r, json_t **req, struct http_response *res)
{
	static const char *const keys[] = {"knowledge", "solver", "report"};

	if (r->body_len == 0) {
		*req = json_object();
		return *req ? 0 : http_oom(res);
	}
	if (http_media_type(r) != MEDIA_JSON) {
		http_unsupported(res, r, "application/json");
		return -1;
	}
	if (http_body_json(r, req, res) || check_keys(*req, keys, 3, res))
		return -1;
	return merge_report(*req) ? http_oom(res) : 0;
}

/* Loads the stored dataset of the request and validates the analysis
 * against it; *text is the request to store. */
static int analysis_prepare(struct http_server *h, const struct http_request *r, json_t *req,
			    char **text, struct http_response *res)
{
	const json_t *know = json_object_get(req, "knowledge");
	const struct dataset *ds = NULL;
	struct pm_error err = {0};
	json_t *solver = NULL, *doc = NULL;
	enum pm_status st;
	int rc = -1;

	*text = NULL;
	if ((st = store_dataset_parsed(h->store, r->id, r->tenant, &ds, &err))) {
		if (st == PM_ERR_INTERNAL)
			http_problem(res, 500, NULL, "the stored dataset %s is unreadable", r->id);
		else
			api_store_failed(res, r, &err);
		goto out;
	}
	if (check_analysis(ds, know, json_object_get(req, "solver"), h->o.analysis_time_limit,
			   "--analysis-time-limit", &err)) {
		http_problem_err(res, &err);
		goto out;
	}
	solver = merged_solver(know, json_object_get(req, "solver"));
	doc = json_pack("{s:O?, s:O?}", "knowledge", know, "solver", solver);
	if (!doc || !(*text = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(17))))
		http_oom(res);
	else
		rc = 0;
out:
	json_decref(doc);
	json_decref(solver);
	store_dataset_release(h->store, ds);
	return rc;
}

static const struct api_job_kind ANALYSES = {"an_",
					     "/v1/analyses/",
					     store_analysis_insert,
					     store_analysis_get,
					     store_analysis_delete,
					     analysis_respond};

static void analysis_create(struct http_server *h, const struct http_request *r,
			    struct http_response *res)
{
	char *text = NULL;
	json_t *req = NULL;

	if (!analysis_request(r, &req, res) && !analysis_prepare(h, r, req, &text, res))
		api_job_start(h, r, &ANALYSES, text, res);
	json_decref(req);
	free(text);
}

static void analysis_list(struct http_server *h, const struct http_request *r,
			  struct http_response *res)
{
	struct store_row *rows = NULL, ds = {0};
	struct pm_error err = {0};
	size_t limit, n = 0;
	int64_t after;
	json_t *items;
	char cur[HTTP_CURSOR_SIZE];

	if (http_list_params(h, r, &limit, &after, res))
		return;
	if (store_dataset_get(h->store, r->id, r->tenant, 0, &ds, &err) ||
	    store_analysis_list(h->store, r->id, r->tenant, after, limit + 1, &rows, &n, &err)) {
		api_store_failed(res, r, &err);
		goto out;
	}
	items = json_array();
	for (size_t i = 0; items && i < n && i < limit; i++)
		json_array_append_new(items, analysis_json(h, &rows[i], 0));
	http_page_respond(res, r, json_object(), items, http_list_next(h, r, rows, n, limit, cur),
			  limit);
out:
	store_row_finish(&ds);
	store_rows_free(rows, n);
}

/* ---- posterior ------------------------------------------------------------- */

/* Long format: the QI values, count, the SA value and p, one row per
 * (q, s) with p > 0; the header names the attributes. */
static void posterior_csv(struct http_response *res, const json_t *sum, const json_t *items)
{
	const json_t *qi = json_object_get(sum, "qi_attributes"), *item, *v;
	struct http_text_buf t = {0};
	const char *s;
	char num[40];
	size_t i, a;

	json_array_foreach(qi, a, v) http_csv_field(&t, json_string_value(v), ',');
	http_put(&t, "count,", 6);
	http_csv_field(&t, json_string_value(json_object_get(sum, "sa_attribute")), ',');
	http_put(&t, "p\r\n", 3);
	json_array_foreach(items, i, item)
	{
		json_object_foreach((json_t *)json_object_get(item, "p"), s, v)
		{
			json_array_foreach(json_object_get(item, "qi"), a, qi)
			    http_csv_field(&t, json_string_value(qi), ',');
			snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT ",",
				 json_integer_value(json_object_get(item, "count")));
			http_put(&t, num, strlen(num));
			http_csv_field(&t, s, ',');
			snprintf(num, sizeof num, "%.17g\r\n", json_number_value(v));
			http_put(&t, num, strlen(num));
		}
	}
	if (t.oom) {
		free(t.s);
		http_oom(res);
		return;
	}
	http_take(res, 200, "text/csv; charset=utf-8", t.s, t.len);
}

/* The page of the posterior from `from` (its entries: items, taken;
 * total in all), JSON or CSV; the cursor is the offset of the next entry. */
static void posterior_page(struct http_response *res, const struct http_request *r,
			   const json_t *sum, json_t *items, size_t total, size_t from,
			   size_t limit)
{
	char cur[32], *next = NULL;
	json_t *page;

	if (from + limit < total) {
		snprintf(cur, sizeof cur, "%zu", from + limit);
		next = cur;
	}
	if (!http_wants_csv(r)) {
		page = json_pack("{s:s, s:O, s:O, s:I}", "analysis_id", r->id, "qi_attributes",
				 json_object_get(sum, "qi_attributes"), "sa_attribute",
				 json_object_get(sum, "sa_attribute"), "total", (json_int_t)total);
		http_page_respond(res, r, page, items, next, limit);
		return;
	}
	posterior_csv(res, sum, items);
	json_decref(items);
	if (next && res->status == 200)
		http_next_link(res, r, limit, next);
}

/* The entries [from, from + limit) of a stored result's posterior (new
 * reference) and its length: those entries parsed alone, or, should the
 * text not read that way, out of the whole result parsed. NULL if the
 * result has no posterior (or out of memory). */
static json_t *posterior_items(const char *text, size_t from, size_t limit, size_t *total)
{
	json_t *items = NULL, *result, *post;

	if (!text || !codec_result_posterior(text, strlen(text), from, limit, &items, total))
		return items;
	result = http_stored_json(text);
	post = json_object_get(result, "posterior");
	*total = json_array_size(post);
	if (json_is_array(post) && (items = json_array()))
		for (size_t i = from; i < *total && i - from < limit; i++)
			json_array_append(items, json_array_get(post, i));
	json_decref(result);
	return items;
}

static void posterior_get(struct http_server *h, const struct http_request *r,
			  struct http_response *res)
{
	struct store_row an = {0}, ds = {0};
	struct pm_error err = {0};
	json_t *items = NULL, *sum = NULL;
	int csv = http_wants_csv(r);
	size_t max = csv ? POSTERIOR_CSV_MAX : POSTERIOR_MAX, limit, total = 0;
	int64_t from;

	if (http_page_params(r, csv ? max : POSTERIOR_DEFAULT, max, &limit, &from, res))
		return;
	if (store_analysis_get(h->store, r->id, r->tenant, &an, &err)) {
		api_store_failed(res, r, &err);
		goto out;
	}
	if (strcmp(an.status, "succeeded")) {
		http_problem(res, 409, NULL,
			     "the analysis is %s; its posterior exists once it has succeeded",
			     an.status);
		goto out;
	}
	if (store_dataset_get(h->store, an.dataset_id, r->tenant, 0, &ds, &err)) {
		http_problem_err(res, &err);
		goto out;
	}
	sum = http_stored_json(ds.summary);
	items = sum ? posterior_items(an.result, (size_t)from, limit, &total) : NULL;
	if (!items)
		http_problem(res, 500, NULL, "the stored result of %s is unreadable", r->id);
	else
		posterior_page(res, r, sum, items, total, (size_t)from, limit);
out:
	json_decref(sum);
	store_row_finish(&ds);
	store_row_finish(&an);
}

/* ---- synchronous solve ---------------------------------------------------- */

/* A synchronous solve's stop conditions, polled by the solver. */
struct sync_solve {
	struct http_server *h;
	int fd;	  /* the client's socket */
	int gone; /* the client went away */
};

/* Whether the client closed its connection: in MHD's thread-per-connection
 * mode nothing reads the socket while the handler runs (the request-
 * completed callback comes only after it returns), so the solve looks
 * itself: an EOF or an error on the socket means nobody waits for the
 * answer. Bytes still unread (a pipelined request) are not a hang-up. */
static int client_gone(int fd)
{
	struct pollfd p = {fd, POLLIN | POLLRDHUP, 0};
	char c;

	if (fd < 0 || poll(&p, 1, 0) <= 0)
		return 0;
	if (p.revents & (POLLHUP | POLLERR))
		return 1;
	return (p.revents & (POLLIN | POLLRDHUP)) && recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

/* Stops the solve when the service stops or the client has gone (looked
 * at by the parent every 20 ms while the worker process solves). */
static int stop_requested(void *ctx)
{
	struct sync_solve *s = ctx;

	if (__atomic_load_n(&s->h->stopping, __ATOMIC_RELAXED))
		return 1;
	s->gone = client_gone(s->fd);
	return s->gone;
}

/* What the worker process of a synchronous solve runs. */
struct sync_work {
	const struct dataset *ds;
	const json_t *knowledge, *solver;
	struct solver_options base;
	double load;
};

static enum pm_status sync_body(void *arg, struct isolate_child *c, json_t **out,
				struct pm_error *err)
{
	struct sync_work *w = arg;

	w->base.progress = isolate_progress;
	w->base.progress_ctx = c;
	return pipeline_run_dataset(w->ds, w->knowledge, w->solver, &w->base, w->load, out, err);
}

/* At most sync_max solves at once on the connection threads; the others
 * get 503 rather than starving the machine. 0 when admitted. */
static int sync_enter(struct http_server *h)
{
	int full;

	pthread_mutex_lock(&h->sync_mu);
	full = h->sync_running >= h->sync_max;
	h->sync_running += !full;
	pthread_mutex_unlock(&h->sync_mu);
	return full;
}

static void sync_leave(struct http_server *h)
{
	pthread_mutex_lock(&h->sync_mu);
	h->sync_running--;
	pthread_mutex_unlock(&h->sync_mu);
}

/* Runs the validated request in a worker process (isolate.c); the
 * response is the result or the problem. */
static void solve_run(struct http_server *h, const struct http_request *r, const struct dataset *ds,
		      const json_t *req, double t0, struct http_response *res)
{
	const json_t *know = json_object_get(req, "knowledge");
	json_t *solver = merged_solver(know, json_object_get(req, "solver"));
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(r->con, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct sync_solve ss = {h, ci ? ci->connect_fd : -1, 0};
	struct sync_work w = {.ds = ds, .knowledge = know, .solver = solver};
	struct isolate_options io = {
	    .memory = h->o.worker_memory, .cancelled = stop_requested, .ctx = &ss};
	struct pm_error err = {0};
	struct isolate_answer a = {0};
	enum pm_status st;
	char *grown;

	solver_options_init(&w.base);
	w.base.time_limit = h->o.solve_time_limit; /* the default, and the most it gets */
	w.base.stall = h->o.test_stall;
	w.load = solver_now() - t0;
	io.deadline = h->o.solve_time_limit + h->o.test_stall + 30;
	if (h->o.test_crash && ds->name && !strcmp(ds->name, h->o.test_crash))
		io.test_signal = h->o.test_signal;
	st = isolate_run(sync_body, &w, &io, &a, &err);
	if (st == PM_ERR_CANCELLED) {
		/* a client that went away reads nothing: the answer is for the log */
		http_problem(res, 503, NULL, "%s",
			     ss.gone ? "the client closed the connection; the solve was cancelled"
				     : "the service is shutting down");
		res->retry_after = 5;
		metrics_sync_cancelled(h->metrics);
	} else if (st) {
		codec_request_field(&err);
		http_problem_err(res, &err);
	} else if (!(grown = realloc(a.text, a.len + 2))) {
		http_oom(res);
	} else {
		a.text = NULL;
		grown[a.len] = '\n'; /* as http_json writes it */
		grown[a.len + 1] = '\0';
		metrics_solve(h->metrics, a.seconds);
		http_take(res, 200, "application/json", grown, a.len + 1);
	}
	isolate_answer_finish(&a);
	json_decref(solver);
}

static void solve(struct http_server *h, const struct http_request *r, struct http_response *res)
{
	static const char *const keys[] = {"dataset", "knowledge", "solver", "report"};
	double t0 = solver_now();
	struct dataset *ds = NULL;
	struct pm_error err = {0};
	json_t *req = NULL;

	if (http_media_type(r) != MEDIA_JSON) {
		http_unsupported(res, r, "application/json");
		return;
	}
	if (http_body_json(r, &req, res) || check_keys(req, keys, 4, res))
		goto out;
	if (merge_report(req)) {
		http_oom(res);
		goto out;
	}
	if (!json_object_get(req, "dataset")) {
		http_problem(res, 422, "dataset", "is required (a dataset JSON document)");
		goto out;
	}
	if (codec_dataset(json_object_get(req, "dataset"), &ds, &err)) {
		error_prefix(&err, "dataset");
		http_problem_err(res, &err);
		goto out;
	}
	if (check_analysis(ds, json_object_get(req, "knowledge"), json_object_get(req, "solver"),
			   h->o.solve_time_limit, "--solve-time-limit", &err)) {
		http_problem_err(res, &err);
		goto out;
	}
	if (sync_enter(h)) {
		http_problem(res, 503, NULL,
			     "%zu synchronous solves are running; retry later or start an analysis",
			     h->sync_max);
		res->retry_after = 1;
		goto out;
	}
	solve_run(h, r, ds, req, t0, res);
	sync_leave(h);
out:
	json_decref(req);
	dataset_destroy(ds);
}

/* ---- dispatch ---------------------------------------------------------------- */

void analyses_handle(struct http_server *h, const struct http_request *r, struct http_response *res)
{
	int post = !strcmp(r->method, "POST"), del = !strcmp(r->method, "DELETE");

	switch (r->route) {
	case ROUTE_DATASET_ANALYSES:
		(post ? analysis_create : analysis_list)(h, r, res);
		break;
	case ROUTE_ANALYSIS:
		if (del)
			api_job_delete(h, r, &ANALYSES, res);
		else
			analysis_get(h, r, res);
		break;
	case ROUTE_POSTERIOR:
		posterior_get(h, r, res);
		break;
	case ROUTE_SOLVE:
		solve(h, r, res);
		break;
	default:
		http_problem(res, 404, NULL, "no resource at %s", r->path);
	}
}
