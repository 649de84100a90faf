// SPDX-License-Identifier: MIT
/* Split-ring walker against hand-built rings in a memfd guest RAM. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/log.h"
#include "tests/unit/guest_ram.h"
#include "worker/guest_mem.h"
#include "worker/vhost_user/virtq.h"

/*
 * Guest-physical layout: R0 [0, 64K) and R1 [64K, 128K) are contiguous in
 * GPA but not in frontend addresses; [128K, 192K) is a hole; R2 [192K,
 * 256K).  The ring (8 entries) lives in R0; data buffers after it.
 */
#define R0    0x0ull
#define R1    0x10000ull
#define HOLE  0x20000ull
#define R2    0x30000ull
#define DESC  0x1000ull
#define AVAIL 0x2000ull
#define USED  0x3000ull
#define BUF   0x4000ull
#define TABLE 0x8000ull
#define NUM   8

struct fix {
	struct ram ram;
	struct guest_mem gm;
	struct vq vq;
	struct ring ring;
	uint8_t status;
	struct vq_elem *elem;
	int logp[2];
};

static uint64_t file_off(uint64_t gpa)
{
	return gpa >= R2 ? gpa - R2 + 0x20000 : gpa;
}

static uint8_t *at(struct fix *f, uint64_t gpa)
{
	return f->ram.map + file_off(gpa);
}

static void add(struct fix *f, uint64_t gpa, uint64_t uva, uint64_t off)
{
	struct gm_desc r = { gpa, 0x10000, uva, off, PROT_READ | PROT_WRITE };
	struct reason why;

	assert_int_equal(gm_add_region(&f->gm, &r, f->ram.fd, &why), 0);
}

static int setup_num(void **state, bool indirect)
{
	struct fix *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_int_equal(ram_open(&f->ram, 0x30000), 0);
	gm_init(&f->gm);
	add(f, R0, 0x700000000000ull, 0);
	add(f, R1, 0x710000000000ull, 0x10000);
	add(f, R2, 0x720000000000ull, 0x20000);
	f->ring =
		(struct ring){ at(f, DESC), at(f, AVAIL), at(f, USED), NUM, 0 };
	vq_init(&f->vq, 3);
	assert_int_equal(vq_setup(&f->vq, &f->gm, NUM,
				  gm_gpa_to_host(&f->gm, DESC, 16 * NUM),
				  gm_gpa_to_host(&f->gm, AVAIL, 4 + 2 * NUM),
				  gm_gpa_to_host(&f->gm, USED, 4 + 8 * NUM), 0,
				  indirect, &f->status),
			 0);
	f->elem = malloc(sizeof(*f->elem));
	assert_non_null(f->elem);
	assert_int_equal(pipe2(f->logp, O_NONBLOCK | O_CLOEXEC), 0);
	log_init("test", LOG_LVL_INFO);
	log_peer_reset(); /* each test sees its violation's line */
	log_set_fd(f->logp[1]);
	*state = f;
	return 0;
}

static int setup(void **state)
{
	return setup_num(state, true);
}

static int setup_no_indirect(void **state)
{
	return setup_num(state, false);
}

static int teardown(void **state)
{
	struct fix *f = *state;

	log_set_fd(2);
	close(f->logp[0]);
	close(f->logp[1]);
	vq_teardown(&f->vq);
	if (f->vq.call_fd >= 0)
		close(f->vq.call_fd);
	gm_clear(&f->gm);
	ram_close(&f->ram);
	free(f->elem);
	free(f);
	return 0;
}

/* Pops and expects a violation whose log line contains what. */
static void expect_violation(struct fix *f, const char *what)
{
	char buf[512];
	ssize_t n;

	assert_int_equal(vq_pop(&f->vq, f->elem), -EBADMSG);
	assert_true(f->vq.broken);
	assert_true(f->status & VIRTIO_STATUS_NEEDS_RESET);
	n = read(f->logp[0], buf, sizeof(buf) - 1);
	assert_true(n > 0);
	buf[n] = '\0';
	if (!strstr(buf, what))
		fail_msg("log '%s' does not mention '%s'", buf, what);
	/* A broken queue pops nothing more. */
	assert_int_equal(vq_pop(&f->vq, f->elem), 0);
}

/* ---- well-formed chains --------------------------------------------- */

