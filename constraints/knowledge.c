/* Knowledge rows P(s | Qv) in [lo, hi]: user rules resolved against a
 * dataset, matching, n(Qv) counting and human-readable descriptions. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "constraints.h"

void knowledge_init(struct knowledge *k)
{
	memset(k, 0, sizeof *k);
}

void knowledge_finish(struct knowledge *k)
{
	if (!k)
		return;
	free(k->rules);
	statements_clear(k);
	knowledge_init(k);
}

enum pm_status knowledge_append(struct knowledge *k, const struct rule *r, struct pm_error *err)
{
	if (k->n == k->cap) {
		size_t cap = k->cap ? 2 * k->cap : 16;
		struct rule *rules;

		if (cap > SIZE_MAX / sizeof *rules)
			return error_set(err, PM_ERR_NOMEM, "", "too many knowledge rules");
		rules = realloc(k->rules, cap * sizeof *rules);
		if (!rules)
			return error_set(err, PM_ERR_NOMEM, "",
					 "out of memory for knowledge rules");
		k->rules = rules;
		k->cap = cap;
	}
	k->rules[k->n++] = *r;
	return PM_OK;
}

enum pm_status knowledge_resolve_value(const struct dataset *ds, size_t a, const char *value,
				       const char *field, uint32_t *out, struct pm_error *err)
{
	const struct dict *d = &ds->attr_values[a];
	char clip[ERROR_CLIP_SIZE], hint[ERROR_HINT_SIZE];
	long v = dict_find(d, value);

	if (v < 0)
		return error_set(err, PM_ERR_INPUT, field,
				 "value \"%s\" does not occur in the data%s",
				 error_clip(value, clip),
				 error_hint(value, (const char *const *)d->str, d->n, hint));
	*out = (uint32_t)v;
	return PM_OK;
}

enum pm_status knowledge_resolve_sa(const struct dataset *ds, const char *sa, const char *field,
				    uint32_t *out, struct pm_error *err)
{
	const struct dict *d = &ds->sa_values;
	char clip[ERROR_CLIP_SIZE], hint[ERROR_HINT_SIZE];
	long s = dict_find(d, sa);

	if (s < 0)
		return error_set(err, PM_ERR_INPUT, field, "unknown sensitive value \"%s\"%s",
				 error_clip(sa, clip),
				 error_hint(sa, (const char *const *)d->str, d->n, hint));
	*out = (uint32_t)s;
	return PM_OK;
}

/* Resolves condition i of an antecedent into r->attr/value[i] (unsorted
 * yet). */
static enum pm_status resolve_term(const struct dataset *ds, struct rule *r, size_t i,
				   const char *attr, const char *value, const char *field,
				   struct pm_error *err)
{
	char f[256], clip[ERROR_CLIP_SIZE], hint[ERROR_HINT_SIZE];
	long a;

	error_field(f, sizeof f, field, "if.", attr ? error_clip(attr, clip) : "");
	if (!attr || (a = dataset_attr_index(ds, attr)) < 0)
		return error_set(
		    err, PM_ERR_INPUT, f, "unknown QI attribute \"%s\"%s", attr ? clip : "",
		    attr ? error_hint(attr, (const char *const *)ds->attr_names, ds->n_attrs, hint)
			 : "");
	for (size_t j = 0; j < i; j++)
		if (r->attr[j] == (uint32_t)a)
			return error_set(err, PM_ERR_INPUT, f,
					 "attribute \"%s\" is given more than once", clip);
	if (!value)
		return error_set(err, PM_ERR_INPUT, f, "needs a value");
	r->attr[i] = (uint32_t)a;
	return knowledge_resolve_value(ds, (size_t)a, value, f, &r->value[i], err);
}

/* Insertion sort of the terms by attribute index (at most 32 of them). */
static void sort_terms(struct rule *r)
{
	for (uint32_t i = 1; i < r->n_terms; i++) {
		uint32_t a = r->attr[i], v = r->value[i], j = i;

		for (; j > 0 && r->attr[j - 1] > a; j--) {
			r->attr[j] = r->attr[j - 1];
			r->value[j] = r->value[j - 1];
		}
		r->attr[j] = a;
		r->value[j] = v;
	}
}

enum pm_status knowledge_resolve_if(const struct dataset *ds, const char *const *attrs,
				    const char *const *values, size_t n, struct rule *out,
				    const char *field, struct pm_error *err)
{
	char f[256];
	enum pm_status st;

	error_field(f, sizeof f, field, "if", NULL);
	if (n > ds->n_attrs || n > DATASET_MAX_ATTRS)
		return error_set(err, PM_ERR_INPUT, f, "has %zu attributes, the data has only %zu",
				 n, ds->n_attrs);
	for (size_t i = 0; i < n; i++)
		if ((st = resolve_term(ds, out, i, attrs[i], values[i], field, err)))
			return st;
	out->n_terms = (uint32_t)n;
	sort_terms(out);
	/* SPEC 3.1: P(. | if) is undefined where no record matches; values
	 * that each occur can still never occur together */
	out->n_qv = knowledge_count_qv(ds, out);
	if (out->n_qv == 0)
		return error_set(err, PM_ERR_INPUT, f,
				 "matches no record of the data (no record has all these values "
				 "together), so no probability is defined given it");
	return PM_OK;
}

