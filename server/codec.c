/*
 * JSON codec, the way in (SPEC section 3): datasets and solver options,
 * strictly (unknown keys, limits), and the input helpers that
 * codec_knowledge.c (knowledge documents) shares through
 * codec_internal.h; codec_out.c writes rules, knowledge, datasets and
 * results. Validation of the JSON shape lives here; validation of the
 * content (duplicate names, unknown values, probability ranges) stays in
 * the constraints/ builders so the CLI, the HTTP service and the tests all
 * get the same rules and messages.
 */
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_internal.h"

#define NUM_LEN	  CODEC_NUM_LEN
#define FIELD_LEN CODEC_FIELD_LEN
#define WHERE_LEN CODEC_WHERE_LEN

/* ---- input helpers ------------------------------------------------------ */

const char *codec_type_name(const json_t *j)
{
	static const char *const names[] = {
	    [JSON_OBJECT] = "an object",   [JSON_ARRAY] = "an array",
	    [JSON_STRING] = "a string",	   [JSON_INTEGER] = "an integer",
	    [JSON_REAL] = "a real number", [JSON_TRUE] = "true",
	    [JSON_FALSE] = "false",	   [JSON_NULL] = "null",
	};

	return j ? names[json_typeof(j)] : "nothing";
}

/* Shortest of %.15g/%.16g/%.17g that reads back as x, so 0.1 is "0.1". */
static void real_text(double x, char *buf, size_t len)
{
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, len, "%.*g", prec, x);
		if (strtod(buf, NULL) == x)
			return;
	}
}

/* Numbers are values as their JSON text: 39 and "39" are the same value
 * (SPEC section 3). */
const char *codec_value_text(const json_t *v, char *buf)
{
	if (json_is_string(v))
		return json_string_value(v);
	if (json_is_integer(v)) {
		snprintf(buf, NUM_LEN, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		return buf;
	}
	if (json_is_real(v)) {
		real_text(json_real_value(v), buf, NUM_LEN);
		return buf;
	}
	return NULL;
}

/* "got 0" for numbers (the offending value), "got a string" otherwise. */
static const char *got(const json_t *v, char *buf)
{
	const char *num = json_is_number(v) ? codec_value_text(v, buf) : NULL;

	return num ? num : codec_type_name(v);
}

/* Wrong type or missing: "is missing; it must be X" / "must be X, got Y". */
enum pm_status codec_bad_value(struct pm_error *err, const char *field, const char *want,
			       const json_t *v)
{
	char buf[NUM_LEN];

	if (!v)
		return error_set(err, PM_ERR_INPUT, field, "is missing; it must be %s", want);
	return error_set(err, PM_ERR_INPUT, field, "must be %s, got %s", want, got(v, buf));
}

/* ---- keys --------------------------------------------------------------- */

/*
 * The keys each object of a document may have (NULL-terminated). Any other
 * key is an error: a misspelt "positve" must not be silently dropped.
 * (codec_knowledge.c has the knowledge document's.)
 */
static const char *const dataset_keys[] = {
    "name", "qi_attributes", "sa_attribute", "records", "qit", "st", NULL};
static const char *const record_keys[] = {"qi", "group", "sa", NULL};
static const char *const qit_keys[] = {"qi", "group", NULL};
static const char *const st_keys[] = {"group", "sa", "count", NULL};
static const char *const solver_keys[] = {"method", "tolerance", "max_iterations", "time_limit",
					  NULL};

static size_t key_count(const char *const *keys)
{
	size_t n = 0;

	while (keys && keys[n])
		n++;
	return n;
}

static int has_key(const char *const *keys, const char *key)
{
	for (; keys && *keys; keys++)
		if (!strcmp(*keys, key))
			return 1;
	return 0;
}

/* "\"a\", \"b\" and \"c\"" into buf. */
static void key_list(const char *const *keys, char *buf, size_t len)
{
	size_t n = key_count(keys), pos = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && pos < len; i++) {
		const char *sep = i == 0 ? "" : ", ";
		int w;

		if (i > 0 && i + 1 == n)
			sep = " and ";
		w = snprintf(buf + pos, len - pos, "%s\"%s\"", sep, keys[i]);
		pos += w > 0 ? (size_t)w : 0;
	}
}

