/*
 * Durable storage of datasets, analyses and sweeps (see store.h), on one
 * of db.h's back ends: SQLite in a data directory (the default) or a
 * PostgreSQL database many nodes share. The SQL is one text for both.
 *
 * One connection per process, serialised by a mutex: SQLite would
 * serialise writers anyway, and a single connection keeps the prepared
 * statements cached and the error message of the last call unambiguous
 * (it is read under the same lock). Every write runs in a transaction
 * (SQLite: BEGIN IMMEDIATE), so readers never see part of it and a crash
 * (kill -9 included) rolls an unfinished one back. store_open.c opens
 * and closes it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>

#include "store_internal.h"

/* Status names in the order of store_analysis_counts. */
static const char *const STATUS[5] = {"queued", "running", "succeeded", "failed", "cancelled"};

/* Types a statement does not fix are CAST (db.h): `?2 IS NULL` alone
 * tells PostgreSQL nothing. */
static const char *const SQL[Q_DS_INSERT] = {
    /* The analysis takes its tenant from the dataset row, so the two
     * can never disagree, and the insert is a no-op for a foreign one. */
    [Q_AN_INSERT] = "INSERT INTO analyses(id, tenant, dataset_id, status, request, attempts,"
		    " created, updated) SELECT CAST(?1 AS TEXT), tenant, id, 'queued',"
		    " CAST(?3 AS TEXT), 0, CAST(?4 AS BIGINT), CAST(?4 AS BIGINT)"
		    " FROM datasets WHERE id = ?2 AND tenant = ?5",
    [Q_AN_GET] = "SELECT seq, id, tenant, dataset_id, status, request, result, problem,"
		 " attempts, created, updated, crashes, progress FROM analyses"
		 " WHERE id = ?1 AND (CAST(?2 AS TEXT) IS NULL OR tenant = CAST(?2 AS TEXT))",
    /* Results and requests can be megabytes (the posterior, statements),
     * so a page of them could exhaust memory: lists leave them NULL,
     * store_analysis_get has them. */
    [Q_AN_LIST] = "SELECT seq, id, tenant, dataset_id, status, NULL, NULL, problem,"
		  " attempts, created, updated, crashes, progress FROM analyses"
		  " WHERE dataset_id = ?1 AND tenant = ?2 AND seq > ?3 ORDER BY seq LIMIT ?4",
    /* result is set only by succeeded and problem only by failed, so
     * they are non-NULL exactly in those states. Unused ?5..?9 are NULL,
     * which IN never matches. */
    [Q_AN_MOVE] = "UPDATE analyses SET status = ?2,"
		  " attempts = attempts + CASE WHEN ?2 = 'running' THEN 1 ELSE 0 END,"
		  " result = CASE WHEN ?2 = 'succeeded' THEN CAST(?3 AS TEXT) END,"
		  " problem = CASE WHEN ?2 = 'failed' THEN CAST(?3 AS TEXT) END, updated = ?4"
		  " WHERE id = ?1 AND status IN (?5, ?6, ?7, ?8, ?9)",
    [Q_AN_STATUS] = "SELECT status FROM analyses WHERE id = ?1",
    [Q_AN_DELETE] = "DELETE FROM analyses WHERE id = ?1 AND tenant = ?2",
    /* every one (?1 NULL: after a restart), or one dataset's of a tenant */
    [Q_AN_UNFINISHED] = "SELECT id FROM analyses WHERE status IN ('queued', 'running')"
			" AND (CAST(?1 AS TEXT) IS NULL OR (dataset_id = CAST(?1 AS TEXT)"
			" AND tenant = ?2)) ORDER BY seq",
    [Q_AN_COUNTS] = "SELECT status, count(*) FROM analyses GROUP BY status",
    [Q_AN_CRASHES] = "SELECT crashes FROM analyses WHERE id = ?1 AND status = 'running'",
    /* ?2: the state it goes to, queued or failed (with the problem ?3) */
    [Q_AN_INTERRUPT] = "UPDATE analyses SET status = ?2, crashes = crashes + 1,"
		       " problem = CASE WHEN ?2 = 'failed' THEN CAST(?3 AS TEXT) END,"
		       " updated = ?4 WHERE id = ?1 AND status = 'running'",
};

