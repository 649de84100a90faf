// SPDX-License-Identifier: MIT
/* Control-command decoder: framing, sizes, field checks, response bytes. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "common/cleanup.h"
#include "worker/virtio_rdma/cmd.h"
#include "tests/unit/guard.h"

/* A control chain: header + request, flattened, and its writable size. */
struct chain {
	uint8_t out[512];
	size_t out_len;
	size_t first_len;
	size_t in_len;
};

static struct chain mk(uint8_t code, const void *req, size_t req_len,
		       size_t in_len)
{
	struct chain c;

	memset(&c, 0, sizeof(c));
	c.out[0] = code;
	if (req_len)
		memcpy(c.out + 1, req, req_len);
	c.out_len = 1 + req_len;
	c.first_len = 1;
	c.in_len = in_len;
	return c;
}

/* Decodes from a guarded copy: reading past out_len would crash. */
static int dec(const struct chain *c, struct rdma_cmd *cmd, struct reason *why)
{
	struct guarded g = { 0 };
	int r;

	assert_int_equal(guarded_copy(&g, c->out, c->out_len), 0);
	r = rdma_cmd_decode(g.data, c->out_len, c->first_len, c->in_len, cmd,
			    why);
	guarded_free(&g);
	return r;
}

static void expect_fail(const struct chain *c, int err, const char *msg)
{
	struct rdma_cmd cmd;
	struct reason why = { "" };

	memset(&cmd, 0xa5, sizeof(cmd));
	assert_int_equal(dec(c, &cmd, &why), err);
	if (msg && !strstr(why.msg, msg))
		fail_msg("reason \"%s\" lacks \"%s\"", why.msg, msg);
	/* ret_ output untouched on failure. */
	assert_int_equal(cmd.code, 0xa5);
}

static struct rdma_cmd expect_ok(const struct chain *c)
{
	struct rdma_cmd cmd;
	struct reason why = { "" };
	int r = dec(c, &cmd, &why);

	if (r)
		fail_msg("decode failed (%d): %s", r, why.msg);
	return cmd;
}

static void test_create_cq_decodes(void **state)
{
	struct virtio_rdma_cmd_create_cq req = { .cqe = 64 };
	struct chain c = mk(VIRTIO_RDMA_CMD_CREATE_CQ, &req, sizeof(req), 5);
	struct rdma_cmd cmd = expect_ok(&c);

	assert_int_equal(cmd.code, VIRTIO_RDMA_CMD_CREATE_CQ);
	assert_int_equal(cmd.u.create_cq.cqe, 64);
	assert_int_equal(cmd.req_len, 4);
	assert_int_equal(cmd.rsp_space, 4);
}

static void test_short_request_refused(void **state)
{
	uint8_t req[2] = { 1, 0 };
	struct chain c = mk(VIRTIO_RDMA_CMD_CREATE_CQ, req, sizeof(req), 5);

	expect_fail(&c, -EINVAL, "CREATE_CQ: request is 2 bytes, needs 4");
}

static void test_short_modify_qp_refused(void **state)
{
	struct virtio_rdma_cmd_modify_qp req = { 0 };
	struct chain c = mk(VIRTIO_RDMA_CMD_MODIFY_QP, &req, 167, 1);

	expect_fail(&c, -EINVAL, "MODIFY_QP: request is 167 bytes, needs 168");
}

static void test_long_request_tail_ignored(void **state)
{
	uint8_t req[12] = { 7, 0, 0, 0, 0xff, 0xff, 0xff, 0xff };
	struct chain c = mk(VIRTIO_RDMA_CMD_CREATE_CQ, req, sizeof(req), 5);
	struct rdma_cmd cmd = expect_ok(&c);

	assert_int_equal(cmd.u.create_cq.cqe, 7);
	assert_int_equal(cmd.req_len, 12);
}

static void test_unknown_code_refused(void **state)
{
	static const uint8_t codes[] = { 0, 23, 99, 255 };
	struct chain c;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(codes); i++) {
		c = mk(codes[i], NULL, 0, 16);
		expect_fail(&c, -EOPNOTSUPP, "unknown command code");
	}
}

