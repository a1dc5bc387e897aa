/*
 * Inexact Newton for a smooth convex function given by callbacks (the
 * two-level dual's outer problem): the direction from preconditioned
 * conjugate gradients on H d = -g to a relative residual
 * η = min(0.1, sqrt(|g| / |g0|)) (loose far from the optimum, tighter
 * near it: superlinear), then backtracking from the full step.
 *
 * PCG runs on the problem's products H v. Its preconditioner grows with
 * what the directions cost, each stage once the products spent on the
 * one before reach the next one's price (ski rental): Jacobi; a
 * factorization L D L^T (schur.c) of H's diagonal blocks
 * (p->block_budget); a factorization of H whole (p->cg_budget, unless
 * p->whole says H is too large), or that from the first step where the
 * cost model says so (p->formed). A factor of H made at the current
 * point gives the exact Newton step; kept for later points, where H
 * changes little near the optimum (where Jacobi's CG takes the most
 * steps), a few products with it do what a new one would. A factor is
 * made anew once the directions spent its price with it, or where its
 * CG breaks down. The workspace, the factor with it, lasts across calls
 * (a polish after a first target).
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "maxent.h"
#include "newton.h"
#include "parallel.h"
#include "schur.h"
#include "solve.h"
#include "stop.h"

/* Halvings of a step before the line search gives up. */
#define LINE_HALVINGS 40
/* Armijo constant. */
#define ARMIJO 1e-4
/* PCG has left the level its residual can reach (pcg) once the residual
 * is this many times the smallest it had. */
#define CG_DIVERGED 1e3

struct newton {
	const struct newton_problem *p;
	double *g, *d, *res, *z, *q, *hq, *diag, *x1;
	double *step; /* the direction of the last step taken, whole */
	double *best; /* PCG's iterate of the smallest residual */
	/* with l1 weights: F's pseudo-gradient at the current point (else
	 * g itself) and the orthant of the next step per variable (+1, -1;
	 * 0: held at 0), any_held whether some variable is */
	double *pg;
	int8_t *orth;
	int any_held;
	uint8_t *fheld; /* held when the factor was made: left out of it */
	double *ldl;	/* n x n: the factorization of H at some point (or NULL) */
	double *work;	/* for the factorization */
	/* ldl preconditions (since the first step, or since CG cost more);
	 * factored: it holds a factorization */
	int dense, factored;
	long products;	/* CG's products H v in the last direction */
	long spent;	/* ... and in all since the last factorization */
	size_t nb, *sq; /* H's blocks (1: H whole), and where each is in ldl */
	size_t nf;	/* the factor's blocks now: 1 (H whole) or nb */
	/* the rows each block's factor holds, the known dependent ones
	 * left out (kept[lo ..], nk[b] of them, in the block's local
	 * numbers) and, at the same place, scratch for its solves */
	uint32_t *kept;
	size_t *nk;
	double *zk;
	int whole_nulls; /* dependent rows looked for on H whole */
	/* the last step left more than half the violation, with at most
	 * half the variables moving (past Newton's first steps) */
	int slow;
	/* for products_left: the violation left by the last step (1 if it
	 * was damped), the target, and eta of the last direction */
	double ratio, target, eta_last;
};

static double dot(const double *a, const double *b, size_t n)
{
	double s = 0;

	for (size_t i = 0; i < n; i++)
		s += a[i] * b[i];
	return s;
}

static void jacobi(const struct newton *nw, const double *r, double *z)
{
	for (size_t k = 0; k < nw->p->n; k++)
		z[k] = nw->diag[k] > 0 ? r[k] / nw->diag[k] : r[k];
}

/* ---- the L1 terms (newton_problem.l1) ---------------------------------- */

/*
 * A weighted variable's curvature gets this fraction of its own on top
 * (products and factor alike: Levenberg-Marquardt on those variables).
 * An interval row that depends on the others (its value fixed by them)
 * has H singular along a direction where only its kink decides F: the
 * shift makes the step along it finite, the orthant stops it at 0, and
 * an equality row is never taken as dependent on an interval's. Above
 * SCHUR_DEPENDENT, so that no interval row's pivot counts as null.
 */
