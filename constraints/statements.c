/*
 * Statements and named people (SPEC 3.1): linear combinations of
 * probabilities bounded by min/max/value, and the people their person
 * terms name, resolved against a dataset.
 *
 * Names are found through hash tables (people, statement names, group
 * labels) and named people are counted per tuple and per (tuple, bucket),
 * so that a document of 100,000 people or statements is read in linear
 * time, not O(n^2).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "constraints.h"

/* ---- names -------------------------------------------------------------- */

/* Names to indices: open addressing over index + 1 (0: an empty slot),
 * n_slots a power of two kept over twice n. The strings are borrowed
 * (the people's and statements' own copies, the dataset's group labels)
 * and do not move while the table lives. */
struct names {
	size_t n, cap, n_slots;
	const char **str;
	uint32_t *slot;
};

struct statements_index {
	struct names people, statements, groups;
	/* named people per tuple, and per (q, b) entry of ds->bq_tuple of
	 * those given that group; NULL until the first person */
	uint32_t *named_q, *named_qb;
};

static size_t names_hash(const char *s)
{
	uint64_t h = 14695981039346656037ULL;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL; /* FNV-1a */
	}
	return (size_t)h;
}

/* The slot holding s, or the empty slot where it would go. */
static size_t names_probe(const struct names *t, const char *s)
{
	size_t mask = t->n_slots - 1, j = names_hash(s) & mask;

	for (; t->slot[j]; j = (j + 1) & mask)
		if (!strcmp(t->str[t->slot[j] - 1], s))
			break;
	return j;
}

static long names_find(const struct names *t, const char *s)
{
	size_t j;

	if (!t->n_slots)
		return -1;
	j = names_probe(t, s);
	return t->slot[j] ? (long)t->slot[j] - 1 : -1;
}

static int names_rehash(struct names *t)
{
	size_t n = t->n_slots ? 2 * t->n_slots : 64;
	uint32_t *slot = calloc(n, sizeof *slot);

	if (!slot)
		return -1;
	free(t->slot);
	t->slot = slot;
	t->n_slots = n;
	for (size_t i = 0; i < t->n; i++)
		t->slot[names_probe(t, t->str[i])] = (uint32_t)(i + 1);
	return 0;
}

/* Appends s, which t does not hold yet, as index t->n. */
static enum pm_status names_add(struct names *t, const char *s, struct pm_error *err)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 16;
		const char **str = realloc(t->str, cap * sizeof *str);

		if (!str)
			return error_set(err, PM_ERR_NOMEM, "", "out of memory for names");
		t->str = str;
		t->cap = cap;
	}
	if ((t->n + 1) * 2 > t->n_slots && names_rehash(t))
		return error_set(err, PM_ERR_NOMEM, "", "out of memory for names");
	t->str[t->n] = s;
	t->slot[names_probe(t, s)] = (uint32_t)(t->n + 1);
	t->n++;
	return PM_OK;
}

static void names_free(struct names *t)
{
	free(t->str);
	free(t->slot);
}

/* k->index, made on first use. */
static enum pm_status index_get(struct knowledge *k, struct statements_index **out,
				struct pm_error *err)
{
	if (!k->index && !(k->index = calloc(1, sizeof *k->index)))
		return error_set(err, PM_ERR_NOMEM, "", "out of memory for statements");
	*out = k->index;
	return PM_OK;
}

/* A name of a person or statement under field: present, not empty, not
 * over STATEMENTS_MAX_NAME, not in taken (kind names the list of the
 * first: "individuals", "statements"). */
static enum pm_status check_name(const char *name, const struct names *taken, const char *kind,
				 const char *field, struct pm_error *err)
{
	char f[256], clip[ERROR_CLIP_SIZE];
	size_t n;
	long j;

	error_field(f, sizeof f, field, "name", NULL);
	if (!name)
		return error_set(err, PM_ERR_INPUT, f, "is missing");
	n = strnlen(name, STATEMENTS_MAX_NAME + 1);
	if (n == 0)
		return error_set(err, PM_ERR_INPUT, f, "is empty");
	if (n > STATEMENTS_MAX_NAME)
		return error_set(err, PM_ERR_INPUT, f,
				 "is %zu bytes long; a name may have at most %d bytes",
				 strlen(name), STATEMENTS_MAX_NAME);
	j = names_find(taken, name);
	if (j >= 0)
		return error_set(err, PM_ERR_INPUT, f, "repeats the name \"%s\" of %s[%ld]",
				 error_clip(name, clip), kind, j);
	return PM_OK;
}

/* ---- individuals -------------------------------------------------------- */

