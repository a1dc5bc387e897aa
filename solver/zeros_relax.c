/*
 * Forced zeros that no single row shows but a combination of the rows of
 * one sensitive value does. With mined rules they come from sums and
 * differences of rows: the rows of P(s | A=a, C=c) over every a, minus
 * those of P(s | B=b, C=c) over every b but one, b', leave the count of s
 * among the records with C=c and B=b', and that count fills every bucket
 * that holds one (the upper bound of zeros_propagate.c's row argument,
 * for a derived row).
 *
 * The relaxation for value s keeps the cells x[q,b] of value s in the
 * buckets that s's open rows touch, with l <= x <= u from q's row of the
 * bucket, sum over q of x[q,b] = n(s,b), and s's open rows; it forgets the
 * rest of each bucket. Every solution of the whole system restricts to a
 * solution of it, so whatever it forces is forced:
 *  - x[q,b] held at 0: cell (q,s,b) is zero;
 *  - x[q,b] held at u = n(q,b): q has no other value in b.
 *
 * Tuples of a bucket with the same rows (their "class") only ever appear
 * summed, and so do buckets with the same demand and classes (m copies of
 * a polytope sum to m times it): both are merged, exactly, first. The
 * interior point method of zeros_ipm.c (relax_ipm: the program recast as
 * its blocks) suggests the variables held at a bound and, from its duals,
 * proves how far any solution can be from them: when that proves every
 * claim (to ZERO_RECORDS), they are used; otherwise a linear program (GLPK)
 * maximises the distance from those bounds: only claims it holds at 0 count.
 */
#include <glpk.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solve.h"
#include "zeros.h"
#include "zeros_relax.h"

static enum pm_status relax_init(struct relax *x)
{
	const struct invariants *inv = x->inv;
	size_t nb = inv->n_groups;

	x->h = inv->bucket_h;
	x->cls = malloc((inv->n_cells + 1) * sizeof *x->cls);
	x->cnt = calloc(inv->n_cells + 1, sizeof *x->cnt);
	x->btype = malloc((nb + 1) * sizeof *x->btype);
	if (!x->cls || !x->cnt || !x->btype)
		return PM_ERR_NOMEM;
	for (size_t c = 0; c < inv->n_cells; c++)
		x->cls[c] = -1;
	for (size_t b = 0; b < nb; b++)
		x->btype[b] = -1;
	return PM_OK;
}

static void relax_finish(struct relax *x)
{
	free(x->cls);
	free(x->cnt);
	free(x->btype);
}

/* One entry of a bucket: the tuples of one class, their bounds summed. */
struct entry {
	uint32_t cls;
	double lo, up;
};

static int cmp_entry(const void *a, const void *b)
{
	uint32_t x = ((const struct entry *)a)->cls, y = ((const struct entry *)b)->cls;

	return x < y ? -1 : x > y;
}

/* Bounds of x[q,b] for tuple row i of bucket b, value column js. */
static void cell_bounds(const struct relax *x, size_t b, size_t i, size_t js, double *lo,
			double *up)
{
	size_t off = x->inv->cell_off[b], h = x->h[b];
	double nq = invariants_qi_count(x->inv, b, i), others = 0;

	for (size_t j = 0; j < h; j++)
		if (j != js && !x->zero[off + i * h + j])
			others += invariants_sa_count(x->inv, b, j);
	*up = fmin(nq, invariants_sa_count(x->inv, b, js));
	*lo = fmax(0, nq - others);
}

/* Signatures (the value's rows holding a cell) and class ids. */
static enum pm_status value_classes(struct value *v)
{
	const struct invariants *inv = v->x->inv;
	struct relax *x = v->x;
	size_t total = 0;

