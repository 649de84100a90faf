// SPDX-License-Identifier: MIT
/*
 * The destination of a QEMU's MADs (mux/rdmacm_route.h): a small table
 * per QEMU connection of the ids its guest received, and who sent them.
 * Pure; every MAD is hostile and read through a length check.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/ib_cm.h"
#include "mux/rdmacm_route.h"
#include "mux/router.h"

enum { KIND_CONN = 1, KIND_SIDR = 2 };

/* The peer's own id in a MAD it sent: the first field of each. */
#define OFF_OWN_ID    CM_OFF_LOCAL_COMM_ID
#define OFF_REMOTE_ID CM_OFF_REMOTE_COMM_ID
/* A SIDR_REQ: the service id, then the private data, where rdma_cm puts
 * its header {version, IP version << 4, port, source, destination}. */
#define OFF_SIDR_SERVICE_ID  32
#define OFF_SIDR_CMA_VERSION 40
#define OFF_SIDR_DST	     60
/* rdma_cm's port spaces: a service id's upper 48 bits */
#define RDMA_PS_TCP 0x0106u
#define RDMA_PS_UDP 0x0111u
#define RDMA_PS_IB  0x013fu

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static bool is_cm(const uint8_t *mad, size_t len)
{
	return len >= MP_MAD_HDR && mad[1] == CM_MGMT_CLASS &&
	       mad[2] == CM_CLASS_VERSION;
}

static uint16_t attr_of(const uint8_t *mad)
{
	return (uint16_t)(mad[16] << 8 | mad[17]);
}

static struct rcm_peer *find(struct rcm_peers *p, uint8_t kind, uint32_t id,
			     const uint8_t ours[16])
{
	size_t i;

	for (i = 0; i < RCM_PEERS; i++)
		if (p->e[i].used && p->e[i].kind == kind && p->e[i].id == id &&
		    !memcmp(p->e[i].ours, ours, 16))
			return &p->e[i];
	return NULL;
}

/* A free entry, else the least recently used one. */
static struct rcm_peer *slot(struct rcm_peers *p)
{
	struct rcm_peer *lru = &p->e[0];
	size_t i;

	for (i = 0; i < RCM_PEERS; i++) {
		if (!p->e[i].used)
			return &p->e[i];
		if (p->e[i].last_ms < lru->last_ms)
			lru = &p->e[i];
	}
	return lru;
}

void rcm_peers_learn(struct rcm_peers *p, const uint8_t *mad, size_t len,
		     const uint8_t ours[16], const uint8_t peer[16],
		     uint64_t now_ms)
{
	uint8_t kind = KIND_CONN;
	struct rcm_peer *e;
	uint16_t attr;
	uint32_t id;

	if (!is_cm(mad, len) || len < OFF_OWN_ID + 4)
		return;
	attr = attr_of(mad);
	if (attr == CM_ATTR_SIDR_REQ)
		kind = KIND_SIDR;
	else if (attr < CM_ATTR_REQ || attr > CM_ATTR_APR ||
		 attr == CM_ATTR_SIDR_REP)
		return;
	id = rd32(mad + OFF_OWN_ID);
	if (!id)
		return; /* a REJ of a REQ the peer kept no id for */
	e = find(p, kind, id, ours);
	if (!e) {
		e = slot(p);
		memset(e, 0, sizeof(*e));
		e->used = 1;
		e->kind = kind;
		e->id = id;
		memcpy(e->ours, ours, 16);
	}
	memcpy(e->peer, peer, 16);
	e->last_ms = now_ms;
}

/*
 * rdma_cm's SIDR_REQ (a UD "connection") names its destination in its
 * private data: the rdma_cm header's destination IP address, which on
 * RoCE v2 is the destination GID (IPv4 as ::ffff:a.b.c.d).  Other
 * SIDR_REQs name none.
 */
