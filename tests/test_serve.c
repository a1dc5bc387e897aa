/*
 * The real binary (PMAXENT_BIN) as a service: kill -9 mid-analysis and
 * the run again after the restart, a poison job that ends failed at
 * --max-attempts, the flags of `pmaxent serve`, and the documents it
 * serves.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <fcntl.h>
#include <signal.h>
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
	double t0 = pipeline_now();

	while (pipeline_now() - t0 < 30) {
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

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	slow_setup();
	test_documents();
	test_serve_flags();
	test_kill9();
	free(slow_dataset);
	return check_done();
}
