// SPDX-License-Identifier: MIT
/*
 * The guest simulator's CM state machine (guest/cm_conn.c): an active and
 * a passive connection exchange MADs in memory, on a clock the test
 * moves, with MADs lost, duplicated, reordered or forged on the way, and
 * QP steps that can fail.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "common/log.h"
#include "guest/cm_conn.h"

#define QPN_A 0x000101
#define QPN_B 0x000202
#define PSN_A 0x00a0a0
#define PSN_B 0x00b0b0
#define PORT  18515
#define TMO   100 /* ms per MAD */
#define RETRY 3

#define MAXQ 64

struct pkt {
	struct cm_peer from;
	uint8_t mad[CM_MAD_LEN];
	uint16_t attr;
};

struct end;

/* What the network does to the n-th MAD of an attribute (1-based). */
struct rule {
	uint16_t attr;
	unsigned int nth;  /* 0: every one */
	unsigned int drop; /* 1: lost */
	unsigned int dup;  /* 1: delivered twice */
	unsigned int hold; /* 1: held back until release() */
};

struct end {
	struct cm_conn c;
	struct end *peer;
	struct pkt q[MAXQ];
	unsigned int nq;
	struct pkt held[MAXQ];
	unsigned int nheld;
	unsigned int sent[0x20]; /* by attribute */
	struct rule rules[4];
	unsigned int nrules;
	/* QP */
	int connects, disconnects, connect_err;
	struct cm_qp_attr attr;
	uint8_t gid[16];
};

static void push(struct pkt *q, unsigned int *n, const struct pkt *p)
{
	assert_true(*n < MAXQ);
	q[(*n)++] = *p;
}

static int t_send(void *arg, const struct cm_peer *to,
		  const uint8_t mad[CM_MAD_LEN])
{
	struct end *e = arg, *d = e->peer;
	uint16_t attr = (uint16_t)(mad[16] << 8 | mad[17]);
	unsigned int n = ++e->sent[attr & 0x1f];
	struct pkt p = { .attr = attr };

	/* the destination is the peer's GID, QP1 */
	assert_memory_equal(to->gid, d->gid, 16);
	assert_int_equal(to->qpn, 1);
	memcpy(p.from.gid, e->gid, 16);
	p.from.qpn = 1;
	memcpy(p.mad, mad, CM_MAD_LEN);
	for (unsigned int i = 0; i < e->nrules; i++) {
		const struct rule *r = &e->rules[i];

		if (r->attr != attr || (r->nth && r->nth != n))
			continue;
		if (r->drop)
			return 0;
		if (r->hold) {
			push(e->held, &e->nheld, &p);
			return 0;
		}
		if (r->dup)
			push(d->q, &d->nq, &p);
	}
	push(d->q, &d->nq, &p);
	return 0;
}

static int t_recv(void *arg, struct cm_peer *from, uint8_t mad[CM_MAD_LEN],
		  size_t *len, int timeout_ms)
{
	struct end *e = arg;

	(void)timeout_ms;
	if (!e->nq)
		return -EAGAIN;
	*from = e->q[0].from;
	memcpy(mad, e->q[0].mad, CM_MAD_LEN);
	*len = CM_MAD_LEN;
	memmove(e->q, e->q + 1, --e->nq * sizeof(e->q[0]));
	return 0;
}

static const struct cm_transport_ops tops = { t_send, t_recv };

static int q_connect(void *arg, const struct cm_qp_attr *attr)
{
	struct end *e = arg;

	e->connects++;
	e->attr = *attr;
	return e->connect_err;
}

static void q_disconnect(void *arg)
{
	struct end *e = arg;

	e->disconnects++;
}

static const struct cm_qp_ops qops = { q_connect, q_disconnect };

struct pair {
	struct end a, b; /* a active (10.99.0.1), b passive (10.99.0.2) */
	uint64_t now;
};

static void setup_pair(struct pair *p)
{
	struct cm_conn_cfg cfg;

	memset(p, 0, sizeof(*p));
	p->now = 1000;
	p->a.peer = &p->b;
	p->b.peer = &p->a;
	cm_conn_cfg_default(&cfg);
	cfg.timeout_ms = TMO;
	cfg.max_cm_retries = RETRY;
	memcpy(p->a.gid, "\0\0\0\0\0\0\0\0\0\0\xff\xff\x0a\x63\x00\x01", 16);
	memcpy(p->b.gid, "\0\0\0\0\0\0\0\0\0\0\xff\xff\x0a\x63\x00\x02", 16);
	memcpy(cfg.gid, p->a.gid, 16);
	cfg.ca_guid = 0xaaaa;
	cm_conn_init(&p->a.c, &cfg, &tops, &p->a, &qops, &p->a);
	memcpy(cfg.gid, p->b.gid, 16);
	cfg.ca_guid = 0xbbbb;
	cfg.sgid_index = 3;
	cm_conn_init(&p->b.c, &cfg, &tops, &p->b, &qops, &p->b);
}

static int connect_a(struct pair *p, uint16_t port)
{
	struct cm_ip_hdr ip = { .ip_version = 4, .src_port = 40000 };

	memcpy(ip.src + 12, p->a.gid + 12, 4);
	memcpy(ip.dst + 12, p->b.gid + 12, 4);
	return cm_conn_connect(&p->a.c, &ip, port, QPN_A, PSN_A, "hello", 6,
			       p->now);
}

