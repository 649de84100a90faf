// SPDX-License-Identifier: MIT
/*
 * What a restarted broker needs to take its running workers back
 * (re-adoption): one text file per worker, <state dir>/workers/<vm>.state
 * (default /run/rdmagate, which systemd keeps across restarts with
 * RuntimeDirectoryPreserve=yes), rewritten atomically whenever the worker's
 * addresses change.  At start the broker reads every file: a worker that
 * still runs (same pid, same start time, same uid) is adopted -- watched
 * through a pidfd, its channel reconnected, its addresses owned again -- and
 * one that died meanwhile is cleaned up (addresses, sockets, cgroup).
 * docs/broker.md ("Restarts") describes it.  The directory is root's
 * (0700); the files are still parsed strictly.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "broker/broker.h"
#include "broker/mcs_level.h"
#include "broker/state_record.h"
#include "common/cleanup.h"
#include "common/log.h"

int state_init(struct broker *b)
{
	char path[BP_PATH_SIZE];

	if (mkdir(b->state_dir, 0755) < 0 && errno != EEXIST) {
		log_warn("state directory %s", b->state_dir);
		return -errno;
	}
	snprintf(path, sizeof(path), "%s/workers", b->state_dir);
	if (mkdir(path, 0700) < 0 && errno != EEXIST) {
		log_warn("state directory %s", path);
		return -errno;
	}
	if (chmod(path, 0700) < 0)
		return -errno;
	return 0;
}

uint64_t proc_start_time(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long v = 0;
	_cleanup_close_ int fd = -1;
	ssize_t n;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* after the command name, which may hold spaces and parentheses */
	p = strrchr(buf, ')');
	if (!p)
		return 0;
	/* fields 3.. follow; starttime is field 22 */
	for (i = 3; i <= 22 && p; i++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &v) != 1)
		return 0;
	return v;
}

/* The record of w as broker/state_record.c writes it. */
static void to_record(const struct broker *b, const struct worker *w,
		      struct state_record *r)
{
	unsigned int i;

	memset(r, 0, sizeof(*r));
	memcpy(r->vm, w->vm, sizeof(r->vm));
	memcpy(r->socket, w->socket, sizeof(r->socket));
	memcpy(r->device, w->device, sizeof(r->device));
	memcpy(r->cgroup, w->cgroup, sizeof(r->cgroup));
	memcpy(r->channel, w->chan_path, sizeof(r->channel));
	r->pid = (int32_t)w->pid;
	r->pid_start = w->pid_start;
	r->uid = w->uid;
	r->gid = w->gid;
	r->port = w->port;
	r->start = (int64_t)w->start;
	r->frontend = w->frontend;
	memcpy(r->level, w->level, sizeof(r->level));
	for (i = 0; i < BROKER_MAX_GIDS && r->n_addrs < STATE_ADDRS_MAX; i++) {
		const struct gid_entry *e = &b->gids[i];

		if (!e->used || strcmp(e->vm, w->vm))
			continue;
		r->addrs[r->n_addrs].family = e->family;
		memcpy(r->addrs[r->n_addrs].addr, e->addr, 16);
		r->n_addrs++;
	}
}

