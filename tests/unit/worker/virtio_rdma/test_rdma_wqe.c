// SPDX-License-Identifier: MIT
/* Work-request decoders (SQ, RQ elements) and the CQE encoder. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "worker/virtio_rdma/wqe.h"
#include "tests/unit/guard.h"

#define HDR sizeof(struct virtio_rdma_sq_wqe)

/* An SQ element being built: header + up to 4 SGEs or inline bytes. */
struct sq_buf {
	uint8_t b[HDR + 1024];
	size_t len;
};

static struct virtio_rdma_sq_wqe *hdr(struct sq_buf *s)
{
	return (struct virtio_rdma_sq_wqe *)s->b;
}

static void sq_init(struct sq_buf *s, uint32_t opcode, uint32_t flags)
{
	memset(s, 0, sizeof(*s));
	hdr(s)->opcode = opcode;
	hdr(s)->send_flags = flags;
	hdr(s)->wr_id = 0x1122334455667788ull;
	s->len = HDR;
}

static void sq_add_sge(struct sq_buf *s, uint64_t addr, uint32_t len,
		       uint32_t lkey)
{
	struct virtio_rdma_sge g = { addr, len, lkey };

	memcpy(s->b + s->len, &g, sizeof(g));
	s->len += sizeof(g);
	hdr(s)->num_sge++;
}

static const struct rdma_sq_limits rc = { VIRTIO_RDMA_QPT_RC, 4, 64 };
static const struct rdma_sq_limits uc = { VIRTIO_RDMA_QPT_UC, 4, 64 };
static const struct rdma_sq_limits ud = { VIRTIO_RDMA_QPT_UD, 4, 64 };

/* Decodes from a guarded copy of exactly s->len bytes. */
static int sq_dec(const struct sq_buf *s, const struct rdma_sq_limits *lim,
		  struct rdma_send_wr *wr, struct reason *why)
{
	struct guarded g = { 0 };
	int r;

	assert_int_equal(guarded_copy(&g, s->b, s->len), 0);
	r = rdma_sq_wqe_decode(g.data, s->len, lim, wr, why);
	if (r == 0 && wr->inline_data) {
		/* Points into the caller's buffer, right after the header. */
		assert_ptr_equal(wr->inline_data, g.data + HDR);
		wr->inline_data = s->b + HDR;
	}
	guarded_free(&g);
	return r;
}

static void sq_fail(const struct sq_buf *s, const struct rdma_sq_limits *lim,
		    int err, const char *msg)
{
	struct rdma_send_wr wr;
	struct reason why = { "" };

	memset(&wr, 0x5a, sizeof(wr));
	assert_int_equal(sq_dec(s, lim, &wr, &why), err);
	if (!strstr(why.msg, msg))
		fail_msg("reason \"%s\" lacks \"%s\"", why.msg, msg);
	assert_int_equal(wr.num_sge, 0x5a5a5a5a); /* untouched */
}

static struct rdma_send_wr sq_ok(const struct sq_buf *s,
				 const struct rdma_sq_limits *lim)
{
	struct rdma_send_wr wr;
	struct reason why = { "" };
	int r = sq_dec(s, lim, &wr, &why);

	if (r)
		fail_msg("decode failed (%d): %s", r, why.msg);
	return wr;
}

static void test_rc_send_with_sges_decodes(void **state)
{
	struct sq_buf s;
	struct rdma_send_wr wr;

	sq_init(&s, VIRTIO_RDMA_WR_SEND_WITH_IMM, VIRTIO_RDMA_SEND_SIGNALED);
	hdr(&s)->imm_data = 0xdeadbeef;
	sq_add_sge(&s, 0x1000, 100, 7);
	sq_add_sge(&s, 0x9000, 28, 8);
	wr = sq_ok(&s, &rc);
	assert_int_equal(wr.opcode, VIRTIO_RDMA_WR_SEND_WITH_IMM);
	assert_int_equal(wr.wr_id, 0x1122334455667788ull);
	assert_int_equal(wr.imm_data, 0xdeadbeef);
	assert_int_equal(wr.num_sge, 2);
	assert_int_equal(wr.sge[1].addr, 0x9000);
	assert_int_equal(wr.sge[1].lkey, 8);
	assert_int_equal(wr.total_len, 128);
	assert_null(wr.inline_data);
}

