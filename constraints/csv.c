/*
 * CSV input (RFC 4180): a header row, then rows with as many fields.
 * Quoted fields may hold commas, newlines and "" for a quote; lines end in
 * LF or CRLF; a UTF-8 byte order mark is skipped; blank lines are skipped
 * (editors and `echo >>` leave them). Whitespace is data: nothing is trimmed,
 * and a quote inside an unquoted field is kept as a literal character.
 * Errors name the 1-based physical line ("line 7").
 *
 * The parser is incremental (csv_stream): text arrives in pieces cut
 * anywhere (inside a quoted field, between CR and LF, inside the byte
 * order mark), so that an upload of hundreds of megabytes is read as it
 * comes and only the row being read is held. csv_parse is the same parser
 * fed one piece.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "constraints.h"

static const char BOM[] = "\xEF\xBB\xBF";

enum state {
	S_BOM,	  /* the first bytes: a byte order mark, or data */
	S_FIELD,  /* a field's start: nothing of it read */
	S_PLAIN,  /* in an unquoted field */
	S_QUOTED, /* in a quoted field */
	S_QUOTE,  /* a quote in a quoted field: "" or the closing one */
	S_AFTER	  /* after the closing quote: a comma or a line end must follow */
};

struct csv_stream {
	csv_row_fn on_row;
	void *ctx;
	enum state state;
	int cr;	    /* a CR seen, not yet known to start a CRLF */
	size_t bom; /* bytes of the byte order mark matched (S_BOM) */
	size_t line, row_line, quote_line;
	/* the row's fields, each NUL-terminated, field k at buf + off[k] */
	char *buf;
	size_t len, cap, start; /* start: where the current field begins */
	size_t *off, n_fields, off_cap;
	const char **ptrs;
	size_t n_cols; /* the header's; 0 before it */
	enum pm_status failed;
	struct pm_error error; /* sticky: the first failure */
};

struct csv_stream *csv_stream_create(csv_row_fn on_row, void *ctx)
{
	struct csv_stream *cs = calloc(1, sizeof *cs);

	if (!cs)
		return NULL;
	cs->on_row = on_row;
	cs->ctx = ctx;
	cs->line = cs->row_line = 1;
	return cs;
}

void csv_stream_destroy(struct csv_stream *cs)
{
	if (!cs)
		return;
	free(cs->buf);
	free(cs->off);
	free(cs->ptrs);
	free(cs);
}

static enum pm_status fail(struct csv_stream *cs, size_t line, const char *msg)
{
	char field[48];

	snprintf(field, sizeof field, "line %zu", line);
	cs->failed = error_set(&cs->error, PM_ERR_INPUT, field, "%s", msg);
	return cs->failed;
}

static enum pm_status nomem(struct csv_stream *cs)
{
	cs->failed = error_set(&cs->error, PM_ERR_NOMEM, "", "out of memory reading CSV");
	return cs->failed;
}

/* A field past the header's count is only counted: a row's excess
 * fields are an error whatever they hold. */
static int skipping(const struct csv_stream *cs)
{
	return cs->n_cols && cs->n_fields >= cs->n_cols;
}

static enum pm_status push(struct csv_stream *cs, const char *s, size_t n)
{
	if (skipping(cs))
		return PM_OK;
	if (cs->len + n + 1 > cs->cap) {
		size_t cap = cs->cap ? cs->cap : 256;
		char *buf;

		while (cap < cs->len + n + 1)
			cap *= 2;
		if (!(buf = realloc(cs->buf, cap)))
			return nomem(cs);
		cs->buf = buf;
		cs->cap = cap;
	}
	memcpy(cs->buf + cs->len, s, n);
	cs->len += n;
	return PM_OK;
}

