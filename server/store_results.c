/*
 * An analysis's result, stored so that reading it stays cheap whatever
 * its size (schema version 6, issue 36): the text in chunks of
 * STORE_RESULT_CHUNK bytes (result_chunks), and on the row its length,
 * its tag (a hash of the text, part of the ETag) and its summary (the
 * result without posterior, rules, statements and risk). A GET then
 * streams the chunks one at a time, a 304 reads the row alone, and a
 * summary never touches the chunks. A result stored before version 6
 * is in the row's result column, and reads as before.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store_internal.h"

/* The row without its request and result (columns as Q_AN_GET's), then
 * the texts' lengths, the result's tag and summary, and EXTRA. */
#define HEAD(EXTRA)                                                                                \
	"SELECT seq, id, tenant, dataset_id, status, NULL, NULL, problem,"                         \
	" attempts, created, updated, crashes, progress, request_len, result_len, result_tag,"     \
	" result_summary" EXTRA " FROM analyses"                                                   \
	" WHERE id = ?1 AND (CAST(?2 AS TEXT) IS NULL OR tenant = CAST(?2 AS TEXT))"
#define FIRST(PART)                                                                                \
	", (SELECT data FROM analysis_texts t WHERE t.analysis_id = analyses.id"                   \
	" AND t.part = " PART " AND t.seq = 0)"

const char *const store_result_sql[Q_COUNT - Q_RS_SUCCEED] = {
    /* ?1 id, ?2 owner, ?3 attempt, ?4 length, ?5 tag, ?6 summary, ?7 now:
     * the compare-and-set of store_job_finish, to succeeded */
    [Q_RS_SUCCEED - Q_RS_SUCCEED] =
	"UPDATE analyses SET status = 'succeeded', result = NULL, problem = NULL,"
	" result_len = ?4, result_tag = CAST(?5 AS TEXT), result_summary = CAST(?6 AS TEXT),"
	" owner = NULL, lease_until = NULL, progress = NULL, updated = ?7"
	" WHERE id = ?1 AND owner = ?2 AND attempts = ?3 AND status = 'running'",
    [Q_RS_REQUEST_LEN - Q_RS_SUCCEED] = "UPDATE analyses SET request_len = ?2 WHERE id = ?1",
    [Q_RS_CHUNK_PUT - Q_RS_SUCCEED] =
	"INSERT INTO analysis_texts(analysis_id, part, seq, data) VALUES (?1, ?2, ?3, ?4)",
    [Q_RS_CHUNK_GET - Q_RS_SUCCEED] =
	"SELECT data FROM analysis_texts WHERE analysis_id = ?1 AND part = ?2 AND seq = ?3",
    [Q_RS_HEAD - Q_RS_SUCCEED] = HEAD(""),
    /* the same with the first chunk of each text: a small analysis (the
     * usual case) in one query */
    [Q_RS_HEAD_FIRST - Q_RS_SUCCEED] = HEAD(FIRST("0") FIRST("1")),
};
const int store_result_params[Q_COUNT - Q_RS_SUCCEED] = {
    [Q_RS_SUCCEED - Q_RS_SUCCEED] = 7,	 [Q_RS_REQUEST_LEN - Q_RS_SUCCEED] = 2,
    [Q_RS_CHUNK_PUT - Q_RS_SUCCEED] = 4, [Q_RS_CHUNK_GET - Q_RS_SUCCEED] = 3,
    [Q_RS_HEAD - Q_RS_SUCCEED] = 2,	 [Q_RS_HEAD_FIRST - Q_RS_SUCCEED] = 2,
};

void store_text_tag(const char *text, size_t len, char out[STORE_TAG_SIZE])
{
	snprintf(out, STORE_TAG_SIZE, "%016" PRIx64, pm_hash(PM_HASH_INIT, text, len));
}

