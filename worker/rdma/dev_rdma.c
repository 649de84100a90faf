// SPDX-License-Identifier: MIT
/*
 * The virtio-rdma device on host verbs: device ops for the vhost-user
 * layer, the config space, and the control queue dispatched through a
 * table {command -> handler}. Objects are host verbs objects behind
 * bounded handle tables; see docs/worker.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/probes.h"
#include "worker/broker_link.h"
#include "worker/rdma/dev_rdma.h"
#include "worker/rdma/qp1.h"

/* Refused commands logged per connection before we go quiet. */
#define MAX_LOGGED_CMD 256
/* Control requests we copy (the longest is MODIFY_QP, 1 + 168 bytes). */
#define CTRL_REQ_MAX 512

#define MIN(a, b) ((a) < (b) ? (a) : (b))

void rdma_limits_default(struct rdma_limits *lim)
{
	lim->max_qp = 64;
	lim->max_cq = 64;
	lim->max_mr = 1024;
	lim->max_pd = 64;
	lim->max_srq = 16;
	lim->max_ah = 256;
	lim->max_cqe = VIRTIO_RDMA_RING_SIZE;
	lim->max_qp_wr = VIRTIO_RDMA_RING_SIZE;
	lim->max_srq_wr = VIRTIO_RDMA_RING_SIZE;
	lim->max_sge = VIRTIO_RDMA_MAX_SGE;
}

static uint32_t clamp_host(uint32_t want, int host)
{
	return host < 0 ? 0 : MIN(want, (uint32_t)host);
}

/* ---- config space ---- */

#define CAP_PASSED                                                             \
	(VIRTIO_RDMA_DEVICE_BAD_PKEY_CNTR | VIRTIO_RDMA_DEVICE_BAD_QKEY_CNTR | \
	 VIRTIO_RDMA_DEVICE_CHANGE_PHY_PORT |                                  \
	 VIRTIO_RDMA_DEVICE_UD_AV_PORT_ENFORCE |                               \
	 VIRTIO_RDMA_DEVICE_SYS_IMAGE_GUID |                                   \
	 VIRTIO_RDMA_DEVICE_RC_RNR_NAK_GEN | VIRTIO_RDMA_DEVICE_SRQ_RESIZE)

static void fill_config(struct rdma_dev *d)
{
	const struct ibv_device_attr *h = &d->hca->dev;
	const struct rdma_limits *l = &d->cfg->lim;
	struct virtio_rdma_config *c = &d->config;
	uint32_t slots;

	d->max_cq = MIN(clamp_host(l->max_cq, h->max_cq), 253u);
	slots = (VIRTIO_RDMA_NUM_QUEUES - 1 - d->max_cq) / 2;
	slots = MIN(slots, l->max_qp + l->max_srq);
	d->num_slots = MIN(slots, (uint32_t)RD_MAX_SLOTS);
	d->max_qp = MIN(clamp_host(l->max_qp, h->max_qp), d->num_slots);

	memset(c, 0, sizeof(*c));
	c->phys_port_cnt = 1;
	c->sys_image_guid = h->sys_image_guid;
	c->vendor_id = h->vendor_id;
	c->vendor_part_id = h->vendor_part_id;
	c->hw_ver = h->hw_ver;
	c->max_mr_size =
		MIN(h->max_mr_size,
		    (uint64_t)VIRTIO_RDMA_MR_MAX_PAGES * VIRTIO_RDMA_PAGE_SIZE);
	c->page_size_cap = VIRTIO_RDMA_PAGE_SIZE;
	c->max_qp = d->max_qp;
	c->max_qp_wr =
		MIN(clamp_host(l->max_qp_wr, h->max_qp_wr), (uint32_t)RD_RING);
	c->device_cap_flags = h->device_cap_flags & CAP_PASSED;
	c->max_send_sge =
		clamp_host(MIN(l->max_sge, (uint32_t)VIRTIO_RDMA_MAX_SGE),
			   h->max_sge);
	c->max_recv_sge = c->max_send_sge;
	c->max_sge_rd = clamp_host(VIRTIO_RDMA_MAX_SGE, h->max_sge_rd);
	c->max_cq = d->max_cq;
	c->max_cqe = MIN(clamp_host(l->max_cqe, h->max_cqe), (uint32_t)RD_RING);
	c->max_mr = clamp_host(l->max_mr, h->max_mr);
	c->max_pd = clamp_host(l->max_pd, h->max_pd);
	c->max_qp_rd_atom = clamp_host(255, h->max_qp_rd_atom);
	c->max_res_rd_atom = clamp_host(UINT32_MAX, h->max_res_rd_atom);
	c->max_qp_init_rd_atom = clamp_host(255, h->max_qp_init_rd_atom);
	c->atomic_cap = h->atomic_cap;
	c->max_ah = clamp_host(l->max_ah, h->max_ah);
	c->max_pkeys = VIRTIO_RDMA_PKEY_TBL_LEN;
	c->local_ca_ack_delay = h->local_ca_ack_delay;
	c->rg_magic = RDMAGATE_VIRTIO_RDMA_MAGIC;
	c->rg_abi_version = RDMAGATE_VIRTIO_RDMA_ABI_VERSION;
	c->rg_max_srq = MIN(clamp_host(l->max_srq, h->max_srq), d->num_slots);
	c->rg_max_srq_wr =
		MIN(clamp_host(l->max_srq_wr, h->max_srq_wr), (uint32_t)RD_RING);
	c->rg_max_srq_sge =
		clamp_host(MIN(l->max_sge, (uint32_t)VIRTIO_RDMA_MAX_SGE),
			   h->max_srq_sge);
	c->rg_num_slots = d->num_slots;
	d->gid_tbl_len = clamp_host(VIRTIO_RDMA_GID_TBL_LEN,
				    d->hca->port_attr.gid_tbl_len);
}

/* ---- handle lookups ---- */

int rd_lookup_pd(struct rdma_dev *d, uint32_t pdn, struct rd_pd **ret)
{
	if (pdn == 0 || pdn > d->cfg->lim.max_pd || !d->pd[pdn].used) {
		log_warnx("unknown PD %u", pdn);
		return -ENOENT;
	}
	*ret = &d->pd[pdn];
	return 0;
}

