/*
 * The pseudonym model's two-level problem (struct lsys): which rows are
 * open, which buckets they touch, and the local numbering of their cells.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lifted_internal.h"
#include "scaling.h"
#include "schur.h"

/* Bucket of lifted cell c. */
static size_t cell_bucket(const struct lifted *m, size_t c)
{
	const struct invariants *inv = m->inv;

	return inv->cell_group[c < inv->n_cells ? c : m->agg[c - inv->n_cells]];
}

static int free_entry(const struct lifted *m, const uint8_t *zero, size_t e)
{
	return !zero[m->row_cell[e]] && m->row_coef[e] != 0;
}

/* The open rows: rule, person and statement rows with a free cell. */
static enum pm_status open_rows(struct lsys *s, const uint8_t *zero, const uint8_t *implied,
				double tolerance, size_t *empty)
{
	const struct lifted *m = s->m;
	size_t first = s->inv->n_qi_rows + s->inv->n_sa_rows;

	*empty = SIZE_MAX;
	s->row = malloc((m->n_rows - first + 1) * sizeof *s->row);
	s->mid = malloc((m->n_rows - first + 1) * sizeof *s->mid);
	s->half = malloc((m->n_rows - first + 1) * sizeof *s->half);
	if (!s->row || !s->mid || !s->half)
		return PM_ERR_NOMEM;
	for (size_t r = first; r < m->n_rows; r++) {
		size_t e = m->row_off[r];

		if (r < s->inv->n_rows && implied && implied[r])
			continue;
		while (e < m->row_off[r + 1] && !free_entry(m, zero, e))
			e++;
		if (e == m->row_off[r + 1]) {
			if (*empty == SIZE_MAX && (m->lo[r] > tolerance || m->hi[r] < -tolerance))
				*empty = r;
			continue;
		}
		s->row[s->r] = (uint32_t)r;
		s->mid[s->r] = 0.5 * (m->lo[r] + m->hi[r]);
		s->half[s->r] = 0.5 * (m->hi[r] - m->lo[r]);
		s->any_interval |= s->half[s->r] > 0;
		s->r++;
	}
	return PM_OK;
}

/* Row r's free entries: their number, the first's coefficient. */
static size_t free_entries(const struct lifted *m, const uint8_t *zero, size_t r, double *first)
{
	size_t n = 0;

	*first = 0;
	for (size_t e = m->row_off[r]; e < m->row_off[r + 1]; e++)
		if (free_entry(m, zero, e) && !n++)
			*first = m->row_coef[e];
	return n;
}

/* Do rows r and t have the same free cells with coefficients in the
 * ratio cr : ct? */
static int same_row(const struct lifted *m, const uint8_t *zero, size_t r, double cr, size_t t,
		    double ct)
{
	size_t e = m->row_off[r], f = m->row_off[t];

	for (;; e++, f++) {
		while (e < m->row_off[r + 1] && !free_entry(m, zero, e))
			e++;
		while (f < m->row_off[t + 1] && !free_entry(m, zero, f))
			f++;
		if (e == m->row_off[r + 1] || f == m->row_off[t + 1])
			return e == m->row_off[r + 1] && f == m->row_off[t + 1];
		if (m->row_cell[e] != m->row_cell[f] || m->row_coef[e] / cr != m->row_coef[f] / ct)
			return 0;
	}
}

/* A hash of row r's free cells and coefficients over the first's. */
static uint64_t row_hash(const struct lifted *m, const uint8_t *zero, size_t r, double first)
{
	uint64_t h = 1469598103934665603u;

	for (size_t e = m->row_off[r]; e < m->row_off[r + 1]; e++) {
		double c = m->row_coef[e] / first;
		uint64_t bits;

		if (!free_entry(m, zero, e))
			continue;
		memcpy(&bits, &c, sizeof bits);
		h = (h ^ m->row_cell[e]) * 1099511628211u;
		h = (h ^ bits) * 1099511628211u;
	}
	return h;
}

struct keyed {
	uint64_t hash;
	size_t i;
};

static int cmp_keyed(const void *a, const void *b)
{
	const struct keyed *x = a, *y = b;

	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return (x->i > y->i) - (x->i < y->i);
}

/* Row i's interval, in row j's units (row i = row j times ci / cj),
 * intersected into row j's; *empty when nothing is left. */
