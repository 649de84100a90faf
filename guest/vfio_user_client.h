/* SPDX-License-Identifier: MIT */
/*
 * The VMM half of the guest simulator for PCI functions: a vfio-user client
 * that talks to a server (the rdmagate worker with --frontend vfio-user)
 * the way QEMU >= 10.1's vfio-user-pci does: VERSION with QEMU's
 * capabilities, DEVICE_GET_INFO, region and irq info, config space read
 * whole, DMA_MAP of the guest RAM's memfds, SET_IRQS with one eventfd per
 * MSI-X vector, BAR accesses as REGION_READ/REGION_WRITE (posted writes
 * with NO_REPLY, as QEMU posts BAR writes).
 *
 * Unlike QEMU, it does not emulate the MSI-X table itself: the simulated
 * guest driver programs the server's table through BAR writes, which
 * exercises the server's table emulation (docs/vfio-user.md).
 *
 * Functions return 0 (or a byte count where said) or a negative errno:
 * -EPROTO for a malformed or unexpected reply, -ECONNRESET when the server
 * hung up, -ETIMEDOUT when it did not answer within the timeout,
 * -EREMOTEIO when it answered with an error reply (its errno is in
 * c->last_error).
 */
#ifndef RDMAGATE_GUEST_VFIO_USER_CLIENT_H
#define RDMAGATE_GUEST_VFIO_USER_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/vfio_user.h"
#include "guest/guest_ram.h"

/* Config space bytes the client reads and caches (PCI, not PCIe). */
#define VFIO_USER_CLIENT_CONFIG_SIZE 256
/* MSI-X vectors the client keeps eventfds for. */
#define VFIO_USER_CLIENT_MAX_VECTORS 128

struct vfio_user_client {
	int fd;
	int timeout_ms;
	uint16_t next_id;
	uint32_t last_error; /* errno of the last error reply */
	/* what the server's VERSION reply said (defaults when absent) */
	uint16_t major, minor;
	uint64_t max_fds;
	uint64_t max_xfer;
	uint64_t pgsizes;
	uint64_t max_dma_maps;
	/* DEVICE_GET_INFO, GET_REGION_INFO, GET_IRQ_INFO */
	struct vfio_user_device_info info;
	struct vfio_user_region_info regions[VFIO_USER_PCI_NUM_REGIONS];
	struct vfio_user_irq_info irqs[VFIO_USER_PCI_NUM_IRQS];
	/* config space as read at init (not kept up to date) */
	uint8_t config[VFIO_USER_CLIENT_CONFIG_SIZE];
	/* MSI-X: capability offset in config space (0: none), eventfds */
	uint8_t msix_cap;
	unsigned int nvectors; /* eventfds set with msix_enable() */
	int irq_fds[VFIO_USER_CLIENT_MAX_VECTORS];
	unsigned long requests; /* messages sent, for statistics */
	/*
	 * BARs the server offered as shared memory (GET_REGION_INFO's MMAP
	 * flag and fd), mapped as QEMU maps them into the guest: a BAR
	 * access there is a load or a store, no message.  NULL: by message.
	 * no_mmap (set before init): map nothing, as a client without mmap.
	 */
	void *bar_map[VFIO_USER_PCI_BAR5 + 1];
	bool no_mmap;
	int reply_fd; /* the last reply's fd, for its caller to take, or -1 */
};

/* Connects to the server's socket (the worker is the server). */
int vfio_user_client_connect(struct vfio_user_client *c, const char *path,
			     int timeout_ms);
/* Takes an already connected socket (e.g. a socketpair end). */
void vfio_user_client_attach(struct vfio_user_client *c, int fd,
			     int timeout_ms);
/* Closes the socket and every irq eventfd. */
void vfio_user_client_close(struct vfio_user_client *c);

/*
 * Raw message: `len` bytes as given (header included, any size field, so
 * that tests can lie) with `nfds` descriptors attached.
 */
int vfio_user_client_send_raw(struct vfio_user_client *c, const void *msg,
			      size_t len, const int *fds, unsigned int nfds);
/*
 * Receives one reply to command `command` with id `id`: at most `max`
 * payload bytes into `payload`, their number in *ret_len.  An error reply
 * returns -EREMOTEIO (c->last_error set).
 */
int vfio_user_client_recv(struct vfio_user_client *c, uint16_t id,
			  uint16_t command, void *payload, uint32_t max,
			  uint32_t *ret_len);
/*
 * One request and its reply: a well-formed header for `command` with the
 * given payload and fds; the reply's payload as for _recv().
 */
int vfio_user_client_call(struct vfio_user_client *c, uint16_t command,
			  const void *payload, uint32_t len, const int *fds,
			  unsigned int nfds, void *reply, uint32_t max,
			  uint32_t *ret_len);