static int lookup_cq(struct rdma_dev *d, uint32_t cqn, struct rd_cq **ret)
{
	if (cqn >= d->max_cq || !d->cq[cqn].used) {
		log_warnx("unknown CQ %u", cqn);
		return -ENOENT;
	}
	*ret = &d->cq[cqn];
	return 0;
}

/* QP by host QPN (1: the virtual GSI QP). */
static int lookup_qp(struct rdma_dev *d, uint32_t qpn, uint32_t *ret_slot)
{
	uint32_t s;

	for (s = 0; s < d->num_slots; s++)
		if (d->slot[s].kind == RD_SLOT_QP && d->slot[s].qpn == qpn) {
			*ret_slot = s;
			return 0;
		}
	log_warnx("unknown QP %u", qpn);
	return -ENOENT;
}

static int lookup_srq(struct rdma_dev *d, uint32_t h, uint32_t *ret_slot)
{
	if (h == 0 || h > d->num_slots || d->slot[h - 1].kind != RD_SLOT_SRQ) {
		log_warnx("unknown SRQ %u", h);
		return -ENOENT;
	}
	*ret_slot = h - 1;
	return 0;
}

static int alloc_slot(struct rdma_dev *d, uint32_t *ret_slot)
{
	uint32_t s;

	for (s = 0; s < d->num_slots; s++)
		if (d->slot[s].kind == RD_SLOT_FREE) {
			*ret_slot = s;
			return 0;
		}
	log_warnx("all %u queue slots in use", d->num_slots);
	return -ENOSPC;
}

/* Frees slot s, keeping its generation (stale completions are ignored). */
static void free_slot(struct rdma_dev *d, uint32_t s)
{
	uint16_t gen = d->slot[s].gen;

	rd_slot_flush(d, s);
	memset(&d->slot[s], 0, sizeof(d->slot[s]));
	d->slot[s].gen = (uint16_t)(gen + 1);
}

/* ---- command handlers ---- */

typedef int (*cmd_fn)(struct rdma_dev *d, const union rdma_cmd_args *a,
		      union rdma_cmd_rsp *r);

static int do_query_port(struct rdma_dev *d, const union rdma_cmd_args *a,
			 union rdma_cmd_rsp *r)
{
	struct virtio_rdma_port_attr *p = &r->query_port;
	struct ibv_port_attr h = d->hca->port_attr;

	/* Live state (an ioctl, no sysfs); the cached attributes otherwise. */
	if (ibv_query_port(d->hca->ctx, d->hca->port, &h))
		h = d->hca->port_attr;
	p->state = h.state;
	p->max_mtu = h.max_mtu;
	p->active_mtu = h.active_mtu;
	p->phys_mtu = h.max_mtu;
	p->gid_tbl_len = (int32_t)d->gid_tbl_len;
	p->port_cap_flags =
		h.port_cap_flags & (IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS);
	p->max_msg_sz = h.max_msg_sz;
	p->bad_pkey_cntr = h.bad_pkey_cntr;
	p->qkey_viol_cntr = h.qkey_viol_cntr;
	p->pkey_tbl_len = VIRTIO_RDMA_PKEY_TBL_LEN;
	p->active_width = h.active_width;
	p->active_speed = h.active_speed;
	p->phys_state = h.phys_state;
	return 0;
}

static int do_create_cq(struct rdma_dev *d, const union rdma_cmd_args *a,
			union rdma_cmd_rsp *r)
{
	uint32_t cqe = a->create_cq.cqe, cqn;
	struct rd_cq *cq;

	if (cqe > d->config.max_cqe) {
		log_warnx("CREATE_CQ: %u entries, at most %u", cqe,
			  d->config.max_cqe);
		return -EINVAL;
	}
	for (cqn = 0; cqn < d->max_cq && d->cq[cqn].used; cqn++)
		;
	if (cqn == d->max_cq) {
		log_warnx("CREATE_CQ: all %u CQs in use", d->max_cq);
		return -ENOSPC;
	}
	cq = &d->cq[cqn];
	cq->cq = ibv_create_cq(d->hca->ctx, (int)cqe, (void *)(uintptr_t)cqn,
			       d->chan, 0);
	if (!cq->cq) {
		log_warn("CREATE_CQ: ibv_create_cq(%u)", cqe);
		return -(errno ? errno : EIO);
	}
	if (ibv_req_notify_cq(cq->cq, 0)) {
		ibv_destroy_cq(cq->cq);
		cq->cq = NULL;
		return -EIO;
	}
	cq->used = true;
	cq->cqe = cqe;
	cq->refs = 0;
	cq->armed = false;
	cq->overflows = 0;
	r->create_cq.cqn = cqn;
	return 0;
}

static void cq_free(struct rdma_dev *d, uint32_t cqn)
{
	ibv_destroy_cq(d->cq[cqn].cq);
	memset(&d->cq[cqn], 0, sizeof(d->cq[cqn]));
}

static int do_destroy_cq(struct rdma_dev *d, const union rdma_cmd_args *a,
			 union rdma_cmd_rsp *r)
{
	struct rd_cq *cq;
	int ret = lookup_cq(d, a->destroy_cq.cqn, &cq);

	if (ret < 0)
		return ret;
	if (cq->refs) {
		log_warnx("DESTROY_CQ: CQ %u is used by %u QPs",
			  a->destroy_cq.cqn, cq->refs);
		return -EBUSY;
	}
	cq_free(d, a->destroy_cq.cqn);
	return 0;
}

static int do_create_pd(struct rdma_dev *d, const union rdma_cmd_args *a,
			union rdma_cmd_rsp *r)
{
	uint32_t pdn;

