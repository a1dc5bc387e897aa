/*
 * A fork-join pool for the solver's per-bucket loops. The two-level solve
 * runs hundreds of short parallel phases (one per Hessian product), so the
 * workers are created once per solve and wait on a condition variable
 * between phases instead of being created per phase.
 *
 * Work is split into a fixed number of parts, part i always on the same
 * bucket range, and callers reduce per-part partial results in part
 * order: the answer does not depend on thread scheduling.
 *
 * Short one-off passes (parallel_items) hand out items instead: whichever
 * thread is free takes the next one, so a worker that wakes late (the
 * other core busy elsewhere) costs nothing but its share; callers keep
 * one result per item and reduce them in item order.
 *
 * Waking a thread blocked on a condition variable takes tens of
 * microseconds on a virtual machine, about what a whole phase of a small
 * solve takes. So a thread that waits (a worker for the next phase, the
 * caller for the workers) first spins for up to SPIN_NS on the atomic
 * it waits for, and blocks only if that is not enough: phases follow one
 * another closely within a solve, and a pool lives for one solve. The
 * spinner yields the CPU every few microseconds: a thread it waits for may
 * be queued behind it on the same CPU (a fresh worker usually starts on
 * its creator's), and pause alone would hold that CPU for all of SPIN_NS.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "parallel.h"

/* More threads than this buy nothing on bucket loops of this size. */
#define MAX_THREADS 16
/* How long a waiting thread spins before it blocks (nanoseconds). */
#define SPIN_NS 200000

struct parallel;

struct worker_arg {
	struct parallel *p;
	int part;
};

struct parallel {
	int n; /* parts = threads, the caller's included */
	struct worker_arg arg[MAX_THREADS];
	int alive; /* workers not yet returned; the last one out frees p */
	pthread_mutex_t mu;
	pthread_cond_t go, done;
	/* written with mu held, read without it by spinning threads */
	atomic_ulong generation;
	atomic_int pending, stop;
	void (*fn)(void *ctx, int part, int parts);
	void *ctx;
	/* the current parallel_items pass, if items: workers still in it
	 * (busy), no new one may join (closed), the next item to take */
	int items, closed;
	atomic_int busy;
	size_t n_items;
	atomic_size_t next;
	void (*item_fn)(void *ctx, size_t item, int part);
};

/* Nanoseconds of the one clock (solver_now). */
static double spin_now(void)
{
	return solver_now() * 1e9;
}

/* Spins for up to SPIN_NS until the count falls to zero (count given), or
 * else until the generation moves on from `seen` or the pool stops. The
 * caller then checks again under the mutex, so giving up early is only
 * slower, never wrong. */
static void spin(struct parallel *p, const atomic_int *count, unsigned long seen)
{
	double end = spin_now() + SPIN_NS;

	for (unsigned i = 1;; i++) {
		if (count ? atomic_load(count) <= 0
			  : atomic_load(&p->generation) != seen || atomic_load(&p->stop))
			return;
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
		if (i % 64 == 0) {
			if (spin_now() > end)
				return;
			sched_yield();
		}
	}
}

/* Takes items until none is left. */
static void take_items(struct parallel *p, int part)
{
	size_t i;

	while ((i = atomic_fetch_add(&p->next, 1)) < p->n_items)
		p->item_fn(p->ctx, i, part);
}

/* A worker's share of the phase it was woken for, with p->mu held (and
 * released while working). */
static void worker_phase(struct parallel *p, int part)
{
	if (p->items) {
		if (p->closed)
			return; /* woken after the pass ended: nothing left */
		p->busy++;
		pthread_mutex_unlock(&p->mu);
		take_items(p, part);
		pthread_mutex_lock(&p->mu);
		if (--p->busy == 0)
			pthread_cond_signal(&p->done);
		return;
	}
	pthread_mutex_unlock(&p->mu);
	p->fn(p->ctx, part, p->n);
	pthread_mutex_lock(&p->mu);
	if (--p->pending == 0)
		pthread_cond_signal(&p->done);
}

static void pool_free(struct parallel *p)
{
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->go);
	pthread_cond_destroy(&p->done);
	free(p);
}

static void *worker(void *arg)
{
	struct parallel *p = ((struct worker_arg *)arg)->p;
	int part = ((struct worker_arg *)arg)->part;
	unsigned long seen = 0;

	for (;;) {
		spin(p, NULL, seen);
		pthread_mutex_lock(&p->mu);
		while (p->generation == seen && !p->stop)
			pthread_cond_wait(&p->go, &p->mu);
		if (p->stop) {
			int last = --p->alive == 0;

			pthread_mutex_unlock(&p->mu);
			if (last)
				pool_free(p);
			return NULL;
		}
		seen = p->generation;
		worker_phase(p, part);
		pthread_mutex_unlock(&p->mu);
	}
}

