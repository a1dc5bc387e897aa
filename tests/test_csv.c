/* CSV parsing (RFC 4180 quoting, line ends, BOM, blank lines), its errors by
 * line and message, and CSV -> dataset with its column errors. */
#include <stdint.h>

#include "check.h"
#include "constraints.h"

static enum pm_status parse(const char *text, struct csv_table *t, struct pm_error *err)
{
	memset(err, 0, sizeof *err);
	return csv_parse(text, strlen(text), t, err);
}

static void check_cells(const char *text, size_t n_cols, size_t n_rows, const char *const *want)
{
	struct csv_table t;
	struct pm_error err;

	CHECK(parse(text, &t, &err) == PM_OK);
	CHECK(t.n_cols == n_cols);
	CHECK(t.n_rows == n_rows);
	if (t.n_cols == n_cols && t.n_rows == n_rows) {
		for (size_t i = 0; i < n_cols; i++)
			CHECK_STR(t.header[i], want[i]);
		for (size_t i = 0; i < n_cols * n_rows; i++)
			CHECK_STR(t.cells[i], want[n_cols + i]);
	}
	csv_table_finish(&t);
}

static void test_parse(void)
{
	const char *plain[] = {"a", "b", "c", "1", "2", "3", "4", "5", "6"};
	const char *quoted[] = {"x", "y", "z", "a,b", "he said \"hi\"", "two\nlines", "", "", "\""};
	const char *ws[] = {" a", "b ", "  1 ", "\t2"};
	const char *lit[] = {"a", "b", "x\"y", "1\r2"};
	const char *one[] = {"h"};

	check_cells("a,b,c\n1,2,3\n4,5,6\n", 3, 2, plain);
	check_cells("a,b,c\n1,2,3\n4,5,6", 3, 2, plain);
	check_cells("a,b,c\r\n1,2,3\r\n4,5,6\r\n", 3, 2, plain);
	check_cells("\xEF\xBB\xBF"
		    "a,b,c\n1,2,3\n4,5,6\n",
		    3, 2, plain);
	check_cells("\n\r\na,b,c\n\n1,2,3\r\n\r\n4,5,6\n\n\n", 3, 2, plain);
	check_cells(
	    "\"x\",y,\"z\"\n\"a,b\",\"he said \"\"hi\"\"\",\"two\nlines\"\n,\"\",\"\"\"\"\n", 3, 2,
	    quoted);
	check_cells(" a,b \n  1 ,\t2\n", 2, 1, ws);
	check_cells("a,b\nx\"y,1\r2\n", 2, 1, lit);
	check_cells("h\n", 1, 0, one);
}

static void expect_parse_error(const char *text, size_t len, const char *field, const char *msg)
{
	struct csv_table t;
	struct pm_error err = {0};

	CHECK(csv_parse(text, len, &t, &err) == PM_ERR_INPUT);
	CHECK_STR(err.field, field);
	CHECK_CONTAINS(err.message, msg);
	CHECK(t.n_rows == 0 && t.n_cols == 0 && t.header == NULL && t.cells == NULL);
}

#define EXPECT_PARSE_ERROR(text, field, msg) expect_parse_error(text, strlen(text), field, msg)

static void test_parse_errors(void)
{
	EXPECT_PARSE_ERROR("", "line 1", "the CSV is empty");
	EXPECT_PARSE_ERROR("\xEF\xBB\xBF", "line 1", "the CSV is empty");
	EXPECT_PARSE_ERROR("\n\r\n\n", "line 1", "the CSV is empty");
	EXPECT_PARSE_ERROR("a,b\n1,\"x\n\n", "line 2", "quoted field is not terminated");
	/* line numbers are physical: the quoted newline counts */
	EXPECT_PARSE_ERROR("a,b\n\"1\n2\",3\n\n4,5,6\n", "line 5", "has 3 fields, expected 2");
	EXPECT_PARSE_ERROR("a,b,c,d\n1,2,3,4\n1,2,3,4,5\n", "line 3", "has 5 fields, expected 4");
	EXPECT_PARSE_ERROR("a,b\r\n1\r\n", "line 2", "has 1 fields, expected 2");
	EXPECT_PARSE_ERROR("age,sex,age\n", "line 1",
			   "duplicate column \"age\" in the header (columns 1 and 3)");
	EXPECT_PARSE_ERROR("\n\nage,,sex\n", "line 3", "column 2 of the header has an empty name");
	EXPECT_PARSE_ERROR("a,b\n\"x\"y,z\n", "line 2", "unexpected character after a closing");
	expect_parse_error("a,b\n1,2\0\n", 9, "line 2", "NUL byte");
	expect_parse_error("a,b\n\"1\n\0\",2\n", 12, "line 3", "NUL byte");
	CHECK(csv_parse(NULL, 0, &(struct csv_table){0}, &(struct pm_error){0}) == PM_ERR_INPUT);
	csv_table_finish(NULL);
}

