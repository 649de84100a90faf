/* SPDX-License-Identifier: MIT */
/*
 * The worker's SELinux step (rdmagate-worker, before its seccomp filter):
 * the broker's exec put it in rdmagate_worker_t, which may open its verbs
 * device; once the device, the sockets and the epoll instance are open, it
 * switches itself (setcon, a dyntransition) into rdmagate_worker_sandbox_t,
 * which may open nothing, create no socket and execute nothing
 * (selinux/rdmagate.te, docs/selinux.md).
 */
#ifndef RDMAGATE_WORKER_SANDBOX_SELINUX_H
#define RDMAGATE_WORKER_SANDBOX_SELINUX_H

#include <stddef.h>

#include "common/reason.h"

/* The worker's two domains (selinux/rdmagate.te). */
#define SANDBOX_SELINUX_WORKER_TYPE  "rdmagate_worker_t"
#define SANDBOX_SELINUX_SANDBOX_TYPE "rdmagate_worker_sandbox_t"

/*
 * The context the worker switches to, from its current one: the type
 * rdmagate_worker_t replaced by rdmagate_worker_sandbox_t, user, role and
 * level (MCS/MLS range) kept (sandbox_selinux_enter() then sets the VM's
 * level, if given).  Pure (no kernel, no policy).
 * Returns 1 and *ret (the caller frees it) when cur's type is
 * rdmagate_worker_t, 0 and *ret = NULL when it is another type (not
 * confined by this module: nothing to do), -EINVAL when cur is not a
 * context (why says what is wrong), -ENOMEM.
 */
int sandbox_selinux_context(const char *cur, char **ret, struct reason *why);

/*
 * The MCS level (e.g. "s0:c12,c345", the broker's --selinux-level) the
 * sandbox context takes instead of the current one: each VM's worker at
 * its own categories.  The string must outlive sandbox_selinux_enter().
 */
void sandbox_selinux_set_level(const char *level);

/*
 * Switches the calling process into the sandbox domain.  Must run after
 * everything that opens files or creates sockets and before the seccomp
 * filter is loaded, while the process is single-threaded.
 *
 * Returns 0 when done, and also (doing nothing) when SELinux is disabled,
 * or when the current type is not rdmagate_worker_t (unconfined, run by
 * hand: logged at debug).  A failure when SELinux is enforcing returns
 * -errno with why filled; in permissive mode it is logged and returns 0.
 */
int sandbox_selinux_enter(struct reason *why);

#endif
