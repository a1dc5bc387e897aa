/*
 * twolevel: the two-level dual, one problem of it (struct twolevel): set
 * up in twolevel_init.c, solved in twolevel.c, its Hessian applied and
 * formed in twolevel_hessian.c from the per-bucket patterns of
 * twolevel_patterns.c. Internal to solver/.
 */
#ifndef PMAXENT_TWOLEVEL_H
#define PMAXENT_TWOLEVEL_H

#include "scaling.h"
#include "cancel.h"
#include "solver.h"

struct components;
struct maxent_stats;
struct newton_problem;
struct parallel;
struct solver_probe;
struct twolevel_patterns;

/*
 * The outer problem of the two-level dual (twolevel.c explains it): G over
 * the multipliers μ of the open knowledge rows, every coupled bucket
 * scaled exactly for the current μ. Relative to a base point (μ0, y0).
 */

/* ---- twolevel_init.c: one problem and its set-up ------------------------ */

/* Per part of the thread pool: scratch and partial results. */
struct twolevel_part {
	struct scaling_work w;
	double *dm, *kk, *em;  /* cells of the widest bucket: the kernel, */
	double *t, *u;	       /* and for products */
	double *vec;	       /* r: diag(H) */
	double *cacc;	       /* per class: H v's sums over its cells */
	uint64_t *stamp, tick; /* r: distinct rows of a bucket */
	uint32_t *loc, *rows;  /* r: local numbers, and the rows of a bucket */
	double *pq, *acc;      /* per local row: g + h sums, and the total */
	size_t pq_cap;	       /* doubles in pq */
	/* forming H: this part's share (r x r lower triangle packed, fixed point; valid if hgen
	 * is the pass's), per local row the dense part of R z
	 * (twolevel_hessian.c), the local matrix, R, and per entry of a
	 * bucket row's patterns its y */
	uint64_t *hfix;
	unsigned long hgen;
	double *dx, *dl, *rt, *sc, *pv;
	struct twolevel_patterns *pat; /* the bucket's patterns (twolevel_hessian.c) */
};

/*
 * One two-level problem: a set of coupled buckets and the open rows among
 * them (a connected component, or all of them). Per-cell arrays (zero,
 * y, y0, cls) are local: bucket k's cells start at coff[k], so
 * a small component costs its own size, not the table's.
 */
struct twolevel {
	const struct dataset *ds;
	const struct invariants *inv;
	struct cancel *cancel; /* polled by its solves (twolevel_run's; may be NULL) */
	uint8_t *zero;	       /* local copy of the forced zeros */
	double *out;	       /* the system's cells (inv numbering): twolevel_store */
	size_t nb;
	uint32_t *bk;	      /* coupled buckets, ascending */
	size_t *qoff, *soff;  /* per coupled bucket: its α and β */
	size_t *coff;	      /* cells before coupled bucket k: its local cells */
	size_t *foff;	      /* its factorization in fac */
	double *alpha, *beta; /* log-scalings since the base */
	double *fac;	      /* every bucket's M factored at the base */
	int factored;	      /* fac is current */
	/* the base's y0 and fac are still to be set (twolevel_base); the
	 * pass that forms H does it (form_base) */
	int base_pending, form_base;
	size_t r;
	uint32_t *row; /* open knowledge rows (inv rows) */
	double *rhs, *scale, *mu, *mu0;
	/* an interval row's half width (its rhs: the midpoint), the L1
	 * weight of its multiplier (newton_problem.l1); NULL without one */
	double *half;
	double *dd, *ex, *xm, dmu_max; /* μ - μ0, its exp and expm1; max |μ - μ0| */
	size_t *rc_off;		       /* prefix sums of the open rows' cell counts */
	/* the classes (twolevel_init.c's init_classes): per local cell its
	 * class (cls, 0: no open row), per class 1 .. ncls its open rows
	 * ascending (cl_row at cl_off) and its cells ascending (cc_cell at
	 * cc_off), per open row its classes (rk_cls at rk_off); n_entries
	 * pairs of a cell and an open row through it */
	uint32_t *cls, *cl_row, *cc_cell, *rk_cls;
	size_t ncls, *cl_off, *cc_off, *rk_off, n_entries;
	/* per class: Σ Δμ over its rows, Π exp(Δμ), expm1 of the sum
	 * (kernel), Σ y over its cells (the gradient), v summed (products) */
	double *cdm, *cex, *cem, *csum, *cv;
	size_t ck_max;	     /* most open rows through a cell */
	double *y0, *y;	     /* per local cell */
	uint8_t *exact;	     /* per coupled bucket: y = y0 solves it at μ0 */
	double inner_target; /* records */
	/* the inner target of G's pass now (eval_target): looser while the
	 * violation at the base (base_viol, of the last pass: last_viol) is
	 * large, for Newton, up to `loosest` (0: always exact), never near
	 * its target (outer) */
	double eval_target, base_viol, last_viol, outer, loosest;
	size_t row_len;	       /* most cells of an open row */
	struct parallel *pool; /* NULL: one part */
	int own_pool;	       /* created by twolevel_init, not borrowed */
	int parts;
	struct twolevel_part *part;
	/* G's pass (eval_mu) by chunks of buckets, ev_off[i] .. ev_off[i + 1],
	 * each taken by whichever thread is free, with sums of its own (ev_f,
	 * ev_worst) added in chunk order; then the gradient by chunks of
	 * classes (gr_off), each class's sum (csum) over its cells in order */
	size_t n_ev, *ev_off, n_gr, *gr_off;
	double *ev_f, *ev_worst;
	/* H is formed (worth it, and the scratch fits): each pass that forms
	 * it finds every bucket's patterns (rows with the same cells in the
	 * bucket) in its part's scratch (pat) */
	int dense, formable;
	long cg_budget;	   /* CG products a direction may take before forming H costs less */
	long block_budget; /* ... before forming its blocks costs less */
	/* H's blocks: the open rows are ordered by their first cell's SA
	 * value, and runs of one value (at most TWOLEVEL_BLOCK_ROWS rows)
	 * are blocks blk_off[b] .. blk_off[b + 1]; blk_of: each row's,
	 * blk_val: each block's value. With more open rows than one H may
	 * have (blocked), only the blocks are formed: block-Jacobi for CG */
	size_t nblk, *blk_off, *blk_pk; /* blk_pk: each block's in hfix */
	uint32_t *blk_of, *blk_val;
	int blocked, whole_ok; /* blocked: the pass forms the blocks only */
	double hscale;	       /* H's fixed point (fixed_scale) */
	int clamp_all;	       /* tests: every pair through the clamped conversion */
	unsigned long hgen;    /* passes that formed H */
};