/* The tuple whose value codes are v[0 .. n_attrs), or -1. */
static long find_tuple(const struct dataset *ds, const uint32_t *v)
{
	struct rule r;
	size_t lo, hi;
	const uint32_t *list;

	memset(&r, 0, sizeof r);
	r.n_terms = (uint32_t)ds->n_attrs;
	for (size_t a = 0; a < ds->n_attrs; a++) {
		r.attr[a] = (uint32_t)a;
		r.value[a] = v[a];
	}
	list = postings_candidates(ds, &r, &lo, &hi);
	for (size_t at = lo; at < hi; at++) {
		uint32_t q = list ? list[at] : (uint32_t)at;

		if (knowledge_matches(ds, &r, q))
			return q;
	}
	return -1;
}

/* A person's QI values qi[0 .. n) into the tuple *q of the table. */
static enum pm_status person_tuple(const struct dataset *ds, const char *const *qi, size_t n,
				   const char *field, uint32_t *q, struct pm_error *err)
{
	uint32_t v[DATASET_MAX_ATTRS];
	char f[256], part[32];
	enum pm_status st;
	long t;

	error_field(f, sizeof f, field, "qi", NULL);
	if (n != ds->n_attrs)
		return error_set(err, PM_ERR_INPUT, f,
				 "must have %zu values (one per QI attribute), got %zu",
				 ds->n_attrs, n);
	for (size_t a = 0; a < n; a++) {
		snprintf(part, sizeof part, "qi[%zu]", a);
		error_field(f, sizeof f, field, part, NULL);
		if (!qi[a])
			return error_set(err, PM_ERR_INPUT, f, "is missing");
		if ((st = knowledge_resolve_value(ds, a, qi[a], f, &v[a], err)))
			return st;
	}
	t = find_tuple(ds, v);
	if (t < 0)
		return error_set(err, PM_ERR_INPUT, error_field(f, sizeof f, field, "qi", NULL),
				 "no record of the table has these QI values");
	*q = (uint32_t)t;
	return PM_OK;
}

/* The bucket of group label `group` (NULL: not given, *b = -1) and the
 * entry *at of tuple q in it (ds->bq_tuple). */
static enum pm_status person_group(struct statements_index *ix, const struct dataset *ds,
				   const char *group, uint32_t q, const char *field, long *b,
				   size_t *at, struct pm_error *err)
{
	char f[256], clip[ERROR_CLIP_SIZE], hint[ERROR_HINT_SIZE];
	enum pm_status st;
	size_t lo, hi;

	*b = -1;
	if (!group)
		return PM_OK;
	for (size_t i = ix->groups.n; i < ds->n_groups; i++)
		if ((st = names_add(&ix->groups, ds->group_labels[i], err)))
			return st;
	error_field(f, sizeof f, field, "group", NULL);
	if ((*b = names_find(&ix->groups, group)) < 0)
		return error_set(
		    err, PM_ERR_INPUT, f, "unknown group \"%s\"%s", error_clip(group, clip),
		    error_hint(group, (const char *const *)ds->group_labels, ds->n_groups, hint));
	/* the bucket's tuples are ascending: bisect */
	for (lo = ds->bq_off[*b], hi = ds->bq_off[*b + 1]; lo < hi;) {
		size_t mid = lo + (hi - lo) / 2;

		if (ds->bq_tuple[mid] < q)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == ds->bq_off[*b + 1] || ds->bq_tuple[lo] != q)
		return error_set(err, PM_ERR_INPUT, f,
				 "group \"%s\" has no record with these QI values",
				 error_clip(group, clip));
	*at = lo;
	return PM_OK;
}

/* SPEC 3.1: each named person is a distinct record, so no more of them
 * per tuple (or tuple and bucket) than the table has records. */
static enum pm_status person_count(struct statements_index *ix, const struct dataset *ds,
				   const struct individual *p, size_t at, const char *field,
				   struct pm_error *err)
{
	char f[256], clip[ERROR_CLIP_SIZE];

	if (!ix->named_q && !(ix->named_q = calloc(ds->n_tuples, sizeof *ix->named_q)))
		return error_set(err, PM_ERR_NOMEM, "", "out of memory for individuals");
	if (!ix->named_qb &&
	    !(ix->named_qb = calloc(ds->bq_off[ds->n_groups] + 1, sizeof *ix->named_qb)))
		return error_set(err, PM_ERR_NOMEM, "", "out of memory for individuals");
	if (ix->named_q[p->tuple] >= ds->tuple_count[p->tuple])
		return error_set(err, PM_ERR_INPUT, error_field(f, sizeof f, field, "qi", NULL),
				 "more people are named with these QI values than the table has "
				 "records with them (%u)",
				 (unsigned)ds->tuple_count[p->tuple]);
	if (p->group >= 0 && ix->named_qb[at] >= ds->bq_count[at])
		return error_set(err, PM_ERR_INPUT, error_field(f, sizeof f, field, "group", NULL),
				 "more people are named with these QI values in group \"%s\" than "
				 "it has records with them (%u)",
				 error_clip(ds->group_labels[p->group], clip),
				 (unsigned)ds->bq_count[at]);
	return PM_OK;
}

