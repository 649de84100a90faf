// SPDX-License-Identifier: MIT
/* Formatting of the reasons the pure decoders give for refusing input. */
#include "reason.h"

#include <stdarg.h>
#include <stdio.h>

int rdma_fail(struct rdma_reason *why, int err, const char *fmt, ...)
{
	va_list ap;

	if (why) {
		va_start(ap, fmt);
		vsnprintf(why->msg, sizeof(why->msg), fmt, ap);
		va_end(ap);
	}
	return err;
}
