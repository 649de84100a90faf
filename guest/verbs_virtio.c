// SPDX-License-Identifier: MIT
/*
 * The virtio-rdma transport of the guest verbs: a Profile A driver +
 * provider (rdmagate's deltas) over guest_dev, i.e. vhost-user.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "guest/verbs.h"
#include "guest/verbs_transport.h"

#define PAGE	 VIRTIO_RDMA_PAGE_SIZE
#define RING	 VIRTIO_RDMA_RING_SIZE
#define CQE_SIZE sizeof(struct virtio_rdma_cqe)
#define SQ_HDR	 sizeof(struct virtio_rdma_sq_wqe)
#define RQ_HDR	 sizeof(struct virtio_rdma_rq_wqe)
#define SGE_SIZE sizeof(struct virtio_rdma_sge)
#define DRV_FEATURES                                                           \
	((1ull << GUEST_F_VERSION_1) | (1ull << GUEST_F_RING_INDIRECT_DESC) |  \
	 (1ull << GUEST_F_RING_EVENT_IDX))

/* The control page: header, request, status, response. */
#define CMD_HDR_OFF 0
#define CMD_REQ_OFF 64
#define CMD_ST_OFF  1536
#define CMD_RSP_OFF 1600
#define CMD_MAX	    1024 /* request or response bytes */

/* ---- control queue ---- */

int gv_command(struct gv_context *ctx, uint8_t code, const void *req,
	       uint32_t req_len, void *rsp, uint32_t rsp_len)
{
	struct guest_sg out[2], in[2];
	unsigned int nout = 0, nin = 0;
	uint32_t len;
	uint8_t status;
	int r;

	if (req_len > CMD_MAX || rsp_len > CMD_MAX)
		return -EINVAL;
	ctx->cmd[CMD_HDR_OFF] = code;
	out[nout++] = (struct guest_sg){ ctx->cmd_gpa + CMD_HDR_OFF, 1 };
	if (req_len) {
		memcpy(ctx->cmd + CMD_REQ_OFF, req, req_len);
		out[nout++] = (struct guest_sg){ ctx->cmd_gpa + CMD_REQ_OFF,
						 req_len };
	}
	ctx->cmd[CMD_ST_OFF] = 0xff; /* a device that writes nothing fails */
	in[nin++] = (struct guest_sg){ ctx->cmd_gpa + CMD_ST_OFF, 1 };
	if (rsp_len) {
		memset(ctx->cmd + CMD_RSP_OFF, 0, rsp_len);
		in[nin++] = (struct guest_sg){ ctx->cmd_gpa + CMD_RSP_OFF,
					       rsp_len };
	}
	ctx->commands++;
	r = guest_dev_exchange(
		&ctx->dev, ctx->ctrl, out, nout, in, nin, ctx->indirect,
		ctx->timeout_ms > GUEST_CMD_TIMEOUT_MS ? ctx->timeout_ms
						       : GUEST_CMD_TIMEOUT_MS,
		&len);
	if (r)
		return r;
	status = __atomic_load_n(&ctx->cmd[CMD_ST_OFF], __ATOMIC_ACQUIRE);
	if (status != VIRTIO_RDMA_STATUS_OK)
		return -(int)status;
	if (len < 1 + rsp_len)
		return -EPROTO; /* claimed success, answered short */
	if (rsp_len)
		memcpy(rsp, ctx->cmd + CMD_RSP_OFF, rsp_len);
	return 0;
}

/* ---- device ---- */

static int check_config(struct gv_context *ctx)
{
	const struct virtio_rdma_config *c = &ctx->cfg;
	uint64_t nvq;

	if (ctx->dev.vc.config_size != sizeof(*c))
		return -EPROTO;
	memcpy(&ctx->cfg, ctx->dev.vc.config, sizeof(*c));
	if (c->rg_magic != RDMAGATE_VIRTIO_RDMA_MAGIC ||
	    c->rg_abi_version < RDMAGATE_VIRTIO_RDMA_ABI_VERSION)
		return -EPROTO;
	nvq = virtio_rdma_num_vqs(c->max_cq, c->rg_num_slots);
	if (!c->max_cq || !c->rg_num_slots || nvq > GUEST_DEV_MAX_QUEUES ||
	    (ctx->dev.vc.queue_num && nvq > ctx->dev.vc.queue_num))
		return -EPROTO;
	return 0;
}

static int bring_up(struct gv_context *ctx, const struct gv_opts *o)
{
	struct guest_dev *d = &ctx->dev;
	int r;

	r = guest_dev_start(d, DRV_FEATURES);
	if (r)
		return r;
	ctx->indirect = d->vc.features & (1ull << GUEST_F_RING_INDIRECT_DESC);
	r = guest_ram_alloc_in(&d->ram, 0, PAGE, PAGE, &ctx->cmd_gpa);
	if (r)
		return r;
	ctx->cmd = guest_ram_ptr(&d->ram, ctx->cmd_gpa, PAGE);
	r = guest_dev_add_queue(d, VIRTIO_RDMA_CTRL_VQ, RING, &ctx->ctrl);
	if (r)
		return r;
	/* the guest kernel polls its control queue */
	guest_vq_set_no_interrupt(ctx->ctrl, !o->ctrl_irq);
	return guest_dev_driver_ok(d);
}