/* Delivers until both queues are empty. */
static void pump(struct pair *p)
{
	for (int guard = 0; guard < 1000 && (p->a.nq || p->b.nq); guard++) {
		struct end *e = p->a.nq ? &p->a : &p->b;
		uint8_t mad[CM_MAD_LEN];
		struct cm_peer from;
		size_t len;

		assert_int_equal(t_recv(e, &from, mad, &len, 0), 0);
		cm_conn_input(&e->c, &from, mad, len, p->now);
	}
	assert_int_equal(p->a.nq + p->b.nq, 0);
}

/* Moves the clock by ms, runs both timers, delivers. */
static void advance(struct pair *p, uint64_t ms)
{
	p->now += ms;
	cm_conn_tick(&p->a.c, p->now);
	cm_conn_tick(&p->b.c, p->now);
	pump(p);
}

static void release(struct end *e)
{
	for (unsigned int i = 0; i < e->nheld; i++)
		push(e->peer->q, &e->peer->nq, &e->held[i]);
	e->nheld = 0;
}

static void rule(struct end *e, uint16_t attr, unsigned int nth,
		 unsigned int drop, unsigned int dup, unsigned int hold)
{
	e->rules[e->nrules++] = (struct rule){ attr, nth, drop, dup, hold };
}

static void establish(struct pair *p)
{
	assert_int_equal(cm_conn_listen(&p->b.c, PORT, QPN_B, PSN_B), 0);
	assert_int_equal(connect_a(p, PORT), 0);
	pump(p);
}

static void assert_connected(struct pair *p)
{
	assert_int_equal(p->a.c.state, CM_ESTABLISHED);
	assert_int_equal(p->b.c.state, CM_ESTABLISHED);
	assert_int_equal(p->a.connects, 1);
	assert_int_equal(p->b.connects, 1);
	assert_int_equal(p->a.attr.remote_qpn, QPN_B);
	assert_int_equal(p->a.attr.remote_psn, PSN_B);
	assert_int_equal(p->a.attr.local_qpn, QPN_A);
	assert_int_equal(p->b.attr.remote_qpn, QPN_A);
	assert_int_equal(p->b.attr.remote_psn, PSN_A);
	assert_memory_equal(p->a.attr.dgid, p->b.gid, 16);
	assert_memory_equal(p->b.attr.dgid, p->a.gid, 16);
}

/* ---- good paths ---- */

static void connect_and_disconnect(void **state)
{
	struct pair p;
	struct cm_msg m;

	(void)state;
	setup_pair(&p);
	establish(&p);
	assert_connected(&p);
	assert_int_equal(p.a.c.remote_id, p.b.c.local_id);
	assert_int_equal(p.b.c.remote_id, p.a.c.local_id);
	assert_true(p.b.c.remote_ca_guid == 0xaaaa);
	assert_true(p.a.c.remote_ca_guid == 0xbbbb);
	/* the path the passive side takes from the REQ */
	assert_int_equal(p.b.attr.path_mtu, 3);
	assert_int_equal(p.b.attr.sgid_index, 3);
	assert_int_equal(p.b.attr.hop_limit, 64);
	assert_int_equal(p.b.attr.flow_label, cm_ip_flow_label(40000, PORT));
	assert_int_equal(p.b.attr.local_ack_timeout, 17);
	assert_int_equal(p.b.attr.retry_count, 7);
	/* the REQ's CMA header and user data reached the passive side */
	assert_int_equal(p.b.c.ip.ip_version, 4);
	assert_int_equal(p.b.c.ip.src_port, 40000);
	assert_memory_equal(p.b.c.ip.src + 12, "\x0a\x63\x00\x01", 4);
	assert_string_equal((const char *)p.b.c.user, "hello");
	/* one of each, nothing resent */
	assert_int_equal(p.a.sent[CM_ATTR_REQ & 0x1f], 1);
	assert_int_equal(p.b.sent[CM_ATTR_REP & 0x1f], 1);
	assert_int_equal(p.a.sent[CM_ATTR_RTU & 0x1f], 1);
	assert_int_equal(p.a.c.stats.resent + p.b.c.stats.resent, 0);
	assert_int_equal(cm_conn_deadline(&p.a.c), 0);
	assert_int_equal(cm_conn_deadline(&p.b.c), 0);

	/* the RTU carries the REQ's TID and both ids */
	assert_int_equal(cm_decode(p.a.c.reply, CM_MAD_LEN, &m, NULL), 0);
	assert_int_equal(m.hdr.attr_id, CM_ATTR_RTU);
	assert_int_equal(m.rtu.local_comm_id, p.a.c.local_id);
	assert_int_equal(m.rtu.remote_comm_id, p.b.c.local_id);
	assert_true(m.hdr.tid == p.b.c.tid);

	assert_int_equal(cm_conn_disconnect(&p.a.c, p.now), 0);
	assert_int_equal(p.a.disconnects, 1); /* QP to ERR before the DREQ */
	pump(&p);
	assert_int_equal(p.a.c.state, CM_TIMEWAIT);
	assert_int_equal(p.b.c.state, CM_TIMEWAIT);
	assert_true(p.b.c.peer_disconnected);
	assert_false(p.a.c.peer_disconnected);
	assert_int_equal(p.b.disconnects, 1);
	advance(&p, TMO);
	assert_int_equal(p.a.c.state, CM_CLOSED);
	assert_int_equal(p.b.c.state, CM_CLOSED);
	/* disconnecting again is a no-op */
	assert_int_equal(cm_conn_disconnect(&p.a.c, p.now), 0);
}

