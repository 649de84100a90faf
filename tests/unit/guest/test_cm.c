// SPDX-License-Identifier: MIT
/*
 * The guest simulator's CM MAD codec (guest/cm.c): a REQ built byte by
 * byte from the IBTA tables against the encoder and the decoder, round
 * trips of every message, every decode refusal by name, the RDMA-CM IP
 * private data, service ids, the GRH area, the timers. Decoders read from
 * a copy placed right before a PROT_NONE page.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "guest/cm.h"
#include "tests/unit/guard.h"

/* MAD offset of a CM message byte. */
#define M(off) (CM_MAD_HDR_LEN + (off))

static const uint8_t gid1[16] = { 0, 0, 0,    0,    0,	0,  0, 0,
				  0, 0, 0xff, 0xff, 10, 99, 0, 1 };
static const uint8_t gid2[16] = { 0, 0, 0,    0,    0,	0,  0, 0,
				  0, 0, 0xff, 0xff, 10, 99, 0, 2 };

/* Decodes a guarded copy of exactly len bytes. */
static int dec(const uint8_t *b, size_t len, struct cm_msg *m,
	       struct reason *why)
{
	struct guarded g = { 0 };
	int r;

	assert_int_equal(guarded_copy(&g, b, len), 0);
	r = cm_decode(g.data, len, m, why);
	guarded_free(&g);
	return r;
}

/*
 * The REQ an rdma_cm guest at 10.99.0.1 sends to 10.99.0.2 port 18515
 * from port 0x8123, written from IBTA vol. 1 table 106 (kernel names in
 * include/rdma/ibta_vol1_c12.h) without the encoder.
 */
static void golden_req(uint8_t b[CM_MAD_LEN])
{
	static const uint8_t hdr[24] = {
		0x01, 0x07, 0x02, 0x03, /* base 1, class CM, version 2, SEND */
		0x00, 0x00, 0x00, 0x00, /* status, class specific */
		0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, /* TID */
		0x00, 0x10, 0x00, 0x00, /* attribute REQ, reserved */
		0x00, 0x00, 0x00, 0x00, /* attribute modifier */
	};

	memset(b, 0, CM_MAD_LEN);
	memcpy(b, hdr, sizeof(hdr));
	memcpy(b + M(0), "\xa1\xb2\xc3\xd4", 4); /* local comm id */
	/* service id 0x0000000001064853: RDMA_PS_TCP, port 18515 */
	memcpy(b + M(8), "\x00\x00\x00\x00\x01\x06\x48\x53", 8);
	memcpy(b + M(16), "\x00\x02\xc9\x03\x00\xa1\xb2\xc3", 8); /* GUID */
	/* Q_Key 0 at 28; QPN 0x000012, responder resources 1 */
	memcpy(b + M(32), "\x00\x00\x12\x01", 4);
	memcpy(b + M(36), "\x00\x00\x00\x01", 4); /* EECN 0, depth 1 */
	/* remote EECN 0; timeout 20 (10100), RC (00), flow control 1 */
	memcpy(b + M(40), "\x00\x00\x00\xa1", 4);
	/* PSN 0xabcdef; local timeout 20, retry count 7 */
	memcpy(b + M(44), "\xab\xcd\xef\xa7", 4);
	/* P_Key; MTU 3 (1024), RDC 0, RNR 7; max CM retries 15, SRQ 0 */
	memcpy(b + M(48), "\xff\xff\x37\xf0", 4);
	memcpy(b + M(52), "\xff\xff\xff\xff", 4); /* permissive LIDs */
	memcpy(b + M(56), gid1, 16);
	memcpy(b + M(72), gid2, 16);
	/* flow label 0x12345 (20 bits), reserved, packet rate 3 (6 bits) */
	memcpy(b + M(88), "\x12\x34\x50\x03", 4);
	/* TC 0, hop limit 64, SL 0 + not subnet local, ACK timeout 17 */
	memcpy(b + M(92), "\x00\x40\x00\x88", 4);
	/* private data at 140: CMA header v0, IPv4, port 0x8123, addrs */
	memcpy(b + M(140), "\x00\x40\x81\x23", 4);
	memcpy(b + M(140 + 4 + 12), "\x0a\x63\x00\x01", 4);
	memcpy(b + M(140 + 20 + 12), "\x0a\x63\x00\x02", 4);
}

