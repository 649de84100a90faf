/* SPDX-License-Identifier: MIT */
/*
 * The vhost-user wire protocol, as rdmagate speaks it: the one definition
 * shared by the worker (backend) and the guest simulator (frontend).
 * Numbers follow QEMU's docs/interop/vhost-user.rst; requests we do not
 * implement keep their numbers so that they are named in errors.
 *
 * Every message is a 12-byte header followed by `size` bytes of payload;
 * file descriptors travel as SCM_RIGHTS with the header.
 * All integers are little-endian (host order on the x86-64 hosts we run on).
 */
#ifndef RDMAGATE_COMMON_VHOST_USER_H
#define RDMAGATE_COMMON_VHOST_USER_H

#include <stdint.h>

/* Version of our vhost-user subset; bump when the supported set changes. */
#define RDMAGATE_VHOST_USER_SUBSET_VERSION 1

/* Header flags (the protocol's own version lives in the low 2 bits). */
#define VHOST_USER_VERSION_MASK 0x3u
#define VHOST_USER_VERSION	0x1u
#define VHOST_USER_REPLY_MASK	(1u << 2)
#define VHOST_USER_NEED_REPLY	(1u << 3)

/* Front-end requests. Gaps: none; 26-33 are device-specific or postcopy. */
enum vhost_user_request {
	VHOST_USER_NONE = 0,
	VHOST_USER_GET_FEATURES = 1,
	VHOST_USER_SET_FEATURES = 2,
	VHOST_USER_SET_OWNER = 3,
	VHOST_USER_RESET_OWNER = 4,
	VHOST_USER_SET_MEM_TABLE = 5,
	VHOST_USER_SET_LOG_BASE = 6,
	VHOST_USER_SET_LOG_FD = 7,
	VHOST_USER_SET_VRING_NUM = 8,
	VHOST_USER_SET_VRING_ADDR = 9,
	VHOST_USER_SET_VRING_BASE = 10,
	VHOST_USER_GET_VRING_BASE = 11,
	VHOST_USER_SET_VRING_KICK = 12,
	VHOST_USER_SET_VRING_CALL = 13,
	VHOST_USER_SET_VRING_ERR = 14,
	VHOST_USER_GET_PROTOCOL_FEATURES = 15,
	VHOST_USER_SET_PROTOCOL_FEATURES = 16,
	VHOST_USER_GET_QUEUE_NUM = 17,
	VHOST_USER_SET_VRING_ENABLE = 18,
	VHOST_USER_SEND_RARP = 19,
	VHOST_USER_NET_SET_MTU = 20,
	VHOST_USER_SET_BACKEND_REQ_FD = 21,
	VHOST_USER_IOTLB_MSG = 22,
	VHOST_USER_SET_VRING_ENDIAN = 23,
	VHOST_USER_GET_CONFIG = 24,
	VHOST_USER_SET_CONFIG = 25,
	VHOST_USER_CREATE_CRYPTO_SESSION = 26,
	VHOST_USER_CLOSE_CRYPTO_SESSION = 27,
	VHOST_USER_POSTCOPY_ADVISE = 28,
	VHOST_USER_POSTCOPY_LISTEN = 29,
	VHOST_USER_POSTCOPY_END = 30,
	VHOST_USER_GET_INFLIGHT_FD = 31,
	VHOST_USER_SET_INFLIGHT_FD = 32,
	VHOST_USER_GPU_SET_SOCKET = 33,
	VHOST_USER_RESET_DEVICE = 34,
	VHOST_USER_VRING_KICK = 35,
	VHOST_USER_GET_MAX_MEM_SLOTS = 36,
	VHOST_USER_ADD_MEM_REG = 37,
	VHOST_USER_REM_MEM_REG = 38,
	VHOST_USER_SET_STATUS = 39,
	VHOST_USER_GET_STATUS = 40,
	VHOST_USER_MAX_REQUEST
};

/* Virtio feature bit that announces vhost-user protocol features. */
#define VHOST_USER_F_PROTOCOL_FEATURES 30