static void test_header_not_one_byte_refused(void **state)
{
	struct virtio_rdma_cmd_create_cq req = { .cqe = 1 };
	struct chain c = mk(VIRTIO_RDMA_CMD_CREATE_CQ, &req, sizeof(req), 5);

	c.first_len = 2;
	expect_fail(&c, -EBADMSG, "header element is 2 bytes");
	c.first_len = 0;
	expect_fail(&c, -EBADMSG, "no header");
	c.out_len = 0;
	c.first_len = 1;
	expect_fail(&c, -EBADMSG, NULL);
}

static void test_no_status_byte_refused(void **state)
{
	struct chain c = mk(VIRTIO_RDMA_CMD_CREATE_PD, NULL, 0, 0);

	expect_fail(&c, -ENOBUFS, "status");
}

static void test_response_space_too_small_refused(void **state)
{
	struct virtio_rdma_cmd_query_port req = { .port = 1 };
	struct chain c = mk(VIRTIO_RDMA_CMD_QUERY_PORT, &req, sizeof(req), 172);

	expect_fail(&c, -ENOSPC,
		    "QUERY_PORT: response space is 171 bytes, "
		    "needs 172");
	c.in_len = 173;
	expect_ok(&c);
}

static void test_unsupported_fast_reg_refused(void **state)
{
	struct virtio_rdma_cmd_create_mr mr = { 1, 1, 16 };
	struct virtio_rdma_cmd_map_mr_sg sg = { 1, 1, 0, 4096, 4096 };
	struct chain c = mk(VIRTIO_RDMA_CMD_CREATE_MR, &mr, sizeof(mr), 13);

	expect_fail(&c, -EOPNOTSUPP, "CREATE_MR: fast registration");
	c = mk(VIRTIO_RDMA_CMD_MAP_MR_SG, &sg, sizeof(sg), 5);
	expect_fail(&c, -EOPNOTSUPP, "MAP_MR_SG");
}

static void test_query_port_other_port_refused(void **state)
{
	struct virtio_rdma_cmd_query_port req = { .port = 2 };
	struct chain c = mk(VIRTIO_RDMA_CMD_QUERY_PORT, &req, sizeof(req), 173);

	expect_fail(&c, -EINVAL, "port 2");
}

static void test_create_cq_zero_cqe_refused(void **state)
{
	struct virtio_rdma_cmd_create_cq req = { .cqe = 0 };
	struct chain c = mk(VIRTIO_RDMA_CMD_CREATE_CQ, &req, sizeof(req), 5);

	expect_fail(&c, -EINVAL, "cqe 0");
}

static struct virtio_rdma_cmd_create_qp good_qp(void)
{
	struct virtio_rdma_cmd_create_qp q = {
		.pdn = 1,
		.qp_type = VIRTIO_RDMA_QPT_RC,
		.sq_sig_type = VIRTIO_RDMA_SIG_REQ_WR,
		.max_send_wr = 64,
		.max_send_sge = 2,
		.send_cqn = 0,
		.max_recv_wr = 64,
		.max_recv_sge = 2,
		.recv_cqn = 1,
		.max_inline_data = 64,
	};
	return q;
}

static void test_create_qp_profile_a_decodes(void **state)
{
	struct virtio_rdma_cmd_create_qp q = good_qp();
	struct chain c = mk(VIRTIO_RDMA_CMD_CREATE_QP, &q, sizeof(q), 5);
	struct rdma_cmd cmd = expect_ok(&c);

	assert_int_equal(cmd.u.create_qp.base.qp_type, VIRTIO_RDMA_QPT_RC);
	assert_int_equal(cmd.u.create_qp.base.recv_cqn, 1);
	assert_int_equal(cmd.u.create_qp.flags, 0);
	assert_int_equal(cmd.u.create_qp.srq_handle, 0);
}

