// SPDX-License-Identifier: MIT
/*
 * The backend's refusals of guest input are logged through the worker's
 * one limit for peer-caused lines (common/log.h) and nothing else: a burst
 * over LOG_PEER_BURST is cut and the dropped lines counted, and however
 * many refusals came before, each new window logs again (no lifetime cap
 * that a guest could exhaust to hide what it does next).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#define RDMAGATE_PROBES_DEFINE /* the probes' semaphores, as main.c has */
#include "common/probes.h"
#include "worker/backend/be_impl.h"
#include "tests/unit/log_capture.h"

static uint64_t fake_now;

static uint64_t fake_clock(void)
{
	return fake_now;
}

static unsigned int count(const char *s, const char *what)
{
	unsigned int n = 0;

	for (; (s = strstr(s, what)); s += strlen(what))
		n++;
	return n;
}

static void test_refusals_rate_limited_not_capped(void **state)
{
	/* far past the 256 refusals the worker used to stop logging after */
	const unsigned int windows = 60, per_window = LOG_PEER_BURST + 5;
	struct log_capture lc;
	struct be be = { 0 };
	unsigned int n = 0;
	char first[64];

	log_capture_start(&lc);
	log_set_clock(fake_clock);
	for (unsigned int w = 0; w < windows; w++) {
		const char *l;

		fake_now += LOG_PEER_INTERVAL_MS;
		snprintf(first, sizeof(first), "CREATE_QP: refusal %u\n", n);
		for (unsigned int i = 0; i < per_window; i++)
			be_refused(&be, "CREATE_QP: refusal %u", n++);
		l = log_captured(&lc);
		assert_int_equal(count(l, "CREATE_QP: refusal"),
				 LOG_PEER_BURST);
		if (!strstr(l, first))
			fail_msg("window %u does not start with '%s': %s", w,
				 first, l);
		if (w > 0 && !strstr(l, ": 5 similar lines suppressed"))
			fail_msg("window %u does not count the 5 dropped: %s",
				 w, l);
	}
	assert_true(n > 256);
	log_set_clock(NULL);
	log_capture_stop(&lc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refusals_rate_limited_not_capped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
