/* SPDX-License-Identifier: MIT */
/*
 * THE protocol of rdmagate-mux, on its two kinds of channel, both
 * SOCK_SEQPACKET: versioned, typed, fixed-size messages, one table, one
 * pure decoder.  docs/mux.md documents every message.
 *
 *  - the control socket (default RDMAGATE_MUX_DEFAULT_SOCKET): the broker
 *    (uid 0, one connection at a time) sends requests, the mux answers
 *    each with the next odd type;
 *  - one socketpair per worker, whose one end the broker hands the mux
 *    (WORKER_ATTACH, SCM_RIGHTS) and the other the worker: MAD_SEND from
 *    the worker, MAD_RECV from the mux, no replies.
 *
 * One datagram is one message: a header {version, type, len} then exactly
 * len payload bytes.  Integers are in host byte order (the sockets are
 * local); GIDs and MADs are the wire's bytes (network order).  Every
 * string is a fixed-size field that must hold a NUL, with only NUL bytes
 * after it; so must the bytes of mad[] past mad_len be zero.
 *
 * Every reply starts with a status (struct mp_status: 0 or a positive
 * errno, and a text saying why).  This header borrows no other protocol's
 * types: its version says its wire alone.
 */
#ifndef RDMAGATE_COMMON_MUX_PROTO_H
#define RDMAGATE_COMMON_MUX_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/msg_frame.h"

#define RDMAGATE_MUX_VERSION 1

/* Where the mux listens unless --control says. */
#define RDMAGATE_MUX_DEFAULT_SOCKET "/run/rdmagate/mux.sock"

#define MP_VM_SIZE	  72 /* a VM name (logs, probes): 1..64 + NUL, padded */
#define MP_VM_NAME_MAX	  64
#define MP_DEVICE_SIZE	  64  /* an RDMA device: 1..63 + NUL */
#define MP_TEXT_SIZE	  256 /* a reply's human-readable message */
#define MP_GID_SIZE	  16
#define MP_MAD_SIZE	  256 /* a MAD (no RMPP: CM MADs are one datagram) */
#define MP_MAD_HDR	  24  /* the common MAD header: the shortest MAD */
#define MP_PORT_MAX	  255 /* port numbers 1..255 */
#define MP_GID_INDEX_MAX  255 /* umad addresses a GID index in a u8 */
#define MP_FLOW_LABEL_MAX 0xfffffu
#define MP_QPN_MAX	  0xffffffu

/* Slots of the STATS reply's drop counters: enum rdmagate_mux_drop
 * (common/probes.h) indexes them; slot 0 is unused. */
#define MP_DROP_SLOTS 16

enum mp_type {
	MP_HELLO = 2,
	MP_HELLO_REPLY = 3,
	MP_PORT_ADD = 4,
	MP_PORT_ADD_REPLY = 5,
	MP_WORKER_ATTACH = 6, /* with one fd (SCM_RIGHTS) */
	MP_WORKER_ATTACH_REPLY = 7,
	MP_WORKER_DETACH = 8,
	MP_WORKER_DETACH_REPLY = 9,
	MP_GID_ADD = 10,
	MP_GID_ADD_REPLY = 11,
	MP_GID_DEL = 12,
	MP_GID_DEL_REPLY = 13,
	MP_STATS = 14,
	MP_STATS_REPLY = 15,
	/* the reply to a control message the mux could not decode */
	MP_ERROR_REPLY = 17,
	MP_RDMACM_ATTACH = 18, /* with one fd (SCM_RIGHTS) */
	MP_RDMACM_ATTACH_REPLY = 19,
	/* the worker channel */
	MP_MAD_SEND = 32, /* worker -> mux */
	MP_MAD_RECV = 33, /* mux -> worker */
};

/* Who sends a message (the table's "from" column). */
enum mp_from {
	MP_FROM_BROKER = 1, /* control requests (uid 0) */
	MP_FROM_MUX,	    /* control replies, MAD_RECV */
	MP_FROM_WORKER,	    /* MAD_SEND */
};

/* {version = RDMAGATE_MUX_VERSION, type = enum mp_type, len}: the framing
 * of common/msg_frame.h */
#define mp_header msg_header

/* Every reply starts with this: 0 or a positive errno, and why. */
struct mp_status {
	int32_t status;
	char text[MP_TEXT_SIZE];
};
_Static_assert(sizeof(struct mp_status) == 260, "mp_status");

