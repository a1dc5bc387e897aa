/*
 * Durable storage of datasets and analyses on SQLite (see server.h).
 *
 * One connection per process, serialised by a mutex: SQLite would serialise
 * writers anyway, and a single connection keeps the prepared statements
 * cached and the error message of the last call unambiguous (it is read
 * under the same lock). Every write runs in BEGIN IMMEDIATE ... COMMIT, so
 * readers never see part of it and a crash (kill -9 included) rolls an
 * unfinished transaction back when the database is opened again.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>

#include "store_internal.h"

/* Bumped whenever the schema changes; open refuses newer databases and
 * migrates older ones (migrate). */
#define STORE_SCHEMA_VERSION 3
/* Another process holding the write lock (a second server on the same
 * directory, a backup) is waited for this long before PM_ERR_IO. */
#define STORE_BUSY_MS 5000

static const char SCHEMA[] =
    "CREATE TABLE IF NOT EXISTS datasets("
    " seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE NOT NULL,"
    " tenant TEXT NOT NULL, summary TEXT NOT NULL, body TEXT NOT NULL,"
    " created INTEGER NOT NULL, updated INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS analyses("
    " seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE NOT NULL,"
    " tenant TEXT NOT NULL,"
    " dataset_id TEXT NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,"
    " status TEXT NOT NULL CHECK(status IN"
    " ('queued','running','succeeded','failed','cancelled')),"
    " request TEXT, result TEXT, problem TEXT, attempts INTEGER NOT NULL DEFAULT 0,"
    " created INTEGER NOT NULL, updated INTEGER NOT NULL,"
    " crashes INTEGER NOT NULL DEFAULT 0);"
    "CREATE INDEX IF NOT EXISTS datasets_tenant ON datasets(tenant, seq);"
    "CREATE INDEX IF NOT EXISTS analyses_tenant ON analyses(tenant, seq);"
    "CREATE INDEX IF NOT EXISTS analyses_dataset ON analyses(dataset_id, seq);"
    /* unfinished analyses at start-up and the /metrics counts */
    "CREATE INDEX IF NOT EXISTS analyses_status ON analyses(status, seq);";

/* Status names in the order of store_analysis_counts. */
static const char *const STATUS[5] = {"queued", "running", "succeeded", "failed", "cancelled"};

static const char *const SQL[Q_SW_INSERT] = {
    [Q_DS_INSERT] = "INSERT INTO datasets(id, tenant, summary, body, created, updated)"
		    " VALUES(?1, ?2, ?3, ?4, ?5, ?5)",
    [Q_DS_GET] = "SELECT seq, id, tenant, summary, CASE WHEN ?3 THEN body END, created, updated"
		 " FROM datasets WHERE id = ?1 AND (?2 IS NULL OR tenant = ?2)",
    [Q_DS_LIST] =
	"SELECT seq, id, tenant, summary, NULL, created, updated FROM datasets"
	" WHERE tenant = ?2 AND seq > ?3 ORDER BY seq LIMIT ?4", /* ?1 unused: as Q_AN_LIST */
    [Q_DS_EXISTS] = "SELECT 1 FROM datasets WHERE id = ?1 AND tenant = ?2",
    [Q_DS_DELETE] = "DELETE FROM datasets WHERE id = ?1 AND tenant = ?2",
    /* The analysis takes its tenant from the dataset row, so the two
     * can never disagree, and the insert is a no-op for a foreign one. */
    [Q_AN_INSERT] = "INSERT INTO analyses(id, tenant, dataset_id, status, request, attempts,"
		    " created, updated) SELECT ?1, tenant, id, 'queued', ?3, 0, ?4, ?4"
		    " FROM datasets WHERE id = ?2 AND tenant = ?5",
    [Q_AN_GET] = "SELECT seq, id, tenant, dataset_id, status, request, result, problem,"
		 " attempts, created, updated, crashes FROM analyses"
		 " WHERE id = ?1 AND (?2 IS NULL OR tenant = ?2)",
    /* Results can be megabytes (the posterior), so a page of them could
     * exhaust memory: lists leave result NULL, store_analysis_get has it. */
    [Q_AN_LIST] = "SELECT seq, id, tenant, dataset_id, status, request, NULL, problem,"
		  " attempts, created, updated, crashes FROM analyses"
		  " WHERE dataset_id = ?1 AND tenant = ?2 AND seq > ?3 ORDER BY seq LIMIT ?4",
    /* result is set only by succeeded and problem only by failed, so
     * they are non-NULL exactly in those states. Unused ?5..?9 are NULL,
     * which IN never matches. */
    [Q_AN_MOVE] = "UPDATE analyses SET status = ?2, attempts = attempts + (?2 = 'running'),"
		  " result = CASE WHEN ?2 = 'succeeded' THEN ?3 END,"
		  " problem = CASE WHEN ?2 = 'failed' THEN ?3 END, updated = ?4"
		  " WHERE id = ?1 AND status IN (?5, ?6, ?7, ?8, ?9)",
    [Q_AN_STATUS] = "SELECT status FROM analyses WHERE id = ?1",
    [Q_AN_DELETE] = "DELETE FROM analyses WHERE id = ?1 AND tenant = ?2",
    [Q_AN_UNFINISHED] = "SELECT id FROM analyses WHERE status IN ('queued', 'running')"
			" ORDER BY seq",
    [Q_AN_COUNTS] = "SELECT status, count(*) FROM analyses GROUP BY status",
    [Q_AN_CRASHES] = "SELECT crashes FROM analyses WHERE id = ?1 AND status = 'running'",
    /* ?2: the state it goes to, queued or failed (with the problem ?3) */
    [Q_AN_INTERRUPT] = "UPDATE analyses SET status = ?2, crashes = crashes + 1,"
		       " problem = CASE WHEN ?2 = 'failed' THEN ?3 END, updated = ?4"
		       " WHERE id = ?1 AND status = 'running'",
    [Q_VERSION] = "PRAGMA user_version",
};

