// SPDX-License-Identifier: MIT
/*
 * rdmagate-mux: the CM MAD multiplexer (docs/mux.md).  Runs as root, or
 * as --user after opening its umad ports; owns /dev/infiniband/umad* for
 * the ports the broker assigns (and --port), registers the CM class on
 * each, and moves CM MADs between the wire and the workers' socketpairs,
 * as mux/router.c decides.  One thread, one epoll loop; nothing in it
 * blocks on a worker.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <infiniband/umad.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "config.h"

#define RDMAGATE_PROBES_DEFINE /* the mux's semaphores live here */
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/mux_proto.h"
#include "common/probes.h"
#include "common/unix_socket.h"
#include "mux/mux.h"
#include "mux/router.h"
#include "worker/sandbox/sandbox.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rdmagate-mux [--control PATH] [--port DEV:PORT]... "
		"[--user USER]\n"
		"                    [--id-ttl SECS] [--conn-ttl SECS] [-v]\n"
		"  --control PATH   the broker's socket (default %s)\n"
		"  --port DEV:PORT  open and register this port at start "
		"(repeatable; the\n"
		"                   broker's PORT_ADD opens the others)\n"
		"  --user USER      after opening the --port ports, switch to "
		"USER with no\n"
		"                   capabilities\n"
		"  --id-ttl SECS    a handshake's id lives SECS after its last "
		"MAD (60)\n"
		"  --conn-ttl SECS  an established connection's id lives SECS "
		"(86400)\n"
		"  -v, --verbose    debug lines\n"
		"exit status: 0 SIGTERM, 1 error, 2 usage, 3 the kernel's "
		"ib_cm owns the CM class\n",
		RDMAGATE_MUX_DEFAULT_SOCKET);
}

/* The one line when the kernel's CM holds the class; exits. */
static void cm_taken(const char *device, uint32_t port)
	__attribute__((noreturn));
static void cm_taken(const char *device, uint32_t port)
{
	dprintf(2,
		"mux: error: the CM class on %s port %u is taken: the "
		"kernel's ib_cm module is loaded (modprobe -r rdma_ucm "
		"rdma_cm ib_cm, or blacklist them; rdmagate-mux must be the "
		"only CM agent)\n",
		device, port);
	exit(EXIT_CM_TAKEN);
}

static bool ib_cm_loaded(void)
{
	return access("/sys/module/ib_cm", F_OK) == 0;
}

/* ---- logging of refusals ------------------------------------------------ */

/* Opens a new window once the last one is over, saying what it hid. */
static void rl_roll(struct ratelimit *rl, uint64_t now, const char *who)
{
	if (now - rl->window_start < LOG_WINDOW_MS)
		return;
	if (rl->suppressed)
		log_warnx("%s: %u more refusal lines suppressed in %d s", who,
			  rl->suppressed, LOG_WINDOW_MS / 1000);
	rl->window_start = now;
	rl->lines = 0;
	rl->suppressed = 0;
}

