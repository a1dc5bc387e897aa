/*
 * The helpers the route handlers (api.c, analyses.c) share to read a
 * request and build a response: headers, media types, problem documents
 * (RFC 9457), JSON and text bodies, the JSON body with its depth limit,
 * ids, times, UTF-8 checks, paging and a growing text buffer. http.c owns
 * the daemon, access control and the sending of the response.
 */
#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include "http_internal.h"

const char *http_header(const struct http_request *r, const char *name)
{
	return MHD_lookup_connection_value(r->con, MHD_HEADER_KIND, name);
}

const char *http_query(const struct http_request *r, const char *name)
{
	for (size_t i = 0; r->target && i < r->target->n_params; i++)
		if (!strcmp(r->target->names[i], name))
			return r->target->values[i];
	return NULL;
}

static int hex_value(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

/*
 * Percent-decodes s[0..n) into a new string (*out, caller frees). 0, or
 * the status: 400 for a malformed escape or a control character, 404 for
 * an escaped '/' when slash_ok is 0. what names the part in the detail.
 */
static unsigned decode_part(const char *s, size_t n, int slash_ok, const char *what, char **out,
			    char *detail, size_t size)
{
	char *d = malloc(n + 1);
	unsigned st = 0;
	size_t k = 0;

	if (!d)
		return snprintf(detail, size, "out of memory"), 500;
	for (size_t i = 0; i < n && !st; i++) {
		unsigned char c = (unsigned char)s[i];
		int hi = i + 2 < n ? hex_value(s[i + 1]) : -1,
		    lo = i + 2 < n ? hex_value(s[i + 2]) : -1;

		if (c == '%' && (hi < 0 || lo < 0)) {
			snprintf(detail, size,
				 "%s has a '%%' that is not followed by two hex digits", what);
			st = 400;
			break;
		}
		int escaped = c == '%';

		if (escaped) {
			c = (unsigned char)(hi * 16 + lo);
			i += 2;
		}
		if (c == '/' && escaped && !slash_ok) {
			snprintf(detail, size,
				 "no resource has an escaped '/' (%%2F) in a path segment");
			st = 404;
		} else if (c < 0x20 || c == 0x7f) {
			snprintf(detail, size, "%s has a control character (byte %u)", what, c);
			st = 400;
		}
		d[k++] = (char)c;
	}
	d[k] = '\0';
	if (st) {
		free(d);
		d = NULL;
	}
	*out = d;
	return st;
}

/* One "name=value" of the query into t. */
static unsigned add_param(struct http_target *t, const char *s, size_t n, char *detail, size_t size)
{
	const char *eq = memchr(s, '=', n);
	size_t nn = eq ? (size_t)(eq - s) : n;
	unsigned st;

	if (t->n_params == HTTP_MAX_PARAMS)
		return snprintf(detail, size, "more than %d query parameters", HTTP_MAX_PARAMS),
		       400;
	if ((st = decode_part(s, nn, 1, "a query parameter name", &t->names[t->n_params], detail,
			      size)))
		return st;
	t->values[t->n_params] = NULL;
	st = decode_part(eq ? eq + 1 : s + n, eq ? n - nn - 1 : 0, 1, "a query parameter value",
			 &t->values[t->n_params], detail, size);
	t->n_params++; /* both owned by t now (finish frees them) */
	if (st)
		return st;
	for (size_t i = 0; i + 1 < t->n_params; i++)
		if (!strcmp(t->names[i], t->names[t->n_params - 1]))
			return snprintf(detail, size, "query parameter '%.64s' is given twice",
					t->names[i]),
			       400;
	return 0;
}

unsigned http_target_parse(const char *raw, struct http_target *t, char *detail, size_t size)
{
	size_t pn = strcspn(raw, "?#");
	const char *q = raw + pn;
	unsigned st;

	memset(t, 0, sizeof *t);
	if (*q == '#' || strchr(q, '#'))
		return snprintf(detail, size, "the request target has a fragment ('#')"), 400;
	if ((st = decode_part(raw, pn, 0, "the path", &t->path, detail, size)))
		return st;
	for (q += *q == '?'; *q; q += *q == '&') {
		size_t n = strcspn(q, "&");

		if (n && (st = add_param(t, q, n, detail, size)))
			return st;
		q += n;
	}
	return 0;
}

void http_target_finish(struct http_target *t)
{
	if (!t)
		return;
	free(t->path);
	for (size_t i = 0; i < t->n_params; i++) {
		free(t->names[i]);
		free(t->values[i]);
	}
	memset(t, 0, sizeof *t);
}

/* Case-insensitive: does the media type at s (up to ';' or ',') equal t? */
static int media_is(const char *s, const char *t)
{
	size_t n;

	while (*s == ' ' || *s == '\t')
		s++;
	n = strcspn(s, ";,");
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	if (t[0] == '+') /* a suffix: "+json" */
		return n > strlen(t) && !strncasecmp(s + n - strlen(t), t, strlen(t));
	return n == strlen(t) && !strncasecmp(s, t, n);
}

enum http_media http_media_type(const struct http_request *r)
{
	const char *ct = http_header(r, MHD_HTTP_HEADER_CONTENT_TYPE);

	if (!ct || !*ct)
		return MEDIA_NONE;
	if (media_is(ct, "application/json") || media_is(ct, "+json"))
		return MEDIA_JSON;
	if (media_is(ct, "text/csv"))
		return MEDIA_CSV;
	return MEDIA_OTHER;
}

int http_wants_csv(const struct http_request *r)
{
	const char *a = http_header(r, MHD_HTTP_HEADER_ACCEPT);

	for (; a && *a; a += strcspn(a, ","), a += *a == ',') {
		if (media_is(a, "text/csv"))
			return 1;
		if (media_is(a, "application/json"))
			return 0; /* listed first: preferred */
	}
	return 0;
}

struct problem_kind {
	unsigned status;
	const char *slug, *title;
};

static const struct problem_kind kinds[] = {
    {400, "bad-request", "Bad request"},
    {401, "unauthorized", "Unauthorized"},
    {403, "forbidden", "Forbidden"},
    {404, "not-found", "Not found"},
    {405, "method-not-allowed", "Method not allowed"},
    {408, "request-timeout", "Request timeout"},
    {409, "conflict", "Conflict"},
    {411, "length-required", "Length required"},
    {413, "content-too-large", "Content too large"},
    {414, "uri-too-long", "URI too long"},
    {415, "unsupported-media-type", "Unsupported media type"},
    {422, "invalid-input", "Invalid input"},
    {429, "too-many-requests", "Too many requests"},
    {431, "request-header-fields-too-large", "Request header fields too large"},
    {503, "unavailable", "Service unavailable"},
    {505, "http-version-not-supported", "HTTP version not supported"},
    {500, "internal", "Internal server error"},
};

static const struct problem_kind *kind_of(unsigned status)
{
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (kinds[i].status == status)
			return &kinds[i];
	return &kinds[sizeof kinds / sizeof kinds[0] - 1];
}

const char *http_reason(unsigned status)
{
	return kind_of(status)->title;
}

/* A JSON string of s with bytes that are not UTF-8 (a path from the
 * client, %FF) replaced by '?': jansson refuses invalid UTF-8. */
static json_t *safe_string(const char *s)
{
	char buf[1024];
	size_t n = strlen(s), at;

	if (n >= sizeof buf)
		n = sizeof buf - 1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	while ((at = http_utf8_invalid_at(buf, n)) < n)
		buf[at] = '?';
	return json_string(buf);
}

/* The problem document (RFC 9457) as JSON; NULL when out of memory. */
static json_t *problem_json(unsigned status, const char *slug, const char *title, const char *field,
			    const char *detail)
{
	char type[96];
	json_t *p;

	snprintf(type, sizeof type, "urn:pmaxent:problem:%s", slug);
	p = json_pack("{s:s, s:s, s:i, s:o}", "type", type, "title", title, "status", (int)status,
		      "detail", safe_string(detail));
	if (p && field && *field)
		json_object_set_new(p, "field", safe_string(field));
	return p;
}

char *http_problem_text(unsigned status, const char *detail)
{
	const struct problem_kind *k = kind_of(status);
	json_t *p = problem_json(status, k->slug, k->title, NULL, detail);
	char *text = p ? json_dumps(p, JSON_COMPACT) : NULL;

	json_decref(p);
	return text;
}

static void set_problem(struct http_response *res, unsigned status, const char *slug,
			const char *title, const char *field, const char *detail)
{
	http_json(res, status, problem_json(status, slug, title, field, detail));
	res->content_type = "application/problem+json";
}

void http_problem(struct http_response *res, unsigned status, const char *field, const char *fmt,
		  ...)
{
	const struct problem_kind *k = kind_of(status);
	char detail[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof detail, fmt, ap);
	va_end(ap);
	set_problem(res, status, k->slug, k->title, field, detail);
}

void http_problem_err(struct http_response *res, const struct pm_error *err)
{
	switch (err->status) {
	case PM_ERR_INPUT:
		http_problem(res, 422, err->field, "%s", err->message);
		break;
	case PM_ERR_INCONSISTENT:
		set_problem(res, 422, "inconsistent-knowledge", "Inconsistent knowledge",
			    err->field, err->message);
		break;
	case PM_ERR_NOT_FOUND:
		http_problem(res, 404, err->field, "%s", err->message);
		break;
	case PM_ERR_CONFLICT:
		http_problem(res, 409, err->field, "%s", err->message);
		break;
	case PM_ERR_BUSY:
		http_problem(res, 503, err->field, "%s", err->message);
		res->retry_after = 5;
		break;
	case PM_ERR_TOO_LARGE:
		http_problem(res, 413, err->field, "%s", err->message);
		break;
	default:
		http_problem(res, 500, err->field, "%s", err->message);
	}
}

void http_take(struct http_response *res, unsigned status, const char *type, char *buf, size_t len)
{
	if (res->stream_free)
		res->stream_free(res->stream_ctx);
	res->stream_free = NULL;
	res->stream_read = NULL;
	res->stream_ctx = NULL;
	res->stream_len = 0;
	free(res->body);
	res->status = status;
	res->content_type = type;
	res->body = buf;
	res->len = buf ? len : 0;
}

void http_text(struct http_response *res, unsigned status, const char *type, const char *text,
	       size_t len)
{
	char *buf = malloc(len + 1);

	if (buf)
		memcpy(buf, text, len);
	http_take(res, buf ? status : 500, type, buf, len);
}

void http_json(struct http_response *res, unsigned status, json_t *j)
{
	char *text = j ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
	size_t n = text ? strlen(text) : 0;
	char *grown = text ? realloc(text, n + 2) : NULL;

	json_decref(j);
	if (!grown) {
		free(text);
		/* out of memory: a bodyless 500 still tells the client */
		http_take(res, 500, "application/problem+json", NULL, 0);
		return;
	}
	grown[n] = '\n'; /* friendlier for curl */
	grown[n + 1] = '\0';
	http_take(res, status, "application/json", grown, n + 1);
}

/* Index of the first byte that nests deeper than max, or n when none:
 * jansson has no depth limit, and deep nesting costs it stack. */
static size_t too_deep_at(const char *s, size_t n, size_t max)
{
	size_t depth = 0;
	int in_string = 0;

	for (size_t i = 0; i < n; i++) {
		if (in_string) {
			if (s[i] == '\\')
				i++;
			else if (s[i] == '"')
				in_string = 0;
		} else if (s[i] == '"') {
			in_string = 1;
		} else if (s[i] == '[' || s[i] == '{') {
			if (++depth > max)
				return i;
		} else if ((s[i] == ']' || s[i] == '}') && depth) {
			depth--;
		}
	}
	return n;
}

int http_body_json(const struct http_request *r, json_t **out, struct http_response *res)
{
	size_t deep = too_deep_at(r->body, r->body_len, HTTP_MAX_DEPTH);
	json_error_t je;

	*out = NULL;
	if (r->body_len == 0) {
		http_problem(res, 400, NULL, "the request body is empty; expected a JSON document");
		return -1;
	}
	if (deep < r->body_len) {
		http_problem(res, 400, NULL,
			     "malformed JSON at byte %zu: nested deeper than %d arrays or objects",
			     deep, HTTP_MAX_DEPTH);
		return -1;
	}
	*out = json_loadb(r->body, r->body_len, JSON_REJECT_DUPLICATES, &je);
	if (*out)
		return 0;
	http_problem(res, 400, NULL, "malformed JSON at line %d, column %d (byte %d): %s", je.line,
		     je.column, je.position, je.text);
	return -1;
}

void http_new_id(char *buf, const char *prefix)
{
	static uint64_t counter;
	unsigned char b[8];
	uint64_t v = 0;
	ssize_t n;

	do
		n = getrandom(b, sizeof b, 0);
	while (n < 0 && errno == EINTR);
	for (size_t i = 0; i < sizeof b; i++)
		v = v << 8 | b[i];
	if (n != (ssize_t)sizeof b) {
		/* no entropy source: unique still, from the clock and a counter */
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		v = ((uint64_t)ts.tv_sec << 30 ^ (uint64_t)ts.tv_nsec) * 0x9E3779B97F4A7C15u +
		    __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
	}
	snprintf(buf, HTTP_ID_SIZE, "%.3s%016" PRIx64, prefix, v);
}

void http_time(int64_t unix_seconds, char *buf, size_t len)
{
	time_t t = (time_t)unix_seconds;
	struct tm tm;

	if (!gmtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, len, "1970-01-01T00:00:00Z");
}

int http_oom(struct http_response *res)
{
	http_problem(res, 500, NULL, "out of memory");
	return -1;
}

void http_unsupported(struct http_response *res, const struct http_request *r, const char *accepted)
{
	const char *ct = http_header(r, "Content-Type");

	if (ct)
		http_problem(res, 415, NULL, "Content-Type '%.100s' is not accepted here; send %s",
			     ct, accepted);
	else
		http_problem(res, 415, NULL, "the request has no Content-Type; send %s", accepted);
}

/* Index of the first byte that is not UTF-8, or n. */
size_t http_utf8_invalid_at(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;

	for (size_t i = 0; i < n;) {
		size_t len = u[i] < 0x80	 ? 1
			     : (u[i] >> 5) == 6	 ? 2
			     : (u[i] >> 4) == 14 ? 3
			     : (u[i] >> 3) == 30 ? 4
						 : 0;
		if (!len || i + len > n || (len == 2 && u[i] < 0xc2))
			return i;
		for (size_t k = 1; k < len; k++)
			if ((u[i + k] & 0xc0) != 0x80)
				return i;
		i += len;
	}
	return n;
}

/* JSON of stored text (written by this service); NULL when unreadable. */
json_t *http_stored_json(const char *text)
{
	return text ? json_loads(text, 0, NULL) : NULL;
}

/* ?limit= of a list: 0, or -1 with a 400 in res. */
static int page_limit(const struct http_request *r, size_t def, size_t max, size_t *limit,
		      struct http_response *res)
{
	const char *l = http_query(r, "limit");
	char *end;
	long long v;

	*limit = def;
	if (!l)
		return 0;
	errno = 0;
	v = strtoll(l, &end, 10);
	if (!*l || *end || errno || v < 1 || (unsigned long long)v > max) {
		http_problem(res, 400, "limit", "must be an integer from 1 to %zu, got '%.40s'",
			     max, l);
		return -1;
	}
	*limit = (size_t)v;
	return 0;
}

/* ?limit= and ?cursor= (an offset) of a list: 0, or -1 with a 400 in res. */
int http_page_params(const struct http_request *r, size_t def, size_t max, size_t *limit,
		     int64_t *after, struct http_response *res)
{
	const char *c = http_query(r, "cursor");
	char *end;
	long long v;

	*after = 0;
	if (page_limit(r, def, max, limit, res))
		return -1;
	if (c) {
		errno = 0;
		v = strtoll(c, &end, 10);
		if (!*c || *end || errno || v < 0) {
			http_problem(res, 400, "cursor",
				     "'%.40s' is not a cursor this service returned", c);
			return -1;
		}
		*after = v;
	}
	return 0;
}

int http_list_params(const struct http_server *h, const struct http_request *r, size_t *limit,
		     int64_t *after, struct http_response *res)
{
	const char *c = http_query(r, "cursor");

	*after = 0;
	if (page_limit(r, HTTP_PAGE_DEFAULT, HTTP_PAGE_MAX, limit, res))
		return -1;
	if (c && http_cursor_open(store_cursor_key(h->store), r->tenant, r->path, c, after)) {
		http_problem(res, 400, "cursor",
			     "'%.40s' is not a cursor this service returned for this list", c);
		return -1;
	}
	return 0;
}

/* The Link header of the next page (cursor next). */
void http_next_link(struct http_response *res, const struct http_request *r, size_t limit,
		    const char *next)
{
	size_t n = strlen(r->path) + strlen(next) + 64;

	if ((res->link = malloc(n)))
		snprintf(res->link, n, "<%s?limit=%zu&cursor=%s>; rel=\"next\"", r->path, limit,
			 next);
}

/* Adds "items" and "next_cursor" (NULL: last page) to page (both taken)
 * and responds 200, with a Link header to the next page. */
void http_page_respond(struct http_response *res, const struct http_request *r, json_t *page,
		       json_t *items, const char *next, size_t limit)
{
	if (!page || !items) {
		json_decref(page);
		json_decref(items);
		http_oom(res);
		return;
	}
	if (json_object_set_new(page, "items", items) ||
	    json_object_set_new(page, "next_cursor", next ? json_string(next) : json_null())) {
		json_decref(page);
		http_oom(res);
		return;
	}
	http_json(res, 200, page);
	if (next && res->status == 200)
		http_next_link(res, r, limit, next);
}

/* The cursor after a list page: the seq of its last row, sealed, when
 * more rows follow (the store was asked for limit + 1). */
const char *http_list_next(const struct http_server *h, const struct http_request *r,
			   const struct store_row *rows, size_t n, size_t limit, char *buf)
{
	if (n <= limit)
		return NULL;
	http_cursor_seal(store_cursor_key(h->store), r->tenant, r->path, rows[limit - 1].seq, buf);
	return buf;
}

static void csv_put(void *ctx, const char *s, size_t n)
{
	http_put(ctx, s, n);
}

/* One CSV field (csv_out_cell: quoted when needed, never a formula) and
 * its separator. */
void http_csv_field(struct http_text_buf *t, const char *s, char sep)
{
	csv_out_cell(s, csv_put, t);
	http_put(t, &sep, 1);
}

void http_put(struct http_text_buf *t, const char *s, size_t n)
{
	char *grown;
	size_t cap = t->cap ? t->cap : 4096;

	if (t->oom)
		return;
	while (cap < t->len + n + 1)
		cap *= 2;
	if (cap != t->cap) {
		if (!(grown = realloc(t->s, cap))) {
			t->oom = 1;
			return;
		}
		t->s = grown;
		t->cap = cap;
	}
	memcpy(t->s + t->len, s, n);
	t->len += n;
}

uint64_t pm_hash(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ c[i]) * 0x100000001b3u;
	return h;
}
