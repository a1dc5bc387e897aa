/*
 * The gate (server/gate.c): the framing of request heads, case by case
 * (tests/data/gate_heads.txt), and end to end through a real socket:
 * every refusal is one well-formed problem+json response; a client that
 * holds many slow connections does not stop another from being served
 * (per-address limit), the total limit answers 503, a head that arrives
 * too slowly gets 408 while its sender keeps trickling, and a silent
 * connection is closed.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#define _GNU_SOURCE	  /* strcasestr */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>

#include "http_client.h"
#include "http_internal.h"

static const struct gate_limits limits = {1024, 64, 10, 16384, 8192, 100, 1000};

/* ---- heads, data-driven ------------------------------------------------- */

/* "\r" "\n" "\t" "\xHH" and "\\" in a case file's head. */
static size_t unescape(const char *s, char *out)
{
	size_t n = 0;

	for (; *s; s++) {
		if (*s != '\\') {
			out[n++] = *s;
			continue;
		}
		s++;
		if (*s == 'r')
			out[n++] = '\r';
		else if (*s == 'n')
			out[n++] = '\n';
		else if (*s == 't')
			out[n++] = '\t';
		else if (*s == 'x') {
			out[n++] = (char)strtol((char[]){s[1], s[2], 0}, NULL, 16);
			s += 2;
		} else
			out[n++] = *s;
	}
	return n;
}

/* Lines "STATUS|HEAD|DETAIL-PART": STATUS 0 for a well-framed head, -1
 * for one that is not complete yet. */
static void test_heads(void)
{
	char path[512], line[4096], head[4096];
	FILE *f;
	int cases = 0;

	snprintf(path, sizeof path, "%s/gate_heads.txt", data_dir());
	f = fopen(path, "r");
	CHECK(f != NULL);
	while (f && fgets(line, sizeof line, f)) {
		char *status = strtok(line, "|"), *raw = strtok(NULL, "|"),
		     *part = strtok(NULL, "\n");
		struct gate_verdict v;
		int want;
		size_t n;

		if (!status || !raw || line[0] == '#')
			continue;
		want = atoi(status);
		n = unescape(raw, head);
		gate_check_head(head, n, &limits, &v);
		if ((want < 0 && v.complete) ||
		    (want >= 0 && (!v.complete || v.status != (unsigned)want)))
			fprintf(stderr, "head %s: expected %d, got complete %d status %u (%s)\n",
				raw, want, v.complete, v.status, v.detail);
		CHECK(want < 0 ? !v.complete : v.complete && v.status == (unsigned)want);
		if (part && *part)
			CHECK_CONTAINS(v.detail, part);
		cases++;
	}
	if (f)
		fclose(f);
	CHECK(cases >= 30);
}

/* Long heads, built here. */
static void test_sizes(void)
{
	size_t n = 20000;
	char *big = malloc(n + 64);
	struct gate_verdict v;

	memcpy(big, "GET /", 5);
	memset(big + 5, 'a', n);
	gate_check_head(big, n, &limits, &v); /* no line end within the limit: 414 */
	CHECK(v.complete && v.status == 414);
	memcpy(big, "GET / HTTP/1.1\r\nHost: x\r\nX: ", 28);
	memset(big + 28, 'b', n - 28);
	gate_check_head(big, n, &limits, &v);
	CHECK(v.complete && v.status == 431);
	CHECK_CONTAINS(v.detail, "16384");
	{
		/* 101 header fields */
		char *p = big + sprintf(big, "GET / HTTP/1.1\r\nHost: x\r\n");

		for (int i = 0; i < 100; i++)
			p += sprintf(p, "X%d: y\r\n", i);
		p += sprintf(p, "\r\n");
		gate_check_head(big, (size_t)(p - big), &limits, &v);
		CHECK(v.complete && v.status == 431);
		CHECK_CONTAINS(v.detail, "100 header fields");
	}
	free(big);
}

/* ---- through a socket ---------------------------------------------------- */

/* A connection from src (127.0.0.x) to the port, non-blocking after
 * connect; -1 on failure. */
static int connect_from(const char *src, unsigned port)
{
	struct sockaddr_in a = {.sin_family = AF_INET}, to = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	inet_pton(AF_INET, src, &a.sin_addr);
	to.sin_port = htons((uint16_t)port);
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) ||
	    connect(fd, (struct sockaddr *)&to, sizeof to)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	fcntl(fd, F_SETFL, O_NONBLOCK);
	return fd;
}

/* Whatever fd has received within ms milliseconds, until EOF. */
static struct resp read_answer(int fd, int ms)
{
	size_t n = 0, cap = 8192;
	char *raw = malloc(cap + 1);
	struct resp r = {0};
	double end = solver_now() + ms / 1e3;
	ssize_t k = 1;

