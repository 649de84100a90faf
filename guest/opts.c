// SPDX-License-Identifier: MIT
/* The guest simulator's numeric options (guest/opts.h). */
#include "guest/opts.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "common/virtio_rdma.h"
#include "guest/guest_dev.h"

const struct opt_num guest_global_nums[GG_COUNT] = {
	[GG_CONFIG_SIZE] = OPT_NUM_ROW(struct tool, vc.config_size,
				       "config-size", 0, VHOST_USER_CONFIG_MAX),
	[GG_TIMEOUT] = OPT_NUM_ROW(struct tool, vc.timeout_ms, "timeout", 1,
				   INT_MAX, .unit = "ms"),
};

#define ECHO(f, n, lo, hi, ...)                                                \
	OPT_NUM_ROW(struct tool, f, n, lo, hi, __VA_ARGS__)

const struct opt_num guest_echo_nums[GE_NUM] = {
	[GE_COUNT] = ECHO(count, "count", 1, INT64_MAX, .key = 'n'),
	[GE_SIZE] = ECHO(size, "size", 1, 64 << 20, .key = 's'),
	[GE_QUEUES] = ECHO(queues, "queues", 1, GUEST_DEV_MAX_QUEUES),
	/* and a power of two (parse_echo()) */
	[GE_RING] = ECHO(ring, "ring", 1, 32768),
};

#define CLI(f, n, k, lo, hi)                                                   \
	OPT_NUM_ROW(struct gv_tool_cli, f, n, lo, hi, .key = k)

const struct opt_num guest_cli_nums[GC_COUNT] = {
	[GC_PORT] = CLI(port, "port", 'p', 0, 65535),
	[GC_ITERS] = CLI(iters, "iters", 'n', 1, UINT_MAX),
	/* negative: no GID (rdma-core's pingpongs) */
	[GC_GIDX] =
		CLI(gidx, "gid-idx", 'g', INT_MIN, VIRTIO_RDMA_GID_TBL_LEN - 1),
};

#define PP(f, n, k, lo, hi) OPT_NUM_ROW(struct pp_opts, f, n, lo, hi, .key = k)

const struct opt_num guest_pp_nums[GP_COUNT] = {
	/* the device has port 1 alone */
	[GP_IB_PORT] =
		PP(ib_port, "ib-port", 'i', VIRTIO_RDMA_PORT, VIRTIO_RDMA_PORT),
	[GP_SIZE] = PP(size, "size", 's', 1, UINT_MAX),
	/* and a power of two (gv_mtu_to_enum()) */
	[GP_MTU] = PP(mtu_bytes, "mtu", 'm', 256, 4096),
	[GP_RX_DEPTH] =
		PP(rx_depth, "rx-depth", 'r', 1, VIRTIO_RDMA_RING_SIZE - 1),
	[GP_SL] = PP(sl, "sl", 'l', 0, 15),
	[GP_WAIT_MS] = PP(wait_ms, "wait-ms", 'w', 0, 10000),
	[GP_NUM_QP] = PP(num_qp, "num-qp", 'q', 1, PP_MAX_QP),
};

#define PERF(f, n, k, lo, hi)                                                  \
	OPT_NUM_ROW(struct perf_opts, f, n, lo, hi, .key = k)

const struct opt_num guest_perf_nums[GF_COUNT] = {
	[GF_DEPTH] = PERF(depth, "depth", 'D', 1, VIRTIO_RDMA_RING_SIZE),
	[GF_REPEAT] = PERF(repeat, "repeat", 'R', 1, UINT_MAX),
	[GF_CQ_MOD] = PERF(cq_mod, "cq-mod", 'Q', 1, UINT_MAX),
};

const struct opt_num guest_cm_nums[GM_COUNT] = {
	[GM_TIMEOUT] = OPT_NUM_ROW(struct cm_opts, timeout_ms, "cm-timeout", 1,
				   600000, .unit = "ms"),
	/* a 4-bit field of the REQ */
	[GM_RETRIES] =
		OPT_NUM_ROW(struct cm_opts, retries, "cm-retries", 0, 15),
};

int guest_tool_longopts(struct option *lo, size_t lo_len,
			const struct option *fixed, const struct opt_num *tab,
			size_t n)
{
	static const struct option events[] = {
		{ "events", no_argument, NULL, 'e' }, /* gv_tool_cli_opt() */
		{ NULL, 0, NULL, 0 },
	};
	size_t k = 0;
	int r;

	while (fixed[k].name)
		k++;
	if (lo_len < k + 2)
		return -ENOSPC;
	memmove(lo, fixed, k * sizeof(*lo));
	lo[k] = events[0];
	lo[k + 1] = events[1];
	r = opt_num_longopts(lo, lo_len, lo, guest_cli_nums, GC_COUNT);
	return r < 0 ? r : opt_num_longopts(lo, lo_len, lo, tab, n);
}

int guest_opt_num(const struct opt_num *tab, size_t n, void *base,
		  struct gv_tool_cli *cli, int c, const struct option *lo,
		  int li, const char *arg)
{
	struct reason why;
	int r;

	r = opt_num_getopt(tab, n, c, lo, li, arg, base, &why);
	if (r == -ENOENT && cli)
		r = opt_num_getopt(guest_cli_nums, GC_COUNT, c, lo, li, arg,
				   cli, &why);
	if (r == -ENOENT)
		return 0;
	if (r < 0) {
		fprintf(stderr, "rdmagate-guest: %s\n", why.msg);
		return -EINVAL;
	}
	return 1;
}
