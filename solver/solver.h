/*
 * solver: the maximum-entropy estimate P*(q,s,b) under the constraints of
 * struct invariants (Privacy-MaxEnt, Sections 4-6), and the metrics derived
 * from it. Plain C; liblbfgs for the dual, GLPK for the boundary LP.
 * This header is the component's public API, what server/, cli/ and the
 * tests of the whole solve use; the files of solver/ share internal
 * headers of their own (solver/README.md lists them).
 */
#ifndef PMAXENT_SOLVER_H
#define PMAXENT_SOLVER_H

#include "constraints.h"

struct solver_options;
struct solver_warm;

/* ---- solver.c ----------------------------------------------------------- */

enum solver_method {
	SOLVER_TWO_LEVEL = 0, /* default: multipliers of open rules only */
	SOLVER_FULL_DUAL = 1, /* the paper's method: every multiplier */
};

/* What a solve (or the pipeline around it) is doing. */
enum solver_phase {
	SOLVER_PHASE_SETUP = 0,	  /* before the solve: input, mined rules, rows (the pipeline's) */
	SOLVER_PHASE_ZEROS = 1,	  /* the search for forced zeros */
	SOLVER_PHASE_ITERATE = 2, /* the dual's iterations */
	SOLVER_PHASE_METRICS = 3, /* the posterior and the accuracies */
};

/* "setup", "zeros", "iterate", "metrics". */
/* Monotonic seconds: the one clock of the solve's phases, its time limit
 * and the service's timings. */
double solver_now(void);

const char *solver_phase_name(enum solver_phase phase);

/*
 * Where a solve is. iterations counts every iteration of the solve so
 * far (the probes' and the final solve's: the zero search may go deeper
 * after a first solve, which goes on counting) and never goes back;
 * max_violation (records) is the last iterate's, NaN before the first.
 */
struct solver_progress {
	enum solver_phase phase;
	int iterations;
	double max_violation;
};

/* ---- privacy.c ---------------------------------------------------------- */

/* The privacy verdict's parameters (SPEC 4.1: "report"). */
struct privacy_options {
	double threshold; /* records at risk: max_s P(s|q) >= threshold; 0.5 */
	double c;	  /* recursive (c, l)-diversity; 3 */
};

void privacy_options_init(struct privacy_options *o);

/* SPEC 4.1's metrics of one table of distributions P(s | q). */
struct privacy_report {
	int has; /* computed (the truth needs the records) */
	/* max_disclosure: the largest P(s|q), first in tuple order, then the
	 * tuple's most likely value (the first of equal ones); count n(q) */
	double max_p;
	uint32_t max_q, max_s, max_count;
	uint64_t at_risk; /* records whose tuple reaches the threshold */
	double at_risk_fraction;
	double min_entropy_l;	 /* min over q of exp(H(P(.|q))), nats */
	long recursive_cl;	 /* largest l every q satisfies; 0: none */
	double t_closeness;	 /* max over q of (1/2) sum_s |P(s|q) - P(s)| */
	double delta_disclosure; /* max over P(s|q) > 0 of |ln(P(s|q) / P(s))| */
};

enum privacy_source { PRIVACY_POSTERIOR = 0, PRIVACY_BASELINE, PRIVACY_TRUTH, PRIVACY_SOURCES };

/* A sparse table of distributions P(s | q), in the shape of the posterior
 * (solver_result.post_*): tuple q's values of nonzero P are
 * sa[off[q] .. off[q + 1]), ascending code, with P(s | q) in p[..]. */
struct privacy_table {
	size_t *off; /* n_tuples + 1 */
	uint32_t *sa;
	double *p;
};

/*
 * The no-knowledge estimate P0(s | q) = sum over the buckets b holding q
 * of n(q,b)/n(q) * n(s,b)/n(b) (the paper's Eq. 9 summed over q's
 * buckets), from the published counts alone, into *out (the caller frees
 * it with privacy_table_finish, also after a failure). Sparse because a
 * dense n_tuples x |SA| table of a large table with a wide SA domain does
 * not fit in memory; this one has at most one entry per cell (q, s, b).
 */
enum pm_status privacy_baseline(const struct dataset *ds, struct privacy_table *out);
void privacy_table_finish(struct privacy_table *t);

/* ---- privacy_top.c ------------------------------------------------------ */

/* A tuple at risk: its top value s (the first of the largest P*(s|q)),
 * that P*, exp(H(P*(.|q))) and the no-knowledge estimate of s. */
#define PRIVACY_TOP 20
struct privacy_top {
	uint32_t q, s;
	double p, l, baseline_p;
};

/* ---- parallel.c --------------------------------------------------------- */

/* The CPUs this process may run on (its affinity: taskset, cpusets), at
 * least 1: the default thread count of a solve, and of the server's
 * workers. */
int parallel_cpus(void);

/* ---- solver.c, continued ---------------------------------------------- */

struct solver_options {
	enum solver_method method;
	double tolerance;   /* max_violation target, records; default 1e-6 */
	int max_iterations; /* iterations of the whole solve; default 10000 */
	/* Called with where the solve is after every iteration, between the
	 * trials of a long line search and between the steps of the search
	 * for forced zeros, which has no iteration of its own; a nonzero
	 * return cancels the solve (PM_ERR_CANCELLED). May be NULL. */
	int (*progress)(void *ctx, const struct solver_progress *p);
	void *progress_ctx;
	int threads; /* threads of the two-level solve; 0: parallel_cpus() */
	/* Threads kept across solves (borrowed; NULL: the solve starts its
	 * own, `threads` of them). One solve at a time per pool. */
	struct solver_pool *pool;
	/* Seconds the solve may take (0: no limit), checked wherever
	 * `progress` is called; when they run out, solver_run returns PM_OK,
	 * not converged with reason "time_limit", at the best point so far:
	 * the last iterate, scaled to the QI and SA invariants (or the end of
	 * an earlier probe's solve, if that violates the rows less), or, in
	 * the search for forced zeros before any iterate, the closed form of
	 * Theorem 5 in the buckets not yet solved (the invariants hold, the
	 * knowledge rows may not: max_violation says by how much). */
	double time_limit;
	/* Tests of time limits and cancels only: the solve waits this many
	 * seconds at its first progress check (still honouring the cancel
	 * and the time limit), so that it is slow on purpose. 0: off. */
	double stall;
	/* the privacy verdict's parameters (r->privacy) */
	struct privacy_options privacy;
	/* A warm start (borrowed; NULL: none): see struct solver_warm. */
	const struct solver_warm *warm;
};

