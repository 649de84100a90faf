/* SPDX-License-Identifier: MIT */
/*
 * The worker's sandbox: the seccomp allow-list installed after the verbs
 * device is open and before any guest input is read.  docs/sandbox.md
 * lists every allowed syscall and why.
 *
 * Order at worker start: the broker drops the worker's privileges between
 * fork and exec (common/privdrop.h); the worker takes its config and fds,
 * opens the verbs device and caches what needs sysfs (GID and P_Key
 * tables), then sandbox_install_worker_filter(), then the event loop.
 */
#ifndef RDMAGATE_WORKER_SANDBOX_H
#define RDMAGATE_WORKER_SANDBOX_H

#include <stdbool.h>
#include <sys/types.h>

/* The one ioctl request rdma-core's ioctl path uses: _IOWR(0x1b, 1, 24). */
#define SANDBOX_RDMA_VERBS_IOCTL 0xc0181b01U

/*
 * The fds the filter names.  A negative fd disables the rules that need
 * it (no cmd_fd: no verbs ioctl and no write to it).
 */
struct sandbox_worker_params {
	/* verbs context cmd_fd (ibv_context->cmd_fd): ioctl, doorbell write */
	int cmd_fd;
	/* the worker's epoll instance: the only epoll_ctl target */
	int epoll_fd;
	/*
	 * The connected vhost-user socket.  When it is known (>= 0) the
	 * socket calls are allowed on it alone; when it is -1 (the worker
	 * accepts its frontend on listen_fd, so the connection's fd is not
	 * known yet) they are allowed on any fd the worker holds.
	 */
	int vu_fd;
	/* the listening socket, or -1: the only accept4 target */
	int listen_fd;
	/*
	 * The broker channel's listening socket, or -1 (no broker): accept4
	 * on it, SO_PEERCRED of what it accepts, its messages (so the socket
	 * calls are then allowed on any fd), and poll while a GID request
	 * waits for the broker.
	 */
	int broker_fd;
	/* where log lines go (2): any write size allowed on it */
	int log_fd;
	/*
	 * Debug mode: a forbidden syscall traps instead of killing the
	 * process; a SIGSYS handler writes its number to log_fd and makes
	 * it fail with ENOSYS, so one run lists every missing syscall.
	 * Never for production.
	 */
	bool debug;
};

/*
 * Loads the worker's allow-list into the calling thread (the worker is
 * single-threaded; load it before creating any thread).  Default action:
 * kill the process (SIGSYS); a syscall from another ABI (i386 or x32 on
 * x86_64) is killed too.  Sets no_new_privs if it is not set yet.
 * Returns 0, -ENOTSUP on an architecture whose syscall list was not
 * reviewed (x86_64 and aarch64 are), -EINVAL for bad params, or -errno
 * from libseccomp / the kernel.  Every failure is logged.
 */
int sandbox_install_worker_filter(const struct sandbox_worker_params *p);

/*
 * Writes the filter that p describes to fd in libseccomp's readable PFC
 * form, without loading it.  Returns 0 or -errno.
 */
int sandbox_export_pfc(const struct sandbox_worker_params *p, int fd);

/* Sets every fd of p to -1, log_fd to 2 and debug to false. */
void sandbox_worker_params_init(struct sandbox_worker_params *p);

#endif
