/* SPDX-License-Identifier: MIT */
/*
 * The guest simulator's command lines as data: what its commands run
 * with, and the tables of their numeric options (common/opt_num.h),
 * exported for the unit test.
 */
#ifndef RDMAGATE_GUEST_OPTS_H
#define RDMAGATE_GUEST_OPTS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/cleanup.h"
#include "common/opt_num.h"
#include "guest/tools.h"
#include "guest/vhost_client.h"

/* rdmagate-guest's global options and the echo command's (main.c). */
struct tool {
	const char *socket;
	struct vhost_client_opts vc;
	/* echo */
	unsigned long count;
	uint32_t size;
	unsigned int queues;
	uint16_t ring;
	bool hugepages, indirect, poll, event_idx;
	/* commands on the virtio-rdma verbs */
	struct gv_tool_opts gt;
};

enum guest_global_num { GG_CONFIG_SIZE, GG_TIMEOUT, GG_COUNT };
enum guest_echo_num { GE_COUNT, GE_SIZE, GE_QUEUES, GE_RING, GE_NUM };
/* Fields of struct tool. */
extern const struct opt_num guest_global_nums[GG_COUNT];
extern const struct opt_num guest_echo_nums[GE_NUM];

/* -p -n -g of every verbs tool: fields of struct gv_tool_cli. */
enum guest_cli_num { GC_PORT, GC_ITERS, GC_GIDX, GC_COUNT };
extern const struct opt_num guest_cli_nums[GC_COUNT];

/* The pingpongs' own (tool_pingpong.c). */
struct pp_opts {
	struct gv_tool_cli c; /* server, port, iters, gidx, events */
	unsigned int size, rx_depth;
	unsigned int mtu_bytes; /* -m, as written */
	uint32_t mtu;		/* -m, as enum ibv_mtu */
	int ib_port, sl;
	bool check;
	bool ud;	      /* ud_pingpong */
	bool srq;	      /* srq_pingpong */
	unsigned int num_qp;  /* srq_pingpong -q */
	unsigned int wait_ms; /* -w: pause before each send (a low rate) */
};

#define PP_MAX_QP 64 /* srq_pingpong -q: the device has ~80 slots */

enum guest_pp_num {
	GP_IB_PORT,
	GP_SIZE,
	GP_MTU,
	GP_RX_DEPTH,
	GP_SL,
	GP_WAIT_MS,
	GP_NUM_QP,
	GP_COUNT
};
/* Fields of struct pp_opts. */
extern const struct opt_num guest_pp_nums[GP_COUNT];

/* perf's own (tool_perf.c). */
enum perf_test {
	T_SEND_LAT,
	T_WRITE_LAT,
	T_READ_LAT,
	T_WRITE_BW,
	T_READ_BW,
	T_SEND_BW,
	T_REG,
};

struct perf_opts {
	struct gv_tool_cli c; /* server, port, iters, gidx, events */
	enum perf_test test;
	unsigned int depth, repeat;
	unsigned int cq_mod; /* one signaled send in cq_mod */
	uint64_t size;
};

enum guest_perf_num { GF_DEPTH, GF_REPEAT, GF_CQ_MOD, GF_COUNT };
/* Fields of struct perf_opts. */
extern const struct opt_num guest_perf_nums[GF_COUNT];

/* The CM tools' --cm-timeout=MS and --cm-retries=N (tool_cm.c). */
struct cm_opts {
	uint32_t timeout_ms; /* 0: ib_cm's timers */
	int retries;	     /* -1: rdma_cm's 15 */
};

enum guest_cm_num { GM_TIMEOUT, GM_RETRIES, GM_COUNT };
/* Fields of struct cm_opts. */
extern const struct opt_num guest_cm_nums[GM_COUNT];

/*
 * getopt_long()'s options of a verbs tool: fixed's, --events (-e) and
 * one per row of guest_cli_nums (the options all share), one per row of
 * tab (n rows), the NULL entry.  lo has room for lo_len entries
 * (GUEST_TOOL_LONGOPTS(fixed, n)).  0, or -ENOSPC.
 */
#define GUEST_TOOL_LONGOPTS(fixed, n) (ARRAY_SIZE(fixed) + 1 + GC_COUNT + (n))
int guest_tool_longopts(struct option *lo, size_t lo_len,
			const struct option *fixed, const struct opt_num *tab,
			size_t n);

/*
 * What getopt_long() returned (c; lo[li]) among tab's rows, else the
 * verbs tools' common rows (guest_cli_nums, into *cli if not NULL): 1 if it was
 * one of them (parsed), 0 if neither has it, -EINVAL after printing why.
 */
int guest_opt_num(const struct opt_num *tab, size_t n, void *base,
		  struct gv_tool_cli *cli, int c, const struct option *lo,
		  int li, const char *arg);

#endif