static void fill_attr(struct gv_context *ctx)
{
	const struct virtio_rdma_config *c = &ctx->cfg;
	struct gv_device_attr *a = &ctx->attr;

	a->sys_image_guid = c->sys_image_guid;
	a->vendor_id = c->vendor_id;
	a->vendor_part_id = c->vendor_part_id;
	a->hw_ver = c->hw_ver;
	a->max_qp = c->max_qp;
	a->max_qp_wr = c->max_qp_wr;
	a->max_send_sge = c->max_send_sge;
	a->max_recv_sge = c->max_recv_sge;
	a->max_cq = c->max_cq;
	a->max_cqe = c->max_cqe;
	a->max_mr = c->max_mr;
	a->max_pd = c->max_pd;
	a->max_ah = c->max_ah;
	a->max_srq = c->rg_max_srq;
	a->max_srq_wr = c->rg_max_srq_wr;
	a->max_srq_sge = c->rg_max_srq_sge;
	a->max_qp_rd_atom = c->max_qp_rd_atom;
	a->max_qp_init_rd_atom = c->max_qp_init_rd_atom;
	a->atomic_cap = c->atomic_cap;
	a->max_pkeys = c->max_pkeys;
	a->gid_tbl_len = VIRTIO_RDMA_GID_TBL_LEN;
	a->local_ca_ack_delay = c->local_ca_ack_delay;
	a->phys_port_cnt = (uint8_t)c->phys_port_cnt;
}

static int vr_open(struct gv_context *ctx, const char *socket,
		   const struct gv_opts *o)
{
	struct vhost_client_opts vo = {
		.protocol_features = VHOST_CLIENT_PROTOCOL_FEATURES,
		.config_size = sizeof(struct virtio_rdma_config),
		.timeout_ms = ctx->timeout_ms,
	};
	int r;

	guest_dev_init(&ctx->dev);
	ctx->ram = &ctx->dev.ram;
	r = guest_dev_connect(&ctx->dev, socket, &vo);
	if (!r)
		r = check_config(ctx);
	if (!r)
		r = gv_layout_ram(ctx, o);
	if (!r)
		r = bring_up(ctx, o);
	if (r) {
		guest_dev_release(&ctx->dev);
		return r;
	}
	fill_attr(ctx);
	return 0;
}

static void vr_close(struct gv_context *ctx)
{
	guest_dev_stop(&ctx->dev); /* best effort: the peer may be gone */
	guest_dev_release(&ctx->dev);
}

static int vr_query_port(struct gv_context *ctx,
			 struct virtio_rdma_port_attr *ret)
{
	struct virtio_rdma_cmd_query_port q = { .port = VIRTIO_RDMA_PORT };

	return gv_command(ctx, VIRTIO_RDMA_CMD_QUERY_PORT, &q, sizeof(q), ret,
			  sizeof(*ret));
}

static int vr_query_pkey(struct gv_context *ctx, uint16_t index,
			 uint16_t *ret_pkey)
{
	struct virtio_rdma_cmd_query_pkey q = { .port = VIRTIO_RDMA_PORT,
						.index = index };
	struct virtio_rdma_rsp_query_pkey rsp;
	int r = gv_command(ctx, VIRTIO_RDMA_CMD_QUERY_PKEY, &q, sizeof(q), &rsp,
			   sizeof(rsp));

	if (!r)
		*ret_pkey = rsp.pkey;
	return r;
}

static int vr_add_gid(struct gv_context *ctx, uint16_t index,
		      const uint8_t gid[16], uint32_t gid_type)
{
	struct virtio_rdma_cmd_add_gid q = { .gid_type = gid_type,
					     .index = index,
					     .port_num = VIRTIO_RDMA_PORT };

	memcpy(q.gid, gid, 16);
	return gv_command(ctx, VIRTIO_RDMA_CMD_ADD_GID, &q, sizeof(q), NULL, 0);
}

static int vr_del_gid(struct gv_context *ctx, uint16_t index)
{
	struct virtio_rdma_cmd_del_gid q = { .index = index,
					     .port_num = VIRTIO_RDMA_PORT };

	return gv_command(ctx, VIRTIO_RDMA_CMD_DEL_GID, &q, sizeof(q), NULL, 0);
}

/* ---- protection domains and memory regions ---- */

static int vr_alloc_pd(struct gv_context *ctx, uint32_t *ret_pdn)
{
	struct virtio_rdma_rsp_create_pd rsp;
	int r = gv_command(ctx, VIRTIO_RDMA_CMD_CREATE_PD, NULL, 0, &rsp,
			   sizeof(rsp));

	if (!r)
		*ret_pdn = rsp.pdn;
	return r;
}

