// SPDX-License-Identifier: MIT
/*
 * The PVRDMA command slot: decode (cmd.c), one handler per command on the
 * backend, the response and REG_ERR (docs/pvrdma.md, "Commands").
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "worker/backend/mr_layout.h"
#include "worker/pvrdma/dev.h"

typedef int (*cmd_fn)(struct pvrdma_dev *d, const union pvrdma_cmd_req *c,
		      union pvrdma_cmd_resp *resp);

/* ---- objects ---- */

static void free_cq(struct pvrdma_cq *cq)
{
	pvrdma_pages_release(&cq->pages);
	free(cq);
}

static void free_qp(struct pvrdma_qp *qp)
{
	pvrdma_pages_release(&qp->pages);
	free(qp);
}

static void free_srq(struct pvrdma_srq *srq)
{
	pvrdma_pages_release(&srq->pages);
	free(srq);
}

void pvrdma_free_objects(struct pvrdma_dev *d)
{
	uint32_t i;

	for (i = 0; d->qps && i < d->nqps; i++) {
		if (d->qps[i])
			free_qp(d->qps[i]);
		d->qps[i] = NULL;
	}
	for (i = 0; d->cqs && i < d->ncqs; i++) {
		if (d->cqs[i])
			free_cq(d->cqs[i]);
		d->cqs[i] = NULL;
	}
	for (i = 0; d->srqs && i < d->nsrqs; i++) {
		if (d->srqs[i])
			free_srq(d->srqs[i]);
		d->srqs[i] = NULL;
	}
	memset(d->uc_uar, 0, sizeof(d->uc_uar));
	d->uc_end = 0;
}

/* A user context handle: 0 (the kernel's) or a live CREATE_UC. */
static int check_ctx(struct pvrdma_dev *d, uint32_t ctx)
{
	if (ctx == 0 || (ctx < PVRDMA_UAR_PAGES && d->uc_uar[ctx]))
		return 0;
	return -EINVAL;
}

/* ---- port, P_Key, user contexts, PDs ---- */

static int cmd_query_port(struct pvrdma_dev *d, const union pvrdma_cmd_req *c,
			  union pvrdma_cmd_resp *resp)
{
	struct pvrdma_port_attr *a = &resp->query_port_resp.attrs;
	struct ibv_port_attr p;

	(void)c;
	be_query_port(d->be, &p);
	a->state = p.state;
	a->max_mtu = p.max_mtu;
	a->active_mtu = p.active_mtu;
	a->gid_tbl_len = d->caps.gid_tbl_len;
	a->port_cap_flags = p.port_cap_flags;
	a->max_msg_sz = p.max_msg_sz;
	a->bad_pkey_cntr = p.bad_pkey_cntr;
	a->qkey_viol_cntr = p.qkey_viol_cntr;
	a->pkey_tbl_len = 1;
	a->lid = p.lid;
	a->sm_lid = p.sm_lid;
	a->lmc = p.lmc;
	a->max_vl_num = p.max_vl_num;
	a->sm_sl = p.sm_sl;
	a->subnet_timeout = p.subnet_timeout;
	a->init_type_reply = p.init_type_reply;
	a->active_width = p.active_width;
	a->active_speed = p.active_speed;
	a->phys_state = p.phys_state;
	return 0;
}

static int cmd_query_pkey(struct pvrdma_dev *d, const union pvrdma_cmd_req *c,
			  union pvrdma_cmd_resp *resp)
{
	return be_query_pkey(d->be, c->query_pkey.index,
			     &resp->query_pkey_resp.pkey);
}

static int cmd_create_uc(struct pvrdma_dev *d, const union pvrdma_cmd_req *c,
			 union pvrdma_cmd_resp *resp)
{
	/* BAR2 is aligned to its size: the PFN's low bits name the page. */
	uint32_t uar = (uint32_t)(c->create_uc.pfn64 % PVRDMA_UAR_PAGES);
	uint32_t i;

