/* libFuzzer: one input = a knowledge JSON document, read against the
 * paper's Figure 1 table (tests/data/figure1.csv, FUZZ_DATASET to change
 * it) and run through mining, the constraint builder and the solver
 * (time-limited): must never crash, leak or hang. Half the mutations put
 * an extreme number in place of a numeric literal (number_mutate): a
 * bound of 1e308 once aborted the process in GLPK, and 1e-320 failed the
 * solve, which byte-level mutations rarely reach. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Numbers at the edges of doubles and of the documented limits
 * (docs/operations.md, "Input limits"), and just past them. */
static const char *const extremes[] = {
    "1e308",
    "-1e308",
    "1.7976931348623157e308",
    "1e309",
    "-1e309",
    "1e-320",
    "-1e-320",
    "5e-324",
    "2.2250738585072014e-308",
    "-0",
    "-0.0",
    "0",
    "9007199254740993",
    "-9007199254740993",
    "18446744073709551616",
    "4294967297",
    "2147483648",
    "1e-300",
    "1e9",
    "1000000001",
    "-1e9",
    "1e5",
    "100001",
    "1e-6",
    "9.99e-7",
    "1.0000000000000002",
    "0.9999999999999999",
    "1e-7",
};

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

/* Where numeric literals start and end outside strings: up to max of
 * them into at[] (start) and len[]; how many. */
static size_t number_spans(const uint8_t *d, size_t n, size_t *at, size_t *len, size_t max)
{
	size_t found = 0;
	int in_string = 0;

	for (size_t i = 0; i < n && found < max; i++) {
		if (in_string) {
			if (d[i] == '\\')
				i++;
			else if (d[i] == '"')
				in_string = 0;
			continue;
		}
		if (d[i] == '"') {
			in_string = 1;
			continue;
		}
		if (d[i] != '-' && (d[i] < '0' || d[i] > '9'))
			continue;
		at[found] = i;
		while (i < n && d[i] && strchr("+-.eE0123456789", d[i]))
			i++;
		len[found] = i - at[found];
		found++;
		i--;
	}
	return found;
}

/* One numeric literal of data replaced by an extreme; 0 when there is
 * none or no room. */
static size_t number_mutate(uint8_t *data, size_t size, size_t max_size, unsigned seed)
{
	size_t at[64], len[64], n = number_spans(data, size, at, len, 64), k, x_len;
	const char *x;

	if (n == 0)
		return 0;
	k = seed % n;
	x = extremes[(seed / 64) % (sizeof extremes / sizeof extremes[0])];
	x_len = strlen(x);
	if (size - len[k] + x_len > max_size)
		return 0;
	memmove(data + at[k] + x_len, data + at[k] + len[k], size - at[k] - len[k]);
	memcpy(data + at[k], x, x_len);
	return size - len[k] + x_len;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned seed)
{
	size_t n = seed & 1 ? number_mutate(data, size, max_size, seed >> 1) : 0;

	return n ? n : LLVMFuzzerMutate(data, size, max_size);
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
