// SPDX-License-Identifier: MIT
/* vhost-user protocol core: framing, value checks, ring life cycle. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "tests/unit/guest_ram.h"
#include "tests/unit/log_capture.h"
#include "worker/vhost_user/device.h"
#include "worker/vhost_user/vu_proto.h"

#define RAM_SIZE     0x10000ull
#define UVA	     0x7f0000000000ull /* the frontend's address of GPA 0 */
#define DESC	     0x1000ull
#define AVAIL	     0x2000ull
#define USED	     0x3000ull
#define BUF	     0x4000ull
#define NUM	     8
#define ALL_FEATURES echo_device_ops.features

struct fix {
	struct vu_dev *dev;
	struct vu_result res;
	struct ram ram;
	int watched[256];
	unsigned int unwatch_calls;
	struct log_capture lc;
};

static int watch(void *ctx, unsigned int q, int fd)
{
	struct fix *f = ctx;

	f->watched[q] = fd;
	return 0;
}

static void unwatch(void *ctx, unsigned int q, int fd)
{
	struct fix *f = ctx;

	assert_int_equal(f->watched[q], fd);
	f->watched[q] = -1;
	f->unwatch_calls++;
}

static const struct vu_host_ops host = { watch, unwatch };

/* The limiters' clock: tests move it by hand. */
static uint64_t fake_ms = 1000;

static uint64_t fake_now(void)
{
	return fake_ms;
}

static int setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	memset(f->watched, -1, sizeof(f->watched));
	assert_int_equal(ram_open(&f->ram, RAM_SIZE), 0);
	assert_int_equal(vu_dev_new(&echo_device_ops, &host, f, &f->dev), 0);
	log_capture_start(&f->lc);
	log_set_clock(fake_now);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;

	vu_dev_free(f->dev);
	log_set_clock(NULL);
	log_capture_stop(&f->lc);
	ram_close(&f->ram);
	free(f);
	return 0;
}

static void send_raw(struct fix *f, uint32_t req, uint32_t flags,
		     const void *pl, uint32_t size, const int *fds,
		     unsigned int nfds)
{
	struct vhost_user_header h = { req, flags, size };
	uint8_t buf[sizeof(h) + VHOST_USER_MAX_PAYLOAD + 64] = { 0 };
	int fdcopy[VHOST_USER_MAX_FDS];

	memcpy(buf, &h, sizeof(h));
	if (pl)
		memcpy(buf + sizeof(h), pl, size);
	if (nfds)
		memcpy(fdcopy, fds, nfds * sizeof(int));
	vu_handle(f->dev, buf, sizeof(h) + size, fdcopy, nfds, &f->res);
}

static void send_msg(struct fix *f, uint32_t req, const void *pl, uint32_t size,
		     const int *fds, unsigned int nfds)
{
	send_raw(f, req, VHOST_USER_VERSION, pl, size, fds, nfds);
}

static void send_u64(struct fix *f, uint32_t req, uint64_t v)
{
	send_msg(f, req, &v, sizeof(v), NULL, 0);
}

static void send_state(struct fix *f, uint32_t req, uint32_t index,
		       uint32_t num)
{
	struct vhost_user_vring_state s = { index, num };

	send_msg(f, req, &s, sizeof(s), NULL, 0);
}

static void expect_ok(struct fix *f)
{
	if (f->res.disconnect)
		fail_msg("unexpected disconnect: %s", log_captured(&f->lc));
	assert_int_equal(f->res.reply_len, 0);
}

static void expect_drop(struct fix *f, const char *what)
{
	assert_true(f->res.disconnect);
	log_capture_expect(&f->lc, what);
}

static uint64_t reply_u64(struct fix *f)
{
	struct vhost_user_header h;
	uint64_t v;

	assert_int_equal(f->res.reply_len, sizeof(h) + 8);
	memcpy(&h, f->res.reply.bytes, sizeof(h));
	assert_int_equal(h.flags, VHOST_USER_VERSION | VHOST_USER_REPLY_MASK);
	memcpy(&v, f->res.reply.bytes + sizeof(h), 8);
	return v;
}

static void negotiate(struct fix *f, uint64_t features, uint64_t pf)
{
	send_u64(f, VHOST_USER_SET_PROTOCOL_FEATURES, pf);
	expect_ok(f);
	send_u64(f, VHOST_USER_SET_FEATURES, features);
	expect_ok(f);
}

static void mem_table(struct fix *f)
{
	struct {
		uint32_t n, pad;
		struct vhost_user_mem_region r;
	} m = { 1, 0, { 0, RAM_SIZE, UVA, 0 } };
	int fd = dup(f->ram.fd);

	send_msg(f, VHOST_USER_SET_MEM_TABLE, &m, sizeof(m), &fd, 1);
	expect_ok(f);
}

/* Queue q fully configured and kicked; returns the call eventfd. */
static int ring_up(struct fix *f, unsigned int q, int *ret_kick)
{
	struct vhost_user_vring_addr a = { q,	       0,	    UVA + DESC,
					   UVA + USED, UVA + AVAIL, 0 };
	int call = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	int kick = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	int callfd = dup(call), kickfd = dup(kick);

	send_state(f, VHOST_USER_SET_VRING_NUM, q, NUM);
	expect_ok(f);
	send_state(f, VHOST_USER_SET_VRING_BASE, q, 0);
	expect_ok(f);
	send_msg(f, VHOST_USER_SET_VRING_ADDR, &a, sizeof(a), NULL, 0);
	expect_ok(f);
	send_msg(f, VHOST_USER_SET_VRING_CALL, &(uint64_t){ q }, 8, &callfd, 1);
	expect_ok(f);
	send_msg(f, VHOST_USER_SET_VRING_KICK, &(uint64_t){ q }, 8, &kickfd, 1);
	expect_ok(f);
	*ret_kick = kick;
	return call;
}

