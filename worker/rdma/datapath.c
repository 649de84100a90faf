// SPDX-License-Identifier: MIT
/*
 * The data path of the virtio-rdma device: SQ/RQ elements popped from the
 * guest's rings, decoded on a private copy and posted as host work
 * requests; host completions turned into guest CQEs on the CQ queues;
 * SQ/RQ descriptors returned in posting order (used len 0).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/probes.h"
#include "worker/rdma/dev_rdma.h"
#include "worker/rdma/qp1.h"

/* Refused work requests logged per connection before we go quiet. */
#define MAX_LOGGED_WR 32

static void wr_log(struct rdma_dev *d, const char *what, uint32_t s,
		   const char *why)
{
	if (++d->wr_logged <= MAX_LOGGED_WR)
		log_warnx("slot %u: %s refused: %s%s", s, what, why,
			  d->wr_logged == MAX_LOGGED_WR
				  ? " (further refusals not logged)"
				  : "");
}

/* An element refused before any host post, or one that never goes to the
 * host (QP1), ends here (wr_complete probe). */
static void trace_refused(const struct rdma_dev *d, uint32_t s,
			  const struct rd_pend *p, bool recv)
{
	const struct rd_slot *q = &d->slot[s];

	RDMAGATE_WR_COMPLETE(rdmagate_probe_vm, q->qpn,
			     rd_wr_id(q->gen, s, recv, p->head),
			     (uint32_t)p->c.status, (uint32_t)p->c.opcode);
}

/* ---- in-order return ---- */

static struct rd_pend *fifo_push(struct rd_fifo *f, uint16_t head)
{
	struct rd_pend *p;

	if (f->count >= RD_RING)
		return NULL;
	p = &f->e[(f->first + f->count) % RD_RING];
	memset(p, 0, sizeof(*p));
	p->head = head;
	f->count++;
	return p;
}

static struct rd_pend *fifo_find(struct rd_fifo *f, uint16_t head)
{
	unsigned int i;

	for (i = 0; i < f->count; i++) {
		struct rd_pend *p = &f->e[(f->first + i) % RD_RING];

		if (!p->done && p->head == head)
			return p;
	}
	return NULL;
}

/* ---- guest CQEs ---- */

static void cq_overflow(struct rdma_dev *d, uint32_t cqn)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	uint32_t s;

	RDMAGATE_CQ_OVERFLOW(rdmagate_probe_vm, cqn);
	d->cq[cqn].overflows++;
	d->st->cq_overflows++;
	if (d->cq[cqn].overflows <= 8)
		log_warnx("CQ %u overflowed (no free CQE buffer on its "
			  "queue, %llu times): a completion is lost; its QPs "
			  "go to the error state",
			  cqn, (unsigned long long)d->cq[cqn].overflows);
	for (s = 0; s < d->num_slots; s++) {
		struct rd_slot *q = &d->slot[s];

		if (q->kind != RD_SLOT_QP || (q->scqn != cqn && q->rcqn != cqn))
			continue;
		if (q->qp)
			ibv_modify_qp(q->qp, &a, IBV_QP_STATE);
		q->state = VIRTIO_RDMA_QPS_ERR;
	}
}

/* Writes one CQE into the next buffer of CQ cqn's queue. */
static void cqe_write(struct rdma_dev *d, uint32_t cqn,
		      const struct rdma_completion *c)
{
	struct rd_cq *cq = &d->cq[cqn];
	struct vq_elem *el = &d->celem;
	struct vq *vq = rd_cq_vq(d, cqn);
	uint8_t buf[sizeof(struct virtio_rdma_cqe)];
	int ret;

	if (!vq || vq_pop(vq, el) != 1) {
		cq_overflow(d, cqn);
		return;
	}
	if (el->in_len < sizeof(buf)) {
		log_warnx("CQ %u: buffer of %llu bytes, a CQE needs %zu", cqn,
			  (unsigned long long)el->in_len, sizeof(buf));
		vq_push(vq, el, 0);
		cq_overflow(d, cqn);
		return;
	}
	ret = rdma_cqe_encode(c, buf, sizeof(buf));
	if (ret < 0) {
		log_warnx("CQ %u: completion not encodable (status %u opcode "
			  "%u)",
			  cqn, c->status, c->opcode);
		memset(buf, 0, sizeof(buf));
	}
	buf_to_iov(vq_elem_in(el), el->in_num, buf, sizeof(buf));
	vq_push(vq, el, sizeof(buf));
	d->st->completions++;
	if (c->status != VIRTIO_RDMA_WC_SUCCESS)
		d->st->completion_errors++;
	if (cq->armed) {
		cq->armed = false;
		vq_notify(vq);
	}
}

