/*
 * pseudonyms: an independent, slow reference for the whole knowledge
 * language (rules, statements, named people; SPEC 1, 3.1), solving the
 * FULLY PSEUDONYMIZED model: every record of the table is a pseudonym r of
 * its tuple q, with one variable x[r,s,b] (records: each pseudonym is one)
 * per bucket b that holds q and value s of b. A named person is one
 * pseudonym of their tuple (distinct people, distinct pseudonyms) whose
 * variables are kept to their bucket when it is known. Used by
 * tests/test_pseudonyms.c and tests/test_pseudonyms_people.c; it shares no
 * code with solver/, invariants.c or lifted.c: counts come from the
 * records, antecedents are matched here.
 *
 * A "holder" is a set of interchangeable people that the model treats as
 * one block of variables: in PSEUDO_RECORDS, one per record (the model
 * above); in PSEUDO_AGGREGATED, one per named person and one per tuple for
 * its unnamed rest (n(q) minus its named people), so that the two modes
 * must agree (SPEC 3.1: "unnamed people of one tuple are interchangeable").
 *
 * Rows, all in records, lo <= a.x <= hi (an equality where lo == hi):
 *  - per holder: the sum of its cells = its multiplicity (1 per pseudonym);
 *  - QI-invariant per (q,b): the cells of holders of q in b = n(q,b);
 *    SA-invariant per (s,b): the cells of (s,b) = n(s,b) (none dropped);
 *  - per rule P(s|Qv) in [lo,hi]: the cells of holders matching Qv with
 *    value s, in [lo n(Qv), hi n(Qv)];
 *  - per statement lo <= sum_t coef_t P_t <= hi, times M = lcm of its
 *    terms' n(if) (1 with only person terms), so that a sum of integer
 *    counts stays integral: a distribution term adds coef_t M / n(if) on
 *    the cells matching its if with a value in `then`, a person term
 *    coef_t M on the person's cells with a value in `then`.
 *  Bounds within 1e-9 (relative) of an integer are snapped to it: a
 *  probability read from the records times its count, up to rounding.
 *
 * Method:
 *  - forced zeros and feasibility with one exact LP (GLPK, rational
 *    simplex after a floating one), homogenized: columns w_j in [0,1] and
 *    v_j >= 0 (cell j is w_j + v_j) and t >= 1, each row lo t <= a.(w + v)
 *    <= hi t, maximize sum w_j. (w + v)/t is feasible whenever it is, and
 *    the cone is closed under sums and scaling, so at the optimum w_j = 1
 *    exactly for every cell positive in some solution and w_j = 0 for the
 *    cells zero in all of them; no feasible point: the LP is infeasible;
 *  - the maximum on the other cells by cyclic Bregman projections for the
 *    entropy (Censor & Zenios 1997, 6.8) with general coefficients, from
 *    x = 1: projecting on row r multiplies x_j by e^(d a_rj), d from a
 *    1-D safeguarded Newton solve of a_r . x(d) = target; each row keeps
 *    its dual variable z_r (sum of its d), and an interval row takes
 *    d = -z_r unless that leaves it outside [lo, hi] (then the bound it
 *    crossed), so z_r > 0 only at lo, z_r < 0 only at hi. Thus x =
 *    exp(A^T z) always (recomputed from z at each check: stationarity of
 *    the Lagrangian holds exactly, the sum of the holder rows carrying
 *    the entropy's constant), multipliers have their signs by
 *    construction, and the loop stops on the rest of the optimality
 *    conditions: for every row, its distance to the bound its multiplier
 *    says is active (z > 0: lo, z < 0: hi, z = 0: outside [lo, hi] at
 *    all), over the row's largest |coefficient|, at most PSEUDO_TOL
 *    records.
 * Outputs: P*(s|q) over all pseudonyms of q; each named person's P(s)
 * and bucket probabilities; each rule's P(s|Qv) and each statement's
 * sum coef_t P_t at the solution.
 *
 * Everything is static so that a single test includes it.
 */
#ifndef PMAXENT_TEST_PSEUDONYMS_H
#define PMAXENT_TEST_PSEUDONYMS_H

#include <glpk.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "constraints.h"

