// SPDX-License-Identifier: MIT
/*
 * The broker's side of rdmagate-mux (common/mux_proto.h, docs/mux.md), in
 * rdmagate-broker: with --mux PATH the broker connects to the mux's control
 * socket and tells it, one request at a time, the ports its workers use
 * (PORT_ADD), each worker (WORKER_ATTACH with the mux's end of a fresh
 * socketpair; the worker gets the other end over its broker channel,
 * WP_MUX_CHANNEL; a QEMU pvrdma VM's row is attached with RDMACM_ATTACH
 * and its listening socket instead, broker/qemu_pvrdma.c), the GIDs each
 * worker owns (GID_ADD / GID_DEL, from
 * broker/gids.c) and the workers that go (WORKER_DETACH).
 *
 * The broker never blocks on the mux: the socket is non-blocking, requests
 * wait in a bounded queue, one is in flight at a time and its reply is
 * awaited in the event loop (MUX_REPLY_WAIT_MS, then the link is dropped).
 * Whenever the link comes up (the broker's start, the mux's restart, or a
 * link the broker dropped while the mux kept its state) the broker first
 * detaches every worker id the mux may know -- a previous broker's, one
 * attached on an earlier link, one whose DETACH or GID_DEL was queued or
 * in flight when the link went -- then replays what it holds now: the mux
 * converges to the broker's truth whatever a lost link took with it.  A
 * dropped link is retried every MUX_RETRY_MS.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "broker/broker.h"
#include "common/cleanup.h"
#include "common/log.h"
#include "common/mux_proto.h"

/* A link down is retried this often. */
#define MUX_RETRY_MS 1000
/* The mux answers each request at once; silence this long drops the link. */
#define MUX_REPLY_WAIT_MS 2000
/* Enough for a full replay: PORT_ADD, ATTACH, DETACH and every GID of each
 * worker; more means the link is dropped and replayed. */
#define MUX_QUEUE     (BROKER_MAX_WORKERS * (3 + BROKER_GIDS_PER_VM))
#define MUX_MAX_PORTS 64

enum link_state { LINK_DOWN, LINK_HELLO, LINK_UP };

/* A request, made into a message only when it is sent. */
struct req {
	uint32_t type;	    /* enum mp_type */
	uint32_t row;	    /* the worker's row (PORT_ADD, ATTACH, GID_ADD) */
	uint32_t gen;	    /* its mux_gen: the row still holds that worker */
	uint32_t worker_id; /* DETACH, GID_DEL */
	uint32_t index;	    /* GID_ADD: the host GID index */
	uint8_t gid[16];    /* GID_ADD, GID_DEL */
};

static struct {
	enum link_state state;
	struct msg_conn conn; /* b->mux_fd's peer */
	uint64_t retry_at;    /* the next connect (DOWN) */
	bool warned;	      /* the link's failure is logged already */
	bool busy;	      /* a request is in flight */
	uint64_t deadline;    /* of its reply */
	struct req cur;
	struct req q[MUX_QUEUE];
	unsigned int head, n;
	/* worker ids the mux may know that no worker of ours holds (all at
	 * start: a previous broker's), detached before the replay */
	bool owed[BROKER_MAX_WORKERS];
	/* worker ids an ATTACH went out for, not detached since: the mux may
	 * hold them (and their GIDs) whatever became of the link */
	bool known[BROKER_MAX_WORKERS];
	unsigned int sweep; /* the next id to look at, 1-based; 0: done */
	struct {
		char device[BP_DEVICE_SIZE];
		uint32_t port;
	} ports[MUX_MAX_PORTS]; /* added on this link */
	unsigned int nports;
	uint32_t gen;
} L;

static uint32_t worker_id(const struct broker *b, const struct worker *w)
{
	return (uint32_t)(w - b->workers) + 1;
}

static bool port_known(const char *device, uint32_t port)
{
	unsigned int i;

	for (i = 0; i < L.nports; i++)
		if (L.ports[i].port == port &&
		    !strcmp(L.ports[i].device, device))
			return true;
	return false;
}

/* The worker row r still holds the worker the request was made for. */
static struct worker *req_worker(struct broker *b, const struct req *r)
{
	struct worker *w = &b->workers[r->row];

	return w->used && w->mux_gen == r->gen ? w : NULL;
}

