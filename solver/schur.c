/*
 * The Hessian of one bucket's scaling problem. For y[i,j] = K[i,j]
 * exp(α_i + β_j) on a g x h block, the Hessian of Σ y - n·α - n·β in
 * (α, β) is
 *
 *     M = [ Dq   Y  ]     Dq = diag(row sums), Ds = diag(column sums),
 *         [ Y^T  Ds ]     Y the block itself,
 *
 * singular along (1, -1) (and along more directions when zeros split the
 * block). Eliminating α, whose block is diagonal, leaves the h x h Schur
 * complement S = Ds - Y^T Dq^-1 Y, factored as L D L^T with pivots that
 * vanish (relative to S's diagonal) skipped: for a right-hand side in the
 * range of M, as every one here is (E^T Y w or a gradient of the scaling
 * problem), that yields an exact solution of M x = v.
 *
 * M serves twice: Newton steps of the inner scaling (quadratic where
 * Sinkhorn's rate is linear, and slow on nearly decomposable zero
 * patterns), and the outer Hessian, which is the Schur complement of M in
 * the full dual's Hessian: H = A_K (Y - Y E M^+ E^T Y) A_K^T.
 *
 * Storage: g entries of Dq^-1, then h x h for L (strict lower part) and
 * D (diagonal); schur_size(g, h) doubles.
 */
#include <math.h>
#include <string.h>

#include "loops.h"
#include "parallel.h"
#include "schur.h"

/* A pivot of a bucket's block below this fraction of its column sum is a
 * null direction. */
#define PIVOT_EPS SCHUR_PIVOT_EPS

size_t schur_size(size_t g, size_t h)
{
	return g + h * h;
}

INLINE void factor(const double *y, size_t g, double *f, size_t h)
{
	double *dqi = f, *s = f + g;

	memset(s, 0, h * h * sizeof *s);
	for (size_t i = 0; i < g; i++) {
		const double *row = y + i * h;
		double sum = 0;

		UNROLL
		for (size_t j = 0; j < h; j++)
			sum += row[j];
		dqi[i] = sum > 0 ? 1 / sum : 0;
		UNROLL
		for (size_t j = 0; j < h; j++) {
			s[j * h + j] += row[j];
			UNROLL
			for (size_t l = 0; l <= j; l++)
				s[j * h + l] -= row[j] * row[l] * dqi[i];
		}
	}
	/* L D L^T, lower triangle; D on the diagonal, 0 for a null pivot */
	UNROLL
	for (size_t j = 0; j < h; j++) {
		double d = s[j * h + j], scale = 0, di;

		UNROLL
		for (size_t l = 0; l < j; l++)
			d -= s[j * h + l] * s[j * h + l] * s[l * h + l];
		/* a pivot's scale is the column sum (Ds), not what elimination
		 * left of it: cancellation there is exactly a null direction */
		for (size_t i = 0; i < g; i++)
			scale += y[i * h + j];
		d = d > PIVOT_EPS * scale ? d : 0;
		s[j * h + j] = d;
		di = d > 0 ? 1 / d : 0;
		UNROLL
		for (size_t k = j + 1; k < h; k++) {
			double v = s[k * h + j];

			UNROLL
			for (size_t l = 0; l < j; l++)
				v -= s[k * h + l] * s[j * h + l] * s[l * h + l];
			s[k * h + j] = v * di;
		}
	}
}

void schur_factor(const double *y, size_t g, size_t h, double *f)
{
	BY_WIDTH(factor, h, y, g, f);
}

/* x = S^+ t in place (L D L^T with null pivots giving 0). */
INLINE void ldl_solve(const double *s, size_t h, double *t)
{
	UNROLL
	for (size_t j = 0; j < h; j++) {
		UNROLL
		for (size_t l = 0; l < j; l++)
			t[j] -= s[j * h + l] * t[l];
	}
	UNROLL
	for (size_t j = 0; j < h; j++)
		t[j] = s[j * h + j] > 0 ? t[j] / s[j * h + j] : 0;
	UNROLL
	for (size_t j = h; j-- > 0;) {
		UNROLL
		for (size_t k = j + 1; k < h; k++)
			t[j] -= s[k * h + j] * t[k];
	}
}

/*
 * A square root of M^+ for forming the outer Hessian: R with
 * v^T M^+ v' = (R v) . (R v') for v, v' in M's range. By the block
 * elimination of schur_solve, v^T M^+ v' = p^T Dq^-1 p' + u^T S^+ u' with
 * u = q - Y^T Dq^-1 p and S^+ = L^-T D^+ L^-1 (null pivots: D^+ = 0), so
 *
 *     R = [ Dq^-1/2          0 ]     W = D^+1/2 L^-1  (h x h, lower).
 *         [ -W Y^T Dq^-1     W ]
 *
 * rt ((g + h) x h) receives the lower block by columns: row e of rt is
 * the last h entries of R e_e; sc (g) the diagonal Dq^-1/2.
 */
