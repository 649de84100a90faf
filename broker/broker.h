/* SPDX-License-Identifier: MIT */
/*
 * rdmagate-broker's shared state: its settings, the control connections
 * and the worker table, and the functions its files (broker.c, control.c,
 * spawn.c, workers.c, channel.c, gids.c, state.c, mux_link.c) offer each
 * other.  docs/broker.md describes the daemon.
 */
#ifndef RDMAGATE_BROKER_BROKER_H
#define RDMAGATE_BROKER_BROKER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "common/broker_proto.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/reason.h"
#include "common/worker_proto.h"
#include "broker/state_record.h"
#include "broker/wlog.h"
#include "policy/policy.h"

#define BROKER_MAX_CONNS 32
/* Connections only root may take: a control group that holds every other
 * slot does not lock root's hook out. */
#define BROKER_ROOT_SLOTS 4
/* A connection with no request, reply or wait in progress this long is
 * closed: held-open slots do not pile up. */
#define BROKER_CONN_IDLE_MS 10000
#define BROKER_MAX_WORKERS  1024
#define BROKER_CGROUP_MAX   STATE_CGROUP_MAX
/* A stopped worker gets SIGKILL if it has not exited after this long. */
#define BROKER_STOP_GRACE_MS 5000
/* Addresses (GIDs) one VM may hold at once, whatever its policy allows. */
#define BROKER_GIDS_PER_VM STATE_ADDRS_MAX
#define BROKER_MAX_GIDS	   4096
/* How long a new address may take to appear in the device's GID table. */
#define BROKER_GID_WAIT_MS 2000
/* How often the broker looks at the GID table meanwhile. */
#define BROKER_GID_POLL_MS 10
/* How long after a worker's channel closed the broker connects again. */
#define BROKER_CHANNEL_RETRY_MS 1000
/* How long STATS waits for the workers' counters. */
#define BROKER_STATS_WAIT_MS	 1000
#define BROKER_DEFAULT_STATE_DIR "/run/rdmagate"

struct conn {
	int fd;		    /* -1: free */
	struct msg_conn in; /* fd's peer (SO_PEERCRED) and phase */
	uid_t uid;
	gid_t gid;
	bool in_group; /* a member of control_group */
	pid_t pid;
	/* a STATS request waiting for the workers' counters */
	bool stats_busy;
	uint32_t stats_seq;
	uint64_t stats_deadline;
	char stats_vm[BP_VM_SIZE]; /* "" = every worker */
	/* replies the socket did not take yet (it is non-blocking): sent
	 * when it is writable, and no request is read meanwhile */
	struct bp_msg *out;
	unsigned int out_n, out_head, out_cap;
	uint64_t last_ms; /* its last request or reply */
};

struct worker {
	bool used;
	char vm[BP_VM_SIZE];
	char socket[BP_PATH_SIZE]; /* the whole path, for LIST and logs */
	/* the socket's directory (root's alone) and name in it: every
	 * operation on the socket goes through them */
	int sock_dfd;
	char sock_name[BP_PATH_SIZE];
	ino_t sock_ino;	   /* the socket made, or 0 (adopted) */
	uint32_t frontend; /* enum bp_frontend, never 0 */
	char device[BP_DEVICE_SIZE];
	char cgroup[BROKER_CGROUP_MAX]; /* "" when it has none */
	/* its SELinux MCS level: libvirt's (SPAWN) or its uid's, kept in
	 * its state record; "" for none (qemu-pvrdma) */
	char level[BP_LEVEL_SIZE];
	pid_t pid;
	uid_t uid;
	gid_t gid;
	uint32_t port;
	time_t start;
	enum bp_worker_state state;
	int stop_conn;	  /* the connection waiting for STOP's reply, or -1 */
	uint64_t kill_at; /* CLOCK_MONOTONIC ms of the SIGKILL, if stopping */
	/* the broker channel (common/worker_proto.h) */
	char chan_path[BP_PATH_SIZE]; /* its listening socket */
	int chan_fd;		      /* our connection, or -1 */
	struct msg_conn chan;	      /* chan_fd's peer and phase */
	bool hello;		      /* the worker greeted on it */
	uint64_t chan_retry_ms; /* when to connect again (0: no retry due) */
	uint64_t spawn_ms;	/* CLOCK_MONOTONIC ms of SPAWN */
	uint32_t seq;		/* of our requests */
	uint32_t stats_seq;	/* of the last counters received */
	struct wp_counters stats;
	/* re-adopted after a broker restart: not our child */
	bool adopted;
	/* every signal goes through it, never a raw pid; adopted workers'
	 * exit is watched on it */
	int pidfd;
	uint64_t pid_start; /* /proc/PID/stat starttime: PID reuse */
	/* the mux (broker/mux_link.c): the worker's end of its mux channel,
	 * held until the mux accepted the other end and the worker is up */
	int mux_fd;
	bool mux_ready; /* the mux accepted the other end */
	/* its log stream (broker/worker_log.c): the FIFO's reading end, or
	 * -1 (journald's, or none) */
	int log_fd;
	struct wlog wlog;
	char log_tag[BP_VM_SIZE + 16]; /* "worker/<vm>: " */
	uint32_t mux_gen; /* which worker the row holds, for queued requests */
	/* the broker's own lines this worker can cause (worker_logx()) */
	struct ratelimit log_rl;
	/* frontend qemu-pvrdma (broker/qemu_pvrdma.c): no process, only the
	 * listening socket its QEMU's mad-chardev connects to, which the mux
	 * serves (RDMACM_ATTACH, again at every replay); else -1 */
	int rdmacm_fd;
};

