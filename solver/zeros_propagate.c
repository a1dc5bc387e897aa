/*
 * Exact forced zeros without a linear program, to a fixpoint:
 *
 * 1. Tight knowledge rows. A row R for value s has, in bucket b, at most
 *    u_b = min(Q_b, n(s,b)) and at least l_b = max(0, Q_b - (n(b) - n(s,b)))
 *    records, Q_b the QI totals of R's free cells in b. If c = sum u_b,
 *    every bucket sits at u_b: where Q_b <= n(s,b) R's q put all their
 *    records on s, where n(s,b) <= Q_b s goes only to R's q. If c = sum
 *    l_b, every bucket sits at l_b: R's q fill every other value of b, or,
 *    where l_b = 0, R's cells in b are zero. Either way the row is then a
 *    sum of invariant rows (it is "resolved").
 * 2. Per-bucket flows. A bucket is a transportation polytope (rows n(q,b),
 *    columns n(s,b), free cells). Take one feasible flow; a cell with no
 *    flow can carry some iff its column reaches its row in the residual
 *    graph (a cycle to push flow around).
 *
 * 3. Rows in the span of the invariants. A row that is neither tight nor
 *    loose may still be a sum of invariant rows once the zeros are gone:
 *    in every bucket, its free cells a_ij = u_i + v_j for some u, v (a
 *    breadth-first search over the bucket's free cells). Then its value
 *    is fixed, sum_i u_i n(q_i,b) + sum_j v_j n(s_j,b): it needs no
 *    multiplier, and its right-hand side must be that value. Left open,
 *    such a row makes the two-level dual's Hessian singular, Newton's
 *    steps move its multiplier by hundreds, past the scaling's exponent
 *    cap, and the answer is not the maximum-entropy point.
 *
 * When every knowledge row of a component is resolved the feasible set is
 * the product of its buckets' polytopes, and step 2 alone is exact: no LP.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "loops.h"
#include "solve.h"
#include "zeros.h"

/* A row within ZERO_RECORDS of one of its bounds is tight: the zeros that
 * then follow hold no more than that in any solution. Absolute, not a
 * multiple of the right-hand side: at 1e-9 c, P = 0.999999999 on three
 * records (c = 2.999999997) would be tight, and cells that hold 3e-9
 * records zeroed: an infinite accuracy, a stalled full dual. */

struct prop {
	const struct invariants *inv;
	uint8_t *zero;
	const uint32_t *h; /* per bucket: width */
	const double *nb;  /* n(b) */
	/* scratch for one knowledge row, per bucket in one place (a row
	 * visits its buckets far apart: one cache miss each, not four) */
	struct row_bucket {
		double qsum;	/* Q_b */
		uint32_t stamp; /* seen in this row when == now */
		uint32_t col;	/* the column of the row's SA value */
		uint32_t cnt;	/* the row's free cells in b */
	} * gb;
	uint32_t now, *touched;
	uint8_t *inrow; /* per cell: a free cell of this row */
	/* step 3, per node of a bucket (g + h): potential, seen, queue */
	int32_t *pot;
	uint8_t *seen;
	uint32_t *queue;
	/* what a new zero may change: its bucket's flow, the rows touching
	 * the bucket (per bucket and per row, set until looked at again);
	 * the buckets with zeros since their rows were marked (fresh, and
	 * their list) */
	uint8_t *bucket_dirty, *row_dirty, *fresh;
	uint32_t *fresh_list;
	size_t n_fresh;
	int changed, infeasible;
};

static void set_zero(struct prop *p, size_t c)
{
	const struct invariants *inv = p->inv;
	size_t b = inv->cell_group[c];

	if (p->zero[c])
		return;
	p->zero[c] = 1;
	p->changed = 1;
	p->bucket_dirty[b] = 1;
	if (!p->fresh[b]) {
		p->fresh[b] = 1;
		p->fresh_list[p->n_fresh++] = (uint32_t)b;
	}
}

