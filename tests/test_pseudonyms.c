/*
 * The fully pseudonymized reference (pseudonyms.h) for the whole knowledge
 * language, and solver_run against it.
 *
 *  - hand-solved cases of the reference itself;
 *  - rules only (runs now): on random small tables with box, one-sided,
 *    equality and random (often infeasible) rules, the reference agrees
 *    with tests/reference.h (the aggregated model, another method) and
 *    with solver_run: posterior to 1e-8, each rule's achieved value,
 *    PM_ERR_INCONSISTENT exactly where the reference finds no solution;
 *  - the reduction (SPEC 3.1): without person terms the pseudonym model
 *    has the answers of section 1: its posterior (with named people who
 *    have no terms, and with distribution statements) equals the
 *    aggregated model's (the reference's own aggregated mode, and
 *    solver_run without the people);
 *  - special cases: min = max = c is probability c; a box holding the
 *    no-knowledge answer changes nothing; people without statements
 *    change nothing;
 *  - the full mix: rules, relational statements, named people with and
 *    without groups, person statements, "k of these people" counts,
 *    infeasible knowledge; the reference in both modes always, and
 *    solver_run against it (posterior, people, statements, exit 3).
 * Everything the solver does not do yet (statements, people) runs only
 * with PMAXENT_TEST_LIFTED=1. PMAXENT_PSEUDONYMS_SEED=S runs seed S alone
 * in every randomized part.
 */
#include <inttypes.h>
#include <time.h>

#include "check.h"
#include "pseudonyms.h"
#include "random_table.h"
#include "reference.h"
#include "solver.h"

#define AGREE	    1e-8
#define N_RULES	    300
#define N_REDUCTION 200
#define N_SPECIAL   40
#define N_MIX	    400
#define SEED	    UINT64_C(20080610)
#define SOLVER_TOL  1e-10
#define NO_TRUTH    UINT32_MAX

/* ---- building knowledge by hand ---------------------------------------- */

static void add_rule(struct knowledge *k, const struct rule *r)
{
	struct pm_error err = {0};
	CHECK(knowledge_append(k, r, &err) == PM_OK);
}

