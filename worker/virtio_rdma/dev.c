// SPDX-License-Identifier: MIT
/*
 * The virtio-rdma frontend of the worker: device ops for the vhost-user
 * layer, the config space, and the control queue, decoded by cmd.c and
 * dispatched through a table {command -> handler} onto the verbs backend
 * (worker/backend/backend.h).  Queue slots (SQ/RQ virtqueue pairs) are
 * this side's: slot s is backend QP or SRQ handle s + 1, CQ number n is
 * backend CQ handle n + 1.  See docs/worker.md.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/probes.h"
#include "worker/virtio_rdma/mr_pt.h"
#include "worker/virtio_rdma/vrdma.h"

/* Control requests we copy (the longest is MODIFY_QP, 1 + 168 bytes). */
#define CTRL_REQ_MAX 512

#define MIN(a, b) ((a) < (b) ? (a) : (b))

/* ---- limits and config space ---- */

static uint32_t clamp_host(uint32_t want, int host)
{
	return host < 0 ? 0 : MIN(want, (uint32_t)host);
}

/*
 * The backend's configuration for this ABI: CQs and queue slots share the
 * 256 virtqueues, rings are VR_RING long, SGEs at most 32 per element.
 */
static void vr_be_cfg(struct vrdma *d, struct be_cfg *bc)
{
	const struct ibv_device_attr *h = &d->cfg->be.hca->dev;
	const struct be_limits *l = &d->cfg->be.lim;
	uint32_t max_cq, slots;

	*bc = d->cfg->be;
	max_cq = MIN(clamp_host(l->max_cq, h->max_cq), 253u);
	slots = (VIRTIO_RDMA_NUM_QUEUES - 1 - max_cq) / 2;
	slots = MIN(slots, l->max_qp + l->max_srq);
	d->num_slots = MIN(slots, (uint32_t)VR_MAX_SLOTS);
	bc->lim.max_cq = max_cq;
	bc->lim.max_qp = MIN(l->max_qp, d->num_slots);
	bc->lim.max_srq = MIN(l->max_srq, d->num_slots);
	bc->lim.max_cqe = MIN(l->max_cqe, (uint32_t)VR_RING);
	bc->lim.max_qp_wr = MIN(l->max_qp_wr, (uint32_t)VR_RING);
	bc->lim.max_srq_wr = MIN(l->max_srq_wr, (uint32_t)VR_RING);
	bc->lim.max_sge = MIN(l->max_sge, (uint32_t)VIRTIO_RDMA_MAX_SGE);
	bc->qp_handles = d->num_slots;
	bc->srq_handles = d->num_slots;
	bc->gid_tbl_len = VIRTIO_RDMA_GID_TBL_LEN;
}

#define CAP_PASSED                                                             \
	(VIRTIO_RDMA_DEVICE_BAD_PKEY_CNTR | VIRTIO_RDMA_DEVICE_BAD_QKEY_CNTR | \
	 VIRTIO_RDMA_DEVICE_CHANGE_PHY_PORT |                                  \
	 VIRTIO_RDMA_DEVICE_UD_AV_PORT_ENFORCE |                               \
	 VIRTIO_RDMA_DEVICE_SYS_IMAGE_GUID |                                   \
	 VIRTIO_RDMA_DEVICE_RC_RNR_NAK_GEN | VIRTIO_RDMA_DEVICE_SRQ_RESIZE)

static uint32_t pos(int v)
{
	return v < 0 ? 0 : (uint32_t)v;
}

static void fill_config(struct vrdma *d)
{
	const struct ibv_device_attr *a = be_device_attr(d->be);
	struct virtio_rdma_config *c = &d->config;

	d->max_cq = pos(a->max_cq);
	d->max_qp = pos(a->max_qp);
	memset(c, 0, sizeof(*c));
	c->phys_port_cnt = 1;
	c->sys_image_guid = a->sys_image_guid;
	c->vendor_id = a->vendor_id;
	c->vendor_part_id = a->vendor_part_id;
	c->hw_ver = a->hw_ver;
	c->max_mr_size =
		MIN(a->max_mr_size,
		    (uint64_t)VIRTIO_RDMA_MR_MAX_PAGES * VIRTIO_RDMA_PAGE_SIZE);
	c->page_size_cap = VIRTIO_RDMA_PAGE_SIZE;
	c->max_qp = d->max_qp;
	c->max_qp_wr = pos(a->max_qp_wr);
	c->device_cap_flags = a->device_cap_flags & CAP_PASSED;
	c->max_send_sge = pos(a->max_sge);
	c->max_recv_sge = c->max_send_sge;
	c->max_sge_rd = pos(a->max_sge_rd);
	c->max_cq = d->max_cq;
	c->max_cqe = pos(a->max_cqe);
	c->max_mr = pos(a->max_mr);
	c->max_pd = pos(a->max_pd);
	c->max_qp_rd_atom = pos(a->max_qp_rd_atom);
	c->max_res_rd_atom = pos(a->max_res_rd_atom);
	c->max_qp_init_rd_atom = pos(a->max_qp_init_rd_atom);
	c->atomic_cap = a->atomic_cap;
	c->max_ah = pos(a->max_ah);
	c->max_pkeys = VIRTIO_RDMA_PKEY_TBL_LEN;
	c->local_ca_ack_delay = a->local_ca_ack_delay;
	c->rg_magic = RDMAGATE_VIRTIO_RDMA_MAGIC;
	c->rg_abi_version = RDMAGATE_VIRTIO_RDMA_ABI_VERSION;
	c->rg_max_srq = pos(a->max_srq);
	c->rg_max_srq_wr = pos(a->max_srq_wr);
	c->rg_max_srq_sge = pos(a->max_srq_sge);
	c->rg_num_slots = d->num_slots;
}

