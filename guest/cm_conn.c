// SPDX-License-Identifier: MIT
/*
 * The guest simulator's connection manager (see guest/cm_conn.h): the
 * active/passive state machine of one RC connection over CM MADs, with
 * the answers and timers of the kernel's ib_cm (drivers/infiniband/core/
 * cm.c) and the QP steps of its rdma_cm (cma.c). Run by rdmagate-guest.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <inttypes.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "common/clock.h"
#include "common/log.h"
#include "guest/cm_conn.h"

void cm_conn_cfg_default(struct cm_conn_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->path_mtu = 3; /* 1024 */
	cfg->responder_resources = 1;
	cfg->initiator_depth = 1;
	cfg->retry_count = 7;
	cfg->rnr_retry_count = 7;
	cfg->hop_limit = 64;
	cfg->packet_life_time = 16;
	cfg->ca_ack_delay = 15;
	cfg->cm_response_timeout = 20;
	cfg->max_cm_retries = 15;
}

const char *cm_state_name(enum cm_state s)
{
	static const char *const names[] = {
		[CM_IDLE] = "IDLE",
		[CM_LISTEN] = "LISTEN",
		[CM_REQ_SENT] = "REQ_SENT",
		[CM_REP_SENT] = "REP_SENT",
		[CM_ESTABLISHED] = "ESTABLISHED",
		[CM_DREQ_SENT] = "DREQ_SENT",
		[CM_TIMEWAIT] = "TIMEWAIT",
		[CM_CLOSED] = "CLOSED",
		[CM_FAILED] = "FAILED",
	};

	return (unsigned int)s < sizeof(names) / sizeof(names[0]) ? names[s]
								  : "UNKNOWN";
}

static uint32_t random32(void)
{
	uint32_t v = 0;

	/* a guest kernel's ids are random too; no entropy: the clock */
	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v))
		v = (uint32_t)mono_ms() * 2654435761u;
	return v;
}

void cm_conn_init(struct cm_conn *c, const struct cm_conn_cfg *cfg,
		  const struct cm_transport_ops *tops, void *targ,
		  const struct cm_qp_ops *qops, void *qarg)
{
	memset(c, 0, sizeof(*c));
	c->cfg = *cfg;
	c->tops = tops;
	c->targ = targ;
	c->qops = qops;
	c->qarg = qarg;
	do
		c->local_id = random32();
	while (!c->local_id);
	/* ib_mad: the agent's 32 high bits, a counter below */
	c->tid_next = (uint64_t)random32() << 32 | 1;
}

/* ---- sending ---- */

static int send_raw(struct cm_conn *c, const struct cm_peer *to,
		    const uint8_t mad[CM_MAD_LEN], bool resend)
{
	int r = c->tops->send_mad(c->targ, to, mad);

	c->stats.sent++;
	if (resend)
		c->stats.resent++;
	if (r) {
		c->stats.send_errors++;
		c->last_send_error = r;
		log_warnx("cm: sending %s: %s",
			  cm_attr_name((uint16_t)(mad[16] << 8 | mad[17])),
			  strerror(-r));
	}
	return r;
}

/* Encodes m into buf and sends it; a send error leaves it to the timer. */
static int send_msg(struct cm_conn *c, const struct cm_peer *to,
		    const struct cm_msg *m, uint8_t buf[CM_MAD_LEN])
{
	struct reason why = { "" };
	int r = cm_encode(m, buf, &why);

	if (r < 0) {
		/* our own fields: a bug or a bad configuration */
		log_warnx("cm: cannot encode %s: %s",
			  cm_attr_name(m->hdr.attr_id), why.msg);
		return r;
	}
	send_raw(c, to, buf, false);
	return 0;
}

static void arm(struct cm_conn *c, uint64_t now)
{
	c->deadline = now + c->timeout_ms;
}

/* A MAD that expects an answer: kept, resent on timeout. */
static int send_pending(struct cm_conn *c, const struct cm_msg *m,
			unsigned int max_retries, uint64_t now)
{
	int r = send_msg(c, &c->peer, m, c->pending);

	if (r < 0)
		return r;
	c->has_pending = true;
	c->retries = 0;
	c->max_retries = max_retries;
	arm(c, now);
	return 0;
}

