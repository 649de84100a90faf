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

#include "common/reason.h"
#include "worker/backend/backend.h"
#include "worker/vfio_user/pci_fn.h"

/* What main.c hands the function (struct dev_env.cfg). */
struct pvrdma_cfg {
	/*
	 * The backend's configuration; the function lowers lim.max_qp so
	 * that QP handles fit the driver's tables (below 65536) and sets
	 * gid_tbl_len to BE_AV_GIDS (256) if it is 0 or more.
	 */
	struct be_cfg be;
	bool busy_poll;
	/* the MAC the guest reads in MACL/MACH until it writes its own */
	uint8_t mac[6];
	/*
	 * The UAR BAR as shared memory the client maps into the guest
	 * (pvrdma_uar_shm_open()): doorbells are then plain stores, which
	 * the device takes by polling (docs/pvrdma.md, "Doorbells in shared
	 * memory"), at least every doorbell_poll_ms while it is idle.
	 * uar NULL: BAR2 is not offered for mapping; doorbells then come as
	 * REGION_WRITE messages, one round trip each.
	 */
	uint32_t *uar; /* PVRDMA_BAR2_UAR_SIZE bytes, or NULL */
	int uar_fd;    /* with uar: its memfd */
	uint32_t doorbell_poll_ms;
};

/*
 * Before the sandbox (memfd_create is not in the allow-list): makes the
 * UAR BAR's shared memory, sealed against resizing so that the client
 * cannot make the worker's accesses fault, and maps it into cfg.  0, or
 * -errno with why.
 */
int pvrdma_uar_shm_open(struct pvrdma_cfg *cfg, struct reason *why);

extern const struct pci_fn_ops pvrdma_fn_ops;

#endif
