// SPDX-License-Identifier: MIT
/* Log lines: tagged, one line per call, errno text only with log_warn. */
#include <errno.h>
#include <stdio.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/log.h"

static void capture(char *buf, size_t len, void (*fn)(void))
{
	int p[2];
	ssize_t n;

	assert_int_equal(pipe(p), 0);
	log_set_fd(p[1]);
	fn();
	log_set_fd(2);
	close(p[1]);
	n = read(p[0], buf, len - 1);
	assert_true(n >= 0);
	buf[n] = '\0';
	close(p[0]);
}

static void emit_warn(void)
{
	errno = ENOENT;
	log_warn("open %s", "/x");
}

static void emit_warnx_and_debug(void)
{
	log_warnx("bad size %d", 7);
	log_debug("not shown at info level");
}

static void test_log_warn_carries_tag_and_errno(void **state)
{
	char buf[256];

	log_init("worker/vm-a", LOG_LVL_INFO);
	capture(buf, sizeof(buf), emit_warn);
	assert_string_equal(buf, "worker/vm-a: warning: open /x: "
				 "No such file or directory\n");
}

static void test_log_warnx_has_no_errno_and_levels_filter(void **state)
{
	char buf[256];

	log_init("broker", LOG_LVL_INFO);
	capture(buf, sizeof(buf), emit_warnx_and_debug);
	assert_string_equal(buf, "broker: warning: bad size 7\n");
}

static void emit_long(void)
{
	char big[3000];

	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	log_warnx("%s", big);
}

static void test_log_long_line_is_truncated_not_overflowed(void **state)
{
	char buf[4096];
	size_t n;

	log_init("t", LOG_LVL_INFO);
	capture(buf, sizeof(buf), emit_long);
	n = strlen(buf);
	assert_true(n <= 1024);
	assert_int_equal(buf[n - 1], '\n');
}

static uint64_t test_clock_ms;

static uint64_t test_clock(void)
{
	return test_clock_ms;
}

static void emit_peer_flood(void)
{
	int i;

	for (i = 0; i < 3 * (int)LOG_PEER_BURST; i++)
		log_peer_warnx("ring violation %d", i);
	log_debug("filtered by level: costs no budget");
	test_clock_ms += LOG_PEER_INTERVAL_MS;
	log_peer_warnx("after the window");
}

static void test_peer_lines_are_rate_limited_and_drops_reported(void **state)
{
	char buf[4096], want[128];
	const char *p;
	int lines = 0;

	log_init("worker/vm-a", LOG_LVL_INFO);
	log_set_clock(test_clock);
	log_peer_reset();
	capture(buf, sizeof(buf), emit_peer_flood);
	log_set_clock(NULL);
	for (p = buf; (p = strchr(p, '\n')); p++)
		lines++;
	assert_int_equal(lines, LOG_PEER_BURST + 2);
	snprintf(want, sizeof(want),
		 "worker/vm-a: warning: %u similar lines suppressed by the "
		 "rate limit (%u per %u ms)\n"
		 "worker/vm-a: warning: after the window\n",
		 2 * LOG_PEER_BURST, LOG_PEER_BURST, LOG_PEER_INTERVAL_MS);
	assert_non_null(strstr(buf, want));
	assert_null(strstr(buf, "ring violation 10\n"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_log_warn_carries_tag_and_errno),
		cmocka_unit_test(test_log_warnx_has_no_errno_and_levels_filter),
		cmocka_unit_test(
			test_log_long_line_is_truncated_not_overflowed),
		cmocka_unit_test(
			test_peer_lines_are_rate_limited_and_drops_reported),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
