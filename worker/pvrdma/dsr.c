// SPDX-License-Identifier: MIT
/* The PVRDMA DSR checks and the capabilities encoder (see dsr.h). */
#include <errno.h>
#include <string.h>

#include "worker/pvrdma/dsr.h"
#include "worker/pvrdma/pdir.h"
#include "worker/pvrdma/ring.h"

uint32_t pvrdma_dev_ring_nelems(uint32_t num_pages, uint32_t esize)
{
	uint64_t n;

	if (num_pages < 2 || esize == 0)
		return 0;
	/*
	 * The driver counts n entries; its math only ever uses the n & -n
	 * slots below the lowest set bit (common/pvrdma_abi.h, "Rings").
	 */
	n = (uint64_t)(num_pages - 1) * PVRDMA_PAGE_SIZE / esize;
	n &= -n;
	return n > PVRDMA_RING_MAX_ELEMS ? PVRDMA_RING_MAX_ELEMS : (uint32_t)n;
}

static int check_ring(const struct pvrdma_ring_page_info *in, uint32_t esize,
		      const char *name, struct pvrdma_dsr_ring *out,
		      struct reason *why)
{
	if (in->num_pages < 2 || in->num_pages > PVRDMA_DEV_RING_MAX_PAGES)
		return reason_fail(why, -EINVAL,
				   "%s ring has %u pages (allowed 2..%u)", name,
				   in->num_pages, PVRDMA_DEV_RING_MAX_PAGES);
	if (!pvrdma_page_addr_ok(in->pdir_dma))
		return reason_fail(why, -EINVAL,
				   "%s ring directory 0x%llx is not a page",
				   name, (unsigned long long)in->pdir_dma);
	out->pdir_dma = in->pdir_dma;
	out->num_pages = in->num_pages;
	out->nelems = pvrdma_dev_ring_nelems(in->num_pages, esize);
	return 0;
}

int pvrdma_dsr_decode(const void *buf, size_t len, uint32_t dev_version,
		      struct pvrdma_dsr_info *ret, struct reason *why)
{
	struct pvrdma_device_shared_region d;
	struct pvrdma_ring_page_info async, cqn;
	struct pvrdma_dsr_info info;
	int r;

	if (len < sizeof(d))
		return reason_fail(why, -EINVAL, "DSR of %zu bytes (need %zu)",
				   len, sizeof(d));
	memcpy(&d, buf, sizeof(d));
	memset(&info, 0, sizeof(info));
	if (d.driver_version < PVRDMA_ROCEV1_VERSION)
		return reason_fail(why, -EINVAL,
				   "driver version %u (need >= %u): DSR not "
				   "initialised",
				   d.driver_version, PVRDMA_ROCEV1_VERSION);
	if (!pvrdma_page_addr_ok(d.cmd_slot_dma) ||
	    !pvrdma_page_addr_ok(d.resp_slot_dma))
		return reason_fail(why, -EINVAL,
				   "command slot 0x%llx / response slot 0x%llx "
				   "are not pages",
				   (unsigned long long)d.cmd_slot_dma,
				   (unsigned long long)d.resp_slot_dma);
	if (d.cmd_slot_dma == d.resp_slot_dma)
		return reason_fail(why, -EINVAL,
				   "command and response slot are one page");
	/* Copies: the DSR is packed, the checks take aligned structs. */
	async = d.async_ring_pages;
	cqn = d.cq_ring_pages;
	r = check_ring(&async, sizeof(struct pvrdma_eqe), "async", &info.async,
		       why);
	if (r < 0)
		return r;
	r = check_ring(&cqn, sizeof(struct pvrdma_cqne), "CQ notification",
		       &info.cqn, why);
	if (r < 0)
		return r;
	info.driver_version = d.driver_version;
	info.cmd_slot_dma = d.cmd_slot_dma;
	info.resp_slot_dma = d.resp_slot_dma;
	info.uar_pfn =
		dev_version >= PVRDMA_PPN64_VERSION ? d.uar_pfn64 : d.uar_pfn;
	*ret = info;
	return 0;
}

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/*
 * The largest power of two <= v (0 for 0): the driver and the provider
 * round counts up to a power of two after checking them against the
 * caps, so a cap that is not one would let them ask for more than it.
 */
