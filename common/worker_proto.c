// SPDX-License-Identifier: MIT
/*
 * The broker-worker channel's one table and its pure decoder (see
 * common/worker_proto.h).  The broker runs it on everything a worker sends.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>

#include "common/broker_proto.h"
#include "common/cleanup.h"
#include "common/worker_proto.h"

static const uint8_t v4mapped[12] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
};

int wp_gid_to_addr(const uint8_t gid[16], uint8_t addr[16])
{
	memset(addr, 0, 16);
	if (!memcmp(gid, v4mapped, sizeof(v4mapped))) {
		memcpy(addr, gid + 12, 4);
		return AF_INET;
	}
	memcpy(addr, gid, 16);
	return AF_INET6;
}

/* An address a host interface may carry: not unspecified, loopback,
 * multicast or broadcast.  Returns 0 or -EINVAL with why. */
static int gid_check(const uint8_t gid[16], struct reason *why)
{
	static const uint8_t zero[16], loop6[16] = { [15] = 1 };
	uint8_t a[16];

	if (wp_gid_to_addr(gid, a) == AF_INET) {
		if (a[0] == 0 || a[0] == 127 || a[0] >= 224)
			return msg_fail(why, -EINVAL,
					"GID: an IPv4 address no interface may "
					"carry (0/8, 127/8, multicast or "
					"reserved)");
		return 0;
	}
	if (!memcmp(a, zero, 16) || !memcmp(a, loop6, 16))
		return msg_fail(why, -EINVAL,
				"GID: the unspecified or loopback address");
	if (a[0] == 0xff)
		return msg_fail(why, -EINVAL, "GID: a multicast address");
	if (!memcmp(a, zero, 10) && (a[10] | a[11]) == 0)
		return msg_fail(why, -EINVAL,
				"GID: an IPv4-compatible address (deprecated)");
	return 0;
}

static int check_hello(const void *msg, struct reason *why)
{
	const struct wp_msg *m = msg;

	if (m->u.hello.pad)
		return msg_fail(why, -EINVAL, "hello: padding is not zero");
	if (msg_field_len(m->u.hello.vm, WP_VM_SIZE) < 0 ||
	    !bp_vm_name_ok(m->u.hello.vm))
		return msg_fail(why, -EINVAL, "hello: not a VM name");
	return 0;
}

static int check_gid(const void *msg, struct reason *why)
{
	const struct wp_gid *g = &((const struct wp_msg *)msg)->u.gid;

	if (g->gid_type != WP_GID_ROCE_V1 && g->gid_type != WP_GID_ROCE_V2)
		return msg_fail(why, -EINVAL,
				"GID type %u: not RoCE v1 (1) or v2 (2)",
				g->gid_type);
	return gid_check(g->gid, why);
}

static int check_gid_reply(const void *msg, struct reason *why)
{
	const struct wp_gid_reply *r =
		&((const struct wp_msg *)msg)->u.gid_reply;

	if (r->pad)
		return msg_fail(why, -EINVAL, "GID reply: padding is not zero");
	if (r->status < 0 || r->status > 4095)
		return msg_fail(why, -EINVAL,
				"GID reply: status %d: not 0 or an errno",
				r->status);
	if (msg_field_len(r->text, sizeof(r->text)) < 0)
		return msg_fail(why, -EINVAL,
				"GID reply: text not NUL-terminated and "
				"NUL-padded");
	return 0;
}

static int check_stats(const void *msg, struct reason *why)
{
	if (((const struct wp_msg *)msg)->u.stats.pad)
		return msg_fail(why, -EINVAL, "stats: padding is not zero");
	return 0;
}

static int check_stats_reply(const void *msg, struct reason *why)
{
	if (((const struct wp_msg *)msg)->u.stats_reply.pad)
		return msg_fail(why, -EINVAL,
				"stats reply: padding is not zero");
	return 0;
}

/* THE table. */
static const struct msg_type rows[] = {
	{ .type = WP_HELLO,
	  .name = "HELLO",
	  .size = sizeof(struct wp_hello),
	  .from = WP_FROM_WORKER,
	  .check = check_hello,
	  .phase = MSG_FIRST },
	{ .type = WP_GID_ADD,
	  .name = "GID_ADD",
	  .size = sizeof(struct wp_gid),
	  .from = WP_FROM_WORKER,
	  .check = check_gid },
	{ .type = WP_GID_ADD_REPLY,
	  .name = "GID_ADD_REPLY",
	  .size = sizeof(struct wp_gid_reply),
	  .from = WP_FROM_BROKER,
	  .check = check_gid_reply },
	{ .type = WP_GID_DEL,
	  .name = "GID_DEL",
	  .size = sizeof(struct wp_gid),
	  .from = WP_FROM_WORKER,
	  .check = check_gid },
	{ .type = WP_GID_DEL_REPLY,
	  .name = "GID_DEL_REPLY",
	  .size = sizeof(struct wp_gid_reply),
	  .from = WP_FROM_BROKER,
	  .check = check_gid_reply },
	{ .type = WP_STATS,
	  .name = "STATS",
	  .size = sizeof(struct wp_stats_req),
	  .from = WP_FROM_BROKER,
	  .check = check_stats },
	{ .type = WP_STATS_REPLY,
	  .name = "STATS_REPLY",
	  .size = sizeof(struct wp_stats_reply),
	  .from = WP_FROM_WORKER,
	  .check = check_stats_reply },
	{ .type = WP_MUX_CHANNEL,
	  .name = "MUX_CHANNEL",
	  .size = sizeof(struct wp_mux_channel),
	  .from = WP_FROM_BROKER,
	  .fds = 1 },
	{ .type = WP_GID_GONE,
	  .name = "GID_GONE",
	  .size = sizeof(struct wp_gid),
	  .from = WP_FROM_BROKER,
	  .check = check_gid },
};

const struct msg_proto wp_protocol = {
	.name = "worker channel",
	.version = RDMAGATE_WORKER_PROTO_VERSION,
	.payload_offset = offsetof(struct wp_msg, u),
	.container_size = sizeof(struct wp_msg),
	.max_datagram = WP_MSG_MAX,
	.types = rows,
	.n_types = ARRAY_SIZE(rows),
	.root_from = 1u << WP_FROM_BROKER,
};
_Static_assert(sizeof(struct wp_msg) <= MSG_CONTAINER_MAX, "wp_msg");
_Static_assert(sizeof(struct wp_stats_reply) <= sizeof(struct wp_gid_reply),
	       "WP_MSG_MAX");

const struct msg_type *wp_type_info(uint32_t type)
{
	return msg_type_of(&wp_protocol, type);
}

const char *wp_type_name(uint32_t type)
{
	const struct msg_type *t = msg_type_of(&wp_protocol, type);

	return t ? t->name : "unknown";
}

int wp_decode(const void *buf, size_t len, struct wp_msg *ret,
	      struct reason *why)
{
	return msg_decode(&wp_protocol, buf, len, ret, why);
}

size_t wp_init(struct wp_msg *m, uint32_t type)
{
	return msg_init(&wp_protocol, m, type);
}

int wp_send(int fd, const struct wp_msg *m)
{
	return msg_send(&wp_protocol, fd, m, -1, MSG_DONTWAIT);
}

int wp_send_fd(int fd, const struct wp_msg *m, int pass_fd)
{
	return msg_send(&wp_protocol, fd, m, pass_fd, MSG_DONTWAIT);
}
