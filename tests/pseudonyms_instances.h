/*
 * What the pseudonyms tests (test_pseudonyms.c, test_pseudonyms_people.c)
 * share: knowledge built by hand, solver_run run and compared with the
 * reference's answer (pseudonyms.h), random small tables and knowledge,
 * the seeds of a randomized part, tables written out by hand, and random
 * instances.
 *
 * Everything is static (and may go unused) so that each test includes it
 * on its own.
 */
#ifndef PMAXENT_TEST_PSEUDONYMS_INSTANCES_H
#define PMAXENT_TEST_PSEUDONYMS_INSTANCES_H

#include <inttypes.h>

#include "check.h"
#include "pseudonyms.h"
#include "random_table.h"
#include "solver.h"

#define PSEUDONYMS_FN static __attribute__((unused))

#define AGREE	   1e-8
#define SEED	   UINT64_C(20080610)
#define SOLVER_TOL 1e-10
#define NO_TRUTH   UINT32_MAX

/* ---- building knowledge by hand ---------------------------------------- */

PSEUDONYMS_FN void add_rule(struct knowledge *k, const struct rule *r)
{
	struct pm_error err = {0};
	CHECK(knowledge_append(k, r, &err) == PM_OK);
}

/* Person on record j's tuple, in its bucket when with_group. */
PSEUDONYMS_FN long add_person(struct knowledge *k, const struct dataset *ds, size_t j,
			      int with_group)
{
	char name[32];
	struct individual *in;
	if (k->n_people == k->people_cap) {
		size_t cap = 2 * k->people_cap + 4;
		struct individual *p = realloc(k->people, cap * sizeof(*p));
		CHECK(p != NULL);
		if (!p)
			return -1;
		k->people = p;
		k->people_cap = cap;
	}
	snprintf(name, sizeof(name), "p%zu", k->n_people);
	in = &k->people[k->n_people];
	in->name = strdup(name);
	in->tuple = ds->rec_tuple[j];
	in->group = with_group ? (long)ds->rec_group[j] : -1;
	return (long)k->n_people++;
}

/* A statement of n terms (filled by the caller through the returned
 * pointer), lo to hi, equality as "value". */
PSEUDONYMS_FN struct statement *add_statement(struct knowledge *k, size_t n, double lo, double hi,
					      int equality)
{
	struct statement *st;
	if (k->n_statements == k->statements_cap) {
		size_t cap = 2 * k->statements_cap + 4;
		struct statement *s = realloc(k->statements, cap * sizeof(*s));
		CHECK(s != NULL);
		if (!s)
			return NULL;
		k->statements = s;
		k->statements_cap = cap;
	}
	st = &k->statements[k->n_statements++];
	memset(st, 0, sizeof(*st));
	st->n_terms = n;
	st->terms = calloc(n, sizeof(*st->terms));
	st->lo = lo;
	st->hi = hi;
	st->equality = equality;
	return st;
}

/* n(Qv) and n(Qv and s in set) over the records (set: bitmask of codes). */
PSEUDONYMS_FN uint64_t count_cond(const struct dataset *ds, const struct rule *cond, uint64_t set,
				  uint64_t *with)
{
	uint64_t n = 0;
	*with = 0;
	for (size_t j = 0; j < ds->n_records; j++)
		if (knowledge_matches(ds, cond, ds->rec_tuple[j])) {
			n++;
			*with += (set >> ds->rec_sa[j]) & 1;
		}
	return n;
}

/* Term t: a distribution term over cond with then = the codes of set. */
PSEUDONYMS_FN void set_dist_term(const struct dataset *ds, struct statement_term *t,
				 const struct rule *cond, uint64_t set, double coef)
{
	uint64_t with;
	t->coef = coef;
	t->person = -1;
	t->cond = *cond;
	t->n_qv = count_cond(ds, cond, set, &with);
	t->then = calloc(ds->sa_values.n, sizeof(*t->then));
	t->n_then = 0;
	for (uint32_t s = 0; s < ds->sa_values.n; s++)
		if ((set >> s) & 1)
			t->then[t->n_then++] = s;
}

