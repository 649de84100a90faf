// SPDX-License-Identifier: MIT
/*
 * Unit tests of the guest simulator's PVRDMA provider, pure parts
 * (guest/pvrdma_wqe.c): ring indices as the driver computes them, WQEs at
 * the byte offsets of the uapi layout, CQE decoding and the attribute
 * translations. Expected offsets are written out from the kernel's
 * <rdma/vmw_pvrdma-abi.h>, not taken from the structs under test.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "guest/pvrdma_wqe.h"

static uint32_t u32_at(const uint8_t *b, size_t off)
{
	uint32_t v;

	memcpy(&v, b + off, 4);
	return v;
}

static uint64_t u64_at(const uint8_t *b, size_t off)
{
	uint64_t v;

	memcpy(&v, b + off, 8);
	return v;
}

static void ring_fills_wraps_and_drains(void **state)
{
	struct pvrdma_ring r = { 0, 0 };
	uint32_t slot;

	(void)state;
	assert_int_equal(pvrdma_ring_has_data(&r, 4, &slot), 0);
	for (uint32_t i = 0; i < 4; i++) {
		assert_int_equal(pvrdma_ring_has_space(&r, 4, &slot), 1);
		assert_int_equal(slot, i);
		pvrdma_ring_inc(&r.prod_tail, 4);
	}
	/* full: tail == head ^ n, the wrap bit set */
	assert_int_equal(r.prod_tail, 4);
	assert_int_equal(pvrdma_ring_has_space(&r, 4, &slot), 0);
	for (uint32_t i = 0; i < 4; i++) {
		assert_int_equal(pvrdma_ring_has_data(&r, 4, &slot), 1);
		assert_int_equal(slot, i);
		pvrdma_ring_inc(&r.cons_head, 4);
	}
	assert_int_equal(pvrdma_ring_has_data(&r, 4, &slot), 0);
	/* a second lap wraps the indices back to 0 */
	for (uint32_t i = 0; i < 4; i++)
		pvrdma_ring_inc(&r.prod_tail, 4);
	assert_int_equal(r.prod_tail, 0);
	assert_int_equal(pvrdma_ring_has_space(&r, 4, &slot), 0);
}

static void ring_refuses_garbage_indices(void **state)
{
	struct pvrdma_ring r = { 8, 0 }; /* 8 is outside [0, 2 * 4) */
	uint32_t slot = 77;

	(void)state;
	assert_int_equal(pvrdma_ring_has_data(&r, 4, &slot), -1);
	assert_int_equal(pvrdma_ring_has_space(&r, 4, &slot), -1);
	r.prod_tail = -1;
	assert_int_equal(pvrdma_ring_has_data(&r, 4, &slot), -1);
	assert_int_equal(slot, 77);
	assert_true(pvrdma_idx_valid(7, 4));
	assert_false(pvrdma_idx_valid(8, 4));
}

/*
 * The async ring holds 3 pages of 8-byte events: 1536, not a power of two.
 * The driver masks with 2n - 1 anyway; both sides must step the same way.
 */
static void ring_steps_like_the_driver_at_1536(void **state)
{
	int32_t idx = 0x5ff;

	(void)state;
	pvrdma_ring_inc(&idx, 1536);
	assert_int_equal(idx, 0x600 & 0xbff);
}

static void wqe_sizes_are_powers_of_two(void **state)
{
	(void)state;
	assert_int_equal(pvrdma_pow2(0), 1);
	assert_int_equal(pvrdma_pow2(3), 4);
	assert_int_equal(pvrdma_pow2(1024), 1024);
	assert_int_equal(pvrdma_sq_wqe_size(1), 128); /* 80 + 16 */
	assert_int_equal(pvrdma_sq_wqe_size(4), 256); /* 80 + 64 */
	assert_int_equal(pvrdma_rq_wqe_size(1), 32);  /* 16 + 16 */
	assert_int_equal(pvrdma_rq_wqe_size(2), 64);
}

