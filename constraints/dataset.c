/*
 * The dataset model. A builder collects strings, either as original records
 * (records form) or as the QIT and ST of a published Anatomy table
 * (published form), then validates them and dictionary-encodes them into the
 * flat arrays of struct dataset.
 *
 * Strings are interned as they arrive (provisional ids in order of first
 * appearance, found through an open-addressing hash table), so finishing is
 * O(N log N) at worst, never O(N^2) in the records.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "constraints.h"

#define MAX_ROWS ((size_t)UINT32_MAX - 1)

enum form { FORM_NONE = 0, FORM_RECORDS, FORM_PUBLISHED };

/* Distinct strings in order of first appearance. slot[] holds index + 1,
 * 0 marks an empty slot; n_slots is a power of two kept over 2 * n. */
struct interner {
	size_t n, cap;
	char **str;
	uint64_t *hash;
	uint32_t *slot;
	size_t n_slots;
};

struct dataset_builder {
	char *name;
	size_t n_attrs;
	char **attr_names;
	char *sa_name;
	enum form form;
	struct interner *values; /* n_attrs, QI values */
	struct interner sa, groups;
	struct interner st_groups; /* ST group labels, resolved against groups at finish */
	/* records or QIT rows: row_qi is n_rows * n_attrs provisional ids */
	size_t n_rows, row_cap;
	uint32_t *row_qi, *row_group, *row_sa;
	/* ST rows */
	size_t n_st, st_cap;
	uint32_t *st_group, *st_sa, *st_count;
};

/* ---- interner ----------------------------------------------------------- */

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < n; i++) {
		h ^= c[i];
		h *= 1099511628211ULL; /* FNV-1a */
	}
	return h;
}

static uint64_t hash_str(const char *s)
{
	return hash_bytes(14695981039346656037ULL, s, strlen(s));
}

static int interner_rehash(struct interner *in)
{
	size_t n = in->n_slots ? in->n_slots * 2 : 64;
	uint32_t *slot = calloc(n, sizeof *slot);

	if (!slot)
		return -1;
	for (size_t i = 0; i < in->n; i++) {
		size_t j = in->hash[i] & (n - 1);

		while (slot[j])
			j = (j + 1) & (n - 1);
		slot[j] = (uint32_t)(i + 1);
	}
	free(in->slot);
	in->slot = slot;
	in->n_slots = n;
	return 0;
}

/* Slot where s lives, or the empty slot where it would go. */
static size_t interner_probe(const struct interner *in, const char *s, uint64_t h)
{
	size_t mask = in->n_slots - 1;
	size_t j = h & mask;

	for (; in->slot[j]; j = (j + 1) & mask) {
		uint32_t i = in->slot[j] - 1;

		if (in->hash[i] == h && strcmp(in->str[i], s) == 0)
			break;
	}
	return j;
}

static long interner_find(const struct interner *in, const char *s)
{
	size_t j;

	if (!in->n_slots)
		return -1;
	j = interner_probe(in, s, hash_str(s));
	return in->slot[j] ? (long)in->slot[j] - 1 : -1;
}

static enum pm_status interner_add(struct interner *in, const char *s, uint32_t *id)
{
	uint64_t h = hash_str(s);
	size_t j;

	if ((in->n + 1) * 2 > in->n_slots && interner_rehash(in))
		return PM_ERR_NOMEM;
	j = interner_probe(in, s, h);
	if (in->slot[j]) {
		*id = in->slot[j] - 1;
		return PM_OK;
	}
	if (in->n == in->cap) {
		size_t cap = in->cap ? in->cap * 2 : 16;
		char **str = realloc(in->str, cap * sizeof *str);
		uint64_t *hash;

		if (!str)
			return PM_ERR_NOMEM;
		in->str = str;
		hash = realloc(in->hash, cap * sizeof *hash);
		if (!hash)
			return PM_ERR_NOMEM;
		in->hash = hash;
		in->cap = cap;
	}
	if (!(in->str[in->n] = strdup(s)))
		return PM_ERR_NOMEM;
	in->hash[in->n] = h;
	in->slot[j] = (uint32_t)(in->n + 1);
	*id = (uint32_t)in->n++;
	return PM_OK;
}

