/*
 * Parsed datasets, kept: every analysis, sweep and risk list needs its
 * dataset, and reading it from the store costs far more than the request
 * otherwise does. A dataset never changes once stored (it can only be
 * deleted), so a parsed one stays right for as long as its id exists:
 * each lookup still asks the store whether the tenant has it, and only the
 * read is saved. Entries are counted by about the bytes of their arrays
 * (one stored as JSON text before schema version 5: by the text's length,
 * an upper bound) and the least recently used unreferenced ones go once
 * the total is over the limit; an entry in use stays until it is
 * released.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

struct cache_entry {
	char *id;
	struct dataset *ds;
	size_t bytes;
	int refs;
	int dead;      /* deleted from the store: freed at the last release */
	uint64_t used; /* the cache's clock at its last lookup */
	struct cache_entry *next;
};

struct store_cache {
	pthread_mutex_t mu;
	struct cache_entry *head;
	size_t bytes, limit;
	uint64_t clock, hits, misses;
	double load_seconds; /* reading datasets on misses */
};

struct store_cache *store_cache_create(size_t limit)
{
	struct store_cache *c = calloc(1, sizeof *c);

	if (c) {
		pthread_mutex_init(&c->mu, NULL);
		c->limit = limit;
	}
	return c;
}

static void entry_free(struct cache_entry *e)
{
	dataset_destroy(e->ds);
	free(e->id);
	free(e);
}

void store_cache_destroy(struct store_cache *c)
{
	if (!c)
		return;
	for (struct cache_entry *e = c->head, *next; e; e = next) {
		next = e->next;
		entry_free(e);
	}
	pthread_mutex_destroy(&c->mu);
	free(c);
}

/* Unlinks e (under mu). */
static void unlink_entry(struct store_cache *c, struct cache_entry *e)
{
	for (struct cache_entry **p = &c->head; *p; p = &(*p)->next)
		if (*p == e) {
			*p = e->next;
			c->bytes -= e->bytes;
			return;
		}
}

/* Drops the least recently used unreferenced entries while over the
 * limit (under mu). */
static void trim(struct store_cache *c)
{
	while (c->bytes > c->limit) {
		struct cache_entry *lru = NULL;

		for (struct cache_entry *e = c->head; e; e = e->next)
			if (!e->refs && (!lru || e->used < lru->used))
				lru = e;
		if (!lru)
			return;
		unlink_entry(c, lru);
		entry_free(lru);
	}
}

/* The live entry of id, referenced, or NULL (under mu). */
static struct cache_entry *find(struct store_cache *c, const char *id)
{
	for (struct cache_entry *e = c->head; e; e = e->next)
		if (!e->dead && !strcmp(e->id, id)) {
			e->refs++;
			e->used = ++c->clock;
			return e;
		}
	return NULL;
}

/* Reads dataset id of tenant from the store into a new entry, or NULL
 * (err set). */
static struct cache_entry *load(struct store *s, const char *id, const char *tenant,
				struct pm_error *err)
{
	struct cache_entry *e = calloc(1, sizeof *e);

	if (!e || !(e->id = strdup(id))) {
		error_set(err, PM_ERR_NOMEM, "", "out of memory");
	} else if (!store_dataset_load(s, id, tenant, &e->ds, &e->bytes, err)) {
		e->refs = 1;
		return e;
	}
	if (e)
		free(e->id);
	free(e);
	return NULL;
}

/* Keeps e unless an entry of its id came meanwhile (two misses at once):
 * then that one, and e is freed. */
static struct cache_entry *keep(struct store_cache *c, struct cache_entry *e, double seconds)
{
	struct cache_entry *had;

	pthread_mutex_lock(&c->mu);
	c->misses++;
	c->load_seconds += seconds;
	if ((had = find(c, e->id))) {
		entry_free(e);
		e = had;
	} else {
		e->used = ++c->clock;
		e->next = c->head;
		c->head = e;
		c->bytes += e->bytes;
	}
	pthread_mutex_unlock(&c->mu);
	return e;
}

enum pm_status store_dataset_parsed(struct store *s, const char *id, const char *tenant,
				    const struct dataset **out, struct pm_error *err)
{
	struct store_cache *c = s->cache;
	struct store_row row = {0};
	struct cache_entry *e;
	enum pm_status st;

	*out = NULL;
	/* the tenant's, and still there: asked every time */
	if ((st = store_dataset_get(s, id, tenant, 0, &row, err)))
		return st;
	store_row_finish(&row);
	pthread_mutex_lock(&c->mu);
	if ((e = find(c, id)))
		c->hits++;
	pthread_mutex_unlock(&c->mu);
	if (!e) {
		double t0 = solver_now();

		if (!(e = load(s, id, tenant, err)))
			return err->status;
		e = keep(c, e, solver_now() - t0);
	}
	*out = e->ds;
	return PM_OK;
}

void store_dataset_release(struct store *s, const struct dataset *ds)
{
	struct store_cache *c = s ? s->cache : NULL;

	if (!c || !ds)
		return;
	pthread_mutex_lock(&c->mu);
	for (struct cache_entry *e = c->head; e; e = e->next)
		if (e->ds == ds) {
			if (--e->refs == 0 && e->dead) {
				unlink_entry(c, e);
				entry_free(e);
			}
			break;
		}
	trim(c);
	pthread_mutex_unlock(&c->mu);
}

void store_cache_set_limit(struct store_cache *c, size_t limit)
{
	pthread_mutex_lock(&c->mu);
	c->limit = limit;
	trim(c);
	pthread_mutex_unlock(&c->mu);
}

void store_cache_limit(struct store *s, size_t bytes)
{
	store_cache_set_limit(s->cache, bytes);
}

void store_cache_forget(struct store_cache *c, const char *id)
{
	pthread_mutex_lock(&c->mu);
	for (struct cache_entry *e = c->head; e; e = e->next)
		if (!e->dead && !strcmp(e->id, id)) {
			e->dead = 1;
			if (!e->refs) {
				unlink_entry(c, e);
				entry_free(e);
			}
			break;
		}
	pthread_mutex_unlock(&c->mu);
}

void store_cache_stats(struct store *s, struct store_cache_stats *out)
{
	struct store_cache *c = s->cache;

	pthread_mutex_lock(&c->mu);
	out->hits = c->hits;
	out->misses = c->misses;
	out->bytes = c->bytes;
	out->load_seconds = c->load_seconds;
	out->entries = 0;
	for (struct cache_entry *e = c->head; e; e = e->next)
		out->entries++;
	pthread_mutex_unlock(&c->mu);
}
