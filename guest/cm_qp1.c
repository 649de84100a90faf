// SPDX-License-Identifier: MIT
/*
 * The CM transport on the simulated device's QP1 (see guest/cm_qp1.h):
 * what the guest kernel's ib_mad does with its GSI QP, on the simulator's
 * verbs. Run by rdmagate-guest cm_pingpong.
 */
#include <errno.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "guest/cm_qp1.h"

#define SEND_WRID (CM_QP1_RECV_DEPTH + 1)

static uint8_t *slot(struct cm_qp1 *t, uint32_t i)
{
	return t->buf + (size_t)i * CM_QP1_SLOT;
}

static int post_recv(struct cm_qp1 *t, uint32_t i)
{
	struct gv_sge sge = { (uintptr_t)slot(t, i), CM_QP1_SLOT, t->mr->lkey };
	struct gv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 };

	return gv_post_recv(t->qp, &wr, NULL);
}

/* ib_mad's ib_mad_change_qp_state_to_rts(): INIT (Q_Key), RTR, RTS. */
static int qp1_up(struct gv_qp *qp)
{
	struct virtio_rdma_qp_attr a = { .qp_state = VIRTIO_RDMA_QPS_INIT,
					 .qkey = CM_QP1_QKEY };
	int r = gv_modify_qp(qp, &a,
			     VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_PKEY_INDEX |
				     VIRTIO_RDMA_QP_QKEY);

	if (r)
		return r;
	a.qp_state = VIRTIO_RDMA_QPS_RTR;
	r = gv_modify_qp(qp, &a, VIRTIO_RDMA_QP_STATE);
	if (r)
		return r;
	a.qp_state = VIRTIO_RDMA_QPS_RTS;
	a.sq_psn = 0; /* IB_MAD_SEND_Q_PSN */
	return gv_modify_qp(qp, &a,
			    VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_SQ_PSN);
}

int cm_qp1_open(struct cm_qp1 *t, struct gv_context *ctx, struct gv_pd *pd,
		uint8_t sgid_index)
{
	size_t len = (size_t)(CM_QP1_RECV_DEPTH + 1) * CM_QP1_SLOT;
	struct gv_qp_init_attr qa = {
		.max_send_wr = 1,
		.max_recv_wr = CM_QP1_RECV_DEPTH,
		.max_send_sge = 1,
		.max_recv_sge = 1,
		.qp_type = VIRTIO_RDMA_QPT_GSI,
		.sq_sig_all = true,
	};
	int r;

	memset(t, 0, sizeof(*t));
	t->ctx = ctx;
	t->pd = pd;
	t->sgid_index = sgid_index;
	t->timeout_ms = ctx->timeout_ms;
	t->buf = gv_alloc_buf(ctx, len, 0);
	if (!t->buf)
		return -errno;
	r = gv_reg_mr(pd, t->buf, len, VIRTIO_RDMA_ACCESS_LOCAL_WRITE, &t->mr);
	if (!r)
		r = gv_create_cq(ctx, 4, &t->send_cq);
	if (!r)
		r = gv_create_cq(ctx, CM_QP1_RECV_DEPTH, &t->recv_cq);
	if (r)
		goto fail;
	qa.send_cq = t->send_cq;
	qa.recv_cq = t->recv_cq;
	r = gv_create_qp(pd, &qa, &t->qp);
	if (r)
		goto fail;
	if (t->qp->qp_num != 1) {
		log_warnx("cm: the GSI QP got QPN %u, not 1", t->qp->qp_num);
		r = -EPROTO;
		goto fail;
	}
	r = qp1_up(t->qp);
	for (uint32_t i = 0; !r && i < CM_QP1_RECV_DEPTH; i++)
		r = post_recv(t, i);
	if (!r)
		return 0;
fail:
	cm_qp1_close(t);
	return r;
}

void cm_qp1_close(struct cm_qp1 *t)
{
	if (t->qp)
		gv_destroy_qp(t->qp);
	if (t->ah)
		gv_destroy_ah(t->ah);
	if (t->recv_cq)
		gv_destroy_cq(t->recv_cq);
	if (t->send_cq)
		gv_destroy_cq(t->send_cq);
	if (t->mr)
		gv_dereg_mr(t->mr);
	if (t->buf)
		gv_free_buf(t->ctx, t->buf);
	memset(t, 0, sizeof(*t));
}

