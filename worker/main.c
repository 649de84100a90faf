// SPDX-License-Identifier: MIT
/*
 * rdmagate-worker: one VM's device, served on host verbs (docs/worker.md).
 * This file is the process shell: the command line; before the sandbox,
 * the verbs device, the VMM's socket (listening or inherited) and the
 * broker channel's, the SELinux switch and the seccomp filter; then the
 * epoll loop, on one thread, with its adaptive polling.  The loop serves
 * one VMM connection at a time (the next is accepted after the current
 * one disconnects) through one transport's ops table (transport.h):
 * vhost-user (vhost_user/conn.c: virtio-rdma, or the echo test device,
 * with the rings' kick fds) or vfio-user (vfio_user/conn.c: the PVRDMA
 * function, or the PCI test function).  It also watches the broker
 * channel (broker_link.c), the mux channel (backend/qp1.c) and the
 * devices' fds.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/unix_socket.h"
#include "config.h"
#include "policy/policy.h" /* the poll budget's default and ceiling */
#if RDMAGATE_TEST_HOOKS
#include <seccomp.h> /* the test hook resolves syscall names */
#endif
#define RDMAGATE_PROBES_DEFINE /* the semaphores live here */
#include "common/probes.h"
#include "worker/broker_link.h"
#include "worker/guest_mem.h"
#include "worker/opts.h"
#include "worker/transport.h"
#include "worker/vhost_user/device.h"
#include "worker/backend/qp1.h"
#include "worker/pvrdma/pvrdma.h"
#include "worker/virtio_rdma/vrdma.h"
#include "worker/sandbox/sandbox.h"
#include "worker/sandbox/selinux.h"
#include "worker/vfio_user/pci_fn.h" /* the PCI test function */

/* A frontend that stops mid-message, or stops reading our replies, is
 * dropped after this long. */
#define RECV_TIMEOUT_SEC 5

/* Device fds (completion channels) watched at once. */
#define MAX_DEV_WATCHES 8

enum tag {
	TAG_LISTEN = 1,
	TAG_CONN,
	TAG_KICK,
	TAG_DEV,
	TAG_BROKER_LISTEN,
	TAG_BROKER,
	TAG_MUX
};

struct dev_watch {
	int fd; /* -1: free */
	void (*cb)(void *arg);
	void *arg;
};

/*
 * Adaptive polling (docs/worker.md, "Polling"): after activity (an fd
 * event, or work a round did: a command, a WR posted, a completion
 * delivered) the loop goes on without sleeping for the VM's budget:
 * epoll_wait returns at once, so the guest's kicks and the host CQs'
 * events are taken without a wake-up, and the frontend polls its host CQs
 * (its busy_poll flag is on while the loop spins).  A budget spent with
 * nothing done turns the flag off and the loop sleeps in epoll_wait; the
 * host CQs stay armed and the guest's kicks on, so nothing is missed.
 * --busy-poll keeps the flag on for good.
 */
struct spin {
	uint64_t budget_ns; /* 0: sleep at once */
	uint64_t until_ns;  /* CLOCK_MONOTONIC: spin until then */
	uint64_t work;	    /* work_done() at the last look */
	bool *polling;	    /* the frontend's busy_poll flag, or NULL */
	bool always;	    /* --busy-poll */
};

struct loop {
	int ep;
	int lfd; /* listening socket, or -1 (inherited connection) */
	int cfd; /* current frontend, or -1 */
	/* the transport and the device model it serves (transport.h) */
	const struct transport_ops *tp;
	const void *model;
	void *conn; /* the transport's state for cfd, or NULL */
	struct dev_watch watches[MAX_DEV_WATCHES];
	struct broker_link broker;
	/* the mux channel (QP1): its fd, and the device that gets its MADs */
	struct qp1_chan mux;
	struct spin spin;
};

/* What the broker's STATS gets: this process's counters, all frontends. */
static struct wp_counters counters;

/* The timer slack of the loop's sleeps (the default is 50 us). */
#define WORKER_TIMER_SLACK_NS 5000ul

static uint64_t mktag(enum tag t, unsigned int q)
{
	return ((uint64_t)t << 32) | q;
}

static int ep_add(int ep, int fd, uint64_t tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = tag };

	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

static int watch_kick(void *ctx, unsigned int q, int fd)
{
	struct loop *l = ctx;
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return ep_add(l->ep, fd, mktag(TAG_KICK, q));
}

