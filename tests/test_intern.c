/*
 * The interning table of the relaxations (intern.c): equal lists share one
 * id, ids are dense in order of first sight, the pool keeps each list, and
 * all of it holds across the table's growth; intern_reserve's doubling.
 */
#include "check.h"
#include "intern.h"

/* List i of a family where lists differ by length, by content and by
 * order: i's digits in base 7, then i % 3 copies of 0. */
static size_t make_list(size_t i, uint32_t *a)
{
	size_t n = 0;

	for (size_t x = i; x; x /= 7)
		a[n++] = (uint32_t)(x % 7);
	for (size_t k = 0; k < i % 3; k++)
		a[n++] = 0;
	return n;
}

static int distinct(size_t i, size_t j)
{
	uint32_t a[32], b[32];
	size_t n = make_list(i, a), m = make_list(j, b);

	return n != m || memcmp(a, b, n * sizeof *a) != 0;
}

static void test_ids(void)
{
	enum { N = 5000 }; /* past the first tables of 1,024 slots */
	struct intern t = {0};
	int32_t *id = malloc(N * sizeof *id), next = 0;
	uint32_t a[32];

	CHECK(intern_get(&t, NULL, 0) == 0); /* the empty list */
	next = 1;
	for (size_t i = 1; id && i < N; i++) {
		size_t n = make_list(i, a);
		size_t j = 1;

		while (j < i && !(id[j] >= 0 && !distinct(i, j)))
			j++;
		id[i] = intern_get(&t, a, n);
		/* a list seen before has its id, a new one the next */
		CHECK(id[i] == (j < i ? id[j] : next));
		next += j == i;
	}
	CHECK(t.n == (size_t)next);
	/* every list again, after all the growth: same ids, pool intact */
	for (size_t i = 1; id && i < N; i++) {
		size_t n = make_list(i, a), k = (size_t)id[i];

		CHECK(intern_get(&t, a, n) == id[i]);
		CHECK(t.off[k + 1] - t.off[k] == n);
		CHECK(memcmp(t.pool + t.off[k], a, n * sizeof *a) == 0);
	}
	CHECK(intern_get(&t, NULL, 0) == 0);
	CHECK(t.n == (size_t)next);
	intern_free(&t);
	CHECK(t.n == 0 && t.slot == NULL);
	intern_free(&t); /* empty: a no-op */
	free(id);
}

static void test_reserve(void)
{
	uint32_t *p = NULL;
	size_t cap = 0;

	CHECK(intern_reserve((void **)&p, &cap, 1, sizeof *p) == 0);
	CHECK(p && cap == 256);
	p[255] = 7;
	CHECK(intern_reserve((void **)&p, &cap, 256, sizeof *p) == 0 && cap == 256);
	CHECK(intern_reserve((void **)&p, &cap, 1000, sizeof *p) == 0 && cap == 1024);
	CHECK(p[255] == 7); /* kept across the growth */
	free(p);
}

int main(void)
{
	test_ids();
	test_reserve();
	return check_done();
}
