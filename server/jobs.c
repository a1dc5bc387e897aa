/*
 * The analysis worker pool: a bounded FIFO of analysis ids and N worker
 * threads. The store is the truth about an analysis's state; every state
 * change is a compare-and-set there (store_analysis_transition), so a
 * DELETE that cancels an analysis and a worker that finishes it cannot
 * both win. The pool only adds what the store cannot: the queue, live
 * progress and the cancel flags that the solver's progress callback polls
 * once per iteration.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"

#define ID_MAX 64

/* A queued analysis; alone: it has crashed the service before, and runs
 * with no other analysis beside it. */
struct entry {
	char id[ID_MAX];
	int alone;
};

/* One worker's current analysis. */
struct slot {
	struct jobs *owner;
	char id[ID_MAX];
	int busy, cancel;
	struct jobs_progress p;
	struct solver_pool *pool; /* this worker's solver threads, or NULL */
};

struct jobs {
	struct store *store;
	struct jobs_options o;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t *threads;
	size_t n_threads, started;
	struct slot *slots;
	struct entry *queue; /* ring buffer */
	size_t head, len, cap, capacity;
	int alone_running; /* the running one is an "alone" analysis */
	int stopping;
	uint64_t succeeded, failed, cancelled, solves;
	double solve_seconds;
};

/* Appends id to the ring, growing it (recovery may exceed the capacity). */
static int queue_push(struct jobs *j, const char *id, int alone)
{
	if (j->len == j->cap) {
		size_t cap = j->cap ? 2 * j->cap : 16;
		struct entry *q = malloc(cap * sizeof *q);

		if (!q)
			return -1;
		for (size_t i = 0; i < j->len; i++)
			q[i] = j->queue[(j->head + i) % j->cap];
		free(j->queue);
		j->queue = q;
		j->cap = cap;
		j->head = 0;
	}
	snprintf(j->queue[(j->head + j->len) % j->cap].id, ID_MAX, "%s", id);
	j->queue[(j->head + j->len) % j->cap].alone = alone;
	j->len++;
	return 0;
}

/* Removes id from the queue if it is there; returns whether it was. */
static int queue_remove(struct jobs *j, const char *id)
{
	for (size_t i = 0; i < j->len; i++) {
		if (strcmp(j->queue[(j->head + i) % j->cap].id, id))
			continue;
		for (size_t k = i; k + 1 < j->len; k++)
			j->queue[(j->head + k) % j->cap] = j->queue[(j->head + k + 1) % j->cap];
		j->len--;
		return 1;
	}
	return 0;
}

/* Whether a worker may take the head of the queue now (j->mu held): an
 * "alone" analysis waits for the others to finish, and while it runs
 * nothing else starts. */
static int can_take(const struct jobs *j)
{
	if (!j->len || j->alone_running)
		return 0;
	for (size_t i = 0; j->queue[j->head].alone && i < j->started; i++)
		if (j->slots[i].busy)
			return 0;
	return 1;
}

static int on_progress(void *ctx, const struct solver_progress *p)
{
	struct slot *s = ctx;
	int cancel;

	pthread_mutex_lock(&s->owner->mu);
	s->p.now = *p;
	cancel = s->cancel;
	pthread_mutex_unlock(&s->owner->mu);
	return cancel;
}

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

/* The solver options of a job on the slot s: its progress and cancel
 * flag, the service's time limit (the default, and the most a request
 * gets: checked when it was posted). */
static void slot_options(struct jobs *j, struct slot *s, struct solver_options *o)
{
	solver_options_init(o);
	o->progress = on_progress;
	o->progress_ctx = s;
	o->pool = s->pool;
	o->time_limit = j->o.time_limit;
	o->stall = j->o.stall;
}

/* Loads the analysis request and its dataset, and runs the pipeline. */
static enum pm_status run_analysis(struct jobs *j, struct slot *s, const struct store_row *an,
				   json_t **result, struct pm_error *err)
{
	const struct dataset *ds = NULL;
	json_t *req = NULL;
	struct solver_options o;
	enum pm_status st = load(j, an, &ds, &req, err);

	if (st)
		goto out;
	slot_options(j, s, &o);
	st = pipeline_run_dataset(ds, json_object_get(req, "knowledge"),
				  json_object_get(req, "solver"), &o, 0, result, err);
	codec_request_field(err);
out:
	store_dataset_release(j->store, ds);
	json_decref(req);
	return st;
}

/* A running sweep: each point stored as it is solved. */
struct sweep_ctx {
	struct jobs *j;
	struct slot *s;
	json_t *points; /* every point, null until solved */
};

/* Stores the points so far; nonzero (cancels the sweep) when it is no
 * longer running: cancelled, deleted, or the service stopping. */
static int on_point(void *ctx, size_t at, const json_t *p)
{
	struct sweep_ctx *c = ctx;
	struct pm_error ignored = {0};
	char *text;
	int stop;

	if (json_array_set(c->points, at, (json_t *)p))
		return 1;
	text = json_dumps(c->points, JSON_COMPACT | JSON_REAL_PRECISION(17));
	stop = !text || store_sweep_points(c->j->store, c->s->id, text, &ignored);
	free(text);
	pthread_mutex_lock(&c->j->mu);
	stop |= c->s->cancel;
	pthread_mutex_unlock(&c->j->mu);
	return stop;
}

