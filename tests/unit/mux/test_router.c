// SPDX-License-Identifier: MIT
/*
 * rdmagate-mux's routing core (mux/router.c): every routing rule, the
 * spoof refusals, the id table's expiry on time and its bounds, two
 * workers using the same communication ids, the counters, and the CM
 * messages that close a dead worker's connections (router_farewell()).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/cleanup.h"
#include "common/probes.h"
#include "mux/router.h"

/* Worker 1 owns A (port 0, index 3), worker 2 owns B (port 1, index 4);
 * R is a remote host's GID nobody here owns. */
static const uint8_t A[16] = { 0xfd, 0x99, [15] = 0x10 };
static const uint8_t B[16] = { 0xfd, 0x99, [15] = 0x11 };
static const uint8_t R[16] = { 0xfd, 0x99, [14] = 1, [15] = 0x20 };
static const uint8_t A2[16] = { 0xfd, 0x99, [15] = 0x12 };

struct fx {
	struct router *r;
	int p0, p1;
};

static struct router *new_router(uint32_t max_ids, uint32_t per_worker)
{
	struct router_config c;
	struct router *r;

	router_config_default(&c);
	c.max_ids = max_ids;
	c.max_ids_per_worker = per_worker;
	c.hash_seed = 0x1234;
	r = router_new(&c);
	assert_non_null(r);
	return r;
}

static int setup_n(void **state, uint32_t max_ids, uint32_t per_worker)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->r = new_router(max_ids, per_worker);
	f->p0 = router_port_add(f->r, "rxe0", 1, 1);
	f->p1 = router_port_add(f->r, "rxe1", 1, 1);
	assert_true(f->p0 >= 0 && f->p1 >= 0 && f->p0 != f->p1);
	assert_int_equal(router_worker_add(f->r, 1), 0);
	assert_int_equal(router_worker_add(f->r, 2), 0);
	assert_int_equal(router_gid_add(f->r, 1, f->p0, A, 3), 0);
	assert_int_equal(router_gid_add(f->r, 2, f->p1, B, 4), 0);
	*state = f;
	return 0;
}

static int setup(void **state)
{
	return setup_n(state, 65536, 4096);
}

static int setup_small(void **state)
{
	return setup_n(state, 8, 4);
}

static int teardown(void **state)
{
	struct fx *f = *state;

	router_free(f->r);
	free(f);
	return 0;
}

/* ---- MAD builders -------------------------------------------------------- */

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void cm_mad(uint8_t mad[256], uint16_t attr, uint32_t local_id,
		   uint32_t remote_id)
{
	memset(mad, 0, 256);
	mad[0] = 1;
	mad[1] = ROUTER_CM_CLASS;
	mad[2] = ROUTER_CM_CLASS_VERSION;
	mad[3] = ROUTER_METHOD_SEND;
	memset(mad + 8, 0x77, 8); /* TID */
	mad[16] = (uint8_t)(attr >> 8);
	mad[17] = (uint8_t)attr;
	put32(mad + CM_OFF_LOCAL_COMM_ID, local_id);
	if (attr != CM_ATTR_REQ && attr != CM_ATTR_SIDR_REQ &&
	    attr != CM_ATTR_SIDR_REP)
		put32(mad + CM_OFF_REMOTE_COMM_ID, remote_id);
}

static void req_mad(uint8_t mad[256], uint32_t local_id, const uint8_t *from,
		    const uint8_t *to)
{
	cm_mad(mad, CM_ATTR_REQ, local_id, 0);
	memcpy(mad + CM_OFF_REQ_PRI_LOCAL_GID, from, 16);
	memcpy(mad + CM_OFF_REQ_PRI_REMOTE_GID, to, 16);
}

static void send_of(struct mp_mad_send *s, const uint8_t *sgid,
		    const uint8_t *dgid, const uint8_t mad[256])
{
	memset(s, 0, sizeof(*s));
	memcpy(s->sgid, sgid, 16);
	memcpy(s->dgid, dgid, 16);
	s->remote_qpn = ROUTER_GSI_QPN;
	s->remote_qkey = ROUTER_GSI_QKEY;
	s->hop_limit = 64;
	s->mad_len = 256;
	memcpy(s->mad, mad, 256);
}

/* Worker w sends mad from sgid to dgid at t; returns the reason. */
static uint32_t out(struct fx *f, uint32_t w, const uint8_t *sgid,
		    const uint8_t *dgid, const uint8_t mad[256], uint64_t t,
		    struct router_verdict *v)
{
	struct mp_mad_send s;

	send_of(&s, sgid, dgid, mad);
	router_outgoing(f->r, w, &s, t, v);
	router_account(f->r, v);
	return v->reason;
}

/* mad arrives on port from sgid to dgid at t; returns the reason. */
static uint32_t in(struct fx *f, int port, const uint8_t *sgid,
		   const uint8_t *dgid, const uint8_t *mad, size_t len,
		   uint64_t t, struct router_verdict *v)
{
	router_incoming(f->r, port, sgid, dgid, mad, len, t, v);
	router_account(f->r, v);
	return v->reason;
}

#define assert_reason(got, want)                                               \
	do {                                                                   \
		uint32_t g_ = (got), w_ = (want);                              \
		if (g_ != w_)                                                  \
			fail_msg("reason %s (%u), want %s (%u)",               \
				 router_reason_name(g_), g_,                   \
				 router_reason_name(w_), w_);                  \
	} while (0)

/* ---- REQ and SIDR_REQ: by the path / the destination GID ---------------- */