static char *read_file(const char *name, size_t *len)
{
	const char *dir = getenv("PMAXENT_TEST_DATA");
	char path[4096];
	FILE *f;
	char *buf;

	snprintf(path, sizeof path, "%s/%s", dir ? dir : "tests/data", name);
	f = fopen(path, "rb");
	CHECK(f != NULL);
	if (!f)
		return NULL;
	buf = malloc(1 << 16);
	*len = fread(buf, 1, 1 << 16, f);
	fclose(f);
	return buf;
}

/* tests/data/csv_small.csv: CRLF, quoted header name, quoted comma, "" and a
 * CRLF inside quotes, a leading space that must stay. */
static void test_dataset_from_file(void)
{
	struct csv_table t;
	struct pm_error err = {0};
	struct dataset *ds = NULL;
	size_t len = 0;
	char *text = read_file("csv_small.csv", &len);

	if (!text)
		return;
	CHECK(csv_parse(text, len, &t, &err) == PM_OK);
	free(text);
	CHECK(t.n_cols == 5 && t.n_rows == 4);
	CHECK(csv_dataset(&t, "disease", "group", "small", &ds, &err) == PM_OK);
	csv_table_finish(&t);
	if (!ds)
		return;
	CHECK_STR(ds->name, "small");
	CHECK(ds->n_attrs == 3);
	CHECK_STR(ds->attr_names[0], "id");
	CHECK_STR(ds->attr_names[1], "age");
	CHECK_STR(ds->attr_names[2], "sex");
	CHECK_STR(ds->sa_name, "disease");
	CHECK(ds->has_ground_truth == 1);
	CHECK(ds->n_records == 4 && ds->n_groups == 2 && ds->n_tuples == 4);
	CHECK_STR(ds->group_labels[0], "g1");
	CHECK_STR(ds->group_labels[1], "g2");
	CHECK(ds->sa_values.n == 4);
	CHECK_STR(ds->sa_values.str[0], "Flu");
	CHECK_STR(ds->sa_values.str[1], "Flu, seasonal");
	CHECK_STR(ds->sa_values.str[2], "HIV");
	CHECK_STR(ds->sa_values.str[3], "Heart\r\ndisease");
	CHECK(ds->attr_values[1].n == 3);
	CHECK_STR(ds->attr_values[1].str[0], " 39");
	CHECK_STR(dataset_tuple_value(ds, 1, 2), "Fe\"male\"");
	CHECK(ds->rec_sa[0] == 1 && ds->rec_sa[1] == 2 && ds->rec_sa[2] == 3 && ds->rec_sa[3] == 0);
	dataset_destroy(ds);
}

static void expect_dataset_error(const char *text, const char *sa, const char *group,
				 const char *field, const char *msg)
{
	struct csv_table t;
	struct pm_error err = {0};
	struct dataset *ds = (struct dataset *)&err;

	CHECK(parse(text, &t, &err) == PM_OK);
	CHECK(csv_dataset(&t, sa, group, NULL, &ds, &err) == PM_ERR_INPUT);
	CHECK(ds == NULL);
	CHECK_STR(err.field, field);
	CHECK_CONTAINS(err.message, msg);
	csv_table_finish(&t);
}

static void test_dataset_errors(void)
{
	const char *ok = "age,sex,disease,g\n39,Male,Flu,1\n";

	expect_dataset_error(ok, "illness", "g", "sa", "no column \"illness\" in the header");
	expect_dataset_error(ok, "disease", "bucket", "group",
			     "no column \"bucket\" in the header");
	expect_dataset_error(ok, NULL, "g", "sa", "is missing");
	expect_dataset_error(ok, "disease", "", "group", "is missing");
	expect_dataset_error(ok, "disease", "disease", "group", "is the same column as sa");
	expect_dataset_error("disease,g\nFlu,1\n", "disease", "g", "line 1", "has no QI column");
	expect_dataset_error("age,disease,g\n", "disease", "g", "line 2", "no data rows");
}

