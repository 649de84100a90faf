/* SPDX-License-Identifier: MIT */
/*
 * THE control protocol between rdmagatectl (or any client) and
 * rdmagate-broker: versioned, typed, fixed-size messages over a
 * SOCK_SEQPACKET socket, one table, one pure decoder.  docs/control-protocol.md
 * documents every message.
 *
 * One datagram is one message: a header {version, type, len} then exactly
 * len payload bytes.  Requests have even types, their replies the next odd
 * type.  Integers are in host byte order (the socket is local).  Every
 * string is a fixed-size field that must hold a NUL, with only NUL bytes
 * after it.
 */
#ifndef RDMAGATE_COMMON_BROKER_PROTO_H
#define RDMAGATE_COMMON_BROKER_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/msg_frame.h"

/* 2: SPAWN names a socket in the broker's socket_dir, and a frontend;
 * 3: STATS_REPLY carries 19 counters (async_events);
 * 4: SPAWN carries the VM's SELinux MCS level (libvirt's sVirt label) */
#define RDMAGATE_CTL_VERSION 4

/* Where the broker listens unless its policy's [broker] control_socket says. */
#define RDMAGATE_CTL_DEFAULT_SOCKET "/run/rdmagate/control"
/* Where the VMs' sockets live unless the policy's [broker] socket_dir says:
 * the broker's directory; a VM names at most a file in it. */
#define RDMAGATE_DEFAULT_SOCKET_DIR "/run/rdmagate/vm"

#define BP_VM_SIZE	72 /* a VM name: 1..64 bytes + NUL, padded */
#define BP_VM_NAME_MAX	64
#define BP_PATH_SIZE	108 /* sun_path: 1..107 bytes + NUL */
#define BP_DEVICE_SIZE	64  /* an RDMA device name: 0..63 bytes + NUL */
#define BP_SYSCALL_SIZE 32  /* a syscall name (test hooks only) */
#define BP_TEXT_SIZE	256 /* a reply's human-readable message */
#define BP_LEVEL_SIZE	32  /* an MCS level "s0:cA,cB": at most 14 + NUL */
/* MCS categories c0..c1023 (the reference policy's MCS, libvirt's sVirt) */
#define BP_MCS_CATEGORIES 1024u

enum bp_type {
	BP_HELLO = 2,
	BP_HELLO_REPLY = 3,
	BP_SPAWN = 4,
	BP_SPAWN_REPLY = 5,
	BP_STOP = 6,
	BP_STOP_REPLY = 7,
	BP_LIST = 8,
	BP_LIST_REPLY = 9,
	BP_RELOAD = 10,
	BP_RELOAD_REPLY = 11,
	/* the reply to a message the broker could not decode */
	BP_ERROR_REPLY = 13,
	BP_STATS = 14,
	BP_STATS_REPLY = 15,
};

/* Who may send a message (the table's "from" column). */
enum bp_from {
	BP_FROM_BROKER = 1, /* replies: only from the broker (uid 0) */
	BP_FROM_CALLER,	    /* root or a member of control_group */
	BP_FROM_ROOT,	    /* root only */
};

/* {version = RDMAGATE_CTL_VERSION, type = enum bp_type, len} */
#define bp_header msg_header

/* Every reply starts with this: 0 or a positive errno, and why. */
struct bp_status {
	int32_t status;
	char text[BP_TEXT_SIZE];
};
_Static_assert(sizeof(struct bp_status) == 260, "bp_status");

struct bp_hello_reply {
	struct bp_status st;
	uint32_t version; /* the broker's RDMAGATE_CTL_VERSION */
};
_Static_assert(sizeof(struct bp_hello_reply) == 264, "bp_hello_reply");

/* bp_spawn.flags: only a broker built with test hooks accepts them. */
enum {
	BP_SPAWN_TEST_ECHO = 1u << 0, /* the worker's --test-device echo */
};
#define BP_SPAWN_FLAGS_ALL BP_SPAWN_TEST_ECHO

/* An address: AF_INET (the first 4 bytes of addr, the rest 0) or AF_INET6. */
struct bp_addr {
	uint32_t family;
	uint8_t addr[16];
};
_Static_assert(sizeof(struct bp_addr) == 20, "bp_addr");

#define BP_SPAWN_ADDRS_MAX 8

