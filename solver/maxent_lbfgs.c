/*
 * L-BFGS on a dual (struct maxent_driver), shared by the full dual
 * (maxent.c) and the two-level dual's fallback (twolevel.c): liblbfgs's
 * runs, restarted while they help, then a gradient-only polish where the
 * line search can no longer tell values apart; with intervals, OWL-QN and
 * an active-set polish (the comments below say why).
 */
#include <lbfgs.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "maxent.h"
#include "stop.h"

/* Iterations of one OWL-QN run with intervals, before a restart or the
 * active-set polish. */
#define OWLQN_ITERATIONS 500
/* Fresh L-BFGS starts after a line-search failure before giving up. */
#define MAX_RESTARTS 20

/* liblbfgs callbacks on a struct maxent_driver */
static lbfgsfloatval_t evaluate(void *ctx, const lbfgsfloatval_t *u, lbfgsfloatval_t *g,
				const int n, const lbfgsfloatval_t step)
{
	struct maxent_driver *drv = ctx;

	return drv->eval(drv->ctx, u, g, &drv->violation);
}

static int progress(void *ctx, const lbfgsfloatval_t *u, const lbfgsfloatval_t *g,
		    const lbfgsfloatval_t fx, const lbfgsfloatval_t xnorm,
		    const lbfgsfloatval_t gnorm, const lbfgsfloatval_t step, int n, int k, int ls)
{
	struct maxent_driver *drv = ctx;

	drv->iterations++;
	if (drv->step)
		drv->step(drv->ctx);
	if (cancel_report(drv->cancel, drv->iterations, drv->violation)) {
		drv->cancelled = 1;
		return LBFGSERR_CANCELED;
	}
	if (drv->violation <= drv->target)
		return LBFGS_STOP;
	if (drv->iterations >= drv->opt->max_iterations)
		return LBFGSERR_MAXIMUMITERATION;
	return 0;
}

static const char *lbfgs_reason(int ret)
{
	switch (ret) {
	case LBFGSERR_ROUNDING_ERROR:
		return "line search stopped by rounding errors";
	case LBFGSERR_MINIMUMSTEP:
		return "line search step below the minimum";
	case LBFGSERR_MAXIMUMSTEP:
		return "line search step above the maximum";
	case LBFGSERR_MAXIMUMLINESEARCH:
		return "line search reached its evaluation limit";
	case LBFGSERR_OUTOFINTERVAL:
	case LBFGSERR_INCORRECT_TMINMAX:
	case LBFGSERR_WIDTHTOOSMALL:
		return "line search interval of uncertainty collapsed";
	case LBFGSERR_INVALIDPARAMETERS:
		return "line search met an invalid search direction";
	case LBFGSERR_INCREASEGRADIENT:
		return "the search direction is not a descent direction";
	case LBFGS_SUCCESS:
	case LBFGS_ALREADY_MINIMIZED:
		return "L-BFGS stopped on its own convergence test";
	}
	return "L-BFGS failed";
}

/* How a run ended, for maxent_stats. */
static void run_stats(const struct maxent_driver *drv, int ret, struct maxent_stats *st)
{
	st->iterations = drv->iterations;
	st->max_violation = drv->violation;
	st->converged = stop_converged(drv->violation, drv->opt->tolerance);
	if (st->converged)
		st->reason[0] = 0;
	else if (drv->iterations >= drv->opt->max_iterations)
		snprintf(st->reason, sizeof st->reason, "iteration limit (%d) reached",
			 drv->opt->max_iterations);
	else
		snprintf(st->reason, sizeof st->reason, "%s (code %d)", lbfgs_reason(ret), ret);
}

/*
 * Gradient-only polish. Near the optimum the decrease of a step, about
 * violation², drops below the rounding noise of any computed dual value,
 * and liblbfgs's line search (which needs the value) stops. The duals are
 * convex, so the directional derivative φ'(t) = ∇D(u + t d)·d is
 * increasing and alone locates the minimum along d: this loop takes L-BFGS
 * directions (two-loop recursion, POLISH_M pairs) and a secant search on
 * φ' for |φ'(t)| <= |φ'(0)| / 10, and never looks at D itself.
 */
#define POLISH_M 10

struct polish {
	int n, k, head;
	double *s, *y, *rho, *alpha, *d, *g, *g1, *x1;
};

