/*
 * Datasets in the store (see server.h). Since schema version 5 a dataset
 * is its packed form (dataset_pack: dictionaries and columns of codes) cut
 * into chunks of at most s->chunk_bytes in dataset_chunks, with the count
 * in datasets.chunks: a table of millions of records packs to a fraction
 * of its JSON text, which could exceed what either database takes in one
 * value (1 GB), and it reads back without a JSON parser. A dataset
 * stored before (chunks 0) keeps its JSON text in body and still reads:
 * nothing stored is lost by the upgrade. The chunks go with their dataset
 * (ON DELETE CASCADE), in the same transaction.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store_internal.h"

const char *const store_dataset_sql[Q_SW_INSERT - Q_DS_INSERT] = {
    [Q_DS_INSERT - Q_DS_INSERT] =
	"INSERT INTO datasets(id, tenant, summary, body, created, updated, chunks, bytes)"
	" VALUES(?1, ?2, ?3, ?4, ?5, ?5, ?6, ?7)",
    [Q_DS_GET - Q_DS_INSERT] =
	"SELECT seq, id, tenant, summary, CASE WHEN ?3 = 1 THEN body END, created,"
	" updated, chunks FROM datasets"
	" WHERE id = ?1 AND (CAST(?2 AS TEXT) IS NULL OR tenant = CAST(?2 AS TEXT))",
    [Q_DS_LIST - Q_DS_INSERT] =
	"SELECT seq, id, tenant, summary, NULL, created, updated, chunks"
	" FROM datasets WHERE tenant = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
    [Q_DS_EXISTS - Q_DS_INSERT] = "SELECT 1 FROM datasets WHERE id = ?1 AND tenant = ?2",
    [Q_DS_DELETE - Q_DS_INSERT] = "DELETE FROM datasets WHERE id = ?1 AND tenant = ?2",
    [Q_DS_CHUNK_PUT - Q_DS_INSERT] =
	"INSERT INTO dataset_chunks(dataset_id, seq, data) VALUES(?1, ?2, ?3)",
    [Q_DS_CHUNK_GET - Q_DS_INSERT] =
	"SELECT data FROM dataset_chunks WHERE dataset_id = ?1 AND seq = ?2",
};

const int store_dataset_params[Q_SW_INSERT - Q_DS_INSERT] = {
    [Q_DS_INSERT - Q_DS_INSERT] = 7,	[Q_DS_GET - Q_DS_INSERT] = 3,
    [Q_DS_LIST - Q_DS_INSERT] = 3,	[Q_DS_EXISTS - Q_DS_INSERT] = 2,
    [Q_DS_DELETE - Q_DS_INSERT] = 2,	[Q_DS_CHUNK_PUT - Q_DS_INSERT] = 3,
    [Q_DS_CHUNK_GET - Q_DS_INSERT] = 2,
};

int store_read_dataset(struct store *s, struct db_stmt *st, struct store_row *r)
{
	const struct db_ops *op = s->db->ops;

	memset(r, 0, sizeof *r);
	r->seq = op->col_int64(st, 0);
	r->created = op->col_int64(st, 5);
	r->updated = op->col_int64(st, 6);
	return -(store_col_str(s, st, 1, &r->id) || store_col_str(s, st, 2, &r->tenant) ||
		 store_col_str(s, st, 3, &r->summary) || store_col_str(s, st, 4, &r->body));
}

/* ---- writing ---------------------------------------------------------------- */

/* The datasets row (in the caller's transaction): body "" and n chunks
 * of packed bytes for a packed dataset, the JSON text and 0 for the old
 * form; within the tenant's quota (store_tenants.c). */
static enum pm_status insert_row(struct store *s, struct db_stmt *st, const char *id,
				 const char *tenant, const char *summary, const char *body,
				 int64_t chunks, size_t packed, struct pm_error *err)
{
	int64_t bytes = (int64_t)(strlen(summary) + strlen(body) + packed);
	enum pm_status ret = store_tenant_admit_dataset(s, tenant, bytes, err);

	if (ret)
		return ret;
	store_bind_str(s, st, 1, id);
	store_bind_str(s, st, 2, tenant);
	store_bind_str(s, st, 3, summary);
	store_bind_str(s, st, 4, body);
	store_bind_int(s, st, 5, (int64_t)time(NULL));
	store_bind_int(s, st, 6, chunks);
	store_bind_int(s, st, 7, bytes);
	ret = store_run(s, st, NULL, err);
	if (ret == PM_ERR_CONFLICT)
		ret = error_set(err, PM_ERR_CONFLICT, "", "dataset \"%s\" already exists", id);
	return ret;
}

