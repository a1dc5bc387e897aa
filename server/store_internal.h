/*
 * Private to store.c, store_datasets.c, store_sweeps.c and store_jobs.c: the connection, its
 * statements and the code analyses and sweeps share (the two tables have the same columns and
 * states; a sweep's points sit where an analysis's result does). Not part of the public API
 * (server.h).
 */
#ifndef PMAXENT_STORE_INTERNAL_H
#define PMAXENT_STORE_INTERNAL_H

#include <pthread.h>

#include "db.h"
#include "server.h"
#include "store.h"

/* The sweeps table (schema version 3), SEQ the key's type in the
 * dialect. points: the JSON array of the points so far, in the answer's
 * order, null where not solved yet. */
#define STORE_SWEEPS_SCHEMA(SEQ)                                                                   \
	"CREATE TABLE IF NOT EXISTS sweeps("                                                       \
	" seq " SEQ ", id TEXT UNIQUE NOT NULL,"                                                   \
	" tenant TEXT NOT NULL,"                                                                   \
	" dataset_id TEXT NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,"                     \
	" status TEXT NOT NULL CHECK(status IN"                                                    \
	" ('queued','running','succeeded','failed','cancelled')),"                                 \
	" request TEXT, points TEXT, problem TEXT, attempts INTEGER NOT NULL DEFAULT 0,"           \
	" created INTEGER NOT NULL, updated INTEGER NOT NULL,"                                     \
	" crashes INTEGER NOT NULL DEFAULT 0);"                                                    \
	"CREATE INDEX IF NOT EXISTS sweeps_tenant ON sweeps(tenant, seq);"                         \
	"CREATE INDEX IF NOT EXISTS sweeps_dataset ON sweeps(dataset_id, seq);"                    \
	"CREATE INDEX IF NOT EXISTS sweeps_status ON sweeps(status, seq);"

enum query {
	Q_AN_INSERT,
	Q_AN_GET,
	Q_AN_LIST,
	Q_AN_MOVE,
	Q_AN_STATUS,
	Q_AN_DELETE,
	Q_AN_UNFINISHED,
	Q_AN_COUNTS,
	Q_AN_CRASHES,
	Q_AN_INTERRUPT,
	/* store_datasets.c (store_dataset_sql) */
	Q_DS_INSERT,
	Q_DS_GET,
	Q_DS_LIST,
	Q_DS_EXISTS,
	Q_DS_DELETE,
	Q_DS_CHUNK_PUT,
	Q_DS_CHUNK_GET,
	/* store_sweeps.c (store_sweep_sql) */
	Q_SW_INSERT,
	Q_SW_GET,
	Q_SW_MOVE,
	Q_SW_STATUS,
	Q_SW_DELETE,
	Q_SW_UNFINISHED,
	Q_SW_CRASHES,
	Q_SW_INTERRUPT,
	Q_SW_POINTS,
	Q_SW_LIST,
	Q_SW_COUNTS,
	/* store_jobs.c (store_jobs_sql): the queue many nodes share */
	Q_AN_CLAIM,
	Q_SW_CLAIM,
	Q_AN_BEAT,
	Q_SW_BEAT,
	Q_AN_FINISH,
	Q_SW_FINISH,
	Q_AN_REAP,
	Q_SW_REAP,
	Q_QUEUED,
	/* store_tenants.c (store_tenant_sql): turns, limits, the cursor key */
	Q_AN_TURN,
	Q_SW_TURN,
	Q_TN_LOCK,
	Q_TN_QUEUED,
	Q_TN_USAGE,
	Q_SECRET_PUT,
	Q_SECRET_GET,
	/* store_results.c (store_result_sql): results in chunks */
	Q_RS_SUCCEED,
	Q_RS_REQUEST_LEN,
	Q_RS_CHUNK_PUT,
	Q_RS_CHUNK_GET,
	Q_RS_HEAD,
	Q_RS_HEAD_FIRST,
	Q_COUNT
};

struct store_cache;

struct store {
	pthread_mutex_t lock;
	struct store_cache *cache; /* parsed datasets (store_cache.c) */
	int lock_fd;		   /* SQLite: DIR/pmaxent.lock, flock()ed: one server per store */
	struct db *db;
	struct db_stmt *stmt[Q_COUNT]; /* prepared on first use */
	char *path;
	size_t chunk_bytes;	    /* a packed dataset's chunks, at most (store_datasets.c) */
	struct store_limits limits; /* per tenant (store_tenants.c) */
	unsigned char cursor_key[STORE_KEY_BYTES]; /* store_cursor_key */
};

