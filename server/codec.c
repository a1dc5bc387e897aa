/*
 * JSON codec (SPEC sections 3-4): datasets, knowledge and solver options in;
 * rules, knowledge, datasets and results out. Validation of the JSON shape
 * lives here; validation of the content (duplicate names, unknown values,
 * probability ranges) stays in the constraints/ builders so the CLI, the
 * HTTP service and the tests all get the same rules and messages.
 */
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"

/* Room for the text of a JSON number ("%lld" or "%.17g") or a field name. */
#define NUM_LEN	  32
#define FIELD_LEN 256
#define WHERE_LEN 48

/* User rules a knowledge document may hold (README "Errors and limits"):
 * each is resolved against the data (a pass over its tuples) before the
 * solve, so the count is capped before any is read. */
#define MAX_RULES 100000

/* ---- input helpers ------------------------------------------------------ */

static const char *type_name(const json_t *j)
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

/*
 * The text a JSON value stands for as a data value: strings as they are,
 * numbers as their JSON text (so 39 and "39" are the same value). NULL for
 * any other type. buf must hold NUM_LEN bytes.
 */
static const char *value_text(const json_t *v, char *buf)
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
	const char *num = json_is_number(v) ? value_text(v, buf) : NULL;

	return num ? num : type_name(v);
}

