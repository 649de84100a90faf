/* SPDX-License-Identifier: MIT */
/*
 * Shared harness of the host integration tests: runs the real worker
 * binary on a socket in a private temp dir with its stderr in a file,
 * reads that log, drives the guest simulator against it, and reports
 * each case in TAP (one "ok"/"not ok" line per case, "# SKIP" with why).
 */
#ifndef RDMAGATE_TESTS_HOST_HARNESS_H
#define RDMAGATE_TESTS_HOST_HARNESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "common/cleanup.h"
#include "tests/check.h"
#include "guest/guest_dev.h"

#define H_SKIP	     77
#define H_TIMEOUT_MS 3000

struct worker {
	pid_t pid;
	char dir[64];
	char sock[96];
	char log[96];
	long mark; /* log offset where the current case's lines start */
};

/* Path of the worker binary (argv[1] of the test, from meson). */
extern const char *h_worker_path;
/* Start workers with --frontend vfio-user --test-device pci-test. */
extern bool h_vfio_user;
/* More worker options (NULL-terminated, at most 8), e.g. --sandbox-debug. */
extern const char *const *h_worker_extra_args;

/* Starts the echo-device (or vfio-user test function) worker; waits
 * until its socket accepts. */
int worker_start(struct worker *w);
/* True if it has not exited (reaps it if it has, printing why). */
bool worker_alive(struct worker *w);
/* SIGTERM, reap, remove the temp dir; prints its log if `dump`. */
void worker_stop(struct worker *w, bool dump);
/* Remembers the log's current end: later searches start there. */
void worker_log_mark(struct worker *w);
/*
 * Waits up to timeout_ms for a log line written since the mark that
 * contains every one of the NULL-terminated, case-insensitive needles.
 * Returns true and prints the line as a TAP comment when found; prints the
 * lines since the mark when not.
 */
bool worker_log_waitv(struct worker *w, int timeout_ms,
		      const char *const *needles);
/* True if the whole log (start-up included) has a line containing needle,
 * case-insensitive; no waiting. */
bool worker_log_has(struct worker *w, const char *needle);
/* Lines logged since the mark, printed as TAP comments. */
void worker_log_dump_since_mark(struct worker *w);

/* A guest_dev released on every return path of the case. */
static inline void h_dev_release(struct guest_dev *d)
{
	guest_dev_release(d);
}
#define H_DEV(d)                                                               \
	__attribute__((cleanup(h_dev_release))) struct guest_dev d;            \
	guest_dev_init(&d)

/* Options QEMU-like by default: every protocol feature we implement. */
struct vhost_client_opts h_opts(void);
/* Connects to w and runs the QEMU init handshake (config read too). */
int h_connect(struct guest_dev *d, struct worker *w,
	      const struct vhost_client_opts *opts);
/* Standard layout: 4 MiB at GPA 0 (rings), a hole, 4 MiB at 4 GiB. */
int h_layout_basic(struct guest_dev *d, uint64_t page);
/* connect + layout_basic + start(VERSION_1|INDIRECT) + queue 0 (256). */
int h_bring_up(struct guest_dev *d, struct worker *w,
	       const struct vhost_client_opts *opts, struct guest_vq **ret_q);
/*
 * One echo round trip of `len` bytes from a buffer at out_gpa into one at
 * in_gpa (both in d->ram) on q; checks used len and data. 0 or -errno.
 */
int h_echo(struct guest_dev *d, struct guest_vq *q, uint64_t out_gpa,
	   uint64_t in_gpa, uint32_t len, bool indirect);
/* Same with buffers allocated in slot 1 (above the hole). */
int h_echo_alloc(struct guest_dev *d, struct guest_vq *q, uint32_t len,
		 bool indirect);
/* Fills len bytes at gpa with a pattern derived from seed. */
void h_fill(struct guest_dev *d, uint64_t gpa, uint32_t len, uint32_t seed);

/* Makes sure `n` free 2 MiB huge pages exist (root raises the pool);
 * remembers what to restore. Returns 0, H_SKIP or -errno. */
int h_hugepages_get(unsigned int n);
void h_hugepages_restore(void);

/* TAP runner. */
struct h_case {
	const char *name;
	int (*run)(struct worker *w); /* 0 pass, H_SKIP, else fail */
};
/* A table entry named after its function: H_CASE(fn). */
#define H_CASE(fn)                                                             \
	{                                                                      \
#fn, fn                                                        \
	}
int h_run(int argc, char **argv, const struct h_case *cases,
	  unsigned int ncases);
/* Sets the reason printed with "# SKIP". */
void h_skip_reason(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
