// SPDX-License-Identifier: MIT
/*
 * The verbs backend's objects: life cycle, the device attributes a guest
 * is told (clamped to the host and the quotas), PD/CQ/QP/SRQ behind
 * bounded handle tables, the guest GID table (claims through the broker)
 * and the host's asynchronous events.  See worker/backend/backend.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "worker/backend/be_impl.h"
#include "worker/backend/qp1.h"

#define MIN(a, b) ((a) < (b) ? (a) : (b))

void be_limits_default(struct be_limits *lim)
{
	lim->max_qp = 64;
	lim->max_cq = 64;
	lim->max_mr = 1024;
	lim->max_pd = 64;
	lim->max_srq = 16;
	lim->max_ah = 256;
	/*
	 * Room for common tools (ibv_srq_pingpong's CQ has rx_depth 500 +
	 * 16 QPs, 1024 once rounded up); clamped to the host's and to what
	 * the frontend's rings hold (virtio-rdma: 512).
	 */
	lim->max_cqe = 4096;
	lim->max_qp_wr = 1024;
	lim->max_srq_wr = 1024;
	lim->max_sge = BE_MAX_SGE;
}

void be_refused(struct be *be, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	log_peer_vemit(LOG_LVL_WARN, 0, fmt, ap);
	va_end(ap);
	errno = saved;
}

/* ---- device attributes ---- */

static uint32_t clamp_host(uint32_t want, int host)
{
	return host < 0 ? 0 : MIN(want, (uint32_t)host);
}

/* Device capabilities passed through: none that needs a verb we lack. */
#define CAP_PASSED                                                             \
	(IBV_DEVICE_BAD_PKEY_CNTR | IBV_DEVICE_BAD_QKEY_CNTR |                 \
	 IBV_DEVICE_CHANGE_PHY_PORT | IBV_DEVICE_UD_AV_PORT_ENFORCE |          \
	 IBV_DEVICE_SYS_IMAGE_GUID | IBV_DEVICE_RC_RNR_NAK_GEN |               \
	 IBV_DEVICE_SRQ_RESIZE)

static void fill_attr(struct be *be)
{
	const struct ibv_device_attr *h = &be->hca->dev;
	const struct be_limits *l = &be->cfg.lim;
	struct ibv_device_attr *a = &be->attr;

	memset(a, 0, sizeof(*a));
	memcpy(a->fw_ver, h->fw_ver, sizeof(a->fw_ver));
	a->node_guid = h->node_guid;
	a->sys_image_guid = h->sys_image_guid;
	a->max_mr_size = h->max_mr_size;
	a->page_size_cap = RDMA_MR_PAGE_SIZE;
	a->vendor_id = h->vendor_id;
	a->vendor_part_id = h->vendor_part_id;
	a->hw_ver = h->hw_ver;
	a->max_qp = (int)MIN(clamp_host(l->max_qp, h->max_qp), BE_MAX_HANDLES);
	a->max_qp_wr = (int)MIN(clamp_host(l->max_qp_wr, h->max_qp_wr),
				(uint32_t)BE_MAX_WR);
	a->device_cap_flags = h->device_cap_flags & CAP_PASSED;
	a->max_sge = (int)MIN(clamp_host(l->max_sge, h->max_sge),
			      (uint32_t)BE_MAX_SGE);
	a->max_sge_rd = (int)clamp_host(BE_MAX_SGE, h->max_sge_rd);
	a->max_cq = (int)MIN(clamp_host(l->max_cq, h->max_cq), BE_MAX_HANDLES);
	a->max_cqe = (int)clamp_host(l->max_cqe, h->max_cqe);
	a->max_mr = (int)MIN(clamp_host(l->max_mr, h->max_mr), BE_MAX_HANDLES);
	a->max_pd = (int)MIN(clamp_host(l->max_pd, h->max_pd), BE_MAX_HANDLES);
	a->max_qp_rd_atom = (int)clamp_host(255, h->max_qp_rd_atom);
	a->max_res_rd_atom = h->max_res_rd_atom < 0 ? 0 : h->max_res_rd_atom;
	a->max_qp_init_rd_atom = (int)clamp_host(255, h->max_qp_init_rd_atom);
	a->atomic_cap = h->atomic_cap;
	a->max_ah = (int)clamp_host(l->max_ah, h->max_ah);
	a->max_srq =
		(int)MIN(clamp_host(l->max_srq, h->max_srq), BE_MAX_HANDLES);
	a->max_srq_wr = (int)MIN(clamp_host(l->max_srq_wr, h->max_srq_wr),
				 (uint32_t)BE_MAX_WR);
	a->max_srq_sge = (int)MIN(clamp_host(l->max_sge, h->max_srq_sge),
				  (uint32_t)BE_MAX_SGE);
	a->max_pkeys = 1;
	a->local_ca_ack_delay = h->local_ca_ack_delay;
	a->phys_port_cnt = 1;
	/* an address vector names 8 bits of source GID index: a guest
	 * entry above 255 could be added and never used */
	be->gid_tbl_len = MIN(
		clamp_host(be->cfg.gid_tbl_len, be->hca->port_attr.gid_tbl_len),
		(uint32_t)BE_AV_GIDS);
}

const struct ibv_device_attr *be_device_attr(const struct be *be)
{
	return &be->attr;
}

struct wp_counters *be_counters(struct be *be)
{
	return be->st;
}

void be_set_mem(struct be *be, const struct guest_mem *gm)
{
	be->mem = gm;
}

void be_query_port(struct be *be, struct ibv_port_attr *ret)
{
	struct ibv_port_attr h = be->hca->port_attr;

	/* Live state (an ioctl, no sysfs); the cached attributes otherwise. */
	if (ibv_query_port(be->hca->ctx, be->hca->port, &h))
		h = be->hca->port_attr;
	h.gid_tbl_len = (int)be->gid_tbl_len;
	h.pkey_tbl_len = 1;
	h.port_cap_flags &= IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS;
	*ret = h;
}

int be_query_pkey(struct be *be, uint32_t index, uint16_t *ret_pkey)
{
	if (index != 0) {
		be_refused(be, "QUERY_PKEY: index %u, the table has 1 entry",
			   index);
		return -EINVAL;
	}
	*ret_pkey = be->hca->pkey0;
	return 0;
}

/* ---- handle lookups ---- */

struct be_pd *be_pd_get(struct be *be, uint32_t pd)
{
	if (pd == 0 || pd > (uint32_t)be->attr.max_pd || !be->pd[pd].used) {
		be_refused(be, "unknown PD %u", pd);
		return NULL;
	}
	return &be->pd[pd];
}

