/*
 * The fully pseudonymized reference (pseudonyms.h) for the knowledge
 * language without person terms, and solver_run against it.
 *
 *  - a hand-solved case of relational statements;
 *  - rules only: on random small tables with box, one-sided, equality and
 *    random (often infeasible) rules, the reference agrees with
 *    tests/reference.h (the aggregated model, another method) and with
 *    solver_run: posterior to 1e-8, each rule's achieved value,
 *    PM_ERR_INCONSISTENT exactly where the reference finds no solution;
 *  - the reduction (SPEC 3.1): without person terms the pseudonym model
 *    has the answers of section 1: its posterior (with named people who
 *    have no terms, and with distribution statements) equals the
 *    aggregated model's (the reference's own aggregated mode, and
 *    solver_run without the people);
 *  - special cases: min = max = c is probability c; a box holding the
 *    no-knowledge answer changes nothing.
 * Named people and person statements are in test_pseudonyms_people.c,
 * what both build and compare in pseudonyms_instances.h.
 * PMAXENT_PSEUDONYMS_SEED=S runs seed S alone in every randomized part.
 */
#include <time.h>

#include "check.h"
#include "pseudonyms.h"
#include "pseudonyms_instances.h"
#include "random_table.h"
#include "reference.h"
#include "solver.h"

#define N_RULES	    300
#define N_REDUCTION 200
#define N_SPECIAL   40

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

/* ---- hand-solved cases --------------------------------------------------- */

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

int main(void)
{
	test_relational_by_hand();
	test_rules_only();
	test_reduction();
	test_min_max_is_value();
	test_box_keeps_answer();
	return check_done();
}
