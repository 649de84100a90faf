// SPDX-License-Identifier: MIT
/*
 * The backend's data path: the frontend's decoded work requests posted to
 * host queues (DMA-MR keys mapped to per-region host keys, UD address
 * vectors to cached host AHs), every outstanding request remembered by
 * index so that its host completion (wr_id: generation, queue, index)
 * comes back to the frontend with the frontend's cookie; QP1 requests go
 * to the mux instead (qp1.c), QP1 receives wait here for MADs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/probes.h"
#include "worker/backend/be_impl.h"
#include "worker/backend/qp1.h"

/* ---- outstanding work requests ---- */

int be_wq_init(struct be_wq *q, uint32_t size, bool gsi)
{
	memset(q, 0, sizeof(*q));
	/* the host may round a queue up; more than BE_MAX_WR never post */
	q->size = size ? size : 1;
	if (q->size > BE_MAX_WR)
		q->size = BE_MAX_WR;
	q->e = calloc(q->size, sizeof(*q->e));
	if (gsi)
		q->gsi = calloc(q->size, sizeof(*q->gsi));
	if (!q->e || (gsi && !q->gsi)) {
		be_wq_free(q);
		return -ENOMEM;
	}
	return 0;
}

void be_wq_free(struct be_wq *q)
{
	free(q->e);
	free(q->gsi);
	memset(q, 0, sizeof(*q));
}

/* A free entry of q for a new request, or -1 when q is full. */
static int wq_get(struct be_wq *q)
{
	uint32_t i;

	if (q->count >= q->size)
		return -1;
	for (i = 0; i < q->size; i++) {
		uint32_t k = (q->next + i) % q->size;

		if (!q->e[k].used) {
			q->next = (k + 1) % q->size;
			q->e[k].used = true;
			q->e[k].ah = 0;
			q->count++;
			return (int)k;
		}
	}
	return -1;
}

/* Destroys cache entry a (no send names it any more). */
static void ah_drop(struct be *be, struct be_ah *a)
{
	ibv_destroy_ah(a->ah);
	be->pd[a->pd].refs--;
	memset(a, 0, sizeof(*a));
}

/* Frees entry k of q, and its hold on an AH cache entry. */
static void wq_put(struct be *be, struct be_wq *q, uint32_t k)
{
	if (q->e[k].ah) {
		struct be_ah *a = &be->ah[q->e[k].ah - 1];

		if (!--a->inflight && a->dead)
			ah_drop(be, a);
		q->e[k].ah = 0;
	}
	q->e[k].used = false;
	q->count--;
}

void be_wq_drop_ahs(struct be *be, struct be_wq *q)
{
	uint32_t k;

	for (k = 0; q->e && k < q->size; k++)
		if (q->e[k].used)
			wq_put(be, q, k);
}

/* The queue and entry a host wr_id names, or NULL when it is stale. */
static struct be_wq *wq_of(struct be *be, uint64_t wr_id, struct be_wc *c,
			   uint32_t *ret_k)
{
	uint16_t gen = (uint16_t)(wr_id >> 34);
	enum be_wr_kind kind = (enum be_wr_kind)((wr_id >> 32) & 3);
	uint32_t h = (uint32_t)(wr_id >> 16) & 0xffff;
	uint32_t k = (uint32_t)wr_id & 0xffff;
	struct be_wq *q;

	if (kind == BE_WR_SRQ) {
		struct be_srq *s;

		if (h == 0 || h > be->cfg.srq_handles)
			return NULL;
		s = &be->srq[h];
		if (!s->used || s->gen != gen)
			return NULL;
		c->wq_ctx = s->ctx;
		c->srq = true;
		q = &s->rq;
	} else {
		struct be_qp *p;

		if (h == 0 || h > be->cfg.qp_handles)
			return NULL;
		p = &be->qp[h];
		if (!p->used || p->gen != gen)
			return NULL;
		c->wq_ctx = p->ctx;
		q = kind == BE_WR_RQ ? &p->rq : &p->sq;
	}
	if (k >= q->size || !q->e[k].used)
		return NULL;
	c->wq = h;
	c->recv = kind != BE_WR_SQ;
	*ret_k = k;
	return q;
}

/* ---- address handles ---- */

void be_ah_flush(struct be *be, uint32_t pd)
{
	int i;

	for (i = 0; i < be->attr.max_ah; i++) {
		struct be_ah *a = &be->ah[i];

		if (!a->used || (pd && a->pd != pd))
			continue;
		ibv_destroy_ah(a->ah);
		be->pd[a->pd].refs--;
		memset(a, 0, sizeof(*a));
	}
}

