/*
 * What the files of the pmaxent command share: the option ids and the
 * parsed command line, the messages and exit codes (cli.c), and each
 * command that has a file of its own (serve.c). main.c has the others and
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
	OPT_QUEUE,
	OPT_TOKEN_FILE,
	OPT_MAX_BODY,
	OPT_MAX_SOLVE_BODY,
	OPT_INSECURE,
	OPT_QUIET,
	OPT_MAX_CONN,
	OPT_MAX_CONN_ADDR,
	OPT_HEADER_TIMEOUT,
	OPT_IDLE_TIMEOUT,
	OPT_ANALYSIS_LIMIT,
	OPT_SOLVE_LIMIT,
	OPT_MAX_ATTEMPTS,
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
};

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

/* ---- serve.c -------------------------------------------------------------- */

extern const char serve_usage[];
extern const struct option serve_options[];
/* `pmaxent serve`: runs the service until SIGTERM or SIGINT. */
int serve_run(const struct cmd *c, const struct args *a);

#endif
