// SPDX-License-Identifier: MIT
/*
 * rdmagate-mux's workers: their slots and channels (attach, detach, the
 * MAD_SENDs they send), and the accounting and rate-limited logging of
 * every MAD's outcome.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/mux_proto.h"
#include "common/probes.h"
#include "mux/mux.h"
#include "mux/router.h"

static void say_suppressed(const char *who, uint64_t n)
{
	log_warnx("%s: %llu more refusal lines suppressed in %d s", who,
		  (unsigned long long)n, LOG_WINDOW_MS / 1000);
}

/* Whether a refusal line about who may be written, saying first what the
 * limiter hid before it. */
static bool rl_allow(struct ratelimit *rl, uint64_t now, const char *who)
{
	uint64_t hidden;

	if (!ratelimit_pass(rl, now, &hidden))
		return false;
	if (hidden)
		say_suppressed(who, hidden);
	return true;
}

struct worker *worker_by_id(struct mux *m, uint32_t id)
{
	size_t i;

	for (i = 0; i < MAX_WORKERS; i++)
		if (m->workers[i].used && m->workers[i].id == id)
			return &m->workers[i];
	return NULL;
}

/* The legacy probe's reason (enum rdmagate_mad_drop) for a mux drop. */
static uint32_t legacy_reason(uint32_t reason)
{
	switch (reason) {
	case RDMAGATE_MUX_DROP_MALFORMED:
	case RDMAGATE_MUX_DROP_CLASS:
	case RDMAGATE_MUX_DROP_ATTR:
		return RDMAGATE_MAD_DROP_BAD;
	case RDMAGATE_MUX_DROP_SPOOF:
	case RDMAGATE_MUX_DROP_ADDRESS:
		return RDMAGATE_MAD_DROP_POLICY;
	case RDMAGATE_MUX_DROP_TABLE_FULL:
	case RDMAGATE_MUX_DROP_WORKER_FULL:
		return RDMAGATE_MAD_DROP_QUEUE_FULL;
	default:
		return RDMAGATE_MAD_DROP_NO_ROUTE;
	}
}

void outcome(struct mux *m, const struct router_verdict *v)
{
	struct worker *w = worker_by_id(m, v->worker_id);
	const char *vm = w ? w->vm : "";
	char an[16], what[40];

	router_account(m->r, v);
	if (!v->reason) {
		RDMAGATE_MAD_ROUTED(vm, v->worker_id, v->mgmt_class, v->attr_id,
				    v->direction);
		if (v->direction == RDMAGATE_MUX_IN)
			RDMAGATE_MAD_ROUTE(vm, v->mgmt_class, v->attr_id);
		if (m->verbose)
			log_debug(
				"%s %s %s worker %u (%s)",
				v->direction == RDMAGATE_MUX_IN ? "in" : "out",
				router_attr_name(v->attr_id, an),
				v->direction == RDMAGATE_MUX_IN ? "to" : "from",
				v->worker_id, vm);
		return;
	}
	RDMAGATE_MAD_DROPPED(vm, v->worker_id, v->reason, v->attr_id,
			     v->direction);
	RDMAGATE_MAD_ROUTE_DROP(vm, legacy_reason(v->reason), v->mgmt_class);
	if (!rl_allow(w ? &w->rl : &m->rl_none, mono_ms(),
		      w ? w->vm : "(no worker)"))
		return;
	if (v->mgmt_class == ROUTER_CM_CLASS)
		snprintf(what, sizeof(what), "CM %s",
			 router_attr_name(v->attr_id, an));
	else if (v->mgmt_class)
		snprintf(what, sizeof(what), "a MAD of class 0x%02x",
			 v->mgmt_class);
	else
		snprintf(what, sizeof(what), "a message");
	if (w)
		log_warnx("%s worker %u (%s): %s (%s): %s",
			  v->direction == RDMAGATE_MUX_IN ? "dropped for"
							  : "refused from",
			  w->id, w->vm, what, router_reason_name(v->reason),
			  v->why);
	else
		log_warnx("dropped %s %s (%s): %s",
			  v->direction == RDMAGATE_MUX_IN ? "incoming"
							  : "outgoing",
			  what, router_reason_name(v->reason), v->why);
}

/* Says, once a window is over, what it suppressed (the timer's tick). */
void ratelimits_flush(struct mux *m)
{
	uint64_t now = mono_ms(), n;
	size_t i;

	if (ratelimit_flush(&m->rl_none, now, &n))
		say_suppressed("(no worker)", n);
	for (i = 0; i < MAX_WORKERS; i++)
		if (m->workers[i].used &&
		    ratelimit_flush(&m->workers[i].rl, now, &n))
			say_suppressed(m->workers[i].vm, n);
}

