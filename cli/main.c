/*
 * pmaxent: the command-line front end (SPEC section 5). Reads files, turns
 * flags into the same JSON documents the HTTP service accepts and runs the
 * shared pipeline, so both report identical results and error messages.
 *
 * Exit status: 0 success, 2 bad input or usage, 3 inconsistent knowledge,
 * 1 anything else (out of memory, internal error).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#ifndef PMAXENT_VERSION
#define PMAXENT_VERSION "0.1.0"
#endif

static const char usage_solve[] =
    "usage: pmaxent solve DATASET [KNOWLEDGE.json] [OPTIONS]\n"
    "\n"
    "Estimates P*(s|q) by maximum entropy under the published table and the\n"
    "knowledge, and prints the result JSON on stdout.\n"
    "DATASET is a dataset JSON file (records or published form) or a CSV file\n"
    "(name ending in .csv: header row, one group column, one SA column, the\n"
    "other columns QI attributes). \"-\" reads it, or the knowledge, from stdin\n"
    "(a dataset there is JSON when it begins with '{', else CSV).\n"
    "\n"
    "options:\n"
    "  --tolerance X        converged when max violation <= X records (default 1e-6)\n"
    "  --method M           two-level (default: multipliers of open rules only) or\n"
    "                       full-dual (the paper's method: every multiplier)\n"
    "  --max-iterations N   solver iteration limit (default 10000)\n"
    "  --time-limit S       stop the solve after S seconds: status not_converged,\n"
    "                       reason time_limit, the best point so far (default none)\n"
    "  --threshold T        privacy: a tuple is at risk when some P*(s|q) >= T\n"
    "                       (default 0.5)\n"
    "  --c C                privacy: the c of recursive (c,l)-diversity (default 3)\n"
    "  --sa COL             CSV input: the sensitive attribute column (required)\n"
    "  --group COL          CSV input: the group column (required)\n"
    "  --max-input BYTES    refuse an input file larger than this (default 16 GiB)\n"
    "  -h, --help           show this help\n"
    "\n"
    "exit status: 0 success, 2 bad input, 3 inconsistent knowledge\n";

static const char usage_mine[] =
    "usage: pmaxent mine DATASET --positive K --negative K [OPTIONS]\n"
    "\n"
    "Mines the Top-(K+,K-) association rules Qv => s and Qv => not s from the\n"
    "original records and prints them as knowledge JSON, which `pmaxent solve`\n"
    "accepts as KNOWLEDGE.json. DATASET as for solve (records form or CSV).\n"
    "When fewer rules reach the minimum support than asked for, a note on\n"
    "stderr says how many exist.\n"
    "\n"
    "options:\n"
    "  --positive K         number of positive rules (required)\n"
    "  --negative K         number of negative rules (required)\n"
    "  --min-support M      minimum support in records (default 3)\n"
    "  --qi-attributes T    antecedents of exactly T attributes (default: all sizes)\n"
    "  --sa COL, --group COL  CSV input columns\n"
    "  --max-input BYTES    refuse an input file larger than this (default 16 GiB)\n"
    "  -h, --help           show this help\n";

static const char usage_report[] =
    "usage: pmaxent report FILE.json\n"
    "\n"
    "Writes the privacy report of a result (what `pmaxent solve` prints) as one\n"
    "self-contained HTML page on stdout: the assumptions, the verdict beside the\n"
    "no-knowledge estimate and the records, the tuples most at risk, and the\n"
    "knowledge that binds. A sweep or an audit (what `pmaxent sweep` prints) gets\n"
    "its own page: the points, the chart of accuracy against K and, when there,\n"
    "the worst adversary and the verdict. Anything else is refused (exit 2).\n"
    "FILE \"-\" is stdin.\n"
    "\n"
    "options:\n"
    "  --max-input BYTES    refuse an input file larger than this (default 16 GiB)\n"
    "  -h, --help           show this help\n";

static const struct option opts_report[] = {
    {"max-input", required_argument, NULL, OPT_BASE + OPT_MAX_INPUT},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static const char usage_anatomize[] =
    "usage: pmaxent anatomize DATA.csv --sa ATTR --qi A,B,... --l L [OPTIONS]\n"
    "\n"
    "Groups the rows of a CSV table into l-diverse buckets (Anatomy, Xiao & Tao\n"
    "2006) and prints the records-form dataset JSON on stdout.\n"
    "\n"
    "options:\n"
    "  --sa ATTR            the sensitive attribute column (required)\n"
    "  --qi A,B,...         the QI columns, comma-separated (required)\n"
    "  --l L                diversity, at least 2 (required)\n"
    "  --seed S             random seed (default 1)\n"
    "  --set-aside          drop records of the most frequent SA values until the\n"
    "                       table is l-eligible; the count is reported on stderr\n"
    "  --csv                print the bucketized table as CSV instead (the QI\n"
    "                       columns, group, the SA): what `pmaxent upload` and\n"
    "                       POST /v1/datasets take with --sa ATTR --group group\n"
    "  --max-input BYTES    refuse an input file larger than this (default 16 GiB)\n"
    "  -h, --help           show this help\n";

static const struct option opts_solve[] = {
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

static const struct option opts_mine[] = {
    {"positive", required_argument, NULL, OPT_BASE + OPT_POSITIVE},
    {"negative", required_argument, NULL, OPT_BASE + OPT_NEGATIVE},
    {"min-support", required_argument, NULL, OPT_BASE + OPT_MIN_SUPPORT},
    {"qi-attributes", required_argument, NULL, OPT_BASE + OPT_QI_ATTRS},
    {"sa", required_argument, NULL, OPT_BASE + OPT_SA},
    {"group", required_argument, NULL, OPT_BASE + OPT_GROUP},
    {"max-input", required_argument, NULL, OPT_BASE + OPT_MAX_INPUT},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static const struct option opts_anatomize[] = {
    {"sa", required_argument, NULL, OPT_BASE + OPT_SA},
    {"qi", required_argument, NULL, OPT_BASE + OPT_QI},
    {"l", required_argument, NULL, OPT_BASE + OPT_L},
    {"seed", required_argument, NULL, OPT_BASE + OPT_SEED},
    {"set-aside", no_argument, NULL, OPT_BASE + OPT_SET_ASIDE},
    {"csv", no_argument, NULL, OPT_BASE + OPT_CSV},
    {"max-input", required_argument, NULL, OPT_BASE + OPT_MAX_INPUT},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* ---- notes -------------------------------------------------------------- */

