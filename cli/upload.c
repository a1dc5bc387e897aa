/*
 * `pmaxent upload`: a dataset file sent to a `pmaxent serve` (POST
 * /v1/datasets), streamed from the file in blocks with its
 * Content-Length (the service reads a CSV as it arrives: 10M records,
 * about 400 MB, never held whole on either side). HTTP/1.1 over a plain
 * socket, written here: one request, Connection: close, no dependency.
 * A progress line on stderr: rewritten in place on a terminal, else one
 * line per tenth.
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#define BLOCK ((size_t)256 << 10)

const char upload_usage[] =
    "usage: pmaxent upload DATASET --server URL [--sa COL --group COL] [OPTIONS]\n"
    "\n"
    "Stores a dataset in a running `pmaxent serve` (POST /v1/datasets) and\n"
    "prints its summary JSON (with its id) on stdout. DATASET is a CSV file\n"
    "(text/csv; --sa and --group name its columns) or, when its name ends in\n"
    ".json, a dataset JSON file. The file is streamed in blocks; a progress\n"
    "line on stderr says how much is sent. DATASET \"-\" reads a CSV from stdin\n"
    "(held in memory, up to --max-input, to learn its length).\n"
    "\n"
    "options:\n"
    "  --max-input BYTES    refuse a file larger than this (default 16 GiB)\n"
    "  --server URL         the service, http://HOST:PORT (required)\n"
    "  --sa COL             CSV: the sensitive attribute column\n"
    "  --group COL          CSV: the group column\n"
    "  --name N             CSV: the dataset's name\n"
    "  --token T            'Authorization: Bearer T' (a service with --token-file);\n"
    "                       visible to other users in ps: prefer the two below\n"
    "  --token-file F       the token is the first line of file F\n"
    "                       (default: $PMAXENT_TOKEN, when set)\n"
    "  -h, --help           show this help\n"
    "\n"
    "exit status: 0 stored, 2 bad argument or refused by the service (4xx:\n"
    "its detail on stderr), 1 cannot connect or another failure\n";

const struct option upload_options[] = {
    {"max-input", required_argument, NULL, OPT_BASE + OPT_MAX_INPUT},
    {"server", required_argument, NULL, OPT_BASE + OPT_SERVER},
    {"sa", required_argument, NULL, OPT_BASE + OPT_SA},
    {"group", required_argument, NULL, OPT_BASE + OPT_GROUP},
    {"name", required_argument, NULL, OPT_BASE + OPT_NAME},
    {"token", required_argument, NULL, OPT_BASE + OPT_TOKEN},
    {"token-file", required_argument, NULL, OPT_BASE + OPT_TOKEN_FILE},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* http://HOST[:PORT][/PREFIX] */
struct target {
	char host[256], port[8], prefix[1024];
};

static int parse_url(const char *url, struct target *t)
{
	const char *h, *end, *colon;
	size_t n;

	memset(t, 0, sizeof *t);
	if (strncmp(url, "http://", 7))
		return -1;
	h = url + 7;
	end = h + strcspn(h, "/");
	colon = *h == '[' ? memchr(h, ']', (size_t)(end - h)) : h;
	colon = colon ? memchr(colon, ':', (size_t)(end - colon)) : NULL;
	n = (size_t)((colon ? colon : end) - h);
	if (*h == '[' && n >= 2)
		h++, n -= 2; /* [::1] */
	if (n == 0 || n >= sizeof t->host || strlen(end) >= sizeof t->prefix)
		return -1;
	memcpy(t->host, h, n);
	snprintf(t->port, sizeof t->port, "%.*s", colon ? (int)(end - colon - 1) : 2,
		 colon ? colon + 1 : "80");
	if (!t->port[0] || strspn(t->port, "0123456789") != strlen(t->port))
		return -1;
	snprintf(t->prefix, sizeof t->prefix, "%s", end);
	n = strlen(t->prefix);
	if (n && t->prefix[n - 1] == '/')
		t->prefix[n - 1] = '\0';
	return 0;
}