static enum pm_status end_field(struct csv_stream *cs)
{
	if (!skipping(cs)) {
		if (push(cs, "", 0)) /* room for the NUL */
			return cs->failed;
		if (cs->n_fields == cs->off_cap) {
			size_t cap = cs->off_cap ? cs->off_cap * 2 : 16;
			size_t *off = realloc(cs->off, cap * sizeof *off);

			if (!off)
				return nomem(cs);
			cs->off = off;
			cs->off_cap = cap;
		}
		cs->buf[cs->len++] = '\0';
		cs->off[cs->n_fields] = cs->start;
	}
	cs->n_fields++;
	cs->start = cs->len;
	cs->state = S_FIELD;
	return PM_OK;
}

struct name_pos {
	const char *name;
	size_t col;
};

static int cmp_name_pos(const void *pa, const void *pb)
{
	const struct name_pos *a = pa, *b = pb;
	int c = strcmp(a->name, b->name);

	return c ? c : (a->col > b->col) - (a->col < b->col);
}

/* Header names must be non-empty and distinct: they become attribute names. */
static enum pm_status check_header(const char *const *names, size_t n, size_t line,
				   struct pm_error *err)
{
	struct name_pos *v = malloc(n * sizeof *v);
	enum pm_status st = PM_OK;
	char field[48];

	if (!v)
		return error_set(err, PM_ERR_NOMEM, "", "out of memory reading CSV");
	snprintf(field, sizeof field, "line %zu", line);
	for (size_t i = 0; i < n; i++) {
		v[i] = (struct name_pos){names[i], i};
		if (!names[i][0] && !st)
			st = error_set(err, PM_ERR_INPUT, field,
				       "column %zu of the header has an empty name", i + 1);
	}
	qsort(v, n, sizeof *v, cmp_name_pos);
	for (size_t i = 1; i < n && !st; i++)
		if (strcmp(v[i - 1].name, v[i].name) == 0)
			st =
			    error_set(err, PM_ERR_INPUT, field,
				      "duplicate column \"%s\" in the header (columns %zu and %zu)",
				      v[i].name, v[i - 1].col + 1, v[i].col + 1);
	free(v);
	return st;
}

/* The row's fields as strings, for the callback. */
static const char *const *row_fields(struct csv_stream *cs)
{
	const char **p = realloc(cs->ptrs, (cs->n_fields ? cs->n_fields : 1) * sizeof *p);

	if (!p)
		return NULL;
	cs->ptrs = p;
	for (size_t k = 0; k < cs->n_fields; k++)
		p[k] = cs->buf + cs->off[k];
	return p;
}

/* The row read is complete (its last field ended): the header, checked,
 * or a row of as many fields, to the callback. */
static enum pm_status end_row(struct csv_stream *cs)
{
	const char *const *f;
	char msg[96];
	enum pm_status st = PM_OK;

	if (cs->n_cols && cs->n_fields != cs->n_cols) {
		snprintf(msg, sizeof msg, "has %zu fields, expected %zu", cs->n_fields, cs->n_cols);
		return fail(cs, cs->row_line, msg);
	}
	if (!(f = row_fields(cs)))
		return nomem(cs);
	if (!cs->n_cols)
		st = check_header(f, cs->n_fields, cs->row_line, &cs->error);
	if (!st)
		st = cs->on_row(cs->ctx, f, cs->n_fields, cs->row_line, !cs->n_cols, &cs->error);
	if (st)
		return cs->failed = st;
	if (!cs->n_cols)
		cs->n_cols = cs->n_fields;
	cs->len = cs->start = cs->n_fields = 0;
	return PM_OK;
}

/* A line end (LF, or CRLF: the CR already consumed) after a field. */
static enum pm_status line_end(struct csv_stream *cs)
{
	int blank = cs->state != S_AFTER && cs->n_fields == 0 && cs->len == cs->start;
	enum pm_status st = PM_OK;

	cs->cr = 0;
	if (!blank && !(st = end_field(cs)))
		st = end_row(cs);
	cs->line++;
	cs->row_line = cs->line;
	cs->state = S_FIELD;
	return st;
}

