/*
 * The HTTP side of `pmaxent serve` (SPEC section 6, issue 3) on
 * libmicrohttpd: access control, body limits, ETag/304, the access log
 * and the metrics of every request, and the daemon that serves the
 * gate's connections. The helpers the route handlers share are in
 * http_util.c; http_start.c starts and stops the service. Requests run on
 * MHD's connection threads; analyses never do (they go to the worker pool
 * in jobs.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <math.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "http_internal.h"
#include "jobs.h"

#if defined(__has_include)
#if __has_include("dashboard_csp.h")
#include "dashboard_csp.h" /* the sha256 of the dashboard's script */
#endif
#endif
#ifndef DASHBOARD_SCRIPT_SOURCE
#define DASHBOARD_SCRIPT_SOURCE "'none'"
#endif

/* Per-connection state of one request, from its request line to its end
 * (connections are closed after one request: every request passes the
 * gate). */
struct conn {
	double t0;
	char *raw;		   /* the request target as sent */
	struct http_target target; /* decoded once, strictly */
	enum http_route route;
	char id[HTTP_ID_SIZE];
	const char *tenant;	    /* in tokens, or "" */
	struct http_tokens *tokens; /* the set tenant is from: a reference */
	int admin;		    /* the token has the admin role (or no access control) */
	int handled;		    /* counted in http_server.handling */
	char *body;
	size_t len, cap, limit;
	int begun;     /* the headers have been seen (begin) */
	int too_large; /* the body passed the limit: discarded, answer 413 */
	int answered;  /* a response was queued early (401, 413) */
	/* a CSV upload, read as it arrives instead of kept (upload.c) */
	struct upload *upload;
	int streams;	/* it is one: its limit is max_upload */
	int upload_oom; /* it is one, and there was no memory for it */
};

void http_options_init(struct http_options *o)
{
	memset(o, 0, sizeof *o);
	o->listen = "127.0.0.1";
	o->port = 8080;
	o->data_dir = "./var";
	o->workers = (size_t)parallel_cpus();
	o->queue_capacity = 64;
	o->tenant_max_datasets = 1000;
	o->tenant_max_bytes = (uint64_t)10 << 30;
	o->dataset_cache_mb = STORE_CACHE_BYTES >> 20;
	o->max_body = (size_t)64 << 20;
	o->max_solve_body = (size_t)1 << 20;
	o->max_upload = (size_t)2 << 30;
	o->max_connections = 1024;
	o->max_per_address = 64;
	o->header_timeout = 10;
	o->idle_timeout = 30;
	o->analysis_time_limit = 3600;
	o->solve_time_limit = 10;
	o->max_attempts = 3;
	o->lease = JOBS_LEASE;
	o->heartbeat = JOBS_HEARTBEAT;
	o->grace = HTTP_GRACE;
}

/* ---- access control ------------------------------------------------------ */

/* The tenant of the request's bearer token, "" without access control,
 * NULL when the token is missing or unknown; *admin: whether it may read
 * the whole service's state (/metrics). The tenant lives in c->tokens,
 * which the request holds until it ends. */
static const char *authenticate(struct http_server *h, struct MHD_Connection *con, struct conn *c,
				int *missing)
{
	const char *a = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Authorization");
	const char *tenant = NULL;
	struct http_tokens *t = c->tokens = tokens_get(h);
	const struct http_token *found;
	size_t n;

	*missing = 0;
	c->admin = !t;
	if (!t)
		return "";
	if (!a || strncasecmp(a, "Bearer ", 7)) {
		*missing = 1;
		return NULL;
	}
	for (a += 7; *a == ' '; a++)
		;
	for (n = strlen(a); n && a[n - 1] == ' '; n--)
		;
	if ((found = tokens_find(t, a, n))) {
		tenant = found->tenant;
		c->admin = found->admin;
	}
	return tenant;
}

enum pm_status http_reload(struct http_server *h, struct pm_error *err)
{
	struct http_tokens *t = NULL, *old;
	enum pm_status st;