static struct be_cq *cq_get(struct be *be, uint32_t cq)
{
	if (cq == 0 || cq > (uint32_t)be->attr.max_cq || !be->cq[cq].used) {
		be_refused(be, "unknown CQ %u", cq);
		return NULL;
	}
	return &be->cq[cq];
}

struct be_qp *be_qp_get(struct be *be, uint32_t qp)
{
	if (qp == 0 || qp > be->cfg.qp_handles || !be->qp[qp].used) {
		be_refused(be, "unknown QP handle %u", qp);
		return NULL;
	}
	return &be->qp[qp];
}

struct be_srq *be_srq_get(struct be *be, uint32_t srq)
{
	if (srq == 0 || srq > be->cfg.srq_handles || !be->srq[srq].used) {
		be_refused(be, "unknown SRQ %u", srq);
		return NULL;
	}
	return &be->srq[srq];
}

uint32_t be_qp_by_num(const struct be *be, uint32_t qpn)
{
	uint32_t h;

	for (h = 1; h <= be->cfg.qp_handles; h++)
		if (be->qp[h].used && be->qp[h].qpn == qpn)
			return h;
	return 0;
}

/* pick_handle() reads the used flag every table entry starts with. */
_Static_assert(offsetof(struct be_pd, used) == 0, "");
_Static_assert(offsetof(struct be_mr, used) == 0, "");
_Static_assert(offsetof(struct be_cq, used) == 0, "");
_Static_assert(offsetof(struct be_qp, used) == 0, "");
_Static_assert(offsetof(struct be_srq, used) == 0, "");

/*
 * A free handle: `want` if it is free and in 1..max, else -EEXIST/-EINVAL;
 * BE_ANY: the lowest free one, or -ENOSPC.
 */
static int pick_handle(struct be *be, const char *what, uint32_t want,
		       uint32_t max, const void *tbl, size_t elsize,
		       uint32_t *ret)
{
	const uint8_t *t = tbl;
	uint32_t i;

	/* every table entry starts with its bool used */
	if (want != BE_ANY) {
		if (want > max) {
			be_refused(be, "%s: handle %u, at most %u", what, want,
				   max);
			return -EINVAL;
		}
		if (*(const bool *)(t + want * elsize)) {
			be_refused(be, "%s: handle %u is in use", what, want);
			return -EEXIST;
		}
		*ret = want;
		return 0;
	}
	for (i = 1; i <= max; i++)
		if (!*(const bool *)(t + i * elsize)) {
			*ret = i;
			return 0;
		}
	be_refused(be, "%s: all %u in use", what, max);
	return -ENOSPC;
}

/* ---- PD ---- */

int be_pd_create(struct be *be, uint32_t want, uint32_t *ret_pd)
{
	uint32_t h;
	int ret = pick_handle(be, "CREATE_PD", want, (uint32_t)be->attr.max_pd,
			      be->pd, sizeof(*be->pd), &h);

	if (ret < 0)
		return ret;
	be->pd[h].pd = ibv_alloc_pd(be->hca->ctx);
	if (!be->pd[h].pd) {
		log_peer_warn("CREATE_PD: ibv_alloc_pd");
		return -(errno ? errno : EIO);
	}
	be->pd[h].used = true;
	be->pd[h].refs = 0;
	be->pd[h].dma_mr = 0;
	*ret_pd = h;
	return 0;
}

bool be_pd_exists(const struct be *be, uint32_t pd)
{
	return pd != 0 && pd <= (uint32_t)be->attr.max_pd && be->pd[pd].used;
}

int be_pd_destroy(struct be *be, uint32_t pd)
{
	struct be_pd *p = be_pd_get(be, pd);

	if (!p)
		return -ENOENT;
	/* Cached AHs are ours, not the guest's: they do not keep it busy. */
	if (p->refs > be_ah_count(be, pd)) {
		be_refused(be, "DESTROY_PD: PD %u still has %u objects", pd,
			   p->refs - be_ah_count(be, pd));
		return -EBUSY;
	}
	be_ah_flush(be, pd);
	ibv_dealloc_pd(p->pd);
	memset(p, 0, sizeof(*p));
	return 0;
}

/* ---- CQ ---- */

int be_cq_create(struct be *be, uint32_t want, uint32_t cqe, void *ctx,
		 uint32_t *ret_cq, uint32_t *ret_cqe)
{
	struct be_cq *c;
	uint32_t h;
	int ret;

	if (cqe == 0 || cqe > (uint32_t)be->attr.max_cqe) {
		be_refused(be, "CREATE_CQ: %u entries, 1..%d", cqe,
			   be->attr.max_cqe);
		return -EINVAL;
	}
	ret = pick_handle(be, "CREATE_CQ", want, (uint32_t)be->attr.max_cq,
			  be->cq, sizeof(*be->cq), &h);
	if (ret < 0)
		return ret;
	c = &be->cq[h];
	c->cq = ibv_create_cq(be->hca->ctx, (int)cqe, (void *)(uintptr_t)h,
			      be->chan, 0);
	if (!c->cq) {
		log_peer_warn("CREATE_CQ: ibv_create_cq(%u)", cqe);
		return -(errno ? errno : EIO);
	}
	if (ibv_req_notify_cq(c->cq, 0)) {
		ibv_destroy_cq(c->cq);
		c->cq = NULL;
		return -EIO;
	}
	c->used = true;
	c->cqe = (uint32_t)c->cq->cqe;
	c->refs = 0;
	c->ctx = ctx;
	*ret_cq = h;
	*ret_cqe = c->cqe;
	return 0;
}

int be_cq_resize(struct be *be, uint32_t cq, uint32_t cqe, uint32_t *ret_cqe)
{
	struct be_cq *c = cq_get(be, cq);
	int ret;

	if (!c)
		return -ENOENT;
	if (cqe == 0 || cqe > (uint32_t)be->attr.max_cqe) {
		be_refused(be, "RESIZE_CQ: %u entries, 1..%d", cqe,
			   be->attr.max_cqe);
		return -EINVAL;
	}
	ret = ibv_resize_cq(c->cq, (int)cqe);
	if (ret) {
		be_refused(be, "RESIZE_CQ: CQ %u to %u: the host refused: %s",
			   cq, cqe, strerror(ret));
		return -ret;
	}
	c->cqe = (uint32_t)c->cq->cqe;
	*ret_cqe = c->cqe;
	return 0;
}

