/* The zero search's linear programs (zeros_lp.c, zeros_lp_component.c,
 * zeros_lp_conflict.c, lp_guard.c): programs GLPK's floating-point simplex
 * gets wrong, a component too large to build, intervals read as intervals
 * by the exact programs, GLPK's fatal errors caught by lp_guard_run; and
 * the compensated sums of the certificates (struct csum). */
#include <glpk.h>
#include <stdint.h>

#include "check.h"
#include "random_table.h"
#include "zeros.h"

/* The certificates' compensated sums (struct csum): sums of full-mantissa
 * terms in the thousands that cancel to about zero, products included,
 * against the same sums in quadruple precision; the bound must hold, and
 * be far below the terms' sizes times eps (what the plain sums left out). */
#ifdef __SIZEOF_FLOAT128__
typedef __float128 exact_t;
#else
typedef long double exact_t;
#endif

static void test_csum(void)
{
	uint64_t rng = 0xc5c5;

	for (int round = 0; round < 2000; round++) {
		struct csum a = {0};
		exact_t exact = 0, diff;
		size_t n = rng_in(&rng, 2, 40);
		double x[41], y[41], total = 0;

		for (size_t i = 0; i < n; i++) {
			x[i] = ((double)(rng_next(&rng) >> 11) * 0x1p-53 - 0.5) * 4096;
			y[i] = round % 2 ? (double)(rng_next(&rng) >> 11) * 0x1p-53 * 9 : 1;
		}
		for (size_t i = 0; i + 1 < n; i++)
			total += x[i] * y[i];
		x[n - 1] = -total / y[n - 1]; /* about zero in all */
		for (size_t i = 0; i < n; i++) {
			if (round % 2)
				csum_mul(&a, x[i], y[i]);
			else
				csum_add(&a, x[i]);
			exact += (exact_t)x[i] * (exact_t)y[i];
		}
		diff = (exact_t)csum_value(&a) - exact;
		CHECK((double)(diff < 0 ? -diff : diff) <= csum_error(&a));
		CHECK(csum_error(&a) < 1e-3 * DBL_EPSILON * a.size);
	}
}

/* boundary.c's zero finder (lp_build, homogenized, in its order) for m
 * cells and n_rows rows: row i holds the cells rows[i] (1-based, up to 4,
 * 0 ends the list) and has right-hand side rhs[i] records. */
static glp_prob *zero_finder(int m, int n_rows, const int rows[][4], const double *rhs)
{
	glp_prob *lp = glp_create_prob();
	int ia[64], ja[64], n = 0, t = 2 * m + 1;
	double ar[64];

	glp_set_obj_dir(lp, GLP_MAX);
	glp_add_cols(lp, t);
	for (int j = 1; j <= m; j++) {
		glp_set_col_bnds(lp, j, GLP_LO, 0, 0);
		glp_set_col_bnds(lp, m + j, GLP_DB, 0, 1);
		glp_set_obj_coef(lp, m + j, 1);
	}
	glp_set_col_bnds(lp, t, GLP_LO, 0, 0);
	glp_add_rows(lp, n_rows + m);
	for (int i = 1; i <= n_rows; i++) {
		for (int e = 0; e < 4 && rows[i - 1][e]; e++)
			ia[++n] = i, ja[n] = rows[i - 1][e], ar[n] = 1;
		ia[++n] = i, ja[n] = t, ar[n] = -rhs[i - 1];
		glp_set_row_bnds(lp, i, GLP_FX, 0, 0);
	}
	for (int j = 1; j <= m; j++) {
		glp_set_row_bnds(lp, n_rows + j, GLP_UP, 0, 0);
		ia[++n] = n_rows + j, ja[n] = m + j, ar[n] = 1;
		ia[++n] = n_rows + j, ja[n] = j, ar[n] = -1;
	}
	glp_load_matrix(lp, n, ia, ja, ar);
	return lp;
}

