/*
 * report.c: report_document on the documents of
 * tests/data/report_documents.txt (a result or a sweep of any shape makes
 * a page, never a crash; anything else an error naming what it is), and
 * on a real result and a real sweep (a sweep_run of small) in which every
 * string, and a rule's attribute name, is an HTML payload: none reaches
 * the page unescaped. The sweep's page carries its chart.
 */
#include "check.h"
#include "server.h"
#include "test_data.h"

static const char payload[] = "<img src=x onerror=alert(1)>\"'&";

/* One case: "result", "sweep" or "error: TEXT", a tab, the document. */
static size_t check_case(char *line)
{
	char *tab = strchr(line, '\t'), *html = NULL;
	struct pm_error err = {0};
	json_error_t je;
	json_t *doc;
	size_t len = 0;
	enum pm_status st;

	if (!*line || *line == '#' || !tab)
		return 0;
	*tab = '\0';
	doc = json_loads(tab + 1, 0, &je);
	CHECK(doc != NULL);
	st = report_document(doc, &html, &len, &err);
	if (!strncmp(line, "error: ", 7)) {
		CHECK(st == PM_ERR_INPUT && html == NULL);
		CHECK_CONTAINS(err.message, line + 7);
		CHECK_CONTAINS(err.message, "not a result or a sweep");
	} else {
		CHECK(st == PM_OK && html && len == strlen(html));
		CHECK_CONTAINS(html, !strcmp(line, "sweep") ? "<h1>Sweep report: "
							    : "<h1>Privacy report: ");
		CHECK_CONTAINS(html, "</body></html>");
	}
	free(html);
	json_decref(doc);
	return 1;
}

/* j with every string value made the payload (the keys stay: the page
 * reads them). New reference. */
static json_t *hostile(const json_t *j)
{
	const char *k;
	json_t *out, *v;
	size_t i;

	if (json_is_string(j))
		return json_string(payload);
	if (json_is_array(j)) {
		out = json_array();
		json_array_foreach(j, i, v) json_array_append_new(out, hostile(v));
		return out;
	}
	if (!json_is_object(j))
		return json_deep_copy(j);
	out = json_object();
	json_object_foreach((json_t *)j, k, v) json_object_set_new(out, k, hostile(v));
	return out;
}

/* The page of doc made hostile: the payload appears escaped, never as
 * markup. */
static void check_escaped(json_t *doc)
{
	json_t *h = json_object();
	struct pm_error err = {0};
	char *html = NULL;
	size_t len;
	const char *k;
	json_t *v;

	json_object_foreach(doc, k, v) json_object_set_new(h, k, hostile(v));
	/* keys that are data: an attribute's name in a rule */
	json_array_append_new(json_object_get(h, "rules"),
			      json_pack("{s:{s:s}, s:s, s:s}", "if", payload, payload, "then",
					payload, "binding", payload));
	CHECK(report_document(h, &html, &len, &err) == PM_OK);
	CHECK(html && !strstr(html, "<img") && !strstr(html, "\"'&"));
	CHECK_CONTAINS(html, "&lt;img src=x onerror=alert(1)&gt;&quot;&#39;&amp;");
	free(html);
	json_decref(h);
}

/* A real result and a real sweep of small, each also made hostile. */
static void test_real(void)
{
	struct dataset *ds = data_dataset("codec_small.json");
	json_t *know = json_loads("{\"rules\": [{\"if\": {\"sex\": \"M\"}, \"then\": \"flu\", "
				  "\"min\": 0.6}]}",
				  0, NULL);
	json_t *req = json_loads("{\"kinds\": [\"positive\", \"mixed\"], \"k\": [0, 1]}", 0, NULL);
	struct sweep_request q = {0};
	struct solver_options o;
	struct pm_error err = {0};
	json_t *res = NULL, *sweep = NULL;
	char *html = NULL;
	size_t len;

	solver_options_init(&o);
	CHECK(ds && pipeline_run_dataset(ds, know, NULL, NULL, 0, &res, &err) == PM_OK);
	CHECK(report_document(res, &html, &len, &err) == PM_OK);
	CHECK_CONTAINS(html, "at its min");
	free(html);
	check_escaped(res);
	CHECK(codec_sweep_request(req, ds, &q, &err) == PM_OK);
	CHECK(sweep_run(ds, &q, &o, NULL, &sweep, &err) == PM_OK);
	CHECK(report_document(sweep, &html, &len, &err) == PM_OK);
	CHECK_CONTAINS(html, "<svg");
	CHECK_CONTAINS(html, "<td>mixed</td>");
	free(html);
	check_escaped(sweep);
	sweep_request_finish(&q);
	json_decref(sweep);
	json_decref(res);
	json_decref(req);
	json_decref(know);
	dataset_destroy(ds);
}

int main(void)
{
	char path[4096], *text, *save = NULL;
	size_t n = 0, len;

	snprintf(path, sizeof path, "%s/report_documents.txt", data_dir());
	text = read_file(path, &len);
	CHECK(text != NULL);
	for (char *l = text ? strtok_r(text, "\n", &save) : NULL; l;
	     l = strtok_r(NULL, "\n", &save))
		n += check_case(l);
	CHECK(n >= 18);
	free(text);
	test_real();
	return check_done();
}
