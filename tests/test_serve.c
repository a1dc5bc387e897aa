/*
 * The real binary (PMAXENT_BIN) as a service: kill -9 mid-analysis and
 * the run again after the restart, a poison job that ends failed at
 * --max-attempts, SIGTERM during an upload (answered and stored, or cut
 * off and not stored), SIGHUP re-reading the token file, the flags of
 * `pmaxent serve`, and the documents it serves.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "http_client.h"

/* ---- kill -9: the real binary ----------------------------------------------------- */

static pid_t spawn(const char *bin, const char *dir, const char *tokens, const char *log)
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);

		dup2(fd, 2);
		execl(bin, bin, "serve", "--port", "0", "--data-dir", dir, "--workers", "1",
		      "--token-file", tokens, "--max-attempts", "2", (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* The port of the last "listening on" line of the log (waits up to 30 s). */
static unsigned wait_port(const char *log, int nth)
{
	const char *key = "pmaxent: listening on http://127.0.0.1:";
	double t0 = solver_now();

	while (solver_now() - t0 < 30) {
		size_t len;
		char *text = read_file(log, &len), *p = text;
		unsigned port = 0;
		int seen = 0;

		while (p && (p = strstr(p, key))) {
			p += strlen(key);
			if (++seen == nth)
				port = (unsigned)atoi(p);
		}
		free(text);
		if (port)
			return port;
		usleep(20000);
	}
	return 0;
}

static void kill9_check_log(const char *log)
{
	size_t len;
	char *text = read_file(log, &len);

	CHECK_CONTAINS(text, "\"method\":\"POST\",\"path\":\"/v1/datasets\",\"status\":201");
	CHECK_CONTAINS(text, "\"tenant\":\"auditor\"");
	CHECK_CONTAINS(text, "pmaxent: SIGTERM: shutting down\npmaxent: stopped\n");
	CHECK(text && !strstr(text, "kill9-secret-0123456789"));
	free(text);
}

/* Kill -9 mid-analysis; the restarted service runs it again to the end. */
static void test_kill9(void)
{
	const char *bin = getenv("PMAXENT_BIN");
	char *dir = temp_dir(), tokens[512], log[512], path[128], *ds, *an;
	unsigned port;
	pid_t pid;
	struct resp r;
	int status = -1;

	if (!bin) {
		printf("PMAXENT_BIN not set: kill -9 test skipped\n");
		CHECK(bin == NULL);
		rm_tree(dir);
		free(dir);
		return;
	}
	snprintf(tokens, sizeof tokens, "%s/tokens", dir);
	snprintf(log, sizeof log, "%s/server.log", dir);
	write_file(tokens, "kill9-secret-0123456789 auditor admin\n");
	pid = spawn(bin, dir, tokens, log);
	port = wait_port(log, 1);
	CHECK(port > 0);
	as("kill9-secret-0123456789");
	ds = upload(port, slow_dataset);
	an = analyse(port, ds ? ds : "", slow_request);
	CHECK(wait_running(port, an ? an : ""));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);

	pid = spawn(bin, dir, tokens, log);
	port = wait_port(log, 2);
	CHECK(port > 0);
	r = wait_done(port, an ? an : "");
	CHECK_STR(jstr(r.json, "status"), "succeeded");
	CHECK(json_integer_value(json_object_get(r.json, "attempts")) == 2);
	CHECK_STR(jstr(json_object_get(r.json, "result"), "status"), "converged");
	resp_free(&r);
	snprintf(path, sizeof path, "/v1/datasets/%s", ds ? ds : "");
	check_etag(port, path);
	free(an);

	/* a poison job: the service dies running it at every start; at the
	 * second death (--max-attempts 2) it ends failed, saying why */
	an = analyse(port, ds ? ds : "", slow_request);
	for (int death = 1; death <= 2; death++) {
		CHECK(wait_running(port, an ? an : ""));
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		pid = spawn(bin, dir, tokens, log);
		port = wait_port(log, 2 + death);
		CHECK(port > 0);
	}
	r = wait_done(port, an ? an : "");
	CHECK_STR(jstr(r.json, "status"), "failed");
	CHECK(json_integer_value(json_object_get(r.json, "attempts")) == 2);
	CHECK_CONTAINS(jstr(json_object_get(r.json, "problem"), "detail"),
		       "not run again (--max-attempts 2)");
	resp_free(&r);
	r = get(port, "/metrics");
	CHECK_CONTAINS(r.body, "pmaxent_jobs_finished_total{outcome=\"failed\"} 1\n");
	resp_free(&r);

	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	kill9_check_log(log);
	as(NULL);
	free(ds);
	free(an);
	rm_tree(dir);
	free(dir);
}

/* ---- service documents and the command line ---------------------------------------- */

static void test_documents(void)
{
	char *dir = temp_dir(), spec[512], *yaml, ct[128], etag[64];
	struct http_server *h = start(dir, 1, 4, NULL, 0);
	unsigned port = http_port(h);
	struct resp r;
	size_t len = 0;

	/* embedded at build time, or read from this path when not */
	snprintf(spec, sizeof spec, "%s/../../api-spec/openapi.yaml", data_dir());
	setenv("PMAXENT_OPENAPI", spec, 1);
	yaml = read_file(spec, &len);
	r = get(port, "/v1/openapi.yaml");
	CHECK(r.status == 200);
	CHECK_CONTAINS(hdr(&r, "Content-Type", ct, sizeof ct), "application/yaml");
	CHECK(yaml && r.len == len && !memcmp(r.body, yaml, len));
	CHECK(r.body && !strncmp(r.body, "openapi: 3.1", 12));
	resp_free(&r);
	r = get(port, "/healthz");
	CHECK(r.status == 200 && !strcmp(r.body, "{\"status\":\"ok\"}\n"));
	resp_free(&r);
	r = get(port, "/readyz");
	CHECK(r.status == 200 && !strcmp(r.body, "{\"status\":\"ready\"}\n"));
	resp_free(&r);
	r = call(port, "HEAD", "/v1/datasets", NULL, NULL, 0);
	CHECK(r.status == 200 && r.len == 0 && hdr(&r, "ETag", etag, sizeof etag));
	resp_free(&r);
	http_stop(h);
	free(yaml);
	rm_tree(dir);
	free(dir);
}

/* Runs pmaxent with args; its exit status, stdout and stderr in *out. */
static int run_bin(const char *bin, const char *const *args, char **out)
{
	char log[] = "/tmp/pmaxent-http-out-XXXXXX";
	int fd = mkstemp(log), status = -1;
	size_t len;
	pid_t pid = fork();

	if (pid == 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		execv(bin, (char *const *)args);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	close(fd);
	*out = read_file(log, &len);
	unlink(log);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_serve_flags(void)
{
	static const struct {
		const char *args[6];
		int status;
		const char *output;
	} cases[] = {
	    {{"serve", "--help"}, 0, "--token-file F"},
	    {{"serve", "--port", "70000"}, 2, "--port: must be from 0 to 65535, got 70000"},
	    {{"serve", "--workers", "x"}, 2, "--workers: expected an integer, got 'x'"},
	    {{"serve", "--bogus"}, 2, "unknown option '--bogus'"},
	    {{"serve", "extra"}, 2, "unexpected argument 'extra'"},
	    {{"serve", "--listen", "0.0.0.0", "--port", "0"},
	     2,
	     "pmaxent: --listen: refusing to listen on 0.0.0.0 without access control"},
	    {{"serve", "--token-file", "/nonexistent/tokens", "--port", "0"},
	     2,
	     "pmaxent: --token-file: cannot open /nonexistent/tokens"},
	};
	const char *bin = getenv("PMAXENT_BIN");
	const char *argv[8];
	char *out = NULL;

	for (size_t i = 0; bin && i < sizeof cases / sizeof cases[0]; i++) {
		argv[0] = bin;
		for (size_t k = 0; k < 6; k++)
			argv[k + 1] = cases[i].args[k];
		argv[7] = NULL;
		CHECK(run_bin(bin, argv, &out) == cases[i].status);
		CHECK_CONTAINS(out, cases[i].output);
		free(out);
	}
}

/* ---- token files refused at start ------------------------------------------------- */

/* A byte order mark would become part of the first token, a short token
 * is guessable: both refused at start, naming the line. */
static void test_token_file_refused(void)
{
	static const struct {
		const char *text, *message;
	} cases[] = {
	    {"\xEF\xBB\xBFtoken-alice-0123456789 alice\n",
	     "pmaxent: --token-file: line 1: starts with a UTF-8 byte order mark"},
	    {"# ops\ntoken-alice-0123456789 alice\nx bob\n",
	     "pmaxent: --token-file: line 3: the token has 1 characters, fewer than the 16"},
	    {"0123456789abcde alice\n", "line 1: the token has 15 characters"},
	};
	const char *bin = getenv("PMAXENT_BIN");
	char *dir = temp_dir(), tokens[512], data[512], *out = NULL;
	const char *argv[] = {bin,  "serve",	    "--port", "0", "--data-dir",
			      data, "--token-file", tokens,   NULL};

	snprintf(tokens, sizeof tokens, "%s/tokens", dir);
	snprintf(data, sizeof data, "%s/var", dir);
	for (size_t i = 0; bin && i < sizeof cases / sizeof cases[0]; i++) {
		write_file(tokens, cases[i].text);
		CHECK(run_bin(bin, argv, &out) == 2);
		CHECK_CONTAINS(out, cases[i].message);
		CHECK(out && !strstr(out, "0123456789")); /* never the token */
		free(out);
	}
	rm_tree(dir);
	free(dir);
}

/* ---- problem documents keep the store's place to the log ------------------------ */

/* A write that the file size limit stops, as a full disk would: the
 * problem says the store failed, without the data directory. */
static void test_store_errors_hide_path(void)
{
	char *dir = temp_dir(), *json = generated_json(20000);
	struct http_server *h = start(dir, 1, 4, NULL, 0);
	struct rlimit was, low;
	struct stat st;
	char wal[600];
	off_t size = 0;
	struct resp r;

	snprintf(wal, sizeof wal, "%s/pmaxent.db-wal", dir);
	if (!stat(wal, &st))
		size = st.st_size;
	snprintf(wal, sizeof wal, "%s/pmaxent.db", dir);
	if (!stat(wal, &st) && st.st_size > size)
		size = st.st_size;
	signal(SIGXFSZ, SIG_IGN);
	getrlimit(RLIMIT_FSIZE, &was);
	low = was;
	low.rlim_cur = (rlim_t)size + 4096;
	CHECK(setrlimit(RLIMIT_FSIZE, &low) == 0);
	r = post_json(http_port(h), "/v1/datasets", json);
	setrlimit(RLIMIT_FSIZE, &was);
	CHECK(r.status >= 500);
	CHECK_CONTAINS(r.body, "the database");
	CHECK(r.body && !strstr(r.body, dir) && !strstr(r.body, "pmaxent.db"));
	resp_free(&r);
	r = get(http_port(h), "/readyz"); /* it still reads */
	CHECK(r.status == 200);
	resp_free(&r);
	http_stop(h);
	free(json);
	rm_tree(dir);
	free(dir);
}

/* ---- SIGTERM during an upload ------------------------------------------------------ */

static pid_t spawn_args(const char *log, const char *const *args)
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);

		dup2(fd, 2);
		execv(args[0], (char *const *)args);
		_exit(127);
	}
	return pid;
}

