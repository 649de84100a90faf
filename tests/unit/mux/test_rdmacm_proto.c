// SPDX-License-Identifier: MIT
/*
 * QEMU's rdmacm-mux protocol as rdmagate-mux speaks it: the codec
 * (common/rdmacm_mux_proto.c) against records laid out byte by byte as
 * QEMU 7.2's pvrdma writes them, every refusal by name; and the choice of
 * a QEMU MAD's destination (mux/rdmacm_route.c).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "common/ib_cm.h"
#include "common/rdmacm_mux_proto.h"
#include "mux/rdmacm_route.h"
#include "mux/router.h"

static const uint8_t gid_a[16] = { 0xfd, 0x99, [15] = 0x10 };
static const uint8_t gid_b[16] = { 0xfd, 0x99, [15] = 0x11 };
static const uint8_t gid_c[16] = { 0xfd, 0x99, [15] = 0x12 };

static void put32(uint8_t *b, size_t off, uint32_t v)
{
	memcpy(b + off, &v, 4); /* host order, as QEMU writes its ints */
}

/* A record as QEMU's mad_send() fills it: offsets written out by hand
 * (not through struct rcm_msg) so that the layout itself is tested. */
static void qemu_record(uint8_t *b, uint32_t op, const uint8_t *gid,
			uint32_t mad_len)
{
	uint32_t qpn_be = htonl(1);
	uint32_t i;

	memset(b, 0, RCM_MSG_SIZE);
	put32(b, 0, RCM_REQ);
	put32(b, 4, op);
	memcpy(b + 8, gid, 16);
	put32(b, 32, mad_len);
	if (op != RCM_OP_MAD)
		return;
	memcpy(b + 56, &qpn_be, 4); /* umad.hdr.addr.qpn */
	b[68] = 1;		    /* grh_present */
	b[70] = 0xff;		    /* hop_limit */
	memcpy(b + 72, gid, 16);    /* QEMU puts the source here */
	for (i = 0; i < mad_len; i++)
		b[100 + i] = (uint8_t)(i + 1);
}

static void test_decode_good(void **state)
{
	uint8_t b[RCM_MSG_SIZE];
	struct rcm_request r;
	struct reason why = { "" };

	qemu_record(b, RCM_OP_REG, gid_a, 0);
	assert_int_equal(rcm_decode_request(b, sizeof(b), &r, &why), 0);
	assert_int_equal(r.op, RCM_OP_REG);
	assert_memory_equal(r.sgid, gid_a, 16);
	assert_int_equal(r.mad_len, 0);

	qemu_record(b, RCM_OP_UNREG, gid_b, 0);
	assert_int_equal(rcm_decode_request(b, sizeof(b), &r, &why), 0);
	assert_int_equal(r.op, RCM_OP_UNREG);

	qemu_record(b, RCM_OP_MAD, gid_a, 256);
	assert_int_equal(rcm_decode_request(b, sizeof(b), &r, &why), 0);
	assert_int_equal(r.op, RCM_OP_MAD);
	assert_int_equal(r.mad_len, 256);
	assert_int_equal(r.mad[0], 1);
	assert_int_equal(r.mad[255], 0);

	qemu_record(b, RCM_OP_MAD, gid_a, 24);
	b[100 + 24] = 0x77; /* past umad_len: not copied */
	assert_int_equal(rcm_decode_request(b, sizeof(b), &r, &why), 0);
	assert_int_equal(r.mad_len, 24);
	assert_int_equal(r.mad[24], 0);
}

struct bad {
	const char *name;
	uint32_t op;
	void (*mutate)(uint8_t *b, size_t *len);
	int err;
	const char *msg;
};

static void m_short(uint8_t *b, size_t *len)
{
	*len = RCM_MSG_SIZE - 1;
}
static void m_long(uint8_t *b, size_t *len)
{
	*len = RCM_MSG_SIZE + 1;
}
static void m_resp(uint8_t *b, size_t *len)
{
	put32(b, 0, RCM_RESP);
}
static void m_type_huge(uint8_t *b, size_t *len)
{
	put32(b, 0, 0xffffffffu);
}
static void m_op(uint8_t *b, size_t *len)
{
	put32(b, 4, 3);
}
static void m_gid_zero(uint8_t *b, size_t *len)
{
	memset(b + 8, 0, 16);
}
static void m_mad_short(uint8_t *b, size_t *len)
{
	put32(b, 32, 23);
}
static void m_mad_long(uint8_t *b, size_t *len)
{
	put32(b, 32, 257);
}
static void m_mad_negative(uint8_t *b, size_t *len)
{
	put32(b, 32, 0xffffffffu);
}