/* Returns the finished front of a ring's FIFO, CQEs first. */
static void fifo_drain(struct rdma_dev *d, struct rd_fifo *f, struct vq *vq)
{
	bool pushed = false;

	while (f->count > 0 && f->e[f->first].done) {
		struct rd_pend *p = &f->e[f->first];

		if (p->emit && p->cqn < d->max_cq && d->cq[p->cqn].used)
			cqe_write(d, p->cqn, &p->c);
		if (vq) {
			vq_push_head(vq, p->head, 0);
			pushed = true;
		}
		f->first = (f->first + 1) % RD_RING;
		f->count--;
	}
	if (pushed)
		vq_notify(vq);
}

void rd_slot_flush(struct rdma_dev *d, uint32_t s)
{
	struct rd_slot *q = &d->slot[s];
	struct rd_fifo *fs[2] = { &q->sq, &q->rq };
	struct vq *vqs[2] = { rd_sq_vq(d, s), rd_rq_vq(d, s) };
	unsigned int k;

	for (k = 0; k < 2; k++) {
		while (fs[k]->count > 0) {
			if (vqs[k])
				vq_push_head(vqs[k],
					     fs[k]->e[fs[k]->first].head, 0);
			fs[k]->first = (fs[k]->first + 1) % RD_RING;
			fs[k]->count--;
		}
		if (vqs[k])
			vq_notify(vqs[k]);
	}
}

/* ---- address handles ---- */

void rd_ah_flush(struct rdma_dev *d, uint32_t pdn)
{
	uint32_t i;

	for (i = 0; i < d->cfg->lim.max_ah; i++) {
		struct rd_ah *a = &d->ah[i];

		if (!a->used || (pdn && a->pdn != pdn))
			continue;
		ibv_destroy_ah(a->ah);
		d->pd[a->pdn].refs--;
		memset(a, 0, sizeof(*a));
	}
}

uint32_t rd_ah_count(const struct rdma_dev *d, uint32_t pdn)
{
	uint32_t i, n = 0;

	for (i = 0; i < d->cfg->lim.max_ah; i++)
		n += d->ah[i].used && d->ah[i].pdn == pdn;
	return n;
}

/* Host AH attributes of a guest AV; -EINVAL for an unknown GID index. */
static int av_to_attr(const struct rdma_dev *d, const struct virtio_rdma_av *av,
		      struct ibv_ah_attr *a)
{
	int16_t sgid = d->guest_gid[av->gid_index];

	if (sgid < 0)
		return -EINVAL;
	memset(a, 0, sizeof(*a));
	a->is_global = 1;
	memcpy(a->grh.dgid.raw, av->dgid, 16);
	a->grh.flow_label = VIRTIO_RDMA_AV_FLOW_LABEL(av->sl_tclass_flowlabel);
	a->grh.traffic_class = VIRTIO_RDMA_AV_TCLASS(av->sl_tclass_flowlabel);
	a->grh.sgid_index = (uint8_t)sgid;
	a->grh.hop_limit = av->hop_limit;
	a->sl = VIRTIO_RDMA_AV_SL(av->sl_tclass_flowlabel);
	a->static_rate = av->stat_rate;
	a->port_num = d->hca->port;
	return 0;
}

