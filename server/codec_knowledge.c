/*
 * JSON codec, the way in: knowledge documents (SPEC sections 3 and 3.1):
 * rules, named individuals, statements and the "mine" block, strictly
 * (unknown keys at every level, limits). The JSON shape is checked here;
 * the content (names, values, bounds) by knowledge_add_user and
 * statements_add*, so that every reader gets the same messages.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_internal.h"

#define NUM_LEN	  CODEC_NUM_LEN
#define FIELD_LEN CODEC_FIELD_LEN
#define WHERE_LEN CODEC_WHERE_LEN

/*
 * What a knowledge document may hold (docs/operations.md, "Document limits"): each
 * rule, person and statement is resolved against the data before the
 * solve, so the counts are capped before any is read; a statement's terms
 * too, as one statement is one row of the model.
 */
#define MAX_RULES	100000
#define MAX_INDIVIDUALS 100000
#define MAX_STATEMENTS	100000
#define MAX_TERMS	STATEMENTS_MAX_TERMS
/* mine.min_support in records: no table holds more than 2^32 of them, and
 * the count must fit every integer type it passes through */
#define MAX_MIN_SUPPORT 4294967296LL

/* ---- keys --------------------------------------------------------------- */

/* "solver": one file can carry a whole analysis for the CLI */
/* "report": the privacy verdict's options (SPEC 4.1), read by the
 * pipeline (codec_report_options) */
static const char *const knowledge_keys[] = {"rules",  "statements", "individuals", "mine",
					     "solver", "report",     NULL};
/* codec_rule writes "source", "support" and "confidence" too, a result
 * "achieved" and "binding", and `pmaxent mine` output and a result's rules
 * must read back as knowledge */
static const char *const rule_keys[] = {"if",	    "then",    "probability", "min",
					"max",	    "source",  "support",     "confidence",
					"achieved", "binding", NULL};
/* a result's statements carry "achieved" and "binding", as its rules do */
static const char *const statement_keys[] = {"name",  "terms",	  "min",     "max",
					     "value", "achieved", "binding", NULL};
static const char *const term_keys[] = {"if", "person", "then", "coef", NULL};
/* a result's people carry "p" and "groups", and read back too */
static const char *const individual_keys[] = {"name", "qi", "group", "p", "groups", NULL};
static const char *const mine_keys[] = {"positive",	 "negative",  "min_support",
					"qi_attributes", "vagueness", NULL};

/* ---- shared parts ------------------------------------------------------- */

struct opt_num {
	int has;
	double v;
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
	return codec_bad_value(err, field, "a number", v);
}

/* The "if" object c of where: attrs/values[0 .. *n) (values' numbers as
 * text in num[i]); room for DATASET_MAX_ATTRS of each, more is an error
 * before any is read. */
static enum pm_status get_conditions(const json_t *c, const char *where, const char **attrs,
				     const char **values, char (*num)[NUM_LEN], size_t *n,
				     struct pm_error *err)
{
	char field[FIELD_LEN], clip[ERROR_CLIP_SIZE];
	/* jansson's object iteration takes a non-const object; it only reads */
	json_t *obj = (json_t *)c, *v;

	snprintf(field, sizeof field, "%s.if", where);
	if (!json_is_object(c))
		return codec_bad_value(err, field, "an object of attribute: value conditions", c);
	if (json_object_size(c) > DATASET_MAX_ATTRS)
		return error_set(err, PM_ERR_INPUT, field,
				 "has %zu conditions, at most %d are supported",
				 json_object_size(c), DATASET_MAX_ATTRS);
	*n = 0;
	for (void *it = json_object_iter(obj); it; it = json_object_iter_next(obj, it)) {
		attrs[*n] = json_object_iter_key(it);
		v = json_object_iter_value(it);
		values[*n] = codec_value_text(v, num[*n]);
		if (!values[*n]) {
			snprintf(field, sizeof field, "%s.if.%s", where,
				 error_clip(attrs[*n], clip));
			return codec_bad_value(err, field, "a string or number", v);
		}
		(*n)++;
	}
	return PM_OK;
}

