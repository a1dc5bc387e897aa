/*
 * Worker processes (server/isolate.c): a body's result and error come
 * back exactly; progress and points are relayed; a crash, an abort, a
 * memory limit, a hang past the deadline and a cancel each end that one
 * child with the reason named, and the test process goes on.
 */
#include <signal.h>
#include <unistd.h>

#include "check.h"
#include "isolate.h"
#include "server.h"

/* A result of n bytes of text in an array, after a progress and two points. */
static enum pm_status body_ok(void *arg, struct isolate_child *c, json_t **out,
			      struct pm_error *err)
{
	size_t n = *(size_t *)arg;
	char *big = malloc(n + 1);
	struct solver_progress p = {SOLVER_PHASE_ITERATE, 7, 0.25};
	json_t *pt = json_pack("{s:i}", "k", 5);

	(void)err;
	memset(big, 'x', n);
	big[n] = 0;
	isolate_progress(c, &p);
	isolate_point(c, 1, pt);
	isolate_point(c, 0, pt);
	json_decref(pt);
	*out = json_pack("{s:f, s:s, s:f}", "seconds", 1.5, "big", big, "third", 1.0 / 3);
	free(big);
	return PM_OK;
}

static enum pm_status body_error(void *arg, struct isolate_child *c, json_t **out,
				 struct pm_error *err)
{
	(void)arg, (void)c, (void)out;
	return error_set(err, PM_ERR_INCONSISTENT, "rules[3]", "no distribution satisfies %s",
			 "them");
}

static enum pm_status body_abort(void *arg, struct isolate_child *c, json_t **out,
				 struct pm_error *err)
{
	(void)arg, (void)c, (void)out, (void)err;
	abort();
}

static enum pm_status body_segv(void *arg, struct isolate_child *c, json_t **out,
				struct pm_error *err)
{
	(void)c, (void)out, (void)err;
	signal(SIGSEGV, SIG_DFL); /* not AddressSanitizer's handler, which aborts */
	raise(SIGSEGV);
	return *(volatile int *)arg ? PM_OK : PM_ERR_INTERNAL;
}

/* Allocates and touches memory until malloc fails, as the solver does
 * when out of memory: PM_ERR_NOMEM. */
static enum pm_status body_hog(void *arg, struct isolate_child *c, json_t **out,
			       struct pm_error *err)
{
	size_t chunk = (size_t)16 << 20;

	(void)arg, (void)c, (void)out;
	for (size_t total = 0; total < ((size_t)64 << 30); total += chunk) {
		char *p = malloc(chunk);

		if (!p)
			return error_set(err, PM_ERR_NOMEM, "", "out of memory");
		memset(p, 1, chunk); /* never freed: the child exits */
	}
	return PM_OK;
}

static enum pm_status body_hang(void *arg, struct isolate_child *c, json_t **out,
				struct pm_error *err)
{
	(void)arg, (void)c, (void)out, (void)err;
	for (;;)
		pause();
	return PM_ERR_INTERNAL; /* not reached */
}

struct seen {
	int progress, points, cancel_after;
	size_t first_at;
	double violation;
};

static int on_progress(void *ctx, const struct solver_progress *p)
{
	struct seen *s = ctx;

	s->progress++;
	s->violation = p->max_violation;
	return 0;
}

static int on_point(void *ctx, size_t at, const char *json, size_t n)
{
	struct seen *s = ctx;

	if (!s->points++)
		s->first_at = at;
	CHECK(n == strlen("{\"k\":5}") && !memcmp(json, "{\"k\":5}", n));
	return 0;
}

static int on_cancel(void *ctx)
{
	struct seen *s = ctx;

	return ++s->progress > s->cancel_after;
}