enum pm_status store_dataset_insert(struct store *s, const char *id, const char *tenant,
				    const char *summary, const char *body, struct pm_error *err)
{
	struct db_stmt *st = NULL;
	enum pm_status ret = store_write_begin(s, Q_DS_INSERT, &st, err);

	if (!ret)
		ret = insert_row(s, st, id, tenant, summary, body, 0, 0, err);
	return store_write_end(s, st, ret, err);
}

/* The chunks of blob[0 .. len) under id (in the caller's transaction). */
static enum pm_status insert_chunks(struct store *s, const char *id, const unsigned char *blob,
				    size_t len, struct pm_error *err)
{
	enum pm_status ret = PM_OK;
	struct db_stmt *st = NULL;
	size_t step = s->chunk_bytes;

	for (size_t at = 0, k = 0; !ret && at < len; at += step, k++) {
		if ((ret = store_prep(s, Q_DS_CHUNK_PUT, &st, err)))
			break;
		store_bind_str(s, st, 1, id);
		store_bind_int(s, st, 2, (int64_t)k);
		s->db->ops->bind_blob(st, 3, blob + at, len - at < step ? len - at : step);
		ret = store_run(s, st, NULL, err);
	}
	return ret;
}

enum pm_status store_dataset_put(struct store *s, const char *id, const char *tenant,
				 const char *summary, const struct dataset *ds,
				 struct pm_error *err)
{
	struct db_stmt *st = NULL;
	unsigned char *blob = NULL;
	size_t len = 0, n;
	enum pm_status ret = dataset_pack(ds, &blob, &len, err);

	if (ret)
		return ret;
	n = (len + s->chunk_bytes - 1) / s->chunk_bytes;
	ret = store_write_begin(s, Q_DS_INSERT, &st, err);
	if (!ret)
		ret = insert_row(s, st, id, tenant, summary, "", (int64_t)n, len, err);
	if (!ret)
		ret = insert_chunks(s, id, blob, len, err);
	ret = store_write_end(s, st, ret, err);
	free(blob);
	return ret;
}

void store_chunk_limit(struct store *s, size_t bytes)
{
	s->chunk_bytes = bytes ? bytes : 1;
}

/* ---- reading ---------------------------------------------------------------- */

enum pm_status store_dataset_get(struct store *s, const char *id, const char *tenant, int with_body,
				 struct store_row *out, struct pm_error *err)
{
	return store_get_row(s, Q_DS_GET, "dataset", id, tenant, with_body, out, err);
}

enum pm_status store_dataset_list(struct store *s, const char *tenant, int64_t after, size_t limit,
				  struct store_row **rows, size_t *n, struct pm_error *err)
{
	return store_list_rows(s, Q_DS_LIST, NULL, tenant, after, limit, rows, n, err);
}

enum pm_status store_dataset_delete(struct store *s, const char *id, const char *tenant,
				    struct pm_error *err)
{
	enum pm_status st = store_delete_row(s, Q_DS_DELETE, "dataset", id, tenant, err);

	if (!st)
		store_cache_forget(s->cache, id);
	return st;
}

/* What is stored of one dataset: its packed bytes, or the old JSON text. */
struct stored {
	unsigned char *blob;
	size_t len, cap;
	char *text;
	int64_t chunks;
};

/* The row: its chunk count, and its text when it has no chunks. */
static enum pm_status read_head(struct store *s, const char *id, const char *tenant,
				struct stored *o, struct pm_error *err)
{
	struct db_stmt *st = NULL;
	enum pm_status ret = store_prep(s, Q_DS_GET, &st, err);
	int row = 0;

	if (ret)
		return ret;
	store_bind_str(s, st, 1, id);
	store_bind_str(s, st, 2, tenant);
	store_bind_int(s, st, 3, 1);
	ret = s->db->ops->step(st, &row, err);
	if (!ret && !row)
		ret = error_set(err, PM_ERR_NOT_FOUND, "", "no dataset \"%s\"", id);
	if (!ret)
		o->chunks = s->db->ops->col_int64(st, 7);
	if (!ret && o->chunks == 0 && store_col_str(s, st, 4, &o->text))
		ret = error_set(err, PM_ERR_NOMEM, "", "out of memory reading a dataset");
	store_release(s, st);
	return ret;
}