/* One element of a knowledge list, read into k under where ("rules[3]"). */
typedef enum pm_status (*element_fn)(const json_t *e, const char *where, const struct dataset *ds,
				     struct knowledge *k, struct pm_error *err);

/* j[key]: absent or null (nothing), or an array of at most max elements,
 * each read by read as key[i]. */
static enum pm_status parse_list(const json_t *j, const char *key, size_t max, element_fn read,
				 const struct dataset *ds, struct knowledge *k,
				 struct pm_error *err)
{
	const json_t *list = json_object_get(j, key);
	char where[WHERE_LEN], want[64];
	enum pm_status st;

	if (!list || json_is_null(list))
		return PM_OK;
	snprintf(want, sizeof want, "an array of %s", key);
	if (!json_is_array(list))
		return codec_bad_value(err, key, want, list);
	if (json_array_size(list) > max)
		return error_set(err, PM_ERR_INPUT, key, "has %zu %s; at most %zu are allowed",
				 json_array_size(list), key, max);
	for (size_t i = 0; i < json_array_size(list); i++) {
		snprintf(where, sizeof where, "%s[%zu]", key, i);
		if ((st = read(json_array_get(list, i), where, ds, k, err)))
			return st;
	}
	return PM_OK;
}

/* ---- rules -------------------------------------------------------------- */

struct user_rule {
	const char *attrs[DATASET_MAX_ATTRS], *values[DATASET_MAX_ATTRS], *then;
	char num[DATASET_MAX_ATTRS + 1][NUM_LEN];
	size_t n_terms;
	struct opt_num p, min, max;
};

static enum pm_status parse_rule(const json_t *rule, const char *where, const struct dataset *ds,
				 struct knowledge *k, struct pm_error *err)
{
	struct user_rule u;
	enum pm_status st;

	if ((st = codec_check_row(rule, where, err)) ||
	    (st = codec_check_keys(rule, where, rule_keys, err)) ||
	    (st = get_conditions(json_object_get(rule, "if"), where, u.attrs, u.values, u.num,
				 &u.n_terms, err)) ||
	    (st = codec_get_value(rule, where, "then", u.num[DATASET_MAX_ATTRS], &u.then, err)) ||
	    (st = get_number(rule, where, "probability", &u.p, err)) ||
	    (st = get_number(rule, where, "min", &u.min, err)) ||
	    (st = get_number(rule, where, "max", &u.max, err)))
		return st;
	return knowledge_add_user(k, ds, u.attrs, u.values, u.n_terms, u.then, u.p.has, u.p.v,
				  u.min.has, u.min.v, u.max.has, u.max.v, where, err);
}

/* ---- individuals -------------------------------------------------------- */

/* {"name": "alice", "qi": [...], "group": 3}; group optional, a result's
 * "p" and "groups" ignored. */
static enum pm_status parse_individual(const json_t *p, const char *where, const struct dataset *ds,
				       struct knowledge *k, struct pm_error *err)
{
	const json_t *name = json_object_get(p, "name"), *qi = json_object_get(p, "qi");
	const char *values[DATASET_MAX_ATTRS], *group = NULL;
	char num[DATASET_MAX_ATTRS + 1][NUM_LEN], field[FIELD_LEN];
	enum pm_status st;
	size_t n;

	if ((st = codec_check_row(p, where, err)) ||
	    (st = codec_check_keys(p, where, individual_keys, err)))
		return st;
	snprintf(field, sizeof field, "%s.name", where);
	if (!json_is_string(name))
		return codec_bad_value(err, field, "a string", name);
	snprintf(field, sizeof field, "%s.qi", where);
	if (!json_is_array(qi))
		return codec_bad_value(err, field, "an array of values, one per QI attribute", qi);
	/* more values than any dataset has attributes: the count check of
	 * statements_add_individual refuses them before it reads one */
	n = json_array_size(qi);
	if (n <= DATASET_MAX_ATTRS && (st = codec_get_values(qi, field, values, num, err)))
		return st;
	if (json_object_get(p, "group") &&
	    (st = codec_get_group(p, where, num[DATASET_MAX_ATTRS], &group, err)))
		return st;
	return statements_add_individual(k, ds, json_string_value(name), values, n, group, where,
					 err);
}

