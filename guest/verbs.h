/* SPDX-License-Identifier: MIT */
/*
 * A verbs-like API over the guest simulator: plays a guest kernel driver
 * and its user-space provider. Names mirror libibverbs (gv_alloc_pd ~
 * ibv_alloc_pd, ...) so that tools read like the rdma-core examples. The
 * device behind a context is a transport chosen at gv_open() (an ops table,
 * guest/verbs_transport.h): virtio-rdma Profile A with rdmagate's deltas
 * (common/virtio_rdma.h, docs/virtio-rdma-abi.md) over vhost-user, or
 * VMware PVRDMA over vfio-user (what Linux's vmw_pvrdma and rdma-core's
 * provider do). The API speaks the virtio-rdma enums (IB numbering) on
 * every transport; a transport translates where its ABI differs.
 *
 * Memory model. Guest RAM has a low slot at GPA 0 (rings, work-queue
 * element buffers, CQE buffers, MR page tables, the control buffer) and a
 * data slot above a hole at 4 GiB. gv_alloc_buf() takes guest-physical
 * pages from the data slot and maps them at one contiguous address of this
 * process, which plays the guest application's virtual address: it is the
 * IOVA given to REG_USER_MR and used in SGEs, exactly as ibv_reg_mr() uses
 * a VA. With GV_BUF_SCATTER (or gv_opts.scatter) the pages are placed out
 * of order physically, so the worker must honour the page table.
 *
 * Functions return 0 (or a count) or a negative errno; a control command
 * the device refuses returns minus its status byte (rdmagate writes the
 * positive errno, delta 7). One thread drives a context.
 */
#ifndef RDMAGATE_GUEST_VERBS_H
#define RDMAGATE_GUEST_VERBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/virtio_rdma.h"
#include "guest/guest_dev.h"

#define GV_LOW_GPA  0ull
#define GV_DATA_GPA (4ull << 30)

enum gv_transport {
	GV_TRANSPORT_VIRTIO_RDMA = 0, /* vhost-user, virtio-rdma Profile A */
	GV_TRANSPORT_PVRDMA,	      /* vfio-user, VMware PVRDMA */
};

struct gv_opts {
	enum gv_transport transport;
	int timeout_ms;	    /* per control command; 0: 5000 */
	uint64_t low_size;  /* rings, WQE/CQE buffers, page tables; 0: 48 MiB */
	uint64_t data_size; /* application buffers; 0: 64 MiB */
	bool scatter;	    /* every gv_alloc_buf() scatters its pages */
	bool ctrl_irq;	    /* wait for control answers on interrupts,
			     * not by polling as the guest kernel does */
};

struct gv_buf;
struct vfio_user_client;
struct gv_transport_ops;

/* What the device reports, whichever the transport (IB meanings). */
struct gv_device_attr {
	uint64_t sys_image_guid;
	uint32_t vendor_id, vendor_part_id, hw_ver;
	uint32_t max_qp, max_qp_wr, max_send_sge, max_recv_sge;
	uint32_t max_cq, max_cqe, max_mr, max_pd, max_ah;
	uint32_t max_srq, max_srq_wr, max_srq_sge;
	uint32_t max_qp_rd_atom, max_qp_init_rd_atom, atomic_cap;
	uint16_t max_pkeys, gid_tbl_len;
	uint8_t local_ca_ack_delay, phys_port_cnt;
};

struct gv_context {
	const struct gv_transport_ops *ops;
	struct guest_ram *ram; /* the transport's guest RAM */
	struct gv_device_attr attr;
	int timeout_ms;
	bool scatter;
	/* the virtio-rdma transport (guest/verbs_virtio.c) */
	struct guest_dev dev;
	struct virtio_rdma_config cfg;
	struct guest_vq *ctrl;
	uint64_t cmd_gpa; /* one page: header, request, status, response */
	uint8_t *cmd;
	bool indirect;
	/* any other transport's state (guest/pvrdma_*.c) */
	void *tp;
	/* buffers and page-table pages in guest RAM (guest/verbs.c) */
	int data_fd;	   /* memfd of the data slot */
	uint64_t data_off; /* offset of the data slot in that memfd */
	unsigned int data_slot;
	uint64_t *pt_free; /* free page-table pages (GPAs) */
	size_t pt_nfree, pt_cap;
	struct gv_buf *bufs;
	uint8_t gid[VIRTIO_RDMA_GID_TBL_LEN][16];
	uint8_t gid_type[VIRTIO_RDMA_GID_TBL_LEN]; /* 0: not set */
	unsigned long commands;			   /* control commands sent */
};

