/*
 * Anatomy (Xiao & Tao, VLDB 2006): bucketizes records so that every bucket
 * holds l distinct SA values.
 *
 * Records are split into one class per SA value. While at least l classes
 * are non-empty, the l largest (ties: smaller value bytewise) each give up a
 * random record and those l records form a group; taking from the largest
 * classes keeps the rest l-eligible (no value above 1/l of what is left), so
 * afterwards fewer than l records remain, of distinct values, and each can
 * join a group that lacks its value. Randomness comes from a seeded
 * splitmix64, so a seed always gives the same grouping.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "constraints.h"

struct sa_class {
	const char *value;
	size_t base, n; /* its records: rows[base .. base + n), n = remaining */
};

struct anatomy {
	const struct csv_table *t;
	size_t sa, l;
	uint64_t rng;
	size_t n_classes;
	struct sa_class *cls; /* in bytewise value order */
	uint32_t *rows;	      /* row indices grouped by class */
	uint32_t *heap;	      /* non-empty classes, largest first */
	size_t heap_n;
	/* groups: members[group_off[g] .. group_off[g+1]) with their classes */
	uint32_t *members, *member_class;
	size_t *group_off, n_groups, n_members;
	/* residual records placed afterwards: (group, row, class) */
	uint32_t *extra_group, *extra_row, *extra_class;
	size_t n_extra;
};

