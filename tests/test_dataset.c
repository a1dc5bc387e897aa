/* Dataset builder: a hand-made bucketized table in both forms, checked array
 * by array, every input error by field and message, and a larger random
 * table checked for internal consistency. */
#include <stdint.h>

#include "check.h"
#include "constraints.h"

static const char *const attrs[] = {"gender", "degree"};

/* group, gender, degree, disease */
static const char *const table[8][4] = {
    {"1", "male", "college", "Flu"},	 {"1", "female", "junior", "Breast Cancer"},
    {"1", "male", "college", "HIV"},	 {"2", "female", "college", "Flu"},
    {"2", "male", "college", "Flu"},	 {"2", "female", "junior", "HIV"},
    {"3", "male", "high school", "Flu"}, {"3", "female", "college", "Breast Cancer"},
};

#define CHECK_U32S(arr, ...)                                                                       \
	do {                                                                                       \
		const uint32_t want_[] = {__VA_ARGS__};                                            \
		for (size_t i_ = 0; i_ < sizeof want_ / sizeof want_[0]; i_++)                     \
			CHECK((arr)[i_] == want_[i_]);                                             \
	} while (0)

#define CHECK_SIZES(arr, ...)                                                                      \
	do {                                                                                       \
		const size_t want_[] = {__VA_ARGS__};                                              \
		for (size_t i_ = 0; i_ < sizeof want_ / sizeof want_[0]; i_++)                     \
			CHECK((arr)[i_] == want_[i_]);                                             \
	} while (0)

static struct dataset_builder *new_builder(void)
{
	struct pm_error err = {0};
	struct dataset_builder *b = dataset_builder_create("fig1", attrs, 2, "disease", &err);

	CHECK(b != NULL);
	return b;
}

static struct dataset *build_records(void)
{
	struct pm_error err = {0};
	struct dataset_builder *b = new_builder();
	struct dataset *ds = NULL;

	for (int r = 0; r < 8; r++)
		CHECK(dataset_builder_add_record(b, &table[r][1], table[r][0], table[r][3], &err) ==
		      PM_OK);
	CHECK(dataset_builder_finish(b, &ds, &err) == PM_OK);
	dataset_builder_destroy(b);
	return ds;
}

/* Everything but rec_sa, has_ground_truth and the name is the same in both forms. */
static void check_common(const struct dataset *ds)
{
	CHECK(ds->n_attrs == 2);
	CHECK_STR(ds->attr_names[0], "gender");
	CHECK_STR(ds->attr_names[1], "degree");
	CHECK_STR(ds->sa_name, "disease");
	CHECK(ds->attr_values[0].n == 2);
	CHECK_STR(ds->attr_values[0].str[0], "female");
	CHECK_STR(ds->attr_values[0].str[1], "male");
	CHECK(ds->attr_values[1].n == 3);
	CHECK_STR(ds->attr_values[1].str[0], "college");
	CHECK_STR(ds->attr_values[1].str[1], "high school");
	CHECK_STR(ds->attr_values[1].str[2], "junior");
	CHECK(ds->sa_values.n == 3);
	CHECK_STR(ds->sa_values.str[0], "Breast Cancer");
	CHECK_STR(ds->sa_values.str[1], "Flu");
	CHECK_STR(ds->sa_values.str[2], "HIV");

	CHECK(ds->n_records == 8);
	CHECK_U32S(ds->rec_tuple, 0, 1, 0, 2, 0, 1, 3, 2);
	CHECK_U32S(ds->rec_group, 0, 0, 0, 1, 1, 1, 2, 2);
	CHECK(ds->n_tuples == 4);
	/* (male,college) (female,junior) (female,college) (male,high school) */
	CHECK_U32S(ds->tuples, 1, 0, 0, 2, 0, 0, 1, 1);
	CHECK_U32S(ds->tuple_count, 3, 2, 2, 1);
	CHECK(ds->n_groups == 3);
	CHECK_STR(ds->group_labels[0], "1");
	CHECK_STR(ds->group_labels[1], "2");
	CHECK_STR(ds->group_labels[2], "3");
	CHECK_U32S(ds->group_size, 3, 3, 2);
	CHECK_SIZES(ds->bq_off, 0, 2, 5, 7);
	CHECK_U32S(ds->bq_tuple, 0, 1, 0, 1, 2, 2, 3);
	CHECK_U32S(ds->bq_count, 2, 1, 1, 1, 1, 1, 1);
	CHECK_SIZES(ds->bs_off, 0, 3, 5, 7);
	CHECK_U32S(ds->bs_value, 0, 1, 2, 1, 2, 0, 1);
	CHECK_U32S(ds->bs_count, 1, 1, 1, 2, 1, 1, 1);

	CHECK_STR(dataset_tuple_value(ds, 3, 0), "male");
	CHECK_STR(dataset_tuple_value(ds, 3, 1), "high school");
	CHECK_STR(dataset_tuple_value(ds, 1, 1), "junior");
	CHECK(dataset_tuple_value(ds, 4, 0) == NULL);
	CHECK(dataset_tuple_value(ds, 0, 2) == NULL);
	CHECK(dataset_attr_index(ds, "gender") == 0);
	CHECK(dataset_attr_index(ds, "degree") == 1);
	CHECK(dataset_attr_index(ds, "disease") == -1);
	CHECK(dataset_attr_index(ds, NULL) == -1);
	CHECK(dict_find(&ds->sa_values, "HIV") == 2);
	CHECK(dict_find(&ds->sa_values, "Breast Cancer") == 0);
	CHECK(dict_find(&ds->sa_values, "Cold") == -1);
	CHECK(dict_find(&ds->attr_values[1], "high school") == 1);
	CHECK(dict_find(&ds->attr_values[1], "") == -1);
}