/* A MAD that answers (RTU, DREP): kept, resent on a duplicate. */
static int send_reply(struct cm_conn *c, const struct cm_msg *m)
{
	int r = send_msg(c, &c->peer, m, c->reply);

	if (!r)
		c->has_reply = true;
	return r;
}

/* A REJ; to a message we have no connection for, ids swapped from it. */
static int send_rej(struct cm_conn *c, const struct cm_peer *to, uint64_t tid,
		    uint32_t local_id, uint32_t remote_id, uint8_t msg_rejected,
		    uint16_t reason, const void *ari, uint8_t ari_len)
{
	uint8_t buf[CM_MAD_LEN];
	struct cm_msg m;

	memset(&m, 0, sizeof(m));
	cm_mad_hdr_init(&m.hdr, CM_ATTR_REJ, tid);
	m.rej.local_comm_id = local_id;
	m.rej.remote_comm_id = remote_id;
	m.rej.msg_rejected = msg_rejected;
	m.rej.reason = reason;
	m.rej.ari_length = ari_len;
	if (ari_len)
		memcpy(m.rej.ari, ari, ari_len);
	c->stats.rej_sent++;
	log_info("cm: REJ (%s) of %s", cm_rej_reason_name(reason),
		 msg_rejected == CM_MSG_RESPONSE_REQ   ? "a REQ"
		 : msg_rejected == CM_MSG_RESPONSE_REP ? "a REP"
						       : "the connection");
	return send_msg(c, to, &m, buf);
}

static void put_guid(uint8_t out[8], uint64_t guid)
{
	for (int i = 0; i < 8; i++)
		out[i] = (uint8_t)(guid >> (56 - 8 * i));
}

/* ---- state changes ---- */

static void qp_down(struct cm_conn *c)
{
	if (c->qp_connected && c->qops->disconnect)
		c->qops->disconnect(c->qarg);
	c->qp_connected = false;
}

