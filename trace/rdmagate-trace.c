// SPDX-License-Identifier: MIT
/*
 * rdmagate-trace: attaches BPF programs to the USDT probes of every running
 * and future rdmagate process (by binary path), pins the per-VM maps under
 * /sys/fs/bpf/rdmagate/ and prints a periodic summary. See docs/tracing.md.
 */
#include <argp.h>
#include <cap-ng.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>
#include <linux/magic.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "common/probes.h"
#include "config.h"
#include "trace/maps.h"
#include "trace/opts.h"
#include "trace/rdmagate-trace.h"
#include "rdmagate-trace.skel.h"

#define PROG	    "rdmagate-trace"
#define BPFFS	    "/sys/fs/bpf"
#define UPROBE_TYPE "/sys/bus/event_source/devices/uprobe/type"

enum role { ROLE_WORKER, ROLE_BROKER, ROLE_MUX, ROLE_COUNT };

static const char *const role_names[ROLE_COUNT] = { "worker", "broker", "mux" };

/*
 * Every probe of common/probes.h: its BPF program, who fires it, and
 * whether that program places it today (a binary without a placed probe
 * is an error; one without a not-yet-placed probe is not).
 */
static const struct {
	const char *name;
	enum role role;
	bool placed;
} probes[] = {
	{ "kick", ROLE_WORKER, true },
	{ "ctrl_cmd", ROLE_WORKER, true },
	{ "wr_post", ROLE_WORKER, true },
	{ "wr_complete", ROLE_WORKER, true },
	{ "cq_overflow", ROLE_WORKER, true },
	{ "mad_send", ROLE_WORKER, false }, /* with the MAD mux */
	{ "mad_recv", ROLE_WORKER, false },
	{ "mad_drop", ROLE_WORKER, true },
	{ "worker_spawn", ROLE_BROKER, true },
	{ "worker_exit", ROLE_BROKER, true },
	{ "gid_add", ROLE_BROKER, false }, /* the broker owns no GIDs yet */
	{ "gid_del", ROLE_BROKER, false },
	{ "policy_refuse", ROLE_BROKER, true },
	{ "mad_route", ROLE_MUX, false }, /* mux: does not exist yet */
	{ "mad_route_drop", ROLE_MUX, false },
};
#define NPROBES (sizeof(probes) / sizeof(probes[0]))

/* The counters, in map order, for printing (table-driven). */
#define CTR(f)                                                                 \
	{                                                                      \
#f, __builtin_offsetof(struct rt_counters, f)                  \
	}
static const struct {
	const char *name;
	size_t off;
} ctr_fields[] = {
	CTR(kicks),
	CTR(posts),
	CTR(post_bytes),
	CTR(completions),
	CTR(completion_errors),
	CTR(unmatched),
	CTR(cq_overflows),
	CTR(ctrl_cmds),
	CTR(ctrl_errors),
	CTR(mads_tx),
	CTR(mads_rx),
	CTR(mads_dropped),
	CTR(workers_spawned),
	CTR(workers_exited),
	CTR(gids_added),
	CTR(gids_removed),
	CTR(policy_refusals),
	CTR(mux_routed),
	CTR(mux_dropped),
};
#define NCTR (sizeof(ctr_fields) / sizeof(ctr_fields[0]))

static struct env {
	const char *bin[ROLE_COUNT];
	bool bin_given[ROLE_COUNT];
	const char *vm;
	const char *pin_dir;
	struct trace_nums n; /* --interval, --count (trace/opts.c) */
	bool json, keep, verbose;
} env = { .n = { .interval = 1, .count = -1 }, .pin_dir = RT_PIN_DIR };

static volatile sig_atomic_t exiting;

