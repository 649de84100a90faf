/* SPDX-License-Identifier: MIT */
/*
 * Internal state of the virtio-rdma frontend, shared by its parts:
 * dev.c (device ops, config space, the control queue) and rings.c (SQ/RQ
 * elements to backend work requests, backend completions to CQEs on the
 * CQ queues, in-order return of ring descriptors).  The verbs objects are
 * the backend's (worker/backend/backend.h); this side keeps what its ABI
 * needs: which queue slot is which QP or SRQ, and the descriptors popped.
 */
#ifndef RDMAGATE_WORKER_VIRTIO_RDMA_VRDMA_H
#define RDMAGATE_WORKER_VIRTIO_RDMA_VRDMA_H

#include <stdbool.h>
#include <stdint.h>

#include "common/virtio_rdma.h"
#include "worker/backend/backend.h"
#include "worker/vhost_user/device.h"
#include "worker/virtio_rdma/cmd.h"
#include "worker/virtio_rdma/wqe.h"

/* What main.c hands the device (struct dev_env.cfg). */
struct vrdma_cfg {
	struct be_cfg be; /* quotas, HCA, counters, broker, mux */
	bool busy_poll;
};

/* The guest's queues are at most this long (device max_ring_size). */
#define VR_RING	     VIRTIO_RDMA_RING_SIZE
#define VR_MAX_SLOTS 127 /* (256 - 1 - 1 CQ) / 2 */
/*
 * Per kick, at most this many control commands or ring elements are taken
 * from one queue; the rest waits for the next round of the loop (poll()),
 * so that one guest queue cannot hold the worker's thread.
 */
#define VR_KICK_BUDGET 32

/* A popped SQ/RQ element waiting for its completion. */
struct vr_pend {
	uint16_t head;
	bool done;
	bool emit;    /* write a guest CQE when it reaches the front */
	uint32_t cqn; /* where its CQE goes */
	struct rdma_completion c;
};

/* In-order return of one SQ or RQ ring's descriptors. */
struct vr_fifo {
	struct vr_pend e[VR_RING];
	unsigned int first, count;
};

enum vr_slot_kind { VR_SLOT_FREE = 0, VR_SLOT_QP, VR_SLOT_SRQ };

/* A queue slot: SQ/RQ virtqueue pair of one QP or the RQ of an SRQ. */
struct vr_slot {
	enum vr_slot_kind kind;
	/* backend handle = slot + 1 (QP or SRQ table) */
	uint32_t qpn;	 /* host QPN, or 1 for GSI */
	uint8_t qp_type; /* enum virtio_rdma_qp_type */
	uint32_t scqn, rcqn;
	uint32_t srq_handle; /* 0: own RQ */
	bool sq_sig_all;     /* every send completes */
	struct rdma_sq_limits sq_lim;
	uint32_t max_recv_sge;
	struct virtio_rdma_qp_cap cap; /* as created */
	uint32_t srq_max_sge;
	/* work left in the ring after a budget ran out: next round */
	bool sq_pending, rq_pending;
	struct vr_fifo sq, rq;
};

struct vr_cq {
	bool used;
	bool armed; /* REQ_NOTIFY_CQ: signal on the next CQE */
	uint64_t overflows;
};

struct vrdma {
	const struct vrdma_cfg *cfg;
	struct be *be;
	struct wp_counters *st;
	struct virtio_rdma_config config; /* what the guest reads */
	uint32_t num_slots;
	uint32_t max_cq, max_qp; /* advertised */

	struct vq *vqs[VIRTIO_RDMA_NUM_QUEUES]; /* running rings */
	const struct guest_mem *mem;		/* from the running rings */

	struct vr_cq cq[VIRTIO_RDMA_NUM_QUEUES]; /* by cqn */
	struct vr_slot *slot;			 /* [num_slots] */
	bool ctrl_pending; /* control commands left after the budget */
	bool pending;	   /* some queue has work left (see above) */
	/*
	 * The loop spins (cfg->busy_poll, docs/worker.md "Polling"): the
	 * rings' kicks are off and vr_poll_rings() looks at them each round;
	 * set until the first round after the spin, which turns kicks on.
	 */
	bool rings_polled;
	bool spun; /* vr_poll_rings() saw the loop spinning: kicks went off */
	/*
	 * Rings with used entries not yet signalled this round, by vq index:
	 * every CQE and returned descriptor of a round is written first, then
	 * each touched ring is signalled once (vr_notify_flush()).
	 */
	uint64_t notify[VIRTIO_RDMA_NUM_QUEUES / 64];

	struct vq_elem elem;  /* scratch: one popped chain (16 KiB) */
	struct vq_elem celem; /* scratch: one CQ buffer */
	struct rdma_send_wr swr;
	struct rdma_recv_wr rwr;
	uint8_t wqe_buf[4096]; /* private copy of one element */
};

/* ---- rings.c ---- */
extern const struct be_frontend_ops vr_be_ops;
/* Takes up to VR_KICK_BUDGET elements of slot s's SQ / RQ ring. */
void vr_sq_kicked(struct vrdma *d, uint32_t s, struct vq *vq);
void vr_rq_kicked(struct vrdma *d, uint32_t s, struct vq *vq);
/* Returns every pending descriptor of slot s (used len 0), no CQEs. */
void vr_slot_flush(struct vrdma *d, uint32_t s);
/* Serves the queues left with work after their budget ran out. */
void vr_run_pending(struct vrdma *d);
/*
 * After a ring is drained: its kicks back on, or, while the loop spins,
 * left off (the ring is polled).  Returns true when an element is
 * available now (drain again).
 */
bool vr_rearm(struct vrdma *d, struct vq *vq);
/*
 * Each round of the loop: while it spins, marks pending every running
 * ring (control, SQs, RQs) with elements available, kicks off; on the
 * first round after, turns every ring's kicks back on, marking pending
 * those that got elements meanwhile.
 */
void vr_poll_rings(struct vrdma *d);
/* Signals every ring marked this round, once each (end of a round). */
void vr_notify_flush(struct vrdma *d);

/* Ring lookups: the running vq of a CQ / SQ / RQ, or NULL. */
static inline struct vq *vr_cq_vq(struct vrdma *d, uint32_t cqn)
{
	return d->vqs[virtio_rdma_cq_vq(cqn)];
}

static inline struct vq *vr_sq_vq(struct vrdma *d, uint32_t s)
{
	return d->vqs[virtio_rdma_sq_vq(d->max_cq, s)];
}

static inline struct vq *vr_rq_vq(struct vrdma *d, uint32_t s)
{
	return d->vqs[virtio_rdma_rq_vq(d->max_cq, s)];
}

#endif