/* The device the guest sees; the numbers are the policy's too. */
enum bp_frontend {
	BP_FRONTEND_POLICY = 0,	     /* the policy's frontend for the VM */
	BP_FRONTEND_VIRTIO_RDMA = 1, /* vhost-user, virtio ID 42 */
	BP_FRONTEND_PVRDMA = 2,	     /* vfio-user, VMware PVRDMA */
	/* no worker: QEMU <= 9.0's own pvrdma device, its MADs through the
	 * mux's rdmacm-mux endpoint (docs/broker.md) */
	BP_FRONTEND_QEMU_PVRDMA = 3,
};
#define BP_FRONTEND_MAX BP_FRONTEND_QEMU_PVRDMA

struct bp_spawn {
	char vm[BP_VM_SIZE];
	/*
	 * The socket the VM's QEMU connects to: a file name in the broker's
	 * socket_dir ("" = "<vm>.sock"), or an absolute path there; only
	 * root may name a directory of its own (owned by root and writable
	 * by root alone).
	 */
	char socket[BP_PATH_SIZE];
	char device[BP_DEVICE_SIZE];	    /* "" = the policy's */
	char test_syscall[BP_SYSCALL_SIZE]; /* "" (test hooks only) */
	uint32_t port;			    /* 0 = the policy's; else 1..255 */
	uint32_t flags;			    /* BP_SPAWN_* */
	/*
	 * The addresses the VM's configuration says it will claim (the
	 * libvirt hook's <address> elements): the spawn is refused unless the
	 * policy allows each to this VM and no other VM owns it, so a
	 * misconfigured VM fails at start, not at its first ADD_GID.
	 * addrs[n_addrs..] are all zero.
	 */
	uint32_t n_addrs; /* 0..BP_SPAWN_ADDRS_MAX */
	struct bp_addr addrs[BP_SPAWN_ADDRS_MAX];
	uint32_t frontend; /* enum bp_frontend */
	uint32_t pad;	   /* 0 */
	/*
	 * "" (the broker derives the level from the worker's uid), or the
	 * MCS level of the VM's QEMU as libvirt's sVirt gave it, exactly
	 * "s0:cA,cB" with A < B <= 1023 in decimal without leading zeros
	 * (bp_mcs_level_check()): the worker and its socket run at it.
	 * Root only.
	 */
	char selinux_level[BP_LEVEL_SIZE];
};
_Static_assert(sizeof(struct bp_spawn) == 488, "bp_spawn");

struct bp_spawn_reply {
	struct bp_status st;
	uint32_t pid, uid, gid;
	uint32_t pad; /* 0 */
};
_Static_assert(sizeof(struct bp_spawn_reply) == 276, "bp_spawn_reply");

struct bp_stop {
	char vm[BP_VM_SIZE];
};
_Static_assert(sizeof(struct bp_stop) == 72, "bp_stop");

enum bp_worker_state {
	BP_STATE_RUNNING = 1,
	BP_STATE_STOPPING = 2, /* SIGTERM sent, not reaped yet */
};

struct bp_worker_info {
	char vm[BP_VM_SIZE];
	char socket[BP_PATH_SIZE];
	char device[BP_DEVICE_SIZE];
	uint32_t pid, uid, gid, port;
	uint32_t state;	     /* enum bp_worker_state */
	uint64_t start_time; /* seconds since the epoch */
};
_Static_assert(sizeof(struct bp_worker_info) == 272, "bp_worker_info");

/*
 * LIST is answered by max(1, total) LIST_REPLY messages, index 0..total-1;
 * with no workers, one message with total 0 and an all-zero info.
 */
struct bp_list_reply {
	struct bp_status st;
	uint32_t total, index;
	uint32_t pad; /* 0 */
	struct bp_worker_info w;
};
_Static_assert(sizeof(struct bp_list_reply) == 544, "bp_list_reply");

struct bp_stats {
	char vm[BP_VM_SIZE]; /* "" = every worker */
};
_Static_assert(sizeof(struct bp_stats) == 72, "bp_stats");

/* bp_stats_reply.flags */
enum {
	/* the worker answered this request (else: its channel is down or it
	 * did not answer in time, and the counters are the last it sent, or
	 * zero) */
	BP_STATS_FRESH = 1u << 0,
};
#define BP_STATS_FLAGS_ALL BP_STATS_FRESH

/*
 * One worker's counters since it started, as the worker reported them on
 * its channel (the broker copies the worker protocol's wp_counters, which
 * has this layout: broker/channel.c asserts it).  Numbers from a worker,
 * for reading only.
 */
