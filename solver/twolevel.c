/*
 * The two-level dual. For fixed multipliers μ of the open knowledge rows,
 * the rest of the dual separates by bucket: bucket b's part is a matrix
 * scaling problem, y[q,s] = K[q,s] exp(α_q + β_s) with kernel
 * K = exp(sum of μ over the open rows through the cell) on its free cells,
 * rows summing to n(q,b) and columns to n(s,b). Solving it exactly gives
 *
 *     G(μ) = min_{α,β} D(α, β, μ) = N - Σ n(q,b) α_q - Σ n(s,b) β_s - c·μ,
 *
 * a smooth convex function of μ alone whose gradient is the violation of
 * the open rows, A_K y(μ) - c_K (envelope theorem), and whose Hessian is
 * the Schur complement of the invariants' block in the full dual's
 * (twolevel_hessian.c). The outer problem is minimised by Newton's method
 * (newton.c): with H formed and factored when the open rows are few, by
 * conjugate gradients on products H v otherwise. The inner problems are
 * solved by Newton too (scaling.c), to rounding accuracy, as the Hessian
 * and the line search assume, each from the first-order prediction of
 * its log-scalings at the trial point (predict): M (dα, dβ) =
 * -E^T Y Δm, with M factored at the base point for the Hessian anyway,
 * leaves an error of second order in the step, and an inner solve near
 * the optimum takes one Newton step or none. Every per-bucket pass runs
 * on all cores (parallel.c). L-BFGS on the same function (maxent_lbfgs)
 * takes over should Newton fail to make progress. The setup (buckets,
 * rows, lists, chunks, scratch, start) is twolevel_init.c's.
 *
 * Everything is relative to a base point (μ0, y0): K = y0 exp(Δm) and
 * α, β are the log-scalings since the base, so G(μ) - G(μ0) =
 * Σ y0 expm1(Δm + α + β) - Σ n α - Σ n β - c·(μ - μ0) keeps full
 * precision when the changes are tiny.
 */
#include <float.h>
#include <lbfgs.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loops.h"
#include "maxent.h"
#include "newton.h"
#include "parallel.h"
#include "scaling.h"
#include "schur.h"
#include "solve.h"
#include "stop.h"
#include "twolevel.h"

/* An inner solve further than this (records), or than 10 times a looser
 * target, from its counts fails the evaluation (eval_pass). */
#define INNER_FAIL 1e-6
/* A chunk's share of G: f and the worst inner residual. */
struct eval_sum {
	double f, worst;
};

static void part_finish(struct twolevel_part *pt)
{
	scaling_work_finish(&pt->w);
	free(pt->dm);
	free(pt->kk);
	free(pt->em);
	free(pt->t);
	free(pt->u);
	free(pt->vec);
	free(pt->stamp);
	free(pt->loc);
	free(pt->rows);
	free(pt->pq);
	free(pt->acc);
	free(pt->hfix);
	free(pt->dx);
	free(pt->dl);
	free(pt->rt);
	free(pt->sc);
	free(pt->pv);
	free(pt->cacc);
	twolevel_patterns_destroy(pt->pat);
}

void twolevel_finish(struct twolevel *t)
{
	for (int p = 0; t->part && p < t->parts; p++)
		part_finish(&t->part[p]);
	free(t->part);
	free(t->ev_off);
	free(t->ev_f);
	free(t->ev_worst);
	free(t->gr_off);
	if (t->own_pool)
		parallel_destroy(t->pool);
	free(t->zero);
	free(t->y);
	free(t->bk);
	free(t->qoff);
	free(t->soff);
	free(t->coff);
	free(t->foff);
	free(t->alpha);
	free(t->beta);
	free(t->fac);
	free(t->row);
	free(t->blk_off);
	free(t->blk_of);
	free(t->blk_val);
	free(t->blk_pk);
	free(t->rhs);
	free(t->half);
	free(t->scale);
	free(t->mu);
	free(t->mu0);
	free(t->dd);
	free(t->ex);
	free(t->xm);
	free(t->rc_off);
	free(t->cls);
	free(t->cl_off);
	free(t->cl_row);
	free(t->cc_off);
	free(t->cc_cell);
	free(t->rk_off);
	free(t->rk_cls);
	free(t->cdm);
	free(t->cex);
	free(t->cem);
	free(t->csum);
	free(t->cv);
	free(t->y0);
	free(t->exact);
	memset(t, 0, sizeof *t);
}