/* One address a VM owns on a device's netdev (hence its GIDs). */
struct gid_entry {
	bool used;
	bool pending; /* added, not yet in the GID table */
	/* its GID was listed once (granted): a later request for it that
	 * fails (the other GID type, which the port may never list) is
	 * refused and leaves the address, and the GIDs in use, alone */
	bool granted;
	char vm[BP_VM_SIZE];
	int family;
	uint8_t addr[16]; /* 4 bytes for AF_INET */
	char device[BP_DEVICE_SIZE];
	uint32_t port;
	int ifindex;
	/* the request being answered while pending */
	uint8_t gid[16];
	uint32_t gid_type;
	uint32_t req_seq;
	uint64_t deadline;
	/* the mux worker id the mux was told owns the GID (0: not told) */
	uint32_t mux_worker;
};

struct broker {
	/* settings */
	const char *policy_path;
	const char *worker_path;
	const char *control_opt; /* --control, or NULL */
	const char *cgroup_root;
	const char *state_dir; /* workers/<vm>.state and .channel */
	bool stop_on_exit;     /* --stop-workers-on-exit */
	/* state */
	struct policy *pol;
	char control_path[BP_PATH_SIZE];
	bool has_group;
	gid_t control_gid;
	bool cg_ok;		 /* cgroup_root is a cgroup2 mount */
	bool cg_rdma;		 /* and has the rdma controller */
	bool cg_memory, cg_pids; /* ... the memory and pids controllers */
	int ep, sfd, lfd;
	bool quit;
	struct conn conns[BROKER_MAX_CONNS];
	struct worker workers[BROKER_MAX_WORKERS];
	struct gid_entry gids[BROKER_MAX_GIDS];
	int nl; /* rtnetlink (struct mnl_socket *'s fd), for GIDs */
	void *mnl;
	uint32_t nl_seq;
	/* rtnetlink's address notifications (RTM_DELADDR), or NULL */
	void *mnl_watch;
	/* the mux (broker/mux_link.c) */
	const char *mux_path; /* --mux, or NULL: no mux */
	int mux_fd;	      /* the link, or -1 */
};

/* epoll tags: (tag << 32) | index */
enum {
	TAG_SIGNAL = 1,
	TAG_LISTEN,
	TAG_CONN,
	TAG_CHANNEL,
	TAG_PIDFD,
	TAG_MUX,
	TAG_WLOG,
	TAG_ADDRS, /* the address watch (broker/gids.c) */
};

