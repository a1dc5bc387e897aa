/*
 * What solver.c's solve (solver_run) shares with the parts it calls (its
 * cancel token is cancel.h's): the threshold below which a cell counts
 * as zero, and the probe (struct solver_probe) that the dual solves fill
 * for the zero search. Internal to solver/.
 */
#ifndef PMAXENT_SOLVE_H
#define PMAXENT_SOLVE_H

#include <math.h>
#include <stdint.h>

#include "solver.h"

/* ---- solver.c ----------------------------------------------------------- */

/*
 * Records to which a value counts as zero, everywhere the forced zeros are
 * decided: a cell is forced to zero when no solution puts more than this
 * in it (the relaxations' and the interior point method's certificates),
 * a knowledge row at one of its bounds within this is tight
 * (propagation), and a rule whose row has no cell holds when it asks for
 * no more (zeros.c). One bound, so that the decisions agree: a looser
 * one could zero a cell that the others find positive, and a posterior
 * of 0 where the records have some makes the accuracy infinite.
 */
#define ZERO_RECORDS 1e-9

/* A multiplier still moving: a step changes it by more than this. The
 * multipliers are logarithms of the cells' factors, so 0.1 is a tenth of
 * a cell's size; converged ones move by far less, one running off to
 * infinity along a forced zero by about one per step. */
#define SOLVER_MOVING 0.1

/*
 * What a probe's solve leaves for solver.c (the probe and the zero
 * search): prev (per cell) the iterate before the last; ray (per row of
 * the invariants, set only, never cleared) the rows whose multiplier the
 * last step still moves (SOLVER_MOVING; the two-level method: its Newton
 * direction, undamped; the full dual: its last two iterates), where a
 * solve that stops short runs off toward a forced zero. A solve without
 * one (NULL) is no probe.
 */
struct solver_probe {
	double *prev;
	uint8_t *ray;
	/* the solve's last chance before the exact zero decision (solver.c):
	 * it runs to its end as the solve proper does (no stop on linear
	 * convergence, polished) and a converged one is the answer; a stall
	 * still ends it (no L-BFGS), leaving prev and ray */
	int last;
};

#endif
