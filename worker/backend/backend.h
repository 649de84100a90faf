/* SPDX-License-Identifier: MIT */
/*
 * The worker's verbs backend: the host verbs resources one guest uses (PD,
 * CQ, QP, SRQ, MR, AH, guest GIDs, QP1 through the mux), behind bounded
 * handle tables, driven by a guest-facing frontend (virtio-rdma over
 * vhost-user in worker/virtio_rdma/, PVRDMA over vfio-user in
 * worker/pvrdma/).  See docs/worker.md ("Backend and frontends").
 *
 * The split: a frontend owns its guest ABI (command and WQE decoding, its
 * rings, its CQE format, its interrupts); the backend owns everything that
 * touches host verbs, guest memory registration, quotas, the stats
 * counters and the probes.  The frontend decodes, bounds and translates
 * guest input BEFORE calling here; the backend checks again what protects
 * the host or another object (handles, PD ownership, limits, keys) and
 * never trusts a frontend-given handle, count or address.
 *
 * Enums: the backend speaks libibverbs' values (enum ibv_wr_opcode,
 * ibv_wc_status, ibv_wc_opcode, ibv_qp_state, ibv_mtu, ibv_mig_state,
 * ibv_event_type, IBV_ACCESS_*, IBV_SEND_*, IBV_WC_* flags, IBV_QP_* and
 * IBV_SRQ_* attribute masks, enum ibv_gid_type).  Why: the backend is a
 * thin, checked layer over host verbs; rdma-core's values are a stable ABI;
 * virtio-rdma's values are equal to them by design (common/virtio_rdma.h)
 * and PVRDMA's are the kernel's ib_* values (equal for everything but a few
 * WC opcodes), so each frontend translates once, in its own decoder.  The
 * one non-verbs enum is the QP type (GSI is not a host QP type here).
 *
 * Handles: every object is named by a uint32_t handle, 1..max of its kind;
 * 0 never names an object.  A frontend may ask for a specific free handle
 * (virtio-rdma ties handles to its queue numbers) or pass BE_ANY.
 * Handles of destroyed objects may be reused; completions of a destroyed
 * QP or SRQ are dropped (generation-checked) and counted as
 * missing_completions.
 *
 * Every call runs on the worker's one thread; callbacks (struct
 * be_frontend_ops) run on it too, from the event loop (completion channel,
 * async events, the mux channel) or from be_cq_poll()/be_poll(), never
 * from inside another be_* call except where a call says so.
 * Return values: 0 or a negative errno; ret_ output parameters are left
 * untouched on failure.  Refusals are logged by the backend (rate-limited
 * per connection).
 */
#ifndef RDMAGATE_WORKER_BACKEND_BACKEND_H
#define RDMAGATE_WORKER_BACKEND_BACKEND_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/reason.h"
#include "common/worker_proto.h"
#include "worker/backend/hca.h"
#include "worker/backend/limits.h"
#include "worker/backend/mr_layout.h"
#include "worker/dev_env.h"
#include "worker/guest_mem.h"

struct be;
struct qp1_chan;

/* "Any free handle" for the *_create calls. */
#define BE_ANY 0u

/* SGEs of one work request the backend takes (host max_sge clamps it). */
#define BE_MAX_SGE 32
/* Outstanding work requests per work queue (a host wr_id holds 16 bits). */
#define BE_MAX_WR 16384
/*
 * Guest GID table entries the backend keeps room for (virtio-rdma's ABI
 * numbers 512); a guest is offered at most BE_AV_GIDS of them: address
 * vectors name 8 bits of index (be_ah_attr.sgid_index, PVRDMA's and
 * virtio-rdma's AVs alike).
 */
#define BE_MAX_GIDS 512
#define BE_AV_GIDS  256

/* ---- configuration ---- */

/*
 * Where a guest GID is claimed before the backend uses it: in the worker,
 * the broker (main.c wires worker/broker_link.c in).  The backend knows
 * only these calls; arg is be_cfg.gids_arg.
 */