static void test_imm_ignored_without_with_imm(void **state)
{
	struct sq_buf s;

	sq_init(&s, VIRTIO_RDMA_WR_SEND, 0);
	hdr(&s)->imm_data = 0x1234;
	assert_int_equal(sq_ok(&s, &rc).imm_data, 0);
}

static void test_sq_element_shorter_than_header_refused(void **state)
{
	struct sq_buf s;

	sq_init(&s, VIRTIO_RDMA_WR_SEND, 0);
	s.len = HDR - 1;
	sq_fail(&s, &rc, -EINVAL,
		"SQ element is 87 bytes, the header needs 88");
}

static void test_num_sge_past_descriptor_refused(void **state)
{
	struct sq_buf s;

	sq_init(&s, VIRTIO_RDMA_WR_SEND, 0);
	sq_add_sge(&s, 0x1000, 8, 1);
	sq_add_sge(&s, 0x2000, 8, 1);
	hdr(&s)->num_sge = 3; /* the descriptor holds 2: never read a 3rd */
	sq_fail(&s, &rc, -EINVAL, "3 SGEs need 136 bytes, descriptor has 120");
}

static void test_num_sge_above_qp_limit_refused(void **state)
{
	struct sq_buf s;
	int i;

	sq_init(&s, VIRTIO_RDMA_WR_SEND, 0);
	for (i = 0; i < 5; i++)
		sq_add_sge(&s, 0x1000, 8, 1);
	sq_fail(&s, &rc, -EINVAL, "num_sge 5 above the limit 4");
}

static void test_num_sge_capped_at_abi_max(void **state)
{
	struct rdma_sq_limits big = { VIRTIO_RDMA_QPT_RC, 1000, 0 };
	static struct sq_buf s;
	int i;

	sq_init(&s, VIRTIO_RDMA_WR_SEND, 0);
	for (i = 0; i < VIRTIO_RDMA_MAX_SGE + 1; i++)
		sq_add_sge(&s, 0x1000, 8, 1);
	sq_fail(&s, &big, -EINVAL, "num_sge 33 above the limit 32");
}

static void test_inline_decodes(void **state)
{
	struct sq_buf s;
	struct rdma_send_wr wr;

	sq_init(&s, VIRTIO_RDMA_WR_RDMA_WRITE, VIRTIO_RDMA_SEND_INLINE);
	hdr(&s)->num_sge = 9; /* ignored with INLINE */
	hdr(&s)->wr.rdma.remote_addr = 0x5000;
	hdr(&s)->wr.rdma.rkey = 0x77;
	memcpy(s.b + HDR, "hello", 5);
	s.len += 5;
	wr = sq_ok(&s, &rc);
	assert_int_equal(wr.inline_len, 5);
	assert_int_equal(wr.total_len, 5);
	assert_int_equal(wr.num_sge, 0);
	assert_memory_equal(wr.inline_data, "hello", 5);
	assert_int_equal(wr.wr.rdma.remote_addr, 0x5000);
	assert_int_equal(wr.wr.rdma.rkey, 0x77);
}

static void test_inline_longer_than_max_refused(void **state)
{
	struct sq_buf s;

	sq_init(&s, VIRTIO_RDMA_WR_SEND, VIRTIO_RDMA_SEND_INLINE);
	s.len += 65;
	sq_fail(&s, &rc, -EINVAL,
		"inline payload of 65 bytes, max_inline is 64");
	s.len -= 1;
	sq_ok(&s, &rc);
}

