/*
 * The SQLite driver of db.h: the embedded default. One connection per
 * process; its statements are prepared once (SQLITE_PREPARE_PERSISTENT)
 * and kept until close. The schema version is SQLite's user_version.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db.h"

struct db_stmt {
	struct db_sqlite *d;
	sqlite3_stmt *st;
	struct db_stmt *next;
};

struct db_sqlite {
	struct db base;
	sqlite3 *db;
	struct db_stmt *stmts;
};

/* A failure as a pm_status, SQLite's words in err (db.h). The file's
 * path goes to the server log only: err's message may reach a client
 * (a problem document), which has no business knowing where the data
 * lives. */
static enum pm_status fail(struct db_sqlite *d, int rc, struct pm_error *err)
{
	const char *msg = d->db ? sqlite3_errmsg(d->db) : sqlite3_errstr(rc);

	if ((rc & 0xff) == SQLITE_NOMEM)
		return error_set(err, PM_ERR_NOMEM, "", "out of memory in the database");
	if (rc == SQLITE_CONSTRAINT_UNIQUE || rc == SQLITE_CONSTRAINT_PRIMARYKEY)
		return error_set(err, PM_ERR_CONFLICT, "", "the database: %s", msg);
	fprintf(stderr, "pmaxent: database %s: %s\n", d->base.where, msg);
	if ((rc & 0xff) == SQLITE_CONSTRAINT)
		return error_set(err, PM_ERR_INTERNAL, "", "the database: %s", msg);
	return error_set(err, PM_ERR_IO, "", "the database: %s", msg);
}

static enum pm_status s_exec(struct db *b, const char *sql, struct pm_error *err)
{
	struct db_sqlite *d = (struct db_sqlite *)b;
	int rc = sqlite3_exec(d->db, sql, NULL, NULL, NULL);

	return rc == SQLITE_OK ? PM_OK : fail(d, rc, err);
}

static enum pm_status s_prepare(struct db *b, const char *sql, int n_params, struct db_stmt **out,
				struct pm_error *err)
{
	struct db_sqlite *d = (struct db_sqlite *)b;
	struct db_stmt *st = calloc(1, sizeof *st);
	int rc;

	(void)n_params;
	*out = NULL;
	if (!st)
		return error_set(err, PM_ERR_NOMEM, "", "out of memory");
	rc = sqlite3_prepare_v3(d->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st->st, NULL);
	if (rc != SQLITE_OK) {
		free(st);
		return fail(d, rc, err);
	}
	st->d = d;
	st->next = d->stmts;
	d->stmts = st;
	*out = st;
	return PM_OK;
}

/* Caller's strings outlive the statement's use: no copies. */
static void s_bind_text(struct db_stmt *st, int i, const char *v)
{
	sqlite3_bind_text(st->st, i, v, -1, SQLITE_STATIC);
}

static void s_bind_int64(struct db_stmt *st, int i, int64_t v)
{
	sqlite3_bind_int64(st->st, i, (sqlite3_int64)v);
}

static void s_bind_blob(struct db_stmt *st, int i, const void *v, size_t len)
{
	sqlite3_bind_blob64(st->st, i, v, (sqlite3_uint64)len, SQLITE_STATIC);
}

static const void *s_col_blob(struct db_stmt *st, int i, size_t *len)
{
	const void *p = sqlite3_column_blob(st->st, i);

	*len = p ? (size_t)sqlite3_column_bytes(st->st, i) : 0;
	return p;
}

static void s_binary_results(struct db_stmt *st)
{
	(void)st;
}

static enum pm_status s_step(struct db_stmt *st, int *row, struct pm_error *err)
{
	int rc = sqlite3_step(st->st);

	*row = rc == SQLITE_ROW;
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? PM_OK : fail(st->d, rc, err);
}

static const char *s_col_text(struct db_stmt *st, int i)
{
	return (const char *)sqlite3_column_text(st->st, i);
}

static int64_t s_col_int64(struct db_stmt *st, int i)
{
	return sqlite3_column_int64(st->st, i);
}

static int s_changes(struct db_stmt *st)
{
	return sqlite3_changes(st->d->db);
}