void twolevel_range(const struct twolevel *t, int p, int parts, size_t *lo, size_t *hi)
{
	parallel_range(t->nb, t->coff, p, parts, lo, hi);
}

/* ---- G ------------------------------------------------------------------- */

/*
 * The first-order change of bucket k's log-scalings when the kernel
 * exponent moves by dm from the base, where M is factored: the scaling
 * condition E^T y = n differentiated gives M (dα, dβ) = -E^T Y0 dm, less
 * the base's own residual E^T y0 - n (a loose inner target, eval_mu). As
 * the inner solve's start it leaves an error of second order in dm and
 * in that residual.
 */
static void predict(struct twolevel *t, struct twolevel_part *pt, size_t k, double *a, double *b)
{
	size_t off, g, h;
	const double *y0;
	const uint32_t *nq, *ns;
	struct scaling_work *s = &pt->w;

	twolevel_shape(t, k, &off, &g, &h);
	y0 = t->y0 + off;
	nq = t->ds->bq_count + t->ds->bq_off[t->bk[k]];
	ns = t->ds->bs_count + t->ds->bs_off[t->bk[k]];
	for (size_t j = 0; j < h; j++)
		s->q[j] = ns[j];
	for (size_t i = 0; i < g; i++) {
		s->p[i] = nq[i];
		for (size_t j = 0; j < h; j++) {
			s->p[i] -= y0[i * h + j] * (1 + pt->dm[i * h + j]);
			s->q[j] -= y0[i * h + j] * (1 + pt->dm[i * h + j]);
		}
	}
	schur_solve(t->fac + t->foff[k], y0, g, h, s->p, s->q, a, b);
}

/*
 * Bucket k's kernel exponents dm (the change of μ summed over the open
 * rows through each cell, capped) and, when no cell can exceed the caps
 * (the largest change times the most rows through a cell), the scaling's
 * kernel from the rows' exponentials: y0 exp(dm) as y0 Π exp(Δμ_r), and
 * expm1(dm) from expm1(x + z) = X + Z + X Z over the rows, each partial
 * sum within SCALING_SMALL, so as precise as expm1 itself. All three are
 * per class (class_kernel): one exponential per open row, one lookup per
 * cell. An exponent beyond SCALING_CAP (a wild trial, or a multiplier
 * running off along a flat direction) is capped, so that nothing
 * overflows, and the point fails (returns 1): capped, the scaling is no
 * longer G's, and a line search that took such a point could return a
 * feasible point that is not the maximum-entropy one.
 */
static int kernel(const struct twolevel *t, struct twolevel_part *pt, size_t k,
		  struct scaling_block *blk)
{
	size_t off, g, h;
	double reach = t->dmu_max * (double)t->ck_max, *dm = pt->dm, *kk = pt->kk, *em = pt->em;
	int with_kk = reach <= SCALING_CAP, with_em = reach <= SCALING_SMALL, capped = 0;
	const uint32_t *cls;

	twolevel_shape(t, k, &off, &g, &h);
	cls = t->cls + off;
	for (size_t c = 0; c < g * h; c++) {
		double s = t->cdm[cls[c]];

		dm[c] = s < SCALING_CAP ? s > -SCALING_CAP ? s : -SCALING_CAP : SCALING_CAP;
		/* only when the reach allows it (not as a rule) */
		capped |= !with_kk && !(fabs(s) <= SCALING_CAP) && !t->zero[off + c];
		kk[c] = t->zero[off + c] ? 0 : blk->y0[c] * t->cex[cls[c]];
		em[c] = t->cem[cls[c]];
	}
	blk->kk = with_kk ? pt->kk : NULL;
	blk->em = with_em ? pt->em : NULL;
	return capped;
}

/* Per class, the kernel's Σ Δμ, Π exp(Δμ) and expm1(Σ Δμ) over its rows
 * in order (kernel); class 0, without rows: 0, 1, 0. */
