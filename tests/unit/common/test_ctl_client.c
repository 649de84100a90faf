// SPDX-License-Identifier: MIT
/*
 * The control protocol's client side (common/ctl_client.c), which
 * rdmagatectl and the libvirt hook share: against a scripted peer on a
 * socketpair, each way a broker can answer is returned (never exits) with
 * the sentence the callers print; a listener that is not root is refused;
 * addresses and requests are checked as the broker will.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/ctl_client.h"

struct pair {
	struct ctl_conn c; /* the client's end */
	int peer;	   /* the scripted broker's */
};

static int setup(void **state)
{
	struct pair *p = calloc(1, sizeof(*p));
	int sv[2];

	assert_non_null(p);
	assert_int_equal(
		socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	p->c.fd = sv[0];
	p->c.timeout_s = 1;
	snprintf(p->c.path, sizeof(p->c.path), "/run/test/control");
	p->peer = sv[1];
	*state = p;
	return 0;
}

static int teardown(void **state)
{
	struct pair *p = *state;

	ctl_close(&p->c);
	safe_close(p->peer);
	free(p);
	return 0;
}

/* The peer sends m as the broker would. */
static void peer_send(struct pair *p, const struct bp_msg *m)
{
	assert_int_equal(bp_send(p->peer, m), 0);
}

static void peer_send_raw(struct pair *p, const void *buf, size_t len)
{
	assert_int_equal(send(p->peer, buf, len, 0), (ssize_t)len);
}

static void test_reply(void **state)
{
	struct pair *p = *state;
	struct reason why = { "" };
	struct bp_msg m;

	bp_init(&m, BP_STOP_REPLY);
	bp_set_status(&m.u.status, 0, "worker/a (pid 1) killed by SIGTERM");
	peer_send(p, &m);
	memset(&m, 0, sizeof(m));
	assert_int_equal(ctl_recv(&p->c, BP_STOP_REPLY, &m, &why), 0);
	assert_string_equal(m.u.status.text,
			    "worker/a (pid 1) killed by SIGTERM");
	assert_int_equal(ctl_status(&m.u.status, &why), 0);
}

static void test_status_error(void **state)
{
	struct bp_status st;
	struct reason why;

	bp_set_status(&st, ESRCH, "vm a has no worker");
	assert_int_equal(ctl_status(&st, &why), -ESRCH);
	assert_string_equal(why.msg,
			    "broker: vm a has no worker (No such process)");
}

static void test_error_reply(void **state)
{
	struct pair *p = *state;
	struct reason why;
	struct bp_msg m;

	bp_init(&m, BP_ERROR_REPLY);
	bp_set_status(&m.u.status, EPERM, "RELOAD: not allowed for uid 7");
	peer_send(p, &m);
	assert_int_equal(ctl_recv(&p->c, BP_RELOAD_REPLY, &m, &why), -EPERM);
	assert_string_equal(
		why.msg, "broker: RELOAD: not allowed for uid 7 (Operation not "
			 "permitted)");
	/* an ERROR_REPLY with status 0 is still a refusal */
	bp_init(&m, BP_ERROR_REPLY);
	bp_set_status(&m.u.status, 0, "odd");
	peer_send(p, &m);
	assert_int_equal(ctl_recv(&p->c, BP_RELOAD_REPLY, &m, &why), -EPROTO);
	assert_string_equal(why.msg, "broker: odd (no error code)");
}

static void test_wrong_type(void **state)
{
	struct pair *p = *state;
	struct reason why;
	struct bp_msg m;

	bp_init(&m, BP_RELOAD_REPLY);
	peer_send(p, &m);
	assert_int_equal(ctl_recv(&p->c, BP_SPAWN_REPLY, &m, &why), -EPROTO);
	assert_string_equal(why.msg, "the broker answered RELOAD_REPLY to a "
				     "request for SPAWN_REPLY");
}

static void test_bad_message(void **state)
{
	struct pair *p = *state;
	struct reason why;
	uint32_t hdr[3] = { 1, BP_STOP_REPLY, 0 };
	struct bp_msg m, sentinel;

	memset(&m, 0x5a, sizeof(m));
	sentinel = m;
	peer_send_raw(p, "\1\2\3", 3);
	assert_int_equal(ctl_recv(&p->c, BP_STOP_REPLY, &m, &why), -EBADMSG);
	assert_string_equal(why.msg,
			    "bad message from the broker: short message: "
			    "3 bytes, the header is 12");
	peer_send_raw(p, hdr, sizeof(hdr));
	assert_int_equal(ctl_recv(&p->c, BP_STOP_REPLY, &m, &why),
			 -EPROTONOSUPPORT);
	assert_non_null(strstr(why.msg, "protocol version 1"));
	assert_memory_equal(&m, &sentinel, sizeof(m));
}

static void test_closed(void **state)
{
	struct pair *p = *state;
	struct reason why;
	struct bp_msg m;

	p->peer = safe_close(p->peer);
	assert_int_equal(ctl_recv(&p->c, BP_HELLO_REPLY, &m, &why),
			 -ECONNRESET);
	assert_string_equal(why.msg, "the broker closed the connection (not "
				     "allowed to use /run/test/control?)");
	bp_init(&m, BP_LIST);
	assert_int_equal(ctl_send(&p->c, &m, &why), -ECONNRESET);
	assert_non_null(strstr(why.msg, "closed the connection"));
}

static void test_timeout(void **state)
{
	struct pair *p = *state;
	struct timeval tv = { .tv_sec = 1 };
	struct reason why;
	struct bp_msg m;
	uint64_t t0;

	assert_int_equal(
		setsockopt(p->c.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)),
		0);
	t0 = mono_ms();
	assert_int_equal(ctl_recv(&p->c, BP_SPAWN_REPLY, &m, &why), -ETIMEDOUT);
	assert_string_equal(why.msg, "the broker did not answer within 1 s "
				     "(waiting for SPAWN_REPLY)");
	assert_true(mono_ms() - t0 < 3000);
}

