// SPDX-License-Identifier: MIT
/*
 * The BPF side of rdmagate-trace: one USDT program per probe of
 * common/probes.h, counting per VM and building log2 latency histograms
 * in maps the user side pins under /sys/fs/bpf/rdmagate/.
 */
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <linux/types.h>
#include <stdbool.h> /* libbpf 1.1's usdt.bpf.h uses bool */
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>

#include "rdmagate-trace.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RT_MAX_VMS);
	__type(key, struct rt_vm_key);
	__type(value, struct rt_counters);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RT_MAX_HISTS);
	__type(key, struct rt_hist_key);
	__type(value, struct rt_hist);
} hists SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, RT_MAX_INFLIGHT);
	__type(key, struct rt_flight_key);
	__type(value, struct rt_flight);
} inflight SEC(".maps");

/* Zero values to create entries from (in .bss, not on the stack). */
struct rt_counters zero_counters;
struct rt_hist zero_hist;

/* The VM name the probe points at: a zero-padded key. */
static __always_inline void read_vm(char vm[RT_VM_LEN], const void *uptr)
{
	__builtin_memset(vm, 0, RT_VM_LEN);
	if (bpf_probe_read_user_str(vm, RT_VM_LEN, uptr) < 0)
		vm[0] = '?';
}

static __always_inline struct rt_counters *vm_counters(const void *uvm)
{
	struct rt_vm_key k;
	struct rt_counters *c;

	read_vm(k.vm, uvm);
	c = bpf_map_lookup_elem(&counters, &k);
	if (c)
		return c;
	bpf_map_update_elem(&counters, &k, &zero_counters, BPF_NOEXIST);
	return bpf_map_lookup_elem(&counters, &k);
}

/* floor(log2(v)), 0 for v <= 1. */
static __always_inline __u32 log2_u64(__u64 v)
{
	__u32 r = 0, shift;

	shift = (v > 0xffffffffULL) << 5;
	v >>= shift;
	r |= shift;
	shift = (v > 0xffff) << 4;
	v >>= shift;
	r |= shift;
	shift = (v > 0xff) << 3;
	v >>= shift;
	r |= shift;
	shift = (v > 0xf) << 2;
	v >>= shift;
	r |= shift;
	shift = (v > 0x3) << 1;
	v >>= shift;
	r |= shift;
	r |= (__u32)(v >> 1);
	return r;
}

static __always_inline void hist_add(const void *uvm, __u32 kind, __u32 op,
				     __u64 ns)
{
	struct rt_hist_key k;
	struct rt_hist *h;
	__u32 slot;

	__builtin_memset(&k, 0, sizeof(k));
	read_vm(k.vm, uvm);
	k.kind = kind;
	k.op = op;
	h = bpf_map_lookup_elem(&hists, &k);
	if (!h) {
		bpf_map_update_elem(&hists, &k, &zero_hist, BPF_NOEXIST);
		h = bpf_map_lookup_elem(&hists, &k);
		if (!h)
			return;
	}
	slot = log2_u64(ns / 1000);
	if (slot >= RT_MAX_SLOTS)
		slot = RT_MAX_SLOTS - 1;
	/* hide it from the optimizer, so the verifier sees the bound */
	asm volatile("" : "+r"(slot));
	slot &= RT_MAX_SLOTS - 1;
	__sync_fetch_and_add(&h->slots[slot], 1);
	__sync_fetch_and_add(&h->count, 1);
	__sync_fetch_and_add(&h->sum_ns, ns);
}

#define COUNT(uvm, field, n)                                                   \
	do {                                                                   \
		struct rt_counters *c_ = vm_counters(uvm);                     \
		if (c_)                                                        \
			__sync_fetch_and_add(&c_->field, (n));                 \
	} while (0)

/* ---- worker ---- */

SEC("usdt")
int BPF_USDT(kick, const void *vm, __u32 queue)
{
	COUNT(vm, kicks, 1);
	return 0;
}

SEC("usdt")
int BPF_USDT(ctrl_cmd, const void *vm, __u32 code, __u32 status,
	     __u64 duration_ns)
{
	struct rt_counters *c = vm_counters(vm);

	if (c) {
		__sync_fetch_and_add(&c->ctrl_cmds, 1);
		if (status)
			__sync_fetch_and_add(&c->ctrl_errors, 1);
	}
	/* 0: the tracer attached while the command ran; no sample */
	if (duration_ns)
		hist_add(vm, RT_HIST_CTRL, code & 0xff, duration_ns);
	return 0;
}

