// SPDX-License-Identifier: MIT
/*
 * Two simulated guests, each on its own worker (rxe0 and rxe1), in one
 * process: RC SEND/RECV (with immediate), RDMA WRITE, RDMA READ, both
 * atomics, a DMA MR, QUERY_QP, a CQ event, UD send/recv and an SRQ
 * shared by two QPs, every byte and every completion field checked.
 * Buffers of the second guest are scattered in guest-physical memory so
 * that the worker must follow the MR page tables.
 *
 * Usage: guest-pair [-t TRANSPORT_A,TRANSPORT_B] SOCKET_A HOST_GID_A
 *                   SOCKET_B HOST_GID_B
 * (each host GID is added as the guest's GID index 1, RoCE v2; the
 * transports are virtio-rdma (default) or pvrdma, per guest, so that a
 * PVRDMA guest can talk to a virtio-rdma one).
 */
#include <arpa/inet.h>
#include <linux/pci_regs.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#include "common/clock.h"
#include "guest/vfio_user_client.h"
#include "guest/verbs.h"

#define GIDX	  1
#define BUF_SIZE  (256 * 1024)
#define UD_QKEY	  0x11111111u
#define UD_TRIES  5   /* UD sends before the receive must have arrived */
#define UD_WAIT_S 2.0 /* per send */
#define GRH_BYTES 40
#define TIMEOUT_S 10

#define ACCESS_ALL                                                             \
	(VIRTIO_RDMA_ACCESS_LOCAL_WRITE | VIRTIO_RDMA_ACCESS_REMOTE_WRITE |    \
	 VIRTIO_RDMA_ACCESS_REMOTE_READ | VIRTIO_RDMA_ACCESS_REMOTE_ATOMIC)

struct guest {
	const char *name;
	enum gv_transport transport;
	struct gv_context *ctx;
	struct gv_pd *pd;
	struct gv_cq *scq, *rcq;
	uint8_t *buf;
	struct gv_mr *mr;
	uint8_t gid[16];
};

static int failures;

static void check(bool ok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("%s: ", ok ? "ok  " : "FAIL");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	if (!ok)
		failures++;
}

static void die(const char *what, int r)
{
	printf("FAIL: %s: %s\n", what, strerror(-r));
	exit(1);
}

static void fill(uint8_t *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

static bool filled(const uint8_t *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (uint8_t)(seed * 131 + i * 7 + (i >> 8)))
			return false;
	return true;
}

static bool all(const uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return false;
	return true;
}

/* One completion from cq, within TIMEOUT_S. */
static int poll_one_within(struct gv_cq *cq, struct gv_wc *wc, double secs)
{
	uint64_t end = mono_ns() + (uint64_t)(secs * 1e9);
	int n;

	while ((n = gv_poll_cq(cq, 1, wc)) == 0 && mono_ns() < end)
		;
	return n == 1 ? 0 : n < 0 ? n : -ETIMEDOUT;
}

static int poll_one(struct gv_cq *cq, struct gv_wc *wc)
{
	return poll_one_within(cq, wc, TIMEOUT_S);
}

static void expect_wc(struct gv_cq *cq, const char *what, uint64_t wr_id,
		      uint32_t opcode, uint32_t byte_len, uint32_t qpn)
{
	struct gv_wc wc;
	int r = poll_one(cq, &wc);

	if (r) {
		check(false, "%s: completion: %s", what, strerror(-r));
		return;
	}
	check(wc.status == VIRTIO_RDMA_WC_SUCCESS && wc.wr_id == wr_id &&
		      wc.opcode == opcode && wc.qp_num == qpn &&
		      (byte_len == UINT32_MAX || wc.byte_len == byte_len),
	      "%s: completion status %u (%s) wr_id %#llx opcode %u "
	      "byte_len %u qp_num %#x (want %#llx %u %d %#x)",
	      what, wc.status, gv_wc_status_str(wc.status),
	      (unsigned long long)wc.wr_id, wc.opcode, wc.byte_len, wc.qp_num,
	      (unsigned long long)wr_id, opcode, (int)byte_len, qpn);
}

/* Posts one send work request on qp and expects its CQE on scq. */
static void post_send_wc(struct gv_qp *qp, struct gv_cq *scq,
			 struct gv_send_wr *wr, const char *what,
			 uint32_t opcode, uint32_t byte_len)
{
	int r = gv_post_send(qp, wr, NULL);

	check(!r, "%s posted (%s)", what, strerror(-r));
	expect_wc(scq, what, wr->wr_id, opcode, byte_len, qp->qp_num);
}

