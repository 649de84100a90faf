// SPDX-License-Identifier: MIT
/*
 * The PVRDMA data path: UAR doorbells (QP send/receive, SRQ receive, CQ
 * arm and poll) read WQEs from the guest's rings into the backend; the
 * backend's completions become CQEs in the guest's CQ rings, with CQ
 * notifications and async events on the DSR's rings (docs/pvrdma.md).
 *
 * Memory ordering: guest rings live in shared memory. The device reads a
 * producer index, then (acquire) the slots it covers, copies each slot
 * once, and only then (release) stores its consumer index; as producer it
 * writes a slot, then (release) the producer index. The guest's indices
 * are re-checked on every read (ring.h): a bad one stops that ring.
 */
#include <errno.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "worker/pvrdma/dev.h"
#include "worker/pvrdma/ring.h"
#include "worker/pvrdma/wqe.h"

/* ---- rings in guest memory ---- */

static uint32_t *index_ptr(struct pvrdma_dev *d,
			   const struct pvrdma_ring_map *r, bool tail,
			   bool write)
{
	if (!r->pages || !r->pages->n)
		return NULL;
	return pvrdma_dma_ptr(d,
			      r->pages->gpa[0] + r->state_off + (tail ? 0 : 4),
			      sizeof(uint32_t), write);
}

int pvrdma_ring_state_read(struct pvrdma_dev *d,
			   const struct pvrdma_ring_map *r, uint32_t *ret_tail,
			   uint32_t *ret_head)
{
	uint32_t *t = index_ptr(d, r, true, false);
	uint32_t *h = index_ptr(d, r, false, false);

	if (!t || !h)
		return -EFAULT;
	*ret_tail = __atomic_load_n(t, __ATOMIC_ACQUIRE);
	*ret_head = __atomic_load_n(h, __ATOMIC_ACQUIRE);
	return 0;
}

int pvrdma_ring_index_store(struct pvrdma_dev *d,
			    const struct pvrdma_ring_map *r, bool tail,
			    uint32_t val)
{
	uint32_t *p = index_ptr(d, r, tail, true);

	if (!p)
		return -EFAULT;
	__atomic_store_n(p, val, __ATOMIC_RELEASE);
	return 0;
}

int pvrdma_ring_slot_gpa(const struct pvrdma_ring_map *r, uint32_t slot,
			 uint64_t *ret_gpa)
{
	if (slot >= r->nelems)
		return -ERANGE;
	return pvrdma_pages_gpa(r->pages,
				r->data_off + (uint64_t)slot * r->esize,
				r->esize, ret_gpa);
}

/*
 * Appends one entry to a ring the device produces. 0, -ENOSPC (full),
 * -EINVAL (the guest broke the indices) or -EFAULT.
 */
static int ring_produce(struct pvrdma_dev *d, const struct pvrdma_ring_map *r,
			const void *entry, size_t len)
{
	uint32_t tail, head, slot;
	uint64_t gpa;
	int k;

	if (pvrdma_ring_state_read(d, r, &tail, &head) < 0)
		return -EFAULT;
	k = pvrdma_ring_has_space(tail, head, r->nelems, &slot);
	if (k <= 0)
		return k == 0 ? -ENOSPC : -EINVAL;
	if (pvrdma_ring_slot_gpa(r, slot, &gpa) < 0 ||
	    pvrdma_dma_write(d, gpa, entry, len) < 0)
		return -EFAULT;
	return pvrdma_ring_index_store(d, r, true,
				       pvrdma_idx_inc(tail, r->nelems));
}

/* ---- async events and CQ notifications ---- */

void pvrdma_post_event(struct pvrdma_dev *d, uint32_t type, uint32_t info)
{
	struct pvrdma_eqe e = { type, info };

	if (!d->dsr_ok || ring_produce(d, &d->async, &e, sizeof(e)) < 0) {
		d->stats.events_dropped++;
		return;
	}
	d->stats.events++;
	pvrdma_raise(d, PVRDMA_INTR_VECTOR_ASYNC);
}

