/*
 * isolate: solves in child processes, one per solve or a kept worker
 * process (isolate.c). Internal to server/.
 */
#ifndef PMAXENT_ISOLATE_H
#define PMAXENT_ISOLATE_H

#include <jansson.h>

#include "solver.h"

/* ---- isolate.c ---------------------------------------------------------- */

/*
 * A solve run in a child process, so that a crash, an abort or running out
 * of memory in it ends that solve alone (isolate.c says how). The body
 * runs in the child on memory the parent gave it (a parsed dataset, a
 * request), reporting through the child handle; it must not touch the
 * store or anything another thread of the parent may lock.
 */
struct isolate_child;
/* The body: *out is its result (new reference) when it returns PM_OK. */
typedef enum pm_status (*isolate_body)(void *arg, struct isolate_child *c, json_t **out,
				       struct pm_error *err);

struct isolate_options {
	/* bytes of data the child may add to what it inherits (RLIMIT_DATA;
	 * 0: no limit; not enforced under AddressSanitizer) */
	size_t memory;
	/* seconds after which the child is killed (0: none): a backstop
	 * above the solver's own time limit */
	double deadline;
	/* In the parent, each may be NULL: the child's progress and sweep
	 * points (JSON text of n bytes) as they come, and a cancel flag
	 * polled every 20 ms; nonzero from any of them kills the child
	 * (PM_ERR_CANCELLED). */
	int (*progress)(void *ctx, const struct solver_progress *p);
	int (*point)(void *ctx, size_t at, const char *json, size_t n);
	int (*cancelled)(void *ctx);
	void *ctx;
	/* top-level keys (NULL-terminated) the answer's summary leaves out;
	 * NULL: no summary */
	const char *const *summary_drop;
	/* tests only: the child raises this signal before the body runs */
	int test_signal;
};

/* What a body answered, as compact JSON text with exact reals. */
struct isolate_answer {
	char *text; /* the result (NUL-terminated), len bytes */
	size_t len;
	char *summary;	/* the result without summary_drop's keys, or NULL */
	double seconds; /* its top-level "seconds" (0 without) */
};
/* Frees what a holds; NULL is a no-op. */
void isolate_answer_finish(struct isolate_answer *a);

/*
 * Runs body(arg) in a child process. PM_OK: *out is its answer (the
 * caller's: isolate_answer_finish).
 * Otherwise err holds the body's own error, or why the child died: the
 * signal (PM_ERR_INTERNAL), the deadline (PM_ERR_INTERNAL), the memory
 * limit (PM_ERR_NOMEM, naming it); PM_ERR_CANCELLED when a callback asked;
 * PM_ERR_BUSY when no process could be made.
 */
enum pm_status isolate_run(isolate_body body, void *arg, const struct isolate_options *o,
			   struct isolate_answer *out, struct pm_error *err);
/* In the child: a solver progress callback (solver_options.progress with
 * the child as its ctx), relaying each change of phase or iterations. */
int isolate_progress(void *ctx, const struct solver_progress *p);
/* In the child: a sweep point solved (index at); nonzero when the parent
 * is gone. */
int isolate_point(struct isolate_child *c, size_t at, const json_t *point);
/*
 * A worker process kept across jobs, so that its heap is warm after the
 * first (a child forked for one solve pays a page fault for every page it
 * first writes). Jobs are bytes: serve runs in the worker on each, with
 * state (its own between jobs, as it was at the fork), and answers as an
 * isolate_body does. isolate_worker_run forks the worker when it has none
 * (a first job, or after one that ended it: a crash, the memory limit, a
 * cancel, the deadline) and answers as isolate_run; o's summary_drop must
 * point to static storage. isolate_worker_generation changes with each
 * fork: what a caller sent an earlier worker is gone. Caller frees with
 * isolate_worker_destroy (NULL: no-op), which ends the process.
 */
struct isolate_worker;
typedef enum pm_status (*isolate_serve)(void *state, const char *job, size_t len,
					struct isolate_child *c, json_t **out,
					struct pm_error *err);
enum pm_status isolate_worker_create(isolate_serve serve, void *state, size_t memory,
				     struct isolate_worker **out, struct pm_error *err);
enum pm_status isolate_worker_run(struct isolate_worker *w, const void *job, size_t len,
				  const struct isolate_options *o, struct isolate_answer *out,
				  struct pm_error *err);
uint64_t isolate_worker_generation(const struct isolate_worker *w);
void isolate_worker_destroy(struct isolate_worker *w);
/* Whether this build forks (not under AddressSanitizer: isolate.c says
 * why; a sanitizer build runs bodies in the calling thread). */
int isolate_forks(void);
/* Whether isolate_options.memory is enforced in this build (not under
 * AddressSanitizer, whose shadow memory counts as data). */
int isolate_memory_limited(void);
/* The default memory of a worker: three quarters of the machine's memory
 * shared among workers, at least 1 GiB. */
size_t isolate_default_memory(size_t workers);

#endif