/* Person on record j's tuple, in its bucket when with_group. */
static long add_person(struct knowledge *k, const struct dataset *ds, size_t j, int with_group)
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
static struct statement *add_statement(struct knowledge *k, size_t n, double lo, double hi,
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
static uint64_t count_cond(const struct dataset *ds, const struct rule *cond, uint64_t set,
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
static void set_dist_term(const struct dataset *ds, struct statement_term *t,
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

static void set_person_term(const struct dataset *ds, struct statement_term *t, long person,
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

/* k seen without its people (when no statement names one) or also
 * without its statements: a shallow copy, never to be finished. */
static struct knowledge view(const struct knowledge *k, int people, int statements)
{
	struct knowledge v = *k;
	if (!people)
		v.n_people = v.people_cap = 0, v.people = NULL;
	if (!statements)
		v.n_statements = v.statements_cap = 0, v.statements = NULL;
	return v;
}

/* ---- the solver side ----------------------------------------------------- */

/* invariants_build (rules only) and solver_run into r; the status. */
static enum pm_status run_solver(const struct dataset *ds, const struct knowledge *k,
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

static void note(double *worst, double v)
{
	if (!(v <= *worst)) /* NaN sticks */
		*worst = v;
}

/* The solver's posterior made dense: [q n_s + s]. */
static double *dense_posterior(const struct dataset *ds, const struct solver_result *r)
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

static double posterior_diff(const struct dataset *ds, const double *a, const double *b)
{
	double d = 0.0;
	for (size_t c = 0; c < ds->n_tuples * ds->sa_values.n; c++)
		note(&d, fabs(a[c] - b[c]));
	return d;
}

/* Everything solver_run reports against the reference p (feasible);
 * people and statements of k checked when present. Returns the largest
 * difference. */
static double compare_solver(const struct dataset *ds, const struct knowledge *k,
			     const struct pseudo *p, const struct solver_result *r, struct worst *w)
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
static double check_solver(const struct dataset *ds, const struct knowledge *k,
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
static enum pseudo_status ref_solve(const struct dataset *ds, const struct knowledge *k,
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
static double answer_diff(const struct pseudo *a, const struct pseudo *b, size_t n_people)
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
static void compare_modes(const struct pseudo *a, enum pseudo_status sa, const struct pseudo *b,
			  enum pseudo_status sb, struct worst *w)
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
static struct dataset *small_table(uint64_t *rng)
{
	static const struct random_shape shape = {
	    .attrs = {2, 3}, .values = {2, 3}, .sa = {2, 4}, .records = {6, 25}, .bucket = {2, 5}};
	return random_dataset_shaped(rng, &shape);
}

/* An antecedent from a random record's tuple: each attribute with
 * probability 1/2, at least one unless allow_empty (then empty 1 in 4). */
static struct rule random_cond(const struct dataset *ds, uint64_t *rng, int allow_empty)
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
static uint64_t random_set(const struct dataset *ds, uint64_t *rng, size_t max, uint32_t must,
			   int with_must)
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
static void random_bounds(uint64_t *rng, double v, int rule, int wild, double *lo, double *hi,
			  int *eq)
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
static void random_rule(const struct dataset *ds, uint64_t *rng, struct knowledge *k, int wild)
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
static void random_dist_statement(const struct dataset *ds, uint64_t *rng, struct knowledge *k,
				  const uint32_t *truth, int with_persons, int wild)
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
static void random_person_statement(const struct dataset *ds, uint64_t *rng, struct knowledge *k,
				    const uint32_t *truth, int wild)
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
static int random_knowledge(const struct dataset *ds, uint64_t *rng, const struct mix *m,
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

static int has_person_terms(const struct knowledge *k)
{
	for (size_t i = 0; i < k->n_statements; i++)
		for (size_t t = 0; t < k->statements[i].n_terms; t++)
			if (k->statements[i].terms[t].person >= 0)
				return 1;
	return 0;
}

/* The seeds of a randomized part: n of them from base, or the one in
 * PMAXENT_PSEUDONYMS_SEED. */
static size_t seeds(uint64_t base, size_t n, uint64_t *out, size_t cap)
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

/* The instance, on stderr, when one seed runs alone. */
static void dump(const struct dataset *ds, const struct knowledge *k)
{
	const char *only = getenv("PMAXENT_PSEUDONYMS_SEED");
	if (!only || !*only)
		return;
	fprintf(stderr, "records (tuple group sa):\n");
	for (size_t j = 0; j < ds->n_records; j++) {
		fprintf(stderr, "  %zu: q%u (", j, ds->rec_tuple[j]);
		for (size_t a = 0; a < ds->n_attrs; a++)
			fprintf(stderr, "%s%s", a ? " " : "",
				dataset_tuple_value(ds, ds->rec_tuple[j], a));
		fprintf(stderr, ") b%u s%u (%s)\n", ds->rec_group[j], ds->rec_sa[j],
			ds->sa_values.str[ds->rec_sa[j]]);
	}
	for (size_t i = 0; k && i < k->n; i++) {
		char buf[512];
		knowledge_describe(ds, &k->rules[i], buf, sizeof(buf));
		fprintf(stderr, "rule %zu: %s in [%.17g, %.17g]\n", i, buf, k->rules[i].lo,
			k->rules[i].hi);
	}
	for (size_t i = 0; k && i < k->n_people; i++)
		fprintf(stderr, "person %zu: q%u group %ld\n", i, k->people[i].tuple,
			k->people[i].group);
	for (size_t i = 0; k && i < k->n_statements; i++) {
		const struct statement *st = &k->statements[i];
		fprintf(stderr, "statement %zu: %.17g <= ", i, st->lo);
		for (size_t t = 0; t < st->n_terms; t++) {
			const struct statement_term *term = &st->terms[t];
			fprintf(stderr, "%s%g P(", t ? " + " : "", term->coef);
			if (term->person >= 0)
				fprintf(stderr, "person %ld", term->person);
			for (size_t c = 0; term->person < 0 && c < term->cond.n_terms; c++)
				fprintf(
				    stderr, "%sa%u=%s", c ? "," : "", term->cond.attr[c],
				    ds->attr_values[term->cond.attr[c]].str[term->cond.value[c]]);
			fprintf(stderr, " in {");
			for (size_t v = 0; v < term->n_then; v++)
				fprintf(stderr, "%ss%u", v ? "," : "", term->then[v]);
			fprintf(stderr, "})");
		}
		fprintf(stderr, " <= %.17g%s\n", st->hi, st->equality ? " (value)" : "");
	}
}

static void report_seed(const char *part, uint64_t seed, int failed_before, double diff)
{
	if (check_failed > failed_before)
		fprintf(stderr,
			"  ^ %s: instance seed %" PRIu64 ", largest difference %.3g (rerun alone "
			"with PMAXENT_PSEUDONYMS_SEED=%" PRIu64 ")\n",
			part, seed, diff, seed);
}

/* ---- hand-solved cases --------------------------------------------------- */

static struct dataset *build(const char *const *attrs, size_t n_attrs, const char *const *rows,
			     size_t n_rows)
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

static uint32_t sa_code(const struct dataset *ds, const char *s)
{
	long c = dict_find(&ds->sa_values, s);
	CHECK(c >= 0);
	return (uint32_t)c;
}

/* The record whose tuple has first attribute value v (the first such). */
static size_t record_of(const struct dataset *ds, const char *v)
{
	for (size_t j = 0; j < ds->n_records; j++)
		if (strcmp(dataset_tuple_value(ds, ds->rec_tuple[j], 0), v) == 0)
			return j;
	CHECK(0);
	return 0;
}

static double post_at(const struct dataset *ds, const struct pseudo *p, const char *v,
		      const char *s)
{
	return p->post[(size_t)ds->rec_tuple[record_of(ds, v)] * p->n_s + sa_code(ds, s)];
}

static uint64_t bit(const struct dataset *ds, const char *s)
{
	return UINT64_C(1) << sa_code(ds, s);
}

/*
 * One bucket {a: A, b: B}, alice = a: "alice does not have A" leaves one
 * assignment. Two of "alice does not have A" and "... B": none. Then one
 * tuple in two buckets, {a: A} and {a: B, b: C}, alice = a in bucket 2:
 * without statements nothing changes (P(A|a) = 1/2, B, C 1/4) and alice is
 * B or C by halves; "alice has B" makes a B in bucket 2, b C.
 */
static void test_people_by_hand(void)
{
	static const char *const attrs[] = {"t"};
	static const char *const one[] = {"a", "1", "A", "b", "1", "B"};
	static const char *const two[] = {"a", "1", "A", "a", "2", "B", "b", "2", "C"};
	struct dataset *ds = build(attrs, 1, one, 2);
	struct knowledge k;
	struct pseudo p;
	struct statement *st;
	if (!ds)
		return;
	knowledge_init(&k);
	add_person(&k, ds, record_of(ds, "a"), 0);
	st = add_statement(&k, 1, 0, 0, 1);
	set_person_term(ds, &st->terms[0], 0, bit(ds, "A"), 1.0);
	for (int mode = 0; mode < 2; mode++) {
		CHECK(pseudo_solve(ds, &k, (enum pseudo_mode)mode, &p) == PSEUDO_OK);
		CHECK_NEAR(post_at(ds, &p, "a", "B"), 1.0, 1e-12);
		CHECK_NEAR(post_at(ds, &p, "b", "A"), 1.0, 1e-12);
		CHECK_NEAR(p.person_p[sa_code(ds, "B")], 1.0, 1e-12);
		CHECK_NEAR(p.st_achieved[0], 0.0, 0.0);
		pseudo_free(&p);
	}
	st = add_statement(&k, 1, 0, 0, 1);
	set_person_term(ds, &st->terms[0], 0, bit(ds, "B"), 1.0);
	CHECK(pseudo_solve(ds, &k, PSEUDO_RECORDS, &p) == PSEUDO_INFEASIBLE);
	pseudo_free(&p);
	knowledge_finish(&k);
	dataset_destroy(ds);

	ds = build(attrs, 1, two, 3);
	if (!ds)
		return;
	knowledge_init(&k);
	add_person(&k, ds, 1, 1); /* a, bucket 2 */
	for (int mode = 0; mode < 2; mode++) {
		CHECK(pseudo_solve(ds, &k, (enum pseudo_mode)mode, &p) == PSEUDO_OK);
		CHECK_NEAR(post_at(ds, &p, "a", "A"), 0.5, 1e-11);
		CHECK_NEAR(post_at(ds, &p, "a", "B"), 0.25, 1e-11);
		CHECK_NEAR(post_at(ds, &p, "b", "C"), 0.5, 1e-11);
		CHECK_NEAR(p.person_p[sa_code(ds, "B")], 0.5, 1e-11);
		CHECK_NEAR(p.person_p[sa_code(ds, "C")], 0.5, 1e-11);
		CHECK_NEAR(p.person_p[sa_code(ds, "A")], 0.0, 0.0);
		CHECK_NEAR(p.person_b[ds->rec_group[1]], 1.0, 1e-11);
		pseudo_free(&p);
	}
	st = add_statement(&k, 1, 1, 1, 1);
	set_person_term(ds, &st->terms[0], 0, bit(ds, "B"), 1.0);
	CHECK(pseudo_solve(ds, &k, PSEUDO_RECORDS, &p) == PSEUDO_OK);
	CHECK_NEAR(post_at(ds, &p, "a", "A"), 0.5, 1e-11);
	CHECK_NEAR(post_at(ds, &p, "a", "B"), 0.5, 1e-11);
	CHECK_NEAR(post_at(ds, &p, "b", "C"), 1.0, 1e-11);
	CHECK_NEAR(p.person_p[sa_code(ds, "B")], 1.0, 1e-11);
	CHECK(p.n_forced > 0);
	pseudo_free(&p);
	knowledge_finish(&k);
	dataset_destroy(ds);
}

/*
 * One bucket {a: A, b: A, c: B}, people a, b, c. "At least 2 of a, b, c
 * have A" always holds: nothing changes (each 2/3 A). "At most 1 of a, b
 * has A" leaves c with A and one of a, b with B: a, b half A, half B.
 * "At least 3 of them have A": no assignment.
 */
static void test_counts_by_hand(void)
{
	static const char *const attrs[] = {"t"};
	static const char *const rows[] = {"a", "1", "A", "b", "1", "A", "c", "1", "B"};
	struct dataset *ds = build(attrs, 1, rows, 3);
	struct knowledge k;
	struct pseudo p;
	struct statement *st;
	uint32_t A;
	if (!ds)
		return;
	A = sa_code(ds, "A");
	knowledge_init(&k);
	for (size_t j = 0; j < 3; j++)
		add_person(&k, ds, j, 0);
	st = add_statement(&k, 3, 2, INFINITY, 0);
	for (size_t t = 0; t < 3; t++)
		set_person_term(ds, &st->terms[t], (long)t, UINT64_C(1) << A, 1.0);
	CHECK(pseudo_solve(ds, &k, PSEUDO_RECORDS, &p) == PSEUDO_OK);
	for (size_t i = 0; i < 3; i++)
		CHECK_NEAR(p.person_p[i * p.n_s + A], 2.0 / 3, 1e-11);
	CHECK_NEAR(p.st_achieved[0], 2.0, 1e-11);
	pseudo_free(&p);
	st = add_statement(&k, 2, -INFINITY, 1, 0);
	for (size_t t = 0; t < 2; t++)
		set_person_term(ds, &st->terms[t], (long)t, UINT64_C(1) << A, 1.0);
	CHECK(pseudo_solve(ds, &k, PSEUDO_RECORDS, &p) == PSEUDO_OK);
	CHECK_NEAR(p.person_p[0 * p.n_s + A], 0.5, 1e-11);
	CHECK_NEAR(p.person_p[1 * p.n_s + A], 0.5, 1e-11);
	CHECK_NEAR(p.person_p[2 * p.n_s + A], 1.0, 1e-11);
	CHECK_NEAR(post_at(ds, &p, "c", "A"), 1.0, 1e-11);
	pseudo_free(&p);
	k.statements[0].lo = 3;
	CHECK(pseudo_solve(ds, &k, PSEUDO_RECORDS, &p) == PSEUDO_INFEASIBLE);
	pseudo_free(&p);
	knowledge_finish(&k);
	dataset_destroy(ds);
}

/*
 * Two mirrored buckets {F: A, M: B}, {F: B, M: A}. P(A|F) + P(A|M) = 1
 * (two A among four), so "P(A|F) - P(A|M) = -1/2" is P(A|F) = 1/4, the
 * rule of test_reference's fractional case, and by the buckets' symmetry
 * 1/4 in each; "P(A|F) - P(A|M) >= 1" leaves P(A|F) = 1, P(A|M) = 0;
 * "P(A | anyone) = 0.75" contradicts the counts (1/2).
 */
static void test_relational_by_hand(void)
{
	static const char *const attrs[] = {"sex"};
	static const char *const rows[] = {"F", "1", "A", "M", "1", "B",
					   "F", "2", "B", "M", "2", "A"};
	struct dataset *ds = build(attrs, 1, rows, 4);
	struct knowledge k, kr;
	struct pseudo p, pr;
	struct statement *st;
	struct rule f, m, any;
	if (!ds)
		return;
	memset(&f, 0, sizeof(f));
	f.n_terms = 1;
	f.value[0] = (uint32_t)dict_find(&ds->attr_values[0], "F");
	m = f;
	m.value[0] = (uint32_t)dict_find(&ds->attr_values[0], "M");
	memset(&any, 0, sizeof(any));
	knowledge_init(&k);
	st = add_statement(&k, 2, -0.5, -0.5, 1);
	set_dist_term(ds, &st->terms[0], &f, bit(ds, "A"), 1.0);
	set_dist_term(ds, &st->terms[1], &m, bit(ds, "A"), -1.0);
	CHECK(pseudo_solve(ds, &k, PSEUDO_RECORDS, &p) == PSEUDO_OK);
	CHECK_NEAR(post_at(ds, &p, "F", "A"), 0.25, 1e-11);
	CHECK_NEAR(post_at(ds, &p, "M", "A"), 0.75, 1e-11);
	CHECK_NEAR(p.st_achieved[0], -0.5, 1e-11);
	/* the same as the rule P(A|F) = 1/4, in both references */
	knowledge_init(&kr);
	f.sa = sa_code(ds, "A");
	f.lo = f.hi = 0.25;
	f.n_qv = 2;
	add_rule(&kr, &f);
	CHECK(pseudo_solve(ds, &kr, PSEUDO_RECORDS, &pr) == PSEUDO_OK);
	{
		double ref[2 * 2];
		CHECK(reference_solve(ds, &kr, ref, NULL) == REFERENCE_OK);
		for (size_t c = 0; c < 4; c++) {
			CHECK_NEAR(p.post[c], pr.post[c], 1e-11);
			CHECK_NEAR(ref[c], pr.post[c], 1e-10);
		}
	}
	pseudo_free(&pr);
	knowledge_finish(&kr);
	pseudo_free(&p);
	k.statements[0].lo = 1.0, k.statements[0].hi = INFINITY, k.statements[0].equality = 0;
	CHECK(pseudo_solve(ds, &k, PSEUDO_RECORDS, &p) == PSEUDO_OK);
	CHECK_NEAR(post_at(ds, &p, "F", "A"), 1.0, 1e-11);
	CHECK_NEAR(post_at(ds, &p, "M", "B"), 1.0, 1e-11);
	CHECK_NEAR(p.st_achieved[0], 1.0, 1e-11);
	CHECK(p.n_forced == 8); /* (F, B) and (M, A) of each pseudonym, each bucket */
	pseudo_free(&p);
	st = add_statement(&k, 1, 0.75, 0.75, 1);
	set_dist_term(ds, &st->terms[0], &any, bit(ds, "A"), 1.0);
	CHECK(pseudo_solve(ds, &k, PSEUDO_RECORDS, &p) == PSEUDO_INFEASIBLE);
	pseudo_free(&p);
	knowledge_finish(&k);
	dataset_destroy(ds);
}

/* ---- rules only: against reference.h and solver_run --------------------- */

/* reference_solve without its message on an inconsistent system. */
static enum reference_status reference_quiet(const struct dataset *ds, const struct knowledge *k,
					     double *post)
{
	struct reference_system sys;
	enum reference_status st = reference_build(ds, k, &sys);
	if (st == REFERENCE_OK)
		st = reference_forced_zeros(&sys);
	if (st == REFERENCE_OK)
		st = reference_scale(&sys);
	if (st == REFERENCE_OK)
		reference_posterior(&sys, post);
	else if (st != REFERENCE_INCONSISTENT)
		fprintf(stderr, "  reference.h: %s (status %d)\n", sys.message, (int)st);
	reference_free(&sys);
	return st;
}

static void test_rules_only(void)
{
	static uint64_t list[N_RULES];
	static const struct mix m = {.rules = 4};
	size_t n = seeds(SEED * 1000003, N_RULES, list, N_RULES);
	struct worst w;
	clock_t t0 = clock();
	memset(&w, 0, sizeof(w));
	for (size_t i = 0; i < n; i++) {
		uint64_t rng = list[i];
		int failed = check_failed;
		struct dataset *ds = small_table(&rng);
		struct knowledge k;
		struct pseudo p, pa;
		uint32_t truth[MAX_PEOPLE];
		uint8_t *used = calloc(ds ? ds->n_records + 1 : 1, 1);
		double *ref, diff = 0.0;
		enum pseudo_status st, sa;
		enum reference_status rs;
		int wild;
		CHECK(ds != NULL && used != NULL);
		if (!ds || !used) {
			free(used);
			dataset_destroy(ds);
			continue;
		}
		wild = random_knowledge(ds, &rng, &m, &k, truth, used);
		ref = calloc(ds->n_tuples * ds->sa_values.n + 1, sizeof(*ref));
		st = ref_solve(ds, &k, PSEUDO_RECORDS, &p, &w);
		sa = ref_solve(ds, &k, PSEUDO_AGGREGATED, &pa, &w);
		compare_modes(&p, st, &pa, sa, &w);
		CHECK(wild || st == PSEUDO_OK); /* the records satisfy it */
		rs = reference_quiet(ds, &k, ref);
		CHECK((st == PSEUDO_INFEASIBLE) == (rs == REFERENCE_INCONSISTENT));
		if (st == PSEUDO_OK && rs == REFERENCE_OK) {
			double d = posterior_diff(ds, ref, p.post);
			CHECK_NEAR(d, 0.0, AGREE);
			note(&w.ref_h, d);
			note(&diff, d);
		}
		note(&diff, check_solver(ds, &k, st, &p, &w));
		w.instances++;
		w.infeasible += st == PSEUDO_INFEASIBLE;
		report_seed("rules only", list[i], failed, diff);
		pseudo_free(&p);
		pseudo_free(&pa);
		free(ref);
		free(used);
		knowledge_finish(&k);
		dataset_destroy(ds);
	}
	printf("rules only: %zu instances (%zu infeasible), %zu forced zeros, max %ld sweeps, "
	       "%.2f s\n",
	       w.instances, w.infeasible, w.forced, w.sweeps,
	       (double)(clock() - t0) / CLOCKS_PER_SEC);
	printf("  worst |pseudonyms - reference.h| posterior %.3g; |solver - pseudonyms| "
	       "posterior %.3g, rules' achieved %.3g; |records - aggregated mode| %.3g\n",
	       w.ref_h, w.post, w.rule, w.modes);
}

/* ---- random instances ---------------------------------------------------- */

struct inst {
	struct dataset *ds;
	struct knowledge k;
	uint32_t truth[MAX_PEOPLE];
	uint8_t *used;
	int wild; /* the knowledge may be false of the records */
};

static int inst_make(struct inst *in, uint64_t *rng, const struct mix *m)
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

static void inst_free(struct inst *in)
{
	knowledge_finish(&in->k);
	dataset_destroy(in->ds);
	free(in->used);
}

/* P(S in set | cond) under the posterior of p. */
static double p_of(const struct dataset *ds, const struct pseudo *p, const struct rule *cond,
		   uint64_t set)
{
	double num = 0.0, den = 0.0;
	for (uint32_t q = 0; q < ds->n_tuples; q++) {
		if (!knowledge_matches(ds, cond, q))
			continue;
		den += p->nq[q];
		for (size_t s = 0; s < p->n_s; s++)
			if ((set >> s) & 1)
				num += p->nq[q] * p->post[(size_t)q * p->n_s + s];
	}
	return num / den;
}

/* ---- the reduction: without person terms, the answers of section 1 ------ */

/*
 * Rules, named people (with and without groups) that no statement names,
 * and on every other instance distribution statements: the pseudonym
 * model's posterior, rules and statements equal the aggregated model's
 * without the people (the reference's aggregated mode; tests/reference.h
 * without statements) and solver_run's without the people (statements:
 * only with PMAXENT_TEST_LIFTED=1, which also runs solver_run with the
 * people against the reference).
 */
static void test_reduction(void)
{
	static uint64_t list[N_REDUCTION];
	size_t n = seeds(SEED * 2000003, N_REDUCTION, list, N_REDUCTION), people = 0;
	struct worst w;
	double agg = 0.0;
	memset(&w, 0, sizeof(w));
	for (size_t i = 0; i < n; i++) {
		uint64_t rng = list[i];
		struct mix m = {.rules = 3, .people = 4, .statements = i % 2 ? 3 : 0};
		int failed = check_failed;
		struct inst in;
		struct pseudo p, pa;
		struct knowledge kn;
		enum pseudo_status st, sa;
		double diff = 0.0;
		if (!inst_make(&in, &rng, &m)) {
			inst_free(&in);
			continue;
		}
		kn = view(&in.k, 0, 1);
		people += in.k.n_people;
		st = ref_solve(in.ds, &in.k, PSEUDO_RECORDS, &p, &w);
		sa = ref_solve(in.ds, &kn, PSEUDO_AGGREGATED, &pa, &w);
		CHECK(st == sa);
		CHECK(in.wild || st == PSEUDO_OK);
		if (st == PSEUDO_OK && sa == PSEUDO_OK) {
			double d = answer_diff(&p, &pa, 0);
			CHECK_NEAR(d, 0.0, AGREE);
			note(&agg, d);
			note(&diff, d);
		}
		if (!kn.n_statements) {
			double *ref =
			    calloc(in.ds->n_tuples * in.ds->sa_values.n + 1, sizeof(*ref));
			enum reference_status rs = reference_quiet(in.ds, &kn, ref);
			CHECK((st == PSEUDO_INFEASIBLE) == (rs == REFERENCE_INCONSISTENT));
			if (st == PSEUDO_OK && rs == REFERENCE_OK) {
				double d = posterior_diff(in.ds, ref, p.post);
				CHECK_NEAR(d, 0.0, AGREE);
				note(&w.ref_h, d);
				note(&diff, d);
			}
			free(ref);
		}
		note(&diff, check_solver(in.ds, &kn, st, &p, &w));
		if (in.k.n_people) /* and with them: their answers too */
			note(&diff, check_solver(in.ds, &in.k, st, &p, &w));
		w.instances++;
		w.infeasible += st == PSEUDO_INFEASIBLE;
		w.statements += in.k.n_statements;
		report_seed("reduction", list[i], failed, diff);
		pseudo_free(&p);
		pseudo_free(&pa);
		inst_free(&in);
	}
	printf("reduction: %zu instances (%zu infeasible) with %zu named people and %zu "
	       "statements, none naming a person; %zu solver runs%s\n",
	       w.instances, w.infeasible, people, w.statements, w.solver_runs, "");
	printf("  worst |pseudonyms with people - aggregated without| %.3g, |pseudonyms - "
	       "reference.h| %.3g, |solver without people - pseudonyms| posterior %.3g, rules "
	       "%.3g, statements %.3g\n",
	       agg, w.ref_h, w.post, w.rule, w.st);
}

/* ---- special cases -------------------------------------------------------- */

/*
 * min = max = c is probability c: the rule P(s|Qv) = c, the statement
 * [P(s|Qv)] with min = max = c and with value c have one answer, c
 * between the no-knowledge value and the records' own (both feasible).
 */
static void test_min_max_is_value(void)
{
	static uint64_t list[N_SPECIAL];
	size_t n = seeds(SEED * 3000017, N_SPECIAL, list, N_SPECIAL);
	struct worst w;
	double same = 0.0;
	memset(&w, 0, sizeof(w));
	for (size_t i = 0; i < n; i++) {
		uint64_t rng = list[i], with;
		int failed = check_failed;
		struct dataset *ds = small_table(&rng);
		struct knowledge k[3];
		struct pseudo p0, p[3];
		struct rule r;
		double c, diff = 0.0, *ref;
		if (!ds)
			continue;
		ref = calloc(ds->n_tuples * ds->sa_values.n + 1, sizeof(*ref));
		CHECK(ref_solve(ds, NULL, PSEUDO_RECORDS, &p0, &w) == PSEUDO_OK);
		r = random_cond(ds, &rng, 0);
		r.sa = ds->rec_sa[rng_in(&rng, 0, ds->n_records - 1)];
		r.source = RULE_USER;
		r.n_qv = count_cond(ds, &r, UINT64_C(1) << r.sa, &with);
		c = 0.5 * (p_of(ds, &p0, &r, UINT64_C(1) << r.sa) + (double)with / (double)r.n_qv);
		r.lo = r.hi = c;
		for (int v = 0; v < 3; v++) {
			knowledge_init(&k[v]);
			if (v == 0) {
				add_rule(&k[v], &r);
			} else {
				struct statement *st = add_statement(&k[v], 1, c, c, v == 2);
				if (st)
					set_dist_term(ds, &st->terms[0], &r, UINT64_C(1) << r.sa,
						      1.0);
			}
			CHECK(ref_solve(ds, &k[v], PSEUDO_RECORDS, &p[v], &w) == PSEUDO_OK);
		}
		if (p[0].post && p[1].post && p[2].post) {
			note(&diff, posterior_diff(ds, p[0].post, p[1].post));
			note(&diff, posterior_diff(ds, p[0].post, p[2].post));
			note(&diff, fabs(p[0].rule_p[0] - c));
			note(&diff, fabs(p[1].st_achieved[0] - c));
			note(&diff, fabs(p[2].st_achieved[0] - c));
			CHECK_NEAR(diff, 0.0, AGREE);
			note(&same, diff);
			CHECK(reference_quiet(ds, &k[0], ref) == REFERENCE_OK);
			note(&w.ref_h, posterior_diff(ds, ref, p[0].post));
			CHECK_NEAR(posterior_diff(ds, ref, p[0].post), 0.0, AGREE);
		}
		note(&diff, check_solver(ds, &k[0], PSEUDO_OK, &p[0], &w));
		for (int v = 1; v < 3; v++)
			note(&diff, check_solver(ds, &k[v], PSEUDO_OK, &p[v], &w));
		report_seed("min = max", list[i], failed, diff);
		for (int v = 0; v < 3; v++) {
			pseudo_free(&p[v]);
			knowledge_finish(&k[v]);
		}
		pseudo_free(&p0);
		free(ref);
		dataset_destroy(ds);
	}
	printf("min = max = c: %zu instances; worst |rule - statement (min = max, value)| %.3g, "
	       "|pseudonyms - reference.h| %.3g, |solver - pseudonyms| %.3g\n",
	       n, same, w.ref_h, w.post);
}

/* A box about v: both sides (widths from {0, 0.01, 0.1, 0.3}), min only or
 * max only; within [0, 1] for a rule. */
static void box_about(uint64_t *rng, double v, int rule, double *lo, double *hi)
{
	static const double u[] = {0.0, 0.01, 0.1, 0.3};
	double u1 = u[rng_in(rng, 0, 3)], u2 = u[rng_in(rng, 0, 3)];
	size_t kind = rng_in(rng, 0, 2);
	*lo = kind == 2 ? (rule ? 0.0 : -INFINITY) : v - u1;
	*hi = kind == 1 ? (rule ? 1.0 : INFINITY) : v + u2;
	if (rule) {
		*lo = fmax(0.0, *lo);
		*hi = fmin(1.0, *hi);
	}
}

/* Boxes (rules and statements) that hold the no-knowledge answer change
 * nothing. */
static void test_box_keeps_answer(void)
{
	static const double coefs[] = {1, -1, 2, -0.5};
	static uint64_t list[N_SPECIAL];
	size_t n = seeds(SEED * 4000037, N_SPECIAL, list, N_SPECIAL);
	struct worst w;
	double keep = 0.0;
	memset(&w, 0, sizeof(w));
	for (size_t i = 0; i < n; i++) {
		uint64_t rng = list[i];
		int failed = check_failed;
		struct dataset *ds = small_table(&rng);
		struct knowledge k, kr;
		struct pseudo p0, p, pr;
		double diff = 0.0;
		if (!ds)
			continue;
		knowledge_init(&k);
		CHECK(ref_solve(ds, NULL, PSEUDO_RECORDS, &p0, &w) == PSEUDO_OK);
		for (size_t j = rng_in(&rng, 1, 3); j > 0; j--) {
			struct rule r = random_cond(ds, &rng, 0);
			uint64_t with;
			r.sa = (uint32_t)rng_in(&rng, 0, ds->sa_values.n - 1);
			r.source = RULE_USER;
			r.n_qv = count_cond(ds, &r, UINT64_C(1) << r.sa, &with);
			box_about(&rng, p_of(ds, &p0, &r, UINT64_C(1) << r.sa), 1, &r.lo, &r.hi);
			add_rule(&k, &r);
		}
		for (size_t j = rng_in(&rng, 1, 2); j > 0; j--) {
			size_t terms = rng_in(&rng, 1, 3);
			struct statement *st = add_statement(&k, terms, 0, 0, 0);
			double v = 0.0;
			for (size_t t = 0; st && t < terms; t++) {
				struct rule cond = random_cond(ds, &rng, 1);
				uint64_t set = random_set(ds, &rng, 3, NO_TRUTH, 0);
				double coef = coefs[rng_in(&rng, 0, 3)];
				set_dist_term(ds, &st->terms[t], &cond, set, coef);
				v += coef * p_of(ds, &p0, &cond, set);
			}
			if (st)
				box_about(&rng, v, 0, &st->lo, &st->hi);
		}
		kr = view(&k, 0, 0);
		CHECK(ref_solve(ds, &kr, PSEUDO_RECORDS, &pr, &w) == PSEUDO_OK);
		CHECK(ref_solve(ds, &k, PSEUDO_RECORDS, &p, &w) == PSEUDO_OK);
		if (pr.post && p.post) {
			note(&diff, posterior_diff(ds, p0.post, pr.post));
			note(&diff, posterior_diff(ds, p0.post, p.post));
			CHECK_NEAR(diff, 0.0, AGREE);
			note(&keep, diff);
		}
		note(&diff, check_solver(ds, &kr, PSEUDO_OK, &pr, &w));
		note(&diff, check_solver(ds, &k, PSEUDO_OK, &p, &w));
		report_seed("box", list[i], failed, diff);
		pseudo_free(&p0);
		pseudo_free(&p);
		pseudo_free(&pr);
		knowledge_finish(&k);
		dataset_destroy(ds);
	}
	printf("boxes holding the no-knowledge answer: %zu instances; worst change %.3g, "
	       "|solver - pseudonyms| %.3g\n",
	       n, keep, w.post);
}

/*
 * People no statement names, added without a group to any knowledge
 * (statements about other people included), change nothing: posterior,
 * rules, statements, the other people's answers, the verdict. (With a
 * group they may change the other people's buckets, and the verdict:
 * test_grouped_person_by_hand. Without person terms anywhere they change
 * no posterior, grouped or not: test_reduction.)
 */
static void test_people_change_nothing(void)
{
	static uint64_t list[N_SPECIAL];
	static const struct mix m = {.rules = 2, .people = 3, .statements = 3, .person_terms = 1};
	size_t n = seeds(SEED * 5000011, N_SPECIAL, list, N_SPECIAL), added = 0;
	struct worst w;
	double same = 0.0;
	memset(&w, 0, sizeof(w));
	for (size_t i = 0; i < n; i++) {
		uint64_t rng = list[i];
		int failed = check_failed;
		struct inst in;
		struct pseudo p1, p2;
		enum pseudo_status s1, s2;
		size_t n1;
		double diff = 0.0;
		if (!inst_make(&in, &rng, &m)) {
			inst_free(&in);
			continue;
		}
		n1 = in.k.n_people;
		s1 = ref_solve(in.ds, &in.k, PSEUDO_RECORDS, &p1, &w);
		for (size_t j = rng_in(&rng, 1, 2); j > 0 && in.k.n_people < in.ds->n_records;
		     j--) {
			size_t r;
			do
				r = rng_in(&rng, 0, in.ds->n_records - 1);
			while (in.used[r]);
			in.used[r] = 1;
			add_person(&in.k, in.ds, r, 0);
			added++;
		}
		s2 = ref_solve(in.ds, &in.k, PSEUDO_AGGREGATED, &p2, &w);
		CHECK(s1 == s2);
		if (s1 == PSEUDO_OK && s2 == PSEUDO_OK) {
			diff = answer_diff(&p1, &p2, n1);
			CHECK_NEAR(diff, 0.0, AGREE);
			note(&same, diff);
		}
		note(&diff, check_solver(in.ds, &in.k, s2, &p2, &w));
		w.infeasible += s1 == PSEUDO_INFEASIBLE;
		report_seed("people without statements", list[i], failed, diff);
		pseudo_free(&p1);
		pseudo_free(&p2);
		inst_free(&in);
	}
	printf("people without statements: %zu instances (%zu infeasible), %zu people added; "
	       "worst change %.3g%s\n",
	       n, w.infeasible, added, same, "");
}

/*
 * Tuple a in two buckets, {a: A, x: B} and {a: C, y: D}; alice is an a
 * with no group: in either bucket by halves. Bob, an a in bucket 1 with
 * no statement, leaves alice bucket 2 alone (C or D by halves); the
 * posterior stays a quarter each for a. With "alice has A" besides, bob
 * makes the knowledge infeasible.
 */
static void test_grouped_person_by_hand(void)
{
	static const char *const attrs[] = {"t"};
	static const char *const rows[] = {"a", "1", "A", "x", "1", "B",
					   "a", "2", "C", "y", "2", "D"};
	struct dataset *ds = build(attrs, 1, rows, 4);
	struct knowledge k;
	struct pseudo p;
	struct statement *st;
	if (!ds)
		return;
	knowledge_init(&k);
	add_person(&k, ds, 0, 0);
	CHECK(pseudo_solve(ds, &k, PSEUDO_RECORDS, &p) == PSEUDO_OK);
	CHECK_NEAR(p.person_b[ds->rec_group[0]], 0.5, 1e-11);
	CHECK_NEAR(p.person_p[sa_code(ds, "A")], 0.25, 1e-11);
	pseudo_free(&p);
	add_person(&k, ds, 0, 1); /* bob: an a in bucket 1 */
	for (int mode = 0; mode < 2; mode++) {
		CHECK(pseudo_solve(ds, &k, (enum pseudo_mode)mode, &p) == PSEUDO_OK);
		CHECK_NEAR(p.person_b[ds->rec_group[2]], 1.0, 1e-11);
		CHECK_NEAR(p.person_p[sa_code(ds, "C")], 0.5, 1e-11);
		CHECK_NEAR(p.person_p[p.n_s + sa_code(ds, "A")], 0.5, 1e-11);
		for (const char *const *s = (const char *const[]){"A", "B", "C", "D", NULL}; *s;
		     s++)
			CHECK_NEAR(post_at(ds, &p, "a", *s), 0.25, 1e-11);
		pseudo_free(&p);
	}
	st = add_statement(&k, 1, 1, 1, 1);
	set_person_term(ds, &st->terms[0], 0, bit(ds, "A"), 1.0);
	CHECK(pseudo_solve(ds, &k, PSEUDO_RECORDS, &p) == PSEUDO_INFEASIBLE);
	pseudo_free(&p);
	knowledge_finish(&k);
	dataset_destroy(ds);
}

/* ---- the full mix ----------------------------------------------------------- */

static void test_full_mix(void)
{
	static uint64_t list[N_MIX];
	static const struct mix m = {.rules = 3, .people = 4, .statements = 4, .person_terms = 1};
	size_t n = seeds(SEED * 6000011, N_MIX, list, N_MIX), binding = 0, compared = 0;
	struct worst w;
	clock_t t0 = clock();
	memset(&w, 0, sizeof(w));
	for (size_t i = 0; i < n; i++) {
		uint64_t rng = list[i];
		int failed = check_failed;
		struct inst in;
		struct pseudo p, pa;
		enum pseudo_status st, sa;
		double diff = 0.0;
		if (!inst_make(&in, &rng, &m)) {
			inst_free(&in);
			continue;
		}
		dump(in.ds, &in.k);
		st = ref_solve(in.ds, &in.k, PSEUDO_RECORDS, &p, &w);
		sa = ref_solve(in.ds, &in.k, PSEUDO_AGGREGATED, &pa, &w);
		compare_modes(&p, st, &pa, sa, &w);
		CHECK(in.wild || st == PSEUDO_OK); /* the records satisfy it */
		w.instances++;
		w.infeasible += st == PSEUDO_INFEASIBLE;
		w.statements += in.k.n_statements;
		w.people += in.k.n_people;
		w.person_terms += has_person_terms(&in.k);
		for (size_t r = p.st_row0; st == PSEUDO_OK && r < p.n_rows; r++)
			binding += p.lo[r] < p.hi[r] && p.z[r] != 0.0;
		{
			note(&diff, check_solver(in.ds, &in.k, st, &p, &w));
			compared++;
		}
		report_seed("full mix", list[i], failed, fmax(diff, w.modes));
		pseudo_free(&p);
		pseudo_free(&pa);
		inst_free(&in);
	}
	printf("full mix: %zu instances (%zu infeasible), %zu statements (%zu binding "
	       "intervals), %zu people, %zu instances with person terms, %zu forced zeros, "
	       "max %ld sweeps, %.2f s\n",
	       w.instances, w.infeasible, w.statements, binding, w.people, w.person_terms, w.forced,
	       w.sweeps, (double)(clock() - t0) / CLOCKS_PER_SEC);
	printf("  worst |records - aggregated mode| %.3g; against solver_run (%zu instances%s): "
	       "posterior %.3g, people P(s) %.3g, buckets %.3g, statements %.3g, rules %.3g\n",
	       w.modes, compared, "", w.post, w.person_p, w.person_b, w.st, w.rule);
}

int main(void)
{
	test_people_by_hand();
	test_counts_by_hand();
	test_relational_by_hand();
	test_grouped_person_by_hand();
	test_rules_only();
	test_reduction();
	test_min_max_is_value();
	test_box_keeps_answer();
	test_people_change_nothing();
	test_full_mix();
	return check_done();
}
