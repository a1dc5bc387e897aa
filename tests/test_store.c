/* store.c: datasets and analyses on SQLite; tenant isolation; the
 * compare-and-set of analysis states; reopening; threads; kill -9 in the
 * middle of writes (nothing half-written is ever visible). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "store.h"

static char root[] = "/tmp/pmaxent_store_XXXXXX";

/* A fresh directory under root (not created: store_open must do it). */
static void subdir(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "%s/%s", root, name);
}

static void rm_tree(const char *path)
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

static struct store *open_or_die(const char *dir)
{
	struct pm_error err = {0};
	struct store *s = NULL;

	if (store_open(dir, &s, &err)) {
		fprintf(stderr, "store_open(%s): %s\n", dir, err.message);
		exit(1);
	}
	return s;
}

/* Ids of a list, joined by ',' (easy to compare). */
static void ids_of(const struct store_row *rows, size_t n, char *buf, size_t size)
{
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		strncat(buf, rows[i].id, size - strlen(buf) - 1);
		if (i + 1 < n)
			strncat(buf, ",", size - strlen(buf) - 1);
	}
}

/* Pages through a tenant's datasets `limit` at a time. */
static void dataset_pages(struct store *s, const char *tenant, size_t limit, char *buf, size_t size,
			  int *pages)
{
	struct pm_error err = {0};
	struct store_row *rows;
	char page[1024];
	int64_t after = 0;
	size_t n;

	buf[0] = '\0';
	*pages = 0;
	do {
		CHECK(store_dataset_list(s, tenant, after, limit, &rows, &n, &err) == PM_OK);
		CHECK(n <= limit);
		ids_of(rows, n, page, sizeof page);
		if (n && buf[0])
			strncat(buf, ",", size - strlen(buf) - 1);
		strncat(buf, page, size - strlen(buf) - 1);
		for (size_t i = 0; i < n; i++)
			CHECK(rows[i].seq > after && rows[i].body == NULL);
		if (n)
			after = rows[n - 1].seq;
		store_rows_free(rows, n);
		(*pages)++;
	} while (n == limit);
}

static void test_datasets(struct store *s)
{
	struct pm_error err = {0};
	struct store_row r;

	CHECK(store_dataset_insert(s, "ds_a", "t1", "{\"records\":3}", "{\"body\":\"a\"}", &err) ==
	      PM_OK);
	CHECK(store_dataset_insert(s, "ds_b", "t1", "{\"records\":4}", "{\"body\":\"b\"}", &err) ==
	      PM_OK);
	CHECK(store_dataset_insert(s, "ds_c", "t2", "{\"records\":5}", "{\"body\":\"c\"}", &err) ==
	      PM_OK);
	for (int i = 0; i < 5; i++) {
		char id[16];
		snprintf(id, sizeof id, "ds_p%d", i);
		CHECK(store_dataset_insert(s, id, "t1", "{}", "{}", &err) == PM_OK);
	}
	CHECK(store_dataset_insert(s, "ds_a", "t2", "{}", "{}", &err) == PM_ERR_CONFLICT);
	CHECK_CONTAINS(err.message, "dataset \"ds_a\" already exists");

	CHECK(store_dataset_get(s, "ds_a", "t1", 1, &r, &err) == PM_OK);
	CHECK_STR(r.id, "ds_a");
	CHECK_STR(r.tenant, "t1");
	CHECK_STR(r.summary, "{\"records\":3}");
	CHECK_STR(r.body, "{\"body\":\"a\"}");
	CHECK(r.seq > 0 && r.created > 0 && r.updated == r.created);
	store_row_finish(&r);
	CHECK(store_dataset_get(s, "ds_a", "t1", 0, &r, &err) == PM_OK);
	CHECK(r.body == NULL);
	CHECK_STR(r.summary, "{\"records\":3}");
	store_row_finish(&r);
	store_row_finish(&r); /* finished rows are zeroed: a second finish is harmless */
	CHECK(store_dataset_get(s, "ds_x", "t1", 1, &r, &err) == PM_ERR_NOT_FOUND);
	CHECK_STR(err.message, "no dataset \"ds_x\"");
	CHECK(r.id == NULL);
}

