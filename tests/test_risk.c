/*
 * GET /v1/analyses/{id}/risk (server/risk.c) end to end, on the paper's
 * Figure 1: the tuples ranked by their largest P*(s|q) beside the
 * no-knowledge estimate, JSON pages and CSV, named people, the statuses
 * (400, 404, 405, 409), HEAD, and another tenant's analysis; QI and SA
 * values that are formulas come back behind a ' in both CSVs.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <math.h>
#include <signal.h>

#include "http_client.h"

/* Men have no breast cancer: the female junior's is then certain. */
static const char *no_bc_for_men =
    "{\"knowledge\": {\"rules\": [{\"if\": {\"gender\": \"male\"}, \"then\": "
    "\"Breast Cancer\", \"probability\": 0}]}}";

/* bob (male, college) has HIV; al (male, college) is in group 2. */
static const char *bob_has_hiv =
    "{\"knowledge\": {\"individuals\": [{\"name\": \"bob\", \"qi\": [\"male\", \"college\"]}, "
    "{\"name\": \"al\", \"qi\": [\"male\", \"college\"], \"group\": 2}], \"statements\": "
    "[{\"terms\": [{\"person\": \"bob\", \"then\": \"HIV\"}], \"value\": 1}]}}";

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

/* A succeeded analysis of ds with body; its result in *result (new ref). */
static char *analysed(unsigned port, const char *ds, const char *body, json_t **result)
{
	char *an = analyse(port, ds ? ds : "", body);
	struct resp r = wait_done(port, an ? an : "");

	CHECK_STR(jstr(r.json, "status"), "succeeded");
	*result = json_incref(json_object_get(r.json, "result"));
	resp_free(&r);
	return an;
}

static double num(const json_t *o, const char *key)
{
	return json_number_value(json_object_get(o, key));
}

/* Each row against its posterior entry: p its largest P*, l exp(H). */
static void check_row(const json_t *row, const json_t *result)
{
	const json_t *post = json_object_get(result, "posterior"), *e = NULL, *v;
	double top = 0, h = 0;
	const char *s;

	for (size_t i = 0; !e && i < json_array_size(post); i++)
		if (json_equal(json_object_get(json_array_get(post, i), "qi"),
			       json_object_get(row, "qi")))
			e = json_array_get(post, i);
	CHECK(e != NULL);
	json_object_foreach(json_object_get(e, "p"), s, v)
	{
		top = fmax(top, json_number_value(v));
		h -= json_number_value(v) * log(json_number_value(v));
	}
	CHECK_NEAR(num(row, "p"), fmin(top, 1), 1e-15);
	CHECK_NEAR(num(row, "l"), exp(h), 1e-12);
	CHECK_NEAR(num(json_object_get(e, "p"), jstr(row, "sa")), top, 1e-15);
	CHECK(json_integer_value(json_object_get(row, "count")) ==
	      json_integer_value(json_object_get(e, "count")));
}

/* The whole list: the female junior first (BC certain, l 1, baseline
 * 1/2), ranked by p then count, 8 records, and the result's verdict
 * (records at risk, the baseline's largest P) from the rows. */