/* Reads one result row into a store_row; 0 or -1 out of memory. */
typedef int (*row_reader)(sqlite3_stmt *st, struct store_row *r);

/* ---- errors and statements ----------------------------------------------- */

/* An SQLite failure as a pm_status: IO with SQLite's own words (corrupt
 * file, full disk, locked by another process), NOMEM, or INTERNAL for a
 * constraint the caller should not have violated (NULL argument). */
static enum pm_status db_fail(struct store *s, int rc, struct pm_error *err)
{
	const char *msg = s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc);

	if ((rc & 0xff) == SQLITE_NOMEM)
		return error_set(err, PM_ERR_NOMEM, "", "out of memory in the database");
	if ((rc & 0xff) == SQLITE_CONSTRAINT)
		return error_set(err, PM_ERR_INTERNAL, "", "database %s: %s", s->path, msg);
	return error_set(err, PM_ERR_IO, "", "database %s: %s", s->path, msg);
}

/* The cached statement for q, reset and with no bindings. */
static enum pm_status prep(struct store *s, enum query q, sqlite3_stmt **st, struct pm_error *err)
{
	int rc;

	if (!s->stmt[q]) {
		rc = sqlite3_prepare_v3(s->db,
					q < Q_SW_INSERT ? SQL[q] : store_sweep_sql[q - Q_SW_INSERT],
					-1, SQLITE_PREPARE_PERSISTENT, &s->stmt[q], NULL);
		if (rc != SQLITE_OK)
			return db_fail(s, rc, err);
	}
	*st = s->stmt[q];
	return PM_OK;
}

/* Puts a statement back for the next call. A statement left un-reset
 * would hold its read snapshot and stop WAL checkpoints. */
static void release(sqlite3_stmt *st)
{
	if (!st)
		return;
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
}

/* Caller's strings outlive the statement's use: no copies. */
void store_bind_str(sqlite3_stmt *st, int i, const char *v)
{
	sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC);
}

/* Runs a statement that returns no rows; *changes: rows it touched. The
 * raw code of a failure is in *rc_out (duplicate ids), may be NULL. */
enum pm_status store_run(struct store *s, sqlite3_stmt *st, int *changes, int *rc_out,
			 struct pm_error *err)
{
	enum pm_status ret = PM_OK;
	int rc = sqlite3_step(st);

	if (rc_out)
		*rc_out = rc;
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		ret = db_fail(s, rc, err);
	else if (changes)
		*changes = sqlite3_changes(s->db);
	release(st);
	return ret;
}

static enum pm_status exec(struct store *s, const char *sql, struct pm_error *err)
{
	int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);

	return rc == SQLITE_OK ? PM_OK : db_fail(s, rc, err);
}

/* Ends the transaction begun by exec("BEGIN ..."): commit when ret is
 * PM_OK, otherwise roll back so nothing of it is visible. Returns the
 * final status. */
