/*
 * The headers a browser obeys (http.c, issue 36 point 8): every response
 * says nosniff; every HTML and SVG one (the dashboard, the report, the
 * sweep chart, and whatever else a documented path turns out to serve)
 * carries a Content-Security-Policy that runs no inline script without a
 * hash, frames nothing and lets nothing frame it, plus X-Frame-Options
 * and Referrer-Policy; its 304 and its errors carry the same. The paths
 * come from the OpenAPI document the server itself serves, so a new HTML
 * or SVG route is checked without a change here.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <ctype.h>
#include <signal.h>

#include "http_client.h"

struct ids {
	char *ds, *an, *sw;
};

/* The value of directive name in the policy csp (into buf), or NULL. */
static const char *directive(const char *csp, const char *name, char *buf, size_t size)
{
	size_t n = strlen(name);

	for (const char *d = csp; d && *d; d += strcspn(d, ";"), d += *d == ';') {
		while (*d == ' ')
			d++;
		if (!strncmp(d, name, n) && (d[n] == ' ' || d[n] == ';' || !d[n])) {
			d += n;
			while (*d == ' ')
				d++;
			snprintf(buf, size, "%.*s", (int)strcspn(d, ";"), d);
			return buf;
		}
	}
	return NULL;
}

/* A script-src of hash sources only ('sha256-' and 44 base64 characters
 * each), at least one: no 'unsafe-inline', 'self', host or scheme. */
static int only_hashes(const char *src)
{
	int n = 0;

	for (const char *s = src; *s;) {
		size_t len = strcspn(s, " ");

		if (len != 53 || strncmp(s, "'sha256-", 8) || s[52] != '\'')
			return 0;
		for (size_t i = 8; i < 52; i++)
			if (!isalnum((unsigned char)s[i]) && !strchr("+/=", s[i]))
				return 0;
		n++;
		s += len;
		while (*s == ' ')
			s++;
	}
	return n > 0;
}

/* The headers every response has. */
static void check_nosniff(const struct resp *r, const char *what)
{
	char v[64];

	if (!hdr(r, "X-Content-Type-Options", v, sizeof v))
		fprintf(stderr, "%s: no X-Content-Type-Options\n", what);
	CHECK_STR(hdr(r, "X-Content-Type-Options", v, sizeof v), "nosniff");
}

/* The browser policy of an HTML or SVG response; dashboard: the page
 * that runs its own script (by hash), every other one runs none. */
static void check_policy(const struct resp *r, int dashboard, const char *what)
{
	char csp[1024], v[512];
	const char *p = hdr(r, "Content-Security-Policy", csp, sizeof csp);

	if (!p)
		fprintf(stderr, "%s: no Content-Security-Policy\n", what);
	CHECK(p != NULL);
	check_nosniff(r, what);
	CHECK_STR(hdr(r, "X-Frame-Options", v, sizeof v), "DENY");
	CHECK_STR(hdr(r, "Referrer-Policy", v, sizeof v), "no-referrer");
	CHECK_STR(directive(p, "default-src", v, sizeof v), "'none'");
	CHECK_STR(directive(p, "frame-ancestors", v, sizeof v), "'none'");
	CHECK_STR(directive(p, "base-uri", v, sizeof v), "'none'");
	CHECK_STR(directive(p, "form-action", v, sizeof v), "'none'");
	CHECK(!p || !strstr(p, "unsafe-eval"));
	if (dashboard) {
		/* its calls go to this origin only, its charts are blob: images */
		CHECK(directive(p, "script-src", v, sizeof v) && only_hashes(v));
		CHECK_STR(directive(p, "connect-src", v, sizeof v), "'self'");
		CHECK_STR(directive(p, "img-src", v, sizeof v), "blob:");
		CHECK(!directive(p, "frame-src", v, sizeof v));
	} else {
		/* no script at all (default-src), and a unique origin */
		CHECK(!directive(p, "script-src", v, sizeof v));
		CHECK(directive(p, "sandbox", v, sizeof v) != NULL);
	}
}