static struct ring guest_ring(struct fix *f)
{
	return (struct ring){ f->ram.map + DESC, f->ram.map + AVAIL,
			      f->ram.map + USED, NUM, 0 };
}

/* Publishes "hello" + a 16-byte writable buffer as chain 0. */
static void post_hello(struct fix *f, struct ring *g)
{
	memcpy(f->ram.map + BUF, "hello", 5);
	memset(f->ram.map + BUF + 0x100, 0, 16);
	ring_desc(g, 0, BUF, 5, VRING_DESC_F_NEXT, 1);
	ring_desc(g, 1, BUF + 0x100, 16, VRING_DESC_F_WRITE, 0);
	ring_publish(g, 0);
}

static void expect_echoed(struct fix *f, struct ring *g, uint16_t used,
			  int call)
{
	uint32_t id, len;
	uint64_t v = 0;

	assert_int_equal(ring_used_idx(g), used);
	ring_used_elem(g, (used - 1) % NUM, &id, &len);
	assert_int_equal(id, 0);
	assert_int_equal(len, 5);
	assert_memory_equal(f->ram.map + BUF + 0x100, "hello", 5);
	assert_int_equal(read(call, &v, 8), 8);
	assert_true(v >= 1);
}

/* ---- framing: every malformed class drops the connection ------------ */

static void test_wrong_payload_size_drops_for_every_request(void **state)
{
	static const struct {
		uint32_t req, size;
	} t[] = {
		{ VHOST_USER_GET_FEATURES, 0 },
		{ VHOST_USER_SET_FEATURES, 8 },
		{ VHOST_USER_SET_OWNER, 0 },
		{ VHOST_USER_RESET_OWNER, 0 },
		{ VHOST_USER_SET_VRING_NUM, 8 },
		{ VHOST_USER_SET_VRING_ADDR, 40 },
		{ VHOST_USER_SET_VRING_BASE, 8 },
		{ VHOST_USER_GET_VRING_BASE, 8 },
		{ VHOST_USER_SET_VRING_KICK, 8 },
		{ VHOST_USER_SET_VRING_CALL, 8 },
		{ VHOST_USER_SET_VRING_ERR, 8 },
		{ VHOST_USER_GET_PROTOCOL_FEATURES, 0 },
		{ VHOST_USER_SET_PROTOCOL_FEATURES, 8 },
		{ VHOST_USER_GET_QUEUE_NUM, 0 },
		{ VHOST_USER_SET_VRING_ENABLE, 8 },
		{ VHOST_USER_RESET_DEVICE, 0 },
		{ VHOST_USER_GET_MAX_MEM_SLOTS, 0 },
		{ VHOST_USER_ADD_MEM_REG, 40 },
		{ VHOST_USER_REM_MEM_REG, 40 },
		{ VHOST_USER_SET_STATUS, 8 },
		{ VHOST_USER_GET_STATUS, 0 },
	};
	struct fix *f = *state;
	char what[64];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(t); i++) {
		send_msg(f, t[i].req, NULL, t[i].size + 1, NULL, 0);
		snprintf(what, sizeof(what),
			 "%s: payload of %u bytes, "
			 "expected %u",
			 vhost_user_request_name(t[i].req), t[i].size + 1,
			 t[i].size);
		expect_drop(f, what);
		if (t[i].size == 0)
			continue;
		send_msg(f, t[i].req, NULL, t[i].size - 1, NULL, 0);
		expect_drop(f, "payload of");
	}
}

static void test_mem_table_size_must_match_region_count(void **state)
{
	struct fix *f = *state;
	uint8_t pl[8 + 32 * 2] = { 2 };
	int fds[2] = { dup(f->ram.fd), dup(f->ram.fd) };

	send_msg(f, VHOST_USER_SET_MEM_TABLE, pl, 8 + 32, fds, 2);
	expect_drop(f, "payload of 40 bytes for 2 regions, expected 72");
}

static void test_mem_table_with_more_than_8_regions_drops(void **state)
{
	struct fix *f = *state;
	uint8_t pl[8] = { 9 };

	send_msg(f, VHOST_USER_SET_MEM_TABLE, pl, 8, NULL, 0);
	expect_drop(f, "9 regions (1 to 8 allowed)");
}

static void test_mem_table_fd_count_must_match_regions(void **state)
{
	struct fix *f = *state;
	uint8_t pl[8 + 32 * 2] = { 2 };
	int fds[1] = { dup(f->ram.fd) };

	send_msg(f, VHOST_USER_SET_MEM_TABLE, pl, sizeof(pl), fds, 1);
	expect_drop(f, "SET_MEM_TABLE: 1 fds, expected 2");
	/* The fd we sent was closed. */
	assert_int_equal(fcntl(fds[0], F_GETFD), -1);
}

static void test_kick_fd_count_follows_the_nofd_bit(void **state)
{
	struct fix *f = *state;
	int fd = eventfd(0, EFD_CLOEXEC);

	send_msg(f, VHOST_USER_SET_VRING_KICK, &(uint64_t){ 0 }, 8, NULL, 0);
	expect_drop(f, "SET_VRING_KICK: 0 fds, expected 1");
	send_msg(f, VHOST_USER_SET_VRING_CALL,
		 &(uint64_t){ VHOST_USER_VRING_NOFD_MASK }, 8, &fd, 1);
	expect_drop(f, "SET_VRING_CALL: 1 fds, expected 0");
	assert_int_equal(fcntl(fd, F_GETFD), -1);
}

