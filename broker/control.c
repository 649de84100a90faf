// SPDX-License-Identifier: MIT
/*
 * The broker's control socket: SOCK_SEQPACKET, callers authorised by
 * SO_PEERCRED/SO_PEERGROUPS (root, or a member of control_group), every
 * message through bp_decode() and one handler table.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "broker/broker.h"
#include "common/cleanup.h"
#include "common/log.h"

/*
 * A line a caller of uid can cause: through the process's peer limiter
 * (LOG_PEER_BURST per LOG_PEER_INTERVAL_MS, then a count) unless it is
 * root's, so a member of control_group that floods the socket with bad
 * requests cannot flood the broker's log.
 */
static void caller_log(uint32_t uid, enum log_level lvl, const char *fmt, ...)
	LOG_PRINTF(3, 4);
static void caller_log(uint32_t uid, enum log_level lvl, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (uid == 0)
		log_vemit(lvl, 0, fmt, ap);
	else
		log_peer_vemit(lvl, 0, fmt, ap);
	va_end(ap);
}

#define MAX_PEER_GROUPS 256

typedef void (*handler_fn)(struct broker *b, int conn, const struct bp_msg *m);

static void on_hello(struct broker *b, int conn, const struct bp_msg *m);
static void on_spawn(struct broker *b, int conn, const struct bp_msg *m);
static void on_stop(struct broker *b, int conn, const struct bp_msg *m);
static void on_list(struct broker *b, int conn, const struct bp_msg *m);
static void on_reload(struct broker *b, int conn, const struct bp_msg *m);
static void on_stats(struct broker *b, int conn, const struct bp_msg *m);

/* The handlers of the requests in common/broker_proto.c's table. */
static const struct {
	uint32_t type;
	handler_fn fn;
} handlers[] = {
	{ BP_HELLO, on_hello },	  { BP_SPAWN, on_spawn },
	{ BP_STOP, on_stop },	  { BP_LIST, on_list },
	{ BP_RELOAD, on_reload }, { BP_STATS, on_stats },
};

/* ---- the socket ---------------------------------------------------------- */

/* The control socket's group is not a VMM's: a QEMU in it could act for
 * other VMs' workers through the control socket. */
static void warn_shared_group(const struct broker *b)
{
	const struct policy_vm *vm;
	size_t i;

	for (i = 0; b->has_group && (vm = policy_vm_at(b->pol, i)); i++)
		if (vm->has_vmm_gid && vm->vmm_gid == b->control_gid)
			log_warnx("vm %s: its vmm_gid %u is control_group's: "
				  "its QEMU may use the control socket (give "
				  "QEMU a group of its own)",
				  vm->name, vm->vmm_gid);
}

/* control_group's gid, looked up again at each (re)load. */
void control_apply_group(struct broker *b)
{
	const char *name = policy_broker(b->pol)->control_group;
	struct group *g;

	b->has_group = false;
	if (name[0]) {
		g = getgrnam(name);
		if (g) {
			b->has_group = true;
			b->control_gid = g->gr_gid;
		} else {
			log_warnx(
				"control_group %s does not exist: the control "
				"socket is root's only",
				name);
		}
	}
	warn_shared_group(b);
	if (b->lfd >= 0 &&
	    (chown(b->control_path, 0, b->has_group ? b->control_gid : 0) < 0 ||
	     chmod(b->control_path, b->has_group ? 0660 : 0600) < 0))
		log_warn("setting the owner and mode of %s", b->control_path);
}

/* The socket's directory: created 0755 if missing, never made looser. */
static int make_dir(const char *path)
{
	char dir[BP_PATH_SIZE], *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		log_warn("creating %s", dir);
		return -errno;
	}
	return 0;
}

