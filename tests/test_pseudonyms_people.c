/*
 * The fully pseudonymized reference (pseudonyms.h) with named people, and
 * solver_run against it.
 *
 *  - hand-solved cases of the reference itself: a person's statements,
 *    "k of these people" counts, a person with and without a group;
 *  - people without statements change nothing;
 *  - the full mix: rules, relational statements, named people with and
 *    without groups, person statements, "k of these people" counts,
 *    infeasible knowledge; the reference in both modes always, and
 *    solver_run against it (posterior, people, statements, exit 3).
 * Knowledge without person terms is in test_pseudonyms.c, what both
 * build and compare in pseudonyms_instances.h.
 * PMAXENT_PSEUDONYMS_SEED=S runs seed S alone in every randomized part.
 */
#include <time.h>

#include "check.h"
#include "pseudonyms.h"
#include "pseudonyms_instances.h"
#include "random_table.h"
#include "solver.h"

#define N_SPECIAL 40
#define N_MIX	  400

static int has_person_terms(const struct knowledge *k)
{
	for (size_t i = 0; i < k->n_statements; i++)
		for (size_t t = 0; t < k->statements[i].n_terms; t++)
			if (k->statements[i].terms[t].person >= 0)
				return 1;
	return 0;
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

/* ---- hand-solved cases --------------------------------------------------- */

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

/* ---- special cases -------------------------------------------------------- */

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
	test_grouped_person_by_hand();
	test_people_change_nothing();
	test_full_mix();
	return check_done();
}
