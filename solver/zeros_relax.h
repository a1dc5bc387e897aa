/*
 * What zeros_relax.c shares with zeros_relax_verify.c: the relaxation of
 * one value and its scratch. Internal to the relaxations.
 */
#ifndef PMAXENT_ZEROS_RELAX_H
#define PMAXENT_ZEROS_RELAX_H

#include "intern.h"
#include "zeros.h"

/* Per-bucket layout and scratch shared by every value. */
struct relax {
	const struct invariants *inv;
	const uint8_t *resolved;
	uint8_t *zero;
	const uint32_t *h; /* per bucket: width */
	int32_t *cls;	   /* per cell of the current value: class id, -1 none */
	uint32_t *cnt;	   /* per cell: rows of the current value holding it */
	int32_t *btype;	   /* per bucket: type id, -1 untouched */
	size_t found;
	int infeasible;
	struct cancel *cancel; /* for cancels (may be NULL) */
};

/* The relaxation of one value: classes, bucket types, the program. */
struct value {
	struct relax *x;
	const uint32_t *rows;
	size_t nr;
	uint32_t *tcells, *tlist, *buckets, *bcol, *mult;
	size_t nt, n_buckets;
	size_t *toff;
	struct intern classes, types;
	int32_t empty;
	/* the program: variables per type, then rows */
	struct relax_problem p;
	double *u, *d, *c;
	uint32_t *group, *var_row, *var_class;
	size_t *var_off, *type_var; /* type -> first variable, n_types + 1 */
	uint8_t *low, *high;
};

/*
 * Proves v's claims (v->low, v->high) with the linear program max sum_low
 * x - sum_high x: an optimum with every claim holding means each holds in
 * every solution. Claims that the optimum breaks are dropped and the rest
 * tried again; what is left unproved is cleared. A fatal error of GLPK
 * proves nothing. PM_ERR_NOMEM, or PM_OK.
 */
enum pm_status zeros_relax_verify(struct value *v);

#endif