static void unwatch_kick(void *ctx, unsigned int q, int fd)
{
	struct loop *l = ctx;

	epoll_ctl(l->ep, EPOLL_CTL_DEL, fd, NULL);
}

static int watch_fd(void *ctx, int fd, void (*cb)(void *arg), void *arg)
{
	struct loop *l = ctx;
	unsigned int i;

	for (i = 0; i < MAX_DEV_WATCHES; i++) {
		if (l->watches[i].fd >= 0)
			continue;
		if (ep_add(l->ep, fd, mktag(TAG_DEV, i)) < 0)
			return -errno;
		l->watches[i] = (struct dev_watch){ fd, cb, arg };
		return 0;
	}
	return -ENOSPC;
}

static void unwatch_fd(void *ctx, int fd)
{
	struct loop *l = ctx;
	unsigned int i;

	for (i = 0; i < MAX_DEV_WATCHES; i++)
		if (l->watches[i].fd == fd) {
			epoll_ctl(l->ep, EPOLL_CTL_DEL, fd, NULL);
			l->watches[i].fd = -1;
		}
}

/* What the device gets at create time; cfg is set once at startup. */
static struct dev_env dev_env = {
	.watch_fd = watch_fd,
	.unwatch_fd = unwatch_fd,
};

/* What the transport gets for each connection. */
static const struct tp_env tp_env = {
	.dev = &dev_env,
	.watch_kick = watch_kick,
	.unwatch_kick = unwatch_kick,
};

/* ---- the mux channel (QP1) ------------------------------------------ */

static void mux_close(struct loop *l)
{
	if (l->mux.fd < 0)
		return;
	epoll_ctl(l->ep, EPOLL_CTL_DEL, l->mux.fd, NULL);
	l->mux.fd = safe_close(l->mux.fd);
	log_info("mux channel closed: QP1 sends fail until the broker "
		 "hands a new one");
}

/* The broker's MUX_CHANNEL: the new channel replaces the old one. */
static void mux_channel(void *arg, int fd, uint32_t mux_worker_id)
{
	struct loop *l = arg;
	int fl = fcntl(fd, F_GETFL);

	mux_close(l);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ||
	    ep_add(l->ep, fd, mktag(TAG_MUX, 0)) < 0) {
		log_warn("mux channel: cannot watch the new channel");
		safe_close(fd);
		return;
	}
	l->mux.fd = fd;
	l->mux.mux_worker_id = mux_worker_id;
}

/* ---- connections ----------------------------------------------------- */

static void conn_close(struct loop *l)
{
	l->tp->close(l->conn);
	l->conn = NULL;
	epoll_ctl(l->ep, EPOLL_CTL_DEL, l->cfd, NULL);
	l->cfd = safe_close(l->cfd);
	if (l->lfd >= 0 && ep_add(l->ep, l->lfd, mktag(TAG_LISTEN, 0)) < 0)
		fatal("watching the listening socket again");
	log_peer_info("frontend disconnected%s",
		      l->lfd >= 0 ? "; waiting for the next one" : "");
}

static int conn_open(struct loop *l, int cfd)
{
	struct timeval tv = { .tv_sec = RECV_TIMEOUT_SEC };
	int ret;

	setsockopt(cfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	/* A frontend that stops reading its replies cannot hold us either. */
	setsockopt(cfd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	dev_env.loop_ctx = l;
	ret = l->tp->open(l->model, &tp_env, cfd, &l->conn);
	if (ret < 0) {
		safe_close(cfd);
		return ret;
	}
	l->cfd = cfd;
	counters.connects++;
	ret = ep_add(l->ep, cfd, mktag(TAG_CONN, 0));
	if (ret < 0)
		fatal("watching the frontend connection");
	/* One frontend at a time: the next waits in the backlog. */
	if (l->lfd >= 0)
		epoll_ctl(l->ep, EPOLL_CTL_DEL, l->lfd, NULL);
	log_peer_info("frontend connected");
	return 0;
}

/* --peer-uid/--peer-gid: the VM's QEMU identity (the broker's policy);
 * -1: anyone the socket file lets in. */
static long long peer_uid = -1, peer_gid = -1;

/* The frontend is root or the VM's QEMU identity (SO_PEERCRED): the
 * socket file's mode is the first fence, this the second. */
static bool peer_allowed(int cfd)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (peer_uid < 0 && peer_gid < 0)
		return true;
	if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0) {
		log_warn("SO_PEERCRED");
		return false;
	}
	if (cr.uid == 0 || cr.uid == peer_uid || cr.gid == peer_gid)
		return true;
	log_warnx("refused a frontend of uid %u gid %u (pid %d): not the "
		  "VM's QEMU identity",
		  (unsigned int)cr.uid, (unsigned int)cr.gid, (int)cr.pid);
	return false;
}