static void class_kernel(struct twolevel *t)
{
	for (size_t v = 0; v <= t->ncls; v++) {
		double dm = 0, ex = 1, em = 0;

		for (size_t e = t->cl_off[v]; e < t->cl_off[v + 1]; e++) {
			uint32_t r = t->cl_row[e];

			dm += t->dd[r];
			ex *= t->ex[r];
			em += t->xm[r] + em * t->xm[r];
		}
		t->cdm[v] = dm;
		t->cex[v] = ex;
		t->cem[v] = em;
	}
}

/*
 * Scales coupled bucket k exactly for the current μ and adds its share of
 * G(μ) - G(μ0) to s->f: Σ y0 expm1(Δm + α + β) - Σ n(q,b) α - Σ n(s,b) β,
 * stationary in (α, β), so an inner residual r moves it by O(r²).
 */
static void inner_bucket(struct twolevel *t, struct twolevel_part *pt, size_t k, struct eval_sum *s)
{
	const struct dataset *ds = t->ds;
	size_t off, g, h, b = t->bk[k];
	struct scaling_block blk;

	twolevel_shape(t, k, &off, &g, &h);
	t->exact[k] = 0;
	blk = (struct scaling_block){.g = g,
				     .h = h,
				     .y0 = t->y0 + off,
				     .dm = pt->dm,
				     .zero = t->zero + off,
				     .nq = ds->bq_count + ds->bq_off[b],
				     .ns = ds->bs_count + ds->bs_off[b],
				     .a = t->alpha + t->qoff[k],
				     .b = t->beta + t->soff[k],
				     .y = t->y + off,
				     .trial = 1};
	if (kernel(t, pt, k, &blk)) /* not G's kernel: the evaluation fails */
		s->worst = INFINITY;
	if (t->factored)
		predict(t, pt, k, blk.a, blk.b);
	s->worst = num_max(s->worst, scaling_solve(&blk, &pt->w, t->eval_target));
	s->f += blk.excess;
	for (size_t i = 0; i < g; i++)
		s->f -= blk.nq[i] * blk.a[i];
	for (size_t j = 0; j < h; j++)
		s->f -= blk.ns[j] * blk.b[j];
}

static void eval_item(void *ctx, size_t i, int p)
{
	struct twolevel *t = ctx;
	struct eval_sum s = {0, 0};

	/* at the base point, y0 is the answer where it is exact: at the
	 * start, the closed form of a bucket without zeros */
	for (size_t k = t->ev_off[i]; k < t->ev_off[i + 1]; k++)
		if (!t->exact[k] || t->dmu_max != 0)
			inner_bucket(t, &t->part[p], k, &s);
	t->ev_f[i] = s.f;
	t->ev_worst[i] = s.worst;
}

/* Classes gr_off[i] .. gr_off[i + 1]: each one's Σ y over its cells,
 * in four running sums (independent loads, a quarter of the rounding). */
static void grad_item(void *ctx, size_t i, int p)
{
	struct twolevel *t = ctx;

	(void)p;
	for (size_t v = t->gr_off[i]; v < t->gr_off[i + 1]; v++) {
		const uint32_t *c = t->cc_cell + t->cc_off[v];
		size_t n = t->cc_off[v + 1] - t->cc_off[v], x = 0;
		double s0 = 0, s1 = 0, s2 = 0, s3 = 0;

		for (; x + 4 <= n; x += 4) {
			s0 += t->y[c[x]];
			s1 += t->y[c[x + 1]];
			s2 += t->y[c[x + 2]];
			s3 += t->y[c[x + 3]];
		}
		for (; x < n; x++)
			s0 += t->y[c[x]];
		t->csum[v] = (s0 + s1) + (s2 + s3);
	}
}

/* G(μ) - G(μ0) at t->mu with the inner target t->eval_target; *gmax the
 * largest gradient entry. */