	for (size_t k = 0; k < v->nr; k++)
		for (size_t e = inv->row_off[v->rows[k]]; e < inv->row_off[v->rows[k] + 1]; e++) {
			size_t c = inv->row_cell[e];

			if (x->zero[c])
				continue;
			if (x->cnt[c]++ == 0) {
				if (intern_reserve((void **)&v->tcells, &total, v->nt + 1, 4))
					return PM_ERR_NOMEM;
				x->cls[c] = (int32_t)v->nt;
				v->tcells[v->nt++] = (uint32_t)c;
			}
		}
	v->toff = malloc((v->nt + 1) * sizeof *v->toff);
	if (!v->toff)
		return PM_ERR_NOMEM;
	v->toff[0] = 0;
	for (size_t t = 0; t < v->nt; t++)
		v->toff[t + 1] = v->toff[t] + x->cnt[v->tcells[t]];
	v->tlist = malloc((v->toff[v->nt] + 1) * sizeof *v->tlist);
	if (!v->tlist)
		return PM_ERR_NOMEM;
	for (size_t t = 0; t < v->nt; t++)
		x->cnt[v->tcells[t]] = 0; /* reused as the fill count */
	for (size_t k = 0; k < v->nr; k++)
		for (size_t e = inv->row_off[v->rows[k]]; e < inv->row_off[v->rows[k] + 1]; e++) {
			size_t c = inv->row_cell[e], t;

			if (x->zero[c])
				continue;
			t = (size_t)x->cls[c];
			v->tlist[v->toff[t] + x->cnt[c]++] = (uint32_t)k;
		}
	v->empty = intern_get(&v->classes, NULL, 0);
	for (size_t t = 0; t < v->nt; t++) {
		int32_t id =
		    intern_get(&v->classes, v->tlist + v->toff[t], v->toff[t + 1] - v->toff[t]);

		if (id < 0 || v->empty < 0)
			return PM_ERR_NOMEM;
		x->cls[v->tcells[t]] = id;
	}
	return PM_OK;
}

/* Touched buckets, their merged entries and their types. */
static enum pm_status value_buckets(struct value *v)
{
	const struct invariants *inv = v->x->inv;
	struct relax *x = v->x;
	size_t cap = 0, bcap = 0, key_cap = 0;
	struct entry *ent = NULL;
	uint32_t *key = NULL;
	enum pm_status st = PM_ERR_NOMEM;

	for (size_t t = 0; t < v->nt; t++) {
		size_t c = v->tcells[t], b = inv->cell_group[c];

		if (x->btype[b] != -1)
			continue;
		x->btype[b] = -2;
		if (intern_reserve((void **)&v->buckets, &cap, v->n_buckets + 1, 4) ||
		    intern_reserve((void **)&v->bcol, &bcap, v->n_buckets + 1, 4))
			goto out;
		v->bcol[v->n_buckets] = (uint32_t)((c - inv->cell_off[b]) % x->h[b]);
		v->buckets[v->n_buckets++] = (uint32_t)b;
	}
	for (size_t k = 0; k < v->n_buckets; k++) {
		size_t b = v->buckets[k], js = v->bcol[k], g = invariants_bucket_g(x->inv, b),
		       n = 0, kn = 1;
		size_t off = inv->cell_off[b];
		int32_t id;

		if (!(ent = realloc(ent, (g + 1) * sizeof *ent)) ||
		    intern_reserve((void **)&key, &key_cap, 3 * g + 2, 4))
			goto out;
		for (size_t i = 0; i < g; i++) {
			size_t c = off + i * x->h[b] + js;
			double lo, up;

			if (x->zero[c])
				continue;
			if (x->cls[c] < 0)
				x->cls[c] = v->empty;
			cell_bounds(x, b, i, js, &lo, &up);
			ent[n++] = (struct entry){(uint32_t)x->cls[c], lo, up};
		}
		qsort(ent, n, sizeof *ent, cmp_entry);
		/* counts are whole records: the key is exact */
		key[0] = (uint32_t)invariants_sa_count(x->inv, b, js);
		for (size_t i = 0; i < n; i++) {
			if (kn > 1 && key[kn - 3] == ent[i].cls) {
				key[kn - 2] += (uint32_t)ent[i].lo;
				key[kn - 1] += (uint32_t)ent[i].up;
				continue;
			}
			key[kn++] = ent[i].cls;
			key[kn++] = (uint32_t)ent[i].lo;
			key[kn++] = (uint32_t)ent[i].up;
		}
		if ((id = intern_get(&v->types, key, kn)) < 0)
			goto out;
		x->btype[b] = id;
	}
	v->mult = calloc(v->types.n + 1, sizeof *v->mult);
	if (!v->mult)
		goto out;
	for (size_t k = 0; k < v->n_buckets; k++)
		v->mult[x->btype[v->buckets[k]]]++;
	st = PM_OK;
out:
	free(ent);
	free(key);
	return st;
}

