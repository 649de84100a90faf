/* SPDX-License-Identifier: MIT */
/*
 * rdmagate-mux's routing core: pure (no I/O, no clock: the time is an
 * argument), so that the unit tests and the fuzz target run it alone.
 *
 * It holds what the broker told the mux (ports, workers, which worker
 * owns which full 16-byte GID at which host GID index) and what the
 * guests' own CM sends taught it (the communication / request id table),
 * and decides, for every MAD:
 *   - from the wire: deliver to worker X, or drop (reason);
 *   - from worker X: send on port P from host GID index I, or refuse
 *     (reason).
 * docs/mux.md states the rules; the reasons are enum rdmagate_mux_drop
 * (common/probes.h).
 */
#ifndef RDMAGATE_MUX_ROUTER_H
#define RDMAGATE_MUX_ROUTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/ib_cm.h"
#include "common/mux_proto.h"

/* The CM class as the mux registers it (common/ib_cm.h). */
#define ROUTER_CM_CLASS		CM_MGMT_CLASS
#define ROUTER_CM_CLASS_VERSION CM_CLASS_VERSION
#define ROUTER_METHOD_SEND	CM_METHOD_SEND
#define ROUTER_GSI_QPN		CM_QP1_QPN
#define ROUTER_GSI_QKEY		CM_QP1_QKEY

/* Offsets in the MAD (the 24-byte header included). */
#define CM_OFF_LOCAL_COMM_ID	  24 /* every connection message */
#define CM_OFF_REMOTE_COMM_ID	  28 /* all but REQ */
#define CM_OFF_REQUEST_ID	  24 /* SIDR_REQ, SIDR_REP */
#define CM_OFF_REQ_PRI_LOCAL_GID  80 /* REQ: primary path */
#define CM_OFF_REQ_PRI_REMOTE_GID 96
#define CM_OFF_REQ_ALT_LOCAL_GID  124 /* REQ: alternate path */
#define CM_OFF_LAP_ALT_LOCAL_GID  48  /* LAP: the new alternate path */
#define CM_OFF_REQ_LOCAL_QPN	  56  /* REQ: 24 bits */
#define CM_OFF_REP_LOCAL_QPN	  36  /* REP: 24 bits */
#define CM_OFF_DREQ_REMOTE_QPN	  32  /* DREQ: 24 bits */
#define CM_OFF_REJ_MSG_REJECTED	  32  /* REJ: the top 2 bits */
#define CM_OFF_REJ_REASON	  34  /* REJ: 16 bits */

/* REJ's "message rejected" and the reason the mux gives (IBTA 12.6.7) */
#define CM_REJ_MSG_REP		1
#define CM_REJ_MSG_OTHER	2
#define CM_REJ_CONSUMER_DEFINED 28
/* REQs from the wire remembered for their QPN (see router_farewell()) */
#define ROUTER_PEER_REQS 256

struct router_config {
	uint32_t max_ports; /* device/port pairs */
	uint32_t max_workers;
	uint32_t max_gids;	     /* GID ownership entries, all workers */
	uint32_t max_ids;	     /* id table entries, all workers */
	uint32_t max_ids_per_worker; /* one worker's share of them */
	uint64_t id_ttl_ms;   /* handshake / closing entries: after last use */
	uint64_t conn_ttl_ms; /* entries of established connections */
	uint64_t hash_seed;   /* random in the mux, fixed in tests */
};

/* 32 ports, 1024 workers, 4096 GIDs, 65536 ids (4096 per worker),
 * 60 s, 24 h, seed 0. */
void router_config_default(struct router_config *c);

struct router;

/* NULL with errno EINVAL (a zero bound, max_ids_per_worker > max_ids)
 * or ENOMEM. */
struct router *router_new(const struct router_config *c);
void router_free(struct router *r);

/*
 * Adds device/port with a P_Key table of pkeys entries (a send's
 * pkey_index must be below).  Returns the port's id (>= 0; the same id
 * again for a port already added), -ENOSPC, or -EINVAL.
 */
int router_port_add(struct router *r, const char *device, uint32_t port,
		    uint32_t pkeys);
/* The port's id, or -ENOENT. */
int router_port_find(const struct router *r, const char *device, uint32_t port);

/* 0, -EINVAL (id 0), -EEXIST, -ENOSPC. */
int router_worker_add(struct router *r, uint32_t worker_id);
/* Removes the worker, its GIDs and its ids: 0 or -ENOENT. */
int router_worker_del(struct router *r, uint32_t worker_id);
bool router_worker_exists(const struct router *r, uint32_t worker_id);