static void test_create_qp_spec_v1_68_bytes_decodes(void **state)
{
	uint8_t req[68] = { 0 };
	struct virtio_rdma_cmd_create_qp q = good_qp();
	struct chain c;
	struct rdma_cmd cmd;

	memcpy(req, &q, sizeof(q));
	c = mk(VIRTIO_RDMA_CMD_CREATE_QP, req, sizeof(req), 5);
	cmd = expect_ok(&c);
	assert_int_equal(cmd.u.create_qp.flags, 0);
}

static void test_create_qp_with_srq_decodes(void **state)
{
	struct virtio_rdma_cmd_create_qp_ext q = {
		.base = good_qp(),
		.flags = VIRTIO_RDMA_CREATE_QP_F_SRQ,
		.srq_handle = 3,
	};
	struct chain c = mk(VIRTIO_RDMA_CMD_CREATE_QP, &q, sizeof(q), 9);
	struct rdma_cmd cmd = expect_ok(&c);

	assert_int_equal(cmd.u.create_qp.flags, VIRTIO_RDMA_CREATE_QP_F_SRQ);
	assert_int_equal(cmd.u.create_qp.srq_handle, 3);
}

static void test_create_qp_srq_errors_refused(void **state)
{
	struct virtio_rdma_cmd_create_qp_ext q = { .base = good_qp() };
	struct chain c;

	q.flags = 2;
	c = mk(VIRTIO_RDMA_CMD_CREATE_QP, &q, sizeof(q), 9);
	expect_fail(&c, -EINVAL, "unknown flags 0x2");
	q.flags = 0;
	q.srq_handle = 4;
	c = mk(VIRTIO_RDMA_CMD_CREATE_QP, &q, sizeof(q), 9);
	expect_fail(&c, -EINVAL, "without the SRQ flag");
	q.flags = VIRTIO_RDMA_CREATE_QP_F_SRQ;
	q.srq_handle = 0;
	c = mk(VIRTIO_RDMA_CMD_CREATE_QP, &q, sizeof(q), 9);
	expect_fail(&c, -EINVAL, "srq_handle 0");
	q.srq_handle = 1;
	q.base.qp_type = VIRTIO_RDMA_QPT_GSI;
	c = mk(VIRTIO_RDMA_CMD_CREATE_QP, &q, sizeof(q), 9);
	expect_fail(&c, -EINVAL, "GSI QP cannot use an SRQ");
}

static void test_create_qp_smi_type_refused(void **state)
{
	struct virtio_rdma_cmd_create_qp q = good_qp();
	struct chain c;

	q.qp_type = VIRTIO_RDMA_QPT_SMI;
	c = mk(VIRTIO_RDMA_CMD_CREATE_QP, &q, sizeof(q), 5);
	expect_fail(&c, -EINVAL, "qp_type SMI");
	q.qp_type = 5; /* not a Profile A type */
	c = mk(VIRTIO_RDMA_CMD_CREATE_QP, &q, sizeof(q), 5);
	expect_fail(&c, -EINVAL, "unknown qp_type 5");
}

static void test_create_qp_bad_fields_refused(void **state)
{
	struct virtio_rdma_cmd_create_qp q = good_qp();
	struct chain c;

	q.sq_sig_type = 2;
	c = mk(VIRTIO_RDMA_CMD_CREATE_QP, &q, sizeof(q), 5);
	expect_fail(&c, -EINVAL, "sq_sig_type 2");
	q = good_qp();
	q.max_send_sge = VIRTIO_RDMA_MAX_SGE + 1;
	c = mk(VIRTIO_RDMA_CMD_CREATE_QP, &q, sizeof(q), 5);
	expect_fail(&c, -EINVAL, "max_send_sge 33");
	q = good_qp();
	q.pdn = 0;
	c = mk(VIRTIO_RDMA_CMD_CREATE_QP, &q, sizeof(q), 5);
	expect_fail(&c, -EINVAL, "pdn 0");
}