/* Key of type t: demand, then (class, lo, up) triples. */
static const uint32_t *type_key(const struct value *v, size_t t, size_t *n)
{
	*n = v->types.off[t + 1] - v->types.off[t];
	return v->types.pool + v->types.off[t];
}

static int near(double a, double b)
{
	return fabs(a - b) <= 1e-7 * fmax(1, fmax(fabs(a), fabs(b)));
}

/* The variables (entries with room between their bounds), groups and
 * right-hand sides; fixed parts move to the right. */
static enum pm_status value_program(struct value *v)
{
	size_t nty = v->types.n, nv = 0, nrow = 0, ng = 0;

	for (size_t t = 0; t < nty; t++) {
		size_t n;
		const uint32_t *k = type_key(v, t, &n);

		for (size_t i = 1; i < n; i += 3) {
			nv += k[i + 2] > k[i + 1];
			nrow += k[i + 2] > k[i + 1]
				    ? v->classes.off[k[i] + 1] - v->classes.off[k[i]]
				    : 0;
		}
	}
	v->u = malloc((nv + 1) * sizeof *v->u);
	v->group = malloc((nv + 1) * sizeof *v->group);
	v->var_class = malloc((nv + 1) * sizeof *v->var_class);
	v->var_off = malloc((nv + 2) * sizeof *v->var_off);
	v->var_row = malloc((nrow + 1) * sizeof *v->var_row);
	v->type_var = malloc((nty + 2) * sizeof *v->type_var);
	v->d = calloc(nty + 1, sizeof *v->d);
	v->c = malloc((v->nr + 1) * sizeof *v->c);
	v->low = calloc(nv + 1, 1);
	v->high = calloc(nv + 1, 1);
	if (!v->u || !v->group || !v->var_class || !v->var_off || !v->var_row || !v->type_var ||
	    !v->d || !v->c || !v->low || !v->high)
		return PM_ERR_NOMEM;
	for (size_t k = 0; k < v->nr; k++)
		v->c[k] = v->x->inv->rhs[v->rows[k]];
	nv = nrow = 0;
	v->var_off[0] = 0;
	for (size_t t = 0; t < nty; t++) {
		size_t n, g0 = nv;
		const uint32_t *k = type_key(v, t, &n);
		double m = v->mult[t], rest = m * k[0];

		v->type_var[t] = nv;
		for (size_t i = 1; i < n; i += 3) {
			const uint32_t *rl = v->classes.pool + v->classes.off[k[i]];
			size_t nl = v->classes.off[k[i] + 1] - v->classes.off[k[i]];

			rest -= m * k[i + 1];
			for (size_t e = 0; e < nl; e++)
				v->c[rl[e]] -= m * k[i + 1];
			if (k[i + 2] <= k[i + 1])
				continue;
			v->u[nv] = m * (k[i + 2] - k[i + 1]);
			v->group[nv] = (uint32_t)ng;
			v->var_class[nv] = k[i];
			memcpy(v->var_row + nrow, rl, nl * sizeof *rl);
			nrow += nl;
			v->var_off[++nv] = nrow;
		}
		if (nv > g0)
			v->d[ng++] = rest;
		else if (!near(rest, 0))
			v->x->infeasible = 1; /* a bucket whose bounds miss n(s,b) */
	}
	v->type_var[nty] = nv;
	v->p = (struct relax_problem){.n = nv,
				      .n_groups = ng,
				      .n_rows = v->nr,
				      .u = v->u,
				      .group = v->group,
				      .d = v->d,
				      .var_off = v->var_off,
				      .var_row = v->var_row,
				      .c = v->c,
				      .cancel = v->x->cancel};
	return PM_OK;
}