/*
 * Whether a CQE (or a re-check) must notify.  With doorbells as messages
 * the device sees every ARM: only an armed CQ notifies.  With doorbells
 * in shared memory (pvrdma_uar_scan) it cannot know the arm state: the
 * provider re-arms and then polls, and the POLL store overwrites the ARM
 * before the device takes it.  Every CQ then counts as armed, and a
 * notification is left out only while the guest has not consumed a CQE
 * since the last one: it still has that notification to act on, and will
 * poll the whole ring.  A spurious notification at worst, never a lost
 * one (the kernel driver passes it to the CQ's completion handler, which
 * a CQ without a completion channel ignores).
 */
static bool notify_due(struct pvrdma_dev *d, const struct pvrdma_cq *cq,
		       uint32_t head)
{
	if (cq->armed)
		return true;
	if (!pvrdma_uar_shared(d))
		return false;
	return !cq->notified || head != cq->notified_head;
}

static void notify_cq(struct pvrdma_dev *d, struct pvrdma_cq *cq)
{
	struct pvrdma_cqne n = { cq->handle };
	uint32_t tail, head = 0;

	if (pvrdma_uar_shared(d) &&
	    pvrdma_ring_state_read(d, &cq->ring, &tail, &head) < 0)
		return;
	if (!notify_due(d, cq, head))
		return;
	cq->armed = false;
	if (!d->dsr_ok || ring_produce(d, &d->cqn, &n, sizeof(n)) < 0) {
		d->stats.events_dropped++;
		return;
	}
	cq->notified = true;
	cq->notified_head = head;
	cq->notified_ns = mono_ns();
	/* it covers a held-back one: the next CQE is held back anew */
	cq->deferred = false;
	pvrdma_raise(d, PVRDMA_INTR_VECTOR_CQ);
}

/*
 * With doorbells in shared memory and the arm state unknown, a CQE's
 * notification is held back: a guest that busy-polls the CQ reads the CQE
 * meanwhile and needs no interrupt (in a nested TCG guest one interrupt
 * costs it milliseconds, more than any polling); a guest that waits for an
 * event gets it that much later.  NOTIFY_DEFER_NS at first.  A CQ the
 * guest is seen polling (two CQ POLL stores since the last CQE, or
 * POLLER_AFTER notifications in a row not needed) waits longer: learned
 * from the guest itself, POLLER_WAIT_MULT times the longest it recently
 * took to read a CQE it was not notified of (poller_wait()), within
 * [POLLER_WAIT_MIN_NS, POLLER_WAIT_MAX_NS].  A guest whose poll loop
 * reads a CQE within microseconds (KVM) waits the minimum; a nested TCG
 * guest, whose loop can stall for milliseconds, waits past its own stalls
 * instead of taking an interrupt storm that slows it further.  What an
 * application that polls and then arms (its ARM lost under a POLL) pays
 * is bounded by the same multiple of its own polling time.  A notification
 * that is needed after all, or an ARM the device sees, makes the CQ
 * unpolled again (NOTIFY_DEFER_NS); what was learned of the guest stays.
 * The loop wakes when the first is due (poll_timeout_ns).
 */
#define NOTIFY_DEFER_NS	   (100ull * 1000)
#define POLLER_WAIT_MIN_NS (200ull * 1000)
#define POLLER_WAIT_MAX_NS (50ull * 1000 * 1000)
#define POLLER_WAIT_MULT   4
/* read_ns 0 (none read unnotified yet) counts as this: 4 ms at first */
#define POLLER_READ_INIT_NS (1000ull * 1000)
/* read_ns loses 1/READ_DECAY of itself at each new time taken */
#define READ_DECAY   16
#define POLLER_AFTER 4
#define POLLER_POLLS 2

