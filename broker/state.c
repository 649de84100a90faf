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
#include "common/cleanup.h"
#include "common/log.h"

#define STATE_VERSION 1
#define STATE_MAX     8192 /* bytes */

static int state_path(const struct broker *b, const char *vm, const char *ext,
		      char *buf, size_t len)
{
	if ((size_t)snprintf(buf, len, "%s/workers/%s%s", b->state_dir, vm,
			     ext) >= len)
		return -ENAMETOOLONG;
	return 0;
}

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

void state_save(struct broker *b, const struct worker *w)
{
	char path[BP_PATH_SIZE + 16], tmp[BP_PATH_SIZE + 16];
	char txt[INET6_ADDRSTRLEN];
	unsigned int i;
	FILE *f;

	if (state_path(b, w->vm, ".state", path, sizeof(path)) < 0 ||
	    state_path(b, w->vm, ".state.new", tmp, sizeof(tmp)) < 0)
		return;
	f = fopen(tmp, "we");
	if (!f) {
		log_warn("worker/%s: writing %s", w->vm, tmp);
		return;
	}
	fprintf(f,
		"# rdmagate-broker's record of worker/%s, for a restarted "
		"broker\n"
		"version %d\nvm %s\npid %d\nstarttime %" PRIu64 "\n"
		"uid %u\ngid %u\ndevice %s\nport %u\nsocket %s\n"
		"cgroup %s\nstart %lld\nchannel %s\n",
		w->vm, STATE_VERSION, w->vm, (int)w->pid, w->pid_start,
		(unsigned int)w->uid, (unsigned int)w->gid, w->device, w->port,
		w->socket, w->cgroup[0] ? w->cgroup : "-", (long long)w->start,
		w->chan_path);
	for (i = 0; i < BROKER_MAX_GIDS; i++) {
		const struct gid_entry *e = &b->gids[i];

		if (!e->used || strcmp(e->vm, w->vm))
			continue;
		inet_ntop(e->family, e->addr, txt, sizeof(txt));
		fprintf(f, "addr %s\n", txt);
	}
	if (fflush(f) != 0 || fsync(fileno(f)) < 0) {
		log_warn("worker/%s: writing %s", w->vm, tmp);
		fclose(f);
		unlink(tmp);
		return;
	}
	fclose(f);
	if (rename(tmp, path) < 0)
		log_warn("worker/%s: renaming %s", w->vm, tmp);
}

void state_remove(struct broker *b, const struct worker *w)
{
	char path[BP_PATH_SIZE + 16];

	if (state_path(b, w->vm, ".state", path, sizeof(path)) == 0 &&
	    unlink(path) < 0 && errno != ENOENT)
		log_warn("worker/%s: removing %s", w->vm, path);
	if (w->chan_path[0] && unlink(w->chan_path) < 0 && errno != ENOENT)
		log_warn("worker/%s: removing %s", w->vm, w->chan_path);
}

/* ---- reading a record ----------------------------------------------------- */

struct record {
	struct worker w;
	int n_addr;
	int family[BROKER_GIDS_PER_VM];
	uint8_t addr[BROKER_GIDS_PER_VM][16];
};

static int field(const char *key, const char *val, struct record *r,
		 char *why, size_t len)
{
	struct worker *w = &r->w;
	unsigned long long v;
	char *end;

#define STR(k, dst)                                                            \
	if (!strcmp(key, k)) {                                                 \
		if (strlen(val) >= sizeof(dst))                                \
			goto bad;                                              \
		snprintf(dst, sizeof(dst), "%s", val);                         \
		return 0;                                                      \
	}
	STR("vm", w->vm);
	STR("device", w->device);
	STR("socket", w->socket);
	STR("channel", w->chan_path);
	if (!strcmp(key, "cgroup")) {
		if (strlen(val) >= sizeof(w->cgroup))
			goto bad;
		snprintf(w->cgroup, sizeof(w->cgroup), "%s",
			 strcmp(val, "-") ? val : "");
		return 0;
	}
#undef STR
	if (!strcmp(key, "addr")) {
		if (r->n_addr >= BROKER_GIDS_PER_VM)
			goto bad;
		if (inet_pton(AF_INET, val, r->addr[r->n_addr]) == 1)
			r->family[r->n_addr++] = AF_INET;
		else if (inet_pton(AF_INET6, val, r->addr[r->n_addr]) == 1)
			r->family[r->n_addr++] = AF_INET6;
		else
			goto bad;
		return 0;
	}
	errno = 0;
	v = strtoull(val, &end, 10);
	if (errno || *end || end == val)
		goto bad;
	if (!strcmp(key, "version") && v == STATE_VERSION)
		return 0;
	if (!strcmp(key, "pid") && v > 1 && v < (1u << 22)) {
		w->pid = (pid_t)v;
		return 0;
	}
	if (!strcmp(key, "starttime")) {
		w->pid_start = v;
		return 0;
	}
	if (!strcmp(key, "uid") && v < UINT32_MAX) {
		w->uid = (uid_t)v;
		return 0;
	}
	if (!strcmp(key, "gid") && v < UINT32_MAX) {
		w->gid = (gid_t)v;
		return 0;
	}
	if (!strcmp(key, "port") && v >= 1 && v <= 255) {
		w->port = (uint32_t)v;
		return 0;
	}
	if (!strcmp(key, "start")) {
		w->start = (time_t)v;
		return 0;
	}
bad:
	snprintf(why, len, "'%s %s' is not valid", key, val);
	return -EINVAL;
}