/* The cached host AH for an AV on PD pdn, created on first use. */
static struct ibv_ah *ah_get(struct rdma_dev *d, uint32_t pdn,
			     const struct virtio_rdma_av *av, const char **why)
{
	struct ibv_ah_attr key;
	struct rd_ah *free_e = NULL;
	uint32_t i;

	if (av_to_attr(d, av, &key) < 0) {
		*why = "address vector names a GID index the guest never added";
		return NULL;
	}
	for (i = 0; i < d->cfg->lim.max_ah; i++) {
		struct rd_ah *a = &d->ah[i];

		if (!a->used) {
			if (!free_e)
				free_e = a;
			continue;
		}
		if (a->pdn == pdn && !memcmp(&a->key, &key, sizeof(key)))
			return a->ah;
	}
	if (!free_e) {
		*why = "address handle cache full (--max-ah)";
		return NULL;
	}
	free_e->ah = ibv_create_ah(d->pd[pdn].pd, &key);
	if (!free_e->ah) {
		*why = "the host refused the address vector (ibv_create_ah)";
		return NULL;
	}
	free_e->used = true;
	free_e->pdn = pdn;
	free_e->key = key;
	d->pd[pdn].refs++;
	return free_e->ah;
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

/* Host SGEs of guest SGEs: DMA-MR keys become per-region host keys. */
static int map_sges(struct rdma_dev *d, uint32_t pdn,
		    const struct virtio_rdma_sge *in, uint32_t n,
		    struct ibv_sge *out)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		uint32_t lkey = in[i].lkey;
		int ret = rd_dma_lkey(d, pdn, lkey, in[i].addr, in[i].length,
				      &lkey);

		if (ret == -EFAULT)
			return ret;
		out[i].addr = in[i].addr;
		out[i].length = in[i].length;
		out[i].lkey = lkey;
	}
	return 0;
}

/* Posts one decoded send; status for the guest CQE on failure. */
static int post_send(struct rdma_dev *d, uint32_t s, struct rd_pend *p,
		     const char **why)
{
	struct rd_slot *q = &d->slot[s];
	struct rdma_send_wr *w = &d->swr;
	struct ibv_sge sge[VIRTIO_RDMA_MAX_SGE];
	struct ibv_send_wr wr, *bad;
	int ret;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = rd_wr_id(q->gen, s, false, p->head);
	wr.opcode = (enum ibv_wr_opcode)w->opcode;
	wr.send_flags = (w->send_flags & VIRTIO_RDMA_SEND_FLAGS_SUPPORTED) |
			IBV_SEND_SIGNALED;
	wr.imm_data = w->imm_data;
	wr.sg_list = sge;
	if (w->send_flags & VIRTIO_RDMA_SEND_INLINE) {
		sge[0].addr = (uintptr_t)w->inline_data;
		sge[0].length = w->inline_len;
		sge[0].lkey = 0;
		wr.num_sge = w->inline_len ? 1 : 0;
	} else {
		if (map_sges(d, q->pdn, w->sge, w->num_sge, sge) < 0) {
			*why = "an SGE with the DMA key is not inside one "
			       "guest RAM region";
			return VIRTIO_RDMA_WC_LOC_PROT_ERR;
		}
		wr.num_sge = (int)w->num_sge;
	}
	switch (w->opcode) {
	case VIRTIO_RDMA_WR_RDMA_WRITE:
	case VIRTIO_RDMA_WR_RDMA_WRITE_WITH_IMM:
	case VIRTIO_RDMA_WR_RDMA_READ:
		wr.wr.rdma.remote_addr = w->wr.rdma.remote_addr;
		wr.wr.rdma.rkey = w->wr.rdma.rkey;
		break;
	case VIRTIO_RDMA_WR_ATOMIC_CMP_AND_SWP:
	case VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD:
		wr.wr.atomic.remote_addr = w->wr.atomic.remote_addr;
		wr.wr.atomic.compare_add = w->wr.atomic.compare_add;
		wr.wr.atomic.swap = w->wr.atomic.swap;
		wr.wr.atomic.rkey = w->wr.atomic.rkey;
		break;
	default:
		break;
	}
	if (q->qp_type == VIRTIO_RDMA_QPT_UD) {
		wr.wr.ud.ah = ah_get(d, q->pdn, &w->wr.ud.av, why);
		if (!wr.wr.ud.ah)
			return VIRTIO_RDMA_WC_LOC_QP_OP_ERR;
		wr.wr.ud.remote_qpn = w->wr.ud.remote_qpn;
		wr.wr.ud.remote_qkey = w->wr.ud.remote_qkey;
	}
	ret = ibv_post_send(q->qp, &wr, &bad);
	if (ret) {
		*why = ret == EINVAL ? "the host refused it (QP state?)"
				     : "the host send queue is full";
		return VIRTIO_RDMA_WC_LOC_QP_OP_ERR;
	}
	RDMAGATE_WR_POST(rdmagate_probe_vm, q->qpn, (uint32_t)p->c.opcode,
			 wr.wr_id, w->total_len);
	return 0;
}