/* One byte of an unquoted field (or the start of one). */
static enum pm_status plain(struct csv_stream *cs, char c)
{
	if (cs->cr) {
		cs->cr = 0;
		if (c == '\n')
			return line_end(cs);
		cs->state = S_PLAIN; /* a lone CR is data */
		if (push(cs, "\r", 1))
			return cs->failed;
	}
	if (c == ',')
		return end_field(cs);
	if (c == '\n')
		return line_end(cs);
	if (c == '\r') {
		cs->cr = 1;
		return PM_OK;
	}
	if (c == '\0')
		return fail(cs, cs->line, "contains a NUL byte");
	cs->state = S_PLAIN;
	return push(cs, &c, 1);
}

static enum pm_status quoted(struct csv_stream *cs, char c)
{
	if (c == '"') {
		cs->state = S_QUOTE;
		return PM_OK;
	}
	if (c == '\0')
		return fail(cs, cs->line, "contains a NUL byte");
	if (c == '\n')
		cs->line++;
	return push(cs, &c, 1);
}

static enum pm_status after(struct csv_stream *cs, char c)
{
	if (!cs->cr && c == ',')
		return end_field(cs);
	if (c == '\n')
		return line_end(cs);
	if (!cs->cr && c == '\r') {
		cs->cr = 1;
		return PM_OK;
	}
	return fail(cs, cs->line,
		    "unexpected character after a closing quote; a quoted field must be followed "
		    "by a comma or a line end");
}

static enum pm_status byte(struct csv_stream *cs, char c)
{
	switch (cs->state) {
	case S_FIELD:
		if (c == '"' && !cs->cr) {
			cs->state = S_QUOTED;
			cs->quote_line = cs->line;
			return PM_OK;
		}
		return plain(cs, c);
	case S_PLAIN:
		return plain(cs, c);
	case S_QUOTED:
		return quoted(cs, c);
	case S_QUOTE:
		if (c == '"') {
			cs->state = S_QUOTED;
			return push(cs, "\"", 1);
		}
		cs->state = S_AFTER; /* the field ends at the comma or line end */
		return after(cs, c);
	case S_AFTER:
		return after(cs, c);
	default:
		return PM_OK;
	}
}

/* Bytes of the byte order mark matched so far, given back as data when
 * the text turns out not to start with one. */
static enum pm_status bom(struct csv_stream *cs, char c, int eof)
{
	enum pm_status st = PM_OK;
	size_t had = cs->bom;

	if (!eof && c == BOM[cs->bom]) {
		if (++cs->bom == 3)
			cs->state = S_FIELD;
		return PM_OK;
	}
	cs->state = S_FIELD;
	for (size_t i = 0; i < had && !st; i++)
		st = byte(cs, BOM[i]);
	return st || eof ? st : byte(cs, c);
}

/* An unquoted run: copied at once up to the next byte that matters. */
static size_t plain_run(struct csv_stream *cs, const char *p, size_t n)
{
	size_t i = 0;

	while (i < n && p[i] != ',' && p[i] != '\n' && p[i] != '\r' && p[i] != '\0')
		i++;
	if (i && push(cs, p, i) == PM_OK)
		cs->state = S_PLAIN;
	return i;
}

enum pm_status csv_stream_feed(struct csv_stream *cs, const char *data, size_t n,
			       struct pm_error *err)
{
	for (size_t i = 0; i < n && !cs->failed;) {
		if (cs->state == S_BOM) {
			bom(cs, data[i++], 0);
		} else if ((cs->state == S_PLAIN || cs->state == S_FIELD) && !cs->cr &&
			   data[i] != '"' && (i += plain_run(cs, data + i, n - i)) < n) {
			byte(cs, data[i++]);
		} else if (i < n) {
			byte(cs, data[i++]);
		}
	}
	if (cs->failed && err)
		*err = cs->error;
	return cs->failed;
}