/* Protocol feature bits (GET/SET_PROTOCOL_FEATURES). */
enum vhost_user_protocol_feature {
	VHOST_USER_PROTOCOL_F_MQ = 0,
	VHOST_USER_PROTOCOL_F_LOG_SHMFD = 1,
	VHOST_USER_PROTOCOL_F_RARP = 2,
	VHOST_USER_PROTOCOL_F_REPLY_ACK = 3,
	VHOST_USER_PROTOCOL_F_NET_MTU = 4,
	VHOST_USER_PROTOCOL_F_BACKEND_REQ = 5,
	VHOST_USER_PROTOCOL_F_CROSS_ENDIAN = 6,
	VHOST_USER_PROTOCOL_F_CRYPTO_SESSION = 7,
	VHOST_USER_PROTOCOL_F_PAGEFAULT = 8,
	VHOST_USER_PROTOCOL_F_CONFIG = 9,
	VHOST_USER_PROTOCOL_F_BACKEND_SEND_FD = 10,
	VHOST_USER_PROTOCOL_F_HOST_NOTIFIER = 11,
	VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD = 12,
	VHOST_USER_PROTOCOL_F_RESET_DEVICE = 13,
	VHOST_USER_PROTOCOL_F_INBAND_NOTIFICATIONS = 14,
	VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS = 15,
	VHOST_USER_PROTOCOL_F_STATUS = 16,
};

/* Limits of the protocol itself (not of our implementation). */
#define VHOST_USER_MAX_FDS	      8 /* SCM_RIGHTS per message */
#define VHOST_USER_MEM_BASELINE_NREGS 8 /* SET_MEM_TABLE array size */
#define VHOST_USER_CONFIG_MAX	      256
#define VHOST_USER_VRING_IDX_MASK     0xffu /* SET_VRING_KICK/CALL/ERR */
#define VHOST_USER_VRING_NOFD_MASK    (1u << 8)

struct vhost_user_header {
	uint32_t request;
	uint32_t flags;
	uint32_t size; /* payload bytes that follow */
} __attribute__((packed));
_Static_assert(sizeof(struct vhost_user_header) == 12, "header");

struct vhost_user_vring_state {
	uint32_t index;
	uint32_t num;
};
_Static_assert(sizeof(struct vhost_user_vring_state) == 8, "vring state");

#define VHOST_VRING_F_LOG 0 /* bit in vring_addr.flags */

/* Ring addresses are the frontend's (VMM's) user addresses. */
struct vhost_user_vring_addr {
	uint32_t index;
	uint32_t flags;
	uint64_t desc_user_addr;
	uint64_t used_user_addr;
	uint64_t avail_user_addr;
	uint64_t log_guest_addr;
};
_Static_assert(sizeof(struct vhost_user_vring_addr) == 40, "vring addr");

struct vhost_user_mem_region {
	uint64_t guest_phys_addr;
	uint64_t memory_size;
	uint64_t userspace_addr;
	uint64_t mmap_offset;
};
_Static_assert(sizeof(struct vhost_user_mem_region) == 32, "mem region");

struct vhost_user_memory {
	uint32_t nregions;
	uint32_t padding;
	struct vhost_user_mem_region regions[VHOST_USER_MEM_BASELINE_NREGS];
};
_Static_assert(sizeof(struct vhost_user_memory) == 264, "memory");

/* ADD_MEM_REG / REM_MEM_REG payload. */
struct vhost_user_mem_reg_single {
	uint64_t padding;
	struct vhost_user_mem_region region;
};
_Static_assert(sizeof(struct vhost_user_mem_reg_single) == 40, "mem reg");

struct vhost_user_config {
	uint32_t offset;
	uint32_t size;
	uint32_t flags;
	uint8_t payload[VHOST_USER_CONFIG_MAX];
};
#define VHOST_USER_CONFIG_HDR_SIZE 12u
_Static_assert(sizeof(struct vhost_user_config) == 12 + 256, "config");

/* Largest payload either side accepts (SET_MEM_TABLE / config). */
#define VHOST_USER_MAX_PAYLOAD 512u

union vhost_user_payload {
	uint64_t u64;
	struct vhost_user_vring_state state;
	struct vhost_user_vring_addr addr;
	struct vhost_user_memory memory;
	struct vhost_user_mem_reg_single mem_reg;
	struct vhost_user_config config;
	uint8_t bytes[VHOST_USER_MAX_PAYLOAD];
};

struct vhost_user_msg {
	struct vhost_user_header hdr;
	union vhost_user_payload payload;
} __attribute__((packed));

/* Name of a request for logs ("SET_MEM_TABLE"), or "UNKNOWN". */
const char *vhost_user_request_name(uint32_t request);

#endif
