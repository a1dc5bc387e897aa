/*
 * The stopping policy (stop.c), test by test: the targets and the
 * polish, the probes' early stops on sequences of violations whose
 * verdict is known (quadratic convergence, a forced zero's steady
 * shrink, Newton's first steps from far away, stagnation), the probe's
 * verdict on single cells, and the fallback.
 */
#include <stdint.h>

#include "check.h"
#include "stop.h"

static void test_targets(void)
{
	CHECK(stop_converged(1e-6, 1e-6));
	CHECK(!stop_converged(1.0000001e-6, 1e-6));
	CHECK(!stop_converged(NAN, 1e-6));
	/* a thousandth of the tolerance ... */
	CHECK_NEAR(stop_target(1e-6, 1), 1e-9, 1e-24);
	CHECK_NEAR(stop_target(1e-6, 1e3), 1e-9, 1e-24);
	/* ... but not below rounding of the largest row */
	CHECK_NEAR(stop_target(1e-6, 1e7), 1e-6, 1e-21);
	CHECK_NEAR(stop_target(1e-9, 1e5), 1e-8, 1e-23);
}

static void test_polish(void)
{
	/* to a millionth of the smallest cell, between floor and target */
	CHECK_NEAR(stop_polish_target(1e-9, 1e-13, 1.0, 0), 1e-9, 1e-24);
	CHECK_NEAR(stop_polish_target(1e-9, 1e-13, 1e-5, 0), 1e-11, 1e-26);
	CHECK_NEAR(stop_polish_target(1e-9, 1e-13, 1e-12, 0), 1e-13, 1e-28);
	CHECK_NEAR(stop_polish_target(1e-9, 1e-13, INFINITY, 0), 1e-9, 1e-24);
	/* a probe with a tiny cell is solved again: no polish */
	CHECK_NEAR(stop_polish_target(1e-9, 1e-13, 1e-7, 1), 1e-9, 1e-24);
	CHECK_NEAR(stop_polish_target(1e-9, 1e-13, 1e-5, 1), 1e-11, 1e-26);
	/* the limit: steps more, within the caller's */
	CHECK(stop_polish_limit(10, 3, 100) == 13);
	CHECK(stop_polish_limit(98, 3, 100) == 100);
	CHECK(stop_polish_limit(2147483645, 8, 2147483647) == 2147483647);
}

/* Runs the early stop over the violations v[0..n) (v[0] the start, one
 * full step each after it, narrowing never): the step it stops after,
 * or 0 if it never does. */
static int stops_after(enum stop_early kind, const double *v, int n, int full)
{
	double past[STOP_STALL_STEPS];
	int fulls = 0;

	for (int steps = 0; steps + 1 < n; steps++) {
		fulls = full ? fulls + 1 : 0;
		if (stop_newton_early(kind, 0, fulls, steps, past, v[steps + 1]))
			return steps + 1;
		past[steps % STOP_STALL_STEPS] = v[steps];
	}
	return 0;
}

static void test_early(void)
{
	double quadratic[] = {1e2, 1e1, 1e-1, 1e-5, 1e-13};
	double forced[16], stall[16], fast[16];

	for (int i = 0; i < 16; i++) {
		forced[i] = 100 * exp(-i); /* a forced zero: e per full step */
		stall[i] = 1 + 0.01 * (16 - i);
		fast[i] = 100 * pow(0.2, i); /* below the linear rate */
	}
	CHECK(stops_after(STOP_EARLY_LINEAR, quadratic, 5, 1) == 0);
	CHECK(stops_after(STOP_EARLY_LINEAR, fast, 16, 1) == 0);
	/* four full steps at 1/e: linear */
	CHECK(stops_after(STOP_EARLY_LINEAR, forced, 16, 1) == STOP_LINEAR_STEPS);
	/* the last chance and the solve proper run on */
	CHECK(stops_after(STOP_EARLY_STALL, forced, 16, 1) == 0);
	CHECK(stops_after(STOP_EARLY_NONE, forced, 16, 1) == 0);
	/* damped steps are no linear rate */
	CHECK(stops_after(STOP_EARLY_LINEAR, forced, 16, 0) == 0);
	/* no halving over the stall window: both kinds stop, not NONE */
	CHECK(stops_after(STOP_EARLY_STALL, stall, 16, 0) == STOP_STALL_STEPS + 1);
	CHECK(stops_after(STOP_EARLY_LINEAR, stall, 16, 1) == STOP_LINEAR_STEPS);
	CHECK(stops_after(STOP_EARLY_NONE, stall, 16, 0) == 0);
	/* narrowing never stops */
	{
		double past[STOP_STALL_STEPS] = {1, 1, 1, 1, 1, 1, 1, 1};

		CHECK(stop_newton_early(STOP_EARLY_LINEAR, 0, 9, 9, past, 1));
		CHECK(!stop_newton_early(STOP_EARLY_LINEAR, 1, 9, 9, past, 1));
	}
}

