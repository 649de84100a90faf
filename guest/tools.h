/* SPDX-License-Identifier: MIT */
/*
 * What the rdmagate-guest commands built on the verbs-like API share: the
 * global options (socket, GIDs to add, scattering) and the entry points
 * of the pingpong and perf commands.
 */
#ifndef RDMAGATE_GUEST_TOOLS_H
#define RDMAGATE_GUEST_TOOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "guest/verbs.h"

#define GV_TOOL_MAX_GIDS 8

struct gv_tool_gid {
	uint16_t index;
	uint32_t type; /* enum virtio_rdma_gid_type */
	uint8_t gid[16];
};

struct gv_tool_opts {
	const char *socket;
	int timeout_ms;
	bool scatter;
	uint64_t data_size; /* guest RAM for buffers; 0: default */
	unsigned int ngids;
	struct gv_tool_gid gids[GV_TOOL_MAX_GIDS];
};

/* Parses "INDEX=GID[,v1|,v2]" (RoCE v2 by default). 0 or -EINVAL. */
int gv_tool_parse_gid(const char *arg, struct gv_tool_gid *ret);

/* gv_open() plus ADD_GID of every --gid; prints why on failure. */
int gv_tool_open(const struct gv_tool_opts *o, struct gv_context **ret_ctx);

/*
 * TCP helpers of the out-of-band exchange: gv_tool_connect() retries for
 * 5 s while the server starts; gv_tool_accept() takes one connection on
 * `port` (all addresses). Return a CLOEXEC socket or -1 (said why).
 * The read/write helpers move exactly len bytes: 0 or -EIO.
 */
int gv_tool_connect(const char *host, unsigned int port);
int gv_tool_accept(unsigned int port);
int gv_tool_read_full(int fd, void *buf, size_t len);
int gv_tool_write_full(int fd, const void *buf, size_t len);

/* argv[0] is the command name. Exit statuses: 0, 1 (failure), 2 (usage). */
int gv_tool_rc_pingpong(const struct gv_tool_opts *o, int argc, char **argv);
int gv_tool_ud_pingpong(const struct gv_tool_opts *o, int argc, char **argv);
int gv_tool_srq_pingpong(const struct gv_tool_opts *o, int argc, char **argv);
int gv_tool_perf(const struct gv_tool_opts *o, int argc, char **argv);

#endif
