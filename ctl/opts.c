// SPDX-License-Identifier: MIT
/* rdmagatectl's numeric options (ctl/opts.h): names, fields, ranges. */
#include "ctl/opts.h"

#include "common/broker_proto.h"

const struct opt_num ctl_spawn_opt_nums[CO_SPAWN_COUNT] = {
	/* 0: the policy's port (the broker checks 1..255 against it) */
	[CO_SPAWN_PORT] = OPT_NUM_ROW(struct bp_spawn, port, "port", 0, 255),
};