	while (k != 0 && solver_now() < end) {
		struct pollfd p = {fd, POLLIN, 0};

		if (poll(&p, 1, 50) <= 0)
			continue;
		k = recv(fd, raw + n, cap - n, 0);
		if (k < 0 && errno != EAGAIN)
			break;
		if (k > 0 && (n += (size_t)k) == cap)
			raw = realloc(raw, (cap *= 2) + 1);
	}
	raw[n] = '\0';
	parse_response(raw, n, &r);
	return r;
}

/* One well-formed problem response: one status line, its body whole. */
static void check_one_problem(const struct resp *r, int status)
{
	char buf[64];

	check_problem(r, status, NULL, "");
	CHECK(r->head && !strstr(r->head + 1, "HTTP/1.1 "));
	/* the body is the JSON document, exactly Content-Length bytes */
	CHECK(hdr(r, "Content-Length", buf, sizeof buf) && (size_t)atol(buf) == r->len);
	CHECK_STR(hdr(r, "Connection", buf, sizeof buf), "close");
}

/* Bad framing through the socket: each answer one problem document. */
static void test_framing(unsigned port)
{
	static const struct {
		const char *req;
		int status;
	} cases[] = {
	    {"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n",
	     413},
	    {"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n", 400},
	    {"POST /v1/solve HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 411},
	    {"GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n", 505},
	    {"GARBAGE\r\n\r\n", 400},
	    {"GET /healthz HTTP/1.1\r\n\r\n", 400},
	    {"GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n", 400},
	};
	struct resp r;

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		r = roundtrip(port, cases[i].req, strlen(cases[i].req));
		check_one_problem(&r, cases[i].status);
		resp_free(&r);
	}
}

/* Reads one whole response from fd (its head, then Content-Length
 * bytes), leaving the connection open; within ms milliseconds. */
static struct resp read_one(int fd, int ms)
{
	size_t n = 0, cap = 65536, want = (size_t)-1;
	char *raw = malloc(cap + 1), *end;
	struct resp r = {0};
	double stop = solver_now() + ms / 1e3;

	while (n < want && solver_now() < stop) {
		struct pollfd p = {fd, POLLIN, 0};
		ssize_t k;

		if (poll(&p, 1, 50) <= 0)
			continue;
		if ((k = recv(fd, raw + n, cap - n, 0)) <= 0)
			break;
		n += (size_t)k;
		raw[n] = '\0';
		if (want == (size_t)-1 && (end = strstr(raw, "\r\n\r\n"))) {
			char *cl = strcasestr(raw, "Content-Length: ");

			want =
			    (size_t)(end + 4 - raw) + (cl && cl < end ? (size_t)atol(cl + 16) : 0);
		}
	}
	raw[n] = '\0';
	parse_response(raw, n, &r);
	return r;
}

/* Sends req n times in one write and counts the 200s that come back
 * (within 10 s). */
static int count_answers(int fd, const char *req, int n)
{
	size_t len = strlen(req), cap = 1 << 20, have = 0;
	char *out = malloc(n * len + 1), *in = malloc(cap + 1);
	int got = 0;
	double stop = solver_now() + 10;

	for (int i = 0; i < n; i++)
		memcpy(out + i * len, req, len);
	CHECK(send(fd, out, n * len, MSG_NOSIGNAL) == (ssize_t)(n * len));
	while (got < n && have < cap && solver_now() < stop) {
		struct pollfd p = {fd, POLLIN, 0};
		ssize_t k;

		if (poll(&p, 1, 50) <= 0)
			continue;
		if ((k = recv(fd, in + have, cap - have, 0)) <= 0)
			break;
		have += (size_t)k;
		in[have] = '\0';
		got = 0;
		for (const char *at = in; (at = strstr(at, "HTTP/1.1 200 ")); at++)
			got++;
	}
	free(out);
	free(in);
	return got;
}

static int send_all(int fd, const char *s)
{
	size_t n = strlen(s);

	return send(fd, s, n, MSG_NOSIGNAL) == (ssize_t)n ? 0 : -1;
}

/* Keep-alive (gate_keep.c): requests after the first on a connection are
 * answered on it, and each passes the gate's checks: a bad head behind a
 * good one (pipelined, or sent later) gets the gate's problem document
 * and the connection ends; a head that trickles past --header-timeout
 * gets 408. */
