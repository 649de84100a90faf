// SPDX-License-Identifier: MIT
/* Guest RAM of the guest simulator: memfd blocks, memory-table slots, GPAs. */
#include "guest/guest_ram.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/cleanup.h"

#ifndef MFD_HUGE_2MB
#define MFD_HUGE_2MB (21u << 26) /* log2(2 MiB) << MFD_HUGE_SHIFT */
#endif

void guest_ram_init(struct guest_ram *ram)
{
	memset(ram, 0, sizeof(*ram));
}

void guest_ram_release(struct guest_ram *ram)
{
	for (unsigned int i = 0; i < ram->nblocks; i++) {
		struct guest_block *b = &ram->blocks[i];

		if (b->host)
			munmap(b->host, b->size);
		safe_close(b->fd);
	}
	guest_ram_init(ram);
}

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

int guest_ram_add_block(struct guest_ram *ram, uint64_t size,
			uint64_t page_size)
{
	unsigned int flags = MFD_CLOEXEC;
	_cleanup_close_ int fd = -1;
	void *host;

	if (page_size == GUEST_PAGE_2M)
		flags |= MFD_HUGETLB | MFD_HUGE_2MB;
	else if (page_size != GUEST_PAGE_4K)
		return -EINVAL;
	if (!size || size % page_size || size > (1ull << 40))
		return -EINVAL;
	if (ram->nblocks == GUEST_RAM_MAX_BLOCKS)
		return -ENOSPC;

	fd = memfd_create("rdmagate-guest-ram", flags);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0)
		return -errno;
	host = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (host == MAP_FAILED)
		return -errno;
	/* hugetlb reserves at mmap; touch now so a shortage fails here */
	memset(host, 0, page_size);

	ram->blocks[ram->nblocks] = (struct guest_block){
		.fd = TAKE_FD(fd),
		.host = host,
		.size = size,
		.page_size = page_size,
	};
	return (int)ram->nblocks++;
}

static bool ranges_overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

int guest_ram_add_slot(struct guest_ram *ram, unsigned int block,
		       uint64_t offset, uint64_t gpa, uint64_t size)
{
	const struct guest_block *b;
	uint64_t end;

	if (block >= ram->nblocks || ram->nslots == GUEST_RAM_MAX_SLOTS)
		return block >= ram->nblocks ? -EINVAL : -ENOSPC;
	b = &ram->blocks[block];
	if (!size || offset > b->size || size > b->size - offset)
		return -EINVAL;
	if (offset % b->page_size || size % b->page_size || gpa % b->page_size)
		return -EINVAL;
	if (__builtin_add_overflow(gpa, size, &end))
		return -EINVAL;
	for (unsigned int i = 0; i < ram->nslots; i++)
		if (ranges_overlap(gpa, size, ram->slots[i].gpa,
				   ram->slots[i].size))
			return -EINVAL;

	ram->slots[ram->nslots] = (struct guest_slot){
		.block = block,
		.offset = offset,
		.gpa = gpa,
		.size = size,
	};
	return (int)ram->nslots++;
}

int guest_ram_add_region(struct guest_ram *ram, uint64_t gpa, uint64_t size,
			 uint64_t page_size)
{
	int block = guest_ram_add_block(ram, size, page_size);
	int slot;

	if (block < 0)
		return block;
	slot = guest_ram_add_slot(ram, (unsigned int)block, 0, gpa, size);
	if (slot < 0) {
		struct guest_block *b = &ram->blocks[block];

		munmap(b->host, b->size);
		safe_close(b->fd);
		ram->nblocks--;
	}
	return slot;
}

void *guest_slot_host(const struct guest_ram *ram, unsigned int slot)
{
	const struct guest_slot *s = &ram->slots[slot];

	return (uint8_t *)ram->blocks[s->block].host + s->offset;
}

static const struct guest_slot *find_slot(const struct guest_ram *ram,
					  uint64_t gpa)
{
	for (unsigned int i = 0; i < ram->nslots; i++) {
		const struct guest_slot *s = &ram->slots[i];

		if (gpa >= s->gpa && gpa - s->gpa < s->size)
			return s;
	}
	return NULL;
}

