// SPDX-License-Identifier: MIT
/* Split virtqueue walker: descriptor chains to bounds-checked iovecs. */
#include "virtq.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"

/* Single loads and stores of guest-shared fields (naturally aligned). */
static inline uint16_t ld16(const uint8_t *p)
{
	return __atomic_load_n((const uint16_t *)(const void *)p,
			       __ATOMIC_RELAXED);
}

static inline uint32_t ld32(const uint8_t *p)
{
	return __atomic_load_n((const uint32_t *)(const void *)p,
			       __ATOMIC_RELAXED);
}

static inline uint64_t ld64(const uint8_t *p)
{
	return __atomic_load_n((const uint64_t *)(const void *)p,
			       __ATOMIC_RELAXED);
}

static inline void st16(uint8_t *p, uint16_t v)
{
	__atomic_store_n((uint16_t *)(void *)p, v, __ATOMIC_RELAXED);
}

static inline void st32(uint8_t *p, uint32_t v)
{
	__atomic_store_n((uint32_t *)(void *)p, v, __ATOMIC_RELAXED);
}

void vq_init(struct vq *vq, unsigned int index)
{
	memset(vq, 0, sizeof(*vq));
	vq->index = index;
	vq->call_fd = -1;
}

int vq_setup(struct vq *vq, const struct guest_mem *mem, uint16_t num,
	     void *desc, void *avail, void *used, uint16_t base,
	     bool indirect_ok, uint8_t *dev_status)
{
	if (num == 0 || num > VQ_MAX_SIZE || (num & (num - 1)))
		return -EINVAL;
	if (((uintptr_t)desc & 15) || ((uintptr_t)avail & 1) ||
	    ((uintptr_t)used & 3))
		return -EINVAL;
	vq_teardown(vq);
	if (indirect_ok) {
		vq->ind = calloc(VQ_MAX_SIZE, sizeof(*vq->ind));
		if (!vq->ind)
			return -ENOMEM;
	}
	vq->mem = mem;
	vq->num = num;
	vq->desc = desc;
	vq->avail = avail;
	vq->used = used;
	vq->last_avail = base;
	vq->used_idx = base;
	vq->indirect_ok = indirect_ok;
	vq->dev_status = dev_status;
	vq->broken = false;
	vq->event_idx = false;
	vq->sig_ok = false;
	vq->ready = true;
	return 0;
}

void vq_set_event_idx(struct vq *vq, bool on)
{
	vq->event_idx = on;
	vq->sig_ok = false;
}

void vq_teardown(struct vq *vq)
{
	free(vq->ind);
	vq->ind = NULL;
	vq->ready = false;
	vq->desc = vq->avail = vq->used = NULL;
	vq->mem = NULL;
}

