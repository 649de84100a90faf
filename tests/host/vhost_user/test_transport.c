// SPDX-License-Identifier: MIT
/*
 * Host tests of the worker's vhost-user transport: the real worker process
 * with its echo test device, driven by the guest simulator as QEMU and a
 * virtio driver would drive it. One fresh worker per case.
 */
#include <errno.h>
#include <linux/virtio_config.h>
#include <stdlib.h>
#include <time.h>

#include "tests/host/harness.h"

#define DRV_FEATURES                                                           \
	((1ull << GUEST_F_VERSION_1) | (1ull << GUEST_F_RING_INDIRECT_DESC))

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static int handshake_negotiates_features(struct worker *w)
{
	struct vhost_client_opts o = h_opts();
	uint8_t status;
	H_DEV(d);

	CHECK_OK(h_connect(&d, w, &o));
	printf("# features 0x%llx protocol 0x%llx queues %llu slots %llu\n",
	       (unsigned long long)d.vc.device_features,
	       (unsigned long long)d.vc.device_protocol,
	       (unsigned long long)d.vc.queue_num,
	       (unsigned long long)d.vc.max_mem_slots);
	CHECK(d.vc.device_features & (1ull << GUEST_F_VERSION_1));
	CHECK(d.vc.device_features & (1ull << GUEST_F_RING_INDIRECT_DESC));
	CHECK(d.vc.device_features & (1ull << VHOST_USER_F_PROTOCOL_FEATURES));
	CHECK(d.vc.device_features & (1ull << GUEST_F_RING_EVENT_IDX));
	/* never offered: PACKED (34) */
	CHECK(!(d.vc.device_features & (1ull << 34)));
	CHECK(d.vc.protocol_features == VHOST_CLIENT_PROTOCOL_FEATURES);
	CHECK(d.vc.queue_num == 256);
	CHECK(d.vc.max_mem_slots >= 2);
	CHECK(!memcmp(d.vc.config, "rdmagate-echo", 13));

	/* SET_FEATURES and FEATURES_OK, as QEMU does with STATUS */
	CHECK_OK(vhost_client_set_features(&d.vc, DRV_FEATURES));
	CHECK(d.vc.features ==
	      (DRV_FEATURES | (1ull << VHOST_USER_F_PROTOCOL_FEATURES)));
	CHECK_OK(vhost_client_get_status(&d.vc, &status));
	CHECK(status & VIRTIO_CONFIG_S_FEATURES_OK);
	/* a partial config read at an offset */
	{
		uint8_t part[4];

		CHECK_OK(vhost_client_get_config(&d.vc, 9, 4, part));
		CHECK(!memcmp(part, "echo", 4));
	}
	return 0;
}

/* Without REPLY_ACK, CONFIGURE_MEM_SLOTS, STATUS: the QEMU 2.x subset. */
static int protocol_subset_is_respected(struct worker *w)
{
	struct vhost_client_opts o = h_opts();
	struct guest_vq *q;
	H_DEV(d);

	o.protocol_features = (1ull << VHOST_USER_PROTOCOL_F_MQ) |
			      (1ull << VHOST_USER_PROTOCOL_F_CONFIG);
	CHECK_OK(h_bring_up(&d, w, &o, &q));
	CHECK(d.vc.protocol_features == o.protocol_features);
	CHECK(d.vc.max_mem_slots == 0);
	CHECK_OK(h_echo_alloc(&d, q, 64, false));
	CHECK_OK(h_echo_alloc(&d, q, 4096, true));
	return 0;
}

/*
 * Several memfds like QEMU's RAM blocks: two adjacent 2 MiB regions at
 * GPA 0, a hole, then one 4 MiB block mapped as two slots at 1 GiB and
 * 4 GiB (non-zero mmap_offset), like pc.ram around the PCI hole.
 */
