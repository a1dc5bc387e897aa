/*
 * The pseudonym model's exact programs (GLPK), for when its dual does
 * not converge: the zero finder (the homogenized program max Σ z_j,
 * 0 <= z_j <= 1, z_j <= y_j, lo t <= a.y <= hi t over every row of the
 * buckets the open rows touch: z_j = 1 exactly on the cells some
 * solution makes positive, and an optimum of 0 means no solution), and
 * a deletion filter over the rules and statements that names an
 * irreducible conflicting set. Each verdict from zeros_lp_solve: exact
 * where the floating-point one rests on GLPK's tolerances.
 */
#include <glpk.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifted_internal.h"
#include "solve.h"
#include "zeros.h"

/* Entries a program may have: GLPK's memory grows with them (zeros_lp.c's
 * LP_MAX_ENTRIES measured 11 GB at ten times more columns). */
#define LIFTED_LP_ENTRIES 1000000

/* The rows and cells a program covers: the QI and SA rows of the
 * buckets some open row touches, and the open rows (use[] may drop
 * some); col: model cell -> column (1-based; 0: none, a zero or another
 * bucket's cell). */
struct lprog {
	const struct lifted *m;
	const uint8_t *zero;
	size_t n_rows, n_open, n_cols, entries;
	uint32_t *rows; /* the bucket rows, then the open ones */
	int *col;
};

static void lprog_finish(struct lprog *p)
{
	free(p->rows);
	free(p->col);
}

static int open_row(const struct lifted *m, const uint8_t *implied, size_t r)
{
	return r >= m->inv->n_qi_rows + m->inv->n_sa_rows &&
	       !(r < m->inv->n_rows && implied && implied[r]);
}

/* Which cells and rows: buckets with a free cell of an open row. */
static enum pm_status lprog_init(struct lprog *p, const struct lifted *m, const uint8_t *zero,
				 const uint8_t *implied)
{
	const struct invariants *inv = m->inv;
	uint8_t *bk = calloc(inv->n_groups + 1, 1);
	size_t first = inv->n_qi_rows + inv->n_sa_rows;

	memset(p, 0, sizeof *p);
	p->m = m;
	p->zero = zero;
	p->rows = malloc((m->n_rows + 1) * sizeof *p->rows);
	p->col = calloc(m->n_cells + 1, sizeof *p->col);
	if (!bk || !p->rows || !p->col) {
		free(bk);
		return PM_ERR_NOMEM;
	}
	for (size_t r = first; r < m->n_rows; r++)
		for (size_t e = m->row_off[r]; open_row(m, implied, r) && e < m->row_off[r + 1];
		     e++) {
			size_t c = m->row_cell[e];

			if (!zero[c])
				bk[inv->cell_group[c < inv->n_cells ? c
								    : m->agg[c - inv->n_cells]]] =
				    1;
		}
	for (size_t r = 0; r < first; r++)
		if (bk[inv->row_ref[r]])
			p->rows[p->n_rows++] = (uint32_t)r;
	for (size_t r = first; r < m->n_rows; r++)
		if (open_row(m, implied, r)) {
			p->rows[p->n_rows++] = (uint32_t)r;
			p->n_open++;
		}
	for (size_t i = 0; i < p->n_rows; i++)
		for (size_t e = m->row_off[p->rows[i]]; e < m->row_off[p->rows[i] + 1]; e++) {
			size_t c = m->row_cell[e];
			size_t b = inv->cell_group[c < inv->n_cells ? c : m->agg[c - inv->n_cells]];

			if (zero[c] || !bk[b])
				continue;
			p->entries++;
			if (!p->col[c])
				p->col[c] = (int)++p->n_cols;
		}
	free(bk);
	return PM_OK;
}

/* Row i of p into lp, as lo <= a.y <= hi (homog: lo t <= a.y <= hi t,
 * two rows when lo < hi). Returns the rows added. */
