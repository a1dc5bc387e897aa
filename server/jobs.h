/*
 * jobs: the analysis and sweep workers (jobs.c) and what their kept
 * worker processes run (jobs_work.c). Internal to server/.
 */
#ifndef PMAXENT_JOBS_H
#define PMAXENT_JOBS_H

#include <jansson.h>

#include "solver.h"

struct isolate_child;
struct store;

/* ---- jobs.c ------------------------------------------------------------- */

/*
 * The analysis worker pool. Analyses run on worker threads, never on HTTP
 * threads; the queue is bounded. A worker loads the analysis and its
 * dataset from the store, runs pipeline_run_dataset with a progress
 * callback, and records the result or the problem. Sweeps (ids "sw_")
 * share the queue, its bound, the workers and every rule below: a
 * worker runs sweep_run, storing each point as it is solved
 * (store_sweep_points); the time limit is each point's.
 */
struct jobs;

struct jobs_progress {
	struct solver_progress now; /* the last report of its solve */
	double started;		    /* solver_now() when it started */
};

struct jobs_stats {
	size_t workers, queued, running, queue_capacity;
	uint64_t succeeded, failed, cancelled;
	uint64_t solves;	    /* finished solves (succeeded) */
	double solve_seconds_total; /* sum of their "seconds" */
	/* this node's claims, of which takeovers (a job whose earlier
	 * attempt's lease ran out), and the expired leases it reaped */
	uint64_t claims, takeovers, expiries;
	/* outcomes refused because the attempt no longer owned its job */
	uint64_t dropped;
};

/* Seconds a claim's lease lasts unless renewed (jobs_options.lease), how
 * often it is renewed with the job's progress (what a poll of any node
 * shows), and how often an idle worker looks at the queue (another
 * node's submit, when no notification came). */
#define JOBS_LEASE     30.0
#define JOBS_HEARTBEAT 1.0
#define JOBS_POLL      1.0

/* The pool's settings. */
struct jobs_options {
	size_t workers, queue_capacity;
	/* starts of an analysis that the service did not survive before it
	 * ends failed (a poison job); at least 1 */
	int max_attempts;
	/* every solve's default and maximum time limit, seconds (0: none) */
	double time_limit;
	/* tests only: solver_options.stall of every solve */
	double stall;
	/* bytes each job's worker process may add (isolate_options.memory;
	 * 0: no limit) */
	size_t worker_memory;
	/* tests only: a job on a dataset named test_crash has its worker
	 * process raise test_signal before it solves */
	const char *test_crash;
	int test_signal;
	/* seconds: a claim's lease (default JOBS_LEASE), its renewal
	 * (JOBS_HEARTBEAT), an idle worker's look at the queue (JOBS_POLL) */
	double lease, heartbeat, poll;
};

/*
 * Starts the workers. Analyses left queued or running in the store are
 * queued again first; one found running (the service died running it)
 * counts a crash, ends failed at max_attempts crashes, and otherwise,
 * like every analysis with a crash to its name, runs alone: while it
 * runs no other analysis does, so that a crash is blamed on it alone.
 * Caller frees with jobs_destroy.
 */
enum pm_status jobs_create(struct store *s, const struct jobs_options *o, struct jobs **out,
			   struct pm_error *err);
/* Graceful stop: no new work, running analyses are cancelled and put back
 * to "queued" in the store (they run again after a restart), threads
 * joined. */
void jobs_destroy(struct jobs *j);
/* Queues an analysis already inserted as "queued". PM_ERR_BUSY when full. */
enum pm_status jobs_submit(struct jobs *j, const char *analysis_id, struct pm_error *err);
/* Progress of a running analysis: 1 and *out filled, or 0. */
int jobs_progress(struct jobs *j, const char *analysis_id, struct jobs_progress *out);
/* Cancels a queued or running analysis: "cancelled" in the store (the one
 * place that counts cancellations), out of the queue, and its worker
 * stops within one solver iteration. PM_ERR_CONFLICT when it has finished
 * meanwhile, PM_ERR_NOT_FOUND when it is gone. */
enum pm_status jobs_cancel(struct jobs *j, const char *analysis_id, struct pm_error *err);
void jobs_stats(struct jobs *j, struct jobs_stats *out);

/* ---- jobs_work.c -------------------------------------------------------- */

/* What a job's kept worker process (isolate_worker) runs: an analysis's
 * pipeline or a sweep, on a job's bytes (jobs_work_make): the packed
 * dataset, left out when the worker holds it (ds NULL), and the stored
 * request's text, with the service's time limit and the tests' stall.
 * *out (len bytes) the caller's. */
enum jobs_kind { JOBS_ANALYSIS = 0, JOBS_SWEEP = 1 };
/* What ?view=summary leaves out of a result (SPEC section 6), NULL-ended:
 * the summary a worker stores beside it, and one made of an old result. */
extern const char *const jobs_summary_drop[];
/* What a worker holds between jobs (serve's state): the last dataset
 * sent. In a forked worker its own copy; finish frees it (NULL: no-op). */
struct jobs_work_held {
	char id[64];
	struct dataset *ds;
};
void jobs_work_held_finish(struct jobs_work_held *h);
enum pm_status jobs_work_make(enum jobs_kind kind, const char *dataset_id, const struct dataset *ds,
			      const char *request, double time_limit, double stall, char **out,
			      size_t *len, struct pm_error *err);
/* The isolate_serve of those jobs, in the worker (state: its struct
 * jobs_work_held): an analysis's result document, or a sweep's points
 * (each sent up as it is solved). */
enum pm_status jobs_work_serve(void *state, const char *job, size_t len, struct isolate_child *c,
			       json_t **out, struct pm_error *err);

#endif