struct be_gid_claims {
	/* Whether claims go anywhere now; false: the host's table as it is. */
	bool (*on)(void *arg);
	/*
	 * Claims a GID (add: waits for the answer; 0 with its host index)
	 * or gives it back (!add: does not wait), as broker_link_gid():
	 * keep, on a failed claim, leaves the address in place (the guest
	 * holds it for the other GID type).  0 or -errno with why.
	 */
	int (*claim)(void *arg, bool add, const uint8_t gid[16],
		     uint32_t gid_type, bool keep, uint32_t *host_index,
		     struct reason *why);
	/*
	 * Registers be's handler of claimed GIDs that left the host
	 * (gone(be, gid) from the event loop), or with gone NULL drops it
	 * if be's is the one registered.
	 */
	void (*watch_gone)(void *arg, struct be *be,
			   void (*gone)(void *be, const uint8_t gid[16]));
};

struct be_cfg {
	struct rdma_hca *hca; /* opened before any guest input */
	/*
	 * The quotas; the frontend may lower them to what its ABI can
	 * address (virtio-rdma: its number of queues) before be_create().
	 */
	struct be_limits lim;
	/*
	 * Highest QP and SRQ handle a frontend may ask for (virtio-rdma:
	 * its queue slots, shared by QPs and SRQs); 0: lim.max_qp /
	 * lim.max_srq.  The counts stay bounded by lim.
	 */
	uint32_t qp_handles, srq_handles;
	/* Guest GID table length the frontend presents, <= BE_MAX_GIDS. */
	uint32_t gid_tbl_len;
	/* the process's counters (the broker's STATS); NULL: the backend's */
	struct wp_counters *counters;
	/* where the guest's GIDs are claimed (the broker); NULL: nowhere, the
	 * host's table as it is */
	const struct be_gid_claims *gids;
	void *gids_arg;
	/* the mux channel for QP1, or NULL; the backend registers itself in
	 * it while it lives (one backend per channel) */
	struct qp1_chan *mux;
};

/* ---- what the backend calls back ---- */

enum be_obj {
	BE_OBJ_DEVICE = 0,
	BE_OBJ_PORT,
	BE_OBJ_CQ,
	BE_OBJ_QP,
	BE_OBJ_SRQ,
};

/* A finished work request (host completion, QP1 delivery or flush). */
struct be_wc {
	void *cq_ctx; /* be_cq_create()'s ctx of the CQ it goes to */
	void *wq_ctx; /* ctx of the QP or SRQ it was posted to */
	uint32_t wq;  /* that QP's or SRQ's handle */
	bool srq;     /* posted with be_post_srq_recv() */
	bool recv;    /* a receive (QP or SRQ) */
	/*
	 * Sends: the frontend asked for a completion (IBV_SEND_SIGNALED, or
	 * the QP's sq_sig_all).  The backend signals every host work
	 * request and hands every one back, so that a frontend can return
	 * ring slots in order; it writes a guest CQE for a send only when
	 * this is set or status is not IBV_WC_SUCCESS.  Receives: true.
	 */
	bool signaled;
	/*
	 * Never reached the host: the host refused the list it was staged
	 * in (be_batch_begin()); status is IBV_WC_LOC_QP_OP_ERR.  cq_ctx is
	 * NULL for an SRQ receive (no QP took it, so no CQ).
	 */
	bool refused;
	uint64_t cookie; /* the frontend's, from the work request */
	enum ibv_wc_status status;
	/* from the work request the backend posted, valid in errors too */
	enum ibv_wc_opcode opcode;
	uint32_t vendor_err;
	uint32_t byte_len;
	uint32_t imm_data; /* network order, verbatim */
	uint32_t qp;	   /* handle of the QP it completed on */
	uint32_t qp_num;   /* that QP's number as the guest knows it */
	uint32_t src_qp;
	unsigned int wc_flags; /* IBV_WC_GRH, IBV_WC_WITH_IMM, ... */
	uint16_t pkey_index;
	uint16_t slid;
	uint8_t sl;
	uint8_t dlid_path_bits;
};

