/*
 * Private to the HTTP service (http.c, http_start.c, http_util.c, api.c,
 * analyses.c, risk.c, sweeps.c, metrics.c): the server state, one request and one response as the
 * route handlers see them, and the helpers the handlers share. Not part of the public API
 * (server.h).
 */
#ifndef PMAXENT_HTTP_INTERNAL_H
#define PMAXENT_HTTP_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>
#include <stdarg.h>

#include "server.h"
#include "store.h"

/* "ds_", "an_" or "sw_" + 16 hex digits */
#define HTTP_ID_LEN    19
#define HTTP_ID_SIZE   (HTTP_ID_LEN + 1)
#define HTTP_MAX_DEPTH 64
/* request heads (gate.c): target, header fields, the whole head */
#define HTTP_MAX_URI	 8192
#define HTTP_MAX_HEADERS 100
#define HTTP_MAX_HEAD	 16384

/* A token's fewest characters: 16 random letters and digits are 95 bits,
 * out of reach of guessing over HTTP; shorter ones are placeholders
 * ("test", "x") left in a token file. */
#define HTTP_TOKEN_MIN 16
/* Seconds /readyz waits for the store. */
#define HTTP_READY_TIMEOUT 2.0
/* Seconds http_stop waits, after the grace, for the answers of requests
 * being handled when it ended (a commit under way). */
#define HTTP_ANSWER_WAIT 10.0

/* list pages (?limit=) of datasets and analyses */
#define HTTP_PAGE_DEFAULT 50
#define HTTP_PAGE_MAX	  1000

/* Route templates, for dispatch, 405 and the metrics labels. */
enum http_route {
	ROUTE_DATASETS,		/* /v1/datasets */
	ROUTE_DATASET,		/* /v1/datasets/{id} */
	ROUTE_DATASET_ANALYSES, /* /v1/datasets/{id}/analyses */
	ROUTE_ANALYSIS,		/* /v1/analyses/{id} */
	ROUTE_POSTERIOR,	/* /v1/analyses/{id}/posterior */
	ROUTE_RISK,		/* /v1/analyses/{id}/risk */
	ROUTE_REPORT,		/* /v1/analyses/{id}/report */
	ROUTE_DATASET_SWEEPS,	/* /v1/datasets/{id}/sweeps */
	ROUTE_SWEEP,		/* /v1/sweeps/{id} */
	ROUTE_SWEEP_CHART,	/* /v1/sweeps/{id}/chart.svg */
	ROUTE_SOLVE,		/* /v1/solve */
	ROUTE_OPENAPI,		/* /v1/openapi.yaml */
	ROUTE_HEALTHZ,		/* /healthz */
	ROUTE_READYZ,		/* /readyz */
	ROUTE_DASHBOARD,	/* / */
	ROUTE_METRICS,		/* /metrics */
	ROUTE_NONE,		/* no such resource */
	N_ROUTES
};

struct http_token {
	char *token, *tenant;
	int admin; /* may read the whole service's state (/metrics) */
};

/* The tokens of one reading of the token file. A reload (SIGHUP) puts a
 * new set in place while requests still use the old one: each request
 * holds a reference from its authentication to its end, and the last
 * one out frees the set. */
struct http_tokens {
	struct http_token *v;
	size_t n;
	int refs; /* under http_server.tokens_mu */
};

struct metrics;

struct http_server {
	struct http_options o; /* listen and data_dir point at the copies below */
	char *listen, *data_dir;
	struct store *store;
	struct jobs *jobs;
	struct metrics *metrics;
	struct MHD_Daemon *daemon;
	struct gate *gate;	    /* the listening socket and the connection limits */
	struct http_tokens *tokens; /* NULL when access control is off */
	pthread_mutex_t tokens_mu;  /* guards tokens (the pointer) and refs */
	/* http_stop: draining (no new connections, responses close theirs),
	 * then stopping (the grace is over: synchronous solves poll it, and
	 * a request not yet handled is refused rather than half done) */
	int draining, stopping;
	pthread_mutex_t drain_mu;
	pthread_cond_t drain_cv;
	size_t in_flight, handling; /* requests begun; of them, being handled */
	size_t fresh;		    /* connections handed over, no request begun yet */
	pthread_mutex_t sync_mu;
	size_t sync_running, sync_max; /* concurrent POST /v1/solve */
};

enum http_media { MEDIA_NONE, MEDIA_JSON, MEDIA_CSV, MEDIA_OTHER };