#define PSEUDO_FN	  static __attribute__((unused))
#define PSEUDO_TOL	  1e-11 /* records */
#define PSEUDO_MAX_SWEEPS 300000L

enum pseudo_mode {
	PSEUDO_RECORDS = 0,    /* one holder per record: the pseudonym model */
	PSEUDO_AGGREGATED = 1, /* named people alone, each tuple's rest together */
};

enum pseudo_status {
	PSEUDO_OK = 0,
	PSEUDO_INFEASIBLE = 1,	  /* no distribution satisfies the knowledge */
	PSEUDO_NOT_CONVERGED = 2, /* the projections hit the sweep cap */
	PSEUDO_FAILED = 3,	  /* bad input (a person not in the table), no memory, LP error */
};

struct pseudo {
	size_t n_q, n_s, n_b, n_people, n_rules, n_statements;
	uint32_t *nq, *qb, *sb; /* n(q); n(q,b) at [q n_b + b]; n(s,b) at [s n_b + b] */
	/* holders: tuple, bucket (-1: any), multiplicity (records) */
	size_t n_h;
	uint32_t *h_tuple;
	long *h_group;
	double *h_mult;
	long *person_h; /* each named person's holder */
	/* cells x[h, s, b] */
	size_t n_cells;
	uint32_t *c_h, *c_s, *c_b;
	/* rows, CSR with coefficients */
	size_t n_rows, nnz, rule_row0, st_row0;
	size_t *row_off;
	uint32_t *row_cell;
	double *row_coef, *lo, *hi, *norm, *scale; /* scale: row units per unit of P */
	/* solution */
	uint8_t *forced;
	size_t n_forced;
	double *z, *x;
	long sweeps;
	double kkt; /* the optimality residual at the end, records */
	/* outputs */
	double *post;	     /* P*(s|q) at [q n_s + s] */
	double *person_p;    /* P(person i has s) at [i n_s + s] */
	double *person_b;    /* P(person i is in b) at [i n_b + b] */
	double *rule_p;	     /* each rule's P(s|Qv) */
	double *st_achieved; /* each statement's sum coef_t P_t */
	char message[256];
};

PSEUDO_FN void pseudo_free(struct pseudo *p)
{
	free(p->nq);
	free(p->qb);
	free(p->sb);
	free(p->h_tuple);
	free(p->h_group);
	free(p->h_mult);
	free(p->person_h);
	free(p->c_h);
	free(p->c_s);
	free(p->c_b);
	free(p->row_off);
	free(p->row_cell);
	free(p->row_coef);
	free(p->lo);
	free(p->hi);
	free(p->norm);
	free(p->scale);
	free(p->forced);
	free(p->z);
	free(p->x);
	free(p->post);
	free(p->person_p);
	free(p->person_b);
	free(p->rule_p);
	free(p->st_achieved);
	memset(p, 0, sizeof(*p));
}

static enum pseudo_status pseudo_fail(struct pseudo *p, enum pseudo_status st, const char *msg)
{
	snprintf(p->message, sizeof(p->message), "%s", msg);
	return st;
}

/* Does tuple q satisfy the conjunction of r (n_terms 0: every tuple)? */
static int pseudo_match(const struct dataset *ds, const struct rule *r, uint32_t q)
{
	for (uint32_t t = 0; t < r->n_terms; t++)
		if (ds->tuples[(size_t)q * ds->n_attrs + r->attr[t]] != r->value[t])
			return 0;
	return 1;
}

/* n(Qv) from the records. */
static uint64_t pseudo_count(const struct dataset *ds, const struct rule *r)
{
	uint64_t n = 0;
	for (size_t j = 0; j < ds->n_records; j++)
		n += (uint64_t)pseudo_match(ds, r, ds->rec_tuple[j]);
	return n;
}