static void test_fd_on_request_without_fds_is_closed_and_drops(void **state)
{
	struct fix *f = *state;
	int fd = eventfd(0, EFD_CLOEXEC);

	send_msg(f, VHOST_USER_GET_FEATURES, NULL, 0, &fd, 1);
	expect_drop(f, "GET_FEATURES: 1 fds, expected 0");
	assert_int_equal(fcntl(fd, F_GETFD), -1);
}

static void test_unknown_and_unsupported_requests_drop(void **state)
{
	static const uint32_t reqs[] = { VHOST_USER_NONE,
					 VHOST_USER_SET_LOG_BASE,
					 VHOST_USER_SEND_RARP,
					 VHOST_USER_SET_BACKEND_REQ_FD,
					 VHOST_USER_MAX_REQUEST,
					 1000,
					 UINT32_MAX };
	struct fix *f = *state;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(reqs); i++) {
		send_msg(f, reqs[i], NULL, 0, NULL, 0);
		expect_drop(f, "unsupported request");
	}
}

static void test_bad_version_flags_drop(void **state)
{
	struct fix *f = *state;

	send_raw(f, VHOST_USER_GET_FEATURES, 0, NULL, 0, NULL, 0);
	expect_drop(f, "carry version 0, not 1");
	send_raw(f, VHOST_USER_GET_FEATURES, 2, NULL, 0, NULL, 0);
	expect_drop(f, "carry version 2, not 1");
	send_raw(f, VHOST_USER_GET_FEATURES, 1 | VHOST_USER_REPLY_MASK, NULL, 0,
		 NULL, 0);
	expect_drop(f, "reply or reserved bits");
	send_raw(f, VHOST_USER_GET_FEATURES, 1 | 0x100, NULL, 0, NULL, 0);
	expect_drop(f, "reply or reserved bits");
}

static void test_size_field_and_received_bytes_must_agree(void **state)
{
	struct fix *f = *state;
	struct vhost_user_header h = { VHOST_USER_SET_FEATURES, 1, 8 };
	uint8_t buf[12 + 4];

	memcpy(buf, &h, 12);
	vu_handle(f->dev, buf, sizeof(buf), NULL, 0, &f->res);
	expect_drop(f, "size field 8 but 4 payload bytes");
	h.size = 4096; /* what the loop passes on: the header alone */
	memcpy(buf, &h, 12);
	vu_handle(f->dev, buf, 12, NULL, 0, &f->res);
	expect_drop(f, "payload size 4096 exceeds 512");
	vu_handle(f->dev, buf, 5, NULL, 0, &f->res);
	expect_drop(f, "shorter than the header");
}

static void test_config_size_field_must_match_payload(void **state)
{
	struct fix *f = *state;
	uint32_t c[3] = { 0, 300, 0 };

	negotiate(f, ALL_FEATURES, VU_PROTOCOL_FEATURES);
	send_msg(f, VHOST_USER_GET_CONFIG, c, 12, NULL, 0);
	expect_drop(f, "payload of 12 bytes for 300 config bytes");
	send_msg(f, VHOST_USER_GET_CONFIG, c, 8, NULL, 0);
	expect_drop(f, "need at least 12");
}

static void test_well_formed_message_passes_framing(void **state)
{
	struct vhost_user_header h = { VHOST_USER_GET_FEATURES, 1, 0 };
	struct reason why;

	assert_int_equal(vu_check_framing(&h, sizeof(h), 0, &why), 0);
	assert_int_equal(vu_check_framing(&h, sizeof(h), 1, &why), -EINVAL);
	assert_string_equal(why.msg, "1 fds, expected 0");
}

static void test_request_needing_unnegotiated_feature_drops(void **state)
{
	struct fix *f = *state;

	send_msg(f, VHOST_USER_GET_QUEUE_NUM, NULL, 0, NULL, 0);
	expect_drop(f, "GET_QUEUE_NUM: protocol feature 0 not negotiated");
}

/* ---- values: refused, acked if asked, else dropped -------------------- */

static void test_queue_index_past_max_is_refused_with_ack(void **state)
{
	struct vhost_user_vring_state s = { 256, 8 };
	struct fix *f = *state;

	negotiate(f, ALL_FEATURES, VU_PROTOCOL_FEATURES);
	send_raw(f, VHOST_USER_SET_VRING_NUM,
		 VHOST_USER_VERSION | VHOST_USER_NEED_REPLY, &s, 8, NULL, 0);
	assert_false(f->res.disconnect);
	assert_int_equal(reply_u64(f), 1);
	log_capture_expect(
		&f->lc,
		"SET_VRING_NUM: queue index 256, device has 256 queues");
	/* A good request answers 0. */
	s.index = 255;
	send_raw(f, VHOST_USER_SET_VRING_NUM,
		 VHOST_USER_VERSION | VHOST_USER_NEED_REPLY, &s, 8, NULL, 0);
	assert_int_equal(reply_u64(f), 0);
}

static void test_refusal_without_reply_ack_drops(void **state)
{
	struct fix *f = *state;

	send_state(f, VHOST_USER_SET_VRING_NUM, 300, 8);
	expect_drop(f, "cannot be reported without REPLY_ACK");
}

static void test_kick_index_past_max_and_reserved_bits_are_refused(void **state)
{
	struct fix *f = *state;
	int fd = eventfd(0, EFD_CLOEXEC);

	negotiate(f, ALL_FEATURES, VU_PROTOCOL_FEATURES);
	send_raw(f, VHOST_USER_SET_VRING_KICK,
		 VHOST_USER_VERSION | VHOST_USER_NEED_REPLY,
		 &(uint64_t){ 0x200 | 3 }, 8, &fd, 1);
	assert_int_equal(reply_u64(f), 1);
	log_capture_expect(&f->lc, "sets reserved bits");
	assert_int_equal(fcntl(fd, F_GETFD), -1);
}