/* Chunk k appended to o->blob. */
static enum pm_status read_chunk(struct store *s, const char *id, int64_t k, struct stored *o,
				 struct pm_error *err)
{
	struct db_stmt *st = NULL;
	enum pm_status ret = store_prep(s, Q_DS_CHUNK_GET, &st, err);
	const void *p;
	size_t n = 0;
	int row = 0;

	if (ret)
		return ret;
	s->db->ops->binary_results(st); /* its one column is the chunk */
	store_bind_str(s, st, 1, id);
	store_bind_int(s, st, 2, k);
	ret = s->db->ops->step(st, &row, err);
	p = !ret && row ? s->db->ops->col_blob(st, 0, &n) : NULL;
	if (!ret && !p)
		ret = error_set(err, PM_ERR_INTERNAL, "", "dataset %s: chunk %lld is missing", id,
				(long long)k);
	if (!ret && o->len + n > o->cap) {
		size_t cap = o->cap ? o->cap : n;
		unsigned char *grown;

		while (cap < o->len + n)
			cap *= 2;
		if (!(grown = realloc(o->blob, cap)))
			ret = error_set(err, PM_ERR_NOMEM, "", "out of memory reading a dataset");
		else
			o->blob = grown, o->cap = cap;
	}
	if (!ret) {
		memcpy(o->blob + o->len, p, n);
		o->len += n;
	}
	store_release(s, st);
	return ret;
}

/* The row and its chunks in one read snapshot, under the store's lock. */
static enum pm_status read_stored(struct store *s, const char *id, const char *tenant,
				  struct stored *o, struct pm_error *err)
{
	enum pm_status ret;

	pthread_mutex_lock(&s->lock);
	ret = s->db->ops->begin(s->db, 0, err);
	if (!ret)
		ret = read_head(s, id, tenant, o, err);
	for (int64_t k = 0; !ret && k < o->chunks; k++)
		ret = read_chunk(s, id, k, o, err);
	ret = store_tx_end(s, ret, err);
	pthread_mutex_unlock(&s->lock);
	return ret;
}

/* About the bytes ds takes: its per-record, per-tuple and per-bucket
 * arrays (the strings are few beside them). */
static size_t footprint(const struct dataset *ds)
{
	size_t cells = ds->bq_off[ds->n_groups] + ds->bs_off[ds->n_groups];

	return ds->n_records * 3 * sizeof(uint32_t) +
	       ds->n_tuples * (2 * ds->n_attrs + 1) * sizeof(uint32_t) +
	       cells * 2 * sizeof(uint32_t) + ds->n_groups * 64;
}

/* The dataset of what was stored. */
static enum pm_status decode(const char *id, const struct stored *o, struct dataset **out,
			     size_t *bytes, struct pm_error *err)
{
	struct pm_error why = {0};
	json_t *j = NULL;

	if (o->chunks) {
		dataset_unpack(o->blob, o->len, out, &why);
		*bytes = *out ? footprint(*out) : 0;
	} else {
		j = o->text ? json_loads(o->text, 0, NULL) : NULL;
		if (j)
			codec_dataset(j, out, &why);
		json_decref(j);
		*bytes = o->text ? strlen(o->text) : 0;
	}
	if (*out)
		return PM_OK;
	if (why.status == PM_ERR_NOMEM)
		return error_set(err, PM_ERR_NOMEM, "", "out of memory reading dataset %s", id);
	return error_set(err, PM_ERR_INTERNAL, "", "the stored dataset %s is unreadable%s%s", id,
			 why.message[0] ? ": " : "", why.message);
}

enum pm_status store_dataset_load(struct store *s, const char *id, const char *tenant,
				  struct dataset **out, size_t *bytes, struct pm_error *err)
{
	struct stored o = {0};
	enum pm_status ret = read_stored(s, id, tenant, &o, err);

	*out = NULL;
	*bytes = 0;
	if (!ret)
		ret = decode(id, &o, out, bytes, err);
	free(o.blob);
	free(o.text);
	return ret;
}