/*
 * The rows of the buckets with new zeros marked dirty: a row of b looked
 * at since the last zero of b must look again (step 3 reads every zero
 * of the row's buckets, not only those of its own cells). Once per pass,
 * each bucket's rows once (its cells' slots'), not once per zero.
 */
static void mark_fresh(struct prop *p)
{
	const struct invariants *inv = p->inv;

	for (size_t k = 0; k < p->n_fresh; k++) {
		size_t b = p->fresh_list[k];

		for (size_t c = inv->cell_off[b]; c < inv->cell_off[b + 1]; c++) {
			size_t n;
			const uint32_t *rows = invariants_cell_rows(inv, c, &n);

			for (size_t e = 0; e < n; e++)
				p->row_dirty[rows[e]] = 1;
		}
		p->fresh[b] = 0;
	}
	p->n_fresh = 0;
}

static enum pm_status prop_init(struct prop *p)
{
	const struct invariants *inv = p->inv;
	size_t nb = inv->n_groups, nodes = 1;

	p->h = inv->bucket_h;
	p->nb = inv->bucket_n;
	p->gb = calloc(nb + 1, sizeof *p->gb);
	p->touched = malloc((nb + 1) * sizeof *p->touched);
	p->inrow = calloc(inv->n_cells + 1, 1);
	for (size_t b = 0; b < nb; b++) {
		size_t gh = invariants_bucket_g(inv, b) + p->h[b];

		nodes = gh > nodes ? gh : nodes;
	}
	p->pot = malloc(nodes * sizeof *p->pot);
	p->seen = malloc(nodes);
	p->queue = malloc(nodes * sizeof *p->queue);
	p->bucket_dirty = malloc(nb + 1);
	p->row_dirty = malloc(inv->n_rows + 1);
	p->fresh = calloc(nb + 1, 1);
	p->fresh_list = malloc((nb + 1) * sizeof *p->fresh_list);
	if (!p->gb || !p->touched || !p->inrow || !p->pot || !p->seen || !p->queue ||
	    !p->bucket_dirty || !p->row_dirty || !p->fresh || !p->fresh_list)
		return PM_ERR_NOMEM;
	/* the first pass looks at everything */
	memset(p->bucket_dirty, 1, nb + 1);
	memset(p->row_dirty, 1, inv->n_rows + 1);
	return PM_OK;
}

static void prop_finish(struct prop *p)
{
	free(p->gb);
	free(p->touched);
	free(p->inrow);
	free(p->pot);
	free(p->seen);
	free(p->queue);
	free(p->bucket_dirty);
	free(p->row_dirty);
	free(p->fresh);
	free(p->fresh_list);
}

/*
 * A row's buckets are far apart in a large table, and each entry reads
 * five per-bucket arrays: the loop waits on memory, one miss at a time
 * (the entries are cheap, the misses are not). The cell numbers of the
 * entries ahead are read in order anyway, so their buckets' lines are
 * requested that many entries early and arrive while the loop works.
 */
#define GATHER_AHEAD 16

static inline void gather_prefetch(const struct prop *p, size_t b)
{
	__builtin_prefetch(&p->gb[b], 1);
	__builtin_prefetch(&p->h[b]);
	__builtin_prefetch(&p->inv->cell_off[b]);
	__builtin_prefetch(&p->inv->qi_row0[b]);
}

/* Buckets of knowledge row r with Q_b and the column of its SA value.
 * Returns the number of buckets. */
static size_t row_gather(struct prop *p, size_t r)
{
	const struct invariants *inv = p->inv;
	size_t n = 0;

	p->now++;
	for (size_t e = inv->row_off[r], end = inv->row_off[r + 1]; e < end; e++) {
		size_t c = inv->row_cell[e], b = inv->cell_group[c];
		uint32_t at = (uint32_t)(c - inv->cell_off[b]), i = at / p->h[b];

		if (e + GATHER_AHEAD < end) /* see GATHER_AHEAD */
			gather_prefetch(p, inv->cell_group[inv->row_cell[e + GATHER_AHEAD]]);

		if (p->gb[b].stamp != p->now) {
			p->gb[b].stamp = p->now;
			p->gb[b].qsum = 0;
			p->gb[b].cnt = 0;
			p->gb[b].col = at - i * p->h[b];
			p->touched[n++] = (uint32_t)b;
		}
		if (!p->zero[c]) {
			p->gb[b].qsum += invariants_qi_count(p->inv, b, i);
			p->gb[b].cnt++;
		}
	}
	return n;
}