/* ---- statements --------------------------------------------------------- */

/* One statement's terms as read, and the strings they point to: each
 * term's condition attributes, condition values and then values in turn,
 * numbers' text in num (one per string). Owned; sized by a first look at
 * the terms (term_strings). */
struct terms_buf {
	struct statement_term_in *in;
	const char **text;
	char (*num)[NUM_LEN];
	size_t used;
};

static size_t term_strings(const json_t *term)
{
	const json_t *then = json_object_get(term, "then");

	return 2 * json_object_size(json_object_get(term, "if")) +
	       (json_is_array(then) ? json_array_size(then) : 1);
}

/* term["then"]: one value, or an array of them (then_list), into text. */
static enum pm_status get_then(const json_t *term, const char *where, const char **text,
			       char (*num)[NUM_LEN], struct statement_term_in *in,
			       struct pm_error *err)
{
	const json_t *v = json_object_get(term, "then");
	char field[FIELD_LEN];

	snprintf(field, sizeof field, "%s.then", where);
	in->then = text;
	in->then_list = json_is_array(v);
	if (in->then_list) {
		in->n_then = json_array_size(v);
		return codec_get_values(v, field, text, num, err);
	}
	in->n_then = 1;
	if ((text[0] = codec_value_text(v, num[0])))
		return PM_OK;
	return codec_bad_value(err, field,
			       "a sensitive value (string or number) or an array of them", v);
}

/* {"if": {...}} or {"person": name}, with "then" and "coef"; whether it
 * has both or neither is statements_add's to say. */
static enum pm_status parse_term(const json_t *term, const char *where, struct terms_buf *b,
				 struct statement_term_in *in, struct pm_error *err)
{
	const json_t *c = json_object_get(term, "if"), *person = json_object_get(term, "person");
	const char **text = b->text + b->used;
	char(*num)[NUM_LEN] = b->num + b->used, field[FIELD_LEN];
	size_t nc = json_object_size(c);
	struct opt_num coef;
	enum pm_status st;

	if ((st = codec_check_row(term, where, err)) ||
	    (st = codec_check_keys(term, where, term_keys, err)) ||
	    (c && (st = get_conditions(c, where, text, text + nc, num + nc, &in->n_cond, err))))
		return st;
	in->has_if = c != NULL;
	in->attrs = text;
	in->values = text + nc;
	snprintf(field, sizeof field, "%s.person", where);
	if (person && !json_is_string(person))
		return codec_bad_value(err, field, "a string (a name from \"individuals\")",
				       person);
	in->person = json_string_value(person);
	if ((st = get_then(term, where, text + 2 * nc, num + 2 * nc, in, err)) ||
	    (st = get_number(term, where, "coef", &coef, err)))
		return st;
	in->has_coef = coef.has;
	in->coef = coef.v;
	b->used += term_strings(term);
	return PM_OK;
}

/* s["terms"] into b, *n of them; b is the caller's to free, also after
 * an error. */