static void test_narrowing(void)
{
	/* most still move, fewer than before: Newton's first steps */
	CHECK(stop_narrowing(900, 950, 1000));
	CHECK(stop_narrowing(900, SIZE_MAX, 1000));
	/* at most half move: narrowing only when their number halves */
	CHECK(!stop_narrowing(400, 450, 1000));
	CHECK(stop_narrowing(200, 450, 1000));
	CHECK(!stop_narrowing(450, 450, 1000));
	CHECK(!stop_narrowing(500, 400, 1000));
	CHECK(!stop_narrowing(0, 0, 1000));
	CHECK(stop_narrowing(0, 1, 1000));
}

static void test_probe(void)
{
	CHECK_NEAR(stop_probe_tolerance(1e-3), 1e-6, 1e-21);
	CHECK_NEAR(stop_probe_tolerance(1e-8), 1e-8, 1e-23);
	CHECK(stop_probe_iterations(10000, 0) == STOP_PROBE_ITERATIONS);
	CHECK(stop_probe_iterations(10000, 9950) == 50);
	CHECK(stop_probe_iterations(10, 10) == 0);
	CHECK_NEAR(stop_probe_floor(1e-12), STOP_PROBE_FLOOR, 0);
	CHECK_NEAR(stop_probe_floor(1e-8), 1e-5, 1e-20);
	/* large and steady, large and moving: clean */
	CHECK(stop_probe_cell(0.5, 0.5, 1e-6));
	CHECK(stop_probe_cell(0.5, 0.9, 1e-6));
	/* halved since the iterate before: a forced zero's shrink */
	CHECK(!stop_probe_cell(0.3, 0.9, 1e-6));
	CHECK(!stop_probe_cell(1e-8, 1e-8 * exp(1), 1e-6));
	/* tiny but settled: a tiny positive cell */
	CHECK(stop_probe_cell(1e-9, 1e-9 * (1 + 1e-4), 1e-6));
	/* tiny and still moving (less than halving): not clean */
	CHECK(!stop_probe_cell(1e-9, 1.5e-9, 1e-6));
	/* both 0: no sign either way */
	CHECK(stop_probe_cell(0, 0, 1e-6));
}

static void test_fallback(void)
{
	CHECK(stop_fallback(1, 0, 1, 1e-3, 1e-9, 10, 100));
	CHECK(!stop_fallback(0, 0, 1, 1e-3, 1e-9, 10, 100));
	CHECK(!stop_fallback(1, 1, 1, 1e-3, 1e-9, 10, 100)); /* a probe has answered */
	CHECK(!stop_fallback(1, 0, 0, 1e-3, 1e-9, 10, 100)); /* part of the problem */
	CHECK(!stop_fallback(1, 0, 1, 1e-10, 1e-9, 10, 100));
	CHECK(!stop_fallback(1, 0, 1, 1e-3, 1e-9, 100, 100));
}

int main(void)
{
	test_targets();
	test_polish();
	test_early();
	test_narrowing();
	test_probe();
	test_fallback();
	return check_done();
}
