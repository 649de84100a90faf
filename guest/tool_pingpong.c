// SPDX-License-Identifier: MIT
/*
 * rdmagate-guest rc_pingpong, ud_pingpong and srq_pingpong: ibverbs-utils'
 * ibv_rc_pingpong, ibv_ud_pingpong and ibv_srq_pingpong on the guest
 * simulator's verbs: same options, same TCP exchange, same output lines,
 * so that either side can be the native tool.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "guest/tools.h"

enum { PP_RECV_WRID = 1, PP_SEND_WRID = 2 };

/* "LLLL:QQQQQQ:PPPPPP:" + 32 hex digits of GID, and the NUL. */
#define PP_GID_HEX    "00000000000000000000000000000000"
#define PP_MSG_LEN    sizeof("0000:000000:000000:" PP_GID_HEX)
#define PP_DONE	      "done"
#define PP_CHK_STRIDE 4096 /* -c checks the first byte of each page */
#define PP_GRH	      40   /* UD receives start with the GRH area */
#define PP_UD_QKEY    0x11111111u
#define PP_WIRE_QP    256 /* srq_pingpong always exchanges 256 addresses */
#define PP_MAX_QP     64  /* srq_pingpong -q: the device has ~80 slots */

struct pp_dest {
	uint32_t lid, qpn, psn;
	uint8_t gid[16];
};

struct pp_opts {
	const char *server; /* NULL: we are the server */
	unsigned int port, size, rx_depth, iters;
	uint32_t mtu;
	int ib_port, sl, gidx;
	bool events, check;
	bool ud;	     /* ud_pingpong */
	bool srq;	     /* srq_pingpong */
	unsigned int num_qp; /* srq_pingpong -q */
};

struct pp {
	struct gv_context *ctx;
	struct gv_pd *pd;
	struct gv_mr *mr;
	struct gv_cq *cq;
	struct gv_qp *qp;
	uint8_t *buf;
	struct gv_ah *ah;	      /* UD: towards the peer */
	uint32_t rem_qpn;	      /* UD: the peer's QPN */
	struct gv_srq *srq;	      /* srq_pingpong: */
	struct gv_qp *qps[PP_MAX_QP]; /* its QPs (qp is one of them) */
	int qpending[PP_MAX_QP];
	struct pp_opts o;
	int pending, routs;
	unsigned int rcnt, scnt;
};

int gv_tool_parse_gid(const char *arg, struct gv_tool_gid *ret)
{
	char text[INET6_ADDRSTRLEN + 8], *eq, *comma, *end;
	unsigned long idx;

	if (strlen(arg) >= sizeof(text))
		return -EINVAL;
	strcpy(text, arg);
	eq = strchr(text, '=');
	if (!eq)
		return -EINVAL;
	*eq = '\0';
	idx = strtoul(text, &end, 0);
	if (*end || end == text || idx >= VIRTIO_RDMA_GID_TBL_LEN)
		return -EINVAL;
	ret->index = (uint16_t)idx;
	ret->type = VIRTIO_RDMA_GID_TYPE_ROCE_V2;
	comma = strchr(eq + 1, ',');
	if (comma) {
		*comma = '\0';
		if (!strcmp(comma + 1, "v1"))
			ret->type = VIRTIO_RDMA_GID_TYPE_ROCE_V1;
		else if (strcmp(comma + 1, "v2"))
			return -EINVAL;
	}
	return inet_pton(AF_INET6, eq + 1, ret->gid) == 1 ? 0 : -EINVAL;
}

int gv_tool_open(const struct gv_tool_opts *o, struct gv_context **ret_ctx)
{
	struct gv_opts go = { .timeout_ms = o->timeout_ms,
			      .scatter = o->scatter,
			      .data_size = o->data_size };
	struct gv_context *ctx;
	int r = gv_open(o->socket, &go, &ctx);

	if (r) {
		fprintf(stderr,
			"rdmagate-guest: cannot open the device at %s: "
			"%s\n",
			o->socket, strerror(-r));
		return r;
	}
	for (unsigned int i = 0; i < o->ngids; i++) {
		r = gv_add_gid(ctx, o->gids[i].index, o->gids[i].gid,
			       o->gids[i].type);
		if (r) {
			fprintf(stderr, "rdmagate-guest: ADD_GID %u: %s\n",
				o->gids[i].index, strerror(-r));
			gv_close(ctx);
			return r;
		}
	}
	*ret_ctx = ctx;
	return 0;
}

/* ---- the TCP exchange (rdma-core's wire format) ---- */

static void gid_to_wire(const uint8_t gid[16], char wire[33])
{
	for (int i = 0; i < 16; i++)
		sprintf(wire + 2 * i, "%02x", gid[i]);
}

