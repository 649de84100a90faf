/* SPDX-License-Identifier: MIT */
/*
 * Pure decoders of virtio-rdma work-queue elements (send and receive, as
 * posted on SQ/RQ virtqueues, common/virtio_rdma.h) into validated typed
 * work requests, and the encoder of completion elements. No I/O, no
 * device state beyond the per-QP limits the caller passes in: keys,
 * addresses and the QP's state are checked by the worker (or by the host
 * HCA, since rdmagate passes host keys through).
 *
 * The caller must pass a private copy of the element: the decoders read
 * every byte once but do not guard against concurrent change, and the
 * decoded inline payload points into that copy.
 */
#ifndef RDMAGATE_WORKER_VIRTIO_RDMA_WQE_H
#define RDMAGATE_WORKER_VIRTIO_RDMA_WQE_H

#include <stddef.h>
#include <stdint.h>

#include "common/virtio_rdma.h"
#include "common/reason.h"

/* The QP's fixed properties a send element is checked against. */
struct rdma_sq_limits {
	uint8_t qp_type;       /* enum virtio_rdma_qp_type */
	uint32_t max_send_sge; /* capped at VIRTIO_RDMA_MAX_SGE */
	uint32_t max_inline;   /* bytes of inline payload */
};

/* A validated send work request. */
struct rdma_send_wr {
	uint64_t wr_id;
	uint32_t opcode;     /* enum virtio_rdma_wr_opcode */
	uint32_t send_flags; /* VIRTIO_RDMA_SEND_* */
	uint32_t imm_data;   /* verbatim (network order); 0 unless *_WITH_IMM */
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
		} rdma;
		struct {
			uint64_t remote_addr;
			uint64_t compare_add;
			uint64_t swap;
			uint32_t rkey;
		} atomic;
		struct {
			uint32_t remote_qpn;
			uint32_t remote_qkey;
			struct virtio_rdma_av av;
		} ud;
	} wr;
	uint64_t total_len; /* message bytes: sum of SGE lengths or inline */
	uint32_t num_sge;   /* 0 with SEND_INLINE */
	struct virtio_rdma_sge sge[VIRTIO_RDMA_MAX_SGE];
	const uint8_t *inline_data; /* into the caller's buffer, or NULL */
	uint32_t inline_len;
};

/* A validated receive work request (RQ or SRQ). */
struct rdma_recv_wr {
	uint64_t wr_id;
	uint64_t total_len;
	uint32_t num_sge;
	struct virtio_rdma_sge sge[VIRTIO_RDMA_MAX_SGE];
};

/*
 * Decodes a send element of desc_len bytes at buf (the descriptor length
 * the guest gave; nothing past it is read).
 * Returns 0 and fills *ret_wr, or -EINVAL (malformed) / -EOPNOTSUPP
 * (opcode or flag rdmagate refuses, or not allowed on this QP type) with
 * *why filled and *ret_wr untouched.
 */
int rdma_sq_wqe_decode(const void *buf, size_t desc_len,
		       const struct rdma_sq_limits *lim,
		       struct rdma_send_wr *ret_wr, struct reason *why);

/*
 * Decodes a receive element (RQ or SRQ) likewise; max_recv_sge is the
 * QP's (or SRQ's) limit, capped at VIRTIO_RDMA_MAX_SGE.
 */
int rdma_rq_wqe_decode(const void *buf, size_t desc_len, uint32_t max_recv_sge,
		       struct rdma_recv_wr *ret_wr, struct reason *why);

/* "RDMA_WRITE"; "UNKNOWN" for other values. */
const char *rdma_wr_opcode_name(uint32_t opcode);

/* A completion to report, in the worker's terms. */
struct rdma_completion {
	uint64_t wr_id;
	enum virtio_rdma_wc_status status;
	enum virtio_rdma_wc_opcode opcode;
	uint32_t vendor_err;
	uint32_t byte_len;
	uint32_t imm_data; /* network order, verbatim */
	uint32_t qp_num;
	uint32_t src_qp;
	uint32_t wc_flags; /* VIRTIO_RDMA_WC_* flags */
	uint16_t pkey_index;
	uint16_t slid;
	uint8_t sl;
	uint8_t dlid_path_bits;
	uint8_t port_num;
};

/*
 * Encodes a completion as the 48-byte CQE into buf (len bytes).
 * Returns the bytes written (sizeof(struct virtio_rdma_cqe)), -ENOSPC if
 * len is too small, or -EINVAL if the completion has a status, opcode or
 * flag outside the ABI (a worker bug; nothing is written).
 */
int rdma_cqe_encode(const struct rdma_completion *c, void *buf, size_t len);

#endif