enum pm_status codec_check_keys(const json_t *obj, const char *where, const char *const *known,
				struct pm_error *err)
{
	char field[FIELD_LEN], clip[ERROR_CLIP_SIZE], list[FIELD_LEN * 2];
	const char *key, *hint;
	json_t *v;

	json_object_foreach((json_t *)obj, key, v)
	{
		if (has_key(known, key))
			continue;
		snprintf(field, sizeof field, "%s%s%s", where, *where ? "." : "",
			 error_clip(key, clip));
		key_list(known, list, sizeof list);
		hint = error_suggest(key, known, key_count(known));
		if (hint)
			return error_set(err, PM_ERR_INPUT, field,
					 "unknown key; did you mean \"%s\"?", hint);
		return error_set(err, PM_ERR_INPUT, field, "unknown key; the keys here are %s",
				 list);
	}
	return PM_OK;
}

/* obj[key] as a data value (string or number), reported as where.key. */
enum pm_status codec_get_value(const json_t *obj, const char *where, const char *key, char *buf,
			       const char **out, struct pm_error *err)
{
	const json_t *v = json_object_get(obj, key);
	char field[FIELD_LEN];

	*out = codec_value_text(v, buf);
	if (*out)
		return PM_OK;
	snprintf(field, sizeof field, "%s.%s", where, key);
	return codec_bad_value(err, field, "a string or number", v);
}

/* obj["group"]: an integer or a string, as text. */
enum pm_status codec_get_group(const json_t *obj, const char *where, char *buf, const char **out,
			       struct pm_error *err)
{
	const json_t *v = json_object_get(obj, "group");
	char field[FIELD_LEN];

	if (json_is_string(v) || json_is_integer(v)) {
		*out = codec_value_text(v, buf);
		return PM_OK;
	}
	snprintf(field, sizeof field, "%s.group", where);
	return codec_bad_value(err, field, "an integer or string", v);
}

enum pm_status codec_get_values(const json_t *arr, const char *field, const char **out,
				char (*num)[NUM_LEN], struct pm_error *err)
{
	char f[FIELD_LEN];

	for (size_t i = 0; i < json_array_size(arr); i++) {
		const json_t *v = json_array_get(arr, i);

		if (!(out[i] = codec_value_text(v, num[i]))) {
			snprintf(f, sizeof f, "%s[%zu]", field, i);
			return codec_bad_value(err, f, "a string or number", v);
		}
	}
	return PM_OK;
}

/* ---- datasets ----------------------------------------------------------- */

struct ds_head {
	const char *name;
	const char *attrs[DATASET_MAX_ATTRS];
	size_t n_attrs;
	const char *sa;
};

/* Room for one row's values: n_attrs QI values, group, SA. */
struct row_buf {
	char num[DATASET_MAX_ATTRS + 2][NUM_LEN];
	const char *qi[DATASET_MAX_ATTRS];
	const char *group, *sa;
};

static enum pm_status parse_attrs(const json_t *qa, struct ds_head *h, struct pm_error *err)
{
	char field[FIELD_LEN];
	const json_t *v;
	size_t i;

	if (!json_is_array(qa))
		return codec_bad_value(err, "qi_attributes", "an array of attribute names", qa);
	h->n_attrs = json_array_size(qa);
	if (h->n_attrs > DATASET_MAX_ATTRS)
		return error_set(err, PM_ERR_INPUT, "qi_attributes",
				 "has %zu attributes, at most %d are supported", h->n_attrs,
				 DATASET_MAX_ATTRS);
	for (i = 0; i < h->n_attrs; i++) {
		v = json_array_get(qa, i);
		h->attrs[i] = json_string_value(v);
		if (!h->attrs[i]) {
			snprintf(field, sizeof field, "qi_attributes[%zu]", i);
			return codec_bad_value(err, field, "a string", v);
		}
	}
	return PM_OK;
}