static void cq_free(struct be *be, uint32_t cq)
{
	ibv_destroy_cq(be->cq[cq].cq);
	memset(&be->cq[cq], 0, sizeof(be->cq[cq]));
}

int be_cq_destroy(struct be *be, uint32_t cq)
{
	struct be_cq *c = cq_get(be, cq);

	if (!c)
		return -ENOENT;
	if (c->refs) {
		be_refused(be, "DESTROY_CQ: CQ %u is used by %u QPs", cq,
			   c->refs);
		return -EBUSY;
	}
	cq_free(be, cq);
	return 0;
}

void be_cq_error(struct be *be, uint32_t cq)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	uint32_t h;

	for (h = 1; h <= be->cfg.qp_handles; h++) {
		struct be_qp *q = &be->qp[h];

		if (!q->used || (q->send_cq != cq && q->recv_cq != cq))
			continue;
		if (q->qp)
			ibv_modify_qp(q->qp, &a, IBV_QP_STATE);
		q->state = IBV_QPS_ERR;
	}
}

/* ---- QP ---- */

static int check_qp_caps(struct be *be, const struct ibv_qp_cap *c)
{
	uint32_t wr = (uint32_t)be->attr.max_qp_wr;
	uint32_t sge = (uint32_t)be->attr.max_sge;

	if (c->max_send_wr > wr || c->max_recv_wr > wr) {
		be_refused(be,
			   "CREATE_QP: %u send / %u receive WRs, at most %u",
			   c->max_send_wr, c->max_recv_wr, wr);
		return -EINVAL;
	}
	if (c->max_send_sge > sge || c->max_recv_sge > sge) {
		be_refused(be,
			   "CREATE_QP: %u send / %u receive SGEs, at most %u",
			   c->max_send_sge, c->max_recv_sge, sge);
		return -EINVAL;
	}
	if (c->max_inline_data > 4096) {
		be_refused(be,
			   "CREATE_QP: %u bytes of inline data, at most 4096",
			   c->max_inline_data);
		return -EINVAL;
	}
	return 0;
}

static bool have_gsi(const struct be *be)
{
	uint32_t h;

	for (h = 1; h <= be->cfg.qp_handles; h++)
		if (be->qp[h].used && be->qp[h].type == BE_QPT_GSI)
			return true;
	return false;
}

static enum ibv_qp_type host_qp_type(enum be_qp_type t)
{
	return t == BE_QPT_RC	? IBV_QPT_RC
	       : t == BE_QPT_UC ? IBV_QPT_UC
				: IBV_QPT_UD;
}

static int create_host_qp(struct be *be, struct be_qp *q,
			  const struct be_qp_init *in)
{
	struct ibv_qp_init_attr ia;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = be->cq[in->send_cq].cq;
	ia.recv_cq = be->cq[in->recv_cq].cq;
	ia.srq = in->srq ? be->srq[in->srq].srq : NULL;
	ia.qp_type = host_qp_type(in->type);
	ia.sq_sig_all = 0; /* every host WR is signalled by us */
	ia.cap.max_send_wr = in->cap.max_send_wr ? in->cap.max_send_wr : 1;
	ia.cap.max_recv_wr =
		ia.srq ? 0 : (in->cap.max_recv_wr ? in->cap.max_recv_wr : 1);
	ia.cap.max_send_sge = in->cap.max_send_sge ? in->cap.max_send_sge : 1;
	ia.cap.max_recv_sge =
		ia.srq ? 0 : (in->cap.max_recv_sge ? in->cap.max_recv_sge : 1);
	ia.cap.max_inline_data = in->cap.max_inline_data;
	q->qp = ibv_create_qp(be->pd[in->pd].pd, &ia);
	if (!q->qp) {
		log_peer_warn("CREATE_QP: ibv_create_qp");
		return -(errno ? errno : EIO);
	}
	q->qpn = q->qp->qp_num;
	q->cap = ia.cap;
	return 0;
}

static int qp_check(struct be *be, const struct be_qp_init *in)
{
	if (in->type != BE_QPT_GSI && in->type != BE_QPT_RC &&
	    in->type != BE_QPT_UC && in->type != BE_QPT_UD) {
		be_refused(be, "CREATE_QP: QP type %u", in->type);
		return -EOPNOTSUPP;
	}
	if (!be_pd_get(be, in->pd) || !cq_get(be, in->send_cq) ||
	    !cq_get(be, in->recv_cq) || (in->srq && !be_srq_get(be, in->srq)))
		return -ENOENT;
	if (check_qp_caps(be, &in->cap) < 0)
		return -EINVAL;
	if (be->qp_count >= (uint32_t)be->attr.max_qp) {
		be_refused(be, "CREATE_QP: all %d QPs in use", be->attr.max_qp);
		return -ENOSPC;
	}
	if (in->type == BE_QPT_GSI && have_gsi(be)) {
		be_refused(be, "CREATE_QP: the GSI QP exists already");
		return -EEXIST;
	}
	return 0;
}

static void qp_release(struct be *be, struct be_qp *q)
{
	uint16_t gen = q->gen;

	be_wq_drop_ahs(be, &q->sq);
	be_wq_free(&q->sq);
	be_wq_free(&q->rq);
	memset(q, 0, sizeof(*q));
	q->gen = (uint16_t)(gen + 1);
}

int be_qp_create(struct be *be, uint32_t want, const struct be_qp_init *in,
		 struct be_qp_info *ret)
{
	struct be_qp *q;
	uint32_t h;
	int r;

	r = qp_check(be, in);
	if (r == 0)
		r = pick_handle(be, "CREATE_QP", want, be->cfg.qp_handles,
				be->qp, sizeof(*be->qp), &h);
	if (r < 0)
		return r;
	q = &be->qp[h];
	q->srq = in->srq;
	if (in->type == BE_QPT_GSI) {
		q->qpn = 1;
		q->cap = in->cap;
	} else {
		r = create_host_qp(be, q, in);
		if (r < 0)
			goto fail;
	}
	r = be_wq_init(&q->sq, q->cap.max_send_wr, false);
	if (r == 0 && !in->srq)
		r = be_wq_init(&q->rq, q->cap.max_recv_wr,
			       in->type == BE_QPT_GSI);
	if (r < 0) {
		if (q->qp)
			ibv_destroy_qp(q->qp);
		goto fail;
	}
	q->used = true;
	q->type = in->type;
	q->pd = in->pd;
	q->send_cq = in->send_cq;
	q->recv_cq = in->recv_cq;
	q->sq_sig_all = in->sq_sig_all;
	q->state = IBV_QPS_RESET;
	q->av_gid = -1;
	q->ctx = in->ctx;
	be->pd[in->pd].refs++;
	be->cq[in->send_cq].refs++;
	be->cq[in->recv_cq].refs++;
	if (in->srq)
		be->srq[in->srq].refs++;
	be->qp_count++;
	ret->handle = h;
	ret->qp_num = q->qpn;
	ret->cap = q->cap;
	log_debug("CREATE_QP: type %u, QPN %u, handle %u", in->type, q->qpn, h);
	return 0;
fail:
	qp_release(be, q);
	return r;
}