static int layout_several(struct guest_dev *d, uint64_t page)
{
	int b;

	if (guest_ram_add_region(&d->ram, 0, 2 << 20, page) != 0)
		return -EIO;
	if (guest_ram_add_region(&d->ram, 2 << 20, 2 << 20, page) != 1)
		return -EIO;
	b = guest_ram_add_block(&d->ram, 4 << 20, page);
	if (b < 0)
		return b;
	if (guest_ram_add_slot(&d->ram, (unsigned int)b, 0, 1ull << 30,
			       2 << 20) != 2)
		return -EIO;
	if (guest_ram_add_slot(&d->ram, (unsigned int)b, 2 << 20, 4ull << 30,
			       2 << 20) != 3)
		return -EIO;
	return 0;
}

static int echo_across_layout(struct guest_dev *d, struct guest_vq *q)
{
	uint64_t lo, hi, span_out;

	/* split block: low slot to high slot and back */
	CHECK_OK(guest_ram_alloc_in(&d->ram, 2, 65536, 64, &lo));
	CHECK_OK(guest_ram_alloc_in(&d->ram, 3, 65536, 64, &hi));
	CHECK_OK(h_echo(d, q, lo, hi, 65536, false));
	CHECK_OK(h_echo(d, q, hi, lo, 65536, true));
	/* one buffer straddling the two adjacent memfds, each way */
	CHECK_OK(guest_ram_alloc_spanning(&d->ram, 0, 3000, 8192, &span_out));
	CHECK_OK(h_echo(d, q, span_out, lo, 8192, false));
	CHECK_OK(h_echo(d, q, hi, span_out, 8192, false));
	CHECK_OK(h_echo(d, q, span_out, hi, 8192, true));
	return 0;
}

static int mem_table_regions(struct worker *w, bool slots, uint64_t page)
{
	struct vhost_client_opts o = h_opts();
	struct guest_vq *q;
	H_DEV(d);

	if (!slots)
		o.protocol_features &=
			~(1ull << VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS);
	CHECK_OK(h_connect(&d, w, &o));
	CHECK_OK(layout_several(&d, page));
	CHECK_OK(guest_dev_start(&d, DRV_FEATURES));
	CHECK_OK(guest_dev_add_queue(&d, 0, 256, &q));
	CHECK_OK(guest_dev_driver_ok(&d));
	return echo_across_layout(&d, q);
}

static int mem_table_several_4k_regions_set_mem_table(struct worker *w)
{
	return mem_table_regions(w, false, GUEST_PAGE_4K);
}

static int mem_table_several_4k_regions_add_mem_reg(struct worker *w)
{
	return mem_table_regions(w, true, GUEST_PAGE_4K);
}

static int mem_table_2m_hugetlb_regions(struct worker *w)
{
	int r = h_hugepages_get(8);

	if (r)
		return r == H_SKIP ? H_SKIP : 1;
	CHECK_OK(mem_table_regions(w, true, GUEST_PAGE_2M));
	return mem_table_regions(w, false, GUEST_PAGE_2M);
}

/* Regions added after the rings run, and one removed, while serving. */
static int mem_table_add_and_remove_live(struct worker *w)
{
	struct vhost_client_opts o = h_opts();
	struct guest_vq *q;
	uint64_t a, b;
	int s;
	H_DEV(d);

	CHECK_OK(h_bring_up(&d, w, &o, &q));
	s = guest_ram_add_region(&d.ram, 64ull << 30, 2 << 20, GUEST_PAGE_4K);
	CHECK(s == 2);
	CHECK_OK(vhost_client_add_mem_reg(&d.vc, &d.ram, 2));
	CHECK_OK(guest_ram_alloc_in(&d.ram, 2, 4096, 64, &a));
	CHECK_OK(guest_ram_alloc_in(&d.ram, 1, 4096, 64, &b));
	CHECK_OK(h_echo(&d, q, a, b, 4096, false));
	CHECK_OK(vhost_client_rem_mem_reg(&d.vc, &d.ram, 2));
	CHECK_OK(h_echo_alloc(&d, q, 4096, false));
	return 0;
}