#define L1_SHIFT 1e-6

/* Variable k's pseudo-gradient (Andrew & Gao 2007): F's slope toward the
 * side x moves to, at x = 0 the steeper descending side, 0 if neither
 * descends. */
static double pseudo(double x, double g, double w)
{
	if (x > 0 || (x == 0 && g + w < 0))
		return g + w;
	if (x < 0 || (x == 0 && g - w > 0))
		return g - w;
	return 0;
}

/* F's pseudo-gradient at x for f's gradient g into pg (g itself for an
 * unweighted variable; p->l1 set); returns its largest weighted entry,
 * those variables' violation. */
static double pseudo_gradient(const struct newton_problem *p, const double *x, const double *g,
			      double *pg)
{
	double worst = 0;

	for (size_t k = 0; k < p->n; k++) {
		pg[k] = p->l1[k] > 0 ? pseudo(x[k], g[k], p->l1[k]) : g[k];
		worst = p->l1[k] > 0 ? fmax(worst, fabs(pg[k])) : worst;
	}
	return worst;
}

/* The orthant of the next step from x: the sign of each weighted x, or
 * at 0 that of -pg (0: held at 0). */
static void orthant(struct newton *nw, const double *x)
{
	const struct newton_problem *p = nw->p;

	nw->any_held = 0;
	for (size_t k = 0; p->l1 && k < p->n; k++) {
		double s = x[k] != 0 ? x[k] : -nw->pg[k];

		nw->orth[k] = !(p->l1[k] > 0) ? 1 : s > 0 ? 1 : s < 0 ? -1 : 0;
		nw->any_held |= nw->orth[k] == 0;
	}
}

/* Has a variable been released or held since the factor was made (which
 * leaves the held ones out: a variable it left out would get nothing
 * from it)? */
static int held_changed(const struct newton *nw)
{
	for (size_t k = 0; nw->p->l1 && k < nw->p->n; k++)
		if (nw->fheld[k] != !nw->orth[k])
			return 1;
	return 0;
}

/* A held variable's entry of v set to 0 (CG runs on the others). */
static void unhold(const struct newton *nw, double *v)
{
	for (size_t k = 0; nw->any_held && k < nw->p->n; k++)
		if (!nw->orth[k])
			v[k] = 0;
}

/* F(x) - F(x0), x0 the prepared point: f's by eval, with the gradient
 * into g and F's pseudo-gradient into pg (may be NULL: nw->pg); *viol
 * covers the weighted variables too. */
static double evaluate(struct newton *nw, const double *x, const double *x0, double *g, double *pg,
		       double *viol)
{
	const struct newton_problem *p = nw->p;
	double f = p->eval(p->ctx, x, g, viol);

	if (!p->l1)
		return f;
	*viol = fmax(*viol, pseudo_gradient(p, x, g, pg ? pg : nw->pg));
	for (size_t k = 0; k < p->n; k++)
		f += p->l1[k] * (fabs(x[k]) - fabs(x0[k]));
	return f;
}

/* Block b of the factor: variables lo .. lo + n, stored square at
 * nw->ldl + nw->sq[b] (one block: all of H). */
static size_t block(const struct newton *nw, size_t b, size_t *lo)
{
	const struct newton_problem *p = nw->p;

	if (nw->nf == 1) {
		*lo = 0;
		return p->n;
	}
	*lo = p->block_off[b];
	return p->block_off[b + 1] - *lo;
}

struct block_solves {
	const struct newton *nw;
	double *z;
};

/* Block b's solve on its kept rows (gathered into zk, each block's own
 * range of it); a dependent row's entry is 0, as its null pivot gave. */