	if (uar == 0)
		return -EINVAL; /* page 0 is the kernel driver's */
	for (i = 1; i < PVRDMA_UAR_PAGES; i++) {
		if (!d->uc_uar[i]) {
			d->uc_uar[i] = (uint16_t)uar;
			if (i >= d->uc_end)
				d->uc_end = i + 1;
			resp->create_uc_resp.ctx_handle = i;
			return 0;
		}
	}
	return -ENOSPC;
}

static int cmd_destroy_uc(struct pvrdma_dev *d, const union pvrdma_cmd_req *c,
			  union pvrdma_cmd_resp *resp)
{
	uint32_t h = c->destroy_uc.ctx_handle;

	(void)resp;
	if (h == 0 || h >= PVRDMA_UAR_PAGES || !d->uc_uar[h])
		return -EINVAL;
	d->uc_uar[h] = 0;
	return 0;
}

static int cmd_create_pd(struct pvrdma_dev *d, const union pvrdma_cmd_req *c,
			 union pvrdma_cmd_resp *resp)
{
	if (check_ctx(d, c->create_pd.ctx_handle) < 0)
		return -EINVAL;
	return be_pd_create(d->be, BE_ANY, &resp->create_pd_resp.pd_handle);
}

static int cmd_destroy_pd(struct pvrdma_dev *d, const union pvrdma_cmd_req *c,
			  union pvrdma_cmd_resp *resp)
{
	(void)resp;
	return be_pd_destroy(d->be, c->destroy_pd.pd_handle);
}

/* ---- MRs ---- */

static int reg_user_mr(struct pvrdma_dev *d,
		       const struct pvrdma_cmd_create_mr *m,
		       struct be_mr_info *info)
{
	struct pvrdma_pages pages;
	struct rdma_mr_layout lay;
	struct reason why;
	int r;

	r = pvrdma_map_pages(d, m->pdir_dma, m->nchunks, d->lim.max_mr_pages,
			     "MR", PVRDMA_PAGES_MR, &pages);
	if (r < 0)
		return r;
	r = rdma_mr_layout_from_pages(pages.gpa, pages.n, m->start, m->length,
				      m->start, &lay, &why);
	pvrdma_pages_release(&pages);
	if (r < 0) {
		log_peer_warnx("pvrdma: MR refused: %s", why.msg);
		return r;
	}
	r = be_mr_reg(d->be, m->pd_handle, &lay,
		      pvrdma_mr_access(m->access_flags), info);
	rdma_mr_layout_release(&lay);
	return r;
}

_Static_assert(PVRDMA_ACCESS_RELAXED_ORDERING == IBV_ACCESS_RELAXED_ORDERING,
	       "the guest's optional access bits are the host's");

static int cmd_create_mr(struct pvrdma_dev *d, const union pvrdma_cmd_req *c,
			 union pvrdma_cmd_resp *resp)
{
	const struct pvrdma_cmd_create_mr *m = &c->create_mr;
	struct pvrdma_cmd_create_mr_resp *rr = &resp->create_mr_resp;
	struct be_mr_info info;
	int r;

	/* PVRDMA_ACCESS_* are the IBV_ACCESS_* bits (see pvrdma_mr_access) */
	if (m->flags & PVRDMA_MR_FLAG_DMA)
		r = be_mr_reg_dma(d->be, m->pd_handle,
				  pvrdma_mr_access(m->access_flags), &info);
	else
		r = reg_user_mr(d, m, &info);
	if (r < 0)
		return r;
	rr->mr_handle = info.handle;
	rr->lkey = info.lkey;
	rr->rkey = info.rkey;
	return 0;
}

static int cmd_destroy_mr(struct pvrdma_dev *d, const union pvrdma_cmd_req *c,
			  union pvrdma_cmd_resp *resp)
{
	(void)resp;
	return be_mr_dereg(d->be, c->destroy_mr.mr_handle);
}

/* ---- CQs ---- */