	if (!h || !h->o.token_file)
		return PM_OK;
	if ((st = tokens_load(h->o.token_file, &t, err)))
		return st;
	pthread_mutex_lock(&h->tokens_mu);
	old = h->tokens;
	h->tokens = t;
	pthread_mutex_unlock(&h->tokens_mu);
	tokens_put(h, old); /* freed when the last request using it ends */
	return PM_OK;
}

/* ---- responses, logging ---------------------------------------------------- */

/* FNV-1a 64: a strong validator for the exact body bytes. */
static void etag_of(const char *body, size_t len, char *out, size_t size)
{
	snprintf(out, size, "\"%016" PRIx64 "\"", pm_hash(PM_HASH_INIT, body, len));
}

/* Whether If-None-Match lists etag (or "*"); weak tags compare too. */
static int etag_matches(const char *inm, const char *etag)
{
	size_t n = strlen(etag);

	while (inm && *inm) {
		while (*inm == ' ' || *inm == ',' || *inm == '\t')
			inm++;
		if (!strncmp(inm, "W/", 2))
			inm += 2;
		if (*inm == '*' || !strncmp(inm, etag, n))
			return 1;
		inm += strcspn(inm, ",");
	}
	return 0;
}

static void add_headers(struct MHD_Response *mr, const struct http_response *res)
{
	char ra[32];

	if (res->content_type && res->status != 304 && res->status != 204)
		MHD_add_response_header(mr, MHD_HTTP_HEADER_CONTENT_TYPE, res->content_type);
	if (res->location)
		MHD_add_response_header(mr, MHD_HTTP_HEADER_LOCATION, res->location);
	if (res->link)
		MHD_add_response_header(mr, MHD_HTTP_HEADER_LINK, res->link);
	if (res->allow)
		MHD_add_response_header(mr, MHD_HTTP_HEADER_ALLOW, res->allow);
	if (res->www_auth)
		MHD_add_response_header(mr, MHD_HTTP_HEADER_WWW_AUTHENTICATE, res->www_auth);
	if (res->retry_after) {
		snprintf(ra, sizeof ra, "%d", res->retry_after);
		MHD_add_response_header(mr, MHD_HTTP_HEADER_RETRY_AFTER, ra);
	}
}

/* The MHD response of res, taking its body or its stream (NULL when out
 * of memory; the stream is freed either way). */
static struct MHD_Response *response_of(struct http_response *res)
{
	struct MHD_Response *mr;

	if (res->stream_read) {
		mr = MHD_create_response_from_callback(res->stream_len, 64 * 1024, res->stream_read,
						       res->stream_ctx, res->stream_free);
		if (!mr)
			res->stream_free(res->stream_ctx);
		res->stream_read = NULL;
		res->stream_free = NULL;
		res->stream_ctx = NULL;
		return mr;
	}
	mr = MHD_create_response_from_buffer(res->len, res->body ? res->body : "",
					     res->body ? MHD_RESPMEM_MUST_FREE
						       : MHD_RESPMEM_PERSISTENT);
	if (mr)
		res->body = NULL; /* MHD frees it */
	return mr;
}

/*
 * The headers a browser obeys. nosniff on every response: a body is
 * never taken for another type than it says. The rest on the routes that
 * answer HTML or SVG, chosen by route, not by content type: a 304 carries
 * no type but its headers replace the cached ones, and an error on such a
 * route is still rendered by a browser. (A JSON body under nosniff is
 * never rendered as a page; leaving them off it keeps polling cheap.) The
 * dashboard's policy: its one script (by hash, scripts/embed_dashboard.py),
 * calls to this origin, charts as blob: images and the report in a
 * sandboxed srcdoc frame, which inherits this policy, so the report's
 * inline style needs 'unsafe-inline' (with no source to load, a style can
 * send nothing anywhere). The report and the chart run nothing, load
 * nothing and open in a unique origin (sandbox).
 */
