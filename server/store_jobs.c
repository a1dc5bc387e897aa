/*
 * The queue of analyses and sweeps in the store, shared by every node
 * (issue 25). A node claims the oldest queued job in one short
 * transaction (PostgreSQL: FOR UPDATE SKIP LOCKED, so that nodes claiming
 * at once take different jobs and none waits), never held open during
 * the solve. The claim counts an attempt and writes the node's name and a
 * lease; the node renews the lease (heartbeat) while it runs the job, and
 * its result is accepted only if that attempt still owns the job. A job
 * whose lease ran out (its node died or lost the database) is put back in
 * the queue by whichever node sees it first, counting a crash; at
 * max_attempts crashes it ends failed with the reason. Times are the
 * database's clock (now_ms()), so nodes' clocks need not agree.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store_internal.h"

/* The NOTIFY channel of submits (store_notify, store_listen). */
#define STORE_CHANNEL "pmaxent_jobs"

/* A claim: ?1 owner, ?2 lease (ms), ?3 now (s, the updated column), ?4
 * whether a job that crashed before may be taken (it runs alone). Round
 * robin by tenant (issue 36): the tenant whose last turn (tenant_turns,
 * store_tenants.c) is oldest, a tenant that never had one first, and of
 * its jobs the oldest. */
#define CLAIM(T, EXTRA)                                                                            \
	"UPDATE " T " SET status = 'running', attempts = attempts + 1, owner = ?1,"                \
	" lease_until = now_ms() + ?2, progress = NULL, updated = ?3" EXTRA                        \
	" WHERE id = (SELECT q.id FROM " T " q"                                                    \
	" WHERE q.status = 'queued' AND (q.crashes = 0 OR ?4 = 1) ORDER BY COALESCE((SELECT"       \
	" t.turn FROM tenant_turns t WHERE t.tenant = q.tenant), 0), q.seq LIMIT 1"                \
	" /*PG: FOR UPDATE OF q SKIP LOCKED*/) RETURNING id, attempts, crashes"
/* ?1 id, ?2 owner, ?3 attempt, ?4 lease (ms), ?5 progress */
#define BEAT(T)                                                                                    \
	"UPDATE " T " SET lease_until = now_ms() + ?4, progress = CAST(?5 AS TEXT)"                \
	" WHERE id = ?1 AND owner = ?2 AND attempts = ?3 AND status = 'running'"
/* ?1 id, ?2 owner, ?3 attempt, ?4 the state, ?5 its text, ?6 now (s) */
#define FINISH(T, KEEP)                                                                            \
	"UPDATE " T " SET status = ?4, " KEEP ","                                                  \
	" problem = CASE WHEN ?4 = 'failed' THEN CAST(?5 AS TEXT) END,"                            \
	" owner = NULL, lease_until = NULL, progress = NULL, updated = ?6"                         \
	" WHERE id = ?1 AND owner = ?2 AND attempts = ?3 AND status = 'running'"
/* ?1 max crashes, ?2 the problem at the last, ?3 now (s), ?4 1: every
 * running job is dead (SQLite: one node, just started) */
#define REAP(T)                                                                                    \
	"UPDATE " T " SET status = CASE WHEN crashes + 1 >= ?1 THEN 'failed' ELSE 'queued' END,"   \
	" problem = CASE WHEN crashes + 1 >= ?1 THEN CAST(?2 AS TEXT) END,"                        \
	" crashes = crashes + 1, owner = NULL, lease_until = NULL, progress = NULL, updated = ?3"  \
	" WHERE status = 'running' AND (?4 = 1 OR lease_until IS NULL OR lease_until < now_ms())"  \
	" RETURNING id, status"

