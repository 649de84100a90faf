// SPDX-License-Identifier: MIT
/*
 * The worker sandbox's host tests, in TAP.  test_sandbox MODE PROBE:
 *   filter    every forbidden operation of sandbox_probe dies of SIGSYS
 *             (an ABI probe the bare kernel itself refuses: of the
 *             kernel's own signal, learned first with --bare),
 *             every allowed one works under the filter (also in listen
 *             mode, debug mode, and after the privilege drop as root);
 *   privdrop  (root) after privdrop_to(60000, 60000) the
 *             process has uid/gid 60000, no supplementary groups, every
 *             capability set empty and no_new_privs, per /proc/self/status;
 *   golden    the exported PFC equals tests/host/sandbox/worker-filter.pfc.
 */
#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/privdrop.h"
#include "worker/sandbox/sandbox.h"

#define OUT_MAX (256 * 1024)
/*
 * A whole-test skip: the TAP plan "1..0 # SKIP why" and exit 0, which
 * meson's TAP protocol reports as SKIP (it turns exit 77 into ERROR).
 */
#define SKIP_ALL (-77)
#define DROP_ID	 "60000"

static const char *probe;
static unsigned int tap_n, tap_failed;

static void tap(bool ok, const char *fmt, ...) LOG_PRINTF(2, 3);
static void tap(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %u - ", ok ? "" : "not ", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!ok)
		tap_failed++;
}

static void tap_skip(const char *what, const char *why)
{
	printf("ok %u - %s # SKIP %s\n", ++tap_n, what, why);
	fflush(stdout);
}

/* Prints captured output as TAP diagnostics. */
static void diag(const char *out)
{
	const char *l = out;

	while (*l) {
		const char *e = strchrnul(l, '\n');

		printf("#   %.*s\n", (int)(e - l), l);
		l = *e ? e + 1 : e;
	}
}