/* Marks row r's free cells in inrow (set), or clears its marks. */
static void mark_row(struct prop *p, size_t r, int set)
{
	const struct invariants *inv = p->inv;

	for (size_t e = inv->row_off[r]; e < inv->row_off[r + 1]; e++)
		p->inrow[inv->row_cell[e]] = set && !p->zero[inv->row_cell[e]];
}

/* Labels the nodes reachable from `root` (0..g-1 bucket rows, g.. columns)
 * over the free cells with potentials such that a_ij = u_i + v_j, a the
 * row's free cells (inrow); 0 if no labelling exists. */
static int span_search(struct prop *p, size_t off, size_t g, size_t h, uint32_t root)
{
	const uint8_t *zero = p->zero + off, *in = p->inrow + off;
	size_t head = 0, tail = 0;

	p->seen[root] = 1;
	p->pot[root] = 0;
	p->queue[tail++] = root;
	while (head < tail) {
		uint32_t x = p->queue[head++];
		int row = x < g;

		for (size_t y = 0; y < (row ? h : g); y++) {
			size_t c = row ? x * h + y : y * h + (x - g);
			uint32_t to = row ? (uint32_t)(g + y) : (uint32_t)y;
			int32_t want = (int32_t)in[c] - p->pot[x];

			if (zero[c])
				continue;
			if (!p->seen[to]) {
				p->seen[to] = 1;
				p->pot[to] = want;
				p->queue[tail++] = to;
			} else if (p->pot[to] != want) {
				return 0;
			}
		}
	}
	return 1;
}

/* Step 3 in bucket b: whether the row's free cells there are in the span
 * of b's invariants, and *value their sum in every solution. */
static int span_bucket(struct prop *p, size_t b, double *value)
{
	const struct invariants *inv = p->inv;
	size_t g = invariants_bucket_g(inv, b), h = p->h[b], off = inv->cell_off[b];

	memset(p->seen, 0, g + h);
	*value = 0;
	for (uint32_t x = 0; x < g + h; x++) {
		if (p->seen[x])
			continue;
		if (!span_search(p, off, g, h, x))
			return 0;
	}
	for (size_t i = 0; i < g; i++)
		*value += p->pot[i] * invariants_qi_count(inv, b, i);
	for (size_t j = 0; j < h; j++)
		*value += p->pot[g + j] * invariants_sa_count(inv, b, j);
	return 1;
}

/*
 * Step 3 for row r (gathered, n buckets, right-hand side c): 1 if it is a
 * sum of invariant rows. Its free cells in b are part of one column: none,
 * or all of the column's free cells, is the column's row (times 0 or 1);
 * a part of it is in the span only where zeros split the bucket (without
 * them, rows and columns are all linked): only then the search, which
 * needs the row's cells marked.
 */
static int row_span(struct prop *p, size_t r, size_t n, double c, double eps)
{
	const struct invariants *inv = p->inv;
	double value = 0, v = 0;
	int marked = 0, span = 1;

	for (size_t k = 0; k < n && span; k++) {
		size_t b = p->touched[k], off = inv->cell_off[b], h = p->h[b], free = 0,
		       g = invariants_bucket_g(inv, b);

		if (p->gb[b].cnt == 0)
			continue;
		for (size_t i = 0; i < g; i++)
			free += !p->zero[off + i * h + p->gb[b].col];
		if (p->gb[b].cnt == free) {
			value += invariants_sa_count(inv, b, p->gb[b].col);
			continue;
		}
		if (!memchr(p->zero + off, 1, g * h)) {
			span = 0;
			break;
		}
		if (!marked)
			mark_row(p, r, 1);
		marked = 1;
		span = span_bucket(p, b, &v);
		value += v;
	}
	if (marked)
		mark_row(p, r, 0);
	if (span && fabs(value - c) > eps)
		p->infeasible = 1; /* its value is fixed, and not c */
	return span;
}