/* Loads the sweep request and its dataset, and runs the sweep; *result
 * is the points. */
static enum pm_status run_sweep(struct jobs *j, struct slot *s, const struct store_row *sw,
				json_t **result, struct pm_error *err)
{
	const struct dataset *ds = NULL;
	struct sweep_request q = {0};
	struct solver_options o;
	struct sweep_ctx c = {j, s, json_array()};
	struct sweep_hooks hooks = {on_point, &c};
	json_t *req = NULL, *out = NULL;
	enum pm_status st = load(j, sw, &ds, &req, err);

	slot_options(j, s, &o);
	if (!st && !(st = codec_sweep_request(req, ds, &q, err)) &&
	    !(st = codec_solver_options(json_object_get(req, "solver"), &o, err)) &&
	    !(st = codec_report_options(json_object_get(req, "report"), &o.privacy, err))) {
		size_t n = q.n_kinds * (q.n_t ? q.n_t : 1) * q.n_k;

		for (size_t i = 0; c.points && i < n; i++)
			json_array_append_new(c.points, json_null());
		st = sweep_run(ds, &q, &o, &hooks, &out, err);
	}
	if (!st)
		*result = json_incref(json_object_get(out, "points"));
	json_decref(out);
	json_decref(c.points);
	json_decref(req);
	sweep_request_finish(&q);
	store_dataset_release(j->store, ds);
	return st;
}

/* Records how the run ended, if the analysis is still "running" (a DELETE
 * may have cancelled it meanwhile: then the outcome is dropped). */
static void finish(struct jobs *j, struct slot *s, enum pm_status st, json_t *result,
		   struct pm_error *err)
{
	struct pm_error ignored = {0};
	char *text = NULL;
	const char *to = "failed";

	if (st == PM_OK) {
		text = json_dumps(result, JSON_COMPACT | JSON_REAL_PRECISION(17));
		to = "succeeded";
	} else if (st == PM_ERR_CANCELLED) {
		pthread_mutex_lock(&j->mu);
		to = j->stopping ? "queued" : "cancelled"; /* shutdown: run again later */
		pthread_mutex_unlock(&j->mu);
	} else {
		text = problem_text(err);
	}
	if (!move(j, s->id, "running", to, text, &ignored) && !is_sweep(s->id)) {
		pthread_mutex_lock(&j->mu);
		if (st == PM_OK) {
			j->succeeded++;
			j->solves++;
			j->solve_seconds += json_real_value(json_object_get(result, "seconds"));
		} else if (st == PM_ERR_CANCELLED) {
			/* only a shutdown gets here (a cancel moved it already) */
		} else {
			j->failed++;
		}
		pthread_mutex_unlock(&j->mu);
	}
	free(text);
}

static void process(struct jobs *j, struct slot *s)
{
	struct store_row an = {0};
	struct pm_error err = {0};
	json_t *result = NULL;
	enum pm_status st;

	/* lost the race to a cancel or a delete: nothing to do */
	if (move(j, s->id, "queued", "running", NULL, &err))
		return;
	st = get_job(j, s->id, &an, &err);
	if (!st)
		st = (is_sweep(s->id) ? run_sweep : run_analysis)(j, s, &an, &result, &err);
	finish(j, s, st, result, &err);
	json_decref(result);
	store_row_finish(&an);
}

static void *worker(void *arg)
{
	struct slot *s = arg;
	struct jobs *j = s->owner;
	int alone;

	/* kept for every analysis this worker runs (NULL if they cannot
	 * start: each solve then starts its own) */
	solver_pool_create(0, &s->pool);
	pthread_mutex_lock(&j->mu);
	for (;;) {
		while (!j->stopping && !can_take(j))
			pthread_cond_wait(&j->cv, &j->mu);
		if (j->stopping)
			break;
		memcpy(s->id, j->queue[j->head].id, ID_MAX);
		alone = j->queue[j->head].alone;
		j->head = (j->head + 1) % j->cap;
		j->len--;
		j->alone_running = alone;
		s->busy = 1;
		s->cancel = 0;
		s->p = (struct jobs_progress){{SOLVER_PHASE_SETUP, 0, NAN}, pipeline_now()};
		pthread_mutex_unlock(&j->mu);
		process(j, s);
		pthread_mutex_lock(&j->mu);
		s->busy = 0;
		s->id[0] = 0;
		j->alone_running = 0;
		pthread_cond_broadcast(&j->cv); /* an "alone" one may be waiting */
	}
	pthread_mutex_unlock(&j->mu);
	solver_pool_destroy(s->pool);
	return NULL;
}

/* The problem of an analysis that the service died running max times. */
static char *poison_problem(int max)
{
	struct pm_error e = {0};

	error_set(&e, PM_ERR_INTERNAL, "",
		  "the service stopped unexpectedly (a crash or a kill) the last %d times it ran "
		  "this analysis or sweep; it is not run again (--max-attempts %d)",
		  max, max);
	return problem_text(&e);
}

