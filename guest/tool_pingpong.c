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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "guest/opts.h"
#include "guest/tools.h"

enum { PP_RECV_WRID = 1, PP_SEND_WRID = 2 };

#define PP_CHK_STRIDE 4096 /* -c checks the first byte of each page */
#define PP_GRH	      40   /* UD receives start with the GRH area */
#define PP_UD_QKEY    0x11111111u
#define PP_WIRE_QP    256 /* srq_pingpong always exchanges 256 addresses */

struct pp {
	struct gv_context *ctx;
	struct gv_tool_res res; /* buf, pd, mr, cq */
	struct gv_qp *qp;
	struct gv_ah *ah;	      /* UD: towards the peer */
	uint32_t rem_qpn;	      /* UD: the peer's QPN */
	struct gv_srq *srq;	      /* srq_pingpong: */
	struct gv_qp *qps[PP_MAX_QP]; /* its QPs (qp is one of them) */
	int qpending[PP_MAX_QP];
	struct pp_opts o;
	const struct gv_tool_meet *meet; /* NULL: the TCP exchange */
	int pending, routs;
	unsigned int rcnt, scnt;
};

/* ---- the queue pair ---- */

/* ud_pingpong: RTR, RTS with the PSN, an AH towards the peer. */
static int pp_connect_ud(struct pp *p, const struct gv_tool_dest *my,
			 const struct gv_tool_dest *rem)
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
	if (gv_tool_has_interface_id(rem->gid)) {
		ah.hop_limit = 1;
		memcpy(ah.dgid, rem->gid, 16);
		ah.sgid_index = (uint8_t)p->o.c.gidx;
	}
	p->rem_qpn = rem->qpn;
	r = gv_create_ah(p->res.pd, &ah, &p->ah);
	if (r)
		fprintf(stderr, "Failed to create AH\n");
	return r;
}

static int pp_connect(struct pp *p, const struct gv_tool_dest *my,
		      const struct gv_tool_dest *rem)
{
	/* rc_pingpong: a GRH when the peer's interface id is non-zero */
	struct gv_tool_path path = { .mtu = p->o.mtu,
				     .port = (uint8_t)p->o.ib_port,
				     .sl = (uint8_t)p->o.sl,
				     .sgid_index = (uint8_t)p->o.c.gidx,
				     .rd_atomic = 1 };

	if (p->o.ud)
		return pp_connect_ud(p, my, rem);
	return gv_tool_rc_connect(p->qp, &path, my, rem);
}

/* Connects our QP, or srq_pingpong's num_qp QPs, to the peer's. */
static int pp_connect_all(struct pp *p, const struct gv_tool_dest *my,
			  const struct gv_tool_dest *rem)
{
	if (!p->o.srq)
		return pp_connect(p, my, rem);
	for (unsigned int i = 0; i < p->o.num_qp; i++) {
		p->qp = p->qps[i];
		if (pp_connect(p, &my[i], &rem[i])) {
			fprintf(stderr, "Failed to connect QP[%u]\n", i);
			return -EIO;
		}
	}
	return 0;
}

static int pp_connect_cb(void *arg, const struct gv_tool_dest *my,
			 const struct gv_tool_dest *rem)
{
	return pp_connect_all(arg, my, rem);
}

/* n addresses each way (srq_pingpong: PP_WIRE_QP), then "done". */
static int pp_exchange(struct pp *p, const struct gv_tool_dest *my,
		       struct gv_tool_dest *rem, unsigned int n)
{
	int fd = gv_tool_exchange(p->o.c.server, p->o.c.port, my, rem, n,
				  pp_connect_cb, p);

