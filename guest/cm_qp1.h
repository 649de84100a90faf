/* SPDX-License-Identifier: MIT */
/*
 * The CM transport on the simulated device's QP1, as a guest kernel's
 * ib_mad drives it: a GSI QP (CREATE_QP of type GSI, which the device
 * answers with QPN 1), Q_Key 0x80010000, UD sends with an address handle
 * towards the peer's GID and remote QPN 1, receives of 256-byte MADs
 * behind the 40-byte GRH area. Run by rdmagate-guest cm_pingpong.
 *
 * The worker emulates QP1 over its channel to rdmagate-mux; a worker
 * without a mux completes the send with an error, which cm_qp1_ops
 * reports (the MAD counts as lost).
 */
#ifndef RDMAGATE_GUEST_CM_QP1_H
#define RDMAGATE_GUEST_CM_QP1_H

#include "guest/cm_conn.h"
#include "guest/verbs.h"

#define CM_QP1_RECV_DEPTH 32
#define CM_QP1_SLOT	  (CM_GRH_LEN + CM_MAD_LEN) /* 296 bytes */

struct cm_qp1 {
	struct gv_context *ctx;
	struct gv_pd *pd;
	struct gv_cq *send_cq, *recv_cq;
	struct gv_qp *qp;
	struct gv_mr *mr;
	uint8_t *buf; /* CM_QP1_RECV_DEPTH receive slots, one send slot */
	struct gv_ah *ah;
	struct cm_peer ah_peer; /* what ah points at */
	uint8_t sgid_index;
	int timeout_ms;		/* for a send's completion */
	unsigned long bad_recv; /* receives dropped (status, GRH, length) */
};

/* The GSI QP, its CQs and buffers, receives posted. 0 or -errno. */
int cm_qp1_open(struct cm_qp1 *t, struct gv_context *ctx, struct gv_pd *pd,
		uint8_t sgid_index);
void cm_qp1_close(struct cm_qp1 *t);

/* send_mad/recv_mad with arg = struct cm_qp1 *. */
extern const struct cm_transport_ops cm_qp1_ops;

#endif
