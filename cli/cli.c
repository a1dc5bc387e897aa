/*
 * The pmaxent command's messages and exit codes (SPEC section 5: 0
 * success, 2 bad input or usage, 3 inconsistent knowledge, 1 anything
 * else), and the numbers of its flags.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char cli_usage[] =
    "usage: pmaxent COMMAND [ARGS]\n"
    "\n"
    "Quantifies what an adversary with background knowledge learns from a\n"
    "bucketized (Anatomy) table, by maximum entropy (Privacy-MaxEnt).\n"
    "\n"
    "commands:\n"
    "  solve DATASET [KNOWLEDGE.json]   estimate P(s|q) and print the result JSON\n"
    "  mine DATASET --positive K --negative K\n"
    "                                   print the Top-(K+,K-) rules as knowledge JSON\n"
    "  anatomize DATA.csv --sa A --qi A,B,.. --l L\n"
    "                                   bucketize a CSV table, print the dataset JSON\n"
    "  serve [--listen ADDR] [--port P] run the HTTP/JSON service\n"
    "  upload DATASET --server URL [--sa COL --group COL]\n"
    "                                   store a dataset (CSV or JSON) in a running\n"
    "                                   service, with a progress line\n"
    "  report FILE                      a result's or a sweep's report as HTML\n"
    "\n"
    "Every FILE may be - (stdin). Input that is not JSON or CSV text is\n"
    "refused at its first bytes, and none is read past --max-input BYTES\n"
    "(default 16 GiB; before the command or as one of its options).\n"
    "\n"
    "  pmaxent COMMAND --help           help on one command\n"
    "  pmaxent --version                print the version\n";

/* ---- messages and exit codes -------------------------------------------- */

/* The first line of the usage text and where to find the rest. */
void cli_usage_hint(const struct cmd *c)
{
	const char *u = c ? c->usage : cli_usage;

	fprintf(stderr, "%.*s\nTry 'pmaxent %s%s--help' for more information.\n",
		(int)strcspn(u, "\n"), u, c ? c->name : "", c ? " " : "");
}

int cli_usage_error(const struct cmd *c, const char *fmt, const char *arg)
{
	fputs("pmaxent: ", stderr);
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	cli_usage_hint(c);
	return 2;
}

int cli_exit_code(enum pm_status st)
{
	switch (st) {
	case PM_OK:
		return 0;
	case PM_ERR_INPUT:
	case PM_ERR_IO:
		return 2;
	case PM_ERR_INCONSISTENT:
		return 3;
	default:
		return 1;
	}
}

/* "pmaxent: FIELD: MESSAGE" (or without the field) and the exit code. */
int cli_finish(enum pm_status st, const struct pm_error *err)
{
	if (st == PM_OK)
		return 0;
	if (err->field[0])
		fprintf(stderr, "pmaxent: %s: %s\n", err->field, err->message);
	else
		fprintf(stderr, "pmaxent: %s\n", err->message);
	return cli_exit_code(st);
}

/* ---- numbers ------------------------------------------------------------ */

/* A whole decimal integer: 0, or -1 after printing a usage message. */
int cli_parse_int(const struct cmd *c, const char *flag, const char *s, long long *out)
{
	char *end;

	errno = 0;
	*out = strtoll(s, &end, 10);
	if (*s && !*end && !errno)
		return 0;
	fprintf(stderr, "pmaxent: %s: expected an integer, got '%s'\n", flag, s);
	cli_usage_hint(c);
	return -1;
}

int cli_parse_real(const struct cmd *c, const char *flag, const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	if (*s && !*end && !errno && isfinite(*out))
		return 0;
	fprintf(stderr, "pmaxent: %s: expected a number, got '%s'\n", flag, s);
	cli_usage_hint(c);
	return -1;
}