/* s percent-encoded onto the end of buf (size bytes); -1 when it does not
 * fit. */
static int put_encoded(char *buf, size_t size, const char *s)
{
	size_t n = strlen(buf);

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		int plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			    (c >= '0' && c <= '9') || strchr("-._~", c);

		if (n + 4 >= size)
			return -1;
		n += (size_t)snprintf(buf + n, size - n, plain ? "%c" : "%%%02X", c);
	}
	return 0;
}

/* The request target: PREFIX/v1/datasets with the CSV's query. */
static int request_path(const struct target *t, const struct args *a, int csv, char *buf,
			size_t size)
{
	static const enum opt_id ids[3] = {OPT_SA, OPT_GROUP, OPT_NAME};
	static const char *const keys[3] = {"sa", "group", "name"};
	int bad = 0;

	snprintf(buf, size, "%s/v1/datasets", t->prefix);
	for (int i = 0, first = 1; csv && i < 3; i++) {
		if (!a->opt[ids[i]])
			continue;
		snprintf(buf + strlen(buf), size - strlen(buf), "%s%s=", first ? "?" : "&",
			 keys[i]);
		bad |= put_encoded(buf, size, a->opt[ids[i]]);
		first = 0;
	}
	return bad ? -1 : 0;
}

/* A connected socket, or -1 with a message. */
static int dial(const struct target *t)
{
	struct addrinfo hints = {0}, *res = NULL, *ai;
	int fd = -1, rc, e = 0;

	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if ((rc = getaddrinfo(t->host, t->port, &hints, &res))) {
		fprintf(stderr, "pmaxent: cannot connect to %s:%s: %s\n", t->host, t->port,
			gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai && fd < 0; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
		if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen)) {
			e = errno;
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(res);
	if (fd < 0)
		fprintf(stderr, "pmaxent: cannot connect to %s:%s: %s\n", t->host, t->port,
			strerror(e ? e : errno));
	return fd;
}

static int send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

struct progress {
	long long total, sent;
	int tty, tenth; /* tenth: the last tenth reported (not a terminal) */
	double last;	/* when the line was last drawn (a terminal) */
};

static void progress(struct progress *p)
{
	int pct = p->total ? (int)(p->sent * 100 / p->total) : 100;
	int done = p->sent == p->total, mb = p->total >= 1000000;
	double unit = mb ? 1e6 : 1e3;

	if (p->tty && !(done || solver_now() - p->last >= 0.1))
		return;
	if (!p->tty && pct / 10 <= p->tenth)
		return;
	p->tenth = pct / 10;
	p->last = solver_now();
	fprintf(stderr, "%spmaxent: sent %.1f of %.1f %s (%d%%)%s", p->tty ? "\r" : "",
		(double)p->sent / unit, (double)p->total / unit, mb ? "MB" : "kB", pct,
		p->tty && !done ? "" : "\n");
}

/* The head, then the file in blocks. A failed send is not the end: the
 * service may have answered before the body (401, 413), so the caller
 * reads the answer either way; -1 only when the file cannot be read. */
static int send_request(int fd, FILE *f, const char *head, struct progress *p)
{
	char *buf = malloc(BLOCK);
	size_t n;
	int rc = 0;

	if (!buf || send_all(fd, head, strlen(head))) {
		free(buf);
		return 0;
	}
	progress(p);
	while (p->sent < p->total && (n = fread(buf, 1, BLOCK, f)) > 0) {
		if (send_all(fd, buf, n))
			break;
		p->sent += (long long)n;
		progress(p);
	}
	if (ferror(f))
		rc = -1;
	free(buf);
	return rc;
}

/* The whole answer (the service closes the connection after it). */
static char *read_answer(int fd, size_t *len)
{
	size_t cap = 65536;
	char *buf = malloc(cap + 1), *grown;
	ssize_t k;

	*len = 0;
	while (buf && (k = recv(fd, buf + *len, cap - *len, 0)) != 0) {
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			break;
		*len += (size_t)k;
		if (*len == cap &&
		    (cap > ((size_t)64 << 20) || !(grown = realloc(buf, 2 * cap + 1))))
			break;
		if (*len == cap)
			buf = grown, cap *= 2;
	}
	if (buf)
		buf[*len] = '\0';
	return buf;
}

/* Prints the answer's body (201) or its problem; the exit code. */
static int report(const char *answer)
{
	const char *body = answer ? strstr(answer, "\r\n\r\n") : NULL;
	int status = 0;
	json_t *j;

	if (!answer || sscanf(answer, "HTTP/1.%*d %d", &status) != 1 || !body) {
		fprintf(stderr, "pmaxent: no answer from the service\n");
		return 1;
	}
	body += 4;
	if (status == 201) {
		fputs(body, stdout);
		if (!*body || body[strlen(body) - 1] != '\n')
			fputc('\n', stdout);
		return fflush(stdout) ? 1 : 0;
	}
	j = json_loads(body, 0, NULL);
	fprintf(stderr, "pmaxent: %s%s%s (HTTP %d)\n",
		json_string_value(json_object_get(j, "field"))
		    ? json_string_value(json_object_get(j, "field"))
		    : "",
		json_string_value(json_object_get(j, "field")) ? ": " : "",
		json_string_value(json_object_get(j, "detail"))
		    ? json_string_value(json_object_get(j, "detail"))
		    : "the service refused the upload",
		status);
	json_decref(j);
	return status >= 400 && status < 500 ? 2 : 1;
}

static int ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), m = strlen(tail);

	return n >= m && !strcmp(s + n - m, tail);
}