static enum pseudo_status pseudo_counts(const struct dataset *ds, struct pseudo *p)
{
	p->n_q = ds->n_tuples;
	p->n_s = ds->sa_values.n;
	p->n_b = ds->n_groups;
	p->nq = calloc(p->n_q + 1, sizeof(*p->nq));
	p->qb = calloc(p->n_q * p->n_b + 1, sizeof(*p->qb));
	p->sb = calloc(p->n_s * p->n_b + 1, sizeof(*p->sb));
	if (!p->nq || !p->qb || !p->sb)
		return pseudo_fail(p, PSEUDO_FAILED, "no memory");
	if (!ds->has_ground_truth)
		return pseudo_fail(p, PSEUDO_FAILED, "needs the records form");
	for (size_t j = 0; j < ds->n_records; j++) {
		uint32_t q = ds->rec_tuple[j], b = ds->rec_group[j], s = ds->rec_sa[j];
		if (q >= p->n_q || b >= p->n_b || s >= p->n_s)
			return pseudo_fail(p, PSEUDO_FAILED, "a record out of range");
		p->nq[q]++;
		p->qb[(size_t)q * p->n_b + b]++;
		p->sb[(size_t)s * p->n_b + b]++;
	}
	return PSEUDO_OK;
}

/* The holders of the mode; each named person gets one of mult 1. */
static enum pseudo_status pseudo_holders(const struct dataset *ds, const struct knowledge *k,
					 enum pseudo_mode mode, struct pseudo *p)
{
	size_t cap = ds->n_records + p->n_people + p->n_q + 1;
	uint8_t *taken = calloc(ds->n_records + 1, 1);
	uint32_t *named = calloc(p->n_q + 1, sizeof(*named));
	enum pseudo_status st = PSEUDO_FAILED;
	p->h_tuple = calloc(cap, sizeof(*p->h_tuple));
	p->h_group = calloc(cap, sizeof(*p->h_group));
	p->h_mult = calloc(cap, sizeof(*p->h_mult));
	p->person_h = calloc(p->n_people + 1, sizeof(*p->person_h));
	if (!taken || !named || !p->h_tuple || !p->h_group || !p->h_mult || !p->person_h) {
		st = pseudo_fail(p, PSEUDO_FAILED, "no memory");
		goto out;
	}
	if (mode == PSEUDO_RECORDS)
		for (size_t j = 0; j < ds->n_records; j++) {
			p->h_tuple[p->n_h] = ds->rec_tuple[j];
			p->h_group[p->n_h] = -1;
			p->h_mult[p->n_h++] = 1.0;
		}
	for (size_t i = 0; i < p->n_people; i++) {
		const struct individual *in = &k->people[i];
		long h = -1;
		if (in->tuple >= p->n_q ||
		    (in->group >= 0 && ((size_t)in->group >= p->n_b ||
					!p->qb[(size_t)in->tuple * p->n_b + (size_t)in->group]))) {
			st = pseudo_fail(p, PSEUDO_FAILED, "a person not in the table");
			goto out;
		}
		if (mode == PSEUDO_RECORDS) { /* the first free pseudonym of the tuple */
			for (size_t j = 0; j < ds->n_records && h < 0; j++)
				if (!taken[j] && ds->rec_tuple[j] == in->tuple)
					h = (long)j;
		} else if (named[in->tuple] < p->nq[in->tuple]) {
			h = (long)p->n_h++;
			p->h_tuple[h] = in->tuple;
			p->h_mult[h] = 1.0;
		}
		if (h < 0) {
			st = pseudo_fail(p, PSEUDO_FAILED, "more people of a tuple than records");
			goto out;
		}
		taken[h] = mode == PSEUDO_RECORDS;
		named[in->tuple]++;
		p->h_group[h] = in->group;
		p->person_h[i] = h;
	}
	if (mode == PSEUDO_AGGREGATED)
		for (size_t q = 0; q < p->n_q; q++)
			if (p->nq[q] > named[q]) {
				p->h_tuple[p->n_h] = (uint32_t)q;
				p->h_group[p->n_h] = -1;
				p->h_mult[p->n_h++] = (double)(p->nq[q] - named[q]);
			}
	st = PSEUDO_OK;
out:
	free(taken);
	free(named);
	return st;
}

