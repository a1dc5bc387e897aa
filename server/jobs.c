/*
 * The analysis worker pool. The queue is the store's (store_jobs.c),
 * shared by every node on the same database: a worker claims the oldest
 * queued job there (an attempt counted, this node's name and a lease),
 * runs it, and records the outcome only if its attempt still owns the job.
 * While it runs, a heartbeat thread renews the lease; a job whose lease
 * ran out (its node died) goes back to the queue, counted as a crash, at
 * the first node's heartbeat that sees it. Every other state change is a
 * compare-and-set in the store too (store_analysis_transition), so a
 * DELETE that cancels a job and a worker that finishes it cannot both
 * win; a cancel made on another node reaches this one at its next
 * heartbeat (the lease is no longer this attempt's). The pool adds live
 * progress and the cancel flags that the solver's progress callback polls
 * once per iteration.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "isolate.h"
#include "jobs.h"
#include "server.h"
#include "store.h"

#define ID_MAX 64

/* One worker's current job; alone: it has crashed a node before, and
 * runs with no other job of this node beside it. */
struct slot {
	struct jobs *owner;
	char id[ID_MAX];
	int attempt;
	int busy, cancel, alone;
	struct jobs_progress p;
	/* the worker process that runs this slot's jobs (isolate_worker),
	 * and the dataset it holds: held, sent to its generation */
	struct isolate_worker *worker;
	uint64_t generation;
	char held[ID_MAX];
	struct jobs_work_held state; /* the worker's (its copy in a forked one) */
};

struct jobs {
	struct store *store;
	struct jobs_options o;
	char node[96]; /* the owner name this process claims under */
	pthread_mutex_t mu;
	pthread_mutex_t claim_mu; /* one claim at a time: the "alone" rule */
	pthread_cond_t cv;
	pthread_cond_t beat_cv; /* the heartbeat's: signalled only to stop */
	pthread_t *threads, beat, listen;
	size_t n_threads, started;
	int beat_started, listen_started;
	struct store_listener *listener; /* other nodes' submits (PostgreSQL) */
	struct slot *slots;
	int alone_running; /* the running one is an "alone" job */
	int stopping;
	uint64_t succeeded, failed, cancelled, solves;
	uint64_t claims, takeovers, expiries, dropped;
	double solve_seconds;
};

/* The problem document (RFC 9457) of a failed analysis, typed like the
 * HTTP layer's problems (urn:pmaxent:problem:<slug>). */
static char *problem_text(const struct pm_error *err)
{
	int input = err->status == PM_ERR_INPUT, conflict = err->status == PM_ERR_INCONSISTENT;
	const char *type = conflict ? "urn:pmaxent:problem:inconsistent-knowledge"
			   : input  ? "urn:pmaxent:problem:invalid-input"
				    : "urn:pmaxent:problem:internal";
	const char *title = conflict ? "Inconsistent knowledge"
			    : input  ? "Invalid input"
				     : "Internal server error";
	json_t *p = json_pack("{s:s, s:s, s:i, s:s}", "type", type, "title", title, "status",
			      input || conflict ? 422 : 500, "detail", err->message);
	char *text;

	if (p && err->field[0])
		json_object_set_new(p, "field", json_string(err->field));
	text = p ? json_dumps(p, JSON_COMPACT) : NULL;
	json_decref(p);
	return text;
}

/* Sweeps (ids "sw_...") share the queue, the workers and the rules of
 * analyses; only their rows are in another table. */
static int is_sweep(const char *id)
{
	return !strncmp(id, "sw_", 3);
}

static enum pm_status move(struct jobs *j, const char *id, const char *from, const char *to,
			   const char *text, struct pm_error *err)
{
	return (is_sweep(id) ? store_sweep_transition
			     : store_analysis_transition)(j->store, id, from, to, text, err);
}

static enum pm_status get_job(struct jobs *j, const char *id, struct store_row *out,
			      struct pm_error *err)
{
	return (is_sweep(id) ? store_sweep_get : store_analysis_get)(j->store, id, NULL, out, err);
}

