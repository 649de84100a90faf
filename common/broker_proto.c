// SPDX-License-Identifier: MIT
/*
 * The control protocol's one table and its pure decoder (see
 * common/broker_proto.h and docs/control-protocol.md).
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "common/broker_proto.h"
#include "common/msg_frame.h"
#include "common/cleanup.h"

const char *const bp_counter_names[BP_COUNTERS_N] = {
	"connects",
	"commands",
	"command_errors",
	"sends",
	"send_errors",
	"send_bytes",
	"recvs",
	"recv_errors",
	"srq_recvs",
	"completions",
	"completion_errors",
	"cq_overflows",
	"missing_completions",
	"mads_sent",
	"mads_received",
	"mad_errors",
	"gid_adds",
	"gid_errors",
	"async_events",
};

bool bp_vm_name_ok(const char *s)
{
	return msg_name_ok(s, BP_VM_NAME_MAX);
}

bool bp_socket_name_ok(const char *s)
{
	return msg_name_ok(s, BP_PATH_SIZE - 1);
}

static const char *const frontends[] = {
	[BP_FRONTEND_VIRTIO_RDMA] = "virtio-rdma",
	[BP_FRONTEND_PVRDMA] = "pvrdma",
	[BP_FRONTEND_QEMU_PVRDMA] = "qemu-pvrdma",
};

const char *bp_frontend_name(uint32_t frontend)
{
	return frontend < ARRAY_SIZE(frontends) ? frontends[frontend] : NULL;
}

int bp_frontend_parse(const char *name, uint32_t *ret)
{
	uint32_t i;

	for (i = 0; i < ARRAY_SIZE(frontends); i++)
		if (frontends[i] && !strcmp(name, frontends[i])) {
			*ret = i;
			return 0;
		}
	return -EINVAL;
}

/* No byte a log line, a record or a terminal would read as a control:
 * the broker writes paths into its state records and logs. */
static bool ctl_char(char c)
{
	return (unsigned char)c < 0x20 || c == 0x7f;
}

static bool printable(const char *s)
{
	for (; *s; s++)
		if (ctl_char(*s))
			return false;
	return true;
}

/* Absolute, no "." or ".." component, no empty last component, no
 * control character. */
static bool path_ok(const char *s)
{
	const char *c = s;

	if (s[0] != '/' || s[strlen(s) - 1] == '/' || !printable(s))
		return false;
	while (c) {
		c++;
		if (!strncmp(c, "./", 2) || !strcmp(c, ".") ||
		    !strncmp(c, "../", 3) || !strcmp(c, ".."))
			return false;
		c = strchr(c, '/');
	}
	return true;
}

static bool syscall_name_ok(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return true;
}

/* One category after its 'c': decimal, no sign or leading zero, below
 * BP_MCS_CATEGORIES; *end is the byte after it. */
static bool mcs_category(const char *p, unsigned int *ret, const char **end)
{
	unsigned int v = 0;
	size_t i;

	if (p[0] < '0' || p[0] > '9' ||
	    (p[0] == '0' && p[1] >= '0' && p[1] <= '9'))
		return false;
	for (i = 0; p[i] >= '0' && p[i] <= '9'; i++) {
		v = v * 10 + (unsigned int)(p[i] - '0');
		if (v >= BP_MCS_CATEGORIES)
			return false;
	}
	*ret = v;
	*end = p + i;
	return true;
}

int bp_mcs_level_check(const char *s, unsigned int *a, unsigned int *b,
		       struct reason *why)
{
	char shown[BP_LEVEL_SIZE];
	size_t n = strnlen(s, BP_LEVEL_SIZE), i;
	unsigned int ca, cb;
	const char *p;

