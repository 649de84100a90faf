// SPDX-License-Identifier: MIT
/* Stale socket files are replaced; live sockets and other files are not. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/unix_socket.h"

static char dir[64];

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/rdmagate-unix-socket.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void path_of(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

/* Binds a socket at path; listens if asked. Returns its fd. */
static int bind_at(const char *path, bool do_listen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	if (do_listen)
		assert_int_equal(listen(fd, 1), 0);
	return fd;
}

static void test_nothing_there_is_fine(void **state)
{
	char p[128];
	struct reason why = { "" };

	path_of(p, sizeof(p), "none.sock");
	assert_int_equal(unix_socket_remove_stale(AT_FDCWD, p, &why), 0);
}

static void test_stale_socket_is_removed(void **state)
{
	char p[128];
	struct reason why = { "" };

	path_of(p, sizeof(p), "stale.sock");
	close(bind_at(p, true)); /* its process is gone: the file stays */
	assert_int_equal(access(p, F_OK), 0);
	assert_int_equal(unix_socket_remove_stale(AT_FDCWD, p, &why), 0);
	assert_int_equal(access(p, F_OK), -1);
}

static void test_live_socket_is_refused(void **state)
{
	char p[128];
	struct reason why = { "" };
	int fd;

	path_of(p, sizeof(p), "live.sock");
	fd = bind_at(p, true);
	assert_int_equal(unix_socket_remove_stale(AT_FDCWD, p, &why),
			 -EADDRINUSE);
	assert_string_equal(why.msg, "something listens there");
	assert_int_equal(access(p, F_OK), 0);
	close(fd);
}

static void test_regular_file_is_refused(void **state)
{
	char p[128];
	struct reason why = { "" };
	int fd;

	path_of(p, sizeof(p), "file");
	fd = open(p, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(unix_socket_remove_stale(AT_FDCWD, p, &why), -EEXIST);
	assert_string_equal(why.msg, "exists and is not a socket");
	assert_int_equal(access(p, F_OK), 0);
}

static void test_symlink_to_socket_is_refused(void **state)
{
	char p[128], link[128];
	struct reason why = { "" };

	path_of(p, sizeof(p), "target.sock");
	close(bind_at(p, true));
	path_of(link, sizeof(link), "link.sock");
	assert_int_equal(symlink(p, link), 0);
	assert_int_equal(unix_socket_remove_stale(AT_FDCWD, link, &why),
			 -EEXIST);
	assert_int_equal(access(p, F_OK), 0);
}

static void test_directory_relative_name(void **state)
{
	char p[128];
	struct reason why = { "" };
	int dfd, cwd = open(".", O_RDONLY | O_DIRECTORY);

	path_of(p, sizeof(p), "rel.sock");
	close(bind_at(p, true));
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0 && cwd >= 0);
	assert_int_equal(fchdir(dfd), 0); /* the documented contract */
	assert_int_equal(unix_socket_remove_stale(dfd, "rel.sock", &why), 0);
	assert_int_equal(fchdir(cwd), 0);
	assert_int_equal(access(p, F_OK), -1);
	close(dfd);
	close(cwd);
}

static void test_overlong_name_is_refused(void **state)
{
	char p[200];
	struct reason why = { "" };

	memset(p, 'a', sizeof(p) - 1);
	p[sizeof(p) - 1] = '\0';
	assert_int_equal(unix_socket_remove_stale(AT_FDCWD, p, &why),
			 -ENAMETOOLONG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nothing_there_is_fine),
		cmocka_unit_test(test_stale_socket_is_removed),
		cmocka_unit_test(test_live_socket_is_refused),
		cmocka_unit_test(test_regular_file_is_refused),
		cmocka_unit_test(test_symlink_to_socket_is_refused),
		cmocka_unit_test(test_directory_relative_name),
		cmocka_unit_test(test_overlong_name_is_refused),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
