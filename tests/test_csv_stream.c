/* The CSV loader (text fed in pieces cut anywhere: inside quotes, between
 * CR and LF, inside the byte order mark) against csv_parse + csv_dataset
 * on the whole text: the same dataset (packed bytes equal) or the same
 * first error (kind, field and message), on fixed cases and random texts
 * built to hit every state of the parser. */
#include <stdint.h>

#include "check.h"
#include "constraints.h"
#include "random_table.h"

struct outcome {
	enum pm_status st;
	int malformed;
	struct pm_error err;
	unsigned char *blob;
	size_t len;
};

static void packed(struct dataset *ds, struct outcome *o)
{
	struct pm_error err = {0};

	if (ds)
		CHECK(dataset_pack(ds, &o->blob, &o->len, &err) == PM_OK);
	dataset_destroy(ds);
}

static void whole(const char *text, size_t len, struct outcome *o)
{
	struct csv_table t;
	struct dataset *ds = NULL;

	memset(o, 0, sizeof *o);
	o->st = csv_parse(text, len, &t, &o->err);
	o->malformed = o->st == PM_ERR_INPUT;
	if (!o->st) {
		o->st = csv_dataset(&t, "s", "g", "n", &ds, &o->err);
		csv_table_finish(&t);
	}
	packed(ds, o);
}

/* Fed in pieces: cut at each of cuts[0 .. n) (ascending, within len). */
static void pieces(const char *text, size_t len, const size_t *cuts, size_t n, struct outcome *o)
{
	struct csv_loader *l = csv_loader_create("s", "g", "n");
	struct dataset *ds = NULL;
	size_t at = 0;

	memset(o, 0, sizeof *o);
	for (size_t i = 0; l && i <= n; i++) {
		size_t to = i < n ? cuts[i] : len;

		csv_loader_feed(l, text + at, to - at);
		at = to;
	}
	o->st = l ? csv_loader_finish(l, &ds, &o->malformed, &o->err) : PM_ERR_NOMEM;
	csv_loader_destroy(l);
	packed(ds, o);
}

static int same(const struct outcome *a, const struct outcome *b)
{
	if (a->st != b->st || a->malformed != b->malformed)
		return 0;
	if (a->st)
		return !strcmp(a->err.field, b->err.field) &&
		       !strcmp(a->err.message, b->err.message);
	return a->len == b->len && !memcmp(a->blob, b->blob, a->len);
}

static int mismatches, kinds[3]; /* ok, malformed, dataset error */

static void compare(const char *text, size_t len, uint64_t *rng)
{
	struct outcome ref, got;
	size_t cuts[8], n = 0;

	whole(text, len, &ref);
	kinds[ref.st ? 1 + !ref.malformed : 0]++;
	/* one piece, every byte alone, and random cuts */
	for (int round = 0; round < 3; round++) {
		if (round == 1) {
			struct csv_loader *l = csv_loader_create("s", "g", "n");
			struct dataset *ds = NULL;

			memset(&got, 0, sizeof got);
			for (size_t i = 0; i < len; i++)
				csv_loader_feed(l, text + i, 1);
			got.st = csv_loader_finish(l, &ds, &got.malformed, &got.err);
			csv_loader_destroy(l);
			packed(ds, &got);
		} else {
			n = 0;
			for (size_t k = 0; round == 2 && len && k < 8; k++)
				cuts[n++] = rng_in(rng, 0, len);
			for (size_t i = 1; i < n; i++) /* insertion sort */
				for (size_t j = i; j > 0 && cuts[j - 1] > cuts[j]; j--) {
					size_t t = cuts[j];
					cuts[j] = cuts[j - 1], cuts[j - 1] = t;
				}
			pieces(text, len, cuts, n, &got);
		}
		CHECK(same(&ref, &got));
		if (!same(&ref, &got) && mismatches++ < 5)
			fprintf(stderr, "round %d on [%.*s]: whole %d %s: %s; pieces %d %s: %s\n",
				round, (int)len, text, ref.st, ref.err.field, ref.err.message,
				got.st, got.err.field, got.err.message);
		free(got.blob);
	}
	free(ref.blob);
}

