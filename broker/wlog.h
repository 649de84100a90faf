/* SPDX-License-Identifier: MIT */
/*
 * A worker's log stream as the broker re-emits it (pure, unit-tested):
 * the bytes a worker writes are cut into lines, each bounded
 * (WLOG_LINE_MAX), its control and non-ASCII bytes escaped (\xHH, and \\),
 * the worker's own "worker/<vm>: " tag taken off, and the lines bounded in
 * rate (common/ratelimit.h: WLOG_RATE a second, bursts of WLOG_BURST;
 * what is dropped is counted and said).  The broker puts its fixed
 * "worker/<vm>: " prefix on each: a worker cannot write a line that reads as
 * the broker's.
 */
#ifndef RDMAGATE_BROKER_WLOG_H
#define RDMAGATE_BROKER_WLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/ratelimit.h"

#define WLOG_LINE_MAX 512 /* bytes of one line kept; the rest is cut */
#define WLOG_RATE     20  /* lines a second, sustained */
#define WLOG_BURST    100 /* lines at once */
/* The longest line handed to emit: every byte escaped, and a note. */
#define WLOG_OUT_MAX (WLOG_LINE_MAX * 4 + 64)

struct wlog {
	char buf[WLOG_LINE_MAX];
	size_t len;
	bool cut;	     /* the line is longer: the rest is skipped */
	struct ratelimit rl; /* of its lines, WLOG_RATE a second */
	const char *strip;   /* the worker's own tag, taken off a line */
};

/* line: NUL-terminated, escaped, without a newline or any prefix. */
typedef void (*wlog_emit_fn)(void *arg, const char *line);

/* strip: "worker/<vm>: " (kept by the caller), or NULL. */
void wlog_init(struct wlog *l, const char *strip);
/* n bytes the worker wrote; complete lines go to emit. */
void wlog_feed(struct wlog *l, const char *data, size_t n, uint64_t now_ms,
	       wlog_emit_fn emit, void *arg);
/* The stream ended: a partial line, and the count of dropped ones. */
void wlog_end(struct wlog *l, uint64_t now_ms, wlog_emit_fn emit, void *arg);

#endif