/* ---- translations ---- */

static unsigned int access_to_ibv(uint32_t a)
{
	unsigned int f = 0;

	if (a & VIRTIO_RDMA_ACCESS_LOCAL_WRITE)
		f |= IBV_ACCESS_LOCAL_WRITE;
	if (a & VIRTIO_RDMA_ACCESS_REMOTE_WRITE)
		f |= IBV_ACCESS_REMOTE_WRITE;
	if (a & VIRTIO_RDMA_ACCESS_REMOTE_READ)
		f |= IBV_ACCESS_REMOTE_READ;
	if (a & VIRTIO_RDMA_ACCESS_REMOTE_ATOMIC)
		f |= IBV_ACCESS_REMOTE_ATOMIC;
	if (a & VIRTIO_RDMA_ACCESS_RELAXED_ORDERING)
		f |= IBV_ACCESS_RELAXED_ORDERING;
	return f;
}

static uint32_t access_from_ibv(unsigned int f)
{
	uint32_t a = 0;

	if (f & IBV_ACCESS_LOCAL_WRITE)
		a |= VIRTIO_RDMA_ACCESS_LOCAL_WRITE;
	if (f & IBV_ACCESS_REMOTE_WRITE)
		a |= VIRTIO_RDMA_ACCESS_REMOTE_WRITE;
	if (f & IBV_ACCESS_REMOTE_READ)
		a |= VIRTIO_RDMA_ACCESS_REMOTE_READ;
	if (f & IBV_ACCESS_REMOTE_ATOMIC)
		a |= VIRTIO_RDMA_ACCESS_REMOTE_ATOMIC;
	return a;
}

/* ---- queue slots ---- */

/* The slot of the QP with host QPN qpn (1: the virtual GSI QP). */
static int lookup_qp(struct vrdma *d, uint32_t qpn, uint32_t *ret_slot)
{
	uint32_t s;

	for (s = 0; s < d->num_slots; s++)
		if (d->slot[s].kind == VR_SLOT_QP && d->slot[s].qpn == qpn) {
			*ret_slot = s;
			return 0;
		}
	log_peer_warnx("unknown QP %u", qpn);
	return -ENOENT;
}

static int lookup_srq(struct vrdma *d, uint32_t h, uint32_t *ret_slot)
{
	if (h == 0 || h > d->num_slots || d->slot[h - 1].kind != VR_SLOT_SRQ) {
		log_peer_warnx("unknown SRQ %u", h);
		return -ENOENT;
	}
	*ret_slot = h - 1;
	return 0;
}

static int lookup_cq(struct vrdma *d, uint32_t cqn)
{
	if (cqn >= d->max_cq || !d->cq[cqn].used) {
		log_peer_warnx("unknown CQ %u", cqn);
		return -ENOENT;
	}
	return 0;
}

static int alloc_slot(struct vrdma *d, uint32_t *ret_slot)
{
	uint32_t s;

	for (s = 0; s < d->num_slots; s++)
		if (d->slot[s].kind == VR_SLOT_FREE) {
			*ret_slot = s;
			return 0;
		}
	log_peer_warnx("all %u queue slots in use", d->num_slots);
	return -ENOSPC;
}

static void free_slot(struct vrdma *d, uint32_t s)
{
	vr_slot_flush(d, s);
	memset(&d->slot[s], 0, sizeof(d->slot[s]));
}

/* ---- command handlers ---- */

typedef int (*cmd_fn)(struct vrdma *d, const union rdma_cmd_args *a,
		      union rdma_cmd_rsp *r);

static int do_query_port(struct vrdma *d, const union rdma_cmd_args *a,
			 union rdma_cmd_rsp *r)
{
	struct virtio_rdma_port_attr *p = &r->query_port;
	struct ibv_port_attr h;

	be_query_port(d->be, &h);
	p->state = h.state;
	p->max_mtu = h.max_mtu;
	p->active_mtu = h.active_mtu;
	p->phys_mtu = h.max_mtu;
	p->gid_tbl_len = h.gid_tbl_len;
	p->port_cap_flags = h.port_cap_flags;
	p->max_msg_sz = h.max_msg_sz;
	p->bad_pkey_cntr = h.bad_pkey_cntr;
	p->qkey_viol_cntr = h.qkey_viol_cntr;
	p->pkey_tbl_len = VIRTIO_RDMA_PKEY_TBL_LEN;
	p->active_width = h.active_width;
	p->active_speed = h.active_speed;
	p->phys_state = h.phys_state;
	return 0;
}

