/*
 * store: the durable storage of the service (store*.c): datasets,
 * analyses, sweeps and their results, the queue every node shares, the
 * tenants' limits. Internal to server/ (the HTTP service and the workers
 * use it); the store's files share store_internal.h besides.
 */
#ifndef PMAXENT_STORE_H
#define PMAXENT_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "constraints.h"

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

/* ---- store_open.c ------------------------------------------------------- */

/* Opens (creating if needed) DIR/pmaxent.db. Caller frees with store_close. */
enum pm_status store_open(const char *dir, struct store **out, struct pm_error *err);
void store_close(struct store *s);
/* Whether the store answers a trivial query within seconds (/readyz): a
 * store held that long by other work, or unreachable, does not. The
 * database's words go to err without its path or URI. */
enum pm_status store_ping(struct store *s, double seconds, struct pm_error *err);

/* ---- store_datasets.c --------------------------------------------------- */

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
/* Rows with seq > after, oldest first, at most limit; *rows caller frees
 * with store_rows_free. Bodies are not loaded. */
enum pm_status store_dataset_list(struct store *s, const char *tenant, int64_t after, size_t limit,
				  struct store_row **rows, size_t *n, struct pm_error *err);
/* Deletes the dataset and all its analyses, in one transaction. */
enum pm_status store_dataset_delete(struct store *s, const char *id, const char *tenant,
				    struct pm_error *err);

/* ---- store_cache.c ------------------------------------------------------ */

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

/* ---- store_jobs.c ------------------------------------------------------- */

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

/* ---- store_tenants.c ---------------------------------------------------- */

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

#endif