static void on_listen(struct loop *l)
{
	int cfd = accept4(l->lfd, NULL, NULL, SOCK_CLOEXEC);

	if (cfd < 0) {
		if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
			log_warn("accept");
		return;
	}
	if (!peer_allowed(cfd)) {
		safe_close(cfd);
		return;
	}
	if (conn_open(l, cfd) < 0)
		log_warnx("cannot set up a device for the new frontend");
}

static void dispatch(struct loop *l, uint64_t tag)
{
	switch ((enum tag)(tag >> 32)) {
	case TAG_LISTEN:
		on_listen(l);
		break;
	case TAG_CONN:
		if (l->conn && l->tp->readable(l->conn) < 0)
			conn_close(l);
		break;
	case TAG_KICK:
		/* The event may be stale: the connection changed. */
		if (l->conn && l->tp->kick)
			l->tp->kick(l->conn, (unsigned int)tag);
		break;
	case TAG_BROKER_LISTEN:
		broker_link_accept(&l->broker);
		break;
	case TAG_BROKER:
		broker_link_readable(&l->broker);
		break;
	case TAG_MUX:
		/* stale events of a channel replaced in this round: harmless */
		if (l->mux.fd >= 0 && qp1_chan_readable(&l->mux) < 0)
			mux_close(l);
		break;
	case TAG_DEV:
		/* Stale events of an fd unwatched in this round are skipped. */
		if ((uint32_t)tag < MAX_DEV_WATCHES &&
		    l->watches[(uint32_t)tag].fd >= 0)
			l->watches[(uint32_t)tag].cb(
				l->watches[(uint32_t)tag].arg);
		break;
	}
}

/* A page of guest memory vanished under us: this frontend is done. */
static void check_lost_memory(struct loop *l)
{
	unsigned int n = gm_sigbus_lost();

	if (!n || !l->conn)
		return;
	log_peer_warnx("guest memory: %u page(s) vanished under a live "
		       "mapping (the frontend shrank a region's file); "
		       "dropping the connection",
		       n);
	conn_close(l);
}

/* Work the frontends did for the guest, as the counters count it. */
static uint64_t work_done(void)
{
	return counters.commands + counters.sends + counters.recvs +
	       counters.completions + counters.mads_sent +
	       counters.mads_received;
}

/*
 * After a round of events (n of them): a round that did something starts
 * the budget again; one that did nothing after the budget ends the spin.
 * Returns whether the loop spins on (epoll_wait must not sleep).
 */
static bool spin_round(struct spin *s, int n)
{
	uint64_t w = work_done(), t;

	if (s->always || !s->budget_ns)
		return false;
	t = mono_ns();
	if (n > 0 || w != s->work) {
		s->work = w;
		s->until_ns = t + s->budget_ns;
	}
	if (s->polling)
		*s->polling = t < s->until_ns;
	return t < s->until_ns;
}

/*
 * Waits for events for at most timeout_ns (-1: no limit), with microsecond
 * precision: epoll_pwait2 on the loop's own epoll fd (the sandbox allows
 * it there alone).  A kernel without it (before 5.11) gets whole
 * milliseconds, rounded up.
 */
static int wait_events(int ep, struct epoll_event *ev, int max,
		       int64_t timeout_ns)
{
	static bool no_pwait2;
	struct timespec ts;
	int n;

	if (timeout_ns <= 0 || no_pwait2)
		return epoll_wait(ep, ev, max,
				  timeout_ns < 0 ? -1
						 : (int)((timeout_ns + 999999) /
							 1000000));
	ts.tv_sec = (time_t)(timeout_ns / 1000000000);
	ts.tv_nsec = (long)(timeout_ns % 1000000000);
	n = epoll_pwait2(ep, ev, max, &ts, NULL);
	if (n < 0 && errno == ENOSYS) {
		no_pwait2 = true;
		return wait_events(ep, ev, max, timeout_ns);
	}
	return n;
}

