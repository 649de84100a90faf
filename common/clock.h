/* SPDX-License-Identifier: MIT */
/*
 * The one clock for timeouts, rate limits and durations in every process
 * and test: CLOCK_MONOTONIC (never steps with the wall clock) in ns, us or
 * ms.  clock_gettime() is a vDSO call here: no syscall, so no seccomp rule.
 */
#ifndef RDMAGATE_COMMON_CLOCK_H
#define RDMAGATE_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t mono_us(void)
{
	return mono_ns() / 1000u;
}

static inline uint64_t mono_ms(void)
{
	return mono_ns() / 1000000u;
}

/*
 * An event loop's poll timeout for the earliest of some deadlines (ms on
 * mono_ms()'s clock; UINT64_MAX: none): -1 (none), 0 (due), else the ms
 * left.
 */
static inline int timeout_until_ms(uint64_t deadline, uint64_t now)
{
	if (deadline == UINT64_MAX)
		return -1;
	return deadline <= now ? 0 : (int)(deadline - now);
}

#endif