struct gv_pd {
	struct gv_context *ctx;
	uint32_t pdn;
};

struct gv_mr {
	struct gv_pd *pd;
	uint32_t mrn, lkey, rkey;
	void *tp; /* transport state */
	void *addr;
	size_t length;
};

struct gv_cq {
	struct gv_context *ctx;
	uint32_t cqn, cqe;
	struct guest_vq *vq;
	uint64_t buf_gpa; /* cqe buffers of 48 bytes */
	uint8_t *buf;
	unsigned long events;
	void *tp; /* transport state (vq and buf: virtio-rdma) */
};

/* A send or receive queue: a virtqueue plus a buffer of element slots. */
struct gv_wq {
	struct guest_vq *vq;
	uint64_t buf_gpa;
	uint8_t *buf;
	uint32_t stride, nslots, nfree;
	uint32_t *free; /* stack of free slot indexes */
};

struct gv_srq {
	struct gv_context *ctx;
	struct gv_pd *pd;
	uint32_t handle, slot, max_wr, max_sge;
	struct gv_wq rq;
	void *tp; /* transport state (slot and rq: virtio-rdma) */
};

struct gv_qp_init_attr {
	struct gv_cq *send_cq, *recv_cq;
	struct gv_srq *srq; /* receives through this SRQ (delta 9) */
	uint32_t max_send_wr, max_recv_wr;
	uint32_t max_send_sge, max_recv_sge;
	uint32_t max_inline_data;
	uint8_t qp_type; /* enum virtio_rdma_qp_type */
	bool sq_sig_all; /* every send completes (else SIGNALED only) */
};

struct gv_qp {
	struct gv_context *ctx;
	struct gv_pd *pd;
	uint32_t qp_num; /* host QPN (delta 1): what peers target */
	uint32_t slot;
	uint8_t qp_type;
	struct gv_qp_init_attr init;
	struct gv_wq sq, rq;
	void *tp; /* transport state (slot, sq and rq: virtio-rdma) */
};

struct gv_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

/* Address handle: local on both transports, each UD send carries the AV. */
struct gv_ah_attr {
	uint8_t dgid[16];
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint32_t flow_label;
	uint8_t sl;
};

struct gv_ah {
	struct gv_pd *pd;
	struct gv_ah_attr attr;
	struct virtio_rdma_av av; /* as virtio-rdma encodes it */
};

struct gv_send_wr {
	uint64_t wr_id;
	struct gv_send_wr *next;
	struct gv_sge *sg_list;
	uint32_t num_sge;
	uint32_t opcode;     /* enum virtio_rdma_wr_opcode */
	uint32_t send_flags; /* VIRTIO_RDMA_SEND_* */
	uint32_t imm_data;   /* network order */
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
			struct gv_ah *ah;
			uint32_t remote_qpn;
			uint32_t remote_qkey;
		} ud;
	} wr;
};

struct gv_recv_wr {
	uint64_t wr_id;
	struct gv_recv_wr *next;
	struct gv_sge *sg_list;
	uint32_t num_sge;
};

/* The opcode carries a remote address and rkey (RDMA WRITE/READ). */
static inline bool gv_wr_is_rdma(uint32_t op)
{
	return op == VIRTIO_RDMA_WR_RDMA_WRITE ||
	       op == VIRTIO_RDMA_WR_RDMA_WRITE_WITH_IMM ||
	       op == VIRTIO_RDMA_WR_RDMA_READ;
}

/* The opcode is one of the two atomics. */
static inline bool gv_wr_is_atomic(uint32_t op)
{
	return op == VIRTIO_RDMA_WR_ATOMIC_CMP_AND_SWP ||
	       op == VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD;
}

