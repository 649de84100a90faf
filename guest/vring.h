/* SPDX-License-Identifier: MIT */
/*
 * The guest-driver half of the guest simulator: one split virtqueue
 * (virtio 1.x) laid out in guest RAM, with Linux's <linux/virtio_ring.h>
 * structures, its kick and call eventfds, and a driver API to post buffer
 * chains (direct or through an indirect table), notify, wait and reap.
 *
 * Memory ordering (driver side, the device runs in another process on the
 * same shared pages):
 *  - descriptors and the avail ring entry are written first, then avail->idx
 *    is published with a release store, so a device that reads the new idx
 *    with acquire semantics sees the entries;
 *  - before deciding whether to kick, a full fence orders the idx store
 *    against the load of used->flags (the device's NO_NOTIFY hint) or, with
 *    VIRTIO_F_RING_EVENT_IDX, of avail_event;
 *  - used->idx is read with an acquire load before the used entries;
 *  - with event index, used_event is stored and then fenced (Linux's
 *    virtio_store_mb()) before the next look at used->idx, so an entry the
 *    device pushes after reading the old used_event is not missed.
 * Suppression follows Linux's drivers/virtio/virtio_ring.c (split ring):
 * without event index the flags words; with it, used_event (written when
 * interrupts are wanted: on reap and on re-enable; 0 when disabled) and
 * avail_event (kick only when the new avail entries cross it).
 * One thread drives a queue; nothing here locks.
 */
#ifndef RDMAGATE_GUEST_VRING_H
#define RDMAGATE_GUEST_VRING_H

#include <linux/virtio_ring.h>
#include <stdbool.h>
#include <stdint.h>

#include "guest/guest_ram.h"

#define GUEST_VQ_MAX_NUM      32768u /* virtio's limit on a split ring */
#define GUEST_VQ_INDIRECT_MAX 16u    /* entries in one indirect table */

/* One element of a chain: guest-physical address and length. */
struct guest_sg {
	uint64_t gpa;
	uint32_t len;
};

/* What the device returned: the chain's head id, bytes written, cookie. */
struct guest_used {
	uint16_t id;
	uint32_t len;
	void *cookie;
};

/* Driver-private state of an outstanding chain, by head index. */
struct guest_vq_head {
	void *cookie;
	uint16_t ndesc; /* ring descriptors the chain holds (1 if indirect) */
	uint16_t tail;	/* its last ring descriptor */
	bool busy;
};

struct guest_vq {
	unsigned int index; /* virtqueue index on the device */
	uint16_t num;
	struct guest_ram *ram;

	/* guest-physical addresses, for SET_VRING_ADDR through the table */
	uint64_t desc_gpa, avail_gpa, used_gpa, indirect_gpa;
	/* our mappings of the same */
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	struct vring_desc *indirect; /* num tables of GUEST_VQ_INDIRECT_MAX */

	/* free list, private so that the device cannot corrupt it */
	uint16_t *free_next;
	uint16_t free_head, num_free;
	uint16_t avail_idx; /* driver's copy of avail->idx */
	uint16_t last_used; /* next used entry to reap */
	struct guest_vq_head *heads;

	int kick_fd; /* eventfds: we write kick, the device writes call */
	int call_fd;
	/* the device's socket (not ours: -1 for none), watched while
	 * waiting for a call: a device that died never calls again */
	int link_fd;
	unsigned long kicks, kicks_suppressed;
	bool event;	     /* VIRTIO_F_RING_EVENT_IDX negotiated */
	bool no_interrupt;   /* driver's shadow of "don't signal me" */
	uint16_t kicked_idx; /* avail_idx at the last kick decision */
};

/*
 * Lays out a ring of `num` entries (a power of 2, at most GUEST_VQ_MAX_NUM)
 * in guest RAM (descriptor table 16-byte aligned, avail 2, used 4, as the
 * virtio 1.x split layout requires, allocated back to back), an area for
 * indirect tables, and the two eventfds. Returns 0 or -errno.
 */
int guest_vq_init(struct guest_vq *q, struct guest_ram *ram, unsigned int index,
		  uint16_t num);
void guest_vq_release(struct guest_vq *q);

/*
 * Driver-side reset: rewrites the free list and zeroes both rings, as a
 * driver does before re-enabling a queue that the device has stopped.
 */
void guest_vq_reset(struct guest_vq *q);

/* Uses VIRTIO_F_RING_EVENT_IDX (negotiated) from now on; before kicks. */
void guest_vq_set_event_idx(struct guest_vq *q, bool on);

/*
 * "Don't signal me" on or off: VRING_AVAIL_F_NO_INTERRUPT, or with event
 * index used_event (0 when off, Linux's choice; last_used when on).
 */
void guest_vq_set_no_interrupt(struct guest_vq *q, bool on);

/*
 * Posts one chain: `nout` device-readable elements then `nin`
 * device-writable ones, through an indirect table when `indirect` (at most
 * GUEST_VQ_INDIRECT_MAX elements). The chain is published (avail->idx) but
 * not notified. Returns 0 and *ret_head, -ENOSPC when the ring is full,
 * -EINVAL for an empty or oversized chain.
 */
int guest_vq_post(struct guest_vq *q, const struct guest_sg *out,
		  unsigned int nout, const struct guest_sg *in,
		  unsigned int nin, bool indirect, void *cookie,
		  uint16_t *ret_head);

/*
 * Notifies the device unless it asked not to be: VRING_USED_F_NO_NOTIFY,
 * or with event index unless the entries published since the last kick
 * decision cross avail_event.  Returns 1 if kicked, 0 if suppressed,
 * -errno.
 */
int guest_vq_kick(struct guest_vq *q);

/*
 * Waits up to `timeout_ms` for the call eventfd and consumes it.
 * Returns 0, -ETIMEDOUT, -ENOTCONN (the device's socket, link_fd, hung
 * up: the device is gone) or -errno.
 */
int guest_vq_wait_call(struct guest_vq *q, int timeout_ms);
/* Has the device's socket (link_fd) hung up? */
bool guest_vq_link_down(const struct guest_vq *q);

/* Non-blocking: 0 if the call eventfd was signalled (consumed), -EAGAIN. */
int guest_vq_take_call(struct guest_vq *q);

/* Used entries not yet reaped (used->idx - last_used, acquire). */
uint16_t guest_vq_used_pending(const struct guest_vq *q);

/*
 * Reaps one used entry and recycles its descriptors. Returns 0, -EAGAIN
 * when none is pending, -EPROTO when the device returned an id that is not
 * an outstanding head (the simulator checks the device too).
 */
int guest_vq_reap(struct guest_vq *q, struct guest_used *ret);

/*
 * Polls the used ring until an entry is there (spinning, then sleeping
 * briefly) or `timeout_ms` passed, then reaps it. 0, -ETIMEDOUT, -EPROTO.
 */
int guest_vq_poll_reap(struct guest_vq *q, int timeout_ms,
		       struct guest_used *ret);

/*
 * For hostile tests: append `head` to the avail ring and advance avail->idx
 * by `step` (1 normally; more to fake an index jump), without touching the
 * descriptors, which the caller wrote through q->desc itself.
 */
void guest_vq_publish_raw(struct guest_vq *q, uint16_t head, uint16_t step);

#endif
