/*
 * The Hessian of the two-level dual's outer function G (twolevel.c):
 *
 *     H = Σ_b A_b (Y - Y E M_b^+ E^T Y) A_b^T,
 *
 * the Schur complement of the invariants' block in the full dual's
 * Hessian, M_b = E^T Y E the Hessian of bucket b's scaling problem
 * (schur.c), factored at the base point by twolevel_prepare.
 *
 * newton.c uses it in one of two ways. Products H v (one pass over the
 * coupled cells, one small solve per bucket) and diag(H) feed Jacobi-
 * preconditioned conjugate gradients, never forming H: that scales with
 * the number r of open rows. Or, when r is small, H is formed (one pass
 * per bucket over the pairs of its open rows, through a square root of
 * M_b^+) and factored, and the Newton step is exact: a formed H costs
 * about r^3/6 multiply-adds to factor plus a few per pair of rows that
 * share a bucket, CG about twenty products per step, and
 * twolevel_hessian_init picks the cheaper.
 *
 * Every per-bucket pass runs on the thread pool, and the result does not
 * depend on scheduling: the products' parts take fixed ranges of buckets
 * and are added in part order; forming H, whose cost per bucket varies
 * too much for fixed ranges to split it evenly (it grows with the open
 * rows through the bucket, which vary from bucket to bucket), hands out
 * chunks of buckets to whichever thread is free and sums in fixed point,
 * exact in any order.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "loops.h"
#include "parallel.h"
#include "scaling.h"
#include "schur.h"
#include "twolevel.h"

/* Open rows up to which H may be formed (its lower triangle per part, in
 * fixed point, and newton.c's factor: 512 MiB in all at most). */
#define DENSE_ROWS 5792
/* Cap (doubles) on a part's per-bucket scratch for forming H. */
#define DENSE_SCRATCH ((size_t)1 << 22)
/*
 * The cost model, in multiply-adds of the factorization: forming H costs
 * about DENSE_PAIR of them per pair of open rows sharing a bucket (the
 * pass over the pairs, R, the scatter), a product H v about DENSE_CELL
 * per coupled cell and per pair of a cell and an open row (cg_budget),
 * and CG takes about DENSE_CG
 * products per Newton step on well-conditioned problems; on
 * ill-conditioned ones, with many open rows, far more, which is why
 * newton.c forms H (or its blocks) once the directions took more than
 * cg_budget (block_budget) of them in all.
 */
/* Beyond any share of H in fixed point (fixed_scale: 2^61). */
#define FIXED_MAX  0x1p62
#define DENSE_PAIR 12.0
#define DENSE_CELL 12.0
#define DENSE_CG   80.0

/* Where row i of a packed lower triangle starts. */
static inline size_t packed(size_t i)
{
	return i * (i + 1) / 2;
}

/* Entries of H, or with t->blocked of its blocks (twolevel.blk_off):
 * squares (what twolevel_hessian_form writes), or lower triangles (the
 * parts' fixed point shares). */
static size_t entries_of(const struct twolevel *t, int square)
{
	size_t sum = 0;

	for (size_t b = 0; b < (t->blocked ? t->nblk : 1); b++) {
		size_t n = t->blocked ? t->blk_off[b + 1] - t->blk_off[b] : t->r;

		sum += square ? n * n : packed(n);
	}
	return sum;
}

/* Sums the parts' vectors into out (in part order: deterministic). */
static void reduce(const struct twolevel *t, double *out)
{
	memcpy(out, t->part[0].vec, t->r * sizeof *out);
	for (int p = 1; p < t->parts; p++)
		for (size_t k = 0; k < t->r; k++)
			out[k] += t->part[p].vec[k];
}

/* ---- products and the diagonal ------------------------------------------ */

/*
 * Bucket k's part of H applied to a vector given per cell as w (the sum
 * of v over the open rows through the cell): u = Y w - Y E M^+ E^T Y w,
 * the change of y along v once the bucket's scalings have followed.
 */
