// SPDX-License-Identifier: MIT
/*
 * The broker's worker table: one row per running VM (pid, ids, socket,
 * cgroup), id allocation from worker_ids, reaping with the reason of each
 * death, cleanup of the socket and cgroup, and STOP (SIGTERM, then SIGKILL
 * after a grace period).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "broker/broker.h"
#include "common/cleanup.h"
#include "common/log.h"
#include "common/probes.h"

struct worker *workers_find(struct broker *b, const char *vm)
{
	unsigned int i;

	for (i = 0; i < BROKER_MAX_WORKERS; i++)
		if (b->workers[i].used && !strcmp(b->workers[i].vm, vm))
			return &b->workers[i];
	return NULL;
}

struct worker *workers_find_pid(struct broker *b, pid_t pid)
{
	unsigned int i;

	for (i = 0; i < BROKER_MAX_WORKERS; i++)
		if (b->workers[i].used && b->workers[i].pid == pid)
			return &b->workers[i];
	return NULL;
}

struct worker *workers_add(struct broker *b)
{
	unsigned int i;

	for (i = 0; i < BROKER_MAX_WORKERS; i++)
		if (!b->workers[i].used) {
			memset(&b->workers[i], 0, sizeof(b->workers[i]));
			b->workers[i].used = true;
			b->workers[i].stop_conn = -1;
			b->workers[i].chan_fd = -1;
			b->workers[i].pidfd = -1;
			b->workers[i].mux_fd = -1;
			b->workers[i].sock_dfd = -1;
			b->workers[i].log_fd = -1;
			b->workers[i].rdmacm_fd = -1;
			b->workers[i].log_rl =
				(struct ratelimit)RATELIMIT_WINDOW(
					LOG_PEER_INTERVAL_MS, LOG_PEER_BURST);
			return &b->workers[i];
		}
	return NULL;
}

static void say_dropped(struct worker *w, uint64_t dropped)
{
	if (dropped)
		log_warnx("worker/%s: %llu lines dropped (more than %u per %u "
			  "ms caused by this worker)",
			  w->vm, (unsigned long long)dropped, w->log_rl.burst,
			  w->log_rl.period_ms);
}

void worker_logx(struct worker *w, enum log_level lvl, const char *fmt, ...)
{
	int saved = errno;
	uint64_t dropped;
	va_list ap;

	if (lvl > log_get_level() ||
	    !ratelimit_pass(&w->log_rl, mono_ms(), &dropped))
		return;
	say_dropped(w, dropped);
	va_start(ap, fmt);
	log_vemit(lvl, 0, fmt, ap);
	va_end(ap);
	errno = saved;
}

unsigned int workers_count(const struct broker *b)
{
	unsigned int i, n = 0;

	for (i = 0; i < BROKER_MAX_WORKERS; i++)
		n += b->workers[i].used;
	return n;
}

static bool uid_taken(struct broker *b, uint32_t id)
{
	unsigned int i;

	for (i = 0; i < BROKER_MAX_WORKERS; i++)
		if (b->workers[i].used &&
		    (b->workers[i].uid == id || b->workers[i].gid == id))
			return true;
	return false;
}

/* An id some VM of the policy has fixed: never handed to another VM. */
static bool id_reserved(const struct policy *p, uint32_t id, const char *vm)
{
	const struct policy_vm *v;
	size_t i;

	for (i = 0; (v = policy_vm_at(p, i)); i++)
		if (strcmp(v->name, vm) && ((v->has_uid && v->uid == id) ||
					    (v->has_gid && v->gid == id)))
			return true;
	return false;
}

int workers_pick_ids(struct broker *b, const struct policy_vm *vm,
		     uid_t *ret_uid, gid_t *ret_gid, struct reason *why)
{
	const struct policy_broker *pb = policy_broker(b->pol);
	uint64_t id;

	if (vm->has_uid) {
		if (uid_taken(b, vm->uid))
			return reason_fail(why, -EBUSY,
					   "uid %u of vm %s is in use by "
					   "another worker",
					   vm->uid, vm->name);
		*ret_uid = vm->uid;
		*ret_gid = vm->has_gid ? vm->gid : vm->uid;
		return 0;
	}
	for (id = pb->worker_id_first; id <= pb->worker_id_last; id++) {
		if (uid_taken(b, (uint32_t)id) ||
		    id_reserved(b->pol, (uint32_t)id, vm->name))
			continue;
		*ret_uid = (uid_t)id;
		*ret_gid = vm->has_gid ? vm->gid : (gid_t)id;
		return 0;
	}
	return reason_fail(why, -ENOSPC, "no free id in worker_ids %u-%u",
			   pb->worker_id_first, pb->worker_id_last);
}

/* "exited with status 1", "killed by SIGSYS (seccomp: ...)" */
static void describe(int status, char *buf, size_t len)
{
	if (WIFEXITED(status)) {
		snprintf(buf, len, "exited with status %d",
			 WEXITSTATUS(status));
	} else if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);

		snprintf(buf, len, "killed by SIG%s%s%s",
			 sigabbrev_np(sig) ? sigabbrev_np(sig) : "?",
			 sig == SIGSYS ? " (seccomp: forbidden system call)"
				       : "",
			 WCOREDUMP(status) ? ", core dumped" : "");
	} else {
		snprintf(buf, len, "ended with wait status 0x%x", status);
	}
}