/*
 * gid at host_index of port_id is worker_id's.  0 (also when exactly
 * this is known already), -ENOENT (no such worker or port), -EEXIST (the
 * GID is another worker's on that port, or has another index, or the
 * index holds another GID), -ENOSPC, -EINVAL (all-zero GID, index >
 * 255).
 */
int router_gid_add(struct router *r, uint32_t worker_id, int port_id,
		   const uint8_t gid[16], uint32_t host_index);
/* Removes gid (on every port) from worker_id, and the ids learned on it.
 * 0, -ENOENT (the worker has no such GID). */
int router_gid_del(struct router *r, uint32_t worker_id, const uint8_t gid[16]);
/* Does worker_id own gid (on any port)? */
bool router_gid_owned(const struct router *r, uint32_t worker_id,
		      const uint8_t gid[16]);
/* The GID a worker owns at host_index of port_id, or NULL: how the mux
 * turns umad's receive GID index into the full destination GID. */
const uint8_t *router_gid_at(const struct router *r, int port_id,
			     uint32_t host_index);

struct router_verdict {
	uint32_t reason;    /* 0: route; else enum rdmagate_mux_drop */
	uint32_t direction; /* enum rdmagate_mux_dir */
	uint32_t worker_id; /* in: the destination; out: the sender; 0 none */
	int port_id;	    /* out: the port to send on; in: where it came */
	uint32_t host_gid_index; /* out: the sgid's index on that port */
	uint8_t mgmt_class;	 /* 0 when the MAD is too short */
	uint16_t attr_id;	 /* host order; 0 when too short */
	char why[160];		 /* a drop's reason in words, for the log */
};

/*
 * A MAD from the wire on port_id: sgid the sender's GID (GRH), dgid
 * ours (the GID at the receive GID index; NULL when that index holds no
 * worker's GID), mad/len its bytes.  Learns
 * and refreshes ids; counts nothing (router_account()).
 */
void router_incoming(struct router *r, int port_id, const uint8_t sgid[16],
		     const uint8_t dgid[16], const uint8_t *mad, size_t len,
		     uint64_t now_ms, struct router_verdict *v);

/* A MAD_SEND from worker_id (decoded by mp_decode()). */
void router_outgoing(struct router *r, uint32_t worker_id,
		     const struct mp_mad_send *s, uint64_t now_ms,
		     struct router_verdict *v);

/*
 * Counts the final outcome of a MAD: v as the router decided, or with
 * reason changed by the caller (WORKER_FULL, WORKER_GONE, SEND_FAILED)
 * into the worker's counters and the totals (worker 0).
 */
void router_account(struct router *r, const struct router_verdict *v);

/* worker_id's counters (0: the totals).  0 or -ENOENT. */
int router_stats(const struct router *r, uint32_t worker_id,
		 struct mp_stats *ret);

/*
 * The next CM message that ends one of worker_id's connections on its
 * behalf, once the worker died with them (its channel closed): what the
 * guest's CM would have sent had it been destroyed (Linux's
 * cm_destroy_id()): a DREQ for an established connection, a REJ
 * (consumer defined) for one half-open whose peer comm id is known, as a
 * MAD_SEND from the worker, for router_outgoing() to route.  Each
 * connection is given once.  *cursor (0 to start) keeps the place in the
 * table between calls.  Returns 1 with *ret filled and the connection
 * closing, 0 when none is left.  Connections whose peer never answered
 * (no comm id to name) are left to the peer's own timeouts.
 */
int router_farewell(struct router *r, uint32_t worker_id, uint64_t tid,
		    uint64_t now_ms, uint32_t *cursor, struct mp_mad_send *ret);

/* Removes ids whose time is up; returns how many. */
uint32_t router_expire(struct router *r, uint64_t now_ms);
/* Entries in the id table (expired ones not removed yet included). */
uint32_t router_id_count(const struct router *r);

/* "spoof", "unknown-gid", ... (docs/mux.md); "?" for no reason. */
const char *router_reason_name(uint32_t reason);
/* "REQ", "DREQ", ..., or "attr 0x0042". buf holds 16 bytes. */
const char *router_attr_name(uint16_t attr_id, char buf[16]);
/* "fd99::10" (inet_ntop form of the 16 bytes); buf holds 46 bytes. */
const char *router_gid_str(const uint8_t gid[16], char buf[46]);

#endif