/* The parsed datasets' cache of at most limit bytes (store_cache.c);
 * NULL when out of memory. Free with store_cache_destroy (NULL: no-op). */
struct store_cache *store_cache_create(size_t limit);
void store_cache_destroy(struct store_cache *c);
/* id was deleted: its entry goes (at its last release if in use). */
void store_cache_forget(struct store_cache *c, const char *id);
/* Sets the limit; what is over it goes as entries are released. */
void store_cache_set_limit(struct store_cache *c, size_t limit);

/* The SQL of Q_DS_INSERT .. Q_DS_CHUNK_GET (store_datasets.c), and
 * each one's highest ?N. */
extern const char *const store_dataset_sql[Q_SW_INSERT - Q_DS_INSERT];
extern const int store_dataset_params[Q_SW_INSERT - Q_DS_INSERT];
/* The SQL of Q_SW_INSERT .. Q_SW_COUNTS (store_sweeps.c), and each
 * one's highest ?N. */
extern const char *const store_sweep_sql[Q_AN_CLAIM - Q_SW_INSERT];
extern const int store_sweep_params[Q_AN_CLAIM - Q_SW_INSERT];
/* The same of Q_AN_CLAIM .. Q_QUEUED (store_jobs.c). */
extern const char *const store_jobs_sql[Q_AN_TURN - Q_AN_CLAIM];
extern const int store_jobs_params[Q_AN_TURN - Q_AN_CLAIM];
/* The same of Q_AN_TURN .. Q_SECRET_GET (store_tenants.c). */
extern const char *const store_tenant_sql[Q_RS_SUCCEED - Q_AN_TURN];
extern const int store_tenant_params[Q_RS_SUCCEED - Q_AN_TURN];
/* The same of Q_RS_SUCCEED .. Q_RS_HEAD_FIRST (store_results.c). */
extern const char *const store_result_sql[Q_COUNT - Q_RS_SUCCEED];
extern const int store_result_params[Q_COUNT - Q_RS_SUCCEED];
/* The cached statement of q (store.c); bind, step (store_step), then
 * store_release. */
enum pm_status store_prep(struct store *s, enum query q, struct db_stmt **st, struct pm_error *err);
void store_release(struct store *s, struct db_stmt *st);

/* The statements of one table of jobs (analyses, sweeps). */
struct store_jobs {
	enum query insert, get, move, status, del, unfinished, crashes, interrupt;
	const char *what; /* in messages: "analysis", "sweep" */
};

/* The store_analysis_* calls of server.h on the table t. */
enum pm_status store_job_insert(struct store *s, const struct store_jobs *t, const char *id,
				const char *tenant, const char *dataset_id, const char *request,
				struct pm_error *err);
enum pm_status store_job_get(struct store *s, const struct store_jobs *t, const char *id,
			     const char *tenant, struct store_row *out, struct pm_error *err);
enum pm_status store_job_transition(struct store *s, const struct store_jobs *t, const char *id,
				    const char *from, const char *to, const char *text,
				    struct pm_error *err);
enum pm_status store_job_delete(struct store *s, const struct store_jobs *t, const char *id,
				const char *tenant, struct pm_error *err);
/* dataset_id non-NULL: only that dataset's of tenant (where t's query
 * takes them as ?1 and ?2). */
enum pm_status store_job_unfinished(struct store *s, const struct store_jobs *t,
				    const char *dataset_id, const char *tenant, char ***ids,
				    size_t *n, struct pm_error *err);
enum pm_status store_job_interrupted(struct store *s, const struct store_jobs *t, const char *id,
				     int max_crashes, const char *problem, int *crashes,
				     struct pm_error *err);

/* Reads one result row into a store_row; 0 or -1 out of memory. */
typedef int (*store_row_reader)(struct store *s, struct db_stmt *st, struct store_row *r);
/* An analysis row of Q_AN_GET, Q_AN_LIST or Q_RS_HEAD (store.c). */
int store_read_analysis(struct store *s, struct db_stmt *st, struct store_row *r);
/* An analysis's request (part 0) in chunks under id and its length on
 * the row, in the caller's write transaction (store_results.c). */
enum pm_status store_request_put(struct store *s, const char *id, const char *text,
				 struct pm_error *err);