int control_open(struct broker *b)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = TAG_LISTEN };
	_cleanup_close_ int fd = -1;
	struct stat st;
	mode_t old;

	snprintf(b->control_path, sizeof(b->control_path), "%s",
		 b->control_opt ? b->control_opt
				: policy_broker(b->pol)->control_socket);
	if (strlen(b->control_path) >= sizeof(sa.sun_path) ||
	    b->control_path[0] != '/') {
		log_warnx("control socket %s: not an absolute path that fits",
			  b->control_path);
		return -EINVAL;
	}
	strcpy(sa.sun_path, b->control_path);
	if (make_dir(b->control_path) < 0)
		return -EIO;
	if (lstat(sa.sun_path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			log_warnx("%s exists and is not a socket", sa.sun_path);
			return -EEXIST;
		}
		unlink(sa.sun_path); /* a previous broker's */
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		umask(old);
		log_warn("bind %s", sa.sun_path);
		return -errno;
	}
	umask(old);
	if (listen(fd, 16) < 0 || epoll_ctl(b->ep, EPOLL_CTL_ADD, fd, &ev) < 0)
		return -errno;
	b->lfd = TAKE_FD(fd);
	control_apply_group(b);
	log_info("control socket %s (%s)", b->control_path,
		 b->has_group ? "root and control_group" : "root only");
	return 0;
}

void control_close(struct broker *b)
{
	unsigned int i;

	for (i = 0; i < BROKER_MAX_CONNS; i++)
		b->conns[i].fd = safe_close(b->conns[i].fd);
	if (b->lfd >= 0) {
		b->lfd = safe_close(b->lfd);
		unlink(b->control_path);
	}
}

/* ---- callers ------------------------------------------------------------ */

static bool peer_in_group(int fd, gid_t gid, gid_t pgid)
{
	gid_t groups[MAX_PEER_GROUPS];
	socklen_t len = sizeof(groups);
	unsigned int i;

	if (pgid == gid)
		return true;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0)
		return false;
	for (i = 0; i < len / sizeof(gid_t); i++)
		if (groups[i] == gid)
			return true;
	return false;
}

bool control_caller_owns(const struct conn *c, const struct policy_vm *vm)
{
	if (c->uid == 0)
		return true;
	if (!vm)
		return false;
	if (vm->has_vmm_uid && c->uid == vm->vmm_uid)
		return true;
	return vm->has_vmm_gid && c->fd >= 0 &&
	       peer_in_group(c->fd, vm->vmm_gid, c->gid);
}

void control_not_owner(const struct conn *c, const char *vm, struct reason *why)
{
	reason_set(why,
		   "uid %u is not the QEMU identity of vm %s (its vmm_uid or "
		   "vmm_gid in the policy): only that identity and root act "
		   "for it",
		   (unsigned int)c->uid, vm);
}

static void conn_drop(struct broker *b, unsigned int i)
{
	struct conn *c = &b->conns[i];

	workers_conn_gone(b, (int)i);
	stats_conn_gone(b, (int)i);
	c->fd = safe_close(c->fd);
	free(c->out);
	c->out = NULL;
	c->out_n = c->out_head = c->out_cap = 0;
}

/* What the connection waits for: its requests, or its socket to take the
 * replies queued. */
static void conn_watch(struct broker *b, unsigned int i)
{
	struct epoll_event ev = {
		.events = b->conns[i].out_n ? EPOLLOUT : EPOLLIN,
		.data.u64 = ((uint64_t)TAG_CONN << 32) | i,
	};

	if (epoll_ctl(b->ep, EPOLL_CTL_MOD, b->conns[i].fd, &ev) < 0)
		log_warn("control: epoll");
}

/* Sends what is queued, oldest first; false if the connection failed. */
static bool conn_flush(struct broker *b, unsigned int i)
{
	struct conn *c = &b->conns[i];
	int ret;

	while (c->out_n) {
		ret = bp_send(c->fd, &c->out[c->out_head]);
		if (ret == -EAGAIN)
			return true;
		if (ret < 0) {
			log_warnx("control: replying to pid %d: %s",
				  (int)c->pid, strerror(-ret));
			return false;
		}
		c->out_head++;
		c->out_n--;
		c->last_ms = mono_ms();
	}
	free(c->out);
	c->out = NULL;
	c->out_head = c->out_cap = 0;
	return true;
}

