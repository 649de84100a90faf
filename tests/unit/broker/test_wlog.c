// SPDX-License-Identifier: MIT
/*
 * A worker's log stream as the broker re-emits it (broker/wlog.c): lines
 * cut at newlines, control bytes escaped so no line can end early or
 * paint the terminal, long lines cut, the worker's own tag taken off, and
 * the rate bounded with the dropped lines counted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "broker/wlog.h"

static char got[256][WLOG_OUT_MAX];
static unsigned int n_got;

static void collect(void *arg, const char *line)
{
	(void)arg;
	if (n_got < 256)
		snprintf(got[n_got], sizeof(got[0]), "%s", line);
	n_got++;
}

static void feed(struct wlog *l, const char *s, uint64_t now)
{
	wlog_feed(l, s, strlen(s), now, collect, NULL);
}

static int setup(void **state)
{
	(void)state;
	n_got = 0;
	return 0;
}

static void test_lines_and_tag(void **state)
{
	struct wlog l;

	(void)state;
	wlog_init(&l, "worker/a: ");
	feed(&l, "worker/a: frontend connected\nworker/a: warn", 0);
	assert_int_equal(n_got, 1);
	assert_string_equal(got[0], "frontend connected");
	feed(&l, "ing: x\n", 0);
	assert_int_equal(n_got, 2);
	assert_string_equal(got[1], "warning: x");
	/* another tag is the worker's text, kept */
	feed(&l, "worker/b: not mine\n", 0);
	assert_string_equal(got[2], "worker/b: not mine");
	/* a partial line at the end of the stream */
	feed(&l, "last words", 0);
	wlog_end(&l, 0, collect, NULL);
	assert_int_equal(n_got, 4);
	assert_string_equal(got[3], "last words");
}

/* No byte of a worker's can end a line or start another */
static void test_escaped(void **state)
{
	struct wlog l;

	(void)state;
	wlog_init(&l, NULL);
	feed(&l, "a\rbroker: forged\x1b[2J\\x\x7f\xc3\xa9\tz\n", 0);
	assert_int_equal(n_got, 1);
	assert_string_equal(got[0], "a\\x0dbroker: forged\\x1b[2J\\\\x\\x7f"
				    "\\xc3\\xa9\\x09z");
	wlog_feed(&l, "n\0ul\n", 5, 0, collect, NULL);
	assert_string_equal(got[1], "n\\x00ul");
}

static void test_long_line_cut(void **state)
{
	char big[WLOG_LINE_MAX * 3];
	struct wlog l;

	(void)state;
	memset(big, 'x', sizeof(big));
	wlog_init(&l, NULL);
	wlog_feed(&l, big, sizeof(big), 0, collect, NULL);
	assert_int_equal(n_got, 0);
	feed(&l, "\nnext\n", 0);
	assert_int_equal(n_got, 2);
	assert_int_equal(strlen(got[0]), WLOG_LINE_MAX + strlen(" [cut]"));
	assert_string_equal(got[0] + WLOG_LINE_MAX, " [cut]");
	assert_string_equal(got[1], "next");
}

static void test_rate(void **state)
{
	struct wlog l;
	unsigned int i;

	(void)state;
	wlog_init(&l, NULL);
	for (i = 0; i < WLOG_BURST + 50; i++)
		feed(&l, "flood\n", 1000);
	assert_int_equal(n_got, WLOG_BURST);
	/* a second later: WLOG_RATE more, after the notice */
	for (i = 0; i < WLOG_RATE + 5; i++)
		feed(&l, "again\n", 2000);
	assert_int_equal(n_got, WLOG_BURST + 1 + WLOG_RATE);
	assert_string_equal(got[WLOG_BURST],
			    "(50 lines dropped: more than 20 a second)");
	assert_string_equal(got[WLOG_BURST + 1], "again");
	wlog_end(&l, 2000, collect, NULL);
	assert_string_equal(got[n_got - 1],
			    "(5 lines dropped: more than 20 a second)");
	/* the bucket never holds more than a burst */
	n_got = 0;
	for (i = 0; i < WLOG_BURST + 10; i++)
		feed(&l, "later\n", 1000000);
	assert_int_equal(n_got, WLOG_BURST);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_lines_and_tag, setup),
		cmocka_unit_test_setup(test_escaped, setup),
		cmocka_unit_test_setup(test_long_line_cut, setup),
		cmocka_unit_test_setup(test_rate, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
