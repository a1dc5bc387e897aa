/* The pseudonym model (constraints/lifted.c) and its solve
 * (solver/lifted*.c): its rows, its dual's derivatives against finite
 * differences, and the special cases that must reduce exactly. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "lifted_internal.h"
#include "newton.h"
#include "random_table.h"

/* A person of tuple q (group b, or -1), appended to k. */
static void add_person(struct knowledge *k, uint32_t q, long b)
{
	char name[32];

	snprintf(name, sizeof name, "p%zu", k->n_people);
	k->people = realloc(k->people, (k->n_people + 1) * sizeof *k->people);
	k->people[k->n_people].name = strdup(name);
	k->people[k->n_people].tuple = q;
	k->people[k->n_people].group = b;
	k->n_people++;
}

/* Statement of n terms with bounds lo, hi (eq: an equality); term i a
 * person term when person[i] >= 0, else over cond[i]; then values sa[i]
 * (one each), coefficients coef[i]. */
static void add_statement(struct knowledge *k, const struct dataset *ds, size_t n,
			  const long *person, const struct rule *cond, const uint32_t *sa,
			  const double *coef, double lo, double hi, int eq)
{
	struct statement *s;

	k->statements = realloc(k->statements, (k->n_statements + 1) * sizeof *k->statements);
	s = &k->statements[k->n_statements++];
	memset(s, 0, sizeof *s);
	s->n_terms = n;
	s->terms = calloc(n, sizeof *s->terms);
	s->lo = lo;
	s->hi = hi;
	s->equality = eq;
	for (size_t i = 0; i < n; i++) {
		struct statement_term *t = &s->terms[i];

		t->coef = coef[i];
		t->person = person[i];
		if (person[i] < 0)
			t->cond = cond[i];
		t->n_qv = person[i] < 0 ? knowledge_count_qv(ds, &t->cond) : 1;
		t->n_then = 1;
		t->then = malloc(sizeof *t->then);
		t->then[0] = sa[i];
	}
}

/* A bucket holding tuple q, or -1. */
static long some_group(const struct dataset *ds, uint32_t q, uint64_t *rng)
{
	for (size_t b = rng_in(rng, 0, ds->n_groups - 1), n = 0; n < ds->n_groups;
	     n++, b = (b + 1) % ds->n_groups)
		for (size_t i = ds->bq_off[b]; i < ds->bq_off[b + 1]; i++)
			if (ds->bq_tuple[i] == q)
				return (long)b;
	return -1;
}

/* Named people in k of tuple q in bucket b (b < 0: every one of q). */
static size_t named_in(const struct knowledge *k, uint32_t q, long b)
{
	size_t n = 0;

	for (size_t i = 0; i < k->n_people; i++)
		n += k->people[i].tuple == q && (b < 0 || k->people[i].group == b);
	return n;
}

/* Named people of tuple q with a known group (b >= 0: that one). */
static size_t named_grouped(const struct knowledge *k, uint32_t q, long b)
{
	size_t n = 0;

	for (size_t i = 0; i < k->n_people; i++)
		n += k->people[i].tuple == q && k->people[i].group >= 0 &&
		     (b < 0 || k->people[i].group == b);
	return n;
}

static uint32_t count_in(const struct dataset *ds, uint32_t q, long b)
{
	for (size_t i = ds->bq_off[b]; i < ds->bq_off[b + 1]; i++)
		if (ds->bq_tuple[i] == q)
			return ds->bq_count[i];
	return 0;
}

/* Up to n named people, half of them with their group, never more of a
 * tuple (or of a tuple in a group) than it has records (sometimes all). */
static void add_people(struct knowledge *k, const struct dataset *ds, uint64_t *rng, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t q = (uint32_t)rng_in(rng, 0, ds->n_tuples - 1);
		long b = rng_next(rng) % 2 ? -1 : some_group(ds, q, rng);

		if (named_in(k, q, -1) >= ds->tuple_count[q] ||
		    (b >= 0 && named_in(k, q, b) >= count_in(ds, q, b)))
			continue;
		add_person(k, q, b);
	}
}

static int solve(const struct dataset *ds, const struct knowledge *k, struct solver_result *r,
		 struct pm_error *err)
{
	struct invariants inv = {0};
	struct solver_options o;
	int st;

