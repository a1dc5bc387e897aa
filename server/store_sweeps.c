/*
 * Sweeps on SQLite (see server.h): the analyses' table and code
 * (store_internal.h) with the points so far in place of the result.
 */
#include <time.h>

#include "store_internal.h"

const char *const store_sweep_sql[Q_COUNT - Q_SW_INSERT] = {
    [Q_SW_INSERT - Q_SW_INSERT] =
	"INSERT INTO sweeps(id, tenant, dataset_id, status, request, attempts, created, updated)"
	" SELECT ?1, tenant, id, 'queued', ?3, 0, ?4, ?4 FROM datasets WHERE id = ?2 AND tenant = "
	"?5",
    [Q_SW_GET - Q_SW_INSERT] = "SELECT seq, id, tenant, dataset_id, status, request, points,"
			       " problem, attempts, created, updated, crashes FROM sweeps"
			       " WHERE id = ?1 AND (?2 IS NULL OR tenant = ?2)",
    /* A run starts over (no points); succeeded stores ?3 as the points,
     * failed as the problem; cancelled and queued keep the points so far. */
    [Q_SW_MOVE - Q_SW_INSERT] =
	"UPDATE sweeps SET status = ?2, attempts = attempts + (?2 = 'running'),"
	" points = CASE WHEN ?2 = 'running' THEN NULL WHEN ?2 = 'succeeded' THEN ?3"
	" ELSE points END, problem = CASE WHEN ?2 = 'failed' THEN ?3 END, updated = ?4"
	" WHERE id = ?1 AND status IN (?5, ?6, ?7, ?8, ?9)",
    [Q_SW_STATUS - Q_SW_INSERT] = "SELECT status FROM sweeps WHERE id = ?1",
    [Q_SW_DELETE - Q_SW_INSERT] = "DELETE FROM sweeps WHERE id = ?1 AND tenant = ?2",
    [Q_SW_UNFINISHED - Q_SW_INSERT] =
	"SELECT id FROM sweeps WHERE status IN ('queued', 'running')"
	" AND (?1 IS NULL OR (dataset_id = ?1 AND tenant = ?2)) ORDER BY seq",
    [Q_SW_CRASHES - Q_SW_INSERT] =
	"SELECT crashes FROM sweeps WHERE id = ?1 AND status = 'running'",
    [Q_SW_INTERRUPT - Q_SW_INSERT] = "UPDATE sweeps SET status = ?2, crashes = crashes + 1,"
				     " problem = CASE WHEN ?2 = 'failed' THEN ?3 END, updated = ?4"
				     " WHERE id = ?1 AND status = 'running'",
    [Q_SW_POINTS - Q_SW_INSERT] =
	"UPDATE sweeps SET points = ?2, updated = ?3 WHERE id = ?1 AND status = 'running'",
    /* a page of a dataset's sweeps, without their points (up to 1,000
     * each: a page of them could be large; GET the sweep for them) */
    [Q_SW_LIST - Q_SW_INSERT] = "SELECT seq, id, tenant, dataset_id, status, request, NULL,"
				" problem, attempts, created, updated, crashes FROM sweeps"
				" WHERE dataset_id = ?1 AND tenant = ?2 AND seq > ?3"
				" ORDER BY seq LIMIT ?4",
    [Q_SW_COUNTS - Q_SW_INSERT] = "SELECT status, count(*) FROM sweeps GROUP BY status",
};

static const struct store_jobs SWEEPS = {
    Q_SW_INSERT,     Q_SW_GET,	   Q_SW_MOVE,	   Q_SW_STATUS, Q_SW_DELETE,
    Q_SW_UNFINISHED, Q_SW_CRASHES, Q_SW_INTERRUPT, "sweep",
};

enum pm_status store_sweep_insert(struct store *s, const char *id, const char *tenant,
				  const char *dataset_id, const char *request, struct pm_error *err)
{
	return store_job_insert(s, &SWEEPS, id, tenant, dataset_id, request, err);
}

enum pm_status store_sweep_get(struct store *s, const char *id, const char *tenant,
			       struct store_row *out, struct pm_error *err)
{
	return store_job_get(s, &SWEEPS, id, tenant, out, err);
}

enum pm_status store_sweep_transition(struct store *s, const char *id, const char *from,
				      const char *to, const char *text, struct pm_error *err)
{
	return store_job_transition(s, &SWEEPS, id, from, to, text, err);
}

enum pm_status store_sweep_delete(struct store *s, const char *id, const char *tenant,
				  struct pm_error *err)
{
	return store_job_delete(s, &SWEEPS, id, tenant, err);
}

enum pm_status store_sweep_unfinished(struct store *s, const char *dataset_id, const char *tenant,
				      char ***ids, size_t *n, struct pm_error *err)
{
	return store_job_unfinished(s, &SWEEPS, dataset_id, tenant, ids, n, err);
}

enum pm_status store_sweep_interrupted(struct store *s, const char *id, int max_crashes,
				       const char *problem, int *crashes, struct pm_error *err)
{
	return store_job_interrupted(s, &SWEEPS, id, max_crashes, problem, crashes, err);
}

enum pm_status store_sweep_points(struct store *s, const char *id, const char *points,
				  struct pm_error *err)
{
	sqlite3_stmt *st = NULL;
	enum pm_status ret = store_write_begin(s, Q_SW_POINTS, &st, err);
	int changes = 0;

	if (ret)
		goto out;
	store_bind_str(st, 1, id);
	store_bind_str(st, 2, points);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)time(NULL));
	ret = store_run(s, st, &changes, NULL, err);
	if (!ret && !changes)
		ret = error_set(err, PM_ERR_CONFLICT, "", "sweep \"%s\" is not running", id);
out:
	return store_write_end(s, st, ret, err);
}
