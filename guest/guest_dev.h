/* SPDX-License-Identifier: MIT */
/*
 * The guest simulator as one device: a vhost-user frontend (vhost_client),
 * guest RAM and the virtqueues the "guest driver" brought up, with the
 * lifecycle QEMU and a virtio driver go through together:
 *
 *   guest_dev_connect()   socket + QEMU's device-creation handshake
 *   (caller lays out d->ram: guest_ram_add_region() ...)
 *   guest_dev_start()     SET_FEATURES (+FEATURES_OK), memory table
 *   guest_dev_add_queue() per ring, in any order, any time after start
 *   guest_dev_driver_ok() DRIVER_OK status (with STATUS)
 *   guest_dev_exchange()  one request/response chain, waited for
 *   guest_dev_stop()      disable, GET_VRING_BASE per ring, status 0, reset
 *
 * The next layer (virtio-rdma verbs) sits on guest_dev_exchange() for the
 * control queue and on guest_vq_post()/guest_vq_reap() for SQ, RQ and CQ rings.
 */
#ifndef RDMAGATE_GUEST_GUEST_DEV_H
#define RDMAGATE_GUEST_GUEST_DEV_H

#include <stdbool.h>
#include <stdint.h>

#include "guest/guest_ram.h"
#include "guest/vhost_client.h"
#include "guest/vring.h"

#define GUEST_DEV_MAX_QUEUES 256

/* Virtio feature bits the simulated driver understands. */
#define GUEST_F_RING_INDIRECT_DESC 28
#define GUEST_F_RING_EVENT_IDX	   29
#define GUEST_F_VERSION_1	   32

struct guest_dev {
	struct vhost_client vc;
	struct guest_ram ram;
	struct guest_vq *vq[GUEST_DEV_MAX_QUEUES];
};

void guest_dev_init(struct guest_dev *d);
/* Closes the connection, frees rings and guest RAM. */
void guest_dev_release(struct guest_dev *d);

/* Connects to `path` and runs vhost_client_init(). 0 or -errno. */
int guest_dev_connect(struct guest_dev *d, const char *path,
		      const struct vhost_client_opts *opts);

/*
 * Acknowledges `driver_features` & the device's and sends the memory table
 * for d->ram. The device must offer VERSION_1 (-EOPNOTSUPP otherwise).
 */
int guest_dev_start(struct guest_dev *d, uint64_t driver_features);

/*
 * Lays out ring `index` of `num` entries in guest RAM and brings it up on
 * the device. -ERANGE past GET_QUEUE_NUM, -EEXIST if already up.
 */
int guest_dev_add_queue(struct guest_dev *d, unsigned int index, uint16_t num,
			struct guest_vq **ret_q);

/* ACKNOWLEDGE | DRIVER | DRIVER_OK, as QEMU adds them; 0 without STATUS. */
int guest_dev_driver_ok(struct guest_dev *d);

/*
 * Posts out[] (device-readable) then in[] (device-writable) on `q`, kicks,
 * waits for the used entry (on the call eventfd, or by polling the used
 * ring when the queue has NO_INTERRUPT set), reaps it and checks that it is
 * the chain just posted. *ret_len is what the device says it wrote.
 * 0, -ETIMEDOUT, -EPROTO (wrong id, or more written than offered).
 */
int guest_dev_exchange(struct guest_dev *d, struct guest_vq *q,
		       const struct guest_sg *out, unsigned int nout,
		       const struct guest_sg *in, unsigned int nin,
		       bool indirect, int timeout_ms, uint32_t *ret_len);

/* Disables ring `index` and reads its base back (GET_VRING_BASE). */
int guest_dev_stop_queue(struct guest_dev *d, unsigned int index,
			 uint32_t *ret_base);

/*
 * Stops ring `index` (guest_dev_stop_queue()) and forgets it, so that the
 * index can be brought up again with guest_dev_add_queue(): what a virtio
 * queue reset amounts to over vhost-user (QEMU stops the ring and starts
 * it again). The ring's guest RAM is not reclaimed. 0, -ENOENT, -errno.
 */
int guest_dev_remove_queue(struct guest_dev *d, unsigned int index);

/* Stops every ring, clears the status, resets the device. */
int guest_dev_stop(struct guest_dev *d);

#endif
