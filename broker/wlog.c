// SPDX-License-Identifier: MIT
/* A worker's log stream cut into safe, bounded lines (see broker/wlog.h). */
#include <stdio.h>
#include <string.h>

#include "broker/wlog.h"

void wlog_init(struct wlog *l, const char *strip)
{
	memset(l, 0, sizeof(*l));
	l->strip = strip;
	l->rl = (struct ratelimit)RATELIMIT_RATE(WLOG_RATE, WLOG_BURST);
}

/* in[0..n) escaped into out (WLOG_OUT_MAX bytes). */
static void escape(const char *in, size_t n, bool cut, char *out)
{
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)in[i];

		if (c == '\\')
			o += (size_t)snprintf(out + o, WLOG_OUT_MAX - o,
					      "\\\\");
		else if (c < 0x20 || c >= 0x7f)
			o += (size_t)snprintf(out + o, WLOG_OUT_MAX - o,
					      "\\x%02x", c);
		else
			out[o++] = (char)c;
	}
	snprintf(out + o, WLOG_OUT_MAX - o, "%s", cut ? " [cut]" : "");
}

/* What the bucket dropped since the last line, said once. */
static void say_dropped(uint64_t dropped, wlog_emit_fn emit, void *arg)
{
	char out[96];

	if (!dropped)
		return;
	snprintf(out, sizeof(out),
		 "(%llu lines dropped: more than %d a second)",
		 (unsigned long long)dropped, WLOG_RATE);
	emit(arg, out);
}

static void line_done(struct wlog *l, uint64_t now_ms, wlog_emit_fn emit,
		      void *arg)
{
	char out[WLOG_OUT_MAX];
	size_t skip = 0, sl = l->strip ? strlen(l->strip) : 0;
	uint64_t dropped;

	if (!ratelimit_pass(&l->rl, now_ms, &dropped))
		goto reset;
	/* the notice costs no token: it says what the bucket did */
	say_dropped(dropped, emit, arg);
	if (sl && l->len >= sl && !memcmp(l->buf, l->strip, sl))
		skip = sl;
	escape(l->buf + skip, l->len - skip, l->cut, out);
	emit(arg, out);
reset:
	l->len = 0;
	l->cut = false;
}

void wlog_feed(struct wlog *l, const char *data, size_t n, uint64_t now_ms,
	       wlog_emit_fn emit, void *arg)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (data[i] == '\n') {
			line_done(l, now_ms, emit, arg);
			continue;
		}
		if (l->len < sizeof(l->buf))
			l->buf[l->len++] = data[i];
		else
			l->cut = true;
	}
}

void wlog_end(struct wlog *l, uint64_t now_ms, wlog_emit_fn emit, void *arg)
{
	if (l->len || l->cut)
		line_done(l, now_ms, emit, arg);
	say_dropped(ratelimit_drain(&l->rl), emit, arg);
}