/* zeros_lp_solve on programs that GLPK's floating-point simplex gets wrong. */
static void test_lp_solve(void)
{
	/* one bucket, q1 = (y1, y2), q2 = (y3, y4), value 1 = (y1, y3), and a
	 * rule of 5e-8 records on y1: every cell can be positive. The simplex
	 * ended "unbounded" and the zero search reported a solver failure (stress
	 * seed 38113402, where another component held the conflict). */
	static const int tiny_rule[][4] = {{1, 2}, {3, 4}, {1, 3}, {1}};
	static const double tiny_rhs[] = {1, 1, 1, 5e-8};
	static const int hang_rows[][4] = {{1}, {2}, {2}, {1}};
	static const double hang_rhs[] = {1, 1, 1, 0.9999999};
	static const int pair_rows[][4] = {{1, 2}, {1}, {2}};
	static const double pair_rhs[] = {2, 2 * 3e-9, 2 * 0.999999997};
	glp_prob *lp;
	int feasible = -1;

	glp_term_out(GLP_OFF);
	lp = zero_finder(4, 4, tiny_rule, tiny_rhs);
	CHECK(zeros_lp_solve(lp, NULL, &feasible) == PM_OK && feasible == 1);
	CHECK(glp_get_obj_val(lp) == 4);
	glp_delete_prob(lp);
	/* the same bucket after a false zero on each value (stress seed
	 * 38106743, before the relaxations' check held claims to 1e-9): rows
	 * y1 = t, y2 = t twice and a rule y1 = 0.9999999 t admit only t = 0.
	 * The simplex restarted after "numerical instability" for ever, and
	 * zeros_lp_solve resumed it after every time slice: the solve hung */
	lp = zero_finder(2, 4, hang_rows, hang_rhs);
	feasible = -1;
	CHECK(zeros_lp_solve(lp, NULL, &feasible) == PM_OK && feasible == 1);
	CHECK(glp_get_obj_val(lp) == 0);
	CHECK(glp_get_it_cnt(lp) <= zeros_lp_iteration_budget(lp) * 2);
	glp_delete_prob(lp);
	/* two records, rules of 3e-9 and 0.999999997 on both (stress seed
	 * 38000668): 6e-9 + 1.999999994 records is all of them, exactly in
	 * decimal, but GLPK reads 0.999999997 as 333333332/333333333 */
	lp = zero_finder(2, 3, pair_rows, pair_rhs);
	feasible = -1;
	CHECK(zeros_lp_exact(lp, NULL, &feasible) == PM_OK && feasible == 1);
	CHECK(glp_get_obj_val(lp) == 2);
	glp_delete_prob(lp);
	glp_free_env();
}

/*
 * A component whose zero finder would be too large to build: 12,000
 * buckets of five records (25 cells each, 300,000 in all) that one rule
 * P(s0 | a = x) = 0.5 links. The program would hold about 1.3 million
 * entries, over LP_MAX_ENTRIES: zeros_lp_component leaves the component
 * undecided (no zero, z.undecided counts it) without building it, and
 * the conflict search gives its verdict without the rules' names.
 */
static void test_lp_too_large(void)
{
	static const char *const attrs[] = {"a"};
	const char *attr = "a", *x = "x";
	struct pm_error err = {0};
	struct dataset_builder *b = dataset_builder_create(NULL, attrs, 1, "v", &err);
	struct dataset *ds = NULL;
	struct knowledge k;
	struct invariants inv;
	struct zeros z;
	size_t before, n = 0;

	for (int g = 0; g < 12000; g++)
		for (int i = 0; i < 5; i++) {
			char group[16], q[16], sv[8];
			const char *qv = i ? q : "x";

			snprintf(group, sizeof group, "g%d", g);
			snprintf(q, sizeof q, "q%d", i);
			snprintf(sv, sizeof sv, "s%d", i);
			CHECK(dataset_builder_add_record(b, &qv, group, sv, &err) == PM_OK);
		}
	CHECK(dataset_builder_finish(b, &ds, &err) == PM_OK);
	dataset_builder_destroy(b);
	knowledge_init(&k);
	CHECK(knowledge_add_user(&k, ds, &attr, &x, 1, "s0", 1, 0.5, 0, 0, 0, 0, "rules", &err) ==
	      PM_OK);
	CHECK(invariants_build(ds, &k, &inv, &err) == PM_OK);
	CHECK(inv.n_cells == 300000);
	CHECK(zeros_init(&z, ds, &k, &inv) == PM_OK);
	CHECK(zeros_deepen(&z, ZEROS_RELAXED, NULL, NULL, &err) == PM_OK);
	CHECK(z.open.n == 1 && z.open.b_off[1] == 12000);
	before = z.found;
	CHECK(zeros_lp_component(&z, &z.open, 0, NULL, &err) == PM_OK);
	CHECK(z.undecided == 1);
	for (size_t c = 0; c < inv.n_cells; c++)
		n += z.zero[c];
	CHECK(n == before);
	CHECK(zeros_lp_conflict(&z, NULL, 1, &err) == PM_ERR_INCONSISTENT);
	CHECK(strstr(err.message, "too many to name") != NULL && !strcmp(err.field, "rules"));
	zeros_finish(&z);
	invariants_finish(&inv);
	knowledge_finish(&k);
	dataset_destroy(ds);
}

