/* SPDX-License-Identifier: MIT */
/*
 * The vfio-user wire protocol, as rdmagate speaks it: the one definition
 * shared by the worker (server, worker/vfio_user/) and the guest simulator
 * (client, guest/vfio_user_client.c).  Numbers and layouts follow QEMU's
 * docs/devel/vfio-user.rst (protocol 0.x, as QEMU >= 10.1's vfio-user-pci
 * sends it); commands we do not implement keep their numbers so that they
 * are named in errors.  See docs/vfio-user.md for the subset.
 *
 * Every message is a 16-byte header followed by `size - 16` bytes of
 * payload (the header's size field counts the header); file descriptors
 * travel as SCM_RIGHTS with the header.  Integers are little-endian (host
 * order on the x86-64 hosts we run on).  The payload structs are the VFIO
 * ioctl structs (linux/vfio.h) without their trailing data.
 */
#ifndef RDMAGATE_COMMON_VFIO_USER_H
#define RDMAGATE_COMMON_VFIO_USER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/reason.h"

/* Version of our vfio-user subset; bump when the supported set changes. */
#define RDMAGATE_VFIO_USER_SUBSET_VERSION 1

/* Protocol version we speak (QEMU sends 0.0 and accepts minor <= 0). */
#define VFIO_USER_MAJOR 0
#define VFIO_USER_MINOR 0

enum vfio_user_command {
	VFIO_USER_VERSION = 1,
	VFIO_USER_DMA_MAP = 2,
	VFIO_USER_DMA_UNMAP = 3,
	VFIO_USER_DEVICE_GET_INFO = 4,
	VFIO_USER_DEVICE_GET_REGION_INFO = 5,
	VFIO_USER_DEVICE_GET_REGION_IO_FDS = 6,
	VFIO_USER_DEVICE_GET_IRQ_INFO = 7,
	VFIO_USER_DEVICE_SET_IRQS = 8,
	VFIO_USER_REGION_READ = 9,
	VFIO_USER_REGION_WRITE = 10,
	VFIO_USER_DMA_READ = 11,
	VFIO_USER_DMA_WRITE = 12,
	VFIO_USER_DEVICE_RESET = 13,
	VFIO_USER_DIRTY_PAGES = 14,
	VFIO_USER_REGION_WRITE_MULTI = 15,
	VFIO_USER_DEVICE_FEATURE = 16,
	VFIO_USER_MIG_DATA_READ = 17,
	VFIO_USER_MIG_DATA_WRITE = 18,
	VFIO_USER_MAX_COMMAND
};

/* Header flags: message type in the low 4 bits, then two flags. */
#define VFIO_USER_F_TYPE_MASK 0xfu
#define VFIO_USER_F_REQUEST   0x0u
#define VFIO_USER_F_REPLY     0x1u
#define VFIO_USER_F_NO_REPLY  0x10u /* request: do not answer it */
#define VFIO_USER_F_ERROR     0x20u /* reply: error_no says why */
#define VFIO_USER_F_KNOWN                                                      \
	(VFIO_USER_F_TYPE_MASK | VFIO_USER_F_NO_REPLY | VFIO_USER_F_ERROR)

struct vfio_user_header {
	uint16_t msg_id;  /* echoed in the reply */
	uint16_t command; /* enum vfio_user_command */
	uint32_t size;	  /* whole message: header + payload */
	uint32_t flags;
	uint32_t error_no; /* reply with VFIO_USER_F_ERROR: a positive errno */
};
_Static_assert(sizeof(struct vfio_user_header) == 16, "header");

/*
 * Limits of our implementation, announced in VERSION's capabilities (the
 * client must stay within them; the server enforces them).
 * VFIO_USER_MAX_XFER: data bytes in one REGION_READ/WRITE; 4096 so that a
 * client reads all of config space in one request (QEMU does).
 */
#define VFIO_USER_MAX_FDS	8
#define VFIO_USER_MAX_XFER	4096u
#define VFIO_USER_PGSIZE	4096u
#define VFIO_USER_MAX_CAPS_JSON 1024u /* VERSION capabilities, with NUL */
#define VFIO_USER_MAX_MSG	(16u + 16u + VFIO_USER_MAX_XFER)