/* Queues m behind what waits; false if the queue is at its bound (a
 * client that does not read). */
static bool conn_queue(struct conn *c, const struct bp_msg *m)
{
	/* LIST and STATS answers: one message per worker, and a few more */
	const unsigned int max = BROKER_MAX_WORKERS + 8;
	unsigned int need = c->out_head + c->out_n + 1;

	if (c->out_n >= max)
		return false;
	if (need > c->out_cap) {
		unsigned int cap;
		struct bp_msg *o;

		/* compact first: the sent head is dead space */
		if (c->out_n)
			memmove(c->out, c->out + c->out_head,
				c->out_n * sizeof(*c->out));
		c->out_head = 0;
		cap = c->out_cap ? c->out_cap * 2 : 16;
		if (cap < c->out_n + 1)
			cap = c->out_n + 1;
		if (cap > max)
			cap = max;
		o = realloc(c->out, cap * sizeof(*o));
		if (!o)
			return false;
		c->out = o;
		c->out_cap = cap;
	}
	c->out[c->out_head + c->out_n++] = *m;
	return true;
}

static unsigned int conns_used(const struct broker *b)
{
	unsigned int i, n = 0;

	for (i = 0; i < BROKER_MAX_CONNS; i++)
		n += b->conns[i].fd >= 0;
	return n;
}

