// SPDX-License-Identifier: MIT
/* Stale UNIX socket files: see unix_socket.h. */
#include "unix_socket.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cleanup.h"
#include "log.h"

int unix_socket_remove_stale(int dfd, const char *name, struct reason *why)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (strlen(name) >= sizeof(sa.sun_path))
		return reason_fail(why, -ENAMETOOLONG,
				   "path too long for a UNIX socket");
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT
			       ? 0
			       : reason_fail(why, -errno, "cannot look at it");
	if (!S_ISSOCK(st.st_mode))
		return reason_fail(why, -EEXIST, "exists and is not a socket");
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return reason_fail(why, -errno, "cannot create a probe socket");
	memcpy(sa.sun_path, name, strlen(name) + 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		return reason_fail(why, -EADDRINUSE, "something listens there");
	if (unlinkat(dfd, name, 0) < 0)
		return reason_fail(why, -errno,
				   "cannot remove the stale socket");
	log_info("removed the stale socket %s", name);
	return 0;
}

int unix_socket_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	return TAKE_FD(fd);
}