static void rdma_write_lands_at_uapi_offsets(void **state)
{
	struct gv_sge sg[2] = { { 0x1000, 64, 7 }, { 0x2000, 32, 8 } };
	struct gv_send_wr wr = { .wr_id = 0x1122334455667788ull,
				 .sg_list = sg,
				 .num_sge = 2,
				 .opcode = VIRTIO_RDMA_WR_RDMA_WRITE_WITH_IMM,
				 .send_flags = VIRTIO_RDMA_SEND_SIGNALED,
				 .imm_data = 0xa1b2c3d4 };
	uint8_t b[256];

	(void)state;
	wr.wr.rdma.remote_addr = 0xdead0000beefull;
	wr.wr.rdma.rkey = 0x55;
	memset(b, 0xee, sizeof(b));
	assert_int_equal(pvrdma_encode_send(&wr, VIRTIO_RDMA_QPT_RC, NULL, 2, b,
					    sizeof(b)),
			 0);
	assert_true(u64_at(b, 0) == wr.wr_id);
	assert_int_equal(u32_at(b, 8), 2);  /* num_sge */
	assert_int_equal(u32_at(b, 16), 1); /* PVRDMA_WR_RDMA_WRITE_WITH_IMM */
	assert_int_equal(u32_at(b, 20), 2); /* PVRDMA_SEND_SIGNALED */
	assert_int_equal(u32_at(b, 24), 0xa1b2c3d4);
	assert_true(u64_at(b, 32) == 0xdead0000beefull);
	assert_int_equal(u32_at(b, 40), 0x55);
	/* SGEs right after the 80-byte header: addr, length, lkey */
	assert_true(u64_at(b, 80) == 0x1000);
	assert_int_equal(u32_at(b, 88), 64);
	assert_int_equal(u32_at(b, 92), 7);
	assert_true(u64_at(b, 96) == 0x2000);
	assert_int_equal(u32_at(b, 108), 8);
}

static void atomics_land_at_uapi_offsets(void **state)
{
	struct gv_sge sg = { 0x3000, 8, 9 };
	struct gv_send_wr wr = { .sg_list = &sg,
				 .num_sge = 1,
				 .opcode = VIRTIO_RDMA_WR_ATOMIC_CMP_AND_SWP };
	uint8_t b[128];

	(void)state;
	wr.wr.atomic.remote_addr = 0x4000;
	wr.wr.atomic.compare_add = 11;
	wr.wr.atomic.swap = 22;
	wr.wr.atomic.rkey = 33;
	memset(b, 0, sizeof(b));
	assert_int_equal(pvrdma_encode_send(&wr, VIRTIO_RDMA_QPT_RC, NULL, 1, b,
					    sizeof(b)),
			 0);
	assert_int_equal(u32_at(b, 16), 5); /* PVRDMA_WR_ATOMIC_CMP_AND_SWP */
	assert_true(u64_at(b, 32) == 0x4000);
	assert_true(u64_at(b, 40) == 11);
	assert_true(u64_at(b, 48) == 22);
	assert_int_equal(u32_at(b, 56), 33);
	/* fetch-and-add leaves swap alone, as the provider */
	memset(b, 0, sizeof(b));
	wr.opcode = VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD;
	assert_int_equal(pvrdma_encode_send(&wr, VIRTIO_RDMA_QPT_RC, NULL, 1, b,
					    sizeof(b)),
			 0);
	assert_int_equal(u32_at(b, 16), 6);
	assert_true(u64_at(b, 48) == 0);
}

static void ud_send_carries_the_av(void **state)
{
	struct gv_ah_attr aa = { .sgid_index = 2,
				 .hop_limit = 64,
				 .traffic_class = 0x20,
				 .flow_label = 0x12345,
				 .sl = 5 };
	struct gv_sge sg = { 0x5000, 100, 3 };
	struct gv_send_wr wr = { .sg_list = &sg,
				 .num_sge = 1,
				 .opcode = VIRTIO_RDMA_WR_SEND };
	struct pvrdma_av av;
	uint8_t b[128];

	(void)state;
	memset(aa.dgid, 0xab, 16);
	pvrdma_fill_av(&aa, 7, &av);
	wr.wr.ud.remote_qpn = 0x123456;
	wr.wr.ud.remote_qkey = 0x11111111;
	memset(b, 0, sizeof(b));
	assert_int_equal(pvrdma_encode_send(&wr, VIRTIO_RDMA_QPT_UD, &av, 1, b,
					    sizeof(b)),
			 0);
	assert_int_equal(u32_at(b, 16), 2); /* PVRDMA_WR_SEND */
	assert_int_equal(u32_at(b, 32), 0x123456);
	assert_int_equal(u32_at(b, 36), 0x11111111);
	/* the AV at 40: port_pd, then sl_tclass_flowlabel without the SL */
	assert_int_equal(u32_at(b, 40), 7 | 1u << 24);
	assert_int_equal(u32_at(b, 44), 0x20u << 20 | 0x12345);
	assert_int_equal(b[48], 0xab);	      /* dgid */
	assert_int_equal(b[64], 0x80);	      /* src_path_bits | GRH */
	assert_int_equal(b[65], 2);	      /* gid_index */
	assert_int_equal(b[67], 64);	      /* hop_limit */
	assert_true(u64_at(b, 80) == 0x5000); /* the SGE */
}