/* Decodes and posts the element popped into d->elem; fills p. */
static void send_one(struct rdma_dev *d, uint32_t s, struct rd_pend *p)
{
	struct rd_slot *q = &d->slot[s];
	struct vq_elem *el = &d->elem;
	struct rdma_reason why;
	const char *reason = NULL;
	int st;

	p->cqn = q->scqn;
	p->c.qp_num = q->qpn;
	p->c.port_num = VIRTIO_RDMA_PORT;
	if (el->out_len > sizeof(d->wqe_buf)) {
		snprintf(why.msg, sizeof(why.msg),
			 "send element of %llu bytes (at most %zu)",
			 (unsigned long long)el->out_len, sizeof(d->wqe_buf));
		goto refuse;
	}
	iov_to_buf(vq_elem_out(el), el->out_num, d->wqe_buf, el->out_len);
	if (rdma_sq_wqe_decode(d->wqe_buf, el->out_len, &q->sq_lim, &d->swr,
			       &why) < 0)
		goto refuse;
	p->c.wr_id = d->swr.wr_id;
	p->c.opcode = send_wc_opcode(d->swr.opcode);
	p->emit = q->sq_sig_all ||
		  (d->swr.send_flags & VIRTIO_RDMA_SEND_SIGNALED);
	if (q->qp_type == VIRTIO_RDMA_QPT_GSI) {
		/* QP1: a MAD for the mux, done at once (qp1.c) */
		st = qp1_send(d, s, &d->swr, &reason);
		if (st) {
			wr_log(d, "QP1 send", s, reason);
			p->emit = true;
		}
		p->c.status = st;
		p->done = true;
		trace_refused(d, s, p, false);
		return;
	}
	st = post_send(d, s, p, &reason);
	if (st) {
		d->st->send_errors++;
		wr_log(d, "send", s, reason);
		p->c.status = st;
		p->emit = true;
		p->done = true;
		trace_refused(d, s, p, false);
		return;
	}
	d->st->sends++;
	d->st->send_bytes += d->swr.total_len;
	return;
refuse:
	d->st->send_errors++;
	wr_log(d, "send element", s, why.msg);
	p->c.status = VIRTIO_RDMA_WC_LOC_QP_OP_ERR;
	p->emit = true;
	p->done = true;
	trace_refused(d, s, p, false);
}

void rd_sq_kicked(struct rdma_dev *d, uint32_t s, struct vq *vq)
{
	struct rd_slot *q = &d->slot[s];

	if (q->kind != RD_SLOT_QP)
		return; /* elements wait until a QP owns the slot */
	while (q->sq.count < RD_RING && vq_pop(vq, &d->elem) == 1) {
		struct rd_pend *p = fifo_push(&q->sq, d->elem.head);

		send_one(d, s, p);
		fifo_drain(d, &q->sq, vq);
	}
}

/* ---- receive ---- */

/*
 * Copies the receive element popped into d->elem and decodes it into
 * d->rwr (slot s's SGE limit).  0, or -EINVAL with why filled.
 */
static int rq_elem_decode(struct rdma_dev *d, uint32_t s,
			  struct rdma_reason *why)
{
	const struct rd_slot *q = &d->slot[s];
	struct vq_elem *el = &d->elem;
	uint32_t max_sge =
		q->kind == RD_SLOT_SRQ ? q->srq_max_sge : q->max_recv_sge;

	if (el->out_len > sizeof(d->wqe_buf)) {
		snprintf(why->msg, sizeof(why->msg),
			 "receive element of %llu bytes (at most %zu)",
			 (unsigned long long)el->out_len, sizeof(d->wqe_buf));
		return -EINVAL;
	}
	iov_to_buf(vq_elem_out(el), el->out_num, d->wqe_buf, el->out_len);
	return rdma_rq_wqe_decode(d->wqe_buf, el->out_len, max_sge, &d->rwr,
				  why) < 0
		       ? -EINVAL
		       : 0;
}

