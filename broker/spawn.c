// SPDX-License-Identifier: MIT
/*
 * Spawning a worker: the VM's listening socket (made by the broker in a
 * directory only root changes, owned by the VM's QEMU identity), the VM's
 * cgroup with rdma.max, memory.max and pids.max from the quotas, then fork
 * and, in the child, in this order: join the cgroup, RLIMIT_MEMLOCK and
 * RLIMIT_CORE 0 (a core would hold guest memory), its nice value (the
 * policy's worker_nice), the fds it inherits and no others, the privilege
 * drop, execve of rdmagate-worker.
 * docs/broker.md explains the order.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "broker/broker.h"
#include "broker/mcs_level.h"
#include "common/cleanup.h"
#include "common/log.h"
#include "common/privdrop.h"
#include "common/unix_socket.h"
#include "common/probes.h"
#include "config.h"

/* The fd numbers the worker inherits. */
#define CHILD_VU_FD	3
#define CHILD_ERR_FD	4
#define CHILD_BROKER_FD 5

/* hca_object beyond the object quotas: the worker's verbs async-event
 * file and a completion channel per connection are objects too. */
#define RDMA_OBJECT_MARGIN 2
/* The worker's options take limits up to this (worker/main.c). */
#define WORKER_LIMIT_MAX (1u << 20)

struct spawn_err {
	struct reason why;
	/* enum rdmagate_policy_what when the policy refused; 0 otherwise */
	unsigned int refuse;
};

/* ---- cgroups ----------------------------------------------------------- */

static int write_file(const char *path, const char *text)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
	size_t len = strlen(text);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, text, len);
	if (n != (ssize_t)len)
		return n < 0 ? -errno : -EIO;
	return 0;
}

static bool has_word(const char *path, const char *word)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	char buf[512], *tok, *save = NULL;
	ssize_t n;

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	for (tok = strtok_r(buf, " \n", &save); tok;
	     tok = strtok_r(NULL, " \n", &save))
		if (!strcmp(tok, word))
			return true;
	return false;
}

void cgroup_detect(struct broker *b)
{
	char path[PATH_MAX];
	struct statfs sf;

	b->cg_ok = statfs(b->cgroup_root, &sf) == 0 &&
		   sf.f_type == CGROUP2_SUPER_MAGIC;
	snprintf(path, sizeof(path), "%s/cgroup.controllers", b->cgroup_root);
	b->cg_rdma = b->cg_ok && has_word(path, "rdma");
	b->cg_memory = b->cg_ok && has_word(path, "memory");
	b->cg_pids = b->cg_ok && has_word(path, "pids");
	if (b->cg_ok && (!b->cg_memory || !b->cg_pids))
		log_warnx("no %s controller in %s: the workers' max_memory "
			  "and max_pids cannot be enforced on this host",
			  !b->cg_memory ? "memory" : "pids", b->cgroup_root);
	if (!b->cg_ok)
		log_warnx("%s is not a cgroup2 mount: workers get no cgroup of "
			  "their own and rdma quotas cannot be enforced on "
			  "this host (see --cgroup-root)",
			  b->cgroup_root);
	else if (!b->cg_rdma)
		log_warnx("no rdma controller in %s: rdma quotas cannot be "
			  "enforced on this host (workers still get their own "
			  "cgroup)",
			  b->cgroup_root);
	else
		log_info("cgroup2 at %s with the rdma controller",
			 b->cgroup_root);
}

/* The controllers a VM's cgroup gets, those the host has. */
static int enable_controllers(struct broker *b, const char *dir,
			      struct spawn_err *e)
{
	const struct {
		bool on;
		const char *add;
	} c[] = {
		{ b->cg_rdma, "+rdma" },
		{ b->cg_memory, "+memory" },
		{ b->cg_pids, "+pids" },
	};
	char ctl[BROKER_CGROUP_MAX + 32];
	unsigned int i;
	int ret;

	snprintf(ctl, sizeof(ctl), "%s/cgroup.subtree_control", dir);
	for (i = 0; i < ARRAY_SIZE(c); i++) {
		if (!c[i].on)
			continue;
		ret = write_file(ctl, c[i].add);
		if (ret < 0) {
			reason_set(&e->why, "enabling %s in %s: %s",
				   c[i].add + 1, ctl, strerror(-ret));
			return ret;
		}
	}
	return 0;
}

/* Creates every level of dir below the root; the controllers in each
 * parent. */