static void open_guest(struct guest *g, const char *sock, const char *gid,
		       bool scatter)
{
	struct gv_opts o = { .transport = g->transport,
			     .timeout_ms = 5000,
			     .data_size = 64 << 20 };
	struct virtio_rdma_port_attr pa;
	int r;

	if (inet_pton(AF_INET6, gid, g->gid) != 1) {
		printf("FAIL: bad GID %s\n", gid);
		exit(1);
	}
	r = gv_open(sock, &o, &g->ctx);
	if (r)
		die("gv_open", r);
	if (g->transport == GV_TRANSPORT_VIRTIO_RDMA)
		check(g->ctx->cfg.rg_magic == RDMAGATE_VIRTIO_RDMA_MAGIC,
		      "%s: config magic rdgt, ABI %u, %u slots, max_cq %u",
		      g->name, g->ctx->cfg.rg_abi_version,
		      g->ctx->cfg.rg_num_slots, g->ctx->cfg.max_cq);
	else
		check(g->ctx->attr.max_qp && g->ctx->attr.max_cq,
		      "%s: %s device, max_qp %u, max_cq %u", g->name,
		      gv_transport_name(g->ctx), g->ctx->attr.max_qp,
		      g->ctx->attr.max_cq);
	r = gv_query_port(g->ctx, &pa);
	check(!r && pa.state == VIRTIO_RDMA_PORT_ACTIVE,
	      "%s: QUERY_PORT: state %u, active_mtu %u", g->name, pa.state,
	      pa.active_mtu);
	r = gv_add_gid(g->ctx, GIDX, g->gid, VIRTIO_RDMA_GID_TYPE_ROCE_V2);
	check(!r, "%s: ADD_GID %u = %s (%s)", g->name, GIDX, gid, strerror(-r));
	if ((r = gv_alloc_pd(g->ctx, &g->pd)) ||
	    (r = gv_create_cq(g->ctx, 64, &g->scq)) ||
	    (r = gv_create_cq(g->ctx, 64, &g->rcq)))
		die("PD/CQ", r);
	g->buf = gv_alloc_buf(g->ctx, BUF_SIZE,
			      scatter ? GV_BUF_SCATTER : GV_BUF_CONTIGUOUS);
	if (!g->buf)
		die("gv_alloc_buf", -errno);
	memset(g->buf, 0, BUF_SIZE);
	r = gv_reg_mr(g->pd, g->buf, BUF_SIZE, ACCESS_ALL, &g->mr);
	check(!r, "%s: REG_USER_MR of %u KiB%s: lkey %#x rkey %#x (%s)",
	      g->name, BUF_SIZE / 1024, scatter ? " (scattered pages)" : "",
	      r ? 0 : g->mr->lkey, r ? 0 : g->mr->rkey, strerror(-r));
	if (r)
		exit(1);
}

static struct gv_qp *make_qp(struct guest *g, uint8_t type, struct gv_srq *srq)
{
	struct gv_qp_init_attr a = { .send_cq = g->scq,
				     .recv_cq = g->rcq,
				     .srq = srq,
				     .max_send_wr = 32,
				     .max_recv_wr = 32,
				     .max_send_sge = 4,
				     .max_recv_sge = 4,
				     .qp_type = type,
				     .sq_sig_all = true };
	struct gv_qp *qp;
	int r = gv_create_qp(g->pd, &a, &qp);

	if (r)
		die("CREATE_QP", r);
	return qp;
}

static int to_init(struct gv_qp *qp)
{
	struct virtio_rdma_qp_attr a = { .qp_state = VIRTIO_RDMA_QPS_INIT,
					 .port_num = 1 };
	uint32_t mask = VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_PKEY_INDEX |
			VIRTIO_RDMA_QP_PORT;

	if (qp->qp_type == VIRTIO_RDMA_QPT_UD) {
		a.qkey = UD_QKEY;
		mask |= VIRTIO_RDMA_QP_QKEY;
	} else {
		a.qp_access_flags = VIRTIO_RDMA_ACCESS_REMOTE_WRITE |
				    VIRTIO_RDMA_ACCESS_REMOTE_READ |
				    VIRTIO_RDMA_ACCESS_REMOTE_ATOMIC;
		mask |= VIRTIO_RDMA_QP_ACCESS_FLAGS;
	}
	return gv_modify_qp(qp, &a, mask);
}

/* INIT, RTR towards (rqpn, rgid), RTS. */
static void connect_qp(struct gv_qp *qp, uint32_t rqpn, const uint8_t *rgid)
{
	struct virtio_rdma_qp_attr a = { 0 };
	uint32_t mask = VIRTIO_RDMA_QP_STATE;
	int r = to_init(qp);

	if (r)
		die("MODIFY_QP to INIT", r);
	a.qp_state = VIRTIO_RDMA_QPS_RTR;
	if (qp->qp_type == VIRTIO_RDMA_QPT_RC) {
		a.path_mtu = VIRTIO_RDMA_MTU_1024;
		a.dest_qp_num = rqpn;
		a.rq_psn = 0x1234;
		a.max_dest_rd_atomic = 4;
		a.min_rnr_timer = 12;
		a.ah_attr.ah_flags = VIRTIO_RDMA_AH_GRH;
		a.ah_attr.port_num = 1;
		a.ah_attr.grh.hop_limit = 1;
		a.ah_attr.grh.sgid_index = GIDX;
		memcpy(a.ah_attr.grh.dgid, rgid, 16);
		mask |= VIRTIO_RDMA_QP_AV | VIRTIO_RDMA_QP_PATH_MTU |
			VIRTIO_RDMA_QP_DEST_QPN | VIRTIO_RDMA_QP_RQ_PSN |
			VIRTIO_RDMA_QP_MAX_DEST_RD_ATOMIC |
			VIRTIO_RDMA_QP_MIN_RNR_TIMER;
	}
	r = gv_modify_qp(qp, &a, mask);
	if (r)
		die("MODIFY_QP to RTR", r);
	a.qp_state = VIRTIO_RDMA_QPS_RTS;
	a.sq_psn = 0x1234;
	mask = VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_SQ_PSN;
	if (qp->qp_type == VIRTIO_RDMA_QPT_RC) {
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 4;
		mask |= VIRTIO_RDMA_QP_TIMEOUT | VIRTIO_RDMA_QP_RETRY_CNT |
			VIRTIO_RDMA_QP_RNR_RETRY |
			VIRTIO_RDMA_QP_MAX_QP_RD_ATOMIC;
	}
	r = gv_modify_qp(qp, &a, mask);
	if (r)
		die("MODIFY_QP to RTS", r);
}