static enum pm_status parse_head(const json_t *j, struct ds_head *h, struct pm_error *err)
{
	const json_t *name = json_object_get(j, "name");
	const json_t *sa = json_object_get(j, "sa_attribute");
	enum pm_status st;

	h->name = NULL;
	if (name && !json_is_null(name) && !json_is_string(name))
		return codec_bad_value(err, "name", "a string", name);
	h->name = json_string_value(name);
	if ((st = parse_attrs(json_object_get(j, "qi_attributes"), h, err)))
		return st;
	h->sa = json_string_value(sa);
	if (!h->sa)
		return codec_bad_value(err, "sa_attribute", "a string", sa);
	return PM_OK;
}

/* Which form: "records" (records form) or "qit" + "st" (published form). */
static enum pm_status parse_form(const json_t *j, int *published, struct pm_error *err)
{
	int rec = json_object_get(j, "records") != NULL;
	int qit = json_object_get(j, "qit") != NULL;
	int st = json_object_get(j, "st") != NULL;

	*published = qit || st;
	if (rec && (qit || st))
		return error_set(err, PM_ERR_INPUT, "records",
				 "cannot be combined with \"qit\"/\"st\": give either the records "
				 "form or the published form");
	if (rec || (qit && st))
		return PM_OK;
	if (qit)
		return error_set(err, PM_ERR_INPUT, "st",
				 "is missing; the published form needs both \"qit\" and \"st\"");
	if (st)
		return error_set(err, PM_ERR_INPUT, "qit",
				 "is missing; the published form needs both \"qit\" and \"st\"");
	return error_set(err, PM_ERR_INPUT, "records",
			 "is missing; give \"records\" (records form) or \"qit\" and \"st\" "
			 "(published form)");
}

static enum pm_status get_rows(const json_t *j, const char *key, const json_t **rows,
			       struct pm_error *err)
{
	*rows = json_object_get(j, key);
	if (!json_is_array(*rows))
		return codec_bad_value(err, key, "an array", *rows);
	return PM_OK;
}

enum pm_status codec_check_row(const json_t *row, const char *where, struct pm_error *err)
{
	if (json_is_object(row))
		return PM_OK;
	return error_set(err, PM_ERR_INPUT, where, "must be an object, got %s",
			 codec_type_name(row));
}

/* row["qi"]: exactly n_attrs data values. */
static enum pm_status get_qi(const json_t *row, const char *where, size_t n_attrs,
			     struct row_buf *rb, struct pm_error *err)
{
	const json_t *qi = json_object_get(row, "qi");
	char field[FIELD_LEN], want[64];

	snprintf(field, sizeof field, "%s.qi", where);
	snprintf(want, sizeof want, "an array of %zu values (qi_attributes)", n_attrs);
	if (!json_is_array(qi))
		return codec_bad_value(err, field, want, qi);
	if (json_array_size(qi) != n_attrs)
		return error_set(err, PM_ERR_INPUT, field, "must be %s, got %zu", want,
				 json_array_size(qi));
	return codec_get_values(qi, field, rb->qi, rb->num, err);
}

/* A "records" row, or a "qit" row (no "sa") of the published form. */
static enum pm_status add_record(struct dataset_builder *b, const json_t *row, const char *where,
				 size_t n_attrs, int qit, struct pm_error *err)
{
	struct row_buf rb;
	enum pm_status st;

	if ((st = codec_check_row(row, where, err)) ||
	    (st = codec_check_keys(row, where, qit ? qit_keys : record_keys, err)) ||
	    (st = get_qi(row, where, n_attrs, &rb, err)) ||
	    (st = codec_get_group(row, where, rb.num[DATASET_MAX_ATTRS], &rb.group, err)) ||
	    (!qit &&
	     (st = codec_get_value(row, where, "sa", rb.num[DATASET_MAX_ATTRS + 1], &rb.sa, err))))
		return st;
	if (qit)
		st = dataset_builder_add_qit(b, rb.qi, rb.group, err);
	else
		st = dataset_builder_add_record(b, rb.qi, rb.group, rb.sa, err);
	if (st)
		error_prefix(err, where);
	return st;
}