static void bucket_apply(struct twolevel *t, struct twolevel_part *pt, size_t k, const double *w,
			 double *u)
{
	size_t off, g, h;
	struct scaling_work *s = &pt->w;
	const double *y;

	twolevel_shape(t, k, &off, &g, &h);
	y = t->y + off;
	memset(s->q, 0, h * sizeof *s->q);
	for (size_t i = 0; i < g; i++) {
		s->p[i] = 0;
		for (size_t j = 0; j < h; j++) {
			u[i * h + j] = y[i * h + j] * w[i * h + j];
			s->p[i] += u[i * h + j];
			s->q[j] += u[i * h + j];
		}
	}
	schur_solve(t->fac + t->foff[k], y, g, h, s->p, s->q, s->da, s->db);
	for (size_t i = 0; i < g; i++)
		for (size_t j = 0; j < h; j++)
			u[i * h + j] -= y[i * h + j] * (s->da[i] + s->db[j]);
}

/*
 * Per bucket: w (per cell, the sum of v over its open rows: its class's,
 * cv) and u added to the cell's class (cacc): a lookup per cell, where a
 * list of the rows of each cell cost a pass over every pair of a cell and
 * a row, ten on rules of one attribute. The rows' sums are the classes'
 * (twolevel_hessian_apply).
 */
static void apply_part(void *ctx, int p, int parts)
{
	struct twolevel *t = ctx;
	struct twolevel_part *pt = &t->part[p];
	size_t lo, hi;

	memset(pt->cacc, 0, (t->ncls + 1) * sizeof *pt->cacc);
	twolevel_range(t, p, parts, &lo, &hi);
	for (size_t k = lo; k < hi; k++) {
		size_t off, g, h;
		const uint32_t *cls;

		twolevel_shape(t, k, &off, &g, &h);
		cls = t->cls + off;
		for (size_t c = 0; c < g * h; c++)
			pt->t[c] = t->cv[cls[c]];
		bucket_apply(t, pt, k, pt->t, pt->u);
		for (size_t c = 0; c < g * h; c++)
			pt->cacc[cls[c]] += pt->u[c];
	}
}

/* H v: v summed per class (cv), the buckets' pass, the parts' class sums
 * added in part order (deterministic), each row's the sum of its
 * classes'. */
void twolevel_hessian_apply(struct twolevel *t, const double *v, double *out)
{
	double *sum = t->part[0].cacc;

	twolevel_base(t);
	for (size_t c = 0; c <= t->ncls; c++) {
		double s = 0;

		for (size_t e = t->cl_off[c]; e < t->cl_off[c + 1]; e++)
			s += v[t->cl_row[e]];
		t->cv[c] = s;
	}
	parallel_run(t->pool, apply_part, t);
	for (int p = 1; p < t->parts; p++)
		for (size_t c = 1; c <= t->ncls; c++)
			sum[c] += t->part[p].cacc[c];
	for (size_t k = 0; k < t->r; k++) {
		double s = 0;

		for (size_t e = t->rk_off[k]; e < t->rk_off[k + 1]; e++)
			s += sum[t->rk_cls[e]];
		out[k] = s;
	}
}

/*
 * The bucket's distinct open rows: loc[row] their local number, pt->rows
 * the list; per row its y summed (acc) and, at stride g + h in pq, P (the
 * row sums of y over its cells) and x = Σ y_c (R_i + R_j) (R_i, R_j: the
 * last h entries of the columns of c's row i and column j of R, a square
 * root of M^+ in rt: schur_root), as long as they fit the scratch (else
 * 0).
 */
