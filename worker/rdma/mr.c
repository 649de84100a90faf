// SPDX-License-Identifier: MIT
/*
 * Memory registration of guest RAM: REG_USER_MR maps the guest pages of
 * the MR, run by run, from the guest's memfds into one contiguous host
 * range and registers it with ibv_reg_mr_iova(iova = the guest's address);
 * GET_DMA_MR registers each guest RAM region with iova = its GPA.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "common/log.h"
#include "worker/rdma/dev_rdma.h"

#define HUGE_2M (2ull << 20)

int rd_access_to_ibv(uint32_t a)
{
	int f = 0;

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

/* ---- host mappings ---- */

/* A PROT_NONE reservation of len bytes aligned to `align`. */
static void *reserve(size_t len, size_t align, size_t *ret_len)
{
	size_t total;
	uint8_t *p, *a;

	if (__builtin_add_overflow(len, align, &total))
		return NULL;
	p = mmap(NULL, total, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	a = (uint8_t *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	if ((size_t)(a - p) + len < total)
		munmap(a + len, total - (size_t)(a - p) - len);
	*ret_len = len;
	return a;
}

/*
 * Maps guest RAM [gpa, gpa + len) at host address `at` (inside a
 * reservation) with MAP_FIXED from the regions' fds, one mapping per
 * region crossed. Hugetlb regions need 2 MiB-aligned file offsets,
 * lengths and host addresses. 0 or -errno (logged).
 */
static int map_gpa(const struct guest_mem *gm, uint64_t gpa, uint64_t len,
		   uint8_t *at)
{
	while (len > 0) {
		const struct gm_region *g;
		uint64_t off, chunk, foff;
		void *p;

		g = gm_find_gpa(gm, gpa, &off);
		if (!g) {
			log_warnx("MR: GPA 0x%llx is not guest RAM",
				  (unsigned long long)gpa);
			return -EFAULT;
		}
		chunk = g->size - off < len ? g->size - off : len;
		foff = g->mmap_offset + off;
		if (g->page_size > 4096 &&
		    ((foff | chunk | (uintptr_t)at) & (g->page_size - 1))) {
			log_warnx(
				"MR: run at GPA 0x%llx (+0x%llx) is not "
				"aligned to the %llu KiB pages of its hugetlb "
				"region; refused",
				(unsigned long long)gpa,
				(unsigned long long)chunk,
				(unsigned long long)(g->page_size >> 10));
			return -EINVAL;
		}
		p = mmap(at, chunk, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, g->fd, (off_t)foff);
		if (p == MAP_FAILED) {
			log_warn("MR: mapping GPA 0x%llx (+0x%llx)",
				 (unsigned long long)gpa,
				 (unsigned long long)chunk);
			return -errno;
		}
		at += chunk;
		gpa += chunk;
		len -= chunk;
	}
	return 0;
}

static void map_release(struct rd_map *m)
{
	if (m->mr)
		ibv_dereg_mr(m->mr);
	if (m->reserve)
		munmap(m->reserve, m->reserve_len);
	memset(m, 0, sizeof(*m));
}

/* Largest page size of the regions holding the layout's runs. */
static uint64_t layout_align(const struct guest_mem *gm,
			     const struct rdma_mr_layout *lay)
{
	uint64_t align = 4096, off;
	uint32_t i;

	for (i = 0; i < lay->nruns; i++) {
		const struct gm_region *g =
			gm_find_gpa(gm, lay->runs[i].gpa, &off);

		if (g && g->page_size > align)
			align = g->page_size;
	}
	return align;
}

static int map_layout(const struct guest_mem *gm,
		      const struct rdma_mr_layout *lay, struct rd_map *m)
{
	uint64_t bytes = (uint64_t)lay->npages * VIRTIO_RDMA_PAGE_SIZE;
	uint64_t align = layout_align(gm, lay);
	uint32_t i;
	int ret;

	m->reserve = reserve(bytes, align, &m->reserve_len);
	if (!m->reserve)
		return -ENOMEM;
	for (i = 0; i < lay->nruns; i++) {
		const struct rdma_mr_run *r = &lay->runs[i];
		uint8_t *at = (uint8_t *)m->reserve +
			      (uint64_t)r->first_page * VIRTIO_RDMA_PAGE_SIZE;

		ret = map_gpa(gm, r->gpa,
			      (uint64_t)r->npages * VIRTIO_RDMA_PAGE_SIZE, at);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int alloc_mrn(struct rdma_dev *d, uint32_t *ret_mrn)
{
	uint32_t i;

	for (i = 1; i <= d->cfg->lim.max_mr; i++)
		if (!d->mr[i].used) {
			*ret_mrn = i;
			return 0;
		}
	log_warnx("MR: all %u MR handles in use", d->cfg->lim.max_mr);
	return -ENOSPC;
}

int rd_reg_user_mr(struct rdma_dev *d,
		   const struct virtio_rdma_cmd_reg_user_mr *req,
		   uint32_t *ret_mrn)
{
	struct rdma_mr_pt_args a = {
		.root = req->pages,
		.npages = req->npages,
		.start = req->start,
		.length = req->length,
		.virt_addr = req->virt_addr,
	};
	struct rdma_mr_layout lay;
	struct rdma_reason why;
	struct rd_map m = { 0 };
	struct rd_mr *mr;
	struct rd_pd *pd;
	uint32_t mrn, need;
	uint8_t *host;
	int ret;

	if (rd_lookup_pd(d, req->pdn, &pd) < 0)
		return -EINVAL;
	if (!d->mem)
		return -EFAULT;
	ret = alloc_mrn(d, &mrn);
	if (ret < 0)
		return ret;
	ret = rdma_mr_pt_walk(&a, &pt_ops, (void *)d->mem, &lay, &why);
	if (ret < 0) {
		log_warnx("%s", why.msg);
		return ret;
	}
	/* Each run may cross a region boundary once more: 2 per run. */
	need = 1 + 2 * lay.nruns;
	if (need > RD_MAX_MAPPINGS - d->mappings) {
		log_warnx("REG_USER_MR: %u runs of guest pages would need up "
			  "to %u host mappings; %u of %u are in use",
			  lay.nruns, need, d->mappings, RD_MAX_MAPPINGS);
		rdma_mr_layout_release(&lay);
		return -ENOMEM;
	}
	ret = map_layout(d->mem, &lay, &m);
	if (ret < 0)
		goto fail;
	host = (uint8_t *)m.reserve +
	       (req->start & (VIRTIO_RDMA_PAGE_SIZE - 1));
	m.mr = ibv_reg_mr_iova(pd->pd, host, req->length, req->virt_addr,
			       rd_access_to_ibv(req->access_flags));
	if (!m.mr) {
		ret = -(errno ? errno : EIO);
		log_warn("REG_USER_MR: ibv_reg_mr_iova of %llu bytes",
			 (unsigned long long)req->length);
		goto fail;
	}
	log_debug("REG_USER_MR: mr %u, %llu bytes at iova 0x%llx in %u runs, "
		  "lkey 0x%x",
		  mrn, (unsigned long long)req->length,
		  (unsigned long long)req->virt_addr, lay.nruns, m.mr->lkey);
	rdma_mr_layout_release(&lay);
	mr = &d->mr[mrn];
	memset(mr, 0, sizeof(*mr));
	mr->used = true;
	mr->pdn = req->pdn;
	mr->access = req->access_flags;
	mr->lkey = m.mr->lkey;
	mr->rkey = (req->access_flags & (VIRTIO_RDMA_ACCESS_REMOTE_WRITE |
					 VIRTIO_RDMA_ACCESS_REMOTE_READ |
					 VIRTIO_RDMA_ACCESS_REMOTE_ATOMIC))
			   ? m.mr->rkey
			   : 0;
	mr->nmaps = 1;
	mr->maps[0] = m;
	mr->mappings = need;
	d->mappings += need;
	pd->refs++;
	*ret_mrn = mrn;
	return 0;
fail:
	map_release(&m);
	rdma_mr_layout_release(&lay);
	return ret;
}

int rd_get_dma_mr(struct rdma_dev *d, uint32_t pdn, uint32_t access,
		  uint32_t *ret_mrn)
{
	struct rd_mr *mr;
	struct rd_pd *pd;
	uint32_t mrn, i;
	int ret;

	if (rd_lookup_pd(d, pdn, &pd) < 0)
		return -EINVAL;
	if (pd->dma_mrn) {
		log_warnx("GET_DMA_MR: PD %u already has DMA MR %u", pdn,
			  pd->dma_mrn);
		return -EEXIST;
	}
	if (!d->mem || d->mem->nregions == 0)
		return -EFAULT;
	ret = alloc_mrn(d, &mrn);
	if (ret < 0)
		return ret;
	mr = &d->mr[mrn];
	memset(mr, 0, sizeof(*mr));
	for (i = 0; i < d->mem->nregions; i++) {
		const struct gm_region *g = &d->mem->regions[i];
		struct rd_map *m = &mr->maps[i];

		mr->nmaps = i + 1;
		m->gpa = g->gpa;
		m->len = g->size;
		m->reserve = reserve(g->size, g->page_size, &m->reserve_len);
		ret = m->reserve ? map_gpa(d->mem, g->gpa, g->size, m->reserve)
				 : -ENOMEM;
		if (ret < 0)
			goto fail;
		m->mr = ibv_reg_mr_iova(pd->pd, m->reserve, g->size, g->gpa,
					rd_access_to_ibv(access));
		if (!m->mr) {
			ret = -(errno ? errno : EIO);
			log_warn("GET_DMA_MR: registering guest RAM at 0x%llx "
				 "(+0x%llx)",
				 (unsigned long long)g->gpa,
				 (unsigned long long)g->size);
			goto fail;
		}
	}
	mr->used = true;
	mr->dma = true;
	mr->pdn = pdn;
	mr->access = access;
	/* The virtual DMA lkey is the first part's: a real, unique key. */
	mr->lkey = mr->maps[0].mr->lkey;
	mr->rkey = 0;
	pd->dma_mrn = mrn;
	pd->refs++;
	*ret_mrn = mrn;
	return 0;
fail:
	for (i = 0; i < mr->nmaps; i++)
		map_release(&mr->maps[i]);
	memset(mr, 0, sizeof(*mr));
	return ret;
}

void rd_mr_free(struct rdma_dev *d, uint32_t mrn)
{
	struct rd_mr *mr = &d->mr[mrn];
	unsigned int i;

	for (i = 0; i < mr->nmaps; i++)
		map_release(&mr->maps[i]);
	if (mr->dma && d->pd[mr->pdn].dma_mrn == mrn)
		d->pd[mr->pdn].dma_mrn = 0;
	d->mappings -= mr->mappings;
	d->pd[mr->pdn].refs--;
	memset(mr, 0, sizeof(*mr));
}

int rd_dma_lkey(const struct rdma_dev *d, uint32_t pdn, uint32_t lkey,
		uint64_t addr, uint32_t len, uint32_t *ret_lkey)
{
	const struct rd_mr *mr;
	uint32_t mrn = d->pd[pdn].dma_mrn;
	unsigned int i;

	if (!mrn || d->mr[mrn].lkey != lkey)
		return -ENOENT;
	mr = &d->mr[mrn];
	for (i = 0; i < mr->nmaps; i++) {
		const struct rd_map *m = &mr->maps[i];

		if (addr >= m->gpa && addr - m->gpa < m->len &&
		    len <= m->len - (addr - m->gpa)) {
			*ret_lkey = m->mr->lkey;
			return 0;
		}
	}
	return -EFAULT;
}
