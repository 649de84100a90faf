/* SPDX-License-Identifier: MIT */
/*
 * Messages on a UNIX stream socket with SCM_RIGHTS fds attached to their
 * first bytes (vfio-user; the vhost-user framing is the same): receive a
 * header with its fds, read the exact rest, send a message with fds.
 * Blocking I/O; a caller that must not hang sets SO_RCVTIMEO or polls.
 */
#ifndef RDMAGATE_COMMON_STREAM_MSG_H
#define RDMAGATE_COMMON_STREAM_MSG_H

#include <stddef.h>
#include <stdint.h>

/*
 * A message must have arrived whole this long after its first bytes: a
 * peer that sends it a byte at a time holds its reader no longer (each
 * wait within is further bounded by the socket's SO_RCVTIMEO, so a reader
 * is held at most this plus that).
 */
#define STREAM_MSG_MAX_NS (5ull * 1000 * 1000 * 1000)

/*
 * Reads exactly hdr_len bytes, taking the fds that came with them (at most
 * max_fds into fds, *ret_nfds of them; the caller owns them even on
 * failure).  *ret_deadline (CLOCK_MONOTONIC ns): when the whole message
 * must be in, STREAM_MSG_MAX_NS after its first bytes; pass it to
 * stream_read_full() for the rest.  Returns 0, -EPIPE at end of stream
 * (also mid-header), -EPROTO if more than max_fds fds came (the extra ones
 * are closed), -ETIMEDOUT past the deadline, or -errno.
 */
int stream_recv_hdr(int fd, void *hdr, size_t hdr_len, int *fds,
		    unsigned int max_fds, unsigned int *ret_nfds,
		    uint64_t *ret_deadline);
/*
 * Reads exactly len bytes by deadline (CLOCK_MONOTONIC ns, 0: none); 0,
 * -EPIPE at end of stream, -ETIMEDOUT past the deadline, or -errno.
 */
int stream_read_full(int fd, void *buf, size_t len, uint64_t deadline);
/* Sends len bytes with nfds fds attached; 0 or -errno (-EPIPE: closed). */
int stream_send(int fd, const void *buf, size_t len, const int *fds,
		unsigned int nfds);

#endif