static int cgroup_make(struct broker *b, const char *leaf, struct spawn_err *e)
{
	size_t rootlen = strlen(b->cgroup_root);
	char path[BROKER_CGROUP_MAX];
	char *slash;
	int ret;

	snprintf(path, sizeof(path), "%s", leaf);
	slash = path + rootlen;
	for (;;) {
		*slash = '\0';
		ret = enable_controllers(b, path, e);
		*slash = '/';
		if (ret < 0)
			return ret;
		slash = strchr(slash + 1, '/');
		if (slash)
			*slash = '\0';
		if (mkdir(path, 0755) < 0 && errno != EEXIST) {
			ret = -errno;
			reason_set(&e->why, "creating cgroup %s: %s", path,
				   strerror(errno));
			return ret;
		}
		if (!slash)
			return 0;
		*slash = '/';
	}
}

static int cgroup_set_rdma(const char *leaf, const char *device,
			   const struct policy_quota *q, struct spawn_err *e)
{
	uint64_t objs = (uint64_t)q->max_pd + q->max_cq + q->max_qp +
			q->max_mr + q->max_srq + q->max_ah + RDMA_OBJECT_MARGIN;
	char path[BROKER_CGROUP_MAX + 16], line[160];
	int ret;

	snprintf(path, sizeof(path), "%s/rdma.max", leaf);
	snprintf(line, sizeof(line), "%s hca_handle=1 hca_object=%llu", device,
		 (unsigned long long)objs);
	ret = write_file(path, line);
	if (ret < 0) {
		reason_set(&e->why, "writing '%s' to %s: %s", line, path,
			   strerror(-ret));
		return ret;
	}
	log_info("cgroup %s: rdma.max '%s'", leaf, line);
	return 0;
}

/* memory.max and pids.max from the policy: a worker that leaks or is
 * taken over cannot eat the host's memory or fork-bomb it. */
static int cgroup_set_limits(struct broker *b, const char *leaf,
			     const struct policy_quota *q, struct spawn_err *e)
{
	const struct {
		bool on;
		const char *file;
		uint64_t v;
	} lim[] = {
		{ b->cg_memory, "memory.max", q->max_memory },
		{ b->cg_pids, "pids.max", q->max_pids },
	};
	char path[BROKER_CGROUP_MAX + 16], val[24];
	unsigned int i;
	int ret;

	for (i = 0; i < ARRAY_SIZE(lim); i++) {
		if (!lim[i].on)
			continue;
		snprintf(path, sizeof(path), "%s/%s", leaf, lim[i].file);
		snprintf(val, sizeof(val), "%llu",
			 (unsigned long long)lim[i].v);
		ret = write_file(path, val);
		if (ret < 0) {
			reason_set(&e->why, "writing %s to %s: %s", val, path,
				   strerror(-ret));
			return ret;
		}
	}
	return 0;
}

/* The VM's cgroup <root><cgroup_parent>/<vm>, or "" without cgroup2. */
static int cgroup_setup(struct broker *b, struct worker *w, bool test_dev,
			const struct policy_vm *vm, struct spawn_err *e)
{
	const struct policy_quota *q = &vm->quota;
	/* the policy's device for the test device */
	const char *dev = test_dev ? vm->device : w->device;
	const char *parent = policy_broker(b->pol)->cgroup_parent;
	int ret;

	w->cgroup[0] = '\0';
	if (!b->cg_ok)
		return 0;
	if ((size_t)snprintf(w->cgroup, sizeof(w->cgroup), "%s%s/%s",
			     b->cgroup_root, parent,
			     w->vm) >= sizeof(w->cgroup)) {
		w->cgroup[0] = '\0';
		return reason_fail(&e->why, -ENAMETOOLONG,
				   "cgroup path too long");
	}
	ret = cgroup_make(b, w->cgroup, e);
	if (ret == 0)
		ret = cgroup_set_limits(b, w->cgroup, q, e);
	if (ret == 0 && b->cg_rdma) {
		ret = cgroup_set_rdma(w->cgroup, dev, q, e);
		/* the echo test device opens no RDMA device: its limit (set
		 * for the tests) may name a device this host lacks */
		if (ret < 0 && test_dev) {
			log_warnx("worker/%s (test device): %s", w->vm,
				  e->why.msg);
			e->why.msg[0] = '\0';
			ret = 0;
		}
	}
	if (ret < 0) {
		rmdir(w->cgroup);
		w->cgroup[0] = '\0';
	}
	return ret;
}

/* ---- the vhost-user socket -------------------------------------------- */

/* bind+listen on name inside the cwd (the socket's directory), with the
 * mode it keeps (0600, or 0660 for a VM with a QEMU group). */