/* Every DESTROY_* and DEREG_MR request is the object's one 32-bit handle. */
_Static_assert(sizeof(struct virtio_rdma_cmd_destroy_pd) == 4, "one handle");
_Static_assert(sizeof(struct virtio_rdma_cmd_dereg_mr) == 4, "one handle");
_Static_assert(sizeof(struct virtio_rdma_cmd_destroy_cq) == 4, "one handle");
_Static_assert(sizeof(struct virtio_rdma_cmd_destroy_qp) == 4, "one handle");
_Static_assert(sizeof(struct virtio_rdma_cmd_srq_handle) == 4, "one handle");

static int destroy_cmd(struct gv_context *ctx, uint32_t cmd, uint32_t handle)
{
	return gv_command(ctx, cmd, &handle, sizeof(handle), NULL, 0);
}

static int vr_dealloc_pd(struct gv_pd *pd)
{
	return destroy_cmd(pd->ctx, VIRTIO_RDMA_CMD_DESTROY_PD, pd->pdn);
}

int gv_build_page_table(struct guest_ram *ram, uint64_t l1, const uint64_t *l2,
			const uint64_t *pages, uint32_t npages)
{
	uint32_t nl2 =
		(npages + VIRTIO_RDMA_PT_ENTRIES - 1) / VIRTIO_RDMA_PT_ENTRIES;
	uint64_t *top = guest_ram_ptr(ram, l1, PAGE);

	if (!npages || npages > VIRTIO_RDMA_MR_MAX_PAGES || !top)
		return -EINVAL;
	for (uint32_t i = 0; i < nl2; i++) {
		uint64_t *e = guest_ram_ptr(ram, l2[i], PAGE);
		uint32_t first = i * VIRTIO_RDMA_PT_ENTRIES;
		uint32_t n = npages - first;

		if (!e)
			return -EINVAL;
		if (n > VIRTIO_RDMA_PT_ENTRIES)
			n = VIRTIO_RDMA_PT_ENTRIES;
		top[i] = l2[i];
		memcpy(e, pages + first, n * sizeof(*e));
	}
	return 0;
}

struct mr_pt {
	uint64_t l1;
	uint64_t l2[VIRTIO_RDMA_PT_ENTRIES];
	uint32_t nl2, got;
};

static void mr_pt_release(struct gv_context *ctx, struct mr_pt *pt)
{
	if (pt->got)
		gv_pt_put(ctx, pt->l1);
	for (uint32_t i = 0; i + 1 < pt->got; i++)
		gv_pt_put(ctx, pt->l2[i]);
}

static int mr_pt_alloc(struct gv_context *ctx, struct mr_pt *pt,
		       uint32_t npages)
{
	int r;

	pt->nl2 =
		(npages + VIRTIO_RDMA_PT_ENTRIES - 1) / VIRTIO_RDMA_PT_ENTRIES;
	r = gv_pt_get(ctx, &pt->l1);
	if (r)
		return r;
	pt->got = 1;
	for (uint32_t i = 0; i < pt->nl2; i++) {
		r = gv_pt_get(ctx, &pt->l2[i]);
		if (r)
			return r;
		pt->got++;
	}
	return 0;
}

static void set_mr(struct gv_mr *mr, const struct virtio_rdma_rsp_mr *rsp)
{
	mr->mrn = rsp->mrn;
	mr->lkey = rsp->lkey;
	mr->rkey = rsp->rkey;
}

static int vr_reg_mr(struct gv_mr *mr, struct gv_buf *b, uint32_t access)
{
	struct gv_context *ctx = mr->pd->ctx;
	struct virtio_rdma_cmd_reg_user_mr q = { 0 };
	struct virtio_rdma_rsp_mr rsp;
	struct mr_pt pt = { 0 };
	uint64_t va = (uintptr_t)mr->addr, npages;
	size_t first;
	int r;

	npages = ((va & (PAGE - 1)) + mr->length + PAGE - 1) / PAGE;
	if (npages > VIRTIO_RDMA_MR_MAX_PAGES)
		return -E2BIG;
	first = (size_t)(va - (uintptr_t)b->addr) / PAGE;
	r = mr_pt_alloc(ctx, &pt, (uint32_t)npages);
	if (!r)
		r = gv_build_page_table(ctx->ram, pt.l1, pt.l2, b->gpa + first,
					(uint32_t)npages);
	if (!r) {
		q.pdn = mr->pd->pdn;
		q.access_flags = access;
		q.start = va;
		q.length = mr->length;
		q.virt_addr = va;
		q.pages = pt.l1;
		q.npages = (uint32_t)npages;
		r = gv_command(ctx, VIRTIO_RDMA_CMD_REG_USER_MR, &q, sizeof(q),
			       &rsp, sizeof(rsp));
	}
	/* the device walked the table while answering: free it */
	mr_pt_release(ctx, &pt);
	if (!r)
		set_mr(mr, &rsp);
	return r;
}

