// SPDX-License-Identifier: MIT
/*
 * The PVRDMA transport of the guest verbs: vmw_pvrdma's kernel verbs and
 * rdma-core's provider (WQEs in SQ/RQ/SRQ rings in guest RAM, UAR
 * doorbells, CQ polling and arming) over guest/pvrdma_drv.c.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "guest/pvrdma_drv.h"
#include "guest/pvrdma_wqe.h"
#include "guest/verbs_transport.h"

#define PG PVRDMA_PAGE_SIZE
/* Where the CQ's ring state is: the driver and provider use ->rx. */
#define CQ_STATE_OFF offsetof(struct pvrdma_ring_state, rx)

/* The transport's state of a context (ctx->tp). */
struct pv_ctx {
	struct pvrdma_drv drv;
	uint32_t ctx_handle; /* CREATE_UC */
	struct pv_cq *cqs;   /* for CQ notifications */
	struct pv_qp *qps;   /* CQEs name QPs by handle */
};

/* A work queue of the provider: ring state plus WQE slots in guest RAM. */
struct pv_wq {
	struct pvrdma_ring *ring;
	uint8_t *wqes;
	uint32_t cnt, size, max_gs;
};

struct pv_cq {
	struct gv_cq *cq;
	uint32_t handle, cnt;
	uint8_t *buf; /* gv_alloc_buf(): state page, then CQEs */
	struct pvrdma_ring *ring;
	struct pvrdma_pdir pdir;
	unsigned long pending; /* notifications not yet taken */
	struct pv_cq *next;
};

struct pv_qp {
	struct gv_qp *qp;
	uint32_t handle;
	uint8_t *sbuf, *rbuf;
	struct pv_wq sq, rq;
	struct pvrdma_pdir pdir;
	struct pv_qp *next;
};

struct pv_srq {
	uint8_t *buf;
	struct pv_wq rq;
	struct pvrdma_pdir pdir;
};

struct pv_mr {
	struct pvrdma_pdir pdir;
	uint32_t handle;
};

static struct pv_ctx *pv(const struct gv_context *ctx)
{
	return ctx->tp;
}

static struct pvrdma_drv *drv_of(const struct gv_context *ctx)
{
	return &pv(ctx)->drv;
}

/* ---- commands ---- */

static int cmd(struct gv_context *ctx, union pvrdma_cmd_req *req, uint32_t code,
	       union pvrdma_cmd_resp *rsp)
{
	req->hdr.cmd = code;
	return pvrdma_drv_cmd(drv_of(ctx), req, rsp);
}

/* ---- device ---- */

static int page_get(void *arg, uint64_t *ret_gpa)
{
	return gv_pt_get(arg, ret_gpa);
}

static void page_put(void *arg, uint64_t gpa)
{
	gv_pt_put(arg, gpa);
}

static void fill_attr(struct gv_context *ctx)
{
	const struct pvrdma_device_caps *c = &drv_of(ctx)->caps;
	struct gv_device_attr *a = &ctx->attr;

	a->sys_image_guid = be64toh(c->sys_image_guid); /* __be64 caps */
	a->vendor_id = c->vendor_id;
	a->vendor_part_id = c->vendor_part_id;
	a->hw_ver = c->hw_ver;
	a->max_qp = c->max_qp;
	a->max_qp_wr = c->max_qp_wr;
	a->max_send_sge = c->max_sge;
	a->max_recv_sge = c->max_sge;
	a->max_cq = c->max_cq;
	a->max_cqe = c->max_cqe;
	a->max_mr = c->max_mr;
	a->max_pd = c->max_pd;
	a->max_ah = c->max_ah;
	a->max_srq = c->max_srq;
	a->max_srq_wr = c->max_srq_wr;
	a->max_srq_sge = c->max_srq_sge;
	a->max_qp_rd_atom = c->max_qp_rd_atom;
	a->max_qp_init_rd_atom = c->max_qp_init_rd_atom;
	a->atomic_cap = c->atomic_ops;
	a->max_pkeys = c->max_pkeys;
	a->gid_tbl_len =
		c->gid_tbl_len > 0xffff ? 0xffff : (uint16_t)c->gid_tbl_len;
	a->local_ca_ack_delay = c->local_ca_ack_delay;
	a->phys_port_cnt = c->phys_port_cnt;
}

/*
 * ibv_open_device() on vmw_pvrdma: the kernel's alloc_ucontext takes a UAR
 * page (index 1: 0 is the driver's) and sends CREATE_UC with its PFN.
 */