static int post_recv1(struct gv_qp *qp, struct gv_srq *srq, uint64_t wr_id,
		      struct guest *g, size_t off, uint32_t len)
{
	struct gv_sge sge = { (uintptr_t)g->buf + off, len, g->mr->lkey };
	struct gv_recv_wr wr = { .wr_id = wr_id,
				 .sg_list = &sge,
				 .num_sge = 1 };

	return srq ? gv_post_srq_recv(srq, &wr, NULL)
		   : gv_post_recv(qp, &wr, NULL);
}

static void test_send(struct guest *a, struct gv_qp *qa, struct guest *b,
		      struct gv_qp *qb)
{
	/* 12633 bytes from two SGEs of A into one buffer of B, then imm */
	struct gv_sge sg[2] = { { (uintptr_t)a->buf + 100, 5000, a->mr->lkey },
				{ (uintptr_t)a->buf + 70000, 7633,
				  a->mr->lkey } };
	struct gv_send_wr wr = { .wr_id = 0x5e01,
				 .sg_list = sg,
				 .num_sge = 2,
				 .opcode = VIRTIO_RDMA_WR_SEND };
	struct gv_wc wc;
	int r;

	fill(a->buf + 100, 5000, 1);
	fill(a->buf + 70000, 7633, 2);
	memset(b->buf, 0xee, 20000);
	r = post_recv1(qb, NULL, 0x4ec1, b, 3000, 12633);
	check(!r, "SEND: B's receive posted (%s)", strerror(-r));
	post_send_wc(qa, a->scq, &wr, "SEND 12633 B (2 SGEs) A->B",
		     VIRTIO_RDMA_WC_SEND, UINT32_MAX);
	expect_wc(b->rcq, "SEND: receiver", 0x4ec1, VIRTIO_RDMA_WC_RECV, 12633,
		  qb->qp_num);
	check(filled(b->buf + 3000, 5000, 1) && filled(b->buf + 8000, 7633, 2),
	      "SEND: the 12633 bytes arrived intact in B");
	check(all(b->buf + 2000, 1000, 0xee) &&
		      all(b->buf + 15633, 20000 - 15633, 0xee),
	      "SEND: the bytes around B's buffer are untouched");

	/* SEND_WITH_IMM B->A */
	fill(b->buf + 40000, 64, 3);
	sg[0] = (struct gv_sge){ (uintptr_t)b->buf + 40000, 64, b->mr->lkey };
	wr = (struct gv_send_wr){ .wr_id = 0x5e02,
				  .sg_list = sg,
				  .num_sge = 1,
				  .opcode = VIRTIO_RDMA_WR_SEND_WITH_IMM,
				  .imm_data = htonl(0xc0ffee) };
	r = post_recv1(qa, NULL, 0x4ec2, a, 120000, 64);
	check(!r, "SEND_WITH_IMM: A's receive posted (%s)", strerror(-r));
	post_send_wc(qb, b->scq, &wr, "SEND_WITH_IMM 64 B B->A",
		     VIRTIO_RDMA_WC_SEND, UINT32_MAX);
	r = poll_one(a->rcq, &wc);
	check(!r && wc.status == 0 && wc.byte_len == 64 &&
		      (wc.wc_flags & VIRTIO_RDMA_WC_WITH_IMM) &&
		      wc.imm_data == htonl(0xc0ffee) &&
		      filled(a->buf + 120000, 64, 3),
	      "SEND_WITH_IMM: A got 64 bytes, WITH_IMM, imm 0x%x",
	      r ? 0 : ntohl(wc.imm_data));
}

static void test_write_read(struct guest *a, struct gv_qp *qa, struct guest *b)
{
	struct gv_sge sge = { (uintptr_t)a->buf + 10, 11633, a->mr->lkey };
	struct gv_send_wr wr = { .wr_id = 0x3701,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = VIRTIO_RDMA_WR_RDMA_WRITE };

	fill(a->buf + 10, 11633, 4);
	memset(b->buf + 50000, 0xdd, 14000);
	wr.wr.rdma.remote_addr = (uintptr_t)b->buf + 51000;
	wr.wr.rdma.rkey = b->mr->rkey;
	post_send_wc(qa, a->scq, &wr, "RDMA WRITE 11633 B A->B at +51000",
		     VIRTIO_RDMA_WC_RDMA_WRITE, UINT32_MAX);
	check(filled(b->buf + 51000, 11633, 4) &&
		      all(b->buf + 50000, 1000, 0xdd) &&
		      all(b->buf + 62633, 1367, 0xdd),
	      "RDMA WRITE: B's memory has the 11633 bytes, neighbours "
	      "untouched");

	fill(b->buf + 150000, 9000, 5);
	memset(a->buf + 30000, 0, 9000);
	sge = (struct gv_sge){ (uintptr_t)a->buf + 30000, 9000, a->mr->lkey };
	wr.wr_id = 0x3702;
	wr.opcode = VIRTIO_RDMA_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = (uintptr_t)b->buf + 150000;
	post_send_wc(qa, a->scq, &wr, "RDMA READ 9000 B from B",
		     VIRTIO_RDMA_WC_RDMA_READ, 9000);
	check(filled(a->buf + 30000, 9000, 5),
	      "RDMA READ: A has B's 9000 bytes");
}