/* A probability bound of field's key: finite, not subnormal, within
 * [0, 1]; -0 read as 0. */
static enum pm_status check_bound(double *v, const char *field, const char *key,
				  struct pm_error *err)
{
	char f[256];

	return limits_check(v, 0, 1, error_field(f, sizeof f, field, key, NULL), err);
}

/* "probability", or "min" and/or "max" (the other side 0 or 1), into
 * [*lo, *hi]. */
static enum pm_status check_bounds(int has_p, double p, int has_min, double min, int has_max,
				   double max, const char *field, double *lo, double *hi,
				   struct pm_error *err)
{
	char f[256];
	enum pm_status st;

	if (has_p && (has_min || has_max)) {
		error_field(f, sizeof f, field, has_min ? "min" : "max", NULL);
		return error_set(err, PM_ERR_INPUT, f,
				 "cannot go with \"probability\": give the probability, or "
				 "\"min\" and/or \"max\"");
	}
	if (!has_p && !has_min && !has_max)
		return error_set(err, PM_ERR_INPUT, field ? field : "",
				 "needs \"probability\" (or \"min\" and/or \"max\")");
	if ((has_p && (st = check_bound(&p, field, "probability", err))) ||
	    (has_min && (st = check_bound(&min, field, "min", err))) ||
	    (has_max && (st = check_bound(&max, field, "max", err))))
		return st;
	*lo = has_p ? p : has_min ? min : 0;
	*hi = has_p ? p : has_max ? max : 1;
	if (*lo > *hi)
		return error_set(err, PM_ERR_INPUT, field ? field : "",
				 "\"min\" (%g) is above \"max\" (%g)", *lo, *hi);
	return PM_OK;
}

enum pm_status knowledge_add_user(struct knowledge *k, const struct dataset *ds,
				  const char *const *attrs, const char *const *values,
				  size_t n_terms, const char *sa, int has_p, double p, int has_min,
				  double min, int has_max, double max, const char *field,
				  struct pm_error *err)
{
	struct rule r;
	enum pm_status st;
	char f[256];

	memset(&r, 0, sizeof r);
	if ((st = knowledge_resolve_if(ds, attrs, values, n_terms, &r, field, err)))
		return st;
	if (!sa)
		return error_set(err, PM_ERR_INPUT, field ? field : "", "needs \"then\"");
	error_field(f, sizeof f, field, "then", NULL);
	if ((st = knowledge_resolve_sa(ds, sa, f, &r.sa, err)) ||
	    (st = check_bounds(has_p, p, has_min, min, has_max, max, field, &r.lo, &r.hi, err)))
		return st;
	r.source = RULE_USER;
	return knowledge_append(k, &r, err);
}

int knowledge_matches(const struct dataset *ds, const struct rule *r, uint32_t q)
{
	const uint32_t *t = ds->tuples + (size_t)q * ds->n_attrs;

	for (uint32_t i = 0; i < r->n_terms; i++)
		if (t[r->attr[i]] != r->value[i])
			return 0;
	return 1;
}

uint64_t knowledge_count_qv(const struct dataset *ds, const struct rule *r)
{
	size_t lo, hi;
	const uint32_t *list = postings_candidates(ds, r, &lo, &hi);
	uint64_t n = 0;

	for (size_t at = lo; at < hi; at++) {
		uint32_t q = list ? list[at] : (uint32_t)at;

		if (knowledge_matches(ds, r, q))
			n += ds->tuple_count[q];
	}
	return n;
}

/* Shortest %g text that reads back as exactly x (at most 17 digits). */
static void format_double(double x, char *buf, size_t len)
{
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, len, "%.*g", prec, x);
		if (strtod(buf, NULL) == x)
			return;
	}
}

/* snprintf that appends at *pos and never runs past len. */
static void append(char *buf, size_t len, size_t *pos, const char *s)
{
	int w;

	if (*pos >= len)
		return;
	w = snprintf(buf + *pos, len - *pos, "%s", s);
	if (w > 0)
		*pos += (size_t)w < len - *pos ? (size_t)w : len - *pos - 1;
}

void knowledge_describe(const struct dataset *ds, const struct rule *r, char *buf, size_t len)
{
	char lo[32], hi[32];
	size_t pos = 0;

	if (!buf || len == 0)
		return;
	buf[0] = '\0';
	append(buf, len, &pos, "P(");
	append(buf, len, &pos, ds->sa_values.str[r->sa]);
	for (uint32_t i = 0; i < r->n_terms; i++) {
		append(buf, len, &pos, i ? ", " : " | ");
		append(buf, len, &pos, ds->attr_names[r->attr[i]]);
		append(buf, len, &pos, "=");
		append(buf, len, &pos, ds->attr_values[r->attr[i]].str[r->value[i]]);
	}
	format_double(r->lo, lo, sizeof lo);
	format_double(r->hi, hi, sizeof hi);
	if (r->lo == r->hi) {
		append(buf, len, &pos, ") = ");
		append(buf, len, &pos, lo);
	} else {
		append(buf, len, &pos, ") in [");
		append(buf, len, &pos, lo);
		append(buf, len, &pos, ", ");
		append(buf, len, &pos, hi);
		append(buf, len, &pos, "]");
	}
}