static int alloc_ucontext(struct gv_context *ctx)
{
	struct pvrdma_drv *drv = drv_of(ctx);
	const uint8_t *c = drv->vc.config + 0x10 + 4 * PVRDMA_PCI_RESOURCE_UAR;
	union pvrdma_cmd_req req = { 0 };
	union pvrdma_cmd_resp rsp;
	uint64_t base;
	uint32_t lo, hi;
	int r;

	memcpy(&lo, c, 4);
	memcpy(&hi, c + 4, 4);
	base = ((uint64_t)hi << 32 | lo) & ~0xfull;
	if (drv->version < PVRDMA_PPN64_VERSION)
		req.create_uc.pfn = (uint32_t)(base / PG + 1);
	else
		req.create_uc.pfn64 = base / PG + 1;
	r = cmd(ctx, &req, PVRDMA_CMD_CREATE_UC, &rsp);
	if (r)
		return r;
	pv(ctx)->ctx_handle = rsp.create_uc_resp.ctx_handle;
	drv->uar_index = 1;
	return 0;
}

static int pv_open(struct gv_context *ctx, const char *socket,
		   const struct gv_opts *o)
{
	struct pvrdma_pages pages = { page_get, page_put, ctx };
	struct pvrdma_drv_opts dopts = { .timeout_ms = ctx->timeout_ms };
	struct pv_ctx *p = calloc(1, sizeof(*p));
	uint64_t zero;
	int r;

	if (!p)
		return -ENOMEM;
	ctx->tp = p;
	pvrdma_drv_init(&p->drv, &pages);
	ctx->ram = &p->drv.ram;
	r = gv_layout_ram(ctx, o);
	/* GPA 0 is never handed out: a zero address means "none" */
	if (!r)
		r = guest_ram_alloc_in(ctx->ram, 0, PG, PG, &zero);
	if (!r)
		r = pvrdma_drv_probe(&p->drv, socket, &dopts);
	if (!r)
		r = alloc_ucontext(ctx);
	if (r) {
		pvrdma_drv_remove(&p->drv);
		free(p);
		ctx->tp = NULL;
		return r;
	}
	fill_attr(ctx);
	return 0;
}

struct vfio_user_client *gv_pvrdma_client(struct gv_context *ctx)
{
	return ctx->ops == &gv_pvrdma_ops && pv(ctx) ? &pv(ctx)->drv.vc : NULL;
}

static void pv_close(struct gv_context *ctx)
{
	struct pv_ctx *p = pv(ctx);
	union pvrdma_cmd_req req = { 0 };

	if (!p)
		return;
	if (p->drv.active) {
		req.destroy_uc.ctx_handle = p->ctx_handle;
		cmd(ctx, &req, PVRDMA_CMD_DESTROY_UC, NULL);
	}
	pvrdma_drv_remove(&p->drv);
	free(p);
	ctx->tp = NULL;
}

static int pv_query_port(struct gv_context *ctx,
			 struct virtio_rdma_port_attr *ret)
{
	union pvrdma_cmd_req req = { 0 };
	union pvrdma_cmd_resp rsp;
	int r;

	req.query_port.port_num = VIRTIO_RDMA_PORT;
	r = cmd(ctx, &req, PVRDMA_CMD_QUERY_PORT, &rsp);
	if (!r)
		pvrdma_port_attr_from_dev(&rsp.query_port_resp.attrs, ret);
	return r;
}

static int pv_query_pkey(struct gv_context *ctx, uint16_t index,
			 uint16_t *ret_pkey)
{
	union pvrdma_cmd_req req = { 0 };
	union pvrdma_cmd_resp rsp;
	int r;

	if (index > 0xff)
		return -EINVAL; /* the command has a u8 index */
	req.query_pkey.port_num = VIRTIO_RDMA_PORT;
	req.query_pkey.index = (uint8_t)index;
	r = cmd(ctx, &req, PVRDMA_CMD_QUERY_PKEY, &rsp);
	if (!r)
		*ret_pkey = rsp.query_pkey_resp.pkey;
	return r;
}

static int pv_add_gid(struct gv_context *ctx, uint16_t index,
		      const uint8_t gid[16], uint32_t gid_type)
{
	union pvrdma_cmd_req req = { 0 };

	/* ib_gid_type_to_pvrdma(): RoCE v2 (UDP encap) or else v1 */
	req.create_bind.gid_type = gid_type == VIRTIO_RDMA_GID_TYPE_ROCE_V2
					   ? PVRDMA_GID_TYPE_FLAG_ROCE_V2
					   : PVRDMA_GID_TYPE_FLAG_ROCE_V1;
	req.create_bind.mtu = 1024; /* ib_mtu_enum_to_int(IB_MTU_1024) */
	req.create_bind.vlan = 0xfff;
	req.create_bind.index = index;
	memcpy(req.create_bind.new_gid, gid, 16);
	return cmd(ctx, &req, PVRDMA_CMD_CREATE_BIND, NULL);
}

static int pv_del_gid(struct gv_context *ctx, uint16_t index)
{
	union pvrdma_cmd_req req = { 0 };

	req.destroy_bind.index = index;
	if (ctx->gid_type[index])
		memcpy(req.destroy_bind.dest_gid, ctx->gid[index], 16);
	return cmd(ctx, &req, PVRDMA_CMD_DESTROY_BIND, NULL);
}

/* ---- PD and MR ---- */