static bool rl_allow(struct ratelimit *rl, uint64_t now, const char *who)
{
	rl_roll(rl, now, who);
	if (rl->lines < LOG_BURST) {
		rl->lines++;
		return true;
	}
	rl->suppressed++;
	return false;
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
static void flush_ratelimits(struct mux *m)
{
	uint64_t now = mono_ms();
	size_t i;

	rl_roll(&m->rl_none, now, "(no worker)");
	for (i = 0; i < MAX_WORKERS; i++)
		if (m->workers[i].used && m->workers[i].rl.suppressed)
			rl_roll(&m->workers[i].rl, now, m->workers[i].vm);
}

/* ---- epoll helpers ------------------------------------------------------ */

int ep_add(struct mux *m, int fd, uint64_t tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = tag };

	return epoll_ctl(m->ep, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

int ep_mod(struct mux *m, int fd, uint64_t tag, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.u64 = tag };

	return epoll_ctl(m->ep, EPOLL_CTL_MOD, fd, &ev) < 0 ? -errno : 0;
}

void ep_del_close(struct mux *m, int *fd)
{
	if (*fd < 0)
		return;
	epoll_ctl(m->ep, EPOLL_CTL_DEL, *fd, NULL);
	*fd = safe_close(*fd);
}

/* ---- ports -------------------------------------------------------------- */

/*
 * Opens umad on device/port and registers the CM class (0x07 v2, method
 * Send: the only method CM uses).  Exits with EXIT_CM_TAKEN when the
 * kernel's ib_cm holds the class.  Returns 0 or -errno with why.
 */
static int port_open(struct mux *m, const char *device, uint32_t num, char *why,
		     size_t why_len)
{
	long mask[16 / sizeof(long)] = { 0 };
	struct port *p = NULL;
	umad_port_t info;
	uint32_t pkeys = 1;
	int fd, agent, rid, e;
	size_t i;

	for (i = 0; i < MAX_PORTS; i++) {
		if (m->ports[i].used && m->ports[i].num == num &&
		    !strcmp(m->ports[i].device, device)) {
			snprintf(why, why_len, "%s port %u: open already",
				 device, num);
			return 0;
		}
		if (!m->ports[i].used && !p)
			p = &m->ports[i];
	}
	if (!p) {
		snprintf(why, why_len, "%s port %u: %d ports open already",
			 device, num, MAX_PORTS);
		return -ENOSPC;
	}
	if (umad_get_port(device, (int)num, &info) == 0) {
		pkeys = info.pkeys_size ? info.pkeys_size : 1;
		umad_release_port(&info);
	}
	errno = 0;
	fd = umad_open_port(device, (int)num);
	if (fd < 0) {
		e = errno ? errno : -fd;
		snprintf(why, why_len,
			 "%s port %u: opening its umad device: %s%s", device,
			 num, strerror(e),
			 e == EACCES ? " (a port opened after --user needs "
				       "--port at start)"
				     : "");
		return -e;
	}
	mask[ROUTER_METHOD_SEND / (8 * sizeof(long))] |=
		1L << (ROUTER_METHOD_SEND % (8 * sizeof(long)));
	errno = 0;
	agent = umad_register(fd, ROUTER_CM_CLASS, ROUTER_CM_CLASS_VERSION, 0,
			      mask);
	if (agent < 0) {
		e = errno ? errno : EPERM;
		umad_close_port(fd);
		if (ib_cm_loaded())
			return -EBUSY; /* the caller says so and exits */
		snprintf(why, why_len,
			 "%s port %u: registering the CM class: %s", device,
			 num, strerror(e));
		return -e;
	}
	rid = router_port_add(m->r, device, num, pkeys);
	if (rid < 0) {
		umad_close_port(fd);
		snprintf(why, why_len, "%s port %u: %s", device, num,
			 strerror(-rid));
		return rid;
	}
	memset(p, 0, sizeof(*p));
	p->used = true;
	snprintf(p->device, sizeof(p->device), "%s", device);
	p->num = num;
	p->fd = fd;
	p->agent = agent;
	p->router_id = rid;
	e = ep_add(m, fd, TAG_PORT | (uint64_t)(p - m->ports) << 8);
	if (e < 0) {
		umad_close_port(fd);
		p->used = false;
		snprintf(why, why_len, "epoll: %s", strerror(-e));
		return e;
	}
	log_info("%s port %u: umad open, CM class registered (agent %d, %u "
		 "P_Keys)",
		 device, num, agent, pkeys);
	snprintf(why, why_len, "%s port %u: open", device, num);
	return 0;
}

static struct port *port_of_router_id(struct mux *m, int rid)
{
	size_t i;

	for (i = 0; i < MAX_PORTS; i++)
		if (m->ports[i].used && m->ports[i].router_id == rid)
			return &m->ports[i];
	return NULL;
}

/* ---- the wire -> workers ------------------------------------------------ */

static void deliver(struct mux *m, struct router_verdict *v,
		    const ib_mad_addr_t *a, const uint8_t *dgid,
		    const uint8_t *mad, size_t len)
{
	struct worker *w = worker_by_id(m, v->worker_id);
	struct mp_msg msg;
	struct mp_mad_recv *r = &msg.u.mad_recv;
	int ret;

	if (w && w->rdmacm) {
		rdmacm_deliver(m, w, v, a, dgid, mad, len);
		return;
	}
	if (!w || w->fd < 0) {
		v->reason = RDMAGATE_MUX_DROP_WORKER_GONE;
		snprintf(v->why, sizeof(v->why), "its channel is closed");
		return;
	}
	mp_init(&msg, MP_MAD_RECV);
	memcpy(r->sgid, a->gid, 16);
	memcpy(r->dgid, dgid, 16);
	r->flow_label = ntohl(a->flow_label) & MP_FLOW_LABEL_MAX;
	r->traffic_class = a->traffic_class;
	r->hop_limit = a->hop_limit;
	r->pkey_index = a->pkey_index;
	r->src_qpn = ntohl(a->qpn) & MP_QPN_MAX;
	r->mad_len = (uint32_t)len;
	memcpy(r->mad, mad, len);
	ret = mp_send(w->fd, &msg, MSG_DONTWAIT, -1);
	if (ret == -EAGAIN || ret == -ENOBUFS) {
		v->reason = RDMAGATE_MUX_DROP_WORKER_FULL;
		snprintf(v->why, sizeof(v->why),
			 "its channel is full (it does not read)");
	} else if (ret < 0) {
		v->reason = RDMAGATE_MUX_DROP_WORKER_GONE;
		snprintf(v->why, sizeof(v->why), "its channel: %s",
			 strerror(-ret));
		log_info("worker %u (%s): channel closed (%s)", w->id, w->vm,
			 strerror(-ret));
		ep_del_close(m, &w->fd);
		worker_farewell(m, w);
	}
}

static int sysfs_gid(const char *device, uint32_t port, uint32_t index,
		     uint8_t gid[16]);

/*
 * The full GID of receive index `index` of p: a worker's (as the broker
 * gave it and the mux checked), else what sysfs holds there (the same
 * address's other RoCE type, or a GID nobody owns), else NULL.
 */
static const uint8_t *resolve_dgid(struct mux *m, struct port *p, uint8_t index)
{
	static const uint8_t zero[16];
	const uint8_t *g = router_gid_at(m->r, p->router_id, index);
	struct gid_cache *c = &p->idx[index];
	uint64_t now = mono_ms();

	if (g)
		return g;
	if (!c->read_ms || now - c->read_ms >= GID_CACHE_MS) {
		c->read_ms = now;
		c->valid = sysfs_gid(p->device, p->num, index, c->gid) == 0 &&
			   memcmp(c->gid, zero, 16);
	}
	return c->valid ? c->gid : NULL;
}

static void on_port(struct mux *m, struct port *p)
{
	uint8_t buf[sizeof(struct ib_user_mad) + MP_MAD_SIZE];
	int n;

	for (n = 0; n < BATCH; n++) {
		struct router_verdict v;
		const ib_mad_addr_t *a;
		const uint8_t *dgid;
		int len = MP_MAD_SIZE, ret;

		memset(buf, 0, sizeof(buf));
		ret = umad_recv(p->fd, buf, &len, 0);
		if (ret == -EAGAIN || ret == -EWOULDBLOCK || ret == -EINTR)
			return;
		if (ret < 0) {
			/* the device went away (or worse): stop polling it
			 * rather than spin; PORT_ADD opens it again */
			log_warnx("%s port %u: umad_recv: %s; port closed",
				  p->device, p->num, strerror(-ret));
			epoll_ctl(m->ep, EPOLL_CTL_DEL, p->fd, NULL);
			umad_close_port(p->fd);
			p->fd = -1;
			p->used = false;
			return;
		}
		if (umad_status(buf))
			continue; /* a send's timeout: the mux sets none */
		a = umad_get_mad_addr(buf);
		if (len < 0 || len > MP_MAD_SIZE)
			len = MP_MAD_SIZE;
		if (!a->grh_present) {
			memset(&v, 0, sizeof(v));
			v.direction = RDMAGATE_MUX_IN;
			v.reason = RDMAGATE_MUX_DROP_MALFORMED;
			snprintf(v.why, sizeof(v.why),
				 "on %s port %u without a GRH (RoCE has one)",
				 p->device, p->num);
			outcome(m, &v);
			continue;
		}
		dgid = resolve_dgid(m, p, a->gid_index);
		router_incoming(m->r, p->router_id, a->gid, dgid,
				umad_get_mad(buf), (size_t)len, mono_ms(), &v);
		if (!dgid && v.reason == RDMAGATE_MUX_DROP_UNKNOWN_GID) {
			char g[46];

			snprintf(v.why, sizeof(v.why),
				 "to %s port %u GID index %u, which holds no "
				 "worker's GID (from %s)",
				 p->device, p->num, a->gid_index,
				 router_gid_str(a->gid, g));
		}
		if (!v.reason)
			deliver(m, &v, a, dgid, umad_get_mad(buf), (size_t)len);
		outcome(m, &v);
	}
}

/* ---- workers -> the wire ------------------------------------------------ */

void send_out(struct mux *m, struct router_verdict *v,
	      const struct mp_mad_send *s)
{
	uint8_t buf[sizeof(struct ib_user_mad) + MP_MAD_SIZE];
	struct port *p = port_of_router_id(m, v->port_id);
	ib_mad_addr_t grh;
	int ret;

	if (!p) {
		v->reason = RDMAGATE_MUX_DROP_SEND_FAILED;
		snprintf(v->why, sizeof(v->why), "port %d is not open",
			 v->port_id);
		return;
	}
	memset(buf, 0, sizeof(buf));
	/* always a whole 256-byte MAD: the rest stays zero */
	memcpy(umad_get_mad(buf), s->mad, s->mad_len);
	umad_set_addr(buf, 0, ROUTER_GSI_QPN, 0, (int)ROUTER_GSI_QKEY);
	memset(&grh, 0, sizeof(grh));
	memcpy(grh.gid, s->dgid, 16);
	grh.flow_label = s->flow_label; /* host order: umad_set_grh swaps */
	grh.hop_limit = s->hop_limit;
	grh.traffic_class = s->traffic_class;
	umad_set_grh(buf, &grh);
	/* umad_set_grh() leaves the source GID index alone */
	umad_get_mad_addr(buf)->gid_index = (uint8_t)v->host_gid_index;
	umad_set_pkey(buf, s->pkey_index);
	errno = 0;
	ret = umad_send(p->fd, p->agent, buf, MP_MAD_SIZE, 0, 0);
	if (ret < 0) {
		v->reason = RDMAGATE_MUX_DROP_SEND_FAILED;
		snprintf(v->why, sizeof(v->why), "umad_send on %s port %u: %s",
			 p->device, p->num, strerror(errno ? errno : EIO));
	}
}

static void on_worker(struct mux *m, struct worker *w)
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
			snprintf(v.why, sizeof(v.why), "%s", why.msg);
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
static int check_channel(int fd, char *why, size_t why_len)
{
	int type = 0, domain = 0, sndbuf = WORKER_SNDBUF;
	socklen_t l1 = sizeof(type), l2 = sizeof(domain);

	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l1) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &l2) < 0) {
		snprintf(why, why_len,
			 "the fd is not an AF_UNIX SOCK_SEQPACKET socket");
		return -EINVAL;
	}
	if (domain != AF_UNIX || type != SOCK_SEQPACKET) {
		snprintf(why, why_len,
			 "the fd is not an AF_UNIX SOCK_SEQPACKET socket");
		return -EINVAL;
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)) <
		    0) {
		snprintf(why, why_len, "setting up the channel: %s",
			 strerror(errno));
		return -errno;
	}
	return 0;
}