static void test_create_qp_response_profile_a_gets_4_bytes(void **state)
{
	struct virtio_rdma_cmd_create_qp q = good_qp();
	struct chain c = mk(VIRTIO_RDMA_CMD_CREATE_QP, &q, sizeof(q), 5);
	struct rdma_cmd cmd = expect_ok(&c);
	union rdma_cmd_rsp rsp = { .create_qp = { .qpn = 0x1234, .slot = 3 } };
	uint8_t in[16];
	uint32_t v;

	memset(in, 0xee, sizeof(in));
	assert_int_equal(rdma_cmd_encode_ok(&cmd, &rsp, in, 5), 5);
	assert_int_equal(in[0], 0);
	memcpy(&v, in + 1, 4);
	assert_int_equal(v, 0x1234);
	assert_int_equal(in[5], 0xee);

	c.in_len = 9;
	cmd = expect_ok(&c);
	assert_int_equal(rdma_cmd_encode_ok(&cmd, &rsp, in, 9), 9);
	memcpy(&v, in + 5, 4);
	assert_int_equal(v, 3);
	c.in_len = 4;
	expect_fail(&c, -ENOSPC, "CREATE_QP: response space is 3 bytes");
}

static struct virtio_rdma_cmd_modify_qp good_modify(void)
{
	struct virtio_rdma_cmd_modify_qp m;

	memset(&m, 0, sizeof(m));
	m.qpn = 0x11;
	m.attr_mask = VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_PATH_MTU |
		      VIRTIO_RDMA_QP_AV | VIRTIO_RDMA_QP_DEST_QPN |
		      VIRTIO_RDMA_QP_RQ_PSN;
	m.attr.qp_state = VIRTIO_RDMA_QPS_RTR;
	m.attr.path_mtu = VIRTIO_RDMA_MTU_1024;
	m.attr.dest_qp_num = 0x123456;
	m.attr.rq_psn = 0xabcdef;
	m.attr.ah_attr.port_num = 1;
	m.attr.ah_attr.ah_flags = VIRTIO_RDMA_AH_GRH;
	m.attr.ah_attr.grh.sgid_index = 3;
	return m;
}

static int modify(const struct virtio_rdma_cmd_modify_qp *m, struct reason *why)
{
	struct chain c = mk(VIRTIO_RDMA_CMD_MODIFY_QP, m, sizeof(*m), 1);
	struct rdma_cmd cmd;

	return dec(&c, &cmd, why);
}

static void expect_modify_fail(const struct virtio_rdma_cmd_modify_qp *m,
			       const char *msg)
{
	struct reason why = { "" };

	assert_int_equal(modify(m, &why), -EINVAL);
	if (!strstr(why.msg, msg))
		fail_msg("reason \"%s\" lacks \"%s\"", why.msg, msg);
}

static void test_modify_qp_decodes(void **state)
{
	struct virtio_rdma_cmd_modify_qp m = good_modify();
	struct chain c = mk(VIRTIO_RDMA_CMD_MODIFY_QP, &m, sizeof(m), 1);
	struct rdma_cmd cmd = expect_ok(&c);

	assert_int_equal(cmd.u.modify_qp.qpn, 0x11);
	assert_int_equal(cmd.u.modify_qp.attr.rq_psn, 0xabcdef);
	assert_int_equal(cmd.u.modify_qp.attr.ah_attr.grh.sgid_index, 3);
}

static void test_modify_qp_bad_mtu_refused(void **state)
{
	struct virtio_rdma_cmd_modify_qp m = good_modify();

	m.attr.path_mtu = 6;
	expect_modify_fail(&m, "path_mtu 6");
	m.attr.path_mtu = 0;
	expect_modify_fail(&m, "path_mtu 0");
	/* Not checked when the mask does not name it. */
	m.attr_mask &= ~VIRTIO_RDMA_QP_PATH_MTU;
	assert_int_equal(modify(&m, NULL), 0);
}

