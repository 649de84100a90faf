/* SPDX-License-Identifier: MIT */
/*
 * Internal state of the virtio-rdma device on host verbs, shared by its
 * parts: dev_rdma.c (device ops, control queue, config), objects.c (handle
 * tables of PDs, CQs, QPs, MRs, SRQs, AHs), mr.c (memory registration of
 * guest RAM) and datapath.c (SQ/RQ elements to host work requests, host
 * completions to guest CQEs). See docs/worker.md.
 */
#ifndef RDMAGATE_WORKER_RDMA_DEV_RDMA_H
#define RDMAGATE_WORKER_RDMA_DEV_RDMA_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/virtio_rdma.h"
#include "common/worker_proto.h"
#include "worker/device.h"
#include "worker/guest_mem.h"
#include "worker/virtio_rdma/cmd.h"
#include "worker/backend/backend.h"
#include "worker/backend/hca.h"
#include "worker/virtio_rdma/mr_pt.h"
#include "worker/virtio_rdma/wqe.h"

/* Worker limits (command line; later the broker's policy quotas). */
struct rdma_limits {
	uint32_t max_qp, max_cq, max_mr, max_pd, max_srq, max_ah;
	uint32_t max_cqe, max_qp_wr, max_srq_wr, max_sge;
};

/* What main.c hands the device (struct dev_env.cfg). */
struct broker_link;
struct wp_counters;
struct qp1_chan;

struct rdma_dev_cfg {
	struct rdma_hca *hca; /* opened before any guest input */
	struct rdma_limits lim;
	bool busy_poll;
	/* the process's counters (the broker's STATS), all connections */
	struct wp_counters *counters;
	/* GID requests go to the broker when it is on (broker_link_on()) */
	struct broker_link *broker;
	/* the mux channel for QP1 (worker/rdma/qp1.h), or NULL; the device
	 * registers itself in it while it lives */
	struct qp1_chan *mux;
};

/* Fills the defaults of the worker limits. */
void rdma_limits_default(struct rdma_limits *lim);

/* The guest's queues are at most this long (device max_ring_size). */
#define RD_RING	     VIRTIO_RDMA_RING_SIZE
#define RD_MAX_SLOTS 127 /* (256 - 1 - 1 CQ) / 2 */
/*
 * Mappings REG_USER_MR may hold per connection (one per run and region
 * crossed, plus the reservation): well below vm.max_map_count (65,530), so
 * a guest cannot exhaust the worker's address-space map.
 */
#define RD_MAX_MAPPINGS 49152u

struct rd_pd {
	bool used;
	struct ibv_pd *pd;
	unsigned int refs; /* MRs, QPs, SRQs, AHs on it */
	uint32_t dma_mrn;  /* its DMA MR (GET_DMA_MR), 0 if none */
};

/* One host mapping of guest RAM registered as one host MR. */
struct rd_map {
	void *reserve; /* the PROT_NONE reservation holding the mapping */
	size_t reserve_len;
	struct ibv_mr *mr;
	uint64_t gpa; /* DMA MR parts: the region's GPA range */
	uint64_t len;
};

struct rd_mr {
	bool used;
	bool dma;
	uint32_t pdn;
	uint32_t access; /* VIRTIO_RDMA_ACCESS_* */
	uint32_t lkey, rkey;
	uint64_t iova;	    /* REG_USER_MR: where maps[0].mr starts */
	unsigned int nmaps; /* 1 for REG_USER_MR; one per region for DMA */
	uint32_t mappings;  /* charged to rdma_dev.mappings */
	struct rd_map maps[GM_MAX_REGIONS];
};

struct rd_cq {
	bool used;
	struct ibv_cq *cq;
	uint32_t cqe;
	unsigned int refs; /* QPs using it */
	bool armed;	   /* REQ_NOTIFY_CQ: signal on the next CQE */
	uint64_t overflows;
};

