/*
 * GET /v1/analyses/{id}/risk (issue 24): the QI tuples of a succeeded
 * analysis ranked by their largest P*(s|q), each beside the no-knowledge
 * estimate P0 of the same value (privacy_baseline), so that what the
 * knowledge added shows per tuple; with named individuals the same per
 * person. JSON pages or CSV, paged like the posterior (analyses.c): the
 * same limit and cursor, Link header and Accept. api.c routes the
 * requests here.
 *
 * Everything is read back from the store: the result (its posterior,
 * individuals and privacy threshold) and the dataset, whose counts give
 * P0. The result names tuples and values by their text, so they are
 * mapped to the dataset's codes by their values.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_internal.h"

#define RISK_DEFAULT 100
#define RISK_MAX     10000
#define RISK_CSV_MAX 100000000 /* CSV: everything unless limited */
/* SPEC 4.1: at risk is max_s P*(s|q) >= threshold - 1e-9, a tie counting
 * as reached whichever way rounding fell (privacy.c's RISK_SLACK) */
#define RISK_SLACK 1e-9

/* One row: a tuple of the posterior or a named person, summarised. */
struct risk_row {
	const json_t *src; /* its entry of the result's posterior or individuals */
	size_t order;	   /* its index there: the last tie-break */
	json_int_t count;  /* n(q); 0 for a person (ranked by p, then order) */
	const char *sa;	   /* the top value (borrowed from src); NULL if none */
	double p, l;	   /* P* of sa; exp(H(P*(.|q))), nats */
	double base_p;	   /* P0 of sa (a person with a group: n(s,b)/n(b)) */
	double base_top;   /* max_s P0(s|q) */
};

/* What a request works with, all owned (ctx_finish). */
struct risk_ctx {
	struct store *store;
	const struct dataset *ds; /* the store's (store_dataset_parsed) */
	struct privacy_table p0;
	char *const **by_label; /* &ds->group_labels[b], sorted by label; NULL until needed */
	double threshold;	/* the result's privacy.threshold */
	struct risk_row *rows;
	size_t n_rows;
	json_t *people; /* the ranked people as JSON beside a tuple page, or NULL */
};

static void ctx_finish(struct risk_ctx *c)
{
	store_dataset_release(c->store, c->ds);
	privacy_table_finish(&c->p0);
	free(c->by_label);
	free(c->rows);
	json_decref(c->people);
}

/* ---- mapping the result's text to the dataset's codes -------------------- */

/* The tuple whose values are the strings of qi, or -1. The posterior
 * lists the tuples in the dataset's order, so hint (its index there) is
 * tried first; otherwise the shortest posting list of its values is
 * searched, as reading a named person's tuple did. */
static long tuple_of(const struct dataset *ds, const json_t *qi, size_t hint)
{
	const uint32_t *list;
	struct rule r;
	size_t lo, hi;

	if (!json_is_array(qi) || json_array_size(qi) != ds->n_attrs)
		return -1;
	memset(&r, 0, sizeof r);
	r.n_terms = (uint32_t)ds->n_attrs;
	for (size_t a = 0; a < ds->n_attrs; a++) {
		const char *s = json_string_value(json_array_get(qi, a));
		long code = s ? dict_find(&ds->attr_values[a], s) : -1;

		if (code < 0)
			return -1;
		r.attr[a] = (uint32_t)a;
		r.value[a] = (uint32_t)code;
	}
	if (hint < ds->n_tuples && knowledge_matches(ds, &r, (uint32_t)hint))
		return (long)hint;
	list = postings_candidates(ds, &r, &lo, &hi);
	for (size_t at = lo; at < hi; at++) {
		uint32_t q = list ? list[at] : (uint32_t)at;

		if (knowledge_matches(ds, &r, q))
			return q;
	}
	return -1;
}

/* P(s | q) of table t (binary search over q's ascending values), 0 where
 * it has none; s < 0 (a value the dataset lacks) is 0 too. */
