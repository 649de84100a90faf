// SPDX-License-Identifier: MIT
/*
 * The control protocol's decoder: every message of the table round-trips,
 * and every malformed case is refused by name with the right errno and
 * message, leaving the output untouched.
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
#include <cmocka.h>

#include "common/broker_proto.h"
#include "common/cleanup.h"

/* The wire form of m: header then payload, as bp_send() writes it. */
static size_t wire(const struct bp_msg *m, uint8_t *buf)
{
	memcpy(buf, &m->h, sizeof(m->h));
	memcpy(buf + sizeof(m->h), &m->u, m->h.len);
	return sizeof(m->h) + m->h.len;
}

static void good_spawn(struct bp_msg *m)
{
	bp_init(m, BP_SPAWN);
	bp_set_str(m->u.spawn.vm, BP_VM_SIZE, "vm-a");
	bp_set_str(m->u.spawn.socket, BP_PATH_SIZE, "/run/rdmagate/vm-a.sock");
	bp_set_str(m->u.spawn.device, BP_DEVICE_SIZE, "rxe0");
	m->u.spawn.port = 1;
}

/* A malformed case: start from a good SPAWN, break it, decode. */
struct bad_case {
	const char *name;
	void (*mutate)(struct bp_msg *m, uint8_t *buf, size_t *len);
	int err;
	const char *msg; /* a substring of the error text */
};

#define PAY(buf) ((struct bp_spawn *)((buf) + sizeof(struct bp_header)))

static void m_short(struct bp_msg *m, uint8_t *b, size_t *len)
{
	*len = 11;
}

static void m_empty(struct bp_msg *m, uint8_t *b, size_t *len)
{
	*len = 0;
}

static void m_long(struct bp_msg *m, uint8_t *b, size_t *len)
{
	*len = BP_MSG_MAX + 1;
}

static void m_version(struct bp_msg *m, uint8_t *b, size_t *len)
{
	uint32_t v = 1; /* before the socket directory and frontends */

	memcpy(b, &v, 4);
}

static void m_version0(struct bp_msg *m, uint8_t *b, size_t *len)
{
	memset(b, 0, 4);
}

static void m_type(struct bp_msg *m, uint8_t *b, size_t *len)
{
	uint32_t t = 12;

	memcpy(b + 4, &t, 4);
}

static void m_type_huge(struct bp_msg *m, uint8_t *b, size_t *len)
{
	uint32_t t = 0xffffffffu;

	memcpy(b + 4, &t, 4);
}

static void m_len_vs_datagram(struct bp_msg *m, uint8_t *b, size_t *len)
{
	*len -= 1;
}

static void m_len_field(struct bp_msg *m, uint8_t *b, size_t *len)
{
	uint32_t l = sizeof(struct bp_spawn) + 4;

	memcpy(b + 8, &l, 4);
	*len += 4;
}

static void m_truncated_payload(struct bp_msg *m, uint8_t *b, size_t *len)
{
	uint32_t l = 100;

	memcpy(b + 8, &l, 4);
	*len = sizeof(struct bp_header) + 100;
}

static void m_vm_unterminated(struct bp_msg *m, uint8_t *b, size_t *len)
{
	memset(PAY(b)->vm, 'a', BP_VM_SIZE);
}

static void m_vm_junk(struct bp_msg *m, uint8_t *b, size_t *len)
{
	PAY(b)->vm[BP_VM_SIZE - 1] = 'x';
}

static void m_vm_empty(struct bp_msg *m, uint8_t *b, size_t *len)
{
	memset(PAY(b)->vm, 0, BP_VM_SIZE);
}

static void m_vm_too_long(struct bp_msg *m, uint8_t *b, size_t *len)
{
	memset(PAY(b)->vm, 'a', 65);
	memset(PAY(b)->vm + 65, 0, BP_VM_SIZE - 65);
}

static void m_vm_slash(struct bp_msg *m, uint8_t *b, size_t *len)
{
	bp_set_str(PAY(b)->vm, BP_VM_SIZE, "../etc");
}