PSEUDONYMS_FN void set_person_term(const struct dataset *ds, struct statement_term *t, long person,
				   uint64_t set, double coef)
{
	memset(&t->cond, 0, sizeof(t->cond));
	t->coef = coef;
	t->person = person;
	t->n_qv = 1;
	t->then = calloc(ds->sa_values.n, sizeof(*t->then));
	t->n_then = 0;
	for (uint32_t s = 0; s < ds->sa_values.n; s++)
		if ((set >> s) & 1)
			t->then[t->n_then++] = s;
}

/* ---- the solver side ----------------------------------------------------- */

/* invariants_build (rules only) and solver_run into r; the status. */
PSEUDONYMS_FN enum pm_status run_solver(const struct dataset *ds, const struct knowledge *k,
					enum solver_method method, struct solver_result *r,
					struct pm_error *err)
{
	struct invariants inv;
	struct solver_options so;
	enum pm_status st;
	memset(&inv, 0, sizeof(inv));
	memset(r, 0, sizeof(*r));
	if ((st = invariants_build(ds, k, &inv, err)) != PM_OK)
		return st;
	solver_options_init(&so);
	so.tolerance = SOLVER_TOL;
	so.threads = 1;
	so.method = method;
	st = solver_run(ds, k, &inv, &so, r, err);
	invariants_finish(&inv);
	return st;
}

/* The largest differences seen. */
struct worst {
	double post, person_p, person_b, st, rule, ref_h, modes;
	long sweeps;
	size_t instances, infeasible, forced, statements, people, person_terms, solver_runs;
};

PSEUDONYMS_FN void note(double *worst, double v)
{
	if (!(v <= *worst)) /* NaN sticks */
		*worst = v;
}

/* The solver's posterior made dense: [q n_s + s]. */
PSEUDONYMS_FN double *dense_posterior(const struct dataset *ds, const struct solver_result *r)
{
	size_t ns = ds->sa_values.n;
	double *d = calloc(ds->n_tuples * ns + 1, sizeof(*d));
	if (!d || !r->post_off)
		return d;
	for (size_t q = 0; q < ds->n_tuples; q++)
		for (size_t e = r->post_off[q]; e < r->post_off[q + 1]; e++)
			if (r->post_sa[e] < ns)
				d[q * ns + r->post_sa[e]] += r->post_p[e];
	return d;
}

PSEUDONYMS_FN double posterior_diff(const struct dataset *ds, const double *a, const double *b)
{
	double d = 0.0;
	for (size_t c = 0; c < ds->n_tuples * ds->sa_values.n; c++)
		note(&d, fabs(a[c] - b[c]));
	return d;
}

/* Everything solver_run reports against the reference p (feasible);
 * people and statements of k checked when present. Returns the largest
 * difference. */
