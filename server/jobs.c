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
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t *threads;
	size_t n_threads, started;
	struct slot *slots;
	char (*queue)[ID_MAX]; /* ring buffer */
	size_t head, len, cap, capacity;
	int stopping;
	uint64_t succeeded, failed, cancelled, solves;
	double solve_seconds;
};

/* Appends id to the ring, growing it (recovery may exceed the capacity). */
static int queue_push(struct jobs *j, const char *id)
{
	if (j->len == j->cap) {
		size_t cap = j->cap ? 2 * j->cap : 16;
		char(*q)[ID_MAX] = malloc(cap * sizeof *q);

		if (!q)
			return -1;
		for (size_t i = 0; i < j->len; i++)
			memcpy(q[i], j->queue[(j->head + i) % j->cap], ID_MAX);
		free(j->queue);
		j->queue = q;
		j->cap = cap;
		j->head = 0;
	}
	snprintf(j->queue[(j->head + j->len) % j->cap], ID_MAX, "%s", id);
	j->len++;
	return 0;
}

/* Removes id from the queue if it is there; returns whether it was. */
static int queue_remove(struct jobs *j, const char *id)
{
	for (size_t i = 0; i < j->len; i++) {
		if (strcmp(j->queue[(j->head + i) % j->cap], id))
			continue;
		for (size_t k = i; k + 1 < j->len; k++)
			memcpy(j->queue[(j->head + k) % j->cap],
			       j->queue[(j->head + k + 1) % j->cap], ID_MAX);
		j->len--;
		return 1;
	}
	return 0;
}

static int on_progress(void *ctx, int iteration, double max_violation)
{
	struct slot *s = ctx;
	int cancel;

	pthread_mutex_lock(&s->owner->mu);
	s->p.iterations = iteration;
	s->p.max_violation = max_violation;
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

/* Knowledge fields are reported as the analysis request names them. */
static void prefix_field(struct pm_error *err)
{
	if (!strncmp(err->field, "rules", 5) || !strncmp(err->field, "mine", 4))
		error_prefix(err, "knowledge");
}

/* Loads the analysis request and its dataset, and runs the pipeline. */
static enum pm_status run_analysis(struct jobs *j, struct slot *s, const struct store_row *an,
				   json_t **result, struct pm_error *err)
{
	struct store_row dsrow = {0};
	struct dataset *ds = NULL;
	json_t *req = NULL, *body = NULL;
	struct solver_options o;
	json_error_t jerr;
	enum pm_status st;

	st = store_dataset_get(j->store, an->dataset_id, an->tenant, 1, &dsrow, err);
	if (st)
		goto out;
	body = json_loads(dsrow.body, 0, &jerr);
	req = json_loads(an->request, 0, &jerr);
	if (!body || !req) {
		st =
		    error_set(err, PM_ERR_INTERNAL, "", "stored JSON is unreadable: %s", jerr.text);
		goto out;
	}
	st = codec_dataset(body, &ds, err);
	if (st)
		goto out;
	solver_options_init(&o);
	o.progress = on_progress;
	o.progress_ctx = s;
	o.pool = s->pool;
	st = pipeline_run_dataset(ds, json_object_get(req, "knowledge"),
				  json_object_get(req, "solver"), &o, 0, result, err);
out:
	prefix_field(err);
	dataset_destroy(ds);
	json_decref(req);
	json_decref(body);
	store_row_finish(&dsrow);
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
	if (!store_analysis_transition(j->store, s->id, "running", to, text, &ignored)) {
		pthread_mutex_lock(&j->mu);
		if (st == PM_OK) {
			j->succeeded++;
			j->solves++;
			j->solve_seconds += json_real_value(json_object_get(result, "seconds"));
		} else if (st == PM_ERR_CANCELLED) {
			j->cancelled += !strcmp(to, "cancelled");
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
	if (store_analysis_transition(j->store, s->id, "queued", "running", NULL, &err))
		return;
	st = store_analysis_get(j->store, s->id, NULL, &an, &err);
	if (!st)
		st = run_analysis(j, s, &an, &result, &err);
	finish(j, s, st, result, &err);
	json_decref(result);
	store_row_finish(&an);
}

static void *worker(void *arg)
{
	struct slot *s = arg;
	struct jobs *j = s->owner;

	/* kept for every analysis this worker runs (NULL if they cannot
	 * start: each solve then starts its own) */
	solver_pool_create(0, &s->pool);
	pthread_mutex_lock(&j->mu);
	for (;;) {
		while (!j->stopping && j->len == 0)
			pthread_cond_wait(&j->cv, &j->mu);
		if (j->stopping)
			break;
		memcpy(s->id, j->queue[j->head], ID_MAX);
		j->head = (j->head + 1) % j->cap;
		j->len--;
		s->busy = 1;
		s->cancel = 0;
		s->p = (struct jobs_progress){0, NAN, pipeline_now()};
		pthread_mutex_unlock(&j->mu);
		process(j, s);
		pthread_mutex_lock(&j->mu);
		s->busy = 0;
		s->id[0] = 0;
	}
	pthread_mutex_unlock(&j->mu);
	solver_pool_destroy(s->pool);
	return NULL;
}

/* Analyses left queued or running by an earlier process run again. */
static enum pm_status recover(struct jobs *j, struct pm_error *err)
{
	char **ids = NULL;
	size_t n = 0;
	enum pm_status st = store_analysis_unfinished(j->store, &ids, &n, err);
	struct pm_error ignored = {0};

	for (size_t i = 0; i < n; i++) {
		store_analysis_transition(j->store, ids[i], "running", "queued", NULL, &ignored);
		if (!st && queue_push(j, ids[i]))
			st = error_set(err, PM_ERR_NOMEM, "", "out of memory");
		free(ids[i]);
	}
	free(ids);
	return st;
}

enum pm_status jobs_create(struct store *s, size_t workers, size_t queue_capacity,
			   struct jobs **out, struct pm_error *err)
{
	struct jobs *j = calloc(1, sizeof *j);
	enum pm_status st = PM_ERR_NOMEM;

	*out = NULL;
	if (!j)
		return error_set(err, st, "", "out of memory");
	j->store = s;
	j->n_threads = workers ? workers : 1;
	j->capacity = queue_capacity ? queue_capacity : 1;
	pthread_mutex_init(&j->mu, NULL);
	pthread_cond_init(&j->cv, NULL);
	j->threads = calloc(j->n_threads, sizeof *j->threads);
	j->slots = calloc(j->n_threads, sizeof *j->slots);
	if (!j->threads || !j->slots) {
		error_set(err, st, "", "out of memory");
		goto out;
	}
	st = recover(j, err);
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
	else if (queue_push(j, analysis_id))
		st = error_set(err, PM_ERR_NOMEM, "", "out of memory");
	else
		pthread_cond_signal(&j->cv);
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

void jobs_cancel(struct jobs *j, const char *analysis_id)
{
	pthread_mutex_lock(&j->mu);
	queue_remove(j, analysis_id);
	for (size_t i = 0; i < j->started; i++)
		if (j->slots[i].busy && !strcmp(j->slots[i].id, analysis_id))
			j->slots[i].cancel = 1;
	pthread_mutex_unlock(&j->mu);
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
