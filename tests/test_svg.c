/*
 * svg.c: every chart below is well-formed XML (a tag balance check here,
 * and xmllint --noout when it is installed) with no NaN or infinity in
 * it, and
 *  - ticks: 0..1 by 0.2, 0..2500 by 500, data 0.1..0.55 widened to
 *    0.1..0.6, -1..1 without "-0", 0..0.3 without 0.30000000000000004,
 *    0..0.0003 and 1e6..3.5e6 in plain decimals; an integer x axis
 *    (K = 0, 1, 2) by whole steps where the plain one goes by 0.5;
 *  - a title and names with <&>"' are escaped; control characters and
 *    invalid UTF-8 become U+FFFD;
 *  - NaN and infinite values are gaps (a new subpath), not points;
 *  - one point, identical values, empty series and no series at all
 *    still get two ticks or more on each axis;
 *  - the legend names every series, in order; the ninth is dashed;
 *  - categories label the x axis (a dot plot); a scatter with the
 *    diagonal.
 * With an argument, the Figure 5 look-alike is also written to that file
 * (to look at: rsvg-convert -o fig5.png FILE).
 */
#include <stdint.h>
#include <unistd.h>

#include "check.h"
#include "server.h"

#define MAX_TEXTS 32

/* Tags balance, attribute values are quoted and every '&' starts an
 * entity: enough of XML to catch what a writer by hand gets wrong. */
static int balanced(const char *d)
{
	const char *stack[64];
	size_t depth = 0, roots = 0;

	for (const char *p = d; *p; p++) {
		if (*p == '&') {
			if (strncmp(p, "&amp;", 5) && strncmp(p, "&lt;", 4) &&
			    strncmp(p, "&gt;", 4) && strncmp(p, "&quot;", 6) &&
			    strncmp(p, "&apos;", 6))
				return 0;
		} else if (*p == '<') {
			const char *name = p + 1 + (p[1] == '/'), *end = strchr(p, '>');
			size_t n = strcspn(name, " \t\n/>");

			if (!end || memchr(name, '<', (size_t)(end - name)))
				return 0;
			if (p[1] == '/') {
				if (!depth || strncmp(stack[--depth], name, n) ||
				    !strchr(" \t\n/>", stack[depth][n]))
					return 0;
			} else if (end[-1] != '/') {
				if (depth == 64)
					return 0;
				roots += depth == 0;
				stack[depth++] = name;
			}
			for (const char *q = p; q < end; q++)
				if (*q == '=' && q[1] != '"')
					return 0;
			p = end;
		}
	}
	return depth == 0 && roots == 1;
}

/* xmllint --noout on the document; 1 when it is not installed. */
static int xmllint_ok(const char *doc)
{
	static int have = -1;
	char path[] = "/tmp/test_svg_XXXXXX", cmd[64];
	int fd, rc;

	if (have < 0 && !(have = system("command -v xmllint >/dev/null 2>&1") == 0))
		fprintf(stderr, "xmllint not installed: the tag balance check alone\n");
	if (!have)
		return 1;
	if ((fd = mkstemp(path)) < 0)
		return 0;
	rc = write(fd, doc, strlen(doc)) == (ssize_t)strlen(doc);
	close(fd);
	snprintf(cmd, sizeof cmd, "xmllint --noout %s", path);
	rc = rc && system(cmd) == 0;
	unlink(path);
	return rc;
}

static void check_doc(const char *doc)
{
	CHECK(doc != NULL);
	if (!doc)
		return;
	CHECK(balanced(doc));
	CHECK(xmllint_ok(doc));
	CHECK_CONTAINS(doc, "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
			    "width=\"720\" height=\"440\" viewBox=\"0 0 720 440\"");
	CHECK_CONTAINS(doc, "<title>");
	CHECK(!strstr(doc, "nan") && !strstr(doc, "inf")); /* printf's forms */
}

