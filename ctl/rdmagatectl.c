// SPDX-License-Identifier: MIT
/*
 * rdmagatectl: the broker's command-line client (spawn, stop, list,
 * reload) and the policy checker, which needs no broker.  Runs
 * unprivileged; the broker decides who may do what.  The protocol's
 * client side is common/ctl_client.c (shared with the libvirt hook).
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/broker_proto.h"
#include "common/cleanup.h"
#include "common/ctl_client.h"
#include "config.h"
#include "ctl/opts.h"
#include "ctl/prom.h"
#include "policy/policy.h"

static const char *control_path = RDMAGATE_CTL_DEFAULT_SOCKET;

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: rdmagatectl [--control PATH] COMMAND ...\n"
		"  spawn --vm NAME [--socket NAME|PATH] [--device DEV] "
		"[--port N]\n"
		"        [--frontend virtio-rdma|pvrdma|qemu-pvrdma] "
		"[--address ADDR]...\n"
		"        (--socket: a file in the broker's socket_dir, default "
		"NAME.sock;\n"
		"        --address: the addresses the VM will claim)\n"
#if RDMAGATE_TEST_HOOKS
		"        [--test-echo] [--test-syscall NAME]   (test build)\n"
#endif
		"  stop --vm NAME\n"
		"  list [--json]\n"
		"  stats [--vm NAME] [--json | --prometheus [--pin-dir DIR]]\n"
		"        (the workers' counters; --prometheus: with the "
		"tracer's\n"
		"        latency histograms, for node_exporter)\n"
		"  reload\n"
		"  policy check [--strict] FILE   (no broker needed)\n"
		"  --control PATH   the broker's socket "
		"(" RDMAGATE_CTL_DEFAULT_SOCKET ")\n");
}

static __attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt,
								...)
{
	va_list ap;

	fprintf(stderr, "rdmagatectl: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(1);
}

/* ---- talking to the broker (common/ctl_client.h) ------------------------
 */

#define CTL_DIE(fn, ...)                                                       \
	do {                                                                   \
		struct reason why_;                                            \
		if (fn(__VA_ARGS__, &why_) < 0)                                \
			die("%s", why_.msg);                                   \
	} while (0)

/* Connects, checks the peer is root, and says HELLO (no timeout). */
static void connect_broker(struct ctl_conn *c)
{
	CTL_DIE(ctl_connect, c, control_path, 0);
}

/* Prints a status reply; the exit status of the command. */
static int report(const struct bp_status *st)
{
	struct reason why;

	if (ctl_status(st, &why) < 0) {
		fprintf(stderr, "rdmagatectl: %s\n", why.msg);
		return 1;
	}
	printf("%s\n", st->text);
	return 0;
}

static void set_field(char *f, size_t size, const char *s, const char *what)
{
	if (bp_set_str(f, size, s) < 0)
		die("%s '%s': longer than %zu bytes", what, s, size - 1);
}

/* ---- commands --------------------------------------------------------------
 */

/* --address: one address (not a prefix) as the policy writes it */
static void add_address(struct bp_spawn *s, const char *text)
{
	int ret = ctl_spawn_add_address(s, text);

	if (ret == -E2BIG)
		die("--address: at most %u", BP_SPAWN_ADDRS_MAX);
	if (ret < 0)
		die("--address %s: not an IPv4 or IPv6 address", text);
}

