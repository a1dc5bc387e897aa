/*
 * server: everything that speaks JSON (jansson) or HTTP. For now the JSON
 * codec (SPEC sections 3-4) and the analysis pipeline shared by the CLI and
 * the future HTTP service; and the SVG charts both draw (svg.c, plain C).
 */
#ifndef PMAXENT_SERVER_H
#define PMAXENT_SERVER_H

#include <jansson.h>
#include "solver.h"

/* ---- codec.c, codec_knowledge.c, codec_out.c ---------------------------- */

/* The three readers below are strict: an unknown key at any depth is
 * PM_ERR_INPUT naming it ("mine.positve"), with a "did you mean" when a
 * known key is close; fields are relative to the document. */

/* Dataset from its JSON (records form or published form, SPEC section 3).
 * Caller frees *out with dataset_destroy. Errors name the field, e.g.
 * "records[17].qi". Length limits are the builder's (DATASET_MAX_*),
 * checked before any row is read. */
enum pm_status codec_dataset(const json_t *j, struct dataset **out, struct pm_error *err);
/* The same from the document's text, for the plain records form that
 * `pmaxent anatomize` writes, without a JSON tree (codec_records.c: 10M
 * records in a fraction of the time and memory). Any other text, and
 * any text with an error, is PM_ERR_INPUT in err ("not read directly:
 * why"): the caller then reads it with json_loadb and codec_dataset,
 * which decide every message. err must not be NULL. */
enum pm_status codec_records_dataset(const char *text, size_t len, struct dataset **out,
				     struct pm_error *err);

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

/* Solver options JSON ({"tolerance": .., "max_iterations": ..}); j may be
 * NULL. o must be initialised with solver_options_init first. */
enum pm_status codec_solver_options(const json_t *j, struct solver_options *o,
				    struct pm_error *err);
/* The privacy verdict's options, "report": {"threshold", "c"} (SPEC 4.1;
 * j may be NULL: o unchanged), errors under "report.threshold" etc. */
enum pm_status codec_report_options(const json_t *j, struct privacy_options *o,
				    struct pm_error *err);

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

/* Monotonic clock in seconds. */
double pipeline_now(void);

/* FNV-1a (64 bits) of n bytes, going on from h (PM_HASH_INIT to start):
 * the ETags of responses and the tags of stored results (http_util.c). */
#define PM_HASH_INIT 0xcbf29ce484222325u
uint64_t pm_hash(uint64_t h, const void *p, size_t n);

/* ---- datadir.c ---------------------------------------------------------- */

/* Creates the data directory dir (mkdir -p, 0700) and takes its lock
 * (DIR/pmaxent.lock, 0600, the holder's pid in it): "data directory D is
 * in use by pid P" (PM_ERR_IO, field data_dir) when another process
 * holds it. The lock lasts until *lock_fd is closed (-1 on failure). */
enum pm_status datadir_open(const char *dir, int *lock_fd, struct pm_error *err);
/* Creates path if missing, and makes it readable by its owner only
 * (0600), also if it existed with a wider mode. */
enum pm_status datadir_private(const char *path, struct pm_error *err);

/* ---- store.c ------------------------------------------------------------ */

/*
 * Durable storage on SQLite (WAL) in a data directory: datasets, analyses
 * and their results. Every write is one transaction, so a crash never
 * leaves a half-written row visible. Thread-safe (one connection behind a
 * mutex). Tenants: "" when access control is off; a row of another tenant
 * is PM_ERR_NOT_FOUND, exactly like a missing one.
 */
struct store;

/* One dataset or analysis row; strings are owned (free with
 * store_row_finish). seq is the row's insertion order, the list cursor. */
struct store_row {
	int64_t seq;
	char *id, *tenant;
	char *dataset_id;	  /* analyses */
	char *status;		  /* analyses: queued|running|succeeded|failed|cancelled */
	char *summary;		  /* datasets: summary JSON text */
	char *body;		  /* datasets: JSON text (schema < 5; asked for) or "" */
	char *request;		  /* analyses: {"knowledge":..,"solver":..} JSON text */
	char *result;		  /* analyses: result JSON text once succeeded; sweeps: points */
	char *problem;		  /* analyses: problem JSON text once failed */
	int64_t created, updated; /* unix seconds */
	int attempts;		  /* analyses: times a worker started it */
	int crashes;		  /* analyses: starts the service did not survive */
	char *progress;		  /* running: JSON text of the last heartbeat's, or NULL */
};

