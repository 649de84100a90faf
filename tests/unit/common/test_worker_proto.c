// SPDX-License-Identifier: MIT
/*
 * The broker-worker channel's decoder (common/worker_proto.c), which the
 * broker runs on everything a worker sends: every message type round-trips,
 * every malformed case is refused by name with the right errno, the output
 * untouched; and the GID-to-address mapping.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "common/worker_proto.h"

static size_t wire(const struct wp_msg *m, uint8_t *buf)
{
	memcpy(buf, &m->h, sizeof(m->h));
	memcpy(buf + sizeof(m->h), &m->u, m->h.len);
	return sizeof(m->h) + m->h.len;
}

static const uint8_t v4gid[16] = {
	[10] = 0xff, [11] = 0xff, [12] = 10, [13] = 99, [14] = 0, [15] = 10
};
static const uint8_t v6gid[16] = { 0xfd, 0x99, [15] = 0x10 };

static void good_gid(struct wp_msg *m)
{
	wp_init(m, WP_GID_ADD);
	m->u.gid.seq = 7;
	m->u.gid.gid_type = WP_GID_ROCE_V2;
	memcpy(m->u.gid.gid, v4gid, 16);
}

/* decode must fail with err and a message containing msg; out untouched */
static void refused(const uint8_t *buf, size_t len, int err, const char *msg)
{
	struct reason why = { "" };
	struct wp_msg out;
	size_t i;

	memset(&out, 0xa5, sizeof(out));
	assert_int_equal(wp_decode(buf, len, &out, &why), err);
	if (!strstr(why.msg, msg))
		fail_msg("error '%s' does not contain '%s'", why.msg, msg);
	for (i = 0; i < sizeof(out); i++)
		assert_int_equal(((uint8_t *)&out)[i], 0xa5);
}

static void test_round_trips(void **state)
{
	uint8_t buf[WP_MSG_MAX];
	struct wp_msg m, out;
	struct reason why = { "" };

	good_gid(&m);
	assert_int_equal(wp_decode(buf, wire(&m, buf), &out, &why), 0);
	assert_memory_equal(out.u.gid.gid, v4gid, 16);
	assert_int_equal(out.u.gid.seq, 7);

	wp_init(&m, WP_HELLO);
	m.u.hello.pid = 42;
	strcpy(m.u.hello.vm, "vm-a");
	assert_int_equal(wp_decode(buf, wire(&m, buf), &out, &why), 0);
	assert_string_equal(out.u.hello.vm, "vm-a");

	wp_init(&m, WP_GID_ADD_REPLY);
	m.u.gid_reply.status = EADDRINUSE;
	strcpy(m.u.gid_reply.text, "owned");
	assert_int_equal(wp_decode(buf, wire(&m, buf), &out, &why), 0);
	assert_int_equal(out.u.gid_reply.status, EADDRINUSE);

	wp_init(&m, WP_STATS_REPLY);
	m.u.stats_reply.c.sends = 300;
	assert_int_equal(wp_decode(buf, wire(&m, buf), &out, &why), 0);
	assert_int_equal(out.u.stats_reply.c.sends, 300);
	assert_int_equal(wp_type_info(WP_STATS_REPLY)->from, WP_FROM_WORKER);
	assert_int_equal(wp_type_info(WP_STATS)->from, WP_FROM_BROKER);

	wp_init(&m, WP_MUX_CHANNEL);
	m.u.mux_channel.mux_worker_id = 3;
	assert_int_equal(wp_decode(buf, wire(&m, buf), &out, &why), 0);
	assert_int_equal(out.u.mux_channel.mux_worker_id, 3);
	assert_int_equal(wp_type_info(WP_MUX_CHANNEL)->from, WP_FROM_BROKER);

	/* version 3: the broker tells a worker a granted address went */
	wp_init(&m, WP_GID_GONE);
	m.u.gid.gid_type = WP_GID_ROCE_V2;
	memcpy(m.u.gid.gid, v6gid, 16);
	assert_int_equal(wp_decode(buf, wire(&m, buf), &out, &why), 0);
	assert_memory_equal(out.u.gid.gid, v6gid, 16);
	assert_string_equal(wp_type_name(WP_GID_GONE), "GID_GONE");
	assert_int_equal(wp_type_info(WP_GID_GONE)->from, WP_FROM_BROKER);
	assert_int_equal(wp_type_info(WP_GID_GONE)->fds, 0);
	assert_int_equal(out.h.version, 3);
	/* its GID is checked as GID_ADD's */
	memset(m.u.gid.gid, 0, 16);
	refused(buf, wire(&m, buf), -EINVAL, "unspecified");
}

