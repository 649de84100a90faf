/* SPDX-License-Identifier: MIT */
/*
 * The interface between the vhost-user layer (vu_proto) and the virtio
 * device the worker implements on top of it (virtio-rdma, or the echo
 * test device): a const ops table.  What the process gives a device at
 * create time, struct dev_env, is in worker/dev_env.h: the same for a
 * vfio-user PCI function and the verbs backend.
 *
 * The vhost-user layer owns the connection, guest memory and the rings; a
 * device sees only its private state and struct vq handles.  It pops
 * chains with vq_pop() (iovecs of readable and writable host buffers,
 * already translated and bounds-checked), returns them with vq_push() and
 * signals the driver with vq_notify().  All callbacks run on the worker's
 * one thread, never re-entered.  The buffers are guest memory: the guest
 * may change them at any time and may make readable and writable buffers
 * overlap, so copy what you parse out once, and never memcpy() between two
 * guest buffers (memmove() or a private bounce buffer).
 *
 * Ring life cycle, per queue: ring_started() once the ring is configured
 * (size, addresses, kick fd, memory) and enabled -- rings come up one at a
 * time, in any order, and many never do; ring_kicked() when the driver
 * kicked it (also once right after ring_started(), for buffers made
 * available before); ring_stopped() before its memory goes away
 * (GET_VRING_BASE, reset, new memory table, disconnect).  reset() follows
 * RESET_DEVICE / RESET_OWNER after every ring was stopped.  mem_gone()
 * (optional) when guest memory leaves the table (a SET_MEM_TABLE without
 * it, REM_MEM_REG), before it is unmapped: nothing the device registered
 * over it may stay usable.
 */
#ifndef RDMAGATE_WORKER_DEVICE_H
#define RDMAGATE_WORKER_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/vhost_user.h" /* VHOST_USER_F_PROTOCOL_FEATURES */
#include "worker/dev_env.h"
#include "worker/vhost_user/virtq.h"

struct device_ops {
	const char *name;	/* for logs: "echo", "virtio-rdma" */
	uint64_t features;	/* virtio feature bits offered */
	uint16_t num_queues;	/* GET_QUEUE_NUM; queue index < this */
	uint16_t max_ring_size; /* power of 2, <= VQ_MAX_SIZE */
	uint32_t config_size;	/* bytes of config space, <= 256 */

	/* Per connection: make and free the private state. -errno on error. */
	int (*create)(const struct dev_env *env, void **ret_priv);
	void (*destroy)(void *priv);
	/* Fills buf with the config_size bytes of config space. */
	void (*get_config)(void *priv, uint8_t *buf);
	void (*ring_started)(void *priv, struct vq *vq);
	void (*ring_kicked)(void *priv, struct vq *vq);
	void (*ring_stopped)(void *priv, struct vq *vq);
	void (*reset)(void *priv);
	void (*mem_gone)(void *priv, uint64_t gpa, uint64_t size);
	/*
	 * Optional busy polling: when wants_poll() is true the loop does not
	 * sleep and calls poll() after every round of events.
	 */
	bool (*wants_poll)(void *priv);
	void (*poll)(void *priv);
};

/* The transport test device (dev_echo.c); see docs/vhost-user.md. */
extern const struct device_ops echo_device_ops;
/* The virtio-rdma frontend on the verbs backend (virtio_rdma/dev.c,
 * docs/worker.md). */
extern const struct device_ops rdma_device_ops;

/* What main.c hands the echo test device (struct dev_env.cfg). */
struct echo_cfg {
	bool busy_poll;	  /* the loop spins: poll the rings, kicks off */
	uint64_t *served; /* chains echoed, counted: the spin's work */
};

#endif
