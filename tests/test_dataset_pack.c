/* dataset_pack / dataset_unpack: every dataset of tests/data and random
 * ones (both forms, dictionaries of every code width) come back the same,
 * struct (every derived array: unpacking builds them itself) and JSON
 * text; every truncation and random damage of a blob is an error or a
 * dataset the builder would make the same, never a crash (ASan runs this
 * too). */
#include <dirent.h>
#include <string.h>

#include "random_table.h"
#include "test_data.h"

static int same_u32(const uint32_t *a, const uint32_t *b, size_t n)
{
	return n == 0 || (a && b && !memcmp(a, b, n * sizeof *a));
}

static int same_size(const size_t *a, const size_t *b, size_t n)
{
	return a && b && !memcmp(a, b, n * sizeof *a);
}

static int same_dict(const struct dict *a, const struct dict *b)
{
	if (a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->str[i], b->str[i]))
			return 0;
	return 1;
}

/* Every field of the two datasets, derived arrays included. */
static int same_dataset(const struct dataset *a, const struct dataset *b)
{
	size_t na = a->n_attrs;
	int ok = na == b->n_attrs && a->n_records == b->n_records && a->n_tuples == b->n_tuples &&
		 a->n_groups == b->n_groups && a->has_ground_truth == b->has_ground_truth &&
		 !strcmp(a->sa_name, b->sa_name) && !a->name == !b->name &&
		 (!a->name || !strcmp(a->name, b->name)) && same_dict(&a->sa_values, &b->sa_values);

	for (size_t i = 0; ok && i < na; i++)
		ok = !strcmp(a->attr_names[i], b->attr_names[i]) &&
		     same_dict(&a->attr_values[i], &b->attr_values[i]);
	for (size_t g = 0; ok && g < a->n_groups; g++)
		ok = !strcmp(a->group_labels[g], b->group_labels[g]);
	if (!ok)
		return 0;
	return same_u32(a->rec_tuple, b->rec_tuple, a->n_records) &&
	       same_u32(a->rec_group, b->rec_group, a->n_records) &&
	       same_u32(a->rec_sa, b->rec_sa, a->n_records) &&
	       same_u32(a->tuples, b->tuples, a->n_tuples * na) &&
	       same_u32(a->tuple_count, b->tuple_count, a->n_tuples) &&
	       same_u32(a->group_size, b->group_size, a->n_groups) &&
	       same_size(a->bq_off, b->bq_off, a->n_groups + 1) &&
	       same_u32(a->bq_tuple, b->bq_tuple, a->bq_off[a->n_groups]) &&
	       same_u32(a->bq_count, b->bq_count, a->bq_off[a->n_groups]) &&
	       same_size(a->bs_off, b->bs_off, a->n_groups + 1) &&
	       same_u32(a->bs_value, b->bs_value, a->bs_off[a->n_groups]) &&
	       same_u32(a->bs_count, b->bs_count, a->bs_off[a->n_groups]);
}

static char *json_text(const struct dataset *ds)
{
	json_t *j = codec_dataset_json(ds);
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;

	json_decref(j);
	return s;
}

/* ds made again by the dataset builder from its strings, row by row
 * (what unpacking once did; caller destroys), or NULL. */
static struct dataset *rebuilt(const struct dataset *ds)
{
	struct pm_error err = {0};
	struct dataset *out = NULL;
	struct dataset_builder *b = dataset_builder_create(
	    ds->name, (const char *const *)ds->attr_names, ds->n_attrs, ds->sa_name, &err);
	enum pm_status st = b ? PM_OK : PM_ERR_INPUT;
	const char *qi[DATASET_MAX_ATTRS];

	for (size_t i = 0; !st && i < ds->n_records; i++) {
		const char *g = ds->group_labels[ds->rec_group[i]];

		for (size_t a = 0; a < ds->n_attrs; a++)
			qi[a] = dataset_tuple_value(ds, ds->rec_tuple[i], a);
		st = ds->has_ground_truth ? dataset_builder_add_record(
						b, qi, g, ds->sa_values.str[ds->rec_sa[i]], &err)
					  : dataset_builder_add_qit(b, qi, g, &err);
	}
	for (size_t g = 0; !st && !ds->has_ground_truth && g < ds->n_groups; g++)
		for (size_t k = ds->bs_off[g]; !st && k < ds->bs_off[g + 1]; k++)
			st = dataset_builder_add_st(b, ds->group_labels[g],
						    ds->sa_values.str[ds->bs_value[k]],
						    ds->bs_count[k], &err);
	if (!st)
		dataset_builder_finish(b, &out, &err);
	dataset_builder_destroy(b);
	return out;
}

/* A dataset unpacked from a damaged blob is still one the builder makes:
 * made again from its strings, every array is the same. */
static int same_as_built(const struct dataset *ds)
{
	struct dataset *again = rebuilt(ds);
	int same = again && same_dataset(ds, again);

	dataset_destroy(again);
	return same;
}