/* The texts of the elements with class cls, in document order. */
static size_t texts(const char *doc, const char *cls, char out[][64])
{
	char key[32];
	size_t n = 0;

	snprintf(key, sizeof key, "class=\"%s\"", cls);
	for (const char *p = doc; n < MAX_TEXTS && (p = strstr(p, key)); n++) {
		const char *b = strchr(p, '>') + 1, *e = strchr(b, '<');

		snprintf(out[n], 64, "%.*s", (int)(e - b), b);
		p = e;
	}
	return n;
}

/* The d attribute of the first path with class cls, copied into buf. */
static const char *path_d(const char *doc, const char *cls, char *buf, size_t size)
{
	char key[32];
	const char *p, *e;

	snprintf(key, sizeof key, "class=\"%s\" d=\"", cls);
	if (!(p = strstr(doc, key)))
		return "";
	p += strlen(key);
	e = strchr(p, '"');
	snprintf(buf, size, "%.*s", (int)(e - p), p);
	return buf;
}

static size_t count_char(const char *s, char c)
{
	size_t n = 0;

	for (; *s; s++)
		n += *s == c;
	return n;
}

/* The tick labels of class cls are exactly want (NULL-terminated). */
static void check_ticks(const char *doc, const char *cls, const char *const *want)
{
	char got[MAX_TEXTS][64];
	size_t n = texts(doc, cls, got), k = 0;

	for (; want[k]; k++)
		CHECK_STR(k < n ? got[k] : "(none)", want[k]);
	CHECK(n == k);
}

static char *chart_y(const double *y, size_t n, double y_min, double y_max)
{
	struct svg_chart c = {.title = "t", .y_min = y_min, .y_max = y_max};
	struct svg_series s = {.name = "s", .y = y, .n = n};
	char *doc = svg_render(&c, &s, 1, NULL);

	check_doc(doc);
	return doc;
}

/* K = 0, 1, 2: a plain axis ticks by 0.5, a count's by 1. */
static void test_integer_ticks(void)
{
	static const char *const halves[] = {"0", "0.5", "1", "1.5", "2", NULL};
	static const char *const whole[] = {"0", "1", "2", NULL};
	double x[] = {0, 1, 2}, y[] = {1, 0.5, 0.2};
	struct svg_chart c = {.title = "t"};
	struct svg_series ser = {.name = "s", .x = x, .y = y, .n = 3};
	char *doc = svg_render(&c, &ser, 1, NULL);

	check_doc(doc);
	check_ticks(doc, "xtick", halves);
	free(doc);
	c.x_integer = 1;
	doc = svg_render(&c, &ser, 1, NULL);
	check_doc(doc);
	check_ticks(doc, "xtick", whole);
	free(doc);
}

static void test_ticks(void)
{
	static const char *const unit[] = {"0", "0.2", "0.4", "0.6", "0.8", "1", NULL};
	static const char *const k[] = {"0", "500", "1000", "1500", "2000", "2500", NULL};
	static const char *const acc[] = {"0.1", "0.2", "0.3", "0.4", "0.5", "0.6", NULL};
	static const char *const sym[] = {"-1", "-0.5", "0", "0.5", "1", NULL};
	static const char *const tenths[] = {"0", "0.1", "0.2", "0.3", NULL};
	static const char *const tiny[] = {"0", "0.0001", "0.0002", "0.0003", NULL};
	static const char *const big[] = {"1000000", "1500000", "2000000", "2500000",
					  "3000000", "3500000", NULL};
	double x[] = {0, 1250, 2500}, y[] = {0.55, 0.3, 0.1}, s[] = {-1, 1}, t[] = {0, 0.3};
	double t4[] = {0, 3e-4}, m[] = {1e6, 3.5e6};
	struct svg_chart c = {.x_label = "K", .y_label = "accuracy", .y_min = 0, .y_max = 1};
	struct svg_series ser = {.name = "positive", .x = x, .y = y, .n = 3};
	char *doc = svg_render(&c, &ser, 1, NULL);

	check_doc(doc);
	check_ticks(doc, "ytick", unit);
	check_ticks(doc, "xtick", k);
	free(doc);
	check_ticks(doc = chart_y(y, 3, 0, 0), "ytick", acc);
	free(doc);
	check_ticks(doc = chart_y(s, 2, 0, 0), "ytick", sym);
	free(doc);
	check_ticks(doc = chart_y(t, 2, 0, 0), "ytick", tenths);
	free(doc);
	check_ticks(doc = chart_y(t4, 2, 0, 0), "ytick", tiny);
	free(doc);
	check_ticks(doc = chart_y(m, 2, 0, 0), "ytick", big);
	free(doc);
	test_integer_ticks();
}