static void intersect(struct lsys *s, size_t j, double cj, size_t i, double ci, double tolerance,
		      size_t *empty)
{
	double f = cj / ci, lo = (s->mid[i] - s->half[i]) * f, hi = (s->mid[i] + s->half[i]) * f;
	double a = fmax(s->mid[j] - s->half[j], fmin(lo, hi));
	double b = fmin(s->mid[j] + s->half[j], fmax(lo, hi));

	if (a > b + tolerance && *empty == SIZE_MAX)
		*empty = s->row[i];
	b = fmax(a, b);
	s->mid[j] = 0.5 * (a + b);
	s->half[j] = 0.5 * (b - a);
}

/*
 * Open rows with the same cells and proportional coefficients (rules
 * whose if matches the same tuples, a statement repeating a rule) become
 * one, bounded by the intersection of their bounds: the same primal, and
 * the dual loses a direction along which only the intervals' L1 terms
 * vary (H is singular there, the step runs off). An empty intersection
 * is a conflict: *empty gets a row of it. Rows are compared within runs
 * of equal hashes.
 */
static enum pm_status merge_rows(struct lsys *s, const uint8_t *zero, double tolerance,
				 size_t *empty)
{
	const struct lifted *m = s->m;
	struct keyed *key = malloc((s->r + 1) * sizeof *key);
	double *first = malloc((s->r + 1) * sizeof *first);
	uint8_t *gone = calloc(s->r + 1, 1);
	size_t n = 0;

	if (!key || !first || !gone) {
		free(key);
		free(first);
		free(gone);
		return PM_ERR_NOMEM;
	}
	for (size_t i = 0; i < s->r; i++) {
		free_entries(m, zero, s->row[i], &first[i]);
		key[i] = (struct keyed){row_hash(m, zero, s->row[i], first[i]), i};
	}
	qsort(key, s->r, sizeof *key, cmp_keyed);
	/* within a run of one hash, the first of its kind keeps the row */
	for (size_t a = 0; a < s->r; a++)
		for (size_t b = a + 1; !gone[key[a].i] && b < s->r && key[b].hash == key[a].hash;
		     b++) {
			size_t i = key[b].i, j = key[a].i;

			if (gone[i] || !same_row(m, zero, s->row[i], first[i], s->row[j], first[j]))
				continue;
			intersect(s, j, first[j], i, first[i], tolerance, empty);
			gone[i] = 1;
		}
	for (size_t i = 0; i < s->r; i++) {
		if (gone[i])
			continue;
		s->row[n] = s->row[i];
		s->mid[n] = s->mid[i];
		s->half[n++] = s->half[i];
	}
	s->r = n;
	s->any_interval = 0;
	for (size_t i = 0; i < n; i++)
		s->any_interval |= s->half[i] > 0;
	free(key);
	free(first);
	free(gone);
	return PM_OK;
}

/* The touched buckets, their local cells (system cells, then person
 * cells) and offsets; lmap: lifted cell -> local (UINT32_MAX: none). */
static enum pm_status local_cells(struct lsys *s, const uint8_t *zero, uint32_t *lmap)
{
	const struct lifted *m = s->m;
	const struct invariants *inv = s->inv;
	uint8_t *touched = calloc(inv->n_groups + 1, 1);
	size_t nl = 0, na = 0, nq = 0, ns = 0, nf = 0, k = 0;