static void test_atomics(struct guest *a, struct gv_qp *qa, struct guest *b)
{
	uint64_t *remote = (uint64_t *)(b->buf + 200000);
	uint64_t *local = (uint64_t *)(a->buf + 200000);
	struct gv_sge sge = { (uintptr_t)local, 8, a->mr->lkey };
	struct gv_send_wr wr = { .wr_id = 0xa701,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = VIRTIO_RDMA_WR_ATOMIC_CMP_AND_SWP };

	*remote = 0x1111222233334444ull;
	*local = 0;
	wr.wr.atomic.remote_addr = (uintptr_t)remote;
	wr.wr.atomic.rkey = b->mr->rkey;
	wr.wr.atomic.compare_add = 0x1111222233334444ull;
	wr.wr.atomic.swap = 0x5555666677778888ull;
	post_send_wc(qa, a->scq, &wr, "ATOMIC CMP_AND_SWP",
		     VIRTIO_RDMA_WC_COMP_SWAP, 8);
	check(*local == 0x1111222233334444ull &&
		      *remote == 0x5555666677778888ull,
	      "CMP_AND_SWP: old %#llx returned, remote now %#llx",
	      (unsigned long long)*local, (unsigned long long)*remote);

	wr.wr_id = 0xa702;
	wr.opcode = VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.atomic.compare_add = 0x10;
	wr.wr.atomic.swap = 0;
	post_send_wc(qa, a->scq, &wr, "ATOMIC FETCH_AND_ADD",
		     VIRTIO_RDMA_WC_FETCH_ADD, 8);
	check(*local == 0x5555666677778888ull &&
		      *remote == 0x5555666677778898ull,
	      "FETCH_AND_ADD: old %#llx returned, remote now %#llx",
	      (unsigned long long)*local, (unsigned long long)*remote);
}

static void test_ud(struct guest *a, struct guest *b)
{
	struct gv_qp *ua = make_qp(a, VIRTIO_RDMA_QPT_UD, NULL);
	struct gv_qp *ub = make_qp(b, VIRTIO_RDMA_QPT_UD, NULL);
	struct gv_ah_attr aa = { .sgid_index = GIDX, .hop_limit = 1 };
	struct gv_sge sge = { (uintptr_t)a->buf + 90000, 512, a->mr->lkey };
	struct gv_send_wr wr = { .wr_id = 0x0d01,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = VIRTIO_RDMA_WR_SEND };
	struct gv_ah *ah;
	struct gv_wc wc;
	int r, tries;

	connect_qp(ua, 0, NULL);
	connect_qp(ub, 0, NULL);
	memcpy(aa.dgid, b->gid, 16);
	r = gv_create_ah(a->pd, &aa, &ah);
	if (r)
		die("create AH", r);
	fill(a->buf + 90000, 512, 6);
	memset(b->buf + 100000, 0xcc, GRH_BYTES + 600);
	r = post_recv1(ub, NULL, 0x0dc1, b, 100000, GRH_BYTES + 512);
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = ub->qp_num;
	wr.wr.ud.remote_qkey = UD_QKEY;
	/*
	 * UD is unreliable: a datagram that reaches B's host QP before B's
	 * worker has taken the receive off its ring (the RQ kick is
	 * asynchronous, like a NIC doorbell) is dropped. Resend a bounded
	 * number of times, as UD applications do; one receive is posted.
	 */
	for (tries = 1; !r && tries <= UD_TRIES; tries++) {
		post_send_wc(ua, a->scq, &wr, "UD SEND 512 B A->B",
			     VIRTIO_RDMA_WC_SEND, UINT32_MAX);
		r = poll_one_within(b->rcq, &wc, UD_WAIT_S);
		if (r != -ETIMEDOUT)
			break;
		printf("# UD: datagram %d not received within %.0f s, "
		       "resending\n",
		       tries, UD_WAIT_S);
		r = 0;
	}
	if (!r && tries > UD_TRIES)
		r = -ETIMEDOUT;
	check(!r && wc.status == 0 && wc.opcode == VIRTIO_RDMA_WC_RECV &&
		      wc.byte_len == GRH_BYTES + 512 &&
		      wc.src_qp == ua->qp_num && wc.qp_num == ub->qp_num &&
		      (wc.wc_flags & VIRTIO_RDMA_WC_GRH),
	      "UD: receive completion status %u byte_len %u src_qp %#x "
	      "flags %#x",
	      r ? 99 : wc.status, r ? 0 : wc.byte_len, r ? 0 : wc.src_qp,
	      r ? 0 : wc.wc_flags);
	check(filled(b->buf + 100000 + GRH_BYTES, 512, 6) &&
		      all(b->buf + 100000 + GRH_BYTES + 512, 88, 0xcc),
	      "UD: the 512 bytes follow the 40-byte GRH area, nothing past");
	gv_destroy_ah(ah);
	check(!gv_destroy_qp(ua) && !gv_destroy_qp(ub), "UD: QPs destroyed");
}