static void test_records_form(void)
{
	struct dataset *ds = build_records();

	CHECK(ds != NULL);
	if (!ds)
		return;
	check_common(ds);
	CHECK_STR(ds->name, "fig1");
	CHECK(ds->has_ground_truth == 1);
	CHECK_U32S(ds->rec_sa, 1, 0, 2, 1, 1, 2, 1, 0);
	dataset_destroy(ds);
}

static void test_published_form(void)
{
	struct pm_error err = {0};
	struct dataset_builder *b = new_builder();
	struct dataset *ds = NULL;

	/* ST rows first and out of order: group order must follow the QIT;
	 * the two ("2", Flu) rows must be summed */
	CHECK(dataset_builder_add_st(b, "3", "Flu", 1, &err) == PM_OK);
	CHECK(dataset_builder_add_st(b, "2", "Flu", 1, &err) == PM_OK);
	CHECK(dataset_builder_add_st(b, "1", "HIV", 1, &err) == PM_OK);
	CHECK(dataset_builder_add_st(b, "1", "Flu", 1, &err) == PM_OK);
	for (int r = 0; r < 8; r++)
		CHECK(dataset_builder_add_qit(b, &table[r][1], table[r][0], &err) == PM_OK);
	CHECK(dataset_builder_add_st(b, "2", "HIV", 1, &err) == PM_OK);
	CHECK(dataset_builder_add_st(b, "1", "Breast Cancer", 1, &err) == PM_OK);
	CHECK(dataset_builder_add_st(b, "3", "Breast Cancer", 1, &err) == PM_OK);
	CHECK(dataset_builder_add_st(b, "2", "Flu", 1, &err) == PM_OK);
	CHECK(dataset_builder_finish(b, &ds, &err) == PM_OK);
	CHECK(ds != NULL);
	if (ds) {
		check_common(ds);
		CHECK(ds->has_ground_truth == 0);
		for (int r = 0; r < 8; r++)
			CHECK(ds->rec_sa[r] == DATASET_NO_SA);
		dataset_destroy(ds);
	}
	/* the builder is empty again and can be reused: one row, no name given */
	CHECK(dataset_builder_add_record(b, &table[0][1], "", "", &err) == PM_OK);
	CHECK(dataset_builder_finish(b, &ds, &err) == PM_OK);
	if (ds) {
		CHECK(ds->n_records == 1 && ds->n_groups == 1 && ds->n_tuples == 1);
		CHECK_STR(ds->group_labels[0], "");
		CHECK_STR(ds->sa_values.str[0], "");
		CHECK(ds->has_ground_truth == 1);
		dataset_destroy(ds);
	}
	dataset_builder_destroy(b);
}

static void expect_create_error(const char *const *names, size_t n, const char *sa,
				const char *field, const char *msg)
{
	struct pm_error err = {0};

	CHECK(dataset_builder_create(NULL, names, n, sa, &err) == NULL);
	CHECK(err.status == PM_ERR_INPUT);
	CHECK_STR(err.field, field);
	CHECK_CONTAINS(err.message, msg);
}