static void link_down(struct broker *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void enqueue(struct broker *b, const struct req *r)
{
	if (L.state != LINK_UP)
		return; /* the replay at the next connection covers it */
	if (L.n == MUX_QUEUE) {
		link_down(b, "%u requests queued: replaying from scratch",
			  MUX_QUEUE);
		return;
	}
	L.q[(L.head + L.n++) % MUX_QUEUE] = *r;
}

static void drop_worker_end(struct worker *w)
{
	if (w->mux_fd >= 0)
		w->mux_fd = safe_close(w->mux_fd);
	w->mux_ready = false;
}

static void link_down(struct broker *b, const char *fmt, ...)
{
	char why[256];
	unsigned int i;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (!L.warned)
		log_warnx("mux %s: %s; retrying every %d ms", b->mux_path, why,
			  MUX_RETRY_MS);
	L.warned = true;
	if (b->mux_fd >= 0) {
		epoll_ctl(b->ep, EPOLL_CTL_DEL, b->mux_fd, NULL);
		b->mux_fd = safe_close(b->mux_fd);
	}
	L.state = LINK_DOWN;
	L.retry_at = mono_ms() + MUX_RETRY_MS;
	L.busy = false;
	L.head = L.n = 0;
	L.nports = 0;
	L.sweep = 0;
	/* the queue and the request in flight are gone, DETACHes and GID_DELs
	 * among them: every id the mux may hold is detached first on the
	 * next link, then the replay adds back only what is true then */
	for (i = 0; i < BROKER_MAX_WORKERS; i++)
		L.owed[i] |= L.known[i];
	/* the channels handed out on this link are dead or soon will be;
	 * the next link hands out new ones */
	for (i = 0; i < BROKER_MAX_WORKERS; i++)
		if (b->workers[i].used)
			drop_worker_end(&b->workers[i]);
	for (i = 0; i < BROKER_MAX_GIDS; i++)
		b->gids[i].mux_worker = 0;
}

/* Queues what the mux must know of w: its port, itself, its ready GIDs. */
static void queue_worker(struct broker *b, struct worker *w)
{
	struct req r = { .row = worker_id(b, w) - 1, .gen = w->mux_gen };
	unsigned int i;

	r.type = MP_PORT_ADD;
	enqueue(b, &r);
	r.type = is_qemu_pvrdma(w) ? MP_RDMACM_ATTACH : MP_WORKER_ATTACH;
	enqueue(b, &r);
	for (i = 0; i < BROKER_MAX_GIDS; i++) {
		struct gid_entry *e = &b->gids[i];

		if (e->used && !e->pending && !strcmp(e->vm, w->vm))
			mux_link_gid_ready(b, e);
	}
}

static void replay(struct broker *b)
{
	unsigned int i;

	L.sweep = 1;
	for (i = 0; i < BROKER_MAX_WORKERS; i++)
		if (b->workers[i].used)
			queue_worker(b, &b->workers[i]);
}

/* ---- sending ------------------------------------------------------------- */

static int send_attach(struct broker *b, struct worker *w, struct mp_msg *m)
{
	int sv[2], ret;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		log_warn("worker/%s: mux channel socketpair", w->vm);
		return 1; /* skipped; the next replay tries again */
	}
	m->u.attach.worker_id = worker_id(b, w);
	snprintf(m->u.attach.vm, sizeof(m->u.attach.vm), "%s", w->vm);
	/* known before it is sent: a link lost now leaves it unsure */
	L.known[worker_id(b, w) - 1] = true;
	ret = mp_send(b->mux_fd, m, MSG_DONTWAIT, sv[0]);
	close(sv[0]);
	if (ret < 0) {
		close(sv[1]);
		return ret;
	}
	drop_worker_end(w);
	w->mux_fd = sv[1];
	return 0;
}

/* A QEMU pvrdma VM: its listening socket (the broker keeps its own copy
 * for the next replay), the one uid the mux lets connect. */
static int send_rdmacm_attach(struct broker *b, struct worker *w,
			      struct mp_msg *m)
{
	m->u.rdmacm_attach.worker_id = worker_id(b, w);
	snprintf(m->u.rdmacm_attach.vm, sizeof(m->u.rdmacm_attach.vm), "%s",
		 w->vm);
	m->u.rdmacm_attach.uid = w->uid;
	L.known[worker_id(b, w) - 1] = true;
	return mp_send(b->mux_fd, m, MSG_DONTWAIT, w->rdmacm_fd);
}

/*
 * Builds and sends r.  Returns 0 (sent), 1 (nothing to send: its worker
 * is gone, its port known) or a negative errno (the link failed).
 */
