// SPDX-License-Identifier: MIT
/* Guest memory table: mapping frontend memfds and translating addresses. */
#include "guest_mem.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- surviving a file shrunk under our mapping --------------------------- */

/*
 * Guest-memory mappings the SIGBUS handler may repair.  Written only by the
 * worker's one thread between guest-memory accesses, read by the handler,
 * which runs synchronously on that thread during such an access: no lock.
 */
struct gm_guard {
	uintptr_t base;
	size_t len;
	size_t granule; /* the mapping's page size: 2 MiB on hugetlbfs */
};
static struct gm_guard guards[GM_GUARD_MAX];
/* guards[top..] are all free; used of guards[..top) are in use */
static unsigned int guards_top, guards_used;
static volatile sig_atomic_t lost_pages;

int gm_guard_add(void *base, size_t len, size_t granule)
{
	unsigned int i = guards_top;

	if (guards_used < guards_top) /* a hole below the top */
		for (i = 0; guards[i].len; i++)
			;
	else if (guards_top == GM_GUARD_MAX)
		return -ENOSPC;
	guards[i].base = (uintptr_t)base;
	guards[i].granule = granule;
	guards[i].len = len;
	guards_used++;
	if (i == guards_top)
		guards_top++;
	return 0;
}

void gm_guard_del(void *base)
{
	unsigned int i;

	for (i = 0; i < guards_top; i++)
		if (guards[i].len && guards[i].base == (uintptr_t)base) {
			guards[i].len = 0;
			guards_used--;
		}
	while (guards_top > 0 && !guards[guards_top - 1].len)
		guards_top--;
}

/*
 * A page of a guarded mapping lost its file page (the frontend shrank the
 * file): put private zero pages over it, count it, and return, so the
 * access that faulted completes on garbage the device treats as any other
 * guest-written value; the loop then drops the connection.  Any other
 * SIGBUS is a bug: die (abort(): the sandbox lets only SIGABRT through).
 */
static void on_sigbus(int sig, siginfo_t *si, void *uctx)
{
	static const char msg[] = "fatal: SIGBUS outside guest memory\n";
	uintptr_t a = (uintptr_t)si->si_addr;
	unsigned int i;

	for (i = 0; i < guards_top; i++) {
		const struct gm_guard *g = &guards[i];
		uintptr_t page;
		size_t len;

		if (!g->len || a - g->base >= g->len)
			continue;
		page = g->base + ((a - g->base) & ~(uintptr_t)(g->granule - 1));
		len = g->base + g->len - page < g->granule
			      ? g->base + g->len - page
			      : g->granule;
		if (mmap((void *)page, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
			 0) == MAP_FAILED)
			break;
		if (lost_pages < 0x7fffffff)
			lost_pages++;
		return;
	}
	if (write(2, msg, sizeof(msg) - 1) < 0)
		abort();
	abort();
}

int gm_sigbus_install(void)
{
	struct sigaction sa = { .sa_sigaction = on_sigbus,
				.sa_flags = SA_SIGINFO };

	sigemptyset(&sa.sa_mask);
	return sigaction(SIGBUS, &sa, NULL) < 0 ? -errno : 0;
}

unsigned int gm_sigbus_lost(void)
{
	unsigned int n = (unsigned int)lost_pages;

	lost_pages = 0;
	return n;
}

/* ---- the table -------------------------------------------------------- */

void gm_init(struct guest_mem *gm)
{
	memset(gm, 0, sizeof(*gm));
}

