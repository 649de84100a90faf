// SPDX-License-Identifier: MIT
/* The PVRDMA command slot decoder, DSR checks and caps encoder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "worker/pvrdma/cmd.h"
#include "worker/pvrdma/dsr.h"

static const struct pvrdma_cmd_limits lim = {
	.max_cqe = 4096,
	.max_qp_wr = 1024,
	.max_sge = 8,
	.max_srq_wr = 1024,
	.max_srq_sge = 8,
	.gid_tbl_len = 16,
	.max_pkeys = 1,
	.max_mr_pages = 1024,
	.max_ring_pages = 256,
};

static int decode(const union pvrdma_cmd_req *c, size_t len,
		  union pvrdma_cmd_req *out, struct reason *why)
{
	return pvrdma_cmd_decode(c, len, &lim, out, why);
}

/* A CREATE_QP as the driver builds it for the given caps. */
static void make_qp(union pvrdma_cmd_req *c, uint32_t swr, uint32_t ssge,
		    uint32_t rwr, uint32_t rsge)
{
	uint32_t sp = 1 + pvrdma_ring_pages(swr, pvrdma_sq_wqe_size(ssge));
	uint32_t rp = pvrdma_ring_pages(rwr, pvrdma_rq_wqe_size(rsge));

	memset(c, 0, sizeof(*c));
	c->hdr.cmd = PVRDMA_CMD_CREATE_QP;
	c->create_qp.pdir_dma = 0x5000;
	c->create_qp.qp_type = PVRDMA_QPT_RC;
	c->create_qp.max_send_wr = swr;
	c->create_qp.max_send_sge = ssge;
	c->create_qp.max_recv_wr = rwr;
	c->create_qp.max_recv_sge = rsge;
	/* as the driver: send_chunks without the ring-state page */
	c->create_qp.send_chunks = sp - 1;
	c->create_qp.total_chunks = sp + rp;
}

static void test_every_command_needs_its_bytes(void **state)
{
	union pvrdma_cmd_req c, out;
	struct reason why;
	uint32_t code;

	(void)state;
	for (code = 0; code < PVRDMA_CMD_MAX; code++) {
		size_t need = pvrdma_cmd_req_size(code);

		assert_true(need >= sizeof(struct pvrdma_cmd_hdr));
		memset(&c, 0, sizeof(c));
		c.hdr.cmd = code;
		assert_int_equal(decode(&c, need - 1, &out, &why), -EINVAL);
	}
	assert_int_equal(decode(&c, 8, &out, &why), -EINVAL);
	c.hdr.cmd = PVRDMA_CMD_MAX;
	assert_int_equal(decode(&c, sizeof(c), &out, &why), -ENOSYS);
	c.hdr.cmd = 0x80000000u;
	assert_int_equal(decode(&c, sizeof(c), &out, &why), -ENOSYS);
	assert_string_equal(pvrdma_cmd_name(PVRDMA_CMD_CREATE_BIND),
			    "CREATE_BIND");
}

static void test_decode_copies_only_the_command(void **state)
{
	union pvrdma_cmd_req c, out;
	struct reason why;

	(void)state;
	memset(&c, 0xee, sizeof(c));
	c.hdr.cmd = PVRDMA_CMD_DESTROY_PD;
	c.destroy_pd.pd_handle = 7;
	assert_int_equal(decode(&c, sizeof(c), &out, &why),
			 PVRDMA_CMD_DESTROY_PD);
	assert_int_equal(out.destroy_pd.pd_handle, 7);
	/* the bytes after the command are not the guest's */
	assert_int_equal(((uint8_t *)&out)[sizeof(out.destroy_pd)], 0);
}

static void test_create_qp_as_the_driver_sends_it(void **state)
{
	union pvrdma_cmd_req c, out;
	struct reason why;

	(void)state;
	make_qp(&c, 64, 4, 128, 2);
	assert_int_equal(decode(&c, sizeof(c), &out, &why),
			 PVRDMA_CMD_CREATE_QP);
	/* SRQ QPs have no receive pages */
	make_qp(&c, 16, 1, 0, 0);
	c.create_qp.is_srq = 1;
	assert_int_equal(decode(&c, sizeof(c), &out, &why),
			 PVRDMA_CMD_CREATE_QP);
}

