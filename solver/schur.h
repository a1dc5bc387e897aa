/*
 * schur: the per-bucket 2x2-block Hessian of the scaling problem reduced
 * to a small Schur complement, and the dense L D L^T of the Schur
 * complements formed over knowledge rows (schur.c). Internal to solver/.
 */
#ifndef PMAXENT_SCHUR_H
#define PMAXENT_SCHUR_H

#include <stddef.h>

struct parallel;

/* ---- schur.c ------------------------------------------------------------ */

/* Doubles of a factorization of a g x h block. */
size_t schur_size(size_t g, size_t h);
/* Factors the Hessian of the scaling problem of block y (g x h, row-major;
 * zero cells 0) into f (schur_size(g, h) doubles). */
void schur_factor(const double *y, size_t g, size_t h, double *f);
/* Solves M (a, b) = (p, q) (p: g row entries, q: h column entries) with
 * the factorization f of block y; a gets g values, b gets h. */
void schur_solve(const double *f, const double *y, size_t g, size_t h, const double *p,
		 const double *q, double *a, double *b);

/* A square root R of M^+ (v^T M^+ v' = (R v) . (R v') for v, v' in M's
 * range) from the factorization f of y: sc (g values) the diagonal of
 * its first g rows, which act on p alone; rt ((g + h) x h) the last h
 * entries of R's column e in its row e. */
void schur_root(const double *f, const double *y, size_t g, size_t h, double *rt, double *sc);
/* A pivot at most this fraction of its diagonal is a null direction:
 * rounding noise of a dependent row (schur_dense_factor's usual eps). */
#define SCHUR_PIVOT_EPS 1e-11
/*
 * The same, the first time a sequence of such matrices is factored
 * (newton.c, zeros_ipm.c), which decides once which rows depend on
 * the others: about the square root of the rounding unit, the usual
 * bound of a numerical rank. Rows that depend on others and the
 * invariants (rules on every value of one attribute with one s sum to
 * that value's SA rows) make those matrices singular; their pivots are
 * rounding noise, which SCHUR_PIVOT_EPS catches only where forming the
 * matrix cancelled little; a noise pivot left in makes the direction
 * along its row as long as the gradient's rounding over the noise.
 * Which rows depend
 * on which does not change with the point (the zeros decide it), so the
 * rows found once are dropped ever after, as zero rows.
 */
#define SCHUR_DEPENDENT 1e-8
/* The Schur complements formed over knowledge rows (the outer Hessian H,
 * the interior point methods' normal equations): a (n x n, lower
 * triangle, row major) factored in place as L D L^T, a pivot at most eps
 * times its diagonal entry taken as null (D = 0), the updates shared out
 * on pool (may be NULL); work: schur_dense_work(n) doubles. The solve
 * overwrites x with A^+ x, exact for x in A's range (a null pivot's
 * entry 0). */
size_t schur_dense_work(size_t n);
void schur_dense_factor(double *a, size_t n, double eps, double *work, struct parallel *pool);
void schur_dense_solve(const double *a, size_t n, double *x);
/* sum a[l] b[l] over l < n, as four interleaved sums (vectorized) */
double schur_dot(const double *a, const double *b, size_t n);

#endif
