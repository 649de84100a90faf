// SPDX-License-Identifier: MIT
/*
 * rdmagatectl's Prometheus formatter (ctl/prom.c) on made-up input: label
 * values escaped as the text format asks, names that are not UTF-8 left
 * out, counters named ..._total, the tracer's log2 slots as cumulative
 * buckets ending in le="+Inf" = _count, and no histograms without the
 * tracer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ctl/prom.h"

static char *out; /* the last exposition */

static void format(const struct prom_input *in)
{
	size_t len = 0;
	FILE *f;

	free(out);
	out = NULL;
	f = open_memstream(&out, &len);
	assert_non_null(f);
	assert_int_equal(prom_write(f, in), 0);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(strlen(out), len);
}

/* out has line (a whole line) exactly n times */
static int lines(const char *line)
{
	size_t n = strlen(line);
	const char *p = out;
	int count = 0;

	while ((p = strstr(p, line))) {
		if ((p == out || p[-1] == '\n') && p[n] == '\n')
			count++;
		p += n;
	}
	return count;
}

#define assert_line(l) assert_int_equal(lines(l), 1)

static char *label(const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	prom_label_value(f, s);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static void test_label_escape(void **state)
{
	char *s;

	(void)state;
	s = label("vm\"q\\z\nend");
	assert_string_equal(s, "vm\\\"q\\\\z\\nend");
	free(s);
	/* nothing else is escaped: tabs, UTF-8 as they are */
	s = label("a\tb\xc3\xa9");
	assert_string_equal(s, "a\tb\xc3\xa9");
	free(s);
	s = label("");
	assert_string_equal(s, "");
	free(s);
}

static void test_utf8(void **state)
{
	static const char *const good[] = {
		"vm-a",
		"",
		"\xc3\xa9t\xc3\xa9",
		"\xe6\x97\xa5\xe6\x9c\xac",
		"\xf0\x9f\x98\x80",
		"\xef\xbf\xbd",
		"\xf4\x8f\xbf\xbf",
	};
	static const char *const bad[] = {
		"\xff",		    /* never a lead byte */
		"\x80",		    /* a continuation alone */
		"\xc0\x80",	    /* overlong NUL */
		"\xe0\x80\xaf",	    /* overlong '/' */
		"\xed\xa0\x80",	    /* a surrogate */
		"\xf4\x90\x80\x80", /* above U+10FFFF */
		"\xe6\x97",	    /* cut short */
		"a\xc3(",	    /* not a continuation */
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_true(prom_utf8_ok(good[i], strlen(good[i])));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_false(prom_utf8_ok(bad[i], strlen(bad[i])));
}

static void worker(struct bp_stats_reply *w, const char *vm, uint64_t base,
		   bool fresh)
{
	uint64_t v[BP_COUNTERS_N];
	size_t k;

	memset(w, 0, sizeof(*w));
	snprintf(w->vm, sizeof(w->vm), "%s", vm);
	w->flags = fresh ? BP_STATS_FRESH : 0;
	for (k = 0; k < BP_COUNTERS_N; k++)
		v[k] = base + k;
	memcpy(&w->c, v, sizeof(v));
}

static void test_counters(void **state)
{
	struct bp_stats_reply w[3];
	struct prom_input in = { .workers = w,
				 .n_workers = 3,
				 .trace_note = "tracer not running" };
	char line[256];
	size_t k;

	(void)state;
	worker(&w[0], "vm-a", 100, true);
	worker(&w[1], "vm\"q\\z", 200, false);
	worker(&w[2], "bad\xff", 300, true); /* not UTF-8: left out */
	format(&in);
	assert_line("rdmagate_workers 3");
	assert_line("# TYPE rdmagate_workers gauge");
	assert_line("rdmagate_worker_fresh{vm=\"vm-a\"} 1");
	assert_line("rdmagate_worker_fresh{vm=\"vm\\\"q\\\\z\"} 0");
	for (k = 0; k < BP_COUNTERS_N; k++) {
		snprintf(line, sizeof(line),
			 "# TYPE rdmagate_worker_%s_total counter",
			 bp_counter_names[k]);
		assert_line(line);
		snprintf(line, sizeof(line), "rdmagate_worker_%s_total{",
			 bp_counter_names[k]);
		assert_non_null(strstr(out, line));
		snprintf(line, sizeof(line),
			 "rdmagate_worker_%s_total{vm=\"vm-a\"} %zu",
			 bp_counter_names[k], 100 + k);
		assert_line(line);
		snprintf(line, sizeof(line),
			 "rdmagate_worker_%s_total{vm=\"vm\\\"q\\\\z\"} %zu",
			 bp_counter_names[k], 200 + k);
		assert_line(line);
	}
	assert_line("rdmagate_worker_connects_total{vm=\"vm-a\"} 100");
	assert_line("rdmagate_worker_send_bytes_total{vm=\"vm-a\"} 105");
	assert_null(strstr(out, "bad"));
	assert_line("# 1 worker(s) or histogram(s) left out: their VM name is "
		    "not valid UTF-8");
	/* without the tracer: said in a comment, no histogram at all */
	assert_line("# tracer not running");
	assert_line("rdmagate_trace_up 0");
	assert_null(strstr(out, " histogram\n"));
	assert_null(strstr(out, "_bucket"));
	/* every counter ends in _total, every TYPE has its HELP before it */
	for (const char *p = out; (p = strstr(p, "# TYPE ")); p++) {
		const char *name = p + 7, *sp = strchr(name, ' ');
		char help[128];

		snprintf(help, sizeof(help), "# HELP %.*s ", (int)(sp - name),
			 name);
		assert_non_null(strstr(out, help));
		if (!strncmp(sp, " counter\n", 9))
			assert_memory_equal(sp - 6, "_total", 6);
	}
}

static struct rt_hist_ent hist(const char *vm, enum rt_hist_kind kind,
			       uint32_t op)
{
	struct rt_hist_ent e;

	memset(&e, 0, sizeof(e));
	snprintf(e.k.vm, sizeof(e.k.vm), "%s", vm);
	e.k.kind = kind;
	e.k.op = op;
	return e;
}

#define BUCKET(le, n)                                                          \
	"rdmagate_wr_latency_seconds_bucket{vm=\"vm-a\",opcode=\"SEND\","      \
	"le=\"" le "\"} " #n

static void test_histograms(void **state)
{
	struct rt_hist_ent h[5];
	struct prom_input in = { .hists = h, .n_hists = 5 };

	(void)state;
	h[0] = hist("vm-a", RT_HIST_WR, 0); /* SEND */
	h[0].h.slots[0] = 1;		    /* 0..1 us */
	h[0].h.slots[2] = 3;		    /* 4..7 us */
	h[0].h.slots[8] = 2;		    /* 256..511 us */
	h[0].h.slots[RT_MAX_SLOTS - 1] = 1; /* >= 2^31 us: +Inf only */
	h[0].h.count = 99; /* read while the tracer counted: not used */
	h[0].h.sum_ns = 2147483650001500ull;
	h[1] = hist("vm\"q\\z", RT_HIST_CTRL, 2); /* CREATE_CQ */
	h[1].h.slots[2] = 4;
	h[1].h.sum_ns = 20000;
	h[2] = hist("vm-a", RT_HIST_WR, 77); /* no name: its number */
	h[2].h.slots[1] = 1;
	h[2].h.sum_ns = 2000000000;
	h[3] = hist("vm-b", 9, 0); /* an unknown kind: in no family */
	h[4] = hist("\xc0\x80", RT_HIST_WR, 0);
	format(&in);
	assert_line("rdmagate_trace_up 1");
	assert_line("# TYPE rdmagate_wr_latency_seconds histogram");
	assert_line("# TYPE rdmagate_ctrl_latency_seconds histogram");
	assert_int_equal(lines("# TYPE rdmagate_wr_latency_seconds histogram") +
				 lines("# TYPE rdmagate_ctrl_latency_seconds "
				       "histogram"),
			 2);
	/* cumulative, upper bounds 2^(i+1) us in seconds, exact decimals */
	assert_line(BUCKET("0.000002", 1));
	assert_line(BUCKET("0.000004", 1));
	assert_line(BUCKET("0.000008", 4));
	assert_line(BUCKET("0.000256", 4));
	assert_line(BUCKET("0.000512", 6));
	assert_line(BUCKET("1.048576", 6));
	assert_line(BUCKET("2147.483648", 6));
	assert_line(BUCKET("+Inf", 7));
	assert_int_equal(lines(BUCKET("4294.967296", 7)),
			 0); /* no slot 31 bound */
	assert_line("rdmagate_wr_latency_seconds_count{vm=\"vm-a\","
		    "opcode=\"SEND\"} 7");
	assert_line("rdmagate_wr_latency_seconds_sum{vm=\"vm-a\","
		    "opcode=\"SEND\"} 2147483.6500015");
	/* 31 bounded buckets and +Inf per series */
	assert_int_equal(lines("rdmagate_wr_latency_seconds_bucket{vm=\"vm-a\","
			       "opcode=\"77\",le=\"0.000004\"} 1"),
			 1);
	assert_line("rdmagate_wr_latency_seconds_sum{vm=\"vm-a\","
		    "opcode=\"77\"} 2");
	assert_line("rdmagate_ctrl_latency_seconds_bucket{vm=\"vm\\\"q\\\\z\","
		    "command=\"CREATE_CQ\",le=\"0.000004\"} 0");
	assert_line("rdmagate_ctrl_latency_seconds_bucket{vm=\"vm\\\"q\\\\z\","
		    "command=\"CREATE_CQ\",le=\"0.000008\"} 4");
	assert_line("rdmagate_ctrl_latency_seconds_sum{vm=\"vm\\\"q\\\\z\","
		    "command=\"CREATE_CQ\"} 0.00002");
	assert_line("rdmagate_ctrl_latency_seconds_count{vm=\"vm\\\"q\\\\z\","
		    "command=\"CREATE_CQ\"} 4");
	assert_null(strstr(out, "vm-b"));
	assert_line("# 1 worker(s) or histogram(s) left out: their VM name is "
		    "not valid UTF-8");
	/* the workers' families are there even with no worker */
	assert_line("rdmagate_workers 0");
	assert_line("# TYPE rdmagate_worker_connects_total counter");
}

/* Every series' buckets never decrease and end at _count. */
static void test_cumulative(void **state)
{
	struct rt_hist_ent h;
	struct prom_input in = { .hists = &h, .n_hists = 1 };
	uint64_t prev = 0, v, total = 0;
	int i, n = 0;
	const char *p;

	(void)state;
	h = hist("vm-c", RT_HIST_CTRL, 12); /* MODIFY_QP */
	for (i = 0; i < RT_MAX_SLOTS; i++)
		total += h.h.slots[i] = (uint64_t)(i * 7 % 5);
	format(&in);
	for (p = out; (p = strstr(p, "_bucket{")); p++) {
		v = strtoull(strstr(p, "} ") + 2, NULL, 10);
		assert_true(v >= prev);
		prev = v;
		n++;
	}
	assert_int_equal(n, RT_MAX_SLOTS);
	assert_int_equal(prev, total);
	assert_non_null(strstr(out, "command=\"MODIFY_QP\",le=\"+Inf\"} "));
	p = strstr(out, "rdmagate_ctrl_latency_seconds_count{");
	assert_non_null(p);
	assert_int_equal(strtoull(strstr(p, "} ") + 2, NULL, 10), total);
}

/* A comment cannot end its line early or carry bytes outside ASCII. */
static void test_note(void **state)
{
	struct prom_input in = { .trace_note = "dir\nrdmagate_trace_up 1\xff" };

	(void)state;
	format(&in);
	assert_line("# dir?rdmagate_trace_up 1?");
	assert_line("rdmagate_trace_up 0");
}

static int teardown(void **state)
{
	(void)state;
	free(out);
	out = NULL;
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_label_escape),
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_counters),
		cmocka_unit_test(test_histograms),
		cmocka_unit_test(test_cumulative),
		cmocka_unit_test(test_note),
	};

	return cmocka_run_group_tests(tests, NULL, teardown);
}
