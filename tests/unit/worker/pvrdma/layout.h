/* SPDX-License-Identifier: MIT */
/*
 * The uapi layout facts compared between common/pvrdma_abi.h and the
 * kernel's <rdma/vmw_pvrdma-abi.h>: each translation unit fills one table
 * with the same list, so a field that moves in either header fails.
 */
#ifndef RDMAGATE_TESTS_UNIT_PVRDMA_LAYOUT_H
#define RDMAGATE_TESTS_UNIT_PVRDMA_LAYOUT_H

#include <stddef.h>

#define PVRDMA_LAYOUT_LIST(X)                                                  \
	X(sizeof(struct pvrdma_sq_wqe_hdr))                                    \
	X(offsetof(struct pvrdma_sq_wqe_hdr, opcode))                          \
	X(offsetof(struct pvrdma_sq_wqe_hdr, ex))                              \
	X(offsetof(struct pvrdma_sq_wqe_hdr, wr.rdma.rkey))                    \
	X(offsetof(struct pvrdma_sq_wqe_hdr, wr.atomic.compare_add))           \
	X(offsetof(struct pvrdma_sq_wqe_hdr, wr.atomic.swap))                  \
	X(offsetof(struct pvrdma_sq_wqe_hdr, wr.atomic.rkey))                  \
	X(offsetof(struct pvrdma_sq_wqe_hdr, wr.ud.remote_qkey))               \
	X(offsetof(struct pvrdma_sq_wqe_hdr, wr.ud.av))                        \
	X(offsetof(struct pvrdma_sq_wqe_hdr, wr.fast_reg.rkey))                \
	X(sizeof(struct pvrdma_rq_wqe_hdr))                                    \
	X(sizeof(struct pvrdma_sge))                                           \
	X(offsetof(struct pvrdma_sge, lkey))                                   \
	X(sizeof(struct pvrdma_av))                                            \
	X(offsetof(struct pvrdma_av, dgid))                                    \
	X(offsetof(struct pvrdma_av, gid_index))                               \
	X(offsetof(struct pvrdma_av, dmac))                                    \
	X(sizeof(struct pvrdma_cqe))                                           \
	X(offsetof(struct pvrdma_cqe, qp))                                     \
	X(offsetof(struct pvrdma_cqe, status))                                 \
	X(offsetof(struct pvrdma_cqe, imm_data))                               \
	X(offsetof(struct pvrdma_cqe, src_qp))                                 \
	X(offsetof(struct pvrdma_cqe, wc_flags))                               \
	X(offsetof(struct pvrdma_cqe, pkey_index))                             \
	X(offsetof(struct pvrdma_cqe, sl))                                     \
	X(offsetof(struct pvrdma_cqe, smac))                                   \
	X(sizeof(struct pvrdma_create_qp_resp))                                \
	X(offsetof(struct pvrdma_create_qp_resp, qp_handle))                   \
	X(PVRDMA_UAR_HANDLE_MASK)                                              \
	X(PVRDMA_UAR_QP_OFFSET)                                                \
	X((unsigned)PVRDMA_UAR_QP_SEND)                                        \
	X((unsigned)PVRDMA_UAR_QP_RECV)                                        \
	X(PVRDMA_UAR_CQ_OFFSET)                                                \
	X((unsigned)PVRDMA_UAR_CQ_ARM_SOL)                                     \
	X((unsigned)PVRDMA_UAR_CQ_ARM)                                         \
	X((unsigned)PVRDMA_UAR_CQ_POLL)                                        \
	X(PVRDMA_UAR_SRQ_OFFSET)                                               \
	X((unsigned)PVRDMA_UAR_SRQ_RECV)                                       \
	X(PVRDMA_WR_RDMA_READ)                                                 \
	X(PVRDMA_WR_ATOMIC_FETCH_AND_ADD)                                      \
	X(PVRDMA_WR_BIND_MW)                                                   \
	X(PVRDMA_WR_ERROR)                                                     \
	X(PVRDMA_WC_GENERAL_ERR)                                               \
	X(PVRDMA_WC_MASKED_FETCH_ADD)                                          \
	X(PVRDMA_WC_RECV)                                                      \
	X(PVRDMA_WC_RECV_RDMA_WITH_IMM)                                        \
	X(PVRDMA_WC_WITH_VLAN)                                                 \
	X(PVRDMA_UVERBS_ABI_VERSION)

#define PVRDMA_LAYOUT_ENTRY(e) (size_t)(e),

extern const size_t pvrdma_layout_uapi[];
extern const size_t pvrdma_layout_uapi_count;

#endif
