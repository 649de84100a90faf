// SPDX-License-Identifier: MIT
/*
 * Test-only program for the test VM (Soft-RoCE): opens an RDMA device and
 * caches what needs sysfs the way the worker must (port, GID and P_Key
 * tables), installs the worker's seccomp filter, then performs every
 * verbs operation the worker performs, checking data and completions:
 * PD, MRs on a memfd (mapped, and MAP_FIXED-remapped and registered at
 * an IOVA as the worker does, after the filter),
 * CQs with a completion channel watched by epoll, SRQ, RC and UD QPs
 * through RESET->RTS, AH, SEND/SEND_IMM/RDMA WRITE/RDMA READ/atomics,
 * queries, and the teardown of all of it.
 *
 * Usage: sandbox_verbs_probe [--debug] [DEVICE]   (default rxe0)
 * Exit: 0 all passed, 1 a check failed, 77 no RDMA device; killed by
 * SIGSYS if the filter is missing a syscall (--debug lists them instead).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/log.h"
#include "worker/sandbox/sandbox.h"

#define PORT	1
#define BUF	65536
#define QKEY	0x11111111
#define IOVA	0x40000000ULL /* a guest physical address */
#define POLL_NS (10LL * 1000 * 1000 * 1000)

/* What the worker caches before its sandbox (sysfs reads). */
struct cache {
	struct ibv_port_attr port;
	int gid_index;
	union ibv_gid gid;
	uint16_t pkey0;
};

struct vp {
	struct ibv_context *ctx;
	struct cache c;
	int ep, memfd;
	struct ibv_comp_channel *ch;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_qp *a, *b, *ud;
	struct ibv_ah *ah;
	struct ibv_mr *mr, *mr2;
	uint8_t *buf, *win;
};

static int failures;

/* Inside the sandbox: a FAIL line through the log (stdout may be gone),
 * counted, and the probe step returns -1. */
#define PROBE_CHECK(cond, ...)                                                 \
	do {                                                                   \
		if (!(cond)) {                                                 \
			log_warnx("FAIL: " __VA_ARGS__);                       \
			failures++;                                            \
			return -1;                                             \
		}                                                              \
	} while (0)

/* ---- before the sandbox: open and cache ------------------------------ */

static int pick_gid(struct vp *v)
{
	static const uint8_t v4[12] = { [10] = 0xff, [11] = 0xff };
	int i;

	for (i = 0; i < v->c.port.gid_tbl_len; i++) {
		struct ibv_gid_entry e;

		if (ibv_query_gid_ex(v->ctx, PORT, i, &e, 0))
			continue;
		if (e.gid_type == IBV_GID_TYPE_ROCE_V2 &&
		    !memcmp(e.gid.raw, v4, sizeof(v4))) {
			v->c.gid_index = i;
			v->c.gid = e.gid;
			return 0;
		}
	}
	return -ENOENT;
}

static int open_dev(struct vp *v, const char *name)
{
	struct ibv_device **l;
	int n, i;

	l = ibv_get_device_list(&n);
	for (i = 0; l && i < n && !v->ctx; i++)
		if (!strcmp(ibv_get_device_name(l[i]), name))
			v->ctx = ibv_open_device(l[i]);
	if (l)
		ibv_free_device_list(l);
	if (!v->ctx)
		return -ENODEV;
	PROBE_CHECK(!ibv_query_port(v->ctx, PORT, &v->c.port), "query_port");
	PROBE_CHECK(!pick_gid(v), "no RoCE v2 IPv4-mapped GID on %s", name);
	/* ibv_query_pkey reads sysfs: cache it now */
	PROBE_CHECK(!ibv_query_pkey(v->ctx, PORT, 0, &v->c.pkey0),
		    "query_pkey");
	v->ep = epoll_create1(EPOLL_CLOEXEC);
	v->memfd = memfd_create("guest-ram", MFD_CLOEXEC);
	PROBE_CHECK(v->ep >= 0 && v->memfd >= 0 &&
			    ftruncate(v->memfd, 4 * BUF) == 0,
		    "epoll/memfd");
	return 0;
}

/* ---- under the filter ------------------------------------------------ */