static void test_escape(void)
{
	static const char *const cats[] = {"39, <Male>", "a & b"};
	double y[] = {0.5, 0.25};
	struct svg_chart c = {.title = "P*(s|q) <&> \"top\" 'ten'",
			      .x_label = "<x>",
			      .categories = cats,
			      .n_categories = 2};
	struct svg_series s = {.name = "bad\x01 \xff\xc3 \xed\xa0\x80 ok", .y = y, .n = 2};
	char *doc = svg_render(&c, &s, 1, NULL);

	check_doc(doc);
	CHECK_CONTAINS(doc, "<title>P*(s|q) &lt;&amp;&gt; &quot;top&quot; &apos;ten&apos;</title>");
	CHECK_CONTAINS(doc, ">P*(s|q) &lt;&amp;&gt; &quot;top&quot; &apos;ten&apos;</text>");
	CHECK_CONTAINS(doc, ">&lt;x&gt;</text>");
	CHECK_CONTAINS(doc, ">39, &lt;Male&gt;</text>");
	CHECK_CONTAINS(doc, ">a &amp; b</text>");
	CHECK_CONTAINS(doc, ">bad\xEF\xBF\xBD \xEF\xBF\xBD\xEF\xBF\xBD \xEF\xBF\xBD\xEF\xBF\xBD"
			    "\xEF\xBF\xBD ok</text>");
	free(doc);
}

static void test_gaps(void)
{
	double x[] = {0, 1, 2, 3, 4, 5, NAN}, y[] = {0.1, NAN, 0.3, 0.4, INFINITY, 0.2, 0.5};
	struct svg_chart c = {.title = "gaps"};
	struct svg_series s = {.name = "mixed", .x = x, .y = y, .n = 7};
	char buf[512], *doc = svg_render(&c, &s, 1, NULL);

	check_doc(doc);
	/* 0 | 2 3 | 5: three subpaths, one segment */
	CHECK(count_char(path_d(doc, "line", buf, sizeof buf), 'M') == 3);
	CHECK(count_char(buf, 'L') == 1);
	CHECK(count_char(path_d(doc, "points", buf, sizeof buf), 'M') == 4);
	free(doc);
}

/* Data with no spread: one point, identical values, nothing at all. */
static void test_degenerate(void)
{
	double one_x[] = {3}, one_y[] = {0.5}, same[] = {0.3, 0.3, 0.3}, zeros[] = {0, 0};
	struct svg_chart c = {.title = "degenerate"};
	struct svg_series s[] = {{.name = "one", .x = one_x, .y = one_y, .n = 1},
				 {.name = "same", .y = same, .n = 3},
				 {.name = "zeros", .y = zeros, .n = 2},
				 {.name = "empty", .n = 0, .style = SVG_LINE}};
	char got[MAX_TEXTS][64];
	char *doc;

	for (size_t i = 0; i < 4; i++) {
		check_doc(doc = svg_render(&c, &s[i], 1, NULL));
		CHECK(texts(doc, "xtick", got) >= 2);
		CHECK(texts(doc, "ytick", got) >= 2);
		CHECK(texts(doc, "legend", got) == 1);
		free(doc);
	}
	check_doc(doc = svg_render(&c, NULL, 0, NULL));
	CHECK(texts(doc, "xtick", got) >= 2 && texts(doc, "legend", got) == 0);
	free(doc);
}

