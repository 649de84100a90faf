// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for rdmagate-mux's routing core (mux/router.c): MAD
 * bytes and GRH GIDs from the wire, and MAD_SEND datagrams from workers
 * (through the protocol decoder, common/mux_proto.c), into the routing
 * decisions, with the id table learning, refreshing and expiring on a
 * clock the input drives, and at the end worker 1's farewells (the CM
 * messages that close its connections once it died).  Any input must be
 * decided without a crash or leak, and every decision must be consistent
 * (checked below).
 *
 * Input: a sequence of records (tests/fuzz/mux/gen-seeds.py writes seeds)
 *   sel(1) dt(1) n(1) sgid(16) dgid(16) mad(n + 1 bytes, cut by the end)
 *   sel bit 0: 0 = from the wire, 1 = from a worker
 *       bit 1: wire: port 0 or 1; worker: worker 1 or 2
 *       bits 2-3: wire: dgid = A, B, the record's, or none (no owner at
 *                 the receive index); worker: sgid = A, B, the record's, A2
 *       bit 4: worker: the address is QP1 / GSI Q_Key (0) or QP 2 (1)
 *       bit 5: worker: dgid = the record's (0) or R
 *   dt: the clock advances dt * 1 s (so 60 s expiry is reachable).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/mux_proto.h"
#include "common/probes.h"
#include "mux/router.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t A[16] = { 0xfd, 0x99, [15] = 0x10 };
static const uint8_t B[16] = { 0xfd, 0x99, [15] = 0x11 };
static const uint8_t A2[16] = { 0xfd, 0x99, [15] = 0x12 };
static const uint8_t R[16] = { 0xfd, 0x99, [14] = 1, [15] = 0x20 };

static void check(const struct router_verdict *v, uint32_t dir)
{
	if (v->direction != dir || v->reason > RDMAGATE_MUX_DROP_MAX)
		abort();
	if (!v->reason && !v->worker_id)
		abort(); /* a route always names its worker */
	if (v->reason && !v->why[0])
		abort(); /* a drop always says why */
	if (!memchr(v->why, '\0', sizeof(v->why)))
		abort();
}

/*
 * Worker w died: every farewell (router_farewell()) must be a MAD the
 * router routes out as w's own, from w's GID, each connection once.
 */
static void farewell_all(struct router *r, uint32_t w, uint64_t now)
{
	struct router_verdict v;
	struct mp_mad_send s;
	uint32_t cursor = 0, n = 0;

	while (router_farewell(r, w, n, now, &cursor, &s)) {
		if (++n > router_id_count(r))
			abort(); /* more than one per connection */
		router_outgoing(r, w, &s, now, &v);
		check(&v, RDMAGATE_MUX_OUT);
		if (v.reason)
			abort();
		router_account(r, &v);
	}
	cursor = 0;
	if (router_farewell(r, w, 0, now, &cursor, &s))
		abort(); /* said twice */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct router_config c;
	struct router *r;
	uint64_t now = 0;
	int p0, p1;
	size_t off = 0;
	struct mp_stats st;

	router_config_default(&c);
	c.max_ids = 16;
	c.max_ids_per_worker = 8;
	c.max_workers = 4;
	c.max_gids = 8;
	c.hash_seed = 1;
	r = router_new(&c);
	if (!r)
		abort();
	p0 = router_port_add(r, "rxe0", 1, 1);
	p1 = router_port_add(r, "rxe1", 1, 1);
	if (p0 < 0 || p1 < 0 || router_worker_add(r, 1) ||
	    router_worker_add(r, 2) || router_gid_add(r, 1, p0, A, 3) ||
	    router_gid_add(r, 2, p1, B, 4) || router_gid_add(r, 1, p1, A2, 5))
		abort();

	while (size - off >= 35) {
		uint8_t sel = data[off], n = data[off + 2];
		const uint8_t *sgid = data + off + 3, *dgid = data + off + 19;
		size_t len = (size_t)n + 1;
		struct router_verdict v;

		now += (uint64_t)data[off + 1] * 1000;
		off += 35;
		if (len > size - off)
			len = size - off;
		if (!(sel & 1)) {
			static const uint8_t *const d[] = { A, B, NULL, NULL };
			const uint8_t *dg = d[(sel >> 2) & 3];

			if (((sel >> 2) & 3) == 2)
				dg = dgid;
			router_incoming(r, sel & 2 ? p1 : p0, sgid, dg,
					data + off, len, now, &v);
			check(&v, RDMAGATE_MUX_IN);
			router_account(r, &v);
		} else {
			static const uint8_t *const s[] = { A, B, NULL, A2 };
			uint8_t buf[MP_MSG_MAX];
			struct mp_msg m, out;
			size_t wl;

			mp_init(&m, MP_MAD_SEND);
			memcpy(m.u.mad_send.sgid,
			       ((sel >> 2) & 3) == 2 ? sgid : s[(sel >> 2) & 3],
			       16);
			memcpy(m.u.mad_send.dgid, sel & 0x20 ? R : dgid, 16);
			m.u.mad_send.remote_qpn = sel & 0x10 ? 2 : 1;
			m.u.mad_send.remote_qkey = 0x80010000u;
			m.u.mad_send.mad_len = (uint32_t)len;
			memcpy(m.u.mad_send.mad, data + off, len);
			memcpy(buf, &m.h, sizeof(m.h));
			memcpy(buf + sizeof(m.h), &m.u, m.h.len);
			wl = sizeof(m.h) + m.h.len;
			if (mp_decode(buf, wl, MP_FROM_WORKER, &out, NULL) ==
			    0) {
				router_outgoing(r, sel & 2 ? 2 : 1,
						&out.u.mad_send, now, &v);
				check(&v, RDMAGATE_MUX_OUT);
				/* a route out goes from the sender's GID */
				if (!v.reason &&
				    memcmp(router_gid_at(r, v.port_id,
							 v.host_gid_index),
					   out.u.mad_send.sgid, 16))
					abort();
				router_account(r, &v);
			} else if (len >= MP_MAD_HDR) {
				abort(); /* a well-formed MAD_SEND */
			}
		}
		off += len;
	}
	farewell_all(r, 1, now);
	router_expire(r, now + 1);
	if (router_id_count(r) > c.max_ids)
		abort();
	if (router_stats(r, 0, &st) || st.dropped[0])
		abort();
	router_worker_del(r, 1);
	router_worker_del(r, 2);
	if (router_id_count(r) != 0)
		abort();
	router_free(r);
	return 0;
}
