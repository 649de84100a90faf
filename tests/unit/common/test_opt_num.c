// SPDX-License-Identifier: MIT
/*
 * Numeric options (common/opt_num.c) through every program's real table:
 * one case per option, each checking the exact refusal of a non-number,
 * a value below the minimum and above the maximum, trailing text, a
 * number too large for any integer and an empty string; that the largest
 * value lands in the right field (its offset written here again) and
 * nothing else; and that getopt_long() over the long options made from
 * the table names that same option.  The expectations are written out
 * here, not read from the tables.
 */
#include <errno.h>
#include <getopt.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/broker_proto.h"
#include "common/cleanup.h"
#include "common/opt_num.h"
#include "ctl/opts.h"
#include "guest/opts.h"
#include "hook/opts.h"
#include "mux/opts.h"
#include "mux/router.h"
#include "trace/opts.h"
#include "worker/opts.h"

/* One numeric option as its program's documentation promises it. */
struct want {
	const char *name;  /* the long option, without "--" */
	size_t off, size;  /* its field */
	const char *range; /* as the messages print it */
	const char *below; /* a text below the minimum */
	const char *above; /* a text above the maximum */
	const char *max;   /* the largest allowed text */
	uint64_t stored;   /* what the field holds after max */
	int key;	   /* the short option, or 0 */
};

struct prog {
	const char *prog;
	const struct opt_num *tab;
	size_t n;
	const struct want *want;
	size_t nwant;
};

#define F(type, f) offsetof(type, f), sizeof(((type *)0)->f)
#define W(f)	   F(struct worker_opts, f)
#define LIMIT(n, f)                                                            \
	{                                                                      \
		n, W(lim.f), "(0..1048576)", "-1", "1048577", "1048576",       \
			1048576, 0                                             \
	}

static const struct want worker[] = {
	{ "fd", W(fd), "(0..65535)", "-1", "65536", "65535", 65535, 0 },
	{ "broker-fd", W(broker_fd), "(0..65535)", "-1", "65536", "65535",
	  65535, 0 },
	{ "port", W(port), "(1..255)", "0", "256", "255", 255, 0 },
	{ "poll-budget-us", W(poll_budget_us), "(0..10000)", "-1", "10001",
	  "10000", 10000, 0 },
	{ "doorbell-poll-ms", W(doorbell_poll_ms), "(0..1000)", "-1", "1001",
	  "1000", 1000, 0 },
	{ "peer-uid", W(peer_uid), "(0..4294967294)", "-1", "4294967295",
	  "4294967294", 4294967294u, 0 },
	{ "peer-gid", W(peer_gid), "(0..4294967294)", "-1", "4294967295",
	  "4294967294", 4294967294u, 0 },
	LIMIT("max-qp", max_qp),
	LIMIT("max-cq", max_cq),
	LIMIT("max-mr", max_mr),
	LIMIT("max-pd", max_pd),
	LIMIT("max-srq", max_srq),
	LIMIT("max-ah", max_ah),
	LIMIT("max-cqe", max_cqe),
	LIMIT("max-qp-wr", max_qp_wr),
	LIMIT("max-srq-wr", max_srq_wr),
	LIMIT("max-sge", max_sge),
};

static const struct want mux[] = {
	{ "id-ttl", F(struct router_config, id_ttl_ms), "(1..31536000 seconds)",
	  "0", "31536001", "31536000", 31536000000ull, 0 },
	{ "conn-ttl", F(struct router_config, conn_ttl_ms),
	  "(1..31536000 seconds)", "0", "31536001", "31536000", 31536000000ull,
	  0 },
};

static const struct want ctl_spawn[] = {
	{ "port", F(struct bp_spawn, port), "(0..255)", "-1", "256", "255", 255,
	  0 },
};

static const struct want hook[] = {
	{ "timeout", F(struct hook_opts, timeout_s), "(1..600 seconds)", "0",
	  "601", "600", 600, 0 },
};

static const struct want trace[] = {
	{ "interval", F(struct trace_nums, interval), "(1..2147483647 seconds)",
	  "0", "2147483648", "2147483647", 2147483647, 0 },
	{ "count", F(struct trace_nums, count), "(1..2147483647)", "0",
	  "2147483648", "2147483647", 2147483647, 0 },
};