static void m_vm_leading_dot(struct bp_msg *m, uint8_t *b, size_t *len)
{
	bp_set_str(PAY(b)->vm, BP_VM_SIZE, ".hidden");
}

static void m_vm_leading_dash(struct bp_msg *m, uint8_t *b, size_t *len)
{
	bp_set_str(PAY(b)->vm, BP_VM_SIZE, "-rf");
}

static void m_vm_space(struct bp_msg *m, uint8_t *b, size_t *len)
{
	bp_set_str(PAY(b)->vm, BP_VM_SIZE, "vm a");
}

static void m_socket_unterminated(struct bp_msg *m, uint8_t *b, size_t *len)
{
	memset(PAY(b)->socket, '/', BP_PATH_SIZE);
}

/* relative: a file name, or nothing else */
static void m_socket_relative(struct bp_msg *m, uint8_t *b, size_t *len)
{
	bp_set_str(PAY(b)->socket, BP_PATH_SIZE, "vms/vm-a.sock");
}

static void m_socket_dot_name(struct bp_msg *m, uint8_t *b, size_t *len)
{
	bp_set_str(PAY(b)->socket, BP_PATH_SIZE, "..");
}

static void m_frontend(struct bp_msg *m, uint8_t *b, size_t *len)
{
	PAY(b)->frontend = 4;
}

static void m_spawn_pad(struct bp_msg *m, uint8_t *b, size_t *len)
{
	PAY(b)->pad = 1;
}

static void m_level_nul(struct bp_msg *m, uint8_t *b, size_t *len)
{
	/* a NUL inside: "s0:c1" then ",c2" hidden behind it */
	memcpy(PAY(b)->selinux_level, "s0:c1\0,c2", 10);
}

static void m_level_unterminated(struct bp_msg *m, uint8_t *b, size_t *len)
{
	memset(PAY(b)->selinux_level, 'c', BP_LEVEL_SIZE);
}

static void m_level_reversed(struct bp_msg *m, uint8_t *b, size_t *len)
{
	bp_set_str(PAY(b)->selinux_level, BP_LEVEL_SIZE, "s0:c456,c123");
}

static void m_level_s1(struct bp_msg *m, uint8_t *b, size_t *len)
{
	bp_set_str(PAY(b)->selinux_level, BP_LEVEL_SIZE, "s1:c1,c2");
}

static void m_socket_dotdot(struct bp_msg *m, uint8_t *b, size_t *len)
{
	bp_set_str(PAY(b)->socket, BP_PATH_SIZE, "/run/../etc/x");
}

static void m_socket_dot(struct bp_msg *m, uint8_t *b, size_t *len)
{
	bp_set_str(PAY(b)->socket, BP_PATH_SIZE, "/run/./x");
}

static void m_socket_trailing_slash(struct bp_msg *m, uint8_t *b, size_t *len)
{
	bp_set_str(PAY(b)->socket, BP_PATH_SIZE, "/run/");
}

/* a newline would inject lines into the broker's records and logs */
static void m_socket_newline(struct bp_msg *m, uint8_t *b, size_t *len)
{
	bp_set_str(PAY(b)->socket, BP_PATH_SIZE,
		   "/run/x.sock\naddr 10.0.0.1\npid 1");
}

static void m_socket_escape(struct bp_msg *m, uint8_t *b, size_t *len)
{
	bp_set_str(PAY(b)->socket, BP_PATH_SIZE, "/run/\x1b[2Jx.sock");
}

static void m_socket_del(struct bp_msg *m, uint8_t *b, size_t *len)
{
	bp_set_str(PAY(b)->socket, BP_PATH_SIZE, "/run/x\x7f.sock");
}

static void m_device_unterminated(struct bp_msg *m, uint8_t *b, size_t *len)
{
	memset(PAY(b)->device, 'x', BP_DEVICE_SIZE);
}

static void m_device_bad(struct bp_msg *m, uint8_t *b, size_t *len)
{
	bp_set_str(PAY(b)->device, BP_DEVICE_SIZE, "rxe0/../x");
}

