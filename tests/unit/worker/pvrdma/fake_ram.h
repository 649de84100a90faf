/* SPDX-License-Identifier: MIT */
/*
 * Test helper: a small "guest RAM" of whole pages at a fixed guest
 * physical base, with the read callback the PVRDMA page directory walk
 * takes, and helpers to lay out directories in it.
 */
#ifndef RDMAGATE_TESTS_UNIT_PVRDMA_FAKE_RAM_H
#define RDMAGATE_TESTS_UNIT_PVRDMA_FAKE_RAM_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/pvrdma_abi.h"

#define FAKE_RAM_BASE 0x100000ull

struct fake_ram {
	uint8_t *mem;
	uint64_t pages;
	uint64_t reads; /* bytes read through the callback */
};

static inline int fake_ram_init(struct fake_ram *r, uint64_t pages)
{
	r->mem = calloc(pages, PVRDMA_PAGE_SIZE);
	r->pages = pages;
	r->reads = 0;
	return r->mem ? 0 : -ENOMEM;
}

static inline void fake_ram_free(struct fake_ram *r)
{
	free(r->mem);
}

static inline uint64_t fake_ram_gpa(uint64_t page)
{
	return FAKE_RAM_BASE + page * PVRDMA_PAGE_SIZE;
}

static inline void *fake_ram_ptr(struct fake_ram *r, uint64_t gpa, uint64_t len)
{
	uint64_t size = r->pages * PVRDMA_PAGE_SIZE;

	if (gpa < FAKE_RAM_BASE || gpa - FAKE_RAM_BASE > size ||
	    len > size - (gpa - FAKE_RAM_BASE))
		return NULL;
	return r->mem + (gpa - FAKE_RAM_BASE);
}

static inline int fake_ram_read(void *ctx, uint64_t gpa, void *buf, size_t len)
{
	struct fake_ram *r = ctx;
	void *p = fake_ram_ptr(r, gpa, len);

	if (!p)
		return -EFAULT;
	memcpy(buf, p, len);
	r->reads += len;
	return 0;
}

static inline void fake_ram_put64(struct fake_ram *r, uint64_t gpa, uint64_t v)
{
	memcpy(fake_ram_ptr(r, gpa, 8), &v, 8);
}

/*
 * Lays out a directory at page `dir` whose tables start at page `tbl`
 * and describe npages data pages starting at page `data`; returns the
 * directory's address.
 */
static inline uint64_t fake_ram_pdir(struct fake_ram *r, uint64_t dir,
				     uint64_t tbl, uint64_t data,
				     uint32_t npages)
{
	uint32_t i, ntables = (npages + 511) / 512;

	for (i = 0; i < ntables; i++)
		fake_ram_put64(r, fake_ram_gpa(dir) + 8 * i,
			       fake_ram_gpa(tbl + i));
	for (i = 0; i < npages; i++)
		fake_ram_put64(r, fake_ram_gpa(tbl + i / 512) + 8 * (i % 512),
			       fake_ram_gpa(data + i));
	return fake_ram_gpa(dir);
}

#endif