static void test_modify_qp_bad_state_refused(void **state)
{
	struct virtio_rdma_cmd_modify_qp m = good_modify();

	m.attr.qp_state = 7;
	expect_modify_fail(&m, "qp_state 7");
	m = good_modify();
	m.attr_mask |= VIRTIO_RDMA_QP_CUR_STATE;
	m.attr.cur_qp_state = 0x100;
	expect_modify_fail(&m, "cur_qp_state 256");
}

static void test_modify_qp_mask_bits_refused(void **state)
{
	struct virtio_rdma_cmd_modify_qp m = good_modify();

	m.attr_mask |= 1u << 21;
	expect_modify_fail(&m, "unsupported bits 0x200000");
	m = good_modify();
	m.attr_mask |= VIRTIO_RDMA_QP_ALT_PATH;
	expect_modify_fail(&m, "unsupported bits 0x4000");
	m.attr_mask = 0;
	expect_modify_fail(&m, "attr_mask 0");
}

static void test_modify_qp_field_widths_refused(void **state)
{
	struct virtio_rdma_cmd_modify_qp m = good_modify();

	m.attr.dest_qp_num = 0x1000000;
	expect_modify_fail(&m, "dest_qp_num");
	m = good_modify();
	m.attr.rq_psn = 0x1000000;
	expect_modify_fail(&m, "rq_psn");
	m = good_modify();
	m.attr_mask |= VIRTIO_RDMA_QP_PORT;
	m.attr.port_num = 2;
	expect_modify_fail(&m, "port_num 2");
	m = good_modify();
	m.attr_mask |= VIRTIO_RDMA_QP_ACCESS_FLAGS;
	m.attr.qp_access_flags = VIRTIO_RDMA_ACCESS_MW_BIND;
	expect_modify_fail(&m, "qp_access_flags");
	m = good_modify();
	m.attr_mask |= VIRTIO_RDMA_QP_RETRY_CNT;
	m.attr.retry_cnt = 8;
	expect_modify_fail(&m, "retry_cnt 8");
	m = good_modify();
	m.attr_mask |= VIRTIO_RDMA_QP_PKEY_INDEX;
	m.attr.pkey_index = 1;
	expect_modify_fail(&m, "pkey_index 1");
}

static void test_modify_qp_bad_av_refused(void **state)
{
	struct virtio_rdma_cmd_modify_qp m = good_modify();

	m.attr.ah_attr.port_num = 2;
	expect_modify_fail(&m, "ah_attr.port_num 2");
	m = good_modify();
	m.attr.ah_attr.ah_flags = 2;
	expect_modify_fail(&m, "ah_flags");
	m = good_modify();
	m.attr.ah_attr.grh.flow_label = 0x100000;
	expect_modify_fail(&m, "flow_label");
}

static void test_query_qp_unknown_mask_refused(void **state)
{
	struct virtio_rdma_cmd_query_qp q = { 5, 1u << 30 };
	struct chain c = mk(VIRTIO_RDMA_CMD_QUERY_QP, &q, sizeof(q), 161);

	expect_fail(&c, -EINVAL, "unknown bits");
	q.attr_mask = VIRTIO_RDMA_QP_ATTR_MASK_KNOWN;
	c = mk(VIRTIO_RDMA_CMD_QUERY_QP, &q, sizeof(q), 161);
	expect_ok(&c);
}

static void test_req_notify_flags_must_be_1_or_2(void **state)
{
	struct virtio_rdma_cmd_req_notify_cq n = { 0, 3 };
	struct chain c = mk(VIRTIO_RDMA_CMD_REQ_NOTIFY_CQ, &n, sizeof(n), 1);

	expect_fail(&c, -EINVAL, "flags 3");
	n.flags = 0;
	c = mk(VIRTIO_RDMA_CMD_REQ_NOTIFY_CQ, &n, sizeof(n), 1);
	expect_fail(&c, -EINVAL, "flags 0");
	n.flags = VIRTIO_RDMA_NOTIFY_SOLICITED;
	c = mk(VIRTIO_RDMA_CMD_REQ_NOTIFY_CQ, &n, sizeof(n), 1);
	expect_ok(&c);
	n.flags = VIRTIO_RDMA_NOTIFY_NEXT_COMP;
	c = mk(VIRTIO_RDMA_CMD_REQ_NOTIFY_CQ, &n, sizeof(n), 1);
	expect_ok(&c);
}