static enum pm_status tx_end(struct store *s, enum pm_status ret, struct pm_error *err)
{
	if (sqlite3_get_autocommit(s->db))
		return ret; /* BEGIN failed or SQLite already rolled back */
	if (ret == PM_OK)
		ret = exec(s, "COMMIT", err);
	if (ret != PM_OK && !sqlite3_get_autocommit(s->db))
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return ret;
}

/* Runs the one-row query q with ?1 = a (and ?2 = b when it has a ?2):
 * *found, and column 0 as text in buf. */
static enum pm_status lookup(struct store *s, enum query q, const char *a, const char *b,
			     int *found, char *buf, size_t size, struct pm_error *err)
{
	sqlite3_stmt *st = NULL;
	enum pm_status ret = prep(s, q, &st, err);
	const unsigned char *t;
	int rc;

	*found = 0;
	if (ret)
		return ret;
	store_bind_str(st, 1, a);
	if (sqlite3_bind_parameter_count(st) > 1)
		store_bind_str(st, 2, b);
	rc = sqlite3_step(st);
	*found = rc == SQLITE_ROW;
	if (rc == SQLITE_ROW) {
		t = sqlite3_column_text(st, 0);
		snprintf(buf, size, "%s", t ? (const char *)t : "");
	} else if (rc != SQLITE_DONE) {
		ret = db_fail(s, rc, err);
	}
	release(st);
	return ret;
}

/* Locks the store, begins a write transaction and hands out statement q
 * (*st stays NULL on failure). Pair with write_end. */
enum pm_status store_write_begin(struct store *s, enum query q, sqlite3_stmt **st,
				 struct pm_error *err)
{
	enum pm_status ret;

	*st = NULL;
	pthread_mutex_lock(&s->lock);
	ret = exec(s, "BEGIN IMMEDIATE", err);
	return ret ? ret : prep(s, q, st, err);
}

/* Commits (ret PM_OK) or rolls back, and unlocks; the final status. */
enum pm_status store_write_end(struct store *s, sqlite3_stmt *st, enum pm_status ret,
			       struct pm_error *err)
{
	release(st);
	ret = tx_end(s, ret, err);
	pthread_mutex_unlock(&s->lock);
	return ret;
}

/* ---- rows ------------------------------------------------------------------ */

/* Copies text column i (NULL stays NULL); -1 out of memory. */
static int col_str(sqlite3_stmt *st, int i, char **dst)
{
	const unsigned char *t = sqlite3_column_text(st, i);

	*dst = NULL;
	if (!t)
		return sqlite3_column_type(st, i) == SQLITE_NULL ? 0 : -1;
	*dst = strdup((const char *)t);
	return *dst ? 0 : -1;
}

static int read_dataset(sqlite3_stmt *st, struct store_row *r)
{
	memset(r, 0, sizeof *r);
	r->seq = sqlite3_column_int64(st, 0);
	r->created = sqlite3_column_int64(st, 5);
	r->updated = sqlite3_column_int64(st, 6);
	return -(col_str(st, 1, &r->id) || col_str(st, 2, &r->tenant) ||
		 col_str(st, 3, &r->summary) || col_str(st, 4, &r->body));
}

static int read_analysis(sqlite3_stmt *st, struct store_row *r)
{
	memset(r, 0, sizeof *r);
	r->seq = sqlite3_column_int64(st, 0);
	r->attempts = sqlite3_column_int(st, 8);
	r->created = sqlite3_column_int64(st, 9);
	r->updated = sqlite3_column_int64(st, 10);
	r->crashes = sqlite3_column_int(st, 11);
	return -(col_str(st, 1, &r->id) || col_str(st, 2, &r->tenant) ||
		 col_str(st, 3, &r->dataset_id) || col_str(st, 4, &r->status) ||
		 col_str(st, 5, &r->request) || col_str(st, 6, &r->result) ||
		 col_str(st, 7, &r->problem));
}

void store_row_finish(struct store_row *r)
{
	if (!r)
		return;
	free(r->id);
	free(r->tenant);
	free(r->dataset_id);
	free(r->status);
	free(r->summary);
	free(r->body);
	free(r->request);
	free(r->result);
	free(r->problem);
	memset(r, 0, sizeof *r);
}

void store_rows_free(struct store_row *rows, size_t n)
{
	if (!rows)
		return;
	for (size_t i = 0; i < n; i++)
		store_row_finish(&rows[i]);
	free(rows);
}