static void test_empty_ring_pops_nothing(void **state)
{
	struct fix *f = *state;

	assert_int_equal(vq_pop(&f->vq, f->elem), 0);
	assert_false(f->vq.broken);
}

static void test_readable_then_writable_chain_gives_two_iovecs(void **state)
{
	struct fix *f = *state;

	ring_desc(&f->ring, 5, BUF, 100, VRING_DESC_F_NEXT, 2);
	ring_desc(&f->ring, 2, BUF + 0x100, 50, VRING_DESC_F_WRITE, 0);
	ring_publish(&f->ring, 5);
	assert_int_equal(vq_pop(&f->vq, f->elem), 1);
	assert_int_equal(f->elem->head, 5);
	assert_int_equal(f->elem->out_num, 1);
	assert_int_equal(f->elem->in_num, 1);
	assert_int_equal(f->elem->out_len, 100);
	assert_int_equal(f->elem->in_len, 50);
	assert_ptr_equal(vq_elem_out(f->elem)[0].iov_base,
			 gm_gpa_to_host(&f->gm, BUF, 1));
	assert_ptr_equal(vq_elem_in(f->elem)[0].iov_base,
			 gm_gpa_to_host(&f->gm, BUF + 0x100, 1));
	assert_int_equal(vq_pop(&f->vq, f->elem), 0);
}

static void test_buffer_spanning_two_regions_gives_two_iovecs(void **state)
{
	struct fix *f = *state;

	ring_desc(&f->ring, 0, R1 - 0x80, 0x100, 0, 0);
	ring_publish(&f->ring, 0);
	assert_int_equal(vq_pop(&f->vq, f->elem), 1);
	assert_int_equal(f->elem->out_num, 2);
	assert_int_equal(f->elem->iov[0].iov_len, 0x80);
	assert_int_equal(f->elem->iov[1].iov_len, 0x80);
	assert_ptr_equal(f->elem->iov[1].iov_base,
			 gm_gpa_to_host(&f->gm, R1, 1));
}

static void test_indirect_table_is_walked(void **state)
{
	struct fix *f = *state;
	uint8_t *t = at(f, TABLE);

	table_desc(t, 0, BUF, 10, VRING_DESC_F_NEXT, 2);
	table_desc(t, 2, BUF + 0x10, 20, VRING_DESC_F_NEXT, 1);
	table_desc(t, 1, BUF + 0x40, 30, VRING_DESC_F_WRITE, 0);
	ring_desc(&f->ring, 4, TABLE, 3 * 16, VRING_DESC_F_INDIRECT, 0);
	ring_publish(&f->ring, 4);
	assert_int_equal(vq_pop(&f->vq, f->elem), 1);
	assert_int_equal(f->elem->head, 4);
	assert_int_equal(f->elem->out_num, 2);
	assert_int_equal(f->elem->in_num, 1);
	assert_int_equal(f->elem->out_len, 30);
	assert_int_equal(f->elem->in_len, 30);
}

static void test_indirect_table_spanning_regions_is_copied(void **state)
{
	struct fix *f = *state;
	uint64_t t = R1 - 16;

	table_desc(at(f, t), 0, BUF, 8, VRING_DESC_F_NEXT, 1);
	table_desc(at(f, R1), 0, BUF + 8, 8, VRING_DESC_F_WRITE, 0);
	ring_desc(&f->ring, 0, t, 32, VRING_DESC_F_INDIRECT, 0);
	ring_publish(&f->ring, 0);
	assert_int_equal(vq_pop(&f->vq, f->elem), 1);
	assert_int_equal(f->elem->out_num, 1);
	assert_int_equal(f->elem->in_num, 1);
}

static void test_avail_index_wraps_at_65536(void **state)
{
	struct fix *f = *state;

	f->vq.last_avail = 0xffff;
	f->ring.avail_idx = 0xffff;
	ring_desc(&f->ring, 1, BUF, 4, 0, 0);
	ring_publish(&f->ring, 1);
	ring_publish(&f->ring, 1);
	assert_int_equal(f->ring.avail_idx, 1);
	assert_int_equal(vq_pop(&f->vq, f->elem), 1);
	assert_int_equal(vq_pop(&f->vq, f->elem), 1);
	assert_int_equal(vq_pop(&f->vq, f->elem), 0);
	assert_int_equal(f->vq.last_avail, 1);
}

