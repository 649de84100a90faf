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

#endif