static int cmd_spawn(int argc, char **argv)
{
	static const struct option fixed[] = {
		{ "vm", required_argument, NULL, 'm' },
		{ "socket", required_argument, NULL, 's' },
		{ "device", required_argument, NULL, 'd' },
		{ "address", required_argument, NULL, 'a' },
		{ "frontend", required_argument, NULL, 'f' },
#if RDMAGATE_TEST_HOOKS
		{ "test-echo", no_argument, NULL, 'E' },
		{ "test-syscall", required_argument, NULL, 'S' },
#endif
		{ NULL, 0, NULL, 0 },
	};
	/* the numeric options come from ctl/opts.c */
	struct option lo[ARRAY_SIZE(fixed) + CO_SPAWN_COUNT];
	struct bp_msg m;
	struct bp_spawn *s = &m.u.spawn;
	struct ctl_conn conn;
	struct reason why;
	int c, li;

	if (opt_num_longopts(lo, ARRAY_SIZE(lo), fixed, ctl_spawn_opt_nums,
			     CO_SPAWN_COUNT) < 0)
		die("the option table is too small");
	bp_init(&m, BP_SPAWN);
	while ((c = getopt_long(argc, argv, "", lo, &li)) != -1) {
		switch (c) {
		case OPT_NUM_VAL:
			if (opt_num_set(ctl_spawn_opt_nums, CO_SPAWN_COUNT,
					lo[li].name, optarg, s, &why) < 0)
				die("%s", why.msg);
			break;
		case 'm':
			set_field(s->vm, sizeof(s->vm), optarg, "--vm");
			break;
		case 's':
			set_field(s->socket, sizeof(s->socket), optarg,
				  "--socket");
			break;
		case 'd':
			set_field(s->device, sizeof(s->device), optarg,
				  "--device");
			break;
		case 'a':
			add_address(s, optarg);
			break;
		case 'f':
			if (bp_frontend_parse(optarg, &s->frontend) < 0)
				die("--frontend %s: not virtio-rdma, pvrdma or "
				    "qemu-pvrdma",
				    optarg);
			break;
		case 'E':
			s->flags |= BP_SPAWN_TEST_ECHO;
			break;
		case 'S':
			set_field(s->test_syscall, sizeof(s->test_syscall),
				  optarg, "--test-syscall");
			break;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!s->vm[0] || optind != argc)
		die("spawn needs --vm NAME");
	connect_broker(&conn);
	CTL_DIE(ctl_request, &conn, &m);
	ctl_close(&conn);
	return report(&m.u.spawn_reply.st);
}

static int cmd_stop(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "vm", required_argument, NULL, 'm' },
		{ NULL, 0, NULL, 0 },
	};
	struct bp_msg m;
	struct ctl_conn conn;
	int c;

	bp_init(&m, BP_STOP);
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (c != 'm') {
			usage(stderr);
			return 2;
		}
		set_field(m.u.stop.vm, sizeof(m.u.stop.vm), optarg, "--vm");
	}
	if (!m.u.stop.vm[0] || optind != argc)
		die("stop needs --vm NAME");
	connect_broker(&conn);
	CTL_DIE(ctl_request, &conn, &m);
	ctl_close(&conn);
	return report(&m.u.status);
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20 || ch == 0x7f)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

static const char *state_name(uint32_t s)
{
	return s == BP_STATE_RUNNING	? "running"
	       : s == BP_STATE_STOPPING ? "stopping"
					: "unknown";
}

static void print_worker(const struct bp_worker_info *w, bool json, bool first)
{
	if (!json) {
		printf("%-20s %-8u %-6u %-6u %-8s %-4u %-9s %s\n", w->vm,
		       w->pid, w->uid, w->gid, w->device, w->port,
		       state_name(w->state), w->socket);
		return;
	}
	printf("%s\n  {\"vm\": ", first ? "" : ",");
	json_str(w->vm);
	printf(", \"pid\": %u, \"uid\": %u, \"gid\": %u, \"device\": ", w->pid,
	       w->uid, w->gid);
	json_str(w->device);
	printf(", \"port\": %u, \"state\": \"%s\", \"start_time\": %llu, "
	       "\"socket\": ",
	       w->port, state_name(w->state),
	       (unsigned long long)w->start_time);
	json_str(w->socket);
	printf("}");
}

static int cmd_list(int argc, char **argv)
{
	bool json = argc == 2 && !strcmp(argv[1], "--json");
	uint32_t i, total = 1;
	struct bp_msg m;
	struct ctl_conn conn;

	if (argc > 2 || (argc == 2 && !json))
		die("list takes only --json");
	connect_broker(&conn);
	bp_init(&m, BP_LIST);
	CTL_DIE(ctl_send, &conn, &m);
	if (json)
		printf("[");
	else
		printf("%-20s %-8s %-6s %-6s %-8s %-4s %-9s %s\n", "VM", "PID",
		       "UID", "GID", "DEVICE", "PORT", "STATE", "SOCKET");
	for (i = 0; i < total; i++) {
		CTL_DIE(ctl_recv, &conn, BP_LIST_REPLY, &m);
		if (m.u.list_reply.st.status)
			return report(&m.u.list_reply.st);
		if (m.u.list_reply.index != i)
			die("the broker's list is out of order");
		total = m.u.list_reply.total;
		if (total)
			print_worker(&m.u.list_reply.w, json, i == 0);
	}
	if (json)
		printf("%s]\n", total ? "\n" : "");
	ctl_close(&conn);
	return 0;
}