/* Zeroes, in bucket b, the cells (i, j) with (row i in R) == in_r and
 * (j == col) == on_col. */
static void zero_part(struct prop *p, size_t b, int in_r, int on_col)
{
	size_t off = p->inv->cell_off[b], h = p->h[b], col = p->gb[b].col,
	       g = invariants_bucket_g(p->inv, b);

	for (size_t i = 0; i < g; i++) {
		if (p->inrow[off + i * h + col] != in_r)
			continue;
		if (on_col && !p->zero[off + i * h + col])
			set_zero(p, off + i * h + col);
		for (size_t j = 0; !on_col && j < h; j++)
			if (j != col && !p->zero[off + i * h + j])
				set_zero(p, off + i * h + j);
	}
}

/* Step 1 for knowledge row r; returns 1 when the row is resolved. */
static int row_tighten(struct prop *p, size_t r)
{
	const struct invariants *inv = p->inv;
	size_t n = row_gather(p, r);
	double u = 0, l = 0, c = inv->rhs[r], eps = 1e-9 * fmax(1, c);
	int upper, lower;

	for (size_t k = 0; k < n; k++) {
		size_t b = p->touched[k];
		double ns = invariants_sa_count(p->inv, b, p->gb[b].col);

		u += num_min(p->gb[b].qsum, ns);
		l += num_max(0, p->gb[b].qsum - (p->nb[b] - ns));
	}
	upper = c >= u - ZERO_RECORDS;
	lower = !upper && c <= l + ZERO_RECORDS;
	if (c > u + eps || c < l - eps)
		p->infeasible = 1;
	if (p->infeasible)
		return upper || lower;
	if (!(upper || lower))
		return row_span(p, r, n, c, eps);
	mark_row(p, r, 1); /* tight: zero_part needs them (few rows get here) */
	for (size_t k = 0; k < n; k++) {
		size_t b = p->touched[k];
		double ns = invariants_sa_count(p->inv, b, p->gb[b].col),
		       lb = p->gb[b].qsum - (p->nb[b] - ns);

		if (upper && p->gb[b].qsum <= ns + eps)
			zero_part(p, b, 1, 0); /* R's q only on s */
		if (upper && ns <= p->gb[b].qsum + eps)
			zero_part(p, b, 0, 1); /* s only on R's q */
		if (lower && lb <= eps)
			zero_part(p, b, 1, 1); /* R empty in b */
		else if (lower)
			zero_part(p, b, 0, 0); /* R's q fill the other values */
	}
	mark_row(p, r, 0);
	return 1;
}

/* Scratch for bucket flows, sized for the widest bucket. */
struct flow {
	size_t cap;
	double *f, *rrem, *crem;
	int32_t *prev;		   /* BFS parents: nodes 0..g-1 rows, g..g+h-1 columns */
	int32_t *idx, *low, *comp; /* residual_components, per node */
	uint32_t *stk, *call, *iter;
	uint32_t *queue;
	uint8_t *onstack;
};

/* Breadth-first search for an augmenting path source -> row -> (column ->
 * row)* -> column -> sink in bucket b's residual graph: forward edges are
 * the free cells, backward edges the cells with flow. Returns the end
 * column node, or -1. */
