/*
 * Conflicting rules named: when propagation or a relaxation finds no
 * solution (zeros_lp_conflict), or the zero finder's program of a
 * component has none, a deletion filter over the component's rules, each
 * step an exact feasibility test (propagation first, then a program of
 * zeros_lp_component.c), leaves an irreducible conflicting set.
 */
#include <glpk.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "components.h"
#include "zeros.h"

/* LP_MAX_ENTRIES (zeros_lp_component.c) for a check whether knowledge
 * with intervals conflicts, not proved by anything (zeros_lp_conflict
 * without proved): a tenth of it, as such a check runs on a hunch and
 * its deletion filter solves a program at every step. */
#define LP_CHECK_ENTRIES 100000

/* The touched buckets' components (components.c), every knowledge row
 * linking the buckets it touches; cs holds their lists. */
static enum pm_status components_split(struct lp_context *bd, struct components *cs,
				       struct component **out, size_t *n_out)
{
	const struct invariants *inv = bd->inv;
	uint8_t *touched = malloc(inv->n_groups + 1);
	enum pm_status st = PM_ERR_NOMEM;

	*out = NULL;
	*n_out = 0;
	if (!touched)
		return st;
	for (size_t b = 0; b < inv->n_groups; b++)
		touched[b] = (uint8_t)invariants_touched(inv, b);
	st = components_build(inv, touched, NULL, 0, cs);
	free(touched);
	if (!st && !(*out = calloc(cs->n + 1, sizeof **out)))
		st = PM_ERR_NOMEM;
	for (size_t i = 0; !st && i < cs->n; i++) {
		struct component *c = &(*out)[i];

		c->buckets = cs->bucket + cs->b_off[i];
		c->n_buckets = cs->b_off[i + 1] - cs->b_off[i];
		c->krows = cs->row + cs->r_off[i];
		c->n_krows = cs->r_off[i + 1] - cs->r_off[i];
		for (size_t k = 0; k < c->n_buckets; k++)
			c->m += inv->cell_off[c->buckets[k] + 1] - inv->cell_off[c->buckets[k]];
	}
	*n_out = st ? 0 : cs->n;
	return st;
}

/* Does propagation alone prove the component infeasible with the
 * knowledge rows in use[] (NULL: all of them)? Every other knowledge row
 * is set aside as resolved, which propagation skips, and so is an
 * interval's (propagation reads equalities; without it, a relaxation).
 * 1 yes, 0 no, -1 out of memory. */
static int proved_infeasible(struct lp_context *bd, const struct component *c, const uint8_t *use)
{
	const struct invariants *inv = bd->inv;
	uint8_t *zero = calloc(inv->n_cells + 1, 1), *resolved = malloc(inv->n_rows + 1);
	int infeasible = -1;

	if (zero && resolved) {
		memset(resolved, 1, inv->n_rows);
		for (size_t k = 0; k < c->n_krows; k++) {
			size_t r = c->krows[k];
			int used = !use || use[k];

			resolved[r] = (uint8_t)(!used || invariants_interval(inv, r));
			for (size_t e = inv->row_off[r];
			     used && inv->hi[r] <= 0 && e < inv->row_off[r + 1]; e++)
				zero[inv->row_cell[e]] = 1;
		}
		if (zeros_propagate(inv, zero, resolved, &infeasible))
			infeasible = -1;
	}
	free(zero);
	free(resolved);
	return infeasible;
}

struct feasible_run {
	struct lp_context *bd;
	const struct component *c;
	const uint8_t *use;
	int r;
};

/* feasible's program, under lp_guard_run. */
static enum pm_status feasible_lp(void *ctx)
{
	struct feasible_run *f = ctx;
	glp_prob *lp = zeros_lp_build(f->bd, f->c, f->use, 0);
	enum pm_status st;

	if (!lp)
		return PM_ERR_NOMEM;
	st = zeros_lp_solve(lp, f->bd->cancel, &f->r);
	if (!st && f->r == 1) { /* named from exact verdicts, as zeros_lp_component_solve's */
		int e;
		enum pm_status ex = zeros_lp_exact(lp, f->bd->cancel, &e);

		st = ex == PM_ERR_CANCELLED ? ex : PM_OK;
		f->r = ex ? f->r : e;
	}
	glp_delete_prob(lp);
	return st;
}

/* Is the component feasible with the knowledge rows in use[]? Propagation
 * first (passes over the entries, where a simplex grows much faster with
 * the cells); with
 * no rule at all it is (the closed form); else the linear program, its
 * verdict confirmed by the exact simplex (an error path: the cost is
 * no matter, and the rules named must agree with the exact verdict of
 * zeros_lp_component_solve). 1, 0, -1 failure (GLPK's fatal errors too),
 * -2 cancelled. */
static int feasible(struct lp_context *bd, const struct component *c, const uint8_t *use)
{
	int proved = proved_infeasible(bd, c, use);
	struct feasible_run f = {bd, c, use, -1};
	struct pm_error e;
	enum pm_status st;

	if (proved)
		return proved > 0 ? 0 : -1;
	if (!memchr(use, 1, c->n_krows))
		return 1;
	if (!c->m)
		return 0; /* every cell zero, yet QI rows need records */
	st = lp_guard_run(feasible_lp, &f, &e);
	return st == PM_ERR_CANCELLED ? -2 : st ? -1 : f.r;
}

