// SPDX-License-Identifier: MIT
/*
 * The mux protocol's one table and its pure decoder (see
 * common/mux_proto.h and docs/mux.md).  Linked by rdmagate-mux, and by
 * whoever talks to it (the broker, the worker, the tests).
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "common/cleanup.h"
#include "common/mux_proto.h"
#include "common/probes.h"

_Static_assert(RDMAGATE_MUX_DROP_MAX < MP_DROP_SLOTS,
	       "the STATS reply has a slot for every drop reason");

/* NUL-terminated, and only NULs after the NUL. */
static bool field_ok(const char *f, size_t size)
{
	return msg_field_len(f, size) >= 0;
}

bool mp_device_name_ok(const char *s)
{
	return msg_name_ok(s, MP_DEVICE_SIZE - 1);
}

static int check_empty(const void *msg, struct reason *why)
{
	return 0;
}

static int check_worker_id(uint32_t id, struct reason *why)
{
	if (id == 0)
		return msg_fail(why, -EINVAL,
				"worker id 0: reserved (no worker)");
	return 0;
}

static int check_device_port(const char *device, uint32_t port,
			     struct reason *why)
{
	if (!field_ok(device, MP_DEVICE_SIZE))
		return msg_fail(why, -EINVAL,
				"device: not NUL-terminated and NUL-padded");
	if (!mp_device_name_ok(device))
		return msg_fail(why, -EINVAL,
				"device '%.63s': not a device name", device);
	if (port < 1 || port > MP_PORT_MAX)
		return msg_fail(why, -EINVAL, "port %u: not 1..%u", port,
				MP_PORT_MAX);
	return 0;
}

static int check_port_add(const void *msg, struct reason *why)
{
	const struct mp_msg *m = msg;

	return check_device_port(m->u.port_add.device, m->u.port_add.port, why);
}

static int check_attach(const void *msg, struct reason *why)
{
	const struct mp_msg *m = msg;

	const struct mp_worker_attach *a = &m->u.attach;
	int ret = check_worker_id(a->worker_id, why);

	if (ret < 0)
		return ret;
	if (!field_ok(a->vm, MP_VM_SIZE))
		return msg_fail(why, -EINVAL,
				"vm name: not NUL-terminated and NUL-padded");
	if (!msg_name_ok(a->vm, MP_VM_NAME_MAX))
		return msg_fail(
			why, -EINVAL,
			"vm name '%.64s': not 1..64 of A-Z a-z 0-9 _ . - "
			"(no leading . or -)",
			a->vm);
	return 0;
}

static int check_rdmacm_attach(const void *msg, struct reason *why)
{
	const struct mp_msg *m = msg;
	struct mp_msg w;

	/* the same id and name rules as WORKER_ATTACH */
	memset(&w, 0, sizeof(w));
	w.u.attach.worker_id = m->u.rdmacm_attach.worker_id;
	memcpy(w.u.attach.vm, m->u.rdmacm_attach.vm, MP_VM_SIZE);
	return check_attach(&w, why);
}

static int check_detach(const void *msg, struct reason *why)
{
	const struct mp_msg *m = msg;

	return check_worker_id(m->u.ref.worker_id, why);
}

static int check_stats(const void *msg, struct reason *why)
{
	return 0; /* worker 0: the totals */
}

static int check_gid(const uint8_t *gid, struct reason *why)
{
	if (msg_all_zero(gid, MP_GID_SIZE))
		return msg_fail(why, -EINVAL, "gid: all zero");
	return 0;
}

static int check_gid_add(const void *msg, struct reason *why)
{
	const struct mp_msg *m = msg;

	const struct mp_gid_add *g = &m->u.gid_add;
	int ret = check_worker_id(g->worker_id, why);

	if (ret < 0)
		return ret;
	ret = check_device_port(g->device, g->port, why);
	if (ret < 0)
		return ret;
	if (g->host_gid_index > MP_GID_INDEX_MAX)
		return msg_fail(why, -EINVAL, "host gid index %u: not 0..%u",
				g->host_gid_index, MP_GID_INDEX_MAX);
	return check_gid(g->gid, why);
}

static int check_gid_del(const void *msg, struct reason *why)
{
	const struct mp_msg *m = msg;

	int ret = check_worker_id(m->u.gid_del.worker_id, why);

	if (ret < 0)
		return ret;
	return check_gid(m->u.gid_del.gid, why);
}

