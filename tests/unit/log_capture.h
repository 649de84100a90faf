/* SPDX-License-Identifier: MIT */
/*
 * Test helper: the process log (common/log.h) captured in a pipe, so that
 * a unit test can check what the code under test said.  Header-only;
 * include it after <cmocka.h>.  A test of the rate limits sets its own
 * clock after log_capture_start() (log_set_clock(), as test_vu_proto.c).
 */
#ifndef RDMAGATE_TESTS_UNIT_LOG_CAPTURE_H
#define RDMAGATE_TESTS_UNIT_LOG_CAPTURE_H

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"

struct log_capture {
	int fd[2];
	char buf[8192];
};

/*
 * Logs at INFO and above go to the capture from now on, with a fresh
 * budget of the peer-line rate limiter (common/log.h).
 */
static inline void log_capture_start(struct log_capture *lc)
{
	assert_int_equal(pipe2(lc->fd, O_NONBLOCK | O_CLOEXEC), 0);
	log_init("test", LOG_LVL_INFO);
	log_peer_reset();
	log_set_fd(lc->fd[1]);
}

/* Back to stderr. */
static inline void log_capture_stop(struct log_capture *lc)
{
	log_set_fd(2);
	close(lc->fd[0]);
	close(lc->fd[1]);
}

/* Everything logged since the last call. */
static inline const char *log_captured(struct log_capture *lc)
{
	ssize_t n = read(lc->fd[0], lc->buf, sizeof(lc->buf) - 1);

	lc->buf[n > 0 ? n : 0] = '\0';
	return lc->buf;
}

/* Fails the test unless what was logged since the last call has `what`. */
static inline void log_capture_expect(struct log_capture *lc, const char *what)
{
	const char *l = log_captured(lc);

	if (!strstr(l, what))
		fail_msg("log '%s' does not mention '%s'", l, what);
	/* the next check sees its own line whatever the rate limit */
	log_peer_reset();
}

#endif