/* A host asynchronous event on one of the guest's objects or the port. */
struct be_async_event {
	enum ibv_event_type type;
	enum be_obj obj;
	uint32_t handle; /* the object's handle; the port number for PORT */
	void *ctx;	 /* the object's ctx (CQ, QP, SRQ), else NULL */
};

struct be_frontend_ops {
	/* A work request finished: write the guest's CQE (required). */
	void (*completion)(void *fe, const struct be_wc *wc);
	/*
	 * A host async event on a guest object (QP fatal, SRQ limit
	 * reached, CQ error, port up/down ...): post it to the guest where
	 * its ABI has an event ring.  Optional; counted either way.  Also
	 * QP_FATAL for a QP the backend moved to the error state because
	 * its path's source GID died (docs/worker.md, "GIDs behind the
	 * guest's back"): that one may come from inside be_post_send() or
	 * be_qp_modify(), which re-read the GID before a new AH or path.
	 */
	void (*async_event)(void *fe, const struct be_async_event *ev);
	/*
	 * A be_gid_add() that returned BE_PENDING finished: 0 (the guest
	 * index now maps to a host GID) or -errno.  Required when the
	 * frontend can get BE_PENDING (i.e. always: see be_gid_add()).
	 */
	void (*gid_done)(void *fe, uint32_t index, int result, void *cookie);
	/*
	 * Optional: the end of a round of completions the backend delivered
	 * on its own (the completion channel fired, a MAD came from the
	 * mux): every be_wc of the round went through ->completion, so the
	 * frontend signals each guest ring it touched once, now.  Not called
	 * after be_cq_poll()/be_poll()/be_batch_end(): their caller knows.
	 */
	void (*round_done)(void *fe);
};

/* ---- life cycle ---- */

/*
 * Makes the backend of one guest connection: its tables, the host
 * completion channel and the watch of the host async events (both
 * through env->watch_fd).  fe is handed back to every callback.
 */
int be_create(const struct be_cfg *cfg, const struct dev_env *env,
	      const struct be_frontend_ops *ops, void *fe, struct be **ret_be);
/*
 * Destroys every object, gives the guest's GIDs back, frees; NULL is
 * fine.  Neither this nor be_reset() calls back into the frontend.
 */
void be_destroy(struct be *be);
/* Device reset: destroys every object and gives the GIDs back. */
void be_reset(struct be *be);

/*
 * The guest memory MRs are registered from and QP1 copies through
 * (vhost-user: SET_MEM_TABLE's table; vfio-user: its DMA_MAP regions).
 * The table stays the frontend's and must outlive its use here; NULL
 * when there is none.  Registered MRs keep their own mappings.
 */
void be_set_mem(struct be *be, const struct guest_mem *gm);
/*
 * Guest memory [gpa, gpa + size) is going away (DMA_UNMAP; size may run
 * to the end of the address space: bus mastering off): deregisters the
 * host MR of every user MR and every DMA MR part that covers a byte of
 * it, so that neither peers (rkeys) nor local work requests (lkeys) reach
 * it, and drops their mappings.  The guest's handles stay valid but dead:
 * SGEs with their keys complete with LOC_PROT_ERR, DEREG_MR frees them.
 * Call it while the memory is still mapped.  Returns the MRs revoked.
 */
unsigned int be_mem_revoke(struct be *be, uint64_t gpa, uint64_t size);

/* The process's counters the backend counts into (frontends too). */
struct wp_counters *be_counters(struct be *be);

/* ---- device, port, P_Key ---- */

/*
 * The device attributes a guest may be told: the host's, clamped to the
 * quotas, to the backend's tables and to what the backend supports
 * (max_sge <= BE_MAX_SGE, max_qp_wr <= BE_MAX_WR, device_cap_flags
 * filtered to what is passed through, one port, one P_Key).
 */
const struct ibv_device_attr *be_device_attr(const struct be *be);