static int vr_get_dma_mr(struct gv_mr *mr, uint32_t access)
{
	struct virtio_rdma_cmd_get_dma_mr q = { .pdn = mr->pd->pdn,
						.access_flags = access };
	struct virtio_rdma_rsp_mr rsp;
	int r = gv_command(mr->pd->ctx, VIRTIO_RDMA_CMD_GET_DMA_MR, &q,
			   sizeof(q), &rsp, sizeof(rsp));

	if (!r)
		set_mr(mr, &rsp);
	return r;
}

static int vr_dereg_mr(struct gv_mr *mr)
{
	return destroy_cmd(mr->pd->ctx, VIRTIO_RDMA_CMD_DEREG_MR, mr->mrn);
}

/* ---- completion queues ---- */

static int cq_post_buf(struct gv_cq *cq, uint32_t i)
{
	struct guest_sg in = { cq->buf_gpa + (uint64_t)i * CQE_SIZE, CQE_SIZE };
	uint16_t head;

	return guest_vq_post(cq->vq, NULL, 0, &in, 1, false,
			     (void *)(uintptr_t)(i + 1), &head);
}

static int cq_setup(struct gv_cq *cq)
{
	struct gv_context *ctx = cq->ctx;
	uint32_t vq = virtio_rdma_cq_vq(cq->cqn);
	int r;

	r = guest_ram_alloc_in(ctx->ram, 0, (uint64_t)cq->cqe * CQE_SIZE, 64,
			       &cq->buf_gpa);
	if (!r)
		r = guest_dev_add_queue(&ctx->dev, vq, RING, &cq->vq);
	if (r)
		return r;
	cq->buf = guest_ram_ptr(ctx->ram, cq->buf_gpa,
				(uint64_t)cq->cqe * CQE_SIZE);
	for (uint32_t i = 0; i < cq->cqe && !r; i++)
		r = cq_post_buf(cq, i);
	if (!r && guest_vq_kick(cq->vq) < 0)
		r = -EIO;
	return r;
}

/* The guest's side of a CQ (its queue, its memory); NULL is nothing. */
static int cq_free(struct gv_context *ctx, struct gv_cq *cq)
{
	int r = 0;

	if (cq && cq->vq)
		r = guest_dev_remove_queue(&ctx->dev, cq->vq->index);
	free(cq);
	return r;
}

static int vr_create_cq(struct gv_context *ctx, uint32_t cqe,
			struct gv_cq **ret_cq)
{
	struct virtio_rdma_cmd_create_cq q = { .cqe = cqe };
	struct virtio_rdma_rsp_create_cq rsp;
	struct gv_cq *cq;
	int r;

	if (!cqe || cqe > RING)
		return -EINVAL;
	r = gv_command(ctx, VIRTIO_RDMA_CMD_CREATE_CQ, &q, sizeof(q), &rsp,
		       sizeof(rsp));
	if (r)
		return r;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		r = -ENOMEM;
	else if (rsp.cqn >= ctx->cfg.max_cq)
		r = -EPROTO; /* would be outside the queue map */
	if (!r) {
		cq->ctx = ctx;
		cq->cqn = rsp.cqn;
		cq->cqe = cqe;
		r = cq_setup(cq);
	}
	if (r) {
		destroy_cmd(ctx, VIRTIO_RDMA_CMD_DESTROY_CQ, rsp.cqn);
		cq_free(ctx, cq);
		return r;
	}
	*ret_cq = cq;
	return 0;
}

static int vr_destroy_cq(struct gv_cq *cq)
{
	int r = destroy_cmd(cq->ctx, VIRTIO_RDMA_CMD_DESTROY_CQ, cq->cqn);

	return r ? r : cq_free(cq->ctx, cq);
}

void gv_decode_cqe(const struct virtio_rdma_cqe *c, struct gv_wc *w)
{
	w->wr_id = c->wr_id;
	w->status = c->status;
	w->opcode = c->opcode;
	w->vendor_err = c->vendor_err;
	w->byte_len = c->byte_len;
	w->imm_data = c->imm_data;
	w->qp_num = c->qp_num;
	w->src_qp = c->src_qp;
	w->wc_flags = c->wc_flags;
	w->pkey_index = c->pkey_index;
	w->slid = c->slid;
	w->sl = c->sl;
	w->dlid_path_bits = c->dlid_path_bits;
	w->port_num = c->port_num;
}

static int vr_poll_cq(struct gv_cq *cq, int n, struct gv_wc *wc)
{
	struct virtio_rdma_cqe c;
	struct guest_used u;
	int got = 0, r = 0;

	while (got < n) {
		uint32_t i;

		r = guest_vq_reap(cq->vq, &u);
		if (r == -EAGAIN) {
			r = 0;
			break;
		}
		if (r)
			break;
		i = (uint32_t)(uintptr_t)u.cookie - 1;
		if (u.len != CQE_SIZE) {
			r = -EPROTO; /* a CQE is exactly 48 bytes */
			break;
		}
		/* one copy out of shared memory, then decode the copy */
		memcpy(&c, cq->buf + (size_t)i * CQE_SIZE, sizeof(c));
		gv_decode_cqe(&c, &wc[got++]);
		r = cq_post_buf(cq, i);
		if (r)
			break;
	}
	if (got && guest_vq_kick(cq->vq) < 0 && !r)
		r = -EIO;
	return r ? r : got;
}