/* A popped SQ/RQ element waiting for its host completion. */
struct rd_pend {
	uint16_t head;
	bool done;
	bool emit;    /* write a guest CQE when it reaches the front */
	uint32_t cqn; /* where its CQE goes */
	struct rdma_completion c;
};

/* In-order return of one SQ or RQ ring's descriptors. */
struct rd_fifo {
	struct rd_pend e[RD_RING];
	unsigned int first, count;
};

enum rd_slot_kind { RD_SLOT_FREE = 0, RD_SLOT_QP, RD_SLOT_SRQ };

struct rd_slot {
	enum rd_slot_kind kind;
	uint16_t gen; /* in host wr_ids: stale completions are ignored */
	uint32_t pdn;
	/* QP */
	struct ibv_qp *qp; /* NULL for the virtual GSI QP */
	uint32_t qpn;	   /* host QPN, or 1 for GSI */
	uint8_t qp_type;   /* enum virtio_rdma_qp_type */
	uint8_t sq_sig_all;
	uint32_t state; /* enum virtio_rdma_qp_state, as last set */
	uint32_t scqn, rcqn;
	uint32_t srq_handle; /* 0: own RQ */
	struct rdma_sq_limits sq_lim;
	uint32_t max_recv_sge;
	struct virtio_rdma_qp_cap cap; /* as created */
	/* SRQ */
	struct ibv_srq *srq;
	uint32_t srq_max_wr, srq_max_sge, srq_limit;
	unsigned int srq_refs;
	struct rd_fifo sq, rq;
};

struct rd_ah {
	bool used;
	uint32_t pdn;
	struct ibv_ah_attr key;
	struct ibv_ah *ah;
};


struct rdma_dev {
	const struct rdma_dev_cfg *cfg;
	struct rdma_hca *hca;
	struct dev_env env;
	struct virtio_rdma_config config; /* what the guest reads */
	uint32_t num_slots;
	uint32_t max_cq, max_qp; /* advertised */

	struct ibv_comp_channel *chan;
	struct vq *vqs[VIRTIO_RDMA_NUM_QUEUES]; /* running rings */
	const struct guest_mem *mem;		/* from the running rings */

	struct rd_pd *pd;     /* [lim.max_pd + 1], handle = index, 0 unused */
	struct rd_mr *mr;     /* [lim.max_mr + 1] */
	struct rd_cq *cq;     /* [max_cq], cqn = index */
	struct rd_slot *slot; /* [num_slots] */
	struct rd_ah *ah;     /* [lim.max_ah] */
	uint32_t srq_count, qp_count;
	uint32_t mappings; /* host mappings held by MRs (RD_MAX_MAPPINGS) */
	int16_t guest_gid[VIRTIO_RDMA_GID_TBL_LEN]; /* host index, or -1 */
	uint32_t gid_tbl_len;			    /* advertised */
	/* the process's counters (cfg->counters, else own_st) */
	struct wp_counters *st;
	struct wp_counters own_st;
	/* refusals of this connection, for quiet logs */
	uint64_t wr_logged, cmd_logged;
	/* the guest's GIDs as it gave them (for DEL_GID to the broker) */
	uint8_t gid_raw[VIRTIO_RDMA_GID_TBL_LEN][16];
	uint32_t gid_type[VIRTIO_RDMA_GID_TBL_LEN];

	struct vq_elem elem;  /* scratch: one popped chain (16 KiB) */
	struct vq_elem celem; /* scratch: one CQ buffer */
	struct rdma_send_wr swr;
	struct rdma_recv_wr rwr;
	uint8_t wqe_buf[4096]; /* private copy of one element */
};

/* The PD guest handle pdn names: 0 and *ret, or -ENOENT (logged). */
int rd_lookup_pd(struct rdma_dev *d, uint32_t pdn, struct rd_pd **ret);

/* ---- mr.c ---- */
/* REG_USER_MR: walk, map, register. 0 and *ret_mrn, or -errno (logged). */
int rd_reg_user_mr(struct rdma_dev *d,
		   const struct virtio_rdma_cmd_reg_user_mr *req,
		   uint32_t *ret_mrn);