/* Host index of the guest's GID index: -EINVAL (never added),
 * -EADDRNOTAVAIL (dead: its host slot holds something else now). */
static int host_sgid(const struct be *be, uint32_t guest_index)
{
	if (guest_index >= be->gid_tbl_len || be->guest_gid[guest_index] < 0)
		return -EINVAL;
	if (be->gid_dead[guest_index])
		return -EADDRNOTAVAIL;
	return be->guest_gid[guest_index];
}

int be_ah_to_host(const struct be *be, const struct be_ah_attr *g,
		  struct ibv_ah_attr *h)
{
	int sgid;

	if (!g->global)
		return -EINVAL; /* RoCE: every AV has a GRH */
	sgid = host_sgid(be, g->sgid_index);
	if (sgid < 0)
		return sgid;
	/* the host's ibv_ah_attr holds 8 bits: refused at GID add */
	if (sgid > UINT8_MAX)
		return -EINVAL;
	memset(h, 0, sizeof(*h));
	h->is_global = 1;
	memcpy(h->grh.dgid.raw, g->dgid, 16);
	h->grh.flow_label = g->flow_label;
	h->grh.sgid_index = (uint8_t)sgid;
	h->grh.hop_limit = g->hop_limit;
	h->grh.traffic_class = g->traffic_class;
	h->sl = g->sl;
	h->static_rate = g->static_rate;
	h->port_num = be->hca->port;
	return 0;
}

static int attr_to_host(struct be *be, int mask, const struct be_qp_attr *g,
			struct ibv_qp_attr *h)
{
	int r;

	memset(h, 0, sizeof(*h));
	h->qp_state = g->qp_state;
	h->cur_qp_state = g->cur_qp_state;
	h->path_mtu = g->path_mtu;
	h->path_mig_state = g->path_mig_state;
	h->qkey = (mask & IBV_QP_QKEY) ? g->qkey : 0;
	h->rq_psn = g->rq_psn;
	h->sq_psn = g->sq_psn;
	h->dest_qp_num = g->dest_qp_num;
	h->qp_access_flags =
		g->qp_access_flags &
		(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	h->pkey_index = 0;
	h->en_sqd_async_notify = g->en_sqd_async_notify;
	h->max_rd_atomic = g->max_rd_atomic;
	h->max_dest_rd_atomic = g->max_dest_rd_atomic;
	h->min_rnr_timer = g->min_rnr_timer;
	h->port_num = be->hca->port;
	h->timeout = g->timeout;
	h->retry_cnt = g->retry_cnt;
	h->rnr_retry = g->rnr_retry;
	h->rate_limit = g->rate_limit;
	h->cap = g->cap;
	if (!(mask & IBV_QP_AV))
		return 0;
	r = be_ah_to_host(be, &g->ah_attr, &h->ah_attr);
	/* the path's source GID, read again from the host's table now */
	if (r == 0)
		r = be_gid_verify(be, g->ah_attr.sgid_index);
	if (r < 0) {
		be_refused(be,
			   "MODIFY_QP: the address vector %s (source GID "
			   "index %u)",
			   !g->ah_attr.global ? "has no GRH on a RoCE port"
			   : r == -EADDRNOTAVAIL
				   ? "names a GID that is no longer the "
				     "guest's on the host port"
				   : "names a GID index never added",
			   g->ah_attr.sgid_index);
		return r;
	}
	return 0;
}

/* A transition to RTR or RTS on a path whose source GID died: refused. */
static bool path_dead(const struct be *be, const struct be_qp *q, int mask,
		      const struct be_qp_attr *attr)
{
	if (!(mask & IBV_QP_STATE) || (mask & IBV_QP_AV) || q->av_gid < 0)
		return false;
	if (attr->qp_state != IBV_QPS_RTR && attr->qp_state != IBV_QPS_RTS)
		return false;
	return be->gid_dead[q->av_gid] || be->guest_gid[q->av_gid] < 0;
}

int be_qp_modify(struct be *be, uint32_t qp, const struct be_qp_attr *attr,
		 int mask)
{
	struct be_qp *q = be_qp_get(be, qp);
	struct ibv_qp_attr h;
	int ret;

	if (!q)
		return -ENOENT;
	if ((mask & IBV_QP_QKEY) && (attr->qkey & BE_QKEY_PRIVILEGED) &&
	    q->type != BE_QPT_GSI) {
		be_refused(
			be,
			"MODIFY_QP: QP %u: Q_Key 0x%x is privileged (bit 31)",
			q->qpn, attr->qkey);
		return -EPERM;
	}
	if (path_dead(be, q, mask, attr)) {
		be_refused(be,
			   "MODIFY_QP: QP %u: its path's source GID (index "
			   "%d) is no longer the guest's on the host port",
			   q->qpn, q->av_gid);
		return -EADDRNOTAVAIL;
	}
	if (q->qp) {
		ret = attr_to_host(be, mask, attr, &h);
		if (ret < 0)
			return ret;
		ret = ibv_modify_qp(q->qp, &h, mask);
		if (ret) {
			be_refused(be,
				   "MODIFY_QP: QP %u, mask 0x%x: the host "
				   "refused: %s",
				   q->qpn, (unsigned int)mask, strerror(ret));
			return -ret;
		}
	}
	if (mask & IBV_QP_STATE)
		q->state = attr->qp_state;
	if (mask & IBV_QP_AV)
		q->av_gid = attr->ah_attr.sgid_index;
	return 0;
}

static void ah_from_host(const struct be *be, const struct ibv_ah_attr *h,
			 struct be_ah_attr *g)
{
	uint32_t i;

