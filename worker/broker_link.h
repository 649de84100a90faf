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

/*
 * How long a GID claim holds the worker (its one thread: every ring and
 * completion of the guest waits meanwhile) for the broker's answer.  The
 * broker answers a refusal at once and a grant when the GID is listed
 * (tens of ms), and waits at most 2 s for the kernel to list it, so this
 * is longer; past it the claim is given up: GID_DEL goes to the broker
 * (which removes the address if it added it, unless the worker holds it
 * for the other GID type already) and the guest's command fails with
 * ETIMEDOUT.
 */
#define BROKER_LINK_GID_TIMEOUT_MS 2500
/*
 * Claims (GID_ADD) one VM may make: a burst of BROKER_LINK_CLAIM_BURST,
 * then one per BROKER_LINK_CLAIM_EVERY_MS (a token bucket).  With the
 * bound above, a guest that claims without end holds its worker at most
 * half of the time, and the broker, which adds and removes host addresses
 * for it, sees at most one claim per interval.  Releases are not metered:
 * each follows a claim, and an address must never stay behind.
 */
#define BROKER_LINK_CLAIM_BURST	   8u
#define BROKER_LINK_CLAIM_EVERY_MS 2000u

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
	/* the claim bucket: credit in ms, and when it was last filled (0:
	 * never, i.e. full) */
	uint64_t claim_credit_ms, claim_at_ms;
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
 * Asks the broker for a GID (type WP_GID_ADD), waiting up to
 * BROKER_LINK_GID_TIMEOUT_MS (the guest's control command waits with it;
 * a broker that restarts meanwhile is accepted and asked again; on the
 * timeout the claim is released with a GID_DEL unless `keep`: the
 * address is granted already, for a GID of the other type, and must stay
 * (issue 29 item 3)), or releases one
 * (WP_GID_DEL) without waiting: its answer is read, and a refusal logged,
 * from the loop.  Returns 0 with the host index for ADD, or -errno with
 * why: the broker's reason, -EAGAIN (the VM's claim rate, see
 * BROKER_LINK_CLAIM_BURST), -ETIMEDOUT, -ENOTCONN.
 */
int broker_link_gid(struct broker_link *bl, uint32_t type,
		    const uint8_t gid[16], uint32_t gid_type, bool keep,
		    uint32_t *host_index, struct reason *why);

/*
 * The backend's GID claims (struct be_gid_claims, backend.h) through this
 * link: be_cfg.gids = &broker_link_gid_claims, be_cfg.gids_arg = the
 * struct broker_link.
 */
extern const struct be_gid_claims broker_link_gid_claims;

/* Takes a claim token at now_ms: true, or false when the bucket is empty
 * (pure but for the bucket; the tests drive it with their own clock). */
bool broker_link_claim_token(struct broker_link *bl, uint64_t now_ms);

#endif
