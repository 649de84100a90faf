// SPDX-License-Identifier: MIT
/*
 * The worker's end of the broker channel (see worker/broker_link.h and
 * docs/broker.md "The worker channel").  The broker is the more privileged
 * peer, but its messages are still decoded and checked: a confused broker
 * must not crash a worker that is serving a guest.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/log.h"
#include "worker/broker_link.h"
#include "worker/backend/backend.h"

static void drop_conn(struct broker_link *bl, const char *why)
{
	if (bl->cfd < 0)
		return;
	log_info("broker channel closed: %s", why);
	if (bl->ep >= 0)
		epoll_ctl(bl->ep, EPOLL_CTL_DEL, bl->cfd, NULL);
	safe_close(bl->cfd);
	bl->cfd = -1;
}

void broker_link_accept(struct broker_link *bl)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = bl->conn_tag };
	struct msg_conn conn;
	struct reason why;
	struct wp_msg m;
	int fd;

	fd = accept4(bl->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	/* the broker's messages are root's alone: a peer of another uid is
	 * refused here */
	if (msg_conn_open(&conn, &wp_protocol, fd, 1u << WP_FROM_BROKER, &why) <
	    0) {
		log_warnx("broker channel: refused: %s", why.msg);
		close(fd);
		return;
	}
	drop_conn(bl, "a new broker connected");
	wp_init(&m, WP_HELLO);
	m.u.hello.pid = (uint32_t)getpid();
	snprintf(m.u.hello.vm, sizeof(m.u.hello.vm), "%s", bl->vm);
	if (wp_send(fd, &m) < 0 ||
	    (bl->ep >= 0 && epoll_ctl(bl->ep, EPOLL_CTL_ADD, fd, &ev) < 0)) {
		log_warn("broker channel: cannot greet the broker");
		close(fd);
		return;
	}
	bl->cfd = fd;
	bl->conn = conn;
	log_info("broker channel: broker pid %d connected", (int)conn.pid);
}

static void answer_stats(struct broker_link *bl, const struct wp_msg *req)
{
	struct wp_msg m;

	wp_init(&m, WP_STATS_REPLY);
	m.u.stats_reply.seq = req->u.stats.seq;
	if (bl->counters)
		m.u.stats_reply.c = *bl->counters;
	if (wp_send(bl->cfd, &m) < 0)
		log_warnx("broker channel: cannot answer STATS");
}

/* MUX_CHANNEL: its fd (the table says it has one). */
static void take_mux_channel(struct broker_link *bl, const struct wp_msg *m,
			     int fd)
{
	if (!bl->on_mux_channel) {
		log_warnx("broker channel: MUX_CHANNEL, but this worker has "
			  "no QP1 to serve (no verbs device); fd closed");
		close(fd);
		return;
	}
	log_info("broker channel: new mux channel (mux worker id %u)",
		 m->u.mux_channel.mux_worker_id);
	bl->on_mux_channel(bl->mux_arg, fd, m->u.mux_channel.mux_worker_id);
}

/* GID_GONE: the backend stops using that GID (docs/broker.md). */
static void take_gid_gone(struct broker_link *bl, const struct wp_msg *m)
{
	char txt[INET6_ADDRSTRLEN];
	uint8_t addr[16];
	int family = wp_gid_to_addr(m->u.gid.gid, addr);

	if (!inet_ntop(family, addr, txt, sizeof(txt)))
		snprintf(txt, sizeof(txt), "?");
	log_warnx("broker channel: address %s left the host: its GIDs are "
		  "dead for the guest",
		  txt);
	if (bl->on_gid_gone)
		bl->on_gid_gone(bl->gid_gone_arg, m->u.gid.gid);
}

/*
 * Reads one message from the broker.  Returns 1 with *m for a reply the
 * caller may want, 0 when it was handled or refused (or nothing was
 * there), -EPIPE when the connection is gone.  msg_conn_recv() refuses what
 * the table does not allow (a worker's type, an fd with anything but
 * MUX_CHANNEL, a MUX_CHANNEL without one).
 */
static int read_one(struct broker_link *bl, struct wp_msg *m)
{
	struct reason why;
	int fd = -1;
	int n;

	n = msg_conn_recv(&bl->conn, bl->cfd, m, &fd, MSG_DONTWAIT, &why);
	if (n == 0)
		return 0;
	if (n == -EPIPE) {
		drop_conn(bl, why.msg);
		return -EPIPE;
	}
	if (n < 0) {
		log_warnx("broker channel: bad message: %s", why.msg);
		return 0;
	}
	if (m->h.type == WP_MUX_CHANNEL) {
		take_mux_channel(bl, m, fd);
		return 0;
	}
	if (m->h.type == WP_STATS) {
		answer_stats(bl, m);
		return 0;
	}
	if (m->h.type == WP_GID_GONE) {
		take_gid_gone(bl, m);
		return 0;
	}
	return 1;
}

/*
 * A reply nobody waits for: every GID_DEL's (releases do not wait), and a
 * GID_ADD's that came after its claim was given up (and released).
 */
static void late_reply(const struct wp_msg *m)
{
	if (m->h.type == WP_GID_DEL_REPLY && m->u.gid_reply.status)
		log_warnx("broker channel: a GID release (seq %u) was "
			  "refused: %s",
			  m->u.gid_reply.seq, m->u.gid_reply.text);
	else
		log_debug("broker channel: %s (seq %u) after its request was "
			  "given up",
			  wp_type_name(m->h.type), m->u.gid_reply.seq);
}

void broker_link_readable(struct broker_link *bl)
{
	struct wp_msg m;
	int ret;

	while (bl->cfd >= 0 && (ret = read_one(bl, &m)) != 0) {
		if (ret > 0)
			late_reply(&m);
	}
}