/* A CSV of n records in groups of 4 distinct diseases. */
static char *big_csv(size_t n, size_t *len)
{
	static const char *const sa[4] = {"Flu", "HIV", "Cancer", "Asthma"};
	size_t cap = 64 + n * 48, k;
	char *text = malloc(cap);

	k = (size_t)snprintf(text, cap, "age,zip,group,disease\n");
	for (size_t i = 0; i < n; i++)
		k += (size_t)snprintf(text + k, cap - k, "%zu,z%zu,%zu,%s\n", 20 + i % 50, i % 97,
				      i / 4, sa[i % 4]);
	*len = k;
	return text;
}

/* One upload sent slowly: its head and a tenth of its body, a pause for
 * the service to take the connection up, then the rest in blocks with
 * pauses (the SIGTERM comes in between), then the answer read. */
struct slow_upload {
	unsigned port;
	const char *body;
	size_t len;
	double pause; /* seconds between blocks after the first */
	int begun;
	struct resp answer;
};

static int send_all(int fd, const char *p, size_t n)
{
	ssize_t k;

	for (; n && (k = send(fd, p, n, MSG_NOSIGNAL)) > 0; p += k, n -= (size_t)k)
		;
	return n ? -1 : 0;
}

static void *slow_upload_run(void *arg)
{
	struct slow_upload *u = arg;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)u->port)};
	struct timeval tv = {60, 0};
	char head[512], *raw = malloc((1 << 16) + 1);
	size_t n = 0, sent = u->len / 10, block = u->len / 20 + 1;
	int fd = socket(AF_INET, SOCK_STREAM, 0), hl, ok;
	ssize_t k;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	hl =
	    snprintf(head, sizeof head,
		     "POST /v1/datasets?sa=disease&group=group HTTP/1.1\r\nHost: localhost\r\n"
		     "Connection: close\r\n%sContent-Type: text/csv\r\nContent-Length: %zu\r\n\r\n",
		     auth, u->len);
	ok = !connect(fd, (struct sockaddr *)&a, sizeof a) && !send_all(fd, head, (size_t)hl) &&
	     !send_all(fd, u->body, sent);
	usleep(300000);
	__atomic_store_n(&u->begun, 1, __ATOMIC_RELEASE);
	for (size_t b; ok && sent < u->len; sent += b) {
		usleep((useconds_t)(u->pause * 1e6));
		b = block < u->len - sent ? block : u->len - sent;
		ok = !send_all(fd, u->body + sent, b);
	}
	while (n < (1 << 16) && (k = recv(fd, raw + n, (1 << 16) - n, 0)) > 0)
		n += (size_t)k;
	close(fd);
	raw[n] = '\0';
	parse_response(raw, n, &u->answer); /* frees raw; status 0 for none */
	return NULL;
}