static uint64_t next_random(struct anatomy *an)
{
	uint64_t z = (an->rng += 0x9E3779B97F4A7C15ULL);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

/* Uniform in [0, n), n >= 1, without modulo bias. */
static size_t random_below(struct anatomy *an, size_t n)
{
	uint64_t threshold = (0 - (uint64_t)n) % n, r;

	do
		r = next_random(an);
	while (r < threshold);
	return (size_t)(r % n);
}

static long find_col(const struct csv_table *t, const char *name)
{
	for (size_t i = 0; name && i < t->n_cols; i++)
		if (strcmp(t->header[i], name) == 0)
			return (long)i;
	return -1;
}

static enum pm_status check_qi(const struct csv_table *t, const char *const *qi_cols, size_t n_qi,
			       long sa, size_t *cols, struct pm_error *err)
{
	char clip[ERROR_CLIP_SIZE];

	if (!qi_cols || n_qi == 0)
		return error_set(err, PM_ERR_INPUT, "qi", "is empty; name at least one QI column");
	if (n_qi > DATASET_MAX_ATTRS)
		return error_set(err, PM_ERR_INPUT, "qi",
				 "has %zu columns; at most %d are supported", n_qi,
				 DATASET_MAX_ATTRS);
	for (size_t i = 0; i < n_qi; i++) {
		long c = find_col(t, qi_cols[i]);

		if (c < 0)
			return error_set(err, PM_ERR_INPUT, "qi", "no column \"%s\" in the header",
					 qi_cols[i] ? error_clip(qi_cols[i], clip) : "(null)");
		if (c == sa)
			return error_set(err, PM_ERR_INPUT, "qi",
					 "column \"%s\" is the sa column; it cannot be a QI too",
					 error_clip(qi_cols[i], clip));
		for (size_t j = 0; j < i; j++)
			if (cols[j] == (size_t)c)
				return error_set(err, PM_ERR_INPUT, "qi",
						 "column \"%s\" is listed twice",
						 error_clip(qi_cols[i], clip));
		cols[i] = (size_t)c;
	}
	return PM_OK;
}

static enum pm_status check_args(const struct csv_table *t, const char *sa_col,
				 const char *const *qi_cols, size_t n_qi,
				 const struct anatomy_options *o, size_t *sa, size_t *cols,
				 struct pm_error *err)
{
	char clip[ERROR_CLIP_SIZE];
	long c;
	enum pm_status st;

	if (!t || !o)
		return error_set(err, PM_ERR_INTERNAL, "", "no table or options");
	if (o->l < 2)
		return error_set(err, PM_ERR_INPUT, "l", "must be at least 2 (got %zu)", o->l);
	if (!sa_col || !*sa_col)
		return error_set(err, PM_ERR_INPUT, "sa", "is missing; name the SA column");
	if ((c = find_col(t, sa_col)) < 0)
		return error_set(err, PM_ERR_INPUT, "sa", "no column \"%s\" in the header",
				 error_clip(sa_col, clip));
	*sa = (size_t)c;
	st = check_qi(t, qi_cols, n_qi, c, cols, err);
	if (!st && t->n_rows == 0)
		st = error_set(err, PM_ERR_INPUT, "records", "is empty; the table has no rows");
	if (!st && t->n_rows > UINT32_MAX)
		st = error_set(err, PM_ERR_INPUT, "records", "too many rows (%zu)", t->n_rows);
	return st;
}

struct sort_item {
	const char *s;
	uint32_t row;
};

static int cmp_sort_item(const void *pa, const void *pb)
{
	const struct sort_item *a = pa, *b = pb;
	int c = strcmp(a->s, b->s);

	return c ? c : (a->row > b->row) - (a->row < b->row);
}

/* One class per SA value, values in bytewise order, rows ascending. */
static enum pm_status make_classes(struct anatomy *an, struct pm_error *err)
{
	size_t n = an->t->n_rows;
	struct sort_item *v = malloc(n * sizeof *v);

	an->rows = malloc(n * sizeof *an->rows);
	an->cls = malloc(n * sizeof *an->cls);
	if (!v || !an->rows || !an->cls) {
		free(v);
		return error_set(err, PM_ERR_NOMEM, "", "out of memory in anatomy");
	}
	for (size_t r = 0; r < n; r++)
		v[r] = (struct sort_item){an->t->cells[r * an->t->n_cols + an->sa], (uint32_t)r};
	qsort(v, n, sizeof *v, cmp_sort_item);
	for (size_t i = 0; i < n; i++) {
		if (i == 0 || strcmp(v[i - 1].s, v[i].s) != 0)
			an->cls[an->n_classes++] = (struct sa_class){v[i].s, i, 0};
		an->cls[an->n_classes - 1].n++;
		an->rows[i] = v[i].row;
	}
	free(v);
	return PM_OK;
}

/* Largest remaining class, the smaller value first among equals. */
static size_t largest_class(const struct anatomy *an)
{
	size_t best = 0;

	for (size_t c = 1; c < an->n_classes; c++)
		if (an->cls[c].n > an->cls[best].n)
			best = c;
	return best;
}

/* l-eligible: no value holds more than 1/l of the records (count * l <= N).
 * With set_aside, drops the largest class until that holds. */
static enum pm_status make_eligible(struct anatomy *an, int set_aside, size_t *n_aside,
				    struct pm_error *err)
{
	size_t total = an->t->n_rows, l = an->l;
	char clip[ERROR_CLIP_SIZE];

	*n_aside = 0;
	for (;;) {
		struct sa_class *big = &an->cls[largest_class(an)];

		if (total > 0 && big->n <= total / l)
			return PM_OK;
		if (total == 0)
			return error_set(err, PM_ERR_INPUT, "l",
					 "no records are left after setting aside the most "
					 "frequent SA values; no grouping is %zu-diverse",
					 l);
		if (!set_aside)
			return error_set(
			    err, PM_ERR_INPUT, "l",
			    "the table is not %zu-eligible: SA value \"%s\" occurs in %zu of %zu "
			    "records, more than 1/%zu of them%s; lower l or set the most "
			    "frequent values aside",
			    l, error_clip(big->value, clip), big->n, total, l,
			    an->n_classes < l ? " (there are fewer distinct SA values than l)"
					      : "");
		total -= big->n;
		*n_aside += big->n;
		big->n = 0;
	}
}

static int heap_before(const struct anatomy *an, uint32_t a, uint32_t b)
{
	return an->cls[a].n > an->cls[b].n || (an->cls[a].n == an->cls[b].n && a < b);
}

static void heap_push(struct anatomy *an, uint32_t c)
{
	size_t i = an->heap_n++;

	for (; i > 0 && heap_before(an, c, an->heap[(i - 1) / 2]); i = (i - 1) / 2)
		an->heap[i] = an->heap[(i - 1) / 2];
	an->heap[i] = c;
}

static uint32_t heap_pop(struct anatomy *an)
{
	uint32_t top = an->heap[0], last = an->heap[--an->heap_n];
	size_t i = 0, n = an->heap_n;

	for (;;) {
		size_t k = 2 * i + 1;

		if (k >= n)
			break;
		if (k + 1 < n && heap_before(an, an->heap[k + 1], an->heap[k]))
			k++;
		if (!heap_before(an, an->heap[k], last))
			break;
		an->heap[i] = an->heap[k];
		i = k;
	}
	if (n)
		an->heap[i] = last;
	return top;
}

/* Removes a random remaining record of class c. */
static uint32_t take_random(struct anatomy *an, uint32_t c)
{
	struct sa_class *k = &an->cls[c];
	size_t j = k->base + random_below(an, k->n);
	uint32_t row = an->rows[j];

	an->rows[j] = an->rows[k->base + --k->n];
	return row;
}

static enum pm_status form_groups(struct anatomy *an, struct pm_error *err)
{
	size_t n = an->t->n_rows;
	uint32_t *picked = malloc(an->n_classes * sizeof *picked);

	an->heap = malloc(an->n_classes * sizeof *an->heap);
	an->members = malloc(n * sizeof *an->members);
	an->member_class = malloc(n * sizeof *an->member_class);
	an->group_off = calloc(n / an->l + 1, sizeof *an->group_off);
	if (!picked || !an->heap || !an->members || !an->member_class || !an->group_off) {
		free(picked);
		return error_set(err, PM_ERR_NOMEM, "", "out of memory in anatomy");
	}
	for (uint32_t c = 0; c < an->n_classes; c++)
		if (an->cls[c].n)
			heap_push(an, c);
	while (an->heap_n >= an->l) {
		for (size_t i = 0; i < an->l; i++)
			picked[i] = heap_pop(an);
		for (size_t i = 0; i < an->l; i++) {
			an->member_class[an->n_members] = picked[i];
			an->members[an->n_members++] = take_random(an, picked[i]);
		}
		for (size_t i = 0; i < an->l; i++)
			if (an->cls[picked[i]].n)
				heap_push(an, picked[i]);
		an->group_off[++an->n_groups] = an->n_members;
	}
	free(picked);
	return PM_OK;
}

static int group_has(const struct anatomy *an, size_t g, uint32_t c)
{
	for (size_t i = an->group_off[g]; i < an->group_off[g + 1]; i++)
		if (an->member_class[i] == c)
			return 1;
	for (size_t i = 0; i < an->n_extra; i++)
		if (an->extra_group[i] == g && an->extra_class[i] == c)
			return 1;
	return 0;
}

/* Puts row (of class c) into a random group that lacks c. */
static enum pm_status place_one(struct anatomy *an, uint32_t row, uint32_t c, struct pm_error *err)
{
	char clip[ERROR_CLIP_SIZE];
	size_t n_free = 0, pick;

	for (size_t g = 0; g < an->n_groups; g++)
		n_free += !group_has(an, g, c);
	if (n_free == 0)
		return error_set(err, PM_ERR_INTERNAL, "",
				 "anatomy: no group lacks SA value \"%s\" for a residual record",
				 error_clip(an->cls[c].value, clip));
	pick = random_below(an, n_free);
	for (size_t g = 0; g < an->n_groups; g++)
		if (!group_has(an, g, c) && pick-- == 0) {
			an->extra_group[an->n_extra] = (uint32_t)g;
			break;
		}
	an->extra_row[an->n_extra] = row;
	an->extra_class[an->n_extra++] = c;
	return PM_OK;
}

/* The residue: fewer than l records, of distinct values when eligible. */
static enum pm_status place_residue(struct anatomy *an, struct pm_error *err)
{
	size_t left = 0;
	enum pm_status st = PM_OK;

	for (size_t c = 0; c < an->n_classes; c++)
		left += an->cls[c].n;
	an->extra_group = malloc((left + 1) * sizeof *an->extra_group);
	an->extra_row = malloc((left + 1) * sizeof *an->extra_row);
	an->extra_class = malloc((left + 1) * sizeof *an->extra_class);
	if (!an->extra_group || !an->extra_row || !an->extra_class)
		return error_set(err, PM_ERR_NOMEM, "", "out of memory in anatomy");
	for (uint32_t c = 0; c < an->n_classes && !st; c++)
		while (an->cls[c].n && !st)
			st = place_one(an, take_random(an, c), c, err);
	return st;
}

static enum pm_status add_row(struct dataset_builder *b, const struct anatomy *an, uint32_t row,
			      const size_t *cols, size_t n_qi, const char *label,
			      struct pm_error *err)
{
	const char *qi[DATASET_MAX_ATTRS];
	char *const *cells = an->t->cells + (size_t)row * an->t->n_cols;

	for (size_t a = 0; a < n_qi; a++)
		qi[a] = cells[cols[a]];
	return dataset_builder_add_record(b, qi, label, cells[an->sa], err);
}

/* Records form, group by group: members, then residual records. */
static enum pm_status emit(const struct anatomy *an, struct dataset_builder *b, const size_t *cols,
			   size_t n_qi, struct dataset **out, struct pm_error *err)
{
	enum pm_status st = PM_OK;
	char label[32];

	for (size_t g = 0; g < an->n_groups && !st; g++) {
		snprintf(label, sizeof label, "%zu", g + 1);
		for (size_t i = an->group_off[g]; i < an->group_off[g + 1] && !st; i++)
			st = add_row(b, an, an->members[i], cols, n_qi, label, err);
		for (size_t i = 0; i < an->n_extra && !st; i++)
			if (an->extra_group[i] == g)
				st = add_row(b, an, an->extra_row[i], cols, n_qi, label, err);
	}
	return st ? st : dataset_builder_finish(b, out, err);
}

static void anatomy_free(struct anatomy *an)
{
	free(an->cls);
	free(an->rows);
	free(an->heap);
	free(an->members);
	free(an->member_class);
	free(an->group_off);
	free(an->extra_group);
	free(an->extra_row);
	free(an->extra_class);
}

enum pm_status anatomy_run(const struct csv_table *t, const char *sa_col,
			   const char *const *qi_cols, size_t n_qi, const struct anatomy_options *o,
			   struct dataset **out, size_t *n_set_aside, struct pm_error *err)
{
	struct anatomy an = {.t = t};
	struct dataset_builder *b = NULL;
	size_t cols[DATASET_MAX_ATTRS], aside = 0;
	enum pm_status st;

	if (out)
		*out = NULL;
	st = out ? check_args(t, sa_col, qi_cols, n_qi, o, &an.sa, cols, err)
		 : error_set(err, PM_ERR_INTERNAL, "", "no output");
	if (st)
		goto out;
	an.l = o->l;
	an.rng = o->seed;
	st = make_classes(&an, err);
	if (!st)
		st = make_eligible(&an, o->set_aside, &aside, err);
	if (!st)
		st = form_groups(&an, err);
	if (!st)
		st = place_residue(&an, err);
	if (!st && !(b = dataset_builder_create(NULL, qi_cols, n_qi, sa_col, err)))
		st = err ? err->status : PM_ERR_NOMEM;
	if (!st)
		st = emit(&an, b, cols, n_qi, out, err);
out:
	anatomy_free(&an);
	dataset_builder_destroy(b);
	if (n_set_aside)
		*n_set_aside = aside;
	return st;
}
