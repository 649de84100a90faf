/* SPDX-License-Identifier: MIT */
/*
 * THE broker-worker channel: what a sandboxed rdmagate-worker asks of the
 * broker (GIDs on the host's netdev) and what the broker asks of it
 * (counters).  Versioned, fixed-size messages over SOCK_SEQPACKET in the
 * shared framing of common/msg_frame.h; one table, one pure decoder
 * (common/worker_proto.c); docs/broker.md ("The worker channel")
 * documents every message.
 *
 * The transport: the broker creates a listening socket per worker
 * (<state dir>/workers/<vm>.channel, 0600 root) and hands the worker only
 * the listening fd; the broker connects to it after the spawn, and a
 * restarted broker connects again (re-adoption).  The worker accepts only
 * peers with uid 0 and keeps one broker connection (a new one replaces the
 * old).  The worker is the less privileged side: the broker decodes every
 * message from it with this decoder and acts only on what the policy
 * allows that VM.
 */
#ifndef RDMAGATE_COMMON_WORKER_PROTO_H
#define RDMAGATE_COMMON_WORKER_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/msg_frame.h"

/* 2: STATS_REPLY counts host async events; 3: GID_GONE */
#define RDMAGATE_WORKER_PROTO_VERSION 3

#define WP_VM_SIZE   72 /* as the control protocol's BP_VM_SIZE */
#define WP_TEXT_SIZE 160

enum wp_type {
	WP_HELLO = 2,	      /* worker -> broker, first on every connection */
	WP_GID_ADD = 4,	      /* worker -> broker */
	WP_GID_ADD_REPLY = 5, /* broker -> worker */
	WP_GID_DEL = 6,	      /* worker -> broker */
	WP_GID_DEL_REPLY = 7, /* broker -> worker */
	WP_STATS = 8,	      /* broker -> worker */
	WP_STATS_REPLY = 9,   /* worker -> broker */
	/*
	 * broker -> worker, with ONE fd in SCM_RIGHTS: the worker's end of a
	 * SOCK_SEQPACKET socketpair whose other end the broker gave the mux
	 * (WORKER_ATTACH, common/mux_proto.h).  The worker's QP1 MADs go over
	 * it; a new one replaces the old (the mux restarted).
	 */
	WP_MUX_CHANNEL = 10,
	/*
	 * broker -> worker, no answer: an address the broker granted this
	 * worker left the host without its asking (removed outside the
	 * broker, its netdev gone).  The broker has forgotten it (and told
	 * the mux); the worker must stop using every GID of it: its host
	 * GID table slot may hold another VM's GID soon.
	 */
	WP_GID_GONE = 11,
};

/* The table's "from" column. */
enum wp_from {
	WP_FROM_WORKER = 1,
	WP_FROM_BROKER = 2,
};

/* GID types, as the virtio-rdma device's (enum virtio_rdma_gid_type). */
enum wp_gid_type {
	WP_GID_ROCE_V1 = 1,
	WP_GID_ROCE_V2 = 2,
};

struct wp_hello {
	uint32_t pid;
	uint32_t pad; /* 0 */
	char vm[WP_VM_SIZE];
};
_Static_assert(sizeof(struct wp_hello) == 80, "wp_hello");

/*
 * GID_ADD, GID_DEL and GID_GONE: the guest's GID (an address: IPv4-mapped
 * or IPv6).  GID_GONE: the address's RoCE v2 GID, seq the broker's count.
 */
struct wp_gid {
	uint32_t seq;	   /* echoed in the reply */
	uint32_t gid_type; /* enum wp_gid_type */
	uint8_t gid[16];
};
_Static_assert(sizeof(struct wp_gid) == 24, "wp_gid");

struct wp_gid_reply {
	uint32_t seq;
	int32_t status;		 /* 0 or a positive errno */
	uint32_t host_index;	 /* GID_ADD: the host GID table index */
	uint32_t pad;		 /* 0 */
	char text[WP_TEXT_SIZE]; /* why, when status != 0 */
};
_Static_assert(sizeof(struct wp_gid_reply) == 176, "wp_gid_reply");

