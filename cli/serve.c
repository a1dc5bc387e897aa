/*
 * `pmaxent serve` (SPEC sections 5-6): its flags as struct http_options,
 * and the service run until SIGTERM or SIGINT.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char serve_usage[] =
    "usage: pmaxent serve [OPTIONS]\n"
    "\n"
    "Runs the HTTP/JSON service until SIGTERM or SIGINT, then stops gracefully:\n"
    "no new connections, the requests in flight get up to --grace seconds to\n"
    "finish, running analyses are put back in the queue and run again on the\n"
    "next start. SIGHUP reads the token file again (a file refused keeps the\n"
    "tokens in use, and the log says why).\n"
    "Prints 'pmaxent: listening on http://ADDR:PORT' on stderr once it listens,\n"
    "then one JSON access-log line per request.\n"
    "\n"
    "options:\n"
    "  --listen ADDR        IPv4 or IPv6 address to listen on (default 127.0.0.1)\n"
    "  --port P             TCP port; 0 picks a free one (default 8080)\n"
    "  --data-dir DIR       database directory, created if needed (default ./var)\n"
    "  --database URI       a PostgreSQL database (postgresql://...) shared by\n"
    "                       several nodes, in place of SQLite in --data-dir\n"
    "                       (default: $PMAXENT_DATABASE if set)\n"
    "  --workers N          analysis worker threads (default: the CPUs it may use)\n"
    "  --worker-memory MB   memory each solve's worker process may add to what it\n"
    "                       shares with the service; over it the solve fails\n"
    "                       naming the limit (default: 3/4 of the machine's\n"
    "                       memory over --workers, at least 1024)\n"
    "  --queue N            queued analyses before 503 Retry-After (default 64)\n"
    "  --queue-per-tenant N of them one tenant may hold; over it: 429 Retry-After\n"
    "                       (default: half of --queue with --token-file, else all)\n"
    "  --tenant-max-datasets N\n"
    "                       datasets one tenant may store, 403 above (default 1000;\n"
    "                       0: no limit)\n"
    "  --tenant-max-bytes B bytes its datasets may take as stored, 403 above\n"
    "                       (default 10737418240; 0: no limit)\n"
    "  --dataset-cache MB   datasets kept read for the next analysis, counted by\n"
    "                       about the memory of their arrays (default 1024; 0: none)\n"
    "  --token-file F       lines 'TOKEN TENANT' or 'TOKEN TENANT admin' ('#'\n"
    "                       comments; tokens of 16 characters or more; the file\n"
    "                       must be private, chmod 600): every request but\n"
    "                       /healthz and /readyz needs 'Authorization: Bearer\n"
    "                       TOKEN', /metrics one with the admin role\n"
    "  --max-body BYTES     request body limit, 413 above (default 67108864)\n"
    "  --max-solve-body BYTES\n"
    "                       POST /v1/solve body limit (default 1048576)\n"
    "  --max-upload BYTES   text/csv POST /v1/datasets limit, read as it arrives\n"
    "                       (default 2147483648: 10M records fit); 413 above\n"
    "  --max-connections N  connections open at once (default 1024); over it: 503\n"
    "  --max-connections-per-address N\n"
    "                       of them from one client address (default 64); over: 429\n"
    "  --header-timeout S   seconds for a request's whole head (default 10); 408\n"
    "  --idle-timeout S     seconds a connection may stay silent (default 30)\n"
    "  --analysis-time-limit S\n"
    "                       an analysis's solve time limit: default and maximum of\n"
    "                       solver.time_limit (default 3600)\n"
    "  --solve-time-limit S the same for POST /v1/solve (default 10)\n"
    "  --max-attempts N     an analysis the service died running N times ends\n"
    "                       failed (default 3)\n"
    "  --lease S            seconds a node's claim on a running job lasts unless\n"
    "                       renewed; after that another node takes it over\n"
    "                       (default 30)\n"
    "  --heartbeat S        seconds between renewals, each with the job's\n"
    "                       progress (default 1; below --lease)\n"
    "  --grace S            seconds requests in flight get to finish at SIGTERM\n"
    "                       (default 30); what is left then is cut off\n"
    "  --insecure           allow a non-loopback address without a token file\n"
    "  --quiet              no access log\n"
    "  -h, --help           show this help\n"
    "\n"
    "exit status: 0 after a clean stop, 2 bad flags or settings, 1 other errors\n";

const struct option serve_options[] = {
    {"listen", required_argument, NULL, OPT_BASE + OPT_LISTEN},
    {"port", required_argument, NULL, OPT_BASE + OPT_PORT},
    {"data-dir", required_argument, NULL, OPT_BASE + OPT_DATA_DIR},
    {"database", required_argument, NULL, OPT_BASE + OPT_DATABASE},
    {"workers", required_argument, NULL, OPT_BASE + OPT_WORKERS},
    {"worker-memory", required_argument, NULL, OPT_BASE + OPT_WORKER_MEMORY},
    {"queue", required_argument, NULL, OPT_BASE + OPT_QUEUE},
    {"queue-per-tenant", required_argument, NULL, OPT_BASE + OPT_QUEUE_PER_TENANT},
    {"tenant-max-datasets", required_argument, NULL, OPT_BASE + OPT_TENANT_MAX_DATASETS},
    {"tenant-max-bytes", required_argument, NULL, OPT_BASE + OPT_TENANT_MAX_BYTES},
    {"dataset-cache", required_argument, NULL, OPT_BASE + OPT_DATASET_CACHE},
    {"token-file", required_argument, NULL, OPT_BASE + OPT_TOKEN_FILE},
    {"max-body", required_argument, NULL, OPT_BASE + OPT_MAX_BODY},
    {"max-solve-body", required_argument, NULL, OPT_BASE + OPT_MAX_SOLVE_BODY},
    {"max-upload", required_argument, NULL, OPT_BASE + OPT_MAX_UPLOAD},
    {"insecure", no_argument, NULL, OPT_BASE + OPT_INSECURE},
    {"quiet", no_argument, NULL, OPT_BASE + OPT_QUIET},
    {"max-connections", required_argument, NULL, OPT_BASE + OPT_MAX_CONN},
    {"max-connections-per-address", required_argument, NULL, OPT_BASE + OPT_MAX_CONN_ADDR},
    {"header-timeout", required_argument, NULL, OPT_BASE + OPT_HEADER_TIMEOUT},
    {"idle-timeout", required_argument, NULL, OPT_BASE + OPT_IDLE_TIMEOUT},
    {"analysis-time-limit", required_argument, NULL, OPT_BASE + OPT_ANALYSIS_LIMIT},
    {"solve-time-limit", required_argument, NULL, OPT_BASE + OPT_SOLVE_LIMIT},
    {"max-attempts", required_argument, NULL, OPT_BASE + OPT_MAX_ATTEMPTS},
    {"lease", required_argument, NULL, OPT_BASE + OPT_LEASE},
    {"heartbeat", required_argument, NULL, OPT_BASE + OPT_HEARTBEAT},
    {"grace", required_argument, NULL, OPT_BASE + OPT_GRACE},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* ---- serve -------------------------------------------------------------- */

