/* SPDX-License-Identifier: MIT */
/*
 * What a transport of the guest verbs implements (the driver + provider of
 * one device type), and the helpers guest/verbs.c shares with them: guest
 * buffers and the pool of page-table pages. Internal to guest/.
 */
#ifndef RDMAGATE_GUEST_VERBS_TRANSPORT_H
#define RDMAGATE_GUEST_VERBS_TRANSPORT_H

#include "guest/verbs.h"

#define GV_PAGE 4096u

/*
 * One entry per verb; gv_*() in guest/verbs.c checks arguments that do not
 * depend on the device and dispatches here. Every entry is set.
 */
struct gv_transport_ops {
	const char *name;
	/* prints what only this transport knows (gv_describe()) */
	void (*describe)(struct gv_context *ctx, FILE *f);
	/* ctx->timeout_ms and ctx->scatter are set; sets ctx->ram, attr */
	int (*open)(struct gv_context *ctx, const char *socket,
		    const struct gv_opts *o);
	/* stops the device and releases the transport (not the buffers) */
	void (*close)(struct gv_context *ctx);
	int (*query_port)(struct gv_context *ctx,
			  struct virtio_rdma_port_attr *ret);
	int (*query_pkey)(struct gv_context *ctx, uint16_t index,
			  uint16_t *ret_pkey);
	int (*add_gid)(struct gv_context *ctx, uint16_t index,
		       const uint8_t gid[16], uint32_t gid_type);
	int (*del_gid)(struct gv_context *ctx, uint16_t index);
	int (*alloc_pd)(struct gv_context *ctx, uint32_t *ret_pdn);
	int (*dealloc_pd)(struct gv_pd *pd);
	/* fill mr->mrn, lkey, rkey (and tp) */
	int (*reg_mr)(struct gv_mr *mr, struct gv_buf *b, uint32_t access);
	int (*get_dma_mr)(struct gv_mr *mr, uint32_t access);
	int (*dereg_mr)(struct gv_mr *mr);
	int (*create_cq)(struct gv_context *ctx, uint32_t cqe,
			 struct gv_cq **ret_cq);
	int (*destroy_cq)(struct gv_cq *cq);
	int (*poll_cq)(struct gv_cq *cq, int n, struct gv_wc *wc);
	int (*req_notify_cq)(struct gv_cq *cq, bool solicited_only);
	int (*get_cq_event)(struct gv_cq *cq, int timeout_ms);
	int (*create_qp)(struct gv_pd *pd, const struct gv_qp_init_attr *attr,
			 struct gv_qp **ret_qp);
	int (*modify_qp)(struct gv_qp *qp,
			 const struct virtio_rdma_qp_attr *attr,
			 uint32_t attr_mask);
	int (*query_qp)(struct gv_qp *qp, uint32_t attr_mask,
			struct virtio_rdma_qp_attr *ret);
	int (*destroy_qp)(struct gv_qp *qp);
	int (*create_srq)(struct gv_pd *pd, uint32_t max_wr, uint32_t max_sge,
			  struct gv_srq **ret_srq);
	int (*destroy_srq)(struct gv_srq *srq);
	/* ah->pd and ah->attr are set and checked */
	int (*create_ah)(struct gv_ah *ah);
	int (*post_send)(struct gv_qp *qp, struct gv_send_wr *wr,
			 struct gv_send_wr **bad);
	int (*post_recv)(struct gv_qp *qp, struct gv_recv_wr *wr,
			 struct gv_recv_wr **bad);
	int (*post_srq_recv)(struct gv_srq *srq, struct gv_recv_wr *wr,
			     struct gv_recv_wr **bad);
};

extern const struct gv_transport_ops gv_virtio_rdma_ops;
extern const struct gv_transport_ops gv_pvrdma_ops;

/*
 * Guest RAM as both transports lay it out: a low slot at GV_LOW_GPA (rings,
 * queue state, page tables) and a data slot at GV_DATA_GPA above a hole
 * (application buffers). ctx->ram must be set and empty.
 */
int gv_layout_ram(struct gv_context *ctx, const struct gv_opts *o);

/* A gv_alloc_buf() buffer: its pages' GPAs, in application order. */
struct gv_buf {
	void *addr;
	size_t len;
	uint32_t npages;
	uint64_t *gpa; /* per page */
	struct gv_buf *next;
};

/* The buffer holding [addr, addr + len), or NULL. */
struct gv_buf *gv_find_buf(struct gv_context *ctx, const void *addr,
			   size_t len);

/*
 * A zeroed page of the low slot for page tables, from a pool that keeps
 * freed pages (the bump allocator of guest RAM never frees).
 */
int gv_pt_get(struct gv_context *ctx, uint64_t *ret_gpa);
void gv_pt_put(struct gv_context *ctx, uint64_t gpa);

static inline uint64_t gv_round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

#endif
