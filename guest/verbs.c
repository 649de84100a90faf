// SPDX-License-Identifier: MIT
/*
 * The guest simulator's verbs: argument checks and dispatch to the
 * transport chosen at gv_open() (guest/verbs_transport.h), and what every
 * transport shares: application buffers in guest RAM and page-table pages.
 */
#include "guest/verbs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "guest/verbs_transport.h"

/* Scattered buffers: at most this many physically discontiguous chunks. */
#define SCATTER_CHUNKS 64

/* ---- device ---- */

static const struct gv_transport_ops *const transports[] = {
	[GV_TRANSPORT_VIRTIO_RDMA] = &gv_virtio_rdma_ops,
	[GV_TRANSPORT_PVRDMA] = &gv_pvrdma_ops,
};

int gv_open(const char *socket, const struct gv_opts *opts,
	    struct gv_context **ret_ctx)
{
	struct gv_opts o = opts ? *opts : (struct gv_opts){ 0 };
	struct gv_context *ctx;
	int r;

	if ((unsigned int)o.transport >= ARRAY_SIZE(transports))
		return -EINVAL;
	if (!transports[o.transport])
		return -EOPNOTSUPP;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	ctx->ops = transports[o.transport];
	ctx->timeout_ms = o.timeout_ms > 0 ? o.timeout_ms : 5000;
	ctx->scatter = o.scatter;
	ctx->data_fd = -1;
	r = ctx->ops->open(ctx, socket, &o);
	if (r) {
		free(ctx->pt_free);
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
	ctx->ops->close(ctx); /* best effort: the peer may be gone */
	for (b = ctx->bufs; b; b = n) {
		n = b->next;
		munmap(b->addr, b->len);
		free(b->gpa);
		free(b);
	}
	free(ctx->pt_free);
	free(ctx);
}

const char *gv_transport_name(const struct gv_context *ctx)
{
	return ctx->ops->name;
}

const char *const gv_transport_names[2] = {
	[GV_TRANSPORT_VIRTIO_RDMA] = "virtio-rdma",
	[GV_TRANSPORT_PVRDMA] = "pvrdma",
};

int gv_parse_transport(const char *name, enum gv_transport *ret)
{
	for (unsigned int i = 0; i < ARRAY_SIZE(gv_transport_names); i++)
		if (!strcmp(name, gv_transport_names[i])) {
			*ret = (enum gv_transport)i;
			return 0;
		}
	return -EINVAL;
}

void gv_describe(struct gv_context *ctx, FILE *f)
{
	const struct gv_device_attr *a = &ctx->attr;

	fprintf(f, "%-20s %s\n", "transport", ctx->ops->name);
	ctx->ops->describe(ctx, f);
	fprintf(f, "%-20s 0x%016llx\n", "sys_image_guid",
		(unsigned long long)a->sys_image_guid);
	fprintf(f, "%-20s %04x:%04x hw %u\n", "vendor", a->vendor_id,
		a->vendor_part_id, a->hw_ver);
	fprintf(f, "%-20s qp %u (wr %u, sge %u/%u), cq %u (cqe %u)\n", "limits",
		a->max_qp, a->max_qp_wr, a->max_send_sge, a->max_recv_sge,
		a->max_cq, a->max_cqe);
	fprintf(f, "%-20s mr %u, pd %u, ah %u, srq %u (wr %u, sge %u)\n", "",
		a->max_mr, a->max_pd, a->max_ah, a->max_srq, a->max_srq_wr,
		a->max_srq_sge);
	fprintf(f, "%-20s rd_atom %u/%u, atomic %u, pkeys %u, gids %u\n", "",
		a->max_qp_rd_atom, a->max_qp_init_rd_atom, a->atomic_cap,
		a->max_pkeys, a->gid_tbl_len);
}

int gv_query_port(struct gv_context *ctx, struct virtio_rdma_port_attr *ret)
{
	return ctx->ops->query_port(ctx, ret);
}

int gv_query_pkey(struct gv_context *ctx, uint16_t index, uint16_t *ret_pkey)
{
	return ctx->ops->query_pkey(ctx, index, ret_pkey);
}

static bool gid_index_ok(const struct gv_context *ctx, uint16_t index)
{
	return index < VIRTIO_RDMA_GID_TBL_LEN &&
	       (!ctx->attr.gid_tbl_len || index < ctx->attr.gid_tbl_len);
}

int gv_add_gid(struct gv_context *ctx, uint16_t index, const uint8_t gid[16],
	       uint32_t gid_type)
{
	int r;

	if (!gid_index_ok(ctx, index))
		return -EINVAL;
	r = ctx->ops->add_gid(ctx, index, gid, gid_type);
	if (r)
		return r;
	memcpy(ctx->gid[index], gid, 16);
	ctx->gid_type[index] = (uint8_t)(gid_type + 1);
	return 0;
}

int gv_del_gid(struct gv_context *ctx, uint16_t index)
{
	int r;

	if (!gid_index_ok(ctx, index))
		return -EINVAL;
	r = ctx->ops->del_gid(ctx, index);
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

/* ---- guest RAM and buffers ---- */

int gv_layout_ram(struct gv_context *ctx, const struct gv_opts *o)
{
	uint64_t low = o->low_size ? o->low_size : 48ull << 20;
	uint64_t data = o->data_size ? o->data_size : 64ull << 20;
	struct guest_ram *ram = ctx->ram;
	int slot;

	slot = guest_ram_add_region(ram, GV_LOW_GPA, gv_round_up(low, GV_PAGE),
				    GUEST_PAGE_4K);
	if (slot < 0)
		return slot;
	slot = guest_ram_add_region(ram, GV_DATA_GPA,
				    gv_round_up(data, GV_PAGE), GUEST_PAGE_4K);
	if (slot < 0)
		return slot;
	return gv_set_data_slot(ctx, (unsigned int)slot);
}

int gv_set_data_slot(struct gv_context *ctx, unsigned int slot)
{
	const struct guest_ram *ram = ctx->ram;

	if (slot >= ram->nslots)
		return -EINVAL;
	ctx->data_slot = slot;
	ctx->data_fd = ram->blocks[ram->slots[slot].block].fd;
	ctx->data_off = ram->slots[slot].offset;
	return 0;
}

/* Where page i of a buffer goes in its physical region (chunks reversed). */
static uint64_t scatter_page(uint32_t i, uint32_t chunk, uint32_t nchunks)
{
	return (uint64_t)(nchunks - 1 - i / chunk) * chunk + i % chunk;
}

static int map_buf(struct gv_context *ctx, struct gv_buf *b, uint32_t chunk)
{
	const struct guest_slot *s = &ctx->ram->slots[ctx->data_slot];

	for (uint32_t i = 0; i < b->npages; i += chunk) {
		uint32_t n = b->npages - i < chunk ? b->npages - i : chunk;
		uint64_t off = ctx->data_off + (b->gpa[i] - s->gpa);
		void *p =
			mmap((uint8_t *)b->addr + (size_t)i * GV_PAGE,
			     (size_t)n * GV_PAGE, PROT_READ | PROT_WRITE,
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
	r = guest_ram_alloc_in(ctx->ram, ctx->data_slot,
			       (uint64_t)chunk * nchunks * GV_PAGE, GV_PAGE,
			       &base);
	if (r)
		return r;
	for (uint32_t i = 0; i < b->npages; i++)
		b->gpa[i] = base +
			    GV_PAGE * (scatter ? scatter_page(i, chunk, nchunks)
					       : i);
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
	b->npages = (uint32_t)((size + GV_PAGE - 1) / GV_PAGE);
	b->len = (size_t)b->npages * GV_PAGE;
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

struct gv_buf *gv_find_buf(struct gv_context *ctx, const void *addr, size_t len)
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
	struct gv_buf *b = gv_find_buf(ctx, addr, 1);
	size_t off;

	if (!b)
		return 0;
	off = (size_t)((const uint8_t *)addr - (const uint8_t *)b->addr);
	return b->gpa[off / GV_PAGE] + off % GV_PAGE;
}

int gv_pt_get(struct gv_context *ctx, uint64_t *ret_gpa)
{
	uint64_t gpa;
	int r;

	if (ctx->pt_nfree) {
		gpa = ctx->pt_free[--ctx->pt_nfree];
	} else {
		r = guest_ram_alloc_in(ctx->ram, 0, GV_PAGE, GV_PAGE, &gpa);
		if (r)
			return r;
	}
	memset(guest_ram_ptr(ctx->ram, gpa, GV_PAGE), 0, GV_PAGE);
	*ret_gpa = gpa;
	return 0;
}

void gv_pt_put(struct gv_context *ctx, uint64_t gpa)
{
	if (ctx->pt_nfree == ctx->pt_cap) {
		size_t cap = ctx->pt_cap ? 2 * ctx->pt_cap : 64;
		uint64_t *p = realloc(ctx->pt_free, cap * sizeof(*p));

		if (!p)
			return; /* the page is lost, nothing else */
		ctx->pt_free = p;
		ctx->pt_cap = cap;
	}
	ctx->pt_free[ctx->pt_nfree++] = gpa;
}

/* ---- protection domains and memory regions ---- */

int gv_alloc_pd(struct gv_context *ctx, struct gv_pd **ret_pd)
{
	struct gv_pd *pd = calloc(1, sizeof(*pd));
	int r;

	if (!pd)
		return -ENOMEM;
	pd->ctx = ctx;
	r = ctx->ops->alloc_pd(ctx, &pd->pdn);
	if (r) {
		free(pd);
		return r;
	}
	*ret_pd = pd;
	return 0;
}

int gv_dealloc_pd(struct gv_pd *pd)
{
	int r = pd->ctx->ops->dealloc_pd(pd);

	if (!r)
		free(pd);
	return r;
}

int gv_reg_mr(struct gv_pd *pd, void *addr, size_t length, uint32_t access,
	      struct gv_mr **ret_mr)
{
	struct gv_buf *b = gv_find_buf(pd->ctx, addr, length);
	struct gv_mr *mr;
	int r;

	if (!b || !length)
		return -EINVAL;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -ENOMEM;
	mr->pd = pd;
	mr->addr = addr;
	mr->length = length;
	r = pd->ctx->ops->reg_mr(mr, b, access);
	if (r) {
		free(mr);
		return r;
	}
	*ret_mr = mr;
	return 0;
}

int gv_get_dma_mr(struct gv_pd *pd, uint32_t access, struct gv_mr **ret_mr)
{
	struct gv_mr *mr = calloc(1, sizeof(*mr));
	int r;

	if (!mr)
		return -ENOMEM;
	mr->pd = pd;
	r = pd->ctx->ops->get_dma_mr(mr, access);
	if (r) {
		free(mr);
		return r;
	}
	*ret_mr = mr;
	return 0;
}

int gv_dereg_mr(struct gv_mr *mr)
{
	int r = mr->pd->ctx->ops->dereg_mr(mr);

	if (!r)
		free(mr);
	return r;
}

/* ---- completion queues ---- */

int gv_create_cq(struct gv_context *ctx, uint32_t cqe, struct gv_cq **ret_cq)
{
	if (!cqe)
		return -EINVAL;
	return ctx->ops->create_cq(ctx, cqe, ret_cq);
}

int gv_destroy_cq(struct gv_cq *cq)
{
	return cq->ctx->ops->destroy_cq(cq);
}

int gv_poll_cq(struct gv_cq *cq, int n, struct gv_wc *wc)
{
	if (n < 0)
		return -EINVAL;
	return cq->ctx->ops->poll_cq(cq, n, wc);
}

int gv_req_notify_cq(struct gv_cq *cq, bool solicited_only)
{
	return cq->ctx->ops->req_notify_cq(cq, solicited_only);
}

int gv_get_cq_event(struct gv_cq *cq, int timeout_ms)
{
	int r = cq->ctx->ops->get_cq_event(cq, timeout_ms);

	if (!r)
		cq->events++;
	return r;
}

int gv_wait_wc(struct gv_cq *cq, int timeout_ms, struct gv_wc *wc)
{
	uint64_t end = mono_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
	int n = gv_poll_cq(cq, 1, wc);

	while (!n) {
		uint64_t now = mono_ms();
		int r;

		if (now >= end)
			return 0;
		r = gv_req_notify_cq(cq, false);
		if (r)
			return r;
		n = gv_poll_cq(cq, 1, wc); /* one may have come meanwhile */
		if (n)
			break;
		r = gv_get_cq_event(cq, (int)(end - now));
		if (r == -ETIMEDOUT)
			return 0;
		if (r)
			return r;
		n = gv_poll_cq(cq, 1, wc);
	}
	return n;
}

/* ---- queue pairs and shared receive queues ---- */

int gv_create_qp(struct gv_pd *pd, const struct gv_qp_init_attr *attr,
		 struct gv_qp **ret_qp)
{
	if (!attr->send_cq || !attr->recv_cq)
		return -EINVAL;
	return pd->ctx->ops->create_qp(pd, attr, ret_qp);
}

int gv_modify_qp(struct gv_qp *qp, const struct virtio_rdma_qp_attr *attr,
		 uint32_t attr_mask)
{
	return qp->ctx->ops->modify_qp(qp, attr, attr_mask);
}

int gv_query_qp(struct gv_qp *qp, uint32_t attr_mask,
		struct virtio_rdma_qp_attr *ret)
{
	return qp->ctx->ops->query_qp(qp, attr_mask, ret);
}

int gv_destroy_qp(struct gv_qp *qp)
{
	return qp->ctx->ops->destroy_qp(qp);
}

int gv_create_srq(struct gv_pd *pd, uint32_t max_wr, uint32_t max_sge,
		  struct gv_srq **ret_srq)
{
	if (!max_wr)
		return -EINVAL;
	return pd->ctx->ops->create_srq(pd, max_wr, max_sge, ret_srq);
}

int gv_destroy_srq(struct gv_srq *srq)
{
	return srq->ctx->ops->destroy_srq(srq);
}

int gv_create_ah(struct gv_pd *pd, const struct gv_ah_attr *attr,
		 struct gv_ah **ret_ah)
{
	struct gv_ah *ah;
	int r;

	if (attr->sl > 15 || attr->flow_label > VIRTIO_RDMA_FLOW_LABEL_MAX)
		return -EINVAL;
	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return -ENOMEM;
	ah->pd = pd;
	ah->attr = *attr;
	r = pd->ctx->ops->create_ah(ah);
	if (r) {
		free(ah);
		return r;
	}
	*ret_ah = ah;
	return 0;
}

void gv_destroy_ah(struct gv_ah *ah)
{
	free(ah);
}

int gv_post_send(struct gv_qp *qp, struct gv_send_wr *wr,
		 struct gv_send_wr **bad)
{
	return qp->ctx->ops->post_send(qp, wr, bad);
}

int gv_post_recv(struct gv_qp *qp, struct gv_recv_wr *wr,
		 struct gv_recv_wr **bad)
{
	return qp->ctx->ops->post_recv(qp, wr, bad);
}

int gv_post_srq_recv(struct gv_srq *srq, struct gv_recv_wr *wr,
		     struct gv_recv_wr **bad)
{
	return srq->ctx->ops->post_srq_recv(srq, wr, bad);
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
