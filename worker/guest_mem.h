/* SPDX-License-Identifier: MIT */
/*
 * Guest memory as the frontend shares it, whichever the transport: up to
 * GM_MAX_REGIONS memfd regions mapped MAP_SHARED, and overflow-safe translation
 * of guest-physical (GPA) and frontend-virtual (UVA) addresses into pointers in
 * our mappings.
 *
 * Every translation checks the whole [addr, addr + len) range against one
 * region (or, for gm_gpa_to_iov(), a run of GPA-contiguous regions); nothing
 * outside a mapping is ever returned.  A region carries its protection
 * (prot): vhost-user regions are always read-write, a vfio-user DMA region
 * may be read-only (QEMU maps ROM so) and is then mapped PROT_READ; every
 * translation for a device write (the _w forms) refuses it.  Each
 * transport describes its regions with struct gm_desc (vhost-user's
 * SET_MEM_TABLE entries in vu_proto.c, vfio-user's DMA_MAP in
 * vfio_user/pci.c); nothing here knows either protocol.  Not
 * thread-safe; the worker is single-threaded.
 */
#ifndef RDMAGATE_WORKER_GUEST_MEM_H
#define RDMAGATE_WORKER_GUEST_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include "common/reason.h"

/*
 * Regions we map at once: vhost-user's SET_MEM_TABLE array
 * (VHOST_USER_MEM_BASELINE_NREGS, asserted in vu_proto.c) and our
 * GET_MAX_MEM_SLOTS.
 */
#define GM_MAX_REGIONS 8
/*
 * What a table can hold when its owner raises the limit (max_regions):
 * QEMU's vfio-user client maps every RAM section, and a q35 machine has a
 * dozen at once (low RAM, the PAM shadow ROM pieces, option ROMs, VRAM).
 */
#define GM_TABLE_REGIONS 64

/*
 * A region as a transport describes it (the file's range is the fd given
 * with it): guest-physical address, size, the VMM's address of it
 * (vhost-user's rings are named by it; vfio-user has none and gives gpa),
 * the offset in the file and the protection it is mapped with, PROT_READ
 * or PROT_READ | PROT_WRITE.
 */
struct gm_desc {
	uint64_t gpa;
	uint64_t size;
	uint64_t uva;
	uint64_t mmap_offset;
	int prot;
};

struct gm_region {
	uint64_t gpa;
	uint64_t size;
	uint64_t uva;
	uint64_t mmap_offset;
	uint8_t *host;	/* first byte of the region inside the mapping */
	void *map_base; /* what mmap() returned */
	size_t map_len;
	int fd;		    /* our O_CLOEXEC dup of the region's fd */
	uint64_t page_size; /* mapping granule: 2 MiB on hugetlbfs */
	int prot; /* PROT_READ, or PROT_READ | PROT_WRITE; as mapped */
};

/* Whether the device (or the HCA) may write into region g. */
static inline bool gm_region_writable(const struct gm_region *g)
{
	return g->prot & PROT_WRITE;
}

struct guest_mem {
	unsigned int nregions;
	/* limit, <= GM_TABLE_REGIONS; 0 (gm_init's) means GM_MAX_REGIONS */
	unsigned int max_regions;
	struct gm_region regions[GM_TABLE_REGIONS];
};

/*
 * A frontend may shrink a file whose pages we map (memory-backend-file on
 * hugetlbfs or tmpfs cannot be sealed; a memfd with seal=off is not); an
 * access to a lost page raises SIGBUS.  Every guest-memory mapping is
 * registered (gm_add_region() does it for regions; memory registration's
 * own mappings of the same files must call gm_guard_add/del): the SIGBUS
 * handler puts private zero pages over the lost page, counts it and
 * returns, so the access completes; the loop reads the count with
 * gm_sigbus_lost() and drops the connection.  A SIGBUS anywhere else
 * still ends the process.  docs/vhost-user.md, "Guest memory".
 */
/*
 * Every guard is at least one mapping, and a process holds at most
 * vm.max_map_count (65,530 by default) of those: guards never run out
 * first.  The table is static but only its used front is touched.
 */
