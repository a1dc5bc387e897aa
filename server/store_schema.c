/*
 * The store's schema and its migrations (store.c opens, this says what
 * each version adds): versioned, run at start in one transaction, in the
 * dialect of the back end (db.h).
 */
#include "store_internal.h"

/* Bumped whenever the schema changes; open refuses newer databases and
 * migrates older ones (schema). */
#define STORE_SCHEMA_VERSION 7

/* The first tables (schema version 2), SEQ the key's type. */
#define SCHEMA(SEQ)                                                                                \
	"CREATE TABLE IF NOT EXISTS datasets("                                                     \
	" seq " SEQ ", id TEXT UNIQUE NOT NULL,"                                                   \
	" tenant TEXT NOT NULL, summary TEXT NOT NULL, body TEXT NOT NULL,"                        \
	" created BIGINT NOT NULL, updated BIGINT NOT NULL);"                                      \
	"CREATE TABLE IF NOT EXISTS analyses("                                                     \
	" seq " SEQ ", id TEXT UNIQUE NOT NULL,"                                                   \
	" tenant TEXT NOT NULL,"                                                                   \
	" dataset_id TEXT NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,"                     \
	" status TEXT NOT NULL CHECK(status IN"                                                    \
	" ('queued','running','succeeded','failed','cancelled')),"                                 \
	" request TEXT, result TEXT, problem TEXT, attempts INTEGER NOT NULL DEFAULT 0,"           \
	" created BIGINT NOT NULL, updated BIGINT NOT NULL,"                                       \
	" crashes INTEGER NOT NULL DEFAULT 0);"                                                    \
	"CREATE INDEX IF NOT EXISTS datasets_tenant ON datasets(tenant, seq);"                     \
	"CREATE INDEX IF NOT EXISTS analyses_tenant ON analyses(tenant, seq);"                     \
	"CREATE INDEX IF NOT EXISTS analyses_dataset ON analyses(dataset_id, seq);" /* unfinished  \
										       analyses at \
										       start-up    \
										       and the     \
										       /metrics    \
										       counts */   \
	"CREATE INDEX IF NOT EXISTS analyses_status ON analyses(status, seq);"

/* 3 -> 4: the queue many nodes share (store_jobs.c): who runs a job,
 * where it is (progress, written at each heartbeat: every node answers
 * the same) and until when its lease holds (now_ms(): milliseconds of the database's
 * clock, a function of both dialects). */
#define LEASES                                                                                     \
	"ALTER TABLE analyses ADD COLUMN owner TEXT;"                                              \
	"ALTER TABLE analyses ADD COLUMN lease_until BIGINT;"                                      \
	"ALTER TABLE sweeps ADD COLUMN owner TEXT;"                                                \
	"ALTER TABLE sweeps ADD COLUMN lease_until BIGINT;"                                        \
	"ALTER TABLE analyses ADD COLUMN progress TEXT;"                                           \
	"ALTER TABLE sweeps ADD COLUMN progress TEXT;"

/* 4 -> 5: datasets packed (dataset_pack) in chunks (store_datasets.c);
 * chunks 0 is a dataset stored before, as the JSON text in body, which
 * still reads. BLOB the binary type of the dialect. */
#define CHUNKS(BLOB)                                                                               \
	"ALTER TABLE datasets ADD COLUMN chunks INTEGER NOT NULL DEFAULT 0;"                       \
	"CREATE TABLE IF NOT EXISTS dataset_chunks("                                               \
	" dataset_id TEXT NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,"                     \
	" seq INTEGER NOT NULL, data " BLOB " NOT NULL, PRIMARY KEY(dataset_id, seq));"

/* 5 -> 6: tenants share fairly (store_tenants.c). tenant_turns: each
 * tenant's last claim, so that the next claim goes to the tenant whose
 * turn is oldest (round robin), not to the oldest job; datasets.bytes:
 * what a dataset takes (its summary and packed chunks), summed for the
 * tenant's storage quota, filled in for datasets stored before; the
 * indexes count a tenant's queued jobs; store_secrets holds the key that
 * seals list cursors, the same on every node. */