static void golden_req_msg(struct cm_msg *m)
{
	struct cm_req *r = &m->req;
	struct cm_ip_hdr ip = { .ip_version = 4, .src_port = 0x8123 };

	memset(m, 0, sizeof(*m));
	cm_mad_hdr_init(&m->hdr, CM_ATTR_REQ, 0x1122334455667788ull);
	r->local_comm_id = 0xa1b2c3d4;
	r->service_id = cm_ip_service_id(CM_IP_PS_TCP, 18515);
	r->local_ca_guid = 0x0002c90300a1b2c3ull;
	r->local_qpn = 0x12;
	r->responder_resources = 1;
	r->initiator_depth = 1;
	r->remote_cm_response_timeout = 20;
	r->transport = CM_TRANSPORT_RC;
	r->flow_control = true;
	r->starting_psn = 0xabcdef;
	r->local_cm_response_timeout = 20;
	r->retry_count = 7;
	r->pkey = 0xffff;
	r->path_mtu = 3;
	r->rnr_retry_count = 7;
	r->max_cm_retries = 15;
	r->primary.local_lid = CM_LID_PERMISSIVE;
	r->primary.remote_lid = CM_LID_PERMISSIVE;
	memcpy(r->primary.local_gid, gid1, 16);
	memcpy(r->primary.remote_gid, gid2, 16);
	r->primary.flow_label = 0x12345;
	r->primary.packet_rate = 3;
	r->primary.hop_limit = 64;
	r->primary.local_ack_timeout = 17;
	memcpy(ip.src + 12, "\x0a\x63\x00\x01", 4);
	memcpy(ip.dst + 12, "\x0a\x63\x00\x02", 4);
	assert_int_equal(cm_ip_encode(&ip, NULL, 0, r->private_data, NULL), 0);
}

static void req_encodes_to_golden_bytes(void **state)
{
	uint8_t want[CM_MAD_LEN], got[CM_MAD_LEN];
	struct cm_msg m;

	(void)state;
	golden_req(want);
	golden_req_msg(&m);
	assert_int_equal(cm_encode(&m, got, NULL), CM_MAD_LEN);
	assert_memory_equal(got, want, CM_MAD_LEN);
}

static void req_decodes_from_golden_bytes(void **state)
{
	uint8_t b[CM_MAD_LEN];
	struct cm_msg m, want;
	struct cm_ip_hdr ip;
	uint16_t ps, port;

	(void)state;
	golden_req(b);
	golden_req_msg(&want);
	assert_int_equal(dec(b, sizeof(b), &m, NULL), 0);
	assert_int_equal(m.hdr.attr_id, CM_ATTR_REQ);
	assert_true(m.hdr.tid == 0x1122334455667788ull);
	assert_memory_equal(&m.req, &want.req, sizeof(m.req));
	assert_false(m.req.has_alternate);
	assert_int_equal(cm_ip_service_port(m.req.service_id, &ps, &port, NULL),
			 0);
	assert_int_equal(ps, CM_IP_PS_TCP);
	assert_int_equal(port, 18515);
	assert_int_equal(cm_ip_decode(m.req.private_data, &ip, NULL), 0);
	assert_int_equal(ip.ip_version, 4);
	assert_int_equal(ip.src_port, 0x8123);
	assert_memory_equal(ip.dst + 12, "\x0a\x63\x00\x02", 4);
}

/* Reserved bits are ignored on receipt (and written as zero). */
static void req_reserved_bits_are_ignored(void **state)
{
	uint8_t b[CM_MAD_LEN], again[CM_MAD_LEN];
	struct cm_msg m;

	(void)state;
	golden_req(b);
	b[18] = 0xff;	  /* header reserved */
	b[M(4)] = 0x5a;	  /* REQ reserved 4..7 */
	b[M(24)] = 0x5a;  /* reserved 24..27 */
	b[M(90)] |= 0x0f; /* reserved 6 bits after the flow label */
	b[M(94)] |= 0x07; /* reserved after subnet local */
	b[M(95)] |= 0x07; /* reserved after the ACK timeout */
	assert_int_equal(dec(b, sizeof(b), &m, NULL), 0);
	assert_int_equal(m.req.primary.flow_label, 0x12345);
	assert_int_equal(m.req.primary.packet_rate, 3);
	assert_int_equal(m.req.primary.local_ack_timeout, 17);
	assert_int_equal(cm_encode(&m, again, NULL), CM_MAD_LEN);
	golden_req(b);
	assert_memory_equal(again, b, CM_MAD_LEN);
}