static void test_ring_size_must_be_power_of_2_up_to_1024(void **state)
{
	static const uint32_t bad[] = { 0, 3, 100, 2048, 65536, UINT32_MAX };
	struct fix *f = *state;
	unsigned int i;

	negotiate(f, ALL_FEATURES, VU_PROTOCOL_FEATURES);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		struct vhost_user_vring_state s = { 1, bad[i] };

		send_raw(f, VHOST_USER_SET_VRING_NUM,
			 VHOST_USER_VERSION | VHOST_USER_NEED_REPLY, &s, 8,
			 NULL, 0);
		assert_int_equal(reply_u64(f), 1);
		log_capture_expect(&f->lc,
				   "is not a power of 2 from 1 to 1024");
	}
	send_state(f, VHOST_USER_SET_VRING_NUM, 1, 1024);
	expect_ok(f);
	send_state(f, VHOST_USER_SET_VRING_NUM, 1, 1);
	expect_ok(f);
}

static void check_bad_region(struct fix *f, struct vhost_user_mem_region r,
			     const char *what)
{
	struct {
		uint32_t n, pad;
		struct vhost_user_mem_region r[2];
	} m = { 2, 0, { { 0, RAM_SIZE / 2, UVA, 0 }, r } };
	int fds[2] = { dup(f->ram.fd), dup(f->ram.fd) };

	send_raw(f, VHOST_USER_SET_MEM_TABLE,
		 VHOST_USER_VERSION | VHOST_USER_NEED_REPLY, &m, sizeof(m), fds,
		 2);
	assert_false(f->res.disconnect);
	assert_int_equal(reply_u64(f), 1);
	log_capture_expect(&f->lc, what);
	assert_int_equal(f->dev->mem.nregions, 0);
}

static void test_bad_regions_are_refused(void **state)
{
	struct fix *f = *state;
	const uint64_t h = RAM_SIZE / 2;

	negotiate(f, ALL_FEATURES, VU_PROTOCOL_FEATURES);
	check_bad_region(
		f,
		(struct vhost_user_mem_region){ 0x1000, h, UVA + 0x100000, 0 },
		"guest-physical range overlaps");
	check_bad_region(f, (struct vhost_user_mem_region){ h, h, UVA + 1, h },
			 "frontend address range overlaps");
	check_bad_region(f, (struct vhost_user_mem_region){ h, 0, UVA + h, h },
			 "region 1 (guest 0x8000 size 0x0 offset 0x8000): "
			 "zero size");
	check_bad_region(f,
			 (struct vhost_user_mem_region){ h, UINT64_MAX, 0, h },
			 "overflows");
	check_bad_region(
		f, (struct vhost_user_mem_region){ h, h, UVA + h, RAM_SIZE },
		"past the end of the fd");
}

static void test_features_not_offered_are_refused(void **state)
{
	struct fix *f = *state;

	send_u64(f, VHOST_USER_SET_PROTOCOL_FEATURES, VU_PROTOCOL_FEATURES);
	send_raw(f, VHOST_USER_SET_FEATURES,
		 VHOST_USER_VERSION | VHOST_USER_NEED_REPLY,
		 &(uint64_t){ 1ull << VIRTIO_F_RING_PACKED }, 8, NULL, 0);
	assert_int_equal(reply_u64(f), 1);
	log_capture_expect(&f->lc, "never offered");
	send_raw(f, VHOST_USER_SET_PROTOCOL_FEATURES,
		 VHOST_USER_VERSION | VHOST_USER_NEED_REPLY,
		 &(uint64_t){ 1ull << VHOST_USER_PROTOCOL_F_LOG_SHMFD }, 8,
		 NULL, 0);
	assert_int_equal(reply_u64(f), 1);
}

static void test_config_reads_magic_and_refuses_out_of_range(void **state)
{
	struct fix *f = *state;
	uint32_t c[3] = { 2, 11, 0 };
	uint8_t pl[12 + 16] = { 0 };

	negotiate(f, ALL_FEATURES, VU_PROTOCOL_FEATURES);
	memcpy(pl, c, 12);
	send_msg(f, VHOST_USER_GET_CONFIG, pl, 12 + 11, NULL, 0);
	assert_int_equal(f->res.reply_len, 12 + 12 + 11);
	assert_memory_equal(f->res.reply.bytes + 24, "magate-echo", 11);
	c[0] = 10;
	c[1] = 7;
	memcpy(pl, c, 12);
	send_msg(f, VHOST_USER_GET_CONFIG, pl, 12 + 7, NULL, 0);
	assert_false(f->res.disconnect);
	assert_int_equal(f->res.reply_len, 12);
	log_capture_expect(&f->lc,
			   "bytes 10+7 outside the 16-byte config space");
	c[0] = UINT32_MAX;
	c[1] = 2;
	memcpy(pl, c, 12);
	send_msg(f, VHOST_USER_GET_CONFIG, pl, 12 + 2, NULL, 0);
	assert_int_equal(f->res.reply_len, 12);
}

static void test_set_config_is_refused(void **state)
{
	struct fix *f = *state;
	uint32_t c[4] = { 0, 4, 0, 0 };

	negotiate(f, ALL_FEATURES, VU_PROTOCOL_FEATURES);
	send_raw(f, VHOST_USER_SET_CONFIG,
		 VHOST_USER_VERSION | VHOST_USER_NEED_REPLY, c, 16, NULL, 0);
	assert_int_equal(reply_u64(f), 1);
	log_capture_expect(&f->lc, "read-only");
}