static uint64_t poller_wait(struct pvrdma_dev *d, const struct pvrdma_cq *cq)
{
	uint64_t w = POLLER_WAIT_MULT *
		     (cq->read_ns ? cq->read_ns : POLLER_READ_INIT_NS);

	if (w < POLLER_WAIT_MIN_NS)
		w = POLLER_WAIT_MIN_NS;
	if (w > POLLER_WAIT_MAX_NS)
		w = POLLER_WAIT_MAX_NS;
	if (w > d->stats.poller_wait_max_ns)
		d->stats.poller_wait_max_ns = w;
	return w;
}

static void cqe_written(struct pvrdma_dev *d, struct pvrdma_cq *cq)
{
	uint32_t tail, head;
	uint64_t now;

	if (cq->armed || !pvrdma_uar_shared(d)) {
		notify_cq(d, cq);
		return;
	}
	if (cq->deferred ||
	    pvrdma_ring_state_read(d, &cq->ring, &tail, &head) < 0)
		return;
	now = mono_ns();
	cq->deferred = true;
	cq->deferred_head = head;
	cq->written_ns = now;
	cq->due_ns = now + (cq->poller ? poller_wait(d, cq) : NOTIFY_DEFER_NS);
	if (!d->deferred_any || cq->due_ns < d->deferred_due_ns)
		d->deferred_due_ns = cq->due_ns;
	d->deferred_any = true;
}

/*
 * A held-back notification was not needed: the guest read the CQE, which
 * took it now - written_ns (to the loop's look, 50 us while warm).
 */
static void deferred_saved(struct pvrdma_dev *d, struct pvrdma_cq *cq,
			   uint64_t now)
{
	uint64_t took = now - cq->written_ns;

	cq->read_ns -= cq->read_ns / READ_DECAY;
	if (took > cq->read_ns)
		cq->read_ns = took;
	cq->deferred = false;
	d->stats.notifies_saved++;
	if (cq->saved_run < POLLER_AFTER)
		cq->saved_run++;
	/* it makes a CQ polled, never the contrary (CQ POLL stores may have) */
	if (cq->saved_run >= POLLER_AFTER)
		cq->poller = true;
}

/* It was: the guest waits for events on this CQ (or polls too slowly). */
static void deferred_due(struct pvrdma_dev *d, struct pvrdma_cq *cq)
{
	cq->deferred = false;
	cq->saved_run = 0;
	cq->polls = 0;
	cq->poller = false;
	notify_cq(d, cq);
}

/*
 * Deferred notifications: dropped once the guest has consumed a CQE since
 * (it polls, and reads the rest of the ring), sent once due without that.
 */
static void flush_deferred(struct pvrdma_dev *d)
{
	uint64_t now = mono_ns(), due = UINT64_MAX;
	uint32_t h, tail, head;
	bool left = false;

	if (!d->deferred_any)
		return;
	for (h = 0; h < d->ncqs; h++) {
		struct pvrdma_cq *cq = d->cqs[h];

		if (!cq || !cq->deferred)
			continue;
		if (pvrdma_ring_state_read(d, &cq->ring, &tail, &head) == 0 &&
		    head != cq->deferred_head) {
			deferred_saved(d, cq, now);
		} else if (now >= cq->due_ns || cq->armed) {
			deferred_due(d, cq);
		} else {
			left = true;
			if (cq->due_ns < due)
				due = cq->due_ns;
		}
	}
	d->deferred_any = left;
	d->deferred_due_ns = due;
}

/* ---- completions ---- */

static struct pvrdma_cq *cq_of(struct pvrdma_dev *d, uint32_t h)
{
	return h < d->ncqs ? d->cqs[h] : NULL;
}

