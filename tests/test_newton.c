/*
 * newton_minimize on a smooth convex function with a known minimum,
 *
 *     f(x) = Σ_j exp((B x)_j) - t . x,   t = B^T exp(B x*),
 *
 * B sparse (the identity, then rows of three entries) so f is strictly
 * convex with its minimum at x*: with H formed and n above the size of a
 * panel of the factorization (serial and on two parts), with H products
 * alone (CG), and with CG until a direction costs more products than the
 * problem's budget, then H formed. Each must reach x* to 1e-8; a factor
 * of the blocks is made anew only where the steps left can pay for it.
 * Then a singular H whose null pivot comes out as noise: the row found
 * dependent at the first factorization never moves.
 */
#include <stdint.h>

#include "check.h"
#include "maxent.h"
#include "newton.h"
#include "parallel.h"

#define N   800 /* several of schur.c's panels */
#define M   (N + N / 2)
#define NNZ 3

struct quad {
	uint32_t col[M][NNZ];
	double val[M][NNZ];
	int nnz[M];
	double t[N], base, e[M]; /* e: exp(B x) at the prepared point */
};

/* newton_minimize in a workspace of its own. */
static enum pm_status minimize(const struct newton_problem *p, const struct solver_options *o,
			       double target, double *x, struct maxent_stats *st, int *stalled)
{
	struct newton *nw;
	enum pm_status ret;

	CHECK(newton_create(p, &nw) == PM_OK);
	ret = newton_minimize(nw, o->max_iterations, target, x, st, stalled);
	newton_destroy(nw);
	return ret;
}

static uint64_t rng = 0x6e657774;

static double rnd(void)
{
	rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return (double)(rng >> 11) / 9007199254740992.0;
}

static void bx(const struct quad *q, const double *x, double *out)
{
	for (int j = 0; j < M; j++) {
		out[j] = 0;
		for (int e = 0; e < q->nnz[j]; e++)
			out[j] += q->val[j][e] * x[q->col[j][e]];
	}
}

static double f_at(struct quad *q, const double *x, double *g, double *viol)
{
	double y[M], f = 0;

	bx(q, x, y);
	for (int i = 0; i < N; i++) {
		f -= q->t[i] * x[i];
		if (g)
			g[i] = -q->t[i];
	}
	for (int j = 0; j < M; j++) {
		double ey = exp(y[j]);

		f += ey;
		for (int e = 0; g && e < q->nnz[j]; e++)
			g[q->col[j][e]] += q->val[j][e] * ey;
	}
	*viol = 0;
	for (int i = 0; g && i < N; i++)
		*viol = fmax(*viol, fabs(g[i]));
	return f;
}

static double q_eval(void *ctx, const double *x, double *g, double *viol)
{
	struct quad *q = ctx;
	double gg[N];

	return f_at(q, x, g ? g : gg, viol) - q->base;
}

static void q_prepare(void *ctx, const double *x)
{
	struct quad *q = ctx;
	double v, y[M], g[N];

	q->base = f_at(q, x, g, &v);
	bx(q, x, y);
	for (int j = 0; j < M; j++)
		q->e[j] = exp(y[j]);
}

static int hessians, forms, products, last_iterations;
static int whole_after_blocks; /* 0: none yet, 1: blocks formed, 2: then H whole */

static void q_hv(void *ctx, const double *v, double *out)
{
	struct quad *q = ctx;
	double y[M];

	products++;
	bx(q, v, y);
	memset(out, 0, N * sizeof *out);
	for (int j = 0; j < M; j++)
		for (int e = 0; e < q->nnz[j]; e++)
			out[q->col[j][e]] += q->val[j][e] * q->e[j] * y[j];
}

static void q_diag(void *ctx, double *out)
{
	struct quad *q = ctx;

	memset(out, 0, N * sizeof *out);
	for (int j = 0; j < M; j++)
		for (int e = 0; e < q->nnz[j]; e++)
			out[q->col[j][e]] += q->val[j][e] * q->val[j][e] * q->e[j];
}

/* BLOCKED's blocks of H: three, uneven. */
static const size_t q_blocks[] = {0, N / 4, N / 2 + 7, N};