/* Guest RAM: map the memfd, then remap its page run 2 into a window. */
static int map_guest(struct vp *v)
{
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

	v->buf = mmap(NULL, 2 * BUF, PROT_READ | PROT_WRITE, MAP_SHARED,
		      v->memfd, 0);
	PROBE_CHECK(v->buf != MAP_FAILED, "mmap of the memfd");
	v->win = mmap(NULL, BUF, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	PROBE_CHECK(v->win != MAP_FAILED, "reserving the MR window");
	PROBE_CHECK(mmap(v->win, BUF, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, v->memfd, 2 * BUF) == v->win,
		    "MAP_FIXED remap into the window");
	v->pd = ibv_alloc_pd(v->ctx);
	PROBE_CHECK(v->pd, "alloc_pd");
	v->mr = ibv_reg_mr(v->pd, v->buf, 2 * BUF, acc);
	/* the worker registers guest MRs at the guest's address (iova) */
	v->mr2 = ibv_reg_mr_iova(v->pd, v->win, BUF, IOVA, acc);
	PROBE_CHECK(v->mr && v->mr2, "reg_mr, reg_mr_iova");
	return 0;
}

static int make_queues(struct vp *v)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16,
						  .max_sge = 1 } };
	struct ibv_srq_attr sq;
	struct epoll_event ev = { .events = EPOLLIN };

	v->ch = ibv_create_comp_channel(v->ctx);
	PROBE_CHECK(v->ch, "create_comp_channel");
	PROBE_CHECK(epoll_ctl(v->ep, EPOLL_CTL_ADD, v->ch->fd, &ev) == 0,
		    "epoll_ctl on the channel");
	v->cq = ibv_create_cq(v->ctx, 64, NULL, v->ch, 0);
	PROBE_CHECK(v->cq, "create_cq");
	v->srq = ibv_create_srq(v->pd, &sa);
	PROBE_CHECK(v->srq, "create_srq");
	sq.srq_limit = 2;
	PROBE_CHECK(!ibv_modify_srq(v->srq, &sq, IBV_SRQ_LIMIT), "modify_srq");
	PROBE_CHECK(!ibv_query_srq(v->srq, &sq) && sq.srq_limit == 2,
		    "query_srq");
	return 0;
}

static struct ibv_qp *make_qp(struct vp *v, enum ibv_qp_type t, bool srq)
{
	struct ibv_qp_init_attr qa = {
		.send_cq = v->cq,
		.recv_cq = v->cq,
		.qp_type = t,
		.srq = srq ? v->srq : NULL,
		.cap = { .max_send_wr = 16,
			 .max_recv_wr = 16,
			 .max_send_sge = 1,
			 .max_recv_sge = 1,
			 .max_inline_data = 64 },
	};

	return ibv_create_qp(v->pd, &qa);
}

static int qp_init(struct vp *v, struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = PORT };
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	if (qp->qp_type == IBV_QPT_UD) {
		a.qkey = QKEY;
		mask |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_READ |
				    IBV_ACCESS_REMOTE_ATOMIC;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	return ibv_modify_qp(qp, &a, mask);
}

static int rc_connect(struct vp *v, struct ibv_qp *qp, uint32_t peer)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = IBV_MTU_1024,
		.dest_qp_num = peer,
		.rq_psn = peer & 0xffffff,
		.max_dest_rd_atomic = 1,
		.min_rnr_timer = 12,
		.ah_attr = { .is_global = 1,
			     .port_num = PORT,
			     .grh = { .dgid = v->c.gid,
				      .hop_limit = 64,
				      .sgid_index = (uint8_t)v->c.gid_index } },
	};

	if (qp_init(v, qp) ||
	    ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				  IBV_QP_MAX_DEST_RD_ATOMIC |
				  IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = qp->qp_num & 0xffffff;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a,
			     IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				     IBV_QP_MAX_QP_RD_ATOMIC);
}

static int ud_ready(struct vp *v)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR };
	struct ibv_ah_attr ah = {
		.is_global = 1,
		.port_num = PORT,
		.grh = { .dgid = v->c.gid,
			 .hop_limit = 64,
			 .sgid_index = (uint8_t)v->c.gid_index },
	};

	PROBE_CHECK(!qp_init(v, v->ud), "UD QP to INIT");
	PROBE_CHECK(!ibv_modify_qp(v->ud, &a, IBV_QP_STATE), "UD QP to RTR");
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	PROBE_CHECK(!ibv_modify_qp(v->ud, &a, IBV_QP_STATE | IBV_QP_SQ_PSN),
		    "UD QP to RTS");
	v->ah = ibv_create_ah(v->pd, &ah);
	PROBE_CHECK(v->ah, "create_ah");
	return 0;
}

static int make_qps(struct vp *v)
{
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;

	v->a = make_qp(v, IBV_QPT_RC, false);
	v->b = make_qp(v, IBV_QPT_RC, true);
	v->ud = make_qp(v, IBV_QPT_UD, false);
	PROBE_CHECK(v->a && v->b && v->ud, "create_qp (RC, RC on SRQ, UD)");
	PROBE_CHECK(!rc_connect(v, v->a, v->b->qp_num) &&
			    !rc_connect(v, v->b, v->a->qp_num),
		    "RC QPs to RTS");
	PROBE_CHECK(!ibv_query_qp(v->a, &qa, IBV_QP_STATE, &qi) &&
			    qa.qp_state == IBV_QPS_RTS,
		    "query_qp");
	return ud_ready(v);
}

