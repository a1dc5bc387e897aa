/*
 * Tenants share the store fairly (issue 36): whose turn the next claim
 * is, how much of the queue and of the storage one tenant may hold, and
 * the key that seals list cursors. The checks run inside the writer's
 * transaction, so a check and the write it admits are one: on SQLite
 * there is one writer at a time; on PostgreSQL the writes of one tenant
 * take turns on an advisory lock held until commit, taken before the
 * count is read (each statement of a READ COMMITTED transaction sees what
 * committed before it began), so two nodes cannot both take the last
 * place.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "store_internal.h"

/* The claimed job's tenant had its turn now: a number above every turn
 * so far. Two nodes claiming at once may draw the same number; the tie
 * then goes to the older job, which is still fair. */
#define TURN(T)                                                                                    \
	"INSERT INTO tenant_turns(tenant, turn) SELECT tenant,"                                    \
	" (SELECT COALESCE(max(turn), 0) + 1 FROM tenant_turns) FROM " T " WHERE id = ?1"          \
	" ON CONFLICT(tenant) DO UPDATE SET turn = excluded.turn"

/* The class of pmaxent's advisory locks (the first key of the pair), so
 * that they do not meet another application's in a shared database. */
#define LOCK_CLASS "7036"

const char *const store_tenant_sql[Q_RS_SUCCEED - Q_AN_TURN] = {
    [Q_AN_TURN - Q_AN_TURN] = TURN("analyses"),
    [Q_SW_TURN - Q_AN_TURN] = TURN("sweeps"),
    /* SQLite: the text alone (its write transaction already excludes
     * every other writer) */
    [Q_TN_LOCK - Q_AN_TURN] = "SELECT /*PG: pg_advisory_xact_lock(" LOCK_CLASS ", hashtext(*/"
			      " CAST(?1 AS TEXT) /*PG: ))*/",
    [Q_TN_QUEUED - Q_AN_TURN] =
	"SELECT (SELECT count(*) FROM analyses WHERE tenant = ?1 AND status = 'queued')"
	" + (SELECT count(*) FROM sweeps WHERE tenant = ?1 AND status = 'queued')",
    [Q_TN_USAGE - Q_AN_TURN] = "SELECT count(*), CAST(COALESCE(sum(bytes), 0) AS BIGINT)"
			       " FROM datasets WHERE tenant = ?1",
    [Q_SECRET_PUT - Q_AN_TURN] = "INSERT INTO store_secrets(name, value) VALUES(?1, ?2)"
				 " ON CONFLICT(name) DO NOTHING",
    [Q_SECRET_GET - Q_AN_TURN] = "SELECT value FROM store_secrets WHERE name = ?1",
};

const int store_tenant_params[Q_RS_SUCCEED - Q_AN_TURN] = {
    [Q_AN_TURN - Q_AN_TURN] = 1,    [Q_SW_TURN - Q_AN_TURN] = 1,  [Q_TN_LOCK - Q_AN_TURN] = 1,
    [Q_TN_QUEUED - Q_AN_TURN] = 1,  [Q_TN_USAGE - Q_AN_TURN] = 1, [Q_SECRET_PUT - Q_AN_TURN] = 2,
    [Q_SECRET_GET - Q_AN_TURN] = 1,
};

void store_set_limits(struct store *s, const struct store_limits *l)
{
	pthread_mutex_lock(&s->lock);
	s->limits = *l;
	pthread_mutex_unlock(&s->lock);
}

const unsigned char *store_cursor_key(const struct store *s)
{
	return s->cursor_key;
}

/* Runs the one-row query q on tenant: its first two integer columns
 * (b may be NULL). */
static enum pm_status tenant_row(struct store *s, enum query q, const char *tenant, int64_t *a,
				 int64_t *b, struct pm_error *err)
{
	struct db_stmt *st = NULL;
	enum pm_status ret = store_prep(s, q, &st, err);
	int row = 0;

	*a = 0;
	if (ret)
		return ret;
	store_bind_str(s, st, 1, tenant);
	ret = s->db->ops->step(st, &row, err);
	if (!ret && row) {
		*a = s->db->ops->col_int64(st, 0);
		if (b)
			*b = s->db->ops->col_int64(st, 1);
	}
	store_release(s, st);
	return ret;
}

/* The tenant's writes take turns until this transaction ends (db.h:
 * nothing to do on SQLite). */
static enum pm_status lock_tenant(struct store *s, const char *tenant, struct pm_error *err)
{
	int64_t ignored;

	return tenant_row(s, Q_TN_LOCK, tenant, &ignored, NULL, err);
}

enum pm_status store_tenant_admit_job(struct store *s, const char *tenant, struct pm_error *err)
{
	enum pm_status ret;
	int64_t queued = 0;

