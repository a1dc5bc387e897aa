/*
 * newton_minimize where H is singular or its products lose curvature:
 * the row found dependent at the first factorization never moves
 * (newton_problem.null); the factor kept across steps and made anew
 * where its PCG breaks down, of H whole or of its blocks, in a solve, in
 * a probe, in a probe whose multiplier runs off, and in a last chance
 * (STOP_EARLY_STALL).
 */
#include <stdint.h>

#include "check.h"
#include "maxent.h"
#include "newton.h"
#include "newton_minimize.h"

/*
 * f(x) = e^(x0 + x1) + e^(x0 - x1) + e^(x2 + x3) - t . x: x2 and x3 only
 * ever appear summed, so H is singular along x2 - x3. Its formed H gets
 * 1e-10 of noise on that pivot (rounding where forming cancelled: above
 * SCHUR_PIVOT_EPS), and t3 differs from t2 by 1e-9 (the gradient's
 * rounding). Row 3 is found dependent at the first factorization and
 * never moves; kept, the noise pivot sends x2 and x3 off by about
 * 1e-9 / 1e-10 along the null direction.
 */
struct dup {
	double t[4], base, a, b, c; /* exponentials at the prepared point */
	double noise;		    /* test_breakdown's, in the products */
	int forms, wholes;	    /* H formed, its blocks or whole */
	/* > 0: a trial farther than this from the prepared point x0 is
	 * rejected (f = inf), as a wild point's inner scaling is */
	double reach, x0[4];
};

static double dup_f(const double *x, const double *t, double *g, double *viol)
{
	double a = exp(x[0] + x[1]), b = exp(x[0] - x[1]), c = exp(x[2] + x[3]);
	double gg[4] = {a + b - t[0], a - b - t[1], c - t[2], c - t[3]};

	*viol = 0;
	for (int i = 0; i < 4; i++) {
		*viol = fmax(*viol, fabs(gg[i]));
		if (g)
			g[i] = gg[i];
	}
	return a + b + c - t[0] * x[0] - t[1] * x[1] - t[2] * x[2] - t[3] * x[3];
}

static double dup_eval(void *ctx, const double *x, double *g, double *viol)
{
	struct dup *d = ctx;

	for (int i = 0; d->reach > 0 && i < 4; i++)
		if (fabs(x[i] - d->x0[i]) > d->reach)
			return INFINITY;
	return dup_f(x, d->t, g, viol) - d->base;
}

static void dup_prepare(void *ctx, const double *x)
{
	struct dup *d = ctx;
	double v;

	d->base = dup_f(x, d->t, NULL, &v);
	memcpy(d->x0, x, sizeof d->x0);
	d->a = exp(x[0] + x[1]);
	d->b = exp(x[0] - x[1]);
	d->c = exp(x[2] + x[3]);
}

/* H whole, or its blocks {x0, x1} and {x2, x3} (H has no other entry). */
static void dup_hessian(void *ctx, int blocks, double *h)
{
	struct dup *d = ctx;

	d->forms++;
	d->wholes += !blocks;
	memset(h, 0, 16 * sizeof *h);
	if (blocks) {
		h[0] = d->a + d->b;
		h[2] = d->a - d->b, h[3] = d->a + d->b;
		h[4] = d->c;
		h[6] = d->c, h[7] = d->c * (1 + 1e-10);
		return;
	}
	h[0] = d->a + d->b;
	h[4] = d->a - d->b, h[5] = d->a + d->b;
	h[10] = d->c;
	h[14] = d->c, h[15] = d->c * (1 + 1e-10);
}

static void dup_diag(void *ctx, double *out)
{
	struct dup *d = ctx;

	out[0] = out[1] = d->a + d->b;
	out[2] = out[3] = d->c;
}

static void dup_hv(void *ctx, const double *v, double *out)
{
	struct dup *d = ctx;

	out[0] = (d->a + d->b) * v[0] + (d->a - d->b) * v[1];
	out[1] = (d->a - d->b) * v[0] + (d->a + d->b) * v[1];
	out[2] = out[3] = d->c * (v[2] + v[3]);
	out[0] -= d->noise * d->a * (v[0] + v[1]);
	out[1] -= d->noise * d->a * (v[0] + v[1]);
}

/* The problem of d, H formed from the first step. */
static struct newton_problem dup_problem(struct dup *d, struct newton_null *null)
{
	return (struct newton_problem){.ctx = d,
				       .n = 4,
				       .eval = dup_eval,
				       .prepare = dup_prepare,
				       .diag = dup_diag,
				       .hv = dup_hv,
				       .hessian = dup_hessian,
				       .formed = 1,
				       .f_noise = 1e-14,
				       .null = null};
}

/* One run on the dup problem from x = 0: x0 = 0.3, x1 = -0.2, x2 + x3 =
 * 0.5, t3 off t2 by skew, the products' noise; p's fields to change
 * before dup_solve. */
struct dup_run {
	struct dup d;
	uint8_t row[4];
	struct newton_null null;
	struct newton_problem p;
	struct maxent_stats st;
	double x[4];
	int stalled;
};

static void dup_init(struct dup_run *u, double noise, double skew)
{
	double a = exp(0.1), b = exp(0.5);

	memset(u, 0, sizeof *u);
	u->d.noise = noise;
	u->null.row = u->row;
	u->p = dup_problem(&u->d, &u->null);
	u->d.t[0] = a + b, u->d.t[1] = a - b;
	u->d.t[2] = exp(0.5), u->d.t[3] = exp(0.5) + skew;
}

static enum pm_status dup_solve(struct dup_run *u, double target)
{
	struct solver_options o;