void control_accept(struct broker *b)
{
	struct epoll_event ev = { .events = EPOLLIN };
	_cleanup_close_ int fd = -1;
	struct msg_conn in;
	struct reason why;
	unsigned int i;

	/* replies never block the loop: what the socket does not take waits
	 * in the connection's queue */
	fd = accept4(b->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	if (msg_conn_open(&in, &bp_protocol, fd,
			  (1u << BP_FROM_CALLER) | (1u << BP_FROM_ROOT),
			  &why) < 0) {
		caller_log(UINT32_MAX, LOG_LVL_WARN, "control: %s", why.msg);
		return;
	}
	/* who is a caller is the policy's: root or a member of control_group */
	if (in.uid != 0 &&
	    !(b->has_group && peer_in_group(fd, b->control_gid, in.gid))) {
		caller_log(in.uid, LOG_LVL_WARN,
			   "control: refused pid %d uid %u: not root nor in "
			   "control_group",
			   (int)in.pid, (unsigned int)in.uid);
		return; /* closing tells it */
	}
	if (in.uid != 0 &&
	    conns_used(b) >= BROKER_MAX_CONNS - BROKER_ROOT_SLOTS) {
		caller_log(in.uid, LOG_LVL_WARN,
			   "control: %d connections open; refusing pid %d uid "
			   "%u (the last %d are root's)",
			   BROKER_MAX_CONNS - BROKER_ROOT_SLOTS, (int)in.pid,
			   (unsigned int)in.uid, BROKER_ROOT_SLOTS);
		return;
	}
	for (i = 0; i < BROKER_MAX_CONNS && b->conns[i].fd >= 0; i++)
		;
	if (i == BROKER_MAX_CONNS) {
		log_warnx("control: %d connections open; refusing pid %d",
			  BROKER_MAX_CONNS, (int)in.pid);
		return;
	}
	ev.data.u64 = ((uint64_t)TAG_CONN << 32) | i;
	if (epoll_ctl(b->ep, EPOLL_CTL_ADD, fd, &ev) < 0)
		return;
	b->conns[i] = (struct conn){ .fd = TAKE_FD(fd),
				     .in = in,
				     .uid = in.uid,
				     .gid = in.gid,
				     .in_group = in.uid != 0,
				     .pid = in.pid,
				     .last_ms = mono_ms() };
	log_debug("control: pid %d uid %u connected", (int)in.pid,
		  (unsigned int)in.uid);
}

void control_reply(struct broker *b, int conn, const struct bp_msg *m)
{
	struct conn *c;
	bool was_idle;

	if (conn < 0 || conn >= BROKER_MAX_CONNS || b->conns[conn].fd < 0)
		return;
	c = &b->conns[conn];
	was_idle = !c->out_n;
	if (!conn_queue(c, m)) {
		caller_log(c->uid, LOG_LVL_WARN,
			   "control: pid %d does not read its replies; "
			   "closing its connection",
			   (int)c->pid);
		conn_drop(b, (unsigned int)conn);
		return;
	}
	if (!conn_flush(b, (unsigned int)conn)) {
		conn_drop(b, (unsigned int)conn);
		return;
	}
	if (was_idle != !c->out_n)
		conn_watch(b, (unsigned int)conn);
}

static void control_read(struct broker *b, unsigned int i);

void control_event(struct broker *b, unsigned int i, uint32_t events)
{
	struct conn *c;

	if (i >= BROKER_MAX_CONNS || b->conns[i].fd < 0)
		return;
	c = &b->conns[i];
	if (c->out_n) {
		if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			return;
		if (!conn_flush(b, i)) {
			conn_drop(b, i);
			return;
		}
		if (!c->out_n)
			conn_watch(b, i);
		return;
	}
	control_read(b, i);
}

/* Busy: a request being answered (STOP, STATS), or replies queued. */
static bool conn_busy(const struct broker *b, unsigned int i)
{
	unsigned int j;

	if (b->conns[i].out_n || b->conns[i].stats_busy)
		return true;
	for (j = 0; j < BROKER_MAX_WORKERS; j++)
		if (b->workers[j].used && b->workers[j].stop_conn == (int)i)
			return true;
	return false;
}

int control_timeout(struct broker *b)
{
	uint64_t now = mono_ms(), next = UINT64_MAX;
	unsigned int i;

	for (i = 0; i < BROKER_MAX_CONNS; i++)
		if (b->conns[i].fd >= 0 &&
		    b->conns[i].last_ms + BROKER_CONN_IDLE_MS < next)
			next = b->conns[i].last_ms + BROKER_CONN_IDLE_MS;
	return timeout_until_ms(next, now);
}

void control_close_idle(struct broker *b)
{
	uint64_t now = mono_ms();
	unsigned int i;

	for (i = 0; i < BROKER_MAX_CONNS; i++) {
		struct conn *c = &b->conns[i];

		if (c->fd < 0 || now < c->last_ms + BROKER_CONN_IDLE_MS)
			continue;
		if (conn_busy(b, i)) {
			/* waiting on the broker is not idling (a queue that
			 * does not drain is the bound's to end) */
			c->last_ms = now;
			continue;
		}
		caller_log(c->uid, LOG_LVL_INFO,
			   "control: pid %d uid %u idle for %d ms; closing its "
			   "connection",
			   (int)c->pid, (unsigned int)c->uid,
			   BROKER_CONN_IDLE_MS);
		conn_drop(b, i);
	}
}

static void reply_error(struct broker *b, int conn, int err, const char *why)
{
	struct bp_msg m;

	bp_init(&m, BP_ERROR_REPLY);
	bp_set_status(&m.u.status, err, "%s", why);
	control_reply(b, conn, &m);
}

static void dispatch(struct broker *b, int conn, const struct bp_msg *m)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(handlers); i++)
		if (handlers[i].type == m->h.type) {
			handlers[i].fn(b, conn, m);
			return;
		}
}

static void control_read(struct broker *b, unsigned int i)
{
	struct conn *c;
	struct reason why;
	struct bp_msg m;
	int ret;

	if (i >= BROKER_MAX_CONNS || b->conns[i].fd < 0)
		return;
	c = &b->conns[i];
	/* the table refuses replies, root's types from another uid, fds,
	 * and anything before HELLO */
	ret = msg_conn_recv(&c->in, c->fd, &m, NULL, MSG_DONTWAIT, &why);
	if (ret == 0)
		return;
	if (ret == -EPIPE) {
		conn_drop(b, i);
		return;
	}
	c->last_ms = mono_ms();
	if (ret < 0) {
		caller_log(c->uid, LOG_LVL_WARN,
			   "control: pid %d uid %u: bad message: %s",
			   (int)c->pid, (unsigned int)c->uid, why.msg);
		reply_error(b, (int)i, -ret, why.msg);
		return;
	}
	log_debug("control: pid %d: %s", (int)c->pid, bp_type_name(m.h.type));
	dispatch(b, (int)i, &m);
}