/* The stored request of a job and its dataset, parsed (the store's:
 * release it with store_dataset_release). */
static enum pm_status load(struct jobs *j, const struct store_row *job, const struct dataset **ds,
			   json_t **req, struct pm_error *err)
{
	json_error_t jerr;
	enum pm_status st;

	*ds = NULL;
	if (!(*req = json_loads(job->request, 0, &jerr)))
		return error_set(err, PM_ERR_INTERNAL, "", "stored JSON is unreadable: %s",
				 jerr.text);
	st = store_dataset_parsed(j->store, job->dataset_id, job->tenant, ds, err);
	if (st == PM_ERR_INTERNAL)
		error_prefix(err, "stored dataset");
	return st;
}

/* In the parent, for isolate_run: the slot's progress and cancel flag. */
static int slot_progress(void *ctx, const struct solver_progress *p)
{
	struct slot *s = ctx;

	pthread_mutex_lock(&s->owner->mu);
	s->p.now = *p;
	pthread_mutex_unlock(&s->owner->mu);
	return 0;
}

static int slot_cancelled(void *ctx)
{
	struct slot *s = ctx;
	int cancel;

	pthread_mutex_lock(&s->owner->mu);
	cancel = s->cancel;
	pthread_mutex_unlock(&s->owner->mu);
	return cancel;
}

/* The worker process of a job on slot s: its memory, a deadline a minute
 * past the time limit (the solver stops itself at the limit; this is for
 * a child that does not), and the tests' crash. */
static void isolate_options_of(struct jobs *j, struct slot *s, const struct dataset *ds,
			       struct isolate_options *io)
{
	*io = (struct isolate_options){.memory = j->o.worker_memory,
				       .progress = slot_progress,
				       .cancelled = slot_cancelled,
				       .ctx = s};
	if (j->o.time_limit > 0)
		io->deadline = j->o.time_limit + j->o.stall + 60;
	if (j->o.test_crash && ds && ds->name && !strcmp(ds->name, j->o.test_crash))
		io->test_signal = j->o.test_signal;
}

/* A job in the slot's kept worker process (jobs_work.c), the dataset sent
 * only when the worker does not hold it already. */
static enum pm_status run_job(struct jobs *j, struct slot *s, enum jobs_kind kind,
			      const struct store_row *job, const struct dataset *ds,
			      const struct isolate_options *io, struct isolate_answer *a,
			      struct pm_error *err)
{
	int held = isolate_worker_generation(s->worker) == s->generation &&
		   !strcmp(s->held, job->dataset_id);
	char *bytes = NULL;
	size_t len = 0;
	enum pm_status st = jobs_work_make(kind, job->dataset_id, held ? NULL : ds, job->request,
					   j->o.time_limit, j->o.stall, &bytes, &len, err);

	if (!st)
		st = isolate_worker_run(s->worker, bytes, len, io, a, err);
	free(bytes);
	s->generation = isolate_worker_generation(s->worker);
	/* a worker that answered holds it; after a failure, send it again */
	snprintf(s->held, sizeof s->held, "%s", st == PM_OK ? job->dataset_id : "");
	return st;
}

/* Loads the analysis's dataset and runs it in the slot's worker process;
 * *a is its answer. */
static enum pm_status run_analysis(struct jobs *j, struct slot *s, const struct store_row *an,
				   struct isolate_answer *a, struct pm_error *err)
{
	const struct dataset *ds = NULL;
	struct isolate_options io;
	enum pm_status st = store_dataset_parsed(j->store, an->dataset_id, an->tenant, &ds, err);

	if (st == PM_ERR_INTERNAL)
		error_prefix(err, "stored dataset");
	if (st)
		goto out;
	isolate_options_of(j, s, ds, &io);
	io.summary_drop = jobs_summary_drop;
	st = run_job(j, s, JOBS_ANALYSIS, an, ds, &io, a, err);
	codec_request_field(err);
out:
	store_dataset_release(j->store, ds);
	return st;
}

