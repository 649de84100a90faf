// SPDX-License-Identifier: MIT
/* rdmagate-trace's numeric options (trace/opts.h): names, fields, ranges. */
#include "trace/opts.h"

#include <limits.h>

const struct opt_num trace_opt_nums[TO_NUM] = {
	[TO_INTERVAL] = { .name = "interval",
			  .off = offsetof(struct trace_nums, interval),
			  .type = OPT_NUM_INT,
			  .min = 1,
			  .max = INT_MAX,
			  .unit = "seconds" },
	[TO_COUNT] = { .name = "count",
		       .off = offsetof(struct trace_nums, count),
		       .type = OPT_NUM_LONG,
		       .min = 1,
		       .max = INT_MAX },
};