static double table_at(const struct privacy_table *t, size_t q, long s)
{
	size_t lo = t->off[q], hi = t->off[q + 1];

	while (s >= 0 && lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->sa[mid] == (uint32_t)s)
			return t->p[mid];
		if (t->sa[mid] < (uint32_t)s)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

static double table_top(const struct privacy_table *t, size_t q)
{
	double top = 0;

	for (size_t e = t->off[q]; e < t->off[q + 1]; e++)
		top = fmax(top, t->p[e]);
	return top;
}

/* A group label as the result wrote it (jgroup: an integer when the label
 * is one) back to its text, in buf when it is a number; "" if neither. */
static const char *label_text(const json_t *group, char *buf, size_t size)
{
	if (json_is_integer(group)) {
		snprintf(buf, size, "%" JSON_INTEGER_FORMAT, json_integer_value(group));
		return buf;
	}
	return json_is_string(group) ? json_string_value(group) : "";
}

static int cmp_label(const void *a, const void *b)
{
	return strcmp(**(char *const *const *)a, **(char *const *const *)b);
}

/* The bucket of a person's group, -1 if there is none, -2 out of memory.
 * Labels are searched in a sorted index built at the first person with a
 * group: a scan per person would cost people x groups. */
static long bucket_of(struct risk_ctx *c, const json_t *group)
{
	char buf[32], *label = (char *)label_text(group, buf, sizeof buf), **key = &label;
	char *const **found;

	if (!c->by_label) {
		if (!(c->by_label = malloc((c->ds->n_groups + 1) * sizeof *c->by_label)))
			return -2;
		for (size_t b = 0; b < c->ds->n_groups; b++)
			c->by_label[b] = &c->ds->group_labels[b];
		qsort(c->by_label, c->ds->n_groups, sizeof *c->by_label, cmp_label);
	}
	found = bsearch(&key, c->by_label, c->ds->n_groups, sizeof *c->by_label, cmp_label);
	return found ? (long)(*found - c->ds->group_labels) : -1;
}

/* n(s,b)/n(b): P0 of a person known to be in bucket b. */
static double bucket_p(const struct dataset *ds, size_t b, long s)
{
	for (size_t j = ds->bs_off[b]; s >= 0 && j < ds->bs_off[b + 1]; j++)
		if (ds->bs_value[j] == (uint32_t)s)
			return (double)ds->bs_count[j] / ds->group_size[b];
	return 0;
}

/* ---- rows ------------------------------------------------------------------ */

/* The top value of a distribution {s: P} (the largest P; of equal ones the
 * first value bytewise, as privacy.max_disclosure takes the lowest code),
 * and its effective l = exp(H), natural logarithms. */
static void top_value(const json_t *dist, struct risk_row *w)
{
	const char *s;
	json_t *v;
	double h = 0;

	w->sa = NULL;
	w->p = 0;
	json_object_foreach((json_t *)dist, s, v)
	{
		double x = json_number_value(v);

		if (!(x > 0))
			continue;
		h -= x * log(x);
		if (x > w->p || (x == w->p && strcmp(s, w->sa) < 0)) {
			w->p = x;
			w->sa = s;
		}
	}
	w->l = exp(h);
	w->p = fmin(w->p, 1); /* a posterior of 1 + 2e-16 is 1, as in max_disclosure */
}

/* One row per posterior entry; -1 when an entry is not a tuple of ds. */
static int tuple_rows(struct risk_ctx *c, const json_t *post, struct risk_row *rows)
{
	const json_t *e;
	size_t i;

	json_array_foreach(post, i, e)
	{
		struct risk_row *w = &rows[i];
		long q = tuple_of(c->ds, json_object_get(e, "qi"), i);

		if (q < 0)
			return -1;
		w->src = e;
		w->order = i;
		w->count = json_integer_value(json_object_get(e, "count"));
		top_value(json_object_get(e, "p"), w);
		w->base_p =
		    table_at(&c->p0, (size_t)q, w->sa ? dict_find(&c->ds->sa_values, w->sa) : -1);
		w->base_top = table_top(&c->p0, (size_t)q);
	}
	return 0;
}

/* One row per named person: their P*(s) and, for P0, their bucket's
 * n(s,b)/n(b) when the group is known, else their tuple's P0(s|q); -1
 * when a person is not in ds, -2 out of memory. */
static int person_rows(struct risk_ctx *c, const json_t *people, struct risk_row *rows)
{
	const json_t *e;
	size_t i;

	json_array_foreach(people, i, e)
	{
		struct risk_row *w = &rows[i];
		const json_t *group = json_object_get(e, "group");
		long q = tuple_of(c->ds, json_object_get(e, "qi"), SIZE_MAX), b = -1, s;

		if (q < 0 || (group && (b = bucket_of(c, group)) < 0))
			return q < 0 ? -1 : (int)b;
		w->src = e;
		w->order = i;
		w->count = 0;
		top_value(json_object_get(e, "p"), w);
		s = w->sa ? dict_find(&c->ds->sa_values, w->sa) : -1;
		w->base_p = b >= 0 ? bucket_p(c->ds, (size_t)b, s) : table_at(&c->p0, (size_t)q, s);
		w->base_top = table_top(&c->p0, (size_t)q);
	}
	return 0;
}

/* Ranked: p descending, then count descending, then the result's order. */
static int cmp_rows(const void *a, const void *b)
{
	const struct risk_row *x = a, *y = b;

	if (x->p != y->p)
		return x->p < y->p ? 1 : -1;
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return (x->order > y->order) - (x->order < y->order);
}

/* The ranked rows of list (the posterior, or the individuals when
 * people) into c->rows; 0, or -1 with the problem in res. */
static int ranked(struct risk_ctx *c, const json_t *list, int people, const char *id,
		  struct http_response *res)
{
	size_t n = json_array_size(list);
	int rc;

	free(c->rows);
	c->n_rows = 0;
	if (!(c->rows = calloc(n + 1, sizeof *c->rows)))
		return http_oom(res);
	rc = people ? person_rows(c, list, c->rows) : tuple_rows(c, list, c->rows);
	if (rc == -2)
		return http_oom(res);
	if (rc) {
		http_problem(res, 500, NULL, "the stored result of %s does not match its dataset",
			     id);
		return -1;
	}
	qsort(c->rows, n, sizeof *c->rows, cmp_rows);
	c->n_rows = n;
	return 0;
}

/* ---- JSON and CSV ------------------------------------------------------------ */

static int at_risk(const struct risk_ctx *c, const struct risk_row *w)
{
	return w->sa && w->p >= c->threshold - RISK_SLACK;
}

/* A tuple's row {qi, count, sa, p, l, baseline_p, baseline_top, at_risk}
 * or a person's {name, qi, group?, sa, p, l, baseline_p, at_risk}. */
static json_t *row_json(const struct risk_ctx *c, const struct risk_row *w, int people)
{
	json_t *src = (json_t *)w->src, *group = json_object_get(src, "group"), *o = json_object();
	int bad = !o;

	if (people)
		bad |= json_object_set(o, "name", json_object_get(src, "name"));
	bad |= json_object_set(o, "qi", json_object_get(src, "qi"));
	if (people && group)
		bad |= json_object_set(o, "group", group);
	if (!people)
		bad |= json_object_set_new(o, "count", json_integer(w->count));
	bad |= json_object_set_new(o, "sa", w->sa ? json_string(w->sa) : json_null()) |
	       json_object_set_new(o, "p", json_real(w->p)) |
	       json_object_set_new(o, "l", json_real(w->l)) |
	       json_object_set_new(o, "baseline_p", json_real(w->base_p));
	if (!people)
		bad |= json_object_set_new(o, "baseline_top", json_real(w->base_top));
	bad |= json_object_set_new(o, "at_risk", json_boolean(at_risk(c, w)));
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* The rows [from, from + limit) as a JSON array. */
static json_t *rows_json(const struct risk_ctx *c, size_t from, size_t limit, int people)
{
	json_t *a = json_array();

	for (size_t i = from; a && i < c->n_rows && i - from < limit; i++)
		if (json_array_append_new(a, row_json(c, &c->rows[i], people))) {
			json_decref(a);
			return NULL;
		}
	return a;
}

static void put_number(struct http_text_buf *t, double x, char sep)
{
	char num[40];
	int n = snprintf(num, sizeof num, "%.17g%c", x, sep);

	http_put(t, num, (size_t)n);
}

/* The header: [name,] the QI attributes, count or group, then the row's
 * numbers. */
static void csv_header(struct http_text_buf *t, const struct dataset *ds, int people)
{
	if (people)
		http_put(t, "name,", 5);
	for (size_t a = 0; a < ds->n_attrs; a++)
		http_csv_field(t, ds->attr_names[a], ',');
	if (people)
		http_put(t, "group,sa,p,l,baseline_p,at_risk\r\n", 33);
	else
		http_put(t, "count,sa,p,l,baseline_p,baseline_top,at_risk\r\n", 46);
}

static void csv_row(struct http_text_buf *t, const struct risk_ctx *c, const struct risk_row *w,
		    int people)
{
	const json_t *qi = json_object_get(w->src, "qi"), *v;
	char num[32];
	size_t a;

	if (people)
		http_csv_field(t, json_string_value(json_object_get(w->src, "name")), ',');
	json_array_foreach(qi, a, v) http_csv_field(t, json_string_value(v), ',');
	if (people) { /* the group when known, else empty */
		http_csv_field(t, label_text(json_object_get(w->src, "group"), num, sizeof num),
			       ',');
	} else {
		snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, w->count);
		http_put(t, num, strlen(num));
		http_put(t, ",", 1);
	}
	http_csv_field(t, w->sa ? w->sa : "", ',');
	put_number(t, w->p, ',');
	put_number(t, w->l, ',');
	put_number(t, w->base_p, ',');
	if (!people)
		put_number(t, w->base_top, ',');
	http_put(t, at_risk(c, w) ? "true\r\n" : "false\r\n", at_risk(c, w) ? 6 : 7);
}

static void risk_csv(struct http_response *res, const struct risk_ctx *c, size_t from, size_t limit,
		     int people)
{
	struct http_text_buf t = {0};

	csv_header(&t, c->ds, people);
	for (size_t i = from; i < c->n_rows && i - from < limit; i++)
		csv_row(&t, c, &c->rows[i], people);
	if (t.oom) {
		free(t.s);
		http_oom(res);
		return;
	}
	http_take(res, 200, "text/csv; charset=utf-8", t.s, t.len);
}

/* The Link of the next page, as http_next_link's but keeping ?people=1,
 * so that following it walks the same list. */
static void next_link(struct http_response *res, const struct http_request *r, size_t limit,
		      const char *next, int people)
{
	size_t n = strlen(r->path) + 96;

	free(res->link);
	res->link = NULL;
	if (next && res->status == 200 && (res->link = malloc(n)))
		snprintf(res->link, n, "<%s?%slimit=%zu&cursor=%s>; rel=\"next\"", r->path,
			 people ? "people=1&" : "", limit, next);
}

/* The page [from, from + limit) of c->rows, JSON or CSV; the cursor is the
 * offset of the next row, as the posterior's. */
static void risk_page(struct http_response *res, const struct http_request *r, struct risk_ctx *c,
		      int people, size_t from, size_t limit)
{
	char cur[32], *next = NULL;
	json_t *page, *names;

	if (from + limit < c->n_rows) {
		snprintf(cur, sizeof cur, "%zu", from + limit);
		next = cur;
	}
	if (http_wants_csv(r)) {
		risk_csv(res, c, from, limit, people);
		next_link(res, r, limit, next, people);
		return;
	}
	names = json_array();
	for (size_t a = 0; names && a < c->ds->n_attrs; a++)
		json_array_append_new(names, json_string(c->ds->attr_names[a]));
	page = json_pack("{s:s, s:o, s:s, s:f, s:I}", "analysis_id", r->id, "qi_attributes", names,
			 "sa_attribute", c->ds->sa_name, "threshold", c->threshold, "total",
			 (json_int_t)c->n_rows);
	if (page && c->people)
		json_object_set(page, "people", c->people);
	http_page_respond(res, r, page, rows_json(c, from, limit, people), next, limit);
	next_link(res, r, limit, next, people);
}

/* ---- the request -------------------------------------------------------------- */

/* ?people=: 0 (the tuples) or 1 (the named people). */
static int people_param(const struct http_request *r, int *people, struct http_response *res)
{
	const char *v = http_query(r, "people");

	*people = v && !strcmp(v, "1");
	if (v && strcmp(v, "0") && strcmp(v, "1")) {
		http_problem(res, 400, "people", "must be 0 or 1, got '%.40s'", v);
		return -1;
	}
	return 0;
}

/* The analysis's result (*result) and, from its dataset, c->ds, P0 and
 * the threshold; 0, or -1 with the problem in res (404, 409, 500). */
static int risk_load(struct http_server *h, const struct http_request *r, json_t **result,
		     struct risk_ctx *c, struct http_response *res)
{
	struct store_row an = {0};
	struct pm_error err = {0};
	json_t *th;
	int rc = -1;
	enum pm_status st;

	if (store_analysis_get(h->store, r->id, r->tenant, &an, &err)) {
		api_store_failed(res, r, &err);
		goto out;
	}
	if (strcmp(an.status, "succeeded")) {
		http_problem(res, 409, NULL,
			     "the analysis is %s; its risk list exists once it has succeeded",
			     an.status);
		goto out;
	}
	c->store = h->store;
	st = store_dataset_parsed(h->store, an.dataset_id, r->tenant, &c->ds, &err);
	if (st && st != PM_ERR_INTERNAL) {
		http_problem_err(res, &err);
		goto out;
	}
	*result = http_stored_json(an.result);
	if (st || !json_is_array(json_object_get(*result, "posterior"))) {
		http_problem(res, 500, NULL, "the stored result of %s is unreadable", r->id);
		goto out;
	}
	if (privacy_baseline(c->ds, &c->p0)) {
		http_oom(res);
		goto out;
	}
	th = json_object_get(json_object_get(*result, "privacy"), "threshold");
	c->threshold = th ? json_number_value(th) : 0.5; /* SPEC 4.1's default */
	rc = 0;
out:
	store_row_finish(&an);
	return rc;
}

/* Beside a JSON page of tuples: every named person, ranked, as JSON. */
static int people_beside(struct risk_ctx *c, const json_t *people, const char *id,
			 struct http_response *res)
{
	if (!json_array_size(people))
		return 0;
	if (ranked(c, people, 1, id, res))
		return -1;
	if (!(c->people = rows_json(c, 0, c->n_rows, 1)))
		return http_oom(res);
	return 0;
}

static void risk_get(struct http_server *h, const struct http_request *r, struct http_response *res)
{
	struct risk_ctx c = {0};
	json_t *result = NULL, *people;
	int csv = http_wants_csv(r), person_rows_asked;
	size_t max = csv ? RISK_CSV_MAX : RISK_MAX, limit;
	int64_t from;

	if (http_page_params(r, csv ? max : RISK_DEFAULT, max, &limit, &from, res) ||
	    people_param(r, &person_rows_asked, res) || risk_load(h, r, &result, &c, res))
		goto out;
	people = json_object_get(result, "individuals");
	if (!csv && !person_rows_asked && people_beside(&c, people, r->id, res))
		goto out;
	if (person_rows_asked ? ranked(&c, people, 1, r->id, res)
			      : ranked(&c, json_object_get(result, "posterior"), 0, r->id, res))
		goto out;
	risk_page(res, r, &c, person_rows_asked, (size_t)from, limit);
out:
	json_decref(result);
	ctx_finish(&c);
}

/* GET /v1/analyses/{id}/report: the stored result's report page
 * (report.c), which needs nothing but the result. */
static void report_get(struct http_server *h, const struct http_request *r,
		       struct http_response *res)
{
	struct store_row an = {0};
	struct pm_error err = {0};
	json_t *result = NULL;
	char *html;
	size_t len;

	if (store_analysis_get(h->store, r->id, r->tenant, &an, &err)) {
		api_store_failed(res, r, &err);
		goto out;
	}
	if (strcmp(an.status, "succeeded")) {
		http_problem(res, 409, NULL,
			     "the analysis is %s; its report exists once it has succeeded",
			     an.status);
		goto out;
	}
	if (!(result = http_stored_json(an.result)))
		http_problem(res, 500, NULL, "the stored result of %s is unreadable", r->id);
	else if (!(html = report_html(result, &len)))
		http_oom(res);
	else
		http_take(res, 200, "text/html; charset=utf-8", html, len);
out:
	json_decref(result);
	store_row_finish(&an);
}

void risk_handle(struct http_server *h, const struct http_request *r, struct http_response *res)
{
	if (r->route == ROUTE_RISK)
		risk_get(h, r, res);
	else if (r->route == ROUTE_REPORT)
		report_get(h, r, res);
	else
		http_problem(res, 404, NULL, "no resource at %s", r->path);
}
