// SPDX-License-Identifier: MIT
/* The mux's numeric options (mux/opts.h): names, fields, ranges. */
#include "mux/opts.h"

#include "mux/router.h"

/* Written in seconds, kept in milliseconds; at most a year. */
#define TTL(f, n)                                                              \
	OPT_NUM_ROW(struct router_config, f, n, 1, 365ull * 86400,             \
		    .scale = 1000, .unit = "seconds")

const struct opt_num mux_opt_nums[MO_COUNT] = {
	[MO_ID_TTL] = TTL(id_ttl_ms, "id-ttl"),
	[MO_CONN_TTL] = TTL(conn_ttl_ms, "conn-ttl"),
};