/* ---- ring life cycle --------------------------------------------------- */

static void test_ring_comes_up_alone_and_echoes(void **state)
{
	struct fix *f = *state;
	struct ring g = guest_ring(f);
	int kick, call;

	/* Without PROTOCOL_FEATURES a ring starts enabled. */
	send_u64(f, VHOST_USER_SET_FEATURES,
		 ALL_FEATURES & ~(1ull << VHOST_USER_F_PROTOCOL_FEATURES));
	mem_table(f);
	call = ring_up(f, 5, &kick);
	assert_true(f->dev->rings[5].running);
	assert_false(f->dev->rings[0].running);
	assert_true(f->watched[5] >= 0);
	post_hello(f, &g);
	vu_kick(f->dev, 5);
	expect_echoed(f, &g, 1, call);
	close(kick);
	close(call);
}

static void test_ring_waits_for_enable_or_first_kick(void **state)
{
	struct fix *f = *state;
	struct ring g = guest_ring(f);
	int kick, call;

	negotiate(f, ALL_FEATURES, VU_PROTOCOL_FEATURES);
	mem_table(f);
	call = ring_up(f, 0, &kick);
	assert_false(f->dev->rings[0].running);
	post_hello(f, &g);
	/* ABI §2.3: a kicked, configured ring counts as enabled. */
	vu_kick(f->dev, 0);
	assert_true(f->dev->rings[0].running);
	expect_echoed(f, &g, 1, call);
	close(kick);
	close(call);
}

static void test_explicitly_disabled_ring_ignores_kicks(void **state)
{
	struct fix *f = *state;
	struct ring g = guest_ring(f);
	int kick, call;

	negotiate(f, ALL_FEATURES, VU_PROTOCOL_FEATURES);
	mem_table(f);
	call = ring_up(f, 2, &kick);
	send_state(f, VHOST_USER_SET_VRING_ENABLE, 2, 0);
	expect_ok(f);
	post_hello(f, &g);
	vu_kick(f->dev, 2);
	assert_false(f->dev->rings[2].running);
	assert_int_equal(ring_used_idx(&g), 0);
	send_state(f, VHOST_USER_SET_VRING_ENABLE, 2, 1);
	expect_ok(f);
	expect_echoed(f, &g, 1, call);
	close(kick);
	close(call);
}

static void test_get_vring_base_stops_ring_and_returns_index(void **state)
{
	struct fix *f = *state;
	struct vhost_user_vring_state s = { 1, 0 };
	struct ring g = guest_ring(f);
	int kick, call;

	negotiate(f, ALL_FEATURES, VU_PROTOCOL_FEATURES);
	mem_table(f);
	call = ring_up(f, 1, &kick);
	send_state(f, VHOST_USER_SET_VRING_ENABLE, 1, 1);
	post_hello(f, &g);
	vu_kick(f->dev, 1);
	expect_echoed(f, &g, 1, call);
	send_msg(f, VHOST_USER_GET_VRING_BASE, &s, 8, NULL, 0);
	assert_int_equal(f->res.reply_len, 12 + 8);
	memcpy(&s, f->res.reply.bytes + 12, 8);
	assert_int_equal(s.index, 1);
	assert_int_equal(s.num, 1);
	assert_false(f->dev->rings[1].running);
	assert_int_equal(f->watched[1], -1);
	assert_int_equal(f->unwatch_calls, 1);
	/* Stopped: new buffers are not served. */
	post_hello(f, &g);
	vu_kick(f->dev, 1);
	assert_int_equal(ring_used_idx(&g), 1);
	close(kick);
	close(call);
}

static void test_ring_address_outside_memory_is_refused(void **state)
{
	struct vhost_user_vring_addr a = {
		4, 0, UVA + RAM_SIZE - 16, UVA + USED, UVA + AVAIL, 0
	};
	struct fix *f = *state;

	negotiate(f, ALL_FEATURES, VU_PROTOCOL_FEATURES);
	mem_table(f);
	send_state(f, VHOST_USER_SET_VRING_NUM, 4, NUM);
	send_raw(f, VHOST_USER_SET_VRING_ADDR,
		 VHOST_USER_VERSION | VHOST_USER_NEED_REPLY, &a, sizeof(a),
		 NULL, 0);
	assert_int_equal(reply_u64(f), 1);
	log_capture_expect(&f->lc, "SET_VRING_ADDR: queue 4 descriptor table "
				   "0x7f000000fff0+128 not in guest memory");
	a.desc_user_addr = DESC; /* a guest address, not the frontend's */
	send_raw(f, VHOST_USER_SET_VRING_ADDR,
		 VHOST_USER_VERSION | VHOST_USER_NEED_REPLY, &a, sizeof(a),
		 NULL, 0);
	assert_int_equal(reply_u64(f), 1);
	a.desc_user_addr = UVA + DESC + 8;
	send_raw(f, VHOST_USER_SET_VRING_ADDR,
		 VHOST_USER_VERSION | VHOST_USER_NEED_REPLY, &a, sizeof(a),
		 NULL, 0);
	assert_int_equal(reply_u64(f), 1);
	log_capture_expect(&f->lc, "not 16-byte aligned");
}

