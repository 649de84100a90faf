// SPDX-License-Identifier: MIT
/*
 * One vhost-user frontend connection on the worker's event loop
 * (worker/transport.h): its messages read off the socket and fed to the
 * protocol core (vu_proto.h), the replies sent back, the rings' kick fds
 * and the polling of rings without one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/probes.h"
#include "worker/transport.h"
#include "worker/vhost_user/vu_proto.h"

struct vu_conn {
	int fd; /* the loop's */
	struct vu_host_ops host;
	struct vu_dev *dev;
	uint8_t buf[sizeof(struct vhost_user_msg)];
	struct vu_result res;
};

/* The size field counts the payload; past the largest, vu_handle() says. */
static ssize_t body_len(const uint8_t *hdr)
{
	struct vhost_user_header h;

	memcpy(&h, hdr, sizeof(h));
	return h.size > VHOST_USER_MAX_PAYLOAD ? -1 : (ssize_t)h.size;
}

static void handle(void *conn, const uint8_t *buf, size_t len, int *fds,
		   unsigned int nfds, struct tp_reply *out)
{
	struct vu_conn *c = conn;

	vu_handle(c->dev, buf, len, fds, nfds, &c->res);
	*out = (struct tp_reply){ c->res.reply.bytes, c->res.reply_len, -1,
				  c->res.disconnect };
}

_Static_assert(VHOST_USER_MAX_FDS <= TP_MAX_FDS, "fds of one message");

static const struct tp_framing framing = {
	.peer = "frontend",
	.hdr_len = sizeof(struct vhost_user_header),
	.max_fds = VHOST_USER_MAX_FDS,
	.body_len = body_len,
	.handle = handle,
};

static int conn_open(const void *model, const struct tp_env *env, int cfd,
		     void **ret_conn)
{
	struct vu_conn *c = calloc(1, sizeof(*c));
	int ret;

	if (!c)
		return -ENOMEM;
	c->host.watch_kick = env->watch_kick;
	c->host.unwatch_kick = env->unwatch_kick;
	ret = vu_dev_new_env(model, &c->host, env->dev->loop_ctx, env->dev,
			     &c->dev);
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
	struct vu_conn *c = conn;

	return tp_readable(c->fd, c->buf, &framing, c);
}

static void conn_close(void *conn)
{
	struct vu_conn *c = conn;

	if (!c)
		return;
	vu_dev_free(c->dev);
	free(c);
}

static void conn_kick(void *conn, unsigned int q)
{
	struct vu_conn *c = conn;
	uint64_t v;
	int fd;

	/* The event may be stale: the ring's fd changed. */
	if (q >= c->dev->ops->num_queues)
		return;
	fd = c->dev->rings[q].kick_fd;
	if (fd < 0)
		return;
	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_peer_warn("reading the kick fd of queue %u", q);
	RDMAGATE_KICK(rdmagate_probe_vm, q);
	vu_kick(c->dev, q);
}

/* A running ring without a kick fd is looked at every millisecond. */
static int64_t conn_poll_timeout_ns(const void *conn)
{
	const struct vu_conn *c = conn;

	return vu_needs_poll(c->dev) ? 1000000 : -1;
}

static bool conn_wants_poll(const void *conn)
{
	const struct vu_conn *c = conn;
	const struct device_ops *ops = c->dev->ops;

	return ops->wants_poll && ops->wants_poll(c->dev->priv);
}

/* The device's work is counted by the device (the loop's counters). */
static unsigned int conn_poll(void *conn, bool timed)
{
	struct vu_conn *c = conn;

	if (vu_needs_poll(c->dev))
		vu_poll(c->dev);
	if (conn_wants_poll(c))
		c->dev->ops->poll(c->dev->priv);
	return 0;
}

const struct transport_ops vhost_user_transport = {
	.name = "vhost-user",
	.open = conn_open,
	.readable = conn_readable,
	.close = conn_close,
	.kick = conn_kick,
	.poll_timeout_ns = conn_poll_timeout_ns,
	.wants_poll = conn_wants_poll,
	.poll = conn_poll,
};