static void read_all(int fd, char *buf, size_t len)
{
	size_t n = 0;
	ssize_t r;

	while (n < len - 1 && (r = read(fd, buf + n, len - 1 - n)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
}

/*
 * Runs the probe with args (NULL-terminated, without argv[0]), capturing
 * its stdout (want_stdout) or its stderr into out.  Returns the wait
 * status, or -1.  A probe that hangs is ended by SIGALRM after 20 s.
 */
static int run_probe(const char *const *args, bool want_stdout, char *out)
{
	const char *argv[8] = { probe };
	int pfd[2], status;
	unsigned int i;
	pid_t pid;

	for (i = 0; args[i] && i + 1 < ARRAY_SIZE(argv) - 1; i++)
		argv[i + 1] = args[i];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(pfd[1], want_stdout ? 1 : 2);
		alarm(20);
		execv(probe, (char *const *)argv);
		_exit(127);
	}
	close(pfd[1]);
	read_all(pfd[0], out, OUT_MAX);
	close(pfd[0]);
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	return status;
}

static void describe(int st, char *b, size_t len)
{
	if (st == -1)
		snprintf(b, len, "could not run the probe");
	else if (WIFSIGNALED(st))
		snprintf(b, len, "killed by signal %d (%s)", WTERMSIG(st),
			 strsignal(WTERMSIG(st)));
	else
		snprintf(b, len, "exit status %d", WEXITSTATUS(st));
}

/* One case: expect a signal (sig > 0) or exit status 0 (sig == 0). */
static bool expect(const char *const *args, int sig, const char *must_say)
{
	_cleanup_free_ char *out = malloc(OUT_MAX);
	char what[128] = "", how[96];
	bool ok;
	int st, i;

	if (!out)
		abort();
	for (i = 0; args[i]; i++)
		snprintf(what + strlen(what), sizeof(what) - strlen(what),
			 "%s%s", i ? " " : "", args[i]);
	st = run_probe(args, false, out);
	describe(st, how, sizeof(how));
	ok = st != -1 && (sig ? WIFSIGNALED(st) && WTERMSIG(st) == sig
			      : WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (ok && must_say && !strstr(out, must_say)) {
		ok = false;
		snprintf(how + strlen(how), sizeof(how) - strlen(how),
			 ", but no '%s' on stderr", must_say);
	}
	tap(ok, "%s: %s (want %s)", what, how, sig ? strsignal(sig) : "exit 0");
	if (!ok)
		diag(out);
	return ok;
}

/* ---- filter ---------------------------------------------------------- */

/* The forbidden operations the issue names; the probe must have them. */
static const char *const required_forbidden[] = {
	"openat_new",	    "open_passwd",
	"socket_inet",	    "socket_unix",
	"connect",	    "execve",
	"ptrace",	    "mount",
	"umount2",	    "bpf",
	"perf_event_open",  "setuid",
	"setgid",	    "kexec_load",
	"init_module",	    "fork",
	"unshare",	    "setns",
	"chroot",	    "ioctl_other_req",
	"ioctl_other_fd",   "mmap_exec",
	"mprotect_exec",    "write_file",
	"process_vm_readv", "keyctl",
	"add_key",	    "reboot",
	"swapon",	    "io_uring_setup",
	"userfaultfd",
};

/*
 * A probe through another syscall ABI (i386 int $0x80, x32): first what
 * the bare kernel does with it.  A kernel that runs it must see the
 * filter kill it (SIGSYS); a kernel without that ABI kills it itself (e.g.
 * SIGSEGV for int $0x80 without IA32 emulation), and then the filtered
 * run must die of that same signal: no i386 syscall gets past either way.
 */
static void run_forbidden_abi(const char *name)
{
	_cleanup_free_ char *out = malloc(OUT_MAX);
	char how[96];
	int st;

	if (!out)
		abort();
	st = run_probe((const char *[]){ "--bare", name, NULL }, false, out);
	describe(st, how, sizeof(how));
	if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 3) {
		printf("# %s: the bare kernel runs it (it has this ABI): the "
		       "filter must kill it\n",
		       name);
		expect((const char *[]){ name, NULL }, SIGSYS, NULL);
		return;
	}
	if (st != -1 && WIFSIGNALED(st) && WTERMSIG(st) != SIGSYS) {
		printf("# %s: the bare kernel refuses it itself (%s: no such "
		       "ABI here); the filtered run must die the same way\n",
		       name, how);
		expect((const char *[]){ name, NULL }, WTERMSIG(st), NULL);
		return;
	}
	tap(false,
	    "%s without the filter: %s (want it to run, or a signal "
	    "of the kernel's own)",
	    name, how);
	diag(out);
}

static unsigned int run_forbidden(const char *list)
{
	char name[64], kind[16];
	const char *l = list;
	unsigned int n = 0;
	int used;

	while (sscanf(l, "%15s %63s%n", kind, name, &used) == 2) {
		l += used;
		if (!strcmp(kind, "forbidden-abi"))
			run_forbidden_abi(name);
		else if (!strcmp(kind, "forbidden"))
			expect((const char *[]){ name, NULL }, SIGSYS, NULL);
		else
			continue;
		n++;
	}
	return n;
}

static void check_required(const char *list)
{
	char key[96];
	unsigned int i, missing = 0;

	for (i = 0; i < ARRAY_SIZE(required_forbidden); i++) {
		snprintf(key, sizeof(key), "forbidden %s\n",
			 required_forbidden[i]);
		if (!strstr(list, key)) {
			printf("# the probe has no forbidden op '%s'\n",
			       required_forbidden[i]);
			missing++;
		}
	}
	tap(missing == 0,
	    "the probe covers the %zu required forbidden "
	    "operations",
	    ARRAY_SIZE(required_forbidden));
}

static void run_allowed(void)
{
	static const char *const plain[] = {
		"eventfd",	"epoll", "vhost_user", "memfd_map",
		"malloc",	"fcntl", "log",	       "clock",
		"verbs_cmd_fd", "ids",	 "close",
	};
	char trap_line[64];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(plain); i++)
		expect((const char *[]){ plain[i], NULL }, 0, NULL);
	expect((const char *[]){ "abort", NULL }, SIGABRT, NULL);
	/* Listen mode: accept4 on the listening socket, any socket fd. */
	expect((const char *[]){ "--listen", "accept", NULL }, 0, NULL);
	expect((const char *[]){ "--listen", "vhost_user", NULL }, 0, NULL);
	expect((const char *[]){ "--listen", "socket_unix", NULL }, SIGSYS,
	       NULL);
	expect((const char *[]){ "--listen", "setsockopt_other", NULL }, SIGSYS,
	       NULL);
	/* Debug mode names the refused syscall and lets the run go on. */
	snprintf(trap_line, sizeof(trap_line), "forbidden syscall %d ",
		 (int)SYS_socket);
	expect((const char *[]){ "--debug", "debug_trap", NULL }, 0, trap_line);
}