static int do_create_cq(struct vrdma *d, const union rdma_cmd_args *a,
			union rdma_cmd_rsp *r)
{
	uint32_t cqe = a->create_cq.cqe, cqn, h, got;
	int ret;

	if (cqe > d->config.max_cqe) {
		log_peer_warnx("CREATE_CQ: %u entries, at most %u", cqe,
			       d->config.max_cqe);
		return -EINVAL;
	}
	for (cqn = 0; cqn < d->max_cq && d->cq[cqn].used; cqn++)
		;
	if (cqn == d->max_cq) {
		log_peer_warnx("CREATE_CQ: all %u CQs in use", d->max_cq);
		return -ENOSPC;
	}
	ret = be_cq_create(d->be, cqn + 1, cqe, (void *)(uintptr_t)cqn, &h,
			   &got);
	if (ret < 0)
		return ret;
	d->cq[cqn] = (struct vr_cq){ .used = true };
	r->create_cq.cqn = cqn;
	return 0;
}

static int do_destroy_cq(struct vrdma *d, const union rdma_cmd_args *a,
			 union rdma_cmd_rsp *r)
{
	uint32_t cqn = a->destroy_cq.cqn;
	int ret = lookup_cq(d, cqn);

	if (ret == 0)
		ret = be_cq_destroy(d->be, cqn + 1);
	if (ret < 0)
		return ret;
	memset(&d->cq[cqn], 0, sizeof(d->cq[cqn]));
	return 0;
}

static int do_create_pd(struct vrdma *d, const union rdma_cmd_args *a,
			union rdma_cmd_rsp *r)
{
	uint32_t pdn;
	int ret = be_pd_create(d->be, BE_ANY, &pdn);

	if (ret < 0)
		return ret;
	r->create_pd.pdn = pdn;
	return 0;
}

static int do_destroy_pd(struct vrdma *d, const union rdma_cmd_args *a,
			 union rdma_cmd_rsp *r)
{
	return be_pd_destroy(d->be, a->destroy_pd.pdn);
}

static int do_get_dma_mr(struct vrdma *d, const union rdma_cmd_args *a,
			 union rdma_cmd_rsp *r)
{
	struct be_mr_info mi;
	int ret = be_mr_reg_dma(d->be, a->get_dma_mr.pdn,
				access_to_ibv(a->get_dma_mr.access_flags), &mi);

	if (ret < 0)
		return ret;
	r->mr.mrn = mi.handle;
	r->mr.lkey = mi.lkey;
	r->mr.rkey = 0;
	return 0;
}

/* ---- guest RAM access for the page-table walk ---- */

static int pt_read(void *ctx, uint64_t gpa, void *buf, size_t len)
{
	const struct guest_mem *gm = ctx;
	const void *p = gm_gpa_to_host(gm, gpa, len);

	if (!p)
		return -EFAULT;
	memcpy(buf, p, len);
	return 0;
}

static int pt_check(void *ctx, uint64_t gpa, uint64_t len)
{
	const struct guest_mem *gm = ctx;
	const struct gm_region *g;
	uint64_t off;

	while (len > 0) {
		g = gm_find_gpa(gm, gpa, &off);
		if (!g)
			return -EFAULT;
		if (len <= g->size - off)
			return 0;
		len -= g->size - off;
		gpa += g->size - off; /* region end: no overflow (checked) */
	}
	return 0;
}

static const struct rdma_mr_pt_ops pt_ops = {
	.read_gpa = pt_read,
	.check_gpa = pt_check,
};

static int do_reg_user_mr(struct vrdma *d, const union rdma_cmd_args *a,
			  union rdma_cmd_rsp *r)
{
	const struct virtio_rdma_cmd_reg_user_mr *req = &a->reg_user_mr;
	struct rdma_mr_pt_args pa = {
		.root = req->pages,
		.npages = req->npages,
		.start = req->start,
		.length = req->length,
		.virt_addr = req->virt_addr,
	};
	struct rdma_mr_layout lay;
	struct reason why;
	struct be_mr_info mi;
	int ret;

	if (!be_pd_exists(d->be, req->pdn)) {
		log_peer_warnx("REG_USER_MR: unknown PD %u", req->pdn);
		return -EINVAL;
	}
	if (!d->mem)
		return -EFAULT;
	ret = rdma_mr_pt_walk(&pa, &pt_ops, (void *)d->mem, &lay, &why);
	if (ret < 0) {
		log_peer_warnx("%s", why.msg);
		return ret;
	}
	ret = be_mr_reg(d->be, req->pdn, &lay, access_to_ibv(req->access_flags),
			&mi);
	rdma_mr_layout_release(&lay);
	if (ret < 0)
		return ret;
	r->mr.mrn = mi.handle;
	r->mr.lkey = mi.lkey;
	r->mr.rkey = mi.rkey;
	return 0;
}

static int do_dereg_mr(struct vrdma *d, const union rdma_cmd_args *a,
		       union rdma_cmd_rsp *r)
{
	return be_mr_dereg(d->be, a->dereg_mr.mrn);
}