static int cmd_create_cq(struct pvrdma_dev *d, const union pvrdma_cmd_req *c,
			 union pvrdma_cmd_resp *resp)
{
	const struct pvrdma_cmd_create_cq *q = &c->create_cq;
	struct pvrdma_cq *cq;
	uint32_t h, cqe;
	int r;

	if (check_ctx(d, q->ctx_handle) < 0)
		return -EINVAL;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -ENOMEM;
	r = pvrdma_map_pages(d, q->pdir_dma, q->nchunks, d->lim.max_ring_pages,
			     "CQ", PVRDMA_PAGES_RING_OUT, &cq->pages);
	if (r < 0)
		goto fail;
	cq->ring = (struct pvrdma_ring_map){ &cq->pages,
					     PVRDMA_RING_STATE_CQ_OFFSET,
					     PVRDMA_PAGE_SIZE, q->cqe,
					     sizeof(struct pvrdma_cqe) };
	r = be_cq_create(d->be, BE_ANY, q->cqe, cq, &h, &cqe);
	if (r < 0)
		goto fail;
	if (h >= d->ncqs) { /* the backend broke its own bound */
		be_cq_destroy(d->be, h);
		r = -ENOSPC;
		goto fail;
	}
	cq->handle = h;
	d->cqs[h] = cq;
	resp->create_cq_resp.cq_handle = h;
	resp->create_cq_resp.cqe = q->cqe; /* the guest's ring */
	return 0;
fail:
	free_cq(cq);
	return r;
}

static struct pvrdma_cq *find_cq(struct pvrdma_dev *d, uint32_t h)
{
	return h < d->ncqs ? d->cqs[h] : NULL;
}

static int cmd_resize_cq(struct pvrdma_dev *d, const union pvrdma_cmd_req *c,
			 union pvrdma_cmd_resp *resp)
{
	struct pvrdma_cq *cq = find_cq(d, c->resize_cq.cq_handle);
	uint32_t got;
	int r;

	if (!cq)
		return -EINVAL;
	/* The command carries no new ring: only the host CQ can change. */
	if (c->resize_cq.cqe > cq->ring.nelems)
		return -EINVAL;
	r = be_cq_resize(d->be, cq->handle, c->resize_cq.cqe, &got);
	if (r < 0)
		return r;
	resp->resize_cq_resp.cqe = c->resize_cq.cqe;
	return 0;
}

static int cmd_destroy_cq(struct pvrdma_dev *d, const union pvrdma_cmd_req *c,
			  union pvrdma_cmd_resp *resp)
{
	struct pvrdma_cq *cq = find_cq(d, c->destroy_cq.cq_handle);
	int r;

	(void)resp;
	if (!cq)
		return -EINVAL;
	r = be_cq_destroy(d->be, cq->handle);
	if (r < 0)
		return r;
	d->cqs[cq->handle] = NULL;
	free_cq(cq);
	return 0;
}

/* ---- QPs ---- */

static const enum be_qp_type qp_types[] = {
	[PVRDMA_QPT_GSI] = BE_QPT_GSI,
	[PVRDMA_QPT_RC] = BE_QPT_RC,
	[PVRDMA_QPT_UC] = BE_QPT_UC,
	[PVRDMA_QPT_UD] = BE_QPT_UD,
};

static void qp_rings(struct pvrdma_qp *qp, const struct pvrdma_cmd_create_qp *q)
{
	qp->sq = (struct pvrdma_ring_map){
		&qp->pages, PVRDMA_RING_STATE_SQ_OFFSET, PVRDMA_PAGE_SIZE,
		q->max_send_wr, pvrdma_sq_wqe_size(q->max_send_sge)
	};
	qp->has_rq = !q->is_srq;
	if (qp->has_rq)
		qp->rq = (struct pvrdma_ring_map){
			&qp->pages, PVRDMA_RING_STATE_RQ_OFFSET,
			(1 + (uint64_t)q->send_chunks) * PVRDMA_PAGE_SIZE,
			q->max_recv_wr, pvrdma_rq_wqe_size(q->max_recv_sge)
		};
}

