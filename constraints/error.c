/* Caller-owned error reports: a status, the offending field, a message. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "constraints.h"

enum pm_status error_set(struct pm_error *err, enum pm_status status, const char *field,
			 const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return status;
	err->status = status;
	snprintf(err->field, sizeof err->field, "%s", field ? field : "");
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof err->message, fmt, ap);
	va_end(ap);
	return status;
}

void error_prefix(struct pm_error *err, const char *prefix)
{
	char old[sizeof err->field];
	const char *sep = "";

	if (!err || !prefix || !*prefix)
		return;
	/* "records[3]" + "qi" -> "records[3].qi"; "[2]" needs no dot */
	if (err->field[0] && err->field[0] != '[')
		sep = ".";
	memcpy(old, err->field, sizeof old);
	/* a field too long for the buffer is cut, never overrun */
	if (snprintf(err->field, sizeof err->field, "%s%s%s", prefix, sep, old) < 0)
		err->field[0] = 0;
}

const char *error_status_name(enum pm_status status)
{
	switch (status) {
	case PM_OK:
		return "ok";
	case PM_ERR_INPUT:
		return "bad input";
	case PM_ERR_INCONSISTENT:
		return "inconsistent knowledge";
	case PM_ERR_NOMEM:
		return "out of memory";
	case PM_ERR_IO:
		return "i/o error";
	case PM_ERR_CANCELLED:
		return "cancelled";
	case PM_ERR_NOT_FOUND:
		return "not found";
	case PM_ERR_CONFLICT:
		return "conflict";
	case PM_ERR_BUSY:
		return "busy";
	case PM_ERR_TOO_LARGE:
		return "too large";
	case PM_ERR_INTERNAL:
		break;
	}
	return "internal error";
}