/* ---- the broker ---------------------------------------------------------- */

int worker_claim(struct mux *m, uint32_t id, const char *vm, bool rdmacm,
		 struct worker **ret, char *why, size_t why_len)
{
	struct worker *w = worker_by_id(m, id);
	int e;

	if (w && (strcmp(w->vm, vm) || !w->rdmacm != !rdmacm)) {
		snprintf(why, why_len, "worker %u is attached for vm %s%s", id,
			 w->vm,
			 w->rdmacm ? " as a QEMU pvrdma VM"
			 : rdmacm  ? " as a worker"
				   : "");
		return -EEXIST;
	}
	if (w) {
		*ret = w;
		return 1;
	}
	w = worker_slot(m);
	if (!w) {
		snprintf(why, why_len, "%d workers attached already",
			 MAX_WORKERS);
		return -ENOSPC;
	}
	e = router_worker_add(m->r, id);
	if (e < 0) {
		snprintf(why, why_len, "worker %u: %s", id, strerror(-e));
		return e;
	}
	memset(w, 0, sizeof(*w));
	w->used = true;
	w->id = id;
	w->fd = -1;
	snprintf(w->vm, sizeof(w->vm), "%s", vm);
	*ret = w;
	return 0;
}

static int do_attach(struct mux *m, const struct mp_worker_attach *a, int *fd,
		     char *why, size_t why_len)
{
	struct worker *w;
	int ret;

	ret = check_channel(*fd, why, why_len);
	if (ret < 0)
		return ret;
	ret = worker_claim(m, a->worker_id, a->vm, false, &w, why, why_len);
	if (ret < 0)
		return ret;
	ep_del_close(m, &w->fd); /* replaced: the broker's replay */
	ret = msg_conn_open(&w->conn, &mp_protocol, *fd, 1u << MP_FROM_WORKER,
			    NULL);
	if (ret < 0) {
		snprintf(why, why_len, "the channel: %s", strerror(-ret));
		return ret;
	}
	ret = ep_add(m, *fd, TAG_WORKER | (uint64_t)(w - m->workers) << 8);
	if (ret < 0) {
		snprintf(why, why_len, "epoll: %s", strerror(-ret));
		return ret;
	}
	w->fd = TAKE_FD(*fd);
	log_info("worker %u (%s) attached", w->id, w->vm);
	snprintf(why, why_len, "worker %u (%s) attached", w->id, w->vm);
	return 0;
}