struct wp_stats_req {
	uint32_t seq;
	uint32_t pad; /* 0 */
};

/* MUX_CHANNEL: the fd travels with it. */
struct wp_mux_channel {
	uint32_t seq;
	uint32_t mux_worker_id; /* the id the mux knows this worker by */
};

/*
 * The worker's counters since it started (all connections of its VMM),
 * at least what QEMU's pvrdma backend counted.  Numbers from a worker: the
 * broker reports them, it never acts on them.
 */
struct wp_counters {
	uint64_t connects;	    /* vhost-user frontends accepted */
	uint64_t commands;	    /* control commands */
	uint64_t command_errors;    /* ... refused */
	uint64_t sends;		    /* send work requests posted to the host */
	uint64_t send_errors;	    /* ... refused or failed to post */
	uint64_t send_bytes;	    /* bytes in posted sends */
	uint64_t recvs;		    /* receive buffers posted (QP or SRQ) */
	uint64_t recv_errors;	    /* ... refused or failed to post */
	uint64_t srq_recvs;	    /* of recvs, posted to an SRQ */
	uint64_t completions;	    /* CQEs delivered to the guest */
	uint64_t completion_errors; /* ... with a status other than success */
	uint64_t cq_overflows;	    /* CQEs with no guest buffer: QP to error */
	uint64_t missing_completions; /* host CQEs for a gone work request */
	uint64_t mads_sent;	      /* QP1 MADs sent for the guest */
	uint64_t mads_received;	      /* QP1 MADs delivered to the guest */
	uint64_t mad_errors;	      /* QP1 MADs refused or dropped */
	uint64_t gid_adds;	      /* GIDs granted */
	uint64_t gid_errors;	      /* GID requests refused */
	uint64_t async_events; /* host async events on the guest's objects */
};
#define WP_COUNTERS_N (sizeof(struct wp_counters) / sizeof(uint64_t))

struct wp_stats_reply {
	uint32_t seq;
	uint32_t pad; /* 0 */
	struct wp_counters c;
};

struct wp_msg {
	struct msg_header h;
	union {
		struct wp_hello hello;
		struct wp_gid gid;	       /* GID_ADD, GID_DEL, GID_GONE */
		struct wp_gid_reply gid_reply; /* both replies */
		struct wp_stats_req stats;
		struct wp_mux_channel mux_channel;
		struct wp_stats_reply stats_reply;
		uint8_t bytes[1];
	} u;
};
#define WP_MSG_MAX (sizeof(struct msg_header) + sizeof(struct wp_gid_reply))

/* The protocol's table and framing, for msg_conn_open() (common/msg_frame.h).
 */
extern const struct msg_proto wp_protocol;

/* The row of type (from: enum wp_from), or NULL. */
const struct msg_type *wp_type_info(uint32_t type);
const char *wp_type_name(uint32_t type);

/*
 * Decodes one datagram (see msg_decode()): GIDs must be an IPv4-mapped or
 * a global/unique-local/link-local IPv6 address of type RoCE v1 or v2,
 * texts terminated and NUL-padded, padding zero, the VM name well formed,
 * statuses 0..4095.
 */
int wp_decode(const void *buf, size_t len, struct wp_msg *ret,
	      struct reason *why);
size_t wp_init(struct wp_msg *m, uint32_t type);
/* Sends without blocking (MSG_DONTWAIT): -EAGAIN when the peer's queue is
 * full; never SIGPIPE. */
int wp_send(int fd, const struct wp_msg *m);
/* The same with an fd in SCM_RIGHTS (MUX_CHANNEL). */
int wp_send_fd(int fd, const struct wp_msg *m, int pass_fd);

/* A GID that is an address: IPv4-mapped (family AF_INET, 4 bytes into
 * addr) or not (AF_INET6, 16 bytes).  Returns the family. */
int wp_gid_to_addr(const uint8_t gid[16], uint8_t addr[16]);

#endif