static int32_t find_path(const struct prop *p, struct flow *w, size_t b)
{
	size_t g = invariants_bucket_g(p->inv, b), h = p->h[b], off = p->inv->cell_off[b], head = 0,
	       tail = 0;

	for (size_t v = 0; v < g + h; v++)
		w->prev[v] = -2;
	for (size_t i = 0; i < g; i++)
		if (w->rrem[i] > 0) {
			w->prev[i] = -1;
			w->queue[tail++] = (uint32_t)i;
		}
	while (head < tail) {
		size_t v = w->queue[head++];
		int row = v < g;

		for (size_t x = 0; x < (row ? h : g); x++) {
			size_t i = row ? v : x, j = row ? x : v - g, to = row ? g + x : x;

			if (w->prev[to] != -2 || p->zero[off + i * h + j] ||
			    (!row && w->f[i * h + j] <= 0))
				continue;
			w->prev[to] = (int32_t)v;
			if (to >= g && w->crem[to - g] > 0)
				return (int32_t)to;
			w->queue[tail++] = (uint32_t)to;
		}
	}
	return -1;
}

/* Pushes the bottleneck amount along the path ending at column `end`. */
static void push_path(struct flow *w, size_t g, size_t h, int32_t end)
{
	double amount = w->crem[end - g];
	int32_t v, start = end;

	for (v = end; w->prev[v] >= 0; v = w->prev[v])
		if (v < (int32_t)g) /* row v reached from column prev[v]: backward edge */
			amount = num_min(amount, w->f[v * h + (w->prev[v] - g)]);
	while (w->prev[start] >= 0)
		start = w->prev[start];
	amount = num_min(amount, w->rrem[start]);
	for (v = end; w->prev[v] >= 0; v = w->prev[v]) {
		int32_t u = w->prev[v];

		if (v >= (int32_t)g)
			w->f[u * h + (v - g)] += amount;
		else
			w->f[v * h + (u - g)] -= amount;
	}
	w->rrem[start] -= amount;
	w->crem[end - g] -= amount;
}

/* Pushes node v on the search of residual_components. */
static void scc_push(struct flow *w, size_t v, int32_t *next, size_t *sp, size_t *cp)
{
	w->idx[v] = w->low[v] = (*next)++;
	w->stk[(*sp)++] = (uint32_t)v;
	w->onstack[v] = 1;
	w->call[*cp] = (uint32_t)v;
	w->iter[(*cp)++] = 0;
}

/* Node v is done: its low link goes to its caller, and it closes a
 * component if it is the component's first node. */
static void scc_pop(struct flow *w, size_t v, size_t *sp, size_t cp, int32_t *ncomp)
{
	if (cp && w->low[v] < w->low[w->call[cp - 1]])
		w->low[w->call[cp - 1]] = w->low[v];
	if (w->low[v] != w->idx[v])
		return;
	for (size_t u = SIZE_MAX; u != v;) {
		u = w->stk[--*sp];
		w->onstack[u] = 0;
		w->comp[u] = *ncomp;
	}
	(*ncomp)++;
}

/* Strongly connected components of bucket b's residual graph (Tarjan,
 * with an explicit stack): row i -> column j on a free cell, column j ->
 * row i on a cell with flow. */
static void residual_components(const struct prop *p, struct flow *w, size_t b, size_t g, size_t h)
{
	const uint8_t *zero = p->zero + p->inv->cell_off[b];
	int32_t next = 0, ncomp = 0;
	size_t sp = 0, cp = 0;

	for (size_t v = 0; v < g + h; v++)
		w->idx[v] = -1;
	for (size_t root = 0; root < g + h; root++) {
		if (w->idx[root] >= 0)
			continue;
		scc_push(w, root, &next, &sp, &cp);
		while (cp) {
			size_t v = w->call[cp - 1], x = w->iter[cp - 1]++, u = v < g ? g + x : x;

			if (x == (v < g ? h : g)) {
				scc_pop(w, v, &sp, --cp, &ncomp);
				continue;
			}
			if (v < g ? zero[v * h + x] : w->f[x * h + (v - g)] <= 0)
				continue;
			if (w->idx[u] < 0)
				scc_push(w, u, &next, &sp, &cp);
			else if (w->onstack[u] && w->idx[u] < w->low[v])
				w->low[v] = w->idx[u];
		}
	}
}