/* Fewer rules than asked for is a weaker adversary than the user believes
 * in: worth a line on stderr (the output itself says it in "mined"). */
static void mined_note(const char *kind, size_t asked, size_t found, const struct miner_options *o)
{
	char t[48] = "";

	if (found >= asked)
		return;
	if (o->qi_attributes)
		snprintf(t, sizeof t, ", qi_attributes %zu", o->qi_attributes);
	fprintf(stderr,
		"pmaxent: note: %zu of the %zu %s rules asked for exist (min_support %llu%s)\n",
		found, asked, kind, (unsigned long long)o->min_support, t);
}

static size_t mined_count(const json_t *mined, const char *kind, const char *key)
{
	return (size_t)json_integer_value(json_object_get(json_object_get(mined, kind), key));
}

/* The notes of a solve result: its "mined", with min_support and
 * qi_attributes from the mine block the pipeline has validated. */
static void solve_notes(const json_t *result, const json_t *know)
{
	const json_t *mined = json_object_get(result, "mined");
	const json_t *m = json_object_get(know, "mine");
	struct miner_options o;

	if (!mined)
		return;
	miner_options_init(&o);
	if (json_is_integer(json_object_get(m, "min_support")))
		o.min_support = (uint64_t)json_integer_value(json_object_get(m, "min_support"));
	o.qi_attributes = (size_t)json_integer_value(json_object_get(m, "qi_attributes"));
	mined_note("positive", mined_count(mined, "positive", "asked"),
		   mined_count(mined, "positive", "found"), &o);
	mined_note("negative", mined_count(mined, "negative", "asked"),
		   mined_count(mined, "negative", "found"), &o);
}