void worker_readable(struct mux *m, struct worker *w)
{
	int n;

	for (n = 0; n < BATCH && w->fd >= 0; n++) {
		struct router_verdict v;
		struct reason why;
		struct mp_msg msg;
		int ret;

		/* the table lets a worker send MAD_SEND only, without fds */
		ret = msg_conn_recv(&w->conn, w->fd, &msg, NULL, MSG_DONTWAIT,
				    &why);
		if (ret == 0)
			return;
		if (ret == -EPIPE) {
			log_info("worker %u (%s): channel closed: %s", w->id,
				 w->vm, why.msg);
			ep_del_close(m, &w->fd);
			worker_farewell(m, w);
			return;
		}
		if (ret < 0) {
			memset(&v, 0, sizeof(v));
			v.direction = RDMAGATE_MUX_OUT;
			v.worker_id = w->id;
			v.reason = RDMAGATE_MUX_DROP_MALFORMED;
			/* the verdict's text is shorter than a reason */
			snprintf(v.why, sizeof(v.why), "%.*s",
				 (int)sizeof(v.why) - 1, why.msg);
			outcome(m, &v);
			continue;
		}
		router_outgoing(m->r, w->id, &msg.u.mad_send, mono_ms(), &v);
		if (!v.reason)
			send_out(m, &v, &msg.u.mad_send);
		outcome(m, &v);
	}
}

static struct worker *worker_slot(struct mux *m)
{
	size_t i;

	for (i = 0; i < MAX_WORKERS; i++)
		if (!m->workers[i].used)
			return &m->workers[i];
	return NULL;
}

/* The fd must be our end of a SOCK_SEQPACKET AF_UNIX socketpair. */
static int check_channel(int fd, struct reason *why)
{
	int type = 0, domain = 0, sndbuf = WORKER_SNDBUF;
	socklen_t l1 = sizeof(type), l2 = sizeof(domain);

	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l1) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &l2) < 0) {
		return reason_fail(
			why, -EINVAL,
			"the fd is not an AF_UNIX SOCK_SEQPACKET socket");
	}
	if (domain != AF_UNIX || type != SOCK_SEQPACKET) {
		return reason_fail(
			why, -EINVAL,
			"the fd is not an AF_UNIX SOCK_SEQPACKET socket");
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)) <
		    0) {
		return reason_fail(why, -errno, "setting up the channel: %s",
				   strerror(errno));
	}
	return 0;
}

int worker_claim(struct mux *m, uint32_t id, const char *vm, bool rdmacm,
		 struct worker **ret, struct reason *why)
{
	struct worker *w = worker_by_id(m, id);
	int e;

	if (w && (strcmp(w->vm, vm) || !w->rdmacm != !rdmacm)) {
		return reason_fail(why, -EEXIST,
				   "worker %u is attached for vm %s%s", id,
				   w->vm,
				   w->rdmacm ? " as a QEMU pvrdma VM"
				   : rdmacm  ? " as a worker"
					     : "");
	}
	if (w) {
		*ret = w;
		return 1;
	}
	w = worker_slot(m);
	if (!w) {
		return reason_fail(why, -ENOSPC, "%d workers attached already",
				   MAX_WORKERS);
	}
	e = router_worker_add(m->r, id);
	if (e < 0) {
		return reason_fail(why, e, "worker %u: %s", id, strerror(-e));
	}
	memset(w, 0, sizeof(*w));
	w->used = true;
	w->id = id;
	w->fd = -1;
	w->rl = (struct ratelimit)RATELIMIT_WINDOW(LOG_WINDOW_MS, LOG_BURST);
	snprintf(w->vm, sizeof(w->vm), "%s", vm);
	*ret = w;
	return 0;
}

int worker_attach(struct mux *m, const struct mp_worker_attach *a, int *fd,
		  struct reason *why)
{
	struct worker *w;
	int ret;

	ret = check_channel(*fd, why);
	if (ret < 0)
		return ret;
	ret = worker_claim(m, a->worker_id, a->vm, false, &w, why);
	if (ret < 0)
		return ret;
	ep_del_close(m, &w->fd); /* replaced: the broker's replay */
	ret = msg_conn_open(&w->conn, &mp_protocol, *fd, 1u << MP_FROM_WORKER,
			    NULL);
	if (ret < 0) {
		return reason_fail(why, ret, "the channel: %s", strerror(-ret));
	}
	ret = ep_add(m, *fd, TAG_WORKER | (uint64_t)(w - m->workers) << 8);
	if (ret < 0) {
		return reason_fail(why, ret, "epoll: %s", strerror(-ret));
	}
	w->fd = TAKE_FD(*fd);
	log_info("worker %u (%s) attached", w->id, w->vm);
	return reason_fail(why, 0, "worker %u (%s) attached", w->id, w->vm);
}

int worker_detach(struct mux *m, uint32_t id, struct reason *why)
{
	struct worker *w = worker_by_id(m, id);

	if (!w) {
		return reason_fail(why, -ENOENT, "worker %u: not attached", id);
	}
	worker_farewell(m, w); /* none left if it was said at the close */
	router_worker_del(m->r, id);
	ep_del_close(m, &w->fd);
	rdmacm_release(m, w);
	log_info("worker %u (%s) detached", w->id, w->vm);
	reason_set(why, "worker %u (%s) detached", w->id, w->vm);
	w->used = false;
	return 0;
}
