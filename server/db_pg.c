/*
 * The PostgreSQL driver of db.h (libpq): one connection per process,
 * shared by many nodes through the database. Statements are prepared on
 * the server at their first use on a connection; after the connection
 * was lost (PostgreSQL restarted), the next call outside a transaction
 * connects again and prepares them anew (a generation count tells stale
 * ones apart). A transaction cut by a lost connection fails with
 * PM_ERR_IO and PostgreSQL rolls it back: nothing half-written is seen.
 * The schema version lives in the table pmaxent_schema, read and written
 * under a transaction-scoped advisory lock so that nodes starting at once
 * migrate one after the other.
 */
#include <libpq-fe.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>

#include "db.h"

/* Parameters of one statement at most (the store's take up to 9). */
#define PG_MAX_PARAMS 16
/* pg_advisory_xact_lock's key for the schema: "pmaxent" in ASCII, cut. */
#define SCHEMA_LOCK 0x706d6178656eLL

struct db_stmt {
	struct db_pg *d;
	char name[16];
	char *sql;	   /* ?N spelled $N */
	int n_params, gen; /* prepared on connection generation gen (0: never) */
	const char *vals[PG_MAX_PARAMS];
	char ints[PG_MAX_PARAMS][24];
	int lens[PG_MAX_PARAMS], fmts[PG_MAX_PARAMS]; /* fmts 1: a binary (blob) parameter */
	int binary;				      /* results in binary form (binary_results) */
	unsigned char *blob;			      /* the last col_blob's bytes (PQfreemem) */
	PGresult *res;
	int row, n_rows, changes;
	struct db_stmt *next;
};

struct db_pg {
	struct db base;
	char *uri; /* whole, for a listener's own connection */
	PGconn *c;
	int gen, n_stmts;
	int in_tx; /* between begin and commit/rollback: never reconnect there */
	struct db_stmt *stmts;
};

/* libpq's notices ("relation ... already exists, skipping") are not ours
 * to print. */
static void quiet(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

/* A failed result (or none) as a pm_status. The server's words, which
 * may name its host or socket path, go to the server log with the URI
 * (without its password); err, which may reach a client in a problem
 * document, has the SQLSTATE only. */
static enum pm_status fail(struct db_pg *d, PGresult *res, struct pm_error *err)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	char msg[512];

	snprintf(msg, sizeof msg, "%s", res ? PQresultErrorMessage(res) : PQerrorMessage(d->c));
	msg[strcspn(msg, "\n")] = '\0';
	if (state && !strcmp(state, "23505")) /* unique_violation */
		return error_set(err, PM_ERR_CONFLICT, "", "the database: a unique key is taken");
	if (state && !strcmp(state, "53200")) /* out_of_memory */
		return error_set(err, PM_ERR_NOMEM, "", "out of memory in the database");
	fprintf(stderr, "pmaxent: database %s: %s\n", d->base.where, msg);
	if (state && !strncmp(state, "23", 2)) /* other integrity constraints */
		return error_set(err, PM_ERR_INTERNAL, "",
				 "the database refused a row (SQLSTATE %s)", state);
	/* no connection (the server restarting, or unreachable), class 08
	 * (connection exception) or 57P0x (shutting down, starting up): the
	 * request may be tried again in a moment (503 Retry-After) */
	if (PQstatus(d->c) != CONNECTION_OK ||
	    (state && (!strncmp(state, "08", 2) || !strncmp(state, "57P0", 4))))
		return error_set(err, PM_ERR_BUSY, "", "the database is unavailable%s%s%s",
				 state ? " (SQLSTATE " : "", state ? state : "", state ? ")" : "");
	return error_set(err, PM_ERR_IO, "", "the database failed (SQLSTATE %s)",
			 state ? state : "none");
}

/* Outside a transaction, a lost connection is made again (its prepared
 * statements with it: a new generation). */
static enum pm_status connected(struct db_pg *d, struct pm_error *err)
{
	if (PQstatus(d->c) == CONNECTION_OK)
		return PM_OK;
	if (d->in_tx) /* the rest of it would run outside it */
		return fail(d, NULL, err);
	PQreset(d->c);
	d->gen++;
	return PQstatus(d->c) == CONNECTION_OK ? PM_OK : fail(d, NULL, err);
}

static enum pm_status p_exec(struct db *b, const char *sql, struct pm_error *err)
{
	struct db_pg *d = (struct db_pg *)b;
	enum pm_status ret = connected(d, err);
	PGresult *res;

