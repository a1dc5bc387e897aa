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

#include "solver_internal.h"

/* A pivot below this fraction of its diagonal is a null direction. */
#define PIVOT_EPS 1e-11

size_t schur_size(size_t g, size_t h)
{
	return g + h * h;
}

void schur_factor(const double *y, size_t g, size_t h, double *f)
{
	double *dqi = f, *s = f + g;

	memset(s, 0, h * h * sizeof *s);
	for (size_t i = 0; i < g; i++) {
		const double *row = y + i * h;
		double sum = 0;

		for (size_t j = 0; j < h; j++)
			sum += row[j];
		dqi[i] = sum > 0 ? 1 / sum : 0;
		for (size_t j = 0; j < h; j++) {
			s[j * h + j] += row[j];
			for (size_t l = 0; l <= j; l++)
				s[j * h + l] -= row[j] * row[l] * dqi[i];
		}
	}
	/* L D L^T, lower triangle; D on the diagonal, 0 for a null pivot */
	for (size_t j = 0; j < h; j++) {
		double d = s[j * h + j], scale = 0;

		for (size_t l = 0; l < j; l++)
			d -= s[j * h + l] * s[j * h + l] * s[l * h + l];
		/* a pivot's scale is the column sum (Ds), not what elimination
		 * left of it: cancellation there is exactly a null direction */
		for (size_t i = 0; i < g; i++)
			scale += y[i * h + j];
		d = d > PIVOT_EPS * scale ? d : 0;
		s[j * h + j] = d;
		for (size_t k = j + 1; k < h; k++) {
			double v = s[k * h + j];

			for (size_t l = 0; l < j; l++)
				v -= s[k * h + l] * s[j * h + l] * s[l * h + l];
			s[k * h + j] = d > 0 ? v / d : 0;
		}
	}
}

/* x = S^+ t in place (L D L^T with null pivots giving 0). */
static void ldl_solve(const double *s, size_t h, double *t)
{
	for (size_t j = 0; j < h; j++)
		for (size_t l = 0; l < j; l++)
			t[j] -= s[j * h + l] * t[l];
	for (size_t j = 0; j < h; j++)
		t[j] = s[j * h + j] > 0 ? t[j] / s[j * h + j] : 0;
	for (size_t j = h; j-- > 0;)
		for (size_t k = j + 1; k < h; k++)
			t[j] -= s[k * h + j] * t[k];
}

void schur_solve(const double *f, const double *y, size_t g, size_t h, const double *p,
		 const double *q, double *a, double *b)
{
	const double *dqi = f, *s = f + g;

	/* S β = q - Y^T Dq^-1 p, then α = Dq^-1 (p - Y β) */
	memcpy(b, q, h * sizeof *b);
	for (size_t i = 0; i < g; i++) {
		double w = dqi[i] * p[i];

		for (size_t j = 0; j < h; j++)
			b[j] -= y[i * h + j] * w;
	}
	ldl_solve(s, h, b);
	for (size_t i = 0; i < g; i++) {
		double v = p[i];

		for (size_t j = 0; j < h; j++)
			v -= y[i * h + j] * b[j];
		a[i] = dqi[i] * v;
	}
}