/* The chunks of text under id's part (in the caller's transaction). */
static enum pm_status put_chunks(struct store *s, const char *id, enum store_part part,
				 const char *text, size_t len, struct pm_error *err)
{
	enum pm_status ret = PM_OK;
	struct db_stmt *st = NULL;

	for (size_t at = 0, k = 0; !ret && at < len; at += STORE_RESULT_CHUNK, k++) {
		if ((ret = store_prep(s, Q_RS_CHUNK_PUT, &st, err)))
			break;
		store_bind_str(s, st, 1, id);
		store_bind_int(s, st, 2, part);
		store_bind_int(s, st, 3, (int64_t)k);
		s->db->ops->bind_blob(st, 4, text + at,
				      len - at < STORE_RESULT_CHUNK ? len - at
								    : STORE_RESULT_CHUNK);
		ret = store_run(s, st, NULL, err);
	}
	return ret;
}

enum pm_status store_analysis_succeed(struct store *s, const char *id, const char *owner,
				      int attempt, const char *text, size_t len,
				      const char *summary, struct pm_error *err)
{
	struct db_stmt *st = NULL;
	char tag[STORE_TAG_SIZE];
	enum pm_status ret = store_write_begin(s, Q_RS_SUCCEED, &st, err);
	int changes = 0;

	store_text_tag(text, len, tag);
	if (!ret) {
		store_bind_str(s, st, 1, id);
		store_bind_str(s, st, 2, owner);
		store_bind_int(s, st, 3, attempt);
		store_bind_int(s, st, 4, (int64_t)len);
		store_bind_str(s, st, 5, tag);
		store_bind_str(s, st, 6, summary);
		store_bind_int(s, st, 7, (int64_t)time(NULL));
		ret = store_run(s, st, &changes, err);
		st = NULL;
	}
	if (!ret && !changes)
		ret = error_set(err, PM_ERR_CONFLICT, "",
				"job \"%s\" is no longer run by this attempt (%d)", id, attempt);
	if (!ret)
		ret = put_chunks(s, id, STORE_RESULT, text, len, err);
	return store_write_end(s, st, ret, err);
}

enum pm_status store_request_put(struct store *s, const char *id, const char *text,
				 struct pm_error *err)
{
	struct db_stmt *st = NULL;
	size_t len = strlen(text);
	enum pm_status ret = store_prep(s, Q_RS_REQUEST_LEN, &st, err);

	if (!ret) {
		store_bind_str(s, st, 1, id);
		store_bind_int(s, st, 2, (int64_t)len);
		ret = store_run(s, st, NULL, err);
	}
	return ret ? ret : put_chunks(s, id, STORE_REQUEST, text, len, err);
}

/* The head's columns past the row's (Q_RS_HEAD). */
static enum pm_status read_meta(struct store *s, struct db_stmt *st, int first,
				struct store_result *m, struct pm_error *err)
{
	const char *tag = s->db->ops->col_text(st, 15), *status = s->db->ops->col_text(st, 4);

	m->request_len = s->db->ops->col_text(st, 13) ? s->db->ops->col_int64(st, 13) : -1;
	m->len = s->db->ops->col_text(st, 14) ? s->db->ops->col_int64(st, 14) : -1;
	snprintf(m->tag, sizeof m->tag, "%s", tag ? tag : "");
	m->legacy = m->request_len < 0 || (m->len < 0 && status && !strcmp(status, "succeeded"));
	if (store_col_str(s, st, 16, &m->summary))
		return error_set(err, PM_ERR_NOMEM, "", "out of memory reading an analysis");
	for (int part = 0; first && part < 2; part++) {
		size_t n = 0;
		const void *p = s->db->ops->col_blob(st, 17 + part, &n);

		if (!p)
			continue;
		if (!(m->first[part] = malloc(n + 1)))
			return error_set(err, PM_ERR_NOMEM, "",
					 "out of memory reading an analysis");
		memcpy(m->first[part], p, n);
		m->first[part][n] = 0;
		m->first_len[part] = n;
	}
	return PM_OK;
}

enum pm_status store_analysis_head(struct store *s, const char *id, const char *tenant, int first,
				   struct store_row *row, struct store_result *meta,
				   struct pm_error *err)
{
	struct db_stmt *st = NULL;
	enum pm_status ret;
	int found = 0;