static void test_inline_read_refused(void **state)
{
	struct sq_buf s;

	sq_init(&s, VIRTIO_RDMA_WR_RDMA_READ, VIRTIO_RDMA_SEND_INLINE);
	s.len += 8;
	sq_fail(&s, &rc, -EINVAL, "RDMA_READ cannot be inline");
}

static void test_atomic_decodes(void **state)
{
	struct sq_buf s;
	struct rdma_send_wr wr;

	sq_init(&s, VIRTIO_RDMA_WR_ATOMIC_CMP_AND_SWP, 0);
	hdr(&s)->wr.atomic.remote_addr = 0x10008;
	hdr(&s)->wr.atomic.compare_add = 1;
	hdr(&s)->wr.atomic.swap = 2;
	hdr(&s)->wr.atomic.rkey = 3;
	sq_add_sge(&s, 0x2000, 8, 4);
	wr = sq_ok(&s, &rc);
	assert_int_equal(wr.wr.atomic.remote_addr, 0x10008);
	assert_int_equal(wr.wr.atomic.compare_add, 1);
	assert_int_equal(wr.wr.atomic.swap, 2);
	assert_int_equal(wr.wr.atomic.rkey, 3);
}

static void test_atomic_misaligned_refused(void **state)
{
	struct sq_buf s;

	sq_init(&s, VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD, 0);
	hdr(&s)->wr.atomic.remote_addr = 0x10004;
	sq_add_sge(&s, 0x2000, 8, 4);
	sq_fail(&s, &rc, -EINVAL, "not 8-byte aligned");
}

static void test_atomic_wrong_length_refused(void **state)
{
	struct sq_buf s;

	sq_init(&s, VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD, 0);
	sq_add_sge(&s, 0x2000, 4, 4);
	sq_fail(&s, &rc, -EINVAL, "needs one SGE of 8 bytes");
	sq_init(&s, VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD, 0);
	sq_fail(&s, &rc, -EINVAL, "needs one SGE of 8 bytes");
}

static void test_opcode_not_allowed_on_ud_refused(void **state)
{
	static const uint32_t ops[] = {
		VIRTIO_RDMA_WR_RDMA_WRITE,
		VIRTIO_RDMA_WR_RDMA_WRITE_WITH_IMM,
		VIRTIO_RDMA_WR_RDMA_READ,
		VIRTIO_RDMA_WR_ATOMIC_CMP_AND_SWP,
	};
	struct sq_buf s;
	size_t i;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		sq_init(&s, ops[i], 0);
		sq_fail(&s, &ud, -EOPNOTSUPP, "not allowed on a UD QP");
	}
}

static void test_read_and_atomics_not_allowed_on_uc(void **state)
{
	struct sq_buf s;

	sq_init(&s, VIRTIO_RDMA_WR_RDMA_READ, 0);
	sq_fail(&s, &uc, -EOPNOTSUPP, "RDMA_READ not allowed on a UC QP");
	sq_init(&s, VIRTIO_RDMA_WR_RDMA_WRITE, 0);
	sq_ok(&s, &uc);
}

static void test_refused_opcodes(void **state)
{
	static const uint32_t ops[] = {
		VIRTIO_RDMA_WR_LOCAL_INV,
		VIRTIO_RDMA_WR_BIND_MW,
		VIRTIO_RDMA_WR_SEND_WITH_INV,
		VIRTIO_RDMA_WR_TSO,
		VIRTIO_RDMA_WR_REG_MR,
		VIRTIO_RDMA_WR_MASKED_ATOMIC_CMP_AND_SWP,
	};
	struct sq_buf s;
	size_t i;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		sq_init(&s, ops[i], 0);
		sq_fail(&s, &rc, -EOPNOTSUPP, "refused");
	}
	sq_init(&s, 14, 0);
	sq_fail(&s, &rc, -EINVAL, "unknown opcode 14");
	sq_init(&s, 0xffffffff, 0);
	sq_fail(&s, &rc, -EINVAL, "unknown opcode");
}

