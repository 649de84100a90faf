// SPDX-License-Identifier: MIT
/*
 * rdmagate-guest cm_pingpong: rc_pingpong whose two sides meet by IP
 * address and port through CM MADs on QP1, as two guests' rdma_cm would
 * (REQ with the RDMA-CM IP private data, REP, RTU; DREQ/DREP at the end),
 * instead of rdma-core's TCP exchange. The data exchange is
 * tool_pingpong.c's, or rping's server (cm_rping, tool_rping.c), or, on
 * a UD QP that a SIDR exchange names, udaddy's (cm_udaddy,
 * tool_udaddy.c).
 *
 * It needs the worker's QP1 emulation and rdmagate-mux: a worker with no
 * mux completes the REQ's send with an error and the active side gives up
 * after the CM retries.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/clock.h"
#include "common/log.h"
#include "guest/cm_conn.h"
#include "guest/cm_qp1.h"
#include "guest/opts.h"
#include "guest/tools.h"

#define CMPP_EPHEMERAL_LO 32768 /* ip_local_port_range's default */
#define CMPP_EPHEMERAL_N  28232

/* rdma_cm's Q_Key of RDMA_PS_UDP QPs (RDMA_UDP_QKEY): a peer's rdma_cm
 * refuses a SIDR_REP naming another. */
#define CM_UDP_QKEY 0x01234567u

struct cmpp {
	bool ud;	  /* cm_udaddy: a SIDR exchange for a UD QP */
	struct cm_opts o; /* --cm-timeout, --cm-retries */
	struct cm_qp1 t;
	struct cm_conn c;
	struct gv_qp *qp;
	uint8_t ib_port;
	bool open;
};

static int cmpp_qp_connect(void *arg, const struct cm_qp_attr *attr)
{
	struct cmpp *s = arg;
	struct gv_tool_path path = { .mtu = attr->path_mtu,
				     .port = s->ib_port,
				     .sl = attr->sl,
				     .sgid_index = attr->sgid_index,
				     .rd_atomic = attr->max_dest_rd_atomic,
				     .grh = true };
	/*
	 * Linux's rdma_cm receives from the starting PSN it sent and sends
	 * from the peer's (rdma_init_qp_attr() sets rq_psn to its own
	 * seq_num; measured against a kernel peer, docs/mux.md): so do we,
	 * or a kernel peer NAKs or drops every packet as out of sequence.
	 */
	struct gv_tool_dest my = { .qpn = attr->local_qpn,
				   .psn = attr->remote_psn };
	struct gv_tool_dest rem = { .qpn = attr->remote_qpn,
				    .psn = attr->local_psn };

	memcpy(rem.gid, attr->dgid, 16);
	return gv_tool_rc_connect(s->qp, &path, &my, &rem);
}

static void cmpp_qp_disconnect(void *arg)
{
	struct cmpp *s = arg;
	struct virtio_rdma_qp_attr a = { .qp_state = VIRTIO_RDMA_QPS_ERR };

	gv_modify_qp(s->qp, &a, VIRTIO_RDMA_QP_STATE);
}

static const struct cm_qp_ops cmpp_qp_ops = {
	.connect = cmpp_qp_connect,
	.disconnect = cmpp_qp_disconnect,
};

/* The peer's IP address (numeric: rdma_resolve_addr's job is not ours). */
static int parse_ip(const char *text, uint8_t ver, uint8_t addr[16])
{
	memset(addr, 0, 16);
	if (ver == 4)
		return inet_pton(AF_INET, text, addr + 12) == 1 ? 0 : -EINVAL;
	return inet_pton(AF_INET6, text, addr) == 1 ? 0 : -EINVAL;
}

static const char *ip_str(uint8_t ver, const uint8_t addr[16], char *buf,
			  size_t len)
{
	return inet_ntop(ver == 4 ? AF_INET : AF_INET6,
			 ver == 4 ? addr + 12 : addr, buf, (socklen_t)len);
}