	solver_options_init(&o);
	o.tolerance = 1e-10;
	o.threads = 1;
	st = invariants_build(ds, k, &inv, err);
	if (!st)
		st = solver_run(ds, k, &inv, &o, r, err);
	invariants_finish(&inv);
	return st;
}

/* Largest difference of two results' posteriors (same dataset). */
static double post_diff(const struct dataset *ds, const struct solver_result *a,
			const struct solver_result *b)
{
	double *pa = calloc(ds->n_tuples * ds->sa_values.n, sizeof *pa), worst = 0;
	double *pb = calloc(ds->n_tuples * ds->sa_values.n, sizeof *pb);

	for (size_t q = 0; q < ds->n_tuples; q++) {
		for (size_t e = a->post_off[q]; e < a->post_off[q + 1]; e++)
			pa[q * ds->sa_values.n + a->post_sa[e]] = a->post_p[e];
		for (size_t e = b->post_off[q]; e < b->post_off[q + 1]; e++)
			pb[q * ds->sa_values.n + b->post_sa[e]] = b->post_p[e];
	}
	for (size_t i = 0; i < ds->n_tuples * ds->sa_values.n; i++)
		worst = fmax(worst, fabs(pa[i] - pb[i]));
	free(pa);
	free(pb);
	return worst;
}

/* A few mined rules of ds (exact, or vague), into k. */
static void mine(const struct dataset *ds, uint64_t *rng, struct knowledge *k, double vagueness)
{
	struct miner_options mo;
	struct pm_error err = {0};

	miner_options_init(&mo);
	mo.positive = rng_in(rng, 0, 4);
	mo.negative = rng_in(rng, 0, 4);
	mo.min_support = 1;
	mo.vagueness = vagueness;
	CHECK(miner_run(ds, &mo, k, &err) == PM_OK);
}

/* P*(s | q) of r. */
static double post_at(const struct solver_result *r, uint32_t q, uint32_t s)
{
	for (size_t e = r->post_off[q]; e < r->post_off[q + 1]; e++)
		if (r->post_sa[e] == s)
			return r->post_p[e];
	return 0;
}

/*
 * Without person terms each named person is any record of their tuple
 * (in their group, if known) not taken by a person whose group is known:
 * in bucket b with probability (n(q, b) - G_b) / (n(q) - G) (G_b such
 * people in b, G in all; 1 for their own group), with value s there
 * with probability X[q, s, b] / n(q, b), X the estimate without them
 * (r0's cells). The largest difference from r1's people.
 */
static double person_check(const struct dataset *ds, const struct knowledge *k,
			   const struct solver_result *r0, const struct solver_result *r1)
{
	struct invariants inv = {0};
	struct pm_error err = {0};
	double worst = 0;

	CHECK(invariants_build(ds, k, &inv, &err) == PM_OK);
	for (size_t i = 0; i < k->n_people; i++) {
		const struct individual *p = &k->people[i];
		double G = (double)named_grouped(k, p->tuple, -1);

		for (size_t o = inv.occ_off[p->tuple]; o < inv.occ_off[p->tuple + 1]; o++) {
			size_t b = inv.occ_bucket[o], h = inv.bucket_h[b];
			double nb = inv.occ_count[o], w;

			if (p->group >= 0)
				w = (size_t)p->group == b;
			else
				w = (nb - (double)named_grouped(k, p->tuple, (long)b)) /
				    ((double)ds->tuple_count[p->tuple] - G);
			for (size_t j = 0; j < h; j++) {
				double want = w * r0->cells[inv.occ_cell[o] + j] / nb, got = 0;

				for (size_t e = r1->person_off[i]; e < r1->person_off[i + 1]; e++)
					if (r1->person_group[e] == b &&
					    r1->person_sa[e] == inv.cell_sa[inv.occ_cell[o] + j])
						got += r1->person_p[e];
				worst = fmax(worst, fabs(want - got));
			}
		}
	}
	invariants_finish(&inv);
	return worst;
}

/* People no statement names change nothing (SPEC 3.1): the posterior is
 * the one without them, and each person is as person_check says. */
