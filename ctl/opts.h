/* SPDX-License-Identifier: MIT */
/*
 * rdmagatectl's numeric options (common/opt_num.h), exported for the unit
 * test: fields of the SPAWN request its `spawn` command builds.
 */
#ifndef RDMAGATE_CTL_OPTS_H
#define RDMAGATE_CTL_OPTS_H

#include "common/opt_num.h"

enum ctl_spawn_opt_num { CO_SPAWN_PORT, CO_SPAWN_COUNT };

/* Fields of struct bp_spawn (common/broker_proto.h). */
extern const struct opt_num ctl_spawn_opt_nums[CO_SPAWN_COUNT];

#endif