/* Writes one CQE; a full or broken ring is the CQ overflow of verbs. */
static void write_cqe(struct pvrdma_dev *d, struct pvrdma_cq *cq,
		      const struct pvrdma_cqe *cqe)
{
	int r = ring_produce(d, &cq->ring, cqe, sizeof(*cqe));

	if (r == 0) {
		d->stats.cqes++;
		d->active_ns = mono_ns();
		cq->overflowed = false;
		cq->polls = 0;
		cqe_written(d, cq);
		return;
	}
	d->stats.cq_overflows++;
	if (cq->overflowed)
		return;
	cq->overflowed = true;
	log_peer_warnx("pvrdma: CQ %u: completion lost (%s)", cq->handle,
		       r == -ENOSPC ? "ring full" : "ring state invalid");
	be_cq_error(d->be, cq->handle);
	pvrdma_post_event(d, PVRDMA_EVENT_CQ_ERR, cq->handle);
}

/*
 * The request-response split: a round is a SEND posted, then a receive's
 * CQE written; the guest's part runs from that CQE to the next SEND.
 */
static void rr_send_posted(struct pvrdma_dev *d)
{
	uint64_t now = mono_ns();

	if (d->rr_recv_ns > d->rr_send_ns && d->rr_send_ns) {
		d->stats.rr_guest_ns += now - d->rr_recv_ns;
		lat_hist_add(&d->stats.rr_guest_us,
			     (now - d->rr_recv_ns) / 1000);
	}
	d->rr_send_ns = now;
	d->rr_acked = false;
}

/* The round's SEND completed on the host (the first send completion). */
static void rr_send_completed(struct pvrdma_dev *d)
{
	if (d->rr_send_ns <= d->rr_recv_ns || d->rr_acked)
		return;
	d->rr_acked = true;
	lat_hist_add(&d->stats.rr_ack_us, (mono_ns() - d->rr_send_ns) / 1000);
}

static void rr_recv_written(struct pvrdma_dev *d)
{
	uint64_t now = mono_ns();

	if (d->rr_send_ns > d->rr_recv_ns) {
		d->stats.rr_device_ns += now - d->rr_send_ns;
		d->stats.rr_rounds++;
		lat_hist_add(&d->stats.rr_device_us,
			     (now - d->rr_send_ns) / 1000);
	}
	d->rr_recv_ns = now;
}

static void fe_completion(void *fe, const struct be_wc *wc)
{
	struct pvrdma_dev *d = fe;
	struct pvrdma_cq *cq = wc->cq_ctx;
	struct pvrdma_cqe cqe;

	if (!wc->recv && wc->status == IBV_WC_SUCCESS)
		rr_send_completed(d);
	if (!wc->signaled && wc->status == IBV_WC_SUCCESS)
		return;
	if (!cq || pvrdma_cqe_encode(wc, wc->cookie, wc->qp, &cqe) < 0) {
		log_peer_warnx(
			"pvrdma: completion without a CQ or out of the ABI");
		return;
	}
	write_cqe(d, cq, &cqe);
	if (wc->recv && wc->status == IBV_WC_SUCCESS)
		rr_recv_written(d);
}

/* A work request that finished without a host completion. */
static void complete_now(struct pvrdma_dev *d, const struct pvrdma_qp *qp,
			 bool recv, uint64_t wr_id, enum ibv_wc_opcode op,
			 enum ibv_wc_status status, bool signaled)
{
	struct pvrdma_cq *cq = cq_of(d, recv ? qp->recv_cq : qp->send_cq);
	struct be_wc wc;
	struct pvrdma_cqe cqe;

	if (!cq || (!signaled && status == IBV_WC_SUCCESS))
		return;
	memset(&wc, 0, sizeof(wc));
	wc.status = status;
	wc.opcode = op;
	wc.qp = qp->handle;
	wc.qp_num = qp->qpn;
	if (pvrdma_cqe_encode(&wc, wr_id, qp->handle, &cqe) == 0)
		write_cqe(d, cq, &cqe);
}

/* ---- async events from the host ---- */