/* A running sweep: each point stored as it is solved. */
struct sweep_ctx {
	struct jobs *j;
	struct slot *s;
	json_t *points; /* every point, null until solved */
};

/* In the parent: stores the points so far; nonzero (the sweep stops)
 * when it is no longer running: cancelled, deleted, or the service
 * stopping. */
static int on_point(void *ctx, size_t at, const char *json, size_t n)
{
	struct sweep_ctx *c = ctx;
	struct pm_error ignored = {0};
	json_t *p = json_loadb(json, n, 0, NULL);
	char *text;
	int stop;

	if (!p || json_array_set_new(c->points, at, p))
		return 1;
	text = json_dumps(c->points, JSON_COMPACT | JSON_REAL_PRECISION(17));
	stop = !text ||
	       store_sweep_points(c->j->store, c->s->id, c->j->node, c->s->attempt, text, &ignored);
	free(text);
	return stop || slot_cancelled(c->s);
}

static int sweep_progress(void *ctx, const struct solver_progress *p)
{
	return slot_progress(((struct sweep_ctx *)ctx)->s, p);
}

static int sweep_cancelled(void *ctx)
{
	return slot_cancelled(((struct sweep_ctx *)ctx)->s);
}

/* Loads the sweep's dataset and runs it in the slot's worker process,
 * storing each point as it comes; *a is the points. The request is read
 * here too, for the number of points. */
static enum pm_status run_sweep(struct jobs *j, struct slot *s, const struct store_row *sw,
				struct isolate_answer *a, struct pm_error *err)
{
	struct sweep_request q = {0};
	struct sweep_ctx c = {j, s, json_array()};
	const struct dataset *ds = NULL;
	struct isolate_options io;
	json_t *req = NULL;
	enum pm_status st = load(j, sw, &ds, &req, err);

	if (!st && !(st = codec_sweep_request(req, ds, &q, err))) {
		size_t n = q.n_kinds * (q.n_t ? q.n_t : 1) * q.n_k;

		for (size_t i = 0; c.points && i < n; i++)
			json_array_append_new(c.points, json_null());
		isolate_options_of(j, s, ds, &io);
		io.point = on_point;
		io.progress = sweep_progress;
		io.cancelled = sweep_cancelled;
		io.ctx = &c;
		if (io.deadline > 0) /* the time limit is each point's */
			io.deadline = (double)n * (j->o.time_limit + j->o.stall) + 60;
		st = run_job(j, s, JOBS_SWEEP, sw, ds, &io, a, err);
	}
	json_decref(c.points);
	json_decref(req);
	sweep_request_finish(&q);
	store_dataset_release(j->store, ds);
	return st;
}

/* Records how the run ended, if this attempt still owns the job (a
 * DELETE may have cancelled it meanwhile, or its lease ran out and
 * another node took it: then the outcome is dropped). */
static void finish(struct jobs *j, struct slot *s, enum pm_status st,
		   const struct isolate_answer *a, struct pm_error *err)
{
	struct pm_error ignored = {0};
	char *problem = NULL;
	const char *to = "failed", *text = NULL;
	enum pm_status stored;

	if (st == PM_OK) {
		text = a->text;
		to = "succeeded";
	} else if (st == PM_ERR_CANCELLED) {
		pthread_mutex_lock(&j->mu);
		to = j->stopping ? "queued" : "cancelled"; /* shutdown: run again later */
		pthread_mutex_unlock(&j->mu);
	} else {
		text = problem = problem_text(err);
	}
	if (st == PM_OK && !is_sweep(s->id))
		stored = store_analysis_succeed(j->store, s->id, j->node, s->attempt, a->text,
						a->len, a->summary, &ignored);
	else
		stored = store_job_finish(j->store, s->id, j->node, s->attempt, to, text, &ignored);
	if (stored) {
		pthread_mutex_lock(&j->mu);
		/* a result (not a cancel's end) of a job no longer this attempt's */
		j->dropped += ignored.status == PM_ERR_CONFLICT && st != PM_ERR_CANCELLED;
		pthread_mutex_unlock(&j->mu);
	} else if (!is_sweep(s->id)) {
		pthread_mutex_lock(&j->mu);
		if (st == PM_OK) {
			j->succeeded++;
			j->solves++;
			j->solve_seconds += a->seconds;
		} else if (st != PM_ERR_CANCELLED) {
			j->failed++; /* a cancel was counted where it was asked */
		}
		pthread_mutex_unlock(&j->mu);
	}
	free(problem);
}