static int pv_alloc_pd(struct gv_context *ctx, uint32_t *ret_pdn)
{
	union pvrdma_cmd_req req = { 0 };
	union pvrdma_cmd_resp rsp;
	int r;

	req.create_pd.ctx_handle = pv(ctx)->ctx_handle;
	r = cmd(ctx, &req, PVRDMA_CMD_CREATE_PD, &rsp);
	if (!r)
		*ret_pdn = rsp.create_pd_resp.pd_handle;
	return r;
}

static int pv_dealloc_pd(struct gv_pd *pd)
{
	union pvrdma_cmd_req req = { 0 };

	req.destroy_pd.pd_handle = pd->pdn;
	return cmd(pd->ctx, &req, PVRDMA_CMD_DESTROY_PD, NULL);
}

/* The pages of [addr, addr + len) of a gv buffer: what ib_umem_get pins. */
static const uint64_t *buf_pages(struct gv_context *ctx, const void *addr,
				 size_t len, uint32_t *ret_n)
{
	struct gv_buf *b = gv_find_buf(ctx, addr, len);
	uintptr_t va = (uintptr_t)addr;

	if (!b)
		return NULL;
	*ret_n = (uint32_t)(((va & (PG - 1)) + len + PG - 1) / PG);
	return b->gpa + (va - (uintptr_t)b->addr) / PG;
}

static int pv_reg_mr(struct gv_mr *mr, struct gv_buf *b, uint32_t access)
{
	struct gv_context *ctx = mr->pd->ctx;
	union pvrdma_cmd_req req = { 0 };
	union pvrdma_cmd_resp rsp;
	const uint64_t *pages;
	struct pv_mr *m;
	uint32_t n;
	int r;

	(void)b;
	if (mr->length > drv_of(ctx)->caps.max_mr_size)
		return -EINVAL;
	pages = buf_pages(ctx, mr->addr, mr->length, &n);
	m = calloc(1, sizeof(*m));
	if (!pages || !m) {
		free(m);
		return pages ? -ENOMEM : -EINVAL;
	}
	r = pvrdma_pdir_build(drv_of(ctx), pages, n, &m->pdir);
	if (!r) {
		req.create_mr.start = (uintptr_t)mr->addr;
		req.create_mr.length = mr->length;
		req.create_mr.pd_handle = mr->pd->pdn;
		req.create_mr.access_flags = access; /* same bits */
		req.create_mr.nchunks = n;
		req.create_mr.pdir_dma = m->pdir.dir_gpa;
		r = cmd(ctx, &req, PVRDMA_CMD_CREATE_MR, &rsp);
	}
	if (r) {
		pvrdma_pdir_free(drv_of(ctx), &m->pdir);
		free(m);
		return r;
	}
	/* the driver keeps the directory for the MR's lifetime */
	mr->mrn = rsp.create_mr_resp.mr_handle;
	mr->lkey = rsp.create_mr_resp.lkey;
	mr->rkey = rsp.create_mr_resp.rkey;
	mr->tp = m;
	return 0;
}

static int pv_get_dma_mr(struct gv_mr *mr, uint32_t access)
{
	union pvrdma_cmd_req req = { 0 };
	union pvrdma_cmd_resp rsp;
	int r;

	if (access & ~VIRTIO_RDMA_ACCESS_LOCAL_WRITE)
		return -EOPNOTSUPP; /* pvrdma_get_dma_mr(): LOCAL_WRITE only */
	req.create_mr.pd_handle = mr->pd->pdn;
	req.create_mr.access_flags = access;
	req.create_mr.flags = PVRDMA_MR_FLAG_DMA;
	r = cmd(mr->pd->ctx, &req, PVRDMA_CMD_CREATE_MR, &rsp);
	if (r)
		return r;
	mr->mrn = rsp.create_mr_resp.mr_handle;
	mr->lkey = rsp.create_mr_resp.lkey;
	mr->rkey = rsp.create_mr_resp.rkey;
	return 0;
}

static int pv_dereg_mr(struct gv_mr *mr)
{
	struct gv_context *ctx = mr->pd->ctx;
	union pvrdma_cmd_req req = { 0 };
	struct pv_mr *m = mr->tp;
	int r;

	req.destroy_mr.mr_handle = mr->mrn;
	r = cmd(ctx, &req, PVRDMA_CMD_DESTROY_MR, NULL);
	if (r)
		return r;
	if (m) {
		pvrdma_pdir_free(drv_of(ctx), &m->pdir);
		free(m);
	}
	return 0;
}

/* ---- queue memory: a gv buffer, "pinned" into a page directory ---- */

static int queue_buf(struct gv_context *ctx, size_t len, uint8_t **ret)
{
	uint8_t *b = gv_alloc_buf(ctx, len, 0);

	if (!b)
		return -errno;
	memset(b, 0, len);
	*ret = b;
	return 0;
}

/* ---- completion queues ---- */

static struct pv_cq *cq_of(const struct gv_cq *cq)
{
	return cq->tp;
}

