/* SPDX-License-Identifier: MIT */
/*
 * Test helper: a copy of some bytes placed right before an inaccessible
 * page, so that a decoder reading one byte past them crashes the test
 * even without a sanitizer.
 */
#ifndef RDMAGATE_TESTS_UNIT_GUARD_H
#define RDMAGATE_TESTS_UNIT_GUARD_H

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct guarded {
	uint8_t *map;
	size_t map_len;
	uint8_t *data; /* len bytes, followed by a PROT_NONE page */
};

static inline int guarded_copy(struct guarded *g, const void *src, size_t len)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t data_pages = (len + pg - 1) / pg;

	if (data_pages == 0)
		data_pages = 1;
	g->map_len = (data_pages + 1) * pg;
	g->map = mmap(NULL, g->map_len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (g->map == MAP_FAILED)
		return -1;
	if (mprotect(g->map + data_pages * pg, pg, PROT_NONE)) {
		munmap(g->map, g->map_len);
		return -1;
	}
	g->data = g->map + data_pages * pg - len;
	memcpy(g->data, src, len);
	return 0;
}

static inline void guarded_free(struct guarded *g)
{
	munmap(g->map, g->map_len);
}

#endif
