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

/*
 * Reads exactly hdr_len bytes, taking the fds that came with them (at most
 * max_fds into fds, *ret_nfds of them; the caller owns them even on
 * failure).  Returns 0, -EPIPE at end of stream (also mid-header),
 * -EPROTO if more than max_fds fds came (the extra ones are closed), or
 * -errno.
 */
int stream_recv_hdr(int fd, void *hdr, size_t hdr_len, int *fds,
		    unsigned int max_fds, unsigned int *ret_nfds);
/* Reads exactly len bytes; 0, -EPIPE at end of stream, or -errno. */
int stream_read_full(int fd, void *buf, size_t len);
/* Sends len bytes with nfds fds attached; 0 or -errno (-EPIPE: closed). */
int stream_send(int fd, const void *buf, size_t len, const int *fds,
		unsigned int nfds);

#endif