static int wire_to_gid(const char *wire, uint8_t gid[16])
{
	for (int i = 0; i < 16; i++) {
		unsigned int b;

		if (sscanf(wire + 2 * i, "%2x", &b) != 1)
			return -EINVAL;
		gid[i] = (uint8_t)b;
	}
	return 0;
}

static void format_dest(const struct pp_dest *d, char msg[PP_MSG_LEN])
{
	char wire[33];

	gid_to_wire(d->gid, wire);
	snprintf(msg, PP_MSG_LEN, "%04x:%06x:%06x:%s", d->lid, d->qpn, d->psn,
		 wire);
}

static int parse_dest(const char *msg, struct pp_dest *d)
{
	char copy[PP_MSG_LEN], wire[33];

	memcpy(copy, msg, PP_MSG_LEN);
	copy[PP_MSG_LEN - 1] = '\0';
	if (sscanf(copy, "%x:%x:%x:%32s", &d->lid, &d->qpn, &d->psn, wire) !=
		    4 ||
	    strlen(wire) != 32)
		return -EINVAL;
	return wire_to_gid(wire, d->gid);
}

int gv_tool_read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EIO;
		got += (size_t)n;
	}
	return 0;
}

int gv_tool_write_full(int fd, const void *buf, size_t len)
{
	return write(fd, buf, len) == (ssize_t)len ? 0 : -EIO;
}

int gv_tool_connect(const char *host, unsigned int port)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *res;
	char service[16];
	int fd = -1;

	snprintf(service, sizeof(service), "%u", port);
	if (getaddrinfo(host, service, &hints, &res)) {
		fprintf(stderr, "cannot resolve %s:%u\n", host, port);
		return -1;
	}
	for (int tries = 0; fd < 0 && tries < 50; tries++) {
		for (struct addrinfo *t = res; t && fd < 0; t = t->ai_next) {
			fd = socket(t->ai_family, t->ai_socktype | SOCK_CLOEXEC,
				    t->ai_protocol);
			if (fd >= 0 && connect(fd, t->ai_addr, t->ai_addrlen))
				fd = safe_close(fd);
		}
		if (fd < 0)
			usleep(100000);
	}
	freeaddrinfo(res);
	if (fd < 0)
		fprintf(stderr, "Couldn't connect to %s:%u\n", host, port);
	return fd;
}

int gv_tool_accept(unsigned int port)
{
	struct addrinfo hints = { .ai_flags = AI_PASSIVE,
				  .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *res;
	char service[16];
	int fd = -1, conn, one = 1;

	snprintf(service, sizeof(service), "%u", port);
	if (getaddrinfo(NULL, service, &hints, &res))
		return -1;
	for (struct addrinfo *t = res; t && fd < 0; t = t->ai_next) {
		fd = socket(t->ai_family, t->ai_socktype | SOCK_CLOEXEC,
			    t->ai_protocol);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, t->ai_addr, t->ai_addrlen) || listen(fd, 1))
			fd = safe_close(fd);
	}
	freeaddrinfo(res);
	if (fd < 0) {
		fprintf(stderr, "Couldn't listen to port %u\n", port);
		return -1;
	}
	conn = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
	close(fd);
	if (conn < 0)
		fprintf(stderr, "accept() failed\n");
	return conn;
}

/* ---- the queue pair ---- */

static bool has_interface_id(const uint8_t gid[16])
{
	return memcmp(gid + 8, "\0\0\0\0\0\0\0\0", 8) != 0;
}

/* ud_pingpong: RTR, RTS with the PSN, an AH towards the peer. */
static int pp_connect_ud(struct pp *p, const struct pp_dest *my,
			 const struct pp_dest *rem)
{
	struct virtio_rdma_qp_attr a = { .qp_state = VIRTIO_RDMA_QPS_RTR };
	struct gv_ah_attr ah = { .sl = (uint8_t)p->o.sl };
	int r = gv_modify_qp(p->qp, &a, VIRTIO_RDMA_QP_STATE);

	if (r) {
		fprintf(stderr, "Failed to modify QP to RTR: %s\n",
			strerror(-r));
		return r;
	}
	a.qp_state = VIRTIO_RDMA_QPS_RTS;
	a.sq_psn = my->psn;
	r = gv_modify_qp(p->qp, &a,
			 VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_SQ_PSN);
	if (r) {
		fprintf(stderr, "Failed to modify QP to RTS: %s\n",
			strerror(-r));
		return r;
	}
	if (has_interface_id(rem->gid)) {
		ah.hop_limit = 1;
		memcpy(ah.dgid, rem->gid, 16);
		ah.sgid_index = (uint8_t)p->o.gidx;
	}
	p->rem_qpn = rem->qpn;
	r = gv_create_ah(p->pd, &ah, &p->ah);
	if (r)
		fprintf(stderr, "Failed to create AH\n");
	return r;
}

