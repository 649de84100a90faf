// SPDX-License-Identifier: MIT
/* The mux's numeric options (mux/opts.h): names, fields, ranges. */
#include "mux/opts.h"

#include "mux/router.h"

/* Written in seconds, kept in milliseconds; at most a year. */
#define TTL(n, f)                                                              \
	{                                                                      \
		.name = n, .off = offsetof(struct router_config, f),           \
		.type = OPT_NUM_U64, .min = 1, .max = 365ull * 86400,          \
		.scale = 1000, .unit = "seconds"                               \
	}

const struct opt_num mux_opt_nums[MO_COUNT] = {
	[MO_ID_TTL] = TTL("id-ttl", id_ttl_ms),
	[MO_CONN_TTL] = TTL("conn-ttl", conn_ttl_ms),
};
