/*
 * A records-form dataset read straight from its JSON text, without
 * jansson's tree: that tree costs some twenty allocations a record, which
 * on a table of millions of records is most of the time and memory of a
 * solve before codec_dataset reads a row.
 *
 * This reader takes the plain subset of the records form that such
 * documents are: "name" (a string or null), "qi_attributes",
 * "sa_attribute", then "records" last; every row an object of "qi",
 * "group" and "sa" (in any order) whose values are strings or integers
 * of at most 18 digits; strings without \u escapes, in valid UTF-8.
 * Anything else, and any error at all (the builder's too), is
 * PM_ERR_INPUT with the reason, and the caller then reads the text the
 * general way (json_loadb + codec_dataset): that path decides every
 * error and every corner of JSON, so both give the same dataset or the
 * same message. Values mean what codec_value_text makes of them: a
 * string as it is, an integer as "%lld" (so -0 is "0").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_internal.h"

/* A value longer than the builder's limits is refused by the builder;
 * room for one byte more is enough to let it say so. */
#define VAL_CAP	   (DATASET_MAX_VALUE + 2)
#define MAX_DIGITS 18

struct rd {
	const char *p, *end;
	const char *why; /* why the text is not in the subset */
	char val[DATASET_MAX_ATTRS + 2][VAL_CAP];
};

static int bail(struct rd *r, const char *why)
{
	if (!r->why)
		r->why = why;
	return -1;
}

static void skip_ws(struct rd *r)
{
	while (r->p < r->end && (*r->p == ' ' || *r->p == '\n' || *r->p == '\r' || *r->p == '\t'))
		r->p++;
}

/* The next token is c: consumed, 0; else -1 (nothing consumed). */
static int eat(struct rd *r, char c)
{
	skip_ws(r);
	if (r->p < r->end && *r->p == c) {
		r->p++;
		return 0;
	}
	return -1;
}

/* Length of the well-formed UTF-8 sequence at s (RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF), or 0. */
static size_t utf8_len(const unsigned char *s, const unsigned char *end)
{
	size_t n = s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : 2;
	unsigned lo = 0x80, hi = 0xBF;

	if (s[0] < 0xC2 || s[0] > 0xF4 || (size_t)(end - s) < n)
		return 0;
	if (s[0] == 0xE0)
		lo = 0xA0;
	else if (s[0] == 0xED)
		hi = 0x9F;
	else if (s[0] == 0xF0)
		lo = 0x90;
	else if (s[0] == 0xF4)
		hi = 0x8F;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xBF)
			return 0;
	return n;
}

/* The byte the escape \c stands for; -1 for \u and anything unknown. */
static int unescape(char c)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *k = c ? strchr(from, c) : NULL;

	return k ? to[k - from] : -1;
}

/* A JSON string into out (cap bytes with the NUL). */
static int read_string(struct rd *r, char *out, size_t cap)
{
	size_t n = 0, k;

	if (eat(r, '"'))
		return bail(r, "a value is not a string or an integer");
	while (r->p < r->end && *r->p != '"') {
		unsigned char c = (unsigned char)*r->p;
		int e = 0;

		if (c < 0x20)
			return bail(r, "a control character in a string");
		k = c < 0x80 ? 1
			     : utf8_len((const unsigned char *)r->p, (const unsigned char *)r->end);
		if (c == '\\' && (r->p + 1 >= r->end || (e = unescape(r->p[1])) < 0))
			return bail(r, "a \\u or unknown escape");
		if (!k)
			return bail(r, "invalid UTF-8");
		if (n + k >= cap)
			return bail(r, "a string over the length limits");
		if (c == '\\') {
			out[n++] = (char)e;
			r->p += 2;
			continue;
		}
		memcpy(out + n, r->p, k);
		n += k;
		r->p += k;
	}
	if (r->p >= r->end)
		return bail(r, "an unterminated string");
	r->p++;
	out[n] = '\0';
	return 0;
}

/* An integer -?(0|[1-9][0-9]*) of at most MAX_DIGITS digits, as "%lld". */
static int read_integer(struct rd *r, char *out, size_t cap)
{
	const char *s = r->p + (*r->p == '-');
	const char *d = s;
	long long v;

	while (d < r->end && *d >= '0' && *d <= '9')
		d++;
	if (d == s || d - s > MAX_DIGITS || (*s == '0' && d - s > 1))
		return bail(r, "a number that is not a plain integer");
	if (d < r->end && (*d == '.' || *d == 'e' || *d == 'E'))
		return bail(r, "a real number");
	v = strtoll(s, NULL, 10);
	snprintf(out, cap, "%lld", *r->p == '-' ? -v : v);
	r->p = d;
	return 0;
}

/* A data value: a string, or an integer as its text. */
static int read_value(struct rd *r, char *out)
{
	skip_ws(r);
	if (r->p < r->end && (*r->p == '-' || (*r->p >= '0' && *r->p <= '9')))
		return read_integer(r, out, VAL_CAP);
	return read_string(r, out, VAL_CAP);
}

/* Which of the NULL-terminated keys the next key is (its index), the
 * colon consumed; -1 for any other. */
static int read_key(struct rd *r, const char *const *keys)
{
	char key[32];

	if (read_string(r, key, sizeof key))
		return -1;
	if (eat(r, ':'))
		return bail(r, "a key without a colon");
	for (int i = 0; keys[i]; i++)
		if (!strcmp(key, keys[i]))
			return i;
	return bail(r, "a key outside the subset");
}

/* ',' then more (1), or the closing c (0), or -1. */
static int next(struct rd *r, char c)
{
	if (!eat(r, ','))
		return 1;
	if (!eat(r, c))
		return 0;
	return bail(r, "a missing comma");
}

