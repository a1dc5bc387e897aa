/*
 * parallel.c: every part runs exactly once per phase, on the range
 * parallel_range gives it; ranges tile the items; the pool survives many
 * phases (the two-level solve runs hundreds); NULL and 1-thread pools run
 * inline; destroy(NULL) is a no-op. parallel_items runs every item exactly
 * once, with a valid part, also interleaved with parallel_run phases and
 * with passes shorter than a worker's wake-up. The default thread count
 * is the process's CPUs (its affinity).
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <pthread.h>
#include <sched.h>

#include "check.h"
#include "parallel.h"

#define ITEMS 1000

struct job {
	size_t off[ITEMS + 1];
	int hits[ITEMS];
	int parts_seen[64];
	pthread_t who[64];
};

static void work(void *ctx, int part, int parts)
{
	struct job *j = ctx;
	size_t lo, hi;

	parallel_range(ITEMS, j->off, part, parts, &lo, &hi);
	for (size_t i = lo; i < hi; i++)
		j->hits[i]++;
	j->parts_seen[part]++;
	j->who[part] = pthread_self();
}

struct item_job {
	int hits[ITEMS];
	int bad_part;
	size_t n;
};

static void item_work(void *ctx, size_t item, int part)
{
	struct item_job *j = ctx;

	j->hits[item]++;
	j->bad_part |= part < 0 || part >= 4;
}

/* Passes of n items (n = 0 and 1 included: over before a worker wakes),
 * interleaved with fixed-part phases. */
static void test_items(struct parallel *p, struct job *fixed)
{
	static struct item_job j;

	for (int pass = 0; pass < 300; pass++) {
		size_t n = (size_t)(pass * 37) % (ITEMS + 1);

		memset(j.hits, 0, sizeof j.hits);
		parallel_items(p, n, item_work, &j);
		for (size_t i = 0; i < ITEMS; i++)
			if (j.hits[i] != (i < n))
				CHECK(j.hits[i] == (i < n));
		if (pass % 3 == 0)
			parallel_run(p, work, fixed);
	}
	CHECK(!j.bad_part);
}

static void check_ranges(const size_t *off, int parts)
{
	size_t next = 0, total = off ? off[ITEMS] : ITEMS, heaviest = 0, item_max = 1;

	for (int p = 0; p < parts; p++) {
		size_t lo, hi;

		parallel_range(ITEMS, off, p, parts, &lo, &hi);
		CHECK(lo == next);
		CHECK(hi >= lo);
		next = hi;
		heaviest = fmax(heaviest, off ? off[hi] - off[lo] : hi - lo);
	}
	CHECK(next == ITEMS);
	for (size_t i = 0; off && i < ITEMS; i++)
		item_max = fmax(item_max, off[i + 1] - off[i]);
	/* balanced to within one item of the even share */
	CHECK(heaviest <= total / (size_t)parts + 2 * item_max);
}

/* The default thread count follows the CPUs the process may use (as
 * under taskset -c 0), not the CPUs online: one here, on any machine. */
static void test_affinity(void)
{
	cpu_set_t all, one;
	struct parallel *p = NULL;

	CHECK(parallel_cpus() >= 1);
	if (sched_getaffinity(0, sizeof all, &all) != 0)
		return;
	CHECK(parallel_cpus() == CPU_COUNT(&all));
	CPU_ZERO(&one);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &all)) {
			CPU_SET(c, &one);
			break;
		}
	CHECK(sched_setaffinity(0, sizeof one, &one) == 0);
	CHECK(parallel_cpus() == 1);
	CHECK(parallel_create(0, &p) == PM_OK);
	CHECK(parallel_parts(p) == 1);
	parallel_destroy(p);
	CHECK(sched_setaffinity(0, sizeof all, &all) == 0);
}

int main(void)
{
	static struct job j;
	struct parallel *p = NULL;

	parallel_destroy(NULL);
	for (size_t i = 0; i < ITEMS; i++) /* uneven weights */
		j.off[i + 1] = j.off[i] + 1 + (i % 7) * (i % 13);
	for (int parts = 1; parts <= 9; parts++) {
		check_ranges(j.off, parts);
		check_ranges(NULL, parts);
	}
	CHECK(parallel_parts(NULL) == 1);
	parallel_run(NULL, work, &j);
	for (size_t i = 0; i < ITEMS; i++)
		CHECK(j.hits[i] == 1);

	CHECK(parallel_create(4, &p) == PM_OK);
	CHECK(parallel_parts(p) == 4);
	memset(&j.hits, 0, sizeof j.hits);
	memset(&j.parts_seen, 0, sizeof j.parts_seen);
	for (int phase = 0; phase < 500; phase++)
		parallel_run(p, work, &j);
	for (size_t i = 0; i < ITEMS; i++)
		if (j.hits[i] != 500)
			CHECK(j.hits[i] == 500);
	for (int part = 0; part < 4; part++)
		CHECK(j.parts_seen[part] == 500);
	CHECK(pthread_equal(j.who[0], pthread_self()));
	CHECK(!pthread_equal(j.who[1], pthread_self()));
	memset(&j.hits, 0, sizeof j.hits);
	test_items(p, &j);
	for (size_t i = 0; i < ITEMS; i++) /* the fixed phases ran 100 times */
		if (j.hits[i] != 100)
			CHECK(j.hits[i] == 100);
	test_items(NULL, &j);
	parallel_destroy(p);

	CHECK(parallel_create(1, &p) == PM_OK);
	CHECK(parallel_parts(p) == 1);
	parallel_run(p, work, &j);
	CHECK(pthread_equal(j.who[0], pthread_self()));
	parallel_destroy(p);

	CHECK(parallel_create(0, &p) == PM_OK); /* one per CPU */
	CHECK(parallel_parts(p) >= 1);
	parallel_destroy(p);
	test_affinity();
	return check_done();
}