static int check_qp_inline(const struct virtio_rdma_cmd_create_qp *q)
{
	/* inline data rides in the SQ element after its header */
	if (q->max_inline_data > 4096 - sizeof(struct virtio_rdma_sq_wqe)) {
		log_peer_warnx(
			"CREATE_QP: %u bytes of inline data, at most %zu",
			q->max_inline_data,
			4096 - sizeof(struct virtio_rdma_sq_wqe));
		return -EINVAL;
	}
	return 0;
}

static void slot_as_qp(struct vr_slot *q,
		       const struct virtio_rdma_cmd_create_qp *c,
		       const struct be_qp_info *qi, uint32_t srq_handle)
{
	q->kind = VR_SLOT_QP;
	q->qpn = qi->qp_num;
	q->qp_type = c->qp_type;
	q->scqn = c->send_cqn;
	q->rcqn = c->recv_cqn;
	q->srq_handle = srq_handle;
	q->sq_sig_all = c->sq_sig_type == VIRTIO_RDMA_SIG_ALL_WR;
	q->cap.max_send_wr = qi->cap.max_send_wr;
	q->cap.max_recv_wr = qi->cap.max_recv_wr;
	q->cap.max_send_sge = qi->cap.max_send_sge;
	q->cap.max_recv_sge = qi->cap.max_recv_sge;
	q->cap.max_inline_data = qi->cap.max_inline_data;
	q->sq_lim.qp_type = c->qp_type;
	q->sq_lim.max_send_sge = qi->cap.max_send_sge;
	q->sq_lim.max_inline = qi->cap.max_inline_data;
	q->max_recv_sge = qi->cap.max_recv_sge;
}

static int do_create_qp(struct vrdma *d, const union rdma_cmd_args *a,
			union rdma_cmd_rsp *r)
{
	const struct virtio_rdma_cmd_create_qp *c = &a->create_qp.base;
	bool has_srq = a->create_qp.flags & VIRTIO_RDMA_CREATE_QP_F_SRQ;
	struct be_qp_init in = { 0 };
	struct be_qp_info qi;
	uint32_t s, srq_slot;
	int ret;

	ret = lookup_cq(d, c->send_cqn);
	if (ret == 0)
		ret = lookup_cq(d, c->recv_cqn);
	if (ret == 0 && has_srq)
		ret = lookup_srq(d, a->create_qp.srq_handle, &srq_slot);
	if (ret == 0)
		ret = check_qp_inline(c);
	if (ret == 0)
		ret = alloc_slot(d, &s);
	if (ret < 0)
		return ret;
	in.type = (enum be_qp_type)c->qp_type; /* equal values */
	in.pd = c->pdn;
	in.send_cq = c->send_cqn + 1;
	in.recv_cq = c->recv_cqn + 1;
	in.srq = has_srq ? a->create_qp.srq_handle : 0;
	in.sq_sig_all = c->sq_sig_type == VIRTIO_RDMA_SIG_ALL_WR;
	in.cap.max_send_wr = c->max_send_wr;
	in.cap.max_recv_wr = c->max_recv_wr;
	in.cap.max_send_sge = c->max_send_sge;
	in.cap.max_recv_sge = c->max_recv_sge;
	in.cap.max_inline_data = c->max_inline_data;
	in.ctx = (void *)(uintptr_t)s;
	ret = be_qp_create(d->be, s + 1, &in, &qi);
	if (ret < 0)
		return ret;
	slot_as_qp(&d->slot[s], c, &qi, in.srq);
	r->create_qp.qpn = qi.qp_num;
	r->create_qp.slot = s;
	log_debug("CREATE_QP: type %u, QPN %u, slot %u", c->qp_type, qi.qp_num,
		  s);
	return 0;
}

static void ah_to_be(const struct virtio_rdma_ah_attr *g, struct be_ah_attr *h)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->dgid, g->grh.dgid, 16);
	h->flow_label = g->grh.flow_label;
	h->sgid_index = g->grh.sgid_index;
	h->hop_limit = g->grh.hop_limit;
	h->traffic_class = g->grh.traffic_class;
	h->sl = g->sl;
	h->static_rate = g->static_rate;
	h->global = g->ah_flags & VIRTIO_RDMA_AH_GRH;
}

static void attr_to_be(const struct virtio_rdma_qp_attr *g,
		       struct be_qp_attr *h)
{
	memset(h, 0, sizeof(*h));
	/* virtio-rdma's states, MTUs and migration states are ibverbs' */
	h->qp_state = (enum ibv_qp_state)g->qp_state;
	h->cur_qp_state = (enum ibv_qp_state)g->cur_qp_state;
	h->path_mtu = (enum ibv_mtu)g->path_mtu;
	h->path_mig_state = (enum ibv_mig_state)g->path_mig_state;
	h->qkey = g->qkey;
	h->rq_psn = g->rq_psn;
	h->sq_psn = g->sq_psn;
	h->dest_qp_num = g->dest_qp_num;
	h->qp_access_flags = access_to_ibv(g->qp_access_flags);
	h->en_sqd_async_notify = g->en_sqd_async_notify;
	h->max_rd_atomic = g->max_rd_atomic;
	h->max_dest_rd_atomic = g->max_dest_rd_atomic;
	h->min_rnr_timer = g->min_rnr_timer;
	h->timeout = g->timeout;
	h->retry_cnt = g->retry_cnt;
	h->rnr_retry = g->rnr_retry;
	h->rate_limit = g->rate_limit;
	h->cap.max_send_wr = g->cap.max_send_wr;
	h->cap.max_recv_wr = g->cap.max_recv_wr;
	h->cap.max_send_sge = g->cap.max_send_sge;
	h->cap.max_recv_sge = g->cap.max_recv_sge;
	h->cap.max_inline_data = g->cap.max_inline_data;
	ah_to_be(&g->ah_attr, &h->ah_attr);
}

