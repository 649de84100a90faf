/* SPDX-License-Identifier: MIT */
/*
 * The guest simulator's connection manager: one RC connection set up and
 * torn down with CM MADs (guest/cm.h) the way a guest kernel's ib_cm and
 * rdma_cm do it: the active side sends a REQ carrying the RDMA-CM IP
 * private data; the passive side matches the service id (port), moves its
 * QP to RTR and RTS and answers a REP; the active side moves its QP and
 * answers an RTU; either side ends with DREQ/DREP. Lost MADs are resent
 * on a timer, a bounded number of times.
 *
 * Event-driven and clock-agnostic: MADs go out through a transport (a
 * small ops struct; guest/cm_qp1.c is the one on the device's QP1, the
 * unit tests pass MADs between two machines in memory) and the QP is
 * moved through another (the tool uses the verbs). Run by rdmagate-guest.
 */
#ifndef RDMAGATE_GUEST_CM_CONN_H
#define RDMAGATE_GUEST_CM_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include "guest/cm.h"

/* Where a MAD goes, or where it came from (its GRH). */
struct cm_peer {
	uint8_t gid[16];
	uint32_t qpn; /* 1: the peer's GSI QP */
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint32_t flow_label;
};

struct cm_transport_ops {
	/* Sends 256 bytes to `to`. 0 or -errno (the MAD counts as lost). */
	int (*send_mad)(void *arg, const struct cm_peer *to,
			const uint8_t mad[CM_MAD_LEN]);
	/*
	 * Waits up to timeout_ms (0: does not wait) for one MAD: copies at
	 * most CM_MAD_LEN bytes into mad, sets *len to the length that
	 * arrived (GRH area excluded; the decoder refuses anything but 256)
	 * and *from to its GRH's source. 0, -EAGAIN when nothing came, or
	 * -errno.
	 */
	int (*recv_mad)(void *arg, struct cm_peer *from,
			uint8_t mad[CM_MAD_LEN], size_t *len, int timeout_ms);
};

/* What the QP needs for INIT -> RTR -> RTS, from the CM exchange. */
struct cm_qp_attr {
	uint32_t local_qpn, local_psn;
	uint32_t remote_qpn, remote_psn;
	uint8_t path_mtu; /* IB enum 1..5 */
	uint8_t dgid[16];
	uint8_t sgid_index;
	uint8_t hop_limit, traffic_class, sl;
	uint32_t flow_label;
	uint8_t max_rd_atomic;	    /* initiator depth */
	uint8_t max_dest_rd_atomic; /* responder resources */
	uint8_t retry_count, rnr_retry_count;
	uint8_t local_ack_timeout;
};

struct cm_qp_ops {
	/* RTR then RTS with attr. 0 or -errno (the peer gets a REJ). */
	int (*connect)(void *arg, const struct cm_qp_attr *attr);
	/* To ERR: on disconnect, or a failure after connect(). */
	void (*disconnect)(void *arg);
};

struct cm_conn_cfg {
	uint8_t gid[16]; /* our port GID: the path's local GID, our IP */
	uint8_t sgid_index;
	uint64_t ca_guid;
	uint8_t path_mtu; /* IB enum; the passive side takes the REQ's */
	uint8_t responder_resources, initiator_depth;
	uint8_t retry_count, rnr_retry_count;
	uint8_t hop_limit; /* rdma_cm over IP: the route's, 64 */
	uint8_t traffic_class, sl;
	uint8_t packet_life_time;    /* CMA_IBOE_PACKET_LIFETIME: 16 */
	uint8_t ca_ack_delay;	     /* the device's; rxe says 15 */
	uint8_t cm_response_timeout; /* CMA_CM_RESPONSE_TIMEOUT: 20 */
	uint8_t max_cm_retries;	     /* CMA_MAX_CM_RETRIES: 15 */
	uint32_t timeout_ms;	     /* per MAD; 0: from the timers as ib_cm */
};

/* rdma_cm's defaults (above), MTU 1024, one RDMA READ in flight. */
void cm_conn_cfg_default(struct cm_conn_cfg *cfg);

enum cm_state {
	CM_IDLE,
	CM_LISTEN,
	CM_REQ_SENT,
	CM_REP_SENT,
	CM_ESTABLISHED,
	CM_DREQ_SENT,
	CM_TIMEWAIT, /* disconnected; still answers a repeated DREQ */
	CM_CLOSED,
	CM_FAILED, /* see error, rej_reason, why */
};

struct cm_conn_stats {
	unsigned long sent;   /* MADs handed to the transport */
	unsigned long resent; /* of which retransmissions */
	unsigned long send_errors;
	unsigned long received;	 /* MADs given to cm_conn_input() */
	unsigned long bad;	 /* refused by the decoder */
	unsigned long unmatched; /* ids, state or sender not ours */
	unsigned long duplicates;
	unsigned long rej_sent;
};