static size_t bucket_rows(struct twolevel *t, struct twolevel_part *pt, size_t k)
{
	size_t off, g, h, n = 0;
	const double *rt = pt->rt;

	twolevel_shape(t, k, &off, &g, &h);
	pt->tick++;
	for (size_t c = 0; c < g * h; c++) {
		size_t nr, i = c / h;
		const uint32_t *rows = twolevel_cell_rows(t, off + c, &nr);
		const double *ri = rt + i * h, *rj = rt + (g + c % h) * h;
		double v = t->y[off + c];

		for (size_t e = 0; e < nr; e++) {
			uint32_t row = rows[e];
			double *pl;

			if (pt->stamp[row] != pt->tick) {
				if ((n + 1) * (g + h) > pt->pq_cap)
					return 0;
				pt->stamp[row] = pt->tick;
				pt->loc[row] = (uint32_t)n;
				pt->rows[n] = row;
				pt->acc[n] = 0;
				memset(pt->pq + n * (g + h), 0, (g + h) * sizeof *pt->pq);
				n++;
			}
			pl = pt->pq + pt->loc[row] * (g + h);
			pt->acc[pt->loc[row]] += v;
			pl[i] += v;
			for (size_t j = 0; j < h; j++)
				pl[g + j] += v * (ri[j] + rj[j]);
		}
	}
	return n;
}

/* Row `row`'s diagonal entry from bucket k, one row at a time (buckets
 * too large for the scratch of bucket_rows). */
static double diag_slow(struct twolevel *t, struct twolevel_part *pt, size_t k, uint32_t row)
{
	size_t off, g, h;
	double s = 0;

	twolevel_shape(t, k, &off, &g, &h);
	for (size_t d = 0; d < g * h; d++) {
		size_t nr;
		const uint32_t *rows = twolevel_cell_rows(t, off + d, &nr);

		pt->t[d] = 0;
		for (size_t e = 0; e < nr; e++)
			pt->t[d] += rows[e] == row;
	}
	bucket_apply(t, pt, k, pt->t, pt->u);
	for (size_t d = 0; d < g * h; d++)
		s += pt->u[d] * pt->t[d];
	return s;
}

/*
 * diag(H): bucket k adds to row l's entry a^T Y a - z^T M^+ z with
 * z = E^T Y a = (p, q) (a the row's cells in the bucket), and with R a
 * square root of M^+ (schur_root, once per bucket), z^T M^+ z = |R z|^2
 * = p^T Dq^-1 p + |x|^2 (bucket_rows' x, bucket_form's terms): a few
 * operations per pair of a cell and a row, where a solve per row and
 * bucket cost tens of them per pair.
 */
static void diag_part(void *ctx, int p, int parts)
{
	struct twolevel *t = ctx;
	struct twolevel_part *pt = &t->part[p];
	size_t lo, hi;

	memset(pt->vec, 0, t->r * sizeof *pt->vec);
	twolevel_range(t, p, parts, &lo, &hi);
	for (size_t k = lo; k < hi; k++) {
		size_t off, g, h, n;
		const double *dqi;

		twolevel_shape(t, k, &off, &g, &h);
		dqi = t->fac + t->foff[k];
		schur_root(dqi, t->y + off, g, h, pt->rt, pt->sc);
		n = bucket_rows(t, pt, k);
		for (size_t l = 0; l < n; l++) {
			const double *v = pt->pq + l * (g + h);
			double corr = 0;

			for (size_t i = 0; i < g; i++)
				corr += dqi[i] * v[i] * v[i];
			for (size_t j = 0; j < h; j++)
				corr += v[g + j] * v[g + j];
			pt->vec[pt->rows[l]] += pt->acc[l] - corr;
		}
		if (n > 0)
			continue;
		pt->tick++; /* too large for the scratch (or no row): row by row */
		for (size_t c = 0; c < g * h; c++) {
			size_t nr;
			const uint32_t *rows = twolevel_cell_rows(t, off + c, &nr);

			for (size_t e = 0; e < nr; e++)
				if (pt->stamp[rows[e]] != pt->tick) {
					pt->stamp[rows[e]] = pt->tick;
					pt->vec[rows[e]] += diag_slow(t, pt, k, rows[e]);
				}
		}
	}
}

