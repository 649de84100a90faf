/* SPDX-License-Identifier: MIT */
/*
 * The vfio-user frontend's connection glue for the worker's event loop
 * (worker/main.c): one client connection, its messages read off the socket
 * and fed to the protocol core (vfu_proto.h), the replies sent back.
 */
#ifndef RDMAGATE_WORKER_VFIO_USER_CONN_H
#define RDMAGATE_WORKER_VFIO_USER_CONN_H

#include <stdbool.h>

#include "worker/vhost_user/device.h"
#include "worker/vfio_user/pci_fn.h"

struct vfu_conn;

/* The PCI function a --test-device NAME selects, or NULL. */
const struct pci_fn_ops *vfu_test_function(const char *name);

/* State for a new client on socket cfd (still the caller's). */
int vfu_conn_open(const struct pci_fn_ops *ops, const struct dev_env *env,
		  int cfd, struct vfu_conn **ret_conn);
/*
 * Reads and serves one message.  Returns 0 to keep the connection, or
 * -errno (-EPIPE: the client hung up) when the caller must close it.
 */
int vfu_conn_readable(struct vfu_conn *c);
/* Drops every DMA region and irq fd, destroys the device, frees c. */
void vfu_conn_close(struct vfu_conn *c);

/* The device's polling (pci_fn_ops.wants_poll/poll): the work found. */
bool vfu_conn_wants_poll(const struct vfu_conn *c);
unsigned int vfu_conn_poll(struct vfu_conn *c);
/*
 * The device's idle polling (pci_fn_ops.poll_timeout_ns): how long the
 * loop may sleep before it calls vfu_conn_poll(), in ns, or -1 (no limit).
 */
int64_t vfu_conn_poll_timeout_ns(const struct vfu_conn *c);

#endif