/* Each statement's highest ?N. */
static const int PARAMS[Q_DS_INSERT] = {
    [Q_AN_INSERT] = 5,	[Q_AN_GET] = 2,	      [Q_AN_LIST] = 4,	     [Q_AN_MOVE] = 9,
    [Q_AN_STATUS] = 1,	[Q_AN_DELETE] = 2,    [Q_AN_UNFINISHED] = 2, [Q_AN_COUNTS] = 0,
    [Q_AN_CRASHES] = 1, [Q_AN_INTERRUPT] = 4,
};

/* ---- statements ------------------------------------------------------------ */

/* The SQL of q and its highest ?N, from the file that owns it. */
static const char *query_sql(enum query q, int *n_params)
{
	if (q < Q_DS_INSERT) {
		*n_params = PARAMS[q];
		return SQL[q];
	}
	if (q < Q_SW_INSERT) {
		*n_params = store_dataset_params[q - Q_DS_INSERT];
		return store_dataset_sql[q - Q_DS_INSERT];
	}
	if (q < Q_AN_CLAIM) {
		*n_params = store_sweep_params[q - Q_SW_INSERT];
		return store_sweep_sql[q - Q_SW_INSERT];
	}
	if (q < Q_AN_TURN) {
		*n_params = store_jobs_params[q - Q_AN_CLAIM];
		return store_jobs_sql[q - Q_AN_CLAIM];
	}
	if (q < Q_RS_SUCCEED) {
		*n_params = store_tenant_params[q - Q_AN_TURN];
		return store_tenant_sql[q - Q_AN_TURN];
	}
	*n_params = store_result_params[q - Q_RS_SUCCEED];
	return store_result_sql[q - Q_RS_SUCCEED];
}

/* The cached statement for q, with no bindings. */
static enum pm_status prep(struct store *s, enum query q, struct db_stmt **st, struct pm_error *err)
{
	enum pm_status ret = PM_OK;
	int n;
	const char *sql = query_sql(q, &n);

	if (!s->stmt[q])
		ret = s->db->ops->prepare(s->db, sql, n, &s->stmt[q], err);
	*st = s->stmt[q];
	return ret;
}

enum pm_status store_prep(struct store *s, enum query q, struct db_stmt **st, struct pm_error *err)
{
	return prep(s, q, st, err);
}

/* Puts a statement back for the next call. */
static void release(struct store *s, struct db_stmt *st)
{
	if (st)
		s->db->ops->reset(st);
}

void store_release(struct store *s, struct db_stmt *st)
{
	release(s, st);
}

void store_bind_str(struct store *s, struct db_stmt *st, int i, const char *v)
{
	s->db->ops->bind_text(st, i, v);
}

void store_bind_int(struct store *s, struct db_stmt *st, int i, int64_t v)
{
	s->db->ops->bind_int64(st, i, v);
}

enum pm_status store_run(struct store *s, struct db_stmt *st, int *changes, struct pm_error *err)
{
	int row;
	enum pm_status ret = s->db->ops->step(st, &row, err);

	if (!ret && changes)
		*changes = s->db->ops->changes(st);
	release(s, st);
	return ret;
}

/* Ends the transaction begun by begin: commit when ret is PM_OK,
 * otherwise roll back so nothing of it is visible. Returns the final
 * status. */
enum pm_status store_tx_end(struct store *s, enum pm_status ret, struct pm_error *err)
{
	if (!s->db->ops->in_transaction(s->db))
		return ret; /* BEGIN failed or the database already rolled back */
	if (ret == PM_OK)
		ret = s->db->ops->commit(s->db, err);
	if (ret != PM_OK)
		s->db->ops->rollback(s->db);
	return ret;
}

/* Runs the one-row query q with ?1 = a (and ?2 = b when it has a ?2):
 * *found, and column 0 as text in buf. */
static enum pm_status lookup(struct store *s, enum query q, const char *a, const char *b,
			     int *found, char *buf, size_t size, struct pm_error *err)
{
	struct db_stmt *st = NULL;
	enum pm_status ret = prep(s, q, &st, err);
	const char *t;
	int n_params;

	query_sql(q, &n_params);
	*found = 0;
	if (ret)
		return ret;
	store_bind_str(s, st, 1, a);
	if (n_params > 1)
		store_bind_str(s, st, 2, b);
	ret = s->db->ops->step(st, found, err);
	if (!ret && *found) {
		t = s->db->ops->col_text(st, 0);
		snprintf(buf, size, "%s", t ? t : "");
	}
	release(s, st);
	return ret;
}

/* Locks the store, begins a write transaction and hands out statement q
 * (*st stays NULL on failure). Pair with write_end. */
