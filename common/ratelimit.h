/* SPDX-License-Identifier: MIT */
/*
 * The one rate limiter for what a less-trusted peer can cause (a guest's,
 * a frontend's or a worker's log lines, in every process): a token bucket,
 * pure (the caller passes "now", so tests pass a fake clock), that counts
 * what it drops so that the caller can say how much was.
 *
 * The bucket holds at most `burst` tokens and gets `refill` back every
 * `period_ms`; a line takes one, a line without one is dropped and counted.
 * A full bucket banks no time.  Two shapes cover every caller:
 *
 *  RATELIMIT_WINDOW(ms, n): n lines, then nothing until ms after the first
 *    of them, when a new window of n opens (Linux's printk ratelimit): the
 *    peer lines of common/log.h, the mux's lines per worker, the PVRDMA
 *    command refusals per command;
 *  RATELIMIT_RATE(per_s, n): bursts of n, then per_s lines a second
 *    sustained: a worker's log stream as the broker re-emits it.
 */
#ifndef RDMAGATE_COMMON_RATELIMIT_H
#define RDMAGATE_COMMON_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

struct ratelimit {
	uint32_t burst;	     /* tokens the bucket holds at most */
	uint32_t refill;     /* tokens back per period_ms (>= 1) */
	uint32_t period_ms;  /* (>= 1) */
	bool started;	     /* the bucket has been filled once */
	uint32_t tokens;     /* lines that may pass now */
	uint64_t fill_ms;    /* when the last refill counted from */
	uint64_t suppressed; /* lines dropped since the last report */
};

#define RATELIMIT_WINDOW(ms, n)                                                \
	{                                                                      \
		.burst = (n), .refill = (n), .period_ms = (ms)                 \
	}
#define RATELIMIT_RATE(per_s, n)                                               \
	{                                                                      \
		.burst = (n), .refill = 1, .period_ms = 1000 / (per_s)         \
	}

/*
 * True if a line may pass at now_ms, with *ret_suppressed the lines dropped
 * before it (then forgotten: the caller says how many, once); false after
 * counting the line as dropped (*ret_suppressed untouched).  A clock that
 * goes back (a test's) fills the bucket again.
 */
bool ratelimit_pass(struct ratelimit *rl, uint64_t now_ms,
		    uint64_t *ret_suppressed);
/*
 * For a caller with a timer, so that a flood that stopped is still said:
 * true when lines were dropped and one could pass again at now_ms, with
 * *ret_suppressed their count (then forgotten); takes no token.
 */
bool ratelimit_flush(struct ratelimit *rl, uint64_t now_ms,
		     uint64_t *ret_suppressed);
/* The count dropped since the last report, forgotten (a stream's end). */
uint64_t ratelimit_drain(struct ratelimit *rl);

#endif
