/*
 * Shared by the files of the pseudonym model's solve (lifted*.c): the
 * two-level problem over the buckets its open rows touch (lifted_dual.c), its
 * set-up and the solve's order (lifted_setup.c, lifted_run.c), and the
 * exact programs for its zeros and conflicts (lifted_lp.c).
 */
#ifndef PMAXENT_LIFTED_INTERNAL_H
#define PMAXENT_LIFTED_INTERNAL_H

#include "maxent.h"
#include "newton.h"
#include "scaling.h"
#include "solver.h"

/* A bucket some open row touches: its local cells loff .. loff + n (its
 * g x h system cells, then its person cells), aggregated cells aoff ..
 * aoff + g h, factors α at qoff and β at soff, M's factor at foff. */
struct lbucket {
	size_t b, g, h, n, loff, aoff, qoff, soff, foff;
};

/*
 * One two-level problem of the pseudonym model. Local cells of every
 * touched bucket, the open rows (lifted rows: rules, people,
 * statements) and their coefficients both ways: per local cell its rows
 * (cr_*, local row numbers ascending), per row its cells (rc_*).
 */
struct lsys {
	const struct dataset *ds;
	const struct invariants *inv;
	const struct lifted *m;
	size_t nb;
	struct lbucket *bk;
	size_t nl, na, nq, ns; /* local cells, aggregated cells, α's, β's */
	uint32_t *lcell;       /* local -> lifted cell */
	uint32_t *lagg;	       /* local -> its aggregated cell within its bucket */
	uint8_t *lzero;	       /* local cells held at zero */
	size_t *cr_off;
	uint32_t *cr_row;
	double *cr_coef;
	size_t r;
	uint32_t *row; /* open row -> lifted row */
	double *mid, *half;
	int any_interval;
	size_t *rc_off;
	uint32_t *rc_cell;
	double *rc_coef;
	size_t *lr_off; /* per bucket: the open rows through it, lr_row[..] */
	uint32_t *lr_row;
	/* the point of the last eval, and the prepared one (0) */
	double *e, *kp, *y, *kagg, *yagg, *alpha, *beta, *mx, *sy;
	uint8_t *azero;
	double *mu0, *yp, *yaggp, *alpha0, *beta0, *mx0, *sy0, *fac;
	double inner_target;
	struct scaling_work w;
	double *t, *wv, *pq, *ab; /* scratch: the widest bucket */
};

/* ---- lifted_setup.c ---------------------------------------------------- */

/*
 * The problem over the open rows of m (rows from the first rule row on,
 * not implied[] (system rows; may be NULL), with a free cell) and the
 * buckets they touch, cells with zero[] (m->n_cells) held at 0. *empty
 * gets the first row with no free cell whose bounds exclude 0, or
 * SIZE_MAX. Free with lsys_finish, also after a failure.
 */
enum pm_status lsys_init(struct lsys *s, const struct dataset *ds, const struct lifted *m,
			 const uint8_t *zero, const uint8_t *implied, double tolerance,
			 size_t *empty);
void lsys_finish(struct lsys *s);

/* ---- lifted_dual.c ----------------------------------------------------- */

/* The outer problem for newton_minimize. */
void lifted_dual_problem(struct lsys *s, struct newton_problem *np);
/* Evaluates at mu (the start) and prepares there. */
void lifted_dual_start(struct lsys *s, const double *mu);

/* ---- lifted_full.c ----------------------------------------------------- */

/* The full dual over s's buckets and open rows (their bounds as s
 * merged them), its estimate into s->y. */
enum pm_status lifted_full(struct lsys *s, const struct solver_options *o, struct cancel *cancel,
			   struct maxent_stats *ms);

/* ---- lifted_lp.c ------------------------------------------------------- */

/* The zero finder over the buckets the open rows touch: every cell no
 * solution makes positive gets zero[] set (*added counts them);
 * PM_ERR_INCONSISTENT naming an irreducible set of conflicting rules and
 * statements when there is no solution. A program over
 * LIFTED_LP_ENTRIES adds nothing. */
enum pm_status lifted_lp_zeros(const struct dataset *ds, const struct knowledge *k,
			       const struct lifted *m, uint8_t *zero, const uint8_t *implied,
			       struct cancel *cancel, size_t *added, struct pm_error *err);
/* Entries of the zero finder's program (SIZE_MAX when out of memory). */
size_t lifted_lp_entries(const struct lifted *m, const uint8_t *zero, const uint8_t *implied);
/* PM_ERR_INCONSISTENT naming the conflict if the rows admit no solution
 * with these zeros; PM_OK if they do. */
enum pm_status lifted_lp_conflict(const struct dataset *ds, const struct knowledge *k,
				  const struct lifted *m, const uint8_t *zero,
				  const uint8_t *implied, struct cancel *cancel,
				  struct pm_error *err);

/* ---- lifted_run.c ------------------------------------------------------ */

/* Tells solver.c's clock the solve moved from the zeros to the dual's
 * iterations (nonzero: cancelled, err set). */
struct lifted_phase {
	int (*iterate)(void *ctx, struct pm_error *err);
	void *ctx;
};

/* What the solve of the pseudonym model leaves for the result. */
struct lifted_answer {
	struct lifted m;
	double *y; /* per model cell, records */
};

/*
 * The solve of the pseudonym model of ds, k (its rules in inv): a->y the
 * estimate per model cell, cells (inv->n_cells) its aggregate per system
 * cell (what the posterior and the accuracies read), ms the dual's
 * outcome, *forced the forced zeros found. PM_ERR_INCONSISTENT names a
 * conflict; PM_ERR_CANCELLED leaves the last iterate. Free a with
 * lifted_answer_finish, also after a failure.
 */
enum pm_status lifted_run(const struct dataset *ds, const struct knowledge *k,
			  const struct invariants *inv, const struct solver_options *o,
			  struct cancel *cancel, const struct lifted_phase *ph,
			  struct lifted_answer *a, double *cells, struct maxent_stats *ms,
			  size_t *forced, struct pm_error *err);
/* r's statements (st_*) and people (person_*) from a, and max_violation
 * raised to the model's own rows'. */
enum pm_status lifted_outputs(const struct lifted_answer *a, const struct knowledge *k,
			      double tolerance, struct solver_result *r);
void lifted_answer_finish(struct lifted_answer *a);

#endif