static int rings_come_up_one_by_one(struct worker *w)
{
	struct vhost_client_opts o = h_opts();
	struct guest_vq *q0, *q5, *q255;
	H_DEV(d);

	CHECK_OK(h_connect(&d, w, &o));
	CHECK_OK(h_layout_basic(&d, GUEST_PAGE_4K));
	CHECK_OK(guest_dev_start(&d, DRV_FEATURES));
	CHECK_OK(guest_dev_add_queue(&d, 0, 256, &q0));
	CHECK_OK(guest_dev_driver_ok(&d));
	/* ring 0 answers before ring 5 exists; 1..4 never will */
	CHECK_OK(h_echo_alloc(&d, q0, 128, false));
	CHECK_OK(guest_dev_add_queue(&d, 5, 64, &q5));
	CHECK_OK(h_echo_alloc(&d, q5, 128, false));
	CHECK_OK(h_echo_alloc(&d, q0, 128, true));
	CHECK_OK(guest_dev_add_queue(&d, 255, 1024, &q255));
	CHECK_OK(h_echo_alloc(&d, q255, 128, false));
	CHECK_OK(h_echo_alloc(&d, q5, 128, true));
	CHECK_OK(guest_dev_stop(&d));
	return 0;
}

/* Frees the buffers of slot 1; the rings in slot 0 stay. */
static void free_buffers(struct guest_dev *d)
{
	d->ram.slots[1].next = 0;
}

static int round_trip_direct_sizes(struct worker *w)
{
	static const uint32_t sizes[] = {
		1, 7, 64, 4096, 4097, 65536, 1 << 20
	};
	struct vhost_client_opts o = h_opts();
	struct guest_vq *q;
	H_DEV(d);

	CHECK_OK(h_bring_up(&d, w, &o, &q));
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		free_buffers(&d);
		CHECK_OK(h_echo_alloc(&d, q, sizes[i], false));
	}
	/* the ring wraps: more round trips than entries */
	for (int i = 0; i < 600; i++) {
		free_buffers(&d);
		CHECK_OK(h_echo_alloc(&d, q, 32, false));
	}
	CHECK(q->avail_idx == 607 && q->last_used == 607);
	return 0;
}

static int round_trip_indirect(struct worker *w)
{
	struct vhost_client_opts o = h_opts();
	struct guest_vq *q;
	H_DEV(d);

	CHECK_OK(h_bring_up(&d, w, &o, &q));
	CHECK_OK(h_echo_alloc(&d, q, 64, true));
	CHECK_OK(h_echo_alloc(&d, q, 65536, true));
	return 0;
}

/* Readable parts are concatenated into the writable ones, truncated. */
static int round_trip_multi_element_chains(struct worker *w)
{
	struct vhost_client_opts o = h_opts();
	struct guest_vq *q;
	struct guest_sg out[3], in[2];
	uint8_t want[700], got[700];
	uint64_t base;
	uint32_t len;
	H_DEV(d);

	CHECK_OK(h_bring_up(&d, w, &o, &q));
	CHECK_OK(guest_ram_alloc_in(&d.ram, 1, 8192, 64, &base));
	out[0] = (struct guest_sg){ base, 100 };
	out[1] = (struct guest_sg){ base + 1000, 200 };
	out[2] = (struct guest_sg){ base + 2000, 300 };
	in[0] = (struct guest_sg){ base + 4000, 250 };
	in[1] = (struct guest_sg){ base + 5000, 450 };
	for (int ind = 0; ind < 2; ind++) {
		size_t off = 0;

		for (int i = 0; i < 3; i++) {
			h_fill(&d, out[i].gpa, out[i].len, 40u + (unsigned)i);
			guest_ram_read(&d.ram, out[i].gpa, want + off,
				       out[i].len);
			off += out[i].len;
		}
		CHECK_OK(guest_dev_exchange(&d, q, out, 3, in, 2, ind,
					    H_TIMEOUT_MS, &len));
		CHECK(len == 600);
		guest_ram_read(&d.ram, in[0].gpa, got, 250);
		guest_ram_read(&d.ram, in[1].gpa, got + 250, 350);
		CHECK(!memcmp(want, got, 600));
		/* writable room smaller than the data: truncated */
		CHECK_OK(guest_dev_exchange(&d, q, out, 3, in, 1, ind,
					    H_TIMEOUT_MS, &len));
		CHECK(len == 250);
		guest_ram_read(&d.ram, in[0].gpa, got, 250);
		CHECK(!memcmp(want, got, 250));
	}
	return 0;
}

