/* Anatomy grouping: l-diversity of every group, no record lost, determinism
 * per seed, refusal and set-aside for tables that are not l-eligible, many
 * random tables, and the Adult reference data (SA occupation, l = 5). */
#include <stdint.h>
#include <time.h>

#include "check.h"
#include "constraints.h"

static const char *const qi2[] = {"zip", "age"};

/* A table zip,age,disease with counts[v] records of SA value "v<v>". */
static void make_table(struct csv_table *t, const size_t *counts, size_t n_values)
{
	char *text = malloc(1 << 16), *p = text;
	size_t row = 0;
	struct pm_error err = {0};

	p += sprintf(p, "zip,age,disease\n");
	for (size_t v = 0; v < n_values; v++)
		for (size_t i = 0; i < counts[v]; i++, row++)
			p += sprintf(p, "%zu,%zu,v%zu\n", 13000 + row % 11, 20 + row % 7, v);
	CHECK(csv_parse(text, (size_t)(p - text), t, &err) == PM_OK);
	free(text);
}

/* Every group: >= l records, all SA values distinct; labels "1", "2", ... */
static int count_bad_groups(const struct dataset *ds, size_t l)
{
	int bad = 0;
	char label[32];

	for (size_t g = 0; g < ds->n_groups; g++) {
		size_t distinct = ds->bs_off[g + 1] - ds->bs_off[g];

		snprintf(label, sizeof label, "%zu", g + 1);
		bad += distinct != ds->group_size[g] || distinct < l;
		bad += strcmp(ds->group_labels[g], label) != 0;
	}
	/* records come out group by group */
	for (size_t r = 1; r < ds->n_records; r++)
		bad += ds->rec_group[r] < ds->rec_group[r - 1];
	return bad;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The output records are exactly the input rows (as qi..., sa strings),
 * minus those whose SA value is absent from the output (set aside). */
static int same_records(const struct csv_table *t, const size_t *cols, size_t n_qi, size_t sa,
			const struct dataset *ds)
{
	size_t n_in = 0, len = 0;
	char **in = malloc(t->n_rows * sizeof *in), **outr = malloc(ds->n_records * sizeof *outr);
	int same;

	for (size_t r = 0; r < t->n_rows; r++) {
		char buf[1024];
		size_t k = 0;

		if (dict_find(&ds->sa_values, t->cells[r * t->n_cols + sa]) < 0)
			continue; /* set aside */
		for (size_t a = 0; a < n_qi; a++)
			k += snprintf(buf + k, sizeof buf - k, "%s\x1f",
				      t->cells[r * t->n_cols + cols[a]]);
		snprintf(buf + k, sizeof buf - k, "%s", t->cells[r * t->n_cols + sa]);
		in[n_in++] = strdup(buf);
	}
	for (size_t r = 0; r < ds->n_records; r++) {
		char buf[1024];
		size_t k = 0;

		for (size_t a = 0; a < n_qi; a++)
			k += snprintf(buf + k, sizeof buf - k, "%s\x1f",
				      dataset_tuple_value(ds, ds->rec_tuple[r], a));
		snprintf(buf + k, sizeof buf - k, "%s", ds->sa_values.str[ds->rec_sa[r]]);
		outr[len++] = strdup(buf);
	}
	qsort(in, n_in, sizeof *in, cmp_str);
	qsort(outr, len, sizeof *outr, cmp_str);
	same = n_in == len;
	for (size_t i = 0; i < len; i++) {
		same = same && strcmp(in[i], outr[i]) == 0;
		free(outr[i]);
	}
	for (size_t i = 0; i < n_in; i++)
		free(in[i]);
	free(in);
	free(outr);
	return same;
}

static struct dataset *run(const struct csv_table *t, size_t l, uint64_t seed, int set_aside,
			   size_t *aside, struct pm_error *err)
{
	struct anatomy_options o = {.l = l, .seed = seed, .set_aside = set_aside};
	struct dataset *ds = NULL;

	memset(err, 0, sizeof *err);
	anatomy_run(t, "disease", qi2, 2, &o, &ds, aside, err);
	return ds;
}

static int same_dataset(const struct dataset *a, const struct dataset *b)
{
	size_t n = a->n_records;

	return n == b->n_records && a->n_tuples == b->n_tuples && a->n_groups == b->n_groups &&
	       !memcmp(a->rec_tuple, b->rec_tuple, n * sizeof *a->rec_tuple) &&
	       !memcmp(a->rec_group, b->rec_group, n * sizeof *a->rec_group) &&
	       !memcmp(a->rec_sa, b->rec_sa, n * sizeof *a->rec_sa) &&
	       !memcmp(a->tuples, b->tuples, a->n_tuples * a->n_attrs * sizeof *a->tuples);
}

static void test_small(void)
{
	const size_t counts[] = {5, 5, 4, 4, 3, 2}; /* N = 23, l = 4: residue 3 */
	const size_t cols[] = {0, 1};
	struct csv_table t;
	struct pm_error err;
	struct dataset *a, *b, *c;
	size_t aside = 99;

	make_table(&t, counts, 6);
	a = run(&t, 4, 7, 0, &aside, &err);
	CHECK(a != NULL);
	if (a) {
		CHECK(aside == 0);
		CHECK(a->n_records == 23 && a->n_groups == 5);
		CHECK_STR(a->attr_names[0], "zip");
		CHECK_STR(a->attr_names[1], "age");
		CHECK_STR(a->sa_name, "disease");
		CHECK(a->has_ground_truth == 1);
		CHECK(count_bad_groups(a, 4) == 0);
		CHECK(same_records(&t, cols, 2, 2, a));
	}
	b = run(&t, 4, 7, 0, NULL, &err);
	c = run(&t, 4, 8, 0, NULL, &err);
	CHECK(a && b && same_dataset(a, b));
	CHECK(a && c && !same_dataset(a, c));
	dataset_destroy(a);
	dataset_destroy(b);
	dataset_destroy(c);
	csv_table_finish(&t);
}

static void test_not_eligible(void)
{
	const size_t counts[] = {6, 2, 2}, all[] = {3, 1}, few[] = {1, 1};
	struct csv_table t;
	struct pm_error err;
	struct dataset *ds;
	size_t aside = 99;

	make_table(&t, counts, 3);
	CHECK(run(&t, 2, 1, 0, &aside, &err) == NULL);
	CHECK(err.status == PM_ERR_INPUT);
	CHECK_STR(err.field, "l");
	CHECK_CONTAINS(err.message, "not 2-eligible: SA value \"v0\" occurs in 6 of 10 records");
	CHECK(aside == 0);
	ds = run(&t, 2, 1, 1, &aside, &err);
	CHECK(ds != NULL);
	CHECK(aside == 6);
	if (ds) {
		CHECK(ds->n_records == 4 && ds->n_groups == 2 && ds->sa_values.n == 2);
		CHECK(dict_find(&ds->sa_values, "v0") < 0);
		CHECK(count_bad_groups(ds, 2) == 0);
	}
	dataset_destroy(ds);
	csv_table_finish(&t);

	make_table(&t, all, 2);
	CHECK(run(&t, 3, 1, 1, &aside, &err) == NULL);
	CHECK_STR(err.field, "l");
	CHECK_CONTAINS(err.message, "no records are left after setting aside");
	CHECK(aside == 4);
	csv_table_finish(&t);

	make_table(&t, few, 2);
	CHECK(run(&t, 3, 1, 0, NULL, &err) == NULL);
	CHECK_CONTAINS(err.message, "fewer distinct SA values than l");
	csv_table_finish(&t);
}

static void expect_arg_error(const struct csv_table *t, const char *sa, const char *const *qi,
			     size_t n_qi, size_t l, const char *field, const char *msg)
{
	struct anatomy_options o = {.l = l, .seed = 1};
	struct dataset *ds = (struct dataset *)&o;
	struct pm_error err = {0};

	CHECK(anatomy_run(t, sa, qi, n_qi, &o, &ds, NULL, &err) == PM_ERR_INPUT);
	CHECK(ds == NULL);
	CHECK_STR(err.field, field);
	CHECK_CONTAINS(err.message, msg);
}

static void test_arg_errors(void)
{
	const size_t counts[] = {2, 2};
	const char *bad_qi[] = {"zip", "height"}, *sa_qi[] = {"zip", "disease"};
	const char *dup_qi[] = {"age", "zip", "age"};
	struct csv_table t, empty;
	struct pm_error err = {0};

	make_table(&t, counts, 2);
	expect_arg_error(&t, "disease", qi2, 2, 1, "l", "must be at least 2 (got 1)");
	expect_arg_error(&t, "illness", qi2, 2, 2, "sa", "no column \"illness\" in the header");
	expect_arg_error(&t, NULL, qi2, 2, 2, "sa", "is missing");
	expect_arg_error(&t, "disease", bad_qi, 2, 2, "qi", "no column \"height\" in the header");
	expect_arg_error(&t, "disease", sa_qi, 2, 2, "qi", "column \"disease\" is the sa column");
	expect_arg_error(&t, "disease", dup_qi, 3, 2, "qi", "column \"age\" is listed twice");
	expect_arg_error(&t, "disease", qi2, 0, 2, "qi", "is empty");
	CHECK(csv_parse("zip,age,disease\n", 16, &empty, &err) == PM_OK);
	expect_arg_error(&empty, "disease", qi2, 2, 2, "records", "is empty");
	csv_table_finish(&empty);
	csv_table_finish(&t);
}

static uint64_t rng = 88172645463325252ULL;

static size_t rnd(size_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (size_t)(rng % n);
}

/* Random tables: eligible ones must group, others must be refused, and with
 * set-aside the largest values go until the rest is eligible. */
static void test_random_tables(void)
{
	const size_t cols[] = {0, 1};
	int bad = 0, ran = 0;

	for (int iter = 0; iter < 300; iter++) {
		size_t m = 2 + rnd(8), l = 2 + rnd(m), counts[10], n = 0, max = 0, aside;
		struct csv_table t;
		struct pm_error err;
		struct dataset *ds;

		for (size_t v = 0; v < m; v++) {
			counts[v] = 1 + rnd(9);
			n += counts[v];
			max = counts[v] > max ? counts[v] : max;
		}
		make_table(&t, counts, m);
		ds = run(&t, l, (uint64_t)iter, 0, NULL, &err);
		bad += (ds != NULL) != (max * l <= n);
		if (ds) {
			ran++;
			bad += count_bad_groups(ds, l) != 0 || !same_records(&t, cols, 2, 2, ds);
			bad += ds->n_groups != n / l;
		}
		dataset_destroy(ds);
		ds = run(&t, l, (uint64_t)iter, 1, &aside, &err);
		if (ds) {
			bad += count_bad_groups(ds, l) != 0 || !same_records(&t, cols, 2, 2, ds);
			bad += ds->n_records + aside != n || ds->n_groups != ds->n_records / l;
		}
		dataset_destroy(ds);
		csv_table_finish(&t);
	}
	CHECK(bad == 0);
	CHECK(ran > 50);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)n + 1)))
		*len = fread(buf, 1, (size_t)n, f);
	fclose(f);
	return buf;
}