static void
test_push_fills_used_ring_and_notify_honours_no_interrupt(void **state)
{
	struct fix *f = *state;
	uint32_t id, len;
	uint64_t v;

	f->vq.call_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	assert_true(f->vq.call_fd >= 0);
	ring_desc(&f->ring, 6, BUF, 4, VRING_DESC_F_WRITE, 0);
	ring_publish(&f->ring, 6);
	assert_int_equal(vq_pop(&f->vq, f->elem), 1);
	vq_push(&f->vq, f->elem, 3);
	assert_int_equal(ring_used_idx(&f->ring), 1);
	ring_used_elem(&f->ring, 0, &id, &len);
	assert_int_equal(id, 6);
	assert_int_equal(len, 3);
	vq_notify(&f->vq);
	assert_int_equal(read(f->vq.call_fd, &v, 8), 8);
	assert_int_equal(v, 1);
	ring_set_avail_flags(&f->ring, VRING_AVAIL_F_NO_INTERRUPT);
	vq_notify(&f->vq);
	assert_int_equal(read(f->vq.call_fd, &v, 8), -1);
	assert_int_equal(errno, EAGAIN);
}

/* Pops and returns n chains (one writable buffer each); no notify. */
static void use_n(struct fix *f, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		ring_desc(&f->ring, 6, BUF, 4, VRING_DESC_F_WRITE, 0);
		ring_publish(&f->ring, 6);
		assert_int_equal(vq_pop(&f->vq, f->elem), 1);
		vq_push(&f->vq, f->elem, 0);
	}
}

static uint64_t calls(struct fix *f)
{
	uint64_t v = 0;

	if (read(f->vq.call_fd, &v, 8) != 8)
		return 0;
	return v;
}

static void set_used_event(struct fix *f, uint16_t v)
{
	memcpy(f->ring.avail + VQ_AVAIL_BYTES(NUM), &v, 2);
}

static uint16_t get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

static void test_event_idx_notify_follows_used_event(void **state)
{
	struct fix *f = *state;

	f->vq.call_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	assert_true(f->vq.call_fd >= 0);
	vq_set_event_idx(&f->vq, true);
	/* the flag means nothing with event index */
	ring_set_avail_flags(&f->ring, VRING_AVAIL_F_NO_INTERRUPT);
	use_n(f, 1);
	vq_notify(&f->vq); /* nothing signalled yet: signal */
	assert_int_equal(calls(f), 1);
	set_used_event(f, 4); /* "call me when entry 4 is used" */
	use_n(f, 2);	      /* used 1 -> 3 */
	vq_notify(&f->vq);
	assert_int_equal(calls(f), 0);
	vq_notify(&f->vq); /* nothing new: nothing */
	assert_int_equal(calls(f), 0);
	use_n(f, 3); /* 3 -> 6 crosses 4: one call for the three */
	vq_notify(&f->vq);
	assert_int_equal(calls(f), 1);
	use_n(f, 1); /* 6 -> 7, used_event 4 behind */
	vq_notify(&f->vq);
	assert_int_equal(calls(f), 0);
	/* pushes the device chose not to signal: the next one signals */
	vq_unsignalled(&f->vq);
	use_n(f, 1);
	vq_notify(&f->vq);
	assert_int_equal(calls(f), 1);
}

static void test_kicks_off_and_back_on(void **state)
{
	struct fix *f = *state;

	/* without event index: the used ring's NO_NOTIFY flag */
	vq_disable_notify(&f->vq);
	assert_int_equal(get16(f->ring.used), VRING_USED_F_NO_NOTIFY);
	assert_false(vq_enable_notify(&f->vq));
	assert_int_equal(get16(f->ring.used), 0);
	/* an element published while kicks were off is reported */
	vq_disable_notify(&f->vq);
	ring_desc(&f->ring, 6, BUF, 4, VRING_DESC_F_WRITE, 0);
	ring_publish(&f->ring, 6);
	assert_true(vq_enable_notify(&f->vq));
	assert_int_equal(vq_pop(&f->vq, f->elem), 1);

	/* with it: flags untouched, avail_event = the next entry we pop */
	vq_set_event_idx(&f->vq, true);
	vq_disable_notify(&f->vq);
	assert_int_equal(get16(f->ring.used), 0);
	assert_false(vq_enable_notify(&f->vq));
	assert_int_equal(get16(f->ring.used + VQ_USED_BYTES(NUM)), 1);
	use_n(f, 2);
	assert_false(vq_enable_notify(&f->vq));
	assert_int_equal(get16(f->ring.used + VQ_USED_BYTES(NUM)), 3);
	/* a broken queue wants nothing and writes nothing */
	f->vq.broken = true;
	assert_false(vq_enable_notify(&f->vq));
}