static void interner_clear(struct interner *in)
{
	for (size_t i = 0; i < in->n; i++)
		free(in->str[i]);
	free(in->str);
	free(in->hash);
	free(in->slot);
	memset(in, 0, sizeof *in);
}

/* ---- builder ------------------------------------------------------------ */

/* s within a length limit (DATASET_MAX_*). strnlen stops past the limit, so
 * a name of 64 MiB is refused as fast as a short one is accepted. */
static enum pm_status check_length(const char *s, size_t max, const char *field, const char *what,
				   struct pm_error *err)
{
	size_t n = strnlen(s, max + 1);

	if (n <= max)
		return PM_OK;
	return error_set(err, PM_ERR_INPUT, field,
			 "is %zu bytes long; %s may have at most %zu bytes", strlen(s), what, max);
}

static enum pm_status check_attr_name(const char *const *attr_names, size_t i, struct pm_error *err)
{
	char field[64], clip[ERROR_CLIP_SIZE];

	snprintf(field, sizeof field, "qi_attributes[%zu]", i);
	if (!attr_names[i])
		return error_set(err, PM_ERR_INPUT, field, "is missing");
	if (!attr_names[i][0])
		return error_set(err, PM_ERR_INPUT, field, "is an empty attribute name");
	if (check_length(attr_names[i], DATASET_MAX_ATTR_NAME, field, "an attribute name", err))
		return PM_ERR_INPUT;
	for (size_t j = 0; j < i; j++)
		if (strcmp(attr_names[i], attr_names[j]) == 0)
			return error_set(err, PM_ERR_INPUT, field,
					 "repeats attribute \"%s\" (qi_attributes[%zu])",
					 error_clip(attr_names[i], clip), j);
	return PM_OK;
}

static enum pm_status check_names(const char *name, const char *const *attr_names, size_t n_attrs,
				  const char *sa_name, struct pm_error *err)
{
	char clip[ERROR_CLIP_SIZE];

	if (name && check_length(name, DATASET_MAX_NAME, "name", "a dataset name", err))
		return PM_ERR_INPUT;
	if (!attr_names || n_attrs == 0)
		return error_set(err, PM_ERR_INPUT, "qi_attributes",
				 "is empty; at least one QI attribute is needed");
	if (n_attrs > DATASET_MAX_ATTRS)
		return error_set(err, PM_ERR_INPUT, "qi_attributes",
				 "has %zu attributes; at most %d are supported", n_attrs,
				 DATASET_MAX_ATTRS);
	for (size_t i = 0; i < n_attrs; i++)
		if (check_attr_name(attr_names, i, err))
			return PM_ERR_INPUT;
	if (!sa_name)
		return error_set(err, PM_ERR_INPUT, "sa_attribute", "is missing");
	if (!sa_name[0])
		return error_set(err, PM_ERR_INPUT, "sa_attribute", "is an empty attribute name");
	if (check_length(sa_name, DATASET_MAX_ATTR_NAME, "sa_attribute", "an attribute name", err))
		return PM_ERR_INPUT;
	for (size_t i = 0; i < n_attrs; i++)
		if (strcmp(sa_name, attr_names[i]) == 0)
			return error_set(err, PM_ERR_INPUT, "sa_attribute",
					 "\"%s\" is also a QI attribute (qi_attributes[%zu])",
					 error_clip(sa_name, clip), i);
	return PM_OK;
}

struct dataset_builder *dataset_builder_create(const char *name, const char *const *attr_names,
					       size_t n_attrs, const char *sa_name,
					       struct pm_error *err)
{
	struct dataset_builder *b;
	int ok;

	if (check_names(name, attr_names, n_attrs, sa_name, err))
		return NULL;
	b = calloc(1, sizeof *b);
	if (!b)
		goto nomem;
	b->n_attrs = n_attrs;
	b->attr_names = calloc(n_attrs, sizeof *b->attr_names);
	b->values = calloc(n_attrs, sizeof *b->values);
	b->sa_name = strdup(sa_name);
	ok = b->attr_names && b->values && b->sa_name;
	if (name && !(b->name = strdup(name)))
		ok = 0;
	for (size_t i = 0; ok && i < n_attrs; i++)
		ok = (b->attr_names[i] = strdup(attr_names[i])) != NULL;
	if (ok)
		return b;
nomem:
	dataset_builder_destroy(b);
	error_set(err, PM_ERR_NOMEM, "", "out of memory creating a dataset");
	return NULL;
}

