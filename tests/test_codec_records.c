/*
 * codec_records_dataset, the records form read straight from its text:
 * whatever it reads must be what json_loadb + codec_dataset read (the same
 * dataset, as codec_dataset_json writes it), and whatever it does not
 * read it must leave to them (PM_ERR_INPUT), every error included. Checked
 * on every JSON document of tests/data (the bad datasets of codec_bad.txt
 * must all be left), on the cases below (which say which way each goes),
 * and on Adult anatomized.
 */
#include <dirent.h>
#include <jansson.h>

#include "check.h"
#include "test_data.h"

/* The dataset as codec_dataset_json writes it, compact (caller frees). */
static char *general_text(const char *text, size_t len)
{
	struct pm_error err = {0};
	struct dataset *ds = NULL;
	json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);

	if (!j || codec_dataset(j, &ds, &err))
		ds = NULL;
	json_decref(j);
	return ds ? dataset_text(ds) : NULL;
}

/* 1 read directly, 0 left to the general way; either way agreeing with
 * it. */
static int check_agrees(const char *name, const char *text, size_t len)
{
	struct pm_error err = {0};
	struct dataset *ds = NULL;
	enum pm_status st = codec_records_dataset(text, len, &ds, &err);
	char *want = general_text(text, len), *got;

	CHECK(st == PM_OK || st == PM_ERR_INPUT);
	CHECK((st == PM_OK) == (ds != NULL));
	if (st) {
		CHECK_CONTAINS(err.message, "not read directly");
		free(want);
		return 0;
	}
	got = dataset_text(ds);
	if (!want || !got || strcmp(want, got))
		fprintf(stderr, "%s: read directly as %.200s\n  the general way: %.200s\n", name,
			got ? got : "(none)", want ? want : "(an error)");
	CHECK(want && got && !strcmp(want, got));
	free(want);
	free(got);
	return 1;
}

/* Every .json under tests/data: the datasets agree, the bad ones and the
 * documents that are no dataset are left. */
static void test_data_files(void)
{
	DIR *d = opendir(data_dir());
	struct dirent *e;
	int direct = 0, files = 0;

	CHECK(d != NULL);
	while (d && (e = readdir(d))) {
		size_t n = strlen(e->d_name), len;
		char path[1024], *text;
		int is_bad = strncmp(e->d_name, "codec_bad_ds_", 13) == 0;

		if (n < 5 || strcmp(e->d_name + n - 5, ".json"))
			continue;
		snprintf(path, sizeof path, "%s/%s", data_dir(), e->d_name);
		CHECK((text = read_file(path, &len)) != NULL);
		if (!text)
			continue;
		files++;
		if (check_agrees(e->d_name, text, len)) {
			CHECK(!is_bad);
			direct++;
		}
		free(text);
	}
	if (d)
		closedir(d);
	CHECK(files > 100);
	CHECK(direct >= 10); /* the records-form datasets */
}

