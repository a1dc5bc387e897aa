/*
 * `pmaxent sweep` (SPEC 4.2 and 5): the flags become a sweep request
 * for codec_sweep_request, as the HTTP API's JSON would; sweep_run
 * solves the points; a progress line on stderr per point (rewritten in
 * place on a terminal); --svg draws accuracy against K, one curve per
 * kind and T (server/svg.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

const char sweep_usage[] =
    "usage: pmaxent sweep DATASET --kind K1,K2 --k N1,N2,... [OPTIONS]\n"
    "\n"
    "The paper's Figures 5 and 6: one solve per kind, T and K, each with the\n"
    "Top-K rules of its kind mined from the records (positive: K positive\n"
    "rules, negative: K negative, mixed: K/2 positive and the rest\n"
    "negative). Prints {\"points\": [...]} on stdout, in the order kinds x T x K,\n"
    "each point with its estimation_accuracy, privacy, seconds and status.\n"
    "DATASET as for solve (records form; \"-\": stdin).\n"
    "\n"
    "options:\n"
    "  --kind LIST          positive, negative, mixed (comma-separated; required)\n"
    "  --k LIST             the K of each point, e.g. 0,100,200 (required)\n"
    "  --qi-attributes LIST antecedents of exactly T attributes, one curve per T\n"
    "                       (default: every size, one curve)\n"
    "  --min-support M      minimum support in records (default 3)\n"
    "  --svg FILE           also draw estimation accuracy against K into FILE\n"
    "  --tolerance X, --method M, --max-iterations N, --time-limit S\n"
    "                       as for solve, for each point\n"
    "  --threshold T, --c C as for solve (each point's privacy)\n"
    "  --sa COL, --group COL  CSV input columns\n"
    "  --max-input BYTES    refuse an input file larger than this (default 16 GiB)\n"
    "  -h, --help           show this help\n";

const struct option sweep_options[] = {
    {"kind", required_argument, NULL, OPT_BASE + OPT_KIND},
    {"k", required_argument, NULL, OPT_BASE + OPT_K},
    {"qi-attributes", required_argument, NULL, OPT_BASE + OPT_QI_ATTRS},
    {"min-support", required_argument, NULL, OPT_BASE + OPT_MIN_SUPPORT},
    {"svg", required_argument, NULL, OPT_BASE + OPT_SVG},
    {"tolerance", required_argument, NULL, OPT_BASE + OPT_TOLERANCE},
    {"max-iterations", required_argument, NULL, OPT_BASE + OPT_MAX_ITER},
    {"method", required_argument, NULL, OPT_BASE + OPT_METHOD},
    {"time-limit", required_argument, NULL, OPT_BASE + OPT_TIME_LIMIT},
    {"threshold", required_argument, NULL, OPT_BASE + OPT_THRESHOLD},
    {"c", required_argument, NULL, OPT_BASE + OPT_C},
    {"sa", required_argument, NULL, OPT_BASE + OPT_SA},
    {"group", required_argument, NULL, OPT_BASE + OPT_GROUP},
    {"max-input", required_argument, NULL, OPT_BASE + OPT_MAX_INPUT},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* A comma-separated flag as a JSON array: strings (kinds) or integers
 * (checked by the codec as the JSON would be). 0, or 2 after a message. */
static int list_flag(const struct cmd *c, const char *flag, const char *s, int ints, json_t *req,
		     const char *key)
{
	json_t *a = json_array();
	char *copy = strdup(s), *tok, *save = NULL;
	int rc = 0;

	for (tok = copy ? strtok_r(copy, ",", &save) : NULL; a && tok && !rc;
	     tok = strtok_r(NULL, ",", &save)) {
		long long v;

		if (ints && cli_parse_int(c, flag, tok, &v))
			rc = 2;
		else
			json_array_append_new(a, ints ? json_integer(v) : json_string(tok));
	}
	if (!rc && (!a || !copy || json_object_set(req, key, a)))
		rc = 1;
	json_decref(a);
	free(copy);
	return rc;
}