struct batch {
	struct guest_vq *q;
	uint64_t out, in;
};

/* 4 queues, 32 chains in flight on each, one kick per queue. */
static int round_trip_several_queues_batched(struct worker *w)
{
	enum { NQ = 4, DEPTH = 32, LEN = 512 };
	struct vhost_client_opts o = h_opts();
	struct batch b[NQ];
	H_DEV(d);

	CHECK_OK(h_bring_up(&d, w, &o, &b[0].q));
	for (unsigned int i = 1; i < NQ; i++)
		CHECK_OK(guest_dev_add_queue(&d, i, 64, &b[i].q));
	for (unsigned int i = 0; i < NQ; i++) {
		CHECK_OK(guest_ram_alloc_in(&d.ram, 1, DEPTH * LEN, 64,
					    &b[i].out));
		CHECK_OK(guest_ram_alloc_in(&d.ram, 1, DEPTH * LEN, 64,
					    &b[i].in));
		h_fill(&d, b[i].out, DEPTH * LEN, 100 + i);
		for (uintptr_t k = 0; k < DEPTH; k++) {
			struct guest_sg out = { b[i].out + k * LEN, LEN };
			struct guest_sg in = { b[i].in + k * LEN, LEN };
			uint16_t head;

			CHECK_OK(guest_vq_post(b[i].q, &out, 1, &in, 1, k & 1,
					       (void *)(k + 1), &head));
		}
	}
	/*
	 * The rings came up without a reply to wait for (SET_VRING_* asks
	 * none), so the worker may be serving a queue it has just started
	 * while the chains arrive: NO_NOTIFY then rightly suppresses the
	 * kick.  What counts is that every chain comes back.
	 */
	for (unsigned int i = 0; i < NQ; i++)
		CHECK(guest_vq_kick(b[i].q) >= 0);
	for (unsigned int i = 0; i < NQ; i++) {
		uint8_t x[LEN], y[LEN];
		bool seen[DEPTH] = { false };

		for (int k = 0; k < DEPTH; k++) {
			struct guest_used u;
			uintptr_t c;

			CHECK_OK(guest_vq_poll_reap(b[i].q, H_TIMEOUT_MS, &u));
			c = (uintptr_t)u.cookie - 1;
			CHECK(c < DEPTH && !seen[c] && u.len == LEN);
			seen[c] = true;
			guest_ram_read(&d.ram, b[i].out + c * LEN, x, LEN);
			guest_ram_read(&d.ram, b[i].in + c * LEN, y, LEN);
			CHECK(!memcmp(x, y, LEN));
		}
		CHECK(guest_vq_used_pending(b[i].q) == 0);
	}
	return 0;
}

/*
 * Waits until a word the device writes (avail_event, the used flags)
 * reads want: with no call to wait for, the guest can see a used entry
 * before the device has asked for the next kick.
 */
static int wait_u16(const uint16_t *p, uint16_t want)
{
	for (int ms = 0; ms < H_TIMEOUT_MS; ms++) {
		if (__atomic_load_n(p, __ATOMIC_ACQUIRE) == want)
			return 0;
		sleep_ms(1);
	}
	return -ETIMEDOUT;
}

static void drain_calls(struct guest_vq *q)
{
	while (guest_vq_take_call(q) == 0)
		;
}