static void test_keep_alive(void)
{
	static const char ok[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
	static const char *const bad[] = {
	    "GET /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
	    "GET /healthz HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n",
	    "GET /healthz HTTP/1.1\r\nHost: x\r\nX: a\rb\r\n\r\n",
	    "GET /healthz HTTP/1.1\r\nHost: x\r\n Folded: y\r\n\r\n",
	};
	static const int status[] = {411, 400, 400, 400};
	char *dir = temp_dir(), buf[64], two[512], *second;
	struct http_options o;
	struct http_server *h;
	struct resp r, p;
	unsigned port;
	int fd;

	http_options_init(&o);
	o.header_timeout = 1;
	h = start_with(dir, &o);
	port = http_port(h);
	fd = connect_from("127.0.0.1", port);
	for (int i = 0; i < 3; i++) { /* three requests, one connection */
		CHECK(send_all(fd, ok) == 0);
		r = read_one(fd, 5000);
		CHECK(r.status == 200 && !hdr(&r, "Connection", buf, sizeof buf));
		resp_free(&r);
	}
	/* a body counted: a POST, then a GET on the same connection */
	CHECK(send_all(fd, "POST /v1/solve HTTP/1.1\r\nHost: x\r\nContent-Type: "
			   "application/json\r\nContent-Length: 2\r\n\r\n{}") == 0);
	r = read_one(fd, 5000);
	check_problem(&r, 422, "dataset", "is required");
	resp_free(&r);
	CHECK(send_all(fd, ok) == 0);
	r = read_one(fd, 5000);
	CHECK(r.status == 200);
	resp_free(&r);
	close(fd);
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		/* pipelined behind a good one: the good one answered, then this */
		fd = connect_from("127.0.0.1", port);
		snprintf(two, sizeof two, "%s%s", ok, bad[i]);
		CHECK(send_all(fd, two) == 0);
		r = read_answer(fd, 5000); /* to EOF: the connection ends */
		CHECK(r.status == 200 && r.body);
		/* the second answer follows the first's body */
		second = r.body ? strstr(r.body, "HTTP/1.1 ") : NULL;
		CHECK(second != NULL);
		if (second) {
			size_t n = strlen(second);
			char *raw = malloc(n + 1);

			memcpy(raw, second, n + 1);
			parse_response(raw, n, &p);
			check_one_problem(&p, status[i]);
			resp_free(&p);
		}
		resp_free(&r);
		close(fd);
	}
	/* a hundred requests in one write: each checked, each answered */
	fd = connect_from("127.0.0.1", port);
	CHECK(count_answers(fd, ok, 100) == 100);
	close(fd);
	/* a second head that trickles past the header timeout */
	fd = connect_from("127.0.0.1", port);
	CHECK(send_all(fd, ok) == 0);
	r = read_one(fd, 5000);
	CHECK(r.status == 200);
	resp_free(&r);
	CHECK(send_all(fd, "GET /healthz HTTP/1.1\r\nHo") == 0);
	usleep(1300000);
	CHECK(send_all(fd, "st: x\r\n") == 0);
	r = read_answer(fd, 5000);
	check_one_problem(&r, 408);
	resp_free(&r);
	close(fd);
	http_stop(h);
	rm_tree(dir);
	free(dir);
}

/* Raises the open-file limit so that the test's own connections fit. */
static void more_files(rlim_t need)
{
	struct rlimit rl;

	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur < need) {
		rl.rlim_cur = rl.rlim_max < need ? rl.rlim_max : need;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur < need)
		fprintf(stderr, "only %llu file descriptors (need %llu)\n",
			(unsigned long long)rl.rlim_cur, (unsigned long long)need);
	CHECK(rl.rlim_cur >= need);
}

/* Reads the answer of each fd not answered yet (for up to ms), counting
 * them by status in count[]; answered[i] is set for those answered. */
static void tally(const int *fd, char *answered, size_t n, size_t count[600], int ms)
{
	for (size_t i = 0; i < n; i++) {
		struct resp r;

		if (fd[i] < 0 || answered[i])
			continue;
		r = read_answer(fd[i], ms);
		answered[i] = r.status != 0;
		count[r.status >= 0 && r.status < 600 ? r.status : 0]++;
		resp_free(&r);
	}
}

/*
 * 1,100 connections from 127.0.0.2 that send half a head and wait: the
 * first 64 (--max-connections-per-address) are held until the header
 * timeout, the others answered 429 at once; 127.0.0.1 is served
 * meanwhile, and again once they are gone.
 */
