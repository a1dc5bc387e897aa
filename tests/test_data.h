/*
 * Test data the test programs share: the data directory, whole files, its
 * JSON documents and datasets, and Adult anatomized as the benchmarks
 * build it (when the shared data is there). Static (and may go unused), so
 * each test includes it on its own.
 */
#ifndef PMAXENT_TEST_DATA_H
#define PMAXENT_TEST_DATA_H

#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "server.h"

#define TEST_DATA_FN static __attribute__((unused))

TEST_DATA_FN const char *data_dir(void)
{
	const char *d = getenv("PMAXENT_TEST_DATA");

	return d ? d : "tests/data";
}

TEST_DATA_FN char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	if (buf) {
		buf[n] = '\0';
		*len = (size_t)n;
	}
	return buf;
}

/* The JSON document `name` of the data directory (duplicate keys refused,
 * as the service does); new reference, or NULL and a failed CHECK. */
TEST_DATA_FN json_t *data_json(const char *name)
{
	char path[1024];
	json_error_t je;
	json_t *j;

	snprintf(path, sizeof path, "%s/%s", data_dir(), name);
	j = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		fprintf(stderr, "cannot load %s: %s\n", path, je.text);
	CHECK(j != NULL);
	return j;
}

/* The dataset of the JSON document `name` (caller destroys), or NULL and
 * a failed CHECK. */
TEST_DATA_FN struct dataset *data_dataset(const char *name)
{
	struct pm_error err = {0};
	struct dataset *ds = NULL;
	json_t *j = data_json(name);

	CHECK(codec_dataset(j, &ds, &err) == PM_OK);
	if (!ds)
		fprintf(stderr, "%s: %s: %s\n", name, err.field, err.message);
	json_decref(j);
	return ds;
}

/* ds (may be NULL: NULL) as compact dataset JSON text (caller frees);
 * ds is destroyed. */
TEST_DATA_FN char *dataset_text(struct dataset *ds)
{
	json_t *j = ds ? codec_dataset_json(ds) : NULL;
	char *out = j ? json_dumps(j, JSON_COMPACT) : NULL;

	json_decref(j);
	dataset_destroy(ds);
	return out;
}

/* Adult anatomized (SA occupation, l = 5) as dataset JSON text (caller
 * frees), or NULL when ../shared/data is not there. */
TEST_DATA_FN char *adult_json(void)
{
	static const char *const qi[] = {"age",	 "type_employer", "marital", "relationship",
					 "race", "sex",		  "country", "education"};
	struct anatomy_options o = {5, 1, 0};
	struct csv_table t = {0};
	struct dataset *ds = NULL;
	struct pm_error err = {0};
	char path[512], *text, *out = NULL;
	size_t len, aside;

	snprintf(path, sizeof path, "%s/../../../shared/data/adult/adult.csv", data_dir());
	if (!(text = read_file(path, &len)))
		return NULL;
	if (!csv_parse(text, len, &t, &err) &&
	    !anatomy_run(&t, "occupation", qi, 8, &o, &ds, &aside, &err))
		out = dataset_text(ds);
	else
		dataset_destroy(ds);
	csv_table_finish(&t);
	free(text);
	return out;
}

#endif
