/* SPDX-License-Identifier: MIT */
/*
 * Guest RAM for the guest simulator: memfd-backed blocks (4 KiB or 2 MiB
 * hugetlb pages) mapped shared in this process, exposed to the device as a
 * vhost-user memory table, with a guest-physical address (GPA) allocator.
 *
 * A block is one memfd, mapped whole, like a QEMU RAM block. A slot is one
 * entry of the vhost-user memory table: a window [offset, offset + size) of
 * a block placed at a GPA. One block may back several slots (QEMU splits
 * pc.ram around the PCI hole the same way), and slots may leave holes in
 * guest-physical space or sit back to back.
 */
#ifndef RDMAGATE_GUEST_GUEST_RAM_H
#define RDMAGATE_GUEST_GUEST_RAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The shortest wait for a device command, whatever the transport: a DMA MR
 * pins all of guest RAM on the host within one command (seconds under TCG,
 * more on a loaded machine; docs/pvrdma.md has the figures).
 */
#define GUEST_CMD_TIMEOUT_MS 60000

#define GUEST_RAM_MAX_BLOCKS 32
#define GUEST_RAM_MAX_SLOTS  32

#define GUEST_PAGE_4K (4096ull)
#define GUEST_PAGE_2M (2ull << 20)

struct guest_block {
	int fd;
	void *host;    /* our mapping: what userspace_addr refers to */
	uint64_t size; /* bytes, a multiple of page_size */
	uint64_t page_size;
};

struct guest_slot {
	unsigned int block;
	uint64_t offset; /* mmap_offset: where the slot starts in the memfd */
	uint64_t gpa;
	uint64_t size;
	uint64_t next; /* allocator: first free byte, relative to gpa */
};

struct guest_ram {
	struct guest_block blocks[GUEST_RAM_MAX_BLOCKS];
	unsigned int nblocks;
	struct guest_slot slots[GUEST_RAM_MAX_SLOTS];
	unsigned int nslots;
};

void guest_ram_init(struct guest_ram *ram);
/* Unmaps and closes everything; the struct can be reused after init. */
void guest_ram_release(struct guest_ram *ram);

/*
 * Creates a memfd of `size` bytes with pages of `page_size` (4 KiB, or
 * 2 MiB through MFD_HUGETLB | MFD_HUGE_2MB) and maps it shared.
 * Returns the block index, -EINVAL for a bad size, -ENOSPC when the block
 * table is full, or the -errno of memfd_create/ftruncate/mmap (hugetlb
 * without free huge pages fails with -ENOMEM).
 */
int guest_ram_add_block(struct guest_ram *ram, uint64_t size,
			uint64_t page_size);

/*
 * Places [offset, offset + size) of `block` at guest-physical `gpa`.
 * Refuses (-EINVAL) windows outside the block, unaligned to its page
 * size, or overlapping another slot in GPA space. Returns the slot index.
 */
int guest_ram_add_slot(struct guest_ram *ram, unsigned int block,
		       uint64_t offset, uint64_t gpa, uint64_t size);

/* Convenience: a new block placed whole at `gpa`. Returns the slot index. */
int guest_ram_add_region(struct guest_ram *ram, uint64_t gpa, uint64_t size,
			 uint64_t page_size);

/* Our address of the slot's first byte (the table's userspace_addr). */
void *guest_slot_host(const struct guest_ram *ram, unsigned int slot);

/*
 * Our pointer to [gpa, gpa + len), which must lie inside one slot;
 * NULL otherwise. Use guest_ram_read/write for ranges that may span slots.
 */
void *guest_ram_ptr(const struct guest_ram *ram, uint64_t gpa, uint64_t len);

/* Copies to/from guest memory, across adjacent slots. 0 or -EFAULT. */
int guest_ram_write(const struct guest_ram *ram, uint64_t gpa, const void *buf,
		    size_t len);
int guest_ram_read(const struct guest_ram *ram, uint64_t gpa, void *buf,
		   size_t len);

/*
 * GPA allocator (a bump allocator per slot; guest_ram_reset_alloc() frees
 * everything). guest_ram_alloc() takes the first slot with room;
 * guest_ram_alloc_in() a given slot. `align` is a power of 2.
 * Return 0 and set *ret_gpa, or -ENOMEM / -EINVAL.
 */
int guest_ram_alloc(struct guest_ram *ram, uint64_t size, uint64_t align,
		    uint64_t *ret_gpa);
int guest_ram_alloc_in(struct guest_ram *ram, unsigned int slot, uint64_t size,
		       uint64_t align, uint64_t *ret_gpa);

/*
 * Allocates `size` bytes that straddle the boundary between `slot` and the
 * slot that starts exactly where it ends (same GPA, any block), `before`
 * bytes in the first. Both slots' allocators must still have room there.
 * Returns 0 and *ret_gpa, -ENOENT when no slot is adjacent, -ENOMEM.
 */
int guest_ram_alloc_spanning(struct guest_ram *ram, unsigned int slot,
			     uint64_t before, uint64_t size, uint64_t *ret_gpa);

void guest_ram_reset_alloc(struct guest_ram *ram);

/* A GPA that no slot covers, at least `len` bytes long, or 0 if none. */
uint64_t guest_ram_find_hole(const struct guest_ram *ram, uint64_t len);

#endif
