/*
 * `pmaxent serve` started and stopped (SPEC section 6, issue 3): the
 * options checked, the store, the workers and the daemon (http.c) started;
 * and the graceful stop, which lets the requests in flight finish for the
 * grace.
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "db.h"
#include "http_internal.h"
#include "isolate.h"
#include "jobs.h"

/* listen (IPv4, IPv6 with or without [], or "localhost") and port as a
 * socket address. */
static enum pm_status parse_listen(const char *listen, unsigned port, struct sockaddr_storage *ss,
				   int *v6, struct pm_error *err)
{
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	char addr[INET6_ADDRSTRLEN + 2];
	size_t n = strlen(listen);

	memset(ss, 0, sizeof *ss);
	if (port > 65535)
		return error_set(err, PM_ERR_INPUT, "port", "%u is not a TCP port (0..65535)",
				 port);
	if (n >= 2 && listen[0] == '[' && listen[n - 1] == ']')
		snprintf(addr, sizeof addr, "%.*s", (int)(n - 2), listen + 1);
	else
		snprintf(addr, sizeof addr, "%s", listen);
	if (!strcmp(addr, "localhost"))
		snprintf(addr, sizeof addr, "127.0.0.1");
	*v6 = 0;
	if (inet_pton(AF_INET, addr, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons((uint16_t)port);
	} else if (inet_pton(AF_INET6, addr, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		*v6 = 1;
	} else {
		return error_set(err, PM_ERR_INPUT, "listen",
				 "'%s' is not an IPv4 or IPv6 address (e.g. 127.0.0.1 or ::1)",
				 listen);
	}
	return PM_OK;
}

static int is_loopback(const struct sockaddr_storage *ss)
{
	const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
	const uint8_t *a = in6->sin6_addr.s6_addr;

	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
	if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr))
		return a[12] == 127;
	return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
}

/* Every connection the limits allow needs a file descriptor: the soft
 * limit is raised as far as the hard one allows, and a limit that cannot
 * be met is refused at start rather than found out under load. */
static enum pm_status enough_files(const struct http_options *o, struct pm_error *err)
{
	rlim_t need = (rlim_t)o->max_connections + 256;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return PM_OK;
	if (rl.rlim_cur >= need)
		return PM_OK;
	rl.rlim_cur = rl.rlim_max < need ? rl.rlim_max : need;
	setrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur >= need)
		return PM_OK;
	return error_set(err, PM_ERR_INPUT, "max_connections",
			 "%zu connections need %llu file descriptors, the hard limit is %llu "
			 "(ulimit -Hn)",
			 o->max_connections, (unsigned long long)need,
			 (unsigned long long)rl.rlim_max);
}

static enum pm_status start_jobs(struct http_server *h, struct pm_error *err)
{
	struct jobs_options jo = {.workers = h->o.workers,
				  .queue_capacity = h->o.queue_capacity,
				  .max_attempts = h->o.max_attempts,
				  .time_limit = h->o.analysis_time_limit,
				  .stall = h->o.test_stall,
				  .worker_memory = h->o.worker_memory,
				  .test_crash = h->o.test_crash,
				  .test_signal = h->o.test_signal,
				  .lease = h->o.lease,
				  .heartbeat = h->o.heartbeat};

	return jobs_create(h->store, &jo, &h->jobs, err);
}

/* Copies the options and checks what can be checked before any side
 * effect: address, access control. */
static enum pm_status configure(struct http_server *h, const struct http_options *o,
				struct sockaddr_storage *ss, int *v6, struct pm_error *err)
{
	enum pm_status st;

	h->o = *o;
	h->listen = strdup(o->listen ? o->listen : "127.0.0.1");
	if (o->database && !db_is_pg(o->database))
		return error_set(err, PM_ERR_INPUT, "database",
				 "must be a PostgreSQL URI (postgresql://...), got \"%.200s\"",
				 o->database);
	/* where the store is: the database, or SQLite in the data directory */
	h->data_dir = strdup(o->database ? o->database : o->data_dir ? o->data_dir : "./var");
	if (!h->listen || !h->data_dir)
		return error_set(err, PM_ERR_NOMEM, "", "out of memory");
	h->o.listen = h->listen;
	h->o.data_dir = h->data_dir;
	h->o.workers = o->workers ? o->workers : 1;
	if (!o->worker_memory)
		h->o.worker_memory = isolate_default_memory(h->o.workers);
	h->sync_max = h->o.workers;
	if ((st = parse_listen(h->listen, o->port, ss, v6, err)))
		return st;
	if (!o->token_file && !o->insecure && !is_loopback(ss))
		return error_set(err, PM_ERR_INPUT, "listen",
				 "refusing to listen on %s without access control: give a token "
				 "file (--token-file) or --insecure",
				 h->listen);
	if (o->token_file && (st = tokens_load(o->token_file, &h->tokens, err)))
		return st;
	return PM_OK; /* the store creates the data directory, private */
}

