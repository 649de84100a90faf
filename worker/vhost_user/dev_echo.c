// SPDX-License-Identifier: MIT
/*
 * The transport test device: every chain's readable bytes are copied into
 * its writable buffers (truncated to what fits), used.len is the number of
 * bytes written, and the queue's call fd is signalled once per round unless
 * the driver said not to (NO_INTERRUPT, or used_event with
 * VIRTIO_F_RING_EVENT_IDX); the driver's kicks are off while a queue is
 * drained; at most ECHO_KICK_BUDGET chains per queue at a time.  While
 * the worker's loop spins (adaptive polling, struct echo_cfg) it polls its
 * rings with the kicks off, as virtio-rdma does.  It exists to test the
 * vhost-user layer end to end; it is selected only with --test-device echo.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "worker/vhost_user/device.h"

#define ECHO_QUEUES	    256
#define ECHO_CONFIG_SIZE    16
#define ECHO_MAGIC	    "rdmagate-echo"
#define ECHO_CONFIG_VERSION 1
/*
 * Chains served per kick (or poll round) and queue: a guest that refills
 * its ring as fast as we drain it must not keep the worker's one thread
 * (and the vhost-user socket, the broker channel) waiting.
 */
#define ECHO_KICK_BUDGET 64u

struct echo {
	const struct echo_cfg *cfg;   /* NULL: never polls its rings */
	struct vq_elem elem;	      /* 16 KiB of iovecs: not on the stack */
	struct iovec in[VQ_MAX_IOV];  /* advancing copy of elem's in[] */
	struct vq *more[ECHO_QUEUES]; /* budget spent, chains may remain */
	unsigned int nmore;
	struct vq *vqs[ECHO_QUEUES]; /* running rings, by index */
	bool polled; /* kicks are off: the loop spun (see echo_poll()) */
	bool spun;   /* echo_poll() saw the loop spinning: kicks went off */
};

static int echo_create(const struct dev_env *env, void **ret_priv)
{
	struct echo *e = calloc(1, sizeof(*e));

	if (!e)
		return -ENOMEM;
	e->cfg = env->cfg;
	*ret_priv = e;
	return 0;
}

static bool spinning(const struct echo *e)
{
	return e->cfg && e->cfg->busy_poll;
}

static void echo_destroy(void *priv)
{
	free(priv);
}

/* "rdmagate-echo\0", version byte, number of queues / 256. */
static void echo_get_config(void *priv, uint8_t *buf)
{
	memset(buf, 0, ECHO_CONFIG_SIZE);
	memcpy(buf, ECHO_MAGIC, sizeof(ECHO_MAGIC));
	buf[14] = ECHO_CONFIG_VERSION;
	buf[15] = ECHO_QUEUES / 256;
}

/* Copies out[] into in[]; returns the bytes written. */
static uint32_t echo_copy(struct echo *e)
{
	struct vq_elem *el = &e->elem;
	uint64_t room = el->in_len, done = 0;
	struct iovec *in = e->in;
	unsigned int i, k = 0;

	memcpy(in, vq_elem_in(el), el->in_num * sizeof(*in));
	for (i = 0; i < el->out_num && done < room; i++) {
		const uint8_t *src = el->iov[i].iov_base;
		size_t left = el->iov[i].iov_len;

		while (left > 0 && k < el->in_num) {
			size_t c = left < in[k].iov_len ? left : in[k].iov_len;

			/* The guest may make in and out overlap. */
			memmove(in[k].iov_base, src, c);
			in[k].iov_base = (uint8_t *)in[k].iov_base + c;
			in[k].iov_len -= c;
			src += c;
			left -= c;
			done += c;
			if (in[k].iov_len == 0)
				k++;
		}
	}
	return (uint32_t)done;
}