void twolevel_hessian_diag(struct twolevel *t, double *out)
{
	twolevel_base(t);
	parallel_run(t->pool, diag_part, t);
	reduce(t, out);
}

/* ---- H formed ------------------------------------------------------------ */

/*
 * lm = -X X^T (both triangles: the scatter reads either) for the np rows
 * of X, given by columns (xt: h columns of np, np a multiple of 4, lm of
 * stride np), at least its entries among rows a .. b: rows l, l + 1 in
 * blocks of four columns, each a vector of four sums over the h columns
 * in order (the same order for an entry as for its mirror, so lm is
 * exactly symmetric, and the same whatever a and b), stored along the
 * rows and down the columns l, l + 1.
 */
INLINE void gram_width(const double *xt, size_t np, double *lm, size_t a, size_t b, size_t h)
{
	for (size_t l = a & ~(size_t)1; l < b; l += 2)
		for (size_t m = a & ~(size_t)3; m <= l; m += 4) {
			v4d a0 = {0, 0, 0, 0}, a1 = {0, 0, 0, 0};

			UNROLL
			for (size_t e = 0; e < h; e++) {
				v4d xm;

				memcpy(&xm, xt + e * np + m, sizeof xm);
				a0 += xt[e * np + l] * xm;
				a1 += xt[e * np + l + 1] * xm;
			}
			a0 = -a0;
			a1 = -a1;
			memcpy(lm + l * np + m, &a0, sizeof a0);
			memcpy(lm + (l + 1) * np + m, &a1, sizeof a1);
			UNROLL
			for (size_t i = 0; i < 4; i++) {
				lm[(m + i) * np + l] = a0[i];
				lm[(m + i) * np + l + 1] = a1[i];
			}
		}
}

VEC_CLONES static void gram(const double *xt, size_t np, double *lm, size_t a, size_t b, size_t h)
{
	BY_WIDTH(gram_width, h, xt, np, lm, a, b);
}

/*
 * Bucket row i's terms of lm (y, dqi of the bucket; the row's patterns
 * from pt->pat's at[i] with their cells, by cell): a pattern has one
 * cell in a row at most (a knowledge row's cells are of one SA value),
 * so p_l[i] is that cell's y, and lm[l][m] gets -dqi p_l[i] p_m[i] (the
 * first g entries' part of the Gram matrix) from each pair of the row's
 * patterns, and a_l^T Y a_m from each pair through one cell: every cell
 * is in one bucket row, so the row's pairs are all of them. Into both
 * triangles, as gram(). With one_value, the pairs through one cell
 * only: the row's of one SA value, all that H's blocks take.
 */
static void gram_p(struct twolevel_part *pt, size_t i, const double *y, double dqi, size_t np,
		   double *lm, int one_value)
{
	size_t n = pt->pat->rp_n[i];
	const uint16_t *pat = pt->pat->rpat + pt->pat->at[i],
		       *cell = pt->pat->rcell + pt->pat->at[i];

	for (size_t a = 0; a < n; a++)
		pt->pv[a] = y[cell[a]];
	for (size_t a = 0, run = 0; a < n; a++) {
		double ya = pt->pv[a], v = dqi * ya, *la = lm + pat[a] * np;

		run = a > 0 && cell[a] == cell[a - 1] ? run : a; /* the cell's first */
		for (size_t b = one_value ? run : 0; b < a; b++) {
			double d = (cell[b] == cell[a] ? ya : 0) - v * pt->pv[b];

			la[pat[b]] += d;
			lm[pat[b] * np + pat[a]] += d;
		}
		la[pat[a]] += ya - v * ya;
	}
}

/* v in H's fixed point (fixed_scale): truncated, saturating (NaN too)
 * rather than undefined. */
static inline uint64_t to_fixed(double v, double scale)
{
	double w = v * scale;

	w = w < FIXED_MAX ? w > -FIXED_MAX ? w : -FIXED_MAX : FIXED_MAX;
	return (uint64_t)(int64_t)w;
}