static void fail(struct cm_conn *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void fail(struct cm_conn *c, int err, const char *fmt, ...)
{
	va_list ap;

	qp_down(c);
	c->state = CM_FAILED;
	c->error = err;
	c->has_pending = false;
	c->deadline = 0;
	va_start(ap, fmt);
	vsnprintf(c->why.msg, sizeof(c->why.msg), fmt, ap);
	va_end(ap);
	log_warnx("cm: connection failed: %s", c->why.msg);
}

static void enter_timewait(struct cm_conn *c, uint64_t now)
{
	qp_down(c);
	c->state = CM_TIMEWAIT;
	c->has_pending = false;
	/* long enough to answer one repeated DREQ */
	arm(c, now);
}

/* 2 * packet life time + the peer's response time, as ib_cm. */
static uint32_t mad_timeout(const struct cm_conn *c, uint8_t response_timeout)
{
	if (c->cfg.timeout_ms)
		return c->cfg.timeout_ms;
	return 2 * cm_time_to_ms(c->cfg.packet_life_time) +
	       cm_time_to_ms(response_timeout);
}

/* ---- active side ---- */

static void req_path(const struct cm_conn *c, const uint8_t dgid[16],
		     uint16_t dst_port, struct cm_path *p)
{
	memcpy(p->local_gid, c->cfg.gid, 16);
	memcpy(p->remote_gid, dgid, 16);
	/* cm_format_req(): RoCE paths have no LIDs; routed: permissive */
	if (c->cfg.hop_limit > 1) {
		p->local_lid = CM_LID_PERMISSIVE;
		p->remote_lid = CM_LID_PERMISSIVE;
	}
	p->flow_label = cm_ip_flow_label(c->ip.src_port, dst_port);
	p->traffic_class = c->cfg.traffic_class;
	p->hop_limit = c->cfg.hop_limit;
	p->sl = c->cfg.sl;
	p->subnet_local = c->cfg.hop_limit <= 1;
	p->local_ack_timeout =
		cm_ack_timeout(c->cfg.ca_ack_delay, c->cfg.packet_life_time);
}

int cm_conn_connect(struct cm_conn *c, const struct cm_ip_hdr *ip,
		    uint16_t dst_port, uint32_t qpn, uint32_t psn,
		    const void *user, size_t user_len, uint64_t now_ms)
{
	struct reason why = { "" };
	struct cm_msg m;
	struct cm_req *r = &m.req;
	int e;

	if (c->state != CM_IDLE || qpn > 0xffffff || qpn <= 1 || psn > 0xffffff)
		return -EINVAL;
	memset(&m, 0, sizeof(m));
	e = cm_ip_encode(ip, user, user_len, r->private_data, &why);
	if (e) {
		log_warnx("cm: %s", why.msg);
		return e;
	}
	c->active = true;
	c->ip = *ip;
	c->port = dst_port;
	c->tid = c->tid_next++;
	memset(&c->peer, 0, sizeof(c->peer));
	cm_ip_to_gid(ip->ip_version, ip->dst, c->peer.gid);
	c->peer.qpn = 1;
	c->peer.hop_limit = c->cfg.hop_limit;
	c->peer.traffic_class = c->cfg.traffic_class;

	cm_mad_hdr_init(&m.hdr, CM_ATTR_REQ, c->tid);
	r->local_comm_id = c->local_id;
	r->service_id = cm_ip_service_id(CM_IP_PS_TCP, dst_port);
	r->local_ca_guid = c->cfg.ca_guid;
	r->local_qpn = qpn;
	r->responder_resources = c->cfg.responder_resources;
	r->initiator_depth = c->cfg.initiator_depth;
	r->remote_cm_response_timeout = c->cfg.cm_response_timeout;
	r->transport = CM_TRANSPORT_RC;
	r->flow_control = true;
	r->starting_psn = psn;
	r->local_cm_response_timeout = c->cfg.cm_response_timeout;
	r->retry_count = c->cfg.retry_count;
	r->pkey = 0xffff;
	r->path_mtu = c->cfg.path_mtu;
	r->rnr_retry_count = c->cfg.rnr_retry_count;
	r->max_cm_retries = c->cfg.max_cm_retries;
	req_path(c, c->peer.gid, dst_port, &r->primary);
	c->peer.flow_label = r->primary.flow_label;

	c->qp.local_qpn = qpn;
	c->qp.local_psn = psn;
	c->qp.path_mtu = c->cfg.path_mtu;
	memcpy(c->qp.dgid, c->peer.gid, 16);
	c->qp.sgid_index = c->cfg.sgid_index;
	c->qp.hop_limit = c->cfg.hop_limit;
	c->qp.traffic_class = c->cfg.traffic_class;
	c->qp.sl = c->cfg.sl;
	c->qp.flow_label = r->primary.flow_label;
	c->qp.retry_count = c->cfg.retry_count;
	c->qp.local_ack_timeout = r->primary.local_ack_timeout;

	c->timeout_ms = mad_timeout(c, c->cfg.cm_response_timeout);
	c->state = CM_REQ_SENT;
	e = send_pending(c, &m, c->cfg.max_cm_retries, now_ms);
	if (e)
		c->state = CM_IDLE;
	return e;
}

static int on_rep(struct cm_conn *c, const struct cm_msg *m, uint64_t now)
{
	const struct cm_rep *p = &m->rep;
	struct cm_msg rtu;
	int r;

	if (c->state == CM_ESTABLISHED && p->local_comm_id == c->remote_id) {
		/* our RTU was lost: ib_cm's cm_dup_rep_handler resends */
		c->stats.duplicates++;
		return c->has_reply ? send_raw(c, &c->peer, c->reply, true) : 0;
	}
	if (c->state != CM_REQ_SENT) {
		c->stats.unmatched++;
		return 0;
	}
	c->has_pending = false;
	c->remote_id = p->local_comm_id;
	c->remote_ca_guid = p->local_ca_guid;
	c->qp.remote_qpn = p->local_qpn;
	c->qp.remote_psn = p->starting_psn;
	c->qp.max_rd_atomic = p->responder_resources < c->cfg.initiator_depth
				      ? p->responder_resources
				      : c->cfg.initiator_depth;
	c->qp.max_dest_rd_atomic = c->cfg.responder_resources;
	c->qp.rnr_retry_count = p->rnr_retry_count;
	c->user_len = CM_REP_PRIVATE_LEN;
	memcpy(c->user, p->private_data, CM_REP_PRIVATE_LEN);
	/* cma_rep_recv(): RTR, RTS, then the RTU */
	r = c->qops->connect(c->qarg, &c->qp);
	if (r) {
		send_rej(c, &c->peer, c->tid, c->local_id, c->remote_id,
			 CM_MSG_RESPONSE_REP, CM_REJ_CONSUMER_DEFINED, NULL, 0);
		fail(c, r, "%s: moving the QP to RTR/RTS failed", "REP");
		return 0;
	}
	c->qp_connected = true;
	memset(&rtu, 0, sizeof(rtu));
	cm_mad_hdr_init(&rtu.hdr, CM_ATTR_RTU, c->tid);
	rtu.rtu.local_comm_id = c->local_id;
	rtu.rtu.remote_comm_id = c->remote_id;
	c->state = CM_ESTABLISHED;
	c->deadline = 0;
	(void)now;
	return send_reply(c, &rtu);
}

/* ---- passive side ---- */

int cm_conn_listen(struct cm_conn *c, uint16_t port, uint32_t qpn, uint32_t psn)
{
	if (c->state != CM_IDLE || qpn > 0xffffff || qpn <= 1 || psn > 0xffffff)
		return -EINVAL;
	c->active = false;
	c->port = port;
	c->qp.local_qpn = qpn;
	c->qp.local_psn = psn;
	c->state = CM_LISTEN;
	return 0;
}

int cm_conn_sidr_listen(struct cm_conn *c, uint16_t port, uint32_t qpn,
			uint32_t qkey)
{
	if (c->state != CM_IDLE || qpn > 0xffffff || qpn <= 1)
		return -EINVAL;
	c->active = false;
	c->sidr = true;
	c->port = port;
	c->qkey = qkey;
	c->qp.local_qpn = qpn;
	c->state = CM_LISTEN;
	return 0;
}

/* Checks the CMA header of a REQ or SIDR_REQ: the destination must be our
 * address (cma's listener lookup). */
static int ip_hdr_ours(struct cm_conn *c, const uint8_t *pd, const char *what)
{
	uint8_t ver, addr[16];

	if (cm_ip_decode(pd, &c->ip, &c->why))
		return -EINVAL;
	ver = cm_gid_to_ip(c->cfg.gid, addr);
	if (c->ip.ip_version != ver || memcmp(c->ip.dst, addr, 16)) {
		reason_fail(&c->why, -EINVAL,
			    "%s: CMA header's destination is not our IPv%u "
			    "address",
			    what, ver);
		return -EINVAL;
	}
	return 0;
}

/* The SIDR_REQ's answer: status, and our QP when it is 0. */
static int send_sidr_rep(struct cm_conn *c, const struct cm_peer *to,
			 const struct cm_msg *req, uint8_t status)
{
	uint8_t buf[CM_MAD_LEN];
	struct cm_msg m;

	memset(&m, 0, sizeof(m));
	cm_mad_hdr_init(&m.hdr, CM_ATTR_SIDR_REP, req->hdr.tid);
	m.sidr_rep.request_id = req->sidr_req.request_id;
	m.sidr_rep.status = status;
	m.sidr_rep.service_id = req->sidr_req.service_id;
	if (status)
		return send_msg(c, to, &m, buf);
	m.sidr_rep.qpn = c->qp.local_qpn;
	m.sidr_rep.qkey = c->qkey;
	return send_reply(c, &m);
}

static int on_sidr_req(struct cm_conn *c, const struct cm_peer *from,
		       const struct cm_msg *m)
{
	const struct cm_sidr_req *r = &m->sidr_req;
	uint16_t ps, port;

	if (c->sidr && c->state == CM_ESTABLISHED &&
	    r->request_id == c->sidr_request_id &&
	    !memcmp(from->gid, c->peer.gid, 16)) {
		c->stats.duplicates++; /* our answer was lost: again */
		return send_raw(c, &c->peer, c->reply, true);
	}
	if (!c->sidr || c->state != CM_LISTEN ||
	    cm_ip_service_port(r->service_id, &ps, &port, &c->why) ||
	    ps != CM_IP_PS_UDP || port != c->port ||
	    ip_hdr_ours(c, r->private_data, "SIDR_REQ")) {
		c->stats.unmatched++;
		return send_sidr_rep(c, from, m, CM_SIDR_UNSUPPORTED);
	}
	c->sidr_request_id = r->request_id;
	c->tid = m->hdr.tid;
	c->peer = *from; /* the answer goes back along the GRH */
	c->peer.qpn = 1;
	memcpy(c->qp.dgid, from->gid, 16);
	c->state = CM_ESTABLISHED;
	return send_sidr_rep(c, &c->peer, m, CM_SIDR_SUCCESS);
}

/* Checks a REQ for our listener; a REJ reason, or 0 to accept it. */
static uint16_t req_refusal(struct cm_conn *c, const struct cm_req *r,
			    const uint8_t **ari, uint8_t *ari_len)
{
	struct reason why = { "" };
	uint16_t ps, port;

	if (cm_ip_service_port(r->service_id, &ps, &port, &why) ||
	    ps != CM_IP_PS_TCP || port != c->port) {
		reason_fail(&c->why, -EINVAL,
			    "REQ for service 0x%016" PRIx64 ": we listen on "
			    "port %u of RDMA_PS_TCP",
			    r->service_id, c->port);
		return CM_REJ_INVALID_SERVICE_ID;
	}
	if (r->transport != CM_TRANSPORT_RC) {
		reason_fail(&c->why, -EINVAL,
			    "REQ: transport service type %u, we accept RC",
			    r->transport);
		return CM_REJ_INVALID_TRANSPORT_TYPE;
	}
	if (memcmp(r->primary.remote_gid, c->cfg.gid, 16)) {
		reason_fail(&c->why, -EINVAL,
			    "REQ: primary path remote GID is not ours");
		*ari = c->cfg.gid;
		*ari_len = 16;
		return CM_REJ_INVALID_GID;
	}
	if (ip_hdr_ours(c, r->private_data, "REQ"))
		return CM_REJ_CONSUMER_DEFINED;
	return 0;
}

static int on_req(struct cm_conn *c, const struct cm_peer *from,
		  const struct cm_msg *m, uint64_t now)
{
	const struct cm_req *r = &m->req;
	const uint8_t *ari = NULL;
	uint8_t ari_len = 0;
	struct cm_msg rep;
	uint16_t reason;
	int e;

	if (c->state != CM_LISTEN) {
		if (!c->active && r->local_comm_id == c->remote_id &&
		    r->local_ca_guid == c->remote_ca_guid) {
			/* cm_dup_req_handler(): resent REQ */
			c->stats.duplicates++;
			if (c->state == CM_TIMEWAIT)
				return send_rej(c, from, m->hdr.tid,
						c->local_id, c->remote_id,
						CM_MSG_RESPONSE_REQ,
						CM_REJ_STALE_CONN, NULL, 0);
			return 0;
		}
		/*
		 * Not listening (ib_cm: no listener for the service id), or
		 * the one connection of this listener is taken (a full
		 * backlog).
		 */
		c->stats.unmatched++;
		return send_rej(c, from, m->hdr.tid, 0, r->local_comm_id,
				CM_MSG_RESPONSE_REQ,
				c->active || c->state == CM_IDLE
					? CM_REJ_INVALID_SERVICE_ID
					: CM_REJ_NO_RESOURCES,
				NULL, 0);
	}
	reason = req_refusal(c, r, &ari, &ari_len);
	if (reason) {
		log_warnx("cm: refusing a REQ: %s", c->why.msg);
		return send_rej(c, from, m->hdr.tid, 0, r->local_comm_id,
				CM_MSG_RESPONSE_REQ, reason, ari, ari_len);
	}
	c->tid = m->hdr.tid;
	c->remote_id = r->local_comm_id;
	c->remote_ca_guid = r->local_ca_guid;
	/* replies follow the REQ's path back (cm_init_av_by_path) */
	memset(&c->peer, 0, sizeof(c->peer));
	memcpy(c->peer.gid, r->primary.local_gid, 16);
	c->peer.qpn = 1;
	c->peer.hop_limit = c->cfg.hop_limit;
	c->peer.traffic_class = r->primary.traffic_class;
	c->peer.flow_label = r->primary.flow_label;
	c->user_len = CM_IP_USER_LEN;
	memcpy(c->user, r->private_data + CM_IP_HDR_LEN, CM_IP_USER_LEN);

	c->qp.remote_qpn = r->local_qpn;
	c->qp.remote_psn = r->starting_psn;
	c->qp.path_mtu = r->path_mtu;
	memcpy(c->qp.dgid, r->primary.local_gid, 16);
	c->qp.sgid_index = c->cfg.sgid_index;
	c->qp.hop_limit = r->primary.hop_limit;
	c->qp.traffic_class = r->primary.traffic_class;
	c->qp.sl = r->primary.sl;
	c->qp.flow_label = r->primary.flow_label;
	c->qp.max_rd_atomic = r->responder_resources < c->cfg.initiator_depth
				      ? r->responder_resources
				      : c->cfg.initiator_depth;
	c->qp.max_dest_rd_atomic = c->cfg.responder_resources;
	c->qp.retry_count = r->retry_count;
	c->qp.rnr_retry_count = r->rnr_retry_count;
	c->qp.local_ack_timeout = r->primary.local_ack_timeout;

	/* cma_accept_ib(): RTR and RTS before the REP */
	e = c->qops->connect(c->qarg, &c->qp);
	if (e) {
		send_rej(c, &c->peer, c->tid, c->local_id, c->remote_id,
			 CM_MSG_RESPONSE_REQ, CM_REJ_CONSUMER_DEFINED, NULL, 0);
		fail(c, e, "%s: moving the QP to RTR/RTS failed", "REQ");
		return 0;
	}
	c->qp_connected = true;

	memset(&rep, 0, sizeof(rep));
	cm_mad_hdr_init(&rep.hdr, CM_ATTR_REP, c->tid);
	rep.rep.local_comm_id = c->local_id;
	rep.rep.remote_comm_id = c->remote_id;
	rep.rep.local_qpn = c->qp.local_qpn;
	rep.rep.starting_psn = c->qp.local_psn;
	rep.rep.responder_resources = c->cfg.responder_resources;
	rep.rep.initiator_depth = c->qp.max_rd_atomic;
	rep.rep.target_ack_delay = c->cfg.ca_ack_delay & 31;
	rep.rep.flow_control = true;
	rep.rep.rnr_retry_count = c->cfg.rnr_retry_count;
	rep.rep.local_ca_guid = c->cfg.ca_guid;
	/* ib_cm times the REP with the REQ's local response timeout */
	c->timeout_ms = mad_timeout(c, r->local_cm_response_timeout);
	c->state = CM_REP_SENT;
	return send_pending(c, &rep, r->max_cm_retries, now);
}

static int on_rtu(struct cm_conn *c, const struct cm_msg *m)
{
	if (c->state != CM_REP_SENT) {
		/* RTU after a DREQ overtook it, or a repeat */
		c->stats.unmatched++;
		return 0;
	}
	(void)m;
	c->has_pending = false;
	c->deadline = 0;
	c->state = CM_ESTABLISHED;
	return 0;
}

/* ---- both sides ---- */

static int on_rej(struct cm_conn *c, const struct cm_msg *m)
{
	const struct cm_rej *r = &m->rej;

	if (c->state != CM_REQ_SENT && c->state != CM_REP_SENT) {
		c->stats.unmatched++;
		return 0;
	}
	c->rej_reason = r->reason;
	fail(c, -ECONNREFUSED, "rejected by the peer: %s",
	     cm_rej_reason_name(r->reason));
	return 0;
}

static int on_mra(struct cm_conn *c, const struct cm_msg *m, uint64_t now)
{
	const struct cm_mra *a = &m->mra;

	if (!((c->state == CM_REQ_SENT &&
	       a->msg_mraed == CM_MSG_RESPONSE_REQ) ||
	      (c->state == CM_REP_SENT &&
	       a->msg_mraed == CM_MSG_RESPONSE_REP))) {
		c->stats.unmatched++;
		return 0;
	}
	/* the peer needs service_timeout more: wait, do not resend */
	c->deadline = now + cm_time_to_ms(a->service_timeout) +
		      2 * cm_time_to_ms(c->cfg.packet_life_time);
	return 0;
}

static int send_drep(struct cm_conn *c)
{
	struct cm_msg d;

	memset(&d, 0, sizeof(d));
	cm_mad_hdr_init(&d.hdr, CM_ATTR_DREP, c->dreq_tid);
	d.drep.local_comm_id = c->local_id;
	d.drep.remote_comm_id = c->remote_id;
	return send_reply(c, &d);
}

static int on_dreq(struct cm_conn *c, const struct cm_msg *m, uint64_t now)
{
	if (m->dreq.remote_qpn != c->qp.local_qpn) {
		/* ib_cm drops a DREQ naming another QP */
		c->stats.unmatched++;
		return 0;
	}
	switch (c->state) {
	case CM_TIMEWAIT:
		/* our DREP was lost */
		c->stats.duplicates++;
		return c->has_reply ? send_raw(c, &c->peer, c->reply, true) : 0;
	case CM_REP_SENT: /* the RTU was lost or overtaken */
	case CM_ESTABLISHED:
	case CM_DREQ_SENT: /* both ends disconnect at once */
		c->peer_disconnected = true;
		c->dreq_tid = m->hdr.tid;
		enter_timewait(c, now);
		return send_drep(c);
	default:
		c->stats.unmatched++;
		return 0;
	}
}

static int on_drep(struct cm_conn *c, uint64_t now)
{
	if (c->state != CM_DREQ_SENT) {
		c->stats.unmatched++;
		return 0;
	}
	enter_timewait(c, now);
	return 0;
}

int cm_conn_disconnect(struct cm_conn *c, uint64_t now_ms)
{
	struct cm_msg d;

	if (c->state == CM_TIMEWAIT || c->state == CM_CLOSED)
		return 0;
	if (c->state != CM_ESTABLISHED)
		return -EINVAL;
	/* rdma_disconnect(): the QP to ERR, then the DREQ */
	qp_down(c);
	memset(&d, 0, sizeof(d));
	c->dreq_tid = c->tid_next++;
	cm_mad_hdr_init(&d.hdr, CM_ATTR_DREQ, c->dreq_tid);
	d.dreq.local_comm_id = c->local_id;
	d.dreq.remote_comm_id = c->remote_id;
	d.dreq.remote_qpn = c->qp.remote_qpn;
	c->state = CM_DREQ_SENT;
	return send_pending(c, &d, c->cfg.max_cm_retries, now_ms);
}

/* The ids of a message that is not a REQ: (sender's, ours). */
static void msg_ids(const struct cm_msg *m, uint32_t *local, uint32_t *remote)
{
	switch (m->hdr.attr_id) {
	case CM_ATTR_REP:
		*local = m->rep.local_comm_id;
		*remote = m->rep.remote_comm_id;
		break;
	case CM_ATTR_REJ:
		*local = m->rej.local_comm_id;
		*remote = m->rej.remote_comm_id;
		break;
	case CM_ATTR_MRA:
		*local = m->mra.local_comm_id;
		*remote = m->mra.remote_comm_id;
		break;
	case CM_ATTR_RTU:
		*local = m->rtu.local_comm_id;
		*remote = m->rtu.remote_comm_id;
		break;
	case CM_ATTR_DREQ:
		*local = m->dreq.local_comm_id;
		*remote = m->dreq.remote_comm_id;
		break;
	default: /* DREP */
		*local = m->drep.local_comm_id;
		*remote = m->drep.remote_comm_id;
		break;
	}
}

/* Is the message (not a REQ) for this connection? */
static bool ours(const struct cm_conn *c, const struct cm_peer *from,
		 const struct cm_msg *m)
{
	uint32_t local, remote;

	msg_ids(m, &local, &remote);
	if (c->state == CM_IDLE || c->state == CM_LISTEN ||
	    c->state == CM_CLOSED || c->state == CM_FAILED ||
	    remote != c->local_id || memcmp(from->gid, c->peer.gid, 16))
		return false;
	/* before the REP we do not know the peer's id */
	if (c->active && c->state == CM_REQ_SENT)
		return true;
	return local == c->remote_id;
}

/* A message for no connection of ours: ib_cm's answers. */
static int stray(struct cm_conn *c, const struct cm_peer *from,
		 const struct cm_msg *m)
{
	uint8_t buf[CM_MAD_LEN];
	struct cm_msg d;

	c->stats.unmatched++;
	switch (m->hdr.attr_id) {
	case CM_ATTR_REP: /* cm_rep_handler(): invalid comm id */
		return send_rej(c, from, m->hdr.tid, m->rep.remote_comm_id,
				m->rep.local_comm_id, CM_MSG_RESPONSE_REP,
				CM_REJ_INVALID_COMM_ID, NULL, 0);
	case CM_ATTR_DREQ: /* cm_dreq_handler(): a DREP lets it finish */
		memset(&d, 0, sizeof(d));
		cm_mad_hdr_init(&d.hdr, CM_ATTR_DREP, m->hdr.tid);
		d.drep.local_comm_id = m->dreq.remote_comm_id;
		d.drep.remote_comm_id = m->dreq.local_comm_id;
		return send_msg(c, from, &d, buf);
	default:
		return 0;
	}
}

int cm_conn_input(struct cm_conn *c, const struct cm_peer *from,
		  const uint8_t *mad, size_t len, uint64_t now_ms)
{
	struct reason why = { "" };
	struct cm_msg m;
	int r;

	c->stats.received++;
	r = cm_decode(mad, len, &m, &why);
	if (r) {
		c->stats.bad++;
		log_warnx("cm: dropped a MAD: %s", why.msg);
		return 0;
	}
	log_debug("cm: %s in %s", cm_attr_name(m.hdr.attr_id),
		  cm_state_name(c->state));
	switch (m.hdr.attr_id) {
	case CM_ATTR_REQ:
		return on_req(c, from, &m, now_ms);
	case CM_ATTR_SIDR_REQ:
		return on_sidr_req(c, from, &m);
	case CM_ATTR_SIDR_REP:
		c->stats.unmatched++; /* we never ask */
		return 0;
	default:
		break;
	}
	if (!ours(c, from, &m))
		return stray(c, from, &m);
	switch (m.hdr.attr_id) {
	case CM_ATTR_REP:
		return on_rep(c, &m, now_ms);
	case CM_ATTR_RTU:
		return on_rtu(c, &m);
	case CM_ATTR_REJ:
		return on_rej(c, &m);
	case CM_ATTR_MRA:
		return on_mra(c, &m, now_ms);
	case CM_ATTR_DREQ:
		return on_dreq(c, &m, now_ms);
	default:
		return on_drep(c, now_ms);
	}
}

/* ---- timers ---- */

int cm_conn_tick(struct cm_conn *c, uint64_t now_ms)
{
	uint8_t guid[8];
	const char *what;

	if (!c->deadline || now_ms < c->deadline)
		return 0;
	if (c->state == CM_TIMEWAIT) {
		c->state = CM_CLOSED;
		c->deadline = 0;
		return 0;
	}
	if (!c->has_pending) {
		c->deadline = 0;
		return 0;
	}
	if (c->retries < c->max_retries) {
		c->retries++;
		arm(c, now_ms);
		return send_raw(c, &c->peer, c->pending, true);
	}
	what = cm_attr_name((uint16_t)(c->pending[16] << 8 | c->pending[17]));
	if (c->state == CM_DREQ_SENT) {
		/* ib_cm: an unanswered DREQ ends in TIMEWAIT too */
		log_warnx("cm: DREQ not answered after %u tries",
			  c->retries + 1);
		enter_timewait(c, now_ms);
		return 0;
	}
	/* cm_destroy_id(): REJ, reason timeout, our CA GUID as ARI */
	put_guid(guid, c->cfg.ca_guid);
	send_rej(c, &c->peer, c->tid, c->local_id,
		 c->state == CM_REP_SENT ? c->remote_id : 0,
		 c->state == CM_REP_SENT ? CM_MSG_RESPONSE_REP
					 : CM_MSG_RESPONSE_OTHER,
		 CM_REJ_TIMEOUT, guid, sizeof(guid));
	c->rej_reason = CM_REJ_TIMEOUT;
	fail(c, -ETIMEDOUT, "%s not answered after all its retries", what);
	if (c->last_send_error)
		log_warnx("cm: the last send failed: %s (does the device "
			  "implement QP1?)",
			  strerror(-c->last_send_error));
	return 0;
}

uint64_t cm_conn_deadline(const struct cm_conn *c)
{
	return c->deadline;
}

int cm_conn_run(struct cm_conn *c, unsigned int until, int timeout_ms)
{
	uint64_t end = mono_ms() + (uint64_t)timeout_ms;
	uint8_t mad[CM_MAD_LEN];
	struct cm_peer from;

	while (!(until & (1u << c->state))) {
		uint64_t now = mono_ms(), wake = end;
		size_t len = 0;
		int r;

		if (c->state == CM_FAILED)
			return c->error;
		if (now >= end)
			return -ETIMEDOUT;
		if (c->deadline && c->deadline < wake)
			wake = c->deadline;
		r = c->tops->recv_mad(c->targ, &from, mad, &len,
				      wake > now ? (int)(wake - now) : 0);
		if (r && r != -EAGAIN)
			return r;
		/* send errors were logged and count as lost MADs */
		if (!r)
			cm_conn_input(c, &from, mad, len, mono_ms());
		cm_conn_tick(c, mono_ms());
	}
	return 0;
}