static void builder_clear(struct dataset_builder *b)
{
	for (size_t a = 0; a < b->n_attrs; a++)
		interner_clear(&b->values[a]);
	interner_clear(&b->sa);
	interner_clear(&b->groups);
	interner_clear(&b->st_groups);
	free(b->row_qi);
	free(b->row_group);
	free(b->row_sa);
	free(b->st_group);
	free(b->st_sa);
	free(b->st_count);
	b->row_qi = b->row_group = b->row_sa = NULL;
	b->st_group = b->st_sa = b->st_count = NULL;
	b->n_rows = b->row_cap = b->n_st = b->st_cap = 0;
	b->form = FORM_NONE;
}

void dataset_builder_destroy(struct dataset_builder *b)
{
	if (!b)
		return;
	if (b->values)
		builder_clear(b);
	for (size_t i = 0; b->attr_names && i < b->n_attrs; i++)
		free(b->attr_names[i]);
	free(b->attr_names);
	free(b->values);
	free(b->sa_name);
	free(b->name);
	free(b);
}

/* Grows *p to cap * per elements; 0 on success (all row arrays are uint32_t). */
static int grow(uint32_t **p, size_t cap, size_t per)
{
	uint32_t *q = realloc(*p, cap * per * sizeof *q);

	if (!q)
		return -1;
	*p = q;
	return 0;
}

static enum pm_status check_form(struct dataset_builder *b, enum form form, struct pm_error *err)
{
	if (!b)
		return error_set(err, PM_ERR_INTERNAL, "", "no dataset builder");
	if (b->form != FORM_NONE && b->form != form)
		return error_set(err, PM_ERR_INPUT, "",
				 "records cannot be mixed with published (qit/st) rows");
	return PM_OK;
}

static enum pm_status check_row(struct dataset_builder *b, enum form form, const char *const *qi,
				const char *group, struct pm_error *err)
{
	char field[32];
	enum pm_status st = check_form(b, form, err);

	if (st)
		return st;
	if (!qi)
		return error_set(err, PM_ERR_INPUT, "qi", "is missing");
	for (size_t a = 0; a < b->n_attrs; a++) {
		/* the field is named only for a message: no snprintf per
		 * value on the path every value takes */
		if (qi[a] && strnlen(qi[a], DATASET_MAX_VALUE + 1) <= DATASET_MAX_VALUE)
			continue;
		snprintf(field, sizeof field, "qi[%zu]", a);
		if (!qi[a])
			return error_set(err, PM_ERR_INPUT, field, "is missing");
		return check_length(qi[a], DATASET_MAX_VALUE, field, "a value", err);
	}
	if (!group)
		return error_set(err, PM_ERR_INPUT, "group", "is missing");
	if (check_length(group, DATASET_MAX_GROUP, "group", "a group label", err))
		return PM_ERR_INPUT;
	if (b->n_rows >= MAX_ROWS)
		return error_set(err, PM_ERR_INPUT, "", "too many rows (at most %zu)", MAX_ROWS);
	return PM_OK;
}

static enum pm_status add_row(struct dataset_builder *b, const char *const *qi, const char *group,
			      const char *sa, struct pm_error *err)
{
	enum pm_status st = PM_OK;
	uint32_t *row;

	if (b->n_rows == b->row_cap) {
		size_t cap = b->row_cap ? b->row_cap * 2 : 64;

		if (grow(&b->row_qi, cap, b->n_attrs) || grow(&b->row_group, cap, 1) ||
		    grow(&b->row_sa, cap, 1))
			goto nomem;
		b->row_cap = cap;
	}
	row = b->row_qi + b->n_rows * b->n_attrs;
	for (size_t a = 0; a < b->n_attrs && !st; a++)
		st = interner_add(&b->values[a], qi[a], &row[a]);
	if (!st)
		st = interner_add(&b->groups, group, &b->row_group[b->n_rows]);
	b->row_sa[b->n_rows] = DATASET_NO_SA;
	if (!st && sa)
		st = interner_add(&b->sa, sa, &b->row_sa[b->n_rows]);
	if (st)
		goto nomem;
	b->n_rows++;
	return PM_OK;
nomem:
	return error_set(err, PM_ERR_NOMEM, "", "out of memory adding a row");
}