/*
 * The port's live attributes (cached ones when the host query fails),
 * with gid_tbl_len the guest table's, pkey_tbl_len 1 and port_cap_flags
 * filtered (CM_SUP, IP_BASED_GIDS).
 */
void be_query_port(struct be *be, struct ibv_port_attr *ret);
/* P_Key at index (only 0 exists): 0, or -EINVAL. */
int be_query_pkey(struct be *be, uint32_t index, uint16_t *ret_pkey);

/* ---- guest GID table ---- */

/* be_gid_add(): the broker answers later through ops->gid_done. */
#define BE_PENDING 1

/*
 * Claims gid (enum ibv_gid_type gid_type: ROCE_V1 or ROCE_V2) for guest
 * GID index `index` (< cfg.gid_tbl_len): through the broker when it is
 * on, else from the host's own table.  A GID already at that index is
 * released first.  Returns 0 (claimed now), BE_PENDING (ops->gid_done(fe,
 * index, result, cookie) follows; the index is unusable until then), or
 * -errno: -EINVAL (index, type), -EADDRNOTAVAIL (not on the host port),
 * -EBUSY (another claim pending), the broker's refusal.  A host GID table
 * index that does not fit the host's AH (>= 256) is refused (-ERANGE).
 */
int be_gid_add(struct be *be, uint32_t index, const uint8_t gid[16],
	       uint32_t gid_type, void *cookie);
/* Releases guest GID index `index`: 0, or -ENOENT when it is empty. */
int be_gid_del(struct be *be, uint32_t index);

/* ---- PD ---- */

int be_pd_create(struct be *be, uint32_t want, uint32_t *ret_pd);
/* Whether PD pd exists (to refuse early, before walking guest memory). */
bool be_pd_exists(const struct be *be, uint32_t pd);
/* -EBUSY while MRs, QPs or SRQs use it. */
int be_pd_destroy(struct be *be, uint32_t pd);

/* ---- MR ---- */

struct be_mr_info {
	uint32_t handle;
	uint32_t lkey;
	uint32_t rkey; /* 0 unless a remote access flag was asked for */
};

/*
 * The DMA MR of PD pd: all of guest RAM with iova = GPA, one host MR per
 * writable guest memory region behind one virtual lkey (SGEs with it are
 * mapped to the region's host key in be_post_*; read-only regions have no
 * part: SGEs there complete with LOC_PROT_ERR).  An unknown PD is -EINVAL here
 * and in be_mr_reg() (an invalid argument of the registration).  Registered for
 * LOCAL access only whatever `access` asks (remote bits are dropped: a live
 * rkey for all of guest RAM would let any peer read it), rkey 0.  One per PD
 * (-EEXIST); -EFAULT without (writable) guest memory.
 */
int be_mr_reg_dma(struct be *be, uint32_t pd, unsigned int access,
		  struct be_mr_info *ret);
/*
 * A user MR: lay's runs of 4 KiB guest pages mapped into one host range
 * and registered with ibv_reg_mr_iova(iova = lay->virt_addr), access
 * IBV_ACCESS_* (LOCAL_WRITE, REMOTE_*, RELAXED_ORDERING).  The layout is
 * the frontend's decoded page list (virtio-rdma's page table walk,
 * PVRDMA's page directory via rdma_mr_layout_from_pages()); the backend
 * checks every page against guest memory again.
 */
int be_mr_reg(struct be *be, uint32_t pd, const struct rdma_mr_layout *lay,
	      unsigned int access, struct be_mr_info *ret);
int be_mr_dereg(struct be *be, uint32_t mr);

/* ---- CQ ---- */

/*
 * A host CQ of at least cqe entries (<= be_device_attr()->max_cqe); ctx
 * comes back in every be_wc of it.  *ret_cqe: the entries it has.
 * Host completions are read when its channel fires (or by be_cq_poll()).
 */
int be_cq_create(struct be *be, uint32_t want, uint32_t cqe, void *ctx,
		 uint32_t *ret_cq, uint32_t *ret_cqe);