static void recv_one(struct rdma_dev *d, uint32_t s, struct rd_pend *p)
{
	struct rd_slot *q = &d->slot[s];
	struct ibv_sge sge[VIRTIO_RDMA_MAX_SGE];
	struct ibv_recv_wr wr, *bad;
	struct rdma_reason why;
	int ret;

	p->cqn = q->kind == RD_SLOT_SRQ ? UINT32_MAX : q->rcqn;
	p->c.qp_num = q->qpn;
	p->c.opcode = VIRTIO_RDMA_WC_RECV;
	p->c.port_num = VIRTIO_RDMA_PORT;
	p->emit = true;
	if (rq_elem_decode(d, s, &why) < 0)
		goto refuse;
	p->c.wr_id = d->rwr.wr_id;
	if (map_sges(d, q->pdn, d->rwr.sge, d->rwr.num_sge, sge) < 0) {
		snprintf(why.msg, sizeof(why.msg),
			 "an SGE with the DMA key is not inside one guest "
			 "RAM region");
		p->c.status = VIRTIO_RDMA_WC_LOC_PROT_ERR;
		goto refused;
	}
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = rd_wr_id(q->gen, s, true, p->head);
	wr.sg_list = sge;
	wr.num_sge = (int)d->rwr.num_sge;
	ret = q->kind == RD_SLOT_SRQ ? ibv_post_srq_recv(q->srq, &wr, &bad)
				     : ibv_post_recv(q->qp, &wr, &bad);
	if (ret) {
		snprintf(why.msg, sizeof(why.msg),
			 "the host refused it: %s (QP state?)", strerror(ret));
		goto refuse;
	}
	RDMAGATE_WR_POST(rdmagate_probe_vm, q->qpn, VIRTIO_RDMA_WC_RECV,
			 wr.wr_id, d->rwr.total_len);
	d->st->recvs++;
	if (q->kind == RD_SLOT_SRQ)
		d->st->srq_recvs++;
	return;
refuse:
	p->c.status = VIRTIO_RDMA_WC_LOC_QP_OP_ERR;
refused:
	d->st->recv_errors++;
	wr_log(d, "receive element", s, why.msg);
	p->done = true;
	trace_refused(d, s, p, true);
}

void rd_rq_kicked(struct rdma_dev *d, uint32_t s, struct vq *vq)
{
	struct rd_slot *q = &d->slot[s];

	/* QP1's receive elements wait in the ring for MADs (rd_gsi_deliver) */
	if (q->kind == RD_SLOT_FREE || q->srq_handle ||
	    (q->kind == RD_SLOT_QP && q->qp_type == VIRTIO_RDMA_QPT_GSI))
		return;
	while (q->rq.count < RD_RING && vq_pop(vq, &d->elem) == 1) {
		struct rd_pend *p = fifo_push(&q->rq, d->elem.head);

		recv_one(d, s, p);
		fifo_drain(d, &q->rq, vq);
	}
}

/* ---- guest memory through SGEs (QP1) ---- */

/*
 * The host address of [addr, addr + len) under the guest's lkey on PD pdn
 * (a REG_USER_MR key: an IOVA range; the DMA MR's: a GPA inside one guest
 * RAM region), or NULL.  write: the MR must allow local writes.
 */
static uint8_t *sge_host(const struct rdma_dev *d, uint32_t pdn, uint32_t lkey,
			 uint64_t addr, uint32_t len, bool write)
{
	uint32_t i;
	unsigned int k;

	for (i = 1; i <= d->cfg->lim.max_mr; i++) {
		const struct rd_mr *mr = &d->mr[i];

		if (!mr->used || mr->pdn != pdn || mr->lkey != lkey)
			continue;
		if (write && !(mr->access & VIRTIO_RDMA_ACCESS_LOCAL_WRITE))
			return NULL;
		for (k = 0; k < mr->nmaps; k++) {
			const struct rd_map *m = &mr->maps[k];
			uint64_t base = mr->dma ? m->gpa : mr->iova;
			uint64_t size = mr->dma ? m->len : m->mr->length;
			uint8_t *host = mr->dma ? (uint8_t *)m->reserve
						: (uint8_t *)m->mr->addr;

			if (addr >= base && addr - base <= size &&
			    len <= size - (addr - base))
				return host + (addr - base);
		}
		return NULL;
	}
	return NULL;
}