static void cmpp_cfg(const struct cmpp *s, const struct gv_tool_meet_args *a,
		     const uint8_t gid[16], struct cm_conn_cfg *cfg)
{
	cm_conn_cfg_default(cfg);
	cfg->timeout_ms = s->o.timeout_ms;
	if (s->o.retries >= 0)
		cfg->max_cm_retries = (uint8_t)s->o.retries;
	memcpy(cfg->gid, gid, 16);
	cfg->sgid_index = (uint8_t)a->gidx;
	cfg->ca_guid = a->ctx->attr.sys_image_guid;
	cfg->ca_ack_delay = a->ctx->attr.local_ca_ack_delay & 31;
	cfg->path_mtu = (uint8_t)a->mtu;
	cfg->sl = a->sl;
}

/* All the REQ's tries, as ib_cm waits for them. */
static int cm_budget_ms(const struct cm_conn *c)
{
	uint64_t t = (uint64_t)c->timeout_ms * (c->cfg.max_cm_retries + 2);

	return t < INT_MAX ? (int)t : INT_MAX;
}

static int cmpp_active(struct cmpp *s, const struct gv_tool_meet_args *a,
		       uint8_t ver, const uint8_t our_ip[16])
{
	struct cm_ip_hdr ip = { .ip_version = ver };
	char text[INET6_ADDRSTRLEN];
	int r;

	if (parse_ip(a->server, ver, ip.dst)) {
		fprintf(stderr,
			"cm_pingpong: HOST must be an IPv%u address like "
			"our GID's, not '%s'\n",
			ver, a->server);
		return -EINVAL;
	}
	memcpy(ip.src, our_ip, 16);
	ip.src_port =
		(uint16_t)(CMPP_EPHEMERAL_LO + lrand48() % CMPP_EPHEMERAL_N);
	printf("  CM: REQ to %s port %u, service id 0x%016llx\n",
	       ip_str(ver, ip.dst, text, sizeof(text)), a->port,
	       (unsigned long long)cm_ip_service_id(CM_IP_PS_TCP,
						    (uint16_t)a->port));
	fflush(stdout);
	r = cm_conn_connect(&s->c, &ip, (uint16_t)a->port, a->my->qpn,
			    a->my->psn, NULL, 0, mono_ms());
	if (!r)
		r = cm_conn_run(&s->c, 1u << CM_ESTABLISHED,
				cm_budget_ms(&s->c));
	return r;
}

static int cmpp_passive(struct cmpp *s, const struct gv_tool_meet_args *a,
			uint8_t ver, const uint8_t our_ip[16])
{
	char text[INET6_ADDRSTRLEN];
	int r = cm_conn_listen(&s->c, (uint16_t)a->port, a->my->qpn,
			       a->my->psn);

	printf("  CM: listening on %s port %u\n",
	       ip_str(ver, our_ip, text, sizeof(text)), a->port);
	fflush(stdout);
	/* like rc_pingpong's accept(): wait for the client as long as it takes
	 */
	while (!r && s->c.state == CM_LISTEN) {
		r = cm_conn_run(&s->c, 1u << CM_ESTABLISHED | 1u << CM_REP_SENT,
				INT_MAX);
	}
	if (!r)
		r = cm_conn_run(&s->c, 1u << CM_ESTABLISHED,
				cm_budget_ms(&s->c));
	return r;
}

/* rdma_cm's UD listener: the QP ready (RTR, RTS), then one SIDR_REQ
 * answered with it. */
static int cmpp_sidr(struct cmpp *s, const struct gv_tool_meet_args *a,
		     uint8_t ver, const uint8_t our_ip[16])
{
	struct virtio_rdma_qp_attr qa = { .qp_state = VIRTIO_RDMA_QPS_RTR };
	char text[INET6_ADDRSTRLEN];
	int r = gv_modify_qp(a->qp, &qa, VIRTIO_RDMA_QP_STATE);

	qa.qp_state = VIRTIO_RDMA_QPS_RTS;
	qa.sq_psn = a->my->psn;
	if (!r)
		r = gv_modify_qp(a->qp, &qa,
				 VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_SQ_PSN);
	if (!r)
		r = cm_conn_sidr_listen(&s->c, (uint16_t)a->port, a->my->qpn,
					CM_UDP_QKEY);
	if (r)
		return r;
	printf("  CM: listening on %s port %u (RDMA_PS_UDP)\n",
	       ip_str(ver, our_ip, text, sizeof(text)), a->port);
	fflush(stdout);
	return cm_conn_run(&s->c, 1u << CM_ESTABLISHED, INT_MAX);
}