static int vr_req_notify_cq(struct gv_cq *cq, bool solicited_only)
{
	struct virtio_rdma_cmd_req_notify_cq q = {
		.cqn = cq->cqn,
		.flags = solicited_only ? VIRTIO_RDMA_NOTIFY_SOLICITED
					: VIRTIO_RDMA_NOTIFY_NEXT_COMP,
	};

	return gv_command(cq->ctx, VIRTIO_RDMA_CMD_REQ_NOTIFY_CQ, &q, sizeof(q),
			  NULL, 0);
}

static int vr_get_cq_event(struct gv_cq *cq, int timeout_ms)
{
	return guest_vq_wait_call(cq->vq, timeout_ms);
}

/* ---- work queues ---- */

static int wq_init(struct gv_context *ctx, struct gv_wq *wq, uint32_t vq,
		   uint32_t nslots, uint32_t stride)
{
	uint64_t size;
	int r;

	if (!nslots || nslots > RING)
		return -EINVAL;
	wq->stride = (uint32_t)gv_round_up(stride, 64);
	wq->nslots = nslots;
	size = (uint64_t)nslots * wq->stride;
	wq->free = calloc(nslots, sizeof(*wq->free));
	if (!wq->free)
		return -ENOMEM;
	for (uint32_t i = 0; i < nslots; i++)
		wq->free[i] = nslots - 1 - i;
	wq->nfree = nslots;
	r = guest_ram_alloc_in(ctx->ram, 0, size, 64, &wq->buf_gpa);
	if (!r)
		r = guest_dev_add_queue(&ctx->dev, vq, RING, &wq->vq);
	if (r)
		return r;
	wq->buf = guest_ram_ptr(ctx->ram, wq->buf_gpa, size);
	/* no callback on SQ/RQ queues (Profile A §4.3) */
	guest_vq_set_no_interrupt(wq->vq, true);
	return 0;
}

static void wq_release(struct gv_context *ctx, struct gv_wq *wq)
{
	if (wq->vq)
		guest_dev_remove_queue(&ctx->dev, wq->vq->index);
	free(wq->free);
	memset(wq, 0, sizeof(*wq));
}

/* Takes back the elements the device finished (used entries, length 0). */
static int wq_reclaim(struct gv_wq *wq)
{
	struct guest_used u;
	int r;

	while ((r = guest_vq_reap(wq->vq, &u)) == 0)
		wq->free[wq->nfree++] = (uint32_t)(uintptr_t)u.cookie - 1;
	return r == -EAGAIN ? 0 : r;
}

/*
 * A free element slot. The device returns an element when it is finished,
 * which may be just after its completion: wait for that briefly rather
 * than fail a post that the application rightly expects to fit.
 */
static int wq_get(struct gv_wq *wq, int timeout_ms, uint32_t *ret)
{
	struct guest_used u;
	int r = wq_reclaim(wq);

	if (r)
		return r;
	if (!wq->nfree) {
		r = guest_vq_poll_reap(wq->vq, timeout_ms, &u);
		if (r == -ETIMEDOUT)
			return -ENOMEM;
		if (r)
			return r;
		wq->free[wq->nfree++] = (uint32_t)(uintptr_t)u.cookie - 1;
	}
	*ret = wq->free[--wq->nfree];
	return 0;
}

static int wq_post(struct gv_wq *wq, uint32_t slot, uint32_t len)
{
	struct guest_sg out = { wq->buf_gpa + (uint64_t)slot * wq->stride,
				len };
	uint16_t head;
	int r = guest_vq_post(wq->vq, &out, 1, NULL, 0, false,
			      (void *)(uintptr_t)(slot + 1), &head);

	if (r)
		wq->free[wq->nfree++] = slot;
	return r;
}

static uint8_t *wq_slot(struct gv_wq *wq, uint32_t slot)
{
	return wq->buf + (size_t)slot * wq->stride;
}

/* ---- queue pairs ---- */

static int qp_queues(struct gv_qp *qp)
{
	struct gv_context *ctx = qp->ctx;
	const struct gv_qp_init_attr *a = &qp->init;
	uint32_t max_cq = ctx->cfg.max_cq;
	uint32_t sq_data = a->max_send_sge * SGE_SIZE;
	int r;

	if (a->max_inline_data > sq_data)
		sq_data = a->max_inline_data;
	r = wq_init(ctx, &qp->sq, virtio_rdma_sq_vq(max_cq, qp->slot),
		    a->max_send_wr ? a->max_send_wr : 1, SQ_HDR + sq_data);
	if (r || a->srq)
		return r;
	return wq_init(ctx, &qp->rq, virtio_rdma_rq_vq(max_cq, qp->slot),
		       a->max_recv_wr ? a->max_recv_wr : 1,
		       RQ_HDR + a->max_recv_sge * SGE_SIZE);
}