static void test_framing(void **state)
{
	uint8_t buf[WP_MSG_MAX + 8] = { 0 };
	struct wp_msg m;
	size_t len;

	good_gid(&m);
	len = wire(&m, buf);
	refused(buf, 5, -EBADMSG, "short message: 5 bytes");
	refused(buf, WP_MSG_MAX + 1, -EMSGSIZE, "long message");
	refused(buf, len - 1, -EBADMSG, "header says 24 payload bytes");
	m.h.version = 9;
	refused(buf, wire(&m, buf), -EPROTONOSUPPORT, "protocol version 9");
	good_gid(&m);
	m.h.type = 3;
	refused(buf, wire(&m, buf), -EOPNOTSUPP, "unknown message type 3");
}

static void test_bad_gids(void **state)
{
	static const struct {
		uint8_t gid[16];
		const char *msg;
	} bad[] = {
		{ { 0 }, "unspecified" },
		{ { [15] = 1 }, "loopback" },
		{ { 0xff, 0x02, [15] = 1 }, "multicast" },
		{ { [12] = 10, [15] = 1 }, "IPv4-compatible" },
		{ { [10] = 0xff, [11] = 0xff, [12] = 127, [15] = 1 }, "127/8" },
		{ { [10] = 0xff, [11] = 0xff, [12] = 224, [15] = 1 },
		  "multicast" },
		{ { [10] = 0xff, [11] = 0xff, [12] = 0 }, "0/8" },
	};
	uint8_t buf[WP_MSG_MAX];
	struct wp_msg m;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		good_gid(&m);
		memcpy(m.u.gid.gid, bad[i].gid, 16);
		refused(buf, wire(&m, buf), -EINVAL, bad[i].msg);
	}
	good_gid(&m);
	m.u.gid.gid_type = 0;
	refused(buf, wire(&m, buf), -EINVAL, "GID type 0: not RoCE v1");
	good_gid(&m);
	m.h.type = WP_GID_DEL;
	memcpy(m.u.gid.gid, v6gid, 16);
	assert_int_equal(wp_decode(buf, wire(&m, buf), &m, NULL), 0);
}

static void test_bad_fields(void **state)
{
	uint8_t buf[WP_MSG_MAX];
	struct wp_msg m;

	wp_init(&m, WP_HELLO);
	strcpy(m.u.hello.vm, "../x");
	refused(buf, wire(&m, buf), -EINVAL, "hello: not a VM name");
	wp_init(&m, WP_HELLO);
	memset(m.u.hello.vm, 'v', sizeof(m.u.hello.vm));
	refused(buf, wire(&m, buf), -EINVAL, "hello: not a VM name");
	wp_init(&m, WP_HELLO);
	strcpy(m.u.hello.vm, "a");
	m.u.hello.pad = 1;
	refused(buf, wire(&m, buf), -EINVAL, "hello: padding");
	wp_init(&m, WP_GID_ADD_REPLY);
	m.u.gid_reply.status = -1;
	refused(buf, wire(&m, buf), -EINVAL, "status -1");
	wp_init(&m, WP_GID_DEL_REPLY);
	memset(m.u.gid_reply.text, 'x', sizeof(m.u.gid_reply.text));
	refused(buf, wire(&m, buf), -EINVAL, "text not NUL-terminated");
	wp_init(&m, WP_STATS);
	m.u.stats.pad = 3;
	refused(buf, wire(&m, buf), -EINVAL, "stats: padding");
	wp_init(&m, WP_STATS_REPLY);
	m.u.stats_reply.pad = 3;
	refused(buf, wire(&m, buf), -EINVAL, "stats reply: padding");
}

static void test_gid_to_addr(void **state)
{
	uint8_t a[16];

	assert_int_equal(wp_gid_to_addr(v4gid, a), AF_INET);
	assert_memory_equal(a, "\x0a\x63\x00\x0a\0\0\0\0\0\0\0\0\0\0\0\0", 16);
	assert_int_equal(wp_gid_to_addr(v6gid, a), AF_INET6);
	assert_memory_equal(a, v6gid, 16);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trips),
		cmocka_unit_test(test_framing),
		cmocka_unit_test(test_bad_gids),
		cmocka_unit_test(test_bad_fields),
		cmocka_unit_test(test_gid_to_addr),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
