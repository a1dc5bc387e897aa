/*
 * zeros_lp_safe_max, the rigorous bound from a floating-point optimum's
 * duals, against GLPK's exact simplex on random programs of the shape
 * the relaxations build (fixed rows of 0/1 coefficients, columns in
 * [0, u]): never below the exact optimum, and within rounding of it;
 * degenerate programs whose optimum is a single point (every column at a
 * bound) included; any other shape offers no bound (NaN); a bad dual
 * gives a looser bound, never a wrong one.
 */
#include <float.h>
#include <glpk.h>
#include <stdint.h>

#include "check.h"
#include "random_table.h"
#include "zeros.h"

/* A random program: n columns in [0, u_j] (integers), m fixed rows, each
 * the sum of a random subset, right-hand sides from a random integer
 * point x0 (so it is feasible); objective +1, -1 or 0 per column. With
 * point, x0 sits at its bounds and the rows pin it (every row a single
 * column or the subsets nested), so the optimum is that point. */
static glp_prob *random_program(uint64_t *rng, int point)
{
	int n = (int)rng_in(rng, 1, 30), m = (int)rng_in(rng, 1, 12), nz = 0;
	size_t cap = (size_t)(n * (n + m) + 1); /* entries: at most n per row */
	glp_prob *lp = glp_create_prob();
	int *ia = malloc(cap * sizeof *ia), *ja = malloc(cap * sizeof *ja);
	double *ar = malloc(cap * sizeof *ar), *x0 = calloc((size_t)n + 1, sizeof *x0);

	glp_set_obj_dir(lp, GLP_MAX);
	glp_add_cols(lp, n);
	glp_add_rows(lp, point ? n : m);
	for (int j = 1; j <= n; j++) {
		double u = (double)rng_in(rng, 1, 40);

		x0[j] = point ? (rng_in(rng, 0, 1) ? u : 0) : (double)rng_in(rng, 0, (size_t)u);
		glp_set_col_bnds(lp, j, GLP_DB, 0, u);
		glp_set_obj_coef(lp, j, (double)rng_in(rng, 0, 2) - 1);
	}
	for (int i = 1; i <= (point ? n : m); i++) {
		double b = 0;

		for (int j = 1; j <= n; j++)
			if (point ? j <= i : rng_in(rng, 0, 2) == 0) {
				ia[++nz] = i, ja[nz] = j, ar[nz] = 1;
				b += x0[j];
			}
		glp_set_row_bnds(lp, i, GLP_FX, b, b);
	}
	glp_load_matrix(lp, nz, ia, ja, ar);
	free(ia), free(ja), free(ar), free(x0);
	return lp;
}

/* The exact optimum of lp (GLPK's rational simplex). */
static double exact_optimum(glp_prob *lp)
{
	glp_smcp p;

	glp_init_smcp(&p);
	p.msg_lev = GLP_MSG_OFF;
	CHECK(glp_exact(lp, &p) == 0 && glp_get_status(lp) == GLP_OPT);
	return glp_get_obj_val(lp);
}

static void check_program(uint64_t seed, int point, int *tight)
{
	uint64_t rng = seed;
	glp_prob *lp = random_program(&rng, point);
	glp_smcp p;
	double safe, opt, offset = (double)rng_in(&rng, 0, 100);

	glp_init_smcp(&p);
	p.msg_lev = GLP_MSG_OFF;
	p.presolve = (int)(seed % 2) ? GLP_ON : GLP_OFF;
	CHECK(glp_simplex(lp, &p) == 0 && glp_get_status(lp) == GLP_OPT);
	safe = zeros_lp_safe_max(lp, offset);
	opt = exact_optimum(lp) + offset;
	CHECK(safe >= opt);
	*tight += safe <= opt + 1e-9;
	glp_delete_prob(lp);
}

/* A dual far from optimal still bounds the optimum; another shape of
 * program offers no bound. */
static void test_shapes(void)
{
	uint64_t rng = 7;
	glp_prob *lp = random_program(&rng, 0);
	double opt = exact_optimum(lp), safe;

	/* glp_exact left optimal duals: spoil them */
	for (int i = 1; i <= glp_get_num_rows(lp); i++)
		glp_set_row_stat(lp, i, GLP_BS);
	glp_std_basis(lp);
	glp_warm_up(lp);
	safe = zeros_lp_safe_max(lp, 0);
	CHECK(safe >= opt);
	glp_set_col_bnds(lp, 1, GLP_LO, 0, 0); /* unbounded above */
	CHECK(isnan(zeros_lp_safe_max(lp, 0)));
	glp_set_col_bnds(lp, 1, GLP_DB, -1, 1); /* below 0 */
	CHECK(isnan(zeros_lp_safe_max(lp, 0)));
	glp_set_col_bnds(lp, 1, GLP_DB, 0, 1);
	glp_set_row_bnds(lp, 1, GLP_UP, 0, 5); /* a row not fixed */
	CHECK(isnan(zeros_lp_safe_max(lp, 0)));
	glp_delete_prob(lp);
}

int main(void)
{
	int tight = 0, tight_point = 0;

	glp_term_out(GLP_OFF);
	for (uint64_t seed = 1; seed <= 300; seed++)
		check_program(0x5afe0000 + seed, 0, &tight);
	for (uint64_t seed = 1; seed <= 300; seed++)
		check_program(0x901e0000 + seed, 1, &tight_point);
	fprintf(stderr, "safe bounds within 1e-9 of the optimum: %d of 300, %d of 300 points\n",
		tight, tight_point);
	CHECK(tight >= 290 && tight_point >= 290);
	test_shapes();
	glp_free_env();
	return check_done();
}