static void test_req_by_path(void **state)
{
	struct fx *f = *state;
	struct router_verdict v;
	uint8_t mad[256];

	/* from a remote host to B: worker 2 */
	req_mad(mad, 0xabcd, R, B);
	assert_reason(in(f, f->p1, R, B, mad, 256, 0, &v), 0);
	assert_int_equal(v.worker_id, 2);
	assert_int_equal(v.direction, RDMAGATE_MUX_IN);
	assert_int_equal(v.mgmt_class, 0x07);
	assert_int_equal(v.attr_id, CM_ATTR_REQ);
	/* the path's remote GID must be the GRH's destination */
	req_mad(mad, 0xabcd, R, A);
	assert_reason(in(f, f->p1, R, B, mad, 256, 0, &v),
		      RDMAGATE_MUX_DROP_PATH);
	assert_int_equal(v.worker_id, 2); /* blamed on the owner of B */
	assert_non_null(strstr(v.why, "REQ primary path"));
	/* and its local GID the GRH's source */
	req_mad(mad, 0xabcd, A, B);
	assert_reason(in(f, f->p1, R, B, mad, 256, 0, &v),
		      RDMAGATE_MUX_DROP_PATH);
	/* B on the other port is nobody's */
	req_mad(mad, 0xabcd, R, B);
	assert_reason(in(f, f->p0, R, B, mad, 256, 0, &v),
		      RDMAGATE_MUX_DROP_UNKNOWN_GID);
}

static void test_sidr_req_by_dgid(void **state)
{
	struct fx *f = *state;
	struct router_verdict v;
	uint8_t mad[256];

	cm_mad(mad, CM_ATTR_SIDR_REQ, 0x99, 0);
	assert_reason(in(f, f->p0, R, A, mad, 256, 0, &v), 0);
	assert_int_equal(v.worker_id, 1);
	assert_reason(in(f, f->p1, R, B, mad, 256, 0, &v), 0);
	assert_int_equal(v.worker_id, 2);
}

static void test_unknown_gid(void **state)
{
	struct fx *f = *state;
	struct router_verdict v;
	uint8_t mad[256];

	req_mad(mad, 1, R, R);
	assert_reason(in(f, f->p0, R, R, mad, 256, 0, &v),
		      RDMAGATE_MUX_DROP_UNKNOWN_GID);
	assert_int_equal(v.worker_id, 0);
	assert_non_null(strstr(v.why, "fd99::120"));
	/* the receive GID index holds no worker's GID */
	assert_reason(in(f, f->p0, R, NULL, mad, 256, 0, &v),
		      RDMAGATE_MUX_DROP_UNKNOWN_GID);
	/* a port never added */
	assert_reason(in(f, 17, R, A, mad, 256, 0, &v),
		      RDMAGATE_MUX_DROP_UNKNOWN_GID);
	/* router_gid_at() maps the receive index back to the full GID */
	assert_memory_equal(router_gid_at(f->r, f->p0, 3), A, 16);
	assert_memory_equal(router_gid_at(f->r, f->p1, 4), B, 16);
	assert_null(router_gid_at(f->r, f->p0, 4));
}

/* ---- by comm id, learned from the guests' own sends ---------------------- */

static void test_req_then_every_reply(void **state)
{
	static const uint16_t by_id[] = { CM_ATTR_REP,	CM_ATTR_MRA,
					  CM_ATTR_REJ,	CM_ATTR_RTU,
					  CM_ATTR_DREQ, CM_ATTR_DREP,
					  CM_ATTR_LAP,	CM_ATTR_APR };
	struct fx *f = *state;
	struct router_verdict v;
	uint8_t mad[256];
	size_t i;

	/* worker 1's guest sends a REQ from A to R with comm id 0x1234 */
	req_mad(mad, 0x1234, A, R);
	assert_reason(out(f, 1, A, R, mad, 0, &v), 0);
	assert_int_equal(v.direction, RDMAGATE_MUX_OUT);
	assert_int_equal(v.port_id, f->p0);
	assert_int_equal(v.host_gid_index, 3);
	assert_int_equal(router_id_count(f->r), 1);
	/* every answer with remote comm id 0x1234 reaches worker 1 */
	for (i = 0; i < ARRAY_SIZE(by_id); i++) {
		char an[16];

		cm_mad(mad, by_id[i], 0x5678, 0x1234);
		if (in(f, f->p0, R, A, mad, 256, 10, &v) != 0)
			fail_msg("%s: %s", router_attr_name(by_id[i], an),
				 v.why);
		assert_int_equal(v.worker_id, 1);
		assert_int_equal(v.attr_id, by_id[i]);
	}
	/* another id, or the right id on the wrong GID: nobody's */
	cm_mad(mad, CM_ATTR_REP, 0x5678, 0x1235);
	assert_reason(in(f, f->p0, R, A, mad, 256, 10, &v),
		      RDMAGATE_MUX_DROP_UNKNOWN_ID);
	assert_int_equal(v.worker_id, 1);
	cm_mad(mad, CM_ATTR_REP, 0x5678, 0x1234);
	assert_reason(in(f, f->p1, R, B, mad, 256, 10, &v),
		      RDMAGATE_MUX_DROP_UNKNOWN_ID);
	/* a REP is not routed by the path: no REQ-only rule leaks */
	assert_reason(in(f, f->p1, R, B, mad, 256, 10, &v),
		      RDMAGATE_MUX_DROP_UNKNOWN_ID);
}

