// SPDX-License-Identifier: MIT
/*
 * The virtio-rdma frontend's rings: SQ/RQ elements popped from the guest's
 * virtqueues, decoded on a private copy (wqe.c) and handed to the verbs
 * backend; the backend's completions written as CQEs into the CQ queues;
 * SQ/RQ descriptors returned in posting order (used len 0).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/probes.h"
#include "worker/virtio_rdma/vrdma.h"

_Static_assert((unsigned int)VIRTIO_RDMA_WC_RECV == IBV_WC_RECV, "");
_Static_assert((unsigned int)VIRTIO_RDMA_WC_RECV_RDMA_WITH_IMM ==
		       IBV_WC_RECV_RDMA_WITH_IMM,
	       "");
_Static_assert((unsigned int)VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD ==
		       IBV_WR_ATOMIC_FETCH_AND_ADD,
	       "");
_Static_assert(VIRTIO_RDMA_SEND_INLINE == IBV_SEND_INLINE, "");
_Static_assert(VIRTIO_RDMA_SEND_SIGNALED == IBV_SEND_SIGNALED, "");

static void wr_log(struct vrdma *d, const char *what, uint32_t s,
		   const char *why)
{
	log_peer_warnx("slot %u: %s refused: %s", s, what, why);
}

/* ---- in-order return ---- */

static struct vr_pend *fifo_push(struct vr_fifo *f, uint16_t head)
{
	struct vr_pend *p;

	if (f->count >= VR_RING)
		return NULL;
	p = &f->e[(f->first + f->count) % VR_RING];
	memset(p, 0, sizeof(*p));
	p->head = head;
	f->count++;
	return p;
}

static struct vr_pend *fifo_find(struct vr_fifo *f, uint16_t head)
{
	unsigned int i;

	for (i = 0; i < f->count; i++) {
		struct vr_pend *p = &f->e[(f->first + i) % VR_RING];

		if (!p->done && p->head == head)
			return p;
	}
	return NULL;
}

/* ---- signalling, once per ring and round ---- */

static void notify_later(struct vrdma *d, const struct vq *vq)
{
	if (vq->index < VIRTIO_RDMA_NUM_QUEUES)
		d->notify[vq->index / 64] |= 1ull << (vq->index % 64);
}

void vr_notify_flush(struct vrdma *d)
{
	unsigned int w;

	for (w = 0; w < ARRAY_SIZE(d->notify); w++) {
		while (d->notify[w]) {
			unsigned int b =
				(unsigned int)__builtin_ctzll(d->notify[w]);

			d->notify[w] &= d->notify[w] - 1;
			if (d->vqs[w * 64 + b])
				vq_notify(d->vqs[w * 64 + b]);
		}
	}
}

/* ---- guest CQEs ---- */

static void cq_overflow(struct vrdma *d, uint32_t cqn)
{
	RDMAGATE_CQ_OVERFLOW(rdmagate_probe_vm, cqn);
	d->cq[cqn].overflows++;
	d->st->cq_overflows++;
	if (d->cq[cqn].overflows <= 8)
		log_peer_warnx(
			"CQ %u overflowed (no free CQE buffer on its "
			"queue, %llu times): a completion is lost; its QPs "
			"go to the error state",
			cqn, (unsigned long long)d->cq[cqn].overflows);
	be_cq_error(d->be, cqn + 1);
}

/* Writes one CQE into the next buffer of CQ cqn's queue. */
static void cqe_write(struct vrdma *d, uint32_t cqn,
		      const struct rdma_completion *c)
{
	struct vq_elem *el = &d->celem;
	struct vq *vq = vr_cq_vq(d, cqn);
	uint8_t buf[sizeof(struct virtio_rdma_cqe)];
	int ret;

	if (!vq || vq_pop(vq, el) != 1) {
		cq_overflow(d, cqn);
		return;
	}
	if (el->in_len < sizeof(buf)) {
		log_peer_warnx("CQ %u: buffer of %llu bytes, a CQE needs %zu",
			       cqn, (unsigned long long)el->in_len,
			       sizeof(buf));
		vq_push(vq, el, 0);
		cq_overflow(d, cqn);
		return;
	}
	ret = rdma_cqe_encode(c, buf, sizeof(buf));
	if (ret < 0) {
		log_peer_warnx(
			"CQ %u: completion not encodable (status %u opcode "
			"%u)",
			cqn, c->status, c->opcode);
		memset(buf, 0, sizeof(buf));
	}
	buf_to_iov(vq_elem_in(el), el->in_num, buf, sizeof(buf));
	vq_push(vq, el, sizeof(buf));
	d->st->completions++;
	if (c->status != VIRTIO_RDMA_WC_SUCCESS)
		d->st->completion_errors++;
	/*
	 * A CQ queue is signalled when, and only when, the CQ was armed:
	 * whatever used_event says, as REQ_NOTIFY_CQ asked for the next
	 * completion and a driver that left CQEs unread (ibv_poll_cq of
	 * fewer than there are) has a used_event the used index passed.
	 */
	if (d->cq[cqn].armed) {
		d->cq[cqn].armed = false;
		notify_later(d, vq);
	}
	vq_unsignalled(vq);
}

