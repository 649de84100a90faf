// SPDX-License-Identifier: MIT
/* Runs of contiguous guest pages of a user MR, from any page list. */
#include "worker/backend/mr_layout.h"

#include <errno.h>
#include <stdlib.h>

#define PG	RDMA_MR_PAGE_SIZE
#define PG_MASK (RDMA_MR_PAGE_SIZE - 1)

int rdma_mr_run_add(struct rdma_mr_run_builder *b, uint32_t page, uint64_t gpa)
{
	struct rdma_mr_run *last = b->n ? &b->runs[b->n - 1] : NULL;
	struct rdma_mr_run *grown;
	uint32_t cap;

	if (last && last->gpa + (uint64_t)last->npages * PG == gpa) {
		last->npages++;
		return 0;
	}
	if (b->n == b->cap) {
		if (b->cap >= b->limit)
			return -ENOMEM;
		cap = b->cap ? b->cap * 2 : 16;
		if (cap > b->limit)
			cap = b->limit;
		grown = reallocarray(b->runs, cap, sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		b->runs = grown;
		b->cap = cap;
	}
	b->runs[b->n++] = (struct rdma_mr_run){ gpa, page, 1 };
	return 0;
}

void rdma_mr_layout_finish(struct rdma_mr_run_builder *b, uint64_t start,
			   uint64_t length, uint64_t virt_addr, uint32_t npages,
			   struct rdma_mr_layout *ret)
{
	struct rdma_mr_run *shrunk = NULL;

	if (b->n)
		shrunk = reallocarray(b->runs, b->n, sizeof(*shrunk));
	if (shrunk)
		b->runs = shrunk;
	*ret = (struct rdma_mr_layout){
		.start = start,
		.length = length,
		.virt_addr = virt_addr,
		.npages = npages,
		.nruns = b->n,
		.runs = b->runs,
	};
	*b = (struct rdma_mr_run_builder){ 0 };
}

static int check_geometry(uint32_t npages, uint64_t start, uint64_t length,
			  uint64_t virt_addr, struct reason *why)
{
	uint64_t span;

	if (length == 0)
		return reason_fail(why, -EINVAL, "MR: length 0");
	if (virt_addr > UINT64_MAX - length)
		return reason_fail(why, -EINVAL,
				   "MR: address 0x%llx + length 0x%llx "
				   "overflows",
				   (unsigned long long)virt_addr,
				   (unsigned long long)length);
	if (length > UINT64_MAX - PG)
		return reason_fail(why, -EINVAL, "MR: length 0x%llx too large",
				   (unsigned long long)length);
	span = ((start & PG_MASK) + length + PG - 1) / PG;
	if (span != npages)
		return reason_fail(
			why, -EINVAL,
			"MR: %u pages given, offset %llu + length "
			"%llu needs %llu",
			npages, (unsigned long long)(start & PG_MASK),
			(unsigned long long)length, (unsigned long long)span);
	return 0;
}

int rdma_mr_layout_from_pages(const uint64_t *pages, uint32_t npages,
			      uint64_t start, uint64_t length,
			      uint64_t virt_addr, struct rdma_mr_layout *ret,
			      struct reason *why)
{
	struct rdma_mr_run_builder b = { .limit = npages };
	uint32_t i;
	int r;

	r = check_geometry(npages, start, length, virt_addr, why);
	if (r)
		return r;
	for (i = 0; i < npages; i++) {
		uint64_t g = pages[i];

		if (g == 0 || (g & PG_MASK) || g > UINT64_MAX - PG + 1) {
			free(b.runs);
			return reason_fail(why, -EINVAL,
					   "MR: page %u is at 0x%llx, not a "
					   "non-zero 4 KiB-aligned GPA",
					   i, (unsigned long long)g);
		}
		if (rdma_mr_run_add(&b, i, g)) {
			free(b.runs);
			return reason_fail(why, -ENOMEM, "MR: out of memory");
		}
	}
	rdma_mr_layout_finish(&b, start, length, virt_addr, npages, ret);
	return 0;
}

void rdma_mr_layout_release(struct rdma_mr_layout *l)
{
	free(l->runs);
	l->runs = NULL;
	l->nruns = 0;
}