/* The file to send, its size, and in held what was read of it: a regular
 * file is judged by its first bytes and sent from the disk; stdin or a
 * device is read whole first (as the other commands read it), so that
 * /dev/zero ends at its first byte and the length is known. 0, or 2 after
 * a message. */
static int open_input(const struct args *a, FILE **f, long long *size, struct source *held)
{
	const char *path = a->pos[0], *why;
	int forms = ends_with(path, ".json") ? SOURCE_JSON : SOURCE_CSV;
	struct pm_error err = {0};
	char head[4096];
	struct stat sb;
	size_t n, at;

	*held = (struct source){0};
	if (strcmp(path, "-") && (*f = fopen(path, "rb")) && !fstat(fileno(*f), &sb) &&
	    S_ISREG(sb.st_mode)) {
		*size = (long long)sb.st_size;
		n = fread(head, 1, sizeof head, *f);
		rewind(*f);
		if ((unsigned long long)*size > a->max_input)
			error_set(&err, PM_ERR_INPUT, "--max-input",
				  "%s is %lld bytes, over the limit of %llu bytes", path, *size,
				  a->max_input);
		else if (!source_sniff(head, n, forms, &why, &at))
			error_set(&err, PM_ERR_INPUT, "", "%s is not %s text: %s at byte %zu", path,
				  forms == SOURCE_JSON ? "JSON" : "CSV", why, at);
		return err.message[0] ? cli_finish(PM_ERR_INPUT, &err) : 0;
	}
	if (strcmp(path, "-") && !*f) {
		fprintf(stderr, "pmaxent: cannot open %s: %s\n", path, strerror(errno));
		return 2;
	}
	if (*f)
		fclose(*f);
	*f = NULL;
	if (source_read(path, a, forms, "cannot open", held, &err))
		return cli_finish(err.status ? err.status : PM_ERR_INPUT, &err);
	*size = (long long)held->len;
	if (!(*f = fmemopen(held->text, held->len ? held->len : 1, "rb")))
		return fprintf(stderr, "pmaxent: out of memory\n"), 1;
	return 0;
}

/* The first line of path, without its line end and surrounding blanks,
 * into out; 0, or 2 after a message. */
