// SPDX-License-Identifier: MIT
/*
 * The one rate limiter for peer-caused log lines (common/ratelimit.c), in
 * both of its shapes, with a fake clock: a window of n lines, and a rate
 * with bursts; the count of what it dropped, reported once, by the next
 * line that passes, a timer's flush or a stream's end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/ratelimit.h"

/* Lines passing out of n offered at now. */
static unsigned int passing(struct ratelimit *rl, unsigned int n, uint64_t now)
{
	unsigned int i, ok = 0;
	uint64_t dropped;

	for (i = 0; i < n; i++)
		ok += ratelimit_pass(rl, now, &dropped);
	return ok;
}

static void test_window(void **state)
{
	struct ratelimit rl = RATELIMIT_WINDOW(1000, 3);
	uint64_t dropped = 99;
	int i;

	(void)state;
	for (i = 0; i < 3; i++) {
		assert_true(ratelimit_pass(&rl, 5000 + i, &dropped));
		assert_int_equal(dropped, 0);
	}
	for (i = 0; i < 4; i++)
		assert_false(ratelimit_pass(&rl, 5999, &dropped));
	assert_int_equal(dropped, 0); /* untouched when refused */
	/* the window opened at the first line: a new one at +1000 */
	assert_true(ratelimit_pass(&rl, 6000, &dropped));
	assert_int_equal(dropped, 4);
	assert_true(ratelimit_pass(&rl, 6001, &dropped));
	assert_int_equal(dropped, 0);
	assert_int_equal(passing(&rl, 5, 6002), 1);
	/* a quiet spell banks nothing: one window's worth, not three */
	assert_int_equal(passing(&rl, 10, 9000), 3);
	/* the next window opens at that window's first line (9000) */
	assert_int_equal(passing(&rl, 10, 9999), 0);
	assert_int_equal(passing(&rl, 10, 10000), 3);
}

static void test_rate(void **state)
{
	struct ratelimit rl = RATELIMIT_RATE(20, 100);
	uint64_t dropped;

	(void)state;
	assert_int_equal(rl.period_ms, 50);
	assert_int_equal(passing(&rl, 150, 1000), 100);
	/* one token every 50 ms, none for a part of one */
	assert_int_equal(passing(&rl, 5, 1049), 0);
	assert_true(ratelimit_pass(&rl, 1050, &dropped));
	assert_int_equal(dropped, 55);
	/* a second later: 20 more, the fractions kept (1050 + 20 * 50) */
	assert_int_equal(passing(&rl, 30, 2049), 19);
	assert_int_equal(passing(&rl, 30, 2050), 1);
	/* never more than a burst, however long the quiet */
	assert_int_equal(passing(&rl, 300, UINT64_MAX / 2), 100);
}

static void test_flush_and_drain(void **state)
{
	struct ratelimit rl = RATELIMIT_WINDOW(1000, 2);
	uint64_t n = 99;

	(void)state;
	assert_false(ratelimit_flush(&rl, 0, &n)); /* nothing dropped */
	assert_int_equal(passing(&rl, 7, 0), 2);
	/* within the window: no line could pass, nothing said yet */
	assert_false(ratelimit_flush(&rl, 999, &n));
	assert_int_equal(n, 99);
	assert_true(ratelimit_flush(&rl, 1000, &n));
	assert_int_equal(n, 5);
	assert_false(ratelimit_flush(&rl, 1001, &n)); /* said once */
	/* the flush took no token */
	assert_int_equal(passing(&rl, 3, 1001), 2);
	assert_int_equal(ratelimit_drain(&rl), 1);
	assert_int_equal(ratelimit_drain(&rl), 0);
}

static void test_clock_back_and_zeroed(void **state)
{
	struct ratelimit rl = RATELIMIT_WINDOW(1000, 2), zero = { 0 };

	(void)state;
	assert_int_equal(passing(&rl, 5, 100000), 2);
	/* a (test's) clock going back fills the bucket again */
	assert_int_equal(passing(&rl, 5, 1000), 2);
	/* a limiter nobody set up lets nothing through, and counts it */
	assert_int_equal(passing(&zero, 3, 1000), 0);
	assert_int_equal(ratelimit_drain(&zero), 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_window),
		cmocka_unit_test(test_rate),
		cmocka_unit_test(test_flush_and_drain),
		cmocka_unit_test(test_clock_back_and_zeroed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