/* What goes on the wire: a REQ as rdma_cm writes it for RoCE. */
static void req_on_the_wire(void **state)
{
	struct pair p;
	struct cm_msg m;
	struct cm_ip_hdr ip;

	(void)state;
	setup_pair(&p);
	assert_int_equal(connect_a(&p, PORT), 0);
	assert_int_equal(p.b.nq, 1);
	assert_int_equal(cm_decode(p.b.q[0].mad, CM_MAD_LEN, &m, NULL), 0);
	assert_int_equal(m.hdr.attr_id, CM_ATTR_REQ);
	assert_true(m.req.service_id == 0x0000000001064853ull);
	assert_int_equal(m.req.local_qpn, QPN_A);
	assert_int_equal(m.req.starting_psn, PSN_A);
	assert_int_equal(m.req.transport, CM_TRANSPORT_RC);
	assert_int_equal(m.req.pkey, 0xffff);
	assert_int_equal(m.req.path_mtu, 3);
	assert_int_equal(m.req.max_cm_retries, RETRY);
	assert_int_equal(m.req.remote_cm_response_timeout, 20);
	assert_int_equal(m.req.primary.local_lid, 0xffff);
	assert_int_equal(m.req.primary.remote_lid, 0xffff);
	assert_false(m.req.primary.subnet_local);
	assert_int_equal(m.req.primary.hop_limit, 64);
	assert_memory_equal(m.req.primary.local_gid, p.a.gid, 16);
	assert_memory_equal(m.req.primary.remote_gid, p.b.gid, 16);
	assert_false(m.req.has_alternate);
	assert_int_equal(cm_ip_decode(m.req.private_data, &ip, NULL), 0);
	assert_memory_equal(ip.dst + 12, "\x0a\x63\x00\x02", 4);
	assert_int_equal(p.a.c.state, CM_REQ_SENT);
	assert_int_equal(cm_conn_deadline(&p.a.c), p.now + TMO);
}

/* ---- lost, repeated, reordered MADs ---- */

static void lost_req_is_resent(void **state)
{
	struct pair p;

	(void)state;
	setup_pair(&p);
	rule(&p.a, CM_ATTR_REQ, 1, 1, 0, 0);
	establish(&p);
	assert_int_equal(p.a.c.state, CM_REQ_SENT);
	assert_int_equal(p.b.c.state, CM_LISTEN);
	advance(&p, TMO - 1); /* not yet */
	assert_int_equal(p.a.sent[CM_ATTR_REQ & 0x1f], 1);
	advance(&p, 1);
	assert_connected(&p);
	assert_int_equal(p.a.c.stats.resent, 1);
}

static void lost_rep_is_resent(void **state)
{
	struct pair p;

	(void)state;
	setup_pair(&p);
	rule(&p.b, CM_ATTR_REP, 1, 1, 0, 0);
	establish(&p);
	assert_int_equal(p.b.c.state, CM_REP_SENT);
	assert_int_equal(p.b.connects, 1); /* RTR/RTS before the REP */
	/* both time out: the REQ again (a duplicate at b), the REP again */
	advance(&p, TMO);
	assert_connected(&p);
	assert_int_equal(p.b.c.stats.duplicates, 1);
	assert_int_equal(p.b.sent[CM_ATTR_REP & 0x1f], 2);
}

static void lost_rtu_answered_by_repeated_rep(void **state)
{
	struct pair p;

	(void)state;
	setup_pair(&p);
	rule(&p.a, CM_ATTR_RTU, 1, 1, 0, 0);
	establish(&p);
	assert_int_equal(p.a.c.state, CM_ESTABLISHED);
	assert_int_equal(p.b.c.state, CM_REP_SENT);
	advance(&p, TMO); /* REP again; a answers its RTU again */
	assert_connected(&p);
	assert_int_equal(p.a.c.stats.duplicates, 1);
	assert_int_equal(p.a.sent[CM_ATTR_RTU & 0x1f], 2);
}

static void every_mad_twice(void **state)
{
	static const uint16_t attrs[] = { CM_ATTR_REQ, CM_ATTR_REP, CM_ATTR_RTU,
					  CM_ATTR_DREQ, CM_ATTR_DREP };
	struct pair p;

	(void)state;
	setup_pair(&p);
	for (size_t i = 0; i < 4; i++) {
		rule(&p.a, attrs[i], 0, 0, 1, 0);
		rule(&p.b, attrs[i + 1], 0, 0, 1, 0);
	}
	establish(&p);
	assert_connected(&p); /* one QP step each despite the repeats */
	assert_int_equal(cm_conn_disconnect(&p.a.c, p.now), 0);
	pump(&p);
	assert_int_equal(p.a.c.state, CM_TIMEWAIT);
	assert_int_equal(p.b.c.state, CM_TIMEWAIT);
	assert_int_equal(p.b.disconnects, 1);
	assert_true(p.a.c.stats.duplicates + p.b.c.stats.duplicates >= 3);
	assert_int_equal(p.a.c.state, CM_TIMEWAIT);
}