/* A request target decoded once, strictly (http_target_parse). */
#define HTTP_MAX_PARAMS 16
struct http_target {
	char *path; /* percent-decoded; owned */
	size_t n_params;
	char *names[HTTP_MAX_PARAMS], *values[HTTP_MAX_PARAMS]; /* decoded; owned */
};

/* One request, complete with its body, as the handlers see it. */
struct http_request {
	void *con;		   /* struct MHD_Connection */
	const char *method, *path; /* path: decoded, without the query */
	const struct http_target *target;
	enum http_route route;
	char id[HTTP_ID_SIZE]; /* the {id} of the path; "" when malformed */
	const char *tenant;    /* "" without access control */
	const char *body;      /* NUL-terminated; may be empty */
	size_t body_len;
	/* a text/csv POST /v1/datasets: its body read as it came instead
	 * (upload.c; body empty); NULL for any other request */
	struct upload *upload;
};

/* A response being built; http.c sends it. Strings are owned (free()). */
struct http_response {
	unsigned status;
	char *body;
	size_t len;
	const char *content_type; /* static */
	char *location;		  /* Location header */
	char *link;		  /* Link header (next page) */
	const char *allow;	  /* Allow header (405), static */
	const char *www_auth;	  /* WWW-Authenticate header (401), static */
	int retry_after;	  /* seconds; 0: no header */
	/* An ETag the handler made (quoted), so that a 304 needs no body;
	 * "": a GET's 200 is tagged with a hash of its body. */
	char etag[24];
	/* A body made as it is sent, in place of body (a stored result,
	 * result_stream.c): stream_len bytes, read by stream_read as
	 * libmicrohttpd's content reader (bytes written to buf from pos, or
	 * -2 to end the connection on an error); stream_free(stream_ctx) is
	 * called once whatever happens. */
	uint64_t stream_len;
	ssize_t (*stream_read)(void *ctx, uint64_t pos, char *buf, size_t max);
	void (*stream_free)(void *ctx);
	void *stream_ctx;
};

/* ---- http.c: the request cycle and the daemon ------------------------- */

/*
 * MHD serves the connections the gate hands over (no listening socket of
 * its own), one thread each. Its own limits are a backstop above the
 * gate's, which answer first; its pool holds a whole head. Starts both on
 * ss (h->daemon, h->gate), for http_start; http_stop stops them.
 */
enum pm_status http_daemon_start(struct http_server *h, const struct sockaddr_storage *ss,
				 struct pm_error *err);

/* ---- tokens.c: the token file ---------------------------------------- */

/* Reads and checks the whole file (private, a line per token of at least
 * HTTP_TOKEN_MIN characters, no byte order mark, no token twice); errors
 * name the line, never the token. *out: a new set with one reference, the
 * caller's; free with tokens_free when the last is dropped. */
enum pm_status tokens_load(const char *path, struct http_tokens **out, struct pm_error *err);
void tokens_free(struct http_tokens *t);
/* The entry of the token a[0..n), or NULL; compared in a time that does
 * not tell how much of a guess was right. Borrowed from t. */
const struct http_token *tokens_find(const struct http_tokens *t, const char *a, size_t n);
/* The server's current set with a reference for the caller (NULL without
 * access control), and the reference dropped: the last one frees the set,
 * so a reload never frees one a request still reads. */
struct http_tokens *tokens_get(struct http_server *h);
void tokens_put(struct http_server *h, struct http_tokens *t);

/* ---- http_util.c: helpers for the handlers ----------------------------- */

const char *http_header(const struct http_request *r, const char *name);
/*
 * Decodes the raw request target ("/v1/x%20y?limit=5") into t: the path
 * and the query parameters, percent-decoded. 0, or the status to answer
 * with the detail: 400 for a malformed escape, a NUL or another control
 * character (in the path or a parameter), a parameter given twice or too
 * many; 404 for an escaped '/' (%2F), which no path segment holds. Free t
 * with http_target_finish, also after a failure.
 */
unsigned http_target_parse(const char *raw, struct http_target *t, char *detail, size_t size);
void http_target_finish(struct http_target *t);
/* A query parameter, or NULL. */
const char *http_query(const struct http_request *r, const char *name);
enum http_media http_media_type(const struct http_request *r);
/* Whether the client asks for text/csv (Accept). */
int http_wants_csv(const struct http_request *r);

/* The reason phrase of a status ("Not found"). */
const char *http_reason(unsigned status);
/* The problem document of status as compact JSON text; caller frees.
 * NULL when out of memory. */
char *http_problem_text(unsigned status, const char *detail);
/* Replaces the response with a problem document (RFC 9457); field may be
 * NULL or "". */