static void test_people_change_nothing(void)
{
	double worst = 0, worst_p = 0;

	for (uint64_t seed = 1; seed <= 60; seed++) {
		uint64_t rng = seed * 7919;
		struct dataset *ds = random_dataset(&rng);
		struct knowledge k0, k1;
		struct solver_result r0 = {0}, r1 = {0};
		struct pm_error err = {0};

		knowledge_init(&k0);
		knowledge_init(&k1);
		mine(ds, &rng, &k0, seed % 3 ? 0 : 0.1);
		for (size_t i = 0; i < k0.n; i++)
			knowledge_append(&k1, &k0.rules[i], &err);
		add_people(&k1, ds, &rng, rng_in(&rng, 1, 6));
		CHECK(solve(ds, &k0, &r0, &err) == PM_OK);
		CHECK(solve(ds, &k1, &r1, &err) == PM_OK);
		if (!r0.post_off || !r1.post_off || (k1.n_people && !r1.person_off)) {
			fprintf(stderr, "seed %llu: %s: %s\n", (unsigned long long)seed, err.field,
				err.message);
			goto next;
		}
		CHECK(r1.status == SOLVER_CONVERGED);
		if (r1.status != SOLVER_CONVERGED)
			fprintf(stderr, "seed %llu: %s (%g records)\n", (unsigned long long)seed,
				r1.reason, r1.max_violation);
		if (post_diff(ds, &r0, &r1) > 1e-9 || person_check(ds, &k1, &r0, &r1) > 1e-9)
			fprintf(stderr, "seed %llu: posterior %g, people %g off\n",
				(unsigned long long)seed, post_diff(ds, &r0, &r1),
				person_check(ds, &k1, &r0, &r1));
		worst = fmax(worst, post_diff(ds, &r0, &r1));
		worst_p = fmax(worst_p, person_check(ds, &k1, &r0, &r1));
	next:
		solver_result_finish(&r0);
		solver_result_finish(&r1);
		knowledge_finish(&k0);
		knowledge_finish(&k1);
		dataset_destroy(ds);
	}
	printf("people without statements: posterior within %.2g, a person's P(s) within %.2g\n",
	       worst, worst_p);
	CHECK(worst <= 1e-9);
	CHECK(worst_p <= 1e-9);
}

/* The lifted dual of one instance: its gradient against central
 * differences of G, H v against differences of the gradient, and H
 * formed against H v, at a random point. */
static void check_dual(const struct dataset *ds, const struct knowledge *k, uint64_t *rng,
		       double *worst)
{
	struct invariants inv = {0};
	struct lifted m;
	struct lsys s;
	struct newton_problem np;
	struct pm_error err = {0};
	uint8_t *zero = NULL;
	size_t empty;

	if (invariants_build(ds, k, &inv, &err) || lifted_build(ds, k, &inv, &m, &err))
		goto out;
	zero = calloc(m.n_cells + 1, 1);
	for (size_t c = 0; c < m.n_cells; c++)
		zero[c] = c < inv.n_cells ? 0 : 0;
	if (lsys_init(&s, ds, &m, zero, NULL, 1e-9, &empty) == PM_OK && s.r) {
		size_t r = s.r;
		double *x = calloc(r, sizeof *x), *g = calloc(r, sizeof *g),
		       *g1 = calloc(r, sizeof *g1);
		double *v = calloc(r, sizeof *v), *hv = calloc(r, sizeof *hv),
		       *H = calloc(r * r, sizeof *H);
		double viol, hstep = 1e-5;

		for (size_t i = 0; i < r; i++)
			x[i] = ((double)(rng_next(rng) % 2001) / 1000.0 - 1.0) * 0.5;
		for (size_t i = 0; i < r; i++)
			v[i] = (double)(rng_next(rng) % 2001) / 1000.0 - 1.0;
		lifted_dual_start(&s, x);
		lifted_dual_problem(&s, &np);
		np.eval(np.ctx, x, g, &viol);
		np.prepare(np.ctx, x);
		np.hv(np.ctx, v, hv);
		if (np.hessian) {
			np.hessian(np.ctx, 0, H);
			for (size_t i = 0; i < r; i++) {
				double hvi = 0;

				for (size_t j = 0; j < r; j++)
					hvi += (j <= i ? H[i * r + j] : H[j * r + i]) * v[j];
				worst[2] = fmax(worst[2], fabs(hvi - hv[i]) / (1 + fabs(hv[i])));
			}
		}
		for (size_t i = 0; i < r; i++) {
			double xi = x[i], fp, fm;

			x[i] = xi + hstep;
			fp = np.eval(np.ctx, x, NULL, &viol);
			x[i] = xi - hstep;
			fm = np.eval(np.ctx, x, NULL, &viol);
			x[i] = xi;
			worst[0] =
			    fmax(worst[0], fabs((fp - fm) / (2 * hstep) - g[i]) / (1 + fabs(g[i])));
		}
		for (size_t i = 0; i < r; i++)
			x[i] += hstep * v[i];
		np.eval(np.ctx, x, g1, &viol);
		for (size_t i = 0; i < r; i++)
			x[i] -= 2 * hstep * v[i];
		np.eval(np.ctx, x, g, &viol);
		for (size_t i = 0; i < r; i++)
			worst[1] = fmax(worst[1], fabs((g1[i] - g[i]) / (2 * hstep) - hv[i]) /
						      (1 + fabs(hv[i])));
		free(x);
		free(g);
		free(g1);
		free(v);
		free(hv);
		free(H);
	}
	lsys_finish(&s);
out:
	free(zero);
	lifted_finish(&m);
	invariants_finish(&inv);
}

