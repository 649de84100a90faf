// SPDX-License-Identifier: MIT
/*
 * The broker's end of the broker channel (common/worker_proto.h): the
 * listening socket made for each worker (the worker holds it; the broker
 * connects, and a restarted broker connects again), the worker's requests
 * (GIDs: broker/gids.c) and STATS, which gathers every worker's counters
 * for one control request.  Everything a worker sends is decoded by the
 * protocol's table and checked before it is acted on.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "broker/broker.h"
#include "common/cleanup.h"
#include "common/log.h"

/*
 * A STATS_REPLY carries the counters a worker sent on its channel: the two
 * protocols each define their own type, with one layout, so the broker
 * copies one into the other.  Every field at the same place, and no more.
 */
#define SAME_COUNTER(f)                                                        \
	_Static_assert(offsetof(struct bp_counters, f) ==                      \
			       offsetof(struct wp_counters, f),                \
		       #f)
SAME_COUNTER(connects);
SAME_COUNTER(commands);
SAME_COUNTER(command_errors);
SAME_COUNTER(sends);
SAME_COUNTER(send_errors);
SAME_COUNTER(send_bytes);
SAME_COUNTER(recvs);
SAME_COUNTER(recv_errors);
SAME_COUNTER(srq_recvs);
SAME_COUNTER(completions);
SAME_COUNTER(completion_errors);
SAME_COUNTER(cq_overflows);
SAME_COUNTER(missing_completions);
SAME_COUNTER(mads_sent);
SAME_COUNTER(mads_received);
SAME_COUNTER(mad_errors);
SAME_COUNTER(gid_adds);
SAME_COUNTER(gid_errors);
SAME_COUNTER(async_events);
_Static_assert(sizeof(struct bp_counters) == sizeof(struct wp_counters),
	       "bp_counters and wp_counters");

static unsigned int index_of(const struct broker *b, const struct worker *w)
{
	return (unsigned int)(w - b->workers);
}

int channel_make(struct broker *b, struct worker *w, int *ret_lfd,
		 struct reason *why)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;
	mode_t old;
	int ret = 0;

	if ((size_t)snprintf(w->chan_path, sizeof(w->chan_path),
			     "%s/workers/%s.channel", b->state_dir,
			     w->vm) >= sizeof(sa.sun_path)) {
		w->chan_path[0] = '\0';
		return reason_fail(why, -ENAMETOOLONG,
				   "channel path %s/workers/%s.channel is too "
				   "long for a socket",
				   b->state_dir, w->vm);
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", w->chan_path);
	/* the directory is the broker's alone: whatever is there is stale */
	if (unlink(w->chan_path) < 0 && errno != ENOENT)
		return reason_fail(why, -errno, "removing %s: %s", w->chan_path,
				   strerror(errno));
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return reason_fail(why, -errno, "channel socket: %s",
				   strerror(errno));
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 4) < 0)
		ret = -errno;
	umask(old);
	if (ret < 0)
		return reason_fail(why, ret, "channel %s: %s", w->chan_path,
				   strerror(-ret));
	*ret_lfd = TAKE_FD(fd);
	return 0;
}

int channel_connect(struct broker *b, struct worker *w)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct epoll_event ev = { .events = EPOLLIN };
	_cleanup_close_ int fd = -1;
	int ret;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", w->chan_path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	ret = msg_conn_open(&w->chan, &wp_protocol, fd, 1u << WP_FROM_WORKER,
			    NULL);
	if (ret < 0)
		return ret;
	ev.data.u64 = ((uint64_t)TAG_CHANNEL << 32) | index_of(b, w);
	if (epoll_ctl(b->ep, EPOLL_CTL_ADD, fd, &ev) < 0)
		return -errno;
	w->chan_fd = TAKE_FD(fd);
	w->hello = false;
	return 0;
}

void channel_close(struct broker *b, struct worker *w)
{
	if (w->chan_fd < 0)
		return;
	epoll_ctl(b->ep, EPOLL_CTL_DEL, w->chan_fd, NULL);
	w->chan_fd = safe_close(w->chan_fd);
	w->hello = false;
	w->chan_retry_ms = 0;
}

/*
 * The worker closed its end (or the socket failed) while it runs: it may
 * have a new connection again, from the broker as at a restart, a second
 * later (at most one a second: a worker that accepts and closes in a loop
 * costs the broker nothing much).
 */
static void channel_lost(struct broker *b, struct worker *w)
{
	channel_close(b, w);
	if (w->state == BP_STATE_RUNNING)
		w->chan_retry_ms = mono_ms() + BROKER_CHANNEL_RETRY_MS;
}

