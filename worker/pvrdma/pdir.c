// SPDX-License-Identifier: MIT
/* The PVRDMA page directory walk (see pdir.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/pvrdma_abi.h"
#include "worker/pvrdma/pdir.h"

int pvrdma_page_addr_ok(uint64_t gpa)
{
	return gpa != 0 && (gpa & (PVRDMA_PAGE_SIZE - 1)) == 0 &&
	       gpa <= UINT64_MAX - PVRDMA_PAGE_SIZE;
}

/* Reads `count` u64 entries of the page at gpa and checks each one. */
static int read_entries(const struct pvrdma_pdir_ops *ops, void *ctx,
			uint64_t gpa, uint32_t count, uint64_t *out,
			const char *what, struct reason *why)
{
	uint32_t i;
	int r;

	r = ops->read_gpa(ctx, gpa, out, (size_t)count * sizeof(uint64_t));
	if (r < 0)
		return reason_fail(why, r, "%s page 0x%llx is not guest memory",
				   what, (unsigned long long)gpa);
	for (i = 0; i < count; i++) {
		if (!pvrdma_page_addr_ok(out[i]))
			return reason_fail(why, -EINVAL,
					   "%s entry %u is 0x%llx, not a page",
					   what, i, (unsigned long long)out[i]);
	}
	return 0;
}

int pvrdma_pdir_walk(uint64_t pdir_dma, uint32_t npages, uint32_t max_pages,
		     const struct pvrdma_pdir_ops *ops, void *ctx,
		     struct pvrdma_pages *ret, struct reason *why)
{
	uint64_t tables[PVRDMA_PDIR_ENTRIES];
	uint32_t ntables, t, n;
	uint64_t *pages;
	int r;

	if (max_pages > PVRDMA_PAGE_DIR_MAX_PAGES)
		max_pages = PVRDMA_PAGE_DIR_MAX_PAGES;
	if (npages == 0 || npages > max_pages)
		return reason_fail(why, -EINVAL, "%u pages (allowed 1..%u)",
				   npages, max_pages);
	if (!pvrdma_page_addr_ok(pdir_dma))
		return reason_fail(why, -EINVAL,
				   "page directory at 0x%llx is not a page",
				   (unsigned long long)pdir_dma);
	ntables = (npages + PVRDMA_PDIR_ENTRIES - 1) / PVRDMA_PDIR_ENTRIES;
	r = read_entries(ops, ctx, pdir_dma, ntables, tables, "directory", why);
	if (r < 0)
		return r;
	pages = calloc(npages, sizeof(*pages));
	if (!pages)
		return reason_fail(why, -ENOMEM, "no memory for %u pages",
				   npages);
	for (t = 0; t < ntables; t++) {
		n = npages - t * PVRDMA_PDIR_ENTRIES;
		if (n > PVRDMA_PDIR_ENTRIES)
			n = PVRDMA_PDIR_ENTRIES;
		r = read_entries(ops, ctx, tables[t], n,
				 pages + (size_t)t * PVRDMA_PDIR_ENTRIES,
				 "page table", why);
		if (r < 0) {
			free(pages);
			return r;
		}
	}
	ret->gpa = pages;
	ret->n = npages;
	return 0;
}

void pvrdma_pages_release(struct pvrdma_pages *p)
{
	free(p->gpa);
	p->gpa = NULL;
	p->n = 0;
}

int pvrdma_pages_gpa(const struct pvrdma_pages *p, uint64_t off, uint32_t len,
		     uint64_t *ret_gpa)
{
	uint64_t page = off / PVRDMA_PAGE_SIZE;
	uint64_t in = off % PVRDMA_PAGE_SIZE;

	if (len == 0 || len > PVRDMA_PAGE_SIZE - in || page >= p->n)
		return -ERANGE;
	*ret_gpa = p->gpa[page] + in;
	return 0;
}
