/* SPDX-License-Identifier: MIT */
/*
 * The libvirt hook's numeric options (common/opt_num.h), exported for the
 * unit test, and what they fill.
 */
#ifndef RDMAGATE_HOOK_OPTS_H
#define RDMAGATE_HOOK_OPTS_H

#include <stdint.h>

#include "common/opt_num.h"

#define HOOK_TIMEOUT_DEFAULT                                                   \
	30 /* s; a STOP may take the broker 5 s + reaping */
#define HOOK_TIMEOUT_MAX 600

struct hook_opts {
	uint32_t timeout_s; /* each exchange with the broker */
};

enum hook_opt_num { HO_TIMEOUT, HO_COUNT };

/* Fields of struct hook_opts. */
extern const struct opt_num hook_opt_nums[HO_COUNT];

#endif