static int lp_row(const struct lprog *p, glp_prob *lp, size_t i, int homog, int *ind, double *val)
{
	const struct lifted *m = p->m;
	size_t r = p->rows[i];
	int n = 0, t = (int)p->n_cols + 1, row = glp_get_num_rows(lp) + 1;
	double lo = m->lo[r], hi = m->hi[r];

	for (size_t e = m->row_off[r]; e < m->row_off[r + 1]; e++)
		if (p->col[m->row_cell[e]] && m->row_coef[e] != 0) {
			ind[++n] = p->col[m->row_cell[e]];
			val[n] = m->row_coef[e];
		}
	if (!homog) {
		glp_add_rows(lp, 1);
		glp_set_row_bnds(lp, row, lo == hi ? GLP_FX : GLP_DB, lo, hi);
		glp_set_mat_row(lp, row, n, ind, val);
		return 1;
	}
	ind[n + 1] = t;
	for (int side = 0; side < (lo == hi ? 1 : 2); side++) {
		val[n + 1] = side ? -hi : -lo;
		glp_add_rows(lp, 1);
		glp_set_row_bnds(lp, row + side, lo == hi ? GLP_FX : side ? GLP_UP : GLP_LO, 0, 0);
		glp_set_mat_row(lp, row + side, n + 1, ind, val);
	}
	return lo == hi ? 1 : 2;
}

/* The program: the feasibility one (homog 0: zero objective), or the
 * zero finder (columns y, then t, then z). use[] (per open row of p, may
 * be NULL) keeps open rows. NULL when out of memory. */
static glp_prob *lp_make(const struct lprog *p, const uint8_t *use, int homog)
{
	glp_prob *lp = zeros_lp_create();
	int n = (int)p->n_cols, *ind = malloc((p->n_cols + 3) * sizeof *ind);
	double *val = malloc((p->n_cols + 3) * sizeof *val);
	size_t first = p->n_rows - p->n_open;

	if (!lp || !ind || !val) {
		free(ind);
		free(val);
		if (lp)
			glp_delete_prob(lp);
		return NULL;
	}
	glp_add_cols(lp, homog ? 2 * n + 1 : n);
	for (int j = 1; j <= n + (homog ? 1 : 0); j++)
		glp_set_col_bnds(lp, j, GLP_LO, 0, 0);
	for (size_t i = 0; i < p->n_rows; i++)
		if (!use || i < first || use[i - first])
			lp_row(p, lp, i, homog, ind, val);
	for (int j = 1; homog && j <= n; j++) {
		int row = glp_add_rows(lp, 1), zi[3] = {0, n + 1 + j, j};
		double zv[3] = {0, 1, -1};

		glp_set_col_bnds(lp, n + 1 + j, GLP_DB, 0, 1);
		glp_set_obj_coef(lp, n + 1 + j, 1);
		glp_set_row_bnds(lp, row, GLP_UP, 0, 0);
		glp_set_mat_row(lp, row, 2, zi, zv);
	}
	glp_set_obj_dir(lp, GLP_MAX);
	free(ind);
	free(val);
	return lp;
}

struct feasible_run {
	const struct lprog *p;
	const uint8_t *use;
	struct cancel *cancel;
	int f;
};

/* feasible's program, under lp_guard_run. */
static enum pm_status feasible_lp(void *ctx)
{
	struct feasible_run *r = ctx;
	glp_prob *lp = lp_make(r->p, r->use, 0);
	enum pm_status st;

	if (!lp)
		return PM_ERR_NOMEM;
	st = zeros_lp_solve(lp, r->cancel, &r->f);
	glp_delete_prob(lp);
	return st;
}

/* Feasible with the open rows use[] keeps: 1, 0, or -1 (failure, GLPK's
 * fatal errors too), -2 (cancelled). */
static int feasible(const struct lprog *p, const uint8_t *use, struct cancel *cancel)
{
	size_t first = p->n_rows - p->n_open;
	struct feasible_run r = {p, use, cancel, -1};
	struct pm_error e;
	enum pm_status st;

	if (!p->n_cols) { /* every row is 0: inside its bounds? (GLPK takes no empty program) */
		for (size_t i = 0; i < p->n_rows; i++)
			if ((!use || i < first || use[i - first]) &&
			    (p->m->lo[p->rows[i]] > ZERO_RECORDS ||
			     p->m->hi[p->rows[i]] < -ZERO_RECORDS))
				return 0;
		return 1;
	}
	st = lp_guard_run(feasible_lp, &r, &e);
	return st == PM_ERR_CANCELLED ? -2 : st ? -1 : r.f;
}

