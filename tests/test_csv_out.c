/*
 * csv_out.c: the cases of tests/data/csv_out_cells.txt (a value and the
 * cell written for it): a formula (=, +, -, @, tab or CR first, not a
 * number) gets its leading ', numbers such as -2 and -2.5e3 stay as they
 * are, and quoting follows RFC 4180 around the guard; NULL is empty.
 */
#include "check.h"
#include "server.h"
#include "test_data.h"

struct buf {
	char s[512];
	size_t len;
};

static void put(void *ctx, const char *s, size_t n)
{
	struct buf *b = ctx;

	if (b->len + n < sizeof b->s) {
		memcpy(b->s + b->len, s, n);
		b->len += n;
		b->s[b->len] = '\0';
	}
}

/* \t, \r and \n as the bytes they name, in place. */
static void unescape(char *s)
{
	char *w = s;

	for (; *s; s++) {
		if (*s == '\\' && (s[1] == 't' || s[1] == 'r' || s[1] == 'n')) {
			s++;
			*w++ = *s == 't' ? '\t' : *s == 'r' ? '\r' : '\n';
		} else {
			*w++ = *s;
		}
	}
	*w = '\0';
}

static size_t check_case(char *line)
{
	char *tab = strchr(line, '\t');
	struct buf b = {0};

	if (!*line || *line == '#')
		return 0;
	CHECK(tab != NULL);
	if (!tab)
		return 0;
	*tab = '\0';
	unescape(line);
	unescape(tab + 1);
	csv_out_cell(line, put, &b);
	CHECK_STR(b.s, tab + 1);
	/* guarded: the cell (inside its quotes) starts with a ' the value lacks */
	CHECK(csv_out_formula(line) ==
	      (*line != '\'' && (tab[1] == '\'' || !strncmp(tab + 1, "\"'", 2))));
	return 1;
}

int main(void)
{
	char path[4096], *text, *save = NULL;
	size_t n = 0, len;
	struct buf b = {0};

	snprintf(path, sizeof path, "%s/csv_out_cells.txt", data_dir());
	text = read_file(path, &len);
	CHECK(text != NULL);
	for (char *l = text ? strtok_r(text, "\n", &save) : NULL; l;
	     l = strtok_r(NULL, "\n", &save))
		n += check_case(l);
	CHECK(n >= 20);
	csv_out_cell(NULL, put, &b);
	CHECK(b.len == 0 && !csv_out_formula(NULL) && !csv_out_formula(""));
	free(text);
	return check_done();
}