	if (!touched)
		return PM_ERR_NOMEM;
	for (size_t i = 0; i < s->r; i++)
		for (size_t e = m->row_off[s->row[i]]; e < m->row_off[s->row[i] + 1]; e++)
			if (free_entry(m, zero, e))
				touched[cell_bucket(m, m->row_cell[e])] = 1;
	for (size_t b = 0; b < inv->n_groups; b++)
		s->nb += touched[b];
	s->bk = calloc(s->nb + 1, sizeof *s->bk);
	s->lcell = malloc((m->n_cells + 1) * sizeof *s->lcell);
	s->lagg = malloc((m->n_cells + 1) * sizeof *s->lagg);
	s->lzero = malloc(m->n_cells + 1);
	if (!s->bk || !s->lcell || !s->lagg || !s->lzero) {
		free(touched);
		return PM_ERR_NOMEM;
	}
	for (size_t b = 0; b < inv->n_groups; b++) {
		struct lbucket *B = &s->bk[k];
		size_t off = inv->cell_off[b];

		if (!touched[b])
			continue;
		*B = (struct lbucket){.b = b,
				      .g = invariants_bucket_g(inv, b),
				      .h = inv->bucket_h[b],
				      .loff = nl,
				      .aoff = na,
				      .qoff = nq,
				      .soff = ns,
				      .foff = nf};
		for (size_t c = off; c < inv->cell_off[b + 1]; c++, nl++) {
			s->lcell[nl] = (uint32_t)c;
			s->lagg[nl] = (uint32_t)(c - off);
		}
		for (size_t p = m->pb_off[b]; p < m->pb_off[b + 1]; p++, nl++) {
			s->lcell[nl] = m->pb_cell[p];
			s->lagg[nl] = (uint32_t)(m->agg[m->pb_cell[p] - inv->n_cells] - off);
		}
		B->n = nl - B->loff;
		na += B->g * B->h;
		nq += B->g;
		ns += B->h;
		nf += schur_size(B->g, B->h);
		k++;
	}
	free(touched);
	for (size_t c = 0; c < m->n_cells; c++)
		lmap[c] = UINT32_MAX;
	for (size_t v = 0; v < nl; v++) {
		lmap[s->lcell[v]] = (uint32_t)v;
		s->lzero[v] = zero[s->lcell[v]];
	}
	s->nl = nl;
	s->na = na;
	s->nq = nq;
	s->ns = ns;
	s->fac = malloc((nf + 1) * sizeof *s->fac);
	return s->fac ? PM_OK : PM_ERR_NOMEM;
}

/* Coefficients both ways: per local cell (cr_*) and per open row (rc_*),
 * free cells only. */
static enum pm_status coefficients(struct lsys *s, const uint32_t *lmap)
{
	const struct lifted *m = s->m;
	size_t n = 0;

	s->cr_off = calloc(s->nl + 2, sizeof *s->cr_off);
	s->rc_off = malloc((s->r + 1) * sizeof *s->rc_off);
	if (!s->cr_off || !s->rc_off)
		return PM_ERR_NOMEM;
	/* free cells of open rows are local; zero ones may not be */
	for (size_t i = 0; i < s->r; i++)
		for (size_t e = m->row_off[s->row[i]]; e < m->row_off[s->row[i] + 1]; e++)
			if (lmap[m->row_cell[e]] != UINT32_MAX && !s->lzero[lmap[m->row_cell[e]]] &&
			    m->row_coef[e] != 0) {
				s->cr_off[lmap[m->row_cell[e]] + 2]++;
				n++;
			}
	for (size_t v = 0; v < s->nl; v++)
		s->cr_off[v + 2] += s->cr_off[v + 1];
	s->cr_row = malloc((n + 1) * sizeof *s->cr_row);
	s->cr_coef = malloc((n + 1) * sizeof *s->cr_coef);
	s->rc_cell = malloc((n + 1) * sizeof *s->rc_cell);
	s->rc_coef = malloc((n + 1) * sizeof *s->rc_coef);
	if (!s->cr_row || !s->cr_coef || !s->rc_cell || !s->rc_coef)
		return PM_ERR_NOMEM;
	n = 0;
	for (size_t i = 0; i < s->r; i++) {
		s->rc_off[i] = n;
		for (size_t e = m->row_off[s->row[i]]; e < m->row_off[s->row[i] + 1]; e++) {
			uint32_t v = lmap[m->row_cell[e]];
			size_t at;

			if (v == UINT32_MAX || s->lzero[v] || m->row_coef[e] == 0)
				continue;
			at = s->cr_off[v + 1]++;
			s->cr_row[at] = (uint32_t)i;
			s->cr_coef[at] = m->row_coef[e];
			s->rc_cell[n] = v;
			s->rc_coef[n++] = m->row_coef[e];
		}
	}
	s->rc_off[s->r] = n;
	return PM_OK;
}

/* Per bucket, the open rows through its cells, each once. */
static enum pm_status bucket_rows(struct lsys *s)
{
	size_t *seen = malloc((s->r + 1) * sizeof *seen), n = 0;