static void process(struct jobs *j, struct slot *s)
{
	struct store_row an = {0};
	struct pm_error err = {0};
	struct isolate_answer a = {0};
	enum pm_status st = get_job(j, s->id, &an, &err);

	if (!st)
		st = (is_sweep(s->id) ? run_sweep : run_analysis)(j, s, &an, &a, &err);
	finish(j, s, st, &a, &err);
	isolate_answer_finish(&a);
	store_row_finish(&an);
}

/* Claims the oldest queued analysis, else sweep, for slot s; 1 if one
 * came. A job that crashed a node before is taken only while no other
 * worker of this node runs, and then nothing else starts beside it:
 * claims go one at a time (claim_mu), so that two workers cannot both
 * find the node idle. */
static int claim(struct jobs *j, struct slot *s)
{
	struct store_claim c = {0};
	struct pm_error err = {0};
	int64_t lease = (int64_t)(j->o.lease * 1000);
	int found = 0, idle = 1, blocked;

	pthread_mutex_lock(&j->claim_mu);
	pthread_mutex_lock(&j->mu);
	for (size_t i = 0; i < j->started; i++)
		idle &= !j->slots[i].busy;
	blocked = j->alone_running || j->stopping;
	pthread_mutex_unlock(&j->mu);
	if (!blocked && !store_job_claim(j->store, 0, j->node, lease, idle, &c, &found, &err) &&
	    !found)
		store_job_claim(j->store, 1, j->node, lease, idle, &c, &found, &err);
	pthread_mutex_lock(&j->mu);
	if (found) {
		memcpy(s->id, c.id, ID_MAX);
		s->attempt = c.attempt;
		s->alone = c.crashes > 0;
		s->busy = 1;
		s->cancel = j->stopping; /* claimed as the service stops: back to the queue */
		s->p = (struct jobs_progress){{SOLVER_PHASE_SETUP, 0, NAN}, solver_now()};
		j->alone_running |= s->alone;
		j->claims++;
		j->takeovers += c.crashes > 0;
	}
	pthread_mutex_unlock(&j->mu);
	pthread_mutex_unlock(&j->claim_mu);
	return found;
}

/* Waits on cv for at most sec seconds (j->mu held). */
static void wait_for(struct jobs *j, pthread_cond_t *cv, double sec)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)sec;
	ts.tv_nsec += (long)((sec - floor(sec)) * 1e9);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(cv, &j->mu, &ts);
}

static void *worker(void *arg)
{
	struct slot *s = arg;
	struct jobs *j = s->owner;
	struct pm_error err = {0};

	/* its process is forked at the first job (isolate_worker_run) */
	if (isolate_worker_create(jobs_work_serve, &s->state, j->o.worker_memory, &s->worker, &err))
		return NULL;
	pthread_mutex_lock(&j->mu);
	while (!j->stopping) {
		pthread_mutex_unlock(&j->mu);
		/* a claim that comes back empty waits for a submit, a
		 * wake-up or the poll interval (another node's submit) */
		if (claim(j, s)) {
			process(j, s);
			pthread_mutex_lock(&j->mu);
			j->alone_running &= !s->alone;
			s->busy = s->alone = 0;
			s->id[0] = 0;
			pthread_cond_broadcast(&j->cv); /* an "alone" one may be waiting */
			continue;
		}
		pthread_mutex_lock(&j->mu);
		if (!j->stopping)
			wait_for(j, &j->cv, j->o.poll);
	}
	pthread_mutex_unlock(&j->mu);
	isolate_worker_destroy(s->worker);
	jobs_work_held_finish(&s->state);
	return NULL;
}

