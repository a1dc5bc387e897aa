/*
 * The front door of `pmaxent serve`: the listening socket is ours, not
 * libmicrohttpd's. A connection is accepted here, counted against the
 * total and per-address limits, and its request head is read by peeking
 * (recv with MSG_PEEK, so the bytes stay in the socket for MHD), under a
 * deadline. A head that is complete and well framed is handed to MHD
 * (MHD_add_connection, by the callback of gate_start); everything else is
 * answered here with one problem+json response and closed: over a limit
 * (503, 429), too slow (408), malformed (400), oversize (414, 431, 413),
 * chunked (411), another HTTP version (505). So libmicrohttpd's own error
 * pages (HTML, and for a bad Content-Length two status lines in one
 * response) are never reached, and a slow client costs a file descriptor
 * and a slot in one poll set, not a thread.
 *
 * A head that is not complete yet is not re-peeked until more bytes have
 * arrived: SO_RCVLOWAT is set to one byte more than was seen, which
 * poll() honours, so a slow client does not make the loop spin.
 */
#define _GNU_SOURCE /* accept4, pipe2, POLLRDHUP */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http_internal.h"

/* A client that was answered here gets this long to read the answer
 * while its remaining bytes are drained, so that closing does not reset
 * the connection under the answer. */
#define LINGER_SECONDS 1.0
/* Connections accepted per turn of the loop, so that the pending ones
 * are served between bursts. */
#define ACCEPT_BURST 64

/* One connection whose head is being read, or that is being answered. */
struct pend {
	int fd;
	struct sockaddr_storage addr;
	socklen_t alen;
	double t0, deadline;
	int closing; /* answered: draining until EOF or the deadline */
};

/* Connections open from one address (pending here and served by MHD). */
struct addr_count {
	uint8_t key[16];
	size_t n;
};

struct gate {
	struct gate_limits l;
	gate_handoff handoff;
	void *ctx;
	struct metrics *metrics;
	int quiet;
	int lfd, wake[2], spare;
	unsigned port;
	pthread_t thread;
	int running;
	char *buf; /* max_head + 1 bytes of peeked head */
	/* the gate thread's own */
	struct pend *pend;
	struct pollfd *pfd;
	size_t n_pend, cap_pend;
	/* shared with MHD's threads (gate_served) */
	pthread_mutex_t mu;
	struct addr_count *addrs;
	size_t n_addrs, cap_addrs, total;
};

/* ---- per-address counts -------------------------------------------------- */

/* The address as 16 bytes: IPv6, or IPv4 as IPv4-mapped IPv6, so that
 * ::ffff:127.0.0.2 and 127.0.0.2 are one client. */
