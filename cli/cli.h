/*
 * What the files of the pmaxent command share: the option ids and the
 * parsed command line, the messages and exit codes (cli.c), and each
 * command that has a file of its own (serve.c, sweep.c), what the commands
 * read and write (inputs.c). main.c has the others and
 * the dispatch.
 */
#ifndef PMAXENT_CLI_H
#define PMAXENT_CLI_H

#include <getopt.h>

#include "server.h"

enum opt_id {
	OPT_TOLERANCE,
	OPT_MAX_ITER,
	OPT_METHOD,
	OPT_TIME_LIMIT,
	OPT_THRESHOLD,
	OPT_C,
	OPT_KIND,
	OPT_K,
	OPT_SVG,
	OPT_SA,
	OPT_GROUP,
	OPT_POSITIVE,
	OPT_NEGATIVE,
	OPT_MIN_SUPPORT,
	OPT_QI_ATTRS,
	OPT_QI,
	OPT_L,
	OPT_SEED,
	OPT_SET_ASIDE,
	OPT_LISTEN,
	OPT_PORT,
	OPT_DATA_DIR,
	OPT_WORKERS,
	OPT_WORKER_MEMORY,
	OPT_QUEUE,
	OPT_QUEUE_PER_TENANT,
	OPT_TENANT_MAX_DATASETS,
	OPT_TENANT_MAX_BYTES,
	OPT_TOKEN_FILE,
	OPT_MAX_BODY,
	OPT_MAX_SOLVE_BODY,
	OPT_MAX_UPLOAD,
	OPT_INSECURE,
	OPT_QUIET,
	OPT_MAX_CONN,
	OPT_MAX_CONN_ADDR,
	OPT_HEADER_TIMEOUT,
	OPT_IDLE_TIMEOUT,
	OPT_ANALYSIS_LIMIT,
	OPT_SOLVE_LIMIT,
	OPT_MAX_ATTEMPTS,
	OPT_DATASET_CACHE,
	OPT_DATABASE,
	OPT_LEASE,
	OPT_HEARTBEAT,
	OPT_SERVER,
	OPT_NAME,
	OPT_TOKEN,
	OPT_CSV,
	OPT_MAX_INPUT,
	OPT_GRACE,
	N_OPTS
};

/* getopt_long returns OPT_BASE + id for long options, 'h' for help. */
#define OPT_BASE 256

struct cmd;

/* Parsed command line of one command: option values (NULL when absent) and
 * positional arguments. */
struct args {
	const char *opt[N_OPTS];
	char **pos;
	size_t n_pos;
	unsigned long long max_input; /* --max-input, bytes (default CLI_MAX_INPUT) */
};

/* --max-input's default: 16 GiB, well above a table of 10M records (about
 * 400 MB as CSV, 1.5 GB as records JSON). */
#define CLI_MAX_INPUT (16ULL << 30)

struct cmd {
	const char *name;
	const char *usage;
	const struct option *opts;
	size_t min_pos, max_pos;
	int (*run)(const struct cmd *c, const struct args *a);
};

/* ---- cli.c ---------------------------------------------------------------- */

/* `pmaxent --help` */
extern const char cli_usage[];
/* The first line of c's usage text (the main one for NULL) and where to
 * find the rest, on stderr. */
void cli_usage_hint(const struct cmd *c);
/* "pmaxent: " fmt (one %s: arg), the usage hint; returns 2. */
int cli_usage_error(const struct cmd *c, const char *fmt, const char *arg);
/* The exit status of a status: 0, 2 bad input, 3 inconsistent, 1 other. */
int cli_exit_code(enum pm_status st);
/* "pmaxent: FIELD: MESSAGE" (or without the field) and the exit code. */
int cli_finish(enum pm_status st, const struct pm_error *err);
/* A whole decimal integer / a finite number: 0, or -1 after printing a
 * usage message naming flag. */
int cli_parse_int(const struct cmd *c, const char *flag, const char *s, long long *out);
int cli_parse_real(const struct cmd *c, const char *flag, const char *s, double *out);