static void s_reset(struct db_stmt *st)
{
	sqlite3_reset(st->st);
	sqlite3_clear_bindings(st->st);
}

/* IMMEDIATE takes the write lock at BEGIN: two writers never both read
 * and then fail to upgrade (SQLITE_BUSY mid-transaction). */
static enum pm_status s_begin(struct db *b, int write, struct pm_error *err)
{
	return s_exec(b, write ? "BEGIN IMMEDIATE" : "BEGIN", err);
}

static enum pm_status s_commit(struct db *b, struct pm_error *err)
{
	return s_exec(b, "COMMIT", err);
}

static int s_in_transaction(struct db *b)
{
	return !sqlite3_get_autocommit(((struct db_sqlite *)b)->db);
}

static void s_rollback(struct db *b)
{
	if (s_in_transaction(b))
		sqlite3_exec(((struct db_sqlite *)b)->db, "ROLLBACK", NULL, NULL, NULL);
}

static enum pm_status s_get_version(struct db *b, int *v, struct pm_error *err)
{
	struct db_sqlite *d = (struct db_sqlite *)b;
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(d->db, "PRAGMA user_version", -1, &st, NULL);

	*v = 0;
	if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		*v = sqlite3_column_int(st, 0);
		rc = SQLITE_OK;
	}
	sqlite3_finalize(st);
	return rc == SQLITE_OK ? PM_OK : fail(d, rc, err);
}

static enum pm_status s_set_version(struct db *b, int v, struct pm_error *err)
{
	char sql[64];

	snprintf(sql, sizeof sql, "PRAGMA user_version = %d", v);
	return s_exec(b, sql, err);
}

static void s_close(struct db *b)
{
	struct db_sqlite *d = (struct db_sqlite *)b;

	for (struct db_stmt *st = d->stmts, *next; st; st = next) {
		next = st->next;
		sqlite3_finalize(st->st);
		free(st);
	}
	/* The last connection to close checkpoints the WAL into the file. */
	sqlite3_close_v2(d->db);
	free(d->base.where);
	free(d);
}

/* now_ms(): the store's clock in both dialects (leases, store_jobs.c),
 * milliseconds since the epoch. */
static void now_ms(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	struct timespec ts;

	(void)argc;
	(void)argv;
	clock_gettime(CLOCK_REALTIME, &ts);
	sqlite3_result_int64(ctx, (sqlite3_int64)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

static const struct db_ops SQLITE_OPS = {
    s_exec,	s_prepare,   s_bind_text,      s_bind_int64,	 s_step,
    s_col_text, s_col_int64, s_changes,	       s_reset,		 s_begin,
    s_commit,	s_rollback,  s_in_transaction, s_get_version,	 s_set_version,
    s_close,	s_bind_blob, s_col_blob,       s_binary_results,
};

/* NOMUTEX: the store's mutex already serialises every use of the
 * connection. */
enum pm_status db_sqlite_open(const char *path, struct db **out, struct pm_error *err)
{
	struct db_sqlite *d = calloc(1, sizeof *d);
	int rc;

	*out = NULL;
	if (!d || !(d->base.where = strdup(path))) {
		free(d);
		return error_set(err, PM_ERR_NOMEM, "", "out of memory opening the store");
	}
	d->base.kind = DB_SQLITE;
	d->base.ops = &SQLITE_OPS;
	rc = sqlite3_open_v2(
	    path, &d->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		enum pm_status st = fail(d, rc, err);

		s_close(&d->base);
		return st;
	}
	sqlite3_extended_result_codes(d->db, 1);
	/* another process holding the write lock (a second server on the
	 * same directory, a backup) is waited for this long */
	sqlite3_busy_timeout(d->db, 5000);
	sqlite3_create_function(d->db, "now_ms", 0, SQLITE_UTF8, NULL, now_ms, NULL, NULL);
	*out = &d->base;
	return PM_OK;
}

void db_close(struct db *d)
{
	if (d)
		d->ops->close(d);
}

int db_is_pg(const char *where)
{
	return where &&
	       (!strncmp(where, "postgresql://", 13) || !strncmp(where, "postgres://", 11));
}