struct bp_counters {
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
#define BP_COUNTERS_N (sizeof(struct bp_counters) / sizeof(uint64_t))
_Static_assert(sizeof(struct bp_counters) == 19 * 8, "bp_counters");

/* The names of struct bp_counters' fields, in order (for rdmagatectl). */
extern const char *const bp_counter_names[BP_COUNTERS_N];

/*
 * STATS is answered like LIST: max(1, total) STATS_REPLY messages, index
 * 0..total-1, each with one worker's counters.
 */
struct bp_stats_reply {
	struct bp_status st;
	uint32_t total, index;
	uint32_t flags; /* BP_STATS_* */
	uint32_t pid;
	char vm[BP_VM_SIZE];
	uint32_t pad; /* 0 */
	struct bp_counters c;
};
_Static_assert(sizeof(struct bp_stats_reply) == 504, "bp_stats_reply");

/*
 * A decoded message.  On the wire the payload follows the 12-byte header
 * directly; here it is aligned (bp_send() writes the wire form).
 */
struct bp_msg {
	struct bp_header h;
	union {
		struct bp_status status; /* STOP, RELOAD, ERROR replies */
		struct bp_hello_reply hello_reply;
		struct bp_spawn spawn;
		struct bp_spawn_reply spawn_reply;
		struct bp_stop stop;
		struct bp_list_reply list_reply;
		struct bp_stats stats;
		struct bp_stats_reply stats_reply;
		uint8_t bytes[1]; /* HELLO, LIST, RELOAD: empty */
	} u;
};
/* The longest datagram: the header and the largest payload. */
#define BP_MSG_MAX (sizeof(struct bp_header) + sizeof(struct bp_list_reply))

/* The protocol's table and framing, for msg_conn_open() (common/msg_frame.h).
 */
extern const struct msg_proto bp_protocol;

/* The row of type in the table (from: enum bp_from), or NULL for a type
 * the protocol does not have. */
const struct msg_type *bp_type_info(uint32_t type);
/* "SPAWN", or "unknown" */
const char *bp_type_name(uint32_t type);

/*
 * Decodes one datagram of len bytes into *ret (a copy: buf may be shared
 * or hostile).  Checks, in order: the header is there (-EBADMSG "short"),
 * the datagram is no longer than BP_MSG_MAX (-EMSGSIZE "long"), the
 * version (-EPROTONOSUPPORT), the type (-EOPNOTSUPP), len against the
 * datagram and against the table (-EBADMSG), each string is terminated
 * and padded with NULs, names and paths are well formed, numbers in range
 * (-EINVAL).  Returns 0, or the negative errno with why (may be NULL)
 * naming what was wrong; *ret is untouched on failure.
 */
int bp_decode(const void *buf, size_t len, struct bp_msg *ret,
	      struct reason *why);

/*
 * Fills the header of m for type (len from the table).  Returns the
 * datagram's length, or 0 for a type the protocol does not have.
 */
size_t bp_init(struct bp_msg *m, uint32_t type);

/*
 * Sends m (header + h.len payload bytes) as one datagram.  Returns 0 or
 * -errno.
 */
int bp_send(int fd, const struct bp_msg *m);

/* Fills a reply's status and text (printf format; truncated to fit). */
void bp_set_status(struct bp_status *st, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Copies s into a fixed field of size bytes; -ENAMETOOLONG if it does not
 * fit with its NUL.  The rest of the field is zeroed. */
int bp_set_str(char *field, size_t size, const char *s);

/* A VM name as the policy allows: 1..64 of [A-Za-z0-9_.-], not starting
 * with '.' or '-'. */
bool bp_vm_name_ok(const char *s);

/* A socket's file name: 1..BP_PATH_SIZE-1 of [A-Za-z0-9_.-], not starting
 * with '.' or '-'. */
bool bp_socket_name_ok(const char *s);

/*
 * An MCS level as a VM's worker may run at: exactly "s0:cA,cB", A < B <
 * BP_MCS_CATEGORIES, decimal without sign or leading zeros (one spelling
 * per pair, so equal pairs are equal strings), at most BP_LEVEL_SIZE - 1
 * bytes.  Anything else (another sensitivity, one category or three, a
 * range, c5,c3, c1024, spaces) is -EINVAL with why quoting the string
 * (control characters shown as '?').  On success, *a and *b (may be NULL)
 * are the categories.
 */
int bp_mcs_level_check(const char *s, unsigned int *a, unsigned int *b,
		       struct reason *why);

/* "virtio-rdma", "pvrdma", "qemu-pvrdma" (enum bp_frontend), or NULL. */
const char *bp_frontend_name(uint32_t frontend);
/* The frontend called name, or -EINVAL. */
int bp_frontend_parse(const char *name, uint32_t *ret);

#endif
