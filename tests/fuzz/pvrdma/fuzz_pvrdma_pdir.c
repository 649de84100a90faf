// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the PVRDMA page directory walk over a fake guest RAM
 * made of the input. Input: [npages u32] [max_pages u32] [dir page u8]
 * [RAM bytes at GPA 0x100000]. A successful walk is checked page by page
 * against a direct directory/table lookup, and every page the pages
 * lookup answers lies in the object.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "common/pvrdma_abi.h"
#include "worker/pvrdma/pdir.h"
#include "tests/fuzz/fuzz_check.h"

#define RAM_BASE 0x100000ull

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct pvrdma_pdir_ops ops = { .read_gpa = fuzz_ram_read };
	struct pvrdma_pages p;
	struct reason why;
	struct fuzz_ram ram = { .base = RAM_BASE };
	uint32_t npages, max_pages, i;
	uint64_t dir, gpa;

	if (size < 9)
		return 0;
	memcpy(&npages, data, 4);
	memcpy(&max_pages, data + 4, 4);
	dir = RAM_BASE + (uint64_t)data[8] * PVRDMA_PAGE_SIZE;
	ram.mem = data + 9;
	ram.len = size - 9;
	if (pvrdma_pdir_walk(dir, npages, max_pages, &ops, &ram, &p, &why) < 0)
		return 0;
	FUZZ_CHECK(p.n == npages && npages >= 1 &&
		   npages <= PVRDMA_PAGE_DIR_MAX_PAGES);
	for (i = 0; i < p.n; i++) {
		uint64_t tbl = fuzz_ram_u64(&ram, dir + 8 * (i / 512));

		FUZZ_CHECK(p.gpa[i] == fuzz_ram_u64(&ram, tbl + 8 * (i % 512)));
		FUZZ_CHECK(pvrdma_page_addr_ok(p.gpa[i]));
	}
	FUZZ_CHECK(pvrdma_pages_gpa(&p, (uint64_t)p.n * PVRDMA_PAGE_SIZE, 1,
				    &gpa) == -ERANGE);
	FUZZ_CHECK(pvrdma_pages_gpa(&p, 0, 1, &gpa) == 0 && gpa == p.gpa[0]);
	pvrdma_pages_release(&p);
	return 0;
}