/* Lists: seq order, paging by after/limit, only the tenant's, no bodies. */
static void test_dataset_lists(struct store *s)
{
	struct pm_error err = {0};
	struct store_row *rows;
	char ids[1024];
	size_t n;
	int pages;

	dataset_pages(s, "t1", 2, ids, sizeof ids, &pages);
	CHECK_STR(ids, "ds_a,ds_b,ds_p0,ds_p1,ds_p2,ds_p3,ds_p4");
	CHECK(pages == 4); /* 2+2+2+1 */
	dataset_pages(s, "t1", 100, ids, sizeof ids, &pages);
	CHECK_STR(ids, "ds_a,ds_b,ds_p0,ds_p1,ds_p2,ds_p3,ds_p4");
	CHECK(pages == 1);
	dataset_pages(s, "t2", 7, ids, sizeof ids, &pages);
	CHECK_STR(ids, "ds_c");
	CHECK(store_dataset_list(s, "t1", 0, 0, &rows, &n, &err) == PM_OK);
	CHECK(n == 0);
	store_rows_free(rows, n);
	CHECK(store_dataset_list(s, "nobody", 0, 10, &rows, &n, &err) == PM_OK);
	CHECK(n == 0);
	store_rows_free(rows, n);
	CHECK(store_dataset_list(s, "t1", INT64_MAX, 10, &rows, &n, &err) == PM_OK);
	CHECK(n == 0);
	store_rows_free(rows, n);
	store_rows_free(NULL, 0);
}

static void test_tenants(struct store *s)
{
	struct pm_error err = {0};
	struct store_row r, *rows = NULL;
	size_t n = 7;

	/* ds_c and an_c are t2's: to t1 they do not exist */
	CHECK(store_analysis_insert(s, "an_c", "t2", "ds_c", "{}", &err) == PM_OK);
	CHECK(store_dataset_get(s, "ds_c", "t1", 0, &r, &err) == PM_ERR_NOT_FOUND);
	CHECK_STR(err.message, "no dataset \"ds_c\"");
	CHECK(store_dataset_delete(s, "ds_c", "t1", &err) == PM_ERR_NOT_FOUND);
	CHECK_STR(err.message, "no dataset \"ds_c\"");
	CHECK(store_analysis_insert(s, "an_x", "t1", "ds_c", "{}", &err) == PM_ERR_NOT_FOUND);
	CHECK_STR(err.message, "no dataset \"ds_c\"");
	CHECK(store_analysis_list(s, "ds_c", "t1", 0, 10, &rows, &n, &err) == PM_ERR_NOT_FOUND);
	CHECK_STR(err.message, "no dataset \"ds_c\"");
	CHECK(rows == NULL && n == 0);
	CHECK(store_analysis_get(s, "an_c", "t1", &r, &err) == PM_ERR_NOT_FOUND);
	CHECK_STR(err.message, "no analysis \"an_c\"");
	CHECK(store_analysis_delete(s, "an_c", "t1", &err) == PM_ERR_NOT_FOUND);
	CHECK_STR(err.message, "no analysis \"an_c\"");
	/* and nothing of t2's was touched by those attempts */
	CHECK(store_dataset_get(s, "ds_c", "t2", 1, &r, &err) == PM_OK);
	CHECK_STR(r.body, "{\"body\":\"c\"}");
	store_row_finish(&r);
	CHECK(store_analysis_get(s, "an_c", "t2", &r, &err) == PM_OK);
	CHECK_STR(r.tenant, "t2");
	store_row_finish(&r);
	/* workers look analyses up with no tenant */
	CHECK(store_analysis_get(s, "an_c", NULL, &r, &err) == PM_OK);
	CHECK_STR(r.dataset_id, "ds_c");
	store_row_finish(&r);
	CHECK(store_analysis_get(s, "an_x", NULL, &r, &err) == PM_ERR_NOT_FOUND);
	CHECK(store_analysis_list(s, "ds_nope", "t1", 0, 10, &rows, &n, &err) == PM_ERR_NOT_FOUND);
	CHECK_STR(err.message, "no dataset \"ds_nope\"");
}

