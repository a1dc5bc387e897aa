/*
 * When a solve stops: the one owner of the targets, the polish, the
 * probes' early stops and their verdict, and the fallback. Small pure
 * tests in the manner of GSL's gsl_multimin_test_*: each takes what it
 * looks at as arguments and returns a number or a verdict, so the
 * policy can be read, and tested, without running a solve. Internal to
 * solver/.
 */
#ifndef PMAXENT_STOP_H
#define PMAXENT_STOP_H

#include <stddef.h>

/* ---- targets ---------------------------------------------------------- */

/* A solve converged: its violation (records) within the tolerance. */
int stop_converged(double violation, double tolerance);

/*
 * The violation every dual solve aims for: a thousandth of the
 * tolerance, so that the metrics (logarithms of the posteriors) are
 * as exact as the tolerance promises, but no finer than the rounding
 * of the largest right-hand side max_rhs (1e-13 relative: a row of a
 * million records cannot be summed closer than that).
 */
double stop_target(double tolerance, double max_rhs);

/*
 * Past the target, the polish: the accuracies take logarithms of the
 * posteriors, so a cell's error counts relative to the cell. Newton goes
 * on to STOP_POLISH times the smallest free cell ymin (not below the
 * rounding floor), at most STOP_POLISH_STEPS more steps (quadratic
 * convergence: one, as a rule). A probe (solved again should it fail)
 * with a cell below STOP_PROBE_SMALL is not polished: returns target.
 */
#define STOP_POLISH	  1e-6
#define STOP_POLISH_STEPS 3
#define STOP_PROBE_SMALL  1e-6
double stop_polish_target(double target, double floor, double ymin, int probe);

/* The iteration limit of a polish after `done` iterations (the caller's
 * limit max_iterations kept). */
int stop_polish_limit(int done, int steps, int max_iterations);

/* ---- Newton's early stops (probes) ----------------------------------- */

/*
 * Linear convergence: STOP_LINEAR_STEPS full steps in a row that leave
 * more than STOP_LINEAR_RATE of the violation each, on average
 * (geometric). Newton's quadratic convergence leaves far less from its
 * first full steps on; a cell forced to zero (its multiplier running off
 * to infinity) shrinks by a steady factor near 1/e per full step, which
 * the rate must sit below with room to spare.
 */
#define STOP_LINEAR_STEPS 4
#define STOP_LINEAR_RATE  0.25
/*
 * Stagnation: the violation not halved over STOP_STALL_STEPS steps, full
 * or damped. A probe of infeasible knowledge (which only the relaxations
 * prove) has a dual unbounded below: Newton keeps lowering it while the
 * violation stays put, step after damped step, to the iteration cap.
 */
#define STOP_STALL_STEPS 8

/*
 * What a Newton run stops early on: nothing (a solve proper), stagnation
 * (a probe that runs to its end, the last chance) or also linear
 * convergence (a probe whose failure the zero search follows up).
 */
enum stop_early {
	STOP_EARLY_NONE = 0,
	STOP_EARLY_STALL,
	STOP_EARLY_LINEAR,
};

/*
 * Whether a probe stops after this step. past: the violation before each
 * of the last STOP_STALL_STEPS steps (a ring indexed by step number,
 * steps of them so far, this one not yet in it); fulls: full steps in a
 * row; viol: the violation now; narrowing: the multipliers that still
 * move are fewer than at the step before, most of them still moving or
 * their number halved (Newton's first steps from far away, which also
 * shrink the violation by a steady factor, but move most multipliers,
 * fewer at each step; a forced zero's run moves its own few, the same
 * ones). A narrowing step never stops.
 */
int stop_newton_early(enum stop_early kind, int narrowing, int fulls, int steps, const double *past,
		      double viol);

/* Whether the set of moving multipliers is narrowing (see above): now of
 * n move, last at the step before (SIZE_MAX before the first). */
int stop_narrowing(size_t now, size_t last, size_t n);

/* ---- the probe's verdict --------------------------------------------- */

/*
 * A probe is the solve itself, run once the zero search stopped short of
 * its exact depth: to STOP_PROBE_VIOLATION records, at most
 * STOP_PROBE_ITERATIONS iterations. A cell that some solution makes
 * positive converges to a positive value; a cell forced to zero keeps
 * shrinking by about a constant factor per iteration. So a converged
 * probe shows no sign of a forced zero when every free cell holds at
 * least half its value at the iterate before and either is at least the
 * floor (STOP_PROBE_FLOOR, and 1000 times the violation reached) or has
 * stopped moving (within STOP_PROBE_STEADY of it): a tiny positive cell
 * converges with its neighbours, a forced zero never does.
 */
#define STOP_PROBE_VIOLATION  1e-9
#define STOP_PROBE_FLOOR      1e-6
#define STOP_PROBE_STEADY     1e-3
#define STOP_PROBE_ITERATIONS 100

/* The tolerance of a probe under the caller's. */
double stop_probe_tolerance(double tolerance);

/* The iteration limit of a probe, `used` of the caller's max spent. */
int stop_probe_iterations(int max_iterations, int used);

/* The floor of a clean cell, after a probe that reached violation. */
double stop_probe_floor(double violation);

/* Whether one free cell of a converged probe is clean: y now, prev at the
 * iterate before, floor from stop_probe_floor. */
int stop_probe_cell(double y, double prev, double floor);

/* ---- the fallback ---------------------------------------------------- */

/*
 * Whether L-BFGS takes over from a Newton run that stalled (its line
 * search found no step) above the target: only for a solve proper (a
 * probe that stalls has answered), on the whole problem, within the
 * iteration limit.
 */
int stop_fallback(int stalled, int probe, int whole, double violation, double target,
		  int iterations, int max_iterations);

#endif