void store_row_finish(struct store_row *r);
/* Frees an array of n rows from a list call. */
void store_rows_free(struct store_row *rows, size_t n);

/* Opens (creating if needed) DIR/pmaxent.db. Caller frees with store_close. */
enum pm_status store_open(const char *dir, struct store **out, struct pm_error *err);
void store_close(struct store *s);
/* Whether the store answers a trivial query within seconds (/readyz): a
 * store held that long by other work, or unreachable, does not. The
 * database's words go to err without its path or URI. */
enum pm_status store_ping(struct store *s, double seconds, struct pm_error *err);

/* Stores ds packed (dataset_pack) with its summary JSON text, in chunks
 * of at most STORE_CHUNK_BYTES, all in one transaction: a 10M-record
 * table is a few hundred megabytes, where the database takes at most
 * 1 GB a value. PM_ERR_CONFLICT when id exists. */
#define STORE_CHUNK_BYTES ((size_t)16 << 20)
enum pm_status store_dataset_put(struct store *s, const char *id, const char *tenant,
				 const char *summary, const struct dataset *ds,
				 struct pm_error *err);
/* The chunks' size from now on (tests: many chunks of a small dataset). */
void store_chunk_limit(struct store *s, size_t bytes);
/* A dataset as its JSON text body, the form of schema versions up to 4
 * (which still reads: store_dataset_parsed); the service stores with
 * store_dataset_put. */
enum pm_status store_dataset_insert(struct store *s, const char *id, const char *tenant,
				    const char *summary, const char *body, struct pm_error *err);
/* with_body: also load the (large) body: the JSON text of a dataset
 * stored by store_dataset_insert, "" for a packed one. */
enum pm_status store_dataset_get(struct store *s, const char *id, const char *tenant, int with_body,
				 struct store_row *out, struct pm_error *err);
/*
 * The parsed dataset id of tenant (store_cache.c): parsed at the first
 * call and kept while it fits in the cache, as datasets never change once
 * stored; every call still checks that the tenant has it
 * (PM_ERR_NOT_FOUND). PM_ERR_INTERNAL when what is stored does not read
 * back. *out is borrowed and read-only until the caller hands it back
 * with store_dataset_release (NULL: no-op).
 */
enum pm_status store_dataset_parsed(struct store *s, const char *id, const char *tenant,
				    const struct dataset **out, struct pm_error *err);
void store_dataset_release(struct store *s, const struct dataset *ds);
/* The cache's bound, bytes of parsed datasets (about: a packed one is
 * counted by its arrays, one stored as text by its text's length;
 * default STORE_CACHE_BYTES; 0: every call parses). */
#define STORE_CACHE_BYTES ((size_t)1 << 30)
void store_cache_limit(struct store *s, size_t bytes);
struct store_cache_stats {
	uint64_t hits, misses; /* lookups since the store opened */
	size_t bytes, entries; /* held now */
	double load_seconds;   /* spent reading datasets from the store on misses */
};
void store_cache_stats(struct store *s, struct store_cache_stats *out);
/*
 * The queue in the store, shared by every node (store_jobs.c). A node
 * claims a queued analysis (sweeps: a sweep) round robin by tenant: the
 * oldest job of the tenant whose last claim is oldest (or who never had
 * one), so that one tenant's many jobs do not hold the others back; it
 * moves it to running with an attempt counted, its name as owner and a lease of
 * lease_ms; with_crashed 0 leaves jobs that crashed a node before (they
 * run alone). *found 0 when none is queued.
 */
struct store_claim {
	char id[64];
	int attempt; /* the attempts column after the claim */
	int crashes; /* lease expiries (node deaths) before this claim */
};
enum pm_status store_job_claim(struct store *s, int sweeps, const char *owner, int64_t lease_ms,
			       int with_crashed, struct store_claim *out, int *found,
			       struct pm_error *err);
/* Renews the lease of a job this attempt runs and stores where it is
 * (progress JSON text, what every node answers); *owned 0 when it no
 * longer runs it (cancelled, deleted, or taken over after its lease ran
 * out). */