static void test_setup_rejects_bad_size_and_misaligned_rings(void **state)
{
	struct fix *f = *state;
	struct vq q;
	uint8_t *d = gm_gpa_to_host(&f->gm, DESC, 1);
	uint8_t *a = gm_gpa_to_host(&f->gm, AVAIL, 1);
	uint8_t *u = gm_gpa_to_host(&f->gm, USED, 1);

	vq_init(&q, 0);
	assert_int_equal(vq_setup(&q, &f->gm, 6, d, a, u, 0, false, NULL),
			 -EINVAL);
	assert_int_equal(vq_setup(&q, &f->gm, 2048, d, a, u, 0, false, NULL),
			 -EINVAL);
	assert_int_equal(vq_setup(&q, &f->gm, 8, d + 8, a, u, 0, false, NULL),
			 -EINVAL);
	assert_int_equal(vq_setup(&q, &f->gm, 8, d, a + 1, u, 0, false, NULL),
			 -EINVAL);
	assert_int_equal(vq_setup(&q, &f->gm, 8, d, a, u + 2, 0, false, NULL),
			 -EINVAL);
	assert_false(q.ready);
}

/* ---- violations ----------------------------------------------------- */

static void test_head_index_past_ring_is_violation(void **state)
{
	struct fix *f = *state;

	ring_publish(&f->ring, NUM);
	expect_violation(f, "head 8 past the ring size 8");
}

static void test_next_index_past_ring_is_violation(void **state)
{
	struct fix *f = *state;

	ring_desc(&f->ring, 0, BUF, 4, VRING_DESC_F_NEXT, 9);
	ring_publish(&f->ring, 0);
	expect_violation(f, "next index 9 past the ring size");
}

static void test_descriptor_loop_is_violation(void **state)
{
	struct fix *f = *state;

	ring_desc(&f->ring, 0, BUF, 4, VRING_DESC_F_NEXT, 1);
	ring_desc(&f->ring, 1, BUF, 4, VRING_DESC_F_NEXT, 0);
	ring_publish(&f->ring, 0);
	expect_violation(f, "longer than the ring size 8 (loop)");
}

static void test_self_loop_is_violation(void **state)
{
	struct fix *f = *state;

	ring_desc(&f->ring, 3, BUF, 4, VRING_DESC_F_NEXT, 3);
	ring_publish(&f->ring, 3);
	expect_violation(f, "(loop)");
}

static void test_chain_using_every_descriptor_is_accepted(void **state)
{
	struct fix *f = *state;
	unsigned int i;

	for (i = 0; i < NUM; i++)
		ring_desc(&f->ring, i, BUF, 4,
			  i + 1 < NUM ? VRING_DESC_F_NEXT : 0, i + 1);
	ring_publish(&f->ring, 0);
	assert_int_equal(vq_pop(&f->vq, f->elem), 1);
	assert_int_equal(f->elem->out_num, NUM);
}

static void test_indirect_inside_indirect_is_violation(void **state)
{
	struct fix *f = *state;
	uint8_t *t = at(f, TABLE);

	table_desc(t, 0, TABLE + 0x100, 16, VRING_DESC_F_INDIRECT, 0);
	ring_desc(&f->ring, 0, TABLE, 16, VRING_DESC_F_INDIRECT, 0);
	ring_publish(&f->ring, 0);
	expect_violation(f, "indirect descriptor inside an indirect table");
}

static void test_indirect_len_not_multiple_of_16_is_violation(void **state)
{
	struct fix *f = *state;

	ring_desc(&f->ring, 0, TABLE, 24, VRING_DESC_F_INDIRECT, 0);
	ring_publish(&f->ring, 0);
	expect_violation(f, "not a non-zero multiple of 16");
}

static void test_indirect_len_zero_is_violation(void **state)
{
	struct fix *f = *state;

	ring_desc(&f->ring, 0, TABLE, 0, VRING_DESC_F_INDIRECT, 0);
	ring_publish(&f->ring, 0);
	expect_violation(f, "not a non-zero multiple of 16");
}

