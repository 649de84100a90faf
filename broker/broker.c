// SPDX-License-Identifier: MIT
/*
 * rdmagate-broker: the privileged daemon that spawns, lists, stops and
 * reaps the sandboxed per-VM workers on request over its control socket.
 * This file: options, the broker's own capability set, the policy
 * (load, reload), and the event loop (epoll + signalfd).
 */
#include <cap-ng.h>
#include <systemd/sd-daemon.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "broker/broker.h"
#include "common/cleanup.h"
#include "common/log.h"
#include "config.h"
#define RDMAGATE_PROBES_DEFINE /* the broker's semaphores live here */
#include "common/probes.h"

#define DEFAULT_POLICY "/etc/rdmagate/policy.conf"
#define DEFAULT_WORKER RDMAGATE_WORKER_PATH
#define DEFAULT_CGROUP "/sys/fs/cgroup"

static struct broker B;

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: rdmagate-broker [--policy FILE] [--worker PATH] "
		"[--control PATH]\n"
		"                       [--cgroup-root PATH] [--state-dir "
		"DIR]\n"
		"                       [--mux PATH] [--stop-workers-on-exit] "
		"[-v]\n"
		"  --policy FILE       the policy (" DEFAULT_POLICY ")\n"
		"  --worker PATH       rdmagate-worker (" DEFAULT_WORKER ")\n"
		"  --control PATH      the control socket (default: the "
		"policy's control_socket)\n"
		"  --cgroup-root PATH  the cgroup2 mount (" DEFAULT_CGROUP ")\n"
		"  --state-dir DIR     workers' records and channels, kept "
		"across restarts\n"
		"                      (" BROKER_DEFAULT_STATE_DIR ")\n"
		"  --mux PATH          rdmagate-mux's control socket (default: "
		"none: no mux,\n"
		"                      guests' QP1 MADs are dropped)\n"
		"  --stop-workers-on-exit  stop every worker when the broker "
		"exits (default:\n"
		"                      they keep serving and the next broker "
		"re-adopts them)\n"
		"  -v                  debug logs\n");
}