static int bind_in(const char *name, mode_t mode, int *ret_fd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;
	mode_t old;
	int ret = 0;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", name);
	old = umask(~mode & 0777);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 1) < 0)
		ret = -errno;
	umask(old);
	if (ret == 0)
		*ret_fd = TAKE_FD(fd);
	return ret;
}

/*
 * Under SELinux with MCS, the socket file name (in the cwd) takes its
 * worker's level: a QEMU at other categories (svirt_t is MCS-constrained)
 * cannot connect to it. No security.selinux attribute (SELinux off) or no
 * level in it (no MCS): nothing to do.
 */
static int socket_label(const char *name, const char *level,
			struct spawn_err *e)
{
	char cur[256], next[256 + MCS_LEVEL_SIZE], *p = cur;
	ssize_t n;
	int i;

	n = lgetxattr(name, "security.selinux", cur, sizeof(cur) - 1);
	if (n < 0 && (errno == ENOTSUP || errno == ENODATA))
		return 0;
	if (n < 0)
		return reason_fail(&e->why, -errno, "its label: %s",
				   strerror(errno));
	cur[n] = '\0';
	for (i = 0; i < 3 && p; i++) /* user:role:type:level */
		if ((p = strchr(p, ':')))
			p++;
	if (!p)
		return 0;
	snprintf(next, sizeof(next), "%.*s%s", (int)(p - cur), cur, level);
	if (lsetxattr(name, "security.selinux", next, strlen(next) + 1, 0) < 0)
		return reason_fail(&e->why, -errno, "labelling it %s: %s", next,
				   strerror(errno));
	return 0;
}

/*
 * A directory only root may change: root's, writable by no group or
 * other.  Inside one, nobody but root can swap a name between two calls
 * (lstat then unlink, bind then chown), so the broker's operations there
 * are safe by name relative to the directory's fd.
 */
static bool roots_alone(int dfd)
{
	struct stat st;

	return fstat(dfd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == 0 &&
	       !(st.st_mode & 022);
}

int socket_dir_open(const char *path)
{
	_cleanup_close_ int dfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0)
		return -errno;
	if (!roots_alone(dfd))
		return -EPERM;
	return TAKE_FD(dfd);
}

/* The broker's socket_dir: made if missing (0755 root), refused if anyone
 * but root may write it. */
int socket_dir_make(struct broker *b)
{
	const char *dir = policy_broker(b->pol)->socket_dir;
	char path[POLICY_SOCKET_PATH_MAX + 1];
	char *slash = path;
	int dfd;

	/* each missing level, 0755 root (the policy's path: root's choice) */
	snprintf(path, sizeof(path), "%s", dir);
	while ((slash = strchr(slash + 1, '/')) || path[0]) {
		if (slash)
			*slash = '\0';
		if (mkdir(path, 0755) < 0 && errno != EEXIST) {
			log_warn("socket_dir %s: creating %s", dir, path);
			return -errno;
		}
		if (!slash)
			break;
		*slash = '/';
	}
	dfd = socket_dir_open(dir);
	if (dfd < 0) {
		log_warnx("socket_dir %s: %s", dir,
			  dfd == -EPERM ? "not root's alone (owned by root, "
					  "writable by no group or other)"
					: strerror(-dfd));
		return dfd;
	}
	close(dfd);
	return 0;
}

/*
 * Where the VM's socket goes: the directory (opened) and the file name.
 * A name alone (or nothing: <vm>.sock) goes in socket_dir; an absolute
 * path must name a file in socket_dir, or, for root only, in another
 * directory only root may change.
 */
static int socket_place(struct broker *b, const struct conn *c,
			const struct bp_spawn *req, struct worker *w,
			struct spawn_err *e)
{
	const char *sdir = policy_broker(b->pol)->socket_dir;
	char dir[BP_PATH_SIZE], name[BP_PATH_SIZE];
	const char *slash = strrchr(req->socket, '/');