static int workers_dir(const struct broker *b)
{
	char path[BP_PATH_SIZE];

	snprintf(path, sizeof(path), "%s/workers", b->state_dir);
	return open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

void state_save(struct broker *b, const struct worker *w)
{
	char name[BP_VM_SIZE + 16], tmp[BP_VM_SIZE + 16];
	char text[STATE_RECORD_MAX + 1];
	_cleanup_close_ int dfd = workers_dir(b);
	_cleanup_close_ int fd = -1;
	struct state_record r;
	int n, ret;

	if (is_qemu_pvrdma(w))
		return; /* nothing to re-adopt (broker/qemu_pvrdma.c) */
	snprintf(name, sizeof(name), "%s.state", w->vm);
	snprintf(tmp, sizeof(tmp), "%s.state.new", w->vm);
	to_record(b, w, &r);
	n = state_record_format(&r, text, sizeof(text));
	if (n < 0) {
		log_warnx("worker/%s: no state record: %s", w->vm,
			  strerror(-n));
		return;
	}
	if (dfd < 0) {
		log_warn("worker/%s: %s/workers", w->vm, b->state_dir);
		return;
	}
	fd = openat(dfd, tmp,
		    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		    0600);
	ret = fd < 0 ? -errno : write_all(fd, text, (size_t)n);
	if (ret == 0 && fsync(fd) < 0)
		ret = -errno;
	if (ret < 0) {
		log_warnx("worker/%s: writing %s: %s", w->vm, tmp,
			  strerror(-ret));
		unlinkat(dfd, tmp, 0);
		return;
	}
	if (renameat(dfd, tmp, dfd, name) < 0)
		log_warn("worker/%s: renaming %s", w->vm, tmp);
}

void state_remove(struct broker *b, const struct worker *w)
{
	char name[BP_VM_SIZE + 16];
	_cleanup_close_ int dfd = workers_dir(b);

	snprintf(name, sizeof(name), "%s.state", w->vm);
	if (dfd >= 0 && unlinkat(dfd, name, 0) < 0 && errno != ENOENT)
		log_warn("worker/%s: removing %s", w->vm, name);
	if (w->chan_path[0] && unlink(w->chan_path) < 0 && errno != ENOENT)
		log_warn("worker/%s: removing %s", w->vm, w->chan_path);
}

/* ---- reading a record -----------------------------------------------------
 */

static int read_record(int dfd, const char *name, struct state_record *r,
		       struct reason *why)
{
	char buf[STATE_RECORD_MAX + 1];
	_cleanup_close_ int fd = openat(
		dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat st;
	ssize_t n;

	if (fd < 0 || fstat(fd, &st) < 0)
		return reason_fail(why, -errno, "%s", strerror(errno));
	if (!S_ISREG(st.st_mode) || st.st_uid != 0 ||
	    st.st_size > STATE_RECORD_MAX)
		return reason_fail(why, -EINVAL,
				   "not a root-owned file of at most %d bytes",
				   STATE_RECORD_MAX);
	n = read(fd, buf, sizeof(buf));
	if (n < 0)
		return reason_fail(why, -errno, "%s", strerror(errno));
	return state_record_parse(buf, (size_t)n, r, why);
}

/* ---- adoption
 * ----------------------------------------------------------------- */

/*
 * A pidfd of the worker the record names, or -ESRCH: the pid is taken
 * through a pidfd first, then its start time and owner are read, then the
 * pidfd is checked again: if the process it names still runs, what was
 * read was its, not a later process's that reused the pid.
 */
static int worker_pidfd(const struct state_record *r)
{
	_cleanup_close_ int pidfd = (int)syscall(SYS_pidfd_open, r->pid, 0);
	char path[64];
	struct stat st;

	if (pidfd < 0)
		return -ESRCH;
	snprintf(path, sizeof(path), "/proc/%d", (int)r->pid);
	if (proc_start_time(r->pid) != r->pid_start || stat(path, &st) < 0 ||
	    st.st_uid != r->uid)
		return -ESRCH;
	/* readable: it has exited (a zombie nobody reaped yet) */
	if (poll(&(struct pollfd){ pidfd, POLLIN, 0 }, 1, 0) != 0)
		return -ESRCH;
	return TAKE_FD(pidfd);
}

/* The paths a record may name: the ones this broker makes for its vm. */
static bool paths_ours(const struct broker *b, const struct state_record *r)
{
	char chan[BP_PATH_SIZE + 32];
	size_t root = strlen(b->cgroup_root), vm = strlen(r->vm);
	size_t cg = strlen(r->cgroup);

	snprintf(chan, sizeof(chan), "%s/workers/%s.channel", b->state_dir,
		 r->vm);
	if (strcmp(chan, r->channel))
		return false;
	/* <root><cgroup_parent>/<vm>: the parent may have changed since */
	if (r->cgroup[0] &&
	    (cg <= root + vm + 1 || strncmp(r->cgroup, b->cgroup_root, root) ||
	     r->cgroup[root] != '/' || strstr(r->cgroup, "/../") ||
	     r->cgroup[cg - vm - 1] != '/' ||
	     strcmp(r->cgroup + cg - vm, r->vm)))
		return false;
	return true;
}

/* The addresses the current policy still lets r's vm claim: owned again;
 * the others are removed from the host. */
static unsigned int restore_addrs(struct broker *b,
				  const struct state_record *r)
{
	unsigned int i, n = 0;

	for (i = 0; i < r->n_addrs; i++) {
		int fam = r->addrs[i].family;
		const uint8_t *a = r->addrs[i].addr;
		char txt[INET6_ADDRSTRLEN] = "?";

		if (policy_vm_may_claim(b->pol, r->vm, fam, a)) {
			n += gids_restore(b, r->vm, fam, a, r->device,
					  r->port) == 0;
			continue;
		}
		inet_ntop(fam, a, txt, sizeof(txt));
		log_warnx("worker/%s: the policy no longer lets it claim %s: "
			  "not owned again, removed",
			  r->vm, txt);
		gids_drop(b, fam, a, r->device, r->port);
	}
	return n;
}

/* The socket's directory again, if only root may change it (else the
 * broker never touches the socket: it may not be the one it made). */
static void adopt_socket(struct worker *w)
{
	char dir[BP_PATH_SIZE];
	const char *slash = strrchr(w->socket, '/');

	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - w->socket), w->socket);
	snprintf(w->sock_name, sizeof(w->sock_name), "%s", slash + 1);
	w->sock_dfd = socket_dir_open(dir[0] ? dir : "/");
	if (w->sock_dfd < 0)
		log_warnx("worker/%s: the directory of %s is not root's alone: "
			  "its socket is left there at its end",
			  w->vm, w->socket);
}