/* The request from the flags; -1 when fine, else the exit code. */
static int request(const struct cmd *c, const struct args *a, json_t **req)
{
	json_t *solver = NULL;
	int rc;

	if (!(*req = json_object()))
		return 1;
	if (!a->opt[OPT_KIND] || !a->opt[OPT_K])
		return cli_usage_error(c, "%s", "sweep needs --kind LIST and --k LIST");
	if ((rc = list_flag(c, "--kind", a->opt[OPT_KIND], 0, *req, "kinds")) ||
	    (rc = list_flag(c, "--k", a->opt[OPT_K], 1, *req, "k")) ||
	    (a->opt[OPT_QI_ATTRS] && (rc = list_flag(c, "--qi-attributes", a->opt[OPT_QI_ATTRS], 1,
						     *req, "qi_attributes"))))
		return rc;
	if (inputs_put_int_flag(c, a, OPT_MIN_SUPPORT, "--min-support", *req, "min_support"))
		return 2;
	if ((rc = inputs_solver_flags(c, a, &solver)) >= 0) {
		json_decref(solver);
		return rc;
	}
	json_object_set_new(*req, "solver", solver);
	return inputs_report_flags(c, a, req);
}

/* Progress per point: in place on a terminal, a line each otherwise. */
struct progress {
	size_t done, total;
	int tty;
};

static int on_point(void *ctx, size_t at, const json_t *p)
{
	struct progress *g = ctx;
	const json_t *tv = json_object_get(p, "qi_attributes");
	const json_t *acc = json_object_get(p, "estimation_accuracy");
	char t[24] = "all";

	(void)at; /* points come in solving order; the count is what shows */

	if (!json_is_null(tv))
		snprintf(t, sizeof t, "%" JSON_INTEGER_FORMAT, json_integer_value(tv));
	g->done++;
	fprintf(stderr,
		"%spoint %zu/%zu: %s, T = %s, K = %" JSON_INTEGER_FORMAT ": accuracy %.6g, %s%s",
		g->tty ? "\r\033[K" : "", g->done, g->total,
		json_string_value(json_object_get(p, "kind")), t,
		json_integer_value(json_object_get(p, "k")),
		json_is_number(acc) ? json_number_value(acc) : NAN,
		json_string_value(json_object_get(p, "status")),
		g->tty && g->done < g->total ? "" : "\n");
	return 0;
}

/* Estimation accuracy against K, one curve per kind and T (SPEC 5). */
static enum pm_status draw(const char *path, const struct dataset *ds,
			   const struct sweep_request *q, const json_t *points,
			   struct pm_error *err)
{
	size_t len = 0;
	char *svg = sweep_chart(ds->name, q, points, &len);
	enum pm_status st = PM_OK;
	FILE *f;

	if (!svg)
		return error_set(err, PM_ERR_NOMEM, "", "out of memory drawing the chart");
	if (!(f = fopen(path, "w")) || fwrite(svg, 1, len, f) != len || fclose(f))
		st = error_set(err, PM_ERR_IO, "--svg", "cannot write %s", path);
	free(svg);
	return st;
}

/* The request's solver and report blocks into o. */
static enum pm_status options(const json_t *req, struct solver_options *o, struct pm_error *err)
{
	enum pm_status st = codec_solver_options(json_object_get(req, "solver"), o, err);

	return st ? st : codec_report_options(json_object_get(req, "report"), &o->privacy, err);
}

int sweep_cmd(const struct cmd *c, const struct args *a)
{
	struct pm_error err = {0};
	struct dataset *ds = NULL;
	struct sweep_request q = {0};
	struct solver_options o;
	struct progress g = {.tty = isatty(STDERR_FILENO)};
	struct sweep_hooks hooks = {on_point, &g};
	json_t *req = NULL, *out = NULL;
	enum pm_status st;
	int rc = request(c, a, &req);

	solver_options_init(&o);
	if (rc >= 0)
		goto done;
	solver_pool_create(0, &o.pool);
	st = inputs_load_dataset(a->pos[0], a, &ds, &err);
	if (!st && !(st = codec_sweep_request(req, ds, &q, &err)) &&
	    !(st = options(req, &o, &err))) {
		g.total = q.n_kinds * (q.n_t ? q.n_t : 1) * q.n_k;
		st = sweep_run(ds, &q, &o, &hooks, &out, &err);
	}
	if (!st)
		st = inputs_print_json(out, &err);
	if (!st && a->opt[OPT_SVG])
		st = draw(a->opt[OPT_SVG], ds, &q, json_object_get(out, "points"), &err);
	rc = cli_finish(st, &err);
done:
	json_decref(out);
	json_decref(req);
	sweep_request_finish(&q);
	dataset_destroy(ds);
	solver_pool_destroy(o.pool);
	return rc;
}