void be_ah_flush_sgid(struct be *be, uint8_t sgid)
{
	int i;

	for (i = 0; i < be->attr.max_ah; i++) {
		struct be_ah *a = &be->ah[i];

		if (!a->used || a->key.grh.sgid_index != sgid)
			continue;
		a->dead = true;
		if (!a->inflight)
			ah_drop(be, a);
	}
}

uint32_t be_ah_count(const struct be *be, uint32_t pd)
{
	uint32_t n = 0;
	int i;

	for (i = 0; i < be->attr.max_ah; i++)
		n += be->ah[i].used && be->ah[i].pd == pd;
	return n;
}

/*
 * The least recently used entry no outstanding send names, destroyed for
 * reuse; NULL when every entry is in flight (a host AH must outlive the
 * work requests that name it).
 */
static struct be_ah *ah_evict(struct be *be)
{
	struct be_ah *lru = NULL;
	int i;

	for (i = 0; i < be->attr.max_ah; i++) {
		struct be_ah *a = &be->ah[i];

		if (a->used && !a->inflight &&
		    (!lru || a->last_use < lru->last_use))
			lru = a;
	}
	if (!lru || ibv_destroy_ah(lru->ah))
		return NULL;
	be->pd[lru->pd].refs--;
	memset(lru, 0, sizeof(*lru));
	return lru;
}

/*
 * The cached host AH for an AV on PD pd, created on first use; when the
 * cache is full, the least recently used entry no send on a host queue
 * names makes room (a guest's UD QP may address any number of peers over
 * time).  Returns its index, or -errno with *why filled.
 */
static int ah_get(struct be *be, uint32_t pd, const struct be_ah_attr *av,
		  struct reason *why)
{
	struct ibv_ah_attr key;
	struct be_ah *free_e = NULL;
	int i, r;

	r = be_ah_to_host(be, av, &key);
	if (r < 0)
		return reason_fail(
			why, r, "%s",
			r == -EADDRNOTAVAIL
				? "address vector names a GID that is no "
				  "longer the guest's on the host port"
				: "address vector names a GID index the "
				  "guest never added");
	for (i = 0; i < be->attr.max_ah; i++) {
		struct be_ah *a = &be->ah[i];

		if (!a->used) {
			if (!free_e)
				free_e = a;
			continue;
		}
		if (!a->dead && a->pd == pd &&
		    !memcmp(&a->key, &key, sizeof(key))) {
			a->last_use = ++be->ah_clock;
			return i;
		}
	}
	/* a new host AH: its source GID still the guest's right now? */
	if (be_gid_verify(be, av->sgid_index) < 0)
		return reason_fail(
			why, -EADDRNOTAVAIL,
			"address vector names a GID that is no longer "
			"the guest's on the host port");
	if (!free_e)
		free_e = ah_evict(be);
	if (!free_e)
		return reason_fail(why, -ENOSPC,
				   "address handle cache full, every entry in "
				   "flight (--max-ah)");
	free_e->ah = ibv_create_ah(be->pd[pd].pd, &key);
	if (!free_e->ah)
		return reason_fail(
			why, -EINVAL,
			"the host refused the address vector (ibv_create_ah)");
	free_e->used = true;
	free_e->pd = pd;
	free_e->inflight = 0;
	free_e->last_use = ++be->ah_clock;
	free_e->key = key;
	be->pd[pd].refs++;
	return (int)(free_e - be->ah);
}

/* ---- send ---- */

static enum ibv_wc_opcode send_wc_opcode(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	default:
		return IBV_WC_SEND;
	}
}

static bool send_opcode_ok(enum ibv_wr_opcode op, enum be_qp_type t)
{
	switch (op) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		return true;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return t == BE_QPT_RC || t == BE_QPT_UC;
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return t == BE_QPT_RC;
	default:
		return false;
	}
}

/*
 * Host SGEs of the frontend's: DMA-MR keys become per-region host keys.
 * write: the HCA writes through them (a receive, RDMA READ, atomics).
 * -EFAULT for an SGE outside the DMA MR's live parts, writing a read-only
 * one, or with a revoked MR's key.
 */
static int map_sges(const struct be *be, uint32_t pd, const struct be_sge *in,
		    uint32_t n, bool write, struct ibv_sge *out)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		uint32_t lkey = in[i].lkey;
		int ret = be_dma_lkey(be, pd, lkey, in[i].addr, in[i].length,
				      write, &lkey);

		if (ret == -EFAULT)
			return ret;
		out[i].addr = in[i].addr;
		out[i].length = in[i].length;
		out[i].lkey = lkey;
	}
	return 0;
}