static void test_indirect_table_too_large_is_violation(void **state)
{
	struct fix *f = *state;

	ring_desc(&f->ring, 0, R0, 16 * (VQ_MAX_SIZE + 1),
		  VRING_DESC_F_INDIRECT, 0);
	ring_publish(&f->ring, 0);
	expect_violation(f, "indirect table of 1025 descriptors");
}

static void test_indirect_table_outside_ram_is_violation(void **state)
{
	struct fix *f = *state;

	ring_desc(&f->ring, 0, HOLE + 0x100, 32, VRING_DESC_F_INDIRECT, 0);
	ring_publish(&f->ring, 0);
	expect_violation(f, "indirect table 0x20100+32 not in guest memory");
}

static void test_indirect_next_past_table_is_violation(void **state)
{
	struct fix *f = *state;
	uint8_t *t = at(f, TABLE);

	table_desc(t, 0, BUF, 4, VRING_DESC_F_NEXT, 2);
	ring_desc(&f->ring, 0, TABLE, 32, VRING_DESC_F_INDIRECT, 0);
	ring_publish(&f->ring, 0);
	expect_violation(f, "indirect next index 2 past its table of 2");
}

static void test_indirect_loop_is_violation(void **state)
{
	struct fix *f = *state;
	uint8_t *t = at(f, TABLE);

	table_desc(t, 0, BUF, 4, VRING_DESC_F_NEXT, 1);
	table_desc(t, 1, BUF, 4, VRING_DESC_F_NEXT, 0);
	ring_desc(&f->ring, 0, TABLE, 32, VRING_DESC_F_INDIRECT, 0);
	ring_publish(&f->ring, 0);
	expect_violation(f, "indirect chain longer than its table of 2");
}

static void test_indirect_with_next_flag_is_violation(void **state)
{
	struct fix *f = *state;

	table_desc(at(f, TABLE), 0, BUF, 4, 0, 0);
	ring_desc(&f->ring, 0, TABLE, 16,
		  VRING_DESC_F_INDIRECT | VRING_DESC_F_NEXT, 1);
	ring_publish(&f->ring, 0);
	expect_violation(f, "indirect descriptor with NEXT set");
}

static void test_indirect_after_direct_is_violation(void **state)
{
	struct fix *f = *state;

	table_desc(at(f, TABLE), 0, BUF, 4, 0, 0);
	ring_desc(&f->ring, 0, BUF, 4, VRING_DESC_F_NEXT, 1);
	ring_desc(&f->ring, 1, TABLE, 16, VRING_DESC_F_INDIRECT, 0);
	ring_publish(&f->ring, 0);
	expect_violation(f, "indirect descriptor not at the chain head");
}

static void test_indirect_without_feature_is_violation(void **state)
{
	struct fix *f = *state;

	table_desc(at(f, TABLE), 0, BUF, 4, 0, 0);
	ring_desc(&f->ring, 0, TABLE, 16, VRING_DESC_F_INDIRECT, 0);
	ring_publish(&f->ring, 0);
	expect_violation(f, "RING_INDIRECT_DESC not negotiated");
}

static void test_address_plus_length_overflow_is_violation(void **state)
{
	struct fix *f = *state;

	ring_desc(&f->ring, 0, 0xfffffffffffffff0ull, 0x100, 0, 0);
	ring_publish(&f->ring, 0);
	expect_violation(f, "not in guest memory");
}

static void test_buffer_running_off_the_last_region_is_violation(void **state)
{
	struct fix *f = *state;

	/* Starts in R2, whose end is followed by nothing. */
	ring_desc(&f->ring, 0, R2 + 0xff00, 0x200, 0, 0);
	ring_publish(&f->ring, 0);
	expect_violation(f, "buffer 0x3ff00+512 not in guest memory");
}

static void test_buffer_running_into_a_hole_is_violation(void **state)
{
	struct fix *f = *state;

	ring_desc(&f->ring, 0, HOLE - 0x10, 0x20, 0, 0);
	ring_publish(&f->ring, 0);
	expect_violation(f, "not in guest memory");
}

static void test_address_in_hole_is_violation(void **state)
{
	struct fix *f = *state;

	ring_desc(&f->ring, 0, HOLE + 0x10, 0x20, VRING_DESC_F_WRITE, 0);
	ring_publish(&f->ring, 0);
	expect_violation(f, "buffer 0x20010+32 not in guest memory");
}

