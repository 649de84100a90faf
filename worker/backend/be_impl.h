/* SPDX-License-Identifier: MIT */
/*
 * Internal state of the verbs backend, shared by its parts: objects.c
 * (life cycle, device attributes, PD/CQ/QP/SRQ, GIDs, host async events),
 * mr.c (memory registration of guest RAM), datapath.c (posting, host
 * completions, the AH cache, copies through SGEs) and qp1.c (QP1 through
 * the mux).  Frontends see only worker/backend/backend.h.
 */
#ifndef RDMAGATE_WORKER_BACKEND_BE_IMPL_H
#define RDMAGATE_WORKER_BACKEND_BE_IMPL_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>

#include "worker/backend/backend.h"

/*
 * Mappings user MRs may hold per connection (one per run and region
 * crossed, plus the reservation): well below vm.max_map_count (65,530), so
 * a guest cannot exhaust the worker's address-space map.
 */
#define BE_MAX_MAPPINGS 49152u
/* Handles fit the 16 bits a host wr_id gives them. */
#define BE_MAX_HANDLES 0xffffu
/* Host completions read per CQ per event or poll round. */
#define BE_POLL_BUDGET 64u
/* Host completions one ibv_poll_cq call reads at most. */
#define BE_POLL_BATCH 32u
/*
 * Work requests staged between be_batch_begin() and be_batch_end() for one
 * ibv_post_send / ibv_post_recv call, and the bytes of inline payload they
 * may hold (a WR that does not fit posts what is staged first).
 */
#define BE_BATCH	32u
#define BE_BATCH_INLINE 8192u
/*
 * Q_Keys with bit 31 set are privileged (IBA 10.2.4; QP1's is 0x80010000):
 * only the emulated QP1 uses one.  A guest QP may not take one (MODIFY_QP)
 * nor send one to QP0 or QP1, where it would pass for a MAD of the host's
 * own agents (the mux is the guest's one way to the remote GSI).
 */
#define BE_QKEY_PRIVILEGED 0x80000000u

struct be_pd {
	bool used;
	struct ibv_pd *pd;
	unsigned int refs; /* MRs, QPs, SRQs, AHs on it */
	uint32_t dma_mr;   /* its DMA MR, 0 if none */
};

/* One host mapping of guest RAM registered as one host MR. */
struct be_map {
	void *reserve; /* the PROT_NONE reservation holding the mapping */
	size_t reserve_len;
	struct ibv_mr *mr; /* NULL: a DMA MR part revoked (be_mem_revoke) */
	uint64_t gpa;	   /* DMA MR parts: the region's GPA range */
	uint64_t len;
	/* DMA MR parts: IBV_ACCESS_* as registered (LOCAL_WRITE or none) */
	unsigned int access;
};

/* A GPA range an MR covers (its runs), to know what an unmap revokes. */
struct be_gpa_run {
	uint64_t gpa, len;
};

struct be_mr {
	bool used;
	bool dma;
	/*
	 * A user MR of one run in one guest memory region, registered on the
	 * region's own long-lived mapping (no mapping of its own): maps[0]
	 * holds its mr, gpa (of IOVA byte 0) and len; the backend reaches its
	 * bytes through the current guest memory table, never through the
	 * mr's address (a new table may have unmapped it; the HCA keeps the
	 * pages it pinned).
	 */
	bool fast;
	/*
	 * Its guest memory was unmapped (be_mem_revoke): the host MR is
	 * deregistered, its mappings gone; the handle stays until DEREG_MR
	 * and every SGE with its lkey is refused (LOC_PROT_ERR).
	 */
	bool dead;
	uint32_t pd;
	unsigned int access; /* IBV_ACCESS_* as registered */
	uint32_t lkey, rkey;
	uint64_t iova;	    /* user MR: where maps[0].mr starts */
	unsigned int nmaps; /* 1 for a user MR; one per region for DMA */
	uint32_t mappings;  /* charged to be->mappings */
	/* a user MR's GPA runs (malloc'd, nruns of them) */
	struct be_gpa_run *runs;
	uint32_t nruns;
	/*
	 * One per guest memory region for the DMA MR: as many as the largest
	 * table a frontend may fill (vfio-user raises its own to
	 * GM_TABLE_REGIONS; QEMU maps more than vhost-user's 8).
	 */
	struct be_map maps[GM_TABLE_REGIONS];
};
_Static_assert(GM_TABLE_REGIONS >= GM_MAX_REGIONS,
	       "a DMA MR holds a part per region of any table");

struct be_cq {
	bool used;
	struct ibv_cq *cq;
	uint32_t cqe;
	unsigned int refs; /* QPs using it */
	void *ctx;
};

/* One outstanding work request of a work queue. */
struct be_pend {
	bool used;
	bool signaled;
	uint8_t opcode; /* enum ibv_wc_opcode */
	uint32_t ah;	/* a UD send's AH cache entry + 1, else 0 */
	uint64_t cookie;
};