static const struct bad bads[] = {
	{ "short", RCM_OP_REG, m_short, -EBADMSG, "359 bytes" },
	{ "long", RCM_OP_MAD, m_long, -EBADMSG, "361 bytes" },
	{ "a response", RCM_OP_REG, m_resp, -EPROTO, "msg_type 1" },
	{ "msg_type huge", RCM_OP_MAD, m_type_huge, -EPROTO, "msg_type" },
	{ "unknown op", RCM_OP_REG, m_op, -EOPNOTSUPP, "op 3" },
	{ "REG of GID zero", RCM_OP_REG, m_gid_zero, -EINVAL, "REG: the GID" },
	{ "MAD from GID zero", RCM_OP_MAD, m_gid_zero, -EINVAL, "MAD: the" },
	{ "MAD of 23 bytes", RCM_OP_MAD, m_mad_short, -EINVAL, "umad_len 23" },
	{ "MAD of 257 bytes", RCM_OP_MAD, m_mad_long, -EINVAL, "umad_len 257" },
	{ "MAD of -1 bytes", RCM_OP_MAD, m_mad_negative, -EINVAL,
	  "umad_len -1" },
};

static void test_decode_bad(void **state)
{
	const struct bad *c = *state;
	uint8_t b[RCM_MSG_SIZE + 8];
	struct rcm_request r, before;
	struct reason why = { "" };
	size_t len = RCM_MSG_SIZE;

	qemu_record(b, c->op, gid_a, 256);
	c->mutate(b, &len);
	memset(&r, 0xa5, sizeof(r));
	before = r;
	assert_int_equal(rcm_decode_request(b, len, &r, &why), c->err);
	if (!strstr(why.msg, c->msg))
		fail_msg("%s: \"%s\" lacks \"%s\"", c->name, why.msg, c->msg);
	assert_memory_equal(&r, &before, sizeof(r));
	/* and why may be NULL */
	assert_int_equal(rcm_decode_request(b, len, &r, NULL), c->err);
}

static void test_encode(void **state)
{
	uint8_t mad[256], b[RCM_MSG_SIZE];
	struct rcm_incoming in = {
		.dgid = gid_a,
		.sgid = gid_b,
		.src_qpn = 1,
		.flow_label = 0x12345,
		.traffic_class = 0x20,
		.hop_limit = 64,
		.pkey_index = 0,
		.mad = mad,
		.mad_len = 256,
	};
	struct rcm_msg m;
	uint32_t v;

	memset(mad, 0x3c, sizeof(mad));
	assert_int_equal(rcm_encode_incoming(&m, &in), 0);
	memcpy(b, &m, sizeof(b));
	memcpy(&v, b, 4);
	assert_int_equal(v, RCM_REQ);
	memcpy(&v, b + 4, 4);
	assert_int_equal(v, RCM_OP_MAD);
	assert_memory_equal(b + 8, gid_a, 16); /* QEMU's GRH dgid */
	memcpy(&v, b + 32, 4);
	assert_int_equal(v, 256);
	assert_memory_equal(b + 72, gid_b, 16); /* QEMU's GRH sgid */
	assert_int_equal(b[68], 1);
	assert_int_equal(b[71], 0x20);
	memcpy(&v, b + 88, 4);
	assert_int_equal(ntohl(v), 0x12345);
	assert_memory_equal(b + 100, mad, 256);

	in.mad_len = 23;
	assert_int_equal(rcm_encode_incoming(&m, &in), -EINVAL);

	rcm_encode_response(&m, RCM_OP_REG, gid_a, RCM_ERR_EACCES);
	memcpy(b, &m, sizeof(b));
	memcpy(&v, b, 4);
	assert_int_equal(v, RCM_RESP);
	memcpy(&v, b + 24, 4);
	assert_int_equal(v, RCM_ERR_EACCES);
	memcpy(&v, b + 32, 4);
	assert_int_equal(v, 0); /* no MAD in a response */

	assert_int_equal(rcm_err_of_errno(-EPERM), RCM_ERR_EACCES);
	assert_int_equal(rcm_err_of_errno(ENOENT), RCM_ERR_ENOTFOUND);
	assert_int_equal(rcm_err_of_errno(-EEXIST), RCM_ERR_EEXIST);
	assert_int_equal(rcm_err_of_errno(-ENOSPC), RCM_ERR_EINVAL);
	assert_int_equal(rcm_err_of_errno(0), RCM_ERR_OK);
}

