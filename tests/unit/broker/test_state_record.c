// SPDX-License-Identifier: MIT
/*
 * The broker's state record (broker/state_record.c), which a restarted
 * broker parses to re-adopt workers and signal them: records round-trip,
 * no field's content can add a line, and every malformed record is refused
 * by name with *ret untouched.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "broker/state_record.h"

static void good(struct state_record *r)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->vm, sizeof(r->vm), "vm-a");
	snprintf(r->socket, sizeof(r->socket), "/run/rdmagate/vm/vm-a.sock");
	snprintf(r->device, sizeof(r->device), "rxe0");
	snprintf(r->cgroup, sizeof(r->cgroup), "/sys/fs/cgroup/rdmagate/vm-a");
	snprintf(r->channel, sizeof(r->channel),
		 "/run/rdmagate/workers/vm-a.channel");
	r->pid = 4242;
	r->pid_start = 123456789;
	r->uid = 60001;
	r->gid = 60001;
	r->port = 1;
	r->start = 1700000000;
	r->frontend = BP_FRONTEND_PVRDMA;
	snprintf(r->level, sizeof(r->level), "s0:c12,c345");
	r->n_addrs = 2;
	r->addrs[0].family = AF_INET;
	inet_pton(AF_INET, "10.99.0.10", r->addrs[0].addr);
	r->addrs[1].family = AF_INET6;
	inet_pton(AF_INET6, "fd99::10", r->addrs[1].addr);
}

static int lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void test_round_trip(void **state)
{
	char text[STATE_RECORD_MAX + 1], again[STATE_RECORD_MAX + 1];
	struct state_record r, out;
	int n;

	(void)state;
	good(&r);
	n = state_record_format(&r, text, sizeof(text));
	assert_true(n > 0);
	assert_int_equal(lines(text), 1 + 13 + 2);
	assert_non_null(strstr(text, "rdmagate-broker-state 3\n"));
	assert_non_null(strstr(text, "\nfrontend pvrdma\nlevel s0:c12,c345\n"));
	assert_int_equal(state_record_parse(text, (size_t)n, &out, NULL), 0);
	assert_int_equal(state_record_format(&out, again, sizeof(again)), n);
	assert_string_equal(text, again);
	assert_string_equal(out.socket, r.socket);
	assert_int_equal(out.frontend, BP_FRONTEND_PVRDMA);
	assert_string_equal(out.level, "s0:c12,c345");
	assert_int_equal(out.pid, 4242);
	assert_int_equal(out.n_addrs, 2);
	assert_memory_equal(out.addrs[1].addr, r.addrs[1].addr, 16);

	/* no cgroup: "-" */
	r.cgroup[0] = '\0';
	n = state_record_format(&r, text, sizeof(text));
	assert_non_null(strstr(text, "\ncgroup -\n"));
	assert_int_equal(state_record_parse(text, (size_t)n, &out, NULL), 0);
	assert_string_equal(out.cgroup, "");
}

/* Spaces, '%' and bytes above 0x7e are escaped: the value is one token of
 * one line, and reads back as it was. */
static void test_escaped(void **state)
{
	char text[STATE_RECORD_MAX + 1];
	struct state_record r, out;
	int n;

	(void)state;
	good(&r);
	snprintf(r.socket, sizeof(r.socket), "/run/a b%%20c\xc3\xa9/x.sock");
	n = state_record_format(&r, text, sizeof(text));
	assert_true(n > 0);
	assert_non_null(
		strstr(text, "\nsocket /run/a%20b%2520c%C3%A9/x.sock\n"));
	assert_int_equal(lines(text), 1 + 13 + 2);
	assert_int_equal(state_record_parse(text, (size_t)n, &out, NULL), 0);
	assert_string_equal(out.socket, r.socket);
}

/*
 * A version 2 record (a broker before 3 wrote it: no frontend, no level)
 * is read, with frontend 0 and level "" for the adopter to fill; the two
 * lines are unknown to it.
 */