static void browser_headers(struct MHD_Response *mr, enum http_route route)
{
	static const char dashboard[] =
	    "default-src 'none'; script-src " DASHBOARD_SCRIPT_SOURCE "; style-src "
	    "'unsafe-inline'; connect-src 'self'; img-src blob:; base-uri 'none'; "
	    "form-action 'none'; frame-ancestors 'none'";
	static const char document[] = "default-src 'none'; style-src 'unsafe-inline'; "
				       "base-uri 'none'; form-action 'none'; "
				       "frame-ancestors 'none'; sandbox";

	MHD_add_response_header(mr, "X-Content-Type-Options", "nosniff");
	if (route != ROUTE_DASHBOARD && route != ROUTE_REPORT && route != ROUTE_SWEEP_CHART)
		return;
	MHD_add_response_header(mr, "Content-Security-Policy",
				route == ROUTE_DASHBOARD ? dashboard : document);
	MHD_add_response_header(mr, "X-Frame-Options", "DENY");
	MHD_add_response_header(mr, "Referrer-Policy", "no-referrer");
}

/* Whether a response closes its connection: while the service stops, so
 * that no client sends another request into a socket about to close; or
 * when the connection's next request could not be checked before it is
 * read (gate_keep.c). */
static int ends_connection(const struct http_server *h, struct MHD_Connection *con)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(con, MHD_CONNECTION_INFO_CONNECTION_FD);

	return __atomic_load_n(&h->draining, __ATOMIC_RELAXED) ||
	       __atomic_load_n(&h->stopping, __ATOMIC_RELAXED) || !ci ||
	       !gate_keep_alive(ci->connect_fd);
}

/* Sends res (taking its body), with ETag/304 on GET, and logs it. */
static enum MHD_Result send_response(struct http_server *h, struct MHD_Connection *con,
				     struct conn *c, const char *method, struct http_response *res)
{
	int get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
	struct MHD_Response *mr;
	enum MHD_Result ok = MHD_NO;
	char etag[24] = "";
	uint64_t bytes;