void *guest_ram_ptr(const struct guest_ram *ram, uint64_t gpa, uint64_t len)
{
	const struct guest_slot *s = find_slot(ram, gpa);

	if (!s || len > s->size - (gpa - s->gpa))
		return NULL;
	return (uint8_t *)ram->blocks[s->block].host + s->offset +
	       (gpa - s->gpa);
}

/* Walks [gpa, gpa + len) slot by slot; copies in the direction asked. */
static int ram_copy(const struct guest_ram *ram, uint64_t gpa, void *buf,
		    size_t len, bool to_guest)
{
	uint8_t *p = buf;

	while (len) {
		const struct guest_slot *s = find_slot(ram, gpa);
		uint64_t in_slot, n;
		uint8_t *host;

		if (!s)
			return -EFAULT;
		in_slot = s->size - (gpa - s->gpa);
		n = len < in_slot ? len : in_slot;
		host = guest_ram_ptr(ram, gpa, n);
		if (to_guest)
			memcpy(host, p, n);
		else
			memcpy(p, host, n);
		p += n;
		gpa += n;
		len -= n;
	}
	return 0;
}

int guest_ram_write(const struct guest_ram *ram, uint64_t gpa, const void *buf,
		    size_t len)
{
	return ram_copy(ram, gpa, (void *)buf, len, true);
}

int guest_ram_read(const struct guest_ram *ram, uint64_t gpa, void *buf,
		   size_t len)
{
	return ram_copy(ram, gpa, buf, len, false);
}

int guest_ram_alloc_in(struct guest_ram *ram, unsigned int slot, uint64_t size,
		       uint64_t align, uint64_t *ret_gpa)
{
	struct guest_slot *s;
	uint64_t start;

	if (slot >= ram->nslots || !size || !is_pow2(align))
		return -EINVAL;
	s = &ram->slots[slot];
	/* align the GPA, not the offset: slots start page aligned anyway */
	start = ((s->gpa + s->next + align - 1) & ~(align - 1)) - s->gpa;
	if (start > s->size || size > s->size - start)
		return -ENOMEM;
	s->next = start + size;
	*ret_gpa = s->gpa + start;
	return 0;
}

int guest_ram_alloc(struct guest_ram *ram, uint64_t size, uint64_t align,
		    uint64_t *ret_gpa)
{
	for (unsigned int i = 0; i < ram->nslots; i++)
		if (guest_ram_alloc_in(ram, i, size, align, ret_gpa) == 0)
			return 0;
	return -ENOMEM;
}

int guest_ram_alloc_spanning(struct guest_ram *ram, unsigned int slot,
			     uint64_t before, uint64_t size, uint64_t *ret_gpa)
{
	struct guest_slot *a, *b = NULL;
	uint64_t end;

	if (slot >= ram->nslots || !before || before >= size)
		return -EINVAL;
	a = &ram->slots[slot];
	end = a->gpa + a->size;
	for (unsigned int i = 0; i < ram->nslots; i++)
		if (ram->slots[i].gpa == end)
			b = &ram->slots[i];
	if (!b)
		return -ENOENT;
	if (before > a->size - a->next || b->next || size - before > b->size)
		return -ENOMEM;
	a->next = a->size;
	b->next = size - before;
	*ret_gpa = end - before;
	return 0;
}

void guest_ram_reset_alloc(struct guest_ram *ram)
{
	for (unsigned int i = 0; i < ram->nslots; i++)
		ram->slots[i].next = 0;
}

uint64_t guest_ram_find_hole(const struct guest_ram *ram, uint64_t len)
{
	/* candidates: just past the end of each slot */
	for (unsigned int i = 0; i < ram->nslots; i++) {
		uint64_t gpa = ram->slots[i].gpa + ram->slots[i].size;
		bool covered = false;

		for (unsigned int j = 0; j < ram->nslots; j++)
			covered |= ranges_overlap(gpa, len, ram->slots[j].gpa,
						  ram->slots[j].size);
		if (!covered && gpa + len > gpa)
			return gpa;
	}
	return 0;
}