PSEUDONYMS_FN double compare_solver(const struct dataset *ds, const struct knowledge *k,
				    const struct pseudo *p, const struct solver_result *r,
				    struct worst *w)
{
	size_t ns = ds->sa_values.n, nb = ds->n_groups;
	double *post = dense_posterior(ds, r), worst = 0.0, d;
	CHECK(r->status == SOLVER_CONVERGED);
	if (r->status != SOLVER_CONVERGED)
		fprintf(stderr, "  solver not converged: %s (max_violation %.3g)\n", r->reason,
			r->max_violation);
	CHECK(r->post_off != NULL && post != NULL);
	if (post && r->post_off) {
		d = posterior_diff(ds, post, p->post);
		CHECK_NEAR(d, 0.0, AGREE);
		note(&w->post, d);
		note(&worst, d);
	}
	free(post);
	if (r->achieved) {
		d = 0.0;
		for (size_t i = 0; i < k->n; i++)
			note(&d, fabs(r->achieved[i] - p->rule_p[i]));
		CHECK_NEAR(d, 0.0, AGREE);
		note(&w->rule, d);
		note(&worst, d);
	}
	if (k->n_statements) {
		CHECK(r->st_achieved != NULL);
		d = r->st_achieved ? 0.0 : INFINITY;
		for (size_t i = 0; r->st_achieved && i < k->n_statements; i++)
			note(&d, fabs(r->st_achieved[i] - p->st_achieved[i]));
		CHECK_NEAR(d, 0.0, AGREE);
		note(&w->st, d);
		note(&worst, d);
	}
	if (k->n_people) {
		double *ps = calloc(k->n_people * ns + 1, sizeof(*ps));
		double *pb = calloc(k->n_people * nb + 1, sizeof(*pb));
		double dp = r->person_off ? 0.0 : INFINITY, db = dp;
		CHECK(r->person_off != NULL && ps && pb);
		for (size_t i = 0; r->person_off && ps && pb && i < k->n_people; i++)
			for (size_t e = r->person_off[i]; e < r->person_off[i + 1]; e++) {
				CHECK(r->person_sa[e] < ns && r->person_group[e] < nb);
				if (r->person_sa[e] >= ns || r->person_group[e] >= nb)
					continue;
				ps[i * ns + r->person_sa[e]] += r->person_p[e];
				pb[i * nb + r->person_group[e]] += r->person_p[e];
			}
		for (size_t c = 0; r->person_off && c < k->n_people * ns; c++)
			note(&dp, fabs(ps[c] - p->person_p[c]));
		for (size_t c = 0; r->person_off && c < k->n_people * nb; c++)
			note(&db, fabs(pb[c] - p->person_b[c]));
		CHECK_NEAR(dp, 0.0, AGREE);
		CHECK_NEAR(db, 0.0, AGREE);
		note(&w->person_p, dp);
		note(&w->person_b, db);
		note(&worst, fmax(dp, db));
		free(ps);
		free(pb);
	}
	return worst;
}

/* solver_run on (ds, k) against the reference's verdict st / answer p. */
PSEUDONYMS_FN double check_solver(const struct dataset *ds, const struct knowledge *k,
				  enum pseudo_status st, const struct pseudo *p, struct worst *w)
{
	double d = 0.0;

	/* both methods: the two-level dual and the paper's full dual */
	for (int method = SOLVER_TWO_LEVEL; method <= SOLVER_FULL_DUAL; method++) {
		struct solver_result r;
		struct pm_error err = {0};
		enum pm_status rc = run_solver(ds, k, (enum solver_method)method, &r, &err);

		w->solver_runs++;
		if (st == PSEUDO_INFEASIBLE) {
			CHECK(rc == PM_ERR_INCONSISTENT);
			if (rc != PM_ERR_INCONSISTENT)
				fprintf(stderr,
					"  reference: infeasible; solver (method %d): status %d %s "
					"%s\n",
					method, (int)rc, err.field, err.message);
		} else {
			CHECK(rc == PM_OK);
			if (rc != PM_OK)
				fprintf(stderr, "  solver (method %d): status %d: %s: %s\n", method,
					(int)rc, err.field, err.message);
			else
				d = fmax(d, compare_solver(ds, k, p, &r, w));
		}
		solver_result_finish(&r);
	}
	return d;
}

/* The reference on (ds, k) in mode; a failure other than infeasible is a
 * failed check. */
PSEUDONYMS_FN enum pseudo_status ref_solve(const struct dataset *ds, const struct knowledge *k,
					   enum pseudo_mode mode, struct pseudo *p, struct worst *w)
{
	enum pseudo_status st = pseudo_solve(ds, k, mode, p);
	CHECK(st == PSEUDO_OK || st == PSEUDO_INFEASIBLE);
	if (st != PSEUDO_OK && st != PSEUDO_INFEASIBLE)
		fprintf(stderr, "  reference (mode %d): status %d: %s\n", (int)mode, (int)st,
			p->message);
	if (st == PSEUDO_OK) {
		if (p->sweeps > w->sweeps)
			w->sweeps = p->sweeps;
		w->forced += p->n_forced;
	}
	return st;
}

/* The largest difference between two answers of the reference with the
 * same rules and statements: posterior, rules, statements, and the first
 * n_people people. */
