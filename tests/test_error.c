/* Error reports: field prefixes, quotes of user text cut to 64 bytes at a
 * character boundary, and the "did you mean" rule. */
#include "check.h"
#include "constraints.h"

static void test_prefix(void)
{
	struct pm_error err = {0};

	error_set(&err, PM_ERR_INPUT, "qi", "is missing");
	error_prefix(&err, "records[3]");
	CHECK_STR(err.field, "records[3].qi");
	error_set(&err, PM_ERR_INPUT, "[2]", "x");
	error_prefix(&err, "rules");
	CHECK_STR(err.field, "rules[2]");
}

static void test_clip(void)
{
	char buf[ERROR_CLIP_SIZE], s[200], want[200];

	CHECK_STR(error_clip("short", buf), "short");
	memset(s, 'a', 64);
	s[64] = '\0';
	CHECK_STR(error_clip(s, buf), s); /* exactly the limit: whole */
	strcpy(s + 64, "b");
	memset(want, 'a', 64);
	strcpy(want + 64, "...");
	CHECK_STR(error_clip(s, buf), want);
	/* a two-byte character across the limit is left out whole */
	memset(s, 'a', 63);
	strcpy(s + 63, "\xC3\xA9tail");
	memset(want, 'a', 63);
	strcpy(want + 63, "...");
	CHECK_STR(error_clip(s, buf), want);
}

static const char *suggest(const char *word, const char *const *known)
{
	size_t n = 0;

	while (known[n])
		n++;
	return error_suggest(word, known, n);
}

static void test_suggest(void)
{
	static const char *const mine[] = {"positive", "negative", "min_support", "qi_attributes",
					   NULL};
	static const char *const solver[] = {"method", "tolerance", "max_iterations", "time_limit",
					     NULL};
	static const char *const rule[] = {"if", "then", "probability", "min", "max", NULL};
	static const char *const row[] = {"qi", "group", "sa", NULL};
	static const char *const ages[] = {"38", "39", "40", NULL};
	static const char *const max[] = {"max", NULL};
	char huge[400];
	const char *got;

	CHECK_STR(suggest("positve", mine), "positive");   /* deletion */
	CHECK_STR(suggest("negattive", mine), "negative"); /* insertion */
	CHECK_STR(suggest("qi_atributes", mine), "qi_attributes");
	CHECK_STR(suggest("Positive", mine), "positive");		/* case is no edit */
	CHECK_STR(suggest("max-iterations", solver), "max_iterations"); /* nor - for _ */
	CHECK_STR(suggest("tolerence", solver), "tolerance");		/* substitution */
	CHECK_STR(suggest("fi", rule), "if");				/* swapped neighbours */
	CHECK_STR(suggest("gruop", row), "group");
	CHECK_STR(suggest("probabilty", rule), "probability");
	CHECK_STR(suggest("Flu", (const char *const[]){"cancer", "flu", NULL}), "flu");
	/* too far, or too much of a short word changed */
	CHECK(suggest("colour", row) == NULL);
	CHECK(suggest("min", max) == NULL);
	CHECK(suggest("x", row) == NULL);
	CHECK(suggest("prob", rule) == NULL);
	CHECK(suggest("tolerance_x2", solver) == NULL);
	/* numbers have no typos */
	CHECK(suggest("37", ages) == NULL);
	/* long words are not compared at all */
	memset(huge, 'p', sizeof huge - 1);
	huge[sizeof huge - 1] = '\0';
	CHECK(suggest(huge, mine) == NULL);
	CHECK(error_suggest("positive", NULL, 0) == NULL);
	/* the closest wins; a tie goes to the first listed */
	got = suggest("mux", (const char *const[]){"mix", "max", "muxx", NULL});
	CHECK_STR(got, "mix");
}

/* The tail of an "unknown ..." message, and a part's field name. */
static void test_hint_and_field(void)
{
	static const char *const known[] = {"alice", "bob"};
	char hint[ERROR_HINT_SIZE], f[64];

	CHECK_STR(error_hint("alise", known, 2, hint), "; did you mean \"alice\"?");
	CHECK_STR(error_hint("zed", known, 2, hint), "");
	CHECK_STR(error_field(f, sizeof f, "rules[3]", "if.", "sex"), "rules[3].if.sex");
	CHECK_STR(error_field(f, sizeof f, "rules[3]", "then", NULL), "rules[3].then");
	CHECK_STR(error_field(f, sizeof f, "", "min", NULL), "min");
	CHECK_STR(error_field(f, sizeof f, NULL, "min", NULL), "min");
}

int main(void)
{
	test_prefix();
	test_clip();
	test_suggest();
	test_hint_and_field();
	return check_done();
}