static int do_detach(struct mux *m, uint32_t id, char *why, size_t why_len)
{
	struct worker *w = worker_by_id(m, id);

	if (!w) {
		snprintf(why, why_len, "worker %u: not attached", id);
		return -ENOENT;
	}
	worker_farewell(m, w); /* none left if it was said at the close */
	router_worker_del(m->r, id);
	ep_del_close(m, &w->fd);
	rdmacm_release(m, w);
	log_info("worker %u (%s) detached", w->id, w->vm);
	snprintf(why, why_len, "worker %u (%s) detached", w->id, w->vm);
	w->used = false;
	return 0;
}

/* The GID the kernel holds at index of device/port, from sysfs. */
static int sysfs_gid(const char *device, uint32_t port, uint32_t index,
		     uint8_t gid[16])
{
	char path[PATH_MAX], text[64];
	_cleanup_close_ int fd = -1;
	ssize_t n;

	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/%u/gids/%u", device, port,
		 index);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, text, sizeof(text) - 1);
	if (n < 0)
		return -errno;
	text[n] = '\0';
	text[strcspn(text, "\n")] = '\0';
	return inet_pton(AF_INET6, text, gid) == 1 ? 0 : -EINVAL;
}

static int do_gid_add(struct mux *m, const struct mp_gid_add *g, char *why,
		      size_t why_len)
{
	int rid = router_port_find(m->r, g->device, g->port);
	uint8_t have[16];
	char s1[46], s2[46];
	int ret;

	if (rid < 0) {
		snprintf(why, why_len, "%s port %u: not added (PORT_ADD first)",
			 g->device, g->port);
		return -ENOENT;
	}
	ret = sysfs_gid(g->device, g->port, g->host_gid_index, have);
	if (ret < 0) {
		snprintf(why, why_len, "%s port %u GID index %u: %s", g->device,
			 g->port, g->host_gid_index, strerror(-ret));
		return ret;
	}
	if (memcmp(have, g->gid, 16)) {
		snprintf(why, why_len,
			 "%s port %u GID index %u holds %s, not %s", g->device,
			 g->port, g->host_gid_index, router_gid_str(have, s1),
			 router_gid_str(g->gid, s2));
		return -EINVAL;
	}
	ret = router_gid_add(m->r, g->worker_id, rid, g->gid,
			     g->host_gid_index);
	switch (ret) {
	case 0:
		snprintf(why, why_len,
			 "%s (%s port %u index %u) is worker "
			 "%u's",
			 router_gid_str(g->gid, s1), g->device, g->port,
			 g->host_gid_index, g->worker_id);
		log_info("%s", why);
		return 0;
	case -ENOENT:
		snprintf(why, why_len, "worker %u: not attached", g->worker_id);
		return ret;
	case -EEXIST:
		snprintf(why, why_len,
			 "%s or index %u on %s port %u: owned already "
			 "(GID_DEL first)",
			 router_gid_str(g->gid, s1), g->host_gid_index,
			 g->device, g->port);
		return ret;
	default:
		snprintf(why, why_len, "%s", strerror(-ret));
		return ret;
	}
}

