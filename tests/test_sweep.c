/* Sweeps (server/sweep.c, SPEC 4.2): every point equals the separate
 * solve of its own mined knowledge (mine once at the largest K and take
 * prefixes is exact), in the order kinds x T x K; requests are checked
 * field by field. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "random_table.h"
#include "server.h"

/* The separate solve of one point: {"mine": {...}} through the pipeline. */
static json_t *separate(const struct dataset *ds, const char *kind, long long k, long long t,
			long long min_support)
{
	long long pos = !strcmp(kind, "positive") ? k : !strcmp(kind, "mixed") ? k / 2 : 0;
	long long neg = !strcmp(kind, "negative") ? k : !strcmp(kind, "mixed") ? k - k / 2 : 0;
	json_t *know = json_pack("{s:{s:I, s:I, s:I}}", "mine", "positive", pos, "negative", neg,
				 "min_support", min_support),
	       *out = NULL;
	json_t *solver = json_pack("{s:f}", "tolerance", 1e-10);
	struct pm_error err = {0};

	if (t)
		json_object_set_new(json_object_get(know, "mine"), "qi_attributes",
				    json_integer(t));
	CHECK(pipeline_run_dataset(ds, know, solver, NULL, 0, &out, &err) == PM_OK);
	json_decref(know);
	json_decref(solver);
	return out;
}

static double num(const json_t *o, const char *a, const char *b)
{
	const json_t *v = json_object_get(o, a);

	return json_number_value(b ? json_object_get(v, b) : v);
}

static void test_points_equal_separate_solves(void)
{
	double worst = 0;
	size_t points = 0;

	for (uint64_t seed = 1; seed <= 12; seed++) {
		uint64_t rng = seed * 7777;
		struct dataset *ds = random_dataset(&rng);
		long long t = (long long)(seed % 3 == 0 ? 0 : rng_in(&rng, 1, ds->n_attrs));
		json_t *req = json_pack("{s:[s,s,s], s:[i,i,i,i], s:i}", "kinds", "positive",
					"negative", "mixed", "k", 0, 1, 3, 6, "min_support", 1);
		struct sweep_request q;
		struct solver_options o;
		struct pm_error err = {0};
		json_t *out = NULL, *p;
		size_t i;

		if (t)
			json_object_set_new(req, "qi_attributes", json_pack("[I]", t));
		solver_options_init(&o);
		o.tolerance = 1e-10;
		CHECK(codec_sweep_request(req, ds, &q, &err) == PM_OK);
		CHECK(sweep_run(ds, &q, &o, NULL, &out, &err) == PM_OK);
		json_array_foreach(json_object_get(out, "points"), i, p)
		{
			const char *kind = json_string_value(json_object_get(p, "kind"));
			json_t *s =
			    separate(ds, kind, json_integer_value(json_object_get(p, "k")), t, 1);

			CHECK(!strcmp(kind, i < 4 ? "positive" : i < 8 ? "negative" : "mixed"));
			worst = fmax(worst, fabs(num(p, "estimation_accuracy", NULL) -
						 num(s, "estimation_accuracy", NULL)));
			worst = fmax(worst,
				     fabs(num(json_object_get(p, "privacy"), "t_closeness", NULL) -
					  num(json_object_get(s, "privacy"), "t_closeness", NULL)));
			worst = fmax(
			    worst, fabs(num(json_object_get(p, "privacy"), "max_disclosure", "p") -
					num(json_object_get(s, "privacy"), "max_disclosure", "p")));
			points++;
			json_decref(s);
		}
		json_decref(out);
		json_decref(req);
		sweep_request_finish(&q);
		dataset_destroy(ds);
	}
	printf("sweep: %zu points against their separate solves, worst %.3g\n", points, worst);
	CHECK(points == 12 * 12 && worst <= 1e-9);
}

/* Each bad request names its field. */
static void test_requests(void)
{
	static const struct {
		const char *json, *field, *message;
	} bad[] = {
	    {"{\"k\": [1]}", "kinds", "must be a list of 1 to 3"},
	    {"{\"kinds\": [\"both\"], \"k\": [1]}", "kinds[0]", "must be \"positive\""},
	    {"{\"kinds\": [\"mixed\"]}", "k", "is missing"},
	    {"{\"kinds\": [\"mixed\"], \"k\": [1, -2]}", "k[1]", "must be an integer from 0"},
	    {"{\"kinds\": [\"mixed\"], \"k\": [1], \"qi_attributes\": [9]}", "qi_attributes[0]",
	     "must be an integer from 1 to"},
	    {"{\"kinds\": [\"mixed\"], \"k\": [1], \"kk\": 1}", "kk", "unknown key"},
	};
	uint64_t rng = 5;
	struct dataset *ds = random_dataset(&rng);

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		json_t *j = json_loads(bad[i].json, 0, NULL);
		struct sweep_request q;
		struct pm_error err = {0};

		CHECK(codec_sweep_request(j, ds, &q, &err) == PM_ERR_INPUT);
		CHECK_STR(err.field, bad[i].field);
		CHECK(strstr(err.message, bad[i].message) != NULL);
		if (!strstr(err.message, bad[i].message))
			fprintf(stderr, "%s: %s\n", err.field, err.message);
		sweep_request_finish(&q);
		json_decref(j);
	}
	dataset_destroy(ds);
}

int main(void)
{
	test_requests();
	test_points_equal_separate_solves();
	return check_done();
}