struct mp_hello_reply {
	struct mp_status st;
	uint32_t version; /* the mux's RDMAGATE_MUX_VERSION */
};
_Static_assert(sizeof(struct mp_hello_reply) == 264, "mp_hello_reply");

/* Open umad on device/port and register the CM class (0x07 v2). */
struct mp_port_add {
	char device[MP_DEVICE_SIZE];
	uint32_t port; /* 1..255 */
};
_Static_assert(sizeof(struct mp_port_add) == 68, "mp_port_add");

/*
 * The fd that comes with it is the mux's end of a SOCK_SEQPACKET
 * socketpair; the worker holds the other.  A worker_id already attached
 * with the same vm gets its channel replaced (the broker's replay after
 * its own restart); with another vm it is refused (EEXIST).
 */
struct mp_worker_attach {
	uint32_t worker_id; /* 1..UINT32_MAX; 0 is "no worker" */
	char vm[MP_VM_SIZE];
};
_Static_assert(sizeof(struct mp_worker_attach) == 76, "mp_worker_attach");

/*
 * A VM whose QEMU runs the in-process pvrdma device (QEMU <= 9.0) and
 * speaks QEMU's rdmacm-mux protocol (common/rdmacm_mux_proto.h) instead
 * of having a worker.  The fd that comes with it is a listening AF_UNIX
 * SOCK_STREAM socket the broker bound where that VM's QEMU connects
 * (`-chardev socket,path=...`), with the file permissions that let only
 * that QEMU in; the mux accepts one connection at a time on it, from uid
 * only (SO_PEERCRED).  worker_id names the VM in every other message
 * (GID_ADD, GID_DEL, WORKER_DETACH, STATS) exactly as a worker's does: the
 * QEMU may REG only GIDs GID_ADD gave that id.  Replays like
 * WORKER_ATTACH (same id and vm: the socket is replaced; another vm:
 * EEXIST; an id attached as a worker: EEXIST).
 */
struct mp_rdmacm_attach {
	uint32_t worker_id; /* 1..UINT32_MAX */
	char vm[MP_VM_SIZE];
	uint32_t uid; /* the only uid that may connect */
};
_Static_assert(sizeof(struct mp_rdmacm_attach) == 80, "mp_rdmacm_attach");

/* WORKER_DETACH and STATS (STATS: worker_id 0 = the mux's totals). */
struct mp_worker_ref {
	uint32_t worker_id;
};
_Static_assert(sizeof(struct mp_worker_ref) == 4, "mp_worker_ref");

/* The GID gid, at host GID index host_gid_index of device/port, is the
 * worker's: MADs to it go to the worker, the worker may send from it. */
struct mp_gid_add {
	uint32_t worker_id;
	char device[MP_DEVICE_SIZE];
	uint32_t port;		  /* 1..255; PORT_ADD before */
	uint8_t gid[MP_GID_SIZE]; /* not all zero */
	uint32_t host_gid_index;  /* 0..255 */
};
_Static_assert(sizeof(struct mp_gid_add) == 92, "mp_gid_add");

struct mp_gid_del {
	uint32_t worker_id;
	uint8_t gid[MP_GID_SIZE];
};
_Static_assert(sizeof(struct mp_gid_del) == 20, "mp_gid_del");

/* Per-worker counters (worker_id 0: the whole mux, with what no worker
 * can be blamed for, such as MADs to GIDs nobody owns). */
struct mp_stats {
	uint64_t routed_in;		 /* wire -> this worker */
	uint64_t routed_out;		 /* this worker -> wire */
	uint64_t refused_spoofs;	 /* sends with a GID not its own */
	uint64_t dropped[MP_DROP_SLOTS]; /* enum rdmagate_mux_drop */
};
_Static_assert(sizeof(struct mp_stats) == 152, "mp_stats");

struct mp_stats_reply {
	struct mp_status st;
	uint32_t worker_id;
	struct mp_stats s; /* all zero when st.status != 0 */
};
_Static_assert(sizeof(struct mp_stats_reply) == 416, "mp_stats_reply");

/*
 * A MAD a guest sends on its QP1, with the address vector the worker
 * took from the guest's work request.  sgid must be one the broker
 * assigned to this worker (GID_ADD): the mux refuses anything else.
 */
