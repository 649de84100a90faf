// SPDX-License-Identifier: MIT
/* The guest simulator's verbs: a Profile A driver + provider over guest_dev. */
#include "guest/verbs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/cleanup.h"

#define PAGE	 VIRTIO_RDMA_PAGE_SIZE
#define RING	 VIRTIO_RDMA_RING_SIZE
#define CQE_SIZE sizeof(struct virtio_rdma_cqe)
#define SQ_HDR	 sizeof(struct virtio_rdma_sq_wqe)
#define RQ_HDR	 sizeof(struct virtio_rdma_rq_wqe)
#define SGE_SIZE sizeof(struct virtio_rdma_sge)
#define DRV_FEATURES                                                           \
	((1ull << GUEST_F_VERSION_1) | (1ull << GUEST_F_RING_INDIRECT_DESC))

/* The control page: header, request, status, response. */
#define CMD_HDR_OFF 0
#define CMD_REQ_OFF 64
#define CMD_ST_OFF  1536
#define CMD_RSP_OFF 1600
#define CMD_MAX	    1024 /* request or response bytes */

/* Scattered buffers: at most this many physically discontiguous chunks. */
#define SCATTER_CHUNKS 64

struct gv_buf {
	void *addr;
	size_t len;
	uint32_t npages;
	uint64_t *gpa; /* per page */
	struct gv_buf *next;
};

static uint64_t round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

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
	r = guest_dev_exchange(&ctx->dev, ctx->ctrl, out, nout, in, nin,
			       ctx->indirect, ctx->timeout_ms, &len);
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