	memcpy(g->dgid, h->grh.dgid.raw, 16);
	g->flow_label = h->grh.flow_label;
	g->hop_limit = h->grh.hop_limit;
	g->traffic_class = h->grh.traffic_class;
	for (i = 0; i < be->gid_tbl_len; i++)
		if (be->guest_gid[i] == h->grh.sgid_index) {
			g->sgid_index = (uint8_t)i;
			break;
		}
	g->sl = h->sl;
	g->static_rate = h->static_rate;
	g->global = h->is_global;
}

int be_qp_query(struct be *be, uint32_t qp, int mask, struct be_qp_attr *ret)
{
	struct be_qp *q = be_qp_get(be, qp);
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr h;
	struct be_qp_attr g;
	int r;

	if (!q)
		return -ENOENT;
	memset(&g, 0, sizeof(g));
	g.cap = q->cap;
	if (!q->qp) { /* GSI */
		g.qp_state = q->state;
		g.cur_qp_state = q->state;
		g.qkey = 0x80010000u; /* IB_QP1_QKEY */
		*ret = g;
		return 0;
	}
	r = ibv_query_qp(q->qp, &h, mask, &init);
	if (r) {
		be_refused(be, "QUERY_QP: QP %u: %s", q->qpn, strerror(r));
		return -r;
	}
	g.qp_state = h.qp_state;
	g.cur_qp_state = h.cur_qp_state;
	g.path_mtu = h.path_mtu;
	g.path_mig_state = h.path_mig_state;
	g.qkey = h.qkey;
	g.rq_psn = h.rq_psn;
	g.sq_psn = h.sq_psn;
	g.dest_qp_num = h.dest_qp_num;
	g.qp_access_flags = h.qp_access_flags;
	g.en_sqd_async_notify = h.en_sqd_async_notify;
	g.sq_draining = h.sq_draining;
	g.max_rd_atomic = h.max_rd_atomic;
	g.max_dest_rd_atomic = h.max_dest_rd_atomic;
	g.min_rnr_timer = h.min_rnr_timer;
	g.timeout = h.timeout;
	g.retry_cnt = h.retry_cnt;
	g.rnr_retry = h.rnr_retry;
	g.rate_limit = h.rate_limit;
	ah_from_host(be, &h.ah_attr, &g.ah_attr);
	*ret = g;
	return 0;
}

static void qp_free(struct be *be, uint32_t h)
{
	struct be_qp *q = &be->qp[h];

	be->pd[q->pd].refs--;
	be->cq[q->send_cq].refs--;
	be->cq[q->recv_cq].refs--;
	if (q->srq)
		be->srq[q->srq].refs--;
	be->qp_count--;
	qp_release(be, q);
}

int be_qp_destroy(struct be *be, uint32_t qp)
{
	struct be_qp *q = be_qp_get(be, qp);
	int ret;

	if (!q)
		return -ENOENT;
	if (q->qp) {
		ret = ibv_destroy_qp(q->qp);
		if (ret) {
			be_refused(be, "DESTROY_QP: QP %u: %s", q->qpn,
				   strerror(ret));
			return -ret;
		}
	}
	qp_free(be, qp);
	return 0;
}

/* ---- SRQ ---- */

int be_srq_create(struct be *be, uint32_t want, const struct be_srq_init *in,
		  uint32_t *ret_srq, struct ibv_srq_attr *ret_attr)
{
	struct ibv_srq_init_attr ia;
	struct be_srq *s;
	struct be_pd *pd;
	uint32_t h;
	int ret;

	pd = be_pd_get(be, in->pd);
	if (!pd)
		return -ENOENT;
	if (in->max_wr > (uint32_t)be->attr.max_srq_wr ||
	    in->max_sge > (uint32_t)be->attr.max_srq_sge) {
		be_refused(be,
			   "CREATE_SRQ: %u WRs of %u SGEs, at most %d of %d",
			   in->max_wr, in->max_sge, be->attr.max_srq_wr,
			   be->attr.max_srq_sge);
		return -EINVAL;
	}
	if (be->srq_count >= (uint32_t)be->attr.max_srq) {
		be_refused(be, "CREATE_SRQ: all %d SRQs in use",
			   be->attr.max_srq);
		return -ENOSPC;
	}
	ret = pick_handle(be, "CREATE_SRQ", want, be->cfg.srq_handles, be->srq,
			  sizeof(*be->srq), &h);
	if (ret < 0)
		return ret;
	s = &be->srq[h];
	memset(&ia, 0, sizeof(ia));
	ia.attr.max_wr = in->max_wr;
	ia.attr.max_sge = in->max_sge;
	ia.attr.srq_limit = in->srq_limit;
	s->srq = ibv_create_srq(pd->pd, &ia);
	if (!s->srq) {
		log_peer_warn("CREATE_SRQ: ibv_create_srq");
		return -(errno ? errno : EIO);
	}
	ret = be_wq_init(&s->rq, ia.attr.max_wr, false);
	if (ret < 0) {
		ibv_destroy_srq(s->srq);
		s->srq = NULL;
		return ret;
	}
	s->used = true;
	s->pd = in->pd;
	s->max_wr = ia.attr.max_wr;
	s->max_sge = in->max_sge;
	s->limit = in->srq_limit;
	s->refs = 0;
	s->ctx = in->ctx;
	pd->refs++;
	be->srq_count++;
	*ret_srq = h;
	*ret_attr = ia.attr;
	return 0;
}

int be_srq_modify(struct be *be, uint32_t srq, const struct ibv_srq_attr *attr,
		  int mask)
{
	struct be_srq *s = be_srq_get(be, srq);
	struct ibv_srq_attr at = *attr;
	int ret;

	if (!s)
		return -ENOENT;
	if ((mask & IBV_SRQ_MAX_WR) &&
	    attr->max_wr > (uint32_t)be->attr.max_srq_wr) {
		be_refused(be, "MODIFY_SRQ: %u WRs, at most %d", attr->max_wr,
			   be->attr.max_srq_wr);
		return -EINVAL;
	}
	/* a bigger SRQ needs more bookkeeping for its outstanding WRs */
	if ((mask & IBV_SRQ_MAX_WR) && attr->max_wr > s->rq.size) {
		be_refused(be, "MODIFY_SRQ: SRQ %u cannot grow past %u WRs",
			   srq, s->rq.size);
		return -EINVAL;
	}
	ret = ibv_modify_srq(s->srq, &at, mask);
	if (ret) {
		be_refused(be, "MODIFY_SRQ: SRQ %u: the host refused: %s", srq,
			   strerror(ret));
		return -ret;
	}
	if (mask & IBV_SRQ_MAX_WR)
		s->max_wr = attr->max_wr;
	if (mask & IBV_SRQ_LIMIT)
		s->limit = attr->srq_limit;
	return 0;
}

int be_srq_query(struct be *be, uint32_t srq, struct ibv_srq_attr *ret)
{
	struct be_srq *s = be_srq_get(be, srq);
	struct ibv_srq_attr at;
	int r;

	if (!s)
		return -ENOENT;
	r = ibv_query_srq(s->srq, &at);
	if (r)
		return -r;
	at.max_sge = s->max_sge;
	*ret = at;
	return 0;
}

static void srq_free(struct be *be, uint32_t h)
{
	struct be_srq *s = &be->srq[h];
	uint16_t gen = s->gen;

	be->pd[s->pd].refs--;
	be->srq_count--;
	be_wq_free(&s->rq);
	memset(s, 0, sizeof(*s));
	s->gen = (uint16_t)(gen + 1);
}

int be_srq_destroy(struct be *be, uint32_t srq)
{
	struct be_srq *s = be_srq_get(be, srq);
	int ret;

	if (!s)
		return -ENOENT;
	if (s->refs) {
		be_refused(be, "DESTROY_SRQ: SRQ %u is used by %u QPs", srq,
			   s->refs);
		return -EBUSY;
	}
	ret = ibv_destroy_srq(s->srq);
	if (ret)
		return -ret;
	srq_free(be, srq);
	return 0;
}

/* ---- guest GIDs ---- */

/* gid_held()'s type for "the address, whatever its GID type" */
#define GID_TYPE_ANY UINT32_MAX

/* The guest index holding this GID already (of gid_type), or -1. */
static int gid_held(const struct be *be, const uint8_t gid[16],
		    uint32_t gid_type)
{
	uint32_t i;

	for (i = 0; i < be->gid_tbl_len; i++)
		if (be->guest_gid[i] >= 0 && !be->gid_dead[i] &&
		    (gid_type == GID_TYPE_ANY || be->gid_type[i] == gid_type) &&
		    !memcmp(be->gid_raw[i], gid, 16))
			return (int)i;
	return -1;
}

/* Whether GID claims go to the broker (be_cfg.gids), now. */
static bool claims_on(const struct be *be)
{
	return be->cfg.gids && be->cfg.gids->on(be->cfg.gids_arg);
}

/* The broker's answer for a guest GID, or the host's table standalone. */
static int claim_gid(struct be *be, uint32_t index, const uint8_t gid[16],
		     uint32_t gid_type)
{
	struct reason why;
	uint32_t host;
	int i, ret;

	if (!claims_on(be)) {
		ret = rdma_hca_find_gid(be->hca, gid, gid_type);
		if (ret < 0)
			be_refused(be,
				   "ADD_GID: index %u: that GID (type %u) is "
				   "not on the host port",
				   index, gid_type);
		return ret < 0 ? -EADDRNOTAVAIL : ret;
	}
	/* the same GID at another index: the broker granted it already */
	i = gid_held(be, gid, gid_type);
	if (i >= 0)
		return be->guest_gid[i];
	ret = be->cfg.gids->claim(be->cfg.gids_arg, true, gid, gid_type,
				  gid_held(be, gid, GID_TYPE_ANY) >= 0, &host,
				  &why);
	if (ret < 0) {
		be->st->gid_errors++;
		be_refused(be, "ADD_GID: index %u: not granted: %s", index,
			   why.msg);
		return ret;
	}
	be->st->gid_adds++;
	return (int)MIN(host, (uint32_t)INT32_MAX);
}

/* Gives the guest GID at index i back to the broker, unless another index
 * still holds it. */
static void release_gid(struct be *be, uint32_t i)
{
	struct reason why;
	uint8_t dead = be->gid_dead[i];

	if (be->guest_gid[i] < 0)
		return;
	be->guest_gid[i] = -1;
	be->gid_dead[i] = 0;
	/* the broker said it is gone: nothing to give back */
	if (dead == BE_GID_GONE || !claims_on(be))
		return;
	if (gid_held(be, be->gid_raw[i], be->gid_type[i]) >= 0)
		return;
	if (be->cfg.gids->claim(be->cfg.gids_arg, false, be->gid_raw[i],
				be->gid_type[i], false, NULL, &why) < 0)
		log_peer_warnx("DEL_GID: index %u: the broker: %s", i, why.msg);
}

int be_gid_add(struct be *be, uint32_t index, const uint8_t gid[16],
	       uint32_t gid_type, void *cookie)
{
	int h;

	if (index >= be->gid_tbl_len) {
		be_refused(be, "ADD_GID: index %u, the table has %u entries",
			   index, be->gid_tbl_len);
		return -EINVAL;
	}
	if (gid_type != IBV_GID_TYPE_ROCE_V1 &&
	    gid_type != IBV_GID_TYPE_ROCE_V2) {
		be_refused(be, "ADD_GID: index %u: GID type %u, not RoCE",
			   index, gid_type);
		return -EINVAL;
	}
	/* a new GID at a used index replaces the old one */
	release_gid(be, index);
	h = claim_gid(be, index, gid, gid_type);
	if (h < 0)
		return h;
	/*
	 * A host index the host's address vector cannot hold: cutting it to
	 * 8 bits would send with another GID (another tenant's address).
	 */
	if (h > UINT8_MAX) {
		be->st->gid_errors++;
		be_refused(be,
			   "ADD_GID: index %u: host GID index %d does not fit "
			   "an address vector (at most 255)",
			   index, h);
		be->guest_gid[index] = h; /* so that the broker gets it back */
		memcpy(be->gid_raw[index], gid, 16);
		be->gid_type[index] = gid_type;
		release_gid(be, index);
		return -ERANGE;
	}
	be->guest_gid[index] = h;
	memcpy(be->gid_raw[index], gid, 16);
	be->gid_type[index] = gid_type;
	log_debug("ADD_GID: guest index %u = host index %d", index, h);
	return 0;
}

int be_gid_del(struct be *be, uint32_t index)
{
	if (index >= be->gid_tbl_len || be->guest_gid[index] < 0) {
		be_refused(be, "DEL_GID: index %u is empty", index);
		return -ENOENT;
	}
	release_gid(be, index);
	return 0;
}

static void release_gids(struct be *be)
{
	uint32_t i;

	for (i = 0; i < BE_MAX_GIDS; i++)
		release_gid(be, i);
}

/* ---- GIDs that change behind the guest's back ---- */

/*
 * A guest GID maps to a host GID table slot fixed at claim time.  If the
 * address leaves the host (removed outside the broker, its netdev gone)
 * the slot may be reused, by another VM's claim too: a path or an AH on
 * it would send with another tenant's source GID.  So the slot is read
 * again when the host says its table changed (IBV_EVENT_GID_CHANGE), when
 * the broker says the address went (WP_GID_GONE), and before every new
 * host AH and every MODIFY_QP with an address vector.
 */

static void qp_to_error(struct be *be, uint32_t h)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct be_qp *q = &be->qp[h];
	struct be_async_event ev = {
		.type = IBV_EVENT_QP_FATAL,
		.obj = BE_OBJ_QP,
		.handle = h,
		.ctx = q->ctx,
	};

