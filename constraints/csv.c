/*
 * CSV input (RFC 4180): a header row, then rows with as many fields.
 * Quoted fields may hold commas, newlines and "" for a quote; lines end in
 * LF or CRLF; a UTF-8 byte order mark is skipped; blank lines are skipped
 * (editors and `echo >>` leave them). Whitespace is data: nothing is trimmed,
 * and a quote inside an unquoted field is kept as a literal character.
 * Errors name the 1-based physical line ("line 7").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "constraints.h"

enum term { TERM_COMMA, TERM_EOL, TERM_EOF };

struct parser {
	const char *p, *end;
	size_t line; /* physical line of p, 1-based */
	char *buf;   /* the field being read, unescaped */
	size_t len, cap;
	/* the row being read */
	char **fields;
	size_t n_fields, fields_cap;
};

static int buf_push(struct parser *ps, char c)
{
	if (ps->len + 1 >= ps->cap) {
		size_t cap = ps->cap ? ps->cap * 2 : 256;
		char *buf = realloc(ps->buf, cap);

		if (!buf)
			return -1;
		ps->buf = buf;
		ps->cap = cap;
	}
	ps->buf[ps->len++] = c;
	return 0;
}

static enum pm_status line_error(struct pm_error *err, size_t line, const char *msg)
{
	char field[48];

	snprintf(field, sizeof field, "line %zu", line);
	return error_set(err, PM_ERR_INPUT, field, "%s", msg);
}

/* After a field: consumes the comma or line end that follows it. */
static enum pm_status read_term(struct parser *ps, enum term *term, struct pm_error *err)
{
	if (ps->p == ps->end) {
		*term = TERM_EOF;
	} else if (*ps->p == ',') {
		ps->p++;
		*term = TERM_COMMA;
	} else if (*ps->p == '\n' || (*ps->p == '\r' && ps->p + 1 < ps->end && ps->p[1] == '\n')) {
		ps->p += *ps->p == '\r' ? 2 : 1;
		ps->line++;
		*term = TERM_EOL;
	} else {
		return line_error(err, ps->line,
				  "unexpected character after a closing quote; a quoted field "
				  "must be followed by a comma or a line end");
	}
	return PM_OK;
}

static enum pm_status read_quoted(struct parser *ps, struct pm_error *err)
{
	size_t start = ps->line;

	for (ps->p++;; ps->p++) {
		if (ps->p == ps->end)
			return line_error(err, start,
					  "quoted field is not terminated (missing \")");
		if (*ps->p == '"') {
			if (ps->p + 1 == ps->end || ps->p[1] != '"')
				break;
			ps->p++; /* "" stands for one quote */
		} else if (*ps->p == '\0') {
			return line_error(err, ps->line, "contains a NUL byte");
		} else if (*ps->p == '\n') {
			ps->line++;
		}
		if (buf_push(ps, *ps->p))
			return error_set(err, PM_ERR_NOMEM, "", "out of memory reading CSV");
	}
	ps->p++; /* the closing quote */
	return PM_OK;
}

static enum pm_status read_plain(struct parser *ps, struct pm_error *err)
{
	for (; ps->p < ps->end; ps->p++) {
		char c = *ps->p;

		if (c == ',' || c == '\n' || (c == '\r' && ps->p + 1 < ps->end && ps->p[1] == '\n'))
			break;
		if (c == '\0')
			return line_error(err, ps->line, "contains a NUL byte");
		if (buf_push(ps, c))
			return error_set(err, PM_ERR_NOMEM, "", "out of memory reading CSV");
	}
	return PM_OK;
}

static enum pm_status push_field(struct parser *ps, struct pm_error *err)
{
	char *s;

	if (ps->n_fields == ps->fields_cap) {
		size_t cap = ps->fields_cap ? ps->fields_cap * 2 : 16;
		char **f = realloc(ps->fields, cap * sizeof *f);

		if (!f)
			goto nomem;
		ps->fields = f;
		ps->fields_cap = cap;
	}
	s = malloc(ps->len + 1);
	if (!s)
		goto nomem;
	memcpy(s, ps->buf ? ps->buf : "", ps->len);
	s[ps->len] = '\0';
	ps->fields[ps->n_fields++] = s;
	return PM_OK;
nomem:
	return error_set(err, PM_ERR_NOMEM, "", "out of memory reading CSV");
}

static void drop_fields(struct parser *ps)
{
	for (size_t i = 0; i < ps->n_fields; i++)
		free(ps->fields[i]);
	ps->n_fields = 0;
}

/* Reads one row into ps->fields; *blank is set for an empty line, which
 * yields no fields. Call only while ps->p < ps->end. */
static enum pm_status read_row(struct parser *ps, int *blank, struct pm_error *err)
{
	enum term term = TERM_COMMA;
	enum pm_status st = PM_OK;
	const char *row_start = ps->p;