/* Appends row r's name to msg: "rules[i] P(...)" or a statement's. */
static void describe(const struct dataset *ds, const struct knowledge *k, const struct lifted *m,
		     size_t r, char *msg, size_t len)
{
	size_t used = strlen(msg);
	char text[512] = "";

	if (r < m->inv->n_rows) {
		size_t i = m->inv->row_ref[r];

		knowledge_describe(ds, &k->rules[i], text, sizeof text);
		snprintf(msg + used, len - used, "%srules[%zu] %s", used ? "; " : "", i, text);
		return;
	}
	statements_describe(k, r - m->statement_row0, text, sizeof text);
	snprintf(msg + used, len - used, "%s%s", used ? "; " : "", text);
}

/* The rules and statements among p's open rows that use[] keeps, as an
 * error naming them (field "rules", "statements", or both: ""). */
static enum pm_status conflict_named(const struct dataset *ds, const struct knowledge *k,
				     const struct lprog *p, const uint8_t *use,
				     struct pm_error *err)
{
	char msg[sizeof err->message - 96] = "";
	size_t first = p->n_rows - p->n_open, rules = 0, stmts = 0;

	for (size_t i = 0; i < p->n_open; i++) {
		size_t r = p->rows[first + i];

		if (!use[i] || (r >= p->m->person_row0 && r < p->m->statement_row0))
			continue;
		rules += r < p->m->person_row0;
		stmts += r >= p->m->statement_row0;
		describe(ds, k, p->m, r, msg, sizeof msg);
	}
	return error_set(err, PM_ERR_INCONSISTENT,
			 !stmts	  ? "rules"
			 : !rules ? "statements"
				  : "",
			 "no distribution satisfies %s: %s",
			 rules + stmts == 1 ? (rules ? "this rule" : "this statement")
			 : !stmts	    ? "these rules together"
			 : !rules	    ? "these statements together"
					    : "these rules and statements together",
			 msg);
}

struct filter_ctx {
	const struct lprog *p;
	struct cancel *cancel;
};

static int filter_feasible(void *ctx, const uint8_t *use)
{
	const struct filter_ctx *fc = ctx;

	return feasible(fc->p, use, fc->cancel);
}

/* Deletion filter in shrinking chunks over the rules and statements
 * (people's rows stay: each named person is one record, which is not
 * knowledge that could be wrong): those left form an irreducible
 * conflicting set. p's zeros are no help here: each was proved from
 * rows the filter may drop. */
static enum pm_status filter(const struct dataset *ds, const struct knowledge *k,
			     const struct lprog *p, struct cancel *cancel, struct pm_error *err)
{
	size_t n = p->n_open, first = p->n_rows - n;
	uint8_t *use = malloc(n + 1), *save = malloc(n + 1), *stay = malloc(n + 1);
	struct filter_ctx ctx = {p, cancel};
	enum pm_status st = PM_ERR_NOMEM;
	int f;

	if (!use || !save || !stay)
		goto out;
	memset(use, 1, n);
	for (size_t j = 0; j < n; j++) { /* people stay */
		size_t r = p->rows[first + j];

		stay[j] = r >= p->m->person_row0 && r < p->m->statement_row0;
	}
	if ((f = zeros_lp_filter(use, stay, n, save, filter_feasible, (void *)&ctx)) < 0) {
		st = f == -2 ? PM_ERR_CANCELLED : PM_ERR_INTERNAL;
		goto out;
	}
	st = conflict_named(ds, k, p, use, err);
out:
	free(use);
	free(save);
	free(stay);
	return st;
}

/* The conflict, named: the filter over the model without its zeros and
 * implied rows (every rule a candidate). */
static enum pm_status conflict_report(const struct dataset *ds, const struct knowledge *k,
				      const struct lifted *m, struct cancel *cancel,
				      struct pm_error *err)
{
	uint8_t *none = calloc(m->n_cells + 1, 1);
	struct lprog p = {0};
	enum pm_status st = none ? lprog_init(&p, m, none, NULL) : PM_ERR_NOMEM;