/* Drops duplicate rows (same variables; their right-hand sides must
 * agree) and rows without variables (theirs must be 0). */
static enum pm_status value_dedupe(struct value *v)
{
	size_t nr = v->nr, nv = v->p.n, kept = 0, ne = 0;
	size_t *roff = calloc(nr + 2, sizeof *roff);
	uint32_t *rvar = malloc((v->var_off[nv] + 1) * sizeof *rvar);
	int32_t *map = malloc((nr + 1) * sizeof *map), *first = malloc((nr + 1) * sizeof *first);
	struct intern seen = {0};
	enum pm_status st = PM_ERR_NOMEM;

	if (!roff || !rvar || !map || !first)
		goto out;
	for (size_t e = 0; e < v->var_off[nv]; e++)
		roff[v->var_row[e] + 2]++;
	for (size_t r = 0; r < nr; r++)
		roff[r + 2] += roff[r + 1];
	for (size_t j = 0; j < nv; j++)
		for (size_t e = v->var_off[j]; e < v->var_off[j + 1]; e++)
			rvar[roff[v->var_row[e] + 1]++] = (uint32_t)j;
	for (size_t r = 0; r < nr; r++) {
		size_t len = roff[r + 1] - roff[r], before = seen.n;
		int32_t id;

		map[r] = -1;
		if (!len) {
			v->x->infeasible |= !near(v->c[r], 0);
			continue;
		}
		if ((id = intern_get(&seen, rvar + roff[r], len)) < 0)
			goto out;
		if (seen.n > before) {
			first[id] = (int32_t)kept;
			v->c[kept] = v->c[r]; /* kept <= r: in place */
			map[r] = (int32_t)kept++;
		} else if (!near(v->c[r], v->c[first[id]])) {
			v->x->infeasible = 1;
		}
	}
	for (size_t j = 0, e0 = 0; j < nv; j++) {
		for (size_t e = e0; e < v->var_off[j + 1]; e++)
			if (map[v->var_row[e]] >= 0)
				v->var_row[ne++] = (uint32_t)map[v->var_row[e]];
		e0 = v->var_off[j + 1];
		v->var_off[j + 1] = ne;
	}
	v->p.n_rows = kept;
	st = PM_OK;
out:
	intern_free(&seen);
	free(roff);
	free(rvar);
	free(map);
	free(first);
	return st;
}

/* Writes the proven zeros: a class held at its lower bound zeroes the
 * cells whose own lower bound is 0; held at its upper bound, the tuples
 * whose bound is their whole count have no other value in the bucket. */
static enum pm_status value_apply(struct value *v)
{
	struct relax *x = v->x;
	const struct invariants *inv = x->inv;
	size_t n = 0, cap = 0;
	uint32_t *out = NULL;

	for (size_t k = 0; k < v->n_buckets; k++) {
		size_t b = v->buckets[k], js = v->bcol[k], h = x->h[b], t = (size_t)x->btype[b];
		size_t off = inv->cell_off[b];

		for (size_t i = 0; i < invariants_bucket_g(x->inv, b); i++) {
			size_t c = off + i * h + js, j;
			double lo, up;

			if (x->zero[c])
				continue;
			for (j = v->type_var[t]; j < v->type_var[t + 1]; j++)
				if (v->var_class[j] == (uint32_t)x->cls[c])
					break;
			if (j == v->type_var[t + 1] || !(v->low[j] || v->high[j]))
				continue;
			cell_bounds(x, b, i, js, &lo, &up);
			if (intern_reserve((void **)&out, &cap, n + h + 1, 4))
				return PM_ERR_NOMEM;
			if (v->low[j] && lo == 0)
				out[n++] = (uint32_t)c;
			for (size_t jj = 0;
			     v->high[j] && up == invariants_qi_count(x->inv, b, i) && jj < h; jj++)
				if (jj != js && !x->zero[off + i * h + jj])
					out[n++] = (uint32_t)(off + i * h + jj);
		}
	}
	for (size_t i = 0; i < n; i++)
		if (!x->zero[out[i]]) {
			x->zero[out[i]] = 1;
			x->found++;
		}
	free(out);
	return PM_OK;
}