static int check_status(const struct mp_status *st, struct reason *why)
{
	if (st->status < 0 || st->status > 4095)
		return msg_fail(why, -EINVAL, "status %d: not 0 or an errno",
				st->status);
	if (!field_ok(st->text, sizeof(st->text)))
		return msg_fail(
			why, -EINVAL,
			"reply text: not NUL-terminated and NUL-padded");
	return 0;
}

static int check_status_reply(const void *msg, struct reason *why)
{
	const struct mp_msg *m = msg;

	return check_status(&m->u.status, why);
}

static int check_hello_reply(const void *msg, struct reason *why)
{
	const struct mp_msg *m = msg;

	return check_status(&m->u.hello_reply.st, why);
}

static int check_stats_reply(const void *msg, struct reason *why)
{
	const struct mp_msg *m = msg;

	const struct mp_stats_reply *r = &m->u.stats_reply;
	int ret = check_status(&r->st, why);

	if (ret < 0)
		return ret;
	if (r->s.dropped[0])
		return msg_fail(why, -EINVAL,
				"stats reply: drop slot 0 is not zero");
	if (r->st.status && !msg_all_zero(&r->s, sizeof(r->s)))
		return msg_fail(why, -EINVAL,
				"stats reply: counters with a failure status");
	return 0;
}

/* The shared part of MAD_SEND and MAD_RECV. */
static int check_mad(uint32_t flow_label, uint32_t mad_len, const uint8_t *mad,
		     struct reason *why)
{
	if (flow_label > MP_FLOW_LABEL_MAX)
		return msg_fail(why, -EINVAL,
				"flow label 0x%x: more than 20 bits",
				flow_label);
	if (mad_len < MP_MAD_HDR || mad_len > MP_MAD_SIZE)
		return msg_fail(why, -EINVAL, "mad length %u: not %u..%u",
				mad_len, MP_MAD_HDR, MP_MAD_SIZE);
	if (!msg_all_zero(mad + mad_len, MP_MAD_SIZE - mad_len))
		return msg_fail(why, -EINVAL,
				"mad: bytes past its length %u are not zero",
				mad_len);
	return 0;
}

static int check_mad_send(const void *msg, struct reason *why)
{
	const struct mp_msg *m = msg;

	const struct mp_mad_send *s = &m->u.mad_send;

	if (s->remote_qpn > MP_QPN_MAX)
		return msg_fail(why, -EINVAL,
				"remote qpn 0x%x: more than 24 bits",
				s->remote_qpn);
	return check_mad(s->flow_label, s->mad_len, s->mad, why);
}

static int check_mad_recv(const void *msg, struct reason *why)
{
	const struct mp_msg *m = msg;

	const struct mp_mad_recv *r = &m->u.mad_recv;

	if (r->src_qpn > MP_QPN_MAX)
		return msg_fail(why, -EINVAL,
				"source qpn 0x%x: more than 24 bits",
				r->src_qpn);
	return check_mad(r->flow_label, r->mad_len, r->mad, why);
}