static void m_syscall_bad(struct bp_msg *m, uint8_t *b, size_t *len)
{
	bp_set_str(PAY(b)->test_syscall, BP_SYSCALL_SIZE, "Open at");
}

static void m_syscall_unterminated(struct bp_msg *m, uint8_t *b, size_t *len)
{
	memset(PAY(b)->test_syscall, 'a', BP_SYSCALL_SIZE);
}

static void m_port(struct bp_msg *m, uint8_t *b, size_t *len)
{
	PAY(b)->port = 256;
}

static void m_flags(struct bp_msg *m, uint8_t *b, size_t *len)
{
	PAY(b)->flags = 0x80;
}

static void m_addrs_count(struct bp_msg *m, uint8_t *b, size_t *len)
{
	PAY(b)->n_addrs = BP_SPAWN_ADDRS_MAX + 1;
}

static void m_addr_past_count(struct bp_msg *m, uint8_t *b, size_t *len)
{
	PAY(b)->n_addrs = 1;
	PAY(b)->addrs[0].family = AF_INET;
	PAY(b)->addrs[3].addr[15] = 1;
}

static void m_addr_v4_tail(struct bp_msg *m, uint8_t *b, size_t *len)
{
	PAY(b)->n_addrs = 1;
	PAY(b)->addrs[0].family = AF_INET;
	PAY(b)->addrs[0].addr[4] = 7;
}

static void m_addr_family(struct bp_msg *m, uint8_t *b, size_t *len)
{
	PAY(b)->n_addrs = 2;
	PAY(b)->addrs[0].family = AF_INET6;
	PAY(b)->addrs[1].family = 99;
}