static void test_analysis_rows(struct store *s)
{
	struct pm_error err = {0};
	struct store_row r, *rows;
	char ids[256];
	size_t n;

	CHECK(store_analysis_insert(s, "an_1", "t1", "ds_a", "{\"knowledge\":null}", &err) ==
	      PM_OK);
	CHECK(store_analysis_insert(s, "an_2", "t1", "ds_a", "{}", &err) == PM_OK);
	CHECK(store_analysis_insert(s, "an_3", "t1", "ds_a", "{}", &err) == PM_OK);
	CHECK(store_analysis_insert(s, "an_b", "t1", "ds_b", "{}", &err) == PM_OK);
	CHECK(store_analysis_insert(s, "an_1", "t1", "ds_b", "{}", &err) == PM_ERR_CONFLICT);
	CHECK_STR(err.message, "analysis \"an_1\" already exists");
	CHECK(store_analysis_get(s, "an_1", "t1", &r, &err) == PM_OK);
	CHECK_STR(r.status, "queued");
	CHECK_STR(r.tenant, "t1");
	CHECK_STR(r.dataset_id, "ds_a");
	CHECK_STR(r.request, "{\"knowledge\":null}");
	CHECK(r.result == NULL && r.problem == NULL && r.attempts == 0 && r.created > 0);
	store_row_finish(&r);

	CHECK(store_analysis_list(s, "ds_a", "t1", 0, 2, &rows, &n, &err) == PM_OK);
	ids_of(rows, n, ids, sizeof ids);
	CHECK_STR(ids, "an_1,an_2");
	int64_t after = n == 2 ? rows[1].seq : 0;
	store_rows_free(rows, n);
	CHECK(store_analysis_list(s, "ds_a", "t1", after, 2, &rows, &n, &err) == PM_OK);
	ids_of(rows, n, ids, sizeof ids);
	CHECK_STR(ids, "an_3");
	store_rows_free(rows, n);
	CHECK(store_analysis_list(s, "ds_b", "t1", 0, 10, &rows, &n, &err) == PM_OK);
	ids_of(rows, n, ids, sizeof ids);
	CHECK_STR(ids, "an_b");
	store_rows_free(rows, n);
}

static void check_analysis(struct store *s, const char *id, const char *status, int attempts,
			   const char *result, const char *problem)
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

static void test_transitions(struct store *s)
{
	struct pm_error err = {0};

	/* an_1: queued -> running -> succeeded, with its result */
	CHECK(store_analysis_transition(s, "an_1", "queued", "running", NULL, &err) == PM_OK);
	check_analysis(s, "an_1", "running", 1, NULL, NULL);
	CHECK(store_analysis_transition(s, "an_1", "running", "succeeded", "{\"r\":1}", &err) ==
	      PM_OK);
	check_analysis(s, "an_1", "succeeded", 1, "{\"r\":1}", NULL);
	CHECK(store_analysis_transition(s, "an_1", "queued|running", "cancelled", NULL, &err) ==
	      PM_ERR_CONFLICT);
	CHECK_STR(err.message, "analysis \"an_1\" is succeeded, not queued|running");
	check_analysis(s, "an_1", "succeeded", 1, "{\"r\":1}", NULL);

	/* an_2: cancelled while queued; a worker's late success is refused */
	CHECK(store_analysis_transition(s, "an_2", "queued|running", "cancelled", NULL, &err) ==
	      PM_OK);
	CHECK(store_analysis_transition(s, "an_2", "running", "succeeded", "{}", &err) ==
	      PM_ERR_CONFLICT);
	CHECK_STR(err.message, "analysis \"an_2\" is cancelled, not running");
	check_analysis(s, "an_2", "cancelled", 0, NULL, NULL);

	/* an_3: two attempts (put back to queued at a shutdown), then failed */
	CHECK(store_analysis_transition(s, "an_3", "queued", "running", NULL, &err) == PM_OK);
	CHECK(store_analysis_transition(s, "an_3", "running", "queued", NULL, &err) == PM_OK);
	check_analysis(s, "an_3", "queued", 1, NULL, NULL);
	CHECK(store_analysis_transition(s, "an_3", "queued", "running", NULL, &err) == PM_OK);
	CHECK(store_analysis_transition(s, "an_3", "running", "failed", "{\"status\":422}", &err) ==
	      PM_OK);
	check_analysis(s, "an_3", "failed", 2, NULL, "{\"status\":422}");

	CHECK(store_analysis_transition(s, "an_gone", "queued", "running", NULL, &err) ==
	      PM_ERR_NOT_FOUND);
	CHECK_STR(err.message, "no analysis \"an_gone\"");
	CHECK(store_analysis_transition(s, "an_b", "queued", "done", NULL, &err) ==
	      PM_ERR_INTERNAL);
	CHECK_STR(err.message, "unknown analysis status \"done\"");
	CHECK(store_analysis_transition(s, "an_b", "queued|waiting", "running", NULL, &err) ==
	      PM_ERR_INTERNAL);
	CHECK_STR(err.message, "unknown analysis status \"waiting\"");
	check_analysis(s, "an_b", "queued", 0, NULL, NULL);
}