/* The datasets a restarted service holds (nth start in the log). */
static size_t datasets_after_restart(const char *const *args, const char *log, int nth)
{
	pid_t pid = spawn_args(log, args);
	unsigned port = wait_port(log, nth);
	struct resp r = get(port, "/v1/datasets");
	size_t n = json_array_size(json_object_get(r.json, "items"));
	int status = -1;

	CHECK(r.status == 200);
	resp_free(&r);
	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return n;
}

/* Starts the service, uploads with pauses between blocks, sends SIGTERM
 * once the upload has begun; the exit status, the answer in *u. */
static int upload_then_sigterm(const char *const *args, const char *log, int nth,
			       struct slow_upload *u)
{
	pid_t pid = spawn_args(log, args);
	pthread_t t;
	int status = -1;

	u->port = wait_port(log, nth);
	CHECK(u->port > 0);
	pthread_create(&t, NULL, slow_upload_run, u);
	while (!__atomic_load_n(&u->begun, __ATOMIC_ACQUIRE))
		usleep(1000);
	kill(pid, SIGTERM);
	pthread_join(t, NULL);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Within the grace an upload under way is answered, and what was
 * answered 201 is there after a restart, once: a retry never doubles it.
 * (A connection whose head the service had not read at the signal is
 * refused whole: no answer, nothing stored.) */
static void test_sigterm_upload(void)
{
	const char *bin = getenv("PMAXENT_BIN");
	char *dir = temp_dir(), log[512], data[512], *csv;
	const char *args[] = {bin, "serve", "--port", "0", "--data-dir", data, NULL};
	size_t len, stored = 0;

	if (!bin)
		return;
	snprintf(log, sizeof log, "%s/server.log", dir);
	snprintf(data, sizeof data, "%s/var", dir);
	csv = big_csv(200000, &len);
	for (int round = 1; round <= 3; round++) {
		struct slow_upload u = {.body = csv, .len = len, .pause = 0.03};

		CHECK(upload_then_sigterm(args, log, 2 * round - 1, &u) == 0);
		CHECK(u.answer.status == 201 || u.answer.status == 0);
		stored += u.answer.status == 201;
		CHECK(datasets_after_restart(args, log, 2 * round) == stored);
		resp_free(&u.answer);
	}
	CHECK(stored > 0); /* the drain was seen at work */
	free(csv);
	rm_tree(dir);
	free(dir);
}

/* An upload still arriving when the grace is over is cut off: no answer,
 * nothing stored, and the service exits 0 all the same. */
static void test_sigterm_grace_over(void)
{
	const char *bin = getenv("PMAXENT_BIN");
	char *dir = temp_dir(), log[512], data[512], *csv, *text;
	const char *args[] = {bin,  "serve",   "--port", "0", "--data-dir",
			      data, "--grace", "1",	 NULL};
	struct slow_upload u = {.pause = 0.5};
	double t0 = solver_now();
	size_t len;

	if (!bin)
		return;
	snprintf(log, sizeof log, "%s/server.log", dir);
	snprintf(data, sizeof data, "%s/var", dir);
	u.body = csv = big_csv(50000, &len);
	u.len = len;
	CHECK(upload_then_sigterm(args, log, 1, &u) == 0);
	CHECK(u.answer.status != 201);
	CHECK(solver_now() - t0 < 20);
	CHECK(datasets_after_restart(args, log, 2) == 0);
	text = read_file(log, &len);
	CHECK_CONTAINS(text, "pmaxent: the grace of 1 s is over: 1 requests cut off\n");
	CHECK(text && !strstr(text, "\"status\":201"));
	resp_free(&u.answer);
	free(text);
	free(csv);
	rm_tree(dir);
	free(dir);
}

/* ---- SIGHUP: the token file read again ------------------------------------------ */

/* Waits until the log holds text (up to 30 s). */
static int wait_log(const char *log, const char *text)
{
	for (double t0 = solver_now(); solver_now() - t0 < 30; usleep(20000)) {
		size_t len;
		char *all = read_file(log, &len);
		int found = all && strstr(all, text);

		free(all);
		if (found)
			return 1;
	}
	return 0;
}

static int status_as(unsigned port, const char *token)
{
	struct resp r;
	int status;

	as(token);
	r = get(port, "/v1/datasets");
	status = r.status;
	resp_free(&r);
	return status;
}

static void test_sighup(void)
{
	const char *bin = getenv("PMAXENT_BIN");
	char *dir = temp_dir(), log[512], data[512], tokens[512];
	const char *args[] = {bin,  "serve",	    "--port", "0", "--data-dir",
			      data, "--token-file", tokens,   NULL};
	const char *a = "token-alice-0123456789", *b = "token-alice-9876543210";
	unsigned port;
	pid_t pid;
	int status = -1;

	if (!bin)
		return;
	snprintf(log, sizeof log, "%s/server.log", dir);
	snprintf(data, sizeof data, "%s/var", dir);
	snprintf(tokens, sizeof tokens, "%s/tokens", dir);
	write_file(tokens, "token-alice-0123456789 alice\n");
	pid = spawn_args(log, args);
	port = wait_port(log, 1);
	CHECK(status_as(port, a) == 200 && status_as(port, b) == 401);
	/* the token revoked and another given: from the next request on */
	write_file(tokens, "token-alice-9876543210 alice\n");
	kill(pid, SIGHUP);
	CHECK(wait_log(log, "pmaxent: SIGHUP: tokens read again from"));
	CHECK(status_as(port, a) == 401 && status_as(port, b) == 200);
	/* a file refused changes nothing, and the log says why */
	write_file(tokens, "\xEF\xBB\xBFtoken-bob-0123456789 bob\n");
	kill(pid, SIGHUP);
	CHECK(wait_log(log, "refused, the tokens in use are kept: line 1: starts with a UTF-8 "
			    "byte order mark"));
	CHECK(status_as(port, b) == 200 && status_as(port, "token-bob-0123456789") == 401);
	CHECK(kill(pid, 0) == 0); /* still running */
	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	as(NULL);
	rm_tree(dir);
	free(dir);
}

/* Requests read the tokens while reloads swap them: each request keeps
 * the set it authenticated with (the sanitizer build sees any use after
 * a free). A token in both files never fails. */
struct hammer {
	unsigned port;
	int stop, failures, done;
};

static void *hammer_run(void *arg)
{
	struct hammer *m = arg;

	while (!__atomic_load_n(&m->stop, __ATOMIC_ACQUIRE)) {
		struct resp r = call(m->port, "GET", "/v1/datasets",
				     "Authorization: Bearer token-kept-0123456789\r\n", NULL, 0);

		__atomic_add_fetch(&m->failures, r.status != 200, __ATOMIC_RELAXED);
		__atomic_add_fetch(&m->done, 1, __ATOMIC_RELAXED);
		resp_free(&r);
	}
	return NULL;
}

static void test_reload_under_load(void)
{
	char *dir = temp_dir(), tokens[512];
	struct http_server *h;
	struct hammer m = {0};
	struct pm_error err = {0};
	pthread_t t[3];

	snprintf(tokens, sizeof tokens, "%s/tokens", dir);
	write_file(tokens, "token-kept-0123456789 alice\n");
	h = start(dir, 1, 4, tokens, 0);
	m.port = http_port(h);
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, hammer_run, &m);
	for (int i = 0; i < 200; i++) {
		write_file(tokens,
			   i % 2 ? "token-kept-0123456789 alice\n"
				 : "token-kept-0123456789 alice\ntoken-other-0123456789 bob\n");
		CHECK(http_reload(h, &err) == PM_OK);
		usleep(2000);
	}
	/* a refused file: the set in use stays */
	write_file(tokens, "short alice\n");
	CHECK(http_reload(h, &err) == PM_ERR_INPUT);
	CHECK_CONTAINS(err.message, "line 1: the token has 5 characters");
	__atomic_store_n(&m.stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	CHECK(m.done > 0 && m.failures == 0);
	CHECK(status_as(m.port, "token-kept-0123456789") == 200);
	as(NULL);
	http_stop(h);
	rm_tree(dir);
	free(dir);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	slow_setup();
	test_documents();
	test_serve_flags();
	test_token_file_refused();
	test_store_errors_hide_path();
	test_sigterm_upload();
	test_sigterm_grace_over();
	test_sighup();
	test_reload_under_load();
	test_kill9();
	free(slow_dataset);
	return check_done();
}
