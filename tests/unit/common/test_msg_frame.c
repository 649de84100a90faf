// SPDX-License-Identifier: MIT
/*
 * The shared SEQPACKET framing (common/msg_frame.c): a decoder's reason
 * quotes peer bytes and is logged by root, so it is always one line of
 * printable ASCII, whichever protocol refused the message; the receive
 * helper refuses, by name, what the table's fd, sender, root and phase
 * columns do not allow, and hands over or closes the fds that came.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/broker_proto.h"
#include "common/msg_frame.h"
#include "common/mux_proto.h"
#include "common/worker_proto.h"

static void assert_one_printable_line(const char *err)
{
	for (const char *c = err; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e)
			fail_msg("byte 0x%02x at %zu in '%s'",
				 (unsigned char)*c, (size_t)(c - err), err);
}

static void test_fail_replaces_control_and_high_bytes(void **state)
{
	struct reason why;

	assert_int_equal(
		msg_fail(&why, -EINVAL, "name '%s'", "a\nb\x1b[31m\xc2\x85z"),
		-EINVAL);
	assert_string_equal(why.msg, "name 'a?b?[31m??z'");
	assert_int_equal(msg_fail(NULL, -EBADMSG, "no reason kept"), -EBADMSG);
}

/* The datagram a sender puts on the wire: header, then len payload bytes. */
static size_t wire(uint8_t *out, const struct msg_header *h, const void *pl)
{
	memcpy(out, h, sizeof(*h));
	memcpy(out + sizeof(*h), pl, h->len);
	return sizeof(*h) + h->len;
}

/* The fuzzer's first finds: a newline in a STATS vm name and a PORT_ADD
 * device name came back verbatim in the error the broker logs. */
static void test_decoders_quote_hostile_names_on_one_line(void **state)
{
	uint8_t buf[1024];
	struct bp_msg b, bout;
	struct mp_msg m, mout;
	struct reason why;
	size_t len;

	assert_true(bp_init(&b, BP_STATS) > 0);
	memcpy(b.u.stats.vm, "vm\nbroker: forged line", 22);
	len = wire(buf, &b.h, &b.u);
	assert_int_not_equal(bp_decode(buf, len, &bout, &why), 0);
	assert_non_null(strstr(why.msg, "vm?broker: forged line"));
	assert_one_printable_line(why.msg);

	assert_true(mp_init(&m, MP_PORT_ADD) > 0);
	memcpy(m.u.port_add.device, "rxe0\x1b]0;x\a", 10);
	m.u.port_add.port = 1;
	len = wire(buf, &m.h, &m.u);
	assert_int_not_equal(mp_decode(buf, len, MP_FROM_BROKER, &mout, &why),
			     0);
	assert_non_null(strstr(why.msg, "rxe0?]0;x?"));
	assert_one_printable_line(why.msg);
}

/* The mux's control end as the receive helper sees it: the broker (root)
 * sends requests, HELLO first. */
static struct msg_conn mux_control(void)
{
	return (struct msg_conn){ .p = &mp_protocol,
				  .from_mask = 1u << MP_FROM_BROKER };
}

static int feed(struct msg_conn *c, uint32_t type, unsigned int nfds,
		struct reason *why)
{
	uint8_t buf[1024];
	struct mp_msg m, out;

	assert_true(mp_init(&m, type) > 0);
	if (type == MP_WORKER_ATTACH) {
		m.u.attach.worker_id = 1;
		strcpy(m.u.attach.vm, "vm1");
	}
	if (type == MP_PORT_ADD) {
		strcpy(m.u.port_add.device, "rxe0");
		m.u.port_add.port = 1;
	}
	return msg_conn_decode(c, buf, wire(buf, &m.h, &m.u), nfds, &out, why);
}

static void test_conn_refuses_a_wrong_fd_count_by_name(void **state)
{
	struct msg_conn c = mux_control();
	struct reason why;

	assert_int_equal(feed(&c, MP_HELLO, 0, &why), 0);
	assert_int_equal(feed(&c, MP_WORKER_ATTACH, 0, &why), -EBADMSG);
	assert_string_equal(why.msg, "WORKER_ATTACH: 0 fds, it carries 1");
	assert_int_equal(feed(&c, MP_PORT_ADD, 1, &why), -EBADMSG);
	assert_string_equal(why.msg, "PORT_ADD: 1 fds, it carries 0");
	assert_int_equal(feed(&c, MP_WORKER_ATTACH, 2, &why), -EBADMSG);
	assert_int_equal(feed(&c, MP_WORKER_ATTACH, 1, &why), 0);
}

