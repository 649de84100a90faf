// SPDX-License-Identifier: MIT
/* One vfio-user client connection on the worker's event loop. */
#include "worker/vfio_user/conn.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/stream_msg.h"
#include "worker/vfio_user/vfu_proto.h"

struct vfu_conn {
	int fd; /* the caller's */
	struct vfu_dev *dev;
	uint8_t buf[VFIO_USER_MAX_MSG];
	struct vfu_result res;
};

const struct pci_fn_ops *vfu_test_function(const char *name)
{
	return strcmp(name, "pci-test") == 0 ? &pci_test_fn_ops : NULL;
}

int vfu_conn_open(const struct pci_fn_ops *ops, const struct dev_env *env,
		  int cfd, struct vfu_conn **ret_conn)
{
	struct vfu_conn *c = calloc(1, sizeof(*c));
	int ret;

	if (!c)
		return -ENOMEM;
	ret = vfu_dev_new(ops, env, &c->dev);
	if (ret < 0) {
		free(c);
		return ret;
	}
	c->fd = cfd;
	*ret_conn = c;
	return 0;
}

/*
 * One message: the header with its fds, then the rest unless the size
 * field is out of range (the core reports that and drops the client).
 * Returns the bytes in c->buf, or -errno.
 */
static ssize_t read_msg(struct vfu_conn *c, int *fds, unsigned int *nfds)
{
	struct vfio_user_header h;
	uint64_t deadline;
	int ret;

	ret = stream_recv_hdr(c->fd, c->buf, sizeof(h), fds, VFIO_USER_MAX_FDS,
			      nfds, &deadline);
	if (ret == -EPROTO)
		log_peer_warnx(
			"vfio-user client sent more than %d fds with one "
			"message; dropping the connection",
			VFIO_USER_MAX_FDS);
	if (ret < 0)
		return ret;
	memcpy(&h, c->buf, sizeof(h));
	if (h.size < sizeof(h) || h.size > VFIO_USER_MAX_MSG)
		return sizeof(h);
	ret = stream_read_full(c->fd, c->buf + sizeof(h), h.size - sizeof(h),
			       deadline);
	return ret < 0 ? ret : (ssize_t)h.size;
}

int vfu_conn_readable(struct vfu_conn *c)
{
	int fds[VFIO_USER_MAX_FDS];
	unsigned int nfds = 0, i;
	ssize_t n;
	int ret;

	n = read_msg(c, fds, &nfds);
	if (n < 0) {
		if (n != -EPIPE && n != -EPROTO)
			log_peer_warnx("reading from the vfio-user client: %s",
				       strerror((int)-n));
		for (i = 0; i < nfds; i++)
			safe_close(fds[i]);
		return (int)n;
	}
	vfu_handle(c->dev, c->buf, (size_t)n, fds, nfds, &c->res);
	if (c->res.reply_len) {
		ret = stream_send(c->fd, c->res.reply.bytes, c->res.reply_len,
				  &c->res.reply_fd, c->res.reply_fd >= 0);
		if (ret < 0) {
			log_peer_warnx("replying to the vfio-user client: %s",
				       strerror(-ret));
			return ret;
		}
	}
	return c->res.disconnect ? -EPROTO : 0;
}

void vfu_conn_close(struct vfu_conn *c)
{
	if (!c)
		return;
	vfu_dev_free(c->dev);
	free(c);
}

bool vfu_conn_wants_poll(const struct vfu_conn *c)
{
	const struct pci_fn *fn = &c->dev->fn;

	return fn->ops->wants_poll && fn->ops->wants_poll(fn->priv);
}

unsigned int vfu_conn_poll(struct vfu_conn *c)
{
	return c->dev->fn.ops->poll(c->dev->fn.priv);
}

int64_t vfu_conn_poll_timeout_ns(const struct vfu_conn *c)
{
	const struct pci_fn *fn = &c->dev->fn;

	return fn->ops->poll_timeout_ns ? fn->ops->poll_timeout_ns(fn->priv)
					: -1;
}
