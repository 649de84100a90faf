// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the backend's MR layout from a flat page list (what a
 * PVRDMA page directory yields).  Input: [start u16] [length u32]
 * [virt_addr u64] [pages: u64 each].  A layout that is accepted is checked
 * page by page against the list: every page in exactly one run, in order.
 */
#include <stdint.h>
#include <string.h>

#include "worker/backend/mr_layout.h"
#include "tests/fuzz/fuzz_check.h"

#define PG	  RDMA_MR_PAGE_SIZE
#define MAX_PAGES 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint64_t pages[MAX_PAGES];
	struct rdma_mr_layout l = { .nruns = 0xdead };
	struct reason why;
	uint16_t start;
	uint32_t length, n, i, r, page = 0;
	uint64_t va;

	if (size < 14)
		return 0;
	memcpy(&start, data, 2);
	memcpy(&length, data + 2, 4);
	memcpy(&va, data + 6, 8);
	n = (uint32_t)((size - 14) / 8);
	if (n > MAX_PAGES)
		n = MAX_PAGES;
	memcpy(pages, data + 14, (size_t)n * 8);
	if (rdma_mr_layout_from_pages(pages, n, start, length, va, &l, &why)) {
		FUZZ_CHECK(l.nruns == 0xdead); /* untouched */
		FUZZ_CHECK(why.msg[0] != '\0');
		return 0;
	}
	FUZZ_CHECK(l.npages == n && l.length == length && l.virt_addr == va);
	FUZZ_CHECK(l.nruns >= 1 && l.nruns <= n);
	for (r = 0; r < l.nruns; r++) {
		FUZZ_CHECK(l.runs[r].first_page == page &&
			   l.runs[r].npages > 0);
		for (i = 0; i < l.runs[r].npages; i++)
			FUZZ_CHECK(pages[page + i] ==
				   l.runs[r].gpa + (uint64_t)i * PG);
		page += l.runs[r].npages;
	}
	FUZZ_CHECK(page == n);
	rdma_mr_layout_release(&l);
	return 0;
}