static int cmd_reload(int argc, char **argv)
{
	struct bp_msg m;
	struct ctl_conn conn;

	if (argc != 1)
		die("reload takes no arguments");
	connect_broker(&conn);
	bp_init(&m, BP_RELOAD);
	CTL_DIE(ctl_request, &conn, &m);
	ctl_close(&conn);
	return report(&m.u.status);
}

static int cmd_policy(int argc, char **argv)
{
	struct policy_error err = { 0 };
	struct policy *p = NULL;
	unsigned int flags = 0;
	int i = 2;

	if (argc < 3 || strcmp(argv[1], "check"))
		die("usage: rdmagatectl policy check [--strict] FILE");
	if (!strcmp(argv[i], "--strict")) {
		flags = POLICY_LOAD_STRICT;
		i++;
	}
	if (argc != i + 1)
		die("usage: rdmagatectl policy check [--strict] FILE");
	if (policy_load(argv[i], flags, &p, &err) < 0) {
		policy_error_print(&err, stderr);
		fprintf(stderr, "%s: invalid\n", argv[i]);
		return 1;
	}
	printf("%s: valid (%zu VMs)\n", argv[i], policy_vm_count(p));
	policy_free(p);
	return 0;
}

static void print_stats(const struct bp_stats_reply *r, bool json, bool first)
{
	unsigned int k;
	uint64_t v[BP_COUNTERS_N];

	memcpy(v, &r->c, sizeof(v));
	if (!json) {
		printf("%s%s (pid %u)%s\n", first ? "" : "\n", r->vm, r->pid,
		       r->flags & BP_STATS_FRESH
			       ? ""
			       : "  [STALE: the worker did not answer]");
		for (k = 0; k < BP_COUNTERS_N; k++)
			printf("  %-20s %llu\n", bp_counter_names[k],
			       (unsigned long long)v[k]);
		return;
	}
	printf("%s\n  {\"vm\": ", first ? "" : ",");
	json_str(r->vm);
	printf(", \"pid\": %u, \"fresh\": %s", r->pid,
	       r->flags & BP_STATS_FRESH ? "true" : "false");
	for (k = 0; k < BP_COUNTERS_N; k++)
		printf(", \"%s\": %llu", bp_counter_names[k],
		       (unsigned long long)v[k]);
	printf("}");
}

/*
 * Every reply to the STATS request m (one per worker), in a new array the
 * caller frees.  Exits with the broker's refusal or a broken answer.
 */
static size_t fetch_stats(struct bp_msg *m, struct bp_stats_reply **ret)
{
	_cleanup_free_ struct bp_stats_reply *r = NULL;
	uint32_t i, total = 1;
	size_t cap = 0;
	struct ctl_conn conn;

	connect_broker(&conn);
	CTL_DIE(ctl_send, &conn, m);
	for (i = 0; i < total; i++) {
		CTL_DIE(ctl_recv, &conn, BP_STATS_REPLY, m);
		if (m->u.stats_reply.st.status)
			exit(report(&m->u.stats_reply.st));
		if (m->u.stats_reply.index != i)
			die("the broker's answer is out of order");
		total = m->u.stats_reply.total;
		if (!total)
			break;
		if (i == cap) { /* grows with what arrives, not with total */
			struct bp_stats_reply *n;

			cap = cap ? 2 * cap : 16;
			n = reallocarray(r, cap, sizeof(*r));
			if (!n)
				die("out of memory");
			r = n;
		}
		r[i] = m->u.stats_reply;
	}
	ctl_close(&conn);
	*ret = TAKE_PTR(r);
	return total;
}

/*
 * The tracer's histograms pinned in dir (only VM vm's when vm is not ""),
 * in a new array the caller frees; or none, and why in note.  Not there is
 * not an error: the tracer is not running.
 */
static size_t read_hists(const char *dir, const char *vm,
			 struct rt_hist_ent **ret, char *note, size_t size)
{
	struct rt_hist_ent *h = NULL;
	struct reason why;
	size_t n = 0, i, kept = 0;
	int fd;

