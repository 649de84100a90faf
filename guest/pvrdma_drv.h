/* SPDX-License-Identifier: MIT */
/*
 * The guest simulator's PVRDMA kernel driver: what Linux's vmw_pvrdma does
 * (pvrdma_main.c, pvrdma_cmd.c, pvrdma_misc.c) over the vfio-user client
 * that plays QEMU's vfio-user-pci: probe, the device shared region (DSR),
 * the command/response slots with the REQUEST register and the response
 * interrupt, the async event and CQ notification rings, page directories,
 * UAR doorbells. The ABI is common/pvrdma_abi.h, the device's own header.
 *
 * Functions return 0 or a negative errno. A command the device refuses
 * returns minus its err byte (rdmagate writes a positive errno) or -EIO
 * when it left ERR non-zero after REQUEST. One thread drives a driver.
 */
#ifndef RDMAGATE_GUEST_PVRDMA_DRV_H
#define RDMAGATE_GUEST_PVRDMA_DRV_H

#include <stdbool.h>
#include <stdint.h>

#include "common/pvrdma_abi.h"
#include "guest/guest_ram.h"
#include "guest/vfio_user_client.h"

/* Where the driver takes zeroed guest pages from (and gives them back). */
struct pvrdma_pages {
	int (*get)(void *arg, uint64_t *ret_gpa);
	void (*put)(void *arg, uint64_t gpa);
	void *arg;
};

/* A page directory in guest RAM: directory page -> tables -> pages. */
struct pvrdma_pdir {
	uint64_t dir_gpa; /* 0: none */
	uint64_t table_gpa[PVRDMA_PDIR_ENTRIES];
	uint32_t ntables;
	uint32_t npages;
};

/* A device-produced ring of the driver (async events, CQ notifications). */
struct pvrdma_dev_ring {
	struct pvrdma_pdir pdir;
	uint64_t page_gpa[PVRDMA_NUM_RING_PAGES]; /* page 0: ring state */
	uint32_t nelems, elem_size;
};

struct pvrdma_drv {
	struct vfio_user_client vc;
	struct guest_ram ram;
	struct pvrdma_pages pages;
	int timeout_ms;
	bool connected, active;
	uint32_t version;  /* PVRDMA_REG_VERSION */
	unsigned int nvec; /* MSI-X vectors in use (1..3) */
	uint64_t dsr_gpa, cmd_gpa, resp_gpa;
	struct pvrdma_device_caps caps; /* copied out of the DSR once */
	struct pvrdma_dev_ring async, cqn;
	uint32_t uar_index; /* BAR2 page of the user context (CREATE_UC) */
	unsigned long commands, async_events, cq_notifications;
	/* async events seen, by type (tests look at them) */
	unsigned long events[PVRDMA_EVENT_MAX];
};

/*
 * The shortest wait for a command or a register access: CREATE_MR of the
 * DMA MR pins all guest RAM within the REQUEST write.
 */
#define PVRDMA_DRV_CMD_TIMEOUT_MS GUEST_CMD_TIMEOUT_MS
/* A command slower than this is reported on stderr with its duration. */
#define PVRDMA_DRV_SLOW_CMD_MS 1000

struct pvrdma_drv_opts {
	/* per command and per register access; at least CMD_TIMEOUT_MS */
	int timeout_ms;
};

/*
 * Initialises drv (guest RAM empty, not connected). The caller adds guest
 * RAM regions to drv->ram before pvrdma_drv_probe().
 */
void pvrdma_drv_init(struct pvrdma_drv *drv, const struct pvrdma_pages *p);
/*
 * Connects to the worker's vfio-user socket as QEMU does (VERSION, device,
 * region and irq info, config space, DMA_MAP of every guest RAM slot),
 * then probes as vmw_pvrdma: checks IDs and BARs, reads VERSION, lays out
 * the DSR, slots and rings, writes DSRLOW then DSRHIGH, checks the caps
 * (RoCE mode, GID types), enables MSI-X, unmasks (IMR 0), ACTIVATE, ERR
 * must read 0. -ENODEV: not a PVRDMA function; -EPROTO: caps refused.
 */
int pvrdma_drv_probe(struct pvrdma_drv *drv, const char *socket,
		     const struct pvrdma_drv_opts *o);
/*
 * The driver's remove: IMR all masked, MSI-X off, CTL RESET; then the
 * connection closes and guest RAM is released.
 */
void pvrdma_drv_remove(struct pvrdma_drv *drv);

/*
 * One command: req (its hdr.cmd set, the rest as the caller built it) is
 * copied whole into the command slot, REQUEST written, ERR read; on 0 the
 * response interrupt is awaited and the response slot copied into rsp,
 * whose ack must be PVRDMA_CMD_RESP(cmd). rsp NULL: no response wanted
 * (CREATE_BIND, DESTROY_BIND, as the driver).
 */
int pvrdma_drv_cmd(struct pvrdma_drv *drv, const union pvrdma_cmd_req *req,
		   union pvrdma_cmd_resp *rsp);

/*
 * A page directory over npages guest pages (their GPAs in order): the
 * directory and tables are taken from drv->pages. _free gives them back.
 */
int pvrdma_pdir_build(struct pvrdma_drv *drv, const uint64_t *pages,
		      uint32_t npages, struct pvrdma_pdir *ret);
void pvrdma_pdir_free(struct pvrdma_drv *drv, struct pvrdma_pdir *pd);

/* Doorbells: a 32-bit write at off (PVRDMA_UAR_*_OFFSET) of our UAR page. */
int pvrdma_drv_doorbell(struct pvrdma_drv *drv, uint32_t off, uint32_t val);

/*
 * Waits up to ms for the CQ notification interrupt and drains the ring,
 * calling fn(arg, cq_handle) for each entry. Returns the number of
 * notifications (0: an interrupt whose entries an earlier drain took),
 * -ETIMEDOUT when no interrupt came, or -errno.
 */
int pvrdma_drv_cq_notifications(struct pvrdma_drv *drv, int ms,
				void (*fn)(void *arg, uint32_t handle),
				void *arg);
/* Drains the async event ring (non-blocking); returns events consumed. */
int pvrdma_drv_async_events(struct pvrdma_drv *drv);

#endif