static void block_solve(void *ctx, size_t b, int part)
{
	const struct block_solves *bs = ctx;
	const struct newton *nw = bs->nw;
	size_t lo, m = block(nw, b, &lo), k = nw->nk[b];
	const uint32_t *kept = nw->kept + lo;
	double *z = bs->z + lo, *zk = nw->zk + lo;

	(void)part;
	if (k == m) {
		schur_dense_solve(nw->ldl + nw->sq[b], m, z);
		return;
	}
	for (size_t i = 0; i < k; i++)
		zk[i] = z[kept[i]];
	schur_dense_solve(nw->ldl + nw->sq[b], k, zk);
	memset(z, 0, m * sizeof *z);
	for (size_t i = 0; i < k; i++)
		z[kept[i]] = zk[i];
}

/* z = M^-1 r: Jacobi, or the factor: H whole, or its blocks, which are
 * independent and solved on the pool (every CG step has one solve, and
 * on thousands of rows the blocks' triangular solves cost about what the
 * step's product does, which runs on the pool too). */
static void precondition(const struct newton *nw, const double *r, double *z)
{
	struct block_solves bs = {nw, z};

	if (!nw->dense) {
		jacobi(nw, r, z);
	} else {
		memcpy(z, r, nw->p->n * sizeof *z);
		parallel_items(nw->nf > 1 ? nw->p->pool : NULL, nw->nf, block_solve, &bs);
	}
	unhold(nw, z);
}

/* out = H v; a dependent row's entry is left out (0), as the factor
 * leaves the row out. */
static void multiply(const struct newton *nw, const double *v, double *out)
{
	const struct newton_null *nl = nw->p->null;

	nw->p->hv(nw->p->ctx, v, out);
	for (size_t k = 0; nw->p->l1 && k < nw->p->n; k++)
		if (nw->p->l1[k] > 0)
			out[k] += L1_SHIFT * nw->diag[k] * v[k];
	for (size_t k = 0; nw->dense && nl && nl->known && k < nw->p->n; k++)
		if (nl->row[k])
			out[k] = 0;
	unhold(nw, out);
}

/* The rows of a formed block (lower triangle, m x m) that are not known
 * to be dependent, packed in place into the leading k x k (k returned,
 * their local numbers in kept): entry (i, j) moves to i k + j <= its
 * place, so each goes where nothing is left to read. */
static size_t pack_rows(double *a, size_t m, const uint8_t *null, const int8_t *orth,
			uint32_t *kept)
{
	size_t k = 0;

	for (size_t i = 0; i < m; i++)
		if (!(null && null[i]) && !(orth && !orth[i]))
			kept[k++] = (uint32_t)i;
	for (size_t i = 0; k < m && i < k; i++)
		for (size_t j = 0; j <= i; j++)
			a[i * k + j] = a[(size_t)kept[i] * m + kept[j]];
	return k;
}

/* Block b formed at nw->ldl + nw->sq[b]: its diagonal into diag, the
 * known dependent rows left out (their null pivots would cost the cubic
 * factorization their share: half the rows on some knowledge bounds),
 * factored; the first time, its null pivots are the dependent rows (a
 * row that depends on its block's others depends on H's). */
static void factor_block(struct newton *nw, size_t b, int first)
{
	const struct newton_problem *p = nw->p;
	struct newton_null *nl = p->null;
	size_t lo, m = block(nw, b, &lo), k;
	double *a = nw->ldl + nw->sq[b];
	const uint32_t *kept = nw->kept + lo;

	for (size_t i = 0; i < m; i++) {
		nw->diag[lo + i] = a[i * m + i];
		if (p->l1 && p->l1[lo + i] > 0)
			a[i * m + i] *= 1 + L1_SHIFT;
	}
	k = nw->nk[b] = pack_rows(a, m, nl && nl->known ? nl->row + lo : NULL,
				  p->l1 ? nw->orth + lo : NULL, nw->kept + lo);
	schur_dense_factor(a, k, first ? SCHUR_DEPENDENT : SCHUR_PIVOT_EPS, nw->work, p->pool);
	for (size_t i = 0; first && i < k; i++)
		nl->row[lo + kept[i]] = !(a[i * k + i] > 0) && !(p->l1 && p->l1[lo + kept[i]] > 0);
}