int channel_timeout(struct broker *b)
{
	uint64_t now = mono_ms(), next = UINT64_MAX;
	unsigned int i;

	for (i = 0; i < BROKER_MAX_WORKERS; i++)
		if (b->workers[i].used && b->workers[i].chan_retry_ms &&
		    b->workers[i].chan_retry_ms < next)
			next = b->workers[i].chan_retry_ms;
	return timeout_until_ms(next, now);
}

void channel_retry(struct broker *b)
{
	uint64_t now = mono_ms();
	unsigned int i;
	int ret;

	for (i = 0; i < BROKER_MAX_WORKERS; i++) {
		struct worker *w = &b->workers[i];

		if (!w->used || !w->chan_retry_ms || now < w->chan_retry_ms)
			continue;
		w->chan_retry_ms = 0;
		if (w->chan_fd >= 0 || w->state != BP_STATE_RUNNING)
			continue;
		ret = channel_connect(b, w);
		if (ret < 0) {
			worker_logx(w, LOG_LVL_WARN,
				    "worker/%s: connecting its channel again: "
				    "%s",
				    w->vm, strerror(-ret));
			w->chan_retry_ms = now + BROKER_CHANNEL_RETRY_MS;
		} else {
			worker_logx(w, LOG_LVL_INFO,
				    "worker/%s: channel connected again",
				    w->vm);
		}
	}
}

int channel_send(struct broker *b, struct worker *w, struct wp_msg *m)
{
	int ret;

	if (w->chan_fd < 0)
		return -ENOTCONN;
	ret = wp_send(w->chan_fd, m);
	if (ret < 0)
		worker_logx(w, LOG_LVL_WARN,
			    "worker/%s: channel: cannot send %s: %s%s", w->vm,
			    wp_type_name(m->h.type), strerror(-ret),
			    ret == -EAGAIN ? " (it does not read its channel)"
					   : "");
	return ret;
}

static void bad_message(struct worker *w, const char *err)
{
	worker_logx(w, LOG_LVL_WARN,
		    "worker/%s (pid %d): channel: refused a message: %s", w->vm,
		    (int)w->pid, err);
}

static void on_hello(struct broker *b, struct worker *w,
		     const struct wp_hello *h)
{
	if (strcmp(h->vm, w->vm) || h->pid != (uint32_t)w->pid) {
		struct reason why;

		reason_fail(&why, -EINVAL,
			    "HELLO says vm %.64s pid %u, expected pid %d",
			    h->vm, h->pid, (int)w->pid);
		bad_message(w, why.msg);
		/* the next message must be a HELLO again */
		msg_conn_restart(&w->chan);
		return;
	}
	w->hello = true;
	if (w->spawn_ms) {
		/* its first HELLO: it opened its device, entered its sandbox
		 * and runs its event loop, i.e. it serves */
		log_info("worker/%s: ready %llu ms after the spawn request",
			 w->vm, (unsigned long long)(mono_ms() - w->spawn_ms));
		w->spawn_ms = 0;
	} else {
		log_debug("worker/%s: channel up", w->vm);
	}
	/* its mux channel, if the mux attached it before the worker was up */
	mux_link_worker_hello(b, w);
}

void channel_read(struct broker *b, unsigned int i)
{
	struct reason why;
	struct worker *w;
	struct wp_msg m;
	int n;

	if (i >= BROKER_MAX_WORKERS || !b->workers[i].used ||
	    b->workers[i].chan_fd < 0)
		return;
	w = &b->workers[i];
	/* the table refuses the broker's own types, any fd, and anything
	 * before HELLO */
	n = msg_conn_recv(&w->chan, w->chan_fd, &m, NULL, MSG_DONTWAIT, &why);
	if (n == 0)
		return;
	if (n == -EPIPE) {
		worker_logx(w, LOG_LVL_INFO, "worker/%s: channel: %s", w->vm,
			    why.msg);
		channel_lost(b, w);
		return;
	}
	if (n < 0) {
		bad_message(w, why.msg);
		return;
	}
	switch (m.h.type) {
	case WP_HELLO:
		on_hello(b, w, &m.u.hello);
		break;
	case WP_GID_ADD:
		gids_add(b, w, &m.u.gid);
		break;
	case WP_GID_DEL:
		gids_del(b, w, &m.u.gid);
		break;
	case WP_STATS_REPLY:
		w->stats = m.u.stats_reply.c;
		w->stats_seq = m.u.stats_reply.seq;
		stats_check(b);
		break;
	}
}

/* ---- STATS ----------------------------------------------------------------
 */

static uint32_t stats_seq;