int rd_sge_copy(const struct rdma_dev *d, uint32_t pdn,
		const struct virtio_rdma_sge *sge, uint32_t num_sge, void *buf,
		uint32_t len, bool to_guest, const char **why)
{
	uint8_t *b = buf;
	uint32_t i;

	for (i = 0; i < num_sge && len > 0; i++) {
		uint32_t n = sge[i].length < len ? sge[i].length : len;
		uint8_t *host;

		if (!n)
			continue;
		host = sge_host(d, pdn, sge[i].lkey, sge[i].addr, n, to_guest);
		if (!host) {
			*why = to_guest ? "an SGE is not inside a writable "
					  "memory region of the QP's PD"
					: "an SGE is not inside a memory region "
					  "of the QP's PD";
			return VIRTIO_RDMA_WC_LOC_PROT_ERR;
		}
		/* one side is our private buffer: no guest-to-guest copy */
		if (to_guest)
			memcpy(host, b, n);
		else
			memcpy(b, host, n);
		b += n;
		len -= n;
	}
	if (len) {
		*why = to_guest ? "the receive buffer is too short"
				: "the SGEs hold fewer bytes than the length";
		return VIRTIO_RDMA_WC_LOC_LEN_ERR;
	}
	return VIRTIO_RDMA_WC_SUCCESS;
}

/* The QP slot of the GSI QP, or -1. */
static int gsi_slot(const struct rdma_dev *d)
{
	uint32_t s;

	for (s = 0; s < d->num_slots; s++)
		if (d->slot[s].kind == RD_SLOT_QP &&
		    d->slot[s].qp_type == VIRTIO_RDMA_QPT_GSI)
			return (int)s;
	return -1;
}

int rd_gsi_deliver(struct rdma_dev *d, void *data, uint32_t len,
		   const struct rdma_completion *c)
{
	int gs = gsi_slot(d);
	struct rd_slot *q;
	struct vq *vq;

	if (gs < 0)
		return -ENOENT;
	q = &d->slot[gs];
	if (q->state != VIRTIO_RDMA_QPS_RTR && q->state != VIRTIO_RDMA_QPS_RTS)
		return -ENOENT;
	vq = rd_rq_vq(d, (uint32_t)gs);
	if (!vq)
		return -ENOBUFS;
	/* a malformed element completes with an error; the next is tried */
	while (q->rq.count < RD_RING && vq_pop(vq, &d->elem) == 1) {
		struct rd_pend *p = fifo_push(&q->rq, d->elem.head);
		const char *reason = NULL;
		struct rdma_reason why;
		int st;

		p->cqn = q->rcqn;
		p->emit = true;
		p->done = true;
		p->c = *c;
		if (rq_elem_decode(d, (uint32_t)gs, &why) < 0) {
			memset(&p->c, 0, sizeof(p->c));
			p->c.status = VIRTIO_RDMA_WC_LOC_QP_OP_ERR;
			p->c.opcode = VIRTIO_RDMA_WC_RECV;
			p->c.qp_num = q->qpn;
			p->c.port_num = VIRTIO_RDMA_PORT;
			d->st->recv_errors++;
			wr_log(d, "QP1 receive element", (uint32_t)gs, why.msg);
			trace_refused(d, (uint32_t)gs, p, true);
			fifo_drain(d, &q->rq, vq);
			continue;
		}
		d->st->recvs++;
		p->c.wr_id = d->rwr.wr_id;
		st = rd_sge_copy(d, q->pdn, d->rwr.sge, d->rwr.num_sge, data,
				 len, true, &reason);
		if (st) {
			p->c.status = st;
			p->c.byte_len = 0;
			p->c.wc_flags = 0;
			p->c.src_qp = 0;
			wr_log(d, "QP1 receive", (uint32_t)gs, reason);
		}
		trace_refused(d, (uint32_t)gs, p, true);
		fifo_drain(d, &q->rq, vq);
		return st ? -EIO : 0;
	}
	return -ENOBUFS;
}

