/*
 * What the commands share: reading a dataset or a JSON file, writing
 * JSON, and the solver and report flags as the JSON blocks the codec
 * reads (so that flags and files get the same checks and messages).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* obj[key] = the integer of flag, if given. 0 ok, -1 usage error. */
int inputs_put_int_flag(const struct cmd *c, const struct args *a, enum opt_id id, const char *flag,
			json_t *obj, const char *key)
{
	long long v;

	if (!a->opt[id])
		return 0;
	if (cli_parse_int(c, flag, a->opt[id], &v))
		return -1;
	json_object_set_new(obj, key, json_integer(v));
	return 0;
}

/* ---- input and output --------------------------------------------------- */

/* Read whole, then parsed from memory: json_load_file takes the file a
 * character at a time through locked stdio (getc), a large part of a
 * small solve's run time. */
static enum pm_status parse_json(const char *path, const char *text, size_t len, json_t **out,
				 struct pm_error *err)
{
	json_error_t je;

	*out = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (*out)
		return PM_OK;
	return error_set(err, PM_ERR_INPUT, "", "%s:%d:%d: %s", source_name(path), je.line,
			 je.column, je.text);
}

enum pm_status inputs_load_json(const char *path, const struct args *a, json_t **out,
				struct pm_error *err)
{
	struct source s;
	enum pm_status st = source_read(path, a, SOURCE_JSON, "unable to open", &s, err);

	*out = NULL;
	if (!st)
		st = parse_json(path, s.text, s.len, out, err);
	source_finish(&s);
	return st;
}

/* A JSON dataset: the plain records form directly from the text
 * (codec_records_dataset), anything else through a JSON tree, which
 * words every error. */
static enum pm_status json_dataset(const char *path, const struct source *s, struct dataset **ds,
				   struct pm_error *err)
{
	struct pm_error direct = {0};
	json_t *j = NULL;
	enum pm_status st = codec_records_dataset(s->text, s->len, ds, &direct);

	if (st == PM_ERR_INPUT) {
		st = parse_json(path, s->text, s->len, &j, err);
		if (!st)
			st = codec_dataset(j, ds, err);
	} else if (st) {
		*err = direct;
	}
	json_decref(j);
	return st;
}

enum pm_status inputs_load_csv(const char *path, const struct args *a, struct csv_table *t,
			       struct pm_error *err)
{
	struct source s;
	enum pm_status st = source_read(path, a, SOURCE_CSV, "cannot open", &s, err);

	if (!st)
		st = csv_parse(s.text, s.len, t, err);
	source_finish(&s);
	return st;
}

static int is_csv(const char *path)
{
	size_t n = strlen(path);

	return n >= 4 && strcmp(path + n - 4, ".csv") == 0;
}

/* Dataset name of a CSV file: its base name without ".csv" ("stdin"). */
static void csv_name(const char *path, char *buf, size_t len)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : source_name(path);
	snprintf(buf, len, "%.*s", (int)(strlen(base) - (is_csv(base) ? 4 : 0)), base);
}

/* Errors about a column named by a flag ("sa", "group", "qi", "l") name the
 * flag, which is what the user typed. */
enum pm_status inputs_flag_field(enum pm_status st, struct pm_error *err)
{
	static const char *const flags[] = {"sa", "group", "qi", "l"};
	char buf[sizeof err->field];

	for (size_t i = 0; st && i < sizeof flags / sizeof flags[0]; i++) {
		if (strcmp(err->field, flags[i]) != 0)
			continue;
		snprintf(buf, sizeof buf, "--%s", flags[i]);
		memcpy(err->field, buf, sizeof buf);
		break;
	}
	return st;
}

static enum pm_status csv_dataset_of(const char *path, const struct args *a, const struct source *s,
				     struct dataset **ds, struct pm_error *err)
{
	struct csv_table t = {0};
	char name[256];
	enum pm_status st;

	if (!a->opt[OPT_SA] || !a->opt[OPT_GROUP])
		return error_set(err, PM_ERR_INPUT, "",
				 "CSV input %s needs --sa COL and --group COL", source_name(path));
	csv_name(path, name, sizeof name);
	st = csv_parse(s->text, s->len, &t, err);
	if (!st)
		st = inputs_flag_field(
		    csv_dataset(&t, a->opt[OPT_SA], a->opt[OPT_GROUP], name, ds, err), err);
	csv_table_finish(&t);
	return st;
}

/* DATASET: a JSON dataset, or CSV when the name ends in .csv (stdin:
 * when it does not begin with '{' or '['). */
enum pm_status inputs_load_dataset(const char *path, const struct args *a, struct dataset **ds,
				   struct pm_error *err)
{
	int forms = !strcmp(path, "-") ? SOURCE_JSON | SOURCE_CSV
		    : is_csv(path)     ? SOURCE_CSV
				       : SOURCE_JSON;
	struct source s;
	enum pm_status st;

	*ds = NULL;
	if (forms == SOURCE_JSON && (a->opt[OPT_SA] || a->opt[OPT_GROUP]))
		return error_set(
		    err, PM_ERR_INPUT, "",
		    "--sa and --group apply only to CSV input (a name ending in .csv)");
	st = source_read(path, a, forms, forms == SOURCE_CSV ? "cannot open" : "unable to open", &s,
			 err);
	if (!st && s.form == SOURCE_JSON && (a->opt[OPT_SA] || a->opt[OPT_GROUP]))
		st =
		    error_set(err, PM_ERR_INPUT, "",
			      "--sa and --group apply only to CSV input, and stdin begins as JSON");
	else if (!st && s.form == SOURCE_CSV)
		st = csv_dataset_of(path, a, &s, ds, err);
	else if (!st)
		st = json_dataset(path, &s, ds, err);
	source_finish(&s);
	return st;
}