const char *const store_jobs_sql[Q_AN_TURN - Q_AN_CLAIM] = {
    [Q_AN_CLAIM - Q_AN_CLAIM] = CLAIM("analyses", ""),
    /* a sweep's run starts over: no points */
    [Q_SW_CLAIM - Q_AN_CLAIM] = CLAIM("sweeps", ", points = NULL"),
    [Q_AN_BEAT - Q_AN_CLAIM] = BEAT("analyses"),
    [Q_SW_BEAT - Q_AN_CLAIM] = BEAT("sweeps"),
    [Q_AN_FINISH - Q_AN_CLAIM] =
	FINISH("analyses", "result = CASE WHEN ?4 = 'succeeded' THEN CAST(?5 AS TEXT) END"),
    /* queued (a shutdown) and cancelled keep the points so far */
    [Q_SW_FINISH - Q_AN_CLAIM] = FINISH(
	"sweeps", "points = CASE WHEN ?4 = 'succeeded' THEN CAST(?5 AS TEXT) ELSE points END"),
    [Q_AN_REAP - Q_AN_CLAIM] = REAP("analyses"),
    [Q_SW_REAP - Q_AN_CLAIM] = REAP("sweeps"),
    [Q_QUEUED - Q_AN_CLAIM] = "SELECT (SELECT count(*) FROM analyses WHERE status = 'queued')"
			      " + (SELECT count(*) FROM sweeps WHERE status = 'queued')",
};

const int store_jobs_params[Q_AN_TURN - Q_AN_CLAIM] = {
    [Q_AN_CLAIM - Q_AN_CLAIM] = 4, [Q_SW_CLAIM - Q_AN_CLAIM] = 4,  [Q_AN_BEAT - Q_AN_CLAIM] = 5,
    [Q_SW_BEAT - Q_AN_CLAIM] = 5,  [Q_AN_FINISH - Q_AN_CLAIM] = 6, [Q_SW_FINISH - Q_AN_CLAIM] = 6,
    [Q_AN_REAP - Q_AN_CLAIM] = 4,  [Q_SW_REAP - Q_AN_CLAIM] = 4,   [Q_QUEUED - Q_AN_CLAIM] = 0,
};

/* The first row's columns as a claim (id, attempt, crashes). */
static enum pm_status read_claim(struct store *s, struct db_stmt *st, struct store_claim *c,
				 int *found, struct pm_error *err)
{
	enum pm_status ret = s->db->ops->step(st, found, err);
	const char *id;

	if (ret || !*found)
		return ret;
	id = s->db->ops->col_text(st, 0);
	snprintf(c->id, sizeof c->id, "%s", id ? id : "");
	c->attempt = (int)s->db->ops->col_int64(st, 1);
	c->crashes = (int)s->db->ops->col_int64(st, 2);
	return PM_OK;
}

enum pm_status store_job_claim(struct store *s, int sweeps, const char *owner, int64_t lease_ms,
			       int with_crashed, struct store_claim *out, int *found,
			       struct pm_error *err)
{
	struct db_stmt *st = NULL;
	enum pm_status ret = store_write_begin(s, sweeps ? Q_SW_CLAIM : Q_AN_CLAIM, &st, err);

	*found = 0;
	if (!ret) {
		store_bind_str(s, st, 1, owner);
		store_bind_int(s, st, 2, lease_ms);
		store_bind_int(s, st, 3, (int64_t)time(NULL));
		store_bind_int(s, st, 4, with_crashed != 0);
		ret = read_claim(s, st, out, found, err);
	}
	if (!ret && *found) {
		s->db->ops->reset(st); /* done with its row */
		ret = store_tenant_turn(s, sweeps, out->id, err);
	}
	return store_write_end(s, st, ret, err);
}

enum pm_status store_job_heartbeat(struct store *s, const char *id, const char *owner, int attempt,
				   int64_t lease_ms, const char *progress, int *owned,
				   struct pm_error *err)
{
	struct db_stmt *st = NULL;
	enum pm_status ret =
	    store_write_begin(s, !strncmp(id, "sw_", 3) ? Q_SW_BEAT : Q_AN_BEAT, &st, err);

	*owned = 0;
	if (!ret) {
		store_bind_str(s, st, 1, id);
		store_bind_str(s, st, 2, owner);
		store_bind_int(s, st, 3, attempt);
		store_bind_int(s, st, 4, lease_ms);
		store_bind_str(s, st, 5, progress);
		ret = store_run(s, st, owned, err);
		st = NULL; /* store_run put it back */
	}
	return store_write_end(s, st, ret, err);
}

