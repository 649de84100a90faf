// SPDX-License-Identifier: MIT
/* PVRDMA WQE decoding into backend work requests, and CQE encoding. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "worker/pvrdma/cmd.h"
#include "worker/pvrdma/wqe.h"

/* One WQE slot as the provider writes it. */
struct slot {
	struct pvrdma_sq_wqe_hdr h;
	struct pvrdma_sge sge[BE_MAX_SGE + 8];
};

static void fill(struct slot *s, uint32_t op, uint32_t nsge)
{
	uint32_t i;

	memset(s, 0, sizeof(*s));
	s->h.wr_id = 0xabcdef;
	s->h.opcode = op;
	s->h.num_sge = nsge;
	s->h.send_flags = PVRDMA_SEND_SIGNALED;
	for (i = 0; i < nsge; i++) {
		s->sge[i].addr = 0x1000 * (i + 1);
		s->sge[i].length = 100 + i;
		s->sge[i].lkey = 0x55;
	}
}

static const struct pvrdma_sq_limits rc = { BE_QPT_RC, 4, 16 };
static const struct pvrdma_sq_limits ud = { BE_QPT_UD, 4, 16 };

static void test_rc_write_and_atomic(void **state)
{
	struct slot s;
	struct pvrdma_send out;
	struct reason why;
	uint64_t wr_id = 0;
	size_t len = pvrdma_sq_wqe_size(4);

	(void)state;
	fill(&s, PVRDMA_WR_RDMA_WRITE_WITH_IMM, 2);
	s.h.ex.imm_data = 0x01020304;
	s.h.wr.rdma.remote_addr = 0x777000;
	s.h.wr.rdma.rkey = 0x99;
	assert_int_equal(pvrdma_sq_wqe_decode(&s, len, &rc, &out, &wr_id, &why),
			 0);
	assert_int_equal(out.wr.opcode, IBV_WR_RDMA_WRITE_WITH_IMM);
	assert_int_equal(out.wr.cookie, 0xabcdef);
	assert_int_equal(out.wr.imm_data, 0x01020304);
	assert_int_equal(out.wr.wr.rdma.remote_addr, 0x777000);
	assert_int_equal(out.wr.send_flags, IBV_SEND_SIGNALED);
	assert_int_equal(out.wr.num_sge, 2);
	assert_ptr_equal(out.wr.sge, out.sge);
	assert_int_equal(out.sge[1].addr, 0x2000);
	assert_int_equal(out.sge[1].length, 101);

	fill(&s, PVRDMA_WR_ATOMIC_CMP_AND_SWP, 1);
	s.h.wr.atomic.remote_addr = 0x8008;
	s.h.wr.atomic.compare_add = 1;
	s.h.wr.atomic.swap = 2;
	assert_int_equal(pvrdma_sq_wqe_decode(&s, len, &rc, &out, &wr_id, &why),
			 0);
	assert_int_equal(out.wr.wr.atomic.swap, 2);
	s.h.wr.atomic.remote_addr = 0x8004; /* unaligned */
	assert_int_equal(pvrdma_sq_wqe_decode(&s, len, &rc, &out, &wr_id, &why),
			 -EINVAL);
}

static void test_num_sge_bounded(void **state)
{
	struct slot s;
	struct pvrdma_send out;
	struct pvrdma_recv rv;
	struct reason why;
	uint64_t wr_id = 0;

	(void)state;
	/* CVE-2018-20124: num_sge over the QP's max, over the slot */
	fill(&s, PVRDMA_WR_SEND, 5);
	out.wr.num_sge = 4242;
	assert_int_equal(pvrdma_sq_wqe_decode(&s, pvrdma_sq_wqe_size(4), &rc,
					      &out, &wr_id, &why),
			 -EINVAL);
	assert_int_equal(out.wr.num_sge, 4242);
	assert_int_equal(wr_id, 0xabcdef); /* for the error CQE */
	fill(&s, PVRDMA_WR_SEND, 0);
	s.h.num_sge = 0xffffffffu;
	assert_int_equal(
		pvrdma_sq_wqe_decode(&s, sizeof(s), &rc, &out, &wr_id, &why),
		-EINVAL);
	/* a slot too small for the SGEs it claims */
	fill(&s, PVRDMA_WR_SEND, 4);
	assert_int_equal(
		pvrdma_sq_wqe_decode(&s, 80 + 3 * 16, &rc, &out, &wr_id, &why),
		-EINVAL);
	assert_int_equal(pvrdma_sq_wqe_decode(&s, 79, &rc, &out, &wr_id, &why),
			 -EINVAL);
	/* receive side */
	memset(&s, 0, sizeof(s));
	((struct pvrdma_rq_wqe_hdr *)&s)->num_sge = 3;
	assert_int_equal(pvrdma_rq_wqe_decode(&s, 64, 2, &rv, &wr_id, &why),
			 -EINVAL);
	assert_int_equal(pvrdma_rq_wqe_decode(&s, 64, 3, &rv, &wr_id, &why), 0);
	assert_int_equal(rv.wr.num_sge, 3);
	((struct pvrdma_rq_wqe_hdr *)&s)->num_sge = BE_MAX_SGE + 1;
	assert_int_equal(
		pvrdma_rq_wqe_decode(&s, sizeof(s), 1000, &rv, &wr_id, &why),
		-EINVAL);
}