void http_problem(struct http_response *res, unsigned status, const char *field, const char *fmt,
		  ...) __attribute__((format(printf, 4, 5)));
/* The problem for a failed call: status from err->status (input and
 * inconsistent knowledge 422, not found 404, busy 503, ...). */
void http_problem_err(struct http_response *res, const struct pm_error *err);
/* Sets the body to j (compact JSON, reals exact); steals the reference. */
void http_json(struct http_response *res, unsigned status, json_t *j);
/* Sets the body to text (copied) with the given content type. */
void http_text(struct http_response *res, unsigned status, const char *type, const char *text,
	       size_t len);
/* Sets the body to buf (taken over; malloc'd). */
void http_take(struct http_response *res, unsigned status, const char *type, char *buf, size_t len);
/* The body as JSON: checks nesting depth, then parses. 0 and *out set, or
 * -1 with a 400 problem in res. */
int http_body_json(const struct http_request *r, json_t **out, struct http_response *res);
/* A fresh id: prefix ("ds_", "an_") + 16 random hex digits. */
void http_new_id(char *buf, const char *prefix);
/* RFC 3339 UTC time ("2024-05-01T12:00:00Z"). */
void http_time(int64_t unix_seconds, char *buf, size_t len);
/* A 500 problem "out of memory"; returns -1. */
int http_oom(struct http_response *res);
/* The 415 problem; accepted lists the media types ("application/json"). */
void http_unsupported(struct http_response *res, const struct http_request *r,
		      const char *accepted);
/* Index of the first byte of s[0..n) that is not UTF-8, or n. */
size_t http_utf8_invalid_at(const char *s, size_t n);
/* JSON of text this service stored; NULL when text is NULL or unreadable. */
json_t *http_stored_json(const char *text);

/* Paging (?limit=&cursor=): 0, or -1 with a 400 problem in res. *after is
 * the cursor (0 without one). */
int http_page_params(const struct http_request *r, size_t def, size_t max, size_t *limit,
		     int64_t *after, struct http_response *res);
/* Link: <path?limit=L&cursor=NEXT>; rel="next" */
void http_next_link(struct http_response *res, const struct http_request *r, size_t limit,
		    const char *next);
/* Adds "items" and "next_cursor" (NULL: last page) to page (both taken)
 * and responds 200 with the Link header of the next page. */
void http_page_respond(struct http_response *res, const struct http_request *r, json_t *page,
		       json_t *items, const char *next, size_t limit);
/* A list of store rows (datasets, a dataset's analyses or sweeps):
 * ?limit= as http_page_params, ?cursor= a sealed cursor of this tenant
 * and path (http_cursor.c) opened into *after (0 without one); another
 * tenant's, another list's or a forged one is a 400. */
int http_list_params(const struct http_server *h, const struct http_request *r, size_t *limit,
		     int64_t *after, struct http_response *res);
/* The cursor after a page of store rows (asked for limit + 1): the seq of
 * its last row, sealed for this tenant and path, when more follow,
 * written to buf (HTTP_CURSOR_SIZE bytes), else NULL. */
const char *http_list_next(const struct http_server *h, const struct http_request *r,
			   const struct store_row *rows, size_t n, size_t limit, char *buf);

/* A growing text buffer; a failed allocation sticks in oom. */
struct http_text_buf {
	char *s;
	size_t len, cap;
	int oom;
};
void http_put(struct http_text_buf *t, const char *s, size_t n);
/* One CSV field (csv_out_cell: RFC 4180 quoting when needed, a leading '
 * before a formula; NULL is empty), then sep. */
void http_csv_field(struct http_text_buf *t, const char *s, char sep);

/* ---- http_cursor.c: opaque list cursors ---------------------------------- */

/* A cursor's text and its NUL. */
#define HTTP_CURSOR_SIZE 33
/* seq sealed under key (STORE_KEY_BYTES) for tenant and path, into out
 * (HTTP_CURSOR_SIZE bytes): base64url, a fresh nonce each time. */
void http_cursor_seal(const unsigned char *key, const char *tenant, const char *path, int64_t seq,
		      char *out);
/* The seq text sealed for this tenant and path: 0, or -1 when it is not
 * a cursor sealed by key for them. */
int http_cursor_open(const unsigned char *key, const char *tenant, const char *path,
		     const char *text, int64_t *seq);

/* ---- gate.c: the front door --------------------------------------------- */

/* What the gate enforces before a request reaches libmicrohttpd. */
struct gate_limits {
	size_t max_connections; /* open at once: pending here and served */
	size_t max_per_address; /* of them from one client address */
	double header_timeout;	/* seconds for a whole request head */
	size_t max_head;	/* request line and header fields, bytes */
	size_t max_uri;		/* request target, bytes */
	size_t max_headers;	/* header fields */
	uint64_t max_body;	/* Content-Length above: 413 */
};