/*
 * A warm start: the answer of an earlier solve of the same dataset whose
 * knowledge rows all are among this one's (a sweep's point before, with
 * a prefix of the same ranked rules: SPEC 4.2). Both are exact, so the
 * answer is the one a cold solve reaches, sooner:
 * - zero (n_cells flags, the earlier r->zero): every solution of fewer
 *   rows holds those cells at 0, so every solution of more rows does;
 *   they seed the zero search.
 * - y (n_cells, the earlier r->cells): the two-level dual starts from it
 *   as its base point (twolevel.c): on its free cells it is
 *   exp(α + β + Σ μ a) over the earlier rows, a point of this dual too,
 *   near the optimum when the rows added are few.
 * solver_run takes it only where that holds as stated: the two-level
 * method, knowledge of equality rules (an interval row's L1 term is not
 * invariant under a change of base) and no named people. The caller
 * vouches for the rest (the same dataset, the rows a subset).
 */
struct solver_warm {
	const uint8_t *zero;
	const double *y;
};

void solver_options_init(struct solver_options *o);

/*
 * A pool of `threads` solver threads (<= 0: parallel_cpus()), the calling
 * thread included, for solves to borrow (solver_options.pool). Starting
 * threads is a cost a small solve would notice: a process that solves
 * (the CLI, each job worker of the server) starts them once, before it
 * loads its input. Caller frees with
 * solver_pool_destroy; destroy(NULL) is a no-op.
 */
struct solver_pool;
enum pm_status solver_pool_create(int threads, struct solver_pool **out);
void solver_pool_destroy(struct solver_pool *p);

enum solver_status { SOLVER_CONVERGED = 0, SOLVER_NOT_CONVERGED = 1 };

struct solver_result {
	enum solver_status status;
	char reason[256]; /* why not converged; "" when converged */
	int iterations;
	double max_violation; /* records */
	double seconds;	      /* wall clock of the solve step */
	/* of which: the search for forced zeros (zeros_deepen, every depth)
	 * and the metrics; the rest is the buckets solved alone and the
	 * iterative solve */
	double zeros_seconds, metrics_seconds;
	double entropy; /* -sum x ln x, nats */
	/* counts reported under "constraints" */
	size_t variables, qi_invariants, sa_invariants, knowledge;
	uint64_t zero_invariants;
	size_t forced_zeros;   /* cells removed because every solution has them 0 */
	size_t solved_buckets; /* buckets that went through the iterative solve */
	/* accuracies (nats); valid when has_accuracy (records form) */
	int has_accuracy;
	double estimation_accuracy, baseline_accuracy;
	int estimation_infinite, baseline_infinite;
	/* y[cell]: the estimate in records, inv->n_cells entries */
	double *cells;
	/* zero[cell]: the forced zeros proved (n_cells flags; NULL with named
	 * people), for a warm start (struct solver_warm) */
	uint8_t *zero;
	/* posterior P*(s|q) with p > 0, CSR over tuples:
	 * post_sa/post_p[post_off[q] .. post_off[q+1]) */
	size_t *post_off;
	uint32_t *post_sa;
	double *post_p;
	/* with an interval rule among the knowledge (else NULL), per rule
	 * of k: its left-hand side at the solution, P(then | if), and the
	 * bound that holds it (SOLVER_BINDING_*) */
	double *achieved;
	uint8_t *binding;
	/* with statements (else NULL), per statement of k: sum coef_t P_t
	 * at the solution and the bound that holds it */
	double *st_achieved;
	uint8_t *st_binding;
	/* with named people (else NULL), person i's cells: bucket, SA code
	 * and probability (records: each person is one) of entries
	 * person_off[i] .. person_off[i + 1] */
	size_t *person_off;
	uint32_t *person_group, *person_sa;
	double *person_p;
	/* SPEC 4.1 on the posterior, the no-knowledge estimate and (records
	 * form) the original table; privacy_seconds their cost */
	struct privacy_report privacy[PRIVACY_SOURCES];
	/* the tuples of the largest P*(s|q), ranked (privacy_top_list) */
	struct privacy_top top[PRIVACY_TOP];
	size_t n_top;
	struct privacy_options privacy_options; /* those it was computed with */
	double privacy_seconds;
};

enum solver_binding {
	SOLVER_BINDING_NONE = 0, /* inside its interval */
	SOLVER_BINDING_MIN,
	SOLVER_BINDING_MAX,
	SOLVER_BINDING_VALUE, /* an equality */
};

/*
 * Solves for the maximum-entropy estimate and fills r (caller frees with
 * solver_result_finish, also after a failure). k is the knowledge inv was
 * built from (for messages; may be NULL if inv has no knowledge rows).
 */
enum pm_status solver_run(const struct dataset *ds, const struct knowledge *k,
			  const struct invariants *inv, const struct solver_options *o,
			  struct solver_result *r, struct pm_error *err);
void solver_result_finish(struct solver_result *r);
#endif