#define T(f) F(struct tool, f)

static const struct want guest_global[] = {
	{ "config-size", T(vc.config_size), "(0..256)", "-1", "257", "256", 256,
	  0 },
	{ "timeout", T(vc.timeout_ms), "(1..2147483647 ms)", "0", "2147483648",
	  "2147483647", 2147483647, 0 },
};

static const struct want guest_echo[] = {
	{ "count", T(count), "(1..9223372036854775807)", "0",
	  "9223372036854775808", "9223372036854775807", INT64_MAX, 'n' },
	{ "size", T(size), "(1..67108864)", "0", "67108865", "67108864",
	  67108864, 's' },
	{ "queues", T(queues), "(1..256)", "0", "257", "256", 256, 0 },
	{ "ring", T(ring), "(1..32768)", "0", "32769", "32768", 32768, 0 },
};

static const struct want guest_cli[] = {
	{ "port", F(struct gv_tool_cli, port), "(0..65535)", "-1", "65536",
	  "65535", 65535, 'p' },
	{ "iters", F(struct gv_tool_cli, iters), "(1..4294967295)", "0",
	  "4294967296", "4294967295", 4294967295u, 'n' },
	{ "gid-idx", F(struct gv_tool_cli, gidx), "(-2147483648..511)",
	  "-2147483649", "512", "511", 511, 'g' },
};

static const struct want guest_pp[] = {
	{ "ib-port", F(struct pp_opts, ib_port), "(1..1)", "0", "2", "1", 1,
	  'i' },
	{ "size", F(struct pp_opts, size), "(1..4294967295)", "0", "4294967296",
	  "4294967295", 4294967295u, 's' },
	{ "mtu", F(struct pp_opts, mtu_bytes), "(256..4096)", "255", "4097",
	  "4096", 4096, 'm' },
	{ "rx-depth", F(struct pp_opts, rx_depth), "(1..511)", "0", "512",
	  "511", 511, 'r' },
	{ "sl", F(struct pp_opts, sl), "(0..15)", "-1", "16", "15", 15, 'l' },
	{ "wait-ms", F(struct pp_opts, wait_ms), "(0..10000)", "-1", "10001",
	  "10000", 10000, 'w' },
	{ "num-qp", F(struct pp_opts, num_qp), "(1..64)", "0", "65", "64", 64,
	  'q' },
};

static const struct want guest_perf[] = {
	{ "depth", F(struct perf_opts, depth), "(1..512)", "0", "513", "512",
	  512, 'D' },
	{ "repeat", F(struct perf_opts, repeat), "(1..4294967295)", "0",
	  "4294967296", "4294967295", 4294967295u, 'R' },
	{ "cq-mod", F(struct perf_opts, cq_mod), "(1..4294967295)", "0",
	  "4294967296", "4294967295", 4294967295u, 'Q' },
};

static const struct want guest_cm[] = {
	{ "cm-timeout", F(struct cm_opts, timeout_ms), "(1..600000 ms)", "0",
	  "600001", "600000", 600000, 0 },
	{ "cm-retries", F(struct cm_opts, retries), "(0..15)", "-1", "16", "15",
	  15, 0 },
};

#define PROG(p, t, w)                                                          \
	{                                                                      \
		p, t, ARRAY_SIZE(t), w, ARRAY_SIZE(w)                          \
	}

static const struct prog progs[] = {
	PROG("rdmagate-worker", worker_opt_nums, worker),
	PROG("rdmagate-mux", mux_opt_nums, mux),
	PROG("rdmagatectl spawn", ctl_spawn_opt_nums, ctl_spawn),
	PROG("rdmagate-libvirt-hook", hook_opt_nums, hook),
	PROG("rdmagate-trace", trace_opt_nums, trace),
	PROG("rdmagate-guest", guest_global_nums, guest_global),
	PROG("rdmagate-guest echo", guest_echo_nums, guest_echo),
	PROG("rdmagate-guest (verbs tools)", guest_cli_nums, guest_cli),
	PROG("rdmagate-guest *_pingpong", guest_pp_nums, guest_pp),
	PROG("rdmagate-guest perf", guest_perf_nums, guest_perf),
	PROG("rdmagate-guest cm_*", guest_cm_nums, guest_cm),
};

/* One test case: option w of program p. */
struct one {
	const struct prog *p;
	const struct want *w;
};