enum pm_status store_write_begin(struct store *s, enum query q, struct db_stmt **st,
				 struct pm_error *err)
{
	enum pm_status ret;

	*st = NULL;
	pthread_mutex_lock(&s->lock);
	ret = s->db->ops->begin(s->db, 1, err);
	return ret ? ret : prep(s, q, st, err);
}

/* Commits (ret PM_OK) or rolls back, and unlocks; the final status. */
enum pm_status store_write_end(struct store *s, struct db_stmt *st, enum pm_status ret,
			       struct pm_error *err)
{
	release(s, st);
	ret = store_tx_end(s, ret, err);
	pthread_mutex_unlock(&s->lock);
	return ret;
}

/* ---- rows ------------------------------------------------------------------ */

int store_col_str(struct store *s, struct db_stmt *st, int i, char **dst)
{
	const char *t = s->db->ops->col_text(st, i);

	*dst = t ? strdup(t) : NULL;
	return t && !*dst ? -1 : 0;
}

static int64_t col_int(struct store *s, struct db_stmt *st, int i)
{
	return s->db->ops->col_int64(st, i);
}

int store_read_analysis(struct store *s, struct db_stmt *st, struct store_row *r)
{
	memset(r, 0, sizeof *r);
	r->seq = col_int(s, st, 0);
	r->attempts = (int)col_int(s, st, 8);
	r->created = col_int(s, st, 9);
	r->updated = col_int(s, st, 10);
	r->crashes = (int)col_int(s, st, 11);
	return -(store_col_str(s, st, 1, &r->id) || store_col_str(s, st, 2, &r->tenant) ||
		 store_col_str(s, st, 3, &r->dataset_id) || store_col_str(s, st, 4, &r->status) ||
		 store_col_str(s, st, 5, &r->request) || store_col_str(s, st, 6, &r->result) ||
		 store_col_str(s, st, 7, &r->problem) || store_col_str(s, st, 12, &r->progress));
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
	free(r->progress);
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
static enum pm_status fetch_all(struct store *s, struct db_stmt *st, store_row_reader read,
				struct store_row **rows, size_t *n, struct pm_error *err)
{
	enum pm_status ret;
	struct store_row *v = NULL, *nv;
	size_t len = 0, cap = 0;
	int row;

	while (!(ret = s->db->ops->step(st, &row, err)) && row) {
		if (len == cap) {
			cap = cap ? 2 * cap : 16;
			nv = realloc(v, cap * sizeof *v);
			if (!nv)
				goto nomem;
			v = nv;
		}
		if (read(s, st, &v[len])) {
			store_row_finish(&v[len]);
			goto nomem;
		}
		len++;
	}
	goto out;
nomem:
	ret = error_set(err, PM_ERR_NOMEM, "", "out of memory reading rows");
out:
	release(s, st);
	if (ret != PM_OK) {
		store_rows_free(v, len);
		v = NULL, len = 0;
	}
	*rows = v;
	*n = len;
	return ret;
}

/* A list LIMIT: size_t may exceed what a database binds. */
static int64_t limit_of(size_t limit)
{
	return limit > (size_t)INT64_MAX ? INT64_MAX : (int64_t)limit;
}

/* ---- rows of any table ------------------------------------------------------ */

/* One dataset (Q_DS_GET) or analysis (Q_AN_GET) by id; tenant NULL
 * matches any. */
enum pm_status store_get_row(struct store *s, enum query q, const char *what, const char *id,
			     const char *tenant, int with_body, struct store_row *out,
			     struct pm_error *err)
{
	struct db_stmt *st = NULL;
	struct store_row *rows = NULL;
	enum pm_status ret;
	size_t n = 0;

	memset(out, 0, sizeof *out);
	pthread_mutex_lock(&s->lock);
	ret = prep(s, q, &st, err);
	if (ret)
		goto out;
	store_bind_str(s, st, 1, id);
	store_bind_str(s, st, 2, tenant);
	if (q == Q_DS_GET)
		store_bind_int(s, st, 3, with_body != 0);
	ret = fetch_all(s, st, q == Q_DS_GET ? store_read_dataset : store_read_analysis, &rows, &n,
			err);
	if (!ret && n == 0)
		ret = error_set(err, PM_ERR_NOT_FOUND, "", "no %s \"%s\"", what, id);
	else if (!ret)
		*out = rows[0]; /* ids are unique: one row, now the caller's */
	free(rows);
out:
	pthread_mutex_unlock(&s->lock);
	return ret;
}

/* A page of datasets (Q_DS_LIST) or of a dataset's analyses (Q_AN_LIST,
 * PM_ERR_NOT_FOUND when the dataset is not the tenant's). One read
 * snapshot, so the check and the page agree while another process writes. */
enum pm_status store_list_rows(struct store *s, enum query q, const char *dataset_id,
			       const char *tenant, int64_t after, size_t limit,
			       struct store_row **rows, size_t *n, struct pm_error *err)
{
	struct db_stmt *st = NULL;
	enum pm_status ret;
	char buf[8];
	int found = 1, first;

	*rows = NULL;
	*n = 0;
	pthread_mutex_lock(&s->lock);
	ret = s->db->ops->begin(s->db, 0, err);
	if (!ret && (q == Q_AN_LIST || q == Q_SW_LIST))
		ret = lookup(s, Q_DS_EXISTS, dataset_id, tenant, &found, buf, sizeof buf, err);
	if (!ret && !found)
		ret = error_set(err, PM_ERR_NOT_FOUND, "", "no dataset \"%s\"", dataset_id);
	if (!ret)
		ret = prep(s, q, &st, err);
	if (ret)
		goto out;
	/* a dataset page has no dataset_id: tenant is its ?1 */
	first = q == Q_DS_LIST ? 1 : 2;
	if (q != Q_DS_LIST)
		store_bind_str(s, st, 1, dataset_id);
	store_bind_str(s, st, first, tenant);
	store_bind_int(s, st, first + 1, after);
	store_bind_int(s, st, first + 2, limit_of(limit));
	ret = fetch_all(s, st, q == Q_DS_LIST ? store_read_dataset : store_read_analysis, rows, n,
			err);
out:
	ret = store_tx_end(s, ret, err);
	if (ret) {
		store_rows_free(*rows, *n);
		*rows = NULL, *n = 0;
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

/* Deletes one row by id and tenant (Q_DS_DELETE or Q_AN_DELETE). The
 * analyses of a dataset go with it (ON DELETE CASCADE), in the same
 * transaction. */
enum pm_status store_delete_row(struct store *s, enum query q, const char *what, const char *id,
				const char *tenant, struct pm_error *err)
{
	struct db_stmt *st = NULL;
	enum pm_status ret;
	int changes = 0;

	ret = store_write_begin(s, q, &st, err);
	if (ret)
		goto out;
	store_bind_str(s, st, 1, id);
	store_bind_str(s, st, 2, tenant);
	ret = store_run(s, st, &changes, err);
	if (!ret && changes == 0)
		ret = error_set(err, PM_ERR_NOT_FOUND, "", "no %s \"%s\"", what, id);
out:
	return store_write_end(s, st, ret, err);
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
	struct db_stmt *st = NULL;
	enum pm_status ret;
	int changes = 0;

	ret = store_write_begin(s, t->insert, &st, err);
	if (!ret)
		ret = store_tenant_admit_job(s, tenant, err);
	if (ret)
		goto out;
	store_bind_str(s, st, 1, id);
	store_bind_str(s, st, 2, dataset_id);
	/* an analysis's request goes in chunks (store_results.c) */
	store_bind_str(s, st, 3, t == &ANALYSES ? NULL : request);
	store_bind_int(s, st, 4, (int64_t)time(NULL));
	store_bind_str(s, st, 5, tenant);
	ret = store_run(s, st, &changes, err);
	st = NULL;
	if (ret == PM_ERR_CONFLICT)
		ret = error_set(err, PM_ERR_CONFLICT, "", "%s \"%s\" already exists", t->what, id);
	else if (!ret && changes == 0)
		ret = error_set(err, PM_ERR_NOT_FOUND, "", "no dataset \"%s\"", dataset_id);
	else if (!ret && t == &ANALYSES)
		ret = store_request_put(s, id, request ? request : "", err);
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
	return store_get_row(s, t->get, t->what, id, tenant, 0, out, err);
}

enum pm_status store_analysis_get(struct store *s, const char *id, const char *tenant,
				  struct store_row *out, struct pm_error *err)
{
	enum pm_status ret = store_job_get(s, &ANALYSES, id, tenant, out, err);

	/* texts stored in chunks (store_results.c) */
	if (!ret && (!out->request || (!out->result && !strcmp(out->status, "succeeded"))))
		ret = store_texts_load(s, out, err);
	if (ret)
		store_row_finish(out);
	return ret;
}

enum pm_status store_analysis_list(struct store *s, const char *dataset_id, const char *tenant,
				   int64_t after, size_t limit, struct store_row **rows, size_t *n,
				   struct pm_error *err)
{
	return store_list_rows(s, Q_AN_LIST, dataset_id, tenant, after, limit, rows, n, err);
}

enum pm_status store_sweep_list(struct store *s, const char *dataset_id, const char *tenant,
				int64_t after, size_t limit, struct store_row **rows, size_t *n,
				struct pm_error *err)
{
	return store_list_rows(s, Q_SW_LIST, dataset_id, tenant, after, limit, rows, n, err);
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
static enum pm_status bind_move(struct store *s, struct db_stmt *st, const char *from,
				const char *to, struct pm_error *err)
{
	const char *p = from;
	int k, slot = 5;

	if (!from || !*from)
		return error_set(err, PM_ERR_INTERNAL, "", "no state to move analyses from");
	if (!to || status_index(to, strlen(to)) < 0)
		return error_set(err, PM_ERR_INTERNAL, "", "unknown analysis status \"%s\"",
				 to ? to : "(null)");
	store_bind_str(s, st, 2, to);
	while (slot <= 9) {
		size_t len = strcspn(p, "|");

		k = status_index(p, len);
		if (k < 0)
			return error_set(err, PM_ERR_INTERNAL, "",
					 "unknown analysis status \"%.*s\"", (int)len, p);
		store_bind_str(s, st, slot++, STATUS[k]);
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
	struct db_stmt *st = NULL;
	enum pm_status ret;
	int changes = 0, found;
	char now[16];

	ret = store_write_begin(s, t->move, &st, err);
	if (!ret)
		ret = bind_move(s, st, from, to, err);
	if (ret)
		goto out;
	store_bind_str(s, st, 1, id);
	store_bind_str(s, st, 3, text);
	store_bind_int(s, st, 4, (int64_t)time(NULL));
	ret = store_run(s, st, &changes, err);
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
	return store_delete_row(s, t->del, t->what, id, tenant, err);
}

enum pm_status store_analysis_delete(struct store *s, const char *id, const char *tenant,
				     struct pm_error *err)
{
	return store_job_delete(s, &ANALYSES, id, tenant, err);
}

static int read_id(struct store *s, struct db_stmt *st, struct store_row *r)
{
	memset(r, 0, sizeof *r);
	return store_col_str(s, st, 0, &r->id) || !r->id ? -1 : 0;
}

enum pm_status store_job_unfinished(struct store *s, const struct store_jobs *t,
				    const char *dataset_id, const char *tenant, char ***ids,
				    size_t *n, struct pm_error *err)
{
	struct db_stmt *st = NULL;
	struct store_row *rows = NULL;
	enum pm_status ret;

	*ids = NULL;
	*n = 0;
	pthread_mutex_lock(&s->lock);
	ret = prep(s, t->unfinished, &st, err);
	if (!ret) {
		store_bind_str(s, st, 1, dataset_id);
		store_bind_str(s, st, 2, tenant);
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
	struct db_stmt *st = NULL;
	const char *name;
	enum pm_status ret;
	int row, k;

	memset(counts, 0, 5 * sizeof *counts);
	pthread_mutex_lock(&s->lock);
	ret = prep(s, q, &st, err);
	if (ret)
		goto out;
	while (!(ret = s->db->ops->step(st, &row, err)) && row) {
		name = s->db->ops->col_text(st, 0);
		k = name ? status_index(name, strlen(name)) : -1;
		if (k >= 0)
			counts[k] = col_int(s, st, 1);
	}
	release(s, st);
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
	struct db_stmt *st = NULL;
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
	store_bind_str(s, st, 1, id);
	store_bind_str(s, st, 2, *crashes >= max_crashes ? "failed" : "queued");
	store_bind_str(s, st, 3, problem);
	store_bind_int(s, st, 4, (int64_t)time(NULL));
	ret = store_run(s, st, &changes, err);
out:
	return store_write_end(s, st, ret, err);
}

enum pm_status store_analysis_interrupted(struct store *s, const char *id, int max_crashes,
					  const char *problem, int *crashes, struct pm_error *err)
{
	return store_job_interrupted(s, &ANALYSES, id, max_crashes, problem, crashes, err);
}
