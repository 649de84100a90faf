/* SPDX-License-Identifier: MIT */
/*
 * Pure decoders of PVRDMA work-queue elements (the provider's
 * struct pvrdma_sq_wqe_hdr / pvrdma_rq_wqe_hdr + SGEs) into the backend's
 * neutral work requests, and the encoder of struct pvrdma_cqe from the
 * backend's completions. No I/O, no device state beyond the limits the
 * caller passes. The caller passes its private copy of one WQE slot.
 */
#ifndef RDMAGATE_WORKER_PVRDMA_WQE_H
#define RDMAGATE_WORKER_PVRDMA_WQE_H

#include <stddef.h>
#include <stdint.h>

#include "common/pvrdma_abi.h"
#include "worker/backend/backend.h"
#include "common/reason.h"

/* The QP's fixed properties a send WQE is checked against. */
struct pvrdma_sq_limits {
	enum be_qp_type qp_type;
	uint32_t max_send_sge; /* the QP's, <= BE_MAX_SGE */
	uint32_t gid_tbl_len;  /* UD address vectors name a guest GID */
};

/* A decoded send: wr.sge points at sge[] of the same struct. */
struct pvrdma_send {
	struct be_send_wr wr;
	struct be_sge sge[BE_MAX_SGE];
};

struct pvrdma_recv {
	struct be_recv_wr wr;
	struct be_sge sge[BE_MAX_SGE];
};

/*
 * Decodes the send WQE in buf (len bytes: the QP's WQE slot). Returns 0
 * and fills *ret (wr.cookie is the guest's wr_id), or -EINVAL (num_sge
 * over the QP's limit or the slot, bad address vector) / -EOPNOTSUPP
 * (opcode or flag not offered, or not allowed on this QP type) with *why
 * filled; *ret is untouched on failure except that its wr_id is in
 * *ret_wr_id whenever the header could be read (for the error CQE).
 */
int pvrdma_sq_wqe_decode(const void *buf, size_t len,
			 const struct pvrdma_sq_limits *lim,
			 struct pvrdma_send *ret, uint64_t *ret_wr_id,
			 struct reason *why);

/* The same for a receive WQE (RQ or SRQ) with the queue's max_sge. */
int pvrdma_rq_wqe_decode(const void *buf, size_t len, uint32_t max_sge,
			 struct pvrdma_recv *ret, uint64_t *ret_wr_id,
			 struct reason *why);

/*
 * Encodes a completion as the guest's CQE. wr_id is the guest's,
 * qp_handle the QP's device handle (the driver's and provider's table
 * index). Returns 0, or -EINVAL for a value outside both ABIs (a worker
 * bug; *cqe untouched).
 */
int pvrdma_cqe_encode(const struct be_wc *wc, uint64_t wr_id,
		      uint32_t qp_handle, struct pvrdma_cqe *cqe);

/* IBV_WC_* status of a WQE refused before it reached the backend. */
enum ibv_wc_status pvrdma_refusal_status(int err);

/* The ibv_wc_opcode a send opcode completes with (for refused WQEs). */
enum ibv_wc_opcode pvrdma_send_wc_opcode(uint32_t pvrdma_opcode);

#endif