/* The gate's verdict on the first n bytes of a connection. */
struct gate_verdict {
	int complete;	   /* 0: the head is not complete, and no error yet */
	unsigned status;   /* 0: well framed; else the status to answer */
	char detail[192];  /* what is wrong, for the problem document */
	size_t head_len;   /* bytes of the head, when complete */
	uint64_t body_len; /* its Content-Length (0 without) */
};

/* Checks the framing of a request head (RFC 9112, strictly): request line,
 * HTTP/1.0 or 1.1, header syntax, Host, Content-Length, no
 * Transfer-Encoding, the size limits of l. Pure: for the gate, the tests
 * and the fuzzer. */
void gate_check_head(const char *buf, size_t n, const struct gate_limits *l,
		     struct gate_verdict *v);

struct gate;
/* Takes over a connection whose head is well framed (always: it closes
 * fd itself if it cannot serve it). */
typedef void (*gate_handoff)(void *ctx, int fd, const struct sockaddr *addr, socklen_t len);

/* Listens on ss and runs the accepting thread. Refusals are counted in m
 * and logged (unless quiet). Caller frees with gate_destroy. */
enum pm_status gate_start(const struct sockaddr_storage *ss, const struct gate_limits *l,
			  gate_handoff handoff, void *ctx, struct metrics *m, int quiet,
			  struct gate **out, struct pm_error *err);
unsigned gate_port(const struct gate *g);
/* A connection handed off starts (+1) or ends (-1) being served; keeps the
 * per-address and total counts. Thread-safe; valid until gate_destroy. */
void gate_served(struct gate *g, const struct sockaddr *addr, int delta);
/* Stops accepting and closes the connections still pending here. */
void gate_stop(struct gate *g);
/* The limits g enforces (valid until gate_destroy). */
const struct gate_limits *gate_limits_of_gate(const struct gate *g);
/* Answers a refused head on a connection MHD serves (gate_keep.c) as the
 * gate answers one (the problem document, Connection: close), logged
 * and counted like the gate's; buf[0 .. n) is what was seen of it. */
void gate_refuse(struct gate *g, int fd, unsigned status, const char *detail, const char *buf,
		 size_t n, double t0);
/* gate_stop, then frees; NULL is a no-op. */
void gate_destroy(struct gate *g);

/* ---- gate_keep.c: keep-alive, every request checked -------------------- */

/* The table of connections handed to MHD (once per process); -1 when out
 * of memory (connections then close after one request). */
int gate_keep_init(void);
/* fd goes to MHD with checked bytes (its first request's head and body)
 * already checked; -1 when it cannot be kept (one request only). */
int gate_keep_handoff(struct gate *g, int fd, uint64_t checked);
/* MHD started or closed the connection con on fd. */
void gate_keep_started(int fd, const void *con);
void gate_keep_closed(int fd, const void *con);
/* Whether requests after the first on fd are checked (it may stay open). */
int gate_keep_alive(int fd);

/* ---- api.c ------------------------------------------------------------- */

/* The route of path; writes the {id} segment to id (or "" if it is not
 * a well-formed id). */
enum http_route api_route(const char *path, char *id);
/* Every query parameter of the request is one its route and method take:
 * 0, or -1 with a 400 problem naming the first that is not. */
int api_check_params(const struct http_request *r, struct http_response *res);
/* Allowed methods of a route ("GET, HEAD, POST"), NULL for ROUTE_NONE. */
const char *api_allow(enum http_route route);
/* Produces the response of an authenticated request with a known route
 * and allowed method. */
void api_handle(struct http_server *h, const struct http_request *r, struct http_response *res);
/* The 404 problem "no dataset/analysis with id ..." of the request's id. */
void api_not_found(struct http_response *res, const struct http_request *r);
/* A failed store call: not found is about the request's own id (404 as
 * api_not_found), anything else as http_problem_err. */
void api_store_failed(struct http_response *res, const struct http_request *r,
		      const struct pm_error *err);

/* What differs between the two kinds of job (analyses, sweeps) for their
 * start, GET and DELETE, which are otherwise one code (api.c). */