/* ---- handlers ----------------------------------------------------------- */

static void on_hello(struct broker *b, int conn, const struct bp_msg *req)
{
	struct bp_msg m;

	bp_init(&m, BP_HELLO_REPLY);
	bp_set_status(&m.u.hello_reply.st, 0, "rdmagate-broker, protocol %u",
		      RDMAGATE_CTL_VERSION);
	m.u.hello_reply.version = RDMAGATE_CTL_VERSION;
	control_reply(b, conn, &m);
}

static void on_spawn(struct broker *b, int conn, const struct bp_msg *req)
{
	struct bp_msg m;

	bp_init(&m, BP_SPAWN_REPLY);
	spawn_worker(b, &b->conns[conn], &req->u.spawn, &m.u.spawn_reply);
	control_reply(b, conn, &m);
}

static void on_stop(struct broker *b, int conn, const struct bp_msg *req)
{
	struct worker *w = workers_find(b, req->u.stop.vm);
	const struct conn *c = &b->conns[conn];
	struct bp_msg m;
	int ret;

	bp_init(&m, BP_STOP_REPLY);
	if (!control_caller_owns(c, policy_lookup_vm(b->pol, req->u.stop.vm))) {
		struct reason why;

		control_not_owner(c, req->u.stop.vm, &why);
		caller_log(c->uid, LOG_LVL_WARN,
			   "control: pid %d: STOP refused: %s", (int)c->pid,
			   why.msg);
		bp_set_status(&m.u.status, EPERM, "%s", why.msg);
		control_reply(b, conn, &m);
		return;
	}
	if (!w) {
		bp_set_status(&m.u.status, ESRCH, "vm %s has no worker",
			      req->u.stop.vm);
		control_reply(b, conn, &m);
		return;
	}
	ret = workers_stop(b, w, conn);
	if (ret < 0) {
		bp_set_status(&m.u.status, -ret, "stopping worker/%s: %s",
			      w->vm, strerror(-ret));
		control_reply(b, conn, &m);
	} else if (ret > 0) {
		bp_set_status(&m.u.status, 0, "vm %s: detached",
			      req->u.stop.vm);
		control_reply(b, conn, &m);
	}
	/* else the reply goes out when the worker is reaped */
}

static void on_list(struct broker *b, int conn, const struct bp_msg *req)
{
	unsigned int total = workers_count(b), idx = 0, i;
	struct bp_msg m;

	bp_init(&m, BP_LIST_REPLY);
	bp_set_status(&m.u.list_reply.st, 0, "%u workers", total);
	m.u.list_reply.total = total;
	if (!total) {
		control_reply(b, conn, &m);
		return;
	}
	for (i = 0; i < BROKER_MAX_WORKERS; i++) {
		if (!b->workers[i].used)
			continue;
		m.u.list_reply.index = idx++;
		workers_info(&b->workers[i], &m.u.list_reply.w);
		control_reply(b, conn, &m);
	}
}

static void on_reload(struct broker *b, int conn, const struct bp_msg *req)
{
	struct reason why;
	struct bp_msg m;
	int ret;

	ret = broker_reload(b, &why);
	bp_init(&m, BP_RELOAD_REPLY);
	bp_set_status(&m.u.status, ret < 0 ? -ret : 0, "%s", why.msg);
	control_reply(b, conn, &m);
}

static void on_stats(struct broker *b, int conn, const struct bp_msg *req)
{
	stats_start(b, conn, req->u.stats.vm);
}