/*
 * The initialisation QEMU's vfio-user-pci performs at realize: VERSION
 * (QEMU's capabilities JSON; the reply's caps parsed into c), then
 * DEVICE_GET_INFO, GET_REGION_INFO of every region, GET_IRQ_INFO of every
 * irq index, config space read whole; finds the MSI-X capability.
 */
int vfio_user_client_init(struct vfio_user_client *c);
/* VERSION alone, with `json` as the capabilities (NULL: QEMU's). */
int vfio_user_client_version(struct vfio_user_client *c, const char *json);

/* DMA_MAP of one guest RAM slot (its memfd, offset, GPA) read-write. */
int vfio_user_client_dma_map(struct vfio_user_client *c,
			     const struct guest_ram *ram, unsigned int slot);
/*
 * The same with DMA_MAP's `flags` (VFIO_USER_DMA_F_READ alone: read-only,
 * as QEMU maps ROM; tests of the VMM's DMA contract).
 */
int vfio_user_client_dma_map_flags(struct vfio_user_client *c,
				   const struct guest_ram *ram,
				   unsigned int slot, uint32_t flags);
/* DMA_MAP of every slot. */
int vfio_user_client_map_ram(struct vfio_user_client *c,
			     const struct guest_ram *ram);
/* DMA_UNMAP of [gpa, gpa + size) with `flags` (e.g. _UNMAP_F_ALL). */
int vfio_user_client_dma_unmap(struct vfio_user_client *c, uint64_t gpa,
			       uint64_t size, uint32_t flags);

/*
 * Region I/O.  _read returns the number of bytes the server returned;
 * _write with `posted` sends NO_REPLY and does not wait (as QEMU posts
 * BAR writes); a later request shows any failure only in the server log.
 */
int vfio_user_client_region_read(struct vfio_user_client *c, uint32_t region,
				 uint64_t offset, void *buf, uint32_t count);
int vfio_user_client_region_write(struct vfio_user_client *c, uint32_t region,
				  uint64_t offset, const void *buf,
				  uint32_t count, bool posted);

/* Config space and BAR accesses of 1, 2, 4 or 8 bytes (little-endian). */
int vfio_user_client_cfg_read(struct vfio_user_client *c, uint32_t off,
			      unsigned int size, uint64_t *ret_val);
int vfio_user_client_cfg_write(struct vfio_user_client *c, uint32_t off,
			       unsigned int size, uint64_t val);
int vfio_user_client_bar_read(struct vfio_user_client *c, unsigned int bar,
			      uint64_t off, unsigned int size,
			      uint64_t *ret_val);
/* A posted (NO_REPLY) BAR write, as QEMU sends them. */
int vfio_user_client_bar_write(struct vfio_user_client *c, unsigned int bar,
			       uint64_t off, unsigned int size, uint64_t val);

/* SET_IRQS as given (tests lie with it). */
int vfio_user_client_set_irqs(struct vfio_user_client *c, uint32_t index,
			      uint32_t flags, uint32_t start, uint32_t count,
			      const int *fds, unsigned int nfds);

/*
 * What QEMU and a guest driver do to use MSI-X: one eventfd per vector
 * (nvec <= the function's vectors and VFIO_USER_CLIENT_MAX_VECTORS) given
 * with SET_IRQS, bus mastering and memory decoding on in the command
 * register, MSI-X enabled and unmasked in its capability, and each
 * vector's table entry written (address, data, unmasked) through BAR
 * writes.  _disable removes the eventfds and clears the enable bit.
 */
int vfio_user_client_msix_enable(struct vfio_user_client *c, unsigned int nvec);
int vfio_user_client_msix_disable(struct vfio_user_client *c);
/* Masks (true) or unmasks vector `vec` in the server's MSI-X table. */
int vfio_user_client_msix_mask(struct vfio_user_client *c, unsigned int vec,
			       bool mask);
/*
 * Waits up to timeout_ms for vector `vec`'s eventfd; returns the number of
 * interrupts counted (>= 1), or -ETIMEDOUT.
 */
int vfio_user_client_irq_wait(struct vfio_user_client *c, unsigned int vec,
			      int timeout_ms);
/* Non-blocking: interrupts counted on vector `vec` so far (0 if none). */
int vfio_user_client_irq_count(struct vfio_user_client *c, unsigned int vec);

/* DEVICE_RESET (the client's eventfds are closed: the server drops them). */
int vfio_user_client_reset(struct vfio_user_client *c);

/* Offset of capability `id` in the cached config space, or 0. */
uint8_t vfio_user_client_find_cap(const struct vfio_user_client *c, uint8_t id);

#endif