static void test_legend(void)
{
	char names[9][64], got[MAX_TEXTS][64];
	double y[9][3];
	struct svg_series s[9];
	struct svg_chart c = {.title = "Figure 6", .x_label = "K", .y_label = "accuracy"};
	size_t len = 0;
	char *doc;

	for (size_t i = 0; i < 9; i++) {
		snprintf(names[i], sizeof names[i], "T = %zu", i + 1);
		for (size_t k = 0; k < 3; k++)
			y[i][k] = 0.1 * (double)(i + k);
		s[i] = (struct svg_series){.name = names[i], .y = y[i], .n = 3};
	}
	check_doc(doc = svg_render(&c, s, 9, &len));
	CHECK(len == strlen(doc));
	CHECK(texts(doc, "legend", got) == 9);
	for (size_t i = 0; i < 9; i++)
		CHECK_STR(got[i], names[i]);
	CHECK_CONTAINS(doc, "stroke-dasharray=\"6,3\""); /* the ninth: colours repeat */
	free(doc);
}

/* The report's charts: by tuple, and a scatter. */
static void test_categories(void)
{
	static const char *const cats[] = {"39, Male", "50, Female", "38, Male", NULL};
	double base[] = {0.4, 0.3, 0.25}, post[] = {0.9, 0.6, 0.2};
	struct svg_chart c = {.title = "Top tuples",
			      .y_label = "P*(s|q)",
			      .y_min = 0,
			      .y_max = 1,
			      .categories = cats,
			      .n_categories = 3};
	struct svg_series s[] = {{.name = "baseline", .y = base, .n = 3, .style = SVG_POINTS},
				 {.name = "P*(s|q)", .y = post, .n = 3, .style = SVG_POINTS}};
	struct svg_chart sc = {.title = "Posterior against baseline", .diagonal = 1};
	char buf[512], *doc;

	check_doc(doc = svg_render(&c, s, 2, NULL));
	check_ticks(doc, "xtick", cats);
	CHECK(!strstr(doc, "class=\"line\""));
	CHECK(count_char(path_d(doc, "points", buf, sizeof buf), 'M') == 3);
	free(doc);
	s[1].x = base;
	check_doc(doc = svg_render(&sc, &s[1], 1, NULL));
	CHECK_CONTAINS(doc, "stroke-dasharray=\"4,4\"");
	free(doc);
}

/* Figure 5's look: accuracy against K for the three kinds. */
static void example(const char *path)
{
	static const char *const kinds[] = {"positive", "negative", "mixed"};
	double k[21], y[3][21];
	struct svg_series s[3];
	struct svg_chart c = {.title = "Adult, T = 2: estimation accuracy against K",
			      .x_label = "K (rules of knowledge)",
			      .y_label = "Estimation accuracy"};
	char *doc;
	FILE *f;

	for (size_t i = 0; i < 21; i++) {
		k[i] = 100.0 * (double)i;
		y[0][i] = 0.1 + 0.45 * exp(-(double)i / 4);
		y[1][i] = 0.12 + 0.43 * exp(-(double)i / 9);
		y[2][i] = 0.11 + 0.44 * exp(-(double)i / 6);
	}
	for (size_t i = 0; i < 3; i++)
		s[i] = (struct svg_series){.name = kinds[i], .x = k, .y = y[i], .n = 21};
	check_doc(doc = svg_render(&c, s, 3, NULL));
	if (doc && path && (f = fopen(path, "w"))) {
		fputs(doc, f);
		CHECK(fclose(f) == 0);
	}
	free(doc);
}

int main(int argc, char **argv)
{
	test_ticks();
	test_escape();
	test_gaps();
	test_degenerate();
	test_legend();
	test_categories();
	example(argc > 1 ? argv[1] : NULL);
	return check_done();
}