static void test_conn_refuses_a_message_before_hello(void **state)
{
	struct msg_conn c = mux_control();
	struct reason why;

	assert_int_equal(feed(&c, MP_PORT_ADD, 0, &why), -EPROTO);
	assert_string_equal(why.msg, "PORT_ADD before HELLO");
	assert_false(c.started);
	assert_int_equal(feed(&c, MP_HELLO, 0, &why), 0);
	assert_true(c.started);
	assert_int_equal(feed(&c, MP_PORT_ADD, 0, &why), 0);
}

static void test_conn_refuses_a_second_hello(void **state)
{
	struct msg_conn c = mux_control();
	struct reason why;

	assert_int_equal(feed(&c, MP_HELLO, 0, &why), 0);
	assert_int_equal(feed(&c, MP_HELLO, 0, &why), -EPROTO);
	assert_string_equal(why.msg, "a second HELLO");
	/* a HELLO refused above the protocol: the next must be one again */
	msg_conn_restart(&c);
	assert_int_equal(feed(&c, MP_PORT_ADD, 0, &why), -EPROTO);
	assert_int_equal(feed(&c, MP_HELLO, 0, &why), 0);
}

static void test_conn_refuses_an_unknown_type(void **state)
{
	struct msg_conn c = mux_control();
	struct msg_header h = { RDMAGATE_MUX_VERSION, 99, 0 };
	struct reason why;
	struct mp_msg out;

	assert_int_equal(msg_conn_decode(&c, &h, sizeof(h), 0, &out, &why),
			 -EOPNOTSUPP);
	assert_string_equal(why.msg, "unknown message type 99");
}

static void test_conn_checks_the_sender(void **state)
{
	struct msg_conn c = mux_control();
	struct msg_conn ctl = { .p = &bp_protocol,
				.from_mask = (1u << BP_FROM_CALLER) |
					     (1u << BP_FROM_ROOT),
				.uid = 1000 };
	uint8_t buf[64];
	struct bp_msg b, bout;
	struct reason why;

	/* a reply type is the mux's to send, not the broker's */
	assert_int_equal(feed(&c, MP_HELLO, 0, &why), 0);
	assert_int_equal(feed(&c, MP_GID_ADD_REPLY, 0, &why), -EOPNOTSUPP);
	assert_string_equal(why.msg, "GID_ADD_REPLY: sent by the mux");
	/* RELOAD is root's: the peer's uid (SO_PEERCRED) decides */
	bp_init(&b, BP_HELLO);
	assert_int_equal(msg_conn_decode(&ctl, buf, wire(buf, &b.h, &b.u), 0,
					 &bout, &why),
			 0);
	bp_init(&b, BP_RELOAD);
	assert_int_equal(msg_conn_decode(&ctl, buf, wire(buf, &b.h, &b.u), 0,
					 &bout, &why),
			 -EPERM);
	assert_string_equal(why.msg, "RELOAD: not allowed for uid 1000");
	ctl.uid = 0;
	assert_int_equal(msg_conn_decode(&ctl, buf, wire(buf, &b.h, &b.u), 0,
					 &bout, &why),
			 0);
}

/* A SEQPACKET pair whose sv[0] end is the broker's view of a worker. */
static void open_worker_side(struct msg_conn *c, int sv[2])
{
	struct reason why;

	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	assert_int_equal(msg_conn_open(c, &wp_protocol, sv[0],
				       1u << WP_FROM_WORKER, &why),
			 0);
}

/* Over a real socket: the fd a MUX_CHANNEL carries arrives, one that a
 * HELLO should not carry is refused and closed. */
