// SPDX-License-Identifier: MIT
/*
 * rdmagate-guest cm_udaddy: the server side of rdma-core's udaddy on a UD
 * QP that a SIDR exchange named (tool_cm.c), so that a native udaddy
 * client (udaddy -s ADDR -C N) sends datagrams to a guest and counts the
 * answers. udaddy's client sends N datagrams (SEND with immediate: its
 * QPN); the guest checks each one's GRH (from the requester's GID to
 * ours), length and immediate (the sender's QPN, as the completion's
 * source QP says), then answers N datagrams of the same length, holding a
 * known text, to that QPN with rdma_cm's Q_Key.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "guest/tools.h"

#define UA_GRH	    40 /* a UD receive starts with the GRH area */
#define UA_SEND_OFF 64 /* our answers go from here, after the GRH area */
enum { UA_SEND = 201 };

struct ua {
	const struct gv_tool_data_args *d;
	uint8_t ours[16];  /* our GID (-g) */
	uint32_t len;	   /* the first datagram's; all must match */
	uint32_t peer_qpn; /* its immediate */
	unsigned int recvd;
};

/* One receive checked: GRH from the requester to us, length, QPN. */
static int ua_check(struct ua *u, const struct gv_wc *wc)
{
	const uint8_t *grh = u->d->buf;
	uint32_t len = wc->byte_len - UA_GRH, imm = be32toh(wc->imm_data);

	if (wc->byte_len < UA_GRH || !(wc->wc_flags & VIRTIO_RDMA_WC_GRH) ||
	    !(wc->wc_flags & VIRTIO_RDMA_WC_WITH_IMM)) {
		fprintf(stderr,
			"cm_udaddy: a datagram of %u bytes, flags 0x%x: "
			"udaddy sends them with a GRH and an immediate\n",
			wc->byte_len, wc->wc_flags);
		return -EPROTO;
	}
	/* RoCE v2 over IPv6: the IPv6 header's addresses at 8 and 24 */
	if (memcmp(grh + 8, u->d->rem->gid, 16) ||
	    memcmp(grh + 24, u->ours, 16)) {
		fprintf(stderr,
			"cm_udaddy: datagram %u: its GRH names "
			"other GIDs than the SIDR exchange\n",
			u->recvd);
		return -EPROTO;
	}
	if (imm != wc->src_qp || (u->recvd && imm != u->peer_qpn) ||
	    (u->recvd && len != u->len)) {
		fprintf(stderr,
			"cm_udaddy: datagram %u: %u bytes from QP 0x%x, "
			"immediate 0x%x (the first: %u bytes, QP 0x%x)\n",
			u->recvd, len, wc->src_qp, imm, u->len, u->peer_qpn);
		return -EPROTO;
	}
	u->len = len;
	u->peer_qpn = imm;
	u->recvd++;
	return 0;
}

/* The next completion: a receive is checked, a send must be ours. */
static int ua_step(struct ua *u, bool *sent)
{
	struct gv_wc wc;
	int e = gv_tool_next_wc(u->d, "cm_udaddy", &wc);

	if (e)
		return e;
	if (wc.wr_id == UA_SEND) {
		*sent = true;
		return 0;
	}
	return ua_check(u, &wc);
}

/* Our answer i: "udaddy-reply-I: " and letters, as long as theirs. */
static void ua_text(uint8_t *out, uint32_t len, unsigned int i)
{
	int cc = snprintf((char *)out, len, "udaddy-reply-%u: ", i);

	for (uint32_t k = cc < 0 ? len : (uint32_t)cc; k < len; k++)
		out[k] = (uint8_t)('a' + (k + i) % 26);
}

static int ua_answer(struct ua *u, struct gv_ah *ah, unsigned int i)
{
	const struct gv_tool_data_args *d = u->d;
	struct gv_sge sge = { (uintptr_t)d->buf + UA_SEND_OFF, u->len,
			      d->lkey };
	struct gv_send_wr wr = { .wr_id = UA_SEND,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = VIRTIO_RDMA_WR_SEND_WITH_IMM,
				 .send_flags = VIRTIO_RDMA_SEND_SIGNALED,
				 .imm_data = htobe32(d->my->qpn) };
	bool sent = false;
	int e;

	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = u->peer_qpn;
	wr.wr.ud.remote_qkey = d->qkey;
	ua_text(d->buf + UA_SEND_OFF, u->len, i);
	e = gv_post_send(d->qp, &wr, NULL);
	if (e) {
		fprintf(stderr, "cm_udaddy: posting answer %u: %s\n", i,
			strerror(-e));
		return e;
	}
	while (!e && !sent) /* one send slot */
		e = ua_step(u, &sent);
	return e;
}

int gv_tool_udaddy_serve(const struct gv_tool_data_args *d)
{
	struct gv_ah_attr aa = { .sgid_index = d->sgid_index, .hop_limit = 64 };
	struct ua u = { .d = d };
	struct gv_ah *ah = NULL;
	bool sent = false;
	int e = 0;

	if (d->active) {
		fprintf(stderr, "cm_udaddy: only the server side: no HOST (the "
				"peer runs udaddy -s)\n");
		return -EINVAL;
	}
	memcpy(u.ours, d->my->gid, 16);
	while (!e && u.recvd < d->iters)
		e = ua_step(&u, &sent);
	if (!e && (u.len > d->len || UA_SEND_OFF + u.len > d->len + UA_GRH)) {
		fprintf(stderr,
			"cm_udaddy: datagrams of %u bytes: -s %u is "
			"too small to answer them\n",
			u.len, d->len);
		e = -EMSGSIZE;
	}
	if (e)
		return e;
	printf("cm_udaddy: %u datagrams of %u bytes from QP 0x%x checked\n",
	       u.recvd, u.len, u.peer_qpn);
	memcpy(aa.dgid, d->rem->gid, 16);
	e = gv_create_ah(d->pd, &aa, &ah);
	if (e) {
		fprintf(stderr, "cm_udaddy: an AH towards the peer: %s\n",
			strerror(-e));
		return e;
	}
	for (unsigned int i = 0; i < d->iters && !e; i++)
		e = ua_answer(&u, ah, i);
	gv_destroy_ah(ah);
	if (!e)
		printf("cm_udaddy: %u answers sent\n", d->iters);
	fflush(stdout);
	return e;
}