static void test_unsupported_send_flag_refused(void **state)
{
	struct sq_buf s;

	sq_init(&s, VIRTIO_RDMA_WR_SEND, VIRTIO_RDMA_SEND_IP_CSUM);
	sq_fail(&s, &rc, -EOPNOTSUPP, "send_flags 0x10");
	sq_init(&s, VIRTIO_RDMA_WR_SEND, 0x80000000u);
	sq_fail(&s, &rc, -EOPNOTSUPP, "unsupported bits");
}

static void test_ud_send_carries_av(void **state)
{
	struct sq_buf s;
	struct rdma_send_wr wr;
	struct virtio_rdma_av *av;

	sq_init(&s, VIRTIO_RDMA_WR_SEND, 0);
	hdr(&s)->wr.ud.remote_qpn = 0x42;
	hdr(&s)->wr.ud.remote_qkey = 0x11111111;
	av = &hdr(&s)->wr.ud.av;
	av->port = 1;
	av->sl_tclass_flowlabel = (3u << 28) | (0x20u << 20) | 0x12345;
	av->dgid[15] = 9;
	av->gid_index = 2;
	av->hop_limit = 64;
	av->dmac[5] = 0xaa;
	sq_add_sge(&s, 0x1000, 256, 1);
	wr = sq_ok(&s, &ud);
	assert_int_equal(wr.wr.ud.remote_qpn, 0x42);
	assert_int_equal(wr.wr.ud.remote_qkey, 0x11111111);
	assert_int_equal(wr.wr.ud.av.dgid[15], 9);
	assert_int_equal(wr.wr.ud.av.dmac[5], 0xaa);
	assert_int_equal(VIRTIO_RDMA_AV_SL(wr.wr.ud.av.sl_tclass_flowlabel), 3);
	assert_int_equal(VIRTIO_RDMA_AV_TCLASS(wr.wr.ud.av.sl_tclass_flowlabel),
			 0x20);
	assert_int_equal(
		VIRTIO_RDMA_AV_FLOW_LABEL(wr.wr.ud.av.sl_tclass_flowlabel),
		0x12345);
}

static void test_ud_bad_av_refused(void **state)
{
	struct sq_buf s;

	sq_init(&s, VIRTIO_RDMA_WR_SEND, 0);
	hdr(&s)->wr.ud.av.port = 2;
	sq_fail(&s, &ud, -EINVAL, "AV port 2");
	sq_init(&s, VIRTIO_RDMA_WR_SEND, 0);
	hdr(&s)->wr.ud.av.port = 1;
	hdr(&s)->wr.ud.remote_qpn = 0x1000000;
	sq_fail(&s, &ud, -EINVAL, "remote_qpn 0x1000000 above 24 bits");
}

static void test_sge_wrap_and_huge_message_refused(void **state)
{
	struct sq_buf s;

	sq_init(&s, VIRTIO_RDMA_WR_SEND, 0);
	sq_add_sge(&s, UINT64_MAX - 10, 100, 1);
	sq_fail(&s, &rc, -EINVAL, "SGE 0 address");
	sq_init(&s, VIRTIO_RDMA_WR_SEND, 0);
	sq_add_sge(&s, 0x1000, UINT32_MAX, 1);
	sq_add_sge(&s, 0x1000, UINT32_MAX, 1);
	sq_fail(&s, &rc, -EINVAL, "exceeds 4 GiB");
}

static void test_rdma_remote_range_wrap_refused(void **state)
{
	struct sq_buf s;

	sq_init(&s, VIRTIO_RDMA_WR_RDMA_WRITE, 0);
	hdr(&s)->wr.rdma.remote_addr = UINT64_MAX - 4;
	sq_add_sge(&s, 0x1000, 16, 1);
	sq_fail(&s, &rc, -EINVAL, "remote_addr");
}