	if (fd < 0)
		return fd;
	return gv_tool_finish(fd, p->o.c.server != NULL);
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

/* The buffer, PD, MR and CQ; srq_pingpong's CQ has room for every QP. */
static int pp_res_init(struct pp *p)
{
	uint32_t len = p->o.size + (p->o.ud ? PP_GRH : 0);
	uint32_t cqe = p->o.rx_depth + (p->o.srq ? p->o.num_qp : 1);

	/* as the native; the device caps max_cqe */
	if (cqe > p->ctx->attr.max_cqe)
		cqe = p->ctx->attr.max_cqe;
	return gv_tool_res_init(p->ctx, &p->res, len, p->o.srq ? 0 : 0x7b,
				VIRTIO_RDMA_ACCESS_LOCAL_WRITE, cqe);
}

/* UD: ud_pingpong's Q_Key, or the meeting's (rdma_cm's for cm_udaddy). */
static uint32_t pp_qkey(const struct pp *p)
{
	return p->meet && p->meet->ud_qkey ? p->meet->ud_qkey : PP_UD_QKEY;
}

static int pp_init(struct pp *p)
{
	struct gv_qp_init_attr qa = { 0 };
	int r = p->o.ud ? pp_check_mtu(p) : 0;

	if (!r)
		r = pp_res_init(p);
	if (r)
		return r;
	qa.send_cq = qa.recv_cq = p->res.cq;
	qa.max_send_wr = 1;
	qa.max_recv_wr = p->o.rx_depth;
	qa.max_send_sge = qa.max_recv_sge = 1;
	qa.qp_type = p->o.ud ? VIRTIO_RDMA_QPT_UD : VIRTIO_RDMA_QPT_RC;
	return gv_tool_create_qp(p->res.pd, &qa, (uint8_t)p->o.ib_port,
				 p->o.ud ? pp_qkey(p) : 0, &p->qp);
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
	if (p->ah)
		gv_destroy_ah(p->ah);
	gv_tool_res_close(&p->res);
	gv_close(p->ctx);
}

static int pp_post_recv(struct pp *p, int n)
{
	struct gv_sge sge = { (uintptr_t)p->res.buf,
			      p->o.size + (p->o.ud ? PP_GRH : 0),
			      p->res.mr->lkey };
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
	struct gv_sge sge = { (uintptr_t)p->res.buf + (p->o.ud ? PP_GRH : 0),
			      p->o.size, p->res.mr->lkey };
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
			p->res.buf[i] = 0;
	return gv_post_send(p->qp, &wr, NULL);
}

/* A receive: reposts them when `low` are left; -c checks the data. */
static int pp_recv_wc(struct pp *p, int low)
{
	if (--p->routs <= low) {
		p->routs += pp_post_recv(p, (int)p->o.rx_depth - p->routs);
		if (p->routs < (int)p->o.rx_depth) {
			fprintf(stderr, "Couldn't post receive (%d)\n",
				p->routs);
			return -EIO;
		}
	}
	for (unsigned int i = 0; p->o.check && i < p->o.size;
	     i += PP_CHK_STRIDE)
		if (p->res.buf[i] != 0)
			printf("invalid data in page %u\n", i / PP_CHK_STRIDE);
	p->rcnt++;
	return 0;
}

/* Counts a successful completion (rc/ud and srq_pingpong alike). */
static int pp_count_wc(struct pp *p, const struct gv_wc *wc, int low)
{
	if (wc->status != VIRTIO_RDMA_WC_SUCCESS) {
		fprintf(stderr, "Failed status %s (%u) for wr_id %d\n",
			gv_wc_status_str(wc->status), wc->status,
			(int)wc->wr_id);
		return -EIO;
	}
	if (wc->wr_id == PP_RECV_WRID)
		return pp_recv_wc(p, low);
	if (wc->wr_id != PP_SEND_WRID) {
		fprintf(stderr, "Completion for unknown wr_id %d\n",
			(int)wc->wr_id);
		return -EIO;
	}
	p->scnt++;
	return 0;
}

static int pp_wc(struct pp *p, const struct gv_wc *wc)
{
	if (pp_count_wc(p, wc, 1))
		return -EIO;
	p->pending &= ~(int)wc->wr_id;
	if (p->scnt < p->o.c.iters && !p->pending) {
		if (p->o.wait_ms)
			usleep(p->o.wait_ms * 1000u);
		if (pp_post_send(p)) {
			fprintf(stderr, "Couldn't post send\n");
			return -EIO;
		}
		p->pending = PP_RECV_WRID | PP_SEND_WRID;
	}
	return 0;
}

static int pp_wait_event(struct pp *p)
{
	int r = gv_get_cq_event(p->res.cq, p->ctx->timeout_ms * 4);

	if (r) {
		fprintf(stderr, "Failed to get cq_event: %s\n", strerror(-r));
		return r;
	}
	r = gv_req_notify_cq(p->res.cq, false);
	if (r)
		fprintf(stderr, "Couldn't request CQ notification\n");
	return r;
}

typedef int pp_wc_fn(struct pp *p, const struct gv_wc *wc);

/* Polls, or sleeps on CQ events, until every exchange is done. */
static int pp_loop(struct pp *p, pp_wc_fn *handle)
{
	struct gv_wc wc[PP_MAX_QP];
	int nmax = p->o.srq ? PP_MAX_QP : 2, ne;

	while (p->rcnt < p->o.c.iters || p->scnt < p->o.c.iters) {
		if (p->o.c.events && pp_wait_event(p))
			return -EIO;
		do {
			ne = gv_poll_cq(p->res.cq, nmax, wc);
			if (ne < 0) {
				fprintf(stderr, "poll CQ failed %d\n", ne);
				return ne;
			}
		} while (!p->o.c.events && ne < 1);
		for (int i = 0; i < ne; i++)
			if (handle(p, &wc[i])) {
				fprintf(stderr, "parse WC failed %d\n", ne);
				return -EIO;
			}
	}
	return 0;
}

/* ud_pingpong's local line says "PSN 0x...: GID": kept, tools parse it. */
static void print_dest(const char *what, const struct gv_tool_dest *d,
		       const char *sep)
{
	char gid[INET6_ADDRSTRLEN];

	inet_ntop(AF_INET6, d->gid, gid, sizeof(gid));
	printf("  %s LID 0x%04x, QPN 0x%06x, PSN 0x%06x%s GID %s\n", what,
	       d->lid, d->qpn, d->psn, sep, gid);
	fflush(stdout);
}

/* The two result lines of the rdma-core pingpongs. */
static void pp_report(const struct pp *p, uint64_t elapsed_us)
{
	double usec = (double)elapsed_us;
	long long bytes = (long long)p->o.size * p->o.c.iters * 2;

	printf("%lld bytes in %.2f seconds = %.2f Mbit/sec\n", bytes,
	       usec / 1e6, (double)bytes * 8. / usec);
	printf("%u iters in %.2f seconds = %.2f usec/iter\n", p->o.c.iters,
	       usec / 1e6, usec / p->o.c.iters);
}

/* The loop, timed, and the result lines. */
static int pp_timed(struct pp *p, pp_wc_fn *handle)
{
	uint64_t start = mono_us();

	if (pp_loop(p, handle))
		return -EIO;
	pp_report(p, mono_us() - start);
	return 0;
}

/* Before the exchange: receives posted, CQ armed with -e, our GID. */
static int pp_prepare(struct pp *p, uint8_t gid[16])
{
	p->routs = pp_post_recv(p, (int)p->o.rx_depth);
	if (p->routs < (int)p->o.rx_depth) {
		fprintf(stderr, "Couldn't post receive (%d)\n", p->routs);
		return -EIO;
	}
	if (p->o.c.events && gv_req_notify_cq(p->res.cq, false)) {
		fprintf(stderr, "Couldn't request CQ notification\n");
		return -EIO;
	}
	if (p->o.c.gidx >= 0 &&
	    gv_query_gid(p->ctx, (uint16_t)p->o.c.gidx, gid)) {
		fprintf(stderr, "can't read sgid of index %d\n", p->o.c.gidx);
		return -EIO;
	}
	return 0;
}

/* Both QPs connected: the client sends first, then the loop. */
static int pp_start(struct pp *p)
{
	p->pending = PP_RECV_WRID;
	if (p->o.c.server) {
		if (pp_post_send(p)) {
			fprintf(stderr, "Couldn't post send\n");
			return -EIO;
		}
		p->pending |= PP_SEND_WRID;
	}
	return pp_timed(p, pp_wc);
}

/* rc_pingpong through a gv_tool_meet instead of the TCP exchange. */
static int pp_run_met(struct pp *p, const struct gv_tool_dest *my)
{
	struct gv_tool_dest rem = { 0 };
	struct gv_tool_meet_args a = { .ctx = p->ctx,
				       .pd = p->res.pd,
				       .qp = p->qp,
				       .server = p->o.c.server,
				       .port = p->o.c.port,
				       .gidx = p->o.c.gidx,
				       .mtu = p->o.mtu,
				       .ib_port = (uint8_t)p->o.ib_port,
				       .sl = (uint8_t)p->o.sl,
				       .my = my,
				       .rem = &rem };
	int r = p->meet->meet(p->meet->arg, &a);

	if (r)
		return r;
	print_dest("remote address:", &rem, ",");
	if (p->meet->data) {
		struct gv_tool_data_args d = {
			.pd = p->res.pd,
			.qp = p->qp,
			.cq = p->res.cq,
			.buf = p->res.buf,
			.len = p->o.size,
			.lkey = p->res.mr->lkey,
			.my = my,
			.rem = &rem,
			.sgid_index = (uint8_t)p->o.c.gidx,
			.qkey = p->o.ud ? pp_qkey(p) : 0,
			.recv_wr_id = PP_RECV_WRID,
			.iters = p->o.c.iters,
			.active = p->o.c.server != NULL,
			.timeout_ms = p->ctx->timeout_ms * 4,
		};

		r = p->meet->data(&d);
	} else {
		r = pp_start(p);
	}
	if (p->meet->part) {
		int pr = p->meet->part(p->meet->arg, !r);

		if (!r)
			r = pr;
	}
	return r;
}

static int pp_run(struct pp *p)
{
	struct gv_tool_dest my = { 0 }, rem;

	if (pp_prepare(p, my.gid))
		return -EIO;
	my.qpn = p->qp->qp_num;
	my.psn = (uint32_t)lrand48() & 0xffffff;
	print_dest("local address: ", &my, p->o.ud ? ":" : ",");
	if (p->meet)
		return pp_run_met(p, &my);
	if (pp_exchange(p, &my, &rem, 1))
		return -EIO;
	print_dest("remote address:", &rem, ",");
	if (p->o.c.server && pp_connect(p, &my, &rem))
		return -EIO;
	return pp_start(p);
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
	       "  -w, --wait-ms=<ms>     pause before each send (a low "
	       "rate; 0..10000)\n"
	       "%s",
	       argv0, argv0, note);
}