static void test_passive_side_learns_from_rep(void **state)
{
	struct fx *f = *state;
	struct router_verdict v;
	uint8_t mad[256];

	/* a REQ from R reaches B's worker; its guest answers REP with its
	 * own comm id 0x2222 */
	req_mad(mad, 0x1111, R, B);
	assert_reason(in(f, f->p1, R, B, mad, 256, 0, &v), 0);
	cm_mad(mad, CM_ATTR_REP, 0x2222, 0x1111);
	assert_reason(out(f, 2, B, R, mad, 1, &v), 0);
	assert_int_equal(v.port_id, f->p1);
	assert_int_equal(v.host_gid_index, 4);
	/* the RTU and, later, the DREQ come back by 0x2222 */
	cm_mad(mad, CM_ATTR_RTU, 0x1111, 0x2222);
	assert_reason(in(f, f->p1, R, B, mad, 256, 2, &v), 0);
	assert_int_equal(v.worker_id, 2);
	cm_mad(mad, CM_ATTR_DREQ, 0x1111, 0x2222);
	assert_reason(in(f, f->p1, R, B, mad, 256, 3, &v), 0);
	assert_int_equal(v.worker_id, 2);
}

static void test_sidr(void **state)
{
	struct fx *f = *state;
	struct router_verdict v;
	uint8_t mad[256];

	cm_mad(mad, CM_ATTR_SIDR_REQ, 0x55, 0);
	assert_reason(out(f, 1, A, R, mad, 0, &v), 0);
	cm_mad(mad, CM_ATTR_SIDR_REP, 0x55, 0);
	assert_reason(in(f, f->p0, R, A, mad, 256, 1, &v), 0);
	assert_int_equal(v.worker_id, 1);
	cm_mad(mad, CM_ATTR_SIDR_REP, 0x56, 0);
	assert_reason(in(f, f->p0, R, A, mad, 256, 1, &v),
		      RDMAGATE_MUX_DROP_UNKNOWN_ID);
	/* a SIDR request id is not a comm id: a REP for 0x55 is nobody's */
	cm_mad(mad, CM_ATTR_REP, 0x1, 0x55);
	assert_reason(in(f, f->p0, R, A, mad, 256, 1, &v),
		      RDMAGATE_MUX_DROP_UNKNOWN_ID);
	/* a SIDR_REP the guest sends teaches nothing */
	cm_mad(mad, CM_ATTR_SIDR_REP, 0x77, 0);
	assert_reason(out(f, 1, A, R, mad, 2, &v), 0);
	assert_int_equal(router_id_count(f->r), 1);
}

/* Two guests pick the same comm id: keyed by (their GID, id), no clash. */
static void test_same_comm_id_two_workers(void **state)
{
	struct fx *f = *state;
	struct router_verdict v;
	uint8_t mad[256];

	req_mad(mad, 0x42, A, R);
	assert_reason(out(f, 1, A, R, mad, 0, &v), 0);
	req_mad(mad, 0x42, B, R);
	assert_reason(out(f, 2, B, R, mad, 0, &v), 0);
	assert_int_equal(router_id_count(f->r), 2);
	cm_mad(mad, CM_ATTR_REP, 0x9, 0x42);
	assert_reason(in(f, f->p0, R, A, mad, 256, 1, &v), 0);
	assert_int_equal(v.worker_id, 1);
	assert_reason(in(f, f->p1, R, B, mad, 256, 1, &v), 0);
	assert_int_equal(v.worker_id, 2);
	/* worker 1 goes: only its entry goes */
	assert_int_equal(router_worker_del(f->r, 1), 0);
	assert_int_equal(router_id_count(f->r), 1);
	assert_reason(in(f, f->p0, R, A, mad, 256, 2, &v),
		      RDMAGATE_MUX_DROP_UNKNOWN_GID);
	assert_reason(in(f, f->p1, R, B, mad, 256, 2, &v), 0);
	assert_int_equal(v.worker_id, 2);
}

/* ---- refusals of what workers send --------------------------------------- */

static void test_spoof(void **state)
{
	struct fx *f = *state;
	struct router_verdict v;
	struct mp_stats st;
	uint8_t mad[256];

	/* worker 1 sends from B, worker 2's GID */
	req_mad(mad, 0x1, B, R);
	assert_reason(out(f, 1, B, R, mad, 0, &v), RDMAGATE_MUX_DROP_SPOOF);
	assert_int_equal(v.worker_id, 1);
	assert_non_null(strstr(v.why, "fd99::11"));
	/* from a GID nobody owns */
	assert_reason(out(f, 1, R, B, mad, 0, &v), RDMAGATE_MUX_DROP_SPOOF);
	/* from its own GID, but the REQ's path names B as its side */
	req_mad(mad, 0x1, B, R);
	assert_reason(out(f, 1, A, R, mad, 0, &v), RDMAGATE_MUX_DROP_SPOOF);
	/* an alternate path from B */
	req_mad(mad, 0x1, A, R);
	memcpy(mad + CM_OFF_REQ_ALT_LOCAL_GID, B, 16);
	assert_reason(out(f, 1, A, R, mad, 0, &v), RDMAGATE_MUX_DROP_SPOOF);
	/* a LAP moving the alternate path to B */
	cm_mad(mad, CM_ATTR_LAP, 0x1, 0x2);
	memcpy(mad + CM_OFF_LAP_ALT_LOCAL_GID, B, 16);
	assert_reason(out(f, 1, A, R, mad, 0, &v), RDMAGATE_MUX_DROP_SPOOF);
	/* its own second GID in the alternate path is fine */
	assert_int_equal(router_gid_add(f->r, 1, f->p1, A2, 5), 0);
	req_mad(mad, 0x1, A, R);
	memcpy(mad + CM_OFF_REQ_ALT_LOCAL_GID, A2, 16);
	assert_reason(out(f, 1, A, R, mad, 0, &v), 0);
	/* the REQ's remote GID must be where it goes */
	req_mad(mad, 0x1, A, R);
	assert_reason(out(f, 1, A, B, mad, 0, &v), RDMAGATE_MUX_DROP_PATH);
	/* nothing was learned from the refused sends */
	assert_int_equal(router_id_count(f->r), 1);
	assert_int_equal(router_stats(f->r, 1, &st), 0);
	assert_int_equal(st.refused_spoofs, 5);
	assert_int_equal(st.dropped[RDMAGATE_MUX_DROP_SPOOF], 5);
	assert_int_equal(st.dropped[RDMAGATE_MUX_DROP_PATH], 1);
	assert_int_equal(st.routed_out, 1);
	assert_int_equal(router_stats(f->r, 2, &st), 0);
	assert_int_equal(st.refused_spoofs, 0);
	/* a worker the broker never attached */
	assert_reason(out(f, 9, A, R, mad, 0, &v),
		      RDMAGATE_MUX_DROP_WORKER_GONE);
}