static void test_derivatives(void)
{
	double worst[3] = {0};

	for (uint64_t seed = 1; seed <= 30; seed++) {
		uint64_t rng = seed * 104729;
		struct dataset *ds = random_dataset(&rng);
		struct knowledge k;

		knowledge_init(&k);
		mine(ds, &rng, &k, seed % 2 ? 0 : 0.1);
		add_people(&k, ds, &rng, rng_in(&rng, 0, 5));
		check_dual(ds, &k, &rng, worst);
		knowledge_finish(&k);
		dataset_destroy(ds);
	}
	printf(
	    "dual: gradient vs differences %.2g, H v vs differences %.2g, H formed vs H v %.2g\n",
	    worst[0], worst[1], worst[2]);
	CHECK(worst[0] <= 1e-6);
	CHECK(worst[1] <= 1e-6);
	CHECK(worst[2] <= 1e-10);
}

/* The rule rules[i] of k as a statement of one term (bounds lo, hi). */
static void as_statement(struct knowledge *k, const struct dataset *ds, size_t i, double lo,
			 double hi, int eq)
{
	long none = -1;
	double one = 1;
	struct rule cond = k->rules[i];
	uint32_t sa = cond.sa;

	add_statement(k, ds, 1, &none, &cond, &sa, &one, lo, hi, eq);
}

/*
 * A statement of one term P(s | if) = c is the rule P(s | if) = c, and
 * so is min = max = c; a box around the answer without it changes
 * nothing. Each against the same knowledge with the rule as a rule.
 */
static void test_reductions(void)
{
	double worst[3] = {0};

	for (uint64_t seed = 1; seed <= 40; seed++) {
		uint64_t rng = seed * 15485863;
		struct dataset *ds = random_dataset(&rng);
		struct knowledge k0, k1, k2, k3;
		struct solver_result r0 = {0}, r1 = {0}, r2 = {0}, r3 = {0}, rb = {0};
		struct pm_error err = {0};
		size_t last;
		double c;

		knowledge_init(&k0);
		knowledge_init(&k1);
		knowledge_init(&k2);
		knowledge_init(&k3);
		mine(ds, &rng, &k0, 0);
		if (k0.n == 0)
			goto next;
		last = k0.n - 1;
		c = k0.rules[last].lo;
		for (size_t i = 0; i < last; i++) {
			knowledge_append(&k1, &k0.rules[i], &err);
			knowledge_append(&k2, &k0.rules[i], &err);
			knowledge_append(&k3, &k0.rules[i], &err);
		}
		knowledge_append(&k1, &k0.rules[last], &err);
		as_statement(&k1, ds, last, c, c, 1);
		k1.n--; /* the rule itself out: only the statement says it */
		knowledge_append(&k2, &k0.rules[last], &err);
		as_statement(&k2, ds, k2.n - 1, c, c, 0);
		k2.n--;
		CHECK(solve(ds, &k0, &r0, &err) == PM_OK);
		CHECK(solve(ds, &k1, &r1, &err) == PM_OK);
		CHECK(solve(ds, &k2, &r2, &err) == PM_OK);
		/* the box: the answer without the rule, widened by 0.01 */
		CHECK(solve(ds, &k3, &rb, &err) == PM_OK);
		if (!r0.post_off || !r1.post_off || !r2.post_off || !rb.post_off)
			goto next;
		{
			struct rule q = k0.rules[last];
			double s = 0;

			for (size_t t = 0; t < ds->n_tuples; t++)
				if (knowledge_matches(ds, &q, t))
					s += post_at(&rb, (uint32_t)t, q.sa) * ds->tuple_count[t];
			s /= (double)q.n_qv;
			knowledge_append(&k3, &q, &err);
			as_statement(&k3, ds, k3.n - 1, fmax(0, s - 0.01), fmin(1, s + 0.01), 0);
			k3.n--;
		}
		CHECK(solve(ds, &k3, &r3, &err) == PM_OK);
		if (!r3.post_off)
			goto next;
		worst[0] = fmax(worst[0], post_diff(ds, &r0, &r1));
		worst[1] = fmax(worst[1], post_diff(ds, &r0, &r2));
		worst[2] = fmax(worst[2], post_diff(ds, &rb, &r3));
		CHECK(r1.st_binding && r1.st_binding[0] == SOLVER_BINDING_VALUE);
		/* the box binds only where clipped to 0 or 1 */
		CHECK(r3.st_binding && (r3.st_binding[0] == SOLVER_BINDING_NONE ||
					k3.statements[0].lo == 0 || k3.statements[0].hi == 1));
	next:
		solver_result_finish(&r0);
		solver_result_finish(&r1);
		solver_result_finish(&r2);
		solver_result_finish(&r3);
		solver_result_finish(&rb);
		knowledge_finish(&k0);
		knowledge_finish(&k1);
		knowledge_finish(&k2);
		knowledge_finish(&k3);
		dataset_destroy(ds);
	}
	printf("statements: value c as the rule %.2g, min = max = c %.2g, a box around the answer "
	       "%.2g\n",
	       worst[0], worst[1], worst[2]);
	CHECK(worst[0] <= 1e-9);
	CHECK(worst[1] <= 1e-9);
	CHECK(worst[2] <= 1e-9);
}

