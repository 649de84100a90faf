// SPDX-License-Identifier: MIT
/*
 * The mux protocol's decoder (common/mux_proto.c): every message of the
 * table round-trips, and every malformed case is refused by name with the
 * right errno and message, leaving the output untouched.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/cleanup.h"
#include "common/mux_proto.h"
#include "common/probes.h"

/* The wire form of m: header then payload, as mp_send() writes it. */
static size_t wire(const struct mp_msg *m, uint8_t *buf)
{
	memcpy(buf, &m->h, sizeof(m->h));
	memcpy(buf + sizeof(m->h), &m->u, m->h.len);
	return sizeof(m->h) + m->h.len;
}

static const uint8_t gid_a[16] = { 0xfd, 0x99, [15] = 0x10 };

static void good_gid_add(struct mp_msg *m)
{
	mp_init(m, MP_GID_ADD);
	m->u.gid_add.worker_id = 7;
	msg_set_str(m->u.gid_add.device, MP_DEVICE_SIZE, "rxe0");
	m->u.gid_add.port = 1;
	memcpy(m->u.gid_add.gid, gid_a, 16);
	m->u.gid_add.host_gid_index = 3;
}

static void good_mad_send(struct mp_msg *m)
{
	mp_init(m, MP_MAD_SEND);
	memcpy(m->u.mad_send.sgid, gid_a, 16);
	memcpy(m->u.mad_send.dgid, gid_a, 16);
	m->u.mad_send.dgid[15] = 0x11;
	m->u.mad_send.flow_label = 0xfffff;
	m->u.mad_send.remote_qpn = 1;
	m->u.mad_send.remote_qkey = 0x80010000u;
	m->u.mad_send.mad_len = 256;
	memset(m->u.mad_send.mad, 0x5a, 256);
}

static void good_attach(struct mp_msg *m)
{
	mp_init(m, MP_WORKER_ATTACH);
	m->u.attach.worker_id = 1;
	msg_set_str(m->u.attach.vm, MP_VM_SIZE, "vm-a");
}

/* A malformed case: start from a good message, break it, decode. */
struct bad_case {
	const char *name;
	void (*base)(struct mp_msg *m);
	enum mp_from from;
	void (*mutate)(uint8_t *buf, size_t *len);
	int err;
	const char *msg; /* a substring of the error text */
};

#define HDR   sizeof(struct mp_header)
#define GA(b) ((struct mp_gid_add *)((b) + HDR))
#define MS(b) ((struct mp_mad_send *)((b) + HDR))
#define AT(b) ((struct mp_worker_attach *)((b) + HDR))
#define PUT32(b, o, v)                                                         \
	do {                                                                   \
		uint32_t v_ = (v);                                             \
		memcpy((b) + (o), &v_, 4);                                     \
	} while (0)