static void fill_create_qp(const struct gv_pd *pd,
			   const struct gv_qp_init_attr *a,
			   struct virtio_rdma_cmd_create_qp_ext *q)
{
	memset(q, 0, sizeof(*q));
	q->base.pdn = pd->pdn;
	q->base.qp_type = a->qp_type;
	q->base.sq_sig_type =
		a->sq_sig_all ? VIRTIO_RDMA_SIG_ALL_WR : VIRTIO_RDMA_SIG_REQ_WR;
	q->base.max_send_wr = a->max_send_wr;
	q->base.max_send_sge = a->max_send_sge;
	q->base.send_cqn = a->send_cq->cqn;
	q->base.max_recv_wr = a->max_recv_wr;
	q->base.max_recv_sge = a->max_recv_sge;
	q->base.recv_cqn = a->recv_cq->cqn;
	q->base.max_inline_data = a->max_inline_data;
	if (a->srq) {
		q->flags = VIRTIO_RDMA_CREATE_QP_F_SRQ;
		q->srq_handle = a->srq->handle;
	}
}

/* The guest's side of a QP (its queues, its memory); NULL is nothing. */
static void qp_free(struct gv_context *ctx, struct gv_qp *qp)
{
	if (qp) {
		wq_release(ctx, &qp->sq);
		wq_release(ctx, &qp->rq);
	}
	free(qp);
}

static int vr_create_qp(struct gv_pd *pd, const struct gv_qp_init_attr *attr,
			struct gv_qp **ret_qp)
{
	struct gv_context *ctx = pd->ctx;
	struct virtio_rdma_cmd_create_qp_ext q;
	struct virtio_rdma_rsp_create_qp rsp;
	struct gv_qp *qp;
	int r;

	if (attr->max_send_sge > VIRTIO_RDMA_MAX_SGE ||
	    attr->max_recv_sge > VIRTIO_RDMA_MAX_SGE)
		return -EINVAL;
	fill_create_qp(pd, attr, &q);
	r = gv_command(ctx, VIRTIO_RDMA_CMD_CREATE_QP, &q, sizeof(q), &rsp,
		       sizeof(rsp));
	if (r)
		return r;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		r = -ENOMEM;
	else if (rsp.slot >= ctx->cfg.rg_num_slots)
		r = -EPROTO; /* would be outside the queue map */
	if (!r) {
		qp->ctx = ctx;
		qp->pd = pd;
		qp->qp_num = rsp.qpn;
		qp->slot = rsp.slot;
		qp->qp_type = attr->qp_type;
		qp->init = *attr;
		r = qp_queues(qp);
	}
	if (r) {
		destroy_cmd(ctx, VIRTIO_RDMA_CMD_DESTROY_QP, rsp.qpn);
		qp_free(ctx, qp);
		return r;
	}
	*ret_qp = qp;
	return 0;
}

static int vr_modify_qp(struct gv_qp *qp,
			const struct virtio_rdma_qp_attr *attr,
			uint32_t attr_mask)
{
	struct virtio_rdma_cmd_modify_qp q = { .qpn = qp->qp_num,
					       .attr_mask = attr_mask,
					       .attr = *attr };

	return gv_command(qp->ctx, VIRTIO_RDMA_CMD_MODIFY_QP, &q, sizeof(q),
			  NULL, 0);
}

static int vr_query_qp(struct gv_qp *qp, uint32_t attr_mask,
		       struct virtio_rdma_qp_attr *ret)
{
	struct virtio_rdma_cmd_query_qp q = { .qpn = qp->qp_num,
					      .attr_mask = attr_mask };

	return gv_command(qp->ctx, VIRTIO_RDMA_CMD_QUERY_QP, &q, sizeof(q), ret,
			  sizeof(*ret));
}

static int vr_destroy_qp(struct gv_qp *qp)
{
	int r = destroy_cmd(qp->ctx, VIRTIO_RDMA_CMD_DESTROY_QP, qp->qp_num);

	if (!r)
		qp_free(qp->ctx, qp);
	return r;
}

/* ---- shared receive queues ---- */

/* The guest's side of an SRQ (its queue, its memory); NULL is nothing. */
static void srq_free(struct gv_context *ctx, struct gv_srq *srq)
{
	if (srq)
		wq_release(ctx, &srq->rq);
	free(srq);
}

static int vr_create_srq(struct gv_pd *pd, uint32_t max_wr, uint32_t max_sge,
			 struct gv_srq **ret_srq)
{
	struct gv_context *ctx = pd->ctx;
	struct virtio_rdma_cmd_create_srq q = { .pdn = pd->pdn,
						.max_wr = max_wr,
						.max_sge = max_sge };
	struct virtio_rdma_rsp_create_srq rsp;
	struct gv_srq *srq;
	int r;