/* Steps a bound list statement, collecting every row. */
static enum pm_status fetch_all(struct store *s, sqlite3_stmt *st, row_reader read,
				struct store_row **rows, size_t *n, struct pm_error *err)
{
	enum pm_status ret = PM_OK;
	struct store_row *v = NULL, *nv;
	size_t len = 0, cap = 0;
	int rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (len == cap) {
			cap = cap ? 2 * cap : 16;
			nv = realloc(v, cap * sizeof *v);
			if (!nv)
				goto nomem;
			v = nv;
		}
		if (read(st, &v[len])) {
			store_row_finish(&v[len]);
			goto nomem;
		}
		len++;
	}
	if (rc != SQLITE_DONE)
		ret = db_fail(s, rc, err);
	goto out;
nomem:
	ret = error_set(err, PM_ERR_NOMEM, "", "out of memory reading rows");
out:
	release(st);
	if (ret != PM_OK) {
		store_rows_free(v, len);
		v = NULL, len = 0;
	}
	*rows = v;
	*n = len;
	return ret;
}

/* A list LIMIT: size_t may exceed what SQLite binds. */
static sqlite3_int64 limit_of(size_t limit)
{
	return limit > (size_t)INT64_MAX ? INT64_MAX : (sqlite3_int64)limit;
}

/* ---- open and close -------------------------------------------------------- */

/* The steps from each schema version to the next, in order: versions
 * are run at start, each in the transaction of schema(). */
static const char *const MIGRATIONS[STORE_SCHEMA_VERSION] = {
    /* 0 -> 2: a new database (then 2 -> 3 and on) */
    SCHEMA,
    /* 1 -> 2: how often the service died running an analysis (poison
     * jobs, jobs.c) */
    "ALTER TABLE analyses ADD COLUMN crashes INTEGER NOT NULL DEFAULT 0",
    /* 2 -> 3: sweeps (store_sweeps.c) */
    STORE_SWEEPS_SCHEMA,
};

/* Creates the tables on a new database and migrates an older one;
 * refuses one from a newer pmaxent rather than misreading it. */
static enum pm_status schema(struct store *s, struct pm_error *err)
{
	enum pm_status ret;
	char version[32] = "0", sql[64];
	int found, v;

	ret = exec(s, "BEGIN IMMEDIATE", err);
	if (!ret)
		ret = lookup(s, Q_VERSION, NULL, NULL, &found, version, sizeof version, err);
	if (ret)
		goto out;
	v = atoi(version);
	if (v > STORE_SCHEMA_VERSION) {
		ret = error_set(err, PM_ERR_IO, "",
				"database %s has schema version %s; this pmaxent knows %d", s->path,
				version, STORE_SCHEMA_VERSION);
		goto out;
	}
	if (v == STORE_SCHEMA_VERSION)
		goto out;
	ret = exec(s, MIGRATIONS[v], err); /* a new database: SCHEMA is version 2 */
	for (v = v ? v + 1 : 2; !ret && v < STORE_SCHEMA_VERSION; v++)
		ret = exec(s, MIGRATIONS[v], err);
	snprintf(sql, sizeof sql, "PRAGMA user_version = %d", STORE_SCHEMA_VERSION);
	if (!ret)
		ret = exec(s, sql, err);
out:
	return tx_end(s, ret, err);
}

/*
 * Durability: synchronous=FULL fsyncs the WAL on every commit. A 201/202
 * answer promises the dataset or analysis exists, and a recorded result is
 * the product of a long solve; with NORMAL a power loss (not a process
 * crash) could silently roll back such acknowledged commits. Writes are
 * few (uploads and state changes, not polls), so one fsync each is cheap.
 */
static enum pm_status configure(struct store *s, struct pm_error *err)
{
	enum pm_status ret;

	sqlite3_extended_result_codes(s->db, 1);
	sqlite3_busy_timeout(s->db, STORE_BUSY_MS);
	/* The first statement reads the file: a corrupt one fails here. */
	ret = exec(s, "PRAGMA journal_mode = WAL", err);
	if (!ret)
		ret = exec(s, "PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON", err);
	if (!ret)
		ret = schema(s, err);
	return ret;
}

/* The database files are the owner's alone (SQLite gives the -wal and
 * -shm files the mode of the database), also when an earlier version left
 * them readable. */
static enum pm_status private_files(struct store *s, struct pm_error *err)
{
	char path[4096 + 16];
	enum pm_status ret = datadir_private(s->path, err);