	for (pdn = 1; pdn <= d->config.max_pd && d->pd[pdn].used; pdn++)
		;
	if (pdn > d->config.max_pd) {
		log_warnx("CREATE_PD: all %u PDs in use", d->config.max_pd);
		return -ENOSPC;
	}
	d->pd[pdn].pd = ibv_alloc_pd(d->hca->ctx);
	if (!d->pd[pdn].pd) {
		log_warn("CREATE_PD: ibv_alloc_pd");
		return -(errno ? errno : EIO);
	}
	d->pd[pdn].used = true;
	d->pd[pdn].refs = 0;
	d->pd[pdn].dma_mrn = 0;
	r->create_pd.pdn = pdn;
	return 0;
}

static int do_destroy_pd(struct rdma_dev *d, const union rdma_cmd_args *a,
			 union rdma_cmd_rsp *r)
{
	uint32_t pdn = a->destroy_pd.pdn;
	struct rd_pd *pd;
	int ret = rd_lookup_pd(d, pdn, &pd);

	if (ret < 0)
		return ret;
	/* Cached AHs are ours, not the guest's: they do not keep it busy. */
	if (pd->refs > rd_ah_count(d, pdn)) {
		log_warnx("DESTROY_PD: PD %u still has %u objects", pdn,
			  pd->refs - rd_ah_count(d, pdn));
		return -EBUSY;
	}
	rd_ah_flush(d, pdn);
	ibv_dealloc_pd(pd->pd);
	memset(pd, 0, sizeof(*pd));
	return 0;
}

static int do_get_dma_mr(struct rdma_dev *d, const union rdma_cmd_args *a,
			 union rdma_cmd_rsp *r)
{
	uint32_t mrn;
	int ret = rd_get_dma_mr(d, a->get_dma_mr.pdn,
				a->get_dma_mr.access_flags, &mrn);

	if (ret < 0)
		return ret;
	r->mr.mrn = mrn;
	r->mr.lkey = d->mr[mrn].lkey;
	r->mr.rkey = 0;
	return 0;
}

static int do_reg_user_mr(struct rdma_dev *d, const union rdma_cmd_args *a,
			  union rdma_cmd_rsp *r)
{
	uint32_t mrn;
	int ret = rd_reg_user_mr(d, &a->reg_user_mr, &mrn);

	if (ret < 0)
		return ret;
	d->mr[mrn].iova = a->reg_user_mr.virt_addr; /* QP1 copies by it */
	r->mr.mrn = mrn;
	r->mr.lkey = d->mr[mrn].lkey;
	r->mr.rkey = d->mr[mrn].rkey;
	return 0;
}

static int do_dereg_mr(struct rdma_dev *d, const union rdma_cmd_args *a,
		       union rdma_cmd_rsp *r)
{
	uint32_t mrn = a->dereg_mr.mrn;

	if (mrn == 0 || mrn > d->cfg->lim.max_mr || !d->mr[mrn].used) {
		log_warnx("DEREG_MR: unknown MR %u", mrn);
		return -ENOENT;
	}
	rd_mr_free(d, mrn);
	return 0;
}

static int check_qp_caps(struct rdma_dev *d,
			 const struct virtio_rdma_cmd_create_qp *q)
{
	if (q->max_send_wr > d->config.max_qp_wr ||
	    q->max_recv_wr > d->config.max_qp_wr) {
		log_warnx("CREATE_QP: %u send / %u receive WRs, at most %u",
			  q->max_send_wr, q->max_recv_wr, d->config.max_qp_wr);
		return -EINVAL;
	}
	if (q->max_send_sge > d->config.max_send_sge ||
	    q->max_recv_sge > d->config.max_recv_sge) {
		log_warnx("CREATE_QP: %u send / %u receive SGEs, at most %u",
			  q->max_send_sge, q->max_recv_sge,
			  d->config.max_send_sge);
		return -EINVAL;
	}
	if (q->max_inline_data > 4096 - sizeof(struct virtio_rdma_sq_wqe)) {
		log_warnx("CREATE_QP: %u bytes of inline data, at most %zu",
			  q->max_inline_data,
			  4096 - sizeof(struct virtio_rdma_sq_wqe));
		return -EINVAL;
	}
	return 0;
}

static enum ibv_qp_type host_qp_type(uint8_t t)
{
	return t == VIRTIO_RDMA_QPT_RC	 ? IBV_QPT_RC
	       : t == VIRTIO_RDMA_QPT_UC ? IBV_QPT_UC
					 : IBV_QPT_UD;
}

/* Creates the host QP of slot s from the request. */
static int create_host_qp(struct rdma_dev *d, struct rd_slot *q,
			  const struct virtio_rdma_cmd_create_qp *c)
{
	struct ibv_qp_init_attr ia;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = d->cq[c->send_cqn].cq;
	ia.recv_cq = d->cq[c->recv_cqn].cq;
	ia.srq = q->srq_handle ? d->slot[q->srq_handle - 1].srq : NULL;
	ia.qp_type = host_qp_type(c->qp_type);
	ia.sq_sig_all = 0; /* every host WR is signalled by us */
	ia.cap.max_send_wr = c->max_send_wr ? c->max_send_wr : 1;
	ia.cap.max_recv_wr = ia.srq ? 0 : (c->max_recv_wr ? c->max_recv_wr : 1);
	ia.cap.max_send_sge = c->max_send_sge ? c->max_send_sge : 1;
	ia.cap.max_recv_sge =
		ia.srq ? 0 : (c->max_recv_sge ? c->max_recv_sge : 1);
	ia.cap.max_inline_data = c->max_inline_data;
	q->qp = ibv_create_qp(d->pd[c->pdn].pd, &ia);
	if (!q->qp) {
		log_warn("CREATE_QP: ibv_create_qp");
		return -(errno ? errno : EIO);
	}
	q->qpn = q->qp->qp_num;
	q->cap.max_send_wr = ia.cap.max_send_wr;
	q->cap.max_recv_wr = ia.cap.max_recv_wr;
	q->cap.max_send_sge = ia.cap.max_send_sge;
	q->cap.max_recv_sge = ia.cap.max_recv_sge;
	q->cap.max_inline_data = ia.cap.max_inline_data;
	return 0;
}

static bool have_gsi(const struct rdma_dev *d)
{
	uint32_t s;

	for (s = 0; s < d->num_slots; s++)
		if (d->slot[s].kind == RD_SLOT_QP &&
		    d->slot[s].qp_type == VIRTIO_RDMA_QPT_GSI)
			return true;
	return false;
}