static void m_short(uint8_t *b, size_t *len)
{
	*len = 11;
}
static void m_empty(uint8_t *b, size_t *len)
{
	*len = 0;
}
static void m_long(uint8_t *b, size_t *len)
{
	*len = MP_MSG_MAX + 1;
}
static void m_version(uint8_t *b, size_t *len)
{
	PUT32(b, 0, 2);
}
static void m_version0(uint8_t *b, size_t *len)
{
	PUT32(b, 0, 0);
}
static void m_type(uint8_t *b, size_t *len)
{
	PUT32(b, 4, 16);
}
static void m_type_huge(uint8_t *b, size_t *len)
{
	PUT32(b, 4, 0xffffffffu);
}
static void m_len_vs_datagram(uint8_t *b, size_t *len)
{
	*len -= 1;
}
static void m_len_field(uint8_t *b, size_t *len)
{
	PUT32(b, 8, sizeof(struct mp_gid_add) + 4);
	*len += 4;
}
static void m_truncated_payload(uint8_t *b, size_t *len)
{
	PUT32(b, 8, 20);
	*len = HDR + 20;
}
static void m_reply_from_broker(uint8_t *b, size_t *len)
{
	PUT32(b, 4, MP_GID_ADD_REPLY);
	PUT32(b, 8, sizeof(struct mp_status));
	memset(b + HDR, 0, sizeof(struct mp_status));
	*len = HDR + sizeof(struct mp_status);
}
static void m_mad_send_from_broker(uint8_t *b, size_t *len)
{
	PUT32(b, 4, MP_MAD_SEND);
	PUT32(b, 8, sizeof(struct mp_mad_send));
	*len = HDR + sizeof(struct mp_mad_send);
}
static void m_worker_zero(uint8_t *b, size_t *len)
{
	GA(b)->worker_id = 0;
}
static void m_device_unterminated(uint8_t *b, size_t *len)
{
	memset(GA(b)->device, 'x', MP_DEVICE_SIZE);
}
static void m_device_junk(uint8_t *b, size_t *len)
{
	GA(b)->device[MP_DEVICE_SIZE - 1] = 'x';
}
static void m_device_empty(uint8_t *b, size_t *len)
{
	memset(GA(b)->device, 0, MP_DEVICE_SIZE);
}
static void m_device_slash(uint8_t *b, size_t *len)
{
	msg_set_str(GA(b)->device, MP_DEVICE_SIZE, "../rxe0");
}
static void m_device_leading_dash(uint8_t *b, size_t *len)
{
	msg_set_str(GA(b)->device, MP_DEVICE_SIZE, "-rxe0");
}
static void m_port0(uint8_t *b, size_t *len)
{
	GA(b)->port = 0;
}
static void m_port256(uint8_t *b, size_t *len)
{
	GA(b)->port = 256;
}
static void m_gid_zero(uint8_t *b, size_t *len)
{
	memset(GA(b)->gid, 0, 16);
}
static void m_gid_index(uint8_t *b, size_t *len)
{
	GA(b)->host_gid_index = 256;
}
static void m_vm_unterminated(uint8_t *b, size_t *len)
{
	memset(AT(b)->vm, 'a', MP_VM_SIZE);
}
static void m_vm_bad(uint8_t *b, size_t *len)
{
	msg_set_str(AT(b)->vm, MP_VM_SIZE, "vm a");
}
static void m_vm_empty(uint8_t *b, size_t *len)
{
	memset(AT(b)->vm, 0, MP_VM_SIZE);
}
static void m_attach_worker_zero(uint8_t *b, size_t *len)
{
	AT(b)->worker_id = 0;
}
static void m_mad_len_short(uint8_t *b, size_t *len)
{
	MS(b)->mad_len = 23;
}
static void m_mad_len_long(uint8_t *b, size_t *len)
{
	MS(b)->mad_len = 257;
}
static void m_mad_len_huge(uint8_t *b, size_t *len)
{
	MS(b)->mad_len = 0xffffffffu;
}
static void m_mad_junk(uint8_t *b, size_t *len)
{
	MS(b)->mad_len = 100;
}
static void m_flow_label(uint8_t *b, size_t *len)
{
	MS(b)->flow_label = 0x100000;
}
static void m_qpn(uint8_t *b, size_t *len)
{
	MS(b)->remote_qpn = 0x1000000;
}
static void m_recv_from_worker(uint8_t *b, size_t *len)
{
	PUT32(b, 4, MP_MAD_RECV);
	PUT32(b, 8, sizeof(struct mp_mad_recv));
	*len = HDR + sizeof(struct mp_mad_recv);
}
static void m_control_from_worker(uint8_t *b, size_t *len)
{
	PUT32(b, 4, MP_GID_DEL);
	PUT32(b, 8, sizeof(struct mp_gid_del));
	*len = HDR + sizeof(struct mp_gid_del);
}