#define GM_GUARD_MAX 65536u
/* Installs the handler (before the sandbox: sigaction is not allowed). */
int gm_sigbus_install(void);
/* Registers [base, base + len), mapped in pages of granule bytes. */
int gm_guard_add(void *base, size_t len, size_t granule);
/* Forgets the mapping at base; call before munmap(). */
void gm_guard_del(void *base);
/* Pages lost since the last call (then 0). */
unsigned int gm_sigbus_lost(void);

/* The table's region limit. */
static inline unsigned int gm_max_regions(const struct guest_mem *gm)
{
	return gm->max_regions && gm->max_regions <= GM_TABLE_REGIONS
		       ? gm->max_regions
		       : GM_MAX_REGIONS;
}

/* An empty table (limit GM_MAX_REGIONS). */
void gm_init(struct guest_mem *gm);
/* Unmaps every region and closes its fd; the table is empty afterwards. */
void gm_clear(struct guest_mem *gm);
/* Moves src's mappings into dst (dst must be empty); src becomes empty. */
void gm_move(struct guest_mem *dst, struct guest_mem *src);

/*
 * Checks a region description on its own (non-zero size, no address or
 * offset overflow) and against the regions already in gm (no GPA or UVA
 * overlap, free slot).  Returns 0 or -EINVAL/-ENOSPC with *why on
 * failure.
 */
int gm_check_region(const struct guest_mem *gm, const struct gm_desc *r,
		    struct reason *why);

/*
 * Checks r as gm_check_region() does and its protection (PROT_READ:
 * mapped read-only, never written through any translation; or PROT_READ |
 * PROT_WRITE; anything else, no access or write-only, is refused with
 * -EINVAL), checks that fd is a regular file
 * (memfd, hugetlbfs file) that holds [mmap_offset, mmap_offset + size), maps
 * that range MAP_SHARED (aligned to the file's block size, which is the huge
 * page size on hugetlbfs), excluded from core dumps (MADV_DONTDUMP), and adds
 * it.  The fd stays the caller's; the
 * region keeps its own O_CLOEXEC duplicate (gm_region.fd) so that memory
 * registration can map ranges of the same file again.
 * Returns 0 or -errno with *why set.
 */
int gm_add_region(struct guest_mem *gm, const struct gm_desc *r, int fd,
		  struct reason *why);

/*
 * Removes and unmaps the region with r's GPA, size and UVA (its mmap_offset
 * is ignored: QEMU has sent 0 there).  Returns 0 or -ENOENT.
 */
int gm_remove_region(struct guest_mem *gm, const struct gm_desc *r);

/* The region holding gpa, and gpa's offset in it; NULL if none. */
const struct gm_region *gm_find_gpa(const struct guest_mem *gm, uint64_t gpa,
				    uint64_t *ret_off);

/*
 * Host pointer for [gpa, gpa + len) if it lies in one region, else NULL:
 * for the device to read.  gm_gpa_to_host_w(): for the device to write,
 * also NULL when that region is read-only.
 */
void *gm_gpa_to_host(const struct guest_mem *gm, uint64_t gpa, uint64_t len);
void *gm_gpa_to_host_w(const struct guest_mem *gm, uint64_t gpa, uint64_t len);
/* Same for a frontend (VMM) virtual address range (vring addresses). */
void *gm_uva_to_host(const struct guest_mem *gm, uint64_t uva, uint64_t len);

/*
 * Appends [gpa, gpa + len) to iov[*n..max) as one iovec per region it
 * crosses and advances *n.  Returns 0, -EFAULT if a byte of the range is in
 * no region (including address overflow), -ENOBUFS if more than max iovecs
 * would be needed.  On failure *n and iov[*n..] are unchanged in meaning
 * (entries past *n may have been written).  len 0 appends nothing.
 * gm_gpa_to_iov_w(): the device writes the range; -EACCES if a byte of it
 * is in a read-only region.
 */
int gm_gpa_to_iov(const struct guest_mem *gm, uint64_t gpa, uint64_t len,
		  struct iovec *iov, unsigned int max, unsigned int *n);
int gm_gpa_to_iov_w(const struct guest_mem *gm, uint64_t gpa, uint64_t len,
		    struct iovec *iov, unsigned int max, unsigned int *n);

#endif
