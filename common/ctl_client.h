/* SPDX-License-Identifier: MIT */
/*
 * The client side of the broker's control protocol
 * (docs/control-protocol.md), shared by rdmagatectl and
 * rdmagate-libvirt-hook; it runs in their process, root or not.
 *
 * ctl_connect() reaches the broker's socket, checks that its server runs as
 * uid 0 and says HELLO (the versions must match); ctl_request() sends one
 * request and receives exactly the reply type that answers it, decoded by
 * bp_decode().  Nothing here exits or prints: every failure returns a
 * negative errno and a sentence naming what failed (struct reason).
 * A timeout bounds every connect, send and receive (SO_SNDTIMEO,
 * SO_RCVTIMEO), for callers that must never hang (libvirt waits for its
 * hooks).
 */
#ifndef RDMAGATE_COMMON_CTL_CLIENT_H
#define RDMAGATE_COMMON_CTL_CLIENT_H

#include <stdint.h>

#include "common/broker_proto.h"

struct ctl_conn {
	int fd; /* -1 when closed */
	char path[BP_PATH_SIZE];
	unsigned int timeout_s; /* 0: wait as long as it takes */
};

/*
 * Connects to the broker at path, refuses a server that is not uid 0, sends
 * HELLO and checks the broker's version.  timeout_s (0 = none) bounds each
 * step.  Returns 0 with c open, or -errno with why saying what failed
 * ("cannot reach the broker at PATH: ...") and c closed.
 */
int ctl_connect(struct ctl_conn *c, const char *path, unsigned int timeout_s,
		struct reason *why);

/* Sends m as one datagram.  Returns 0 or -errno with why. */
int ctl_send(struct ctl_conn *c, const struct bp_msg *m, struct reason *why);

/*
 * Receives one message into m and decodes it.  An ERROR_REPLY is returned
 * as an error ("broker: TEXT (strerror)", -its status, -EPROTO if that is
 * 0); any type but want is an error too.  A status inside a reply of type
 * want is left to the caller (ctl_status()).  Returns 0 or -errno with why.
 */
int ctl_recv(struct ctl_conn *c, uint32_t want, struct bp_msg *m,
	     struct reason *why);

/* Sends the request m, then receives its reply (type + 1) into m. */
int ctl_request(struct ctl_conn *c, struct bp_msg *m, struct reason *why);

/*
 * A reply's status: 0, or -status with why "broker: TEXT (strerror)".
 */
int ctl_status(const struct bp_status *st, struct reason *why);

void ctl_close(struct ctl_conn *c);

/*
 * Checks the request m as the broker will, with the protocol's own
 * decoder, before it is sent (for clients that want to say where a bad
 * value came from).  Returns 0 or -errno with why.
 */
int ctl_check(const struct bp_msg *m, struct reason *why);

/*
 * Appends an address the VM will claim to a SPAWN request: text is one
 * IPv4 or IPv6 address as the policy writes it (policy_parse_addr(), not a
 * prefix).  Returns 0, -EINVAL (not an address) or -E2BIG (already
 * BP_SPAWN_ADDRS_MAX).
 */
int ctl_spawn_add_address(struct bp_spawn *s, const char *text);

#endif