static void test_gsi_allows_only_sends(void **state)
{
	struct rdma_sq_limits gsi = { VIRTIO_RDMA_QPT_GSI, 2, 0 };
	struct sq_buf s;

	sq_init(&s, VIRTIO_RDMA_WR_SEND, 0);
	hdr(&s)->wr.ud.remote_qpn = 1;
	hdr(&s)->wr.ud.av.port = 1;
	sq_add_sge(&s, 0x1000, 256, 1);
	sq_ok(&s, &gsi);
	sq_init(&s, VIRTIO_RDMA_WR_RDMA_WRITE, 0);
	sq_fail(&s, &gsi, -EOPNOTSUPP, "not allowed on a GSI QP");
}

/* ---- receive elements ---- */

static int rq_dec(const void *b, size_t len, uint32_t max,
		  struct rdma_recv_wr *wr, struct reason *why)
{
	struct guarded g = { 0 };
	int r;

	assert_int_equal(guarded_copy(&g, b, len), 0);
	r = rdma_rq_wqe_decode(g.data, len, max, wr, why);
	guarded_free(&g);
	return r;
}

static void test_rq_element_decodes(void **state)
{
	uint8_t b[16 + 32] = { 0 };
	struct virtio_rdma_rq_wqe h = { .num_sge = 2, .wr_id = 99 };
	struct virtio_rdma_sge g[2] = { { 0x1000, 10, 1 }, { 0x3000, 20, 2 } };
	struct rdma_recv_wr wr;

	memcpy(b, &h, sizeof(h));
	memcpy(b + 16, g, sizeof(g));
	assert_int_equal(rq_dec(b, sizeof(b), 2, &wr, NULL), 0);
	assert_int_equal(wr.wr_id, 99);
	assert_int_equal(wr.num_sge, 2);
	assert_int_equal(wr.sge[1].addr, 0x3000);
	assert_int_equal(wr.total_len, 30);
}

static void test_rq_malformed_refused(void **state)
{
	uint8_t b[16 + 32] = { 0 };
	struct virtio_rdma_rq_wqe h = { .num_sge = 3, .wr_id = 1 };
	struct rdma_recv_wr wr;
	struct reason why = { "" };

	memcpy(b, &h, sizeof(h));
	assert_int_equal(rq_dec(b, sizeof(b), 4, &wr, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "RQ element: 3 SGEs need 64 bytes"));
	assert_int_equal(rq_dec(b, sizeof(b), 2, &wr, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "num_sge 3 above the limit 2"));
	assert_int_equal(rq_dec(b, 15, 2, &wr, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "RQ element is 15 bytes"));
}

/* ---- completions ---- */

static void test_cqe_encoded_at_profile_a_offsets(void **state)
{
	struct rdma_completion c = {
		.wr_id = 0x0102030405060708ull,
		.status = VIRTIO_RDMA_WC_REM_ACCESS_ERR,
		.opcode = VIRTIO_RDMA_WC_RECV_RDMA_WITH_IMM,
		.vendor_err = 0x11,
		.byte_len = 4096,
		.imm_data = 0xa1b2c3d4,
		.qp_num = 0x1234,
		.src_qp = 0x5678,
		.wc_flags = VIRTIO_RDMA_WC_GRH | VIRTIO_RDMA_WC_WITH_IMM,
		.pkey_index = 0,
		.slid = 0x99,
		.sl = 3,
		.dlid_path_bits = 4,
		.port_num = 1,
	};
	uint8_t b[64];
	uint32_t v;
	uint64_t w;

	memset(b, 0xcc, sizeof(b));
	assert_int_equal(rdma_cqe_encode(&c, b, sizeof(b)), 48);
	memcpy(&w, b, 8);
	assert_int_equal(w, 0x0102030405060708ull);
	memcpy(&v, b + 8, 4);
	assert_int_equal(v, 10);
	memcpy(&v, b + 12, 4);
	assert_int_equal(v, 129);
	memcpy(&v, b + 20, 4);
	assert_int_equal(v, 4096);
	memcpy(&v, b + 24, 4);
	assert_int_equal(v, 0xa1b2c3d4);
	memcpy(&v, b + 28, 4);
	assert_int_equal(v, 0x1234);
	memcpy(&v, b + 32, 4);
	assert_int_equal(v, 0x5678);
	memcpy(&v, b + 36, 4);
	assert_int_equal(v, 3);
	assert_int_equal(b[42], 0x99);
	assert_int_equal(b[44], 3);
	assert_int_equal(b[45], 4);
	assert_int_equal(b[46], 1);
	assert_int_equal(b[47], 0);    /* padding zeroed */
	assert_int_equal(b[48], 0xcc); /* nothing past 48 */
}