#define BAD_SGE                                                                \
	"an SGE is outside the DMA MR's guest RAM (or writes a read-only "     \
	"region), or names an MR whose guest memory was unmapped"

#define SEND_FLAGS                                                             \
	(IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_FENCE |             \
	 IBV_SEND_INLINE)

static enum ibv_wc_status check_send(struct be *be, const struct be_qp *q,
				     const struct be_send_wr *w,
				     struct reason *why)
{
	if (!send_opcode_ok(w->opcode, q->type)) {
		reason_set(why, "opcode not allowed on this QP type");
		return IBV_WC_LOC_QP_OP_ERR;
	}
	if (w->send_flags & ~(unsigned int)SEND_FLAGS) {
		reason_set(why, "unknown send flags");
		return IBV_WC_LOC_QP_OP_ERR;
	}
	if (q->type == BE_QPT_UD && w->ud.remote_qpn <= 1 &&
	    (w->ud.remote_qkey & BE_QKEY_PRIVILEGED)) {
		reason_set(why, "a privileged Q_Key to QP%u", w->ud.remote_qpn);
		return IBV_WC_LOC_QP_OP_ERR;
	}
	if (w->send_flags & IBV_SEND_INLINE) {
		/*
		 * q->cap is what the host's provider returned, which may
		 * exceed what the guest asked for: the stage's inline
		 * buffer bounds it too.
		 */
		if (w->inline_len > q->cap.max_inline_data ||
		    w->inline_len > BE_BATCH_INLINE ||
		    (w->inline_len && !w->inline_data)) {
			reason_set(why,
				   "inline data longer than the QP allows");
			return IBV_WC_LOC_LEN_ERR;
		}
	} else if (w->num_sge > q->cap.max_send_sge ||
		   w->num_sge > BE_MAX_SGE || (w->num_sge && !w->sge)) {
		reason_set(why, "more SGEs than the QP allows");
		return IBV_WC_LOC_LEN_ERR;
	}
	return IBV_WC_SUCCESS;
}

/* Sum of the SGE lengths (the probe's and the counters' bytes). */
static uint64_t sge_bytes(const struct be_sge *sge, uint32_t n)
{
	uint64_t b = 0;
	uint32_t i;

	for (i = 0; i < n; i++)
		b += sge[i].length;
	return b;
}

/* ---- batches: one host post call per queue and round ---- */

void be_batch_begin(struct be *be)
{
	be->batch.depth++;
}

/* The host QP or SRQ the staged WRs go to, or NULL when it is gone. */
static bool batch_target(struct be *be, struct ibv_qp **ret_qp,
			 struct ibv_srq **ret_srq, struct be_wq **ret_q,
			 uint32_t *ret_qpn)
{
	struct be_batch *b = &be->batch;

	if (b->kind == BE_WR_SRQ) {
		struct be_srq *s = be_srq_get(be, b->h);

		if (!s || s->gen != b->gen)
			return false;
		*ret_srq = s->srq;
		*ret_q = &s->rq;
		*ret_qpn = 0;
	} else {
		struct be_qp *q = be_qp_get(be, b->h);

		if (!q || q->gen != b->gen || !q->qp)
			return false;
		*ret_qp = q->qp;
		*ret_q = b->kind == BE_WR_SQ ? &q->sq : &q->rq;
		*ret_qpn = q->qpn;
	}
	return true;
}

/* Index in the staged list of the WR the host refused (n: none). */
static unsigned int batch_post(struct be *be, struct ibv_qp *qp,
			       struct ibv_srq *srq)
{
	struct be_batch *b = &be->batch;
	struct ibv_send_wr *bad_s = NULL;
	struct ibv_recv_wr *bad_r = NULL;
	unsigned int i;
	int ret;

	for (i = 0; i + 1 < b->n; i++) {
		if (b->kind == BE_WR_SQ)
			b->wr.s[i].next = &b->wr.s[i + 1];
		else
			b->wr.r[i].next = &b->wr.r[i + 1];
	}
	if (b->kind == BE_WR_SQ) {
		b->wr.s[b->n - 1].next = NULL;
		ret = ibv_post_send(qp, b->wr.s, &bad_s);
	} else {
		b->wr.r[b->n - 1].next = NULL;
		ret = srq ? ibv_post_srq_recv(srq, b->wr.r, &bad_r)
			  : ibv_post_recv(qp, b->wr.r, &bad_r);
	}
	if (!ret)
		return b->n;
	/* verbs: everything before bad_wr is posted, it and the rest not */
	if (b->kind == BE_WR_SQ && bad_s >= b->wr.s && bad_s < b->wr.s + b->n)
		return (unsigned int)(bad_s - b->wr.s);
	if (b->kind != BE_WR_SQ && bad_r >= b->wr.r && bad_r < b->wr.r + b->n)
		return (unsigned int)(bad_r - b->wr.r);
	return 0; /* a provider that names no WR: none was posted */
}