static int no_interrupt_honoured(struct worker *w)
{
	struct vhost_client_opts o = h_opts();
	struct guest_vq *q, *q1;
	struct guest_used u;
	uint64_t a;
	uint16_t head;
	H_DEV(d);

	CHECK_OK(h_bring_up(&d, w, &o, &q));
	CHECK_OK(guest_dev_add_queue(&d, 1, 64, &q1));
	CHECK_OK(guest_ram_alloc_in(&d.ram, 1, 4096, 64, &a));
	struct guest_sg out = { a, 64 }, in = { a + 2048, 64 };

	/* NO_INTERRUPT: the used entry appears, the call fd stays quiet */
	drain_calls(q);
	guest_vq_set_no_interrupt(q, true);
	for (int i = 0; i < 20; i++) {
		CHECK_OK(guest_vq_post(q, &out, 1, &in, 1, false, NULL, &head));
		CHECK(guest_vq_kick(q) == 1);
		CHECK_OK(guest_vq_poll_reap(q, H_TIMEOUT_MS, &u));
		CHECK(u.id == head && u.len == 64);
		CHECK_OK(wait_u16(&q->used->flags, 0));
	}
	sleep_ms(100);
	CHECK_ERR(guest_vq_take_call(q), -EAGAIN);

	/* interrupts on: each completion signals this queue, not queue 1 */
	guest_vq_set_no_interrupt(q, false);
	drain_calls(q1);
	for (int i = 0; i < 20; i++) {
		CHECK_OK(guest_vq_post(q, &out, 1, &in, 1, false, NULL, &head));
		CHECK(guest_vq_kick(q) == 1);
		CHECK_OK(guest_vq_wait_call(q, H_TIMEOUT_MS));
		CHECK_OK(guest_vq_reap(q, &u));
		CHECK(u.id == head);
	}
	CHECK_ERR(guest_vq_take_call(q1), -EAGAIN);
	return 0;
}

/*
 * VIRTIO_F_RING_EVENT_IDX end to end: the guest simulator (Linux's
 * virtio_ring.c rules) against the worker.  Kicks only cross avail_event,
 * calls only cross used_event, and the flags words are never used.
 */
static int event_idx_round_trips(struct worker *w)
{
	struct vhost_client_opts o = h_opts();
	struct guest_vq *q;
	struct guest_used u;
	uint16_t head, *avail_event;
	uint64_t a;
	H_DEV(d);

	CHECK_OK(h_connect(&d, w, &o));
	CHECK_OK(h_layout_basic(&d, GUEST_PAGE_4K));
	CHECK_OK(guest_dev_start(&d, DRV_FEATURES |
					     (1ull << GUEST_F_RING_EVENT_IDX)));
	CHECK_OK(guest_dev_add_queue(&d, 0, 256, &q));
	CHECK_OK(guest_dev_driver_ok(&d));
	CHECK(q->event);
	avail_event = (uint16_t *)(void *)&q->used->ring[q->num];
	CHECK_OK(guest_ram_alloc_in(&d.ram, 1, 4096, 64, &a));
	struct guest_sg out = { a, 64 }, in = { a + 2048, 64 };

	/* interrupts on: every round trip kicks once and is called once */
	for (int i = 0; i < 20; i++) {
		CHECK_OK(guest_vq_post(q, &out, 1, &in, 1, false, NULL, &head));
		CHECK(guest_vq_kick(q) == 1);
		CHECK_OK(guest_vq_wait_call(q, H_TIMEOUT_MS));
		CHECK_OK(guest_vq_reap(q, &u));
		CHECK(u.id == head && u.len == 64);
		/* the device drained, then asked for the next kick */
		CHECK(__atomic_load_n(avail_event, __ATOMIC_ACQUIRE) ==
		      q->avail_idx);
	}
	CHECK(q->kicks == 20 && q->kicks_suppressed == 0);
	CHECK(q->used->flags == 0);
	CHECK(q->avail->flags == 0);

	/*
	 * interrupts off (used_event 0): used entries come, no call; once
	 * the device has asked for the next kick, the next chain kicks.
	 */
	guest_vq_set_no_interrupt(q, true);
	for (int i = 0; i < 20; i++) {
		CHECK_OK(guest_vq_post(q, &out, 1, &in, 1, false, NULL, &head));
		CHECK(guest_vq_kick(q) == 1);
		CHECK_OK(guest_vq_poll_reap(q, H_TIMEOUT_MS, &u));
		CHECK(u.id == head);
		CHECK_OK(wait_u16(avail_event, q->avail_idx));
	}
	sleep_ms(100);
	CHECK_ERR(guest_vq_take_call(q), -EAGAIN);
	CHECK(q->avail->flags == 0); /* event index: flags unused */

	/* a kick whose entries do not cross avail_event is not sent */
	__atomic_store_n(avail_event, (uint16_t)(q->avail_idx + 5),
			 __ATOMIC_RELEASE);
	CHECK_OK(guest_vq_post(q, &out, 1, &in, 1, false, NULL, &head));
	CHECK(guest_vq_kick(q) == 0);
	CHECK(q->kicks_suppressed == 1);
	/* the worker still finds it on its next kick of the queue */
	__atomic_store_n(avail_event, q->avail_idx, __ATOMIC_RELEASE);
	CHECK_OK(guest_vq_post(q, &out, 1, &in, 1, false, NULL, &head));
	CHECK(guest_vq_kick(q) == 1);
	CHECK_OK(guest_vq_poll_reap(q, H_TIMEOUT_MS, &u));
	CHECK_OK(guest_vq_poll_reap(q, H_TIMEOUT_MS, &u));
	CHECK(u.id == head);
	return 0;
}

