/* SPDX-License-Identifier: MIT */
/*
 * The PVRDMA PCI function (VMware 15ad:0820, common/pvrdma_abi.h) that the
 * worker serves over vfio-user on its verbs backend: what the worker's
 * main hands it, and its pci_fn ops (docs/pvrdma.md).
 */
#ifndef RDMAGATE_WORKER_PVRDMA_PVRDMA_H
#define RDMAGATE_WORKER_PVRDMA_PVRDMA_H

#include <stdbool.h>
#include <stdint.h>

#include "worker/backend/backend.h"
#include "worker/vfio_user/pci_fn.h"

/* What main.c hands the function (struct dev_env.cfg). */
struct pvrdma_cfg {
	/*
	 * The backend's configuration; the function lowers lim.max_qp so
	 * that QP handles fit the driver's tables (below 65536) and sets
	 * gid_tbl_len if it is 0.
	 */
	struct be_cfg be;
	bool busy_poll;
	/* the MAC the guest reads in MACL/MACH until it writes its own */
	uint8_t mac[6];
};

extern const struct pci_fn_ops pvrdma_fn_ops;

#endif