static void test_slow_clients(void)
{
	enum { N = 1100 };
	char *dir = temp_dir();
	struct http_options o;
	struct http_server *h;
	int *fd = malloc(N * sizeof *fd);
	char *answered = calloc(N, 1);
	double t0;
	struct resp r;
	size_t opened = 0, count[600] = {0};

	more_files(2 * N + 512);
	http_options_init(&o);
	o.header_timeout = 3;
	h = start_with(dir, &o);
	for (size_t i = 0; i < N; i++) {
		fd[i] = connect_from("127.0.0.2", http_port(h));
		if (fd[i] >= 0 &&
		    send(fd[i], "GET /healthz HTTP/1.1\r\nHo", 25, MSG_NOSIGNAL) == 25)
			opened++;
	}
	CHECK(opened == N);
	t0 = solver_now();
	r = get(http_port(h), "/healthz");
	CHECK(r.status == 200);
	CHECK(solver_now() - t0 < 1.0); /* served at once, not after the timeout */
	fprintf(stderr,
		"slow clients: %zu connections from 127.0.0.2 open, GET /healthz from "
		"127.0.0.1 answered in %.1f ms\n",
		opened, (solver_now() - t0) * 1e3);
	resp_free(&r);
	/* the 64 held ones first (the others answered, so these read at once) */
	tally(fd, answered, N, count, 30);
	CHECK(count[429] == N - 64);
	tally(fd, answered, N, count, 5000);
	CHECK(count[429] == N - 64);
	CHECK(count[408] == 64);
	fprintf(stderr, "slow clients: %zu answered 429 at once, %zu answered 408 after %.1f s\n",
		count[429], count[408], solver_now() - t0);
	for (size_t i = 0; i < N; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	r = get(http_port(h), "/metrics");
	CHECK_CONTAINS(r.body, "route=\"none\",method=\"other\",status=\"429\"");
	CHECK_CONTAINS(r.body, "status=\"408\"");
	resp_free(&r);
	http_stop(h);
	rm_tree(dir);
	free(dir);
	free(fd);
	free(answered);
}

/* Over the total: 503 with Retry-After, for any address. */
static void test_total_limit(void)
{
	char *dir = temp_dir(), buf[32];
	struct http_options o;
	struct http_server *h;
	int fd[10];
	struct resp r;

	http_options_init(&o);
	o.max_connections = 10;
	o.max_per_address = 6;
	h = start_with(dir, &o);
	for (int i = 0; i < 10; i++)
		fd[i] = connect_from(i < 6 ? "127.0.0.2" : "127.0.0.3", http_port(h));
	usleep(200000); /* accepted and pending */
	r = get(http_port(h), "/healthz");
	check_one_problem(&r, 503);
	CHECK_CONTAINS(jstr(r.json, "detail"), "--max-connections");
	CHECK(hdr(&r, "Retry-After", buf, sizeof buf) != NULL);
	resp_free(&r);
	for (int i = 0; i < 10; i++)
		close(fd[i]);
	usleep(200000); /* the gate sees them go */
	r = get(http_port(h), "/healthz");
	CHECK(r.status == 200);
	resp_free(&r);
	http_stop(h);
	rm_tree(dir);
	free(dir);
}

/* A head trickled a byte every 200 ms gets 408 at the header timeout,
 * although its sender is never idle; a silent body is cut off at the
 * idle timeout. */
static void test_timeouts(void)
{
	const char *head = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaa";
	char *dir = temp_dir();
	struct http_options o;
	struct http_server *h;
	struct resp r;
	double t0;
	int fd;

	http_options_init(&o);
	o.header_timeout = 1;
	o.idle_timeout = 1;
	h = start_with(dir, &o);
	fd = connect_from("127.0.0.1", http_port(h));
	t0 = solver_now();
	for (size_t i = 0; i < strlen(head) && solver_now() - t0 < 3; i++) {
		send(fd, head + i, 1, MSG_NOSIGNAL);
		usleep(200000);
		if (solver_now() - t0 > 1.3)
			break;
	}
	r = read_answer(fd, 2000);
	check_one_problem(&r, 408);
	CHECK_CONTAINS(jstr(r.json, "detail"), "--header-timeout");
	CHECK(solver_now() - t0 < 2.5);
	resp_free(&r);
	close(fd);
	/* a whole head, then a body that never comes: closed after ~1 s */
	fd = connect_from("127.0.0.1", http_port(h));
	t0 = solver_now();
	{
		const char *req = "POST /v1/datasets HTTP/1.1\r\nHost: x\r\nContent-Type: "
				  "application/json\r\nContent-Length: 100\r\n\r\n{\"na";

		send(fd, req, strlen(req), MSG_NOSIGNAL);
	}
	r = read_answer(fd, 5000);
	CHECK(solver_now() - t0 < 4);
	resp_free(&r);
	close(fd);
	http_stop(h);
	rm_tree(dir);
	free(dir);
}

static void test_socket(void)
{
	char *dir = temp_dir();
	struct http_options o;
	struct http_server *h;

	http_options_init(&o);
	h = start_with(dir, &o);
	test_framing(http_port(h));
	http_stop(h);
	rm_tree(dir);
	free(dir);
}

int main(void)
{
	test_heads();
	test_sizes();
	test_socket();
	test_total_limit();
	test_timeouts();
	test_slow_clients();
	test_keep_alive();
	return check_done();
}
