/*
 * server: everything that speaks JSON (jansson) or HTTP. This header is
 * the component's public API, what cli/ and the tests of the whole
 * service use: the JSON codec (SPEC sections 3-4), the analysis pipeline,
 * the service (`pmaxent serve`), the report, CSV cells, sweeps and the
 * SVG charts (svg.c, plain C). The store (store.h), the analysis workers
 * (jobs.h, isolate.h) and the data directory (datadir.h) are internal to
 * server/, as are the service's own headers (http_internal.h,
 * codec_internal.h, store_internal.h, db.h).
 */
#ifndef PMAXENT_SERVER_H
#define PMAXENT_SERVER_H

#include <jansson.h>
#include "solver.h"

/* ---- codec.c ------------------------------------------------------------ */

/* The readers below and codec_knowledge (codec_knowledge.c) are strict:
 * an unknown key at any depth is PM_ERR_INPUT naming it ("mine.positve"),
 * with a "did you mean" when a known key is close; fields are relative to
 * the document. */

/* Dataset from its JSON (records form or published form, SPEC section 3).
 * Caller frees *out with dataset_destroy. Errors name the field, e.g.
 * "records[17].qi". Length limits are the builder's (DATASET_MAX_*),
 * checked before any row is read. */
enum pm_status codec_dataset(const json_t *j, struct dataset **out, struct pm_error *err);

/* Solver options JSON ({"tolerance": .., "max_iterations": ..}); j may be
 * NULL. o must be initialised with solver_options_init first. */
enum pm_status codec_solver_options(const json_t *j, struct solver_options *o,
				    struct pm_error *err);
/* The privacy verdict's options, "report": {"threshold", "c"} (SPEC 4.1;
 * j may be NULL: o unchanged), errors under "report.threshold" etc. */
enum pm_status codec_report_options(const json_t *j, struct privacy_options *o,
				    struct pm_error *err);

/* ---- codec_records.c ---------------------------------------------------- */

/* A dataset (as codec_dataset) from the document's text, for the plain
 * records form that `pmaxent anatomize` writes, without a JSON tree (no
 * tree of every record: time and memory go with the text). Any other
 * text, and any text with an error, is PM_ERR_INPUT in err ("not read
 * directly: why"): the caller then reads it with json_loadb and
 * codec_dataset, which decide every message. err must not be NULL. */
enum pm_status codec_records_dataset(const char *text, size_t len, struct dataset **out,
				     struct pm_error *err);

/* ---- codec_knowledge.c -------------------------------------------------- */

/* Knowledge JSON (codec_knowledge.c): user rules, named individuals and
 * statements (SPEC 3.1; people first, as person terms name them) are
 * resolved against ds and appended to k; "mine" fills *mine and sets
 * *has_mine. j may be NULL (no knowledge). At most 100,000 rules,
 * statements and individuals each, 10,000 terms a statement (MAX_* in
 * codec_knowledge.c), and K of MINER_MAX_K. On error k may hold what was
 * read before it; the caller finishes k either way. */
enum pm_status codec_knowledge(const json_t *j, const struct dataset *ds, struct knowledge *k,
			       struct miner_options *mine, int *has_mine, struct pm_error *err);

/* An input error of pipeline_run_dataset named as an analysis request
 * names it: the knowledge document's fields ("rules[2].if", "mine",
 * "statements", "") get "knowledge." in front; solver fields already read
 * "solver.tolerance". Other errors are left as they are. */
void codec_request_field(struct pm_error *err);

/* ---- codec_out.c -------------------------------------------------------- */

/* One rule as JSON ({"if": {...}, "then": .., "probability": .., ...}).
 * Caller owns the new reference. */
json_t *codec_rule(const struct dataset *ds, const struct rule *r);
/* Knowledge as a knowledge JSON document ({"rules": [...]}, with
 * "statements" and "individuals" when k has any), which codec_knowledge
 * reads back as the same knowledge. New reference. */
json_t *codec_knowledge_json(const struct dataset *ds, const struct knowledge *k);
/* Records-form dataset JSON (needs ground truth). New reference. */
json_t *codec_dataset_json(const struct dataset *ds);
/* The same document written to f as json_dumps(codec_dataset_json(ds),
 * JSON_INDENT(2) | JSON_REAL_PRECISION(17)) and a newline would, byte for
 * byte, made a row at a time: memory stays that of one row, not of a tree
 * of every record (pmaxent anatomize on millions of records). */
enum pm_status codec_dataset_print(const struct dataset *ds, FILE *f, struct pm_error *err);