/*
 * The level of a worker whose record has none (a version 2 record, from a
 * broker before levels were kept): the one its process runs at, from its
 * SELinux context (user:role:type:level), else its uid's, as a spawn
 * without libvirt's level gives.  The level is what keeps two VMs' workers
 * apart (broker/spawn.c pick_level), so an adopted worker must have its
 * own, not "".
 */
static void adopted_level(struct worker *w, const struct state_record *r)
{
	char path[64], ctx[256], *p = ctx;
	_cleanup_close_ int fd = -1;
	ssize_t n = -1;
	int i;

	if (r->level[0]) {
		memcpy(w->level, r->level, sizeof(w->level));
		return;
	}
	snprintf(path, sizeof(path), "/proc/%d/attr/current", (int)r->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		n = read(fd, ctx, sizeof(ctx) - 1);
	ctx[n > 0 ? n : 0] = '\0';
	ctx[strcspn(ctx, "\n")] = '\0';
	for (i = 0; i < 3 && p; i++) {
		p = strchr(p, ':');
		p = p ? p + 1 : NULL;
	}
	if (p && bp_mcs_level_check(p, NULL, NULL, NULL) == 0) {
		snprintf(w->level, sizeof(w->level), "%s", p);
		return;
	}
	mcs_level(w->uid, w->level, sizeof(w->level));
	log_warnx("worker/%s: its record has no SELinux level and its "
		  "process shows none; taking its uid's, %s",
		  w->vm, w->level);
}

static void adopt(struct broker *b, const struct state_record *r)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct worker *w;
	unsigned int n_addrs;
	int pidfd, ret;

	if (workers_find(b, r->vm)) {
		log_warnx("state: vm %s has two records; ignoring one", r->vm);
		return;
	}
	if (!paths_ours(b, r)) {
		log_warnx("state: vm %s: its record names a channel or cgroup "
			  "this broker does not make; ignored",
			  r->vm);
		return;
	}
	w = workers_add(b);
	if (!w)
		return;
	memcpy(w->vm, r->vm, sizeof(w->vm));
	memcpy(w->socket, r->socket, sizeof(w->socket));
	memcpy(w->device, r->device, sizeof(w->device));
	memcpy(w->cgroup, r->cgroup, sizeof(w->cgroup));
	memcpy(w->chan_path, r->channel, sizeof(w->chan_path));
	w->pid = r->pid;
	w->pid_start = r->pid_start;
	w->uid = r->uid;
	w->gid = r->gid;
	w->port = r->port;
	w->start = (time_t)r->start;
	w->state = BP_STATE_RUNNING;
	w->adopted = true;
	/* a version 2 record has none: a worker's, never QEMU's pvrdma */
	w->frontend = r->frontend ? r->frontend : BP_FRONTEND_VIRTIO_RDMA;
	adopted_level(w, r);
	adopt_socket(w);
	n_addrs = restore_addrs(b, r);
	pidfd = worker_pidfd(r);
	if (pidfd < 0) {
		/* it ended while no broker ran (or its pid is someone
		 * else's now): never signalled, only cleaned up after */
		log_warnx("worker/%s (pid %d) ended while no broker was "
			  "running; cleaning up after it",
			  w->vm, (int)w->pid);
		workers_forget(b, w);
		return;
	}
	w->pidfd = pidfd;
	ev.data.u64 = ((uint64_t)TAG_PIDFD << 32) | (uint32_t)(w - b->workers);
	if (epoll_ctl(b->ep, EPOLL_CTL_ADD, pidfd, &ev) < 0)
		log_warn("worker/%s: watching its pidfd", w->vm);
	worker_log_adopt(b, w);
	ret = channel_connect(b, w);
	if (ret < 0)
		log_warnx("worker/%s: reconnecting its channel %s: %s", w->vm,
			  w->chan_path, strerror(-ret));
	if (!policy_lookup_vm(b->pol, w->vm))
		log_warnx("worker/%s: no longer in the policy; it keeps "
			  "running until stopped",
			  w->vm);
	state_save(b, w);
	mux_link_worker_add(b, w);
	log_info("worker/%s (pid %d, uid %u) re-adopted with %u addresses",
		 w->vm, (int)w->pid, (unsigned int)w->uid, n_addrs);
}

void state_adopt(struct broker *b)
{
	char path[BP_PATH_SIZE];
	_cleanup_close_ int dfd = -1;
	struct state_record r;
	struct reason why;
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "%s/workers", b->state_dir);
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return;
	d = fdopendir(dup(dfd));
	if (!d)
		return;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);

		if (n < 7 || strcmp(de->d_name + n - 6, ".state"))
			continue;
		if (read_record(dfd, de->d_name, &r, &why) < 0) {
			log_warnx("state: %s/%s: %s; ignored", path, de->d_name,
				  why.msg);
			continue;
		}
		if (strlen(r.vm) != n - 6 || strncmp(de->d_name, r.vm, n - 6)) {
			log_warnx("state: %s/%s: the record is vm %s's; "
				  "ignored",
				  path, de->d_name, r.vm);
			continue;
		}
		adopt(b, &r);
	}
	closedir(d);
}
