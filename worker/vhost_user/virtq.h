/* SPDX-License-Identifier: MIT */
/*
 * Split virtqueues (virtio 1.x, section 2.7) as the device side sees them:
 * popping descriptor chains out of guest memory into iovec lists of
 * translated, bounds-checked host buffers, and pushing used elements.
 *
 * The guest owns the ring memory and may change it at any time, so every
 * field is loaded once into a local and validated there.  A violation (a
 * head or next index past the ring, a loop, a chain longer than the ring, a
 * nested or malformed indirect table, an address outside guest memory, a
 * readable buffer after a writable one, a zero-length buffer, an avail index
 * more than the ring size ahead) is logged once (through the worker's rate
 * limit for peer-caused lines, log_peer_warnx()), marks the queue broken and
 * sets VIRTIO_STATUS_NEEDS_RESET in the device status the queue points at;
 * a broken queue pops nothing until it is set up again.
 *
 * Memory ordering (one device thread, the driver on other CPUs):
 * - avail->idx is loaded with acquire semantics before the ring entries
 *   and descriptors it publishes are read;
 * - a used element is written before used->idx is stored with release
 *   semantics, so the driver never sees the index before the element;
 * - a full fence separates the used->idx store from the avail->flags (or
 *   used_event) load in vq_notify(), so a driver that re-enables interrupts
 *   after our store is not missed;
 * - a full fence separates the used->flags (or avail_event) store in
 *   vq_enable_notify() from its second load of avail->idx, so an element
 *   the driver made available without kicking (it saw kicks off) is seen.
 *
 * Notification suppression (virtio 1.x 2.7.7, 2.7.10): without
 * VIRTIO_F_RING_EVENT_IDX the flags words (VRING_AVAIL_F_NO_INTERRUPT from
 * the driver, VRING_USED_F_NO_NOTIFY from us); with it, the driver's
 * used_event (after the avail ring) says after which used index it wants
 * a call, and our avail_event (after the used ring) after which avail
 * index we want a kick; the flags are then ignored both ways.
 */
#ifndef RDMAGATE_WORKER_VIRTQ_H
#define RDMAGATE_WORKER_VIRTQ_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "worker/guest_mem.h"

/* Largest ring we accept (SET_VRING_NUM); a device may allow less. */
#define VQ_MAX_SIZE 1024u
/* Host buffers per popped chain (a buffer crossing regions takes several). */
#define VQ_MAX_IOV 1024u
/* Chains may not describe more than this many bytes (virtio: 2^32). */
#define VQ_MAX_CHAIN_BYTES 0xffffffffull

#define VRING_DESC_F_NEXT	   1u
#define VRING_DESC_F_WRITE	   2u
#define VRING_DESC_F_INDIRECT	   4u
#define VRING_AVAIL_F_NO_INTERRUPT 1u
#define VRING_USED_F_NO_NOTIFY	   1u

#define VIRTIO_F_RING_INDIRECT_DESC 28
#define VIRTIO_F_RING_EVENT_IDX	    29
#define VIRTIO_F_VERSION_1	    32
#define VIRTIO_F_RING_PACKED	    34

#define VIRTIO_STATUS_NEEDS_RESET 0x40u

struct vring_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	uint16_t next;
};
_Static_assert(sizeof(struct vring_desc) == 16, "vring desc");

/* Bytes of each ring part for a ring of num entries (no event fields). */
#define VQ_DESC_BYTES(num)  (16ull * (num))
#define VQ_AVAIL_BYTES(num) (4ull + 2ull * (num))
#define VQ_USED_BYTES(num)  (4ull + 8ull * (num))
/* With VIRTIO_F_RING_EVENT_IDX: used_event / avail_event after each ring. */
#define VQ_EVENT_BYTES 2ull

struct vq {
	unsigned int index;
	uint16_t num;	     /* power of 2, 1..VQ_MAX_SIZE */
	bool indirect_ok;    /* VIRTIO_F_RING_INDIRECT_DESC negotiated */
	bool ready;	     /* vq_setup() done, not yet vq_teardown() */
	bool broken;	     /* a violation was seen */
	bool event_idx;	     /* VIRTIO_F_RING_EVENT_IDX negotiated */
	bool sig_ok;	     /* sig_used is the index of a signal */
	uint16_t sig_used;   /* used_idx at the last vq_notify() */
	uint16_t last_avail; /* next avail entry we pop */
	uint16_t used_idx;   /* our copy of used->idx */
	uint8_t *desc;	     /* host pointers into guest memory */
	uint8_t *avail;
	uint8_t *used;
	int call_fd;	     /* eventfd we signal, or -1 */
	uint8_t *dev_status; /* where NEEDS_RESET goes; may be NULL */
	const struct guest_mem *mem;
	struct vring_desc *ind; /* copy of the current indirect table */
	const char *log_prefix; /* e.g. "queue" */
};