static void fe_async_event(void *fe, const struct be_async_event *ev)
{
	struct pvrdma_dev *d = fe;
	struct pvrdma_qp *qp = ev->obj == BE_OBJ_QP ? ev->ctx : NULL;

	/* enum pvrdma_eqe_type is enum ibv_event_type up to GID_CHANGE */
	if ((unsigned int)ev->type >= PVRDMA_EVENT_MAX)
		return;
	if (qp)
		qp->events++;
	pvrdma_post_event(d, (uint32_t)ev->type, ev->handle);
}

static void fe_gid_done(void *fe, uint32_t index, int result, void *cookie)
{
	(void)fe;
	(void)cookie;
	if (result < 0)
		log_peer_warnx("pvrdma: GID index %u refused by the broker: %s",
			       index, strerror(-result));
}

const struct be_frontend_ops pvrdma_be_ops = {
	.completion = fe_completion,
	.async_event = fe_async_event,
	.gid_done = fe_gid_done,
};

/* ---- doorbells ---- */

/*
 * Takes the WQE at the consumer index of ring r into buf (the slot's
 * size): 1 (one taken, *ret_head is the index to store after it), 0
 * (empty), -errno (the guest's indices or pages are bad).
 */
static int ring_take(struct pvrdma_dev *d, const struct pvrdma_ring_map *r,
		     void *buf, uint32_t *ret_head)
{
	uint32_t tail, head, slot;
	uint64_t gpa;
	int k;

	if (pvrdma_ring_state_read(d, r, &tail, &head) < 0)
		return -EFAULT;
	k = pvrdma_ring_has_data(tail, head, r->nelems, &slot);
	if (k <= 0)
		return k;
	if (pvrdma_ring_slot_gpa(r, slot, &gpa) < 0 ||
	    pvrdma_dma_read(d, gpa, buf, r->esize) < 0)
		return -EFAULT;
	*ret_head = pvrdma_idx_inc(head, r->nelems);
	return 1;
}

static void qp_broken(struct pvrdma_dev *d, struct pvrdma_qp *qp, int err,
		      const char *which)
{
	if (qp->broken)
		return;
	qp->broken = true;
	log_peer_warnx("pvrdma: QP %u: %s ring %s: stopped", qp->handle, which,
		       err == -EINVAL ? "indices invalid"
				      : "not in guest memory");
	qp->events++;
	pvrdma_post_event(d, PVRDMA_EVENT_QP_FATAL, qp->handle);
}

static void post_one_send(struct pvrdma_dev *d, struct pvrdma_qp *qp,
			  const uint8_t *slot)
{
	struct pvrdma_sq_limits lim = { qp->type, qp->max_send_sge,
					d->caps.gid_tbl_len };
	struct pvrdma_sq_wqe_hdr h;
	struct pvrdma_send s;
	struct reason why;
	enum ibv_wc_status st;
	uint64_t wr_id = 0;
	bool sig;

	memcpy(&h, slot, sizeof(h)); /* the slot is >= one header */
	sig = qp->sq_sig_all || (h.send_flags & PVRDMA_SEND_SIGNALED);
	if (pvrdma_sq_wqe_decode(slot, qp->sq.esize, &lim, &s, &wr_id, &why) <
	    0) {
		d->stats.wqe_refused++;
		complete_now(d, qp, false, wr_id,
			     pvrdma_send_wc_opcode(h.opcode),
			     IBV_WC_LOC_QP_OP_ERR, true);
		return;
	}
	if (be_post_send(d->be, qp->handle, &s.wr, &st, &why) == BE_DONE)
		complete_now(d, qp, false, wr_id,
			     pvrdma_send_wc_opcode(h.opcode), st, sig);
	else
		rr_send_posted(d);
}