static void test_adult(void)
{
	const char *dir = getenv("PMAXENT_TEST_DATA");
	const char *qi[] = {"age",  "type_employer", "marital", "relationship",
			    "race", "sex",	     "country", "education"};
	const size_t cols[] = {0, 1, 5, 7, 8, 9, 13, 3};
	struct anatomy_options o = {.l = 5, .seed = 2008};
	struct csv_table t;
	struct pm_error err = {0};
	struct dataset *ds = NULL;
	char path[4096];
	size_t len = 0, aside = 99;
	char *text;
	double t0, t1;

	snprintf(path, sizeof path, "%s/../../../shared/data/adult/adult.csv",
		 dir ? dir : "tests/data");
	text = slurp(path, &len);
	if (!text) {
		printf("note: %s not found; Adult check skipped\n", path);
		return;
	}
	t0 = now();
	CHECK(csv_parse(text, len, &t, &err) == PM_OK);
	free(text);
	t1 = now();
	CHECK(t.n_rows == 30162);
	CHECK(anatomy_run(&t, "occupation", qi, 8, &o, &ds, &aside, &err) == PM_OK);
	printf("adult: parse %.3f s, anatomy %.3f s\n", t1 - t0, now() - t1);
	if (ds) {
		CHECK(aside == 0);
		CHECK(ds->n_records == 30162);
		CHECK(ds->n_groups == 30162 / 5);
		CHECK(ds->sa_values.n == 14);
		CHECK(count_bad_groups(ds, 5) == 0);
		CHECK(same_records(&t, cols, 8, 6, ds));
	}
	dataset_destroy(ds);
	csv_table_finish(&t);
}

int main(void)
{
	test_small();
	test_not_eligible();
	test_arg_errors();
	test_random_tables();
	test_adult();
	return check_done();
}