/*
 * Bucket k's lm (patterns' pairs) added to its rows' pairs of H, in fixed
 * point; without to_fixed's clamps (clamp 0, a constant at each call)
 * when every entry of lm is known to be within FIXED_MAX once scaled: a
 * third fewer instructions per pair of rows, and the pass over the pairs
 * is a third of forming H.
 */
INLINE void scatter(struct twolevel *t, struct twolevel_part *pt, const double *lm, size_t np,
		    int clamp)
{
	size_t n = pt->pat->n;
	const uint32_t *rows = pt->pat->rows;
	const uint16_t *pat = pt->pat->pat;

	for (size_t l = 0, m0 = 0; l < n; l++) { /* any pattern order: lm is whole */
		uint64_t *hl = pt->hfix + packed(rows[l]);
		const double *ml = lm + pat[l] * np;
		size_t lo = 0; /* the block's first row */

		if (t->blocked) { /* rows ascending: the block's are the last ones */
			size_t b = t->blk_of[rows[l]];

			lo = t->blk_off[b];
			while (rows[m0] < lo)
				m0++;
			hl = pt->hfix + t->blk_pk[b] + packed(rows[l] - lo);
		}
		for (size_t m = m0; m <= l; m++)
			hl[rows[m] - lo] += clamp ? to_fixed(ml[pat[m]], t->hscale)
						  : (uint64_t)(int64_t)(ml[pat[m]] * t->hscale);
	}
}

/*
 * The Gram part of lm that the pass needs: all of it for H whole; for
 * its blocks (rows of one SA value), each run of the patterns of one
 * value (numbered in order of their first rows, which are ordered by
 * value: init_blocks) by itself: in a bucket of five values, about a
 * fifth of the pairs.
 */
static void gram_groups(const struct twolevel *t, const struct twolevel_part *pt, const double *x,
			size_t np, double *lm, size_t h)
{
	const struct twolevel_patterns *p = pt->pat;

	if (!t->blocked) {
		gram(x, np, lm, 0, np, h);
		return;
	}
	for (size_t a = 0, b; a < p->np; a = b) {
		uint32_t v = t->blk_val[t->blk_of[p->rows[p->first[a]]]];

		for (b = a + 1; b < p->np && t->blk_val[t->blk_of[p->rows[p->first[b]]]] == v; b++)
			;
		gram(x, np, lm, a, b, h);
	}
}

/*
 * Bucket k's share of H, formed. With z_l = E^T Y a_l = (p_l, q_l) (a_l
 * the cells of its open row l: row and column sums of y over them, in
 * M's range) and R a square root of M^+ (schur_root),
 *
 *     H_b[l][m] = a_l^T Y a_m - z_l^T M^+ z_m = a_l^T Y a_m - R z_l . R z_m,
 *
 * the y of the cells the two rows share, less a Gram matrix. Both depend
 * on the rows' cells alone, so they are computed once per pattern (rows
 * with the same cells in the bucket) and added for every pair of rows.
 * The first g entries of R z are Dq^-1/2 p, whose products are summed
 * per bucket row over its few patterns, with the shared y (gram_p); the
 * last h, x = Σ_{c in a} y_c (R_i + R_j) with R_i, R_j the columns of
 * c's row and column, summed over the same lists, are dense (gram, by
 * columns).
 */
