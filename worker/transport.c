// SPDX-License-Identifier: MIT
/* The transports' shared connection glue (worker/transport.h). */
#include "worker/transport.h"

#include <errno.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/stream_msg.h"

/* One message: its bytes in buf, or -errno (-EPIPE at end of stream). */
static ssize_t read_msg(int fd, uint8_t *buf, const struct tp_framing *f,
			int *fds, unsigned int *nfds)
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

int tp_readable(int fd, uint8_t *buf, const struct tp_framing *f, void *conn)
{
	int fds[TP_MAX_FDS];
	unsigned int nfds = 0, i;
	struct tp_reply r = { .fd = -1 };
	ssize_t n;
	int ret;

	if (f->max_fds > TP_MAX_FDS)
		return -EINVAL; /* a framing the build got wrong */
	n = read_msg(fd, buf, f, fds, &nfds);
	if (n < 0) {
		if (n != -EPIPE && n != -EPROTO)
			log_peer_warnx("reading from the %s: %s", f->peer,
				       strerror((int)-n));
		for (i = 0; i < nfds; i++)
			safe_close(fds[i]);
		return (int)n;
	}
	f->handle(conn, buf, (size_t)n, fds, nfds, &r);
	if (r.len) {
		ret = stream_send(fd, r.bytes, r.len, &r.fd, r.fd >= 0);
		if (ret < 0) {
			log_peer_warnx("replying to the %s: %s", f->peer,
				       strerror(-ret));
			return ret;
		}
	}
	return r.disconnect ? -EPROTO : 0;
}