/* Appends p (its name a copy of name) to k->people. */
static enum pm_status append_person(struct knowledge *k, struct individual p, const char *name,
				    struct pm_error *err)
{
	enum pm_status st;

	if (k->n_people == k->people_cap) {
		size_t cap = k->people_cap ? 2 * k->people_cap : 16;
		struct individual *people = realloc(k->people, cap * sizeof *people);

		if (!people)
			return error_set(err, PM_ERR_NOMEM, "", "out of memory for individuals");
		k->people = people;
		k->people_cap = cap;
	}
	if (!(p.name = strdup(name)))
		return error_set(err, PM_ERR_NOMEM, "", "out of memory for individuals");
	if ((st = names_add(&k->index->people, p.name, err))) {
		free(p.name);
		return st;
	}
	k->people[k->n_people++] = p;
	return PM_OK;
}

enum pm_status statements_add_individual(struct knowledge *k, const struct dataset *ds,
					 const char *name, const char *const *qi, size_t n_qi,
					 const char *group, const char *field, struct pm_error *err)
{
	struct statements_index *ix = NULL;
	struct individual p = {0};
	enum pm_status st;
	size_t at = 0;

	if ((st = index_get(k, &ix, err)) ||
	    (st = check_name(name, &ix->people, "individuals", field, err)) ||
	    (st = person_tuple(ds, qi, n_qi, field, &p.tuple, err)) ||
	    (st = person_group(ix, ds, group, p.tuple, field, &p.group, &at, err)) ||
	    (st = person_count(ix, ds, &p, at, field, err)) ||
	    (st = append_person(k, p, name, err)))
		return st;
	ix->named_q[p.tuple]++;
	if (p.group >= 0)
		ix->named_qb[at]++;
	return PM_OK;
}

long statements_person(const struct knowledge *k, const char *name)
{
	return k->index && name ? names_find(&k->index->people, name) : -1;
}

/* ---- terms -------------------------------------------------------------- */

/* An SA value of a then list, at its place in it. */
struct then_at {
	uint32_t code, at;
};

static int then_cmp(const void *a, const void *b)
{
	const struct then_at *x = a, *y = b;

	if (x->code != y->code)
		return x->code < y->code ? -1 : 1;
	return x->at < y->at ? -1 : x->at > y->at;
}

/* Of v[0 .. n), sorted, the entry i that repeats an earlier value (its
 * first place is v[i - 1].at) at the smallest place v[i].at; 0 if none. */
static size_t then_repeat(const struct then_at *v, size_t n)
{
	size_t rep = 0;

	for (size_t i = 1; i < n; i++)
		if (v[i].code == v[i - 1].code && (i < 2 || v[i - 2].code != v[i].code) &&
		    (rep == 0 || v[i].at < v[rep].at))
			rep = i;
	return rep;
}

/* in->then resolved into out->then, ascending and distinct. */
static enum pm_status resolve_then(const struct dataset *ds, const struct statement_term_in *in,
				   struct statement_term *out, const char *field,
				   struct pm_error *err)
{
	struct then_at *v = NULL;
	char f[256], part[32], clip[ERROR_CLIP_SIZE];
	enum pm_status st = PM_OK;
	size_t rep;

	if (in->n_then == 0)
		return error_set(err, PM_ERR_INPUT, error_field(f, sizeof f, field, "then", NULL),
				 "is empty; give a sensitive value or a list of them");
	if (!(v = malloc(in->n_then * sizeof *v)) ||
	    !(out->then = malloc(in->n_then * sizeof *out->then))) {
		st = error_set(err, PM_ERR_NOMEM, "", "out of memory for statements");
		goto out;
	}
	for (size_t i = 0; i < in->n_then; i++) {
		snprintf(part, sizeof part, in->then_list ? "then[%zu]" : "then", i);
		v[i].at = (uint32_t)i;
		if ((st = knowledge_resolve_sa(ds, in->then[i] ? in->then[i] : "",
					       error_field(f, sizeof f, field, part, NULL),
					       &v[i].code, err)))
			goto out;
	}
	qsort(v, in->n_then, sizeof *v, then_cmp);
	if ((rep = then_repeat(v, in->n_then)) > 0) {
		snprintf(part, sizeof part, "then[%u]", (unsigned)v[rep].at);
		st = error_set(err, PM_ERR_INPUT, error_field(f, sizeof f, field, part, NULL),
			       "repeats \"%s\" (then[%u])",
			       error_clip(ds->sa_values.str[v[rep].code], clip),
			       (unsigned)v[rep - 1].at);
		goto out;
	}
	for (size_t i = 0; i < in->n_then; i++)
		out->then[out->n_then++] = v[i].code;
out:
	free(v);
	return st;
}