/* Seconds of each step of a run (SPEC section 4 "timings"). */
struct codec_timings {
	double load, mine, build, solve;
};

/* What a "mine" block asked for and what the miner found: fewer rules than
 * asked may reach min_support, and the result says so ("mined"). */
struct codec_mined {
	struct miner_options asked;
	struct miner_found found;
};

/* A result's "privacy" (SPEC 4.1): the posterior's metrics, with
 * "baseline" and, from the records, "truth" beside them; NULL if r has
 * none (or out of memory). Caller owns the reference. */
json_t *codec_privacy(const struct dataset *ds, const struct solver_result *r);
/* The result document of SPEC section 4; mined is NULL when the knowledge
 * had no "mine" block (then the result has no "mined"). With statements or
 * named people in k it has "statements" (with "achieved" and "binding"
 * when r has them) and "individuals" (with "p" and "groups" when r has
 * the people's cells). New reference. */
json_t *codec_result(const struct dataset *ds, const struct knowledge *k,
		     const struct solver_result *r, const struct codec_timings *t,
		     const struct codec_mined *mined);
/*
 * Entries [from, from + limit) of the "posterior" of a stored result
 * (JSON text s of n bytes, as codec_result wrote it) into *items (new
 * reference, caller decrefs; NULL on failure) and the posterior's length
 * into *total, parsing those entries only: a result's text holds its
 * rules and the whole posterior, and a page of 50 tuples of a large table
 * should not cost a parse of all of it. PM_ERR_INPUT when the text has no
 * top-level "posterior" array or is malformed.
 */
enum pm_status codec_result_posterior(const char *s, size_t n, size_t from, size_t limit,
				      json_t **items, size_t *total);

/* ---- pipeline.c --------------------------------------------------------- */

/*
 * A whole analysis: dataset JSON, optional knowledge JSON and solver options
 * JSON -> result JSON (*out, new reference). load_seconds is added to the
 * "load" timing (time the caller spent reading and parsing the text).
 * PM_ERR_INPUT for bad input, PM_ERR_INCONSISTENT for knowledge no
 * distribution satisfies.
 */
enum pm_status pipeline_run(const json_t *dataset, const json_t *knowledge, const json_t *solver,
			    double load_seconds, json_t **out, struct pm_error *err);

/*
 * A request's solver block (codec_solver_options; NULL: the defaults
 * already in *o) into *o, its time limit within what the service allows
 * (max seconds, flag the setting that says so; 0: no bound): 422 naming
 * solver.time_limit. The one place a request's time limit is read and
 * bounded; pipeline_run_dataset then runs with it, base's limit the
 * default.
 */
enum pm_status pipeline_solver_options(const json_t *solver, double max, const char *flag,
				       struct solver_options *o, struct pm_error *err);

/*
 * The same analysis on a dataset already loaded (CSV input, stored
 * datasets). base (may be NULL: solver_options_init defaults) supplies the
 * progress callback and defaults that the solver JSON overrides; its
 * time_limit is also the most the JSON may ask for. The time limit runs
 * from the start of the mining: mining that runs out of it is
 * PM_ERR_INPUT (field "mine"), the solve gets what is left.
 * load_seconds is the time already spent loading ds.
 */
enum pm_status pipeline_run_dataset(const struct dataset *ds, const json_t *knowledge,
				    const json_t *solver, const struct solver_options *base,
				    double load_seconds, json_t **out, struct pm_error *err);

/* ---- http_util.c -------------------------------------------------------- */

/* FNV-1a (64 bits) of n bytes, going on from h (PM_HASH_INIT to start):
 * the ETags of responses and the tags of stored results (http_util.c). */
#define PM_HASH_INIT 0xcbf29ce484222325u
uint64_t pm_hash(uint64_t h, const void *p, size_t n);

/* ---- http.c ------------------------------------------------------------- */