static int pp_connect(struct pp *p, const struct pp_dest *my,
		      const struct pp_dest *rem)
{
	struct virtio_rdma_qp_attr a = { 0 };
	int r;

	if (p->o.ud)
		return pp_connect_ud(p, my, rem);
	a.qp_state = VIRTIO_RDMA_QPS_RTR;
	a.path_mtu = p->o.mtu;
	a.dest_qp_num = rem->qpn;
	a.rq_psn = rem->psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.sl = (uint8_t)p->o.sl;
	a.ah_attr.port_num = (uint8_t)p->o.ib_port;
	/* rc_pingpong: a GRH when the peer's interface id is non-zero */
	if (has_interface_id(rem->gid)) {
		a.ah_attr.ah_flags = VIRTIO_RDMA_AH_GRH;
		a.ah_attr.grh.hop_limit = 1;
		memcpy(a.ah_attr.grh.dgid, rem->gid, 16);
		a.ah_attr.grh.sgid_index = (uint8_t)p->o.gidx;
	}
	r = gv_modify_qp(p->qp, &a,
			 VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_AV |
				 VIRTIO_RDMA_QP_PATH_MTU |
				 VIRTIO_RDMA_QP_DEST_QPN |
				 VIRTIO_RDMA_QP_RQ_PSN |
				 VIRTIO_RDMA_QP_MAX_DEST_RD_ATOMIC |
				 VIRTIO_RDMA_QP_MIN_RNR_TIMER);
	if (r) {
		fprintf(stderr, "Failed to modify QP to RTR: %s\n",
			strerror(-r));
		return r;
	}
	a.qp_state = VIRTIO_RDMA_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = my->psn;
	a.max_rd_atomic = 1;
	r = gv_modify_qp(p->qp, &a,
			 VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_TIMEOUT |
				 VIRTIO_RDMA_QP_RETRY_CNT |
				 VIRTIO_RDMA_QP_RNR_RETRY |
				 VIRTIO_RDMA_QP_SQ_PSN |
				 VIRTIO_RDMA_QP_MAX_QP_RD_ATOMIC);
	if (r)
		fprintf(stderr, "Failed to modify QP to RTS: %s\n",
			strerror(-r));
	return r;
}

static int client_exchange(struct pp *p, const struct pp_dest *my,
			   struct pp_dest *rem)
{
	char msg[PP_MSG_LEN];
	int fd = gv_tool_connect(p->o.server, p->o.port), r = -EIO;

	if (fd < 0)
		return -EIO;
	format_dest(my, msg);
	if (!gv_tool_write_full(fd, msg, sizeof(msg)) &&
	    !gv_tool_read_full(fd, msg, sizeof(msg)) &&
	    !gv_tool_write_full(fd, PP_DONE, sizeof(PP_DONE)))
		r = parse_dest(msg, rem);
	if (r)
		fprintf(stderr, "Couldn't read/write remote address\n");
	close(fd);
	return r;
}

static int server_exchange(struct pp *p, const struct pp_dest *my,
			   struct pp_dest *rem)
{
	char msg[PP_MSG_LEN];
	int fd = gv_tool_accept(p->o.port), r;

	if (fd < 0)
		return -EIO;
	r = gv_tool_read_full(fd, msg, sizeof(msg));
	if (!r)
		r = parse_dest(msg, rem);
	if (r) {
		fprintf(stderr, "Couldn't read remote address\n");
		goto out;
	}
	/* like rc_pingpong: connect before answering */
	r = pp_connect(p, my, rem);
	if (r)
		goto out;
	format_dest(my, msg);
	r = gv_tool_write_full(fd, msg, sizeof(msg));
	if (!r)
		r = gv_tool_read_full(fd, msg, sizeof(PP_DONE));
	if (r)
		fprintf(stderr, "Couldn't send/recv local address\n");
out:
	close(fd);
	return r;
}

/* ud_pingpong: a message must fit in one packet of the port's MTU. */
static int pp_check_mtu(struct pp *p)
{
	struct virtio_rdma_port_attr pa;
	uint32_t mtu;
	int r = gv_query_port(p->ctx, &pa);

	if (r) {
		fprintf(stderr, "Unable to query port info for port %d\n",
			p->o.ib_port);
		return r;
	}
	mtu = gv_mtu_to_bytes(pa.active_mtu);
	if (p->o.size > mtu) {
		fprintf(stderr, "Requested size larger than port MTU (%u)\n",
			mtu);
		return -EMSGSIZE;
	}
	return 0;
}