static void test_opcodes_per_qp_type(void **state)
{
	struct slot s;
	struct pvrdma_send out;
	struct reason why;
	uint64_t wr_id;
	size_t len = pvrdma_sq_wqe_size(4);
	uint32_t op;

	(void)state;
	/* UD: sends only */
	fill(&s, PVRDMA_WR_RDMA_READ, 1);
	assert_int_equal(pvrdma_sq_wqe_decode(&s, len, &ud, &out, &wr_id, &why),
			 -EOPNOTSUPP);
	for (op = PVRDMA_WR_LSO; op <= PVRDMA_WR_ERROR + 1; op++) {
		fill(&s, op, 1);
		assert_int_equal(
			pvrdma_sq_wqe_decode(&s, len, &rc, &out, &wr_id, &why),
			-EOPNOTSUPP);
	}
	fill(&s, PVRDMA_WR_SEND, 1);
	s.h.send_flags |= PVRDMA_SEND_INLINE;
	assert_int_equal(pvrdma_sq_wqe_decode(&s, len, &rc, &out, &wr_id, &why),
			 -EOPNOTSUPP);
}

static void test_ud_address_vector(void **state)
{
	struct slot s;
	struct pvrdma_send out;
	struct reason why;
	uint64_t wr_id;
	size_t len = pvrdma_sq_wqe_size(4);

	(void)state;
	fill(&s, PVRDMA_WR_SEND_WITH_IMM, 1);
	s.h.wr.ud.remote_qpn = 0x12345678; /* 24 bits on the wire */
	s.h.wr.ud.remote_qkey = 0x11111111;
	s.h.wr.ud.av.port_pd = (1u << 24) | 3;
	s.h.wr.ud.av.sl_tclass_flowlabel = (5u << 28) | (0x21u << 20) | 0xabcde;
	s.h.wr.ud.av.gid_index = 2;
	s.h.wr.ud.av.hop_limit = 64;
	s.h.wr.ud.av.dgid[15] = 9;
	assert_int_equal(pvrdma_sq_wqe_decode(&s, len, &ud, &out, &wr_id, &why),
			 0);
	assert_int_equal(out.wr.ud.remote_qpn, 0x345678);
	assert_int_equal(out.wr.ud.av.flow_label, 0xabcde);
	assert_int_equal(out.wr.ud.av.traffic_class, 0x21);
	assert_int_equal(out.wr.ud.av.sl, 5);
	assert_int_equal(out.wr.ud.av.sgid_index, 2);
	assert_int_equal(out.wr.ud.av.dgid[15], 9);
	assert_true(out.wr.ud.av.global);
	s.h.wr.ud.av.gid_index = 16;
	assert_int_equal(pvrdma_sq_wqe_decode(&s, len, &ud, &out, &wr_id, &why),
			 -EINVAL);
	s.h.wr.ud.av.gid_index = 2;
	s.h.wr.ud.av.port_pd = (2u << 24) | 3;
	assert_int_equal(pvrdma_sq_wqe_decode(&s, len, &ud, &out, &wr_id, &why),
			 -EINVAL);
}

static void test_cqe_encode(void **state)
{
	struct be_wc wc;
	struct pvrdma_cqe cqe;

	(void)state;
	memset(&wc, 0, sizeof(wc));
	wc.status = IBV_WC_REM_ACCESS_ERR;
	wc.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
	wc.wc_flags = IBV_WC_WITH_IMM | IBV_WC_GRH;
	wc.imm_data = 0x44332211;
	wc.byte_len = 77;
	wc.src_qp = 0x42;
	assert_int_equal(pvrdma_cqe_encode(&wc, 0x1234, 5, &cqe), 0);
	assert_int_equal(cqe.wr_id, 0x1234);
	assert_int_equal(cqe.qp, 5);
	assert_int_equal(cqe.status, PVRDMA_WC_REM_ACCESS_ERR);
	assert_int_equal(cqe.opcode, PVRDMA_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(cqe.wc_flags, PVRDMA_WC_WITH_IMM | PVRDMA_WC_GRH);
	assert_int_equal(cqe.port_num, 1);
	/* the two WC opcodes whose numbers differ between the ABIs */
	wc.opcode = IBV_WC_LOCAL_INV;
	assert_int_equal(pvrdma_cqe_encode(&wc, 0, 5, &cqe), 0);
	assert_int_equal(cqe.opcode, PVRDMA_WC_LOCAL_INV);
	wc.opcode = IBV_WC_TSO;
	assert_int_equal(pvrdma_cqe_encode(&wc, 0, 5, &cqe), 0);
	assert_int_equal(cqe.opcode, PVRDMA_WC_LSO);
	wc.opcode = (enum ibv_wc_opcode)99;
	cqe.wr_id = 1;
	assert_int_equal(pvrdma_cqe_encode(&wc, 0, 5, &cqe), -EINVAL);
	assert_int_equal(cqe.wr_id, 1);
	wc.opcode = IBV_WC_SEND;
	wc.status = (enum ibv_wc_status)(IBV_WC_GENERAL_ERR + 1);
	assert_int_equal(pvrdma_cqe_encode(&wc, 0, 5, &cqe), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rc_write_and_atomic),
		cmocka_unit_test(test_num_sge_bounded),
		cmocka_unit_test(test_opcodes_per_qp_type),
		cmocka_unit_test(test_ud_address_vector),
		cmocka_unit_test(test_cqe_encode),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