enum pm_status dataset_builder_add_record(struct dataset_builder *b, const char *const *qi,
					  const char *group, const char *sa, struct pm_error *err)
{
	enum pm_status st = check_row(b, FORM_RECORDS, qi, group, err);

	if (st)
		return st;
	if (!sa)
		return error_set(err, PM_ERR_INPUT, "sa", "is missing");
	if (check_length(sa, DATASET_MAX_VALUE, "sa", "a value", err))
		return PM_ERR_INPUT;
	st = add_row(b, qi, group, sa, err);
	if (!st)
		b->form = FORM_RECORDS;
	return st;
}

enum pm_status dataset_builder_add_qit(struct dataset_builder *b, const char *const *qi,
				       const char *group, struct pm_error *err)
{
	enum pm_status st = check_row(b, FORM_PUBLISHED, qi, group, err);

	if (st)
		return st;
	st = add_row(b, qi, group, NULL, err);
	if (!st)
		b->form = FORM_PUBLISHED;
	return st;
}

enum pm_status dataset_builder_add_st(struct dataset_builder *b, const char *group, const char *sa,
				      long long count, struct pm_error *err)
{
	enum pm_status st = check_form(b, FORM_PUBLISHED, err);

	if (st)
		return st;
	if (!group)
		return error_set(err, PM_ERR_INPUT, "group", "is missing");
	if (!sa)
		return error_set(err, PM_ERR_INPUT, "sa", "is missing");
	if (check_length(group, DATASET_MAX_GROUP, "group", "a group label", err) ||
	    check_length(sa, DATASET_MAX_VALUE, "sa", "a value", err))
		return PM_ERR_INPUT;
	if (count < 1)
		return error_set(err, PM_ERR_INPUT, "count", "must be at least 1 (got %lld)",
				 count);
	if (count > (long long)MAX_ROWS)
		return error_set(err, PM_ERR_INPUT, "count", "is too large (got %lld, at most %zu)",
				 count, MAX_ROWS);
	if (b->n_st >= MAX_ROWS)
		return error_set(err, PM_ERR_INPUT, "", "too many st rows (at most %zu)", MAX_ROWS);
	if (b->n_st == b->st_cap) {
		size_t cap = b->st_cap ? b->st_cap * 2 : 64;

		if (grow(&b->st_group, cap, 1) || grow(&b->st_sa, cap, 1) ||
		    grow(&b->st_count, cap, 1))
			goto nomem;
		b->st_cap = cap;
	}
	if (interner_add(&b->st_groups, group, &b->st_group[b->n_st]) ||
	    interner_add(&b->sa, sa, &b->st_sa[b->n_st]))
		goto nomem;
	b->st_count[b->n_st++] = (uint32_t)count;
	b->form = FORM_PUBLISHED;
	return PM_OK;
nomem:
	return error_set(err, PM_ERR_NOMEM, "", "out of memory adding an st row");
}

/* ---- finish: validation ------------------------------------------------- */

static enum pm_status check_nonempty(const struct dataset_builder *b, struct pm_error *err)
{
	if (b->form == FORM_NONE)
		return error_set(err, PM_ERR_INPUT, "records", "is empty");
	if (b->form == FORM_PUBLISHED && b->n_rows == 0)
		return error_set(err, PM_ERR_INPUT, "qit", "is empty");
	if (b->form == FORM_PUBLISHED && b->n_st == 0)
		return error_set(err, PM_ERR_INPUT, "st", "is empty");
	return PM_OK;
}

/* Published form: turns st_group into QIT group ids and checks that each
 * group's ST counts add up to its number of QIT rows. */
static enum pm_status resolve_st(struct dataset_builder *b, struct pm_error *err)
{
	size_t n_groups = b->groups.n;
	uint64_t *sum = calloc(n_groups, sizeof *sum);
	uint64_t *rows = calloc(n_groups, sizeof *rows);
	enum pm_status st = PM_OK;
	char field[48], clip[ERROR_CLIP_SIZE];

