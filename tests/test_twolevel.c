/*
 * The two-level dual's outer problem (twolevel.c, twolevel_hessian.c) on
 * random tables with mined knowledge and their exact forced zeros:
 *  - H formed (one pass over the pairs of open rows per bucket, once per
 *    pattern of rows with the same cells) against its columns from
 *    products H e_k, and diag(H) against its diagonal;
 *  - H v against central differences of the gradient;
 *  - an evaluation warm-started from the first-order prediction of the
 *    inner log-scalings against a fresh one from zero;
 *  - Newton with H formed and factored against Newton on products
 *    (Jacobi-preconditioned CG): the same estimate.
 * Tables of 60 to 400 records in buckets of 2 to 6, so that the larger
 * ones run on two parts of the thread pool; half of them repeat a few
 * rules, which makes H singular.
 */
#include <stdint.h>

#include "check.h"
#include "instance.h"
#include "maxent.h"
#include "newton.h"
#include "scaling.h"
#include "schur.h"
#include "twolevel.h"

#define N_TABLES 40
#define SEED	 UINT64_C(19700101)

/*
 * A flat direction: rows that propagation resolved (sums of invariant
 * rows once the zeros are in) kept open. Moving one of their multipliers
 * changes no y, the inner scalings absorb it, so nothing but the kernel
 * cap stops a point far along it: past SCALING_CAP the evaluation must
 * fail, as capped the kernel is not G's (Newton once took such points and
 * returned a feasible point that was not the maximum-entropy one). 1 if
 * the instance had such a row.
 */
static int check_flat(const struct instance *in)
{
	uint8_t *none = calloc(in->inv.n_rows + 1, 1), *coupled = calloc(in->inv.n_groups + 1, 1);
	double *y = calloc(in->inv.n_cells + 1, sizeof *y), *mu = NULL, viol;
	struct twolevel t = {0};
	int found = 0;

	for (size_t b = 0; coupled && b < in->inv.n_groups; b++)
		coupled[b] = (uint8_t)invariants_touched(&in->inv, b);
	if (none && coupled && y &&
	    twolevel_init(&t, in->ds, &in->inv, in->zero, none, coupled, 1, y) == PM_OK &&
	    (mu = calloc(t.r + 1, sizeof *mu))) {
		twolevel_eval(&t, mu, NULL, &viol);
		twolevel_prepare(&t, mu);
		for (size_t k = 0; !found && k < t.r; k++) {
			if (!in->implied[t.row[k]] || !(in->inv.rhs[t.row[k]] > 0))
				continue; /* resolved, with free cells */
			mu[k] = 1.5 * SCALING_CAP;
			CHECK(!isfinite(twolevel_eval(&t, mu, NULL, &viol)));
			found = 1;
		}
	}
	twolevel_finish(&t);
	free(mu);
	free(none);
	free(coupled);
	free(y);
	return found;
}

static double rnd(uint64_t *rng)
{
	return (double)(rng_next(rng) >> 11) / 9007199254740992.0;
}

/* max |a - b| over n, relative to max(1, max |a|). */
static double rel_diff(const double *a, const double *b, size_t n)
{
	double d = 0, m = 1;

	for (size_t i = 0; i < n; i++) {
		d = fmax(d, fabs(a[i] - b[i]));
		m = fmax(m, fabs(a[i]));
	}
	return d / m;
}

/* Null pivots of the L D L^T of H (lower triangle h, r x r). */
static size_t null_pivots(const double *h, size_t r)
{
	double *f = malloc(r * r * sizeof *f + 1), *w = malloc(schur_dense_work(r) * sizeof *w + 1);
	size_t n = 0;

	memcpy(f, h, r * r * sizeof *f);
	schur_dense_factor(f, r, SCHUR_PIVOT_EPS, w, NULL);
	for (size_t k = 0; k < r; k++)
		n += f[k * r + k] == 0;
	free(f);
	free(w);
	return n;
}

static size_t n_null;

/* The blocks (twolevel_hessian_form with blocks) against H whole h, to
 * the bit (the same fixed-point sums); each block's rows share their
 * first cell's SA value, in ascending order, and no block is longer
 * than TWOLEVEL_BLOCK_ROWS. */
static size_t n_blocks;