static int do_create_qp(struct rdma_dev *d, const union rdma_cmd_args *a,
			union rdma_cmd_rsp *r)
{
	const struct virtio_rdma_cmd_create_qp *c = &a->create_qp.base;
	struct rd_cq *scq = NULL, *rcq = NULL;
	struct rd_slot *q;
	struct rd_pd *pd;
	uint32_t s, srq_slot = 0;
	int ret;

	ret = rd_lookup_pd(d, c->pdn, &pd);
	if (ret == 0)
		ret = lookup_cq(d, c->send_cqn, &scq);
	if (ret == 0)
		ret = lookup_cq(d, c->recv_cqn, &rcq);
	if (ret == 0 && (a->create_qp.flags & VIRTIO_RDMA_CREATE_QP_F_SRQ))
		ret = lookup_srq(d, a->create_qp.srq_handle, &srq_slot);
	if (ret == 0)
		ret = check_qp_caps(d, c);
	if (ret < 0)
		return ret;
	if (d->qp_count >= d->max_qp) {
		log_warnx("CREATE_QP: all %u QPs in use", d->max_qp);
		return -ENOSPC;
	}
	if (c->qp_type == VIRTIO_RDMA_QPT_GSI && have_gsi(d)) {
		log_warnx("CREATE_QP: the GSI QP exists already");
		return -EEXIST;
	}
	ret = alloc_slot(d, &s);
	if (ret < 0)
		return ret;
	q = &d->slot[s];
	q->srq_handle = (a->create_qp.flags & VIRTIO_RDMA_CREATE_QP_F_SRQ)
				? a->create_qp.srq_handle
				: 0;
	if (c->qp_type == VIRTIO_RDMA_QPT_GSI) {
		q->qpn = VIRTIO_RDMA_GSI_QPN;
		q->cap.max_send_wr = c->max_send_wr;
		q->cap.max_recv_wr = c->max_recv_wr;
		q->cap.max_send_sge = c->max_send_sge;
		q->cap.max_recv_sge = c->max_recv_sge;
	} else {
		ret = create_host_qp(d, q, c);
		if (ret < 0) {
			q->srq_handle = 0;
			return ret;
		}
	}
	q->kind = RD_SLOT_QP;
	q->pdn = c->pdn;
	q->qp_type = c->qp_type;
	q->sq_sig_all = c->sq_sig_type == VIRTIO_RDMA_SIG_ALL_WR;
	q->state = VIRTIO_RDMA_QPS_RESET;
	q->scqn = c->send_cqn;
	q->rcqn = c->recv_cqn;
	q->sq_lim.qp_type = c->qp_type;
	q->sq_lim.max_send_sge = q->cap.max_send_sge;
	q->sq_lim.max_inline = q->cap.max_inline_data;
	q->max_recv_sge = q->cap.max_recv_sge;
	pd->refs++;
	scq->refs++;
	rcq->refs++;
	if (q->srq_handle)
		d->slot[srq_slot].srq_refs++;
	d->qp_count++;
	r->create_qp.qpn = q->qpn;
	r->create_qp.slot = s;
	log_debug("CREATE_QP: type %u, host QPN %u, slot %u", c->qp_type,
		  q->qpn, s);
	return 0;
}

/* Host index of the guest's GID index, or -EINVAL (logged). */
static int host_sgid(struct rdma_dev *d, uint32_t guest_index)
{
	if (guest_index >= VIRTIO_RDMA_GID_TBL_LEN ||
	    d->guest_gid[guest_index] < 0) {
		log_warnx("MODIFY_QP: source GID index %u was never added",
			  guest_index);
		return -EINVAL;
	}
	return d->guest_gid[guest_index];
}

static int ah_to_host(struct rdma_dev *d, const struct virtio_rdma_ah_attr *g,
		      struct ibv_ah_attr *h)
{
	int sgid;

	memset(h, 0, sizeof(*h));
	if (!(g->ah_flags & VIRTIO_RDMA_AH_GRH)) {
		log_warnx("MODIFY_QP: address vector without GRH on a RoCE "
			  "port");
		return -EINVAL;
	}
	sgid = host_sgid(d, g->grh.sgid_index);
	if (sgid < 0)
		return sgid;
	h->is_global = 1;
	memcpy(h->grh.dgid.raw, g->grh.dgid, 16);
	h->grh.flow_label = g->grh.flow_label;
	h->grh.sgid_index = (uint8_t)sgid;
	h->grh.hop_limit = g->grh.hop_limit;
	h->grh.traffic_class = g->grh.traffic_class;
	h->sl = g->sl;
	h->static_rate = g->static_rate;
	h->port_num = d->hca->port;
	return 0;
}

static int attr_to_host(struct rdma_dev *d, uint32_t mask,
			const struct virtio_rdma_qp_attr *g,
			struct ibv_qp_attr *h)
{
	memset(h, 0, sizeof(*h));
	h->qp_state = (enum ibv_qp_state)g->qp_state;
	h->cur_qp_state = (enum ibv_qp_state)g->cur_qp_state;
	h->path_mtu = (enum ibv_mtu)g->path_mtu;
	h->path_mig_state = (enum ibv_mig_state)g->path_mig_state;
	h->qkey = g->qkey;
	h->rq_psn = g->rq_psn;
	h->sq_psn = g->sq_psn;
	h->dest_qp_num = g->dest_qp_num;
	h->qp_access_flags = (unsigned int)rd_access_to_ibv(g->qp_access_flags);
	h->pkey_index = 0;
	h->en_sqd_async_notify = g->en_sqd_async_notify;
	h->max_rd_atomic = g->max_rd_atomic;
	h->max_dest_rd_atomic = g->max_dest_rd_atomic;
	h->min_rnr_timer = g->min_rnr_timer;
	h->port_num = d->hca->port;
	h->timeout = g->timeout;
	h->retry_cnt = g->retry_cnt;
	h->rnr_retry = g->rnr_retry;
	h->rate_limit = g->rate_limit;
	h->cap.max_send_wr = g->cap.max_send_wr;
	h->cap.max_recv_wr = g->cap.max_recv_wr;
	h->cap.max_send_sge = g->cap.max_send_sge;
	h->cap.max_recv_sge = g->cap.max_recv_sge;
	h->cap.max_inline_data = g->cap.max_inline_data;
	if (mask & VIRTIO_RDMA_QP_AV)
		return ah_to_host(d, &g->ah_attr, &h->ah_attr);
	return 0;
}