	if (!sum || !rows) {
		st = error_set(err, PM_ERR_NOMEM, "", "out of memory checking the st");
		goto out;
	}
	for (size_t i = 0; i < b->n_st; i++) {
		const char *label = b->st_groups.str[b->st_group[i]];
		long g = interner_find(&b->groups, label);

		if (g < 0) {
			snprintf(field, sizeof field, "st[%zu].group", i);
			st = error_set(err, PM_ERR_INPUT, field,
				       "group \"%s\" does not occur in the qit",
				       error_clip(label, clip));
			goto out;
		}
		b->st_group[i] = (uint32_t)g;
		sum[g] += b->st_count[i];
	}
	for (size_t r = 0; r < b->n_rows; r++)
		rows[b->row_group[r]]++;
	for (size_t g = 0; g < n_groups && !st; g++)
		if (sum[g] == 0)
			st = error_set(err, PM_ERR_INPUT, "qit", "group \"%s\" has no st rows",
				       error_clip(b->groups.str[g], clip));
	for (size_t g = 0; g < n_groups && !st; g++)
		if (sum[g] != rows[g])
			st = error_set(err, PM_ERR_INPUT, "st",
				       "counts of group \"%s\" sum to %llu, but the qit has %llu "
				       "rows in that group",
				       error_clip(b->groups.str[g], clip),
				       (unsigned long long)sum[g], (unsigned long long)rows[g]);
out:
	free(sum);
	free(rows);
	return st;
}

/* ---- finish: encoding --------------------------------------------------- */

struct sort_item {
	const char *s;
	uint32_t id;
};

static int cmp_sort_item(const void *pa, const void *pb)
{
	const struct sort_item *a = pa, *b = pb;

	return strcmp(a->s, b->s);
}

/* Moves the interned strings into d in bytewise order; remap[old] = new. */
static enum pm_status build_dict(struct interner *in, struct dict *d, uint32_t **remap)
{
	size_t n = in->n;
	struct sort_item *items = malloc((n ? n : 1) * sizeof *items);

	*remap = malloc((n ? n : 1) * sizeof **remap);
	d->str = malloc((n ? n : 1) * sizeof *d->str);
	if (!items || !*remap || !d->str) {
		free(items);
		return PM_ERR_NOMEM;
	}
	for (size_t i = 0; i < n; i++)
		items[i] = (struct sort_item){in->str[i], (uint32_t)i};
	qsort(items, n, sizeof *items, cmp_sort_item);
	for (size_t k = 0; k < n; k++) {
		d->str[k] = in->str[items[k].id];
		(*remap)[items[k].id] = (uint32_t)k;
	}
	d->n = n;
	in->n = 0; /* the strings now belong to d */
	free(items);
	return PM_OK;
}

static enum pm_status encode_values(struct dataset_builder *b, struct dataset *ds)
{
	uint32_t *remap = NULL;
	enum pm_status st = PM_OK;

	for (size_t a = 0; a < b->n_attrs && !st; a++) {
		st = build_dict(&b->values[a], &ds->attr_values[a], &remap);
		for (size_t r = 0; !st && r < b->n_rows; r++)
			b->row_qi[r * b->n_attrs + a] = remap[b->row_qi[r * b->n_attrs + a]];
		free(remap);
		remap = NULL;
	}
	if (!st)
		st = build_dict(&b->sa, &ds->sa_values, &remap);
	for (size_t r = 0; !st && r < b->n_rows; r++)
		if (b->row_sa[r] != DATASET_NO_SA)
			b->row_sa[r] = remap[b->row_sa[r]];
	for (size_t i = 0; !st && i < b->n_st; i++)
		b->st_sa[i] = remap[b->st_sa[i]];
	free(remap);
	return st;
}

static uint64_t hash_tuple(const uint32_t *t, size_t n)
{
	return hash_bytes(14695981039346656037ULL, t, n * sizeof *t);
}