static enum pm_status add_st(struct dataset_builder *b, const json_t *row, const char *where,
			     struct pm_error *err)
{
	struct row_buf rb;
	const json_t *count = json_object_get(row, "count");
	char field[FIELD_LEN];
	enum pm_status st;

	if ((st = codec_check_row(row, where, err)) ||
	    (st = codec_check_keys(row, where, st_keys, err)) ||
	    (st = codec_get_group(row, where, rb.num[0], &rb.group, err)) ||
	    (st = codec_get_value(row, where, "sa", rb.num[1], &rb.sa, err)))
		return st;
	if (!json_is_integer(count) || json_integer_value(count) < 1) {
		snprintf(field, sizeof field, "%s.count", where);
		return codec_bad_value(err, field, "a positive integer", count);
	}
	st = dataset_builder_add_st(b, rb.group, rb.sa, json_integer_value(count), err);
	if (st)
		error_prefix(err, where);
	return st;
}

/* Feeds every row of j[key] to the builder; kind 0 records, 1 qit, 2 st. */
static enum pm_status add_rows(struct dataset_builder *b, const json_t *j, const char *key,
			       int kind, size_t n_attrs, struct pm_error *err)
{
	const json_t *rows, *row;
	char where[WHERE_LEN];
	enum pm_status st;
	size_t i;

	if ((st = get_rows(j, key, &rows, err)))
		return st;
	for (i = 0; i < json_array_size(rows); i++) {
		row = json_array_get(rows, i);
		snprintf(where, sizeof where, "%s[%zu]", key, i);
		if (kind == 2)
			st = add_st(b, row, where, err);
		else
			st = add_record(b, row, where, n_attrs, kind == 1, err);
		if (st)
			return st;
	}
	return PM_OK;
}

enum pm_status codec_dataset(const json_t *j, struct dataset **out, struct pm_error *err)
{
	struct pm_error local;
	struct dataset_builder *b = NULL;
	struct ds_head h;
	enum pm_status st;
	int published;

	if (!err)
		err = &local;
	*out = NULL;
	if (!json_is_object(j))
		return error_set(err, PM_ERR_INPUT, "", "a dataset must be a JSON object, got %s",
				 codec_type_name(j));
	/* the builder refuses over-long names before any row is read */
	if ((st = codec_check_keys(j, "", dataset_keys, err)) || (st = parse_head(j, &h, err)) ||
	    (st = parse_form(j, &published, err)))
		return st;
	b = dataset_builder_create(h.name, h.attrs, h.n_attrs, h.sa, err);
	if (!b)
		return err->status ? err->status : PM_ERR_NOMEM;
	if (published)
		st = add_rows(b, j, "qit", 1, h.n_attrs, err);
	else
		st = add_rows(b, j, "records", 0, h.n_attrs, err);
	if (!st && published)
		st = add_rows(b, j, "st", 2, h.n_attrs, err);
	if (!st)
		st = dataset_builder_finish(b, out, err);
	dataset_builder_destroy(b);
	return st;
}

/* ---- solver options ----------------------------------------------------- */

/*
 * Upper limits of the options (docs/operations.md, "Input limits"); each
 * is also finite and not subnormal (limits_check). A tolerance is in
 * records and no table holds 1e9 of them; a time limit matches the most
 * `serve --analysis-time-limit` takes; report.c weighs counts of records.
 */
#define MAX_TOLERANCE  1e9
#define MAX_TIME_LIMIT 1e7
#define MAX_REPORT_C   1e6

/* j[key], a number already known to be in (0, inf) or [0, 1], checked
 * by limits_check against [0, max] under field. */
