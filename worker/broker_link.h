/* SPDX-License-Identifier: MIT */
/*
 * The worker's end of the broker channel (common/worker_proto.h): the
 * listening socket the broker made for it, the current broker connection,
 * the worker's counters the broker asks for, and the GID requests the
 * virtio-rdma device makes on the guest's behalf.  Runs in the sandboxed
 * worker, on its one thread.
 */
#ifndef RDMAGATE_WORKER_BROKER_LINK_H
#define RDMAGATE_WORKER_BROKER_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/reason.h"
#include "common/worker_proto.h"

/* How long a GID request waits for the broker (which itself waits up to
 * ~2 s for the GID to appear in the device's table). */
#define BROKER_LINK_GID_TIMEOUT_MS 5000

struct broker_link {
	int lfd; /* the listening socket; -1: no broker (standalone) */
	int cfd; /* the current broker connection, or -1 */
	struct msg_conn conn; /* cfd's peer and phase */
	int ep;		      /* the worker's epoll set */
	uint64_t conn_tag;    /* epoll tag of cfd */
	const char *vm;
	struct wp_counters *counters;
	uint32_t seq;
	/*
	 * WP_MUX_CHANNEL: the broker handed the worker its end of the mux
	 * channel.  fd is the callee's (to keep or close); without a
	 * callback it is closed.
	 */
	void (*on_mux_channel)(void *arg, int fd, uint32_t mux_worker_id);
	void *mux_arg;
	/*
	 * WP_GID_GONE: an address the broker granted left the host; the
	 * connected backend registers itself here (be_create) and stops
	 * using the GID.  Without a callback it is only logged.
	 */
	void (*on_gid_gone)(void *arg, const uint8_t gid[16]);
	void *gid_gone_arg;
};

/* No broker: GID requests fail with -ENOTCONN (the device then uses the
 * host's GID table as it is). */
#define BROKER_LINK_NONE                                                       \
	{                                                                      \
		.lfd = -1, .cfd = -1, .ep = -1                                 \
	}

static inline bool broker_link_on(const struct broker_link *bl)
{
	return bl->lfd >= 0;
}

/* A broker connects: accept it (root only), replacing any older one. */
void broker_link_accept(struct broker_link *bl);
/* The broker connection is readable: STATS requests, MUX_CHANNEL. */
void broker_link_readable(struct broker_link *bl);

/*
 * Asks the broker for (type WP_GID_ADD) or to release (WP_GID_DEL) a GID,
 * waiting up to BROKER_LINK_GID_TIMEOUT_MS (the guest's control command
 * waits with it; a broker that restarts meanwhile is accepted and asked
 * again).  Returns 0 with the host index for ADD, or -errno with why
 * (the broker's reason, or -ETIMEDOUT, -ENOTCONN).
 */
int broker_link_gid(struct broker_link *bl, uint32_t type,
		    const uint8_t gid[16], uint32_t gid_type,
		    uint32_t *host_index, struct reason *why);

#endif