static int do_modify_qp(struct vrdma *d, const union rdma_cmd_args *a,
			union rdma_cmd_rsp *r)
{
	const struct virtio_rdma_cmd_modify_qp *m = &a->modify_qp;
	struct be_qp_attr h;
	uint32_t s;
	int ret;

	ret = lookup_qp(d, m->qpn, &s);
	if (ret < 0)
		return ret;
	attr_to_be(&m->attr, &h);
	/* virtio-rdma's attribute mask bits are ibverbs' IBV_QP_* */
	ret = be_qp_modify(d->be, s + 1, &h, (int)m->attr_mask);
	if (ret < 0)
		return ret;
	/*
	 * Receives made available before the QP could take them wait no
	 * longer -- but not from here: this command's chain is d->elem, and
	 * popping the receive ring now would overwrite it.  The next round
	 * of the loop takes them (vr_run_pending()).
	 */
	d->slot[s].rq_pending = true;
	d->pending = true;
	return 0;
}

static void ah_from_be(const struct be_ah_attr *h,
		       struct virtio_rdma_ah_attr *g)
{
	memcpy(g->grh.dgid, h->dgid, 16);
	g->grh.flow_label = h->flow_label;
	g->grh.sgid_index = h->sgid_index;
	g->grh.hop_limit = h->hop_limit;
	g->grh.traffic_class = h->traffic_class;
	g->sl = h->sl;
	g->static_rate = h->static_rate;
	g->port_num = VIRTIO_RDMA_PORT;
	g->ah_flags = h->global ? VIRTIO_RDMA_AH_GRH : 0;
}

static int do_query_qp(struct vrdma *d, const union rdma_cmd_args *a,
		       union rdma_cmd_rsp *r)
{
	struct virtio_rdma_qp_attr *g = &r->query_qp;
	struct be_qp_attr h;
	uint32_t s;
	int ret;

	ret = lookup_qp(d, a->query_qp.qpn, &s);
	if (ret == 0)
		ret = be_qp_query(d->be, s + 1, (int)a->query_qp.attr_mask, &h);
	if (ret < 0)
		return ret;
	memset(g, 0, sizeof(*g));
	g->port_num = VIRTIO_RDMA_PORT;
	g->cap = d->slot[s].cap;
	g->qp_state = h.qp_state;
	g->cur_qp_state = h.cur_qp_state;
	g->qkey = h.qkey;
	if (d->slot[s].qp_type == VIRTIO_RDMA_QPT_GSI)
		return 0;
	g->path_mtu = h.path_mtu;
	g->path_mig_state = h.path_mig_state;
	g->rq_psn = h.rq_psn;
	g->sq_psn = h.sq_psn;
	g->dest_qp_num = h.dest_qp_num;
	g->qp_access_flags = access_from_ibv(h.qp_access_flags);
	g->en_sqd_async_notify = h.en_sqd_async_notify;
	g->sq_draining = h.sq_draining;
	g->max_rd_atomic = h.max_rd_atomic;
	g->max_dest_rd_atomic = h.max_dest_rd_atomic;
	g->min_rnr_timer = h.min_rnr_timer;
	g->timeout = h.timeout;
	g->retry_cnt = h.retry_cnt;
	g->rnr_retry = h.rnr_retry;
	g->rate_limit = h.rate_limit;
	ah_from_be(&h.ah_attr, &g->ah_attr);
	return 0;
}

static int do_destroy_qp(struct vrdma *d, const union rdma_cmd_args *a,
			 union rdma_cmd_rsp *r)
{
	uint32_t s;
	int ret;

	ret = lookup_qp(d, a->destroy_qp.qpn, &s);
	if (ret == 0)
		ret = be_qp_destroy(d->be, s + 1);
	if (ret < 0)
		return ret;
	free_slot(d, s);
	return 0;
}

static int do_query_pkey(struct vrdma *d, const union rdma_cmd_args *a,
			 union rdma_cmd_rsp *r)
{
	uint16_t pkey;
	int ret = be_query_pkey(d->be, a->query_pkey.index, &pkey);

	if (ret < 0)
		return ret;
	r->query_pkey.pkey = pkey;
	return 0;
}

static int do_add_gid(struct vrdma *d, const union rdma_cmd_args *a,
		      union rdma_cmd_rsp *r)
{
	const struct virtio_rdma_cmd_add_gid *g = &a->add_gid;
	/* virtio-rdma's GID types are ibverbs' enum ibv_gid_type */
	int ret = be_gid_add(d->be, g->index, g->gid, g->gid_type, NULL);

