/*
 * The cancel token: what travels through a solve in place of its options
 * so that every part can be stopped. It holds the deadline (the time
 * limit, read once by solver_run), the caller's cancel (its progress
 * callback returning nonzero) and where the solve is, which the parts
 * report and the caller is told. Parts that run at once (components on
 * the pool) report one at a time: the token is locked. Internal to
 * solver/.
 */
#ifndef PMAXENT_CANCEL_H
#define PMAXENT_CANCEL_H

#include <pthread.h>

#include "solver.h"

struct cancel {
	pthread_mutex_t mu;
	int (*progress)(void *ctx, const struct solver_progress *p);
	void *ctx;
	double end;    /* monotonic seconds (solver_now); INFINITY: no limit */
	double stall;  /* tests: seconds to wait at the first check; 0 once waited */
	int expired;   /* the deadline stopped the solve */
	int cancelled; /* the caller did */
	/* what the caller is told: the phase, and the iterations of the
	 * solves that ended (base) to which the running one's count adds */
	struct solver_progress now;
	int base;
};

/* The token of a solve started at `start` (solver_now) under o: its time
 * limit, stall and progress callback. cancel_finish releases it. */
void cancel_init(struct cancel *c, const struct solver_options *o, double start);
void cancel_finish(struct cancel *c);

/*
 * A part reports an iterate (iteration > 0, or a violation) or only
 * polls (0, NaN): the caller's cancel first (a cancel stays a cancel),
 * then the clock. Returns 1 when the solve is to stop; once it does,
 * every later call does too, so a cancel never turns into a time limit
 * or back. c may be NULL: never stops.
 */
int cancel_report(struct cancel *c, int iteration, double violation);

/* cancel_report(c, 0, NAN). */
int cancel_poll(struct cancel *c);

/* The phase the caller is told of from now on (and at once, a chance to
 * cancel), the iterations of the solves that ended being base: 1 if the
 * solve is to stop. */
int cancel_phase(struct cancel *c, enum solver_phase phase, int base);

/* Whether the solve was stopped, and by the deadline. */
int cancel_stopped(struct cancel *c);
int cancel_expired(struct cancel *c);

#endif