/* Lists leave the (possibly huge) result out; get has it. */
static void test_analysis_list_fields(struct store *s)
{
	struct pm_error err = {0};
	struct store_row *rows;
	size_t n;

	CHECK(store_analysis_list(s, "ds_a", "t1", 0, 10, &rows, &n, &err) == PM_OK);
	CHECK(n == 3);
	for (size_t i = 0; i < n; i++)
		CHECK(rows[i].result == NULL && rows[i].status != NULL);
	CHECK(n == 3 && rows[2].problem && !strcmp(rows[2].problem, "{\"status\":422}"));
	store_rows_free(rows, n);
}

static void check_counts(struct store *s, int64_t q, int64_t r, int64_t ok, int64_t f, int64_t c)
{
	struct pm_error err = {0};
	int64_t counts[5] = {-1, -1, -1, -1, -1};

	CHECK(store_analysis_counts(s, counts, &err) == PM_OK);
	CHECK(counts[0] == q);
	CHECK(counts[1] == r);
	CHECK(counts[2] == ok);
	CHECK(counts[3] == f);
	CHECK(counts[4] == c);
}

static void check_unfinished(struct store *s, const char *want)
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

static void test_unfinished_counts(struct store *s)
{
	struct pm_error err = {0};

	/* an_c (t2, inserted first) and an_b are queued; make an_c running */
	CHECK(store_analysis_transition(s, "an_c", "queued", "running", NULL, &err) == PM_OK);
	check_unfinished(s, "an_c,an_b");
	check_counts(s, 1, 1, 1, 1, 1);
}

/* Deleting a dataset takes its analyses along; deleting an analysis. */
static void test_delete(struct store *s)
{
	struct pm_error err = {0};
	struct store_row r, *rows;
	size_t n;

	CHECK(store_dataset_delete(s, "ds_a", "t1", &err) == PM_OK);
	CHECK(store_dataset_get(s, "ds_a", "t1", 0, &r, &err) == PM_ERR_NOT_FOUND);
	CHECK(store_analysis_get(s, "an_1", NULL, &r, &err) == PM_ERR_NOT_FOUND);
	CHECK(store_analysis_get(s, "an_3", NULL, &r, &err) == PM_ERR_NOT_FOUND);
	CHECK(store_analysis_list(s, "ds_a", "t1", 0, 10, &rows, &n, &err) == PM_ERR_NOT_FOUND);
	CHECK(store_dataset_delete(s, "ds_a", "t1", &err) == PM_ERR_NOT_FOUND);
	CHECK_STR(err.message, "no dataset \"ds_a\"");
	check_counts(s, 1, 1, 0, 0, 0);
	/* the dataset's id is free again: an analysis of the old one does not come back */
	CHECK(store_dataset_insert(s, "ds_a", "t1", "{}", "{}", &err) == PM_OK);
	CHECK(store_analysis_list(s, "ds_a", "t1", 0, 10, &rows, &n, &err) == PM_OK);
	CHECK(n == 0);
	store_rows_free(rows, n);

	CHECK(store_analysis_insert(s, "an_d", "t1", "ds_b", "{}", &err) == PM_OK);
	CHECK(store_analysis_delete(s, "an_d", "t1", &err) == PM_OK);
	CHECK(store_analysis_get(s, "an_d", NULL, &r, &err) == PM_ERR_NOT_FOUND);
	CHECK(store_analysis_delete(s, "an_d", "t1", &err) == PM_ERR_NOT_FOUND);
	CHECK(store_analysis_transition(s, "an_d", "queued", "running", NULL, &err) ==
	      PM_ERR_NOT_FOUND);
	check_unfinished(s, "an_c,an_b");
}

/* After close and open again everything written is there. */
static void test_reopen(struct store **sp, const char *dir)
{
	struct pm_error err = {0};
	struct store_row r;
	char ids[1024];
	int pages;

	store_close(*sp);
	*sp = open_or_die(dir);
	dataset_pages(*sp, "t1", 3, ids, sizeof ids, &pages);
	CHECK_STR(ids, "ds_b,ds_p0,ds_p1,ds_p2,ds_p3,ds_p4,ds_a");
	CHECK(store_dataset_get(*sp, "ds_c", "t2", 1, &r, &err) == PM_OK);
	CHECK_STR(r.summary, "{\"records\":5}");
	CHECK_STR(r.body, "{\"body\":\"c\"}");
	store_row_finish(&r);
	check_analysis(*sp, "an_c", "running", 1, NULL, NULL);
	check_unfinished(*sp, "an_c,an_b");
	check_counts(*sp, 1, 1, 0, 0, 0);
}

/* ---- threads --------------------------------------------------------------- */