/*
 * The blocks of the next factor: H whole if it has one block, or if the
 * cost model forms it from the start, or once a factor of its blocks
 * cost its price in products (or broke down); the blocks first, far
 * cheaper (the same pass over the buckets, and small factors), where H
 * may not be formed whole or CG on them may do.
 */
static size_t next_blocks(const struct newton *nw)
{
	const struct newton_problem *p = nw->p;

	if (nw->nb > 1 && !p->whole)
		return nw->nb;
	return nw->nb == 1 || p->formed || nw->factored ? 1 : nw->nb;
}

/* The products a factor costs before it is made: the blocks' price, or
 * H's. */
static long budget(const struct newton *nw)
{
	return next_blocks(nw) > 1 ? nw->p->block_budget : nw->p->cg_budget;
}

/* H (nf == 1) or its nb blocks formed and factored at this point, the
 * dependent rows (p->null) left out: found at the first factorization,
 * pivots up to SCHUR_DEPENDENT, and again at the first of H whole (rows
 * that depend across blocks), dropped from H, a null pivot, ever after. */
static void factor_at(struct newton *nw, size_t nf)
{
	const struct newton_problem *p = nw->p;
	int first = p->null && (!p->null->known || (nf == 1 && !nw->whole_nulls));

	nw->nf = nf;
	for (size_t k = 0; p->l1 && k < p->n; k++)
		nw->fheld[k] = !nw->orth[k];
	p->hessian(p->ctx, nf > 1, nw->ldl);
	for (size_t b = 0; b < nf; b++)
		factor_block(nw, b, first);
	nw->factored = 1;
	nw->spent = 0;
	nw->whole_nulls |= nf == 1;
	if (first)
		p->null->known = 1;
}

/* Has the caller asked to stop (a cancel, or the time limit: the
 * problem's token)? Reported with the current point's iteration and
 * violation. */
static int stop_asked(const struct newton *nw, int iteration, double viol)
{
	return cancel_report(nw->p->cancel, iteration, viol);
}

/* The residual -pg, a dependent row's entry left out (and a held
 * variable's, which is 0); returns its norm. */
static double residual(struct newton *nw)
{
	const struct newton_problem *p = nw->p;

	for (size_t k = 0; k < p->n; k++) {
		nw->d[k] = 0;
		nw->res[k] = nw->dense && p->null && p->null->row[k] ? 0 : -nw->pg[k];
	}
	return sqrt(dot(nw->res, nw->res, p->n));
}

/*
 * PCG on H d = res from d = 0 to |res| <= eta g2: returns 1 if the caller
 * asked to stop, -1 if the curvature broke down (no positive curvature
 * along q, or, with a factor, a residual past twice the first: along
 * H's near null directions an old factor's pivots no longer match H, and
 * the products' rounding outweighs what is left), else 0. With Jacobi
 * the residual may grow on the way and still end low: no such test. But
 * the residual cannot go below the part of -g along H's null directions
 * that no dropped row accounts for (rows that depend across blocks,
 * their right-hand sides consistent only to rounding). There, CG on the
 * singular system diverges (Kaasschieter 1988): its steps divide by
 * vanishing curvature, d runs off along the null directions and the
 * residual grows. A residual CG_DIVERGED times the smallest so far ends
 * it, with any preconditioner; whenever CG ends short of eta, d is its
 * iterate of the smallest residual (nw->best). Or the residual stays
 * put while the steps shrink without end (curvature along q falling
 * geometrically): what is left of it lies where the preconditioner sees
 * nothing. So CG also ends once a step no longer changes d (below its
 * rounding).
 */
