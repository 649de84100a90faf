// SPDX-License-Identifier: MIT
/* Guest memory table: mapping frontend memfds and translating addresses. */
#include "guest_mem.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

void gm_init(struct guest_mem *gm)
{
	memset(gm, 0, sizeof(*gm));
}

void gm_clear(struct guest_mem *gm)
{
	unsigned int i;

	for (i = 0; i < gm->nregions; i++) {
		munmap(gm->regions[i].map_base, gm->regions[i].map_len);
		close(gm->regions[i].fd);
	}
	gm_init(gm);
}

void gm_move(struct guest_mem *dst, struct guest_mem *src)
{
	*dst = *src;
	gm_init(src);
}

/* True if [a, a + alen) and [b, b + blen) intersect; no overflow (checked). */
static bool ranges_overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

int gm_check_region(const struct guest_mem *gm,
		    const struct vhost_user_mem_region *r, const char **ret_why)
{
	uint64_t end;
	unsigned int i;

	if (r->memory_size == 0) {
		*ret_why = "zero size";
		return -EINVAL;
	}
	if (__builtin_add_overflow(r->guest_phys_addr, r->memory_size, &end) ||
	    __builtin_add_overflow(r->userspace_addr, r->memory_size, &end) ||
	    __builtin_add_overflow(r->mmap_offset, r->memory_size, &end) ||
	    end > (uint64_t)INT64_MAX) {
		*ret_why = "address or offset + size overflows";
		return -EINVAL;
	}
	if (r->memory_size > SIZE_MAX) {
		*ret_why = "size larger than the address space";
		return -EINVAL;
	}
	for (i = 0; i < gm->nregions; i++) {
		const struct gm_region *o = &gm->regions[i];

		if (ranges_overlap(o->gpa, o->size, r->guest_phys_addr,
				   r->memory_size)) {
			*ret_why = "guest-physical range overlaps a region";
			return -EINVAL;
		}
		if (ranges_overlap(o->uva, o->size, r->userspace_addr,
				   r->memory_size)) {
			*ret_why = "frontend address range overlaps a region";
			return -EINVAL;
		}
	}
	if (gm->nregions >= gm_max_regions(gm)) {
		*ret_why = "no free memory slot";
		return -ENOSPC;
	}
	return 0;
}

/* Mapping granule: the fd's block size (huge page size on hugetlbfs). */
static uint64_t map_align(const struct stat *st)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t blk = (uint64_t)st->st_blksize;

	if (blk > page && (blk & (blk - 1)) == 0 && blk <= (1ull << 30))
		return blk;
	return page;
}

static int map_region(struct gm_region *g, int fd, const char **ret_why)
{
	uint64_t align, start, end;
	struct stat st;
	void *p;

	if (fstat(fd, &st) < 0) {
		*ret_why = "cannot fstat the region's fd";
		return -errno;
	}
	if (!S_ISREG(st.st_mode)) {
		*ret_why = "region fd is not a memfd or regular file";
		return -EINVAL;
	}
	/* Checked by gm_check_region(): no overflow below INT64_MAX. */
	if (st.st_size < 0 || g->mmap_offset + g->size > (uint64_t)st.st_size) {
		*ret_why = "mmap_offset + size is past the end of the fd";
		return -EINVAL;
	}
	align = map_align(&st);
	g->page_size = align;
	start = g->mmap_offset & ~(align - 1);
	end = (g->mmap_offset + g->size + align - 1) & ~(align - 1);
	p = mmap(NULL, end - start, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 (off_t)start);
	if (p == MAP_FAILED) {
		*ret_why = "mmap of the region failed";
		return -errno;
	}
	g->map_base = p;
	g->map_len = end - start;
	g->host = (uint8_t *)p + (g->mmap_offset - start);
	return 0;
}

int gm_add_region(struct guest_mem *gm, const struct vhost_user_mem_region *r,
		  int fd, const char **ret_why)
{
	struct gm_region g = {
		.gpa = r->guest_phys_addr,
		.size = r->memory_size,
		.uva = r->userspace_addr,
		.mmap_offset = r->mmap_offset,
	};
	int ret;

	ret = gm_check_region(gm, r, ret_why);
	if (ret < 0)
		return ret;
	g.fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (g.fd < 0) {
		*ret_why = "cannot duplicate the region's fd";
		return -errno;
	}
	ret = map_region(&g, fd, ret_why);
	if (ret < 0) {
		close(g.fd);
		return ret;
	}
	gm->regions[gm->nregions++] = g;
	return 0;
}

int gm_remove_region(struct guest_mem *gm,
		     const struct vhost_user_mem_region *r)
{
	unsigned int i;

	for (i = 0; i < gm->nregions; i++) {
		struct gm_region *g = &gm->regions[i];

		if (g->gpa != r->guest_phys_addr || g->size != r->memory_size ||
		    g->uva != r->userspace_addr)
			continue;
		munmap(g->map_base, g->map_len);
		close(g->fd);
		memmove(g, g + 1, (gm->nregions - i - 1) * sizeof(*g));
		gm->nregions--;
		memset(&gm->regions[gm->nregions], 0, sizeof(*g));
		return 0;
	}
	return -ENOENT;
}

/* Region holding addr (by GPA or UVA); *ret_off is addr's offset in it. */
static const struct gm_region *find(const struct guest_mem *gm, uint64_t addr,
				    bool by_uva, uint64_t *ret_off)
{
	unsigned int i;

	for (i = 0; i < gm->nregions; i++) {
		const struct gm_region *g = &gm->regions[i];
		uint64_t base = by_uva ? g->uva : g->gpa;

		if (addr >= base && addr - base < g->size) {
			*ret_off = addr - base;
			return g;
		}
	}
	return NULL;
}

const struct gm_region *gm_find_gpa(const struct guest_mem *gm, uint64_t gpa,
				    uint64_t *ret_off)
{
	return find(gm, gpa, false, ret_off);
}

static void *to_host(const struct guest_mem *gm, uint64_t addr, uint64_t len,
		     bool by_uva)
{
	const struct gm_region *g;
	uint64_t off;

	g = find(gm, addr, by_uva, &off);
	if (!g || len > g->size - off)
		return NULL;
	return g->host + off;
}

void *gm_gpa_to_host(const struct guest_mem *gm, uint64_t gpa, uint64_t len)
{
	return to_host(gm, gpa, len, false);
}

void *gm_uva_to_host(const struct guest_mem *gm, uint64_t uva, uint64_t len)
{
	return to_host(gm, uva, len, true);
}

int gm_gpa_to_iov(const struct guest_mem *gm, uint64_t gpa, uint64_t len,
		  struct iovec *iov, unsigned int max, unsigned int *n)
{
	unsigned int k = *n;

	while (len > 0) {
		const struct gm_region *g;
		uint64_t off, chunk;

		g = find(gm, gpa, false, &off);
		if (!g)
			return -EFAULT;
		if (k >= max)
			return -ENOBUFS;
		chunk = g->size - off < len ? g->size - off : len;
		iov[k].iov_base = g->host + off;
		iov[k].iov_len = chunk;
		k++;
		len -= chunk;
		/* The next byte must exist: gpa + chunk wrapping is a hole. */
		if (len > 0 && __builtin_add_overflow(gpa, chunk, &gpa))
			return -EFAULT;
	}
	*n = k;
	return 0;
}