/* d = -H g by the two-loop recursion over the stored pairs. */
static void polish_direction(struct polish *p)
{
	double gamma = 1;

	for (int i = 0; i < p->n; i++)
		p->d[i] = -p->g[i];
	for (int m = 0; m < p->k; m++) {
		int at = (p->head - 1 - m + POLISH_M) % POLISH_M;
		double a = 0;

		for (int i = 0; i < p->n; i++)
			a += p->s[at * p->n + i] * p->d[i];
		p->alpha[at] = a * p->rho[at];
		for (int i = 0; i < p->n; i++)
			p->d[i] -= p->alpha[at] * p->y[at * p->n + i];
	}
	if (p->k) {
		int at = (p->head - 1 + POLISH_M) % POLISH_M;
		double yy = 0;

		for (int i = 0; i < p->n; i++)
			yy += p->y[at * p->n + i] * p->y[at * p->n + i];
		gamma = 1 / (p->rho[at] * yy);
	}
	for (int i = 0; i < p->n; i++)
		p->d[i] *= gamma;
	for (int m = p->k - 1; m >= 0; m--) {
		int at = (p->head - 1 - m + POLISH_M) % POLISH_M;
		double b = 0;

		for (int i = 0; i < p->n; i++)
			b += p->y[at * p->n + i] * p->d[i];
		b *= p->rho[at];
		for (int i = 0; i < p->n; i++)
			p->d[i] += p->s[at * p->n + i] * (p->alpha[at] - b);
	}
}

static double dot(const double *a, const double *b, int n)
{
	double s = 0;

	for (int i = 0; i < n; i++)
		s += a[i] * b[i];
	return s;
}

/* φ'(t) at x1 = u + t d (gradient into g1, violation into drv). */
static double polish_slope(struct maxent_driver *drv, struct polish *p, const double *u, double t)
{
	for (int i = 0; i < p->n; i++)
		p->x1[i] = u[i] + t * p->d[i];
	drv->eval(drv->ctx, p->x1, p->g1, &drv->violation);
	return dot(p->g1, p->d, p->n);
}

/* Secant/bisection search on φ' from φ'(0) = d0 < 0; returns the step or
 * 0 if none helps. Leaves the gradient at the step in g1. */
static double polish_search(struct maxent_driver *drv, struct polish *p, const double *u, double d0)
{
	double lo = 0, dlo = d0, hi = 1, dhi = polish_slope(drv, p, u, 1);

	if (!isfinite(dhi))
		dhi = INFINITY;			  /* overshoot: bracketed */
	for (int i = 0; i < 10 && dhi < 0; i++) { /* bracket the minimum */
		if (-dhi <= -0.1 * d0)
			return hi;
		lo = hi;
		dlo = dhi;
		hi *= 2;
		dhi = polish_slope(drv, p, u, hi);
		if (!isfinite(dhi))
			dhi = INFINITY;
	}
	if (dhi < 0)
		return lo > 0 ? lo : 0; /* still descending: take the longest step tried */
	for (int i = 0; i < 40; i++) {
		double t = isfinite(dhi) && dhi > dlo ? lo + (hi - lo) * (-dlo) / (dhi - dlo)
						      : 0.5 * (lo + hi);
		double dt;

		if (!(t > lo && t < hi))
			t = 0.5 * (lo + hi);
		dt = polish_slope(drv, p, u, t);
		if (!isfinite(dt))
			dt = INFINITY;
		if (fabs(dt) <= -0.1 * d0)
			return t;
		if (dt < 0) {
			lo = t;
			dlo = dt;
		} else {
			hi = t;
			dhi = dt;
		}
	}
	return 0;
}

/* Polish iterations from u until the target, the iteration limit, a
 * cancel or a failed search. */