static void test_address(void **state)
{
	struct fx *f = *state;
	struct router_verdict v;
	struct mp_mad_send s;
	uint8_t mad[256];
	static const uint8_t mc[16] = { 0xff, 0x02, [15] = 1 };
	static const uint8_t zero[16];

	req_mad(mad, 0x1, A, R);
	send_of(&s, A, R, mad);
	s.remote_qpn = 2;
	router_outgoing(f->r, 1, &s, 0, &v);
	assert_reason(v.reason, RDMAGATE_MUX_DROP_ADDRESS);
	send_of(&s, A, R, mad);
	s.remote_qkey = 0x12345678;
	router_outgoing(f->r, 1, &s, 0, &v);
	assert_reason(v.reason, RDMAGATE_MUX_DROP_ADDRESS);
	assert_non_null(strstr(v.why, "Q_Key 0x12345678"));
	send_of(&s, A, mc, mad);
	router_outgoing(f->r, 1, &s, 0, &v);
	assert_reason(v.reason, RDMAGATE_MUX_DROP_ADDRESS);
	send_of(&s, A, zero, mad);
	router_outgoing(f->r, 1, &s, 0, &v);
	assert_reason(v.reason, RDMAGATE_MUX_DROP_ADDRESS);
	send_of(&s, A, R, mad);
	s.pkey_index = 1; /* the port has one P_Key */
	router_outgoing(f->r, 1, &s, 0, &v);
	assert_reason(v.reason, RDMAGATE_MUX_DROP_ADDRESS);
	assert_int_equal(router_id_count(f->r), 0);
}

static void test_class_attr_length(void **state)
{
	struct fx *f = *state;
	struct router_verdict v;
	struct mp_mad_send s;
	uint8_t mad[256];

	/* an SA query (class 0x03), a CM Get, CM version 1, base version 2 */
	static const struct {
		int off;
		uint8_t val;
	} bad[] = { { 1, 0x03 }, { 3, 0x01 }, { 2, 1 }, { 0, 2 } };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		req_mad(mad, 0x1, R, A);
		mad[bad[i].off] = bad[i].val;
		assert_reason(in(f, f->p0, R, A, mad, 256, 0, &v),
			      RDMAGATE_MUX_DROP_CLASS);
		req_mad(mad, 0x1, A, R);
		mad[bad[i].off] = bad[i].val;
		assert_reason(out(f, 1, A, R, mad, 0, &v),
			      RDMAGATE_MUX_DROP_CLASS);
	}
	/* ClassPortInfo and an unknown attribute */
	cm_mad(mad, CM_ATTR_CLASS_PORT_INFO, 0, 0);
	assert_reason(in(f, f->p0, R, A, mad, 256, 0, &v),
		      RDMAGATE_MUX_DROP_ATTR);
	assert_non_null(strstr(v.why, "ClassPortInfo"));
	cm_mad(mad, 0x0042, 0, 0);
	assert_reason(out(f, 1, A, R, mad, 0, &v), RDMAGATE_MUX_DROP_ATTR);
	assert_non_null(strstr(v.why, "attr 0x0042"));
	/* too short: for the header, and for a REQ's path */
	req_mad(mad, 0x1, R, A);
	assert_reason(in(f, f->p0, R, A, mad, 23, 0, &v),
		      RDMAGATE_MUX_DROP_MALFORMED);
	assert_int_equal(v.attr_id, 0);
	assert_reason(in(f, f->p0, R, A, mad, 0, 0, &v),
		      RDMAGATE_MUX_DROP_MALFORMED);
	assert_reason(in(f, f->p0, R, A, mad, 24 + 100, 0, &v),
		      RDMAGATE_MUX_DROP_MALFORMED);
	req_mad(mad, 0x1, A, R);
	send_of(&s, A, R, mad);
	s.mad_len = 24 + 139;
	memset(s.mad + s.mad_len, 0, 256 - s.mad_len);
	router_outgoing(f->r, 1, &s, 0, &v);
	assert_reason(v.reason, RDMAGATE_MUX_DROP_MALFORMED);
	/* a REJ without a local id is sent, and teaches nothing */
	cm_mad(mad, CM_ATTR_REJ, 0, 0x9);
	assert_reason(out(f, 1, A, R, mad, 0, &v), 0);
	assert_int_equal(router_id_count(f->r), 0);
}

/* ---- the id table: expiry on time, bounds -------------------------------- */

