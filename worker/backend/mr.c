// SPDX-License-Identifier: MIT
/*
 * Memory registration of guest RAM: a user MR of one run inside one guest
 * memory region is registered on that region's own mapping; any other
 * user MR's guest pages are mapped, run by run, from the guest's memory
 * fds into one contiguous host range; either with ibv_reg_mr_iova(iova =
 * the guest's address).  The DMA MR registers each guest RAM region with
 * iova = its GPA, for local access (the writable regions only).
 *
 * The VMM's DMA contract (docs/vfio-user.md): a read-only region is never
 * registered with write access (a user MR asking for any is refused, the
 * DMA MR has no part over it), and a region the VMM takes back
 * (DMA_UNMAP, bus mastering off) is revoked first: every host MR over it
 * is deregistered (be_mem_revoke).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/log.h"
#include "worker/backend/be_impl.h"

#define HUGE_2M (2ull << 20)

/* Access that lets the HCA write into the MR's memory. */
#define WRITE_ACCESS                                                           \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                    \
	 IBV_ACCESS_REMOTE_ATOMIC)

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
 * The hugetlb rule: a run of an MR in a hugetlb region covers whole huge
 * pages (file offset, length; the host address where it is remapped).
 * 0, or -EINVAL (logged).
 */
static int huge_aligned(const struct gm_region *g, uint64_t gpa, uint64_t foff,
			uint64_t chunk, uintptr_t at)
{
	if (g->page_size <= 4096 || !((foff | chunk | at) & (g->page_size - 1)))
		return 0;
	log_peer_warnx("MR: run at GPA 0x%llx (+0x%llx) is not aligned to the "
		       "%llu KiB pages of its hugetlb region; refused",
		       (unsigned long long)gpa, (unsigned long long)chunk,
		       (unsigned long long)(g->page_size >> 10));
	return -EINVAL;
}

/*
 * Maps guest RAM [gpa, gpa + len) at host address `at` (inside a
 * reservation) with MAP_FIXED from the regions' fds, one mapping per
 * region crossed, with each region's protection. Hugetlb regions need
 * 2 MiB-aligned file offsets, lengths and host addresses; write (the MR
 * asks for write access): no region may be read-only (-EACCES). 0 or
 * -errno (logged).
 */