/*
 * The exact programs read an interval as one: the paper's Figure 1 with
 * P(Flu | male) in [0, 0.75] and P(Flu | female) in [0, 0.25] holds (2
 * men and 1 woman with Flu), while the two as equalities at their lower
 * bounds would leave its 3 Flu nowhere. With the men's at [0.75, 1] and
 * the women's at [0.5, 1] they would need 5 Flu: the conflict is named.
 */
static void test_lp_intervals(void)
{
	static const char *const attrs[] = {"gender", "degree"};
	static const char *const rows[][4] = {
	    {"male", "college", "1", "Flu"},  {"male", "college", "1", "HIV"},
	    {"female", "junior", "1", "BC"},  {"female", "college", "1", "BC"},
	    {"male", "college", "2", "LC"},   {"female", "college", "2", "Flu"},
	    {"male", "graduate", "3", "Flu"}, {"female", "graduate", "3", "BC"}};
	const char *g = "gender", *male = "male", *female = "female";
	struct pm_error err = {0};
	struct dataset_builder *b = dataset_builder_create(NULL, attrs, 2, "d", &err);
	struct dataset *ds = NULL;

	for (size_t i = 0; i < 8; i++)
		CHECK(dataset_builder_add_record(b, rows[i], rows[i][2], rows[i][3], &err) ==
		      PM_OK);
	CHECK(dataset_builder_finish(b, &ds, &err) == PM_OK);
	dataset_builder_destroy(b);
	for (int conflict = 0; conflict < 2; conflict++) {
		struct knowledge k;
		struct invariants inv;
		struct zeros z;

		knowledge_init(&k);
		CHECK(knowledge_add_user(&k, ds, &g, &male, 1, "Flu", 0, 0, conflict, 0.75, 1,
					 conflict ? 1 : 0.75, "r", &err) == PM_OK);
		CHECK(knowledge_add_user(&k, ds, &g, &female, 1, "Flu", 0, 0, conflict, 0.5, 1,
					 conflict ? 1 : 0.25, "r", &err) == PM_OK);
		CHECK(invariants_build(ds, &k, &inv, &err) == PM_OK);
		CHECK(zeros_init(&z, ds, &k, &inv) == PM_OK);
		CHECK(zeros_deepen(&z, ZEROS_EXACT, NULL, NULL, &err) == PM_OK);
		CHECK(zeros_lp_conflict(&z, NULL, 0, &err) ==
		      (conflict ? PM_ERR_INCONSISTENT : PM_OK));
		CHECK(!conflict ||
		      (strstr(err.message, "rules[0]") && strstr(err.message, "rules[1]")));
		zeros_finish(&z);
		invariants_finish(&inv);
		knowledge_finish(&k);
	}
	dataset_destroy(ds);
}

/* Two cells y1, y2 >= 0 with y1 + y2 = 1 and y1 + 0.5 y2 <= bound,
 * decided by the exact simplex; with bad, a fatal error of GLPK first: a
 * bad argument (1), a matrix with an entry twice (2). (An infinite bound
 * would end it in the exact simplex's assertion -DBL_MAX <= val, as a
 * statement's "max": 1e308 once did, but the GMP numbers of the exact
 * simplex are not GLPK's to free, and a leak checker would see them.) */