static void test_expiry_on_time(void **state)
{
	struct fx *f = *state;
	struct router_verdict v;
	uint8_t mad[256];

	req_mad(mad, 0x10, A, R);
	assert_reason(out(f, 1, A, R, mad, 0, &v), 0);
	req_mad(mad, 0x20, A, R);
	assert_reason(out(f, 1, A, R, mad, 30000, &v), 0);
	/* busy traffic for 0x20 (and the whole mux) ... */
	cm_mad(mad, CM_ATTR_MRA, 0x9, 0x20);
	assert_reason(in(f, f->p0, R, A, mad, 256, 59999, &v), 0);
	/* ... does not keep 0x10 alive: 60 s after its last use it is gone */
	cm_mad(mad, CM_ATTR_REP, 0x9, 0x10);
	assert_reason(in(f, f->p0, R, A, mad, 256, 60000, &v),
		      RDMAGATE_MUX_DROP_UNKNOWN_ID);
	/* 0x20, used at 59.999 s, lives until 119.999 s; each use renews */
	cm_mad(mad, CM_ATTR_REP, 0x9, 0x20);
	assert_reason(in(f, f->p0, R, A, mad, 256, 119998, &v), 0);
	assert_reason(in(f, f->p0, R, A, mad, 256, 179997, &v), 0);
	assert_int_equal(router_expire(f->r, 239996), 0);
	assert_int_equal(router_id_count(f->r), 1);
	assert_int_equal(router_expire(f->r, 239997), 1);
	assert_reason(in(f, f->p0, R, A, mad, 256, 239997, &v),
		      RDMAGATE_MUX_DROP_UNKNOWN_ID);
	assert_int_equal(router_id_count(f->r), 0);
}

static void test_established_lives_longer(void **state)
{
	struct fx *f = *state;
	struct router_verdict v;
	uint8_t mad[256];
	const uint64_t hour = 3600 * 1000ull;

	req_mad(mad, 0x10, A, R);
	assert_reason(out(f, 1, A, R, mad, 0, &v), 0);
	cm_mad(mad, CM_ATTR_REP, 0x9, 0x10);
	assert_reason(in(f, f->p0, R, A, mad, 256, 1, &v), 0);
	cm_mad(mad, CM_ATTR_RTU, 0x10, 0x9);
	assert_reason(out(f, 1, A, R, mad, 2, &v), 0);
	/* an hour later the peer disconnects: the DREQ still routes */
	cm_mad(mad, CM_ATTR_DREQ, 0x9, 0x10);
	assert_reason(in(f, f->p0, R, A, mad, 256, hour, &v), 0);
	/* closing: back to the short lifetime */
	cm_mad(mad, CM_ATTR_DREP, 0x10, 0x9);
	assert_reason(out(f, 1, A, R, mad, hour + 1, &v), 0);
	assert_int_equal(router_expire(f->r, hour + 60000), 0);
	assert_int_equal(router_expire(f->r, hour + 60001), 1);
	/* an established entry expires too: after conn_ttl */
	req_mad(mad, 0x30, A, R);
	assert_reason(out(f, 1, A, R, mad, 0, &v), 0);
	cm_mad(mad, CM_ATTR_RTU, 0x9, 0x30);
	assert_reason(in(f, f->p0, R, A, mad, 256, 5, &v), 0);
	assert_int_equal(router_expire(f->r, 24 * hour + 4), 0);
	assert_int_equal(router_expire(f->r, 24 * hour + 5), 1);
}

static void test_table_bounds(void **state)
{
	struct fx *f = *state; /* 8 ids, 4 per worker */
	struct router_verdict v;
	struct mp_stats st;
	uint8_t mad[256];
	uint32_t i;

	assert_int_equal(router_worker_add(f->r, 3), 0);
	assert_int_equal(router_gid_add(f->r, 3, f->p0, A2, 6), 0);
	for (i = 0; i < 4; i++) {
		req_mad(mad, 0x100 + i, A, R);
		assert_reason(out(f, 1, A, R, mad, i, &v), 0);
	}
	/* worker 1's share is full: its new ids are refused, not evicted */
	req_mad(mad, 0x200, A, R);
	assert_reason(out(f, 1, A, R, mad, 10, &v),
		      RDMAGATE_MUX_DROP_TABLE_FULL);
	assert_non_null(strstr(v.why, "its share"));
	/* a known id is refreshed, not refused */
	req_mad(mad, 0x100, A, R);
	assert_reason(out(f, 1, A, R, mad, 11, &v), 0);
	/* the others are not hurt by worker 1's full share */
	for (i = 0; i < 4; i++) {
		req_mad(mad, 0x100 + i, B, R);
		assert_reason(out(f, 2, B, R, mad, 12, &v), 0);
	}
	/* the whole table is full (8): worker 3 is refused */
	req_mad(mad, 0x300, A2, R);
	assert_reason(out(f, 3, A2, R, mad, 13, &v),
		      RDMAGATE_MUX_DROP_TABLE_FULL);
	assert_non_null(strstr(v.why, "the id table is full"));
	/* every old entry still routes */
	cm_mad(mad, CM_ATTR_REP, 0x9, 0x101);
	assert_reason(in(f, f->p0, R, A, mad, 256, 14, &v), 0);
	/* once worker 1's entries expire (60 s after last use; 0x100 and
	 * 0x101 were used later), room again */
	req_mad(mad, 0x300, A2, R);
	assert_reason(out(f, 3, A2, R, mad, 60003, &v), 0);
	assert_int_equal(router_id_count(f->r), 7);
	assert_int_equal(router_stats(f->r, 1, &st), 0);
	assert_int_equal(st.dropped[RDMAGATE_MUX_DROP_TABLE_FULL], 1);
	assert_int_equal(router_stats(f->r, 3, &st), 0);
	assert_int_equal(st.dropped[RDMAGATE_MUX_DROP_TABLE_FULL], 1);
}