const char *argp_program_version = PROG " " RDMAGATE_VERSION;
static const char doc[] =
	"Per-VM counters and latency histograms of rdmagate's USDT probes.\n"
	"\n"
	"USAGE: rdmagate-trace [-h] [-v] [-i SECS] [-c COUNT] [--vm NAME]\n"
	"                      [--json] [--keep] [--worker PATH]\n"
	"                      [--broker PATH] [--mux PATH] [--pin-dir DIR]\n"
	"\n"
	"EXAMPLES:\n"
	"    rdmagate-trace              # summary every second, Ctrl-C ends\n"
	"    rdmagate-trace -i 5 -c 3    # three summaries, 5 s apart\n"
	"    rdmagate-trace --vm vm-a    # only VM vm-a\n"
	"    rdmagate-trace --json       # one JSON object per line\n"
	"    rdmagate-trace --keep       # leave the maps pinned at exit\n"
	"    rdmagate-trace --worker /usr/libexec/rdmagate/rdmagate-worker \\\n"
	"        --broker /usr/sbin/rdmagate-broker\n";

static const struct argp_option opts[] = {
	{ "interval", 'i', "SECS", 0, "Summary interval (default 1)", 0 },
	{ "count", 'c', "COUNT", 0, "Stop after COUNT summaries", 0 },
	{ "vm", 'm', "NAME", 0, "Print only VM NAME", 0 },
	{ "json", 'j', NULL, 0, "JSON output, one object per summary", 0 },
	{ "keep", 'k', NULL, 0, "Leave the pinned maps at exit", 0 },
	{ "worker", 'W', "PATH", 0, "rdmagate-worker binary to trace", 0 },
	{ "broker", 'B', "PATH", 0, "rdmagate-broker binary to trace", 0 },
	{ "mux", 'M', "PATH", 0, "rdmagate-mux binary to trace", 0 },
	{ "pin-dir", 'P', "DIR", 0,
	  "Pin the maps in DIR, on bpffs (default " RT_PIN_DIR ")", 0 },
	{ "verbose", 'v', NULL, 0, "Show libbpf's messages", 0 },
	{ NULL, 'h', NULL, OPTION_HIDDEN, "Show the full help", 0 },
	{ 0 },
};

/* Option row r of trace_opt_nums, or exits saying why. */
static void parse_num(enum trace_opt_num r, const char *arg,
		      struct argp_state *state)
{
	struct reason why;

	if (opt_num_parse(&trace_opt_nums[r], arg, &env.n, &why) < 0)
		argp_error(state, "%s", why.msg);
}

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case 'h':
		argp_state_help(state, stderr, ARGP_HELP_STD_HELP);
		break;
	case 'i':
		parse_num(TO_INTERVAL, arg, state);
		break;
	case 'c':
		parse_num(TO_COUNT, arg, state);
		break;
	case 'm':
		if (strlen(arg) >= RT_VM_LEN)
			argp_error(state, "VM names are at most %d bytes",
				   RT_VM_LEN - 1);
		env.vm = arg;
		break;
	case 'j':
		env.json = true;
		break;
	case 'k':
		env.keep = true;
		break;
	case 'W':
	case 'B':
	case 'M': {
		enum role r = key == 'W'   ? ROLE_WORKER
			      : key == 'B' ? ROLE_BROKER
					   : ROLE_MUX;

		env.bin[r] = arg;
		env.bin_given[r] = true;
		break;
	}
	case 'v':
		env.verbose = true;
		break;
	case 'P':
		if (strncmp(arg, BPFFS "/", sizeof(BPFFS)) || strstr(arg, ".."))
			argp_error(state, "--pin-dir must be under " BPFFS "/");
		env.pin_dir = arg;
		break;
	case ARGP_KEY_ARG:
		argp_usage(state);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt,
			va_list args)
{
	if (level == LIBBPF_DEBUG || !env.verbose)
		return 0;
	return vfprintf(stderr, fmt, args);
}

static void on_signal(int sig)
{
	exiting = 1;
}

/* ---- where the binaries are ---- */

/*
 * Default path of a role's binary: next to us, then the build tree, then
 * (the broker) the installed sbindir beside our bindir.
 */