static int pp_init(struct pp *p)
{
	struct virtio_rdma_qp_attr a = { 0 };
	struct gv_qp_init_attr qa = { 0 };
	uint32_t len = p->o.size + (p->o.ud ? PP_GRH : 0);
	uint32_t mask = VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_PKEY_INDEX |
			VIRTIO_RDMA_QP_PORT;
	int r = p->o.ud ? pp_check_mtu(p) : 0;

	if (r)
		return r;
	p->buf = gv_alloc_buf(p->ctx, len, 0);
	if (!p->buf)
		return -errno;
	memset(p->buf, 0x7b, len);
	r = gv_alloc_pd(p->ctx, &p->pd);
	if (!r)
		r = gv_reg_mr(p->pd, p->buf, len,
			      VIRTIO_RDMA_ACCESS_LOCAL_WRITE, &p->mr);
	if (!r)
		r = gv_create_cq(p->ctx, p->o.rx_depth + 1, &p->cq);
	if (r)
		return r;
	qa.send_cq = qa.recv_cq = p->cq;
	qa.max_send_wr = 1;
	qa.max_recv_wr = p->o.rx_depth;
	qa.max_send_sge = qa.max_recv_sge = 1;
	qa.qp_type = p->o.ud ? VIRTIO_RDMA_QPT_UD : VIRTIO_RDMA_QPT_RC;
	r = gv_create_qp(p->pd, &qa, &p->qp);
	if (r)
		return r;
	a.qp_state = VIRTIO_RDMA_QPS_INIT;
	a.port_num = (uint8_t)p->o.ib_port;
	if (p->o.ud) {
		a.qkey = PP_UD_QKEY;
		mask |= VIRTIO_RDMA_QP_QKEY;
	} else {
		mask |= VIRTIO_RDMA_QP_ACCESS_FLAGS;
	}
	return gv_modify_qp(p->qp, &a, mask);
}

static void pp_close(struct pp *p)
{
	if (p->o.srq) {
		for (unsigned int i = 0; i < p->o.num_qp; i++)
			if (p->qps[i])
				gv_destroy_qp(p->qps[i]);
		p->qp = NULL;
		if (p->srq)
			gv_destroy_srq(p->srq);
	}
	if (p->qp)
		gv_destroy_qp(p->qp);
	if (p->cq)
		gv_destroy_cq(p->cq);
	if (p->mr)
		gv_dereg_mr(p->mr);
	if (p->ah)
		gv_destroy_ah(p->ah);
	if (p->pd)
		gv_dealloc_pd(p->pd);
	gv_close(p->ctx);
}

static int pp_post_recv(struct pp *p, int n)
{
	struct gv_sge sge = { (uintptr_t)p->buf,
			      p->o.size + (p->o.ud ? PP_GRH : 0), p->mr->lkey };
	struct gv_recv_wr wr = { .wr_id = PP_RECV_WRID,
				 .sg_list = &sge,
				 .num_sge = 1 };
	int i;

	for (i = 0; i < n; i++)
		if (p->srq ? gv_post_srq_recv(p->srq, &wr, NULL)
			   : gv_post_recv(p->qp, &wr, NULL))
			break;
	return i;
}

static int pp_post_send(struct pp *p)
{
	struct gv_sge sge = { (uintptr_t)p->buf + (p->o.ud ? PP_GRH : 0),
			      p->o.size, p->mr->lkey };
	struct gv_send_wr wr = { .wr_id = PP_SEND_WRID,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = VIRTIO_RDMA_WR_SEND,
				 .send_flags = VIRTIO_RDMA_SEND_SIGNALED };

	if (p->o.ud) {
		wr.wr.ud.ah = p->ah;
		wr.wr.ud.remote_qpn = p->rem_qpn;
		wr.wr.ud.remote_qkey = PP_UD_QKEY;
	}

	if (p->o.check) /* rc_pingpong -c: page i starts with i % 1 == 0 */
		for (unsigned int i = 0; i < p->o.size; i += PP_CHK_STRIDE)
			p->buf[i] = 0;
	return gv_post_send(p->qp, &wr, NULL);
}

static int pp_wc(struct pp *p, const struct gv_wc *wc)
{
	if (wc->status != VIRTIO_RDMA_WC_SUCCESS) {
		fprintf(stderr, "Failed status %s (%u) for wr_id %d\n",
			gv_wc_status_str(wc->status), wc->status,
			(int)wc->wr_id);
		return 1;
	}
	switch ((int)wc->wr_id) {
	case PP_SEND_WRID:
		p->scnt++;
		break;
	case PP_RECV_WRID:
		if (--p->routs <= 1) {
			p->routs +=
				pp_post_recv(p, (int)p->o.rx_depth - p->routs);
			if (p->routs < (int)p->o.rx_depth) {
				fprintf(stderr, "Couldn't post receive (%d)\n",
					p->routs);
				return 1;
			}
		}
		for (unsigned int i = 0; p->o.check && i < p->o.size;
		     i += PP_CHK_STRIDE)
			if (p->buf[i] != 0)
				printf("invalid data in page %u\n",
				       i / PP_CHK_STRIDE);
		p->rcnt++;
		break;
	default:
		fprintf(stderr, "Completion for unknown wr_id %d\n",
			(int)wc->wr_id);
		return 1;
	}
	p->pending &= ~(int)wc->wr_id;
	if (p->scnt < p->o.iters && !p->pending) {
		if (pp_post_send(p)) {
			fprintf(stderr, "Couldn't post send\n");
			return 1;
		}
		p->pending = PP_RECV_WRID | PP_SEND_WRID;
	}
	return 0;
}