	if (!req->socket[0])
		snprintf(name, sizeof(name), "%s.sock", req->vm);
	else
		snprintf(name, sizeof(name), "%s",
			 slash ? slash + 1 : req->socket);
	if (slash)
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - req->socket),
			 req->socket);
	else
		snprintf(dir, sizeof(dir), "%s", sdir);
	if (!dir[0])
		snprintf(dir, sizeof(dir), "/");
	if (!bp_socket_name_ok(name))
		return reason_fail(
			&e->why, -EINVAL,
			"'%s' is not a file name of A-Z a-z 0-9 _ . -", name);
	if (c->uid != 0 && strcmp(dir, sdir))
		return reason_fail(
			&e->why, -EACCES,
			"a caller other than root names a file in the "
			"broker's socket_dir (%s), not in %s",
			sdir, dir);
	if ((size_t)snprintf(w->socket, sizeof(w->socket), "%s%s%s", dir,
			     strcmp(dir, "/") ? "/" : "",
			     name) >= sizeof(w->socket))
		return reason_fail(&e->why, -ENAMETOOLONG, "%s/%s: too long",
				   dir, name);
	w->sock_dfd = socket_dir_open(dir);
	if (w->sock_dfd < 0) {
		int ret = w->sock_dfd;

		reason_set(&e->why, "directory %s: %s", dir,
			   ret == -EPERM ? "not root's alone (owned by root, "
					   "writable by no group or other)"
					 : strerror(-ret));
		return ret;
	}
	snprintf(w->sock_name, sizeof(w->sock_name), "%s", name);
	return 0;
}

/*
 * The listening socket, created in its directory (which only root may
 * change: nothing can be swapped under it) with the owner and mode of the
 * VM's QEMU identity: vmm_uid (else root), vmm_gid (else root), 0660 with
 * a group, else 0600.
 */
static int socket_make(struct broker *b, const struct policy_vm *vm,
		       struct worker *w, const char *level, int *ret_fd,
		       struct spawn_err *e)
{
	uid_t owner = vm->has_vmm_uid ? vm->vmm_uid : 0;
	gid_t group = vm->has_vmm_gid ? vm->vmm_gid : 0;
	struct stat st;
	int ret, fd = -1;

	if (fchdir(w->sock_dfd) < 0) {
		return reason_fail(&e->why, -errno, "its directory: %s",
				   strerror(errno));
	}
	/* a socket left by a worker that died is replaced; nothing else */
	ret = unix_socket_remove_stale(w->sock_dfd, w->sock_name, &e->why);
	if (ret == 0) {
		ret = bind_in(w->sock_name, vm->has_vmm_gid ? 0660 : 0600, &fd);
		if (ret < 0)
			reason_set(&e->why, "bind: %s", strerror(-ret));
	}
	/* labelled while still the broker's: once it belongs to the VM's
	 * QEMU uid, setting its label needs CAP_FOWNER, which the broker
	 * does not keep (libvirt-svirt found it) */
	if (ret == 0 && level)
		ret = socket_label(w->sock_name, level, e);
	if (ret == 0 && (fchownat(w->sock_dfd, w->sock_name, owner, group,
				  AT_SYMLINK_NOFOLLOW) < 0 ||
			 fstatat(w->sock_dfd, w->sock_name, &st,
				 AT_SYMLINK_NOFOLLOW) < 0)) {
		ret = -errno;
		reason_set(&e->why, "chown: %s", strerror(errno));
	}
	if (fd >= 0 && ret < 0) {
		unlinkat(w->sock_dfd, w->sock_name, 0);
		safe_close(fd);
	}
	if (chdir("/") < 0)
		log_warn("chdir /");
	if (ret == 0) {
		w->sock_ino = st.st_ino;
		*ret_fd = fd;
	} else if (!e->why.msg[0])
		reason_set(&e->why, "%s", strerror(-ret));
	return ret;
}

/* ---- the child ---------------------------------------------------------- */

#define ARGV_MAX 48

struct child_args {
	char *argv[ARGV_MAX];
	char nums[20][24];
	unsigned int n, nn;
	const char *cgroup;
	int log_fd; /* its stdout and stderr */
	uint64_t memlock;
	int nice; /* policy worker_nice; 0: the broker's own */
	uid_t uid;
	gid_t gid;
	char level[BP_LEVEL_SIZE]; /* its SELinux MCS level */
};

static void arg(struct child_args *a, const char *s)
{
	if (a->n < ARGV_MAX - 1)
		a->argv[a->n++] = (char *)s;
}

static void arg_num(struct child_args *a, const char *opt, uint64_t v)
{
	if (a->nn >= ARRAY_SIZE(a->nums))
		return;
	snprintf(a->nums[a->nn], sizeof(a->nums[0]), "%llu",
		 (unsigned long long)v);
	arg(a, opt);
	arg(a, a->nums[a->nn++]);
}

/* The worker's limit options take 0..WORKER_LIMIT_MAX. */
static uint32_t lim(uint32_t v)
{
	return v > WORKER_LIMIT_MAX ? WORKER_LIMIT_MAX : v;
}

