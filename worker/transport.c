// SPDX-License-Identifier: MIT
/* The transports' shared connection glue (worker/transport.h). */
#include "worker/transport.h"

#include <errno.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/stream_msg.h"

ssize_t tp_read_msg(int fd, uint8_t *buf, const struct tp_framing *f, int *fds,
		    unsigned int *nfds)
{
	uint64_t deadline;
	ssize_t body;
	int ret;

	ret = stream_recv_hdr(fd, buf, f->hdr_len, fds, f->max_fds, nfds,
			      &deadline);
	if (ret == -EPROTO)
		log_peer_warnx("%s sent more than %u fds with one message; "
			       "dropping the connection",
			       f->peer, f->max_fds);
	if (ret < 0)
		return ret;
	body = f->body_len(buf);
	if (body < 0)
		return (ssize_t)f->hdr_len;
	ret = stream_read_full(fd, buf + f->hdr_len, (size_t)body, deadline);
	return ret < 0 ? ret : (ssize_t)f->hdr_len + body;
}

void tp_read_failed(const struct tp_framing *f, ssize_t err, int *fds,
		    unsigned int nfds)
{
	unsigned int i;

	if (err != -EPIPE && err != -EPROTO)
		log_peer_warnx("reading from the %s: %s", f->peer,
			       strerror((int)-err));
	for (i = 0; i < nfds; i++)
		safe_close(fds[i]);
}

int tp_reply(int fd, const struct tp_framing *f, const void *bytes, size_t len,
	     int reply_fd, bool disconnect)
{
	int ret;

	if (len) {
		ret = stream_send(fd, bytes, len, &reply_fd, reply_fd >= 0);
		if (ret < 0) {
			log_peer_warnx("replying to the %s: %s", f->peer,
				       strerror(-ret));
			return ret;
		}
	}
	return disconnect ? -EPROTO : 0;
}