	if (ret)
		return ret;
	res = PQexec(d->c, sql);
	if (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK)
		ret = fail(d, res, err);
	PQclear(res);
	return ret;
}

/* sql in PostgreSQL's spelling (malloc'd), or NULL: ?N is $N, and a
 * comment that starts with PG: is the text after it (db.h). */
static char *dollars(const char *sql)
{
	char *out = malloc(strlen(sql) + 1), *o = out;
	const char *end;

	for (const char *p = sql; out && *p; p++) {
		if (!strncmp(p, "/*PG:", 5) && (end = strstr(p + 5, "*/"))) {
			memcpy(o, p + 5, (size_t)(end - p - 5));
			o += end - p - 5;
			p = end + 1;
			continue;
		}
		*o++ = *p == '?' && p[1] >= '0' && p[1] <= '9' ? '$' : *p;
	}
	if (out)
		*o = '\0';
	return out;
}

static enum pm_status p_prepare(struct db *b, const char *sql, int n_params, struct db_stmt **out,
				struct pm_error *err)
{
	struct db_pg *d = (struct db_pg *)b;
	struct db_stmt *st = calloc(1, sizeof *st);

	*out = NULL;
	if (n_params > PG_MAX_PARAMS)
		return error_set(err, PM_ERR_INTERNAL, "", "a statement of %d parameters",
				 n_params);
	if (!st || !(st->sql = dollars(sql))) {
		free(st);
		return error_set(err, PM_ERR_NOMEM, "", "out of memory");
	}
	st->d = d;
	st->n_params = n_params;
	st->row = -1;
	snprintf(st->name, sizeof st->name, "pm%d", d->n_stmts++);
	st->next = d->stmts;
	d->stmts = st;
	*out = st;
	return PM_OK;
}

static void p_bind_text(struct db_stmt *st, int i, const char *v)
{
	if (i >= 1 && i <= PG_MAX_PARAMS)
		st->vals[i - 1] = v;
}

static void p_bind_int64(struct db_stmt *st, int i, int64_t v)
{
	if (i < 1 || i > PG_MAX_PARAMS)
		return;
	snprintf(st->ints[i - 1], sizeof st->ints[i - 1], "%" PRId64, v);
	st->vals[i - 1] = st->ints[i - 1];
}

static void p_bind_blob(struct db_stmt *st, int i, const void *v, size_t len)
{
	if (i < 1 || i > PG_MAX_PARAMS)
		return;
	st->vals[i - 1] = v;
	st->lens[i - 1] = (int)len;
	st->fmts[i - 1] = 1;
}

/* bytea comes in binary results as its bytes, in text results as hex
 * ("\x..."): decoded into st->blob. */
static const void *p_col_blob(struct db_stmt *st, int i, size_t *len)
{
	*len = 0;
	PQfreemem(st->blob);
	st->blob = NULL;
	if (!st->res || st->row >= st->n_rows || PQgetisnull(st->res, st->row, i))
		return NULL;
	if (st->binary) {
		*len = (size_t)PQgetlength(st->res, st->row, i);
		return PQgetvalue(st->res, st->row, i);
	}
	st->blob = PQunescapeBytea((const unsigned char *)PQgetvalue(st->res, st->row, i), len);
	return st->blob;
}

static void p_binary_results(struct db_stmt *st)
{
	st->binary = 1;
}

/* Prepares st on this connection if it was not (or on an older one). */
static enum pm_status ensure_prepared(struct db_stmt *st, struct pm_error *err)
{
	struct db_pg *d = st->d;
	enum pm_status ret = connected(d, err);
	PGresult *res;

	if (ret || st->gen == d->gen + 1)
		return ret;
	res = PQprepare(d->c, st->name, st->sql, st->n_params, NULL);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		ret = fail(d, res, err);
	else
		st->gen = d->gen + 1;
	PQclear(res);
	return ret;
}

/* The first step runs the statement; each step moves to the next row. */
static enum pm_status p_step(struct db_stmt *st, int *row, struct pm_error *err)
{
	enum pm_status ret = PM_OK;

