// SPDX-License-Identifier: MIT
/*
 * Fires every probe of common/probes.h a known number of times with known
 * arguments, from two processes (VMs "vm-a" and "vm-b") that post the same
 * wr_ids on the same QPN at the same time; or times one probe in a loop.
 *
 *   probe_fire fire N        vm-a fires each group N times, vm-b 2N times
 *   probe_fire as VM N       one process as VM (any bytes: a hostile name)
 *                            posts and completes N writes, then fires
 *                            every other group N times
 *   probe_fire sema          prints the semaphores (1 when traced)
 *   probe_fire bench N       ns per kick probe, and per ENABLED() check
 *
 * The counts a tracer must see are in tests/host/trace/test_trace.sh.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RDMAGATE_PROBES_DEFINE
#include "common/clock.h"
#include "common/probes.h"

#define QPN	      17
#define OP_RDMA_WRITE 1	  /* VIRTIO_RDMA_WC_RDMA_WRITE */
#define OP_RECV	      128 /* VIRTIO_RDMA_WC_RECV */
#define CMD_CREATE_CQ 2
#define CMD_MODIFY_QP 12

/*
 * The VM names, written at run time like the worker's argv-backed --vm:
 * the tracer reads them without faulting pages in, so they must be
 * resident (a never-touched .rodata page reads as "?").
 */
static char vm_a[32], vm_b[32];

static void post_writes(const char *vm, unsigned long n)
{
	unsigned long i;

	for (i = 0; i < n; i++)
		RDMAGATE_WR_POST(vm, QPN, OP_RDMA_WRITE, (uint64_t)i,
				 (uint64_t)4096);
}

static void complete_writes(const char *vm, unsigned long n)
{
	unsigned long i;

	for (i = 0; i < n; i++)
		RDMAGATE_WR_COMPLETE(vm, QPN, (uint64_t)i, 0u, OP_RDMA_WRITE);
}

/* Everything but the RDMA writes, n times. */
static void fire_rest(const char *vm, unsigned long n)
{
	static const uint8_t gid[16] = { 0xfe, 0x80, [15] = 1 };
	unsigned long i;

	for (i = 0; i < n; i++) {
		uint64_t rid = (1ull << 32) | i;

		RDMAGATE_KICK(vm, 3u);
		RDMAGATE_CTRL_CMD(vm, CMD_CREATE_CQ, 0u, (uint64_t)5000);
		RDMAGATE_CTRL_CMD(vm, CMD_MODIFY_QP, 3u, (uint64_t)300000);
		/* a receive that ends in error, and an element refused */
		RDMAGATE_WR_POST(vm, QPN, OP_RECV, rid, (uint64_t)100);
		RDMAGATE_WR_COMPLETE(vm, QPN, rid, 5u, OP_RECV);
		RDMAGATE_WR_COMPLETE(vm, QPN, (2ull << 32) | i, 2u,
				     OP_RDMA_WRITE);
		RDMAGATE_CQ_OVERFLOW(vm, 4u);
		RDMAGATE_MAD_SEND(vm, 1u, 256u);
		RDMAGATE_MAD_RECV(vm, 1u, 256u);
		RDMAGATE_MAD_DROP(vm, (uint32_t)RDMAGATE_MAD_DROP_NO_MUX, 256u);
		RDMAGATE_WORKER_SPAWN(vm, (int)getpid());
		RDMAGATE_WORKER_EXIT(vm, (int)getpid(),
				     (uint32_t)RDMAGATE_WORKER_EXITED, 0);
		RDMAGATE_GID_ADD(vm, 1u, 2u, gid);
		RDMAGATE_GID_DEL(vm, 1u, 2u, gid);
		RDMAGATE_POLICY_REFUSE(vm, (uint32_t)RDMAGATE_POLICY_GID,
				       "test refusal");
		RDMAGATE_MAD_ROUTE(vm, 0x81u, 0x11u);
		RDMAGATE_MAD_ROUTE_DROP(
			vm, (uint32_t)RDMAGATE_MAD_DROP_NO_ROUTE, 0x81u);
	}
}

/*
 * vm-a posts n writes; then vm-b (a child) posts 2n with the same wr_ids
 * 0..n-1 on the same QPN and completes them; then vm-a completes its own.
 * A tracer keying in-flight posts without the process would match vm-a's
 * completions to nothing.
 */
static int fire(unsigned long n)
{
	int go[2], status;
	pid_t pid;
	char c = 0;

	if (pipe(go) < 0)
		return -errno;
	snprintf(vm_a, sizeof(vm_a), "vm-a");
	post_writes(vm_a, n);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		snprintf(vm_b, sizeof(vm_b), "vm-b");
		post_writes(vm_b, 2 * n);
		complete_writes(vm_b, 2 * n);
		fire_rest(vm_b, 2 * n);
		_exit(0);
	}
	close(go[0]);
	if (write(go[1], &c, 1) != 1)
		return -EIO;
	close(go[1]);
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return -ECHILD;
	complete_writes(vm_a, n);
	fire_rest(vm_a, n);
	return 0;
}

/* One process as VM vm (cut to the tracer's 31 bytes). */
static void fire_as(const char *vm, unsigned long n)
{
	snprintf(vm_a, sizeof(vm_a), "%s", vm);
	post_writes(vm_a, n);
	complete_writes(vm_a, n);
	fire_rest(vm_a, n);
}

static void sema(void)
{
#define PRINT_SEMA(name) printf("%s=%u\n", #name, rdmagate_##name##_semaphore);
	RDMAGATE_PROBES(PRINT_SEMA)
#undef PRINT_SEMA
}

static void bench(unsigned long n)
{
	uint64_t t0, t1, t2;
	unsigned long i, on = 0;

	t0 = mono_ns();
	snprintf(vm_a, sizeof(vm_a), "bench");
	for (i = 0; i < n; i++)
		RDMAGATE_KICK(vm_a, (uint32_t)i);
	t1 = mono_ns();
	for (i = 0; i < n; i++)
		on += RDMAGATE_CTRL_CMD_ENABLED() ? 1 : 0;
	t2 = mono_ns();
	printf("kick: %lu probes in %.3f ms: %.1f ns per probe "
	       "(kick semaphore %u)\n",
	       n, (double)(t1 - t0) / 1e6, (double)(t1 - t0) / (double)n,
	       rdmagate_kick_semaphore);
	printf("ENABLED() check: %.2f ns (ctrl_cmd semaphore %u, %lu set)\n",
	       (double)(t2 - t1) / (double)n, rdmagate_ctrl_cmd_semaphore, on);
}

static unsigned long parse_n(const char *s)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || !v || v > 100000000ul) {
		fprintf(stderr, "probe_fire: bad count '%s'\n", s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "sema")) {
		sema();
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "fire")) {
		int ret = fire(parse_n(argv[2]));

		if (ret < 0)
			fprintf(stderr, "probe_fire: %s\n", strerror(-ret));
		return ret < 0;
	}
	if (argc == 4 && !strcmp(argv[1], "as")) {
		fire_as(argv[2], parse_n(argv[3]));
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "bench")) {
		bench(parse_n(argv[2]));
		return 0;
	}
	fprintf(stderr,
		"usage: probe_fire fire N | as VM N | sema | bench N\n");
	return 2;
}