/* Counters and probes of the staged WRs the host took. */
static void batch_count(struct be *be, uint32_t qpn, unsigned int n)
{
	struct be_batch *b = &be->batch;
	unsigned int i;

	for (i = 0; i < n; i++) {
		uint64_t id = b->kind == BE_WR_SQ ? b->wr.s[i].wr_id
						  : b->wr.r[i].wr_id;

		RDMAGATE_WR_POST(
			rdmagate_probe_vm, qpn,
			b->kind == BE_WR_SQ
				? (uint32_t)send_wc_opcode(b->wr.s[i].opcode)
				: (uint32_t)IBV_WC_RECV,
			id, b->bytes[i]);
		if (b->kind == BE_WR_SQ) {
			be->st->sends++;
			be->st->send_bytes += b->bytes[i];
		} else {
			be->st->recvs++;
			be->st->srq_recvs += b->kind == BE_WR_SRQ;
		}
	}
}

/*
 * Posts what is staged as one list.  The WRs the host refused (the bad
 * one and every one after it) leave the queue's bookkeeping; their wr_ids
 * go to ret_refused (room for BE_BATCH).  Returns how many were refused.
 */
static unsigned int batch_flush(struct be *be, uint64_t *ret_refused)
{
	struct be_batch *b = &be->batch;
	struct ibv_qp *qp = NULL;
	struct ibv_srq *srq = NULL;
	struct be_wq *q = NULL;
	unsigned int i, ok, n = b->n;
	uint32_t qpn = 0;

	if (!n)
		return 0;
	b->n = 0;
	b->inl_used = 0;
	/* its QP or SRQ is gone (and its bookkeeping with it): drop them */
	if (!batch_target(be, &qp, &srq, &q, &qpn))
		return 0;
	b->n = n;
	ok = batch_post(be, qp, srq);
	b->n = 0;
	batch_count(be, qpn, ok);
	for (i = ok; i < n; i++) {
		uint64_t id = b->kind == BE_WR_SQ ? b->wr.s[i].wr_id
						  : b->wr.r[i].wr_id;

		ret_refused[i - ok] = id;
	}
	return n - ok;
}

/*
 * Completes refused WRs (wr_ids from batch_flush()) through the frontend,
 * in posting order, with IBV_WC_LOC_QP_OP_ERR.  The callback may post
 * again: every staged field was copied out before.
 */
static void batch_refused(struct be *be, const uint64_t *ids, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct be_wc c = { 0 };
		struct be_wq *q;
		uint32_t k, cq = 0;

		q = wq_of(be, ids[i], &c, &k);
		if (!q)
			continue;
		if (!c.srq) {
			const struct be_qp *p = &be->qp[c.wq];

			cq = c.recv ? p->recv_cq : p->send_cq;
			c.qp = c.wq;
			c.qp_num = p->qpn;
		}
		/* an SRQ receive has no CQ until a QP takes it: none */
		c.cq_ctx = cq ? be->cq[cq].ctx : NULL;
		c.cookie = q->e[k].cookie;
		c.signaled = q->e[k].signaled;
		c.opcode = (enum ibv_wc_opcode)q->e[k].opcode;
		c.status = IBV_WC_LOC_QP_OP_ERR;
		c.refused = true;
		wq_put(be, q, k);
		if (c.recv)
			be->st->recv_errors++;
		else
			be->st->send_errors++;
		be_refused(be,
			   "%s refused by the host (QP state, or its "
			   "queue is full)",
			   c.recv ? "a receive" : "a send");
		RDMAGATE_WR_COMPLETE(rdmagate_probe_vm, c.qp_num, ids[i],
				     (uint32_t)c.status, (uint32_t)c.opcode);
		be->ops->completion(be->fe, &c);
	}
}

void be_batch_end(struct be *be)
{
	uint64_t ids[BE_BATCH];
	unsigned int n;

	if (!be->batch.depth || --be->batch.depth)
		return;
	n = batch_flush(be, ids);
	batch_refused(be, ids, n);
}