	*row = 0;
	if (!st->res) {
		ExecStatusType s;

		if ((ret = ensure_prepared(st, err)))
			return ret;
		st->res = PQexecPrepared(st->d->c, st->name, st->n_params, st->vals, st->lens,
					 st->fmts, st->binary);
		s = PQresultStatus(st->res);
		if (s != PGRES_TUPLES_OK && s != PGRES_COMMAND_OK)
			return fail(st->d, st->res, err);
		st->n_rows = s == PGRES_TUPLES_OK ? PQntuples(st->res) : 0;
		st->changes = atoi(PQcmdTuples(st->res));
		st->row = -1;
	}
	*row = ++st->row < st->n_rows;
	return ret;
}

static const char *p_col_text(struct db_stmt *st, int i)
{
	if (!st->res || st->row >= st->n_rows || PQgetisnull(st->res, st->row, i))
		return NULL;
	return PQgetvalue(st->res, st->row, i);
}

static int64_t p_col_int64(struct db_stmt *st, int i)
{
	const char *t = p_col_text(st, i);

	return t ? strtoll(t, NULL, 10) : 0;
}

static int p_changes(struct db_stmt *st)
{
	return st->changes;
}

static void p_reset(struct db_stmt *st)
{
	PQclear(st->res);
	st->res = NULL;
	st->row = -1;
	st->n_rows = st->changes = 0;
	memset(st->vals, 0, sizeof st->vals);
	memset(st->fmts, 0, sizeof st->fmts);
	PQfreemem(st->blob);
	st->blob = NULL;
}

/* A read transaction is one snapshot (REPEATABLE READ): a list and the
 * check before it agree while other nodes write. */
static enum pm_status p_begin(struct db *b, int write, struct pm_error *err)
{
	struct db_pg *d = (struct db_pg *)b;
	enum pm_status ret =
	    p_exec(b, write ? "BEGIN" : "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", err);

	d->in_tx = !ret;
	return ret;
}

static enum pm_status p_commit(struct db *b, struct pm_error *err)
{
	struct db_pg *d = (struct db_pg *)b;
	enum pm_status ret = p_exec(b, "COMMIT", err);

	d->in_tx = 0;
	return ret;
}

/* Begun and not ended by us; a lost connection ended it on the server. */
static int p_in_transaction(struct db *b)
{
	struct db_pg *d = (struct db_pg *)b;

	if (d->in_tx && PQstatus(d->c) != CONNECTION_OK)
		d->in_tx = 0;
	return d->in_tx;
}

static void p_rollback(struct db *b)
{
	struct db_pg *d = (struct db_pg *)b;

	if (p_in_transaction(b))
		PQclear(PQexec(d->c, "ROLLBACK"));
	d->in_tx = 0;
}

static enum pm_status p_get_version(struct db *b, int *v, struct pm_error *err)
{
	struct db_pg *d = (struct db_pg *)b;
	char sql[128];
	enum pm_status ret;
	PGresult *res;

	*v = 0;
	snprintf(sql, sizeof sql, "SELECT pg_advisory_xact_lock(%lld)", SCHEMA_LOCK);
	if ((ret = p_exec(b, sql, err)) ||
	    (ret = p_exec(b, "CREATE TABLE IF NOT EXISTS pmaxent_schema(version INTEGER NOT NULL)",
			  err)))
		return ret;
	res = PQexec(d->c, "SELECT max(version) FROM pmaxent_schema");
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		ret = fail(d, res, err);
	else if (PQntuples(res) && !PQgetisnull(res, 0, 0))
		*v = atoi(PQgetvalue(res, 0, 0));
	PQclear(res);
	return ret;
}

static enum pm_status p_set_version(struct db *b, int v, struct pm_error *err)
{
	char sql[128];

	snprintf(sql, sizeof sql,
		 "DELETE FROM pmaxent_schema; INSERT INTO pmaxent_schema(version) VALUES(%d)", v);
	return p_exec(b, sql, err);
}

static void p_close(struct db *b)
{
	struct db_pg *d = (struct db_pg *)b;

	for (struct db_stmt *st = d->stmts, *next; st; st = next) {
		next = st->next;
		PQclear(st->res);
		PQfreemem(st->blob);
		free(st->sql);
		free(st);
	}
	PQfinish(d->c);
	free(d->base.where);
	free(d->uri);
	free(d);
}

static const struct db_ops PG_OPS = {
    p_exec,	p_prepare,   p_bind_text,      p_bind_int64,	 p_step,
    p_col_text, p_col_int64, p_changes,	       p_reset,		 p_begin,
    p_commit,	p_rollback,  p_in_transaction, p_get_version,	 p_set_version,
    p_close,	p_bind_blob, p_col_blob,       p_binary_results,
};