/* VERSION payload: then a NUL-terminated JSON object. */
struct vfio_user_version {
	uint16_t major;
	uint16_t minor;
};
_Static_assert(sizeof(struct vfio_user_version) == 4, "version");

/* Capability names in VERSION's JSON ({"capabilities": {...}}). */
#define VFIO_USER_CAP	       "capabilities"
#define VFIO_USER_CAP_MAX_FDS  "max_msg_fds"
#define VFIO_USER_CAP_MAX_XFER "max_data_xfer_size"
#define VFIO_USER_CAP_PGSIZES  "pgsizes"
#define VFIO_USER_CAP_MAX_DMA  "max_dma_maps"
#define VFIO_USER_CAP_MIGR     "migration"
#define VFIO_USER_CAP_MULTI    "write_multiple"

/* DMA_MAP (struct vfio_iommu_type1_dma_map); one fd: the memory's file. */
#define VFIO_USER_DMA_F_READ  (1u << 0)
#define VFIO_USER_DMA_F_WRITE (1u << 1)
struct vfio_user_dma_map {
	uint32_t argsz;
	uint32_t flags;
	uint64_t offset; /* in the fd */
	uint64_t addr;	 /* guest I/O virtual = guest physical address */
	uint64_t size;
};
_Static_assert(sizeof(struct vfio_user_dma_map) == 32, "dma map");

/* DMA_UNMAP (struct vfio_iommu_type1_dma_unmap). */
#define VFIO_USER_DMA_UNMAP_F_DIRTY_BITMAP (1u << 0)
#define VFIO_USER_DMA_UNMAP_F_ALL	   (1u << 1)
struct vfio_user_dma_unmap {
	uint32_t argsz;
	uint32_t flags;
	uint64_t addr;
	uint64_t size;
};
_Static_assert(sizeof(struct vfio_user_dma_unmap) == 24, "dma unmap");

/* DEVICE_GET_INFO (struct vfio_device_info). */
#define VFIO_USER_DEVICE_F_RESET (1u << 0)
#define VFIO_USER_DEVICE_F_PCI	 (1u << 1)
struct vfio_user_device_info {
	uint32_t argsz;
	uint32_t flags;
	uint32_t num_regions;
	uint32_t num_irqs;
};
_Static_assert(sizeof(struct vfio_user_device_info) == 16, "device info");

/* Region indexes of a PCI function (VFIO_PCI_*_REGION_INDEX). */
enum vfio_user_pci_region {
	VFIO_USER_PCI_BAR0 = 0,
	VFIO_USER_PCI_BAR5 = 5,
	VFIO_USER_PCI_ROM = 6,
	VFIO_USER_PCI_CONFIG = 7,
	VFIO_USER_PCI_VGA = 8,
	VFIO_USER_PCI_NUM_REGIONS = 9
};

/* DEVICE_GET_REGION_INFO (struct vfio_region_info). */
#define VFIO_USER_REGION_F_READ	 (1u << 0)
#define VFIO_USER_REGION_F_WRITE (1u << 1)
#define VFIO_USER_REGION_F_MMAP	 (1u << 2)
#define VFIO_USER_REGION_F_CAPS	 (1u << 3)
struct vfio_user_region_info {
	uint32_t argsz;
	uint32_t flags;
	uint32_t index;
	uint32_t cap_offset;
	uint64_t size;
	uint64_t offset;
};
_Static_assert(sizeof(struct vfio_user_region_info) == 32, "region info");

/* Interrupt indexes of a PCI function (VFIO_PCI_*_IRQ_INDEX). */
enum vfio_user_pci_irq {
	VFIO_USER_PCI_INTX = 0,
	VFIO_USER_PCI_MSI = 1,
	VFIO_USER_PCI_MSIX = 2,
	VFIO_USER_PCI_ERR = 3,
	VFIO_USER_PCI_REQ = 4,
	VFIO_USER_PCI_NUM_IRQS = 5
};

