/*
 * The packed form of a dataset: what the store keeps (issue 25), so that a
 * table of 10M records is a few hundred megabytes of columns rather than
 * the gigabytes of its JSON text, and reads back without a JSON parser.
 *
 * Layout (integers little-endian; a string is u32 length + bytes, no NUL):
 *   "PMDS", u8 version (1), u8 flags (1: named, 2: records form), u16 0
 *   u32 n_attrs, u64 n_records, u32 n_groups
 *   [name] sa_name, n_attrs attribute names
 *   n_attrs value dictionaries, the SA dictionary (u32 n, n strings)
 *   n_groups group labels, in order of first appearance
 *   per attribute, the group and (records form) the SA: a column of
 *     n_records codes, u8 width (1, 2 or 4 bytes) then the codes
 *   published form: per group, u32 n then n (u32 SA code, u32 count)
 * Unpacking builds the dataset from the codes directly (no string is
 * looked up: time linear in the codes), after checking all that the
 * dataset builder would: names, dictionaries sorted and distinct with
 * every value used, value lengths, groups in order of first appearance,
 * the ST's counts. So a damaged blob is an error, never a dataset the
 * builder could not have made; and an intact one gives every array
 * exactly as the builder made it (tests/test_dataset_pack compares them).
 */
#include <stdlib.h>
#include <string.h>

#include "constraints.h"

#define PACK_MAGIC   "PMDS"
#define PACK_VERSION 1
#define FLAG_NAMED   1
#define FLAG_RECORDS 2

/* ---- writing -------------------------------------------------------------- */

struct writer {
	unsigned char *p; /* NULL: only count */
	size_t len;
};

static void put_bytes(struct writer *w, const void *s, size_t n)
{
	if (w->p)
		memcpy(w->p + w->len, s, n);
	w->len += n;
}