static void build_argv(struct broker *b, const struct worker *w,
		       const struct policy_vm *vm, const struct bp_spawn *req,
		       struct child_args *a)
{
	const struct policy_quota *q = &vm->quota;

	arg(a, b->worker_path);
	arg(a, "--vm");
	arg(a, w->vm);
	arg_num(a, "--fd", CHILD_VU_FD);
	arg_num(a, "--broker-fd", CHILD_BROKER_FD);
	/* the worker accepts only the VM's QEMU identity (and root) */
	if (vm->has_vmm_uid)
		arg_num(a, "--peer-uid", vm->vmm_uid);
	if (vm->has_vmm_gid)
		arg_num(a, "--peer-gid", vm->vmm_gid);
	if (req->flags & BP_SPAWN_TEST_ECHO) {
		arg(a, "--test-device");
		arg(a, "echo");
	} else {
		arg(a, "--device");
		arg(a, w->device);
		arg_num(a, "--port", w->port);
		arg_num(a, "--max-qp", lim(q->max_qp));
		arg_num(a, "--max-cq", lim(q->max_cq));
		arg_num(a, "--max-mr", lim(q->max_mr));
		arg_num(a, "--max-pd", lim(q->max_pd));
		arg_num(a, "--max-srq", lim(q->max_srq));
		arg_num(a, "--max-ah", lim(q->max_ah));
		arg_num(a, "--max-cqe", lim(q->max_cqe));
		arg_num(a, "--max-qp-wr", lim(q->max_qp_wr));
		arg_num(a, "--max-srq-wr", lim(q->max_srq_wr));
		arg_num(a, "--max-sge", lim(q->max_sge));
	}
	arg_num(a, "--poll-budget-us", vm->poll_budget_us);
	arg_num(a, "--doorbell-poll-ms", vm->doorbell_poll_ms);
	/* always said: the worker's own default must not decide */
	arg(a, "--frontend");
	arg(a, bp_frontend_name(w->frontend));
	arg(a, "--selinux-level");
	arg(a, a->level);
#if RDMAGATE_TEST_HOOKS
	if (req->test_syscall[0]) {
		arg(a, "--test-forbidden-syscall");
		arg(a, req->test_syscall);
	}
#endif
	a->argv[a->n] = NULL;
}

/* What failed in the child, through the close-on-exec pipe. */
struct child_fail {
	int step;
	int err;
};

static const char *const step_names[] = {
	"resetting signals",
	"joining its cgroup",
	"setting RLIMIT_MEMLOCK and RLIMIT_CORE",
	"setting its nice value (worker_nice)",
	"arranging its fds",
	"dropping privileges",
	"executing the worker",
};

static __attribute__((noreturn)) void child_fail(int efd, int step, int err)
{
	struct child_fail f = { step, err };

	if (write(efd, &f, sizeof(f)) < 0)
		_exit(127);
	_exit(127);
}

static int child_join_cgroup(const char *cgroup)
{
	char path[BROKER_CGROUP_MAX + 16], pid[16];

	if (!cgroup[0])
		return 0;
	snprintf(path, sizeof(path), "%s/cgroup.procs", cgroup);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	return write_file(path, pid);
}

/*
 * The policy's worker_nice, set while the child is still root: the worker
 * cannot lower its own (no CAP_SYS_NICE, and no setpriority in its
 * allow-list).  setsid() gave the child an autogroup of its own, in which a
 * task's nice value weighs only against the group's other tasks, so the
 * group's nice (/proc/self/autogroup) is set too: that is what counts
 * against QEMU's vCPUs in their own sessions.  A kernel without autogroups
 * has no such file.  Under a cgroup with the cpu controller, cpu.weight
 * decides between cgroups, and this only within the worker's.
 */
static int child_set_nice(int nice)
{
	char s[16];
	int ret;

	if (!nice)
		return 0;
	if (setpriority(PRIO_PROCESS, 0, nice) < 0)
		return -errno;
	snprintf(s, sizeof(s), "%d", nice);
	ret = write_file("/proc/self/autogroup", s);
	return ret == -ENOENT ? 0 : ret;
}

/* vu -> 3, the error pipe -> 4 (close-on-exec), the broker channel -> 5,
 * stdin /dev/null, stdout and stderr its log stream, the rest closed. */
