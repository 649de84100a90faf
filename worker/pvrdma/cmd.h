/* SPDX-License-Identifier: MIT */
/*
 * Pure decoder of the PVRDMA command slot (common/pvrdma_abi.h,
 * "Commands"): the command code, the slot size the command needs, and
 * every check that needs no device state (counts, powers of two, ring
 * page counts against the ring they must hold, flags, enum values). The
 * device then checks handles and ownership against its objects.
 *
 * The caller passes its private copy of the slot (one union
 * pvrdma_cmd_req copied out of guest memory once).
 */
#ifndef RDMAGATE_WORKER_PVRDMA_CMD_H
#define RDMAGATE_WORKER_PVRDMA_CMD_H

#include <stddef.h>
#include <stdint.h>

#include "common/pvrdma_abi.h"
#include "common/reason.h"

/* The device's limits the decoder checks against (its caps). */
struct pvrdma_cmd_limits {
	uint32_t max_cqe, max_qp_wr, max_sge, max_srq_wr, max_srq_sge;
	uint32_t gid_tbl_len;
	uint16_t max_pkeys;
	uint32_t max_mr_pages;	 /* pages of one user MR */
	uint32_t max_ring_pages; /* pages of one CQ, QP or SRQ ring */
};

/*
 * Decodes the command in slot (len bytes): returns its code (enum
 * pvrdma_cmd_code) and copies the command's own bytes into *ret (the rest
 * of *ret zeroed), or a negative errno with *why filled and *ret
 * untouched: -EINVAL (short slot, bad field), -ENOSYS (unknown code),
 * -EOPNOTSUPP (a valid request rdmagate does not implement).
 */
int pvrdma_cmd_decode(const void *slot, size_t len,
		      const struct pvrdma_cmd_limits *lim,
		      union pvrdma_cmd_req *ret, struct reason *why);

/*
 * The access flags a decoded CREATE_MR's access_flags ask of the host: the
 * four PVRDMA_ACCESS_* bits and relaxed ordering; the other optional bits
 * (which the decoder lets through) dropped.
 */
uint32_t pvrdma_mr_access(uint32_t flags);

/* "CREATE_QP"; "UNKNOWN" for other codes. */
const char *pvrdma_cmd_name(uint32_t cmd);

/* Bytes of the command's request struct, 0 for an unknown code. */
size_t pvrdma_cmd_req_size(uint32_t cmd);

/* Ring geometry the driver and the provider use. */
/* Bytes of one SQ WQE slot: header + max_sge SGEs, rounded up to 2^n. */
uint32_t pvrdma_sq_wqe_size(uint32_t max_sge);
/* Bytes of one RQ (or SRQ) WQE slot. */
uint32_t pvrdma_rq_wqe_size(uint32_t max_sge);
/* Pages that hold n slots of size bytes (no ring-state page). */
uint32_t pvrdma_ring_pages(uint32_t n, uint32_t size);

#endif