static enum pm_status option_limit(const json_t *j, const char *field, double max, double *out,
				   struct pm_error *err)
{
	*out = json_number_value(j);
	return limits_check(out, 0, max, field, err);
}

/* "time_limit": seconds, a positive finite number (absent: no limit). */
static enum pm_status parse_time_limit(const json_t *limit, struct solver_options *o,
				       struct pm_error *err)
{
	if (!limit)
		return PM_OK;
	if (!json_is_number(limit) || !(json_number_value(limit) > 0) ||
	    !isfinite(json_number_value(limit)))
		return codec_bad_value(err, "solver.time_limit",
				       "a positive finite number of seconds", limit);
	return option_limit(limit, "solver.time_limit", MAX_TIME_LIMIT, &o->time_limit, err);
}

enum pm_status codec_solver_options(const json_t *j, struct solver_options *o, struct pm_error *err)
{
	const json_t *tol, *iter, *method;

	if (!j || json_is_null(j))
		return PM_OK;
	if (!json_is_object(j))
		return codec_bad_value(err, "solver", "an object", j);
	if (codec_check_keys(j, "solver", solver_keys, err))
		return PM_ERR_INPUT;
	method = json_object_get(j, "method");
	if (method && !json_is_string(method))
		return codec_bad_value(err, "solver.method", "\"two-level\" or \"full-dual\"",
				       method);
	if (method && strcmp(json_string_value(method), "two-level") &&
	    strcmp(json_string_value(method), "full-dual"))
		return error_set(err, PM_ERR_INPUT, "solver.method",
				 "must be \"two-level\" or \"full-dual\", got \"%.64s\"",
				 json_string_value(method));
	if (method)
		o->method = strcmp(json_string_value(method), "full-dual") ? SOLVER_TWO_LEVEL
									   : SOLVER_FULL_DUAL;
	tol = json_object_get(j, "tolerance");
	iter = json_object_get(j, "max_iterations");
	if (tol && (!json_is_number(tol) || !(json_number_value(tol) > 0) ||
		    !isfinite(json_number_value(tol))))
		return codec_bad_value(err, "solver.tolerance", "a positive finite number", tol);
	if (iter && (!json_is_integer(iter) || json_integer_value(iter) < 1 ||
		     json_integer_value(iter) > INT_MAX))
		return codec_bad_value(err, "solver.max_iterations",
				       "a positive integer (at most 2^31-1)", iter);
	if (tol && option_limit(tol, "solver.tolerance", MAX_TOLERANCE, &o->tolerance, err))
		return PM_ERR_INPUT;
	if (iter)
		o->max_iterations = (int)json_integer_value(iter);
	return parse_time_limit(json_object_get(j, "time_limit"), o, err);
}

/* "report": {"threshold": t in [0, 1], "c": c > 0} (SPEC 4.1). */
enum pm_status codec_report_options(const json_t *j, struct privacy_options *o,
				    struct pm_error *err)
{
	static const char *const keys[] = {"threshold", "c", NULL};
	const json_t *t, *c;

	if (!j || json_is_null(j))
		return PM_OK;
	if (!json_is_object(j))
		return codec_bad_value(err, "report", "an object", j);
	if (codec_check_keys(j, "report", keys, err))
		return PM_ERR_INPUT;
	t = json_object_get(j, "threshold");
	c = json_object_get(j, "c");
	if (t &&
	    (!json_is_number(t) || !(json_number_value(t) >= 0) || !(json_number_value(t) <= 1)))
		return codec_bad_value(err, "report.threshold", "a number from 0 to 1", t);
	if (c &&
	    (!json_is_number(c) || !(json_number_value(c) > 0) || !isfinite(json_number_value(c))))
		return codec_bad_value(err, "report.c", "a positive finite number", c);
	if ((t && option_limit(t, "report.threshold", 1, &o->threshold, err)) ||
	    (c && option_limit(c, "report.c", MAX_REPORT_C, &o->c, err)))
		return PM_ERR_INPUT;
	return PM_OK;
}
