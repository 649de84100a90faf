/* SPDX-License-Identifier: MIT */
/*
 * rdmagate-trace's numeric options (common/opt_num.h), exported for the
 * unit test, and what they fill.
 */
#ifndef RDMAGATE_TRACE_OPTS_H
#define RDMAGATE_TRACE_OPTS_H

#include "common/opt_num.h"

struct trace_nums {
	int interval; /* seconds between summaries */
	long count;   /* summaries before exiting; -1: until Ctrl-C */
};

enum trace_opt_num { TO_INTERVAL, TO_COUNT, TO_NUM };

/* Fields of struct trace_nums. */
extern const struct opt_num trace_opt_nums[TO_NUM];

#endif