static void q_hessian(void *ctx, int blocks, double *out)
{
	struct quad *q = ctx;
	double *h = blocks ? malloc((size_t)N * N * sizeof *h) : out;

	hessians++;
	if (blocks && !whole_after_blocks)
		whole_after_blocks = 1;
	else if (!blocks && whole_after_blocks == 1)
		whole_after_blocks = 2;
	memset(h, 0, (size_t)N * N * sizeof *h);
	for (int j = 0; j < M; j++)
		for (int a = 0; a < q->nnz[j]; a++)
			for (int b = 0; b < q->nnz[j]; b++) {
				uint32_t ca = q->col[j][a], cb = q->col[j][b];

				if (ca >= cb)
					h[(size_t)ca * N + cb] +=
					    q->val[j][a] * q->val[j][b] * q->e[j];
			}
	for (size_t k = 0, sq = 0; blocks && k < 3; k++) { /* the blocks only */
		size_t lo = q_blocks[k], n = q_blocks[k + 1] - lo;

		for (size_t i = 0; i < n; i++)
			memcpy(out + sq + i * n, h + (lo + i) * N + lo, (i + 1) * sizeof *h);
		sq += n * n;
	}
	if (blocks)
		free(h);
}

static int q_form(void *ctx)
{
	(void)ctx;
	forms++;
	return 0;
}

/* How run forms H: never, from the first step, or once CG took more than
 * a budget of 2 products (and the problem agreed), or only its diagonal
 * blocks (block-Jacobi) from the first step, or its blocks once CG took
 * a product and H whole once CG on them took 2 more. */
enum forming { PRODUCTS, FORMED, SWITCHED, BLOCKED, TIERED };

/* The problem of q, H formed as `how` says. */
static struct newton_problem quad_problem(struct quad *q, enum forming how, struct parallel *pool)
{
	return (struct newton_problem){.ctx = q,
				       .n = N,
				       .eval = q_eval,
				       .prepare = q_prepare,
				       .diag = q_diag,
				       .hv = q_hv,
				       .hessian = how != PRODUCTS ? q_hessian : NULL,
				       .formed = how == FORMED || how == BLOCKED,
				       .cg_budget = how == SWITCHED || how == TIERED ? 2 : 0,
				       .n_blocks = how == BLOCKED || how == TIERED ? 3 : 0,
				       .block_off = q_blocks,
				       .whole = how == TIERED,
				       .block_budget = 1,
				       .form = q_form,
				       /* f - base by subtraction: rounding of f's size */
				       .f_noise = 1e-9,
				       .pool = pool};
}

/* Minimizes q from x = 0 to target, which it must reach without a
 * stall; returns its iterations. */
static int solve_quad(struct quad *q, enum forming how, struct parallel *pool, double target,
		      double *x)
{
	struct newton_problem p = quad_problem(q, how, pool);
	struct solver_options o;
	struct maxent_stats st = {0};
	int stalled = 0;

	solver_options_init(&o);
	memset(x, 0, N * sizeof *x);
	CHECK(minimize(&p, &o, target, x, &st, &stalled) == PM_OK);
	CHECK(!stalled && st.max_violation <= target);
	return st.iterations;
}

/* Minimizes from 0; returns max |x - x*|. */
static double run(struct quad *q, const double *xs, enum forming how, struct parallel *pool)
{
	double x[N], worst = 0;

	last_iterations = solve_quad(q, how, pool, 1e-11, x);
	for (int i = 0; i < N; i++)
		worst = fmax(worst, fabs(x[i] - xs[i]));
	return worst;
}

/*
 * A factor of H's blocks made anew only where the steps left can pay for
 * it (newton.c's products_left). With a price of 20 products, the old
 * factor's directions pass it only a step or two before the target:
 * there a new factor, which would leave CG to do (blocks), costs more
 * than those steps' products, and the first factor serves to the end.
 * With a price of 12 they pass it earlier, with more steps left to pay,
 * and the factor is made anew. Both reach x*.
 */
static void test_renewal(struct quad *q, const double *xs, struct parallel *pool)
{
	static const struct {
		long price;
		int hessians;
	} cases[] = {{20, 1}, {12, 2}};

	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		struct newton_problem p = quad_problem(q, BLOCKED, pool);
		struct solver_options o;
		struct maxent_stats st = {0};
		int stalled = 0;
		double x[N], worst = 0;

		p.cg_budget = cases[c].price;
		hessians = 0;
		solver_options_init(&o);
		memset(x, 0, sizeof x);
		CHECK(minimize(&p, &o, 1e-11, x, &st, &stalled) == PM_OK);
		CHECK(!stalled && st.max_violation <= 1e-11);
		for (int i = 0; i < N; i++)
			worst = fmax(worst, fabs(x[i] - xs[i]));
		CHECK(worst <= 1e-8);
		CHECK(hessians == cases[c].hessians);
	}
}

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