	*blank = 0;
	while (!st && term == TERM_COMMA) {
		int quoted = ps->p < ps->end && *ps->p == '"';

		ps->len = 0;
		st = quoted ? read_quoted(ps, err) : read_plain(ps, err);
		if (!st && !quoted && ps->n_fields == 0 && ps->p == row_start) {
			*blank = ps->p == ps->end || *ps->p != ',';
			if (*blank)
				return read_term(ps, &term, err);
		}
		if (!st)
			st = push_field(ps, err);
		if (!st)
			st = read_term(ps, &term, err);
	}
	return st;
}

/* Appends the row just read, which started on line `line`; *cap counts rows. */
static enum pm_status append_row(struct csv_table *t, struct parser *ps, size_t line, size_t *cap,
				 struct pm_error *err)
{
	if (t->n_rows == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		char **cells = realloc(t->cells, c * t->n_cols * sizeof *cells);
		size_t *lines;

		if (cells)
			t->cells = cells;
		lines = cells ? realloc(t->row_line, c * sizeof *lines) : NULL;
		if (!lines)
			return error_set(err, PM_ERR_NOMEM, "", "out of memory reading CSV");
		t->row_line = lines;
		*cap = c;
	}
	memcpy(t->cells + t->n_rows * t->n_cols, ps->fields, t->n_cols * sizeof *ps->fields);
	t->row_line[t->n_rows++] = line;
	ps->n_fields = 0; /* the strings now belong to t */
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
static enum pm_status check_header(const struct csv_table *t, size_t line, struct pm_error *err)
{
	struct name_pos *v = malloc(t->n_cols * sizeof *v);
	enum pm_status st = PM_OK;
	char field[48];

	if (!v)
		return error_set(err, PM_ERR_NOMEM, "", "out of memory reading CSV");
	snprintf(field, sizeof field, "line %zu", line);
	for (size_t i = 0; i < t->n_cols; i++) {
		v[i] = (struct name_pos){t->header[i], i};
		if (!t->header[i][0] && !st)
			st = error_set(err, PM_ERR_INPUT, field,
				       "column %zu of the header has an empty name", i + 1);
	}
	qsort(v, t->n_cols, sizeof *v, cmp_name_pos);
	for (size_t i = 1; i < t->n_cols && !st; i++)
		if (strcmp(v[i - 1].name, v[i].name) == 0)
			st =
			    error_set(err, PM_ERR_INPUT, field,
				      "duplicate column \"%s\" in the header (columns %zu and %zu)",
				      v[i].name, v[i - 1].col + 1, v[i].col + 1);
	free(v);
	return st;
}

/* Reads the next non-blank row; *got = 0 at the end of the input. */
static enum pm_status next_row(struct parser *ps, size_t *line, int *got, struct pm_error *err)
{
	enum pm_status st = PM_OK;
	int blank = 1;

	while (!st && blank && ps->p < ps->end) {
		*line = ps->line;
		st = read_row(ps, &blank, err);
	}
	*got = !st && !blank;
	return st;
}

static enum pm_status parse_rows(struct parser *ps, struct csv_table *t, struct pm_error *err)
{
	size_t line = 1, cap = 0;
	int got;
	enum pm_status st = next_row(ps, &line, &got, err);

	if (!st && !got)
		return error_set(err, PM_ERR_INPUT, "line 1",
				 "the CSV is empty; a header row is expected");
	if (st)
		return st;
	t->n_cols = ps->n_fields;
	t->header_line = line;
	t->header = ps->fields;
	ps->fields = NULL;
	ps->n_fields = ps->fields_cap = 0;
	st = check_header(t, line, err);
	while (!st && !(st = next_row(ps, &line, &got, err)) && got) {
		char msg[96];

		if (ps->n_fields != t->n_cols) {
			snprintf(msg, sizeof msg, "has %zu fields, expected %zu", ps->n_fields,
				 t->n_cols);
			st = line_error(err, line, msg);
		} else {
			st = append_row(t, ps, line, &cap, err);
		}
	}
	return st;
}

enum pm_status csv_parse(const char *text, size_t len, struct csv_table *t, struct pm_error *err)
{
	struct parser ps = {.p = text, .end = text + len, .line = 1};
	enum pm_status st;