static int same_blocks(struct twolevel *t, const double *h)
{
	size_t r = t->r, sq = 0;
	double *hb = calloc(r * r + 1, sizeof *hb);
	int same = hb != NULL;

	twolevel_hessian_form(t, 1, hb);
	n_blocks += t->nblk;
	for (size_t b = 0; same && b < t->nblk; b++) {
		size_t lo = t->blk_off[b], n = t->blk_off[b + 1] - lo;

		same &= n > 0 && n <= TWOLEVEL_BLOCK_ROWS;
		for (size_t i = 0; i < n; i++) {
			uint32_t
			    key =
				t->inv->cell_sa[t->inv->row_cell[t->inv->row_off[t->row[lo + i]]]],
			    first = t->inv->cell_sa[t->inv->row_cell[t->inv->row_off[t->row[lo]]]];

			same &= key == first && t->blk_of[lo + i] == b;
			for (size_t j = 0; j <= i; j++)
				same &= hb[sq + i * n + j] == h[(lo + i) * r + lo + j];
		}
		same &= b == 0 ||
			t->inv->cell_sa[t->inv->row_cell[t->inv->row_off[t->row[lo]]]] >=
			    t->inv->cell_sa[t->inv->row_cell[t->inv->row_off[t->row[lo - 1]]]];
		sq += n * n;
	}
	free(hb);
	return same;
}

/* H formed against H e_k and diag(H), at the prepared point. */
static double check_formed(struct twolevel *t)
{
	size_t r = t->r;
	double *h = calloc(r * r, sizeof *h), *e = calloc(r, sizeof *e);
	double *col = calloc(r, sizeof *col), *dg = calloc(r, sizeof *dg), worst = 0;

	twolevel_hessian_form(t, 0, h);
	twolevel_hessian_diag(t, dg);
	n_null += null_pivots(h, r);
	CHECK(same_blocks(t, h));
	for (size_t k = 0; k < r; k++) {
		double *ref = calloc(r, sizeof *ref);

		e[k] = 1;
		twolevel_hessian_apply(t, e, col);
		e[k] = 0;
		for (size_t i = 0; i < r; i++)
			ref[i] = i >= k ? h[i * r + k] : h[k * r + i];
		worst = fmax(worst, rel_diff(col, ref, r));
		worst = fmax(worst, fabs(dg[k] - h[k * r + k]) / fmax(1, fabs(dg[k])));
		free(ref);
	}
	free(h);
	free(e);
	free(col);
	free(dg);
	return worst;
}

/* H formed at μ by t and by a problem on the other number of threads
 * (1 or 2) whose pairs of rows all go through the clamped conversion
 * (t's through the unclamped one where they fit, as a rule here): the
 * fixed-point sums make them the same to the bit. */
static int same_formed(struct twolevel *t, const struct instance *in, const double *mu)
{
	struct twolevel u;
	size_t r = t->r;
	double *h = calloc(r * r + 1, sizeof *h), *h1 = calloc(r * r + 1, sizeof *h1), viol;
	int same = 0;

	if (!twolevel_init(&u, in->ds, &in->inv, in->zero, in->implied, in->coupled,
			   t->parts > 1 ? 1 : 2, in->y)) {
		u.clamp_all = 1;
		twolevel_eval(&u, mu, NULL, &viol);
		twolevel_prepare(&u, mu);
		twolevel_hessian_form(t, 0, h);
		twolevel_hessian_form(&u, 0, h1);
		same = u.dense && h && h1;
		for (size_t i = 0; same && i < r; i++)
			same = !memcmp(h + i * r, h1 + i * r, (i + 1) * sizeof *h);
	}
	twolevel_finish(&u);
	free(h);
	free(h1);
	return same;
}

/* H v against (g(μ + εv) - g(μ - εv)) / 2ε, relative; leaves the problem
 * prepared at μ. */