static int do_modify_qp(struct rdma_dev *d, const union rdma_cmd_args *a,
			union rdma_cmd_rsp *r)
{
	const struct virtio_rdma_cmd_modify_qp *m = &a->modify_qp;
	struct ibv_qp_attr h;
	struct rd_slot *q;
	uint32_t s;
	int ret;

	ret = lookup_qp(d, m->qpn, &s);
	if (ret < 0)
		return ret;
	q = &d->slot[s];
	if (q->qp) {
		ret = attr_to_host(d, m->attr_mask, &m->attr, &h);
		if (ret < 0)
			return ret;
		ret = ibv_modify_qp(q->qp, &h, (int)m->attr_mask);
		if (ret) {
			log_warnx("MODIFY_QP: QP %u, mask 0x%x: the host "
				  "refused: %s",
				  m->qpn, m->attr_mask, strerror(ret));
			return -ret;
		}
	}
	if (m->attr_mask & VIRTIO_RDMA_QP_STATE)
		q->state = m->attr.qp_state;
	/* Elements posted before the QP could take them wait no longer. */
	if (q->qp && rd_rq_vq(d, s))
		rd_rq_kicked(d, s, rd_rq_vq(d, s));
	return 0;
}

static void ah_from_host(struct rdma_dev *d, const struct ibv_ah_attr *h,
			 struct virtio_rdma_ah_attr *g)
{
	uint32_t i;

	memcpy(g->grh.dgid, h->grh.dgid.raw, 16);
	g->grh.flow_label = h->grh.flow_label;
	g->grh.hop_limit = h->grh.hop_limit;
	g->grh.traffic_class = h->grh.traffic_class;
	for (i = 0; i < VIRTIO_RDMA_GID_TBL_LEN; i++)
		if (d->guest_gid[i] == h->grh.sgid_index) {
			g->grh.sgid_index = (uint8_t)i;
			break;
		}
	g->sl = h->sl;
	g->static_rate = h->static_rate;
	g->port_num = VIRTIO_RDMA_PORT;
	g->ah_flags = h->is_global ? VIRTIO_RDMA_AH_GRH : 0;
}

static uint32_t access_from_host(unsigned int f)
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

static int do_query_qp(struct rdma_dev *d, const union rdma_cmd_args *a,
		       union rdma_cmd_rsp *r)
{
	struct virtio_rdma_qp_attr *g = &r->query_qp;
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr h;
	struct rd_slot *q;
	uint32_t s;
	int ret;

	ret = lookup_qp(d, a->query_qp.qpn, &s);
	if (ret < 0)
		return ret;
	q = &d->slot[s];
	memset(g, 0, sizeof(*g));
	g->port_num = VIRTIO_RDMA_PORT;
	g->cap = q->cap;
	if (!q->qp) { /* GSI */
		g->qp_state = q->state;
		g->cur_qp_state = q->state;
		g->qkey = VIRTIO_RDMA_GSI_QKEY;
		return 0;
	}
	ret = ibv_query_qp(q->qp, &h, (int)a->query_qp.attr_mask, &init);
	if (ret) {
		log_warnx("QUERY_QP: QP %u: %s", a->query_qp.qpn,
			  strerror(ret));
		return -ret;
	}
	g->qp_state = h.qp_state;
	g->cur_qp_state = h.cur_qp_state;
	g->path_mtu = h.path_mtu;
	g->path_mig_state = h.path_mig_state;
	g->qkey = h.qkey;
	g->rq_psn = h.rq_psn;
	g->sq_psn = h.sq_psn;
	g->dest_qp_num = h.dest_qp_num;
	g->qp_access_flags = access_from_host(h.qp_access_flags);
	g->en_sqd_async_notify = h.en_sqd_async_notify;
	g->sq_draining = h.sq_draining;
	g->max_rd_atomic = h.max_rd_atomic;
	g->max_dest_rd_atomic = h.max_dest_rd_atomic;
	g->min_rnr_timer = h.min_rnr_timer;
	g->timeout = h.timeout;
	g->retry_cnt = h.retry_cnt;
	g->rnr_retry = h.rnr_retry;
	g->rate_limit = h.rate_limit;
	ah_from_host(d, &h.ah_attr, &g->ah_attr);
	return 0;
}

static int do_destroy_qp(struct rdma_dev *d, const union rdma_cmd_args *a,
			 union rdma_cmd_rsp *r)
{
	struct rd_slot *q;
	uint32_t s;
	int ret;

	ret = lookup_qp(d, a->destroy_qp.qpn, &s);
	if (ret < 0)
		return ret;
	q = &d->slot[s];
	if (q->qp) {
		ret = ibv_destroy_qp(q->qp);
		if (ret) {
			log_warnx("DESTROY_QP: QP %u: %s", q->qpn,
				  strerror(ret));
			return -ret;
		}
	}
	d->pd[q->pdn].refs--;
	d->cq[q->scqn].refs--;
	d->cq[q->rcqn].refs--;
	if (q->srq_handle)
		d->slot[q->srq_handle - 1].srq_refs--;
	d->qp_count--;
	free_slot(d, s);
	return 0;
}

static int do_query_pkey(struct rdma_dev *d, const union rdma_cmd_args *a,
			 union rdma_cmd_rsp *r)
{
	r->query_pkey.pkey = d->hca->pkey0;
	return 0;
}

