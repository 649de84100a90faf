// SPDX-License-Identifier: MIT
/* The stats line's latency histogram (worker/pvrdma/lat_hist.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "worker/pvrdma/lat_hist.h"

static struct lat_hist H;

static int reset(void **state)
{
	(void)state;
	memset(&H, 0, sizeof(H));
	return 0;
}

static void test_empty_is_zero(void **state)
{
	(void)state;
	assert_int_equal(lat_hist_quantile(&H, 50), 0);
	assert_int_equal(lat_hist_quantile(&H, 100), 0);
}

/* Below 8 every value has its own bucket: quantiles are exact. */
static void test_small_values_exact(void **state)
{
	uint64_t v;

	(void)state;
	for (v = 0; v < 8; v++)
		lat_hist_add(&H, v);
	assert_int_equal(H.n, 8);
	assert_int_equal(lat_hist_quantile(&H, 50), 3); /* 4th of 8 */
	assert_int_equal(lat_hist_quantile(&H, 1), 0);
	assert_int_equal(lat_hist_quantile(&H, 100), 7);
}

/* Any single value reads back within 1/8 of itself, up to the cap. */
static void test_relative_error_bounded(void **state)
{
	uint64_t v, q;

	(void)state;
	for (v = 1; v < (1ull << 31); v = v * 3 / 2 + 1) {
		memset(&H, 0, sizeof(H));
		lat_hist_add(&H, v);
		q = lat_hist_quantile(&H, 50);
		assert_true((q > v ? q - v : v - q) * 8 <= v);
	}
}

/* The median and the 90th percentile of a skewed distribution, as
 * perftest's t_typical sees it: outliers do not move the median. */
static void test_median_ignores_outliers(void **state)
{
	int i;
	uint64_t med, p90;

	(void)state;
	for (i = 0; i < 80; i++)
		lat_hist_add(&H, 300);
	for (i = 0; i < 20; i++)
		lat_hist_add(&H, 50000);
	med = lat_hist_quantile(&H, 50);
	p90 = lat_hist_quantile(&H, 90);
	assert_true(med >= 300 - 300 / 8 && med <= 300 + 300 / 8);
	assert_true(p90 >= 50000 - 50000 / 8 && p90 <= 50000 + 50000 / 8);
	/* the 80th value is still the body's, the 81st the tail's */
	assert_true(lat_hist_quantile(&H, 80) <= 300 + 300 / 8);
	assert_true(lat_hist_quantile(&H, 81) > 40000);
}

/* Values past the cap count in the last bucket; out-of-range pct is
 * clamped. */
static void test_cap_and_clamp(void **state)
{
	(void)state;
	lat_hist_add(&H, UINT64_MAX);
	lat_hist_add(&H, 1ull << 40);
	assert_int_equal(H.b[LAT_HIST_BUCKETS - 1], 2);
	assert_true(lat_hist_quantile(&H, 0) > (1ull << 30));
	assert_true(lat_hist_quantile(&H, 1000) <= LAT_HIST_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_empty_is_zero, reset),
		cmocka_unit_test_setup(test_small_values_exact, reset),
		cmocka_unit_test_setup(test_relative_error_bounded, reset),
		cmocka_unit_test_setup(test_median_ignores_outliers, reset),
		cmocka_unit_test_setup(test_cap_and_clamp, reset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