/* ---- solve -------------------------------------------------------------- */

/* `pmaxent report FILE`: a result's page or a sweep's; anything else is
 * refused naming what it is. */
static int cmd_report(const struct cmd *c, const struct args *a)
{
	struct pm_error err = {0}, why = {0};
	json_t *doc = NULL;
	char *html = NULL;
	size_t len = 0;
	enum pm_status st = inputs_load_json(a->pos[0], a, &doc, &err);

	(void)c;
	if (!st && (st = report_document(doc, &html, &len, &why)) == PM_ERR_INPUT)
		error_set(&err, st, "", "report: %s is %s", source_name(a->pos[0]), why.message);
	else if (st && !err.message[0])
		err = why;
	if (!st && (fwrite(html, 1, len, stdout) != len || fflush(stdout)))
		st = error_set(&err, PM_ERR_IO, "", "cannot write the report: %s", strerror(errno));
	free(html);
	json_decref(doc);
	return cli_finish(st, &err);
}

static int cmd_solve(const struct cmd *c, const struct args *a)
{
	struct pm_error err = {0};
	struct dataset *ds = NULL;
	json_t *solver = NULL, *know = NULL, *result = NULL;
	double t0 = solver_now();
	enum pm_status st = PM_OK;
	struct solver_options base;
	int rc = inputs_solver_flags(c, a, &solver);

	solver_options_init(&base);
	if (rc < 0 && a->n_pos > 1 && !strcmp(a->pos[0], "-") && !strcmp(a->pos[1], "-"))
		rc = cli_usage_error(c, "%s", "stdin ('-') can be only one of the inputs");
	if (rc >= 0)
		goto out;
	/* the threads start while the input loads (NULL if they cannot:
	 * the solve then starts its own) */
	solver_pool_create(0, &base.pool);
	st = inputs_load_dataset(a->pos[0], a, &ds, &err);
	if (!st && a->n_pos > 1)
		st = inputs_load_json(a->pos[1], a, &know, &err);
	if (!st && (rc = inputs_report_flags(c, a, &know)) >= 0)
		goto out;
	rc = -1;
	/* a "solver" block in the knowledge file; flags win */
	if (!st && json_is_object(json_object_get(know, "solver")))
		json_object_update_missing(solver, json_object_get(know, "solver"));
	else if (!st && json_object_get(know, "solver"))
		st = codec_solver_options(json_object_get(know, "solver"),
					  &(struct solver_options){0}, &err);
	if (!st)
		st =
		    pipeline_run_dataset(ds, know, solver, &base, solver_now() - t0, &result, &err);
	if (!st)
		st = inputs_print_json(result, &err);
	if (!st)
		solve_notes(result, know);
	rc = cli_finish(st, &err);
out:
	json_decref(result);
	json_decref(know);
	json_decref(solver);
	dataset_destroy(ds);
	solver_pool_destroy(base.pool);
	return rc;
}

/* ---- mine --------------------------------------------------------------- */

/* The mining flags as the "mine" block of a knowledge document, so that
 * codec_knowledge validates them exactly as it does for the HTTP API. */
static int mine_flags(const struct cmd *c, const struct args *a, json_t **out)
{
	json_t *m = json_object();

	*out = json_pack("{s:o}", "mine", m);
	if (!*out)
		return 1;
	if (!a->opt[OPT_POSITIVE] || !a->opt[OPT_NEGATIVE])
		return cli_usage_error(c, "%s", "mine needs --positive K and --negative K");
	if (inputs_put_int_flag(c, a, OPT_POSITIVE, "--positive", m, "positive") ||
	    inputs_put_int_flag(c, a, OPT_NEGATIVE, "--negative", m, "negative") ||
	    inputs_put_int_flag(c, a, OPT_MIN_SUPPORT, "--min-support", m, "min_support") ||
	    inputs_put_int_flag(c, a, OPT_QI_ATTRS, "--qi-attributes", m, "qi_attributes"))
		return 2;
	return -1;
}

