/* SPDX-License-Identifier: MIT */
/*
 * Every USDT probe of rdmagate (provider "rdmagate"), in one place: the
 * worker, the broker and the MAD mux fire them, rdmagate-trace attaches to
 * them, docs/tracing.md lists them.
 *
 * Probe ABI version 1.  Changing a probe's name, the order or the meaning
 * of its arguments is an ABI change: bump RDMAGATE_PROBES_VERSION, update
 * trace/rdmagate-trace.bpf.c and docs/tracing.md in the same commit.
 *
 * The first argument of every probe is the VM's name: a pointer to a
 * NUL-terminated string the process keeps for its whole life (the worker's
 * --vm; "" when it has none).  The tracer reads at most 31 bytes of it.
 *
 * An unattached probe is one `nop` plus keeping its arguments in registers
 * or memory; no syscall, nothing the sandbox sees.  sys/sdt.h attaches a
 * semaphore to every probe of a translation unit that defines
 * _SDT_HAS_SEMAPHORES, so every probe here has one (unsigned short
 * rdmagate_<probe>_semaphore in section .probes).  The kernel increments it
 * while a tracer is attached; RDMAGATE_<PROBE>_ENABLED() reads it, and is
 * used where preparing an argument costs something (a clock read, a sum).
 *
 * Exactly one translation unit of each program defines the semaphores and
 * rdmagate_probe_vm: it defines RDMAGATE_PROBES_DEFINE before including
 * this header (the worker: worker/main.c).
 */
#ifndef RDMAGATE_COMMON_PROBES_H
#define RDMAGATE_COMMON_PROBES_H

#define RDMAGATE_PROBES_VERSION 1

#define _SDT_HAS_SEMAPHORES 1
/*
 * Arguments in registers or immediates only: sys/sdt.h's default "nor"
 * lets the compiler name a global as `8@sym(%rip)`, which libbpf's USDT
 * argument parser (1.1) rejects.  Loading a register costs about nothing.
 */
#define STAP_SDT_ARG_CONSTRAINT nr
#include <sys/sdt.h>

/* The VM name the process's probes pass ("" until set). */
extern const char *rdmagate_probe_vm;

/* mad_drop / mad_route_drop reasons. */
enum rdmagate_mad_drop {
	RDMAGATE_MAD_DROP_NO_MUX = 1,	  /* worker: no MAD mux to send to */
	RDMAGATE_MAD_DROP_BAD = 2,	  /* malformed MAD */
	RDMAGATE_MAD_DROP_NO_ROUTE = 3,	  /* mux: no VM owns the target */
	RDMAGATE_MAD_DROP_POLICY = 4,	  /* mux: the policy forbids it */
	RDMAGATE_MAD_DROP_QUEUE_FULL = 5, /* the receiver cannot take it */
};

/*
 * mad_dropped reasons: why rdmagate-mux routed a MAD nowhere.  Also the
 * index of the per-worker drop counters of the mux's STATS reply
 * (common/mux_proto.h).  docs/mux.md says when each applies.
 */
enum rdmagate_mux_drop {
	RDMAGATE_MUX_DROP_MALFORMED = 1,    /* too short, bad header */
	RDMAGATE_MUX_DROP_CLASS = 2,	    /* not CM 0x07 v2, method Send */
	RDMAGATE_MUX_DROP_ATTR = 3,	    /* a CM attribute not routed */
	RDMAGATE_MUX_DROP_UNKNOWN_GID = 4,  /* in: destination nobody's */
	RDMAGATE_MUX_DROP_PATH = 5,	    /* REQ path GIDs != the GRH's */
	RDMAGATE_MUX_DROP_UNKNOWN_ID = 6,   /* in: id never learned */
	RDMAGATE_MUX_DROP_SPOOF = 7,	    /* out: a GID not the worker's */
	RDMAGATE_MUX_DROP_ADDRESS = 8,	    /* out: not QP1 / GSI Q_Key */
	RDMAGATE_MUX_DROP_TABLE_FULL = 9,   /* out: no room for the id */
	RDMAGATE_MUX_DROP_WORKER_FULL = 10, /* in: its socket is full */
	RDMAGATE_MUX_DROP_WORKER_GONE = 11, /* its channel is closed */
	RDMAGATE_MUX_DROP_SEND_FAILED = 12, /* out: umad refused it */
};
#define RDMAGATE_MUX_DROP_MAX 12

/* mad_routed / mad_dropped direction. */
enum rdmagate_mux_dir {
	RDMAGATE_MUX_IN = 1,  /* from the wire (umad) to a worker */
	RDMAGATE_MUX_OUT = 2, /* from a worker to the wire */
};

/* worker_exit reasons. */
enum rdmagate_worker_exit {
	RDMAGATE_WORKER_EXITED = 1,   /* status: its exit status */
	RDMAGATE_WORKER_SIGNALED = 2, /* status: the signal */
	RDMAGATE_WORKER_KILLED = 3,   /* the broker ended it (VM gone) */
};

