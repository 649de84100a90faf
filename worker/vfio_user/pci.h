/* SPDX-License-Identifier: MIT */
/*
 * The generic PCI function layer of the vfio-user server (internal to
 * worker/vfio_user/): a type-0 config header with one MSI-X capability,
 * BAR registers (sized by writing all-ones), the MSI-X table and PBA
 * inside their BAR, one eventfd per vector, and the DMA regions as a guest
 * memory table.  It dispatches the remaining BAR accesses to the device
 * model (pci_fn.h).  No socket I/O; the protocol core (vfu_proto.c) calls
 * it with values it has already framed, and everything here checks the
 * values themselves (offsets, counts, indexes, fds).
 */
#ifndef RDMAGATE_WORKER_VFIO_USER_PCI_H
#define RDMAGATE_WORKER_VFIO_USER_PCI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/vfio_user.h"
#include "worker/guest_mem.h"
#include "worker/vfio_user/pci_fn.h"

/* Conventional PCI config space: all a PVRDMA function needs. */
#define PCI_CFG_SIZE 256
/*
 * Interrupt indexes we report: INTx, MSI, MSI-X.  Not ERR and REQ: QEMU
 * warns "Could not enable error recovery" when ERR has no vector but says
 * nothing when the index is absent, and an error notifier would only let
 * the device stop the VM.
 */
#define PCI_FN_NUM_IRQ_INDEXES (VFIO_USER_PCI_MSIX + 1)
/* Where our one capability (MSI-X) sits. */
#define PCI_CFG_MSIX_CAP 0x40

/* Interrupt statistics, for the log and the tests. */
struct pci_fn_irq_stats {
	uint64_t raised;    /* pci_fn_raise() calls */
	uint64_t delivered; /* eventfd writes */
	uint64_t dropped;   /* MSI-X disabled: lost, as on real hardware */
};

struct pci_fn {
	const struct pci_fn_ops *ops;
	void *priv;
	uint8_t cfg[PCI_CFG_SIZE];   /* what config reads return */
	uint8_t wmask[PCI_CFG_SIZE]; /* bits a config write may change */
	uint8_t *msix_table;	     /* 16 bytes per vector */
	uint64_t *pba;		     /* one bit per vector */
	int *irq_fds;		     /* per vector, -1: none */
	struct guest_mem mem;
	struct pci_fn_irq_stats stats;
};

/*
 * Checks a device description (BAR sizes and flags, MSI-X placement).
 * Returns 0, or -EINVAL with *why.
 */
int pci_fn_ops_check(const struct pci_fn_ops *ops, struct reason *why);

/* Sets fn up at power-on state and calls ops->create(). 0 or -errno. */
int pci_fn_init(struct pci_fn *fn, const struct pci_fn_ops *ops,
		const struct dev_env *env);
/* Unmaps every DMA region (dma_unmap first), closes irq fds, destroys. */
void pci_fn_fini(struct pci_fn *fn);

/* DEVICE_RESET: config, MSI-X state and irq fds to power-on; ops->reset. */
void pci_fn_reset(struct pci_fn *fn);

/*
 * GET_REGION_INFO / GET_IRQ_INFO answers; -EINVAL for a bad index.  A BAR
 * the device offers as shared memory (pci_fn_ops.bar_shm) has the MMAP
 * flag and *ret_fd its fd (the device's: send it, do not close it); every
 * other region -1.
 */
int pci_fn_region_info(const struct pci_fn *fn, uint32_t index,
		       struct vfio_user_region_info *ret, int *ret_fd);
int pci_fn_irq_info(const struct pci_fn *fn, uint32_t index,
		    struct vfio_user_irq_info *ret);

/*
 * REGION_READ / REGION_WRITE of count bytes at offset of region index.
 * Config space: any offset and count inside it.  BARs: 1, 2, 4 or 8
 * bytes, naturally aligned, inside the BAR, not straddling the MSI-X
 * table or PBA.  0 or -errno (*why says what was wrong).
 */
int pci_fn_region_rw(struct pci_fn *fn, uint32_t index, uint64_t offset,
		     uint8_t *buf, uint32_t count, bool write,
		     struct reason *why);

/*
 * SET_IRQS with its data (bool bytes: `data`, data_len) and fds: each is
 * kept or closed, and its slot in fds set to -1.  0 or -errno with *why.
 */
int pci_fn_set_irqs(struct pci_fn *fn, const struct vfio_user_irq_set *s,
		    const uint8_t *data, size_t data_len, int *fds,
		    unsigned int nfds, struct reason *why);

/* DMA_MAP with its one fd (the caller's); 0 or -errno with *why. */
int pci_fn_dma_map(struct pci_fn *fn, const struct vfio_user_dma_map *m, int fd,
		   struct reason *why);
/* DMA_UNMAP; 0 or -errno with *why. */
int pci_fn_dma_unmap(struct pci_fn *fn, const struct vfio_user_dma_unmap *u,
		     struct reason *why);

#endif