/* uri without its password, for messages and logs. */
static char *redacted(const char *uri)
{
	const char *auth = strstr(uri, "://"), *at, *colon;
	char *out;

	auth = auth ? auth + 3 : uri;
	at = strchr(auth, '@');
	colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
	if (!colon)
		return strdup(uri);
	if ((out = malloc(strlen(uri) + 1)))
		sprintf(out, "%.*s%s", (int)(colon - uri), uri, at);
	return out;
}

enum pm_status db_pg_open(const char *uri, struct db **out, struct pm_error *err)
{
	struct db_pg *d = calloc(1, sizeof *d);
	enum pm_status ret = PM_OK;

	*out = NULL;
	if (!d || !(d->base.where = redacted(uri)) || !(d->uri = strdup(uri))) {
		if (d)
			free(d->base.where);
		free(d);
		return error_set(err, PM_ERR_NOMEM, "", "out of memory opening the store");
	}
	d->base.kind = DB_POSTGRES;
	d->base.ops = &PG_OPS;
	d->c = PQconnectdb(uri);
	if (!d->c || PQstatus(d->c) != CONNECTION_OK) {
		/* at the start a bad URI is the likelier cause: a setting (exit 2) */
		ret = d->c ? error_set(err, PM_ERR_IO, "database", "cannot connect to %s: %.*s",
				       d->base.where, (int)strcspn(PQerrorMessage(d->c), "\n"),
				       PQerrorMessage(d->c))
			   : error_set(err, PM_ERR_NOMEM, "", "out of memory opening the store");
		p_close(&d->base);
		return ret;
	}
	PQsetNoticeProcessor(d->c, quiet, NULL);
	*out = &d->base;
	return PM_OK;
}

/* ---- LISTEN: wake-ups from other nodes ------------------------------------ */

struct db_listener {
	PGconn *c;
	char *uri, *channel;
};

/* (Re)connects l and LISTENs; 0 or -1. */
static int listen_connect(struct db_listener *l)
{
	char sql[96];
	PGresult *res;
	int ok;

	if (l->c && PQstatus(l->c) == CONNECTION_OK)
		return 0;
	PQfinish(l->c);
	l->c = PQconnectdb(l->uri);
	if (!l->c || PQstatus(l->c) != CONNECTION_OK)
		return -1;
	PQsetNoticeProcessor(l->c, quiet, NULL);
	snprintf(sql, sizeof sql, "LISTEN %s", l->channel);
	res = PQexec(l->c, sql);
	ok = PQresultStatus(res) == PGRES_COMMAND_OK;
	PQclear(res);
	return ok ? 0 : -1;
}

enum pm_status db_listener_open(struct db *b, const char *channel, struct db_listener **out,
				struct pm_error *err)
{
	struct db_listener *l;

	*out = NULL;
	if (b->kind != DB_POSTGRES)
		return PM_OK; /* nothing to listen to: the caller polls */
	if (!(l = calloc(1, sizeof *l)) || !(l->uri = strdup(((struct db_pg *)b)->uri)) ||
	    !(l->channel = strdup(channel))) {
		db_listener_close(l);
		return error_set(err, PM_ERR_NOMEM, "", "out of memory");
	}
	listen_connect(l); /* a failure is retried at each wait */
	*out = l;
	return PM_OK;
}

int db_listener_wait(struct db_listener *l, double seconds)
{
	struct timeval tv = {(time_t)seconds, (suseconds_t)((seconds - (time_t)seconds) * 1e6)};
	PGnotify *n;
	fd_set fds;
	int sock, got = 0;

	if (!l || listen_connect(l) || (sock = PQsocket(l->c)) < 0) {
		select(0, NULL, NULL, NULL, &tv); /* the poll interval, as without */
		return 0;
	}
	FD_ZERO(&fds);
	FD_SET(sock, &fds);
	if (select(sock + 1, &fds, NULL, NULL, &tv) > 0)
		PQconsumeInput(l->c);
	while ((n = PQnotifies(l->c))) {
		got = 1;
		PQfreemem(n);
	}
	return got;
}

void db_listener_close(struct db_listener *l)
{
	if (!l)
		return;
	PQfinish(l->c);
	free(l->uri);
	free(l->channel);
	free(l);
}
