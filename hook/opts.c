// SPDX-License-Identifier: MIT
/* The libvirt hook's numeric options (hook/opts.h): names, fields, ranges. */
#include "hook/opts.h"

const struct opt_num hook_opt_nums[HO_COUNT] = {
	[HO_TIMEOUT] = OPT_NUM_ROW(struct hook_opts, timeout_s, "timeout", 1,
				   HOOK_TIMEOUT_MAX, .unit = "seconds"),
};
