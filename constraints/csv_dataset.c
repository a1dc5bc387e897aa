/*
 * CSV to a records-form dataset: column sa= is the SA, group= the group,
 * every other column a QI attribute in header order. From a parsed table
 * (csv_dataset) or from text as it arrives (csv_loader, an upload of
 * millions of rows): both go through the same steps, header then rows,
 * so the errors are the same, word for word, in the same order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "constraints.h"

/* The CSV columns of the dataset: QI columns in header order, SA, group. */
struct columns {
	const char *names[DATASET_MAX_ATTRS];
	size_t qi[DATASET_MAX_ATTRS], n_qi;
	long sa, group;
};

/* Where the dataset's first error came from: the header's columns, the
 * builder's creation, a row. */
enum stage { FINE = 0, AT_LOCATE, AT_CREATE, AT_ROW };

struct csv_loader {
	struct csv_stream *cs; /* NULL in csv_dataset */
	char *sa_col, *group_col, *name;
	char **header; /* a copy: messages quote it */
	size_t n_cols, header_line, n_rows;
	struct columns c;
	struct dataset_builder *b;
	enum stage failed;
	struct pm_error derr; /* the dataset's first error */
};

static long find_col(char *const *header, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(header[i], name) == 0)
			return (long)i;
	return -1;
}

/* Finds the SA and group columns and checks that QI columns remain. */
static enum pm_status locate(const struct csv_loader *l, long *sa, long *group,
			     struct pm_error *err)
{
	char c1[ERROR_CLIP_SIZE], c2[ERROR_CLIP_SIZE];

	if (!l->sa_col || !*l->sa_col)
		return error_set(err, PM_ERR_INPUT, "sa", "is missing; name the SA column");
	if (!l->group_col || !*l->group_col)
		return error_set(err, PM_ERR_INPUT, "group", "is missing; name the group column");
	error_clip(l->sa_col, c1);
	error_clip(l->group_col, c2);
	if ((*sa = find_col(l->header, l->n_cols, l->sa_col)) < 0)
		return error_set(err, PM_ERR_INPUT, "sa", "no column \"%s\" in the header", c1);
	if ((*group = find_col(l->header, l->n_cols, l->group_col)) < 0)
		return error_set(err, PM_ERR_INPUT, "group", "no column \"%s\" in the header", c2);
	if (*sa == *group)
		return error_set(err, PM_ERR_INPUT, "group",
				 "is the same column as sa (\"%s\"); they must differ", c1);
	if (l->n_cols < 3)
		return error_set(err, PM_ERR_INPUT, "line 1",
				 "has no QI column: every column but sa (\"%s\") and group "
				 "(\"%s\") is a QI attribute",
				 c1, c2);
	if (l->n_cols - 2 > DATASET_MAX_ATTRS)
		return error_set(err, PM_ERR_INPUT, "line 1",
				 "has %zu QI columns; at most %d are supported", l->n_cols - 2,
				 DATASET_MAX_ATTRS);
	return PM_OK;
}

/*
 * The builder names the parts of a dataset as JSON does ("qi_attributes[2]",
 * "sa_attribute"; a row's "qi[1]", "group", "sa"); a CSV user thinks in
 * lines and columns: "line 7" and "column 3 (\"age\") is ...". Other errors
 * (out of memory, "name") pass unchanged. line is the row's (or the
 * header's: is_header).
 */
static enum pm_status csv_field(const struct csv_loader *l, int is_header, size_t line,
				enum pm_status st, struct pm_error *err)
{
	char field[48], msg[sizeof err->message], clip[ERROR_CLIP_SIZE];
	const struct columns *c = &l->c;
	long col = -1;
	size_t i;

	if (sscanf(err->field, is_header ? "qi_attributes[%zu]" : "qi[%zu]", &i) == 1 &&
	    i < c->n_qi)
		col = (long)c->qi[i];
	else if (!is_header && !strcmp(err->field, "sa"))
		col = c->sa;
	else if (!is_header && !strcmp(err->field, "group"))
		col = c->group;
	if (is_header && !strcmp(err->field, "sa_attribute"))
		snprintf(err->field, sizeof err->field, "sa"); /* the column named by sa= */
	if (col < 0 || !st)
		return st;
	snprintf(field, sizeof field, "line %zu", line ? line : 1);
	snprintf(msg, sizeof msg, "column %ld (\"%s\") %.900s", col + 1,
		 error_clip(l->header[col], clip), err->message);
	return error_set(err, st, field, "%s", msg);
}

static void free_header(struct csv_loader *l)
{
	for (size_t i = 0; l->header && i < l->n_cols; i++)
		free(l->header[i]);
	free(l->header);
	l->header = NULL;
}

