/* SPDX-License-Identifier: MIT */
/*
 * The one way a refusal reason travels: the human-readable reason a callee
 * refused its input (guest memory, a peer's message, a policy file), filled
 * by the callee and logged or sent on by its caller (pure code does not log).
 */
#ifndef RDMAGATE_COMMON_REASON_H
#define RDMAGATE_COMMON_REASON_H

/* A broker's reason fills a control reply's text (BP_TEXT_SIZE, 256): a
 * policy error or a path quoted whole; a control client's reason wraps that
 * text with its own words ("broker: TEXT (strerror)").  Only a size in
 * memory: each wire field has its own. */
#define REASON_LEN 512

struct reason {
	char msg[REASON_LEN];
};

/*
 * Formats the reason into *why (if not NULL) and returns `err` (a negative
 * errno), so that callees can write `return reason_fail(why, -EINVAL, ...)`.
 */
int reason_fail(struct reason *why, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * The same for a callee whose return value is not an errno (a work
 * completion status, a bool): formats the reason into *why, if not NULL.
 */
void reason_set(struct reason *why, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