enum pm_status store_job_heartbeat(struct store *s, const char *id, const char *owner, int attempt,
				   int64_t lease_ms, const char *progress, int *owned,
				   struct pm_error *err);
/* The end of an attempt: the job moves to `to` (succeeded with text as
 * its result or points, failed with text as its problem, cancelled, or
 * queued again) only if the attempt still owns it; PM_ERR_CONFLICT if not
 * (its outcome is dropped). */
enum pm_status store_job_finish(struct store *s, const char *id, const char *owner, int attempt,
				const char *to, const char *text, struct pm_error *err);
/* Running jobs whose lease ran out (all: every running one, for a node
 * that alone uses its store and just started) go back to queued with a
 * crash counted, or end failed with problem at max_crashes. */
struct store_reaped {
	size_t requeued, failed, failed_analyses;
};
enum pm_status store_job_reap(struct store *s, int max_crashes, const char *problem, int all,
			      struct store_reaped *out, struct pm_error *err);
/* Analyses and sweeps queued, in the whole store. */
enum pm_status store_job_queued(struct store *s, int64_t *n, struct pm_error *err);
/* Per-tenant limits the store enforces as it writes (store_tenants.c);
 * 0: none (the default). Over queued, inserting an analysis or sweep is
 * PM_ERR_BUSY with field "queue_per_tenant"; over datasets or bytes
 * (what the tenant's datasets take: summaries and packed chunks),
 * storing a dataset is PM_ERR_TOO_LARGE with field "tenant_max_datasets"
 * or "tenant_max_bytes". */
struct store_limits {
	size_t queued, datasets;
	uint64_t bytes;
};
void store_set_limits(struct store *s, const struct store_limits *l);
/* The secret key that seals list cursors (http_cursor.c): random, made
 * at the store's first start and the same on every node sharing it.
 * Owned by s (STORE_KEY_BYTES bytes). */
#define STORE_KEY_BYTES 32
const unsigned char *store_cursor_key(const struct store *s);
/* Whether other nodes may share the store (PostgreSQL; SQLite's data
 * directory is one process's). */
int store_shared(struct store *s);
/* Wakes the other nodes' idle workers (PostgreSQL NOTIFY; a no-op on
 * SQLite, and on failure: they poll). */
void store_notify(struct store *s);
/* What store_notify sends, heard on a connection of its own (*out NULL on
 * SQLite); wait blocks up to seconds, 1 when a notification came (a
 * sleep of that long when there is nothing to listen to). Close with
 * store_listen_close (NULL: no-op). */
struct store_listener;
enum pm_status store_listen(struct store *s, struct store_listener **out, struct pm_error *err);
int store_listen_wait(struct store_listener *l, double seconds);
void store_listen_close(struct store_listener *l);
/* Rows with seq > after, oldest first, at most limit; *rows caller frees
 * with store_rows_free. Bodies are not loaded. */
enum pm_status store_dataset_list(struct store *s, const char *tenant, int64_t after, size_t limit,
				  struct store_row **rows, size_t *n, struct pm_error *err);
/* Deletes the dataset and all its analyses, in one transaction. */
enum pm_status store_dataset_delete(struct store *s, const char *id, const char *tenant,
				    struct pm_error *err);

/* A new analysis, status "queued". PM_ERR_NOT_FOUND if the dataset is not
 * the tenant's. */
enum pm_status store_analysis_insert(struct store *s, const char *id, const char *tenant,
				     const char *dataset_id, const char *request,
				     struct pm_error *err);
/* tenant NULL: any tenant (for the workers). */
enum pm_status store_analysis_get(struct store *s, const char *id, const char *tenant,
				  struct store_row *out, struct pm_error *err);
enum pm_status store_analysis_list(struct store *s, const char *dataset_id, const char *tenant,
				   int64_t after, size_t limit, struct store_row **rows, size_t *n,
				   struct pm_error *err);
/* The same for a dataset's sweeps, without their points (result NULL). */
enum pm_status store_sweep_list(struct store *s, const char *dataset_id, const char *tenant,
				int64_t after, size_t limit, struct store_row **rows, size_t *n,
				struct pm_error *err);