/* Shape of coupled bucket k: its first cell, rows and columns (inline:
 * every per-bucket pass asks, for every bucket). */
static inline void twolevel_shape(const struct twolevel *t, size_t k, size_t *off, size_t *g,
				  size_t *h)
{
	size_t b = t->bk[k];

	*off = t->coff[k];
	*g = t->ds->bq_off[b + 1] - t->ds->bq_off[b];
	*h = t->ds->bs_off[b + 1] - t->ds->bs_off[b];
}
/* The open rows through local cell c, *n of them: its class's. */
static inline const uint32_t *twolevel_cell_rows(const struct twolevel *t, size_t c, size_t *n)
{
	uint32_t v = t->cls[c];

	*n = t->cl_off[v + 1] - t->cl_off[v];
	return t->cl_row + t->cl_off[v];
}

/* Problems of fewer buckets run on one thread: their passes are too short
 * to share. */
#define TWOLEVEL_POOL_BUCKETS 64
/* Rows of one block of H at most (twolevel.blk_off). */
#define TWOLEVEL_BLOCK_ROWS 2048

/* For the coupled buckets (coupled[b]), the open rows (knowledge rows not
 * implied[]): the problem at μ = 0, every bucket scaled alone, on a pool
 * of its own. twolevel_store writes the coupled buckets' estimate into y
 * (the system's cells). Free with twolevel_finish, also after a failure. */
enum pm_status twolevel_init(struct twolevel *t, const struct dataset *ds,
			     const struct invariants *inv, const uint8_t *zero,
			     const uint8_t *implied, const uint8_t *coupled, int threads,
			     double *y);
/* The same for component i of cs (its buckets and open rows), on the
 * borrowed pool (may be NULL: one thread), used only if the problem is
 * large enough; start (per cell of the system, may be NULL) a base point
 * other than the closed form (struct solver_warm.y), taken in the buckets
 * where it is positive on every free cell. */
enum pm_status twolevel_init_lists(struct twolevel *t, const struct dataset *ds,
				   const struct invariants *inv, const uint8_t *zero,
				   const struct components *cs, size_t i, struct parallel *pool,
				   const double *start, double *y);

/* ---- twolevel.c --------------------------------------------------------- */

/*
 * The loosest inner target (records) of a Newton evaluation far from the
 * optimum (eval_mu): while the outer violation is large, the outer step
 * needs G and its gradient only to well below that violation, and a
 * looser inner target saves inner Newton steps; near the target the
 * inner target tightens (eval_target).
 */
#define TWOLEVEL_LOOSE 1e-4

/* Frees what twolevel_init or twolevel_init_lists made, also after a
 * failure. */