static void test_version_2(void **state)
{
	char text[STATE_RECORD_MAX + 1], v2[STATE_RECORD_MAX + 1];
	struct state_record r, out;
	struct reason why;
	char *p;
	int n;

	(void)state;
	good(&r);
	n = state_record_format(&r, text, sizeof(text));
	assert_true(n > 0);
	/* the same record as a broker of version 2 wrote it */
	p = strstr(text, "frontend pvrdma\nlevel s0:c12,c345\n");
	assert_non_null(p);
	snprintf(v2, sizeof(v2), "rdmagate-broker-state 2\n%.*s%s",
		 (int)(p - text - strlen("rdmagate-broker-state 3\n")),
		 text + strlen("rdmagate-broker-state 3\n"),
		 p + strlen("frontend pvrdma\nlevel s0:c12,c345\n"));
	memset(&out, 0xa5, sizeof(out));
	assert_int_equal(state_record_parse(v2, strlen(v2), &out, &why), 0);
	assert_int_equal(out.frontend, 0);
	assert_string_equal(out.level, "");
	assert_int_equal(out.pid, 4242);
	assert_int_equal(out.n_addrs, 2);
	/* a version 2 record with a version 3 line */
	strcat(v2, "level s0:c1,c2\n");
	assert_int_equal(state_record_parse(v2, strlen(v2), &out, &why),
			 -EINVAL);
	assert_non_null(strstr(why.msg, "unknown key 'level' in a version 2"));
	/* written, a record is always version 3: no level is refused */
	good(&r);
	r.level[0] = '\0';
	assert_int_equal(state_record_format(&r, text, sizeof(text)), -EINVAL);
	good(&r);
	r.frontend = BP_FRONTEND_QEMU_PVRDMA;
	assert_int_equal(state_record_format(&r, text, sizeof(text)), -EINVAL);
}

/* A control character is refused on the way out, not written. */
static void test_format_refuses(void **state)
{
	char text[STATE_RECORD_MAX + 1];
	struct state_record r;

	(void)state;
	good(&r);
	snprintf(r.socket, sizeof(r.socket), "/x.sock\naddr 10.0.0.1\npid 1");
	assert_int_equal(state_record_format(&r, text, sizeof(text)), -EINVAL);
	good(&r);
	r.pid = 1;
	assert_int_equal(state_record_format(&r, text, sizeof(text)), -EINVAL);
	good(&r);
	snprintf(r.vm, sizeof(r.vm), "../x");
	assert_int_equal(state_record_format(&r, text, sizeof(text)), -EINVAL);
	good(&r);
	assert_int_equal(state_record_format(&r, text, 64), -ENOSPC);
}

struct bad {
	const char *name;
	const char *from, *to; /* replace from with to in the good text */
	const char *why;
};

static const struct bad bads[] = {
	{ "version 1", "rdmagate-broker-state 3", "rdmagate-broker-state 1",
	  "not a version 2 to 3 record" },
	{ "version 4", "rdmagate-broker-state 3", "rdmagate-broker-state 4",
	  "not a version 2 to 3 record" },
	{ "old format", "rdmagate-broker-state 3\n", "# old\nversion 1\n",
	  "not a version 2 to 3 record" },
	{ "frontend unknown", "frontend pvrdma", "frontend ib",
	  "frontend: not a valid value" },
	{ "frontend QEMU's", "frontend pvrdma", "frontend qemu-pvrdma",
	  "frontend: not a valid value" },
	{ "no frontend", "frontend pvrdma\n", "", "no frontend line" },
	{ "level range", "level s0:c12,c345", "level s0-s0:c0.c1023",
	  "level: not a valid value" },
	{ "level one category", "level s0:c12,c345", "level s0:c12",
	  "level: not a valid value" },
	{ "level pair reversed", "level s0:c12,c345", "level s0:c345,c12",
	  "level: not a valid value" },
	{ "level escaped comma", "level s0:c12,c345", "level s0:c12%2Cc345",
	  "level: not a valid value" },
	{ "no level", "level s0:c12,c345\n", "", "no level line" },
	{ "level twice", "level s0:c12,c345\n",
	  "level s0:c12,c345\nlevel s0:c1,c2\n", "level: given twice" },
	{ "escaped newline", "socket /run/rdmagate/vm/vm-a.sock",
	  "socket /x.sock%0Aaddr%2010.0.0.1", "socket: not a valid value" },
	{ "raw control byte", "device rxe0",
	  "device rx\x01"
	  "e0",
	  "device: not a valid value" },
	{ "escape of a plain byte", "device rxe0", "device %72xe0",
	  "device: not a valid value" },
	{ "escape of NUL", "device rxe0", "device rxe%00",
	  "device: not a valid value" },
	{ "lower-case escape", "socket /run/rdmagate/vm/vm-a.sock",
	  "socket /run/a%c3%a9", "socket: not a valid value" },
	{ "truncated escape", "device rxe0", "device rxe%2",
	  "device: not a valid value" },
	{ "pid twice", "pid 4242\n", "pid 4242\npid 1\n", "pid: given twice" },
	{ "pid 1", "pid 4242", "pid 1", "pid: not a valid value" },
	{ "pid huge", "pid 4242", "pid 4194304", "pid: not a valid value" },
	{ "pid sign", "pid 4242", "pid +4242", "pid: not a valid value" },
	{ "pid leading zero", "pid 4242", "pid 04242",
	  "pid: not a valid value" },
	{ "uid -1", "uid 60001", "uid 4294967295", "uid: not a valid value" },
	{ "uid overflow", "uid 60001", "uid 18446744073709551616",
	  "uid: not a valid value" },
	{ "port 0", "port 1", "port 0", "port: not a valid value" },
	{ "relative socket", "socket /run/rdmagate/vm/vm-a.sock",
	  "socket vm-a.sock", "socket: not a valid value" },
	{ "bad vm name", "vm vm-a", "vm ../etc", "vm: not a valid value" },
	{ "unknown key", "port 1\n", "port 1\nowner root\n",
	  "unknown key 'owner'" },
	{ "missing key", "port 1\n", "", "no port line" },
	{ "no value", "port 1\n", "port\n", "a line without a value" },
	{ "address twice", "addr fd99::10", "addr 10.99.0.10",
	  "addr: not a distinct address" },
	{ "address not canonical", "addr 10.99.0.10", "addr 10.99.0.010",
	  "addr: not a distinct address" },
	{ "address garbage", "addr 10.99.0.10", "addr 10.99.0.10 x",
	  "addr: not a distinct address" },
	{ "empty line", "port 1\n", "port 1\n\n", "a line without a value" },
};

