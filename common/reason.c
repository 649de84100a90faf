// SPDX-License-Identifier: MIT
/* Formatting of a refusal reason (common/reason.h). */
#include "reason.h"

#include <stdarg.h>
#include <stdio.h>

int reason_fail(struct reason *why, int err, const char *fmt, ...)
{
	va_list ap;

	if (why) {
		va_start(ap, fmt);
		vsnprintf(why->msg, sizeof(why->msg), fmt, ap);
		va_end(ap);
	}
	return err;
}