static void addr_key(const struct sockaddr *sa, uint8_t key[16])
{
	memset(key, 0, 16);
	if (sa->sa_family == AF_INET) {
		key[10] = key[11] = 0xff;
		memcpy(key + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		memcpy(key, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	}
}

/* The count of key; NULL if it has none (g->mu held). */
static struct addr_count *addr_find(struct gate *g, const uint8_t key[16])
{
	for (size_t i = 0; i < g->n_addrs; i++)
		if (!memcmp(g->addrs[i].key, key, 16))
			return &g->addrs[i];
	return NULL;
}

/* Adds delta to key's count and the total (g->mu held); a count that
 * drops to 0 is removed. -1 when out of memory. */
static int addr_add(struct gate *g, const uint8_t key[16], int delta)
{
	struct addr_count *a = addr_find(g, key), *grown;

	if (!a && delta < 0)
		return 0; /* never counted (should not happen): nothing to undo */
	if (!a) {
		if (g->n_addrs == g->cap_addrs) {
			size_t cap = g->cap_addrs ? 2 * g->cap_addrs : 64;

			if (!(grown = realloc(g->addrs, cap * sizeof *grown)))
				return -1;
			g->addrs = grown;
			g->cap_addrs = cap;
		}
		a = &g->addrs[g->n_addrs++];
		memcpy(a->key, key, 16);
		a->n = 0;
	}
	a->n = delta < 0 && a->n < (size_t)-delta ? 0 : a->n + (size_t)delta;
	g->total = delta < 0 && g->total < (size_t)-delta ? 0 : g->total + (size_t)delta;
	if (!a->n)
		*a = g->addrs[--g->n_addrs];
	return 0;
}

void gate_served(struct gate *g, const struct sockaddr *addr, int delta)
{
	uint8_t key[16];

	if (!g || !addr)
		return;
	addr_key(addr, key);
	pthread_mutex_lock(&g->mu);
	addr_add(g, key, delta);
	pthread_mutex_unlock(&g->mu);
}

/* Counts a new connection if the limits allow it: 0, or the status of the
 * refusal (503 over the total, 429 over the address's share) with the
 * detail. */
static unsigned admit(struct gate *g, const struct sockaddr *addr, char *detail, size_t size)
{
	struct addr_count *a;
	unsigned status = 0;
	uint8_t key[16];

	addr_key(addr, key);
	pthread_mutex_lock(&g->mu);
	a = addr_find(g, key);
	if (g->total >= g->l.max_connections) {
		status = 503;
		snprintf(detail, size,
			 "the service has %zu connections open, its limit (--max-connections)",
			 g->total);
	} else if (a && a->n >= g->l.max_per_address) {
		status = 429;
		snprintf(detail, size,
			 "%zu connections from your address are open, the limit per address "
			 "(--max-connections-per-address)",
			 a->n);
	} else if (addr_add(g, key, 1)) {
		status = 503;
		snprintf(detail, size, "out of memory");
	}
	pthread_mutex_unlock(&g->mu);
	return status;
}

/* ---- the request head ------------------------------------------------------ */

/* tchar of RFC 9110: the characters of a method or a header name. */
static int is_tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

static int verdict(struct gate_verdict *v, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int verdict(struct gate_verdict *v, unsigned status, const char *fmt, ...)
{
	va_list ap;

	v->complete = 1;
	v->status = status;
	va_start(ap, fmt);
	vsnprintf(v->detail, sizeof v->detail, fmt, ap);
	va_end(ap);
	return -1;
}

/* The request line "METHOD SP /target SP HTTP/1.x" (without its line
 * end); 0, or -1 with the verdict. */
static int check_request_line(const char *s, size_t n, const struct gate_limits *l,
			      struct gate_verdict *v)
{
	size_t m = 0, t, tn;

	while (m < n && m < 32 && is_tchar((unsigned char)s[m]))
		m++;
	if (!m || m == n || s[m] != ' ')
		return verdict(v, 400, "malformed request line: expected 'METHOD /path HTTP/1.1'");
	t = m + 1;
	for (tn = 0; t + tn < n && s[t + tn] != ' '; tn++)
		if ((unsigned char)s[t + tn] <= 0x20 || (unsigned char)s[t + tn] >= 0x7f)
			return verdict(v, 400,
				       "the request target has a byte that is not "
				       "printable ASCII (percent-encode it)");
	if (tn > l->max_uri)
		return verdict(v, 414, "the request target is %zu bytes, over the limit of %zu", tn,
			       l->max_uri);
	if (!tn || s[t] != '/')
		return verdict(v, 400, "the request target must be a path starting with '/'");
	if (t + tn + 9 != n || memcmp(s + t + tn, " HTTP/", 6))
		return verdict(v, 400, "malformed request line: expected 'METHOD /path HTTP/1.1'");
	s += t + tn + 6;
	if (s[0] < '0' || s[0] > '9' || s[1] != '.' || s[2] < '0' || s[2] > '9')
		return verdict(v, 400, "malformed HTTP version");
	if (s[0] != '1' || s[2] > '1')
		return verdict(v, 505, "HTTP/%c.%c is not supported; use HTTP/1.1 or HTTP/1.0",
			       s[0], s[2]);
	return 0;
}

/* What the header fields said that matters for framing. */
struct head_fields {
	int host, length, http11, auth;
	uint64_t content_length;
};

static int name_is(const char *s, size_t n, const char *name)
{
	return strlen(name) == n && !strncasecmp(s, name, n);
}

/* Content-Length: 1*DIGIT, once; 0 or -1 with the verdict. */
static int check_length(const char *val, size_t vn, const struct gate_limits *l,
			struct head_fields *f, struct gate_verdict *v)
{
	uint64_t x = 0;

	if (f->length++)
		return verdict(v, 400, "more than one Content-Length header");
	if (!vn)
		return verdict(v, 400, "Content-Length is empty");
	for (size_t i = 0; i < vn; i++) {
		if (val[i] < '0' || val[i] > '9')
			return verdict(v, 400, "Content-Length must be a decimal number of bytes");
		if (x > (UINT64_MAX - 9) / 10)
			return verdict(v, 413,
				       "the request body is over the limit of %" PRIu64 " bytes",
				       l->max_body);
		x = 10 * x + (uint64_t)(val[i] - '0');
	}
	if (x > l->max_body)
		return verdict(v, 413,
			       "the request body (%" PRIu64 " bytes) is over the limit of %" PRIu64
			       " bytes",
			       x, l->max_body);
	f->content_length = x;
	return 0;
}

/* One header field line (without its line end); 0 or -1 with the verdict. */
static int check_field(const char *s, size_t n, const struct gate_limits *l, struct head_fields *f,
		       struct gate_verdict *v)
{
	size_t k = 0, a, b;

	if (n && (s[0] == ' ' || s[0] == '\t'))
		return verdict(v, 400, "a header line starts with white space (obsolete folding)");
	while (k < n && is_tchar((unsigned char)s[k]))
		k++;
	if (!k || k == n || s[k] != ':')
		return verdict(v, 400, "malformed header line: expected 'Name: value'");
	for (size_t i = k + 1; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return verdict(v, 400, "header %.*s has a control character", (int)k, s);
	}
	for (a = k + 1; a < n && (s[a] == ' ' || s[a] == '\t'); a++)
		;
	/* libmicrohttpd keeps trailing white space in a value (and refuses a
	 * Content-Length with it): so does the gate, which must refuse all
	 * that it would */
	b = n;
	if (name_is(s, k, "Transfer-Encoding"))
		return verdict(v, 411,
			       "send the body with a Content-Length header; "
			       "Transfer-Encoding is not accepted");
	if (name_is(s, k, "Content-Length"))
		return check_length(s + a, b - a, l, f, v);
	if (name_is(s, k, "Host") && f->host++)
		return verdict(v, 400, "more than one Host header");
	/* libmicrohttpd would hand authenticate() the first of two: which
	 * one a proxy and this service each believe must not differ */
	if (name_is(s, k, "Authorization") && f->auth++)
		return verdict(v, 400, "more than one Authorization header");
	return 0;
}

/* The end of the line starting at s[i] (the index of its LF), or n. A CR
 * is allowed only right before the LF. */
static size_t line_end(const char *s, size_t i, size_t n, int *bare_cr)
{
	const char *lf = memchr(s + i, '\n', n - i);
	size_t e = lf ? (size_t)(lf - s) : n;
	const char *cr = memchr(s + i, '\r', e - i);

	*bare_cr = cr && (size_t)(cr - s) + 1 != e;
	return e;
}

void gate_check_head(const char *s, size_t n, const struct gate_limits *l, struct gate_verdict *v)
{
	struct head_fields f = {0};
	size_t i = 0, fields = 0;
	int bare_cr;

	memset(v, 0, sizeof *v);
	while (i < n) {
		size_t e = line_end(s, i, n, &bare_cr), len;

		if (bare_cr)
			return (void)verdict(v, 400, "a CR that does not end a line");
		if (e == n)
			break; /* the line is not complete yet */
		len = e - i - (e > i && s[e - 1] == '\r');
		if (i == 0 && check_request_line(s, len, l, v))
			return;
		if (i == 0)
			f.http11 = s[len - 1] == '1';
		if (i > 0 && len == 0) { /* the empty line: the head is complete */
			v->complete = 1;
			v->head_len = e + 1;
			v->body_len = f.content_length;
			if (v->head_len > l->max_head)
				verdict(v, 431, "the request head is over the limit of %zu bytes",
					l->max_head);
			else if (f.http11 && !f.host)
				verdict(v, 400, "an HTTP/1.1 request needs a Host header");
			return;
		}
		if (i > 0 && (++fields > l->max_headers || check_field(s + i, len, l, &f, v))) {
			if (!v->status)
				verdict(v, 431, "more than %zu header fields", l->max_headers);
			return;
		}
		i = e + 1;
	}
	/* incomplete: too long already, or wait for more */
	if (i == 0 && n > l->max_uri + 64)
		verdict(v, 414, "the request line is over the limit of %zu bytes", l->max_uri);
	else if (n > l->max_head)
		verdict(v, 431, "the request head is over the limit of %zu bytes", l->max_head);
}

/* ---- answering ----------------------------------------------------------- */

/* Writes the problem response on fd (non-blocking, as much as the socket
 * takes: a few hundred bytes always fit) and stops writing. */
static void send_problem(int fd, unsigned status, const char *detail)
{
	char *body = http_problem_text(status, detail), head[256];
	size_t blen = body ? strlen(body) : 0;
	int n;

	n = snprintf(head, sizeof head,
		     "HTTP/1.1 %u %s\r\nContent-Type: application/problem+json\r\n"
		     "Content-Length: %zu\r\nX-Content-Type-Options: nosniff\r\n"
		     "Connection: close\r\n%s\r\n",
		     status, http_reason(status), blen + 1,
		     status == 503 || status == 429 ? "Retry-After: 1\r\n" : "");
	if (n > 0 && send(fd, head, (size_t)n, MSG_NOSIGNAL | MSG_MORE) == n && body)
		if (send(fd, body, blen, MSG_NOSIGNAL | MSG_MORE) == (ssize_t)blen)
			send(fd, "\n", 1, MSG_NOSIGNAL);
	free(body);
	shutdown(fd, SHUT_WR);
}

/* Reads and drops what the client sent; 1 once it is gone (EOF, error). */
static int drain(int fd)
{
	char scratch[4096];
	ssize_t n;

	/* recvfrom, not recv: recv is gate_keep.c's, which would check a head */
	while ((n = recvfrom(fd, scratch, sizeof scratch, MSG_DONTWAIT, NULL, NULL)) > 0)
		;
	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* The method of a head, for the log ("-" when it has none yet). */
static void head_method(const char *buf, size_t n, char *out, size_t size)
{
	size_t m = 0;

	while (m < n && m + 1 < size && buf[m] > ' ' && buf[m] < 0x7f)
		m++;
	memcpy(out, m ? buf : "-", m ? m : 1);
	out[m ? m : 1] = '\0';
}

static void record(struct gate *g, const char *method, unsigned status, double t0)
{
	double dt = solver_now() - t0;

	metrics_record(g->metrics, ROUTE_NONE, method, status, dt);
	if (!g->quiet)
		metrics_log(method, "-", status, 0, dt, NULL);
}

/* Answers a pending connection and lets it drain for LINGER_SECONDS. */
static void answer(struct gate *g, struct pend *p, unsigned status, const char *detail,
		   const char *method)
{
	int one = 1;

	send_problem(p->fd, status, detail);
	setsockopt(p->fd, SOL_SOCKET, SO_RCVLOWAT, &one, sizeof one);
	p->closing = 1;
	p->deadline = solver_now() + LINGER_SECONDS;
	record(g, method, status, p->t0);
}

void gate_refuse(struct gate *g, int fd, unsigned status, const char *detail, const char *buf,
		 size_t n, double t0)
{
	char method[24];

	head_method(buf, n, method, sizeof method);
	send_problem(fd, status, detail);
	drain(fd);
	record(g, method, status, t0);
}

const struct gate_limits *gate_limits_of_gate(const struct gate *g)
{
	return &g->l;
}

/* ---- pending connections ------------------------------------------------- */

/* Closes pending connection i and releases its count. */
static void pend_close(struct gate *g, size_t i)
{
	gate_served(g, (const struct sockaddr *)&g->pend[i].addr, -1);
	close(g->pend[i].fd);
	g->pend[i] = g->pend[--g->n_pend];
}

static int pend_push(struct gate *g, int fd, const struct sockaddr_storage *ss, socklen_t len)
{
	struct pend *grown;
	struct pollfd *pg;

	if (g->n_pend == g->cap_pend) {
		size_t cap = g->cap_pend ? 2 * g->cap_pend : 64;

		if (!(grown = realloc(g->pend, cap * sizeof *grown)))
			return -1;
		g->pend = grown;
		if (!(pg = realloc(g->pfd, (cap + 2) * sizeof *pg)))
			return -1;
		g->pfd = pg;
		g->cap_pend = cap;
	}
	g->pend[g->n_pend] = (struct pend){fd, *ss, len, solver_now(), 0, 0};
	g->pend[g->n_pend].deadline = g->pend[g->n_pend].t0 + g->l.header_timeout;
	g->n_pend++;
	return 0;
}

/*
 * Peeks at pending connection i's head (revents: what poll saw). Returns 1
 * when it is no longer pending here (handed to MHD, or closed), 0 when it
 * stays (incomplete, or answered and draining).
 */
static int pend_read(struct gate *g, size_t i, short revents)
{
	struct pend *p = &g->pend[i];
	struct gate_verdict v;
	char method[24];
	ssize_t n;
	int lowat;

	if (p->closing) {
		if (!drain(p->fd))
			return 0;
		pend_close(g, i);
		return 1;
	}
	n = recv(p->fd, g->buf, g->l.max_head + 1, MSG_PEEK | MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return 0;
	if (n <= 0) { /* gone before a whole head: nothing to answer */
		pend_close(g, i);
		return 1;
	}
	gate_check_head(g->buf, (size_t)n, &g->l, &v);
	if (!v.complete && (revents & (POLLRDHUP | POLLHUP))) {
		/* the client stopped sending: the head stays incomplete */
		head_method(g->buf, (size_t)n, method, sizeof method);
		answer(g, p, 400, "the client stopped sending before the request head was complete",
		       method);
		return 0;
	}
	if (!v.complete) {
		lowat = (int)n + 1; /* wake when more than this has arrived */
		setsockopt(p->fd, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof lowat);
		return 0;
	}
	if (v.status) {
		head_method(g->buf, (size_t)n, method, sizeof method);
		answer(g, p, v.status, v.detail, method);
		return 0;
	}
	lowat = 1;
	setsockopt(p->fd, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof lowat);
	/* MHD counts it from now on (gate_served from its notifications);
	 * its next requests are checked as it reads them (gate_keep.c) */
	gate_keep_handoff(g, p->fd, v.head_len + v.body_len);
	gate_served(g, (const struct sockaddr *)&p->addr, -1);
	g->handoff(g->ctx, p->fd, (const struct sockaddr *)&p->addr, p->alen);
	g->pend[i] = g->pend[--g->n_pend];
	return 1;
}

/* Answers 408 to heads past their deadline and closes drained answers. */
static void pend_expire(struct gate *g, double now)
{
	for (size_t i = 0; i < g->n_pend;) {
		struct pend *p = &g->pend[i];
		char detail[128];

		if (p->deadline > now) {
			i++;
		} else if (p->closing) {
			pend_close(g, i);
		} else {
			snprintf(detail, sizeof detail,
				 "the request head did not arrive within %g seconds "
				 "(--header-timeout)",
				 g->l.header_timeout);
			answer(g, p, 408, detail, "-");
			i++;
		}
	}
}

/* ---- accepting ------------------------------------------------------------ */

/* Out of file descriptors: the spare one is given up to accept the
 * connection and tell it so, rather than leave it in the backlog. */
static void refuse_emfile(struct gate *g)
{
	int fd;

	if (g->spare < 0)
		return;
	close(g->spare);
	fd = accept4(g->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd >= 0) {
		send_problem(fd, 503, "the service is out of file descriptors");
		drain(fd);
		close(fd);
		record(g, "-", 503, solver_now());
	}
	g->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

static void accept_some(struct gate *g)
{
	for (int k = 0; k < ACCEPT_BURST; k++) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof ss;
		char detail[160];
		unsigned status;
		int fd =
		    accept4(g->lfd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE)
				refuse_emfile(g);
			return; /* EAGAIN, or an error the next turn retries */
		}
		status = admit(g, (struct sockaddr *)&ss, detail, sizeof detail);
		if (!status && pend_push(g, fd, &ss, len)) {
			gate_served(g, (struct sockaddr *)&ss, -1);
			status = 503;
			snprintf(detail, sizeof detail, "out of memory");
		} else if (!status) {
			/* the head has often arrived with the connection: no poll
			 * round for it */
			pend_read(g, g->n_pend - 1, 0);
		}
		if (status) {
			/* no slot to linger in: answer, drop what arrived, close */
			send_problem(fd, status, detail);
			drain(fd);
			close(fd);
			record(g, "-", status, solver_now());
		}
	}
}

/* ---- the loop ------------------------------------------------------------- */

/* Milliseconds until the nearest deadline (-1: none). */
static int next_timeout(const struct gate *g, double now)
{
	double soonest = -1;

	for (size_t i = 0; i < g->n_pend; i++)
		if (soonest < 0 || g->pend[i].deadline < soonest)
			soonest = g->pend[i].deadline;
	if (soonest < 0)
		return -1;
	return soonest <= now ? 0 : (int)((soonest - now) * 1e3) + 1;
}

static void *gate_main(void *arg)
{
	struct gate *g = arg;

	for (;;) {
		size_t n = g->n_pend;

		g->pfd[0] = (struct pollfd){g->wake[0], POLLIN, 0};
		g->pfd[1] = (struct pollfd){g->lfd, POLLIN, 0};
		for (size_t i = 0; i < n; i++)
			g->pfd[i + 2] = (struct pollfd){g->pend[i].fd, POLLIN | POLLRDHUP, 0};
		if (poll(g->pfd, n + 2, next_timeout(g, solver_now())) < 0 && errno != EINTR)
			break;
		if (g->pfd[0].revents)
			break;
		/* backwards: pend_read may move the last entry into slot i */
		for (size_t i = n; i-- > 0;)
			if (g->pfd[i + 2].revents)
				pend_read(g, i, g->pfd[i + 2].revents);
		pend_expire(g, solver_now());
		if (g->pfd[1].revents)
			accept_some(g);
	}
	return NULL;
}

/* ---- start and stop --------------------------------------------------------- */

static enum pm_status listen_on(struct gate *g, const struct sockaddr_storage *ss,
				struct pm_error *err)
{
	socklen_t len =
	    ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
	struct sockaddr_storage bound;
	int one = 1;

	g->lfd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (g->lfd < 0)
		return error_set(err, PM_ERR_IO, "listen", "cannot create a socket: %s",
				 strerror(errno));
	setsockopt(g->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (ss->ss_family == AF_INET6)
		setsockopt(g->lfd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
	if (bind(g->lfd, (const struct sockaddr *)ss, len) || listen(g->lfd, 511))
		return error_set(err, PM_ERR_IO, "listen", "cannot listen: %s", strerror(errno));
	len = sizeof bound;
	getsockname(g->lfd, (struct sockaddr *)&bound, &len);
	g->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
						    : ((struct sockaddr_in *)&bound)->sin_port);
	return PM_OK;
}

enum pm_status gate_start(const struct sockaddr_storage *ss, const struct gate_limits *l,
			  gate_handoff handoff, void *ctx, struct metrics *m, int quiet,
			  struct gate **out, struct pm_error *err)
{
	struct gate *g = calloc(1, sizeof *g);
	enum pm_status st;

	*out = NULL;
	if (!g)
		return error_set(err, PM_ERR_NOMEM, "", "out of memory");
	g->l = *l;
	g->handoff = handoff;
	g->ctx = ctx;
	g->metrics = m;
	g->quiet = quiet;
	g->lfd = g->wake[0] = g->wake[1] = -1;
	pthread_mutex_init(&g->mu, NULL);
	g->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
	g->buf = malloc(l->max_head + 1);
	g->pfd = malloc(2 * sizeof *g->pfd);
	gate_keep_init(); /* without it, one request per connection */
	if (!g->buf || !g->pfd || pipe2(g->wake, O_CLOEXEC | O_NONBLOCK))
		st = error_set(err, PM_ERR_NOMEM, "", "out of memory");
	else
		st = listen_on(g, ss, err);
	if (!st && pthread_create(&g->thread, NULL, gate_main, g))
		st = error_set(err, PM_ERR_INTERNAL, "", "cannot start the accepting thread");
	g->running = !st;
	if (st) {
		gate_destroy(g);
		return st;
	}
	*out = g;
	return PM_OK;
}

unsigned gate_port(const struct gate *g)
{
	return g ? g->port : 0;
}

void gate_stop(struct gate *g)
{
	if (!g || !g->running)
		return;
	if (write(g->wake[1], "x", 1) < 0) {
		/* the pipe is empty and open: cannot fail; nothing else to do */
	}
	pthread_join(g->thread, NULL);
	g->running = 0;
	close(g->lfd);
	g->lfd = -1;
	while (g->n_pend)
		pend_close(g, g->n_pend - 1);
}

void gate_destroy(struct gate *g)
{
	if (!g)
		return;
	gate_stop(g);
	if (g->lfd >= 0)
		close(g->lfd);
	for (int i = 0; i < 2; i++)
		if (g->wake[i] >= 0)
			close(g->wake[i]);
	if (g->spare >= 0)
		close(g->spare);
	pthread_mutex_destroy(&g->mu);
	free(g->addrs);
	free(g->pend);
	free(g->pfd);
	free(g->buf);
	free(g);
}
