/* SPDX-License-Identifier: MIT */
/*
 * The pure parts of the guest simulator's PVRDMA provider and kernel
 * verbs (guest/pvrdma_prov.c): ring indices, WQE encoders, the CQE
 * decoder and the attribute translations between the gv API (IB
 * numbering) and common/pvrdma_abi.h. No I/O: unit-tested.
 */
#ifndef RDMAGATE_GUEST_PVRDMA_WQE_H
#define RDMAGATE_GUEST_PVRDMA_WQE_H

#include <stdbool.h>

#include "common/pvrdma_abi.h"
#include "guest/verbs.h"

/*
 * Ring indices as the driver and provider compute them (pvrdma_ring.h):
 * values in [0, 2n), the top bit a wrap bit. Pure.
 */
bool pvrdma_idx_valid(uint32_t idx, uint32_t n);
/* 1: room to produce (*ret_tail: slot), 0: full, -1: invalid indices */
int pvrdma_ring_has_space(const struct pvrdma_ring *r, uint32_t n,
			  uint32_t *ret_tail);
/* 1: an entry to consume (*ret_head: slot), 0: empty, -1: invalid */
int pvrdma_ring_has_data(const struct pvrdma_ring *r, uint32_t n,
			 uint32_t *ret_head);
/* Advances a producer or consumer index (a release store). */
void pvrdma_ring_inc(int32_t *idx, uint32_t n);

/* A power of two >= v (>= 1), as the provider's align_next_power2(). */
uint32_t pvrdma_pow2(uint32_t v);

/* WQE slot sizes of the provider (a power of two). */
uint32_t pvrdma_sq_wqe_size(uint32_t max_sge);
uint32_t pvrdma_rq_wqe_size(uint32_t max_sge);

/* gv (IB numbering) -> PVRDMA; -EINVAL for what PVRDMA cannot carry. */
int pvrdma_wr_opcode(uint32_t gv_opcode);
int pvrdma_qp_type(uint8_t gv_qp_type);

/*
 * Writes one send WQE into slot (wqe_size bytes): header, then the SGEs,
 * as pvrdma_post_send() does. av is the AH's address vector for UD/GSI.
 * -EINVAL: opcode or SGE count refused (no inline data on PVRDMA: the
 * driver reports max_inline_data 0).
 */
int pvrdma_encode_send(const struct gv_send_wr *wr, uint8_t gv_qp_type,
		       const struct pvrdma_av *av, uint32_t max_sge, void *slot,
		       size_t wqe_size);
/* One receive WQE, as pvrdma_post_recv() and _post_srq_recv() do. */
int pvrdma_encode_recv(const struct gv_recv_wr *wr, uint32_t max_sge,
		       void *slot, size_t wqe_size);
/* A CQE copied out of guest RAM; qp_num is the QP's number (not handle). */
void pvrdma_decode_cqe(const struct pvrdma_cqe *c, uint32_t qp_num,
		       struct gv_wc *ret);

/* The address vector pvrdma_create_ah() builds. */
void pvrdma_fill_av(const struct gv_ah_attr *a, uint32_t pd_handle,
		    struct pvrdma_av *ret);

/* MODIFY_QP / QUERY_QP attributes both ways (ib <-> pvrdma helpers). */
void pvrdma_qp_attr_to_dev(const struct virtio_rdma_qp_attr *a,
			   struct pvrdma_qp_attr *ret);
void pvrdma_qp_attr_from_dev(const struct pvrdma_qp_attr *p,
			     struct virtio_rdma_qp_attr *ret);
/* Port attributes of QUERY_PORT in the gv (virtio-rdma) layout. */
void pvrdma_port_attr_from_dev(const struct pvrdma_port_attr *p,
			       struct virtio_rdma_port_attr *ret);

#endif