static void qp_init(const struct pvrdma_cmd_create_qp *q, struct pvrdma_qp *qp,
		    struct be_qp_init *in)
{
	memset(in, 0, sizeof(*in));
	in->type = qp_types[q->qp_type];
	in->pd = q->pd_handle;
	in->send_cq = q->send_cq_handle;
	in->recv_cq = q->recv_cq_handle;
	in->srq = q->is_srq ? q->srq_handle : 0;
	in->sq_sig_all = q->sq_sig_all != 0;
	in->cap.max_send_wr = q->max_send_wr;
	in->cap.max_send_sge = q->max_send_sge;
	in->cap.max_recv_wr = q->is_srq ? 0 : q->max_recv_wr;
	in->cap.max_recv_sge = q->is_srq ? 0 : q->max_recv_sge;
	in->ctx = qp;
}

static int cmd_create_qp(struct pvrdma_dev *d, const union pvrdma_cmd_req *c,
			 union pvrdma_cmd_resp *resp)
{
	const struct pvrdma_cmd_create_qp *q = &c->create_qp;
	struct pvrdma_cmd_create_qp_resp_v2 *rr = &resp->create_qp_resp_v2;
	struct be_qp_init in;
	struct be_qp_info info;
	struct pvrdma_qp *qp;
	int r;

	if (!find_cq(d, q->send_cq_handle) || !find_cq(d, q->recv_cq_handle))
		return -EINVAL;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	r = pvrdma_map_pages(d, q->pdir_dma, q->total_chunks,
			     d->lim.max_ring_pages, "QP", PVRDMA_PAGES_RING_IN,
			     &qp->pages);
	if (r < 0)
		goto fail;
	qp_rings(qp, q);
	qp_init(q, qp, &in);
	r = be_qp_create(d->be, BE_ANY, &in, &info);
	if (r < 0)
		goto fail;
	if (info.handle >= d->nqps) {
		be_qp_destroy(d->be, info.handle);
		r = -ENOSPC;
		goto fail;
	}
	qp->handle = info.handle;
	qp->qpn = info.qp_num;
	qp->type = in.type;
	qp->sq_sig_all = in.sq_sig_all;
	qp->max_send_sge = q->max_send_sge;
	qp->max_recv_sge = q->max_recv_sge;
	qp->send_cq = q->send_cq_handle;
	qp->recv_cq = q->recv_cq_handle;
	qp->srq = in.srq;
	d->qps[qp->handle] = qp;
	rr->qpn = info.qp_num;
	rr->qp_handle = info.handle;
	rr->max_send_wr = q->max_send_wr;
	rr->max_recv_wr = in.cap.max_recv_wr;
	rr->max_send_sge = q->max_send_sge;
	rr->max_recv_sge = in.cap.max_recv_sge;
	rr->max_inline_data = 0;
	return 0;
fail:
	free_qp(qp);
	return r;
}

static struct pvrdma_qp *find_qp(struct pvrdma_dev *d, uint32_t h)
{
	return h < d->nqps ? d->qps[h] : NULL;
}

static void ah_from_guest(const struct pvrdma_ah_attr *g, struct be_ah_attr *a)
{
	memset(a, 0, sizeof(*a));
	memcpy(a->dgid, g->grh.dgid.raw, sizeof(a->dgid));
	a->flow_label = g->grh.flow_label;
	a->sgid_index = g->grh.sgid_index;
	a->hop_limit = g->grh.hop_limit;
	a->traffic_class = g->grh.traffic_class;
	a->sl = g->sl;
	a->static_rate = g->static_rate;
	a->global = (g->ah_flags & PVRDMA_AH_GRH) != 0;
}