static void dreq_overtakes_rtu(void **state)
{
	struct pair p;

	(void)state;
	setup_pair(&p);
	rule(&p.a, CM_ATTR_RTU, 1, 0, 0, 1);
	establish(&p);
	assert_int_equal(p.b.c.state, CM_REP_SENT);
	assert_int_equal(cm_conn_disconnect(&p.a.c, p.now), 0);
	pump(&p); /* DREQ in REP_SENT: DREP, both in TIMEWAIT */
	assert_int_equal(p.a.c.state, CM_TIMEWAIT);
	assert_int_equal(p.b.c.state, CM_TIMEWAIT);
	release(&p.a);
	pump(&p); /* the late RTU changes nothing */
	assert_int_equal(p.b.c.state, CM_TIMEWAIT);
	assert_int_equal(p.b.c.stats.unmatched, 1);
}

static void lost_drep_answered_by_repeated_dreq(void **state)
{
	struct pair p;

	(void)state;
	setup_pair(&p);
	rule(&p.b, CM_ATTR_DREP, 1, 1, 0, 0);
	establish(&p);
	assert_int_equal(cm_conn_disconnect(&p.a.c, p.now), 0);
	pump(&p);
	assert_int_equal(p.a.c.state, CM_DREQ_SENT);
	assert_int_equal(p.b.c.state, CM_TIMEWAIT);
	p.now += TMO / 2; /* b still in TIMEWAIT when the DREQ comes again */
	cm_conn_tick(&p.b.c, p.now);
	p.now += TMO / 2;
	cm_conn_tick(&p.a.c, p.now);
	pump(&p);
	assert_int_equal(p.a.c.state, CM_TIMEWAIT);
	assert_int_equal(p.b.sent[CM_ATTR_DREP & 0x1f], 2);
}

static void simultaneous_dreqs(void **state)
{
	struct pair p;

	(void)state;
	setup_pair(&p);
	establish(&p);
	assert_int_equal(cm_conn_disconnect(&p.a.c, p.now), 0);
	assert_int_equal(cm_conn_disconnect(&p.b.c, p.now), 0);
	pump(&p);
	assert_int_equal(p.a.c.state, CM_TIMEWAIT);
	assert_int_equal(p.b.c.state, CM_TIMEWAIT);
	assert_int_equal(p.a.disconnects, 1);
	assert_int_equal(p.b.disconnects, 1);
}

/* ---- refusals and timeouts ---- */

static void feed(struct end *e, const uint8_t *gid, const struct cm_msg *m,
		 uint64_t now)
{
	struct cm_peer from = { .qpn = 1 };
	uint8_t b[CM_MAD_LEN];

	memcpy(from.gid, gid, 16);
	assert_int_equal(cm_encode(m, b, NULL), CM_MAD_LEN);
	cm_conn_input(&e->c, &from, b, sizeof(b), now);
}

static void rej_for_another_port(void **state)
{
	struct pair p;

	(void)state;
	setup_pair(&p);
	assert_int_equal(cm_conn_listen(&p.b.c, PORT, QPN_B, PSN_B), 0);
	assert_int_equal(connect_a(&p, PORT + 1), 0);
	pump(&p);
	assert_int_equal(p.a.c.state, CM_FAILED);
	assert_int_equal(p.a.c.error, -ECONNREFUSED);
	assert_int_equal(p.a.c.rej_reason, CM_REJ_INVALID_SERVICE_ID);
	assert_non_null(strstr(p.a.c.why.msg, "invalid service id"));
	assert_int_equal(p.a.connects, 0);
	assert_int_equal(p.b.c.state, CM_LISTEN); /* still listening */
	assert_int_equal(p.b.connects, 0);
	assert_int_equal(cm_conn_deadline(&p.a.c), 0);
	assert_int_equal(p.b.sent[CM_ATTR_REJ & 0x1f], 1);
}

/* A REQ to b as a's rdma_cm would send it, comm id `id`. */
static void make_req(struct pair *p, uint32_t id, struct cm_msg *m)
{
	struct cm_ip_hdr ip = { .ip_version = 4, .src_port = 40001 };

	memset(m, 0, sizeof(*m));
	cm_mad_hdr_init(&m->hdr, CM_ATTR_REQ, 0x42);
	m->req.local_comm_id = id;
	m->req.service_id = cm_ip_service_id(CM_IP_PS_TCP, PORT);
	m->req.local_ca_guid = 0xaaaa;
	m->req.local_qpn = 0x999;
	m->req.path_mtu = 3;
	memcpy(m->req.primary.local_gid, p->a.gid, 16);
	memcpy(m->req.primary.remote_gid, p->b.gid, 16);
	memcpy(ip.src + 12, p->a.gid + 12, 4);
	memcpy(ip.dst + 12, p->b.gid + 12, 4);
	assert_int_equal(cm_ip_encode(&ip, NULL, 0, m->req.private_data, NULL),
			 0);
}

/* The REJ b sent to a (the only MAD in a's queue), taken off it. */
static void take_rej(struct pair *p, struct cm_msg *m)
{
	assert_int_equal(p->a.nq, 1);
	assert_int_equal(cm_decode(p->a.q[0].mad, CM_MAD_LEN, m, NULL), 0);
	assert_int_equal(m->hdr.attr_id, CM_ATTR_REJ);
	assert_int_equal(m->rej.msg_rejected, CM_MSG_RESPONSE_REQ);
	assert_int_equal(m->rej.remote_comm_id, 0x77);
	assert_true(m->hdr.tid == 0x42);
	p->a.nq = 0;
}