/* x[h, s, b] for b holding h's tuple (only h's bucket if known), s of b. */
static enum pseudo_status pseudo_cells(struct pseudo *p)
{
	size_t cap = p->n_h * p->n_s * p->n_b + 1;
	p->c_h = malloc(cap * sizeof(*p->c_h));
	p->c_s = malloc(cap * sizeof(*p->c_s));
	p->c_b = malloc(cap * sizeof(*p->c_b));
	if (!p->c_h || !p->c_s || !p->c_b)
		return pseudo_fail(p, PSEUDO_FAILED, "no memory");
	for (size_t h = 0; h < p->n_h; h++)
		for (size_t b = 0; b < p->n_b; b++) {
			if (!p->qb[(size_t)p->h_tuple[h] * p->n_b + b] ||
			    (p->h_group[h] >= 0 && (size_t)p->h_group[h] != b))
				continue;
			for (size_t s = 0; s < p->n_s; s++)
				if (p->sb[s * p->n_b + b]) {
					p->c_h[p->n_cells] = (uint32_t)h;
					p->c_s[p->n_cells] = (uint32_t)s;
					p->c_b[p->n_cells++] = (uint32_t)b;
				}
		}
	return PSEUDO_OK;
}

static double pseudo_snap(double v)
{
	if (isfinite(v) && fabs(v - nearbyint(v)) <= 1e-9 * fmax(1.0, fabs(v)))
		return nearbyint(v);
	return v;
}

/* Appends the row dense[0 .. n_cells) (its nonzeros), lo to hi, scale;
 * the arrays were sized by pseudo_rows. */
static void pseudo_push(struct pseudo *p, const double *dense, double lo, double hi, double scale)
{
	size_t r = p->n_rows;
	p->norm[r] = 0.0;
	for (size_t c = 0; c < p->n_cells; c++)
		if (dense[c] != 0.0) {
			p->row_cell[p->nnz] = (uint32_t)c;
			p->row_coef[p->nnz++] = dense[c];
			p->norm[r] = fmax(p->norm[r], fabs(dense[c]));
		}
	if (p->norm[r] == 0.0)
		p->norm[r] = 1.0;
	p->lo[r] = pseudo_snap(lo);
	p->hi[r] = lo == hi ? p->lo[r] : pseudo_snap(hi);
	p->scale[r] = scale;
	p->row_off[++p->n_rows] = p->nnz;
}