	/*
	 * The control queue answers each command in order before the next:
	 * a claim the broker answers later cannot be answered here.  The
	 * backend claims synchronously today; refuse rather than hang.
	 */
	if (ret == BE_PENDING) {
		be_gid_del(d->be, g->index);
		return -EAGAIN;
	}
	return ret;
}

static int do_del_gid(struct vrdma *d, const union rdma_cmd_args *a,
		      union rdma_cmd_rsp *r)
{
	return be_gid_del(d->be, a->del_gid.index);
}

static int do_req_notify_cq(struct vrdma *d, const union rdma_cmd_args *a,
			    union rdma_cmd_rsp *r)
{
	int ret = lookup_cq(d, a->req_notify_cq.cqn);

	if (ret < 0)
		return ret;
	/* SOLICITED acts as NEXT_COMP: ibv_wc has no solicited bit. */
	d->cq[a->req_notify_cq.cqn].armed = true;
	return 0;
}

static int do_create_srq(struct vrdma *d, const union rdma_cmd_args *a,
			 union rdma_cmd_rsp *r)
{
	const struct virtio_rdma_cmd_create_srq *c = &a->create_srq;
	struct be_srq_init in;
	struct ibv_srq_attr at;
	uint32_t s, h;
	int ret = alloc_slot(d, &s);

	if (ret < 0)
		return ret;
	in.pd = c->pdn;
	in.max_wr = c->max_wr;
	in.max_sge = c->max_sge;
	in.srq_limit = c->srq_limit;
	in.ctx = (void *)(uintptr_t)s;
	ret = be_srq_create(d->be, s + 1, &in, &h, &at);
	if (ret < 0)
		return ret;
	d->slot[s].kind = VR_SLOT_SRQ;
	d->slot[s].srq_max_sge = c->max_sge;
	r->create_srq.srq_handle = h;
	r->create_srq.slot = s;
	return 0;
}

static int do_modify_srq(struct vrdma *d, const union rdma_cmd_args *a,
			 union rdma_cmd_rsp *r)
{
	const struct virtio_rdma_cmd_modify_srq *m = &a->modify_srq;
	struct ibv_srq_attr at = { .max_wr = m->max_wr,
				   .srq_limit = m->srq_limit };
	uint32_t s;
	int ret = lookup_srq(d, m->srq_handle, &s);

	if (ret < 0)
		return ret;
	/* VIRTIO_RDMA_SRQ_MAX_WR / _LIMIT are IBV_SRQ_MAX_WR / _LIMIT */
	return be_srq_modify(d->be, m->srq_handle, &at, (int)m->attr_mask);
}

static int do_query_srq(struct vrdma *d, const union rdma_cmd_args *a,
			union rdma_cmd_rsp *r)
{
	struct ibv_srq_attr at;
	uint32_t s;
	int ret = lookup_srq(d, a->query_srq.srq_handle, &s);

	if (ret == 0)
		ret = be_srq_query(d->be, a->query_srq.srq_handle, &at);
	if (ret < 0)
		return ret;
	r->query_srq.max_wr = at.max_wr;
	r->query_srq.max_sge = at.max_sge;
	r->query_srq.srq_limit = at.srq_limit;
	return 0;
}

static int do_destroy_srq(struct vrdma *d, const union rdma_cmd_args *a,
			  union rdma_cmd_rsp *r)
{
	uint32_t s;
	int ret = lookup_srq(d, a->destroy_srq.srq_handle, &s);

	if (ret == 0)
		ret = be_srq_destroy(d->be, a->destroy_srq.srq_handle);
	if (ret < 0)
		return ret;
	free_slot(d, s);
	return 0;
}

static const cmd_fn handlers[VIRTIO_RDMA_CMD_MAX] = {
	[VIRTIO_RDMA_CMD_QUERY_PORT] = do_query_port,
	[VIRTIO_RDMA_CMD_CREATE_CQ] = do_create_cq,
	[VIRTIO_RDMA_CMD_DESTROY_CQ] = do_destroy_cq,
	[VIRTIO_RDMA_CMD_CREATE_PD] = do_create_pd,
	[VIRTIO_RDMA_CMD_DESTROY_PD] = do_destroy_pd,
	[VIRTIO_RDMA_CMD_GET_DMA_MR] = do_get_dma_mr,
	[VIRTIO_RDMA_CMD_REG_USER_MR] = do_reg_user_mr,
	[VIRTIO_RDMA_CMD_DEREG_MR] = do_dereg_mr,
	[VIRTIO_RDMA_CMD_CREATE_QP] = do_create_qp,
	[VIRTIO_RDMA_CMD_MODIFY_QP] = do_modify_qp,
	[VIRTIO_RDMA_CMD_QUERY_QP] = do_query_qp,
	[VIRTIO_RDMA_CMD_DESTROY_QP] = do_destroy_qp,
	[VIRTIO_RDMA_CMD_QUERY_PKEY] = do_query_pkey,
	[VIRTIO_RDMA_CMD_ADD_GID] = do_add_gid,
	[VIRTIO_RDMA_CMD_DEL_GID] = do_del_gid,
	[VIRTIO_RDMA_CMD_REQ_NOTIFY_CQ] = do_req_notify_cq,
	[VIRTIO_RDMA_CMD_CREATE_SRQ] = do_create_srq,
	[VIRTIO_RDMA_CMD_MODIFY_SRQ] = do_modify_srq,
	[VIRTIO_RDMA_CMD_QUERY_SRQ] = do_query_srq,
	[VIRTIO_RDMA_CMD_DESTROY_SRQ] = do_destroy_srq,
};