	for (int i = 0; !ret && i < 2; i++) {
		snprintf(path, sizeof path, "%s%s", s->path, i ? "-shm" : "-wal");
		if (!access(path, F_OK))
			ret = datadir_private(path, err);
	}
	return ret;
}

enum pm_status store_open(const char *dir, struct store **out, struct pm_error *err)
{
	struct store *s;
	enum pm_status ret = PM_OK;
	int rc;

	*out = NULL;
	if (!dir || !*dir)
		return error_set(err, PM_ERR_INPUT, "data_dir", "is empty; name a data directory");
	if (strlen(dir) > 4096)
		return error_set(err, PM_ERR_INPUT, "data_dir", "is longer than 4096 bytes");
	s = calloc(1, sizeof *s);
	if (!s)
		return error_set(err, PM_ERR_NOMEM, "", "out of memory opening the store");
	pthread_mutex_init(&s->lock, NULL);
	s->lock_fd = -1;
	s->path = malloc(strlen(dir) + sizeof "/pmaxent.db");
	s->cache = store_cache_create(STORE_CACHE_BYTES);
	if (!s->path || !s->cache) {
		ret = error_set(err, PM_ERR_NOMEM, "", "out of memory opening the store");
		goto out;
	}
	sprintf(s->path, "%s/pmaxent.db", dir);
	if ((ret = datadir_open(dir, &s->lock_fd, err)) || (ret = private_files(s, err)))
		goto out;
	/* NOMUTEX: s->lock already serialises every use of the connection. */
	rc =
	    sqlite3_open_v2(s->path, &s->db,
			    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		ret = db_fail(s, rc, err);
		goto out;
	}
	ret = configure(s, err);
out:
	if (ret) {
		store_close(s);
		s = NULL;
	}
	*out = s;
	return ret;
}

void store_close(struct store *s)
{
	if (!s)
		return;
	for (int q = 0; q < Q_COUNT; q++)
		sqlite3_finalize(s->stmt[q]);
	/* The last connection to close checkpoints the WAL into the file. */
	sqlite3_close_v2(s->db);
	if (s->lock_fd >= 0)
		close(s->lock_fd); /* releases the flock */
	pthread_mutex_destroy(&s->lock);
	store_cache_destroy(s->cache);
	free(s->path);
	free(s);
}

/* ---- datasets -------------------------------------------------------------- */

enum pm_status store_dataset_insert(struct store *s, const char *id, const char *tenant,
				    const char *summary, const char *body, struct pm_error *err)
{
	sqlite3_stmt *st = NULL;
	enum pm_status ret;
	int rc = SQLITE_OK;

	ret = store_write_begin(s, Q_DS_INSERT, &st, err);
	if (ret)
		goto out;
	store_bind_str(st, 1, id);
	store_bind_str(st, 2, tenant);
	store_bind_str(st, 3, summary);
	store_bind_str(st, 4, body);
	sqlite3_bind_int64(st, 5, (sqlite3_int64)time(NULL));
	ret = store_run(s, st, NULL, &rc, err);
	if (rc == SQLITE_CONSTRAINT_UNIQUE)
		ret = error_set(err, PM_ERR_CONFLICT, "", "dataset \"%s\" already exists", id);
out:
	return store_write_end(s, st, ret, err);
}

/* One dataset (Q_DS_GET) or analysis (Q_AN_GET) by id; tenant NULL
 * matches any. */
static enum pm_status get_row(struct store *s, enum query q, const char *what, const char *id,
			      const char *tenant, int with_body, struct store_row *out,
			      struct pm_error *err)
{
	sqlite3_stmt *st = NULL;
	struct store_row *rows = NULL;
	enum pm_status ret;
	size_t n = 0;

	memset(out, 0, sizeof *out);
	pthread_mutex_lock(&s->lock);
	ret = prep(s, q, &st, err);
	if (ret)
		goto out;
	store_bind_str(st, 1, id);
	store_bind_str(st, 2, tenant);
	if (q == Q_DS_GET)
		sqlite3_bind_int(st, 3, with_body != 0);
	ret = fetch_all(s, st, q == Q_DS_GET ? read_dataset : read_analysis, &rows, &n, err);
	if (!ret && n == 0)
		ret = error_set(err, PM_ERR_NOT_FOUND, "", "no %s \"%s\"", what, id);
	else if (!ret)
		*out = rows[0]; /* ids are unique: one row, now the caller's */
	free(rows);
out:
	pthread_mutex_unlock(&s->lock);
	return ret;
}