static uint64_t pseudo_gcd(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

static int pseudo_in_then(const struct statement_term *t, uint32_t s)
{
	for (size_t i = 0; i < t->n_then; i++)
		if (t->then[i] == s)
			return 1;
	return 0;
}

/* One statement's row, times M = lcm of its terms' n(if). */
static enum pseudo_status pseudo_statement_row(const struct dataset *ds, struct pseudo *p,
					       const struct statement *st, double *dense)
{
	uint64_t m = 1, *n = calloc(st->n_terms + 1, sizeof(*n));
	if (!n)
		return pseudo_fail(p, PSEUDO_FAILED, "no memory");
	for (size_t t = 0; t < st->n_terms; t++) {
		const struct statement_term *term = &st->terms[t];
		if (term->person >= (long)p->n_people) {
			free(n);
			return pseudo_fail(p, PSEUDO_FAILED, "a term names no person");
		}
		n[t] = term->person >= 0 ? 1 : pseudo_count(ds, &term->cond);
		if (n[t] == 0) {
			free(n);
			return pseudo_fail(p, PSEUDO_FAILED, "a term's if matches no record");
		}
		m = m / pseudo_gcd(m, n[t]) * n[t];
	}
	memset(dense, 0, p->n_cells * sizeof(*dense));
	for (size_t t = 0; t < st->n_terms; t++) {
		const struct statement_term *term = &st->terms[t];
		double a = term->coef * (double)(m / n[t]);
		for (size_t c = 0; c < p->n_cells; c++) {
			uint32_t h = p->c_h[c];
			int in = term->person >= 0 ? (long)h == p->person_h[term->person]
						   : pseudo_match(ds, &term->cond, p->h_tuple[h]);
			if (in && pseudo_in_then(term, p->c_s[c]))
				dense[c] += a;
		}
	}
	free(n);
	pseudo_push(p, dense, st->lo * (double)m, st->hi * (double)m, (double)m);
	return PSEUDO_OK;
}

static enum pseudo_status pseudo_rows(const struct dataset *ds, const struct knowledge *k,
				      struct pseudo *p)
{
	enum pseudo_status st = PSEUDO_OK;
	size_t rows = p->n_h + (p->n_q + p->n_s) * p->n_b + p->n_rules + p->n_statements;
	double *dense = calloc(p->n_cells + 1, sizeof(*dense));
	p->row_off = calloc(rows + 1, sizeof(*p->row_off));
	p->row_cell = calloc(rows * p->n_cells + 1, sizeof(*p->row_cell));
	p->row_coef = calloc(rows * p->n_cells + 1, sizeof(*p->row_coef));
	p->lo = calloc(rows + 1, sizeof(*p->lo));
	p->hi = calloc(rows + 1, sizeof(*p->hi));
	p->norm = calloc(rows + 1, sizeof(*p->norm));
	p->scale = calloc(rows + 1, sizeof(*p->scale));
	if (!dense || !p->row_off || !p->row_cell || !p->row_coef || !p->lo || !p->hi || !p->norm ||
	    !p->scale) {
		free(dense);
		return pseudo_fail(p, PSEUDO_FAILED, "no memory");
	}
#define PSEUDO_ROW(keep, lo_, hi_, scale_)                                                         \
	do {                                                                                       \
		for (size_t c = 0; c < p->n_cells; c++)                                            \
			dense[c] = (keep) ? 1.0 : 0.0;                                             \
		pseudo_push(p, dense, lo_, hi_, scale_);                                           \
	} while (0)
	for (size_t h = 0; h < p->n_h; h++)
		PSEUDO_ROW(p->c_h[c] == h, p->h_mult[h], p->h_mult[h], 1.0);
	for (size_t q = 0; q < p->n_q; q++)
		for (size_t b = 0; b < p->n_b; b++)
			if (p->qb[q * p->n_b + b])
				PSEUDO_ROW(p->h_tuple[p->c_h[c]] == q && p->c_b[c] == b,
					   p->qb[q * p->n_b + b], p->qb[q * p->n_b + b], 1.0);
	for (size_t s = 0; s < p->n_s; s++)
		for (size_t b = 0; b < p->n_b; b++)
			if (p->sb[s * p->n_b + b])
				PSEUDO_ROW(p->c_s[c] == s && p->c_b[c] == b, p->sb[s * p->n_b + b],
					   p->sb[s * p->n_b + b], 1.0);
	p->rule_row0 = p->n_rows;
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct rule *r = &k->rules[i];
		double n = (double)pseudo_count(ds, r);
		if (r->sa >= p->n_s || n == 0) {
			st = pseudo_fail(p, PSEUDO_FAILED, "a rule with a bad SA or empty if");
			goto out;
		}
		PSEUDO_ROW(p->c_s[c] == r->sa && pseudo_match(ds, r, p->h_tuple[p->c_h[c]]),
			   r->lo * n, r->hi * n, n);
	}
#undef PSEUDO_ROW
	p->st_row0 = p->n_rows;
	for (size_t i = 0; i < p->n_statements; i++)
		if ((st = pseudo_statement_row(ds, p, &k->statements[i], dense)) != PSEUDO_OK)
			goto out;
out:
	free(dense);
	return st;
}

/* ---- forced zeros and feasibility: one exact LP ------------------------- */

