/* SPDX-License-Identifier: MIT */
/*
 * The mux's numeric options (common/opt_num.h), exported for the unit
 * test: fields of its routing core's configuration (mux/router.h).
 */
#ifndef RDMAGATE_MUX_OPTS_H
#define RDMAGATE_MUX_OPTS_H

#include "common/opt_num.h"

enum mux_opt_num { MO_ID_TTL, MO_CONN_TTL, MO_COUNT };

/* Fields of struct router_config. */
extern const struct opt_num mux_opt_nums[MO_COUNT];

#endif