static void test_create_qp_refusals(void **state)
{
	union pvrdma_cmd_req c, out;
	struct reason why;

	(void)state;
	make_qp(&c, 64, 9, 16, 1); /* max_sge 8 */
	assert_int_equal(decode(&c, sizeof(c), &out, &why), -EINVAL);
	make_qp(&c, 48, 1, 16, 1); /* not a power of two */
	assert_int_equal(decode(&c, sizeof(c), &out, &why), -EINVAL);
	make_qp(&c, 2048, 1, 16, 1); /* over max_qp_wr */
	assert_int_equal(decode(&c, sizeof(c), &out, &why), -EINVAL);
	make_qp(&c, 64, 4, 128, 2);
	c.create_qp.send_chunks--; /* SQ would run past its pages */
	assert_int_equal(decode(&c, sizeof(c), &out, &why), -EINVAL);
	make_qp(&c, 64, 4, 128, 2);
	c.create_qp.total_chunks = c.create_qp.send_chunks + 1; /* no RQ */
	assert_int_equal(decode(&c, sizeof(c), &out, &why), -EINVAL);
	make_qp(&c, 64, 4, 128, 2);
	c.create_qp.total_chunks = 0xffff; /* CVE-2018-20125 */
	assert_int_equal(decode(&c, sizeof(c), &out, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "at most"));
	make_qp(&c, 64, 4, 128, 2);
	c.create_qp.qp_type = PVRDMA_QPT_RAW_PACKET;
	assert_int_equal(decode(&c, sizeof(c), &out, &why), -EOPNOTSUPP);
	make_qp(&c, 64, 4, 128, 2);
	c.create_qp.pdir_dma = 0x5008;
	assert_int_equal(decode(&c, sizeof(c), &out, &why), -EINVAL);
	/* inline data: none offered; more than a WQE's page is refused */
	make_qp(&c, 64, 4, 128, 2);
	c.create_qp.max_inline_data = 0xffffffff;
	assert_int_equal(decode(&c, sizeof(c), &out, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "inline"));
	c.create_qp.max_inline_data = PVRDMA_PAGE_SIZE + 1;
	assert_int_equal(decode(&c, sizeof(c), &out, &why), -EINVAL);
	c.create_qp.max_inline_data = PVRDMA_PAGE_SIZE;
	assert_int_equal(decode(&c, sizeof(c), &out, &why),
			 PVRDMA_CMD_CREATE_QP);
}