static enum pseudo_status pseudo_zeros(struct pseudo *p)
{
	size_t n = p->n_cells, n_lp_rows = 0, nz = 0, cap = 2 * (2 * p->nnz + p->n_rows) + 1;
	int *ia = malloc(cap * sizeof(*ia)), *ja = malloc(cap * sizeof(*ja)), ret, status;
	double *ar = malloc(cap * sizeof(*ar)), count = 0.0;
	enum pseudo_status st = PSEUDO_FAILED;
	glp_prob *lp = glp_create_prob();
	glp_smcp parm;
	if (!ia || !ja || !ar) {
		st = pseudo_fail(p, PSEUDO_FAILED, "no memory");
		goto out;
	}
	glp_term_out(GLP_OFF);
	glp_set_obj_dir(lp, GLP_MAX);
	glp_add_cols(lp, (int)(2 * n + 1));
	for (size_t c = 0; c < n; c++) {
		glp_set_col_bnds(lp, (int)c + 1, GLP_DB, 0.0, 1.0); /* w */
		glp_set_obj_coef(lp, (int)c + 1, 1.0);
		glp_set_col_bnds(lp, (int)(n + c) + 1, GLP_LO, 0.0, 0.0); /* v */
	}
	glp_set_col_bnds(lp, (int)(2 * n) + 1, GLP_LO, 1.0, 0.0); /* t */
	for (size_t r = 0; r < p->n_rows; r++)
		for (int side = 0; side < 2; side++) {
			double bound = side ? p->hi[r] : p->lo[r];
			if (!isfinite(bound) || (side && p->lo[r] == p->hi[r]))
				continue;
			n_lp_rows++;
			glp_add_rows(lp, 1);
			glp_set_row_bnds(lp, (int)n_lp_rows,
					 p->lo[r] == p->hi[r] ? GLP_FX
					 : side		      ? GLP_UP
							      : GLP_LO,
					 0.0, 0.0);
			for (size_t e = p->row_off[r]; e < p->row_off[r + 1]; e++)
				for (size_t part = 0; part < 2; part++) {
					nz++;
					ia[nz] = (int)n_lp_rows;
					ja[nz] = (int)(part * n + p->row_cell[e]) + 1;
					ar[nz] = p->row_coef[e];
				}
			if (bound != 0.0) {
				nz++;
				ia[nz] = (int)n_lp_rows;
				ja[nz] = (int)(2 * n) + 1;
				ar[nz] = -bound;
			}
		}
	glp_load_matrix(lp, (int)nz, ia, ja, ar);
	glp_init_smcp(&parm);
	parm.msg_lev = GLP_MSG_OFF;
	ret = glp_simplex(lp, &parm);
	if (ret == 0 || ret == GLP_ENOPFS)
		ret = glp_exact(lp, &parm);
	status = glp_get_status(lp);
	if (ret == 0 && status == GLP_NOFEAS) {
		st = pseudo_fail(p, PSEUDO_INFEASIBLE, "no distribution satisfies the knowledge");
		goto out;
	}
	if (ret != 0 || status != GLP_OPT) {
		snprintf(p->message, sizeof(p->message), "glp_exact: ret %d status %d", ret,
			 status);
		goto out;
	}
	p->n_forced = 0;
	for (size_t c = 0; c < n; c++) {
		double w = glp_get_col_prim(lp, (int)c + 1);
		if (w != 0.0 && w != 1.0) {
			st = pseudo_fail(p, PSEUDO_FAILED, "the LP's w is not 0 or 1");
			goto out;
		}
		p->forced[c] = w == 0.0;
		p->n_forced += p->forced[c];
		count += w;
	}
	if (glp_get_obj_val(lp) != count) {
		st = pseudo_fail(p, PSEUDO_FAILED, "the LP's objective is not its count");
		goto out;
	}
	st = PSEUDO_OK;
out:
	glp_delete_prob(lp);
	free(ia);
	free(ja);
	free(ar);
	return st;
}

/* ---- the maximum: cyclic Bregman projections ---------------------------- */

/* a_r . x(d) and its derivative, x_j(d) = x_j e^(d a_j). */
static double pseudo_f(const struct pseudo *p, size_t r, double d, double *df)
{
	double f = 0.0, g = 0.0;
	for (size_t e = p->row_off[r]; e < p->row_off[r + 1]; e++) {
		double a = p->row_coef[e], v = p->x[p->row_cell[e]];
		if (v > 0.0) {
			v *= exp(d * a);
			f += a * v;
			g += a * a * v;
		}
	}
	if (df)
		*df = g;
	return f;
}