/* policy_refuse: what was refused. */
enum rdmagate_policy_what {
	RDMAGATE_POLICY_DEVICE = 1, /* a verbs device / port */
	RDMAGATE_POLICY_GID = 2,    /* a GID */
	RDMAGATE_POLICY_QUOTA = 3,  /* an object quota */
	RDMAGATE_POLICY_MAD = 4,    /* a MAD class */
	RDMAGATE_POLICY_VM = 5,	    /* the VM itself: not in the policy */
};

/* The probe list, as X(name): the semaphores and the tracer use it. */
#define RDMAGATE_PROBES(X)                                                     \
	X(kick)                                                                \
	X(ctrl_cmd)                                                            \
	X(wr_post)                                                             \
	X(wr_complete)                                                         \
	X(cq_overflow)                                                         \
	X(mad_send)                                                            \
	X(mad_recv)                                                            \
	X(mad_drop)                                                            \
	X(worker_spawn)                                                        \
	X(worker_exit)                                                         \
	X(gid_add)                                                             \
	X(gid_del)                                                             \
	X(policy_refuse)                                                       \
	X(mad_route)                                                           \
	X(mad_route_drop)                                                      \
	X(mad_routed)                                                          \
	X(mad_dropped)

#define RDMAGATE_SEMA_DECL_(n) extern unsigned short rdmagate_##n##_semaphore;
RDMAGATE_PROBES(RDMAGATE_SEMA_DECL_)
#undef RDMAGATE_SEMA_DECL_

#ifdef RDMAGATE_PROBES_DEFINE
#define RDMAGATE_SEMA_DEF_(n)                                                  \
	__attribute__((section(".probes"),                                     \
		       used)) unsigned short rdmagate_##n##_semaphore;
RDMAGATE_PROBES(RDMAGATE_SEMA_DEF_)
#undef RDMAGATE_SEMA_DEF_
const char *rdmagate_probe_vm = "";
#endif