/* What one tenant may hold (issue 36). Without access control there is
 * one tenant, who may use the whole queue. */
static void tenant_limits(struct http_server *h)
{
	struct store_limits l = {.queued = h->o.queue_per_tenant,
				 .datasets = h->o.tenant_max_datasets,
				 .bytes = h->o.tenant_max_bytes};

	if (!l.queued && h->o.token_file)
		l.queued = h->o.queue_capacity > 1 ? h->o.queue_capacity / 2 : 1;
	store_set_limits(h->store, &l);
}

enum pm_status http_start(const struct http_options *o, struct http_server **out,
			  struct pm_error *err)
{
	struct http_server *h = calloc(1, sizeof *h);
	struct sockaddr_storage ss;
	enum pm_status st;
	int v6 = 0;

	*out = NULL;
	if (!h)
		return error_set(err, PM_ERR_NOMEM, "", "out of memory");
	pthread_mutex_init(&h->sync_mu, NULL);
	pthread_mutex_init(&h->tokens_mu, NULL);
	pthread_mutex_init(&h->drain_mu, NULL);
	pthread_cond_init(&h->drain_cv, NULL);
	st = configure(h, o, &ss, &v6, err);
	if (!st)
		st = enough_files(&h->o, err); /* before any side effect */
	if (!st && !(h->metrics = metrics_create()))
		st = error_set(err, PM_ERR_NOMEM, "", "out of memory");
	if (!st)
		st = store_open(h->data_dir, &h->store, err);
	if (!st)
		store_cache_limit(h->store, h->o.dataset_cache_mb << 20);
	if (!st)
		tenant_limits(h);
	if (!st)
		st = start_jobs(h, err);
	if (!st)
		st = http_daemon_start(h, &ss, err);
	if (st) {
		http_stop(h);
		return st;
	}
	*out = h;
	return PM_OK;
}

unsigned http_port(const struct http_server *h)
{
	return h ? gate_port(h->gate) : 0;
}

/* Waits until no request counted by *count is left, or until the deadline
 * (solver_now() seconds). */
static void wait_for(struct http_server *h, const size_t *count, double deadline)
{
	struct timespec ts;
	double left;

	pthread_mutex_lock(&h->drain_mu);
	while (*count && (left = deadline - solver_now()) > 0) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += (time_t)left;
		ts.tv_nsec += (long)((left - (double)(time_t)left) * 1e9);
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&h->drain_cv, &h->drain_mu, &ts);
	}
	pthread_mutex_unlock(&h->drain_mu);
}

/* No new connections; the requests in flight have the grace to finish.
 * MHD_stop_daemon cuts every connection at once, answered or not, so it
 * comes only after: an upload that got its 201 has it sent, one cut short
 * is dropped (on_completed) and stores nothing. A request handled when
 * the grace ends (its body in, a commit under way) still gets its answer
 * out, for up to HTTP_ANSWER_WAIT more seconds. */
static void drain(struct http_server *h)
{
	double deadline = solver_now() + h->o.grace;

	__atomic_store_n(&h->draining, 1, __ATOMIC_RELAXED);
	gate_stop(h->gate);
	if (!h->daemon)
		return;
	wait_for(h, &h->fresh, deadline);
	wait_for(h, &h->in_flight, deadline);
	pthread_mutex_lock(&h->drain_mu);
	/* synchronous solves see it in their progress callback */
	__atomic_store_n(&h->stopping, 1, __ATOMIC_RELAXED);
	if (h->in_flight && !h->o.quiet)
		fprintf(stderr, "pmaxent: the grace of %g s is over: %zu requests cut off\n",
			h->o.grace, h->in_flight - h->handling);
	pthread_mutex_unlock(&h->drain_mu);
	wait_for(h, &h->handling, solver_now() + HTTP_ANSWER_WAIT);
}

void http_stop(struct http_server *h)
{
	if (!h)
		return;
	drain(h);
	if (h->daemon)
		MHD_stop_daemon(h->daemon);
	gate_destroy(h->gate);
	/* running analyses are cancelled and re-queued in the store */
	jobs_destroy(h->jobs);
	store_close(h->store);
	metrics_destroy(h->metrics);
	tokens_put(h, h->tokens);
	pthread_mutex_destroy(&h->sync_mu);
	pthread_mutex_destroy(&h->tokens_mu);
	pthread_mutex_destroy(&h->drain_mu);
	pthread_cond_destroy(&h->drain_cv);
	free(h->listen);
	free(h->data_dir);
	free(h);
}
