// SPDX-License-Identifier: MIT
/* A worker's MCS category pair from its uid (see mcs_level.h). */
#include "broker/mcs_level.h"

#include <errno.h>
#include <stdio.h>

int mcs_level(uint32_t uid, char *buf, size_t len)
{
	uint32_t k = uid % MCS_PAIRS, a = 0;

	if (len < MCS_LEVEL_SIZE)
		return -ENOSPC;
	/* row a holds the pairs (a, a+1) .. (a, 1023) */
	while (k >= MCS_CATEGORIES - 1 - a) {
		k -= MCS_CATEGORIES - 1 - a;
		a++;
	}
	snprintf(buf, len, "s0:c%u,c%u", a, a + 1 + k);
	return 0;
}