static int pp_wait_event(struct pp *p)
{
	int r = gv_get_cq_event(p->cq, p->ctx->timeout_ms * 4);

	if (r) {
		fprintf(stderr, "Failed to get cq_event: %s\n", strerror(-r));
		return r;
	}
	r = gv_req_notify_cq(p->cq, false);
	if (r)
		fprintf(stderr, "Couldn't request CQ notification\n");
	return r;
}

static int pp_loop(struct pp *p)
{
	struct gv_wc wc[2];
	int ne;

	while (p->rcnt < p->o.iters || p->scnt < p->o.iters) {
		if (p->o.events && pp_wait_event(p))
			return 1;
		do {
			ne = gv_poll_cq(p->cq, 2, wc);
			if (ne < 0) {
				fprintf(stderr, "poll CQ failed %d\n", ne);
				return 1;
			}
		} while (!p->o.events && ne < 1);
		for (int i = 0; i < ne; i++)
			if (pp_wc(p, &wc[i])) {
				fprintf(stderr, "parse WC failed %d\n", ne);
				return 1;
			}
	}
	return 0;
}

/* ud_pingpong's local line says "PSN 0x...: GID": kept, tools parse it. */
static void print_dest(const char *what, const struct pp_dest *d,
		       const char *sep)
{
	char gid[INET6_ADDRSTRLEN];

	inet_ntop(AF_INET6, d->gid, gid, sizeof(gid));
	printf("  %s LID 0x%04x, QPN 0x%06x, PSN 0x%06x%s GID %s\n", what,
	       d->lid, d->qpn, d->psn, sep, gid);
	fflush(stdout);
}

/* The two result lines of the rdma-core pingpongs. */
static void pp_report(const struct pp *p, const struct timeval *start,
		      const struct timeval *end)
{
	double usec = (double)(end->tv_sec - start->tv_sec) * 1e6 +
		      (double)(end->tv_usec - start->tv_usec);
	long long bytes = (long long)p->o.size * p->o.iters * 2;

	printf("%lld bytes in %.2f seconds = %.2f Mbit/sec\n", bytes,
	       usec / 1e6, (double)bytes * 8. / usec);
	printf("%u iters in %.2f seconds = %.2f usec/iter\n", p->o.iters,
	       usec / 1e6, usec / p->o.iters);
}

static int pp_run(struct pp *p)
{
	struct pp_dest my = { 0 }, rem;
	struct timeval start, end;

	p->routs = pp_post_recv(p, (int)p->o.rx_depth);
	if (p->routs < (int)p->o.rx_depth) {
		fprintf(stderr, "Couldn't post receive (%d)\n", p->routs);
		return 1;
	}
	if (p->o.events && gv_req_notify_cq(p->cq, false)) {
		fprintf(stderr, "Couldn't request CQ notification\n");
		return 1;
	}
	if (p->o.gidx >= 0 &&
	    gv_query_gid(p->ctx, (uint16_t)p->o.gidx, my.gid)) {
		fprintf(stderr, "can't read sgid of index %d\n", p->o.gidx);
		return 1;
	}
	my.qpn = p->qp->qp_num;
	my.psn = (uint32_t)lrand48() & 0xffffff;
	print_dest("local address: ", &my, p->o.ud ? ":" : ",");
	if (p->o.server ? client_exchange(p, &my, &rem)
			: server_exchange(p, &my, &rem))
		return 1;
	print_dest("remote address:", &rem, ",");
	if (p->o.server && pp_connect(p, &my, &rem))
		return 1;
	p->pending = PP_RECV_WRID;
	if (p->o.server) {
		if (pp_post_send(p)) {
			fprintf(stderr, "Couldn't post send\n");
			return 1;
		}
		p->pending |= PP_SEND_WRID;
	}
	gettimeofday(&start, NULL);
	if (pp_loop(p))
		return 1;
	gettimeofday(&end, NULL);
	pp_report(p, &start, &end);
	return 0;
}