#define THREADS	   4
#define PER_THREAD 200

struct worker {
	struct store *s;
	int k, errors;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct pm_error err = {0};
	struct store_row r;
	char id[32], an[32], tenant[16], body[64];

	snprintf(tenant, sizeof tenant, "th%d", w->k);
	for (int i = 0; i < PER_THREAD; i++) {
		snprintf(id, sizeof id, "ds_%d_%d", w->k, i);
		snprintf(an, sizeof an, "an_%d_%d", w->k, i);
		snprintf(body, sizeof body, "{\"k\":%d,\"i\":%d}", w->k, i);
		w->errors += store_dataset_insert(w->s, id, tenant, "{}", body, &err) != PM_OK;
		w->errors += store_dataset_get(w->s, id, tenant, 1, &r, &err) != PM_OK;
		w->errors += !r.body || strcmp(r.body, body) != 0;
		store_row_finish(&r);
		w->errors += store_analysis_insert(w->s, an, tenant, id, "{}", &err) != PM_OK;
		w->errors +=
		    store_analysis_transition(w->s, an, "queued", "running", NULL, &err) != PM_OK;
		w->errors += store_analysis_get(w->s, an, NULL, &r, &err) != PM_OK;
		w->errors += !r.status || strcmp(r.status, "running") != 0;
		store_row_finish(&r);
	}
	if (w->errors)
		fprintf(stderr, "thread %d: %d errors, last: %s\n", w->k, w->errors, err.message);
	return NULL;
}

static void test_threads(const char *dir)
{
	struct store *s = open_or_die(dir);
	struct worker w[THREADS];
	pthread_t t[THREADS];
	struct pm_error err = {0};
	struct store_row *rows;
	char tenant[16];
	size_t n;

	for (int k = 0; k < THREADS; k++) {
		w[k] = (struct worker){s, k, 0};
		CHECK(pthread_create(&t[k], NULL, worker_main, &w[k]) == 0);
	}
	for (int k = 0; k < THREADS; k++) {
		pthread_join(t[k], NULL);
		CHECK(w[k].errors == 0);
		snprintf(tenant, sizeof tenant, "th%d", k);
		CHECK(store_dataset_list(s, tenant, 0, 1000, &rows, &n, &err) == PM_OK);
		CHECK(n == PER_THREAD);
		store_rows_free(rows, n);
	}
	check_counts(s, 0, THREADS * PER_THREAD, 0, 0, 0);
	store_close(s);
}

/* ---- crashes --------------------------------------------------------------- */

#define CRASH_BODY (100 * 1024)

/* The body written for row i: long, and different per row, so that a torn
 * write or a mixed-up row cannot pass the comparison. */
static char *crash_text(int i, char tag)
{
	size_t len = CRASH_BODY + (size_t)(i % 97);
	char *t = malloc(len + 1);

	for (size_t j = 0; j < len; j++)
		t[j] = (char)('a' + (size_t)(i * 7 + tag + j) % 26);
	t[0] = tag;
	t[len] = '\0';
	return t;
}

/* The child: writes datasets and analyses with results until killed,
 * reporting each commit on fd. */
static void crash_child(const char *dir, int fd)
{
	struct pm_error err = {0};
	struct store *s = open_or_die(dir);
	char id[32], an[32], summary[64];

	for (int i = 0;; i++) {
		char *body = crash_text(i, 'D'), *result = crash_text(i, 'R');

		snprintf(id, sizeof id, "ds_%d", i);
		snprintf(an, sizeof an, "an_%d", i);
		snprintf(summary, sizeof summary, "{\"i\":%d}", i);
		if (store_dataset_insert(s, id, "crash", summary, body, &err) ||
		    store_analysis_insert(s, an, "crash", id, summary, &err) ||
		    store_analysis_transition(s, an, "queued", "running", NULL, &err) ||
		    store_analysis_transition(s, an, "running", "succeeded", result, &err)) {
			fprintf(stderr, "crash child: %s\n", err.message);
			_exit(1);
		}
		free(body);
		free(result);
		if (write(fd, "x", 1) != 1)
			_exit(1);
	}
}

static void check_crash_dataset(struct store *s, const struct store_row *row, int i)
{
	struct pm_error err = {0};
	struct store_row r;
	char id[32], summary[64];
	char *body = crash_text(i, 'D');

	snprintf(id, sizeof id, "ds_%d", i);
	snprintf(summary, sizeof summary, "{\"i\":%d}", i);
	CHECK_STR(row->id, id);
	CHECK_STR(row->summary, summary);
	CHECK(store_dataset_get(s, id, "crash", 1, &r, &err) == PM_OK);
	CHECK(r.body && strcmp(r.body, body) == 0);
	store_row_finish(&r);
	free(body);
}