	/* the string is the caller's: quoted bounded, no control byte */
	for (i = 0; i < n && i < sizeof(shown) - 1; i++)
		shown[i] = ctl_char(s[i]) ? '?' : s[i];
	shown[i] = 0;
	if (n >= BP_LEVEL_SIZE)
		return msg_fail(why, -EINVAL,
				"selinux level '%s...': longer than %d bytes",
				shown, BP_LEVEL_SIZE - 1);
	if (strncmp(s, "s0:c", 4) != 0)
		return msg_fail(why, -EINVAL,
				"selinux level '%s': not s0:cA,cB (sensitivity "
				"s0 and two categories)",
				shown);
	if (!mcs_category(s + 4, &ca, &p) || p[0] != ',' || p[1] != 'c' ||
	    !mcs_category(p + 2, &cb, &p) || p[0])
		return msg_fail(why, -EINVAL,
				"selinux level '%s': not s0:cA,cB with "
				"categories c0..c%u in decimal",
				shown, BP_MCS_CATEGORIES - 1);
	if (ca >= cb)
		return msg_fail(why, -EINVAL,
				"selinux level '%s': categories not two in "
				"increasing order",
				shown);
	if (a)
		*a = ca;
	if (b)
		*b = cb;
	return 0;
}

#define FIELD(m, f, what)                                                      \
	do {                                                                   \
		if (msg_field_len((m).f, sizeof((m).f)) < 0)                   \
			return msg_fail(why, -EINVAL,                          \
					"%s: not NUL-terminated and "          \
					"NUL-padded",                          \
					what);                                 \
	} while (0)

static int check_vm(const char *vm, struct reason *why)
{
	if (msg_field_len(vm, BP_VM_SIZE) < 0)
		return msg_fail(why, -EINVAL,
				"vm name: not NUL-terminated and NUL-padded");
	if (!bp_vm_name_ok(vm))
		return msg_fail(
			why, -EINVAL,
			"vm name '%.64s': not 1..64 of A-Z a-z 0-9 _ . - "
			"(no leading . or -)",
			vm);
	return 0;
}

static int check_empty(const void *msg, struct reason *why)
{
	return 0;
}

static int check_addrs(const struct bp_spawn *s, struct reason *why)
{
	uint32_t i;

	if (s->n_addrs > BP_SPAWN_ADDRS_MAX)
		return msg_fail(why, -EINVAL, "%u addresses: at most %u",
				s->n_addrs, BP_SPAWN_ADDRS_MAX);
	for (i = 0; i < BP_SPAWN_ADDRS_MAX; i++) {
		const struct bp_addr *a = &s->addrs[i];

		if (i >= s->n_addrs) {
			if (!msg_all_zero(a, sizeof(*a)))
				return msg_fail(why, -EINVAL,
						"address %u: past n_addrs (%u) "
						"but not zero",
						i, s->n_addrs);
			continue;
		}
		if (a->family == AF_INET && msg_all_zero(a->addr + 4, 12))
			continue;
		if (a->family == AF_INET6)
			continue;
		if (a->family == AF_INET)
			return msg_fail(why, -EINVAL,
					"address %u: AF_INET with bytes past "
					"the IPv4 address",
					i);
		return msg_fail(why, -EINVAL,
				"address %u: family %u is not AF_INET "
				"or AF_INET6",
				i, a->family);
	}
	return 0;
}

static int check_spawn(const void *msg, struct reason *why)
{
	const struct bp_msg *m = msg;

	const struct bp_spawn *s = &m->u.spawn;
	int ret = check_vm(s->vm, why);

	if (ret < 0)
		return ret;
	FIELD(*s, socket, "socket path");
	FIELD(*s, device, "device");
	FIELD(*s, test_syscall, "test syscall");
	if (s->socket[0] && !bp_socket_name_ok(s->socket) &&
	    !path_ok(s->socket)) {
		char shown[BP_PATH_SIZE];

		/* the message is logged: no control character of the
		 * caller's reaches the log */
		for (size_t i = 0; i < sizeof(shown); i++)
			shown[i] = s->socket[i] && ctl_char(s->socket[i])
					   ? '?'
					   : s->socket[i];
		return msg_fail(
			why, -EINVAL,
			"socket '%.107s': not a file name nor an absolute "
			"path without . or .. components or control "
			"characters",
			shown);
	}
	if (s->device[0] && !msg_name_ok(s->device, BP_DEVICE_SIZE - 1))
		return msg_fail(why, -EINVAL,
				"device '%.63s': not a device name", s->device);
	if (!syscall_name_ok(s->test_syscall))
		return msg_fail(why, -EINVAL,
				"test syscall '%.31s': not a syscall name",
				s->test_syscall);
	if (s->port > 255)
		return msg_fail(why, -EINVAL,
				"port %u: not 0 (the policy's) or 1..255",
				s->port);
	if (s->frontend > BP_FRONTEND_MAX)
		return msg_fail(why, -EINVAL,
				"frontend %u: not 0 (the policy's) or 1..%u",
				s->frontend, BP_FRONTEND_MAX);
	if (s->pad)
		return msg_fail(why, -EINVAL, "spawn: padding is not zero");
	FIELD(*s, selinux_level, "selinux level");
	if (s->selinux_level[0] &&
	    bp_mcs_level_check(s->selinux_level, NULL, NULL, why) < 0)
		return -EINVAL;
	if (s->flags & ~(uint32_t)BP_SPAWN_FLAGS_ALL)
		return msg_fail(why, -EINVAL, "flags 0x%x: unknown bits",
				s->flags);
	return check_addrs(s, why);
}