/* a's rdma_cm asking b for UD service `port` (SIDR_REQ, request id 0x51). */
static void feed_sidr_req(struct pair *p, uint16_t port, const uint8_t *dst)
{
	struct cm_ip_hdr ip = { .ip_version = 4, .src_port = 40002 };
	struct cm_msg m;

	memset(&m, 0, sizeof(m));
	cm_mad_hdr_init(&m.hdr, CM_ATTR_SIDR_REQ, 0x43);
	m.sidr_req.request_id = 0x51;
	m.sidr_req.service_id = cm_ip_service_id(CM_IP_PS_UDP, port);
	memcpy(ip.src + 12, p->a.gid + 12, 4);
	memcpy(ip.dst + 12, dst + 12, 4);
	assert_int_equal(
		cm_ip_encode(&ip, NULL, 0, m.sidr_req.private_data, NULL), 0);
	feed(&p->b, p->a.gid, &m, p->now);
}

/* The SIDR_REP b sent to a, taken off a's queue. */
static void take_sidr_rep(struct pair *p, struct cm_msg *m)
{
	assert_int_equal(p->a.nq, 1);
	assert_int_equal(cm_decode(p->a.q[0].mad, CM_MAD_LEN, m, NULL), 0);
	assert_int_equal(m->hdr.attr_id, CM_ATTR_SIDR_REP);
	assert_true(m->hdr.tid == 0x43);
	assert_int_equal(m->sidr_rep.request_id, 0x51);
	p->a.nq = 0;
}

static void sidr_answered(void **state)
{
	struct pair p;
	struct cm_msg m;

	(void)state;
	setup_pair(&p);
	/* an RC listener has no UD service: "not supported", as ib_cm */
	assert_int_equal(cm_conn_listen(&p.b.c, PORT, QPN_B, PSN_B), 0);
	feed_sidr_req(&p, PORT, p.b.gid);
	take_sidr_rep(&p, &m);
	assert_int_equal(m.sidr_rep.status, CM_SIDR_UNSUPPORTED);
	assert_int_equal(p.b.c.state, CM_LISTEN);

	setup_pair(&p);
	assert_int_equal(cm_conn_sidr_listen(&p.b.c, PORT, QPN_B, 0x01234567),
			 0);
	/* another port, or another destination address: not supported */
	feed_sidr_req(&p, PORT + 1, p.b.gid);
	take_sidr_rep(&p, &m);
	assert_int_equal(m.sidr_rep.status, CM_SIDR_UNSUPPORTED);
	feed_sidr_req(&p, PORT, p.a.gid);
	take_sidr_rep(&p, &m);
	assert_int_equal(m.sidr_rep.status, CM_SIDR_UNSUPPORTED);
	assert_int_equal(p.b.c.state, CM_LISTEN);
	/* ours: our UD QP and Q_Key, and the requester is the peer */
	feed_sidr_req(&p, PORT, p.b.gid);
	take_sidr_rep(&p, &m);
	assert_int_equal(m.sidr_rep.status, CM_SIDR_SUCCESS);
	assert_int_equal(m.sidr_rep.qpn, QPN_B);
	assert_int_equal(m.sidr_rep.qkey, 0x01234567);
	assert_true(m.sidr_rep.service_id ==
		    cm_ip_service_id(CM_IP_PS_UDP, PORT));
	assert_int_equal(p.b.c.state, CM_ESTABLISHED);
	assert_memory_equal(p.b.c.qp.dgid, p.a.gid, 16);
	/* the same request again (our answer was lost): the same answer */
	feed_sidr_req(&p, PORT, p.b.gid);
	take_sidr_rep(&p, &m);
	assert_int_equal(m.sidr_rep.status, CM_SIDR_SUCCESS);
	assert_int_equal(m.sidr_rep.qpn, QPN_B);
	assert_int_equal(p.b.c.stats.duplicates, 1);
	assert_int_equal(p.b.connects, 0); /* UD: no QP steps of CM's */
}

