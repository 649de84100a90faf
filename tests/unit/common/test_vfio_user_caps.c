// SPDX-License-Identifier: MIT
/* VERSION capabilities JSON: QEMU's and ours parse, bad JSON is refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "common/vfio_user.h"

static int parse(const char *s, struct vfio_user_caps *c, struct reason *why)
{
	return vfio_user_caps_parse(s, strlen(s) + 1, c, why);
}

static void test_qemu_caps(void **state)
{
	/* what QEMU 11.1's vfio_user_validate_version sends */
	static const char qemu[] =
		"{\"capabilities\": {\"migration\": {\"pgsize\": 4096, "
		"\"max_bitmap_size\": 268435456}, \"max_msg_fds\": 16, "
		"\"max_data_xfer_size\": 1048576, \"pgsizes\": 4096, "
		"\"max_dma_maps\": 65535, \"write_multiple\": true}}";
	struct vfio_user_caps c;
	struct reason why = { "" };

	assert_int_equal(parse(qemu, &c, &why), 0);
	assert_int_equal(c.present, 0x3f);
	assert_int_equal(c.max_msg_fds, 16);
	assert_int_equal(c.max_data_xfer_size, 1048576);
	assert_int_equal(c.pgsizes, 4096);
	assert_int_equal(c.max_dma_maps, 65535);
	assert_true(c.write_multiple);
}

static void test_round_trip(void **state)
{
	struct vfio_user_caps in = { .present = 0x2f,
				     .max_msg_fds = 8,
				     .max_data_xfer_size = 4096,
				     .pgsizes = 4096,
				     .max_dma_maps = UINT64_MAX,
				     .write_multiple = false };
	struct vfio_user_caps out;
	struct reason why;
	char buf[256];
	int n;

	n = vfio_user_caps_format(&in, buf, sizeof(buf));
	assert_true(n > 0);
	assert_int_equal((size_t)n, strlen(buf) + 1);
	assert_int_equal(vfio_user_caps_parse(buf, (size_t)n, &out, &why), 0);
	assert_true(vfio_user_caps_equal(&in, &out));
	out.max_dma_maps--;
	assert_false(vfio_user_caps_equal(&in, &out));
	/* too small a buffer, at every size */
	for (size_t i = 0; i < (size_t)n; i++)
		assert_int_equal(vfio_user_caps_format(&in, buf, i), -ENOSPC);
	/* empty */
	in.present = 0;
	n = vfio_user_caps_format(&in, buf, sizeof(buf));
	assert_string_equal(buf, "{\"capabilities\":{}}");
}

static void test_unknown_members_skipped(void **state)
{
	struct vfio_user_caps c;
	struct reason why;

	assert_int_equal(
		parse(" { \"x\" : [1, -2.5e3, \"s\\u00e9\\n\", null, true, {}],"
		      " \"capabilities\" : { \"future\" : {\"a\":[]},"
		      " \"max_msg_fds\" : 0 } } ",
		      &c, &why),
		0);
	assert_int_equal(c.present, 1);
	assert_int_equal(c.max_msg_fds, 0);
	/* a member that only looks like ours, nested elsewhere */
	assert_int_equal(parse("{\"x\":{\"max_msg_fds\":\"no\"}}", &c, &why),
			 0);
	assert_int_equal(c.present, 0);
}

static void test_bad_json(void **state)
{
	static const char *const bad[] = {
		"",
		" ",
		"[]",
		"1",
		"{",
		"}",
		"{\"a\"}",
		"{\"a\":}",
		"{\"a\":1,}",
		"{,}",
		"{\"a\":1 \"b\":2}",
		"{\"a\":[1,]}",
		"{\"a\":[1 2]}",
		"{\"a\":01}",
		"{\"a\":-}",
		"{\"a\":1.}",
		"{\"a\":1e}",
		"{\"a\":+1}",
		"{\"a\":tru}",
		"{\"a\":nul}",
		"{\"a\":\"\\q\"}",
		"{\"a\":\"\\u12g4\"}",
		"{\"a\":\"\t\"}",
		"{\"a\":\"open}",
		"{a:1}",
		"{} {}",
		"{\"a\":[[[[[[[[[[1]]]]]]]]]]}",
		"{\"capabilities\":1}",
		"{\"capabilities\":{\"max_msg_fds\":-1}}",
		"{\"capabilities\":{\"max_msg_fds\":1.0}}",
		"{\"capabilities\":{\"max_msg_fds\":1e3}}",
		"{\"capabilities\":{\"max_msg_fds\":18446744073709551616}}",
		"{\"capabilities\":{\"max_msg_fds\":null}}",
		"{\"capabilities\":{\"pgsizes\":\"4096\"}}",
		"{\"capabilities\":{\"write_multiple\":0}}",
		"{\"capabilities\":{\"migration\":[]}}",
	};
	struct vfio_user_caps c;
	struct reason why;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why.msg[0] = '\0';
		if (parse(bad[i], &c, &why) != -EINVAL)
			fail_msg("accepted '%s'", bad[i]);
		assert_true(why.msg[0] != '\0');
	}
	/* the length must end at the NUL, and the NUL must be there */
	assert_int_equal(vfio_user_caps_parse("{}", 2, &c, &why), -EINVAL);
	assert_int_equal(vfio_user_caps_parse("{}\0{}", 6, &c, &why), -EINVAL);
	assert_int_equal(vfio_user_caps_parse("", 0, &c, &why), -EINVAL);
	/* the largest uint64 is fine */
	assert_int_equal(parse("{\"capabilities\":{\"max_dma_maps\":"
			       "18446744073709551615}}",
			       &c, &why),
			 0);
	assert_true(c.max_dma_maps == UINT64_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_qemu_caps),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_unknown_members_skipped),
		cmocka_unit_test(test_bad_json),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