PSEUDONYMS_FN double answer_diff(const struct pseudo *a, const struct pseudo *b, size_t n_people)
{
	double d = 0.0;
	for (size_t c = 0; c < a->n_q * a->n_s; c++)
		note(&d, fabs(a->post[c] - b->post[c]));
	for (size_t c = 0; c < n_people * a->n_s; c++)
		note(&d, fabs(a->person_p[c] - b->person_p[c]));
	for (size_t c = 0; c < n_people * a->n_b; c++)
		note(&d, fabs(a->person_b[c] - b->person_b[c]));
	for (size_t i = 0; i < a->n_statements && i < b->n_statements; i++)
		note(&d, fabs(a->st_achieved[i] - b->st_achieved[i]));
	for (size_t i = 0; i < a->n_rules && i < b->n_rules; i++)
		note(&d, fabs(a->rule_p[i] - b->rule_p[i]));
	return d;
}

/* The two modes of the reference agree (verdict, posterior, people,
 * statements, rules). */
PSEUDONYMS_FN void compare_modes(const struct pseudo *a, enum pseudo_status sa,
				 const struct pseudo *b, enum pseudo_status sb, struct worst *w)
{
	double d;
	CHECK(sa == sb);
	if (sa != PSEUDO_OK || sb != PSEUDO_OK)
		return;
	d = answer_diff(a, b, a->n_people);
	CHECK_NEAR(d, 0.0, AGREE);
	note(&w->modes, d);
}

/* ---- random knowledge ---------------------------------------------------- */

/* 2-3 QI attributes of 2-3 values, SA of 2-4 values, 6-25 records in
 * buckets of 2-5. */
PSEUDONYMS_FN struct dataset *small_table(uint64_t *rng)
{
	static const struct random_shape shape = {
	    .attrs = {2, 3}, .values = {2, 3}, .sa = {2, 4}, .records = {6, 25}, .bucket = {2, 5}};
	return random_dataset_shaped(rng, &shape);
}

/* An antecedent from a random record's tuple: each attribute with
 * probability 1/2, at least one unless allow_empty (then empty 1 in 4). */
PSEUDONYMS_FN struct rule random_cond(const struct dataset *ds, uint64_t *rng, int allow_empty)
{
	struct rule r;
	uint32_t q = ds->rec_tuple[rng_in(rng, 0, ds->n_records - 1)];
	memset(&r, 0, sizeof(r));
	if (allow_empty && rng_in(rng, 0, 3) == 0)
		return r;
	while (r.n_terms == 0)
		for (uint32_t a = 0; a < ds->n_attrs; a++)
			if (rng_in(rng, 0, 1)) {
				r.attr[r.n_terms] = a;
				r.value[r.n_terms++] = ds->tuples[(size_t)q * ds->n_attrs + a];
			}
	return r;
}

/* A random set of 1 to max SA codes (as a bitmask), holding must (unless
 * NO_TRUTH) when with_must. */
PSEUDONYMS_FN uint64_t random_set(const struct dataset *ds, uint64_t *rng, size_t max,
				  uint32_t must, int with_must)
{
	size_t ns = ds->sa_values.n, n = rng_in(rng, 1, max < ns ? max : ns);
	uint64_t set = 0;
	if (with_must && must != NO_TRUTH) {
		set |= UINT64_C(1) << must;
		n--;
	}
	while (n > 0) {
		uint32_t s = (uint32_t)rng_in(rng, 0, ns - 1);
		if (!((set >> s) & 1)) {
			set |= UINT64_C(1) << s;
			n--;
		}
	}
	return set;
}

static const double widths[] = {0.0, 0.05, 0.1, 0.2, 0.5};

/*
 * Bounds about the records' own value v (so feasible) or, when wild, maybe
 * not: 0 equality at v; 1 a box about v; 2 min only; 3 max only; wild
 * also 4 a random box (maybe without v) and 5 a random value. Rules stay
 * within [0, 1] (their one-sided forms have the other bound 0 or 1);
 * statements use +-infinity.
 */