static void passive_refusals(void **state)
{
	struct pair p;
	struct cm_msg m, rej;
	struct cm_ip_hdr ip;

	(void)state;
	setup_pair(&p);
	assert_int_equal(cm_conn_listen(&p.b.c, PORT, QPN_B, PSN_B), 0);
	/* the CMA header names another destination address */
	make_req(&p, 0x77, &m);
	assert_int_equal(cm_ip_decode(m.req.private_data, &ip, NULL), 0);
	ip.dst[15] = 9;
	assert_int_equal(cm_ip_encode(&ip, NULL, 0, m.req.private_data, NULL),
			 0);
	feed(&p.b, p.a.gid, &m, p.now);
	take_rej(&p, &rej);
	assert_int_equal(rej.rej.reason, CM_REJ_CONSUMER_DEFINED);
	assert_non_null(strstr(p.b.c.why.msg, "destination"));
	/* no CMA header at all (version 1) */
	make_req(&p, 0x77, &m);
	m.req.private_data[0] = 1;
	feed(&p.b, p.a.gid, &m, p.now);
	take_rej(&p, &rej);
	assert_int_equal(rej.rej.reason, CM_REJ_CONSUMER_DEFINED);
	/* the path's remote GID is not ours: INVALID_GID, ours as ARI */
	make_req(&p, 0x77, &m);
	m.req.primary.remote_gid[15] = 7;
	feed(&p.b, p.a.gid, &m, p.now);
	take_rej(&p, &rej);
	assert_int_equal(rej.rej.reason, CM_REJ_INVALID_GID);
	assert_int_equal(rej.rej.ari_length, 16);
	assert_memory_equal(rej.rej.ari, p.b.gid, 16);
	/* UC */
	make_req(&p, 0x77, &m);
	m.req.transport = CM_TRANSPORT_UC;
	feed(&p.b, p.a.gid, &m, p.now);
	take_rej(&p, &rej);
	assert_int_equal(rej.rej.reason, CM_REJ_INVALID_TRANSPORT_TYPE);
	/* another port space (UDP) */
	make_req(&p, 0x77, &m);
	m.req.service_id = cm_ip_service_id(CM_IP_PS_UDP, PORT);
	feed(&p.b, p.a.gid, &m, p.now);
	take_rej(&p, &rej);
	assert_int_equal(rej.rej.reason, CM_REJ_INVALID_SERVICE_ID);
	/* none of them touched the listener */
	assert_int_equal(p.b.c.state, CM_LISTEN);
	assert_int_equal(p.b.connects, 0);
	assert_int_equal(p.b.c.stats.rej_sent, 5);
	/* and a good one still connects */
	make_req(&p, 0x77, &m);
	feed(&p.b, p.a.gid, &m, p.now);
	assert_int_equal(p.b.c.state, CM_REP_SENT);
	assert_int_equal(p.b.attr.remote_qpn, 0x999);
	p.a.nq = 0;
}

static void rej_when_passive_qp_fails(void **state)
{
	struct pair p;

	(void)state;
	setup_pair(&p);
	p.b.connect_err = -EINVAL;
	establish(&p);
	assert_int_equal(p.a.c.state, CM_FAILED);
	assert_int_equal(p.a.c.rej_reason, CM_REJ_CONSUMER_DEFINED);
	assert_int_equal(p.b.c.state, CM_FAILED);
	assert_int_equal(p.b.c.error, -EINVAL);
	assert_int_equal(p.b.disconnects, 0); /* never connected */
}

static void rej_when_active_qp_fails(void **state)
{
	struct pair p;

	(void)state;
	setup_pair(&p);
	p.a.connect_err = -EIO;
	establish(&p);
	assert_int_equal(p.a.c.state, CM_FAILED);
	assert_int_equal(p.a.c.error, -EIO);
	assert_int_equal(p.b.c.state, CM_FAILED);
	assert_int_equal(p.b.c.error, -ECONNREFUSED);
	assert_int_equal(p.b.c.rej_reason, CM_REJ_CONSUMER_DEFINED);
	assert_int_equal(p.b.disconnects, 1); /* b's QP was in RTS */
}

static void req_never_answered_times_out(void **state)
{
	struct pair p;
	struct cm_msg m;

	(void)state;
	setup_pair(&p);
	rule(&p.a, CM_ATTR_REQ, 0, 1, 0, 0);
	establish(&p);
	for (int i = 0; i < RETRY; i++) {
		advance(&p, TMO);
		assert_int_equal(p.a.c.state, CM_REQ_SENT);
	}
	assert_int_equal(p.a.sent[CM_ATTR_REQ & 0x1f], 1 + RETRY);
	advance(&p, TMO);
	assert_int_equal(p.a.c.state, CM_FAILED);
	assert_int_equal(p.a.c.error, -ETIMEDOUT);
	assert_non_null(strstr(p.a.c.why.msg, "REQ not answered"));
	/* and a REJ (timeout, our GUID) tells the passive side */
	assert_int_equal(p.a.sent[CM_ATTR_REJ & 0x1f], 1);
	assert_int_equal(p.b.c.stats.received, 1);
	assert_int_equal(p.b.c.state, CM_LISTEN);
	/* nothing more happens */
	advance(&p, 10 * TMO);
	assert_int_equal(p.a.sent[CM_ATTR_REQ & 0x1f], 1 + RETRY);
	(void)m;
}

static void rep_never_answered_times_out(void **state)
{
	struct pair p;

	(void)state;
	setup_pair(&p);
	rule(&p.b, CM_ATTR_REP, 0, 1, 0, 0);
	establish(&p);
	for (int i = 0; i <= RETRY; i++)
		advance(&p, TMO);
	assert_int_equal(p.b.c.state, CM_FAILED);
	assert_int_equal(p.b.c.error, -ETIMEDOUT);
	assert_int_equal(p.b.disconnects, 1);
	/* b's REJ (timeout) reached a, which failed with it, or timed out */
	assert_int_equal(p.a.c.state, CM_FAILED);
}

static void dreq_never_answered_ends_in_timewait(void **state)
{
	struct pair p;

	(void)state;
	setup_pair(&p);
	rule(&p.a, CM_ATTR_DREQ, 0, 1, 0, 0);
	establish(&p);
	assert_int_equal(cm_conn_disconnect(&p.a.c, p.now), 0);
	for (int i = 0; i < RETRY; i++)
		advance(&p, TMO);
	assert_int_equal(p.a.c.state, CM_DREQ_SENT);
	advance(&p, TMO);
	assert_int_equal(p.a.c.state, CM_TIMEWAIT);
	assert_int_equal(p.a.sent[CM_ATTR_DREQ & 0x1f], 1 + RETRY);
	advance(&p, TMO);
	assert_int_equal(p.a.c.state, CM_CLOSED);
}

