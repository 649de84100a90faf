/* SPDX-License-Identifier: MIT */
/*
 * Internals of the PVRDMA function (worker/pvrdma/pvrdma.h): its state and
 * the split into registers and DSR (dev.c), commands (dev_cmd.c) and the
 * data path: doorbells, completions, events (dev_data.c).
 *
 * Guest memory is reached only by guest physical address through the
 * vfio-user DMA regions, per access: the device keeps no pointer into
 * guest memory across calls, so a DMA_UNMAP never leaves one dangling.
 * Every structure is copied out once and checked by the pure decoders.
 */
#ifndef RDMAGATE_WORKER_PVRDMA_DEV_H
#define RDMAGATE_WORKER_PVRDMA_DEV_H

#include <stdbool.h>
#include <stdint.h>

#include "common/pvrdma_abi.h"
#include "common/ratelimit.h"
#include "worker/backend/backend.h"
#include "worker/pvrdma/cmd.h"
#include "worker/pvrdma/dsr.h"
#include "worker/pvrdma/lat_hist.h"
#include "worker/pvrdma/pdir.h"
#include "worker/pvrdma/pvrdma.h"

/* A ring in guest pages: its state word pair and its slots. */
struct pvrdma_ring_map {
	const struct pvrdma_pages *pages; /* the owning object's */
	uint32_t state_off; /* byte offset of its struct pvrdma_ring */
	uint64_t data_off;  /* byte offset of slot 0 (page-aligned) */
	uint32_t nelems;    /* a power of two */
	uint32_t esize;	    /* bytes per slot, a power of two <= 4 KiB */
};

struct pvrdma_cq {
	uint32_t handle;
	struct pvrdma_pages pages;
	struct pvrdma_ring_map ring;
	bool armed;
	bool overflowed; /* reported once, until the guest catches up */
	/*
	 * Doorbells in shared memory (dev_data.c): the last notification,
	 * the guest's cons_head then, and when (CLOCK_MONOTONIC).
	 */
	bool notified;
	uint32_t notified_head;
	uint64_t notified_ns;
	/* a notification held back until due_ns (dev_data.c, cqe_written()) */
	bool deferred;
	uint32_t deferred_head;
	uint64_t due_ns;
	/*
	 * The guest polls this CQ (dev_data.c): it stored CQ POLL twice
	 * since the last CQE (polls counts them: an event-driven guest polls
	 * once after each wake-up), or its last POLLER_AFTER held-back
	 * notifications were not needed (saved_run); the next wait longer.
	 */
	bool poller;
	uint8_t polls;
	uint8_t saved_run;
	/*
	 * How long this guest takes to read a CQE it was not notified of:
	 * written_ns is when the held-back CQE was written, read_ns a
	 * decaying maximum of the times it took (dev_data.c, poller_wait()).
	 */
	uint64_t written_ns;
	uint64_t read_ns;
};

struct pvrdma_qp {
	uint32_t handle;
	uint32_t qpn;
	enum be_qp_type type;
	struct pvrdma_pages pages;
	struct pvrdma_ring_map sq, rq;
	bool has_rq, sq_sig_all, broken;
	uint32_t max_send_sge, max_recv_sge;
	uint32_t send_cq, recv_cq, srq;
	uint32_t events; /* async events reported (DESTROY_QP's answer) */
};

struct pvrdma_srq {
	uint32_t handle;
	struct pvrdma_pages pages;
	struct pvrdma_ring_map ring;
	uint32_t max_sge;
	bool broken;
};

/* Doorbells by kind (the data path's profile, docs/benchmarks.md). */
enum pvrdma_db_kind {
	PVRDMA_DB_QP_SEND,
	PVRDMA_DB_QP_RECV,
	PVRDMA_DB_CQ_ARM,
	PVRDMA_DB_CQ_POLL,
	PVRDMA_DB_SRQ,
	PVRDMA_DB_OTHER,
	PVRDMA_DB_KINDS
};

struct pvrdma_stats {
	uint64_t commands, command_errors, doorbells, wqe_refused;
	uint64_t cqes, cq_overflows, events, events_dropped, irqs;
	uint64_t db[PVRDMA_DB_KINDS];
	/* notifications held back and then not needed (shared doorbells) */
	uint64_t notifies_saved;
	/* the longest wait a polled CQ's notification was given, in ns */
	uint64_t poller_wait_max_ns;
	/*
	 * The request-response split (pvrdma_rr_*): rounds seen, and the
	 * time from a SEND posted to the host to the next receive's CQE
	 * written (the device's part: host, fabric, peer, worker) and from
	 * that CQE to the next SEND posted (the guest's part, with the
	 * worker's look for its doorbell).  Meaningful for one request-
	 * response stream at a time (a latency benchmark's).  The sums give
	 * the means; the histograms (microseconds) the medians, which a TCG
	 * guest's outliers do not move.  rr_ack_us splits the device's
	 * part: from the SEND posted to its own completion seen by the
	 * worker (the host's stack, the fabric and the peer's HCA ACKing,
	 * no peer process), the rest being the peer's reply.
	 */
	uint64_t rr_rounds, rr_device_ns, rr_guest_ns;
	struct lat_hist rr_device_us, rr_guest_us, rr_ack_us;
};

struct pvrdma_dev {
	struct pci_fn *fn;
	const struct pvrdma_cfg *cfg;
	struct dev_env env;
	struct be *be;

	/* BAR1 */
	uint32_t dsr_low, dsr_high, err, icr, imr, macl, mach;
	bool dsr_ok, active;
	struct pvrdma_dsr_info dsr;
	struct pvrdma_device_caps caps;
	struct pvrdma_cmd_limits lim;
	uint32_t gid_tbl_len; /* the backend's guest GID table */
	struct pvrdma_pages async_pages, cqn_pages;
	struct pvrdma_ring_map async, cqn;