static enum pm_status polish_run(struct maxent_driver *drv, struct polish *p, double *u)
{
	drv->eval(drv->ctx, u, p->g, &drv->violation);
	while (drv->violation > drv->target && drv->iterations < drv->opt->max_iterations) {
		double d0, t;

		polish_direction(p);
		d0 = dot(p->g, p->d, p->n);
		if (!(d0 < 0)) {
			p->k = 0; /* not a descent direction: steepest descent */
			for (int i = 0; i < p->n; i++)
				p->d[i] = -p->g[i];
			d0 = dot(p->g, p->d, p->n);
		}
		t = d0 < 0 ? polish_search(drv, p, u, d0) : 0;
		if (t <= 0)
			break;
		drv->iterations++;
		for (int i = 0; i < p->n; i++) {
			p->s[p->head * p->n + i] = t * p->d[i];
			p->y[p->head * p->n + i] = p->g1[i] - p->g[i];
			u[i] += t * p->d[i];
		}
		if (dot(&p->s[p->head * p->n], &p->y[p->head * p->n], p->n) > 0) {
			p->rho[p->head] =
			    1 / dot(&p->s[p->head * p->n], &p->y[p->head * p->n], p->n);
			p->head = (p->head + 1) % POLISH_M;
			p->k += p->k < POLISH_M;
		}
		memcpy(p->g, p->g1, p->n * sizeof *p->g);
		if (cancel_report(drv->cancel, drv->iterations, drv->violation))
			return PM_ERR_CANCELLED;
	}
	drv->eval(drv->ctx, u, NULL, &drv->violation);
	return PM_OK;
}

static enum pm_status polish(struct maxent_driver *drv, int n, double *u)
{
	struct polish p = {.n = n};
	enum pm_status st = PM_ERR_NOMEM;
	size_t nn = (size_t)n + 1;

	p.s = malloc(POLISH_M * nn * sizeof *p.s);
	p.y = malloc(POLISH_M * nn * sizeof *p.y);
	p.rho = malloc(POLISH_M * sizeof *p.rho);
	p.alpha = malloc(POLISH_M * sizeof *p.alpha);
	p.d = malloc(nn * sizeof *p.d);
	p.g = malloc(nn * sizeof *p.g);
	p.g1 = malloc(nn * sizeof *p.g1);
	p.x1 = malloc(nn * sizeof *p.x1);
	if (p.s && p.y && p.rho && p.alpha && p.d && p.g && p.g1 && p.x1)
		st = polish_run(drv, &p, u);
	free(p.s);
	free(p.y);
	free(p.rho);
	free(p.alpha);
	free(p.d);
	free(p.g);
	free(p.g1);
	free(p.x1);
	return st;
}

/*
 * The polish with intervals, on their active set: OWL-QN's line search
 * too needs values, and stops on rounding near the optimum. There the
 * signs of the intervals' multipliers have settled: one at 0 stays there
 * (its row inside its interval), one off it keeps its sign (its row at
 * the bound the sign says), where the L1 term is linear, c sign(u_i) u_i.
 * The polish runs on that smooth function; the violation it stops on is
 * still every row's against its own bounds.
 */
struct active {
	struct maxent_driver *drv;
	int n;
	double *sign; /* per variable from l1_start: 0 held at 0, else +-1 */
};

static double active_eval(void *ctx, const double *u, double *g, double *violation)
{
	struct active *a = ctx;
	const struct maxent_driver *drv = a->drv;
	double f = drv->eval(drv->ctx, u, g, violation);

	for (int i = (int)drv->l1_start; i < a->n; i++) {
		double sg = a->sign[i - (int)drv->l1_start];

		f += drv->l1_c * sg * u[i];
		if (g)
			g[i] = sg != 0 ? g[i] + drv->l1_c * sg : 0;
	}
	return f;
}

/* The active set from where the polish left u: a held row outside its
 * interval binds at the bound it passes (+1: lo, -1: hi), a binding row
 * whose multiplier changed sign is held at 0. Returns whether it moved. */
static int active_update(struct active *a, double *u, const double *g)
{
	const struct maxent_driver *drv = a->drv;
	int moved = 0;

	for (int i = (int)drv->l1_start; i < a->n; i++) {
		double *sg = &a->sign[i - (int)drv->l1_start], was = *sg;

		/* g is the smooth part's: |g| > c is the row outside its
		 * interval (Σ y - mid beyond half, in u's units) */
		if (*sg == 0 && fabs(g[i]) > drv->l1_c)
			*sg = g[i] < 0 ? 1 : -1;
		else if (*sg != 0 && u[i] * *sg < 0) {
			*sg = 0;
			u[i] = 0;
		}
		moved |= *sg != was;
	}
	return moved;
}