static int run(struct loop *l)
{
	struct epoll_event ev[16];
	bool spinning = false;
	int64_t timeout, idle_poll;
	int n, i;

	for (;;) {
		if (l->lfd < 0 && l->cfd < 0)
			return 0; /* inherited connection closed */
		/* rings or doorbells the transport looks at: when to look */
		idle_poll = l->conn ? l->tp->poll_timeout_ns(l->conn) : -1;
		timeout = idle_poll;
		if (spinning || (l->conn && l->tp->wants_poll(l->conn)))
			timeout = 0;
		n = wait_events(l->ep, ev, ARRAY_SIZE(ev), timeout);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			fatal("epoll_wait");
		}
		for (i = 0; i < n; i++)
			dispatch(l, ev[i].data.u64);
		/* a device's doorbells in shared memory count as events */
		if (l->conn)
			n += (int)l->tp->poll(l->conn, idle_poll >= 0);
		check_lost_memory(l);
		spinning = spin_round(&l->spin, n);
	}
}

/* ---- setup ------------------------------------------------------------ */

static int listen_on(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct reason why;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		fatalx("socket path too long: %s", path);
	strcpy(sa.sun_path, path);
	/* a socket left by a worker that died is replaced; nothing else */
	if (unix_socket_remove_stale(AT_FDCWD, path, &why) < 0)
		fatalx("%s: %s", path, why.msg);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		fatal("socket");
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		fatal("bind %s", path);
	if (listen(fd, 1) < 0)
		fatal("listen %s", path);
	log_info("listening on %s", path);
	return fd;
}

/* An inherited fd: a UNIX stream socket, listening or connected. */
static bool inherited_is_listening(int fd, int type)
{
	int v = 0, t = 0;
	socklen_t len = sizeof(v);

	if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
		fatal("--fd %d", fd);
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &len) < 0)
		fatal("--fd %d is not a socket", fd);
	len = sizeof(t);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &t, &len) < 0 || v != AF_UNIX ||
	    t != type)
		fatalx("fd %d is not a UNIX %s socket", fd,
		       type == SOCK_STREAM ? "stream" : "seqpacket");
	len = sizeof(v);
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &len) < 0)
		fatal("--fd %d", fd);
	return v;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: rdmagate-worker [--vm NAME] [-v] "
		   "(--socket PATH | --fd N)\n"
		   "                      (--device NAME [--port N] [LIMITS] "
		   "[--poll-budget-us N | --busy-poll]\n"
		   "                       | --test-device echo)\n"
		   "       rdmagate-worker --print-capabilities\n"
		   "  --device NAME         serve virtio-rdma on verbs device "
		   "NAME (e.g. rxe0)\n"
		   "  --port N              its port (1)\n"
		   "  --max-qp N --max-cq N --max-mr N --max-pd N --max-srq N\n"
		   "  --max-ah N --max-cqe N --max-qp-wr N --max-srq-wr N "
		   "--max-sge N\n"
		   "                        limits of the guest's objects, 0 "
		   "allowed (each clamped\n"
		   "                        to the host device's; defaults 64 "
		   "64 1024 64 16 256\n"
		   "                        4096 1024 1024 32)\n"
		   "  --poll-budget-us N    after activity, poll the rings and "
		   "host CQs for N\n"
		   "                        microseconds before sleeping "
		   "(0..10000, default 50)\n"
		   "  --busy-poll           never sleep: poll the host CQs all "
		   "the time\n"
		   "  --doorbell-poll-ms N  PVRDMA: offer the UAR BAR as "
		   "shared memory and look\n"
		   "                        for doorbells at least every N ms "
		   "when idle (1..1000,\n"
		   "                        default 50); 0: doorbells as "
		   "vfio-user messages\n"
		   "  --socket PATH         listen on PATH (a stale socket is "
		   "removed)\n"
		   "  --fd N                serve inherited fd N (listening or "
		   "connected)\n"
		   "  --broker-fd N         inherited listening socket of the "
		   "broker channel\n"
		   "                        (the broker passes it; without "
		   "it the guest's\n"
		   "                        GIDs must already be on the host)\n"
		   "  --print-capabilities  print the vhost-user backend JSON "
		   "and exit\n"
		   "  --vm NAME             log tag worker/NAME\n"
		   "  --peer-uid N --peer-gid N\n"
		   "                        accept only a frontend of this uid "
		   "or gid (and root)\n"
		   "  --selinux-level L     the MCS level of the SELinux "
		   "sandbox context\n"
		   "                        (the broker's, e.g. s0:c1,c2)\n"
		   "  --test-device echo    serve the transport TEST device\n"
		   "  --frontend vfio-user  serve a PCI function over "
		   "vfio-user (with\n"
		   "                        --test-device pci-test: its "
		   "transport TEST function)\n"
		   "  --frontend pvrdma     serve the PVRDMA function "
		   "(vmw_pvrdma) over\n"
		   "                        vfio-user on --device NAME (as "
		   "--frontend\n"
		   "                        vfio-user --device NAME does)\n"
		   "  --sandbox-debug       log forbidden syscalls instead of "
		   "dying (never in\n"
		   "                        production)\n"
		   "  -v                    debug logs\n");
}