	if (!s->limits.queued)
		return PM_OK;
	ret = lock_tenant(s, tenant, err);
	if (!ret)
		ret = tenant_row(s, Q_TN_QUEUED, tenant, &queued, NULL, err);
	if (!ret && queued >= (int64_t)s->limits.queued)
		ret = error_set(err, PM_ERR_BUSY, "queue_per_tenant",
				"this tenant has %lld analyses and sweeps queued, its share of "
				"the queue (--queue-per-tenant %zu); retry when some have started",
				(long long)queued, s->limits.queued);
	return ret;
}

enum pm_status store_tenant_admit_dataset(struct store *s, const char *tenant, int64_t bytes,
					  struct pm_error *err)
{
	const struct store_limits *l = &s->limits;
	enum pm_status ret;
	int64_t n = 0, used = 0;

	if (!l->datasets && !l->bytes)
		return PM_OK;
	ret = lock_tenant(s, tenant, err);
	if (!ret)
		ret = tenant_row(s, Q_TN_USAGE, tenant, &n, &used, err);
	if (ret)
		return ret;
	if (l->datasets && n >= (int64_t)l->datasets)
		return error_set(err, PM_ERR_TOO_LARGE, "tenant_max_datasets",
				 "this tenant stores %lld datasets, its quota "
				 "(--tenant-max-datasets %zu); delete some to store more",
				 (long long)n, l->datasets);
	if (l->bytes && (uint64_t)used + (uint64_t)bytes > l->bytes)
		return error_set(err, PM_ERR_TOO_LARGE, "tenant_max_bytes",
				 "this dataset takes %lld bytes and the tenant's datasets take "
				 "%lld of a quota of %llu (--tenant-max-bytes); delete some to "
				 "store more",
				 (long long)bytes, (long long)used, (unsigned long long)l->bytes);
	return PM_OK;
}

enum pm_status store_tenant_turn(struct store *s, int sweeps, const char *id, struct pm_error *err)
{
	struct db_stmt *st = NULL;
	enum pm_status ret = store_prep(s, sweeps ? Q_SW_TURN : Q_AN_TURN, &st, err);

	if (ret)
		return ret;
	store_bind_str(s, st, 1, id);
	return store_run(s, st, NULL, err);
}

/* A new key as hex text (buf: 2 * STORE_KEY_BYTES + 1). */
static enum pm_status new_key(char *buf, struct pm_error *err)
{
	unsigned char k[STORE_KEY_BYTES];
	size_t got = 0;
	ssize_t n;

	while (got < sizeof k) {
		n = getrandom(k + got, sizeof k - got, 0);
		if (n < 0 && errno != EINTR)
			return error_set(err, PM_ERR_IO, "",
					 "no random bytes for the cursor key: %s", strerror(errno));
		got += n > 0 ? (size_t)n : 0;
	}
	for (size_t i = 0; i < sizeof k; i++)
		snprintf(buf + 2 * i, 3, "%02x", k[i]);
	return PM_OK;
}

/* The hex text of the key into s; PM_ERR_INTERNAL when it is not one. */
static enum pm_status take_key(struct store *s, const char *hex, struct pm_error *err)
{
	unsigned v;

	if (!hex || strlen(hex) != 2 * STORE_KEY_BYTES)
		return error_set(err, PM_ERR_INTERNAL, "", "the store's cursor key is damaged");
	for (size_t i = 0; i < STORE_KEY_BYTES; i++) {
		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return error_set(err, PM_ERR_INTERNAL, "",
					 "the store's cursor key is damaged");
		s->cursor_key[i] = (unsigned char)v;
	}
	return PM_OK;
}

/* Made by whichever node starts first (the others' inserts do nothing),
 * then read by every node. */
enum pm_status store_tenant_key(struct store *s, struct pm_error *err)
{
	char hex[2 * STORE_KEY_BYTES + 1];
	struct db_stmt *st = NULL;
	enum pm_status ret = new_key(hex, err);
	int row = 0;

	if (ret)
		return ret;
	ret = store_write_begin(s, Q_SECRET_PUT, &st, err);
	if (!ret) {
		store_bind_str(s, st, 1, "cursor_key");
		store_bind_str(s, st, 2, hex);
		ret = store_run(s, st, NULL, err);
		st = NULL;
	}
	if (!ret)
		ret = store_prep(s, Q_SECRET_GET, &st, err);
	if (!ret) {
		store_bind_str(s, st, 1, "cursor_key");
		ret = s->db->ops->step(st, &row, err);
	}
	if (!ret)
		ret = take_key(s, row ? s->db->ops->col_text(st, 0) : NULL, err);
	return store_write_end(s, st, ret, err);
}