static int map_gpa(const struct guest_mem *gm, uint64_t gpa, uint64_t len,
		   uint8_t *at, bool write)
{
	while (len > 0) {
		const struct gm_region *g;
		uint64_t off, chunk, foff;
		void *p;

		g = gm_find_gpa(gm, gpa, &off);
		if (!g) {
			log_peer_warnx("MR: GPA 0x%llx is not guest RAM",
				       (unsigned long long)gpa);
			return -EFAULT;
		}
		if (write && !gm_region_writable(g)) {
			log_peer_warnx("MR: GPA 0x%llx is in a read-only DMA "
				       "region; write access refused",
				       (unsigned long long)gpa);
			return -EACCES;
		}
		chunk = g->size - off < len ? g->size - off : len;
		foff = g->mmap_offset + off;
		if (huge_aligned(g, gpa, foff, chunk, (uintptr_t)at) < 0)
			return -EINVAL;
		p = mmap(at, chunk, g->prot, MAP_SHARED | MAP_FIXED, g->fd,
			 (off_t)foff);
		if (p == MAP_FAILED) {
			log_peer_warn("MR: mapping GPA 0x%llx (+0x%llx)",
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

/*
 * What every finished MR mapping gets, like the guest memory it remaps
 * (worker/guest_mem.h): no guest RAM in a core dump (a SIGSYS core
 * included; after the mappings, since MAP_FIXED replaced the reservation's
 * advice), and the SIGBUS guard, so a frontend that shrinks the file under
 * a registered MR loses its connection, not the worker.  granule: the
 * largest page size mapped (zero pages over a lost page may cover more of
 * the worker's view of the MR; the connection is dropped anyway).
 */
static int map_finish(struct be_map *m, uint64_t granule)
{
	int ret;

	if (madvise(m->reserve, m->reserve_len, MADV_DONTDUMP) < 0) {
		ret = -errno;
		log_warn("MR: cannot exclude the mapping from core dumps");
		return ret;
	}
	if (gm_guard_add(m->reserve, m->reserve_len, granule) < 0) {
		log_peer_warnx("MR: no SIGBUS guard slot left (%u in use)",
			       GM_GUARD_MAX);
		return -ENOSPC;
	}
	return 0;
}

static void map_release(struct be_map *m)
{
	if (m->mr)
		ibv_dereg_mr(m->mr);
	if (m->reserve) {
		gm_guard_del(m->reserve);
		munmap(m->reserve, m->reserve_len);
	}
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
		      const struct rdma_mr_layout *lay, bool write,
		      struct be_map *m)
{
	uint64_t bytes = (uint64_t)lay->npages * RDMA_MR_PAGE_SIZE;
	uint64_t align = layout_align(gm, lay);
	uint32_t i;
	int ret;

	m->reserve = reserve(bytes, align, &m->reserve_len);
	if (!m->reserve)
		return -ENOMEM;
	for (i = 0; i < lay->nruns; i++) {
		const struct rdma_mr_run *r = &lay->runs[i];
		uint8_t *at = (uint8_t *)m->reserve +
			      (uint64_t)r->first_page * RDMA_MR_PAGE_SIZE;

		ret = map_gpa(gm, r->gpa,
			      (uint64_t)r->npages * RDMA_MR_PAGE_SIZE, at,
			      write);
		if (ret < 0)
			return ret;
	}
	return map_finish(m, align);
}

static int alloc_mrn(struct be *be, uint32_t *ret_mrn)
{
	uint32_t i;

	for (i = 1; i <= (uint32_t)be->attr.max_mr; i++)
		if (!be->mr[i].used) {
			*ret_mrn = i;
			return 0;
		}
	be_refused(be, "MR: all %d MR handles in use", be->attr.max_mr);
	return -ENOSPC;
}

/* The layout's runs fit its page count, in order, without overlap. */
static bool layout_sane(const struct rdma_mr_layout *lay)
{
	uint64_t next = 0, bytes;
	uint32_t i;

	if (lay->npages == 0 || lay->length == 0 || !lay->runs ||
	    lay->virt_addr > UINT64_MAX - lay->length)
		return false;
	bytes = (lay->start & (RDMA_MR_PAGE_SIZE - 1)) + lay->length;
	if (bytes < lay->length ||
	    (bytes + RDMA_MR_PAGE_SIZE - 1) / RDMA_MR_PAGE_SIZE != lay->npages)
		return false;
	for (i = 0; i < lay->nruns; i++) {
		const struct rdma_mr_run *r = &lay->runs[i];

		if (r->first_page != next || r->npages == 0 ||
		    r->npages > lay->npages - next ||
		    (r->gpa & (RDMA_MR_PAGE_SIZE - 1)) ||
		    r->gpa > UINT64_MAX -
				     (uint64_t)r->npages * RDMA_MR_PAGE_SIZE)
			return false;
		next += r->npages;
	}
	return next == lay->npages;
}

/*
 * The fast path: an MR of one run inside one guest memory region is
 * registered on the region's own mapping (populated by the guest's use, so
 * the HCA's pinning walks page tables that exist instead of faulting in a
 * fresh mapping page by page).  The same rules as a remapped MR: every
 * page guest RAM, whole huge pages in a hugetlb region.  Returns 1 (done,
 * *m filled), 0 (not one run in one region: remap), or -errno.
 */
static int reg_in_region(struct be *be, struct ibv_pd *pd,
			 const struct rdma_mr_layout *lay, unsigned int access,
			 struct be_map *m)
{
	const struct rdma_mr_run *r = &lay->runs[0];
	uint64_t bytes = (uint64_t)r->npages * RDMA_MR_PAGE_SIZE;
	uint64_t pgoff = lay->start & (RDMA_MR_PAGE_SIZE - 1);
	const struct gm_region *g;
	uint64_t off;
	int ret;

	if (lay->nruns != 1)
		return 0;
	g = gm_find_gpa(be->mem, r->gpa, &off);
	if (!g || bytes > g->size - off)
		return 0; /* crosses regions, or not RAM: map_gpa() says */
	if ((access & WRITE_ACCESS) && !gm_region_writable(g)) {
		be_refused(be,
			   "REG_MR: GPA 0x%llx is in a read-only DMA region; "
			   "write access 0x%x refused",
			   (unsigned long long)r->gpa, access & WRITE_ACCESS);
		return -EACCES;
	}
	ret = huge_aligned(g, r->gpa, g->mmap_offset + off, bytes,
			   (uintptr_t)(g->host + off));
	if (ret < 0)
		return ret;
	m->mr = ibv_reg_mr_iova(pd, g->host + off + pgoff, lay->length,
				lay->virt_addr, (int)access);
	if (!m->mr) {
		ret = -(errno ? errno : EIO);
		log_peer_warn("REG_MR: ibv_reg_mr_iova of %llu bytes",
			      (unsigned long long)lay->length);
		return ret;
	}
	m->gpa = r->gpa + pgoff;
	m->len = lay->length;
	return 1;
}

/*
 * The GPA ranges of a registered user MR, for be_mem_revoke(): the one
 * range on a region's mapping (fast), else the layout's runs.  0 or
 * -ENOMEM (*ret is then untouched).
 */
static int keep_runs(const struct rdma_mr_layout *lay, const struct be_map *m,
		     bool fast, struct be_gpa_run **ret)
{
	uint32_t i, n = fast ? 1 : lay->nruns;
	struct be_gpa_run *runs = calloc(n, sizeof(*runs));

	if (!runs)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		runs[i] = fast ? (struct be_gpa_run){ m->gpa, m->len }
			       : (struct be_gpa_run){
					 lay->runs[i].gpa,
					 (uint64_t)lay->runs[i].npages *
						 RDMA_MR_PAGE_SIZE
				 };
	*ret = runs;
	return 0;
}

#define REMOTE_ACCESS                                                          \
	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |                    \
	 IBV_ACCESS_REMOTE_ATOMIC)
#define USER_ACCESS                                                            \
	(IBV_ACCESS_LOCAL_WRITE | REMOTE_ACCESS | IBV_ACCESS_RELAXED_ORDERING)

int be_mr_reg(struct be *be, uint32_t pdh, const struct rdma_mr_layout *lay,
	      unsigned int access, struct be_mr_info *ret)
{
	struct be_map m = { 0 };
	struct be_gpa_run *runs = NULL;
	struct be_mr *mr;
	struct be_pd *pd;
	uint32_t mrn, need;
	uint8_t *host;
	int r;

	pd = be_pd_get(be, pdh);
	if (!pd)
		return -EINVAL;
	if (access & ~(unsigned int)USER_ACCESS) {
		be_refused(be, "REG_MR: access flags 0x%x", access);
		return -EINVAL;
	}
	if (!layout_sane(lay)) {
		be_refused(be, "REG_MR: an inconsistent page layout");
		return -EINVAL;
	}
	if ((uint64_t)lay->length > be->attr.max_mr_size) {
		be_refused(be, "REG_MR: %llu bytes, at most %llu",
			   (unsigned long long)lay->length,
			   (unsigned long long)be->attr.max_mr_size);
		return -EINVAL;
	}
	/* pages outside guest RAM fail in map_layout() (-EFAULT) */
	if (!be->mem)
		return -EFAULT;
	r = alloc_mrn(be, &mrn);
	if (r < 0)
		return r;
	r = reg_in_region(be, pd->pd, lay, access, &m);
	if (r < 0)
		return r;
	if (r == 1) {
		need = 0;
		goto done;
	}
	/* Each run may cross a region boundary once more: 2 per run. */
	need = 1 + 2 * lay->nruns;
	if (lay->nruns > BE_MAX_MAPPINGS ||
	    need > BE_MAX_MAPPINGS - be->mappings) {
		be_refused(be,
			   "REG_MR: %u runs of guest pages would need up to "
			   "%u host mappings; %u of %u are in use",
			   lay->nruns, need, be->mappings, BE_MAX_MAPPINGS);
		return -ENOMEM;
	}
	r = map_layout(be->mem, lay, access & WRITE_ACCESS, &m);
	if (r < 0)
		goto fail;
	host = (uint8_t *)m.reserve + (lay->start & (RDMA_MR_PAGE_SIZE - 1));
	m.mr = ibv_reg_mr_iova(pd->pd, host, lay->length, lay->virt_addr,
			       (int)access);
	if (!m.mr) {
		r = -(errno ? errno : EIO);
		log_peer_warn("REG_MR: ibv_reg_mr_iova of %llu bytes",
			      (unsigned long long)lay->length);
		goto fail;
	}
done:
	r = keep_runs(lay, &m, need == 0, &runs);
	if (r < 0)
		goto fail;
	log_debug("REG_MR: mr %u, %llu bytes at iova 0x%llx in %u runs%s, "
		  "lkey 0x%x",
		  mrn, (unsigned long long)lay->length,
		  (unsigned long long)lay->virt_addr, lay->nruns,
		  need ? "" : " (on the region's mapping)", m.mr->lkey);
	mr = &be->mr[mrn];
	memset(mr, 0, sizeof(*mr));
	mr->used = true;
	mr->fast = need == 0;
	mr->pd = pdh;
	mr->access = access;
	mr->lkey = m.mr->lkey;
	mr->rkey = (access & REMOTE_ACCESS) ? m.mr->rkey : 0;
	mr->iova = lay->virt_addr; /* QP1 copies by it */
	mr->nmaps = 1;
	mr->maps[0] = m;
	mr->runs = runs;
	mr->nruns = need ? lay->nruns : 1;
	mr->mappings = need;
	be->mappings += need;
	pd->refs++;
	*ret = (struct be_mr_info){ mrn, mr->lkey, mr->rkey };
	return 0;
fail:
	map_release(&m);
	return r;
}

/*
 * One part of a DMA MR: region g mapped into its own reservation and
 * registered with iova = its GPA.  0 or -errno (logged); *m is then for
 * map_release().
 */
static int dma_part(struct ibv_pd *pd, const struct guest_mem *gm,
		    const struct gm_region *g, unsigned int access,
		    struct be_map *m)
{
	int r;

	m->gpa = g->gpa;
	m->len = g->size;
	m->access = access;
	m->reserve = reserve(g->size, g->page_size, &m->reserve_len);
	r = m->reserve ? map_gpa(gm, g->gpa, g->size, m->reserve, false)
		       : -ENOMEM;
	if (r == 0)
		r = map_finish(m, g->page_size);
	if (r < 0)
		return r;
	m->mr = ibv_reg_mr_iova(pd, m->reserve, g->size, g->gpa, (int)access);
	if (!m->mr) {
		r = -(errno ? errno : EIO);
		log_peer_warn("GET_DMA_MR: registering guest RAM at 0x%llx "
			      "(+0x%llx)",
			      (unsigned long long)g->gpa,
			      (unsigned long long)g->size);
		return r;
	}
	return 0;
}

/* The live part whose host key is the DMA MR's virtual lkey, if any. */
static bool dma_key_live(const struct be_mr *mr)
{
	unsigned int i;

	for (i = 0; i < mr->nmaps; i++)
		if (mr->maps[i].mr && mr->maps[i].mr->lkey == mr->lkey)
			return true;
	return false;
}

int be_mr_reg_dma(struct be *be, uint32_t pdh, unsigned int access,
		  struct be_mr_info *ret)
{
	struct be_mr *mr;
	struct be_pd *pd;
	uint32_t mrn, i;
	int r = 0;

	pd = be_pd_get(be, pdh);
	if (!pd)
		return -EINVAL;
	if (pd->dma_mr) {
		be_refused(be, "GET_DMA_MR: PD %u already has DMA MR %u", pdh,
			   pd->dma_mr);
		return -EEXIST;
	}
	if (!be->mem || be->mem->nregions == 0)
		return -EFAULT;
	/* never more regions than an MR holds parts (a table's limit moves) */
	if (be->mem->nregions > GM_TABLE_REGIONS) {
		be_refused(be,
			   "GET_DMA_MR: %u guest memory regions, at most %u",
			   be->mem->nregions, GM_TABLE_REGIONS);
		return -E2BIG;
	}
	r = alloc_mrn(be, &mrn);
	if (r < 0)
		return r;
	/*
	 * Local access only, whatever the guest asked: the DMA MR covers all
	 * of guest RAM, and the guest is told rkey 0, so a remote key would
	 * only serve a peer that guesses it (on rxe the rkey is the lkey).
	 */
	access &= IBV_ACCESS_LOCAL_WRITE;
	mr = &be->mr[mrn];
	memset(mr, 0, sizeof(*mr));
	/*
	 * A read-only region (ROM) gets no part: the HCA must not write it,
	 * and a read-only registration of a read-only shared mapping fails
	 * on kernels before 6.2 anyway (ib_umem_get pins with FOLL_WRITE |
	 * FOLL_FORCE).  SGEs there complete with LOC_PROT_ERR.
	 */
	for (i = 0; i < be->mem->nregions && r == 0; i++) {
		const struct gm_region *g = &be->mem->regions[i];

		if (!gm_region_writable(g))
			continue;
		r = dma_part(pd->pd, be->mem, g, access,
			     &mr->maps[mr->nmaps++]);
		/* The virtual DMA lkey is the first part's: a real key. */
		if (r == 0 && !mr->lkey)
			mr->lkey = mr->maps[mr->nmaps - 1].mr->lkey;
	}
	if (r == 0 && !mr->nmaps) {
		be_refused(be, "GET_DMA_MR: no writable guest RAM to register");
		r = -EFAULT;
	}
	if (r < 0)
		goto fail;
	mr->used = true;
	mr->dma = true;
	mr->pd = pdh;
	mr->access = access;
	mr->rkey = 0;
	pd->dma_mr = mrn;
	pd->refs++;
	*ret = (struct be_mr_info){ mrn, mr->lkey, 0 };
	return 0;
fail:
	for (i = 0; i < mr->nmaps; i++)
		map_release(&mr->maps[i]);
	memset(mr, 0, sizeof(*mr));
	return r;
}

void be_mr_free(struct be *be, uint32_t mrn)
{
	struct be_mr *mr = &be->mr[mrn];
	unsigned int i;

	for (i = 0; i < mr->nmaps; i++)
		map_release(&mr->maps[i]);
	free(mr->runs);
	if (mr->dead)
		be->dead_mrs--;
	if (mr->dma && be->pd[mr->pd].dma_mr == mrn)
		be->pd[mr->pd].dma_mr = 0;
	be->mappings -= mr->mappings;
	be->pd[mr->pd].refs--;
	memset(mr, 0, sizeof(*mr));
}

int be_mr_dereg(struct be *be, uint32_t mrn)
{
	if (mrn == 0 || mrn > (uint32_t)be->attr.max_mr || !be->mr[mrn].used) {
		be_refused(be, "DEREG_MR: unknown MR %u", mrn);
		return -ENOENT;
	}
	be_mr_free(be, mrn);
	return 0;
}

/*
 * Whether user MRs on PD pd with lkey are dead (revoked) or live.  A
 * revoked MR's host key is free again: the host may give it to a new MR.
 */
static bool user_lkey(const struct be *be, uint32_t pd, uint32_t lkey,
		      bool dead)
{
	uint32_t i;

	for (i = 1; i <= (uint32_t)be->attr.max_mr; i++) {
		const struct be_mr *mr = &be->mr[i];

		if (mr->used && !mr->dma && mr->dead == dead && mr->pd == pd &&
		    mr->lkey == lkey)
			return true;
	}
	return false;
}

int be_dma_lkey(const struct be *be, uint32_t pd, uint32_t lkey, uint64_t addr,
		uint32_t len, bool write, uint32_t *ret_lkey)
{
	const struct be_mr *mr;
	uint32_t mrn = be->pd[pd].dma_mr;
	unsigned int i;

	mr = mrn ? &be->mr[mrn] : NULL;
	/* the virtual key is a part's: revoked, it may be a new MR's */
	if (!mr || mr->lkey != lkey ||
	    (!dma_key_live(mr) && user_lkey(be, pd, lkey, false))) {
		/* no scan on the data path unless something was revoked */
		if (be->dead_mrs && user_lkey(be, pd, lkey, true) &&
		    !user_lkey(be, pd, lkey, false))
			return -EFAULT;
		return -ENOENT;
	}
	for (i = 0; i < mr->nmaps; i++) {
		const struct be_map *m = &mr->maps[i];

		if (!m->mr || addr < m->gpa || addr - m->gpa >= m->len ||
		    len > m->len - (addr - m->gpa))
			continue;
		if (write && !(m->access & IBV_ACCESS_LOCAL_WRITE))
			return -EFAULT; /* registered without LOCAL_WRITE */
		*ret_lkey = m->mr->lkey;
		return 0;
	}
	return -EFAULT;
}

/* Host address of [addr, addr + len) in part m of mr, or NULL. */
static uint8_t *part_host(const struct be *be, const struct be_mr *mr,
			  const struct be_map *m, uint64_t addr, uint32_t len,
			  bool write)
{
	uint64_t base = mr->dma ? m->gpa : mr->iova;
	uint64_t size = mr->dma ? m->len : m->mr->length;
	uint8_t *host =
		mr->dma ? (uint8_t *)m->reserve : (uint8_t *)m->mr->addr;

	if (addr < base || addr - base > size || len > size - (addr - base))
		return NULL;
	if (write && !(m->access & IBV_ACCESS_LOCAL_WRITE) && mr->dma)
		return NULL; /* a DMA MR registered without LOCAL_WRITE */
	if (!mr->fast)
		return host + (addr - base);
	/* on a region's mapping: through today's table */
	if (!be->mem)
		return NULL;
	return write ? gm_gpa_to_host_w(be->mem, m->gpa + (addr - base), len)
		     : gm_gpa_to_host(be->mem, m->gpa + (addr - base), len);
}

uint8_t *be_sge_host(const struct be *be, uint32_t pd, uint32_t lkey,
		     uint64_t addr, uint32_t len, bool write)
{
	uint32_t i;
	unsigned int k;

	for (i = 1; i <= (uint32_t)be->attr.max_mr; i++) {
		const struct be_mr *mr = &be->mr[i];
		uint8_t *host;

		/*
		 * A revoked MR has no memory; its key (or a DMA MR's, when
		 * part 0 was revoked) may be a newer MR's: look on.
		 */
		if (!mr->used || mr->dead || mr->pd != pd || mr->lkey != lkey)
			continue;
		if (write && !(mr->access & IBV_ACCESS_LOCAL_WRITE))
			continue;
		for (k = 0; k < mr->nmaps; k++) {
			if (!mr->maps[k].mr)
				continue; /* a revoked DMA MR part */
			host = part_host(be, mr, &mr->maps[k], addr, len,
					 write);
			if (host)
				return host;
		}
	}
	return NULL;
}

/* [a, a + alen) and [b, b + blen) intersect (ends saturate, no wrap). */
static bool overlaps(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	uint64_t aend = a + alen < a ? UINT64_MAX : a + alen;
	uint64_t bend = b + blen < b ? UINT64_MAX : b + blen;

	return a < bend && b < aend;
}

/* Revokes what of MR mrn covers [gpa, gpa + size); true if anything. */
static bool revoke_mr(struct be *be, uint32_t mrn, uint64_t gpa, uint64_t size)
{
	struct be_mr *mr = &be->mr[mrn];
	bool hit = false;
	uint32_t k;

	if (mr->dma) {
		for (k = 0; k < mr->nmaps; k++) {
			struct be_map *m = &mr->maps[k];

			if (m->mr && overlaps(m->gpa, m->len, gpa, size)) {
				map_release(m); /* deregisters, unmaps */
				hit = true;
			}
		}
		return hit;
	}
	for (k = 0; k < mr->nruns && !hit; k++)
		hit = overlaps(mr->runs[k].gpa, mr->runs[k].len, gpa, size);
	if (!hit)
		return false;
	map_release(&mr->maps[0]);
	free(mr->runs);
	mr->runs = NULL;
	mr->nruns = 0;
	be->mappings -= mr->mappings;
	mr->mappings = 0;
	mr->dead = true;
	be->dead_mrs++;
	return true;
}

unsigned int be_mem_revoke(struct be *be, uint64_t gpa, uint64_t size)
{
	unsigned int n = 0;
	uint32_t i;

	if (!be)
		return 0;
	for (i = 1; i <= (uint32_t)be->attr.max_mr; i++) {
		struct be_mr *mr = &be->mr[i];

		if (!mr->used || mr->dead || !revoke_mr(be, i, gpa, size))
			continue;
		n++;
		log_debug("MR %u (lkey 0x%x) revoked: its guest memory at "
			  "0x%llx (+0x%llx) went away",
			  i, mr->lkey, (unsigned long long)gpa,
			  (unsigned long long)size);
	}
	/* the guest (bus mastering) or the VMM can repeat it: limited */
	if (n)
		log_peer_info("guest memory at 0x%llx (+0x%llx) went away: "
			      "%u memory registration%s revoked",
			      (unsigned long long)gpa, (unsigned long long)size,
			      n, n == 1 ? "" : "s");
	return n;
}