static int pcg(struct newton *nw, double eta, double g2, int max_it, int iteration, double viol)
{
	size_t n = nw->p->n;
	double rz, r2 = g2, least = g2; /* the smallest residual, d = 0's at first */
	int ret = 0;

	precondition(nw, nw->res, nw->z);
	memcpy(nw->q, nw->z, n * sizeof *nw->q);
	rz = dot(nw->res, nw->z, n);
	for (int it = 0; it < max_it; it++) {
		double qhq, a, rz1, dmax = 0, step = 0;

		/* the first right after the caller's own poll */
		if (it > 0 && stop_asked(nw, iteration, viol))
			return 1;
		multiply(nw, nw->q, nw->hq);
		nw->products++;
		nw->spent++;
		qhq = dot(nw->q, nw->hq, n);
		if (!(qhq > 1e-300)) {
			ret = -1;
			break;
		}
		a = rz / qhq;
		for (size_t k = 0; k < n; k++) {
			nw->d[k] += a * nw->q[k];
			nw->res[k] -= a * nw->hq[k];
			dmax = fmax(dmax, fabs(nw->d[k]));
			step = fmax(step, fabs(a * nw->q[k]));
		}
		r2 = sqrt(dot(nw->res, nw->res, n));
		if (!(step > DBL_EPSILON * dmax))
			break;
		if (r2 <= eta * g2)
			return 0;
		if (r2 < least) {
			least = r2;
			memcpy(nw->best, nw->d, n * sizeof *nw->d);
		} else if (r2 > CG_DIVERGED * least) {
			break;
		}
		if (nw->dense && r2 > 2 * g2) {
			ret = -1;
			break;
		}
		precondition(nw, nw->res, nw->z);
		rz1 = dot(nw->res, nw->z, n);
		for (size_t k = 0; k < n; k++)
			nw->q[k] = nw->z[k] + rz1 / rz * nw->q[k];
		rz = rz1;
	}
	/* short of eta: the best iterate */
	if (least < g2 && r2 > least)
		memcpy(nw->d, nw->best, n * sizeof *nw->d);
	return ret;
}

/* The variables that the last step's direction (whole, before any
 * damping of the line search) still moves (SOLVER_MOVING). */
static size_t moving(const struct newton *nw)
{
	size_t m = 0;

	for (size_t k = 0; k < nw->p->n; k++)
		m += fabs(nw->step[k]) > SOLVER_MOVING;
	return m;
}

/*
 * The products that the directions left to the target may take with the
 * factor at hand (INFINITY: not known), all that a new factor could save.
 * A full step that left less than STOP_LINEAR_RATE of the violation is past
 * Newton's first steps: from here on each step shrinks it at least as
 * much (quadratic convergence, more), which bounds the steps left. The
 * last direction took its products for the e-folds of CG's residual that
 * its eta asked; eta's e-folds at most double a step. So near the
 * optimum a factor whose price the directions have paid is kept where
 * the step or two left could not pay for a new one: a new factor of H's
 * blocks, unlike one of H whole, does not even spare them their CG.
 */
static double products_left(const struct newton *nw, double eta, double viol)
{
	double steps;

	if (!(nw->ratio < STOP_LINEAR_RATE) || nw->products <= 0 || !(nw->eta_last < 1) ||
	    !(viol > nw->target))
		return INFINITY;
	steps = ceil(log(nw->target / viol) / log(nw->ratio));
	return (double)nw->products / -log(nw->eta_last) * -log(eta) * (pow(2, steps) - 1);
}

/*
 * The Newton direction. With a factor of H made at this point it is
 * exact: d = H^+ (-g), no product needed. With an older one, or H's
 * blocks only (block-Jacobi), PCG; should an old factor's curvature
 * break down, the factor is made anew here. With Jacobi, a
 * breakdown keeps what CG has. H is positive semidefinite; a direction
 * that is not downhill falls back to the Jacobi-preconditioned gradient.
 * Each CG step is a pass over the buckets, and with Jacobi a direction
 * takes a hundred of them on a thousand open rows and more: a cancel is
 * polled at each but the first (iteration and viol: the current point's,
 * to report), and direction returns 1 if the caller asked to stop.
 */
