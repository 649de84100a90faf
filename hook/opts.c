// SPDX-License-Identifier: MIT
/* The libvirt hook's numeric options (hook/opts.h): names, fields, ranges. */
#include "hook/opts.h"

const struct opt_num hook_opt_nums[HO_COUNT] = {
	[HO_TIMEOUT] = { .name = "timeout",
			 .off = offsetof(struct hook_opts, timeout_s),
			 .type = OPT_NUM_U32,
			 .min = 1,
			 .max = HOOK_TIMEOUT_MAX,
			 .unit = "seconds" },
};
