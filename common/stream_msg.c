// SPDX-License-Identifier: MIT
/* Messages with fds on a UNIX stream socket (see stream_msg.h). */
#include "stream_msg.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "cleanup.h"
#include "clock.h"

/* The most fds one message may carry in either direction. */
#define STREAM_MAX_FDS 16

static void take_fds(struct msghdr *mh, int *fds, unsigned int max_fds,
		     unsigned int *nfds, bool *ret_extra)
{
	struct cmsghdr *c;

	for (c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		size_t n, i;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < n; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
			if (*nfds < max_fds) {
				fds[(*nfds)++] = fd;
			} else {
				safe_close(fd);
				*ret_extra = true;
			}
		}
	}
}

int stream_read_full(int fd, void *buf, size_t len, uint64_t deadline)
{
	uint8_t *p = buf;

	while (len > 0) {
		ssize_t n;

		/* checked between waits: each is bounded by SO_RCVTIMEO */
		if (deadline && mono_ns() >= deadline)
			return -ETIMEDOUT;
		n = recv(fd, p, len, MSG_WAITALL);
		if (n == 0)
			return -EPIPE;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == ECONNRESET ? -EPIPE : -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int stream_recv_hdr(int fd, void *hdr, size_t hdr_len, int *fds,
		    unsigned int max_fds, unsigned int *ret_nfds,
		    uint64_t *ret_deadline)
{
	union {
		char b[CMSG_SPACE(STREAM_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { hdr, hdr_len };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = ctl.b,
			     .msg_controllen = sizeof(ctl.b) };
	bool extra = false;
	ssize_t n;

	*ret_nfds = 0;
	do
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n == 0)
		return -EPIPE;
	if (n < 0)
		return errno == ECONNRESET ? -EPIPE : -errno;
	*ret_deadline = mono_ns() + STREAM_MSG_MAX_NS;
	take_fds(&mh, fds, max_fds, ret_nfds, &extra);
	if (extra || (mh.msg_flags & MSG_CTRUNC))
		return -EPROTO;
	return stream_read_full(fd, (uint8_t *)hdr + n, hdr_len - (size_t)n,
				*ret_deadline);
}

int stream_send(int fd, const void *buf, size_t len, const int *fds,
		unsigned int nfds)
{
	union {
		char b[CMSG_SPACE(STREAM_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { (void *)buf, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	const uint8_t *p = buf;
	ssize_t n;

	if (nfds > STREAM_MAX_FDS)
		return -EINVAL;
	if (nfds) {
		struct cmsghdr *c;

		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.b;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	}
	while (len > 0) {
		n = sendmsg(fd, &mh, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		/* the fds went with the first bytes */
		mh.msg_control = NULL;
		mh.msg_controllen = 0;
		p += n;
		len -= (size_t)n;
		iov = (struct iovec){ (void *)p, len };
	}
	return 0;
}