static const char *const FIXED[] = {
    "a,s,g\n1,x,1\n2,y,1\n",
    "a,s,g\r\n1,x,1\r\n2,y,2",
    "\xEF\xBB\xBF"
    "a,s,g\n1,x,1\n",
    "\xEF\xBB"
    "a,s,g\n1,x,1\n",
    "\xEF",
    "",
    "\n\r\n\n",
    "a,s,g\n\"1\n2\",x,1\n\n4,5,6,7\n",
    "a,s,g\n\"x\"y,z,1\n",
    "a,s,g\n\"unterminated,1,2\n",
    "a,s,g\n1,x,1\r",
    "a,s,g\n\"1\",x,\"1\"\r",
    "a,s,g\n\"1\",x,\"1\"\rz",
    "a,s,g\n\r\n\r1,x,1\n",
    "a,a,g\n",
    "a,,g\n",
    "a,s\n1,2\n",
    "a,s,g\n",
    "b,c,g\n1,2,3\n",
    "a,s,g\n1,x\n",
    "a,s,g\n\"\",\"\"\"\",1\n",
};

static void fixed(uint64_t *rng)
{
	for (size_t i = 0; i < sizeof FIXED / sizeof *FIXED; i++)
		compare(FIXED[i], strlen(FIXED[i]), rng);
	compare("a,s,g\n1,\0,1\n", 12, rng);
	compare("a,s,g\n\"1\n\0\",x,1\n", 16, rng);
}

static const char *const HEADS[] = {"a,s,g", "s,a,b,g", "\xEF\xBB\xBF\"a\",s,g", "a,a,g",
				    "a,,g",  "s,g",	"\"g\",\"s\",\"a\"\r",	 "a,s,g,"};
static const char *const FIELDS[] = {
    "1", "2", "x", "\"q,\"\"q\"", "\"multi\nline\"", "", "\"a\"b", " sp ", "\r", "\"\"", "a\"b"};
static const char *const ENDS[] = {"\n", "\r\n", "\n\n", "\r\n\r\n", "\n\r\n"};

/* A random text of a header and rows, now and then a stray byte. */
static size_t random_text(uint64_t *rng, char *buf, size_t cap)
{
	size_t len = 0, rows = rng_in(rng, 0, 6);
	const char *head = HEADS[rng_in(rng, 0, sizeof HEADS / sizeof *HEADS - 1)];

#define ADD(s, n)                                                                                  \
	do {                                                                                       \
		size_t n_ = (n);                                                                   \
		if (len + n_ < cap)                                                                \
			memcpy(buf + len, (s), n_), len += n_;                                     \
	} while (0)
	ADD(head, strlen(head));
	for (size_t r = 0; r < rows; r++) {
		size_t k = rng_in(rng, 0, 9) ? 3 : rng_in(rng, 1, 4);
		const char *end = ENDS[rng_in(rng, 0, sizeof ENDS / sizeof *ENDS - 1)];

		ADD(end, strlen(end));
		for (size_t f = 0; f < k; f++) {
			const char *s = FIELDS[rng_in(rng, 0, sizeof FIELDS / sizeof *FIELDS - 1)];

			if (f)
				ADD(",", 1);
			ADD(s, strlen(s));
		}
		if (!rng_in(rng, 0, 19))
			ADD("\0\"\r\n," + rng_in(rng, 0, 4), 1);
	}
	if (rng_in(rng, 0, 1))
		ADD("\n", 1);
#undef ADD
	return len;
}

int main(void)
{
	uint64_t rng = 2025;
	char buf[512];

	fixed(&rng);
	for (int i = 0; i < 20000; i++) {
		size_t len = random_text(&rng, buf, sizeof buf);

		compare(buf, len, &rng);
	}
	/* the random texts reach all three outcomes */
	CHECK(kinds[0] > 1000 && kinds[1] > 1000 && kinds[2] > 1000);
	fprintf(stderr, "%d datasets, %d malformed, %d dataset errors\n", kinds[0], kinds[1],
		kinds[2]);
	return check_done();
}
