/*
 * The token file of `pmaxent serve` (SPEC section 6): lines "TOKEN TENANT
 * [admin]" read into a set, checked as a whole (a refused file changes
 * nothing: at start the service does not start, at SIGHUP the tokens in
 * use stay), the lookup of a request's bearer token, and the references
 * requests hold on the set they authenticated with while a reload swaps
 * in another.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "http_internal.h"

/* Compares without an early exit, so the time taken does not tell how much
 * of a guess was right. */
static int same_token(const char *a, size_t an, const char *b)
{
	size_t bn = strlen(b);
	unsigned d = an != bn;

	for (size_t i = 0; i < bn; i++)
		d |= (unsigned char)b[i] ^ (unsigned char)(an ? a[i % an] : 0);
	return d == 0;
}

const struct http_token *tokens_find(const struct http_tokens *t, const char *a, size_t n)
{
	const struct http_token *found = NULL;

	for (size_t i = 0; i < t->n; i++)
		if (same_token(a, n, t->v[i].token))
			found = &t->v[i];
	return found;
}

void tokens_free(struct http_tokens *t)
{
	for (size_t i = 0; t && i < t->n; i++) {
		free(t->v[i].token);
		free(t->v[i].tenant);
	}
	if (t)
		free(t->v);
	free(t);
}

/* One "TOKEN TENANT [admin]" line (comments and blanks already skipped).
 * Messages never quote the token. */
static enum pm_status add_token(struct http_tokens *t, char *line, size_t lineno,
				struct pm_error *err)
{
	char *save, *tok = strtok_r(line, " \t\r\n", &save);
	char *tenant = strtok_r(NULL, " \t\r\n", &save);
	char *role = tenant ? strtok_r(NULL, " \t\r\n", &save) : NULL;
	struct http_token *grown;

	if (!tenant || (role && strtok_r(NULL, " \t\r\n", &save)))
		return error_set(err, PM_ERR_INPUT, "token_file",
				 "line %zu: expected 'TOKEN TENANT' or 'TOKEN TENANT admin'",
				 lineno);
	if (strlen(tok) < HTTP_TOKEN_MIN)
		return error_set(err, PM_ERR_INPUT, "token_file",
				 "line %zu: the token has %zu characters, fewer than the %d a "
				 "token needs",
				 lineno, strlen(tok), HTTP_TOKEN_MIN);
	if (role && strcmp(role, "admin"))
		return error_set(err, PM_ERR_INPUT, "token_file",
				 "line %zu: the third field is the role, 'admin', got '%.32s'",
				 lineno, role);
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->v[i].token, tok))
			return error_set(err, PM_ERR_INPUT, "token_file",
					 "line %zu: the same token appears twice", lineno);
	if (!(grown = realloc(t->v, (t->n + 1) * sizeof *grown)))
		return error_set(err, PM_ERR_NOMEM, "", "out of memory");
	t->v = grown;
	grown[t->n].token = strdup(tok);
	grown[t->n].tenant = strdup(tenant);
	grown[t->n].admin = role != NULL;
	if (!grown[t->n].token || !grown[t->n].tenant) {
		free(grown[t->n].token);
		free(grown[t->n].tenant);
		return error_set(err, PM_ERR_NOMEM, "", "out of memory");
	}
	t->n++;
	return PM_OK;
}

/* Tokens are secrets: like ssh with a private key, a token file that
 * group or others may read (or write) is refused rather than used. */
static enum pm_status check_private(FILE *f, const char *path, struct pm_error *err)
{
	struct stat st;

	if (fstat(fileno(f), &st))
		return error_set(err, PM_ERR_IO, "token_file", "cannot stat %s: %s", path,
				 strerror(errno));
	if (st.st_mode & 077)
		return error_set(
		    err, PM_ERR_INPUT, "token_file",
		    "%s is accessible by group or others (mode %04o); make it private: "
		    "chmod 600 %s",
		    path, (unsigned)(st.st_mode & 07777), path);
	return PM_OK;
}

/* A line of the file, or PM_OK for a comment or a blank line. A byte
 * order mark would silently become part of the first token (which then
 * matches no request), so it is refused, naming the line. */
static enum pm_status token_line(struct http_tokens *t, char *line, size_t lineno,
				 struct pm_error *err)
{
	char *p;

	if (!strncmp(line, "\xEF\xBB\xBF", 3))
		return error_set(err, PM_ERR_INPUT, "token_file",
				 "line %zu: starts with a UTF-8 byte order mark; save the file "
				 "without it",
				 lineno);
	for (p = line; *p == ' ' || *p == '\t'; p++)
		;
	if (*p && *p != '#' && *p != '\n' && *p != '\r')
		return add_token(t, p, lineno, err);
	return PM_OK;
}

/* Lines "TOKEN TENANT [admin]"; '#' starts a comment line; blank lines are
 * fine. *out: a new set with one reference, the caller's. */
enum pm_status tokens_load(const char *path, struct http_tokens **out, struct pm_error *err)
{
	FILE *f = fopen(path, "r");
	struct http_tokens *t = calloc(1, sizeof *t);
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	enum pm_status st = PM_OK;

	*out = NULL;
	if (!t)
		st = error_set(err, PM_ERR_NOMEM, "", "out of memory");
	else if (!f)
		st = error_set(err, PM_ERR_IO, "token_file", "cannot open %s: %s", path,
			       strerror(errno));
	if (st)
		goto out;
	st = check_private(f, path, err);
	while (!st && getline(&line, &cap, f) != -1)
		st = token_line(t, line, ++lineno, err);
	if (!st && ferror(f))
		st = error_set(err, PM_ERR_IO, "token_file", "cannot read %s: %s", path,
			       strerror(errno));
	if (!st && !t->n)
		st = error_set(err, PM_ERR_INPUT, "token_file", "%s holds no 'TOKEN TENANT' line",
			       path);
out:
	free(line);
	if (f)
		fclose(f);
	if (!st) {
		t->refs = 1;
		*out = t;
	} else {
		tokens_free(t);
	}
	return st;
}

/* The current token set, with a reference for the caller (NULL without
 * access control). */
struct http_tokens *tokens_get(struct http_server *h)
{
	struct http_tokens *t;

	pthread_mutex_lock(&h->tokens_mu);
	if ((t = h->tokens))
		t->refs++;
	pthread_mutex_unlock(&h->tokens_mu);
	return t;
}

/* Drops a reference; the last one frees the set. */
void tokens_put(struct http_server *h, struct http_tokens *t)
{
	int last;

	if (!t)
		return;
	pthread_mutex_lock(&h->tokens_mu);
	last = --t->refs == 0;
	pthread_mutex_unlock(&h->tokens_mu);
	if (last)
		tokens_free(t);
}