static double check_differences(struct twolevel *t, const double *mu, uint64_t *rng)
{
	size_t r = t->r;
	double *v = calloc(r, sizeof *v), *m1 = calloc(r, sizeof *m1), *hv = calloc(r, sizeof *hv);
	double *gp = calloc(r, sizeof *gp), *gm = calloc(r, sizeof *gm), eps = 1e-5, viol, worst;

	for (size_t k = 0; k < r; k++)
		v[k] = 2 * rnd(rng) - 1;
	twolevel_hessian_apply(t, v, hv);
	for (size_t k = 0; k < r; k++)
		m1[k] = mu[k] + eps * v[k];
	twolevel_eval(t, m1, gp, &viol);
	for (size_t k = 0; k < r; k++)
		m1[k] = mu[k] - eps * v[k];
	twolevel_eval(t, m1, gm, &viol);
	for (size_t k = 0; k < r; k++)
		gp[k] = (gp[k] - gm[k]) / (2 * eps);
	worst = rel_diff(hv, gp, r);
	free(v);
	free(m1);
	free(hv);
	free(gp);
	free(gm);
	return worst;
}

/*
 * Wild multipliers (a line search's overshoot): an evaluation either
 * reports f = inf, or every coupled bucket's inner solve is accurate (its
 * rows and columns within 1e-6 records of the counts). *rejected counts
 * the infinite ones; half the points are only moderately far.
 */
static void check_wild(struct twolevel *t, const struct instance *in, uint64_t *rng,
		       size_t *rejected)
{
	double *m1 = calloc(t->r + 1, sizeof *m1), viol, f, size = rng_in(rng, 0, 1) ? 400 : 8;

	for (size_t k = 0; k < t->r; k++)
		m1[k] = size * (2 * rnd(rng) - 1);
	f = twolevel_eval(t, m1, NULL, &viol);
	*rejected += !isfinite(f);
	for (size_t k = 0; isfinite(f) && k < t->nb; k++) {
		size_t b = t->bk[k], off, g, h;

		twolevel_shape(t, k, &off, &g, &h);
		for (size_t i = 0; i < g; i++) {
			double sum = 0;

			for (size_t j = 0; j < h; j++)
				sum += t->y[off + i * h + j];
			CHECK(fabs(sum - invariants_qi_count(&in->inv, b, i)) <= 1e-6);
		}
		for (size_t j = 0; j < h; j++) {
			double sum = 0;

			for (size_t i = 0; i < g; i++)
				sum += t->y[off + i * h + j];
			CHECK(fabs(sum - invariants_sa_count(&in->inv, b, j)) <= 1e-6);
		}
	}
	free(m1);
}

/*
 * G and its gradient at μ + δ from the prepared point μ (inner solves
 * started from the prediction) against a fresh problem evaluated at μ and
 * at μ + δ (inner solves from zero): the same numbers to rounding.
 */
static double check_prediction(struct twolevel *t, struct instance *in, const double *mu,
			       uint64_t *rng)
{
	struct twolevel fresh;
	size_t r = t->r;
	double *m1 = calloc(r, sizeof *m1), *g1 = calloc(r, sizeof *g1),
	       *g2 = calloc(r, sizeof *g2);
	double f1, f2, f0, viol, worst = 1;

	for (size_t k = 0; k < r; k++)
		m1[k] = mu[k] + 0.3 * (2 * rnd(rng) - 1);
	f1 = twolevel_eval(t, m1, g1, &viol);
	if (twolevel_init(&fresh, in->ds, &in->inv, in->zero, in->implied, in->coupled, 1, in->y) ==
	    PM_OK) {
		f0 = twolevel_eval(&fresh, mu, NULL, &viol);
		f2 = twolevel_eval(&fresh, m1, g2, &viol);
		worst = fmax(rel_diff(g1, g2, r), fabs(f1 - (f2 - f0)) / fmax(1, fabs(f1)));
	}
	twolevel_finish(&fresh);
	free(m1);
	free(g1);
	free(g2);
	return worst;
}

/* How the outer problem is solved from μ = 0 (solve()). */
enum method {
	FORMED,	  /* Newton, H formed and factored */
	PRODUCTS, /* Newton, CG on products H v */
	ADAPTIVE, /* Newton, H formed, inner solves loose far from the optimum */
	LBFGS	  /* the fallback of twolevel_run */
};

/* The outer problem solved from μ = 0 by method m; y gets the estimate.
 * Returns whether it reached the target. */