/* --NAME N of worker_opt_nums (getopt_long() matched lo[li]). */
static void parse_num(const struct option *lo, int li, struct worker_opts *o)
{
	struct reason why;
	int row;

	row = opt_num_set(worker_opt_nums, WO_COUNT, lo[li].name, optarg, o,
			  &why);
	if (row < 0)
		fatalx("%s", why.msg);
	if (row == WO_POLL_BUDGET)
		o->poll_budget_set = true;
}

static void parse(int argc, char **argv, struct worker_opts *o)
{
	static const struct option fixed[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "socket-path", required_argument, NULL, 's' },
		{ "print-capabilities", no_argument, NULL, 'c' },
		{ "vm", required_argument, NULL, 'm' },
		{ "test-device", required_argument, NULL, 't' },
		{ "device", required_argument, NULL, 'D' },
		{ "frontend", required_argument, NULL, 'F' },
		{ "busy-poll", no_argument, NULL, 'B' },
		{ "sandbox-debug", no_argument, NULL, 'S' },
		{ "selinux-level", required_argument, NULL, 'L' },
#if RDMAGATE_TEST_HOOKS
		{ "test-forbidden-syscall", required_argument, NULL, 'X' },
#endif
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	/* the numeric options come from worker/opts.c */
	struct option lo[ARRAY_SIZE(fixed) + WO_COUNT];
	int c, li;

	if (opt_num_longopts(lo, ARRAY_SIZE(lo), fixed, worker_opt_nums,
			     WO_COUNT) < 0)
		fatalx("the option table is too small");
	while ((c = getopt_long(argc, argv, "vh", lo, &li)) != -1) {
		switch (c) {
		case OPT_NUM_VAL:
			parse_num(lo, li, o);
			break;
		case 's':
			o->socket_path = optarg;
			break;
		case 'c':
			o->print_caps = true;
			break;
		case 'm':
			o->vm = optarg;
			break;
		case 't':
			o->test_device = optarg;
			break;
		case 'D':
			o->device = optarg;
			break;
		case 'F':
			o->frontend = optarg;
			break;
		case 'B':
			o->busy_poll = true;
			break;
		case 'S':
			o->sandbox_debug = true;
			break;
		case 'L':
			sandbox_selinux_set_level(optarg); /* argv: lives on */
			break;
#if RDMAGATE_TEST_HOOKS
		case 'X':
			o->test_syscall = optarg;
			break;
#endif
		case 'v':
			o->verbose = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind != argc) {
		usage(stderr);
		exit(2);
	}
	if (o->busy_poll && o->poll_budget_set)
		fatalx("give one of --busy-poll and --poll-budget-us");
	/* the sandbox lets SO_PEERCRED through for the broker channel */
	if ((o->peer_uid >= 0 || o->peer_gid >= 0) && o->broker_fd < 0)
		fatalx("--peer-uid and --peer-gid need --broker-fd");
}

/*
 * Defence in depth for guest RAM, besides MADV_DONTDUMP on every guest
 * mapping and the broker's limit at spawn: no core file at all, so a
 * crash or a SIGSYS kill never writes what the guest had in memory.  And a
 * frontend that shrinks a mapped file must not kill us (guest_mem.h).
 */
static void harden_process(void)
{
	const struct rlimit zero = { 0, 0 };

	if (setrlimit(RLIMIT_CORE, &zero) < 0)
		fatal("setrlimit(RLIMIT_CORE, 0)");
	if (gm_sigbus_install() < 0)
		fatal("installing the SIGBUS handler");
}

static void set_log_tag(const struct worker_opts *o)
{
	char tag[64];

	snprintf(tag, sizeof(tag), "worker%s%s", o->vm ? "/" : "",
		 o->vm ? o->vm : "");
	log_init(tag, o->verbose ? LOG_LVL_DEBUG : LOG_LVL_INFO);
}

/* --device NAME: found at startup, opened once the credentials are final. */
static struct rdma_hca hca;

/*
 * The verbs backend's configuration for --device NAME: the host device
 * found before any guest input (the sandbox forbids sysfs later), the
 * quotas, counters, broker and mux. Both frontends run on it.
 */
static void backend_cfg(const struct worker_opts *o, struct loop *l,
			struct be_cfg *be)
{
	struct reason why;

	if (rdma_hca_find(o->device, o->port, &hca, &why) < 0)
		fatalx("cannot serve verbs device '%s' port %u: %s", o->device,
		       o->port, why.msg);
	be->hca = &hca;
	be->lim = o->lim;
	be->counters = &counters;
	be->gids = &broker_link_gid_claims;
	be->gids_arg = &l->broker;
	be->mux = &l->mux;
	l->mux.counters = &counters;
	l->broker.on_mux_channel = mux_channel;
	l->broker.mux_arg = l;
}

/*
 * Opens the device found by backend_cfg(), after the worker's last
 * credential change (its SELinux setcon()): the kernel refuses a verbs
 * write() on an fd opened with other credentials, and rxe posts through
 * write(). Returns its command fd, the one fd the verbs ioctls may use, or
 * -1 without --device.
 */
static int open_device(const struct worker_opts *o)
{
	struct reason why;

	if (!o->device)
		return -1;
	if (rdma_hca_open(&hca, &why) < 0)
		fatalx("cannot serve verbs device '%s' port %u: %s", o->device,
		       o->port, why.msg);
	return hca.ctx->cmd_fd;
}

/* The loop's adaptive polling, on the frontend's flag (NULL: none). */
static void spin_setup(const struct worker_opts *o, struct loop *l,
		       bool *polling)
{
	uint32_t us = o->poll_budget_set ? o->poll_budget_us
					 : POLICY_POLL_BUDGET_DEFAULT_US;

	l->spin.budget_ns = (uint64_t)us * 1000u;
	l->spin.polling = polling;
	l->spin.always = o->busy_poll;
}

/* virtio-rdma on host verbs (docs/worker.md). */
static const struct device_ops *serve_virtio_rdma(const struct worker_opts *o,
						  struct loop *l)
{
	static struct vrdma_cfg cfg;

	backend_cfg(o, l, &cfg.be);
	cfg.busy_poll = o->busy_poll;
	spin_setup(o, l, &cfg.busy_poll);
	dev_env.cfg = &cfg;
	return &rdma_device_ops;
}

/* --test-device echo: vhost-user's test device. */
static const struct device_ops *serve_echo(const struct worker_opts *o,
					   struct loop *l)
{
	static struct echo_cfg echo;

	log_warnx("serving the transport TEST device 'echo' (copies each "
		  "request back), not virtio-rdma");
	/* its chains count as commands: the work the spin watches */
	echo.busy_poll = o->busy_poll;
	echo.served = &counters.commands;
	spin_setup(o, l, &echo.busy_poll);
	dev_env.cfg = &echo;
	return &echo_device_ops;
}

/* The PVRDMA function on host verbs (docs/pvrdma.md). */
static const struct pci_fn_ops *serve_pvrdma(const struct worker_opts *o,
					     struct loop *l)
{
	static struct pvrdma_cfg cfg;
	struct reason why;

	backend_cfg(o, l, &cfg.be);
	cfg.busy_poll = o->busy_poll;
	spin_setup(o, l, &cfg.busy_poll);
	cfg.mac[0] = 0x02; /* locally administered: a node GUID only */
	cfg.uar_fd = -1;
	cfg.doorbell_poll_ms = o->doorbell_poll_ms;
	if (o->doorbell_poll_ms && pvrdma_uar_shm_open(&cfg, &why) < 0)
		fatalx("PVRDMA doorbells in shared memory: %s", why.msg);
	dev_env.cfg = &cfg;
	return &pvrdma_fn_ops;
}

/* --test-device pci-test: vfio-user's test function. */
static const struct pci_fn_ops *serve_pci_test(void)
{
	log_warnx("serving the vfio-user transport TEST function '%s', not "
		  "PVRDMA",
		  pci_test_fn_ops.name);
	return &pci_test_fn_ops;
}

/*
 * The transport and the device model the command line names
 * (worker_opts_split()), each model set up on the loop.
 */
static void pick(const struct worker_opts *o, struct loop *l)
{
	enum worker_transport t;
	enum worker_model m;
	struct reason why;

	if (worker_opts_split(o, &t, &m, &why) < 0)
		fatalx("%s", why.msg);
	l->tp = t == WT_VFIO_USER ? &vfio_user_transport
				  : &vhost_user_transport;
	switch (m) {
	case WM_VIRTIO_RDMA:
		l->model = serve_virtio_rdma(o, l);
		break;
	case WM_ECHO:
		l->model = serve_echo(o, l);
		break;
	case WM_PVRDMA:
		l->model = serve_pvrdma(o, l);
		break;
	case WM_PCI_TEST:
		l->model = serve_pci_test();
		break;
	}
}

/* The broker channel: its listening socket, accepted connections later. */
static void broker_setup(struct loop *l, const struct worker_opts *o)
{
	struct broker_link *bl = &l->broker;

	if (!inherited_is_listening(o->broker_fd, SOCK_SEQPACKET))
		fatalx("--broker-fd %d: not a listening socket", o->broker_fd);
	if (fcntl(o->broker_fd, F_SETFL, O_NONBLOCK) < 0 ||
	    fcntl(o->broker_fd, F_SETFD, FD_CLOEXEC) < 0)
		fatal("--broker-fd %d", o->broker_fd);
	bl->lfd = o->broker_fd;
	bl->ep = l->ep;
	bl->conn_tag = mktag(TAG_BROKER, 0);
	bl->vm = o->vm ? o->vm : "";
	bl->counters = &counters;
	if (ep_add(l->ep, bl->lfd, mktag(TAG_BROKER_LISTEN, 0)) < 0)
		fatal("epoll_ctl");
}

/*
 * The seccomp allow-list (docs/sandbox.md), loaded once the device is open
 * and the sockets exist, before the event loop reads any guest input. A
 * worker that cannot confine itself does not serve.
 */
static void enter_sandbox(const struct loop *l, int cmd_fd, bool debug)
{
	struct sandbox_worker_params p;

	sandbox_worker_params_init(&p);
	p.cmd_fd = cmd_fd;
	p.epoll_fd = l->ep;
	p.listen_fd = l->lfd;
	/* an inherited connection is the only socket: name it */
	p.vu_fd = l->lfd < 0 ? l->cfd : -1;
	p.broker_fd = l->broker.lfd;
	p.debug = debug;
	/* exit() must not flush stdio under the filter */
	fflush(stdout);
	/*
	 * No transparent huge pages for the worker's own memory: its object
	 * tables are calloc'ed at their limits and mostly untouched, and one
	 * write into a 2 MiB-aligned stretch of them made the kernel back it
	 * with a whole huge page (19 of 64 workers held 2 MiB more anonymous
	 * memory, docs/benchmarks.md "Scale").  Guest RAM is the VMM's memfd,
	 * pinned by the HCA whatever the worker's mapping.
	 */
	if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) < 0)
		log_warn("PR_SET_THP_DISABLE");
	/*
	 * The loop's sub-millisecond sleeps (a PCI function polling its
	 * doorbells every 50 us while warm) mean what they say: the default
	 * slack of 50 us would double them.
	 */
	if (prctl(PR_SET_TIMERSLACK, WORKER_TIMER_SLACK_NS, 0, 0, 0) < 0)
		log_warn("PR_SET_TIMERSLACK");
	if (sandbox_install_worker_filter(&p) < 0)
		fatalx("cannot install the seccomp filter; refusing to serve "
		       "unconfined");
	if (debug)
		log_warnx("sandbox in DEBUG mode: forbidden syscalls are "
			  "logged and fail, the worker is not killed");
	else
		log_info("seccomp allow-list installed");
}