/*
 * H singular along a direction that crosses the blocks, with the
 * gradient a little off it (the rounding of a table's counts, where rows
 * depend across blocks): B's rows each sum to 0, so every x + c 1 gives
 * the same B x, and t has 1e-11 along 1 on top of B^T exp(B x*), a
 * part of the gradient no step changes. Preconditioned CG reaches that
 * level and then runs off along 1 (Kaasschieter 1988); Newton must still
 * converge to it in a few steps, with Jacobi and with H's blocks, and
 * B x reach B x*.
 */
static void test_inconsistent(struct parallel *pool)
{
	static struct quad q;
	double xs[N], y[M], ys[M];

	for (int j = 0; j < M; j++) {
		double a = 2 * rnd() - 1, b = 2 * rnd() - 1;

		q.nnz[j] = j < N ? 2 : 3;
		q.col[j][0] = (uint32_t)j % N, q.val[j][0] = j < N ? 1 : a;
		q.col[j][1] = (uint32_t)(j + 1 + (j >= N ? rnd() * (N - 2) : 0)) % N;
		q.val[j][1] = j < N ? -1 : b;
		q.col[j][2] = (uint32_t)(rnd() * N), q.val[j][2] = -a - b;
	}
	for (int i = 0; i < N; i++)
		xs[i] = rnd() - 0.5;
	bx(&q, xs, ys);
	for (int i = 0; i < N; i++)
		q.t[i] = 1e-11;
	for (int j = 0; j < M; j++)
		for (int e = 0; e < q.nnz[j]; e++)
			q.t[q.col[j][e]] += q.val[j][e] * exp(ys[j]);
	for (int blocks = 0; blocks < 2; blocks++) {
		double x[N], worst = 0;

		CHECK(solve_quad(&q, blocks ? BLOCKED : PRODUCTS, pool, 1e-9, x) <= 12);
		bx(&q, x, y);
		for (int j = 0; j < M; j++)
			worst = fmax(worst, fabs(y[j] - ys[j]));
		CHECK(worst <= 1e-8);
	}
}

/*
 * Box rows lo <= (B y)_k <= hi with y = exp(B^T x): the dual F(x) =
 * sum_j exp((B^T x)_j) - mid . x + sum_k half_k |x_k| (newton_problem.l1;
 * half = 0: an equality row at mid). BX_N rows, BX_M cells, each cell in
 * one to three rows; lo and hi around (B y0)_k of a random positive y0,
 * so that the boxes hold a solution; some tight enough to bind, some
 * equalities.
 */
#define BX_N 8
#define BX_M 24

struct box {
	uint8_t in[BX_N][BX_M];
	double mid[BX_N], half[BX_N], lo[BX_N], hi[BX_N];
	double base, e[BX_M]; /* at the prepared point */
};

static void box_y(const struct box *b, const double *x, double *y)
{
	for (int j = 0; j < BX_M; j++) {
		double t = 0;

		for (int k = 0; k < BX_N; k++)
			t += b->in[k][j] * x[k];
		y[j] = exp(t);
	}
}

/* f (without the L1 terms), its gradient B y - mid, and the largest
 * violation of an equality row. */
static double box_f(const struct box *b, const double *x, double *g, double *viol)
{
	double y[BX_M], f = 0;

	box_y(b, x, y);
	*viol = 0;
	for (int j = 0; j < BX_M; j++)
		f += y[j];
	for (int k = 0; k < BX_N; k++) {
		double by = 0;

		for (int j = 0; j < BX_M; j++)
			by += b->in[k][j] * y[j];
		f -= b->mid[k] * x[k];
		if (g)
			g[k] = by - b->mid[k];
		if (!(b->half[k] > 0))
			*viol = fmax(*viol, fabs(by - b->mid[k]));
	}
	return f;
}

static double box_eval(void *ctx, const double *x, double *g, double *viol)
{
	struct box *b = ctx;

	return box_f(b, x, g, viol) - b->base;
}

static void box_prepare(void *ctx, const double *x)
{
	struct box *b = ctx;
	double v;

	b->base = box_f(b, x, NULL, &v);
	box_y(b, x, b->e);
}