/* The header: its columns found and the builder made, or the error kept. */
static void on_header(struct csv_loader *l, const char *const *f, size_t n, size_t line)
{
	struct columns *c = &l->c;
	int ok = (l->header = calloc(n ? n : 1, sizeof *l->header)) != NULL;

	for (size_t i = 0; ok && i < n; i++)
		ok = (l->header[i] = strdup(f[i])) != NULL;
	l->n_cols = n;
	l->header_line = line;
	if (!ok) {
		error_set(&l->derr, PM_ERR_NOMEM, "", "out of memory reading CSV");
		l->failed = AT_LOCATE;
		return;
	}
	if (locate(l, &c->sa, &c->group, &l->derr)) {
		l->failed = AT_LOCATE;
		return;
	}
	for (size_t col = 0; col < n; col++)
		if ((long)col != c->sa && (long)col != c->group) {
			c->qi[c->n_qi] = col;
			c->names[c->n_qi++] = l->header[col];
		}
	l->b = dataset_builder_create(l->name, c->names, c->n_qi, l->sa_col, &l->derr);
	if (!l->b) {
		csv_field(l, 1, line, l->derr.status ? l->derr.status : PM_ERR_INPUT, &l->derr);
		l->failed = AT_CREATE;
	}
}

/* A data row into the builder, unless the dataset has failed already. */
static void on_row(struct csv_loader *l, const char *const *f, size_t line)
{
	const char *qi[DATASET_MAX_ATTRS];
	enum pm_status st;

	l->n_rows++;
	if (l->failed)
		return;
	for (size_t a = 0; a < l->c.n_qi; a++)
		qi[a] = f[l->c.qi[a]];
	st = dataset_builder_add_record(l->b, qi, f[l->c.group], f[l->c.sa], &l->derr);
	if (st) {
		csv_field(l, 0, line, st, &l->derr);
		l->failed = AT_ROW;
	}
}

/* The dataset, or its first error: the header's columns, then no rows,
 * then the rest, as csv_dataset has always checked them. */
static enum pm_status finish(struct csv_loader *l, struct dataset **out, struct pm_error *err)
{
	if (l->failed == AT_LOCATE) {
		*err = l->derr;
		return err->status;
	}
	if (l->n_rows == 0)
		return error_set(err, PM_ERR_INPUT, "line 2", "no data rows after the header");
	if (l->failed) {
		*err = l->derr;
		return err->status;
	}
	return dataset_builder_finish(l->b, out, err);
}

static void loader_clear(struct csv_loader *l)
{
	csv_stream_destroy(l->cs);
	dataset_builder_destroy(l->b);
	free_header(l);
	free(l->sa_col);
	free(l->group_col);
	free(l->name);
}

static enum pm_status init(struct csv_loader *l, const char *sa, const char *group,
			   const char *name)
{
	memset(l, 0, sizeof *l);
	l->c.sa = l->c.group = -1;
	if ((sa && !(l->sa_col = strdup(sa))) || (group && !(l->group_col = strdup(group))) ||
	    (name && !(l->name = strdup(name))))
		return PM_ERR_NOMEM;
	return PM_OK;
}

enum pm_status csv_dataset(const struct csv_table *t, const char *sa_col, const char *group_col,
			   const char *name, struct dataset **out, struct pm_error *err)
{
	struct csv_loader l;
	enum pm_status st;

	if (!t || !out)
		return error_set(err, PM_ERR_INTERNAL, "", "no CSV table or output");
	*out = NULL;
	if (init(&l, sa_col, group_col, name)) {
		st = error_set(err, PM_ERR_NOMEM, "", "out of memory reading CSV");
		goto out;
	}
	on_header(&l, (const char *const *)t->header, t->n_cols, t->header_line);
	for (size_t r = 0; r < t->n_rows && !l.failed; r++)
		on_row(&l, (const char *const *)t->cells + r * t->n_cols,
		       t->row_line ? t->row_line[r] : r + 2);
	l.n_rows = t->n_rows;
	st = finish(&l, out, err);
out:
	loader_clear(&l);
	return st;
}

/* ---- as the text arrives ------------------------------------------------------ */

static enum pm_status loader_row(void *ctx, const char *const *f, size_t n, size_t line, int header,
				 struct pm_error *err)
{
	if (header)
		on_header(ctx, f, n, line);
	else
		on_row(ctx, f, line);
	return PM_OK; /* the dataset's errors wait: a parse error further on wins */
}

struct csv_loader *csv_loader_create(const char *sa_col, const char *group_col, const char *name)
{
	struct csv_loader *l = malloc(sizeof *l);

	if (!l)
		return NULL;
	if (init(l, sa_col, group_col, name) || !(l->cs = csv_stream_create(loader_row, l))) {
		csv_loader_destroy(l);
		return NULL;
	}
	return l;
}

void csv_loader_feed(struct csv_loader *l, const char *data, size_t n)
{
	csv_stream_feed(l->cs, data, n, NULL);
}

enum pm_status csv_loader_finish(struct csv_loader *l, struct dataset **out, int *malformed,
				 struct pm_error *err)
{
	enum pm_status st = csv_stream_end(l->cs, err);

	*out = NULL;
	*malformed = st == PM_ERR_INPUT;
	return st ? st : finish(l, out, err);
}

void csv_loader_destroy(struct csv_loader *l)
{
	if (!l)
		return;
	loader_clear(l);
	free(l);
}