/* Two RC QPs of B share one SRQ; A sends on a QP connected to each. */
static void test_srq(struct guest *a, struct guest *b)
{
	struct gv_qp *qa[2], *qb[2];
	struct gv_srq *srq;
	struct gv_sge sge;
	struct gv_send_wr wr = { .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = VIRTIO_RDMA_WR_SEND };
	bool seen[2] = { false, false };
	int r = gv_create_srq(b->pd, 16, 1, &srq);

	check(!r, "CREATE_SRQ (16 WRs): handle %u slot %u (%s)",
	      r ? 0 : srq->handle, r ? 0 : srq->slot, strerror(-r));
	if (r)
		return;
	for (int i = 0; i < 2; i++) {
		qa[i] = make_qp(a, VIRTIO_RDMA_QPT_RC, NULL);
		qb[i] = make_qp(b, VIRTIO_RDMA_QPT_RC, srq);
	}
	for (int i = 0; i < 2; i++) {
		connect_qp(qa[i], qb[i]->qp_num, b->gid);
		connect_qp(qb[i], qa[i]->qp_num, a->gid);
	}
	/* four receives in the SRQ, 1 KiB apart */
	for (int i = 0; i < 4 && !r; i++)
		r = post_recv1(NULL, srq, 0x5c00 + i, b, 160000 + 1024 * i,
			       1024);
	check(!r, "SRQ: 4 receives posted (%s)", strerror(-r));
	for (int i = 0; i < 2 && !r; i++) {
		fill(a->buf + 180000 + 1024 * i, 700 + i, 10 + i);
		sge = (struct gv_sge){ (uintptr_t)a->buf + 180000 + 1024 * i,
				       700 + i, a->mr->lkey };
		wr.wr_id = 0x5d00 + i;
		r = gv_post_send(qa[i], &wr, NULL);
		if (!r)
			expect_wc(a->scq, "SRQ: sender", 0x5d00 + i,
				  VIRTIO_RDMA_WC_SEND, UINT32_MAX,
				  qa[i]->qp_num);
	}
	for (int n = 0; n < 2 && !r; n++) {
		struct gv_wc wc;
		int q, slot;

		r = poll_one(b->rcq, &wc);
		if (r || wc.status)
			break;
		q = wc.qp_num == qb[0]->qp_num	 ? 0
		    : wc.qp_num == qb[1]->qp_num ? 1
						 : -1;
		slot = (int)(wc.wr_id - 0x5c00);
		check(q >= 0 && slot >= 0 && slot < 4 && !seen[q] &&
			      wc.byte_len == 700u + (unsigned int)q &&
			      filled(b->buf + 160000 + 1024 * slot, 700 + q,
				     10 + q),
		      "SRQ: receive wr_id %#llx on QP %#x (B's QP %d) has "
		      "its sender's %u bytes",
		      (unsigned long long)wc.wr_id, wc.qp_num, q, wc.byte_len);
		if (q >= 0)
			seen[q] = true;
	}
	check(!r && seen[0] && seen[1],
	      "SRQ: both QPs received through the shared queue (%s)",
	      strerror(-r));
	for (int i = 0; i < 2; i++)
		gv_destroy_qp(qa[i]), gv_destroy_qp(qb[i]);
	check(!gv_destroy_srq(srq), "SRQ destroyed");
}

/* QUERY_QP after RTS, and a SEND from a DMA MR (SGE address = GPA). */
static void test_query_dma(struct guest *a, struct gv_qp *qa, struct guest *b,
			   struct gv_qp *qb)
{
	struct virtio_rdma_qp_attr at;
	struct gv_mr *dma;
	struct gv_sge sge;
	struct gv_send_wr wr = { .wr_id = 0xd3a,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = VIRTIO_RDMA_WR_SEND };
	int r = gv_query_qp(qa,
			    VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_DEST_QPN |
				    VIRTIO_RDMA_QP_PATH_MTU,
			    &at);

	check(!r && at.qp_state == VIRTIO_RDMA_QPS_RTS &&
		      at.dest_qp_num == qb->qp_num &&
		      at.path_mtu == VIRTIO_RDMA_MTU_1024,
	      "QUERY_QP: state %u (RTS 3), dest_qp_num %#x, path_mtu %u (%s)",
	      at.qp_state, at.dest_qp_num, at.path_mtu, strerror(-r));
	r = gv_get_dma_mr(a->pd, VIRTIO_RDMA_ACCESS_LOCAL_WRITE, &dma);
	check(!r, "GET_DMA_MR: lkey %#x (%s)", r ? 0 : dma->lkey, strerror(-r));
	if (r)
		return;
	/* A's buffer is physically contiguous: 3000 bytes at one GPA */
	fill(a->buf + 140000, 3000, 7);
	sge = (struct gv_sge){ gv_buf_gpa(a->ctx, a->buf + 140000), 3000,
			       dma->lkey };
	r = post_recv1(qb, NULL, 0xd3b, b, 140000, 3000);
	check(!r, "DMA MR SEND: B's receive posted (%s)", strerror(-r));
	printf("# A's bytes at GPA %#llx\n", (unsigned long long)sge.addr);
	post_send_wc(qa, a->scq, &wr, "SEND 3000 B through the DMA MR",
		     VIRTIO_RDMA_WC_SEND, UINT32_MAX);
	expect_wc(b->rcq, "DMA MR SEND: receiver", 0xd3b, VIRTIO_RDMA_WC_RECV,
		  3000, qb->qp_num);
	check(filled(b->buf + 140000, 3000, 7),
	      "DMA MR SEND: B received the bytes at that GPA");
	check(!gv_dereg_mr(dma), "DEREG_MR of the DMA MR");
}

/*
 * As verbs applications do (ibv_rc_pingpong -e): wait for an event, poll,
 * and if nothing is there wait again.  A PVRDMA device whose doorbells
 * are stores cannot see every ARM and notifies on completions the guest
 * has not been told of (docs/pvrdma.md): an event may be an earlier one.
 * Never a lost wake-up: the completion must come with some event within
 * the timeout.  Returns what the last poll returned, or -errno.
 */