static int send_req(struct broker *b, const struct req *r)
{
	struct worker *w = NULL;
	struct mp_msg m;

	if (r->type == MP_PORT_ADD || r->type == MP_WORKER_ATTACH ||
	    r->type == MP_RDMACM_ATTACH || r->type == MP_GID_ADD) {
		w = req_worker(b, r);
		if (!w)
			return 1;
	}
	mp_init(&m, r->type);
	switch (r->type) {
	case MP_HELLO:
		break;
	case MP_PORT_ADD:
		if (port_known(w->device, w->port))
			return 1;
		snprintf(m.u.port_add.device, sizeof(m.u.port_add.device), "%s",
			 w->device);
		m.u.port_add.port = w->port;
		break;
	case MP_WORKER_ATTACH:
		return send_attach(b, w, &m);
	case MP_RDMACM_ATTACH:
		return send_rdmacm_attach(b, w, &m);
	case MP_WORKER_DETACH:
		m.u.ref.worker_id = r->worker_id;
		break;
	case MP_GID_ADD:
		m.u.gid_add.worker_id = worker_id(b, w);
		snprintf(m.u.gid_add.device, sizeof(m.u.gid_add.device), "%s",
			 w->device);
		m.u.gid_add.port = w->port;
		memcpy(m.u.gid_add.gid, r->gid, 16);
		m.u.gid_add.host_gid_index = r->index;
		break;
	case MP_GID_DEL:
		m.u.gid_del.worker_id = r->worker_id;
		memcpy(m.u.gid_del.gid, r->gid, 16);
		break;
	default:
		return 1;
	}
	return mp_send(b->mux_fd, &m, MSG_DONTWAIT, -1);
}

/* The next request: the sweep's detaches first, then the queue. */
static bool next_req(struct broker *b, struct req *r)
{
	memset(r, 0, sizeof(*r));
	while (L.sweep && L.sweep <= BROKER_MAX_WORKERS) {
		unsigned int id = L.sweep++;

		if (!L.owed[id - 1])
			continue;
		L.owed[id - 1] = false;
		r->type = MP_WORKER_DETACH;
		r->worker_id = id;
		return true;
	}
	L.sweep = 0;
	if (!L.n)
		return false;
	*r = L.q[L.head];
	L.head = (L.head + 1) % MUX_QUEUE;
	L.n--;
	return true;
}

static void pump(struct broker *b)
{
	struct req r;
	int ret;

	while (b->mux_fd >= 0 && L.state == LINK_UP && !L.busy &&
	       next_req(b, &r)) {
		ret = send_req(b, &r);
		if (ret == 1)
			continue;
		if (ret < 0) {
			if (r.type == MP_WORKER_DETACH)
				L.owed[r.worker_id - 1] = true;
			link_down(b, "sending %s: %s", mp_type_name(r.type),
				  strerror(-ret));
			return;
		}
		L.cur = r;
		L.busy = true;
		L.deadline = mono_ms() + MUX_REPLY_WAIT_MS;
	}
}

/* ---- the link ------------------------------------------------------------ */

static void try_connect(struct broker *b)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct epoll_event ev = { .events = EPOLLIN,
				  .data.u64 = (uint64_t)TAG_MUX << 32 };
	_cleanup_close_ int fd = -1;
	struct reason why;
	struct mp_msg m;
	int ret;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", b->mux_path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		link_down(b, "socket: %s", strerror(errno));
		return;
	}
	/* a UNIX connect does not wait: it succeeds or fails (EAGAIN: the
	 * mux's backlog is full) at once */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		link_down(b, "connect: %s", strerror(errno));
		return;
	}
	/* the mux's messages are root's (it creates its socket as root,
	 * before any --user): another uid is not the mux */
	if (msg_conn_open(&L.conn, &mp_protocol, fd, 1u << MP_FROM_MUX, &why) <
	    0) {
		link_down(b, "%s", why.msg);
		return;
	}
	if (epoll_ctl(b->ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
		link_down(b, "epoll: %s", strerror(errno));
		return;
	}
	b->mux_fd = TAKE_FD(fd);
	mp_init(&m, MP_HELLO);
	ret = mp_send(b->mux_fd, &m, MSG_DONTWAIT, -1);
	if (ret < 0) {
		link_down(b, "sending HELLO: %s", strerror(-ret));
		return;
	}
	L.state = LINK_HELLO;
	L.cur = (struct req){ .type = MP_HELLO };
	L.busy = true;
	L.deadline = mono_ms() + MUX_REPLY_WAIT_MS;
}