static void send_refusals(void **state)
{
	struct gv_sge sg[3] = { { 1, 1, 1 }, { 2, 2, 2 }, { 3, 3, 3 } };
	struct gv_send_wr wr = { .sg_list = sg,
				 .num_sge = 3,
				 .opcode = VIRTIO_RDMA_WR_SEND };
	struct gv_recv_wr rw = { .sg_list = sg, .num_sge = 3 };
	uint8_t b[256];

	(void)state;
	/* more SGEs than the queue was created with */
	assert_int_equal(pvrdma_encode_send(&wr, VIRTIO_RDMA_QPT_RC, NULL, 2, b,
					    sizeof(b)),
			 -EINVAL);
	assert_int_equal(pvrdma_encode_recv(&rw, 2, b, sizeof(b)), -EINVAL);
	/* a slot too small for the header and SGEs */
	assert_int_equal(
		pvrdma_encode_send(&wr, VIRTIO_RDMA_QPT_RC, NULL, 4, b, 100),
		-EINVAL);
	/* no inline data on PVRDMA, no opcode outside the provider's */
	wr.num_sge = 1;
	wr.send_flags = VIRTIO_RDMA_SEND_INLINE;
	assert_int_equal(pvrdma_encode_send(&wr, VIRTIO_RDMA_QPT_RC, NULL, 4, b,
					    sizeof(b)),
			 -EINVAL);
	wr.send_flags = 0;
	wr.opcode = VIRTIO_RDMA_WR_LOCAL_INV;
	assert_int_equal(pvrdma_encode_send(&wr, VIRTIO_RDMA_QPT_RC, NULL, 4, b,
					    sizeof(b)),
			 -EINVAL);
	assert_int_equal(pvrdma_qp_type(VIRTIO_RDMA_QPT_UC), -EOPNOTSUPP);
	assert_int_equal(pvrdma_qp_type(VIRTIO_RDMA_QPT_RC), PVRDMA_QPT_RC);
}

static void recv_wqe_layout(void **state)
{
	struct gv_sge sg = { 0x6000, 4096, 12 };
	struct gv_recv_wr wr = { .wr_id = 99, .sg_list = &sg, .num_sge = 1 };
	uint8_t b[64];

	(void)state;
	memset(b, 0xee, sizeof(b));
	assert_int_equal(pvrdma_encode_recv(&wr, 1, b, 32), 0);
	assert_true(u64_at(b, 0) == 99);
	assert_int_equal(u32_at(b, 8), 1);
	assert_true(u64_at(b, 16) == 0x6000);
	assert_int_equal(u32_at(b, 24), 4096);
	assert_int_equal(u32_at(b, 28), 12);
	assert_int_equal(b[32], 0xee); /* nothing past the slot */
}