#if RDMAGATE_TEST_HOOKS
/*
 * Test-only (-Dtest_hooks=true, never in release builds): makes syscall
 * name under the sandbox, all arguments 0.  The filter must kill the
 * worker with SIGSYS; if the call returns, exit status 3 says so.
 */
static void test_forbidden_syscall(const char *name)
{
	int nr = seccomp_syscall_resolve_name(name);
	long r;

	if (nr == __NR_SCMP_ERROR)
		fatalx("--test-forbidden-syscall: unknown syscall '%s'", name);
	log_warnx("TEST HOOK: calling %s (%d) under the sandbox", name, nr);
	r = syscall(nr, 0, 0, 0, 0, 0, 0);
	log_warnx("TEST HOOK: %s returned %ld: the filter allowed it", name, r);
	_exit(3);
}

/*
 * Test-only: the forbidden actions of tests/vm/selinux, made with real
 * arguments in the SELinux sandbox domain BEFORE the seccomp filter, so
 * that SELinux alone decides.  Each returns 0 or -errno.
 */
static int probe_open(void)
{
	int fd = open("/etc/passwd", O_RDONLY | O_CLOEXEC); /* DAC: 0644 */

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

static int probe_connect(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int r = 0;

	if (fd < 0)
		return -errno;
	snprintf(a.sun_path, sizeof(a.sun_path), "/run/rdmagate/control");
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		r = -errno;
	close(fd);
	return r;
}

/*
 * The broker (root) is refused by DAC before SELinux is asked; kill(-1)
 * reaches every process of the worker's own uid, where SELinux decides
 * (EACCES; DAC refusals are not counted by the kernel).
 */
static int probe_kill(void)
{
	if (kill(getppid(), 0) == 0)
		return 0;
	log_warnx("TEST HOOK: kill(broker %d, 0): %s", (int)getppid(),
		  strerror(errno));
	return kill(-1, 0) < 0 ? -errno : 0;
}

static const struct {
	const char *name;
	int (*fn)(void);
	const char *what;
} selinux_probes[] = {
	{ "selinux_open", probe_open, "open /etc/passwd" },
	{ "selinux_connect", probe_connect,
	  "socket(AF_UNIX) and connect /run/rdmagate/control" },
	{ "selinux_kill", probe_kill, "kill(-1, 0)" },
};

/* Runs the probe NAME names, if it is one, and exits: 0 if refused. */
static void test_selinux_probe(const char *name)
{
	size_t i;
	int r;

	for (i = 0; i < sizeof(selinux_probes) / sizeof(selinux_probes[0]);
	     i++) {
		if (strcmp(name, selinux_probes[i].name))
			continue;
		r = selinux_probes[i].fn();
		log_warnx("TEST HOOK: %s: %s: %s", name, selinux_probes[i].what,
			  r < 0 ? strerror(-r) : "ALLOWED");
		_exit(r < 0 ? 0 : 3);
	}
}
#endif

int main(int argc, char **argv)
{
	int cmd_fd = -1;
	struct worker_opts o = { .fd = -1,
				 .broker_fd = -1,
				 .port = 1,
				 .peer_uid = -1,
				 .peer_gid = -1,
				 .doorbell_poll_ms =
					 POLICY_DOORBELL_POLL_DEFAULT_MS };
	struct loop l = { .lfd = -1,
			  .cfd = -1,
			  .broker = BROKER_LINK_NONE,
			  .mux = QP1_CHAN_NONE };
	struct reason why;
	unsigned int i;

	for (i = 0; i < MAX_DEV_WATCHES; i++)
		l.watches[i].fd = -1;
	be_limits_default(&o.lim);
	parse(argc, argv, &o);
	peer_uid = o.peer_uid;
	peer_gid = o.peer_gid;
	set_log_tag(&o);
	harden_process();
	if (o.vm)
		rdmagate_probe_vm = o.vm; /* argv: lives as long as we do */
	if (o.print_caps) {
		printf("{\n  \"type\": \"rdma\",\n  \"features\": []\n}\n");
		return 0;
	}
	if (!o.socket_path == (o.fd < 0))
		fatalx("give exactly one of --socket PATH and --fd N");
	pick(&o, &l);
	signal(SIGPIPE, SIG_IGN);
	l.ep = epoll_create1(EPOLL_CLOEXEC);
	if (l.ep < 0)
		fatal("epoll_create1");
	if (o.broker_fd >= 0)
		broker_setup(&l, &o);
	if (o.socket_path)
		l.lfd = listen_on(o.socket_path);
	else if (inherited_is_listening(o.fd, SOCK_STREAM))
		l.lfd = o.fd;
	/*
	 * SELinux first: setcon() writes /proc, which seccomp then forbids;
	 * the device after it, with the credentials it serves with.
	 */
	if (sandbox_selinux_enter(&why) < 0)
		fatalx("cannot enter the SELinux sandbox domain: %s", why.msg);
	cmd_fd = open_device(&o);
	/* an inherited connection starts its device: after the open */
	if (l.lfd < 0 && conn_open(&l, o.fd) < 0)
		fatalx("cannot set up the device");
	if (l.lfd >= 0 && ep_add(l.ep, l.lfd, mktag(TAG_LISTEN, 0)) < 0)
		fatal("epoll_ctl");
#if RDMAGATE_TEST_HOOKS
	if (o.test_syscall)
		test_selinux_probe(o.test_syscall);
#endif
	enter_sandbox(&l, cmd_fd, o.sandbox_debug);
#if RDMAGATE_TEST_HOOKS
	if (o.test_syscall)
		test_forbidden_syscall(o.test_syscall);
#endif
	return run(&l);
}
