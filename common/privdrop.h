/* SPDX-License-Identifier: MIT */
/*
 * The privilege drop of a process that gives up root for good: the broker
 * runs it for each worker between fork and exec, the mux for itself after
 * opening its umad ports.  Linked by both, so it lives in common/ (the
 * worker's own sandbox, the seccomp allow-list, is worker/sandbox/).
 */
#ifndef RDMAGATE_COMMON_PRIVDROP_H
#define RDMAGATE_COMMON_PRIVDROP_H

#include <sys/types.h>

/*
 * Switches to uid/gid (both non-zero) with no supplementary groups,
 * clears every capability set (effective, permitted, inheritable,
 * bounding, ambient), sets no_new_privs, then checks that each of those
 * took effect.  Needs root (CAP_SETUID, CAP_SETGID, CAP_SETPCAP).
 * Returns 0, -EINVAL for uid or gid 0, -EPERM when a step failed or a
 * check did not hold (logged), or -errno.
 */
int privdrop_to(uid_t uid, gid_t gid);

#endif
