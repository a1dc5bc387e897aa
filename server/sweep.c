/*
 * Sweeps (SPEC 4.2): the paper's Figures 5 and 6 on one dataset, one
 * solve per kind, T and K. The rules of each T are mined once, at the
 * largest K of either kind the points need; each point takes prefixes of
 * the two ranked lists (the top K of a ranking is a prefix of its top K'
 * for K <= K'), so a point is the solve `pmaxent solve` would make of
 * its own mined knowledge.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codec_internal.h"
#include "server.h"

static const char *const kind_names[] = {"positive", "negative", "mixed"};

/* The positive and negative rules a point of kind and K takes. */
static void point_counts(enum sweep_kind kind, size_t k, size_t *pos, size_t *neg)
{
	*pos = kind == SWEEP_POSITIVE ? k : kind == SWEEP_MIXED ? k / 2 : 0;
	*neg = kind == SWEEP_NEGATIVE ? k : kind == SWEEP_MIXED ? k - k / 2 : 0;
}

/* The array key of j as non-negative integers in [lo, hi] (n of them, at
 * most cap), into out (malloc'd). A missing key leaves *n 0. */
static enum pm_status int_list(const json_t *j, const char *key, long long lo, long long hi,
			       size_t cap, size_t **out, size_t *n, struct pm_error *err)
{
	const json_t *a = json_object_get(j, key), *v;
	char field[64];
	size_t i;

	*n = 0;
	if (!a)
		return PM_OK;
	if (!json_is_array(a) || json_array_size(a) == 0)
		return codec_bad_value(err, key, "a non-empty array of integers", a);
	if (json_array_size(a) > cap)
		return error_set(err, PM_ERR_INPUT, key, "has %zu entries; at most %zu are allowed",
				 json_array_size(a), cap);
	if (!(*out = malloc(json_array_size(a) * sizeof **out)))
		return error_set(err, PM_ERR_NOMEM, "", "out of memory");
	json_array_foreach(a, i, v)
	{
		snprintf(field, sizeof field, "%s[%zu]", key, i);
		if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
			return error_set(err, PM_ERR_INPUT, field,
					 "must be an integer from %lld to %lld", lo, hi);
		(*out)[i] = (size_t)json_integer_value(v);
	}
	*n = i;
	return PM_OK;
}

/* "kinds": a non-empty list of "positive", "negative", "mixed". */
static enum pm_status kind_list(const json_t *j, struct sweep_request *q, struct pm_error *err)
{
	const json_t *a = json_object_get(j, "kinds"), *v;
	char field[32];
	size_t i;

	if (!json_is_array(a) || json_array_size(a) == 0 || json_array_size(a) > 3)
		return codec_bad_value(
		    err, "kinds", "a list of 1 to 3 of \"positive\", \"negative\", \"mixed\"", a);
	json_array_foreach(a, i, v)
	{
		size_t k = 0;

		snprintf(field, sizeof field, "kinds[%zu]", i);
		while (k < 3 &&
		       !(json_is_string(v) && !strcmp(json_string_value(v), kind_names[k])))
			k++;
		if (k == 3)
			return codec_bad_value(err, field,
					       "\"positive\", \"negative\" or \"mixed\"", v);
		q->kinds[i] = (enum sweep_kind)k;
	}
	q->n_kinds = i;
	return PM_OK;
}

enum pm_status codec_sweep_request(const json_t *j, const struct dataset *ds,
				   struct sweep_request *q, struct pm_error *err)
{
	static const char *const keys[] = {"kinds",  "k", "qi_attributes", "min_support", "solver",
					   "report", NULL};
	const json_t *ms = json_object_get(j, "min_support");
	enum pm_status st;

	memset(q, 0, sizeof *q);
	if (!json_is_object(j))
		return codec_bad_value(err, "", "a sweep request object", j);
	if (codec_check_keys(j, "", keys, err))
		return PM_ERR_INPUT;
	q->min_support = 3;
	if (ms && (!json_is_integer(ms) || json_integer_value(ms) < 0))
		return codec_bad_value(err, "min_support", "a non-negative integer", ms);
	if (ms)
		q->min_support = (uint64_t)json_integer_value(ms);
	if ((st = kind_list(j, q, err)) ||
	    (st = int_list(j, "k", 0, MINER_MAX_K, SWEEP_MAX_POINTS, &q->k, &q->n_k, err)) ||
	    (st = int_list(j, "qi_attributes", 1, (long long)ds->n_attrs, DATASET_MAX_ATTRS, &q->t,
			   &q->n_t, err)))
		return st;
	if (!q->n_k)
		return error_set(err, PM_ERR_INPUT, "k", "is missing; give the list of K");
	if (q->n_kinds * (q->n_t ? q->n_t : 1) * q->n_k > SWEEP_MAX_POINTS)
		return error_set(err, PM_ERR_INPUT, "k", "makes %zu points; at most %d are allowed",
				 q->n_kinds * (q->n_t ? q->n_t : 1) * q->n_k, SWEEP_MAX_POINTS);
	if (!ds->has_ground_truth)
		return error_set(err, PM_ERR_INPUT, "",
				 "a sweep mines rules from the original records (records form); "
				 "this dataset is published form");
	return PM_OK;
}