static int cmpp_meet(void *arg, const struct gv_tool_meet_args *a)
{
	struct cmpp *s = arg;
	struct cm_conn_cfg cfg;
	uint8_t gid[16], our_ip[16], ver;
	int r;

	if (a->gidx < 0) {
		fprintf(stderr, "cm_pingpong: -g is needed: the GID is our "
				"IP address\n");
		return -EINVAL;
	}
	r = gv_query_gid(a->ctx, (uint16_t)a->gidx, gid);
	if (r) {
		fprintf(stderr, "can't read sgid of index %d\n", a->gidx);
		return r;
	}
	ver = cm_gid_to_ip(gid, our_ip);
	r = cm_qp1_open(&s->t, a->ctx, a->pd, (uint8_t)a->gidx);
	if (r) {
		fprintf(stderr, "cm_pingpong: cannot set up QP1: %s\n",
			strerror(-r));
		return r;
	}
	s->open = true;
	s->qp = a->qp;
	s->ib_port = a->ib_port;
	cmpp_cfg(s, a, gid, &cfg);
	cm_conn_init(&s->c, &cfg, &cm_qp1_ops, &s->t, &cmpp_qp_ops, s);
	r = s->ud	? cmpp_sidr(s, a, ver, our_ip)
	    : a->server ? cmpp_active(s, a, ver, our_ip)
			: cmpp_passive(s, a, ver, our_ip);
	if (r) {
		fprintf(stderr, "cm_pingpong: CM %s: %s%s%s\n",
			cm_state_name(s->c.state), strerror(-r),
			s->c.why.msg[0] ? ": " : "", s->c.why.msg);
		cm_qp1_close(&s->t);
		s->open = false;
		return r;
	}
	a->rem->lid = 0;
	a->rem->qpn = s->c.qp.remote_qpn; /* UD: told by the datagrams */
	a->rem->psn = s->c.qp.remote_psn;
	memcpy(a->rem->gid, s->c.qp.dgid, 16);
	if (s->ud)
		printf("  CM: SIDR_REP sent, request id 0x%08x, Q_Key "
		       "0x%08x\n",
		       s->c.sidr_request_id, CM_UDP_QKEY);
	else
		printf("  CM: ESTABLISHED, local id 0x%08x, remote id "
		       "0x%08x\n",
		       s->c.local_id, s->c.remote_id);
	fflush(stdout);
	return 0;
}

/* The client disconnects (DREQ), the server waits for it (DREP). */
static int cmpp_part(void *arg, bool ok)
{
	struct cmpp *s = arg;
	unsigned int done = 1u << CM_TIMEWAIT | 1u << CM_CLOSED;
	int r = 0;

	if (!s->open)
		return 0;
	if (s->ud) { /* UD: nothing to disconnect */
		cm_qp1_close(&s->t);
		s->open = false;
		return 0;
	}
	if (s->c.active || !ok)
		r = cm_conn_disconnect(&s->c, mono_ms());
	if (!r && ok)
		r = cm_conn_run(&s->c, done, cm_budget_ms(&s->c));
	if (ok) {
		if (r)
			fprintf(stderr, "cm_pingpong: disconnect: %s\n",
				strerror(-r));
		else
			printf("  CM: disconnected (%s)\n",
			       s->c.peer_disconnected ? "DREQ received"
						      : "DREP received");
	}
	cm_qp1_close(&s->t);
	s->open = false;
	return ok ? r : 0;
}

/*
 * Takes --cm-timeout=MS and --cm-retries=N (guest/opts.c) out of argv
 * (before HOST): 0, or -EINVAL after printing why.
 */