/* Statement over one person's values s[0 .. n): their sum = value. */
static void person_says(struct knowledge *k, const struct dataset *ds, long person,
			const uint32_t *sa, size_t n, double value)
{
	long p[4] = {person, person, person, person};
	double one[4] = {1, 1, 1, 1};
	struct rule none[4] = {{0}};

	add_statement(k, ds, n, p, none, sa, one, value, value, 1);
}

/*
 * Knowledge no distribution satisfies exits 3 naming an irreducible set:
 * a person given two values at once (both statements), a person given
 * a value no bucket of theirs has (that statement), a rule P(s) = c (the
 * truth) against a statement P(s) >= c + 0.01 (both, as a rule and a
 * statement); the irrelevant statement beside them is not named.
 */
static void test_conflicts(void)
{
	int named = 0, cases = 0;

	for (uint64_t seed = 1; seed <= 30; seed++) {
		uint64_t rng = seed * 2654435761u;
		struct dataset *ds = random_dataset(&rng);
		struct knowledge k;
		struct solver_result r = {0};
		struct pm_error err = {0};
		uint32_t q = (uint32_t)rng_in(&rng, 0, ds->n_tuples - 1), s0, s1;
		long b = some_group(ds, q, &rng);
		int kind = (int)(seed % 3), ok;

		knowledge_init(&k);
		add_person(&k, q, b);
		add_person(&k, q == 0 ? 1 : 0, -1); /* a bystander */
		s0 = ds->bs_value[ds->bs_off[b]];
		s1 = ds->bs_value[ds->bs_off[b + 1] - 1];
		person_says(&k, ds, 1, &s0, 1, 0); /* irrelevant, satisfiable */
		if (s0 == s1 || (kind == 1 && ds->sa_values.n == ds->bs_off[b + 1] - ds->bs_off[b]))
			goto next;
		k.people[0].group = b;
		if (kind == 0) {
			person_says(&k, ds, 0, &s0, 1, 1);
			person_says(&k, ds, 0, &s1, 1, 1);
		} else if (kind == 1) { /* a value outside the person's bucket */
			uint32_t v = 0;

			for (size_t j = ds->bs_off[b];
			     j < ds->bs_off[b + 1] && ds->bs_value[j] == v; j++)
				v++;
			person_says(&k, ds, 0, &v, 1, 1);
		} else {
			struct rule rl = {0};
			long none = -1;
			double one = 1, c = 0, most = 0;

			rl.n_terms = 1; /* if a0 = q's value, then s0 */
			rl.attr[0] = 0;
			rl.value[0] = ds->tuples[(size_t)q * ds->n_attrs];
			rl.sa = s0;
			rl.n_qv = knowledge_count_qv(ds, &rl);
			for (size_t i = 0; i < ds->n_records; i++)
				c += ds->rec_sa[i] == s0 &&
				     knowledge_matches(ds, &rl, ds->rec_tuple[i]);
			for (size_t g = 0; g < ds->n_groups; g++) { /* the most the row can hold */
				double in = 0, ns = 0;

				for (size_t e = ds->bq_off[g]; e < ds->bq_off[g + 1]; e++)
					in += knowledge_matches(ds, &rl, ds->bq_tuple[e])
						  ? ds->bq_count[e]
						  : 0;
				for (size_t e = ds->bs_off[g]; e < ds->bs_off[g + 1]; e++)
					ns += ds->bs_value[e] == s0 ? ds->bs_count[e] : 0;
				most += fmin(in, ns);
			}
			if (most < c + 0.5)
				goto next;
			rl.lo = rl.hi = c / (double)rl.n_qv; /* true: holds alone */
			knowledge_append(&k, &rl, &err);
			/* halfway to the most: holds alone too */
			add_statement(&k, ds, 1, &none, &rl, &s0, &one,
				      (c + most) / 2 / (double)rl.n_qv, INFINITY, 0);
		}
		cases++;
		if (solve(ds, &k, &r, &err) != PM_ERR_INCONSISTENT) {
			fprintf(stderr, "seed %llu: no conflict (%s)\n", (unsigned long long)seed,
				err.message);
			CHECK(0);
			goto next;
		}
		ok = kind == 0 ? strstr(err.message, "statements[1]") &&
				     strstr(err.message, "statements[2]") &&
				     !strstr(err.message, "statements[0]")
		     : kind == 1 ? strstr(err.message, "this statement: statements[1]") != NULL
				 : strstr(err.message, "rules[0]") &&
				       strstr(err.message, "statements[1]") &&
				       strstr(err.message, "rules and statements together");
		named += ok;
		if (!ok)
			fprintf(stderr, "seed %llu: %s: %s\n", (unsigned long long)seed, err.field,
				err.message);
	next:
		solver_result_finish(&r);
		knowledge_finish(&k);
		dataset_destroy(ds);
	}
	printf("conflicts: %d of %d named as they should\n", named, cases);
	CHECK(named == cases && cases > 10);
}