	if (q->qp && ibv_modify_qp(q->qp, &a, IBV_QP_STATE))
		log_warnx("QP %u: cannot move it to the error state", q->qpn);
	q->state = IBV_QPS_ERR;
	if (be->ops->async_event)
		be->ops->async_event(be->fe, &ev);
}

void be_gid_kill(struct be *be, int32_t h, uint8_t how)
{
	uint32_t i, n = 0;

	for (i = 0; i < be->gid_tbl_len; i++)
		if (be->guest_gid[i] == h && !be->gid_dead[i]) {
			be->gid_dead[i] = how;
			n++;
		}
	if (!n)
		return;
	if (h >= 0 && h <= UINT8_MAX && be->ah && be->pd)
		be_ah_flush_sgid(be, (uint8_t)h);
	for (i = 1; be->qp && i <= be->cfg.qp_handles; i++) {
		struct be_qp *q = &be->qp[i];

		if (!q->used || q->av_gid < 0 || !be->gid_dead[q->av_gid] ||
		    be->guest_gid[q->av_gid] != h || q->state == IBV_QPS_ERR)
			continue;
		qp_to_error(be, i);
	}
	log_peer_warnx("GID: host GID index %d no longer holds the guest's "
		       "GID (%s): %u guest entries dead, their AHs flushed, "
		       "their QPs in the error state",
		       h,
		       how == BE_GID_GONE ? "the broker says its address went"
					  : "the host's table changed",
		       n);
}