static void test_create_cq_and_mr(void **state)
{
	union pvrdma_cmd_req c, out;
	struct reason why;

	(void)state;
	memset(&c, 0, sizeof(c));
	c.hdr.cmd = PVRDMA_CMD_CREATE_CQ;
	c.create_cq.cqe = 256; /* 256 * 64 = 4 pages + state */
	c.create_cq.nchunks = 5;
	c.create_cq.pdir_dma = 0x7000;
	assert_int_equal(decode(&c, sizeof(c), &out, &why),
			 PVRDMA_CMD_CREATE_CQ);
	c.create_cq.nchunks = 4;
	assert_int_equal(decode(&c, sizeof(c), &out, &why), -EINVAL);
	c.create_cq.nchunks = 11; /* more than twice the ring */
	assert_int_equal(decode(&c, sizeof(c), &out, &why), -EINVAL);
	c.create_cq.nchunks = 10;
	assert_int_equal(decode(&c, sizeof(c), &out, &why),
			 PVRDMA_CMD_CREATE_CQ);
	c.create_cq.nchunks = 5;
	c.create_cq.cqe = 100;
	assert_int_equal(decode(&c, sizeof(c), &out, &why), -EINVAL);

	memset(&c, 0, sizeof(c));
	c.hdr.cmd = PVRDMA_CMD_CREATE_MR;
	c.create_mr.start = 0x10000ff0;
	c.create_mr.length = 0x20; /* crosses a page: 2 pages */
	c.create_mr.nchunks = 2;
	c.create_mr.pdir_dma = 0x9000;
	c.create_mr.access_flags = PVRDMA_ACCESS_LOCAL_WRITE;
	assert_int_equal(decode(&c, sizeof(c), &out, &why),
			 PVRDMA_CMD_CREATE_MR);
	c.create_mr.nchunks = 1;
	assert_int_equal(decode(&c, sizeof(c), &out, &why), -EINVAL);
	c.create_mr.nchunks = 2;
	c.create_mr.start = UINT64_MAX - 8; /* wraps */
	assert_int_equal(decode(&c, sizeof(c), &out, &why), -EINVAL);
	c.create_mr.start = 0;
	c.create_mr.length = 4096ull * 2000;
	c.create_mr.nchunks = 2000; /* over max_mr_pages */
	assert_int_equal(decode(&c, sizeof(c), &out, &why), -EINVAL);
	memset(&c.create_mr, 0, sizeof(c.create_mr));
	c.hdr.cmd = PVRDMA_CMD_CREATE_MR;
	c.create_mr.flags = PVRDMA_MR_FLAG_DMA; /* no pages needed */
	assert_int_equal(decode(&c, sizeof(c), &out, &why),
			 PVRDMA_CMD_CREATE_MR);
	c.create_mr.flags = PVRDMA_MR_FLAG_FRMR;
	assert_int_equal(decode(&c, sizeof(c), &out, &why), -EOPNOTSUPP);
	c.create_mr.flags = PVRDMA_MR_FLAG_DMA;
	c.create_mr.access_flags = PVRDMA_ACCESS_ON_DEMAND;
	assert_int_equal(decode(&c, sizeof(c), &out, &why), -EOPNOTSUPP);
	c.create_mr.access_flags = PVRDMA_ACCESS_MW_BIND;
	assert_int_equal(decode(&c, sizeof(c), &out, &why), -EOPNOTSUPP);
	c.create_mr.access_flags = 1u << 30; /* past the optional range */
	assert_int_equal(decode(&c, sizeof(c), &out, &why), -EOPNOTSUPP);
	/* ib_write_bw's 0x100003 and ib_send_lat's 0x100001: relaxed
	 * ordering, an optional bit Linux passes through vmw_pvrdma */
	c.create_mr.access_flags = 0x100003;
	assert_int_equal(decode(&c, sizeof(c), &out, &why),
			 PVRDMA_CMD_CREATE_MR);
	assert_int_equal(pvrdma_mr_access(out.create_mr.access_flags),
			 0x100003);
	c.create_mr.access_flags = PVRDMA_ACCESS_LOCAL_WRITE | (1u << 29);
	assert_int_equal(decode(&c, sizeof(c), &out, &why),
			 PVRDMA_CMD_CREATE_MR);
	assert_int_equal(pvrdma_mr_access(out.create_mr.access_flags),
			 PVRDMA_ACCESS_LOCAL_WRITE);
}