enum pm_status store_dataset_get(struct store *s, const char *id, const char *tenant, int with_body,
				 struct store_row *out, struct pm_error *err)
{
	return get_row(s, Q_DS_GET, "dataset", id, tenant, with_body, out, err);
}

/* A page of datasets (Q_DS_LIST) or of a dataset's analyses (Q_AN_LIST,
 * PM_ERR_NOT_FOUND when the dataset is not the tenant's). One read
 * snapshot, so the check and the page agree while another process writes. */
static enum pm_status list_rows(struct store *s, enum query q, const char *dataset_id,
				const char *tenant, int64_t after, size_t limit,
				struct store_row **rows, size_t *n, struct pm_error *err)
{
	sqlite3_stmt *st = NULL;
	enum pm_status ret;
	char buf[8];
	int found = 1;

	*rows = NULL;
	*n = 0;
	pthread_mutex_lock(&s->lock);
	ret = exec(s, "BEGIN", err);
	if (!ret && (q == Q_AN_LIST || q == Q_SW_LIST))
		ret = lookup(s, Q_DS_EXISTS, dataset_id, tenant, &found, buf, sizeof buf, err);
	if (!ret && !found)
		ret = error_set(err, PM_ERR_NOT_FOUND, "", "no dataset \"%s\"", dataset_id);
	if (!ret)
		ret = prep(s, q, &st, err);
	if (ret)
		goto out;
	store_bind_str(st, 1, dataset_id);
	store_bind_str(st, 2, tenant);
	sqlite3_bind_int64(st, 3, after);
	sqlite3_bind_int64(st, 4, limit_of(limit));
	ret = fetch_all(s, st, q == Q_DS_LIST ? read_dataset : read_analysis, rows, n, err);
out:
	ret = tx_end(s, ret, err);
	if (ret) {
		store_rows_free(*rows, *n);
		*rows = NULL, *n = 0;
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

enum pm_status store_dataset_list(struct store *s, const char *tenant, int64_t after, size_t limit,
				  struct store_row **rows, size_t *n, struct pm_error *err)
{
	return list_rows(s, Q_DS_LIST, NULL, tenant, after, limit, rows, n, err);
}

/* Deletes one row by id and tenant (Q_DS_DELETE or Q_AN_DELETE). The
 * analyses of a dataset go with it (ON DELETE CASCADE), in the same
 * transaction. */
static enum pm_status delete_row(struct store *s, enum query q, const char *what, const char *id,
				 const char *tenant, struct pm_error *err)
{
	sqlite3_stmt *st = NULL;
	enum pm_status ret;
	int changes = 0;

	ret = store_write_begin(s, q, &st, err);
	if (ret)
		goto out;
	store_bind_str(st, 1, id);
	store_bind_str(st, 2, tenant);
	ret = store_run(s, st, &changes, NULL, err);
	if (!ret && changes == 0)
		ret = error_set(err, PM_ERR_NOT_FOUND, "", "no %s \"%s\"", what, id);
out:
	return store_write_end(s, st, ret, err);
}

enum pm_status store_dataset_delete(struct store *s, const char *id, const char *tenant,
				    struct pm_error *err)
{
	enum pm_status st = delete_row(s, Q_DS_DELETE, "dataset", id, tenant, err);

	if (!st)
		store_cache_forget(s->cache, id);
	return st;
}

/* ---- analyses -------------------------------------------------------------- */

static const struct store_jobs ANALYSES = {
    Q_AN_INSERT,     Q_AN_GET,	   Q_AN_MOVE,	   Q_AN_STATUS, Q_AN_DELETE,
    Q_AN_UNFINISHED, Q_AN_CRASHES, Q_AN_INTERRUPT, "analysis",
};

enum pm_status store_job_insert(struct store *s, const struct store_jobs *t, const char *id,
				const char *tenant, const char *dataset_id, const char *request,
				struct pm_error *err)
{
	sqlite3_stmt *st = NULL;
	enum pm_status ret;
	int rc = SQLITE_OK, changes = 0;

	ret = store_write_begin(s, t->insert, &st, err);
	if (ret)
		goto out;
	store_bind_str(st, 1, id);
	store_bind_str(st, 2, dataset_id);
	store_bind_str(st, 3, request);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)time(NULL));
	store_bind_str(st, 5, tenant);
	ret = store_run(s, st, &changes, &rc, err);
	if (rc == SQLITE_CONSTRAINT_UNIQUE)
		ret = error_set(err, PM_ERR_CONFLICT, "", "%s \"%s\" already exists", t->what, id);
	else if (!ret && changes == 0)
		ret = error_set(err, PM_ERR_NOT_FOUND, "", "no dataset \"%s\"", dataset_id);
out:
	return store_write_end(s, st, ret, err);
}

