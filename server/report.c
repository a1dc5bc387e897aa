/*
 * The privacy report (issue 24, SPEC 6's GET /v1/analyses/{id}/report and
 * `pmaxent report`): one self-contained HTML page, no external asset, that
 * prints well, written from a result document alone (SPEC 4): the
 * assumptions (the dataset, the knowledge, the solver's status), the
 * verdict (SPEC 4.1's privacy beside the no-knowledge estimate and the
 * records), a chart of the tuples most at risk against their no-knowledge
 * estimate, their table, and the rules and statements that bind. A sweep
 * or an audit (SPEC 4.2, 4.3) gets a page of its own: its points, the
 * chart of accuracy against K, the worst adversary and the verdict.
 *
 * Text reaches the page one way only, text() (HTML-escaped): LIT() takes
 * string literals alone, putf() numbers alone (a %s in its format fails
 * the page), and svg_render's output, which escapes its own text, is the
 * one thing put() copies as it is. Any document, however shaped, makes a
 * page or an error, never a crash: every field is read by type.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"

struct page {
	char *s;
	size_t len, cap;
	int oom;
};

static void put(struct page *p, const char *s, size_t n)
{
	if (p->oom)
		return;
	if (p->len + n + 1 > p->cap) {
		size_t cap = p->cap ? p->cap : 8192;
		char *g;

		while (cap < p->len + n + 1)
			cap *= 2;
		if (!(g = realloc(p->s, cap))) {
			p->oom = 1;
			return;
		}
		p->s = g;
		p->cap = cap;
	}
	memcpy(p->s + p->len, s, n);
	p->len += n;
	p->s[p->len] = '\0';
}

/* A string literal (markup), its length known at compile time; anything
 * but a literal does not compile. */
#define LIT(p, s) put(p, "" s "", sizeof s - 1)

/* Whether fmt converts numbers only: text must go through text(). */
static int numbers_only(const char *fmt)
{
	for (const char *c = strchr(fmt, '%'); c; c = strchr(c + 1, '%')) {
		size_t n = strcspn(c + 1, "diouxXeEfgGaAcspn%");

		if (c[1 + n] && strchr("csnp", c[1 + n]))
			return 0;
		c += n + 1;
	}
	return 1;
}