static void make_bad(const struct bad *c, char *out, size_t size)
{
	char text[STATE_RECORD_MAX + 1];
	struct state_record r;
	const char *at;

	good(&r);
	assert_true(state_record_format(&r, text, sizeof(text)) > 0);
	at = strstr(text, c->from);
	if (!at)
		fail_msg("%s: '%s' is not in the record", c->name, c->from);
	snprintf(out, size, "%.*s%s%s", (int)(at - text), text, c->to,
		 at + strlen(c->from));
}

static void test_bad(void **state)
{
	char text[STATE_RECORD_MAX + 64];
	struct state_record out;
	struct reason why;
	size_t i, j;

	(void)state;
	for (i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		make_bad(&bads[i], text, sizeof(text));
		memset(&out, 0xa5, sizeof(out));
		why.msg[0] = '\0';
		if (state_record_parse(text, strlen(text), &out, &why) !=
		    -EINVAL)
			fail_msg("%s: accepted", bads[i].name);
		if (!strstr(why.msg, bads[i].why))
			fail_msg("%s: '%s' does not say '%s'", bads[i].name,
				 why.msg, bads[i].why);
		for (j = 0; j < sizeof(out); j++)
			assert_int_equal(((uint8_t *)&out)[j], 0xa5);
	}
}

static void test_framing(void **state)
{
	char text[STATE_RECORD_MAX + 2];
	struct state_record r, out;
	int n;

	(void)state;
	good(&r);
	n = state_record_format(&r, text, sizeof(text));
	/* no final newline: a torn write */
	assert_int_equal(state_record_parse(text, (size_t)n - 1, &out, NULL),
			 -EINVAL);
	/* a NUL inside */
	text[10] = '\0';
	assert_int_equal(state_record_parse(text, (size_t)n, &out, NULL),
			 -EINVAL);
	assert_int_equal(state_record_parse(text, 0, &out, NULL), -EINVAL);
	memset(text, 'a', sizeof(text));
	text[STATE_RECORD_MAX] = '\n';
	assert_int_equal(
		state_record_parse(text, STATE_RECORD_MAX + 1, &out, NULL),
		-EINVAL);
}

/* 16 addresses fit; a 17th is refused */
static void test_addr_limit(void **state)
{
	char text[STATE_RECORD_MAX + 64];
	struct state_record r, out;
	unsigned int i;
	int n;

	(void)state;
	good(&r);
	r.n_addrs = STATE_ADDRS_MAX;
	for (i = 0; i < STATE_ADDRS_MAX; i++) {
		r.addrs[i].family = AF_INET;
		memset(r.addrs[i].addr, 0, 16);
		r.addrs[i].addr[0] = 10;
		r.addrs[i].addr[3] = (uint8_t)(i + 1);
	}
	n = state_record_format(&r, text, sizeof(text));
	assert_true(n > 0);
	assert_int_equal(state_record_parse(text, (size_t)n, &out, NULL), 0);
	assert_int_equal(out.n_addrs, STATE_ADDRS_MAX);
	strcat(text, "addr 10.0.0.99\n");
	assert_int_equal(state_record_parse(text, strlen(text), &out, NULL),
			 -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_escaped),
		cmocka_unit_test(test_version_2),
		cmocka_unit_test(test_format_refuses),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_framing),
		cmocka_unit_test(test_addr_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
