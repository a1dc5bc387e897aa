/*
 * One analysis from JSON to JSON: load -> mine -> build -> solve -> result,
 * timing each step (SPEC section 4 "timings"). Shared by the CLI and the
 * HTTP service so that both report the same numbers and the same errors.
 */
#include <math.h>
#include <time.h>

#include "server.h"

enum pm_status pipeline_solver_options(const json_t *solver, double max, const char *flag,
				       struct solver_options *o, struct pm_error *err)
{
	enum pm_status st = codec_solver_options(solver, o, err);

	if (!st && max > 0 && o->time_limit > max)
		st = error_set(err, PM_ERR_INPUT, "solver.time_limit",
			       "must be at most %g seconds on this service (%s), got %g", max, flag,
			       o->time_limit);
	return st;
}

/* The time limit of a run, from the start of its mining: the caller's
 * cancel (the progress callback) and the clock, as the solver's own
 * deadline does (solver.c) for the solve. */
struct run_clock {
	const struct solver_options *o;
	double end; /* INFINITY: no limit */
	int expired;
};

static int mining_stopped(void *ctx)
{
	struct run_clock *c = ctx;
	struct solver_progress p = {SOLVER_PHASE_SETUP, 0, NAN};

	if (c->o->progress && c->o->progress(c->o->progress_ctx, &p))
		return 1;
	return c->expired = solver_now() >= c->end;
}

/*
 * Mining, under the time limit: every antecedent size makes the attribute
 * sets exponential in the number of attributes, whatever the number of
 * records, so the limit covers it too, and the solve gets what is left. Mining
 * that runs out is an error (there is no answer to give: the top rules
 * are not known), naming what to change.
 */
static enum pm_status mine(const struct dataset *ds, struct codec_mined *mined, struct knowledge *k,
			   struct solver_options *o, struct pm_error *err)
{
	struct run_clock c = {o, o->time_limit > 0 ? solver_now() + o->time_limit : INFINITY, 0};
	enum pm_status st;

	mined->asked.stop = mining_stopped;
	mined->asked.stop_ctx = &c;
	st = miner_run_counted(ds, &mined->asked, k, &mined->found, err);
	if (st == PM_ERR_CANCELLED && c.expired)
		return error_set(err, PM_ERR_INPUT, "mine",
				 "mining did not finish within the time limit of %g seconds; ask "
				 "for antecedents of fewer attributes (mine.qi_attributes) or for "
				 "more time (solver.time_limit)",
				 o->time_limit);
	if (!st && o->time_limit > 0) /* what is left, and never none */
		o->time_limit = fmax(c.end - solver_now(), 1e-9);
	return st;
}

enum pm_status pipeline_run_dataset(const struct dataset *ds, const json_t *knowledge,
				    const json_t *solver, const struct solver_options *base,
				    double load_seconds, json_t **out, struct pm_error *err)
{
	struct codec_timings t = {0};
	struct knowledge k;
	struct codec_mined mined = {0};
	struct solver_options o;
	struct invariants inv = {0};
	struct solver_result r = {0};
	double t0 = solver_now();
	int has_mine = 0;
	enum pm_status st;

	*out = NULL;
	knowledge_init(&k);
	if (base)
		o = *base;
	else
		solver_options_init(&o);
	if ((st = codec_knowledge(knowledge, ds, &k, &mined.asked, &has_mine, err)) ||
	    (st = codec_solver_options(solver, &o, err)) ||
	    (st = codec_report_options(json_object_get(knowledge, "report"), &o.privacy, err)))
		goto out;
	/* base's limit is the default and the most a request gets */
	if (base && base->time_limit > 0 && !(o.time_limit > 0 && o.time_limit < base->time_limit))
		o.time_limit = base->time_limit;
	t.load = load_seconds + (solver_now() - t0);
	t0 = solver_now();
	/* mined rules go after the user rules; miner_run rejects published form */
	if (has_mine && (st = mine(ds, &mined, &k, &o, err)))
		goto out;
	t.mine = solver_now() - t0;
	t0 = solver_now();
	if ((st = invariants_build(ds, &k, &inv, err)))
		goto out;
	t.build = solver_now() - t0;
	t0 = solver_now();
	if ((st = solver_run(ds, &k, &inv, &o, &r, err)))
		goto out;
	t.solve = solver_now() - t0;
	*out = codec_result(ds, &k, &r, &t, has_mine ? &mined : NULL);
	if (!*out)
		st = error_set(err, PM_ERR_NOMEM, "", "out of memory while writing the result");
out:
	solver_result_finish(&r);
	invariants_finish(&inv);
	knowledge_finish(&k);
	return st;
}

enum pm_status pipeline_run(const json_t *dataset, const json_t *knowledge, const json_t *solver,
			    double load_seconds, json_t **out, struct pm_error *err)
{
	struct dataset *ds = NULL;
	double t0 = solver_now();
	enum pm_status st;

	*out = NULL;
	st = codec_dataset(dataset, &ds, err);
	if (!st)
		st = pipeline_run_dataset(ds, knowledge, solver, NULL,
					  load_seconds + (solver_now() - t0), out, err);
	dataset_destroy(ds);
	return st;
}