static void test_gid_commands_checked(void **state)
{
	struct virtio_rdma_cmd_add_gid g = {
		.gid = { 0xfe, 0x80 },
		.gid_type = VIRTIO_RDMA_GID_TYPE_ROCE_V2,
		.index = 511,
		.port_num = 1,
	};
	struct virtio_rdma_cmd_del_gid d = { .index = 512, .port_num = 1 };
	struct chain c = mk(VIRTIO_RDMA_CMD_ADD_GID, &g, sizeof(g), 1);

	expect_ok(&c);
	g.index = 512;
	c = mk(VIRTIO_RDMA_CMD_ADD_GID, &g, sizeof(g), 1);
	expect_fail(&c, -EINVAL, "GID index 512");
	g.index = 0;
	g.gid_type = VIRTIO_RDMA_GID_TYPE_IB;
	c = mk(VIRTIO_RDMA_CMD_ADD_GID, &g, sizeof(g), 1);
	expect_fail(&c, -EINVAL, "gid_type 0");
	g.gid_type = VIRTIO_RDMA_GID_TYPE_ROCE_V1;
	g.port_num = 0;
	c = mk(VIRTIO_RDMA_CMD_ADD_GID, &g, sizeof(g), 1);
	expect_fail(&c, -EINVAL, "port_num 0");
	c = mk(VIRTIO_RDMA_CMD_DEL_GID, &d, sizeof(d), 1);
	expect_fail(&c, -EINVAL, "GID index 512");
}

static void test_query_pkey_only_index_0(void **state)
{
	struct virtio_rdma_cmd_query_pkey p = { .port = 1, .index = 1 };
	struct chain c = mk(VIRTIO_RDMA_CMD_QUERY_PKEY, &p, sizeof(p), 3);

	expect_fail(&c, -EINVAL, "index 1");
	p.index = 0;
	c = mk(VIRTIO_RDMA_CMD_QUERY_PKEY, &p, sizeof(p), 3);
	expect_ok(&c);
}

static struct virtio_rdma_cmd_reg_user_mr good_mr(void)
{
	struct virtio_rdma_cmd_reg_user_mr m = {
		.pdn = 1,
		.access_flags = VIRTIO_RDMA_ACCESS_LOCAL_WRITE |
				VIRTIO_RDMA_ACCESS_REMOTE_WRITE,
		.start = 0x7f0000001100,
		.length = 3 * 4096,
		.virt_addr = 0x7f0000001100,
		.pages = 0x200000,
		.npages = 4, /* 0x100 + 3 pages spans 4 */
	};
	return m;
}

static void expect_mr_fail(const struct virtio_rdma_cmd_reg_user_mr *m,
			   const char *msg)
{
	struct chain c = mk(VIRTIO_RDMA_CMD_REG_USER_MR, m, sizeof(*m), 13);

	expect_fail(&c, -EINVAL, msg);
}

static void test_reg_user_mr_decodes(void **state)
{
	struct virtio_rdma_cmd_reg_user_mr m = good_mr();
	struct chain c = mk(VIRTIO_RDMA_CMD_REG_USER_MR, &m, sizeof(m), 13);
	struct rdma_cmd cmd = expect_ok(&c);

	assert_int_equal(cmd.u.reg_user_mr.npages, 4);
	assert_int_equal(cmd.u.reg_user_mr.pages, 0x200000);
}