void twolevel_finish(struct twolevel *t);
/* Copies the estimate into the system's cells (twolevel_init's y). */
void twolevel_store(const struct twolevel *t);
/* Newton (and L-BFGS should it stall) on t to o's tolerance within its
 * iteration limit, cancel (may be NULL) polled; with probe (may be
 * NULL), a probe (components_solve). st gets the outcome. */
enum pm_status twolevel_run(struct twolevel *t, const struct solver_options *o,
			    struct cancel *cancel, const struct solver_probe *probe,
			    struct maxent_stats *st);
/* G(μ) - G(μ0), the gradient (records) into g (may be NULL), the largest
 * violation of any row, inner ones included. */
double twolevel_eval(struct twolevel *t, const double *mu, double *g, double *violation);
/* μ, which the last twolevel_eval evaluated, becomes the base point; every
 * bucket's M is factored there. */
void twolevel_prepare(struct twolevel *t, const double *mu);
/* The outer problem of t for newton_minimize: callbacks, ctx and n; H is
 * offered (with `formed`) where t can form it, from the first step when
 * t->dense, else once CG has cost more than forming. */
void twolevel_problem(struct twolevel *t, int formed, struct newton_problem *np);
/* L-BFGS on G from μ = t->mu (the fallback of twolevel_run) until the
 * violation is within target; st->iterations goes on counting. */
enum pm_status twolevel_lbfgs(struct twolevel *t, const struct solver_options *o, double target,
			      struct maxent_stats *st);
/* Bucket k's share of a new base: y0 = y, M factored at it. */
void twolevel_base_bucket(struct twolevel *t, size_t k);
/* The new base's per-bucket share, if twolevel_prepare left it pending. */
void twolevel_base(struct twolevel *t);
/* The coupled buckets [*lo, *hi) of part p, balanced by cells. */
void twolevel_range(const struct twolevel *t, int p, int parts, size_t *lo, size_t *hi);

/* ---- twolevel_hessian.c ------------------------------------------------- */

/* After twolevel_init's setup: whether H can be formed (formable) and
 * should be from the start (dense), and if so, the structure and scratch
 * for forming it (twolevel_hessian_enable: the same later, once CG has
 * shown the cost model too hopeful). */
enum pm_status twolevel_hessian_init(struct twolevel *t);
enum pm_status twolevel_hessian_enable(struct twolevel *t);
/* At the prepared point: H v, diag(H), and H formed (lower triangle of
 * r x r, row major; only if t->dense). */
void twolevel_hessian_apply(struct twolevel *t, const double *v, double *out);
void twolevel_hessian_diag(struct twolevel *t, double *out);
void twolevel_hessian_form(struct twolevel *t, int blocks, double *out);
/* Tests: over the buckets, the open rows that share a pattern with an
 * earlier row of the bucket (t must be formable). */
size_t twolevel_hessian_shared(struct twolevel *t);

/* ---- twolevel_patterns.c ------------------------------------------------ */

/* One bucket's patterns (twolevel_patterns.c): its n open rows
 * ascending (rows), each one's pattern (pat: rows with the same cells in
 * the bucket share one; np of them), per bucket row i the patterns
 * through its cells with their cells (rpat, rcell from at[i], rp_n[i] of
 * them; patterns and cells within a bucket, under 2^16: form_sizes), and
 * scratch (lo, key, pkey, first, cells; bits, one per open row). */
struct twolevel_patterns {
	size_t n, np, *at, *lo;
	uint32_t *rows, *rp_n, *first, *cells;
	uint16_t *pat, *rpat, *rcell;
	uint64_t *key, *pkey, *bits;
	/* the patterns by key: open addressing (mask + 1 slots), a slot
	 * in use in this bucket when its gen is the bucket's */
	uint16_t *slot;
	uint32_t *gen, now;
	size_t mask;
};

/* A part's scratch for the patterns of buckets of up to rows open rows,
 * entries pairs of a cell and a row, g bucket rows; *out owned by the
 * caller (twolevel_patterns_destroy, also after a failure; NULL-safe). */
enum pm_status twolevel_patterns_create(const struct twolevel *t, size_t rows, size_t entries,
					size_t g, struct twolevel_patterns **out);
void twolevel_patterns_destroy(struct twolevel_patterns *p);
/* Bucket k's patterns into pt->pat (pt->loc, pt->stamp its scratch). */
void twolevel_patterns_find(const struct twolevel *t, struct twolevel_part *pt, size_t k);
/* Bucket k's distinct open rows, and in *entries its pairs of a cell and
 * an open row through it (pt->stamp its scratch). */
size_t twolevel_bucket_rows(const struct twolevel *t, struct twolevel_part *pt, size_t k,
			    size_t *entries);

#endif
