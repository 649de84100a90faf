// SPDX-License-Identifier: MIT
/* The token bucket every peer-caused log line goes through (ratelimit.h). */
#include "ratelimit.h"

static void fill(struct ratelimit *rl, uint64_t now_ms)
{
	uint64_t periods, add;

	if (!rl->started || now_ms < rl->fill_ms) {
		rl->started = true;
		rl->tokens = rl->burst;
		rl->fill_ms = now_ms;
		return;
	}
	periods = rl->period_ms ? (now_ms - rl->fill_ms) / rl->period_ms : 0;
	if (!periods)
		return;
	/* periods < burst here, so the product stays below 2^64 */
	add = periods >= rl->burst ? rl->burst : periods * rl->refill;
	if (add >= rl->burst - rl->tokens) {
		rl->tokens = rl->burst;
		rl->fill_ms = now_ms;
	} else {
		rl->tokens += (uint32_t)add;
		rl->fill_ms += periods * rl->period_ms;
	}
}

bool ratelimit_pass(struct ratelimit *rl, uint64_t now_ms,
		    uint64_t *ret_suppressed)
{
	fill(rl, now_ms);
	if (!rl->tokens) {
		if (rl->suppressed < UINT64_MAX)
			rl->suppressed++;
		return false;
	}
	rl->tokens--;
	*ret_suppressed = ratelimit_drain(rl);
	return true;
}

bool ratelimit_flush(struct ratelimit *rl, uint64_t now_ms,
		     uint64_t *ret_suppressed)
{
	fill(rl, now_ms);
	if (!rl->suppressed || !rl->tokens)
		return false;
	*ret_suppressed = ratelimit_drain(rl);
	return true;
}

uint64_t ratelimit_drain(struct ratelimit *rl)
{
	uint64_t n = rl->suppressed;

	rl->suppressed = 0;
	return n;
}