static int check_stop(const void *msg, struct reason *why)
{
	const struct bp_msg *m = msg;

	return check_vm(m->u.stop.vm, why);
}

static int check_status(const struct bp_status *st, struct reason *why)
{
	if (st->status < 0 || st->status > 4095)
		return msg_fail(why, -EINVAL, "status %d: not 0 or an errno",
				st->status);
	FIELD(*st, text, "reply text");
	return 0;
}

static int check_status_reply(const void *msg, struct reason *why)
{
	const struct bp_msg *m = msg;

	return check_status(&m->u.status, why);
}

static int check_spawn_reply(const void *msg, struct reason *why)
{
	const struct bp_msg *m = msg;

	if (m->u.spawn_reply.pad)
		return msg_fail(why, -EINVAL,
				"spawn reply: padding is not zero");
	return check_status(&m->u.spawn_reply.st, why);
}

static int check_list_reply(const void *msg, struct reason *why)
{
	const struct bp_msg *m = msg;

	const struct bp_list_reply *r = &m->u.list_reply;
	int ret = check_status(&r->st, why);

	if (ret < 0)
		return ret;
	if (r->pad)
		return msg_fail(why, -EINVAL,
				"list reply: padding is not zero");
	if (r->index >= r->total && !(r->total == 0 && r->index == 0))
		return msg_fail(why, -EINVAL, "list reply: index %u of %u",
				r->index, r->total);
	if (r->total == 0)
		return 0;
	ret = check_vm(r->w.vm, why);
	if (ret < 0)
		return ret;
	FIELD(r->w, socket, "worker socket path");
	FIELD(r->w, device, "worker device");
	return 0;
}

static int check_stats(const void *msg, struct reason *why)
{
	const struct bp_msg *m = msg;

	if (msg_field_len(m->u.stats.vm, BP_VM_SIZE) < 0)
		return msg_fail(why, -EINVAL,
				"vm name: not NUL-terminated and NUL-padded");
	return m->u.stats.vm[0] ? check_vm(m->u.stats.vm, why) : 0;
}

static int check_stats_reply(const void *msg, struct reason *why)
{
	const struct bp_stats_reply *r =
		&((const struct bp_msg *)msg)->u.stats_reply;
	int ret = check_status(&r->st, why);

	if (ret < 0)
		return ret;
	if (r->pad)
		return msg_fail(why, -EINVAL,
				"stats reply: padding is not zero");
	if (r->flags & ~(uint32_t)BP_STATS_FLAGS_ALL)
		return msg_fail(why, -EINVAL,
				"stats reply: flags 0x%x: unknown bits",
				r->flags);
	if (r->index >= r->total && !(r->total == 0 && r->index == 0))
		return msg_fail(why, -EINVAL, "stats reply: index %u of %u",
				r->index, r->total);
	return r->total ? check_vm(r->vm, why) : 0;
}