static void cm(uint8_t *mad, uint16_t attr, uint32_t local, uint32_t remote)
{
	memset(mad, 0, 256);
	mad[0] = 1;
	mad[1] = CM_MGMT_CLASS;
	mad[2] = CM_CLASS_VERSION;
	mad[3] = CM_METHOD_SEND;
	mad[16] = (uint8_t)(attr >> 8);
	mad[17] = (uint8_t)attr;
	local = htonl(local);
	remote = htonl(remote);
	memcpy(mad + 24, &local, 4);
	memcpy(mad + 28, &remote, 4);
}

static struct rcm_peers peers;

static int dest(const uint8_t *mad, size_t len, const uint8_t *ours,
		uint64_t now, uint8_t d[16], struct reason *why)
{
	return rcm_peers_dest(&peers, mad, len, ours, now, d, why);
}

/* The passive side: a REQ comes in, the REP, DREP go back to its sender. */
static void test_dest_passive(void **state)
{
	uint8_t mad[256], d[16];
	struct reason why;

	memset(&peers, 0, sizeof(peers));
	cm(mad, CM_ATTR_REQ, 0x01000001, 0);
	rcm_peers_learn(&peers, mad, 256, gid_a, gid_b, 1);
	cm(mad, CM_ATTR_REP, 0x02000002, 0x01000001);
	assert_int_equal(dest(mad, 256, gid_a, 2, d, &why), 0);
	assert_memory_equal(d, gid_b, 16);
	/* the same id on another of our GIDs: not learned there */
	assert_int_equal(dest(mad, 256, gid_c, 2, d, &why), -ENOENT);
	assert_non_null(strstr(why.msg, "0x01000001"));
	cm(mad, CM_ATTR_DREP, 0x02000002, 0x01000001);
	assert_int_equal(dest(mad, 256, gid_a, 3, d, &why), 0);
	/* forgotten with its GID (UNREG) */
	rcm_peers_forget(&peers, gid_a);
	assert_int_equal(dest(mad, 256, gid_a, 4, d, &why), -ENOENT);
}

/* The active side: a REQ names its destination; RTU answers the REP. */
static void test_dest_active(void **state)
{
	uint8_t mad[256], d[16];
	struct reason why;

	memset(&peers, 0, sizeof(peers));
	cm(mad, CM_ATTR_REQ, 0x0a, 0);
	memcpy(mad + CM_OFF_REQ_PRI_REMOTE_GID, gid_c, 16);
	assert_int_equal(dest(mad, 256, gid_a, 1, d, &why), 0);
	assert_memory_equal(d, gid_c, 16);
	assert_int_equal(dest(mad, 100, gid_a, 1, d, &why), -EINVAL);
	cm(mad, CM_ATTR_REP, 0x0b, 0x0a);
	rcm_peers_learn(&peers, mad, 256, gid_a, gid_c, 2);
	cm(mad, CM_ATTR_RTU, 0x0a, 0x0b);
	assert_int_equal(dest(mad, 256, gid_a, 3, d, &why), 0);
	assert_memory_equal(d, gid_c, 16);
	/* SIDR: a request not from rdma_cm names no destination, the reply
	 * answers one */
	cm(mad, CM_ATTR_SIDR_REQ, 0x77, 0);
	assert_int_equal(dest(mad, 256, gid_a, 4, d, &why), -ENOENT);
	assert_non_null(strstr(why.msg, "not from rdma_cm"));
	rcm_peers_learn(&peers, mad, 256, gid_a, gid_b, 4);
	cm(mad, CM_ATTR_SIDR_REP, 0x77, 0);
	assert_int_equal(dest(mad, 256, gid_a, 5, d, &why), 0);
	assert_memory_equal(d, gid_b, 16);
	/* not CM, too short */
	mad[1] = 0x04;
	assert_int_equal(dest(mad, 256, gid_a, 6, d, &why), -EINVAL);
	cm(mad, CM_ATTR_RTU, 0x0a, 0x0b);
	assert_int_equal(dest(mad, 30, gid_a, 6, d, &why), -EINVAL);
}