static int child_fds(int vu, int efd, int chan, int lg)
{
	int nul, hi_vu = fcntl(vu, F_DUPFD_CLOEXEC, 10);
	int hi_e = fcntl(efd, F_DUPFD_CLOEXEC, 10);
	int hi_c = fcntl(chan, F_DUPFD_CLOEXEC, 10);
	int hi_l = fcntl(lg, F_DUPFD_CLOEXEC, 10);

	/* its own log stream as stdout and stderr, never the broker's */
	if (hi_vu < 0 || hi_e < 0 || hi_c < 0 || hi_l < 0 ||
	    dup2(hi_l, 1) < 0 || dup2(hi_l, 2) < 0 ||
	    dup2(hi_vu, CHILD_VU_FD) < 0 ||
	    dup3(hi_e, CHILD_ERR_FD, O_CLOEXEC) < 0 ||
	    dup2(hi_c, CHILD_BROKER_FD) < 0)
		return -errno;
	nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (nul < 0 || dup2(nul, 0) < 0)
		return -errno;
	if (close_range(CHILD_BROKER_FD + 1, ~0U, 0) < 0)
		return -errno;
	return 0;
}

static __attribute__((noreturn)) void child(const struct child_args *a, int vu,
					    int chan, int efd)
{
	struct rlimit rl = { a->memlock, a->memlock };
	char *const envp[] = { NULL };
	sigset_t none;
	int ret;

	sigemptyset(&none);
	if (sigprocmask(SIG_SETMASK, &none, NULL) < 0 ||
	    signal(SIGPIPE, SIG_DFL) == SIG_ERR || setsid() < 0)
		child_fail(efd, 0, errno);
	ret = child_join_cgroup(a->cgroup);
	if (ret < 0)
		child_fail(efd, 1, -ret);
	if (setrlimit(RLIMIT_MEMLOCK, &rl) < 0 ||
	    setrlimit(RLIMIT_CORE, &(struct rlimit){ 0, 0 }) < 0)
		child_fail(efd, 2, errno);
	ret = child_set_nice(a->nice);
	if (ret < 0)
		child_fail(efd, 3, -ret);
	ret = child_fds(vu, efd, chan, a->log_fd);
	if (ret < 0)
		child_fail(efd, 4, -ret);
	efd = CHILD_ERR_FD;
	ret = privdrop_to(a->uid, a->gid);
	if (ret < 0)
		child_fail(efd, 5, -ret);
	execve(a->argv[0], a->argv, envp);
	child_fail(efd, 6, errno);
}

/* Forks the child; 0 once it has executed the worker, else -errno. */
static int fork_worker(struct worker *w, const struct child_args *a, int vu,
		       int chan, struct spawn_err *e)
{
	struct child_fail f;
	int p[2];
	ssize_t n;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		safe_close(p[0]);
		safe_close(p[1]);
		return reason_fail(&e->why, -EAGAIN, "fork: %s",
				   strerror(errno));
	}
	if (pid == 0) {
		safe_close(p[0]);
		child(a, vu, chan, p[1]);
	}
	safe_close(p[1]);
	w->pid = pid;
	/* our child, not reaped before the loop sees SIGCHLD: the pid is
	 * its until then, and the pidfd names it for every later signal */
	w->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (w->pidfd < 0)
		log_warn("worker/%s: pidfd_open", w->vm);
	do
		n = read(p[0], &f, sizeof(f));
	while (n < 0 && errno == EINTR);
	safe_close(p[0]);
	if (n == 0)
		return 0;
	/* the child failed before exec: reap it here */
	waitpid(pid, NULL, 0);
	w->pid = 0;
	w->pidfd = safe_close(w->pidfd);
	if (n != sizeof(f) || f.step < 0 ||
	    f.step >= (int)ARRAY_SIZE(step_names))
		return reason_fail(&e->why, -EIO, "the child failed");
	reason_set(&e->why, "%s: %s", step_names[f.step], strerror(f.err));
	return -f.err;
}

/* ---- SPAWN ------------------------------------------------------------- */

static void format_bp_addr(const struct bp_addr *a,
			   char buf[POLICY_ADDR_STRLEN])
{
	struct policy_addr pa = { .family = (int)a->family };

	pa.prefix_len = a->family == AF_INET ? 32 : 128;
	memcpy(pa.addr, a->addr, sizeof(pa.addr));
	policy_format_addr(&pa, buf);
}