static void test_result(void)
{
	size_t n = (size_t)3 << 20; /* larger than a pipe holds */
	struct seen s = {0};
	struct isolate_options o = {.progress = on_progress, .point = on_point, .ctx = &s};
	static const char *const drop[] = {"big", NULL};
	struct pm_error err = {0};
	struct isolate_answer a;
	json_t *j;

	o.summary_drop = drop;
	CHECK(isolate_run(body_ok, &n, &o, &a, &err) == PM_OK);
	CHECK(a.text && a.len == strlen(a.text));
	j = a.text ? json_loads(a.text, 0, NULL) : NULL;
	CHECK(j && strlen(json_string_value(json_object_get(j, "big"))) == n);
	/* reals come back exact */
	CHECK(j && json_real_value(json_object_get(j, "third")) == 1.0 / 3);
	CHECK(a.seconds == 1.5);
	CHECK_STR(a.summary, "{\"seconds\":1.5,\"third\":0.33333333333333331}");
	CHECK(s.progress == 1 && s.violation == 0.25);
	CHECK(s.points == 2 && s.first_at == 1);
	json_decref(j);
	isolate_answer_finish(&a);
	o.summary_drop = NULL;
	CHECK(isolate_run(body_ok, &n, &o, &a, &err) == PM_OK && !a.summary);
	isolate_answer_finish(&a);
}

static void test_error(void)
{
	struct isolate_options o = {0};
	struct pm_error err = {0};
	struct isolate_answer a;

	CHECK(isolate_run(body_error, NULL, &o, &a, &err) == PM_ERR_INCONSISTENT);
	CHECK(err.status == PM_ERR_INCONSISTENT && !a.text);
	CHECK_STR(err.field, "rules[3]");
	CHECK_STR(err.message, "no distribution satisfies them");
}

/* A death is named by its signal, and the next child runs as before. */
static void test_crashes(void)
{
	struct isolate_options o = {0};
	struct pm_error err = {0};
	struct isolate_answer a;
	size_t n = 10;
	int one = 1;

	CHECK(isolate_run(body_abort, NULL, &o, &a, &err) == PM_ERR_INTERNAL);
	CHECK_CONTAINS(err.message, "signal 6 (SIGABRT)");
	CHECK(isolate_run(body_segv, &one, &o, &a, &err) == PM_ERR_INTERNAL);
	CHECK_CONTAINS(err.message, "signal 11 (SIGSEGV)");
	o.test_signal = SIGBUS; /* the tests' hook, before the body */
	CHECK(isolate_run(body_ok, &n, &o, &a, &err) == PM_ERR_INTERNAL);
	CHECK_CONTAINS(err.message, "SIGBUS");
	o.test_signal = 0;
	CHECK(isolate_run(body_ok, &n, &o, &a, &err) == PM_OK);
	isolate_answer_finish(&a);
}

static void test_memory(void)
{
	struct isolate_options o = {.memory = (size_t)256 << 20};
	struct pm_error err = {0};
	struct isolate_answer a;

	if (!isolate_memory_limited()) {
		printf("memory limit not enforced in this build (sanitizer): skipped\n");
		return;
	}
	CHECK(isolate_run(body_hog, NULL, &o, &a, &err) == PM_ERR_NOMEM);
	CHECK_CONTAINS(err.message, "at most 256 MiB");
	CHECK_CONTAINS(err.message, "--worker-memory");
}

static void test_deadline_and_cancel(void)
{
	struct seen s = {.cancel_after = 5};
	struct isolate_options o = {.deadline = 0.3};
	struct pm_error err = {0};
	struct isolate_answer a;
	double t0 = solver_now();

	CHECK(isolate_run(body_hang, NULL, &o, &a, &err) == PM_ERR_INTERNAL);
	CHECK_CONTAINS(err.message, "past its time limit");
	CHECK(solver_now() - t0 < 5);
	o = (struct isolate_options){.cancelled = on_cancel, .ctx = &s};
	t0 = solver_now();
	CHECK(isolate_run(body_hang, NULL, &o, &a, &err) == PM_ERR_CANCELLED);
	CHECK(solver_now() - t0 < 5);
}