	if (!t)
		return error_set(err, PM_ERR_INTERNAL, "", "no CSV table");
	memset(t, 0, sizeof *t);
	if (!text)
		len = 0, ps.p = ps.end = "";
	if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
		ps.p += 3;
	st = parse_rows(&ps, t, err);
	drop_fields(&ps);
	free(ps.fields);
	free(ps.buf);
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

static long find_col(const struct csv_table *t, const char *name)
{
	for (size_t i = 0; i < t->n_cols; i++)
		if (strcmp(t->header[i], name) == 0)
			return (long)i;
	return -1;
}

/* Finds the SA and group columns and checks that QI columns and rows remain. */
static enum pm_status locate(const struct csv_table *t, const char *sa_col, const char *group_col,
			     long *sa, long *group, struct pm_error *err)
{
	char c1[ERROR_CLIP_SIZE], c2[ERROR_CLIP_SIZE];

	if (!sa_col || !*sa_col)
		return error_set(err, PM_ERR_INPUT, "sa", "is missing; name the SA column");
	if (!group_col || !*group_col)
		return error_set(err, PM_ERR_INPUT, "group", "is missing; name the group column");
	error_clip(sa_col, c1);
	error_clip(group_col, c2);
	if ((*sa = find_col(t, sa_col)) < 0)
		return error_set(err, PM_ERR_INPUT, "sa", "no column \"%s\" in the header", c1);
	if ((*group = find_col(t, group_col)) < 0)
		return error_set(err, PM_ERR_INPUT, "group", "no column \"%s\" in the header", c2);
	if (*sa == *group)
		return error_set(err, PM_ERR_INPUT, "group",
				 "is the same column as sa (\"%s\"); they must differ", c1);
	if (t->n_cols < 3)
		return error_set(err, PM_ERR_INPUT, "line 1",
				 "has no QI column: every column but sa (\"%s\") and group "
				 "(\"%s\") is a QI attribute",
				 c1, c2);
	if (t->n_cols - 2 > DATASET_MAX_ATTRS)
		return error_set(err, PM_ERR_INPUT, "line 1",
				 "has %zu QI columns; at most %d are supported", t->n_cols - 2,
				 DATASET_MAX_ATTRS);
	if (t->n_rows == 0)
		return error_set(err, PM_ERR_INPUT, "line 2", "no data rows after the header");
	return PM_OK;
}

/* The CSV columns of the dataset: QI columns in header order, SA, group. */
struct columns {
	const char *names[DATASET_MAX_ATTRS];
	size_t qi[DATASET_MAX_ATTRS], n_qi;
	long sa, group;
};

/*
 * The builder names the parts of a dataset as JSON does ("qi_attributes[2]",
 * "sa_attribute"; a row's "qi[1]", "group", "sa"); a CSV user thinks in
 * lines and columns: "line 7" and "column 3 (\"age\") is ...". Other errors
 * (out of memory, "name") pass unchanged. row is (size_t)-1 for the header.
 */
static enum pm_status csv_field(const struct csv_table *t, const struct columns *c, size_t row,
				enum pm_status st, struct pm_error *err)
{
	char field[48], msg[sizeof err->message], clip[ERROR_CLIP_SIZE];
	size_t i, line = row == (size_t)-1 ? t->header_line : row + 2;
	long col = -1;

	if (!err)
		return st;
	if (line == 0)
		line = 1; /* a table not made by csv_parse */
	if (row != (size_t)-1 && t->row_line)
		line = t->row_line[row];
	if (sscanf(err->field, row == (size_t)-1 ? "qi_attributes[%zu]" : "qi[%zu]", &i) == 1 &&
	    i < c->n_qi)
		col = (long)c->qi[i];
	else if (row != (size_t)-1 && !strcmp(err->field, "sa"))
		col = c->sa;
	else if (row != (size_t)-1 && !strcmp(err->field, "group"))
		col = c->group;
	if (row == (size_t)-1 && !strcmp(err->field, "sa_attribute"))
		snprintf(err->field, sizeof err->field, "sa"); /* the column named by sa= */
	if (col < 0 || !st)
		return st;
	snprintf(field, sizeof field, "line %zu", line);
	snprintf(msg, sizeof msg, "column %ld (\"%s\") %.900s", col + 1,
		 error_clip(t->header[col], clip), err->message);
	return error_set(err, st, field, "%s", msg);
}

enum pm_status csv_dataset(const struct csv_table *t, const char *sa_col, const char *group_col,
			   const char *name, struct dataset **out, struct pm_error *err)
{
	const char *qi[DATASET_MAX_ATTRS];
	struct dataset_builder *b = NULL;
	struct columns c = {.n_qi = 0, .sa = -1, .group = -1};
	enum pm_status st;

	if (!t || !out)
		return error_set(err, PM_ERR_INTERNAL, "", "no CSV table or output");
	*out = NULL;
	st = locate(t, sa_col, group_col, &c.sa, &c.group, err);
	if (st)
		goto out;
	for (size_t col = 0; col < t->n_cols; col++)
		if ((long)col != c.sa && (long)col != c.group) {
			c.qi[c.n_qi] = col;
			c.names[c.n_qi++] = t->header[col];
		}
	b = dataset_builder_create(name, c.names, c.n_qi, sa_col, err);
	if (!b) {
		st = csv_field(t, &c, (size_t)-1, err ? err->status : PM_ERR_INPUT, err);
		goto out;
	}
	for (size_t r = 0; r < t->n_rows && !st; r++) {
		char *const *row = t->cells + r * t->n_cols;

		for (size_t a = 0; a < c.n_qi; a++)
			qi[a] = row[c.qi[a]];
		st = dataset_builder_add_record(b, qi, row[c.group], row[c.sa], err);
		if (st)
			st = csv_field(t, &c, r, st, err);
	}
	if (!st)
		st = dataset_builder_finish(b, out, err);
out:
	dataset_builder_destroy(b);
	return st;
}