	s->lr_off = malloc((s->nb + 1) * sizeof *s->lr_off);
	s->lr_row = malloc((s->cr_off[s->nl] + 1) * sizeof *s->lr_row);
	if (!seen || !s->lr_off || !s->lr_row) {
		free(seen);
		return PM_ERR_NOMEM;
	}
	for (size_t i = 0; i < s->r; i++)
		seen[i] = SIZE_MAX;
	for (size_t k = 0; k < s->nb; k++) {
		const struct lbucket *B = &s->bk[k];

		s->lr_off[k] = n;
		for (size_t e = s->cr_off[B->loff]; e < s->cr_off[B->loff + B->n]; e++)
			if (seen[s->cr_row[e]] != k) {
				seen[s->cr_row[e]] = k;
				s->lr_row[n++] = s->cr_row[e];
			}
	}
	s->lr_off[s->nb] = n;
	free(seen);
	return PM_OK;
}

/* The iterates' arrays and the scratch of the widest bucket. */
static enum pm_status state_alloc(struct lsys *s)
{
	size_t gm = 1, hm = 1, nm = 1;
	double *all;

	for (size_t k = 0; k < s->nb; k++) {
		gm = s->bk[k].g > gm ? s->bk[k].g : gm;
		hm = s->bk[k].h > hm ? s->bk[k].h : hm;
		nm = s->bk[k].n > nm ? s->bk[k].n : nm;
	}
	all = calloc(5 * s->nl + 4 * s->na + 4 * s->nq + 4 * s->ns + 5 * s->nb + s->r + 2 * nm +
			 4 * (gm + hm) + 1,
		     sizeof *all);
	s->azero = malloc(s->na + 1);
	if (!all || !s->azero || scaling_work_init(&s->w, gm, hm)) {
		free(all);
		return PM_ERR_NOMEM;
	}
	s->e = all;
	s->kp = s->e + s->nl;
	s->y = s->kp + s->nl;
	s->yp = s->y + s->nl;
	s->t = s->yp + s->nl;
	s->wv = s->t + nm;
	s->kagg = s->wv + nm;
	s->yagg = s->kagg + s->na;
	s->yaggp = s->yagg + s->na;
	s->alpha = s->yaggp + s->na;
	s->alpha0 = s->alpha + s->nq;
	s->beta = s->alpha0 + s->nq;
	s->beta0 = s->beta + s->ns;
	s->mx = s->beta0 + s->ns;
	s->mx0 = s->mx + s->nb;
	s->sy = s->mx0 + s->nb;
	s->sy0 = s->sy + s->nb;
	s->mu0 = s->sy0 + s->nb;
	s->pq = s->mu0 + s->r;
	s->ab = s->pq + 2 * (gm + hm);
	return PM_OK;
}

enum pm_status lsys_init(struct lsys *s, const struct dataset *ds, const struct lifted *m,
			 const uint8_t *zero, const uint8_t *implied, double tolerance,
			 size_t *empty)
{
	uint32_t *lmap = malloc((m->n_cells + 1) * sizeof *lmap);
	enum pm_status st;

	memset(s, 0, sizeof *s);
	s->ds = ds;
	s->inv = m->inv;
	s->m = m;
	s->inner_target = 1e-11;
	st = lmap ? PM_OK : PM_ERR_NOMEM;
	if (!st && !(st = open_rows(s, zero, implied, tolerance, empty)) &&
	    !(st = merge_rows(s, zero, tolerance, empty)) && !(st = local_cells(s, zero, lmap)) &&
	    !(st = coefficients(s, lmap)) && !(st = bucket_rows(s)))
		st = state_alloc(s);
	free(lmap);
	return st;
}

void lsys_finish(struct lsys *s)
{
	if (!s)
		return;
	free(s->row);
	free(s->mid);
	free(s->half);
	free(s->bk);
	free(s->lcell);
	free(s->lagg);
	free(s->lzero);
	free(s->fac);
	free(s->cr_off);
	free(s->cr_row);
	free(s->cr_coef);
	free(s->rc_off);
	free(s->rc_cell);
	free(s->rc_coef);
	free(s->lr_off);
	free(s->lr_row);
	free(s->e);
	free(s->azero);
	scaling_work_finish(&s->w);
	memset(s, 0, sizeof *s);
}
