// SPDX-License-Identifier: MIT
/*
 * A hostile frontend against the real worker: each case sends one class of
 * malformed vhost-user message or writes one class of malformed ring
 * content, then checks that the worker (1) reacted as its contract says
 * (hung up on bad framing, refused a bad value with a failure ack, stopped
 * a ring the guest corrupted), (2) logged a line saying what was wrong,
 * (3) is still alive and (4) serves the next frontend end to end.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/virtio_config.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/host/harness.h"

#define DRV_FEATURES                                                           \
	((1ull << GUEST_F_VERSION_1) | (1ull << GUEST_F_RING_INDIRECT_DESC))
#define HOLE_GPA (1ull << 30) /* between 4 MiB at 0 and 4 MiB at 4 GiB */

enum stage {
	S_CONNECTED, /* socket only, nothing sent */
	S_INIT,	     /* QEMU's init handshake done */
	S_MEM,	     /* + SET_FEATURES and the memory table */
	S_RING,	     /* + ring 0 (256 entries) up, DRIVER_OK */
};

struct hostile {
	struct guest_dev *d;
	struct guest_vq *q; /* ring 0 at S_RING */
};

static int setup(struct worker *w, struct hostile *h, enum stage st)
{
	struct vhost_client_opts o = h_opts();
	struct guest_dev *d = h->d;
	int r;

	if (st == S_CONNECTED)
		return vhost_client_connect(&d->vc, w->sock, H_TIMEOUT_MS);
	r = h_connect(d, w, &o);
	if (r || st == S_INIT)
		return r;
	r = h_layout_basic(d, GUEST_PAGE_4K);
	if (!r)
		r = guest_dev_start(d, DRV_FEATURES);
	if (r || st == S_MEM)
		return r;
	r = guest_dev_add_queue(d, 0, 256, &h->q);
	if (!r)
		r = guest_dev_driver_ok(d);
	return r;
}

/* The worker closed the connection (reads EOF) within the timeout. */
static int expect_hangup(struct guest_dev *d)
{
	struct pollfd pfd = { .fd = d->vc.fd, .events = POLLIN };
	char buf[512];

	for (;;) {
		ssize_t n;

		if (poll(&pfd, 1, H_TIMEOUT_MS) <= 0) {
			printf("# the worker kept the connection open\n");
			return 1;
		}
		n = recv(d->vc.fd, buf, sizeof(buf), 0);
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return 0;
		if (n < 0)
			return 1;
	}
}

/* After the attack: the worker serves a new, well-behaved frontend. */
static int next_frontend_works(struct worker *w)
{
	struct vhost_client_opts o = h_opts();
	struct guest_vq *q;
	H_DEV(d);

	CHECK(worker_alive(w));
	CHECK_OK(h_bring_up(&d, w, &o, &q));
	CHECK_OK(h_echo_alloc(&d, q, 256, false));
	CHECK_OK(h_echo_alloc(&d, q, 256, true));
	return 0;
}

typedef int attack_fn(struct hostile *h);

static int run_hostile(struct worker *w, enum stage st, attack_fn *attack,
		       const char *const *needles)
{
	struct hostile h = { 0 };
	int r;
	H_DEV(d);

	h.d = &d;
	CHECK_OK(setup(w, &h, st));
	worker_log_mark(w);
	r = attack(&h);
	if (r)
		return r;
	CHECK(worker_log_waitv(w, H_TIMEOUT_MS, needles));
	guest_dev_release(&d);
	guest_dev_init(&d);
	return next_frontend_works(w);
}