/* control.c */
int control_open(struct broker *b);
void control_close(struct broker *b);
void control_apply_group(struct broker *b);
void control_accept(struct broker *b);
void control_event(struct broker *b, unsigned int i, uint32_t events);
/* epoll_wait's timeout for idle connections, and their closing. */
int control_timeout(struct broker *b);
void control_close_idle(struct broker *b);
void control_reply(struct broker *b, int conn, const struct bp_msg *m);
/* May caller c act for vm (SPAWN, STOP, STATS)?  Root, or the VM's QEMU
 * identity (vmm_uid, or a member of vmm_gid); vm NULL: root only. */
bool control_caller_owns(const struct conn *c, const struct policy_vm *vm);
/* Why c may not (for a refusal). */
void control_not_owner(const struct conn *c, const char *vm,
		       struct reason *why);
/* Loads the policy file again; the old policy stays if it is refused.
 * 0 or -errno, with why (NULL: the log only) saying what was loaded or
 * why not. */
int broker_reload(struct broker *b, struct reason *why);

/* spawn.c */
void cgroup_detect(struct broker *b);
/* The broker's socket_dir, made if missing; 0 or -errno (-EPERM: not
 * root's alone). */
int socket_dir_make(struct broker *b);
/* An O_PATH fd of the directory path if only root may change it, or
 * -errno (-EPERM: someone else may). */
int socket_dir_open(const char *path);
int spawn_worker(struct broker *b, const struct conn *c,
		 const struct bp_spawn *req, struct bp_spawn_reply *rep);

/* channel.c: the broker channel to each worker */
int channel_make(struct broker *b, struct worker *w, int *ret_lfd,
		 struct reason *why);
int channel_connect(struct broker *b, struct worker *w);
void channel_close(struct broker *b, struct worker *w);
void channel_read(struct broker *b, unsigned int i);
int channel_send(struct broker *b, struct worker *w, struct wp_msg *m);
/* A channel the worker closed is connected again, BROKER_CHANNEL_RETRY_MS
 * later (the loop's timeout, and the work when it is due). */
int channel_timeout(struct broker *b);
void channel_retry(struct broker *b);
void stats_start(struct broker *b, int conn, const char *vm);
void stats_check(struct broker *b);
int stats_timeout(struct broker *b);
void stats_conn_gone(struct broker *b, int conn);

/* gids.c: GID ownership */
int gids_open(struct broker *b);
void gids_close(struct broker *b);
void gids_add(struct broker *b, struct worker *w, const struct wp_gid *g);
void gids_del(struct broker *b, struct worker *w, const struct wp_gid *g);
/* Removes every address vm owns (its worker is gone). */
void gids_release_vm(struct broker *b, const char *vm);
void gids_poll(struct broker *b);
/*
 * The address watch is readable: a granted address that left the host
 * without the broker's doing is forgotten (the mux told, the state
 * record rewritten) and its worker gets WP_GID_GONE.
 */
void gids_watch_read(struct broker *b);
/* The broker's own grant of an address to w (a QEMU pvrdma VM: no worker
 * asks): admitted and added as a worker's GID_ADD is; the mux is told once
 * its RoCE v2 GID is listed.  0, or -errno and why. */
int gids_grant(struct broker *b, struct worker *w, int family,
	       const uint8_t addr[16], struct reason *why);
int gids_timeout(struct broker *b);
/* The VM that owns the address, or NULL. */
const struct gid_entry *gids_owner(const struct broker *b, int family,
				   const uint8_t addr[16]);
/* The host GID index of gid (type: enum wp_gid_type) on device/port, or
 * -ENOENT (not listed), -ENODEV. */
int gids_host_index(const char *device, uint32_t port, const uint8_t gid[16],
		    uint32_t type);
/* Removes an address rdmagate added that no VM may own any more
 * (re-adoption under a changed policy); never one a VM owns. */
void gids_drop(struct broker *b, int family, const uint8_t addr[16],
	       const char *device, uint32_t port);
/* Restores an owned address (re-adoption): re-adds it if it vanished. */
int gids_restore(struct broker *b, const char *vm, int family,
		 const uint8_t addr[16], const char *device, uint32_t port);

/*
 * mux_link.c: the link to rdmagate-mux (--mux): ports, workers and their
 * GIDs, replayed whenever the link comes up; never blocks the loop.
 */