static const struct bad_case bad[] = {
	{ "short_message", m_short, -EBADMSG, "short message: 11 bytes" },
	{ "empty_message", m_empty, -EBADMSG, "short message: 0 bytes" },
	{ "long_message", m_long, -EMSGSIZE, "long message" },
	{ "bad_version", m_version, -EPROTONOSUPPORT, "protocol version 1" },
	{ "version_zero", m_version0, -EPROTONOSUPPORT, "protocol version 0" },
	{ "unknown_type", m_type, -EOPNOTSUPP, "unknown message type 12" },
	{ "unknown_type_huge", m_type_huge, -EOPNOTSUPP,
	  "unknown message type 4294967295" },
	{ "len_disagrees_with_datagram", m_len_vs_datagram, -EBADMSG,
	  "header says 488 payload bytes, the message has 487" },
	{ "payload_too_long_for_type", m_len_field, -EBADMSG,
	  "SPAWN: payload of 492 bytes, it has 488" },
	{ "payload_too_short_for_type", m_truncated_payload, -EBADMSG,
	  "SPAWN: payload of 100 bytes, it has 488" },
	{ "vm_unterminated", m_vm_unterminated, -EINVAL,
	  "vm name: not NUL-terminated" },
	{ "vm_junk_after_nul", m_vm_junk, -EINVAL,
	  "vm name: not NUL-terminated and NUL-padded" },
	{ "vm_empty", m_vm_empty, -EINVAL, "vm name '': not 1..64" },
	{ "vm_65_bytes", m_vm_too_long, -EINVAL, "not 1..64" },
	{ "vm_with_slash", m_vm_slash, -EINVAL, "vm name '../etc'" },
	{ "vm_leading_dot", m_vm_leading_dot, -EINVAL, "vm name '.hidden'" },
	{ "vm_leading_dash", m_vm_leading_dash, -EINVAL, "vm name '-rf'" },
	{ "vm_with_space", m_vm_space, -EINVAL, "vm name 'vm a'" },
	{ "socket_unterminated", m_socket_unterminated, -EINVAL,
	  "socket path: not NUL-terminated" },
	{ "socket_relative", m_socket_relative, -EINVAL,
	  "socket 'vms/vm-a.sock': not a file name nor an absolute path" },
	{ "socket_dot_name", m_socket_dot_name, -EINVAL,
	  "socket '..': not a file name" },
	{ "frontend_4", m_frontend, -EINVAL,
	  "frontend 4: not 0 (the policy's) or 1..3" },
	{ "spawn_padding", m_spawn_pad, -EINVAL, "spawn: padding is not zero" },
	{ "level_nul_inside", m_level_nul, -EINVAL,
	  "selinux level: not NUL-terminated and NUL-padded" },
	{ "level_unterminated", m_level_unterminated, -EINVAL,
	  "selinux level: not NUL-terminated" },
	{ "level_reversed", m_level_reversed, -EINVAL,
	  "selinux level 's0:c456,c123': categories not two in increasing" },
	{ "level_s1", m_level_s1, -EINVAL,
	  "selinux level 's1:c1,c2': not s0:cA,cB" },
	{ "socket_dotdot", m_socket_dotdot, -EINVAL, "socket '/run/../etc/x'" },
	{ "socket_dot", m_socket_dot, -EINVAL, "socket '/run/./x'" },
	{ "socket_trailing_slash", m_socket_trailing_slash, -EINVAL,
	  "socket '/run/'" },
	/* shown with '?' for each control character */
	{ "socket_newline", m_socket_newline, -EINVAL,
	  "socket '/run/x.sock?addr 10.0.0.1?pid 1'" },
	{ "socket_escape", m_socket_escape, -EINVAL,
	  "socket '/run/?[2Jx.sock'" },
	{ "socket_del", m_socket_del, -EINVAL, "socket '/run/x?.sock'" },
	{ "device_unterminated", m_device_unterminated, -EINVAL,
	  "device: not NUL-terminated" },
	{ "device_bad_name", m_device_bad, -EINVAL,
	  "device 'rxe0/../x': not a device name" },
	{ "test_syscall_bad_name", m_syscall_bad, -EINVAL,
	  "test syscall 'Open at'" },
	{ "test_syscall_unterminated", m_syscall_unterminated, -EINVAL,
	  "test syscall: not NUL-terminated" },
	{ "port_256", m_port, -EINVAL, "port 256" },
	{ "unknown_flags", m_flags, -EINVAL, "flags 0x80: unknown bits" },
	{ "nine_addresses", m_addrs_count, -EINVAL, "9 addresses: at most 8" },
	{ "address_past_count", m_addr_past_count, -EINVAL,
	  "address 3: past n_addrs (1) but not zero" },
	{ "ipv4_address_tail", m_addr_v4_tail, -EINVAL,
	  "address 0: AF_INET with bytes past the IPv4 address" },
	{ "address_family", m_addr_family, -EINVAL,
	  "address 1: family 99 is not AF_INET or AF_INET6" },
};

static void test_bad(void **state)
{
	const struct bad_case *c = *state;
	uint8_t buf[BP_MSG_MAX + 64] = { 0 };
	struct bp_msg m, out;
	struct reason why = { "" };
	size_t len;

	good_spawn(&m);
	len = wire(&m, buf);
	c->mutate(&m, buf, &len);
	memset(&out, 0xa5, sizeof(out));
	assert_int_equal(bp_decode(buf, len, &out, &why), c->err);
	if (!strstr(why.msg, c->msg))
		fail_msg("error '%s' does not contain '%s'", why.msg, c->msg);
	/* untouched on failure */
	for (len = 0; len < sizeof(out); len++)
		assert_int_equal(((uint8_t *)&out)[len], 0xa5);
}

