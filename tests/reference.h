/*
 * reference: an independent, slow but exact maximum-entropy solver, used by
 * tests/test_reference_solver.c to prove the project's solver correct, and
 * usable by anyone debugging the solver (#include "reference.h", link glpk).
 *
 * It shares no logic with solver/ or invariants.c on purpose: the constraint
 * system is rebuilt here from the records (rec_tuple, rec_group, rec_sa) and
 * the rule antecedents are matched against tuple codes directly.
 *
 * Method, all in records (y = N * P(q,s,b)):
 *  - cells (q,s,b) for q and s present in b (zero-invariants);
 *  - rows: every QI-invariant, every SA-invariant (the redundant one kept:
 *    iterative scaling does not mind) and one row per rule,
 *    lo * n(Qv) <= sum over b and q matching Qv of y[q,s,b] <= hi * n(Qv)
 *    (an equality where lo = hi);
 *  - forced zeros: cell j is zero in every solution iff max y_j subject to
 *    the rows and y >= 0 is 0, decided with GLPK's exact (rational) simplex,
 *    so "zero" means exactly zero. To need fewer LPs the objective is the
 *    sum over all still undecided cells (max of a sum of nonnegatives is 0
 *    iff each max is 0); every cell positive in an optimum is witnessed
 *    free. An infeasible LP means the knowledge is inconsistent;
 *  - cyclic Bregman projections (iterative scaling, all coefficients 1)
 *    from y = 1 on the remaining cells; they converge to the I-projection
 *    of the uniform vector, which is the maximum-entropy point because
 *    sum y = N is fixed by the QI rows. An interval row keeps its dual
 *    variable z (the log of the factor it put on its cells so far), and
 *    each projection scales by e^d, d = clamp(-z, log(lo / S), log(hi / S))
 *    for its sum S (Bregman 1967; Censor & Zenios 1997, Section 6.8):
 *    afterwards z > 0 only at lo, z < 0 only at hi, z = 0 in between;
 *  - P*(s|q) = sum_b y[q,s,b] / n(q).
 *
 * Everything is static so the header can be included by a single test.
 */
#ifndef PMAXENT_TEST_REFERENCE_H
#define PMAXENT_TEST_REFERENCE_H

#include <glpk.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "constraints.h"

#define REFERENCE_FN static __attribute__((unused))

/* Iterative scaling stops when max |A y - c| <= REFERENCE_TOL * N. */
#define REFERENCE_TOL	     1e-12
#define REFERENCE_MAX_SWEEPS 200000L

enum reference_status {
	REFERENCE_OK = 0,
	REFERENCE_INCONSISTENT = 1,  /* no y >= 0 satisfies the rows */
	REFERENCE_NOT_CONVERGED = 2, /* iterative scaling hit the sweep cap */
	REFERENCE_UNSUPPORTED = 3,   /* the published form (no records) */
	REFERENCE_FAILED = 4,	     /* no memory, LP solver error */
};

/* The reference's own constraint system and its solution. */
struct reference_system {
	size_t n_q, n_s, n_b; /* distinct tuples, SA domain, buckets */
	size_t n_records;
	uint32_t *nq;	   /* n(q), from the records */
	uint32_t *qb, *sb; /* n(q,b) at [q * n_b + b], n(s,b) at [s * n_b + b] */
	size_t n_cells;
	uint32_t *cell_q, *cell_s, *cell_b;
	long *cell_at; /* [(q * n_s + s) * n_b + b] -> cell, or -1 */
	size_t n_rows, nnz;
	size_t *row_off; /* n_rows + 1 */
	uint32_t *row_cell;
	double *rhs, *hi; /* records: each row lo (rhs) to hi */
	double *z;	  /* each row's dual variable (reference_scale) */
	uint8_t *forced;  /* zero in every solution */
	size_t n_forced;
	double *y; /* the estimate, records */
	long sweeps;
	double max_violation; /* records, over every row */
	char message[256];    /* why a step failed */
};

