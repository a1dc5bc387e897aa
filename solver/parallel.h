/*
 * parallel: the solver's thread pool (parallel.c): parts that run one
 * function each, and items taken by whichever thread is free. The CPU
 * count, parallel_cpus, is public (solver.h). Internal to solver/.
 */
#ifndef PMAXENT_PARALLEL_H
#define PMAXENT_PARALLEL_H

#include "solver.h"

/* ---- parallel.c --------------------------------------------------------- */

struct parallel;

/* A pool of `threads` parts (<= 0: parallel_cpus()), the calling
 * thread included. Caller frees with parallel_destroy, which returns at
 * once: the workers finish on their own, the last one freeing the pool. */
enum pm_status parallel_create(int threads, struct parallel **out);
void parallel_destroy(struct parallel *p);
int parallel_parts(const struct parallel *p);
/* Runs fn(ctx, part, parts) for every part, the caller doing part 0, and
 * returns when all are done. p may be NULL (one part, inline). */
void parallel_run(struct parallel *p, void (*fn)(void *ctx, int part, int parts), void *ctx);
/* The items [*lo, *hi) of part `part`, balanced by the weights whose
 * prefix sums are off[0..n] (NULL: unit weights). */
void parallel_range(size_t n, const size_t *off, int part, int parts, size_t *lo, size_t *hi);
/* Runs fn(ctx, item, part) once for every item in [0, n), each taken by
 * whichever thread is free (part: which one, for its scratch), and
 * returns when all are done. p may be NULL (inline, part 0). */
void parallel_items(struct parallel *p, size_t n, void (*fn)(void *ctx, size_t item, int part),
		    void *ctx);
/* parallel_items in two halves, so that the caller can do other work
 * while the workers take items: start wakes them (with no workers it does
 * nothing), finish takes what is left and waits; both with the same
 * arguments, and no other phase between them. */
void parallel_items_start(struct parallel *p, size_t n,
			  void (*fn)(void *ctx, size_t item, int part), void *ctx);
void parallel_items_finish(struct parallel *p, size_t n,
			   void (*fn)(void *ctx, size_t item, int part), void *ctx);

#endif