/* Markup with numbers in it (fmt a literal converting numbers only). */
static void putf(struct page *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(struct page *p, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	if (!numbers_only(fmt)) {
		p->oom = 1; /* a bug: fails every test that renders this line */
		return;
	}
	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (n > 0)
		put(p, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* User text, escaped for HTML. */
static void text(struct page *p, const char *s)
{
	for (; s && *s; s++) {
		const char *e = *s == '<'    ? "&lt;"
				: *s == '>'  ? "&gt;"
				: *s == '&'  ? "&amp;"
				: *s == '"'  ? "&quot;"
				: *s == '\'' ? "&#39;"
					     : NULL;

		if (e)
			put(p, e, strlen(e));
		else
			put(p, s, 1);
	}
}

/* A number as a table cell: 4 significant digits, "&minus;" for none. */
static void num(struct page *p, const json_t *v)
{
	if (json_is_integer(v)) /* counts: every digit */
		putf(p, "<td class=\"n\">%" JSON_INTEGER_FORMAT "</td>", json_integer_value(v));
	else if (json_is_number(v))
		putf(p, "<td class=\"n\">%.4g</td>", json_number_value(v));
	else
		LIT(p, "<td class=\"n\">&ndash;</td>");
}

/* A tuple's QI values joined by ", ". */
static void tuple(struct page *p, const json_t *qi)
{
	const json_t *v;
	size_t i;

	json_array_foreach(qi, i, v)
	{
		if (i)
			LIT(p, ", ");
		text(p, json_string_value(v));
	}
}

static const char style[] =
    "body{font-family:sans-serif;color:#000;background:#fff;max-width:60em;margin:2em auto;"
    "padding:0 1em;line-height:1.4}"
    "h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.15em;margin-top:1.6em;"
    "border-bottom:1px solid #888}"
    "table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #bbb;padding:.2em "
    ".5em;text-align:left;vertical-align:top}th{background:#eee}td.n{text-align:right;"
    "font-variant-numeric:tabular-nums}"
    ".verdict{font-size:1.1em;padding:.5em 1em;border:2px solid #000;margin:1em 0}"
    ".muted{color:#444;font-size:.9em}svg{max-width:100%;height:auto}"
    "@media print{body{margin:0;max-width:none}h2{break-after:avoid}table,svg{break-inside:"
    "avoid}}";

static const json_t *get(const json_t *o, const char *k)
{
	return json_object_get(o, k);
}

static long long ival(const json_t *o, const char *k)
{
	return json_integer_value(get(o, k));
}

/* o[k] when a string, else "": a document of any shape reads safely. */
static const char *str(const json_t *o, const char *k)
{
	const char *v = json_string_value(get(o, k));

	return v ? v : "";
}

/* "s" unless n is 1. */
static void plural(struct page *p, size_t n)
{
	if (n != 1)
		LIT(p, "s");
}

/* A rule as P(then | a = v, ...) = p, or lo <= P(...) <= hi. */
static void rule_text(struct page *p, const json_t *r)
{
	const json_t *c = get(r, "if"), *v;
	const char *a;
	int first = 1;

	if (json_is_number(get(r, "min")) && json_number_value(get(r, "min")) > 0)
		putf(p, "%.4g &le; ", json_number_value(get(r, "min")));
	LIT(p, "P(");
	text(p, json_string_value(get(r, "then")));
	json_object_foreach((json_t *)c, a, v)
	{
		if (first)
			LIT(p, " | ");
		else
			LIT(p, ", ");
		text(p, a);
		LIT(p, " = ");
		text(p, json_string_value(v));
		first = 0;
	}
	LIT(p, ")");
	if (json_is_number(get(r, "probability")))
		putf(p, " = %.4g", json_number_value(get(r, "probability")));
	else if (json_is_number(get(r, "max")) && json_number_value(get(r, "max")) < 1)
		putf(p, " &le; %.4g", json_number_value(get(r, "max")));
}

/* The first RULES_SHOWN rules, as a nested list. */
#define RULES_SHOWN 20
static void rule_list(struct page *p, const json_t *rules)
{
	const json_t *r;
	size_t i;

	if (!json_array_size(rules))
		return;
	LIT(p, "<ul class=\"muted\">");
	json_array_foreach(rules, i, r)
	{
		if (i == RULES_SHOWN) {
			putf(p, "<li>&hellip; and %zu more</li>", json_array_size(rules) - i);
			break;
		}
		LIT(p, "<li>");
		rule_text(p, r);
		LIT(p, "</li>");
	}
	LIT(p, "</ul>");
}

/* The dataset, the knowledge, the solve. */
static void assumptions(struct page *p, const json_t *res)
{
	const json_t *ds = get(res, "dataset"), *m = get(res, "mined"), *r;
	size_t i, src[3] = {0};

	LIT(p, "<h2>Assumptions</h2><ul>");
	LIT(p, "<li>Dataset <b>");
	text(p, json_is_string(get(ds, "name")) ? json_string_value(get(ds, "name")) : "(unnamed)");
	putf(p, "</b>: %lld records in %lld buckets, %lld distinct QI tuples.</li>",
	     ival(ds, "records"), ival(ds, "groups"), ival(ds, "tuples"));
	json_array_foreach(get(res, "rules"), i, r)
	{
		const char *s = json_string_value(get(r, "source"));

		src[s && !strcmp(s, "positive") ? 1 : s && !strcmp(s, "negative") ? 2 : 0]++;
	}
	putf(p, "<li>The adversary's knowledge: %zu rule", src[0]);
	plural(p, src[0]);
	LIT(p, " of their own");
	if (m)
		putf(
		    p,
		    ", and the Top-(%lld, %lld) bound mined from the records (%zu positive and %zu "
		    "negative rules exist at the minimum support)",
		    ival(get(m, "positive"), "asked"), ival(get(m, "negative"), "asked"), src[1],
		    src[2]);
	putf(p, "; %zu statement", json_array_size(get(res, "statements")));
	plural(p, json_array_size(get(res, "statements")));
	putf(p, "; %zu named ", json_array_size(get(res, "individuals")));
	if (json_array_size(get(res, "individuals")) == 1)
		LIT(p, "person.");
	else
		LIT(p, "people.");
	rule_list(p, get(res, "rules"));
	LIT(p, "</li>");
	if (!strcmp(str(res, "status"), "converged"))
		LIT(p, "<li>The maximum-entropy estimate converged");
	else
		LIT(p, "<li>The maximum-entropy estimate did not converge");
	putf(p, " after %lld iterations (largest violation %.3g records, %.3g s)",
	     ival(res, "iterations"), json_number_value(get(res, "max_violation")),
	     json_number_value(get(res, "seconds")));
	if (json_is_string(get(res, "reason"))) {
		LIT(p, ": ");
		text(p, json_string_value(get(res, "reason")));
	}
	LIT(p, ".</li></ul>");
}

/* One row of the verdict: a metric of the three sources. */
static void verdict_row(struct page *p, const json_t *pv, const char *label, const char *key,
			const char *sub)
{
	const json_t *srcs[3] = {pv, get(pv, "baseline"), get(pv, "truth")};

	LIT(p, "<tr><th>");
	text(p, label);
	LIT(p, "</th>");
	for (int i = 0; i < 3; i++)
		num(p, sub ? get(get(srcs[i], key), sub) : get(srcs[i], key));
	LIT(p, "</tr>");
}

/* SPEC 4.1's privacy, with and without the knowledge, and the records. */
static void verdict(struct page *p, const json_t *res)
{
	const json_t *pv = get(res, "privacy"), *md = get(pv, "max_disclosure");
	long long n = ival(get(res, "dataset"), "records");

	LIT(p, "<h2>Verdict</h2>");
	if (!pv) {
		LIT(p, "<p>This result has no privacy verdict.</p>");
		return;
	}
	putf(p,
	     "<p class=\"verdict\">With this knowledge, <b>%lld of %lld records</b> (%.1f%%) "
	     "belong to a tuple with a sensitive value at probability %.3g or more; without it, "
	     "%lld (%.1f%%). The largest disclosure is P = %.4g: ",
	     ival(pv, "records_at_risk"), n,
	     100 * json_number_value(get(pv, "records_at_risk_fraction")),
	     json_number_value(get(pv, "threshold")), ival(get(pv, "baseline"), "records_at_risk"),
	     100 * json_number_value(get(get(pv, "baseline"), "records_at_risk_fraction")),
	     json_number_value(get(md, "p")));
	text(p, json_string_value(get(md, "sa")));
	LIT(p, " for (");
	tuple(p, get(md, "qi"));
	putf(p, "), %lld record(s).</p>", ival(md, "count"));
	LIT(p, "<table><tr><th></th><th>with the knowledge</th><th>no knowledge</th><th>the "
	       "records</th></tr>");
	verdict_row(p, pv, "largest P*(s|q)", "max_disclosure", "p");
	verdict_row(p, pv, "records at risk", "records_at_risk", NULL);
	verdict_row(p, pv, "fraction at risk", "records_at_risk_fraction", NULL);
	verdict_row(p, pv, "entropy l (min)", "min_entropy_l", NULL);
	verdict_row(p, pv, "recursive (c,l): l", "recursive_cl", NULL);
	verdict_row(p, pv, "t-closeness", "t_closeness", NULL);
	verdict_row(p, pv, "δ-disclosure", "delta_disclosure", NULL);
	putf(p, "<tr><th>estimation accuracy (nats)</th>");
	num(p, get(res, "estimation_accuracy"));
	num(p, get(res, "baseline_accuracy"));
	putf(p,
	     "<td class=\"n\">0</td></tr></table><p class=\"muted\">Threshold %.3g, c = %.3g "
	     "(SPEC 4.1). Estimation accuracy: the records' distance to the estimate; smaller "
	     "is more disclosed.</p>",
	     json_number_value(get(pv, "threshold")), json_number_value(get(pv, "c")));
}

/* The chart of the tuples most at risk: P*(s|q) of each one's top value
 * beside its no-knowledge estimate (server/svg.c, inline). */
static void top_chart(struct page *p, const json_t *top)
{
	size_t n = json_array_size(top);
	double *y = malloc((2 * n + 1) * sizeof *y);
	char(*names)[64] = calloc(n + 1, sizeof *names);
	const char **cats = calloc(n + 1, sizeof *cats);
	struct svg_chart c = {.title = "The tuples most at risk",
			      .y_label = "probability of the top value",
			      .y_min = 0,
			      .y_max = 1};
	struct svg_series s[2] = {
	    {.name = "with the knowledge", .y = y, .n = n, .style = SVG_POINTS},
	    {.name = "no knowledge", .y = y + n, .n = n, .style = SVG_POINTS}};
	const json_t *t;
	char *svg;
	size_t i, len;

	if (!y || !names || !cats)
		p->oom = 1;
	json_array_foreach(top, i, t)
	{
		if (p->oom)
			break;
		y[i] = json_number_value(get(t, "p"));
		y[n + i] = json_number_value(get(t, "baseline_p"));
		/* svg_render escapes it */
		snprintf(names[i], sizeof names[i], "%zu. %s", i + 1, str(t, "sa"));
		cats[i] = names[i];
	}
	c.categories = cats;
	c.n_categories = n;
	if (!p->oom && n && (svg = svg_render(&c, s, 2, &len))) {
		put(p, svg, len);
		free(svg);
	}
	free(y);
	free(names);
	free(cats);
}

/* The tuples most at risk (privacy.top), chart and table. */
static void top_tuples(struct page *p, const json_t *res)
{
	const json_t *top = get(get(res, "privacy"), "top"), *t;
	size_t i;

	LIT(p, "<h2>The tuples most at risk</h2>");
	if (!json_array_size(top)) {
		LIT(p, "<p>This result lists no tuples at risk.</p>");
		return;
	}
	top_chart(p, top);
	LIT(p, "<table><tr><th>#</th><th>QI tuple</th><th>records</th><th>top value</th>"
	       "<th>P*(s|q)</th><th>no knowledge</th><th>entropy l</th></tr>");
	json_array_foreach(top, i, t)
	{
		putf(p, "<tr><td class=\"n\">%zu</td><td>", i + 1);
		tuple(p, get(t, "qi"));
		putf(p, "</td><td class=\"n\">%lld</td><td>", ival(t, "count"));
		text(p, json_string_value(get(t, "sa")));
		LIT(p, "</td>");
		num(p, get(t, "p"));
		num(p, get(t, "baseline_p"));
		num(p, get(t, "l"));
		LIT(p, "</tr>");
	}
	LIT(p, "</table>");
}

/* The rules and statements held at a bound of theirs. */
static void binding(struct page *p, const json_t *res)
{
	static const char *const lists[] = {"rules", "statements"};
	size_t n = 0, i;
	const json_t *r;

	LIT(p, "<h2>Knowledge that binds</h2><ul>");
	for (int l = 0; l < 2; l++)
		json_array_foreach(get(res, lists[l]), i, r)
		{
			const char *b = json_string_value(get(r, "binding"));
			char *desc;

			if (!b || !strcmp(b, "value") || n++ >= 50)
				continue;
			desc = json_dumps(r, JSON_COMPACT | JSON_PRESERVE_ORDER);
			LIT(p, "<li>");
			text(p, lists[l]);
			putf(p, "[%zu], at its ", i);
			text(p, b);
			LIT(p, ": <code>");
			text(p, desc ? desc : "");
			LIT(p, "</code></li>");
			free(desc);
		}
	LIT(p, "</ul>");
	if (!n)
		LIT(p, "<p>No interval of the knowledge is at one of its bounds (equalities always "
		       "hold exactly).</p>");
}

/* The page's head and its h1: "<kind> report: <name>". */
static void page_head(struct page *p, const char *name, int sweep)
{
	LIT(p, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>");
	if (sweep)
		LIT(p, "Sweep report: ");
	else
		LIT(p, "Privacy report: ");
	text(p, name);
	LIT(p, "</title><style>");
	put(p, style, sizeof style - 1); /* a constant of this file */
	if (sweep)
		LIT(p, "</style></head><body><h1>Sweep report: ");
	else
		LIT(p, "</style></head><body><h1>Privacy report: ");
	text(p, name);
	LIT(p, "</h1>");
}

/* The page's text (caller frees), or NULL when out of memory. */
static char *page_done(struct page *p, size_t *len)
{
	LIT(p, "</body></html>\n");
	if (p->oom) {
		free(p->s);
		return NULL;
	}
	if (len)
		*len = p->len;
	return p->s;
}

char *report_html(const json_t *res, size_t *len)
{
	struct page p = {0};
	const char *name = str(get(res, "dataset"), "name");

	page_head(&p, *name ? name : "dataset", 0);
	LIT(&p, "<p class=\"muted\">What an adversary with the knowledge below learns "
		"from the published buckets (Privacy-MaxEnt, Du, Teng and Zhu 2008).</p>");
	assumptions(&p, res);
	verdict(&p, res);
	top_tuples(&p, res);
	binding(&p, res);
	return page_done(&p, len);
}

/* ---- a sweep or an audit ----------------------------------------------------- */

static const char *const kinds[] = {"positive", "negative", "mixed"};

/* A point's kind as SPEC 4.2 names them: its index, or -1. */
static int kind_of(const json_t *pt)
{
	for (int i = 0; i < 3; i++)
		if (!strcmp(str(pt, "kind"), kinds[i]))
			return i;
	return -1;
}

/* Whether point i is the one the grid q puts there (kinds x T x K). */
static int in_grid(const json_t *pt, const struct sweep_request *q, size_t i)
{
	size_t n_t = q->n_t ? q->n_t : 1, t = (i / q->n_k) % n_t;
	const json_t *tv = get(pt, "qi_attributes"), *k = get(pt, "k");

	return kind_of(pt) == (int)q->kinds[i / (q->n_k * n_t)] && json_is_integer(k) &&
	       json_integer_value(k) == (json_int_t)q->k[i % q->n_k] &&
	       (q->n_t ? json_is_integer(tv) && json_integer_value(tv) == (json_int_t)q->t[t]
		       : json_is_null(tv));
}

/* The request that made the points, read back from them: the K of the
 * first run of one kind and T, the T of the first kind's runs, the
 * kinds. 0, or -1 when the points are not such a grid (no chart then). */
static int points_grid(const json_t *pts, struct sweep_request *q)
{
	size_t n = json_array_size(pts), nk = 0, nt = 0, i;
	const json_t *first = json_array_get(pts, 0);

	while (
	    nk < n && kind_of(json_array_get(pts, nk)) == kind_of(first) &&
	    json_equal(get(json_array_get(pts, nk), "qi_attributes"), get(first, "qi_attributes")))
		nk++;
	while (nk && nt * nk < n && kind_of(json_array_get(pts, nt * nk)) == kind_of(first))
		nt++;
	if (!nk || n % (nk * nt) || n / (nk * nt) > 3 || !(q->k = calloc(nk, sizeof *q->k)) ||
	    !(q->t = calloc(nt, sizeof *q->t)))
		return -1;
	q->n_k = nk;
	q->n_kinds = n / (nk * nt);
	q->n_t = json_is_null(get(first, "qi_attributes")) && nt == 1 ? 0 : nt;
	for (i = 0; i < nk; i++)
		q->k[i] = (size_t)json_integer_value(get(json_array_get(pts, i), "k"));
	for (i = 0; i < q->n_t; i++)
		q->t[i] =
		    (size_t)json_integer_value(get(json_array_get(pts, i * nk), "qi_attributes"));
	for (i = 0; i < q->n_kinds; i++) {
		int k = kind_of(json_array_get(pts, i * nk * nt));

		if (k < 0)
			return -1;
		q->kinds[i] = (enum sweep_kind)k;
	}
	for (i = 0; i < n; i++)
		if (!in_grid(json_array_get(pts, i), q, i))
			return -1;
	return 0;
}

/* The chart of accuracy against K that `pmaxent sweep --svg` draws. */
static void sweep_page_chart(struct page *p, const json_t *pts, const char *name)
{
	struct sweep_request q = {0};
	size_t len;
	char *svg;

	if (points_grid(pts, &q)) {
		LIT(p, "<p class=\"muted\">The points are not one curve per kind and T over the "
		       "same K, so there is no chart.</p>");
	} else if ((svg = sweep_chart(name, &q, pts, &len))) {
		put(p, svg, len); /* svg_render escapes its own text */
		free(svg);
	} else {
		p->oom = 1;
	}
	sweep_request_finish(&q);
}

/* A cell of whatever v is: a number, text, a max_disclosure's p, or "all"
 * for a null T. */
static void cell(struct page *p, const json_t *v)
{
	if (json_is_object(v))
		v = get(v, "p");
	if (json_is_string(v)) {
		LIT(p, "<td>");
		text(p, json_string_value(v));
		LIT(p, "</td>");
	} else if (json_is_null(v)) {
		LIT(p, "<td>all</td>");
	} else {
		num(p, v);
	}
}

/* The points, one row each. */
static void sweep_points(struct page *p, const json_t *pts)
{
	const json_t *pt;
	size_t i;

	LIT(p, "<h2>The points</h2><table><tr><th>kind</th><th>T</th><th>K</th><th>estimation "
	       "accuracy (nats)</th><th>records at risk</th><th>fraction at risk</th><th>largest "
	       "P*(s|q)</th><th>status</th><th>seconds</th></tr>");
	json_array_foreach(pts, i, pt)
	{
		const json_t *pv = get(pt, "privacy");

		LIT(p, "<tr>");
		cell(p, get(pt, "kind"));
		cell(p, get(pt, "qi_attributes"));
		cell(p, get(pt, "k"));
		num(p, get(pt, "estimation_accuracy"));
		num(p, get(pv, "records_at_risk"));
		num(p, get(pv, "records_at_risk_fraction"));
		cell(p, get(pv, "max_disclosure"));
		cell(p, get(pt, "status"));
		num(p, get(pt, "seconds"));
		LIT(p, "</tr>");
	}
	LIT(p, "</table>");
}

/* An audit's answer (SPEC 4.3): the verdict, the worst adversary, passes. */
static void sweep_worst(struct page *p, const json_t *doc)
{
	const json_t *w = get(doc, "worst");

	if (!json_is_string(get(doc, "verdict")) && !json_is_object(w))
		return;
	LIT(p, "<h2>Verdict</h2>");
	if (json_is_string(get(doc, "verdict"))) {
		LIT(p, "<p class=\"verdict\">");
		text(p, str(doc, "verdict"));
		LIT(p, "</p>");
	}
	if (json_is_boolean(get(doc, "passes"))) {
		if (json_is_true(get(doc, "passes")))
			LIT(p, "<p>It meets the target.</p>");
		else
			LIT(p, "<p>It does <b>not</b> meet the target.</p>");
	}
	if (!json_is_object(w))
		return;
	LIT(p,
	    "<h2>The worst adversary</h2><table><tr><th>kind</th><th>T</th><th>K</th>"
	    "<th>records at risk</th><th>fraction at risk</th><th>largest P*(s|q)</th></tr><tr>");
	cell(p, get(w, "kind"));
	cell(p, get(w, "qi_attributes"));
	cell(p, get(w, "k"));
	cell(p, get(w, "records_at_risk"));
	cell(p, get(w, "records_at_risk_fraction"));
	cell(p, get(w, "max_disclosure"));
	LIT(p, "</tr></table>");
}

char *report_sweep_html(const json_t *doc, size_t *len)
{
	struct page p = {0};
	const json_t *pts = get(doc, "points");
	const char *name = *str(doc, "name") ? str(doc, "name") : NULL;

	page_head(&p, name ? name : "sweep", 1);
	putf(&p, "<p class=\"muted\">%zu solve", json_array_size(pts));
	plural(&p, json_array_size(pts));
	LIT(&p, ", each against an adversary holding the Top-K rules of its kind (SPEC 4.2; "
		"Privacy-MaxEnt, Du, Teng and Zhu 2008).</p>");
	sweep_worst(&p, doc);
	LIT(&p, "<h2>Estimation accuracy against K</h2>");
	if (json_array_size(pts))
		sweep_page_chart(&p, pts, name);
	sweep_points(&p, pts);
	return page_done(&p, len);
}

/* ---- which page ------------------------------------------------------------- */

/* What doc is, for a message: "an array", or "it has no ... (found keys:
 * a, b)". */
static enum pm_status not_a_report(const json_t *doc, struct pm_error *err)
{
	static const char *const types[] = {"an object", "an array", "a string", "an integer",
					    "a number",	 "true",     "false",	 "null"};
	char keys[512] = "";
	size_t n = 0, at = 0;
	const char *k;
	const json_t *v;

	if (!json_is_object(doc))
		return error_set(err, PM_ERR_INPUT, "", "not a result or a sweep: it is %s",
				 types[json_typeof(doc)]);
	json_object_foreach((json_t *)doc, k, v)
	{
		int w = snprintf(keys + at, sizeof keys - at, "%s%s", n++ ? ", " : "", k);

		if (w < 0 || (size_t)w >= sizeof keys - at) {
			snprintf(keys + at, sizeof keys - at, ", ...");
			break;
		}
		at += (size_t)w;
	}
	return error_set(err, PM_ERR_INPUT, "",
			 "not a result or a sweep: it has no \"posterior\" or \"points\" (%s%s)",
			 n ? "found keys: " : "it is empty", keys);
}

enum pm_status report_document(const json_t *doc, char **html, size_t *len, struct pm_error *err)
{
	const char *key = json_is_array(get(doc, "posterior")) ? "posterior"
			  : json_is_array(get(doc, "points"))  ? "points"
							       : NULL;

	*html = NULL;
	if (!key && (get(doc, "posterior") || get(doc, "points")))
		return error_set(err, PM_ERR_INPUT, "",
				 "not a result or a sweep: its \"%s\" is not an array",
				 get(doc, "posterior") ? "posterior" : "points");
	if (!key)
		return not_a_report(doc, err);
	*html = !strcmp(key, "posterior") ? report_html(doc, len) : report_sweep_html(doc, len);
	if (!*html)
		return error_set(err, PM_ERR_NOMEM, "", "out of memory writing the report");
	return PM_OK;
}