/* Step 2 for bucket b: a feasible flow, then the residual test per cell.
 * Record counts are integers, so each augmentation moves >= 1 record. */
static void bucket_flow(struct prop *p, struct flow *w, size_t b)
{
	size_t g = invariants_bucket_g(p->inv, b), h = p->h[b], off = p->inv->cell_off[b];
	double left = p->nb[b];
	int32_t end;

	for (size_t i = 0; i < g; i++)
		w->rrem[i] = invariants_qi_count(p->inv, b, i);
	for (size_t j = 0; j < h; j++)
		w->crem[j] = invariants_sa_count(p->inv, b, j);
	/* greedily first: augmenting paths only for what is left */
	for (size_t i = 0; i < g; i++)
		for (size_t j = 0; j < h; j++) {
			double x = p->zero[off + i * h + j] ? 0 : num_min(w->rrem[i], w->crem[j]);

			w->f[i * h + j] = x;
			w->rrem[i] -= x;
			w->crem[j] -= x;
			left -= x;
		}
	while (left > 1e-9 && (end = find_path(p, w, b)) >= 0) {
		double before = w->crem[end - g];

		push_path(w, g, h, end);
		left -= before - w->crem[end - g];
	}
	if (left > 1e-9) {
		p->infeasible = 1;
		return;
	}
	/* a free cell (i, j) without flow can carry some iff column j reaches
	 * row i, that is (the cell is the edge back) iff they are in one
	 * component; zeroing cells between components leaves the components */
	residual_components(p, w, b, g, h);
	for (size_t i = 0; i < g; i++)
		for (size_t j = 0; j < h; j++)
			if (!p->zero[off + i * h + j] && w->f[i * h + j] <= 0 &&
			    w->comp[i] != w->comp[g + j])
				set_zero(p, off + i * h + j);
}

static enum pm_status flow_init(struct flow *w, const struct prop *p, const uint32_t *buckets,
				size_t n_buckets)
{
	size_t gh = 1, gph = 1;

	for (size_t k = 0; k < n_buckets; k++) { /* no flow elsewhere */
		size_t b = buckets ? buckets[k] : k,
		       cells = p->inv->cell_off[b + 1] - p->inv->cell_off[b];

		gh = cells > gh ? cells : gh;
		gph = invariants_bucket_g(p->inv, b) + p->h[b] > gph
			  ? invariants_bucket_g(p->inv, b) + p->h[b]
			  : gph;
	}
	w->f = malloc(gh * sizeof *w->f);
	w->rrem = malloc(gph * sizeof *w->rrem);
	w->crem = malloc(gph * sizeof *w->crem);
	w->prev = malloc(gph * sizeof *w->prev);
	w->queue = malloc(gph * sizeof *w->queue);
	w->onstack = malloc(gph);
	w->idx = malloc(3 * gph * sizeof *w->idx);
	w->stk = malloc(3 * gph * sizeof *w->stk);
	if (!w->f || !w->rrem || !w->crem || !w->prev || !w->queue || !w->onstack || !w->idx ||
	    !w->stk)
		return PM_ERR_NOMEM;
	w->low = w->idx + gph;
	w->comp = w->idx + 2 * gph;
	w->call = w->stk + gph;
	w->iter = w->stk + 2 * gph;
	return PM_OK;
}

static void flow_finish(struct flow *w)
{
	free(w->f);
	free(w->rrem);
	free(w->crem);
	free(w->prev);
	free(w->queue);
	free(w->onstack);
	free(w->idx);
	free(w->stk);
}

/* Step 2 for bucket b if a zero changed it since its last flow. A bucket
 * without zeros has the positive closed form: no cell is forced. The
 * flow's own zeros are zero in every point of the bucket's polytope, so
 * removing them leaves the polytope, and the next flow's answer, as they
 * were. */