/*
 * Returns the finished front of a ring's FIFO, each descriptor before its
 * CQE: both used indexes are release stores, so a driver that has read a
 * CQE finds the descriptors up to that WR returned, as verbs promise (the
 * WQE is free once its completion is polled).  The rings are signalled at
 * the end of the round.
 */
static void fifo_drain(struct vrdma *d, struct vr_fifo *f, struct vq *vq)
{
	while (f->count > 0 && f->e[f->first].done) {
		struct vr_pend *p = &f->e[f->first];

		if (vq) {
			vq_push_head(vq, p->head, 0);
			notify_later(d, vq);
		}
		if (p->emit && p->cqn < d->max_cq && d->cq[p->cqn].used)
			cqe_write(d, p->cqn, &p->c);
		f->first = (f->first + 1) % VR_RING;
		f->count--;
	}
}

void vr_slot_flush(struct vrdma *d, uint32_t s)
{
	struct vr_slot *q = &d->slot[s];
	struct vr_fifo *fs[2] = { &q->sq, &q->rq };
	struct vq *vqs[2] = { vr_sq_vq(d, s), vr_rq_vq(d, s) };
	unsigned int k;

	for (k = 0; k < 2; k++) {
		while (fs[k]->count > 0) {
			if (vqs[k])
				vq_push_head(vqs[k],
					     fs[k]->e[fs[k]->first].head, 0);
			fs[k]->first = (fs[k]->first + 1) % VR_RING;
			fs[k]->count--;
		}
		if (vqs[k])
			vq_notify(vqs[k]);
	}
}

/* An element finished here (refused before the backend, or by it). */
static void finish_now(struct vrdma *d, uint32_t s, struct vr_pend *p,
		       enum virtio_rdma_wc_status st)
{
	p->c.status = st;
	p->done = true;
	if (st != VIRTIO_RDMA_WC_SUCCESS)
		p->emit = true;
}

/* A frontend refusal (malformed element): the wr_complete probe too. */
static void refuse(struct vrdma *d, uint32_t s, struct vr_pend *p, bool recv,
		   const char *what, const char *why)
{
	if (recv)
		d->st->recv_errors++;
	else
		d->st->send_errors++;
	wr_log(d, what, s, why);
	RDMAGATE_WR_COMPLETE(rdmagate_probe_vm, d->slot[s].qpn, p->head,
			     (uint32_t)VIRTIO_RDMA_WC_LOC_QP_OP_ERR,
			     (uint32_t)p->c.opcode);
	finish_now(d, s, p, VIRTIO_RDMA_WC_LOC_QP_OP_ERR);
}

/* ---- send ---- */

static enum virtio_rdma_wc_opcode send_wc_opcode(uint32_t op)
{
	switch (op) {
	case VIRTIO_RDMA_WR_RDMA_WRITE:
	case VIRTIO_RDMA_WR_RDMA_WRITE_WITH_IMM:
		return VIRTIO_RDMA_WC_RDMA_WRITE;
	case VIRTIO_RDMA_WR_RDMA_READ:
		return VIRTIO_RDMA_WC_RDMA_READ;
	case VIRTIO_RDMA_WR_ATOMIC_CMP_AND_SWP:
		return VIRTIO_RDMA_WC_COMP_SWAP;
	case VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD:
		return VIRTIO_RDMA_WC_FETCH_ADD;
	default:
		return VIRTIO_RDMA_WC_SEND;
	}
}

static void sges_to_be(const struct virtio_rdma_sge *in, uint32_t n,
		       struct be_sge *out)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		out[i] =
			(struct be_sge){ in[i].addr, in[i].length, in[i].lkey };
}

static void av_to_be(const struct virtio_rdma_av *av, struct be_ah_attr *a)
{
	memset(a, 0, sizeof(*a));
	memcpy(a->dgid, av->dgid, 16);
	a->flow_label = VIRTIO_RDMA_AV_FLOW_LABEL(av->sl_tclass_flowlabel);
	a->traffic_class =
		(uint8_t)VIRTIO_RDMA_AV_TCLASS(av->sl_tclass_flowlabel);
	a->sl = (uint8_t)VIRTIO_RDMA_AV_SL(av->sl_tclass_flowlabel);
	a->sgid_index = av->gid_index;
	a->hop_limit = av->hop_limit;
	a->static_rate = av->stat_rate;
	a->global = true; /* RoCE: the AV is a GRH */
}