#define B MP_FROM_BROKER
#define W MP_FROM_WORKER
static const struct bad_case bad[] = {
	{ "short_message", good_gid_add, B, m_short, -EBADMSG,
	  "short message: 11 bytes" },
	{ "empty_message", good_gid_add, B, m_empty, -EBADMSG,
	  "short message: 0 bytes" },
	{ "long_message", good_gid_add, B, m_long, -EMSGSIZE, "long message" },
	{ "bad_version", good_gid_add, B, m_version, -EPROTONOSUPPORT,
	  "protocol version 2" },
	{ "version_zero", good_gid_add, B, m_version0, -EPROTONOSUPPORT,
	  "protocol version 0" },
	{ "unknown_type", good_gid_add, B, m_type, -EOPNOTSUPP,
	  "unknown message type 16" },
	{ "unknown_type_huge", good_gid_add, B, m_type_huge, -EOPNOTSUPP,
	  "unknown message type 4294967295" },
	{ "len_disagrees_with_datagram", good_gid_add, B, m_len_vs_datagram,
	  -EBADMSG, "header says 92 payload bytes, the message has 91" },
	{ "payload_too_long_for_type", good_gid_add, B, m_len_field, -EBADMSG,
	  "GID_ADD: payload of 96 bytes, it has 92" },
	{ "payload_too_short_for_type", good_gid_add, B, m_truncated_payload,
	  -EBADMSG, "GID_ADD: payload of 20 bytes, it has 92" },
	{ "reply_sent_by_broker", good_gid_add, B, m_reply_from_broker,
	  -EOPNOTSUPP, "GID_ADD_REPLY: sent by the mux, not by the broker" },
	{ "mad_send_on_control_socket", good_gid_add, B, m_mad_send_from_broker,
	  -EOPNOTSUPP, "MAD_SEND: sent by a worker, not by the broker" },
	{ "gid_add_worker_zero", good_gid_add, B, m_worker_zero, -EINVAL,
	  "worker id 0: reserved" },
	{ "device_unterminated", good_gid_add, B, m_device_unterminated,
	  -EINVAL, "device: not NUL-terminated" },
	{ "device_junk_after_nul", good_gid_add, B, m_device_junk, -EINVAL,
	  "device: not NUL-terminated and NUL-padded" },
	{ "device_empty", good_gid_add, B, m_device_empty, -EINVAL,
	  "device '': not a device name" },
	{ "device_with_slash", good_gid_add, B, m_device_slash, -EINVAL,
	  "device '../rxe0'" },
	{ "device_leading_dash", good_gid_add, B, m_device_leading_dash,
	  -EINVAL, "device '-rxe0'" },
	{ "port_zero", good_gid_add, B, m_port0, -EINVAL,
	  "port 0: not 1..255" },
	{ "port_256", good_gid_add, B, m_port256, -EINVAL,
	  "port 256: not 1..255" },
	{ "gid_all_zero", good_gid_add, B, m_gid_zero, -EINVAL,
	  "gid: all zero" },
	{ "gid_index_256", good_gid_add, B, m_gid_index, -EINVAL,
	  "host gid index 256: not 0..255" },
	{ "attach_vm_unterminated", good_attach, B, m_vm_unterminated, -EINVAL,
	  "vm name: not NUL-terminated" },
	{ "attach_vm_with_space", good_attach, B, m_vm_bad, -EINVAL,
	  "vm name 'vm a'" },
	{ "attach_vm_empty", good_attach, B, m_vm_empty, -EINVAL,
	  "vm name '': not 1..64" },
	{ "attach_worker_zero", good_attach, B, m_attach_worker_zero, -EINVAL,
	  "worker id 0" },
	{ "mad_len_below_header", good_mad_send, W, m_mad_len_short, -EINVAL,
	  "mad length 23: not 24..256" },
	{ "mad_len_above_256", good_mad_send, W, m_mad_len_long, -EINVAL,
	  "mad length 257: not 24..256" },
	{ "mad_len_huge", good_mad_send, W, m_mad_len_huge, -EINVAL,
	  "mad length 4294967295" },
	{ "mad_bytes_past_len", good_mad_send, W, m_mad_junk, -EINVAL,
	  "mad: bytes past its length 100 are not zero" },
	{ "flow_label_21_bits", good_mad_send, W, m_flow_label, -EINVAL,
	  "flow label 0x100000: more than 20 bits" },
	{ "remote_qpn_25_bits", good_mad_send, W, m_qpn, -EINVAL,
	  "remote qpn 0x1000000: more than 24 bits" },
	{ "mad_recv_from_worker", good_mad_send, W, m_recv_from_worker,
	  -EOPNOTSUPP, "MAD_RECV: sent by the mux, not by a worker" },
	{ "control_from_worker", good_mad_send, W, m_control_from_worker,
	  -EOPNOTSUPP, "GID_DEL: sent by the broker, not by a worker" },
};