/* The problem of a job that the service died running max times. */
static char *poison_problem(int max)
{
	struct pm_error e = {0};

	error_set(&e, PM_ERR_INTERNAL, "",
		  "the service stopped unexpectedly (a crash or a kill) the last %d times it ran "
		  "this analysis or sweep; it is not run again (--max-attempts %d)",
		  max, max);
	return problem_text(&e);
}

/* Jobs whose node died go back to the queue (or fail at max_attempts);
 * all: every running one (a node alone on its store, just started). */
static enum pm_status reap(struct jobs *j, int all, struct pm_error *err)
{
	char *problem = poison_problem(j->o.max_attempts);
	struct store_reaped r = {0};
	enum pm_status st = problem
				? store_job_reap(j->store, j->o.max_attempts, problem, all, &r, err)
				: error_set(err, PM_ERR_NOMEM, "", "out of memory");

	free(problem);
	pthread_mutex_lock(&j->mu);
	j->expiries += r.requeued + r.failed;
	j->failed += r.failed_analyses;
	if (r.requeued)
		pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
	return st;
}

/* A job's progress as stored at each heartbeat (SPEC 6: "progress"):
 * the solve's phase, iterations and violation, and the seconds since the
 * attempt started. JSON text (malloc'd), or NULL. */
static char *progress_text(const struct jobs_progress *p)
{
	const struct solver_progress *n = &p->now;
	json_t *o = json_pack("{s:s, s:i, s:o, s:f}", "phase", solver_phase_name(n->phase),
			      "iterations", n->iterations, "max_violation",
			      isnan(n->max_violation) ? json_null() : json_real(n->max_violation),
			      "elapsed", round((solver_now() - p->started) * 1e3) / 1e3);
	char *text = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;

	json_decref(o);
	return text;
}

/* Renews the lease of every job this node runs, with its progress; one
 * no longer this attempt's (cancelled or deleted on any node, or taken
 * over) is cancelled here. */
static void renew(struct jobs *j)
{
	for (size_t i = 0; i < j->started; i++) {
		struct pm_error err = {0};
		char id[ID_MAX], *progress;
		int attempt, owned = 1, failed;

		pthread_mutex_lock(&j->mu);
		memcpy(id, j->slots[i].id, ID_MAX);
		attempt = j->slots[i].attempt;
		if (!j->slots[i].busy)
			id[0] = 0;
		progress = id[0] ? progress_text(&j->slots[i].p) : NULL;
		pthread_mutex_unlock(&j->mu);
		failed = !id[0] ||
			 store_job_heartbeat(j->store, id, j->node, attempt,
					     (int64_t)(j->o.lease * 1000), progress, &owned, &err);
		free(progress);
		if (failed)
			continue; /* a store failure: the lease may still hold */
		pthread_mutex_lock(&j->mu);
		if (!owned && j->slots[i].busy && !strcmp(j->slots[i].id, id) &&
		    j->slots[i].attempt == attempt)
			j->slots[i].cancel = 1;
		pthread_mutex_unlock(&j->mu);
	}
}

/* The heartbeat: leases renewed, and other nodes' expired ones reaped. */
static void *heartbeat(void *arg)
{
	struct jobs *j = arg;

	pthread_mutex_lock(&j->mu);
	while (!j->stopping) {
		struct pm_error err = {0};

		pthread_mutex_unlock(&j->mu);
		renew(j);
		reap(j, 0, &err);
		pthread_mutex_lock(&j->mu);
		if (!j->stopping)
			wait_for(j, &j->beat_cv, j->o.heartbeat);
	}
	pthread_mutex_unlock(&j->mu);
	return NULL;
}