	if (max_sge > VIRTIO_RDMA_MAX_SGE)
		return -EINVAL;
	r = gv_command(ctx, VIRTIO_RDMA_CMD_CREATE_SRQ, &q, sizeof(q), &rsp,
		       sizeof(rsp));
	if (r)
		return r;
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		r = -ENOMEM;
	else if (rsp.slot >= ctx->cfg.rg_num_slots)
		r = -EPROTO;
	if (!r) {
		srq->ctx = ctx;
		srq->pd = pd;
		srq->handle = rsp.srq_handle;
		srq->slot = rsp.slot;
		srq->max_wr = max_wr;
		srq->max_sge = max_sge;
		r = wq_init(ctx, &srq->rq,
			    virtio_rdma_rq_vq(ctx->cfg.max_cq, rsp.slot),
			    max_wr, RQ_HDR + max_sge * SGE_SIZE);
	}
	if (r) {
		destroy_cmd(ctx, VIRTIO_RDMA_CMD_DESTROY_SRQ, rsp.srq_handle);
		srq_free(ctx, srq);
		return r;
	}
	*ret_srq = srq;
	return 0;
}

static int vr_destroy_srq(struct gv_srq *srq)
{
	int r = destroy_cmd(srq->ctx, VIRTIO_RDMA_CMD_DESTROY_SRQ, srq->handle);

	if (!r)
		srq_free(srq->ctx, srq);
	return r;
}

/* ---- address handles (local: each UD send carries the AV) ---- */

static int vr_create_ah(struct gv_ah *ah)
{
	const struct gv_ah_attr *a = &ah->attr;

	ah->av.port = VIRTIO_RDMA_PORT;
	ah->av.pdn = ah->pd->pdn;
	ah->av.sl_tclass_flowlabel = (uint32_t)a->sl << 28 |
				     (uint32_t)a->traffic_class << 20 |
				     a->flow_label;
	memcpy(ah->av.dgid, a->dgid, 16);
	ah->av.gid_index = a->sgid_index;
	ah->av.hop_limit = a->hop_limit;
	return 0;
}

/* ---- element encoders ---- */

static void encode_union(const struct gv_send_wr *wr, uint8_t qp_type,
			 struct virtio_rdma_sq_wqe *h)
{
	if (gv_wr_is_rdma(wr->opcode)) {
		h->wr.rdma.remote_addr = wr->wr.rdma.remote_addr;
		h->wr.rdma.rkey = wr->wr.rdma.rkey;
	} else if (gv_wr_is_atomic(wr->opcode)) {
		h->wr.atomic.remote_addr = wr->wr.atomic.remote_addr;
		h->wr.atomic.compare_add = wr->wr.atomic.compare_add;
		h->wr.atomic.swap = wr->wr.atomic.swap;
		h->wr.atomic.rkey = wr->wr.atomic.rkey;
	} else if ((qp_type == VIRTIO_RDMA_QPT_UD ||
		    qp_type == VIRTIO_RDMA_QPT_GSI) &&
		   wr->wr.ud.ah) {
		h->wr.ud.remote_qpn = wr->wr.ud.remote_qpn;
		h->wr.ud.remote_qkey = wr->wr.ud.remote_qkey;
		h->wr.ud.av = wr->wr.ud.ah->av;
	}
}

static int encode_inline(const struct gv_send_wr *wr, uint32_t max_inline,
			 uint8_t *dst, size_t room)
{
	uint64_t total = 0;

	for (uint32_t i = 0; i < wr->num_sge; i++) {
		uint32_t n = wr->sg_list[i].length;

		if (n > max_inline - total || n > room - total)
			return -E2BIG;
		memcpy(dst + total,
		       (const void *)(uintptr_t)wr->sg_list[i].addr, n);
		total += n;
	}
	return (int)total;
}

int gv_encode_send(const struct gv_send_wr *wr, uint8_t qp_type,
		   uint32_t max_sge, uint32_t max_inline, void *buf, size_t cap)
{
	struct virtio_rdma_sq_wqe h = { 0 };
	uint8_t *p = buf;
	int n;

	if (cap < SQ_HDR || (wr->num_sge && !wr->sg_list))
		return -EINVAL;
	h.num_sge = wr->num_sge;
	h.send_flags = wr->send_flags;
	h.opcode = wr->opcode;
	h.wr_id = wr->wr_id;
	h.imm_data = wr->imm_data;
	encode_union(wr, qp_type, &h);
	if (wr->send_flags & VIRTIO_RDMA_SEND_INLINE) {
		n = encode_inline(wr, max_inline, p + SQ_HDR, cap - SQ_HDR);
		if (n < 0)
			return n;
	} else {
		if (wr->num_sge > max_sge ||
		    SQ_HDR + (size_t)wr->num_sge * SGE_SIZE > cap)
			return -E2BIG;
		n = (int)(wr->num_sge * SGE_SIZE);
		memcpy(p + SQ_HDR, wr->sg_list, (size_t)n);
	}
	memcpy(p, &h, SQ_HDR);
	return (int)SQ_HDR + n;
}