SEC("usdt")
int BPF_USDT(wr_post, const void *vm, __u32 qpn, __u32 opcode, __u64 wr_id,
	     __u64 bytes)
{
	struct rt_flight_key k = {
		.tgid = (__u32)(bpf_get_current_pid_tgid() >> 32),
		.qpn = qpn,
		.wr_id = wr_id,
	};
	struct rt_flight f = { .ts_ns = bpf_ktime_get_ns(), .opcode = opcode };
	struct rt_counters *c = vm_counters(vm);

	if (c) {
		__sync_fetch_and_add(&c->posts, 1);
		__sync_fetch_and_add(&c->post_bytes, bytes);
	}
	bpf_map_update_elem(&inflight, &k, &f, BPF_ANY);
	return 0;
}

SEC("usdt")
int BPF_USDT(wr_complete, const void *vm, __u32 qpn, __u64 wr_id, __u32 status,
	     __u32 opcode)
{
	struct rt_flight_key k = {
		.tgid = (__u32)(bpf_get_current_pid_tgid() >> 32),
		.qpn = qpn,
		.wr_id = wr_id,
	};
	struct rt_counters *c = vm_counters(vm);
	struct rt_flight *f;
	__u64 now = bpf_ktime_get_ns(), ts;
	__u32 op;

	if (c) {
		__sync_fetch_and_add(&c->completions, 1);
		if (status)
			__sync_fetch_and_add(&c->completion_errors, 1);
	}
	f = bpf_map_lookup_elem(&inflight, &k);
	if (!f) {
		if (c)
			__sync_fetch_and_add(&c->unmatched, 1);
		return 0;
	}
	ts = f->ts_ns;
	op = f->opcode;
	bpf_map_delete_elem(&inflight, &k);
	hist_add(vm, RT_HIST_WR, op, now > ts ? now - ts : 0);
	return 0;
}

SEC("usdt")
int BPF_USDT(cq_overflow, const void *vm, __u32 cqn)
{
	COUNT(vm, cq_overflows, 1);
	return 0;
}

SEC("usdt")
int BPF_USDT(mad_send, const void *vm, __u32 qpn, __u32 bytes)
{
	COUNT(vm, mads_tx, 1);
	return 0;
}

SEC("usdt")
int BPF_USDT(mad_recv, const void *vm, __u32 qpn, __u32 bytes)
{
	COUNT(vm, mads_rx, 1);
	return 0;
}

SEC("usdt")
int BPF_USDT(mad_drop, const void *vm, __u32 reason, __u32 bytes)
{
	COUNT(vm, mads_dropped, 1);
	return 0;
}

/* ---- broker ---- */

SEC("usdt")
int BPF_USDT(worker_spawn, const void *vm, __s32 pid)
{
	COUNT(vm, workers_spawned, 1);
	return 0;
}

SEC("usdt")
int BPF_USDT(worker_exit, const void *vm, __s32 pid, __u32 reason, __s32 status)
{
	COUNT(vm, workers_exited, 1);
	return 0;
}

SEC("usdt")
int BPF_USDT(gid_add, const void *vm, __u32 port, __u32 index, const void *gid)
{
	COUNT(vm, gids_added, 1);
	return 0;
}

SEC("usdt")
int BPF_USDT(gid_del, const void *vm, __u32 port, __u32 index, const void *gid)
{
	COUNT(vm, gids_removed, 1);
	return 0;
}

SEC("usdt")
int BPF_USDT(policy_refuse, const void *vm, __u32 what, const void *why)
{
	COUNT(vm, policy_refusals, 1);
	return 0;
}

/* ---- MAD mux ---- */

SEC("usdt")
int BPF_USDT(mad_route, const void *vm, __u32 mgmt_class, __u32 attr_id)
{
	COUNT(vm, mux_routed, 1);
	return 0;
}

SEC("usdt")
int BPF_USDT(mad_route_drop, const void *vm, __u32 reason, __u32 mgmt_class)
{
	COUNT(vm, mux_dropped, 1);
	return 0;
}
