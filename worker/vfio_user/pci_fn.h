/* SPDX-License-Identifier: MIT */
/*
 * The interface between the worker's vfio-user server (worker/vfio_user/)
 * and a PCI device model on top of it (the PVRDMA function, the transport
 * test function): a const ops table that describes the function and its
 * callbacks, and three services the device calls back.
 *
 * The vfio-user layer owns the connection, config space (IDs, command
 * register, BAR sizing, the capability list with one MSI-X capability),
 * the MSI-X table and PBA, the irq eventfds and the DMA regions (guest
 * memory).  A device sees only BAR accesses outside the MSI-X structures,
 * already checked: 1, 2, 4 or 8 bytes, naturally aligned, inside the BAR.
 * All callbacks run on the worker's one thread, never re-entered.
 *
 * Life cycle, per client connection: create() when the client connects;
 * dma_map() after each DMA region appears, dma_unmap() before each goes
 * (DMA_UNMAP, reset of the connection, disconnect): drop every pointer
 * into [gpa, gpa + size) there; reset() on DEVICE_RESET (after which every
 * irq eventfd is gone, MSI-X is disabled and the command register is 0;
 * the DMA regions stay, as in vfio); destroy() when the client goes, after
 * dma_unmap() of every region.
 *
 * Guest memory is shared with a hostile guest: copy what you parse out
 * once, never trust it twice (see worker/guest_mem.h for translation).
 * Interface changes are committed alone, in commits starting "pci_fn.h:".
 */
#ifndef RDMAGATE_WORKER_VFIO_USER_PCI_FN_H
#define RDMAGATE_WORKER_VFIO_USER_PCI_FN_H

#include <stdbool.h>
#include <stdint.h>

#include "worker/dev_env.h"
#include "worker/guest_mem.h"

#define PCI_FN_NUM_BARS 6
/* MSI-X table size limit of the capability (Table Size is 11 bits). */
#define PCI_FN_MAX_VECTORS 2048

/* BAR flags.  Only memory BARs: I/O BARs are refused at startup. */
#define PCI_FN_BAR_MEM64    (1u << 0) /* 64-bit: uses this BAR and the next */
#define PCI_FN_BAR_PREFETCH (1u << 1)

struct pci_fn_bar {
	/* 0: not implemented; else a power of 2 in [16, 1 GiB] */
	uint64_t size;
	uint32_t flags;
};

struct pci_fn_ids {
	uint16_t vendor;
	uint16_t device;
	uint16_t subsys_vendor;
	uint16_t subsys_device;
	uint32_t class_code; /* base << 16 | sub << 8 | programming i/f */
	uint8_t revision;
};

/*
 * The MSI-X capability: `vectors` (1..PCI_FN_MAX_VECTORS) entries of 16
 * bytes at table_offset and the PBA (8 bytes per 64 vectors) at
 * pba_offset, both 8-byte aligned, inside BAR `bar`, not overlapping.
 */
struct pci_fn_msix {
	uint16_t vectors;
	uint8_t bar;
	uint32_t table_offset;
	uint32_t pba_offset;
};

/* The vfio-user layer's handle of one function instance (opaque). */
struct pci_fn;

struct pci_fn_ops {
	const char *name; /* for logs: "pvrdma", "pci-test" */
	struct pci_fn_ids ids;
	struct pci_fn_bar bars[PCI_FN_NUM_BARS];
	struct pci_fn_msix msix;

	/*
	 * Per connection: make the private state.  fn stays valid until
	 * destroy(); env as for vhost-user devices
	 * (worker/dev_env.h). -errno on error (the client is then
	 * refused).
	 */
	int (*create)(struct pci_fn *fn, const struct dev_env *env,
		      void **ret_priv);
	void (*destroy)(void *priv);
	/*
	 * BAR access of size 1, 2, 4 or 8 at off (aligned to size, inside
	 * bar, outside the MSI-X table and PBA).  bar_read stores the value
	 * (little-endian, low `size` bytes) in *ret_val.  0, or -errno: the
	 * client gets an error reply (a guest read then sees all-ones).
	 */
	int (*bar_read)(void *priv, unsigned int bar, uint64_t off,
			unsigned int size, uint64_t *ret_val);
	int (*bar_write)(void *priv, unsigned int bar, uint64_t off,
			 unsigned int size, uint64_t val);
	/* DEVICE_RESET (and a function-level reset): back to power-on. */
	void (*reset)(void *priv);
	/* Optional: a DMA region [gpa, gpa + size) was added. */
	void (*dma_map)(void *priv, uint64_t gpa, uint64_t size);
	/*
	 * Optional: it is about to be removed: forget pointers into it, and
	 * revoke every other access to it (memory registrations: the HCA
	 * must not reach it once the VMM has taken it back).
	 */
	void (*dma_unmap)(void *priv, uint64_t gpa, uint64_t size);
	/*
	 * Optional: the guest set (on) or cleared bus mastering in the
	 * command register.  Cleared: the function must stop all DMA into
	 * guest memory at once, its own and any it delegated (an HCA's).
	 * Not called for DEVICE_RESET (reset() is, with the register 0).
	 */
	void (*bus_master)(void *priv, bool on);
	/*
	 * Optional busy polling, as for vhost-user devices: while
	 * wants_poll() is true the loop does not sleep and calls poll().
	 */
	bool (*wants_poll)(void *priv);
	/* returns the guest work it found (e.g. doorbells), for the spin */
	unsigned int (*poll)(void *priv);
	/*
	 * Optional: BAR `bar` is shared memory the client may map into the
	 * guest (GET_REGION_INFO then offers it with the MMAP flag and this
	 * fd, the whole BAR at offset 0 of the fd).  0 and *ret_fd, or
	 * -ENOENT.  The fd stays the device's.  Stores to a mapped BAR cause
	 * no message: a device that offers one finds them by polling
	 * (poll_timeout_ns).
	 */
	int (*bar_shm)(void *priv, unsigned int bar, int *ret_fd);
	/*
	 * Optional: when the loop would sleep, wake it after at most this
	 * many nanoseconds and call poll(); -1: sleep until an event.  The
	 * loop sleeps with microsecond precision (epoll_pwait2).
	 */
	int64_t (*poll_timeout_ns)(void *priv);
};

/*
 * Raises MSI-X vector `vector` of fn: its eventfd is written when MSI-X is
 * enabled, the function not masked, the vector not masked and it has an
 * eventfd; otherwise its PBA bit is set (while MSI-X is enabled) and the
 * interrupt is delivered when that changes.  Returns 0 (delivered or
 * pending), -EINVAL for a vector out of range, -EIO if the eventfd write
 * failed.
 */
int pci_fn_raise(struct pci_fn *fn, unsigned int vector);

/*
 * The guest memory the client mapped (DMA regions; translate with
 * gm_gpa_to_host()/gm_gpa_to_iov()).  Valid until the next dma_unmap().
 */
const struct guest_mem *pci_fn_mem(const struct pci_fn *fn);

/*
 * True if the guest enabled bus mastering (command register bit 2): a
 * device must not touch guest memory (DMA) or raise interrupts while false.
 */
bool pci_fn_bus_master(const struct pci_fn *fn);

/* The transport test function (vfio_user/test_fn.c, docs/vfio-user.md). */
extern const struct pci_fn_ops pci_test_fn_ops;

#endif