/* The d with a_r . x(d) = t (increasing in d), from d0; 0 on success. */
static int pseudo_solve_1d(const struct pseudo *p, size_t r, double t, double d0, double *out)
{
	double step = 1.0 / p->norm[r], lo, hi, d, df, f = pseudo_f(p, r, d0, NULL);
	double a0 = 0.0, sum = 0.0;
	int uniform = 1;
	/* every free coefficient equal: closed form */
	for (size_t e = p->row_off[r]; e < p->row_off[r + 1]; e++)
		if (p->x[p->row_cell[e]] > 0.0) {
			if (a0 == 0.0)
				a0 = p->row_coef[e];
			uniform &= p->row_coef[e] == a0;
			sum += p->x[p->row_cell[e]];
		}
	if (a0 == 0.0)
		return -1;
	if (uniform) {
		if (!(t / a0 > 0.0))
			return -1;
		*out = log(t / (a0 * sum)) / a0;
		return 0;
	}
	if (f == t) {
		*out = d0;
		return 0;
	}
	/* bracket [lo, hi] with f(lo) <= t <= f(hi) */
	if (f < t) {
		lo = d0;
		for (hi = d0 + step; pseudo_f(p, r, hi, NULL) < t; hi = lo + step) {
			lo = hi;
			if ((step *= 2) > 1e4 / p->norm[r])
				return -1;
		}
	} else {
		hi = d0;
		for (lo = d0 - step; pseudo_f(p, r, lo, NULL) > t; lo = hi - step) {
			hi = lo;
			if ((step *= 2) > 1e4 / p->norm[r])
				return -1;
		}
	}
	d = 0.5 * (lo + hi);
	for (int it = 0; it < 200; it++) {
		double nd;
		f = pseudo_f(p, r, d, &df) - t;
		if (f == 0.0)
			break;
		if (f < 0.0)
			lo = d;
		else
			hi = d;
		nd = d - f / df;
		if (!(nd > lo && nd < hi))
			nd = 0.5 * (lo + hi);
		if (nd == d || hi - lo <= 4e-16 * fmax(1.0, fabs(d)))
			break;
		d = nd;
	}
	*out = d;
	return 0;
}

/* Projects onto row r: its dual variable moves by d, its cells by e^(d a). */
static int pseudo_project(struct pseudo *p, size_t r)
{
	double lo = p->lo[r], hi = p->hi[r], d, f;
	int any = 0;
	for (size_t e = p->row_off[r]; e < p->row_off[r + 1] && !any; e++)
		any = p->x[p->row_cell[e]] > 0.0;
	if (!any)
		return 0; /* every cell forced to 0: the LP checked 0 is within bounds */
	if (lo == hi) {
		if (pseudo_solve_1d(p, r, lo, 0.0, &d))
			return -1;
	} else {
		d = -p->z[r];
		f = pseudo_f(p, r, d, NULL);
		if (f < lo) {
			if (pseudo_solve_1d(p, r, lo, d, &d))
				return -1;
		} else if (f > hi) {
			if (pseudo_solve_1d(p, r, hi, d, &d))
				return -1;
		}
	}
	p->z[r] = d == -p->z[r] ? 0.0 : p->z[r] + d;
	for (size_t e = p->row_off[r]; e < p->row_off[r + 1]; e++)
		p->x[p->row_cell[e]] *= exp(d * p->row_coef[e]);
	return 0;
}

static double pseudo_row_sum(const struct pseudo *p, size_t r)
{
	double s = 0.0;
	for (size_t e = p->row_off[r]; e < p->row_off[r + 1]; e++)
		s += p->row_coef[e] * p->x[p->row_cell[e]];
	return s;
}

/* x = exp(A^T z) on the free cells; then the optimality residual. */
static double pseudo_kkt(struct pseudo *p, double *logx)
{
	double worst = 0.0;
	memset(logx, 0, p->n_cells * sizeof(*logx));
	for (size_t r = 0; r < p->n_rows; r++)
		for (size_t e = p->row_off[r]; e < p->row_off[r + 1]; e++)
			logx[p->row_cell[e]] += p->z[r] * p->row_coef[e];
	for (size_t c = 0; c < p->n_cells; c++)
		p->x[c] = p->forced[c] ? 0.0 : exp(logx[c]);
	for (size_t r = 0; r < p->n_rows; r++) {
		double s = pseudo_row_sum(p, r), lo = p->lo[r], hi = p->hi[r], v;
		if (lo == hi)
			v = fabs(s - lo);
		else if (p->z[r] > 0.0)
			v = fabs(s - lo);
		else if (p->z[r] < 0.0)
			v = fabs(s - hi);
		else
			v = fmax(0.0, fmax(lo - s, s - hi));
		/* the multipliers' signs: never off by construction, but checked */
		if ((p->z[r] > 0.0 && !isfinite(lo)) || (p->z[r] < 0.0 && !isfinite(hi)))
			v = INFINITY;
		worst = fmax(worst, v / p->norm[r]);
	}
	return worst;
}