/* The request and result of row (an analysis from Q_AN_GET) read from
 * their chunks where the row has none (stored since schema 6). */
enum pm_status store_texts_load(struct store *s, struct store_row *row, struct pm_error *err);
/* A dataset row of Q_DS_GET or Q_DS_LIST (store_datasets.c). */
int store_read_dataset(struct store *s, struct db_stmt *st, struct store_row *r);
/* Text column i copied into *dst (NULL stays NULL); -1 out of memory. */
int store_col_str(struct store *s, struct db_stmt *st, int i, char **dst);
/* One dataset (Q_DS_GET) or analysis (Q_AN_GET, ...) by id; tenant NULL
 * matches any; PM_ERR_NOT_FOUND names what. out is the caller's. */
enum pm_status store_get_row(struct store *s, enum query q, const char *what, const char *id,
			     const char *tenant, int with_body, struct store_row *out,
			     struct pm_error *err);
/* A page of datasets (Q_DS_LIST) or of a dataset's analyses or sweeps
 * (rows the caller's, store_rows_free). */
enum pm_status store_list_rows(struct store *s, enum query q, const char *dataset_id,
			       const char *tenant, int64_t after, size_t limit,
			       struct store_row **rows, size_t *n, struct pm_error *err);
/* Deletes one row by id and tenant (PM_ERR_NOT_FOUND when none). */
enum pm_status store_delete_row(struct store *s, enum query q, const char *what, const char *id,
				const char *tenant, struct pm_error *err);
/* The dataset id of tenant read from the store (store_datasets.c): its
 * packed chunks, or the JSON text of a dataset stored before schema
 * version 5. *out the caller's (dataset_destroy); *bytes about what it
 * takes in memory, for the cache. PM_ERR_NOT_FOUND, or PM_ERR_INTERNAL
 * when what is stored does not read back. */
enum pm_status store_dataset_load(struct store *s, const char *id, const char *tenant,
				  struct dataset **out, size_t *bytes, struct pm_error *err);

/* Within the caller's write transaction (store_tenants.c), so that the
 * check and the write are one: may tenant queue one more job (limit
 * queued: PM_ERR_BUSY naming queue_per_tenant), store one more dataset
 * of bytes (limits datasets and bytes: PM_ERR_TOO_LARGE naming
 * tenant_max_datasets or tenant_max_bytes)? On PostgreSQL the tenant's
 * writes take turns (an advisory lock until commit), so that two nodes
 * cannot both pass the check with one place left. */
enum pm_status store_tenant_admit_job(struct store *s, const char *tenant, struct pm_error *err);
enum pm_status store_tenant_admit_dataset(struct store *s, const char *tenant, int64_t bytes,
					  struct pm_error *err);
/* The claimed job id's tenant had its turn (in the claim's transaction):
 * the next claim prefers every other tenant with work queued. */
enum pm_status store_tenant_turn(struct store *s, int sweeps, const char *id, struct pm_error *err);
/* Reads the cursor key into s, made at the first start and shared by
 * every node of the store (after the schema is in place). */
enum pm_status store_tenant_key(struct store *s, struct pm_error *err);

/* Creates the tables on a new database and migrates an older one
 * (store_schema.c); refuses one from a newer pmaxent. */
enum pm_status store_schema(struct store *s, struct pm_error *err);
/* Ends the transaction begun on s's connection: commits when ret is
 * PM_OK, else rolls back. Returns the final status. */
enum pm_status store_tx_end(struct store *s, enum pm_status ret, struct pm_error *err);

/* Locks the store, begins a write transaction and hands out statement q
 * (*st stays NULL on failure). Pair with store_write_end, which commits
 * (ret PM_OK) or rolls back, unlocks and returns the final status. */
enum pm_status store_write_begin(struct store *s, enum query q, struct db_stmt **st,
				 struct pm_error *err);
enum pm_status store_write_end(struct store *s, struct db_stmt *st, enum pm_status ret,
			       struct pm_error *err);
/* Runs a statement that returns no rows; *changes (may be NULL): rows it
 * touched. A unique key violated is PM_ERR_CONFLICT. */
enum pm_status store_run(struct store *s, struct db_stmt *st, int *changes, struct pm_error *err);
/* Binds text the caller keeps alive while the statement runs (NULL:
 * NULL), and integers. */
void store_bind_str(struct store *s, struct db_stmt *st, int i, const char *v);
void store_bind_int(struct store *s, struct db_stmt *st, int i, int64_t v);

#endif