static void test_modify_qp_bind_srq(void **state)
{
	union pvrdma_cmd_req c, out;
	struct reason why;

	(void)state;
	memset(&c, 0, sizeof(c));
	c.hdr.cmd = PVRDMA_CMD_MODIFY_QP;
	c.modify_qp.attr_mask =
		PVRDMA_QP_STATE | PVRDMA_QP_AV | PVRDMA_QP_PATH_MTU;
	c.modify_qp.attrs.qp_state = PVRDMA_QPS_RTR;
	c.modify_qp.attrs.path_mtu = PVRDMA_MTU_1024;
	c.modify_qp.attrs.ah_attr.ah_flags = PVRDMA_AH_GRH;
	c.modify_qp.attrs.ah_attr.grh.sgid_index = 3;
	assert_int_equal(decode(&c, sizeof(c), &out, &why),
			 PVRDMA_CMD_MODIFY_QP);
	c.modify_qp.attrs.ah_attr.grh.sgid_index = 16;
	assert_int_equal(decode(&c, sizeof(c), &out, &why), -EINVAL);
	c.modify_qp.attrs.ah_attr.grh.sgid_index = 3;
	c.modify_qp.attrs.qp_state = 7;
	assert_int_equal(decode(&c, sizeof(c), &out, &why), -EINVAL);
	c.modify_qp.attrs.qp_state = PVRDMA_QPS_RTR;
	c.modify_qp.attr_mask |= 1u << 21;
	assert_int_equal(decode(&c, sizeof(c), &out, &why), -EINVAL);

	memset(&c, 0, sizeof(c));
	c.hdr.cmd = PVRDMA_CMD_CREATE_BIND;
	c.create_bind.index = 15;
	c.create_bind.gid_type = PVRDMA_GID_TYPE_FLAG_ROCE_V2;
	assert_int_equal(decode(&c, sizeof(c), &out, &why),
			 PVRDMA_CMD_CREATE_BIND);
	c.create_bind.index = 16;
	assert_int_equal(decode(&c, sizeof(c), &out, &why), -EINVAL);
	c.create_bind.index = 1;
	c.create_bind.gid_type = 3;
	assert_int_equal(decode(&c, sizeof(c), &out, &why), -EINVAL);

	memset(&c, 0, sizeof(c));
	c.hdr.cmd = PVRDMA_CMD_CREATE_SRQ;
	c.create_srq.attrs.max_wr = 64;
	c.create_srq.attrs.max_sge = 2;
	c.create_srq.attrs.srq_limit = 10;
	c.create_srq.pdir_dma = 0x3000;
	/* as the provider allocates: state page + twice the WQE pages */
	c.create_srq.nchunks =
		1 + 2 * pvrdma_ring_pages(64, pvrdma_rq_wqe_size(2));
	assert_int_equal(decode(&c, sizeof(c), &out, &why),
			 PVRDMA_CMD_CREATE_SRQ);
	c.create_srq.attrs.srq_limit = 64;
	assert_int_equal(decode(&c, sizeof(c), &out, &why), -EINVAL);
}

static void make_dsr(struct pvrdma_device_shared_region *d)
{
	memset(d, 0, sizeof(*d));
	d->driver_version = PVRDMA_QPHANDLE_VERSION;
	d->cmd_slot_dma = 0x1000;
	d->resp_slot_dma = 0x2000;
	d->async_ring_pages.num_pages = PVRDMA_NUM_RING_PAGES;
	d->async_ring_pages.pdir_dma = 0x3000;
	d->cq_ring_pages.num_pages = PVRDMA_NUM_RING_PAGES;
	d->cq_ring_pages.pdir_dma = 0x4000;
	d->uar_pfn64 = 0xfe000;
}