/* ---- completions ---- */

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

static int slot_of_qpn(const struct rdma_dev *d, uint32_t qpn)
{
	uint32_t s;

	for (s = 0; s < d->num_slots; s++)
		if (d->slot[s].kind == RD_SLOT_QP && d->slot[s].qpn == qpn)
			return (int)s;
	return -1;
}

static void complete(struct rdma_dev *d, const struct ibv_wc *wc)
{
	uint16_t gen = (uint16_t)(wc->wr_id >> 32);
	uint32_t s = (uint32_t)(wc->wr_id >> 17) & 0x7fff;
	bool recv = (wc->wr_id >> 16) & 1;
	uint16_t head = (uint16_t)wc->wr_id;
	struct rd_slot *q;
	struct rd_pend *p;
	int qs;

	if (s >= d->num_slots || d->slot[s].kind == RD_SLOT_FREE ||
	    d->slot[s].gen != gen) {
		d->st->missing_completions++; /* its QP or SRQ was destroyed */
		return;
	}
	q = &d->slot[s];
	p = fifo_find(recv ? &q->rq : &q->sq, head);
	if (!p) {
		d->st->missing_completions++;
		return;
	}
	p->done = true;
	p->c.status = (enum virtio_rdma_wc_status)wc->status;
	RDMAGATE_WR_COMPLETE(rdmagate_probe_vm, q->qpn, wc->wr_id,
			     (uint32_t)wc->status, (uint32_t)p->c.opcode);
	if (wc->status == IBV_WC_SUCCESS) {
		if (recv)
			p->c.opcode =
				wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM
					? VIRTIO_RDMA_WC_RECV_RDMA_WITH_IMM
					: VIRTIO_RDMA_WC_RECV;
		p->c.byte_len = wc->byte_len;
		p->c.imm_data = wc->imm_data;
		p->c.src_qp = wc->src_qp;
		p->c.wc_flags = wc_flags(wc->wc_flags);
		p->c.sl = wc->sl;
		p->c.slid = wc->slid;
		p->c.dlid_path_bits = wc->dlid_path_bits;
	}
	if (q->kind == RD_SLOT_SRQ) {
		qs = slot_of_qpn(d, wc->qp_num);
		p->c.qp_num = wc->qp_num;
		p->cqn = qs >= 0 ? d->slot[qs].rcqn : UINT32_MAX;
	}
	if (recv) {
		fifo_drain(d, &q->rq, rd_rq_vq(d, s));
		if (rd_rq_vq(d, s))
			rd_rq_kicked(d, s, rd_rq_vq(d, s));
	} else {
		fifo_drain(d, &q->sq, rd_sq_vq(d, s));
		/* Elements left in the ring while the FIFO was full. */
		if (rd_sq_vq(d, s))
			rd_sq_kicked(d, s, rd_sq_vq(d, s));
	}
}

void rd_cq_poll(struct rdma_dev *d, uint32_t cqn)
{
	struct ibv_wc wc[16];
	int n, i;

	if (cqn >= d->max_cq || !d->cq[cqn].used)
		return;
	do {
		n = ibv_poll_cq(d->cq[cqn].cq, (int)ARRAY_SIZE(wc), wc);
		for (i = 0; i < n; i++)
			complete(d, &wc[i]);
	} while (n == (int)ARRAY_SIZE(wc));
	if (n < 0)
		log_warnx("CQ %u: ibv_poll_cq failed", cqn);
}

void rd_chan_ready(void *arg)
{
	struct rdma_dev *d = arg;
	struct ibv_cq *cq;
	void *ctx;

	while (ibv_get_cq_event(d->chan, &cq, &ctx) == 0) {
		uint32_t cqn = (uint32_t)(uintptr_t)ctx;

		ibv_ack_cq_events(cq, 1);
		if (ibv_req_notify_cq(cq, 0))
			log_warnx("CQ %u: cannot re-arm the host CQ", cqn);
		rd_cq_poll(d, cqn);
	}
}