/* A person term's person into out->person. */
static enum pm_status resolve_person(const struct knowledge *k, const char *person,
				     struct statement_term *out, const char *field,
				     struct pm_error *err)
{
	char f[256], clip[ERROR_CLIP_SIZE], hint[ERROR_HINT_SIZE];

	out->person = statements_person(k, person);
	out->n_qv = 1;
	if (out->person >= 0)
		return PM_OK;
	error_field(f, sizeof f, field, "person", NULL);
	if (k->n_people == 0)
		return error_set(err, PM_ERR_INPUT, f,
				 "unknown person \"%s\"; no one is named (people are named in "
				 "\"individuals\")",
				 error_clip(person, clip));
	return error_set(err, PM_ERR_INPUT, f, "unknown person \"%s\"%s", error_clip(person, clip),
			 error_hint(person, k->index->people.str, k->index->people.n, hint));
}

/* A coef: 0, or of a magnitude within [STATEMENTS_MIN_COEF,
 * STATEMENTS_MAX_COEF]. */
static enum pm_status check_coef(double *c, const char *field, struct pm_error *err)
{
	char x[LIMITS_TEXT_SIZE], lo[LIMITS_TEXT_SIZE], hi[LIMITS_TEXT_SIZE];
	enum pm_status st;

	if ((st = limits_check(c, -STATEMENTS_MAX_COEF, STATEMENTS_MAX_COEF, field, err)))
		return st;
	if (*c == 0 || fabs(*c) >= STATEMENTS_MIN_COEF)
		return PM_OK;
	limits_format(*c, x, sizeof x);
	limits_format(STATEMENTS_MIN_COEF, lo, sizeof lo);
	limits_format(STATEMENTS_MAX_COEF, hi, sizeof hi);
	return error_set(err, PM_ERR_INPUT, field,
			 "%s is too small: a coefficient is 0 or of a magnitude within [%s, %s]", x,
			 lo, hi);
}

/* One term: a distribution term (if) or a person term (person). */
static enum pm_status resolve_term(const struct knowledge *k, const struct dataset *ds,
				   const struct statement_term_in *in, struct statement_term *out,
				   const char *field, struct pm_error *err)
{
	char f[256];
	enum pm_status st;

	if (in->has_if && in->person)
		return error_set(err, PM_ERR_INPUT, field,
				 "has both \"if\" and \"person\"; a term is either a distribution "
				 "term (if) or a person term (person)");
	if (!in->has_if && !in->person)
		return error_set(err, PM_ERR_INPUT, field,
				 "has neither \"if\" nor \"person\"; a term is either a "
				 "distribution term (if) or a person term (person)");
	out->person = -1;
	if (in->has_if) {
		st = knowledge_resolve_if(ds, in->attrs, in->values, in->n_cond, &out->cond, field,
					  err);
		out->n_qv = out->cond.n_qv;
	} else {
		st = resolve_person(k, in->person, out, field, err);
	}
	if (st || (st = resolve_then(ds, in, out, field, err)))
		return st;
	out->coef = in->has_coef ? in->coef : 1;
	return check_coef(&out->coef, error_field(f, sizeof f, field, "coef", NULL), err);
}

/* ---- statements --------------------------------------------------------- */

struct bound {
	int has;
	double v;
	const char *key;
};

/* "value", or "min" and/or "max", into s's bounds. */
static enum pm_status statement_bounds(struct bound *value, struct bound *min, struct bound *max,
				       const char *field, struct statement *s, struct pm_error *err)
{
	struct bound *all[] = {value, min, max};
	enum pm_status st;
	char f[256];

	for (size_t i = 0; i < 3; i++)
		if (all[i]->has &&
		    (st = limits_check(&all[i]->v, -STATEMENTS_MAX_BOUND, STATEMENTS_MAX_BOUND,
				       error_field(f, sizeof f, field, all[i]->key, NULL), err)))
			return st;
	if (value->has && (min->has || max->has))
		return error_set(
		    err, PM_ERR_INPUT,
		    error_field(f, sizeof f, field, min->has ? "min" : "max", NULL),
		    "cannot go with \"value\": give the value, or \"min\" and/or \"max\"");
	if (!value->has && !min->has && !max->has)
		return error_set(err, PM_ERR_INPUT, field ? field : "",
				 "needs \"value\" (or \"min\" and/or \"max\")");
	if (min->has && max->has && min->v > max->v)
		return error_set(err, PM_ERR_INPUT, field ? field : "",
				 "\"min\" (%g) is above \"max\" (%g)", min->v, max->v);
	s->equality = value->has;
	s->lo = value->has ? value->v : min->has ? min->v : -INFINITY;
	s->hi = value->has ? value->v : max->has ? max->v : INFINITY;
	return PM_OK;
}