INLINE void bucket_form(struct twolevel *t, struct twolevel_part *pt, size_t k, size_t h)
{
	size_t off, g, np = (pt->pat->np + 3) & ~(size_t)3;
	const double *y;
	double *lm = pt->dl, *x = pt->dx, *rt = pt->rt, top = 0;

	off = t->coff[k]; /* h is the caller's constant */
	g = t->ds->bq_off[t->bk[k] + 1] - t->ds->bq_off[t->bk[k]];
	y = t->y + off;
	schur_root(t->fac + t->foff[k], y, g, h, rt, pt->sc);
	memset(x, 0, np * h * sizeof *x);
	for (size_t i = 0; i < g; i++) { /* by bucket row: few loops, few exits */
		size_t rp = pt->pat->at[i], nr = pt->pat->rp_n[i];
		const uint16_t *pr = pt->pat->rpat + rp, *cr = pt->pat->rcell + rp;

		for (size_t a = 0; a < nr; a++) {
			const double *ri = rt + i * h, *rj = rt + (g + cr[a] % h) * h;
			double yc = y[cr[a]], *xl = x + pr[a];

			UNROLL
			for (size_t j = 0; j < h; j++)
				xl[j * np] += yc * (ri[j] + rj[j]);
		}
	}
	gram_groups(t, pt, x, np, lm, h);
	for (size_t p = 0; p < pt->pat->np; p++) /* the Gram part's largest entry */
		top = !(-lm[p * np + p] <= top) ? -lm[p * np + p] : top;
	for (size_t i = 0; i < g; i++)
		gram_p(pt, i, y, t->fac[t->foff[k] + i], np, lm, t->blocked);
	if ((top + 2 * t->inv->bucket_n[t->bk[k]]) * t->hscale < FIXED_MAX && !t->clamp_all)
		scatter(t, pt, lm, np, 0);
	else
		scatter(t, pt, lm, np, 1);
}

/* The pass's item i: the buckets of G's chunk i (ev_off), into the share
 * of the part that takes it, cleared at its first item of the pass. */
static void form_item(void *ctx, size_t i, int p)
{
	struct twolevel *t = ctx;
	struct twolevel_part *pt = &t->part[p];

	if (pt->hgen != t->hgen) {
		memset(pt->hfix, 0, entries_of(t, 0) * sizeof *pt->hfix);
		pt->hgen = t->hgen;
	}
	for (size_t k = t->ev_off[i]; k < t->ev_off[i + 1]; k++) {
		if (t->base_pending)
			twolevel_base_bucket(t, k);
		twolevel_patterns_find(t, pt, k);
		BY_WIDTH(bucket_form, t->ds->bs_off[t->bk[k] + 1] - t->ds->bs_off[t->bk[k]], t, pt,
			 k);
	}
}

void twolevel_hessian_form(struct twolevel *t, int blocks, double *out)
{
	size_t r = t->r;

	t->blocked = blocks || !t->whole_ok;
	t->hgen++;
	parallel_items(t->pool, t->n_ev, form_item, t);
	if (t->base_pending) {
		t->base_pending = 0;
		t->factored = 1;
	}
	for (size_t b = 0, sq = 0; b < (t->blocked ? t->nblk : 1); b++) {
		size_t lo = t->blocked ? t->blk_off[b] : 0,
		       n = t->blocked ? t->blk_off[b + 1] - lo : r;
		size_t pk = t->blocked ? t->blk_pk[b] : 0;

		for (size_t i = 0; i < n; i++)
			for (size_t j = 0; j <= i; j++) {
				uint64_t sum = 0; /* exact, in any order */

				for (int p = 0; p < t->parts; p++)
					sum += t->part[p].hgen == t->hgen
						   ? t->part[p].hfix[pk + packed(i) + j]
						   : 0;
				out[sq + i * n + j] = (double)(int64_t)sum / t->hscale;
			}
		sq += n * n;
	}
}

/* ---- setup --------------------------------------------------------------- */

/* Scratch of bucket_form for the largest bucket of each kind (and of the
 * patterns: open rows, bucket rows and pairs of a cell and a row in a
 * bucket), and the pairs of open rows that share a bucket. */
struct form_sizes {
	size_t x, lm, rt, inc, n, entries, g, cells;
	double pairs;
};