REFERENCE_FN void reference_free(struct reference_system *sys)
{
	free(sys->nq);
	free(sys->qb);
	free(sys->sb);
	free(sys->cell_q);
	free(sys->cell_s);
	free(sys->cell_b);
	free(sys->cell_at);
	free(sys->row_off);
	free(sys->row_cell);
	free(sys->rhs);
	free(sys->hi);
	free(sys->z);
	free(sys->forced);
	free(sys->y);
	memset(sys, 0, sizeof(*sys));
}

/* Counts n(q), n(q,b), n(s,b) straight from the records. */
static enum reference_status reference_count(const struct dataset *ds, struct reference_system *sys)
{
	sys->n_q = ds->n_tuples;
	sys->n_s = ds->sa_values.n;
	sys->n_b = ds->n_groups;
	sys->n_records = ds->n_records;
	sys->nq = calloc(sys->n_q + 1, sizeof(*sys->nq));
	sys->qb = calloc(sys->n_q * sys->n_b + 1, sizeof(*sys->qb));
	sys->sb = calloc(sys->n_s * sys->n_b + 1, sizeof(*sys->sb));
	if (!sys->nq || !sys->qb || !sys->sb)
		return REFERENCE_FAILED;
	for (size_t i = 0; i < ds->n_records; i++) {
		uint32_t q = ds->rec_tuple[i], b = ds->rec_group[i], s = ds->rec_sa[i];
		if (q >= sys->n_q || b >= sys->n_b || s >= sys->n_s) {
			snprintf(sys->message, sizeof(sys->message), "record %zu out of range", i);
			return REFERENCE_FAILED;
		}
		sys->nq[q]++;
		sys->qb[(size_t)q * sys->n_b + b]++;
		sys->sb[(size_t)s * sys->n_b + b]++;
	}
	return REFERENCE_OK;
}

/* Cells (q,s,b) with n(q,b) > 0 and n(s,b) > 0, bucket-major. */
static enum reference_status reference_cells(struct reference_system *sys)
{
	size_t all = sys->n_q * sys->n_s * sys->n_b, n = 0;
	sys->cell_at = malloc((all + 1) * sizeof(*sys->cell_at));
	sys->cell_q = malloc((all + 1) * sizeof(*sys->cell_q));
	sys->cell_s = malloc((all + 1) * sizeof(*sys->cell_s));
	sys->cell_b = malloc((all + 1) * sizeof(*sys->cell_b));
	if (!sys->cell_at || !sys->cell_q || !sys->cell_s || !sys->cell_b)
		return REFERENCE_FAILED;
	for (size_t i = 0; i < all; i++)
		sys->cell_at[i] = -1;
	for (size_t b = 0; b < sys->n_b; b++)
		for (size_t q = 0; q < sys->n_q; q++)
			for (size_t s = 0; s < sys->n_s; s++) {
				if (!sys->qb[q * sys->n_b + b] || !sys->sb[s * sys->n_b + b])
					continue;
				sys->cell_at[(q * sys->n_s + s) * sys->n_b + b] = (long)n;
				sys->cell_q[n] = (uint32_t)q;
				sys->cell_s[n] = (uint32_t)s;
				sys->cell_b[n] = (uint32_t)b;
				n++;
			}
	sys->n_cells = n;
	return REFERENCE_OK;
}

static int reference_matches(const struct dataset *ds, const struct rule *r, size_t q)
{
	for (uint32_t t = 0; t < r->n_terms; t++)
		if (ds->tuples[q * ds->n_attrs + r->attr[t]] != r->value[t])
			return 0;
	return 1;
}

/* Appends the cells of one row: every cell with q in qmask (NULL = any),
 * s == s0 (or any s when s0 < 0), b == b0 (or any b when b0 < 0). */