/* Packs ds, unpacks it and compares; then damages the blob. */
static void round_trip(const struct dataset *ds, const char *what, int damage)
{
	struct pm_error err = {0};
	struct dataset *back = NULL;
	unsigned char *blob = NULL;
	size_t len = 0;
	char *a, *b;

	CHECK(dataset_pack(ds, &blob, &len, &err) == PM_OK);
	CHECK(dataset_unpack(blob, len, &back, &err) == PM_OK);
	if (!back) {
		fprintf(stderr, "%s: %s\n", what, err.message);
		free(blob);
		return;
	}
	CHECK(same_dataset(ds, back));
	a = json_text(ds);
	b = json_text(back);
	CHECK(a && b && !strcmp(a, b));
	free(a);
	free(b);
	dataset_destroy(back);
	for (size_t cut = 0; damage && cut < len; cut += 1 + cut / 64) {
		back = NULL;
		CHECK(dataset_unpack(blob, cut, &back, &err) == PM_ERR_INPUT && !back);
	}
	for (uint64_t rng = 7, i = 0; damage && i < 300; i++) {
		size_t at = rng_in(&rng, 0, len - 1);
		unsigned char was = blob[at];

		blob[at] ^= (unsigned char)(1u << rng_in(&rng, 0, 7));
		back = NULL;
		if (dataset_unpack(blob, len, &back, &err) == PM_OK)
			CHECK(back && same_as_built(back));
		dataset_destroy(back);
		blob[at] = was;
	}
	free(blob);
}

/* Every JSON dataset of tests/data that reads (the bad ones are the
 * codec's business) and the CSV with its columns. */
static void data_files(void)
{
	DIR *d = opendir(data_dir());
	struct dirent *e;
	int n = 0;

	CHECK(d != NULL);
	while (d && (e = readdir(d))) {
		struct pm_error err = {0};
		struct dataset *ds = NULL;
		char path[1024];
		json_t *j;

		if (!strstr(e->d_name, ".json"))
			continue;
		snprintf(path, sizeof path, "%s/%s", data_dir(), e->d_name);
		if (!(j = json_load_file(path, JSON_REJECT_DUPLICATES, NULL)))
			continue;
		if (!codec_dataset(j, &ds, &err)) {
			round_trip(ds, e->d_name, n++ < 6);
			dataset_destroy(ds);
		}
		json_decref(j);
	}
	if (d)
		closedir(d);
	CHECK(n >= 10);
}

/* A table with nv[a] values per attribute (so every code width occurs),
 * published or not, named or not. */
static struct dataset *wide(uint64_t *rng, size_t n, const size_t *nv, size_t n_groups,
			    int published)
{
	static const char *const attrs[] = {"zip", "age", "sex"};
	struct pm_error err = {0};
	struct dataset *ds = NULL;
	struct dataset_builder *b =
	    dataset_builder_create(published ? NULL : "wide", attrs, 3, "disease", &err);
	uint32_t *count = calloc(n_groups * 4, sizeof *count);
	char v[3][24], g[24], s[24];

	for (size_t i = 0; b && i < n; i++) {
		const char *qi[3] = {v[0], v[1], v[2]};
		size_t gi = i < n_groups ? i : rng_in(rng, 0, n_groups - 1), si = rng_in(rng, 0, 3);

		for (size_t a = 0; a < 3; a++)
			snprintf(v[a], sizeof v[a], "%zu", rng_in(rng, 0, nv[a] - 1));
		snprintf(g, sizeof g, gi % 2 ? "g%zu" : "%zu", gi);
		snprintf(s, sizeof s, "s%zu", si);
		count[gi * 4 + si]++;
		CHECK((published ? dataset_builder_add_qit(b, qi, g, &err)
				 : dataset_builder_add_record(b, qi, g, s, &err)) == PM_OK);
	}
	for (size_t k = 0; published && k < n_groups * 4; k++) {
		snprintf(g, sizeof g, k / 4 % 2 ? "g%zu" : "%zu", k / 4);
		snprintf(s, sizeof s, "s%zu", k % 4);
		if (count[k])
			CHECK(dataset_builder_add_st(b, g, s, count[k], &err) == PM_OK);
	}
	CHECK(dataset_builder_finish(b, &ds, &err) == PM_OK);
	dataset_builder_destroy(b);
	free(count);
	return ds;
}

static void random_tables(void)
{
	static const size_t small[3] = {3, 5, 2}, mid[3] = {300, 7, 2}, big[3] = {70000, 600, 2};
	uint64_t rng = 25;

	for (int i = 0; i < 40; i++) {
		struct dataset *ds = random_dataset(&rng);

		CHECK(ds != NULL);
		if (ds)
			round_trip(ds, "random", i < 3);
		dataset_destroy(ds);
	}
	for (int published = 0; published < 2; published++) {
		struct dataset *a = wide(&rng, 50, small, 5, published);
		struct dataset *b = wide(&rng, 2000, mid, 400, published);
		struct dataset *c = wide(&rng, 90000, big, 70000, published);

		round_trip(a, "small", 1);
		round_trip(b, "mid", 1);
		round_trip(c, "big", 0);
		dataset_destroy(a);
		dataset_destroy(b);
		dataset_destroy(c);
	}
}

static void not_blobs(void)
{
	struct pm_error err = {0};
	struct dataset *ds = NULL;

	CHECK(dataset_unpack(NULL, 0, &ds, &err) == PM_ERR_INPUT && !ds);
	CHECK_CONTAINS(err.message, "damaged");
	CHECK(dataset_unpack((const unsigned char *)"{\"records\":[]}", 14, &ds, &err) ==
	      PM_ERR_INPUT);
	CHECK_CONTAINS(err.message, "not a packed dataset");
}

int main(void)
{
	data_files();
	random_tables();
	not_blobs();
	return check_done();
}