/* rdma_cm's SIDR_REQ: the destination IP address in its header. */
static void test_dest_sidr_rdma_cm(void **state)
{
	static const uint8_t v4[16] = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 7 };
	uint8_t mad[256], d[16];
	struct reason why;

	memset(&peers, 0, sizeof(peers));
	cm(mad, CM_ATTR_SIDR_REQ, 0x77, 0);
	mad[36] = 0x01; /* service id 0x0000000001110000 + port: RDMA_PS_UDP */
	mad[37] = 0x11;
	mad[38] = 0x12;
	mad[39] = 0x34;
	mad[40] = 0x00;		     /* cma_version */
	mad[41] = 0x60;		     /* IPv6 */
	memcpy(mad + 44, gid_a, 16); /* source */
	memcpy(mad + 60, gid_c, 16); /* destination */
	assert_int_equal(dest(mad, 256, gid_a, 1, d, &why), 0);
	assert_memory_equal(d, gid_c, 16);
	mad[41] = 0x40; /* IPv4: 10.0.0.7 in the last 4 bytes */
	memset(mad + 60, 0, 16);
	mad[72] = 10;
	mad[75] = 7;
	assert_int_equal(dest(mad, 256, gid_a, 1, d, &why), 0);
	assert_memory_equal(d, v4, 16);
	mad[41] = 0x50;
	assert_int_equal(dest(mad, 256, gid_a, 1, d, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "IP version 5"));
	mad[41] = 0x60;
	assert_int_equal(dest(mad, 75, gid_a, 1, d, &why), -EINVAL);
	mad[40] = 0x01; /* not rdma_cm's header version */
	assert_int_equal(dest(mad, 256, gid_a, 1, d, &why), -ENOENT);
	mad[40] = 0x00;
	mad[37] = 0x12; /* not one of its port spaces */
	assert_int_equal(dest(mad, 256, gid_a, 1, d, &why), -ENOENT);
}

/* Full: the least recently used entry goes, nothing else. */
static void test_dest_bounded(void **state)
{
	uint8_t mad[256], d[16];
	struct reason why;
	uint32_t i;

	memset(&peers, 0, sizeof(peers));
	for (i = 1; i <= RCM_PEERS; i++) {
		cm(mad, CM_ATTR_REQ, i, 0);
		rcm_peers_learn(&peers, mad, 256, gid_a, gid_b, i);
	}
	cm(mad, CM_ATTR_REP, 0x999, 1); /* id 1 used again: now the newest */
	assert_int_equal(dest(mad, 256, gid_a, 1000, d, &why), 0);
	cm(mad, CM_ATTR_REQ, RCM_PEERS + 1, 0);
	rcm_peers_learn(&peers, mad, 256, gid_a, gid_c, 1001);
	cm(mad, CM_ATTR_REP, 0x999, 2); /* the oldest: replaced */
	assert_int_equal(dest(mad, 256, gid_a, 1002, d, &why), -ENOENT);
	cm(mad, CM_ATTR_REP, 0x999, 1);
	assert_int_equal(dest(mad, 256, gid_a, 1003, d, &why), 0);
	cm(mad, CM_ATTR_REP, 0x999, RCM_PEERS + 1);
	assert_int_equal(dest(mad, 256, gid_a, 1004, d, &why), 0);
	assert_memory_equal(d, gid_c, 16);
}

int main(void)
{
	struct CMUnitTest t[sizeof(bads) / sizeof(bads[0]) + 6];
	size_t i, n = 0;

	for (i = 0; i < sizeof(bads) / sizeof(bads[0]); i++)
		t[n++] = (struct CMUnitTest){ bads[i].name, test_decode_bad,
					      NULL, NULL, (void *)&bads[i] };
	t[n++] = (struct CMUnitTest)cmocka_unit_test(test_decode_good);
	t[n++] = (struct CMUnitTest)cmocka_unit_test(test_encode);
	t[n++] = (struct CMUnitTest)cmocka_unit_test(test_dest_passive);
	t[n++] = (struct CMUnitTest)cmocka_unit_test(test_dest_active);
	t[n++] = (struct CMUnitTest)cmocka_unit_test(test_dest_bounded);
	t[n++] = (struct CMUnitTest)cmocka_unit_test(test_dest_sidr_rdma_cm);
	return _cmocka_run_group_tests("rdmacm-proto", t, n, NULL, NULL);
}