/* Waits for one completion: the channel through epoll when notify. */
static int wait_wc(struct vp *v, struct ibv_wc *wc, bool notify)
{
	uint64_t end = mono_ns() + POLL_NS;
	struct epoll_event ev;
	struct ibv_cq *cq;
	void *cctx;
	int n;

	if (notify) {
		PROBE_CHECK(epoll_wait(v->ep, &ev, 1, 10000) == 1,
			    "epoll_wait");
		PROBE_CHECK(!ibv_get_cq_event(v->ch, &cq, &cctx) && cq == v->cq,
			    "get_cq_event");
		ibv_ack_cq_events(cq, 1);
		PROBE_CHECK(!ibv_req_notify_cq(v->cq, 0), "req_notify_cq");
	}
	while ((n = ibv_poll_cq(v->cq, 1, wc)) == 0 && mono_ns() < end)
		;
	PROBE_CHECK(n == 1, "poll_cq: %d", n);
	PROBE_CHECK(wc->status == IBV_WC_SUCCESS, "completion %llu: %s",
		    (unsigned long long)wc->wr_id,
		    ibv_wc_status_str(wc->status));
	return 0;
}

static int post(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;

	wr->send_flags |= IBV_SEND_SIGNALED;
	return ibv_post_send(qp, wr, &bad);
}

