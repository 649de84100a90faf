// SPDX-License-Identifier: MIT
/* The host verbs device: find, open, query, cache GIDs and the P_Key. */
#include "worker/backend/hca.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* The device named `name` in list[0..n), or NULL (the reason lists them). */
static struct ibv_device *find_by_name(struct ibv_device **list, int n,
				       const char *name, struct reason *why)
{
	char names[128];
	int i;

	for (i = 0; i < n; i++)
		if (strcmp(ibv_get_device_name(list[i]), name) == 0)
			return list[i];
	list_devices(list, n, names, sizeof(names));
	reason_fail(why, -ENODEV, "no verbs device named '%s' (present: %s)",
		    name, names);
	return NULL;
}

/*
 * P_Key 0 of the port, from sysfs as ibv_query_pkey() would read it, but
 * before the device is open: the worker's sandbox domain may not open
 * sysfs files, and the device must be opened in that domain.
 */
static int read_pkey0(const struct ibv_device *dev, uint8_t port,
		      uint16_t *ret_pkey, struct reason *why)
{
	char path[IBV_SYSFS_PATH_MAX + 32], buf[16], *end;
	unsigned long v;
	ssize_t n;
	int fd, ret;

	snprintf(path, sizeof(path), "%s/ports/%u/pkeys/0", dev->ibdev_path,
		 port);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		if (ret == -ENOENT)
			return reason_fail(why, -EINVAL, "%s has no port %u",
					   dev->name, port);
		return reason_fail(why, ret, "cannot read %s: %s", path,
				   strerror(-ret));
	}
	n = read(fd, buf, sizeof(buf) - 1);
	ret = n < 0 ? -errno : 0;
	close(fd);
	if (n < 0)
		return reason_fail(why, ret, "cannot read %s: %s", path,
				   strerror(-ret));
	buf[n] = '\0';
	errno = 0;
	v = strtoul(buf, &end, 0);
	if (errno || end == buf || (*end && *end != '\n') || v > 0xffff)
		return reason_fail(why, -EIO, "%s: '%.*s' is not a P_Key", path,
				   (int)strcspn(buf, "\n"), buf);
	*ret_pkey = (uint16_t)v;
	return 0;
}

int rdma_hca_find(const char *name, uint8_t port, struct rdma_hca *ret_hca,
		  struct reason *why)
{
	struct rdma_hca *h = ret_hca;
	struct ibv_device **list;
	int n = 0, ret;

	memset(h, 0, sizeof(*h));
	snprintf(h->name, sizeof(h->name), "%s", name);
	h->port = port;
	list = ibv_get_device_list(&n);
	if (!list)
		return reason_fail(why, -ENODEV,
				   "no verbs device named '%s' (cannot list "
				   "verbs devices: %s)",
				   name, strerror(errno));
	h->device = find_by_name(list, n, name, why);
	if (!h->device) {
		ret = -ENODEV;
		goto fail;
	}
	ret = read_pkey0(h->device, port, &h->pkey0, why);
	if (ret < 0)
		goto fail;
	/* the list holds the device (libibverbs' reference) until it opens */
	h->list = list;
	return 0;
fail:
	ibv_free_device_list(list);
	h->device = NULL;
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

static int query(struct rdma_hca *h, struct reason *why)
{
	int ret;

	ret = ibv_query_device(h->ctx, &h->dev);
	if (ret)
		return reason_fail(why, -ret, "ibv_query_device: %s",
				   strerror(ret));
	if (h->port < 1 || h->port > h->dev.phys_port_cnt)
		return reason_fail(why, -EINVAL,
				   "%s has no port %u (ports 1..%u)", h->name,
				   h->port, h->dev.phys_port_cnt);
	ret = ibv_query_port(h->ctx, h->port, &h->port_attr);
	if (ret)
		return reason_fail(why, -ret, "ibv_query_port %u: %s", h->port,
				   strerror(ret));
	return cache_gids(h, why);
}

int rdma_hca_open(struct rdma_hca *h, struct reason *why)
{
	int ret;

	if (!h->device)
		return reason_fail(why, -EINVAL, "no verbs device found yet");
	h->ctx = ibv_open_device(h->device);
	if (!h->ctx) {
		ret = -(errno ? errno : EIO);
		return reason_fail(why, ret, "cannot open verbs device %s: %s",
				   h->name, strerror(-ret));
	}
	ibv_free_device_list(h->list); /* the context holds the device now */
	h->list = NULL;
	ret = query(h, why);
	if (ret < 0) {
		ibv_close_device(h->ctx);
		h->ctx = NULL;
		return ret;
	}
	log_info("serving %s port %u: %u GIDs, P_Key 0x%04x, max_qp %d, "
		 "max_cq %d, max_mr %d",
		 h->name, h->port, h->ngids, h->pkey0, h->dev.max_qp,
		 h->dev.max_cq, h->dev.max_mr);
	return 0;
}

void rdma_hca_close(struct rdma_hca *hca)
{
	if (hca->ctx)
		ibv_close_device(hca->ctx);
	hca->ctx = NULL;
	if (hca->list)
		ibv_free_device_list(hca->list);
	hca->list = NULL;
	hca->device = NULL;
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
