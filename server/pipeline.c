/*
 * One analysis from JSON to JSON: load -> mine -> build -> solve -> result,
 * timing each step (SPEC section 4 "timings"). Shared by the CLI and the
 * HTTP service so that both report the same numbers and the same errors.
 */
#include <time.h>

#include "server.h"

double pipeline_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
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
	double t0 = pipeline_now();
	int has_mine = 0;
	enum pm_status st;

	*out = NULL;
	knowledge_init(&k);
	if (base)
		o = *base;
	else
		solver_options_init(&o);
	if ((st = codec_knowledge(knowledge, ds, &k, &mined.asked, &has_mine, err)) ||
	    (st = codec_solver_options(solver, &o, err)))
		goto out;
	t.load = load_seconds + (pipeline_now() - t0);
	t0 = pipeline_now();
	/* mined rules go after the user rules; miner_run rejects published form */
	if (has_mine && (st = miner_run_counted(ds, &mined.asked, &k, &mined.found, err)))
		goto out;
	t.mine = pipeline_now() - t0;
	t0 = pipeline_now();
	if ((st = invariants_build(ds, &k, &inv, err)))
		goto out;
	t.build = pipeline_now() - t0;
	t0 = pipeline_now();
	if ((st = solver_run(ds, &k, &inv, &o, &r, err)))
		goto out;
	t.solve = pipeline_now() - t0;
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
	double t0 = pipeline_now();
	enum pm_status st;

	*out = NULL;
	st = codec_dataset(dataset, &ds, err);
	if (!st)
		st = pipeline_run_dataset(ds, knowledge, solver, NULL,
					  load_seconds + (pipeline_now() - t0), out, err);
	dataset_destroy(ds);
	return st;
}