/* The pingpongs' options that are no number (guest/opts.c has those). */
static int pp_opt(struct pp_opts *o, int c)
{
	switch (c) {
	case 'd':
		return 0;
	case 'c':
		o->check = true;
		return 0;
	default:
		return -EINVAL;
	}
}

static int pp_parse(struct pp_opts *o, int argc, char **argv)
{
	static const struct option fixed[] = {
		{ "ib-dev", 1, NULL, 'd' },
		{ "chk", 0, NULL, 'c' },
		{ 0 },
	};
	/* the numbers: guest/opts.c */
	struct option lo[GUEST_TOOL_LONGOPTS(fixed, GP_COUNT)];
	int c, li, r;

	if (guest_tool_longopts(lo, ARRAY_SIZE(lo), fixed, guest_pp_nums,
				GP_COUNT) < 0)
		return -EINVAL;
	optind = 1;
	while ((c = getopt_long(argc, argv, "p:d:i:s:m:r:n:l:eg:cq:w:", lo,
				&li)) != -1) {
		if ((o->ud && (c == 'm' || c == 'c')) || (o->srq && c == 'c') ||
		    (!o->srq && c == 'q'))
			return -EINVAL; /* not an option of that tool */
		r = guest_opt_num(guest_pp_nums, GP_COUNT, o, &o->c, c, lo, li,
				  optarg);
		if (!r)
			r = gv_tool_cli_opt(&o->c, c);
		if (!r)
			r = pp_opt(o, c);
		if (r < 0)
			return r;
	}
	if (o->mtu_bytes) {
		o->mtu = gv_mtu_to_enum(o->mtu_bytes);
		if (!o->mtu) {
			fprintf(stderr,
				"rdmagate-guest: --mtu: '%u' is not 256, 512, "
				"1024, 2048 or 4096\n",
				o->mtu_bytes);
			return -EINVAL;
		}
	}
	if (gv_tool_cli_host(&o->c, argc, argv) || !o->size || !o->rx_depth ||
	    o->rx_depth >= VIRTIO_RDMA_RING_SIZE || o->sl < 0 || o->sl > 15)
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
	struct gv_qp_init_attr qa = { 0 };
	int r = pp_res_init(p);

	if (!r)
		r = gv_create_srq(p->res.pd, p->o.rx_depth, 1, &p->srq);
	qa.send_cq = qa.recv_cq = p->res.cq;
	qa.srq = p->srq;
	qa.max_send_wr = qa.max_send_sge = 1;
	qa.qp_type = VIRTIO_RDMA_QPT_RC;
	for (unsigned int i = 0; !r && i < p->o.num_qp; i++)
		r = gv_tool_create_qp(p->res.pd, &qa, (uint8_t)p->o.ib_port, 0,
				      &p->qps[i]);
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

	if (q < 0 && wc->status == VIRTIO_RDMA_WC_SUCCESS) {
		fprintf(stderr, "Couldn't find QPN %06x\n", wc->qp_num);
		return -EIO;
	}
	if (pp_count_wc(p, wc, (int)p->o.num_qp))
		return -EIO;
	p->qpending[q] &= ~(int)wc->wr_id;
	if (p->scnt < p->o.c.iters && !p->qpending[q])
		return srq_post_send(p, (unsigned int)q);
	return 0;
}

