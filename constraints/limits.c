/*
 * Ranges of the numbers a request carries (issue 36): every bound,
 * coefficient, probability and option is checked here before it reaches
 * GLPK or the solver. GLPK asserts (and so aborts the process) on
 * magnitudes near DBL_MAX, and subnormal numbers lose their precision and
 * slip under every tolerance of the solver, so both are input errors, as
 * is anything beyond the limit the model gives the number.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "constraints.h"

void limits_format(double v, char *buf, size_t len)
{
	char *e;
	int prec;

	/* the shortest text that reads back as v: the number as the user
	 * wrote it, not 17 digits of binary noise */
	for (prec = 1; prec < 17; prec++) {
		snprintf(buf, len, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	if (prec == 17)
		snprintf(buf, len, "%.17g", v);
	/* "1e+09" -> "1e9", "1e-05" -> "1e-5", as JSON is usually written */
	if (!(e = strchr(buf, 'e')))
		return;
	e++;
	if (*e == '+')
		memmove(e, e + 1, strlen(e + 1) + 1);
	else if (*e == '-')
		e++;
	while (*e == '0' && e[1])
		memmove(e, e + 1, strlen(e + 1) + 1);
}

enum pm_status limits_check(double *v, double lo, double hi, const char *field,
			    struct pm_error *err)
{
	char x[LIMITS_TEXT_SIZE], a[LIMITS_TEXT_SIZE], b[LIMITS_TEXT_SIZE];

	limits_format(*v, x, sizeof x);
	limits_format(lo, a, sizeof a);
	limits_format(hi, b, sizeof b);
	if (!isfinite(*v))
		return error_set(err, PM_ERR_INPUT, field,
				 "must be a finite number within [%s, %s], got %s", a, b, x);
	if (*v != 0 && fabs(*v) < DBL_MIN)
		return error_set(err, PM_ERR_INPUT, field,
				 "%s is subnormal (nonzero, below %g in magnitude); the limit is "
				 "[%s, %s]",
				 x, DBL_MIN, a, b);
	if (*v < lo || *v > hi)
		return error_set(err, PM_ERR_INPUT, field, "%s is outside the limit [%s, %s]", x, a,
				 b);
	/* -0 and 0 are one number to the model; -0 would print as "-0" */
	if (*v == 0)
		*v = 0;
	return PM_OK;
}