static void reference_row(struct reference_system *sys, const uint8_t *qmask, long q0, long s0,
			  long b0, double rhs, double hi)
{
	for (size_t c = 0; c < sys->n_cells; c++) {
		if (qmask && !qmask[sys->cell_q[c]])
			continue;
		if ((q0 >= 0 && sys->cell_q[c] != (uint32_t)q0) ||
		    (s0 >= 0 && sys->cell_s[c] != (uint32_t)s0) ||
		    (b0 >= 0 && sys->cell_b[c] != (uint32_t)b0))
			continue;
		sys->row_cell[sys->nnz++] = (uint32_t)c;
	}
	/* Mined rules give lo * n(Qv) = n(Qv and s) up to rounding; the exact
	 * LP would call a 1-ulp mismatch infeasible, so snap near-integers. */
	if (fabs(rhs - nearbyint(rhs)) <= 1e-9)
		rhs = nearbyint(rhs);
	if (fabs(hi - nearbyint(hi)) <= 1e-9)
		hi = nearbyint(hi);
	sys->rhs[sys->n_rows] = rhs;
	sys->hi[sys->n_rows] = hi;
	sys->row_off[++sys->n_rows] = sys->nnz;
}

/* One knowledge row: lo * n(Qv) <= sum over b, q matching Qv of y[q,s,b]
 * <= hi * n(Qv). */
static enum reference_status reference_rule_row(const struct dataset *ds,
						struct reference_system *sys, const struct rule *r,
						size_t i, uint8_t *qmask)
{
	uint64_t nqv = 0;
	if (r->sa >= sys->n_s) {
		snprintf(sys->message, sizeof(sys->message), "rule %zu: bad SA code", i);
		return REFERENCE_FAILED;
	}
	for (size_t q = 0; q < sys->n_q; q++)
		qmask[q] = (uint8_t)reference_matches(ds, r, q);
	for (size_t j = 0; j < ds->n_records; j++)
		nqv += qmask[ds->rec_tuple[j]];
	reference_row(sys, qmask, -1, r->sa, -1, r->lo * (double)nqv, r->hi * (double)nqv);
	return REFERENCE_OK;
}

/* The rows: QI-invariants, SA-invariants, then one row per rule. */
static enum reference_status reference_rows(const struct dataset *ds, const struct knowledge *k,
					    struct reference_system *sys)
{
	size_t n_rules = k ? k->n : 0, cap = sys->n_b * (sys->n_q + sys->n_s) + n_rules;
	enum reference_status st = REFERENCE_FAILED;
	uint8_t *qmask = calloc(sys->n_q + 1, 1);
	sys->row_off = calloc(cap + 1, sizeof(*sys->row_off));
	sys->rhs = calloc(cap + 1, sizeof(*sys->rhs));
	sys->hi = calloc(cap + 1, sizeof(*sys->hi));
	sys->z = calloc(cap + 1, sizeof(*sys->z));
	sys->row_cell = calloc(sys->n_cells * (2 + n_rules) + 1, sizeof(*sys->row_cell));
	if (!qmask || !sys->row_off || !sys->rhs || !sys->hi || !sys->z || !sys->row_cell)
		goto out;
	for (size_t b = 0; b < sys->n_b; b++)
		for (size_t q = 0; q < sys->n_q; q++)
			if (sys->qb[q * sys->n_b + b])
				reference_row(sys, NULL, (long)q, -1, (long)b,
					      sys->qb[q * sys->n_b + b], sys->qb[q * sys->n_b + b]);
	for (size_t b = 0; b < sys->n_b; b++)
		for (size_t s = 0; s < sys->n_s; s++)
			if (sys->sb[s * sys->n_b + b])
				reference_row(sys, NULL, -1, (long)s, (long)b,
					      sys->sb[s * sys->n_b + b], sys->sb[s * sys->n_b + b]);
	for (size_t i = 0; i < n_rules; i++)
		if ((st = reference_rule_row(ds, sys, &k->rules[i], i, qmask)) != REFERENCE_OK)
			goto out;
	st = REFERENCE_OK;
out:
	free(qmask);
	return st;
}