/* Other nodes' submits wake this node's idle workers at once (LISTEN);
 * without a notification they look at the queue every poll interval. */
static void *listener(void *arg)
{
	struct jobs *j = arg;
	int stopping = 0;

	while (!stopping) {
		int woken = store_listen_wait(j->listener, j->o.poll);

		pthread_mutex_lock(&j->mu);
		if (woken)
			pthread_cond_broadcast(&j->cv);
		stopping = j->stopping;
		pthread_mutex_unlock(&j->mu);
	}
	return NULL;
}

/* The name this process claims under: host, pid and a random part, so
 * that a restarted node is another owner. */
static void node_name(struct jobs *j)
{
	char host[64] = "node";
	unsigned r = 0;
	FILE *f = fopen("/dev/urandom", "rb");

	if (f) {
		if (fread(&r, sizeof r, 1, f) != 1)
			r = (unsigned)time(NULL);
		fclose(f);
	}
	gethostname(host, sizeof host - 1);
	host[sizeof host - 1] = '\0';
	snprintf(j->node, sizeof j->node, "%s/%ld/%08x", host, (long)getpid(), r);
}

static void options(struct jobs *j, const struct jobs_options *o)
{
	j->o = *o;
	j->o.max_attempts = o->max_attempts > 0 ? o->max_attempts : 1;
	j->o.lease = o->lease > 0 ? o->lease : JOBS_LEASE;
	j->o.heartbeat = o->heartbeat > 0 ? o->heartbeat : JOBS_HEARTBEAT;
	j->o.poll = o->poll > 0 ? o->poll : JOBS_POLL;
	j->n_threads = o->workers ? o->workers : 1;
	node_name(j);
}

static enum pm_status start_threads(struct jobs *j, struct pm_error *err)
{
	for (size_t i = 0; i < j->n_threads; i++) {
		j->slots[i].owner = j;
		if (pthread_create(&j->threads[i], NULL, worker, &j->slots[i]))
			return error_set(err, PM_ERR_INTERNAL, "", "cannot start worker threads");
		j->started++;
	}
	if (pthread_create(&j->beat, NULL, heartbeat, j))
		return error_set(err, PM_ERR_INTERNAL, "", "cannot start the heartbeat thread");
	j->beat_started = 1;
	if (j->listener && pthread_create(&j->listen, NULL, listener, j))
		return error_set(err, PM_ERR_INTERNAL, "", "cannot start the listener thread");
	j->listen_started = j->listener != NULL;
	return PM_OK;
}

enum pm_status jobs_create(struct store *s, const struct jobs_options *o, struct jobs **out,
			   struct pm_error *err)
{
	struct jobs *j = calloc(1, sizeof *j);
	enum pm_status st = PM_ERR_NOMEM;

	*out = NULL;
	if (!j)
		return error_set(err, st, "", "out of memory");
	j->store = s;
	options(j, o);
	pthread_mutex_init(&j->mu, NULL);
	pthread_mutex_init(&j->claim_mu, NULL);
	pthread_cond_init(&j->cv, NULL);
	pthread_cond_init(&j->beat_cv, NULL);
	j->threads = calloc(j->n_threads, sizeof *j->threads);
	j->slots = calloc(j->n_threads, sizeof *j->slots);
	if (!j->threads || !j->slots) {
		error_set(err, st, "", "out of memory");
		goto out;
	}
	/* alone on its store (SQLite: the data directory is locked), a node
	 * that starts knows every running job was its predecessor's */
	st = reap(j, !store_shared(s), err);
	if (!st)
		st = store_listen(s, &j->listener, err);
	if (!st)
		st = start_threads(j, err);
out:
	if (st) {
		jobs_destroy(j);
		return st;
	}
	*out = j;
	return PM_OK;
}

