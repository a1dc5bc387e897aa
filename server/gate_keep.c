/*
 * Keep-alive behind the gate (issue 36): a connection stays open between
 * requests, and every request on it passes the gate's checks
 * (gate_check_head) before libmicrohttpd reads a byte of it, exactly as
 * the first one did in gate.c.
 *
 * libmicrohttpd reads its connections with recv(). This file defines
 * recv() for the process, so that the dynamic linker binds
 * libmicrohttpd's calls to it (an executable's definition comes before
 * libc's): for a socket the gate handed over, MHD may read only the bytes
 * of requests already checked, and when those run out (the next request
 * begins) the next head is peeked (MSG_PEEK: the bytes stay in the socket)
 * and checked first: a well-framed one lets MHD read its head and body
 * (Content-Length), one that is not is answered with the gate's problem
 * response and the connection ends; one that is not complete yet waits
 * (SO_RCVLOWAT: poll wakes MHD only when more arrives) under the header
 * timeout. Every other socket (the database's, the gate's own peeks) is
 * read as recvfrom() would. A request pipelined behind another is thus
 * checked too, when MHD comes to it.
 */
#define _GNU_SOURCE /* POLLRDHUP */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "http_internal.h"

/* One connection handed to MHD, by its descriptor. */
struct keep {
	struct gate *g;	 /* NULL: not one of the gate's */
	const void *con; /* its MHD connection, once MHD started it */
	uint64_t left;	 /* bytes MHD may read before the next head is checked */
	double head_t0;	 /* when an incomplete next head was first seen; 0: none */
	int lowat;	 /* its SO_RCVLOWAT (0: the default, 1) */
};

/* By descriptor, for every gate of the process; made once, as large as
 * the descriptor limit then (gate_start raises it first). A descriptor
 * past it is served one request per connection (keep_handoff says so). */
static struct keep *table;
static size_t table_n;
static pthread_mutex_t table_mu = PTHREAD_MUTEX_INITIALIZER;

static struct keep *keep_of(int fd)
{
	struct keep *t = __atomic_load_n(&table, __ATOMIC_ACQUIRE);

	return t && fd >= 0 && (size_t)fd < table_n && t[fd].g ? &t[fd] : NULL;
}

int gate_keep_init(void)
{
	struct rlimit rl;
	size_t n = 65536;
	struct keep *t;

	pthread_mutex_lock(&table_mu);
	if (!table) {
		if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY &&
		    rl.rlim_cur > n && rl.rlim_cur < ((rlim_t)1 << 24))
			n = (size_t)rl.rlim_cur;
		if ((t = calloc(n, sizeof *t))) {
			table_n = n;
			__atomic_store_n(&table, t, __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&table_mu);
	return table ? 0 : -1;
}

int gate_keep_handoff(struct gate *g, int fd, uint64_t checked)
{
	int ok = table && fd >= 0 && (size_t)fd < table_n;

	pthread_mutex_lock(&table_mu);
	if (ok)
		table[fd] = (struct keep){g, NULL, checked, 0, 0};
	pthread_mutex_unlock(&table_mu);
	return ok ? 0 : -1;
}

void gate_keep_started(int fd, const void *con)
{
	pthread_mutex_lock(&table_mu);
	if (table && fd >= 0 && (size_t)fd < table_n && table[fd].g && !table[fd].con)
		table[fd].con = con;
	pthread_mutex_unlock(&table_mu);
}

void gate_keep_closed(int fd, const void *con)
{
	pthread_mutex_lock(&table_mu);
	/* only its own entry: the descriptor may be another connection's now */
	if (table && fd >= 0 && (size_t)fd < table_n && table[fd].con == con)
		table[fd] = (struct keep){0};
	pthread_mutex_unlock(&table_mu);
}

int gate_keep_alive(int fd)
{
	return keep_of(fd) != NULL;
}

/* The next head on k's connection: 1 checked (k->left set), 0 not
 * complete yet (wait), -1 refused (answered) or gone. */
static int next_head(struct keep *k, int fd)
{
	const struct gate_limits *l = gate_limits_of_gate(k->g);
	char buf[HTTP_MAX_HEAD + 1]; /* on MHD's connection thread's stack */
	size_t max = l->max_head < HTTP_MAX_HEAD ? l->max_head : HTTP_MAX_HEAD;
	struct gate_verdict v;
	ssize_t n;
	int rc = 0, lowat = 1;

	n = recvfrom(fd, buf, max + 1, MSG_PEEK | MSG_DONTWAIT, NULL, NULL);
	if (n <= 0)
		return n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) ? -1
											     : 0;
	gate_check_head(buf, (size_t)n, l, &v);
	if (!k->head_t0)
		k->head_t0 = solver_now();
	if (!v.complete && !v.status) {
		struct pollfd p = {fd, POLLRDHUP, 0};

		if (poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP)))
			v.status = 400, snprintf(v.detail, sizeof v.detail, "%s",
						 "the client stopped sending before the request "
						 "head was complete");
		else if (solver_now() - k->head_t0 > l->header_timeout)
			v.status = 408,
			snprintf(v.detail, sizeof v.detail,
				 "the request head did not arrive within %g seconds "
				 "(--header-timeout)",
				 l->header_timeout);
		else
			lowat = (int)n + 1; /* wake when more than this has arrived */
	}
	if (v.status) {
		gate_refuse(k->g, fd, v.status, v.detail, buf, (size_t)n, k->head_t0);
		rc = -1;
	} else if (v.complete) {
		k->left = v.head_len + v.body_len;
		k->head_t0 = 0;
		rc = 1;
	}
	if (lowat != (k->lowat ? k->lowat : 1)) /* a syscall only when it changes */
		setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof lowat);
	k->lowat = lowat;
	return rc;
}

ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	struct keep *k = (flags & MSG_PEEK) ? NULL : keep_of(fd);
	ssize_t n;
	int rc;

	if (!k)
		return recvfrom(fd, buf, len, flags, NULL, NULL);
	if (!k->left && (rc = next_head(k, fd)) <= 0) {
		if (rc < 0)
			return 0; /* refused or gone: MHD closes the connection */
		errno = EAGAIN;
		return -1;
	}
	n = recvfrom(fd, buf, len < k->left ? len : (size_t)k->left, flags, NULL, NULL);
	if (n > 0)
		k->left -= (uint64_t)n;
	return n;
}