/* A popped chain: out[] readable (driver to device), then in[] writable. */
struct vq_elem {
	uint16_t head;
	unsigned int out_num;
	unsigned int in_num;
	uint64_t out_len;
	uint64_t in_len;
	struct iovec iov[VQ_MAX_IOV];
};

static inline struct iovec *vq_elem_out(struct vq_elem *e)
{
	return e->iov;
}

static inline struct iovec *vq_elem_in(struct vq_elem *e)
{
	return e->iov + e->out_num;
}

/* Zeroes vq (call_fd -1) for queue index; allocates nothing. */
void vq_init(struct vq *vq, unsigned int index);

/*
 * Makes vq usable on ring memory already translated to host pointers.
 * desc must be 16-byte, avail 2-byte and used 4-byte aligned and cover
 * VQ_*_BYTES(num) (the caller translated them that way).  last_avail and
 * used_idx start at base.  Returns 0, -EINVAL for a bad num or alignment,
 * -ENOMEM.
 */
int vq_setup(struct vq *vq, const struct guest_mem *mem, uint16_t num,
	     void *desc, void *avail, void *used, uint16_t base,
	     bool indirect_ok, uint8_t *dev_status);

/* Forgets the ring memory (the queue pops nothing); keeps call_fd. */
void vq_teardown(struct vq *vq);

/*
 * Pops the next available chain into elem.  Returns 1 with elem filled,
 * 0 if nothing is available (or the queue is not ready or broken), or
 * -EBADMSG after a violation (logged; the queue is broken from now on).
 */
int vq_pop(struct vq *vq, struct vq_elem *elem);

/* Returns elem to the driver as used with len bytes written. */
void vq_push(struct vq *vq, const struct vq_elem *elem, uint32_t len);

/*
 * Same by head index alone, for devices that complete chains later and
 * keep only the head (the caller returns heads it popped, once each).
 */
void vq_push_head(struct vq *vq, uint16_t head, uint32_t len);

/*
 * With on, the ring uses VIRTIO_F_RING_EVENT_IDX: call after vq_setup(),
 * whose avail and used parts the caller then translated with
 * VQ_EVENT_BYTES more each.
 */
void vq_set_event_idx(struct vq *vq, bool on);

/*
 * Signals call_fd if the driver wants it for the entries pushed since the
 * last vq_notify(): used_event with VIRTIO_F_RING_EVENT_IDX, else unless it
 * set VRING_AVAIL_F_NO_INTERRUPT.  Call once per round, after every push.
 */
void vq_notify(struct vq *vq);

/*
 * Entries were pushed that the device chose not to signal at all (a CQ the
 * guest did not arm): the next vq_notify() signals regardless of
 * used_event, so that the index of the last signal never falls 2^16
 * entries behind (vring_need_event() would then wrap).
 */
void vq_unsignalled(struct vq *vq);

/*
 * Driver kicks off while the device drains the ring: VRING_USED_F_NO_NOTIFY
 * (without event index; with it, avail_event is simply left behind).
 */
void vq_disable_notify(struct vq *vq);

/*
 * Kicks back on (NO_NOTIFY cleared, or avail_event = the next entry we
 * pop).  Returns true when an element is available now: the driver may
 * have made it available while kicks were off, so drain again.
 */
bool vq_enable_notify(struct vq *vq);

/*
 * True when the driver has made an element available that vq_pop() has not
 * taken (kicks on or off): what a device polling its rings looks at.
 */
bool vq_has_avail(const struct vq *vq);

/*
 * A device's look at a ring each round of a loop that may spin: while
 * polling, whether an element is available (the device looks again next
 * round), turning kicks off only on the spin's first round (start): the
 * flag shares a cache line with the used index the driver may be polling,
 * so it is not rewritten every round; otherwise kicks back on and the same
 * (one made available while they were off).
 */
bool vq_poll_ready(struct vq *vq, bool polling, bool start);

/* Copies up to len bytes from the iovec list into buf; returns the count. */
size_t iov_to_buf(const struct iovec *iov, unsigned int n, void *buf,
		  size_t len);
/* Copies up to len bytes from buf into the iovec list; returns the count. */
size_t buf_to_iov(const struct iovec *iov, unsigned int n, const void *buf,
		  size_t len);

#endif