/* The broker's answer for a guest GID, or the host's table standalone. */
static int claim_gid(struct rdma_dev *d, const struct virtio_rdma_cmd_add_gid *g)
{
	uint32_t host;
	char why[WP_TEXT_SIZE];
	int i, ret;

	if (!d->cfg->broker || !broker_link_on(d->cfg->broker)) {
		ret = rdma_hca_find_gid(d->hca, g->gid, g->gid_type);
		if (ret < 0)
			log_warnx("ADD_GID: index %u: that GID (type %u) is "
				  "not on the host port",
				  g->index, g->gid_type);
		return ret < 0 ? -EADDRNOTAVAIL : ret;
	}
	/* the same GID at another index: the broker granted it already */
	for (i = 0; i < VIRTIO_RDMA_GID_TBL_LEN; i++)
		if (d->guest_gid[i] >= 0 && d->gid_type[i] == g->gid_type &&
		    !memcmp(d->gid_raw[i], g->gid, 16))
			return d->guest_gid[i];
	ret = broker_link_gid(d->cfg->broker, WP_GID_ADD, g->gid, g->gid_type,
			      &host, why, sizeof(why));
	if (ret == 0 && host >= (uint32_t)INT16_MAX)
		ret = -EPROTO;
	if (ret < 0) {
		d->st->gid_errors++;
		log_warnx("ADD_GID: index %u: the broker refused: %s",
			  g->index, ret == -EPROTO ? "bad host index" : why);
		return ret;
	}
	d->st->gid_adds++;
	return (int)host;
}

/* Gives the guest GID at index i back to the broker, unless another index
 * still holds it. */
static void release_gid(struct rdma_dev *d, unsigned int i)
{
	char why[WP_TEXT_SIZE];
	unsigned int j;

	if (d->guest_gid[i] < 0)
		return;
	d->guest_gid[i] = -1;
	if (!d->cfg->broker || !broker_link_on(d->cfg->broker))
		return;
	for (j = 0; j < VIRTIO_RDMA_GID_TBL_LEN; j++)
		if (d->guest_gid[j] >= 0 && d->gid_type[j] == d->gid_type[i] &&
		    !memcmp(d->gid_raw[j], d->gid_raw[i], 16))
			return;
	if (broker_link_gid(d->cfg->broker, WP_GID_DEL, d->gid_raw[i],
			    d->gid_type[i], NULL, why, sizeof(why)) < 0)
		log_warnx("DEL_GID: index %u: the broker: %s", i, why);
}

static void release_gids(struct rdma_dev *d)
{
	unsigned int i;

	for (i = 0; i < VIRTIO_RDMA_GID_TBL_LEN; i++)
		release_gid(d, i);
}

static int do_add_gid(struct rdma_dev *d, const union rdma_cmd_args *a,
		      union rdma_cmd_rsp *r)
{
	const struct virtio_rdma_cmd_add_gid *g = &a->add_gid;
	int h;

	if (g->index >= d->gid_tbl_len) {
		log_warnx("ADD_GID: index %u, the table has %u entries",
			  g->index, d->gid_tbl_len);
		return -EINVAL;
	}
	/* a new GID at a used index replaces the old one */
	release_gid(d, g->index);
	h = claim_gid(d, g);
	if (h < 0)
		return h;
	d->guest_gid[g->index] = (int16_t)h;
	memcpy(d->gid_raw[g->index], g->gid, 16);
	d->gid_type[g->index] = g->gid_type;
	log_debug("ADD_GID: guest index %u = host index %d", g->index, h);
	return 0;
}

static int do_del_gid(struct rdma_dev *d, const union rdma_cmd_args *a,
		      union rdma_cmd_rsp *r)
{
	uint16_t i = a->del_gid.index;

	if (i >= VIRTIO_RDMA_GID_TBL_LEN || d->guest_gid[i] < 0) {
		log_warnx("DEL_GID: index %u is empty", i);
		return -ENOENT;
	}
	release_gid(d, i);
	return 0;
}

static int do_req_notify_cq(struct rdma_dev *d, const union rdma_cmd_args *a,
			    union rdma_cmd_rsp *r)
{
	struct rd_cq *cq;
	int ret = lookup_cq(d, a->req_notify_cq.cqn, &cq);

	if (ret < 0)
		return ret;
	/* SOLICITED acts as NEXT_COMP: ibv_wc has no solicited bit. */
	cq->armed = true;
	return 0;
}

static int do_create_srq(struct rdma_dev *d, const union rdma_cmd_args *a,
			 union rdma_cmd_rsp *r)
{
	const struct virtio_rdma_cmd_create_srq *c = &a->create_srq;
	struct ibv_srq_init_attr ia;
	struct rd_pd *pd;
	uint32_t s;
	int ret;

	ret = rd_lookup_pd(d, c->pdn, &pd);
	if (ret < 0)
		return ret;
	if (c->max_wr > d->config.rg_max_srq_wr ||
	    c->max_sge > d->config.rg_max_srq_sge) {
		log_warnx("CREATE_SRQ: %u WRs of %u SGEs, at most %u of %u",
			  c->max_wr, c->max_sge, d->config.rg_max_srq_wr,
			  d->config.rg_max_srq_sge);
		return -EINVAL;
	}
	if (d->srq_count >= d->config.rg_max_srq) {
		log_warnx("CREATE_SRQ: all %u SRQs in use",
			  d->config.rg_max_srq);
		return -ENOSPC;
	}
	ret = alloc_slot(d, &s);
	if (ret < 0)
		return ret;
	memset(&ia, 0, sizeof(ia));
	ia.attr.max_wr = c->max_wr;
	ia.attr.max_sge = c->max_sge;
	ia.attr.srq_limit = c->srq_limit;
	d->slot[s].srq = ibv_create_srq(pd->pd, &ia);
	if (!d->slot[s].srq) {
		log_warn("CREATE_SRQ: ibv_create_srq");
		return -(errno ? errno : EIO);
	}
	d->slot[s].kind = RD_SLOT_SRQ;
	d->slot[s].pdn = c->pdn;
	d->slot[s].srq_max_wr = ia.attr.max_wr;
	d->slot[s].srq_max_sge = c->max_sge;
	d->slot[s].srq_limit = c->srq_limit;
	pd->refs++;
	d->srq_count++;
	r->create_srq.srq_handle = s + 1;
	r->create_srq.slot = s;
	return 0;
}