static void test_guest_ring_violation_sets_needs_reset(void **state)
{
	struct fix *f = *state;
	struct ring g = guest_ring(f);
	int kick, call;

	negotiate(f, ALL_FEATURES, VU_PROTOCOL_FEATURES);
	mem_table(f);
	call = ring_up(f, 0, &kick);
	send_state(f, VHOST_USER_SET_VRING_ENABLE, 0, 1);
	send_u64(f, VHOST_USER_SET_STATUS, 0x0f);
	ring_publish(&g, 200); /* head past the ring */
	vu_kick(f->dev, 0);
	log_capture_expect(&f->lc,
			   "virtqueue 0: avail ring entry 0 holds head 200");
	send_msg(f, VHOST_USER_GET_STATUS, NULL, 0, NULL, 0);
	assert_int_equal(reply_u64(f), 0x0f | VIRTIO_STATUS_NEEDS_RESET);
	/* The connection is fine: the frontend resets the device. */
	send_u64(f, VHOST_USER_SET_STATUS, 0);
	expect_ok(f);
	send_msg(f, VHOST_USER_GET_STATUS, NULL, 0, NULL, 0);
	assert_int_equal(reply_u64(f), 0);
	send_msg(f, VHOST_USER_RESET_DEVICE, NULL, 0, NULL, 0);
	expect_ok(f);
	assert_false(f->dev->rings[0].running);
	assert_int_equal(f->watched[0], -1);
	close(kick);
	close(call);
}

static void test_new_mem_table_restarts_running_rings(void **state)
{
	struct fix *f = *state;
	struct ring g = guest_ring(f);
	int kick, call;

	negotiate(f, ALL_FEATURES, VU_PROTOCOL_FEATURES);
	mem_table(f);
	call = ring_up(f, 0, &kick);
	send_state(f, VHOST_USER_SET_VRING_ENABLE, 0, 1);
	mem_table(f);
	assert_true(f->dev->rings[0].running);
	post_hello(f, &g);
	vu_kick(f->dev, 0);
	expect_echoed(f, &g, 1, call);
	close(kick);
	close(call);
}

static void test_add_and_remove_mem_region(void **state)
{
	struct vhost_user_mem_reg_single r = { 0, { 0, RAM_SIZE, UVA, 0 } };
	struct fix *f = *state;
	int fd = dup(f->ram.fd);

	negotiate(f, ALL_FEATURES, VU_PROTOCOL_FEATURES);
	send_msg(f, VHOST_USER_GET_MAX_MEM_SLOTS, NULL, 0, NULL, 0);
	assert_int_equal(reply_u64(f), 8);
	send_msg(f, VHOST_USER_ADD_MEM_REG, &r, sizeof(r), &fd, 1);
	expect_ok(f);
	assert_int_equal(f->dev->mem.nregions, 1);
	fd = dup(f->ram.fd);
	send_raw(f, VHOST_USER_ADD_MEM_REG,
		 VHOST_USER_VERSION | VHOST_USER_NEED_REPLY, &r, sizeof(r), &fd,
		 1);
	assert_int_equal(reply_u64(f), 1);
	log_capture_expect(&f->lc, "overlaps");
	r.region.mmap_offset = 0x1234; /* ignored for removal */
	send_msg(f, VHOST_USER_REM_MEM_REG, &r, sizeof(r), NULL, 0);
	expect_ok(f);
	assert_int_equal(f->dev->mem.nregions, 0);
	send_raw(f, VHOST_USER_REM_MEM_REG,
		 VHOST_USER_VERSION | VHOST_USER_NEED_REPLY, &r, sizeof(r),
		 NULL, 0);
	assert_int_equal(reply_u64(f), 1);
	log_capture_expect(&f->lc, "REM_MEM_REG: no region at guest 0x0");
}

/* The echo device with a mem_gone() that records its calls. */
static struct {
	unsigned int n;
	uint64_t gpa, size;
} gone;

static void spy_mem_gone(void *priv, uint64_t gpa, uint64_t size)
{
	(void)priv;
	gone.n++;
	gone.gpa = gpa;
	gone.size = size;
}

static void two_halves(struct fix *f, unsigned int n, uint64_t off1)
{
	struct {
		uint32_t n, pad;
		struct vhost_user_mem_region r[2];
	} m = { n,
		0,
		{ { 0, RAM_SIZE / 2, UVA, 0 },
		  { RAM_SIZE / 2, RAM_SIZE / 2, UVA + RAM_SIZE / 2, off1 } } };
	int fds[2] = { dup(f->ram.fd), dup(f->ram.fd) };

	send_msg(f, VHOST_USER_SET_MEM_TABLE, &m, 8 + n * sizeof(m.r[0]), fds,
		 n);
	expect_ok(f);
}

/*
 * Memory that leaves the table is reported to the device (its MRs over it
 * are revoked) before it is unmapped; a region the next SET_MEM_TABLE maps
 * again unchanged is not, one it maps at another file offset is.
 */
static void test_mem_gone_reported(void **state)
{
	struct vhost_user_mem_reg_single r = {
		0,
		{ RAM_SIZE / 2, RAM_SIZE / 2, UVA + RAM_SIZE / 2, RAM_SIZE / 2 }
	};
	struct device_ops spy = echo_device_ops;
	struct fix *f = *state;
	int fd;

	vu_dev_free(f->dev);
	spy.mem_gone = spy_mem_gone;
	assert_int_equal(vu_dev_new(&spy, &host, f, &f->dev), 0);
	memset(&gone, 0, sizeof(gone));
	negotiate(f, ALL_FEATURES, VU_PROTOCOL_FEATURES);
	two_halves(f, 2, RAM_SIZE / 2);
	assert_int_equal(gone.n, 0);
	two_halves(f, 2, RAM_SIZE / 2); /* QEMU sends it all again */
	assert_int_equal(gone.n, 0);
	two_halves(f, 1, 0);
	assert_int_equal(gone.n, 1);
	assert_int_equal(gone.gpa, RAM_SIZE / 2);
	assert_int_equal(gone.size, RAM_SIZE / 2);
	two_halves(f, 2, RAM_SIZE / 2);
	two_halves(f, 2, 0); /* the same range, other memory behind it */
	assert_int_equal(gone.n, 2);
	assert_int_equal(gone.gpa, RAM_SIZE / 2);
	two_halves(f, 1, 0);
	assert_int_equal(gone.n, 3);
	fd = dup(f->ram.fd);
	send_msg(f, VHOST_USER_ADD_MEM_REG, &r, sizeof(r), &fd, 1);
	expect_ok(f);
	send_msg(f, VHOST_USER_REM_MEM_REG, &r, sizeof(r), NULL, 0);
	expect_ok(f);
	assert_int_equal(gone.n, 4);
	assert_int_equal(gone.gpa, RAM_SIZE / 2);
	assert_int_equal(gone.size, RAM_SIZE / 2);
	vu_dev_free(f->dev);
	assert_int_equal(gone.n, 4);
	assert_int_equal(vu_dev_new(&echo_device_ops, &host, f, &f->dev), 0);
}