/*
 * Moves an analysis from one of the states in `from` (a '|'-separated
 * list, e.g. "queued|running") to `to`, storing text (result JSON for
 * succeeded, problem JSON for failed, NULL otherwise) and counting an
 * attempt when `to` is "running". PM_ERR_CONFLICT when its state is not in
 * `from` (e.g. cancelled meanwhile), PM_ERR_NOT_FOUND when it is gone.
 */
enum pm_status store_analysis_transition(struct store *s, const char *id, const char *from,
					 const char *to, const char *text, struct pm_error *err);
enum pm_status store_analysis_delete(struct store *s, const char *id, const char *tenant,
				     struct pm_error *err);
/* Ids of analyses queued or running (oldest first): to run again after a
 * restart. *ids and each string caller frees (free()). */
enum pm_status store_analysis_unfinished(struct store *s, char ***ids, size_t *n,
					 struct pm_error *err);
/*
 * An analysis found "running" when the service starts: the service died
 * running it (crash, kill -9, power cut). Counts the crash (*crashes: the
 * count now) and moves it, in one transaction, to "queued" or, at
 * max_crashes, to "failed" with the problem JSON text. PM_ERR_CONFLICT
 * when it is not running.
 */
enum pm_status store_analysis_interrupted(struct store *s, const char *id, int max_crashes,
					  const char *problem, int *crashes, struct pm_error *err);
/* Counts of analyses by status, for /metrics. */
enum pm_status store_analysis_counts(struct store *s, int64_t counts[5], struct pm_error *err);
/* The same for the sweeps. */
enum pm_status store_sweep_counts(struct store *s, int64_t counts[5], struct pm_error *err);

/* ---- store_results.c ---------------------------------------------------- */

/*
 * An analysis's request and result are stored in chunks of
 * STORE_RESULT_CHUNK bytes, with their lengths and the result's tag
 * (store_text_tag of the text) and summary on the row, so that a GET
 * streams them, a 304 reads the row alone and a summary never reads the
 * chunks. store_analysis_get still gives both whole.
 */
#define STORE_RESULT_CHUNK ((size_t)1 << 20)
#define STORE_TAG_SIZE	   17 /* 16 hex digits and the NUL */
enum store_part { STORE_REQUEST = 0, STORE_RESULT = 1 };
/* The tag of a text: its FNV-1a hash (pm_hash) in hex. */
void store_text_tag(const char *text, size_t len, char out[STORE_TAG_SIZE]);
/* The end of an attempt that succeeded: store_job_finish to "succeeded"
 * with the result text[0 .. len) in chunks and summary (JSON text; may be
 * NULL) on the row. PM_ERR_CONFLICT when the attempt no longer owns it. */
enum pm_status store_analysis_succeed(struct store *s, const char *id, const char *owner,
				      int attempt, const char *text, size_t len,
				      const char *summary, struct pm_error *err);
/* What the row says of its texts (store_analysis_head). */
struct store_result {
	int64_t request_len;	  /* bytes of the request in chunks; -1: none */
	int64_t len;		  /* bytes of the result in chunks; -1: none */
	char tag[STORE_TAG_SIZE]; /* the result's; "" without */
	char *summary;		  /* JSON text, owned; NULL without */
	/* with store_analysis_head's first: chunk 0 of the request and of
	 * the result (owned, NUL-terminated; NULL without), first_len bytes */
	char *first[2];
	size_t first_len[2];
	/* a text is in the row (stored before schema 6): read the analysis
	 * whole with store_analysis_get */
	int legacy;
};
void store_result_finish(struct store_result *m);
/* The analysis without its request and result (row's request and result
 * NULL; both the caller's, store_row_finish and store_result_finish),
 * and what it says of them; first: with the first chunk of each text in
 * the same query (all of a small analysis). */
enum pm_status store_analysis_head(struct store *s, const char *id, const char *tenant, int first,
				   struct store_row *row, struct store_result *meta,
				   struct pm_error *err);
/* Chunk seq (from 0) of an analysis's request or result: *out
 * NUL-terminated, the caller's; *len its bytes. PM_ERR_NOT_FOUND past the
 * last (or when the analysis is gone). */
enum pm_status store_text_chunk(struct store *s, const char *id, enum store_part part, int64_t seq,
				char **out, size_t *len, struct pm_error *err);