static uint32_t pow2_floor(uint32_t v)
{
	while (v & (v - 1))
		v &= v - 1;
	return v;
}

/* The most SGEs whose WQE (header + SGEs, rounded up) fits in one page. */
static uint32_t max_sge_in_page(void)
{
	return (PVRDMA_PAGE_SIZE - sizeof(struct pvrdma_sq_wqe_hdr)) /
	       sizeof(struct pvrdma_sge);
}

void pvrdma_caps_encode(const struct pvrdma_caps_in *in,
			struct pvrdma_device_caps *caps)
{
	const struct ibv_device_attr *a = in->attr;

	memset(caps, 0, sizeof(*caps));
	caps->fw_ver = PVRDMA_FW_VERSION;
	caps->node_guid = in->node_guid;
	caps->sys_image_guid = in->node_guid;
	caps->max_mr_size =
		min_u32(in->max_mr_pages, PVRDMA_PAGE_DIR_MAX_PAGES) *
		(uint64_t)PVRDMA_PAGE_SIZE;
	if (a->max_mr_size < caps->max_mr_size)
		caps->max_mr_size = a->max_mr_size;
	caps->page_size_cap = PVRDMA_PAGE_SIZE;
	caps->vendor_id = PVRDMA_PCI_VENDOR_ID;
	caps->vendor_part_id = PVRDMA_PCI_DEVICE_ID;
	caps->hw_ver = PVRDMA_REV_ID;
	/* QP handles are 1..max_qp - 1 (the provider's table has max_qp). */
	caps->max_qp = a->max_qp ? min_u32(a->max_qp + 1, 0x10000) : 0;
	caps->max_qp_wr =
		pow2_floor(min_u32(a->max_qp_wr, PVRDMA_RING_MAX_ELEMS));
	caps->device_cap_flags =
		a->device_cap_flags &
		(IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_SHUTDOWN_PORT |
		 IBV_DEVICE_PORT_ACTIVE_EVENT | IBV_DEVICE_SYS_IMAGE_GUID);
	caps->max_sge = pow2_floor(min_u32(a->max_sge, max_sge_in_page()));
	caps->max_sge_rd = min_u32(a->max_sge_rd, caps->max_sge);
	/* CQ handles are 1..max_cq; max_cq % is the driver's table. */
	caps->max_cq = a->max_cq;
	caps->max_cqe = pow2_floor(min_u32(a->max_cqe, PVRDMA_RING_MAX_ELEMS));
	caps->max_mr = a->max_mr;
	caps->max_pd = a->max_pd;
	caps->max_qp_rd_atom = a->max_qp_rd_atom;
	caps->max_res_rd_atom = a->max_res_rd_atom;
	caps->max_qp_init_rd_atom = a->max_qp_init_rd_atom;
	caps->max_ah = a->max_ah;
	caps->max_srq = a->max_srq;
	caps->max_srq_wr =
		pow2_floor(min_u32(a->max_srq_wr, PVRDMA_RING_MAX_ELEMS));
	caps->max_srq_sge =
		pow2_floor(min_u32(a->max_srq_sge, max_sge_in_page()));
	caps->max_uar = in->max_uar;
	/* struct pvrdma_av's gid_index is a u8 */
	caps->gid_tbl_len = min_u32(in->gid_tbl_len, 256);
	caps->max_pkeys = 1;
	caps->local_ca_ack_delay = a->local_ca_ack_delay;
	caps->phys_port_cnt = 1;
	caps->mode = PVRDMA_DEVICE_MODE_ROCE;
	if (a->atomic_cap != IBV_ATOMIC_NONE)
		caps->atomic_ops =
			PVRDMA_ATOMIC_OP_COMP_SWAP | PVRDMA_ATOMIC_OP_FETCH_ADD;
	caps->bmme_flags = 0;
	caps->gid_types = PVRDMA_GID_TYPE_FLAG_ROCE_V2;
	caps->max_fast_reg_page_list_len = 0;
}