/* GET_VRING_BASE stops the ring; SET_VRING_BASE resumes it there. */
static int get_vring_base_stops_ring(struct worker *w)
{
	struct vhost_client_opts o = h_opts();
	struct guest_vq *q;
	struct guest_used u;
	uint32_t base;
	uint64_t a;
	uint16_t head;
	H_DEV(d);

	CHECK_OK(h_bring_up(&d, w, &o, &q));
	for (int i = 0; i < 3; i++)
		CHECK_OK(h_echo_alloc(&d, q, 64, false));
	CHECK_OK(guest_dev_stop_queue(&d, 0, &base));
	CHECK(base == 3);

	/* a chain posted to the stopped ring is not served */
	CHECK_OK(guest_ram_alloc_in(&d.ram, 1, 4096, 64, &a));
	struct guest_sg out = { a, 64 }, in = { a + 2048, 64 };

	h_fill(&d, a, 64, 9);
	CHECK_OK(guest_vq_post(q, &out, 1, &in, 1, false, NULL, &head));
	guest_vq_kick(q);
	sleep_ms(200);
	CHECK(guest_vq_used_pending(q) == 0);

	/* resumed at the base, it serves the chain that waited */
	CHECK_OK(vhost_client_start_vring(&d.vc, q, (uint16_t)base));
	CHECK_OK(guest_vq_poll_reap(q, H_TIMEOUT_MS, &u));
	CHECK(u.id == head && u.len == 64);
	CHECK_OK(h_echo_alloc(&d, q, 64, false));
	CHECK_OK(guest_dev_stop_queue(&d, 0, &base));
	CHECK(base == 5);
	return 0;
}

static int one_session(struct worker *w, bool clean)
{
	struct vhost_client_opts o = h_opts();
	struct guest_vq *q;
	uint16_t head;
	H_DEV(d);

	CHECK_OK(h_bring_up(&d, w, &o, &q));
	CHECK_OK(h_echo_alloc(&d, q, 1000, false));
	if (clean) {
		CHECK_OK(guest_dev_stop(&d));
		return 0;
	}
	/* hang up with a chain in flight and the ring running */
	struct guest_sg out = { 4ull << 30, 64 };
	CHECK_OK(guest_vq_post(q, &out, 1, NULL, 0, false, NULL, &head));
	CHECK(guest_vq_kick(q) == 1);
	return 0;
}

static int disconnect_and_reconnect(struct worker *w)
{
	static const char *const gone[] = { "frontend disconnected", NULL };

	for (int i = 0; i < 4; i++) {
		worker_log_mark(w);
		CHECK(one_session(w, i == 1) == 0);
		CHECK(worker_log_waitv(w, H_TIMEOUT_MS, gone));
		CHECK(worker_alive(w));
	}
	return 0;
}

