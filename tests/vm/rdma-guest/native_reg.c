// SPDX-License-Identifier: MIT
/*
 * native-reg DEV [SIZE_MIB [REPEAT [fresh]]]: times ibv_reg_mr() of a
 * SIZE MiB buffer (default 1024) on a host verbs device, the native
 * reference for the registration figure of bench.sh. The buffer is a
 * shared memfd mapping, touched first. With "fresh" each registration is
 * of a new mapping of the same (already filled) memfd, whose page tables
 * are empty: what a worker that maps guest RAM for the MR sees.
 */
#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "tests/vm/lib/vm_ibv.h"

int main(int argc, char **argv)
{
	size_t size = (argc > 2 ? strtoul(argv[2], NULL, 0) : 1024) << 20;
	int repeat = argc > 3 ? atoi(argv[3]) : 3;
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	void *buf;
	int fd;

	bool fresh = argc > 4 && !strcmp(argv[4], "fresh");

	if (argc < 2 || !size || repeat < 1) {
		fprintf(stderr, "usage: %s DEV [SIZE_MIB [REPEAT [fresh]]]\n",
			argv[0]);
		return 2;
	}
	ctx = vt_ibv_open(argv[1]);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	fd = memfd_create("native-reg", MFD_CLOEXEC);
	if (!pd || fd < 0 || ftruncate(fd, (off_t)size)) {
		fprintf(stderr, "native-reg: cannot set up %s\n", argv[1]);
		return 1;
	}
	buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (buf == MAP_FAILED)
		return 1;
	memset(buf, 1, size);
	for (int i = 0; i < repeat; i++) {
		void *m = fresh ? mmap(NULL, size, PROT_READ | PROT_WRITE,
				       MAP_SHARED, fd, 0)
				: buf;
		uint64_t t0 = mono_ns(), t1;
		struct ibv_mr *mr = m == MAP_FAILED
					    ? NULL
					    : ibv_reg_mr(pd, m, size, access);

		t1 = mono_ns();
		if (!mr) {
			perror("ibv_reg_mr");
			return 1;
		}
		printf("native reg_mr %zu MiB%s: %.3f ms\n", size >> 20,
		       fresh ? " (fresh mapping)" : "",
		       (double)(t1 - t0) / 1e6);
		ibv_dereg_mr(mr);
		if (fresh)
			munmap(m, size);
	}
	munmap(buf, size);
	close(fd);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}
