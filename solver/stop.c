/*
 * The stopping policy (stop.h): every target, polish, early stop, probe
 * verdict and fallback of the solver is decided here, and nowhere else.
 */
#include <math.h>
#include <stdint.h>

#include "stop.h"

int stop_converged(double violation, double tolerance)
{
	return violation <= tolerance;
}

double stop_target(double tolerance, double max_rhs)
{
	return fmax(tolerance * 1e-3, 1e-13 * max_rhs);
}

double stop_polish_target(double target, double floor, double ymin, int probe)
{
	if (probe && ymin < STOP_PROBE_SMALL)
		return target;
	return fmax(floor, fmin(target, STOP_POLISH * ymin));
}

int stop_polish_limit(int done, int steps, int max_iterations)
{
	return done < max_iterations - steps ? done + steps : max_iterations;
}

int stop_newton_early(enum stop_early kind, int narrowing, int fulls, int steps, const double *past,
		      double viol)
{
	int linear, stall;

	if (kind == STOP_EARLY_NONE || narrowing)
		return 0;
	stall = steps >= STOP_STALL_STEPS && viol > 0.5 * past[steps % STOP_STALL_STEPS];
	linear = kind == STOP_EARLY_LINEAR && fulls >= STOP_LINEAR_STEPS &&
		 viol > pow(STOP_LINEAR_RATE, STOP_LINEAR_STEPS) *
			    past[(steps - STOP_LINEAR_STEPS + 1) % STOP_STALL_STEPS];
	return stall || linear;
}

int stop_narrowing(size_t now, size_t last, size_t n)
{
	return now < last && (2 * now > n || 2 * now < last);
}

double stop_probe_tolerance(double tolerance)
{
	return fmin(tolerance, STOP_PROBE_VIOLATION * 1e3);
}

int stop_probe_iterations(int max_iterations, int used)
{
	int left = max_iterations - used;

	return left < STOP_PROBE_ITERATIONS ? left : STOP_PROBE_ITERATIONS;
}

double stop_probe_floor(double violation)
{
	/* large rows are solved to a relative 1e-13 (stop_target): the floor
	 * keeps its factor 1000 over what the solve reached */
	return fmax(STOP_PROBE_FLOOR, 1e3 * violation);
}

int stop_probe_cell(double y, double prev, double floor)
{
	return y >= 0.5 * prev && (y >= floor || fabs(y - prev) <= STOP_PROBE_STEADY * prev);
}

int stop_fallback(int stalled, int probe, int whole, double violation, double target,
		  int iterations, int max_iterations)
{
	return stalled && !probe && whole && violation > target && iterations < max_iterations;
}