static void ah_to_guest(const struct be_ah_attr *a, struct pvrdma_ah_attr *g)
{
	memcpy(g->grh.dgid.raw, a->dgid, sizeof(a->dgid));
	g->grh.flow_label = a->flow_label;
	g->grh.sgid_index = a->sgid_index;
	g->grh.hop_limit = a->hop_limit;
	g->grh.traffic_class = a->traffic_class;
	g->sl = a->sl;
	g->static_rate = a->static_rate;
	g->ah_flags = a->global ? PVRDMA_AH_GRH : 0;
	g->port_num = 1;
}

static void cap_to_guest(const struct ibv_qp_cap *c, struct pvrdma_qp_cap *g)
{
	g->max_send_wr = c->max_send_wr;
	g->max_recv_wr = c->max_recv_wr;
	g->max_send_sge = c->max_send_sge;
	g->max_recv_sge = c->max_recv_sge;
	g->max_inline_data = 0;
}

/* The PVRDMA attribute numbering is the IB one (pvrdma_verbs.h). */
static void attr_from_guest(const struct pvrdma_qp_attr *g,
			    struct be_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = (enum ibv_qp_state)g->qp_state;
	a->cur_qp_state = (enum ibv_qp_state)g->cur_qp_state;
	a->path_mtu = (enum ibv_mtu)g->path_mtu;
	a->path_mig_state = (enum ibv_mig_state)g->path_mig_state;
	a->qkey = g->qkey;
	a->rq_psn = g->rq_psn;
	a->sq_psn = g->sq_psn;
	a->dest_qp_num = g->dest_qp_num;
	a->qp_access_flags = g->qp_access_flags;
	a->pkey_index = g->pkey_index;
	a->en_sqd_async_notify = g->en_sqd_async_notify;
	a->sq_draining = g->sq_draining;
	a->max_rd_atomic = g->max_rd_atomic;
	a->max_dest_rd_atomic = g->max_dest_rd_atomic;
	a->min_rnr_timer = g->min_rnr_timer;
	a->timeout = g->timeout;
	a->retry_cnt = g->retry_cnt;
	a->rnr_retry = g->rnr_retry;
	a->cap.max_send_wr = g->cap.max_send_wr;
	a->cap.max_recv_wr = g->cap.max_recv_wr;
	a->cap.max_send_sge = g->cap.max_send_sge;
	a->cap.max_recv_sge = g->cap.max_recv_sge;
	ah_from_guest(&g->ah_attr, &a->ah_attr);
}

static void attr_to_guest(const struct be_qp_attr *a, struct pvrdma_qp_attr *g)
{
	memset(g, 0, sizeof(*g));
	g->qp_state = a->qp_state;
	g->cur_qp_state = a->cur_qp_state;
	g->path_mtu = a->path_mtu;
	g->path_mig_state = a->path_mig_state;
	g->qkey = a->qkey;
	g->rq_psn = a->rq_psn;
	g->sq_psn = a->sq_psn;
	g->dest_qp_num = a->dest_qp_num;
	g->qp_access_flags = a->qp_access_flags;
	g->pkey_index = a->pkey_index;
	g->en_sqd_async_notify = a->en_sqd_async_notify;
	g->sq_draining = a->sq_draining;
	g->max_rd_atomic = a->max_rd_atomic;
	g->max_dest_rd_atomic = a->max_dest_rd_atomic;
	g->min_rnr_timer = a->min_rnr_timer;
	g->port_num = 1;
	g->timeout = a->timeout;
	g->retry_cnt = a->retry_cnt;
	g->rnr_retry = a->rnr_retry;
	cap_to_guest(&a->cap, &g->cap);
	ah_to_guest(&a->ah_attr, &g->ah_attr);
}

static int cmd_modify_qp(struct pvrdma_dev *d, const union pvrdma_cmd_req *c,
			 union pvrdma_cmd_resp *resp)
{
	const struct pvrdma_cmd_modify_qp *m = &c->modify_qp;
	struct pvrdma_qp *qp = find_qp(d, m->qp_handle);
	struct be_qp_attr a;
	int r;