static int wait_event_then_poll(struct gv_cq *cq, struct gv_wc *wc)
{
	int r, tries;

	for (tries = 0; tries < 8; tries++) {
		r = gv_get_cq_event(cq, TIMEOUT_S * 1000);
		if (r < 0)
			return r;
		r = gv_poll_cq(cq, 1, wc);
		if (r != 0)
			return r;
		r = gv_req_notify_cq(cq, false);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Event mode: arm B's receive CQ, a SEND from A raises its interrupt. */
static void test_event(struct guest *a, struct gv_qp *qa, struct guest *b,
		       struct gv_qp *qb)
{
	struct gv_sge sge = { (uintptr_t)a->buf, 32, a->mr->lkey };
	struct gv_send_wr wr = { .wr_id = 0xe1,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = VIRTIO_RDMA_WR_SEND };
	struct gv_wc wc;
	int r = post_recv1(qb, NULL, 0xe2, b, 0, 32);

	if (!r)
		r = gv_req_notify_cq(b->rcq, false);
	check(!r, "REQ_NOTIFY_CQ (next completion) on B's receive CQ (%s)",
	      strerror(-r));
	r = gv_post_send(qa, &wr, NULL);
	r = r ? r : wait_event_then_poll(b->rcq, &wc);
	check(r >= 0, "the CQ's interrupt (call eventfd) fired (%s)",
	      strerror(-r));
	check(r == 1 && wc.wr_id == 0xe2 && wc.status == 0,
	      "after the event the completion is there");
	expect_wc(a->scq, "event SEND: sender", 0xe1, VIRTIO_RDMA_WC_SEND,
		  UINT32_MAX, qa->qp_num);
}

/* ---- the VMM's DMA contract (PVRDMA over vfio-user only) ---- */

#define ROM_GPA	 (8ull << 30) /* a slot of A's the test maps itself */
#define ROM_SIZE (4ull << 20)
#define XBUF	 (64 * 1024)

/* The running kernel is older than major.minor. */
static bool kernel_before(int major, int minor)
{
	struct utsname u;
	int ma = 0, mi = 0;

	if (uname(&u) || sscanf(u.release, "%d.%d", &ma, &mi) != 2)
		return false;
	return ma < major || (ma == major && mi < minor);
}

/* Host MRs of the worker with pid (rdma res show mr), or -1. */
static int host_mrs(const char *pid)
{
	char line[512], want[32];
	FILE *f;
	int n = 0;

	if (!pid)
		return -1;
	snprintf(want, sizeof(want), " pid %s ", pid);
	f = popen("rdma res show mr 2>/dev/null", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, want))
			n++;
	if (pclose(f) != 0) {
		printf("# rdma res show mr failed: host MRs not counted\n");
		return -1;
	}
	return n;
}

/* Posts a one-SGE send work request on qp; expects `status` on scq. */
static void send_expect(struct gv_qp *qp, struct gv_cq *scq, uint32_t opcode,
			struct gv_sge sge, uint64_t raddr, uint32_t rkey,
			uint32_t status, const char *what)
{
	struct gv_send_wr wr = { .wr_id = 0xdead0000 | opcode,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = opcode };
	struct gv_wc wc;
	int r;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	r = gv_post_send(qp, &wr, NULL);
	r = r ? r : poll_one(scq, &wc);
	check(!r && wc.wr_id == wr.wr_id && wc.status == status,
	      "%s: completion status %u (%s), want %u (%s)", what,
	      r ? 0 : wc.status, r ? strerror(-r) : gv_wc_status_str(wc.status),
	      status, gv_wc_status_str(status));
}

/*
 * A's slot at ROM_GPA holds a fast-path MR (contiguous), a remapped one
 * (scattered) and a part of A's DMA MR.  After the VMM's DMA_UNMAP of it,
 * the worker has deregistered all three host MRs: A's WRs with the old
 * lkeys complete with LOC_PROT_ERR and B's RDMA WRITE with the old rkey
 * fails.  Mapped again read-only (ROM), a writable MR over it is refused
 * and a read-only one serves B's RDMA READ.
 */
static void test_dma_contract(struct guest *a, struct gv_qp *qa,
			      struct guest *b, struct gv_qp *qb)
{
	struct vfio_user_client *c = gv_pvrdma_client(a->ctx);
	const char *pid = getenv("RG_WORKER_A_PID");
	unsigned int old = a->ctx->data_slot;
	struct gv_mr *mx, *my, *dma, *rom;
	uint8_t *x, *y, before[12];
	int slot, r, n0, n1;

	slot = guest_ram_add_region(a->ctx->ram, ROM_GPA, ROM_SIZE,
				    GUEST_PAGE_4K);
	r = slot < 0 ? slot : vfio_user_client_dma_map(c, a->ctx->ram, slot);
	r = r ? r : gv_set_data_slot(a->ctx, (unsigned int)slot);
	if (r)
		die("DMA_MAP of A's extra slot", r);
	x = gv_alloc_buf(a->ctx, XBUF, GV_BUF_CONTIGUOUS);
	y = gv_alloc_buf(a->ctx, XBUF, GV_BUF_SCATTER);
	gv_set_data_slot(a->ctx, old);
	if (!x || !y)
		die("gv_alloc_buf in A's extra slot", -ENOMEM);
	fill(x, XBUF, 9);
	if ((r = gv_reg_mr(a->pd, x, XBUF, ACCESS_ALL, &mx)) ||
	    (r = gv_reg_mr(a->pd, y, XBUF, ACCESS_ALL, &my)) ||
	    (r = gv_get_dma_mr(a->pd, VIRTIO_RDMA_ACCESS_LOCAL_WRITE, &dma)))
		die("MRs in A's extra slot", r);
	send_expect(qb, b->scq, VIRTIO_RDMA_WR_RDMA_WRITE,
		    (struct gv_sge){ (uintptr_t)b->buf, 100, b->mr->lkey },
		    (uintptr_t)x + 1000, mx->rkey, VIRTIO_RDMA_WC_SUCCESS,
		    "B's RDMA WRITE into A's MR before the unmap");
	check(!memcmp(x + 1000, b->buf, 100), "B's bytes are in A's MR");
	n0 = host_mrs(pid);
	r = vfio_user_client_dma_unmap(c, ROM_GPA, ROM_SIZE, 0);
	check(!r, "the VMM unmaps A's slot at %#llx (%s)",
	      (unsigned long long)ROM_GPA, strerror(-r));
	n1 = host_mrs(pid);
	check(n0 < 0 || n1 == n0 - 3,
	      "worker A's host MRs: %d before the unmap, %d after (3 revoked)",
	      n0, n1);
	send_expect(qa, a->scq, VIRTIO_RDMA_WR_SEND,
		    (struct gv_sge){ (uintptr_t)x, 100, mx->lkey }, 0, 0,
		    VIRTIO_RDMA_WC_LOC_PROT_ERR,
		    "A's SEND with the unmapped fast-path MR's lkey");
	send_expect(qa, a->scq, VIRTIO_RDMA_WR_SEND,
		    (struct gv_sge){ (uintptr_t)y, 100, my->lkey }, 0, 0,
		    VIRTIO_RDMA_WC_LOC_PROT_ERR,
		    "A's SEND with the unmapped remapped MR's lkey");
	send_expect(qa, a->scq, VIRTIO_RDMA_WR_SEND,
		    (struct gv_sge){ ROM_GPA, 100, dma->lkey }, 0, 0,
		    VIRTIO_RDMA_WC_LOC_PROT_ERR,
		    "A's SEND through the DMA MR from the unmapped slot");
	/* the DMA MR's other parts still work */
	r = post_recv1(qb, NULL, 0xd4b, b, 0, 100);
	send_expect(
		qa, a->scq, VIRTIO_RDMA_WR_SEND,
		(struct gv_sge){ gv_buf_gpa(a->ctx, a->buf), 100, dma->lkey },
		0, 0, VIRTIO_RDMA_WC_SUCCESS,
		"A's SEND through the DMA MR from a slot still mapped");
	expect_wc(b->rcq, "B receives it", 0xd4b, VIRTIO_RDMA_WC_RECV, 100,
		  qb->qp_num);
	/* the same pages back as ROM: no writable MR over them */
	r = vfio_user_client_dma_map_flags(c, a->ctx->ram, (unsigned int)slot,
					   VFIO_USER_DMA_F_READ);
	check(!r, "the VMM maps the slot again read-only (%s)", strerror(-r));
	r = gv_reg_mr(a->pd, x, XBUF,
		      VIRTIO_RDMA_ACCESS_LOCAL_WRITE |
			      VIRTIO_RDMA_ACCESS_REMOTE_WRITE,
		      &rom);
	check(r < 0, "a writable MR over the read-only region is refused (%s)",
	      strerror(-r));
	/* the DMA MR leaves read-only regions out */
	r = gv_dereg_mr(dma);
	r = r ? r : gv_get_dma_mr(a->pd, VIRTIO_RDMA_ACCESS_LOCAL_WRITE, &dma);
	check(!r, "a new DMA MR with the read-only slot mapped (%s)",
	      strerror(-r));
	send_expect(qa, a->scq, VIRTIO_RDMA_WR_SEND,
		    (struct gv_sge){ ROM_GPA, 100, dma->lkey }, 0, 0,
		    VIRTIO_RDMA_WC_LOC_PROT_ERR,
		    "A's SEND through the DMA MR from the read-only slot");
	/*
	 * A read-only MR over it: kernels before 6.2 pin every MR's pages
	 * with FOLL_WRITE | FOLL_FORCE (ib_umem_get), which a read-only
	 * shared mapping refuses: a clean EFAULT there.
	 */
	r = gv_reg_mr(a->pd, x, XBUF, VIRTIO_RDMA_ACCESS_REMOTE_READ, &rom);
	if (kernel_before(6, 2))
		check(r < 0,
		      "a read-only MR over it is refused by this kernel "
		      "(before 6.2: ib_umem_get pins for writing) (%s)",
		      strerror(-r));
	else
		check(!r, "a read-only MR over it is registered (%s)",
		      strerror(-r));
	if (!r) {
		memset(b->buf + 5000, 0, 2000);
		send_expect(qb, b->scq, VIRTIO_RDMA_WR_RDMA_READ,
			    (struct gv_sge){ (uintptr_t)b->buf + 5000, 2000,
					     b->mr->lkey },
			    (uintptr_t)x + 2000, rom->rkey,
			    VIRTIO_RDMA_WC_SUCCESS,
			    "B's RDMA READ of the read-only MR");
		check(!memcmp(b->buf + 5000, x + 2000, 2000),
		      "B read A's 2000 bytes");
	}
	/* last (B's QP breaks): the old rkey is gone from the HCA */
	memcpy(b->buf + 9000, "not-allowed!", 12);
	memcpy(before, x + 3000, sizeof(before));
	send_expect(
		qb, b->scq, VIRTIO_RDMA_WR_RDMA_WRITE,
		(struct gv_sge){ (uintptr_t)b->buf + 9000, 12, b->mr->lkey },
		(uintptr_t)x + 3000, mx->rkey, VIRTIO_RDMA_WC_REM_ACCESS_ERR,
		"B's RDMA WRITE with the unmapped MR's old rkey");
	check(!memcmp(x + 3000, before, sizeof(before)),
	      "A's memory is untouched");
	check(!gv_dereg_mr(mx) && !gv_dereg_mr(my) && !gv_dereg_mr(dma),
	      "the dead MRs deregister cleanly");
}

/*
 * The guest's driver (or the VMM) turns bus mastering off: the device
 * may not reach guest memory any more, so every host MR of worker A is
 * deregistered at once; the guest's handles stay, dead, and deregister
 * cleanly once mastering is back on.
 */
static void test_bus_master_revokes(struct guest *a)
{
	struct vfio_user_client *c = gv_pvrdma_client(a->ctx);
	const char *pid = getenv("RG_WORKER_A_PID");
	struct gv_mr *mr, *dma;
	uint64_t cmd = 0;
	int n0, n1, r;

	r = gv_reg_mr(a->pd, a->buf, BUF_SIZE, ACCESS_ALL, &mr);
	r = r ? r : gv_get_dma_mr(a->pd, VIRTIO_RDMA_ACCESS_LOCAL_WRITE, &dma);
	r = r ? r : vfio_user_client_cfg_read(c, PCI_COMMAND, 2, &cmd);
	check(!r && (cmd & PCI_COMMAND_MASTER),
	      "A registers an MR and a DMA MR; bus mastering is on (%s)",
	      strerror(-r));
	n0 = host_mrs(pid);
	r = vfio_user_client_cfg_write(c, PCI_COMMAND, 2,
				       cmd & ~(uint64_t)PCI_COMMAND_MASTER);
	n1 = host_mrs(pid);
	check(!r && (n0 < 0 || (n0 > 0 && n1 == 0)),
	      "bus master off: worker A's host MRs %d before, %d after (%s)",
	      n0, n1, strerror(-r));
	r = vfio_user_client_cfg_write(c, PCI_COMMAND, 2, cmd);
	check(!r && !gv_dereg_mr(mr) && !gv_dereg_mr(dma),
	      "bus master on again: the dead MRs deregister cleanly (%s)",
	      strerror(-r));
}

/* After a device reset no host MR of worker A is left. */
static void test_reset_revokes(struct guest *a)
{
	const char *pid = getenv("RG_WORKER_A_PID");
	struct gv_mr *mr, *dma;
	int n0, n1, r;

	r = gv_reg_mr(a->pd, a->buf, BUF_SIZE, ACCESS_ALL, &mr);
	r = r ? r : gv_get_dma_mr(a->pd, VIRTIO_RDMA_ACCESS_LOCAL_WRITE, &dma);
	check(!r, "A registers an MR and a DMA MR again (%s)", strerror(-r));
	n0 = host_mrs(pid);
	r = vfio_user_client_reset(gv_pvrdma_client(a->ctx));
	n1 = host_mrs(pid);
	check(!r && (n0 < 0 || (n0 > 0 && n1 == 0)),
	      "DEVICE_RESET: worker A's host MRs %d before, %d after (%s)", n0,
	      n1, strerror(-r));
}

/* "pvrdma,virtio-rdma": guest A's transport, then guest B's. */
static int parse_transports(const char *arg, struct guest *a, struct guest *b)
{
	char buf[64];
	char *comma;

	if (strlen(arg) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, arg);
	comma = strchr(buf, ',');
	if (!comma)
		return -EINVAL;
	*comma = '\0';
	if (gv_parse_transport(buf, &a->transport) ||
	    gv_parse_transport(comma + 1, &b->transport))
		return -EINVAL;
	return 0;
}

int main(int argc, char **argv)
{
	struct guest a = { .name = "guest A" }, b = { .name = "guest B" };
	struct gv_qp *qa, *qb;

	if (argc == 7 && !strcmp(argv[1], "-t") &&
	    parse_transports(argv[2], &a, &b) == 0) {
		argc -= 2;
		argv += 2;
	}
	if (argc != 5) {
		fprintf(stderr,
			"usage: %s [-t TRANSPORT_A,TRANSPORT_B] SOCKET_A "
			"GID_A SOCKET_B GID_B\n",
			argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	open_guest(&a, argv[1], argv[2], false);
	open_guest(&b, argv[3], argv[4], true);
	qa = make_qp(&a, VIRTIO_RDMA_QPT_RC, NULL);
	qb = make_qp(&b, VIRTIO_RDMA_QPT_RC, NULL);
	check(qa->qp_num > 1 && qb->qp_num > 1 && qa->qp_num <= 0xffffff,
	      "RC QPs: A qpn %#x slot %u, B qpn %#x slot %u (host QPNs)",
	      qa->qp_num, qa->slot, qb->qp_num, qb->slot);
	connect_qp(qa, qb->qp_num, b.gid);
	connect_qp(qb, qa->qp_num, a.gid);
	test_send(&a, qa, &b, qb);
	test_write_read(&a, qa, &b);
	test_atomics(&a, qa, &b);
	test_query_dma(&a, qa, &b, qb);
	test_event(&a, qa, &b, qb);
	test_ud(&a, &b);
	test_srq(&a, &b);
	if (a.transport == GV_TRANSPORT_PVRDMA)
		test_dma_contract(&a, qa, &b, qb);
	check(!gv_destroy_qp(qa) && !gv_destroy_qp(qb) && !gv_dereg_mr(a.mr) &&
		      !gv_dereg_mr(b.mr),
	      "teardown: QPs destroyed, MRs deregistered");
	if (a.transport == GV_TRANSPORT_PVRDMA) {
		test_bus_master_revokes(&a);
		test_reset_revokes(&a);
	}
	gv_close(a.ctx);
	gv_close(b.ctx);
	printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