static void put_uint(struct writer *w, uint64_t v, size_t width)
{
	unsigned char b[8];

	for (size_t i = 0; i < width; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	put_bytes(w, b, width);
}

static void put_str(struct writer *w, const char *s)
{
	size_t n = strlen(s);

	put_uint(w, n, 4);
	put_bytes(w, s, n);
}

static void put_strs(struct writer *w, char *const *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		put_str(w, s[i]);
}

static size_t width_of(size_t n_codes)
{
	return n_codes <= 0x100 ? 1 : n_codes <= 0x10000 ? 2 : 4;
}

/* Column a of the records (a < n_attrs: attribute a's value codes;
 * n_attrs: groups; n_attrs + 1: SA codes). */
static void put_column(struct writer *w, const struct dataset *ds, size_t a)
{
	size_t na = ds->n_attrs;
	size_t n_codes = a < na ? ds->attr_values[a].n : a == na ? ds->n_groups : ds->sa_values.n;
	size_t width = width_of(n_codes);

	put_uint(w, width, 1);
	for (size_t i = 0; i < ds->n_records; i++) {
		uint32_t code = a < na	  ? ds->tuples[(size_t)ds->rec_tuple[i] * na + a]
				: a == na ? ds->rec_group[i]
					  : ds->rec_sa[i];
		if (w->p) {
			for (size_t k = 0; k < width; k++)
				w->p[w->len + k] = (unsigned char)(code >> (8 * k));
		}
		w->len += width;
	}
}

static void put_dataset(struct writer *w, const struct dataset *ds)
{
	put_bytes(w, PACK_MAGIC, 4);
	put_uint(w, PACK_VERSION, 1);
	put_uint(w, (ds->name ? FLAG_NAMED : 0) | (ds->has_ground_truth ? FLAG_RECORDS : 0), 1);
	put_uint(w, 0, 2);
	put_uint(w, ds->n_attrs, 4);
	put_uint(w, ds->n_records, 8);
	put_uint(w, ds->n_groups, 4);
	if (ds->name)
		put_str(w, ds->name);
	put_str(w, ds->sa_name);
	put_strs(w, ds->attr_names, ds->n_attrs);
	for (size_t a = 0; a < ds->n_attrs; a++) {
		put_uint(w, ds->attr_values[a].n, 4);
		put_strs(w, ds->attr_values[a].str, ds->attr_values[a].n);
	}
	put_uint(w, ds->sa_values.n, 4);
	put_strs(w, ds->sa_values.str, ds->sa_values.n);
	put_strs(w, ds->group_labels, ds->n_groups);
	for (size_t a = 0; a < ds->n_attrs + 1 + (ds->has_ground_truth != 0); a++)
		put_column(w, ds, a);
	for (size_t b = 0; !ds->has_ground_truth && b < ds->n_groups; b++) {
		put_uint(w, ds->bs_off[b + 1] - ds->bs_off[b], 4);
		for (size_t i = ds->bs_off[b]; i < ds->bs_off[b + 1]; i++) {
			put_uint(w, ds->bs_value[i], 4);
			put_uint(w, ds->bs_count[i], 4);
		}
	}
}

enum pm_status dataset_pack(const struct dataset *ds, unsigned char **out, size_t *len,
			    struct pm_error *err)
{
	struct writer w = {NULL, 0};

	*out = NULL;
	*len = 0;
	if (!ds)
		return error_set(err, PM_ERR_INTERNAL, "", "no dataset to pack");
	put_dataset(&w, ds); /* counts */
	if (!(w.p = malloc(w.len ? w.len : 1)))
		return error_set(err, PM_ERR_NOMEM, "", "out of memory packing a dataset");
	*len = w.len;
	w.len = 0;
	put_dataset(&w, ds);
	*out = w.p;
	return PM_OK;
}

/* ---- reading -------------------------------------------------------------- */

struct reader {
	const unsigned char *p;
	size_t len, at;
	int bad; /* ran past the end or met a malformed string */
};

static int has(struct reader *r, size_t n)
{
	if (r->bad || n > r->len - r->at)
		r->bad = 1;
	return !r->bad;
}

static uint64_t get_uint(struct reader *r, size_t width)
{
	uint64_t v = 0;

	if (!has(r, width))
		return 0;
	for (size_t i = 0; i < width; i++)
		v |= (uint64_t)r->p[r->at + i] << (8 * i);
	r->at += width;
	return v;
}

/* The next string, NUL-terminated (malloc'd), or NULL with r->bad. */
static char *get_str(struct reader *r)
{
	uint64_t n = get_uint(r, 4);
	char *s;

	if (!has(r, n) || memchr(r->p + r->at, '\0', n)) {
		r->bad = 1;
		return NULL;
	}
	if (!(s = malloc(n + 1))) {
		r->bad = 1;
		return NULL;
	}
	memcpy(s, r->p + r->at, n);
	s[n] = '\0';
	r->at += n;
	return s;
}

/* n strings into a new array (*out), each checked; 0 or -1. */
static int get_strs(struct reader *r, uint64_t n, char ***out)
{
	/* each string takes at least its 4 length bytes: a count past what is
	 * left is a damaged blob, not an allocation to attempt */
	if (n > (r->len - r->at) / 4 || !(*out = calloc(n ? n : 1, sizeof **out))) {
		r->bad = 1;
		return -1;
	}
	for (uint64_t i = 0; i < n; i++)
		if (!((*out)[i] = get_str(r)))
			return -1;
	return 0;
}

static void free_strs(char **s, size_t n)
{
	for (size_t i = 0; s && i < n; i++)
		free(s[i]);
	free(s);
}

/* A blob's parts, read and checked; the columns point into the blob. */
struct packed {
	unsigned flags;
	size_t n_attrs, n_groups, n_records;
	char *name, *sa_name, **attr_names, **groups;
	struct dict values[DATASET_MAX_ATTRS], sa;
	struct {
		size_t width, n_codes;
		const unsigned char *codes;
	} col[DATASET_MAX_ATTRS + 2];
	size_t n_cols;
};

static void packed_finish(struct packed *pk)
{
	free(pk->name);
	free(pk->sa_name);
	free_strs(pk->attr_names, pk->n_attrs);
	free_strs(pk->groups, pk->n_groups);
	for (size_t a = 0; a < pk->n_attrs; a++)
		free_strs(pk->values[a].str, pk->values[a].n);
	free_strs(pk->sa.str, pk->sa.n);
}

static enum pm_status damaged(struct pm_error *err, const char *what)
{
	return error_set(err, PM_ERR_INPUT, "", "the packed dataset is damaged: %s", what);
}

/* The fixed header: magic, version, flags and the three sizes. */
static enum pm_status read_head(struct reader *r, struct packed *pk, struct pm_error *err)
{
	uint64_t n_attrs, n_records, n_groups;

	if (!has(r, 4) || memcmp(r->p, PACK_MAGIC, 4))
		return damaged(err, "not a packed dataset");
	r->at = 4;
	if (get_uint(r, 1) != PACK_VERSION)
		return damaged(err, "unknown version");
	pk->flags = (unsigned)get_uint(r, 1);
	get_uint(r, 2);
	n_attrs = get_uint(r, 4);
	n_records = get_uint(r, 8);
	n_groups = get_uint(r, 4);
	if (r->bad)
		return damaged(err, "truncated header");
	if (n_attrs == 0 || n_attrs > DATASET_MAX_ATTRS || (pk->flags & ~3u))
		return damaged(err, "bad header");
	/* every record takes at least a byte per column */
	if (n_records == 0 || n_records > r->len || n_groups == 0 || n_groups > n_records)
		return damaged(err, "bad sizes");
	pk->n_attrs = n_attrs;
	pk->n_records = n_records;
	pk->n_groups = n_groups;
	return PM_OK;
}

/* One column of n_records codes, each below n_codes. */
static int read_column(struct reader *r, struct packed *pk, size_t n_codes)
{
	size_t width = get_uint(r, 1), c = pk->n_cols;

	if ((width != 1 && width != 2 && width != 4) || pk->n_records > (r->len - r->at) / width) {
		r->bad = 1;
		return -1;
	}
	pk->col[c].width = width;
	pk->col[c].n_codes = n_codes;
	pk->col[c].codes = r->p + r->at;
	r->at += pk->n_records * width;
	pk->n_cols++;
	return 0;
}

/* Names, dictionaries and columns. */
static enum pm_status read_body(struct reader *r, struct packed *pk, struct pm_error *err)
{
	int bad = 0;

	if (pk->flags & FLAG_NAMED)
		bad |= !(pk->name = get_str(r));
	bad = bad || !(pk->sa_name = get_str(r)) || get_strs(r, pk->n_attrs, &pk->attr_names);
	for (size_t a = 0; !bad && a < pk->n_attrs; a++) {
		pk->values[a].n = get_uint(r, 4);
		bad = get_strs(r, pk->values[a].n, &pk->values[a].str);
	}
	if (!bad) {
		pk->sa.n = get_uint(r, 4);
		bad = get_strs(r, pk->sa.n, &pk->sa.str) || get_strs(r, pk->n_groups, &pk->groups);
	}
	for (size_t a = 0; !bad && a < pk->n_attrs; a++)
		bad = read_column(r, pk, pk->values[a].n);
	bad = bad || read_column(r, pk, pk->n_groups);
	if (!bad && (pk->flags & FLAG_RECORDS))
		bad = read_column(r, pk, pk->sa.n);
	return bad || r->bad ? damaged(err, "truncated or malformed") : PM_OK;
}

/* Code i of column c, or UINT32_MAX when it is out of its dictionary. */
static uint32_t code_at(const struct packed *pk, size_t c, size_t i)
{
	const unsigned char *p = pk->col[c].codes + i * pk->col[c].width;
	uint32_t v = p[0];

	if (pk->col[c].width >= 2)
		v |= (uint32_t)p[1] << 8;
	if (pk->col[c].width == 4)
		v |= (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	return v < pk->col[c].n_codes ? v : UINT32_MAX;
}

/* ---- checks: what the dataset builder would refuse --------------------------- */

/* Sorted, distinct (strictly ascending) and each within max bytes. */
static int dict_ok(const struct dict *d, size_t max)
{
	for (size_t i = 0; i < d->n; i++)
		if (strnlen(d->str[i], max + 1) > max ||
		    (i && strcmp(d->str[i - 1], d->str[i]) >= 0))
			return 0;
	return 1;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Group labels within their limit and distinct; -1 out of memory. */
static int groups_ok(const struct packed *pk)
{
	char **v = malloc(pk->n_groups * sizeof *v);
	int ok = 1;

	if (!v)
		return -1;
	memcpy(v, pk->groups, pk->n_groups * sizeof *v);
	qsort(v, pk->n_groups, sizeof *v, cmp_str);
	for (size_t g = 0; g < pk->n_groups && ok; g++)
		ok = strnlen(v[g], DATASET_MAX_GROUP + 1) <= DATASET_MAX_GROUP &&
		     (g == 0 || strcmp(v[g - 1], v[g]));
	free(v);
	return ok;
}

/* Column c's codes all in range and every one used; the groups' (first)
 * also in order of first appearance, as the builder numbers them. */
static int column_ok(const struct packed *pk, size_t c, int first)
{
	size_t n = pk->col[c].n_codes, next = 0, used = 0;
	unsigned char *seen = first ? NULL : calloc(n ? n : 1, 1);
	int ok = first || seen;

	for (size_t i = 0; ok && i < pk->n_records; i++) {
		uint32_t v = code_at(pk, c, i);

		if (v == UINT32_MAX || (first && v > next))
			ok = 0;
		else if (first)
			next += v == next;
		else if (!seen[v])
			seen[v] = 1, used++;
	}
	free(seen);
	return ok && (first ? next : used) == n;
}

/* Names (the builder itself checks them), dictionaries and columns. */
static enum pm_status check_packed(const struct packed *pk, struct pm_error *err)
{
	struct dataset_builder *b;
	int records = (pk->flags & FLAG_RECORDS) != 0, ok = 1;

	b = dataset_builder_create(pk->name, (const char *const *)pk->attr_names, pk->n_attrs,
				   pk->sa_name, err);
	if (!b)
		return err->status ? err->status : PM_ERR_INPUT;
	dataset_builder_destroy(b);
	if (pk->n_records > (size_t)UINT32_MAX - 1)
		return damaged(err, "too many records");
	for (size_t a = 0; ok && a < pk->n_attrs; a++)
		ok = dict_ok(&pk->values[a], DATASET_MAX_VALUE) && column_ok(pk, a, 0);
	ok = ok && dict_ok(&pk->sa, DATASET_MAX_VALUE) && column_ok(pk, pk->n_attrs, 1);
	ok = ok && (!records || column_ok(pk, pk->n_attrs + 1, 0));
	if (ok && (ok = groups_ok(pk)) < 0)
		return error_set(err, PM_ERR_NOMEM, "", "out of memory unpacking a dataset");
	return ok ? PM_OK : damaged(err, "a dictionary or column does not hold together");
}

/* ---- building: the builder's arrays, from the codes -------------------------- */

static void packed_row(const void *ctx, size_t r, uint32_t *row)
{
	const struct packed *pk = ctx;

	for (size_t a = 0; a < pk->n_attrs; a++)
		row[a] = code_at(pk, a, r);
}

/* Distinct QI tuples in order of first appearance, with their counts. */
static int build_tuples(const struct packed *pk, struct dataset *ds)
{
	return dataset_intern_tuples(ds, pk->n_records, pk->n_attrs, packed_row, pk) ? -1 : 0;
}

static int cmp_u32(const void *pa, const void *pb)
{
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;

	return (a > b) - (a < b);
}

/* Per group, its records' distinct keys ascending with their counts
 * (CSR: off, keys, counts), as the builder's bucket_csr makes them. */
static int group_csr(const struct dataset *ds, const uint32_t *key, size_t **off, uint32_t **keys,
		     uint32_t **count)
{
	size_t n = ds->n_records, G = ds->n_groups, runs = 0;
	size_t *at = malloc((G + 1) * sizeof *at);
	uint32_t *by = malloc((n ? n : 1) * sizeof *by);
	int ok = at && by && (*off = calloc(G + 1, sizeof **off)) &&
		 (*keys = malloc(n * sizeof **keys)) && (*count = malloc(n * sizeof **count));

	for (size_t g = 0, sum = 0; ok && g <= G; g++)
		at[g] = sum, sum += g < G ? ds->group_size[g] : 0;
	for (size_t r = 0; ok && r < n; r++)
		by[at[ds->rec_group[r]]++] = key[r]; /* at[g] ends at group g's end */
	for (size_t g = 0, lo = 0; ok && g < G; lo = at[g], g++) {
		qsort(by + lo, at[g] - lo, sizeof *by, cmp_u32);
		for (size_t i = lo; i < at[g]; i++) {
			if (i == lo || by[i] != by[i - 1])
				(*keys)[runs] = by[i], (*count)[runs++] = 0;
			(*count)[runs - 1]++;
		}
		(*off)[g + 1] = runs;
	}
	free(at);
	free(by);
	return ok ? 0 : -1;
}

/* Published form: the ST, group by group, as the bucket CSR of the SA:
 * values ascending, counts at least 1 adding up to the group's QIT rows,
 * every SA value used. */
static enum pm_status read_st(struct reader *r, struct dataset *ds, struct pm_error *err)
{
	size_t G = ds->n_groups, S = ds->sa_values.n, runs = 0, used = 0;
	size_t cap = (r->len - r->at) / 8 + 1;
	unsigned char *seen = calloc(S ? S : 1, 1);
	enum pm_status st = PM_OK;

	ds->bs_off = calloc(G + 1, sizeof *ds->bs_off);
	ds->bs_value = malloc(cap * sizeof *ds->bs_value); /* an entry takes 8 bytes */
	ds->bs_count = malloc(cap * sizeof *ds->bs_count);
	if (!seen || !ds->bs_off || !ds->bs_value || !ds->bs_count)
		st = error_set(err, PM_ERR_NOMEM, "", "out of memory unpacking a dataset");
	for (size_t g = 0; !st && g < G; g++) {
		uint64_t n = get_uint(r, 4), sum = 0;

		if (r->bad || n == 0 || n > S || n > (r->len - r->at) / 8)
			st = damaged(err, "truncated or malformed st");
		for (uint64_t k = 0; !st && k < n; k++, runs++) {
			uint64_t s = get_uint(r, 4), count = get_uint(r, 4);

			if (s >= S || count < 1 || (k && s <= ds->bs_value[runs - 1]))
				st = damaged(err, "an st row out of order or range");
			else
				ds->bs_value[runs] = (uint32_t)s,
				ds->bs_count[runs] = (uint32_t)count;
			sum += count;
			used += !st && !seen[s];
			if (!st)
				seen[s] = 1;
		}
		if (!st && sum != ds->group_size[g])
			st = damaged(err, "st counts that differ from the qit");
		ds->bs_off[g + 1] = runs;
	}
	free(seen);
	if (!st && used != S)
		st = damaged(err, "an SA value in no st row");
	return st;
}

/* The records' arrays of ds from pk, whose names and dictionaries move
 * into ds; -1 out of memory. */
static int fill(struct packed *pk, struct dataset *ds)
{
	size_t n = pk->n_records, na = pk->n_attrs;
	int records = (pk->flags & FLAG_RECORDS) != 0;

	ds->n_attrs = na;
	ds->name = pk->name, ds->sa_name = pk->sa_name, ds->attr_names = pk->attr_names;
	ds->group_labels = pk->groups, ds->n_groups = pk->n_groups;
	pk->name = pk->sa_name = NULL, pk->attr_names = pk->groups = NULL;
	ds->sa_values = pk->sa;
	pk->sa = (struct dict){0};
	if (!(ds->attr_values = calloc(na, sizeof *ds->attr_values)))
		return -1;
	for (size_t a = 0; a < na; a++)
		ds->attr_values[a] = pk->values[a], pk->values[a] = (struct dict){0};
	ds->has_ground_truth = records;
	ds->n_records = n;
	ds->rec_group = malloc(n * sizeof *ds->rec_group);
	ds->rec_sa = malloc(n * sizeof *ds->rec_sa);
	ds->group_size = calloc(ds->n_groups, sizeof *ds->group_size);
	if (!ds->rec_group || !ds->rec_sa || !ds->group_size)
		return -1;
	for (size_t r = 0; r < n; r++) {
		ds->rec_group[r] = code_at(pk, na, r);
		ds->rec_sa[r] = records ? code_at(pk, na + 1, r) : DATASET_NO_SA;
		ds->group_size[ds->rec_group[r]]++;
	}
	return build_tuples(pk, ds) ||
	       group_csr(ds, ds->rec_tuple, &ds->bq_off, &ds->bq_tuple, &ds->bq_count) ||
	       (records && group_csr(ds, ds->rec_sa, &ds->bs_off, &ds->bs_value, &ds->bs_count));
}

static enum pm_status build(struct reader *r, struct packed *pk, struct dataset **out,
			    struct pm_error *err)
{
	struct dataset *ds = NULL;
	enum pm_status st = check_packed(pk, err);

	if (st)
		return st;
	if (!(ds = calloc(1, sizeof *ds)) || fill(pk, ds))
		st = error_set(err, PM_ERR_NOMEM, "", "out of memory unpacking a dataset");
	if (!st && !ds->has_ground_truth)
		st = read_st(r, ds, err);
	if (!st && r->at != r->len)
		st = damaged(err, "trailing bytes");
	if (!st && postings_init(ds, &ds->by_value))
		st = error_set(err, PM_ERR_NOMEM, "", "out of memory unpacking a dataset");
	if (st)
		dataset_destroy(ds);
	else
		*out = ds;
	return st;
}
enum pm_status dataset_unpack(const unsigned char *blob, size_t len, struct dataset **out,
			      struct pm_error *err)
{
	struct reader r = {blob, blob ? len : 0, 0, 0};
	struct packed pk = {0};
	enum pm_status st;

	*out = NULL;
	st = read_head(&r, &pk, err);
	if (!st)
		st = read_body(&r, &pk, err);
	if (!st)
		st = build(&r, &pk, out, err);
	packed_finish(&pk);
	return st;
}