static void default_bin(enum role r, char *buf, size_t len)
{
	static const char *const rel[ROLE_COUNT][3] = {
		{ "rdmagate-worker", "../worker/rdmagate-worker",
		  "../libexec/rdmagate/rdmagate-worker" },
		{ "rdmagate-broker", "../broker/rdmagate-broker",
		  "../sbin/rdmagate-broker" },
		{ "rdmagate-mux", "../mux/rdmagate-mux",
		  "../sbin/rdmagate-mux" },
	};
	char self[PATH_MAX], *slash;
	ssize_t n;
	int i;

	buf[0] = '\0';
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return;
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (!slash)
		return;
	*slash = '\0';
	for (i = 0; i < 3 && rel[r][i]; i++) {
		int w = snprintf(buf, len, "%s/%s", self, rel[r][i]);

		if (w > 0 && (size_t)w < len && access(buf, X_OK) == 0)
			return;
	}
	buf[0] = '\0';
}

static int resolve_bins(char paths[ROLE_COUNT][PATH_MAX])
{
	char tmp[PATH_MAX];
	int r, n = 0;

	for (r = 0; r < ROLE_COUNT; r++) {
		if (!env.bin_given[r]) {
			default_bin(r, tmp, sizeof(tmp));
			env.bin[r] = tmp[0] ? tmp : NULL;
		}
		paths[r][0] = '\0';
		if (!env.bin[r])
			continue;
		if (!realpath(env.bin[r], paths[r])) {
			fprintf(stderr, PROG ": %s binary %s: %s\n",
				role_names[r], env.bin[r], strerror(errno));
			return -errno;
		}
		n++;
	}
	if (!paths[ROLE_WORKER][0]) {
		fprintf(stderr, PROG ": no rdmagate-worker found next to " PROG
				     "; give --worker PATH\n");
		return -ENOENT;
	}
	return n;
}

/* ---- capabilities, kernel support, bpffs ---- */

static int check_caps(void)
{
	if (capng_get_caps_process() == 0 &&
	    capng_have_capability(CAPNG_EFFECTIVE, CAP_SYS_ADMIN))
		return 0;
	fprintf(stderr,
		PROG ": needs CAP_SYS_ADMIN to attach uprobes (USDT)\n");
	return -EPERM;
}

static int check_kernel(void)
{
	if (access(UPROBE_TYPE, R_OK) < 0) {
		fprintf(stderr,
			PROG ": the kernel has no uprobe support (%s "
			     "missing: CONFIG_UPROBE_EVENTS)\n",
			UPROBE_TYPE);
		return -ENOTSUP;
	}
	return 0;
}

static int ensure_bpffs(void)
{
	struct statfs st;

	if (statfs(BPFFS, &st) == 0 && st.f_type == BPF_FS_MAGIC)
		return 0;
	if (mount("bpf", BPFFS, "bpf", 0, NULL) < 0) {
		fprintf(stderr, PROG ": cannot mount bpffs on " BPFFS ": %s\n",
			strerror(errno));
		return -errno;
	}
	return 0;
}

static struct bpf_map *pinned_maps(struct rdmagate_trace *skel, int i)
{
	struct bpf_map *m[] = { skel->maps.counters, skel->maps.hists,
				skel->maps.inflight };

	return i < (int)(sizeof(m) / sizeof(m[0])) ? m[i] : NULL;
}

static void unpin_all(struct rdmagate_trace *skel)
{
	char path[PATH_MAX];
	struct bpf_map *m;
	int i;

	for (i = 0; (m = pinned_maps(skel, i)); i++) {
		snprintf(path, sizeof(path), "%s/%s", env.pin_dir,
			 bpf_map__name(m));
		bpf_map__unpin(m, path);
	}
	rmdir(env.pin_dir); /* fails while other pins are there */
}

