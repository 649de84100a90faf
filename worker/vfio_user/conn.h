/* SPDX-License-Identifier: MIT */
/*
 * The vfio-user transport (vfio_user_transport in worker/transport.h,
 * conn.c): one client connection, its messages read off the socket and
 * fed to the protocol core (vfu_proto.h), the replies sent back.
 */
#ifndef RDMAGATE_WORKER_VFIO_USER_CONN_H
#define RDMAGATE_WORKER_VFIO_USER_CONN_H

#include "worker/vfio_user/pci_fn.h"

/* The PCI function a --test-device NAME selects, or NULL. */
const struct pci_fn_ops *vfu_test_function(const char *name);

#endif