/* Builds the system for ds (records form) and the rules of k (k may be
 * NULL). Free with reference_free, also after a failure. */
REFERENCE_FN enum reference_status
reference_build(const struct dataset *ds, const struct knowledge *k, struct reference_system *sys)
{
	enum reference_status st;
	memset(sys, 0, sizeof(*sys));
	if (!ds->has_ground_truth) {
		snprintf(sys->message, sizeof(sys->message), "needs the records form");
		return REFERENCE_UNSUPPORTED;
	}
	if ((st = reference_count(ds, sys)) != REFERENCE_OK)
		return st;
	if ((st = reference_cells(sys)) != REFERENCE_OK)
		return st;
	if ((st = reference_rows(ds, k, sys)) != REFERENCE_OK)
		return st;
	sys->forced = calloc(sys->n_cells + 1, 1);
	sys->y = calloc(sys->n_cells + 1, sizeof(*sys->y));
	return sys->forced && sys->y ? REFERENCE_OK : REFERENCE_FAILED;
}

/* The LP: every row within its bounds, every cell a column y >= 0. */
static glp_prob *reference_lp(const struct reference_system *sys)
{
	glp_prob *lp = glp_create_prob();
	int *ia = malloc((sys->nnz + 1) * sizeof(*ia));
	int *ja = malloc((sys->nnz + 1) * sizeof(*ja));
	double *ar = malloc((sys->nnz + 1) * sizeof(*ar));
	if (!ia || !ja || !ar) {
		glp_delete_prob(lp);
		lp = NULL;
		goto out;
	}
	glp_set_obj_dir(lp, GLP_MAX);
	glp_add_rows(lp, (int)sys->n_rows);
	glp_add_cols(lp, (int)sys->n_cells);
	for (size_t r = 0; r < sys->n_rows; r++)
		glp_set_row_bnds(lp, (int)r + 1, sys->rhs[r] < sys->hi[r] ? GLP_DB : GLP_FX,
				 sys->rhs[r], sys->hi[r]);
	for (size_t c = 0; c < sys->n_cells; c++)
		glp_set_col_bnds(lp, (int)c + 1, GLP_LO, 0.0, 0.0);
	for (size_t r = 0; r < sys->n_rows; r++)
		for (size_t e = sys->row_off[r]; e < sys->row_off[r + 1]; e++) {
			ia[e + 1] = (int)r + 1;
			ja[e + 1] = (int)sys->row_cell[e] + 1;
			ar[e + 1] = 1.0;
		}
	glp_load_matrix(lp, (int)sys->nnz, ia, ja, ar);
out:
	free(ia);
	free(ja);
	free(ar);
	return lp;
}

/* Solves the LP as it stands: the floating-point simplex finds the optimal
 * basis cheaply, the rational one then confirms it exactly. */
static enum reference_status reference_lp_solve(struct reference_system *sys, glp_prob *lp)
{
	glp_smcp parm;
	int ret, status;
	glp_init_smcp(&parm);
	parm.msg_lev = GLP_MSG_OFF;
	parm.presolve = GLP_OFF;
	ret = glp_simplex(lp, &parm);
	if (ret == 0 || ret == GLP_ENOPFS)
		ret = glp_exact(lp, &parm);
	status = glp_get_status(lp);
	if (ret == 0 && status == GLP_NOFEAS) {
		snprintf(sys->message, sizeof(sys->message), "no y >= 0 satisfies the rows");
		return REFERENCE_INCONSISTENT;
	}
	if (ret != 0 || status != GLP_OPT) {
		snprintf(sys->message, sizeof(sys->message), "glp_exact: ret %d status %d", ret,
			 status);
		return REFERENCE_FAILED;
	}
	return REFERENCE_OK;
}

/*
 * One round on the undecided cells U (neither seen positive nor forced):
 * max sum_{j in U} y_j. Every cell positive in the (exact) optimum is not
 * forced; if the maximum is 0, every cell of U is 0 in every solution.
 * Each round either decides all of U or witnesses at least one cell.
 */