static int direction(struct newton *nw, const double *x, double eta, int max_it, int iteration,
		     double viol)
{
	const struct newton_problem *p = nw->p;
	size_t n = p->n;
	int fresh =
		nw->dense &&
		(!nw->factored || held_changed(nw) ||
		 (nw->spent > p->cg_budget && products_left(nw, eta, viol) > (double)p->cg_budget)),
	    ret = 0;

	/* diag(H) at this point: Jacobi's (with a factor, only its
	 * fallback's, made there when needed) and the L1 shift's; a pass
	 * over every pair of a cell and a row, dearer than a product */
	if (fresh)
		factor_at(nw, next_blocks(nw));
	else if (!nw->dense || p->l1)
		p->diag(p->ctx, nw->diag);
	nw->products = 0;
	for (int pass = 0; pass < 2; pass++) {
		double g2 = residual(nw);

		if (fresh && nw->nf == 1) { /* H whole: exact */
			precondition(nw, nw->res, nw->d);
			break;
		}
		ret = pcg(nw, eta, g2, max_it, iteration, viol);
		if (ret > 0)
			return 1;
		if (!(ret < 0 && nw->dense && !fresh))
			break;
		/* an old factor broke down: made anew, in a probe of the same
		 * blocks while some multiplier still moves (there CG breaks
		 * down where H vanishes along a forced zero's runaway
		 * multiplier, which H whole would not change), unless the
		 * probe runs to its end (STOP_EARLY_STALL) and the blocks'
		 * last step did not halve the violation: H whole is then what
		 * is left to try before it stalls; when none moves, the
		 * breakdown is rounding, which H whole ends */
		fresh = 1;
		factor_at(nw, p->stop && nw->nf > 1 && moving(nw) &&
				      !(p->stop == STOP_EARLY_STALL && nw->slow)
				  ? nw->nf
				  : next_blocks(nw));
	}
	nw->eta_last = eta;
	if (!(dot(nw->d, nw->pg, n) < 0)) {
		if (!fresh && nw->dense && !p->l1)
			p->diag(p->ctx, nw->diag);
		jacobi(nw, nw->pg, nw->d);
		for (size_t k = 0; k < n; k++)
			nw->d[k] = -nw->d[k];
	}
	/* a weighted variable at 0 moves only into the orthant its
	 * pseudo-gradient chose (elsewhere the step stops at 0: trial) */
	for (size_t k = 0; p->l1 && k < n; k++)
		if (p->l1[k] > 0 && x[k] == 0 && !(nw->d[k] * nw->orth[k] > 0))
			nw->d[k] = 0;
	return 0;
}

/* x1 = x + s d, within the orthant (a weighted variable that would
 * change sign stops at 0); *sgd becomes the decrease F's pseudo-gradient
 * predicts for it (s d's own without weights). */
static void trial(struct newton *nw, const double *x, double s, double *sgd)
{
	const struct newton_problem *p = nw->p;

	for (size_t k = 0; k < p->n; k++) {
		nw->x1[k] = x[k] + s * nw->d[k];
		if (p->l1 && p->l1[k] > 0 && nw->x1[k] * nw->orth[k] < 0)
			nw->x1[k] = 0;
	}
	if (!p->l1)
		return;
	*sgd = 0;
	for (size_t k = 0; k < p->n; k++)
		*sgd += nw->pg[k] * (nw->x1[k] - x[k]);
}

/*
 * Backtracking from the full step. Armijo on f, which eval gives relative
 * to the prepared point, exact to rounding; near the optimum the decrease
 * falls below that rounding (p->f_noise), where it proves nothing: such a
 * step may not raise the violation more than tenfold (a step that f
 * cannot judge could otherwise let the violation climb by orders of
 * magnitude, step after step), and otherwise a step must reduce the
 * violation. Returns 1 with x
 * moved (gradient in nw->g, violation in *viol), 0 if no step helped, -1
 * if the caller asked to stop between two trials (x and the problem's
 * state restored, both). A wild step far from the optimum takes twenty
 * halvings and more, each a pass over the buckets: a cancel is polled
 * before every trial but the first, so full steps add no call.
 */