static double eval_pass(struct twolevel *t, double *g, double *violation, double *gmax)
{
	double f = 0, worst = 0;
	int failed;

	t->dmu_max = 0;
	for (size_t k = 0; k < t->r; k++) {
		double d = t->mu[k] - t->mu0[k];

		t->dd[k] = d;
		t->ex[k] = exp(d);
		t->xm[k] = expm1(d);
		t->dmu_max = fabs(d) > t->dmu_max || d != d ? fabs(d) : t->dmu_max;
	}
	class_kernel(t);
	parallel_items(t->pool, t->n_ev, eval_item, t);
	parallel_items(t->pool, t->n_gr, grad_item, t);
	for (size_t i = 0; i < t->n_ev; i++) {
		f += t->ev_f[i];
		worst = fmax(worst, t->ev_worst[i]);
	}
	/* an inner solve that ended far from its target (a wild trial point:
	 * scaling_solve gave up early) leaves f and g meaningless: no line
	 * search may take the point */
	failed = worst > fmax(INNER_FAIL, 10 * t->eval_target);
	*gmax = 0;
	for (size_t k = 0; k < t->r; k++) {
		double s = 0;

		for (size_t e = t->rk_off[k]; e < t->rk_off[k + 1]; e++)
			s += t->csum[t->rk_cls[e]];
		f -= (t->mu[k] - t->mu0[k]) * t->rhs[k];
		if (g)
			g[k] = s - t->rhs[k];
		/* an interval's: how far outside it (Newton adds the rest) */
		*gmax = num_max(*gmax, fabs(s - t->rhs[k]) - (t->half ? t->half[k] : 0));
	}
	*violation = fmax(worst, *gmax);
	return failed ? INFINITY : f;
}

/*
 * G(μ) - G(μ0) at t->mu, as twolevel_eval. Far from the optimum, Newton
 * needs G's gradient only to a fraction of the violation: the inner
 * solves stop at 1e-3 of the violation at the base, or 1e-5 of its
 * square (Newton's rate), divided by the most cells of a row (their
 * residuals add up in its gradient), at most t->loosest; a pass that
 * comes near the outer target is repeated to the full inner target.
 */
static double eval_mu(struct twolevel *t, double *g, double *violation)
{
	double v = t->base_viol, gmax, f;

	twolevel_base(t);
	t->eval_target = t->inner_target;
	if (t->loosest > 0 && v > 0)
		t->eval_target =
		    fmax(t->inner_target, fmin(t->loosest, fmin(1e-3 * v, 1e-5 * v * v) /
							       fmax(1, (double)t->row_len)));
	f = eval_pass(t, g, violation, &gmax);
	if (t->eval_target > t->inner_target && gmax <= 10 * t->outer) {
		t->eval_target = t->inner_target;
		f = eval_pass(t, g, violation, &gmax);
	}
	t->last_viol = *violation;
	return f;
}

double twolevel_eval(struct twolevel *t, const double *mu, double *g, double *violation)
{
	memcpy(t->mu, mu, t->r * sizeof *t->mu);
	return eval_mu(t, g, violation);
}

/* The current point becomes the base: μ0 = μ, α = β = 0, and per bucket
 * (twolevel_base_bucket, on the pool) y0 = y; the factorizations at the
 * old base no longer apply. */
static void rebase(struct twolevel *t)
{
	memcpy(t->mu0, t->mu, t->r * sizeof *t->mu);
	memset(t->exact, 1, t->nb);
	memset(t->alpha, 0, t->qoff[t->nb] * sizeof *t->alpha);
	memset(t->beta, 0, t->soff[t->nb] * sizeof *t->beta);
	t->factored = 0;
}

void twolevel_base_bucket(struct twolevel *t, size_t k)
{
	size_t off, g, h;

	twolevel_shape(t, k, &off, &g, &h);
	memcpy(t->y0 + off, t->y + off, g * h * sizeof *t->y);
	schur_factor(t->y + off, g, h, t->fac + t->foff[k]);
}

static void factor_part(void *ctx, int p, int parts)
{
	struct twolevel *t = ctx;
	size_t lo, hi;

	twolevel_range(t, p, parts, &lo, &hi);
	for (size_t k = lo; k < hi; k++)
		twolevel_base_bucket(t, k);
}

void twolevel_base(struct twolevel *t)
{
	if (!t->base_pending)
		return;
	parallel_run(t->pool, factor_part, t);
	t->base_pending = 0;
	t->factored = 1;
}

/* With H to be formed next (form_base), its pass also does each
 * bucket's share of the new base (y0, M factored) while the bucket is
 * at hand: one pass over the buckets fewer per Newton step. */