/* request = send + the reply of type + 1; the request reaches the peer */
static void test_request(void **state)
{
	struct pair *p = *state;
	uint8_t buf[BP_MSG_MAX];
	struct reason why;
	struct bp_msg m, r;
	ssize_t n;

	bp_init(&r, BP_LIST_REPLY);
	peer_send(p, &r); /* queued before the request: fine on SEQPACKET */
	bp_init(&m, BP_LIST);
	assert_int_equal(ctl_request(&p->c, &m, &why), 0);
	assert_int_equal(m.h.type, BP_LIST_REPLY);
	n = recv(p->peer, buf, sizeof(buf), 0);
	assert_int_equal(n, 12);
	assert_int_equal(bp_decode(buf, (size_t)n, &r, NULL), 0);
	assert_int_equal(r.h.type, BP_LIST);
}

static void test_connect_refusals(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[] = "/tmp/ctl-client-test.XXXXXX";
	struct reason why;
	char path[sizeof(sa.sun_path)];
	_cleanup_close_ int l = -1;
	struct ctl_conn c;
	int ret;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/none.sock", dir);
	assert_int_equal(ctl_connect(&c, path, 1, &why), -ENOENT);
	assert_non_null(strstr(why.msg, "cannot reach the broker at "));
	assert_int_equal(c.fd, -1);

	ret = ctl_connect(
		&c,
		"/a/path/that/is/far/too/long/for/sun_path/aaaaaaaa"
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"aaaaaaaaaaa.sock",
		1, &why);
	assert_int_equal(ret, -ENAMETOOLONG);
	assert_non_null(strstr(why.msg, "path too long"));

	/* a listener of ours: as root it gets as far as HELLO, else it is
	 * refused for not being root */
	snprintf(path, sizeof(path), "%s/s.sock", dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	l = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	assert_true(l >= 0);
	assert_int_equal(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(l, 4), 0);
	ret = ctl_connect(&c, path, 1, &why);
	if (geteuid() != 0) {
		assert_int_equal(ret, -EPERM);
		assert_non_null(
			strstr(why.msg, "is not served by root: refusing"));
	} else {
		/* nobody answers the HELLO */
		assert_int_equal(ret, -ETIMEDOUT);
		assert_non_null(strstr(why.msg, "waiting for HELLO_REPLY"));
	}
	assert_int_equal(c.fd, -1);
	unlink(path);
	rmdir(dir);
}

static void test_add_address(void **state)
{
	struct bp_spawn s = { 0 };
	uint8_t want[16] = { 0 };
	int i;

	assert_int_equal(ctl_spawn_add_address(&s, "10.1.2.3"), 0);
	assert_int_equal(ctl_spawn_add_address(&s, "fd99::7"), 0);
	assert_int_equal(s.n_addrs, 2);
	assert_int_equal(s.addrs[0].family, AF_INET);
	inet_pton(AF_INET, "10.1.2.3", want);
	assert_memory_equal(s.addrs[0].addr, want, 16);
	assert_int_equal(s.addrs[1].family, AF_INET6);
	inet_pton(AF_INET6, "fd99::7", want);
	assert_memory_equal(s.addrs[1].addr, want, 16);
	assert_int_equal(ctl_spawn_add_address(&s, "10.0.0.0/8"), -EINVAL);
	assert_int_equal(ctl_spawn_add_address(&s, "fd99::/64"), -EINVAL);
	assert_int_equal(ctl_spawn_add_address(&s, "10.1.2.300"), -EINVAL);
	assert_int_equal(ctl_spawn_add_address(&s, ""), -EINVAL);
	for (i = 2; i < BP_SPAWN_ADDRS_MAX; i++)
		assert_int_equal(ctl_spawn_add_address(&s, "10.0.0.1"), 0);
	assert_int_equal(ctl_spawn_add_address(&s, "10.0.0.2"), -E2BIG);
	assert_int_equal(s.n_addrs, BP_SPAWN_ADDRS_MAX);
}

static void test_check(void **state)
{
	struct reason why;
	struct bp_msg m;

	bp_init(&m, BP_SPAWN);
	bp_set_str(m.u.spawn.vm, BP_VM_SIZE, "vm-a");
	bp_set_str(m.u.spawn.socket, BP_PATH_SIZE, "/run/rdmagate/vm/a.sock");
	assert_int_equal(ctl_spawn_add_address(&m.u.spawn, "fd99::1"), 0);
	assert_int_equal(ctl_check(&m, &why), 0);
	m.u.spawn.port = 256;
	assert_int_equal(ctl_check(&m, &why), -EINVAL);
	assert_string_equal(why.msg,
			    "port 256: not 0 (the policy's) or 1..255");
	m.u.spawn.port = 0;
	bp_set_str(m.u.spawn.socket, BP_PATH_SIZE, "/run/../a.sock");
	assert_int_equal(ctl_check(&m, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "socket '/run/../a.sock'"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_reply, setup, teardown),
		cmocka_unit_test(test_status_error),
		cmocka_unit_test_setup_teardown(test_error_reply, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_wrong_type, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_bad_message, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_closed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_request, setup, teardown),
		cmocka_unit_test(test_connect_refusals),
		cmocka_unit_test(test_add_address),
		cmocka_unit_test(test_check),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