static void test_ring_without_kick_fd_is_polled(void **state)
{
	struct vhost_user_vring_addr a = { 6,	       0,	    UVA + DESC,
					   UVA + USED, UVA + AVAIL, 0 };
	struct fix *f = *state;
	struct ring g = guest_ring(f);
	int call = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	int callfd = dup(call);

	negotiate(f, ALL_FEATURES, VU_PROTOCOL_FEATURES);
	mem_table(f);
	send_state(f, VHOST_USER_SET_VRING_NUM, 6, NUM);
	send_msg(f, VHOST_USER_SET_VRING_ADDR, &a, sizeof(a), NULL, 0);
	send_msg(f, VHOST_USER_SET_VRING_CALL, &(uint64_t){ 6 }, 8, &callfd, 1);
	send_u64(f, VHOST_USER_SET_VRING_KICK, 6 | VHOST_USER_VRING_NOFD_MASK);
	expect_ok(f);
	send_state(f, VHOST_USER_SET_VRING_ENABLE, 6, 1);
	expect_ok(f);
	assert_true(f->dev->rings[6].running);
	assert_int_equal(f->watched[6], -1);
	assert_true(vu_needs_poll(f->dev));
	post_hello(f, &g);
	vu_poll(f->dev);
	expect_echoed(f, &g, 1, call);
	close(call);
}

/* ---- call and err fds, per-kick budget ------------------------------- */

/* A blocking pipe whose buffer is full: a blocking write would hang. */
static void full_pipe(int p[2])
{
	static char page[4096];
	int size;

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	size = fcntl(p[1], F_SETPIPE_SZ, 4096);
	assert_true(size >= 4096);
	while (size > 0) {
		ssize_t n = write(p[1], page,
				  (size_t)size < sizeof(page) ? (size_t)size
							      : sizeof(page));
		assert_true(n > 0);
		size -= (int)n;
	}
	assert_int_equal(fcntl(p[1], F_GETFL) & O_NONBLOCK, 0);
}

static void set_call(struct fix *f, uint32_t req, unsigned int q, int fd)
{
	int copy = dup(fd);

	send_raw(f, req, VHOST_USER_VERSION | VHOST_USER_NEED_REPLY,
		 &(uint64_t){ q }, 8, &copy, 1);
}

static void test_full_blocking_call_pipe_does_not_block(void **state)
{
	struct fix *f = *state;
	struct ring g = guest_ring(f);
	int kick, call, p[2];

	negotiate(f, ALL_FEATURES, VU_PROTOCOL_FEATURES);
	mem_table(f);
	call = ring_up(f, 0, &kick);
	full_pipe(p);
	set_call(f, VHOST_USER_SET_VRING_CALL, 0, p[1]);
	assert_int_equal(reply_u64(f), 0);
	/* The shared open file is non-blocking now: the write cannot wait. */
	assert_int_not_equal(fcntl(p[1], F_GETFL) & O_NONBLOCK, 0);
	set_call(f, VHOST_USER_SET_VRING_ERR, 0, p[1]);
	assert_int_equal(reply_u64(f), 0);
	post_hello(f, &g);
	alarm(10); /* a hang fails the test instead of stalling the suite */
	vu_kick(f->dev, 0);
	alarm(0);
	assert_int_equal(ring_used_idx(&g), 1);
	close(p[0]);
	close(p[1]);
	close(kick);
	close(call);
}

static void test_call_fd_must_be_a_writable_eventfd_kind(void **state)
{
	struct fix *f = *state;
	int p[2], memfd;

	negotiate(f, ALL_FEATURES, VU_PROTOCOL_FEATURES);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	set_call(f, VHOST_USER_SET_VRING_CALL, 0, p[0]);
	assert_int_equal(reply_u64(f), 1);
	log_capture_expect(
		&f->lc,
		"SET_VRING_CALL: queue 0 call fd: not open for writing");
	memfd = f->ram.fd;
	set_call(f, VHOST_USER_SET_VRING_ERR, 1, memfd);
	assert_int_equal(reply_u64(f), 1);
	log_capture_expect(
		&f->lc,
		"queue 1 err fd: a file or block device, not an eventfd");
	assert_int_equal(f->dev->rings[0].vq.call_fd, -1);
	assert_int_equal(f->dev->rings[1].err_fd, -1);
	close(p[0]);
	close(p[1]);
}

/*
 * A full ring is served a budget at a time: the rest waits for the loop's
 * poll round, so the worker returns to its other fds in between.
 */