static int cmpp_args(struct cmpp *s, int *argc, char **argv)
{
	struct reason why;
	char name[16];
	int n = 1;

	s->o = (struct cm_opts){ .timeout_ms = 0, .retries = -1 };
	for (int i = 1; i < *argc; i++) {
		const char *eq = strchr(argv[i], '=');
		size_t len = eq ? (size_t)(eq - argv[i]) : 0;

		if (strncmp(argv[i], "--cm-", 5) || !eq ||
		    len >= sizeof(name)) {
			argv[n++] = argv[i];
			continue;
		}
		memcpy(name, argv[i] + 2, len - 2);
		name[len - 2] = '\0';
		if (opt_num_set(guest_cm_nums, GM_COUNT, name, eq + 1, &s->o,
				&why) < 0) {
			fprintf(stderr, "rdmagate-guest: %s\n", why.msg);
			return -EINVAL;
		}
	}
	argv[n] = NULL;
	*argc = n;
	return 0;
}

static const char cmpp_note[] =
	"(cm_pingpong: HOST is the server's IP address and -p its rdma_cm "
	"port;\n"
	" the two sides meet through CM MADs on QP1 (REQ, REP, RTU, DREQ, "
	"DREP),\n"
	" -g is required (the GID is the IP address).\n"
	"  --cm-timeout=MS        per CM MAD (default: ib_cm's timers, "
	"4.6 s)\n"
	"  --cm-retries=N         resends of a CM MAD (default 15, at most "
	"15)\n"
	" It needs a worker with a mux (rdmagate-mux): without one the REQ "
	"is lost\n"
	" and the client gives up after the retries.)\n";

static const char rping_note[] =
	"(cm_rping: the server of rdma-core's rping (rping -s) on a CM "
	"connection:\n"
	" no HOST; -n is the peer's rping -C, -s our buffer (at least "
	"rping's -S + 64);\n"
	" each ping is RDMA READ from the peer, checked against the text "
	"rping writes,\n"
	" and RDMA WRITE back (rping -c -V compares it).\n"
	"  --cm-timeout=MS, --cm-retries=N as cm_pingpong's)\n";

static const char udaddy_note[] =
	"(cm_udaddy: the server of rdma-core's udaddy on a UD QP that a SIDR "
	"exchange\n"
	" names (RDMA_PS_UDP -p, Q_Key 0x01234567): no HOST; -n is the "
	"peer's udaddy -C,\n"
	" -s at least its -S; each datagram's GRH, length and immediate "
	"checked,\n"
	" as many answered with a known text.\n"
	"  --cm-timeout=MS, --cm-retries=N as cm_pingpong's)\n";

static int cm_main(const struct gv_tool_opts *o, int argc, char **argv,
		   int (*data)(const struct gv_tool_data_args *d), bool ud)
{
	static struct cmpp s;
	const struct gv_tool_meet meet = {
		.meet = cmpp_meet,
		.data = data,
		.part = cmpp_part,
		.ud_qkey = ud ? CM_UDP_QKEY : 0,
		.arg = &s,
		.note = ud     ? udaddy_note
			: data ? rping_note
			       : cmpp_note,
	};

	log_init("rdmagate-guest", LOG_LVL_INFO);
	if (cmpp_args(&s, &argc, argv))
		return 2;
	s.ud = ud;
	if (ud)
		return gv_tool_ud_pingpong_meet(o, argc, argv, &meet);
	return gv_tool_rc_pingpong_meet(o, argc, argv, &meet);
}

int gv_tool_cm_pingpong(const struct gv_tool_opts *o, int argc, char **argv)
{
	return cm_main(o, argc, argv, NULL, false);
}

int gv_tool_cm_rping(const struct gv_tool_opts *o, int argc, char **argv)
{
	return cm_main(o, argc, argv, gv_tool_rping_serve, false);
}

int gv_tool_cm_udaddy(const struct gv_tool_opts *o, int argc, char **argv)
{
	return cm_main(o, argc, argv, gv_tool_udaddy_serve, true);
}