struct guard_case {
	double bound;
	int bad, feasible;
	int nested; /* first the same with bad 2 in a guard inside this one */
	enum pm_status inner;
	char inner_message[sizeof((struct pm_error *)0)->message];
};

static enum pm_status guard_program(void *ctx)
{
	struct guard_case *g = ctx, inner = {.bound = 1, .bad = 2};
	int ia[] = {0, 1, 1, 2, 2}, ja[] = {0, 1, 2, 1, 2};
	double ar[] = {0, 1, 1, 1, 0.5};
	struct pm_error err = {0};
	enum pm_status st;
	glp_prob *lp;

	if (g->nested) { /* caught inside, and this guard goes on */
		g->inner = lp_guard_run(guard_program, &inner, &err);
		memcpy(g->inner_message, err.message, sizeof g->inner_message);
	}
	lp = zeros_lp_create();
	glp_add_cols(lp, 2);
	glp_add_rows(lp, g->bad == 1 ? -1 : 2);
	glp_set_col_bnds(lp, 1, GLP_LO, 0, 0);
	glp_set_col_bnds(lp, 2, GLP_LO, 0, 0);
	glp_set_row_bnds(lp, 1, GLP_FX, 1, 1);
	glp_set_row_bnds(lp, 2, GLP_UP, 0, g->bound);
	if (g->bad == 2)
		ia[2] = 1, ja[2] = 1;
	glp_load_matrix(lp, 4, ia, ja, ar);
	st = zeros_lp_exact(lp, NULL, &g->feasible);
	glp_delete_prob(lp);
	return st;
}

/* lp_guard_run: GLPK's fatal errors end the call, not the process, with
 * GLPK's message and nothing of it printed; GLPK works again after one,
 * and guards nest. */
static void test_lp_guard(void)
{
	struct guard_case g = {.bound = 1, .bad = 1, .feasible = -1};
	struct pm_error err = {0};

	CHECK(lp_guard_run(guard_program, &g, &err) == PM_ERR_INTERNAL);
	CHECK(err.status == PM_ERR_INTERNAL && g.feasible == -1);
	CHECK_CONTAINS(err.message,
		       "the LP solver failed: glp_add_rows: nrs = -1; invalid number of rows");
	CHECK(!strchr(err.message, '\n'));
	/* the environment was freed: a new one solves the program */
	memset(&err, 0, sizeof err);
	g = (struct guard_case){.bound = 1e6, .feasible = -1};
	CHECK(lp_guard_run(guard_program, &g, &err) == PM_OK && g.feasible == 1);
	CHECK(err.status == PM_OK && err.message[0] == 0);
	/* 1e308, read in decimals (times 10), was infinite to the exact
	 * simplex; the row now stays as it is */
	g = (struct guard_case){.bound = 1e308, .feasible = -1};
	CHECK(lp_guard_run(guard_program, &g, &err) == PM_OK && g.feasible == 1);
	/* nested: the inner guard catches its own; the outer one its own after */
	g = (struct guard_case){.bound = 1, .bad = 1, .nested = 1, .feasible = -1};
	CHECK(lp_guard_run(guard_program, &g, &err) == PM_ERR_INTERNAL);
	CHECK(g.inner == PM_ERR_INTERNAL);
	CHECK_CONTAINS(g.inner_message, "duplicate indices not allowed; Error detected in file");
	CHECK_CONTAINS(err.message, "glp_add_rows: nrs = -1");
	g = (struct guard_case){.bound = 1, .nested = 1, .feasible = -1};
	CHECK(lp_guard_run(guard_program, &g, &err) == PM_OK && g.feasible == 1);
	CHECK(g.inner == PM_ERR_INTERNAL);
	glp_free_env();
}

int main(void)
{
	test_csum();
	test_lp_guard();
	test_lp_solve();
	test_lp_too_large();
	test_lp_intervals();
	return check_done();
}