static int do_modify_srq(struct rdma_dev *d, const union rdma_cmd_args *a,
			 union rdma_cmd_rsp *r)
{
	const struct virtio_rdma_cmd_modify_srq *m = &a->modify_srq;
	struct ibv_srq_attr at = { .max_wr = m->max_wr,
				   .srq_limit = m->srq_limit };
	uint32_t s;
	int ret = lookup_srq(d, m->srq_handle, &s);

	if (ret < 0)
		return ret;
	if ((m->attr_mask & VIRTIO_RDMA_SRQ_MAX_WR) &&
	    m->max_wr > d->config.rg_max_srq_wr) {
		log_warnx("MODIFY_SRQ: %u WRs, at most %u", m->max_wr,
			  d->config.rg_max_srq_wr);
		return -EINVAL;
	}
	ret = ibv_modify_srq(d->slot[s].srq, &at, (int)m->attr_mask);
	if (ret) {
		log_warnx("MODIFY_SRQ: SRQ %u: the host refused: %s",
			  m->srq_handle, strerror(ret));
		return -ret;
	}
	if (m->attr_mask & VIRTIO_RDMA_SRQ_MAX_WR)
		d->slot[s].srq_max_wr = m->max_wr;
	if (m->attr_mask & VIRTIO_RDMA_SRQ_LIMIT)
		d->slot[s].srq_limit = m->srq_limit;
	return 0;
}

static int do_query_srq(struct rdma_dev *d, const union rdma_cmd_args *a,
			union rdma_cmd_rsp *r)
{
	struct ibv_srq_attr at;
	uint32_t s;
	int ret = lookup_srq(d, a->query_srq.srq_handle, &s);

	if (ret < 0)
		return ret;
	ret = ibv_query_srq(d->slot[s].srq, &at);
	if (ret)
		return -ret;
	r->query_srq.max_wr = at.max_wr;
	r->query_srq.max_sge = d->slot[s].srq_max_sge;
	r->query_srq.srq_limit = at.srq_limit;
	return 0;
}

static int do_destroy_srq(struct rdma_dev *d, const union rdma_cmd_args *a,
			  union rdma_cmd_rsp *r)
{
	uint32_t s;
	int ret = lookup_srq(d, a->destroy_srq.srq_handle, &s);