/* Many entries, half expiring: the probe chains stay intact. */
static void test_hash_chains(void **state)
{
	struct router *r = new_router(512, 512);
	struct router_verdict v;
	struct mp_mad_send s;
	uint8_t mad[256];
	int p = router_port_add(r, "rxe0", 1, 1);
	uint32_t i;

	assert_int_equal(router_worker_add(r, 1), 0);
	assert_int_equal(router_gid_add(r, 1, p, A, 1), 0);
	for (i = 0; i < 512; i++) {
		req_mad(mad, i * 7919u, A, R);
		send_of(&s, A, R, mad);
		router_outgoing(r, 1, &s, i % 2 ? 1000 : 0, &v);
		assert_reason(v.reason, 0);
	}
	assert_int_equal(router_id_count(r), 512);
	assert_int_equal(router_expire(r, 60000), 256);
	for (i = 0; i < 512; i++) {
		cm_mad(mad, CM_ATTR_REP, 1, i * 7919u);
		router_incoming(r, p, R, A, mad, 256, 60001, &v);
		assert_reason(v.reason,
			      i % 2 ? 0 : RDMAGATE_MUX_DROP_UNKNOWN_ID);
	}
	assert_int_equal(router_worker_del(r, 1), 0);
	assert_int_equal(router_id_count(r), 0);
	router_free(r);
}

/* ---- the broker's tables and the counters -------------------------------- */

static void test_gid_table(void **state)
{
	struct fx *f = *state;
	struct router_verdict v;
	static const uint8_t zero[16];
	uint8_t mad[256];

	/* the same again is fine; B to worker 1 or at another index is not */
	assert_int_equal(router_gid_add(f->r, 2, f->p1, B, 4), 0);
	assert_int_equal(router_gid_add(f->r, 1, f->p1, B, 4), -EEXIST);
	assert_int_equal(router_gid_add(f->r, 2, f->p1, B, 5), -EEXIST);
	/* index 4 of port 1 holds B */
	assert_int_equal(router_gid_add(f->r, 1, f->p1, A2, 4), -EEXIST);
	assert_int_equal(router_gid_add(f->r, 9, f->p1, A2, 9), -ENOENT);
	assert_int_equal(router_gid_add(f->r, 1, 31, A2, 9), -ENOENT);
	assert_int_equal(router_gid_add(f->r, 1, f->p1, zero, 9), -EINVAL);
	assert_int_equal(router_gid_add(f->r, 1, f->p1, A2, 256), -EINVAL);
	/* ids learned on a GID go with it */
	req_mad(mad, 0x42, B, R);
	assert_reason(out(f, 2, B, R, mad, 0, &v), 0);
	assert_int_equal(router_gid_del(f->r, 1, B), -ENOENT);
	assert_int_equal(router_gid_del(f->r, 2, B), 0);
	assert_int_equal(router_id_count(f->r), 0);
	assert_reason(out(f, 2, B, R, mad, 0, &v), RDMAGATE_MUX_DROP_SPOOF);
	/* now worker 1 may have it */
	assert_int_equal(router_gid_add(f->r, 1, f->p1, B, 4), 0);
	assert_reason(out(f, 1, B, R, mad, 0, &v), 0);
	/* workers and ports */
	assert_int_equal(router_worker_add(f->r, 1), -EEXIST);
	assert_int_equal(router_worker_add(f->r, 0), -EINVAL);
	assert_int_equal(router_worker_del(f->r, 5), -ENOENT);
	assert_int_equal(router_port_add(f->r, "rxe0", 1, 1), f->p0);
	assert_int_equal(router_port_find(f->r, "rxe1", 1), f->p1);
	assert_int_equal(router_port_find(f->r, "rxe1", 2), -ENOENT);
	assert_int_equal(router_port_add(f->r, "", 1, 1), -EINVAL);
	assert_int_equal(router_port_add(f->r, "rxe0", 0, 1), -EINVAL);
}

static void test_counters(void **state)
{
	struct fx *f = *state;
	struct router_verdict v;
	struct mp_stats st;
	uint8_t mad[256];

	req_mad(mad, 0x1, R, A);
	in(f, f->p0, R, A, mad, 256, 0, &v); /* routed in, worker 1 */
	in(f, f->p0, R, R, mad, 256, 0, &v); /* unknown GID: nobody's */
	req_mad(mad, 0x2, A, R);
	out(f, 1, A, R, mad, 0, &v); /* routed out */
	/* a drop decided after the router: the worker's socket is full */
	req_mad(mad, 0x3, R, B);
	router_incoming(f->r, f->p1, R, B, mad, 256, 0, &v);
	assert_reason(v.reason, 0);
	v.reason = RDMAGATE_MUX_DROP_WORKER_FULL;
	router_account(f->r, &v);
	assert_int_equal(router_stats(f->r, 1, &st), 0);
	assert_int_equal(st.routed_in, 1);
	assert_int_equal(st.routed_out, 1);
	assert_int_equal(router_stats(f->r, 2, &st), 0);
	assert_int_equal(st.routed_in, 0);
	assert_int_equal(st.dropped[RDMAGATE_MUX_DROP_WORKER_FULL], 1);
	assert_int_equal(router_stats(f->r, 0, &st), 0);
	assert_int_equal(st.routed_in, 1);
	assert_int_equal(st.routed_out, 1);
	assert_int_equal(st.dropped[RDMAGATE_MUX_DROP_UNKNOWN_GID], 1);
	assert_int_equal(st.dropped[RDMAGATE_MUX_DROP_WORKER_FULL], 1);
	assert_int_equal(router_stats(f->r, 77, &st), -ENOENT);
	assert_string_equal(router_reason_name(RDMAGATE_MUX_DROP_SPOOF),
			    "spoof");
	assert_string_equal(router_reason_name(0), "?");
	assert_string_equal(router_reason_name(999), "?");
}