/* The whole text of len bytes (from store_analysis_head), chunk by chunk,
 * into *out (caller frees). */
enum pm_status store_text_read(struct store *s, const char *id, enum store_part part, int64_t len,
			       char **out, struct pm_error *err);

/* ---- store_sweeps.c ----------------------------------------------------- */

/*
 * Sweeps (SPEC 4.2) stored as analyses are, with the same states and
 * calls (store_analysis_*). A sweep's row has its request (the sweep
 * request JSON text), its points so far in `result` (a JSON array in the
 * answer's order, null where a point is not solved yet; NULL before the
 * first) and its problem once failed. A dataset's sweeps go with it.
 */
enum pm_status store_sweep_insert(struct store *s, const char *id, const char *tenant,
				  const char *dataset_id, const char *request,
				  struct pm_error *err);
enum pm_status store_sweep_get(struct store *s, const char *id, const char *tenant,
			       struct store_row *out, struct pm_error *err);
/* As store_analysis_transition; moving to "running" clears the points
 * (a run starts over), "succeeded" stores text as the points. */
enum pm_status store_sweep_transition(struct store *s, const char *id, const char *from,
				      const char *to, const char *text, struct pm_error *err);
/* The points so far of a running sweep, written by the attempt (of
 * store_job_claim) that owns it; PM_ERR_CONFLICT when it is not running as
 * that attempt (cancelled, deleted, taken over after its lease ran out). */
enum pm_status store_sweep_points(struct store *s, const char *id, const char *owner, int attempt,
				  const char *points, struct pm_error *err);
enum pm_status store_sweep_delete(struct store *s, const char *id, const char *tenant,
				  struct pm_error *err);
/* Ids of sweeps queued or running, oldest first: every one (dataset_id
 * NULL, after a restart) or the tenant's of one dataset. As
 * store_analysis_unfinished. */
enum pm_status store_sweep_unfinished(struct store *s, const char *dataset_id, const char *tenant,
				      char ***ids, size_t *n, struct pm_error *err);
enum pm_status store_sweep_interrupted(struct store *s, const char *id, int max_crashes,
				       const char *problem, int *crashes, struct pm_error *err);

/* ---- isolate.c ---------------------------------------------------------- */

/*
 * A solve run in a child process, so that a crash, an abort or running out
 * of memory in it ends that solve alone (isolate.c says how). The body
 * runs in the child on memory the parent gave it (a parsed dataset, a
 * request), reporting through the child handle; it must not touch the
 * store or anything another thread of the parent may lock.
 */
struct isolate_child;
/* The body: *out is its result (new reference) when it returns PM_OK. */
typedef enum pm_status (*isolate_body)(void *arg, struct isolate_child *c, json_t **out,
				       struct pm_error *err);

struct isolate_options {
	/* bytes of data the child may add to what it inherits (RLIMIT_DATA;
	 * 0: no limit; not enforced under AddressSanitizer) */
	size_t memory;
	/* seconds after which the child is killed (0: none): a backstop
	 * above the solver's own time limit */
	double deadline;
	/* In the parent, each may be NULL: the child's progress and sweep
	 * points (JSON text of n bytes) as they come, and a cancel flag
	 * polled every 20 ms; nonzero from any of them kills the child
	 * (PM_ERR_CANCELLED). */
	int (*progress)(void *ctx, const struct solver_progress *p);
	int (*point)(void *ctx, size_t at, const char *json, size_t n);
	int (*cancelled)(void *ctx);
	void *ctx;
	/* top-level keys (NULL-terminated) the answer's summary leaves out;
	 * NULL: no summary */
	const char *const *summary_drop;
	/* tests only: the child raises this signal before the body runs */
	int test_signal;
};

/* What a body answered, as compact JSON text with exact reals. */
struct isolate_answer {
	char *text; /* the result (NUL-terminated), len bytes */
	size_t len;
	char *summary;	/* the result without summary_drop's keys, or NULL */
	double seconds; /* its top-level "seconds" (0 without) */
};
/* Frees what a holds; NULL is a no-op. */
void isolate_answer_finish(struct isolate_answer *a);