enum pm_status store_job_finish(struct store *s, const char *id, const char *owner, int attempt,
				const char *to, const char *text, struct pm_error *err)
{
	struct db_stmt *st = NULL;
	enum pm_status ret =
	    store_write_begin(s, !strncmp(id, "sw_", 3) ? Q_SW_FINISH : Q_AN_FINISH, &st, err);
	int changes = 0;

	if (!ret) {
		store_bind_str(s, st, 1, id);
		store_bind_str(s, st, 2, owner);
		store_bind_int(s, st, 3, attempt);
		store_bind_str(s, st, 4, to);
		store_bind_str(s, st, 5, text);
		store_bind_int(s, st, 6, (int64_t)time(NULL));
		ret = store_run(s, st, &changes, err);
		st = NULL;
	}
	if (!ret && !changes)
		ret = error_set(err, PM_ERR_CONFLICT, "",
				"job \"%s\" is no longer run by this attempt (%d)", id, attempt);
	return store_write_end(s, st, ret, err);
}

/* One table's expired jobs back in the queue (or failed). */
static enum pm_status reap(struct store *s, enum query q, int max_crashes, const char *problem,
			   int all, struct store_reaped *out, struct pm_error *err)
{
	struct db_stmt *st = NULL;
	enum pm_status ret = store_write_begin(s, q, &st, err);
	const char *status;
	int row;

	if (ret)
		return store_write_end(s, st, ret, err);
	store_bind_int(s, st, 1, max_crashes);
	store_bind_str(s, st, 2, problem);
	store_bind_int(s, st, 3, (int64_t)time(NULL));
	store_bind_int(s, st, 4, all != 0);
	while (!(ret = s->db->ops->step(st, &row, err)) && row) {
		status = s->db->ops->col_text(st, 1);
		out->requeued += status && !strcmp(status, "queued");
		out->failed += status && !strcmp(status, "failed");
		out->failed_analyses += status && !strcmp(status, "failed") && q == Q_AN_REAP;
	}
	return store_write_end(s, st, ret, err);
}

enum pm_status store_job_reap(struct store *s, int max_crashes, const char *problem, int all,
			      struct store_reaped *out, struct pm_error *err)
{
	enum pm_status ret;

	memset(out, 0, sizeof *out);
	ret = reap(s, Q_AN_REAP, max_crashes, problem, all, out, err);
	return ret ? ret : reap(s, Q_SW_REAP, max_crashes, problem, all, out, err);
}

enum pm_status store_job_queued(struct store *s, int64_t *n, struct pm_error *err)
{
	struct db_stmt *st = NULL;
	enum pm_status ret;
	int row = 0;

	*n = 0;
	pthread_mutex_lock(&s->lock);
	ret = store_prep(s, Q_QUEUED, &st, err);
	if (!ret)
		ret = s->db->ops->step(st, &row, err);
	if (!ret && row)
		*n = s->db->ops->col_int64(st, 0);
	store_release(s, st);
	pthread_mutex_unlock(&s->lock);
	return ret;
}

int store_shared(struct store *s)
{
	return s->db->kind == DB_POSTGRES;
}

void store_notify(struct store *s)
{
	struct pm_error ignored = {0};

	if (s->db->kind != DB_POSTGRES)
		return;
	pthread_mutex_lock(&s->lock);
	s->db->ops->exec(s->db, "NOTIFY " STORE_CHANNEL, &ignored);
	pthread_mutex_unlock(&s->lock);
}

enum pm_status store_listen(struct store *s, struct store_listener **out, struct pm_error *err)
{
	return db_listener_open(s->db, STORE_CHANNEL, (struct db_listener **)out, err);
}

int store_listen_wait(struct store_listener *l, double seconds)
{
	return db_listener_wait((struct db_listener *)l, seconds);
}

void store_listen_close(struct store_listener *l)
{
	db_listener_close((struct db_listener *)l);
}
