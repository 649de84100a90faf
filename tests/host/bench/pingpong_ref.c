// SPDX-License-Identifier: MIT
/*
 * The references of the transport benchmark (transport-bench.sh): the
 * cheapest round trip two processes on this machine can make, measured in
 * the same minutes as the echo device.  "event": an eventfd each way, both
 * sides blocked in read() (what an interrupt-driven guest and the worker's
 * epoll loop pay at least); "poll": a 64-byte message in a shared page,
 * both sides spinning on a sequence number and yielding the CPU between
 * looks, as the guest simulator's polled reap does.  Prints one line:
 * "ref MODE: N round trips, X us each".
 */
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"

#define MSG 64

static int ev_wait(int fd)
{
	uint64_t v;

	while (read(fd, &v, sizeof(v)) != sizeof(v))
		if (errno != EINTR)
			return -1;
	return 0;
}

static int ev_post(int fd)
{
	uint64_t one = 1;

	return write(fd, &one, sizeof(one)) == sizeof(one) ? 0 : -1;
}

/* The peer: answers n pings. */
static int event_peer(int ping, int pong, unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		if (ev_wait(ping) || ev_post(pong))
			return 1;
	return 0;
}

static int event_side(int ping, int pong, unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		if (ev_post(ping) || ev_wait(pong))
			return 1;
	return 0;
}

/* A shared page: a message each way and the sequence numbers. */
struct shm {
	uint64_t ping_seq;
	uint8_t ping[MSG];
	uint64_t pong_seq __attribute__((aligned(64)));
	uint8_t pong[MSG];
};

static void spin_until(const uint64_t *seq, uint64_t want)
{
	while (__atomic_load_n(seq, __ATOMIC_ACQUIRE) != want)
		sched_yield();
}

static int poll_peer(struct shm *s, unsigned long n)
{
	for (unsigned long i = 1; i <= n; i++) {
		spin_until(&s->ping_seq, i);
		memcpy(s->pong, s->ping, MSG);
		__atomic_store_n(&s->pong_seq, i, __ATOMIC_RELEASE);
	}
	return 0;
}

static int poll_side(struct shm *s, unsigned long n)
{
	for (unsigned long i = 1; i <= n; i++) {
		memset(s->ping, (int)(i & 0xff), MSG);
		__atomic_store_n(&s->ping_seq, i, __ATOMIC_RELEASE);
		spin_until(&s->pong_seq, i);
		if (s->pong[MSG - 1] != (uint8_t)(i & 0xff))
			return 1;
	}
	return 0;
}

static void pin_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0)
		perror("pingpong-ref: sched_setaffinity");
}

int main(int argc, char **argv)
{
	unsigned long n = argc == 3 ? strtoul(argv[2], NULL, 0) : 0;
	bool event = argc == 3 && !strcmp(argv[1], "event");
	int ping = eventfd(0, EFD_CLOEXEC), pong = eventfd(0, EFD_CLOEXEC);
	struct shm *s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE,
			     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int st = 1, ret;
	double t0, dt;
	pid_t pid;

	if (!n || (!event && strcmp(argv[1], "poll"))) {
		fprintf(stderr, "usage: pingpong-ref event|poll N\n");
		return 2;
	}
	if (ping < 0 || pong < 0 || s == MAP_FAILED) {
		perror("pingpong-ref");
		return 1;
	}
	memset(s, 0, sizeof(*s));
	pid = fork();
	if (pid < 0) {
		perror("pingpong-ref: fork");
		return 1;
	}
	/*
	 * PINGPONG_SPLIT=1: the two sides on CPUs 0 and 1, as a worker
	 * spinning on one CPU leaves its guest the other (each wake-up then
	 * crosses CPUs); unset, the scheduler places them.
	 */
	if (getenv("PINGPONG_SPLIT") && !strcmp(getenv("PINGPONG_SPLIT"), "1"))
		pin_cpu(pid == 0 ? 1 : 0);
	if (pid == 0)
		_exit(event ? event_peer(ping, pong, n) : poll_peer(s, n));
	t0 = (double)mono_ns() / 1e9;
	ret = event ? event_side(ping, pong, n) : poll_side(s, n);
	dt = (double)mono_ns() / 1e9 - t0;
	if (waitpid(pid, &st, 0) < 0 || ret || !WIFEXITED(st) ||
	    WEXITSTATUS(st)) {
		fprintf(stderr, "pingpong-ref: %s ping-pong failed\n", argv[1]);
		return 1;
	}
	printf("ref %s: %lu round trips, %.2f us each\n", argv[1], n,
	       dt * 1e6 / (double)n);
	return 0;
}