static void bucket_step(struct prop *p, struct flow *w, size_t b)
{
	const struct invariants *inv = p->inv;
	size_t c0 = inv->cell_off[b];

	if (!p->bucket_dirty[b])
		return;
	if (memchr(p->zero + c0, 1, inv->cell_off[b + 1] - c0))
		bucket_flow(p, w, b);
	p->bucket_dirty[b] = 0;
}

/*
 * Step 1's bounds of every dirty row at once, bucket by bucket: the
 * per-row path (row_gather) reads five per-bucket arrays at every entry,
 * the buckets of a row far apart in a large table, one cache miss each
 * (on a large table, the bulk of the zero search's time); here
 * the buckets come in order, each cell's rows are its slot's, and the
 * per-row sums (knowledge row r - first) are few enough to stay in the
 * cache. Per row: u and l (sums of counts: integers, exact in any
 * order, so the same as row_tighten's), and whether a bucket without
 * zeros holds part of the row's column (then step 3 cannot succeed:
 * row_span stops there). A row that is neither tight nor infeasible and
 * has such a bucket is left as it is, as row_tighten would leave it;
 * every other goes through row_tighten.
 */
struct survey {
	size_t first, *loc;
	double *u, *l, *q;
	uint32_t *stamp, *cnt, *col, *list, tick;
	uint8_t *partial;
};

static enum pm_status survey_init(struct survey *v, const struct invariants *inv)
{
	size_t n = inv->n_knowledge_rows + 1;

	v->first = inv->n_qi_rows + inv->n_sa_rows;
	v->loc = malloc(n * sizeof *v->loc);
	v->u = malloc(n * sizeof *v->u);
	v->l = malloc(n * sizeof *v->l);
	v->q = malloc(n * sizeof *v->q);
	v->stamp = calloc(n, sizeof *v->stamp);
	v->cnt = malloc(n * sizeof *v->cnt);
	v->col = malloc(n * sizeof *v->col);
	v->list = malloc(n * sizeof *v->list);
	v->partial = malloc(n);
	return v->loc && v->u && v->l && v->q && v->stamp && v->cnt && v->col && v->list &&
		       v->partial
		   ? PM_OK
		   : PM_ERR_NOMEM;
}

static void survey_finish(struct survey *v)
{
	free(v->loc);
	free(v->u);
	free(v->l);
	free(v->q);
	free(v->stamp);
	free(v->cnt);
	free(v->col);
	free(v->list);
	free(v->partial);
}

/* Bucket b's share of the dirty rows' bounds. */
static void survey_bucket(struct survey *v, const struct prop *p, const uint8_t *todo, size_t b)
{
	const struct invariants *inv = p->inv;
	size_t off = inv->cell_off[b], h = p->h[b], g = invariants_bucket_g(inv, b), m = 0;
	int clean = !memchr(p->zero + off, 1, g * h);

	v->tick++;
	for (size_t c = off; c < off + g * h; c++) {
		size_t n;
		const uint32_t *rows = invariants_cell_rows(inv, c, &n);

		for (size_t e = 0; e < n; e++) {
			size_t k = rows[e] - v->first;

			if (!todo[rows[e]])
				continue;
			if (v->stamp[k] != v->tick) {
				v->stamp[k] = v->tick;
				v->loc[k] = m;
				v->list[m] = (uint32_t)k;
				v->q[m] = 0;
				v->cnt[m] = 0;
				v->col[m++] = (uint32_t)((c - off) % h);
			}
			if (!p->zero[c]) {
				v->q[v->loc[k]] += invariants_qi_count(inv, b, (c - off) / h);
				v->cnt[v->loc[k]]++;
			}
		}
	}
	for (size_t x = 0; x < m; x++) {
		size_t k = v->list[x];
		double ns = invariants_sa_count(inv, b, v->col[x]);

		v->u[k] += num_min(v->q[x], ns);
		v->l[k] += num_max(0, v->q[x] - (p->nb[b] - ns));
		v->partial[k] |= clean && v->cnt[x] > 0 && v->cnt[x] != g;
	}
}

