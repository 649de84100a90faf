// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for VERSION's capabilities JSON parser
 * (common/vfio_user.c): any bytes in; what parses must format and parse
 * back to the same capabilities.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/vfio_user.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vfio_user_caps c, back;
	struct reason why;
	char buf[512];
	int n;

	why.msg[0] = '\0';
	if (vfio_user_caps_parse((const char *)data, size, &c, &why) < 0) {
		if (!why.msg[0])
			abort();
		return 0;
	}
	/* formatting covers the numeric members and write_multiple */
	c.present &= ~VFIO_USER_CAPS_HAS_MIGR;
	n = vfio_user_caps_format(&c, buf, sizeof(buf));
	if (n < 0 || vfio_user_caps_parse(buf, (size_t)n, &back, &why) < 0 ||
	    !vfio_user_caps_equal(&c, &back))
		abort();
	return 0;
}