/* The dashboard's one script is the inline one the hash allows: no
 * script element with attributes (src), no event-handler attribute, no
 * javascript: URL, none of which a hash would allow. */
static void check_page(const char *html)
{
	const char *s = html ? strstr(html, "<script") : NULL;

	CHECK(s && !strncmp(s, "<script>", 8) && !strstr(s + 8, "<script"));
	CHECK(html && !strstr(html, "javascript:"));
	for (const char *p = html; p && (p = strstr(p, " on"));) {
		p += 3;
		size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyz");
		if (n && p[n] == '=')
			fprintf(stderr, "an event-handler attribute: %.20s\n", p - 2);
		CHECK(!(n && p[n] == '='));
	}
}

/* The path of an OpenAPI path template with this fixture's ids. */
static void instantiate(const char *tmpl, const struct ids *x, char *out, size_t size)
{
	const char *id = !strncmp(tmpl, "/v1/datasets/", 13)   ? x->ds
			 : !strncmp(tmpl, "/v1/analyses/", 13) ? x->an
			 : !strncmp(tmpl, "/v1/sweeps/", 11)   ? x->sw
							       : "";
	const char *b = strstr(tmpl, "{id}");

	if (b)
		snprintf(out, size, "%.*s%s%s", (int)(b - tmpl), tmpl, id ? id : "", b + 4);
	else
		snprintf(out, size, "%s", tmpl);
}

/* GET path, then again with its ETag: the 304 carries the same policy
 * (its headers replace the cached ones). 1 when it is HTML or SVG. */
static int check_path(unsigned port, const char *path)
{
	char ct[128], etag[64], inm[96], csp[1024], csp304[1024];
	struct resp r = get(port, path), n;
	int doc, dash = !strcmp(path, "/");

	check_nosniff(&r, path);
	doc = hdr(&r, "Content-Type", ct, sizeof ct) &&
	      (!strncmp(ct, "text/html", 9) || !strncmp(ct, "image/svg+xml", 13));
	if (doc) {
		printf("%s: %d %s\n", path, r.status, ct);
		CHECK(r.status == 200);
		check_policy(&r, dash, path);
		if (dash)
			check_page(r.body);
		CHECK(hdr(&r, "ETag", etag, sizeof etag) != NULL);
		snprintf(inm, sizeof inm, "If-None-Match: %s\r\n", etag);
		n = call(port, "GET", path, inm, NULL, 0);
		CHECK(n.status == 304);
		check_policy(&n, dash, path);
		CHECK_STR(hdr(&n, "Content-Security-Policy", csp304, sizeof csp304),
			  hdr(&r, "Content-Security-Policy", csp, sizeof csp));
		resp_free(&n);
	}
	resp_free(&r);
	return doc;
}

static char *upload_figure1(unsigned port)
{
	char *csv = data_file("figure1.csv"), *id = NULL;
	struct resp r = call(port, "POST", "/v1/datasets?sa=disease&group=group",
			     "Content-Type: text/csv\r\n", csv, csv ? strlen(csv) : 0);

	CHECK(r.status == 201);
	if (r.status == 201)
		id = strdup(jstr(r.json, "id"));
	resp_free(&r);
	free(csv);
	return id;
}

/* A succeeded sweep of ds; its id (caller frees). */
static char *swept(unsigned port, const char *ds)
{
	char path[128];
	struct resp r;
	char *id = NULL;
	double t0 = solver_now();

	snprintf(path, sizeof path, "/v1/datasets/%s/sweeps", ds);
	r = post_json(port, path, "{\"kinds\": [\"mixed\"], \"k\": [0, 1], \"min_support\": 1}");
	CHECK(r.status == 202);
	if (r.status == 202)
		id = strdup(jstr(r.json, "id"));
	snprintf(path, sizeof path, "/v1/sweeps/%s", id ? id : "");
	do {
		resp_free(&r);
		usleep(20000);
		r = get(port, path);
	} while (r.status == 200 && !finished(jstr(r.json, "status")) && solver_now() - t0 < 120);
	CHECK_STR(jstr(r.json, "status"), "succeeded");
	resp_free(&r);
	return id;
}