/* Every term of in[0 .. n) into s->terms. */
static enum pm_status resolve_terms(const struct knowledge *k, const struct dataset *ds,
				    const struct statement_term_in *in, size_t n, const char *field,
				    struct statement *s, struct pm_error *err)
{
	char f[256], part[40];
	enum pm_status st;

	if (n == 0)
		return error_set(err, PM_ERR_INPUT, error_field(f, sizeof f, field, "terms", NULL),
				 "is empty; a statement needs at least one term");
	if (!(s->terms = calloc(n, sizeof *s->terms)))
		return error_set(err, PM_ERR_NOMEM, "", "out of memory for statements");
	s->n_terms = n;
	for (size_t t = 0; t < n; t++) {
		snprintf(part, sizeof part, "terms[%zu]", t);
		if ((st = resolve_term(k, ds, &in[t], &s->terms[t],
				       error_field(f, sizeof f, field, part, NULL), err)))
			return st;
	}
	return PM_OK;
}

static void statement_free(struct statement *s)
{
	for (size_t t = 0; t < s->n_terms; t++)
		free(s->terms[t].then);
	free(s->terms);
	free(s->name);
}

/* Appends s to k->statements (and its name to the index). */
static enum pm_status append_statement(struct knowledge *k, const struct statement *s,
				       struct pm_error *err)
{
	enum pm_status st;

	if (k->n_statements == k->statements_cap) {
		size_t cap = k->statements_cap ? 2 * k->statements_cap : 16;
		struct statement *all = realloc(k->statements, cap * sizeof *all);

		if (!all)
			return error_set(err, PM_ERR_NOMEM, "", "out of memory for statements");
		k->statements = all;
		k->statements_cap = cap;
	}
	if (s->name && (st = names_add(&k->index->statements, s->name, err)))
		return st;
	k->statements[k->n_statements++] = *s;
	return PM_OK;
}

enum pm_status statements_add(struct knowledge *k, const struct dataset *ds, const char *name,
			      const struct statement_term_in *terms, size_t n_terms, int has_value,
			      double value, int has_min, double min, int has_max, double max,
			      const char *field, struct pm_error *err)
{
	struct bound v = {has_value, value, "value"}, lo = {has_min, min, "min"},
		     hi = {has_max, max, "max"};
	struct statements_index *ix = NULL;
	struct statement s = {0};
	enum pm_status st;

	if ((st = index_get(k, &ix, err)) ||
	    (name && (st = check_name(name, &ix->statements, "statements", field, err))) ||
	    (st = resolve_terms(k, ds, terms, n_terms, field, &s, err)) ||
	    (st = statement_bounds(&v, &lo, &hi, field, &s, err)))
		goto out;
	if (name && !(s.name = strdup(name))) {
		st = error_set(err, PM_ERR_NOMEM, "", "out of memory for statements");
		goto out;
	}
	st = append_statement(k, &s, err);
out:
	if (st)
		statement_free(&s);
	return st;
}

void statements_clear(struct knowledge *k)
{
	for (size_t i = 0; i < k->n_statements; i++)
		statement_free(&k->statements[i]);
	for (size_t i = 0; i < k->n_people; i++)
		free(k->people[i].name);
	free(k->statements);
	free(k->people);
	if (k->index) {
		names_free(&k->index->people);
		names_free(&k->index->statements);
		names_free(&k->index->groups);
		free(k->index->named_q);
		free(k->index->named_qb);
		free(k->index);
	}
	k->statements = NULL;
	k->people = NULL;
	k->index = NULL;
	k->n_statements = k->statements_cap = k->n_people = k->people_cap = 0;
}

void statements_describe(const struct knowledge *k, size_t i, char *buf, size_t len)
{
	if (k->statements[i].name)
		snprintf(buf, len, "statements[%zu] \"%s\"", i, k->statements[i].name);
	else
		snprintf(buf, len, "statements[%zu]", i);
}