static void test_create_errors(void)
{
	const char *dup[] = {"age", "sex", "age"};
	const char *empty[] = {"age", ""};
	const char *null[] = {"age", NULL};
	const char *many[DATASET_MAX_ATTRS + 1];
	struct dataset_builder *b;
	struct pm_error err = {0};

	for (size_t i = 0; i < DATASET_MAX_ATTRS + 1; i++)
		many[i] = "x";
	expect_create_error(dup, 0, "s", "qi_attributes", "is empty");
	expect_create_error(many, DATASET_MAX_ATTRS + 1, "s", "qi_attributes",
			    "has 33 attributes; at most 32");
	expect_create_error(dup, 3, "s", "qi_attributes[2]", "repeats attribute \"age\"");
	expect_create_error(empty, 2, "s", "qi_attributes[1]", "empty attribute name");
	expect_create_error(null, 2, "s", "qi_attributes[1]", "is missing");
	expect_create_error(dup, 2, "", "sa_attribute", "empty attribute name");
	expect_create_error(dup, 2, NULL, "sa_attribute", "is missing");
	expect_create_error(dup, 2, "sex", "sa_attribute", "\"sex\" is also a QI attribute");
	b = dataset_builder_create(NULL, dup, 2, "occupation", &err);
	CHECK(b != NULL);
	dataset_builder_destroy(b);
	dataset_builder_destroy(NULL);
	dataset_destroy(NULL);
}

static void expect(enum pm_status st, struct pm_error *err, const char *prefix, const char *field,
		   const char *msg)
{
	CHECK(st == PM_ERR_INPUT);
	error_prefix(err, prefix);
	CHECK_STR(err->field, field);
	CHECK_CONTAINS(err->message, msg);
	memset(err, 0, sizeof *err);
}

static void test_row_errors(void)
{
	struct pm_error err = {0};
	struct dataset_builder *b = new_builder();
	const char *half[] = {"male", NULL};
	const char *qi[] = {"male", "college"};

	expect(dataset_builder_add_record(b, NULL, "1", "Flu", &err), &err, "records[17]",
	       "records[17].qi", "is missing");
	expect(dataset_builder_add_record(b, half, "1", "Flu", &err), &err, "records[17]",
	       "records[17].qi[1]", "is missing");
	expect(dataset_builder_add_record(b, qi, NULL, "Flu", &err), &err, "records[2]",
	       "records[2].group", "is missing");
	expect(dataset_builder_add_record(b, qi, "1", NULL, &err), &err, "records[2]",
	       "records[2].sa", "is missing");
	expect(dataset_builder_add_qit(b, NULL, "1", &err), &err, "qit[0]", "qit[0].qi", "missing");
	expect(dataset_builder_add_qit(b, qi, NULL, &err), &err, "qit[0]", "qit[0].group",
	       "missing");
	expect(dataset_builder_add_st(b, "1", "Flu", 0, &err), &err, "st[4]", "st[4].count",
	       "must be at least 1 (got 0)");
	expect(dataset_builder_add_st(b, "1", "Flu", -3, &err), &err, "st[4]", "st[4].count",
	       "got -3");
	expect(dataset_builder_add_st(b, "1", "Flu", 1LL << 40, &err), &err, "st[4]", "st[4].count",
	       "is too large");
	expect(dataset_builder_add_st(b, NULL, "Flu", 1, &err), &err, "st[4]", "st[4].group",
	       "missing");
	expect(dataset_builder_add_st(b, "1", NULL, 1, &err), &err, "st[4]", "st[4].sa", "missing");
	/* nothing was added by the failed calls */
	expect(dataset_builder_finish(b, &(struct dataset *){NULL}, &err), &err, "", "records",
	       "is empty");

	/* mixing the two forms */
	CHECK(dataset_builder_add_record(b, qi, "1", "Flu", &err) == PM_OK);
	expect(dataset_builder_add_qit(b, qi, "1", &err), &err, "qit[0]", "qit[0]",
	       "cannot be mixed");
	expect(dataset_builder_add_st(b, "1", "Flu", 1, &err), &err, "st[0]", "st[0]",
	       "cannot be mixed");
	dataset_builder_destroy(b);
	b = new_builder();
	CHECK(dataset_builder_add_st(b, "1", "Flu", 1, &err) == PM_OK);
	expect(dataset_builder_add_record(b, qi, "1", "Flu", &err), &err, "records[0]",
	       "records[0]", "cannot be mixed");
	dataset_builder_destroy(b);
}

