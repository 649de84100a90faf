/* SPDX-License-Identifier: MIT */
/*
 * Where a MAD from a QEMU (rdmacm-mux protocol) goes: pure, no I/O, the
 * clock an argument, so that unit tests and the fuzz target run it alone.
 *
 * QEMU's pvrdma drops the destination of the guest's QP1 sends: its
 * MAD record carries the source GID only.  The mux finds the destination
 * in the MAD itself: a REQ names it (its primary path's remote port GID),
 * rdma_cm's SIDR_REQ too (its destination IP address); every other CM
 * message answers an id the peer chose, and the peer sent
 * that id to this guest earlier.  So each QEMU connection keeps the ids
 * its guest received, with their sender: this table.  It only ever
 * selects a destination; who may send from which GID stays the router's
 * decision (mux/router.c), exactly as for a worker.
 */
#ifndef RDMAGATE_MUX_RDMACM_ROUTE_H
#define RDMAGATE_MUX_RDMACM_ROUTE_H

#include <stddef.h>
#include <stdint.h>

#include "common/mux_proto.h"
#include "common/rdmacm_mux_proto.h"

/* One QEMU's peers: the table is its own, so that replacing the least
 * recently used entry when it is full only ever hurts that VM. */
#define RCM_PEERS 256

struct rcm_peer {
	uint8_t used;
	uint8_t kind;	  /* 1 a comm id, 2 a SIDR request id */
	uint32_t id;	  /* the peer's own id, host order */
	uint8_t ours[16]; /* the guest's GID it was sent to */
	uint8_t peer[16]; /* the sender's GID */
	uint64_t last_ms;
};

struct rcm_peers {
	struct rcm_peer e[RCM_PEERS];
};

/*
 * A CM MAD from the wire delivered to this guest at ours, sent from
 * peer: remembers the sender's own id (the local comm id of a connection
 * message, the request id of a SIDR_REQ).  Anything else is ignored.
 */
void rcm_peers_learn(struct rcm_peers *p, const uint8_t *mad, size_t len,
		     const uint8_t ours[16], const uint8_t peer[16],
		     uint64_t now_ms);

/*
 * The destination of a MAD the guest sends from ours: a REQ's primary
 * remote port GID; an rdma_cm SIDR_REQ's destination IP address (from the
 * rdma_cm header in its private data); for the other connection messages
 * the sender of the remote comm id, for a SIDR_REP the sender of the
 * request id.  0 with ret_dgid filled, or -ENOENT (no such id was
 * received, or a SIDR_REQ not from rdma_cm, which names no destination) /
 * -EINVAL (not a CM MAD, too short) with why saying so;
 * ret_dgid untouched then.
 */
int rcm_peers_dest(struct rcm_peers *p, const uint8_t *mad, size_t len,
		   const uint8_t ours[16], uint64_t now_ms,
		   uint8_t ret_dgid[16], struct reason *why);

/*
 * The MAD_SEND a worker would have sent for QEMU's MAD request r: from
 * r's GID to its destination (rcm_peers_dest()), to QP1 with the GSI
 * Q_Key, hop limit 255 as QEMU sets it.  When no destination is known the
 * dgid stays zero, which the router refuses (`address`, after its spoof
 * check); returns rcm_peers_dest()'s result, why filled on failure.
 */
int rcm_mad_send(struct rcm_peers *p, const struct rcm_request *r,
		 uint64_t now_ms, struct mp_mad_send *ret, struct reason *why);

/* Forgets what was learned on ours (the guest unregistered it). */
void rcm_peers_forget(struct rcm_peers *p, const uint8_t ours[16]);

#endif