void sweep_request_finish(struct sweep_request *q)
{
	free(q->k);
	free(q->t);
	memset(q, 0, sizeof *q);
}

/* One point's JSON (SPEC 4.2) from its solve. */
static json_t *point_json(const struct dataset *ds, enum sweep_kind kind, size_t k, size_t t,
			  size_t pos, size_t neg, const struct solver_result *r)
{
	int inf = r->estimation_infinite || !r->has_accuracy;
	json_t *o = json_pack(
	    "{s:s, s:I, s:o, s:o, s:b, s:o, s:f, s:s, s:i, s:{s:I, s:I}}", "kind", kind_names[kind],
	    "k", (json_int_t)k, "qi_attributes", t ? json_integer((json_int_t)t) : json_null(),
	    "estimation_accuracy", inf ? json_null() : json_real(r->estimation_accuracy),
	    "estimation_accuracy_infinite", r->estimation_infinite, "privacy", codec_privacy(ds, r),
	    "seconds", r->seconds, "status",
	    r->status == SOLVER_CONVERGED ? "converged" : "not_converged", "iterations",
	    r->iterations, "rules", "positive", (json_int_t)pos, "negative", (json_int_t)neg);

	return o;
}

/* The knowledge of a point: the first pos of mined's positive rules and
 * its first neg negative ones (mined: found.positive, then negative). */
static enum pm_status prefix(const struct knowledge *mined, const struct miner_found *found,
			     size_t pos, size_t neg, struct knowledge *k, struct pm_error *err)
{
	enum pm_status st = PM_OK;

	pos = pos < found->positive ? pos : found->positive;
	neg = neg < found->negative ? neg : found->negative;
	for (size_t i = 0; !st && i < pos; i++)
		st = knowledge_append(k, &mined->rules[i], err);
	for (size_t i = 0; !st && i < neg; i++)
		st = knowledge_append(k, &mined->rules[found->positive + i], err);
	return st;
}

/* What the points of one T share, and the warm start each kind's points
 * pass along: the last converged solve, with the rule counts it took. */
struct sweep_t {
	const struct dataset *ds;
	const struct sweep_request *q;
	const struct solver_options *o;
	const struct knowledge *mined;
	const struct miner_found *found;
	size_t t;
	json_t *points;
	const struct sweep_hooks *hooks;
	struct solver_result warm;
	size_t warm_pos, warm_neg;
};

/* The solve of k into *r, warm from the point before if its rules are a
 * prefix of k's (struct solver_warm: the same ranked lists, no more of
 * either); a converged one becomes the next point's warm start. */
static enum pm_status solve_warm(struct sweep_t *w, const struct knowledge *k, size_t pos,
				 size_t neg, struct solver_result *r, struct pm_error *err)
{
	struct solver_options so = *w->o;
	struct solver_warm warm = {w->warm.zero, w->warm.cells};
	struct invariants inv = {0};
	enum pm_status st;

	if (w->warm.zero && w->warm_pos <= pos && w->warm_neg <= neg)
		so.warm = &warm;
	if (!(st = invariants_build(w->ds, k, &inv, err)))
		st = solver_run(w->ds, k, &inv, &so, r, err);
	invariants_finish(&inv);
	if (!st && r->status == SOLVER_CONVERGED && r->zero) {
		solver_result_finish(&w->warm);
		w->warm = *r;
		w->warm_pos = pos;
		w->warm_neg = neg;
		memset(r, 0, sizeof *r); /* w->warm owns it now */
	}
	return st;
}

/* The solve of one point into points[at]; hooks told. */
static enum pm_status one_point(struct sweep_t *w, size_t kind, size_t ki, struct pm_error *err)
{
	const struct sweep_request *q = w->q;
	size_t pos, neg, n_t = q->n_t ? q->n_t : 1;
	size_t at = (kind * n_t + w->t) * q->n_k + ki;
	struct knowledge k;
	struct solver_result r = {0};
	enum pm_status st;
	json_t *p = NULL;

	knowledge_init(&k);
	point_counts(q->kinds[kind], q->k[ki], &pos, &neg);
	if (!(st = prefix(w->mined, w->found, pos, neg, &k, err)) &&
	    !(st = solve_warm(w, &k, pos, neg, &r, err))) {
		size_t kp = pos < w->found->positive ? pos : w->found->positive;
		/* a converged r went on to be the warm start */
		const struct solver_result *done = r.cells ? &r : &w->warm;

		p = point_json(w->ds, q->kinds[kind], q->k[ki], q->n_t ? q->t[w->t] : 0, kp,
			       k.n - kp, done);
		if (!p || json_array_set(w->points, at, p))
			st = error_set(err, PM_ERR_NOMEM, "", "out of memory writing the sweep");
		else if (w->hooks && w->hooks->point && w->hooks->point(w->hooks->ctx, at, p))
			st = error_set(err, PM_ERR_CANCELLED, "", "the sweep was cancelled");
	}
	json_decref(p);
	solver_result_finish(&r);
	knowledge_finish(&k);
	return st;
}