#define TENANTS                                                                                    \
	"CREATE TABLE IF NOT EXISTS tenant_turns(tenant TEXT PRIMARY KEY, turn BIGINT NOT NULL);"  \
	"CREATE INDEX IF NOT EXISTS tenant_turns_turn ON tenant_turns(turn);"                      \
	"ALTER TABLE datasets ADD COLUMN bytes BIGINT NOT NULL DEFAULT 0;"                         \
	"UPDATE datasets SET bytes = length(summary) + length(body) + COALESCE((SELECT"            \
	" sum(length(c.data)) FROM dataset_chunks c WHERE c.dataset_id = datasets.id), 0);"        \
	"CREATE INDEX IF NOT EXISTS analyses_tenant_status ON analyses(tenant, status);"           \
	"CREATE INDEX IF NOT EXISTS sweeps_tenant_status ON sweeps(tenant, status);"               \
	"CREATE TABLE IF NOT EXISTS store_secrets(name TEXT PRIMARY KEY, value TEXT NOT NULL);"

/* 6 -> 7: an analysis's request and result in chunks (part 0 and 1),
 * with their lengths, the result's tag and summary on the row
 * (store_results.c); a length NULL is a text stored before, in the row. */
#define TEXTS(BLOB)                                                                                \
	"ALTER TABLE analyses ADD COLUMN request_len BIGINT;"                                      \
	"ALTER TABLE analyses ADD COLUMN result_len BIGINT;"                                       \
	"ALTER TABLE analyses ADD COLUMN result_tag TEXT;"                                         \
	"ALTER TABLE analyses ADD COLUMN result_summary TEXT;"                                     \
	"CREATE TABLE IF NOT EXISTS analysis_texts("                                               \
	" analysis_id TEXT NOT NULL REFERENCES analyses(id) ON DELETE CASCADE,"                    \
	" part INTEGER NOT NULL, seq INTEGER NOT NULL, data " BLOB " NOT NULL,"                    \
	" PRIMARY KEY(analysis_id, part, seq));"

/* The key: SQLite's rowid (AUTOINCREMENT: never reused), PostgreSQL's
 * identity column. */
#define SEQ_SQLITE   "INTEGER PRIMARY KEY AUTOINCREMENT"
#define SEQ_POSTGRES "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"

/* The steps from each schema version to the next, in order, per
 * dialect: versions are run at start, each in the transaction of
 * schema(). */
static const char *const MIGRATIONS[2][STORE_SCHEMA_VERSION] = {
    [DB_SQLITE] =
	{
	    /* 0 -> 2: a new database (then 2 -> 3 and on) */
	    SCHEMA(SEQ_SQLITE),
	    /* 1 -> 2: how often the service died running an analysis
	     * (poison jobs, jobs.c) */
	    "ALTER TABLE analyses ADD COLUMN crashes INTEGER NOT NULL DEFAULT 0",
	    /* 2 -> 3: sweeps (store_sweeps.c) */
	    STORE_SWEEPS_SCHEMA(SEQ_SQLITE),
	    /* 3 -> 4: leases (now_ms() is db_sqlite.c's) */
	    LEASES,
	    CHUNKS("BLOB"),
	    TENANTS,
	    TEXTS("BLOB"),
	},
    /* PostgreSQL came at version 3: a new database only */
    [DB_POSTGRES] =
	{
	    SCHEMA(SEQ_POSTGRES),
	    NULL,
	    STORE_SWEEPS_SCHEMA(SEQ_POSTGRES),
	    LEASES "CREATE OR REPLACE FUNCTION now_ms() RETURNS BIGINT LANGUAGE sql"
		   " AS 'SELECT CAST(floor(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)"
		   " AS BIGINT)';",
	    CHUNKS("BYTEA"),
	    TENANTS,
	    TEXTS("BYTEA"),
	},
};

/* Creates the tables on a new database and migrates an older one;
 * refuses one from a newer pmaxent rather than misreading it. Nodes that
 * start at once take turns (the driver's version lock). */
enum pm_status store_schema(struct store *s, struct pm_error *err)
{
	const char *const *steps = MIGRATIONS[s->db->kind];
	enum pm_status ret = s->db->ops->begin(s->db, 1, err);
	int v = 0;

	if (!ret)
		ret = s->db->ops->get_version(s->db, &v, err);
	if (ret || v == STORE_SCHEMA_VERSION)
		goto out;
	if (v > STORE_SCHEMA_VERSION) {
		ret = error_set(err, PM_ERR_IO, "",
				"database %s has schema version %d; this pmaxent knows %d",
				s->db->where, v, STORE_SCHEMA_VERSION);
		goto out;
	}
	ret = s->db->ops->exec(s->db, steps[v], err); /* a new database: SCHEMA is version 2 */
	for (v = v ? v + 1 : 2; !ret && v < STORE_SCHEMA_VERSION; v++)
		ret = s->db->ops->exec(s->db, steps[v], err);
	if (!ret)
		ret = s->db->ops->set_version(s->db, STORE_SCHEMA_VERSION, err);
out:
	return store_tx_end(s, ret, err);
}