static void test_config(void **state)
{
	struct router_config c;

	router_config_default(&c);
	c.max_ids_per_worker = c.max_ids + 1;
	assert_null(router_new(&c));
	assert_int_equal(errno, EINVAL);
	router_config_default(&c);
	c.id_ttl_ms = 0;
	assert_null(router_new(&c));
}

/* ---- router_farewell(): a dead worker's connections closed for it ------- */

static void put24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

/* All of worker w's farewells, at most max, into s; how many. */
static int farewells(struct fx *f, uint32_t w, uint64_t t,
		     struct mp_mad_send *s, int max)
{
	uint32_t cursor = 0;
	int n = 0;

	while (n < max && router_farewell(f->r, w, 0x1000 + (uint64_t)n, t,
					  &cursor, &s[n]))
		n++;
	return n;
}

static void assert_farewell(const struct mp_mad_send *s, uint16_t attr,
			    const uint8_t *sgid, const uint8_t *dgid,
			    uint32_t local, uint32_t remote)
{
	assert_int_equal(s->mad[0], 1);
	assert_int_equal(s->mad[1], ROUTER_CM_CLASS);
	assert_int_equal(s->mad[2], ROUTER_CM_CLASS_VERSION);
	assert_int_equal(s->mad[3], ROUTER_METHOD_SEND);
	assert_int_equal(s->mad[16] << 8 | s->mad[17], attr);
	assert_memory_equal(s->sgid, sgid, 16);
	assert_memory_equal(s->dgid, dgid, 16);
	assert_int_equal(s->remote_qpn, ROUTER_GSI_QPN);
	assert_int_equal(s->remote_qkey, ROUTER_GSI_QKEY);
	assert_int_equal(s->mad_len, 256);
	assert_int_equal(get32(s->mad + CM_OFF_LOCAL_COMM_ID), local);
	assert_int_equal(get32(s->mad + CM_OFF_REMOTE_COMM_ID), remote);
}

/* A's guest sends a REQ to R with comm id 0x1234. */
static void active_req(struct fx *f)
{
	struct router_verdict v;
	uint8_t mad[256];

	req_mad(mad, 0x1234, A, R);
	assert_reason(out(f, 1, A, R, mad, 0, &v), 0);
}

/* A REP to it from `from` with its comm id and QPN. */
static void rep_to_a(struct fx *f, const uint8_t *from, uint32_t peer_id,
		     uint32_t qpn)
{
	struct router_verdict v;
	uint8_t mad[256];

	cm_mad(mad, CM_ATTR_REP, peer_id, 0x1234);
	put24(mad + CM_OFF_REP_LOCAL_QPN, qpn);
	assert_reason(in(f, f->p0, from, A, mad, 256, 1, &v), 0);
}

static void test_farewell_active_established(void **state)
{
	struct fx *f = *state;
	struct router_verdict v;
	struct mp_mad_send s[4];
	uint8_t mad[256];

	/* A's guest connects to R: REQ, R's REP (comm id 0x5678, QPN
	 * 0x4242), RTU */
	active_req(f);
	assert_int_equal(farewells(f, 1, 1, s, 4), 0); /* R never answered */
	rep_to_a(f, R, 0x5678, 0x4242);
	cm_mad(mad, CM_ATTR_RTU, 0x1234, 0x5678);
	assert_reason(out(f, 1, A, R, mad, 2, &v), 0);
	/* worker 2 has nothing to say; worker 1 one DREQ naming R's QP */
	assert_int_equal(farewells(f, 2, 3, s, 4), 0);
	assert_int_equal(farewells(f, 1, 3, s, 4), 1);
	assert_farewell(&s[0], CM_ATTR_DREQ, A, R, 0x1234, 0x5678);
	assert_int_equal(get32(s[0].mad + CM_OFF_DREQ_REMOTE_QPN) >> 8, 0x4242);
	assert_int_equal(get32(s[0].mad + 8), 0);
	assert_int_equal(get32(s[0].mad + 12), 0x1000);
	/* which the router routes as the guest's own: from A's index 3 */
	router_outgoing(f->r, 1, &s[0], 3, &v);
	assert_reason(v.reason, 0);
	assert_int_equal(v.port_id, f->p0);
	assert_int_equal(v.host_gid_index, 3);
	/* said once */
	assert_int_equal(farewells(f, 1, 4, s, 4), 0);
}

/* R connects to B's guest: R's REQ (comm id 0x1111, QPN 0x777), another
 * REQ from R (0x1112, QPN 0x888), the guest's REP to the first. */
static void passive_connect(struct fx *f)
{
	struct router_verdict v;
	uint8_t mad[256];

	req_mad(mad, 0x1111, R, B);
	put24(mad + CM_OFF_REQ_LOCAL_QPN, 0x777);
	assert_reason(in(f, f->p1, R, B, mad, 256, 0, &v), 0);
	req_mad(mad, 0x1112, R, B);
	put24(mad + CM_OFF_REQ_LOCAL_QPN, 0x888);
	assert_reason(in(f, f->p1, R, B, mad, 256, 0, &v), 0);
	cm_mad(mad, CM_ATTR_REP, 0x2222, 0x1111);
	assert_reason(out(f, 2, B, R, mad, 1, &v), 0);
}

