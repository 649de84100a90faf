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

int unix_socket_remove_stale(int dfd, const char *name, const char **ret_why)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (strlen(name) >= sizeof(sa.sun_path)) {
		*ret_why = "path too long for a UNIX socket";
		return -ENAMETOOLONG;
	}
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		*ret_why = "cannot look at it";
		return errno == ENOENT ? 0 : -errno;
	}
	if (!S_ISSOCK(st.st_mode)) {
		*ret_why = "exists and is not a socket";
		return -EEXIST;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		*ret_why = "cannot create a probe socket";
		return -errno;
	}
	memcpy(sa.sun_path, name, strlen(name) + 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		*ret_why = "something listens there";
		return -EADDRINUSE;
	}
	if (unlinkat(dfd, name, 0) < 0) {
		*ret_why = "cannot remove the stale socket";
		return -errno;
	}
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