#define FILL 0xa5
/* Large enough for any field of any program's struct (checked). */
static union {
	max_align_t align;
	unsigned char b[4096];
} buf, before;

static uint64_t field(const struct want *w)
{
	uint64_t v = 0;

	memcpy(&v, buf.b + w->off, w->size); /* little-endian */
	return v;
}

/* text refused as `what`: the exact message, the struct untouched */
static void refused(const struct one *o, const char *text, const char *what,
		    int err)
{
	char msg[REASON_LEN];
	struct reason why;
	int ret;

	snprintf(msg, sizeof(msg), "--%s: '%s' is %s %s", o->w->name, text,
		 what, o->w->range);
	memset(buf.b, FILL, sizeof(buf.b));
	ret = opt_num_set(o->p->tab, o->p->n, o->w->name, text, buf.b, &why);
	assert_int_equal(ret, err);
	assert_string_equal(why.msg, msg);
	memset(before.b, FILL, sizeof(before.b));
	assert_memory_equal(buf.b, before.b, sizeof(buf.b));
}

/* the largest value lands in the field, and nothing else changes */
static void accepted(const struct one *o)
{
	struct reason why;
	int ret;

	memset(buf.b, FILL, sizeof(buf.b));
	ret = opt_num_set(o->p->tab, o->p->n, o->w->name, o->w->max, buf.b,
			  &why);
	assert_true(ret >= 0);
	assert_string_equal(o->p->tab[ret].name, o->w->name);
	assert_int_equal(field(o->w), o->w->stored);
	memset(before.b, FILL, sizeof(before.b));
	memcpy(before.b + o->w->off, buf.b + o->w->off, o->w->size);
	assert_memory_equal(buf.b, before.b, sizeof(buf.b));
}

/* getopt_long() over the table's long options finds this row, by its
 * long name and by its short option if it has one */
static void getopt_once(const struct one *o, const struct option *lo,
			const char *spelling)
{
	char opt[64], text[] = "x", prog[] = "prog", shorts[64] = "v";
	char *argv[] = { prog, opt, text, NULL };
	struct reason why;
	size_t k, len = 1;
	int c, li = -1;

	for (k = 0; k < o->p->n; k++)
		if (o->p->tab[k].key && len + 3 < sizeof(shorts)) {
			shorts[len++] = (char)o->p->tab[k].key;
			shorts[len++] = ':';
			shorts[len] = '\0';
		}
	snprintf(opt, sizeof(opt), "%s", spelling);
	optind = 0; /* glibc: start over */
	opterr = 0;
	c = getopt_long(3, argv, shorts, lo, &li);
	assert_int_equal(c, o->p->tab[o->w - o->p->want].key ?: OPT_NUM_VAL);
	assert_int_equal(opt_num_getopt(o->p->tab, o->p->n, c, lo, li, optarg,
					buf.b, &why),
			 -EINVAL);
	snprintf(opt, sizeof(opt), "--%s: 'x' is not a number %s", o->w->name,
		 o->w->range);
	assert_string_equal(why.msg, opt);
}

static void through_getopt(const struct one *o)
{
	static const struct option fixed[] = {
		{ "verbose", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 },
	};
	const struct opt_num *row = &o->p->tab[o->w - o->p->want];
	struct option lo[ARRAY_SIZE(fixed) + 32];
	char spelling[64];

	assert_int_equal(row->key, o->w->key);
	assert_true(o->p->n <= 32);
	assert_int_equal(
		opt_num_longopts(lo, ARRAY_SIZE(lo), fixed, o->p->tab, o->p->n),
		0);
	snprintf(spelling, sizeof(spelling), "--%s", o->w->name);
	getopt_once(o, lo, spelling);
	if (row->key) {
		snprintf(spelling, sizeof(spelling), "-%c", row->key);
		getopt_once(o, lo, spelling);
	}
}

static void test_option(void **state)
{
	const struct one *o = *state;

	assert_true(o->w->off + o->w->size <= sizeof(buf.b));
	refused(o, "x", "not a number", -EINVAL);
	refused(o, o->w->below, "out of range", -ERANGE);
	refused(o, o->w->above, "out of range", -ERANGE);
	refused(o, "12abc", "not a number", -EINVAL);
	refused(o, "18446744073709551616", "out of range", -ERANGE);
	refused(o, "", "not a number", -EINVAL);
	accepted(o);
	through_getopt(o);
}