/* THE table: every message the protocol has. */
static const struct msg_type rows[] = {
	{ .type = BP_HELLO,
	  .name = "HELLO",
	  .size = 0,
	  .from = BP_FROM_CALLER,
	  .check = check_empty,
	  .phase = MSG_FIRST },
	{ .type = BP_HELLO_REPLY,
	  .name = "HELLO_REPLY",
	  .size = sizeof(struct bp_hello_reply),
	  .from = BP_FROM_BROKER,
	  .check = check_status_reply },
	{ .type = BP_SPAWN,
	  .name = "SPAWN",
	  .size = sizeof(struct bp_spawn),
	  .from = BP_FROM_CALLER,
	  .check = check_spawn },
	{ .type = BP_SPAWN_REPLY,
	  .name = "SPAWN_REPLY",
	  .size = sizeof(struct bp_spawn_reply),
	  .from = BP_FROM_BROKER,
	  .check = check_spawn_reply },
	{ .type = BP_STOP,
	  .name = "STOP",
	  .size = sizeof(struct bp_stop),
	  .from = BP_FROM_CALLER,
	  .check = check_stop },
	{ .type = BP_STOP_REPLY,
	  .name = "STOP_REPLY",
	  .size = sizeof(struct bp_status),
	  .from = BP_FROM_BROKER,
	  .check = check_status_reply },
	{ .type = BP_LIST,
	  .name = "LIST",
	  .size = 0,
	  .from = BP_FROM_CALLER,
	  .check = check_empty },
	{ .type = BP_LIST_REPLY,
	  .name = "LIST_REPLY",
	  .size = sizeof(struct bp_list_reply),
	  .from = BP_FROM_BROKER,
	  .check = check_list_reply },
	{ .type = BP_RELOAD,
	  .name = "RELOAD",
	  .size = 0,
	  .from = BP_FROM_ROOT,
	  .check = check_empty },
	{ .type = BP_RELOAD_REPLY,
	  .name = "RELOAD_REPLY",
	  .size = sizeof(struct bp_status),
	  .from = BP_FROM_BROKER,
	  .check = check_status_reply },
	{ .type = BP_ERROR_REPLY,
	  .name = "ERROR_REPLY",
	  .size = sizeof(struct bp_status),
	  .from = BP_FROM_BROKER,
	  .check = check_status_reply },
	{ .type = BP_STATS,
	  .name = "STATS",
	  .size = sizeof(struct bp_stats),
	  .from = BP_FROM_CALLER,
	  .check = check_stats },
	{ .type = BP_STATS_REPLY,
	  .name = "STATS_REPLY",
	  .size = sizeof(struct bp_stats_reply),
	  .from = BP_FROM_BROKER,
	  .check = check_stats_reply },
};

const struct msg_proto bp_protocol = {
	.name = "control",
	.version = RDMAGATE_CTL_VERSION,
	.payload_offset = offsetof(struct bp_msg, u),
	.container_size = sizeof(struct bp_msg),
	.max_datagram = BP_MSG_MAX,
	.types = rows,
	.n_types = ARRAY_SIZE(rows),
	.root_from = (1u << BP_FROM_BROKER) | (1u << BP_FROM_ROOT),
};
_Static_assert(sizeof(struct bp_msg) <= MSG_CONTAINER_MAX, "bp_msg");

const struct msg_type *bp_type_info(uint32_t type)
{
	return msg_type_of(&bp_protocol, type);
}

const char *bp_type_name(uint32_t type)
{
	const struct msg_type *t = msg_type_of(&bp_protocol, type);

	return t ? t->name : "unknown";
}

int bp_decode(const void *buf, size_t len, struct bp_msg *ret,
	      struct reason *why)
{
	return msg_decode(&bp_protocol, buf, len, ret, why);
}

size_t bp_init(struct bp_msg *m, uint32_t type)
{
	return msg_init(&bp_protocol, m, type);
}

int bp_send(int fd, const struct bp_msg *m)
{
	return msg_send(&bp_protocol, fd, m, -1, 0);
}

void bp_set_status(struct bp_status *st, int status, const char *fmt, ...)
{
	va_list ap;

	st->status = status;
	va_start(ap, fmt);
	msg_vset_text(st->text, sizeof(st->text), fmt, ap);
	va_end(ap);
}

int bp_set_str(char *field, size_t size, const char *s)
{
	return msg_set_str(field, size, s);
}
