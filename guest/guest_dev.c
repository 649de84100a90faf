// SPDX-License-Identifier: MIT
/* The guest simulator's device lifecycle: frontend, RAM and rings together. */
#include "guest/guest_dev.h"

#include <errno.h>
#include <linux/virtio_config.h>
#include <stdlib.h>
#include <string.h>

void guest_dev_init(struct guest_dev *d)
{
	memset(d, 0, sizeof(*d));
	d->vc.fd = -1;
	guest_ram_init(&d->ram);
}

void guest_dev_release(struct guest_dev *d)
{
	vhost_client_close(&d->vc);
	for (unsigned int i = 0; i < GUEST_DEV_MAX_QUEUES; i++) {
		if (!d->vq[i])
			continue;
		guest_vq_release(d->vq[i]);
		free(d->vq[i]);
		d->vq[i] = NULL;
	}
	guest_ram_release(&d->ram);
}

int guest_dev_connect(struct guest_dev *d, const char *path,
		      const struct vhost_client_opts *opts)
{
	int r = vhost_client_connect(&d->vc, path, opts->timeout_ms);

	if (r)
		return r;
	r = vhost_client_init(&d->vc, opts);
	if (r)
		vhost_client_close(&d->vc);
	return r;
}

int guest_dev_start(struct guest_dev *d, uint64_t driver_features)
{
	int r;

	if (!(d->vc.device_features & (1ull << GUEST_F_VERSION_1)))
		return -EOPNOTSUPP;
	r = vhost_client_set_features(&d->vc, driver_features);
	if (!r)
		r = vhost_client_set_mem_table(&d->vc, &d->ram);
	return r;
}

int guest_dev_add_queue(struct guest_dev *d, unsigned int index, uint16_t num,
			struct guest_vq **ret_q)
{
	struct guest_vq *q;
	int r;

	if (index >= GUEST_DEV_MAX_QUEUES ||
	    (d->vc.queue_num && index >= d->vc.queue_num))
		return -ERANGE;
	if (d->vq[index])
		return -EEXIST;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	r = guest_vq_init(q, &d->ram, index, num);
	guest_vq_set_event_idx(q, d->vc.features &
					  (1ull << GUEST_F_RING_EVENT_IDX));
	q->link_fd = d->vc.fd;
	if (!r)
		r = vhost_client_start_vring(&d->vc, q, 0);
	if (r) {
		guest_vq_release(q);
		free(q);
		return r;
	}
	d->vq[index] = q;
	if (ret_q)
		*ret_q = q;
	return 0;
}

int guest_dev_driver_ok(struct guest_dev *d)
{
	if (!vhost_client_has_protocol(&d->vc, VHOST_USER_PROTOCOL_F_STATUS))
		return 0;
	return vhost_client_add_status(
		&d->vc, VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER |
				VIRTIO_CONFIG_S_DRIVER_OK);
}

static bool polled(const struct guest_vq *q)
{
	return q->no_interrupt;
}

/* Waits for one used entry: interrupt-driven or polled. */
static int wait_used(struct guest_vq *q, int timeout_ms, struct guest_used *ret)
{
	int r;

	if (polled(q))
		return guest_vq_poll_reap(q, timeout_ms, ret);
	while ((r = guest_vq_reap(q, ret)) == -EAGAIN) {
		r = guest_vq_wait_call(q, timeout_ms);
		if (r)
			return r;
	}
	return r;
}

int guest_dev_exchange(struct guest_dev *d, struct guest_vq *q,
		       const struct guest_sg *out, unsigned int nout,
		       const struct guest_sg *in, unsigned int nin,
		       bool indirect, int timeout_ms, uint32_t *ret_len)
{
	struct guest_used u;
	uint64_t room = 0;
	uint16_t head;
	int r;

	if (guest_vq_link_down(q))
		return -ENOTCONN; /* the device is gone: fail now, not late */
	for (unsigned int i = 0; i < nin; i++)
		room += in[i].len;
	r = guest_vq_post(q, out, nout, in, nin, indirect, NULL, &head);
	if (r)
		return r;
	r = guest_vq_kick(q);
	if (r < 0)
		return r;
	r = wait_used(q, timeout_ms, &u);
	if (r)
		return r;
	if (u.id != head || u.len > room)
		return -EPROTO;
	*ret_len = u.len;
	return 0;
}

int guest_dev_stop_queue(struct guest_dev *d, unsigned int index,
			 uint32_t *ret_base)
{
	int r = 0;

	if (d->vc.features & (1ull << VHOST_USER_F_PROTOCOL_FEATURES))
		r = vhost_client_set_vring_enable(&d->vc, index, false);
	if (!r)
		r = vhost_client_get_vring_base(&d->vc, index, ret_base);
	return r;
}

int guest_dev_remove_queue(struct guest_dev *d, unsigned int index)
{
	uint32_t base;
	int r;

	if (index >= GUEST_DEV_MAX_QUEUES || !d->vq[index])
		return -ENOENT;
	r = guest_dev_stop_queue(d, index, &base);
	guest_vq_release(d->vq[index]);
	free(d->vq[index]);
	d->vq[index] = NULL;
	return r;
}

int guest_dev_stop(struct guest_dev *d)
{
	bool pf = d->vc.features & (1ull << VHOST_USER_F_PROTOCOL_FEATURES);
	uint32_t base;
	int r;

	/* QEMU's vhost_dev_stop(): disable every ring, then read bases */
	for (unsigned int i = 0; pf && i < GUEST_DEV_MAX_QUEUES; i++) {
		if (!d->vq[i])
			continue;
		r = vhost_client_set_vring_enable(&d->vc, i, false);
		if (r)
			return r;
	}
	for (unsigned int i = 0; i < GUEST_DEV_MAX_QUEUES; i++) {
		if (!d->vq[i])
			continue;
		r = vhost_client_get_vring_base(&d->vc, i, &base);
		if (r)
			return r;
	}
	if (vhost_client_has_protocol(&d->vc, VHOST_USER_PROTOCOL_F_STATUS)) {
		r = vhost_client_set_status(&d->vc, 0);
		if (r)
			return r;
	}
	return vhost_client_reset_device(&d->vc);
}