static void box_hv(void *ctx, const double *v, double *out)
{
	struct box *b = ctx;

	for (int k = 0; k < BX_N; k++) {
		out[k] = 0;
		for (int j = 0; j < BX_M; j++) {
			double t = 0;

			for (int l = 0; b->in[k][j] && l < BX_N; l++)
				t += b->in[l][j] * v[l];
			out[k] += b->in[k][j] * b->e[j] * t;
		}
	}
}

static void box_diag(void *ctx, double *out)
{
	struct box *b = ctx;

	for (int k = 0; k < BX_N; k++) {
		out[k] = 0;
		for (int j = 0; j < BX_M; j++)
			out[k] += b->in[k][j] * b->e[j];
	}
}

/* H whole, or its two blocks of BX_N / 2 (box_halves). */
static const size_t box_halves[] = {0, BX_N / 2, BX_N};

static void box_hessian(void *ctx, int blocks, double *out)
{
	struct box *b = ctx;
	double v[BX_N] = {0}, col[BX_N];
	const int m = BX_N / 2;

	for (int l = 0; l < BX_N; l++) {
		v[l] = 1;
		box_hv(b, v, col);
		v[l] = 0;
		for (int k = l; k < BX_N; k++) {
			if (!blocks)
				out[k * BX_N + l] = col[k];
			else if (k / m == l / m) /* block k / m at (k / m) m^2 */
				out[(k / m) * m * m + (k % m) * m + l % m] = col[k];
		}
	}
}

static void box_make(struct box *b, uint64_t *s)
{
	double y0[BX_M];

	memset(b, 0, sizeof *b);
	for (int j = 0; j < BX_M; j++) {
		int rows = 1 + (int)(rnd() * 3);

		for (int r = 0; r < rows; r++)
			b->in[(int)(rnd() * BX_N)][j] = 1;
		y0[j] = 0.2 + 3 * rnd();
	}
	for (int k = 0; k < BX_N; k++) {
		double by = 0, shape = rnd();

		for (int j = 0; j < BX_M; j++)
			by += b->in[k][j] * y0[j];
		/* an equality, a box around by, or one that only just holds it */
		b->lo[k] = shape < 0.2 ? by : shape < 0.6 ? by * (1 - 0.3 * rnd()) : by;
		b->hi[k] = shape < 0.2 ? by : shape < 0.6 ? by * (1 + 0.3 * rnd()) : by * 1.5;
		if (shape > 0.8) /* the other side */
			b->lo[k] = by * 0.5, b->hi[k] = by;
		b->mid[k] = (b->lo[k] + b->hi[k]) / 2;
		b->half[k] = (b->hi[k] - b->lo[k]) / 2;
	}
	(void)s;
}

/* F(x + t e_k) - F(x) minimized over t by bisection on its (one-sided)
 * derivative: the slow method's step. */
static double box_coordinate(const struct box *b, double *x, int k)
{
	double lo = -40, hi = 40, y[BX_M], x0 = x[k];

	box_y(b, x, y);
	for (int it = 0; it < 200; it++) {
		double t = (lo + hi) / 2, d = -b->mid[k];

		for (int j = 0; j < BX_M; j++)
			d += b->in[k][j] * y[j] * exp(b->in[k][j] * t);
		/* the L1 term's slope on the side t moves to (at x0 + t = 0 the
		 * subgradient [-half, half] is taken whole: stop there) */
		if (x0 + t > 0)
			d += b->half[k];
		else if (x0 + t < 0)
			d -= b->half[k];
		else if (fabs(d) <= b->half[k])
			lo = hi = t;
		if (lo == hi)
			break;
		if (d > 0 || (x0 + t == 0 && d - b->half[k] > 0))
			hi = t;
		else
			lo = t;
	}
	x[k] = x0 + (lo + hi) / 2;
	if (fabs(x[k]) < 1e-300)
		x[k] = 0;
	return fabs(x[k] - x0);
}

/*
 * Newton on box rows against a slow independent method (coordinate
 * descent on F, each step exact by bisection), over random boxes, with
 * H never formed (CG and Jacobi), formed from the first step, and its
 * blocks first (then H whole once CG on them took 1000 products): the
 * same y to 1e-8, and Newton's x meets the optimality conditions, each
 * box row within its box and at the bound its multiplier's sign says,
 * an equality row at its value.
 */