static void mra_extends_the_wait(void **state)
{
	struct pair p;
	struct cm_msg m;
	uint8_t b[CM_MAD_LEN];
	struct cm_peer from = { .qpn = 1 };

	(void)state;
	setup_pair(&p);
	assert_int_equal(connect_a(&p, PORT), 0);
	p.b.nq = 0;
	memset(&m, 0, sizeof(m));
	cm_mad_hdr_init(&m.hdr, CM_ATTR_MRA, p.a.c.tid);
	m.mra.local_comm_id = 0x1234;
	m.mra.remote_comm_id = p.a.c.local_id;
	m.mra.msg_mraed = CM_MSG_RESPONSE_REQ;
	m.mra.service_timeout = 18; /* 1024 ms */
	assert_int_equal(cm_encode(&m, b, NULL), CM_MAD_LEN);
	memcpy(from.gid, p.b.gid, 16);
	cm_conn_input(&p.a.c, &from, b, sizeof(b), p.now);
	/* 1024 + 2 * 256 (packet life 16) */
	assert_int_equal(cm_conn_deadline(&p.a.c), p.now + 1024 + 512);
	advance(&p, TMO * 5);
	assert_int_equal(p.a.sent[CM_ATTR_REQ & 0x1f], 1);
}

/* ---- hostile input ---- */

static void garbage_is_counted_and_dropped(void **state)
{
	struct pair p;
	struct cm_peer from = { .qpn = 1 };
	uint8_t b[CM_MAD_LEN] = { 1, 0x07, 2, 3 };

	(void)state;
	setup_pair(&p);
	establish(&p);
	memcpy(from.gid, p.a.gid, 16);
	cm_conn_input(&p.b.c, &from, b, 100, p.now);	   /* short */
	cm_conn_input(&p.b.c, &from, b, sizeof(b), p.now); /* attr 0 */
	b[1] = 0x81;
	cm_conn_input(&p.b.c, &from, b, sizeof(b), p.now); /* class */
	assert_int_equal(p.b.c.stats.bad, 3);
	assert_int_equal(p.b.c.state, CM_ESTABLISHED);
	assert_int_equal(p.b.nq + p.a.nq, 0); /* nothing answered */
}

static void forged_mads_do_not_touch_the_connection(void **state)
{
	static const uint8_t other[16] = { 0xfe, 0x80, [15] = 9 };
	struct pair p;
	struct cm_msg m;

	(void)state;
	setup_pair(&p);
	establish(&p);
	/* a DREQ with the right ids from another GID */
	memset(&m, 0, sizeof(m));
	cm_mad_hdr_init(&m.hdr, CM_ATTR_DREQ, 77);
	m.dreq.local_comm_id = p.a.c.local_id;
	m.dreq.remote_comm_id = p.b.c.local_id;
	m.dreq.remote_qpn = QPN_B;
	p.b.peer = &p.a; /* answers, if any, are checked against a's GID */
	memcpy(p.a.gid, other, 16);
	feed(&p.b, other, &m, p.now);
	assert_int_equal(p.b.c.state, CM_ESTABLISHED);
	/* from a's GID but naming another QP */
	memcpy(p.a.gid, p.a.c.cfg.gid, 16);
	m.dreq.remote_qpn = QPN_B + 1;
	feed(&p.b, p.a.gid, &m, p.now);
	assert_int_equal(p.b.c.state, CM_ESTABLISHED);
	/* an RTU with a wrong sender id */
	memset(&m, 0, sizeof(m));
	cm_mad_hdr_init(&m.hdr, CM_ATTR_RTU, 78);
	m.rtu.local_comm_id = p.a.c.local_id + 1;
	m.rtu.remote_comm_id = p.b.c.local_id;
	feed(&p.b, p.a.gid, &m, p.now);
	/* a REJ once established */
	memset(&m, 0, sizeof(m));
	cm_mad_hdr_init(&m.hdr, CM_ATTR_REJ, 79);
	m.rej.local_comm_id = p.a.c.local_id;
	m.rej.remote_comm_id = p.b.c.local_id;
	feed(&p.b, p.a.gid, &m, p.now);
	assert_int_equal(p.b.c.state, CM_ESTABLISHED);
	assert_int_equal(p.b.disconnects, 0);
	assert_int_equal(p.b.c.stats.unmatched, 4);
	/* the DREQ from elsewhere got the DREP ib_cm gives unknown ids */
	assert_int_equal(p.b.sent[CM_ATTR_DREP & 0x1f], 1);
	pump(&p);
}