/* A QP1 receive held until a MAD comes. */
struct be_gsi_recv {
	uint64_t cookie;
	uint32_t num_sge;
	struct be_sge sge[BE_MAX_SGE];
};

/* The outstanding work requests of a send or receive queue. */
struct be_wq {
	struct be_pend *e; /* [size] */
	uint32_t size, count, next;
	/* QP1's receive queue: held receives [size], oldest at gsi_first,
	 * count of them in count (e is unused then) */
	struct be_gsi_recv *gsi;
	uint32_t gsi_first;
};

struct be_qp {
	bool used;
	uint16_t gen; /* in host wr_ids: stale completions are dropped */
	enum be_qp_type type;
	struct ibv_qp *qp; /* NULL for GSI */
	uint32_t qpn;
	uint32_t pd, send_cq, recv_cq, srq;
	bool sq_sig_all;
	enum ibv_qp_state state; /* as last set */
	/* guest GID index of its path (MODIFY_QP with the AV), -1: none */
	int32_t av_gid;
	struct ibv_qp_cap cap;
	void *ctx;
	struct be_wq sq, rq;
};

struct be_srq {
	bool used;
	uint16_t gen;
	struct ibv_srq *srq;
	uint32_t pd;
	uint32_t max_wr, max_sge, limit;
	unsigned int refs; /* QPs on it */
	void *ctx;
	struct be_wq rq;
};

struct be_ah {
	bool used;
	uint32_t pd;
	uint32_t inflight; /* sends on a host queue that name it */
	uint64_t last_use; /* be->ah_clock when a send last named it */
	/* its source GID died (be_gid_kill()): never found again, destroyed
	 * when the last send naming it is done */
	bool dead;
	struct ibv_ah_attr key;
	struct ibv_ah *ah;
};

/* What a host wr_id says. */
enum be_wr_kind { BE_WR_SQ = 0, BE_WR_RQ = 1, BE_WR_SRQ = 2 };

/*
 * The work requests of one queue waiting for one host post call (see
 * be_batch_begin()).  Everything a host WR points at lives here: the
 * frontend's SGE arrays and inline copies are gone after its post call.
 */
struct be_batch {
	unsigned int depth; /* be_batch_begin() calls not yet ended */
	enum be_wr_kind kind;
	uint32_t h;   /* the QP's or SRQ's handle */
	uint16_t gen; /* its generation when the first WR was staged */
	unsigned int n, inl_used;
	union {
		struct ibv_send_wr s[BE_BATCH];
		struct ibv_recv_wr r[BE_BATCH];
	} wr;
	uint64_t bytes[BE_BATCH]; /* payload of each, for counters, probes */
	struct ibv_sge sge[BE_BATCH][BE_MAX_SGE];
	uint8_t inl[BE_BATCH_INLINE];
};

struct be {
	struct be_cfg cfg; /* a copy, limits clamped */
	struct rdma_hca *hca;
	struct dev_env env;
	const struct be_frontend_ops *ops;
	void *fe;
	struct ibv_device_attr attr; /* what guests are told */
	uint32_t gid_tbl_len;

	struct ibv_comp_channel *chan;
	bool async_watched; /* the host context's async fd is ours */
	const struct guest_mem *mem;

	struct be_pd *pd;   /* [lim.max_pd + 1], 0 unused */
	struct be_mr *mr;   /* [lim.max_mr + 1] */
	struct be_cq *cq;   /* [lim.max_cq + 1] */
	struct be_qp *qp;   /* [qp_handles + 1] */
	struct be_srq *srq; /* [srq_handles + 1] */
	struct be_ah *ah;   /* [lim.max_ah] */
	uint64_t ah_clock;  /* sends through the AH cache, for its LRU */
	uint32_t qp_count, srq_count;
	uint32_t mappings;     /* host mappings held by MRs (BE_MAX_MAPPINGS) */
	uint32_t dead_mrs;     /* user MRs revoked, not yet deregistered */
	struct be_batch batch; /* staged work requests (datapath.c) */

	/* the guest GID table: host index or -1, and the GID as given */
	int32_t guest_gid[BE_MAX_GIDS];
	uint8_t gid_raw[BE_MAX_GIDS][16];
	uint32_t gid_type[BE_MAX_GIDS];
	/*
	 * The entry's host slot no longer holds its GID (be_gid_kill()):
	 * BE_GID_DEAD (found by the worker: the broker still gets it back),
	 * BE_GID_GONE (the broker said the address went: nothing to give
	 * back).  0: live.
	 */
	uint8_t gid_dead[BE_MAX_GIDS];

	struct wp_counters *st; /* cfg.counters, else own_st */
	struct wp_counters own_st;
	uint64_t async_events; /* host async events read */
};

