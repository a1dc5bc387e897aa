/*
 * A stored analysis sent as it is read (issue 36: reads stay cheap
 * whatever the size): the response is a few pieces, some in memory (the
 * envelope, the keys between) and some in the store (the request's and
 * the result's chunks, store_results.c), and libmicrohttpd asks for it
 * in order as the client reads. Only one chunk is held at a time, so ten
 * clients reading a 60 MB result hold ten chunks, not ten results; a
 * client that reads slowly holds one chunk for as long.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "http_internal.h"

/* libmicrohttpd's MHD_CONTENT_READER_END_WITH_ERROR */
#define READER_ERROR ((ssize_t)-2)

/* One piece of the body: text in memory, or a stored part of len bytes. */
struct piece {
	const char *mem;
	int stored;
	enum store_part part;
	uint64_t len;
};

struct stream {
	struct store *store;
	char id[HTTP_ID_SIZE];
	char *head;    /* owned: the envelope */
	char *request; /* owned: the request when it came whole with the head */
	struct piece p[6];
	size_t n;
	/* the chunk in hand */
	char *chunk;
	size_t chunk_len;
	enum store_part chunk_part;
	int64_t chunk_seq;
};

static void stream_free(void *ctx)
{
	struct stream *s = ctx;

	free(s->chunk);
	free(s->head);
	free(s->request);
	free(s);
}

/* The chunk of part holding byte off, in hand; -1 when the store has
 * none of the expected size (the analysis was deleted meanwhile). */
static int chunk_at(struct stream *s, enum store_part part, uint64_t off, uint64_t len)
{
	int64_t seq = (int64_t)(off / STORE_RESULT_CHUNK);
	uint64_t want = len - (uint64_t)seq * STORE_RESULT_CHUNK;
	struct pm_error err = {0};

	if (s->chunk && s->chunk_part == part && s->chunk_seq == seq)
		return 0;
	free(s->chunk);
	s->chunk = NULL;
	if (store_text_chunk(s->store, s->id, part, seq, &s->chunk, &s->chunk_len, &err))
		return -1;
	s->chunk_part = part;
	s->chunk_seq = seq;
	return s->chunk_len == (want < STORE_RESULT_CHUNK ? want : STORE_RESULT_CHUNK) ? 0 : -1;
}

static ssize_t stream_read(void *ctx, uint64_t pos, char *buf, size_t max)
{
	struct stream *s = ctx;
	size_t i = 0, n;
	const char *from;
	uint64_t off = pos;

	while (i < s->n && off >= s->p[i].len)
		off -= s->p[i++].len;
	if (i == s->n)
		return READER_ERROR; /* past the end: never asked by MHD */
	if (s->p[i].stored) {
		if (chunk_at(s, s->p[i].part, off, s->p[i].len))
			return READER_ERROR;
		from = s->chunk + off % STORE_RESULT_CHUNK;
		n = s->chunk_len - off % STORE_RESULT_CHUNK;
	} else {
		from = s->p[i].mem + off;
		n = (size_t)(s->p[i].len - off);
	}
	n = n < max ? n : max;
	memcpy(buf, from, n);
	return (ssize_t)n;
}

static void add(struct stream *s, const char *mem, int stored, enum store_part part, uint64_t len)
{
	if (len)
		s->p[s->n++] = (struct piece){mem, stored, part, len};
}

/* The body whole in memory, when the head brought every text whole: no
 * store read while it is sent. -1 (a 500 in res) out of memory. */
static int respond_whole(struct http_response *res, const struct stream *s, uint64_t total)
{
	char *buf = malloc(total + 1);
	size_t at = 0;

	if (!buf)
		return http_oom(res);
	for (size_t i = 0; i < s->n; i++) {
		const char *from = s->p[i].stored ? s->chunk : s->p[i].mem;

		memcpy(buf + at, from, s->p[i].len);
		at += s->p[i].len;
	}
	http_take(res, 200, "application/json", buf, at);
	return 0;
}

int result_stream_respond(struct http_server *h, struct http_response *res, const char *id,
			  char *head, size_t head_len, struct store_result *m)
{
	static const char request_key[] = ",\"request\":", result_key[] = ",\"result\":",
			  tail[] = "}\n";
	struct stream *s = calloc(1, sizeof *s);
	uint64_t total = 0;
	int whole = 1, rc = 0;

	if (!s) {
		free(head);
		return http_oom(res);
	}
	s->store = h->store;
	snprintf(s->id, sizeof s->id, "%s", id);
	s->head = head;
	s->chunk_seq = -1;
	add(s, head, 0, 0, head_len);
	if (m->request_len > 0) {
		add(s, request_key, 0, 0, sizeof request_key - 1);
		if (m->first[0] && m->first_len[0] == (uint64_t)m->request_len) {
			s->request = m->first[0]; /* came whole with the head */
			m->first[0] = NULL;
			add(s, s->request, 0, 0, (uint64_t)m->request_len);
		} else {
			add(s, NULL, 1, STORE_REQUEST, (uint64_t)m->request_len);
			whole = 0;
		}
	}
	if (m->len > 0) {
		add(s, result_key, 0, 0, sizeof result_key - 1);
		add(s, NULL, 1, STORE_RESULT, (uint64_t)m->len);
		if (m->first[1]) { /* its first chunk came with the head */
			s->chunk = m->first[1];
			s->chunk_len = m->first_len[1];
			s->chunk_part = STORE_RESULT;
			s->chunk_seq = 0;
			m->first[1] = NULL;
		}
		whole &= s->chunk && s->chunk_len == (uint64_t)m->len;
	}
	add(s, tail, 0, 0, sizeof tail - 1);
	for (size_t i = 0; i < s->n; i++)
		total += s->p[i].len;
	if (whole) {
		rc = respond_whole(res, s, total);
		stream_free(s);
		return rc;
	}
	http_take(res, 200, "application/json", NULL, 0);
	res->stream_len = total;
	res->stream_read = stream_read;
	res->stream_free = stream_free;
	res->stream_ctx = s;
	return 0;
}