static void cqe_decodes(void **state)
{
	uint8_t raw[64] = { 0 };
	struct pvrdma_cqe c;
	struct gv_wc w;
	uint64_t v64;
	uint32_t v32;

	(void)state;
	v64 = 42;
	memcpy(raw + 0, &v64, 8); /* wr_id */
	v64 = 3;
	memcpy(raw + 8, &v64, 8); /* qp: the handle */
	v32 = 129;
	memcpy(raw + 16, &v32, 4); /* PVRDMA_WC_RECV_RDMA_WITH_IMM */
	v32 = 10;
	memcpy(raw + 20, &v32, 4); /* status: REM_ACCESS_ERR */
	v32 = 512;
	memcpy(raw + 24, &v32, 4); /* byte_len */
	v32 = 0x01020304;
	memcpy(raw + 28, &v32, 4); /* imm_data */
	v32 = 0x777;
	memcpy(raw + 32, &v32, 4); /* src_qp */
	v32 = 3;
	memcpy(raw + 36, &v32, 4); /* wc_flags GRH | WITH_IMM */
	v32 = 99;
	memcpy(raw + 40, &v32, 4); /* vendor_err */
	raw[48] = 4;		   /* sl */
	raw[50] = 1;		   /* port_num */
	memcpy(&c, raw, sizeof(c));
	pvrdma_decode_cqe(&c, 0xabcdef, &w);
	assert_true(w.wr_id == 42);
	assert_int_equal(w.opcode, VIRTIO_RDMA_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(w.status, VIRTIO_RDMA_WC_REM_ACCESS_ERR);
	assert_int_equal(w.qp_num, 0xabcdef);
	assert_int_equal(w.byte_len, 512);
	assert_int_equal(w.imm_data, 0x01020304);
	assert_int_equal(w.src_qp, 0x777);
	assert_int_equal(w.wc_flags,
			 VIRTIO_RDMA_WC_GRH | VIRTIO_RDMA_WC_WITH_IMM);
	assert_int_equal(w.vendor_err, 0);
	assert_int_equal(w.sl, 4);
	assert_int_equal(w.port_num, 1);
	c.opcode = PVRDMA_WC_LOCAL_INV;
	pvrdma_decode_cqe(&c, 1, &w);
	assert_int_equal(w.opcode, VIRTIO_RDMA_WC_LOCAL_INV);
	c.opcode = PVRDMA_WC_RECV;
	pvrdma_decode_cqe(&c, 1, &w);
	assert_int_equal(w.opcode, VIRTIO_RDMA_WC_RECV);
}

static void qp_attr_round_trips(void **state)
{
	struct virtio_rdma_qp_attr a = { 0 }, back;
	struct pvrdma_qp_attr p;
	uint8_t raw[sizeof(p)];

	(void)state;
	a.qp_state = VIRTIO_RDMA_QPS_RTR;
	a.path_mtu = VIRTIO_RDMA_MTU_1024;
	a.dest_qp_num = 0x654321;
	a.rq_psn = 0x111;
	a.qp_access_flags = VIRTIO_RDMA_ACCESS_REMOTE_WRITE;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 12;
	a.port_num = 1;
	a.timeout = 14;
	a.cap.max_send_wr = 64;
	a.ah_attr.ah_flags = VIRTIO_RDMA_AH_GRH;
	a.ah_attr.port_num = 1;
	a.ah_attr.sl = 3;
	a.ah_attr.grh.sgid_index = 1;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.grh.flow_label = 0xabcde;
	memset(a.ah_attr.grh.dgid, 0x5a, 16);
	pvrdma_qp_attr_to_dev(&a, &p);
	memcpy(raw, &p, sizeof(p));
	/* offsets of struct pvrdma_qp_attr in the driver */
	assert_int_equal(u32_at(raw, 0), VIRTIO_RDMA_QPS_RTR);
	assert_int_equal(u32_at(raw, 8), 3); /* PVRDMA_MTU_1024 */
	assert_int_equal(u32_at(raw, 28), 0x654321);
	assert_int_equal(raw[43], 4);			/* max_dest_rd_atomic */
	assert_int_equal(raw[44], 12);			/* min_rnr_timer */
	assert_int_equal(u32_at(raw, 56), 64);		/* cap.max_send_wr */
	assert_int_equal(raw[80], 0x5a);		/* ah_attr.grh.dgid */
	assert_int_equal(u32_at(raw, 96), 0xabcde);	/* flow_label */
	assert_int_equal(raw[100], 1);			/* sgid_index */
	assert_int_equal(raw[108], 3);			/* sl */
	assert_int_equal(raw[111], VIRTIO_RDMA_AH_GRH); /* ah_flags */
	assert_int_equal(raw[112], 1);			/* port_num */
	pvrdma_qp_attr_from_dev(&p, &back);
	assert_memory_equal(&back, &a, sizeof(a));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ring_fills_wraps_and_drains),
		cmocka_unit_test(ring_refuses_garbage_indices),
		cmocka_unit_test(ring_steps_like_the_driver_at_1536),
		cmocka_unit_test(wqe_sizes_are_powers_of_two),
		cmocka_unit_test(rdma_write_lands_at_uapi_offsets),
		cmocka_unit_test(atomics_land_at_uapi_offsets),
		cmocka_unit_test(ud_send_carries_the_av),
		cmocka_unit_test(send_refusals),
		cmocka_unit_test(recv_wqe_layout),
		cmocka_unit_test(cqe_decodes),
		cmocka_unit_test(qp_attr_round_trips),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