/* ---- control queue ---- */

static void cmd_refused(struct vrdma *d, uint32_t code, int err,
			const char *why)
{
	d->st->command_errors++;
	log_peer_warnx("%s refused (status %u): %s", rdma_cmd_name(code),
		       rdma_cmd_status(err), why);
}

/* What the ctrl_cmd probe reports of one command. */
struct ctrl_trace {
	uint32_t code;
	uint8_t status;
};

/* Handles the chain in d->elem; returns the used length. */
static uint32_t ctrl_one(struct vrdma *d, struct ctrl_trace *t)
{
	struct vq_elem *el = &d->elem;
	uint8_t req[CTRL_REQ_MAX];
	uint8_t rsp[1 + sizeof(union rdma_cmd_rsp)];
	union rdma_cmd_rsp r;
	struct reason why;
	struct rdma_cmd cmd;
	size_t out_len = MIN(el->out_len, (uint64_t)sizeof(req));
	size_t first = el->out_num ? vq_elem_out(el)[0].iov_len : 0;
	size_t in_len = el->in_len > sizeof(rsp) ? sizeof(rsp) : el->in_len;
	int ret;

	d->st->commands++;
	iov_to_buf(vq_elem_out(el), el->out_num, req, out_len);
	ret = rdma_cmd_decode(req, out_len, first, el->in_len, &cmd, &why);
	if (ret == -ENOBUFS) {
		t->code = out_len ? req[0] : 0;
		t->status = rdma_cmd_status(ret);
		cmd_refused(d, out_len ? req[0] : 0, ret, why.msg);
		return 0;
	}
	if (ret == 0 && !handlers[cmd.code]) {
		ret = -EOPNOTSUPP;
		reason_set(&why, "not implemented");
	}
	if (ret == 0) {
		memset(&r, 0, sizeof(r));
		ret = handlers[cmd.code](d, &cmd.u, &r);
		if (ret < 0)
			reason_set(&why, "%s", strerror(-ret));
	}
	t->code = ret == -EBADMSG || !out_len ? 0 : req[0];
	if (ret < 0) {
		t->status = rdma_cmd_status(ret);
		cmd_refused(d, ret == -EBADMSG || !out_len ? 0 : req[0], ret,
			    why.msg);
		ret = rdma_cmd_encode_error(ret, rsp, in_len);
	} else {
		ret = rdma_cmd_encode_ok(&cmd, &r, rsp, in_len);
	}
	if (ret < 0)
		return 0;
	return (uint32_t)buf_to_iov(vq_elem_in(el), el->in_num, rsp,
				    (size_t)ret);
}

/* Answers up to VR_KICK_BUDGET commands; the rest waits a round. */
static void ctrl_kicked(struct vrdma *d, struct vq *vq)
{
	unsigned int n = 0;

	d->ctrl_pending = false;
	vq_disable_notify(vq); /* no kicks while we drain */
	for (;;) {
		while (n < VR_KICK_BUDGET && vq_pop(vq, &d->elem) == 1) {
			struct ctrl_trace t = { 0 };
			uint64_t t0 =
				RDMAGATE_CTRL_CMD_ENABLED() ? mono_ns() : 0;

			vq_push(vq, &d->elem, ctrl_one(d, &t));
			if (RDMAGATE_CTRL_CMD_ENABLED())
				RDMAGATE_CTRL_CMD(rdmagate_probe_vm, t.code,
						  t.status,
						  t0 ? mono_ns() - t0 : 0);
			n++;
		}
		if (n == VR_KICK_BUDGET) {
			d->ctrl_pending = true;
			d->pending = true;
			break;
		}
		if (!vr_rearm(d, vq))
			break;
		vq_disable_notify(vq);
	}
	if (n)
		vq_notify(vq);
}

/* ---- device ops ---- */

static void log_stats(const struct vrdma *d)
{
	const struct wp_counters *c = d->st;

	/* the worker's counters since it started (all its connections) */
	log_info("device stats: %llu commands (%llu refused), %llu sends, "
		 "%llu receives, %llu CQEs, %llu work requests refused, "
		 "%llu CQ overflows, %llu MADs sent, %llu received, "
		 "%llu dropped",
		 (unsigned long long)c->commands,
		 (unsigned long long)c->command_errors,
		 (unsigned long long)c->sends, (unsigned long long)c->recvs,
		 (unsigned long long)c->completions,
		 (unsigned long long)(c->send_errors + c->recv_errors),
		 (unsigned long long)c->cq_overflows,
		 (unsigned long long)c->mads_sent,
		 (unsigned long long)c->mads_received,
		 (unsigned long long)c->mad_errors);
}

