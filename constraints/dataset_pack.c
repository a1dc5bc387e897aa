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
 * Unpacking replays the rows through the dataset builder, which rebuilds
 * every derived array exactly as it was: same strings in the same order
 * give the same dataset. Every length and code is checked against what is
 * left and the dictionary it indexes, so a damaged blob is an error.
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

/* Replays record i (records form) or QIT row i into b. */
static enum pm_status replay_row(const struct packed *pk, struct dataset_builder *b, size_t i,
				 struct pm_error *err)
{
	const char *qi[DATASET_MAX_ATTRS];
	uint32_t g, s = 0;

	for (size_t a = 0; a < pk->n_attrs; a++) {
		uint32_t v = code_at(pk, a, i);

		if (v == UINT32_MAX)
			return damaged(err, "a value code out of range");
		qi[a] = pk->values[a].str[v];
	}
	g = code_at(pk, pk->n_attrs, i);
	if (pk->flags & FLAG_RECORDS)
		s = code_at(pk, pk->n_attrs + 1, i);
	if (g == UINT32_MAX || s == UINT32_MAX)
		return damaged(err, "a group or SA code out of range");
	if (pk->flags & FLAG_RECORDS)
		return dataset_builder_add_record(b, qi, pk->groups[g], pk->sa.str[s], err);
	return dataset_builder_add_qit(b, qi, pk->groups[g], err);
}

/* Published form: the ST, group by group. */
static enum pm_status replay_st(struct reader *r, const struct packed *pk,
				struct dataset_builder *b, struct pm_error *err)
{
	enum pm_status st = PM_OK;

	for (size_t g = 0; !st && g < pk->n_groups; g++) {
		uint64_t n = get_uint(r, 4);

		if (r->bad || n > (r->len - r->at) / 8)
			return damaged(err, "truncated st");
		for (uint64_t k = 0; !st && k < n; k++) {
			uint64_t s = get_uint(r, 4), count = get_uint(r, 4);

			if (s >= pk->sa.n)
				return damaged(err, "an SA code out of range");
			st = dataset_builder_add_st(b, pk->groups[g], pk->sa.str[s],
						    (long long)count, err);
		}
	}
	return st;
}

static enum pm_status replay(struct reader *r, const struct packed *pk, struct dataset **out,
			     struct pm_error *err)
{
	struct dataset_builder *b;
	enum pm_status st = PM_OK;

	b = dataset_builder_create(pk->name, (const char *const *)pk->attr_names, pk->n_attrs,
				   pk->sa_name, err);
	if (!b)
		return err->status ? err->status : PM_ERR_INPUT;
	for (size_t i = 0; !st && i < pk->n_records; i++)
		st = replay_row(pk, b, i, err);
	if (!st && !(pk->flags & FLAG_RECORDS))
		st = replay_st(r, pk, b, err);
	if (!st && r->at != r->len)
		st = damaged(err, "trailing bytes");
	if (!st)
		st = dataset_builder_finish(b, out, err);
	dataset_builder_destroy(b);
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
		st = replay(&r, &pk, out, err);
	packed_finish(&pk);
	return st;
}