static void test_bad(void **state)
{
	const struct bad_case *c = *state;
	uint8_t buf[MP_MSG_MAX + 64] = { 0 };
	struct reason why = { "" };
	struct mp_msg m, out;
	size_t len;

	c->base(&m);
	len = wire(&m, buf);
	c->mutate(buf, &len);
	memset(&out, 0xa5, sizeof(out));
	assert_int_equal(mp_decode(buf, len, c->from, &out, &why), c->err);
	if (!strstr(why.msg, c->msg))
		fail_msg("error '%s' does not contain '%s'", why.msg, c->msg);
	for (len = 0; len < sizeof(out); len++)
		assert_int_equal(((uint8_t *)&out)[len], 0xa5);
}

static void test_good(void **state)
{
	uint8_t buf[MP_MSG_MAX];
	struct reason why = { "" };
	struct mp_msg m, out;
	size_t len;

	good_gid_add(&m);
	len = wire(&m, buf);
	assert_int_equal(len, 12 + 92);
	assert_int_equal(mp_decode(buf, len, B, &out, &why), 0);
	assert_int_equal(out.u.gid_add.worker_id, 7);
	assert_string_equal(out.u.gid_add.device, "rxe0");
	assert_memory_equal(out.u.gid_add.gid, gid_a, 16);
	assert_int_equal(out.u.gid_add.host_gid_index, 3);

	good_mad_send(&m);
	len = wire(&m, buf);
	assert_int_equal(len, 12 + 308);
	assert_int_equal(mp_decode(buf, len, W, &out, &why), 0);
	assert_memory_equal(&out.u.mad_send, &m.u.mad_send,
			    sizeof(m.u.mad_send));
	/* the shortest MAD, zero padded */
	memset(m.u.mad_send.mad + 24, 0, 256 - 24);
	m.u.mad_send.mad_len = 24;
	len = wire(&m, buf);
	assert_int_equal(mp_decode(buf, len, W, &out, &why), 0);

	good_attach(&m);
	memset(m.u.attach.vm, 'v', 64);
	len = wire(&m, buf);
	assert_int_equal(mp_decode(buf, len, B, &out, &why), 0);
	assert_int_equal(strlen(out.u.attach.vm), 64);

	/* MAD_RECV, as the worker decodes it */
	mp_init(&m, MP_MAD_RECV);
	m.u.mad_recv.mad_len = 256;
	m.u.mad_recv.src_qpn = 1;
	memset(m.u.mad_recv.mad, 1, 256);
	len = wire(&m, buf);
	assert_int_equal(mp_decode(buf, len, MP_FROM_MUX, &out, &why), 0);
	m.u.mad_recv.src_qpn = 0x1000000;
	wire(&m, buf);
	assert_int_equal(mp_decode(buf, len, MP_FROM_MUX, &out, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "source qpn"));
}

/* Every row: sizes as the table says, who sends it, requests even and
 * replies odd on the control socket. */