static void value_free(struct value *v)
{
	struct relax *x = v->x;
	const struct invariants *inv = x->inv;

	for (size_t t = 0; t < v->nt; t++) {
		x->cnt[v->tcells[t]] = 0;
		x->cls[v->tcells[t]] = -1;
	}
	for (size_t k = 0; k < v->n_buckets; k++) {
		size_t b = v->buckets[k], h = x->h[b], off = inv->cell_off[b];

		for (size_t i = 0; i < invariants_bucket_g(x->inv, b); i++)
			x->cls[off + i * h + v->bcol[k]] = -1;
		x->btype[b] = -1;
	}
	free(v->tcells), free(v->tlist), free(v->buckets), free(v->bcol), free(v->mult);
	free(v->toff);
	intern_free(&v->classes);
	intern_free(&v->types);
	free(v->u), free(v->d), free(v->c), free(v->group), free(v->var_row);
	free(v->var_class), free(v->var_off), free(v->type_var), free(v->low), free(v->high);
}

static size_t zeros_in(const struct relax *x, const uint32_t *buckets, size_t n)
{
	const struct invariants *inv = x->inv;
	size_t z = 0;

	for (size_t k = 0; k < n; k++)
		for (size_t c = inv->cell_off[buckets[k]]; c < inv->cell_off[buckets[k] + 1]; c++)
			z += x->zero[c];
	return z;
}

/* Did value s's buckets gain no zero since its last relaxation? */
static int memo_unchanged(struct relax_memo *m, const struct relax *x, size_t s)
{
	const struct relax_seen *e = m && s < m->n_seen ? &m->seen[s] : NULL;

	if (!e || !e->buckets || zeros_in(x, e->buckets, e->n_buckets) != e->zeros)
		return 0;
	m->skipped++;
	return 1;
}

/* Records what value s's relaxation read (v's buckets) and left. */
static enum pm_status memo_store(struct relax_memo *m, const struct value *v, size_t s)
{
	struct relax_seen *e;

	if (!m)
		return PM_OK;
	if (s >= m->n_seen) {
		struct relax_seen *n = realloc(m->seen, (s + 1) * sizeof *n);

		if (!n)
			return PM_ERR_NOMEM;
		memset(n + m->n_seen, 0, (s + 1 - m->n_seen) * sizeof *n);
		m->seen = n;
		m->n_seen = s + 1;
	}
	e = &m->seen[s];
	free(e->buckets);
	if (!(e->buckets = malloc((v->n_buckets + 1) * sizeof *e->buckets)))
		return PM_ERR_NOMEM;
	memcpy(e->buckets, v->buckets, v->n_buckets * sizeof *e->buckets);
	e->n_buckets = v->n_buckets;
	e->zeros = zeros_in(v->x, v->buckets, v->n_buckets);
	return PM_OK;
}

void relax_memo_finish(struct relax_memo *m)
{
	if (!m)
		return;
	for (size_t s = 0; s < m->n_seen; s++)
		free(m->seen[s].buckets);
	free(m->seen);
	memset(m, 0, sizeof *m);
}

/* Do rows[0..nr) hold at most max free cells, a cell counted once per
 * row that holds it? (Stops counting past max.) */
static int row_cells_within(const struct relax *x, const uint32_t *rows, size_t nr, size_t max)
{
	const struct invariants *inv = x->inv;
	size_t n = 0;

	if (max == SIZE_MAX) /* no cap: nothing to count */
		return 1;
	for (size_t k = 0; k < nr && n <= max; k++)
		for (size_t e = inv->row_off[rows[k]]; e < inv->row_off[rows[k] + 1]; e++)
			n += !x->zero[inv->row_cell[e]];
	return n <= max;
}

/*
 * The relaxation by the interior point method of zeros_ipm.c (the one
 * that decides whole components too), its bounded variables recast as
 * blocks (zeros_ipm_bounded). The claims are what the method's last
 * iterate puts on the zero side: a variable's first cell (x_j held at
 * 0: low[j]) or its second (held at u_j: high[j]); *proved when the
 * method's certificate proved every one.
 */
