/* SPDX-License-Identifier: MIT */
/*
 * The framing every rdmagate SOCK_SEQPACKET protocol shares (the broker's
 * control protocol, the broker-worker channel, the mux's): one datagram is
 * one message, a header {version, type, len} and exactly len payload
 * bytes; a table gives each type its name, exact payload size, who may
 * send it, how many fds it carries, whether it opens the connection, and a
 * check of its fields; one decoder copies the datagram out before checking
 * anything, and one receive helper (msg_conn_recv) applies the rest of the
 * table to a connection and its peer (SO_PEERCRED).  Each protocol's
 * header (common/broker_proto.h, common/worker_proto.h, common/mux_proto.h)
 * defines its messages and its table; this file only frames them.  Linked
 * by every process; pure except msg_send, msg_recv, msg_conn_open and
 * msg_conn_recv.
 */
#ifndef RDMAGATE_COMMON_MSG_FRAME_H
#define RDMAGATE_COMMON_MSG_FRAME_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h> /* ssize_t */

#include "common/reason.h"

struct msg_header {
	uint32_t version;
	uint32_t type;
	uint32_t len; /* payload bytes after the header */
};
_Static_assert(sizeof(struct msg_header) == 12, "msg_header");

/* The largest decoded message (header + aligned payload) a protocol may
 * have: the decoder works on a copy of this size on its stack. */
#define MSG_CONTAINER_MAX 1024

/*
 * Checks one decoded message (msg is the protocol's container: the header
 * at offset 0, the payload at the protocol's payload_offset).  Returns 0 or
 * -EINVAL with why filled (msg_fail).
 */
typedef int (*msg_check_fn)(const void *msg, struct reason *why);

/* When a message may come on a connection (struct msg_type.phase). */
enum msg_phase {
	MSG_ANYTIME = 0,
	/* the first message on a connection, and only once (HELLO): the
	 * receive helper refuses every other type before it, and a second */
	MSG_FIRST,
};

struct msg_type {
	uint32_t type;
	const char *name;
	uint32_t size; /* exact payload size */
	uint32_t from; /* who may send it: the protocol's own enum */
	msg_check_fn check;
	uint8_t fds;   /* exact number of fds in SCM_RIGHTS (0 or 1) */
	uint8_t phase; /* enum msg_phase */
};

struct msg_proto {
	const char *name; /* for messages: "control", "worker channel" */
	uint32_t version;
	size_t payload_offset; /* of the payload in the container */
	size_t container_size; /* <= MSG_CONTAINER_MAX */
	size_t max_datagram;   /* header + the largest payload */
	const struct msg_type *types;
	size_t n_types;
	/* "the broker", for msg_decode_from()'s messages (may be NULL) */
	const char *(*from_name)(uint32_t from);
	/* the "from" values (bit 1u << from) only uid 0 may send: the
	 * receive helper checks the peer's SO_PEERCRED against it */
	uint32_t root_from;
};

/* The row of type, or NULL for a type the protocol does not have. */
const struct msg_type *msg_type_of(const struct msg_proto *p, uint32_t type);

/*
 * Decodes one datagram of len bytes into the container *ret (a copy: buf
 * may be shared or hostile).  Checks, in order: the header is there
 * (-EBADMSG "short"), the datagram is no longer than max_datagram
 * (-EMSGSIZE "long"), the version (-EPROTONOSUPPORT), the type
 * (-EOPNOTSUPP), len against the datagram and against the table
 * (-EBADMSG), then the type's check (-EINVAL).  Returns 0, or the negative
 * errno with why (may be NULL) naming what was wrong; *ret is untouched on
 * failure.
 */
int msg_decode(const struct msg_proto *p, const void *buf, size_t len,
	       void *ret, struct reason *why);
/*
 * The same for a message that `from` (the table's "from" value) is
 * expected to have sent: after the type, a type that `from` does not send
 * is refused (-EOPNOTSUPP, "GID_ADD: sent by the broker, not by a
 * worker").  from 0 accepts any sender.
 */
int msg_decode_from(const struct msg_proto *p, const void *buf, size_t len,
		    uint32_t from, void *ret, struct reason *why);

/* The most fds a message carries (struct msg_type.fds). */
#define MSG_FDS_MAX 1

/*
 * One end of a connection as the receive helper sees it: which protocol,
 * who the peer is, and where the connection is in its phases.
 */
struct msg_conn {
	const struct msg_proto *p;
	uint32_t from_mask; /* the "from" values the peer sends (1u << from) */
	uint32_t uid;	    /* the peer's, from SO_PEERCRED */
	uint32_t gid;	    /* the same */
	int32_t pid;	    /* the same (logs) */
	bool started;	    /* its MSG_FIRST message came */
};

