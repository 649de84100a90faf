// SPDX-License-Identifier: MIT
/* Tagged, single-write log lines for every rdmagate process (see log.h). */
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char log_tag[64] = "rdmagate";
static enum log_level log_max = LOG_LVL_INFO;
static int log_fd = 2;

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

#define LOG_FN(name, lvl, with_errno)                                  \
	void name(const char *fmt, ...)                                \
	{                                                              \
		int saved = errno;                                     \
		va_list ap;                                            \
		va_start(ap, fmt);                                     \
		log_vemit(lvl, with_errno ? saved : 0, fmt, ap);       \
		va_end(ap);                                            \
		errno = saved;                                         \
	}

LOG_FN(log_warn, LOG_LVL_WARN, 1)
LOG_FN(log_warnx, LOG_LVL_WARN, 0)
LOG_FN(log_info, LOG_LVL_INFO, 0)
LOG_FN(log_debug, LOG_LVL_DEBUG, 0)

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