static void handle_broker_msg(struct mux *m, const struct mp_msg *in, int *fd)
{
	char why[MP_TEXT_SIZE] = "";
	struct mp_msg out;
	uint32_t rtype = in->h.type + 1;
	struct worker *w;
	int ret = 0;
	char s1[46];

	mp_init(&out, rtype);
	switch (in->h.type) {
	case MP_HELLO:
		out.u.hello_reply.version = RDMAGATE_MUX_VERSION;
		snprintf(why, sizeof(why), "rdmagate-mux %s", RDMAGATE_VERSION);
		break;
	case MP_PORT_ADD:
		ret = port_open(m, in->u.port_add.device, in->u.port_add.port,
				why, sizeof(why));
		if (ret == -EBUSY) {
			snprintf(why, sizeof(why),
				 "the CM class on %s port %u is taken: the "
				 "kernel's ib_cm module is loaded",
				 in->u.port_add.device, in->u.port_add.port);
			mp_set_status(&out.u.status, EBUSY, "%s", why);
			mp_send(m->bfd, &out, MSG_DONTWAIT, -1);
			cm_taken(in->u.port_add.device, in->u.port_add.port);
		}
		break;
	case MP_WORKER_ATTACH:
		ret = do_attach(m, &in->u.attach, fd, why, sizeof(why));
		break;
	case MP_RDMACM_ATTACH:
		ret = rdmacm_attach(m, &in->u.rdmacm_attach, fd, why,
				    sizeof(why));
		break;
	case MP_WORKER_DETACH:
		ret = do_detach(m, in->u.ref.worker_id, why, sizeof(why));
		break;
	case MP_GID_ADD:
		ret = do_gid_add(m, &in->u.gid_add, why, sizeof(why));
		break;
	case MP_GID_DEL:
		w = worker_by_id(m, in->u.gid_del.worker_id);
		if (w && w->fd < 0 && !w->rdmacm)
			worker_farewell(m, w); /* before its ids go */
		ret = router_gid_del(m->r, in->u.gid_del.worker_id,
				     in->u.gid_del.gid);
		snprintf(why, sizeof(why), "%s %s worker %u",
			 router_gid_str(in->u.gid_del.gid, s1),
			 ret ? "is not a GID of" : "removed from",
			 in->u.gid_del.worker_id);
		if (!ret)
			log_info("%s", why);
		break;
	case MP_STATS:
		out.u.stats_reply.worker_id = in->u.ref.worker_id;
		ret = router_stats(m->r, in->u.ref.worker_id,
				   &out.u.stats_reply.s);
		if (ret < 0)
			memset(&out.u.stats_reply.s, 0,
			       sizeof(out.u.stats_reply.s));
		snprintf(why, sizeof(why), ret ? "worker %u: not attached" : "",
			 in->u.ref.worker_id);
		break;
	default:
		ret = -EOPNOTSUPP;
		snprintf(why, sizeof(why), "%s: not a request",
			 mp_type_name(in->h.type));
	}
	/* every reply starts with the status */
	mp_set_status(&out.u.status, ret < 0 ? -ret : 0, "%s", why);
	ret = mp_send(m->bfd, &out, MSG_DONTWAIT, -1);
	if (ret < 0)
		log_warnx("reply %s to the broker: %s", mp_type_name(rtype),
			  strerror(-ret));
}

