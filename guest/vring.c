// SPDX-License-Identifier: MIT
/* Driver half of the guest simulator: split virtqueues in guest RAM. */
#include "guest/vring.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"

static uint64_t desc_bytes(uint16_t num)
{
	return 16ull * num;
}

static uint64_t avail_bytes(uint16_t num)
{
	return 4 + 2ull * num + 2; /* flags, idx, ring[], used_event */
}

static uint64_t used_bytes(uint16_t num)
{
	return 4 + 8ull * num + 2; /* flags, idx, ring[], avail_event */
}

static int alloc_ring_area(struct guest_vq *q, struct guest_ram *ram)
{
	uint64_t ind = desc_bytes(GUEST_VQ_INDIRECT_MAX) * q->num;
	int r;

	r = guest_ram_alloc(ram, desc_bytes(q->num), 16, &q->desc_gpa);
	if (!r)
		r = guest_ram_alloc(ram, avail_bytes(q->num), 2, &q->avail_gpa);
	if (!r)
		r = guest_ram_alloc(ram, used_bytes(q->num), 4, &q->used_gpa);
	if (!r)
		r = guest_ram_alloc(ram, ind, 16, &q->indirect_gpa);
	if (r)
		return r;
	q->desc = guest_ram_ptr(ram, q->desc_gpa, desc_bytes(q->num));
	q->avail = guest_ram_ptr(ram, q->avail_gpa, avail_bytes(q->num));
	q->used = guest_ram_ptr(ram, q->used_gpa, used_bytes(q->num));
	q->indirect = guest_ram_ptr(ram, q->indirect_gpa, ind);
	return 0;
}

int guest_vq_init(struct guest_vq *q, struct guest_ram *ram, unsigned int index,
		  uint16_t num)
{
	int r;

	memset(q, 0, sizeof(*q));
	q->kick_fd = q->call_fd = q->link_fd = -1;
	if (!num || (num & (num - 1)) || num > GUEST_VQ_MAX_NUM)
		return -EINVAL;
	q->index = index;
	q->num = num;
	q->ram = ram;
	r = alloc_ring_area(q, ram);
	if (r)
		return r;
	q->free_next = calloc(num, sizeof(*q->free_next));
	q->heads = calloc(num, sizeof(*q->heads));
	if (!q->free_next || !q->heads) {
		guest_vq_release(q);
		return -ENOMEM;
	}
	q->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	q->call_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (q->kick_fd < 0 || q->call_fd < 0) {
		r = -errno;
		guest_vq_release(q);
		return r;
	}
	guest_vq_reset(q);
	return 0;
}

void guest_vq_release(struct guest_vq *q)
{
	free(q->free_next);
	free(q->heads);
	q->free_next = NULL;
	q->heads = NULL;
	q->kick_fd = safe_close(q->kick_fd);
	q->call_fd = safe_close(q->call_fd);
}

void guest_vq_reset(struct guest_vq *q)
{
	memset(q->desc, 0, desc_bytes(q->num));
	memset(q->avail, 0, avail_bytes(q->num));
	memset(q->used, 0, used_bytes(q->num));
	memset(q->heads, 0, q->num * sizeof(*q->heads));
	for (uint16_t i = 0; i < q->num; i++)
		q->free_next[i] = (uint16_t)(i + 1);
	q->free_head = 0;
	q->num_free = q->num;
	q->avail_idx = 0;
	q->last_used = 0;
	q->kicked_idx = 0;
	q->no_interrupt = false;
}

/* Linux's vring_used_event() / vring_avail_event(): after each ring. */
static uint16_t *used_event(struct guest_vq *q)
{
	return &q->avail->ring[q->num];
}

static uint16_t *avail_event(struct guest_vq *q)
{
	return (uint16_t *)(void *)&q->used->ring[q->num];
}