static int recv_on(struct vp *v, uint8_t *at, uint32_t len, uint32_t lkey,
		   bool srq, struct ibv_qp *qp)
{
	struct ibv_sge s = { (uintptr_t)at, len, lkey };
	struct ibv_recv_wr w = { .wr_id = 100, .sg_list = &s, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	return srq ? ibv_post_srq_recv(v->srq, &w, &bad)
		   : ibv_post_recv(qp, &w, &bad);
}

/* SEND with immediate a->b (SRQ), completion through the channel. */
static int t_send(struct vp *v)
{
	struct ibv_sge s = { (uintptr_t)v->buf, 4096, v->mr->lkey };
	struct ibv_send_wr w = { .wr_id = 1,
				 .sg_list = &s,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND_WITH_IMM,
				 .imm_data = htobe32(0x1234) };
	struct ibv_wc wc[2];

	memset(v->buf, 0x5a, 4096);
	memset(v->win, 0, 4096);
	PROBE_CHECK(!recv_on(v, (uint8_t *)(uintptr_t)IOVA, 4096, v->mr2->lkey,
			     true, NULL),
		    "post_srq_recv");
	PROBE_CHECK(!ibv_req_notify_cq(v->cq, 0), "req_notify_cq");
	PROBE_CHECK(!post(v->a, &w), "post_send SEND_WITH_IMM");
	if (wait_wc(v, &wc[0], true) || wait_wc(v, &wc[1], false))
		return -1;
	PROBE_CHECK(v->win[0] == 0x5a && v->win[4095] == 0x5a,
		    "SEND data did not land in the remapped window");
	return 0;
}

static int t_rdma(struct vp *v)
{
	struct ibv_sge s = { (uintptr_t)(v->buf + 8192), 4096, v->mr->lkey };
	struct ibv_send_wr w = { .wr_id = 2,
				 .sg_list = &s,
				 .num_sge = 1,
				 .opcode = IBV_WR_RDMA_WRITE,
				 .wr.rdma = { IOVA + 8192, v->mr2->rkey } };
	struct ibv_wc wc;

	memset(v->buf + 8192, 0xc3, 4096);
	PROBE_CHECK(!post(v->a, &w), "post_send RDMA_WRITE");
	if (wait_wc(v, &wc, false))
		return -1;
	PROBE_CHECK(v->win[8192] == 0xc3 && v->win[8192 + 4095] == 0xc3,
		    "RDMA WRITE data");
	memset(v->buf + 8192, 0, 4096);
	w.wr_id = 3;
	w.opcode = IBV_WR_RDMA_READ;
	PROBE_CHECK(!post(v->a, &w), "post_send RDMA_READ");
	if (wait_wc(v, &wc, false))
		return -1;
	PROBE_CHECK(v->buf[8192] == 0xc3 && v->buf[8192 + 4095] == 0xc3,
		    "RDMA READ data");
	return 0;
}

static int t_atomic(struct vp *v)
{
	uint64_t *target = (uint64_t *)(v->win + 16384);
	struct ibv_sge s = { (uintptr_t)(v->buf + 16384), 8, v->mr->lkey };
	struct ibv_send_wr w = { .wr_id = 4,
				 .sg_list = &s,
				 .num_sge = 1,
				 .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
				 .wr.atomic = { IOVA + 16384, 5, 0,
						v->mr2->rkey } };
	struct ibv_wc wc;

	*target = 37;
	PROBE_CHECK(!post(v->a, &w), "post_send FETCH_AND_ADD");
	if (wait_wc(v, &wc, false))
		return -1;
	PROBE_CHECK(*target == 42 && *(uint64_t *)(v->buf + 16384) == 37,
		    "FETCH_AND_ADD result");
	return 0;
}

/* UD SEND to itself through the AH, inline, GRH in the receive buffer. */
static int t_ud(struct vp *v)
{
	static const char msg[] = "ud through the sandbox";
	struct ibv_sge s = { (uintptr_t)msg, sizeof(msg), 0 };
	struct ibv_send_wr w = { .wr_id = 5,
				 .sg_list = &s,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_INLINE,
				 .wr.ud = { v->ah, v->ud->qp_num, QKEY } };
	struct ibv_wc wc[2];

	memset(v->buf + 32768, 0, 4096);
	PROBE_CHECK(
		!recv_on(v, v->buf + 32768, 4096, v->mr->lkey, false, v->ud),
		"post_recv on UD");
	PROBE_CHECK(!post(v->ud, &w), "post_send UD");
	if (wait_wc(v, &wc[0], false) || wait_wc(v, &wc[1], false))
		return -1;
	PROBE_CHECK(!memcmp(v->buf + 32768 + 40, msg, sizeof(msg)),
		    "UD payload");
	return 0;
}

static int t_queries(struct vp *v)
{
	struct ibv_device_attr da;
	struct ibv_gid_entry ge[64];
	struct ibv_port_attr pa;
	union ibv_gid g;

	PROBE_CHECK(!ibv_query_device(v->ctx, &da) && da.max_qp > 0,
		    "query_device");
	PROBE_CHECK(!ibv_query_port(v->ctx, PORT, &pa) &&
			    pa.state == IBV_PORT_ACTIVE,
		    "query_port");
	PROBE_CHECK(ibv_query_gid_table(v->ctx, ge, 64, 0) > 0,
		    "query_gid_table");
	PROBE_CHECK(!ibv_query_gid(v->ctx, PORT, v->c.gid_index, &g) &&
			    !memcmp(&g, &v->c.gid, sizeof(g)),
		    "query_gid");
	return 0;
}

static int teardown(struct vp *v)
{
	PROBE_CHECK(!ibv_destroy_ah(v->ah), "destroy_ah");
	PROBE_CHECK(!ibv_destroy_qp(v->ud) && !ibv_destroy_qp(v->b) &&
			    !ibv_destroy_qp(v->a),
		    "destroy_qp");
	PROBE_CHECK(!ibv_destroy_srq(v->srq), "destroy_srq");
	PROBE_CHECK(!ibv_destroy_cq(v->cq), "destroy_cq");
	PROBE_CHECK(epoll_ctl(v->ep, EPOLL_CTL_DEL, v->ch->fd, NULL) == 0,
		    "epoll_ctl DEL");
	PROBE_CHECK(!ibv_destroy_comp_channel(v->ch), "destroy_comp_channel");
	PROBE_CHECK(!ibv_dereg_mr(v->mr2) && !ibv_dereg_mr(v->mr), "dereg_mr");
	PROBE_CHECK(!ibv_dealloc_pd(v->pd), "dealloc_pd");
	PROBE_CHECK(!munmap(v->win, BUF) && !munmap(v->buf, 2 * BUF), "munmap");
	PROBE_CHECK(!ibv_close_device(v->ctx), "close_device");
	return 0;
}

int main(int argc, char **argv)
{
	static int (*const steps[])(struct vp *) = {
		map_guest, make_queues, make_qps,  t_send,   t_rdma,
		t_atomic,  t_ud,	t_queries, teardown,
	};
	struct sandbox_worker_params sp;
	const char *dev = "rxe0";
	struct vp v = { 0 };
	bool debug = false;
	unsigned int i;
	int r;

	log_init("sandbox-verbs-probe", LOG_LVL_INFO);
	for (i = 1; i < (unsigned int)argc; i++) {
		if (!strcmp(argv[i], "--debug"))
			debug = true;
		else
			dev = argv[i];
	}
	r = open_dev(&v, dev);
	if (r == -ENODEV) {
		printf("sandbox-verbs-probe: no RDMA device %s: skipped\n",
		       dev);
		return 77;
	}
	if (r < 0)
		return 1;
	sandbox_worker_params_init(&sp);
	sp.cmd_fd = v.ctx->cmd_fd;
	sp.epoll_fd = v.ep;
	sp.debug = debug;
	if (sandbox_install_worker_filter(&sp) < 0)
		return 1;
	for (i = 0; i < ARRAY_SIZE(steps); i++)
		if (steps[i](&v) < 0)
			break;
	log_info("%s: %s under the worker's filter (%u of %zu steps)", dev,
		 failures ? "FAILED" : "every verbs operation passed", i,
		 ARRAY_SIZE(steps));
	return failures ? 1 : 0;
}