static void req_alternate_path_round_trip(void **state)
{
	uint8_t b[CM_MAD_LEN];
	struct cm_msg m, out;

	(void)state;
	golden_req_msg(&m);
	m.req.has_alternate = true;
	m.req.alternate = m.req.primary;
	m.req.alternate.sl = 9;
	m.req.alternate.subnet_local = true;
	m.req.sap_supported = true;
	m.req.srq = true;
	m.req.rdc_exists = true;
	assert_int_equal(cm_encode(&m, b, NULL), CM_MAD_LEN);
	assert_int_equal(b[M(138)], 0x98); /* SL 9, subnet local */
	assert_int_equal(b[M(139)], 0x8c); /* timeout 17, SAP */
	assert_int_equal(b[M(50)], 0x3f);
	assert_int_equal(b[M(51)], 0xf8);
	assert_int_equal(dec(b, sizeof(b), &out, NULL), 0);
	assert_memory_equal(&out.req, &m.req, sizeof(m.req));
}

/* Every other message: exact bytes of the bit-fields, then back. */
static void rep_fields_and_round_trip(void **state)
{
	uint8_t b[CM_MAD_LEN];
	struct cm_msg m, out;

	(void)state;
	memset(&m, 0, sizeof(m));
	cm_mad_hdr_init(&m.hdr, CM_ATTR_REP, 7);
	m.rep.local_comm_id = 0x01020304;
	m.rep.remote_comm_id = 0xa1b2c3d4;
	m.rep.local_qkey = 0x11111111;
	m.rep.local_qpn = 0x345678;
	m.rep.local_eecn = 0x9abcde;
	m.rep.starting_psn = 0xfedcba;
	m.rep.responder_resources = 4;
	m.rep.initiator_depth = 5;
	m.rep.target_ack_delay = 15;
	m.rep.failover_accepted = 2;
	m.rep.flow_control = true;
	m.rep.rnr_retry_count = 6;
	m.rep.srq = true;
	m.rep.local_ca_guid = 0x0102030405060708ull;
	memset(m.rep.private_data, 0x3c, sizeof(m.rep.private_data));
	assert_int_equal(cm_encode(&m, b, NULL), CM_MAD_LEN);
	assert_memory_equal(b + 16, "\x00\x13", 2);
	assert_memory_equal(b + M(12), "\x34\x56\x78\x00", 4);
	assert_memory_equal(b + M(16), "\x9a\xbc\xde\x00", 4);
	assert_memory_equal(b + M(20), "\xfe\xdc\xba\x00", 4);
	/* 01111 10 1 ; 110 1 0000 */
	assert_memory_equal(b + M(24), "\x04\x05\x7d\xd0", 4);
	assert_memory_equal(b + M(28), "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
	assert_int_equal(b[M(36)], 0x3c);
	assert_int_equal(b[M(231)], 0x3c);
	assert_int_equal(dec(b, sizeof(b), &out, NULL), 0);
	assert_memory_equal(&out.rep, &m.rep, sizeof(m.rep));
}

static void rej_mra_fields_and_round_trip(void **state)
{
	uint8_t b[CM_MAD_LEN];
	struct cm_msg m, out;

	(void)state;
	memset(&m, 0, sizeof(m));
	cm_mad_hdr_init(&m.hdr, CM_ATTR_REJ, 8);
	m.rej.local_comm_id = 1;
	m.rej.remote_comm_id = 2;
	m.rej.msg_rejected = CM_MSG_RESPONSE_REP;
	m.rej.ari_length = 72;
	m.rej.reason = CM_REJ_INVALID_GID;
	memset(m.rej.ari, 0xaa, sizeof(m.rej.ari));
	memset(m.rej.private_data, 0xbb, sizeof(m.rej.private_data));
	assert_int_equal(cm_encode(&m, b, NULL), CM_MAD_LEN);
	/* 01 000000 ; 1001000 0 ; reason 12 */
	assert_memory_equal(b + M(8), "\x40\x90\x00\x0c", 4);
	assert_int_equal(b[M(12)], 0xaa);
	assert_int_equal(b[M(83)], 0xaa);
	assert_int_equal(b[M(84)], 0xbb);
	assert_int_equal(dec(b, sizeof(b), &out, NULL), 0);
	assert_memory_equal(&out.rej, &m.rej, sizeof(m.rej));

	memset(&m, 0, sizeof(m));
	cm_mad_hdr_init(&m.hdr, CM_ATTR_MRA, 9);
	m.mra.local_comm_id = 3;
	m.mra.remote_comm_id = 4;
	m.mra.msg_mraed = CM_MSG_RESPONSE_OTHER;
	m.mra.service_timeout = 31;
	assert_int_equal(cm_encode(&m, b, NULL), CM_MAD_LEN);
	assert_memory_equal(b + M(8), "\x80\xf8", 2);
	assert_int_equal(dec(b, sizeof(b), &out, NULL), 0);
	assert_memory_equal(&out.mra, &m.mra, sizeof(m.mra));
}

static void rtu_dreq_drep_sidr_round_trip(void **state)
{
	uint8_t b[CM_MAD_LEN];
	struct cm_msg m, out;

	(void)state;
	memset(&m, 0, sizeof(m));
	cm_mad_hdr_init(&m.hdr, CM_ATTR_RTU, 1);
	m.rtu.local_comm_id = 5;
	m.rtu.remote_comm_id = 6;
	m.rtu.private_data[223] = 0x77;
	assert_int_equal(cm_encode(&m, b, NULL), CM_MAD_LEN);
	assert_int_equal(b[255], 0x77);
	assert_int_equal(dec(b, sizeof(b), &out, NULL), 0);
	assert_memory_equal(&out.rtu, &m.rtu, sizeof(m.rtu));

	memset(&m, 0, sizeof(m));
	cm_mad_hdr_init(&m.hdr, CM_ATTR_DREQ, 2);
	m.dreq.local_comm_id = 7;
	m.dreq.remote_comm_id = 8;
	m.dreq.remote_qpn = 0xabcdef;
	assert_int_equal(cm_encode(&m, b, NULL), CM_MAD_LEN);
	assert_memory_equal(b + M(8), "\xab\xcd\xef\x00", 4);
	assert_int_equal(dec(b, sizeof(b), &out, NULL), 0);
	assert_memory_equal(&out.dreq, &m.dreq, sizeof(m.dreq));

	memset(&m, 0, sizeof(m));
	cm_mad_hdr_init(&m.hdr, CM_ATTR_DREP, 3);
	m.drep.local_comm_id = 9;
	m.drep.remote_comm_id = 10;
	assert_int_equal(cm_encode(&m, b, NULL), CM_MAD_LEN);
	assert_int_equal(dec(b, sizeof(b), &out, NULL), 0);
	assert_memory_equal(&out.drep, &m.drep, sizeof(m.drep));

	memset(&m, 0, sizeof(m));
	cm_mad_hdr_init(&m.hdr, CM_ATTR_SIDR_REQ, 4);
	m.sidr_req.request_id = 11;
	m.sidr_req.pkey = 0xffff;
	m.sidr_req.service_id = cm_ip_service_id(CM_IP_PS_UDP, 7471);
	assert_int_equal(cm_encode(&m, b, NULL), CM_MAD_LEN);
	assert_memory_equal(b + M(4), "\xff\xff\x00\x00", 4);
	assert_int_equal(dec(b, sizeof(b), &out, NULL), 0);
	assert_memory_equal(&out.sidr_req, &m.sidr_req, sizeof(m.sidr_req));

	memset(&m, 0, sizeof(m));
	cm_mad_hdr_init(&m.hdr, CM_ATTR_SIDR_REP, 5);
	m.sidr_rep.request_id = 11;
	m.sidr_rep.status = 0;
	m.sidr_rep.info_length = 16;
	m.sidr_rep.qpn = 0x112233;
	m.sidr_rep.service_id = 0x0000000001111d2full;
	m.sidr_rep.qkey = 0x01234567;
	assert_int_equal(cm_encode(&m, b, NULL), CM_MAD_LEN);
	assert_memory_equal(b + M(4), "\x00\x10\x00\x00\x11\x22\x33\x00", 8);
	assert_memory_equal(b + M(20), "\x01\x23\x45\x67", 4);
	assert_int_equal(dec(b, sizeof(b), &out, NULL), 0);
	assert_memory_equal(&out.sidr_rep, &m.sidr_rep, sizeof(m.sidr_rep));
}

/* ---- decode refusals ---- */

struct bad {
	const char *name;
	size_t off; /* MAD offset patched */
	uint8_t val;
	uint8_t mask; /* bits replaced (0xff: the byte) */
	int err;
	const char *words; /* in the reason */
};

static void check_bad(const uint8_t *good, const struct bad *t, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t b[CM_MAD_LEN];
		struct reason why = { "" };
		struct cm_msg m;

		memcpy(b, good, CM_MAD_LEN);
		memset(&m, 0x5a, sizeof(m));
		b[t[i].off] = (uint8_t)((b[t[i].off] & ~t[i].mask) |
					(t[i].val & t[i].mask));
		print_message("case %s\n", t[i].name);
		assert_int_equal(dec(b, sizeof(b), &m, &why), t[i].err);
		assert_non_null(strstr(why.msg, t[i].words));
		assert_int_equal(((uint8_t *)&m)[0], 0x5a); /* untouched */
	}
}