/* virtio_store_mb(): the store, then a full fence before later loads. */
static void store_mb(uint16_t *p, uint16_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

void guest_vq_set_event_idx(struct guest_vq *q, bool on)
{
	q->event = on;
}

void guest_vq_set_no_interrupt(struct guest_vq *q, bool on)
{
	uint16_t flags = on ? VRING_AVAIL_F_NO_INTERRUPT : 0;

	q->no_interrupt = on;
	if (!q->event) {
		__atomic_store_n(&q->avail->flags, flags, __ATOMIC_RELEASE);
		return;
	}
	/* virtqueue_disable_cb_split() / virtqueue_enable_cb_prepare_split() */
	store_mb(used_event(q), on ? 0 : q->last_used);
}

static void fill_desc(struct vring_desc *d, const struct guest_sg *sg,
		      bool writable, bool more, uint16_t next)
{
	d->addr = sg->gpa;
	d->len = sg->len;
	d->flags = (uint16_t)((writable ? VRING_DESC_F_WRITE : 0) |
			      (more ? VRING_DESC_F_NEXT : 0));
	d->next = more ? next : 0;
}

static const struct guest_sg *nth_sg(const struct guest_sg *out,
				     unsigned int nout,
				     const struct guest_sg *in, unsigned int i)
{
	return i < nout ? &out[i] : &in[i - nout];
}

/* Writes the chain into an indirect table owned by `head`. */
static void post_indirect(struct guest_vq *q, uint16_t head,
			  const struct guest_sg *out, unsigned int nout,
			  const struct guest_sg *in, unsigned int total)
{
	struct vring_desc *tbl = &q->indirect[head * GUEST_VQ_INDIRECT_MAX];
	struct vring_desc *d = &q->desc[head];

	for (unsigned int i = 0; i < total; i++)
		fill_desc(&tbl[i], nth_sg(out, nout, in, i), i >= nout,
			  i + 1 < total, (uint16_t)(i + 1));
	d->addr = q->indirect_gpa + desc_bytes(GUEST_VQ_INDIRECT_MAX) * head;
	d->len = (uint32_t)desc_bytes((uint16_t)total);
	d->flags = VRING_DESC_F_INDIRECT;
	d->next = 0;
	q->heads[head].ndesc = 1;
	q->heads[head].tail = head;
}

/* Writes the chain into ring descriptors taken from the free list. */
static void post_direct(struct guest_vq *q, uint16_t head,
			const struct guest_sg *out, unsigned int nout,
			const struct guest_sg *in, unsigned int total)
{
	uint16_t idx = head;

	for (unsigned int i = 0; i < total; i++) {
		bool more = i + 1 < total;

		fill_desc(&q->desc[idx], nth_sg(out, nout, in, i), i >= nout,
			  more, q->free_next[idx]);
		if (!more)
			q->heads[head].tail = idx;
		else
			idx = q->free_next[idx];
	}
	q->heads[head].ndesc = (uint16_t)total;
}

static void publish(struct guest_vq *q, uint16_t head)
{
	q->avail->ring[q->avail_idx % q->num] = head;
	q->avail_idx++;
	/* entries and descriptors before the index: release */
	__atomic_store_n(&q->avail->idx, q->avail_idx, __ATOMIC_RELEASE);
}

int guest_vq_post(struct guest_vq *q, const struct guest_sg *out,
		  unsigned int nout, const struct guest_sg *in,
		  unsigned int nin, bool indirect, void *cookie,
		  uint16_t *ret_head)
{
	unsigned int total = nout + nin;
	uint16_t head = q->free_head;

	if (!total || total < nout)
		return -EINVAL;
	if (indirect ? total > GUEST_VQ_INDIRECT_MAX : total > q->num)
		return -EINVAL;
	if (q->num_free < (indirect ? 1 : total))
		return -ENOSPC;

	if (indirect)
		post_indirect(q, head, out, nout, in, total);
	else
		post_direct(q, head, out, nout, in, total);
	q->heads[head].cookie = cookie;
	q->heads[head].busy = true;
	q->free_head = q->free_next[q->heads[head].tail];
	q->num_free = (uint16_t)(q->num_free - q->heads[head].ndesc);
	publish(q, head);
	*ret_head = head;
	return 0;
}

int guest_vq_kick(struct guest_vq *q)
{
	uint64_t one = 1;
	uint16_t flags;

	/* order the avail->idx store before reading the device's hint */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (q->event) {
		/* virtqueue_kick_prepare_split(): vring_need_event() */
		uint16_t ev = __atomic_load_n(avail_event(q), __ATOMIC_RELAXED);
		uint16_t old = q->kicked_idx;

		q->kicked_idx = q->avail_idx;
		flags = (uint16_t)(q->avail_idx - ev - 1) <
					(uint16_t)(q->avail_idx - old)
				? 0
				: VRING_USED_F_NO_NOTIFY;
	} else {
		flags = __atomic_load_n(&q->used->flags, __ATOMIC_RELAXED);
	}
	if (flags & VRING_USED_F_NO_NOTIFY) {
		q->kicks_suppressed++;
		return 0;
	}
	if (write(q->kick_fd, &one, sizeof(one)) != sizeof(one))
		return -errno;
	q->kicks++;
	return 1;
}

int guest_vq_take_call(struct guest_vq *q)
{
	uint64_t v;

	if (read(q->call_fd, &v, sizeof(v)) != sizeof(v))
		return errno == EAGAIN ? -EAGAIN : -errno;
	return 0;
}

bool guest_vq_link_down(const struct guest_vq *q)
{
	struct pollfd pfd = { .fd = q->link_fd, .events = POLLRDHUP };

	return q->link_fd >= 0 && poll(&pfd, 1, 0) == 1 &&
	       pfd.revents & (POLLRDHUP | POLLHUP | POLLERR);
}

int guest_vq_wait_call(struct guest_vq *q, int timeout_ms)
{
	struct pollfd pfd[2] = { { .fd = q->call_fd, .events = POLLIN },
				 { .fd = q->link_fd, .events = POLLRDHUP } };
	int r;

	do {
		r = poll(pfd, 2, timeout_ms);
	} while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	if (r == 0)
		return -ETIMEDOUT;
	if (!(pfd[0].revents & POLLIN) &&
	    pfd[1].revents & (POLLRDHUP | POLLHUP | POLLERR))
		return -ENOTCONN;
	return guest_vq_take_call(q);
}

uint16_t guest_vq_used_pending(const struct guest_vq *q)
{
	uint16_t idx = __atomic_load_n(&q->used->idx, __ATOMIC_ACQUIRE);

	return (uint16_t)(idx - q->last_used);
}

int guest_vq_reap(struct guest_vq *q, struct guest_used *ret)
{
	uint16_t pending = guest_vq_used_pending(q); /* acquire */
	struct guest_vq_head *h;
	uint32_t id, len;

	if (!pending)
		return -EAGAIN;
	if (pending > q->num)
		return -EPROTO;
	id = q->used->ring[q->last_used % q->num].id;
	len = q->used->ring[q->last_used % q->num].len;
	if (id >= q->num || !q->heads[id].busy)
		return -EPROTO;
	h = &q->heads[id];
	ret->id = (uint16_t)id;
	ret->len = len;
	ret->cookie = h->cookie;
	q->free_next[h->tail] = q->free_head;
	q->free_head = (uint16_t)id;
	q->num_free = (uint16_t)(q->num_free + h->ndesc);
	h->busy = false;
	q->last_used++;
	/* virtqueue_get_buf_ctx_split(): the next entry wants a call */
	if (q->event && !q->no_interrupt)
		store_mb(used_event(q), q->last_used);
	return 0;
}

/*
 * Yields for the first 200 us (a device answers in a few; yielding rather
 * than spinning leaves the CPU to a device that shares it), then naps.
 */
int guest_vq_poll_reap(struct guest_vq *q, int timeout_ms,
		       struct guest_used *ret)
{
	uint64_t start = mono_us(), now;

	for (;;) {
		int r = guest_vq_reap(q, ret);

		if (r != -EAGAIN)
			return r;
		now = mono_us();
		if (now - start > (uint64_t)timeout_ms * 1000)
			return -ETIMEDOUT;
		if (now - start > 200) {
			struct timespec ts = { 0, 50000 };

			nanosleep(&ts, NULL);
		} else {
			sched_yield();
		}
	}
}

void guest_vq_publish_raw(struct guest_vq *q, uint16_t head, uint16_t step)
{
	q->avail->ring[q->avail_idx % q->num] = head;
	q->avail_idx = (uint16_t)(q->avail_idx + step);
	__atomic_store_n(&q->avail->idx, q->avail_idx, __ATOMIC_RELEASE);
}