static int violation(struct vq *vq, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int violation(struct vq *vq, const char *fmt, ...)
{
	char what[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	log_peer_warnx("virtqueue %u: %s; queue stopped, device needs reset",
		       vq->index, what);
	vq->broken = true;
	if (vq->dev_status)
		*vq->dev_status |= VIRTIO_STATUS_NEEDS_RESET;
	return -EBADMSG;
}

static void load_desc(const uint8_t *p, struct vring_desc *d)
{
	d->addr = ld64(p);
	d->len = ld32(p + 8);
	d->flags = ld16(p + 12);
	d->next = ld16(p + 14);
}

/* Appends one validated buffer of the chain to elem. */
static int add_buf(struct vq *vq, struct vq_elem *e, const struct vring_desc *d)
{
	bool wr = d->flags & VRING_DESC_F_WRITE;
	unsigned int n = e->out_num + e->in_num;
	int ret;

	if (d->len == 0)
		return violation(vq, "descriptor with zero length");
	if (!wr && e->in_num > 0)
		return violation(vq, "readable descriptor after a writable "
				     "one");
	/* Each len < 2^32 and at most 2 * VQ_MAX_SIZE of them: no overflow. */
	if (e->out_len + e->in_len + d->len > VQ_MAX_CHAIN_BYTES)
		return violation(vq, "chain describes more than 4 GiB");
	/* vhost-user regions are read-write; a device-writable one must be */
	ret = wr ? gm_gpa_to_iov_w(vq->mem, d->addr, d->len, e->iov, VQ_MAX_IOV,
				   &n)
		 : gm_gpa_to_iov(vq->mem, d->addr, d->len, e->iov, VQ_MAX_IOV,
				 &n);
	if (ret == -ENOBUFS)
		return violation(vq, "chain needs more than %u host buffers",
				 VQ_MAX_IOV);
	if (ret < 0)
		return violation(vq, "buffer 0x%llx+%u not in guest memory",
				 (unsigned long long)d->addr, d->len);
	if (wr) {
		e->in_num = n - e->out_num;
		e->in_len += d->len;
	} else {
		e->out_num = n;
		e->out_len += d->len;
	}
	return 0;
}

/* Copies the indirect table d points at into vq->ind; returns its size. */
static int load_indirect(struct vq *vq, const struct vring_desc *d)
{
	struct iovec iov[GM_MAX_REGIONS];
	unsigned int n = 0, count;

	if (d->len == 0 || d->len % sizeof(struct vring_desc))
		return violation(vq,
				 "indirect table length %u is not a "
				 "non-zero multiple of 16",
				 d->len);
	count = d->len / sizeof(struct vring_desc);
	if (count > VQ_MAX_SIZE)
		return violation(vq,
				 "indirect table of %u descriptors "
				 "(limit %u)",
				 count, VQ_MAX_SIZE);
	if (gm_gpa_to_iov(vq->mem, d->addr, d->len, iov, GM_MAX_REGIONS, &n) <
	    0)
		return violation(vq,
				 "indirect table 0x%llx+%u not in guest "
				 "memory",
				 (unsigned long long)d->addr, d->len);
	/* One copy out of shared memory; only the copy is looked at. */
	iov_to_buf(iov, n, vq->ind, d->len);
	return (int)count;
}

static int walk_indirect(struct vq *vq, struct vq_elem *e,
			 const struct vring_desc *head)
{
	unsigned int count, hops = 0, idx = 0;
	int ret;

	ret = load_indirect(vq, head);
	if (ret < 0)
		return ret;
	count = (unsigned int)ret;
	for (;;) {
		const struct vring_desc *d = &vq->ind[idx];

		if (++hops > count)
			return violation(vq,
					 "indirect chain longer than its "
					 "table of %u (loop)",
					 count);
		if (d->flags & VRING_DESC_F_INDIRECT)
			return violation(vq, "indirect descriptor inside an "
					     "indirect table");
		ret = add_buf(vq, e, d);
		if (ret < 0)
			return ret;
		if (!(d->flags & VRING_DESC_F_NEXT))
			return 0;
		if (d->next >= count)
			return violation(vq,
					 "indirect next index %u past its "
					 "table of %u",
					 d->next, count);
		idx = d->next;
	}
}

static int check_indirect_head(struct vq *vq, const struct vring_desc *d,
			       unsigned int hops)
{
	if (!vq->indirect_ok)
		return violation(vq, "indirect descriptor but "
				     "RING_INDIRECT_DESC not negotiated");
	if (hops != 1)
		return violation(vq, "indirect descriptor not at the chain "
				     "head");
	if (d->flags & VRING_DESC_F_NEXT)
		return violation(vq, "indirect descriptor with NEXT set");
	return 0;
}

static int walk_chain(struct vq *vq, struct vq_elem *e, uint16_t head)
{
	unsigned int hops = 0, idx = head;
	struct vring_desc d;
	int ret;

	for (;;) {
		if (++hops > vq->num)
			return violation(vq,
					 "chain from head %u longer than "
					 "the ring size %u (loop)",
					 head, vq->num);
		load_desc(vq->desc + VQ_DESC_BYTES(idx), &d);
		if (d.flags & VRING_DESC_F_INDIRECT) {
			ret = check_indirect_head(vq, &d, hops);
			return ret < 0 ? ret : walk_indirect(vq, e, &d);
		}
		ret = add_buf(vq, e, &d);
		if (ret < 0)
			return ret;
		if (!(d.flags & VRING_DESC_F_NEXT))
			return 0;
		if (d.next >= vq->num)
			return violation(vq,
					 "next index %u past the ring size "
					 "%u",
					 d.next, vq->num);
		idx = d.next;
	}
}

static bool usable(const struct vq *vq)
{
	return vq->ready && !vq->broken &&
	       !(vq->dev_status &&
		 (*vq->dev_status & VIRTIO_STATUS_NEEDS_RESET));
}

int vq_pop(struct vq *vq, struct vq_elem *elem)
{
	uint16_t avail_idx, pending, head;
	int ret;

	if (!usable(vq))
		return 0;
	avail_idx = __atomic_load_n((uint16_t *)(void *)(vq->avail + 2),
				    __ATOMIC_ACQUIRE);
	pending = (uint16_t)(avail_idx - vq->last_avail);
	if (pending > vq->num)
		return violation(vq,
				 "avail index %u is %u entries ahead of "
				 "%u (ring size %u)",
				 avail_idx, pending, vq->last_avail, vq->num);
	if (pending == 0)
		return 0;
	head = ld16(vq->avail + 4 + 2u * (vq->last_avail & (vq->num - 1)));
	if (head >= vq->num)
		return violation(vq,
				 "avail ring entry %u holds head %u past "
				 "the ring size %u",
				 vq->last_avail, head, vq->num);
	elem->head = head;
	elem->out_num = elem->in_num = 0;
	elem->out_len = elem->in_len = 0;
	ret = walk_chain(vq, elem, head);
	if (ret < 0)
		return ret;
	vq->last_avail++;
	return 1;
}

void vq_push(struct vq *vq, const struct vq_elem *elem, uint32_t len)
{
	vq_push_head(vq, elem->head, len);
}

void vq_push_head(struct vq *vq, uint16_t head, uint32_t len)
{
	uint8_t *slot;

	if (!vq->ready)
		return;
	slot = vq->used + 4 + 8u * (vq->used_idx & (vq->num - 1));
	st32(slot, head);
	st32(slot + 4, len);
	vq->used_idx++;
	__atomic_store_n((uint16_t *)(void *)(vq->used + 2), vq->used_idx,
			 __ATOMIC_RELEASE);
}

/* virtio's vring_need_event(): did [old, new) cross event? */
static bool need_event(uint16_t event, uint16_t new_idx, uint16_t old)
{
	return (uint16_t)(new_idx - event - 1) < (uint16_t)(new_idx - old);
}

/* Whether the driver wants a call for what was pushed since the last. */
static bool wants_call(struct vq *vq)
{
	uint16_t old = vq->sig_used;
	bool known = vq->sig_ok;

	if (!vq->event_idx)
		return !(ld16(vq->avail) & VRING_AVAIL_F_NO_INTERRUPT);
	vq->sig_used = vq->used_idx;
	vq->sig_ok = true;
	if (!known)
		return true;
	return need_event(ld16(vq->avail + VQ_AVAIL_BYTES(vq->num)),
			  vq->used_idx, old);
}

void vq_unsignalled(struct vq *vq)
{
	vq->sig_ok = false;
}

void vq_disable_notify(struct vq *vq)
{
	if (usable(vq) && !vq->event_idx)
		st16(vq->used, VRING_USED_F_NO_NOTIFY);
}

bool vq_has_avail(const struct vq *vq)
{
	if (!usable(vq))
		return false;
	return __atomic_load_n((uint16_t *)(void *)(vq->avail + 2),
			       __ATOMIC_ACQUIRE) != vq->last_avail;
}

bool vq_poll_ready(struct vq *vq, bool polling, bool start)
{
	if (!polling)
		return vq_enable_notify(vq);
	if (start)
		vq_disable_notify(vq);
	return vq_has_avail(vq);
}

bool vq_enable_notify(struct vq *vq)
{
	if (!usable(vq))
		return false;
	if (vq->event_idx)
		st16(vq->used + VQ_USED_BYTES(vq->num), vq->last_avail);
	else
		st16(vq->used, 0);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return vq_has_avail(vq);
}

void vq_notify(struct vq *vq)
{
	uint64_t one = 1;

	if (!vq->ready || vq->call_fd < 0)
		return;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!wants_call(vq))
		return;
	/* EAGAIN means the counter is saturated: the driver is notified. */
	if (write(vq->call_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_peer_warn("virtqueue %u: signalling the call fd",
			      vq->index);
}

size_t iov_to_buf(const struct iovec *iov, unsigned int n, void *buf,
		  size_t len)
{
	size_t done = 0;
	unsigned int i;

	for (i = 0; i < n && done < len; i++) {
		size_t c = iov[i].iov_len < len - done ? iov[i].iov_len
						       : len - done;

		memcpy((uint8_t *)buf + done, iov[i].iov_base, c);
		done += c;
	}
	return done;
}

size_t buf_to_iov(const struct iovec *iov, unsigned int n, const void *buf,
		  size_t len)
{
	size_t done = 0;
	unsigned int i;

	for (i = 0; i < n && done < len; i++) {
		size_t c = iov[i].iov_len < len - done ? iov[i].iov_len
						       : len - done;

		memcpy(iov[i].iov_base, (const uint8_t *)buf + done, c);
		done += c;
	}
	return done;
}