/* A system call, where sysconf(_SC_NPROCESSORS_ONLN) reads /sys (files
 * parsed, a cost a small solve would notice) and counts CPUs the process
 * may not use. */
int parallel_cpus(void)
{
	cpu_set_t set;
	long n;

	if (sched_getaffinity(0, sizeof set, &set) == 0)
		n = CPU_COUNT(&set);
	else
		n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : n > INT_MAX ? INT_MAX : (int)n;
}

enum pm_status parallel_create(int threads, struct parallel **out)
{
	struct parallel *p = calloc(1, sizeof *p);

	*out = NULL;
	if (!p)
		return PM_ERR_NOMEM;
	p->n = threads > 0 ? threads : parallel_cpus();
	p->n = p->n > MAX_THREADS ? MAX_THREADS : p->n;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->go, NULL);
	pthread_cond_init(&p->done, NULL);
	for (int i = 1; i < p->n; i++) {
		pthread_t tid;

		p->arg[i] = (struct worker_arg){.p = p, .part = i};
		if (pthread_create(&tid, NULL, worker, &p->arg[i])) {
			p->n = i; /* fewer threads; still correct */
			break;
		}
		/* detached: destroy need not wait for a worker to wake and go */
		pthread_detach(tid);
		pthread_mutex_lock(&p->mu);
		p->alive++;
		pthread_mutex_unlock(&p->mu);
	}
	*out = p;
	return PM_OK;
}

int parallel_parts(const struct parallel *p)
{
	return p ? p->n : 1;
}

void parallel_run(struct parallel *p, void (*fn)(void *ctx, int part, int parts), void *ctx)
{
	if (!p || p->n == 1) {
		fn(ctx, 0, 1);
		return;
	}
	pthread_mutex_lock(&p->mu);
	p->items = 0;
	p->fn = fn;
	p->ctx = ctx;
	p->pending = p->n - 1;
	p->generation++;
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	fn(ctx, 0, p->n);
	spin(p, &p->pending, 0);
	pthread_mutex_lock(&p->mu);
	while (p->pending > 0)
		pthread_cond_wait(&p->done, &p->mu);
	pthread_mutex_unlock(&p->mu);
}

void parallel_items_start(struct parallel *p, size_t n,
			  void (*fn)(void *ctx, size_t item, int part), void *ctx)
{
	if (!p || p->n == 1)
		return; /* all of it in parallel_items_finish */
	pthread_mutex_lock(&p->mu);
	p->items = 1;
	p->closed = 0;
	p->busy = 0;
	p->item_fn = fn;
	p->ctx = ctx;
	p->n_items = n;
	atomic_store(&p->next, 0);
	p->generation++;
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
}

void parallel_items_finish(struct parallel *p, size_t n,
			   void (*fn)(void *ctx, size_t item, int part), void *ctx)
{
	if (!p || p->n == 1) {
		for (size_t i = 0; i < n; i++)
			fn(ctx, i, 0);
		return;
	}
	take_items(p, 0);
	pthread_mutex_lock(&p->mu);
	/* closed until the next phase: a worker that wakes only now skips it */
	p->closed = 1;
	pthread_mutex_unlock(&p->mu);
	spin(p, &p->busy, 0);
	pthread_mutex_lock(&p->mu);
	while (p->busy > 0)
		pthread_cond_wait(&p->done, &p->mu);
	pthread_mutex_unlock(&p->mu);
}

void parallel_items(struct parallel *p, size_t n, void (*fn)(void *ctx, size_t item, int part),
		    void *ctx)
{
	parallel_items_start(p, n, fn, ctx);
	parallel_items_finish(p, n, fn, ctx);
}

void parallel_destroy(struct parallel *p)
{
	int none;

	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_cond_broadcast(&p->go);
	none = p->alive == 0;
	pthread_mutex_unlock(&p->mu);
	if (none)
		pool_free(p);
}

/* First i in [0, n] with off[i] >= w (off is nondecreasing). */
static size_t lower_bound(const size_t *off, size_t n, size_t w)
{
	size_t l = 0, r = n;

	while (l < r) {
		size_t m = l + (r - l) / 2;

		if (off[m] < w)
			l = m + 1;
		else
			r = m;
	}
	return l;
}

/* Part `part` of `parts` of n items, balanced by weight (off[i] = total
 * weight of the items before i, n + 1 entries; NULL: unit weights). */
void parallel_range(size_t n, const size_t *off, int part, int parts, size_t *lo, size_t *hi)
{
	size_t total = off ? off[n] : n, p = (size_t)part, ps = (size_t)parts;
	size_t a = total * p / ps, b = total * (p + 1) / ps;

	*lo = part == 0 ? 0 : off ? lower_bound(off, n, a) : a;
	*hi = part + 1 == parts ? n : off ? lower_bound(off, n, b) : b;
}
