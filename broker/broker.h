/* SPDX-License-Identifier: MIT */
/*
 * rdmagate-broker's shared state: its settings, the control connections
 * and the worker table, and the functions its files (broker.c, control.c,
 * spawn.c, workers.c) offer each other.  docs/broker.md describes the daemon.
 */
#ifndef RDMAGATE_BROKER_BROKER_H
#define RDMAGATE_BROKER_BROKER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "common/broker_proto.h"
#include "policy/policy.h"

#define BROKER_MAX_CONNS   32
#define BROKER_MAX_WORKERS 1024
#define BROKER_CGROUP_MAX  512
/* A stopped worker gets SIGKILL if it has not exited after this long. */
#define BROKER_STOP_GRACE_MS 5000

struct conn {
	int fd; /* -1: free */
	uid_t uid;
	gid_t gid;
	bool in_group; /* a member of control_group */
	pid_t pid;
};

struct worker {
	bool used;
	char vm[BP_VM_SIZE];
	char socket[BP_PATH_SIZE];
	char device[BP_DEVICE_SIZE];
	char cgroup[BROKER_CGROUP_MAX]; /* "" when it has none */
	pid_t pid;
	uid_t uid;
	gid_t gid;
	uint32_t port;
	time_t start;
	enum bp_worker_state state;
	int stop_conn;	  /* the connection waiting for STOP's reply, or -1 */
	uint64_t kill_at; /* CLOCK_MONOTONIC ms of the SIGKILL, if stopping */
};

struct broker {
	/* settings */
	const char *policy_path;
	const char *worker_path;
	const char *control_opt; /* --control, or NULL */
	const char *cgroup_root;
	/* state */
	struct policy *pol;
	char control_path[BP_PATH_SIZE];
	bool has_group;
	gid_t control_gid;
	bool cg_ok;   /* cgroup_root is a cgroup2 mount */
	bool cg_rdma; /* and has the rdma controller */
	int ep, sfd, lfd;
	bool quit;
	struct conn conns[BROKER_MAX_CONNS];
	struct worker workers[BROKER_MAX_WORKERS];
};

/* epoll tags */
enum { TAG_SIGNAL = 1, TAG_LISTEN, TAG_CONN };

/* control.c */
int control_open(struct broker *b);
void control_close(struct broker *b);
void control_apply_group(struct broker *b);
void control_accept(struct broker *b);
void control_read(struct broker *b, unsigned int i);
void control_reply(struct broker *b, int conn, const struct bp_msg *m);
int broker_reload(struct broker *b, char *why, size_t why_len);

/* spawn.c */
void cgroup_detect(struct broker *b);
int spawn_worker(struct broker *b, const struct conn *c,
		 const struct bp_spawn *req, struct bp_spawn_reply *rep);

/* workers.c */
struct worker *workers_find(struct broker *b, const char *vm);
struct worker *workers_find_pid(struct broker *b, pid_t pid);
struct worker *workers_add(struct broker *b);
int workers_pick_ids(struct broker *b, const struct policy_vm *vm,
		     uid_t *ret_uid, gid_t *ret_gid, char *why, size_t len);
void workers_reap(struct broker *b);
int workers_stop(struct broker *b, struct worker *w, int conn);
void workers_conn_gone(struct broker *b, int conn);
int workers_timeout(struct broker *b);
void workers_kill_timed_out(struct broker *b);
void workers_stop_all(struct broker *b);
unsigned int workers_count(const struct broker *b);
void workers_info(const struct worker *w, struct bp_worker_info *ret);
uint64_t now_ms(void);

#endif