static void rdma_destroy(void *priv)
{
	struct vrdma *d = priv;

	if (!d)
		return;
	if (d->be)
		log_stats(d);
	/* the rings are gone by now: nothing is returned to them */
	memset(d->vqs, 0, sizeof(d->vqs));
	be_destroy(d->be);
	free(d->slot);
	free(d);
}

static int rdma_create(const struct dev_env *env, void **ret_priv)
{
	const struct vrdma_cfg *cfg = env->cfg;
	struct be_cfg bc;
	struct vrdma *d;
	int ret;

	if (!cfg || !cfg->be.hca || !env->watch_fd)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->cfg = cfg;
	vr_be_cfg(d, &bc);
	d->slot = calloc(d->num_slots ? d->num_slots : 1, sizeof(*d->slot));
	ret = d->slot ? be_create(&bc, env, &vr_be_ops, d, &d->be) : -ENOMEM;
	if (ret < 0) {
		log_warnx("cannot make the device: %s", strerror(-ret));
		rdma_destroy(d);
		return ret;
	}
	d->st = be_counters(d->be);
	fill_config(d);
	*ret_priv = d;
	return 0;
}

static void rdma_get_config(void *priv, uint8_t *buf)
{
	struct vrdma *d = priv;

	memcpy(buf, &d->config, sizeof(d->config));
}

static void rdma_started(void *priv, struct vq *vq)
{
	struct vrdma *d = priv;

	if (vq->index >= VIRTIO_RDMA_NUM_QUEUES)
		return;
	d->vqs[vq->index] = vq;
	d->mem = vq->mem;
	be_set_mem(d->be, d->mem);
}

static void rdma_kicked(void *priv, struct vq *vq)
{
	struct vrdma *d = priv;
	uint32_t n;

	switch (virtio_rdma_vq_classify(vq->index, d->max_cq, d->num_slots,
					&n)) {
	case VIRTIO_RDMA_VQ_CTRL:
		ctrl_kicked(d, vq);
		break;
	case VIRTIO_RDMA_VQ_SQ:
		vr_sq_kicked(d, n, vq);
		break;
	case VIRTIO_RDMA_VQ_RQ:
		vr_rq_kicked(d, n, vq);
		break;
	case VIRTIO_RDMA_VQ_CQ: /* new buffers: used on the next CQE */
	case VIRTIO_RDMA_VQ_INVALID:
		break;
	}
	vr_notify_flush(d);
}

static void rdma_stopped(void *priv, struct vq *vq)
{
	struct vrdma *d = priv;

	if (vq->index < VIRTIO_RDMA_NUM_QUEUES)
		d->vqs[vq->index] = NULL;
}

static void rdma_reset(void *priv)
{
	struct vrdma *d = priv;
	uint32_t s;

	log_info("device reset: every object of the guest is destroyed");
	be_reset(d->be);
	for (s = 0; s < d->num_slots; s++)
		free_slot(d, s);
	memset(d->cq, 0, sizeof(d->cq));
	d->pending = false;
	d->ctrl_pending = false;
	d->rings_polled = false;
	d->spun = false;
}

static bool rdma_wants_poll(void *priv)
{
	struct vrdma *d = priv;

	return d->cfg->busy_poll || d->pending || d->rings_polled;
}

static void rdma_poll(void *priv)
{
	struct vrdma *d = priv;
	struct vq *ctrl = d->vqs[VIRTIO_RDMA_CTRL_VQ];

	vr_poll_rings(d);
	if (d->pending) {
		d->pending = false;
		if (d->ctrl_pending && ctrl)
			ctrl_kicked(d, ctrl);
		vr_run_pending(d);
	}
	if (d->cfg->busy_poll)
		be_poll(d->be);
	vr_notify_flush(d);
}

/* Guest memory left the VMM's table: its MRs are revoked (be_mem_revoke). */
static void rdma_mem_gone(void *priv, uint64_t gpa, uint64_t size)
{
	struct vrdma *d = priv;

	be_mem_revoke(d->be, gpa, size);
}

const struct device_ops rdma_device_ops = {
	.name = "virtio-rdma",
	.features = (1ull << VIRTIO_F_VERSION_1) |
		    (1ull << VIRTIO_F_RING_INDIRECT_DESC) |
		    (1ull << VIRTIO_F_RING_EVENT_IDX) |
		    (1ull << VHOST_USER_F_PROTOCOL_FEATURES),
	.num_queues = VIRTIO_RDMA_NUM_QUEUES,
	.max_ring_size = VIRTIO_RDMA_RING_SIZE,
	.config_size = sizeof(struct virtio_rdma_config),
	.create = rdma_create,
	.destroy = rdma_destroy,
	.get_config = rdma_get_config,
	.ring_started = rdma_started,
	.ring_kicked = rdma_kicked,
	.ring_stopped = rdma_stopped,
	.reset = rdma_reset,
	.mem_gone = rdma_mem_gone,
	.wants_poll = rdma_wants_poll,
	.poll = rdma_poll,
};