int be_cq_resize(struct be *be, uint32_t cq, uint32_t cqe, uint32_t *ret_cqe);
/* -EBUSY while QPs use it. */
int be_cq_destroy(struct be *be, uint32_t cq);
/*
 * Reads up to `budget` host completions of CQ cq into ops->completion.
 * Returns how many, or -errno.  The frontend's arming of the guest CQ is
 * its own business: the host CQ is always armed by the backend.
 */
int be_cq_poll(struct be *be, uint32_t cq, unsigned int budget);
/* Busy polling: every CQ once (up to a budget each). */
void be_poll(struct be *be);
/*
 * The guest's CQ overflowed (no room in its ring): every QP sending or
 * receiving on cq goes to the error state, as hardware does.
 */
void be_cq_error(struct be *be, uint32_t cq);

/* ---- QP ---- */

enum be_qp_type {
	BE_QPT_GSI = 1, /* QP1: MADs through the mux, no host QP */
	BE_QPT_RC = 2,
	BE_QPT_UC = 3,
	BE_QPT_UD = 4,
};

struct be_qp_init {
	enum be_qp_type type;
	uint32_t pd, send_cq, recv_cq;
	uint32_t srq;	       /* 0: its own receive queue */
	bool sq_sig_all;       /* every send completes (be_wc.signaled) */
	struct ibv_qp_cap cap; /* asked for; clamped result in be_qp_info */
	void *ctx;	       /* comes back in be_wc and async events */
};

struct be_qp_info {
	uint32_t handle;
	uint32_t qp_num; /* host QPN, or 1 for GSI */
	struct ibv_qp_cap cap;
};

/* An address vector; sgid_index is the GUEST's GID index. */
struct be_ah_attr {
	uint8_t dgid[16];
	uint32_t flow_label;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint8_t sl;
	uint8_t static_rate;
	bool global; /* GRH present: required (the port is RoCE) */
};

/* QP attributes; which are valid says an IBV_QP_* mask. */
struct be_qp_attr {
	enum ibv_qp_state qp_state, cur_qp_state;
	enum ibv_mtu path_mtu;
	enum ibv_mig_state path_mig_state;
	uint32_t qkey, rq_psn, sq_psn, dest_qp_num;
	unsigned int qp_access_flags; /* IBV_ACCESS_* */
	uint16_t pkey_index;	      /* only 0 */
	uint8_t en_sqd_async_notify, sq_draining;
	uint8_t max_rd_atomic, max_dest_rd_atomic;
	uint8_t min_rnr_timer, timeout, retry_cnt, rnr_retry;
	uint32_t rate_limit;
	struct ibv_qp_cap cap;
	struct be_ah_attr ah_attr;
};

/*
 * Creates a QP (one GSI QP at most: -EEXIST).  cap is checked against
 * be_device_attr() (-EINVAL), the count against the quota (-ENOSPC).
 */
int be_qp_create(struct be *be, uint32_t want, const struct be_qp_init *init,
		 struct be_qp_info *ret);
/*
 * ibv_modify_qp with mask IBV_QP_*: the AV's guest sgid_index is mapped
 * through the guest GID table (-EINVAL for an empty index), port and
 * P_Key index are the host's.  Never calls back into the frontend.
 */
int be_qp_modify(struct be *be, uint32_t qp, const struct be_qp_attr *attr,
		 int mask);
/* Current attributes (ah_attr.sgid_index mapped back to the guest's). */
int be_qp_query(struct be *be, uint32_t qp, int mask, struct be_qp_attr *ret);
/*
 * Destroys the QP.  Work requests still outstanding complete no more
 * (their host completions are dropped); the frontend returns their ring
 * slots itself.
 */
int be_qp_destroy(struct be *be, uint32_t qp);

/* ---- SRQ ---- */

struct be_srq_init {
	uint32_t pd;
	uint32_t max_wr, max_sge, srq_limit;
	void *ctx;
};

