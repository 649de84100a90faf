// SPDX-License-Identifier: MIT
/*
 * rdmagate-mux's second endpoint: QEMU's rdmacm-mux protocol
 * (common/rdmacm_mux_proto.h), for VMs whose QEMU (<= 9.0) runs the
 * in-process pvrdma device.  Such a VM is a "worker" of the router like any
 * other (the broker attaches it with RDMACM_ATTACH and gives it GIDs with
 * GID_ADD): the same routing, anti-spoofing, counters and probes; only the
 * channel differs.  A QEMU may REG only the GIDs the broker gave its VM,
 * and may send only from them (the router refuses anything else).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/ib_cm.h"
#include "common/log.h"
#include "common/probes.h"
#include "common/rdmacm_mux_proto.h"
#include "mux/mux.h"
#include "mux/rdmacm_route.h"

/*
 * Records queued for one QEMU: at most one incoming MAD (a MAD is only
 * queued when nothing is pending) plus responses; a request is only read
 * when a response fits, so QEMU, which blocks for its response, always
 * gets one, and a QEMU that stops reading stops being read.
 */
#define TX_RECORDS 4

struct rdmacm_vm {
	int lfd; /* the listening socket the broker bound */
	int cfd; /* the QEMU connected to it, or -1 */
	uint32_t uid;
	pid_t pid;
	size_t rx_len;
	size_t tx_len;
	uint8_t rx[RCM_MSG_SIZE];
	uint8_t tx[TX_RECORDS * RCM_MSG_SIZE];
	struct rcm_peers peers;
};

static uint64_t idx_of(struct mux *m, struct worker *w)
{
	return (uint64_t)(w - m->workers) << 8;
}

/* The fd must be a listening AF_UNIX SOCK_STREAM socket. */
static int check_listener(int fd, struct reason *why)
{
	int type = 0, domain = 0, acc = 0;
	socklen_t l1 = sizeof(type), l2 = sizeof(domain), l3 = sizeof(acc);

	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l1) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &l2) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &l3) < 0 ||
	    domain != AF_UNIX || type != SOCK_STREAM || !acc) {
		return reason_fail(
			why, -EINVAL,
			"the fd is not a listening AF_UNIX SOCK_STREAM "
			"socket");
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) {
		return reason_fail(why, -errno, "the listening socket: %s",
				   strerror(errno));
	}
	return 0;
}

static void client_close(struct mux *m, struct worker *w, const char *why)
{
	struct rdmacm_vm *q = w->rdmacm;

	if (q->cfd < 0)
		return;
	log_info("vm %s (worker %u): QEMU pid %d disconnected%s%s", w->vm,
		 w->id, (int)q->pid, why ? ": " : "", why ? why : "");
	ep_del_close(m, &q->cfd);
	q->rx_len = 0;
	q->tx_len = 0;
	memset(&q->peers, 0, sizeof(q->peers));
}

void rdmacm_release(struct mux *m, struct worker *w)
{
	if (!w->rdmacm)
		return;
	client_close(m, w, "the VM was detached");
	ep_del_close(m, &w->rdmacm->lfd);
	free(w->rdmacm);
	w->rdmacm = NULL;
}

int rdmacm_attach(struct mux *m, const struct mp_rdmacm_attach *a, int *fd,
		  struct reason *why)
{
	struct worker *w;
	int ret;

	/* the fd is there: the table says RDMACM_ATTACH carries one */
	ret = check_listener(*fd, why);
	if (ret < 0)
		return ret;
	ret = worker_claim(m, a->worker_id, a->vm, true, &w, why);
	if (ret < 0)
		return ret;
	if (ret) {
		/* the broker's replay: a new socket replaces the old one */
		client_close(m, w, "the broker replaced its socket");
		ep_del_close(m, &w->rdmacm->lfd);
	} else {
		w->rdmacm = calloc(1, sizeof(*w->rdmacm));
		if (!w->rdmacm) {
			router_worker_del(m->r, a->worker_id);
			w->used = false;
			return reason_fail(why, -ENOMEM, "out of memory");
		}
		w->rdmacm->lfd = -1;
		w->rdmacm->cfd = -1;
	}
	w->rdmacm->uid = a->uid;
	ret = ep_add(m, *fd, TAG_RDMACM_LISTEN | idx_of(m, w));
	if (ret < 0) {
		return reason_fail(why, ret, "epoll: %s", strerror(-ret));
	}
	w->rdmacm->lfd = TAKE_FD(*fd);
	log_info("vm %s (worker %u): rdmacm-mux endpoint for QEMU's pvrdma "
		 "(uid %u)",
		 w->vm, w->id, a->uid);
	return reason_fail(why, 0, "vm %s (worker %u): rdmacm-mux endpoint",
			   w->vm, w->id);
}

