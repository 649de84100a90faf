/* SPDX-License-Identifier: MIT */
/*
 * Test helpers: a memfd "guest RAM" and hand-built split rings in it, for
 * the virtqueue and protocol unit tests (header-only, static functions).
 */
#ifndef RDMAGATE_TESTS_GUEST_RAM_H
#define RDMAGATE_TESTS_GUEST_RAM_H

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "worker/vhost_user/virtq.h"

struct ram {
	int fd;
	size_t size;
	uint8_t *map; /* the test's own view of the whole memfd */
};

static inline int ram_open(struct ram *r, size_t size)
{
	r->fd = memfd_create("guest-ram", MFD_CLOEXEC);
	if (r->fd < 0 || ftruncate(r->fd, (off_t)size) < 0)
		return -1;
	r->size = size;
	r->map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
	return r->map == MAP_FAILED ? -1 : 0;
}

static inline void ram_close(struct ram *r)
{
	munmap(r->map, r->size);
	close(r->fd);
}

/* A split ring at fixed places of a byte array (the test's mapping). */
struct ring {
	uint8_t *desc, *avail, *used;
	uint16_t num;
	uint16_t avail_idx;
};

static inline void ring_desc(struct ring *g, unsigned int i, uint64_t addr,
			     uint32_t len, uint16_t flags, uint16_t next)
{
	struct vring_desc d = { addr, len, flags, next };

	memcpy(g->desc + 16 * i, &d, sizeof(d));
}

/* Writes a descriptor into an indirect table at host pointer t. */
static inline void table_desc(uint8_t *t, unsigned int i, uint64_t addr,
			      uint32_t len, uint16_t flags, uint16_t next)
{
	struct vring_desc d = { addr, len, flags, next };

	memcpy(t + 16 * i, &d, sizeof(d));
}

static inline void ring_set_avail_idx(struct ring *g, uint16_t idx)
{
	g->avail_idx = idx;
	memcpy(g->avail + 2, &idx, 2);
}

/* Publishes head as the next available chain. */
static inline void ring_publish(struct ring *g, uint16_t head)
{
	memcpy(g->avail + 4 + 2 * (g->avail_idx % g->num), &head, 2);
	ring_set_avail_idx(g, g->avail_idx + 1);
}

static inline void ring_set_avail_flags(struct ring *g, uint16_t flags)
{
	memcpy(g->avail, &flags, 2);
}

static inline uint16_t ring_used_idx(const struct ring *g)
{
	uint16_t v;

	memcpy(&v, g->used + 2, 2);
	return v;
}

static inline void ring_used_elem(const struct ring *g, unsigned int slot,
				  uint32_t *id, uint32_t *len)
{
	memcpy(id, g->used + 4 + 8 * slot, 4);
	memcpy(len, g->used + 8 + 8 * slot, 4);
}

#endif