static int sidr_dest(const uint8_t *mad, size_t len, uint8_t ret_dgid[16],
		     struct reason *why)
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };
	uint64_t ps = 0;
	size_t i;

	if (len < OFF_SIDR_DST + 16) {
		return reason_fail(why, -EINVAL,
				   "SIDR_REQ of %zu bytes: no address", len);
	}
	for (i = 0; i < 6; i++) /* the service id's upper 48 bits */
		ps = ps << 8 | mad[OFF_SIDR_SERVICE_ID + i];
	if ((ps != RDMA_PS_TCP && ps != RDMA_PS_UDP && ps != RDMA_PS_IB) ||
	    mad[OFF_SIDR_CMA_VERSION] != 0) {
		return reason_fail(
			why, -ENOENT,
			"SIDR_REQ not from rdma_cm: names no destination "
			"(QEMU drops the address vector)");
	}
	switch (mad[OFF_SIDR_CMA_VERSION + 1] >> 4) {
	case 6:
		memcpy(ret_dgid, mad + OFF_SIDR_DST, 16);
		return 0;
	case 4:
		memcpy(ret_dgid, v4mapped, 12);
		memcpy(ret_dgid + 12, mad + OFF_SIDR_DST + 12, 4);
		return 0;
	default:
		return reason_fail(why, -EINVAL,
				   "SIDR_REQ: rdma_cm header of IP version %u",
				   mad[OFF_SIDR_CMA_VERSION + 1] >> 4);
	}
}

int rcm_peers_dest(struct rcm_peers *p, const uint8_t *mad, size_t len,
		   const uint8_t ours[16], uint64_t now_ms,
		   uint8_t ret_dgid[16], struct reason *why)
{
	uint8_t kind = KIND_CONN;
	size_t off = OFF_REMOTE_ID;
	struct rcm_peer *e;
	uint16_t attr;
	uint32_t id;

	if (!is_cm(mad, len)) {
		return reason_fail(why, -EINVAL,
				   "not a CM MAD: no destination known");
	}
	attr = attr_of(mad);
	switch (attr) {
	case CM_ATTR_REQ:
		if (len < CM_OFF_REQ_PRI_REMOTE_GID + 16) {
			return reason_fail(why, -EINVAL,
					   "REQ of %zu bytes: no path", len);
		}
		memcpy(ret_dgid, mad + CM_OFF_REQ_PRI_REMOTE_GID, 16);
		return 0;
	case CM_ATTR_SIDR_REQ:
		return sidr_dest(mad, len, ret_dgid, why);
	case CM_ATTR_SIDR_REP:
		kind = KIND_SIDR;
		off = OFF_OWN_ID; /* the request id it answers */
		break;
	default:
		break;
	}
	if (len < off + 4) {
		return reason_fail(why, -EINVAL,
				   "CM attr 0x%04x of %zu bytes: no id", attr,
				   len);
	}
	id = rd32(mad + off);
	e = find(p, kind, id, ours);
	if (!e) {
		return reason_fail(
			why, -ENOENT,
			"CM attr 0x%04x answers %s id 0x%08x, which no peer "
			"sent this guest (or it was forgotten)",
			attr, kind == KIND_SIDR ? "request" : "comm", id);
	}
	e->last_ms = now_ms;
	memcpy(ret_dgid, e->peer, 16);
	return 0;
}

void rcm_peers_forget(struct rcm_peers *p, const uint8_t ours[16])
{
	size_t i;

	for (i = 0; i < RCM_PEERS; i++)
		if (p->e[i].used && !memcmp(p->e[i].ours, ours, 16))
			p->e[i].used = 0;
}

int rcm_mad_send(struct rcm_peers *p, const struct rcm_request *r,
		 uint64_t now_ms, struct mp_mad_send *ret, struct reason *why)
{
	size_t len = r->mad_len > MP_MAD_SIZE ? MP_MAD_SIZE : r->mad_len;
	int dest;

	memset(ret, 0, sizeof(*ret));
	memcpy(ret->sgid, r->sgid, sizeof(ret->sgid));
	dest = rcm_peers_dest(p, r->mad, len, r->sgid, now_ms, ret->dgid, why);
	ret->hop_limit = 0xff; /* RoCE takes the route's */
	ret->remote_qpn = CM_QP1_QPN;
	ret->remote_qkey = CM_QP1_QKEY;
	ret->mad_len = (uint32_t)len;
	memcpy(ret->mad, r->mad, len);
	return dest;
}
