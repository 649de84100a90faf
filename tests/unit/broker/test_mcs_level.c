// SPDX-License-Identifier: MIT
/*
 * The worker's MCS level from its uid (broker/mcs_level.c): the first and
 * last pairs, the wrap at MCS_PAIRS, every pair distinct over a whole
 * period, and a short buffer refused.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "broker/mcs_level.h"

static void level_is(uint32_t uid, const char *want)
{
	char buf[MCS_LEVEL_SIZE];

	assert_int_equal(mcs_level(uid, buf, sizeof(buf)), 0);
	assert_string_equal(buf, want);
}

static void test_known_pairs(void **state)
{
	(void)state;
	level_is(0, "s0:c0,c1");
	level_is(1, "s0:c0,c2");
	level_is(1022, "s0:c0,c1023");
	level_is(1023, "s0:c1,c2");
	level_is(MCS_PAIRS - 1, "s0:c1022,c1023");
	level_is(MCS_PAIRS, "s0:c0,c1");
	level_is(60001, "s0:c60,c452"); /* 60 rows (59610 pairs) + 391 */
	level_is(UINT32_MAX,
		 "s0:c4,c14"); /* 2^32 - 1 = 8200 * MCS_PAIRS + 4095 */
}

/* every uid of one period gets its own pair, each A < B <= 1023 */
static void test_distinct(void **state)
{
	uint8_t *seen = calloc(MCS_CATEGORIES * MCS_CATEGORIES, 1);
	unsigned int a, b;
	uint32_t uid;
	char buf[MCS_LEVEL_SIZE];

	(void)state;
	assert_non_null(seen);
	for (uid = 100000; uid < 100000 + MCS_PAIRS; uid++) {
		assert_int_equal(mcs_level(uid, buf, sizeof(buf)), 0);
		assert_int_equal(sscanf(buf, "s0:c%u,c%u", &a, &b), 2);
		assert_true(a < b && b < MCS_CATEGORIES);
		assert_int_equal(seen[a * MCS_CATEGORIES + b], 0);
		seen[a * MCS_CATEGORIES + b] = 1;
	}
	free(seen);
}

static void test_short_buffer(void **state)
{
	char buf[MCS_LEVEL_SIZE] = "untouched";

	(void)state;
	assert_int_equal(mcs_level(5, buf, MCS_LEVEL_SIZE - 1), -ENOSPC);
	assert_string_equal(buf, "untouched");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_pairs),
		cmocka_unit_test(test_distinct),
		cmocka_unit_test(test_short_buffer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
