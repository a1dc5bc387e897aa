/* store_datasets.c on either back end: datasets stored packed in chunks
 * read back as the same dataset (one chunk or many); the chunks go with
 * their dataset; a damaged or missing chunk is PM_ERR_INTERNAL; a
 * database of schema version 4, whose datasets are JSON text, upgrades
 * with them readable. argv[1]: an empty PostgreSQL database
 * (tests/pg_suite.sh); else a data directory of its own. */
#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdlib.h>

#include "random_table.h"
#include "store.h"
#include "test_data.h"

static char root[] = "/tmp/pmaxent_dsets_XXXXXX";
static char where[4096];

static int is_pg(void)
{
	return !strncmp(where, "postgres", 8);
}

/* Runs sql on the database behind the store, outside it; the first
 * column of the last row as an integer (-1 on error). */
static long long raw_sql(const char *sql)
{
	long long v = 0;

	if (is_pg()) {
		PGconn *c = PQconnectdb(where);
		PGresult *r = PQexec(c, sql);
		ExecStatusType st = PQresultStatus(r);

		v = st == PGRES_TUPLES_OK && PQntuples(r)	      ? atoll(PQgetvalue(r, 0, 0))
		    : st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK ? 0
								      : -1;
		if (v < 0)
			fprintf(stderr, "%s: %s\n", sql, PQerrorMessage(c));
		PQclear(r);
		PQfinish(c);
	} else {
		char path[4200];
		sqlite3 *db;
		sqlite3_stmt *st = NULL;

		snprintf(path, sizeof path, "%s/pmaxent.db", where);
		CHECK(sqlite3_open(path, &db) == SQLITE_OK);
		for (const char *p = sql; v >= 0 && p && *p;) {
			if (sqlite3_prepare_v2(db, p, -1, &st, &p) != SQLITE_OK) {
				fprintf(stderr, "%s: %s\n", sql, sqlite3_errmsg(db));
				v = -1;
				break;
			}
			while (st && sqlite3_step(st) == SQLITE_ROW)
				v = sqlite3_column_int64(st, 0);
			sqlite3_finalize(st);
		}
		sqlite3_close(db);
	}
	return v;
}

static struct store *open_store(void)
{
	struct pm_error err = {0};
	struct store *s = NULL;

	if (store_open(where, &s, &err))
		fprintf(stderr, "store_open: %s\n", err.message);
	CHECK(s != NULL);
	return s;
}

static char *text_of(const struct dataset *ds)
{
	json_t *j = codec_dataset_json(ds);
	char *t = j ? json_dumps(j, JSON_COMPACT) : NULL;

	json_decref(j);
	return t;
}

/* ds put as id and read back through the cache: the same JSON text. */
static void put_and_read(struct store *s, const char *id, const struct dataset *ds)
{
	struct pm_error err = {0};
	const struct dataset *back = NULL;
	char *a = text_of(ds), *b;

	CHECK(store_dataset_put(s, id, "t1", "{\"s\":1}", ds, &err) == PM_OK);
	CHECK(store_dataset_parsed(s, id, "t1", &back, &err) == PM_OK);
	b = back ? text_of(back) : NULL;
	CHECK(a && b && !strcmp(a, b));
	store_dataset_release(s, back);
	CHECK(store_dataset_parsed(s, id, "t2", &back, &err) == PM_ERR_NOT_FOUND);
	free(a);
	free(b);
}

static long long chunks_of(const char *id)
{
	char sql[256];

	snprintf(sql, sizeof sql, "SELECT count(*) FROM dataset_chunks WHERE dataset_id = '%s'",
		 id);
	return raw_sql(sql);
}

static void test_round_trips(struct store *s)
{
	static const char *const files[] = {"codec_small.json", "codec_published.json",
					    "codec_numbers.json"};
	struct pm_error err = {0};
	struct store_row r = {0};
	uint64_t rng = 5;
	struct dataset *ds;
	char id[32];

	for (size_t i = 0; i < 3; i++) {
		ds = data_dataset(files[i]);
		snprintf(id, sizeof id, "ds_file%zu", i);
		if (ds)
			put_and_read(s, id, ds);
		dataset_destroy(ds);
	}
	CHECK(chunks_of("ds_file0") == 1);
	/* the summary as given; the body of a packed dataset is "" */
	CHECK(store_dataset_get(s, "ds_file0", "t1", 1, &r, &err) == PM_OK);
	CHECK_STR(r.summary, "{\"s\":1}");
	CHECK_STR(r.body, "");
	store_row_finish(&r);
	/* many chunks: 48 bytes each */
	store_chunk_limit(s, 48);
	for (int i = 0; i < 5; i++) {
		ds = random_dataset(&rng);
		snprintf(id, sizeof id, "ds_rand%d", i);
		put_and_read(s, id, ds);
		dataset_destroy(ds);
	}
	CHECK(chunks_of("ds_rand0") > 1);
	ds = random_dataset(&rng);
	CHECK(store_dataset_put(s, "ds_rand0", "t1", "{}", ds, &err) == PM_ERR_CONFLICT);
	dataset_destroy(ds);
	store_chunk_limit(s, STORE_CHUNK_BYTES);
}