/* Open addressing over a hash of the codes (see constraints.h). */
enum pm_status dataset_intern_tuples(struct dataset *ds, size_t n, size_t na,
				     void (*row_at)(const void *ctx, size_t r, uint32_t *row),
				     const void *ctx)
{
	size_t n_slots = 64, mask;
	uint32_t row[DATASET_MAX_ATTRS], *slot;

	while (n_slots < 2 * n)
		n_slots *= 2;
	mask = n_slots - 1;
	slot = calloc(n_slots, sizeof *slot);
	ds->rec_tuple = malloc((n ? n : 1) * sizeof *ds->rec_tuple);
	ds->tuples = malloc((n ? n : 1) * na * sizeof *ds->tuples);
	ds->tuple_count = calloc(n ? n : 1, sizeof *ds->tuple_count);
	if (!slot || !ds->rec_tuple || !ds->tuples || !ds->tuple_count) {
		free(slot);
		return PM_ERR_NOMEM;
	}
	for (size_t r = 0; r < n; r++) {
		size_t j;

		row_at(ctx, r, row);
		for (j = hash_tuple(row, na) & mask; slot[j]; j = (j + 1) & mask)
			if (!memcmp(ds->tuples + (size_t)(slot[j] - 1) * na, row, na * sizeof *row))
				break;
		if (!slot[j]) {
			memcpy(ds->tuples + ds->n_tuples * na, row, na * sizeof *row);
			slot[j] = (uint32_t)++ds->n_tuples;
		}
		ds->rec_tuple[r] = slot[j] - 1;
		ds->tuple_count[slot[j] - 1]++;
	}
	free(slot);
	return PM_OK;
}

static void builder_row(const void *ctx, size_t r, uint32_t *row)
{
	const struct dataset_builder *b = ctx;

	memcpy(row, b->row_qi + r * b->n_attrs, b->n_attrs * sizeof *row);
}

struct triple {
	uint32_t g, k, w;
};

static int cmp_triple(const void *pa, const void *pb)
{
	const struct triple *a = pa, *b = pb;

	if (a->g != b->g)
		return a->g < b->g ? -1 : 1;
	if (a->k != b->k)
		return a->k < b->k ? -1 : 1;
	return 0;
}

/* Bucket CSR from (group, key, weight) triples: distinct keys of each group
 * ascending, with summed weights. Sorts t in place. */
static enum pm_status bucket_csr(struct triple *t, size_t n, size_t n_groups, size_t **off,
				 uint32_t **key, uint32_t **count)
{
	size_t runs = 0;

	qsort(t, n, sizeof *t, cmp_triple);
	*off = calloc(n_groups + 1, sizeof **off);
	*key = malloc((n ? n : 1) * sizeof **key);
	*count = malloc((n ? n : 1) * sizeof **count);
	if (!*off || !*key || !*count)
		return PM_ERR_NOMEM;
	for (size_t i = 0; i < n; i++) {
		if (i == 0 || t[i].g != t[i - 1].g || t[i].k != t[i - 1].k) {
			(*key)[runs] = t[i].k;
			(*count)[runs++] = 0;
			(*off)[t[i].g + 1]++;
		}
		(*count)[runs - 1] += t[i].w;
	}
	for (size_t g = 0; g < n_groups; g++)
		(*off)[g + 1] += (*off)[g];
	return PM_OK;
}

static enum pm_status encode_buckets(const struct dataset_builder *b, struct dataset *ds)
{
	size_t n = ds->n_records, n_t = b->form == FORM_RECORDS ? n : b->n_st;
	struct triple *t = malloc(((n > n_t ? n : n_t) + 1) * sizeof *t);
	enum pm_status st;

	ds->group_size = calloc(ds->n_groups, sizeof *ds->group_size);
	if (!t || !ds->group_size) {
		free(t);
		return PM_ERR_NOMEM;
	}
	for (size_t r = 0; r < n; r++) {
		ds->group_size[ds->rec_group[r]]++;
		t[r] = (struct triple){ds->rec_group[r], ds->rec_tuple[r], 1};
	}
	st = bucket_csr(t, n, ds->n_groups, &ds->bq_off, &ds->bq_tuple, &ds->bq_count);
	for (size_t i = 0; !st && i < n_t; i++)
		t[i] = b->form == FORM_RECORDS
			   ? (struct triple){ds->rec_group[i], ds->rec_sa[i], 1}
			   : (struct triple){b->st_group[i], b->st_sa[i], b->st_count[i]};
	if (!st)
		st = bucket_csr(t, n_t, ds->n_groups, &ds->bs_off, &ds->bs_value, &ds->bs_count);
	free(t);
	return st;
}