/*
 * A slot in the stage for a WR of queue (kind, h) with inl bytes of inline
 * payload: what another queue staged, or a full stage, is posted first
 * (refusals complete through the frontend).  Returns the slot's index.
 */
static unsigned int batch_slot(struct be *be, enum be_wr_kind kind, uint32_t h,
			       uint16_t gen, uint32_t inl)
{
	struct be_batch *b = &be->batch;

	/* a refusal's callback may stage again: check until it fits */
	while (b->n &&
	       (b->kind != kind || b->h != h || b->gen != gen ||
		b->n == BE_BATCH || b->inl_used + inl > BE_BATCH_INLINE)) {
		uint64_t ids[BE_BATCH];
		unsigned int n = batch_flush(be, ids);

		batch_refused(be, ids, n);
	}
	b->kind = kind;
	b->h = h;
	b->gen = gen;
	return b->n;
}

/*
 * Outside a batch: posts the one WR just staged at once.  Returns
 * IBV_WC_SUCCESS, or LOC_QP_OP_ERR (refused: the caller drops its entry).
 */
static enum ibv_wc_status post_now(struct be *be, struct reason *why)
{
	uint64_t id;

	if (be->batch.depth)
		return IBV_WC_SUCCESS;
	if (batch_flush(be, &id) == 0)
		return IBV_WC_SUCCESS;
	reason_set(why, "the host refused it (QP state, or its queue is full)");
	return IBV_WC_LOC_QP_OP_ERR;
}

/* Fills the host WR of a send in the stage's next slot (not yet counted). */
static enum ibv_wc_status stage_send(struct be *be, uint32_t h, struct be_qp *q,
				     const struct be_send_wr *w, int k,
				     struct reason *why)
{
	bool inl = w->send_flags & IBV_SEND_INLINE;
	struct be_batch *b = &be->batch;
	unsigned int i =
		batch_slot(be, BE_WR_SQ, h, q->gen, inl ? w->inline_len : 0);
	struct ibv_send_wr *wr = &b->wr.s[i];
	struct ibv_sge *sge = b->sge[i];

	memset(wr, 0, sizeof(*wr));
	wr->wr_id = be_wr_id(q->gen, BE_WR_SQ, h, (uint32_t)k);
	wr->opcode = w->opcode;
	wr->send_flags = w->send_flags | IBV_SEND_SIGNALED;
	wr->imm_data = w->imm_data;
	wr->sg_list = sge;
	if (inl) {
		/* the frontend's copy is gone by the time the list posts */
		if (w->inline_len)
			memcpy(b->inl + b->inl_used, w->inline_data,
			       w->inline_len);
		sge[0].addr = (uintptr_t)(b->inl + b->inl_used);
		sge[0].length = w->inline_len;
		sge[0].lkey = 0;
		wr->num_sge = w->inline_len ? 1 : 0;
	} else {
		if (map_sges(be, q->pd, w->sge, w->num_sge,
			     w->opcode == IBV_WR_RDMA_READ ||
				     w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
				     w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD,
			     sge) < 0) {
			reason_set(why, "%s", BAD_SGE);
			return IBV_WC_LOC_PROT_ERR;
		}
		wr->num_sge = (int)w->num_sge;
	}
	switch (w->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		wr->wr.rdma.remote_addr = w->wr.rdma.remote_addr;
		wr->wr.rdma.rkey = w->wr.rdma.rkey;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		wr->wr.atomic.remote_addr = w->wr.atomic.remote_addr;
		wr->wr.atomic.compare_add = w->wr.atomic.compare_add;
		wr->wr.atomic.swap = w->wr.atomic.swap;
		wr->wr.atomic.rkey = w->wr.atomic.rkey;
		break;
	default:
		break;
	}
	if (q->type == BE_QPT_UD) {
		int a = ah_get(be, q->pd, &w->ud.av, why);

		if (a < 0)
			return IBV_WC_LOC_QP_OP_ERR;
		/* held until entry k is freed: completed, refused or its QP
		 * destroyed (nothing below fails) */
		wr->wr.ud.ah = be->ah[a].ah;
		be->ah[a].inflight++;
		q->sq.e[k].ah = (uint32_t)a + 1;
		wr->wr.ud.remote_qpn = w->ud.remote_qpn;
		wr->wr.ud.remote_qkey = w->ud.remote_qkey;
	}
	b->bytes[i] = inl ? w->inline_len : sge_bytes(w->sge, w->num_sge);
	b->inl_used += inl ? w->inline_len : 0;
	b->n++;
	return IBV_WC_SUCCESS;
}

