/* SPDX-License-Identifier: MIT */
/*
 * The host verbs device a worker serves its guest from: found, opened,
 * queried and its GID and P_Key tables cached once at startup, before any
 * guest input and before the sandbox forbids sysfs.
 */
#ifndef RDMAGATE_WORKER_BACKEND_HCA_H
#define RDMAGATE_WORKER_BACKEND_HCA_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/reason.h"

/* Host GID table entries we cache (rxe has 16..32; mlx5 up to 255). */
#define RDMA_HCA_MAX_GIDS 256

struct rdma_hca_gid {
	union ibv_gid gid;
	uint32_t index;	   /* host GID table index */
	uint32_t gid_type; /* enum ibv_gid_type (IBV_GID_TYPE_ROCE_V2 ...) */
};

struct rdma_hca {
	char name[IBV_SYSFS_NAME_MAX];
	uint8_t port;
	struct ibv_device **list; /* found, not yet open: holds device */
	struct ibv_device *device;
	struct ibv_context *ctx;
	struct ibv_device_attr dev;
	struct ibv_port_attr port_attr;
	uint16_t pkey0; /* host P_Key table entry 0 */
	unsigned int ngids;
	struct rdma_hca_gid gids[RDMA_HCA_MAX_GIDS]; /* valid entries only */
};

/*
 * Two steps, because the uverbs fd must be opened with the credentials the
 * worker serves with: the kernel refuses write() on it from a process whose
 * credentials changed since (ib_safe_file_access()), and the worker's
 * SELinux setcon() changes them (docs/selinux.md).
 *
 * rdma_hca_find(), before the change: libibverbs' device list (sysfs,
 * NETLINK_RDMA, the provider libraries), device `name`, P_Key 0 of port
 * `port` (sysfs). Returns 0, or -ENODEV (no such device; the reason lists
 * the devices present), -EINVAL (no such port) or another -errno, with the
 * reason in *why.
 */
int rdma_hca_find(const char *name, uint8_t port, struct rdma_hca *ret_hca,
		  struct reason *why);
/*
 * After it: opens the device found and caches its attributes and GIDs
 * (ioctl()s on the new fd, no file opened but the device node). Returns 0
 * or -errno with the reason in *why.
 */
int rdma_hca_open(struct rdma_hca *hca, struct reason *why);
void rdma_hca_close(struct rdma_hca *hca);

/* Host GID table index of a GID with this value and type, or -ENOENT. */
int rdma_hca_find_gid(const struct rdma_hca *hca, const uint8_t gid[16],
		      uint32_t gid_type);
/* The cached entry with host index `index`, or NULL. */
const struct rdma_hca_gid *rdma_hca_gid_at(const struct rdma_hca *hca,
					   uint32_t index);

#endif