/* Logs a refusal of guest input (log_peer_*: the VM's rate limit). */
void be_refused(struct be *be, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Lookups: the object behind a handle, or NULL (logged by the caller). */
struct be_pd *be_pd_get(struct be *be, uint32_t pd);
struct be_qp *be_qp_get(struct be *be, uint32_t qp);
struct be_srq *be_srq_get(struct be *be, uint32_t srq);
/* The QP with host QPN qpn (1: GSI), or 0. */
uint32_t be_qp_by_num(const struct be *be, uint32_t qpn);

/*
 * Host ibv_ah_attr of a guest AV: its guest sgid_index mapped.  -EINVAL
 * (no GRH, an index never added), -EADDRNOTAVAIL (its GID is dead).
 */
int be_ah_to_host(const struct be *be, const struct be_ah_attr *g,
		  struct ibv_ah_attr *h);

/* ---- GIDs behind the guest's back (objects.c) ---- */
enum { BE_GID_DEAD = 1, BE_GID_GONE = 2 };
/*
 * Re-reads the host GID table entry guest index gi maps to
 * (ibv_query_gid_ex, an ioctl): 0 when it still holds the GID the guest
 * claimed; else the GID is killed (be_gid_kill()) and -EADDRNOTAVAIL.
 */
int be_gid_verify(struct be *be, uint32_t gi);
/*
 * Host GID index h no longer holds what the guest's entries mapped to it
 * claimed (how: BE_GID_DEAD or BE_GID_GONE): those entries die (address
 * vectors naming them are refused), cached AHs with that source are
 * flushed, and every QP whose path uses it goes to the error state (its
 * work requests flush; the frontend gets IBV_EVENT_QP_FATAL).
 */
void be_gid_kill(struct be *be, int32_t h, uint8_t how);
/* IBV_EVENT_GID_CHANGE: be_gid_verify() of every live entry. */
void be_gids_recheck(struct be *be);

/* ---- mr.c ---- */
/* Deregisters and unmaps MR mr (in use) and drops its PD reference. */
void be_mr_free(struct be *be, uint32_t mr);
/*
 * An SGE with the DMA MR's virtual lkey: the host lkey of the region part
 * holding [addr, addr + len), or -EFAULT (no part holds it, its part was
 * revoked, or write and the part is read-only).  An lkey of a revoked
 * user MR on pd: -EFAULT.  Other lkeys: -ENOENT.
 */
int be_dma_lkey(const struct be *be, uint32_t pd, uint32_t lkey, uint64_t addr,
		uint32_t len, bool write, uint32_t *ret_lkey);
/*
 * The host address of [addr, addr + len) under lkey on PD pd (a user MR:
 * an IOVA range; the DMA MR: a GPA inside one guest RAM region), or NULL.
 * write: the MR must allow local writes.
 */
uint8_t *be_sge_host(const struct be *be, uint32_t pd, uint32_t lkey,
		     uint64_t addr, uint32_t len, bool write);

/* ---- datapath.c ---- */
/* Work-queue bookkeeping for a QP or SRQ of size entries. 0 or -ENOMEM. */
int be_wq_init(struct be_wq *q, uint32_t size, bool gsi);
void be_wq_free(struct be_wq *q);
/* Drops the AH cache references of a send queue's outstanding entries
 * (its QP is going away). */
void be_wq_drop_ahs(struct be *be, struct be_wq *q);
/* Host AH cache: destroys the entries of PD pd (all if pd is 0). */
void be_ah_flush(struct be *be, uint32_t pd);
/* Host AH cache: drops the entries with host source GID index sgid (those
 * still named by a send on a host queue die when it completes). */
void be_ah_flush_sgid(struct be *be, uint8_t sgid);
/* Cached AHs on PD pd. */
uint32_t be_ah_count(const struct be *be, uint32_t pd);
/* The completion channel is readable. */
void be_chan_ready(void *arg);
/*
 * Copies len bytes between buf and the guest memory the SGEs name (keys of
 * MRs on PD pd; to_guest: the MRs must allow local writes).  Returns
 * IBV_WC_SUCCESS, or LOC_PROT_ERR (an SGE outside its MR) / LOC_LEN_ERR
 * (the SGEs hold fewer than len bytes) with *why.
 */
enum ibv_wc_status be_sge_copy(const struct be *be, uint32_t pd,
			       const struct be_sge *sge, uint32_t num_sge,
			       void *buf, uint32_t len, bool to_guest,
			       struct reason *why);
/*
 * Delivers a received datagram (data, len bytes: the GRH area and the
 * MAD) into the GSI QP's oldest posted receive, completing it through
 * ops->completion with wc's fields (cookie and queue filled in here).
 * Returns 0; -ENOENT without a GSI QP in RTR or RTS; -ENOBUFS when no
 * receive is posted; -EIO when the receive took it with an error
 * completion (buffer too short, SGE outside its MR).
 */
int be_gsi_deliver(struct be *be, void *data, uint32_t len,
		   const struct be_wc *wc);

/* Host wr_id: generation, kind, handle, index in the queue. */
static inline uint64_t be_wr_id(uint16_t gen, enum be_wr_kind kind,
				uint32_t handle, uint32_t idx)
{
	return ((uint64_t)gen << 34) | ((uint64_t)kind << 32) |
	       ((uint64_t)(handle & 0xffff) << 16) | (idx & 0xffff);
}

#endif
