/*
 * libFuzzer: one input = the raw bytes a client sends to `pmaxent serve`
 * (an in-process server on a free port, started once), then it stops
 * sending. The service must never crash, hang or leak, and what comes
 * back must be whole responses one after the other (a connection carries
 * as many requests as the input holds): each a status line
 * "HTTP/1.1 NNN", headers and Content-Length bytes of body, with no
 * second status line inside one (libmicrohttpd's own error pages once
 * sent two).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server.h"

static struct http_server *server;
static unsigned port;
static char data_dir[] = "/tmp/pmaxent-fuzz-http-XXXXXX";

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

/* The server's store goes with the run (libFuzzer ends by exit()): its
 * files may stay open, which Linux allows. */
static void remove_data_dir(void)
{
	nftw(data_dir, remove_one, 8, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct http_options o;
	struct pm_error err = {0};

	http_options_init(&o);
	o.port = 0;
	o.data_dir = mkdtemp(data_dir);
	if (o.data_dir)
		atexit(remove_data_dir);
	o.workers = 1;
	o.quiet = 1;
	o.header_timeout = 1;
	o.idle_timeout = 1;
	o.solve_time_limit = 0.5;
	o.analysis_time_limit = 0.5;
	if (!o.data_dir || http_start(&o, &server, &err)) {
		fprintf(stderr, "fuzz_http: cannot start the server: %s\n", err.message);
		exit(1);
	}
	port = http_port(server);
	return 0;
}

/* The first cap bytes of what the server sends until it closes; it must
 * close within 10 s. */
static size_t read_all(int fd, char *buf, size_t cap)
{
	char scratch[4096];
	size_t n = 0;
	time_t end = time(NULL) + 10;

	for (;;) {
		struct pollfd p = {fd, POLLIN, 0};
		ssize_t k;
		int r = poll(&p, 1, 1000);

		if (r < 0 && errno != EINTR) /* libFuzzer's timer interrupts */
			abort();
		if (r <= 0 && time(NULL) > end)
			abort(); /* the service hung on this input */
		if (r <= 0)
			continue;
		if (n < cap)
			k = recv(fd, buf + n, cap - n, 0);
		else
			k = recv(fd, scratch, sizeof scratch, 0);
		if (k <= 0)
			break;
		n += n < cap ? (size_t)k : 0;
	}
	return n;
}

/* A connection to the server from the next of 250 loopback addresses:
 * thousands of runs a second would otherwise exhaust one address's
 * ephemeral ports in TIME-WAIT (the client closes first). */
static int connect_server(void)
{
	static unsigned next;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	struct sockaddr_in from = {.sin_family = AF_INET};

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (int tries = 0; tries < 250; tries++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		from.sin_addr.s_addr = htonl(0x7f000100u + 1 + next++ % 250); /* 127.0.1.x */
		if (fd >= 0 && !bind(fd, (struct sockaddr *)&from, sizeof from) &&
		    !connect(fd, (struct sockaddr *)&a, sizeof a))
			return fd;
		if (fd >= 0)
			close(fd);
	}
	abort(); /* the service does not accept connections */
}

/* The length of the response at s (of n bytes left): its head and its
 * Content-Length bytes of body (none for 304, 204 and an answer to HEAD,
 * which is followed at once by the next status line or the end); 0 when
 * it is not one whole response. */
static size_t one_response(const char *s, size_t n)
{
	const char *end = memmem(s, n, "\r\n\r\n", 4), *cl;
	size_t head, body = 0;

	if (n < 12 || strncmp(s, "HTTP/1.1 ", 9) || !end)
		return 0;
	head = (size_t)(end - s) + 4;
	cl = memmem(s, head, "\r\nContent-Length: ", 18);
	if (cl && strncmp(s + 9, "304", 3) && strncmp(s + 9, "204", 3))
		body = strtoul(cl + 18, NULL, 10);
	/* an answer to HEAD: the length, no body (no body of this service
	 * begins with a status line) */
	if (head == n || !strncmp(s + head, "HTTP/1.1 ", 9))
		body = 0;
	if (head + body > n || memmem(s + head, body, "\r\nHTTP/1.", 10))
		return 0;
	return head + body;
}

/* Whether buf[0 .. n) is whole responses one after the other. */
static int whole_responses(const char *buf, size_t n)
{
	for (size_t at = 0, k; at < n; at += k)
		if (!(k = one_response(buf + at, n - at)))
			return 0;
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char buf[1 << 16];
	int fd = connect_server();
	size_t n;

	if (size)
		send(fd, data, size, MSG_NOSIGNAL);
	shutdown(fd, SHUT_WR);
	n = read_all(fd, buf, sizeof buf - 1);
	close(fd);
	buf[n] = '\0';
	if (n < sizeof buf - 1 && !whole_responses(buf, n))
		abort();
	return 0;
}