static int srq_run(struct pp *p)
{
	struct gv_tool_dest my[PP_WIRE_QP] = { 0 }, rem[PP_WIRE_QP];
	uint8_t gid[16] = { 0 };

	if (pp_prepare(p, gid))
		return -EIO;
	for (unsigned int i = 0; i < p->o.num_qp; i++) {
		my[i].qpn = p->qps[i]->qp_num;
		my[i].psn = (uint32_t)lrand48() & 0xffffff;
		memcpy(my[i].gid, gid, 16);
		print_dest("local address: ", &my[i], ",");
	}
	if (pp_exchange(p, my, rem, PP_WIRE_QP))
		return -EIO;
	for (unsigned int i = 0; i < p->o.num_qp; i++)
		print_dest("remote address:", &rem[i], ",");
	if (p->o.c.server && pp_connect_all(p, my, rem))
		return -EIO;
	for (unsigned int i = 0; i < p->o.num_qp; i++) {
		p->qpending[i] = PP_RECV_WRID;
		if (p->o.c.server && srq_post_send(p, i))
			return -EIO;
	}
	return pp_timed(p, srq_wc);
}

enum pp_kind { PP_RC, PP_UD, PP_SRQ };

static const char *const pp_notes[] = {
	[PP_RC] = "",
	[PP_UD] = "(ud_pingpong: default size 2048, no -m and no -c)\n",
	[PP_SRQ] = "(srq_pingpong: -q, --num-qp=<num>: 16, at most 64)\n",
};