/* Bucket row i's pairs of a cell and an open row (from cell off). */
static size_t row_entries(const struct twolevel *t, size_t off, size_t h, size_t i)
{
	size_t n = 0;

	for (size_t c = off + i * h; c < off + i * h + h; c++)
		n += t->cl_off[t->cls[c] + 1] - t->cl_off[t->cls[c]];
	return n;
}

/* The sizes of no bucket: scratch of one entry each. */
static const struct form_sizes sizes_none = {
    .x = 1, .lm = 1, .rt = 1, .inc = 1, .n = 1, .entries = 1, .g = 1};

static void grow(size_t *a, size_t b)
{
	*a = b > *a ? b : *a;
}

/* Bucket k's sizes taken into z (part pt's scratch counts its rows). */
static void bucket_sizes(struct twolevel *t, struct twolevel_part *pt, size_t k,
			 struct form_sizes *z)
{
	size_t off, g, h, entries, n = twolevel_bucket_rows(t, pt, k, &entries);
	size_t np = n + 3;

	twolevel_shape(t, k, &off, &g, &h);
	grow(&z->x, np * h);
	grow(&z->lm, np * np);
	grow(&z->rt, (g + h) * h);
	grow(&z->n, np);
	grow(&z->g, g);
	grow(&z->cells, g * h);
	grow(&z->entries, entries);
	for (size_t i = 0; i < g; i++)
		grow(&z->inc, row_entries(t, off, h, i));
	z->pairs += 0.5 * (double)n * (double)(n + 1);
}

struct sizes_ctx {
	struct twolevel *t;
	struct form_sizes *z; /* per part */
};

/* Part p's buckets, into its sizes (pairs: a sum of integers, exact in
 * any order). */
static void sizes_part(void *ctx, int p, int parts)
{
	struct sizes_ctx *c = ctx;
	struct form_sizes *z = &c->z[p];
	size_t lo, hi;

	*z = sizes_none;
	twolevel_range(c->t, p, parts, &lo, &hi);
	for (size_t k = lo; k < hi; k++)
		bucket_sizes(c->t, &c->t->part[p], k, z);
}

/* The sizes (a pass over the buckets on the pool, or on this thread if
 * the parts' sizes find no memory); returns whether H can be formed at
 * all: few open rows, each bucket's scratch within DENSE_SCRATCH, and
 * its patterns and cells numbered in 16 bits. */
static int form_sizes(struct twolevel *t, struct form_sizes *z)
{
	struct form_sizes *zs = calloc((size_t)t->parts, sizeof *zs);
	struct sizes_ctx c = {t, zs ? zs : z};
	int fits;

	/* sized for H whole where it may be formed, else for its blocks */
	t->whole_ok = t->r <= DENSE_ROWS;
	t->blocked = !t->whole_ok;
	fits = entries_of(t, 1) <= (size_t)DENSE_ROWS * DENSE_ROWS;
	*z = sizes_none;
	if (fits)
		parallel_run(zs ? t->pool : NULL, sizes_part, &c);
	for (int p = 0; fits && zs && p < t->parts; p++) {
		grow(&z->x, zs[p].x);
		grow(&z->lm, zs[p].lm);
		grow(&z->rt, zs[p].rt);
		grow(&z->inc, zs[p].inc);
		grow(&z->n, zs[p].n);
		grow(&z->entries, zs[p].entries);
		grow(&z->g, zs[p].g);
		grow(&z->cells, zs[p].cells);
		z->pairs += zs[p].pairs;
	}
	free(zs);
	return fits && z->x <= DENSE_SCRATCH && z->lm <= DENSE_SCRATCH && z->rt <= DENSE_SCRATCH &&
	       z->inc <= DENSE_SCRATCH && z->n <= UINT16_MAX && z->cells <= UINT16_MAX;
}