/* n copies of c (caller frees). */
static char *repeat(char c, size_t n)
{
	char *s = malloc(n + 1);

	memset(s, c, n);
	s[n] = '\0';
	return s;
}

/* Every length limit: at the limit accepted, one byte over refused with
 * the limit in the message; a 64 MiB name is refused like a short one. */
static void test_limits(void)
{
	char *name = repeat('n', DATASET_MAX_NAME), *attr = repeat('a', DATASET_MAX_ATTR_NAME);
	char *value = repeat('v', DATASET_MAX_VALUE), *group = repeat('g', DATASET_MAX_GROUP);
	char *huge = repeat('h', (size_t)64 << 20), *attr1 = repeat('a', DATASET_MAX_ATTR_NAME + 1);
	char *value1 = repeat('v', DATASET_MAX_VALUE + 1),
	     *group1 = repeat('g', DATASET_MAX_GROUP + 1);
	const char *names[] = {"gender", attr}, *qi[] = {"male", value};
	struct pm_error err = {0};
	struct dataset_builder *b = dataset_builder_create(name, names, 2, attr + 1, &err);
	struct dataset *ds = NULL;

	CHECK(b != NULL);
	CHECK(dataset_builder_add_record(b, qi, group, value, &err) == PM_OK);
	CHECK(dataset_builder_finish(b, &ds, &err) == PM_OK);
	CHECK(ds && strlen(ds->name) == DATASET_MAX_NAME);
	dataset_destroy(ds);
	dataset_builder_destroy(b);
	CHECK(dataset_builder_create(huge, attrs, 2, "disease", &err) == NULL);
	CHECK_STR(err.field, "name");
	CHECK_STR(err.message, "is 67108864 bytes long; a dataset name may have at most 256 bytes");
	names[1] = attr1;
	expect_create_error(names, 2, "s", "qi_attributes[1]",
			    "is 257 bytes long; an attribute name may have at most 256 bytes");
	expect_create_error(attrs, 2, attr1, "sa_attribute", "at most 256 bytes");
	b = new_builder();
	qi[1] = value1;
	expect(dataset_builder_add_record(b, qi, "1", "Flu", &err), &err, "records[4]",
	       "records[4].qi[1]", "is 1025 bytes long; a value may have at most 1024 bytes");
	expect(dataset_builder_add_qit(b, qi, "1", &err), &err, "qit[0]", "qit[0].qi[1]",
	       "at most 1024 bytes");
	qi[1] = value;
	expect(dataset_builder_add_record(b, qi, "1", value1, &err), &err, "records[4]",
	       "records[4].sa", "a value may have at most 1024 bytes");
	expect(dataset_builder_add_record(b, qi, group1, "Flu", &err), &err, "records[4]",
	       "records[4].group", "is 257 bytes long; a group label may have at most 256 bytes");
	expect(dataset_builder_add_st(b, group1, "Flu", 1, &err), &err, "st[0]", "st[0].group",
	       "at most 256 bytes");
	expect(dataset_builder_add_st(b, "1", value1, 1, &err), &err, "st[0]", "st[0].sa",
	       "at most 1024 bytes");
	dataset_builder_destroy(b);
	free(name);
	free(attr);
	free(value);
	free(group);
	free(huge);
	free(attr1);
	free(value1);
	free(group1);
}

static void expect_finish(struct dataset_builder *b, const char *field, const char *msg)
{
	struct pm_error err = {0};
	struct dataset *ds = (struct dataset *)&err; /* must be reset to NULL */

	CHECK(dataset_builder_finish(b, &ds, &err) == PM_ERR_INPUT);
	CHECK(ds == NULL);
	CHECK_STR(err.field, field);
	CHECK_CONTAINS(err.message, msg);
	/* the builder was emptied */
	CHECK(dataset_builder_finish(b, &ds, &err) == PM_ERR_INPUT);
	CHECK_STR(err.field, "records");
}