static int pin_all(struct rdmagate_trace *skel)
{
	char path[PATH_MAX];
	struct bpf_map *m;
	int i, ret;

	if (mkdir(env.pin_dir, 0700) < 0 && errno != EEXIST) {
		fprintf(stderr, PROG ": mkdir %s: %s\n", env.pin_dir,
			strerror(errno));
		return -errno;
	}
	for (i = 0; (m = pinned_maps(skel, i)); i++) {
		snprintf(path, sizeof(path), "%s/%s", env.pin_dir,
			 bpf_map__name(m));
		/* a pin an earlier --keep run left: replaced */
		if (unlink(path) == 0 && env.verbose)
			fprintf(stderr, PROG ": replaced the old pin %s\n",
				path);
		ret = bpf_map__pin(m, path);
		if (ret < 0) {
			fprintf(stderr, PROG ": cannot pin %s: %s\n", path,
				strerror(-ret));
			return ret;
		}
	}
	return 0;
}

/* ---- attach ---- */

static int attach_all(struct rdmagate_trace *skel,
		      char paths[ROLE_COUNT][PATH_MAX], struct bpf_link **links)
{
	size_t i;
	int n = 0;

	for (i = 0; i < NPROBES; i++) {
		const char *bin = paths[probes[i].role];
		struct bpf_program *prog;
		int err;

		if (!bin[0])
			continue;
		prog = bpf_object__find_program_by_name(skel->obj,
							probes[i].name);
		if (!prog)
			return -ENOENT;
		links[i] = bpf_program__attach_usdt(prog, -1, bin, "rdmagate",
						    probes[i].name, NULL);
		if (links[i]) {
			n++;
			continue;
		}
		err = errno;
		if (err == ENOENT &&
		    (!probes[i].placed || !env.bin_given[probes[i].role])) {
			/* not placed yet, or a binary we were not asked for */
			if (env.verbose)
				fprintf(stderr,
					PROG ": note: %s has no USDT "
					     "probe rdmagate:%s; not traced\n",
					bin, probes[i].name);
			continue;
		}
		if (err == ENOENT)
			fprintf(stderr,
				PROG
				": %s has no USDT probe "
				"rdmagate:%s (not built with common/probes.h "
				"version %d?)\n",
				bin, probes[i].name, RDMAGATE_PROBES_VERSION);
		else if (err == EPERM || err == EACCES)
			fprintf(stderr, PROG ": needs CAP_SYS_ADMIN to attach "
					     "uprobes (USDT)\n");
		else
			fprintf(stderr,
				PROG ": cannot attach to rdmagate:%s "
				     "in %s: %s\n",
				probes[i].name, bin, strerror(err));
		return -err;
	}
	return n;
}

/* ---- output ---- */

/* The tracer's own output names an unknown code "UNKNOWN" (and gives it). */
static const char *hist_op_name(const struct rt_hist_key *k)
{
	const char *name = rt_hist_op_name(k);

	return name ? name : "UNKNOWN";
}

static bool vm_wanted(const char *vm)
{
	return !env.vm || strncmp(env.vm, vm, RT_VM_LEN) == 0;
}

static void print_stars(__u64 v, __u64 max, int width)
{
	int n = max ? (int)((v * (__u64)width) / max) : 0, i;

	for (i = 0; i < width; i++)
		putchar(i < n ? '*' : ' ');
}

static void print_hist_text(const struct rt_hist_ent *e)
{
	__u64 max = 0;
	int i, last = -1;

	for (i = 0; i < RT_MAX_SLOTS; i++) {
		if (e->h.slots[i])
			last = i;
		if (e->h.slots[i] > max)
			max = e->h.slots[i];
	}
	printf("  %s latency, %s: %llu samples, average %llu us\n",
	       e->k.kind == RT_HIST_WR ? "post->completion" : "control command",
	       hist_op_name(&e->k), (unsigned long long)e->h.count,
	       e->h.count
		       ? (unsigned long long)(e->h.sum_ns / e->h.count / 1000)
		       : 0ULL);
	printf("%18s%-10s : count     distribution\n", "", "usecs");
	for (i = 0; i <= last; i++) {
		unsigned long long lo = i ? 1ULL << i : 0;
		unsigned long long hi = (1ULL << (i + 1)) - 1;

		printf("%14llu -> %-10llu : %-9llu |", lo, hi,
		       (unsigned long long)e->h.slots[i]);
		print_stars(e->h.slots[i], max, 40);
		printf("|\n");
	}
}