static enum pm_status relax_ipm(struct value *v, int *claims, int *proved)
{
	struct ipm_bounded r;
	size_t found = 0;
	int settled = 0;
	enum pm_status st = zeros_ipm_bounded(&v->p, &r);

	*claims = 0;
	*proved = 1;
	if (!st)
		st = zeros_ipm(&r.p, r.zero, &found, &settled);
	for (size_t j = 0; !st && j < v->p.n; j++) {
		v->low[j] = r.side[2 * j];
		v->high[j] = r.side[2 * j + 1];
		*claims |= v->low[j] | v->high[j];
		*proved &= (!v->low[j] || r.zero[2 * j]) && (!v->high[j] || r.zero[2 * j + 1]);
	}
	zeros_ipm_bounded_finish(&r);
	return st;
}

/* The relaxation of value s, whose open rows are rows[0..nr), unless
 * they hold more than max_cells free cells (counted once per row). */
static enum pm_status relax_value(struct relax *x, struct relax_memo *m, size_t s, size_t max_cells,
				  const uint32_t *rows, size_t nr)
{
	struct value v = {.x = x, .rows = rows, .nr = nr};
	enum pm_status st;
	int claims = 0, proved = 1;

	if (memo_unchanged(m, x, s) || !row_cells_within(x, rows, nr, max_cells))
		return PM_OK;
	if (cancel_poll(x->cancel))
		return PM_ERR_CANCELLED;
	st = value_classes(&v);
	if (!st)
		st = value_buckets(&v);
	if (!st)
		st = value_program(&v);
	if (!st && !x->infeasible)
		st = value_dedupe(&v);
	if (!st && !x->infeasible && v.p.n)
		st = relax_ipm(&v, &claims, &proved);
	/* the interior point method's own certificate, else the simplex */
	if (!st && claims && !proved && !x->infeasible)
		st = zeros_relax_verify(&v);
	if (!st && claims && !x->infeasible)
		st = value_apply(&v);
	if (!st && !x->infeasible)
		st = memo_store(m, &v, s);
	value_free(&v);
	return st;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

enum pm_status zeros_relax(const struct invariants *inv, const uint8_t *resolved, uint8_t *zero,
			   size_t max_cells, struct cancel *cancel, struct relax_memo *memo,
			   size_t *found, int *infeasible)
{
	struct relax x = {.inv = inv, .resolved = resolved, .zero = zero, .cancel = cancel};
	size_t first = inv->n_qi_rows + inv->n_sa_rows, nk = inv->n_rows - first, n = 0;
	uint64_t *key = malloc((nk + 1) * sizeof *key);
	uint32_t *rows = malloc((nk + 1) * sizeof *rows);
	enum pm_status st = key && rows ? PM_OK : PM_ERR_NOMEM;

	/* open rows with a free cell, grouped by their value */
	for (size_t r = first; !st && r < inv->n_rows; r++) {
		uint32_t s = UINT32_MAX;

		for (size_t e = inv->row_off[r]; !resolved[r] && e < inv->row_off[r + 1]; e++)
			if (!zero[inv->row_cell[e]]) {
				s = inv->cell_sa[inv->row_cell[e]];
				break;
			}
		if (s != UINT32_MAX)
			key[n++] = (uint64_t)s << 32 | r;
	}
	/* the per-cell scratch only when there is something to relax */
	if (!st && n)
		st = relax_init(&x);
	if (!st)
		qsort(key, n, sizeof *key, cmp_u64);
	for (size_t i = 0; i < n; i++)
		rows[i] = (uint32_t)key[i];
	for (size_t i = 0, j; !st && i < n && !x.infeasible; i = j) {
		for (j = i; j < n && key[j] >> 32 == key[i] >> 32;)
			j++;
		st = relax_value(&x, memo, key[i] >> 32, max_cells, rows + i, j - i);
	}
	*found = x.found;
	*infeasible = x.infeasible;
	relax_finish(&x);
	free(key);
	free(rows);
	return st;
}