void jobs_destroy(struct jobs *j)
{
	if (!j)
		return;
	pthread_mutex_lock(&j->mu);
	j->stopping = 1;
	for (size_t i = 0; i < j->started; i++)
		if (j->slots[i].busy)
			j->slots[i].cancel = 1;
	pthread_cond_broadcast(&j->cv);
	pthread_cond_broadcast(&j->beat_cv);
	pthread_mutex_unlock(&j->mu);
	for (size_t i = 0; i < j->started; i++)
		pthread_join(j->threads[i], NULL);
	if (j->beat_started)
		pthread_join(j->beat, NULL);
	if (j->listen_started)
		pthread_join(j->listen, NULL);
	store_listen_close(j->listener);
	pthread_mutex_destroy(&j->mu);
	pthread_mutex_destroy(&j->claim_mu);
	pthread_cond_destroy(&j->cv);
	pthread_cond_destroy(&j->beat_cv);
	free(j->threads);
	free(j->slots);
	free(j);
}

enum pm_status jobs_submit(struct jobs *j, const char *analysis_id, struct pm_error *err)
{
	enum pm_status st = PM_OK;
	int64_t queued = 0;

	(void)analysis_id; /* queued in the store already */
	pthread_mutex_lock(&j->mu);
	if (j->stopping)
		st = error_set(err, PM_ERR_BUSY, "", "the service is shutting down");
	pthread_mutex_unlock(&j->mu);
	if (!st && !(st = store_job_queued(j->store, &queued, err)) &&
	    queued > (int64_t)j->o.queue_capacity)
		st = error_set(err, PM_ERR_BUSY, "", "the analysis queue is full (%lld queued)",
			       (long long)queued - 1);
	if (!st) {
		store_notify(j->store); /* other nodes' workers */
		pthread_mutex_lock(&j->mu);
		pthread_cond_broadcast(&j->cv);
		pthread_mutex_unlock(&j->mu);
	}
	return st;
}

int jobs_progress(struct jobs *j, const char *analysis_id, struct jobs_progress *out)
{
	int found = 0;

	pthread_mutex_lock(&j->mu);
	for (size_t i = 0; i < j->started && !found; i++) {
		if (j->slots[i].busy && !strcmp(j->slots[i].id, analysis_id)) {
			*out = j->slots[i].p;
			found = 1;
		}
	}
	pthread_mutex_unlock(&j->mu);
	return found;
}

enum pm_status jobs_cancel(struct jobs *j, const char *analysis_id, struct pm_error *err)
{
	/* the store first: a worker that finishes now loses the race; a
	 * worker of another node learns it at its next heartbeat */
	enum pm_status st = move(j, analysis_id, "queued|running", "cancelled", NULL, err);

	if (st)
		return st;
	pthread_mutex_lock(&j->mu);
	j->cancelled += !is_sweep(analysis_id); /* the analyses' count (/metrics) */
	for (size_t i = 0; i < j->started; i++)
		if (j->slots[i].busy && !strcmp(j->slots[i].id, analysis_id))
			j->slots[i].cancel = 1;
	pthread_mutex_unlock(&j->mu);
	return PM_OK;
}

void jobs_stats(struct jobs *j, struct jobs_stats *out)
{
	struct pm_error ignored = {0};
	int64_t queued = 0;

	store_job_queued(j->store, &queued, &ignored);
	pthread_mutex_lock(&j->mu);
	memset(out, 0, sizeof *out);
	out->workers = j->started;
	out->queued = (size_t)queued;
	out->queue_capacity = j->o.queue_capacity;
	for (size_t i = 0; i < j->started; i++)
		out->running += j->slots[i].busy;
	out->succeeded = j->succeeded;
	out->failed = j->failed;
	out->cancelled = j->cancelled;
	out->solves = j->solves;
	out->solve_seconds_total = j->solve_seconds;
	out->claims = j->claims;
	out->takeovers = j->takeovers;
	out->expiries = j->expiries;
	out->dropped = j->dropped;
	pthread_mutex_unlock(&j->mu);
}