static void print_text(const struct rt_vm_ent *vms, size_t nvm,
		       const struct rt_hist_ent *hs, size_t nh)
{
	char ts[32];
	time_t t = time(NULL);
	size_t v, i, j;

	strftime(ts, sizeof(ts), "%H:%M:%S", localtime(&t));
	printf("%s\n", ts);
	for (v = 0; v < nvm; v++) {
		if (!vm_wanted(vms[v].k.vm))
			continue;
		printf("VM %s\n", vms[v].k.vm[0] ? vms[v].k.vm : "(unnamed)");
		for (i = 0, j = 0; i < NCTR; i++) {
			__u64 val;

			memcpy(&val,
			       (const char *)&vms[v].c + ctr_fields[i].off,
			       sizeof(val));
			if (!val)
				continue;
			printf("%s%s %llu", j++ % 4 ? "  " : "  ",
			       ctr_fields[i].name, (unsigned long long)val);
			if (j % 4 == 0)
				printf("\n");
		}
		if (j % 4)
			printf("\n");
		for (i = 0; i < nh; i++)
			if (!strncmp(hs[i].k.vm, vms[v].k.vm, RT_VM_LEN))
				print_hist_text(&hs[i]);
	}
	printf("\n");
}

static void json_str(const char *s, size_t max)
{
	size_t i;

	putchar('"');
	for (i = 0; i < max && s[i]; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void print_json_hist(const struct rt_hist_ent *e, bool first)
{
	int i;

	printf("%s{\"kind\":\"%s\",\"op\":\"%s\",\"code\":%u,\"count\":%llu,"
	       "\"sum_ns\":%llu,\"slots\":[",
	       first ? "" : ",", e->k.kind == RT_HIST_WR ? "wr" : "ctrl",
	       hist_op_name(&e->k), e->k.op, (unsigned long long)e->h.count,
	       (unsigned long long)e->h.sum_ns);
	for (i = 0; i < RT_MAX_SLOTS; i++)
		printf("%s%llu", i ? "," : "",
		       (unsigned long long)e->h.slots[i]);
	printf("]}");
}

static void print_json(const struct rt_vm_ent *vms, size_t nvm,
		       const struct rt_hist_ent *hs, size_t nh)
{
	bool firstvm = true;
	size_t v, i;

	printf("{\"time\":%lld,\"vms\":[", (long long)time(NULL));
	for (v = 0; v < nvm; v++) {
		bool first = true;

		if (!vm_wanted(vms[v].k.vm))
			continue;
		printf("%s{\"vm\":", firstvm ? "" : ",");
		firstvm = false;
		json_str(vms[v].k.vm, RT_VM_LEN);
		printf(",\"counters\":{");
		for (i = 0; i < NCTR; i++) {
			__u64 val;

			memcpy(&val,
			       (const char *)&vms[v].c + ctr_fields[i].off,
			       sizeof(val));
			printf("%s\"%s\":%llu", i ? "," : "",
			       ctr_fields[i].name, (unsigned long long)val);
		}
		printf("},\"hists\":[");
		for (i = 0; i < nh; i++) {
			if (strncmp(hs[i].k.vm, vms[v].k.vm, RT_VM_LEN))
				continue;
			print_json_hist(&hs[i], first);
			first = false;
		}
		printf("]}");
	}
	printf("]}\n");
}

static int print_summary(struct rdmagate_trace *skel)
{
	struct rt_vm_ent *vms = NULL;
	struct rt_hist_ent *hs = NULL;
	size_t nvm, nh;

	if (rt_map_dump(bpf_map__fd(skel->maps.counters),
			sizeof(struct rt_vm_key), sizeof(struct rt_counters),
			RT_MAX_VMS, (void **)&vms, &nvm) < 0 ||
	    rt_map_dump(bpf_map__fd(skel->maps.hists),
			sizeof(struct rt_hist_key), sizeof(struct rt_hist),
			RT_MAX_HISTS, (void **)&hs, &nh) < 0) {
		free(vms);
		return -ENOMEM;
	}
	qsort(vms, nvm, sizeof(*vms), rt_cmp_vm);
	qsort(hs, nh, sizeof(*hs), rt_cmp_hist);
	if (env.json)
		print_json(vms, nvm, hs, nh);
	else
		print_text(vms, nvm, hs, nh);
	fflush(stdout);
	free(vms);
	free(hs);
	return 0;
}

/* ---- main ---- */

static int open_and_load(struct rdmagate_trace **ret_skel)
{
	struct rdmagate_trace *skel;
	int ret;

	skel = rdmagate_trace__open();
	if (!skel) {
		ret = -errno;
		fprintf(stderr, PROG ": cannot open the BPF object: %s\n",
			strerror(errno));
		return ret;
	}
	ret = rdmagate_trace__load(skel);
	if (ret < 0) {
		if (ret == -ENOSYS)
			fprintf(stderr,
				PROG ": the kernel has no BPF support "
				     "(bpf(2): ENOSYS; CONFIG_BPF_SYSCALL)\n");
		else if (ret == -EACCES)
			fprintf(stderr, PROG
				": the kernel's verifier rejected "
				"the BPF programs (run with -v for its log)\n");
		else if (ret == -EPERM)
			fprintf(stderr, PROG
				": the kernel refused to load the "
				"BPF programs (EPERM): needs CAP_SYS_ADMIN "
				"(or CAP_BPF + CAP_PERFMON)\n");
		else
			fprintf(stderr,
				PROG ": cannot load the BPF programs: "
				     "%s (run with -v for libbpf's log)\n",
				strerror(-ret));
		rdmagate_trace__destroy(skel);
		return ret;
	}
	*ret_skel = skel;
	return 0;
}

static void loop(struct rdmagate_trace *skel)
{
	long done = 0;

	while (!exiting) {
		struct timespec ts = { .tv_sec = env.n.interval };

		/* a signal cuts the sleep short: print once more, end */
		nanosleep(&ts, NULL);
		if (print_summary(skel) < 0)
			break;
		if (env.n.count > 0 && ++done >= env.n.count)
			break;
	}
}

int main(int argc, char **argv)
{
	static const struct argp argp = { opts, parse_arg, NULL, doc,
					  NULL, NULL,	   NULL };
	static char paths[ROLE_COUNT][PATH_MAX];
	struct bpf_link *links[NPROBES] = { 0 };
	struct rdmagate_trace *skel = NULL;
	struct sigaction sa = { .sa_handler = on_signal };
	int ret, n, i;

	ret = argp_parse(&argp, argc, argv, 0, NULL, NULL);
	if (ret)
		return 2;
	libbpf_set_print(libbpf_print);
	if (check_caps() < 0 || check_kernel() < 0)
		return 1;
	if (resolve_bins(paths) < 0)
		return 1;
	if (ensure_bpffs() < 0 || open_and_load(&skel) < 0)
		return 1;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	ret = 1;
	if (pin_all(skel) < 0)
		goto out;
	n = attach_all(skel, paths, links);
	if (n < 0)
		goto out;
	fprintf(stderr, "Tracing %d rdmagate USDT probes in", n);
	for (i = 0; i < ROLE_COUNT; i++)
		if (paths[i][0])
			fprintf(stderr, " %s", paths[i]);
	fprintf(stderr, "; maps pinned in %s. Hit Ctrl-C to end.\n",
		env.pin_dir);
	loop(skel);
	ret = 0;
out:
	for (i = 0; i < (int)NPROBES; i++)
		bpf_link__destroy(links[i]);
	if (!env.keep || ret)
		unpin_all(skel);
	rdmagate_trace__destroy(skel);
	return ret;
}