void rdmacm_on_listen(struct mux *m, struct worker *w)
{
	struct rdmacm_vm *q = w->rdmacm;
	int sndbuf = 64 * 1024;

	for (;;) {
		_cleanup_close_ int fd = -1;
		struct ucred cr;
		socklen_t len = sizeof(cr);

		fd = accept4(q->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0) {
			log_warn("vm %s: SO_PEERCRED", w->vm);
			continue;
		}
		if (cr.uid != q->uid) {
			log_warnx(
				"vm %s (worker %u): refused a QEMU connection "
				"from pid %d uid %u: only uid %u may connect",
				w->vm, w->id, cr.pid, cr.uid, q->uid);
			continue;
		}
		if (q->cfd >= 0) {
			log_warnx("vm %s (worker %u): refused a second QEMU "
				  "connection (pid %d): pid %d is connected",
				  w->vm, w->id, cr.pid, (int)q->pid);
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
		if (ep_add(m, fd, TAG_RDMACM_CLIENT | idx_of(m, w)) < 0) {
			log_warn("vm %s: epoll", w->vm);
			continue;
		}
		q->cfd = TAKE_FD(fd);
		q->pid = cr.pid;
		q->rx_len = 0;
		q->tx_len = 0;
		log_info("vm %s (worker %u): QEMU pid %d connected", w->vm,
			 w->id, cr.pid);
	}
}

/* Writes what is queued; 0, or -errno after which the client is gone. */
static int flush(struct mux *m, struct worker *w)
{
	struct rdmacm_vm *q = w->rdmacm;

	while (q->tx_len) {
		ssize_t n = send(q->cfd, q->tx, q->tx_len,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		if (n <= 0) {
			int e = n < 0 ? errno : EPIPE;

			client_close(m, w, strerror(e));
			return -e;
		}
		memmove(q->tx, q->tx + n, q->tx_len - (size_t)n);
		q->tx_len -= (size_t)n;
	}
	return 0;
}

/* Polls for reading only while a response fits, for writing while
 * something is queued. */
static void rearm(struct mux *m, struct worker *w)
{
	struct rdmacm_vm *q = w->rdmacm;
	uint32_t ev = 0;

	if (q->cfd < 0)
		return;
	if (q->tx_len + RCM_MSG_SIZE <= sizeof(q->tx))
		ev |= EPOLLIN;
	if (q->tx_len)
		ev |= EPOLLOUT;
	if (ep_mod(m, q->cfd, TAG_RDMACM_CLIENT | idx_of(m, w), ev) < 0)
		client_close(m, w, "epoll");
}

static int queue(struct mux *m, struct worker *w, const struct rcm_msg *msg)
{
	struct rdmacm_vm *q = w->rdmacm;

	if (q->tx_len + sizeof(*msg) > sizeof(q->tx))
		return -ENOBUFS;
	memcpy(q->tx + q->tx_len, msg, sizeof(*msg));
	q->tx_len += sizeof(*msg);
	return flush(m, w);
}

static void respond(struct mux *m, struct worker *w, uint32_t op,
		    const uint8_t *gid, enum rcm_err err)
{
	struct rcm_msg r;

	rcm_encode_response(&r, op, gid, err);
	queue(m, w, &r); /* room was checked before reading the request */
}

/* A refused request, counted and logged as the router's refusals are. */
static void refuse(struct mux *m, struct worker *w, uint32_t reason,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void refuse(struct mux *m, struct worker *w, uint32_t reason,
		   const char *fmt, ...)
{
	struct router_verdict v;
	va_list ap;

	memset(&v, 0, sizeof(v));
	v.direction = RDMAGATE_MUX_OUT;
	v.worker_id = w->id;
	v.reason = reason;
	va_start(ap, fmt);
	vsnprintf(v.why, sizeof(v.why), fmt, ap);
	va_end(ap);
	outcome(m, &v);
}

static void do_reg(struct mux *m, struct worker *w, const struct rcm_request *r)
{
	char g[46];
	bool owned = router_gid_owned(m->r, w->id, r->sgid);

	if (r->op == RCM_OP_REG) {
		if (!owned) {
			refuse(m, w, RDMAGATE_MUX_DROP_SPOOF,
			       "QEMU's REG of %s: not a GID the broker gave "
			       "this VM",
			       router_gid_str(r->sgid, g));
			respond(m, w, r->op, r->sgid, RCM_ERR_EACCES);
			return;
		}
		log_info("vm %s (worker %u): QEMU registered %s", w->vm, w->id,
			 router_gid_str(r->sgid, g));
		respond(m, w, r->op, r->sgid, RCM_ERR_OK);
		return;
	}
	rcm_peers_forget(&w->rdmacm->peers, r->sgid);
	log_info("vm %s (worker %u): QEMU unregistered %s%s", w->vm, w->id,
		 router_gid_str(r->sgid, g), owned ? "" : " (not its GID)");
	respond(m, w, r->op, r->sgid, owned ? RCM_ERR_OK : RCM_ERR_ENOTFOUND);
}

/* A MAD the guest sent: to the router as a worker's MAD_SEND would go. */
static void do_mad(struct mux *m, struct worker *w, const struct rcm_request *r)
{
	struct router_verdict v;
	struct mp_mad_send s;
	struct reason why = { "" };
	int dest;

	dest = rcm_mad_send(&w->rdmacm->peers, r, mono_ms(), &s, &why);
	router_outgoing(m->r, w->id, &s, mono_ms(), &v);
	if (dest < 0 && v.reason == RDMAGATE_MUX_DROP_ADDRESS)
		snprintf(v.why, sizeof(v.why), "%s", why.msg);
	if (!v.reason)
		send_out(m, &v, &s);
	outcome(m, &v);
	respond(m, w, r->op, r->sgid,
		!v.reason			      ? RCM_ERR_OK
		: v.reason == RDMAGATE_MUX_DROP_SPOOF ? RCM_ERR_EACCES
						      : RCM_ERR_EINVAL);
}

static void handle(struct mux *m, struct worker *w)
{
	const struct rcm_msg *raw = (const struct rcm_msg *)w->rdmacm->rx;
	struct rcm_request r;
	struct reason why;
	uint32_t op = raw->op_code;
	int ret;

	ret = rcm_decode_request(w->rdmacm->rx, RCM_MSG_SIZE, &r, &why);
	if (ret < 0) {
		refuse(m, w, RDMAGATE_MUX_DROP_MALFORMED, "QEMU: %s", why.msg);
		respond(m, w, op, NULL, RCM_ERR_EINVAL);
		return;
	}
	if (r.op == RCM_OP_MAD)
		do_mad(m, w, &r);
	else
		do_reg(m, w, &r);
}

void rdmacm_on_client(struct mux *m, struct worker *w, uint32_t events)
{
	struct rdmacm_vm *q = w->rdmacm;
	int n;

	if (q->cfd < 0)
		return;
	if ((events & EPOLLOUT) && flush(m, w) < 0)
		return;
	for (n = 0; n < 64 && q->tx_len + RCM_MSG_SIZE <= sizeof(q->tx);) {
		ssize_t got = read(q->cfd, q->rx + q->rx_len,
				   RCM_MSG_SIZE - q->rx_len);

		if (got < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		if (got <= 0) {
			client_close(m, w, got < 0 ? strerror(errno) : NULL);
			return;
		}
		q->rx_len += (size_t)got;
		if (q->rx_len < RCM_MSG_SIZE)
			continue;
		q->rx_len = 0;
		handle(m, w);
		n++;
		if (q->cfd < 0)
			return;
	}
	rearm(m, w);
}

void rdmacm_deliver(struct mux *m, struct worker *w, struct router_verdict *v,
		    const ib_mad_addr_t *a, const uint8_t *dgid,
		    const uint8_t *mad, size_t len)
{
	struct rdmacm_vm *q = w->rdmacm;
	struct rcm_incoming in = {
		.dgid = dgid,
		.sgid = a->gid,
		.src_qpn = ntohl(a->qpn),
		.flow_label = ntohl(a->flow_label),
		.traffic_class = a->traffic_class,
		.hop_limit = a->hop_limit,
		.pkey_index = a->pkey_index,
		.mad = mad,
		.mad_len = len,
	};
	struct rcm_msg msg;

	if (q->cfd < 0) {
		v->reason = RDMAGATE_MUX_DROP_WORKER_GONE;
		snprintf(v->why, sizeof(v->why), "its QEMU is not connected");
		return;
	}
	if (q->tx_len) {
		v->reason = RDMAGATE_MUX_DROP_WORKER_FULL;
		snprintf(v->why, sizeof(v->why),
			 "its QEMU does not read (a record is pending)");
		return;
	}
	if (rcm_encode_incoming(&msg, &in) < 0) {
		v->reason = RDMAGATE_MUX_DROP_MALFORMED;
		snprintf(v->why, sizeof(v->why), "a MAD of %zu bytes", len);
		return;
	}
	rcm_peers_learn(&q->peers, mad, len, dgid, a->gid, mono_ms());
	if (queue(m, w, &msg) < 0) {
		v->reason = RDMAGATE_MUX_DROP_WORKER_GONE;
		snprintf(v->why, sizeof(v->why), "its QEMU's connection broke");
		return;
	}
	rearm(m, w);
}