static int send_request(struct broker_link *bl, uint32_t type,
			const uint8_t gid[16], uint32_t gid_type)
{
	struct wp_msg m;

	wp_init(&m, type);
	m.u.gid.seq = ++bl->seq;
	m.u.gid.gid_type = gid_type;
	memcpy(m.u.gid.gid, gid, 16);
	return wp_send(bl->cfd, &m);
}

bool broker_link_claim_token(struct broker_link *bl, uint64_t now_ms)
{
	const uint64_t cap =
		(uint64_t)BROKER_LINK_CLAIM_BURST * BROKER_LINK_CLAIM_EVERY_MS;

	if (!bl->claim_at_ms)
		bl->claim_credit_ms = cap;
	else if (now_ms > bl->claim_at_ms)
		bl->claim_credit_ms += now_ms - bl->claim_at_ms;
	if (bl->claim_credit_ms > cap)
		bl->claim_credit_ms = cap;
	bl->claim_at_ms = now_ms ? now_ms : 1;
	if (bl->claim_credit_ms < BROKER_LINK_CLAIM_EVERY_MS)
		return false;
	bl->claim_credit_ms -= BROKER_LINK_CLAIM_EVERY_MS;
	return true;
}

/* A release: sent, not waited for (late_reply() reads its answer). */
static int release(struct broker_link *bl, const uint8_t gid[16],
		   uint32_t gid_type, struct reason *why)
{
	if (bl->cfd < 0)
		return reason_fail(why, -ENOTCONN,
				   "no broker connected: the address stays "
				   "until the broker sees this worker end");
	if (send_request(bl, WP_GID_DEL, gid, gid_type) < 0)
		return reason_fail(why, -EAGAIN,
				   "the broker's queue is full: the address "
				   "stays until this worker ends");
	return 0;
}

int broker_link_gid(struct broker_link *bl, uint32_t type,
		    const uint8_t gid[16], uint32_t gid_type, bool keep,
		    uint32_t *host_index, struct reason *why)
{
	uint64_t deadline = mono_ms() + BROKER_LINK_GID_TIMEOUT_MS;
	uint32_t want = WP_GID_ADD_REPLY;
	bool sent = false;

	if (!broker_link_on(bl))
		return reason_fail(why, -ENOTCONN, "no broker");
	if (type == WP_GID_DEL)
		return release(bl, gid, gid_type, why);
	if (!broker_link_claim_token(bl, mono_ms()))
		return reason_fail(why, -EAGAIN,
				   "this VM's GID claims are limited to %u at "
				   "once and then one per %u ms",
				   BROKER_LINK_CLAIM_BURST,
				   BROKER_LINK_CLAIM_EVERY_MS);
	for (;;) {
		struct pollfd p[2] = { { bl->lfd, POLLIN, 0 },
				       { bl->cfd, POLLIN, 0 } };
		uint64_t now = mono_ms();
		struct wp_msg m;
		int n;

		if (bl->cfd >= 0 && !sent) {
			if (send_request(bl, type, gid, gid_type) < 0)
				drop_conn(bl, "cannot send a GID request");
			else
				sent = true;
		}
		if (now >= deadline) {
			/* given up: what the broker may still grant goes
			 * back (it removes an address it is adding) */
			if (sent && bl->cfd >= 0 && !keep)
				send_request(bl, WP_GID_DEL, gid, gid_type);
			return reason_fail(
				why, -ETIMEDOUT,
				"the broker did not answer in %d ms%s",
				BROKER_LINK_GID_TIMEOUT_MS,
				bl->cfd < 0 ? " (no broker connected)" : "");
		}
		n = poll(p, bl->cfd >= 0 ? 2 : 1, (int)(deadline - now));
		if (n < 0 && errno != EINTR)
			return reason_fail(why, -errno, "poll: %s",
					   strerror(errno));
		if (n <= 0)
			continue;
		if (p[0].revents & POLLIN) {
			int old = bl->cfd;

			broker_link_accept(bl);
			if (bl->cfd != old)
				sent = false; /* a new broker: ask it */
			continue;
		}
		if (bl->cfd < 0 || !p[1].revents)
			continue;
		n = read_one(bl, &m);
		if (n < 0) {
			sent = false;
			continue;
		}
		if (n == 0 || m.h.type != want || m.u.gid_reply.seq != bl->seq)
			continue; /* a reply to an older request */
		if (m.u.gid_reply.status)
			return reason_fail(why, -(int)m.u.gid_reply.status,
					   "%s", m.u.gid_reply.text);
		if (host_index)
			*host_index = m.u.gid_reply.host_index;
		return 0;
	}
}

/* ---- the backend's GID claims (be_gid_claims) ---- */

static bool claims_on(void *arg)
{
	return broker_link_on(arg);
}

static int claim(void *arg, bool add, const uint8_t gid[16], uint32_t gid_type,
		 bool keep, uint32_t *host_index, struct reason *why)
{
	return broker_link_gid(arg, add ? WP_GID_ADD : WP_GID_DEL, gid,
			       gid_type, keep, host_index, why);
}

static void watch_gone(void *arg, struct be *be,
		       void (*gone)(void *be, const uint8_t gid[16]))
{
	struct broker_link *bl = arg;

	if (gone) {
		bl->on_gid_gone = gone;
		bl->gid_gone_arg = be;
	} else if (bl->gid_gone_arg == be) {
		bl->on_gid_gone = NULL;
		bl->gid_gone_arg = NULL;
	}
}

const struct be_gid_claims broker_link_gid_claims = {
	.on = claims_on,
	.claim = claim,
	.watch_gone = watch_gone,
};