/* Appends "rules[i] P(...) = p" for knowledge row `row` to msg. */
static void describe_row(struct lp_context *bd, size_t row, char *msg, size_t len)
{
	size_t r = bd->inv->row_ref[row], used = strlen(msg);
	char text[512] = "";

	if (bd->k && r < bd->k->n)
		knowledge_describe(bd->ds, &bd->k->rules[r], text, sizeof text);
	if (used + 1 < len)
		snprintf(msg + used, len - used, "%srules[%zu] %s", used ? "; " : "", r, text);
}

int zeros_lp_filter(uint8_t *use, const uint8_t *stay, size_t n, uint8_t *save,
		    int (*feasible)(void *ctx, const uint8_t *use), void *ctx)
{
	for (size_t chunk = n > 1 ? n / 2 : 1;; chunk = (chunk + 1) / 2) {
		for (size_t i = 0; i < n; i += chunk) {
			size_t w = i + chunk < n ? chunk : n - i;
			int f;

			memcpy(save, use + i, w);
			for (size_t j = i; j < i + w; j++)
				use[j] &= stay && stay[j];
			if (!memcmp(save, use + i, w))
				continue;
			if ((f = feasible(ctx, use)) < 0)
				return f;
			if (f)
				memcpy(use + i, save, w); /* needed for the conflict */
		}
		if (chunk == 1)
			return 0;
	}
}

struct filter_ctx {
	struct lp_context *bd;
	struct component *c;
};

static int component_feasible(void *ctx, const uint8_t *use)
{
	struct filter_ctx *fc = ctx;

	return feasible(fc->bd, fc->c, use);
}

enum pm_status zeros_lp_conflict_report(struct lp_context *bd, struct component *c,
					struct pm_error *err)
{
	uint8_t *use = malloc(c->n_krows + 1), *save = malloc(c->n_krows + 1);
	char msg[sizeof err->message - 96] = "";
	size_t n = 0;
	enum pm_status st = PM_ERR_NOMEM;
	int f;

	if (!use || !save || zeros_lp_cells(bd, c, 0))
		goto out;
	memset(use, 1, c->n_krows);
	if ((f = zeros_lp_filter(use, NULL, c->n_krows, save, component_feasible,
				 &(struct filter_ctx){bd, c})) < 0) {
		st = f == -2 ? PM_ERR_CANCELLED : PM_ERR_INTERNAL;
		goto out;
	}
	for (size_t i = 0; i < c->n_krows; i++)
		if (use[i] && ++n)
			describe_row(bd, c->krows[i], msg, sizeof msg);
	st = error_set(err, PM_ERR_INCONSISTENT, "rules", "no distribution satisfies %s: %s",
		       n == 1 ? "this rule" : "these rules together", msg);
out:
	if (st == PM_ERR_NOMEM)
		error_set(err, st, "", "out of memory looking for conflicting rules");
	else if (st == PM_ERR_INTERNAL)
		error_set(err, st, "", "the linear program solver failed");
	else if (st == PM_ERR_CANCELLED)
		error_set(err, st, "", "the solve was cancelled");
	free(use);
	free(save);
	return st;
}

/*
 * Propagation or the relaxations found no solution. A component that
 * propagation alone proves infeasible has its rules named, with no linear
 * program over any component (the program of a consistent one, first in
 * line, could fail numerically and hide the conflict); otherwise (the
 * relaxations' proof) each component's program decides.
 */
static enum pm_status infeasible_components(struct lp_context *bd, struct component *cs, size_t n,
					    int proved, struct pm_error *err)
{
	enum pm_status st = PM_OK;
	size_t large = 0, rules = 0;

	for (size_t i = 0; i < n; i++) {
		int p = proved_infeasible(bd, &cs[i], NULL);

		if (p)
			return p < 0 ? PM_ERR_NOMEM : zeros_lp_conflict_report(bd, &cs[i], err);
	}
	for (size_t i = 0; !st && i < n; i++) {
		int undecided;

		st = zeros_lp_component_solve(bd, &cs[i], &undecided, err);
		large += undecided;
		rules += undecided ? cs[i].n_krows : 0;
	}
	/* the conflict lies in a component too large to name its rules
	 * (when proved, as by propagation; else nothing is known) */
	if (!st && large && proved)
		st = error_set(err, PM_ERR_INCONSISTENT, "rules",
			       "no distribution satisfies the rules together; the conflict lies "
			       "among %zu of them, too many to name the conflicting ones",
			       rules);
	return st;
}

enum pm_status zeros_lp_conflict(struct zeros *z, struct cancel *cancel, int proved,
				 struct pm_error *err)
{
	struct lp_context bd = zeros_lp_context(z, cancel);
	struct components lists = {0};
	struct component *cs = NULL;
	size_t n = 0;
	enum pm_status st = components_split(&bd, &lists, &cs, &n);

	if (!proved) /* only a check: no long simplex on a hunch */
		bd.max_entries = LP_CHECK_ENTRIES;
	if (!st)
		st = infeasible_components(&bd, cs, n, proved, err);
	if (st == PM_ERR_NOMEM)
		error_set(err, st, "", "out of memory finding forced zeros");
	for (size_t i = 0; i < n; i++)
		zeros_lp_component_finish(&cs[i]);
	free(cs);
	components_finish(&lists);
	zeros_lp_context_finish(&bd);
	zeros_lp_release(); /* called outside zeros_deepen too (solver.c) */
	return st;
}

void zeros_describe_row(const struct zeros *z, size_t row, char *msg, size_t len)
{
	struct lp_context bd = zeros_lp_context(z, NULL);

	describe_row(&bd, row, msg, len);
}