int be_gid_verify(struct be *be, uint32_t gi)
{
	struct ibv_gid_entry ent;
	int32_t h;
	int r;

	if (gi >= be->gid_tbl_len || be->guest_gid[gi] < 0)
		return -EINVAL;
	if (be->gid_dead[gi])
		return -EADDRNOTAVAIL;
	h = be->guest_gid[gi];
	r = ibv_query_gid_ex(be->hca->ctx, be->hca->port, (uint32_t)h, &ent, 0);
	if (r == 0 && ent.gid_type == be->gid_type[gi] &&
	    !memcmp(ent.gid.raw, be->gid_raw[gi], 16))
		return 0;
	/* ENODATA: the slot is empty now; anything else: not ours */
	be_gid_kill(be, h, BE_GID_DEAD);
	return -EADDRNOTAVAIL;
}

void be_gids_recheck(struct be *be)
{
	uint32_t i;

	for (i = 0; i < be->gid_tbl_len; i++)
		if (be->guest_gid[i] >= 0 && !be->gid_dead[i])
			be_gid_verify(be, i);
}

/* A claimed GID left the host (the broker's GID_GONE, be_gid_claims). */
static void gid_gone(void *arg, const uint8_t gid[16])
{
	struct be *be = arg;
	uint32_t i;

	for (i = 0; i < be->gid_tbl_len; i++)
		if (be->guest_gid[i] >= 0 && !be->gid_dead[i] &&
		    !memcmp(be->gid_raw[i], gid, 16))
			be_gid_kill(be, be->guest_gid[i], BE_GID_GONE);
}

/* ---- host asynchronous events ---- */

/* Our handle of the object an event names; 0 when it is not ours. */
static void event_object(struct be *be, const struct ibv_async_event *e,
			 struct be_async_event *ev)
{
	uint32_t h;

	switch (e->event_type) {
	case IBV_EVENT_CQ_ERR:
		ev->obj = BE_OBJ_CQ;
		for (h = 1; h <= (uint32_t)be->attr.max_cq; h++)
			if (be->cq[h].used && be->cq[h].cq == e->element.cq) {
				ev->handle = h;
				ev->ctx = be->cq[h].ctx;
			}
		break;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		ev->obj = BE_OBJ_QP;
		for (h = 1; h <= be->cfg.qp_handles; h++)
			if (be->qp[h].used && be->qp[h].qp &&
			    be->qp[h].qp == e->element.qp) {
				ev->handle = h;
				ev->ctx = be->qp[h].ctx;
			}
		break;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		ev->obj = BE_OBJ_SRQ;
		for (h = 1; h <= be->cfg.srq_handles; h++)
			if (be->srq[h].used &&
			    be->srq[h].srq == e->element.srq) {
				ev->handle = h;
				ev->ctx = be->srq[h].ctx;
			}
		break;
	case IBV_EVENT_DEVICE_FATAL:
		ev->obj = BE_OBJ_DEVICE;
		ev->handle = 1;
		break;
	default: /* port events */
		ev->obj = BE_OBJ_PORT;
		if ((uint32_t)e->element.port_num == be->hca->port)
			ev->handle = 1;
		break;
	}
}

static void async_ready(void *arg)
{
	struct be *be = arg;
	struct ibv_async_event e;
	unsigned int n;

	/* a bounded batch: the loop stays fair; the fd stays readable */
	for (n = 0; n < 64 && ibv_get_async_event(be->hca->ctx, &e) == 0; n++) {
		struct be_async_event ev = { .type = e.event_type };

		event_object(be, &e, &ev);
		/* ack before the callback: it may destroy the object */
		ibv_ack_async_event(&e);
		if (ev.type == IBV_EVENT_GID_CHANGE && ev.handle)
			be_gids_recheck(be);
		be->async_events++;
		be->st->async_events++;
		if (!ev.handle)
			continue; /* another connection's, or gone */
		if (ev.obj == BE_OBJ_QP && (ev.type == IBV_EVENT_QP_FATAL ||
					    ev.type == IBV_EVENT_QP_REQ_ERR ||
					    ev.type == IBV_EVENT_QP_ACCESS_ERR))
			be->qp[ev.handle].state = IBV_QPS_ERR;
		if (be->async_events <= 16)
			log_info("host async event %s on %s %u",
				 ibv_event_type_str(e.event_type),
				 ev.obj == BE_OBJ_QP	? "QP"
				 : ev.obj == BE_OBJ_CQ	? "CQ"
				 : ev.obj == BE_OBJ_SRQ ? "SRQ"
							: "port",
				 ev.handle);
		if (be->ops->async_event)
			be->ops->async_event(be->fe, &ev);
	}
}

