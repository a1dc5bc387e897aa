/*
 * intern: lists of uint32 interned to dense ids (intern.c), for the
 * relaxations' merging of identical buckets and tuples. Internal to
 * solver/.
 */
#ifndef PMAXENT_INTERN_H
#define PMAXENT_INTERN_H

#include <stddef.h>
#include <stdint.h>

/* ---- intern.c ----------------------------------------------------------- */

/* Interned lists of uint32 -> dense ids; zero-initialized is empty, and
 * intern_free empties it. */
struct intern {
	size_t n, cap, pool_n, pool_cap;
	int32_t *slot;
	size_t *off; /* id -> pool offset, n + 1 entries */
	uint32_t *pool;
	uint64_t *hash;
};

/* Id of list a[0..n) (a may be NULL when n = 0), new or not; -1 when out
 * of memory. The list's copy is t->pool[t->off[id] .. t->off[id + 1]),
 * borrowed, valid until the next intern_get or intern_free. */
int32_t intern_get(struct intern *t, const uint32_t *a, size_t n);
void intern_free(struct intern *t);
/* Grows the array *p of *cap elements of size bytes to hold need (by
 * doubling, from 256); -1 when out of memory, *p then unchanged. */
int intern_reserve(void **p, size_t *cap, size_t need, size_t size);

#endif