int gv_encode_recv(const struct gv_recv_wr *wr, uint32_t max_sge, void *buf,
		   size_t cap)
{
	struct virtio_rdma_rq_wqe h = { .num_sge = wr->num_sge,
					.wr_id = wr->wr_id };
	size_t len = RQ_HDR + (size_t)wr->num_sge * SGE_SIZE;

	if (wr->num_sge && !wr->sg_list)
		return -EINVAL;
	if (wr->num_sge > max_sge || len > cap)
		return -E2BIG;
	memcpy(buf, &h, RQ_HDR);
	memcpy((uint8_t *)buf + RQ_HDR, wr->sg_list, len - RQ_HDR);
	return (int)len;
}

/* ---- posting ---- */

/* Posts an encoded element (len from an encoder) or gives the slot back. */
static int wq_push(struct gv_wq *wq, uint32_t slot, int len)
{
	if (len < 0) {
		wq->free[wq->nfree++] = slot;
		return len;
	}
	return wq_post(wq, slot, (uint32_t)len);
}

/* After a post loop: one kick for all it posted; r is the loop's result. */
static int wq_kick_posted(struct gv_wq *wq, int posted, int r)
{
	if (posted && guest_vq_kick(wq->vq) < 0 && !r)
		return -EIO;
	return r;
}

static int vr_post_send(struct gv_qp *qp, struct gv_send_wr *wr,
			struct gv_send_wr **bad)
{
	struct gv_wq *wq = &qp->sq;
	int r = 0, posted = 0;

	for (; wr; wr = wr->next, posted++) {
		uint32_t slot;

		r = wq_get(wq, qp->ctx->timeout_ms, &slot);
		if (!r)
			r = wq_push(wq, slot,
				    gv_encode_send(wr, qp->qp_type,
						   qp->init.max_send_sge,
						   qp->init.max_inline_data,
						   wq_slot(wq, slot),
						   wq->stride));
		if (r)
			break;
	}
	if (r && bad)
		*bad = wr;
	return wq_kick_posted(wq, posted, r);
}

static int post_recv_wq(struct gv_context *ctx, struct gv_wq *wq,
			uint32_t max_sge, struct gv_recv_wr *wr,
			struct gv_recv_wr **bad)
{
	int r = 0, posted = 0;

	if (!wq->vq)
		return -EINVAL; /* a QP on an SRQ has no receive queue */
	for (; wr; wr = wr->next, posted++) {
		uint32_t slot;

		r = wq_get(wq, ctx->timeout_ms, &slot);
		if (!r)
			r = wq_push(wq, slot,
				    gv_encode_recv(wr, max_sge,
						   wq_slot(wq, slot),
						   wq->stride));
		if (r)
			break;
	}
	if (r && bad)
		*bad = wr;
	return wq_kick_posted(wq, posted, r);
}

static int vr_post_recv(struct gv_qp *qp, struct gv_recv_wr *wr,
			struct gv_recv_wr **bad)
{
	return post_recv_wq(qp->ctx, &qp->rq, qp->init.max_recv_sge, wr, bad);
}

static int vr_post_srq_recv(struct gv_srq *srq, struct gv_recv_wr *wr,
			    struct gv_recv_wr **bad)
{
	return post_recv_wq(srq->ctx, &srq->rq, srq->max_sge, wr, bad);
}

static void vr_describe(struct gv_context *ctx, FILE *f)
{
	fprintf(f, "%-20s abi %u, %u queue slots, %llu queues\n", "virtio-rdma",
		ctx->cfg.rg_abi_version, ctx->cfg.rg_num_slots,
		(unsigned long long)virtio_rdma_num_vqs(ctx->cfg.max_cq,
							ctx->cfg.rg_num_slots));
}

const struct gv_transport_ops gv_virtio_rdma_ops = {
	.name = "virtio-rdma",
	.describe = vr_describe,
	.open = vr_open,
	.close = vr_close,
	.query_port = vr_query_port,
	.query_pkey = vr_query_pkey,
	.add_gid = vr_add_gid,
	.del_gid = vr_del_gid,
	.alloc_pd = vr_alloc_pd,
	.dealloc_pd = vr_dealloc_pd,
	.reg_mr = vr_reg_mr,
	.get_dma_mr = vr_get_dma_mr,
	.dereg_mr = vr_dereg_mr,
	.create_cq = vr_create_cq,
	.destroy_cq = vr_destroy_cq,
	.poll_cq = vr_poll_cq,
	.req_notify_cq = vr_req_notify_cq,
	.get_cq_event = vr_get_cq_event,
	.create_qp = vr_create_qp,
	.modify_qp = vr_modify_qp,
	.query_qp = vr_query_qp,
	.destroy_qp = vr_destroy_qp,
	.create_srq = vr_create_srq,
	.destroy_srq = vr_destroy_srq,
	.create_ah = vr_create_ah,
	.post_send = vr_post_send,
	.post_recv = vr_post_recv,
	.post_srq_recv = vr_post_srq_recv,
};