static enum pm_status mine(const struct dataset *ds, const json_t *spec, struct knowledge *k,
			   struct pm_error *err)
{
	struct miner_options o;
	struct miner_found found;
	enum pm_status st;
	int has_mine;

	if ((st = codec_knowledge(spec, ds, k, &o, &has_mine, err)) ||
	    (st = miner_run_counted(ds, &o, k, &found, err)))
		return st;
	mined_note("positive", o.positive, found.positive, &o);
	mined_note("negative", o.negative, found.negative, &o);
	return PM_OK;
}

static int cmd_mine(const struct cmd *c, const struct args *a)
{
	struct pm_error err = {0};
	struct dataset *ds = NULL;
	struct knowledge k;
	json_t *spec = NULL, *out = NULL;
	enum pm_status st;
	int rc;

	knowledge_init(&k);
	rc = mine_flags(c, a, &spec);
	if (rc >= 0)
		goto out;
	st = inputs_load_dataset(a->pos[0], a, &ds, &err);
	if (!st)
		st = mine(ds, spec, &k, &err);
	if (!st) {
		out = codec_knowledge_json(ds, &k);
		st = inputs_print_json(out, &err);
	}
	rc = cli_finish(st, &err);
out:
	json_decref(out);
	json_decref(spec);
	knowledge_finish(&k);
	dataset_destroy(ds);
	return rc;
}

/* ---- anatomize ---------------------------------------------------------- */

/* Splits "A,B,C" in place into at most DATASET_MAX_ATTRS names. */
static size_t split_names(char *list, const char **names)
{
	size_t n = 0;

	for (char *p = list; n < DATASET_MAX_ATTRS; p++) {
		names[n++] = p;
		p = strchr(p, ',');
		if (!p)
			break;
		*p = '\0';
	}
	return n;
}

static int anatomy_flags(const struct cmd *c, const struct args *a, struct anatomy_options *o)
{
	long long l, seed = 1;

	if (!a->opt[OPT_SA] || !a->opt[OPT_QI] || !a->opt[OPT_L])
		return cli_usage_error(c, "%s",
				       "anatomize needs --sa ATTR, --qi A,B,... and --l L");
	if (cli_parse_int(c, "--l", a->opt[OPT_L], &l) ||
	    (a->opt[OPT_SEED] && cli_parse_int(c, "--seed", a->opt[OPT_SEED], &seed)))
		return 2;
	if (l < 2 || seed < 0)
		return cli_usage_error(
		    c, "%s", l < 2 ? "--l must be at least 2" : "--seed must be non-negative");
	o->l = (size_t)l;
	o->seed = (uint64_t)seed;
	o->set_aside = a->opt[OPT_SET_ASIDE] != NULL;
	return -1;
}

static enum pm_status anatomize(const char *path, const struct args *a,
				const struct anatomy_options *o, struct dataset **ds,
				struct pm_error *err)
{
	struct csv_table t = {0};
	const char *qi[DATASET_MAX_ATTRS];
	char *list = strdup(a->opt[OPT_QI]);
	size_t n_qi, n_aside = 0;
	enum pm_status st;

	if (!list)
		return error_set(err, PM_ERR_NOMEM, "", "out of memory");
	n_qi = split_names(list, qi);
	st = inputs_load_csv(path, a, &t, err);
	if (!st)
		st = inputs_flag_field(
		    anatomy_run(&t, a->opt[OPT_SA], qi, n_qi, o, ds, &n_aside, err), err);
	if (!st && o->set_aside)
		fprintf(stderr, "pmaxent: %zu records set aside\n", n_aside);
	csv_table_finish(&t);
	free(list);
	return st;
}

