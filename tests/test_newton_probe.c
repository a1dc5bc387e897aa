/*
 * newton_minimize's probe (STOP_EARLY_LINEAR) and when it stops, on
 * problems of one and eight variables: one with no minimum ends by its
 * stagnation rule within a few steps, not at the iteration cap; the
 * linear-rate test on scripted violations stops on a linear rate and
 * never on a quadratic one; and newton_moving names the multipliers that
 * still move when a probe stops.
 */
#include <stdint.h>

#include "check.h"
#include "maxent.h"
#include "newton.h"
#include "newton_minimize.h"

/*
 * A probe's problem with no minimum: f(x) = 2 ln(1 + e^x) - 3x falls
 * forever while its gradient (the violation) tends to -1, and a trial
 * more than 0.5 from the prepared point is rejected (f = inf), as a wild
 * point's inner scaling is: every step is damped. With STOP_EARLY_LINEAR the
 * stagnation rule must end it within a few steps, not at the iteration
 * cap.
 */
struct ray {
	double x0, f0;
};

static double ray_f(double x)
{
	return 2 * (x > 0 ? x + log1p(exp(-x)) : log1p(exp(x))) - 3 * x;
}

static double ray_eval(void *ctx, const double *x, double *g, double *violation)
{
	struct ray *r = ctx;
	double sig = 1 / (1 + exp(-x[0]));

	if (fabs(x[0] - r->x0) > 0.5)
		return INFINITY;
	if (g)
		g[0] = 2 * sig - 3;
	*violation = fabs(2 * sig - 3);
	return ray_f(x[0]) - r->f0;
}

static void ray_prepare(void *ctx, const double *x)
{
	struct ray *r = ctx;

	r->x0 = x[0];
	r->f0 = ray_f(x[0]);
}

static void ray_hessian(void *ctx, double *out)
{
	struct ray *r = ctx;
	double sig = 1 / (1 + exp(-r->x0));

	out[0] = 2 * sig * (1 - sig);
}

/* H formed (one variable: its one block). */
static void ray_formed(void *ctx, int blocks, double *out)
{
	(void)blocks;
	ray_hessian(ctx, out);
}

static void ray_hv(void *ctx, const double *v, double *out)
{
	ray_hessian(ctx, out);
	out[0] *= v[0];
}

/* Newton with the probe's linear stop on p, a problem of one variable,
 * from x = 0 to the violation target: returns x, *stalled as
 * newton_minimize sets it. */
static double probe_1d(struct newton_problem p, double target, struct maxent_stats *st,
		       int *stalled)
{
	struct solver_options o;
	double x[1] = {0};

	p.n = 1;
	p.stop = STOP_EARLY_LINEAR;
	p.f_noise = 1e-12;
	solver_options_init(&o);
	*stalled = 0;
	CHECK(minimize(&p, &o, target, x, st, stalled) == PM_OK);
	return x[0];
}

static void test_stagnation(void)
{
	struct ray r = {0, ray_f(0)};
	struct newton_problem p = {.ctx = &r,
				   .eval = ray_eval,
				   .prepare = ray_prepare,
				   .diag = ray_hessian,
				   .hv = ray_hv,
				   .hessian = ray_formed};
	struct maxent_stats st = {0};
	int stalled;
	double x = probe_1d(p, 1e-9, &st, &stalled);

	CHECK(stalled && st.iterations <= 12 && x > 1);
}

/*
 * The probe's linear-rate test on scripted violations: f falls by 1 on
 * every full step (gradient -1, H = 1, the step 1), the violation after
 * step k is script[k]. Ratios 0.53, 0.26, 0.245, 0.50, 0.39, ...: their
 * geometric mean over 4 steps is above 0.25, so the probe stops after
 * step 4 (one ratio under 0.25 once reset a step-by-step count, and it
 * went on to step 7); quadratic ratios (0.3, 0.1, 0.01, ...) never stop.
 */
struct script {
	const double *viol;
	int n, at;
	double x0;
};

static double script_eval(void *ctx, const double *x, double *g, double *violation)
{
	struct script *s = ctx;

	if (g)
		g[0] = -1;
	*violation = s->at < s->n ? s->viol[s->at] : 0;
	s->at++;
	return -(x[0] - s->x0);
}

static void script_prepare(void *ctx, const double *x)
{
	((struct script *)ctx)->x0 = x[0];
}

static void script_hessian(void *ctx, double *out)
{
	(void)ctx;
	out[0] = 1;
}

static void script_formed(void *ctx, int blocks, double *out)
{
	(void)blocks;
	script_hessian(ctx, out);
}