/* Every documented path, GET with real ids: HTML and SVG among them are
 * the dashboard, the report and the chart, each with its policy. */
static void test_documented_paths(void)
{
	char *dir = temp_dir(), path[256], tmpl[256];
	struct http_server *h = start(dir, 1, 8, NULL, 0);
	unsigned port = http_port(h);
	struct ids x = {upload_figure1(port), NULL, NULL};
	struct resp r, spec;
	int docs = 0, report = 0, chart = 0;

	x.an = analyse(port, x.ds ? x.ds : "",
		       "{\"knowledge\": {\"mine\": {\"positive\": 1, \"negative\": 1}}}");
	r = wait_done(port, x.an ? x.an : "");
	CHECK_STR(jstr(r.json, "status"), "succeeded");
	resp_free(&r);
	x.sw = swept(port, x.ds ? x.ds : "");
	spec = get(port, "/v1/openapi.yaml");
	CHECK(spec.status == 200 && spec.body);
	for (const char *l = spec.body; l && *l; l += strcspn(l, "\n"), l += *l == '\n') {
		size_t n = strcspn(l, "\n");

		if (n < 4 || strncmp(l, "  /", 3) || l[n - 1] != ':' || n - 3 >= sizeof tmpl)
			continue;
		snprintf(tmpl, sizeof tmpl, "%.*s", (int)(n - 3), l + 2);
		instantiate(tmpl, &x, path, sizeof path);
		if (check_path(port, path)) {
			docs++;
			report |= !!strstr(tmpl, "/report");
			chart |= !!strstr(tmpl, "/chart.svg");
		}
	}
	CHECK(docs >= 3 && report && chart);
	resp_free(&spec);
	http_stop(h);
	free(x.ds);
	free(x.an);
	free(x.sw);
	rm_tree(dir);
	free(dir);
}

/* Refusals on the HTML and SVG routes (a stranger, an unknown id, a
 * wrong method) carry the same headers: a browser renders them too. A
 * JSON route's carry nosniff alone. */
static void test_refusals(void)
{
	char *dir = temp_dir(), tokens[512];
	struct http_server *h;
	unsigned port;
	struct resp r;
	static const char *const paths[] = {"/v1/analyses/an_none/report",
					    "/v1/sweeps/sw_none/chart.svg"};
	char v[64];

	snprintf(tokens, sizeof tokens, "%s/tokens", dir);
	write_file(tokens, "sesame-sesame-sesame alice\n");
	h = start(dir, 1, 8, tokens, 0);
	port = http_port(h);
	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
		r = get(port, paths[i]); /* no token: 401 */
		CHECK(r.status == 401);
		check_policy(&r, 0, paths[i]);
		resp_free(&r);
	}
	/* a JSON route: nosniff alone (a JSON body is never rendered) */
	r = get(port, "/v1/datasets");
	CHECK(r.status == 401);
	check_nosniff(&r, "/v1/datasets");
	CHECK(!hdr(&r, "Content-Security-Policy", v, sizeof v));
	resp_free(&r);
	snprintf(auth, sizeof auth, "Authorization: Bearer sesame-sesame-sesame\r\n");
	r = get(port, "/v1/analyses/an_none/report");
	CHECK(r.status == 404);
	check_policy(&r, 0, "a report not found");
	resp_free(&r);
	r = call(port, "DELETE", "/", NULL, NULL, 0);
	CHECK(r.status == 405);
	check_policy(&r, 1, "DELETE /");
	resp_free(&r);
	r = get(port, "/"); /* public: the page asks for the token itself */
	CHECK(r.status == 200);
	check_policy(&r, 1, "/ with access control");
	resp_free(&r);
	auth[0] = '\0';
	http_stop(h);
	rm_tree(dir);
	free(dir);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	test_documented_paths();
	test_refusals();
	return check_done();
}
