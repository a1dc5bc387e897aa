/*
 * JSON codec, the way in (SPEC section 3): datasets, knowledge and solver
 * options, strictly (unknown keys, limits); codec_out.c writes rules,
 * knowledge, datasets and results. Validation of the JSON shape
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
static const char *const rule_keys[] = {"if",	    "then",    "probability", "min",
					"max",	    "source",  "support",     "confidence",
					"achieved", "binding", NULL};
static const char *const mine_keys[] = {"positive",	 "negative",  "min_support",
					"qi_attributes", "vagueness", NULL};
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

/* mine.vagueness, a number in [0, 1] when present. */
static enum pm_status get_vagueness(const json_t *mine, double *out, struct pm_error *err)
{
	const json_t *v = json_object_get(mine, "vagueness");

	if (!v)
		return PM_OK;
	if (!json_is_number(v))
		return bad_value(err, "mine.vagueness", "a number", v);
	*out = json_number_value(v);
	if (!(*out >= 0 && *out <= 1))
		return error_set(err, PM_ERR_INPUT, "mine.vagueness",
				 "must be between 0 and 1, got %g", *out);
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
	if ((st = check_keys(m, "mine", mine_keys, NULL, err)) ||
	    (st = get_count(m, "positive", 0, MINER_MAX_K, &o->positive, err)) ||
	    (st = get_count(m, "negative", 0, MINER_MAX_K, &o->negative, err)) ||
	    (st = get_count(m, "min_support", 0, LLONG_MAX, &support, err)) ||
	    (st = get_count(m, "qi_attributes", 1, LLONG_MAX, &o->qi_attributes, err)))
		return st;
	o->min_support = support;
	if ((st = get_vagueness(m, &o->vagueness, err)))
		return st;
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