/*
 * The CG products that cost as much as forming and factoring H whole,
 * or only its blocks (the cost model of DENSE_PAIR, DENSE_CELL):
 * forming beats CG on products when the directions take more (DENSE_CG
 * of them per direction, as a rule). A product is a pass over the cells
 * (the rows by class), but each direction on Jacobi also takes diag(H),
 * a pass over every pair of a cell and an open row: charged to the
 * products as those pairs. Charged the cells alone, the budgets grow
 * several times, H comes later where it is needed, and those problems
 * take more steps.
 */
static long cg_budget(const struct twolevel *t, const struct form_sizes *z, int blocks)
{
	double cells = (double)t->coff[t->nb], factor = 0;
	double entries = (double)t->n_entries;

	/* factored by panels on the pool (newton.c): half */
	for (size_t b = 0; b < (blocks ? t->nblk : 1); b++) {
		double r = (double)(blocks ? t->blk_off[b + 1] - t->blk_off[b] : t->r);

		factor += r * r * r / 6 * 0.5;
	}
	return (long)ceil((factor + DENSE_PAIR * z->pairs) / (DENSE_CELL * (cells + entries)));
}

size_t twolevel_hessian_shared(struct twolevel *t)
{
	size_t n = 0;

	for (size_t k = 0; t->dense && k < t->nb; k++) {
		twolevel_patterns_find(t, &t->part[0], k);
		n += t->part[0].pat->n - t->part[0].pat->np;
	}
	return n;
}

/*
 * The scale of H's fixed point: every |H[l][m]| is at most the records of
 * the coupled buckets (H_b = A^T S A with 0 <= S <= Y, so H_b[l][l] <=
 * a_l^T Y a_l <= n(b)), which take at most 61 bits; a share's sums may
 * wrap (unsigned), the whole is exact.
 */
static void fixed_scale(struct twolevel *t)
{
	double records = 1;
	int e;

	for (size_t k = 0; k < t->nb; k++)
		records += t->ds->group_size[t->bk[k]];
	frexp(records, &e);
	t->hscale = ldexp(1, 61 - e);
}

/* H formed from now on, with the scratch the sizes z ask. */
static enum pm_status enable(struct twolevel *t, const struct form_sizes *z)
{
	t->dense = 1;
	t->blk_pk = malloc((t->nblk + 1) * sizeof *t->blk_pk);
	if (!t->blk_pk)
		return PM_ERR_NOMEM;
	t->blk_pk[0] = 0;
	for (size_t b = 0; b < t->nblk; b++)
		t->blk_pk[b + 1] = t->blk_pk[b] + packed(t->blk_off[b + 1] - t->blk_off[b]);
	fixed_scale(t);
	for (int p = 0; p < t->parts; p++) {
		struct twolevel_part *pt = &t->part[p];

		pt->hfix = malloc((entries_of(t, 0) + 1) * sizeof *pt->hfix);
		pt->dx = malloc(z->x * sizeof *pt->dx);
		pt->dl = malloc(z->lm * sizeof *pt->dl);
		pt->pv = malloc(z->inc * sizeof *pt->pv);
		if (!pt->hfix || !pt->dx || !pt->dl || !pt->pv ||
		    twolevel_patterns_create(t, z->n, z->entries, z->g, &pt->pat))
			return PM_ERR_NOMEM;
	}
	return PM_OK;
}

enum pm_status twolevel_hessian_init(struct twolevel *t)
{
	struct form_sizes z;

	t->formable = form_sizes(t, &z);
	t->cg_budget = t->formable ? cg_budget(t, &z, !t->whole_ok) : LONG_MAX;
	t->block_budget = t->formable ? cg_budget(t, &z, 1) : LONG_MAX;
	if (!t->formable || t->cg_budget > DENSE_CG)
		return PM_OK;
	return enable(t, &z); /* the sizes at hand: not a second pass */
}

enum pm_status twolevel_hessian_enable(struct twolevel *t)
{
	struct form_sizes z;

	if (t->dense)
		return PM_OK;
	if (!form_sizes(t, &z))
		return PM_ERR_INTERNAL;
	return enable(t, &z);
}