	/* objects by handle (1..n - 1) */
	struct pvrdma_cq **cqs;
	struct pvrdma_qp **qps;
	struct pvrdma_srq **srqs;
	uint32_t ncqs, nqps, nsrqs;
	/* user contexts: ctx handle i (1..) owns UAR page uc_uar[i] */
	uint16_t uc_uar[PVRDMA_UAR_PAGES];
	uint32_t uc_end; /* every live handle is below it */

	/* a UAR write came as a message: BAR2 is not mapped by the client */
	bool uar_by_msg;
	/* the last doorbell or CQE (CLOCK_MONOTONIC), for poll_timeout_ns */
	uint64_t active_ns;
	/* some CQ's notification is held back until deferred_due_ns (the
	 * earliest): the loop wakes then */
	bool deferred_any;
	uint64_t deferred_due_ns;
	/* the last look for long-unread CQs (renotify_unread) */
	uint64_t renotify_ns;
	/* the last SEND posted and receive CQE written, for the split;
	 * whether that SEND's completion was seen */
	uint64_t rr_send_ns, rr_recv_ns;
	bool rr_acked;

	struct pvrdma_stats stats;
	/* the log's limit of refusals per command code (PVRDMA_CMD_MAX:
	 * unknown, or before ACTIVATE), in front of the VM's peer limit */
	struct ratelimit refusal_rl[PVRDMA_CMD_MAX + 1];
};

/* dev.c: guest memory and interrupts */
/*
 * Host view of [gpa, gpa + len) in one DMA region, or NULL (also while bus
 * mastering is off, and for a write into a read-only region); valid until
 * the next DMA region change.  write: the device stores through it.
 */
void *pvrdma_dma_ptr(struct pvrdma_dev *d, uint64_t gpa, size_t len,
		     bool write);
int pvrdma_dma_read(struct pvrdma_dev *d, uint64_t gpa, void *buf, size_t len);
int pvrdma_dma_write(struct pvrdma_dev *d, uint64_t gpa, const void *buf,
		     size_t len);
/* Raises `vector` unless the guest masked interrupts (IMR). */
void pvrdma_raise(struct pvrdma_dev *d, unsigned int vector);
/* What a page directory's pages are for (what the device does there). */
enum pvrdma_pages_use {
	PVRDMA_PAGES_MR,       /* the backend checks them when it maps them */
	PVRDMA_PAGES_RING_IN,  /* the guest produces (SQ, RQ, SRQ) */
	PVRDMA_PAGES_RING_OUT, /* the device produces (CQ, async, CQN) */
};
/*
 * Walks a directory of npages (<= max) pages into *ret, logging why not;
 * a ring's pages must all be guest memory, its state page (page 0) and
 * every page of a RING_OUT writable.
 */
int pvrdma_map_pages(struct pvrdma_dev *d, uint64_t pdir, uint32_t npages,
		     uint32_t max, const char *what, enum pvrdma_pages_use use,
		     struct pvrdma_pages *ret);

/* dev_cmd.c */
/*
 * Refusal lines per command code: at most PVRDMA_REFUSAL_BURST per
 * PVRDMA_REFUSAL_WINDOW_MS, each also within the VM's peer limit
 * (common/log.h); set up by pvrdma_refusal_log_init().
 */
#define PVRDMA_REFUSAL_BURST	 4
#define PVRDMA_REFUSAL_WINDOW_MS 60000
void pvrdma_refusal_log_init(struct pvrdma_dev *d);
/* Executes the command slot: response, REG_ERR, vector 0. */
void pvrdma_exec_cmd(struct pvrdma_dev *d);
/* Frees every object (after be_reset()/be_destroy()). */
void pvrdma_free_objects(struct pvrdma_dev *d);

/* dev_data.c */
void pvrdma_uar_write(struct pvrdma_dev *d, uint64_t off, uint32_t val);
/*
 * Takes the doorbells the guest stored in the shared UAR BAR since the
 * last call and does their work; on an idle round (the loop is not
 * spinning) that found none, also re-notifies CQs whose CQEs the guest
 * has left unread for long.  Returns the doorbells taken that asked for
 * work (a CQ POLL alone does not count: the loop's spin ignores it).
 */
unsigned int pvrdma_uar_scan(struct pvrdma_dev *d, bool idle);
/*
 * Doorbells reach this device as stores to the shared UAR BAR: the worker
 * offers it (cfg->uar) and no UAR write came as a message (a client that
 * does not map BAR2 sends them all as REGION_WRITEs).
 */
static inline bool pvrdma_uar_shared(const struct pvrdma_dev *d)
{
	return d->cfg->uar && !d->uar_by_msg;
}
/* Posts an async event (type, info) to the guest. */
void pvrdma_post_event(struct pvrdma_dev *d, uint32_t type, uint32_t info);
extern const struct be_frontend_ops pvrdma_be_ops;

/* Reads / writes the state pair of a ring (prod_tail, cons_head). */
int pvrdma_ring_state_read(struct pvrdma_dev *d,
			   const struct pvrdma_ring_map *r, uint32_t *ret_tail,
			   uint32_t *ret_head);
/* Stores one index of the pair (release: after the slot it covers). */
int pvrdma_ring_index_store(struct pvrdma_dev *d,
			    const struct pvrdma_ring_map *r, bool tail,
			    uint32_t val);
/* Guest address of slot `slot` of a ring. */
int pvrdma_ring_slot_gpa(const struct pvrdma_ring_map *r, uint32_t slot,
			 uint64_t *ret_gpa);

#endif