/* Rounds of the polish on an active set, each updated from the last's
 * end, until the target or an active set that no longer moves. */
#define ACTIVE_ROUNDS 10

static enum pm_status polish_active(struct maxent_driver *drv, int n, double *u)
{
	int m = n - (int)drv->l1_start;
	struct active a = {.drv = drv, .n = n, .sign = malloc(((size_t)m + 1) * sizeof *a.sign)};
	struct maxent_driver inner = *drv;
	double *g = malloc(((size_t)n + 1) * sizeof *g);
	enum pm_status st = PM_OK;

	if (!a.sign || !g) {
		free(a.sign);
		free(g);
		return PM_ERR_NOMEM;
	}
	for (int i = 0; i < m; i++)
		a.sign[i] = (u[drv->l1_start + (size_t)i] > 0) - (u[drv->l1_start + (size_t)i] < 0);
	inner.ctx = &a;
	inner.eval = active_eval;
	for (int round = 0; !st && round < ACTIVE_ROUNDS; round++) {
		st = polish(&inner, n, u);
		drv->eval(drv->ctx, u, g, &inner.violation);
		if (st || inner.violation <= drv->target ||
		    inner.iterations >= drv->opt->max_iterations || !active_update(&a, u, g))
			break;
	}
	drv->eval(drv->ctx, u, NULL, &inner.violation);
	drv->iterations = inner.iterations;
	drv->violation = inner.violation;
	free(a.sign);
	free(g);
	return st;
}

/* Runs L-BFGS, restarting it (fresh memory, new base point, same u) after
 * a line search failure as long as restarts keep reducing the violation.
 * Reaching only the tolerance, not the target, still counts as converged. */
enum pm_status maxent_lbfgs(struct maxent_driver *drv, int n, double *u, struct maxent_stats *st)
{
	lbfgs_parameter_t p;
	double best = INFINITY;
	int stalls = 0, ret = 0;

	lbfgs_parameter_init(&p);
	p.m = 10;
	p.epsilon = 0;
	p.past = 0;
	p.max_iterations = 0; /* counted in progress() across restarts */
	if (drv->l1_c > 0) {  /* OWL-QN; it takes only the backtracking search */
		p.orthantwise_c = drv->l1_c;
		p.orthantwise_start = (int)drv->l1_start;
		p.orthantwise_end = n;
		p.linesearch = LBFGS_LINESEARCH_BACKTRACKING;
		/* each run: OWL-QN's line search needs values, which stop
		 * deciding near the optimum, where the active-set polish
		 * (below), on gradients alone, converges */
		p.max_iterations = OWLQN_ITERATIONS;
	}
	drv->eval(drv->ctx, u, NULL, &drv->violation);
	for (int restart = 0; drv->violation > drv->target; restart++) {
		lbfgsfloatval_t fx;

		drv->rebase(drv->ctx, u);
		ret = lbfgs(n, u, &fx, evaluate, progress, drv, &p);
		if (drv->cancelled) {
			st->iterations = drv->iterations;
			return PM_ERR_CANCELLED;
		}
		if (ret == LBFGSERR_OUTOFMEMORY)
			return PM_ERR_NOMEM;
		/* bad parameters or a logic error are our bugs, not the data's */
		if (ret >= LBFGSERR_UNKNOWNERROR && ret <= LBFGSERR_INVALID_ORTHANTWISE_END &&
		    ret != LBFGSERR_CANCELED)
			return PM_ERR_INTERNAL;
		drv->eval(drv->ctx, u, NULL, &drv->violation); /* liblbfgs may revert u */
		if (drv->violation <= drv->target || ret == LBFGSERR_MAXIMUMITERATION ||
		    drv->iterations >= drv->opt->max_iterations)
			break;
		stalls = drv->violation < 0.5 * best ? 0 : stalls + 1;
		best = fmin(best, drv->violation);
		if (stalls >= 3 || restart >= MAX_RESTARTS)
			break;
	}
	if (drv->violation > drv->target && drv->iterations < drv->opt->max_iterations) {
		enum pm_status pst = drv->l1_c > 0 ? polish_active(drv, n, u) : polish(drv, n, u);

		st->iterations = drv->iterations;
		if (pst)
			return pst;
	}
	run_stats(drv, ret, st);
	return PM_OK;
}