static int layout_ram(struct gv_context *ctx, const struct gv_opts *o)
{
	uint64_t low = o->low_size ? o->low_size : 48ull << 20;
	uint64_t data = o->data_size ? o->data_size : 64ull << 20;
	struct guest_ram *ram = &ctx->dev.ram;
	int slot;

	slot = guest_ram_add_region(ram, GV_LOW_GPA, round_up(low, PAGE),
				    GUEST_PAGE_4K);
	if (slot < 0)
		return slot;
	slot = guest_ram_add_region(ram, GV_DATA_GPA, round_up(data, PAGE),
				    GUEST_PAGE_4K);
	if (slot < 0)
		return slot;
	ctx->data_slot = (unsigned int)slot;
	ctx->data_fd = ram->blocks[ram->slots[slot].block].fd;
	ctx->data_off = ram->slots[slot].offset;
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

int gv_open(const char *socket, const struct gv_opts *opts,
	    struct gv_context **ret_ctx)
{
	struct vhost_client_opts vo = {
		.protocol_features = VHOST_CLIENT_PROTOCOL_FEATURES,
		.config_size = sizeof(struct virtio_rdma_config),
	};
	struct gv_opts o = opts ? *opts : (struct gv_opts){ 0 };
	struct gv_context *ctx;
	int r;

	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	guest_dev_init(&ctx->dev);
	ctx->timeout_ms = o.timeout_ms > 0 ? o.timeout_ms : 5000;
	ctx->scatter = o.scatter;
	vo.timeout_ms = ctx->timeout_ms;
	r = guest_dev_connect(&ctx->dev, socket, &vo);
	if (!r)
		r = check_config(ctx);
	if (!r)
		r = layout_ram(ctx, &o);
	if (!r)
		r = bring_up(ctx, &o);
	if (r) {
		guest_dev_release(&ctx->dev);
		free(ctx);
		return r;
	}
	*ret_ctx = ctx;
	return 0;
}

void gv_close(struct gv_context *ctx)
{
	struct gv_buf *b, *n;

	if (!ctx)
		return;
	guest_dev_stop(&ctx->dev); /* best effort: the peer may be gone */
	guest_dev_release(&ctx->dev);
	for (b = ctx->bufs; b; b = n) {
		n = b->next;
		munmap(b->addr, (size_t)b->npages * PAGE);
		free(b->gpa);
		free(b);
	}
	free(ctx->pt_free);
	free(ctx);
}

int gv_query_port(struct gv_context *ctx, struct virtio_rdma_port_attr *ret)
{
	struct virtio_rdma_cmd_query_port q = { .port = VIRTIO_RDMA_PORT };

	return gv_command(ctx, VIRTIO_RDMA_CMD_QUERY_PORT, &q, sizeof(q), ret,
			  sizeof(*ret));
}

int gv_query_pkey(struct gv_context *ctx, uint16_t index, uint16_t *ret_pkey)
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

int gv_add_gid(struct gv_context *ctx, uint16_t index, const uint8_t gid[16],
	       uint32_t gid_type)
{
	struct virtio_rdma_cmd_add_gid q = { .gid_type = gid_type,
					     .index = index,
					     .port_num = VIRTIO_RDMA_PORT };
	int r;

	if (index >= VIRTIO_RDMA_GID_TBL_LEN)
		return -EINVAL;
	memcpy(q.gid, gid, 16);
	r = gv_command(ctx, VIRTIO_RDMA_CMD_ADD_GID, &q, sizeof(q), NULL, 0);
	if (r)
		return r;
	memcpy(ctx->gid[index], gid, 16);
	ctx->gid_type[index] = (uint8_t)(gid_type + 1);
	return 0;
}

int gv_del_gid(struct gv_context *ctx, uint16_t index)
{
	struct virtio_rdma_cmd_del_gid q = { .index = index,
					     .port_num = VIRTIO_RDMA_PORT };
	int r;

	if (index >= VIRTIO_RDMA_GID_TBL_LEN)
		return -EINVAL;
	r = gv_command(ctx, VIRTIO_RDMA_CMD_DEL_GID, &q, sizeof(q), NULL, 0);
	if (!r)
		ctx->gid_type[index] = 0;
	return r;
}

int gv_query_gid(struct gv_context *ctx, uint16_t index, uint8_t ret_gid[16])
{
	if (index >= VIRTIO_RDMA_GID_TBL_LEN || !ctx->gid_type[index])
		return -ENOENT;
	memcpy(ret_gid, ctx->gid[index], 16);
	return 0;
}

/* ---- buffers ---- */

/* Where page i of a buffer goes in its physical region (chunks reversed). */
static uint64_t scatter_page(uint32_t i, uint32_t chunk, uint32_t nchunks)
{
	return (uint64_t)(nchunks - 1 - i / chunk) * chunk + i % chunk;
}

static int map_buf(struct gv_context *ctx, struct gv_buf *b, uint32_t chunk)
{
	const struct guest_slot *s = &ctx->dev.ram.slots[ctx->data_slot];

	for (uint32_t i = 0; i < b->npages; i += chunk) {
		uint32_t n = b->npages - i < chunk ? b->npages - i : chunk;
		uint64_t off = ctx->data_off + (b->gpa[i] - s->gpa);
		void *p =
			mmap((uint8_t *)b->addr + (size_t)i * PAGE,
			     (size_t)n * PAGE, PROT_READ | PROT_WRITE,
			     MAP_SHARED | MAP_FIXED, ctx->data_fd, (off_t)off);

		if (p == MAP_FAILED)
			return -errno;
	}
	return 0;
}

static int place_buf(struct gv_context *ctx, struct gv_buf *b, bool scatter)
{
	uint32_t chunk = b->npages, nchunks = 1;
	uint64_t base;
	int r;

	if (scatter) {
		chunk = (b->npages + SCATTER_CHUNKS - 1) / SCATTER_CHUNKS;
		nchunks = (b->npages + chunk - 1) / chunk;
	}
	r = guest_ram_alloc_in(&ctx->dev.ram, ctx->data_slot,
			       (uint64_t)chunk * nchunks * PAGE, PAGE, &base);
	if (r)
		return r;
	for (uint32_t i = 0; i < b->npages; i++)
		b->gpa[i] =
			base +
			PAGE * (scatter ? scatter_page(i, chunk, nchunks) : i);
	return map_buf(ctx, b, chunk);
}

void *gv_alloc_buf(struct gv_context *ctx, size_t size, unsigned int flags)
{
	bool scatter = !(flags & GV_BUF_CONTIGUOUS) &&
		       ((flags & GV_BUF_SCATTER) || ctx->scatter);
	struct gv_buf *b;
	int r = -ENOMEM;

	if (!size || size > (1ull << 32)) {
		errno = EINVAL;
		return NULL;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->npages = (uint32_t)((size + PAGE - 1) / PAGE);
	b->len = (size_t)b->npages * PAGE;
	b->gpa = calloc(b->npages, sizeof(*b->gpa));
	b->addr = mmap(NULL, b->len, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (b->gpa && b->addr != MAP_FAILED)
		r = place_buf(ctx, b, scatter);
	if (r) {
		if (b->addr != MAP_FAILED)
			munmap(b->addr, b->len);
		free(b->gpa);
		free(b);
		errno = -r;
		return NULL;
	}
	b->next = ctx->bufs;
	ctx->bufs = b;
	return b->addr;
}

static struct gv_buf *find_buf(struct gv_context *ctx, const void *addr,
			       size_t len)
{
	uintptr_t a = (uintptr_t)addr;

	for (struct gv_buf *b = ctx->bufs; b; b = b->next) {
		uintptr_t s = (uintptr_t)b->addr;

		if (a >= s && a - s < b->len && len <= b->len - (a - s))
			return b;
	}
	return NULL;
}

void gv_free_buf(struct gv_context *ctx, void *addr)
{
	for (struct gv_buf **pp = &ctx->bufs; *pp; pp = &(*pp)->next) {
		struct gv_buf *b = *pp;

		if (b->addr != addr)
			continue;
		*pp = b->next;
		munmap(b->addr, b->len);
		free(b->gpa);
		free(b);
		return;
	}
}

uint64_t gv_buf_gpa(struct gv_context *ctx, const void *addr)
{
	struct gv_buf *b = find_buf(ctx, addr, 1);
	size_t off;

	if (!b)
		return 0;
	off = (size_t)((const uint8_t *)addr - (const uint8_t *)b->addr);
	return b->gpa[off / PAGE] + off % PAGE;
}

/* ---- protection domains and memory regions ---- */

int gv_alloc_pd(struct gv_context *ctx, struct gv_pd **ret_pd)
{
	struct virtio_rdma_rsp_create_pd rsp;
	struct gv_pd *pd;
	int r;

	r = gv_command(ctx, VIRTIO_RDMA_CMD_CREATE_PD, NULL, 0, &rsp,
		       sizeof(rsp));
	if (r)
		return r;
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return -ENOMEM;
	pd->ctx = ctx;
	pd->pdn = rsp.pdn;
	*ret_pd = pd;
	return 0;
}

int gv_dealloc_pd(struct gv_pd *pd)
{
	struct virtio_rdma_cmd_destroy_pd q = { .pdn = pd->pdn };
	int r = gv_command(pd->ctx, VIRTIO_RDMA_CMD_DESTROY_PD, &q, sizeof(q),
			   NULL, 0);

	if (!r)
		free(pd);
	return r;
}

static int pt_get(struct gv_context *ctx, uint64_t *ret_gpa)
{
	uint64_t gpa;
	int r;

	if (ctx->pt_nfree) {
		gpa = ctx->pt_free[--ctx->pt_nfree];
	} else {
		r = guest_ram_alloc_in(&ctx->dev.ram, 0, PAGE, PAGE, &gpa);
		if (r)
			return r;
	}
	memset(guest_ram_ptr(&ctx->dev.ram, gpa, PAGE), 0, PAGE);
	*ret_gpa = gpa;
	return 0;
}

static int pt_put(struct gv_context *ctx, uint64_t gpa)
{
	if (ctx->pt_nfree == ctx->pt_cap) {
		size_t cap = ctx->pt_cap ? 2 * ctx->pt_cap : 64;
		uint64_t *p = realloc(ctx->pt_free, cap * sizeof(*p));

		if (!p)
			return -ENOMEM; /* the page is lost, nothing else */
		ctx->pt_free = p;
		ctx->pt_cap = cap;
	}
	ctx->pt_free[ctx->pt_nfree++] = gpa;
	return 0;
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
		pt_put(ctx, pt->l1);
	for (uint32_t i = 0; i + 1 < pt->got; i++)
		pt_put(ctx, pt->l2[i]);
}

static int mr_pt_alloc(struct gv_context *ctx, struct mr_pt *pt,
		       uint32_t npages)
{
	int r;

	pt->nl2 =
		(npages + VIRTIO_RDMA_PT_ENTRIES - 1) / VIRTIO_RDMA_PT_ENTRIES;
	r = pt_get(ctx, &pt->l1);
	if (r)
		return r;
	pt->got = 1;
	for (uint32_t i = 0; i < pt->nl2; i++) {
		r = pt_get(ctx, &pt->l2[i]);
		if (r)
			return r;
		pt->got++;
	}
	return 0;
}

static int new_mr(struct gv_pd *pd, const struct virtio_rdma_rsp_mr *rsp,
		  void *addr, size_t length, struct gv_mr **ret_mr)
{
	struct gv_mr *mr = calloc(1, sizeof(*mr));

	if (!mr)
		return -ENOMEM;
	mr->pd = pd;
	mr->mrn = rsp->mrn;
	mr->lkey = rsp->lkey;
	mr->rkey = rsp->rkey;
	mr->addr = addr;
	mr->length = length;
	*ret_mr = mr;
	return 0;
}

int gv_reg_mr(struct gv_pd *pd, void *addr, size_t length, uint32_t access,
	      struct gv_mr **ret_mr)
{
	struct gv_context *ctx = pd->ctx;
	struct virtio_rdma_cmd_reg_user_mr q = { 0 };
	struct virtio_rdma_rsp_mr rsp;
	struct gv_buf *b = find_buf(ctx, addr, length);
	struct mr_pt pt = { 0 };
	uint64_t va = (uintptr_t)addr, npages;
	size_t first;
	int r;

	if (!b || !length)
		return -EINVAL;
	npages = ((va & (PAGE - 1)) + length + PAGE - 1) / PAGE;
	if (npages > VIRTIO_RDMA_MR_MAX_PAGES)
		return -E2BIG;
	first = (size_t)(va - (uintptr_t)b->addr) / PAGE;
	r = mr_pt_alloc(ctx, &pt, (uint32_t)npages);
	if (!r)
		r = gv_build_page_table(&ctx->dev.ram, pt.l1, pt.l2,
					b->gpa + first, (uint32_t)npages);
	if (!r) {
		q.pdn = pd->pdn;
		q.access_flags = access;
		q.start = va;
		q.length = length;
		q.virt_addr = va;
		q.pages = pt.l1;
		q.npages = (uint32_t)npages;
		r = gv_command(ctx, VIRTIO_RDMA_CMD_REG_USER_MR, &q, sizeof(q),
			       &rsp, sizeof(rsp));
	}
	/* the device walked the table while answering: free it */
	mr_pt_release(ctx, &pt);
	if (r)
		return r;
	return new_mr(pd, &rsp, addr, length, ret_mr);
}

int gv_get_dma_mr(struct gv_pd *pd, uint32_t access, struct gv_mr **ret_mr)
{
	struct virtio_rdma_cmd_get_dma_mr q = { .pdn = pd->pdn,
						.access_flags = access };
	struct virtio_rdma_rsp_mr rsp;
	int r = gv_command(pd->ctx, VIRTIO_RDMA_CMD_GET_DMA_MR, &q, sizeof(q),
			   &rsp, sizeof(rsp));

	if (r)
		return r;
	return new_mr(pd, &rsp, NULL, 0, ret_mr);
}

int gv_dereg_mr(struct gv_mr *mr)
{
	struct virtio_rdma_cmd_dereg_mr q = { .mrn = mr->mrn };
	int r = gv_command(mr->pd->ctx, VIRTIO_RDMA_CMD_DEREG_MR, &q, sizeof(q),
			   NULL, 0);

	if (!r)
		free(mr);
	return r;
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

	r = guest_ram_alloc_in(&ctx->dev.ram, 0, (uint64_t)cq->cqe * CQE_SIZE,
			       64, &cq->buf_gpa);
	if (!r)
		r = guest_dev_add_queue(&ctx->dev, vq, RING, &cq->vq);
	if (r)
		return r;
	cq->buf = guest_ram_ptr(&ctx->dev.ram, cq->buf_gpa,
				(uint64_t)cq->cqe * CQE_SIZE);
	for (uint32_t i = 0; i < cq->cqe && !r; i++)
		r = cq_post_buf(cq, i);
	if (!r && guest_vq_kick(cq->vq) < 0)
		r = -EIO;
	return r;
}

int gv_create_cq(struct gv_context *ctx, uint32_t cqe, struct gv_cq **ret_cq)
{
	struct virtio_rdma_cmd_create_cq q = { .cqe = cqe };
	struct virtio_rdma_rsp_create_cq rsp;
	struct virtio_rdma_cmd_destroy_cq d;
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
		d.cqn = rsp.cqn;
		gv_command(ctx, VIRTIO_RDMA_CMD_DESTROY_CQ, &d, sizeof(d), NULL,
			   0);
		if (cq && cq->vq)
			guest_dev_remove_queue(&ctx->dev, cq->vq->index);
		free(cq);
		return r;
	}
	*ret_cq = cq;
	return 0;
}

int gv_destroy_cq(struct gv_cq *cq)
{
	struct virtio_rdma_cmd_destroy_cq q = { .cqn = cq->cqn };
	int r = gv_command(cq->ctx, VIRTIO_RDMA_CMD_DESTROY_CQ, &q, sizeof(q),
			   NULL, 0);

	if (r)
		return r;
	r = guest_dev_remove_queue(&cq->ctx->dev, cq->vq->index);
	free(cq);
	return r;
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

int gv_poll_cq(struct gv_cq *cq, int n, struct gv_wc *wc)
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

int gv_req_notify_cq(struct gv_cq *cq, bool solicited_only)
{
	struct virtio_rdma_cmd_req_notify_cq q = {
		.cqn = cq->cqn,
		.flags = solicited_only ? VIRTIO_RDMA_NOTIFY_SOLICITED
					: VIRTIO_RDMA_NOTIFY_NEXT_COMP,
	};

	return gv_command(cq->ctx, VIRTIO_RDMA_CMD_REQ_NOTIFY_CQ, &q, sizeof(q),
			  NULL, 0);
}

int gv_get_cq_event(struct gv_cq *cq, int timeout_ms)
{
	int r = guest_vq_wait_call(cq->vq, timeout_ms);

	if (!r)
		cq->events++;
	return r;
}

/* ---- work queues ---- */

static int wq_init(struct gv_context *ctx, struct gv_wq *wq, uint32_t vq,
		   uint32_t nslots, uint32_t stride)
{
	uint64_t size;
	int r;

	if (!nslots || nslots > RING)
		return -EINVAL;
	wq->stride = (uint32_t)round_up(stride, 64);
	wq->nslots = nslots;
	size = (uint64_t)nslots * wq->stride;
	wq->free = calloc(nslots, sizeof(*wq->free));
	if (!wq->free)
		return -ENOMEM;
	for (uint32_t i = 0; i < nslots; i++)
		wq->free[i] = nslots - 1 - i;
	wq->nfree = nslots;
	r = guest_ram_alloc_in(&ctx->dev.ram, 0, size, 64, &wq->buf_gpa);
	if (!r)
		r = guest_dev_add_queue(&ctx->dev, vq, RING, &wq->vq);
	if (r)
		return r;
	wq->buf = guest_ram_ptr(&ctx->dev.ram, wq->buf_gpa, size);
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

int gv_create_qp(struct gv_pd *pd, const struct gv_qp_init_attr *attr,
		 struct gv_qp **ret_qp)
{
	struct gv_context *ctx = pd->ctx;
	struct virtio_rdma_cmd_create_qp_ext q;
	struct virtio_rdma_rsp_create_qp rsp;
	struct virtio_rdma_cmd_destroy_qp d;
	struct gv_qp *qp;
	int r;

	if (!attr->send_cq || !attr->recv_cq ||
	    attr->max_send_sge > VIRTIO_RDMA_MAX_SGE ||
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
		d.qpn = rsp.qpn;
		gv_command(ctx, VIRTIO_RDMA_CMD_DESTROY_QP, &d, sizeof(d), NULL,
			   0);
		if (qp) {
			wq_release(ctx, &qp->sq);
			wq_release(ctx, &qp->rq);
		}
		free(qp);
		return r;
	}
	*ret_qp = qp;
	return 0;
}

int gv_modify_qp(struct gv_qp *qp, const struct virtio_rdma_qp_attr *attr,
		 uint32_t attr_mask)
{
	struct virtio_rdma_cmd_modify_qp q = { .qpn = qp->qp_num,
					       .attr_mask = attr_mask,
					       .attr = *attr };

	return gv_command(qp->ctx, VIRTIO_RDMA_CMD_MODIFY_QP, &q, sizeof(q),
			  NULL, 0);
}

int gv_query_qp(struct gv_qp *qp, uint32_t attr_mask,
		struct virtio_rdma_qp_attr *ret)
{
	struct virtio_rdma_cmd_query_qp q = { .qpn = qp->qp_num,
					      .attr_mask = attr_mask };

	return gv_command(qp->ctx, VIRTIO_RDMA_CMD_QUERY_QP, &q, sizeof(q), ret,
			  sizeof(*ret));
}

int gv_destroy_qp(struct gv_qp *qp)
{
	struct virtio_rdma_cmd_destroy_qp q = { .qpn = qp->qp_num };
	int r = gv_command(qp->ctx, VIRTIO_RDMA_CMD_DESTROY_QP, &q, sizeof(q),
			   NULL, 0);

	if (r)
		return r;
	wq_release(qp->ctx, &qp->sq);
	wq_release(qp->ctx, &qp->rq);
	free(qp);
	return 0;
}

/* ---- shared receive queues ---- */

int gv_create_srq(struct gv_pd *pd, uint32_t max_wr, uint32_t max_sge,
		  struct gv_srq **ret_srq)
{
	struct gv_context *ctx = pd->ctx;
	struct virtio_rdma_cmd_create_srq q = { .pdn = pd->pdn,
						.max_wr = max_wr,
						.max_sge = max_sge };
	struct virtio_rdma_rsp_create_srq rsp;
	struct virtio_rdma_cmd_srq_handle d;
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
		d.srq_handle = rsp.srq_handle;
		gv_command(ctx, VIRTIO_RDMA_CMD_DESTROY_SRQ, &d, sizeof(d),
			   NULL, 0);
		if (srq)
			wq_release(ctx, &srq->rq);
		free(srq);
		return r;
	}
	*ret_srq = srq;
	return 0;
}

int gv_destroy_srq(struct gv_srq *srq)
{
	struct virtio_rdma_cmd_srq_handle q = { .srq_handle = srq->handle };
	int r = gv_command(srq->ctx, VIRTIO_RDMA_CMD_DESTROY_SRQ, &q, sizeof(q),
			   NULL, 0);

	if (r)
		return r;
	wq_release(srq->ctx, &srq->rq);
	free(srq);
	return 0;
}

/* ---- address handles (local: each UD send carries the AV) ---- */

int gv_create_ah(struct gv_pd *pd, const struct gv_ah_attr *a,
		 struct gv_ah **ret_ah)
{
	struct gv_ah *ah;

	if (a->sl > 15 || a->flow_label > VIRTIO_RDMA_FLOW_LABEL_MAX)
		return -EINVAL;
	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return -ENOMEM;
	ah->pd = pd;
	ah->av.port = VIRTIO_RDMA_PORT;
	ah->av.pdn = pd->pdn;
	ah->av.sl_tclass_flowlabel = (uint32_t)a->sl << 28 |
				     (uint32_t)a->traffic_class << 20 |
				     a->flow_label;
	memcpy(ah->av.dgid, a->dgid, 16);
	ah->av.gid_index = a->sgid_index;
	ah->av.hop_limit = a->hop_limit;
	*ret_ah = ah;
	return 0;
}

void gv_destroy_ah(struct gv_ah *ah)
{
	free(ah);
}

/* ---- element encoders ---- */

static bool is_rdma(uint32_t op)
{
	return op == VIRTIO_RDMA_WR_RDMA_WRITE ||
	       op == VIRTIO_RDMA_WR_RDMA_WRITE_WITH_IMM ||
	       op == VIRTIO_RDMA_WR_RDMA_READ;
}

static bool is_atomic(uint32_t op)
{
	return op == VIRTIO_RDMA_WR_ATOMIC_CMP_AND_SWP ||
	       op == VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD;
}

static void encode_union(const struct gv_send_wr *wr, uint8_t qp_type,
			 struct virtio_rdma_sq_wqe *h)
{
	if (is_rdma(wr->opcode)) {
		h->wr.rdma.remote_addr = wr->wr.rdma.remote_addr;
		h->wr.rdma.rkey = wr->wr.rdma.rkey;
	} else if (is_atomic(wr->opcode)) {
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

int gv_post_send(struct gv_qp *qp, struct gv_send_wr *wr,
		 struct gv_send_wr **bad)
{
	struct gv_wq *wq = &qp->sq;
	int r = 0, posted = 0;

	for (; wr; wr = wr->next) {
		uint32_t slot;
		int len;

		r = wq_get(wq, qp->ctx->timeout_ms, &slot);
		if (r)
			break;
		len = gv_encode_send(wr, qp->qp_type, qp->init.max_send_sge,
				     qp->init.max_inline_data,
				     wq_slot(wq, slot), wq->stride);
		if (len < 0) {
			wq->free[wq->nfree++] = slot;
			r = len;
			break;
		}
		r = wq_post(wq, slot, (uint32_t)len);
		if (r)
			break;
		posted++;
	}
	if (r && bad)
		*bad = wr;
	if (posted && guest_vq_kick(wq->vq) < 0 && !r)
		r = -EIO;
	return r;
}

static int post_recv_wq(struct gv_context *ctx, struct gv_wq *wq,
			uint32_t max_sge, struct gv_recv_wr *wr,
			struct gv_recv_wr **bad)
{
	int r = 0, posted = 0;

	if (!wq->vq)
		return -EINVAL; /* a QP on an SRQ has no receive queue */
	for (; wr; wr = wr->next) {
		uint32_t slot;
		int len;

		r = wq_get(wq, ctx->timeout_ms, &slot);
		if (r)
			break;
		len = gv_encode_recv(wr, max_sge, wq_slot(wq, slot),
				     wq->stride);
		if (len < 0) {
			wq->free[wq->nfree++] = slot;
			r = len;
			break;
		}
		r = wq_post(wq, slot, (uint32_t)len);
		if (r)
			break;
		posted++;
	}
	if (r && bad)
		*bad = wr;
	if (posted && guest_vq_kick(wq->vq) < 0 && !r)
		r = -EIO;
	return r;
}

int gv_post_recv(struct gv_qp *qp, struct gv_recv_wr *wr,
		 struct gv_recv_wr **bad)
{
	return post_recv_wq(qp->ctx, &qp->rq, qp->init.max_recv_sge, wr, bad);
}

int gv_post_srq_recv(struct gv_srq *srq, struct gv_recv_wr *wr,
		     struct gv_recv_wr **bad)
{
	return post_recv_wq(srq->ctx, &srq->rq, srq->max_sge, wr, bad);
}

/* ---- names and units ---- */

static const char *const wc_status_names[] = {
	"success",
	"local length error",
	"local QP operation error",
	"local EE context operation error",
	"local protection error",
	"Work Request Flushed Error",
	"memory management operation error",
	"bad response error",
	"local access error",
	"remote invalid request error",
	"remote access error",
	"remote operation error",
	"transport retry counter exceeded",
	"RNR retry counter exceeded",
	"local RDD violation error",
	"remote invalid RD request",
	"aborted error",
	"invalid EE context number",
	"invalid EE context state",
	"fatal error",
	"response timeout error",
	"general error",
};

const char *gv_wc_status_str(uint32_t status)
{
	if (status >= ARRAY_SIZE(wc_status_names))
		return "unknown";
	return wc_status_names[status];
}

uint32_t gv_mtu_to_enum(uint32_t bytes)
{
	switch (bytes) {
	case 256:
		return VIRTIO_RDMA_MTU_256;
	case 512:
		return VIRTIO_RDMA_MTU_512;
	case 1024:
		return VIRTIO_RDMA_MTU_1024;
	case 2048:
		return VIRTIO_RDMA_MTU_2048;
	case 4096:
		return VIRTIO_RDMA_MTU_4096;
	default:
		return 0;
	}
}

uint32_t gv_mtu_to_bytes(uint32_t mtu)
{
	return mtu >= VIRTIO_RDMA_MTU_256 && mtu <= VIRTIO_RDMA_MTU_4096
		       ? 128u << mtu
		       : 0;
}