static int solve(struct instance *in, enum method m, int threads, double *y)
{
	struct twolevel t;
	struct solver_options o;
	struct maxent_stats st = {0};
	struct newton_problem np;
	struct newton *nw = NULL;
	double *x, target = m == LBFGS ? 1e-9 : 1e-10;
	int stalled = 0, ok = 0;

	solver_options_init(&o);
	if (twolevel_init(&t, in->ds, &in->inv, in->zero, in->implied, in->coupled, threads, y) ||
	    !(x = calloc(t.r + 1, sizeof *x))) {
		twolevel_finish(&t);
		return 0;
	}
	twolevel_problem(&t, m != PRODUCTS, &np);
	t.loosest = m == ADAPTIVE ? TWOLEVEL_LOOSE : 0;
	t.outer = target;
	if (m == LBFGS) {
		o.max_iterations = 5000;
		if (twolevel_lbfgs(&t, &o, target, &st) == PM_OK)
			ok = st.max_violation <= target;
	} else if (newton_create(&np, &nw) == PM_OK &&
		   newton_minimize(nw, o.max_iterations, target, x, &st, &stalled) == PM_OK) {
		ok = st.max_violation <= target;
	}
	newton_destroy(nw);
	twolevel_store(&t);
	free(x);
	twolevel_finish(&t);
	return ok;
}

struct worst {
	double formed, differences, prediction, methods, adaptive, lbfgs;
	int instances, dense, two_parts, solved, solved_lbfgs;
	size_t shared;	 /* open rows whose cells in a bucket repeat another's */
	size_t rejected; /* wild evaluations reported infinite */
	int flat;	 /* instances checked along a flat direction */
};

static void run_instance(uint64_t seed, struct worst *w)
{
	uint64_t rng = seed;
	struct instance in;
	struct twolevel t;
	double *mu = NULL, viol;
	int threads = (int)rng_in(&rng, 1, 2);

	if (!instance_make(&in, &rng) ||
	    twolevel_init(&t, in.ds, &in.inv, in.zero, in.implied, in.coupled, threads, in.y)) {
		CHECK(0);
		instance_free(&in);
		return;
	}
	w->instances++;
	w->flat += check_flat(&in);
	if (t.r > 0 && (mu = calloc(t.r, sizeof *mu))) {
		for (size_t k = 0; k < t.r; k++)
			mu[k] = 2 * rnd(&rng) - 1;
		twolevel_eval(&t, mu, NULL, &viol);
		twolevel_prepare(&t, mu);
		w->dense += t.dense;
		w->two_parts += t.parts > 1;
		w->shared += twolevel_hessian_shared(&t);
		if (t.dense) {
			w->formed = fmax(w->formed, check_formed(&t));
			CHECK(same_formed(&t, &in, mu));
		}
		w->differences = fmax(w->differences, check_differences(&t, mu, &rng));
		twolevel_eval(&t, mu, NULL, &viol);
		twolevel_prepare(&t, mu);
		w->prediction = fmax(w->prediction, check_prediction(&t, &in, mu, &rng));
		check_wild(&t, &in, &rng, &w->rejected);
	}
	twolevel_finish(&t);
	if (mu) {
		double *y1 = calloc(in.inv.n_cells + 1, sizeof *y1);
		int a = solve(&in, FORMED, threads, in.y),
		    b = y1 && solve(&in, PRODUCTS, threads, y1);

		CHECK(a == b);
		w->solved += a && b;
		if (a && b)
			w->methods = fmax(w->methods, rel_diff(in.y, y1, in.inv.n_cells));
		if (a && y1) { /* the looser inner solves end at the same point */
			CHECK(solve(&in, ADAPTIVE, threads, y1));
			w->adaptive = fmax(w->adaptive, rel_diff(in.y, y1, in.inv.n_cells));
		}
		if (a && y1 && solve(&in, LBFGS, threads, y1)) {
			w->solved_lbfgs++;
			w->lbfgs = fmax(w->lbfgs, rel_diff(in.y, y1, in.inv.n_cells));
		}
		free(y1);
	}
	free(mu);
	instance_free(&in);
}

/*
 * The dual with interval rows (mined rules made vague): G's gradient, s -
 * mid on an interval's row, against central differences of G itself at
 * random points and directions (the L1 terms are Newton's, not G's);
 * then Newton, H formed and on products, to the same estimate, every
 * interval row within its interval.
 */