static void on_broker(struct mux *m)
{
	struct reason why;
	struct mp_msg in;
	int fd = -1, ret;

	/* the table says which requests carry an fd, and that HELLO is
	 * first */
	ret = msg_conn_recv(&m->bconn, m->bfd, &in, &fd, MSG_DONTWAIT, &why);
	if (ret == 0)
		return;
	if (ret == -EPIPE) {
		log_info("broker disconnected: %s", why.msg);
		ep_del_close(m, &m->bfd);
		return;
	}
	if (ret < 0) {
		struct mp_msg out;

		log_warnx("broker: %s", why.msg);
		mp_init(&out, MP_ERROR_REPLY);
		mp_set_status(&out.u.status, -ret, "%s", why.msg);
		mp_send(m->bfd, &out, MSG_DONTWAIT, -1);
		return;
	}
	handle_broker_msg(m, &in, &fd);
	safe_close(fd);
}

static void on_listen(struct mux *m)
{
	_cleanup_close_ int fd = -1;
	struct msg_conn c;
	struct reason why;

	fd = accept4(m->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return;
	/* the broker's requests are root's in the table: only root (the
	 * broker) may connect */
	if (msg_conn_open(&c, &mp_protocol, fd, 1u << MP_FROM_BROKER, &why) <
	    0) {
		log_warnx("refused a control connection: %s", why.msg);
		return;
	}
	if (m->bfd >= 0)
		log_info("a new broker connection (pid %d) replaces the old "
			 "one",
			 (int)c.pid);
	ep_del_close(m, &m->bfd);
	if (ep_add(m, fd, TAG_BROKER) < 0) {
		log_warn("epoll");
		return;
	}
	m->bfd = TAKE_FD(fd);
	m->bconn = c;
	log_info("broker connected (pid %d)", (int)c.pid);
}

/* ---- setup ----------------------------------------------------------------
 */

static int open_control(struct mux *m)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[sizeof(sa.sun_path)], *slash;
	const char *why = NULL;
	_cleanup_close_ int fd = -1;
	mode_t old;
	int ret;

	if (m->control_path[0] != '/' ||
	    strlen(m->control_path) >= sizeof(sa.sun_path))
		fatalx("--control %s: not an absolute path that fits",
		       m->control_path);
	strcpy(sa.sun_path, m->control_path);
	snprintf(dir, sizeof(dir), "%s", m->control_path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			fatal("creating %s", dir);
	}
	ret = unix_socket_remove_stale(AT_FDCWD, sa.sun_path, &why);
	if (ret == -EADDRINUSE)
		fatalx("%s: another rdmagate-mux listens there", sa.sun_path);
	if (ret < 0)
		fatalx("%s: %s", sa.sun_path, why ? why : strerror(-ret));
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		fatal("socket");
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		fatal("bind %s", sa.sun_path);
	umask(old);
	if (listen(fd, 4) < 0 || ep_add(m, fd, TAG_LISTEN) < 0)
		fatal("listen %s", sa.sun_path);
	m->lfd = TAKE_FD(fd);
	log_info("control socket %s (root only)", m->control_path);
	return 0;
}