/* The address handle towards `to`, kept while the peer stays the same. */
static int ah_for(struct cm_qp1 *t, const struct cm_peer *to)
{
	struct gv_ah_attr a = { .sgid_index = t->sgid_index,
				.hop_limit = to->hop_limit,
				.traffic_class = to->traffic_class,
				.flow_label = to->flow_label };

	if (t->ah && !memcmp(&t->ah_peer, to, sizeof(*to)))
		return 0;
	if (t->ah)
		gv_destroy_ah(t->ah);
	t->ah = NULL;
	memcpy(a.dgid, to->gid, 16);
	t->ah_peer = *to;
	return gv_create_ah(t->pd, &a, &t->ah);
}

static int qp1_send(void *arg, const struct cm_peer *to,
		    const uint8_t mad[CM_MAD_LEN])
{
	struct cm_qp1 *t = arg;
	uint8_t *s = slot(t, CM_QP1_RECV_DEPTH);
	struct gv_sge sge = { (uintptr_t)s, CM_MAD_LEN, t->mr->lkey };
	struct gv_send_wr wr = { .wr_id = SEND_WRID,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = VIRTIO_RDMA_WR_SEND,
				 .send_flags = VIRTIO_RDMA_SEND_SIGNALED };
	struct gv_wc wc;
	int r = ah_for(t, to);

	if (r)
		return r;
	memcpy(s, mad, CM_MAD_LEN);
	wr.wr.ud.ah = t->ah;
	wr.wr.ud.remote_qpn = to->qpn;
	wr.wr.ud.remote_qkey = CM_QP1_QKEY;
	r = gv_post_send(t->qp, &wr, NULL);
	if (r)
		return r;
	/* one send slot: wait for it before the next MAD */
	r = gv_wait_wc(t->send_cq, t->timeout_ms, &wc);
	if (r < 0)
		return r;
	if (!r)
		return -ETIMEDOUT;
	if (wc.status != VIRTIO_RDMA_WC_SUCCESS) {
		log_warnx("cm: QP1 send completed with %s (%u)",
			  gv_wc_status_str(wc.status), wc.status);
		return -EIO;
	}
	return 0;
}

static int qp1_recv(void *arg, struct cm_peer *from, uint8_t mad[CM_MAD_LEN],
		    size_t *len, int timeout_ms)
{
	struct reason why = { "" };
	struct cm_qp1 *t = arg;
	uint8_t dgid[16];
	struct gv_wc wc;
	uint8_t *s;
	int r;

	for (;;) {
		r = gv_wait_wc(t->recv_cq, timeout_ms, &wc);
		if (r <= 0)
			return r < 0 ? r : -EAGAIN;
		if (wc.wr_id >= CM_QP1_RECV_DEPTH)
			return -EPROTO; /* not a wr_id we posted */
		s = slot(t, (uint32_t)wc.wr_id);
		r = -EINVAL;
		if (wc.status != VIRTIO_RDMA_WC_SUCCESS)
			reason_fail(&why, r, "status %s",
				    gv_wc_status_str(wc.status));
		else if (!(wc.wc_flags & VIRTIO_RDMA_WC_GRH))
			reason_fail(&why, r, "no GRH");
		else if (wc.byte_len < CM_GRH_LEN || wc.byte_len > CM_QP1_SLOT)
			reason_fail(&why, r, "%u bytes", wc.byte_len);
		else
			r = cm_grh_parse(s, from->gid, dgid, &from->hop_limit,
					 &from->traffic_class,
					 &from->flow_label, &why);
		if (!r) {
			from->qpn = wc.src_qp;
			*len = wc.byte_len - CM_GRH_LEN;
			memcpy(mad, s + CM_GRH_LEN, *len);
		}
		/* the copy is ours: the slot goes back to the device */
		if (post_recv(t, (uint32_t)wc.wr_id))
			log_warnx("cm: cannot repost a QP1 receive");
		if (!r)
			return 0;
		t->bad_recv++;
		log_warnx("cm: dropped a QP1 receive: %s", why.msg);
		timeout_ms = 0;
	}
}

const struct cm_transport_ops cm_qp1_ops = {
	.send_mad = qp1_send,
	.recv_mad = qp1_recv,
};