struct api_job_kind {
	const char *prefix; /* of its ids: "an_" */
	const char *path;   /* its resource, the id appended: "/v1/analyses/" */
	enum pm_status (*insert)(struct store *s, const char *id, const char *tenant,
				 const char *dataset_id, const char *request, struct pm_error *err);
	enum pm_status (*get)(struct store *s, const char *id, const char *tenant,
			      struct store_row *out, struct pm_error *err);
	enum pm_status (*del)(struct store *s, const char *id, const char *tenant,
			      struct pm_error *err);
	/* the job's JSON as the response, with that status */
	void (*respond)(struct http_server *h, struct http_response *res, unsigned status,
			const struct store_row *row);
};
/* Stores a job of the request's dataset (request: its JSON text) and
 * queues it: 202 with it and Location; a full queue is 503 with
 * Retry-After and nothing stored. */
void api_job_start(struct http_server *h, const struct http_request *r,
		   const struct api_job_kind *k, const char *request, struct http_response *res);
/* GET of the request's job. */
void api_job_get(struct http_server *h, const struct http_request *r, const struct api_job_kind *k,
		 struct http_response *res);
/* DELETE: cancels a queued or running job (200 with it, now "cancelled",
 * or finished meanwhile); deletes a finished one (204). */
void api_job_delete(struct http_server *h, const struct http_request *r,
		    const struct api_job_kind *k, struct http_response *res);
/* The upload the body of r is read into (api.c): non-NULL only for a
 * text/csv POST to /v1/datasets (made from its query); *oom set when one
 * was due and memory ran out. */
struct upload *api_upload_begin(const struct http_request *r, int *oom);

/* ---- result_stream.c --------------------------------------------------- */

/* Sets res to a 200 of the analysis id as stored in chunks: head (its
 * JSON without the closing brace, taken over), then "request" and
 * "result" read chunk by chunk from the store as they are sent (lengths
 * from m), and the closing brace. The first chunks m holds (taken) are
 * not read again; when they are the whole texts the body is sent from
 * memory. -1 (a 500 in res) out of memory. */
int result_stream_respond(struct http_server *h, struct http_response *res, const char *id,
			  char *head, size_t head_len, struct store_result *m);

/* ---- analyses.c -------------------------------------------------------- */

/* The response of ROUTE_DATASET_ANALYSES, ROUTE_ANALYSIS, ROUTE_POSTERIOR
 * and ROUTE_SOLVE, called by api_handle. */
void analyses_handle(struct http_server *h, const struct http_request *r,
		     struct http_response *res);

/* ---- risk.c ------------------------------------------------------------ */

/* The responses of ROUTE_RISK and ROUTE_REPORT (the privacy report as
 * one HTML page, report.c). The response of ROUTE_RISK (the tuples and named people of a succeeded
 * analysis ranked by their largest P*), called by api_handle. */
void risk_handle(struct http_server *h, const struct http_request *r, struct http_response *res);

/* ---- sweeps.c ---------------------------------------------------------- */

/* The responses of ROUTE_DATASET_SWEEPS, ROUTE_SWEEP and
 * ROUTE_SWEEP_CHART, called by api_handle. */
void sweeps_handle(struct http_server *h, const struct http_request *r, struct http_response *res);

/* ---- metrics.c --------------------------------------------------------- */

struct metrics *metrics_create(void);
void metrics_destroy(struct metrics *m);
const char *metrics_route_name(enum http_route route);
/* One finished request. */
void metrics_record(struct metrics *m, enum http_route route, const char *method, unsigned status,
		    double seconds);
/* One finished synchronous solve (POST /v1/solve), its "seconds". */
void metrics_solve(struct metrics *m, double seconds);
/* One POST /v1/solve stopped before its end (client gone, shutdown). */
void metrics_sync_cancelled(struct metrics *m);
/* The Prometheus text exposition (format 0.0.4); caller frees. NULL when
 * out of memory. */
char *metrics_render(struct http_server *h, size_t *len);
/* The access log line of one request (stderr). tenant NULL: not
 * authenticated. Never given the token. */
void metrics_log(const char *method, const char *path, unsigned status, size_t bytes,
		 double seconds, const char *tenant);

/* ---- upload.c: a CSV upload read as it arrives ---------------------------- */

struct upload;
/* The columns and name of ?sa=&group=[&name=] (each may be NULL); NULL
 * when out of memory. Free with upload_destroy (NULL: no-op). */
struct upload *upload_create(const char *sa, const char *group, const char *name);
void upload_destroy(struct upload *u);
/* The next piece of the body, cut anywhere. */
void upload_feed(struct upload *u, const char *data, size_t n);
/* The end of the body: 0 and *ds (the caller's), or -1 and the problem
 * in res (400 not UTF-8 or malformed CSV, 422 a bad dataset). */
int upload_finish(struct upload *u, struct dataset **ds, struct http_response *res);

#endif