static void test_finish_errors(void)
{
	struct pm_error err = {0};
	struct dataset_builder *b = new_builder();
	const char *qi[] = {"male", "college"};

	expect_finish(b, "records", "is empty");
	CHECK(dataset_builder_add_st(b, "1", "Flu", 1, &err) == PM_OK);
	expect_finish(b, "qit", "is empty");
	CHECK(dataset_builder_add_qit(b, qi, "1", &err) == PM_OK);
	expect_finish(b, "st", "is empty");

	CHECK(dataset_builder_add_qit(b, qi, "1", &err) == PM_OK);
	CHECK(dataset_builder_add_st(b, "1", "Flu", 1, &err) == PM_OK);
	CHECK(dataset_builder_add_st(b, "7", "Flu", 1, &err) == PM_OK);
	expect_finish(b, "st[1].group", "group \"7\" does not occur in the qit");

	CHECK(dataset_builder_add_qit(b, qi, "1", &err) == PM_OK);
	CHECK(dataset_builder_add_qit(b, qi, "3", &err) == PM_OK);
	CHECK(dataset_builder_add_st(b, "1", "Flu", 1, &err) == PM_OK);
	expect_finish(b, "qit", "group \"3\" has no st rows");

	CHECK(dataset_builder_add_qit(b, qi, "1", &err) == PM_OK);
	CHECK(dataset_builder_add_qit(b, qi, "2", &err) == PM_OK);
	CHECK(dataset_builder_add_qit(b, qi, "2", &err) == PM_OK);
	CHECK(dataset_builder_add_st(b, "1", "Flu", 1, &err) == PM_OK);
	CHECK(dataset_builder_add_st(b, "2", "Flu", 2, &err) == PM_OK);
	CHECK(dataset_builder_add_st(b, "2", "HIV", 1, &err) == PM_OK);
	expect_finish(b, "st", "counts of group \"2\" sum to 3, but the qit has 2 rows");
	dataset_builder_destroy(b);
}

static uint64_t rng_state = 12345;

static uint32_t rnd(uint32_t n)
{
	rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint32_t)(rng_state >> 33) % n;
}

/* 30,000 random records: the arrays must agree with the strings. */
static void test_random_consistency(void)
{
	enum { N = 30000, A = 3 };
	static char vals[N][A][8], grp[N][8], sa[N][8];
	const char *names[A] = {"a", "b", "c"};
	struct pm_error err = {0};
	struct dataset_builder *b = dataset_builder_create(NULL, names, A, "s", &err);
	struct dataset *ds = NULL;
	uint64_t sum_q = 0;
	int bad = 0;

	for (int r = 0; r < N && b; r++) {
		const char *qi[A];

		for (int a = 0; a < A; a++) {
			snprintf(vals[r][a], sizeof vals[r][a], "v%u", rnd(a == 0 ? 90 : 7));
			qi[a] = vals[r][a];
		}
		snprintf(grp[r], sizeof grp[r], "%u", rnd(6000));
		snprintf(sa[r], sizeof sa[r], "s%u", rnd(14));
		dataset_builder_add_record(b, qi, grp[r], sa[r], &err);
	}
	CHECK(b && dataset_builder_finish(b, &ds, &err) == PM_OK);
	dataset_builder_destroy(b);
	if (!ds)
		return;
	CHECK(ds->n_records == N);
	for (size_t r = 0; r < N; r++) {
		for (int a = 0; a < A; a++)
			bad +=
			    strcmp(dataset_tuple_value(ds, ds->rec_tuple[r], a), vals[r][a]) != 0;
		bad += strcmp(ds->group_labels[ds->rec_group[r]], grp[r]) != 0;
		bad += strcmp(ds->sa_values.str[ds->rec_sa[r]], sa[r]) != 0;
	}
	CHECK(bad == 0);
	for (size_t q = 0; q < ds->n_tuples; q++)
		sum_q += ds->tuple_count[q];
	CHECK(sum_q == N);
	for (size_t g = 0; g < ds->n_groups; g++) {
		uint64_t nq = 0, ns = 0;

		for (size_t i = ds->bq_off[g]; i < ds->bq_off[g + 1]; i++) {
			nq += ds->bq_count[i];
			bad += i > ds->bq_off[g] && ds->bq_tuple[i - 1] >= ds->bq_tuple[i];
		}
		for (size_t i = ds->bs_off[g]; i < ds->bs_off[g + 1]; i++) {
			ns += ds->bs_count[i];
			bad += i > ds->bs_off[g] && ds->bs_value[i - 1] >= ds->bs_value[i];
		}
		bad += nq != ds->group_size[g] || ns != ds->group_size[g];
	}
	CHECK(bad == 0);
	for (size_t i = 1; i < ds->sa_values.n; i++)
		CHECK(strcmp(ds->sa_values.str[i - 1], ds->sa_values.str[i]) < 0);
	dataset_destroy(ds);
}

int main(void)
{
	test_records_form();
	test_published_form();
	test_create_errors();
	test_row_errors();
	test_limits();
	test_finish_errors();
	test_random_consistency();
	return check_done();
}