static void test_farewell_passive_half_open(void **state)
{
	struct fx *f = *state;
	struct mp_mad_send s[4];

	passive_connect(f);
	/* the guest sent its REP, R has not confirmed: a REJ */
	assert_int_equal(farewells(f, 2, 2, s, 4), 1);
	assert_farewell(&s[0], CM_ATTR_REJ, B, R, 0x2222, 0x1111);
	assert_int_equal(s[0].mad[CM_OFF_REJ_MSG_REJECTED] >> 6,
			 CM_REJ_MSG_OTHER);
	assert_int_equal(s[0].mad[CM_OFF_REJ_REASON] << 8 |
				 s[0].mad[CM_OFF_REJ_REASON + 1],
			 CM_REJ_CONSUMER_DEFINED);
}

static void test_farewell_passive_dreq(void **state)
{
	struct fx *f = *state;
	struct router_verdict v;
	struct mp_mad_send s[4];
	uint8_t mad[256];

	passive_connect(f);
	cm_mad(mad, CM_ATTR_RTU, 0x1111, 0x2222);
	assert_reason(in(f, f->p1, R, B, mad, 256, 2, &v), 0);
	/* a DREQ naming the QP of the REQ the guest answered, not the
	 * other one's */
	assert_int_equal(farewells(f, 2, 3, s, 4), 1);
	assert_farewell(&s[0], CM_ATTR_DREQ, B, R, 0x2222, 0x1111);
	assert_int_equal(get32(s[0].mad + CM_OFF_DREQ_REMOTE_QPN) >> 8, 0x777);
}

static void test_farewell_half_open_active(void **state)
{
	struct fx *f = *state;
	struct mp_mad_send s[4];

	active_req(f);
	/* a REP from another host does not name the peer */
	rep_to_a(f, A2, 0x6666, 0x99);
	assert_int_equal(farewells(f, 1, 1, s, 4), 0);
	rep_to_a(f, R, 0x5678, 0x4242);
	/* REP received, no RTU yet: a REJ of the REP */
	assert_int_equal(farewells(f, 1, 2, s, 4), 1);
	assert_farewell(&s[0], CM_ATTR_REJ, A, R, 0x1234, 0x5678);
	assert_int_equal(s[0].mad[CM_OFF_REJ_MSG_REJECTED] >> 6,
			 CM_REJ_MSG_REP);
}

static void test_farewell_closed_and_expired(void **state)
{
	struct fx *f = *state;
	struct router_verdict v;
	struct mp_mad_send s[4];
	uint8_t mad[256];
	uint32_t id;

	/* three connections of A's guest to R: one closed by a DREQ, one
	 * by R's REJ, one established */
	for (id = 1; id <= 3; id++) {
		req_mad(mad, id, A, R);
		assert_reason(out(f, 1, A, R, mad, 0, &v), 0);
		cm_mad(mad, CM_ATTR_REP, 0x100 + id, id);
		assert_reason(in(f, f->p0, R, A, mad, 256, 0, &v), 0);
		cm_mad(mad, CM_ATTR_RTU, id, 0x100 + id);
		assert_reason(out(f, 1, A, R, mad, 0, &v), 0);
	}
	cm_mad(mad, CM_ATTR_DREQ, 1, 0x101);
	assert_reason(out(f, 1, A, R, mad, 1, &v), 0);
	cm_mad(mad, CM_ATTR_DREQ, 0x102, 2);
	assert_reason(in(f, f->p0, R, A, mad, 256, 1, &v), 0);
	assert_int_equal(farewells(f, 1, 2, s, 4), 1);
	assert_farewell(&s[0], CM_ATTR_DREQ, A, R, 3, 0x103);
	/* after the GID is gone, nothing is left to close */
	req_mad(mad, 9, A, R);
	assert_reason(out(f, 1, A, R, mad, 3, &v), 0);
	cm_mad(mad, CM_ATTR_REP, 0x109, 9);
	assert_reason(in(f, f->p0, R, A, mad, 256, 3, &v), 0);
	assert_int_equal(router_gid_del(f->r, 1, A), 0);
	assert_int_equal(farewells(f, 1, 4, s, 4), 0);
}

#define T(f)	  cmocka_unit_test_setup_teardown(f, setup, teardown)
#define TSMALL(f) cmocka_unit_test_setup_teardown(f, setup_small, teardown)

int main(void)
{
	const struct CMUnitTest t[] = {
		T(test_req_by_path),
		T(test_sidr_req_by_dgid),
		T(test_unknown_gid),
		T(test_req_then_every_reply),
		T(test_passive_side_learns_from_rep),
		T(test_sidr),
		T(test_same_comm_id_two_workers),
		T(test_spoof),
		T(test_address),
		T(test_class_attr_length),
		T(test_expiry_on_time),
		T(test_established_lives_longer),
		TSMALL(test_table_bounds),
		cmocka_unit_test(test_hash_chains),
		T(test_gid_table),
		T(test_counters),
		cmocka_unit_test(test_config),
		T(test_farewell_active_established),
		T(test_farewell_passive_half_open),
		T(test_farewell_passive_dreq),
		T(test_farewell_half_open_active),
		T(test_farewell_closed_and_expired),
	};

	return cmocka_run_group_tests_name("mux_router", t, NULL, NULL);
}