/* The decoded send in d->swr as the backend's work request. */
static void send_to_be(const struct rdma_send_wr *w, uint16_t head,
		       struct be_send_wr *b, struct be_sge *sge)
{
	memset(b, 0, sizeof(*b));
	b->cookie = head;
	b->opcode = (enum ibv_wr_opcode)w->opcode; /* equal values */
	b->send_flags = w->send_flags & VIRTIO_RDMA_SEND_FLAGS_SUPPORTED;
	b->imm_data = w->imm_data;
	switch (w->opcode) {
	case VIRTIO_RDMA_WR_ATOMIC_CMP_AND_SWP:
	case VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD:
		b->wr.atomic.remote_addr = w->wr.atomic.remote_addr;
		b->wr.atomic.compare_add = w->wr.atomic.compare_add;
		b->wr.atomic.swap = w->wr.atomic.swap;
		b->wr.atomic.rkey = w->wr.atomic.rkey;
		break;
	case VIRTIO_RDMA_WR_RDMA_WRITE:
	case VIRTIO_RDMA_WR_RDMA_WRITE_WITH_IMM:
	case VIRTIO_RDMA_WR_RDMA_READ:
		b->wr.rdma.remote_addr = w->wr.rdma.remote_addr;
		b->wr.rdma.rkey = w->wr.rdma.rkey;
		break;
	default: /* sends: UD and QP1 carry an address vector */
		av_to_be(&w->wr.ud.av, &b->ud.av);
		b->ud.remote_qpn = w->wr.ud.remote_qpn;
		b->ud.remote_qkey = w->wr.ud.remote_qkey;
		break;
	}
	sges_to_be(w->sge, w->num_sge, sge);
	b->num_sge = w->num_sge;
	b->sge = sge;
	b->inline_data = w->inline_data;
	b->inline_len = w->inline_len;
}

/* Decodes the element popped into d->elem and hands it to the backend. */
static void send_one(struct vrdma *d, uint32_t s, struct vr_pend *p)
{
	struct vr_slot *q = &d->slot[s];
	struct vq_elem *el = &d->elem;
	struct be_sge sge[VIRTIO_RDMA_MAX_SGE];
	enum ibv_wc_status st = IBV_WC_SUCCESS;
	struct reason why;
	struct be_send_wr bw;

	p->cqn = q->scqn;
	p->c.qp_num = q->qpn;
	p->c.port_num = VIRTIO_RDMA_PORT;
	if (el->out_len > sizeof(d->wqe_buf)) {
		reason_set(&why, "send element of %llu bytes (at most %zu)",
			   (unsigned long long)el->out_len, sizeof(d->wqe_buf));
		refuse(d, s, p, false, "send element", why.msg);
		return;
	}
	iov_to_buf(vq_elem_out(el), el->out_num, d->wqe_buf, el->out_len);
	if (rdma_sq_wqe_decode(d->wqe_buf, el->out_len, &q->sq_lim, &d->swr,
			       &why) < 0) {
		refuse(d, s, p, false, "send element", why.msg);
		return;
	}
	p->c.wr_id = d->swr.wr_id;
	p->c.opcode = send_wc_opcode(d->swr.opcode);
	p->emit = q->sq_sig_all ||
		  (d->swr.send_flags & VIRTIO_RDMA_SEND_SIGNALED);
	send_to_be(&d->swr, p->head, &bw, sge);
	if (be_post_send(d->be, s + 1, &bw, &st, &why) == BE_POSTED)
		return;
	/* finished now: QP1 handed to the mux, or refused */
	if (st != IBV_WC_SUCCESS)
		wr_log(d,
		       q->qp_type == VIRTIO_RDMA_QPT_GSI ? "QP1 send" : "send",
		       s, why.msg);
	finish_now(d, s, p, (enum virtio_rdma_wc_status)st);
}

/* ---- receive ---- */

