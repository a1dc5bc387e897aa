/*
 * The store opened and closed: SQLite in a data directory (made private
 * and locked) or a PostgreSQL database, configured for durability, its
 * schema brought up to date; and the ping of /readyz. store.c says how
 * the store works.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "datadir.h"
#include "store_internal.h"

static enum pm_status exec(struct store *s, const char *sql, struct pm_error *err)
{
	return s->db->ops->exec(s->db, sql, err);
}

/*
 * Durability: synchronous=FULL fsyncs the WAL on every commit. A 201/202
 * answer promises the dataset or analysis exists, and a recorded result is
 * the product of a long solve; with NORMAL a power loss (not a process
 * crash) could silently roll back such acknowledged commits. Writes are
 * few (uploads and state changes, not polls), so one fsync each is cheap.
 * (PostgreSQL's default, synchronous_commit on, is the same promise.)
 */
static enum pm_status configure(struct store *s, struct pm_error *err)
{
	enum pm_status ret = PM_OK;

	/* The first statement reads the file: a corrupt one fails here. */
	if (s->db->kind == DB_SQLITE)
		ret = exec(s, "PRAGMA journal_mode = WAL", err);
	if (!ret && s->db->kind == DB_SQLITE)
		ret = exec(s, "PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON", err);
	if (!ret)
		ret = store_schema(s, err);
	if (!ret)
		ret = store_tenant_key(s, err);
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

/* The SQLite database of data directory dir: the directory made private
 * and locked (one server per directory), then the file. */
static enum pm_status open_sqlite(struct store *s, const char *dir, struct pm_error *err)
{
	enum pm_status ret;

	if (strlen(dir) > 4096)
		return error_set(err, PM_ERR_INPUT, "data_dir", "is longer than 4096 bytes");
	if (!(s->path = malloc(strlen(dir) + sizeof "/pmaxent.db")))
		return error_set(err, PM_ERR_NOMEM, "", "out of memory opening the store");
	sprintf(s->path, "%s/pmaxent.db", dir);
	if ((ret = datadir_open(dir, &s->lock_fd, err)) || (ret = private_files(s, err)))
		return ret;
	return db_sqlite_open(s->path, &s->db, err);
}

enum pm_status store_open(const char *where, struct store **out, struct pm_error *err)
{
	struct store *s;
	enum pm_status ret;

	*out = NULL;
	if (!where || !*where)
		return error_set(err, PM_ERR_INPUT, "data_dir", "is empty; name a data directory");
	s = calloc(1, sizeof *s);
	if (!s)
		return error_set(err, PM_ERR_NOMEM, "", "out of memory opening the store");
	pthread_mutex_init(&s->lock, NULL);
	s->lock_fd = -1;
	s->chunk_bytes = STORE_CHUNK_BYTES;
	if (!(s->cache = store_cache_create(STORE_CACHE_BYTES)))
		ret = error_set(err, PM_ERR_NOMEM, "", "out of memory opening the store");
	else if (db_is_pg(where))
		ret = db_pg_open(where, &s->db, err);
	else
		ret = open_sqlite(s, where, err);
	if (!ret)
		ret = configure(s, err);
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
	db_close(s->db); /* its statements with it */
	if (s->lock_fd >= 0)
		close(s->lock_fd); /* releases the flock */
	pthread_mutex_destroy(&s->lock);
	store_cache_destroy(s->cache);
	free(s->path);
	free(s);
}

/* The lock is taken with a deadline: /readyz must answer in time even
 * when a long write holds the store, or a lost database holds its call. */
enum pm_status store_ping(struct store *s, double seconds, struct pm_error *err)
{
	struct timespec until;
	enum pm_status ret;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (time_t)seconds;
	until.tv_nsec += (long)((seconds - (double)(time_t)seconds) * 1e9);
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	if (pthread_mutex_timedlock(&s->lock, &until))
		return error_set(err, PM_ERR_BUSY, "store", "the store did not answer within %g s",
				 seconds);
	/* a read of a table: SELECT 1 alone would not touch SQLite's file */
	ret = exec(s, "SELECT count(*) FROM datasets WHERE id = ''", err);
	pthread_mutex_unlock(&s->lock);
	return ret;
}