/* `pmaxent serve` settings (SPEC section 6, issues 3 and 21). */
struct http_options {
	const char *listen;   /* address, default "127.0.0.1" */
	unsigned port;	      /* default 8080; 0 picks a free port */
	const char *data_dir; /* default "./var" */
	/* a PostgreSQL URI ("postgresql://..."): the store many nodes share,
	 * in place of SQLite in data_dir; NULL: SQLite */
	const char *database;
	size_t workers;	       /* analysis workers, default: cores */
	size_t queue_capacity; /* queued analyses before 503, default 64 */
	/* fair shares (issue 36): one tenant's queued analyses and sweeps
	 * before 429 (0: half of queue_capacity with a token file, else the
	 * whole queue); its datasets and their bytes before 403 (0: no
	 * limit; default 1000 and 10 GiB) */
	size_t queue_per_tenant, tenant_max_datasets;
	uint64_t tenant_max_bytes;
	size_t dataset_cache_mb; /* parsed datasets kept (store_cache_limit), MiB */
	const char *token_file;	 /* lines "TOKEN TENANT [admin]"; NULL: no access control */
	size_t max_body;	 /* request body cap, bytes (413 above) */
	size_t max_solve_body;	 /* POST /v1/solve cap, bytes */
	size_t max_upload;	 /* text/csv POST /v1/datasets cap (read as it comes), bytes */
	int insecure;		 /* allow a non-loopback address without tokens */
	int quiet;		 /* no access log (tests) */
	/* connections: open at once, of them from one address; seconds for a
	 * whole request head, and of silence on a connection */
	size_t max_connections, max_per_address;
	double header_timeout, idle_timeout;
	/* solve time limits, seconds: an analysis's and a POST /v1/solve's
	 * default and maximum (solver.time_limit may ask for less) */
	double analysis_time_limit, solve_time_limit;
	/* starts of an analysis that its worker did not survive before it
	 * ends failed (a poison job) */
	int max_attempts;
	/* seconds: a claimed job's lease, its renewal (jobs_options) */
	double lease, heartbeat;
	/* tests only: each solve stalls this long at its first progress
	 * check (solver_options.stall), so that it is slow on purpose */
	double test_stall;
	/* bytes a solve's worker process may add to what it shares with the
	 * service (isolate.c; default isolate_default_memory(workers)) */
	size_t worker_memory;
	/* tests only: solves of a dataset named test_crash have their worker
	 * process raise test_signal (jobs_options) */
	const char *test_crash;
	int test_signal;
	/* seconds http_stop lets requests in flight finish (HTTP_GRACE) */
	double grace;
};

/* The default grace: longer than a large upload's last blocks and
 * commit, well under systemd's default stop timeout (90 s). */
#define HTTP_GRACE 30.0

void http_options_init(struct http_options *o);

struct http_server;

/* Reads the token file again (SIGHUP): the new tokens apply from the next
 * request on. A file that cannot be read or is refused leaves the tokens
 * as they were (err says why). Without a token file there is nothing to
 * read: PM_OK. */
enum pm_status http_reload(struct http_server *h, struct pm_error *err);

/* ---- http_start.c ------------------------------------------------------- */

/* Opens the store, starts the workers and the HTTP daemon. Caller stops it
 * with http_stop. */
enum pm_status http_start(const struct http_options *o, struct http_server **out,
			  struct pm_error *err);
/* The port actually bound (useful with port 0). */
unsigned http_port(const struct http_server *h);
/* Graceful shutdown: stop accepting, let the requests in flight finish
 * for up to the grace (responses then close their connections), cut what
 * is left (an upload cut short stores nothing), cancel running analyses
 * and mark them for re-run, close the database. http_stop(NULL) is a
 * no-op. */
void http_stop(struct http_server *h);

/* ---- report.c ----------------------------------------------------------- */

/* The privacy report of a result document (SPEC 4) as one self-contained
 * HTML page: caller frees the NUL-terminated text; *len (may be NULL) its
 * length. NULL when out of memory. */
char *report_html(const json_t *result, size_t *len);
/* The page of a sweep or an audit (SPEC 4.2, 4.3): its points as a table,
 * the chart of accuracy against K (sweep_chart) when they form the grid
 * kinds x T x K, and the worst adversary and the verdict when present.
 * Ownership and NULL as report_html. */
char *report_sweep_html(const json_t *sweep, size_t *len);
/* The page doc asks for: a result (it has a "posterior" array) as
 * report_html, a sweep (a "points" array) as report_sweep_html; anything
 * else is PM_ERR_INPUT, the message naming what doc is ("not a result or
 * a sweep: it has no ... (found keys: rules)"). *html: caller frees. */
enum pm_status report_document(const json_t *doc, char **html, size_t *len, struct pm_error *err);

/* ---- csv_out.c ---------------------------------------------------------- */

/* Where a CSV cell goes: n bytes of s (not NUL-terminated). */
typedef void (*csv_out_put)(void *ctx, const char *s, size_t n);
/* Whether s (NULL: no) would be a formula to a spreadsheet: it begins with
 * '=', '+', '-', '@', a tab or a CR and is not a decimal number. */
int csv_out_formula(const char *s);
/* The one way pmaxent writes a CSV cell (NULL: empty): a leading ' where
 * csv_out_formula says so (OWASP CSV injection), then RFC 4180 quoting
 * when it holds a comma, quote or line break or starts or ends with a
 * space. No separator. */
