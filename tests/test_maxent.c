/* The dual of Section 6: its gradient against central finite differences
 * on random instances, the warm start, and the solver's optimality
 * conditions (y > 0 on free cells, violation under the tolerance). */
#include <stdint.h>

#include "check.h"
#include "maxent.h"
#include "metrics.h"
#include "random_table.h"

static void mine(const struct dataset *ds, uint64_t *rng, struct knowledge *k)
{
	struct miner_options mo;
	struct pm_error err = {0};

	miner_options_init(&mo);
	mo.positive = rng_in(rng, 1, 8);
	mo.negative = rng_in(rng, 0, 8);
	mo.min_support = 1;
	CHECK(miner_run(ds, &mo, k, &err) == PM_OK);
}

/* Central differences of D along every multiplier at a random λ. */
static double gradient_error(struct maxent_dual *d, uint64_t *rng)
{
	size_t r = maxent_dual_rows(d);
	double *lam = malloc((r + 1) * sizeof *lam), *g = malloc((r + 1) * sizeof *g);
	double worst = 0, h = 1e-6;

	for (size_t i = 0; i < r; i++)
		lam[i] = ((double)rng_in(rng, 0, 2000) - 1000) / 1000.0;
	maxent_dual_eval(d, lam, g);
	for (size_t i = 0; i < r; i++) {
		double keep = lam[i], fp, fm, fd;

		lam[i] = keep + h;
		fp = maxent_dual_eval(d, lam, NULL);
		lam[i] = keep - h;
		fm = maxent_dual_eval(d, lam, NULL);
		lam[i] = keep;
		fd = (fp - fm) / (2 * h);
		worst = fmax(worst, fabs(fd - g[i]) / fmax(1, fabs(g[i])));
	}
	free(lam);
	free(g);
	return worst;
}

static void instance(uint64_t seed, double *worst)
{
	uint64_t rng = seed;
	struct dataset *ds = random_dataset(&rng);
	struct knowledge k;
	struct invariants inv;
	struct pm_error err = {0};
	struct maxent_dual *d = NULL;
	uint8_t *active;

	knowledge_init(&k);
	mine(ds, &rng, &k);
	CHECK(invariants_build(ds, &k, &inv, &err) == PM_OK);
	active = malloc(inv.n_cells + 1);
	memset(active, 1, inv.n_cells + 1);
	CHECK(maxent_dual_create(&inv, active, NULL, &d) == PM_OK);
	CHECK(maxent_dual_rows(d) <= inv.n_rows);
	*worst = fmax(*worst, gradient_error(d, &rng));
	maxent_dual_destroy(d);
	free(active);
	invariants_finish(&inv);
	knowledge_finish(&k);
	dataset_destroy(ds);
}

/* At λ = 0 every cell is exp(0) = 1, so D - D(0) = 0 and the gradient is
 * the row size minus the right-hand side. */
static void test_origin(void)
{
	uint64_t rng = 42;
	struct dataset *ds = random_dataset(&rng);
	struct invariants inv;
	struct pm_error err = {0};
	struct maxent_dual *d = NULL;
	uint8_t *active;
	double *lam, *g;

	CHECK(invariants_build(ds, NULL, &inv, &err) == PM_OK);
	active = malloc(inv.n_cells + 1);
	memset(active, 1, inv.n_cells + 1);
	CHECK(maxent_dual_create(&inv, active, NULL, &d) == PM_OK);
	CHECK(maxent_dual_rows(d) == inv.n_rows);
	lam = calloc(inv.n_rows + 1, sizeof *lam);
	g = calloc(inv.n_rows + 1, sizeof *g);
	CHECK_NEAR(maxent_dual_eval(d, lam, g), 0, 0);
	for (size_t i = 0; i < inv.n_rows; i++)
		CHECK_NEAR(g[i], (double)(inv.row_off[i + 1] - inv.row_off[i]) - inv.rhs[i], 1e-12);
	free(lam);
	free(g);
	maxent_dual_destroy(d);
	free(active);
	invariants_finish(&inv);
	dataset_destroy(ds);
}

/* With no knowledge the warm start is the optimum (Theorem 5): no
 * iteration, the closed form exactly. */
static void test_solve_matches_closed_form(void)
{
	uint64_t rng = 7;
	struct dataset *ds = random_dataset(&rng);
	struct invariants inv;
	struct pm_error err = {0};
	struct solver_options o;
	struct maxent_stats st;
	uint8_t *active;
	double *y, *cf, violation;

	solver_options_init(&o);
	CHECK(invariants_build(ds, NULL, &inv, &err) == PM_OK);
	active = malloc(inv.n_cells + 1);
	memset(active, 1, inv.n_cells + 1);
	y = calloc(inv.n_cells + 1, sizeof *y);
	cf = calloc(inv.n_cells + 1, sizeof *cf);
	CHECK(maxent_solve(&inv, active, NULL, &o, NULL, y, NULL, &st, &err) == PM_OK);
	CHECK(st.converged);
	CHECK(st.iterations == 0);
	for (size_t b = 0; b < ds->n_groups; b++)
		metrics_closed_form(ds, &inv, b, cf);
	for (size_t c = 0; c < inv.n_cells; c++)
		CHECK_NEAR(y[c], cf[c], 1e-9);
	CHECK(metrics_max_violation(ds, &inv, y, &violation) == PM_OK);
	CHECK(violation <= o.tolerance);
	free(y);
	free(cf);
	free(active);
	invariants_finish(&inv);
	dataset_destroy(ds);
}

int main(void)
{
	double worst = 0;

	test_origin();
	test_solve_matches_closed_form();
	for (uint64_t seed = 1; seed <= 100; seed++)
		instance(0xd0a1 + seed, &worst);
	printf("worst relative gradient error %.3g\n", worst);
	CHECK(worst < 1e-6);
	return check_done();
}