enum be_post be_post_send(struct be *be, uint32_t h, const struct be_send_wr *w,
			  enum ibv_wc_status *ret_status, struct reason *why)
{
	struct be_qp *q = be_qp_get(be, h);
	enum ibv_wc_status st;
	int k;

	if (!q) {
		reason_set(why, "no such QP");
		st = IBV_WC_LOC_QP_OP_ERR;
		goto done;
	}
	st = check_send(be, q, w, why);
	if (st != IBV_WC_SUCCESS)
		goto done;
	if (q->type == BE_QPT_GSI) {
		/* QP1: a MAD for the mux, done at once */
		st = qp1_send(be, h, w, why);
		RDMAGATE_WR_COMPLETE(rdmagate_probe_vm, q->qpn, w->cookie,
				     (uint32_t)st, IBV_WC_SEND);
		*ret_status = st;
		return BE_DONE;
	}
	k = wq_get(&q->sq);
	if (k < 0) {
		reason_set(why, "the send queue is full");
		st = IBV_WC_LOC_QP_OP_ERR;
		goto done;
	}
	st = stage_send(be, h, q, w, k, why);
	if (st != IBV_WC_SUCCESS) {
		wq_put(be, &q->sq, (uint32_t)k);
		goto done;
	}
	q->sq.e[k].cookie = w->cookie;
	q->sq.e[k].opcode = (uint8_t)send_wc_opcode(w->opcode);
	q->sq.e[k].signaled =
		q->sq_sig_all || (w->send_flags & IBV_SEND_SIGNALED);
	st = post_now(be, why);
	if (st == IBV_WC_SUCCESS)
		return BE_POSTED;
	wq_put(be, &q->sq, (uint32_t)k);
done:
	be->st->send_errors++;
	RDMAGATE_WR_COMPLETE(rdmagate_probe_vm, q ? q->qpn : 0, w->cookie,
			     (uint32_t)st, (uint32_t)send_wc_opcode(w->opcode));
	*ret_status = st;
	return BE_DONE;
}

/* ---- receive ---- */

static enum be_post recv_refused(struct be *be, uint32_t qpn,
				 const struct be_recv_wr *w,
				 enum ibv_wc_status st,
				 enum ibv_wc_status *ret_status)
{
	be->st->recv_errors++;
	RDMAGATE_WR_COMPLETE(rdmagate_probe_vm, qpn, w->cookie, (uint32_t)st,
			     IBV_WC_RECV);
	*ret_status = st;
	return BE_DONE;
}

static enum be_post gsi_recv(struct be *be, struct be_qp *q,
			     const struct be_recv_wr *w,
			     enum ibv_wc_status *ret_status, struct reason *why)
{
	struct be_wq *rq = &q->rq;
	struct be_gsi_recv *g;

	if (rq->count >= rq->size) {
		reason_set(why, "the receive queue is full");
		return recv_refused(be, q->qpn, w, IBV_WC_LOC_QP_OP_ERR,
				    ret_status);
	}
	g = &rq->gsi[(rq->gsi_first + rq->count) % rq->size];
	g->cookie = w->cookie;
	g->num_sge = w->num_sge;
	memcpy(g->sge, w->sge, w->num_sge * sizeof(*w->sge));
	rq->count++;
	be->st->recvs++;
	return BE_POSTED;
}

static enum be_post post_recv(struct be *be, enum be_wr_kind kind, uint32_t h,
			      const struct be_recv_wr *w,
			      enum ibv_wc_status *ret_status,
			      struct reason *why)
{
	struct be_qp *q = kind == BE_WR_RQ ? be_qp_get(be, h) : NULL;
	struct be_srq *s = kind == BE_WR_SRQ ? be_srq_get(be, h) : NULL;
	struct be_wq *rq = q ? &q->rq : s ? &s->rq : NULL;
	uint32_t pd = q ? q->pd : s ? s->pd : 0;
	uint32_t max_sge = q ? q->cap.max_recv_sge : s ? s->max_sge : 0;
	uint16_t gen = q ? q->gen : s ? s->gen : 0;
	struct be_batch *b = &be->batch;
	struct ibv_recv_wr *wr;
	unsigned int i;
	int k;