static int check_request(struct broker *b, const struct conn *c,
			 const struct bp_spawn *req,
			 const struct policy_vm **ret_vm, struct spawn_err *e)
{
	const struct worker *old;

	*ret_vm = policy_lookup_vm(b->pol, req->vm);
	if (!*ret_vm) {
		reason_set(&e->why, "vm %s is not in the policy", req->vm);
		e->refuse = RDMAGATE_POLICY_VM;
		return -ENOENT;
	}
	if (!control_caller_owns(c, *ret_vm)) {
		control_not_owner(c, req->vm, &e->why);
		return -EPERM;
	}
	old = workers_find(b, req->vm);
	if (old && is_qemu_pvrdma(old))
		return reason_fail(&e->why, -EEXIST,
				   "vm %s is attached already (QEMU pvrdma)",
				   req->vm);
	if (old)
		return reason_fail(&e->why, -EEXIST,
				   "vm %s already has a worker (pid %d)",
				   req->vm, (int)old->pid);
	if ((req->device[0] || req->port || req->frontend) && c->uid != 0) {
		reason_set(
			&e->why,
			"only root may override the policy's device, port or "
			"frontend");
		e->refuse = RDMAGATE_POLICY_DEVICE;
		return -EPERM;
	}
	for (uint32_t i = 0; i < req->n_addrs; i++) {
		const struct bp_addr *a = &req->addrs[i];
		char txt[POLICY_ADDR_STRLEN];

		if (policy_vm_may_claim(b->pol, req->vm, (int)a->family,
					a->addr))
			continue;
		format_bp_addr(a, txt);
		reason_set(&e->why, "the policy does not let vm %s claim %s",
			   req->vm, txt);
		e->refuse = RDMAGATE_POLICY_GID;
		return -EPERM;
	}
#if !RDMAGATE_TEST_HOOKS
	if (req->flags || req->test_syscall[0])
		return reason_fail(&e->why, -EPERM,
				   "this broker was built without test hooks");
#else
	if ((req->flags || req->test_syscall[0]) && c->uid != 0)
		return reason_fail(&e->why, -EPERM,
				   "test hooks are root's only");
#endif
	/* the level isolates VMs from each other: libvirt's (the hook runs
	 * as root), never a QEMU identity's choice */
	if (req->selinux_level[0] && c->uid != 0)
		return reason_fail(&e->why, -EPERM,
				   "only root may name the SELinux level");
	return 0;
}

/* The worker's level: the request's (libvirt's sVirt pair) or its uid's;
 * refused when another worker runs at it (they could reach each other). */
static int pick_level(struct broker *b, const struct bp_spawn *req,
		      struct worker *w, struct reason *why)
{
	if (req->selinux_level[0])
		snprintf(w->level, sizeof(w->level), "%s", req->selinux_level);
	else
		mcs_level(w->uid, w->level, sizeof(w->level));
	for (size_t i = 0; i < BROKER_MAX_WORKERS; i++) {
		const struct worker *o = &b->workers[i];

		if (o != w && o->used && !strcmp(o->level, w->level))
			return reason_fail(why, -EEXIST,
					   "SELinux level %s: vm %s's worker "
					   "runs at it",
					   w->level, o->vm);
	}
	return 0;
}

static void fill_worker(struct worker *w, const struct bp_spawn *req,
			const struct policy_vm *vm)
{
	snprintf(w->vm, sizeof(w->vm), "%s", req->vm);
	snprintf(w->socket, sizeof(w->socket), "%s", req->socket);
	if (req->flags & BP_SPAWN_TEST_ECHO)
		snprintf(w->device, sizeof(w->device), "echo");
	else
		snprintf(w->device, sizeof(w->device), "%s",
			 req->device[0] ? req->device : vm->device);
	w->port = req->port ? req->port : vm->port;
	w->frontend = req->frontend ? req->frontend : vm->frontend;
}

/* The VM's socket (its place, then made); on failure nothing is made. */
static int vm_socket(struct broker *b, const struct conn *c,
		     const struct bp_spawn *req, const struct policy_vm *vm,
		     struct worker *w, const char *level, int *ret_fd,
		     struct spawn_err *e)
{
	int ret;

	ret = socket_place(b, c, req, w, e);
	if (ret == 0)
		ret = socket_make(b, vm, w, level, ret_fd, e);
	if (ret < 0) {
		struct reason step = e->why;

		/* nothing made: whatever was at the name stays */
		w->sock_dfd = safe_close(w->sock_dfd);
		reason_set(&e->why, "socket %s: %s", w->socket, step.msg);
	}
	return ret;
}

/* frontend qemu-pvrdma: the socket goes to the mux, no worker is spawned */
static int qemu_steps(struct broker *b, const struct conn *c,
		      const struct bp_spawn *req, const struct policy_vm *vm,
		      struct worker *w, struct spawn_err *e)
{
	int lfd = -1, ret;

