/*
 * limits: the range check behind every number of a request (finite, not
 * subnormal, within the limit; -0 read as 0) and the text its messages
 * show the numbers in.
 */
#include <float.h>
#include <math.h>

#include "check.h"
#include "constraints.h"

static void test_format(void)
{
	static const struct {
		double v;
		const char *text;
	} cases[] = {
	    {1e308, "1e308"},
	    {-1e308, "-1e308"},
	    {1e-320, "1e-320"},
	    {5e-324, "5e-324"},
	    {1e9, "1e9"},
	    {-1e5, "-1e5"},
	    {0.1, "0.1"},
	    {0.25, "0.25"},
	    {1.5, "1.5"},
	    {0, "0"},
	    {-0.0, "-0"},
	    {1e-6, "1e-6"},
	    {9007199254740993.0, "9007199254740992"},
	    {DBL_MAX, "1.7976931348623157e308"},
	    {1.0 / 3, "0.3333333333333333"},
	};
	char buf[LIMITS_TEXT_SIZE];

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		limits_format(cases[i].v, buf, sizeof buf);
		CHECK_STR(buf, cases[i].text);
		CHECK(strtod(buf, NULL) == cases[i].v); /* reads back */
	}
}

static void test_check(void)
{
	static const struct {
		double v, lo, hi;
		enum pm_status st;
		const char *msg;
	} cases[] = {
	    {1e308, -1e9, 1e9, PM_ERR_INPUT, "1e308 is outside the limit [-1e9, 1e9]"},
	    {-1e308, -1e9, 1e9, PM_ERR_INPUT, "-1e308 is outside the limit [-1e9, 1e9]"},
	    {1e-320, -1e5, 1e5, PM_ERR_INPUT,
	     "1e-320 is subnormal (nonzero, below 2.22507e-308 in magnitude); the limit is "
	     "[-1e5, 1e5]"},
	    {-4e-320, 0, 1, PM_ERR_INPUT, "-4e-320 is subnormal"},
	    {NAN, 0, 1, PM_ERR_INPUT, "must be a finite number within [0, 1], got nan"},
	    {-INFINITY, 0, 1, PM_ERR_INPUT, "must be a finite number within [0, 1], got -inf"},
	    {1.0000000000000002, 0, 1, PM_ERR_INPUT,
	     "1.0000000000000002 is outside the limit [0, 1]"},
	    {1e9, -1e9, 1e9, PM_OK, ""},
	    {-1e9, -1e9, 1e9, PM_OK, ""},
	    {DBL_MIN, 0, 1, PM_OK, ""}, /* the smallest normal number is one */
	    {1, 0, 1, PM_OK, ""},
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct pm_error err = {0};
		double v = cases[i].v;

		CHECK(limits_check(&v, cases[i].lo, cases[i].hi, "statements[0].max", &err) ==
		      cases[i].st);
		if (cases[i].st) {
			CHECK_STR(err.field, "statements[0].max");
			CHECK_CONTAINS(err.message, cases[i].msg);
		} else {
			CHECK(v == cases[i].v && err.status == PM_OK);
		}
	}
}

/* -0 is 0 to the model, and must not print as "-0" in what comes back. */
static void test_negative_zero(void)
{
	struct pm_error err = {0};
	double v = -0.0;

	CHECK(limits_check(&v, 0, 1, "rules[0].probability", &err) == PM_OK);
	CHECK(v == 0 && !signbit(v));
}

int main(void)
{
	test_format();
	test_check();
	test_negative_zero();
	return check_done();
}