static int cmd_anatomize(const struct cmd *c, const struct args *a)
{
	struct anatomy_options o = {0};
	struct pm_error err = {0};
	struct dataset *ds = NULL;
	enum pm_status st;
	int rc = anatomy_flags(c, a, &o);

	if (rc >= 0)
		return rc;
	st = anatomize(a->pos[0], a, &o, &ds, &err);
	if (!st && a->opt[OPT_CSV]) {
		st = inputs_print_csv(ds, &err);
	} else if (!st) {
		st = codec_dataset_print(ds, stdout, &err);
	}
	dataset_destroy(ds);
	return cli_finish(st, &err);
}

static const struct cmd commands[] = {
    {"solve", usage_solve, opts_solve, 1, 2, cmd_solve},
    {"mine", usage_mine, opts_mine, 1, 1, cmd_mine},
    {"sweep", sweep_usage, sweep_options, 1, 1, sweep_cmd},
    {"report", usage_report, opts_report, 1, 1, cmd_report},
    {"anatomize", usage_anatomize, opts_anatomize, 1, 1, cmd_anatomize},
    {"serve", serve_usage, serve_options, 0, 0, serve_run},
    {"upload", upload_usage, upload_options, 1, 1, upload_cmd},
};

/* --max-input BYTES: a whole number from 1 to 2^60. 0, or -1 after a
 * usage message. */
static int parse_max_input(const struct cmd *c, const char *s, unsigned long long *out)
{
	long long v;

	if (cli_parse_int(c, "--max-input", s, &v))
		return -1;
	if (v < 1 || v > (1LL << 60))
		return cli_usage_error(c,
				       "--max-input: expected a number of bytes from 1 to 2^60, "
				       "got '%s'",
				       s),
		       -1;
	*out = (unsigned long long)v;
	return 0;
}

/* Returns -1 when the command should run, else the exit code. */
static int parse_args(const struct cmd *c, int argc, char **argv, struct args *a)
{
	int id;

	opterr = 0;
	while ((id = getopt_long(argc, argv, ":h", c->opts, NULL)) != -1) {
		if (id == 'h') {
			fputs(c->usage, stdout);
			return 0;
		}
		if (id == ':')
			return cli_usage_error(c, "option '%s' needs an argument",
					       argv[optind - 1]);
		if (id < OPT_BASE || id >= OPT_BASE + N_OPTS)
			return cli_usage_error(c, "unknown option '%s'", argv[optind - 1]);
		a->opt[id - OPT_BASE] = optarg ? optarg : "";
	}
	if (a->opt[OPT_MAX_INPUT] && parse_max_input(c, a->opt[OPT_MAX_INPUT], &a->max_input))
		return 2;
	a->pos = argv + optind;
	a->n_pos = (size_t)(argc - optind);
	if (a->n_pos < c->min_pos)
		return cli_usage_error(c, "%s: missing the input file", c->name);
	if (a->n_pos > c->max_pos)
		return cli_usage_error(c, "unexpected argument '%s'", a->pos[c->max_pos]);
	return -1;
}

int main(int argc, char **argv)
{
	struct args a = {0};
	int rc;

	if (argc < 2)
		return cli_usage_error(NULL, "%s", "no command given");
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		fputs(cli_usage, stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("pmaxent %s\n", PMAXENT_VERSION);
		return 0;
	}
	a.max_input = CLI_MAX_INPUT;
	/* the global form, before the command: pmaxent --max-input N solve ... */
	if (!strcmp(argv[1], "--max-input") && argc > 3) {
		a.opt[OPT_MAX_INPUT] = argv[2];
		argv += 2;
		argc -= 2;
	}
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
		if (strcmp(argv[1], commands[i].name) != 0)
			continue;
		rc = parse_args(&commands[i], argc - 1, argv + 1, &a);
		return rc >= 0 ? rc : commands[i].run(&commands[i], &a);
	}
	return cli_usage_error(NULL, "unknown command '%s'", argv[1]);
}