static void run_dropped(void)
{
	static const char *const ok_ops[] = { "vhost_user", "memfd_map",
					      "epoll" };
	static const char *const bad_ops[] = { "setuid", "setgroups",
					       "open_passwd" };
	unsigned int i;

	if (geteuid() != 0) {
		tap_skip("filter after the privilege drop",
			 "not root: cannot switch to uid " DROP_ID);
		return;
	}
	for (i = 0; i < ARRAY_SIZE(ok_ops); i++)
		expect((const char *[]){ "--drop", DROP_ID ":" DROP_ID,
					 ok_ops[i], NULL },
		       0, NULL);
	for (i = 0; i < ARRAY_SIZE(bad_ops); i++)
		expect((const char *[]){ "--drop", DROP_ID ":" DROP_ID,
					 bad_ops[i], NULL },
		       SIGSYS, NULL);
}

static int mode_filter(void)
{
	_cleanup_free_ char *list = malloc(OUT_MAX);
	unsigned int n;
	int st;

	if (!list)
		return 1;
	if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0 || seccomp_api_get() < 3) {
		printf("1..0 # SKIP this kernel has no seccomp filters with "
		       "SECCOMP_RET_KILL_PROCESS (API level %d)\n",
		       seccomp_api_get());
		return SKIP_ALL;
	}
	st = run_probe((const char *[]){ "--list", NULL }, true, list);
	if (st != 0) {
		printf("Bail out! sandbox_probe --list failed\n");
		return 1;
	}
	check_required(list);
	n = run_forbidden(list);
	tap(n >= 20, "%u forbidden operations tried (at least 20)", n);
	run_allowed();
	run_dropped();
	return 0;
}

/* ---- privdrop -------------------------------------------------------- */

/* Expected fields of /proc/self/status after the drop (values trimmed). */
static const struct {
	const char *key, *value;
} want_status[] = {
	{ "Uid", DROP_ID "\t" DROP_ID "\t" DROP_ID "\t" DROP_ID },
	{ "Gid", DROP_ID "\t" DROP_ID "\t" DROP_ID "\t" DROP_ID },
	{ "Groups", "" },
	{ "CapInh", "0000000000000000" },
	{ "CapPrm", "0000000000000000" },
	{ "CapEff", "0000000000000000" },
	{ "CapBnd", "0000000000000000" },
	{ "CapAmb", "0000000000000000" },
	{ "NoNewPrivs", "1" },
};

/* Does status have the line "key:<blanks>value<blanks>"? */
static bool has_field(const char *status, const char *key, const char *value)
{
	size_t kl = strlen(key), vl = strlen(value);
	const char *l = status, *e;

	for (; *l; l = *e ? e + 1 : e) {
		e = strchrnul(l, '\n');
		if (strncmp(l, key, kl) || l[kl] != ':')
			continue;
		l += kl + 1;
		while (l < e && (*l == ' ' || *l == '\t'))
			l++;
		while (e > l && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		return (size_t)(e - l) == vl && !memcmp(l, value, vl);
	}
	return false;
}

/* In a child: drop, then report one byte per want_status field. */
static void drop_child(int wfd)
{
	char status[8192], res[ARRAY_SIZE(want_status) + 1];
	unsigned int i;
	FILE *f;
	size_t n;

	if (privdrop_to(60000, 60000) < 0)
		_exit(2);
	f = fopen("/proc/self/status", "re");
	if (!f)
		_exit(3);
	n = fread(status, 1, sizeof(status) - 1, f);
	status[n] = '\0';
	fclose(f);
	for (i = 0; i < ARRAY_SIZE(want_status); i++)
		res[i] = has_field(status, want_status[i].key,
				   want_status[i].value)
				 ? 'y'
				 : 'n';
	res[i] = '\0';
	if (write(wfd, res, i) != (ssize_t)i)
		_exit(4);
	_exit(0);
}

static int mode_privdrop(void)
{
	char res[ARRAY_SIZE(want_status) + 1] = "", how[96];
	int pfd[2], st = -1;
	unsigned int i;
	pid_t pid;

	if (geteuid() != 0) {
		printf("1..0 # SKIP not root: switching to uid %s and "
		       "clearing the bounding set need root\n",
		       DROP_ID);
		return SKIP_ALL;
	}
	tap(privdrop_to(0, 60000) == -EINVAL, "refuses to 'drop' to uid 0");
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return 1;
	fflush(stdout);
	pid = fork();
	if (pid == 0)
		drop_child(pfd[1]);
	close(pfd[1]);
	read_all(pfd[0], res, sizeof(res));
	close(pfd[0]);
	if (pid > 0)
		waitpid(pid, &st, 0);
	describe(st, how, sizeof(how));
	tap(st == 0, "privdrop_to(60000, 60000) in a child: %s", how);
	for (i = 0; i < ARRAY_SIZE(want_status); i++)
		tap(res[i] == 'y', "/proc/self/status: %s: '%s'",
		    want_status[i].key, want_status[i].value);
	return 0;
}

/* ---- golden ---------------------------------------------------------- */

static char *slurp(const char *path)
{
	_cleanup_free_ char *b = malloc(OUT_MAX);
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f || !b) {
		if (f)
			fclose(f);
		return NULL;
	}
	n = fread(b, 1, OUT_MAX - 1, f);
	b[n] = '\0';
	fclose(f);
	return TAKE_PTR(b);
}

