// SPDX-License-Identifier: MIT
/*
 * vm test helper: optionally joins a cgroup, opens an RDMA device and
 * allocates up to N protection domains, then says how far it got.
 *   rdma-cg-probe [--join CGROUP_DIR] DEVICE N
 * Prints "open failed: ERR" (exit 2), or "pds K of N[: ERR]" (exit 0 when
 * all N were allocated, 3 otherwise).
 */
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/vm/lib/vm_ibv.h"

static int join(const char *dir)
{
	char path[512], pid[16];
	int fd, len;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	len = snprintf(pid, sizeof(pid), "%d", (int)getpid());
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, pid, (size_t)len) != len) {
		fprintf(stderr, "joining %s: %s\n", dir, strerror(errno));
		return -1;
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	struct ibv_context *ctx;
	int i = 1, n, k;

	if (argc > 2 && !strcmp(argv[1], "--join")) {
		if (join(argv[2]) < 0)
			return 1;
		i = 3;
	}
	if (argc != i + 2) {
		fprintf(stderr, "usage: rdma-cg-probe [--join DIR] DEVICE N\n");
		return 1;
	}
	n = atoi(argv[i + 1]);
	ctx = vt_ibv_open(argv[i]);
	if (!ctx) {
		printf("open failed: %s\n", strerror(errno));
		return 2;
	}
	for (k = 0; k < n; k++) {
		if (!ibv_alloc_pd(ctx)) {
			printf("pds %d of %d: %s\n", k, n, strerror(errno));
			return 3;
		}
	}
	printf("pds %d of %d\n", k, n);
	return 0;
}
