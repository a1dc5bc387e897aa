/*
 * The privacy report (issue 24, SPEC 6's GET /v1/analyses/{id}/report and
 * `pmaxent report`): one self-contained HTML page, no external asset, that
 * prints well, written from a result document alone (SPEC 4): the
 * assumptions (the dataset, the knowledge, the solver's status), the
 * verdict (SPEC 4.1's privacy beside the no-knowledge estimate and the
 * records), a chart of the tuples most at risk against their no-knowledge
 * estimate, their table, and the rules and statements that bind.
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

/* A string literal, its length known at compile time. */
#define LIT(p, s) put(p, s, sizeof s - 1)

static void putf(struct page *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(struct page *p, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

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
		put(p, first ? " | " : ", ", first ? 3 : 2);
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
	putf(p, "<li>Dataset <b>");
	text(p, json_is_string(get(ds, "name")) ? json_string_value(get(ds, "name")) : "(unnamed)");
	putf(p, "</b>: %lld records in %lld buckets, %lld distinct QI tuples.</li>",
	     ival(ds, "records"), ival(ds, "groups"), ival(ds, "tuples"));
	json_array_foreach(get(res, "rules"), i, r)
	{
		const char *s = json_string_value(get(r, "source"));

		src[s && !strcmp(s, "positive") ? 1 : s && !strcmp(s, "negative") ? 2 : 0]++;
	}
	putf(p, "<li>The adversary's knowledge: %zu rule%s of their own", src[0],
	     src[0] == 1 ? "" : "s");
	if (m)
		putf(
		    p,
		    ", and the Top-(%lld, %lld) bound mined from the records (%zu positive and %zu "
		    "negative rules exist at the minimum support)",
		    ival(get(m, "positive"), "asked"), ival(get(m, "negative"), "asked"), src[1],
		    src[2]);
	putf(p, "; %zu statement%s; %zu named %s.", json_array_size(get(res, "statements")),
	     json_array_size(get(res, "statements")) == 1 ? "" : "s",
	     json_array_size(get(res, "individuals")),
	     json_array_size(get(res, "individuals")) == 1 ? "person" : "people");
	rule_list(p, get(res, "rules"));
	LIT(p, "</li>");
	putf(p,
	     "<li>The maximum-entropy estimate %s after %lld iterations (largest violation "
	     "%.3g records, %.3g s)",
	     !strcmp(json_string_value(get(res, "status")), "converged") ? "converged"
									 : "did not converge",
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

	putf(p, "<tr><th>%s</th>", label);
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
	verdict_row(p, pv, "&delta;-disclosure", "delta_disclosure", NULL);
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
		snprintf(names[i], sizeof names[i], "%zu. %s", i + 1,
			 json_string_value(get(t, "sa")));
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
			putf(p, "<li>%s[%zu], at its %s: <code>", lists[l], i, b);
			text(p, desc ? desc : "");
			LIT(p, "</code></li>");
			free(desc);
		}
	LIT(p, "</ul>");
	if (!n)
		LIT(p, "<p>No interval of the knowledge is at one of its bounds (equalities always "
		       "hold exactly).</p>");
}

char *report_html(const json_t *res, size_t *len)
{
	struct page p = {0};
	const json_t *name = get(get(res, "dataset"), "name");

	LIT(&p, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>");
	LIT(&p, "Privacy report: ");
	text(&p, json_is_string(name) ? json_string_value(name) : "dataset");
	LIT(&p, "</title><style>");
	put(&p, style, sizeof style - 1);
	LIT(&p, "</style></head><body><h1>Privacy report: ");
	text(&p, json_is_string(name) ? json_string_value(name) : "dataset");
	LIT(&p, "</h1><p class=\"muted\">What an adversary with the knowledge below learns "
		"from the published buckets (Privacy-MaxEnt, Du, Teng and Zhu 2008).</p>");
	assumptions(&p, res);
	verdict(&p, res);
	top_tuples(&p, res);
	binding(&p, res);
	LIT(&p, "</body></html>\n");
	if (p.oom) {
		free(p.s);
		return NULL;
	}
	if (len)
		*len = p.len;
	return p.s;
}