/* Every row of every table is one of the options above, and back. */
static void test_tables_match(void **state)
{
	size_t i, k;

	for (i = 0; i < ARRAY_SIZE(progs); i++) {
		const struct prog *p = &progs[i];

		assert_int_equal(p->n, p->nwant);
		for (k = 0; k < p->n; k++)
			assert_string_equal(p->tab[k].name, p->want[k].name);
	}
}

/* What is no decimal number: signs, spaces, hex; long text is cut. */
static void test_spellings(void **state)
{
	static const char *const bad[] = { "+5",  " 5", "5 ",  "0x10",
					   "1e3", "-",	"--5", "1.5" };
	const struct opt_num *row = &worker_opt_nums[WO_MAX_QP];
	char msg[REASON_LEN], longtext[200];
	struct worker_opts w = { 0 };
	struct reason why;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		assert_int_equal(opt_num_parse(row, bad[i], &w, &why), -EINVAL);
		snprintf(msg, sizeof(msg),
			 "--max-qp: '%s' is not a number (0..1048576)", bad[i]);
		assert_string_equal(why.msg, msg);
	}
	assert_int_equal(opt_num_parse(row, "-0", &w, &why), 0);
	assert_int_equal(opt_num_parse(row, "-1", &w, &why), -ERANGE);
	assert_int_equal(opt_num_parse(row, "007", &w, &why), 0);
	assert_int_equal(w.lim.max_qp, 7);
	memset(longtext, '9', sizeof(longtext) - 1);
	longtext[sizeof(longtext) - 1] = '\0';
	assert_int_equal(opt_num_parse(row, longtext, &w, &why), -ERANGE);
	snprintf(msg, sizeof(msg),
		 "--max-qp: '%.64s...' is out of range (0..1048576)", longtext);
	assert_string_equal(why.msg, msg);
}

/* A name no row has; a long option array too small. */
static void test_unknown_and_small(void **state)
{
	static const struct option fixed[] = {
		{ "verbose", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 },
	};
	struct option lo[ARRAY_SIZE(fixed) + MO_COUNT];
	struct router_config rc = { 0 };
	struct reason why;

	assert_int_equal(
		opt_num_set(mux_opt_nums, MO_COUNT, "ttl", "1", &rc, &why),
		-ENOENT);
	assert_string_equal(why.msg, "--ttl: not a numeric option");
	assert_int_equal(opt_num_longopts(lo, ARRAY_SIZE(lo) - 1, fixed,
					  mux_opt_nums, MO_COUNT),
			 -ENOSPC);
	assert_int_equal(opt_num_longopts(lo, ARRAY_SIZE(lo), fixed,
					  mux_opt_nums, MO_COUNT),
			 0);
	assert_string_equal(lo[0].name, "verbose");
	assert_string_equal(lo[1].name, "id-ttl");
	assert_string_equal(lo[2].name, "conn-ttl");
	assert_null(lo[3].name);
}

int main(void)
{
	static const struct CMUnitTest fixed[] = {
		cmocka_unit_test(test_tables_match),
		cmocka_unit_test(test_spellings),
		cmocka_unit_test(test_unknown_and_small),
	};
	struct CMUnitTest tests[ARRAY_SIZE(fixed) + 64];
	static struct one ones[64];
	static char names[64][96];
	size_t n = 0, i, k;

	for (i = 0; i < ARRAY_SIZE(fixed); i++)
		tests[n++] = fixed[i];
	for (i = 0; i < ARRAY_SIZE(progs); i++) {
		for (k = 0; k < progs[i].nwant; k++) {
			size_t j = n - ARRAY_SIZE(fixed);

			if (j == ARRAY_SIZE(ones))
				return 1;
			ones[j] = (struct one){ &progs[i], &progs[i].want[k] };
			snprintf(names[j], sizeof(names[j]), "%s --%s",
				 progs[i].prog, progs[i].want[k].name);
			tests[n++] = (struct CMUnitTest){
				.name = names[j],
				.test_func = test_option,
				.initial_state = &ones[j],
			};
		}
	}
	return _cmocka_run_group_tests("opt_num", tests, n, NULL, NULL);
}