static void second_req_is_refused(void **state)
{
	struct pair p;
	struct cm_msg m, rej;

	(void)state;
	setup_pair(&p);
	establish(&p);
	/* a repeat of a's REQ (same comm id and CA GUID): discarded */
	make_req(&p, p.a.c.local_id, &m);
	feed(&p.b, p.a.gid, &m, p.now);
	assert_int_equal(p.b.c.stats.duplicates, 1);
	assert_int_equal(p.a.nq, 0);
	/* a new connection: the one-connection listener says no */
	make_req(&p, 0x77, &m);
	feed(&p.b, p.a.gid, &m, p.now);
	take_rej(&p, &rej);
	assert_int_equal(rej.rej.reason, CM_REJ_NO_RESOURCES);
	assert_int_equal(p.b.c.state, CM_ESTABLISHED);
	assert_int_equal(p.b.c.stats.unmatched, 1);
	assert_int_equal(p.b.connects, 1);
	/* the active side listens to nothing: invalid service id */
	make_req(&p, 0x77, &m);
	feed(&p.a, p.b.c.cfg.gid, &m, p.now);
	assert_int_equal(p.b.nq, 1);
	assert_int_equal(cm_decode(p.b.q[0].mad, CM_MAD_LEN, &rej, NULL), 0);
	assert_int_equal(rej.rej.reason, CM_REJ_INVALID_SERVICE_ID);
	assert_int_equal(p.a.c.state, CM_ESTABLISHED);
	p.b.nq = 0;
}

static void stray_rep_gets_rej_and_stray_dreq_gets_drep(void **state)
{
	struct pair p;
	struct cm_msg m;

	(void)state;
	setup_pair(&p);
	assert_int_equal(cm_conn_listen(&p.b.c, PORT, QPN_B, PSN_B), 0);
	memset(&m, 0, sizeof(m));
	cm_mad_hdr_init(&m.hdr, CM_ATTR_REP, 90);
	m.rep.local_comm_id = 0x11;
	m.rep.remote_comm_id = 0x22;
	m.rep.local_qpn = 0x333;
	feed(&p.b, p.a.gid, &m, p.now);
	assert_int_equal(cm_decode(p.a.q[0].mad, CM_MAD_LEN, &m, NULL), 0);
	assert_int_equal(m.hdr.attr_id, CM_ATTR_REJ);
	assert_int_equal(m.rej.reason, CM_REJ_INVALID_COMM_ID);
	assert_int_equal(m.rej.local_comm_id, 0x22);
	assert_int_equal(m.rej.remote_comm_id, 0x11);
	assert_true(m.hdr.tid == 90);
	memset(&m, 0, sizeof(m));
	cm_mad_hdr_init(&m.hdr, CM_ATTR_DREQ, 91);
	m.dreq.local_comm_id = 0x44;
	m.dreq.remote_comm_id = 0x55;
	feed(&p.b, p.a.gid, &m, p.now);
	assert_int_equal(cm_decode(p.a.q[1].mad, CM_MAD_LEN, &m, NULL), 0);
	assert_int_equal(m.hdr.attr_id, CM_ATTR_DREP);
	assert_int_equal(m.drep.local_comm_id, 0x55);
	assert_int_equal(m.drep.remote_comm_id, 0x44);
	assert_int_equal(p.b.c.state, CM_LISTEN);
	p.a.nq = 0;
}

static void bad_arguments(void **state)
{
	struct pair p;
	struct cm_ip_hdr ip = { .ip_version = 4 };

	(void)state;
	setup_pair(&p);
	assert_int_equal(cm_conn_listen(&p.b.c, PORT, 1, PSN_B), -EINVAL);
	assert_int_equal(cm_conn_listen(&p.b.c, PORT, QPN_B, 1u << 24),
			 -EINVAL);
	assert_int_equal(cm_conn_connect(&p.a.c, &ip, PORT, 0x1000000, 0, NULL,
					 0, p.now),
			 -EINVAL);
	ip.ip_version = 7;
	assert_int_equal(
		cm_conn_connect(&p.a.c, &ip, PORT, QPN_A, 0, NULL, 0, p.now),
		-EINVAL);
	assert_int_equal(p.a.c.state, CM_IDLE);
	assert_int_equal(cm_conn_disconnect(&p.a.c, p.now), -EINVAL);
	assert_int_equal(p.b.nq, 0);
	assert_string_equal(cm_state_name(CM_TIMEWAIT), "TIMEWAIT");
}

static int quiet(void **state)
{
	(void)state;
	log_init("test", LOG_LVL_ERR);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(connect_and_disconnect),
		cmocka_unit_test(req_on_the_wire),
		cmocka_unit_test(lost_req_is_resent),
		cmocka_unit_test(lost_rep_is_resent),
		cmocka_unit_test(lost_rtu_answered_by_repeated_rep),
		cmocka_unit_test(every_mad_twice),
		cmocka_unit_test(dreq_overtakes_rtu),
		cmocka_unit_test(lost_drep_answered_by_repeated_dreq),
		cmocka_unit_test(simultaneous_dreqs),
		cmocka_unit_test(rej_for_another_port),
		cmocka_unit_test(sidr_answered),
		cmocka_unit_test(passive_refusals),
		cmocka_unit_test(rej_when_passive_qp_fails),
		cmocka_unit_test(rej_when_active_qp_fails),
		cmocka_unit_test(req_never_answered_times_out),
		cmocka_unit_test(rep_never_answered_times_out),
		cmocka_unit_test(dreq_never_answered_ends_in_timewait),
		cmocka_unit_test(mra_extends_the_wait),
		cmocka_unit_test(garbage_is_counted_and_dropped),
		cmocka_unit_test(forged_mads_do_not_touch_the_connection),
		cmocka_unit_test(second_req_is_refused),
		cmocka_unit_test(stray_rep_gets_rej_and_stray_dreq_gets_drep),
		cmocka_unit_test(bad_arguments),
	};

	return cmocka_run_group_tests(tests, quiet, NULL);
}