/* DEVICE_GET_IRQ_INFO (struct vfio_irq_info). */
#define VFIO_USER_IRQ_INFO_F_EVENTFD	(1u << 0)
#define VFIO_USER_IRQ_INFO_F_MASKABLE	(1u << 1)
#define VFIO_USER_IRQ_INFO_F_AUTOMASKED (1u << 2)
#define VFIO_USER_IRQ_INFO_F_NORESIZE	(1u << 3)
struct vfio_user_irq_info {
	uint32_t argsz;
	uint32_t flags;
	uint32_t index;
	uint32_t count;
};
_Static_assert(sizeof(struct vfio_user_irq_info) == 16, "irq info");

/*
 * DEVICE_SET_IRQS (struct vfio_irq_set): one data type and one action.
 * DATA_EVENTFD carries `count` fds, or none to remove the vectors' fds
 * (QEMU sends fds only for runs of valid ones); DATA_BOOL carries `count`
 * bytes after the struct.
 */
#define VFIO_USER_IRQ_SET_DATA_NONE	 (1u << 0)
#define VFIO_USER_IRQ_SET_DATA_BOOL	 (1u << 1)
#define VFIO_USER_IRQ_SET_DATA_EVENTFD	 (1u << 2)
#define VFIO_USER_IRQ_SET_DATA_MASK	 0x7u
#define VFIO_USER_IRQ_SET_ACTION_MASK	 (1u << 3)
#define VFIO_USER_IRQ_SET_ACTION_UNMASK	 (1u << 4)
#define VFIO_USER_IRQ_SET_ACTION_TRIGGER (1u << 5)
#define VFIO_USER_IRQ_SET_ACTION_BITS	 0x38u
struct vfio_user_irq_set {
	uint32_t argsz;
	uint32_t flags;
	uint32_t index;
	uint32_t start;
	uint32_t count;
};
_Static_assert(sizeof(struct vfio_user_irq_set) == 20, "irq set");

/* REGION_READ/REGION_WRITE: then `count` data bytes (write; read reply). */
struct vfio_user_region_rw {
	uint64_t offset;
	uint32_t region;
	uint32_t count;
};
_Static_assert(sizeof(struct vfio_user_region_rw) == 16, "region rw");

/*
 * VERSION capabilities: what the JSON says (present: which fields it had).
 * Unknown members are skipped, as QEMU does with ours.
 */
#define VFIO_USER_CAPS_HAS_MAX_FDS  (1u << 0)
#define VFIO_USER_CAPS_HAS_MAX_XFER (1u << 1)
#define VFIO_USER_CAPS_HAS_PGSIZES  (1u << 2)
#define VFIO_USER_CAPS_HAS_MAX_DMA  (1u << 3)
#define VFIO_USER_CAPS_HAS_MIGR	    (1u << 4)
#define VFIO_USER_CAPS_HAS_MULTI    (1u << 5)
struct vfio_user_caps {
	uint32_t present;
	uint64_t max_msg_fds;
	uint64_t max_data_xfer_size;
	uint64_t pgsizes;
	uint64_t max_dma_maps;
	bool write_multiple;
};

/*
 * Parses VERSION's capabilities: `len` bytes that must be one JSON object
 * followed by its NUL (the last byte) and nothing else.  Strict JSON,
 * nesting depth <= 8; the known members must have their type (unsigned
 * integers, write_multiple a bool, capabilities and migration objects).
 * Pure.  Returns 0, or -EINVAL with *why (a static string).
 */
int vfio_user_caps_parse(const char *json, size_t len,
			 struct vfio_user_caps *ret, struct reason *why);
/*
 * Writes the capabilities JSON for c's present members into buf (NUL
 * included).  Returns the length with the NUL, or -ENOSPC.
 */
int vfio_user_caps_format(const struct vfio_user_caps *c, char *buf,
			  size_t size);

/*
 * True if a and b have the same members present with the same values
 * (compared member by member: the struct has padding).
 */
bool vfio_user_caps_equal(const struct vfio_user_caps *a,
			  const struct vfio_user_caps *b);

/* Name of a command for logs ("DMA_MAP"), or "UNKNOWN". */
const char *vfio_user_command_name(uint32_t command);

#endif