/* The most positive and negative rules any point of q takes. */
static void largest(const struct sweep_request *q, size_t *pos, size_t *neg)
{
	*pos = *neg = 0;
	for (size_t i = 0; i < q->n_kinds; i++)
		for (size_t j = 0; j < q->n_k; j++) {
			size_t p, n;

			point_counts(q->kinds[i], q->k[j], &p, &n);
			*pos = p > *pos ? p : *pos;
			*neg = n > *neg ? n : *neg;
		}
}

/* Every point of one T: its rules mined once, then each kind and K,
 * each kind's points warm from the one before. */
static enum pm_status one_t(const struct dataset *ds, const struct sweep_request *q,
			    const struct solver_options *o, size_t t, json_t *points,
			    const struct sweep_hooks *hooks, struct pm_error *err)
{
	struct miner_options mo;
	struct miner_found found = {0};
	struct knowledge mined;
	struct sweep_t w = {.ds = ds,
			    .q = q,
			    .o = o,
			    .mined = &mined,
			    .found = &found,
			    .t = t,
			    .points = points,
			    .hooks = hooks};
	enum pm_status st;

	knowledge_init(&mined);
	miner_options_init(&mo);
	largest(q, &mo.positive, &mo.negative);
	mo.min_support = q->min_support;
	mo.qi_attributes = q->n_t ? q->t[t] : 0;
	st = miner_run_counted(ds, &mo, &mined, &found, err);
	for (size_t kind = 0; !st && kind < q->n_kinds; kind++) {
		solver_result_finish(&w.warm);
		for (size_t ki = 0; !st && ki < q->n_k; ki++)
			st = one_point(&w, kind, ki, err);
	}
	solver_result_finish(&w.warm);
	knowledge_finish(&mined);
	return st;
}

enum pm_status sweep_run(const struct dataset *ds, const struct sweep_request *q,
			 const struct solver_options *o, const struct sweep_hooks *hooks,
			 json_t **out, struct pm_error *err)
{
	size_t n_t = q->n_t ? q->n_t : 1, n = q->n_kinds * n_t * q->n_k;
	json_t *points = json_array();
	enum pm_status st = points ? PM_OK : PM_ERR_NOMEM;

	*out = NULL;
	for (size_t i = 0; !st && i < n; i++) /* in SPEC 4.2's order, filled as solved */
		st = json_array_append_new(points, json_null()) ? PM_ERR_NOMEM : PM_OK;
	if (st)
		error_set(err, st, "", "out of memory");
	for (size_t t = 0; !st && t < n_t; t++)
		st = one_t(ds, q, o, t, points, hooks, err);
	if (!st && !(*out = json_pack("{s:o}", "points", points)))
		st = error_set(err, PM_ERR_NOMEM, "", "out of memory");
	else if (st)
		json_decref(points);
	return st;
}

/* Estimation accuracy against K, one curve per kind and T (SPEC 5): what
 * `pmaxent sweep --svg` writes and GET /v1/sweeps/{id}/chart.svg serves.
 * Points not solved yet (null) are gaps. */
char *sweep_chart(const char *name, const struct sweep_request *q, const json_t *points,
		  size_t *len)
{
	size_t n_t = q->n_t ? q->n_t : 1, n = q->n_kinds * n_t;
	struct svg_series *s = calloc(n, sizeof *s);
	double *xy = malloc(2 * n * q->n_k * sizeof *xy + 1);
	char(*names)[48] = calloc(n, sizeof *names), title[320];
	struct svg_chart c = {.title = title,
			      .x_label = "K (rules of the kind)",
			      .y_label = "estimation accuracy (nats)",
			      .x_integer = 1};
	char *svg = NULL;

	snprintf(title, sizeof title, "%s: estimation accuracy against K", name ? name : "sweep");
	for (size_t i = 0; s && xy && names && i < n; i++) {
		double *x = xy + 2 * i * q->n_k, *y = x + q->n_k;

		for (size_t k = 0; k < q->n_k; k++) {
			const json_t *a = json_object_get(json_array_get(points, i * q->n_k + k),
							  "estimation_accuracy");

			x[k] = (double)q->k[k];
			y[k] = json_is_number(a) ? json_number_value(a) : NAN;
		}
		/* the series' kind from the request: its points may not exist yet */
		if (q->n_t)
			snprintf(names[i], sizeof names[i], "%s, T = %zu",
				 kind_names[q->kinds[i / n_t]], q->t[i % n_t]);
		else
			snprintf(names[i], sizeof names[i], "%s", kind_names[q->kinds[i]]);
		s[i] = (struct svg_series){.name = names[i], .x = x, .y = y, .n = q->n_k};
	}
	if (s && xy && names)
		svg = svg_render(&c, s, n, len);
	free(s);
	free(xy);
	free(names);
	return svg;
}