/* A deleted dataset's chunks go with it: its id can be stored again. */
static void test_delete(struct store *s)
{
	struct pm_error err = {0};
	uint64_t rng = 9;
	struct dataset *ds = random_dataset(&rng);
	long long n = chunks_of("ds_rand1");

	CHECK(n > 1);
	CHECK(store_dataset_delete(s, "ds_rand1", "t1", &err) == PM_OK);
	CHECK(chunks_of("ds_rand1") == 0);
	store_chunk_limit(s, 16);
	CHECK(store_dataset_put(s, "ds_rand1", "t1", "{}", ds, &err) == PM_OK);
	CHECK(chunks_of("ds_rand1") > n);
	store_chunk_limit(s, STORE_CHUNK_BYTES);
	dataset_destroy(ds);
}

/* A chunk damaged or missing in the database: an error, not a crash. */
static void test_damage(struct store *s)
{
	const struct dataset *ds = NULL;
	struct pm_error err = {0};

	store_cache_limit(s, 0); /* every lookup reads */
	CHECK(raw_sql(is_pg() ? "UPDATE dataset_chunks SET data = '\\x504d445301' "
				"WHERE dataset_id = 'ds_rand2' AND seq = 0"
			      : "UPDATE dataset_chunks SET data = X'504d445301' "
				"WHERE dataset_id = 'ds_rand2' AND seq = 0") == 0);
	CHECK(store_dataset_parsed(s, "ds_rand2", "t1", &ds, &err) == PM_ERR_INTERNAL && !ds);
	CHECK_CONTAINS(err.message, "the stored dataset ds_rand2 is unreadable: the packed");
	CHECK(raw_sql("DELETE FROM dataset_chunks WHERE dataset_id = 'ds_rand3' AND seq = 1") == 0);
	CHECK(store_dataset_parsed(s, "ds_rand3", "t1", &ds, &err) == PM_ERR_INTERNAL && !ds);
	CHECK_CONTAINS(err.message, "chunk 1 is missing");
	store_cache_limit(s, STORE_CACHE_BYTES);
}

/* Schema version 4 (before the chunks): the same database with the
 * chunks (and version 6's tenant tables) taken out, a dataset as JSON text in it. */
static void test_upgrade(struct store **sp)
{
	struct dataset *ds = data_dataset("codec_small.json");
	char *text = ds ? text_of(ds) : NULL;
	const struct dataset *back = NULL;
	struct pm_error err = {0};
	char *again;

	CHECK(store_dataset_insert(*sp, "ds_v4", "t1", "{\"v\":4}", text, &err) == PM_OK);
	store_close(*sp);
	/* back to version 4: without what versions 5, 6 and 7 added */
	CHECK(raw_sql("DROP TABLE analysis_texts; ALTER TABLE analyses DROP COLUMN result_len;"
		      "ALTER TABLE analyses DROP COLUMN request_len;"
		      "ALTER TABLE analyses DROP COLUMN result_tag;"
		      "ALTER TABLE analyses DROP COLUMN result_summary;"
		      "DROP TABLE tenant_turns; DROP TABLE store_secrets;"
		      "ALTER TABLE datasets DROP COLUMN bytes;"
		      "DROP TABLE dataset_chunks; ALTER TABLE datasets DROP COLUMN chunks") == 0);
	CHECK(raw_sql(is_pg() ? "UPDATE pmaxent_schema SET version = 4; SELECT max(version) "
				"FROM pmaxent_schema"
			      : "PRAGMA user_version = 4; PRAGMA user_version") == 4);
	*sp = open_store();
	CHECK(raw_sql(is_pg() ? "SELECT max(version) FROM pmaxent_schema"
			      : "PRAGMA user_version") == 7);
	CHECK(store_dataset_parsed(*sp, "ds_v4", "t1", &back, &err) == PM_OK);
	again = back ? text_of(back) : NULL;
	CHECK(text && again && !strcmp(text, again));
	store_dataset_release(*sp, back);
	/* the packed ones stored before the downgrade lost their chunks
	 * with the table: unreadable, never misread */
	CHECK(store_dataset_parsed(*sp, "ds_file0", "t1", &back, &err) == PM_ERR_INTERNAL);
	put_and_read(*sp, "ds_after", ds);
	free(text);
	free(again);
	dataset_destroy(ds);
}

int main(int argc, char **argv)
{
	struct store *s;

	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(where, sizeof where, "%s", argc > 1 ? argv[1] : root);
	if (!(s = open_store()))
		return check_done();
	test_round_trips(s);
	test_delete(s);
	test_damage(s);
	test_upgrade(&s);
	store_close(s);
	snprintf(where, sizeof where, "rm -rf '%s'", root);
	CHECK(system(where) == 0);
	return check_done();
}
