// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for rdmagate-mux's rdmacm-mux endpoint without its
 * sockets: QEMU records through the codec (common/rdmacm_mux_proto.c),
 * their destination (mux/rdmacm_route.c) and the router's decision
 * (mux/router.c), interleaved with MADs from the wire that teach the
 * destination table, on a clock the input drives.  Any input must be
 * decided without a crash or leak, and consistently (checked below).
 *
 * Input: a sequence of records (gen-seeds.py writes the seeds)
 *   sel(1) then
 *   sel bit 0 = 0: a QEMU record, RCM_MSG_SIZE bytes (cut by the end,
 *                  the rest zero)
 *   sel bit 0 = 1: a MAD from the wire: sgid(16) n(1) mad(n + 1 bytes),
 *                  delivered to our GID A (bit 1 = 0) or B (bit 1 = 1)
 *   sel bits 2-7: the clock advances that many seconds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/probes.h"
#include "common/rdmacm_mux_proto.h"
#include "mux/rdmacm_route.h"
#include "mux/router.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t A[16] = { 0xfd, 0x99, [15] = 0x10 };
static const uint8_t B[16] = { 0xfd, 0x99, [15] = 0x11 };

static void qemu_record(struct router *r, struct rcm_peers *p,
			const uint8_t *rec, uint64_t now)
{
	struct rcm_request req;
	struct router_verdict v;
	struct mp_mad_send s;
	struct reason why = { "" }, err = { "" };
	int dest;

	if (rcm_decode_request(rec, RCM_MSG_SIZE, &req, &err) < 0) {
		if (!err.msg[0])
			abort(); /* a refusal always says why */
		return;
	}
	if (req.op > RCM_OP_MAD || req.mad_len > RCM_MAD_SIZE)
		abort();
	if (req.op != RCM_OP_MAD) {
		if (req.op == RCM_OP_UNREG)
			rcm_peers_forget(p, req.sgid);
		return;
	}
	if (req.mad_len < RCM_MAD_HDR)
		abort();
	dest = rcm_mad_send(p, &req, now, &s, &why);
	if (dest < 0 && !why.msg[0])
		abort();
	router_outgoing(r, 1, &s, now, &v);
	if (v.direction != RDMAGATE_MUX_OUT || v.reason > RDMAGATE_MUX_DROP_MAX)
		abort();
	if (!v.reason) {
		/* a route goes from the sender's own GID to a real one */
		if (memcmp(s.sgid, A, 16) && memcmp(s.sgid, B, 16))
			abort();
		if (dest < 0)
			abort();
	}
	router_account(r, &v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rcm_peers peers;
	struct router_config c;
	struct router *r;
	uint64_t now = 1000;
	size_t i = 0;
	int port;

	router_config_default(&c);
	/* small tables: allocated for every input */
	c.max_ports = 2;
	c.max_workers = 2;
	c.max_gids = 4;
	c.max_ids = 64;
	c.max_ids_per_worker = 32;
	r = router_new(&c);
	if (!r)
		abort();
	memset(&peers, 0, sizeof(peers));
	port = router_port_add(r, "rxe0", 1, 1);
	if (port < 0 || router_worker_add(r, 1) ||
	    router_gid_add(r, 1, port, A, 1) ||
	    router_gid_add(r, 1, port, B, 2))
		abort();
	while (i < size) {
		uint8_t sel = data[i++];

		now += (uint64_t)(sel >> 2) * 1000;
		if (!(sel & 1)) {
			uint8_t rec[RCM_MSG_SIZE] = { 0 };
			size_t n =
				size - i < sizeof(rec) ? size - i : sizeof(rec);

			memcpy(rec, data + i, n);
			i += n;
			qemu_record(r, &peers, rec, now);
		} else {
			uint8_t sgid[16] = { 0 }, mad[256] = { 0 };
			size_t n;

			if (size - i < 17)
				break;
			memcpy(sgid, data + i, 16);
			n = (size_t)data[i + 16] + 1;
			i += 17;
			if (n > size - i)
				n = size - i;
			memcpy(mad, data + i, n);
			i += n;
			rcm_peers_learn(&peers, mad, n, sel & 2 ? B : A, sgid,
					now);
		}
	}
	router_worker_del(r, 1);
	if (router_id_count(r))
		abort(); /* the worker's ids went with it */
	router_free(r);
	return 0;
}