static void test_good_spawn(void **state)
{
	uint8_t buf[BP_MSG_MAX];
	struct bp_msg m, out;
	struct reason why = { "" };
	size_t len;

	good_spawn(&m);
	len = wire(&m, buf);
	assert_int_equal(len, 12 + 488);
	assert_int_equal(bp_decode(buf, len, &out, &why), 0);
	assert_string_equal(out.u.spawn.vm, "vm-a");
	assert_string_equal(out.u.spawn.socket, "/run/rdmagate/vm-a.sock");
	assert_string_equal(out.u.spawn.device, "rxe0");
	assert_int_equal(out.u.spawn.port, 1);
	/* two addresses, one of each family */
	m.u.spawn.n_addrs = 2;
	m.u.spawn.addrs[0].family = AF_INET;
	memcpy(m.u.spawn.addrs[0].addr, "\x0a\x63\x00\x0a", 4);
	m.u.spawn.addrs[1].family = AF_INET6;
	memset(m.u.spawn.addrs[1].addr, 0xfd, 16);
	len = wire(&m, buf);
	assert_int_equal(bp_decode(buf, len, &out, &why), 0);
	assert_int_equal(out.u.spawn.n_addrs, 2);
	assert_memory_equal(out.u.spawn.addrs, m.u.spawn.addrs,
			    sizeof(m.u.spawn.addrs));
	/* a 64-byte name, the policy's longest, and an empty device */
	memset(m.u.spawn.vm, 'v', 64);
	m.u.spawn.device[0] = '\0';
	memset(m.u.spawn.device, 0, BP_DEVICE_SIZE);
	m.u.spawn.flags = BP_SPAWN_TEST_ECHO;
	len = wire(&m, buf);
	assert_int_equal(bp_decode(buf, len, &out, &why), 0);
	assert_int_equal(strlen(out.u.spawn.vm), 64);
	/* a file name in the broker's socket_dir, or none; a frontend */
	bp_set_str(m.u.spawn.socket, BP_PATH_SIZE, "vm-a.sock");
	m.u.spawn.frontend = BP_FRONTEND_PVRDMA;
	len = wire(&m, buf);
	assert_int_equal(bp_decode(buf, len, &out, &why), 0);
	assert_string_equal(out.u.spawn.socket, "vm-a.sock");
	assert_int_equal(out.u.spawn.frontend, BP_FRONTEND_PVRDMA);
	memset(m.u.spawn.socket, 0, BP_PATH_SIZE);
	len = wire(&m, buf);
	assert_int_equal(bp_decode(buf, len, &out, &why), 0);
}

/* The MCS level check alone (bp_mcs_level_check): what libvirt's sVirt
 * gives is accepted, each hostile form refused with its reason. */
