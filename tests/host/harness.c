// SPDX-License-Identifier: MIT
/* Host test harness: the real worker process, its log, TAP output. */
#include "tests/host/harness.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"

const char *h_worker_path;
bool h_vfio_user;
const char *const *h_worker_extra_args;
static char skip_reason[256];

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static void exec_worker(struct worker *w)
{
	int fd = open(w->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	const char *argv[16] = { h_worker_path, "--socket", w->sock,
				 "--vm",	"hosttest", "-v" };
	unsigned int n = 6, i;

	if (fd < 0 || dup2(fd, STDERR_FILENO) < 0)
		_exit(127);
	if (h_vfio_user) {
		argv[n++] = "--frontend";
		argv[n++] = "vfio-user";
		argv[n++] = "--test-device";
		argv[n++] = "pci-test";
	} else {
		argv[n++] = "--test-device";
		argv[n++] = "echo";
	}
	for (i = 0; h_worker_extra_args && h_worker_extra_args[i] && n < 15;
	     i++)
		argv[n++] = h_worker_extra_args[i];
	argv[n] = NULL;
	execv(h_worker_path, (char *const *)argv);
	dprintf(STDERR_FILENO, "exec %s: %s\n", h_worker_path, strerror(errno));
	_exit(127);
}

/* The worker is up once a frontend can connect (it serves one at once). */
static int wait_listening(struct worker *w)
{
	for (int i = 0; i < 500; i++) {
		struct vhost_client c;

		if (vhost_client_connect(&c, w->sock, 1000) == 0) {
			vhost_client_close(&c);
			return 0;
		}
		if (!worker_alive(w))
			return -ECHILD;
		sleep_ms(10);
	}
	return -ETIMEDOUT;
}

int worker_start(struct worker *w)
{
	int r;

	memset(w, 0, sizeof(*w));
	strcpy(w->dir, "/tmp/rdmagate-hosttest.XXXXXX");
	if (!mkdtemp(w->dir))
		return -errno;
	snprintf(w->sock, sizeof(w->sock), "%s/worker.sock", w->dir);
	snprintf(w->log, sizeof(w->log), "%s/worker.log", w->dir);
	w->pid = fork();
	if (w->pid < 0)
		return -errno;
	if (w->pid == 0)
		exec_worker(w);
	r = wait_listening(w);
	if (r)
		printf("# worker did not come up: %s\n", strerror(-r));
	worker_log_mark(w);
	return r;
}

bool worker_alive(struct worker *w)
{
	int status;
	pid_t p;

	if (w->pid <= 0)
		return false;
	p = waitpid(w->pid, &status, WNOHANG);
	if (p == 0)
		return true;
	if (WIFSIGNALED(status))
		printf("# worker died of signal %d\n", WTERMSIG(status));
	else if (WIFEXITED(status))
		printf("# worker exited with status %d\n", WEXITSTATUS(status));
	w->pid = 0;
	return false;
}

static void dump_from(struct worker *w, long from)
{
	FILE *f = fopen(w->log, "re");
	char line[512];

	if (!f)
		return;
	fseek(f, from, SEEK_SET);
	while (fgets(line, sizeof(line), f))
		printf("#   | %s%s", line, strchr(line, '\n') ? "" : "\n");
	fclose(f);
}

void worker_log_dump_since_mark(struct worker *w)
{
	dump_from(w, w->mark);
}

void worker_stop(struct worker *w, bool dump)
{
	if (w->pid > 0) {
		kill(w->pid, SIGTERM);
		for (int i = 0; i < 200; i++) {
			if (waitpid(w->pid, NULL, WNOHANG) != 0)
				break;
			sleep_ms(10);
			if (i == 199) {
				printf("# worker ignored SIGTERM\n");
				kill(w->pid, SIGKILL);
				waitpid(w->pid, NULL, 0);
			}
		}
		w->pid = 0;
	}
	if (dump) {
		printf("# worker log:\n");
		dump_from(w, 0);
	}
	unlink(w->sock);
	unlink(w->log);
	rmdir(w->dir);
}

void worker_log_mark(struct worker *w)
{
	struct stat st;

	w->mark = stat(w->log, &st) == 0 ? (long)st.st_size : 0;
}

static bool contains_ci(const char *hay, const char *needle)
{
	size_t n = strlen(needle);

	for (; *hay; hay++)
		if (!strncasecmp(hay, needle, n))
			return true;
	return false;
}

static bool line_matches(const char *line, const char *const *needles)
{
	for (; *needles; needles++)
		if (!contains_ci(line, *needles))
			return false;
	return true;
}

static bool search_log(struct worker *w, long from, const char *const *needles)
{
	FILE *f = fopen(w->log, "re");
	char line[1024];
	bool found = false;

	if (!f)
		return false;
	fseek(f, from, SEEK_SET);
	while (!found && fgets(line, sizeof(line), f)) {
		found = line_matches(line, needles);
		if (found)
			printf("# worker said: %s", line);
	}
	fclose(f);
	return found;
}

bool worker_log_waitv(struct worker *w, int timeout_ms,
		      const char *const *needles)
{
	bool found = false;

	for (int t = 0; !found && t <= timeout_ms; t += 10) {
		found = search_log(w, w->mark, needles);
		if (!found)
			sleep_ms(10);
	}
	if (!found) {
		printf("# no worker log line with all of:");
		for (const char *const *n = needles; *n; n++)
			printf(" \"%s\"", *n);
		printf("\n# lines since the mark:\n");
		worker_log_dump_since_mark(w);
	}
	return found;
}

bool worker_log_has(struct worker *w, const char *needle)
{
	const char *const needles[] = { needle, NULL };

	return search_log(w, 0, needles);
}

struct vhost_client_opts h_opts(void)
{
	return (struct vhost_client_opts){
		.protocol_features = VHOST_CLIENT_PROTOCOL_FEATURES,
		.config_size = 16,
		.timeout_ms = H_TIMEOUT_MS,
	};
}

int h_connect(struct guest_dev *d, struct worker *w,
	      const struct vhost_client_opts *opts)
{
	return guest_dev_connect(d, w->sock, opts);
}

int h_layout_basic(struct guest_dev *d, uint64_t page)
{
	uint64_t size = page == GUEST_PAGE_2M ? 4ull << 20 : 4ull << 20;
	int r = guest_ram_add_region(&d->ram, 0, size, page);

	if (r >= 0)
		r = guest_ram_add_region(&d->ram, 4ull << 30, size, page);
	return r < 0 ? r : 0;
}

int h_bring_up(struct guest_dev *d, struct worker *w,
	       const struct vhost_client_opts *opts, struct guest_vq **ret_q)
{
	uint64_t drv = (1ull << GUEST_F_VERSION_1) |
		       (1ull << GUEST_F_RING_INDIRECT_DESC);
	int r = h_connect(d, w, opts);

	if (!r)
		r = h_layout_basic(d, GUEST_PAGE_4K);
	if (!r)
		r = guest_dev_start(d, drv);
	if (!r)
		r = guest_dev_add_queue(d, 0, 256, ret_q);
	if (!r)
		r = guest_dev_driver_ok(d);
	return r;
}

void h_fill(struct guest_dev *d, uint64_t gpa, uint32_t len, uint32_t seed)
{
	uint8_t buf[4096];

	for (uint32_t off = 0; off < len; off += sizeof(buf)) {
		uint32_t n = len - off < sizeof(buf) ? len - off : sizeof(buf);

		for (uint32_t i = 0; i < n; i++)
			buf[i] = (uint8_t)((off + i) * 31 + seed * 7 + 1);
		guest_ram_write(&d->ram, gpa + off, buf, n);
	}
}

static int compare(struct guest_dev *d, uint64_t a, uint64_t b, uint32_t len)
{
	_cleanup_free_ uint8_t *x = malloc(len), *y = malloc(len);

	if (!x || !y)
		return -ENOMEM;
	if (guest_ram_read(&d->ram, a, x, len) ||
	    guest_ram_read(&d->ram, b, y, len))
		return -EFAULT;
	return memcmp(x, y, len) ? -EILSEQ : 0;
}

int h_echo(struct guest_dev *d, struct guest_vq *q, uint64_t out_gpa,
	   uint64_t in_gpa, uint32_t len, bool indirect)
{
	static uint32_t seed;
	struct guest_sg out = { out_gpa, len }, in = { in_gpa, len };
	uint32_t got;
	int r;

	h_fill(d, out_gpa, len, ++seed);
	h_fill(d, in_gpa, len, ++seed); /* stale data must not pass */
	r = guest_dev_exchange(d, q, &out, 1, &in, 1, indirect, H_TIMEOUT_MS,
			       &got);
	if (r)
		return r;
	if (got != len) {
		printf("# echo of %u bytes: device wrote %u\n", len, got);
		return -EPROTO;
	}
	return compare(d, out_gpa, in_gpa, len);
}

int h_echo_alloc(struct guest_dev *d, struct guest_vq *q, uint32_t len,
		 bool indirect)
{
	uint64_t a, b;
	int r = guest_ram_alloc_in(&d->ram, 1, len, 64, &a);

	if (!r)
		r = guest_ram_alloc_in(&d->ram, 1, len, 64, &b);
	if (!r)
		r = h_echo(d, q, a, b, len, indirect);
	return r;
}

#define HP_DIR "/sys/kernel/mm/hugepages/hugepages-2048kB/"
static long hp_saved = -1;

static long read_long(const char *path)
{
	FILE *f = fopen(path, "re");
	long v = -1;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static int write_long(const char *path, long v)
{
	FILE *f = fopen(path, "we");
	int r = 0;

	if (!f)
		return -errno;
	if (fprintf(f, "%ld\n", v) < 0)
		r = -EIO;
	if (fclose(f) != 0 && !r)
		r = -errno;
	return r;
}

int h_hugepages_get(unsigned int n)
{
	long total, avail;

	if (access(HP_DIR, F_OK) != 0) {
		h_skip_reason("kernel has no 2 MiB hugetlb pages (%s)", HP_DIR);
		return H_SKIP;
	}
	avail = read_long(HP_DIR "free_hugepages") -
		read_long(HP_DIR "resv_hugepages");
	if (avail >= n)
		return 0;
	total = read_long(HP_DIR "nr_hugepages");
	if (total < 0)
		return -EIO;
	if (write_long(HP_DIR "nr_hugepages", total + (long)n - avail) < 0) {
		printf("# need %u free 2 MiB pages, have %ld, and cannot "
		       "raise %snr_hugepages (not root?)\n",
		       n, avail, HP_DIR);
		return -EPERM;
	}
	if (hp_saved < 0)
		hp_saved = total;
	avail = read_long(HP_DIR "free_hugepages") -
		read_long(HP_DIR "resv_hugepages");
	if (avail < n) {
		printf("# kernel gave only %ld free 2 MiB pages\n", avail);
		return -ENOMEM;
	}
	return 0;
}

void h_hugepages_restore(void)
{
	if (hp_saved >= 0)
		write_long(HP_DIR "nr_hugepages", hp_saved);
	hp_saved = -1;
}

void h_skip_reason(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(skip_reason, sizeof(skip_reason), fmt, ap);
	va_end(ap);
}

static int run_case(const struct h_case *c, unsigned int n)
{
	struct worker w;
	bool ok;
	int r;

	skip_reason[0] = 0;
	if (worker_start(&w)) {
		worker_stop(&w, true);
		printf("not ok %u - %s\n", n, c->name);
		return 1;
	}
	r = c->run(&w);
	h_hugepages_restore();
	ok = r == 0 || r == H_SKIP;
	if (!worker_alive(&w)) {
		printf("# the worker did not survive\n");
		ok = false;
	}
	worker_stop(&w, !ok);
	if (r == H_SKIP && ok)
		printf("ok %u - %s # SKIP %s\n", n, c->name, skip_reason);
	else
		printf("%s %u - %s\n", ok ? "ok" : "not ok", n, c->name);
	fflush(stdout);
	return ok ? (r == H_SKIP ? H_SKIP : 0) : 1;
}

int h_run(int argc, char **argv, const struct h_case *cases,
	  unsigned int ncases)
{
	unsigned int failed = 0, skipped = 0, selected = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s WORKER_BINARY [CASE...]\n", argv[0]);
		return 2;
	}
	h_worker_path = argv[1];
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (unsigned int i = 0; i < ncases; i++)
		selected += argc == 2 || !strcmp(argv[2], cases[i].name);
	printf("TAP version 13\n1..%u\n", selected);
	for (unsigned int i = 0, n = 0; i < ncases; i++) {
		int r;

		if (argc > 2 && strcmp(argv[2], cases[i].name))
			continue;
		r = run_case(&cases[i], ++n);
		failed += r == 1;
		skipped += r == H_SKIP;
	}
	if (failed)
		return 1;
	return skipped == selected ? H_SKIP : 0;
}
