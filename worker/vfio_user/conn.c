// SPDX-License-Identifier: MIT
/*
 * One vfio-user client connection on the worker's event loop
 * (worker/transport.h): its messages read off the socket and fed to the
 * protocol core (vfu_proto.h), the replies sent back, the PCI function's
 * polling.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "worker/transport.h"
#include "worker/vfio_user/vfu_proto.h"

struct vfu_conn {
	int fd; /* the loop's */
	struct vfu_dev *dev;
	uint8_t buf[VFIO_USER_MAX_MSG];
	struct vfu_result res;
};

/* The size field counts the whole message; out of range, vfu_handle()
 * says so and drops the client. */
static ssize_t body_len(const uint8_t *hdr)
{
	struct vfio_user_header h;

	memcpy(&h, hdr, sizeof(h));
	if (h.size < sizeof(h) || h.size > VFIO_USER_MAX_MSG)
		return -1;
	return (ssize_t)(h.size - sizeof(h));
}

static void handle(void *conn, const uint8_t *buf, size_t len, int *fds,
		   unsigned int nfds, struct tp_reply *out)
{
	struct vfu_conn *c = conn;

	vfu_handle(c->dev, buf, len, fds, nfds, &c->res);
	*out = (struct tp_reply){ c->res.reply.bytes, c->res.reply_len,
				  c->res.reply_fd, c->res.disconnect };
}

_Static_assert(VFIO_USER_MAX_FDS <= TP_MAX_FDS, "fds of one message");

static const struct tp_framing framing = {
	.peer = "vfio-user client",
	.hdr_len = sizeof(struct vfio_user_header),
	.max_fds = VFIO_USER_MAX_FDS,
	.body_len = body_len,
	.handle = handle,
};

static int conn_open(const void *model, const struct tp_env *env, int cfd,
		     void **ret_conn)
{
	struct vfu_conn *c = calloc(1, sizeof(*c));
	int ret;

	if (!c)
		return -ENOMEM;
	ret = vfu_dev_new(model, env->dev, &c->dev);
	if (ret < 0) {
		free(c);
		return ret;
	}
	c->fd = cfd;
	*ret_conn = c;
	return 0;
}

static int conn_readable(void *conn)
{
	struct vfu_conn *c = conn;

	return tp_readable(c->fd, c->buf, &framing, c);
}

static void conn_close(void *conn)
{
	struct vfu_conn *c = conn;

	if (!c)
		return;
	vfu_dev_free(c->dev);
	free(c);
}

static bool conn_wants_poll(const void *conn)
{
	const struct vfu_conn *c = conn;
	const struct pci_fn *fn = &c->dev->fn;

	return fn->ops->wants_poll && fn->ops->wants_poll(fn->priv);
}

/*
 * A function whose doorbells are stores in shared memory (pci_fn_ops
 * .poll_timeout_ns): how long the loop may sleep before it looks.
 */
static int64_t conn_poll_timeout_ns(const void *conn)
{
	const struct vfu_conn *c = conn;
	const struct pci_fn *fn = &c->dev->fn;

	return fn->ops->poll_timeout_ns ? fn->ops->poll_timeout_ns(fn->priv)
					: -1;
}

/* The doorbells found in shared memory count as events. */
static unsigned int conn_poll(void *conn, bool timed)
{
	struct vfu_conn *c = conn;

	if (!timed && !conn_wants_poll(c))
		return 0;
	return c->dev->fn.ops->poll(c->dev->fn.priv);
}

const struct transport_ops vfio_user_transport = {
	.name = "vfio-user",
	.open = conn_open,
	.readable = conn_readable,
	.close = conn_close,
	.poll_timeout_ns = conn_poll_timeout_ns,
	.wants_poll = conn_wants_poll,
	.poll = conn_poll,
};