	if (!rq || (q && q->srq)) {
		reason_set(why, "%s",
			   q ? "the QP receives through its SRQ"
			     : "no such queue");
		return recv_refused(be, q ? q->qpn : 0, w, IBV_WC_LOC_QP_OP_ERR,
				    ret_status);
	}
	if (w->num_sge > max_sge || w->num_sge > BE_MAX_SGE ||
	    (w->num_sge && !w->sge)) {
		reason_set(why, "more SGEs than the queue allows");
		return recv_refused(be, q ? q->qpn : 0, w, IBV_WC_LOC_LEN_ERR,
				    ret_status);
	}
	if (q && q->type == BE_QPT_GSI)
		return gsi_recv(be, q, w, ret_status, why);
	k = wq_get(rq);
	if (k < 0) {
		reason_set(why, "the receive queue is full");
		return recv_refused(be, q ? q->qpn : 0, w, IBV_WC_LOC_QP_OP_ERR,
				    ret_status);
	}
	i = batch_slot(be, kind, h, gen, 0);
	if (map_sges(be, pd, w->sge, w->num_sge, true, b->sge[i]) < 0) {
		wq_put(be, rq, (uint32_t)k);
		reason_set(why, "%s", BAD_SGE);
		return recv_refused(be, q ? q->qpn : 0, w, IBV_WC_LOC_PROT_ERR,
				    ret_status);
	}
	wr = &b->wr.r[i];
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = be_wr_id(gen, kind, h, (uint32_t)k);
	wr->sg_list = b->sge[i];
	wr->num_sge = (int)w->num_sge;
	b->bytes[i] = sge_bytes(w->sge, w->num_sge);
	b->n++;
	rq->e[k].cookie = w->cookie;
	rq->e[k].opcode = IBV_WC_RECV;
	rq->e[k].signaled = true;
	if (post_now(be, why) != IBV_WC_SUCCESS) {
		wq_put(be, rq, (uint32_t)k);
		return recv_refused(be, q ? q->qpn : 0, w, IBV_WC_LOC_QP_OP_ERR,
				    ret_status);
	}
	return BE_POSTED;
}

enum be_post be_post_recv(struct be *be, uint32_t qp,
			  const struct be_recv_wr *w,
			  enum ibv_wc_status *ret_status, struct reason *why)
{
	return post_recv(be, BE_WR_RQ, qp, w, ret_status, why);
}

enum be_post be_post_srq_recv(struct be *be, uint32_t srq,
			      const struct be_recv_wr *w,
			      enum ibv_wc_status *ret_status,
			      struct reason *why)
{
	return post_recv(be, BE_WR_SRQ, srq, w, ret_status, why);
}

/* ---- guest memory through SGEs (QP1) ---- */

enum ibv_wc_status be_sge_copy(const struct be *be, uint32_t pd,
			       const struct be_sge *sge, uint32_t num_sge,
			       void *buf, uint32_t len, bool to_guest,
			       struct reason *why)
{
	uint8_t *b = buf;
	uint32_t i;

