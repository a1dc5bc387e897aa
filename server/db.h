/*
 * db: the one SQL interface the store (store.c, store_sweeps.c) is
 * written against, with two back ends: SQLite, embedded, the default
 * (db_sqlite.c), and PostgreSQL over libpq, shared by many nodes
 * (db_pg.c). The store's SQL is one text for both: parameters are ?1,
 * ?2, ... (the PostgreSQL driver spells them $1, $2, ...), every one of
 * them referenced, and one whose type the statement does not fix is
 * CAST; a comment that starts with "PG:" is, on PostgreSQL, the text
 * after it (FOR UPDATE SKIP LOCKED, which SQLite, one writer at a time,
 * has no use for); now_ms() is the database's clock in milliseconds. What differs (the schema's
 * DDL, how a write transaction locks, where the schema version lives) is asked of the driver by
 * name. Private to the server's store; a connection is used by one thread at a time (the store's
 * mutex).
 */
#ifndef PMAXENT_DB_H
#define PMAXENT_DB_H

#include <stddef.h>
#include <stdint.h>

#include "server.h"

enum db_kind { DB_SQLITE = 0, DB_POSTGRES = 1 };

struct db;
struct db_stmt;

/* A driver: its functions behind one table (db_sqlite_open, db_pg_open
 * fill struct db.ops). Every call that can fail returns a pm_status with
 * the database's own words in err: PM_ERR_IO (unreachable, full, corrupt,
 * locked), PM_ERR_NOMEM, PM_ERR_CONFLICT for a unique key violated. */
struct db_ops {
	/* Runs SQL text (one or more statements, no parameters). */
	enum pm_status (*exec)(struct db *d, const char *sql, struct pm_error *err);
	/* A statement of sql, prepared once (*out owned by d: freed at
	 * close); n_params its highest ?N. */
	enum pm_status (*prepare)(struct db *d, const char *sql, int n_params, struct db_stmt **out,
				  struct pm_error *err);
	/* Parameters, 1-based; text NULL binds NULL. The text is the
	 * caller's until the statement is reset. */
	void (*bind_text)(struct db_stmt *st, int i, const char *v);
	void (*bind_int64)(struct db_stmt *st, int i, int64_t v);
	/* The next row: *row 1 and the columns readable, or 0 at the end. */
	enum pm_status (*step)(struct db_stmt *st, int *row, struct pm_error *err);
	/* Column i of the row (0-based); text NULL for SQL NULL. */
	const char *(*col_text)(struct db_stmt *st, int i);
	int64_t (*col_int64)(struct db_stmt *st, int i);
	/* Rows the last INSERT/UPDATE/DELETE touched. */
	int (*changes)(struct db_stmt *st);
	/* Done with the statement until its next use: results and bindings
	 * dropped (a SQLite statement left un-reset holds its read snapshot). */
	void (*reset)(struct db_stmt *st);
	/* Transactions: a write one (taking the write lock at once), a read
	 * one (one snapshot for several statements), their end. */
	enum pm_status (*begin)(struct db *d, int write, struct pm_error *err);
	enum pm_status (*commit)(struct db *d, struct pm_error *err);
	void (*rollback)(struct db *d);
	int (*in_transaction)(struct db *d);
	/* The schema version stored (0: a new database), and setting it,
	 * within a write transaction that holds every other node off. */
	enum pm_status (*get_version)(struct db *d, int *v, struct pm_error *err);
	enum pm_status (*set_version)(struct db *d, int v, struct pm_error *err);
	void (*close)(struct db *d);
	/* Binary parameters and columns (a packed dataset's chunks): the
	 * bytes are the caller's until the statement is reset; a column's
	 * are the statement's until the next step or reset (*len 0 and NULL
	 * for SQL NULL). */
	void (*bind_blob)(struct db_stmt *st, int i, const void *v, size_t len);
	const void *(*col_blob)(struct db_stmt *st, int i, size_t *len);
	/* From now on st's rows come as the database's binary form (PostgreSQL;
	 * SQLite's always are): for a statement whose columns are all read
	 * with col_blob, saving bytea's hex text, twice the bytes. */
	void (*binary_results)(struct db_stmt *st);
};

struct db {
	enum db_kind kind;
	const struct db_ops *ops;
	char *where; /* for messages: the file, or the URI without its password */
};

/* SQLite at path (created if missing). Caller closes with db_close. */
enum pm_status db_sqlite_open(const char *path, struct db **out, struct pm_error *err);
/* PostgreSQL at uri ("postgresql://..." or "postgres://..."). */
enum pm_status db_pg_open(const char *uri, struct db **out, struct pm_error *err);
/* Is where a PostgreSQL URI (else a data directory)? */
int db_is_pg(const char *where);
/* db_close(NULL) is a no-op. */
void db_close(struct db *d);

/* PostgreSQL LISTEN on a connection of its own (*out NULL on SQLite:
 * nothing to listen to). wait blocks up to seconds, 1 when a NOTIFY on
 * the channel came; a lost connection is made again at the next wait.
 * Close with db_listener_close (NULL: no-op). */
struct db_listener;
enum pm_status db_listener_open(struct db *d, const char *channel, struct db_listener **out,
				struct pm_error *err);
int db_listener_wait(struct db_listener *l, double seconds);
void db_listener_close(struct db_listener *l);

#endif
