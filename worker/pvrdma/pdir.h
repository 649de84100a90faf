/* SPDX-License-Identifier: MIT */
/*
 * Pure walker of PVRDMA page directories (common/pvrdma_abi.h, "Page
 * directories"): directory page -> table pages -> the object's 4 KiB
 * pages, copied out once into a flat list of page addresses that the
 * device keeps (a guest rewriting its directory later changes nothing).
 *
 * Guest memory is reached only through the caller's read callback. The
 * page count is bounded before anything is read or allocated; only the
 * directory and table entries the count needs are read; every entry must
 * be a non-zero, 4 KiB-aligned address whose page does not wrap.
 */
#ifndef RDMAGATE_WORKER_PVRDMA_PDIR_H
#define RDMAGATE_WORKER_PVRDMA_PDIR_H

#include <stddef.h>
#include <stdint.h>

#include "common/reason.h"

struct pvrdma_pdir_ops {
	/*
	 * Copies len bytes of guest memory at gpa into buf: 0, or a negative
	 * errno (-EFAULT) if any byte is not guest memory.
	 */
	int (*read_gpa)(void *ctx, uint64_t gpa, void *buf, size_t len);
};

/* The pages of one object, in order. */
struct pvrdma_pages {
	uint64_t *gpa; /* owned; pvrdma_pages_release() */
	uint32_t n;
};

/*
 * Walks the directory at pdir_dma for npages pages. npages must be in
 * [1, max_pages] and max_pages <= PVRDMA_PAGE_DIR_MAX_PAGES (the caller's
 * bound for this object). Returns 0 and fills *ret, or -EINVAL (count,
 * directory address or an entry), the callback's error, or -ENOMEM, with
 * *why filled and *ret untouched.
 */
int pvrdma_pdir_walk(uint64_t pdir_dma, uint32_t npages, uint32_t max_pages,
		     const struct pvrdma_pdir_ops *ops, void *ctx,
		     struct pvrdma_pages *ret, struct reason *why);

void pvrdma_pages_release(struct pvrdma_pages *p);

/*
 * The guest address of byte `off` of the object, valid for len bytes that
 * must not cross a page: 0 and *ret_gpa, or -ERANGE.
 */
int pvrdma_pages_gpa(const struct pvrdma_pages *p, uint64_t off, uint32_t len,
		     uint64_t *ret_gpa);

/* A guest address is usable as a page: non-zero, aligned, not wrapping. */
int pvrdma_page_addr_ok(uint64_t gpa);

#endif