static void decode_refuses_bad_lengths(void **state)
{
	uint8_t b[CM_MAD_LEN + 1];
	struct reason why = { "" };
	struct cm_msg m;

	(void)state;
	golden_req(b);
	b[CM_MAD_LEN] = 0;
	assert_int_equal(dec(b, 0, &m, &why), -EMSGSIZE);
	assert_int_equal(dec(b, CM_MAD_HDR_LEN, &m, &why), -EMSGSIZE);
	assert_int_equal(dec(b, CM_MAD_LEN - 1, &m, &why), -EMSGSIZE);
	assert_non_null(strstr(why.msg, "255 bytes, needs 256"));
	assert_int_equal(dec(b, CM_MAD_LEN + 1, &m, &why), -EMSGSIZE);
}

static void decode_refuses_bad_headers(void **state)
{
	static const struct bad t[] = {
		{ "base version 2", 0, 2, 0xff, -EPROTO, "base version 2" },
		{ "SA class", 1, 0x03, 0xff, -EPROTO, "class 0x03" },
		{ "class version 1", 2, 1, 0xff, -EPROTO, "class version 1" },
		{ "GET", 3, 0x01, 0xff, -EPROTO, "method 0x01" },
		{ "response bit", 3, 0x83, 0xff, -EPROTO, "method 0x83" },
		{ "status", 5, 0x04, 0xff, -EPROTO, "status 0x0004" },
		{ "LAP", 17, 0x19, 0xff, -EOPNOTSUPP, "LAP" },
		{ "APR", 17, 0x1a, 0xff, -EOPNOTSUPP, "APR" },
		{ "ClassPortInfo", 17, 0x01, 0xff, -EOPNOTSUPP,
		  "ClassPortInfo" },
		{ "unknown attribute", 17, 0x20, 0xff, -EINVAL,
		  "unknown CM attribute 0x0020" },
		{ "attribute high byte", 16, 0x01, 0xff, -EINVAL,
		  "unknown CM attribute 0x0110" },
	};
	uint8_t b[CM_MAD_LEN];

	(void)state;
	golden_req(b);
	check_bad(b, t, sizeof(t) / sizeof(t[0]));
}

