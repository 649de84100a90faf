// SPDX-License-Identifier: MIT
/* Tagged, single-write log lines for every rdmagate process (see log.h). */
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"

static char log_tag[64] = "rdmagate";
static enum log_level log_max = LOG_LVL_INFO;
static int log_fd = 2;
static uint64_t (*log_clock)(void);
static struct ratelimit log_peer_rl =
	RATELIMIT_WINDOW(LOG_PEER_INTERVAL_MS, LOG_PEER_BURST);

void log_init(const char *tag, enum log_level max_level)
{
	snprintf(log_tag, sizeof(log_tag), "%s", tag);
	log_max = max_level;
}

void log_set_level(enum log_level max_level)
{
	log_max = max_level;
}

enum log_level log_get_level(void)
{
	return log_max;
}

void log_set_fd(int fd)
{
	log_fd = fd;
}

void log_vemit(enum log_level lvl, int errnum, const char *fmt, va_list ap)
{
	static const char *const prefix[] = { "error: ", "warning: ", "",
					      "debug: " };
	char buf[1024];
	int n, m;

	if (lvl > log_max)
		return;
	n = snprintf(buf, sizeof(buf), "%s: %s", log_tag, prefix[lvl]);
	if (n < 0 || (size_t)n >= sizeof(buf))
		n = 0;
	m = vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);
	if (m < 0)
		m = 0;
	n += m;
	if ((size_t)n >= sizeof(buf) - 1)
		n = sizeof(buf) - 2;
	if (errnum) {
		m = snprintf(buf + n, sizeof(buf) - n, ": %s",
			     strerror(errnum));
		if (m > 0)
			n += m;
		if ((size_t)n >= sizeof(buf) - 1)
			n = sizeof(buf) - 2;
	}
	buf[n++] = '\n';
	/* One write per line; a short write to a log is not worth a retry. */
	if (write(log_fd, buf, n) < 0)
		return;
}

/* name(fmt, ...): emit(lvl, errno or 0, fmt, ap), errno preserved. */
#define LOG_FN(name, emit, lvl, with_errno)                                    \
	void name(const char *fmt, ...)                                        \
	{                                                                      \
		int saved = errno;                                             \
		va_list ap;                                                    \
		va_start(ap, fmt);                                             \
		emit(lvl, with_errno ? saved : 0, fmt, ap);                    \
		va_end(ap);                                                    \
		errno = saved;                                                 \
	}

LOG_FN(log_warn, log_vemit, LOG_LVL_WARN, 1)
LOG_FN(log_warnx, log_vemit, LOG_LVL_WARN, 0)
LOG_FN(log_info, log_vemit, LOG_LVL_INFO, 0)
LOG_FN(log_debug, log_vemit, LOG_LVL_DEBUG, 0)

void fatal(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	log_vemit(LOG_LVL_ERR, saved, fmt, ap);
	va_end(ap);
	exit(1);
}

void fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vemit(LOG_LVL_ERR, 0, fmt, ap);
	va_end(ap);
	exit(1);
}

/* ---- rate limiting ------------------------------------------------------ */

void log_set_clock(uint64_t (*now_ms)(void))
{
	log_clock = now_ms;
}

uint64_t log_clock_ms(void)
{
	return log_clock ? log_clock() : mono_ms();
}

void log_peer_reset(void)
{
	const struct ratelimit fresh =
		RATELIMIT_WINDOW(LOG_PEER_INTERVAL_MS, LOG_PEER_BURST);

	log_peer_rl = fresh;
}

static void emit_line(enum log_level lvl, const char *fmt, ...)
	LOG_PRINTF(2, 3);
static void emit_line(enum log_level lvl, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vemit(lvl, 0, fmt, ap);
	va_end(ap);
}

void log_rl_vemit(struct ratelimit *rl, enum log_level lvl, int errnum,
		  const char *fmt, va_list ap)
{
	uint64_t dropped;

	if (lvl > log_max)
		return;
	if (!ratelimit_pass(rl, log_clock_ms(), &dropped))
		return;
	if (dropped)
		emit_line(LOG_LVL_WARN,
			  "%llu similar lines suppressed by the rate limit "
			  "(%u per %u ms)",
			  (unsigned long long)dropped, rl->burst,
			  rl->period_ms);
	log_vemit(lvl, errnum, fmt, ap);
}

void log_rl_warnx(struct ratelimit *rl, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	log_rl_vemit(rl, LOG_LVL_WARN, 0, fmt, ap);
	va_end(ap);
	errno = saved;
}

void log_peer_vemit(enum log_level lvl, int errnum, const char *fmt, va_list ap)
{
	log_rl_vemit(&log_peer_rl, lvl, errnum, fmt, ap);
}

LOG_FN(log_peer_warn, log_peer_vemit, LOG_LVL_WARN, 1)
LOG_FN(log_peer_warnx, log_peer_vemit, LOG_LVL_WARN, 0)
LOG_FN(log_peer_info, log_peer_vemit, LOG_LVL_INFO, 0)