/* GET_DMA_MR: one host MR per guest RAM region, iova = GPA. */
int rd_get_dma_mr(struct rdma_dev *d, uint32_t pdn, uint32_t access,
		  uint32_t *ret_mrn);
/* Deregisters and unmaps MR mrn (in use), and drops its PD reference. */
void rd_mr_free(struct rdma_dev *d, uint32_t mrn);
/*
 * An SGE with the DMA MR's virtual lkey: the host lkey of the region part
 * holding [addr, addr + len), or -EFAULT. Other lkeys: -ENOENT.
 */
int rd_dma_lkey(const struct rdma_dev *d, uint32_t pdn, uint32_t lkey,
		uint64_t addr, uint32_t len, uint32_t *ret_lkey);
/* Host ibv_access_flags of VIRTIO_RDMA_ACCESS_* flags. */
int rd_access_to_ibv(uint32_t access);

/* ---- datapath.c ---- */
void rd_sq_kicked(struct rdma_dev *d, uint32_t s, struct vq *vq);
void rd_rq_kicked(struct rdma_dev *d, uint32_t s, struct vq *vq);
/* Drains host CQ cqn into the guest's CQ queue. */
void rd_cq_poll(struct rdma_dev *d, uint32_t cqn);
/* The completion channel is readable. */
void rd_chan_ready(void *arg);
/* Returns every pending descriptor of slot s (used len 0), no CQEs. */
void rd_slot_flush(struct rdma_dev *d, uint32_t s);
/* Host AH cache: destroys the entries of PD pdn (all if pdn is 0). */
void rd_ah_flush(struct rdma_dev *d, uint32_t pdn);
/* Cached AHs on PD pdn. */
uint32_t rd_ah_count(const struct rdma_dev *d, uint32_t pdn);

/*
 * Copies len bytes between buf and the guest memory the SGEs name (keys of
 * MRs on PD pdn; to_guest: the MRs must allow local writes).  Returns
 * VIRTIO_RDMA_WC_SUCCESS, or LOC_PROT_ERR (an SGE outside its MR) /
 * LOC_LEN_ERR (the SGEs hold fewer than len bytes) with *why.
 */
int rd_sge_copy(const struct rdma_dev *d, uint32_t pdn,
		const struct virtio_rdma_sge *sge, uint32_t num_sge, void *buf,
		uint32_t len, bool to_guest, const char **why);
/*
 * Delivers a received datagram (data, len bytes: the GRH area and the
 * MAD) into the GSI QP's next posted receive element, completing it on
 * its receive CQ with c (wr_id filled in) in posting order.  Returns 0;
 * -ENOENT without a GSI QP in RTR or RTS; -ENOBUFS when no receive is
 * posted; -EIO when the element took it with an error completion
 * (buffer too short, SGE outside its MR).
 */
int rd_gsi_deliver(struct rdma_dev *d, void *data, uint32_t len,
		   const struct rdma_completion *c);

/* Ring lookups: the running vq of a CQ / SQ / RQ, or NULL. */
static inline struct vq *rd_cq_vq(struct rdma_dev *d, uint32_t cqn)
{
	return d->vqs[virtio_rdma_cq_vq(cqn)];
}

static inline struct vq *rd_sq_vq(struct rdma_dev *d, uint32_t s)
{
	return d->vqs[virtio_rdma_sq_vq(d->max_cq, s)];
}

static inline struct vq *rd_rq_vq(struct rdma_dev *d, uint32_t s)
{
	return d->vqs[virtio_rdma_rq_vq(d->max_cq, s)];
}

/* Host wr_id: generation, slot, receive bit, descriptor head. */
static inline uint64_t rd_wr_id(uint16_t gen, uint32_t slot, bool recv,
				uint16_t head)
{
	return ((uint64_t)gen << 32) | ((uint64_t)slot << 17) |
	       ((uint64_t)recv << 16) | head;
}

#endif