static enum pm_status parse_terms(const json_t *s, const char *where, struct terms_buf *b,
				  size_t *n, struct pm_error *err)
{
	const json_t *terms = json_object_get(s, "terms");
	char field[FIELD_LEN], at[WHERE_LEN];
	size_t strings = 1;
	enum pm_status st;

	snprintf(field, sizeof field, "%s.terms", where);
	if (!json_is_array(terms))
		return codec_bad_value(err, field, "an array of terms", terms);
	*n = json_array_size(terms);
	if (*n > MAX_TERMS)
		return error_set(err, PM_ERR_INPUT, field, "has %zu terms; at most %d are allowed",
				 *n, MAX_TERMS);
	for (size_t i = 0; i < *n; i++)
		strings += term_strings(json_array_get(terms, i));
	b->in = calloc(*n + 1, sizeof *b->in);
	b->text = malloc(strings * sizeof *b->text);
	b->num = malloc(strings * sizeof *b->num);
	if (!b->in || !b->text || !b->num)
		return error_set(err, PM_ERR_NOMEM, "", "out of memory for statements");
	for (size_t i = 0; i < *n; i++) {
		snprintf(at, sizeof at, "%s.terms[%zu]", where, i);
		if ((st = parse_term(json_array_get(terms, i), at, b, &b->in[i], err)))
			return st;
	}
	return PM_OK;
}

/* {"name"?, "terms": [...], "min"?, "max"?, "value"?}; "achieved" and
 * "binding" (a result's) are ignored. */
static enum pm_status parse_statement(const json_t *s, const char *where, const struct dataset *ds,
				      struct knowledge *k, struct pm_error *err)
{
	const json_t *name = json_object_get(s, "name");
	struct terms_buf b = {0};
	struct opt_num value, min, max;
	char field[FIELD_LEN];
	enum pm_status st;
	size_t n = 0;

	if ((st = codec_check_row(s, where, err)) ||
	    (st = codec_check_keys(s, where, statement_keys, err)))
		return st;
	snprintf(field, sizeof field, "%s.name", where);
	if (name && !json_is_string(name))
		return codec_bad_value(err, field, "a string", name);
	if ((st = parse_terms(s, where, &b, &n, err)) ||
	    (st = get_number(s, where, "value", &value, err)) ||
	    (st = get_number(s, where, "min", &min, err)) ||
	    (st = get_number(s, where, "max", &max, err)))
		goto out;
	st = statements_add(k, ds, json_string_value(name), b.in, n, value.has, value.v, min.has,
			    min.v, max.has, max.v, where, err);
out:
	free(b.in);
	free(b.text);
	free(b.num);
	return st;
}

/* ---- mine --------------------------------------------------------------- */

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
		return codec_bad_value(
		    err, field, min > 0 ? "a positive integer" : "a non-negative integer", v);
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
		return codec_bad_value(err, "mine.vagueness", "a number", v);
	*out = json_number_value(v);
	return limits_check(out, 0, 1, "mine.vagueness", err);
}

static enum pm_status parse_mine(const json_t *m, const struct dataset *ds, struct miner_options *o,
				 struct pm_error *err)
{
	size_t support;
	enum pm_status st;

	if (!json_is_object(m))
		return codec_bad_value(err, "mine", "an object", m);
	miner_options_init(o);
	support = (size_t)o->min_support;
	if ((st = codec_check_keys(m, "mine", mine_keys, err)) ||
	    (st = get_count(m, "positive", 0, MINER_MAX_K, &o->positive, err)) ||
	    (st = get_count(m, "negative", 0, MINER_MAX_K, &o->negative, err)) ||
	    (st = get_count(m, "min_support", 0, MAX_MIN_SUPPORT, &support, err)) ||
	    (st = get_count(m, "qi_attributes", 1, DATASET_MAX_ATTRS, &o->qi_attributes, err)))
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

/* ---- the document ------------------------------------------------------- */

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
				 codec_type_name(j));
	/* people before statements: person terms name them */
	if ((st = codec_check_keys(j, "", knowledge_keys, err)) ||
	    (st = parse_list(j, "rules", MAX_RULES, parse_rule, ds, k, err)) ||
	    (st = parse_list(j, "individuals", MAX_INDIVIDUALS, parse_individual, ds, k, err)) ||
	    (st = parse_list(j, "statements", MAX_STATEMENTS, parse_statement, ds, k, err)))
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
	    strncmp(err->field, "solver", 6) && strncmp(err->field, "report", 6))
		error_prefix(err, "knowledge");
}