static enum reference_status reference_lp_round(struct reference_system *sys, glp_prob *lp,
						uint8_t *positive, int *done)
{
	size_t witnessed = 0;
	enum reference_status st;
	for (size_t c = 0; c < sys->n_cells; c++)
		glp_set_obj_coef(lp, (int)c + 1, positive[c] ? 0.0 : 1.0);
	if ((st = reference_lp_solve(sys, lp)) != REFERENCE_OK)
		return st;
	*done = glp_get_obj_val(lp) == 0.0; /* exact: a rational 0 */
	for (size_t c = 0; c < sys->n_cells; c++) {
		if (positive[c] || glp_get_col_prim(lp, (int)c + 1) <= 0.0)
			continue;
		positive[c] = 1;
		witnessed++;
	}
	if (!*done && !witnessed) {
		snprintf(sys->message, sizeof(sys->message), "LP round made no progress");
		return REFERENCE_FAILED;
	}
	return REFERENCE_OK;
}

/* Marks the cells that are zero in every solution. An LP that no y >= 0
 * satisfies means the knowledge is inconsistent. */
REFERENCE_FN enum reference_status reference_forced_zeros(struct reference_system *sys)
{
	enum reference_status st = REFERENCE_FAILED;
	uint8_t *positive = calloc(sys->n_cells + 1, 1);
	glp_prob *lp = NULL;
	int done = 0;
	glp_term_out(GLP_OFF);
	if (!positive || !(lp = reference_lp(sys)))
		goto out;
	while (!done)
		if ((st = reference_lp_round(sys, lp, positive, &done)) != REFERENCE_OK)
			goto out;
	sys->n_forced = 0;
	for (size_t c = 0; c < sys->n_cells; c++) {
		sys->forced[c] = !positive[c];
		sys->n_forced += !positive[c];
	}
	st = REFERENCE_OK;
out:
	if (lp)
		glp_delete_prob(lp);
	free(positive);
	return st;
}

static double reference_sum(const struct reference_system *sys, const double *y, size_t r)
{
	double sum = 0.0;
	for (size_t e = sys->row_off[r]; e < sys->row_off[r + 1]; e++)
		sum += y[sys->row_cell[e]];
	return sum;
}

/* max over rows of how far A y is outside [lo, hi], records. */
REFERENCE_FN double reference_violation(const struct reference_system *sys, const double *y)
{
	double worst = 0.0;
	for (size_t r = 0; r < sys->n_rows; r++) {
		double sum = reference_sum(sys, y, r);
		worst = fmax(worst, fmax(sys->rhs[r] - sum, sum - sys->hi[r]));
	}
	return worst;
}

/* That, and for an interval row off the bound its dual variable says
 * binds (z > 0: lo, z < 0: hi): the optimality conditions' residual. */
static double reference_kkt(const struct reference_system *sys)
{
	double worst = 0.0;
	for (size_t r = 0; r < sys->n_rows; r++) {
		double sum = reference_sum(sys, sys->y, r), lo = sys->rhs[r], hi = sys->hi[r];
		worst = fmax(worst, sys->z[r] > 0   ? fabs(sum - lo)
				    : sys->z[r] < 0 ? fabs(sum - hi)
						    : fmax(lo - sum, sum - hi));
	}
	return worst;
}

/* One Bregman projection onto row r: its free cells scaled by e^d, d =
 * clamp(-z, log(lo / S), log(hi / S)) (an equality: to lo). */
static int reference_project(struct reference_system *sys, size_t r)
{
	double sum, d, lo = sys->rhs[r], hi = sys->hi[r];
	if (hi == 0.0)
		return 0; /* all its cells are forced zero */
	sum = reference_sum(sys, sys->y, r);
	if (!(sum > 0.0))
		return lo == 0.0 ? 0 : -1; /* at lo already, or below it for good */
	d = lo == hi ? log(lo / sum)
		     : fmin(fmax(-sys->z[r], lo > 0 ? log(lo / sum) : -INFINITY), log(hi / sum));
	sys->z[r] = lo == hi ? 0.0 : sys->z[r] + d;
	for (size_t e = sys->row_off[r]; e < sys->row_off[r + 1]; e++)
		sys->y[sys->row_cell[e]] *= exp(d);
	return 0;
}