/* RDMACM_ATTACH: a worker's id and name rules, sent by the broker only. */
static void test_rdmacm_attach(void **state)
{
	uint8_t buf[MP_MSG_MAX];
	struct reason why = { "" };
	struct mp_msg m, out;
	size_t len;

	mp_init(&m, MP_RDMACM_ATTACH);
	m.u.rdmacm_attach.worker_id = 9;
	msg_set_str(m.u.rdmacm_attach.vm, MP_VM_SIZE, "pv-1");
	m.u.rdmacm_attach.uid = 64055;
	len = wire(&m, buf);
	assert_int_equal(len, 12 + 80);
	assert_int_equal(mp_decode(buf, len, B, &out, &why), 0);
	assert_int_equal(out.u.rdmacm_attach.worker_id, 9);
	assert_string_equal(out.u.rdmacm_attach.vm, "pv-1");
	assert_int_equal(out.u.rdmacm_attach.uid, 64055);
	assert_int_equal(mp_decode(buf, len, W, &out, &why), -EOPNOTSUPP);

	m.u.rdmacm_attach.worker_id = 0;
	wire(&m, buf);
	assert_int_equal(mp_decode(buf, len, B, &out, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "worker id 0"));

	m.u.rdmacm_attach.worker_id = 9;
	msg_set_str(m.u.rdmacm_attach.vm, MP_VM_SIZE, "-pv");
	wire(&m, buf);
	assert_int_equal(mp_decode(buf, len, B, &out, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "vm name"));

	mp_init(&m, MP_RDMACM_ATTACH_REPLY);
	len = wire(&m, buf);
	assert_int_equal(mp_decode(buf, len, MP_FROM_MUX, &out, &why), 0);
	assert_string_equal(mp_type_name(MP_RDMACM_ATTACH), "RDMACM_ATTACH");
}

static void test_table(void **state)
{
	static const uint32_t empty_ok[] = {
		MP_HELLO,
		MP_HELLO_REPLY,
		MP_PORT_ADD_REPLY,
		MP_WORKER_ATTACH_REPLY,
		MP_WORKER_DETACH_REPLY,
		MP_GID_ADD_REPLY,
		MP_GID_DEL_REPLY,
		MP_STATS_REPLY,
		MP_ERROR_REPLY,
		MP_STATS,
	};
	uint8_t buf[MP_MSG_MAX];
	struct reason why = { "" };
	struct mp_msg m, out;
	size_t i, len;

	for (i = 0; i < ARRAY_SIZE(empty_ok); i++) {
		const struct msg_type *t = mp_type_info(empty_ok[i]);

		len = mp_init(&m, empty_ok[i]);
		assert_int_equal(len, 12 + t->size);
		wire(&m, buf);
		if (mp_decode(buf, len, t->from, &out, &why) != 0)
			fail_msg("%s: %s", mp_type_name(empty_ok[i]), why.msg);
	}
	for (i = 0; i < 32; i++) {
		const struct msg_type *t = mp_type_info((uint32_t)i);

		if (!t)
			continue;
		assert_int_equal(t->type % 2 == 1, t->from == MP_FROM_MUX);
	}
	assert_int_equal(mp_type_info(MP_MAD_SEND)->from, MP_FROM_WORKER);
	assert_int_equal(mp_type_info(MP_MAD_RECV)->from, MP_FROM_MUX);
	assert_null(mp_type_info(0));
	assert_int_equal(mp_init(&m, 99), 0);
	assert_string_equal(mp_type_name(99), "unknown");
	/* empty messages that must carry something */
	len = mp_init(&m, MP_WORKER_DETACH);
	wire(&m, buf);
	assert_int_equal(mp_decode(buf, len, B, &out, &why), -EINVAL);
	len = mp_init(&m, MP_PORT_ADD);
	wire(&m, buf);
	assert_int_equal(mp_decode(buf, len, B, &out, &why), -EINVAL);
	len = mp_init(&m, MP_MAD_SEND);
	wire(&m, buf);
	assert_int_equal(mp_decode(buf, len, W, &out, &why), -EINVAL);
}