static void csv_put(void *ctx, const char *s, size_t n)
{
	fwrite(s, 1, n, ctx);
}

/* One CSV field on stdout (csv_out_cell: quoted when need be, never a
 * formula) and its separator. */
static void csv_field(const char *v, int last)
{
	csv_out_cell(v, csv_put, stdout);
	putchar(last ? '\n' : ',');
}

enum pm_status inputs_print_csv(const struct dataset *ds, struct pm_error *err)
{
	if (!ds->has_ground_truth)
		return error_set(err, PM_ERR_INPUT, "", "a published-form dataset has no records");
	if (dataset_attr_index(ds, "group") >= 0 || !strcmp(ds->sa_name, "group"))
		return error_set(err, PM_ERR_INPUT, "--csv",
				 "an attribute is named \"group\", the group column's name");
	for (size_t a = 0; a < ds->n_attrs; a++)
		csv_field(ds->attr_names[a], 0);
	csv_field("group", 0);
	csv_field(ds->sa_name, 1);
	for (size_t i = 0; i < ds->n_records; i++) {
		for (size_t a = 0; a < ds->n_attrs; a++)
			csv_field(dataset_tuple_value(ds, ds->rec_tuple[i], a), 0);
		csv_field(ds->group_labels[ds->rec_group[i]], 0);
		csv_field(ds->sa_values.str[ds->rec_sa[i]], 1);
	}
	if (fflush(stdout) || ferror(stdout))
		return error_set(err, PM_ERR_IO, "", "cannot write the output: %s",
				 strerror(errno));
	return PM_OK;
}

/* Dumped to memory, then written at once: json_dumpf writes token by
 * token through locked stdio. */
enum pm_status inputs_print_json(const json_t *j, struct pm_error *err)
{
	size_t n = 0;
	char *text = j ? json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(17)) : NULL;
	int bad;

	if (!text)
		return error_set(err, PM_ERR_NOMEM, "", "out of memory while writing the output");
	n = strlen(text);
	bad = fwrite(text, 1, n, stdout) != n || fputc('\n', stdout) == EOF || fflush(stdout);
	free(text);
	if (bad)
		return error_set(err, PM_ERR_IO, "", "cannot write the output: %s",
				 strerror(errno));
	return PM_OK;
}

/* --time-limit as "time_limit" in the solver options JSON: seconds, a
 * positive number. Returns -1 when fine (or absent), else the exit code. */
static int inputs_time_limit_flag(const struct cmd *c, const struct args *a, json_t *out)
{
	const char *s = a->opt[OPT_TIME_LIMIT];
	double limit;

	if (!s)
		return -1;
	if (cli_parse_real(c, "--time-limit", s, &limit))
		return 2;
	if (!(limit > 0)) {
		fprintf(stderr,
			"pmaxent: --time-limit: expected a positive number of seconds, got '%s'\n",
			s);
		cli_usage_hint(c);
		return 2;
	}
	json_object_set_new(out, "time_limit", json_real(limit));
	return -1;
}

/* --tolerance / --max-iterations / --time-limit as solver options JSON
 * (*out may stay NULL). Returns -1 when fine, else the exit code. */
int inputs_solver_flags(const struct cmd *c, const struct args *a, json_t **out)
{
	double tol;

	*out = json_object();
	if (!*out)
		return 1;
	if (a->opt[OPT_TOLERANCE]) {
		if (cli_parse_real(c, "--tolerance", a->opt[OPT_TOLERANCE], &tol))
			return 2;
		json_object_set_new(*out, "tolerance", json_real(tol));
	}
	if (inputs_time_limit_flag(c, a, *out) >= 0)
		return 2;
	/* checked by codec_solver_options like the JSON field */
	if (a->opt[OPT_METHOD])
		json_object_set_new(*out, "method", json_string(a->opt[OPT_METHOD]));
	if (inputs_put_int_flag(c, a, OPT_MAX_ITER, "--max-iterations", *out, "max_iterations"))
		return 2;
	return -1;
}

/* --threshold / --c into the knowledge document's "report" (made if
 * need be), over the file's: codec_report_options checks them as it does
 * the JSON. Returns -1 when fine, else the exit code. */
int inputs_report_flags(const struct cmd *c, const struct args *a, json_t **know)
{
	static const struct {
		enum opt_id id;
		const char *flag, *key;
	} f[] = {{OPT_THRESHOLD, "--threshold", "threshold"}, {OPT_C, "--c", "c"}};
	json_t *report;
	double v;

	if (!a->opt[OPT_THRESHOLD] && !a->opt[OPT_C])
		return -1;
	if (!*know && !(*know = json_object()))
		return 1;
	if (!json_is_object(*know))
		return -1; /* the pipeline names the knowledge's error */
	report = json_object_get(*know, "report");
	if (!json_is_object(report) && json_object_set_new(*know, "report", report = json_object()))
		return 1;
	for (size_t i = 0; i < 2; i++) {
		if (!a->opt[f[i].id])
			continue;
		if (cli_parse_real(c, f[i].flag, a->opt[f[i].id], &v))
			return 2;
		json_object_set_new(report, f[i].key, json_real(v));
	}
	return -1;
}