#define RDMAGATE_PROBE_ON_(n)                                                  \
	__builtin_expect(                                                      \
		*(volatile unsigned short *)&rdmagate_##n##_semaphore, 0)

/* ---- worker ---- */

/* The guest kicked virtqueue `queue` (the worker read its kick fd). */
#define RDMAGATE_KICK_ENABLED()	 RDMAGATE_PROBE_ON_(kick)
#define RDMAGATE_KICK(vm, queue) STAP_PROBE2(rdmagate, kick, vm, queue)

/*
 * A control command ended: code (VIRTIO_RDMA_CMD_*, 0 when undecodable),
 * status (the virtio-rdma status byte sent back, 0 = success), duration_ns
 * (decode to reply, CLOCK_MONOTONIC; 0 when nobody was attached at start).
 */
#define RDMAGATE_CTRL_CMD_ENABLED() RDMAGATE_PROBE_ON_(ctrl_cmd)
#define RDMAGATE_CTRL_CMD(vm, code, status, duration_ns)                       \
	STAP_PROBE4(rdmagate, ctrl_cmd, vm, code, status, duration_ns)

/*
 * A work request was posted to the host: qpn (host QPN), opcode (the
 * enum virtio_rdma_wc_opcode its completion will carry: SEND, RDMA_WRITE,
 * RDMA_READ, COMP_SWAP, FETCH_ADD, RECV), wr_id (the HOST wr_id, unique
 * within the worker), bytes (sum of its SGE / inline lengths).
 */
#define RDMAGATE_WR_POST_ENABLED() RDMAGATE_PROBE_ON_(wr_post)
#define RDMAGATE_WR_POST(vm, qpn, opcode, wr_id, bytes)                        \
	STAP_PROBE5(rdmagate, wr_post, vm, qpn, opcode, wr_id, bytes)

/*
 * A work request ended and its element goes back to the guest: qpn,
 * wr_id (the host wr_id of wr_post), status (enum virtio_rdma_wc_status),
 * opcode (as at wr_post).  Also fired for elements refused before any host
 * post (status != 0, no wr_post before it).
 */
#define RDMAGATE_WR_COMPLETE_ENABLED() RDMAGATE_PROBE_ON_(wr_complete)
#define RDMAGATE_WR_COMPLETE(vm, qpn, wr_id, status, opcode)                   \
	STAP_PROBE5(rdmagate, wr_complete, vm, qpn, wr_id, status, opcode)

/* The guest's CQ cqn had no free CQE buffer: a completion was lost. */
#define RDMAGATE_CQ_OVERFLOW_ENABLED() RDMAGATE_PROBE_ON_(cq_overflow)
#define RDMAGATE_CQ_OVERFLOW(vm, cqn)                                          \
	STAP_PROBE2(rdmagate, cq_overflow, vm, cqn)

/* A MAD of `bytes` from the guest's QP qpn went to the MAD mux. */
#define RDMAGATE_MAD_SEND_ENABLED() RDMAGATE_PROBE_ON_(mad_send)
#define RDMAGATE_MAD_SEND(vm, qpn, bytes)                                      \
	STAP_PROBE3(rdmagate, mad_send, vm, qpn, bytes)

/* A MAD of `bytes` from the MAD mux was delivered to the guest's QP qpn. */
#define RDMAGATE_MAD_RECV_ENABLED() RDMAGATE_PROBE_ON_(mad_recv)
#define RDMAGATE_MAD_RECV(vm, qpn, bytes)                                      \
	STAP_PROBE3(rdmagate, mad_recv, vm, qpn, bytes)

/* The worker dropped a MAD of the guest: reason (enum rdmagate_mad_drop). */
#define RDMAGATE_MAD_DROP_ENABLED() RDMAGATE_PROBE_ON_(mad_drop)
#define RDMAGATE_MAD_DROP(vm, reason, bytes)                                   \
	STAP_PROBE3(rdmagate, mad_drop, vm, reason, bytes)

/* ---- broker (gid_add and gid_del wait for the broker's GID ownership) ---- */

/* The broker started the worker of VM vm as process pid. */
#define RDMAGATE_WORKER_SPAWN_ENABLED() RDMAGATE_PROBE_ON_(worker_spawn)
#define RDMAGATE_WORKER_SPAWN(vm, pid)                                         \
	STAP_PROBE2(rdmagate, worker_spawn, vm, pid)

/* The worker pid of vm ended: reason (enum rdmagate_worker_exit), status. */
#define RDMAGATE_WORKER_EXIT_ENABLED() RDMAGATE_PROBE_ON_(worker_exit)
#define RDMAGATE_WORKER_EXIT(vm, pid, reason, status)                          \
	STAP_PROBE4(rdmagate, worker_exit, vm, pid, reason, status)

/* GID table entry index of port added / removed for vm; gid: 16 bytes. */
#define RDMAGATE_GID_ADD_ENABLED() RDMAGATE_PROBE_ON_(gid_add)
#define RDMAGATE_GID_ADD(vm, port, index, gid)                                 \
	STAP_PROBE4(rdmagate, gid_add, vm, port, index, gid)
#define RDMAGATE_GID_DEL_ENABLED() RDMAGATE_PROBE_ON_(gid_del)
#define RDMAGATE_GID_DEL(vm, port, index, gid)                                 \
	STAP_PROBE4(rdmagate, gid_del, vm, port, index, gid)

/* The policy refused vm something: what (enum rdmagate_policy_what), why. */
#define RDMAGATE_POLICY_REFUSE_ENABLED() RDMAGATE_PROBE_ON_(policy_refuse)
#define RDMAGATE_POLICY_REFUSE(vm, what, why)                                  \
	STAP_PROBE3(rdmagate, policy_refuse, vm, what, why)

/* ---- MAD mux (defined; the mux does not exist yet) ---- */

/* A MAD of class mgmt_class, attribute attr_id was routed to VM vm. */
#define RDMAGATE_MAD_ROUTE_ENABLED() RDMAGATE_PROBE_ON_(mad_route)
#define RDMAGATE_MAD_ROUTE(vm, mgmt_class, attr_id)                            \
	STAP_PROBE3(rdmagate, mad_route, vm, mgmt_class, attr_id)

/* The mux dropped a MAD from or for vm: reason (enum rdmagate_mad_drop). */
#define RDMAGATE_MAD_ROUTE_DROP_ENABLED() RDMAGATE_PROBE_ON_(mad_route_drop)
#define RDMAGATE_MAD_ROUTE_DROP(vm, reason, mgmt_class)                        \
	STAP_PROBE3(rdmagate, mad_route_drop, vm, reason, mgmt_class)

/*
 * rdmagate-mux routed a MAD: worker_id (the broker's id of the worker,
 * vm its VM name), mgmt_class, attr_id (host order), direction (enum
 * rdmagate_mux_dir).
 */
#define RDMAGATE_MAD_ROUTED_ENABLED() RDMAGATE_PROBE_ON_(mad_routed)
#define RDMAGATE_MAD_ROUTED(vm, worker_id, mgmt_class, attr_id, direction)     \
	STAP_PROBE5(rdmagate, mad_routed, vm, worker_id, mgmt_class, attr_id,  \
		    direction)

/*
 * rdmagate-mux dropped a MAD: worker_id (0 and vm "" when no worker is
 * known: an incoming MAD for a GID nobody owns), reason (enum
 * rdmagate_mux_drop), attr_id (0 when the MAD was too short to have one),
 * direction.
 */
#define RDMAGATE_MAD_DROPPED_ENABLED() RDMAGATE_PROBE_ON_(mad_dropped)
#define RDMAGATE_MAD_DROPPED(vm, worker_id, reason, attr_id, direction)        \
	STAP_PROBE5(rdmagate, mad_dropped, vm, worker_id, reason, attr_id,     \
		    direction)

#endif