/* The end of the text: the row being read ends (a quoted field must have
 * been closed), and the header must have come. */
static enum pm_status at_end(struct csv_stream *cs)
{
	if (cs->state == S_BOM && bom(cs, 0, 1))
		return cs->failed;
	if (cs->state == S_QUOTED)
		return fail(cs, cs->quote_line, "quoted field is not terminated (missing \")");
	if (cs->state == S_AFTER && cs->cr)
		return after(cs, '\0');
	if (cs->cr) { /* a CR at the very end is data */
		cs->cr = 0;
		cs->state = S_PLAIN;
		if (push(cs, "\r", 1))
			return cs->failed;
	}
	if ((cs->state != S_FIELD || cs->n_fields) && (end_field(cs) || end_row(cs)))
		return cs->failed;
	if (!cs->n_cols)
		return fail(cs, 1, "the CSV is empty; a header row is expected");
	return PM_OK;
}

enum pm_status csv_stream_end(struct csv_stream *cs, struct pm_error *err)
{
	if (!cs->failed)
		at_end(cs);
	if (cs->failed && err)
		*err = cs->error;
	return cs->failed;
}

/* ---- the whole text at once ---------------------------------------------------- */

struct table_build {
	struct csv_table *t;
	size_t cap; /* rows */
};

static char **dup_fields(const char *const *f, size_t n)
{
	char **out = calloc(n ? n : 1, sizeof *out);

	for (size_t i = 0; out && i < n; i++)
		if (!(out[i] = strdup(f[i]))) {
			while (i--)
				free(out[i]);
			free(out);
			return NULL;
		}
	return out;
}

/* Appends a row (or sets the header) of the table being built. */
static enum pm_status table_row(void *ctx, const char *const *f, size_t n, size_t line, int header,
				struct pm_error *err)
{
	struct table_build *tb = ctx;
	struct csv_table *t = tb->t;
	char **row = dup_fields(f, n);

	if (row && header) {
		t->header = row, t->n_cols = n, t->header_line = line;
		return PM_OK;
	}
	if (row && t->n_rows == tb->cap) {
		size_t c = tb->cap ? tb->cap * 2 : 64;
		char **cells = realloc(t->cells, c * n * sizeof *cells);
		size_t *lines = cells ? realloc(t->row_line, c * sizeof *lines) : NULL;

		if (cells)
			t->cells = cells;
		if (lines)
			t->row_line = lines, tb->cap = c;
	}
	if (!row || t->n_rows == tb->cap) {
		for (size_t i = 0; row && i < n; i++)
			free(row[i]);
		free(row);
		return error_set(err, PM_ERR_NOMEM, "", "out of memory reading CSV");
	}
	memcpy(t->cells + t->n_rows * n, row, n * sizeof *row);
	t->row_line[t->n_rows++] = line;
	free(row);
	return PM_OK;
}

enum pm_status csv_parse(const char *text, size_t len, struct csv_table *t, struct pm_error *err)
{
	struct table_build tb = {t, 0};
	struct csv_stream *cs;
	enum pm_status st;

	if (!t)
		return error_set(err, PM_ERR_INTERNAL, "", "no CSV table");
	memset(t, 0, sizeof *t);
	if (!(cs = csv_stream_create(table_row, &tb)))
		return error_set(err, PM_ERR_NOMEM, "", "out of memory reading CSV");
	st = csv_stream_feed(cs, text ? text : "", text ? len : 0, err);
	if (!st)
		st = csv_stream_end(cs, err);
	csv_stream_destroy(cs);
	if (st)
		csv_table_finish(t);
	return st;
}

void csv_table_finish(struct csv_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; t->header && i < t->n_cols; i++)
		free(t->header[i]);
	for (size_t i = 0; t->cells && i < t->n_rows * t->n_cols; i++)
		free(t->cells[i]);
	free(t->header);
	free(t->cells);
	free(t->row_line);
	memset(t, 0, sizeof *t);
}