static void post_one_recv(struct pvrdma_dev *d, struct pvrdma_qp *qp,
			  const uint8_t *slot)
{
	struct pvrdma_recv rv;
	struct reason why;
	enum ibv_wc_status st;
	uint64_t wr_id = 0;

	if (pvrdma_rq_wqe_decode(slot, qp->rq.esize, qp->max_recv_sge, &rv,
				 &wr_id, &why) < 0) {
		d->stats.wqe_refused++;
		complete_now(d, qp, true, wr_id, IBV_WC_RECV,
			     IBV_WC_LOC_LEN_ERR, true);
		return;
	}
	if (be_post_recv(d->be, qp->handle, &rv.wr, &st, &why) == BE_DONE)
		complete_now(d, qp, true, wr_id, IBV_WC_RECV, st, true);
}

/* Drains up to one ring's worth of WQEs (bounded however the guest
 * moves its producer index meanwhile). */
static void drain_qp_ring(struct pvrdma_dev *d, struct pvrdma_qp *qp, bool recv)
{
	const struct pvrdma_ring_map *r = recv ? &qp->rq : &qp->sq;
	uint8_t slot[PVRDMA_PAGE_SIZE];
	uint32_t n, head;
	int k;

	if (qp->broken || (recv && !qp->has_rq))
		return;
	for (n = 0; n < r->nelems; n++) {
		k = ring_take(d, r, slot, &head);
		if (k < 0) {
			qp_broken(d, qp, k, recv ? "receive" : "send");
			return;
		}
		if (k == 0)
			return;
		if (recv)
			post_one_recv(d, qp, slot);
		else
			post_one_send(d, qp, slot);
		/* qp may be gone only through a command, never here */
		pvrdma_ring_index_store(d, r, false, head);
	}
}

/*
 * One doorbell's WQEs go to the host as one list (backend.h, "Batches"):
 * a WQE the host refuses comes back through fe_completion() as an error
 * CQE, as a WQE it fails later does.
 */
static void drain_qp(struct pvrdma_dev *d, struct pvrdma_qp *qp, bool recv)
{
	be_batch_begin(d->be);
	drain_qp_ring(d, qp, recv);
	be_batch_end(d->be);
}

static void drain_srq(struct pvrdma_dev *d, struct pvrdma_srq *srq)
{
	uint8_t slot[PVRDMA_PAGE_SIZE];
	struct pvrdma_recv rv;
	struct reason why;
	enum ibv_wc_status st;
	uint32_t n, head;
	uint64_t wr_id;
	int k;

	for (n = 0; n < srq->ring.nelems && !srq->broken; n++) {
		k = ring_take(d, &srq->ring, slot, &head);
		if (k <= 0) {
			if (k < 0) {
				srq->broken = true;
				pvrdma_post_event(d, PVRDMA_EVENT_SRQ_ERR,
						  srq->handle);
			}
			return;
		}
		/* An SRQ has no CQ of its own: a refused WQE is dropped. */
		if (pvrdma_rq_wqe_decode(slot, srq->ring.esize, srq->max_sge,
					 &rv, &wr_id, &why) < 0)
			d->stats.wqe_refused++;
		else
			be_post_srq_recv(d->be, srq->handle, &rv.wr, &st, &why);
		pvrdma_ring_index_store(d, &srq->ring, false, head);
	}
}

/* The guest's CQ ring holds CQEs it has not consumed yet. */
static bool cq_has_unread(struct pvrdma_dev *d, const struct pvrdma_cq *cq)
{
	uint32_t tail, head, slot;

	if (pvrdma_ring_state_read(d, &cq->ring, &tail, &head) < 0)
		return false;
	return pvrdma_ring_has_data(tail, head, cq->ring.nelems, &slot) > 0;
}