void twolevel_prepare(struct twolevel *t, const double *mu)
{
	/* the violation at the new base, if G's last pass was there */
	t->base_viol = !memcmp(t->mu, mu, t->r * sizeof *t->mu) ? t->last_viol : 0;
	memcpy(t->mu, mu, t->r * sizeof *t->mu);
	rebase(t);
	t->base_pending = 1;
	if (!t->form_base)
		twolevel_base(t);
}

/* ---- the outer problem as a newton_problem ------------------------------- */

static double nt_eval(void *ctx, const double *x, double *g, double *violation)
{
	return twolevel_eval(ctx, x, g, violation);
}

static void nt_prepare(void *ctx, const double *x)
{
	twolevel_prepare(ctx, x);
}

static void nt_diag(void *ctx, double *out)
{
	twolevel_hessian_diag(ctx, out);
}

static void nt_hv(void *ctx, const double *v, double *out)
{
	twolevel_hessian_apply(ctx, v, out);
}

static void nt_hessian(void *ctx, int blocks, double *out)
{
	twolevel_hessian_form(ctx, blocks, out);
}

/* From the next step on, H formed: its structure and scratch, and the
 * pass that forms it does the base's share too (twolevel_prepare). */
static int nt_form(void *ctx)
{
	struct twolevel *t = ctx;

	if (!t->formable || twolevel_hessian_enable(t))
		return -1;
	t->form_base = 1;
	return 0;
}

void twolevel_problem(struct twolevel *t, int formed, struct newton_problem *np)
{
	double records = 0;

	t->form_base = formed && t->dense;
	for (size_t k = 0; k < t->nb; k++)
		records += t->inv->bucket_n[t->bk[k]];
	*np = (struct newton_problem){.ctx = t,
				      .n = t->r,
				      .cancel = t->cancel,
				      .eval = nt_eval,
				      .prepare = nt_prepare,
				      .diag = nt_diag,
				      .hv = nt_hv,
				      .hessian = formed && t->formable ? nt_hessian : NULL,
				      .n_blocks = t->nblk,
				      .block_off = t->blk_off,
				      .whole = t->whole_ok,
				      .block_budget = t->block_budget,
				      .formed = t->dense,
				      .cg_budget = t->cg_budget,
				      .form = nt_form,
				      /* f sums terms of up to the records' size */
				      .f_noise = 64 * DBL_EPSILON * records,
				      .pool = t->pool,
				      .l1 = t->half};
}

/* ---- L-BFGS fallback ---------------------------------------------------- */

/* G and its gradient in the scaled variables u = μ / scale. */
static double lbfgs_eval(void *ctx, const double *u, double *grad, double *violation)
{
	struct twolevel *t = ctx;
	double f;

	for (size_t k = 0; k < t->r; k++)
		t->mu[k] = u[k] * t->scale[k];
	f = eval_mu(t, grad, violation);
	for (size_t k = 0; grad && k < t->r; k++)
		grad[k] *= t->scale[k];
	return f;
}

static void lbfgs_rebase(void *ctx, const double *u)
{
	struct twolevel *t = ctx;

	for (size_t k = 0; k < t->r; k++)
		t->mu[k] = u[k] * t->scale[k];
	rebase(t);
	/* y0 = y (the buckets' cells are contiguous), M unfactored: L-BFGS
	 * predicts nothing */
	memcpy(t->y0, t->y, t->coff[t->nb] * sizeof *t->y);
	t->base_pending = 0;
}

enum pm_status twolevel_lbfgs(struct twolevel *t, const struct solver_options *o, double target,
			      struct maxent_stats *st)
{
	struct maxent_driver drv = {.opt = o,
				    .cancel = t->cancel,
				    .ctx = t,
				    .eval = lbfgs_eval,
				    .rebase = lbfgs_rebase,
				    .target = target,
				    .iterations = st->iterations};
	double *u = lbfgs_malloc((int)t->r + 1);
	enum pm_status ret;

	if (!u)
		return PM_ERR_NOMEM;
	t->loosest = 0; /* L-BFGS's line search wants G exact */
	for (size_t k = 0; k < t->r; k++)
		u[k] = t->mu[k] / t->scale[k];
	ret = maxent_lbfgs(&drv, (int)t->r, u, st);
	lbfgs_free(u);
	return ret;
}