/* One analysis left unfinished by an earlier process: queued again, alone
 * if it has ever crashed the service, or failed at max_attempts. */
static enum pm_status recover_one(struct jobs *j, const char *id, const char *problem,
				  struct pm_error *err)
{
	struct store_row row = {0};
	struct pm_error ignored = {0};
	int crashes = 0, queue = 1;

	if (get_job(j, id, &row, &ignored))
		return PM_OK; /* deleted meanwhile */
	if (!strcmp(row.status, "running")) {
		if ((is_sweep(id) ? store_sweep_interrupted : store_analysis_interrupted)(
			j->store, id, j->o.max_attempts, problem, &crashes, &ignored))
			queue = 0;
		else if (crashes >= j->o.max_attempts)
			queue = 0, j->failed++;
	} else {
		crashes = row.crashes;
	}
	store_row_finish(&row);
	if (queue && queue_push(j, id, crashes > 0))
		return error_set(err, PM_ERR_NOMEM, "", "out of memory");
	return PM_OK;
}

/* Analyses (then sweeps: sweeps == 1) left queued or running by an
 * earlier process run again. */
static enum pm_status recover(struct jobs *j, int sweeps, struct pm_error *err)
{
	char **ids = NULL, *problem = poison_problem(j->o.max_attempts);
	size_t n = 0;
	enum pm_status st = sweeps ? store_sweep_unfinished(j->store, NULL, NULL, &ids, &n, err)
				   : store_analysis_unfinished(j->store, &ids, &n, err);

	if (!st && !problem)
		st = error_set(err, PM_ERR_NOMEM, "", "out of memory");
	for (size_t i = 0; i < n; i++) {
		if (!st)
			st = recover_one(j, ids[i], problem, err);
		free(ids[i]);
	}
	free(ids);
	free(problem);
	return st;
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
	j->o = *o;
	j->o.max_attempts = o->max_attempts > 0 ? o->max_attempts : 1;
	j->n_threads = o->workers ? o->workers : 1;
	j->capacity = o->queue_capacity ? o->queue_capacity : 1;
	pthread_mutex_init(&j->mu, NULL);
	pthread_cond_init(&j->cv, NULL);
	j->threads = calloc(j->n_threads, sizeof *j->threads);
	j->slots = calloc(j->n_threads, sizeof *j->slots);
	if (!j->threads || !j->slots) {
		error_set(err, st, "", "out of memory");
		goto out;
	}
	st = recover(j, 0, err);
	if (!st)
		st = recover(j, 1, err);
	for (size_t i = 0; !st && i < j->n_threads; i++) {
		j->slots[i].owner = j;
		if (pthread_create(&j->threads[i], NULL, worker, &j->slots[i]))
			st = error_set(err, PM_ERR_INTERNAL, "", "cannot start worker threads");
		else
			j->started++;
	}
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
	pthread_mutex_unlock(&j->mu);
	for (size_t i = 0; i < j->started; i++)
		pthread_join(j->threads[i], NULL);
	pthread_mutex_destroy(&j->mu);
	pthread_cond_destroy(&j->cv);
	free(j->threads);
	free(j->slots);
	free(j->queue);
	free(j);
}

enum pm_status jobs_submit(struct jobs *j, const char *analysis_id, struct pm_error *err)
{
	enum pm_status st = PM_OK;

	pthread_mutex_lock(&j->mu);
	if (j->stopping)
		st = error_set(err, PM_ERR_BUSY, "", "the service is shutting down");
	else if (j->len >= j->capacity)
		st = error_set(err, PM_ERR_BUSY, "", "the analysis queue is full (%zu queued)",
			       j->len);
	else if (queue_push(j, analysis_id, 0))
		st = error_set(err, PM_ERR_NOMEM, "", "out of memory");
	else
		pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
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
	/* the store first: a worker that finishes now loses the race */
	enum pm_status st = move(j, analysis_id, "queued|running", "cancelled", NULL, err);

	if (st)
		return st;
	pthread_mutex_lock(&j->mu);
	j->cancelled += !is_sweep(analysis_id); /* the analyses' count (/metrics) */
	queue_remove(j, analysis_id);
	for (size_t i = 0; i < j->started; i++)
		if (j->slots[i].busy && !strcmp(j->slots[i].id, analysis_id))
			j->slots[i].cancel = 1;
	pthread_cond_broadcast(&j->cv); /* the head of the queue may have changed */
	pthread_mutex_unlock(&j->mu);
	return PM_OK;
}

void jobs_stats(struct jobs *j, struct jobs_stats *out)
{
	pthread_mutex_lock(&j->mu);
	memset(out, 0, sizeof *out);
	out->workers = j->started;
	out->queued = j->len;
	out->queue_capacity = j->capacity;
	for (size_t i = 0; i < j->started; i++)
		out->running += j->slots[i].busy;
	out->succeeded = j->succeeded;
	out->failed = j->failed;
	out->cancelled = j->cancelled;
	out->solves = j->solves;
	out->solve_seconds_total = j->solve_seconds;
	pthread_mutex_unlock(&j->mu);
}