static void parse(int argc, char **argv, struct broker *b)
{
	static const struct option lo[] = {
		{ "policy", required_argument, NULL, 'p' },
		{ "worker", required_argument, NULL, 'w' },
		{ "control", required_argument, NULL, 'c' },
		{ "cgroup-root", required_argument, NULL, 'g' },
		{ "state-dir", required_argument, NULL, 'S' },
		{ "stop-workers-on-exit", no_argument, NULL, 'X' },
		{ "mux", required_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool verbose = false;
	int c;

	b->policy_path = DEFAULT_POLICY;
	b->worker_path = DEFAULT_WORKER;
	b->cgroup_root = DEFAULT_CGROUP;
	b->state_dir = BROKER_DEFAULT_STATE_DIR;
	while ((c = getopt_long(argc, argv, "vh", lo, NULL)) != -1) {
		switch (c) {
		case 'p':
			b->policy_path = optarg;
			break;
		case 'w':
			b->worker_path = optarg;
			break;
		case 'c':
			b->control_opt = optarg;
			break;
		case 'g':
			b->cgroup_root = optarg;
			break;
		case 'S':
			b->state_dir = optarg;
			break;
		case 'X':
			b->stop_on_exit = true;
			break;
		case 'M':
			b->mux_path = optarg;
			break;
		case 'v':
			verbose = true;
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
	log_init("broker", verbose ? LOG_LVL_DEBUG : LOG_LVL_INFO);
	if (b->worker_path[0] != '/')
		fatalx("--worker %s: give an absolute path", b->worker_path);
	if (b->mux_path && b->mux_path[0] != '/')
		fatalx("--mux %s: give an absolute path", b->mux_path);
	if (b->state_dir[0] != '/')
		fatalx("--state-dir %s: give an absolute path", b->state_dir);
}

/* ---- policy ---------------------------------------------------------------
 */

static int load_policy(struct broker *b, struct policy **ret,
		       struct reason *why)
{
	struct policy_error err = { 0 };
	unsigned int i;
	int ret_;

	ret_ = policy_load(b->policy_path, POLICY_LOAD_STRICT, ret, &err);
	if (ret_ == 0)
		return 0;
	for (i = 0; i < err.kept; i++)
		log_warnx("%s", err.e[i].msg);
	if (err.n > err.kept)
		log_warnx("... and %u more", err.n - err.kept);
	return reason_fail(
		why, ret_, "%s%s", err.kept ? err.e[0].msg : strerror(-ret_),
		err.n > 1 ? " (and more: see the broker's log)" : "");
}

int broker_reload(struct broker *b, struct reason *why)
{
	struct policy *p = NULL;
	int ret = load_policy(b, &p, why);

	if (ret < 0) {
		log_warnx("reload of %s refused; the old policy stays",
			  b->policy_path);
		return ret;
	}
	if (!b->control_opt &&
	    strcmp(policy_broker(p)->control_socket, b->control_path))
		log_warnx("control_socket changed to %s: it takes effect at "
			  "the next start",
			  policy_broker(p)->control_socket);
	policy_free(b->pol);
	b->pol = p;
	control_apply_group(b);
	/* a socket_dir the reload names is the broker's from now on */
	socket_dir_make(b);
	reason_set(why, "reloaded %s: %zu VMs", b->policy_path,
		   policy_vm_count(p));
	log_info("reloaded %s: %zu VMs; running workers keep their settings",
		 b->policy_path, policy_vm_count(p));
	return 0;
}

/* ---- privileges -----------------------------------------------------------
 */

/*
 * What the broker keeps (docs/broker.md): SETUID, SETGID, SETPCAP for the
 * workers' privilege drop, CHOWN for their sockets, DAC_OVERRIDE to make
 * them in callers' directories, KILL to stop workers, SYS_RESOURCE for
 * RLIMIT_MEMLOCK above the hard limit, NET_ADMIN for the guests' addresses,
 * SYS_NICE for a negative worker_nice.
 */
static void drop_own_caps(void)
{
	static const struct {
		int cap;
		const char *name;
	} keep[] = {
		{ CAP_SETUID, "setuid" },
		{ CAP_SETGID, "setgid" },
		{ CAP_SETPCAP, "setpcap" },
		{ CAP_CHOWN, "chown" },
		{ CAP_DAC_OVERRIDE, "dac_override" },
		{ CAP_KILL, "kill" },
		{ CAP_SYS_RESOURCE, "sys_resource" },
		{ CAP_NET_ADMIN, "net_admin" },
		{ CAP_SYS_NICE, "sys_nice" },
	};
	bool have[ARRAY_SIZE(keep)];
	unsigned int i;

	if (geteuid() != 0) {
		log_warnx("not running as root: spawning workers will fail");
		return;
	}
	if (capng_get_caps_process() < 0)
		fatalx("cannot read the broker's capabilities");
	for (i = 0; i < ARRAY_SIZE(keep); i++)
		have[i] = capng_have_capability(CAPNG_PERMITTED, keep[i].cap);
	capng_clear(CAPNG_SELECT_BOTH);
	for (i = 0; i < ARRAY_SIZE(keep); i++) {
		if (!have[i]) {
			log_warnx("capability %s is not available to the "
				  "broker%s",
				  keep[i].name,
				  keep[i].cap == CAP_SYS_RESOURCE
					  ? ": max_pinned above the hard "
					    "RLIMIT_MEMLOCK will fail"
				  : keep[i].cap == CAP_SYS_NICE
					  ? ": a negative worker_nice will "
					    "fail"
					  : "");
			continue;
		}
		if (capng_update(CAPNG_ADD,
				 CAPNG_EFFECTIVE | CAPNG_PERMITTED |
					 CAPNG_BOUNDING_SET,
				 (unsigned int)keep[i].cap) < 0)
			fatalx("capng_update");
	}
	if (capng_apply(CAPNG_SELECT_BOTH) < 0)
		fatalx("cannot reduce the broker's capabilities");
	log_info("capabilities cut to setuid setgid setpcap chown "
		 "dac_override kill sys_resource net_admin sys_nice (those "
		 "available)");
}

/* ---- the loop --------------------------------------------------------------
 */

static int signals_open(int ep)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = TAG_SIGNAL };
	sigset_t set;
	int fd;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		fatal("sigprocmask");
	fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (fd < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0)
		fatal("signalfd");
	return fd;
}

static void on_signal(struct broker *b)
{
	struct signalfd_siginfo si;

	while (read(b->sfd, &si, sizeof(si)) == sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGCHLD:
			workers_reap(b);
			break;
		case SIGHUP:
			log_info("SIGHUP: reloading %s", b->policy_path);
			broker_reload(b, NULL);
			break;
		default:
			log_info("SIG%s: stopping",
				 sigabbrev_np((int)si.ssi_signo));
			b->quit = true;
		}
	}
}

static void dispatch(struct broker *b, uint64_t tag, uint32_t events)
{
	switch (tag >> 32 ? tag >> 32 : tag) {
	case TAG_SIGNAL:
		on_signal(b);
		break;
	case TAG_LISTEN:
		control_accept(b);
		break;
	case TAG_CONN:
		control_event(b, (unsigned int)tag, events);
		break;
	case TAG_CHANNEL:
		channel_read(b, (unsigned int)tag);
		break;
	case TAG_PIDFD:
		workers_pidfd(b, (unsigned int)tag);
		break;
	case TAG_MUX:
		mux_link_read(b);
		break;
	case TAG_WLOG:
		worker_log_read(b, (unsigned int)tag);
		break;
	case TAG_ADDRS:
		gids_watch_read(b);
		break;
	}
}

/* The soonest of the timeouts (-1: none). */
static int min_timeout(int a, int c)
{
	if (a < 0)
		return c;
	if (c < 0)
		return a;
	return a < c ? a : c;
}

/*
 * systemd's watchdog (WatchdogSec= in the unit): WATCHDOG=1 from the loop
 * itself, at half the interval systemd gives, so that a broker whose loop
 * is stuck (or stopped) is restarted.  Workers do not depend on it: they
 * live in their own cgroups and are adopted by the next broker.
 */
static uint64_t watchdog_every_ms, watchdog_next_ms;

static void watchdog_init(void)
{
	uint64_t usec = 0;

	if (sd_watchdog_enabled(0, &usec) <= 0 || usec < 2000)
		return;
	watchdog_every_ms = usec / 2000;
	watchdog_next_ms = mono_ms();
	log_info("systemd watchdog: %llu ms, WATCHDOG=1 every %llu ms",
		 (unsigned long long)(usec / 1000),
		 (unsigned long long)watchdog_every_ms);
}

/* Pings when due; returns the ms until the next ping (-1: no watchdog). */
static int watchdog_tick(void)
{
	uint64_t now;

	if (!watchdog_every_ms)
		return -1;
	now = mono_ms();
	if (now >= watchdog_next_ms) {
		sd_notify(0, "WATCHDOG=1");
		watchdog_next_ms = now + watchdog_every_ms;
	}
	return (int)(watchdog_next_ms - now);
}

static void run(struct broker *b)
{
	struct epoll_event ev[16];
	int n, i, t;

	while (!b->quit) {
		t = min_timeout(watchdog_tick(), workers_timeout(b));
		t = min_timeout(t, gids_timeout(b));
		t = min_timeout(t, stats_timeout(b));
		t = min_timeout(t, mux_link_timeout(b));
		t = min_timeout(t, control_timeout(b));
		t = min_timeout(t, channel_timeout(b));
		n = epoll_wait(b->ep, ev, ARRAY_SIZE(ev), t);
		if (n < 0 && errno != EINTR)
			fatal("epoll_wait");
		for (i = 0; i < n; i++)
			dispatch(b, ev[i].data.u64, ev[i].events);
		workers_kill_timed_out(b);
		gids_poll(b);
		stats_check(b);
		mux_link_tick(b);
		control_close_idle(b);
		channel_retry(b);
	}
}

int main(int argc, char **argv)
{
	struct broker *b = &B;
	struct reason why;
	unsigned int i;

	b->lfd = b->sfd = b->mux_fd = -1;
	for (i = 0; i < BROKER_MAX_CONNS; i++)
		b->conns[i].fd = -1;
	parse(argc, argv, b);
	if (load_policy(b, &b->pol, &why) < 0)
		fatalx("cannot start without a valid policy: %s", why.msg);
	signal(SIGPIPE, SIG_IGN);
	if (chdir("/") < 0)
		fatal("chdir /");
	b->ep = epoll_create1(EPOLL_CLOEXEC);
	if (b->ep < 0)
		fatal("epoll_create1");
	b->sfd = signals_open(b->ep);
	cgroup_detect(b);
	if (state_init(b) < 0)
		fatalx("cannot use the state directory %s", b->state_dir);
	if (socket_dir_make(b) < 0)
		log_warnx(
			"until socket_dir is usable, only root can spawn, "
			"naming a socket in a directory only root may change");
	if (gids_open(b) < 0)
		log_warnx("no rtnetlink: guests' GIDs cannot be added");
	/* workers a previous broker left running */
	state_adopt(b);
	/* the mux: connected (or retried) in the loop, never waited for */
	if (mux_link_open(b) < 0)
		fatalx("--mux %s: too long for a socket path", b->mux_path);
	if (control_open(b) < 0)
		fatalx("cannot open the control socket");
	drop_own_caps();
	log_info("rdmagate-broker %s ready: policy %s, %zu VMs, worker %s%s",
		 RDMAGATE_VERSION, b->policy_path, policy_vm_count(b->pol),
		 b->worker_path,
		 RDMAGATE_TEST_HOOKS ? " (TEST HOOKS BUILD)" : "");
	sd_notifyf(0, "READY=1\nSTATUS=%u workers", workers_count(b));
	watchdog_init();
	run(b);
	sd_notify(0, "STOPPING=1");
	workers_stop_all(b);
	mux_link_close(b);
	gids_close(b);
	control_close(b);
	policy_free(b->pol);
	log_info("stopped");
	return 0;
}