	(void)resp;
	if (!qp)
		return -EINVAL;
	attr_from_guest(&m->attrs, &a);
	/* A PVRDMA QP's rings are fixed at create: its caps cannot change. */
	r = be_qp_modify(d->be, qp->handle, &a,
			 (int)(m->attr_mask & ~PVRDMA_QP_CAP));
	if (r == 0 && (m->attr_mask & PVRDMA_QP_STATE) &&
	    m->attrs.qp_state == PVRDMA_QPS_RESET)
		qp->broken = false; /* the guest resets its ring indices */
	return r;
}

static int cmd_query_qp(struct pvrdma_dev *d, const union pvrdma_cmd_req *c,
			union pvrdma_cmd_resp *resp)
{
	struct pvrdma_qp *qp = find_qp(d, c->query_qp.qp_handle);
	struct be_qp_attr a;
	int r;

	if (!qp)
		return -EINVAL;
	r = be_qp_query(d->be, qp->handle, (int)c->query_qp.attr_mask, &a);
	if (r < 0)
		return r;
	attr_to_guest(&a, &resp->query_qp_resp.attrs);
	return 0;
}

static int cmd_destroy_qp(struct pvrdma_dev *d, const union pvrdma_cmd_req *c,
			  union pvrdma_cmd_resp *resp)
{
	struct pvrdma_qp *qp = find_qp(d, c->destroy_qp.qp_handle);
	int r;

	if (!qp)
		return -EINVAL;
	r = be_qp_destroy(d->be, qp->handle);
	if (r < 0)
		return r;
	resp->destroy_qp_resp.events_reported = qp->events;
	d->qps[qp->handle] = NULL;
	free_qp(qp);
	return 0;
}

/* ---- GIDs ---- */

static int cmd_create_bind(struct pvrdma_dev *d, const union pvrdma_cmd_req *c,
			   union pvrdma_cmd_resp *resp)
{
	const struct pvrdma_cmd_create_bind *b = &c->create_bind;
	uint32_t type = b->gid_type == PVRDMA_GID_TYPE_FLAG_ROCE_V1
				? IBV_GID_TYPE_ROCE_V1
				: IBV_GID_TYPE_ROCE_V2;
	int r;

	(void)resp;
	r = be_gid_add(d->be, b->index, b->new_gid, type, NULL);
	/*
	 * The driver reads REG_ERR right after the request and expects no
	 * answer: a claim the broker has yet to grant is accepted now; if
	 * it is refused, the index stays unusable (gid_done logs it).
	 */
	return r == BE_PENDING ? 0 : r;
}

static int cmd_destroy_bind(struct pvrdma_dev *d, const union pvrdma_cmd_req *c,
			    union pvrdma_cmd_resp *resp)
{
	(void)resp;
	return be_gid_del(d->be, c->destroy_bind.index);
}

/* ---- SRQs ---- */

static int cmd_create_srq(struct pvrdma_dev *d, const union pvrdma_cmd_req *c,
			  union pvrdma_cmd_resp *resp)
{
	const struct pvrdma_cmd_create_srq *s = &c->create_srq;
	struct be_srq_init in;
	struct ibv_srq_attr got;
	struct pvrdma_srq *srq;
	uint32_t h;
	int r;

	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return -ENOMEM;
	r = pvrdma_map_pages(d, s->pdir_dma, s->nchunks, d->lim.max_ring_pages,
			     "SRQ", PVRDMA_PAGES_RING_IN, &srq->pages);
	if (r < 0)
		goto fail;
	srq->ring = (struct pvrdma_ring_map){
		&srq->pages, PVRDMA_RING_STATE_SRQ_OFFSET, PVRDMA_PAGE_SIZE,
		s->attrs.max_wr, pvrdma_rq_wqe_size(s->attrs.max_sge)
	};
	srq->max_sge = s->attrs.max_sge;
	in = (struct be_srq_init){ s->pd_handle, s->attrs.max_wr,
				   s->attrs.max_sge, s->attrs.srq_limit, srq };
	r = be_srq_create(d->be, BE_ANY, &in, &h, &got);
	if (r < 0)
		goto fail;
	if (h >= d->nsrqs) {
		be_srq_destroy(d->be, h);
		r = -ENOSPC;
		goto fail;
	}
	srq->handle = h;
	d->srqs[h] = srq;
	resp->create_srq_resp.srqn = h;
	return 0;
fail:
	free_srq(srq);
	return r;
}