	ret = vm_socket(b, c, req, vm, w, NULL, &lfd, e);
	if (ret < 0)
		return ret;
	ret = qemu_pvrdma_attach(b, w, vm, req, lfd, &e->why);
	if (ret < 0) {
		safe_close(lfd);
		socket_unlink(w);
	}
	return ret;
}

static int spawn_steps(struct broker *b, const struct conn *c,
		       const struct bp_spawn *req, struct worker *w,
		       struct spawn_err *e)
{
	const struct policy_vm *vm;
	struct child_args a = { 0 };
	int vu = -1, chan = -1, lg = -1, ret;

	ret = check_request(b, c, req, &vm, e);
	if (ret < 0)
		return ret;
	fill_worker(w, req, vm);
	if (is_qemu_pvrdma(w))
		return qemu_steps(b, c, req, vm, w, e);
	ret = workers_pick_ids(b, vm, &w->uid, &w->gid, &e->why);
	if (ret < 0) {
		/* the ids the policy grants (worker_ids, its uid) are taken */
		e->refuse = RDMAGATE_POLICY_QUOTA;
		return ret;
	}
	/* the VM's categories: its worker's and its socket's */
	ret = pick_level(b, req, w, &e->why);
	if (ret < 0)
		return ret;
	snprintf(a.level, sizeof(a.level), "%s", w->level);
	ret = vm_socket(b, c, req, vm, w, a.level, &vu, e);
	if (ret < 0)
		return ret;
	ret = channel_make(b, w, &chan, &e->why);
	if (ret == 0)
		ret = worker_log_open(b, w, &lg, &e->why);
	if (ret == 0)
		ret = cgroup_setup(b, w, req->flags & BP_SPAWN_TEST_ECHO, vm,
				   e);
	if (ret == 0) {
		build_argv(b, w, vm, req, &a);
		a.cgroup = w->cgroup;
		a.log_fd = lg;
		a.memlock = vm->quota.max_pinned;
		a.nice = vm->worker_nice;
		a.uid = w->uid;
		a.gid = w->gid;
		ret = fork_worker(w, &a, vu, chan, e);
	}
	safe_close(vu);
	safe_close(chan);
	safe_close(lg);
	if (ret < 0) {
		worker_log_close(b, w, true);
		/* the socket this spawn made (one that was there was refused
		 * above, and is left alone) */
		socket_unlink(w);
		if (w->chan_path[0])
			unlink(w->chan_path);
		if (w->cgroup[0])
			rmdir(w->cgroup);
	}
	return ret;
}

int spawn_worker(struct broker *b, const struct conn *c,
		 const struct bp_spawn *req, struct bp_spawn_reply *rep)
{
	struct spawn_err e = { 0 };
	struct worker *w = workers_add(b);
	int ret;

	if (!w) {
		bp_set_status(&rep->st, ENOSPC, "the worker table is full");
		return -ENOSPC;
	}
	w->spawn_ms = mono_ms();
	ret = spawn_steps(b, c, req, w, &e);
	if (ret < 0) {
		w->used = false;
		log_warnx("spawn %s (for uid %u): %s", req->vm,
			  (unsigned int)c->uid, e.why.msg);
		/* req->vm: the decoded request's NUL-terminated copy */
		if (e.refuse)
			RDMAGATE_POLICY_REFUSE(req->vm, e.refuse, e.why.msg);
		bp_set_status(&rep->st, -ret, "%s", e.why.msg);
		return ret;
	}
	if (is_qemu_pvrdma(w)) {
		qemu_pvrdma_attached(b, w, rep);
		return 0;
	}
	w->start = time(NULL);
	w->state = BP_STATE_RUNNING;
	w->pid_start = proc_start_time(w->pid);
	ret = channel_connect(b, w);
	if (ret < 0)
		log_warnx("worker/%s: connecting its channel: %s", w->vm,
			  strerror(-ret));
	state_save(b, w);
	mux_link_worker_add(b, w);
	RDMAGATE_WORKER_SPAWN(w->vm, w->pid);
	log_info("worker/%s: pid %d, uid %u gid %u, socket %s, device %s, "
		 "frontend %s, cgroup %s",
		 w->vm, (int)w->pid, (unsigned int)w->uid, (unsigned int)w->gid,
		 w->socket, w->device, bp_frontend_name(w->frontend),
		 w->cgroup[0] ? w->cgroup : "(none)");
	bp_set_status(&rep->st, 0, "worker/%s: pid %d, uid %u", w->vm,
		      (int)w->pid, (unsigned int)w->uid);
	rep->pid = (uint32_t)w->pid;
	rep->uid = w->uid;
	rep->gid = w->gid;
	return 0;
}