static void cq_release(struct gv_context *ctx, struct pv_cq *c)
{
	pvrdma_pdir_free(drv_of(ctx), &c->pdir);
	if (c->buf)
		gv_free_buf(ctx, c->buf);
	free(c);
}

static int cq_create_cmd(struct gv_context *ctx, struct pv_cq *c,
			 uint32_t npages)
{
	union pvrdma_cmd_req req = { 0 };
	union pvrdma_cmd_resp rsp;
	int r;

	req.create_cq.nchunks = npages;
	req.create_cq.ctx_handle = pv(ctx)->ctx_handle;
	req.create_cq.cqe = c->cnt;
	req.create_cq.pdir_dma = c->pdir.dir_gpa;
	r = cmd(ctx, &req, PVRDMA_CMD_CREATE_CQ, &rsp);
	if (r)
		return r;
	c->handle = rsp.create_cq_resp.cq_handle;
	/*
	 * The provider polls with the count the kernel got from the device;
	 * unlike it, refuse one that does not fit the ring it allocated.
	 */
	if (rsp.create_cq_resp.cqe > c->cnt || !rsp.create_cq_resp.cqe ||
	    (rsp.create_cq_resp.cqe & (rsp.create_cq_resp.cqe - 1)))
		return -EPROTO;
	c->cnt = rsp.create_cq_resp.cqe;
	return 0;
}

static int pv_create_cq(struct gv_context *ctx, uint32_t cqe,
			struct gv_cq **ret_cq)
{
	struct pv_cq *c = calloc(1, sizeof(*c));
	struct gv_cq *cq = calloc(1, sizeof(*cq));
	const uint64_t *pages;
	size_t len;
	uint32_t n = 0;
	int r = -ENOMEM;

	if (c && cq) {
		c->cnt = pvrdma_pow2(cqe);
		r = c->cnt > drv_of(ctx)->caps.max_cqe ? -EINVAL : 0;
	}
	len = gv_round_up(PG + (uint64_t)(c ? c->cnt : 0) *
					  sizeof(struct pvrdma_cqe),
			  PG);
	if (!r)
		r = queue_buf(ctx, len, &c->buf);
	if (!r) {
		pages = buf_pages(ctx, c->buf, len, &n);
		r = pvrdma_pdir_build(drv_of(ctx), pages, n, &c->pdir);
	}
	if (!r) {
		c->ring = (struct pvrdma_ring *)(c->buf + CQ_STATE_OFF);
		r = cq_create_cmd(ctx, c, n);
	}
	if (r) {
		if (c)
			cq_release(ctx, c);
		free(cq);
		return r;
	}
	cq->ctx = ctx;
	cq->cqn = c->handle;
	cq->cqe = c->cnt;
	cq->tp = c;
	c->cq = cq;
	c->next = pv(ctx)->cqs;
	pv(ctx)->cqs = c;
	*ret_cq = cq;
	return 0;
}

