/* SPDX-License-Identifier: MIT */
/*
 * The framing every rdmagate SOCK_SEQPACKET protocol shares (the broker's
 * control protocol, the broker-worker channel): one datagram is one
 * message, a header {version, type, len} and exactly len payload bytes; a
 * table gives each type its name, exact payload size, who may send it and a
 * check of its fields; one decoder copies the datagram out before checking
 * anything.  Each protocol's header (common/broker_proto.h,
 * common/worker_proto.h) defines its messages and its table; this file only
 * frames them.  Linked by every process; pure except msg_send/msg_recv.
 */
#ifndef RDMAGATE_COMMON_MSG_FRAME_H
#define RDMAGATE_COMMON_MSG_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h> /* ssize_t */

struct msg_header {
	uint32_t version;
	uint32_t type;
	uint32_t len; /* payload bytes after the header */
};
_Static_assert(sizeof(struct msg_header) == 12, "msg_header");

/* Room for a decoder's error message. */
#define MSG_ERR_LEN 160
/* The largest decoded message (header + aligned payload) a protocol may
 * have: the decoder works on a copy of this size on its stack. */
#define MSG_CONTAINER_MAX 1024

/*
 * Checks one decoded message (msg is the protocol's container: the header
 * at offset 0, the payload at the protocol's payload_offset).  Returns 0 or
 * -EINVAL with err filled (msg_set_err).
 */
typedef int (*msg_check_fn)(const void *msg, char *err);

struct msg_type {
	uint32_t type;
	const char *name;
	uint32_t size; /* exact payload size */
	uint32_t from; /* who may send it: the protocol's own enum */
	msg_check_fn check;
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
 * errno with err (MSG_ERR_LEN bytes, may be NULL) naming what was wrong;
 * *ret is untouched on failure.
 */
int msg_decode(const struct msg_proto *p, const void *buf, size_t len,
	       void *ret, char *err);
/*
 * The same for a message that `from` (the table's "from" value) is
 * expected to have sent: after the type, a type that `from` does not send
 * is refused (-EOPNOTSUPP, "GID_ADD: sent by the broker, not by a
 * worker").  from 0 accepts any sender.
 */
int msg_decode_from(const struct msg_proto *p, const void *buf, size_t len,
		    uint32_t from, void *ret, char *err);

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

/* err = the formatted message (MSG_ERR_LEN), one line of printable ASCII
 * (any other byte, from a peer's field, becomes '?'); err may be NULL. */
void msg_set_err(char *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The string's length in a fixed field, or -1 if the field has no NUL or
 * has bytes other than NUL after it. */
int msg_field_len(const char *f, size_t size);

/* Every one of the len bytes at p is 0 (padding, unused entries). */
bool msg_all_zero(const void *p, size_t len);

/* [A-Za-z0-9_.-]{1,max}, not starting with '.' or '-' */
bool msg_name_ok(const char *s, size_t max);

#endif
