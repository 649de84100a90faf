/* SPDX-License-Identifier: MIT */
/*
 * The worker's vhost-user protocol core (backend side, one frontend at a
 * time): bytes and fds in, state changes and actions out.  It does not own
 * the event loop and does no socket I/O: the loop hands it one received
 * message at a time (vu_handle()) and gets back the reply bytes to send and
 * whether to drop the connection; kick fds are (un)watched through the
 * vu_host_ops callbacks; kicks are delivered with vu_kick().
 *
 * Every request is validated against one table (payload size rule, fd count
 * rule, reply policy, protocol feature it needs, handler).  Reactions:
 * - malformed framing (version flags, size, fd count, unknown or
 *   unsupported request): logged, connection dropped;
 * - a well-formed request with a bad value (queue index, ring size,
 *   address not in guest memory, overlapping region, ...): logged, refused
 *   with no state change; a failure ack is sent if the frontend asked for
 *   one (REPLY_ACK), otherwise the connection is dropped, because the
 *   frontend would believe the request succeeded;
 * - guest ring violations (virtq.h): logged, queue stopped, device status
 *   gets NEEDS_RESET; the connection stays up.
 * Lines a frontend or guest causes go through log_peer_*() (common/log.h):
 * one rate limit for the whole worker, so for the VM it serves.
 * See docs/vhost-user.md.
 */
#ifndef RDMAGATE_WORKER_VU_PROTO_H
#define RDMAGATE_WORKER_VU_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/reason.h"
#include "common/vhost_user.h"
#include "worker/vhost_user/device.h"
#include "worker/guest_mem.h"
#include "worker/vhost_user/virtq.h"

/* Protocol features we offer. */
#define VU_PROTOCOL_FEATURES                                                   \
	((1ull << VHOST_USER_PROTOCOL_F_MQ) |                                  \
	 (1ull << VHOST_USER_PROTOCOL_F_REPLY_ACK) |                           \
	 (1ull << VHOST_USER_PROTOCOL_F_CONFIG) |                              \
	 (1ull << VHOST_USER_PROTOCOL_F_RESET_DEVICE) |                        \
	 (1ull << VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS) |                 \
	 (1ull << VHOST_USER_PROTOCOL_F_STATUS))

/* What the event loop provides. */
struct vu_host_ops {
	/* Start watching kick eventfd fd of queue q. Returns 0 or -errno. */
	int (*watch_kick)(void *ctx, unsigned int q, int fd);
	/* Stop watching it; called before the core closes fd. */
	void (*unwatch_kick)(void *ctx, unsigned int q, int fd);
};

struct vu_ring {
	struct vq vq;
	uint64_t desc_uva, avail_uva, used_uva;
	uint16_t num;
	uint16_t last_avail; /* kept while the ring is not running */
	uint16_t used_idx;
	int kick_fd;
	int err_fd;
	bool num_set;
	bool addr_set;
	bool kick_set;	  /* SET_VRING_KICK seen since the last stop */
	bool kick_nofd;	  /* ... with the "no fd" bit: polled */
	bool enabled;	  /* SET_VRING_ENABLE 1, or kicked (ABI §2.3) */
	bool enable_seen; /* SET_VRING_ENABLE received: obey it only */
	bool running;	  /* vq set up, device told ring_started */
};

struct vu_dev {
	const struct device_ops *ops;
	void *priv;
	const struct vu_host_ops *host;
	void *host_ctx;
	uint64_t features;	    /* virtio features acked */
	uint64_t protocol_features; /* protocol features acked */
	bool owner;
	uint8_t status;
	struct guest_mem mem;
	struct vu_ring *rings; /* ops->num_queues of them */
};

/* What the loop must do after vu_handle(). */
struct vu_result {
	bool disconnect;
	size_t reply_len; /* 0: nothing to send */
	union {
		struct vhost_user_msg msg;
		uint8_t bytes[sizeof(struct vhost_user_msg)];
	} reply;
};

/*
 * Checks a message's framing: header flags, size field against len,
 * payload size and fd count against the request table.  buf holds len
 * bytes (header + payload).  Returns 0, or -EINVAL with *why (may be NULL)
 * saying what is wrong.  Pure.
 */
int vu_check_framing(const void *buf, size_t len, unsigned int nfds,
		     struct reason *why);

/* New device state for a connection; creates the device's private state. */
int vu_dev_new(const struct device_ops *ops, const struct vu_host_ops *host,
	       void *host_ctx, struct vu_dev **ret_dev);
/* Same, handing env (event loop, device configuration) to ops->create. */
int vu_dev_new_env(const struct device_ops *ops, const struct vu_host_ops *host,
		   void *host_ctx, const struct dev_env *env,
		   struct vu_dev **ret_dev);
/* Stops every ring, closes every fd, unmaps guest memory, frees. */
void vu_dev_free(struct vu_dev *dev);

/*
 * Handles one message of len bytes (12-byte header + payload) that arrived
 * with nfds fds.  Takes ownership of the fds: each is kept or closed.
 */
void vu_handle(struct vu_dev *dev, const void *buf, size_t len, int *fds,
	       unsigned int nfds, struct vu_result *res);

/* The kick eventfd of queue q fired (the loop has drained it). */
void vu_kick(struct vu_dev *dev, unsigned int q);
/* True if a running ring has no kick fd and must be polled. */
bool vu_needs_poll(const struct vu_dev *dev);
/* Serves the rings that have no kick fd. */
void vu_poll(struct vu_dev *dev);

#endif