/*
 * Runs body(arg) in a child process. PM_OK: *out is its answer (the
 * caller's: isolate_answer_finish).
 * Otherwise err holds the body's own error, or why the child died: the
 * signal (PM_ERR_INTERNAL), the deadline (PM_ERR_INTERNAL), the memory
 * limit (PM_ERR_NOMEM, naming it); PM_ERR_CANCELLED when a callback asked;
 * PM_ERR_BUSY when no process could be made.
 */
enum pm_status isolate_run(isolate_body body, void *arg, const struct isolate_options *o,
			   struct isolate_answer *out, struct pm_error *err);
/* In the child: a solver progress callback (solver_options.progress with
 * the child as its ctx), relaying each change of phase or iterations. */
int isolate_progress(void *ctx, const struct solver_progress *p);
/* In the child: a sweep point solved (index at); nonzero when the parent
 * is gone. */
int isolate_point(struct isolate_child *c, size_t at, const json_t *point);
/*
 * A worker process kept across jobs, so that its heap is warm after the
 * first (a child forked for one solve pays a page fault for every page it
 * first writes). Jobs are bytes: serve runs in the worker on each, with
 * state (its own between jobs, as it was at the fork), and answers as an
 * isolate_body does. isolate_worker_run forks the worker when it has none
 * (a first job, or after one that ended it: a crash, the memory limit, a
 * cancel, the deadline) and answers as isolate_run; o's summary_drop must
 * point to static storage. isolate_worker_generation changes with each
 * fork: what a caller sent an earlier worker is gone. Caller frees with
 * isolate_worker_destroy (NULL: no-op), which ends the process.
 */
struct isolate_worker;
typedef enum pm_status (*isolate_serve)(void *state, const char *job, size_t len,
					struct isolate_child *c, json_t **out,
					struct pm_error *err);
enum pm_status isolate_worker_create(isolate_serve serve, void *state, size_t memory,
				     struct isolate_worker **out, struct pm_error *err);
enum pm_status isolate_worker_run(struct isolate_worker *w, const void *job, size_t len,
				  const struct isolate_options *o, struct isolate_answer *out,
				  struct pm_error *err);
uint64_t isolate_worker_generation(const struct isolate_worker *w);
void isolate_worker_destroy(struct isolate_worker *w);
/* Whether this build forks (not under AddressSanitizer: isolate.c says
 * why; a sanitizer build runs bodies in the calling thread). */
int isolate_forks(void);
/* Whether isolate_options.memory is enforced in this build (not under
 * AddressSanitizer, whose shadow memory counts as data). */
int isolate_memory_limited(void);
/* The default memory of a worker: three quarters of the machine's memory
 * shared among workers, at least 1 GiB. */
size_t isolate_default_memory(size_t workers);

/* ---- jobs_work.c -------------------------------------------------------- */

/* What a job's kept worker process (isolate_worker) runs: an analysis's
 * pipeline or a sweep, on a job's bytes (jobs_work_make): the packed
 * dataset, left out when the worker holds it (ds NULL), and the stored
 * request's text, with the service's time limit and the tests' stall.
 * *out (len bytes) the caller's. */
enum jobs_kind { JOBS_ANALYSIS = 0, JOBS_SWEEP = 1 };
/* What ?view=summary leaves out of a result (SPEC section 6), NULL-ended:
 * the summary a worker stores beside it, and one made of an old result. */
extern const char *const jobs_summary_drop[];
/* What a worker holds between jobs (serve's state): the last dataset
 * sent. In a forked worker its own copy; finish frees it (NULL: no-op). */
struct jobs_work_held {
	char id[64];
	struct dataset *ds;
};
void jobs_work_held_finish(struct jobs_work_held *h);
enum pm_status jobs_work_make(enum jobs_kind kind, const char *dataset_id, const struct dataset *ds,
			      const char *request, double time_limit, double stall, char **out,
			      size_t *len, struct pm_error *err);
/* The isolate_serve of those jobs, in the worker (state: its struct
 * jobs_work_held): an analysis's result document, or a sweep's points
 * (each sent up as it is solved). */
enum pm_status jobs_work_serve(void *state, const char *job, size_t len, struct isolate_child *c,
			       json_t **out, struct pm_error *err);

/* ---- jobs.c ------------------------------------------------------------- */

