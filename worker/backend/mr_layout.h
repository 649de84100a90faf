/* SPDX-License-Identifier: MIT */
/*
 * The pages of a user MR as the backend registers them: runs of
 * guest-physically contiguous 4 KiB pages, whatever the frontend's format
 * (virtio-rdma's two-level page table, PVRDMA's page directory).  Pure:
 * built by the frontends' decoders, unit-tested and fuzzed with them.
 */
#ifndef RDMAGATE_WORKER_BACKEND_MR_LAYOUT_H
#define RDMAGATE_WORKER_BACKEND_MR_LAYOUT_H

#include <stdint.h>

#include "common/reason.h"

/* MR pages are 4 KiB whatever the guest's page size. */
#define RDMA_MR_PAGE_SIZE 4096u

/* Pages [first_page, first_page + npages) of the MR are at gpa.. */
struct rdma_mr_run {
	uint64_t gpa;
	uint32_t first_page;
	uint32_t npages;
};

struct rdma_mr_layout {
	uint64_t start;	    /* byte 0 is at offset start & 0xfff of page 0 */
	uint64_t length;    /* bytes */
	uint64_t virt_addr; /* the guest's address (IOVA) of byte 0 */
	uint32_t npages;
	uint32_t nruns;
	struct rdma_mr_run *runs; /* owned; rdma_mr_layout_release() */
};

/* Collects pages in MR order into runs (rdma_mr_run_add()). */
struct rdma_mr_run_builder {
	struct rdma_mr_run *runs;
	uint32_t n, cap;
	uint32_t limit; /* the MR's page count: never more runs */
};

/*
 * Appends MR page `page` at gpa (the next page in order): extends the last
 * run when gpa follows it.  0, or -ENOMEM (also past `limit` runs).
 */
int rdma_mr_run_add(struct rdma_mr_run_builder *b, uint32_t page, uint64_t gpa);

/*
 * Moves the builder's runs into *ret (which then owns them) with the MR's
 * geometry.  The builder is empty afterwards.
 */
void rdma_mr_layout_finish(struct rdma_mr_run_builder *b, uint64_t start,
			   uint64_t length, uint64_t virt_addr, uint32_t npages,
			   struct rdma_mr_layout *ret);

/*
 * The layout of an MR given as a flat list of page GPAs (PVRDMA's page
 * directory, copied out of guest memory by the caller): npages must be
 * ceil(((start & 0xfff) + length) / 4 KiB), length non-zero, virt_addr +
 * length must not overflow, every page 4 KiB-aligned, non-zero and not
 * wrapping.  Guest RAM itself is checked by the backend.  Returns 0 and
 * fills *ret, or -EINVAL / -ENOMEM with *why filled and *ret untouched.
 */
int rdma_mr_layout_from_pages(const uint64_t *pages, uint32_t npages,
			      uint64_t start, uint64_t length,
			      uint64_t virt_addr, struct rdma_mr_layout *ret,
			      struct reason *why);

/* Frees the runs; the layout is empty afterwards. */
void rdma_mr_layout_release(struct rdma_mr_layout *layout);

#endif