static enum pseudo_status pseudo_iterate(struct pseudo *p)
{
	double *logx = calloc(p->n_cells + 1, sizeof(*logx));
	if (!logx)
		return pseudo_fail(p, PSEUDO_FAILED, "no memory");
	for (p->sweeps = 0;; p->sweeps++) {
		p->kkt = pseudo_kkt(p, logx);
		if (p->kkt <= PSEUDO_TOL || p->sweeps == PSEUDO_MAX_SWEEPS)
			break;
		for (size_t r = 0; r < p->n_rows; r++)
			if (pseudo_project(p, r)) {
				free(logx);
				snprintf(p->message, sizeof(p->message),
					 "row %zu: no step reaches its bound", r);
				return PSEUDO_FAILED;
			}
	}
	free(logx);
	if (p->kkt > PSEUDO_TOL) {
		snprintf(p->message, sizeof(p->message), "residual %.3g after %ld sweeps", p->kkt,
			 p->sweeps);
		return PSEUDO_NOT_CONVERGED;
	}
	return PSEUDO_OK;
}

static enum pseudo_status pseudo_outputs(struct pseudo *p)
{
	p->post = calloc(p->n_q * p->n_s + 1, sizeof(*p->post));
	p->person_p = calloc(p->n_people * p->n_s + 1, sizeof(*p->person_p));
	p->person_b = calloc(p->n_people * p->n_b + 1, sizeof(*p->person_b));
	p->rule_p = calloc(p->n_rules + 1, sizeof(*p->rule_p));
	p->st_achieved = calloc(p->n_statements + 1, sizeof(*p->st_achieved));
	if (!p->post || !p->person_p || !p->person_b || !p->rule_p || !p->st_achieved)
		return pseudo_fail(p, PSEUDO_FAILED, "no memory");
	for (size_t c = 0; c < p->n_cells; c++) {
		uint32_t q = p->h_tuple[p->c_h[c]];
		p->post[(size_t)q * p->n_s + p->c_s[c]] += p->x[c] / p->nq[q];
	}
	for (size_t i = 0; i < p->n_people; i++)
		for (size_t c = 0; c < p->n_cells; c++)
			if ((long)p->c_h[c] == p->person_h[i]) {
				p->person_p[i * p->n_s + p->c_s[c]] += p->x[c];
				p->person_b[i * p->n_b + p->c_b[c]] += p->x[c];
			}
	for (size_t i = 0; i < p->n_rules; i++)
		p->rule_p[i] = pseudo_row_sum(p, p->rule_row0 + i) / p->scale[p->rule_row0 + i];
	for (size_t i = 0; i < p->n_statements; i++)
		p->st_achieved[i] = pseudo_row_sum(p, p->st_row0 + i) / p->scale[p->st_row0 + i];
	return PSEUDO_OK;
}

/*
 * The whole method for ds (records form) and k (may be NULL: no
 * knowledge): rules, statements and people of k. Free p with pseudo_free,
 * also after a failure (p->message says why).
 */
PSEUDO_FN enum pseudo_status pseudo_solve(const struct dataset *ds, const struct knowledge *k,
					  enum pseudo_mode mode, struct pseudo *p)
{
	enum pseudo_status st;
	memset(p, 0, sizeof(*p));
	p->n_rules = k ? k->n : 0;
	p->n_statements = k ? k->n_statements : 0;
	p->n_people = k ? k->n_people : 0;
	if ((st = pseudo_counts(ds, p)) || (st = pseudo_holders(ds, k, mode, p)) ||
	    (st = pseudo_cells(p)) || (st = pseudo_rows(ds, k, p)))
		return st;
	p->forced = calloc(p->n_cells + 1, 1);
	p->z = calloc(p->n_rows + 1, sizeof(*p->z));
	p->x = calloc(p->n_cells + 1, sizeof(*p->x));
	if (!p->forced || !p->z || !p->x)
		return pseudo_fail(p, PSEUDO_FAILED, "no memory");
	if ((st = pseudo_zeros(p)) || (st = pseudo_iterate(p)))
		return st;
	return pseudo_outputs(p);
}

#endif
