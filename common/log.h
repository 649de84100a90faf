/* SPDX-License-Identifier: MIT */
/*
 * Logging shared by every rdmagate process: lines tagged with the process
 * and its instance ("worker/vm-a: ..."), written with one write(2) each so
 * that they work under a seccomp allow-list (no stdio locking, no extra
 * syscalls) and never interleave between processes.
 *
 * log_warn()/fatal() append strerror(errno); log_warnx()/fatalx() do not.
 * fatal*() exit the process with status 1.
 */
#ifndef RDMAGATE_COMMON_LOG_H
#define RDMAGATE_COMMON_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/ratelimit.h"

enum log_level { LOG_LVL_ERR, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG };

/* Sets the tag ("worker/vm-a"); the string is copied. */
void log_init(const char *tag, enum log_level max_level);
void log_set_level(enum log_level max_level);
enum log_level log_get_level(void);
/* Where lines go (default 2); used by tests to capture them. */
void log_set_fd(int fd);

#define LOG_PRINTF(a, b) __attribute__((format(printf, a, b)))
void log_warn(const char *fmt, ...) LOG_PRINTF(1, 2);
void log_warnx(const char *fmt, ...) LOG_PRINTF(1, 2);
void log_info(const char *fmt, ...) LOG_PRINTF(1, 2);
void log_debug(const char *fmt, ...) LOG_PRINTF(1, 2);
void fatal(const char *fmt, ...) LOG_PRINTF(1, 2) __attribute__((noreturn));
void fatalx(const char *fmt, ...) LOG_PRINTF(1, 2) __attribute__((noreturn));
void log_vemit(enum log_level lvl, int errnum, const char *fmt, va_list ap)
	LOG_PRINTF(3, 0);

/*
 * Lines that a less-trusted peer can cause (a guest's ring violations, a
 * frontend's malformed messages) go through a limiter (common/ratelimit.h);
 * the count of the lines it dropped is reported on a line of its own just
 * before the next line that passes, so an operator sees that (and how
 * much) was dropped.
 */
/* log_vemit() through rl (a line filtered out by its level costs nothing). */
void log_rl_vemit(struct ratelimit *rl, enum log_level lvl, int errnum,
		  const char *fmt, va_list ap) LOG_PRINTF(4, 0);
void log_rl_warnx(struct ratelimit *rl, const char *fmt, ...) LOG_PRINTF(2, 3);

/*
 * A line caused by guest or frontend input, through the process's one
 * limiter for them (LOG_PEER_BURST lines per LOG_PEER_INTERVAL_MS).  A
 * worker serves one VM, so this is the VM's budget however many
 * connections, queues or devices its lines come from.
 */
#define LOG_PEER_INTERVAL_MS 5000u
#define LOG_PEER_BURST	     10u
void log_peer_warnx(const char *fmt, ...) LOG_PRINTF(1, 2);
void log_peer_warn(const char *fmt, ...) LOG_PRINTF(1, 2);
void log_peer_info(const char *fmt, ...) LOG_PRINTF(1, 2);
void log_peer_vemit(enum log_level lvl, int errnum, const char *fmt, va_list ap)
	LOG_PRINTF(3, 0);

/* The clock the limiters read (mono_ms(), or the test's), for a caller's
 * own limiter in front of the peer one. */
uint64_t log_clock_ms(void);
/* Tests: that clock (NULL: CLOCK_MONOTONIC), and a fresh peer limiter. */
void log_set_clock(uint64_t (*now_ms)(void));
void log_peer_reset(void);

#endif