/* A numeric serve flag within [min, max] into *out; -1 when fine or absent,
 * else the exit code. */
static int serve_number(const struct cmd *c, const struct args *a, enum opt_id id, const char *flag,
			long long min, long long max, size_t *out)
{
	long long v;

	if (!a->opt[id])
		return -1;
	if (cli_parse_int(c, flag, a->opt[id], &v))
		return 2;
	if (v < min || v > max) {
		fprintf(stderr, "pmaxent: %s: must be from %lld to %lld, got %lld\n", flag, min,
			max, v);
		cli_usage_hint(c);
		return 2;
	}
	*out = (size_t)v;
	return -1;
}

/* A seconds serve flag in (0, max]; -1 when fine or absent, else 2. */
static int serve_seconds(const struct cmd *c, const struct args *a, enum opt_id id,
			 const char *flag, double max, double *out)
{
	double v;

	if (!a->opt[id])
		return -1;
	if (cli_parse_real(c, flag, a->opt[id], &v))
		return 2;
	if (!(v > 0) || v > max) {
		fprintf(stderr,
			"pmaxent: %s: must be a number of seconds above 0 and at most %g, "
			"got %s\n",
			flag, max, a->opt[id]);
		cli_usage_hint(c);
		return 2;
	}
	*out = v;
	return -1;
}