/* The second line names the libseccomp version the text came from. */
static bool same_line2(const char *a, const char *b)
{
	const char *la = strchr(a, '\n'), *lb = strchr(b, '\n');
	const char *ea, *eb;

	if (!la || !lb)
		return false;
	ea = strchrnul(la + 1, '\n');
	eb = strchrnul(lb + 1, '\n');
	return ea - la == eb - lb && !memcmp(la, lb, (size_t)(ea - la));
}

static void first_difference(const char *a, const char *b)
{
	unsigned int line = 1;

	while (*a && *a == *b) {
		if (*a == '\n')
			line++;
		a++, b++;
	}
	printf("# first difference at line %u; regenerate with:\n"
	       "#   BUILD/tests/host/sandbox/sandbox_probe --export-pfc > "
	       "tests/host/sandbox/worker-filter.pfc\n"
	       "# and review the diff\n",
	       line);
}

static int mode_golden(void)
{
	_cleanup_free_ char *out = malloc(OUT_MAX);
	_cleanup_free_ char *golden = NULL;
	const char *src = getenv("RDMAGATE_SRC");
	char path[4096];
	int st;

	if (!out)
		return 1;
#if defined(__SANITIZE_ADDRESS__)
	printf("1..0 # SKIP an ASan build adds the sanitizer runtime's rules "
	       "to the filter; the golden PFC is the normal build's\n");
	return SKIP_ALL;
#endif
	if (seccomp_arch_native() != SCMP_ARCH_X86_64) {
		printf("1..0 # SKIP the golden PFC is the x86_64 filter\n");
		return SKIP_ALL;
	}
	snprintf(path, sizeof(path), "%s/tests/host/sandbox/worker-filter.pfc",
		 src ? src : ".");
	golden = slurp(path);
	st = run_probe((const char *[]){ "--export-pfc", NULL }, true, out);
	tap(st == 0, "sandbox_probe --export-pfc");
	tap(golden != NULL, "read %s", path);
	if (st != 0 || !golden)
		return 0;
	if (!same_line2(out, golden)) {
		tap_skip("exported PFC matches the golden file",
			 "libseccomp version differs from the golden's "
			 "(line 2); regenerate it on this system");
		return 0;
	}
	tap(!strcmp(out, golden), "exported PFC matches %s", path);
	if (strcmp(out, golden))
		first_difference(out, golden);
	return 0;
}

int main(int argc, char **argv)
{
	int ret;

	log_init("test-sandbox", LOG_LVL_INFO);
	if (argc != 3) {
		fprintf(stderr, "usage: test_sandbox filter|privdrop|golden "
				"SANDBOX_PROBE\n");
		return 1;
	}
	probe = argv[2];
	if (!strcmp(argv[1], "filter"))
		ret = mode_filter();
	else if (!strcmp(argv[1], "privdrop"))
		ret = mode_privdrop();
	else if (!strcmp(argv[1], "golden"))
		ret = mode_golden();
	else
		ret = 1;
	if (ret == SKIP_ALL)
		return 0;
	if (ret)
		return ret;
	printf("1..%u\n", tap_n);
	return tap_failed ? 1 : 0;
}