static void recv_one(struct vrdma *d, uint32_t s, struct vr_pend *p)
{
	struct vr_slot *q = &d->slot[s];
	struct vq_elem *el = &d->elem;
	struct be_sge sge[VIRTIO_RDMA_MAX_SGE];
	enum ibv_wc_status st = IBV_WC_SUCCESS;
	uint32_t max_sge =
		q->kind == VR_SLOT_SRQ ? q->srq_max_sge : q->max_recv_sge;
	struct be_recv_wr bw;
	struct reason why;
	enum be_post r;

	p->cqn = q->kind == VR_SLOT_SRQ ? UINT32_MAX : q->rcqn;
	p->c.qp_num = q->qpn;
	p->c.opcode = VIRTIO_RDMA_WC_RECV;
	p->c.port_num = VIRTIO_RDMA_PORT;
	p->emit = true;
	if (el->out_len > sizeof(d->wqe_buf)) {
		reason_set(&why, "receive element of %llu bytes (at most %zu)",
			   (unsigned long long)el->out_len, sizeof(d->wqe_buf));
		refuse(d, s, p, true, "receive element", why.msg);
		return;
	}
	iov_to_buf(vq_elem_out(el), el->out_num, d->wqe_buf, el->out_len);
	if (rdma_rq_wqe_decode(d->wqe_buf, el->out_len, max_sge, &d->rwr,
			       &why) < 0) {
		refuse(d, s, p, true, "receive element", why.msg);
		return;
	}
	p->c.wr_id = d->rwr.wr_id;
	sges_to_be(d->rwr.sge, d->rwr.num_sge, sge);
	bw = (struct be_recv_wr){ p->head, d->rwr.num_sge, sge };
	r = q->kind == VR_SLOT_SRQ
		    ? be_post_srq_recv(d->be, s + 1, &bw, &st, &why)
		    : be_post_recv(d->be, s + 1, &bw, &st, &why);
	if (r == BE_POSTED)
		return;
	wr_log(d, "receive element", s, why.msg);
	finish_now(d, s, p, (enum virtio_rdma_wc_status)st);
}

/*
 * The elements of slot s's SQ or RQ ring: up to VR_KICK_BUDGET, as long as
 * the FIFO has room, posted to the host as one list (be_batch_begin());
 * what is left waits for the next round of the loop.  The driver's kicks
 * are off while we drain (VRING_USED_F_NO_NOTIFY, or a stale avail_event)
 * and back on when the ring is empty; the check after turning them on
 * catches an element made available in between.
 */
static void ring_take(struct vrdma *d, uint32_t s, struct vq *vq, bool recv)
{
	struct vr_slot *q = &d->slot[s];
	struct vr_fifo *f = recv ? &q->rq : &q->sq;
	unsigned int n = 0;

	be_batch_begin(d->be);
	vq_disable_notify(vq);
	for (;;) {
		while (f->count < VR_RING && n < VR_KICK_BUDGET &&
		       vq_pop(vq, &d->elem) == 1) {
			struct vr_pend *p = fifo_push(f, d->elem.head);

			if (recv)
				recv_one(d, s, p);
			else
				send_one(d, s, p);
			n++;
		}
		if (n == VR_KICK_BUDGET) {
			/* kicks stay off: the loop polls until it is done */
			*(recv ? &q->rq_pending : &q->sq_pending) = true;
			d->pending = true;
			break;
		}
		/* a full FIFO takes more when a completion frees room */
		if (!vr_rearm(d, vq) || f->count >= VR_RING)
			break;
		vq_disable_notify(vq);
	}
	be_batch_end(d->be);
	fifo_drain(d, f, vq);
}

void vr_sq_kicked(struct vrdma *d, uint32_t s, struct vq *vq)
{
	struct vr_slot *q = &d->slot[s];

	q->sq_pending = false;
	if (q->kind != VR_SLOT_QP)
		return; /* elements wait until a QP owns the slot */
	ring_take(d, s, vq, false);
}

void vr_rq_kicked(struct vrdma *d, uint32_t s, struct vq *vq)
{
	struct vr_slot *q = &d->slot[s];

	q->rq_pending = false;
	if (q->kind == VR_SLOT_FREE || q->srq_handle)
		return;
	ring_take(d, s, vq, true);
}

bool vr_rearm(struct vrdma *d, struct vq *vq)
{
	if (d->cfg->busy_poll) {
		d->rings_polled = true;
		return false;
	}
	return vq_enable_notify(vq);
}

void vr_poll_rings(struct vrdma *d)
{
	bool spin = d->cfg->busy_poll, start = spin && !d->spun;
	struct vq *ctrl = d->vqs[VIRTIO_RDMA_CTRL_VQ];
	uint32_t s;

	d->spun = spin;
	if (!spin && !d->rings_polled)
		return;
	d->rings_polled = spin;
	if (ctrl && vq_poll_ready(ctrl, spin, start))
		d->ctrl_pending = d->pending = true;
	for (s = 0; s < d->num_slots; s++) {
		struct vr_slot *q = &d->slot[s];
		struct vq *sq = vr_sq_vq(d, s), *rq = vr_rq_vq(d, s);

		if (q->kind == VR_SLOT_FREE)
			continue;
		if (q->kind == VR_SLOT_QP && sq &&
		    vq_poll_ready(sq, spin, start))
			q->sq_pending = d->pending = true;
		if (rq && vq_poll_ready(rq, spin, start))
			q->rq_pending = d->pending = true;
	}
}