enum pm_status store_analysis_insert(struct store *s, const char *id, const char *tenant,
				     const char *dataset_id, const char *request,
				     struct pm_error *err)
{
	return store_job_insert(s, &ANALYSES, id, tenant, dataset_id, request, err);
}

enum pm_status store_job_get(struct store *s, const struct store_jobs *t, const char *id,
			     const char *tenant, struct store_row *out, struct pm_error *err)
{
	return get_row(s, t->get, t->what, id, tenant, 0, out, err);
}

enum pm_status store_analysis_get(struct store *s, const char *id, const char *tenant,
				  struct store_row *out, struct pm_error *err)
{
	return store_job_get(s, &ANALYSES, id, tenant, out, err);
}

enum pm_status store_analysis_list(struct store *s, const char *dataset_id, const char *tenant,
				   int64_t after, size_t limit, struct store_row **rows, size_t *n,
				   struct pm_error *err)
{
	return list_rows(s, Q_AN_LIST, dataset_id, tenant, after, limit, rows, n, err);
}

enum pm_status store_sweep_list(struct store *s, const char *dataset_id, const char *tenant,
				int64_t after, size_t limit, struct store_row **rows, size_t *n,
				struct pm_error *err)
{
	return list_rows(s, Q_SW_LIST, dataset_id, tenant, after, limit, rows, n, err);
}

static int status_index(const char *name, size_t len)
{
	for (int i = 0; i < 5; i++)
		if (strlen(STATUS[i]) == len && strncmp(STATUS[i], name, len) == 0)
			return i;
	return -1;
}

/* Binds `to` (?2) and the states of `from` ("queued|running") as ?5..?9.
 * Unknown names are the caller's bug: PM_ERR_INTERNAL. */
static enum pm_status bind_move(sqlite3_stmt *st, const char *from, const char *to,
				struct pm_error *err)
{
	const char *p = from;
	int k, slot = 5;

	if (!from || !*from)
		return error_set(err, PM_ERR_INTERNAL, "", "no state to move analyses from");
	if (!to || status_index(to, strlen(to)) < 0)
		return error_set(err, PM_ERR_INTERNAL, "", "unknown analysis status \"%s\"",
				 to ? to : "(null)");
	store_bind_str(st, 2, to);
	while (slot <= 9) {
		size_t len = strcspn(p, "|");

		k = status_index(p, len);
		if (k < 0)
			return error_set(err, PM_ERR_INTERNAL, "",
					 "unknown analysis status \"%.*s\"", (int)len, p);
		store_bind_str(st, slot++, STATUS[k]);
		if (!p[len])
			break;
		p += len + 1;
	}
	return PM_OK;
}

enum pm_status store_job_transition(struct store *s, const struct store_jobs *t, const char *id,
				    const char *from, const char *to, const char *text,
				    struct pm_error *err)
{
	sqlite3_stmt *st = NULL;
	enum pm_status ret;
	int changes = 0, found;
	char now[16];

	ret = store_write_begin(s, t->move, &st, err);
	if (!ret)
		ret = bind_move(st, from, to, err);
	if (ret)
		goto out;
	store_bind_str(st, 1, id);
	store_bind_str(st, 3, text);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)time(NULL));
	ret = store_run(s, st, &changes, NULL, err);
	if (ret || changes)
		goto out;
	/* the compare-and-set touched nothing: gone, or in another state */
	ret = lookup(s, t->status, id, NULL, &found, now, sizeof now, err);
	if (!ret && found)
		ret = error_set(err, PM_ERR_CONFLICT, "", "%s \"%s\" is %s, not %s", t->what, id,
				now, from);
	else if (!ret)
		ret = error_set(err, PM_ERR_NOT_FOUND, "", "no %s \"%s\"", t->what, id);
out:
	return store_write_end(s, st, ret, err);
}

enum pm_status store_analysis_transition(struct store *s, const char *id, const char *from,
					 const char *to, const char *text, struct pm_error *err)
{
	return store_job_transition(s, &ANALYSES, id, from, to, text, err);
}

enum pm_status store_job_delete(struct store *s, const struct store_jobs *t, const char *id,
				const char *tenant, struct pm_error *err)
{
	return delete_row(s, t->del, t->what, id, tenant, err);
}