/* "head\n" + rows, with {L} replaced by n copies of 'L' (caller frees). */
static char *with_long(const char *fmt, size_t n)
{
	const char *at = strstr(fmt, "{L}");
	char *s = malloc(strlen(fmt) + n + 1);

	memcpy(s, fmt, (size_t)(at - fmt));
	memset(s + (at - fmt), 'L', n);
	strcpy(s + (at - fmt) + n, at + 3);
	return s;
}

static void expect_long(const char *fmt, size_t n, const char *field, const char *msg)
{
	char *text = with_long(fmt, n);

	expect_dataset_error(text, "disease", "g", field, msg);
	free(text);
}

/* The builder's length limits, named by the line (where the row starts,
 * blank lines and quoted line breaks counted) and the column. */
static void test_dataset_limits(void)
{
	struct csv_table t;
	struct pm_error err = {0};
	struct dataset *ds = NULL;
	char *name = with_long("{L}", DATASET_MAX_NAME + 1);
	char *value = with_long("age,sex,disease,g\n39,{L},Flu,1\n", DATASET_MAX_VALUE);

	expect_long("age,{L},disease,g\n39,M,Flu,1\n", DATASET_MAX_ATTR_NAME + 1, "line 1",
		    "column 2 (\"LLLL");
	expect_long("age,{L},disease,g\n39,M,Flu,1\n", DATASET_MAX_ATTR_NAME + 1, "line 1",
		    "...\") is 257 bytes long; an attribute name may have at most 256 bytes");
	expect_long("age,sex,disease,g\n39,M,Flu,1\n\n40,{L},Flu,1\n", DATASET_MAX_VALUE + 1,
		    "line 4",
		    "column 2 (\"sex\") is 1025 bytes long; a value may have at most 1024 bytes");
	expect_long("age,sex,disease,g\n\"3\n9\",M,Flu,1\n40,F,{L},1\n", DATASET_MAX_VALUE + 1,
		    "line 4", "column 3 (\"disease\") is 1025 bytes long");
	expect_long("g,age,sex,disease\n{L},39,M,Flu\n", DATASET_MAX_GROUP + 1, "line 2",
		    "column 1 (\"g\") is 257 bytes long; a group label may have at most 256 bytes");
	/* a value at its limit is fine */
	CHECK(parse(value, &t, &err) == PM_OK);
	CHECK(csv_dataset(&t, "disease", "g", NULL, &ds, &err) == PM_OK);
	dataset_destroy(ds);
	ds = NULL;
	csv_table_finish(&t);
	CHECK(parse("age,disease,g\n39,Flu,1\n", &t, &err) == PM_OK);
	CHECK(csv_dataset(&t, "disease", "g", name, &ds, &err) == PM_ERR_INPUT);
	CHECK_STR(err.field, "name");
	CHECK_CONTAINS(err.message, "a dataset name may have at most 256 bytes");
	csv_table_finish(&t);
	free(name);
	free(value);
}

/* Group and SA columns may sit anywhere; QI keep header order. */
static void test_column_order(void)
{
	struct csv_table t;
	struct pm_error err = {0};
	struct dataset *ds = NULL;

	CHECK(parse("g,zip,s,age\n1,13053,Flu,28\n1,13068,HIV,29\n2,13053,Flu,28\n", &t, &err) ==
	      PM_OK);
	CHECK(csv_dataset(&t, "s", "g", NULL, &ds, &err) == PM_OK);
	csv_table_finish(&t);
	if (!ds)
		return;
	CHECK(ds->name == NULL);
	CHECK_STR(ds->attr_names[0], "zip");
	CHECK_STR(ds->attr_names[1], "age");
	CHECK(ds->n_tuples == 2 && ds->tuple_count[0] == 2);
	CHECK(ds->n_groups == 2 && ds->group_size[0] == 2 && ds->group_size[1] == 1);
	dataset_destroy(ds);
}

int main(void)
{
	test_parse();
	test_parse_errors();
	test_dataset_from_file();
	test_dataset_errors();
	test_dataset_limits();
	test_column_order();
	return check_done();
}