/* THE table: every message the protocol has. */
static const struct msg_type rows[] = {
	{ .type = MP_HELLO,
	  .name = "HELLO",
	  .size = 0,
	  .from = MP_FROM_BROKER,
	  .check = check_empty,
	  .phase = MSG_FIRST },
	{ .type = MP_HELLO_REPLY,
	  .name = "HELLO_REPLY",
	  .size = sizeof(struct mp_hello_reply),
	  .from = MP_FROM_MUX,
	  .check = check_hello_reply },
	{ .type = MP_PORT_ADD,
	  .name = "PORT_ADD",
	  .size = sizeof(struct mp_port_add),
	  .from = MP_FROM_BROKER,
	  .check = check_port_add },
	{ .type = MP_PORT_ADD_REPLY,
	  .name = "PORT_ADD_REPLY",
	  .size = sizeof(struct mp_status),
	  .from = MP_FROM_MUX,
	  .check = check_status_reply },
	{ .type = MP_WORKER_ATTACH,
	  .name = "WORKER_ATTACH",
	  .size = sizeof(struct mp_worker_attach),
	  .from = MP_FROM_BROKER,
	  .check = check_attach,
	  .fds = 1 },
	{ .type = MP_WORKER_ATTACH_REPLY,
	  .name = "WORKER_ATTACH_REPLY",
	  .size = sizeof(struct mp_status),
	  .from = MP_FROM_MUX,
	  .check = check_status_reply },
	{ .type = MP_WORKER_DETACH,
	  .name = "WORKER_DETACH",
	  .size = sizeof(struct mp_worker_ref),
	  .from = MP_FROM_BROKER,
	  .check = check_detach },
	{ .type = MP_WORKER_DETACH_REPLY,
	  .name = "WORKER_DETACH_REPLY",
	  .size = sizeof(struct mp_status),
	  .from = MP_FROM_MUX,
	  .check = check_status_reply },
	{ .type = MP_GID_ADD,
	  .name = "GID_ADD",
	  .size = sizeof(struct mp_gid_add),
	  .from = MP_FROM_BROKER,
	  .check = check_gid_add },
	{ .type = MP_GID_ADD_REPLY,
	  .name = "GID_ADD_REPLY",
	  .size = sizeof(struct mp_status),
	  .from = MP_FROM_MUX,
	  .check = check_status_reply },
	{ .type = MP_GID_DEL,
	  .name = "GID_DEL",
	  .size = sizeof(struct mp_gid_del),
	  .from = MP_FROM_BROKER,
	  .check = check_gid_del },
	{ .type = MP_GID_DEL_REPLY,
	  .name = "GID_DEL_REPLY",
	  .size = sizeof(struct mp_status),
	  .from = MP_FROM_MUX,
	  .check = check_status_reply },
	{ .type = MP_STATS,
	  .name = "STATS",
	  .size = sizeof(struct mp_worker_ref),
	  .from = MP_FROM_BROKER,
	  .check = check_stats },
	{ .type = MP_STATS_REPLY,
	  .name = "STATS_REPLY",
	  .size = sizeof(struct mp_stats_reply),
	  .from = MP_FROM_MUX,
	  .check = check_stats_reply },
	{ .type = MP_ERROR_REPLY,
	  .name = "ERROR_REPLY",
	  .size = sizeof(struct mp_status),
	  .from = MP_FROM_MUX,
	  .check = check_status_reply },
	{ .type = MP_RDMACM_ATTACH,
	  .name = "RDMACM_ATTACH",
	  .size = sizeof(struct mp_rdmacm_attach),
	  .from = MP_FROM_BROKER,
	  .check = check_rdmacm_attach,
	  .fds = 1 },
	{ .type = MP_RDMACM_ATTACH_REPLY,
	  .name = "RDMACM_ATTACH_REPLY",
	  .size = sizeof(struct mp_status),
	  .from = MP_FROM_MUX,
	  .check = check_status_reply },
	{ .type = MP_MAD_SEND,
	  .name = "MAD_SEND",
	  .size = sizeof(struct mp_mad_send),
	  .from = MP_FROM_WORKER,
	  .check = check_mad_send },
	{ .type = MP_MAD_RECV,
	  .name = "MAD_RECV",
	  .size = sizeof(struct mp_mad_recv),
	  .from = MP_FROM_MUX,
	  .check = check_mad_recv },
};

static const char *from_name(uint32_t from)
{
	switch (from) {
	case MP_FROM_BROKER:
		return "the broker";
	case MP_FROM_MUX:
		return "the mux";
	case MP_FROM_WORKER:
		return "a worker";
	}
	return "nobody";
}

const struct msg_proto mp_protocol = {
	.name = "mux",
	.version = RDMAGATE_MUX_VERSION,
	.payload_offset = offsetof(struct mp_msg, u),
	.container_size = sizeof(struct mp_msg),
	.max_datagram = MP_MSG_MAX,
	.types = rows,
	.n_types = ARRAY_SIZE(rows),
	.root_from = (1u << MP_FROM_BROKER) | (1u << MP_FROM_MUX),
	.from_name = from_name,
};
_Static_assert(sizeof(struct mp_msg) <= MSG_CONTAINER_MAX, "mp_msg");

const struct msg_type *mp_type_info(uint32_t type)
{
	return msg_type_of(&mp_protocol, type);
}

const char *mp_type_name(uint32_t type)
{
	const struct msg_type *t = msg_type_of(&mp_protocol, type);

	return t ? t->name : "unknown";
}

int mp_decode(const void *buf, size_t len, enum mp_from from,
	      struct mp_msg *ret, struct reason *why)
{
	return msg_decode_from(&mp_protocol, buf, len, (uint32_t)from, ret,
			       why);
}

size_t mp_init(struct mp_msg *m, uint32_t type)
{
	return msg_init(&mp_protocol, m, type);
}

int mp_send(int fd, const struct mp_msg *m, int flags, int fd_pass)
{
	return msg_send(&mp_protocol, fd, m, fd_pass, flags);
}

void mp_set_status(struct mp_status *st, int status, const char *fmt, ...)
{
	va_list ap;

	st->status = status;
	va_start(ap, fmt);
	msg_vset_text(st->text, sizeof(st->text), fmt, ap);
	va_end(ap);
}
