/* SPDX-License-Identifier: MIT */
/*
 * What the vm test programs share (vm_test.c): a daemon under test started
 * with its stderr in a log file of its own temporary folder, that log
 * searched, and the host's RoCE v2 GID table read from sysfs.
 */
#ifndef RDMAGATE_TESTS_VM_LIB_VM_TEST_H
#define RDMAGATE_TESTS_VM_LIB_VM_TEST_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* A daemon under test: its folder, the socket it listens on, its log. */
struct vt_proc {
	pid_t pid;
	char dir[64], sock[96], log[96];
};

/*
 * A worker test's command line, WORKER [WORKER-OPTION...]: the path and
 * the options for every worker it starts; stdout line-buffered (TAP).
 * 0, or 2 after printing the usage.
 */
int vt_worker_argv(int argc, char **argv, const char **ret_worker,
		   char ***ret_extra);
void vt_sleep_ms(int ms);
/* Waits out the worker's rate-limit window for guest-caused log lines, so
 * that the next such line is logged. */
void vt_peer_log_window(void);

/* Makes /tmp/NAME.XXXXXX, naming p->sock (w.sock) and p->log (w.log) in
 * it; 0 or -errno. */
int vt_proc_dir(struct vt_proc *p, const char *name);
/*
 * Runs head[0] with the arguments head[1..] then extra[] (both NULL-ended,
 * extra may be NULL), its stderr appended to p->log, and waits up to 5 s
 * for p->sock to appear: 0, -ECHILD if it exited first, or -errno.
 */
int vt_proc_start(struct vt_proc *p, const char *const *head,
		  char *const *extra);
bool vt_proc_alive(struct vt_proc *p);
/* Copies the log to stdout as TAP comments. */
void vt_proc_dump_log(const struct vt_proc *p);
/* True once the log has a line containing needle (waits up to 2 s); the
 * line is echoed as a TAP comment. */
bool vt_proc_log_has(const struct vt_proc *p, const char *needle);
/* Lines of the log containing needle, or -1 if it cannot be read. */
int vt_proc_log_count(const struct vt_proc *p, const char *needle);
/* SIGTERM and reap (once; a no-op after). */
void vt_proc_kill(struct vt_proc *p);
/* Kills, dumps the log if asked, removes the folder and its two files. */
void vt_proc_stop(struct vt_proc *p, bool dump_log);

/* The RoCE v2 GID at index i of dev's port 1: 0, -ENOENT for an empty or
 * other-type entry, -ENXIO past the end of the table. */
int vt_gid_at(const char *dev, int i, uint8_t gid[16]);
/* An IPv4-mapped GID (::ffff:a.b.c.d). */
bool vt_gid_is_v4(const uint8_t gid[16]);
/* The first non-zero RoCE v2 GID of the family: its index, or -ENOENT. */
int vt_gid_find(const char *dev, bool v4, uint8_t gid[16]);
/* The index of the RoCE v2 GID want on dev, or -ENOENT. */
int vt_gid_index(const char *dev, const uint8_t want[16]);

#endif