/* A visible analysis is queued, running or succeeded with its whole result. */
static void check_crash_analysis(struct store *s, int i, int *unfinished)
{
	struct pm_error err = {0};
	struct store_row r;
	char an[32];
	char *result = crash_text(i, 'R');

	snprintf(an, sizeof an, "an_%d", i);
	if (store_analysis_get(s, an, "crash", &r, &err) == PM_OK) {
		if (!strcmp(r.status, "succeeded")) {
			CHECK(r.attempts == 1 && r.result && strcmp(r.result, result) == 0);
		} else {
			CHECK(r.result == NULL);
			CHECK((!strcmp(r.status, "queued") && r.attempts == 0) ||
			      (!strcmp(r.status, "running") && r.attempts == 1));
			(*unfinished)++;
		}
	}
	store_row_finish(&r);
	free(result);
}

static void check_integrity(const char *dir)
{
	char path[4200];
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;

	snprintf(path, sizeof path, "%s/pmaxent.db", dir);
	CHECK(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK);
	CHECK(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) == SQLITE_OK);
	CHECK(sqlite3_step(st) == SQLITE_ROW);
	CHECK_STR((const char *)sqlite3_column_text(st, 0), "ok");
	sqlite3_finalize(st);
	/* no analysis outlived its dataset */
	CHECK(sqlite3_prepare_v2(db, "PRAGMA foreign_key_check", -1, &st, NULL) == SQLITE_OK);
	CHECK(sqlite3_step(st) == SQLITE_DONE);
	sqlite3_finalize(st);
	sqlite3_close(db);
}

/* Kills the writer after `acks` commits plus `delay_us`, then checks. */
static void crash_round(const char *dir, int acks, int delay_us)
{
	struct pm_error err = {0};
	struct store_row *rows;
	struct store *s;
	int fds[2], got = 0, status, unfinished = 0;
	size_t n;
	char c;
	pid_t pid;

	CHECK(pipe(fds) == 0);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		crash_child(dir, fds[1]);
	}
	close(fds[1]);
	while (got < acks && read(fds[0], &c, 1) == 1)
		got++;
	usleep((useconds_t)delay_us);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	close(fds[0]);
	CHECK(got == acks);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

	s = open_or_die(dir);
	CHECK(store_dataset_list(s, "crash", 0, 100000, &rows, &n, &err) == PM_OK);
	printf("crash round: %d acknowledged, %zu datasets visible after kill -9\n", acks, n);
	CHECK(n >= (size_t)acks); /* everything committed survives */
	for (size_t i = 0; i < n; i++) {
		check_crash_dataset(s, &rows[i], (int)i); /* and no gap or torn row */
		check_crash_analysis(s, (int)i, &unfinished);
	}
	CHECK(unfinished <= 1); /* at most the one being written */
	store_rows_free(rows, n);
	store_close(s);
	check_integrity(dir);
}

static void test_crash(void)
{
	static const int acks[] = {3, 10, 25, 40}, delays[] = {0, 700, 2000, 5000};
	char dir[4096];

	for (int k = 0; k < 4; k++) {
		snprintf(dir, sizeof dir, "%s/crash%d", root, k);
		crash_round(dir, acks[k], delays[k]);
	}
}

/* A restart with an analysis running at the kill: it is still "running"
 * with one attempt, listed as unfinished, and can be started again. */
static void test_restart(const char *dir)
{
	struct pm_error err = {0};
	struct store *s = open_or_die(dir);
	int fds[2], status;
	pid_t pid;
	char c;

	CHECK(store_dataset_insert(s, "ds_r", "", "{}", "{\"records\":[]}", &err) == PM_OK);
	CHECK(store_analysis_insert(s, "an_r1", "", "ds_r", "{}", &err) == PM_OK);
	CHECK(store_analysis_insert(s, "an_r2", "", "ds_r", "{}", &err) == PM_OK);
	store_close(s);
	CHECK(pipe(fds) == 0);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		s = open_or_die(dir);
		if (store_analysis_transition(s, "an_r1", "queued", "running", NULL, &err) ||
		    write(fds[1], "x", 1) != 1)
			_exit(1);
		pause(); /* "solving" with the store open, until killed */
		_exit(1);
	}
	CHECK(read(fds[0], &c, 1) == 1);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	close(fds[0]);
	close(fds[1]);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	s = open_or_die(dir);
	check_unfinished(s, "an_r1,an_r2");
	check_analysis(s, "an_r1", "running", 1, NULL, NULL);
	CHECK(store_analysis_transition(s, "an_r1", "queued|running", "running", NULL, &err) ==
	      PM_OK);
	CHECK(store_analysis_transition(s, "an_r1", "running", "succeeded", "{}", &err) == PM_OK);
	check_analysis(s, "an_r1", "succeeded", 2, "{}", NULL);
	check_unfinished(s, "an_r2");
	store_close(s);
}

