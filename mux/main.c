// SPDX-License-Identifier: MIT
/*
 * rdmagate-mux: the CM MAD multiplexer (docs/mux.md).  Runs as root, or
 * as --user after opening its umad ports; owns /dev/infiniband/umad* for
 * the ports the broker assigns (and --port), registers the CM class on
 * each, and moves CM MADs between the wire and the workers' socketpairs,
 * as mux/router.c decides.  One thread, one epoll loop; nothing in it
 * blocks on a worker.  This file: options, set-up and the loop; the
 * ports, the workers and the broker's socket have a file each (mux.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <infiniband/umad.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "config.h"

#define RDMAGATE_PROBES_DEFINE /* the mux's semaphores live here */
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/mux_proto.h"
#include "common/probes.h"
#include "common/unix_socket.h"
#include "mux/mux.h"
#include "mux/opts.h"
#include "mux/router.h"
#include "common/privdrop.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rdmagate-mux [--control PATH] [--port DEV:PORT]... "
		"[--user USER]\n"
		"                    [--id-ttl SECS] [--conn-ttl SECS] [-v]\n"
		"  --control PATH   the broker's socket (default %s)\n"
		"  --port DEV:PORT  open and register this port at start "
		"(repeatable; the\n"
		"                   broker's PORT_ADD opens the others)\n"
		"  --user USER      after opening the --port ports, switch to "
		"USER with no\n"
		"                   capabilities\n"
		"  --id-ttl SECS    a handshake's id lives SECS after its last "
		"MAD (60)\n"
		"  --conn-ttl SECS  an established connection's id lives SECS "
		"(86400)\n"
		"  -v, --verbose    debug lines\n"
		"exit status: 0 SIGTERM, 1 error, 2 usage, 3 the kernel's "
		"ib_cm owns the CM class\n",
		RDMAGATE_MUX_DEFAULT_SOCKET);
}

int ep_add(struct mux *m, int fd, uint64_t tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = tag };

	return epoll_ctl(m->ep, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

int ep_mod(struct mux *m, int fd, uint64_t tag, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.u64 = tag };

	return epoll_ctl(m->ep, EPOLL_CTL_MOD, fd, &ev) < 0 ? -errno : 0;
}

void ep_del_close(struct mux *m, int *fd)
{
	if (*fd < 0)
		return;
	epoll_ctl(m->ep, EPOLL_CTL_DEL, *fd, NULL);
	*fd = safe_close(*fd);
}

static void setup_signals(struct mux *m)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		fatal("sigprocmask");
	signal(SIGPIPE, SIG_IGN);
	m->sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (m->sfd < 0 || ep_add(m, m->sfd, TAG_SIGNAL) < 0)
		fatal("signalfd");
}

static void setup_timer(struct mux *m)
{
	struct itimerspec its = { { 1, 0 }, { 1, 0 } };

	m->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (m->tfd < 0 || timerfd_settime(m->tfd, 0, &its, NULL) < 0 ||
	    ep_add(m, m->tfd, TAG_TIMER) < 0)
		fatal("timerfd");
}

static void drop_privileges(struct mux *m)
{
	struct passwd *pw;

	if (!m->user) {
		if (geteuid() == 0)
			log_info("running as root (no --user)");
		return;
	}
	if (geteuid() != 0)
		fatalx("--user %s: only root can switch users", m->user);
	pw = getpwnam(m->user);
	if (!pw)
		fatalx("--user %s: no such user", m->user);
	if (privdrop_to(pw->pw_uid, pw->pw_gid) < 0)
		fatalx("--user %s: dropping privileges failed", m->user);
	log_info("running as %s (uid %u), no capabilities; keeps the umad "
		 "fds and the control socket",
		 m->user, pw->pw_uid);
}

static void parse_port(struct mux *m, const char *s)
{
	char dev[MP_DEVICE_SIZE];
	struct reason why;
	const char *colon = strrchr(s, ':');
	unsigned long num;
	char *end;
	int ret;

	if (!colon || (size_t)(colon - s) >= sizeof(dev))
		fatalx("--port %s: not DEVICE:PORT", s);
	memcpy(dev, s, (size_t)(colon - s));
	dev[colon - s] = '\0';
	errno = 0;
	num = strtoul(colon + 1, &end, 10);
	if (errno || *end || num < 1 || num > MP_PORT_MAX ||
	    !mp_device_name_ok(dev))
		fatalx("--port %s: not DEVICE:PORT (port 1..%u)", s,
		       MP_PORT_MAX);
	ret = port_open(m, dev, (uint32_t)num, &why);
	if (ret == -EBUSY)
		port_cm_taken(dev, (uint32_t)num);
	if (ret < 0)
		fatalx("%s", why.msg);
}