static json_t *check_list(unsigned port, const char *an, const json_t *result)
{
	const json_t *priv = json_object_get(result, "privacy"), *row, *first;
	char path[160];
	json_int_t records = 0, risky = 0;
	double base_max = 0;
	struct resp r;
	json_t *items;
	size_t i;

	snprintf(path, sizeof path, "/v1/analyses/%s/risk", an);
	r = get(port, path);
	CHECK(r.status == 200 && json_integer_value(json_object_get(r.json, "total")) == 5);
	CHECK(json_is_null(json_object_get(r.json, "next_cursor")) &&
	      !json_object_get(r.json, "people"));
	CHECK_STR(jstr(r.json, "sa_attribute"), "disease");
	CHECK_NEAR(num(r.json, "threshold"), 0.5, 0);
	items = json_incref(json_object_get(r.json, "items"));
	resp_free(&r);
	first = json_array_get(items, 0);
	CHECK_STR(json_string_value(json_array_get(json_object_get(first, "qi"), 1)), "junior");
	CHECK_STR(jstr(first, "sa"), "Breast Cancer");
	CHECK_NEAR(num(first, "p"), 1, 1e-12);
	CHECK_NEAR(num(first, "l"), 1, 1e-9);
	CHECK_NEAR(num(first, "baseline_p"), 0.5, 1e-15);
	CHECK(json_is_true(json_object_get(first, "at_risk")));
	json_array_foreach(items, i, row)
	{
		const json_t *prev = i ? json_array_get(items, i - 1) : row;

		check_row(row, result);
		CHECK(num(prev, "p") > num(row, "p") ||
		      (num(prev, "p") == num(row, "p") && num(prev, "count") >= num(row, "count")));
		records += json_integer_value(json_object_get(row, "count"));
		risky += json_is_true(json_object_get(row, "at_risk")) ? num(row, "count") : 0;
		base_max = fmax(base_max, num(row, "baseline_top"));
	}
	CHECK(records == 8);
	CHECK(risky == json_integer_value(json_object_get(priv, "records_at_risk")));
	CHECK(base_max ==
	      num(json_object_get(json_object_get(priv, "baseline"), "max_disclosure"), "p"));
	return items;
}

/* limit=2 walks the same rows in three pages, each but the last with a
 * cursor and a Link to the next. */
static void check_pages(unsigned port, const char *an, const json_t *all)
{
	char path[200], link[256];
	json_t *got = json_array();
	const char *cursor = NULL;
	struct resp r = {0};
	int pages = 0;

	do {
		snprintf(path, sizeof path, "/v1/analyses/%s/risk?limit=2%s%s", an,
			 cursor ? "&cursor=" : "", cursor ? cursor : "");
		resp_free(&r);
		r = get(port, path);
		CHECK(r.status == 200 && json_array_size(json_object_get(r.json, "items")) <= 2);
		json_array_extend(got, json_object_get(r.json, "items"));
		cursor = jstr(r.json, "next_cursor");
		CHECK(!cursor == !hdr(&r, "Link", link, sizeof link));
		if (cursor)
			CHECK_CONTAINS(link, "limit=2&cursor=");
	} while (cursor && ++pages < 10);
	resp_free(&r);
	CHECK(pages == 2 && json_equal(got, all));
	json_decref(got);
}

/* CSV: the header and one row per tuple, ranked as the JSON; a page of it
 * with its Link; HEAD has GET's ETag and no body. */
static void check_csv(unsigned port, const char *an)
{
	static const char *const header = "gender,degree,count,sa,p,l,baseline_p,baseline_top,"
					  "at_risk\r\n";
	char path[160], ct[128], link[256], etag[64], etag2[64];
	struct resp r;
	int rows = 0;

	snprintf(path, sizeof path, "/v1/analyses/%s/risk", an);
	r = call(port, "GET", path, "Accept: text/csv\r\n", NULL, 0);
	CHECK(r.status == 200 && r.body);
	CHECK_CONTAINS(hdr(&r, "Content-Type", ct, sizeof ct), "text/csv");
	CHECK(r.body && !strncmp(r.body, header, strlen(header)));
	CHECK(r.body && !strncmp(r.body + strlen(header), "female,junior,1,Breast Cancer,", 30));
	for (const char *p = r.body; p && (p = strstr(p, "\r\n")); p += 2)
		rows++;
	CHECK(rows == 6 && !hdr(&r, "Link", link, sizeof link));
	resp_free(&r);
	snprintf(path, sizeof path, "/v1/analyses/%s/risk?limit=2&cursor=2", an);
	r = call(port, "GET", path, "Accept: text/csv\r\n", NULL, 0);
	CHECK(r.status == 200 && r.body && !strncmp(r.body, header, strlen(header)));
	CHECK_CONTAINS(hdr(&r, "Link", link, sizeof link), "limit=2&cursor=4>; rel=\"next\"");
	resp_free(&r);
	snprintf(path, sizeof path, "/v1/analyses/%s/risk", an);
	r = get(port, path);
	hdr(&r, "ETag", etag, sizeof etag);
	resp_free(&r);
	r = call(port, "HEAD", path, NULL, NULL, 0);
	CHECK(r.status == 200 && r.len == 0);
	CHECK_STR(hdr(&r, "ETag", etag2, sizeof etag2), etag);
	resp_free(&r);
}

