/* store_cache.c: a dataset is parsed once and then shared; every lookup
 * still checks the tenant; a deleted dataset goes once its users release
 * it; the limit bounds what is kept (0: nothing); a stored text that does
 * not read back is PM_ERR_INTERNAL; lookups from many threads at once
 * share one parse or equal ones, and the counts add up. */
#include <pthread.h>
#include <stdlib.h>

#include "check.h"
#include "random_table.h"
#include "server.h"
#include "store.h"

static char root[] = "/tmp/pmaxent_cache_XXXXXX";

/* A random dataset's JSON text, stored as id for tenant t1; its record
 * count into *n. */
static void put(struct store *s, const char *id, uint64_t seed, size_t *n)
{
	uint64_t rng = seed;
	struct dataset *ds = random_dataset(&rng);
	json_t *j = codec_dataset_json(ds);
	char *text = json_dumps(j, JSON_COMPACT);
	struct pm_error err = {0};

	*n = ds->n_records;
	CHECK(text && store_dataset_insert(s, id, "t1", "{}", text, &err) == PM_OK);
	free(text);
	json_decref(j);
	dataset_destroy(ds);
}

static void stats(struct store *s, uint64_t hits, uint64_t misses, size_t entries)
{
	struct store_cache_stats cs;

	store_cache_stats(s, &cs);
	CHECK(cs.hits == hits && cs.misses == misses && cs.entries == entries);
	if (cs.hits != hits || cs.misses != misses || cs.entries != entries)
		fprintf(stderr, "hits %llu misses %llu entries %zu\n", (unsigned long long)cs.hits,
			(unsigned long long)cs.misses, cs.entries);
	CHECK((entries == 0) == (cs.bytes == 0));
}

static void test_shared_and_tenants(struct store *s)
{
	const struct dataset *a = NULL, *b = NULL, *c = NULL;
	struct pm_error err = {0};
	size_t n;

	put(s, "ds_1", 11, &n);
	CHECK(store_dataset_parsed(s, "ds_1", "t1", &a, &err) == PM_OK);
	CHECK(a && a->n_records == n);
	CHECK(store_dataset_parsed(s, "ds_1", "t1", &b, &err) == PM_OK);
	CHECK(a == b); /* parsed once */
	stats(s, 1, 1, 1);
	CHECK(store_dataset_parsed(s, "ds_1", "t2", &c, &err) == PM_ERR_NOT_FOUND);
	CHECK(c == NULL);
	CHECK(store_dataset_parsed(s, "ds_none", "t1", &c, &err) == PM_ERR_NOT_FOUND);
	store_dataset_release(s, a);
	store_dataset_release(s, b);
	store_dataset_release(s, NULL);
	stats(s, 1, 1, 1); /* kept for the next one */
	CHECK(store_dataset_parsed(s, "ds_1", "t1", &a, &err) == PM_OK && a == b);
	store_dataset_release(s, a);
	stats(s, 2, 1, 1);
}

static void test_delete_in_use(struct store *s)
{
	const struct dataset *a = NULL, *b = NULL;
	struct pm_error err = {0};
	size_t n;

	put(s, "ds_2", 12, &n);
	CHECK(store_dataset_parsed(s, "ds_2", "t1", &a, &err) == PM_OK);
	stats(s, 2, 2, 2);
	CHECK(store_dataset_delete(s, "ds_2", "t1", &err) == PM_OK);
	CHECK(a->n_records == n); /* still readable by its user */
	stats(s, 2, 2, 2);
	CHECK(store_dataset_parsed(s, "ds_2", "t1", &b, &err) == PM_ERR_NOT_FOUND);
	store_dataset_release(s, a);
	stats(s, 2, 2, 1);
	/* a dataset of the same id stored again is parsed again */
	put(s, "ds_2", 13, &n);
	CHECK(store_dataset_parsed(s, "ds_2", "t1", &b, &err) == PM_OK && b->n_records == n);
	store_dataset_release(s, b);
	stats(s, 2, 3, 2);
	CHECK(store_dataset_delete(s, "ds_2", "t1", &err) == PM_OK);
	stats(s, 2, 3, 1);
}

static void test_limit_and_unreadable(struct store *s)
{
	const struct dataset *a = NULL, *b = NULL;
	struct pm_error err = {0};
	size_t n;

	store_cache_limit(s, 0); /* drops ds_1 (not in use) */
	stats(s, 2, 3, 0);
	put(s, "ds_3", 14, &n);
	CHECK(store_dataset_parsed(s, "ds_3", "t1", &a, &err) == PM_OK);
	CHECK(store_dataset_parsed(s, "ds_3", "t1", &b, &err) == PM_OK && a == b);
	store_dataset_release(s, a);
	stats(s, 3, 4, 1); /* in use: kept over the limit */
	store_dataset_release(s, b);
	stats(s, 3, 4, 0);
	store_cache_limit(s, STORE_CACHE_BYTES);
	CHECK(store_dataset_insert(s, "ds_bad", "t1", "{}", "{\"records\": 5}", &err) == PM_OK);
	CHECK(store_dataset_parsed(s, "ds_bad", "t1", &a, &err) == PM_ERR_INTERNAL);
	CHECK_CONTAINS(err.message, "the stored dataset ds_bad is unreadable");
	CHECK(a == NULL);
	stats(s, 3, 4, 0);
}

struct lookups {
	struct store *s;
	size_t n_records, bad;
};

static void *lookup_many(void *arg)
{
	struct lookups *l = arg;

	for (int i = 0; i < 200; i++) {
		const struct dataset *d = NULL;
		struct pm_error err = {0};

		if (store_dataset_parsed(l->s, "ds_4", "t1", &d, &err) ||
		    d->n_records != l->n_records)
			__atomic_add_fetch(&l->bad, 1, __ATOMIC_RELAXED);
		store_dataset_release(l->s, d);
	}
	return NULL;
}

static void test_threads(struct store *s)
{
	struct lookups l = {s, 0, 0};
	struct store_cache_stats cs;
	pthread_t t[4];

	put(s, "ds_4", 15, &l.n_records);
	for (int i = 0; i < 4; i++)
		CHECK(pthread_create(&t[i], NULL, lookup_many, &l) == 0);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	store_cache_stats(s, &cs);
	CHECK(l.bad == 0);
	CHECK(cs.hits + cs.misses == 3 + 4 + 800 && cs.misses >= 5 && cs.entries == 1);
}

/* On a fresh data directory, or on the empty PostgreSQL database of
 * argv[1] (tests/pg_suite.sh). */
int main(int argc, char **argv)
{
	char dir[4096];
	struct store *s = NULL;
	struct pm_error err = {0};

	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(dir, sizeof dir, "%s/var", root);
	CHECK(store_open(argc > 1 ? argv[1] : dir, &s, &err) == PM_OK);
	if (err.status)
		fprintf(stderr, "store_open: %s\n", err.message);
	if (!s)
		return check_done();
	test_shared_and_tenants(s);
	test_delete_in_use(s);
	test_limit_and_unreadable(s);
	test_threads(s);
	store_close(s);
	snprintf(dir, sizeof dir, "rm -rf '%s'", root);
	CHECK(system(dir) == 0);
	return check_done();
}