static void pp_usage(const char *argv0, const char *note)
{
	printf("Usage:\n"
	       "  rdmagate-guest --socket PATH [--gid I=GID] %s [options]"
	       "            start a server and wait for connection\n"
	       "  rdmagate-guest --socket PATH [--gid I=GID] %s [options] "
	       "<host>     connect to server at <host>\n\n"
	       "Options:\n"
	       "  -p, --port=<port>      listen on/connect to port <port> "
	       "(default 18515)\n"
	       "  -d, --ib-dev=<dev>     ignored (the device is --socket)\n"
	       "  -i, --ib-port=<port>   use port <port> of IB device "
	       "(default 1)\n"
	       "  -s, --size=<size>      size of message to exchange "
	       "(default 4096)\n"
	       "  -m, --mtu=<size>       path MTU (default 1024)\n"
	       "  -r, --rx-depth=<dep>   number of receives to post at a "
	       "time (default 500)\n"
	       "  -n, --iters=<iters>    number of exchanges (default 1000)\n"
	       "  -l, --sl=<sl>          service level value\n"
	       "  -e, --events           sleep on CQ events (default poll)\n"
	       "  -g, --gid-idx=<gid index> local port gid index\n"
	       "  -c, --chk              validate received buffer\n"
	       "%s",
	       argv0, argv0, note);
}

static int pp_parse(struct pp_opts *o, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "port", 1, NULL, 'p' },
		{ "ib-dev", 1, NULL, 'd' },
		{ "ib-port", 1, NULL, 'i' },
		{ "size", 1, NULL, 's' },
		{ "mtu", 1, NULL, 'm' },
		{ "rx-depth", 1, NULL, 'r' },
		{ "iters", 1, NULL, 'n' },
		{ "sl", 1, NULL, 'l' },
		{ "events", 0, NULL, 'e' },
		{ "gid-idx", 1, NULL, 'g' },
		{ "chk", 0, NULL, 'c' },
		{ "num-qp", 1, NULL, 'q' },
		{ 0 },
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "p:d:i:s:m:r:n:l:eg:cq:", lo,
				NULL)) != -1) {
		if ((o->ud && (c == 'm' || c == 'c')) || (o->srq && c == 'c') ||
		    (!o->srq && c == 'q'))
			return -EINVAL; /* not an option of that tool */
		switch (c) {
		case 'p':
			o->port = (unsigned int)strtoul(optarg, NULL, 0);
			if (o->port > 65535)
				return -EINVAL;
			break;
		case 'd':
			break;
		case 'i':
			o->ib_port = (int)strtol(optarg, NULL, 0);
			if (o->ib_port != VIRTIO_RDMA_PORT)
				return -EINVAL; /* the device has port 1 */
			break;
		case 's':
			o->size = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'm':
			o->mtu = gv_mtu_to_enum(
				(uint32_t)strtoul(optarg, NULL, 0));
			if (!o->mtu)
				return -EINVAL;
			break;
		case 'r':
			o->rx_depth = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'n':
			o->iters = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'l':
			o->sl = (int)strtol(optarg, NULL, 0);
			break;
		case 'e':
			o->events = true;
			break;
		case 'g':
			o->gidx = (int)strtol(optarg, NULL, 0);
			break;
		case 'c':
			o->check = true;
			break;
		case 'q':
			o->num_qp = (unsigned int)strtoul(optarg, NULL, 0);
			if (!o->num_qp || o->num_qp > PP_MAX_QP)
				return -EINVAL;
			break;
		default:
			return -EINVAL;
		}
	}
	if (optind == argc - 1)
		o->server = argv[optind];
	else if (optind < argc)
		return -EINVAL;
	if (!o->size || !o->rx_depth || o->rx_depth >= VIRTIO_RDMA_RING_SIZE ||
	    !o->iters || o->sl < 0 || o->sl > 15 ||
	    o->gidx >= VIRTIO_RDMA_GID_TBL_LEN)
		return -EINVAL;
	if (o->srq && o->num_qp > o->rx_depth) {
		fprintf(stderr,
			"rx_depth %u is too small for %u QPs -- must "
			"have at least one receive per QP.\n",
			o->rx_depth, o->num_qp);
		return -EINVAL;
	}
	return 0;
}

/* ---- srq_pingpong: num_qp RC QPs receiving through one SRQ ---- */