static void test_mcs_level(void **state)
{
	static const struct {
		const char *s, *msg; /* msg NULL: accepted */
		unsigned int a, b;
	} cases[] = {
		{ "s0:c0,c1", NULL, 0, 1 },
		{ "s0:c123,c456", NULL, 123, 456 },
		{ "s0:c1022,c1023", NULL, 1022, 1023 },
		{ "s0:c5,c5", "categories not two in increasing order", 0, 0 },
		{ "s0:c456,c123", "categories not two in increasing order", 0,
		  0 },
		{ "s0:c1,c1024", "categories c0..c1023", 0, 0 },
		{ "s0:c99999999999,c1", "categories c0..c1023", 0, 0 },
		{ "s0:c01,c2", "categories c0..c1023", 0, 0 },
		{ "s0:c1,c2,c3", "not s0:cA,cB with", 0, 0 },
		{ "s0:c1.c5", "not s0:cA,cB with", 0, 0 },
		{ "s0:c1", "not s0:cA,cB with", 0, 0 },
		{ "s0:c+1,c2", "not s0:cA,cB with", 0, 0 },
		{ "s0:c-1,c2", "not s0:cA,cB with", 0, 0 },
		{ "s0:c1,c2 ", "not s0:cA,cB with", 0, 0 },
		{ "s0:c1, c2", "not s0:cA,cB with", 0, 0 },
		{ "s0:c1,c2-s0:c1.c1023", "not s0:cA,cB with", 0, 0 },
		{ "s0-s0:c0.c1023", "not s0:cA,cB (sensitivity", 0, 0 },
		{ "s1:c1,c2", "not s0:cA,cB (sensitivity", 0, 0 },
		{ "s15:c1,c2", "not s0:cA,cB (sensitivity", 0, 0 },
		{ "S0:c1,c2", "not s0:cA,cB (sensitivity", 0, 0 },
		{ "", "not s0:cA,cB (sensitivity", 0, 0 },
		{ "s0", "not s0:cA,cB (sensitivity", 0, 0 },
		{ "s0:c1,c2\n", "'s0:c1,c2?'", 0, 0 },
		{ "s0:c1\x1b[2J,c2", "'s0:c1?[2J,c2'", 0, 0 },
		{ "s0:c1,c000000000000000000000000002",
		  "000...': longer than 31 bytes", 0, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct reason why = { "" };
		unsigned int a = 9999, b = 9999;
		int ret = bp_mcs_level_check(cases[i].s, &a, &b, &why);

		if (!cases[i].msg) {
			assert_int_equal(ret, 0);
			assert_int_equal(a, cases[i].a);
			assert_int_equal(b, cases[i].b);
			continue;
		}
		assert_int_equal(ret, -EINVAL);
		if (!strstr(why.msg, cases[i].msg))
			fail_msg("'%s': '%s' does not contain '%s'", cases[i].s,
				 why.msg, cases[i].msg);
	}
}

/* A SPAWN carrying a level is decoded with it. */
static void test_spawn_level(void **state)
{
	uint8_t buf[BP_MSG_MAX] = { 0 };
	struct reason why = { "" };
	struct bp_msg m, out;
	size_t len;

	good_spawn(&m);
	bp_set_str(m.u.spawn.selinux_level, BP_LEVEL_SIZE, "s0:c123,c456");
	len = wire(&m, buf);
	assert_int_equal(bp_decode(buf, len, &out, &why), 0);
	assert_string_equal(out.u.spawn.selinux_level, "s0:c123,c456");
}

static void test_frontend_names(void **state)
{
	uint32_t f = 99;

	assert_string_equal(bp_frontend_name(BP_FRONTEND_VIRTIO_RDMA),
			    "virtio-rdma");
	assert_string_equal(bp_frontend_name(BP_FRONTEND_PVRDMA), "pvrdma");
	assert_null(bp_frontend_name(BP_FRONTEND_POLICY));
	assert_string_equal(bp_frontend_name(BP_FRONTEND_QEMU_PVRDMA),
			    "qemu-pvrdma");
	assert_null(bp_frontend_name(4));
	assert_int_equal(bp_frontend_parse("qemu-pvrdma", &f), 0);
	assert_int_equal(f, BP_FRONTEND_QEMU_PVRDMA);
	assert_int_equal(bp_frontend_parse("pvrdma", &f), 0);
	assert_int_equal(f, BP_FRONTEND_PVRDMA);
	assert_int_equal(bp_frontend_parse("virtio", &f), -EINVAL);
	assert_int_equal(bp_frontend_parse("", &f), -EINVAL);
	assert_int_equal(f, BP_FRONTEND_PVRDMA);
}

/* Every row of the table: its empty/default message decodes or is refused
 * only for its string checks. */
static void test_every_type_sizes(void **state)
{
	static const uint32_t empty_ok[] = { BP_HELLO,	     BP_LIST,
					     BP_RELOAD,	     BP_HELLO_REPLY,
					     BP_STOP_REPLY,  BP_RELOAD_REPLY,
					     BP_ERROR_REPLY, BP_LIST_REPLY,
					     BP_SPAWN_REPLY };
	uint8_t buf[BP_MSG_MAX];
	struct bp_msg m, out;
	struct reason why = { "" };
	size_t i, len;

	for (i = 0; i < ARRAY_SIZE(empty_ok); i++) {
		len = bp_init(&m, empty_ok[i]);
		assert_int_equal(len, 12 + bp_type_info(empty_ok[i])->size);
		wire(&m, buf);
		if (bp_decode(buf, len, &out, &why) != 0)
			fail_msg("%s: %s", bp_type_name(empty_ok[i]), why.msg);
	}
	/* requests even, replies odd; only the broker sends replies */
	for (i = 0; i < 32; i++) {
		const struct msg_type *t = bp_type_info((uint32_t)i);

		if (!t)
			continue;
		assert_int_equal(t->type % 2 == 1, t->from == BP_FROM_BROKER);
	}
	assert_int_equal(bp_type_info(BP_RELOAD)->from, BP_FROM_ROOT);
	assert_null(bp_type_info(0));
	assert_int_equal(bp_init(&m, 99), 0);
	/* STOP with an empty name is refused */
	len = bp_init(&m, BP_STOP);
	wire(&m, buf);
	assert_int_equal(bp_decode(buf, len, &out, &why), -EINVAL);
}

/* rdmagatectl names the counters by this table: one name a field. */
static void test_counter_names(void **state)
{
	assert_int_equal(BP_COUNTERS_N, 19);
	assert_string_equal(bp_counter_names[0], "connects");
	assert_string_equal(bp_counter_names[BP_COUNTERS_N - 1],
			    "async_events");
}

static void test_replies(void **state)
{
	uint8_t buf[BP_MSG_MAX];
	struct bp_msg m, out;
	struct reason why = { "" };
	size_t len;

	len = bp_init(&m, BP_STOP_REPLY);
	bp_set_status(&m.u.status, 3, "vm %s has no worker", "x");
	wire(&m, buf);
	assert_int_equal(bp_decode(buf, len, &out, &why), 0);
	assert_string_equal(out.u.status.text, "vm x has no worker");
	/* a negative status is not an errno */
	m.u.status.status = -1;
	wire(&m, buf);
	assert_int_equal(bp_decode(buf, len, &out, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "status -1"));
	/* a list reply's index must be below its total */
	len = bp_init(&m, BP_LIST_REPLY);
	m.u.list_reply.total = 2;
	m.u.list_reply.index = 2;
	bp_set_str(m.u.list_reply.w.vm, BP_VM_SIZE, "a");
	wire(&m, buf);
	assert_int_equal(bp_decode(buf, len, &out, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "index 2 of 2"));
	m.u.list_reply.index = 1;
	wire(&m, buf);
	assert_int_equal(bp_decode(buf, len, &out, &why), 0);
	/* a text without its NUL */
	memset(m.u.list_reply.st.text, 'x', BP_TEXT_SIZE);
	wire(&m, buf);
	assert_int_equal(bp_decode(buf, len, &out, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "reply text"));
	/* nonzero padding */
	len = bp_init(&m, BP_SPAWN_REPLY);
	m.u.spawn_reply.pad = 1;
	wire(&m, buf);
	assert_int_equal(bp_decode(buf, len, &out, &why), -EINVAL);
}

static void test_set_str(void **state)
{
	char f[8];

	assert_int_equal(bp_set_str(f, sizeof(f), "1234567"), 0);
	assert_int_equal(bp_set_str(f, sizeof(f), "12345678"), -ENAMETOOLONG);
	assert_string_equal(f, "1234567");
	assert_true(bp_vm_name_ok("a_b.c-9"));
	assert_false(bp_vm_name_ok(""));
}

int main(void)
{
	struct CMUnitTest t[ARRAY_SIZE(bad) + 8];
	size_t i, n = 0;

	for (i = 0; i < ARRAY_SIZE(bad); i++)
		t[n++] = (struct CMUnitTest){ bad[i].name, test_bad, NULL, NULL,
					      (void *)&bad[i] };
	t[n++] = (struct CMUnitTest)cmocka_unit_test(test_good_spawn);
	t[n++] = (struct CMUnitTest)cmocka_unit_test(test_every_type_sizes);
	t[n++] = (struct CMUnitTest)cmocka_unit_test(test_replies);
	t[n++] = (struct CMUnitTest)cmocka_unit_test(test_counter_names);
	t[n++] = (struct CMUnitTest)cmocka_unit_test(test_set_str);
	t[n++] = (struct CMUnitTest)cmocka_unit_test(test_frontend_names);
	t[n++] = (struct CMUnitTest)cmocka_unit_test(test_mcs_level);
	t[n++] = (struct CMUnitTest)cmocka_unit_test(test_spawn_level);
	return _cmocka_run_group_tests("broker_proto", t, n, NULL, NULL);
}
