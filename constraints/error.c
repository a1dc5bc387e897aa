/* Caller-owned error reports: a status, the offending field, a message;
 * and the two helpers every message about user text uses: quotes cut to a
 * readable length, and "did you mean" suggestions. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "constraints.h"

enum pm_status error_set(struct pm_error *err, enum pm_status status, const char *field,
			 const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return status;
	err->status = status;
	snprintf(err->field, sizeof err->field, "%s", field ? field : "");
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof err->message, fmt, ap);
	va_end(ap);
	return status;
}

void error_prefix(struct pm_error *err, const char *prefix)
{
	char old[sizeof err->field];
	const char *sep = "";

	if (!err || !prefix || !*prefix)
		return;
	/* "records[3]" + "qi" -> "records[3].qi"; "[2]" needs no dot */
	if (err->field[0] && err->field[0] != '[')
		sep = ".";
	memcpy(old, err->field, sizeof old);
	/* a field too long for the buffer is cut, never overrun */
	if (snprintf(err->field, sizeof err->field, "%s%s%s", prefix, sep, old) < 0)
		err->field[0] = 0;
}

const char *error_status_name(enum pm_status status)
{
	switch (status) {
	case PM_OK:
		return "ok";
	case PM_ERR_INPUT:
		return "bad input";
	case PM_ERR_INCONSISTENT:
		return "inconsistent knowledge";
	case PM_ERR_NOMEM:
		return "out of memory";
	case PM_ERR_IO:
		return "i/o error";
	case PM_ERR_CANCELLED:
		return "cancelled";
	case PM_ERR_NOT_FOUND:
		return "not found";
	case PM_ERR_CONFLICT:
		return "conflict";
	case PM_ERR_BUSY:
		return "busy";
	case PM_ERR_TOO_LARGE:
		return "too large";
	case PM_ERR_INTERNAL:
		break;
	}
	return "internal error";
}

const char *error_clip(const char *s, char *buf)
{
	size_t n = strnlen(s, ERROR_CLIP_MAX + 1);

	if (n <= ERROR_CLIP_MAX) {
		memcpy(buf, s, n + 1);
		return buf;
	}
	/* cut before a UTF-8 continuation byte (10xxxxxx), never inside a
	 * character: messages end up in JSON, which must be valid UTF-8 */
	for (n = ERROR_CLIP_MAX; n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80; n--)
		;
	memcpy(buf, s, n);
	memcpy(buf + n, "...", 4);
	return buf;
}

/* ---- suggestions -------------------------------------------------------- */

/* A typo is at most this many edits away; longer words are not compared. */
#define SUGGEST_MAX_DIST 2
#define SUGGEST_MAX_LEN	 256
#define FAR		 (SUGGEST_MAX_DIST + 1)

/* Case and '-' vs '_' are not typos worth an edit: "Max-Iterations" is
 * "max_iterations". ASCII only, so no locale is involved. */
static int fold(char c)
{
	if (c == '-')
		return '_';
	return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : (unsigned char)c;
}

static size_t min2(size_t a, size_t b)
{
	return a < b ? a : b;
}

/*
 * Optimal string alignment distance (Levenshtein plus transpositions of
 * neighbours) of a and b, both at most SUGGEST_MAX_LEN bytes, capped at
 * FAR. Only the band |i - j| <= SUGGEST_MAX_DIST of the table is filled,
 * as any cell off it is over the cap: O(length), so comparing a word with
 * every value of a large dictionary stays cheap. Rows rotate through d;
 * a cell no row of the band wrote is FAR from the start.
 */
static size_t distance(const char *a, size_t na, const char *b, size_t nb)
{
	size_t d[3][SUGGEST_MAX_LEN + 2];

	for (size_t r = 0; r < 3; r++)
		for (size_t j = 0; j <= nb + 1; j++)
			d[r][j] = j < FAR && r == 0 ? j : FAR;
	for (size_t i = 1; i <= na; i++) {
		size_t *cur = d[i % 3], *up = d[(i + 2) % 3], *up2 = d[(i + 1) % 3];
		size_t lo = i > SUGGEST_MAX_DIST ? i - SUGGEST_MAX_DIST : 0;
		size_t hi = min2(i + SUGGEST_MAX_DIST, nb);

		if (lo > 0)
			cur[lo - 1] = FAR; /* stale from three rows up */
		for (size_t j = lo; j <= hi; j++) {
			size_t v;

			if (j == 0) {
				cur[0] = i;
				continue;
			}
			v = min2(up[j - 1] + (fold(a[i - 1]) != fold(b[j - 1])),
				 min2(up[j], cur[j - 1]) + 1);
			if (i > 1 && j > 1 && fold(a[i - 1]) == fold(b[j - 2]) &&
			    fold(a[i - 2]) == fold(b[j - 1]))
				v = min2(v, up2[j - 2] + 1);
			cur[j] = min2(v, FAR);
		}
	}
	return d[na % 3][nb];
}

/* Numbers ("39", "1.5e3") have neighbours that are other numbers, not
 * typos: "did you mean 38?" would mislead. */
static int has_letter(const char *s)
{
	for (; *s; s++)
		if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		    (unsigned char)*s >= 0x80)
			return 1;
	return 0;
}

const char *error_suggest(const char *word, const char *const *known, size_t n)
{
	size_t nw = strnlen(word, SUGGEST_MAX_LEN + 1), best = FAR;
	const char *pick = NULL;

	if (nw > SUGGEST_MAX_LEN || !has_letter(word))
		return NULL;
	for (size_t i = 0; i < n; i++) {
		size_t nk = known[i] ? strnlen(known[i], SUGGEST_MAX_LEN + 1) : SIZE_MAX, d;

		if (nk > SUGGEST_MAX_LEN || (nk > nw ? nk - nw : nw - nk) > SUGGEST_MAX_DIST)
			continue;
		d = distance(word, nw, known[i], nk);
		/* at most half the longer word changed: "min" is not "max" */
		if (d < best && 2 * d <= (nk > nw ? nk : nw)) {
			best = d;
			pick = known[i];
		}
	}
	return pick;
}

const char *error_hint(const char *word, const char *const *known, size_t n, char *buf)
{
	const char *hint = error_suggest(word, known, n);
	char clip[ERROR_CLIP_SIZE];

	buf[0] = '\0';
	if (hint)
		snprintf(buf, ERROR_HINT_SIZE, "; did you mean \"%s\"?", error_clip(hint, clip));
	return buf;
}

const char *error_field(char *buf, size_t len, const char *prefix, const char *a, const char *b)
{
	const char *p = prefix ? prefix : "";

	snprintf(buf, len, "%s%s%s%s", p, *p ? "." : "", a, b ? b : "");
	return buf;
}