static int cancel_now(void *ctx, const struct solver_progress *p)
{
	(void)p;
	return ++*(int *)ctx >= 2;
}

/* Every piece of work has a bound: a solve with statements and people
 * that runs out of time answers not converged ("time_limit") with an
 * estimate, and a cancel stops it (PM_ERR_CANCELLED). */
static void test_limits(void)
{
	uint64_t rng = 77;
	struct dataset *ds = random_dataset(&rng);
	struct knowledge k;
	struct invariants inv = {0};
	struct solver_options o;
	struct solver_result r = {0};
	struct pm_error err = {0};
	uint32_t s0 = ds->bs_value[ds->bs_off[0]];
	int calls = 0;

	knowledge_init(&k);
	mine(ds, &rng, &k, 0.1);
	add_person(&k, ds->bq_tuple[ds->bq_off[0]], 0);
	person_says(&k, ds, 0, &s0, 1, 0.5);
	CHECK(invariants_build(ds, &k, &inv, &err) == PM_OK);
	solver_options_init(&o);
	o.time_limit = 0.05;
	o.stall = 0.2; /* slow on purpose */
	CHECK(solver_run(ds, &k, &inv, &o, &r, &err) == PM_OK);
	CHECK(r.status == SOLVER_NOT_CONVERGED && !strcmp(r.reason, "time_limit"));
	for (size_t q = 0; r.post_off && q < ds->n_tuples; q++)
		for (size_t e = r.post_off[q]; e < r.post_off[q + 1]; e++)
			CHECK(isfinite(r.post_p[e]));
	solver_result_finish(&r);
	solver_options_init(&o);
	o.progress = cancel_now;
	o.progress_ctx = &calls;
	CHECK(solver_run(ds, &k, &inv, &o, &r, &err) == PM_ERR_CANCELLED);
	solver_result_finish(&r);
	invariants_finish(&inv);
	knowledge_finish(&k);
	dataset_destroy(ds);
}

int main(void)
{
	test_limits();
	test_conflicts();
	test_reductions();
	test_derivatives();
	test_people_change_nothing();
	return check_done();
}
