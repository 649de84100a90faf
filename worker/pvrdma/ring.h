/* SPDX-License-Identifier: MIT */
/*
 * Index math of PVRDMA rings (common/pvrdma_abi.h, "Rings") on values the
 * caller copied out of guest memory once. Ring sizes are powers of two
 * (the device runs a driver ring of n entries with n & -n, see the ABI
 * header). Every index the guest wrote is hostile: an invalid one is
 * answered -EINVAL instead of wrapping, looping or indexing out of the
 * ring (the class of QEMU's CVE-2018-20216 and CVE-2023-1544). A slot is
 * always below nelems.
 */
#ifndef RDMAGATE_WORKER_PVRDMA_RING_H
#define RDMAGATE_WORKER_PVRDMA_RING_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

/* The largest ring rdmagate accepts: indices need one more bit. */
#define PVRDMA_RING_MAX_ELEMS (1u << 24)

/* nelems is a usable ring size: a power of two in [1, MAX_ELEMS]. */
static inline bool pvrdma_ring_size_ok(uint32_t nelems)
{
	return nelems != 0 && nelems <= PVRDMA_RING_MAX_ELEMS &&
	       (nelems & (nelems - 1)) == 0;
}

static inline bool pvrdma_idx_valid(uint32_t idx, uint32_t nelems)
{
	return pvrdma_ring_size_ok(nelems) && idx < 2 * nelems;
}

/* The next index after idx (the wrap bit flips for a power of two). */
static inline uint32_t pvrdma_idx_inc(uint32_t idx, uint32_t nelems)
{
	return (idx + 1) & (2 * nelems - 1);
}

/*
 * Consumer side: 1 and the slot of head in *ret_slot when the ring holds
 * an entry, 0 when it is empty, -EINVAL when an index is invalid.
 */
static inline int pvrdma_ring_has_data(uint32_t tail, uint32_t head,
				       uint32_t nelems, uint32_t *ret_slot)
{
	if (!pvrdma_idx_valid(tail, nelems) || !pvrdma_idx_valid(head, nelems))
		return -EINVAL;
	if (tail == head)
		return 0;
	*ret_slot = head & (nelems - 1);
	return 1;
}

/*
 * Producer side: 1 and the slot of tail in *ret_slot when there is room,
 * 0 when the ring is full, -EINVAL when an index is invalid.
 */
static inline int pvrdma_ring_has_space(uint32_t tail, uint32_t head,
					uint32_t nelems, uint32_t *ret_slot)
{
	if (!pvrdma_idx_valid(tail, nelems) || !pvrdma_idx_valid(head, nelems))
		return -EINVAL;
	if (tail == (head ^ nelems))
		return 0;
	*ret_slot = tail & (nelems - 1);
	return 1;
}

#endif
