/* SPDX-License-Identifier: MIT */
/*
 * The host verbs device a worker serves its guest from: opened, queried
 * and its GID and P_Key tables cached once at startup, before any guest
 * input and before the sandbox forbids sysfs (ibv_query_pkey reads sysfs).
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
	struct ibv_context *ctx;
	struct ibv_device_attr dev;
	struct ibv_port_attr port_attr;
	uint16_t pkey0; /* host P_Key table entry 0 */
	unsigned int ngids;
	struct rdma_hca_gid gids[RDMA_HCA_MAX_GIDS]; /* valid entries only */
};

/*
 * Opens device `name`, port `port`, and caches its attributes, GIDs and
 * P_Key 0. Returns 0, or -ENODEV (no such device; the reason lists the
 * devices present), -EINVAL (no such port) or another -errno, with the
 * reason in *why.
 */
int rdma_hca_open(const char *name, uint8_t port, struct rdma_hca *ret_hca,
		  struct reason *why);
void rdma_hca_close(struct rdma_hca *hca);

/* Host GID table index of a GID with this value and type, or -ENOENT. */
int rdma_hca_find_gid(const struct rdma_hca *hca, const uint8_t gid[16],
		      uint32_t gid_type);
/* The cached entry with host index `index`, or NULL. */
const struct rdma_hca_gid *rdma_hca_gid_at(const struct rdma_hca *hca,
					   uint32_t index);

#endif