static void setup_signals(struct mux *m)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		fatal("sigprocmask");
	signal(SIGPIPE, SIG_IGN);
	m->sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (m->sfd < 0 || ep_add(m, m->sfd, TAG_SIGNAL) < 0)
		fatal("signalfd");
}

static void setup_timer(struct mux *m)
{
	struct itimerspec its = { { 1, 0 }, { 1, 0 } };

	m->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (m->tfd < 0 || timerfd_settime(m->tfd, 0, &its, NULL) < 0 ||
	    ep_add(m, m->tfd, TAG_TIMER) < 0)
		fatal("timerfd");
}

static void drop_privileges(struct mux *m)
{
	struct passwd *pw;

	if (!m->user) {
		if (geteuid() == 0)
			log_info("running as root (no --user)");
		return;
	}
	if (geteuid() != 0)
		fatalx("--user %s: only root can switch users", m->user);
	pw = getpwnam(m->user);
	if (!pw)
		fatalx("--user %s: no such user", m->user);
	if (sandbox_drop_privileges(pw->pw_uid, pw->pw_gid) < 0)
		fatalx("--user %s: dropping privileges failed", m->user);
	log_info("running as %s (uid %u), no capabilities; keeps the umad "
		 "fds and the control socket",
		 m->user, pw->pw_uid);
}

static uint64_t parse_secs(const char *opt, const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || v == 0 || v > 365ull * 86400)
		fatalx("%s %s: not 1..31536000 seconds", opt, s);
	return v * 1000;
}