static void test_stats_reply(void **state)
{
	uint8_t buf[MP_MSG_MAX];
	struct reason why = { "" };
	struct mp_msg m, out;
	size_t len;

	len = mp_init(&m, MP_STATS_REPLY);
	m.u.stats_reply.worker_id = 3;
	m.u.stats_reply.s.routed_in = 5;
	m.u.stats_reply.s.dropped[RDMAGATE_MUX_DROP_SPOOF] = 2;
	wire(&m, buf);
	assert_int_equal(mp_decode(buf, len, MP_FROM_MUX, &out, &why), 0);
	assert_int_equal(out.u.stats_reply.s.routed_in, 5);
	assert_int_equal(out.u.stats_reply.s.dropped[RDMAGATE_MUX_DROP_SPOOF],
			 2);
	/* slot 0 is no reason */
	m.u.stats_reply.s.dropped[0] = 1;
	wire(&m, buf);
	assert_int_equal(mp_decode(buf, len, MP_FROM_MUX, &out, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "drop slot 0"));
	/* counters with a failure */
	m.u.stats_reply.s.dropped[0] = 0;
	mp_set_status(&m.u.stats_reply.st, ENOENT, "no such worker");
	wire(&m, buf);
	assert_int_equal(mp_decode(buf, len, MP_FROM_MUX, &out, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "counters with a failure"));
	/* a status that is no errno, a text without NUL */
	len = mp_init(&m, MP_ERROR_REPLY);
	m.u.status.status = -5;
	wire(&m, buf);
	assert_int_equal(mp_decode(buf, len, MP_FROM_MUX, &out, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "status -5"));
	m.u.status.status = 0;
	memset(m.u.status.text, 'x', sizeof(m.u.status.text));
	wire(&m, buf);
	assert_int_equal(mp_decode(buf, len, MP_FROM_MUX, &out, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "reply text"));
}

/* mp_send() writes what mp_decode() reads, with the fd when asked. */
static void test_send_fd(void **state)
{
	uint8_t buf[MP_MSG_MAX + 1];
	union {
		struct cmsghdr a;
		char b[CMSG_SPACE(sizeof(int))];
	} cbuf;
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct reason why = { "" };
	struct mp_msg m, out;
	int sv[2], pair[2], got = -1;
	struct cmsghdr *c;
	ssize_t n;

	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, pair), 0);
	good_attach(&m);
	assert_int_equal(mp_send(sv[0], &m, 0, pair[0]), 0);
	mh.msg_control = cbuf.b;
	mh.msg_controllen = sizeof(cbuf.b);
	n = recvmsg(sv[1], &mh, 0);
	assert_int_equal(n, 12 + sizeof(struct mp_worker_attach));
	assert_int_equal(mp_decode(buf, (size_t)n, B, &out, &why), 0);
	c = CMSG_FIRSTHDR(&mh);
	assert_non_null(c);
	assert_int_equal(c->cmsg_type, SCM_RIGHTS);
	memcpy(&got, CMSG_DATA(c), sizeof(int));
	assert_true(got >= 0);
	close(got);
	close(pair[0]);
	close(pair[1]);
	close(sv[0]);
	close(sv[1]);
	assert_true(mp_device_name_ok("mlx5_0"));
	assert_false(mp_device_name_ok(""));
}

int main(void)
{
	struct CMUnitTest t[ARRAY_SIZE(bad) + 6];
	size_t i, n = 0;

	for (i = 0; i < ARRAY_SIZE(bad); i++)
		t[n++] = (struct CMUnitTest){ bad[i].name, test_bad, NULL, NULL,
					      (void *)&bad[i] };
	t[n++] = (struct CMUnitTest)cmocka_unit_test(test_good);
	t[n++] = (struct CMUnitTest)cmocka_unit_test(test_table);
	t[n++] = (struct CMUnitTest)cmocka_unit_test(test_rdmacm_attach);
	t[n++] = (struct CMUnitTest)cmocka_unit_test(test_stats_reply);
	t[n++] = (struct CMUnitTest)cmocka_unit_test(test_send_fd);
	return _cmocka_run_group_tests("mux_proto", t, n, NULL, NULL);
}