int mux_link_open(struct broker *b);
void mux_link_close(struct broker *b);
void mux_link_read(struct broker *b);
int mux_link_timeout(struct broker *b);
void mux_link_tick(struct broker *b);
/* A new or re-adopted worker. */
void mux_link_worker_add(struct broker *b, struct worker *w);
/* The worker greeted on its broker channel: hand it its mux channel. */
void mux_link_worker_hello(struct broker *b, struct worker *w);
/* The worker is gone (before its row is freed). */
void mux_link_worker_gone(struct broker *b, struct worker *w);
/* An address's GID is in the device's table / is being removed. */
void mux_link_gid_ready(struct broker *b, struct gid_entry *e);
void mux_link_gid_gone(struct broker *b, struct gid_entry *e);

/*
 * qemu_pvrdma.c: a VM whose QEMU runs its own pvrdma device (frontend
 * qemu-pvrdma): SPAWN attaches it to the mux instead of spawning a worker,
 * STOP (or the broker's exit) detaches it.
 */
static inline bool is_qemu_pvrdma(const struct worker *w)
{
	return w->frontend == BP_FRONTEND_QEMU_PVRDMA;
}
/* After socket_make(): the mux, the ids, the granted addresses; lfd is the
 * VM's listening socket (kept by w on success).  0 or -errno and why. */
int qemu_pvrdma_attach(struct broker *b, struct worker *w,
		       const struct policy_vm *vm, const struct bp_spawn *req,
		       int lfd, struct reason *why);
/* Its reply to SPAWN. */
void qemu_pvrdma_attached(struct broker *b, struct worker *w,
			  struct bp_spawn_reply *rep);

/* worker_log.c: each worker's own log stream */
/* The fd the worker gets as stdout and stderr. */
int worker_log_open(struct broker *b, struct worker *w, int *ret_child_fd,
		    struct reason *why);
/* A re-adopted worker's FIFO, read again. */
void worker_log_adopt(struct broker *b, struct worker *w);
void worker_log_read(struct broker *b, unsigned int i);
/* Reads what is left and stops; remove: the FIFO too (the worker ended). */
void worker_log_close(struct broker *b, struct worker *w, bool remove);

/* state.c: what a restarted broker needs, under state_dir */
int state_init(struct broker *b);
void state_save(struct broker *b, const struct worker *w);
void state_remove(struct broker *b, const struct worker *w);
void state_adopt(struct broker *b);
uint64_t proc_start_time(pid_t pid);

/* workers.c */
struct worker *workers_find(struct broker *b, const char *vm);
struct worker *workers_find_pid(struct broker *b, pid_t pid);
struct worker *workers_add(struct broker *b);
/*
 * A broker line that w (a less-privileged peer) can cause, through w's own
 * limiter (LOG_PEER_BURST lines per LOG_PEER_INTERVAL_MS): a worker that
 * floods the broker with refused requests cannot push the broker's lines
 * about other VMs out of journald's rate limit.  What it drops is said on
 * w's next line that passes, and when w is gone (workers_forget()).
 */
void worker_logx(struct worker *w, enum log_level lvl, const char *fmt, ...)
	LOG_PRINTF(3, 4);
int workers_pick_ids(struct broker *b, const struct policy_vm *vm,
		     uid_t *ret_uid, gid_t *ret_gid, struct reason *why);
void workers_reap(struct broker *b);
void workers_pidfd(struct broker *b, unsigned int i);
/* Removes w's socket (by name in its directory, if it is the socket the
 * broker made) and closes the directory. */
void socket_unlink(struct worker *w);
/* Cleans up after a worker that is gone and frees its row. */
void workers_forget(struct broker *b, struct worker *w);
/* 0: SIGTERM sent (STOP is answered at the reap); 1: detached at once (a
 * QEMU pvrdma VM, no process); or -errno. */
int workers_stop(struct broker *b, struct worker *w, int conn);
/* Sends sig through w's pidfd: 0 or -errno (-ESRCH without one). */
int workers_signal(struct worker *w, int sig);
void workers_conn_gone(struct broker *b, int conn);
int workers_timeout(struct broker *b);
void workers_kill_timed_out(struct broker *b);
void workers_stop_all(struct broker *b);
unsigned int workers_count(const struct broker *b);
void workers_info(const struct worker *w, struct bp_worker_info *ret);

#endif