void twolevel_store(const struct twolevel *t)
{
	for (size_t k = 0; k < t->nb; k++) {
		size_t off, g, h;

		twolevel_shape(t, k, &off, &g, &h);
		memcpy(t->out + t->inv->cell_off[t->bk[k]], t->y + off, g * h * sizeof *t->y);
	}
}

/* The smallest free cell of the coupled buckets (INFINITY: none), for
 * the polish (stop_polish_target). */
static double smallest_cell(const struct twolevel *t)
{
	double ymin = INFINITY;

	for (size_t k = 0; k < t->nb; k++) {
		size_t off, g, h;

		twolevel_shape(t, k, &off, &g, &h);
		for (size_t c = off; c < off + g * h; c++)
			ymin = t->y[c] > 0 && t->y[c] < ymin ? t->y[c] : ymin;
	}
	return ymin;
}

/* The outcome in st once Newton (and L-BFGS) stopped; a probe's prev gets
 * the last base point. */
static void finish_stats(const struct twolevel *t, const struct solver_options *o,
			 const struct solver_probe *probe, struct maxent_stats *st)
{
	double *prev = probe ? probe->prev : NULL;

	for (size_t k = 0; prev && k < t->nb; k++) {
		size_t off, g, h;

		twolevel_shape(t, k, &off, &g, &h);
		memcpy(prev + t->inv->cell_off[t->bk[k]], t->y0 + off, g * h * sizeof *prev);
	}
	st->converged = stop_converged(st->max_violation, o->tolerance);
	if (!st->converged && st->iterations >= o->max_iterations)
		snprintf(st->reason, sizeof st->reason, "iteration limit (%d) reached",
			 o->max_iterations);
	else if (!st->converged)
		snprintf(st->reason, sizeof st->reason, "%s",
			 "the Newton line search and L-BFGS made no further progress");
}

enum pm_status twolevel_run(struct twolevel *t, const struct solver_options *o,
			    struct cancel *cancel, const struct solver_probe *probe,
			    struct maxent_stats *st)
{
	struct newton_problem np;
	double *x = calloc(t->r + 1, sizeof *x);
	struct newton_null null = {.row = calloc(t->r + 1, 1)};
	struct newton *nw = NULL;
	double max_rhs = 1, target, polish;
	int stalled = 0;
	enum pm_status ret = PM_ERR_NOMEM;

	memset(st, 0, sizeof *st);
	t->cancel = cancel;
	twolevel_problem(t, 1, &np);
	np.null = &null;
	if (!x || !null.row || newton_create(&np, &nw))
		goto out;
	for (size_t k = 0; k < t->r; k++)
		max_rhs = fmax(max_rhs, t->rhs[k]);
	target = stop_target(o->tolerance, max_rhs);
	np.stop = !probe ? STOP_EARLY_NONE : probe->last ? STOP_EARLY_STALL : STOP_EARLY_LINEAR;
	t->loosest = TWOLEVEL_LOOSE;
	t->outer = target;
	ret = newton_minimize(nw, o->max_iterations, target, x, st, &stalled);
	if (!ret && st->max_violation <= target &&
	    st->max_violation >
		(polish = stop_polish_target(target, 1e-13 * max_rhs, smallest_cell(t),
					     probe && !probe->last))) {
		ret = newton_minimize(
		    nw, stop_polish_limit(st->iterations, STOP_POLISH_STEPS, o->max_iterations),
		    polish, x, st, &stalled);
		stalled = 0; /* at the target already: no L-BFGS */
	}
	if (!ret && probe && probe->ray)
		newton_moving(nw, t->row, probe->ray);
	/* a probe that stalls has answered: no need for L-BFGS's effort */
	if (!ret && stop_fallback(stalled, probe != NULL, !t->half, st->max_violation, target,
				  st->iterations, o->max_iterations))
		ret = twolevel_lbfgs(t, o, target, st);
	if (!ret)
		finish_stats(t, o, probe, st);
out:
	newton_destroy(nw);
	free(x);
	free(null.row);
	return ret;
}