/* "qi": exactly n values into r->val[0 .. n). */
static int read_qi(struct rd *r, size_t n)
{
	size_t i = 0;
	int more;

	if (eat(r, '['))
		return bail(r, "qi is not an array");
	if (!eat(r, ']'))
		return bail(r, "an empty qi");
	do {
		if (i == n || read_value(r, r->val[i++]))
			return bail(r, "qi of another length");
	} while ((more = next(r, ']')) == 1);
	return more < 0 || i != n ? bail(r, "qi of another length") : 0;
}

/* One row {"qi": [..], "group": g, "sa": s}, fed to the builder. */
static int read_record(struct rd *r, struct dataset_builder *b, size_t n_attrs)
{
	static const char *const keys[] = {"qi", "group", "sa", NULL};
	const char *qi[DATASET_MAX_ATTRS];
	struct pm_error err;
	unsigned seen = 0;
	int k, more;

	if (eat(r, '{'))
		return bail(r, "a row is not an object");
	do {
		if ((k = read_key(r, keys)) < 0 || (seen & (1u << k)))
			return bail(r, "a repeated key in a row");
		seen |= 1u << k;
		if (k == 0 ? read_qi(r, n_attrs) : read_value(r, r->val[n_attrs + (size_t)k - 1]))
			return -1;
	} while ((more = next(r, '}')) == 1);
	if (more < 0 || seen != 7)
		return bail(r, "a row without qi, group or sa");
	for (size_t a = 0; a < n_attrs; a++)
		qi[a] = r->val[a];
	if (dataset_builder_add_record(b, qi, r->val[n_attrs], r->val[n_attrs + 1], &err))
		return bail(r, "a row the builder refuses");
	return 0;
}

static int read_records(struct rd *r, struct dataset_builder *b, size_t n_attrs)
{
	int more;

	if (eat(r, '['))
		return bail(r, "records is not an array");
	if (!eat(r, ']'))
		return 0; /* the builder refuses it */
	do {
		if (read_record(r, b, n_attrs))
			return -1;
	} while ((more = next(r, ']')) == 1);
	return more;
}

/* The head of the document, before "records". */
struct head {
	int has_name;
	char name[VAL_CAP];
	char attrs[DATASET_MAX_ATTRS][VAL_CAP];
	size_t n_attrs;
	char sa[VAL_CAP];
};

static int read_attrs(struct rd *r, struct head *h)
{
	int more;

	if (eat(r, '[') || !eat(r, ']'))
		return bail(r, "qi_attributes is not a non-empty array");
	do {
		if (h->n_attrs == DATASET_MAX_ATTRS)
			return bail(r, "too many qi_attributes");
		if (read_string(r, h->attrs[h->n_attrs++], VAL_CAP))
			return -1;
	} while ((more = next(r, ']')) == 1);
	return more;
}

/* "name": a string, or null (as if absent). */
static int read_name(struct rd *r, struct head *h)
{
	skip_ws(r);
	if (r->end - r->p >= 4 && !memcmp(r->p, "null", 4)) {
		r->p += 4;
		return 0;
	}
	h->has_name = 1;
	return read_string(r, h->name, VAL_CAP);
}

/* "name", "qi_attributes" and "sa_attribute" in any order, then the
 * key "records" (consumed with its colon). */
static int read_head(struct rd *r, struct head *h)
{
	static const char *const keys[] = {"name", "qi_attributes", "sa_attribute", "records",
					   NULL};
	unsigned seen = 0;
	int k;

	if (eat(r, '{'))
		return bail(r, "the document is not an object");
	while ((k = read_key(r, keys)) >= 0 && k != 3) {
		if (seen & (1u << k))
			return bail(r, "a repeated key");
		seen |= 1u << k;
		if (k == 0   ? read_name(r, h)
		    : k == 1 ? read_attrs(r, h)
			     : read_string(r, h->sa, VAL_CAP))
			return -1;
		if (next(r, '}') != 1)
			return bail(r, "no records");
	}
	if (k < 0 || (seen & 6) != 6)
		return bail(r, "records before qi_attributes or sa_attribute");
	return 0;
}

/* The rows and the end of the document; r->why says why not. */
static struct dataset *read_body(struct rd *r, const struct head *h)
{
	const char *attrs[DATASET_MAX_ATTRS];
	struct dataset_builder *b;
	struct dataset *ds = NULL;
	struct pm_error err;

	for (size_t a = 0; a < h->n_attrs; a++)
		attrs[a] = h->attrs[a];
	b = dataset_builder_create(h->has_name ? h->name : NULL, attrs, h->n_attrs, h->sa, &err);
	if (!b) {
		bail(r, "names the builder refuses");
		return NULL;
	}
	if (!read_records(r, b, h->n_attrs) && !eat(r, '}') && (skip_ws(r), r->p == r->end)) {
		if (dataset_builder_finish(b, &ds, &err))
			bail(r, "a table the builder refuses");
	} else {
		bail(r, "more after the records");
	}
	dataset_builder_destroy(b);
	return ds;
}

enum pm_status codec_records_dataset(const char *text, size_t len, struct dataset **out,
				     struct pm_error *err)
{
	struct rd *r = calloc(1, sizeof *r);
	struct head *h = calloc(1, sizeof *h);

	*out = NULL;
	if (r && h) {
		r->p = text;
		r->end = text + len;
		if (!read_head(r, h))
			*out = read_body(r, h);
	}
	if (!*out)
		error_set(err, r && h ? PM_ERR_INPUT : PM_ERR_NOMEM, "", "not read directly: %s",
			  r && r->why ? r->why : "out of memory");
	free(r);
	free(h);
	return *out ? PM_OK : err->status;
}