static enum pm_status copy_names(const struct dataset_builder *b, struct dataset *ds)
{
	ds->n_attrs = b->n_attrs;
	ds->attr_names = calloc(b->n_attrs, sizeof *ds->attr_names);
	ds->attr_values = calloc(b->n_attrs, sizeof *ds->attr_values);
	ds->sa_name = strdup(b->sa_name);
	if (!ds->attr_names || !ds->attr_values || !ds->sa_name)
		return PM_ERR_NOMEM;
	if (b->name && !(ds->name = strdup(b->name)))
		return PM_ERR_NOMEM;
	for (size_t a = 0; a < b->n_attrs; a++)
		if (!(ds->attr_names[a] = strdup(b->attr_names[a])))
			return PM_ERR_NOMEM;
	return PM_OK;
}

/* Builds ds from the validated rows of b, taking over what it can. */
static enum pm_status encode(struct dataset_builder *b, struct dataset *ds)
{
	enum pm_status st = copy_names(b, ds);

	if (!st)
		st = encode_values(b, ds);
	if (!st)
		st = dataset_intern_tuples(ds, b->n_rows, b->n_attrs, builder_row, b);
	if (st)
		return st;
	ds->has_ground_truth = b->form == FORM_RECORDS;
	ds->n_records = b->n_rows;
	ds->rec_group = b->row_group;
	ds->rec_sa = b->row_sa;
	b->row_group = b->row_sa = NULL;
	ds->n_groups = b->groups.n;
	ds->group_labels = b->groups.str;
	b->groups.str = NULL;
	b->groups.n = 0;
	return encode_buckets(b, ds);
}

enum pm_status dataset_builder_finish(struct dataset_builder *b, struct dataset **out,
				      struct pm_error *err)
{
	struct dataset *ds = NULL;
	enum pm_status st;

	if (!b || !out)
		return error_set(err, PM_ERR_INTERNAL, "", "no dataset builder or output");
	*out = NULL;
	st = check_nonempty(b, err);
	if (!st && b->form == FORM_PUBLISHED)
		st = resolve_st(b, err);
	if (st)
		goto out;
	ds = calloc(1, sizeof *ds);
	st = ds ? encode(b, ds) : PM_ERR_NOMEM;
	if (!st)
		st = postings_init(ds, &ds->by_value);
	if (st) {
		error_set(err, st, "", "out of memory encoding the dataset");
		goto out;
	}
	*out = ds;
	ds = NULL;
out:
	dataset_destroy(ds);
	builder_clear(b);
	return st;
}

/* ---- dataset ------------------------------------------------------------ */

static void free_strings(char **s, size_t n)
{
	for (size_t i = 0; s && i < n; i++)
		free(s[i]);
	free(s);
}

void dataset_destroy(struct dataset *ds)
{
	if (!ds)
		return;
	free(ds->name);
	free_strings(ds->attr_names, ds->n_attrs);
	free(ds->sa_name);
	for (size_t a = 0; ds->attr_values && a < ds->n_attrs; a++)
		dict_finish(&ds->attr_values[a]);
	free(ds->attr_values);
	dict_finish(&ds->sa_values);
	free(ds->rec_tuple);
	free(ds->rec_group);
	free(ds->rec_sa);
	free(ds->tuples);
	free(ds->tuple_count);
	free_strings(ds->group_labels, ds->n_groups);
	free(ds->group_size);
	free(ds->bq_off);
	free(ds->bq_tuple);
	free(ds->bq_count);
	free(ds->bs_off);
	free(ds->bs_value);
	free(ds->bs_count);
	postings_finish(&ds->by_value);
	free(ds);
}

const char *dataset_tuple_value(const struct dataset *ds, uint32_t q, size_t a)
{
	if (!ds || q >= ds->n_tuples || a >= ds->n_attrs)
		return NULL;
	return ds->attr_values[a].str[ds->tuples[(size_t)q * ds->n_attrs + a]];
}

long dataset_attr_index(const struct dataset *ds, const char *name)
{
	if (!ds || !name)
		return -1;
	for (size_t a = 0; a < ds->n_attrs; a++)
		if (strcmp(ds->attr_names[a], name) == 0)
			return (long)a;
	return -1;
}
