// SPDX-License-Identifier: MIT
/*
 * QP1 (GSI) emulation of the verbs backend (see worker/backend/qp1.h),
 * run by the sandboxed rdmagate-worker on its one thread: guest QP1 sends
 * to MAD_SEND, the mux's MAD_RECV to the guest's QP1 receive buffers.
 * The mux is a peer like any other: every datagram it sends is decoded by
 * mux_proto's decoder and checked against the guest's GIDs before a byte
 * reaches guest memory; a MAD that cannot be delivered is dropped and
 * counted, never waited for.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "common/log.h"
#include "common/probes.h"
#include "worker/backend/be_impl.h"
#include "worker/backend/qp1.h"

/* Bytes of a RoCE v2 MAD datagram after the IP header, but the MAD. */
#define UDP_LEN		      8
#define BTH_LEN		      12
#define DETH_LEN	      8
#define ICRC_LEN	      4
#define ROCE_V2_PORT_NEXT_HDR 17 /* UDP */
#define IB_GRH_NEXT_HDR	      0x1b

static const uint8_t v4_prefix[12] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
};

static bool gid_is_v4(const uint8_t gid[16])
{
	return !memcmp(gid, v4_prefix, sizeof(v4_prefix));
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

/* The IPv4 header checksum of the 20 bytes at h (its checksum field 0). */
static uint16_t ip4_csum(const uint8_t *h)
{
	uint32_t sum = 0;
	unsigned int i;

	for (i = 0; i < 20; i += 2)
		sum += (uint32_t)h[i] << 8 | h[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

int qp1_grh_build(uint8_t grh[QP1_GRH_LEN], const struct mp_mad_recv *r,
		  bool roce_v1)
{
	uint32_t after = BTH_LEN + DETH_LEN + r->mad_len + ICRC_LEN;
	bool v4 = gid_is_v4(r->sgid);
	uint8_t *ip = grh + 20;

	memset(grh, 0, QP1_GRH_LEN);
	if (!roce_v1 && v4 != gid_is_v4(r->dgid))
		return -EINVAL;
	if (roce_v1 || !v4) {
		/* the IB GRH, which is also the IPv6 header of RoCE v2 */
		put32(grh, 6u << 28 | (uint32_t)r->traffic_class << 20 |
				   (r->flow_label & MP_FLOW_LABEL_MAX));
		put16(grh + 4, (uint16_t)(roce_v1 ? after : UDP_LEN + after));
		grh[6] = roce_v1 ? IB_GRH_NEXT_HDR : ROCE_V2_PORT_NEXT_HDR;
		grh[7] = r->hop_limit;
		memcpy(grh + 8, r->sgid, 16);
		memcpy(grh + 24, r->dgid, 16);
		return 0;
	}
	/* RoCE v2 over IPv4: 20 bytes of nothing, then the IPv4 header */
	ip[0] = 0x45;
	ip[1] = r->traffic_class;
	put16(ip + 2, (uint16_t)(20 + UDP_LEN + after));
	put16(ip + 6, 0x4000); /* don't fragment, as rxe sends */
	ip[8] = r->hop_limit;
	ip[9] = ROCE_V2_PORT_NEXT_HDR;
	memcpy(ip + 12, r->sgid + 12, 4);
	memcpy(ip + 16, r->dgid + 12, 4);
	put16(ip + 10, ip4_csum(ip));
	return 0;
}

/* ---- send: guest -> mux ---- */

/* The MAD's bytes: inline, or the sum of the SGE lengths. */
static uint64_t send_len(const struct be_send_wr *w)
{
	uint64_t n = 0;
	uint32_t i;

	if (w->send_flags & IBV_SEND_INLINE)
		return w->inline_len;
	for (i = 0; i < w->num_sge; i++)
		n += w->sge[i].length;
	return n;
}

enum ibv_wc_status qp1_send(struct be *be, uint32_t h,
			    const struct be_send_wr *w, struct reason *why)
{
	const struct be_ah_attr *av = &w->ud.av;
	struct qp1_chan *c = be->cfg.mux;
	struct be_qp *q = &be->qp[h];
	struct mp_mad_send *ms;
	enum rdmagate_mad_drop reason = RDMAGATE_MAD_DROP_BAD;
	uint64_t len = send_len(w);
	enum ibv_wc_status st = IBV_WC_LOC_QP_OP_ERR;
	struct mp_msg m;
	int ret;

	mp_init(&m, MP_MAD_SEND);
	ms = &m.u.mad_send;
	if (w->opcode != IBV_WR_SEND) {
		reason_set(why,
			   "a QP1 send must be a SEND without immediate data");
		goto fail;
	}
	if (q->state != IBV_QPS_RTS) {
		reason_set(why, "QP1 is not in RTS");
		goto fail;
	}
	if (len < MP_MAD_HDR || len > MP_MAD_SIZE) {
		reason_set(why, "a MAD is 24..256 bytes");
		st = IBV_WC_LOC_LEN_ERR;
		goto fail;
	}
	if (av->sgid_index >= be->gid_tbl_len ||
	    be->guest_gid[av->sgid_index] < 0) {
		reason_set(
			why,
			"the address vector names a GID index the guest never "
			"added");
		goto fail;
	}
	if (be->gid_dead[av->sgid_index]) {
		reason_set(why, "the address vector names a GID that is no "
				"longer the guest's on the host port");
		goto fail;
	}
	if (w->ud.remote_qpn > MP_QPN_MAX) {
		reason_set(why, "remote QPN of more than 24 bits");
		goto fail;
	}
	memcpy(ms->sgid, be->gid_raw[av->sgid_index], MP_GID_SIZE);
	memcpy(ms->dgid, av->dgid, MP_GID_SIZE);
	ms->flow_label = av->flow_label & MP_FLOW_LABEL_MAX;
	ms->traffic_class = av->traffic_class;
	ms->hop_limit = av->hop_limit;
	ms->pkey_index = 0; /* the device's one P_Key */
	ms->remote_qpn = w->ud.remote_qpn;
	ms->remote_qkey = w->ud.remote_qkey;
	ms->mad_len = (uint32_t)len;
	if (w->send_flags & IBV_SEND_INLINE) {
		memcpy(ms->mad, w->inline_data, w->inline_len);
	} else {
		st = be_sge_copy(be, q->pd, w->sge, w->num_sge, ms->mad,
				 ms->mad_len, false, why);
		if (st != IBV_WC_SUCCESS)
			goto fail;
	}
	st = IBV_WC_LOC_QP_OP_ERR;
	if (!c || c->fd < 0) {
		reason_set(
			why,
			"no MAD mux (the broker has not given this worker its "
			"channel)");
		reason = RDMAGATE_MAD_DROP_NO_MUX;
		goto fail;
	}
	ret = mp_send(c->fd, &m, MSG_DONTWAIT, -1);
	if (ret < 0) {
		reason_set(why, "%s",
			   ret == -EAGAIN ? "the mux's queue is full"
					  : "the mux channel is broken");
		reason = ret == -EAGAIN ? RDMAGATE_MAD_DROP_QUEUE_FULL
					: RDMAGATE_MAD_DROP_NO_MUX;
		goto fail;
	}
	RDMAGATE_MAD_SEND(rdmagate_probe_vm, 1, ms->mad_len);
	be->st->mads_sent++;
	return IBV_WC_SUCCESS;
fail:
	RDMAGATE_MAD_DROP(rdmagate_probe_vm, reason,
			  (uint32_t)(len > UINT32_MAX ? UINT32_MAX : len));
	be->st->mad_errors++;
	return st;
}

/* ---- receive: mux -> guest ---- */

static void drop(struct qp1_chan *c, enum rdmagate_mad_drop reason,
		 uint32_t bytes, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	if (c->counters)
		c->counters->mad_errors++;
	RDMAGATE_MAD_DROP(rdmagate_probe_vm, reason, bytes);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* the guest controls how often this happens: the VM's budget */
	log_peer_warnx("mux channel: dropped a MAD: %s", msg);
}

/* The guest's GID table index holding gid (RoCE v2 first), or -1. */
static int guest_gid_of(const struct be *be, const uint8_t gid[16])
{
	int i, found = -1;

	for (i = 0; i < (int)be->gid_tbl_len; i++) {
		if (be->guest_gid[i] < 0 || be->gid_dead[i] ||
		    memcmp(be->gid_raw[i], gid, 16))
			continue;
		if (be->gid_type[i] == IBV_GID_TYPE_ROCE_V2)
			return i;
		if (found < 0)
			found = i;
	}
	return found;
}

static void deliver(struct qp1_chan *c, struct be *be,
		    const struct mp_mad_recv *r)
{
	uint8_t buf[QP1_GRH_LEN + MP_MAD_SIZE];
	struct be_wc cpl;
	char gid[48];
	int i, ret;

	i = guest_gid_of(be, r->dgid);
	if (i < 0) {
		inet_ntop(AF_INET6, r->dgid, gid, sizeof(gid));
		drop(c, RDMAGATE_MAD_DROP_BAD, r->mad_len,
		     "to GID %s, which is not the guest's", gid);
		return;
	}
	if (r->pkey_index >= 1) {
		drop(c, RDMAGATE_MAD_DROP_BAD, r->mad_len,
		     "P_Key index %u (the table has 1)", r->pkey_index);
		return;
	}
	if (qp1_grh_build(buf, r, be->gid_type[i] == IBV_GID_TYPE_ROCE_V1) <
	    0) {
		drop(c, RDMAGATE_MAD_DROP_BAD, r->mad_len,
		     "one of its GIDs is IPv4-mapped, the other is not");
		return;
	}
	memcpy(buf + QP1_GRH_LEN, r->mad, r->mad_len);
	memset(&cpl, 0, sizeof(cpl));
	cpl.status = IBV_WC_SUCCESS;
	cpl.opcode = IBV_WC_RECV;
	cpl.byte_len = QP1_GRH_LEN + r->mad_len;
	cpl.src_qp = r->src_qpn;
	cpl.wc_flags = IBV_WC_GRH;
	cpl.pkey_index = r->pkey_index;
	ret = be_gsi_deliver(be, buf, cpl.byte_len, &cpl);
	switch (ret) {
	case 0:
		be->st->mads_received++;
		RDMAGATE_MAD_RECV(rdmagate_probe_vm, 1, r->mad_len);
		break;
	case -ENOENT:
		drop(c, RDMAGATE_MAD_DROP_QUEUE_FULL, r->mad_len,
		     "the guest has no QP1 ready to receive (RTR or RTS)");
		break;
	case -ENOBUFS:
		drop(c, RDMAGATE_MAD_DROP_QUEUE_FULL, r->mad_len,
		     "no QP1 receive buffer posted");
		break;
	default:
		drop(c, RDMAGATE_MAD_DROP_QUEUE_FULL, r->mad_len,
		     "the QP1 receive buffer could not take it (its "
		     "completion says why)");
		break;
	}
}

static void handle(struct qp1_chan *c, const uint8_t *buf, size_t len)
{
	struct reason why;
	struct mp_msg m;

	if (mp_decode(buf, len, MP_FROM_MUX, &m, &why) < 0) {
		drop(c, RDMAGATE_MAD_DROP_BAD, 0,
		     "bad datagram from the mux: %s", why.msg);
		return;
	}
	if (m.h.type != MP_MAD_RECV) {
		drop(c, RDMAGATE_MAD_DROP_BAD, 0,
		     "the mux sent %s on the worker channel",
		     mp_type_name(m.h.type));
		return;
	}
	if (!c->be) {
		drop(c, RDMAGATE_MAD_DROP_QUEUE_FULL, m.u.mad_recv.mad_len,
		     "no guest is connected");
		return;
	}
	deliver(c, c->be, &m.u.mad_recv);
}

int qp1_chan_readable(struct qp1_chan *c)
{
	uint8_t buf[MP_MSG_MAX + 1];
	unsigned int i;

	for (i = 0; c->fd >= 0 && i < QP1_RECV_BATCH; i++) {
		/* recv(): fds a hostile mux sends along are discarded */
		ssize_t n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		if (n < 0) {
			int ret = -errno;

			log_warn("mux channel");
			return ret;
		}
		if (n == 0) {
			log_info("mux channel closed by the mux");
			return -EPIPE;
		}
		handle(c, buf, (size_t)n);
	}
	return 0;
}