/* The dirty rows' bounds (todo: per row, dirty and not resolved). */
static void survey_run(struct survey *v, const struct prop *p, const uint8_t *todo)
{
	size_t n = p->inv->n_knowledge_rows;

	memset(v->u, 0, n * sizeof *v->u);
	memset(v->l, 0, n * sizeof *v->l);
	memset(v->partial, 0, n);
	for (size_t t = 0; t < p->inv->n_touched; t++)
		survey_bucket(v, p, todo, p->inv->touched[t]);
}

/* Whether row_tighten would leave row r as it is (surveyed). */
static int survey_idle(const struct survey *v, const struct invariants *inv, size_t r)
{
	size_t k = r - v->first;
	double c = inv->rhs[r], eps = 1e-9 * fmax(1, c), u = v->u[k], l = v->l[k];
	int upper = c >= u - ZERO_RECORDS, lower = !upper && c <= l + ZERO_RECORDS;

	return !upper && !lower && !(c > u + eps || c < l - eps) && v->partial[k];
}

/*
 * The dirty rows to look at (todo), and whether to survey them: when
 * their entries are more than a sixteenth of all, the survey's pass over
 * every entry in order costs less than theirs one miss at a time.
 */
static int dirty_rows(const struct prop *p, const uint8_t *resolved, uint8_t *todo)
{
	const struct invariants *inv = p->inv;
	size_t first = inv->n_qi_rows + inv->n_sa_rows, mine = 0;

	for (size_t r = first; r < inv->n_rows; r++) {
		todo[r] = !resolved[r] && p->row_dirty[r];
		mine += todo[r] ? inv->row_off[r + 1] - inv->row_off[r] : 0;
	}
	return mine > (inv->row_off[inv->n_rows] - inv->row_off[first]) / 16;
}

/*
 * Both steps to a fixpoint, each pass looking again only at what a new
 * zero may have changed: a row's test reads only the zeros of its
 * buckets, a flow only its bucket's. Every step only adds zeros that hold
 * in every solution, so the fixpoint does not depend on the order.
 */
static enum pm_status propagate(const struct invariants *inv, uint8_t *zero, uint8_t *resolved,
				const uint32_t *buckets, size_t n_buckets, int *infeasible)
{
	struct prop p = {.inv = inv, .zero = zero};
	struct flow w = {0};
	struct survey v = {0};
	size_t first = inv->n_qi_rows + inv->n_sa_rows;
	uint8_t *todo = malloc(inv->n_rows + 1);
	enum pm_status st = todo ? prop_init(&p) : PM_ERR_NOMEM;

	if (!st)
		st = flow_init(&w, &p, buckets, n_buckets);
	if (!st)
		st = survey_init(&v, inv);
	for (int dirty = 1; !st && dirty && !p.infeasible;) {
		int surveyed;

		p.changed = 0;
		mark_fresh(&p);
		if ((surveyed = dirty_rows(&p, resolved, todo)))
			survey_run(&v, &p, todo);
		for (size_t r = first; r < inv->n_rows && !p.infeasible; r++) {
			if (!todo[r])
				continue;
			p.row_dirty[r] = 0;
			if (!(surveyed && survey_idle(&v, inv, r)))
				resolved[r] = (uint8_t)row_tighten(&p, r);
		}
		for (size_t k = 0; k < n_buckets && !p.infeasible; k++)
			bucket_step(&p, &w, buckets ? buckets[k] : k);
		dirty = p.changed;
	}
	*infeasible = p.infeasible;
	flow_finish(&w);
	prop_finish(&p);
	survey_finish(&v);
	free(todo);
	return st;
}

enum pm_status zeros_propagate(const struct invariants *inv, uint8_t *zero, uint8_t *resolved,
			       int *infeasible)
{
	return propagate(inv, zero, resolved, inv->touched, inv->n_touched, infeasible);
}

enum pm_status zeros_propagate_all(const struct invariants *inv, uint8_t *zero, uint8_t *resolved,
				   int *infeasible)
{
	return propagate(inv, zero, resolved, NULL, inv->n_groups, infeasible);
}