static void decode_refuses_bad_req_fields(void **state)
{
	static const struct bad t[] = {
		{ "RD transport", M(43), 0x04, 0x06, -EINVAL, "(RD)" },
		{ "extended type without type 3", M(51), 0x01, 0x07, -EINVAL,
		  "without transport service type 3" },
		{ "type 3 without extended type", M(43), 0x06, 0x06, -EINVAL,
		  "extended transport type 0" },
		{ "QPN 0", M(34), 0x00, 0xff, -EINVAL, "local QPN 0" },
		{ "QPN 1", M(34), 0x01, 0xff, -EINVAL, "local QPN 1" },
		{ "MTU 0", M(50), 0x00, 0xf0, -EINVAL, "path MTU 0" },
		{ "MTU 6", M(50), 0x60, 0xf0, -EINVAL, "path MTU 6" },
		{ "MTU 15", M(50), 0xf0, 0xf0, -EINVAL, "path MTU 15" },
	};
	uint8_t b[CM_MAD_LEN];
	struct reason why = { "" };
	struct cm_msg m;

	(void)state;
	golden_req(b);
	check_bad(b, t, sizeof(t) / sizeof(t[0]));
	/* zero GIDs in the primary path */
	memset(b + M(56), 0, 16);
	assert_int_equal(dec(b, sizeof(b), &m, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "local port GID is zero"));
	golden_req(b);
	memset(b + M(72), 0, 16);
	assert_int_equal(dec(b, sizeof(b), &m, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "remote port GID is zero"));
	/* XRC (type 3, extended 1) is a valid REQ */
	golden_req(b);
	b[M(43)] |= 0x06;
	b[M(51)] |= 0x01;
	assert_int_equal(dec(b, sizeof(b), &m, &why), 0);
	assert_int_equal(m.req.transport, CM_TRANSPORT_EXT);
	assert_int_equal(m.req.ext_transport, CM_EXT_TRANSPORT_XRC);
}

