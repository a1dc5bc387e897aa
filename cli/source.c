/*
 * Reading an input file (or "-", standard input) whole, for the commands
 * that parse it from memory: text that is not JSON or CSV is refused at
 * its first bytes (a NUL, a control byte, invalid UTF-8, a byte that
 * cannot begin the document), so that /dev/zero or /dev/urandom end at
 * once with a message instead of growing memory until the kernel steps
 * in; and no input is read past --max-input bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* The first bytes judged before the rest is read. */
#define SNIFF_BYTES 4096

/* The length of the UTF-8 sequence at s (n bytes left): 1-4, 0 when it
 * is not one, or n when the block ends inside it (judged later). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t k = s[0] < 0x80			 ? 1
		   : s[0] >= 0xc2 && s[0] < 0xe0 ? 2
		   : s[0] >= 0xe0 && s[0] < 0xf0 ? 3
		   : s[0] >= 0xf0 && s[0] < 0xf5 ? 4
						 : 0;

	for (size_t i = 1; i < k; i++) {
		if (i == n)
			return n;
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	}
	/* overlong three- and four-byte forms, surrogates, above U+10FFFF */
	if ((k == 3 && n > 1 &&
	     ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0))) ||
	    (k == 4 && n > 1 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))))
		return 0;
	return k;
}

/* Why the bytes of buf before *at are not text (a message naming the
 * byte at *at), or NULL. */
static const char *not_text(const unsigned char *buf, size_t n, size_t *at)
{
	for (size_t i = 0, k; i < n; i += k) {
		*at = i;
		if (buf[i] == 0)
			return "a NUL byte";
		if ((buf[i] < 0x20 && !strchr("\t\r\n", buf[i])) || buf[i] == 0x7f)
			return "a control byte";
		if (!(k = utf8_len(buf + i, n - i)))
			return "a byte that is not UTF-8";
	}
	return NULL;
}

int source_sniff(const char *text, size_t n, int forms, const char **why, size_t *at)
{
	const unsigned char *buf = (const unsigned char *)text;
	size_t i = n >= 3 && !memcmp(buf, "\xef\xbb\xbf", 3) ? 3 : 0;

	n = n < SNIFF_BYTES ? n : SNIFF_BYTES;
	if ((*why = not_text(buf, n, at)))
		return 0;
	while (i < n && strchr(" \t\r\n", buf[i]))
		i++;
	*at = i;
	if ((forms & SOURCE_JSON) && (i == n || buf[i] == '{' || buf[i] == '['))
		return SOURCE_JSON;
	if ((forms & SOURCE_CSV) && (i == n || buf[i] != '\r'))
		return SOURCE_CSV;
	*why = forms & SOURCE_CSV ? "a byte that cannot begin a CSV header"
				  : "a byte that cannot begin a JSON document ('{' or '[')";
	return 0;
}

/* "stdin" for "-", else the path: how messages name the input. */
const char *source_name(const char *path)
{
	return strcmp(path, "-") ? path : "stdin";
}

/* Reads into s->text from len until full (cap) or the end; 0, or -1
 * with errno. */
static int fill(int fd, struct source *s, size_t cap)
{
	while (s->len < cap) {
		ssize_t k = read(fd, s->text + s->len, cap - s->len);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -1;
		if (k == 0)
			break;
		s->len += (size_t)k;
	}
	return 0;
}

/* The first block, judged; then the rest, growing the buffer, up to
 * max + 1 bytes (one more than allowed tells that there is more). */
static enum pm_status read_all(int fd, const char *path, size_t cap, unsigned long long max,
			       int forms, struct source *s, struct pm_error *err)
{
	const char *why;
	size_t at, want = cap < SNIFF_BYTES ? cap : SNIFF_BYTES;
	char *grown;

	if (!(s->text = malloc(cap + 1)))
		return error_set(err, PM_ERR_NOMEM, "", "out of memory reading %s", path);
	if (fill(fd, s, want))
		goto io;
	if (!(s->form = source_sniff(s->text, s->len, forms, &why, &at)))
		return error_set(err, PM_ERR_INPUT, "",
				 "%s is not %s text: %s (0x%02x) at byte %zu", path,
				 forms == SOURCE_JSON  ? "JSON"
				 : forms == SOURCE_CSV ? "CSV"
						       : "JSON or CSV",
				 why, (unsigned char)s->text[at], at);
	if (fill(fd, s, cap))
		goto io;
	while (s->len == cap && cap <= max) {
		cap = cap > (size_t)(max + 1) / 2 ? (size_t)max + 1 : 2 * cap;
		if (!(grown = realloc(s->text, cap + 1)))
			return error_set(err, PM_ERR_NOMEM, "", "out of memory reading %s", path);
		s->text = grown;
		if (fill(fd, s, cap))
			goto io;
	}
	if (s->len > max)
		return error_set(err, PM_ERR_INPUT, "--max-input",
				 "%s is larger than the limit of %llu bytes (read no further)",
				 path, max);
	s->text[s->len] = '\0';
	return PM_OK;
io:
	return error_set(err, PM_ERR_IO, "", "cannot read %s: %s", path, strerror(errno));
}

enum pm_status source_read(const char *path, const struct args *a, int forms, const char *cannot,
			   struct source *s, struct pm_error *err)
{
	int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : STDIN_FILENO;
	size_t cap = 1 << 16;
	struct stat sb = {0};
	enum pm_status st;

	*s = (struct source){0};
	if (fd < 0)
		return error_set(err, PM_ERR_IO, "", "%s %s: %s", cannot, path, strerror(errno));
	/* a regular file's size is known: the limit is checked before reading
	 * and the buffer made to measure */
	if (!fstat(fd, &sb) && S_ISREG(sb.st_mode) && (unsigned long long)sb.st_size > a->max_input)
		st = error_set(err, PM_ERR_INPUT, "--max-input",
			       "%s is %lld bytes, over the limit of %llu bytes", source_name(path),
			       (long long)sb.st_size, a->max_input);
	else
		st = read_all(fd, source_name(path),
			      S_ISREG(sb.st_mode) && sb.st_size > 0 ? (size_t)sb.st_size + 1 : cap,
			      a->max_input, forms, s, err);
	if (fd != STDIN_FILENO)
		close(fd);
	if (st)
		source_finish(s);
	return st;
}

void source_finish(struct source *s)
{
	free(s->text);
	*s = (struct source){0};
}
