// SPDX-License-Identifier: MIT
/* rdmagate-trace's numeric options (trace/opts.h): names, fields, ranges. */
#include "trace/opts.h"

#include <limits.h>

#define ROW(f, n, ...)                                                         \
	OPT_NUM_ROW(struct trace_nums, f, n, 1, INT_MAX, __VA_ARGS__)

const struct opt_num trace_opt_nums[TO_NUM] = {
	[TO_INTERVAL] = ROW(interval, "interval", .unit = "seconds"),
	[TO_COUNT] = ROW(count, "count"),
};
