/*
 * scaling: one bucket's matrix-scaling problem, Newton on the
 * log-scalings with Sinkhorn as the fallback (scaling.c). Internal to
 * solver/.
 */
#ifndef PMAXENT_SCALING_H
#define PMAXENT_SCALING_H

#include "constraints.h"

/* ---- scaling.c ---------------------------------------------------------- */

/* Scratch for scaling_solve on blocks up to g x h (init/finish). */
struct scaling_work {
	double *yt, *f, *rs, *cs, *p, *q, *da, *db, *ta, *tb;
	double *kk, *em, *xa, *xb; /* the kernel, and per row and column */
	const double *kp, *ep;	   /* the kernel in use */
	double dm_max;
	int sweeps;	 /* Sinkhorn's, in the last solve (for tests) */
	double *y0, *ab; /* for scaling_bucket */
};
enum pm_status scaling_work_init(struct scaling_work *w, size_t g, size_t h);
void scaling_work_finish(struct scaling_work *w);

/* Cap on an exponent of the scaling: wild trial multipliers must not
 * overflow. Up to SCALING_SMALL, the excess takes the expm1 form. */
#define SCALING_CAP   600.0
#define SCALING_SMALL 0.5

/* One bucket's scaling problem: y = y0 exp(dm + a_i + b_j) on the cells
 * that are not zero, rows summing to nq and columns to ns. All borrowed. */
struct scaling_block {
	size_t g, h;
	const double *y0, *dm; /* g x h; dm may be NULL (0) */
	/* NULL or, precomputed by the caller (cheaper than g h exponentials),
	 * kk = y0 exp(dm) (0 on zeros) if every |dm| <= SCALING_CAP, and
	 * em = expm1(dm) (may be NULL) if every |dm| <= SCALING_SMALL */
	const double *kk, *em;
	const uint8_t *zero;
	const uint32_t *nq, *ns;
	double *a, *b; /* log-scalings: start (warm) and result */
	double *y;     /* result, g x h */
	double excess; /* result with dm: Σ y0 expm1(dm + a + b), precise */
	/* a trial point of an outer line search: if Newton stalls far from
	 * the target, a few Sinkhorn sweeps, not thousands (the caller
	 * rejects the point) */
	int trial;
};

/* Solves k until the largest row or column violation is at most target
 * records (Newton, then Sinkhorn); returns that violation. */
double scaling_solve(struct scaling_block *k, struct scaling_work *w, double target);

/*
 * The maximum-entropy estimate of bucket b alone, given its forced zeros:
 * the scaling of its free cells to the bucket's QI and SA counts, written
 * to y (the bucket's cells). PM_ERR_INTERNAL if target is not reached.
 * w must fit the bucket.
 */
enum pm_status scaling_bucket(const struct dataset *ds, const struct invariants *inv, size_t b,
			      const uint8_t *zero, double *y, double target,
			      struct scaling_work *w);

#endif
