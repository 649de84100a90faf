// SPDX-License-Identifier: MIT
/*
 * Unit tests of what the guest simulator's tools share (tool_common.c):
 * rdma-core's "LID:QPN:PSN:GID" exchange message, byte for byte, its
 * parser's refusals, and the options common to the pingpongs and perf.
 */
#include <errno.h>
#include <getopt.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/cleanup.h"
#include "guest/opts.h"
#include "guest/tools.h"

static const char wire_msg[] =
	"0000:00001a:abcdef:00000000000000000000ffff0a630001";

static void dest_formats_like_rdma_core(void **state)
{
	struct gv_tool_dest d = { .lid = 0,
				  .qpn = 0x1a,
				  .psn = 0xabcdef,
				  .gid = { [10] = 0xff,
					   [11] = 0xff,
					   [12] = 10,
					   [13] = 99,
					   [15] = 1 } };
	char msg[GV_TOOL_MSG_LEN];

	(void)state;
	assert_int_equal(GV_TOOL_MSG_LEN, 52); /* what ibv_rc_pingpong sends */
	memset(msg, 'x', sizeof(msg));
	gv_tool_format_dest(&d, msg);
	assert_memory_equal(msg, wire_msg, sizeof(wire_msg));
}

static void dest_parses_and_round_trips(void **state)
{
	struct gv_tool_dest d,
		e = { .lid = 0xffff, .qpn = 0xffffff, .psn = 0x123456 };
	char msg[GV_TOOL_MSG_LEN];

	(void)state;
	assert_int_equal(gv_tool_parse_dest(wire_msg, &d), 0);
	assert_int_equal(d.lid, 0);
	assert_int_equal(d.qpn, 0x1a);
	assert_int_equal(d.psn, 0xabcdef);
	assert_int_equal(d.gid[10], 0xff);
	assert_int_equal(d.gid[15], 1);
	for (int i = 0; i < 16; i++)
		e.gid[i] = (uint8_t)(0xf0 + i);
	gv_tool_format_dest(&e, msg);
	assert_int_equal(gv_tool_parse_dest(msg, &d), 0);
	assert_memory_equal(&d, &e, sizeof(d));
}

static void dest_refuses_bad_messages(void **state)
{
	struct gv_tool_dest d;
	char msg[GV_TOOL_MSG_LEN];

	(void)state;
	/* a GID of 31 hex digits */
	assert_int_equal(gv_tool_parse_dest("0000:00001a:abcdef:"
					    "0000000000000000000ffff0a630001",
					    &d),
			 -EINVAL);
	/* a non-hex digit in the GID */
	memcpy(msg, wire_msg, sizeof(msg));
	msg[40] = 'g';
	assert_int_equal(gv_tool_parse_dest(msg, &d), -EINVAL);
	/* fields missing */
	memset(msg, 0, sizeof(msg));
	memcpy(msg, "0000:00001a", 11);
	assert_int_equal(gv_tool_parse_dest(msg, &d), -EINVAL);
	/* not NUL-terminated: only GV_TOOL_MSG_LEN bytes are read */
	memset(msg, '1', sizeof(msg));
	assert_int_equal(gv_tool_parse_dest(msg, &d), -EINVAL);
}

static int parse_cli(struct gv_tool_cli *c, int argc, char **argv)
{
	static const struct option none[] = { { 0 } };
	struct option lo[ARRAY_SIZE(none) + GC_COUNT];
	int opt, li, r;

	assert_int_equal(opt_num_longopts(lo, ARRAY_SIZE(lo), none,
					  guest_cli_nums, GC_COUNT),
			 0);
	optind = 0; /* reinitialise getopt between the cases */
	while ((opt = getopt_long(argc, argv, "p:n:g:ex", lo, &li)) != -1) {
		r = guest_opt_num(NULL, 0, NULL, c, opt, lo, li, optarg);
		if (!r)
			r = gv_tool_cli_opt(c, opt);
		if (r <= 0)
			return r ? r : opt;
	}
	return gv_tool_cli_host(c, argc, argv);
}

static void cli_options(void **state)
{
	char *good[] = { "t",  "-p", "7000", "-n",   "5",
			 "-g", "3",  "-e",   "host", NULL };
	char *port[] = { "t", "-p", "65536", NULL };
	char *two[] = { "t", "a", "b", NULL };
	char *zero[] = { "t", "-n", "0", NULL };
	char *gidx[] = { "t", "-g", "512", NULL };
	char *other[] = { "t", "-x", NULL };
	struct gv_tool_cli c = { .iters = 1 };

	(void)state;
	assert_int_equal(parse_cli(&c, 9, good), 0);
	assert_int_equal(c.port, 7000);
	assert_int_equal(c.iters, 5);
	assert_int_equal(c.gidx, 3);
	assert_true(c.events);
	assert_string_equal(c.server, "host");
	c = (struct gv_tool_cli){ .iters = 1 };
	assert_int_equal(parse_cli(&c, 3, port), -EINVAL);
	assert_int_equal(parse_cli(&c, 3, two), -EINVAL);
	assert_int_equal(parse_cli(&c, 3, zero), -EINVAL);
	c.iters = 1;
	assert_int_equal(parse_cli(&c, 3, gidx), -EINVAL);
	c.gidx = 0;
	/* not one of the shared options: left to the tool */
	assert_int_equal(parse_cli(&c, 2, other), 'x');
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(dest_formats_like_rdma_core),
		cmocka_unit_test(dest_parses_and_round_trips),
		cmocka_unit_test(dest_refuses_bad_messages),
		cmocka_unit_test(cli_options),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