void socket_unlink(struct worker *w)
{
	struct stat st;

	if (w->sock_dfd >= 0 &&
	    fstatat(w->sock_dfd, w->sock_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISSOCK(st.st_mode) &&
	    (!w->sock_ino || st.st_ino == w->sock_ino) &&
	    unlinkat(w->sock_dfd, w->sock_name, 0) < 0)
		log_warn("worker/%s: removing its socket %s", w->vm, w->socket);
	w->sock_dfd = safe_close(w->sock_dfd);
}

/*
 * Removes what the broker made for w: its addresses, its place in the mux,
 * its sockets, its cgroup, its state record.
 */
static void cleanup(struct broker *b, struct worker *w)
{
	channel_close(b, w);
	worker_log_close(b, w, true);
	if (w->pidfd >= 0) {
		epoll_ctl(b->ep, EPOLL_CTL_DEL, w->pidfd, NULL);
		w->pidfd = safe_close(w->pidfd);
	}
	gids_release_vm(b, w->vm);
	mux_link_worker_gone(b, w);
	if (w->rdmacm_fd >= 0)
		w->rdmacm_fd = safe_close(w->rdmacm_fd);
	socket_unlink(w);
	if (w->cgroup[0] && rmdir(w->cgroup) < 0 && errno != ENOENT)
		log_warn("worker/%s: removing its cgroup %s", w->vm, w->cgroup);
	state_remove(b, w);
}

void workers_forget(struct broker *b, struct worker *w)
{
	cleanup(b, w);
	say_dropped(w, w->log_rl.suppressed);
	w->used = false;
}

/*
 * worker_exit: KILLED (status: the wait status) when the broker had asked
 * it to stop (STOP, broker exit), else EXITED with its exit status or
 * SIGNALED with the signal.  w->vm lives in the worker table.
 */
static void probe_exit(const struct worker *w, int status)
{
	unsigned int reason;
	int st;

	if (w->state == BP_STATE_STOPPING) {
		reason = RDMAGATE_WORKER_KILLED;
		st = status;
	} else if (WIFSIGNALED(status)) {
		reason = RDMAGATE_WORKER_SIGNALED;
		st = WTERMSIG(status);
	} else {
		reason = RDMAGATE_WORKER_EXITED;
		st = WEXITSTATUS(status);
	}
	RDMAGATE_WORKER_EXIT(w->vm, w->pid, reason, st);
}

/* status < 0: an adopted worker, whose exit status went to its parent */
static void reaped(struct broker *b, struct worker *w, int status)
{
	struct bp_msg m;
	char why[128];

	if (status < 0)
		snprintf(why, sizeof(why),
			 "exited (re-adopted after a broker restart: its "
			 "status went to its parent)");
	else
		describe(status, why, sizeof(why));
	if (w->state == BP_STATE_STOPPING)
		log_info("worker/%s (pid %d) stopped: %s", w->vm, (int)w->pid,
			 why);
	else
		log_warnx("worker/%s (pid %d) %s", w->vm, (int)w->pid, why);
	probe_exit(w, status < 0 ? 0 : status);
	cleanup(b, w);
	log_info("worker/%s: removed its addresses, sockets%s; uid %u "
		 "released",
		 w->vm, w->cgroup[0] ? " and cgroup" : "",
		 (unsigned int)w->uid);
	if (w->stop_conn >= 0) {
		bp_init(&m, BP_STOP_REPLY);
		bp_set_status(&m.u.status, 0, "worker/%s (pid %d) %s", w->vm,
			      (int)w->pid, why);
		control_reply(b, w->stop_conn, &m);
	}
	w->used = false;
}

void workers_reap(struct broker *b)
{
	struct worker *w;
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		w = workers_find_pid(b, pid);
		if (w)
			reaped(b, w, status);
		else
			log_debug("reaped pid %d (not a worker)", (int)pid);
	}
}

/* An adopted worker's pidfd is readable: it has exited. */
void workers_pidfd(struct broker *b, unsigned int i)
{
	struct worker *w;

	if (i >= BROKER_MAX_WORKERS || !b->workers[i].used ||
	    b->workers[i].pidfd < 0)
		return;
	w = &b->workers[i];
	reaped(b, w, -1);
}

int workers_signal(struct worker *w, int sig)
{
	if (w->pidfd < 0)
		return -ESRCH;
	if (syscall(SYS_pidfd_send_signal, w->pidfd, sig, NULL, 0) < 0)
		return -errno;
	return 0;
}

int workers_stop(struct broker *b, struct worker *w, int conn)
{
	int ret;

	if (w->stop_conn >= 0)
		return -EALREADY;
	if (is_qemu_pvrdma(w)) {
		/* nothing runs: detached at once */
		log_info("vm %s: detached from the mux (QEMU pvrdma)", w->vm);
		workers_forget(b, w);
		return 1;
	}
	ret = workers_signal(w, SIGTERM);
	if (ret < 0)
		return ret;
	log_info("worker/%s (pid %d): SIGTERM sent", w->vm, (int)w->pid);
	w->state = BP_STATE_STOPPING;
	w->stop_conn = conn;
	w->kill_at = mono_ms() + BROKER_STOP_GRACE_MS;
	return 0;
}