/* The connection and time limits of serve. */
static int serve_limits(const struct cmd *c, const struct args *a, struct http_options *o)
{
	size_t attempts = (size_t)o->max_attempts;
	int rc;

	if ((rc = serve_number(c, a, OPT_MAX_CONN, "--max-connections", 1, 1000000,
			       &o->max_connections)) >= 0 ||
	    (rc = serve_number(c, a, OPT_MAX_CONN_ADDR, "--max-connections-per-address", 1, 1000000,
			       &o->max_per_address)) >= 0 ||
	    (rc = serve_number(c, a, OPT_MAX_ATTEMPTS, "--max-attempts", 1, 1000, &attempts)) >=
		0 ||
	    (rc = serve_seconds(c, a, OPT_HEADER_TIMEOUT, "--header-timeout", 3600,
				&o->header_timeout)) >= 0 ||
	    (rc = serve_seconds(c, a, OPT_IDLE_TIMEOUT, "--idle-timeout", 86400,
				&o->idle_timeout)) >= 0 ||
	    (rc = serve_seconds(c, a, OPT_ANALYSIS_LIMIT, "--analysis-time-limit", 1e7,
				&o->analysis_time_limit)) >= 0 ||
	    (rc = serve_seconds(c, a, OPT_SOLVE_LIMIT, "--solve-time-limit", 1e7,
				&o->solve_time_limit)) >= 0 ||
	    (rc = serve_seconds(c, a, OPT_LEASE, "--lease", 86400, &o->lease)) >= 0 ||
	    (rc = serve_seconds(c, a, OPT_HEARTBEAT, "--heartbeat", 3600, &o->heartbeat)) >= 0 ||
	    (rc = serve_seconds(c, a, OPT_GRACE, "--grace", 86400, &o->grace)) >= 0)
		return rc;
	if (o->heartbeat >= o->lease) {
		fprintf(stderr,
			"pmaxent: --heartbeat (%g s) must be below --lease (%g s): a lease would "
			"run out between renewals\n",
			o->heartbeat, o->lease);
		cli_usage_hint(c);
		return 2;
	}
	o->max_attempts = (int)attempts;
	if (o->max_per_address > o->max_connections) {
		fprintf(stderr,
			"pmaxent: --max-connections-per-address (%zu) must not be above "
			"--max-connections (%zu)\n",
			o->max_per_address, o->max_connections);
		cli_usage_hint(c);
		return 2;
	}
	return -1;
}

/* A tenant's shares (issue 36): -1 when fine or absent, else 2. */
static int serve_tenants(const struct cmd *c, const struct args *a, struct http_options *o)
{
	size_t bytes = (size_t)o->tenant_max_bytes;
	int rc;

	if ((rc = serve_number(c, a, OPT_QUEUE_PER_TENANT, "--queue-per-tenant", 1, 1000000,
			       &o->queue_per_tenant)) >= 0 ||
	    (rc = serve_number(c, a, OPT_TENANT_MAX_DATASETS, "--tenant-max-datasets", 0, 1LL << 40,
			       &o->tenant_max_datasets)) >= 0 ||
	    (rc = serve_number(c, a, OPT_TENANT_MAX_BYTES, "--tenant-max-bytes", 0, 1LL << 60,
			       &bytes)) >= 0)
		return rc;
	o->tenant_max_bytes = bytes;
	if (o->queue_per_tenant > o->queue_capacity) {
		fprintf(stderr,
			"pmaxent: --queue-per-tenant (%zu) must not be above --queue (%zu)\n",
			o->queue_per_tenant, o->queue_capacity);
		cli_usage_hint(c);
		return 2;
	}
	return -1;
}