/*
 * The analysis worker pool. Analyses run on worker threads, never on HTTP
 * threads; the queue is bounded. A worker loads the analysis and its
 * dataset from the store, runs pipeline_run_dataset with a progress
 * callback, and records the result or the problem. Sweeps (ids "sw_")
 * share the queue, its bound, the workers and every rule below: a
 * worker runs sweep_run, storing each point as it is solved
 * (store_sweep_points); the time limit is each point's.
 */
struct jobs;

struct jobs_progress {
	struct solver_progress now; /* the last report of its solve */
	double started;		    /* pipeline_now() when it started */
};

struct jobs_stats {
	size_t workers, queued, running, queue_capacity;
	uint64_t succeeded, failed, cancelled;
	uint64_t solves;	    /* finished solves (succeeded) */
	double solve_seconds_total; /* sum of their "seconds" */
	/* this node's claims, of which takeovers (a job whose earlier
	 * attempt's lease ran out), and the expired leases it reaped */
	uint64_t claims, takeovers, expiries;
	/* outcomes refused because the attempt no longer owned its job */
	uint64_t dropped;
};

/* Seconds a claim's lease lasts unless renewed (jobs_options.lease), how
 * often it is renewed with the job's progress (what a poll of any node
 * shows), and how often an idle worker looks at the queue (another
 * node's submit, when no notification came). */
#define JOBS_LEASE     30.0
#define JOBS_HEARTBEAT 1.0
#define JOBS_POLL      1.0

/* The pool's settings. */
struct jobs_options {
	size_t workers, queue_capacity;
	/* starts of an analysis that the service did not survive before it
	 * ends failed (a poison job); at least 1 */
	int max_attempts;
	/* every solve's default and maximum time limit, seconds (0: none) */
	double time_limit;
	/* tests only: solver_options.stall of every solve */
	double stall;
	/* bytes each job's worker process may add (isolate_options.memory;
	 * 0: no limit) */
	size_t worker_memory;
	/* tests only: a job on a dataset named test_crash has its worker
	 * process raise test_signal before it solves */
	const char *test_crash;
	int test_signal;
	/* seconds: a claim's lease (default JOBS_LEASE), its renewal
	 * (JOBS_HEARTBEAT), an idle worker's look at the queue (JOBS_POLL) */
	double lease, heartbeat, poll;
};

/*
 * Starts the workers. Analyses left queued or running in the store are
 * queued again first; one found running (the service died running it)
 * counts a crash, ends failed at max_attempts crashes, and otherwise,
 * like every analysis with a crash to its name, runs alone: while it
 * runs no other analysis does, so that a crash is blamed on it alone.
 * Caller frees with jobs_destroy.
 */
enum pm_status jobs_create(struct store *s, const struct jobs_options *o, struct jobs **out,
			   struct pm_error *err);
/* Graceful stop: no new work, running analyses are cancelled and put back
 * to "queued" in the store (they run again after a restart), threads
 * joined. */
void jobs_destroy(struct jobs *j);
/* Queues an analysis already inserted as "queued". PM_ERR_BUSY when full. */
enum pm_status jobs_submit(struct jobs *j, const char *analysis_id, struct pm_error *err);
/* Progress of a running analysis: 1 and *out filled, or 0. */
int jobs_progress(struct jobs *j, const char *analysis_id, struct jobs_progress *out);
/* Cancels a queued or running analysis: "cancelled" in the store (the one
 * place that counts cancellations), out of the queue, and its worker
 * stops within one solver iteration. PM_ERR_CONFLICT when it has finished
 * meanwhile, PM_ERR_NOT_FOUND when it is gone. */
enum pm_status jobs_cancel(struct jobs *j, const char *analysis_id, struct pm_error *err);
void jobs_stats(struct jobs *j, struct jobs_stats *out);

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

/* Opens the store, starts the workers and the HTTP daemon. Caller stops it
 * with http_stop. */
enum pm_status http_start(const struct http_options *o, struct http_server **out,
			  struct pm_error *err);
/* The port actually bound (useful with port 0). */
unsigned http_port(const struct http_server *h);
/* Reads the token file again (SIGHUP): the new tokens apply from the next
 * request on. A file that cannot be read or is refused leaves the tokens
 * as they were (err says why). Without a token file there is nothing to
 * read: PM_OK. */
enum pm_status http_reload(struct http_server *h, struct pm_error *err);
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