enum pm_status store_analysis_delete(struct store *s, const char *id, const char *tenant,
				     struct pm_error *err)
{
	return store_job_delete(s, &ANALYSES, id, tenant, err);
}

static int read_id(sqlite3_stmt *st, struct store_row *r)
{
	memset(r, 0, sizeof *r);
	return col_str(st, 0, &r->id) || !r->id ? -1 : 0;
}

enum pm_status store_job_unfinished(struct store *s, const struct store_jobs *t,
				    const char *dataset_id, const char *tenant, char ***ids,
				    size_t *n, struct pm_error *err)
{
	sqlite3_stmt *st = NULL;
	struct store_row *rows = NULL;
	enum pm_status ret;

	*ids = NULL;
	*n = 0;
	pthread_mutex_lock(&s->lock);
	ret = prep(s, t->unfinished, &st, err);
	if (!ret && sqlite3_bind_parameter_count(st) >= 2) {
		store_bind_str(st, 1, dataset_id);
		store_bind_str(st, 2, tenant);
	}
	if (!ret)
		ret = fetch_all(s, st, read_id, &rows, n, err);
	pthread_mutex_unlock(&s->lock);
	if (ret || *n == 0)
		goto out;
	/* hand the id strings over; the rows hold nothing else */
	*ids = malloc(*n * sizeof **ids);
	if (!*ids) {
		ret = error_set(err, PM_ERR_NOMEM, "", "out of memory listing jobs");
		goto out;
	}
	for (size_t i = 0; i < *n; i++)
		(*ids)[i] = rows[i].id, rows[i].id = NULL;
out:
	store_rows_free(rows, *n);
	if (ret)
		*n = 0;
	return ret;
}

enum pm_status store_analysis_unfinished(struct store *s, char ***ids, size_t *n,
					 struct pm_error *err)
{
	return store_job_unfinished(s, &ANALYSES, NULL, NULL, ids, n, err);
}

/* Rows of a table of jobs by status (q: Q_AN_COUNTS or Q_SW_COUNTS). */
static enum pm_status job_counts(struct store *s, enum query q, int64_t counts[5],
				 struct pm_error *err)
{
	sqlite3_stmt *st = NULL;
	const unsigned char *name;
	enum pm_status ret;
	int rc, k;

	memset(counts, 0, 5 * sizeof *counts);
	pthread_mutex_lock(&s->lock);
	ret = prep(s, q, &st, err);
	if (ret)
		goto out;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		name = sqlite3_column_text(st, 0);
		k = name ? status_index((const char *)name, strlen((const char *)name)) : -1;
		if (k >= 0)
			counts[k] = sqlite3_column_int64(st, 1);
	}
	if (rc != SQLITE_DONE)
		ret = db_fail(s, rc, err);
	release(st);
out:
	pthread_mutex_unlock(&s->lock);
	return ret;
}

enum pm_status store_analysis_counts(struct store *s, int64_t counts[5], struct pm_error *err)
{
	return job_counts(s, Q_AN_COUNTS, counts, err);
}

enum pm_status store_sweep_counts(struct store *s, int64_t counts[5], struct pm_error *err)
{
	return job_counts(s, Q_SW_COUNTS, counts, err);
}

enum pm_status store_job_interrupted(struct store *s, const struct store_jobs *t, const char *id,
				     int max_crashes, const char *problem, int *crashes,
				     struct pm_error *err)
{
	sqlite3_stmt *st = NULL;
	enum pm_status ret;
	char buf[32];
	int found = 0, changes = 0;

	*crashes = 0;
	ret = store_write_begin(s, t->interrupt, &st, err);
	if (!ret)
		ret = lookup(s, t->crashes, id, NULL, &found, buf, sizeof buf, err);
	if (!ret && !found)
		ret = error_set(err, PM_ERR_CONFLICT, "", "%s \"%s\" is not running", t->what, id);
	if (ret)
		goto out;
	*crashes = atoi(buf) + 1;
	store_bind_str(st, 1, id);
	store_bind_str(st, 2, *crashes >= max_crashes ? "failed" : "queued");
	store_bind_str(st, 3, problem);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)time(NULL));
	ret = store_run(s, st, &changes, NULL, err);
out:
	return store_write_end(s, st, ret, err);
}

enum pm_status store_analysis_interrupted(struct store *s, const char *id, int max_crashes,
					  const char *problem, int *crashes, struct pm_error *err)
{
	return store_job_interrupted(s, &ANALYSES, id, max_crashes, problem, crashes, err);
}