static void test_l1(void)
{
	for (int c = 0; c < 40; c++) {
		struct box b;
		double xs[BX_N] = {0}, ys[BX_M], moved = 1;

		box_make(&b, NULL);
		for (int sweep = 0; sweep < 200000 && moved > 1e-15; sweep++) {
			moved = 0;
			for (int k = 0; k < BX_N; k++)
				moved = fmax(moved, box_coordinate(&b, xs, k));
		}
		box_y(&b, xs, ys);
		for (int formed = 0; formed < 3; formed++) {
			struct newton_problem p = {.ctx = &b,
						   .n = BX_N,
						   .eval = box_eval,
						   .prepare = box_prepare,
						   .diag = box_diag,
						   .hv = box_hv,
						   .hessian = formed ? box_hessian : NULL,
						   .formed = formed == 1,
						   .n_blocks = formed == 2 ? 2 : 0,
						   .block_off = box_halves,
						   .whole = 1,
						   .block_budget = 0,
						   .cg_budget = 1000,
						   .l1 = b.half,
						   .f_noise = 1e-13};
			struct solver_options o;
			struct maxent_stats st = {0};
			double x[BX_N] = {0}, y[BX_M], worst = 0;
			int stalled = 0;

			solver_options_init(&o);
			CHECK(minimize(&p, &o, 1e-11, x, &st, &stalled) == PM_OK);
			CHECK(!stalled && st.max_violation <= 1e-11);
			box_y(&b, x, y);
			for (int j = 0; j < BX_M; j++)
				worst = fmax(worst, fabs(y[j] - ys[j]));
			CHECK(worst <= 1e-8);
			for (int k = 0; k < BX_N; k++) {
				double by = 0;

				for (int j = 0; j < BX_M; j++)
					by += b.in[k][j] * y[j];
				CHECK(by >= b.lo[k] - 1e-9 && by <= b.hi[k] + 1e-9);
				CHECK(!(x[k] > 0) || fabs(by - b.lo[k]) <= 1e-9);
				CHECK(!(x[k] < 0) || fabs(by - b.hi[k]) <= 1e-9);
			}
		}
	}
}

int main(void)
{
	static struct quad q;
	double xs[N], y[M];
	struct parallel *pool = NULL;

	for (int j = 0; j < M; j++) {
		q.nnz[j] = j < N ? 1 : NNZ;
		for (int e = 0; e < q.nnz[j]; e++) {
			q.col[j][e] = j < N ? (uint32_t)j : (uint32_t)(rnd() * N);
			q.val[j][e] = j < N ? 1 : 2 * rnd() - 1;
		}
	}
	for (int i = 0; i < N; i++)
		xs[i] = rnd() - 0.5;
	bx(&q, xs, y);
	memset(q.t, 0, sizeof q.t);
	for (int j = 0; j < M; j++)
		for (int e = 0; e < q.nnz[j]; e++)
			q.t[q.col[j][e]] += q.val[j][e] * exp(y[j]);
	test_stagnation();
	test_linear_rate();
	test_moving();
	CHECK(parallel_create(2, &pool) == PM_OK);
	CHECK(run(&q, xs, FORMED, NULL) <= 1e-8);
	CHECK(run(&q, xs, FORMED, pool) <= 1e-8);
	CHECK(forms == 0 && hessians > 0);
	hessians = 0;
	CHECK(run(&q, xs, PRODUCTS, pool) <= 1e-8);
	CHECK(hessians == 0 && forms == 0);
	CHECK(run(&q, xs, SWITCHED, pool) <= 1e-8);
	CHECK(forms == 1 && hessians > 0); /* once, then H now and then */
	hessians = products = 0;
	CHECK(run(&q, xs, BLOCKED, pool) <= 1e-8);
	/* CG at every step: a block factor never gives the exact step */
	CHECK(hessians > 0 && products >= last_iterations && whole_after_blocks == 1);
	whole_after_blocks = 0;
	CHECK(run(&q, xs, TIERED, pool) <= 1e-8);
	CHECK(whole_after_blocks == 2);
	test_renewal(&q, xs, pool);
	parallel_destroy(pool);
	test_dependent();
	test_breakdown();
	test_block_breakdown();
	test_runaway_breakdown();
	test_last_chance();
	test_l1();
	CHECK(parallel_create(2, &pool) == PM_OK);
	test_inconsistent(pool);
	parallel_destroy(pool);
	return check_done();
}