/* RESET_DEVICE, then the same connection sets the device up again. */
static int reset_and_restart_same_connection(struct worker *w)
{
	struct vhost_client_opts o = h_opts();
	struct guest_vq *q;
	H_DEV(d);

	/* QEMU re-sends the whole table on restart: SET_MEM_TABLE path */
	o.protocol_features &=
		~(1ull << VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS);
	CHECK_OK(h_bring_up(&d, w, &o, &q));
	CHECK_OK(h_echo_alloc(&d, q, 64, false));
	CHECK_OK(guest_dev_stop(&d));
	guest_vq_reset(q);
	CHECK_OK(vhost_client_set_features(&d.vc, DRV_FEATURES));
	CHECK_OK(vhost_client_set_mem_table(&d.vc, &d.ram));
	CHECK_OK(vhost_client_start_vring(&d.vc, q, 0));
	CHECK_OK(guest_dev_driver_ok(&d));
	CHECK_OK(h_echo_alloc(&d, q, 64, false));
	CHECK_OK(h_echo_alloc(&d, q, 64, true));
	return 0;
}

/*
 * A spinning worker (--busy-poll: adaptive polling's spin for good) polls
 * the ring itself: after the first kick the guest is told not to kick
 * (NO_NOTIFY stays set), and chains made available without a kick are
 * echoed all the same.
 */
static const char *const sleep_args[] = { "--poll-budget-us", "0", NULL };
static const char *const spin_args[] = { "--busy-poll", NULL };

static int spinning_worker_polls_ring(struct worker *w)
{
	struct vhost_client_opts o = h_opts();
	struct guest_vq *q;
	struct guest_used u;
	uint16_t head;
	uint64_t a;
	int r;
	H_DEV(d);

	worker_stop(w, false);
	h_worker_extra_args = spin_args;
	r = worker_start(w);
	h_worker_extra_args = sleep_args;
	CHECK_OK(r);
	CHECK_OK(h_bring_up(&d, w, &o, &q));
	CHECK_OK(guest_ram_alloc_in(&d.ram, 1, 4096, 64, &a));
	struct guest_sg out = { a, 64 }, in = { a + 2048, 64 };

	CHECK_OK(guest_vq_post(q, &out, 1, &in, 1, false, NULL, &head));
	CHECK(guest_vq_kick(q) >= 0);
	CHECK_OK(guest_vq_poll_reap(q, H_TIMEOUT_MS, &u));
	/* from now on: no kick, and none asked for */
	for (int i = 0; i < 20; i++) {
		CHECK_OK(guest_vq_post(q, &out, 1, &in, 1, false, NULL, &head));
		CHECK_OK(guest_vq_poll_reap(q, H_TIMEOUT_MS, &u));
		CHECK(u.id == head && u.len == 64);
		CHECK(__atomic_load_n(&q->used->flags, __ATOMIC_ACQUIRE) &
		      VRING_USED_F_NO_NOTIFY);
	}
	CHECK_OK(guest_vq_post(q, &out, 1, &in, 1, false, NULL, &head));
	CHECK(guest_vq_kick(q) == 0);
	CHECK(q->kicks_suppressed >= 1);
	CHECK_OK(guest_vq_poll_reap(q, H_TIMEOUT_MS, &u));
	return 0;
}

static const struct h_case cases[] = {
	H_CASE(handshake_negotiates_features),
	H_CASE(protocol_subset_is_respected),
	H_CASE(mem_table_several_4k_regions_set_mem_table),
	H_CASE(mem_table_several_4k_regions_add_mem_reg),
	H_CASE(mem_table_2m_hugetlb_regions),
	H_CASE(mem_table_add_and_remove_live),
	H_CASE(rings_come_up_one_by_one),
	H_CASE(round_trip_direct_sizes),
	H_CASE(round_trip_indirect),
	H_CASE(round_trip_multi_element_chains),
	H_CASE(round_trip_several_queues_batched),
	H_CASE(no_interrupt_honoured),
	H_CASE(event_idx_round_trips),
	H_CASE(get_vring_base_stops_ring),
	H_CASE(disconnect_and_reconnect),
	H_CASE(reset_and_restart_same_connection),
	H_CASE(spinning_worker_polls_ring),
};

int main(int argc, char **argv)
{
	/*
	 * The cases count kicks and calls one by one: a worker that sleeps
	 * between rounds (no adaptive spin), but for the spinning case.
	 */
	h_worker_extra_args = sleep_args;
	return h_run(argc, argv, cases, ARRAY_SIZE(cases));
}