/* Each case: the text and whether it is read directly (1) or left (0). */
static void test_cases(void)
{
	static const char head[] = "{\"qi_attributes\": [\"a\", \"b\"], \"sa_attribute\": \"s\", ";
	static const struct {
		int direct;
		const char *rest;
	} cases[] = {
	    {1, "\"records\": [{\"qi\": [\"x\", \"y\"], \"group\": 1, \"sa\": \"f\"}]}"},
	    /* keys of a row in any order; integers as their text */
	    {1, "\"records\": [{\"sa\": 7, \"group\": \"g\", \"qi\": [-0, 12]}]}"},
	    {1, "\"records\": [{\"qi\": [\"x\", 123456789012345678], \"group\": -3, \"sa\": 0}]}"},
	    /* escapes and UTF-8 */
	    {1, "\"records\": [{\"qi\": [\"a\\\"b\\\\c\\/d\", \"\\t\\n\\r\\b\\f\"], "
		"\"group\": 1, \"sa\": \"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\"}]}\n\n"},
	    {1, "\"records\":[{\"qi\":[\"x\",\"y\"],\"group\":1,\"sa\":\"f\"},"
		"{\"qi\":[\"x\",\"z\"],\"group\":1,\"sa\":\"g\"}]}"},
	    /* left: the general way words these */
	    {0, "\"records\": [{\"qi\": [\"x\", \"y\"], \"group\": 1, \"sa\": 1.5}]}"},
	    {0, "\"records\": [{\"qi\": [\"x\", 1e2], \"group\": 1, \"sa\": \"f\"}]}"},
	    {0,
	     "\"records\": [{\"qi\": [\"x\", 1234567890123456789], \"group\": 1, \"sa\": \"f\"}]}"},
	    {0, "\"records\": [{\"qi\": [\"x\", 012], \"group\": 1, \"sa\": \"f\"}]}"},
	    {0, "\"records\": [{\"qi\": [\"\\u0078\", \"y\"], \"group\": 1, \"sa\": \"f\"}]}"},
	    {0, "\"records\": [{\"qi\": [\"x\", \"y\"], \"group\": 1, \"sa\": \"\xC3\x28\"}]}"},
	    {0, "\"records\": [{\"qi\": [\"x\", \"y\"], \"group\": 1, \"sa\": \"\xED\xA0\x80\"}]}"},
	    {0, "\"records\": [{\"qi\": [\"x\", \"y\"], \"group\": 1, \"sa\": \"a\tb\"}]}"},
	    {0, "\"records\": [{\"qi\": [\"x\", \"y\"], \"group\": 1, \"sa\": \"f\", \"sa\": "
		"\"g\"}]}"},
	    {0, "\"records\": [{\"qi\": [\"x\", \"y\"], \"group\": 1}]}"},
	    {0, "\"records\": [{\"qi\": [\"x\"], \"group\": 1, \"sa\": \"f\"}]}"},
	    {0, "\"records\": [{\"qi\": [\"x\", \"y\", \"z\"], \"group\": 1, \"sa\": \"f\"}]}"},
	    {0, "\"records\": [{\"qi\": [\"x\", \"y\"], \"group\": 1, \"sa\": \"f\"},]}"},
	    {0, "\"records\": [{\"qi\": [\"x\", \"y\"], \"group\": 1, \"sa\": \"f\"}]} x"},
	    {0, "\"records\": [{\"qi\": [\"x\", \"y\"], \"group\": 1, \"sa\": \"f\"}], \"name\": "
		"\"n\"}"},
	    {0, "\"records\": [{\"qi\": [\"x\", \"y\"], \"group\": 1, \"sa\": \"f\"}]"},
	    {0, "\"records\": []}"},
	    {0, "\"records\": [{\"qi\": [\"x\", \"y\"], \"group\": true, \"sa\": \"f\"}]}"},
	};
	char text[512];

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(text, sizeof text, "%s%s", head, cases[i].rest);
		if (check_agrees(text, text, strlen(text)) != cases[i].direct)
			fprintf(stderr, "case %zu: expected %s\n", i,
				cases[i].direct ? "read directly" : "left");
		CHECK(check_agrees(text, text, strlen(text)) == cases[i].direct);
	}
}

/* The head: "name" a string or null, in any order before "records". */
static void test_heads(void)
{
	static const struct {
		int direct;
		const char *head;
	} cases[] = {
	    {1, "{\"name\": \"t\", \"qi_attributes\": [\"a\"], \"sa_attribute\": \"s\", "},
	    {1, "{\"sa_attribute\": \"s\", \"name\": null, \"qi_attributes\": [\"a\"], "},
	    {1, "{\"qi_attributes\": [\"a\"], \"name\": \"\", \"sa_attribute\": \"s\", "},
	    {0, "{\"qi_attributes\": [\"a\"], \"name\": 3, \"sa_attribute\": \"s\", "},
	    {0,
	     "{\"qi_attributes\": [\"a\"], \"qi_attributes\": [\"a\"], \"sa_attribute\": \"s\", "},
	    {0, "{\"qi_attributes\": [\"a\", \"a\"], \"sa_attribute\": \"s\", "},
	    {0, "{\"qi_attributes\": [], \"sa_attribute\": \"s\", "},
	    {0, "{\"qi_attributes\": [\"a\"], "},
	    {0, "{\"qi_attributes\": [\"a\"], \"sa_attribute\": \"a\", "},
	    {0, "{\"qi_attributes\": [\"a\"], \"sa_attribute\": \"s\", \"qit\": [], "},
	};
	char text[512];

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(text, sizeof text,
			 "%s\"records\": [{\"qi\": [\"x\"], \"group\": 1, \"sa\": \"f\"}]}",
			 cases[i].head);
		CHECK(check_agrees(text, text, strlen(text)) == cases[i].direct);
	}
}

/* Adult anatomized, as `pmaxent anatomize` writes it (indented). */
static void test_adult(void)
{
	char *compact = adult_json(), *pretty = NULL;
	json_t *j = compact ? json_loads(compact, 0, NULL) : NULL;

	if (!compact) {
		printf("# adult.csv not found: skipped\n");
		return;
	}
	pretty = json_dumps(j, JSON_INDENT(2));
	CHECK(check_agrees("adult", compact, strlen(compact)) == 1);
	CHECK(pretty && check_agrees("adult, indented", pretty, strlen(pretty)) == 1);
	json_decref(j);
	free(pretty);
	free(compact);
}

int main(void)
{
	test_data_files();
	test_cases();
	test_heads();
	test_adult();
	return check_done();
}