	if (!res->status)
		http_problem(res, 500, NULL, "no response was produced");
	if (get && res->status == 200) {
		if (res->etag[0])
			snprintf(etag, sizeof etag, "%s", res->etag);
		else
			etag_of(res->body ? res->body : "", res->len, etag, sizeof etag);
		/* before any of a streamed body is read */
		if (etag_matches(MHD_lookup_connection_value(con, MHD_HEADER_KIND,
							     MHD_HTTP_HEADER_IF_NONE_MATCH),
				 etag))
			http_take(res, 304, NULL, NULL, 0);
	}
	bytes = res->stream_read ? res->stream_len : res->len;
	mr = response_of(res);
	if (mr) {
		add_headers(mr, res);
		browser_headers(mr, c->route);
		if (ends_connection(h, con))
			MHD_add_response_header(mr, MHD_HTTP_HEADER_CONNECTION, "close");
		if (etag[0]) {
			MHD_add_response_header(mr, MHD_HTTP_HEADER_ETAG, etag);
			MHD_add_response_header(mr, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
			MHD_add_response_header(mr, MHD_HTTP_HEADER_VARY, "Accept, Authorization");
		}
		ok = MHD_queue_response(con, res->status, mr);
		MHD_destroy_response(mr);
	}
	metrics_record(h->metrics, c->route, method, res->status, solver_now() - c->t0);
	if (!h->o.quiet)
		metrics_log(method, c->target.path ? c->target.path : c->raw, res->status,
			    (size_t)bytes, solver_now() - c->t0, c->tenant);
	free(res->body);
	free(res->location);
	free(res->link);
	return ok;
}

/* ---- the request cycle ------------------------------------------------------ */

static int method_allowed(const char *allow, const char *method)
{
	size_t n = strlen(method);

	for (const char *a = allow; a && *a; a += strcspn(a, ","), a += *a == ',') {
		while (*a == ' ')
			a++;
		if (!strncmp(a, method, n) && (a[n] == ',' || a[n] == '\0'))
			return 1;
	}
	return 0;
}

/* A connection handed over whose first request has not begun: http_stop
 * waits for it as for a request in flight (MHD may take it up on its own
 * thread only after the SIGTERM). Its flag is the connection's socket
 * context. */
static void fresh_done(struct http_server *h, int *fresh)
{
	if (!fresh || !*fresh)
		return;
	*fresh = 0;
	pthread_mutex_lock(&h->drain_mu);
	h->fresh--;
	pthread_cond_broadcast(&h->drain_cv);
	pthread_mutex_unlock(&h->drain_mu);
}

/* The request line has been read: the raw target is kept, everything
 * else waits for the headers (begin). Its result is the request's *con_cls. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *con)
{
	struct http_server *h = cls;
	struct conn *c = calloc(1, sizeof *c);
	const union MHD_ConnectionInfo *ci;

	if (c && !(c->raw = strdup(uri))) {
		free(c);
		c = NULL;
	}
	if (c) {
		c->t0 = solver_now();
		pthread_mutex_lock(&h->drain_mu);
		h->in_flight++;
		pthread_mutex_unlock(&h->drain_mu);
	}
	if ((ci = MHD_get_connection_info(con, MHD_CONNECTION_INFO_SOCKET_CONTEXT)))
		fresh_done(h, ci->socket_context);
	return c;
}

/* A request whose body is in is handled unless the grace is over: then it
 * is refused whole (503), never half done, for its answer could not be
 * sent. Counted until it ends, so that http_stop waits for its answer. */
static int may_handle(struct http_server *h, struct conn *c)
{
	pthread_mutex_lock(&h->drain_mu);
	c->handled = !h->stopping;
	h->handling += (size_t)c->handled;
	pthread_mutex_unlock(&h->drain_mu);
	return c->handled;
}

/* The request has ended (answered, or its connection cut). */
static void request_ended(struct http_server *h, struct conn *c)
{
	pthread_mutex_lock(&h->drain_mu);
	h->in_flight--;
	h->handling -= (size_t)c->handled;
	pthread_cond_broadcast(&h->drain_cv);
	pthread_mutex_unlock(&h->drain_mu);
	tokens_put(h, c->tokens);
}

/* Is this a text/csv POST /v1/datasets, read as it arrives (upload.c)? */
static int streams(struct MHD_Connection *con, enum http_route route, const char *method)
{
	struct http_request r = {con, method, "", NULL, route, "", "", "", 0, NULL};

	return route == ROUTE_DATASETS && !strcmp(method, "POST") &&
	       http_media_type(&r) == MEDIA_CSV;
}

/* The problem of a request that cannot go on, before its body: a stranger
 * (401), an unreadable target (400/404), an announced oversize body
 * (413). 0 when it may go on. */
static unsigned refuse_early(struct http_server *h, struct MHD_Connection *con, struct conn *c,
			     const char *method, struct http_response *res)
{
	const char *cl;
	unsigned st;
	char detail[256];
	int missing = 0;

	st = http_target_parse(c->raw, &c->target, detail, sizeof detail);
	c->route = st ? ROUTE_NONE : api_route(c->target.path, c->id);
	c->streams = streams(con, c->route, method);
	c->limit = c->route == ROUTE_SOLVE ? h->o.max_solve_body
		   : c->streams		   ? h->o.max_upload
					   : h->o.max_body;
	/* the dashboard's page is public: it asks for the token itself */
	c->tenant =
	    c->route == ROUTE_HEALTHZ || c->route == ROUTE_READYZ || c->route == ROUTE_DASHBOARD
		? ""
		: authenticate(h, con, c, &missing);
	cl = MHD_lookup_connection_value(con, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (!c->tenant) {
		http_problem(res, 401, NULL, "%s",
			     missing ? "this service needs an 'Authorization: Bearer TOKEN' header"
				     : "the bearer token is not valid");
		res->www_auth = missing ? "Bearer realm=\"pmaxent\""
					: "Bearer realm=\"pmaxent\", error=\"invalid_token\"";
	} else if (st) {
		http_problem(res, st, NULL, "%s", detail);
	} else if (cl && strtoull(cl, NULL, 10) > c->limit) {
		http_problem(res, 413, NULL,
			     "the request body (%s bytes) is over the limit of %zu bytes", cl,
			     c->limit);
	}
	return res->status;
}

/* First call, headers only: so that neither a stranger nor an oversize
 * body costs a byte of buffer. */
static enum MHD_Result begin(struct http_server *h, struct MHD_Connection *con, struct conn *c,
			     const char *method)
{
	struct http_response res = {0};

	struct http_request r = {con, method, "", &c->target, ROUTE_NONE, "", "", "", 0, NULL};

	c->begun = 1;
	if (!refuse_early(h, con, c, method, &res)) {
		r.route = c->route;
		c->upload = c->streams ? api_upload_begin(&r, &c->upload_oom) : NULL;
		return MHD_YES;
	}
	c->answered = 1;
	return send_response(h, con, c, method, &res);
}

/* Body bytes: kept up to the limit, then discarded (answered with 413);
 * a CSV upload's go to its parser as they come. */
static void absorb(struct conn *c, const char *data, size_t n)
{
	size_t cap;
	char *grown;

	if (c->too_large || c->answered)
		return;
	if (n > c->limit - c->len) {
		c->too_large = 1;
		free(c->body);
		c->body = NULL;
		upload_destroy(c->upload); /* what it built goes at once */
		c->upload = NULL;
		return;
	}
	if (c->upload || c->upload_oom) {
		if (c->upload)
			upload_feed(c->upload, data, n);
		c->len += n;
		return;
	}
	if (c->len + n + 1 > c->cap) {
		cap = c->cap ? c->cap : 4096;
		while (cap < c->len + n + 1)
			cap *= 2;
		if (!(grown = realloc(c->body, cap))) {
			c->too_large = 1; /* cannot hold it: treat as too large */
			return;
		}
		c->body = grown;
		c->cap = cap;
	}
	memcpy(c->body + c->len, data, n);
	c->len += n;
}

static enum MHD_Result finish_request(struct http_server *h, struct MHD_Connection *con,
				      struct conn *c, const char *method)
{
	const char *url = c->target.path;
	struct http_request r = {con, method,	 url, &c->target, c->route,
				 "",  c->tenant, "",  0,	  NULL};
	struct http_response res = {0};
	const char *allow = api_allow(c->route);

	memcpy(r.id, c->id, sizeof r.id);
	r.upload = c->upload;
	if (c->body) {
		c->body[c->len] = '\0';
		r.body = c->body;
		r.body_len = c->len;
	}
	if (!may_handle(h, c)) {
		http_problem(&res, 503, NULL, "the service is stopping; try again");
		res.retry_after = 5;
	} else if (c->too_large)
		http_problem(&res, 413, NULL, "the request body is over the limit of %zu bytes",
			     c->limit);
	else if (c->upload_oom)
		http_oom(&res);
	else if (!allow)
		http_problem(&res, 404, NULL, "no resource at %s", url);
	else if (!method_allowed(allow, method)) {
		http_problem(&res, 405, NULL, "%s does not allow %s (allowed: %s)", url, method,
			     allow);
		res.allow = allow;
	} else if (!api_check_params(&r, &res)) {
		if (c->route == ROUTE_METRICS && !c->admin)
			http_problem(
			    &res, 403, NULL,
			    "/metrics shows every tenant's work: it needs a token with the "
			    "admin role ('TOKEN TENANT admin' in the token file)");
		else
			api_handle(h, &r, &res);
	}
	return send_response(h, con, c, method, &res);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *con, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct http_server *h = cls;
	struct conn *c = *con_cls;

	if (!c)
		return MHD_NO; /* on_uri ran out of memory */
	if (!c->begun)
		return begin(h, con, c, method);
	if (*upload_size) {
		absorb(c, upload, *upload_size);
		*upload_size = 0;
		return MHD_YES;
	}
	if (c->answered)
		return MHD_YES;
	c->answered = 1;
	return finish_request(h, con, c, method);
}

static void on_completed(void *cls, struct MHD_Connection *con, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct http_server *h = cls;
	struct conn *c = *con_cls;

	if (c) {
		request_ended(h, c);
		free(c->body);
		upload_destroy(c->upload);
		free(c->raw);
		http_target_finish(&c->target);
	}
	free(c);
	*con_cls = NULL;
}

/* ---- the daemon: the gate's connections to libmicrohttpd -------------------- */

/* A connection that MHD starts or stops serving: the gate's counts. */
static void on_connection(void *cls, struct MHD_Connection *con, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct http_server *h = cls;
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(con, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const union MHD_ConnectionInfo *fi =
	    MHD_get_connection_info(con, MHD_CONNECTION_INFO_CONNECTION_FD);
	int started = toe == MHD_CONNECTION_NOTIFY_STARTED;

	(void)socket_context;
	if (fi)
		(started ? gate_keep_started : gate_keep_closed)(fi->connect_fd, con);
	if (ci)
		gate_served(h->gate, ci->client_addr, started ? 1 : -1);
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		*socket_context = calloc(1, sizeof(int));
		if (*socket_context)
			*(int *)*socket_context = 1;
		else
			fresh_done(h, &(int){1}); /* not counted any further */
	} else {
		fresh_done(h, *socket_context);
		free(*socket_context);
		*socket_context = NULL;
	}
}

/* The gate's well-framed connections go to MHD (which closes fd itself
 * when it cannot take it). */
static void handoff(void *ctx, int fd, const struct sockaddr *addr, socklen_t len)
{
	struct http_server *h = ctx;

	pthread_mutex_lock(&h->drain_mu);
	h->fresh++;
	pthread_mutex_unlock(&h->drain_mu);
	if (MHD_add_connection(h->daemon, fd, addr, len) != MHD_YES)
		fresh_done(h, &(int){1});
}

/* The limits the gate enforces, from the options. */
static void gate_limits_of(const struct http_options *o, struct gate_limits *l)
{
	l->max_connections = o->max_connections;
	l->max_per_address = o->max_per_address;
	l->header_timeout = o->header_timeout;
	l->max_head = HTTP_MAX_HEAD;
	l->max_uri = HTTP_MAX_URI;
	l->max_headers = HTTP_MAX_HEADERS;
	/* the routes' body limits come after authentication (refuse_early):
	 * a stranger learns nothing of them; the gate refuses only what no
	 * limit could allow */
	l->max_body = INT64_MAX;
}

enum pm_status http_daemon_start(struct http_server *h, const struct sockaddr_storage *ss,
				 struct pm_error *err)
{
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
			 MHD_USE_POLL | MHD_USE_ITC | MHD_USE_NO_LISTEN_SOCKET;
	struct gate_limits l;

	gate_limits_of(&h->o, &l);
	h->daemon = MHD_start_daemon(
	    flags, 0, NULL, NULL, on_request, h, MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
	    MHD_OPTION_URI_LOG_CALLBACK, on_uri, h, MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)ceil(h->o.idle_timeout),
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned)(2 * l.max_connections + 16),
	    MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)(2 * l.max_per_address + 16),
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(4 * HTTP_MAX_HEAD + 65536),
	    MHD_OPTION_END);
	if (!h->daemon)
		return error_set(err, PM_ERR_INTERNAL, "", "cannot start the HTTP daemon");
	return gate_start(ss, &l, handoff, h, h->metrics, h->o.quiet, &h->gate, err);
}