/* ---- bad files ------------------------------------------------------------- */

static void test_bad_files(void)
{
	struct pm_error err = {0};
	struct store *s = (struct store *)1;
	char dir[2048], path[2200];
	sqlite3 *db;
	FILE *f;

	store_close(NULL);
	CHECK(store_open("", &s, &err) == PM_ERR_INPUT);
	CHECK_STR(err.field, "data_dir");
	CHECK_STR(err.message, "is empty; name a data directory");
	CHECK(s == NULL);
	/* a corrupt database file: PM_ERR_IO with SQLite's words, no abort */
	subdir(dir, sizeof dir, "corrupt");
	CHECK(mkdir(dir, 0700) == 0);
	snprintf(path, sizeof path, "%s/pmaxent.db", dir);
	f = fopen(path, "w");
	for (int i = 0; i < 1000; i++)
		fputs("this is not an SQLite database at all. ", f);
	fclose(f);
	CHECK(store_open(dir, &s, &err) == PM_ERR_IO);
	CHECK(s == NULL);
	CHECK_CONTAINS(err.message, "the database: file is not a database");
	CHECK(!strstr(err.message, dir)); /* the path goes to the log only */

	/* a database from a newer pmaxent is refused, not misread */
	subdir(dir, sizeof dir, "newer");
	CHECK(mkdir(dir, 0700) == 0);
	snprintf(path, sizeof path, "%s/pmaxent.db", dir);
	CHECK(sqlite3_open(path, &db) == SQLITE_OK);
	CHECK(sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);
	CHECK(store_open(dir, &s, &err) == PM_ERR_IO);
	CHECK_CONTAINS(err.message, "has schema version 99; this pmaxent knows ");

	/* a data directory that cannot be created */
	snprintf(path, sizeof path, "%s/corrupt/pmaxent.db/sub", root);
	CHECK(store_open(path, &s, &err) == PM_ERR_IO);
	CHECK_CONTAINS(err.message, "cannot create data directory");
	CHECK_CONTAINS(err.message, "Not a directory");
}

/* The mode bits of path, or -1. */
static int mode_of(const char *path)
{
	struct stat st;

	return stat(path, &st) ? -1 : (int)(st.st_mode & 07777);
}

/*
 * One store per data directory (a lock file with the holder's pid), its
 * files private, and a version 1 database (before the crash count)
 * migrated at open with its rows intact.
 */