void csv_out_cell(const char *s, csv_out_put put, void *ctx);

/* ---- sweep.c ----------------------------------------------------------- */

/* SPEC 4.2's kinds: K positive rules, K negative, floor(K/2) positive
 * and the rest negative. */
enum sweep_kind { SWEEP_POSITIVE = 0, SWEEP_NEGATIVE, SWEEP_MIXED };

/* Points a sweep may make (kinds x T x K). */
#define SWEEP_MAX_POINTS 1000

/* A sweep request (SPEC 4.2), validated against its dataset. */
struct sweep_request {
	enum sweep_kind kinds[3];
	size_t n_kinds;
	size_t *k, n_k; /* owned */
	size_t *t, n_t; /* owned; n_t 0: every antecedent size, once */
	uint64_t min_support;
};

/* Reads {"kinds", "k", "qi_attributes", "min_support", "solver",
 * "report"} into q (the solver and report blocks are the caller's to
 * read: codec_solver_options, codec_report_options); errors name the
 * field. Free q with sweep_request_finish, also after a failure. */
enum pm_status codec_sweep_request(const json_t *j, const struct dataset *ds,
				   struct sweep_request *q, struct pm_error *err);
void sweep_request_finish(struct sweep_request *q);

/* Told each point as it is solved (point borrowed; at: its index in the
 * answer's points, kinds x T x K); nonzero cancels. */
struct sweep_hooks {
	int (*point)(void *ctx, size_t at, const json_t *point);
	void *ctx;
};

/*
 * Every point of q on ds with the options o: the rules of each T mined
 * once at the largest K, each point's the prefixes of the two ranked
 * lists. *out: {"points": [...]} in the order kinds x qi_attributes x K,
 * each point {kind, k, qi_attributes (null: every size),
 * estimation_accuracy, estimation_accuracy_infinite, privacy, seconds,
 * status, iterations, rules: {positive, negative}}. Caller owns *out.
 */
enum pm_status sweep_run(const struct dataset *ds, const struct sweep_request *q,
			 const struct solver_options *o, const struct sweep_hooks *hooks,
			 json_t **out, struct pm_error *err);

/* The chart of a sweep's points so far (null ones are gaps): accuracy
 * against K, one curve per kind and T, titled with name (may be NULL).
 * A standalone SVG document (svg_render); caller frees. NULL when out of
 * memory. */
char *sweep_chart(const char *name, const struct sweep_request *q, const json_t *points,
		  size_t *len);

/* ---- svg.c -------------------------------------------------------------- */

/*
 * Charts as SVG text, with no chart library (issue 24): the sweeps'
 * accuracy against K, one curve per kind or T, and the report's P*(s|q)
 * beside the baseline. Axes with 1-2-5 ticks, the title, a legend; each
 * series has its colour (Okabe-Ito) and its marker shape, so that grey
 * prints and colour-blind readers still tell them apart.
 */
enum svg_style {
	SVG_LINE_POINTS, /* a line through the points, each marked (the default) */
	SVG_LINE,	 /* the line alone */
	SVG_POINTS,	 /* markers alone: a scatter, or a dot plot by category */
};

struct svg_series {
	const char *name; /* in the legend; NULL: none */
	/* n points; x NULL: point i at x = i (category i). A point whose x or
	 * y is not finite is skipped, a gap in the line. */
	const double *x, *y;
	size_t n;
	enum svg_style style;
};

struct svg_chart {
	const char *title, *x_label, *y_label; /* NULL: none */
	/* Fixed axis ranges where min < max (data outside is clipped);
	 * otherwise the data's range, widened to whole ticks. */
	double x_min, x_max, y_min, y_max;
	/* Names of categories 0 .. n_categories - 1, the x tick labels in
	 * place of numbers (the x range is then theirs). */
	const char *const *categories;
	size_t n_categories;
	int diagonal;  /* draw y = x: a scatter of one estimate against another */
	int x_integer; /* x is a count (K): its ticks whole numbers apart */
};

/* The chart of n series (s may be NULL when n is 0) as a standalone SVG
 * 1.1 document of 720 x 440 with a viewBox. It has no XML declaration, so
 * that a page may also inline it. All text given is XML-escaped; invalid
 * UTF-8 becomes U+FFFD; series names over 28 characters and category
 * names over 24 are cut with an ellipsis. Caller frees the NUL-terminated text; *len (len
 * may be NULL) gets its length. NULL when out of memory. */
char *svg_render(const struct svg_chart *c, const struct svg_series *s, size_t n, size_t *len);

#endif