static void test_reg_user_mr_bad_sizes_refused(void **state)
{
	struct virtio_rdma_cmd_reg_user_mr m = good_mr();

	m.npages = 0;
	expect_mr_fail(&m, "npages 0 not in");
	m = good_mr();
	m.npages = VIRTIO_RDMA_MR_MAX_PAGES + 1;
	expect_mr_fail(&m, "npages 262145 not in");
	m = good_mr();
	m.npages = 3;
	expect_mr_fail(&m, "npages 3, but start and length span 4");
	m = good_mr();
	m.length = 0;
	expect_mr_fail(&m, "length 0");
	m = good_mr();
	m.start = UINT64_MAX - 4095;
	expect_mr_fail(&m, "wraps");
	m = good_mr();
	m.virt_addr = UINT64_MAX - 10;
	expect_mr_fail(&m, "virt_addr");
	m = good_mr();
	m.pages = 0x200008;
	expect_mr_fail(&m, "page table root 0x200008");
	m = good_mr();
	m.access_flags = VIRTIO_RDMA_ACCESS_REMOTE_WRITE;
	expect_mr_fail(&m, "without local write");
	m = good_mr();
	m.access_flags |= VIRTIO_RDMA_ACCESS_ON_DEMAND;
	expect_mr_fail(&m, "unsupported bits 0x40");
}

static void test_srq_commands_checked(void **state)
{
	struct virtio_rdma_cmd_create_srq s = { 1, 128, 2, 16 };
	struct virtio_rdma_cmd_modify_srq m = { 1, VIRTIO_RDMA_SRQ_LIMIT, 0,
						8 };
	struct virtio_rdma_cmd_srq_handle h = { 0 };
	struct chain c = mk(VIRTIO_RDMA_CMD_CREATE_SRQ, &s, sizeof(s), 9);

	expect_ok(&c);
	s.srq_limit = 129;
	c = mk(VIRTIO_RDMA_CMD_CREATE_SRQ, &s, sizeof(s), 9);
	expect_fail(&c, -EINVAL, "srq_limit 129 above max_wr 128");
	s.srq_limit = 0;
	s.max_sge = 0;
	c = mk(VIRTIO_RDMA_CMD_CREATE_SRQ, &s, sizeof(s), 9);
	expect_fail(&c, -EINVAL, "max_sge 0");
	c = mk(VIRTIO_RDMA_CMD_MODIFY_SRQ, &m, sizeof(m), 1);
	expect_ok(&c);
	m.attr_mask = 4;
	c = mk(VIRTIO_RDMA_CMD_MODIFY_SRQ, &m, sizeof(m), 1);
	expect_fail(&c, -EINVAL, "attr_mask 0x4");
	m.attr_mask = VIRTIO_RDMA_SRQ_MAX_WR;
	c = mk(VIRTIO_RDMA_CMD_MODIFY_SRQ, &m, sizeof(m), 1);
	expect_fail(&c, -EINVAL, "max_wr 0");
	c = mk(VIRTIO_RDMA_CMD_QUERY_SRQ, &h, sizeof(h), 13);
	expect_fail(&c, -EINVAL, "srq_handle 0");
	h.srq_handle = 2;
	c = mk(VIRTIO_RDMA_CMD_QUERY_SRQ, &h, sizeof(h), 12);
	expect_fail(&c, -ENOSPC, "QUERY_SRQ");
	c = mk(VIRTIO_RDMA_CMD_DESTROY_SRQ, &h, sizeof(h), 1);
	expect_ok(&c);
}

static void test_every_code_named_and_in_table(void **state)
{
	uint32_t code;

	for (code = 1; code < VIRTIO_RDMA_CMD_MAX; code++)
		assert_string_not_equal(rdma_cmd_name(code), "UNKNOWN");
	assert_string_equal(rdma_cmd_name(0), "UNKNOWN");
	assert_string_equal(rdma_cmd_name(VIRTIO_RDMA_CMD_MAX), "UNKNOWN");
	assert_string_equal(rdma_cmd_name(VIRTIO_RDMA_CMD_DESTROY_SRQ),
			    "DESTROY_SRQ");
	assert_int_equal(rdma_cmd_rsp_len(VIRTIO_RDMA_CMD_QUERY_QP, 500), 160);
	assert_int_equal(rdma_cmd_rsp_len(VIRTIO_RDMA_CMD_DESTROY_QP, 500), 0);
}