static void script_hv(void *ctx, const double *v, double *out)
{
	(void)ctx;
	out[0] = v[0];
}

static int script_run(const double *ratio, int n, int *iterations)
{
	double viol[16] = {1};
	struct script s = {viol, n + 1, 0, 0};
	struct newton_problem p = {.ctx = &s,
				   .eval = script_eval,
				   .prepare = script_prepare,
				   .diag = script_hessian,
				   .hv = script_hv,
				   .hessian = script_formed};
	struct maxent_stats st = {0};
	int stalled;

	for (int k = 0; k < n; k++)
		viol[k + 1] = viol[k] * ratio[k];
	probe_1d(p, 1e-13, &st, &stalled);
	*iterations = st.iterations;
	return stalled;
}

static void test_linear_rate(void)
{
	static const double linear[] = {0.53, 0.26, 0.245, 0.50, 0.39, 0.39, 0.39, 0.39, 0.39};
	static const double quadratic[] = {0.3, 0.1, 0.01, 1e-4, 1e-8, 1e-8};
	int it;

	CHECK(script_run(linear, 9, &it) && it == 4);
	CHECK(!script_run(quadratic, 6, &it) && it == 5); /* 3e-14 after 5 */
}

/*
 * Which multipliers still move, and when a probe may stop: 8 variables,
 * H = I, the violation falling by 0.39 per full step (linear), and the
 * gradient at evaluation k moving the first moving[k] variables by 1, the
 * others by 0.01. While more than half of them move and fewer at each
 * step (Newton's first steps from far away), the probe goes on; once
 * their number stays put, or at most half move, it stops, and
 * newton_moving names those still moving.
 */
struct wide {
	const int *moving;
	int at;
	double x0[8], viol;
};

static double wide_eval(void *ctx, const double *x, double *g, double *violation)
{
	struct wide *w = ctx;
	double f = 0;

	for (int j = 0; j < 8; j++) {
		double gj = j < w->moving[w->at] ? -1 : -0.01;

		f += gj * (x[j] - w->x0[j]);
		if (g)
			g[j] = gj;
	}
	*violation = pow(0.39, w->at);
	w->at++;
	return f;
}

static void wide_prepare(void *ctx, const double *x)
{
	memcpy(((struct wide *)ctx)->x0, x, 8 * sizeof *x);
}

static void wide_diag(void *ctx, double *out)
{
	(void)ctx;
	for (int j = 0; j < 8; j++)
		out[j] = 1;
}

static void wide_hv(void *ctx, const double *v, double *out)
{
	(void)ctx;
	memcpy(out, v, 8 * sizeof *v);
}

static int wide_run(const int *moving, uint8_t *rows)
{
	static const uint32_t var_row[8] = {0, 1, 2, 3, 4, 5, 6, 7};
	struct wide w = {moving, 0, {0}, 1};
	struct newton_problem p = {.ctx = &w,
				   .n = 8,
				   .eval = wide_eval,
				   .prepare = wide_prepare,
				   .diag = wide_diag,
				   .hv = wide_hv,
				   .stop = STOP_EARLY_LINEAR,
				   .f_noise = 1e-12};
	struct solver_options o;
	struct maxent_stats st = {0};
	struct newton *nw;
	double x[8] = {0};
	int stalled = 0;

	solver_options_init(&o);
	CHECK(newton_create(&p, &nw) == PM_OK);
	CHECK(newton_minimize(nw, o.max_iterations, 1e-13, x, &st, &stalled) == PM_OK && stalled);
	memset(rows, 0, 8);
	newton_moving(nw, var_row, rows);
	newton_destroy(nw);
	return st.iterations;
}

static void test_moving(void)
{
	static const int all[] = {8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8};
	static const int fewer[] = {8, 7, 6, 5, 5, 5, 5, 5, 5, 5, 5, 5};
	static const int half[] = {8, 7, 6, 5, 4, 3, 3, 3, 3, 3, 3, 3};
	uint8_t rows[8];

	/* the same 8 from the second step on: stops at the linear test's 4 */
	CHECK(wide_run(all, rows) == 4 && rows[0] && rows[7]);
	/* fewer at each of the first 4 steps: on until their number stays */
	CHECK(wide_run(fewer, rows) == 5 && rows[4] && !rows[5]);
	/* ... or until at most half move: the 4 of step 5 */
	CHECK(wide_run(half, rows) == 5 && rows[3] && !rows[4]);
}

int main(void)
{
	test_stagnation();
	test_linear_rate();
	test_moving();
	return check_done();
}
