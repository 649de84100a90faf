/* SPDX-License-Identifier: MIT */
/*
 * rdmagate-mux's process state, shared by its files: main.c (options,
 * set-up, the loop), ports.c (umad ports), workers.c (the workers'
 * channels, outcomes), broker_link.c (the broker's control socket),
 * farewell.c and rdmacm.c (the rdmacm-mux endpoint for QEMU's pvrdma).
 * Not a library: one process, one thread.
 */
#ifndef RDMAGATE_MUX_MUX_H
#define RDMAGATE_MUX_MUX_H

#include <infiniband/umad.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/mux_proto.h"
#include "common/ratelimit.h"
#include "mux/router.h"

struct rdmacm_vm;

/* Exit statuses besides 0 (SIGTERM), 1 (an error), 2 (usage). */
#define EXIT_CM_TAKEN 3 /* the kernel's ib_cm owns the CM class */

#define MAX_PORTS   32
#define MAX_WORKERS 1024
/* Per wakeup, so that one busy source cannot starve the others. */
#define BATCH 64
/*
 * A worker's channel queues at most this much in the kernel (the mux's
 * SO_SNDBUF on its end): a worker that stops reading loses its own MADs
 * once it is full, and the mux never waits for it.
 */
#define WORKER_SNDBUF (64 * 1024)
/* Refusal and drop lines: at most LOG_BURST per LOG_WINDOW_MS per worker. */
#define LOG_BURST     10
#define LOG_WINDOW_MS 10000

enum tag {
	TAG_LISTEN = 1,
	TAG_BROKER,
	TAG_SIGNAL,
	TAG_TIMER,
	TAG_PORT,	   /* + index << 8 */
	TAG_WORKER,	   /* + index << 8 */
	TAG_RDMACM_LISTEN, /* + worker index << 8 */
	TAG_RDMACM_CLIENT, /* + worker index << 8 */
};

/* What the kernel holds at a GID index (sysfs), re-read at most every
 * GID_CACHE_MS: umad reports the index a MAD was received on, the router
 * decides by the full GID. */
#define GID_CACHE_MS 1000
struct gid_cache {
	uint8_t gid[16];
	uint64_t read_ms;
	bool valid;
};

struct port {
	bool used;
	char device[MP_DEVICE_SIZE];
	uint32_t num;
	int fd;
	int agent;
	int router_id;
	struct gid_cache idx[MP_GID_INDEX_MAX + 1];
};

struct worker {
	bool used;
	uint32_t id;
	char vm[MP_VM_SIZE];
	int fd;		      /* -1 once its channel closed */
	struct msg_conn conn; /* fd's peer: MAD_SEND only */
	struct ratelimit rl;
	struct rdmacm_vm *rdmacm; /* a QEMU pvrdma VM, not a worker */
};

struct mux {
	const char *control_path;
	const char *user;
	bool verbose;
	struct router_config rc;
	struct router *r;
	int ep, lfd, bfd, sfd, tfd;
	struct msg_conn bconn; /* bfd's peer (the broker) and phase */
	struct port ports[MAX_PORTS];
	struct worker workers[MAX_WORKERS];
	struct ratelimit rl_none; /* drops no worker can be blamed for */
	bool quit;
};

/* ---- mux/ports.c: umad ports, the wire's side ---- */

/*
 * Opens umad on device/port and registers the CM class (0x07 v2, method
 * Send: the only method CM uses).  Returns 0, -EBUSY when the kernel's
 * ib_cm holds the class (the caller says so with port_cm_taken()), or
 * -errno with why.
 */
int port_open(struct mux *m, const char *device, uint32_t num,
	      struct reason *why);
/* The one line when the kernel's CM holds the class; exits. */
void port_cm_taken(const char *device, uint32_t port) __attribute__((noreturn));
/* MADs from the wire on p: to the worker the router names. */
void port_readable(struct mux *m, struct port *p);
/* The GID the kernel holds at index of device/port, from sysfs. */
int port_sysfs_gid(const char *device, uint32_t port, uint32_t index,
		   uint8_t gid[16]);

/* ---- mux/workers.c: workers, outcomes ---- */

struct worker *worker_by_id(struct mux *m, uint32_t id);
/*
 * The worker attached as id for vm (1: a replay), or a new one in the
 * router and a free slot (0; fd -1, no rdmacm); -EEXIST when id is
 * attached for another vm or as the other kind (a worker, or with rdmacm
 * a QEMU pvrdma VM), -ENOSPC; why says which.
 */
int worker_claim(struct mux *m, uint32_t id, const char *vm, bool rdmacm,
		 struct worker **ret, struct reason *why);
/* Counts, fires the probes and logs (rate-limited) a MAD's outcome. */
void outcome(struct mux *m, const struct router_verdict *v);
/* Says, once a window is over, what it suppressed (the timer's tick). */
void ratelimits_flush(struct mux *m);
/* w's channel is readable: its MAD_SENDs, or its close. */
void worker_readable(struct mux *m, struct worker *w);
/* WORKER_ATTACH: takes *fd (the mux's end of the channel) on success. */
int worker_attach(struct mux *m, const struct mp_worker_attach *a, int *fd,
		  struct reason *why);
/* WORKER_DETACH (a worker or a QEMU pvrdma VM). */
int worker_detach(struct mux *m, uint32_t id, struct reason *why);
/* Sends s on the port and from the GID index the router chose (v);
 * v->reason becomes SEND_FAILED when umad refuses. */
void send_out(struct mux *m, struct router_verdict *v,
	      const struct mp_mad_send *s);
/* ---- mux/broker_link.c: the broker's control socket ---- */

/* Binds and listens on m->control_path (root only); exits on failure. */
int control_open(struct mux *m);
/* A broker connects: root only; it replaces the old connection. */
void broker_accept(struct mux *m);
/* A request from the broker, answered at once. */
void broker_readable(struct mux *m);

/* ---- mux/farewell.c ---- */

/* Sends a DREQ (or REJ) for each live connection of w, which died (its
 * channel closed): router_farewell(). */
void worker_farewell(struct mux *m, struct worker *w);

int ep_add(struct mux *m, int fd, uint64_t tag);
/* Changes what fd is polled for (EPOLLIN, EPOLLOUT). */
int ep_mod(struct mux *m, int fd, uint64_t tag, uint32_t events);
void ep_del_close(struct mux *m, int *fd);

/* ---- mux/rdmacm.c: the rdmacm-mux endpoint ---- */

/* RDMACM_ATTACH: takes *fd (the listening socket) on success. */
int rdmacm_attach(struct mux *m, const struct mp_rdmacm_attach *a, int *fd,
		  struct reason *why);
/* Closes the VM's sockets and frees its state (WORKER_DETACH, exit). */
void rdmacm_release(struct mux *m, struct worker *w);
void rdmacm_on_listen(struct mux *m, struct worker *w);
void rdmacm_on_client(struct mux *m, struct worker *w, uint32_t events);
/* A MAD from the wire the router gave w (a QEMU VM): as deliver(). */
void rdmacm_deliver(struct mux *m, struct worker *w, struct router_verdict *v,
		    const ib_mad_addr_t *a, const uint8_t *dgid,
		    const uint8_t *mad, size_t len);

#endif