int mux_link_open(struct broker *b)
{
	unsigned int i;

	b->mux_fd = -1;
	if (!b->mux_path)
		return 0;
	if (strlen(b->mux_path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return -ENAMETOOLONG;
	for (i = 0; i < BROKER_MAX_WORKERS; i++)
		L.owed[i] = true; /* whatever a previous broker attached */
	L.state = LINK_DOWN;
	try_connect(b);
	return 0;
}

void mux_link_close(struct broker *b)
{
	unsigned int i;

	if (b->mux_fd >= 0) {
		epoll_ctl(b->ep, EPOLL_CTL_DEL, b->mux_fd, NULL);
		b->mux_fd = safe_close(b->mux_fd);
	}
	for (i = 0; i < BROKER_MAX_WORKERS; i++)
		if (b->workers[i].used)
			drop_worker_end(&b->workers[i]);
	L.state = LINK_DOWN;
}

/* Hands w its end of the mux channel over its broker channel. */
static void deliver(struct broker *b, struct worker *w)
{
	struct wp_msg m;
	int ret;

	if (w->mux_fd < 0 || !w->mux_ready || !w->hello || w->chan_fd < 0)
		return;
	wp_init(&m, WP_MUX_CHANNEL);
	m.u.mux_channel.seq = ++w->seq;
	m.u.mux_channel.mux_worker_id = worker_id(b, w);
	ret = wp_send_fd(w->chan_fd, &m, w->mux_fd);
	if (ret < 0)
		log_warnx("worker/%s: handing it its mux channel: %s%s", w->vm,
			  strerror(-ret),
			  ret == -EAGAIN ? " (it does not read its channel; "
					   "again at its next HELLO)"
					 : "");
	else
		log_info("worker/%s: mux channel handed over (mux worker %u)",
			 w->vm, worker_id(b, w));
	if (ret != -EAGAIN)
		drop_worker_end(w);
}

/* A refusal: logged with the mux's text (quietly for an owed DETACH or a
 * GID_DEL of something the mux no longer has). */
static void refused(struct broker *b, const struct req *r,
		    const struct mp_status *st)
{
	struct worker *w = &b->workers[r->row];
	const char *who =
		(r->type == MP_PORT_ADD || r->type == MP_WORKER_ATTACH ||
		 r->type == MP_RDMACM_ATTACH || r->type == MP_GID_ADD)
			? w->vm
			: "";

	if ((r->type == MP_WORKER_DETACH || r->type == MP_GID_DEL) &&
	    st->status == ENOENT) {
		log_debug("mux: %s of worker %u: %s", mp_type_name(r->type),
			  r->worker_id, st->text);
		return;
	}
	log_warnx("mux %s refused %s%s%s: %s (%s)", b->mux_path,
		  mp_type_name(r->type), who[0] ? " for vm " : "", who,
		  st->text, strerror(st->status));
}

static void on_reply(struct broker *b, const struct mp_msg *m)
{
	const struct mp_status *st = &m->u.status;
	struct req r = L.cur;
	struct worker *w;

	L.busy = false;
	if (r.type == MP_HELLO) {
		if (st->status ||
		    m->u.hello_reply.version != RDMAGATE_MUX_VERSION) {
			link_down(b, "HELLO refused: %s (version %u, ours %u)",
				  st->text, m->u.hello_reply.version,
				  RDMAGATE_MUX_VERSION);
			return;
		}
		L.state = LINK_UP;
		L.warned = false;
		log_info("mux %s: connected (%s); replaying the workers",
			 b->mux_path, st->text);
		replay(b);
		return;
	}
	/* the mux holds no such id any more (ENOENT: it never did) */
	if (r.type == MP_WORKER_DETACH && (!st->status || st->status == ENOENT))
		L.known[r.worker_id - 1] = false;
	if (st->status) {
		refused(b, &r, st);
		if (r.type == MP_WORKER_ATTACH && (w = req_worker(b, &r)))
			drop_worker_end(w);
		return;
	}
	switch (r.type) {
	case MP_PORT_ADD:
		w = req_worker(b, &r);
		if (w && L.nports < MUX_MAX_PORTS) {
			snprintf(L.ports[L.nports].device,
				 sizeof(L.ports[L.nports].device), "%s",
				 w->device);
			L.ports[L.nports++].port = w->port;
		}
		break;
	case MP_WORKER_ATTACH:
		w = req_worker(b, &r);
		if (w) {
			w->mux_ready = true;
			deliver(b, w);
		}
		break;
	case MP_RDMACM_ATTACH:
		w = req_worker(b, &r);
		if (w)
			log_info("vm %s: attached to the mux's rdmacm-mux "
				 "endpoint (mux worker %u, QEMU uid %u)",
				 w->vm, worker_id(b, w), (unsigned int)w->uid);
		break;
	}
	log_debug("mux: %s: %s", mp_type_name(r.type), st->text);
}

void mux_link_read(struct broker *b)
{
	struct reason why;
	struct mp_msg m;
	int n;

	if (b->mux_fd < 0)
		return;
	n = msg_conn_recv(&L.conn, b->mux_fd, &m, NULL, MSG_DONTWAIT, &why);
	if (n == 0)
		return;
	if (n == -EPIPE) {
		link_down(b, "%s", why.msg);
		return;
	}
	if (n < 0) {
		link_down(b, "a reply refused: %s", why.msg);
		return;
	}
	if (!L.busy) {
		link_down(b, "%s with no request in flight",
			  mp_type_name(m.h.type));
		return;
	}
	if (m.h.type == MP_ERROR_REPLY) {
		/* our request did not decode: a bug on one side; the link is
		 * still in step (one reply per request) */
		log_warnx("mux %s could not decode our %s: %s", b->mux_path,
			  mp_type_name(L.cur.type), m.u.status.text);
		L.busy = false;
	} else if (m.h.type != L.cur.type + 1) {
		link_down(b, "%s in reply to %s", mp_type_name(m.h.type),
			  mp_type_name(L.cur.type));
		return;
	} else {
		on_reply(b, &m);
	}
	pump(b);
}

int mux_link_timeout(struct broker *b)
{
	uint64_t now = mono_ms(), at;

	if (!b->mux_path)
		return -1;
	if (L.state == LINK_DOWN)
		at = L.retry_at;
	else if (L.busy)
		at = L.deadline;
	else
		return -1;
	return at <= now ? 0 : (int)(at - now);
}

void mux_link_tick(struct broker *b)
{
	uint64_t now;

	if (!b->mux_path)
		return;
	now = mono_ms();
	if (L.state == LINK_DOWN && now >= L.retry_at) {
		try_connect(b);
	} else if (L.state != LINK_DOWN && L.busy && now >= L.deadline) {
		link_down(b, "no reply to %s in %d ms",
			  mp_type_name(L.cur.type), MUX_REPLY_WAIT_MS);
	}
	pump(b);
}

/* ---- events from the rest of the broker ---------------------------------- */

void mux_link_worker_add(struct broker *b, struct worker *w)
{
	w->mux_gen = ++L.gen;
	if (!L.gen)
		w->mux_gen = ++L.gen; /* 0 is never a worker's */
	queue_worker(b, w);
	pump(b);
}

void mux_link_worker_hello(struct broker *b, struct worker *w)
{
	deliver(b, w);
}

void mux_link_worker_gone(struct broker *b, struct worker *w)
{
	struct req r = { .type = MP_WORKER_DETACH,
			 .worker_id = worker_id(b, w) };

	drop_worker_end(w);
	w->mux_gen = 0;
	if (!b->mux_path)
		return;
	if (L.state == LINK_UP) {
		enqueue(b, &r);
		pump(b);
	} else {
		L.owed[r.worker_id - 1] = true;
	}
}

void mux_link_gid_ready(struct broker *b, struct gid_entry *e)
{
	struct worker *w = workers_find(b, e->vm);
	struct req r = { .type = MP_GID_ADD };
	int idx;

	if (L.state != LINK_UP || !w || !w->mux_gen)
		return;
	/* the mux holds one host index per GID and port: the RoCE v2 one,
	 * which rdma_cm uses (the v1 GID has the same 16 bytes) */
	idx = gids_host_index(e->device, e->port, e->gid, WP_GID_ROCE_V2);
	if (idx < 0 || idx > MP_GID_INDEX_MAX) {
		/* a worker's request got here: its limiter */
		worker_logx(w, LOG_LVL_WARN,
			    "worker/%s: no RoCE v2 GID for its address on %s "
			    "port %u (%s): the mux is not told",
			    w->vm, e->device, e->port,
			    idx < 0 ? strerror(-idx) : "index above 255");
		return;
	}
	r.row = worker_id(b, w) - 1;
	r.gen = w->mux_gen;
	r.index = (uint32_t)idx;
	memcpy(r.gid, e->gid, 16);
	e->mux_worker = worker_id(b, w);
	enqueue(b, &r);
	pump(b);
}

void mux_link_gid_gone(struct broker *b, struct gid_entry *e)
{
	struct req r = { .type = MP_GID_DEL, .worker_id = e->mux_worker };

	if (!e->mux_worker)
		return;
	e->mux_worker = 0;
	memcpy(r.gid, e->gid, 16);
	enqueue(b, &r);
	pump(b);
}
