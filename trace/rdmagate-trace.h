/* SPDX-License-Identifier: MIT */
/*
 * The key and value layouts of rdmagate-trace's maps, shared by the BPF
 * program and the user side (and documented in docs/tracing.md).  Only
 * fixed-size types: this header is compiled for -target bpf too.
 */
#ifndef RDMAGATE_TRACE_H
#define RDMAGATE_TRACE_H

#define RT_VM_LEN	32 /* VM name bytes in keys, NUL included */
#define RT_MAX_SLOTS	32 /* log2 histogram slots (microseconds) */
#define RT_MAX_VMS	1024
#define RT_MAX_HISTS	8192
#define RT_MAX_INFLIGHT 65536

/* Map "counters": struct rt_vm_key -> struct rt_counters. */
struct rt_vm_key {
	char vm[RT_VM_LEN];
};

struct rt_counters {
	/* worker */
	__u64 kicks;
	__u64 posts;
	__u64 post_bytes;
	__u64 completions;
	__u64 completion_errors;
	__u64 unmatched; /* completions with no post seen (or evicted) */
	__u64 cq_overflows;
	__u64 ctrl_cmds;
	__u64 ctrl_errors;
	__u64 mads_tx;
	__u64 mads_rx;
	__u64 mads_dropped;
	/* broker */
	__u64 workers_spawned;
	__u64 workers_exited;
	__u64 gids_added;
	__u64 gids_removed;
	__u64 policy_refusals;
	/* mux */
	__u64 mux_routed;
	__u64 mux_dropped;
};

/* Map "hists": struct rt_hist_key -> struct rt_hist. */
enum rt_hist_kind {
	RT_HIST_WR = 1,	  /* post -> completion, op = WC opcode at post */
	RT_HIST_CTRL = 2, /* control command, op = VIRTIO_RDMA_CMD_* code */
};

struct rt_hist_key {
	char vm[RT_VM_LEN];
	enum rt_hist_kind kind; /* 4 bytes; bpftool prints its name */
	__u32 op;
};

struct rt_hist {
	__u64 count;  /* samples */
	__u64 sum_ns; /* of their latencies */
	/* slot i: latencies of floor(log2(usecs)) == i (0 and 1 us: slot 0) */
	__u64 slots[RT_MAX_SLOTS];
};

/* Map "inflight" (LRU): struct rt_flight_key -> struct rt_flight. */
struct rt_flight_key {
	__u32 tgid;  /* the worker process */
	__u32 qpn;   /* as given to wr_post */
	__u64 wr_id; /* the worker's host wr_id */
};

struct rt_flight {
	__u64 ts_ns; /* bpf_ktime_get_ns() at wr_post */
	__u32 opcode;
	__u32 pad;
};

#endif
