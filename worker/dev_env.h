/* SPDX-License-Identifier: MIT */
/*
 * What the process gives a device at create time, whichever the transport:
 * a vhost-user device (vhost_user/device.h), a vfio-user PCI function
 * (vfio_user/pci_fn.h) and the verbs backend under both (be_create(),
 * backend/backend.h).  The event loop (for fds the device waits on, e.g.
 * verbs completion channels; callbacks run on the worker's one thread like
 * everything else) and the device's own configuration (virtio-rdma:
 * struct vrdma_cfg; PVRDMA: struct pvrdma_cfg; echo: struct echo_cfg, or
 * NULL; the PCI test function: NULL).
 */
#ifndef RDMAGATE_WORKER_DEV_ENV_H
#define RDMAGATE_WORKER_DEV_ENV_H

struct dev_env {
	void *loop_ctx;
	/* Calls cb(arg) whenever fd is readable. 0 or -errno. */
	int (*watch_fd)(void *loop_ctx, int fd, void (*cb)(void *arg),
			void *arg);
	/* Stops watching fd (before the device closes it). */
	void (*unwatch_fd)(void *loop_ctx, int fd);
	const void *cfg;
};

#endif