/* Wrong parameters, methods and ids. */
static void check_errors(unsigned port, const char *an)
{
	char path[160], allow[64];
	struct resp r;

	snprintf(path, sizeof path, "/v1/analyses/%s/risk?people=yes", an);
	r = get(port, path);
	check_problem(&r, 400, "people", "must be 0 or 1");
	resp_free(&r);
	snprintf(path, sizeof path, "/v1/analyses/%s/risk?limit=10001", an);
	r = get(port, path);
	check_problem(&r, 400, "limit", "10000");
	resp_free(&r);
	snprintf(path, sizeof path, "/v1/analyses/%s/risk?sort=p", an);
	r = get(port, path);
	check_problem(&r, 400, "sort", "limit, cursor, people");
	resp_free(&r);
	snprintf(path, sizeof path, "/v1/analyses/%s/risk", an);
	r = call(port, "DELETE", path, NULL, NULL, 0);
	check_problem(&r, 405, NULL, "");
	CHECK_STR(hdr(&r, "Allow", allow, sizeof allow), "GET, HEAD");
	resp_free(&r);
	check_status(port, "GET", "/v1/analyses/an_0000000000000000/risk", 404, "no analysis");
	check_status(port, "GET", "/v1/analyses/an_nothex/risk", 404, "no analysis");
}

/* Are the HTML page's elements balanced (void elements and self-closed
 * SVG ones aside)? A stack of names, enough for the pages report.c
 * writes: no comments, no raw text but CSS without '<'. */
static int balanced(const char *html)
{
	static const char *const voids[] = {"meta", "br", "hr", "img", "link", "input", "!DOCTYPE"};
	char stack[64][32];
	int depth = 0;

	for (const char *t = strchr(html, '<'); t; t = strchr(t + 1, '<')) {
		char name[32];
		size_t n = strcspn(t + 1 + (t[1] == '/'), " >/\n");
		const char *end = strchr(t, '>');
		int closing = t[1] == '/', skip = 0;

		if (!end || n == 0 || n >= sizeof name)
			return 0;
		memcpy(name, t + 1 + closing, n);
		name[n] = 0;
		for (size_t i = 0; i < sizeof voids / sizeof voids[0]; i++)
			skip |= !strcmp(name, voids[i]);
		if (skip || end[-1] == '/')
			continue;
		if (!closing && depth < 64)
			memcpy(stack[depth++], name, n + 1);
		else if (closing && (depth == 0 || strcmp(stack[--depth], name)))
			return 0;
	}
	return depth == 0;
}

/* The report page (report.c): HTML, balanced, with the verdict and the
 * tuples most at risk in the risk list's order. */
static void check_report(unsigned port, const char *an, const json_t *items)
{
	char path[96];
	struct resp r;
	const char *at;

	snprintf(path, sizeof path, "/v1/analyses/%s/report", an);
	r = get(port, path);
	CHECK(r.status == 200 && r.head && strstr(r.head, "text/html"));
	CHECK(r.body && !strncmp(r.body, "<!DOCTYPE html>", 15) && balanced(r.body));
	CHECK(r.body && strstr(r.body, "8 of 8 records") && strstr(r.body, "<svg"));
	at = r.body;
	for (size_t i = 0; at && i < 5; i++) { /* the table's rows in the list's order */
		const json_t *qi = json_object_get(json_array_get(items, i), "qi");
		char cell[96];

		snprintf(cell, sizeof cell, "<td>%s, %s</td>",
			 json_string_value(json_array_get(qi, 0)),
			 json_string_value(json_array_get(qi, 1)));
		at = strstr(at, cell);
		CHECK(at != NULL);
	}
	resp_free(&r);
}