static void decode_refuses_bad_fields_of_other_messages(void **state)
{
	static const struct bad rep[] = {
		{ "failover 3", M(26), 0x06, 0x06, -EINVAL,
		  "failover accepted 3" },
		{ "REP QPN 1", M(14), 0x01, 0xff, -EINVAL, "local QPN 1" },
	};
	static const struct bad rej[] = {
		{ "rejected 3", M(8), 0xc0, 0xc0, -EINVAL,
		  "message rejected 3" },
		{ "ARI 73", M(9), 73 << 1, 0xfe, -EINVAL,
		  "rejection info length 73" },
	};
	static const struct bad mra[] = {
		{ "MRAed 3", M(8), 0xc0, 0xc0, -EINVAL, "message MRAed 3" },
	};
	static const struct bad sidr[] = {
		{ "status 6", M(4), 6, 0xff, -EINVAL, "status 6" },
		{ "info 73", M(5), 73, 0xff, -EINVAL,
		  "additional info length 73" },
	};
	uint8_t b[CM_MAD_LEN];
	struct cm_msg m;

	(void)state;
	memset(&m, 0, sizeof(m));
	cm_mad_hdr_init(&m.hdr, CM_ATTR_REP, 1);
	m.rep.local_qpn = 5;
	assert_int_equal(cm_encode(&m, b, NULL), CM_MAD_LEN);
	check_bad(b, rep, 2);
	memset(&m, 0, sizeof(m));
	cm_mad_hdr_init(&m.hdr, CM_ATTR_REJ, 1);
	assert_int_equal(cm_encode(&m, b, NULL), CM_MAD_LEN);
	check_bad(b, rej, 2);
	cm_mad_hdr_init(&m.hdr, CM_ATTR_MRA, 1);
	assert_int_equal(cm_encode(&m, b, NULL), CM_MAD_LEN);
	check_bad(b, mra, 1);
	cm_mad_hdr_init(&m.hdr, CM_ATTR_SIDR_REP, 1);
	assert_int_equal(cm_encode(&m, b, NULL), CM_MAD_LEN);
	check_bad(b, sidr, 2);
}

/* ---- encode refusals: nothing is truncated silently ---- */

static void encode_refuses_wide_fields(void **state)
{
	struct reason why = { "" };
	uint8_t b[CM_MAD_LEN];
	struct cm_msg m;

	(void)state;
	golden_req_msg(&m);
	m.req.local_qpn = 0x1000000;
	assert_int_equal(cm_encode(&m, b, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "REQ: local QPN 0x1000000"));
	golden_req_msg(&m);
	m.req.primary.flow_label = 0x100000;
	assert_int_equal(cm_encode(&m, b, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "flow label"));
	golden_req_msg(&m);
	m.req.retry_count = 8;
	assert_int_equal(cm_encode(&m, b, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "retry count 0x8"));
	golden_req_msg(&m);
	m.req.remote_cm_response_timeout = 32;
	assert_int_equal(cm_encode(&m, b, &why), -EINVAL);
	golden_req_msg(&m);
	m.hdr.method = 0x81;
	assert_int_equal(cm_encode(&m, b, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "method 0x81"));
	golden_req_msg(&m);
	m.hdr.attr_id = CM_ATTR_LAP;
	assert_int_equal(cm_encode(&m, b, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "LAP"));
	memset(&m, 0, sizeof(m));
	cm_mad_hdr_init(&m.hdr, CM_ATTR_REJ, 1);
	m.rej.ari_length = 73;
	assert_int_equal(cm_encode(&m, b, &why), -EINVAL);
	m.rej.ari_length = 0;
	m.rej.msg_rejected = 3;
	assert_int_equal(cm_encode(&m, b, &why), -EINVAL);
	memset(&m, 0, sizeof(m));
	cm_mad_hdr_init(&m.hdr, CM_ATTR_DREQ, 1);
	m.dreq.remote_qpn = 0x1000000;
	assert_int_equal(cm_encode(&m, b, &why), -EINVAL);
	memset(&m, 0, sizeof(m));
	cm_mad_hdr_init(&m.hdr, CM_ATTR_REP, 1);
	m.rep.failover_accepted = 3;
	assert_int_equal(cm_encode(&m, b, &why), -EINVAL);
}

/* ---- RDMA-CM IP private data ---- */