static void test_conn_recv_hands_over_or_closes_fds(void **state)
{
	struct msg_conn c;
	struct reason why;
	struct wp_msg m, out;
	int sv[2], fd = -2;

	open_worker_side(&c, sv);
	assert_int_equal(c.uid, (uint32_t)getuid());
	wp_init(&m, WP_HELLO);
	m.u.hello.pid = 1;
	strcpy(m.u.hello.vm, "vm1");
	assert_int_equal(wp_send_fd(sv[1], &m, sv[1]), 0);
	assert_int_equal(msg_conn_recv(&c, sv[0], &out, &fd, 0, &why),
			 -EBADMSG);
	assert_string_equal(why.msg, "HELLO: 1 fds, it carries 0");
	assert_int_equal(fd, -2); /* untouched on failure */
	assert_int_equal(wp_send(sv[1], &m), 0);
	assert_int_equal(msg_conn_recv(&c, sv[0], &out, &fd, 0, &why), 1);
	assert_int_equal(fd, -1);
	assert_int_equal(out.u.hello.pid, 1);

	/* the broker's side: MUX_CHANNEL with its fd */
	assert_int_equal(msg_conn_open(&c, &wp_protocol, sv[1],
				       1u << WP_FROM_BROKER, &why),
			 getuid() ? -EPERM : 0);
	if (getuid() == 0) {
		wp_init(&m, WP_MUX_CHANNEL);
		assert_int_equal(wp_send_fd(sv[0], &m, sv[0]), 0);
		assert_int_equal(msg_conn_recv(&c, sv[1], &out, &fd, 0, &why),
				 1);
		assert_true(fd >= 0);
		assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
		close(fd);
	}
	assert_int_equal(
		msg_conn_recv(&c, sv[0], &out, &fd, MSG_DONTWAIT, &why), 0);
	close(sv[1]);
	assert_int_equal(msg_conn_recv(&c, sv[0], &out, &fd, 0, &why), -EPIPE);
	assert_string_equal(why.msg, "connection closed");
	close(sv[0]);
}

/*
 * A zero-length datagram is a malformed message, not the end of the
 * connection: recv() returns 0 for both, and only a peer that shut down
 * (or closed) ends it.  A hostile worker must not be able to make the
 * broker close its channel for good with one empty send().
 */
static void test_conn_recv_refuses_an_empty_datagram(void **state)
{
	struct msg_conn c;
	struct reason why;
	struct wp_msg m, out;
	int sv[2], fd = -2;

	open_worker_side(&c, sv);
	assert_int_equal(send(sv[1], "", 0, 0), 0);
	assert_int_equal(msg_conn_recv(&c, sv[0], &out, &fd, 0, &why),
			 -EBADMSG);
	assert_string_equal(why.msg, "an empty message");
	assert_int_equal(fd, -2);
	/* the connection still works */
	wp_init(&m, WP_HELLO);
	m.u.hello.pid = 1;
	strcpy(m.u.hello.vm, "vm1");
	assert_int_equal(wp_send(sv[1], &m), 0);
	assert_int_equal(msg_conn_recv(&c, sv[0], &out, &fd, 0, &why), 1);
	assert_int_equal(out.u.hello.pid, 1);
	/* an empty datagram, then one more message, then the peer shuts
	 * down: the empty one is refused, the next one read, then EOF */
	assert_int_equal(send(sv[1], "", 0, 0), 0);
	wp_init(&m, WP_STATS_REPLY);
	assert_int_equal(wp_send(sv[1], &m), 0);
	assert_int_equal(shutdown(sv[1], SHUT_WR), 0);
	assert_int_equal(msg_conn_recv(&c, sv[0], &out, &fd, 0, &why),
			 -EBADMSG);
	assert_int_equal(msg_conn_recv(&c, sv[0], &out, &fd, 0, &why), 1);
	assert_int_equal(out.h.type, WP_STATS_REPLY);
	assert_int_equal(msg_conn_recv(&c, sv[0], &out, &fd, 0, &why), -EPIPE);
	assert_string_equal(why.msg, "connection closed");
	close(sv[1]);
	close(sv[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fail_replaces_control_and_high_bytes),
		cmocka_unit_test(test_decoders_quote_hostile_names_on_one_line),
		cmocka_unit_test(test_conn_refuses_a_wrong_fd_count_by_name),
		cmocka_unit_test(test_conn_refuses_a_message_before_hello),
		cmocka_unit_test(test_conn_refuses_a_second_hello),
		cmocka_unit_test(test_conn_refuses_an_unknown_type),
		cmocka_unit_test(test_conn_checks_the_sender),
		cmocka_unit_test(test_conn_recv_hands_over_or_closes_fds),
		cmocka_unit_test(test_conn_recv_refuses_an_empty_datagram),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