/*
 * Starts *c for the connected socket fd whose peer sends the types whose
 * "from" is in from_mask: reads the peer's SO_PEERCRED, and refuses a peer
 * that is not root when every type it sends is root's alone (p->root_from)
 * (-EPERM, why names the uid).  Returns 0 or -errno.
 */
int msg_conn_open(struct msg_conn *c, const struct msg_proto *p, int fd,
		  uint32_t from_mask, struct reason *why);

/* The connection starts over (its MSG_FIRST message was refused above the
 * protocol: the next message must be one again). */
void msg_conn_restart(struct msg_conn *c);

/*
 * The pure half of msg_conn_recv(): decodes one datagram of len bytes that
 * came with nfds fds (msg_decode()), then checks, in order: the peer sends
 * that type (-EOPNOTSUPP "GID_ADD: sent by the broker"), it may (uid 0
 * for p->root_from: -EPERM), the fd count (-EBADMSG "WORKER_ATTACH: 0
 * fds, it carries 1"), the phase (-EPROTO "GID_ADD before HELLO",
 * "a second HELLO").  Returns 0 with *ret filled and the connection's
 * phase advanced, or the negative errno with why saying what was wrong
 * (*ret untouched).
 */
int msg_conn_decode(struct msg_conn *c, const void *buf, size_t len,
		    unsigned int nfds, void *ret, struct reason *why);

/*
 * Receives one datagram on fd (flags add to recvmsg's, e.g. MSG_DONTWAIT)
 * and decodes it with msg_conn_decode().  Returns 1 with *ret filled and
 * the fd the message carries in *ret_fd (close-on-exec; -1 when the type
 * carries none; with ret_fd NULL every fd is closed, and a type that
 * carries one is refused); 0 when there is nothing to read; -EPIPE when
 * the connection is gone (the peer shut it down or closed it, or recvmsg
 * failed: why says); any other -errno when the message was refused (why
 * says; the datagram is consumed, its fds closed, the connection still
 * usable), -EBADMSG "an empty message" for a zero-length datagram.
 * *ret and *ret_fd are untouched unless it returns 1.
 */
int msg_conn_recv(struct msg_conn *c, int fd, void *ret, int *ret_fd, int flags,
		  struct reason *why);

/*
 * Zeroes the container m and fills its header for type (len from the
 * table).  Returns the datagram's length, or 0 for a type the protocol
 * does not have.
 */
size_t msg_init(const struct msg_proto *p, void *m, uint32_t type);

/*
 * Sends the container m (its header, then h.len payload bytes) as one
 * datagram, with pass_fd in SCM_RIGHTS unless it is -1.  Never raises
 * SIGPIPE; flags add to MSG_NOSIGNAL (e.g. MSG_DONTWAIT).  Returns 0 or
 * -errno (-EAGAIN when a non-blocking peer's queue is full).
 */
int msg_send(const struct msg_proto *p, int fd, const void *m, int pass_fd,
	     int flags);

/*
 * Receives one datagram into buf (size bytes); flags add to recvmsg's
 * (e.g. MSG_DONTWAIT).  A datagram longer than size is consumed and reported as
 * -EMSGSIZE; an fd passed with it goes to *ret_fd (close-on-exec) when
 * ret_fd is not NULL, and is closed otherwise (*ret_fd = -1 when none).
 * Returns the length (0 means the peer closed), or -errno.
 */
ssize_t msg_recv(int fd, void *buf, size_t size, int *ret_fd, int flags);

/*
 * Formats *why (if not NULL) as reason_fail() does, as one line of
 * printable ASCII (any other byte, from a peer's field, becomes '?'), and
 * returns err: a decoder's `return msg_fail(why, -EINVAL, ...)`.
 */
int msg_fail(struct reason *why, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Copies s into a fixed field of size bytes; -ENAMETOOLONG if it does not
 * fit with its NUL.  The rest of the field is zeroed. */
int msg_set_str(char *field, size_t size, const char *s);

/* Formats into a fixed text field of size bytes (truncated to fit), the
 * rest of it zeroed: a reply's status text. */
void msg_vset_text(char *field, size_t size, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

/* The string's length in a fixed field, or -EINVAL if the field has no
 * NUL or has bytes other than NUL after it. */
int msg_field_len(const char *f, size_t size);

/* Every one of the len bytes at p is 0 (padding, unused entries). */
bool msg_all_zero(const void *p, size_t len);

/* [A-Za-z0-9_.-]{1,max}, not starting with '.' or '-' */
bool msg_name_ok(const char *s, size_t max);

#endif
