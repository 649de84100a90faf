// SPDX-License-Identifier: MIT
/* Formatting of a refusal reason (common/reason.h). */
#include "reason.h"

#include <stdarg.h>
#include <stdio.h>

static void reason_vset(struct reason *why, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
static void reason_vset(struct reason *why, const char *fmt, va_list ap)
{
	if (why)
		vsnprintf(why->msg, sizeof(why->msg), fmt, ap);
}

void reason_set(struct reason *why, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	reason_vset(why, fmt, ap);
	va_end(ap);
}

int reason_fail(struct reason *why, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	reason_vset(why, fmt, ap);
	va_end(ap);
	return err;
}