static void test_encode_query_port_and_errors(void **state)
{
	struct virtio_rdma_cmd_query_port req = { .port = 1 };
	struct chain c = mk(VIRTIO_RDMA_CMD_QUERY_PORT, &req, sizeof(req), 200);
	struct rdma_cmd cmd = expect_ok(&c);
	union rdma_cmd_rsp rsp;
	uint8_t in[200];

	memset(&rsp, 0, sizeof(rsp));
	rsp.query_port.state = VIRTIO_RDMA_PORT_ACTIVE;
	rsp.query_port.phys_state = VIRTIO_RDMA_PHYS_STATE_LINK_UP;
	assert_int_equal(rdma_cmd_encode_ok(&cmd, &rsp, in, sizeof(in)), 173);
	assert_int_equal(in[0], VIRTIO_RDMA_STATUS_OK);
	assert_int_equal(in[1], VIRTIO_RDMA_PORT_ACTIVE);
	assert_int_equal(in[1 + 42], VIRTIO_RDMA_PHYS_STATE_LINK_UP);

	assert_int_equal(rdma_cmd_encode_error(-EINVAL, in, 1), 1);
	assert_int_equal(in[0], EINVAL);
	assert_int_equal(rdma_cmd_encode_error(-EOPNOTSUPP, in, 5), 1);
	assert_int_equal(in[0], EOPNOTSUPP);
	assert_int_equal(rdma_cmd_encode_error(-EINVAL, in, 0), -ENOSPC);
	assert_int_equal(rdma_cmd_status(-1000), 255);
	assert_int_equal(rdma_cmd_status(0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_cq_decodes),
		cmocka_unit_test(test_short_request_refused),
		cmocka_unit_test(test_short_modify_qp_refused),
		cmocka_unit_test(test_long_request_tail_ignored),
		cmocka_unit_test(test_unknown_code_refused),
		cmocka_unit_test(test_header_not_one_byte_refused),
		cmocka_unit_test(test_no_status_byte_refused),
		cmocka_unit_test(test_response_space_too_small_refused),
		cmocka_unit_test(test_unsupported_fast_reg_refused),
		cmocka_unit_test(test_query_port_other_port_refused),
		cmocka_unit_test(test_create_cq_zero_cqe_refused),
		cmocka_unit_test(test_create_qp_profile_a_decodes),
		cmocka_unit_test(test_create_qp_spec_v1_68_bytes_decodes),
		cmocka_unit_test(test_create_qp_with_srq_decodes),
		cmocka_unit_test(test_create_qp_srq_errors_refused),
		cmocka_unit_test(test_create_qp_smi_type_refused),
		cmocka_unit_test(test_create_qp_bad_fields_refused),
		cmocka_unit_test(
			test_create_qp_response_profile_a_gets_4_bytes),
		cmocka_unit_test(test_modify_qp_decodes),
		cmocka_unit_test(test_modify_qp_bad_mtu_refused),
		cmocka_unit_test(test_modify_qp_bad_state_refused),
		cmocka_unit_test(test_modify_qp_mask_bits_refused),
		cmocka_unit_test(test_modify_qp_field_widths_refused),
		cmocka_unit_test(test_modify_qp_bad_av_refused),
		cmocka_unit_test(test_query_qp_unknown_mask_refused),
		cmocka_unit_test(test_req_notify_flags_must_be_1_or_2),
		cmocka_unit_test(test_gid_commands_checked),
		cmocka_unit_test(test_query_pkey_only_index_0),
		cmocka_unit_test(test_reg_user_mr_decodes),
		cmocka_unit_test(test_reg_user_mr_bad_sizes_refused),
		cmocka_unit_test(test_srq_commands_checked),
		cmocka_unit_test(test_every_code_named_and_in_table),
		cmocka_unit_test(test_encode_query_port_and_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