static int serve_flags(const struct cmd *c, const struct args *a, struct http_options *o)
{
	size_t port, memory = 0;
	int rc;

	http_options_init(o);
	port = o->port;
	if ((rc = serve_number(c, a, OPT_PORT, "--port", 0, 65535, &port)) >= 0 ||
	    (rc = serve_number(c, a, OPT_WORKERS, "--workers", 1, 1024, &o->workers)) >= 0 ||
	    (rc = serve_number(c, a, OPT_WORKER_MEMORY, "--worker-memory", 16, 1LL << 30,
			       &memory)) >= 0 ||
	    (rc = serve_number(c, a, OPT_QUEUE, "--queue", 1, 1000000, &o->queue_capacity)) >= 0 ||
	    (rc = serve_number(c, a, OPT_DATASET_CACHE, "--dataset-cache", 0, (size_t)1 << 30,
			       &o->dataset_cache_mb)) >= 0 ||
	    (rc = serve_number(c, a, OPT_MAX_BODY, "--max-body", 1, 1LL << 40, &o->max_body)) >=
		0 ||
	    (rc = serve_number(c, a, OPT_MAX_SOLVE_BODY, "--max-solve-body", 1, 1LL << 40,
			       &o->max_solve_body)) >= 0 ||
	    (rc = serve_number(c, a, OPT_MAX_UPLOAD, "--max-upload", 1, 1LL << 40,
			       &o->max_upload)) >= 0 ||
	    (rc = serve_limits(c, a, o)) >= 0 || (rc = serve_tenants(c, a, o)) >= 0)
		return rc;
	o->port = (unsigned)port;
	o->worker_memory = memory << 20;
	if (a->opt[OPT_LISTEN])
		o->listen = a->opt[OPT_LISTEN];
	if (a->opt[OPT_DATA_DIR])
		o->data_dir = a->opt[OPT_DATA_DIR];
	o->database = a->opt[OPT_DATABASE] ? a->opt[OPT_DATABASE] : getenv("PMAXENT_DATABASE");
	if (o->database && !*o->database)
		o->database = NULL;
	if (a->opt[OPT_TOKEN_FILE])
		o->token_file = a->opt[OPT_TOKEN_FILE];
	o->insecure = a->opt[OPT_INSECURE] != NULL;
	o->quiet = a->opt[OPT_QUIET] != NULL;
	return -1;
}

/* Settings errors name the flag the user typed ("token_file" ->
 * "--token-file"). */
static void serve_field(struct pm_error *err)
{
	char buf[sizeof err->field];

	if (!err->field[0] || strchr(err->field, '.'))
		return;
	snprintf(buf, sizeof buf, "--%.250s", err->field);
	for (char *p = buf; *p; p++)
		*p = *p == '_' ? '-' : *p;
	memcpy(err->field, buf, sizeof buf);
}

/* SIGHUP: the token file read again; a refused one changes nothing. */
static void serve_reload(struct http_server *h, const struct http_options *o)
{
	struct pm_error err = {0};

	if (!o->token_file)
		fprintf(stderr, "pmaxent: SIGHUP: no token file to read again\n");
	else if (http_reload(h, &err))
		fprintf(stderr, "pmaxent: SIGHUP: %s refused, the tokens in use are kept: %s\n",
			o->token_file, err.message);
	else
		fprintf(stderr, "pmaxent: SIGHUP: tokens read again from %s\n", o->token_file);
}

int serve_run(const struct cmd *c, const struct args *a)
{
	struct http_options o;
	struct http_server *h = NULL;
	struct pm_error err = {0};
	enum pm_status st;
	sigset_t set;
	int sig = 0, rc = serve_flags(c, a, &o), v6;

	if (rc >= 0)
		return rc;
	/* blocked before any thread starts, so every thread inherits the mask
	 * and only sigwait below sees them */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	if ((st = http_start(&o, &h, &err))) {
		serve_field(&err);
		return cli_finish(st, &err);
	}
	v6 = strchr(o.listen, ':') && o.listen[0] != '[';
	fprintf(stderr, "pmaxent: listening on http://%s%s%s:%u\n", v6 ? "[" : "", o.listen,
		v6 ? "]" : "", http_port(h));
	while (!sigwait(&set, &sig) && sig == SIGHUP)
		serve_reload(h, &o);
	fprintf(stderr, "pmaxent: %s: shutting down\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
	http_stop(h);
	fprintf(stderr, "pmaxent: stopped\n");
	return 0;
}

/* ---- dispatch ----------------------------------------------------------- */
