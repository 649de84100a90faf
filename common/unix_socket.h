/* SPDX-License-Identifier: MIT */
/*
 * UNIX socket files shared by the worker (its vhost-user socket) and the
 * broker (the sockets it creates for workers): a socket file left behind by
 * a process that is gone may be replaced; anything else may not.  And the
 * clients' side (the guest simulator's VMM): connecting to one.
 */
#ifndef RDMAGATE_COMMON_UNIX_SOCKET_H
#define RDMAGATE_COMMON_UNIX_SOCKET_H

#include "common/reason.h"

/*
 * Removes `name` if it is a socket nobody listens on. `name` is looked up
 * relative to `dfd` (AT_FDCWD or a directory fd) for the checks and the
 * unlink, and relative to the current directory for the connect() probe:
 * a caller with a directory fd must have fchdir()'d to it.
 * Returns 0 (nothing there, or a stale socket removed), -EEXIST (not a
 * socket), -EADDRINUSE (something listens there) or -errno; on failure
 * why says why in a few words.
 */
int unix_socket_remove_stale(int dfd, const char *name, struct reason *why);

/*
 * Connects a new close-on-exec stream socket to `path`.  Returns the fd,
 * or -ENAMETOOLONG / the -errno of socket() or connect().
 */
int unix_socket_connect(const char *path);

#endif
