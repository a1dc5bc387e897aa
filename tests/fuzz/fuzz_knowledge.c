/* libFuzzer: one input = a knowledge JSON document, read against the
 * paper's Figure 1 table (tests/data/figure1.csv, FUZZ_DATASET to change
 * it) and run through mining, the constraint builder and the solver
 * (time-limited): must never crash, leak or hang. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "server.h"

static struct dataset *ds;
static json_t *solver;

static char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long len;

	if (!f)
		return NULL;
	if (!fseek(f, 0, SEEK_END) && (len = ftell(f)) >= 0 && !fseek(f, 0, SEEK_SET) &&
	    (buf = malloc((size_t)len + 1)) && fread(buf, 1, (size_t)len, f) == (size_t)len) {
		buf[len] = '\0';
		*n = (size_t)len;
	} else {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *path = getenv("FUZZ_DATASET");
	struct csv_table t = {0};
	struct pm_error err = {0};
	size_t n = 0;
	char *text = slurp(path ? path : "tests/data/figure1.csv", &n);

	if (!text || csv_parse(text, n, &t, &err) ||
	    csv_dataset(&t, "disease", "group", NULL, &ds, &err)) {
		fprintf(stderr, "fuzz_knowledge: cannot load the dataset: %s\n", err.message);
		exit(1);
	}
	csv_table_finish(&t);
	free(text);
	/* a pathological bound may not hang the run */
	solver = json_pack("{s:f}", "time_limit", 0.5);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_error_t e;
	json_t *k = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &e), *out = NULL;
	struct pm_error err = {0};

	if (!k)
		return 0;
	pipeline_run_dataset(ds, k, solver, NULL, 0, &out, &err);
	json_decref(out);
	json_decref(k);
	return 0;
}