struct mp_mad_send {
	uint8_t sgid[MP_GID_SIZE];
	uint8_t dgid[MP_GID_SIZE];
	uint32_t flow_label; /* 0..0xfffff */
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint16_t pkey_index;
	uint32_t remote_qpn; /* 0..0xffffff */
	uint32_t remote_qkey;
	uint32_t mad_len; /* MP_MAD_HDR..MP_MAD_SIZE; zeros past it */
	uint8_t mad[MP_MAD_SIZE];
};
_Static_assert(sizeof(struct mp_mad_send) == 308, "mp_mad_send");

/* A MAD from the wire for this worker: what it needs to fill the GRH
 * area of the guest's QP1 receive buffer and its work completion. */
struct mp_mad_recv {
	uint8_t sgid[MP_GID_SIZE]; /* the sender's */
	uint8_t dgid[MP_GID_SIZE]; /* ours: the worker's GID it was sent to */
	uint32_t flow_label;
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint16_t pkey_index;
	uint32_t src_qpn;
	uint32_t mad_len; /* MP_MAD_HDR..MP_MAD_SIZE; zeros past it */
	uint8_t mad[MP_MAD_SIZE];
};
_Static_assert(sizeof(struct mp_mad_recv) == 304, "mp_mad_recv");

/*
 * A decoded message.  On the wire the payload follows the 12-byte header
 * directly; here it is aligned (mp_send() writes the wire form).
 */
struct mp_msg {
	struct mp_header h;
	union {
		struct mp_status status; /* most replies */
		struct mp_hello_reply hello_reply;
		struct mp_port_add port_add;
		struct mp_worker_attach attach;
		struct mp_rdmacm_attach rdmacm_attach;
		struct mp_worker_ref ref; /* WORKER_DETACH, STATS */
		struct mp_gid_add gid_add;
		struct mp_gid_del gid_del;
		struct mp_stats_reply stats_reply;
		struct mp_mad_send mad_send;
		struct mp_mad_recv mad_recv;
		uint8_t bytes[1]; /* HELLO: empty */
	} u;
};
/* The longest datagram: the header and the largest payload. */
#define MP_MSG_MAX (sizeof(struct mp_header) + sizeof(struct mp_stats_reply))

/* The protocol's table and framing, for msg_conn_open() (common/msg_frame.h).
 */
extern const struct msg_proto mp_protocol;

/* The row of type (from: enum mp_from), or NULL for a type the protocol
 * does not have. */
const struct msg_type *mp_type_info(uint32_t type);
/* "GID_ADD", or "unknown" */
const char *mp_type_name(uint32_t type);

/*
 * Decodes one datagram of len bytes that `from` is expected to have sent
 * into *ret (a copy: buf may be shared or hostile).  Checks, in order:
 * the header is there (-EBADMSG "short"), the datagram is no longer than
 * MP_MSG_MAX (-EMSGSIZE "long"), the version (-EPROTONOSUPPORT), the type
 * (-EOPNOTSUPP), that `from` sends that type (-EOPNOTSUPP), len against
 * the datagram and against the table (-EBADMSG), then each field: strings
 * terminated and padded with NULs, names well formed, numbers in range,
 * MAD lengths and the zeros after them (-EINVAL).  Returns 0, or the
 * negative errno with why (may be NULL) naming what was wrong; *ret is
 * untouched on failure.
 */
int mp_decode(const void *buf, size_t len, enum mp_from from,
	      struct mp_msg *ret, struct reason *why);

/*
 * Fills the header of m for type (len from the table), zeroing the rest.
 * Returns the datagram's length, or 0 for a type the protocol does not
 * have.
 */
size_t mp_init(struct mp_msg *m, uint32_t type);

/*
 * Sends m (header + h.len payload bytes) as one datagram with the given
 * send(2) flags (MSG_NOSIGNAL is always added), and fd_pass (if >= 0) as
 * SCM_RIGHTS.  Returns 0 or -errno.
 */
int mp_send(int fd, const struct mp_msg *m, int flags, int fd_pass);

/* Fills a reply's status and text (printf format; truncated to fit). */
void mp_set_status(struct mp_status *st, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A device name: 1..63 of [A-Za-z0-9_.-], not starting with '.' or '-'. */
bool mp_device_name_ok(const char *s);

#endif