static int srq_init(struct pp *p)
{
	struct virtio_rdma_qp_attr a = { .qp_state = VIRTIO_RDMA_QPS_INIT };
	struct gv_qp_init_attr qa = { 0 };
	/* rx_depth + num_qp CQEs, as the native; the device caps max_cqe */
	uint32_t cqe = p->o.rx_depth + p->o.num_qp;
	int r;

	if (cqe > p->ctx->cfg.max_cqe)
		cqe = p->ctx->cfg.max_cqe;
	p->buf = gv_alloc_buf(p->ctx, p->o.size, 0);
	if (!p->buf)
		return -errno;
	memset(p->buf, 0, p->o.size);
	r = gv_alloc_pd(p->ctx, &p->pd);
	if (!r)
		r = gv_reg_mr(p->pd, p->buf, p->o.size,
			      VIRTIO_RDMA_ACCESS_LOCAL_WRITE, &p->mr);
	if (!r)
		r = gv_create_cq(p->ctx, cqe, &p->cq);
	if (!r)
		r = gv_create_srq(p->pd, p->o.rx_depth, 1, &p->srq);
	qa.send_cq = qa.recv_cq = p->cq;
	qa.srq = p->srq;
	qa.max_send_wr = qa.max_send_sge = 1;
	qa.qp_type = VIRTIO_RDMA_QPT_RC;
	a.port_num = (uint8_t)p->o.ib_port;
	for (unsigned int i = 0; !r && i < p->o.num_qp; i++) {
		r = gv_create_qp(p->pd, &qa, &p->qps[i]);
		if (!r)
			r = gv_modify_qp(p->qps[i], &a,
					 VIRTIO_RDMA_QP_STATE |
						 VIRTIO_RDMA_QP_PKEY_INDEX |
						 VIRTIO_RDMA_QP_PORT |
						 VIRTIO_RDMA_QP_ACCESS_FLAGS);
	}
	return r;
}

static int srq_connect_all(struct pp *p, const struct pp_dest *my,
			   const struct pp_dest *rem)
{
	for (unsigned int i = 0; i < p->o.num_qp; i++) {
		p->qp = p->qps[i];
		if (pp_connect(p, &my[i], &rem[i])) {
			fprintf(stderr, "Failed to connect QP[%u]\n", i);
			return -EIO;
		}
	}
	return 0;
}

/* PP_WIRE_QP addresses each way (unused ones zero), then "done". */
static int srq_exchange(struct pp *p, const struct pp_dest *my,
			struct pp_dest *rem)
{
	char msg[PP_MSG_LEN];
	int fd, r = 0;

	fd = p->o.server ? gv_tool_connect(p->o.server, p->o.port)
			 : gv_tool_accept(p->o.port);
	if (fd < 0)
		return -EIO;
	for (int i = 0; p->o.server && !r && i < PP_WIRE_QP; i++) {
		format_dest(&my[i], msg);
		r = gv_tool_write_full(fd, msg, sizeof(msg));
	}
	for (int i = 0; !r && i < PP_WIRE_QP; i++) {
		r = gv_tool_read_full(fd, msg, sizeof(msg));
		if (!r)
			r = parse_dest(msg, &rem[i]);
	}
	if (!r && !p->o.server) {
		r = srq_connect_all(p, my, rem);
		for (int i = 0; !r && i < PP_WIRE_QP; i++) {
			format_dest(&my[i], msg);
			r = gv_tool_write_full(fd, msg, sizeof(msg));
		}
		if (!r)
			r = gv_tool_read_full(fd, msg, sizeof(PP_DONE));
	} else if (!r) {
		r = gv_tool_write_full(fd, PP_DONE, sizeof(PP_DONE));
	}
	if (r)
		fprintf(stderr, "Couldn't exchange addresses\n");
	close(fd);
	return r;
}

static int srq_post_send(struct pp *p, unsigned int q)
{
	p->qp = p->qps[q];
	if (pp_post_send(p)) {
		fprintf(stderr, "Couldn't post send\n");
		return -EIO;
	}
	p->qpending[q] = PP_RECV_WRID | PP_SEND_WRID;
	return 0;
}

static int srq_find_qp(const struct pp *p, uint32_t qpn)
{
	for (unsigned int i = 0; i < p->o.num_qp; i++)
		if (p->qps[i]->qp_num == qpn)
			return (int)i;
	return -1;
}

static int srq_wc(struct pp *p, const struct gv_wc *wc)
{
	int q = srq_find_qp(p, wc->qp_num);

	if (wc->status != VIRTIO_RDMA_WC_SUCCESS) {
		fprintf(stderr, "Failed status %s (%u) for wr_id %d\n",
			gv_wc_status_str(wc->status), wc->status,
			(int)wc->wr_id);
		return -EIO;
	}
	if (q < 0) {
		fprintf(stderr, "Couldn't find QPN %06x\n", wc->qp_num);
		return -EIO;
	}
	if (wc->wr_id == PP_SEND_WRID) {
		p->scnt++;
	} else if (wc->wr_id == PP_RECV_WRID) {
		if (--p->routs <= (int)p->o.num_qp) {
			p->routs +=
				pp_post_recv(p, (int)p->o.rx_depth - p->routs);
			if (p->routs < (int)p->o.rx_depth) {
				fprintf(stderr, "Couldn't post receive (%d)\n",
					p->routs);
				return -EIO;
			}
		}
		p->rcnt++;
	} else {
		fprintf(stderr, "Completion for unknown wr_id %d\n",
			(int)wc->wr_id);
		return -EIO;
	}
	p->qpending[q] &= ~(int)wc->wr_id;
	if (p->scnt < p->o.iters && !p->qpending[q])
		return srq_post_send(p, (unsigned int)q);
	return 0;
}