static void test_lock_and_files(void)
{
	struct pm_error err = {0};
	struct store *s, *t = NULL;
	struct store_row r = {0};
	struct store_result m = {0};
	char dir[2048], path[2200], want[2300];
	sqlite3 *db;

	subdir(dir, sizeof dir, "locked");
	s = open_or_die(dir);
	CHECK(store_open(dir, &t, &err) == PM_ERR_IO && t == NULL);
	snprintf(want, sizeof want, "data directory %s is in use by pid %ld", dir, (long)getpid());
	CHECK_STR(err.message, want);
	CHECK_STR(err.field, "data_dir");
	snprintf(path, sizeof path, "%s/pmaxent.lock", dir);
	CHECK(mode_of(path) == 0600);
	snprintf(path, sizeof path, "%s/pmaxent.db", dir);
	CHECK(mode_of(path) == 0600);
	CHECK(store_dataset_insert(s, "ds_1", "", "{}", "{}", &err) == PM_OK);
	snprintf(path, sizeof path, "%s/pmaxent.db-wal", dir);
	CHECK(mode_of(path) == 0600);
	store_close(s);
	/* released with the store; files an older version left readable are
	 * made private */
	snprintf(path, sizeof path, "%s/pmaxent.db", dir);
	CHECK(chmod(path, 0644) == 0);
	s = open_or_die(dir);
	CHECK(mode_of(path) == 0600);
	store_close(s);

	/* schema version 1 (no crash count), with a row in it */
	subdir(dir, sizeof dir, "v1");
	CHECK(mkdir(dir, 0700) == 0);
	snprintf(path, sizeof path, "%s/pmaxent.db", dir);
	CHECK(sqlite3_open(path, &db) == SQLITE_OK);
	CHECK(sqlite3_exec(
		  db,
		  "CREATE TABLE datasets(seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT "
		  "UNIQUE NOT NULL, tenant TEXT NOT NULL, summary TEXT NOT NULL, body TEXT "
		  "NOT NULL, created INTEGER NOT NULL, updated INTEGER NOT NULL);"
		  "CREATE TABLE analyses(seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT "
		  "UNIQUE NOT NULL, tenant TEXT NOT NULL, dataset_id TEXT NOT NULL "
		  "REFERENCES datasets(id) ON DELETE CASCADE, status TEXT NOT NULL, request "
		  "TEXT, result TEXT, problem TEXT, attempts INTEGER NOT NULL DEFAULT 0, "
		  "created INTEGER NOT NULL, updated INTEGER NOT NULL);"
		  "INSERT INTO datasets VALUES(1, 'ds_old', '', '{}', '{}', 1, 1);"
		  "INSERT INTO analyses VALUES(1, 'an_old', '', 'ds_old', 'running', '{}', "
		  "NULL, NULL, 1, 1, 1);"
		  "INSERT INTO analyses VALUES(2, 'an_done', '', 'ds_old', 'succeeded', '{}', "
		  "'{\"x\":1}', NULL, 1, 1, 1);"
		  "PRAGMA user_version = 1",
		  NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);
	s = open_or_die(dir);
	CHECK(store_analysis_get(s, "an_old", NULL, &r, &err) == PM_OK);
	CHECK(r.crashes == 0 && r.attempts == 1 && !strcmp(r.status, "running"));
	store_row_finish(&r);
	CHECK(store_analysis_interrupted(s, "an_old", 2, "{\"p\": 1}", &(int){0}, &err) == PM_OK);
	CHECK(store_analysis_get(s, "an_old", NULL, &r, &err) == PM_OK);
	CHECK(r.crashes == 1 && !strcmp(r.status, "queued") && !r.problem);
	store_row_finish(&r);
	CHECK(store_analysis_transition(s, "an_old", "queued", "running", NULL, &err) == PM_OK);
	CHECK(store_analysis_interrupted(s, "an_old", 2, "{\"p\": 1}", &(int){0}, &err) == PM_OK);
	CHECK(store_analysis_get(s, "an_old", NULL, &r, &err) == PM_OK);
	CHECK(r.crashes == 2 && !strcmp(r.status, "failed") && r.problem);
	store_row_finish(&r);
	/* a result stored in the row reads as before */
	CHECK(store_analysis_get(s, "an_done", NULL, &r, &err) == PM_OK);
	CHECK_STR(r.result, "{\"x\":1}");
	store_row_finish(&r);
	CHECK(store_analysis_head(s, "an_done", "", 0, &r, &m, &err) == PM_OK);
	CHECK(m.legacy && m.len == -1 && m.request_len == -1 && !m.summary && !r.result);
	store_row_finish(&r);
	store_result_finish(&m);
	store_close(s);
}

/* The suite of every back end (db.h) on the store at where: a fresh
 * data directory or an empty PostgreSQL database; threads_at another. */
static void suite(const char *where, const char *threads_at)
{
	struct store *s = open_or_die(where);

	test_datasets(s);
	test_dataset_lists(s);
	test_tenants(s);
	test_analysis_rows(s);
	test_transitions(s);
	test_analysis_list_fields(s);
	test_unfinished_counts(s);
	test_delete(s);
	test_reopen(&s, where);
	store_close(s);
	test_threads(threads_at);
}

/* With two PostgreSQL URIs (tests/meson.build starts a server with
 * scripts/pg-temp): the suite on them. Else the suite on SQLite and what
 * is SQLite's own (files, locks, kill -9 mid-write). */
int main(int argc, char **argv)
{
	char dir[4096], threads[4096];
	struct stat st;

	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	if (argc == 3) {
		suite(argv[1], argv[2]);
		rm_tree(root);
		return check_done();
	}
	/* nested and missing: store_open creates the whole path, private */
	subdir(dir, sizeof dir, "var/data");
	subdir(threads, sizeof threads, "threads");
	suite(dir, threads);
	CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700);
	subdir(dir, sizeof dir, "restart");
	test_restart(dir);
	test_crash();
	test_bad_files();
	test_lock_and_files();
	rm_tree(root);
	return check_done();
}