/* ---- upload.c ------------------------------------------------------------- */

/* `pmaxent upload`: a dataset file to a running service. */
extern const char upload_usage[];
extern const struct option upload_options[];
int upload_cmd(const struct cmd *c, const struct args *a);

/* ---- inputs.c ------------------------------------------------------------- */

/* obj[key] = the integer of flag id, if given. 0 ok, -1 usage error. */
int inputs_put_int_flag(const struct cmd *c, const struct args *a, enum opt_id id, const char *flag,
			json_t *obj, const char *key);
/* A JSON file ("-": stdin) into *out (caller's reference). */
enum pm_status inputs_load_json(const char *path, const struct args *a, json_t **out,
				struct pm_error *err);
/* DATASET: a JSON dataset, or CSV (--sa, --group) when the name ends in
 * .csv or, for "-" (stdin), when it does not begin with '{' or '['.
 * Caller frees *ds with dataset_destroy. */
enum pm_status inputs_load_dataset(const char *path, const struct args *a, struct dataset **ds,
				   struct pm_error *err);
/* A CSV file ("-": stdin) into t (csv_table_finish frees it). */
enum pm_status inputs_load_csv(const char *path, const struct args *a, struct csv_table *t,
			       struct pm_error *err);
/* st, with an error about a column a flag named (sa, group, qi, l) under
 * that flag ("--sa"). */
enum pm_status inputs_flag_field(enum pm_status st, struct pm_error *err);
/* A records-form dataset on stdout as CSV (RFC 4180, quoted where need
 * be): its QI columns, "group", its SA; one row per record. */
enum pm_status inputs_print_csv(const struct dataset *ds, struct pm_error *err);
/* j on stdout, indented, and a newline. */
enum pm_status inputs_print_json(const json_t *j, struct pm_error *err);
/* --tolerance, --max-iterations, --method, --time-limit as a "solver"
 * block (*out, caller's reference); -1 when fine, else the exit code. */
int inputs_solver_flags(const struct cmd *c, const struct args *a, json_t **out);
/* --threshold, --c into (*obj)["report"] (made if need be); -1 when
 * fine, else the exit code. */
int inputs_report_flags(const struct cmd *c, const struct args *a, json_t **obj);

/* ---- source.c ------------------------------------------------------------ */

/* The forms an input may take (bits). */
#define SOURCE_JSON 1
#define SOURCE_CSV  2

/* An input read whole: text (owned, NUL-terminated), its length, and the
 * form its first bytes show (SOURCE_JSON: '{' or '[' first). */
struct source {
	char *text;
	size_t len;
	int form;
};

/* The form of one of forms that the first bytes of text (n) can begin,
 * or 0 with *why (a static phrase) and *at (the byte's offset): a NUL,
 * a control byte, invalid UTF-8, or a first byte that starts none of
 * them. Blank or empty text is left to the parser. */
int source_sniff(const char *text, size_t n, int forms, const char **why, size_t *at);
/* path ("-": standard input) whole into *s, refused at its first bytes
 * when not text of forms and when over a->max_input; `cannot` words the
 * failure to open it. Free s with source_finish (also done on error). */
enum pm_status source_read(const char *path, const struct args *a, int forms, const char *cannot,
			   struct source *s, struct pm_error *err);
void source_finish(struct source *s);
/* How messages name path: "stdin" for "-". Borrowed (path or static). */
const char *source_name(const char *path);

/* ---- sweep.c --------------------------------------------------------------- */

extern const char sweep_usage[];
extern const struct option sweep_options[];
/* `pmaxent sweep`: SPEC 4.2's points, JSON on stdout (--svg: a chart). */
int sweep_cmd(const struct cmd *c, const struct args *a);

/* ---- serve.c -------------------------------------------------------------- */

extern const char serve_usage[];
extern const struct option serve_options[];
/* `pmaxent serve`: runs the service until SIGTERM or SIGINT. */
int serve_run(const struct cmd *c, const struct args *a);

#endif