static int srq_loop(struct pp *p)
{
	struct gv_wc wc[PP_MAX_QP];
	int ne;

	while (p->rcnt < p->o.iters || p->scnt < p->o.iters) {
		if (p->o.events && pp_wait_event(p))
			return -EIO;
		do {
			ne = gv_poll_cq(p->cq, PP_MAX_QP, wc);
			if (ne < 0) {
				fprintf(stderr, "poll CQ failed %d\n", ne);
				return ne;
			}
		} while (!p->o.events && ne < 1);
		for (int i = 0; i < ne; i++)
			if (srq_wc(p, &wc[i]))
				return -EIO;
	}
	return 0;
}

static int srq_run(struct pp *p)
{
	struct pp_dest my[PP_WIRE_QP] = { 0 }, rem[PP_WIRE_QP];
	struct timeval start, end;
	uint8_t gid[16] = { 0 };

	p->routs = pp_post_recv(p, (int)p->o.rx_depth);
	if (p->routs < (int)p->o.rx_depth) {
		fprintf(stderr, "Couldn't post receive (%d)\n", p->routs);
		return -EIO;
	}
	if (p->o.events && gv_req_notify_cq(p->cq, false))
		return -EIO;
	if (p->o.gidx >= 0 && gv_query_gid(p->ctx, (uint16_t)p->o.gidx, gid)) {
		fprintf(stderr, "Could not get local gid for gid index %d\n",
			p->o.gidx);
		return -EIO;
	}
	for (unsigned int i = 0; i < p->o.num_qp; i++) {
		my[i].qpn = p->qps[i]->qp_num;
		my[i].psn = (uint32_t)lrand48() & 0xffffff;
		memcpy(my[i].gid, gid, 16);
		print_dest("local address: ", &my[i], ",");
	}
	if (srq_exchange(p, my, rem))
		return -EIO;
	for (unsigned int i = 0; i < p->o.num_qp; i++)
		print_dest("remote address:", &rem[i], ",");
	if (p->o.server && srq_connect_all(p, my, rem))
		return -EIO;
	for (unsigned int i = 0; i < p->o.num_qp; i++) {
		p->qpending[i] = PP_RECV_WRID;
		if (p->o.server && srq_post_send(p, i))
			return -EIO;
	}
	gettimeofday(&start, NULL);
	if (srq_loop(p))
		return -EIO;
	gettimeofday(&end, NULL);
	pp_report(p, &start, &end);
	return 0;
}

enum pp_kind { PP_RC, PP_UD, PP_SRQ };

static const char *const pp_notes[] = {
	[PP_RC] = "",
	[PP_UD] = "(ud_pingpong: default size 2048, no -m and no -c)\n",
	[PP_SRQ] = "(srq_pingpong: -q, --num-qp=<num>: 16, at most 64)\n",
};

static int pp_main(const struct gv_tool_opts *go, int argc, char **argv,
		   enum pp_kind kind)
{
	bool ud = kind == PP_UD;
	struct pp p = { .o = { .port = 18515,
			       .size = ud ? 2048 : 4096,
			       .rx_depth = 500,
			       .iters = 1000,
			       .mtu = VIRTIO_RDMA_MTU_1024,
			       .ib_port = 1,
			       .gidx = -1,
			       .ud = ud,
			       .srq = kind == PP_SRQ,
			       .num_qp = 16 } };
	int r;

	if (pp_parse(&p.o, argc, argv)) {
		pp_usage(argv[0], pp_notes[kind]);
		return 2;
	}
	srand48((long)getpid() * time(NULL));
	if (gv_tool_open(go, &p.ctx))
		return 1;
	r = p.o.srq ? srq_init(&p) : pp_init(&p);
	if (r) {
		fprintf(stderr, "rdmagate-guest: %s setup: %s\n", argv[0],
			strerror(-r));
		pp_close(&p);
		return 1;
	}
	r = p.o.srq ? srq_run(&p) : pp_run(&p);
	pp_close(&p);
	return r ? 1 : 0;
}

int gv_tool_rc_pingpong(const struct gv_tool_opts *go, int argc, char **argv)
{
	return pp_main(go, argc, argv, PP_RC);
}

int gv_tool_ud_pingpong(const struct gv_tool_opts *go, int argc, char **argv)
{
	return pp_main(go, argc, argv, PP_UD);
}

int gv_tool_srq_pingpong(const struct gv_tool_opts *go, int argc, char **argv)
{
	return pp_main(go, argc, argv, PP_SRQ);
}
