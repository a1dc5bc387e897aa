/*
 * The cancel token (cancel.h): the deadline, the caller's cancel and the
 * tests' stall in front of the caller's progress callback. Every place
 * that polls it (the iterations, the components, the relaxations, the
 * interior point methods, the LP slices) also stops the solve when the
 * time is up, and solver_run tells the two apart by `expired`.
 */
#include <math.h>
#include <time.h>

#include "cancel.h"
#include "solve.h"

/* Sleeps of the stall, between which the cancel and the limit are
 * polled. */
#define STALL_SLEEP 0.005

double solver_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void cancel_init(struct cancel *c, const struct solver_options *o, double start)
{
	*c = (struct cancel){.progress = o->progress,
			     .ctx = o->progress_ctx,
			     .end = o->time_limit > 0 ? start + o->time_limit : INFINITY,
			     .stall = o->stall,
			     .now = {SOLVER_PHASE_ZEROS, 0, NAN}};
	pthread_mutex_init(&c->mu, NULL);
}

void cancel_finish(struct cancel *c)
{
	pthread_mutex_destroy(&c->mu);
}

/* The caller's callback, told where the solve is: a report of an
 * iterate (iteration > 0, or a violation) moves the count on from the
 * solves before it (base), never back (components report their own
 * counts, one at a time); a poll (0, NaN) only repeats the phase. */
static int caller(struct cancel *c, int iteration, double violation)
{
	if (iteration > 0 || !isnan(violation)) {
		int it = c->base + iteration;

		c->now.iterations = it > c->now.iterations ? it : c->now.iterations;
		c->now.max_violation = violation;
	}
	return c->progress && c->progress(c->ctx, &c->now);
}

/* The stall, in small sleeps: 1 when a cancel or the limit ends it. */
static int stall(struct cancel *c, int iteration, double violation)
{
	double until = solver_now() + c->stall;

	c->stall = 0;
	for (double t = solver_now(); t < until; t = solver_now()) {
		double nap = fmin(STALL_SLEEP, until - t);
		struct timespec ts = {0, (long)(nap * 1e9)};

		if ((c->cancelled = caller(c, iteration, violation)))
			return 1;
		if (t >= c->end)
			return c->expired = 1;
		nanosleep(&ts, NULL);
	}
	return 0;
}

static int report(struct cancel *c, int iteration, double violation)
{
	if (c->expired || c->cancelled)
		return 1;
	if (c->stall > 0 && stall(c, iteration, violation))
		return 1;
	if ((c->cancelled = caller(c, iteration, violation)))
		return 1;
	return c->expired = solver_now() >= c->end;
}

int cancel_report(struct cancel *c, int iteration, double violation)
{
	int stop;

	if (!c)
		return 0;
	pthread_mutex_lock(&c->mu);
	stop = report(c, iteration, violation);
	pthread_mutex_unlock(&c->mu);
	return stop;
}

int cancel_poll(struct cancel *c)
{
	return cancel_report(c, 0, NAN);
}

int cancel_phase(struct cancel *c, enum solver_phase phase, int base)
{
	int stop;

	pthread_mutex_lock(&c->mu);
	c->now.phase = phase;
	c->base = base;
	stop = c->expired || c->cancelled || (c->cancelled = caller(c, 0, NAN)) ||
	       (c->expired = solver_now() >= c->end);
	pthread_mutex_unlock(&c->mu);
	return stop;
}

int cancel_stopped(struct cancel *c)
{
	int stopped;

	pthread_mutex_lock(&c->mu);
	stopped = c->expired || c->cancelled;
	pthread_mutex_unlock(&c->mu);
	return stopped;
}

int cancel_expired(struct cancel *c)
{
	int expired;

	pthread_mutex_lock(&c->mu);
	expired = c->expired;
	pthread_mutex_unlock(&c->mu);
	return expired;
}
