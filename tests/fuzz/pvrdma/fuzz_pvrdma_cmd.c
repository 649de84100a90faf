// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the PVRDMA command slot decoder and the DSR checks on
 * the same input (both read a guest page). A decoded command must be a
 * known code whose request fits the input; a checked DSR must name page-
 * aligned slots and rings within the device's bounds.
 */
#include <stdint.h>
#include <string.h>

#include "worker/pvrdma/cmd.h"
#include "worker/pvrdma/dsr.h"
#include "worker/pvrdma/ring.h"
#include "tests/fuzz/fuzz_check.h"

static const struct pvrdma_cmd_limits lim = {
	.max_cqe = 65536,
	.max_qp_wr = 16384,
	.max_sge = 32,
	.max_srq_wr = 16384,
	.max_srq_sge = 32,
	.gid_tbl_len = 128,
	.max_pkeys = 1,
	.max_mr_pages = PVRDMA_PAGE_DIR_MAX_PAGES,
	.max_ring_pages = 8192,
};

static void check_dsr(const uint8_t *data, size_t size)
{
	struct pvrdma_dsr_info info;
	struct reason why;

	memset(&info, 0xa5, sizeof(info));
	if (pvrdma_dsr_decode(data, size, PVRDMA_DEVICE_VERSION, &info, &why) <
	    0)
		return;
	FUZZ_CHECK(info.cmd_slot_dma && !(info.cmd_slot_dma & 0xfff));
	FUZZ_CHECK(info.resp_slot_dma && !(info.resp_slot_dma & 0xfff));
	FUZZ_CHECK(info.async.num_pages >= 2 &&
		   info.async.num_pages <= PVRDMA_DEV_RING_MAX_PAGES);
	FUZZ_CHECK(pvrdma_ring_size_ok(info.async.nelems));
	FUZZ_CHECK(pvrdma_ring_size_ok(info.cqn.nelems));
	FUZZ_CHECK((uint64_t)info.cqn.nelems * sizeof(struct pvrdma_cqne) <=
		   (uint64_t)(info.cqn.num_pages - 1) * PVRDMA_PAGE_SIZE);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	union pvrdma_cmd_req out;
	struct reason why;
	int r;

	check_dsr(data, size);
	r = pvrdma_cmd_decode(data, size, &lim, &out, &why);
	if (r < 0) {
		FUZZ_CHECK(memchr(why.msg, 0, sizeof(why.msg)) != NULL);
		return 0;
	}
	FUZZ_CHECK(r < PVRDMA_CMD_MAX);
	FUZZ_CHECK(pvrdma_cmd_req_size((uint32_t)r) <= size);
	FUZZ_CHECK(out.hdr.cmd == (uint32_t)r);
	if (r == PVRDMA_CMD_CREATE_QP)
		FUZZ_CHECK(out.create_qp.total_chunks <= lim.max_ring_pages &&
			   out.create_qp.send_chunks <
				   out.create_qp.total_chunks);
	if (r == PVRDMA_CMD_CREATE_CQ)
		FUZZ_CHECK(out.create_cq.nchunks <= lim.max_ring_pages &&
			   out.create_cq.cqe &&
			   out.create_cq.cqe <= lim.max_cqe);
	return 0;
}