struct cm_conn {
	struct cm_conn_cfg cfg;
	const struct cm_transport_ops *tops;
	void *targ;
	const struct cm_qp_ops *qops;
	void *qarg;

	enum cm_state state;
	bool active;
	bool qp_connected;
	bool peer_disconnected; /* the peer sent the DREQ */
	uint32_t local_id, remote_id;
	uint64_t remote_ca_guid;
	uint64_t tid;	   /* of the REQ (REP, RTU, REJ reuse it) */
	uint64_t dreq_tid; /* of the DREQ (DREP reuses it) */
	uint64_t tid_next;
	uint16_t port; /* the service's port */
	bool sidr;     /* a UD service (cm_conn_sidr_listen()) */
	uint32_t qkey; /* ... its Q_Key, and the SIDR_REQ answered: */
	uint32_t sidr_request_id;
	struct cm_peer peer;
	struct cm_ip_hdr ip; /* the REQ's CMA header */
	struct cm_qp_attr qp;
	uint8_t user[CM_REP_PRIVATE_LEN]; /* the peer's user private data */
	size_t user_len;

	uint8_t pending[CM_MAD_LEN]; /* resent on timeout (REQ, REP, DREQ) */
	uint8_t reply[CM_MAD_LEN];   /* resent on a duplicate (RTU, DREP) */
	bool has_pending, has_reply;
	unsigned int retries, max_retries;
	uint32_t timeout_ms;
	uint64_t deadline; /* ms on the caller's clock; 0: none */

	int error;	     /* CM_FAILED: -ECONNREFUSED, -ETIMEDOUT, ... */
	uint16_t rej_reason; /* the REJ received (or sent) */
	int last_send_error;
	struct reason why; /* the last refusal, for the log */
	struct cm_conn_stats stats;
};

void cm_conn_init(struct cm_conn *c, const struct cm_conn_cfg *cfg,
		  const struct cm_transport_ops *tops, void *targ,
		  const struct cm_qp_ops *qops, void *qarg);

/*
 * Active side: sends the REQ for service (RDMA_PS_TCP, dst_port) to the
 * GID of ip->dst (rdma_ip2gid), from our QP qpn with starting PSN psn,
 * the CMA header ip (ip_version, src_port, src, dst) and user_len bytes of
 * user data (at most 56). -EINVAL, or the transport's error.
 */
int cm_conn_connect(struct cm_conn *c, const struct cm_ip_hdr *ip,
		    uint16_t dst_port, uint32_t qpn, uint32_t psn,
		    const void *user, size_t user_len, uint64_t now_ms);

/* Passive side: accepts one REQ for (RDMA_PS_TCP, port) to our IP. */
int cm_conn_listen(struct cm_conn *c, uint16_t port, uint32_t qpn,
		   uint32_t psn);

/*
 * Passive side of a UD service, as rdma_cm's RDMA_PS_UDP listener: answers
 * the SIDR_REQ for (RDMA_PS_UDP, port) to our IP with a SIDR_REP naming
 * our UD QP qpn and qkey (rdma_cm's is RDMA_UDP_QKEY), and is then
 * ESTABLISHED with the requester as peer; a repeated SIDR_REQ gets the
 * same answer. Any other SIDR_REQ is answered "service id not supported",
 * as ib_cm does when nobody listens.
 */
int cm_conn_sidr_listen(struct cm_conn *c, uint16_t port, uint32_t qpn,
			uint32_t qkey);

/*
 * One received MAD. Anything the decoder refuses, or that does not belong
 * to this connection in its state, is counted and dropped (or answered
 * as ib_cm answers it: REJ, DREP); it never fails the connection except
 * through a REJ. Returns 0, or a transport error of an answer.
 */
int cm_conn_input(struct cm_conn *c, const struct cm_peer *from,
		  const uint8_t *mad, size_t len, uint64_t now_ms);

/* Timers: resends, gives up (REJ with reason timeout), ends TIMEWAIT. */
int cm_conn_tick(struct cm_conn *c, uint64_t now_ms);

/* ESTABLISHED: QP to ERR, DREQ. Already disconnected: 0. */
int cm_conn_disconnect(struct cm_conn *c, uint64_t now_ms);

/* The next timer (ms on the caller's clock), 0 if none. */
uint64_t cm_conn_deadline(const struct cm_conn *c);

/*
 * Drives the connection on CLOCK_MONOTONIC: receives (through the
 * transport) and runs the timers until the state is one of `until` (a bit
 * mask of 1 << state) or CM_FAILED, or timeout_ms passes (-ETIMEDOUT).
 * Returns 0 or the failure (c->error).
 */
int cm_conn_run(struct cm_conn *c, unsigned int until, int timeout_ms);

const char *cm_state_name(enum cm_state s);

#endif