	if (!st && p.entries > LIFTED_LP_ENTRIES)
		st = error_set(err, PM_ERR_INCONSISTENT, "",
			       "no distribution satisfies the knowledge (the program naming the "
			       "conflicting rules and statements is too large to build)");
	else if (!st)
		st = filter(ds, k, &p, cancel, err);
	if (st == PM_ERR_NOMEM)
		error_set(err, st, "", "out of memory looking for conflicting knowledge");
	else if (st == PM_ERR_INTERNAL)
		error_set(err, st, "", "the linear program solver failed");
	else if (st == PM_ERR_CANCELLED)
		error_set(err, st, "", "the solve was cancelled");
	lprog_finish(&p);
	free(none);
	return st;
}

struct zeros_run {
	const struct lprog *p;
	const struct lifted *m;
	struct cancel *cancel;
	uint8_t *zero;
	size_t *added;
	int none; /* only y = 0, t = 0: no solution */
};

/* lifted_lp_zeros' program, under lp_guard_run. */
static enum pm_status zeros_lp(void *ctx)
{
	struct zeros_run *r = ctx;
	const struct lprog *p = r->p;
	glp_prob *lp = lp_make(p, NULL, 1);
	enum pm_status st;
	int f = -1;

	if (!lp)
		return PM_ERR_NOMEM;
	if ((st = zeros_lp_solve(lp, r->cancel, &f)))
		goto out;
	r->none = glp_get_obj_val(lp) < 0.5;
	for (size_t c = 0; !r->none && c < r->m->n_cells; c++)
		if (p->col[c] && glp_get_col_prim(lp, (int)p->n_cols + 1 + p->col[c]) < 0.5) {
			r->zero[c] = 1;
			(*r->added)++;
		}
out:
	glp_delete_prob(lp);
	return st;
}

enum pm_status lifted_lp_zeros(const struct dataset *ds, const struct knowledge *k,
			       const struct lifted *m, uint8_t *zero, const uint8_t *implied,
			       struct cancel *cancel, size_t *added, struct pm_error *err)
{
	struct lprog p;
	struct zeros_run r = {&p, m, cancel, zero, added, 0};
	struct pm_error fatal = {0};
	enum pm_status st;

	*added = 0;
	if ((st = lprog_init(&p, m, zero, implied)))
		goto out;
	if (p.entries > LIFTED_LP_ENTRIES || !p.n_cols)
		goto out; /* undecided: the dual runs its zeros down */
	st = lp_guard_run(zeros_lp, &r, &fatal);
	if (!st && r.none) /* the program is gone: the filter makes its own */
		st = conflict_report(ds, k, m, cancel, err);
out:
	lprog_finish(&p);
	/* GLPK's per-thread environment would outlive a worker thread */
	zeros_lp_release();
	if (fatal.status) /* GLPK's fatal error, with its message */
		*err = fatal;
	else if (st == PM_ERR_NOMEM)
		error_set(err, st, "", "out of memory deciding the forced zeros");
	else if (st == PM_ERR_INTERNAL)
		error_set(err, st, "", "the linear program solver failed");
	else if (st == PM_ERR_CANCELLED)
		error_set(err, st, "", "the solve was cancelled");
	return st;
}

enum pm_status lifted_lp_conflict(const struct dataset *ds, const struct knowledge *k,
				  const struct lifted *m, const uint8_t *zero,
				  const uint8_t *implied, struct cancel *cancel,
				  struct pm_error *err)
{
	struct lprog p;
	enum pm_status st = lprog_init(&p, m, zero, implied);
	int f = 1;

	if (st)
		error_set(err, st, "", "out of memory looking for conflicting knowledge");
	else if (p.entries <= LIFTED_LP_ENTRIES && (f = feasible(&p, NULL, cancel)) == 0)
		st = conflict_report(ds, k, m, cancel, err);
	else if (f < 0)
		st = error_set(err, f == -2 ? PM_ERR_CANCELLED : PM_ERR_INTERNAL, "",
			       f == -2 ? "the solve was cancelled"
				       : "the linear program solver failed");
	else if (p.entries > LIFTED_LP_ENTRIES) /* the zeros proved it */
		st = conflict_report(ds, k, m, cancel, err);
	lprog_finish(&p);
	zeros_lp_release();
	return st;
}

size_t lifted_lp_entries(const struct lifted *m, const uint8_t *zero, const uint8_t *implied)
{
	struct lprog p;
	size_t n = SIZE_MAX;

	if (!lprog_init(&p, m, zero, implied))
		n = p.entries;
	lprog_finish(&p);
	return n;
}