	memset(row, 0, sizeof *row);
	memset(meta, 0, sizeof *meta);
	pthread_mutex_lock(&s->lock);
	ret = store_prep(s, first ? Q_RS_HEAD_FIRST : Q_RS_HEAD, &st, err);
	if (!ret) {
		store_bind_str(s, st, 1, id);
		store_bind_str(s, st, 2, tenant);
		ret = s->db->ops->step(st, &found, err);
	}
	if (!ret && !found)
		ret = error_set(err, PM_ERR_NOT_FOUND, "", "no analysis \"%s\"", id);
	if (!ret && store_read_analysis(s, st, row))
		ret = error_set(err, PM_ERR_NOMEM, "", "out of memory reading an analysis");
	if (!ret)
		ret = read_meta(s, st, first, meta, err);
	if (st)
		store_release(s, st);
	pthread_mutex_unlock(&s->lock);
	if (ret) {
		store_row_finish(row);
		store_result_finish(meta);
	}
	return ret;
}

void store_result_finish(struct store_result *m)
{
	if (!m)
		return;
	free(m->summary);
	free(m->first[0]);
	free(m->first[1]);
	memset(m, 0, sizeof *m);
}

enum pm_status store_text_chunk(struct store *s, const char *id, enum store_part part, int64_t seq,
				char **out, size_t *len, struct pm_error *err)
{
	struct db_stmt *st = NULL;
	enum pm_status ret;
	const void *p = NULL;
	size_t n = 0;
	int row = 0;

	*out = NULL;
	*len = 0;
	pthread_mutex_lock(&s->lock);
	ret = store_prep(s, Q_RS_CHUNK_GET, &st, err);
	if (!ret) {
		s->db->ops->binary_results(st); /* its one column is the chunk */
		store_bind_str(s, st, 1, id);
		store_bind_int(s, st, 2, part);
		store_bind_int(s, st, 3, seq);
		ret = s->db->ops->step(st, &row, err);
	}
	if (!ret && row)
		p = s->db->ops->col_blob(st, 0, &n);
	if (!ret && !row)
		ret = error_set(err, PM_ERR_NOT_FOUND, "", "analysis %s: no chunk %lld", id,
				(long long)seq);
	else if (!ret && !(*out = malloc(n + 1)))
		ret = error_set(err, PM_ERR_NOMEM, "", "out of memory reading an analysis");
	if (!ret) {
		if (n)
			memcpy(*out, p, n);
		(*out)[n] = 0;
		*len = n;
	}
	if (st)
		store_release(s, st);
	pthread_mutex_unlock(&s->lock);
	return ret;
}

enum pm_status store_text_read(struct store *s, const char *id, enum store_part part, int64_t len,
			       char **out, struct pm_error *err)
{
	size_t have = 0, n;
	char *text = malloc((size_t)len + 1), *chunk;
	enum pm_status ret =
	    text ? PM_OK : error_set(err, PM_ERR_NOMEM, "", "out of memory reading a result");

	for (int64_t k = 0; !ret && (int64_t)have < len; k++) {
		if ((ret = store_text_chunk(s, id, part, k, &chunk, &n, err)))
			break;
		if (have + n > (size_t)len)
			ret = error_set(err, PM_ERR_INTERNAL, "",
					"analysis %s: result longer than stored", id);
		else
			memcpy(text + have, chunk, n);
		have += n;
		free(chunk);
	}
	if (ret) {
		free(text);
		text = NULL;
	} else {
		text[len] = 0;
	}
	*out = text;
	return ret;
}

enum pm_status store_texts_load(struct store *s, struct store_row *row, struct pm_error *err)
{
	struct store_row head;
	struct store_result m;
	enum pm_status ret = store_analysis_head(s, row->id, NULL, 0, &head, &m, err);

	if (!ret && !row->request && m.request_len >= 0)
		ret = store_text_read(s, row->id, STORE_REQUEST, m.request_len, &row->request, err);
	if (!ret && !row->result && m.len >= 0)
		ret = store_text_read(s, row->id, STORE_RESULT, m.len, &row->result, err);
	store_row_finish(&head);
	store_result_finish(&m);
	return ret;
}