PSEUDONYMS_FN void random_bounds(uint64_t *rng, double v, int rule, int wild, double *lo,
				 double *hi, int *eq)
{
	double u1 = widths[rng_in(rng, 0, 4)], u2 = widths[rng_in(rng, 0, 4)];
	double pmin = rule ? 0.0 : -INFINITY, pmax = rule ? 1.0 : INFINITY;
	double wide_lo = rule ? 0.0 : v - 2, wide_hi = rule ? 1.0 : v + 2;
	*eq = 0;
	switch (rng_in(rng, 0, wild ? 5 : 3)) {
	case 0:
		*lo = *hi = v;
		*eq = 1;
		break;
	case 1:
		*lo = v - u1, *hi = v + u2;
		break;
	case 2:
		*lo = v - u1, *hi = pmax;
		break;
	case 3:
		*lo = pmin, *hi = v + u2;
		break;
	case 4:
		*lo = wide_lo + (wide_hi - wide_lo) * (double)rng_in(rng, 0, 10) / 10.0;
		*hi = *lo + u1 + u2;
		break;
	default:
		*lo = *hi = v + (double)rng_in(rng, 0, 8) / 10.0 - 0.4;
		*eq = 1;
		break;
	}
	if (rule) {
		*lo = fmin(1.0, fmax(0.0, *lo));
		*hi = fmin(1.0, fmax(*lo, *hi));
	}
}

/* A random rule (a box, one-sided, equality; wild: maybe infeasible). */
PSEUDONYMS_FN void random_rule(const struct dataset *ds, uint64_t *rng, struct knowledge *k,
			       int wild)
{
	struct rule r = random_cond(ds, rng, 0);
	uint64_t with;
	int eq;
	r.sa = rng_in(rng, 0, 2) ? ds->rec_sa[rng_in(rng, 0, ds->n_records - 1)]
				 : (uint32_t)rng_in(rng, 0, ds->sa_values.n - 1);
	r.source = RULE_USER;
	r.n_qv = count_cond(ds, &r, UINT64_C(1) << r.sa, &with);
	r.n_qv_s = with;
	random_bounds(rng, (double)with / (double)r.n_qv, 1, wild, &r.lo, &r.hi, &eq);
	add_rule(k, &r);
}

/* Relational statement: 1-3 distribution terms (some with empty if), then
 * lists of 1-3 values, coefficients of either sign; person terms mixed in
 * (truth: each person's own value) when people exist and with_persons. */
PSEUDONYMS_FN void random_dist_statement(const struct dataset *ds, uint64_t *rng,
					 struct knowledge *k, const uint32_t *truth,
					 int with_persons, int wild)
{
	static const double coefs[] = {1, -1, 2, -2, 0.5, -0.5, 1.5, 3};
	size_t n = rng_in(rng, 1, 3);
	double lo, hi, v = 0.0;
	int eq;
	struct statement *st = add_statement(k, n, 0, 0, 0);
	if (!st)
		return;
	for (size_t t = 0; t < n; t++) {
		double coef = t == 0 && rng_in(rng, 0, 1) ? 1.0 : coefs[rng_in(rng, 0, 7)];
		uint64_t set = random_set(ds, rng, 3, NO_TRUTH, 0), with;
		if (with_persons && k->n_people > 0 && rng_in(rng, 0, 2) == 0) {
			long i = (long)rng_in(rng, 0, k->n_people - 1);
			set_person_term(ds, &st->terms[t], i, set, coef);
			v += coef * (double)((set >> truth[i]) & 1);
		} else {
			struct rule cond = random_cond(ds, rng, 1);
			set_dist_term(ds, &st->terms[t], &cond, set, coef);
			count_cond(ds, &cond, set, &with);
			v += coef * (double)with / (double)st->terms[t].n_qv;
		}
	}
	random_bounds(rng, v, 0, wild, &lo, &hi, &eq);
	st->lo = lo, st->hi = hi, st->equality = eq;
}

/* Person statements: "i does not have X" (value 0), "i has one of X, Y"
 * (value 1), "k of these people have s" (min or max); true of the records
 * unless wild (then often, not always). */