static void test_dsr_checks(void **state)
{
	struct pvrdma_device_shared_region d;
	struct pvrdma_dsr_info info;
	struct reason why;

	(void)state;
	make_dsr(&d);
	assert_int_equal(pvrdma_dsr_decode(&d, sizeof(d), 20, &info, &why), 0);
	/* 1536 and 3072 entries for the driver: 512 and 1024 in use */
	assert_int_equal(info.async.nelems, 512);
	assert_int_equal(info.cqn.nelems, 1024);
	assert_int_equal(info.uar_pfn, 0xfe000);
	/* CVE-2022-1050: an uninitialised (zero) DSR */
	memset(&d, 0, sizeof(d));
	assert_int_equal(pvrdma_dsr_decode(&d, sizeof(d), 20, &info, &why),
			 -EINVAL);
	make_dsr(&d);
	d.resp_slot_dma = 0;
	assert_int_equal(pvrdma_dsr_decode(&d, sizeof(d), 20, &info, &why),
			 -EINVAL);
	/* CVE-2021-3607 / CVE-2023-1544: ring page counts 0 and huge */
	make_dsr(&d);
	d.async_ring_pages.num_pages = 0;
	assert_int_equal(pvrdma_dsr_decode(&d, sizeof(d), 20, &info, &why),
			 -EINVAL);
	d.async_ring_pages.num_pages = 0xffffffffu;
	assert_int_equal(pvrdma_dsr_decode(&d, sizeof(d), 20, &info, &why),
			 -EINVAL);
	make_dsr(&d);
	d.cq_ring_pages.num_pages = PVRDMA_DEV_RING_MAX_PAGES + 1;
	assert_int_equal(pvrdma_dsr_decode(&d, sizeof(d), 20, &info, &why),
			 -EINVAL);
	assert_int_equal(pvrdma_dsr_decode(&d, 100, 20, &info, &why), -EINVAL);
	assert_int_equal(pvrdma_dev_ring_nelems(4, 64), 64);
	assert_int_equal(pvrdma_dev_ring_nelems(5, 64), 256);
	assert_int_equal(pvrdma_dev_ring_nelems(3, 3000), 2);
	assert_int_equal(pvrdma_dev_ring_nelems(1, 8), 0);
}

static void test_caps_clamped(void **state)
{
	struct ibv_device_attr a;
	struct pvrdma_device_caps caps;
	struct pvrdma_caps_in in = { .attr = &a,
				     .gid_tbl_len = 16,
				     .max_uar = 512,
				     .max_mr_pages = 1024 };

	(void)state;
	memset(&a, 0, sizeof(a));
	a.max_qp = 100000;
	a.max_sge = 1000;
	a.max_cqe = 1 << 30;
	a.max_mr_size = ~0ull;
	a.atomic_cap = IBV_ATOMIC_HCA;
	pvrdma_caps_encode(&in, &caps);
	assert_int_equal(caps.max_qp, 0x10000);
	/* a WQE slot fits a page; powers of two, as the driver rounds up */
	assert_int_equal(caps.max_sge, 128);
	assert_int_equal(caps.max_cqe, 1u << 24);
	/*
	 * The driver rounds a CQ's size up to a power of two before it
	 * checks it against max_cqe: rxe's 32767 is advertised as 16384
	 * (a CQ of 16384 works, one of 16385 would ask for 32768).
	 */
	a.max_cqe = 32767;
	pvrdma_caps_encode(&in, &caps);
	assert_int_equal(caps.max_cqe, 16384);
	assert_int_equal(caps.max_mr_size, 1024ull * 4096);
	assert_int_equal(caps.gid_types, PVRDMA_GID_TYPE_FLAG_ROCE_V2);
	assert_int_equal(caps.mode, PVRDMA_DEVICE_MODE_ROCE);
	assert_int_equal(caps.phys_port_cnt, 1);
	assert_int_equal(caps.max_pkeys, 1);
	assert_int_equal(caps.bmme_flags, 0);
	assert_int_equal(caps.atomic_ops, PVRDMA_ATOMIC_OP_COMP_SWAP |
						  PVRDMA_ATOMIC_OP_FETCH_ADD);
	a.max_qp = 10;
	a.max_sge = 30;
	a.max_qp_wr = 16383;
	a.max_srq_sge = 5;
	pvrdma_caps_encode(&in, &caps);
	assert_int_equal(caps.max_qp, 11); /* handles 1..10 */
	assert_int_equal(caps.max_sge, 16);
	assert_int_equal(caps.max_qp_wr, 8192);
	assert_int_equal(caps.max_srq_sge, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_command_needs_its_bytes),
		cmocka_unit_test(test_decode_copies_only_the_command),
		cmocka_unit_test(test_create_qp_as_the_driver_sends_it),
		cmocka_unit_test(test_create_qp_refusals),
		cmocka_unit_test(test_create_cq_and_mr),
		cmocka_unit_test(test_modify_qp_bind_srq),
		cmocka_unit_test(test_dsr_checks),
		cmocka_unit_test(test_caps_clamped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