void gm_clear(struct guest_mem *gm)
{
	unsigned int i;

	for (i = 0; i < gm->nregions; i++) {
		gm_guard_del(gm->regions[i].map_base);
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

int gm_check_region(const struct guest_mem *gm, const struct gm_desc *r,
		    struct reason *why)
{
	uint64_t end;
	unsigned int i;

	if (r->size == 0)
		return reason_fail(why, -EINVAL, "zero size");
	if (__builtin_add_overflow(r->gpa, r->size, &end) ||
	    __builtin_add_overflow(r->uva, r->size, &end) ||
	    __builtin_add_overflow(r->mmap_offset, r->size, &end) ||
	    end > (uint64_t)INT64_MAX)
		return reason_fail(why, -EINVAL,
				   "address or offset + size overflows");
	if (r->size > SIZE_MAX)
		return reason_fail(why, -EINVAL,
				   "size larger than the address space");
	for (i = 0; i < gm->nregions; i++) {
		const struct gm_region *o = &gm->regions[i];

		if (ranges_overlap(o->gpa, o->size, r->gpa, r->size))
			return reason_fail(
				why, -EINVAL,
				"guest-physical range overlaps a region");
		if (ranges_overlap(o->uva, o->size, r->uva, r->size))
			return reason_fail(
				why, -EINVAL,
				"frontend address range overlaps a region");
	}
	if (gm->nregions >= gm_max_regions(gm))
		return reason_fail(why, -ENOSPC, "no free memory slot");
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

static int map_region(struct gm_region *g, int fd, struct reason *why)
{
	uint64_t align, start, end;
	struct stat st;
	void *p;
	int ret;

	if (fstat(fd, &st) < 0) {
		return reason_fail(why, -errno, "cannot fstat the region's fd");
	}
	if (!S_ISREG(st.st_mode))
		return reason_fail(why, -EINVAL,
				   "region fd is not a memfd or regular file");
	/*
	 * Shared memory only (memfd, tmpfs, hugetlbfs: the files whose seals
	 * F_GET_SEALS can read): a page fault on a FUSE or NFS file can block
	 * this single-threaded worker, and long-term pins of file-backed page
	 * cache have crashed host kernels.
	 */
	if (fcntl(fd, F_GET_SEALS) < 0)
		return reason_fail(why, -EINVAL,
				   "region fd is a file on disk, not shared "
				   "memory (a memfd, tmpfs or hugetlbfs file)");
	/* Checked by gm_check_region(): no overflow below INT64_MAX. */
	if (st.st_size < 0 || g->mmap_offset + g->size > (uint64_t)st.st_size)
		return reason_fail(
			why, -EINVAL,
			"mmap_offset + size is past the end of the fd");
	align = map_align(&st);
	g->page_size = align;
	start = g->mmap_offset & ~(align - 1);
	end = (g->mmap_offset + g->size + align - 1) & ~(align - 1);
	p = mmap(NULL, end - start, g->prot, MAP_SHARED, fd, (off_t)start);
	if (p == MAP_FAILED) {
		return reason_fail(why, -errno, "mmap of the region failed");
	}
	/* Guest RAM never goes into a core dump (a SIGSYS core included). */
	if (madvise(p, end - start, MADV_DONTDUMP) < 0) {
		ret = -errno;
		reason_set(why, "cannot exclude the region from core dumps");
		munmap(p, end - start);
		return ret;
	}
	if (gm_guard_add(p, end - start, align) < 0) {
		reason_set(why, "no free SIGBUS guard slot");
		munmap(p, end - start);
		return -ENOSPC;
	}
	g->map_base = p;
	g->map_len = end - start;
	g->host = (uint8_t *)p + (g->mmap_offset - start);
	return 0;
}

int gm_add_region(struct guest_mem *gm, const struct gm_desc *r, int fd,
		  struct reason *why)
{
	int prot = r->prot;
	struct gm_region g = {
		.gpa = r->gpa,
		.size = r->size,
		.uva = r->uva,
		.mmap_offset = r->mmap_offset,
		.prot = prot,
	};
	int ret;

	/*
	 * The device reads every ring it writes (indices): a write-only
	 * region has no use, and x86 cannot map one without read access.
	 */
	if (prot != PROT_READ && prot != (PROT_READ | PROT_WRITE))
		return reason_fail(why, -EINVAL, "%s",
				   prot & PROT_WRITE
					   ? "a write-only region (no read "
					     "access) is not supported"
					   : "a region with neither read nor "
					     "write access");
	ret = gm_check_region(gm, r, why);
	if (ret < 0)
		return ret;
	g.fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (g.fd < 0) {
		return reason_fail(why, -errno,
				   "cannot duplicate the region's fd");
	}
	ret = map_region(&g, fd, why);
	if (ret < 0) {
		close(g.fd);
		return ret;
	}
	gm->regions[gm->nregions++] = g;
	return 0;
}

int gm_remove_region(struct guest_mem *gm, const struct gm_desc *r)
{
	unsigned int i;

	for (i = 0; i < gm->nregions; i++) {
		struct gm_region *g = &gm->regions[i];

		if (g->gpa != r->gpa || g->size != r->size || g->uva != r->uva)
			continue;
		gm_guard_del(g->map_base);
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
		     bool by_uva, bool write)
{
	const struct gm_region *g;
	uint64_t off;

	g = find(gm, addr, by_uva, &off);
	if (!g || len > g->size - off || (write && !gm_region_writable(g)))
		return NULL;
	return g->host + off;
}

void *gm_gpa_to_host(const struct guest_mem *gm, uint64_t gpa, uint64_t len)
{
	return to_host(gm, gpa, len, false, false);
}

void *gm_gpa_to_host_w(const struct guest_mem *gm, uint64_t gpa, uint64_t len)
{
	return to_host(gm, gpa, len, false, true);
}

void *gm_uva_to_host(const struct guest_mem *gm, uint64_t uva, uint64_t len)
{
	return to_host(gm, uva, len, true, false);
}

static int to_iov(const struct guest_mem *gm, uint64_t gpa, uint64_t len,
		  struct iovec *iov, unsigned int max, unsigned int *n,
		  bool write)
{
	unsigned int k = *n;

	while (len > 0) {
		const struct gm_region *g;
		uint64_t off, chunk;

		g = find(gm, gpa, false, &off);
		if (!g)
			return -EFAULT;
		if (write && !gm_region_writable(g))
			return -EACCES;
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

int gm_gpa_to_iov(const struct guest_mem *gm, uint64_t gpa, uint64_t len,
		  struct iovec *iov, unsigned int max, unsigned int *n)
{
	return to_iov(gm, gpa, len, iov, max, n, false);
}

int gm_gpa_to_iov_w(const struct guest_mem *gm, uint64_t gpa, uint64_t len,
		    struct iovec *iov, unsigned int max, unsigned int *n)
{
	return to_iov(gm, gpa, len, iov, max, n, true);
}