PSEUDONYMS_FN void random_person_statement(const struct dataset *ds, uint64_t *rng,
					   struct knowledge *k, const uint32_t *truth, int wild)
{
	long i = (long)rng_in(rng, 0, k->n_people - 1);
	struct statement *st;
	size_t kind = k->n_people >= 2 ? rng_in(rng, 0, 2) : rng_in(rng, 0, 1);
	if (kind == 0 && !wild && ds->sa_values.n == 1)
		kind = 1; /* one value in the domain: "does not have" it is false */
	switch (kind) {
	case 0: { /* i does not have s (wild: any s, their own included) */
		uint64_t set;
		do
			set = random_set(ds, rng, 1, NO_TRUTH, 0);
		while (!wild && ((set >> truth[i]) & 1));
		st = add_statement(k, 1, 0.0, 0.0, 1);
		if (st)
			set_person_term(ds, &st->terms[0], i, set, 1.0);
		break;
	}
	case 1: /* i has one of these (wild: 2 in 3 with their own among them) */
		st = add_statement(k, 1, 1.0, 1.0, 1);
		if (st)
			set_person_term(
			    ds, &st->terms[0], i,
			    random_set(ds, rng, 3, truth[i], !wild || rng_in(rng, 0, 2) > 0), 1.0);
		break;
	default: { /* k of 2-3 distinct people have s: min (or max) about the truth */
		size_t n = rng_in(rng, 2, k->n_people < 3 ? 2 : 3), have = 0;
		uint32_t s = truth[rng_in(rng, 0, k->n_people - 1)];
		long who[3];
		int at_most = rng_in(rng, 0, 3) == 0;
		for (size_t t = 0; t < n; t++) {
			int again;
			do {
				who[t] = (long)rng_in(rng, 0, k->n_people - 1);
				again = 0;
				for (size_t u = 0; u < t; u++)
					again |= who[u] == who[t];
			} while (again);
			have += truth[who[t]] == s;
		}
		{
			/* wild: one off either way; else what holds */
			double off = wild ? (double)rng_in(rng, 0, 2) - 1.0
					  : (double)rng_in(rng, 0, 1) * (at_most ? 1 : -1);
			double c = (double)have + off;
			st =
			    add_statement(k, n, at_most ? -INFINITY : c, at_most ? c : INFINITY, 0);
		}
		for (size_t t = 0; st && t < n; t++)
			set_person_term(ds, &st->terms[t], who[t], UINT64_C(1) << s, 1.0);
		break;
	}
	}
}

/* What an instance gets. */
struct mix {
	size_t rules, people, statements; /* at most this many of each */
	int person_terms;		  /* statements may name people */
};

/* Random knowledge of the mix; truth receives each person's value (at
 * most MAX_PEOPLE), used (n_records) marks the people's records. Returns
 * whether it is wild (maybe false of the records; else it holds). */
#define MAX_PEOPLE 8
PSEUDONYMS_FN int random_knowledge(const struct dataset *ds, uint64_t *rng, const struct mix *m,
				   struct knowledge *k, uint32_t *truth, uint8_t *used)
{
	size_t n_rules = rng_in(rng, 0, m->rules), n_people = rng_in(rng, 0, m->people);
	size_t n_st = rng_in(rng, 0, m->statements);
	int wild = rng_in(rng, 0, 3) == 0; /* 1 in 4: knowledge maybe false */
	knowledge_init(k);
	for (size_t i = 0; i < n_rules; i++)
		random_rule(ds, rng, k, wild);
	/* distinct records: never more people of a tuple (or tuple and group)
	 * than records */
	for (size_t i = 0; used && i < n_people && i < ds->n_records; i++) {
		size_t j;
		do
			j = rng_in(rng, 0, ds->n_records - 1);
		while (used[j]);
		used[j] = 1;
		truth[k->n_people] = ds->rec_sa[j];
		add_person(k, ds, j, (int)rng_in(rng, 0, 1));
	}
	for (size_t i = 0; i < n_st; i++)
		if (m->person_terms && k->n_people > 0 && rng_in(rng, 0, 1))
			random_person_statement(ds, rng, k, truth, wild);
		else
			random_dist_statement(ds, rng, k, truth, m->person_terms, wild);
	return wild;
}