static void test_avail_index_jumping_past_ring_size_is_violation(void **state)
{
	struct fix *f = *state;

	ring_set_avail_idx(&f->ring, NUM + 1);
	expect_violation(f, "avail index 9 is 9 entries ahead of 0");
}

static void test_avail_index_behind_is_violation(void **state)
{
	struct fix *f = *state;

	/* "Behind" is 65535 ahead in 16-bit arithmetic. */
	f->vq.last_avail = 5;
	ring_set_avail_idx(&f->ring, 4);
	expect_violation(f, "65535 entries ahead");
}

static void test_writable_before_readable_is_violation(void **state)
{
	struct fix *f = *state;

	ring_desc(&f->ring, 0, BUF, 4, VRING_DESC_F_WRITE | VRING_DESC_F_NEXT,
		  1);
	ring_desc(&f->ring, 1, BUF, 4, 0, 0);
	ring_publish(&f->ring, 0);
	expect_violation(f, "readable descriptor after a writable one");
}

static void test_zero_length_descriptor_is_violation(void **state)
{
	struct fix *f = *state;

	ring_desc(&f->ring, 0, BUF, 0, 0, 0);
	ring_publish(&f->ring, 0);
	expect_violation(f, "zero length");
}

static void test_chain_needing_too_many_iovecs_is_violation(void **state)
{
	struct fix *f = *state;
	uint8_t *t = at(f, TABLE);
	unsigned int i;

	/* 600 entries, each crossing R0/R1: 1200 iovecs > VQ_MAX_IOV. */
	for (i = 0; i < 600; i++)
		table_desc(t, i, R1 - 4, 8, VRING_DESC_F_NEXT, i + 1);
	table_desc(t, 599, R1 - 4, 8, 0, 0);
	ring_desc(&f->ring, 0, TABLE, 600 * 16, VRING_DESC_F_INDIRECT, 0);
	ring_publish(&f->ring, 0);
	expect_violation(f, "more than 1024 host buffers");
}

static void test_needs_reset_status_stops_every_queue(void **state)
{
	struct fix *f = *state;

	ring_desc(&f->ring, 0, BUF, 4, 0, 0);
	ring_publish(&f->ring, 0);
	f->status |= VIRTIO_STATUS_NEEDS_RESET;
	assert_int_equal(vq_pop(&f->vq, f->elem), 0);
	f->status = 0;
	assert_int_equal(vq_pop(&f->vq, f->elem), 1);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_empty_ring_pops_nothing),
		T(test_readable_then_writable_chain_gives_two_iovecs),
		T(test_buffer_spanning_two_regions_gives_two_iovecs),
		T(test_indirect_table_is_walked),
		T(test_indirect_table_spanning_regions_is_copied),
		T(test_avail_index_wraps_at_65536),
		T(test_push_fills_used_ring_and_notify_honours_no_interrupt),
		T(test_event_idx_notify_follows_used_event),
		T(test_kicks_off_and_back_on),
		T(test_setup_rejects_bad_size_and_misaligned_rings),
		T(test_head_index_past_ring_is_violation),
		T(test_next_index_past_ring_is_violation),
		T(test_descriptor_loop_is_violation),
		T(test_self_loop_is_violation),
		T(test_chain_using_every_descriptor_is_accepted),
		T(test_indirect_inside_indirect_is_violation),
		T(test_indirect_len_not_multiple_of_16_is_violation),
		T(test_indirect_len_zero_is_violation),
		T(test_indirect_table_too_large_is_violation),
		T(test_indirect_table_outside_ram_is_violation),
		T(test_indirect_next_past_table_is_violation),
		T(test_indirect_loop_is_violation),
		T(test_indirect_with_next_flag_is_violation),
		T(test_indirect_after_direct_is_violation),
		cmocka_unit_test_setup_teardown(
			test_indirect_without_feature_is_violation,
			setup_no_indirect, teardown),
		T(test_address_plus_length_overflow_is_violation),
		T(test_buffer_running_off_the_last_region_is_violation),
		T(test_buffer_running_into_a_hole_is_violation),
		T(test_address_in_hole_is_violation),
		T(test_avail_index_jumping_past_ring_size_is_violation),
		T(test_avail_index_behind_is_violation),
		T(test_writable_before_readable_is_violation),
		T(test_zero_length_descriptor_is_violation),
		T(test_chain_needing_too_many_iovecs_is_violation),
		T(test_needs_reset_status_stops_every_queue),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
