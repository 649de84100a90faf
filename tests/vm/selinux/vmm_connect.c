// SPDX-License-Identifier: MIT
/*
 * Test only (selinux-flow-vm): the stand-in for libvirt's QEMU, run in
 * svirt_t at a VM's categories: connects to each unix socket path given,
 * and says per path "PATH: connected" or "PATH: <the error>".  Exit status
 * 0 when every connect went as expected: "+PATH" must connect, "-PATH"
 * must be refused with EACCES (what SELinux answers).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int try_connect(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd, r = 0;

	if (strlen(path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	memcpy(a.sun_path, path, strlen(path));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		r = -errno;
	close(fd);
	return r;
}

int main(int argc, char **argv)
{
	int i, r, bad = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s +PATH|-PATH...\n", argv[0]);
		return 2;
	}
	for (i = 1; i < argc; i++) {
		if (argv[i][0] != '+' && argv[i][0] != '-') {
			fprintf(stderr, "%s: not +PATH nor -PATH\n", argv[i]);
			return 2;
		}
		r = try_connect(argv[i] + 1);
		printf("%s: %s\n", argv[i] + 1, r ? strerror(-r) : "connected");
		if (argv[i][0] == '+' ? r != 0 : r != -EACCES)
			bad++;
	}
	return bad ? 1 : 0;
}
