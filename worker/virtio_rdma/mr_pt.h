/* SPDX-License-Identifier: MIT */
/*
 * Pure walker of the two-level MR page table of REG_USER_MR (Profile A
 * §4.6): the level-1 page at `root` holds the GPAs of up to 512 level-2
 * pages, whose 512-entry slices hold the GPAs of the MR's 4 KiB pages in
 * order. The walk yields the MR as runs of guest-physically contiguous
 * pages, so that the worker can map a 1 GiB MR with one mapping per run
 * instead of one per page.
 *
 * Guest memory is reached only through the caller's callbacks; nothing is
 * read that npages does not need, and nothing is allocated before npages
 * is checked.
 */
#ifndef RDMAGATE_WORKER_VIRTIO_RDMA_MR_PT_H
#define RDMAGATE_WORKER_VIRTIO_RDMA_MR_PT_H

#include <stddef.h>
#include <stdint.h>

#include "worker/backend/mr_layout.h"
#include "common/reason.h"

struct rdma_mr_pt_ops {
	/*
	 * Copies len bytes of guest RAM at gpa into buf. Returns 0, or a
	 * negative errno (-EFAULT) if any byte is outside guest RAM.
	 */
	int (*read_gpa)(void *ctx, uint64_t gpa, void *buf, size_t len);
	/*
	 * Returns 0 if every byte of [gpa, gpa + len) is guest RAM (the range
	 * may span adjacent memory regions), else a negative errno.
	 */
	int (*check_gpa)(void *ctx, uint64_t gpa, uint64_t len);
};

/* What REG_USER_MR says about the MR. */
struct rdma_mr_pt_args {
	uint64_t root;	 /* GPA of the level-1 page */
	uint32_t npages; /* must be ceil(((start & 0xfff) + length) / 4K) */
	uint64_t start;	 /* page offset of byte 0 is start & 0xfff */
	uint64_t length;
	uint64_t virt_addr; /* IOVA of byte 0 */
};

/*
 * Walks the page table. Returns 0 and fills *ret_layout (release it with
 * rdma_mr_layout_release()), or a negative errno with *why filled and
 * *ret_layout untouched: -EINVAL for inconsistent arguments or a bad entry
 * (zero, unaligned, wrapping), the callbacks' error (e.g. -EFAULT) for a
 * table or data page outside guest RAM, -ENOMEM.
 */
int rdma_mr_pt_walk(const struct rdma_mr_pt_args *args,
		    const struct rdma_mr_pt_ops *ops, void *ctx,
		    struct rdma_mr_layout *ret_layout, struct reason *why);

/* Where an IOVA of the MR sits in the page table. */
struct rdma_mr_pt_pos {
	uint64_t off; /* iova - virt_addr + (start & 0xfff) */
	uint32_t page;
	uint32_t l1; /* page / 512 */
	uint32_t l2; /* page % 512 */
	uint32_t in_page;
};

/*
 * The translation of Profile A §4.6 for [iova, iova + len): 0 and *ret_pos
 * for iova, or -ERANGE if the range is not inside the MR (len 0 is a
 * range of one byte for this check).
 */
int rdma_mr_pt_locate(const struct rdma_mr_layout *layout, uint64_t iova,
		      uint64_t len, struct rdma_mr_pt_pos *ret_pos);

/* GPA of one IOVA of the MR: 0 and *ret_gpa, or -ERANGE. */
int rdma_mr_iova_to_gpa(const struct rdma_mr_layout *layout, uint64_t iova,
			uint64_t *ret_gpa);

/* Checks the REG_USER_MR arguments alone (used by the walk). */
int rdma_mr_pt_check_args(const struct rdma_mr_pt_args *args,
			  struct reason *why);

#endif
