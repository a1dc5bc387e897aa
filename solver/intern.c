/*
 * Lists of uint32 interned to dense ids (0, 1, ... in order of first
 * sight): the relaxations' tuple signatures and bucket keys, where equal
 * lists must share one id. Open addressing on a 64-bit FNV-style hash,
 * the lists themselves in one pool.
 */
#include <stdlib.h>
#include <string.h>

#include "intern.h"

static uint64_t hash_list(const uint32_t *a, size_t n)
{
	uint64_t h = 1469598103934665603u ^ n;

	for (size_t i = 0; i < n; i++)
		h = (h ^ a[i]) * 1099511628211u;
	return h ^ (h >> 29);
}

static int intern_grow(struct intern *t)
{
	size_t cap = t->cap ? 2 * t->cap : 1024;
	int32_t *slot = malloc(cap * sizeof *slot);

	if (!slot)
		return -1;
	for (size_t i = 0; i < cap; i++)
		slot[i] = -1;
	for (size_t id = 0; id < t->n; id++) {
		size_t i = t->hash[id] & (cap - 1);

		while (slot[i] >= 0)
			i = (i + 1) & (cap - 1);
		slot[i] = (int32_t)id;
	}
	free(t->slot);
	t->slot = slot;
	t->cap = cap;
	return 0;
}

int intern_reserve(void **p, size_t *cap, size_t need, size_t size)
{
	size_t c = *cap ? *cap : 256;
	void *q;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	q = realloc(*p, c * size);
	if (!q)
		return -1;
	*p = q;
	*cap = c;
	return 0;
}

int32_t intern_get(struct intern *t, const uint32_t *a, size_t n)
{
	uint64_t h = hash_list(a, n);
	size_t i, ids_cap = t->n + 2;

	if ((t->n + 1) * 2 > t->cap && intern_grow(t))
		return -1;
	for (i = h & (t->cap - 1); t->slot[i] >= 0; i = (i + 1) & (t->cap - 1)) {
		size_t id = (size_t)t->slot[i], len = t->off[id + 1] - t->off[id];

		if (t->hash[id] == h && len == n && (!n || !memcmp(t->pool + t->off[id], a, n * 4)))
			return (int32_t)id;
	}
	if (intern_reserve((void **)&t->pool, &t->pool_cap, t->pool_n + n + 1, 4))
		return -1;
	{
		size_t *off = realloc(t->off, (ids_cap + 1) * sizeof *off);
		uint64_t *hs = off ? realloc(t->hash, ids_cap * sizeof *hs) : NULL;

		if (off)
			t->off = off;
		if (!hs)
			return -1;
		t->hash = hs;
	}
	if (t->n == 0)
		t->off[0] = 0;
	if (n) /* a may be NULL for the empty list */
		memcpy(t->pool + t->pool_n, a, n * 4);
	t->pool_n += n;
	t->off[t->n + 1] = t->pool_n;
	t->hash[t->n] = h;
	t->slot[i] = (int32_t)t->n;
	return (int32_t)t->n++;
}

void intern_free(struct intern *t)
{
	free(t->slot);
	free(t->off);
	free(t->pool);
	free(t->hash);
	memset(t, 0, sizeof *t);
}