static int watch_async(struct be *be)
{
	int fd = be->hca->ctx->async_fd;
	int fl = fcntl(fd, F_GETFL);

	/* non-blocking: ibv_get_async_event() must never stall the loop */
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	if (be->env.watch_fd(be->env.loop_ctx, fd, async_ready, be) < 0) {
		log_warnx("cannot watch the host's async events: they are "
			  "not read for this connection");
		return 0;
	}
	be->async_watched = true;
	return 0;
}

/* ---- life cycle ---- */

static void free_all(struct be *be)
{
	uint32_t i;

	/* QPs before the SRQs, CQs and PDs they use. */
	for (i = 1; be->qp && i <= be->cfg.qp_handles; i++) {
		if (!be->qp[i].used)
			continue;
		if (be->qp[i].qp)
			ibv_destroy_qp(be->qp[i].qp);
		qp_free(be, i);
	}
	for (i = 1; be->srq && i <= be->cfg.srq_handles; i++) {
		if (!be->srq[i].used)
			continue;
		ibv_destroy_srq(be->srq[i].srq);
		srq_free(be, i);
	}
	if (be->ah && be->pd)
		be_ah_flush(be, 0);
	for (i = 1; be->mr && be->pd && i <= (uint32_t)be->attr.max_mr; i++)
		if (be->mr[i].used)
			be_mr_free(be, i);
	for (i = 1; be->cq && i <= (uint32_t)be->attr.max_cq; i++)
		if (be->cq[i].used)
			cq_free(be, i);
	for (i = 1; be->pd && i <= (uint32_t)be->attr.max_pd; i++)
		if (be->pd[i].used)
			ibv_dealloc_pd(be->pd[i].pd);
	if (be->pd)
		memset(be->pd, 0, (be->attr.max_pd + 1u) * sizeof(*be->pd));
	/* the guest is gone or reset: its addresses leave the host */
	release_gids(be);
}

void be_reset(struct be *be)
{
	free_all(be);
}

void be_destroy(struct be *be)
{
	if (!be)
		return;
	if (be->cfg.mux && be->cfg.mux->be == be)
		be->cfg.mux->be = NULL; /* MADs for us are dropped from now */
	if (be->cfg.gids)
		be->cfg.gids->watch_gone(be->cfg.gids_arg, be, NULL);
	if (be->async_events)
		log_info("%llu host async events on this guest's objects",
			 (unsigned long long)be->async_events);
	free_all(be);
	if (be->async_watched && be->env.unwatch_fd)
		be->env.unwatch_fd(be->env.loop_ctx, be->hca->ctx->async_fd);
	if (be->chan) {
		if (be->env.unwatch_fd)
			be->env.unwatch_fd(be->env.loop_ctx, be->chan->fd);
		ibv_destroy_comp_channel(be->chan);
	}
	free(be->pd);
	free(be->mr);
	free(be->cq);
	free(be->qp);
	free(be->srq);
	free(be->ah);
	free(be);
}

static int open_chan(struct be *be)
{
	int fl;

	be->chan = ibv_create_comp_channel(be->hca->ctx);
	if (!be->chan) {
		log_warn("ibv_create_comp_channel");
		return -(errno ? errno : EIO);
	}
	fl = fcntl(be->chan->fd, F_GETFL);
	if (fl < 0 || fcntl(be->chan->fd, F_SETFL, fl | O_NONBLOCK) < 0 ||
	    fcntl(be->chan->fd, F_SETFD, FD_CLOEXEC) < 0)
		return -errno;
	if (be->env.watch_fd(be->env.loop_ctx, be->chan->fd, be_chan_ready,
			     be) < 0) {
		ibv_destroy_comp_channel(be->chan);
		be->chan = NULL;
		return -EIO;
	}
	return 0;
}

static int alloc_tables(struct be *be)
{
	be->pd = calloc(be->attr.max_pd + 1u, sizeof(*be->pd));
	be->mr = calloc(be->attr.max_mr + 1u, sizeof(*be->mr));
	be->cq = calloc(be->attr.max_cq + 1u, sizeof(*be->cq));
	be->qp = calloc(be->cfg.qp_handles + 1u, sizeof(*be->qp));
	be->srq = calloc(be->cfg.srq_handles + 1u, sizeof(*be->srq));
	be->ah = calloc(be->attr.max_ah ? (size_t)be->attr.max_ah : 1,
			sizeof(*be->ah));
	if (!be->pd || !be->mr || !be->cq || !be->qp || !be->srq || !be->ah) {
		log_warnx("out of memory for the object tables (%d MRs, %d "
			  "PDs, %d AHs ...)",
			  be->attr.max_mr, be->attr.max_pd, be->attr.max_ah);
		return -ENOMEM;
	}
	return 0;
}

int be_create(const struct be_cfg *cfg, const struct dev_env *env,
	      const struct be_frontend_ops *ops, void *fe, struct be **ret_be)
{
	struct be *be;
	int ret;

	if (!cfg || !cfg->hca || !env || !env->watch_fd || !ops ||
	    !ops->completion)
		return -EINVAL;
	be = calloc(1, sizeof(*be));
	if (!be)
		return -ENOMEM;
	be->cfg = *cfg;
	be->hca = cfg->hca;
	be->env = *env;
	be->ops = ops;
	be->fe = fe;
	be->st = cfg->counters ? cfg->counters : &be->own_st;
	memset(be->guest_gid, 0xff, sizeof(be->guest_gid)); /* all empty */
	fill_attr(be);
	be->cfg.qp_handles = MIN(cfg->qp_handles ? cfg->qp_handles
						 : (uint32_t)be->attr.max_qp,
				 BE_MAX_HANDLES);
	be->cfg.srq_handles = MIN(cfg->srq_handles ? cfg->srq_handles
						   : (uint32_t)be->attr.max_srq,
				  BE_MAX_HANDLES);
	ret = alloc_tables(be);
	if (ret == 0)
		ret = open_chan(be);
	if (ret == 0)
		ret = watch_async(be);
	if (ret < 0) {
		be_destroy(be);
		return ret;
	}
	if (cfg->mux)
		cfg->mux->be = be; /* the one connected backend gets the MADs */
	if (cfg->gids)		   /* and the broker's word on its GIDs */
		cfg->gids->watch_gone(cfg->gids_arg, be, gid_gone);
	*ret_be = be;
	return 0;
}