/* Cyclic projections from y = 1 on the free cells until max |A y - c| <=
 * REFERENCE_TOL * N. Needs reference_forced_zeros first. */
REFERENCE_FN enum reference_status reference_scale(struct reference_system *sys)
{
	double tol = REFERENCE_TOL * (double)sys->n_records;
	for (size_t c = 0; c < sys->n_cells; c++)
		sys->y[c] = sys->forced[c] ? 0.0 : 1.0;
	memset(sys->z, 0, sys->n_rows * sizeof(*sys->z));
	for (sys->sweeps = 0; sys->sweeps < REFERENCE_MAX_SWEEPS; sys->sweeps++) {
		sys->max_violation = reference_kkt(sys);
		if (sys->max_violation <= tol)
			return REFERENCE_OK;
		for (size_t r = 0; r < sys->n_rows; r++)
			if (reference_project(sys, r) != 0) {
				snprintf(sys->message, sizeof(sys->message),
					 "row %zu has rhs %g but no free cell", r, sys->rhs[r]);
				return REFERENCE_INCONSISTENT;
			}
	}
	sys->max_violation = reference_violation(sys, sys->y);
	snprintf(sys->message, sizeof(sys->message),
		 "iterative scaling: max violation %.3g after %ld sweeps", sys->max_violation,
		 sys->sweeps);
	return REFERENCE_NOT_CONVERGED;
}

/* y of (q,s,b), 0 when the zero-invariants remove it. */
REFERENCE_FN double reference_cell(const struct reference_system *sys, size_t q, size_t s, size_t b)
{
	long c = sys->cell_at[(q * sys->n_s + s) * sys->n_b + b];
	return c < 0 ? 0.0 : sys->y[c];
}

/* posterior[q * n_s + s] = P*(s|q) = sum_b y[q,s,b] / n(q). */
REFERENCE_FN void reference_posterior(const struct reference_system *sys, double *posterior)
{
	memset(posterior, 0, sys->n_q * sys->n_s * sizeof(*posterior));
	for (size_t c = 0; c < sys->n_cells; c++)
		posterior[(size_t)sys->cell_q[c] * sys->n_s + sys->cell_s[c]] +=
		    sys->y[c] / sys->nq[sys->cell_q[c]];
}

/* -sum x ln x with x = y / N, nats. */
REFERENCE_FN double reference_entropy(const struct reference_system *sys)
{
	double h = 0.0, n = (double)sys->n_records;
	for (size_t c = 0; c < sys->n_cells; c++)
		if (sys->y[c] > 0.0)
			h -= sys->y[c] / n * log(sys->y[c] / n);
	return h;
}

/*
 * The whole method: posterior (ds->n_tuples * ds->sa_values.n doubles,
 * [q * |S| + s]) receives P*(s|q). If sys is not NULL it receives the
 * system (cells, forced zeros, y, sweeps) and the caller must
 * reference_free it; otherwise it is freed here. On failure the message is
 * printed to stderr.
 */
REFERENCE_FN enum reference_status reference_solve(const struct dataset *ds,
						   const struct knowledge *k, double *posterior,
						   struct reference_system *sys)
{
	struct reference_system own;
	struct reference_system *s = sys ? sys : &own;
	enum reference_status st = reference_build(ds, k, s);
	if (st == REFERENCE_OK)
		st = reference_forced_zeros(s);
	if (st == REFERENCE_OK)
		st = reference_scale(s);
	if (st == REFERENCE_OK)
		reference_posterior(s, posterior);
	else
		fprintf(stderr, "reference_solve: %s (status %d)\n", s->message, (int)st);
	if (!sys)
		reference_free(s);
	return st;
}

#endif