static void ip_header_ipv6_with_user_data(void **state)
{
	struct cm_ip_hdr h = { .ip_version = 6, .src_port = 40000 }, out;
	uint8_t pd[CM_REQ_PRIVATE_LEN], user[CM_IP_USER_LEN];
	struct reason why = { "" };

	(void)state;
	for (int i = 0; i < 16; i++) {
		h.src[i] = (uint8_t)(0xf0 + i);
		h.dst[i] = (uint8_t)i;
	}
	memset(user, 0x42, sizeof(user));
	assert_int_equal(cm_ip_encode(&h, user, sizeof(user), pd, &why), 0);
	assert_memory_equal(pd, "\x00\x60\x9c\x40", 4);
	assert_memory_equal(pd + 4, h.src, 16);
	assert_memory_equal(pd + 20, h.dst, 16);
	assert_memory_equal(pd + CM_IP_HDR_LEN, user, sizeof(user));
	assert_int_equal(cm_ip_decode(pd, &out, &why), 0);
	/* field by field: the padding after ip_version is not out's */
	assert_int_equal(out.ip_version, h.ip_version);
	assert_int_equal(out.src_port, h.src_port);
	assert_memory_equal(out.src, h.src, 16);
	assert_memory_equal(out.dst, h.dst, 16);
	assert_int_equal(cm_ip_encode(&h, user, sizeof(user) + 1, pd, &why),
			 -EINVAL);
	assert_non_null(strstr(why.msg, "57 bytes of user data"));
}

static void ip_header_refusals(void **state)
{
	struct cm_ip_hdr h = { .ip_version = 4 }, out;
	uint8_t pd[CM_REQ_PRIVATE_LEN];
	struct reason why = { "" };

	(void)state;
	h.dst[3] = 1; /* an IPv4 address must be in the last 4 bytes */
	assert_int_equal(cm_ip_encode(&h, NULL, 0, pd, &why), -EINVAL);
	h.dst[3] = 0;
	h.ip_version = 5;
	assert_int_equal(cm_ip_encode(&h, NULL, 0, pd, &why), -EINVAL);
	h.ip_version = 4;
	assert_int_equal(cm_ip_encode(&h, NULL, 0, pd, &why), 0);
	pd[0] = 0x01;
	assert_int_equal(cm_ip_decode(pd, &out, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "version 0x01"));
	pd[0] = 0;
	pd[1] = 0x50;
	assert_int_equal(cm_ip_decode(pd, &out, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "IP version 5"));
	/* the low nibble is reserved, the IPv4 pad too */
	pd[1] = 0x4f;
	pd[4] = 0xee;
	assert_int_equal(cm_ip_decode(pd, &out, &why), 0);
	assert_int_equal(out.ip_version, 4);
	assert_int_equal(out.src[0], 0);
}

static void service_ids_and_addresses(void **state)
{
	struct reason why = { "" };
	uint8_t gid[16], addr[16], v4[16] = { 0 };
	uint16_t ps, port;

	(void)state;
	assert_true(cm_ip_service_id(CM_IP_PS_TCP, 18515) ==
		    0x0000000001064853ull);
	assert_int_equal(
		cm_ip_service_port(0x000000000111ffffull, &ps, &port, &why), 0);
	assert_int_equal(ps, CM_IP_PS_UDP);
	assert_int_equal(port, 0xffff);
	assert_int_equal(
		cm_ip_service_port(0x1000000001064853ull, &ps, &port, &why),
		-EINVAL);
	assert_non_null(strstr(why.msg, "not an RDMA IP service"));
	assert_int_equal(
		cm_ip_service_port(0x0000000002064853ull, &ps, &port, &why),
		-EINVAL);

	memcpy(v4 + 12, "\x0a\x63\x00\x01", 4);
	cm_ip_to_gid(4, v4, gid);
	assert_memory_equal(gid, gid1, 16);
	assert_int_equal(cm_gid_to_ip(gid1, addr), 4);
	assert_memory_equal(addr, v4, 16);
	cm_ip_to_gid(6, gid2, gid);
	assert_memory_equal(gid, gid2, 16);
	memcpy(gid, "\xfd\x99\0\0\0\0\0\0\0\0\0\0\0\0\0\x10", 16);
	assert_int_equal(cm_gid_to_ip(gid, addr), 6);
	assert_memory_equal(addr, gid, 16);
	/* rdma_cm's RoCE v2 flow label: sport * 31 + dport, 20 bits */
	assert_int_equal(cm_ip_flow_label(0x8123, 18515),
			 (0x8123 * 31 + 18515) & 0xfffff);
	assert_int_equal(cm_ip_flow_label(0xffff, 0xffff),
			 (0xffff * 31 + 0xffff) & 0xfffff);
}