static void test_intervals(void)
{
	static const struct instance_knobs kn = {{5, 30}, {1, 2}, 0.1};
	double worst = 0, methods = 0;
	int intervals = 0;

	for (uint64_t i = 0; i < 12; i++) {
		uint64_t rng = SEED * 7000003 + i;
		struct instance in;
		struct twolevel t;
		double *mu, *g, *v, viol;

		CHECK(instance_make_k(&in, &rng, &kn));
		CHECK(twolevel_init(&t, in.ds, &in.inv, in.zero, in.implied, in.coupled, 1, in.y) ==
		      PM_OK);
		mu = calloc(t.r + 1, sizeof *mu), g = calloc(t.r + 1, sizeof *g);
		v = calloc(t.r + 1, sizeof *v);
		intervals += t.half != NULL;
		for (size_t k = 0; k < t.r; k++)
			mu[k] = 2 * rnd(&rng) - 1, v[k] = 2 * rnd(&rng) - 1;
		if (t.r) {
			double h = 1e-5, fp, fm, gv = 0;

			twolevel_eval(&t, mu, g, &viol);
			for (size_t k = 0; k < t.r; k++)
				gv += g[k] * v[k], mu[k] += h * v[k];
			fp = twolevel_eval(&t, mu, NULL, &viol);
			for (size_t k = 0; k < t.r; k++)
				mu[k] -= 2 * h * v[k];
			fm = twolevel_eval(&t, mu, NULL, &viol);
			worst = fmax(worst, fabs((fp - fm) / (2 * h) - gv) / fmax(1, fabs(gv)));
		}
		twolevel_finish(&t);
		{
			double *y1 = calloc(in.inv.n_cells + 1, sizeof *y1);

			CHECK(solve(&in, FORMED, 1, in.y) && solve(&in, PRODUCTS, 1, y1));
			methods = fmax(methods, rel_diff(in.y, y1, in.inv.n_cells));
			for (size_t r = 0; r < in.inv.n_rows; r++) {
				double s = 0;

				for (size_t e = in.inv.row_off[r]; e < in.inv.row_off[r + 1]; e++)
					s += in.y[in.inv.row_cell[e]];
				CHECK(!invariants_interval(&in.inv, r) ||
				      (s >= in.inv.rhs[r] - 1e-8 && s <= in.inv.hi[r] + 1e-8));
			}
			free(y1);
		}
		free(mu), free(g), free(v);
		instance_free(&in);
	}
	printf("intervals: %d of 12 instances with some; worst gradient vs differences %.3g, "
	       "formed vs products Newton %.3g\n",
	       intervals, worst, methods);
	CHECK(intervals >= 10 && worst <= 1e-6 && methods <= 1e-8);
}

int main(void)
{
	struct worst w = {0};

	test_intervals();

	for (uint64_t i = 0; i < N_TABLES; i++)
		run_instance(SEED * 1000003 + i, &w);
	printf("%zu blocks; ", n_blocks);
	printf("%d instances (%d with H formed, %zu null pivots, %zu rows sharing a pattern, %d "
	       "on two parts, %d solved both ways); worst: H formed vs products %.3g, H v vs "
	       "differences %.3g, predicted vs fresh start %.3g, formed vs products Newton %.3g, "
	       "loose inner solves %.3g, L-BFGS (%d solved) %.3g\n",
	       w.instances, w.dense, n_null, w.shared, w.two_parts, w.solved, w.formed,
	       w.differences, w.prediction, w.methods, w.adaptive, w.solved_lbfgs, w.lbfgs);
	CHECK(w.instances == N_TABLES);
	CHECK(w.dense > N_TABLES / 2);
	CHECK(w.two_parts > 0);
	CHECK(w.shared > 0);
	CHECK(n_null > 0);
	CHECK(n_blocks > (size_t)w.dense); /* some instances had several */
	CHECK(w.solved > N_TABLES / 2);
	CHECK(w.formed <= 1e-11);
	CHECK(w.differences <= 1e-6);
	CHECK(w.prediction <= 1e-10);
	CHECK(w.methods <= 1e-8);
	CHECK(w.adaptive <= 1e-8);
	CHECK(w.solved_lbfgs > w.solved / 2);
	CHECK(w.lbfgs <= 1e-6);
	CHECK(w.rejected > 0 && w.rejected < (size_t)w.instances);
	CHECK(w.flat > 0);
	fprintf(stderr, "wild multipliers: %zu of %d evaluations rejected; %d flat directions\n",
		w.rejected, w.instances, w.flat);
	return check_done();
}