	fd = rt_map_open_pinned(dir, "hists", sizeof(struct rt_hist_key),
				sizeof(struct rt_hist), &why);
	if (fd == -ENOENT) {
		snprintf(note, size,
			 "no latency histograms: rdmagate-trace's maps are not "
			 "pinned in %s (the tracer is not running)",
			 dir);
	} else if (fd < 0) {
		fprintf(stderr, "rdmagatectl: warning: %s\n", why.msg);
		snprintf(note, size, "no latency histograms: %s", why.msg);
	} else if (rt_map_dump(fd, sizeof(struct rt_hist_key),
			       sizeof(struct rt_hist), RT_MAX_HISTS,
			       (void **)&h, &n) < 0) {
		die("out of memory");
	}
	if (fd >= 0)
		close(fd);
	for (i = 0; i < n; i++)
		if (!vm[0] || !strncmp(h[i].k.vm, vm, RT_VM_LEN))
			h[kept++] = h[i];
	if (kept) /* h is NULL without the maps */
		qsort(h, kept, sizeof(*h), rt_cmp_hist);
	*ret = h;
	return kept;
}

/*
 * stats --prometheus: the whole exposition is made in memory and written
 * only once everything was read, so a failure prints nothing on stdout
 * (a textfile collector's file is never cut short).
 */
static int stats_prometheus(struct bp_msg *m, const char *pin_dir)
{
	_cleanup_free_ struct bp_stats_reply *w = NULL;
	_cleanup_free_ struct rt_hist_ent *h = NULL;
	_cleanup_free_ char *buf = NULL;
	struct prom_input in = { 0 };
	char note[REASON_LEN + 128] = "", vm[BP_VM_SIZE];
	size_t len = 0;
	FILE *f;

	memcpy(vm, m->u.stats.vm, sizeof(vm)); /* m takes the replies */
	in.n_workers = fetch_stats(m, &w);
	in.workers = w;
	in.n_hists = read_hists(pin_dir, vm, &h, note, sizeof(note));
	in.hists = h;
	in.trace_note = note[0] ? note : NULL;
	f = open_memstream(&buf, &len);
	if (!f || prom_write(f, &in) < 0 || fclose(f) != 0)
		die("out of memory");
	if (fwrite(buf, 1, len, stdout) != len || fflush(stdout) != 0)
		die("writing the metrics: %s", strerror(errno));
	return 0;
}

#define STATS_USAGE                                                            \
	"usage: rdmagatectl stats [--vm NAME] [--json | --prometheus "         \
	"[--pin-dir DIR]]"

static int cmd_stats(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "vm", required_argument, NULL, 'm' },
		{ "json", no_argument, NULL, 'j' },
		{ "prometheus", no_argument, NULL, 'P' },
		{ "pin-dir", required_argument, NULL, 'd' },
		{ NULL, 0, NULL, 0 },
	};
	_cleanup_free_ struct bp_stats_reply *w = NULL;
	const char *pin_dir = NULL;
	bool json = false, prom = false;
	struct bp_msg m;
	size_t i, n;
	int c;

	bp_init(&m, BP_STATS);
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (c == 'm')
			set_field(m.u.stats.vm, sizeof(m.u.stats.vm), optarg,
				  "--vm");
		else if (c == 'j')
			json = true;
		else if (c == 'P')
			prom = true;
		else if (c == 'd')
			pin_dir = optarg;
		else
			die(STATS_USAGE);
	}
	if (optind != argc || (json && prom) || (pin_dir && !prom))
		die(STATS_USAGE);
	if (prom)
		return stats_prometheus(&m, pin_dir ? pin_dir : RT_PIN_DIR);
	n = fetch_stats(&m, &w);
	if (json)
		printf("[");
	for (i = 0; i < n; i++)
		print_stats(&w[i], json, i == 0);
	if (json)
		printf("%s]\n", n ? "\n" : "");
	return 0;
}

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} commands[] = {
	{ "stats", cmd_stats },	  { "spawn", cmd_spawn },
	{ "stop", cmd_stop },	  { "list", cmd_list },
	{ "reload", cmd_reload }, { "policy", cmd_policy },
};

int main(int argc, char **argv)
{
	unsigned int i;
	int first = 1;

	if (argc > 2 && !strcmp(argv[1], "--control")) {
		control_path = argv[2];
		first = 3;
	}
	if (argc <= first || !strcmp(argv[first], "--help") ||
	    !strcmp(argv[first], "-h")) {
		usage(argc <= first ? stderr : stdout);
		return argc <= first ? 2 : 0;
	}
	for (i = 0; i < ARRAY_SIZE(commands); i++)
		if (!strcmp(argv[first], commands[i].name)) {
			optind = 1;
			return commands[i].fn(argc - first, argv + first);
		}
	fprintf(stderr, "rdmagatectl: unknown command '%s'\n", argv[first]);
	usage(stderr);
	return 2;
}