static int line_search(struct newton *nw, int iteration, double *x, double *viol, int *full)
{
	const struct newton_problem *p = nw->p;
	size_t n = p->n;
	double gd = dot(nw->pg, nw->d, n), v1;
	int stop = 0, taken = 0;

	for (int i = 0; !taken && i < LINE_HALVINGS; i++) {
		double s = ldexp(1.0, -i), f1, sgd = s * gd;

		if (i > 0 && (stop = stop_asked(nw, iteration, *viol)))
			break;
		trial(nw, x, s, &sgd);
		f1 = evaluate(nw, nw->x1, x, nw->hq, nw->res, &v1);
		if (!isfinite(f1))
			continue;
		if ((f1 <= ARMIJO * sgd && (ARMIJO * sgd < -p->f_noise || v1 <= 10 * *viol)) ||
		    (f1 <= p->f_noise && v1 < *viol) ||
		    (v1 <= 0.1 * *viol && f1 <= 1e-8 * fabs(gd))) {
			memcpy(nw->step, nw->d, n * sizeof *nw->step);
			memcpy(x, nw->x1, n * sizeof *x);
			memcpy(nw->g, nw->hq, n * sizeof *nw->g);
			*viol = v1;
			*full = i == 0;
			taken = 1;
		}
	}
	if (!taken) /* back to x: the problem's state, the gradients */
		evaluate(nw, x, x, nw->g, NULL, viol);
	else if (p->l1)
		pseudo_gradient(p, x, nw->g, nw->pg);
	return taken ? 1 : stop ? -1 : 0;
}

/* The factor's storage (every block square) and its scratch (for the
 * largest block), and the kept rows' lists; returns 0 on failure, none
 * of them allocated (so nw->ldl set means all are). */
static int factor_alloc(struct newton *nw)
{
	const struct newton_problem *p = nw->p;
	int whole = nw->nb == 1 || p->whole;
	size_t widest = whole ? p->n : 0;

	for (size_t b = 0; nw->nb > 1 && b < nw->nb; b++)
		widest = p->block_off[b + 1] - p->block_off[b] > widest
			     ? p->block_off[b + 1] - p->block_off[b]
			     : widest;
	nw->ldl = malloc((whole ? p->n * p->n : nw->sq[nw->nb]) * sizeof *nw->ldl + 1);
	nw->work = malloc(schur_dense_work(widest) * sizeof *nw->work);
	nw->kept = malloc((p->n + 1) * sizeof *nw->kept);
	nw->nk = malloc((nw->nb + 1) * sizeof *nw->nk);
	nw->zk = malloc((p->n + 1) * sizeof *nw->zk);
	if (nw->ldl && nw->work && nw->kept && nw->nk && nw->zk)
		return 1;
	free(nw->ldl), free(nw->work), free(nw->kept), free(nw->nk), free(nw->zk);
	nw->ldl = nw->work = nw->zk = NULL;
	nw->kept = NULL;
	nw->nk = NULL;
	return 0;
}

/* A factorization preconditions from now on: CG took more products in
 * all than forming and factoring H costs (p->cg_budget: the rule of
 * renting skis until their price is paid, within twice the cost of
 * knowing the future), and the problem made itself ready (p->form). Out
 * of memory: Jacobi goes on. */
static void switch_to_formed(struct newton *nw)
{
	const struct newton_problem *p = nw->p;

	if (nw->dense || !p->hessian || nw->spent <= budget(nw))
		return;
	nw->dense = (nw->ldl || factor_alloc(nw)) && (!p->form || !p->form(p->ctx));
}

static enum pm_status run(struct newton *nw, int max_iterations, double target, double *x,
			  struct maxent_stats *st, int *stalled)
{
	const struct newton_problem *p = nw->p;
	double viol, g0;
	int cg_max = p->n < 200 ? 200 : p->n < 2000 ? (int)p->n : 2000, fulls = 0, steps = 0;
	size_t last = SIZE_MAX, now;   /* variables moving (moving()) */
	double past[STOP_STALL_STEPS]; /* the violation of the last STOP_STALL_STEPS steps */