static void test_figure1(void)
{
	char *dir = temp_dir(), *ds, *an;
	struct http_server *h = start(dir, 1, 4, NULL, 0);
	unsigned port = http_port(h);
	json_t *result = NULL, *items;

	ds = upload_figure1(port);
	an = analysed(port, ds, no_bc_for_men, &result);
	items = check_list(port, an ? an : "", result);
	check_pages(port, an ? an : "", items);
	check_csv(port, an ? an : "");
	check_report(port, an ? an : "", items);
	check_errors(port, an ? an : "");
	json_decref(items);
	json_decref(result);
	http_stop(h);
	free(ds);
	free(an);
	rm_tree(dir);
	free(dir);
}

/* ---- named people ------------------------------------------------------------- */

/* bob: HIV for certain against 1/6 without knowledge; al, known to be in
 * group 2 (Flu and Lung Cancer, one each): Flu (the first of equal
 * values) at 1/2, his bucket's 1/2. */
static void check_people(const json_t *people)
{
	const json_t *bob = json_array_get(people, 0), *al = json_array_get(people, 1);

	CHECK(json_array_size(people) == 2);
	CHECK_STR(jstr(bob, "name"), "bob");
	CHECK_STR(jstr(bob, "sa"), "HIV");
	CHECK_NEAR(num(bob, "p"), 1, 1e-9);
	CHECK_NEAR(num(bob, "baseline_p"), 1.0 / 6, 1e-15);
	CHECK(json_is_true(json_object_get(bob, "at_risk")) && !json_object_get(bob, "group"));
	CHECK_STR(jstr(al, "name"), "al");
	CHECK(json_integer_value(json_object_get(al, "group")) == 2);
	CHECK_STR(jstr(al, "sa"), "Flu");
	CHECK_NEAR(num(al, "p"), 0.5, 1e-9);
	CHECK_NEAR(num(al, "l"), 2, 1e-9);
	CHECK_NEAR(num(al, "baseline_p"), 0.5, 1e-15);
}

static void test_people(void)
{
	char *dir = temp_dir(), *ds, *an, path[160], link[256];
	struct http_server *h = start(dir, 1, 4, NULL, 0);
	unsigned port = http_port(h);
	json_t *result = NULL;
	struct resp r;

	ds = upload_figure1(port);
	an = analysed(port, ds, bob_has_hiv, &result);
	snprintf(path, sizeof path, "/v1/analyses/%s/risk?limit=1", an ? an : "");
	r = get(port, path); /* every person beside a page of tuples */
	CHECK(r.status == 200 && json_array_size(json_object_get(r.json, "items")) == 1);
	check_people(json_object_get(r.json, "people"));
	resp_free(&r);
	snprintf(path, sizeof path, "/v1/analyses/%s/risk?people=1&limit=1", an ? an : "");
	r = get(port, path); /* or paged on their own, the Link keeping people=1 */
	CHECK(r.status == 200 && json_integer_value(json_object_get(r.json, "total")) == 2);
	CHECK_STR(jstr(json_array_get(json_object_get(r.json, "items"), 0), "name"), "bob");
	CHECK_CONTAINS(hdr(&r, "Link", link, sizeof link), "?people=1&limit=1&cursor=1>");
	CHECK(!json_object_get(r.json, "people"));
	resp_free(&r);
	snprintf(path, sizeof path, "/v1/analyses/%s/risk?people=1", an ? an : "");
	r = call(port, "GET", path, "Accept: text/csv\r\n", NULL, 0);
	CHECK(r.status == 200);
	CHECK(r.body && !strncmp(r.body,
				 "name,gender,degree,group,sa,p,l,baseline_p,at_risk\r\n"
				 "bob,male,college,,HIV,",
				 74));
	CHECK_CONTAINS(r.body, "\r\nal,male,college,2,Flu,0.5,2,0.5,true\r\n");
	resp_free(&r);
	json_decref(result);
	http_stop(h);
	free(ds);
	free(an);
	rm_tree(dir);
	free(dir);
}

