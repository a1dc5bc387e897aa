/*
 * A text/csv POST /v1/datasets read as it arrives (issue 25): each piece
 * libmicrohttpd hands over is checked as UTF-8 (a sequence may be cut
 * between pieces) and fed to the CSV loader (csv_loader: the rows go to
 * the dataset builder as they are read), so what a 400 MB upload of 10M
 * records holds is the builder's codes, never the text. The answer at the
 * end is the one the whole body would have had: invalid UTF-8 first, then
 * malformed CSV, then the dataset's own errors.
 */
#include <stdint.h>
#include <stdlib.h>

#include "http_internal.h"

struct upload {
	struct csv_loader *l;
	size_t bytes;	/* fed so far */
	size_t bad;	/* offset of the first byte that is not UTF-8; SIZE_MAX: none */
	size_t need;	/* continuation bytes the last sequence still needs */
	size_t lead_at; /* where that sequence began */
};

struct upload *upload_create(const char *sa, const char *group, const char *name)
{
	struct upload *u = calloc(1, sizeof *u);

	if (u && !(u->l = csv_loader_create(sa, group, name))) {
		free(u);
		u = NULL;
	}
	if (u)
		u->bad = SIZE_MAX;
	return u;
}

void upload_destroy(struct upload *u)
{
	if (!u)
		return;
	csv_loader_destroy(u->l);
	free(u);
}

/* Bytes a sequence starting with c takes, 0 when c cannot start one (the
 * rules of http_utf8_invalid_at). */
static size_t seq_len(unsigned char c)
{
	if (c < 0x80)
		return 1;
	if ((c >> 5) == 6)
		return c < 0xc2 ? 0 : 2;
	if ((c >> 4) == 14)
		return 3;
	return (c >> 3) == 30 ? 4 : 0;
}

/* UTF-8 over p[0 .. n), continuing the last piece's sequence. */
static void check_utf8(struct upload *u, const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n && u->bad == SIZE_MAX; i++) {
		size_t len;

		if (u->need) {
			if ((p[i] & 0xc0) != 0x80)
				u->bad = u->lead_at;
			u->need--;
			continue;
		}
		if (p[i] < 0x80)
			continue;
		if (!(len = seq_len(p[i])))
			u->bad = u->bytes + i;
		u->need = len ? len - 1 : 0;
		u->lead_at = u->bytes + i;
	}
}

void upload_feed(struct upload *u, const char *data, size_t n)
{
	if (u->bad == SIZE_MAX)
		check_utf8(u, (const unsigned char *)data, n);
	/* text that is not UTF-8 is refused whatever it holds: not parsed */
	if (u->bad == SIZE_MAX)
		csv_loader_feed(u->l, data, n);
	u->bytes += n;
}

int upload_finish(struct upload *u, struct dataset **ds, struct http_response *res)
{
	struct pm_error err = {0};
	int malformed = 0;

	*ds = NULL;
	if (u->bad == SIZE_MAX && u->need)
		u->bad = u->lead_at; /* cut short by the end */
	if (u->bad != SIZE_MAX) {
		http_problem(res, 400, NULL, "the CSV is not valid UTF-8 (byte %zu)", u->bad);
		return -1;
	}
	if (!csv_loader_finish(u->l, ds, &malformed, &err))
		return 0;
	if (malformed)
		http_problem(res, 400, err.field, "malformed CSV: %s", err.message);
	else
		http_problem_err(res, &err);
	return -1;
}