static void doorbell_cq(struct pvrdma_dev *d, uint32_t val)
{
	struct pvrdma_cq *cq = cq_of(d, val & PVRDMA_UAR_HANDLE_MASK);

	if (!cq)
		return;
	/* Solicited-only arming notifies on any completion (as QEMU). */
	if (val & (PVRDMA_UAR_CQ_ARM | PVRDMA_UAR_CQ_ARM_SOL)) {
		d->stats.db[PVRDMA_DB_CQ_ARM]++;
		cq->armed = true;
		/* it waits for events now: held-back ones are short again */
		cq->poller = false;
		cq->saved_run = 0;
		cq->polls = 0;
		/*
		 * The arm is a posted write: a completion written after the
		 * provider's last poll but before this arm found the CQ
		 * unarmed and raised nothing. Unread CQEs at arm time are
		 * that lost wake-up: notify now.
		 */
		if (cq_has_unread(d, cq))
			notify_cq(d, cq);
	}
	if (val & PVRDMA_UAR_CQ_POLL) {
		d->stats.db[PVRDMA_DB_CQ_POLL]++;
		if (cq->polls < POLLER_POLLS && ++cq->polls == POLLER_POLLS)
			cq->poller = true;
		be_cq_poll(d->be, cq->handle, cq->ring.nelems);
	}
}

void pvrdma_uar_write(struct pvrdma_dev *d, uint64_t off, uint32_t val)
{
	uint32_t h = val & PVRDMA_UAR_HANDLE_MASK;
	struct pvrdma_qp *qp;
	struct pvrdma_srq *srq;

	d->stats.doorbells++;
	/* this client did not map BAR2: every ARM is seen, as a message */
	if (d->cfg->uar && !d->uar_by_msg)
		log_info("pvrdma: the client sends doorbells as messages (it "
			 "did not map the UAR BAR): exact CQ arming");
	d->uar_by_msg = true;
	if (!d->active)
		return;
	switch (off % PVRDMA_PAGE_SIZE) {
	case PVRDMA_UAR_QP_OFFSET:
		qp = h < d->nqps ? d->qps[h] : NULL;
		if (!qp)
			return;
		if (val & PVRDMA_UAR_QP_SEND) {
			d->stats.db[PVRDMA_DB_QP_SEND]++;
			drain_qp(d, qp, false);
		}
		if (val & PVRDMA_UAR_QP_RECV) {
			d->stats.db[PVRDMA_DB_QP_RECV]++;
			drain_qp(d, qp, true);
		}
		return;
	case PVRDMA_UAR_CQ_OFFSET:
		doorbell_cq(d, val);
		return;
	case PVRDMA_UAR_SRQ_OFFSET:
		srq = h < d->nsrqs ? d->srqs[h] : NULL;
		if (srq && (val & PVRDMA_UAR_SRQ_RECV)) {
			d->stats.db[PVRDMA_DB_SRQ]++;
			drain_srq(d, srq);
		}
		return;
	default:
		d->stats.db[PVRDMA_DB_OTHER]++;
		return;
	}
}

/* ---- doorbells in shared memory ---- */

/*
 * The client maps BAR2 (the device's memfd, pvrdma_uar_shm_open()) into
 * the guest: a doorbell is then a plain 32-bit store, with no exit and no
 * message, and a later store to the same word replaces an earlier one
 * (docs/pvrdma.md, "Doorbells in shared memory").  The device takes each
 * word with an atomic exchange, so that a store is never taken twice nor
 * lost (a non-zero word is at least one doorbell since the last look), and
 * uses its value as a hint only, never to index anything unchecked:
 *   - a QP word: some QP was rung, maybe several: every QP's rings are
 *     drained (a drain reads the guest's indices and stops at once on an
 *     empty ring);
 *   - an SRQ word: every SRQ likewise;
 *   - a CQ word: as a message would (doorbell_cq); an ARM the device did
 *     not see is covered by notify_due() and, for the one pattern it
 *     cannot cover, by the re-notification of long-unread CQs below.
 * Pages looked at: page 0 (the kernel driver's) and each live user
 * context's.
 */

/* Re-notify a CQ whose CQEs the guest has left unread this long. */
#define RENOTIFY_NS (100ull * 1000 * 1000)

