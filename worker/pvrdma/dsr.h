/* SPDX-License-Identifier: MIT */
/*
 * Pure checks of the PVRDMA device shared region the driver writes (what
 * the device may use of it) and the encoder of the capabilities the
 * device writes back. An uninitialised or bogus DSR is refused before any
 * of its addresses is used (the class of QEMU's CVE-2022-1050 and
 * CVE-2021-3607).
 */
#ifndef RDMAGATE_WORKER_PVRDMA_DSR_H
#define RDMAGATE_WORKER_PVRDMA_DSR_H

#include <infiniband/verbs.h>
#include <stddef.h>
#include <stdint.h>

#include "common/pvrdma_abi.h"
#include "common/reason.h"

struct pvrdma_dsr_ring {
	uint64_t pdir_dma;
	uint32_t num_pages; /* including the ring-state page */
	uint32_t nelems;    /* entries the device uses (a power of 2) */
};

/* What the device uses of a checked DSR. */
struct pvrdma_dsr_info {
	uint32_t driver_version;
	uint64_t cmd_slot_dma;	      /* page-aligned, one page */
	uint64_t resp_slot_dma;	      /* page-aligned, one page */
	struct pvrdma_dsr_ring async; /* of struct pvrdma_eqe */
	struct pvrdma_dsr_ring cqn;   /* of struct pvrdma_cqne */
	uint64_t uar_pfn;
};

/*
 * Checks the DSR copied out of guest memory (len bytes at buf): driver
 * version at least PVRDMA_ROCEV1_VERSION, command and response slots
 * non-zero, page-aligned and distinct, both event rings with 2..
 * PVRDMA_DEV_RING_MAX_PAGES pages and a page-aligned directory. Guest
 * memory itself is the caller's to check. Returns 0 and fills *ret, or
 * -EINVAL with *why filled and *ret untouched.
 */
int pvrdma_dsr_decode(const void *buf, size_t len, uint32_t dev_version,
		      struct pvrdma_dsr_info *ret, struct reason *why);

/* What the device tells the guest, beyond the backend's attributes. */
struct pvrdma_caps_in {
	const struct ibv_device_attr *attr; /* the backend's (clamped) */
	uint32_t gid_tbl_len;
	uint32_t max_uar;      /* UAR pages, a power of two */
	uint32_t max_mr_pages; /* page directory bound of one MR */
	uint64_t node_guid;    /* as the guest should see it (BE) */
};

/*
 * Fills *caps from the backend's device attributes, clamped to what the
 * PVRDMA ABI and the driver can address (QP handles below max_qp, WQE
 * slots within a page, one port, one P_Key, RoCE v2 GIDs, no FRMR).
 */
void pvrdma_caps_encode(const struct pvrdma_caps_in *in,
			struct pvrdma_device_caps *caps);

/*
 * The entries the device uses of a DSR ring of num_pages pages of esize
 * bytes (the power of two the driver's own math uses), 0 if none.
 */
uint32_t pvrdma_dev_ring_nelems(uint32_t num_pages, uint32_t esize);

#endif