INLINE void root(const double *f, const double *y, size_t g, double *rt, double *sc, size_t h)
{
	const double *dqi = f, *s = f + g;

	UNROLL
	for (size_t j = 0; j < h; j++) { /* column j of L^-1, then of W */
		double *w = rt + (g + j) * h;

		UNROLL
		for (size_t k = 0; k < h; k++)
			w[k] = k == j;
		UNROLL
		for (size_t k = j + 1; k < h; k++) {
			UNROLL
			for (size_t l = j; l < k; l++)
				w[k] -= s[k * h + l] * w[l];
		}
		UNROLL
		for (size_t k = j; k < h; k++)
			w[k] = s[k * h + k] > 0 ? w[k] / sqrt(s[k * h + k]) : 0;
	}
	for (size_t i = 0; i < g; i++) {
		double *w = rt + i * h;

		sc[i] = sqrt(dqi[i]);
		memset(w, 0, h * sizeof *w);
		UNROLL
		for (size_t j = 0; j < h; j++) {
			const double *wj = rt + (g + j) * h;
			double v = y[i * h + j] * dqi[i];

			UNROLL
			for (size_t k = j; k < h; k++)
				w[k] -= v * wj[k];
		}
	}
}

void schur_root(const double *f, const double *y, size_t g, size_t h, double *rt, double *sc)
{
	BY_WIDTH(root, h, f, y, g, rt, sc);
}

/*
 * Σ a[l] b[l] over n entries: four independent sums (lane k takes the
 * entries l = k mod 4), so that the adds need not wait on each other, in
 * one vector of four doubles: two SSE2 registers, or one AVX2 register
 * where the CPU has it (the clone is picked at load time). The lanes do
 * the same arithmetic in the same order either way, so the result does
 * not depend on the CPU.
 */
VEC_CLONES static double dot4(const double *a, const double *b, size_t n)
{
	v4d s = {0, 0, 0, 0};
	size_t l = 0;
	double s0;

	for (; l + 4 <= n; l += 4) {
		v4d x, y;

		memcpy(&x, a + l, sizeof x);
		memcpy(&y, b + l, sizeof y);
		s += x * y;
	}
	s0 = s[0];
	for (; l < n; l++)
		s0 += a[l] * b[l];
	return (s0 + s[1]) + (s[2] + s[3]);
}

double schur_dot(const double *a, const double *b, size_t n)
{
	return dot4(a, b, n);
}

/*
 * The dense L D L^T, in place (lower triangle, row major), of the Schur
 * complements formed over knowledge rows (the outer Hessian, the
 * interior point methods' normal equations), by panels of DENSE_BLOCK
 * columns: each panel is factored (its columns against the panel's
 * earlier ones only, left-looking, so the inner loops run along rows),
 * then every later row subtracts the panel's part, a[k][m] -= Σ_l
 * a[k][l] d_l a[m][l], from a copy W of the panel's rows scaled by D
 * that stays in cache, the trailing rows in bands of equal area that the
 * pool's threads take. A pivot at most eps times the matrix's own
 * diagonal entry (saved first) is a null direction, rows dependent once
 * the invariants are eliminated: D = 0 and L's column 0, as in
 * schur_factor.
 */
#define DENSE_BLOCK 64
/* Items of each parallel step of a panel, taken by whichever thread is
 * free: a thread the machine holds back (a busy host) leaves its share to
 * the other, where equal parts per thread made both wait for it. */
#define PANEL_ITEMS 8

size_t schur_dense_work(size_t n)
{
	return n + n * DENSE_BLOCK + DENSE_BLOCK * DENSE_BLOCK;
}

struct panel {
	double *a;
	double *wp;	  /* (n - j1) x b: row m of the panel times D */
	const double *wj; /* b x b: row j of the panel times D, for column j */
	size_t n, j0, j1;
};

/* The panel's own rows, columns [j0, j1) (serial); wj row j - j0 gets
 * the row's entries times D, which column j of every later row needs. */
static void panel_factor(double *a, size_t n, size_t j0, size_t j1, const double *diag, double eps,
			 double *wj)
{
	size_t b = j1 - j0;

	for (size_t j = j0; j < j1; j++) {
		double *aj = a + j * n, *w = wj + (j - j0) * b, d;

		for (size_t l = j0; l < j; l++)
			w[l - j0] = aj[l] * a[l * n + l];
		d = aj[j] - dot4(aj + j0, w, j - j0);
		d = d > eps * diag[j] ? d : 0;
		aj[j] = d;
		for (size_t k = j + 1; k < j1; k++) {
			double *ak = a + k * n, v = ak[j] - dot4(ak + j0, w, j - j0);

			ak[j] = d > 0 ? v / d : 0;
		}
	}
}