static uint32_t take_word(const struct pvrdma_dev *d, uint32_t page,
			  uint32_t off)
{
	uint32_t *w = d->cfg->uar + ((size_t)page * PVRDMA_PAGE_SIZE + off) /
					    sizeof(uint32_t);

	if (!__atomic_load_n(w, __ATOMIC_RELAXED))
		return 0;
	/* acquire: the rings are read after the store that rang them */
	return __atomic_exchange_n(w, 0, __ATOMIC_ACQ_REL);
}

static void drain_all(struct pvrdma_dev *d, bool qps, bool srqs)
{
	uint32_t h;

	for (h = 0; qps && h < d->nqps; h++) {
		if (!d->qps[h])
			continue;
		drain_qp(d, d->qps[h], false);
		drain_qp(d, d->qps[h], true);
	}
	for (h = 0; srqs && h < d->nsrqs; h++)
		if (d->srqs[h] && !d->srqs[h]->broken)
			drain_srq(d, d->srqs[h]);
}

/*
 * The one lost wake-up notify_due() cannot rule out: a guest that arms a
 * CQ whose ring still holds CQEs it was notified of, without polling in
 * between, and whose ARM store another CQ's doorbell replaced.  A CQ with
 * CQEs unread for RENOTIFY_NS is notified again: a late wake-up at worst.
 */
static void renotify_unread(struct pvrdma_dev *d)
{
	uint64_t now = mono_ns();
	uint32_t h;

	/* a look every RENOTIFY_NS / 4 is enough, not one per idle wake */
	if (now - d->renotify_ns < RENOTIFY_NS / 4)
		return;
	d->renotify_ns = now;

	for (h = 0; h < d->ncqs; h++) {
		struct pvrdma_cq *cq = d->cqs[h];

		/* a held-back notification is flush_deferred()'s to send */
		if (!cq || cq->deferred || !cq_has_unread(d, cq) ||
		    (cq->notified && now - cq->notified_ns < RENOTIFY_NS))
			continue;
		cq->notified = false;
		notify_cq(d, cq);
	}
}

static void count_qp_word(struct pvrdma_dev *d, uint32_t v)
{
	if (v & PVRDMA_UAR_QP_SEND)
		d->stats.db[PVRDMA_DB_QP_SEND]++;
	if (v & PVRDMA_UAR_QP_RECV)
		d->stats.db[PVRDMA_DB_QP_RECV]++;
}

unsigned int pvrdma_uar_scan(struct pvrdma_dev *d, bool idle)
{
	bool qps = false, srqs = false;
	unsigned int n = 0, polls = 0, i;
	uint32_t page, v;

	if (!pvrdma_uar_shared(d) || !d->active)
		return 0;
	for (i = 0; i < PVRDMA_UAR_PAGES && (i == 0 || i < d->uc_end); i++) {
		page = i ? d->uc_uar[i] : 0;
		if (i && !page)
			continue;
		if ((v = take_word(d, page, PVRDMA_UAR_QP_OFFSET))) {
			count_qp_word(d, v);
			qps = true;
			n++;
		}
		if ((v = take_word(d, page, PVRDMA_UAR_CQ_OFFSET))) {
			doorbell_cq(d, v);
			polls += !(v &
				   (PVRDMA_UAR_CQ_ARM | PVRDMA_UAR_CQ_ARM_SOL));
			n++;
		}
		if ((v = take_word(d, page, PVRDMA_UAR_SRQ_OFFSET))) {
			d->stats.db[PVRDMA_DB_SRQ]++;
			srqs = true;
			n++;
		}
	}
	d->stats.doorbells += n;
	if (n)
		d->active_ns = mono_ns();
	drain_all(d, qps, srqs);
	flush_deferred(d);
	if (idle && !n)
		renotify_unread(d);
	/*
	 * A busy-polling guest stores CQ POLL on every empty poll: that keeps
	 * the device warm (active_ns) but is not work that should keep the
	 * loop spinning (the host CQs wake it by their events).
	 */
	return n - polls;
}