static int read_record(int dfd, const char *name, struct record *r, char *why,
		       size_t len)
{
	char buf[STATE_MAX + 1], *line, *save = NULL;
	_cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC |
							   O_NOFOLLOW);
	struct stat st;
	ssize_t n;

	memset(r, 0, sizeof(*r));
	if (fd < 0 || fstat(fd, &st) < 0) {
		snprintf(why, len, "%s", strerror(errno));
		return -errno;
	}
	if (!S_ISREG(st.st_mode) || st.st_uid != 0 || st.st_size > STATE_MAX) {
		snprintf(why, len, "not a root-owned file of at most %d bytes",
			 STATE_MAX);
		return -EINVAL;
	}
	n = read(fd, buf, STATE_MAX);
	if (n < 0) {
		snprintf(why, len, "%s", strerror(errno));
		return -errno;
	}
	buf[n] = '\0';
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *sp = strchr(line, ' ');

		if (line[0] == '#')
			continue;
		if (!sp) {
			snprintf(why, len, "line '%.40s' has no value", line);
			return -EINVAL;
		}
		*sp = '\0';
		if (field(line, sp + 1, r, why, len) < 0)
			return -EINVAL;
	}
	if (!r->w.vm[0] || !bp_vm_name_ok(r->w.vm) || !r->w.pid ||
	    !r->w.port || !r->w.socket[0] || !r->w.chan_path[0]) {
		snprintf(why, len, "incomplete");
		return -EINVAL;
	}
	return 0;
}

/* ---- adoption ----------------------------------------------------------------- */

static bool uid_of_pid(pid_t pid, uid_t uid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	return stat(path, &st) == 0 && st.st_uid == uid;
}

static void adopt(struct broker *b, struct record *r)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct worker *w;
	int pidfd, i, ret;

	if (workers_find(b, r->w.vm)) {
		log_warnx("state: vm %s has two records; ignoring one", r->w.vm);
		return;
	}
	w = workers_add(b);
	if (!w)
		return;
	memcpy(w->vm, r->w.vm, sizeof(w->vm));
	memcpy(w->socket, r->w.socket, sizeof(w->socket));
	memcpy(w->device, r->w.device, sizeof(w->device));
	memcpy(w->cgroup, r->w.cgroup, sizeof(w->cgroup));
	memcpy(w->chan_path, r->w.chan_path, sizeof(w->chan_path));
	w->pid = r->w.pid;
	w->pid_start = r->w.pid_start;
	w->uid = r->w.uid;
	w->gid = r->w.gid;
	w->port = r->w.port;
	w->start = r->w.start;
	w->state = BP_STATE_RUNNING;
	w->adopted = true;
	for (i = 0; i < r->n_addr; i++)
		gids_restore(b, w->vm, r->family[i], r->addr[i], w->device,
			     w->port);
	pidfd = (int)syscall(SYS_pidfd_open, w->pid, 0);
	/* a readable pidfd: it has exited (a zombie nobody reaped yet) */
	if (pidfd < 0 || poll(&(struct pollfd){ pidfd, POLLIN, 0 }, 1, 0) != 0 ||
	    proc_start_time(w->pid) != w->pid_start ||
	    !uid_of_pid(w->pid, w->uid)) {
		/* it ended while no broker ran (or its pid is someone
		 * else's now) */
		if (pidfd >= 0)
			close(pidfd);
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
	ret = channel_connect(b, w);
	if (ret < 0)
		log_warnx("worker/%s: reconnecting its channel %s: %s", w->vm,
			  w->chan_path, strerror(-ret));
	if (!policy_lookup_vm(b->pol, w->vm))
		log_warnx("worker/%s: no longer in the policy; it keeps "
			  "running until stopped",
			  w->vm);
	state_save(b, w);
	mux_worker_add(b, w);
	log_info("worker/%s (pid %d, uid %u) re-adopted with %d addresses",
		 w->vm, (int)w->pid, (unsigned int)w->uid, r->n_addr);
}

void state_adopt(struct broker *b)
{
	char path[BP_PATH_SIZE], why[160];
	_cleanup_close_ int dfd = -1;
	struct record r;
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "%s/workers", b->state_dir);
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return;
	d = fdopendir(dup(dfd));
	if (!d)
		return;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);

		if (n < 7 || strcmp(de->d_name + n - 6, ".state"))
			continue;
		if (read_record(dfd, de->d_name, &r, why, sizeof(why)) < 0) {
			log_warnx("state: %s/%s: %s; ignored", path,
				  de->d_name, why);
			continue;
		}
		adopt(b, &r);
	}
	closedir(d);
}