static int token_from_file(const char *path, char *out, size_t cap)
{
	FILE *f = fopen(path, "r");
	char *p = out;
	size_t n;

	if (!f) {
		fprintf(stderr, "pmaxent: --token-file: cannot open %s: %s\n", path,
			strerror(errno));
		return 2;
	}
	if (!fgets(out, (int)cap, f))
		out[0] = '\0';
	fclose(f);
	while (*p == ' ' || *p == '\t')
		p++;
	n = strcspn(p, "\r\n");
	while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
		n--;
	memmove(out, p, n);
	out[n] = '\0';
	if (!n) {
		fprintf(stderr, "pmaxent: --token-file: %s has no token on its first line\n", path);
		return 2;
	}
	return 0;
}

/* The bearer token: --token, else --token-file, else $PMAXENT_TOKEN
 * ("" for none). 0, or 2 after a message. The two last keep the token
 * out of the process list. */
static int bearer_token(const struct args *a, char *out, size_t cap)
{
	const char *env = getenv("PMAXENT_TOKEN");
	const char *t = a->opt[OPT_TOKEN] ? a->opt[OPT_TOKEN] : a->opt[OPT_TOKEN_FILE] ? NULL : env;

	out[0] = '\0';
	if (!t && a->opt[OPT_TOKEN_FILE])
		return token_from_file(a->opt[OPT_TOKEN_FILE], out, cap);
	if (t && strlen(t) >= cap) {
		fprintf(stderr, "pmaxent: the token is longer than %zu bytes\n", cap - 1);
		return 2;
	}
	snprintf(out, cap, "%s", t ? t : "");
	for (const char *p = out; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			fprintf(stderr, "pmaxent: the token holds a control character\n");
			return 2;
		}
	return 0;
}

/* The request head; -1 after a usage message. */
static int make_head(const struct cmd *c, const struct args *a, const struct target *t,
		     long long size, char *head, size_t cap)
{
	int csv = !ends_with(a->pos[0], ".json");
	char path[4096], auth[600] = "", token[512];

	if (csv && (!a->opt[OPT_SA] || !a->opt[OPT_GROUP]))
		return cli_usage_error(c, "%s", "a CSV upload needs --sa COL and --group COL"), -1;
	if (request_path(t, a, csv, path, sizeof path))
		return cli_usage_error(c, "%s", "--sa, --group and --name are too long"), -1;
	if (bearer_token(a, token, sizeof token))
		return -1;
	if (token[0])
		snprintf(auth, sizeof auth, "Authorization: Bearer %s\r\n", token);
	snprintf(head, cap,
		 "POST %s HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: %s\r\nContent-Length: "
		 "%lld\r\n%sConnection: close\r\n\r\n",
		 path, t->host, t->port, csv ? "text/csv" : "application/json", size, auth);
	return 0;
}

int upload_cmd(const struct cmd *c, const struct args *a)
{
	struct progress p = {0};
	struct target t;
	struct source held = {0};
	char head[8192], *answer = NULL;
	size_t len;
	FILE *f = NULL;
	int fd = -1, rc = 1;

	if (!a->opt[OPT_SERVER] || parse_url(a->opt[OPT_SERVER], &t))
		return cli_usage_error(c, "%s", "--server must be http://HOST:PORT");
	if ((rc = open_input(a, &f, &p.total, &held)) != 0)
		goto out;
	rc = 1;
	p.tty = isatty(STDERR_FILENO);
	p.tenth = -1;
	if (make_head(c, a, &t, p.total, head, sizeof head)) {
		rc = 2;
		goto out;
	}
	if ((fd = dial(&t)) < 0)
		goto out;
	if (send_request(fd, f, head, &p)) {
		fprintf(stderr, "pmaxent: cannot read %s: %s\n", a->pos[0], strerror(errno));
		goto out;
	}
	shutdown(fd, SHUT_WR);
	answer = read_answer(fd, &len);
	rc = report(answer);
out:
	free(answer);
	if (fd >= 0)
		close(fd);
	if (f)
		fclose(f);
	source_finish(&held);
	return rc;
}