static void test_kick_serves_a_bounded_number_of_chains(void **state)
{
	enum { BIG = 128 };
	struct vhost_user_vring_addr a = { 0,	       0,	    UVA + DESC,
					   UVA + USED, UVA + AVAIL, 0 };
	struct fix *f = *state;
	struct ring g = { f->ram.map + DESC, f->ram.map + AVAIL,
			  f->ram.map + USED, BIG, 0 };
	int kick = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	int kickfd = dup(kick);
	unsigned int i;

	negotiate(f, ALL_FEATURES, VU_PROTOCOL_FEATURES);
	mem_table(f);
	send_state(f, VHOST_USER_SET_VRING_NUM, 0, BIG);
	send_msg(f, VHOST_USER_SET_VRING_ADDR, &a, sizeof(a), NULL, 0);
	expect_ok(f);
	send_msg(f, VHOST_USER_SET_VRING_KICK, &(uint64_t){ 0 }, 8, &kickfd, 1);
	send_state(f, VHOST_USER_SET_VRING_ENABLE, 0, 1);
	expect_ok(f);
	for (i = 0; i < BIG; i++) {
		ring_desc(&g, i, BUF + 16 * i, 16, VRING_DESC_F_WRITE, 0);
		ring_publish(&g, (uint16_t)i);
	}
	vu_kick(f->dev, 0);
	assert_true(ring_used_idx(&g) > 0);
	assert_true(ring_used_idx(&g) < BIG);
	assert_true(echo_device_ops.wants_poll(f->dev->priv));
	for (i = 0; i < BIG && echo_device_ops.wants_poll(f->dev->priv); i++)
		echo_device_ops.poll(f->dev->priv);
	assert_int_equal(ring_used_idx(&g), BIG);
	assert_false(echo_device_ops.wants_poll(f->dev->priv));
	close(kick);
}

static unsigned int count_lines(const char *p)
{
	unsigned int lines = 0;

	for (; (p = strchr(p, '\n')); p++)
		lines++;
	return lines;
}

/* A refused request, answered with a failure ack: one warning each. */
static void refused_request(struct fix *f)
{
	send_raw(f, VHOST_USER_SET_VRING_NUM,
		 VHOST_USER_VERSION | VHOST_USER_NEED_REPLY,
		 &(struct vhost_user_vring_state){ 999, 8 }, 8, NULL, 0);
	assert_int_equal(reply_u64(f), 1);
}

/*
 * The budget is the process's (the VM's), not the connection's: a frontend
 * that reconnects gets no new lines, and the count of what was dropped is
 * reported when lines flow again.
 */
static void test_violation_logging_is_rate_limited_per_vm(void **state)
{
	struct fix *f = *state;
	unsigned int conn, i;
	const char *l;

	for (conn = 0; conn < 3; conn++) {
		vu_dev_free(f->dev);
		assert_int_equal(
			vu_dev_new(&echo_device_ops, &host, f, &f->dev), 0);
		negotiate(f, ALL_FEATURES, VU_PROTOCOL_FEATURES);
		for (i = 0; i < 30; i++)
			refused_request(f);
	}
	assert_int_equal(count_lines(log_captured(&f->lc)), LOG_PEER_BURST);
	fake_ms += LOG_PEER_INTERVAL_MS - 1;
	refused_request(f);
	assert_int_equal(count_lines(log_captured(&f->lc)), 0);
	fake_ms += 1;
	refused_request(f);
	l = log_captured(&f->lc);
	assert_int_equal(count_lines(l), 2);
	if (!strstr(l, "81 similar lines suppressed by the rate limit"))
		fail_msg("no count of the suppressed lines in '%s'", l);
	assert_non_null(strstr(l, "queue index 999"));
	refused_request(f);
	l = log_captured(&f->lc);
	assert_int_equal(count_lines(l), 1);
	assert_null(strstr(l, "suppressed"));
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_wrong_payload_size_drops_for_every_request),
		T(test_mem_table_size_must_match_region_count),
		T(test_mem_table_with_more_than_8_regions_drops),
		T(test_mem_table_fd_count_must_match_regions),
		T(test_kick_fd_count_follows_the_nofd_bit),
		T(test_fd_on_request_without_fds_is_closed_and_drops),
		T(test_unknown_and_unsupported_requests_drop),
		T(test_bad_version_flags_drop),
		T(test_size_field_and_received_bytes_must_agree),
		T(test_config_size_field_must_match_payload),
		T(test_well_formed_message_passes_framing),
		T(test_request_needing_unnegotiated_feature_drops),
		T(test_queue_index_past_max_is_refused_with_ack),
		T(test_refusal_without_reply_ack_drops),
		T(test_kick_index_past_max_and_reserved_bits_are_refused),
		T(test_ring_size_must_be_power_of_2_up_to_1024),
		T(test_bad_regions_are_refused),
		T(test_features_not_offered_are_refused),
		T(test_config_reads_magic_and_refuses_out_of_range),
		T(test_set_config_is_refused),
		T(test_ring_comes_up_alone_and_echoes),
		T(test_ring_waits_for_enable_or_first_kick),
		T(test_explicitly_disabled_ring_ignores_kicks),
		T(test_get_vring_base_stops_ring_and_returns_index),
		T(test_ring_address_outside_memory_is_refused),
		T(test_guest_ring_violation_sets_needs_reset),
		T(test_new_mem_table_restarts_running_rings),
		T(test_add_and_remove_mem_region),
		T(test_mem_gone_reported),
		T(test_ring_without_kick_fd_is_polled),
		T(test_violation_logging_is_rate_limited_per_vm),
		T(test_full_blocking_call_pipe_does_not_block),
		T(test_call_fd_must_be_a_writable_eventfd_kind),
		T(test_kick_serves_a_bounded_number_of_chains),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