int main(int argc, char **argv)
{
	static const struct option fixed[] = {
		{ "control", required_argument, NULL, 'c' },
		{ "port", required_argument, NULL, 'p' },
		{ "user", required_argument, NULL, 'u' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	/* the numeric options come from mux/opts.c */
	struct option lo[ARRAY_SIZE(fixed) + MO_COUNT];
	const char *ports[MAX_PORTS];
	static struct mux m;
	size_t nports = 0, i;
	struct reason why;
	int c, li;

	router_config_default(&m.rc);
	m.control_path = RDMAGATE_MUX_DEFAULT_SOCKET;
	m.ep = m.lfd = m.bfd = m.sfd = m.tfd = -1;
	m.rl_none =
		(struct ratelimit)RATELIMIT_WINDOW(LOG_WINDOW_MS, LOG_BURST);
	if (opt_num_longopts(lo, ARRAY_SIZE(lo), fixed, mux_opt_nums,
			     MO_COUNT) < 0)
		fatalx("the option table is too small");
	while ((c = getopt_long(argc, argv, "vh", lo, &li)) != -1) {
		switch (c) {
		case OPT_NUM_VAL:
			if (opt_num_set(mux_opt_nums, MO_COUNT, lo[li].name,
					optarg, &m.rc, &why) < 0)
				fatalx("%s", why.msg);
			break;
		case 'c':
			m.control_path = optarg;
			break;
		case 'p':
			if (nports == MAX_PORTS) {
				fprintf(stderr,
					"rdmagate-mux: at most %d "
					"--port\n",
					MAX_PORTS);
				exit(2);
			}
			ports[nports++] = optarg;
			break;
		case 'u':
			m.user = optarg;
			break;
		case 'v':
			m.verbose = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("rdmagate-mux %s (mux protocol %d)\n",
			       RDMAGATE_VERSION, RDMAGATE_MUX_VERSION);
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
	log_init("mux", m.verbose ? LOG_LVL_DEBUG : LOG_LVL_INFO);
	if (getrandom(&m.rc.hash_seed, sizeof(m.rc.hash_seed), 0) !=
	    sizeof(m.rc.hash_seed))
		fatal("getrandom");
	m.r = router_new(&m.rc);
	if (!m.r)
		fatal("router");
	m.ep = epoll_create1(EPOLL_CLOEXEC);
	if (m.ep < 0)
		fatal("epoll_create1");
	umad_init();
	for (i = 0; i < MAX_PORTS; i++)
		m.ports[i].fd = -1;
	for (i = 0; i < MAX_WORKERS; i++)
		m.workers[i].fd = -1;
	for (i = 0; i < nports; i++)
		parse_port(&m, ports[i]);
	control_open(&m);
	setup_signals(&m);
	setup_timer(&m);
	drop_privileges(&m);
	log_info("ready (mux protocol %d; id ttl %llu s, connection ttl %llu "
		 "s)",
		 RDMAGATE_MUX_VERSION,
		 (unsigned long long)(m.rc.id_ttl_ms / 1000),
		 (unsigned long long)(m.rc.conn_ttl_ms / 1000));

	while (!m.quit) {
		struct epoll_event ev[16];
		int n = epoll_wait(m.ep, ev, 16, -1), k;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			fatal("epoll_wait");
		}
		for (k = 0; k < n; k++) {
			uint64_t tag = ev[k].data.u64;
			size_t idx = (size_t)(tag >> 8);

			switch (tag & 0xff) {
			case TAG_LISTEN:
				broker_accept(&m);
				break;
			case TAG_BROKER:
				if (m.bfd >= 0)
					broker_readable(&m);
				break;
			case TAG_SIGNAL: {
				struct signalfd_siginfo si;

				if (read(m.sfd, &si, sizeof(si)) ==
				    sizeof(si)) {
					log_info("signal %u: exiting",
						 si.ssi_signo);
					m.quit = true;
				}
				break;
			}
			case TAG_TIMER: {
				uint64_t ticks;

				if (read(m.tfd, &ticks, sizeof(ticks)) < 0)
					break;
				router_expire(m.r, mono_ms());
				ratelimits_flush(&m);
				break;
			}
			case TAG_PORT:
				if (idx < MAX_PORTS && m.ports[idx].used)
					port_readable(&m, &m.ports[idx]);
				break;
			case TAG_WORKER:
				if (idx < MAX_WORKERS && m.workers[idx].used &&
				    m.workers[idx].fd >= 0)
					worker_readable(&m, &m.workers[idx]);
				break;
			case TAG_RDMACM_LISTEN:
				if (idx < MAX_WORKERS && m.workers[idx].used &&
				    m.workers[idx].rdmacm)
					rdmacm_on_listen(&m, &m.workers[idx]);
				break;
			case TAG_RDMACM_CLIENT:
				if (idx < MAX_WORKERS && m.workers[idx].used &&
				    m.workers[idx].rdmacm)
					rdmacm_on_client(&m, &m.workers[idx],
							 ev[k].events);
				break;
			}
		}
	}
	for (i = 0; i < MAX_WORKERS; i++) {
		safe_close(m.workers[i].fd);
		rdmacm_release(&m, &m.workers[i]);
	}
	for (i = 0; i < MAX_PORTS; i++)
		if (m.ports[i].used)
			umad_close_port(m.ports[i].fd);
	safe_close(m.bfd);
	safe_close(m.lfd);
	if (unlink(m.control_path) < 0 && errno != ENOENT)
		log_debug("leaving %s (%s)", m.control_path, strerror(errno));
	router_free(m.r);
	return 0;
}