void vr_run_pending(struct vrdma *d)
{
	uint32_t s;

	for (s = 0; s < d->num_slots; s++) {
		struct vr_slot *q = &d->slot[s];

		if (q->sq_pending && vr_sq_vq(d, s))
			vr_sq_kicked(d, s, vr_sq_vq(d, s));
		if (q->rq_pending && vr_rq_vq(d, s))
			vr_rq_kicked(d, s, vr_rq_vq(d, s));
	}
}

/* ---- completions from the backend ---- */

static uint32_t wc_flags(unsigned int f)
{
	uint32_t r = 0;

	if (f & IBV_WC_GRH)
		r |= VIRTIO_RDMA_WC_GRH;
	if (f & IBV_WC_WITH_IMM)
		r |= VIRTIO_RDMA_WC_WITH_IMM;
	if (f & IBV_WC_WITH_INV)
		r |= VIRTIO_RDMA_WC_WITH_INVALIDATE;
	if (f & IBV_WC_IP_CSUM_OK)
		r |= VIRTIO_RDMA_WC_IP_CSUM_OK;
	return r;
}

static void vr_completion(void *fe, const struct be_wc *wc)
{
	struct vrdma *d = fe;
	uint32_t s = (uint32_t)(uintptr_t)wc->wq_ctx;
	/* no CQ (an SRQ receive the host refused): no CQE */
	uint32_t cqn = wc->refused && wc->srq ? UINT32_MAX
					      : (uint32_t)(uintptr_t)wc->cq_ctx;
	struct vr_slot *q;
	struct vr_fifo *f;
	struct vr_pend *p;
	bool full;

	if (s >= d->num_slots || d->slot[s].kind == VR_SLOT_FREE)
		return;
	q = &d->slot[s];
	f = wc->recv ? &q->rq : &q->sq;
	p = fifo_find(f, (uint16_t)wc->cookie);
	if (!p) {
		d->st->missing_completions++;
		return;
	}
	full = f->count >= VR_RING;
	p->done = true;
	p->cqn = cqn;
	p->emit = wc->recv || wc->signaled || wc->status != IBV_WC_SUCCESS;
	/* virtio-rdma's statuses and opcodes are ibverbs' */
	p->c.status = (enum virtio_rdma_wc_status)wc->status;
	p->c.opcode = (enum virtio_rdma_wc_opcode)wc->opcode;
	p->c.vendor_err = wc->vendor_err;
	p->c.qp_num = wc->qp_num;
	p->c.port_num = VIRTIO_RDMA_PORT;
	if (wc->status == IBV_WC_SUCCESS) {
		p->c.byte_len = wc->byte_len;
		p->c.imm_data = wc->imm_data;
		p->c.src_qp = wc->src_qp;
		p->c.wc_flags = wc_flags(wc->wc_flags);
		p->c.pkey_index = wc->pkey_index;
		p->c.sl = wc->sl;
		p->c.slid = wc->slid;
		p->c.dlid_path_bits = wc->dlid_path_bits;
	}
	fifo_drain(d, f, wc->recv ? vr_rq_vq(d, s) : vr_sq_vq(d, s));
	/*
	 * Elements left in the ring while the FIFO was full: taken at the
	 * end of the round (not from inside a backend call).
	 */
	if (full && f->count < VR_RING) {
		*(wc->recv ? &q->rq_pending : &q->sq_pending) = true;
		d->pending = true;
	}
}

/* The end of a round of completions: pending rings, then the signals. */
static void vr_round_done(void *fe)
{
	struct vrdma *d = fe;

	/* d->pending stays: the loop's poll round serves the control queue */
	if (d->pending)
		vr_run_pending(d);
	vr_notify_flush(d);
}

/*
 * No async_event: virtio-rdma Profile A has no event queue, so the guest
 * learns of a fatal QP from its completions (flushed with an error status)
 * and QUERY_QP; the backend counts and logs the host's events.  No
 * gid_done: ADD_GID refuses a claim that would complete later (dev.c).
 */
const struct be_frontend_ops vr_be_ops = {
	.completion = vr_completion,
	.round_done = vr_round_done,
};
