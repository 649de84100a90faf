/* SPDX-License-Identifier: MIT */
/*
 * The worker's vfio-user protocol core (server side, one client at a
 * time): a message and its fds in, a reply out.  It does not own the event
 * loop and does no socket I/O: the loop hands it one received message at a
 * time (vfu_handle()) and gets back the reply bytes to send and whether to
 * drop the connection.
 *
 * Every command is checked against one table (payload size rule, fd count
 * rule, handler).  Reactions:
 * - malformed framing (size field against the bytes received, a message
 *   larger than VFIO_USER_MAX_MSG, not a request, unknown flag bits):
 *   logged, connection dropped, since the stream cannot be trusted;
 * - a framed request that is wrong (unknown or unsupported command, bad
 *   payload size, fds where none belong, a bad value): logged, refused
 *   with an error reply naming nothing but its errno, no state change;
 * - a request with NO_REPLY gets no reply either way (QEMU posts BAR
 *   writes so); a failure is only logged.
 * See docs/vfio-user.md.
 */
#ifndef RDMAGATE_WORKER_VFIO_USER_VFU_PROTO_H
#define RDMAGATE_WORKER_VFIO_USER_VFU_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/vfio_user.h"
#include "worker/dev_env.h"
#include "worker/vfio_user/pci.h"

struct vfu_dev {
	struct pci_fn fn;
	bool versioned; /* VERSION done: the other commands are allowed */
	struct vfio_user_caps client_caps;
};

/* What the loop must do after vfu_handle(). */
struct vfu_result {
	bool disconnect;
	size_t reply_len; /* 0: nothing to send */
	int reply_fd;	  /* sent with the reply (the device's), or -1 */
	union {
		struct vfio_user_header hdr;
		uint8_t bytes[VFIO_USER_MAX_MSG];
	} reply;
};

/*
 * Whether a message is well framed: length against the header's size field
 * and VFIO_USER_MAX_MSG, message type and flags.  0, or -EINVAL and why.
 * buf holds len bytes.  Pure.
 */
int vfu_check_framing(const void *buf, size_t len, struct reason *why);

/* New state for a client connection; creates the device. 0 or -errno. */
int vfu_dev_new(const struct pci_fn_ops *ops, const struct dev_env *env,
		struct vfu_dev **ret_dev);
/* Unmaps the DMA regions, closes every fd, destroys the device, frees. */
void vfu_dev_free(struct vfu_dev *dev);

/*
 * Handles one message of len bytes (16-byte header + payload) that arrived
 * with nfds fds.  Takes ownership of the fds: each is kept or closed.
 */
void vfu_handle(struct vfu_dev *dev, const void *buf, size_t len, int *fds,
		unsigned int nfds, struct vfu_result *res);

#endif