/* A kept worker's job: counts the jobs this process has run (its own
 * memory, kept between them) and answers with the count and the job's
 * text; "crash" aborts, "hang" never answers. */
static enum pm_status serve_count(void *state, const char *job, size_t len, struct isolate_child *c,
				  json_t **out, struct pm_error *err)
{
	static int runs;
	struct solver_progress p = {SOLVER_PHASE_ITERATE, 1, 0.5};

	(void)state, (void)err;
	if (len == 5 && !memcmp(job, "crash", 5))
		abort();
	if (len == 4 && !memcmp(job, "hang", 4))
		for (;;)
			pause();
	isolate_progress(c, &p);
	*out = json_pack("{s:i, s:s%, s:i}", "runs", ++runs, "job", job, len, "pid", (int)getpid());
	return PM_OK;
}

/* One worker runs job after job (its memory kept: the count goes on, the
 * pid stays); a job that kills it is named as a forked child's death is,
 * and the next job gets a new worker (a new generation, the count from
 * 1); a cancel kills it too. */
static void test_kept_worker(void)
{
	struct isolate_worker *w = NULL;
	struct seen s = {.cancel_after = 5};
	struct isolate_options o = {.progress = on_progress, .ctx = &s};
	struct pm_error err = {0};
	struct isolate_answer a;
	json_t *j;
	int pid = 0;

	CHECK(isolate_worker_create(serve_count, NULL, 0, &w, &err) == PM_OK);
	for (int i = 1; i <= 3; i++) {
		CHECK(isolate_worker_run(w, "abc", 3, &o, &a, &err) == PM_OK);
		j = a.text ? json_loads(a.text, 0, NULL) : NULL;
		CHECK(json_integer_value(json_object_get(j, "runs")) == i);
		CHECK_STR(json_string_value(json_object_get(j, "job")), "abc");
		CHECK(i == 1 || json_integer_value(json_object_get(j, "pid")) == pid);
		pid = (int)json_integer_value(json_object_get(j, "pid"));
		json_decref(j);
		isolate_answer_finish(&a);
	}
	CHECK(isolate_worker_generation(w) == 1 && s.progress == 3);
	if (!isolate_forks()) {
		printf("no worker process in this build (sanitizer): its deaths skipped\n");
		isolate_worker_destroy(w);
		return;
	}
	CHECK(isolate_worker_run(w, "crash", 5, &o, &a, &err) == PM_ERR_INTERNAL);
	CHECK_CONTAINS(err.message, "signal 6 (SIGABRT)");
	CHECK(isolate_worker_run(w, "x", 1, &o, &a, &err) == PM_OK);
	CHECK(isolate_worker_generation(w) == 2);
	CHECK(a.text && strstr(a.text, "\"runs\":1"));
	isolate_answer_finish(&a);
	o = (struct isolate_options){.cancelled = on_cancel, .ctx = &s};
	s.progress = 0;
	CHECK(isolate_worker_run(w, "hang", 4, &o, &a, &err) == PM_ERR_CANCELLED);
	o = (struct isolate_options){.test_signal = SIGSEGV};
	CHECK(isolate_worker_run(w, "x", 1, &o, &a, &err) == PM_ERR_INTERNAL);
	CHECK_CONTAINS(err.message, "SIGSEGV");
	o.test_signal = 0;
	CHECK(isolate_worker_run(w, "x", 1, &o, &a, &err) == PM_OK);
	CHECK(isolate_worker_generation(w) == 4);
	isolate_answer_finish(&a);
	isolate_worker_destroy(w);
	isolate_worker_destroy(NULL);
}

int main(void)
{
	test_result();
	test_error();
	if (isolate_forks()) { /* a body that dies or hangs: only in a process of its own */
		test_crashes();
		test_memory();
		test_deadline_and_cancel();
	} else {
		printf("bodies run in process in this build (sanitizer): deaths skipped\n");
	}
	test_kept_worker();
	return check_done();
}