/* String group labels, CSV quoting and the tie between two values: "a, b"
 * is alone in g1 with x and y (1/2 each: x, bytewise first); "c" has x
 * for certain in g2. eve, in g1, likewise. */
static void test_labels_and_ties(void)
{
	static const char *const data =
	    "{\"qi_attributes\": [\"city\"], \"sa_attribute\": \"d\", \"records\": ["
	    "{\"qi\": [\"a, b\"], \"group\": \"g1\", \"sa\": \"y\"}, {\"qi\": [\"a, b\"], "
	    "\"group\": \"g1\", \"sa\": \"x\"}, {\"qi\": [\"c\"], \"group\": \"g2\", \"sa\": "
	    "\"x\"}, {\"qi\": [\"c\"], \"group\": \"g2\", \"sa\": \"x\"}]}";
	static const char *const eve = "{\"knowledge\": {\"individuals\": [{\"name\": \"eve\", "
				       "\"qi\": [\"a, b\"], \"group\": \"g1\"}]}}";
	char *dir = temp_dir(), *ds, *an, path[160];
	struct http_server *h = start(dir, 1, 4, NULL, 0);
	unsigned port = http_port(h);
	json_t *result = NULL;
	const json_t *p;
	struct resp r;

	ds = upload(port, data);
	an = analysed(port, ds, eve, &result);
	snprintf(path, sizeof path, "/v1/analyses/%s/risk", an ? an : "");
	r = call(port, "GET", path, "Accept: text/csv\r\n", NULL, 0);
	CHECK_STR(r.body, "city,count,sa,p,l,baseline_p,baseline_top,at_risk\r\n"
			  "c,2,x,1,1,1,1,true\r\n"
			  "\"a, b\",2,x,0.5,2,0.5,0.5,true\r\n");
	resp_free(&r);
	r = get(port, path);
	p = json_array_get(json_object_get(r.json, "people"), 0);
	CHECK_STR(jstr(p, "group"), "g1");
	CHECK_STR(jstr(p, "sa"), "x");
	CHECK_NEAR(num(p, "baseline_p"), 0.5, 0);
	resp_free(&r);
	json_decref(result);
	http_stop(h);
	free(ds);
	free(an);
	rm_tree(dir);
	free(dir);
}

/* ---- exports safe to open ------------------------------------------------ */

/* Every cell of a CSV body (no quoted commas in it) that begins with =, +,
 * -, @, a tab or a CR is a number; how many cells are each of want. */
static void count_cells(const char *body, const char *const *want, size_t n_want, size_t *seen)
{
	char *copy = strdup(body ? body : ""), *save = NULL, *end;

	for (char *c = strtok_r(copy, ",\r\n", &save); c; c = strtok_r(NULL, ",\r\n", &save)) {
		if (strchr("=+-@\t", *c)) {
			strtod(c, &end);
			CHECK(*end == '\0');
		}
		for (size_t i = 0; i < n_want; i++)
			seen[i] += !strcmp(c, want[i]);
	}
	free(copy);
}

/* QI and SA values that are formulas come back behind a ' in the posterior
 * and risk CSVs; the numbers -2 and -2.5e3 as they are. */