/* A decoded completion (the 48-byte CQE). */
struct gv_wc {
	uint64_t wr_id;
	uint32_t status; /* enum virtio_rdma_wc_status */
	uint32_t opcode; /* enum virtio_rdma_wc_opcode */
	uint32_t vendor_err;
	uint32_t byte_len;
	uint32_t imm_data;
	uint32_t qp_num;
	uint32_t src_qp;
	uint32_t wc_flags;
	uint16_t pkey_index;
	uint16_t slid;
	uint8_t sl;
	uint8_t dlid_path_bits;
	uint8_t port_num;
};

/* ---- device ---- */

/*
 * Connects to the worker's socket and brings the device up as
 * opts->transport's driver would. virtio-rdma: the vhost-user handshake,
 * the 195-byte config (rg_magic and rg_abi_version must match: -EPROTO),
 * guest RAM, the control queue. PVRDMA: guest/pvrdma_drv.h.
 */
int gv_open(const char *socket, const struct gv_opts *opts,
	    struct gv_context **ret_ctx);
/* Stops the device (as a VMM would) and frees everything. */
void gv_close(struct gv_context *ctx);
/* "virtio-rdma" or "pvrdma". */
const char *gv_transport_name(const struct gv_context *ctx);
/* The names, by enum gv_transport ("--transport" values). */
extern const char *const gv_transport_names[2];
/* Parses a transport name: 0 or -EINVAL. */
int gv_parse_transport(const char *name, enum gv_transport *ret);
/* Prints what the device reported (attributes, transport details). */
void gv_describe(struct gv_context *ctx, FILE *f);

/* virtio-rdma only: one control command, the chain of Profile A §4.5. */
int gv_command(struct gv_context *ctx, uint8_t code, const void *req,
	       uint32_t req_len, void *rsp, uint32_t rsp_len);

int gv_query_port(struct gv_context *ctx, struct virtio_rdma_port_attr *ret);
int gv_query_pkey(struct gv_context *ctx, uint16_t index, uint16_t *ret_pkey);
/*
 * ADD_GID / DEL_GID (PVRDMA: CREATE_BIND / DESTROY_BIND); the context
 * remembers the table for gv_query_gid().
 */
int gv_add_gid(struct gv_context *ctx, uint16_t index, const uint8_t gid[16],
	       uint32_t gid_type);
int gv_del_gid(struct gv_context *ctx, uint16_t index);
int gv_query_gid(struct gv_context *ctx, uint16_t index, uint8_t ret_gid[16]);

/* ---- memory ---- */

#define GV_BUF_SCATTER	  (1u << 0) /* pages out of physical order */
#define GV_BUF_CONTIGUOUS (1u << 1) /* never scatter (overrides opts) */

/*
 * A page-aligned buffer of `size` bytes of guest RAM, mapped contiguously
 * in this process (the "guest application VA"). NULL on failure (errno).
 */
void *gv_alloc_buf(struct gv_context *ctx, size_t size, unsigned int flags);
void gv_free_buf(struct gv_context *ctx, void *addr);
/*
 * gv_alloc_buf() takes pages from guest RAM slot `slot` from now on (a
 * slot the caller added to ctx->ram, to map and unmap it on its own).
 * 0 or -EINVAL.
 */
int gv_set_data_slot(struct gv_context *ctx, unsigned int slot);
/* Guest-physical address of a byte of a gv_alloc_buf() buffer, or 0. */
uint64_t gv_buf_gpa(struct gv_context *ctx, const void *addr);
/*
 * PVRDMA only: the context's vfio-user connection, for tests that play
 * the VMM's part too (DMA_UNMAP, a read-only DMA_MAP, DEVICE_RESET);
 * NULL on another transport.
 */
struct vfio_user_client *gv_pvrdma_client(struct gv_context *ctx);

int gv_alloc_pd(struct gv_context *ctx, struct gv_pd **ret_pd);
int gv_dealloc_pd(struct gv_pd *pd);

/*
 * REG_USER_MR of [addr, addr + length) inside one gv_alloc_buf() buffer:
 * builds the two-level page table in guest RAM, sends it, frees the table.
 */
