/*
 * One CSV cell as every CSV pmaxent writes spells it (the posterior and
 * risk CSVs of the service, `pmaxent anatomize --csv`): RFC 4180 quoting
 * where the reader would otherwise split or trim the cell, and the OWASP
 * rule against CSV injection, so that opening an export in a spreadsheet
 * never runs a formula a QI or SA value smuggled in.
 */
#include <string.h>

#include "server.h"

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* A decimal number as a spreadsheet reads one: [+-] digits [. digits]
 * [e [+-] digits], or [+-] . digits ... ; nothing before or after. */
static int is_number(const char *s)
{
	size_t digits = 0;

	if (*s == '+' || *s == '-')
		s++;
	for (; is_digit(*s); s++)
		digits++;
	if (*s == '.')
		for (s++; is_digit(*s); s++)
			digits++;
	if (!digits)
		return 0;
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (!is_digit(*s))
			return 0;
		while (is_digit(*s))
			s++;
	}
	return *s == '\0';
}

int csv_out_formula(const char *s)
{
	return s && *s && strchr("=+-@\t\r", *s) && !is_number(s);
}

void csv_out_cell(const char *s, csv_out_put put, void *ctx)
{
	int guard = csv_out_formula(s);

	if (!s)
		s = "";
	if (!s[strcspn(s, ",\"\r\n")] && s[0] != ' ' && !(*s && s[strlen(s) - 1] == ' ')) {
		if (guard)
			put(ctx, "'", 1);
		put(ctx, s, strlen(s));
		return;
	}
	put(ctx, guard ? "\"'" : "\"", guard ? 2 : 1);
	for (const char *q; (q = strchr(s, '"')); s = q + 1) {
		put(ctx, s, (size_t)(q - s) + 1);
		put(ctx, "\"", 1);
	}
	put(ctx, s, strlen(s));
	put(ctx, "\"", 1);
}