/* The workers a STATS answers: the one asked for, or every one the
 * caller may read (root: all; else those whose QEMU identity it is). */
static bool stats_target(const struct broker *b, const struct conn *c,
			 const struct worker *w)
{
	return w->used && (!c->stats_vm[0] || !strcmp(c->stats_vm, w->vm)) &&
	       control_caller_owns(c, policy_lookup_vm(b->pol, w->vm));
}

static void stats_reply(struct broker *b, int conn, int status,
			const char *text)
{
	struct bp_msg m;

	bp_init(&m, BP_STATS_REPLY);
	bp_set_status(&m.u.stats_reply.st, status, "%s", text);
	control_reply(b, conn, &m);
}

void stats_start(struct broker *b, int conn, const char *vm)
{
	struct conn *c = &b->conns[conn];
	unsigned int i, n = 0;
	struct wp_msg m;

	if (c->stats_busy) {
		stats_reply(b, conn, EBUSY, "a STATS request is in progress");
		return;
	}
	if (vm[0] && !control_caller_owns(c, policy_lookup_vm(b->pol, vm))) {
		struct reason why;

		control_not_owner(c, vm, &why);
		stats_reply(b, conn, EPERM, why.msg);
		return;
	}
	if (vm[0] && !workers_find(b, vm)) {
		stats_reply(b, conn, ESRCH, "no such worker");
		return;
	}
	c->stats_busy = true;
	c->stats_seq = ++stats_seq;
	c->stats_deadline = mono_ms() + BROKER_STATS_WAIT_MS;
	snprintf(c->stats_vm, sizeof(c->stats_vm), "%s", vm);
	wp_init(&m, WP_STATS);
	m.u.stats.seq = c->stats_seq;
	for (i = 0; i < BROKER_MAX_WORKERS; i++) {
		struct worker *w = &b->workers[i];

		if (stats_target(b, c, w) && w->hello)
			n += channel_send(b, w, &m) == 0;
	}
	log_debug("STATS for pid %d: asked %u workers", (int)c->pid, n);
	stats_check(b);
}

static void stats_finish(struct broker *b, int conn)
{
	struct conn *c = &b->conns[conn];
	unsigned int i, total = 0, idx = 0;
	struct bp_msg m;

	c->stats_busy = false;
	for (i = 0; i < BROKER_MAX_WORKERS; i++)
		total += stats_target(b, c, &b->workers[i]);
	bp_init(&m, BP_STATS_REPLY);
	bp_set_status(&m.u.stats_reply.st, 0, "%u workers", total);
	m.u.stats_reply.total = total;
	if (!total) {
		control_reply(b, conn, &m);
		return;
	}
	for (i = 0; i < BROKER_MAX_WORKERS; i++) {
		const struct worker *w = &b->workers[i];
		struct bp_stats_reply *r = &m.u.stats_reply;

		if (!stats_target(b, c, w))
			continue;
		r->index = idx++;
		r->pid = (uint32_t)w->pid;
		r->flags = w->stats_seq == c->stats_seq ? BP_STATS_FRESH : 0;
		memset(r->vm, 0, sizeof(r->vm));
		snprintf(r->vm, sizeof(r->vm), "%s", w->vm);
		memcpy(&r->c, &w->stats, sizeof(r->c));
		control_reply(b, conn, &m);
		if (b->conns[conn].fd < 0)
			return; /* the client went away mid-answer */
	}
}

void stats_check(struct broker *b)
{
	uint64_t now = mono_ms();
	unsigned int i, j;

	for (i = 0; i < BROKER_MAX_CONNS; i++) {
		struct conn *c = &b->conns[i];
		bool done = true;

		if (c->fd < 0 || !c->stats_busy)
			continue;
		for (j = 0; j < BROKER_MAX_WORKERS && done; j++) {
			const struct worker *w = &b->workers[j];

			if (stats_target(b, c, w) && w->hello &&
			    w->stats_seq != c->stats_seq)
				done = false;
		}
		if (done || now >= c->stats_deadline)
			stats_finish(b, (int)i);
	}
}

int stats_timeout(struct broker *b)
{
	uint64_t now = mono_ms(), next = UINT64_MAX;
	unsigned int i;

	for (i = 0; i < BROKER_MAX_CONNS; i++)
		if (b->conns[i].fd >= 0 && b->conns[i].stats_busy &&
		    b->conns[i].stats_deadline < next)
			next = b->conns[i].stats_deadline;
	return timeout_until_ms(next, now);
}

void stats_conn_gone(struct broker *b, int conn)
{
	b->conns[conn].stats_busy = false;
}
