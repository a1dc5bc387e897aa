/*
 * What the store's tests (test_store.c, test_store_sqlite.c) share: a
 * temporary root directory and fresh directories under it, a store
 * opened or the test ended, and the checks of an analysis row and of the
 * list of unfinished analyses.
 *
 * Everything is static (and may go unused) so that each test includes it
 * on its own.
 */
#ifndef PMAXENT_TEST_STORE_FIXTURE_H
#define PMAXENT_TEST_STORE_FIXTURE_H

#include <dirent.h>
#include <unistd.h>

#include "check.h"
#include "store.h"

#define STORE_FIXTURE_FN static __attribute__((unused))

static __attribute__((unused)) char root[] = "/tmp/pmaxent_store_XXXXXX";

/* A fresh directory under root (not created: store_open must do it). */
STORE_FIXTURE_FN void subdir(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "%s/%s", root, name);
}

STORE_FIXTURE_FN void rm_tree(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	char sub[4096];

	if (!d) {
		unlink(path);
		return;
	}
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
		rm_tree(sub);
	}
	closedir(d);
	rmdir(path);
}

STORE_FIXTURE_FN struct store *open_or_die(const char *dir)
{
	struct pm_error err = {0};
	struct store *s = NULL;

	if (store_open(dir, &s, &err)) {
		fprintf(stderr, "store_open(%s): %s\n", dir, err.message);
		exit(1);
	}
	return s;
}

STORE_FIXTURE_FN void check_analysis(struct store *s, const char *id, const char *status,
				     int attempts, const char *result, const char *problem)
{
	struct pm_error err = {0};
	struct store_row r;

	CHECK(store_analysis_get(s, id, NULL, &r, &err) == PM_OK);
	CHECK_STR(r.status, status);
	CHECK(r.attempts == attempts);
	if (result)
		CHECK_STR(r.result, result);
	else
		CHECK(r.result == NULL);
	if (problem)
		CHECK_STR(r.problem, problem);
	else
		CHECK(r.problem == NULL);
	store_row_finish(&r);
}

STORE_FIXTURE_FN void check_unfinished(struct store *s, const char *want)
{
	struct pm_error err = {0};
	char **ids = NULL, buf[256] = "";
	size_t n = 99;

	CHECK(store_analysis_unfinished(s, &ids, &n, &err) == PM_OK);
	for (size_t i = 0; i < n; i++) {
		if (i)
			strcat(buf, ",");
		strncat(buf, ids[i], sizeof buf - strlen(buf) - 2);
		free(ids[i]);
	}
	free(ids);
	CHECK_STR(buf, want);
}

#endif