static void parse_port(struct mux *m, const char *s)
{
	char dev[MP_DEVICE_SIZE], why[MP_TEXT_SIZE];
	const char *colon = strrchr(s, ':');
	unsigned long num;
	char *end;
	int ret;

	if (!colon || (size_t)(colon - s) >= sizeof(dev))
		fatalx("--port %s: not DEVICE:PORT", s);
	memcpy(dev, s, (size_t)(colon - s));
	dev[colon - s] = '\0';
	errno = 0;
	num = strtoul(colon + 1, &end, 10);
	if (errno || *end || num < 1 || num > MP_PORT_MAX ||
	    !mp_device_name_ok(dev))
		fatalx("--port %s: not DEVICE:PORT (port 1..%u)", s,
		       MP_PORT_MAX);
	ret = port_open(m, dev, (uint32_t)num, why, sizeof(why));
	if (ret == -EBUSY)
		cm_taken(dev, (uint32_t)num);
	if (ret < 0)
		fatalx("%s", why);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "control", required_argument, NULL, 'c' },
		{ "port", required_argument, NULL, 'p' },
		{ "user", required_argument, NULL, 'u' },
		{ "id-ttl", required_argument, NULL, 'i' },
		{ "conn-ttl", required_argument, NULL, 't' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *ports[MAX_PORTS];
	static struct mux m;
	size_t nports = 0, i;
	int c;

	router_config_default(&m.rc);
	m.control_path = RDMAGATE_MUX_DEFAULT_SOCKET;
	m.ep = m.lfd = m.bfd = m.sfd = m.tfd = -1;
	while ((c = getopt_long(argc, argv, "vh", lo, NULL)) != -1) {
		switch (c) {
		case 'c':
			m.control_path = optarg;
			break;
		case 'p':
			if (nports == MAX_PORTS) {
				fprintf(stderr,
					"rdmagate-mux: at most %d "
					"--port\n",
					MAX_PORTS);
				exit(2);
			}
			ports[nports++] = optarg;
			break;
		case 'u':
			m.user = optarg;
			break;
		case 'i':
			m.rc.id_ttl_ms = parse_secs("--id-ttl", optarg);
			break;
		case 't':
			m.rc.conn_ttl_ms = parse_secs("--conn-ttl", optarg);
			break;
		case 'v':
			m.verbose = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("rdmagate-mux %s (mux protocol %d)\n",
			       RDMAGATE_VERSION, RDMAGATE_MUX_VERSION);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind != argc) {
		usage(stderr);
		exit(2);
	}
	log_init("mux", m.verbose ? LOG_LVL_DEBUG : LOG_LVL_INFO);
	if (getrandom(&m.rc.hash_seed, sizeof(m.rc.hash_seed), 0) !=
	    sizeof(m.rc.hash_seed))
		fatal("getrandom");
	m.r = router_new(&m.rc);
	if (!m.r)
		fatal("router");
	m.ep = epoll_create1(EPOLL_CLOEXEC);
	if (m.ep < 0)
		fatal("epoll_create1");
	umad_init();
	for (i = 0; i < MAX_PORTS; i++)
		m.ports[i].fd = -1;
	for (i = 0; i < MAX_WORKERS; i++)
		m.workers[i].fd = -1;
	for (i = 0; i < nports; i++)
		parse_port(&m, ports[i]);
	open_control(&m);
	setup_signals(&m);
	setup_timer(&m);
	drop_privileges(&m);
	log_info("ready (mux protocol %d; id ttl %llu s, connection ttl %llu "
		 "s)",
		 RDMAGATE_MUX_VERSION,
		 (unsigned long long)(m.rc.id_ttl_ms / 1000),
		 (unsigned long long)(m.rc.conn_ttl_ms / 1000));

	while (!m.quit) {
		struct epoll_event ev[16];
		int n = epoll_wait(m.ep, ev, 16, -1), k;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			fatal("epoll_wait");
		}
		for (k = 0; k < n; k++) {
			uint64_t tag = ev[k].data.u64;
			size_t idx = (size_t)(tag >> 8);

			switch (tag & 0xff) {
			case TAG_LISTEN:
				on_listen(&m);
				break;
			case TAG_BROKER:
				if (m.bfd >= 0)
					on_broker(&m);
				break;
			case TAG_SIGNAL: {
				struct signalfd_siginfo si;

				if (read(m.sfd, &si, sizeof(si)) ==
				    sizeof(si)) {
					log_info("signal %u: exiting",
						 si.ssi_signo);
					m.quit = true;
				}
				break;
			}
			case TAG_TIMER: {
				uint64_t ticks;

				if (read(m.tfd, &ticks, sizeof(ticks)) < 0)
					break;
				router_expire(m.r, mono_ms());
				flush_ratelimits(&m);
				break;
			}
			case TAG_PORT:
				if (idx < MAX_PORTS && m.ports[idx].used)
					on_port(&m, &m.ports[idx]);
				break;
			case TAG_WORKER:
				if (idx < MAX_WORKERS && m.workers[idx].used &&
				    m.workers[idx].fd >= 0)
					on_worker(&m, &m.workers[idx]);
				break;
			case TAG_RDMACM_LISTEN:
				if (idx < MAX_WORKERS && m.workers[idx].used &&
				    m.workers[idx].rdmacm)
					rdmacm_on_listen(&m, &m.workers[idx]);
				break;
			case TAG_RDMACM_CLIENT:
				if (idx < MAX_WORKERS && m.workers[idx].used &&
				    m.workers[idx].rdmacm)
					rdmacm_on_client(&m, &m.workers[idx],
							 ev[k].events);
				break;
			}
		}
	}
	for (i = 0; i < MAX_WORKERS; i++) {
		safe_close(m.workers[i].fd);
		rdmacm_release(&m, &m.workers[i]);
	}
	for (i = 0; i < MAX_PORTS; i++)
		if (m.ports[i].used)
			umad_close_port(m.ports[i].fd);
	safe_close(m.bfd);
	safe_close(m.lfd);
	if (unlink(m.control_path) < 0 && errno != ENOENT)
		log_debug("leaving %s (%s)", m.control_path, strerror(errno));
	router_free(m.r);
	return 0;
}