/* Wrong type or missing: "is missing; it must be X" / "must be X, got Y". */
static enum pm_status bad_value(struct pm_error *err, const char *field, const char *want,
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
 * "later" lists keys of SPEC section 3 that this version does not
 * implement yet; they are refused as such rather than as typos.
 */
static const char *const dataset_keys[] = {
    "name", "qi_attributes", "sa_attribute", "records", "qit", "st", NULL};
static const char *const record_keys[] = {"qi", "group", "sa", NULL};
static const char *const qit_keys[] = {"qi", "group", NULL};
static const char *const st_keys[] = {"group", "sa", "count", NULL};
/* "solver": one file can carry a whole analysis for the CLI */
static const char *const knowledge_keys[] = {"rules", "mine", "solver", NULL};
static const char *const knowledge_later[] = {"statements", "individuals", NULL};
/* codec_rule writes "source", "support" and "confidence" too, and `pmaxent
 * mine` output must read back as knowledge */
static const char *const rule_keys[] = {"if",	  "then",    "probability", "min", "max",
					"source", "support", "confidence",  NULL};
static const char *const mine_keys[] = {"positive", "negative", "min_support", "qi_attributes",
					NULL};
static const char *const mine_later[] = {"vagueness", NULL};
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

/* Refuses the first key of obj that is not in known, as where.key (key
 * alone at the top of a document), with a "did you mean" when one is close
 * (error_suggest), else the list of the keys that are. */
static enum pm_status check_keys(const json_t *obj, const char *where, const char *const *known,
				 const char *const *later, struct pm_error *err)
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
		if (has_key(later, key))
			return error_set(err, PM_ERR_INPUT, field,
					 "is not supported yet; the keys supported here are %s",
					 list);
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
static enum pm_status get_value(const json_t *obj, const char *where, const char *key, char *buf,
				const char **out, struct pm_error *err)
{
	const json_t *v = json_object_get(obj, key);
	char field[FIELD_LEN];

	*out = value_text(v, buf);
	if (*out)
		return PM_OK;
	snprintf(field, sizeof field, "%s.%s", where, key);
	return bad_value(err, field, "a string or number", v);
}

/* obj["group"]: an integer or a string, as text. */
static enum pm_status get_group(const json_t *obj, const char *where, char *buf, const char **out,
				struct pm_error *err)
{
	const json_t *v = json_object_get(obj, "group");
	char field[FIELD_LEN];

	if (json_is_string(v) || json_is_integer(v)) {
		*out = value_text(v, buf);
		return PM_OK;
	}
	snprintf(field, sizeof field, "%s.group", where);
	return bad_value(err, field, "an integer or string", v);
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
		return bad_value(err, "qi_attributes", "an array of attribute names", qa);
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
			return bad_value(err, field, "a string", v);
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
		return bad_value(err, "name", "a string", name);
	h->name = json_string_value(name);
	if ((st = parse_attrs(json_object_get(j, "qi_attributes"), h, err)))
		return st;
	h->sa = json_string_value(sa);
	if (!h->sa)
		return bad_value(err, "sa_attribute", "a string", sa);
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
		return bad_value(err, key, "an array", *rows);
	return PM_OK;
}

static enum pm_status check_row(const json_t *row, const char *where, struct pm_error *err)
{
	if (json_is_object(row))
		return PM_OK;
	return error_set(err, PM_ERR_INPUT, where, "must be an object, got %s", type_name(row));
}

/* row["qi"]: exactly n_attrs data values. */
static enum pm_status get_qi(const json_t *row, const char *where, size_t n_attrs,
			     struct row_buf *rb, struct pm_error *err)
{
	const json_t *qi = json_object_get(row, "qi");
	char field[FIELD_LEN], want[64];
	size_t a;

	snprintf(field, sizeof field, "%s.qi", where);
	snprintf(want, sizeof want, "an array of %zu values (qi_attributes)", n_attrs);
	if (!json_is_array(qi))
		return bad_value(err, field, want, qi);
	if (json_array_size(qi) != n_attrs)
		return error_set(err, PM_ERR_INPUT, field, "must be %s, got %zu", want,
				 json_array_size(qi));
	for (a = 0; a < n_attrs; a++) {
		const json_t *v = json_array_get(qi, a);

		rb->qi[a] = value_text(v, rb->num[a]);
		if (!rb->qi[a]) {
			snprintf(field, sizeof field, "%s.qi[%zu]", where, a);
			return bad_value(err, field, "a string or number", v);
		}
	}
	return PM_OK;
}

/* A "records" row, or a "qit" row (no "sa") of the published form. */
static enum pm_status add_record(struct dataset_builder *b, const json_t *row, const char *where,
				 size_t n_attrs, int qit, struct pm_error *err)
{
	struct row_buf rb;
	enum pm_status st;

	if ((st = check_row(row, where, err)) ||
	    (st = check_keys(row, where, qit ? qit_keys : record_keys, NULL, err)) ||
	    (st = get_qi(row, where, n_attrs, &rb, err)) ||
	    (st = get_group(row, where, rb.num[DATASET_MAX_ATTRS], &rb.group, err)) ||
	    (!qit &&
	     (st = get_value(row, where, "sa", rb.num[DATASET_MAX_ATTRS + 1], &rb.sa, err))))
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

	if ((st = check_row(row, where, err)) ||
	    (st = check_keys(row, where, st_keys, NULL, err)) ||
	    (st = get_group(row, where, rb.num[0], &rb.group, err)) ||
	    (st = get_value(row, where, "sa", rb.num[1], &rb.sa, err)))
		return st;
	if (!json_is_integer(count) || json_integer_value(count) < 1) {
		snprintf(field, sizeof field, "%s.count", where);
		return bad_value(err, field, "a positive integer", count);
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
				 type_name(j));
	/* the builder refuses over-long names before any row is read */
	if ((st = check_keys(j, "", dataset_keys, NULL, err)) || (st = parse_head(j, &h, err)) ||
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

/* ---- knowledge ---------------------------------------------------------- */

struct opt_num {
	int has;
	double v;
};

struct user_rule {
	const char *attrs[DATASET_MAX_ATTRS], *values[DATASET_MAX_ATTRS], *then;
	char num[DATASET_MAX_ATTRS + 1][NUM_LEN];
	size_t n_terms;
	struct opt_num p, min, max;
};

static enum pm_status get_number(const json_t *obj, const char *where, const char *key,
				 struct opt_num *out, struct pm_error *err)
{
	const json_t *v = json_object_get(obj, key);
	char field[FIELD_LEN];

	out->has = v != NULL;
	out->v = json_number_value(v);
	if (!v || json_is_number(v))
		return PM_OK;
	snprintf(field, sizeof field, "%s.%s", where, key);
	return bad_value(err, field, "a number", v);
}

static enum pm_status get_conditions(const json_t *rule, const char *where, struct user_rule *u,
				     struct pm_error *err)
{
	/* jansson's object iteration takes a non-const object; it only reads */
	json_t *c = json_object_get(rule, "if");
	char field[FIELD_LEN], clip[ERROR_CLIP_SIZE];
	const char *key;
	json_t *v;

	snprintf(field, sizeof field, "%s.if", where);
	if (!json_is_object(c))
		return bad_value(err, field, "an object of attribute: value conditions", c);
	if (json_object_size(c) > DATASET_MAX_ATTRS)
		return error_set(err, PM_ERR_INPUT, field,
				 "has %zu conditions, at most %d are supported",
				 json_object_size(c), DATASET_MAX_ATTRS);
	u->n_terms = 0;
	for (void *it = json_object_iter(c); it; it = json_object_iter_next(c, it)) {
		key = json_object_iter_key(it);
		v = json_object_iter_value(it);
		u->attrs[u->n_terms] = key;
		u->values[u->n_terms] = value_text(v, u->num[u->n_terms]);
		if (!u->values[u->n_terms]) {
			snprintf(field, sizeof field, "%s.if.%s", where, error_clip(key, clip));
			return bad_value(err, field, "a string or number", v);
		}
		u->n_terms++;
	}
	return PM_OK;
}

static enum pm_status parse_rule(const json_t *rule, const char *where, const struct dataset *ds,
				 struct knowledge *k, struct pm_error *err)
{
	struct user_rule u;
	enum pm_status st;

	if ((st = check_row(rule, where, err)) ||
	    (st = check_keys(rule, where, rule_keys, NULL, err)) ||
	    (st = get_conditions(rule, where, &u, err)) ||
	    (st = get_value(rule, where, "then", u.num[DATASET_MAX_ATTRS], &u.then, err)) ||
	    (st = get_number(rule, where, "probability", &u.p, err)) ||
	    (st = get_number(rule, where, "min", &u.min, err)) ||
	    (st = get_number(rule, where, "max", &u.max, err)))
		return st;
	return knowledge_add_user(k, ds, u.attrs, u.values, u.n_terms, u.then, u.p.has, u.p.v,
				  u.min.has, u.min.v, u.max.has, u.max.v, where, err);
}

static enum pm_status parse_rules(const json_t *rules, const struct dataset *ds,
				  struct knowledge *k, struct pm_error *err)
{
	char where[WHERE_LEN];
	const json_t *rule;
	enum pm_status st;
	size_t i;

	if (!rules || json_is_null(rules))
		return PM_OK;
	if (!json_is_array(rules))
		return bad_value(err, "rules", "an array of rules", rules);
	if (json_array_size(rules) > MAX_RULES)
		return error_set(err, PM_ERR_INPUT, "rules",
				 "has %zu rules; at most %d are allowed", json_array_size(rules),
				 MAX_RULES);
	for (i = 0; i < json_array_size(rules); i++) {
		rule = json_array_get(rules, i);
		snprintf(where, sizeof where, "rules[%zu]", i);
		if ((st = parse_rule(rule, where, ds, k, err)))
			return st;
	}
	return PM_OK;
}

/* mine[key], an integer in [min, max] when present; *out keeps its default
 * if not. */
static enum pm_status get_count(const json_t *mine, const char *key, long long min, long long max,
				size_t *out, struct pm_error *err)
{
	const json_t *v = json_object_get(mine, key);
	char field[FIELD_LEN];

	if (!v)
		return PM_OK;
	snprintf(field, sizeof field, "mine.%s", key);
	if (!json_is_integer(v) || json_integer_value(v) < min)
		return bad_value(err, field,
				 min > 0 ? "a positive integer" : "a non-negative integer", v);
	if (json_integer_value(v) > max)
		return error_set(err, PM_ERR_INPUT, field,
				 "must be at most %lld, got %" JSON_INTEGER_FORMAT, max,
				 json_integer_value(v));
	*out = (size_t)json_integer_value(v);
	return PM_OK;
}

static enum pm_status parse_mine(const json_t *m, const struct dataset *ds, struct miner_options *o,
				 struct pm_error *err)
{
	size_t support;
	enum pm_status st;

	if (!json_is_object(m))
		return bad_value(err, "mine", "an object", m);
	miner_options_init(o);
	support = (size_t)o->min_support;
	if ((st = check_keys(m, "mine", mine_keys, mine_later, err)) ||
	    (st = get_count(m, "positive", 0, MINER_MAX_K, &o->positive, err)) ||
	    (st = get_count(m, "negative", 0, MINER_MAX_K, &o->negative, err)) ||
	    (st = get_count(m, "min_support", 0, LLONG_MAX, &support, err)) ||
	    (st = get_count(m, "qi_attributes", 1, LLONG_MAX, &o->qi_attributes, err)))
		return st;
	o->min_support = support;
	if (ds && o->qi_attributes > ds->n_attrs)
		return error_set(err, PM_ERR_INPUT, "mine.qi_attributes",
				 "must be at most %zu (the number of QI attributes), got %zu",
				 ds->n_attrs, o->qi_attributes);
	return PM_OK;
}

enum pm_status codec_knowledge(const json_t *j, const struct dataset *ds, struct knowledge *k,
			       struct miner_options *mine, int *has_mine, struct pm_error *err)
{
	struct pm_error local;
	const json_t *m;
	enum pm_status st;

	if (!err)
		err = &local;
	*has_mine = 0;
	if (!j || json_is_null(j))
		return PM_OK;
	if (!json_is_object(j))
		return error_set(err, PM_ERR_INPUT, "",
				 "knowledge must be a JSON object ({\"rules\": [...], \"mine\": "
				 "{...}}), got %s",
				 type_name(j));
	if ((st = check_keys(j, "", knowledge_keys, knowledge_later, err)))
		return st;
	if ((st = parse_rules(json_object_get(j, "rules"), ds, k, err)))
		return st;
	m = json_object_get(j, "mine");
	if (!m || json_is_null(m))
		return PM_OK;
	if ((st = parse_mine(m, ds, mine, err)))
		return st;
	*has_mine = 1;
	return PM_OK;
}

void codec_request_field(struct pm_error *err)
{
	if ((err->status == PM_ERR_INPUT || err->status == PM_ERR_INCONSISTENT) &&
	    strncmp(err->field, "solver", 6))
		error_prefix(err, "knowledge");
}

/* ---- solver options ----------------------------------------------------- */

/* "time_limit": seconds, a positive finite number (absent: no limit). */
static enum pm_status parse_time_limit(const json_t *limit, struct solver_options *o,
				       struct pm_error *err)
{
	if (!limit)
		return PM_OK;
	if (!json_is_number(limit) || !(json_number_value(limit) > 0) ||
	    !isfinite(json_number_value(limit)))
		return bad_value(err, "solver.time_limit", "a positive finite number of seconds",
				 limit);
	o->time_limit = json_number_value(limit);
	return PM_OK;
}

enum pm_status codec_solver_options(const json_t *j, struct solver_options *o, struct pm_error *err)
{
	const json_t *tol, *iter, *method;

	if (!j || json_is_null(j))
		return PM_OK;
	if (!json_is_object(j))
		return bad_value(err, "solver", "an object", j);
	if (check_keys(j, "solver", solver_keys, NULL, err))
		return PM_ERR_INPUT;
	method = json_object_get(j, "method");
	if (method && !json_is_string(method))
		return bad_value(err, "solver.method", "\"two-level\" or \"full-dual\"", method);
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
		return bad_value(err, "solver.tolerance", "a positive finite number", tol);
	if (iter && (!json_is_integer(iter) || json_integer_value(iter) < 1 ||
		     json_integer_value(iter) > INT_MAX))
		return bad_value(err, "solver.max_iterations",
				 "a positive integer (at most 2^31-1)", iter);
	if (tol)
		o->tolerance = json_number_value(tol);
	if (iter)
		o->max_iterations = (int)json_integer_value(iter);
	return parse_time_limit(json_object_get(j, "time_limit"), o, err);
}

/* ---- output helpers ----------------------------------------------------- */

/*
 * A JSON string for s. Values from CSV files are not checked for UTF-8, and
 * jansson refuses invalid UTF-8, so invalid bytes become U+FFFD rather than
 * losing the whole document.
 */
static json_t *jstr(const char *s)
{
	json_t *j = json_string(s);
	size_t n = strlen(s), o = 0;
	char *buf;

	if (j || !(buf = malloc(3 * n + 1)))
		return j;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x80) {
			buf[o++] = (char)c;
		} else {
			memcpy(buf + o, "\xEF\xBF\xBD", 3);
			o += 3;
		}
	}
	buf[o] = '\0';
	j = json_string(buf);
	free(buf);
	return j;
}

/* obj[key] = v with key made valid UTF-8 like jstr; consumes v. 0 on success. */
static int put_key(json_t *obj, const char *key, json_t *v)
{
	json_t *k = jstr(key);
	int rc = 1;

	if (k)
		rc = json_object_set_new(obj, json_string_value(k), v) != 0;
	else
		json_decref(v);
	json_decref(k);
	return rc;
}

static int put(json_t *obj, const char *key, json_t *v)
{
	return json_object_set_new(obj, key, v) != 0;
}

/* Non-finite reals have no JSON form; they become null. */
static json_t *jreal(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

/* Group labels that are canonical decimal integers go out as integers, so
 * that a dataset read with "group": 7 is written back the same way. */
static json_t *jgroup(const char *label)
{
	const char *d = label + (label[0] == '-');
	size_t n = strspn(d, "0123456789");

	if (n == 0 || n > 18 || d[n] != '\0' || (d[0] == '0' && (n > 1 || d != label)))
		return jstr(label);
	return json_integer(strtoll(label, NULL, 10));
}

/* Drops obj and returns NULL when anything failed while building it. */
static json_t *checked(json_t *obj, int bad)
{
	if (!bad)
		return obj;
	json_decref(obj);
	return NULL;
}

static json_t *string_array(const char *const *s, size_t n)
{
	json_t *a = json_array();
	int bad = !a;

	for (size_t i = 0; i < n; i++)
		bad |= json_array_append_new(a, jstr(s[i]));
	return checked(a, bad);
}

static json_t *tuple_json(const struct dataset *ds, uint32_t q)
{
	const char *v[DATASET_MAX_ATTRS];

	for (size_t i = 0; i < ds->n_attrs; i++)
		v[i] = dataset_tuple_value(ds, q, i);
	return string_array(v, ds->n_attrs);
}

/* ---- rules and knowledge ------------------------------------------------ */

static const char *source_name(enum rule_source s)
{
	return s == RULE_POSITIVE ? "positive" : s == RULE_NEGATIVE ? "negative" : "user";
}

json_t *codec_rule(const struct dataset *ds, const struct rule *r)
{
	json_t *o = json_object(), *c = json_object();
	int bad = !o;

	for (uint32_t t = 0; t < r->n_terms; t++) {
		const struct dict *d = &ds->attr_values[r->attr[t]];

		bad |= put_key(c, ds->attr_names[r->attr[t]], jstr(d->str[r->value[t]]));
	}
	bad |= put(o, "if", c) | put(o, "then", jstr(ds->sa_values.str[r->sa]));
	if (r->lo == r->hi)
		bad |= put(o, "probability", jreal(r->lo));
	else
		bad |= put(o, "min", jreal(r->lo)) | put(o, "max", jreal(r->hi));
	bad |= put(o, "source", json_string(source_name(r->source)));
	if (r->source != RULE_USER && r->n_qv > 0) {
		double conf = (double)r->n_qv_s / (double)r->n_qv;

		if (r->source == RULE_NEGATIVE)
			conf = (double)(r->n_qv - r->n_qv_s) / (double)r->n_qv;
		bad |= put(o, "support", json_integer((json_int_t)r->support)) |
		       put(o, "confidence", jreal(conf));
	}
	return checked(o, bad);
}

static json_t *rules_json(const struct dataset *ds, const struct knowledge *k)
{
	json_t *a = json_array();
	int bad = !a;

	for (size_t i = 0; k && i < k->n; i++)
		bad |= json_array_append_new(a, codec_rule(ds, &k->rules[i]));
	return checked(a, bad);
}

json_t *codec_knowledge_json(const struct dataset *ds, const struct knowledge *k)
{
	json_t *o = json_object();

	return checked(o, put(o, "rules", rules_json(ds, k)));
}

/* ---- datasets out ------------------------------------------------------- */

/* Records form: one row per original record; QIT rows when there is no
 * ground truth. */
static json_t *rows_json(const struct dataset *ds)
{
	json_t *a = json_array();
	int bad = !a;

	for (size_t i = 0; i < ds->n_records; i++) {
		json_t *row = json_object();

		bad |= put(row, "qi", tuple_json(ds, ds->rec_tuple[i])) |
		       put(row, "group", jgroup(ds->group_labels[ds->rec_group[i]]));
		if (ds->has_ground_truth)
			bad |= put(row, "sa", jstr(ds->sa_values.str[ds->rec_sa[i]]));
		bad |= json_array_append_new(a, row);
	}
	return checked(a, bad);
}

/* The ST of the published form: (group, sa, count) per bucket and value. */
static json_t *st_json(const struct dataset *ds)
{
	json_t *a = json_array();
	int bad = !a;

	for (size_t b = 0; b < ds->n_groups; b++) {
		for (size_t i = ds->bs_off[b]; i < ds->bs_off[b + 1]; i++) {
			json_t *row = json_object();

			bad |= put(row, "group", jgroup(ds->group_labels[b])) |
			       put(row, "sa", jstr(ds->sa_values.str[ds->bs_value[i]])) |
			       put(row, "count", json_integer(ds->bs_count[i]));
			bad |= json_array_append_new(a, row);
		}
	}
	return checked(a, bad);
}

json_t *codec_dataset_json(const struct dataset *ds)
{
	json_t *o = json_object();
	int bad = !o;

	if (ds->name)
		bad |= put(o, "name", jstr(ds->name));
	bad |= put(o, "qi_attributes",
		   string_array((const char *const *)ds->attr_names, ds->n_attrs)) |
	       put(o, "sa_attribute", jstr(ds->sa_name));
	if (ds->has_ground_truth)
		bad |= put(o, "records", rows_json(ds));
	else
		bad |= put(o, "qit", rows_json(ds)) | put(o, "st", st_json(ds));
	return checked(o, bad);
}

/* ---- results ------------------------------------------------------------ */

static json_t *posterior_json(const struct dataset *ds, const struct solver_result *r)
{
	json_t *a = json_array();
	int bad = !a;

	for (uint32_t q = 0; q < ds->n_tuples; q++) {
		json_t *e = json_object(), *p = json_object();

		if (r->post_off)
			for (size_t i = r->post_off[q]; i < r->post_off[q + 1]; i++)
				bad |= put_key(p, ds->sa_values.str[r->post_sa[i]],
					       jreal(r->post_p[i]));
		bad |= put(e, "qi", tuple_json(ds, q)) |
		       put(e, "count", json_integer(ds->tuple_count[q])) | put(e, "p", p);
		bad |= json_array_append_new(a, e);
	}
	return checked(a, bad);
}

static json_t *constraints_json(const struct solver_result *r)
{
	json_t *o = json_object();
	int bad = !o;

	bad |= put(o, "variables", json_integer((json_int_t)r->variables)) |
	       put(o, "qi_invariants", json_integer((json_int_t)r->qi_invariants)) |
	       put(o, "sa_invariants", json_integer((json_int_t)r->sa_invariants)) |
	       put(o, "zero_invariants", json_integer((json_int_t)r->zero_invariants)) |
	       put(o, "knowledge", json_integer((json_int_t)r->knowledge)) |
	       put(o, "forced_zeros", json_integer((json_int_t)r->forced_zeros));
	return checked(o, bad);
}

static json_t *timings_json(const struct codec_timings *t)
{
	json_t *o = json_object();
	int bad = !o;

	bad |= put(o, "load", jreal(t ? t->load : 0)) | put(o, "mine", jreal(t ? t->mine : 0)) |
	       put(o, "build", jreal(t ? t->build : 0)) | put(o, "solve", jreal(t ? t->solve : 0));
	return checked(o, bad);
}

/* Where the solve step's seconds went: the search for forced zeros, the
 * metrics, and the rest (buckets solved alone, the iterative solve). */
static json_t *phases_json(const struct solver_result *r)
{
	json_t *o = json_object();
	double rest = r->seconds - r->zeros_seconds - r->metrics_seconds;
	int bad = !o;

	bad |= put(o, "forced_zeros", jreal(r->zeros_seconds)) |
	       put(o, "iterate", jreal(rest > 0 ? rest : 0)) |
	       put(o, "metrics", jreal(r->metrics_seconds));
	return checked(o, bad);
}

static json_t *dataset_summary(const struct dataset *ds)
{
	json_t *o = json_object();
	int bad = !o;

	bad |= put(o, "name", ds->name ? jstr(ds->name) : json_null()) |
	       put(o, "records", json_integer((json_int_t)ds->n_records)) |
	       put(o, "groups", json_integer((json_int_t)ds->n_groups)) |
	       put(o, "tuples", json_integer((json_int_t)ds->n_tuples));
	return checked(o, bad);
}

/* "key": value, null when unknown (no ground truth) or infinite, with
 * "key_infinite" saying which. */
static int put_accuracy(json_t *o, const char *key, int known, double v, int infinite)
{
	char inf_key[64];

	snprintf(inf_key, sizeof inf_key, "%s_infinite", key);
	return put(o, key, known && !infinite ? jreal(v) : json_null()) |
	       put(o, inf_key, json_boolean(known && infinite));
}

static json_t *asked_found(size_t asked, size_t found)
{
	return json_pack("{s:I, s:I}", "asked", (json_int_t)asked, "found", (json_int_t)found);
}

/* {"positive": {"asked", "found"}, "negative": {...}}: a Top-(50, 50) bound
 * of which only 12 positive rules exist is a weaker adversary than asked. */
static json_t *mined_json(const struct codec_mined *m)
{
	json_t *o = json_object();
	int bad = !o;

	bad |= put(o, "positive", asked_found(m->asked.positive, m->found.positive)) |
	       put(o, "negative", asked_found(m->asked.negative, m->found.negative));
	return checked(o, bad);
}

json_t *codec_result(const struct dataset *ds, const struct knowledge *k,
		     const struct solver_result *r, const struct codec_timings *t,
		     const struct codec_mined *mined)
{
	json_t *o = json_object();
	int conv = r->status == SOLVER_CONVERGED, bad = !o;

	bad |= put(o, "status", json_string(conv ? "converged" : "not_converged"));
	if (!conv)
		bad |= put(o, "reason", jstr(r->reason));
	bad |= put(o, "iterations", json_integer(r->iterations)) |
	       put(o, "max_violation", jreal(r->max_violation)) |
	       put(o, "seconds", jreal(r->seconds)) | put(o, "solve_phases", phases_json(r)) |
	       put(o, "timings", timings_json(t)) | put(o, "entropy", jreal(r->entropy)) |
	       put(o, "dataset", dataset_summary(ds)) | put(o, "constraints", constraints_json(r)) |
	       put(o, "rules", rules_json(ds, k));
	if (mined)
		bad |= put(o, "mined", mined_json(mined));
	bad |= put_accuracy(o, "estimation_accuracy", r->has_accuracy, r->estimation_accuracy,
			    r->estimation_infinite) |
	       put_accuracy(o, "baseline_accuracy", r->has_accuracy, r->baseline_accuracy,
			    r->baseline_infinite);
	bad |= put(o, "posterior", posterior_json(ds, r));
	return checked(o, bad);
}