static struct pvrdma_srq *find_srq(struct pvrdma_dev *d, uint32_t h)
{
	return h < d->nsrqs ? d->srqs[h] : NULL;
}

static int cmd_modify_srq(struct pvrdma_dev *d, const union pvrdma_cmd_req *c,
			  union pvrdma_cmd_resp *resp)
{
	struct pvrdma_srq *srq = find_srq(d, c->modify_srq.srq_handle);
	struct ibv_srq_attr a = { 0 };

	(void)resp;
	if (!srq)
		return -EINVAL;
	a.srq_limit = c->modify_srq.attrs.srq_limit;
	if (a.srq_limit >= srq->ring.nelems)
		return -EINVAL;
	return be_srq_modify(d->be, srq->handle, &a, IBV_SRQ_LIMIT);
}

static int cmd_query_srq(struct pvrdma_dev *d, const union pvrdma_cmd_req *c,
			 union pvrdma_cmd_resp *resp)
{
	struct pvrdma_srq *srq = find_srq(d, c->query_srq.srq_handle);
	struct pvrdma_srq_attr *g = &resp->query_srq_resp.attrs;
	struct ibv_srq_attr a;
	int r;

	if (!srq)
		return -EINVAL;
	r = be_srq_query(d->be, srq->handle, &a);
	if (r < 0)
		return r;
	g->max_wr = srq->ring.nelems; /* the guest's ring, not the host's */
	g->max_sge = srq->max_sge;
	g->srq_limit = a.srq_limit;
	return 0;
}

static int cmd_destroy_srq(struct pvrdma_dev *d, const union pvrdma_cmd_req *c,
			   union pvrdma_cmd_resp *resp)
{
	struct pvrdma_srq *srq = find_srq(d, c->destroy_srq.srq_handle);
	int r;

	(void)resp;
	if (!srq)
		return -EINVAL;
	r = be_srq_destroy(d->be, srq->handle);
	if (r < 0)
		return r;
	d->srqs[srq->handle] = NULL;
	free_srq(srq);
	return 0;
}

static const cmd_fn handlers[PVRDMA_CMD_MAX] = {
	[PVRDMA_CMD_QUERY_PORT] = cmd_query_port,
	[PVRDMA_CMD_QUERY_PKEY] = cmd_query_pkey,
	[PVRDMA_CMD_CREATE_PD] = cmd_create_pd,
	[PVRDMA_CMD_DESTROY_PD] = cmd_destroy_pd,
	[PVRDMA_CMD_CREATE_MR] = cmd_create_mr,
	[PVRDMA_CMD_DESTROY_MR] = cmd_destroy_mr,
	[PVRDMA_CMD_CREATE_CQ] = cmd_create_cq,
	[PVRDMA_CMD_RESIZE_CQ] = cmd_resize_cq,
	[PVRDMA_CMD_DESTROY_CQ] = cmd_destroy_cq,
	[PVRDMA_CMD_CREATE_QP] = cmd_create_qp,
	[PVRDMA_CMD_MODIFY_QP] = cmd_modify_qp,
	[PVRDMA_CMD_QUERY_QP] = cmd_query_qp,
	[PVRDMA_CMD_DESTROY_QP] = cmd_destroy_qp,
	[PVRDMA_CMD_CREATE_UC] = cmd_create_uc,
	[PVRDMA_CMD_DESTROY_UC] = cmd_destroy_uc,
	[PVRDMA_CMD_CREATE_BIND] = cmd_create_bind,
	[PVRDMA_CMD_DESTROY_BIND] = cmd_destroy_bind,
	[PVRDMA_CMD_CREATE_SRQ] = cmd_create_srq,
	[PVRDMA_CMD_MODIFY_SRQ] = cmd_modify_srq,
	[PVRDMA_CMD_QUERY_SRQ] = cmd_query_srq,
	[PVRDMA_CMD_DESTROY_SRQ] = cmd_destroy_srq,
};