	solver_options_init(&o);
	return minimize(&u->p, &o, target, u->x, &u->st, &u->stalled);
}

static void test_dependent(void)
{
	struct dup_run u;

	dup_init(&u, 0, 1e-9);
	CHECK(dup_solve(&u, 2e-9) == PM_OK);
	CHECK(u.null.known && !u.row[0] && !u.row[1] && !u.row[2] && u.row[3]);
	CHECK(u.x[3] == 0 && fabs(u.x[2] - 0.5) < 1e-9);
	CHECK(fabs(u.x[0] - 0.3) < 1e-9 && fabs(u.x[1] + 0.2) < 1e-9);
}

/*
 * The factor kept across steps, and made anew where its PCG breaks down.
 * With exact products, one H formed at the start serves every later step
 * (a budget no direction reaches). With products that lose the curvature
 * along x0 + x1 (as rounding does along a near null direction of a large
 * H: here it comes out negative), the old factor's PCG breaks down; the
 * direction then comes from a factor made at the current point, and
 * Newton still converges in a few steps.
 */
static void test_breakdown(void)
{
	for (int noisy = 0; noisy < 2; noisy++) {
		struct dup_run u;

		dup_init(&u, noisy ? 2 : 0, 0);
		u.p.cg_budget = 1000;
		CHECK(dup_solve(&u, 1e-12) == PM_OK);
		CHECK(!u.stalled && u.st.max_violation <= 1e-12 && u.st.iterations <= 12);
		CHECK(fabs(u.x[0] - 0.3) < 1e-9 && fabs(u.x[1] + 0.2) < 1e-9);
		CHECK(noisy ? u.d.forms >= 2 && u.d.forms <= u.st.iterations : u.d.forms == 1);
	}
}

/*
 * The same breakdown on H's blocks, which Newton reaches first (Jacobi
 * for one direction, then the blocks): the factor is made anew of H
 * whole, in a probe (STOP_EARLY_LINEAR) too, as no multiplier runs off here
 * (the breakdown is the products' rounding, which H whole ends): the
 * probe converges like the solve.
 */
static void test_block_breakdown(void)
{
	static const size_t halves[] = {0, 2, 4};

	for (int probe = 0; probe < 2; probe++) {
		struct dup_run u;

		dup_init(&u, 2, 0);
		u.p.formed = 0, u.p.n_blocks = 2, u.p.block_off = halves, u.p.whole = 1;
		u.p.block_budget = 0, u.p.cg_budget = 1000,
		u.p.stop = probe ? STOP_EARLY_LINEAR : STOP_EARLY_NONE;
		CHECK(dup_solve(&u, 1e-12) == PM_OK);
		CHECK(u.d.forms >= 1);
		CHECK(u.d.wholes >= 1 && !u.stalled && u.st.max_violation <= 1e-12);
		CHECK(fabs(u.x[0] - 0.3) < 1e-9 && fabs(u.x[1] + 0.2) < 1e-9);
	}
}

/*
 * A probe whose multiplier runs off: with t1 = t0, e^(x0 - x1) is
 * forced to 0, x0 - x1 falls by about one per step, and the products'
 * noise breaks CG on the blocks down. While that multiplier moves, the
 * factor is made anew of the blocks, never of H whole (whose factor
 * would not help along the runaway); the probe stops on linear
 * convergence.
 */
static void test_runaway_breakdown(void)
{
	static const size_t halves[] = {0, 2, 4};
	struct dup_run u;

	dup_init(&u, 3, 0);
	u.d.t[1] = u.d.t[0];
	u.p.formed = 0, u.p.n_blocks = 2, u.p.block_off = halves, u.p.whole = 1;
	u.p.block_budget = 0, u.p.cg_budget = 1000, u.p.stop = STOP_EARLY_LINEAR;
	CHECK(dup_solve(&u, 1e-12) == PM_OK);
	CHECK(u.stalled && u.d.forms >= 2 && u.d.wholes == 0);
	CHECK(u.x[0] - u.x[1] < -3);
}

/*
 * The same runaway as a last chance (STOP_EARLY_STALL): no stop on
 * linear convergence, so it runs to the target (e^(x0 - x1) below it,
 * shrinking by e per full step), on the blocks all the way, each step
 * past the first ones more than halving the violation. With every step
 * damped to 0.5 (a factor of e^-0.5 per step: the blocks no longer halve
 * it), a breakdown makes H whole instead, and it still converges.
 */
static void test_last_chance(void)
{
	static const size_t halves[] = {0, 2, 4};

	for (int damped = 0; damped < 2; damped++) {
		struct dup_run u;

		dup_init(&u, 3, 0);
		u.d.t[1] = u.d.t[0];
		u.d.reach = damped ? 0.5 : 0;
		u.p.formed = 0, u.p.n_blocks = 2, u.p.block_off = halves, u.p.whole = 1;
		u.p.block_budget = 0, u.p.cg_budget = 1000, u.p.stop = STOP_EARLY_STALL;
		CHECK(dup_solve(&u, 1e-10) == PM_OK);
		CHECK(!u.stalled && u.st.max_violation <= 1e-10 && u.d.forms >= 2);
		CHECK(damped ? u.d.wholes >= 1 : u.d.wholes == 0);
		CHECK(u.x[0] - u.x[1] < -15);
		CHECK(fabs(u.x[0] + u.x[1] - log(u.d.t[0])) < 1e-9);
	}
}

int main(void)
{
	test_dependent();
	test_breakdown();
	test_block_breakdown();
	test_runaway_breakdown();
	test_last_chance();
	return check_done();
}