/* The seeds of a randomized part: n of them from base, or the one in
 * PMAXENT_PSEUDONYMS_SEED. */
PSEUDONYMS_FN size_t seeds(uint64_t base, size_t n, uint64_t *out, size_t cap)
{
	const char *only = getenv("PMAXENT_PSEUDONYMS_SEED");
	if (only && *only) {
		out[0] = strtoull(only, NULL, 10);
		return 1;
	}
	for (size_t i = 0; i < n && i < cap; i++)
		out[i] = base + i;
	return n < cap ? n : cap;
}

PSEUDONYMS_FN void report_seed(const char *part, uint64_t seed, int failed_before, double diff)
{
	if (check_failed > failed_before)
		fprintf(stderr,
			"  ^ %s: instance seed %" PRIu64 ", largest difference %.3g (rerun alone "
			"with PMAXENT_PSEUDONYMS_SEED=%" PRIu64 ")\n",
			part, seed, diff, seed);
}

/* ---- hand-solved cases --------------------------------------------------- */

PSEUDONYMS_FN struct dataset *build(const char *const *attrs, size_t n_attrs,
				    const char *const *rows, size_t n_rows)
{
	struct pm_error err = {0};
	struct dataset *ds = NULL;
	struct dataset_builder *b = dataset_builder_create("hand", attrs, n_attrs, "sa", &err);
	for (size_t i = 0; b && i < n_rows; i++) {
		const char *const *row = rows + i * (n_attrs + 2);
		CHECK(dataset_builder_add_record(b, row, row[n_attrs], row[n_attrs + 1], &err) ==
		      PM_OK);
	}
	CHECK(b && dataset_builder_finish(b, &ds, &err) == PM_OK);
	dataset_builder_destroy(b);
	return ds;
}

PSEUDONYMS_FN uint32_t sa_code(const struct dataset *ds, const char *s)
{
	long c = dict_find(&ds->sa_values, s);
	CHECK(c >= 0);
	return (uint32_t)c;
}

/* The record whose tuple has first attribute value v (the first such). */
PSEUDONYMS_FN size_t record_of(const struct dataset *ds, const char *v)
{
	for (size_t j = 0; j < ds->n_records; j++)
		if (strcmp(dataset_tuple_value(ds, ds->rec_tuple[j], 0), v) == 0)
			return j;
	CHECK(0);
	return 0;
}

PSEUDONYMS_FN double post_at(const struct dataset *ds, const struct pseudo *p, const char *v,
			     const char *s)
{
	return p->post[(size_t)ds->rec_tuple[record_of(ds, v)] * p->n_s + sa_code(ds, s)];
}

PSEUDONYMS_FN uint64_t bit(const struct dataset *ds, const char *s)
{
	return UINT64_C(1) << sa_code(ds, s);
}

/* ---- random instances ---------------------------------------------------- */

struct inst {
	struct dataset *ds;
	struct knowledge k;
	uint32_t truth[MAX_PEOPLE];
	uint8_t *used;
	int wild; /* the knowledge may be false of the records */
};

PSEUDONYMS_FN int inst_make(struct inst *in, uint64_t *rng, const struct mix *m)
{
	memset(in, 0, sizeof(*in));
	knowledge_init(&in->k);
	in->ds = small_table(rng);
	in->used = in->ds ? calloc(in->ds->n_records + 1, 1) : NULL;
	CHECK(in->ds != NULL && in->used != NULL);
	if (!in->ds || !in->used)
		return 0;
	in->wild = random_knowledge(in->ds, rng, m, &in->k, in->truth, in->used);
	return 1;
}

PSEUDONYMS_FN void inst_free(struct inst *in)
{
	knowledge_finish(&in->k);
	dataset_destroy(in->ds);
	free(in->used);
}

#endif