static void test_cqe_bad_values_and_space_refused(void **state)
{
	struct rdma_completion c = { .status = VIRTIO_RDMA_WC_SUCCESS };
	uint8_t b[48];

	assert_int_equal(rdma_cqe_encode(&c, b, 47), -ENOSPC);
	c.status = 22;
	assert_int_equal(rdma_cqe_encode(&c, b, sizeof(b)), -EINVAL);
	c.status = VIRTIO_RDMA_WC_SUCCESS;
	c.opcode = 11;
	assert_int_equal(rdma_cqe_encode(&c, b, sizeof(b)), -EINVAL);
	c.opcode = VIRTIO_RDMA_WC_RECV;
	c.wc_flags = 1u << 7;
	assert_int_equal(rdma_cqe_encode(&c, b, sizeof(b)), -EINVAL);
	c.wc_flags = 0;
	assert_int_equal(rdma_cqe_encode(&c, b, sizeof(b)), 48);
}

static void test_opcode_names(void **state)
{
	assert_string_equal(rdma_wr_opcode_name(VIRTIO_RDMA_WR_RDMA_READ),
			    "RDMA_READ");
	assert_string_equal(rdma_wr_opcode_name(VIRTIO_RDMA_WR_REG_MR),
			    "REG_MR");
	assert_string_equal(rdma_wr_opcode_name(0x1f), "UNKNOWN");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rc_send_with_sges_decodes),
		cmocka_unit_test(test_imm_ignored_without_with_imm),
		cmocka_unit_test(test_sq_element_shorter_than_header_refused),
		cmocka_unit_test(test_num_sge_past_descriptor_refused),
		cmocka_unit_test(test_num_sge_above_qp_limit_refused),
		cmocka_unit_test(test_num_sge_capped_at_abi_max),
		cmocka_unit_test(test_inline_decodes),
		cmocka_unit_test(test_inline_longer_than_max_refused),
		cmocka_unit_test(test_inline_read_refused),
		cmocka_unit_test(test_atomic_decodes),
		cmocka_unit_test(test_atomic_misaligned_refused),
		cmocka_unit_test(test_atomic_wrong_length_refused),
		cmocka_unit_test(test_opcode_not_allowed_on_ud_refused),
		cmocka_unit_test(test_read_and_atomics_not_allowed_on_uc),
		cmocka_unit_test(test_refused_opcodes),
		cmocka_unit_test(test_unsupported_send_flag_refused),
		cmocka_unit_test(test_ud_send_carries_av),
		cmocka_unit_test(test_ud_bad_av_refused),
		cmocka_unit_test(test_sge_wrap_and_huge_message_refused),
		cmocka_unit_test(test_rdma_remote_range_wrap_refused),
		cmocka_unit_test(test_gsi_allows_only_sends),
		cmocka_unit_test(test_rq_element_decodes),
		cmocka_unit_test(test_rq_malformed_refused),
		cmocka_unit_test(test_cqe_encoded_at_profile_a_offsets),
		cmocka_unit_test(test_cqe_bad_values_and_space_refused),
		cmocka_unit_test(test_opcode_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