	for (i = 0; i < num_sge && len > 0; i++) {
		uint32_t n = sge[i].length < len ? sge[i].length : len;
		uint8_t *host;

		if (!n)
			continue;
		host = be_sge_host(be, pd, sge[i].lkey, sge[i].addr, n,
				   to_guest);
		if (!host) {
			reason_set(why, "%s",
				   to_guest ? "an SGE is not inside a writable "
					      "memory region of the QP's PD"
					    : "an SGE is not inside a memory "
					      "region "
					      "of the QP's PD");
			return IBV_WC_LOC_PROT_ERR;
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
		reason_set(
			why, "%s",
			to_guest ? "the receive buffer is too short"
				 : "the SGEs hold fewer bytes than the length");
		return IBV_WC_LOC_LEN_ERR;
	}
	return IBV_WC_SUCCESS;
}

int be_gsi_deliver(struct be *be, void *data, uint32_t len,
		   const struct be_wc *wc)
{
	uint32_t h = be_qp_by_num(be, 1);
	struct be_gsi_recv g;
	struct be_wc c = *wc;
	struct be_qp *q;
	struct reason why;

	if (!h)
		return -ENOENT;
	q = &be->qp[h];
	if (q->state != IBV_QPS_RTR && q->state != IBV_QPS_RTS)
		return -ENOENT;
	if (q->rq.count == 0)
		return -ENOBUFS;
	g = q->rq.gsi[q->rq.gsi_first];
	q->rq.gsi_first = (q->rq.gsi_first + 1) % q->rq.size;
	q->rq.count--;
	c.cq_ctx = be->cq[q->recv_cq].ctx;
	c.wq_ctx = q->ctx;
	c.wq = h;
	c.srq = false;
	c.recv = true;
	c.signaled = true;
	c.cookie = g.cookie;
	c.opcode = IBV_WC_RECV;
	c.qp = h;
	c.qp_num = 1;
	c.status =
		be_sge_copy(be, q->pd, g.sge, g.num_sge, data, len, true, &why);
	if (c.status != IBV_WC_SUCCESS) {
		c.byte_len = 0;
		c.wc_flags = 0;
		c.src_qp = 0;
		be->st->recv_errors++;
		be_refused(be, "QP1 receive refused: %s", why.msg);
	}
	RDMAGATE_WR_COMPLETE(rdmagate_probe_vm, 1, g.cookie, (uint32_t)c.status,
			     (uint32_t)c.opcode);
	be->ops->completion(be->fe, &c);
	if (be->ops->round_done)
		be->ops->round_done(be->fe);
	return c.status == IBV_WC_SUCCESS ? 0 : -EIO;
}

/* ---- completions ---- */

static void complete(struct be *be, uint32_t cq, const struct ibv_wc *wc)
{
	struct be_wc c = { .cq_ctx = be->cq[cq].ctx };
	struct be_wq *q;
	uint32_t k;

	q = wq_of(be, wc->wr_id, &c, &k);
	if (!q) {
		be->st->missing_completions++; /* its QP or SRQ is gone */
		return;
	}
	c.cookie = q->e[k].cookie;
	c.signaled = q->e[k].signaled;
	c.opcode = (enum ibv_wc_opcode)q->e[k].opcode;
	wq_put(be, q, k);
	c.status = wc->status;
	c.vendor_err = wc->vendor_err;
	c.qp = be_qp_by_num(be, wc->qp_num);
	c.qp_num = wc->qp_num;
	RDMAGATE_WR_COMPLETE(rdmagate_probe_vm, wc->qp_num, wc->wr_id,
			     (uint32_t)wc->status, (uint32_t)c.opcode);
	if (wc->status == IBV_WC_SUCCESS) {
		if (c.recv)
			c.opcode = wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM
					   ? IBV_WC_RECV_RDMA_WITH_IMM
					   : IBV_WC_RECV;
		c.byte_len = wc->byte_len;
		c.imm_data = wc->imm_data;
		c.src_qp = wc->src_qp;
		c.wc_flags =
			wc->wc_flags & (IBV_WC_GRH | IBV_WC_WITH_IMM |
					IBV_WC_WITH_INV | IBV_WC_IP_CSUM_OK);
		c.pkey_index = 0;
		c.sl = wc->sl;
		c.slid = wc->slid;
		c.dlid_path_bits = wc->dlid_path_bits;
	}
	be->ops->completion(be->fe, &c);
}

int be_cq_poll(struct be *be, uint32_t cq, unsigned int budget)
{
	struct ibv_wc wc[BE_POLL_BATCH];
	unsigned int done = 0;
	int n, i;

	if (cq == 0 || cq > (uint32_t)be->attr.max_cq || !be->cq[cq].used)
		return -ENOENT;
	while (done < budget) {
		unsigned int want = budget - done < ARRAY_SIZE(wc)
					    ? budget - done
					    : ARRAY_SIZE(wc);

		n = ibv_poll_cq(be->cq[cq].cq, (int)want, wc);
		if (n < 0) {
			log_peer_warnx("CQ %u: ibv_poll_cq failed", cq);
			return -EIO;
		}
		for (i = 0; i < n; i++) {
			complete(be, cq, &wc[i]);
			/* the callback may have destroyed the CQ */
			if (!be->cq[cq].used)
				return (int)(done + (unsigned int)i + 1);
		}
		done += (unsigned int)n;
		if ((unsigned int)n < want)
			break;
	}
	return (int)done;
}

void be_poll(struct be *be)
{
	uint32_t i;

	for (i = 1; i <= (uint32_t)be->attr.max_cq; i++)
		if (be->cq[i].used)
			be_cq_poll(be, i, BE_POLL_BUDGET);
}

void be_chan_ready(void *arg)
{
	struct be *be = arg;
	struct ibv_cq *cq;
	void *ctx;

	while (ibv_get_cq_event(be->chan, &cq, &ctx) == 0) {
		uint32_t h = (uint32_t)(uintptr_t)ctx;

		ibv_ack_cq_events(cq, 1);
		if (ibv_req_notify_cq(cq, 0))
			log_peer_warnx("CQ %u: cannot re-arm the host CQ", h);
		/* everything: the event fired once for all of them */
		while (be_cq_poll(be, h, BE_POLL_BUDGET) == (int)BE_POLL_BUDGET)
			;
	}
	/* every CQE of the round is written: the frontend signals now */
	if (be->ops->round_done)
		be->ops->round_done(be->fe);
}