	nw->target = target;
	evaluate(nw, x, x, nw->g, NULL, &viol);
	g0 = sqrt(dot(nw->pg, nw->pg, p->n));
	while (viol > target && st->iterations < max_iterations) {
		double eta = fmin(0.1, sqrt(sqrt(dot(nw->pg, nw->pg, p->n)) / (g0 + 1e-300)));
		double before = viol;
		int full = 0, moved, narrowing;

		p->prepare(p->ctx, x);
		orthant(nw, x);
		if (direction(nw, x, eta, cg_max, st->iterations, viol))
			return PM_ERR_CANCELLED;
		moved = line_search(nw, st->iterations, x, &viol, &full);
		switch_to_formed(nw);
		if (moved < 0)
			return PM_ERR_CANCELLED;
		if (!moved) {
			*stalled = 1;
			break;
		}
		st->iterations++;
		fulls = full ? fulls + 1 : 0;
		nw->ratio = full ? viol / before : 1;
		now = p->stop ? moving(nw) : 0;
		narrowing = stop_narrowing(now, last, p->n);
		last = now;
		nw->slow = 2 * now <= p->n && viol > 0.5 * before;
		/* the moving ones point the zero search to its rows
		 * (newton_moving) */
		if (stop_newton_early(p->stop, narrowing, fulls, steps, past, viol)) {
			*stalled = 1;
			break;
		}
		past[steps++ % STOP_STALL_STEPS] = before;
		if (stop_asked(nw, st->iterations, viol))
			return PM_ERR_CANCELLED;
	}
	st->max_violation = viol;
	return PM_OK;
}

enum pm_status newton_create(const struct newton_problem *p, struct newton **out)
{
	size_t n = p->n + 1;
	struct newton *nw = calloc(1, sizeof *nw);
	double *all = calloc(11 * n, sizeof *all);

	*out = NULL;
	if (!nw || !all) {
		free(nw);
		free(all);
		return PM_ERR_NOMEM;
	}
	nw->p = p;
	nw->g = all;
	nw->d = all + n;
	nw->res = all + 2 * n;
	nw->z = all + 3 * n;
	nw->q = all + 4 * n;
	nw->hq = all + 5 * n;
	nw->diag = all + 6 * n;
	nw->x1 = all + 7 * n;
	nw->step = all + 8 * n;
	nw->best = all + 9 * n;
	nw->pg = p->l1 ? all + 10 * n : nw->g;
	nw->orth = p->l1 ? calloc(n, sizeof *nw->orth) : NULL;
	nw->fheld = p->l1 ? calloc(n, sizeof *nw->fheld) : NULL;
	nw->ratio = nw->eta_last = 1;
	nw->nb = nw->nf = p->n_blocks > 1 ? p->n_blocks : 1;
	nw->sq = malloc((nw->nb + 1) * sizeof *nw->sq);
	if (!nw->sq || (p->l1 && (!nw->orth || !nw->fheld))) {
		newton_destroy(nw);
		return PM_ERR_NOMEM;
	}
	nw->sq[0] = 0;
	for (size_t b = 0, lo; b < nw->nb; b++) {
		size_t m = block(nw, b, &lo);

		nw->sq[b + 1] = nw->sq[b] + m * m;
	}
	if (p->hessian && p->formed) {
		nw->dense = factor_alloc(nw);
	}
	*out = nw;
	return PM_OK;
}

void newton_destroy(struct newton *nw)
{
	if (!nw)
		return;
	free(nw->g);
	free(nw->orth);
	free(nw->fheld);
	free(nw->ldl);
	free(nw->work);
	free(nw->kept);
	free(nw->nk);
	free(nw->zk);
	free(nw->sq);
	free(nw);
}

enum pm_status newton_minimize(struct newton *nw, int max_iterations, double target, double *x,
			       struct maxent_stats *st, int *stalled)
{
	*stalled = 0;
	return run(nw, max_iterations, target, x, st, stalled);
}

void newton_moving(const struct newton *nw, const uint32_t *var_row, uint8_t *rows)
{
	for (size_t k = 0; k < nw->p->n; k++)
		rows[var_row[k]] |= fabs(nw->step[k]) > SOLVER_MOVING;
}