static int pv_destroy_cq(struct gv_cq *cq)
{
	struct gv_context *ctx = cq->ctx;
	union pvrdma_cmd_req req = { 0 };
	struct pv_cq *c = cq_of(cq);
	int r;

	req.destroy_cq.cq_handle = c->handle;
	r = cmd(ctx, &req, PVRDMA_CMD_DESTROY_CQ, NULL);
	if (r)
		return r;
	for (struct pv_cq **pp = &pv(ctx)->cqs; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	cq_release(ctx, c);
	free(cq);
	return 0;
}

static const struct pv_qp *qp_by_handle(const struct gv_context *ctx,
					uint32_t handle)
{
	for (const struct pv_qp *q = pv(ctx)->qps; q; q = q->next)
		if (q->handle == handle)
			return q;
	return NULL;
}

/* pvrdma_poll_one(): one CQE, or 0 when the ring is empty after a POLL. */
static int poll_one(struct gv_cq *cq, bool *tried, struct gv_wc *wc)
{
	struct pv_cq *c = cq_of(cq);
	const struct pv_qp *q;
	struct pvrdma_cqe e;
	uint32_t head;
	int r;

	for (;;) {
		r = pvrdma_ring_has_data(c->ring, c->cnt, &head);
		if (r < 0)
			return -EPROTO; /* the device wrote garbage indices */
		if (r)
			break;
		if (*tried)
			return 0;
		/* "pass down POLL to give the physical HCA a chance" */
		r = pvrdma_drv_doorbell(drv_of(cq->ctx), PVRDMA_UAR_CQ_OFFSET,
					c->handle | PVRDMA_UAR_CQ_POLL);
		if (r)
			return r;
		*tried = true;
	}
	/* one copy out of shared memory, then decode the copy */
	memcpy(&e, c->buf + PG + (size_t)head * sizeof(e), sizeof(e));
	q = qp_by_handle(cq->ctx, (uint32_t)(e.qp & 0xffff));
	if (!q)
		return -EPROTO; /* the provider: CQ_POLL_ERR */
	pvrdma_decode_cqe(&e, q->qp->qp_num, wc);
	pvrdma_ring_inc(&c->ring->cons_head, c->cnt);
	return 1;
}

static int pv_poll_cq(struct gv_cq *cq, int n, struct gv_wc *wc)
{
	bool tried = false;
	int got = 0, r;

	while (got < n) {
		r = poll_one(cq, &tried, &wc[got]);
		if (r < 0)
			return got ? got : r;
		if (!r)
			break;
		got++;
	}
	return got;
}

static int pv_req_notify_cq(struct gv_cq *cq, bool solicited_only)
{
	uint32_t v = cq_of(cq)->handle;

	v |= solicited_only ? PVRDMA_UAR_CQ_ARM_SOL : PVRDMA_UAR_CQ_ARM;
	return pvrdma_drv_doorbell(drv_of(cq->ctx), PVRDMA_UAR_CQ_OFFSET, v);
}

static void note_cq_event(void *arg, uint32_t handle)
{
	struct gv_context *ctx = arg;

	/* the driver: cq_tbl[handle % max_cq]; unknown handles are dropped */
	for (struct pv_cq *c = pv(ctx)->cqs; c; c = c->next)
		if (c->handle == handle)
			c->pending++;
}

static int pv_get_cq_event(struct gv_cq *cq, int timeout_ms)
{
	struct pv_cq *c = cq_of(cq);
	int r;

	/*
	 * An interrupt may find the ring already drained (its entry taken
	 * with an earlier one's): wait again, within the caller's time.
	 */
	while (!c->pending) {
		r = pvrdma_drv_cq_notifications(drv_of(cq->ctx), timeout_ms,
						note_cq_event, cq->ctx);
		if (r < 0)
			return r;
	}
	c->pending--;
	return 0;
}

/* ---- work queues ---- */

static void wq_reset(struct pv_wq *wq)
{
	if (!wq->ring)
		return;
	__atomic_store_n(&wq->ring->prod_tail, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&wq->ring->cons_head, 0, __ATOMIC_RELEASE);
}

static void wq_init(struct pv_wq *wq, uint8_t *ring, uint8_t *wqes,
		    uint32_t cnt, uint32_t size, uint32_t max_gs)
{
	wq->ring = (struct pvrdma_ring *)ring;
	wq->wqes = wqes;
	wq->cnt = cnt;
	wq->size = size;
	wq->max_gs = max_gs;
	wq_reset(wq);
}

/* The next free slot, or -ENOMEM when full (-EINVAL: broken indices). */
static int wq_slot(struct pv_wq *wq, uint8_t **ret)
{
	uint32_t tail;
	int r = pvrdma_ring_has_space(wq->ring, wq->cnt, &tail);

	if (r < 0)
		return -EINVAL;
	if (!r)
		return -ENOMEM;
	*ret = wq->wqes + (size_t)tail * wq->size;
	return 0;
}

static int post_recv_wq(struct gv_context *ctx, struct pv_wq *wq,
			uint32_t bell_off, uint32_t bell, struct gv_recv_wr *wr,
			struct gv_recv_wr **bad)
{
	int r = 0, n = 0;

	for (; wr; wr = wr->next, n++) {
		uint8_t *slot;

		r = wq_slot(wq, &slot);
		if (!r)
			r = pvrdma_encode_recv(wr, wq->max_gs, slot, wq->size);
		if (r)
			break;
		__atomic_thread_fence(__ATOMIC_RELEASE);
		pvrdma_ring_inc(&wq->ring->prod_tail, wq->cnt);
	}
	if (r && bad)
		*bad = wr;
	if (n) {
		int d = pvrdma_drv_doorbell(drv_of(ctx), bell_off, bell);

		if (!r)
			r = d;
	}
	return r;
}

/* ---- queue pairs ---- */

static struct pv_qp *qp_of(const struct gv_qp *qp)
{
	return qp->tp;
}

static void qp_release(struct gv_context *ctx, struct pv_qp *q)
{
	pvrdma_pdir_free(drv_of(ctx), &q->pdir);
	if (q->sbuf)
		gv_free_buf(ctx, q->sbuf);
	if (q->rbuf)
		gv_free_buf(ctx, q->rbuf);
	free(q);
}

/* pvrdma_alloc_qp_buf() and the kernel's pinning of [sbuf][rbuf]. */
static int qp_bufs(struct gv_context *ctx, struct pv_qp *q,
		   const struct gv_qp_init_attr *a, uint32_t *ret_nsend,
		   uint32_t *ret_total)
{
	uint32_t scnt = pvrdma_pow2(a->max_send_wr);
	uint32_t sgs = pvrdma_pow2(a->max_send_sge);
	uint32_t rcnt = a->srq ? 0 : pvrdma_pow2(a->max_recv_wr);
	uint32_t rgs = a->srq ? 0 : pvrdma_pow2(a->max_recv_sge);
	uint32_t ssz = pvrdma_sq_wqe_size(sgs), rsz = pvrdma_rq_wqe_size(rgs);
	size_t slen = gv_round_up(PG + (uint64_t)scnt * ssz, PG);
	size_t rlen = gv_round_up((uint64_t)rcnt * rsz, PG);
	uint64_t *pages;
	const uint64_t *sp, *rp = NULL;
	uint32_t ns = 0, nr = 0;
	int r;

	r = queue_buf(ctx, slen, &q->sbuf);
	if (!r && rcnt)
		r = queue_buf(ctx, rlen, &q->rbuf);
	if (r)
		return r;
	wq_init(&q->sq, q->sbuf, q->sbuf + PG, scnt, ssz, sgs);
	if (rcnt)
		wq_init(&q->rq, q->sbuf + sizeof(struct pvrdma_ring), q->rbuf,
			rcnt, rsz, rgs);
	sp = buf_pages(ctx, q->sbuf, slen, &ns);
	if (rcnt)
		rp = buf_pages(ctx, q->rbuf, rlen, &nr);
	pages = calloc((size_t)ns + nr, sizeof(*pages));
	if (!pages)
		return -ENOMEM;
	memcpy(pages, sp, ns * sizeof(*pages));
	if (nr)
		memcpy(pages + ns, rp, nr * sizeof(*pages));
	r = pvrdma_pdir_build(drv_of(ctx), pages, ns + nr, &q->pdir);
	free(pages);
	*ret_nsend = ns;
	*ret_total = ns + nr;
	return r;
}

static int qp_create_cmd(struct gv_pd *pd, struct pv_qp *q,
			 const struct gv_qp_init_attr *a, uint32_t nsend,
			 uint32_t total, uint32_t *ret_qpn)
{
	struct pvrdma_drv *drv = drv_of(pd->ctx);
	union pvrdma_cmd_req req = { 0 };
	struct pvrdma_cmd_create_qp *c = &req.create_qp;
	union pvrdma_cmd_resp rsp;
	int r;

	if (total > 0xffff)
		return -EINVAL; /* the command's u16 chunk counts */
	c->pd_handle = pd->pdn;
	c->send_cq_handle = cq_of(a->send_cq)->handle;
	c->recv_cq_handle = cq_of(a->recv_cq)->handle;
	c->srq_handle = a->srq ? a->srq->handle : 0;
	c->max_send_wr = q->sq.cnt;
	c->max_recv_wr = q->rq.cnt;
	c->max_send_sge = q->sq.max_gs;
	c->max_recv_sge = q->rq.max_gs;
	c->max_inline_data = 0; /* "not supported" */
	c->sq_sig_all = a->sq_sig_all;
	c->qp_type = (uint8_t)pvrdma_qp_type(a->qp_type);
	c->is_srq = a->srq != NULL;
	c->lkey = 0;
	c->access_flags = PVRDMA_ACCESS_LOCAL_WRITE;
	c->total_chunks = (uint16_t)total;
	/* the send pages less the ring-state page, as the driver says */
	c->send_chunks = (uint16_t)(nsend - 1);
	c->pdir_dma = q->pdir.dir_gpa;
	r = cmd(pd->ctx, &req, PVRDMA_CMD_CREATE_QP, &rsp);
	if (r)
		return r;
	if (drv->version >= PVRDMA_QPHANDLE_VERSION) {
		*ret_qpn = rsp.create_qp_resp_v2.qpn;
		q->handle = rsp.create_qp_resp_v2.qp_handle;
	} else {
		*ret_qpn = rsp.create_qp_resp.qpn;
		q->handle = rsp.create_qp_resp.qpn;
	}
	return 0;
}

static int pv_create_qp(struct gv_pd *pd, const struct gv_qp_init_attr *attr,
			struct gv_qp **ret_qp)
{
	struct gv_context *ctx = pd->ctx;
	struct pv_qp *q;
	struct gv_qp *qp;
	uint32_t ns = 0, total = 0, qpn = 0;
	int r;

	r = pvrdma_qp_type(attr->qp_type);
	if (r < 0)
		return r;
	if (attr->srq && !drv_of(ctx)->caps.max_srq)
		return -EINVAL;
	q = calloc(1, sizeof(*q));
	qp = calloc(1, sizeof(*qp));
	r = q && qp ? qp_bufs(ctx, q, attr, &ns, &total) : -ENOMEM;
	if (!r)
		r = qp_create_cmd(pd, q, attr, ns, total, &qpn);
	if (r) {
		if (q)
			qp_release(ctx, q);
		free(qp);
		return r;
	}
	qp->ctx = ctx;
	qp->pd = pd;
	qp->qp_num = qpn;
	qp->qp_type = attr->qp_type;
	qp->init = *attr;
	qp->tp = q;
	q->qp = qp;
	q->next = pv(ctx)->qps;
	pv(ctx)->qps = q;
	*ret_qp = qp;
	return 0;
}

static int pv_modify_qp(struct gv_qp *qp, const struct virtio_rdma_qp_attr *a,
			uint32_t mask)
{
	union pvrdma_cmd_req req = { 0 };
	union pvrdma_cmd_resp rsp;
	struct pv_qp *q = qp_of(qp);
	int r;

	if (!mask)
		return 0; /* the provider's sanity check */
	req.modify_qp.qp_handle = q->handle;
	req.modify_qp.attr_mask = mask & PVRDMA_QP_ATTR_MASK_ALL;
	pvrdma_qp_attr_to_dev(a, &req.modify_qp.attrs);
	r = cmd(qp->ctx, &req, PVRDMA_CMD_MODIFY_QP, &rsp);
	if (!r && (mask & VIRTIO_RDMA_QP_STATE) &&
	    a->qp_state == VIRTIO_RDMA_QPS_RESET) {
		/* pvrdma_init_qp_queue(): the rings start over */
		wq_reset(&q->sq);
		wq_reset(&q->rq);
	}
	return r;
}

static int pv_query_qp(struct gv_qp *qp, uint32_t mask,
		       struct virtio_rdma_qp_attr *ret)
{
	union pvrdma_cmd_req req = { 0 };
	union pvrdma_cmd_resp rsp;
	int r;

	req.query_qp.qp_handle = qp_of(qp)->handle;
	req.query_qp.attr_mask = mask & PVRDMA_QP_ATTR_MASK_ALL;
	r = cmd(qp->ctx, &req, PVRDMA_CMD_QUERY_QP, &rsp);
	if (!r)
		pvrdma_qp_attr_from_dev(&rsp.query_qp_resp.attrs, ret);
	return r;
}

static int pv_destroy_qp(struct gv_qp *qp)
{
	struct gv_context *ctx = qp->ctx;
	union pvrdma_cmd_req req = { 0 };
	union pvrdma_cmd_resp rsp;
	struct pv_qp *q = qp_of(qp);
	int r;

	req.destroy_qp.qp_handle = q->handle;
	r = cmd(ctx, &req, PVRDMA_CMD_DESTROY_QP, &rsp);
	if (r)
		return r;
	for (struct pv_qp **pp = &pv(ctx)->qps; *pp; pp = &(*pp)->next)
		if (*pp == q) {
			*pp = q->next;
			break;
		}
	qp_release(ctx, q);
	free(qp);
	return 0;
}

static int pv_post_send(struct gv_qp *qp, struct gv_send_wr *wr,
			struct gv_send_wr **bad)
{
	struct pv_qp *q = qp_of(qp);
	int r = 0, n = 0;

	for (; wr; wr = wr->next, n++) {
		const struct pvrdma_av *av = NULL;
		struct pvrdma_av ud_av;
		uint8_t *slot;

		if ((qp->qp_type == VIRTIO_RDMA_QPT_UD ||
		     qp->qp_type == VIRTIO_RDMA_QPT_GSI) &&
		    wr->wr.ud.ah) {
			pvrdma_fill_av(&wr->wr.ud.ah->attr,
				       wr->wr.ud.ah->pd->pdn, &ud_av);
			av = &ud_av;
		}
		r = wq_slot(&q->sq, &slot);
		if (!r)
			r = pvrdma_encode_send(wr, qp->qp_type, av,
					       q->sq.max_gs, slot, q->sq.size);
		if (r)
			break;
		__atomic_thread_fence(__ATOMIC_RELEASE);
		pvrdma_ring_inc(&q->sq.ring->prod_tail, q->sq.cnt);
	}
	if (r && bad)
		*bad = wr;
	if (n) {
		int d = pvrdma_drv_doorbell(drv_of(qp->ctx),
					    PVRDMA_UAR_QP_OFFSET,
					    PVRDMA_UAR_QP_SEND | q->handle);

		if (!r)
			r = d;
	}
	return r;
}

static int pv_post_recv(struct gv_qp *qp, struct gv_recv_wr *wr,
			struct gv_recv_wr **bad)
{
	struct pv_qp *q = qp_of(qp);

	if (!q->rq.cnt)
		return -EINVAL; /* a QP on an SRQ has no receive queue */
	return post_recv_wq(qp->ctx, &q->rq, PVRDMA_UAR_QP_OFFSET,
			    PVRDMA_UAR_QP_RECV | q->handle, wr, bad);
}

/* ---- shared receive queues ---- */

static int pv_create_srq(struct gv_pd *pd, uint32_t max_wr, uint32_t max_sge,
			 struct gv_srq **ret_srq)
{
	struct gv_context *ctx = pd->ctx;
	const struct pvrdma_device_caps *caps = &drv_of(ctx)->caps;
	uint32_t cnt = pvrdma_pow2(max_wr), gs = pvrdma_pow2(max_sge);
	uint32_t size = pvrdma_rq_wqe_size(gs), n = 0;
	union pvrdma_cmd_req req = { 0 };
	union pvrdma_cmd_resp rsp;
	struct pv_srq *s;
	struct gv_srq *srq;
	size_t len;
	int r;

	if (cnt > caps->max_srq_wr || gs > caps->max_srq_sge)
		return -EINVAL;
	/* pvrdma_alloc_srq_buf(): a state page, then twice the WQEs */
	len = PG + 2 * gv_round_up((uint64_t)cnt * size, PG);
	s = calloc(1, sizeof(*s));
	srq = calloc(1, sizeof(*srq));
	r = s && srq ? queue_buf(ctx, len, &s->buf) : -ENOMEM;
	if (!r) {
		const uint64_t *pages = buf_pages(ctx, s->buf, len, &n);

		wq_init(&s->rq, s->buf + PVRDMA_RING_STATE_SRQ_OFFSET,
			s->buf + PG, cnt, size, gs);
		r = pvrdma_pdir_build(drv_of(ctx), pages, n, &s->pdir);
	}
	if (!r) {
		req.create_srq.srq_type = 0; /* IB_SRQT_BASIC */
		req.create_srq.nchunks = n;
		req.create_srq.pd_handle = pd->pdn;
		req.create_srq.attrs.max_wr = cnt;
		req.create_srq.attrs.max_sge = gs;
		req.create_srq.pdir_dma = s->pdir.dir_gpa;
		r = cmd(ctx, &req, PVRDMA_CMD_CREATE_SRQ, &rsp);
	}
	if (r) {
		if (s) {
			pvrdma_pdir_free(drv_of(ctx), &s->pdir);
			if (s->buf)
				gv_free_buf(ctx, s->buf);
		}
		free(s);
		free(srq);
		return r;
	}
	srq->ctx = ctx;
	srq->pd = pd;
	srq->handle = rsp.create_srq_resp.srqn;
	srq->max_wr = cnt;
	srq->max_sge = gs;
	srq->tp = s;
	*ret_srq = srq;
	return 0;
}

static int pv_destroy_srq(struct gv_srq *srq)
{
	struct gv_context *ctx = srq->ctx;
	union pvrdma_cmd_req req = { 0 };
	union pvrdma_cmd_resp rsp;
	struct pv_srq *s = srq->tp;
	int r;

	req.destroy_srq.srq_handle = srq->handle;
	r = cmd(ctx, &req, PVRDMA_CMD_DESTROY_SRQ, &rsp);
	if (r)
		return r;
	pvrdma_pdir_free(drv_of(ctx), &s->pdir);
	gv_free_buf(ctx, s->buf);
	free(s);
	free(srq);
	return 0;
}

static int pv_post_srq_recv(struct gv_srq *srq, struct gv_recv_wr *wr,
			    struct gv_recv_wr **bad)
{
	struct pv_srq *s = srq->tp;

	return post_recv_wq(srq->ctx, &s->rq, PVRDMA_UAR_SRQ_OFFSET,
			    PVRDMA_UAR_SRQ_RECV | srq->handle, wr, bad);
}

/* ---- address handles: the AV is built at post time from ah->attr ---- */

static int pv_create_ah(struct gv_ah *ah)
{
	const uint8_t *g = ah->attr.dgid;

	/* pvrdma_create_ah(): RoCE, GRH, no multicast destination */
	if (g[0] == 0xff)
		return -EINVAL;
	return 0;
}

static void pv_describe(struct gv_context *ctx, FILE *f)
{
	const struct pvrdma_drv *d = drv_of(ctx);
	const struct pvrdma_device_caps *c = &d->caps;

	fprintf(f,
		"%-20s version %u, %u MSI-X vectors, UAR page %u, "
		"context %u\n",
		"pvrdma", d->version, d->nvec, d->uar_index,
		pv(ctx)->ctx_handle);
	fprintf(f, "%-20s mode %u, gid_types %#x, max_uar %u, fw %llu\n", "",
		c->mode, c->gid_types, c->max_uar,
		(unsigned long long)c->fw_ver);
	fprintf(f,
		"%-20s %lu commands, %lu async events, %lu CQ "
		"notifications\n",
		"", d->commands, d->async_events, d->cq_notifications);
}

const struct gv_transport_ops gv_pvrdma_ops = {
	.name = "pvrdma",
	.describe = pv_describe,
	.open = pv_open,
	.close = pv_close,
	.query_port = pv_query_port,
	.query_pkey = pv_query_pkey,
	.add_gid = pv_add_gid,
	.del_gid = pv_del_gid,
	.alloc_pd = pv_alloc_pd,
	.dealloc_pd = pv_dealloc_pd,
	.reg_mr = pv_reg_mr,
	.get_dma_mr = pv_get_dma_mr,
	.dereg_mr = pv_dereg_mr,
	.create_cq = pv_create_cq,
	.destroy_cq = pv_destroy_cq,
	.poll_cq = pv_poll_cq,
	.req_notify_cq = pv_req_notify_cq,
	.get_cq_event = pv_get_cq_event,
	.create_qp = pv_create_qp,
	.modify_qp = pv_modify_qp,
	.query_qp = pv_query_qp,
	.destroy_qp = pv_destroy_qp,
	.create_srq = pv_create_srq,
	.destroy_srq = pv_destroy_srq,
	.create_ah = pv_create_ah,
	.post_send = pv_post_send,
	.post_recv = pv_post_recv,
	.post_srq_recv = pv_post_srq_recv,
};
