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
 * Then box rows (newton_problem.l1) against coordinate descent, and an H
 * singular across its blocks with the gradient a little off it. The
 * probe's stops are in test_newton_probe.c, a singular H and the
 * factor's breakdowns in test_newton_factor.c.
 */
#include <stdint.h>

#include "check.h"
#include "maxent.h"
#include "newton.h"
#include "newton_minimize.h"
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
	test_l1();
	CHECK(parallel_create(2, &pool) == PM_OK);
	test_inconsistent(pool);
	parallel_destroy(pool);
	return check_done();
}