int be_srq_create(struct be *be, uint32_t want, const struct be_srq_init *in,
		  uint32_t *ret_srq, struct ibv_srq_attr *ret_attr);
/* mask IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT */
int be_srq_modify(struct be *be, uint32_t srq, const struct ibv_srq_attr *attr,
		  int mask);
int be_srq_query(struct be *be, uint32_t srq, struct ibv_srq_attr *ret);
/* -EBUSY while QPs use it. */
int be_srq_destroy(struct be *be, uint32_t srq);

/* ---- data path ---- */

struct be_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

struct be_send_wr {
	uint64_t cookie;	   /* the frontend's; comes back in be_wc */
	enum ibv_wr_opcode opcode; /* SEND[_WITH_IMM], RDMA_WRITE[_WITH_IMM],
				      RDMA_READ, ATOMIC_CMP_AND_SWP,
				      ATOMIC_FETCH_AND_ADD */
	unsigned int send_flags;   /* IBV_SEND_SIGNALED, SOLICITED, FENCE,
				      INLINE */
	uint32_t imm_data;	   /* network order */
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
	} wr;
	struct { /* UD and GSI */
		struct be_ah_attr av;
		uint32_t remote_qpn;
		uint32_t remote_qkey;
	} ud;
	uint32_t num_sge; /* <= the QP's max_send_sge */
	const struct be_sge *sge;
	/* IBV_SEND_INLINE: the payload (the frontend's private copy) */
	const void *inline_data;
	uint32_t inline_len;
};

struct be_recv_wr {
	uint64_t cookie;
	uint32_t num_sge;
	const struct be_sge *sge;
};

/*
 * Batches.  Between be_batch_begin() and the matching be_batch_end() (they
 * nest), the posts below stage the work requests they accept and return
 * BE_POSTED; the staged WRs of one queue go to the host as one linked list
 * per ibv_post_send / ibv_post_recv / ibv_post_srq_recv call, at
 * be_batch_end(), or earlier when a post names another queue or the stage
 * is full (BE_BATCH WRs, or their inline payload).  When the host refuses
 * a list at position k (its bad_wr), the first k WRs are on the host
 * queue and WR k and every later WR of that list never run: each comes
 * back through ops->completion with IBV_WC_LOC_QP_OP_ERR and be_wc.refused,
 * in posting order, from inside the call that posted the list (so a
 * frontend writes one error CQE per refused WR, in order, as its ABI says
 * for a WR the device could not post).  Outside a batch every post is a
 * list of one and a refusal is BE_DONE, as below.  Checks that do not need
 * the host (opcode, SGE count, keys, AV) still refuse at once (BE_DONE).
 */
void be_batch_begin(struct be *be);
void be_batch_end(struct be *be);

/* What a post did with a work request. */
enum be_post {
	/* on the host queue: its be_wc comes through ops->completion */
	BE_POSTED = 0,
	/* finished now (refused, or QP1 handed to the mux): *ret_status
	 * says how and *why why not; no be_wc follows */
	BE_DONE = 1,
};

/*
 * Posts a send on QP qp.  SGEs are checked against guest memory and the
 * PD's MRs where the backend copies (QP1) and by the host HCA otherwise
 * (host keys are the guest's keys); the DMA MR's lkey is mapped to the
 * host key of the guest memory region holding the SGE.
 */
enum be_post be_post_send(struct be *be, uint32_t qp,
			  const struct be_send_wr *wr,
			  enum ibv_wc_status *ret_status, struct reason *why);
/* A receive on QP qp's own receive queue (QP1: held until a MAD comes). */
enum be_post be_post_recv(struct be *be, uint32_t qp,
			  const struct be_recv_wr *wr,
			  enum ibv_wc_status *ret_status, struct reason *why);
enum be_post be_post_srq_recv(struct be *be, uint32_t srq,
			      const struct be_recv_wr *wr,
			      enum ibv_wc_status *ret_status,
			      struct reason *why);

#endif