int gv_reg_mr(struct gv_pd *pd, void *addr, size_t length, uint32_t access,
	      struct gv_mr **ret_mr);
/* GET_DMA_MR: SGEs with its lkey carry GPAs. */
int gv_get_dma_mr(struct gv_pd *pd, uint32_t access, struct gv_mr **ret_mr);
int gv_dereg_mr(struct gv_mr *mr);

/*
 * Fills the level-1 page at l1 and the level-2 pages l2[0..n) (n =
 * ceil(npages / 512)) with the GPAs of `pages`, through `ram`. Pure apart
 * from the writes; exposed for tests.
 */
int gv_build_page_table(struct guest_ram *ram, uint64_t l1, const uint64_t *l2,
			const uint64_t *pages, uint32_t npages);

/* ---- completion queues ---- */

int gv_create_cq(struct gv_context *ctx, uint32_t cqe, struct gv_cq **ret_cq);
int gv_destroy_cq(struct gv_cq *cq);
/* Up to n completions into wc[]; returns how many (0: none) or -errno. */
int gv_poll_cq(struct gv_cq *cq, int n, struct gv_wc *wc);
/* REQ_NOTIFY_CQ: the next completion (or the next solicited one). */
int gv_req_notify_cq(struct gv_cq *cq, bool solicited_only);
/* Waits for the CQ's interrupt (its call eventfd). 0, -ETIMEDOUT. */
int gv_get_cq_event(struct gv_cq *cq, int timeout_ms);
/*
 * One completion within timeout_ms: polls, and sleeps on the CQ's
 * interrupt between polls (arming it first). 1, 0 (none in time) or
 * -errno (-ENOTCONN: the device is gone).
 */
int gv_wait_wc(struct gv_cq *cq, int timeout_ms, struct gv_wc *wc);

/* ---- queue pairs and shared receive queues ---- */

int gv_create_qp(struct gv_pd *pd, const struct gv_qp_init_attr *attr,
		 struct gv_qp **ret_qp);
int gv_modify_qp(struct gv_qp *qp, const struct virtio_rdma_qp_attr *attr,
		 uint32_t attr_mask);
int gv_query_qp(struct gv_qp *qp, uint32_t attr_mask,
		struct virtio_rdma_qp_attr *ret);
int gv_destroy_qp(struct gv_qp *qp);

int gv_create_srq(struct gv_pd *pd, uint32_t max_wr, uint32_t max_sge,
		  struct gv_srq **ret_srq);
int gv_destroy_srq(struct gv_srq *srq);

int gv_create_ah(struct gv_pd *pd, const struct gv_ah_attr *attr,
		 struct gv_ah **ret_ah);
void gv_destroy_ah(struct gv_ah *ah);

/* Post a list of work requests; on failure *bad is the first not posted. */
int gv_post_send(struct gv_qp *qp, struct gv_send_wr *wr,
		 struct gv_send_wr **bad);
int gv_post_recv(struct gv_qp *qp, struct gv_recv_wr *wr,
		 struct gv_recv_wr **bad);
int gv_post_srq_recv(struct gv_srq *srq, struct gv_recv_wr *wr,
		     struct gv_recv_wr **bad);

/*
 * Element encoders (pure): write the send element (88-byte header, then
 * SGEs or, with SEND_INLINE, the payload read from the SGE addresses as
 * pointers) or the receive element into buf. Return the element's length
 * or -EINVAL / -E2BIG (too many SGEs, inline over max_inline or over cap).
 */
int gv_encode_send(const struct gv_send_wr *wr, uint8_t qp_type,
		   uint32_t max_sge, uint32_t max_inline, void *buf,
		   size_t cap);
int gv_encode_recv(const struct gv_recv_wr *wr, uint32_t max_sge, void *buf,
		   size_t cap);
/* Decodes a CQE copied out of guest RAM. */
void gv_decode_cqe(const struct virtio_rdma_cqe *cqe, struct gv_wc *ret);

const char *gv_wc_status_str(uint32_t status);

/* MTU helpers (IB enum <-> bytes); 0 when invalid. */
uint32_t gv_mtu_to_enum(uint32_t bytes);
uint32_t gv_mtu_to_bytes(uint32_t mtu);

#endif
