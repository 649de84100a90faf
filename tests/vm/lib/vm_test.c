// SPDX-License-Identifier: MIT
/*
 * The vm test programs' shared helpers (vm_test.h): daemons under test and
 * their logs, the host's GID table.
 */
#include "vm_test.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"

#define VT_ARGV_MAX 48
#define VT_GID_MAX  256

int vt_worker_argv(int argc, char **argv, const char **ret_worker,
		   char ***ret_extra)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2) {
		fprintf(stderr, "usage: %s WORKER [WORKER-OPTION...]\n",
			argv[0]);
		return 2;
	}
	*ret_worker = argv[1];
	*ret_extra = argv + 2;
	return 0;
}

void vt_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

void vt_peer_log_window(void)
{
	vt_sleep_ms(LOG_PEER_INTERVAL_MS + 200);
}

/* ---- daemons under test ---- */

int vt_proc_dir(struct vt_proc *p, const char *name)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->dir, sizeof(p->dir), "/tmp/%s.XXXXXX", name);
	if (!mkdtemp(p->dir))
		return -errno;
	snprintf(p->sock, sizeof(p->sock), "%s/w.sock", p->dir);
	snprintf(p->log, sizeof(p->log), "%s/w.log", p->dir);
	return 0;
}

/* In the child: stderr to the log, then the program. */
static void __attribute__((noreturn))
exec_logged(const struct vt_proc *p, char *const *argv)
{
	int fd = open(p->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

	if (fd < 0 || dup2(fd, 2) < 0)
		_exit(127);
	execv(argv[0], argv);
	_exit(127);
}

int vt_proc_start(struct vt_proc *p, const char *const *head,
		  char *const *extra)
{
	char *argv[VT_ARGV_MAX];
	size_t n = 0;

	for (; *head && n < VT_ARGV_MAX - 1; head++)
		argv[n++] = (char *)*head;
	for (; extra && *extra && n < VT_ARGV_MAX - 1; extra++)
		argv[n++] = *extra;
	argv[n] = NULL;
	p->pid = fork();
	if (p->pid < 0)
		return -errno;
	if (p->pid == 0)
		exec_logged(p, argv);
	for (int i = 0; i < 500; i++) {
		struct stat st;

		if (stat(p->sock, &st) == 0)
			return 0;
		if (waitpid(p->pid, NULL, WNOHANG) == p->pid) {
			p->pid = 0;
			return -ECHILD;
		}
		vt_sleep_ms(10);
	}
	return -ETIMEDOUT;
}

bool vt_proc_alive(struct vt_proc *p)
{
	return p->pid > 0 && waitpid(p->pid, NULL, WNOHANG) == 0;
}

void vt_proc_dump_log(const struct vt_proc *p)
{
	char line[512];
	FILE *f = fopen(p->log, "re");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		printf("#   | %s", line);
	fclose(f);
}

bool vt_proc_log_has(const struct vt_proc *p, const char *needle)
{
	char line[512];
	bool found = false;

	for (int t = 0; t < 200 && !found; t++) {
		FILE *f = fopen(p->log, "re");

		if (!f)
			return false;
		while (!found && fgets(line, sizeof(line), f))
			found = strstr(line, needle) != NULL;
		fclose(f);
		if (!found)
			vt_sleep_ms(10);
	}
	if (found)
		printf("# worker said: %s", line);
	return found;
}

int vt_proc_log_count(const struct vt_proc *p, const char *needle)
{
	char line[512];
	FILE *f = fopen(p->log, "re");
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	fclose(f);
	return n;
}

void vt_proc_kill(struct vt_proc *p)
{
	if (p->pid > 0) {
		kill(p->pid, SIGTERM);
		waitpid(p->pid, NULL, 0);
		p->pid = 0;
	}
}

void vt_proc_stop(struct vt_proc *p, bool dump_log)
{
	vt_proc_kill(p);
	if (dump_log)
		vt_proc_dump_log(p);
	if (!p->dir[0])
		return;
	unlink(p->sock);
	unlink(p->log);
	rmdir(p->dir);
}

/* ---- the host's GID table ---- */

/* The first line of a sysfs file: 0, or -errno. */
static int read_line(const char *path, char *buf, int len)
{
	FILE *f = fopen(path, "re");
	int r = 0;

	if (!f)
		return -errno;
	if (!fgets(buf, len, f))
		r = -EIO; /* an empty GID entry reads as an error */
	fclose(f);
	return r;
}

int vt_gid_at(const char *dev, int i, uint8_t gid[16])
{
	char base[96], path[160], s[64], t[32];
	unsigned int w[8];

	snprintf(base, sizeof(base), "/sys/class/infiniband/%s/ports/1", dev);
	snprintf(path, sizeof(path), "%s/gid_attrs/types/%d", base, i);
	if (access(path, F_OK))
		return -ENXIO;
	if (read_line(path, t, sizeof(t)) || !strstr(t, "v2"))
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/gids/%d", base, i);
	if (read_line(path, s, sizeof(s)) ||
	    sscanf(s, "%x:%x:%x:%x:%x:%x:%x:%x", &w[0], &w[1], &w[2], &w[3],
		   &w[4], &w[5], &w[6], &w[7]) != 8)
		return -ENOENT;
	for (int k = 0; k < 8; k++) {
		gid[2 * k] = (uint8_t)(w[k] >> 8);
		gid[2 * k + 1] = (uint8_t)w[k];
	}
	return 0;
}

bool vt_gid_is_v4(const uint8_t gid[16])
{
	static const uint8_t p[12] = {
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
	};

	return !memcmp(gid, p, 12);
}

static bool gid_is_zero(const uint8_t gid[16])
{
	static const uint8_t z[16];

	return !memcmp(gid, z, 16);
}

int vt_gid_find(const char *dev, bool v4, uint8_t gid[16])
{
	int r = 0;

	for (int i = 0; i < VT_GID_MAX && r != -ENXIO; i++) {
		r = vt_gid_at(dev, i, gid);
		if (!r && !gid_is_zero(gid) && vt_gid_is_v4(gid) == v4)
			return i;
	}
	return -ENOENT;
}

int vt_gid_index(const char *dev, const uint8_t want[16])
{
	uint8_t gid[16];
	int r = 0;

	for (int i = 0; i < VT_GID_MAX && r != -ENXIO; i++) {
		r = vt_gid_at(dev, i, gid);
		if (!r && !memcmp(gid, want, 16))
			return i;
	}
	return -ENOENT;
}
