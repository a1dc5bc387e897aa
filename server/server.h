/*
 * server: everything that speaks JSON (jansson) or HTTP. For now the JSON
 * codec (SPEC sections 3-4) and the analysis pipeline shared by the CLI and
 * the future HTTP service.
 */
#ifndef PMAXENT_SERVER_H
#define PMAXENT_SERVER_H

#include <jansson.h>
#include "solver.h"

/* ---- codec.c ------------------------------------------------------------ */

/* Dataset from its JSON (records form or published form, SPEC section 3).
 * Caller frees *out with dataset_destroy. Errors name the field, e.g.
 * "records[17].qi". */
enum pm_status codec_dataset(const json_t *j, struct dataset **out, struct pm_error *err);

/* Knowledge JSON: user rules are resolved against ds and appended to k;
 * "mine" fills *mine and sets *has_mine. j may be NULL (no knowledge). */
enum pm_status codec_knowledge(const json_t *j, const struct dataset *ds, struct knowledge *k,
			       struct miner_options *mine, int *has_mine, struct pm_error *err);

/* Solver options JSON ({"tolerance": .., "max_iterations": ..}); j may be
 * NULL. o must be initialised with solver_options_init first. */
enum pm_status codec_solver_options(const json_t *j, struct solver_options *o,
				    struct pm_error *err);

/* One rule as JSON ({"if": {...}, "then": .., "probability": .., ...}).
 * Caller owns the new reference. */
json_t *codec_rule(const struct dataset *ds, const struct rule *r);
/* Knowledge as a knowledge JSON document ({"rules": [...]}). New reference. */
json_t *codec_knowledge_json(const struct dataset *ds, const struct knowledge *k);
/* Records-form dataset JSON (needs ground truth). New reference. */
json_t *codec_dataset_json(const struct dataset *ds);

/* Seconds of each step of a run (SPEC section 4 "timings"). */
struct codec_timings {
	double load, mine, build, solve;
};

/* The result document of SPEC section 4. New reference. */
json_t *codec_result(const struct dataset *ds, const struct knowledge *k,
		     const struct solver_result *r, const struct codec_timings *t);

/* ---- pipeline.c --------------------------------------------------------- */

/*
 * A whole analysis: dataset JSON, optional knowledge JSON and solver options
 * JSON -> result JSON (*out, new reference). load_seconds is added to the
 * "load" timing (time the caller spent reading and parsing the text).
 * PM_ERR_INPUT for bad input, PM_ERR_INCONSISTENT for knowledge no
 * distribution satisfies.
 */
enum pm_status pipeline_run(const json_t *dataset, const json_t *knowledge, const json_t *solver,
			    double load_seconds, json_t **out, struct pm_error *err);

/*
 * The same analysis on a dataset already loaded (CSV input, stored
 * datasets). base (may be NULL: solver_options_init defaults) supplies the
 * progress callback and defaults that the solver JSON overrides.
 * load_seconds is the time already spent loading ds.
 */
enum pm_status pipeline_run_dataset(const struct dataset *ds, const json_t *knowledge,
				    const json_t *solver, const struct solver_options *base,
				    double load_seconds, json_t **out, struct pm_error *err);

/* Monotonic clock in seconds. */
double pipeline_now(void);

#endif
