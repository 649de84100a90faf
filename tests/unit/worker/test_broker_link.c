// SPDX-License-Identifier: MIT
/*
 * The worker's GID requests to the broker (worker/broker_link.c) never
 * hold the worker for long: a claim waits BROKER_LINK_GID_TIMEOUT_MS at
 * most, then gives the claim back with a GID_DEL; a release does not wait
 * at all; and a VM's claims are metered (a token bucket of
 * BROKER_LINK_CLAIM_BURST, then one per BROKER_LINK_CLAIM_EVERY_MS),
 * refused with -EAGAIN and a reason past that.  The test plays the broker
 * on a socketpair.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/clock.h"
#include "common/log.h"
#include "worker/broker_link.h"

static const uint8_t gid[16] = { 0xfd, 0x99, [15] = 0x10 };

struct fix {
	struct broker_link bl;
	int broker; /* the test's end */
	int lfd[2]; /* a "listening socket" that never gets a connection */
};

static int setup(void **state)
{
	static struct fix f;
	int sp[2];

	memset(&f, 0, sizeof(f));
	log_init("test", LOG_LVL_ERR);
	assert_int_equal(
		socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
	assert_int_equal(pipe(f.lfd), 0);
	f.bl.lfd = f.lfd[0];
	f.bl.cfd = sp[0];
	f.bl.ep = -1;
	f.bl.vm = "a";
	/* the broker is root: as msg_conn_open() would have it */
	f.bl.conn = (struct msg_conn){ .p = &wp_protocol,
				       .from_mask = 1u << WP_FROM_BROKER };
	f.broker = sp[1];
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;

	close(f->bl.cfd);
	close(f->broker);
	close(f->lfd[0]);
	close(f->lfd[1]);
	return 0;
}

/* The next request the worker sent, or 0 when there is none. */
static uint32_t next_request(struct fix *f, struct wp_msg *m)
{
	uint8_t buf[WP_MSG_MAX];
	struct reason why;
	ssize_t n = recv(f->broker, buf, sizeof(buf), MSG_DONTWAIT);

	if (n <= 0)
		return 0;
	assert_int_equal(wp_decode(buf, (size_t)n, m, &why), 0);
	return m->h.type;
}

static void answer(struct fix *f, uint32_t seq, uint32_t index)
{
	struct wp_msg m;

	wp_init(&m, WP_GID_ADD_REPLY);
	m.u.gid_reply.seq = seq;
	m.u.gid_reply.host_index = index;
	strcpy(m.u.gid_reply.text, "ok");
	assert_int_equal(wp_send(f->broker, &m), 0);
}

static void test_claim_gives_up_and_gives_back(void **state)
{
	struct fix *f = *state;
	struct reason why;
	uint64_t t0 = mono_ms(), took;
	uint32_t host = 99;
	struct wp_msg m;

	assert_int_equal(
		broker_link_gid(&f->bl, WP_GID_ADD, gid, 2, false, &host, &why),
		-ETIMEDOUT);
	took = mono_ms() - t0;
	assert_true(took >= BROKER_LINK_GID_TIMEOUT_MS);
	assert_true(took < BROKER_LINK_GID_TIMEOUT_MS + 500);
	assert_int_equal(host, 99); /* untouched */
	assert_int_equal(next_request(f, &m), WP_GID_ADD);
	assert_int_equal(next_request(f, &m), WP_GID_DEL);
	assert_memory_equal(m.u.gid.gid, gid, 16);
	/* its late answer is read from the loop, quietly */
	answer(f, 1, 3);
	broker_link_readable(&f->bl);
	assert_int_equal(next_request(f, &m), 0);
}

static void test_release_does_not_wait(void **state)
{
	struct fix *f = *state;
	struct reason why;
	uint64_t t0 = mono_ms();
	struct wp_msg m;

	assert_int_equal(
		broker_link_gid(&f->bl, WP_GID_DEL, gid, 2, false, NULL, &why),
		0);
	assert_true(mono_ms() - t0 < 100);
	assert_int_equal(next_request(f, &m), WP_GID_DEL);
	/* and a claim right after is answered as usual */
	answer(f, 2, 5);
	{
		uint32_t host = 0;

		assert_int_equal(broker_link_gid(&f->bl, WP_GID_ADD, gid, 2,
						 false, &host, &why),
				 0);
		assert_int_equal(host, 5);
	}
}

static void test_claims_metered(void **state)
{
	struct fix *f = *state;
	struct reason why;
	uint32_t i, host;
	struct wp_msg m;

	/* the burst, each answered */
	for (i = 1; i <= BROKER_LINK_CLAIM_BURST; i++) {
		answer(f, i, i);
		assert_int_equal(broker_link_gid(&f->bl, WP_GID_ADD, gid, 2,
						 false, &host, &why),
				 0);
		assert_int_equal(host, i);
	}
	while (next_request(f, &m))
		;
	/* then refused at once, without a word to the broker */
	assert_int_equal(
		broker_link_gid(&f->bl, WP_GID_ADD, gid, 2, false, &host, &why),
		-EAGAIN);
	if (!strstr(why.msg, "limited"))
		fail_msg("refused for another reason: %s", why.msg);
	assert_int_equal(next_request(f, &m), 0);
	/* releases are not metered */
	assert_int_equal(
		broker_link_gid(&f->bl, WP_GID_DEL, gid, 2, false, NULL, &why),
		0);
}

/* The bucket on a clock of the test's own. */
static void test_bucket_refills(void **state)
{
	struct fix *f = *state;
	uint64_t now = 1000000;
	unsigned int i;

	for (i = 0; i < BROKER_LINK_CLAIM_BURST; i++)
		assert_true(broker_link_claim_token(&f->bl, now));
	assert_false(broker_link_claim_token(&f->bl, now));
	now += BROKER_LINK_CLAIM_EVERY_MS - 1;
	assert_false(broker_link_claim_token(&f->bl, now));
	now += 1;
	assert_true(broker_link_claim_token(&f->bl, now));
	assert_false(broker_link_claim_token(&f->bl, now));
	/* a long quiet fills it to the burst, no more */
	now += 100ull * BROKER_LINK_CLAIM_EVERY_MS;
	for (i = 0; i < BROKER_LINK_CLAIM_BURST; i++)
		assert_true(broker_link_claim_token(&f->bl, now));
	assert_false(broker_link_claim_token(&f->bl, now));
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_claim_gives_up_and_gives_back),
		T(test_release_does_not_wait),
		T(test_claims_metered),
		T(test_bucket_refills),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