/* The expected line is a warning naming what was wrong (the needles). */
#define HOSTILE(name, stage, ...)                                              \
	static int name(struct worker *w)                                      \
	{                                                                      \
		static const char *const needles[] = { "warning: ",            \
						       __VA_ARGS__, NULL };    \
		return run_hostile(w, stage, attack_##name, needles);          \
	}

static int send_hdr(struct guest_dev *d, uint32_t req, uint32_t flags,
		    uint32_t size, const void *payload, size_t len,
		    const int *fds, unsigned int nfds)
{
	struct vhost_user_header hdr = { req, flags, size };

	return vhost_client_send_raw(&d->vc, &hdr, payload, len, fds, nfds);
}

/* ---- framing: the worker must hang up ---- */

static int attack_bad_size_short_payload(struct hostile *h)
{
	uint32_t half = 256;

	/* SET_VRING_NUM carries 8 bytes; send 4 */
	CHECK_OK(send_hdr(h->d, VHOST_USER_SET_VRING_NUM, VHOST_USER_VERSION, 4,
			  &half, 4, NULL, 0));
	return expect_hangup(h->d);
}
HOSTILE(bad_size_short_payload, S_INIT, "SET_VRING_NUM", "4 bytes",
	"expected 8")

static int attack_bad_size_huge(struct hostile *h)
{
	uint8_t junk[64] = { 0 };

	/* a header announcing 1 MiB of payload */
	CHECK_OK(send_hdr(h->d, VHOST_USER_SET_MEM_TABLE, VHOST_USER_VERSION,
			  1u << 20, junk, sizeof(junk), NULL, 0));
	return expect_hangup(h->d);
}
HOSTILE(bad_size_huge, S_INIT, "SET_MEM_TABLE", "1048576")

static int attack_bad_size_mem_table_count(struct hostile *h)
{
	struct vhost_user_memory mem = { .nregions = 2 };
	int fds[2];

	CHECK(guest_ram_add_region(&h->d->ram, 0, 1 << 20, GUEST_PAGE_4K) == 0);
	CHECK(guest_ram_add_region(&h->d->ram, 1 << 20, 1 << 20,
				   GUEST_PAGE_4K) == 1);
	vhost_client_region(&h->d->ram, 0, &mem.regions[0]);
	vhost_client_region(&h->d->ram, 1, &mem.regions[1]);
	fds[0] = h->d->ram.blocks[0].fd;
	fds[1] = h->d->ram.blocks[1].fd;
	/* two regions announced, the payload size of one */
	CHECK_OK(vhost_client_send(&h->d->vc, VHOST_USER_SET_MEM_TABLE, 0, &mem,
				   8 + 32, fds, 2));
	return expect_hangup(h->d);
}
HOSTILE(bad_size_mem_table_count, S_INIT, "SET_MEM_TABLE", "2 regions")

static int attack_wrong_fd_count_kick_without_fd(struct hostile *h)
{
	uint64_t idx = 0; /* no NOFD bit, but no fd either */

	CHECK_OK(vhost_client_send(&h->d->vc, VHOST_USER_SET_VRING_KICK, 0,
				   &idx, sizeof(idx), NULL, 0));
	return expect_hangup(h->d);
}
HOSTILE(wrong_fd_count_kick_without_fd, S_MEM, "SET_VRING_KICK", "0 fds",
	"expected 1")

static int attack_wrong_fd_count_extra_fd(struct hostile *h)
{
	int fd = h->d->ram.blocks[0].fd;

	CHECK_OK(vhost_client_send(&h->d->vc, VHOST_USER_GET_FEATURES, 0, NULL,
				   0, &fd, 1));
	return expect_hangup(h->d);
}
HOSTILE(wrong_fd_count_extra_fd, S_MEM, "GET_FEATURES", "1 fds", "expected 0")

static int attack_wrong_fd_count_mem_table(struct hostile *h)
{
	struct vhost_user_memory mem = { .nregions = 2 };
	int fd;

	CHECK(guest_ram_add_region(&h->d->ram, 0, 1 << 20, GUEST_PAGE_4K) == 0);
	CHECK(guest_ram_add_region(&h->d->ram, 1 << 20, 1 << 20,
				   GUEST_PAGE_4K) == 1);
	vhost_client_region(&h->d->ram, 0, &mem.regions[0]);
	vhost_client_region(&h->d->ram, 1, &mem.regions[1]);
	fd = h->d->ram.blocks[0].fd;
	CHECK_OK(vhost_client_send(&h->d->vc, VHOST_USER_SET_MEM_TABLE, 0, &mem,
				   8 + 64, &fd, 1));
	return expect_hangup(h->d);
}
HOSTILE(wrong_fd_count_mem_table, S_INIT, "SET_MEM_TABLE", "1 fds",
	"expected 2")

static int attack_unknown_request(struct hostile *h)
{
	CHECK_OK(vhost_client_send(&h->d->vc, 99, 0, NULL, 0, NULL, 0));
	return expect_hangup(h->d);
}
HOSTILE(unknown_request, S_INIT, "request 99")

static int attack_unsupported_request(struct hostile *h)
{
	uint64_t v = 0;

	CHECK_OK(vhost_client_send(&h->d->vc, VHOST_USER_SET_LOG_BASE, 0, &v,
				   sizeof(v), NULL, 0));
	return expect_hangup(h->d);
}
HOSTILE(unsupported_request, S_INIT, "SET_LOG_BASE", "unsupported")

static int attack_bad_version_flags(struct hostile *h)
{
	/* version 2 in the low bits */
	CHECK_OK(send_hdr(h->d, VHOST_USER_GET_FEATURES, 0x2, 0, NULL, 0, NULL,
			  0));
	return expect_hangup(h->d);
}
HOSTILE(bad_version_flags, S_INIT, "GET_FEATURES", "version 2")

static int attack_reply_flag_on_request(struct hostile *h)
{
	CHECK_OK(send_hdr(h->d, VHOST_USER_GET_FEATURES,
			  VHOST_USER_VERSION | VHOST_USER_REPLY_MASK, 0, NULL,
			  0, NULL, 0));
	return expect_hangup(h->d);
}
HOSTILE(reply_flag_on_request, S_INIT, "GET_FEATURES", "reply")

static int attack_too_many_regions_set_mem_table(struct hostile *h)
{
	uint8_t payload[8 + 9 * 32] = { 0 };
	uint32_t nine = 9;

	memcpy(payload, &nine, sizeof(nine));
	CHECK_OK(vhost_client_send(&h->d->vc, VHOST_USER_SET_MEM_TABLE, 0,
				   payload, sizeof(payload), NULL, 0));
	return expect_hangup(h->d);
}
HOSTILE(too_many_regions_set_mem_table, S_INIT, "SET_MEM_TABLE", "9 regions")

/* ---- well framed, bad values: refused with a failure ack ---- */

/* Sends with NEED_REPLY; the worker must answer non-zero and go on. */
static int expect_nack(struct guest_dev *d, uint32_t req, const void *p,
		       uint32_t size, const int *fds, unsigned int nfds)
{
	uint64_t status;

	CHECK_OK(vhost_client_send(&d->vc, req, VHOST_USER_NEED_REPLY, p, size,
				   fds, nfds));
	CHECK_OK(vhost_client_recv(&d->vc, req, &status, sizeof(status)));
	CHECK(status != 0);
	/* the same connection still answers */
	{
		uint64_t f;

		CHECK_OK(vhost_client_send(&d->vc, VHOST_USER_GET_FEATURES, 0,
					   NULL, 0, NULL, 0));
		CHECK_OK(vhost_client_recv(&d->vc, VHOST_USER_GET_FEATURES, &f,
					   sizeof(f)));
	}
	return 0;
}

static int add_reg(struct hostile *h, uint64_t gpa, uint64_t size,
		   uint64_t uva_delta, uint64_t offset, unsigned int block)
{
	struct vhost_user_mem_reg_single m = { 0 };
	int fd = h->d->ram.blocks[block].fd;

	m.region.guest_phys_addr = gpa;
	m.region.memory_size = size;
	m.region.userspace_addr =
		(uint64_t)(uintptr_t)h->d->ram.blocks[block].host + uva_delta;
	m.region.mmap_offset = offset;
	return expect_nack(h->d, VHOST_USER_ADD_MEM_REG, &m, sizeof(m), &fd, 1);
}

static int attack_region_overlapping(struct hostile *h)
{
	int b = guest_ram_add_block(&h->d->ram, 2 << 20, GUEST_PAGE_4K);

	CHECK(b >= 0);
	/* GPA 1 MiB.. overlaps the 4 MiB region at GPA 0 */
	return add_reg(h, 1 << 20, 2 << 20, 0, 0, (unsigned int)b);
}
HOSTILE(region_overlapping, S_MEM, "ADD_MEM_REG", "overlaps")

static int attack_region_overflowing(struct hostile *h)
{
	int b = guest_ram_add_block(&h->d->ram, 2 << 20, GUEST_PAGE_4K);

	CHECK(b >= 0);
	return add_reg(h, UINT64_MAX - 4095, 2 << 20, 0, 0, (unsigned int)b);
}
HOSTILE(region_overflowing, S_MEM, "ADD_MEM_REG", "overflow")

static int attack_region_past_fd_end(struct hostile *h)
{
	int b = guest_ram_add_block(&h->d->ram, 2 << 20, GUEST_PAGE_4K);

	CHECK(b >= 0);
	/* offset 1 MiB + 2 MiB > the 2 MiB memfd */
	return add_reg(h, 64ull << 30, 2 << 20, 0, 1 << 20, (unsigned int)b);
}
HOSTILE(region_past_fd_end, S_MEM, "ADD_MEM_REG", "past the end")

static int attack_too_many_regions_add_mem_reg(struct hostile *h)
{
	unsigned int have = h->d->ram.nslots;
	uint64_t max = h->d->vc.max_mem_slots;

	CHECK(max >= have && max < 64);
	for (uint64_t i = have; i < max; i++) {
		int s = guest_ram_add_region(&h->d->ram, (64ull + i) << 30,
					     1 << 20, GUEST_PAGE_4K);

		CHECK(s >= 0);
		CHECK_OK(vhost_client_add_mem_reg(&h->d->vc, &h->d->ram,
						  (unsigned int)s));
	}
	CHECK(guest_ram_add_block(&h->d->ram, 1 << 20, GUEST_PAGE_4K) >= 0);
	return add_reg(h, 200ull << 30, 1 << 20, 0, 0, h->d->ram.nblocks - 1);
}
HOSTILE(too_many_regions_add_mem_reg, S_MEM, "ADD_MEM_REG", "free", "slot")

static int attack_ring_index_out_of_range(struct hostile *h)
{
	struct vhost_user_vring_state st = { .index = 256, .num = 64 };

	return expect_nack(h->d, VHOST_USER_SET_VRING_NUM, &st, sizeof(st),
			   NULL, 0);
}
HOSTILE(ring_index_out_of_range, S_MEM, "SET_VRING_NUM", "index 256")

static int attack_ring_index_bits_in_kick(struct hostile *h)
{
	/* bits 0-7 index, bit 8 NOFD; bit 9 is reserved */
	uint64_t v = (1ull << 9) | 1;
	int fd = h->d->ram.blocks[0].fd;

	return expect_nack(h->d, VHOST_USER_SET_VRING_CALL, &v, sizeof(v), &fd,
			   1);
}
HOSTILE(ring_index_bits_in_kick, S_MEM, "SET_VRING_CALL", "0x201", "reserved")

static int ring_num(struct hostile *h, uint32_t num)
{
	struct vhost_user_vring_state st = { .index = 0, .num = num };

	return expect_nack(h->d, VHOST_USER_SET_VRING_NUM, &st, sizeof(st),
			   NULL, 0);
}

static int attack_ring_num_not_power_of_2(struct hostile *h)
{
	return ring_num(h, 100);
}
HOSTILE(ring_num_not_power_of_2, S_MEM, "SET_VRING_NUM", "size 100",
	"power of 2")

static int attack_ring_num_too_big(struct hostile *h)
{
	return ring_num(h, 32768);
}
HOSTILE(ring_num_too_big, S_MEM, "SET_VRING_NUM", "size 32768")

static int attack_ring_num_zero(struct hostile *h)
{
	return ring_num(h, 0);
}
HOSTILE(ring_num_zero, S_MEM, "SET_VRING_NUM", "size 0 ")

static int attack_ring_addr_not_in_guest_memory(struct hostile *h)
{
	struct vhost_user_vring_addr a = { .index = 0 };
	struct guest_dev *d = h->d;

	CHECK_OK(vhost_client_send_state(&d->vc, VHOST_USER_SET_VRING_NUM, 0,
					 256));
	/* desc in our address space but outside every region */
	a.desc_user_addr = (uint64_t)(uintptr_t)&a;
	a.avail_user_addr = (uint64_t)(uintptr_t)guest_slot_host(&d->ram, 0);
	a.used_user_addr = a.avail_user_addr + 4096;
	return expect_nack(d, VHOST_USER_SET_VRING_ADDR, &a, sizeof(a), NULL,
			   0);
}
HOSTILE(ring_addr_not_in_guest_memory, S_MEM, "SET_VRING_ADDR",
	"not in guest memory")

static int attack_ring_addr_straddles_region_end(struct hostile *h)
{
	struct vhost_user_vring_addr a = { .index = 0 };
	struct guest_dev *d = h->d;
	uint64_t end = (uint64_t)(uintptr_t)guest_slot_host(&d->ram, 0) +
		       d->ram.slots[0].size;

	CHECK_OK(vhost_client_send_state(&d->vc, VHOST_USER_SET_VRING_NUM, 0,
					 256));
	a.desc_user_addr = end - 2048; /* 4 KiB table, half outside */
	a.avail_user_addr = end - 8192;
	a.used_user_addr = end - 16384;
	return expect_nack(d, VHOST_USER_SET_VRING_ADDR, &a, sizeof(a), NULL,
			   0);
}
HOSTILE(ring_addr_straddles_region_end, S_MEM, "SET_VRING_ADDR",
	"not in guest memory")

/* ---- ring contents: the queue stops, NEEDS_RESET, connection stays ---- */

/* Kicks ring 0 and checks the device flagged NEEDS_RESET. */
static int kick_expect_broken(struct hostile *h)
{
	uint8_t status = 0;

	guest_vq_kick(h->q);
	for (int i = 0; i < 100 && !(status & VIRTIO_CONFIG_S_NEEDS_RESET);
	     i++) {
		struct timespec ts = { 0, 10000000 };

		CHECK_OK(vhost_client_get_status(&h->d->vc, &status));
		if (!(status & VIRTIO_CONFIG_S_NEEDS_RESET))
			nanosleep(&ts, NULL);
	}
	CHECK(status & VIRTIO_CONFIG_S_NEEDS_RESET);
	CHECK(guest_vq_used_pending(h->q) == 0);
	return 0;
}

static uint64_t buf_gpa(struct hostile *h)
{
	uint64_t gpa = 0;

	guest_ram_alloc_in(&h->d->ram, 1, 4096, 64, &gpa);
	return gpa;
}

static void set_desc(struct guest_vq *q, uint16_t i, uint64_t addr,
		     uint32_t len, uint16_t flags, uint16_t next)
{
	q->desc[i] = (struct vring_desc){ addr, len, flags, next };
}

static int attack_descriptor_head_past_ring(struct hostile *h)
{
	guest_vq_publish_raw(h->q, 256 + 7, 1);
	return kick_expect_broken(h);
}
HOSTILE(descriptor_head_past_ring, S_RING, "virtqueue 0", "263", "ring size")

static int attack_descriptor_next_past_ring(struct hostile *h)
{
	set_desc(h->q, 0, buf_gpa(h), 64, VRING_DESC_F_NEXT, 300);
	guest_vq_publish_raw(h->q, 0, 1);
	return kick_expect_broken(h);
}
HOSTILE(descriptor_next_past_ring, S_RING, "virtqueue 0", "300", "ring size")

static int attack_looping_chain(struct hostile *h)
{
	uint64_t b = buf_gpa(h);

	set_desc(h->q, 0, b, 64, VRING_DESC_F_NEXT, 1);
	set_desc(h->q, 1, b + 64, 64, VRING_DESC_F_NEXT, 2);
	set_desc(h->q, 2, b + 128, 64, VRING_DESC_F_NEXT, 0);
	guest_vq_publish_raw(h->q, 0, 1);
	return kick_expect_broken(h);
}
HOSTILE(looping_chain, S_RING, "virtqueue 0", "loop")

static int attack_indirect_in_indirect(struct hostile *h)
{
	struct guest_vq *q = h->q;
	uint64_t b = buf_gpa(h);

	q->indirect[0] = (struct vring_desc){ b, 64, VRING_DESC_F_NEXT, 1 };
	q->indirect[1] = (struct vring_desc){ q->indirect_gpa + 256, 32,
					      VRING_DESC_F_INDIRECT, 0 };
	set_desc(q, 0, q->indirect_gpa, 32, VRING_DESC_F_INDIRECT, 0);
	guest_vq_publish_raw(q, 0, 1);
	return kick_expect_broken(h);
}
HOSTILE(indirect_in_indirect, S_RING, "virtqueue 0", "indirect",
	"inside an indirect")

static int attack_indirect_table_loop(struct hostile *h)
{
	struct guest_vq *q = h->q;
	uint64_t b = buf_gpa(h);

	q->indirect[0] = (struct vring_desc){ b, 64, VRING_DESC_F_NEXT, 1 };
	q->indirect[1] = (struct vring_desc){ b, 64, VRING_DESC_F_NEXT, 0 };
	set_desc(q, 0, q->indirect_gpa, 32, VRING_DESC_F_INDIRECT, 0);
	guest_vq_publish_raw(q, 0, 1);
	return kick_expect_broken(h);
}
HOSTILE(indirect_table_loop, S_RING, "virtqueue 0", "loop")

static int attack_avail_idx_jump(struct hostile *h)
{
	set_desc(h->q, 0, buf_gpa(h), 64, 0, 0);
	guest_vq_publish_raw(h->q, 0, 256 + 1); /* 257 new entries in 256 */
	return kick_expect_broken(h);
}
HOSTILE(avail_idx_jump, S_RING, "virtqueue 0", "avail index", "ahead")

static int attack_buffer_in_hole(struct hostile *h)
{
	set_desc(h->q, 0, HOLE_GPA, 64, 0, 0);
	guest_vq_publish_raw(h->q, 0, 1);
	return kick_expect_broken(h);
}
HOSTILE(buffer_in_hole, S_RING, "virtqueue 0", "0x40000000",
	"not in guest memory")

static int attack_buffer_runs_into_hole(struct hostile *h)
{
	uint64_t end = h->d->ram.slots[0].gpa + h->d->ram.slots[0].size;

	set_desc(h->q, 0, end - 16, 4096, VRING_DESC_F_WRITE, 0);
	guest_vq_publish_raw(h->q, 0, 1);
	return kick_expect_broken(h);
}
HOSTILE(buffer_runs_into_hole, S_RING, "virtqueue 0", "not in guest memory")

static int attack_zero_length_descriptor(struct hostile *h)
{
	set_desc(h->q, 0, buf_gpa(h), 0, 0, 0);
	guest_vq_publish_raw(h->q, 0, 1);
	return kick_expect_broken(h);
}
HOSTILE(zero_length_descriptor, S_RING, "virtqueue 0", "zero length")

static int attack_readable_after_writable(struct hostile *h)
{
	uint64_t b = buf_gpa(h);

	set_desc(h->q, 0, b, 64, VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 1);
	set_desc(h->q, 1, b + 64, 64, 0, 0);
	guest_vq_publish_raw(h->q, 0, 1);
	return kick_expect_broken(h);
}
HOSTILE(readable_after_writable, S_RING, "virtqueue 0", "readable", "writable")

/* Sends with NEED_REPLY; 1 if refused, 0 if accepted, -errno. */
static int acked(struct guest_dev *d, uint32_t req, const void *p,
		 uint32_t size, const int *fds, unsigned int nfds)
{
	uint64_t status;
	int r = vhost_client_send(&d->vc, req, VHOST_USER_NEED_REPLY, p, size,
				  fds, nfds);

	if (!r)
		r = vhost_client_recv(&d->vc, req, &status, sizeof(status));
	return r ? r : status != 0;
}

/*
 * Ring addresses may come before the memory table (the worker checks them
 * when the ring can start); addresses the table then does not cover must
 * keep the ring from starting.
 */
static int attack_ring_addr_before_mem_table(struct hostile *h)
{
	struct vhost_user_vring_addr a = { .index = 0 };
	struct vhost_user_vring_state en = { .index = 0, .num = 1 };
	struct guest_dev *d = h->d;
	uint64_t base = 0x7f0000000000ull, idx = 0;
	int refused = 0, kick, r;

	CHECK_OK(vhost_client_send_state(&d->vc, VHOST_USER_SET_VRING_NUM, 0,
					 64));
	a.desc_user_addr = base;
	a.avail_user_addr = base + 1024;
	a.used_user_addr = base + 2048;
	r = acked(d, VHOST_USER_SET_VRING_ADDR, &a, sizeof(a), NULL, 0);
	CHECK(r >= 0);
	refused += r;
	CHECK_OK(h_layout_basic(d, GUEST_PAGE_4K));
	CHECK_OK(vhost_client_set_features(&d->vc, DRV_FEATURES));
	r = vhost_client_set_mem_table(&d->vc, &d->ram);
	CHECK(r == 0 || r == -EREMOTEIO);
	refused += r == -EREMOTEIO;
	kick = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	CHECK(kick >= 0);
	r = acked(d, VHOST_USER_SET_VRING_KICK, &idx, sizeof(idx), &kick, 1);
	close(kick);
	CHECK(r >= 0);
	refused += r;
	r = acked(d, VHOST_USER_SET_VRING_ENABLE, &en, sizeof(en), NULL, 0);
	CHECK(r >= 0);
	refused += r;
	CHECK(refused >= 1);
	return 0;
}
HOSTILE(ring_addr_before_mem_table, S_INIT, "queue 0", "0x7f0000000000",
	"not in guest memory")

/* A kick "eventfd" that is a memfd: nothing to wait on. */
static int attack_kick_fd_not_pollable(struct hostile *h)
{
	uint64_t idx = 0;

	CHECK_OK(vhost_client_send_state(&h->d->vc, VHOST_USER_SET_VRING_NUM, 0,
					 64));
	return expect_nack(h->d, VHOST_USER_SET_VRING_KICK, &idx, sizeof(idx),
			   &h->d->ram.blocks[0].fd, 1);
}
HOSTILE(kick_fd_not_pollable, S_MEM, "SET_VRING_KICK", "kick fd")

/* Half a header, then the frontend vanishes. */
static int attack_truncated_header_then_hangup(struct hostile *h)
{
	static const uint8_t half[6] = { VHOST_USER_GET_FEATURES };

	CHECK(send(h->d->vc.fd, half, sizeof(half), MSG_NOSIGNAL) == 6);
	vhost_client_close(&h->d->vc);
	return 0;
}
static int truncated_header_then_hangup(struct worker *w)
{
	static const char *const needles[] = { "disconnected", NULL };

	return run_hostile(w, S_INIT, attack_truncated_header_then_hangup,
			   needles);
}

/*
 * After a ring violation the device wants a reset (NEEDS_RESET stops
 * every ring); the driver resets it and the same connection works again.
 */
static int needs_reset_then_reset_recovers(struct worker *w)
{
	struct vhost_client_opts o = h_opts();
	struct hostile h = { 0 };
	uint8_t status;
	H_DEV(d);

	/* the SET_MEM_TABLE path: the whole table again after the reset */
	o.protocol_features &=
		~(1ull << VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS);
	h.d = &d;
	CHECK_OK(h_bring_up(&d, w, &o, &h.q));
	set_desc(h.q, 0, HOLE_GPA, 64, 0, 0);
	guest_vq_publish_raw(h.q, 0, 1);
	CHECK(kick_expect_broken(&h) == 0);

	CHECK_OK(guest_dev_stop(&d));
	CHECK_OK(vhost_client_get_status(&d.vc, &status));
	CHECK(status == 0);
	guest_vq_reset(h.q);
	CHECK_OK(vhost_client_set_features(&d.vc, DRV_FEATURES));
	CHECK_OK(vhost_client_set_mem_table(&d.vc, &d.ram));
	CHECK_OK(vhost_client_start_vring(&d.vc, h.q, 0));
	CHECK_OK(guest_dev_driver_ok(&d));
	CHECK_OK(h_echo_alloc(&d, h.q, 512, false));
	return 0;
}

/*
 * The frontend shrinks the (unsealed) memfd behind the ring's region while
 * the ring runs, then kicks: the worker's next access to the ring faults.
 * It must survive (SIGBUS handler), drop this frontend with a line saying
 * why, and serve the next one.
 */
static int attack_memory_shrunk_under_live_ring(struct hostile *h)
{
	const struct guest_slot *slot = &h->d->ram.slots[0];
	int fd = h->d->ram.blocks[slot->block].fd;
	struct stat st;

	CHECK(fstat(fd, &st) == 0);
	CHECK(fcntl(fd, F_GET_SEALS) < 0 ||
	      !(fcntl(fd, F_GET_SEALS) & F_SEAL_SHRINK));
	CHECK(ftruncate(fd, 0) == 0);
	/* The eventfd itself: guest_vq_kick() reads the (gone) ring. */
	CHECK(eventfd_write(h->q->kick_fd, 1) == 0);
	CHECK(expect_hangup(h->d) == 0);
	/* Our own mapping works again (new zero pages) for the cleanup. */
	CHECK(ftruncate(fd, st.st_size) == 0);
	return 0;
}
HOSTILE(memory_shrunk_under_live_ring, S_RING, "vanished",
	"shrank a region's file", "dropping the connection")

/*
 * The frontend sends requests and never reads the replies: once the socket
 * buffers are full the worker's reply cannot be sent; it must give up on
 * this frontend (send timeout) instead of blocking in send() for ever.
 */
static int attack_replies_never_read(struct hostile *h)
{
	struct vhost_user_header hdr = { VHOST_USER_GET_FEATURES,
					 VHOST_USER_VERSION, 0 };
	struct pollfd pfd = { .fd = h->d->vc.fd, .events = POLLOUT };
	unsigned int sent = 0;

	CHECK(fcntl(h->d->vc.fd, F_SETFL, O_NONBLOCK) == 0);
	/* Until the worker has stopped reading for a second: it is stuck
	 * sending a reply into our full receive buffer. */
	for (;;) {
		ssize_t n = send(h->d->vc.fd, &hdr, sizeof(hdr), MSG_NOSIGNAL);

		if (n < 0 && errno == EAGAIN) {
			int r = poll(&pfd, 1, 1000);

			CHECK(r >= 0);
			if (r == 0)
				break;
			continue;
		}
		CHECK(n == (ssize_t)sizeof(hdr));
		CHECK(++sent < 10000000);
	}
	printf("# %u requests sent before the worker stopped reading\n", sent);
	/* Its send timeout is 5 s: it hangs up within that; our socket
	 * reads EOF once we drain the replies we left unread. */
	sleep(7);
	pfd.events = POLLIN;
	for (int i = 0; i < 1000; i++) {
		char buf[65536];
		ssize_t n;

		if (poll(&pfd, 1, 100) <= 0)
			break;
		n = recv(h->d->vc.fd, buf, sizeof(buf), 0);
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return 0;
	}
	printf("# the worker kept the connection\n");
	return 1;
}
HOSTILE(replies_never_read, S_INIT, "replying to the frontend")

/* Guest RAM never reaches a core file: the worker set RLIMIT_CORE to 0. */
static int worker_writes_no_core(struct worker *w)
{
	char path[64], line[256];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/limits", (int)w->pid);
	f = fopen(path, "re");
	CHECK(f != NULL);
	while (fgets(line, sizeof(line), f)) {
		unsigned long soft, hard;

		if (sscanf(line, "Max core file size %lu %lu", &soft, &hard) !=
		    2)
			continue;
		printf("# %s", line);
		found = soft == 0 && hard == 0;
	}
	fclose(f);
	CHECK(found);
	return 0;
}

static const struct h_case cases[] = {
	H_CASE(bad_size_short_payload),
	H_CASE(bad_size_huge),
	H_CASE(bad_size_mem_table_count),
	H_CASE(wrong_fd_count_kick_without_fd),
	H_CASE(wrong_fd_count_extra_fd),
	H_CASE(wrong_fd_count_mem_table),
	H_CASE(unknown_request),
	H_CASE(unsupported_request),
	H_CASE(bad_version_flags),
	H_CASE(reply_flag_on_request),
	H_CASE(too_many_regions_set_mem_table),
	H_CASE(region_overlapping),
	H_CASE(region_overflowing),
	H_CASE(region_past_fd_end),
	H_CASE(too_many_regions_add_mem_reg),
	H_CASE(ring_index_out_of_range),
	H_CASE(ring_index_bits_in_kick),
	H_CASE(ring_num_not_power_of_2),
	H_CASE(ring_num_too_big),
	H_CASE(ring_num_zero),
	H_CASE(ring_addr_not_in_guest_memory),
	H_CASE(ring_addr_straddles_region_end),
	H_CASE(descriptor_head_past_ring),
	H_CASE(descriptor_next_past_ring),
	H_CASE(looping_chain),
	H_CASE(indirect_in_indirect),
	H_CASE(indirect_table_loop),
	H_CASE(avail_idx_jump),
	H_CASE(buffer_in_hole),
	H_CASE(buffer_runs_into_hole),
	H_CASE(zero_length_descriptor),
	H_CASE(readable_after_writable),
	H_CASE(ring_addr_before_mem_table),
	H_CASE(kick_fd_not_pollable),
	H_CASE(truncated_header_then_hangup),
	H_CASE(needs_reset_then_reset_recovers),
	H_CASE(memory_shrunk_under_live_ring),
	H_CASE(replies_never_read),
	H_CASE(worker_writes_no_core),
};

int main(int argc, char **argv)
{
	return h_run(argc, argv, cases, ARRAY_SIZE(cases));
}
