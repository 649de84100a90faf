// SPDX-License-Identifier: MIT
/* The host verbs device: open, query, cache GIDs and the P_Key. */
#include "worker/backend/hca.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"

/* "rxe0, rxe1" or "none" into buf. */
static void list_devices(struct ibv_device **list, int n, char *buf, size_t len)
{
	size_t off = 0;
	int i;

	snprintf(buf, len, "none");
	for (i = 0; i < n && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s",
					i ? ", " : "",
					ibv_get_device_name(list[i]));
}

static int open_by_name(const char *name, struct ibv_context **ret_ctx,
			struct reason *why)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	char names[128];
	int n = 0, i, ret = -ENODEV;

	list = ibv_get_device_list(&n);
	if (!list)
		return reason_fail(why, -ENODEV,
				   "no verbs device named '%s' (cannot list "
				   "verbs devices: %s)",
				   name, strerror(errno));
	for (i = 0; i < n; i++) {
		if (strcmp(ibv_get_device_name(list[i]), name) != 0)
			continue;
		ctx = ibv_open_device(list[i]);
		ret = ctx ? 0 : -(errno ? errno : EIO);
		if (!ctx)
			reason_fail(why, ret, "cannot open verbs device %s: %s",
				    name, strerror(-ret));
		break;
	}
	if (i == n) {
		list_devices(list, n, names, sizeof(names));
		reason_fail(why, ret,
			    "no verbs device named '%s' (present: %s)", name,
			    names);
	}
	ibv_free_device_list(list);
	if (ret == 0)
		*ret_ctx = ctx;
	return ret;
}

static int cache_gids(struct rdma_hca *hca, struct reason *why)
{
	struct ibv_gid_entry ent[RDMA_HCA_MAX_GIDS];
	ssize_t n, i;

	n = ibv_query_gid_table(hca->ctx, ent, RDMA_HCA_MAX_GIDS, 0);
	if (n < 0)
		return reason_fail(why, (int)n, "cannot read the GID table: %s",
				   strerror((int)-n));
	hca->ngids = 0;
	for (i = 0; i < n; i++) {
		struct rdma_hca_gid *g = &hca->gids[hca->ngids];

		if (ent[i].port_num != hca->port)
			continue;
		g->gid = ent[i].gid;
		g->index = ent[i].gid_index;
		g->gid_type = ent[i].gid_type;
		hca->ngids++;
	}
	return 0;
}

int rdma_hca_open(const char *name, uint8_t port, struct rdma_hca *ret_hca,
		  struct reason *why)
{
	struct rdma_hca *h = ret_hca;
	int ret;

	memset(h, 0, sizeof(*h));
	snprintf(h->name, sizeof(h->name), "%s", name);
	h->port = port;
	ret = open_by_name(name, &h->ctx, why);
	if (ret < 0)
		return ret;
	ret = ibv_query_device(h->ctx, &h->dev);
	if (ret) {
		reason_fail(why, -ret, "ibv_query_device: %s", strerror(ret));
		goto fail;
	}
	if (port < 1 || port > h->dev.phys_port_cnt) {
		ret = EINVAL;
		reason_fail(why, -ret, "%s has no port %u (ports 1..%u)", name,
			    port, h->dev.phys_port_cnt);
		goto fail;
	}
	ret = ibv_query_port(h->ctx, port, &h->port_attr);
	if (ret) {
		reason_fail(why, -ret, "ibv_query_port %u: %s", port,
			    strerror(ret));
		goto fail;
	}
	ret = ibv_query_pkey(h->ctx, port, 0, &h->pkey0);
	if (ret) {
		ret = EIO;
		reason_fail(why, -ret, "cannot read P_Key 0 of port %u", port);
		goto fail;
	}
	h->pkey0 = be16toh(h->pkey0);
	ret = -cache_gids(h, why);
	if (ret)
		goto fail;
	log_info("serving %s port %u: %u GIDs, P_Key 0x%04x, max_qp %d, "
		 "max_cq %d, max_mr %d",
		 name, port, h->ngids, h->pkey0, h->dev.max_qp, h->dev.max_cq,
		 h->dev.max_mr);
	return 0;
fail:
	ibv_close_device(h->ctx);
	h->ctx = NULL;
	return -ret;
}

void rdma_hca_close(struct rdma_hca *hca)
{
	if (hca->ctx)
		ibv_close_device(hca->ctx);
	hca->ctx = NULL;
}

int rdma_hca_find_gid(const struct rdma_hca *hca, const uint8_t gid[16],
		      uint32_t gid_type)
{
	unsigned int i;

	for (i = 0; i < hca->ngids; i++)
		if (hca->gids[i].gid_type == gid_type &&
		    !memcmp(hca->gids[i].gid.raw, gid, 16))
			return (int)hca->gids[i].index;
	return -ENOENT;
}

const struct rdma_hca_gid *rdma_hca_gid_at(const struct rdma_hca *hca,
					   uint32_t index)
{
	unsigned int i;

	for (i = 0; i < hca->ngids; i++)
		if (hca->gids[i].index == index)
			return &hca->gids[i];
	return NULL;
}
