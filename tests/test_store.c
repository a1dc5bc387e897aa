/* store.c's suite of every back end (SQLite here, PostgreSQL given two
 * URIs): datasets and analyses; tenant isolation; the compare-and-set of
 * analysis states; reopening; threads. What is SQLite's own (kill -9 in
 * the middle of writes, bad files, the lock) is in test_store_sqlite.c. */
#include <pthread.h>
#include <sys/stat.h>

#include "check.h"
#include "store.h"
#include "store_fixture.h"

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
 * scripts/pg-temp): the suite on them. Else the suite on SQLite (what is
 * SQLite's own: test_store_sqlite.c). */
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
	rm_tree(root);
	return check_done();
}