	if (ret < 0)
		return ret;
	if (d->slot[s].srq_refs) {
		log_warnx("DESTROY_SRQ: SRQ %u is used by %u QPs",
			  a->destroy_srq.srq_handle, d->slot[s].srq_refs);
		return -EBUSY;
	}
	ret = ibv_destroy_srq(d->slot[s].srq);
	if (ret)
		return -ret;
	d->pd[d->slot[s].pdn].refs--;
	d->srq_count--;
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

static void cmd_refused(struct rdma_dev *d, uint32_t code, int err,
			const char *why)
{
	d->st->command_errors++;
	if (++d->cmd_logged <= MAX_LOGGED_CMD)
		log_warnx("%s refused (status %u): %s%s", rdma_cmd_name(code),
			  rdma_cmd_status(err), why,
			  d->cmd_logged == MAX_LOGGED_CMD
				  ? " (further refusals not logged)"
				  : "");
}

/* What the ctrl_cmd probe reports of one command. */
struct ctrl_trace {
	uint32_t code;
	uint8_t status;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts); /* vDSO: no syscall */
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Handles the chain in d->elem; returns the used length. */
static uint32_t ctrl_one(struct rdma_dev *d, struct ctrl_trace *t)
{
	struct vq_elem *el = &d->elem;
	uint8_t req[CTRL_REQ_MAX];
	uint8_t rsp[1 + sizeof(union rdma_cmd_rsp)];
	union rdma_cmd_rsp r;
	struct rdma_reason why;
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
		snprintf(why.msg, sizeof(why.msg), "not implemented");
	}
	if (ret == 0) {
		memset(&r, 0, sizeof(r));
		ret = handlers[cmd.code](d, &cmd.u, &r);
		if (ret < 0)
			snprintf(why.msg, sizeof(why.msg), "%s",
				 strerror(-ret));
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

static void ctrl_kicked(struct rdma_dev *d, struct vq *vq)
{
	bool pushed = false;

	while (vq_pop(vq, &d->elem) == 1) {
		struct ctrl_trace t = { 0 };
		uint64_t t0 = RDMAGATE_CTRL_CMD_ENABLED() ? mono_ns() : 0;

		vq_push(vq, &d->elem, ctrl_one(d, &t));
		if (RDMAGATE_CTRL_CMD_ENABLED())
			RDMAGATE_CTRL_CMD(rdmagate_probe_vm, t.code, t.status,
					  t0 ? mono_ns() - t0 : 0);
		pushed = true;
	}
	if (pushed)
		vq_notify(vq);
}

/* ---- device ops ---- */

static void free_all(struct rdma_dev *d)
{
	uint32_t i;

	/* QPs before the SRQs, CQs and PDs they use. */
	for (i = 0; i < d->num_slots; i++) {
		struct rd_slot *q = &d->slot[i];

		if (q->kind != RD_SLOT_QP)
			continue;
		if (q->qp)
			ibv_destroy_qp(q->qp);
		free_slot(d, i);
	}
	for (i = 0; i < d->num_slots; i++) {
		if (d->slot[i].kind != RD_SLOT_SRQ)
			continue;
		ibv_destroy_srq(d->slot[i].srq);
		free_slot(d, i);
	}
	rd_ah_flush(d, 0);
	for (i = 1; i <= d->cfg->lim.max_mr; i++)
		if (d->mr[i].used)
			rd_mr_free(d, i);
	for (i = 0; i < d->max_cq; i++)
		if (d->cq[i].used)
			cq_free(d, i);
	for (i = 1; i <= d->cfg->lim.max_pd; i++)
		if (d->pd[i].used)
			ibv_dealloc_pd(d->pd[i].pd);
	memset(d->pd, 0, (d->cfg->lim.max_pd + 1) * sizeof(*d->pd));
	/* the guest is gone or reset: its addresses leave the host */
	release_gids(d);
	d->qp_count = 0;
	d->srq_count = 0;
}

static void log_stats(const struct rdma_dev *d)
{
	const struct wp_counters *c = d->st;

	/* the worker's counters since it started (all its connections) */
	log_info("device stats: %llu commands (%llu refused), %llu sends, "
		 "%llu receives, %llu CQEs, %llu work requests refused, "
		 "%llu CQ overflows, %llu MADs sent, %llu received, "
		 "%llu dropped",
		 (unsigned long long)c->commands,
		 (unsigned long long)c->command_errors,
		 (unsigned long long)c->sends,
		 (unsigned long long)c->recvs,
		 (unsigned long long)c->completions,
		 (unsigned long long)(c->send_errors + c->recv_errors),
		 (unsigned long long)c->cq_overflows,
		 (unsigned long long)c->mads_sent,
		 (unsigned long long)c->mads_received,
		 (unsigned long long)c->mad_errors);
}

static void rdma_destroy(void *priv)
{
	struct rdma_dev *d = priv;

	if (!d)
		return;
	if (d->cfg && d->cfg->mux && d->cfg->mux->dev == d)
		d->cfg->mux->dev = NULL; /* MADs for us are dropped from now */
	log_stats(d);
	/* free_slot() reads the vqs: they are gone by now. */
	memset(d->vqs, 0, sizeof(d->vqs));
	if (d->slot)
		free_all(d);
	if (d->chan) {
		if (d->env.unwatch_fd)
			d->env.unwatch_fd(d->env.loop_ctx, d->chan->fd);
		ibv_destroy_comp_channel(d->chan);
	}
	free(d->pd);
	free(d->mr);
	free(d->cq);
	free(d->slot);
	free(d->ah);
	free(d);
}

static int rdma_create(const struct dev_env *env, void **ret_priv)
{
	const struct rdma_dev_cfg *cfg = env->cfg;
	struct rdma_dev *d;
	int fl, ret;

	if (!cfg || !cfg->hca || !env->watch_fd)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->cfg = cfg;
	d->hca = cfg->hca;
	d->st = cfg->counters ? cfg->counters : &d->own_st;
	memset(d->guest_gid, 0xff, sizeof(d->guest_gid)); /* all empty */
	d->env = *env;
	fill_config(d);
	d->pd = calloc(cfg->lim.max_pd + 1, sizeof(*d->pd));
	d->mr = calloc(cfg->lim.max_mr + 1, sizeof(*d->mr));
	d->cq = calloc(d->max_cq ? d->max_cq : 1, sizeof(*d->cq));
	d->slot = calloc(d->num_slots ? d->num_slots : 1, sizeof(*d->slot));
	d->ah = calloc(cfg->lim.max_ah ? cfg->lim.max_ah : 1, sizeof(*d->ah));
	ret = -ENOMEM;
	if (!d->pd || !d->mr || !d->cq || !d->slot || !d->ah)
		goto fail;
	d->chan = ibv_create_comp_channel(d->hca->ctx);
	if (!d->chan) {
		ret = -(errno ? errno : EIO);
		log_warn("ibv_create_comp_channel");
		goto fail;
	}
	fl = fcntl(d->chan->fd, F_GETFL);
	if (fl < 0 || fcntl(d->chan->fd, F_SETFL, fl | O_NONBLOCK) < 0 ||
	    fcntl(d->chan->fd, F_SETFD, FD_CLOEXEC) < 0) {
		ret = -errno;
		goto fail;
	}
	ret = env->watch_fd(env->loop_ctx, d->chan->fd, rd_chan_ready, d);
	if (ret < 0) {
		ibv_destroy_comp_channel(d->chan);
		d->chan = NULL;
		goto fail;
	}
	if (cfg->mux)
		cfg->mux->dev = d; /* the one connected device gets the MADs */
	*ret_priv = d;
	return 0;
fail:
	rdma_destroy(d);
	return ret;
}

static void rdma_get_config(void *priv, uint8_t *buf)
{
	struct rdma_dev *d = priv;

	memcpy(buf, &d->config, sizeof(d->config));
}

static void rdma_started(void *priv, struct vq *vq)
{
	struct rdma_dev *d = priv;

	if (vq->index >= VIRTIO_RDMA_NUM_QUEUES)
		return;
	d->vqs[vq->index] = vq;
	d->mem = vq->mem;
}

static void rdma_kicked(void *priv, struct vq *vq)
{
	struct rdma_dev *d = priv;
	uint32_t n;

	switch (virtio_rdma_vq_classify(vq->index, d->max_cq, d->num_slots,
					&n)) {
	case VIRTIO_RDMA_VQ_CTRL:
		ctrl_kicked(d, vq);
		break;
	case VIRTIO_RDMA_VQ_SQ:
		rd_sq_kicked(d, n, vq);
		break;
	case VIRTIO_RDMA_VQ_RQ:
		rd_rq_kicked(d, n, vq);
		break;
	case VIRTIO_RDMA_VQ_CQ: /* new buffers: used on the next CQE */
	case VIRTIO_RDMA_VQ_INVALID:
		break;
	}
}

static void rdma_stopped(void *priv, struct vq *vq)
{
	struct rdma_dev *d = priv;

	if (vq->index < VIRTIO_RDMA_NUM_QUEUES)
		d->vqs[vq->index] = NULL;
}

static void rdma_reset(void *priv)
{
	struct rdma_dev *d = priv;

	log_info("device reset: every object of the guest is destroyed");
	free_all(d);
}

static bool rdma_wants_poll(void *priv)
{
	struct rdma_dev *d = priv;

	return d->cfg->busy_poll;
}

static void rdma_poll(void *priv)
{
	struct rdma_dev *d = priv;
	uint32_t i;

	for (i = 0; i < d->max_cq; i++)
		if (d->cq[i].used)
			rd_cq_poll(d, i);
}

const struct device_ops rdma_device_ops = {
	.name = "virtio-rdma",
	.features = (1ull << VIRTIO_F_VERSION_1) |
		    (1ull << VIRTIO_F_RING_INDIRECT_DESC) |
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
	.wants_poll = rdma_wants_poll,
	.poll = rdma_poll,
};