/* Serves up to ECHO_KICK_BUDGET chains; true if the budget ran out. */
static bool echo_serve(struct echo *e, struct vq *vq)
{
	unsigned int n = 0;

	vq_disable_notify(vq);
	for (;;) {
		while (n < ECHO_KICK_BUDGET && vq_pop(vq, &e->elem) == 1) {
			vq_push(vq, &e->elem, echo_copy(e));
			n++;
		}
		/* budget spent: kicks stay off, the poll round goes on */
		if (n == ECHO_KICK_BUDGET)
			break;
		/* the loop spins: kicks stay off, echo_poll() looks */
		if (spinning(e)) {
			e->polled = true;
			break;
		}
		if (!vq_enable_notify(vq))
			break;
		vq_disable_notify(vq); /* made available meanwhile */
	}
	if (n)
		vq_notify(vq);
	if (e->cfg && e->cfg->served)
		*e->cfg->served += n;
	return n == ECHO_KICK_BUDGET;
}

static void more_add(struct echo *e, struct vq *vq)
{
	unsigned int i;

	for (i = 0; i < e->nmore; i++)
		if (e->more[i] == vq)
			return;
	e->more[e->nmore++] = vq;
}

static void more_del(struct echo *e, struct vq *vq)
{
	unsigned int i;

	for (i = 0; i < e->nmore; i++)
		if (e->more[i] == vq) {
			e->more[i] = e->more[--e->nmore];
			return;
		}
}

static void echo_kicked(void *priv, struct vq *vq)
{
	struct echo *e = priv;

	/*
	 * A kick is not repeated for buffers the driver adds while we are
	 * still draining: a queue whose budget ran out is served again from
	 * the loop's poll round (echo_wants_poll), after other events.
	 */
	more_del(e, vq);
	if (echo_serve(e, vq))
		more_add(e, vq);
}

static bool echo_wants_poll(void *priv)
{
	const struct echo *e = priv;

	return e->nmore > 0 || spinning(e) || e->polled;
}

/*
 * While the loop spins every running ring is looked at each round, kicks
 * off; the first round after turns them back on and serves what arrived
 * in between (vq_poll_ready()).
 */
static void echo_poll(void *priv)
{
	struct echo *e = priv;
	bool spin = spinning(e), start = spin && !e->spun;
	unsigned int i = 0;

	e->spun = spin;
	if (spin || e->polled) {
		e->polled = spin;
		for (i = 0; i < ECHO_QUEUES; i++)
			if (e->vqs[i] && vq_poll_ready(e->vqs[i], spin, start))
				more_add(e, e->vqs[i]);
		i = 0;
	}
	while (i < e->nmore) {
		if (echo_serve(e, e->more[i]))
			i++;
		else
			e->more[i] = e->more[--e->nmore];
	}
}

static void echo_started(void *priv, struct vq *vq)
{
	struct echo *e = priv;

	if (vq->index < ECHO_QUEUES)
		e->vqs[vq->index] = vq;
}

static void echo_stopped(void *priv, struct vq *vq)
{
	struct echo *e = priv;

	more_del(e, vq);
	if (vq->index < ECHO_QUEUES)
		e->vqs[vq->index] = NULL;
}

static void echo_reset(void *priv)
{
	struct echo *e = priv;

	e->nmore = 0;
	e->polled = e->spun = false;
}

const struct device_ops echo_device_ops = {
	.name = "echo",
	.features = (1ull << VIRTIO_F_VERSION_1) |
		    (1ull << VIRTIO_F_RING_INDIRECT_DESC) |
		    (1ull << VIRTIO_F_RING_EVENT_IDX) |
		    (1ull << VHOST_USER_F_PROTOCOL_FEATURES),
	.num_queues = ECHO_QUEUES,
	.max_ring_size = VQ_MAX_SIZE,
	.config_size = ECHO_CONFIG_SIZE,
	.create = echo_create,
	.destroy = echo_destroy,
	.get_config = echo_get_config,
	.ring_started = echo_started,
	.ring_kicked = echo_kicked,
	.ring_stopped = echo_stopped,
	.reset = echo_reset,
	.wants_poll = echo_wants_poll,
	.poll = echo_poll,
};