static void test_formulas(void)
{
	static const char *const want[] = {"'=1+1", "'+SUM(1+1)", "'@A1", "'-2+3", "-2", "-2.5e3"};
	static const char *const routes[] = {"posterior", "risk"};
	char *dir = temp_dir(), *csv = data_file("csv_formulas.csv"), *ds = NULL, *an, path[160];
	struct http_server *h = start(dir, 1, 4, NULL, 0);
	unsigned port = http_port(h);
	json_t *result = NULL;
	struct resp r = call(port, "POST", "/v1/datasets?sa=d&group=group",
			     "Content-Type: text/csv\r\n", csv, csv ? strlen(csv) : 0);

	CHECK(r.status == 201);
	if (r.status == 201)
		ds = strdup(jstr(r.json, "id"));
	resp_free(&r);
	an = analysed(port, ds, "{}", &result);
	for (size_t i = 0; i < 2; i++) {
		size_t seen[6] = {0};

		snprintf(path, sizeof path, "/v1/analyses/%s/%s", an ? an : "", routes[i]);
		r = call(port, "GET", path, "Accept: text/csv\r\n", NULL, 0);
		CHECK(r.status == 200);
		count_cells(r.body, want, 6, seen);
		for (size_t w = 0; w < 6; w++)
			CHECK(seen[w] > 0);
		resp_free(&r);
	}
	json_decref(result);
	http_stop(h);
	free(csv);
	free(ds);
	free(an);
	rm_tree(dir);
	free(dir);
}

/* ---- before success, and another tenant ------------------------------------ */

/* A solve stalled for a minute: 409 while it is queued or running, and
 * once it is cancelled. */
static void test_conflict(void)
{
	static const char *const iterates =
	    "{\"knowledge\": {\"rules\": [{\"if\": {\"sex\": \"M\"}, \"then\": \"flu\", "
	    "\"probability\": 0.5}]}}";
	char *dir = temp_dir(), *small = data_file("codec_small.json"), *ds, *an, path[160];
	struct http_options o;
	struct http_server *h;
	unsigned port;
	struct resp r;

	http_options_init(&o);
	o.workers = 1;
	o.test_stall = 60;
	h = start_with(dir, &o);
	port = http_port(h);
	ds = upload(port, small);
	an = analyse(port, ds ? ds : "", iterates);
	snprintf(path, sizeof path, "/v1/analyses/%s/risk", an ? an : "");
	r = get(port, path);
	check_problem(&r, 409, NULL, "its risk list exists once it has succeeded");
	resp_free(&r);
	snprintf(path, sizeof path, "/v1/analyses/%s", an ? an : "");
	r = del(port, path);
	CHECK(r.status == 200 && !strcmp(jstr(r.json, "status"), "cancelled"));
	resp_free(&r);
	snprintf(path, sizeof path, "/v1/analyses/%s/risk", an ? an : "");
	check_status(port, "GET", path, 409, "the analysis is cancelled");
	http_stop(h);
	free(ds);
	free(an);
	free(small);
	rm_tree(dir);
	free(dir);
}

/* alice's list is 404 to bob, as a missing one. */
static void test_tenants(void)
{
	char *dir = temp_dir(), tokens[512], *ds, *an, path[160];
	struct http_server *h;
	json_t *result = NULL;
	unsigned port;
	struct resp r;

	snprintf(tokens, sizeof tokens, "%s/tokens", dir);
	write_file(tokens, "token-alice-0123456789 alice\ntoken-bob-0123456789 bob\n");
	h = start(dir, 1, 4, tokens, 0);
	port = http_port(h);
	as("token-alice-0123456789");
	ds = upload_figure1(port);
	an = analysed(port, ds, "{}", &result);
	snprintf(path, sizeof path, "/v1/analyses/%s/risk", an ? an : "");
	r = get(port, path);
	CHECK(r.status == 200);
	resp_free(&r);
	as("token-bob-0123456789");
	check_status(port, "GET", path, 404, an ? an : "");
	as(NULL);
	json_decref(result);
	http_stop(h);
	free(ds);
	free(an);
	rm_tree(dir);
	free(dir);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	test_figure1();
	test_people();
	test_labels_and_ties();
	test_formulas();
	test_conflict();
	test_tenants();
	return check_done();
}