static int pp_main(const struct gv_tool_opts *go, int argc, char **argv,
		   enum pp_kind kind, const struct gv_tool_meet *meet)
{
	bool ud = kind == PP_UD;
	struct pp p = {
		.o = { .c = { .port = 18515, .iters = 1000, .gidx = -1 },
		       .size = ud ? 2048 : 4096,
		       .rx_depth = 500,
		       .mtu = VIRTIO_RDMA_MTU_1024,
		       .ib_port = 1,
		       .ud = ud,
		       .srq = kind == PP_SRQ,
		       .num_qp = 16 },
		.meet = meet,
	};
	int r;

	if (pp_parse(&p.o, argc, argv)) {
		pp_usage(argv[0], meet ? meet->note : pp_notes[kind]);
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
	return pp_main(go, argc, argv, PP_RC, NULL);
}

int gv_tool_rc_pingpong_meet(const struct gv_tool_opts *go, int argc,
			     char **argv, const struct gv_tool_meet *meet)
{
	return pp_main(go, argc, argv, PP_RC, meet);
}

int gv_tool_ud_pingpong(const struct gv_tool_opts *go, int argc, char **argv)
{
	return pp_main(go, argc, argv, PP_UD, NULL);
}

int gv_tool_ud_pingpong_meet(const struct gv_tool_opts *go, int argc,
			     char **argv, const struct gv_tool_meet *meet)
{
	return pp_main(go, argc, argv, PP_UD, meet);
}

int gv_tool_srq_pingpong(const struct gv_tool_opts *go, int argc, char **argv)
{
	return pp_main(go, argc, argv, PP_SRQ, NULL);
}