void pvrdma_refusal_log_init(struct pvrdma_dev *d)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(d->refusal_rl); i++)
		d->refusal_rl[i] = (struct ratelimit)RATELIMIT_WINDOW(
			PVRDMA_REFUSAL_WINDOW_MS, PVRDMA_REFUSAL_BURST);
}

/*
 * Logs a command's refusal through that command's own limit, then the VM's
 * peer limit: a guest cannot flood the log, and refusals of one command (the
 * driver's CREATE_BIND of GIDs the host lacks) do not hide the first refusal
 * of another.  Each line counts every refusal so far.
 */
static void log_refusal(struct pvrdma_dev *d, uint32_t cmd, int err,
			const char *why)
{
	uint64_t n = ++d->stats.command_errors, hidden;
	struct ratelimit *rl =
		&d->refusal_rl[cmd < PVRDMA_CMD_MAX ? cmd : PVRDMA_CMD_MAX];

	if (ratelimit_pass(rl, log_clock_ms(), &hidden))
		log_peer_warnx(
			"pvrdma: command %s refused (%s): %s [%llu refused]",
			pvrdma_cmd_name(cmd), strerror(-err), why,
			(unsigned long long)n);
}

void pvrdma_exec_cmd(struct pvrdma_dev *d)
{
	union pvrdma_cmd_req raw, req;
	union pvrdma_cmd_resp resp;
	struct reason why;
	int code, r;

	d->stats.commands++;
	/* CVE-2022-1050: no slots before a valid DSR, no commands before
	 * ACTIVATE (the driver sends none) */
	if (!d->dsr_ok || !d->active) {
		log_refusal(d, PVRDMA_CMD_MAX, -EPERM,
			    d->dsr_ok ? "device not active" : "no valid DSR");
		d->err = EPERM;
		return;
	}
	if (pvrdma_dma_read(d, d->dsr.cmd_slot_dma, &raw, sizeof(raw)) < 0) {
		log_refusal(d, PVRDMA_CMD_MAX, -EFAULT, "command slot gone");
		d->err = EFAULT;
		return;
	}
	memset(&resp, 0, sizeof(resp));
	code = pvrdma_cmd_decode(&raw, sizeof(raw), &d->lim, &req, &why);
	/* a command the decoder knows but no handler serves is unknown here */
	if (code >= 0 &&
	    ((size_t)code >= ARRAY_SIZE(handlers) || !handlers[code]))
		code = reason_fail(&why, -ENOSYS, "command %s not implemented",
				   pvrdma_cmd_name(raw.hdr.cmd));
	if (code >= 0) {
		r = handlers[code](d, &req, &resp);
		if (r < 0) {
			memset(&resp, 0, sizeof(resp));
			log_refusal(d, (uint32_t)code, r, "by the backend");
		}
	} else {
		r = code;
		log_refusal(d, raw.hdr.cmd, r, why.msg);
	}
	resp.hdr.response = raw.hdr.response;
	resp.hdr.ack = PVRDMA_CMD_RESP(raw.hdr.cmd);
	resp.hdr.err = r < 0 ? (uint8_t)(-r > 255 ? 255 : -r) : 0;
	d->err = r < 0 ? (uint32_t)-r : 0;
	if (pvrdma_dma_write(d, d->dsr.resp_slot_dma, &resp, sizeof(resp)) < 0)
		d->err = EFAULT;
	pvrdma_raise(d, PVRDMA_INTR_VECTOR_RESPONSE);
}