/* Rows [lo, hi) below the panel: their panel columns, then times D into
 * wp for the update. */
static void panel_rows(const struct panel *u, size_t lo, size_t hi)
{
	size_t n = u->n, b = u->j1 - u->j0;

	for (size_t k = lo; k < hi; k++) {
		double *ak = u->a + k * n, *wk = u->wp + (k - u->j1) * b;

		for (size_t j = u->j0; j < u->j1; j++) {
			double d = u->a[j * n + j],
			       v = ak[j] - dot4(ak + u->j0, u->wj + (j - u->j0) * b, j - u->j0);

			ak[j] = d > 0 ? v / d : 0;
		}
		for (size_t l = u->j0; l < u->j1; l++)
			wk[l - u->j0] = ak[l] * u->a[l * n + l];
	}
}

/* Item i of PANEL_ITEMS: rows below the panel in equal bands. */
static void panel_rows_item(void *ctx, size_t i, int part)
{
	const struct panel *u = ctx;
	size_t t = u->n - u->j1;

	(void)part;
	panel_rows(u, u->j1 + t * i / PANEL_ITEMS, u->j1 + t * (i + 1) / PANEL_ITEMS);
}

/* Item i of PANEL_ITEMS: rows of the trailing matrix in bands of equal
 * area (row k updates k - j1 + 1 entries). */
static void panel_update_item(void *ctx, size_t i, int part)
{
	const struct panel *u = ctx;
	size_t t = u->n - u->j1, b = u->j1 - u->j0;
	size_t lo = u->j1 + (size_t)(sqrt((double)i / PANEL_ITEMS) * (double)t);
	size_t hi = i + 1 == PANEL_ITEMS
			? u->n
			: u->j1 + (size_t)(sqrt((double)(i + 1) / PANEL_ITEMS) * (double)t);

	(void)part;
	for (size_t k = lo; k < hi; k++) {
		double *ak = u->a + k * u->n;

		for (size_t m = u->j1; m <= k; m++)
			ak[m] -= dot4(ak + u->j0, u->wp + (m - u->j1) * b, b);
	}
}

void schur_dense_factor(double *a, size_t n, double eps, double *work, struct parallel *pool)
{
	double *diag = work, *wp = work + n, *wj = wp + n * DENSE_BLOCK;

	for (size_t j = 0; j < n; j++)
		diag[j] = a[j * n + j];
	for (size_t j0 = 0; j0 < n; j0 += DENSE_BLOCK) {
		size_t j1 = j0 + DENSE_BLOCK < n ? j0 + DENSE_BLOCK : n;
		struct panel u = {.a = a, .wp = wp, .wj = wj, .n = n, .j0 = j0, .j1 = j1};

		panel_factor(a, n, j0, j1, diag, eps, wj);
		if (j1 == n)
			break;
		parallel_items(pool, PANEL_ITEMS, panel_rows_item, &u);
		parallel_items(pool, PANEL_ITEMS, panel_update_item, &u);
	}
}

/* As ldl_solve, with the back substitution by rows too (L^T's columns
 * are L's rows): both passes read the factor along its rows, once. */
void schur_dense_solve(const double *a, size_t n, double *x)
{
	for (size_t j = 0; j < n; j++)
		x[j] -= dot4(a + j * n, x, j);
	for (size_t j = 0; j < n; j++)
		x[j] = a[j * n + j] > 0 ? x[j] / a[j * n + j] : 0;
	for (size_t j = n; j-- > 0;) {
		const double *aj = a + j * n;
		double v = x[j];

		for (size_t l = 0; l < j; l++)
			x[l] -= aj[l] * v;
	}
}

INLINE void solve(const double *f, const double *y, size_t g, const double *p, const double *q,
		  double *a, double *b, size_t h)
{
	const double *dqi = f, *s = f + g;

	/* S β = q - Y^T Dq^-1 p, then α = Dq^-1 (p - Y β) */
	memcpy(b, q, h * sizeof *b);
	for (size_t i = 0; i < g; i++) {
		double w = dqi[i] * p[i];

		UNROLL
		for (size_t j = 0; j < h; j++)
			b[j] -= y[i * h + j] * w;
	}
	ldl_solve(s, h, b);
	for (size_t i = 0; i < g; i++) {
		double v = p[i];

		UNROLL
		for (size_t j = 0; j < h; j++)
			v -= y[i * h + j] * b[j];
		a[i] = dqi[i] * v;
	}
}

void schur_solve(const double *f, const double *y, size_t g, size_t h, const double *p,
		 const double *q, double *a, double *b)
{
	BY_WIDTH(solve, h, f, y, g, p, q, a, b);
}