/* A client went away: its pending STOP replies go nowhere. */
void workers_conn_gone(struct broker *b, int conn)
{
	unsigned int i;

	for (i = 0; i < BROKER_MAX_WORKERS; i++)
		if (b->workers[i].used && b->workers[i].stop_conn == conn)
			b->workers[i].stop_conn =
				-2; /* stopping, no one waits */
}

/* epoll_wait's timeout: until the next SIGKILL is due, or -1. */
int workers_timeout(struct broker *b)
{
	uint64_t now = mono_ms(), next = UINT64_MAX;
	unsigned int i;

	for (i = 0; i < BROKER_MAX_WORKERS; i++)
		if (b->workers[i].used &&
		    b->workers[i].state == BP_STATE_STOPPING &&
		    b->workers[i].kill_at < next)
			next = b->workers[i].kill_at;
	return timeout_until_ms(next, now);
}

void workers_kill_timed_out(struct broker *b)
{
	uint64_t now = mono_ms();
	struct worker *w;
	unsigned int i;

	for (i = 0; i < BROKER_MAX_WORKERS; i++) {
		w = &b->workers[i];
		if (!w->used || w->state != BP_STATE_STOPPING ||
		    w->kill_at > now)
			continue;
		log_warnx("worker/%s (pid %d) still runs %d ms after SIGTERM: "
			  "SIGKILL",
			  w->vm, (int)w->pid, BROKER_STOP_GRACE_MS);
		workers_signal(w, SIGKILL);
		w->kill_at = UINT64_MAX;
	}
}

/* Adopted workers that have ended (they are no child to wait for): their
 * pidfd is readable. */
static void reap_adopted(struct broker *b)
{
	unsigned int i;

	for (i = 0; i < BROKER_MAX_WORKERS; i++) {
		struct worker *w = &b->workers[i];

		if (w->used && w->adopted &&
		    (w->pidfd < 0 ||
		     poll(&(struct pollfd){ w->pidfd, POLLIN, 0 }, 1, 0) > 0))
			reaped(b, w, -1);
	}
}

/*
 * At broker exit: by default the workers keep serving (a new broker
 * re-adopts them from the state files); with --stop-workers-on-exit every
 * worker is stopped and waited for (bounded).
 */
void workers_stop_all(struct broker *b)
{
	uint64_t deadline = mono_ms() + BROKER_STOP_GRACE_MS;
	unsigned int i;

	/* a QEMU pvrdma VM has no process to keep serving and no record to
	 * re-adopt it by: its addresses and socket go with the broker */
	for (i = 0; i < BROKER_MAX_WORKERS; i++)
		if (b->workers[i].used && is_qemu_pvrdma(&b->workers[i])) {
			log_info("vm %s: detached (QEMU pvrdma): the broker "
				 "exits",
				 b->workers[i].vm);
			workers_forget(b, &b->workers[i]);
		}
	if (!b->stop_on_exit) {
		unsigned int n = workers_count(b);

		for (i = 0; i < BROKER_MAX_WORKERS; i++)
			if (b->workers[i].used) {
				channel_close(b, &b->workers[i]);
				worker_log_close(b, &b->workers[i], false);
			}
		if (n)
			log_info("%u workers keep running; the next broker "
				 "re-adopts them from %s/workers",
				 n, b->state_dir);
		return;
	}

	for (i = 0; i < BROKER_MAX_WORKERS; i++)
		if (b->workers[i].used) {
			b->workers[i].stop_conn = -2;
			b->workers[i].state = BP_STATE_STOPPING;
			workers_signal(&b->workers[i], SIGTERM);
		}
	while (workers_count(b) && mono_ms() < deadline) {
		workers_reap(b);
		reap_adopted(b);
		usleep(10000);
	}
	for (i = 0; i < BROKER_MAX_WORKERS; i++)
		if (b->workers[i].used)
			workers_signal(&b->workers[i], SIGKILL);
	usleep(10000);
	reap_adopted(b);
	while (workers_count(b)) {
		struct worker *w;
		int status;
		pid_t pid = waitpid(-1, &status, 0);

		if (pid < 0 && errno == EINTR)
			continue;
		if (pid < 0)
			break;
		w = workers_find_pid(b, pid);
		if (w)
			reaped(b, w, status);
	}
}

void workers_info(const struct worker *w, struct bp_worker_info *ret)
{
	memset(ret, 0, sizeof(*ret));
	memcpy(ret->vm, w->vm, sizeof(ret->vm));
	memcpy(ret->socket, w->socket, sizeof(ret->socket));
	memcpy(ret->device, w->device, sizeof(ret->device));
	ret->pid = (uint32_t)w->pid;
	ret->uid = w->uid;
	ret->gid = w->gid;
	ret->port = w->port;
	ret->state = w->state;
	ret->start_time = (uint64_t)w->start;
}