static void timers_as_ib_cm(void **state)
{
	(void)state;
	assert_int_equal(cm_time_to_ms(0), 1);
	assert_int_equal(cm_time_to_ms(8), 1);
	assert_int_equal(cm_time_to_ms(16), 256);
	assert_int_equal(cm_time_to_ms(20), 4096);
	assert_int_equal(cm_time_to_ms(31), 1u << 23);
	/* cm_ack_timeout(): rxe's ACK delay 15, RoCE packet life 16 */
	assert_int_equal(cm_ack_timeout(15, 16), 17);
	assert_int_equal(cm_ack_timeout(16, 16), 18);
	assert_int_equal(cm_ack_timeout(20, 3), 20);
	assert_int_equal(cm_ack_timeout(0, 31), 31);
}

/* ---- the GRH area ---- */

static void grh_ipv6_and_ipv4(void **state)
{
	uint8_t grh[CM_GRH_LEN] = { 0 }, sgid[16], dgid[16], hop, tc;
	struct reason why = { "" };
	uint32_t fl;

	(void)state;
	/* IPv6: version 6, TC 0x12, flow label 0x34567 */
	memcpy(grh, "\x61\x23\x45\x67\x01\x18\x11\x40", 8);
	memcpy(grh + 8, gid2, 16);
	memcpy(grh + 24, gid1, 16);
	assert_int_equal(cm_grh_parse(grh, sgid, dgid, &hop, &tc, &fl, &why),
			 0);
	assert_memory_equal(sgid, gid2, 16);
	assert_memory_equal(dgid, gid1, 16);
	assert_int_equal(hop, 0x40);
	assert_int_equal(tc, 0x12);
	assert_int_equal(fl, 0x34567);

	/* RoCE v2 over IPv4: 20 bytes of nothing, then the IPv4 header */
	memset(grh, 0, sizeof(grh));
	memcpy(grh + 20, "\x45\x08\x01\x24\x00\x00\x40\x00\x3f\x11\0\0", 12);
	memcpy(grh + 32, "\x0a\x63\x00\x02\x0a\x63\x00\x01", 8);
	assert_int_equal(cm_grh_parse(grh, sgid, dgid, &hop, &tc, &fl, &why),
			 0);
	assert_memory_equal(sgid, gid2, 16);
	assert_memory_equal(dgid, gid1, 16);
	assert_int_equal(hop, 0x3f);
	assert_int_equal(tc, 0x08);

	memset(grh, 0, sizeof(grh));
	assert_int_equal(cm_grh_parse(grh, sgid, dgid, &hop, &tc, &fl, &why),
			 -EINVAL);
	assert_non_null(strstr(why.msg, "neither an IPv6 header"));
}

static void names(void **state)
{
	(void)state;
	assert_string_equal(cm_attr_name(CM_ATTR_DREP), "DREP");
	assert_string_equal(cm_attr_name(0x99), "UNKNOWN");
	assert_string_equal(cm_rej_reason_name(CM_REJ_TIMEOUT), "timeout");
	assert_string_equal(cm_rej_reason_name(CM_REJ_INVALID_SERVICE_ID),
			    "invalid service id");
	assert_string_equal(cm_rej_reason_name(0), "other reason");
	assert_string_equal(cm_rej_reason_name(999), "other reason");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(req_encodes_to_golden_bytes),
		cmocka_unit_test(req_decodes_from_golden_bytes),
		cmocka_unit_test(req_reserved_bits_are_ignored),
		cmocka_unit_test(req_alternate_path_round_trip),
		cmocka_unit_test(rep_fields_and_round_trip),
		cmocka_unit_test(rej_mra_fields_and_round_trip),
		cmocka_unit_test(rtu_dreq_drep_sidr_round_trip),
		cmocka_unit_test(decode_refuses_bad_lengths),
		cmocka_unit_test(decode_refuses_bad_headers),
		cmocka_unit_test(decode_refuses_bad_req_fields),
		cmocka_unit_test(decode_refuses_bad_fields_of_other_messages),
		cmocka_unit_test(encode_refuses_wide_fields),
		cmocka_unit_test(ip_header_ipv6_with_user_data),
		cmocka_unit_test(ip_header_refusals),
		cmocka_unit_test(service_ids_and_addresses),
		cmocka_unit_test(timers_as_ib_cm),
		cmocka_unit_test(grh_ipv6_and_ipv4),
		cmocka_unit_test(names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
