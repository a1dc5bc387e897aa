/*
 * Sweeps (see server.h): the analyses' table and code
 * (store_internal.h) with the points so far in place of the result.
 */
#include <time.h>

#include "store_internal.h"

const char *const store_sweep_sql[Q_AN_CLAIM - Q_SW_INSERT] = {
    [Q_SW_INSERT - Q_SW_INSERT] =
	"INSERT INTO sweeps(id, tenant, dataset_id, status, request, attempts, created, updated)"
	" SELECT CAST(?1 AS TEXT), tenant, id, 'queued', CAST(?3 AS TEXT), 0, CAST(?4 AS BIGINT),"
	" CAST(?4 AS BIGINT) FROM datasets WHERE id = ?2 AND tenant = ?5",
    [Q_SW_GET - Q_SW_INSERT] = "SELECT seq, id, tenant, dataset_id, status, request, points,"
			       " problem, attempts, created, updated, crashes, progress FROM sweeps"
			       " WHERE id = ?1 AND (CAST(?2 AS TEXT) IS NULL"
			       " OR tenant = CAST(?2 AS TEXT))",
    /* A run starts over (no points); succeeded stores ?3 as the points,
     * failed as the problem; cancelled and queued keep the points so far. */
    [Q_SW_MOVE - Q_SW_INSERT] =
	"UPDATE sweeps SET status = ?2,"
	" attempts = attempts + CASE WHEN ?2 = 'running' THEN 1 ELSE 0 END,"
	" points = CASE WHEN ?2 = 'running' THEN NULL WHEN ?2 = 'succeeded'"
	" THEN CAST(?3 AS TEXT) ELSE points END,"
	" problem = CASE WHEN ?2 = 'failed' THEN CAST(?3 AS TEXT) END, updated = ?4"
	" WHERE id = ?1 AND status IN (?5, ?6, ?7, ?8, ?9)",
    [Q_SW_STATUS - Q_SW_INSERT] = "SELECT status FROM sweeps WHERE id = ?1",
    [Q_SW_DELETE - Q_SW_INSERT] = "DELETE FROM sweeps WHERE id = ?1 AND tenant = ?2",
    [Q_SW_UNFINISHED - Q_SW_INSERT] =
	"SELECT id FROM sweeps WHERE status IN ('queued', 'running')"
	" AND (CAST(?1 AS TEXT) IS NULL OR (dataset_id = CAST(?1 AS TEXT) AND tenant = ?2))"
	" ORDER BY seq",
    [Q_SW_CRASHES - Q_SW_INSERT] =
	"SELECT crashes FROM sweeps WHERE id = ?1 AND status = 'running'",
    [Q_SW_INTERRUPT - Q_SW_INSERT] = "UPDATE sweeps SET status = ?2, crashes = crashes + 1,"
				     " problem = CASE WHEN ?2 = 'failed' THEN CAST(?3 AS TEXT) END,"
				     " updated = ?4"
				     " WHERE id = ?1 AND status = 'running'",
    /* only by the attempt that owns it (store_job_finish's rule) */
    [Q_SW_POINTS - Q_SW_INSERT] = "UPDATE sweeps SET points = ?2, updated = ?3 WHERE id = ?1"
				  " AND owner = ?4 AND attempts = ?5 AND status = 'running'",
    /* a page of a dataset's sweeps, without their points (up to 1,000
     * each: a page of them could be large; GET the sweep for them) */
    [Q_SW_LIST - Q_SW_INSERT] =
	"SELECT seq, id, tenant, dataset_id, status, request, NULL,"
	" problem, attempts, created, updated, crashes, progress FROM sweeps"
	" WHERE dataset_id = ?1 AND tenant = ?2 AND seq > ?3"
	" ORDER BY seq LIMIT ?4",
    [Q_SW_COUNTS - Q_SW_INSERT] = "SELECT status, count(*) FROM sweeps GROUP BY status",
};

const int store_sweep_params[Q_AN_CLAIM - Q_SW_INSERT] = {
    [Q_SW_INSERT - Q_SW_INSERT] = 5,  [Q_SW_GET - Q_SW_INSERT] = 2,
    [Q_SW_MOVE - Q_SW_INSERT] = 9,    [Q_SW_STATUS - Q_SW_INSERT] = 1,
    [Q_SW_DELETE - Q_SW_INSERT] = 2,  [Q_SW_UNFINISHED - Q_SW_INSERT] = 2,
    [Q_SW_CRASHES - Q_SW_INSERT] = 1, [Q_SW_INTERRUPT - Q_SW_INSERT] = 4,
    [Q_SW_POINTS - Q_SW_INSERT] = 5,  [Q_SW_LIST - Q_SW_INSERT] = 4,
    [Q_SW_COUNTS - Q_SW_INSERT] = 0,
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

enum pm_status store_sweep_points(struct store *s, const char *id, const char *owner, int attempt,
				  const char *points, struct pm_error *err)
{
	struct db_stmt *st = NULL;
	enum pm_status ret = store_write_begin(s, Q_SW_POINTS, &st, err);
	int changes = 0;

	if (ret)
		goto out;
	store_bind_str(s, st, 1, id);
	store_bind_str(s, st, 2, points);
	store_bind_int(s, st, 3, (int64_t)time(NULL));
	store_bind_str(s, st, 4, owner);
	store_bind_int(s, st, 5, attempt);
	ret = store_run(s, st, &changes, err);
	if (!ret && !changes)
		ret = error_set(err, PM_ERR_CONFLICT, "",
				"sweep \"%s\" is not running as attempt %d of %s", id, attempt,
				owner);
out:
	return store_write_end(s, st, ret, err);
}
