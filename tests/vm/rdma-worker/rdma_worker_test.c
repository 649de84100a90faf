// SPDX-License-Identifier: MIT
/*
 * vm test of the worker's virtio-rdma device on real verbs: two workers
 * (rxe0 and rxe1) driven by the guest simulator with raw commands and
 * work-queue elements built from common/virtio_rdma.h. Cases: config
 * space, the control path, RC traffic between the two workers with the
 * data verified, completions/arming, and hostile commands and work
 * requests (each refused with an error status while the worker keeps
 * serving). TAP output; argv[1] is the worker binary.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/virtio_rdma.h"
#include "guest/guest_dev.h"
#include "tests/check.h"
#include "tests/vm/lib/vm_test.h"

#define TMO	 5000
#define RAM_SIZE (16ull << 20)
#define RAM_HI	 (4ull << 30)
#define CQ_BUFS	 32
#define RING	 64
#define PAGE	 4096ull

static const char *worker_path;
static char **extra_args; /* more worker options (e.g. --busy-poll) */

/* ---- workers ---- */

static int worker_start(struct vt_proc *w, const char *dev, const char *tag)
{
	const char *head[] = { worker_path, "--socket", w->sock,
			       "--device",  dev,	"--vm",
			       tag,	    "-v",	NULL };
	int r = vt_proc_dir(w, "rdmagate-vmtest");

	return r ? r : vt_proc_start(w, head, extra_args);
}

/* ---- a guest ---- */

struct g {
	struct guest_dev d;
	struct guest_vq *ctrl;
	struct virtio_rdma_config cfg;
	uint64_t scratch; /* control chains */
};

static int g_open(struct g *g, struct vt_proc *w)
{
	struct vhost_client_opts o = {
		.protocol_features = VHOST_CLIENT_PROTOCOL_FEATURES,
		.config_size = sizeof(struct virtio_rdma_config),
		.timeout_ms = TMO,
	};
	int r;

	guest_dev_init(&g->d);
	r = guest_dev_connect(&g->d, w->sock, &o);
	if (r)
		return r;
	memcpy(&g->cfg, g->d.vc.config, sizeof(g->cfg));
	if (guest_ram_add_region(&g->d.ram, 0, RAM_SIZE, GUEST_PAGE_4K) < 0 ||
	    guest_ram_add_region(&g->d.ram, RAM_HI, RAM_SIZE, GUEST_PAGE_4K) <
		    0)
		return -ENOMEM;
	r = guest_dev_start(&g->d,
			    (1ull << GUEST_F_VERSION_1) |
				    (1ull << GUEST_F_RING_INDIRECT_DESC));
	if (!r)
		r = guest_dev_add_queue(&g->d, 0, RING, &g->ctrl);
	if (!r)
		r = guest_dev_driver_ok(&g->d);
	if (!r)
		r = guest_ram_alloc_in(&g->d.ram, 0, PAGE, PAGE, &g->scratch);
	return r;
}

/*
 * One control command: returns the status byte (0 or an errno), or a
 * negative errno if the exchange failed. rsp gets the response.
 */
static int cmd(struct g *g, uint8_t code, const void *req, uint32_t req_len,
	       void *rsp, uint32_t rsp_len)
{
	uint64_t hdr = g->scratch, rq = g->scratch + 64, in = g->scratch + 1024;
	struct guest_sg out[2] = { { hdr, 1 }, { rq, req_len } };
	struct guest_sg insg = { in, 1 + rsp_len };
	uint8_t buf[1 + 512];
	uint32_t got;
	int r;

	guest_ram_write(&g->d.ram, hdr, &code, 1);
	if (req_len)
		guest_ram_write(&g->d.ram, rq, req, req_len);
	memset(buf, 0xee, sizeof(buf));
	guest_ram_write(&g->d.ram, in, buf, 1 + rsp_len);
	r = guest_dev_exchange(&g->d, g->ctrl, out, req_len ? 2 : 1, &insg, 1,
			       false, TMO, &got);
	if (r)
		return r;
	guest_ram_read(&g->d.ram, in, buf, 1 + rsp_len);
	if (buf[0] == 0 && got != 1 + rsp_len && rsp_len) {
		printf("# %u: device wrote %u bytes, expected %u\n", code, got,
		       1 + rsp_len);
		return -EPROTO;
	}
	if (rsp && buf[0] == 0)
		memcpy(rsp, buf + 1, rsp_len);
	return buf[0];
}

static int create_pd(struct g *g, uint32_t *pdn)
{
	return cmd(g, VIRTIO_RDMA_CMD_CREATE_PD, NULL, 0, pdn, 4);
}

/* A CQ with its queue up and CQ_BUFS buffers posted. */
struct gcq {
	uint32_t cqn;
	struct guest_vq *q;
	uint64_t bufs;
};

static int create_cq(struct g *g, struct gcq *cq)
{
	uint32_t n = CQ_BUFS;
	int r = cmd(g, VIRTIO_RDMA_CMD_CREATE_CQ, &n, 4, &cq->cqn, 4);

	if (r)
		return r;
	/* A CQ number used before: its queue is up with buffers posted. */
	cq->q = g->d.vq[virtio_rdma_cq_vq(cq->cqn)];
	if (cq->q)
		return 0;
	r = guest_dev_add_queue(&g->d, virtio_rdma_cq_vq(cq->cqn), RING,
				&cq->q);
	if (!r)
		r = guest_ram_alloc_in(&g->d.ram, 0, CQ_BUFS * 64, 64,
				       &cq->bufs);
	for (unsigned int i = 0; !r && i < CQ_BUFS; i++) {
		struct guest_sg sg = { cq->bufs + 64 * i, 48 };
		uint16_t head;

		r = guest_vq_post(cq->q, NULL, 0, &sg, 1, false,
				  (void *)(uintptr_t)sg.gpa, &head);
	}
	if (!r)
		r = guest_vq_kick(cq->q) < 0 ? -EIO : 0;
	return r;
}

/* Waits up to tmo ms for one CQE and reposts its buffer. */
static int reap_cqe_tmo(struct g *g, struct gcq *cq, struct virtio_rdma_cqe *e,
			int tmo)
{
	struct guest_used u;
	struct guest_sg sg;
	uint16_t head;
	int r = guest_vq_poll_reap(cq->q, tmo, &u);

	if (r)
		return r;
	if (u.len != sizeof(*e))
		return -EPROTO;
	sg.gpa = (uint64_t)(uintptr_t)u.cookie;
	sg.len = 48;
	guest_ram_read(&g->d.ram, sg.gpa, e, sizeof(*e));
	r = guest_vq_post(cq->q, NULL, 0, &sg, 1, false, u.cookie, &head);
	guest_vq_kick(cq->q);
	return r;
}

static int reap_cqe(struct g *g, struct gcq *cq, struct virtio_rdma_cqe *e)
{
	return reap_cqe_tmo(g, cq, e, TMO);
}

struct gqp {
	uint32_t qpn, slot;
	struct guest_vq *sq, *rq;
	uint64_t wqes; /* RING elements of 1 KiB each, SQ then RQ */
	unsigned int next;
};

/* A QP of max_wr send and receive WRs with its queues up. */
static int create_qp_n(struct g *g, uint32_t pdn, uint8_t type, uint32_t scq,
		       uint32_t rcq, uint32_t max_wr, struct gqp *qp)
{
	struct virtio_rdma_cmd_create_qp c = {
		.pdn = pdn,
		.qp_type = type,
		.sq_sig_type = VIRTIO_RDMA_SIG_REQ_WR,
		.max_send_wr = max_wr,
		.max_send_sge = 4,
		.send_cqn = scq,
		.max_recv_wr = max_wr,
		.max_recv_sge = 4,
		.recv_cqn = rcq,
		.max_inline_data = 128,
	};
	struct virtio_rdma_rsp_create_qp rsp;
	int r = cmd(g, VIRTIO_RDMA_CMD_CREATE_QP, &c, sizeof(c), &rsp,
		    sizeof(rsp));

	if (r)
		return r;
	qp->qpn = rsp.qpn;
	qp->slot = rsp.slot;
	qp->next = 0;
	/* A slot used before keeps its queues. */
	qp->sq = g->d.vq[virtio_rdma_sq_vq(g->cfg.max_cq, qp->slot)];
	qp->rq = g->d.vq[virtio_rdma_rq_vq(g->cfg.max_cq, qp->slot)];
	if (!qp->sq)
		r = guest_dev_add_queue(
			&g->d, virtio_rdma_sq_vq(g->cfg.max_cq, qp->slot), RING,
			&qp->sq);
	if (!r && !qp->rq)
		r = guest_dev_add_queue(
			&g->d, virtio_rdma_rq_vq(g->cfg.max_cq, qp->slot), RING,
			&qp->rq);
	if (!r)
		r = guest_ram_alloc_in(&g->d.ram, 0, 2 * RING * 1024, PAGE,
				       &qp->wqes);
	return r;
}

static int create_qp(struct g *g, uint32_t pdn, uint8_t type, uint32_t scq,
		     uint32_t rcq, struct gqp *qp)
{
	return create_qp_n(g, pdn, type, scq, rcq, 32, qp);
}

/*
 * Posts one element (bytes) on q, the element in qp's area; kick: tell
 * the worker (else it is only made available in the ring).
 */
static int post_el(struct g *g, struct gqp *qp, struct guest_vq *q,
		   const void *el, uint32_t len, bool kick)
{
	uint64_t gpa = qp->wqes + 1024ull * (qp->next++ % (2 * RING));
	struct guest_sg sg = { gpa, len };
	struct guest_used u;
	uint16_t head;

	/* recycle returned descriptors first */
	while (guest_vq_reap(q, &u) == 0)
		;
	guest_ram_write(&g->d.ram, gpa, el, len);
	if (guest_vq_post(q, &sg, 1, NULL, 0, false, NULL, &head))
		return -ENOSPC;
	if (!kick)
		return 0;
	return guest_vq_kick(q) < 0 ? -EIO : 0;
}

static int post(struct g *g, struct gqp *qp, struct guest_vq *q, const void *el,
		uint32_t len)
{
	return post_el(g, qp, q, el, len, true);
}

static int post_recv(struct g *g, struct gqp *qp, uint64_t wr_id, uint64_t addr,
		     uint32_t len, uint32_t lkey)
{
	struct {
		struct virtio_rdma_rq_wqe h;
		struct virtio_rdma_sge s;
	} e = { { 1, 0, wr_id }, { addr, len, lkey } };

	return post(g, qp, qp->rq, &e, sizeof(e));
}

struct send_el {
	struct virtio_rdma_sq_wqe h;
	struct virtio_rdma_sge s[4];
};

static int post_send(struct g *g, struct gqp *qp, struct send_el *e,
		     uint32_t nsge)
{
	e->h.num_sge = nsge;
	return post(g, qp, qp->sq, e, sizeof(e->h) + 16 * nsge);
}

/* ---- memory ---- */

struct gmr {
	uint32_t mrn, lkey, rkey;
	uint64_t iova;
	uint32_t len;
	uint64_t pages[64]; /* GPA of each page */
};

/* REG_USER_MR of npages pages at iova, its page table's root at l1. */
static int reg_user_mr(struct g *g, uint32_t pdn, uint32_t access,
		       uint64_t start, uint32_t npages, uint64_t iova,
		       uint64_t l1, struct gmr *mr)
{
	struct virtio_rdma_cmd_reg_user_mr c = { .pdn = pdn,
						 .access_flags = access,
						 .start = start,
						 .length = npages * PAGE,
						 .virt_addr = iova,
						 .pages = l1,
						 .npages = npages };
	struct virtio_rdma_rsp_mr rsp;
	int r = cmd(g, VIRTIO_RDMA_CMD_REG_USER_MR, &c, sizeof(c), &rsp,
		    sizeof(rsp));

	if (r)
		return r;
	mr->mrn = rsp.mrn;
	mr->lkey = rsp.lkey;
	mr->rkey = rsp.rkey;
	mr->iova = iova;
	mr->len = (uint32_t)(npages * PAGE);
	return 0;
}

/*
 * Registers an MR of npages pages (≤ 64), pages alternating between the
 * two RAM regions in runs of 2 (scattered and region-crossing), with
 * iova `iova`.
 */
static int reg_mr(struct g *g, uint32_t pdn, uint32_t npages, uint64_t iova,
		  uint32_t access, struct gmr *mr)
{
	uint64_t l1, l2;
	int r;

	r = guest_ram_alloc_in(&g->d.ram, 0, 2 * PAGE, PAGE, &l1);
	if (r)
		return r;
	l2 = l1 + PAGE;
	for (uint32_t i = 0; i < npages; i++) {
		r = guest_ram_alloc_in(&g->d.ram, (i / 2) % 2, PAGE, PAGE,
				       &mr->pages[i]);
		if (r)
			return r;
	}
	guest_ram_write(&g->d.ram, l1, &l2, 8);
	guest_ram_write(&g->d.ram, l2, mr->pages, 8 * npages);
	return reg_user_mr(g, pdn, access, 0x7f0000000000ull, npages, iova, l1,
			   mr);
}

/* Copies between a buffer and the MR's bytes [off, off + len). */
static void mr_io(struct g *g, struct gmr *mr, uint32_t off, void *buf,
		  uint32_t len, bool write)
{
	uint8_t *p = buf;

	while (len > 0) {
		uint32_t in = off % PAGE, n = (uint32_t)PAGE - in;
		uint64_t gpa = mr->pages[off / PAGE] + in;

		n = n < len ? n : len;
		if (write)
			guest_ram_write(&g->d.ram, gpa, p, n);
		else
			guest_ram_read(&g->d.ram, gpa, p, n);
		p += n;
		off += n;
		len -= n;
	}
}

/* ---- GIDs ---- */

static int add_gid(struct g *g, const uint8_t gid[16], uint16_t index)
{
	struct virtio_rdma_cmd_add_gid c = { .gid_type = 2,
					     .index = index,
					     .port_num = 1 };

	memcpy(c.gid, gid, 16);
	return cmd(g, VIRTIO_RDMA_CMD_ADD_GID, &c, sizeof(c), NULL, 0);
}

static int modify(struct g *g, uint32_t qpn, uint32_t mask,
		  const struct virtio_rdma_qp_attr *a)
{
	struct virtio_rdma_cmd_modify_qp m = { .qpn = qpn, .attr_mask = mask };

	m.attr = *a;
	return cmd(g, VIRTIO_RDMA_CMD_MODIFY_QP, &m, sizeof(m), NULL, 0);
}

/* RESET -> INIT -> RTR -> RTS towards (dqpn, dgid). */
static int connect_qp(struct g *g, uint32_t qpn, uint32_t dqpn,
		      const uint8_t dgid[16])
{
	struct virtio_rdma_qp_attr a = { 0 };
	int r;

	a.qp_state = VIRTIO_RDMA_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = VIRTIO_RDMA_ACCESS_QP_SUPPORTED;
	r = modify(g, qpn,
		   VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_PKEY_INDEX |
			   VIRTIO_RDMA_QP_PORT | VIRTIO_RDMA_QP_ACCESS_FLAGS,
		   &a);
	if (r)
		return r;
	memset(&a, 0, sizeof(a));
	a.qp_state = VIRTIO_RDMA_QPS_RTR;
	a.path_mtu = 3;
	a.dest_qp_num = dqpn;
	a.rq_psn = 0x123;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 12;
	memcpy(a.ah_attr.grh.dgid, dgid, 16);
	a.ah_attr.grh.sgid_index = 0;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.ah_flags = VIRTIO_RDMA_AH_GRH;
	a.ah_attr.port_num = 1;
	r = modify(g, qpn,
		   VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_AV |
			   VIRTIO_RDMA_QP_PATH_MTU | VIRTIO_RDMA_QP_DEST_QPN |
			   VIRTIO_RDMA_QP_RQ_PSN |
			   VIRTIO_RDMA_QP_MAX_DEST_RD_ATOMIC |
			   VIRTIO_RDMA_QP_MIN_RNR_TIMER,
		   &a);
	if (r)
		return r;
	memset(&a, 0, sizeof(a));
	a.qp_state = VIRTIO_RDMA_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0x123;
	a.max_rd_atomic = 4;
	return modify(g, qpn,
		      VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_TIMEOUT |
			      VIRTIO_RDMA_QP_RETRY_CNT |
			      VIRTIO_RDMA_QP_RNR_RETRY | VIRTIO_RDMA_QP_SQ_PSN |
			      VIRTIO_RDMA_QP_MAX_QP_RD_ATOMIC,
		      &a);
}

/* ---- the fixture: two workers, two guests ---- */

static struct vt_proc wa, wb;
static struct g ga, gb;
static uint8_t gid_a[16], gid_b[16];

/* Both sides: PD, CQ, RC QP, a 16-page MR; QPs connected. */
struct side {
	uint32_t pdn;
	struct gcq cq;
	struct gqp qp;
	struct gmr mr;
};
static struct side sa, sb;

/* A receive of 64 bytes at the start of A's MR; kick as post_el(). */
static int post_recv_64(struct g *g, struct gqp *qp, uint64_t wr_id, bool kick)
{
	struct {
		struct virtio_rdma_rq_wqe h;
		struct virtio_rdma_sge s;
	} e = { { 1, 0, wr_id }, { sa.mr.iova, 64, sa.mr.lkey } };

	return post_el(g, qp, qp->rq, &e, sizeof(e), kick);
}

/* RESET -> INIT, local writes only. */
static int to_init(struct g *g, uint32_t qpn)
{
	struct virtio_rdma_qp_attr a = { 0 };

	a.qp_state = VIRTIO_RDMA_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = VIRTIO_RDMA_ACCESS_LOCAL_WRITE;
	return modify(g, qpn,
		      VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_PKEY_INDEX |
			      VIRTIO_RDMA_QP_PORT | VIRTIO_RDMA_QP_ACCESS_FLAGS,
		      &a);
}

#define ACC_ALL                                                                \
	(VIRTIO_RDMA_ACCESS_LOCAL_WRITE | VIRTIO_RDMA_ACCESS_REMOTE_WRITE |    \
	 VIRTIO_RDMA_ACCESS_REMOTE_READ | VIRTIO_RDMA_ACCESS_REMOTE_ATOMIC)

static int side_setup(struct g *g, struct side *s, uint64_t iova)
{
	int r = create_pd(g, &s->pdn);

	if (!r)
		r = create_cq(g, &s->cq);
	if (!r)
		r = create_qp(g, s->pdn, VIRTIO_RDMA_QPT_RC, s->cq.cqn,
			      s->cq.cqn, &s->qp);
	if (!r)
		r = reg_mr(g, s->pdn, 16, iova, ACC_ALL, &s->mr);
	return r;
}

/* ---- cases ---- */

static int t_config(void)
{
	struct virtio_rdma_config *c = &ga.cfg;

	printf("# max_qp %u max_cq %u max_cqe %u max_qp_wr %u max_mr %u "
	       "slots %u srq %u\n",
	       c->max_qp, c->max_cq, c->max_cqe, c->max_qp_wr, c->max_mr,
	       c->rg_num_slots, c->rg_max_srq);
	CHECK_EQ(c->rg_magic, RDMAGATE_VIRTIO_RDMA_MAGIC);
	CHECK_EQ(c->rg_abi_version, RDMAGATE_VIRTIO_RDMA_ABI_VERSION);
	CHECK_EQ(c->phys_port_cnt, 1);
	CHECK(c->max_qp > 0 && c->max_qp <= c->rg_num_slots);
	CHECK(c->max_cqe > 0 && c->max_cqe <= VIRTIO_RDMA_RING_SIZE);
	CHECK(c->max_qp_wr > 0 && c->max_qp_wr <= VIRTIO_RDMA_RING_SIZE);
	CHECK(c->max_send_sge <= VIRTIO_RDMA_MAX_SGE);
	CHECK(!(c->device_cap_flags & VIRTIO_RDMA_DEVICE_MEM_MGT_EXTENSIONS));
	CHECK_EQ(c->max_mw, 0);
	CHECK_EQ(c->max_fast_reg_page_list_len, 0);
	CHECK(virtio_rdma_num_vqs(c->max_cq, c->rg_num_slots) <= 256);
	return 0;
}

static int t_control(void)
{
	struct virtio_rdma_port_attr pa;
	struct virtio_rdma_cmd_query_pkey qk = { .port = 1, .index = 0 };
	struct virtio_rdma_cmd_del_gid dg = { .index = 5, .port_num = 1 };
	struct virtio_rdma_cmd_query_qp qq;
	struct virtio_rdma_qp_attr qa;
	uint32_t port = 1, pdn, n;
	uint16_t pkey;
	struct gcq cq;
	struct gqp qp;
	struct gmr mr;

	CHECK_EQ(
		cmd(&ga, VIRTIO_RDMA_CMD_QUERY_PORT, &port, 4, &pa, sizeof(pa)),
		0);
	printf("# port state %u active_mtu %u gid_tbl_len %d\n", pa.state,
	       pa.active_mtu, pa.gid_tbl_len);
	CHECK_EQ(pa.state, VIRTIO_RDMA_PORT_ACTIVE);
	CHECK(pa.gid_tbl_len > 0 && pa.gid_tbl_len <= 512);
	CHECK_EQ(pa.pkey_tbl_len, 1);
	CHECK_EQ(
		cmd(&ga, VIRTIO_RDMA_CMD_QUERY_PKEY, &qk, sizeof(qk), &pkey, 2),
		0);
	CHECK_EQ(pkey, 0xffff);
	/* a GID the host port does not have is refused */
	{
		uint8_t bogus[16] = { 0xfe, 0x80, [15] = 0x42 };

		CHECK_EQ(add_gid(&ga, bogus, 5), EADDRNOTAVAIL);
	}
	CHECK_EQ(add_gid(&ga, gid_a, 5), 0);
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_DEL_GID, &dg, sizeof(dg), NULL, 0),
		 0);
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_DEL_GID, &dg, sizeof(dg), NULL, 0),
		 ENOENT);

	CHECK_EQ(create_pd(&ga, &pdn), 0);
	CHECK_EQ(create_cq(&ga, &cq), 0);
	CHECK_EQ(create_qp(&ga, pdn, VIRTIO_RDMA_QPT_UD, cq.cqn, cq.cqn, &qp),
		 0);
	printf("# UD QP: host QPN %u slot %u\n", qp.qpn, qp.slot);
	CHECK(qp.qpn > 1);
	qq.qpn = qp.qpn;
	qq.attr_mask = VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_CAP;
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_QUERY_QP, &qq, sizeof(qq), &qa,
		     sizeof(qa)),
		 0);
	CHECK_EQ(qa.qp_state, VIRTIO_RDMA_QPS_RESET);
	CHECK(qa.cap.max_send_wr >= 32);
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = VIRTIO_RDMA_QPS_INIT;
	qa.port_num = 1;
	qa.qkey = 0x11111111;
	CHECK_EQ(modify(&ga, qp.qpn,
			VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_PKEY_INDEX |
				VIRTIO_RDMA_QP_PORT | VIRTIO_RDMA_QP_QKEY,
			&qa),
		 0);
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_QUERY_QP, &qq, sizeof(qq), &qa,
		     sizeof(qa)),
		 0);
	CHECK_EQ(qa.qp_state, VIRTIO_RDMA_QPS_INIT);
	/* in use: refused, nothing destroyed */
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_DESTROY_CQ, &cq.cqn, 4, NULL, 0),
		 EBUSY);
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_DESTROY_PD, &pdn, 4, NULL, 0), EBUSY);
	CHECK_EQ(reg_mr(&ga, pdn, 8, 0x10000, VIRTIO_RDMA_ACCESS_LOCAL_WRITE,
			&mr),
		 0);
	CHECK_EQ(mr.rkey, 0); /* no remote access: no rkey */
	{
		uint32_t dma[2] = { pdn, VIRTIO_RDMA_ACCESS_LOCAL_WRITE };
		struct virtio_rdma_rsp_mr r;

		CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_GET_DMA_MR, dma, 8, &r,
			     sizeof(r)),
			 0);
		CHECK(r.lkey != 0 && r.rkey == 0);
		CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_DEREG_MR, &r.mrn, 4, NULL, 0),
			 0);
	}
	n = 2;
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_REQ_NOTIFY_CQ,
		     (uint32_t[]){ cq.cqn, n }, 8, NULL, 0),
		 0);
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_DESTROY_QP, &qp.qpn, 4, NULL, 0), 0);
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_DESTROY_QP, &qp.qpn, 4, NULL, 0),
		 ENOENT);
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_DESTROY_PD, &pdn, 4, NULL, 0),
		 EBUSY); /* the MR */
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_DEREG_MR, &mr.mrn, 4, NULL, 0), 0);
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_DEREG_MR, &mr.mrn, 4, NULL, 0),
		 ENOENT);
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_DESTROY_CQ, &cq.cqn, 4, NULL, 0), 0);
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_DESTROY_PD, &pdn, 4, NULL, 0), 0);
	/* GSI: virtual QP 1 */
	CHECK_EQ(create_pd(&ga, &pdn), 0);
	CHECK_EQ(create_cq(&ga, &cq), 0);
	CHECK_EQ(create_qp(&ga, pdn, VIRTIO_RDMA_QPT_GSI, cq.cqn, cq.cqn, &qp),
		 0);
	CHECK_EQ(qp.qpn, 1);
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_DESTROY_QP, &qp.qpn, 4, NULL, 0), 0);
	return 0;
}

static int t_rc_setup(void)
{
	CHECK_EQ(add_gid(&ga, gid_a, 0), 0);
	CHECK_EQ(add_gid(&gb, gid_b, 0), 0);
	CHECK_EQ(side_setup(&ga, &sa, 0x100000000ull), 0);
	CHECK_EQ(side_setup(&gb, &sb, 0x200000000ull), 0);
	printf("# A: QPN %u lkey 0x%x rkey 0x%x; B: QPN %u lkey 0x%x rkey "
	       "0x%x\n",
	       sa.qp.qpn, sa.mr.lkey, sa.mr.rkey, sb.qp.qpn, sb.mr.lkey,
	       sb.mr.rkey);
	CHECK_EQ(connect_qp(&ga, sa.qp.qpn, sb.qp.qpn, gid_b), 0);
	CHECK_EQ(connect_qp(&gb, sb.qp.qpn, sa.qp.qpn, gid_a), 0);
	return 0;
}

static void pattern(uint8_t *b, uint32_t n, uint32_t seed)
{
	for (uint32_t i = 0; i < n; i++)
		b[i] = (uint8_t)(i * 13 + seed);
}

/* SEND of 5000 bytes (crossing pages and RAM regions) A -> B. */
static int t_send_recv(void)
{
	static uint8_t src[5000], dst[5000];
	struct virtio_rdma_cqe e;
	struct send_el s = { 0 };

	pattern(src, sizeof(src), 1);
	mr_io(&ga, &sa.mr, 3000, src, sizeof(src), true);
	memset(dst, 0, sizeof(dst));
	mr_io(&gb, &sb.mr, 100, dst, sizeof(dst), true);
	CHECK_EQ(post_recv(&gb, &sb.qp, 0xb0b, sb.mr.iova + 100, 6000,
			   sb.mr.lkey),
		 0);
	s.h.opcode = VIRTIO_RDMA_WR_SEND;
	s.h.send_flags = VIRTIO_RDMA_SEND_SIGNALED;
	s.h.wr_id = 0xa0a;
	s.s[0] =
		(struct virtio_rdma_sge){ sa.mr.iova + 3000, 2000, sa.mr.lkey };
	s.s[1] =
		(struct virtio_rdma_sge){ sa.mr.iova + 5000, 3000, sa.mr.lkey };
	CHECK_EQ(post_send(&ga, &sa.qp, &s, 2), 0);
	CHECK_EQ(reap_cqe(&ga, &sa.cq, &e), 0);
	CHECK_EQ(e.status, 0);
	CHECK_EQ(e.opcode, VIRTIO_RDMA_WC_SEND);
	CHECK_EQ(e.wr_id, 0xa0a);
	CHECK_EQ(e.qp_num, sa.qp.qpn);
	CHECK_EQ(reap_cqe(&gb, &sb.cq, &e), 0);
	CHECK_EQ(e.status, 0);
	CHECK_EQ(e.opcode, VIRTIO_RDMA_WC_RECV);
	CHECK_EQ(e.wr_id, 0xb0b);
	CHECK_EQ(e.byte_len, 5000);
	CHECK_EQ(e.qp_num, sb.qp.qpn);
	mr_io(&gb, &sb.mr, 100, dst, sizeof(dst), false);
	CHECK(!memcmp(src, dst, sizeof(src)));
	return 0;
}

static int t_write_imm_read(void)
{
	static uint8_t src[8192], dst[8192];
	struct virtio_rdma_cqe e;
	struct send_el s = { 0 };

	pattern(src, sizeof(src), 7);
	mr_io(&ga, &sa.mr, 0, src, sizeof(src), true);
	CHECK_EQ(post_recv(&gb, &sb.qp, 0xb1, sb.mr.iova, 0, sb.mr.lkey), 0);
	s.h.opcode = VIRTIO_RDMA_WR_RDMA_WRITE_WITH_IMM;
	s.h.send_flags = VIRTIO_RDMA_SEND_SIGNALED;
	s.h.wr_id = 0xa1;
	s.h.imm_data = 0x78563412;
	s.h.wr.rdma.remote_addr = sb.mr.iova + 4096 + 5;
	s.h.wr.rdma.rkey = sb.mr.rkey;
	s.s[0] = (struct virtio_rdma_sge){ sa.mr.iova, 8192, sa.mr.lkey };
	CHECK_EQ(post_send(&ga, &sa.qp, &s, 1), 0);
	CHECK_EQ(reap_cqe(&ga, &sa.cq, &e), 0);
	CHECK_EQ(e.status, 0);
	CHECK_EQ(e.opcode, VIRTIO_RDMA_WC_RDMA_WRITE);
	CHECK_EQ(reap_cqe(&gb, &sb.cq, &e), 0);
	CHECK_EQ(e.status, 0);
	CHECK_EQ(e.opcode, VIRTIO_RDMA_WC_RECV_RDMA_WITH_IMM);
	CHECK_EQ(e.imm_data, 0x78563412);
	CHECK(e.wc_flags & VIRTIO_RDMA_WC_WITH_IMM);
	CHECK_EQ(e.byte_len, 8192);
	mr_io(&gb, &sb.mr, 4096 + 5, dst, sizeof(dst), false);
	CHECK(!memcmp(src, dst, sizeof(src)));

	/* READ it back from B into A at another offset */
	memset(&s, 0, sizeof(s));
	s.h.opcode = VIRTIO_RDMA_WR_RDMA_READ;
	s.h.send_flags = VIRTIO_RDMA_SEND_SIGNALED;
	s.h.wr_id = 0xa2;
	s.h.wr.rdma.remote_addr = sb.mr.iova + 4096 + 5;
	s.h.wr.rdma.rkey = sb.mr.rkey;
	s.s[0] = (struct virtio_rdma_sge){ sa.mr.iova + 40000, 8192,
					   sa.mr.lkey };
	CHECK_EQ(post_send(&ga, &sa.qp, &s, 1), 0);
	CHECK_EQ(reap_cqe(&ga, &sa.cq, &e), 0);
	CHECK_EQ(e.status, 0);
	CHECK_EQ(e.opcode, VIRTIO_RDMA_WC_RDMA_READ);
	CHECK_EQ(e.wr_id, 0xa2);
	memset(dst, 0, sizeof(dst));
	mr_io(&ga, &sa.mr, 40000, dst, sizeof(dst), false);
	CHECK(!memcmp(src, dst, sizeof(src)));
	return 0;
}

static int t_atomics(void)
{
	uint64_t v = 1000, old = 0;
	struct virtio_rdma_cqe e;
	struct send_el s = { 0 };

	mr_io(&gb, &sb.mr, 16384, &v, 8, true);
	s.h.opcode = VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD;
	s.h.send_flags = VIRTIO_RDMA_SEND_SIGNALED;
	s.h.wr_id = 0xa3;
	s.h.wr.atomic.remote_addr = sb.mr.iova + 16384;
	s.h.wr.atomic.compare_add = 42;
	s.h.wr.atomic.rkey = sb.mr.rkey;
	s.s[0] = (struct virtio_rdma_sge){ sa.mr.iova + 20000, 8, sa.mr.lkey };
	CHECK_EQ(post_send(&ga, &sa.qp, &s, 1), 0);
	CHECK_EQ(reap_cqe(&ga, &sa.cq, &e), 0);
	CHECK_EQ(e.status, 0);
	CHECK_EQ(e.opcode, VIRTIO_RDMA_WC_FETCH_ADD);
	mr_io(&ga, &sa.mr, 20000, &old, 8, false);
	CHECK_EQ(old, 1000);
	mr_io(&gb, &sb.mr, 16384, &v, 8, false);
	CHECK_EQ(v, 1042);

	s.h.opcode = VIRTIO_RDMA_WR_ATOMIC_CMP_AND_SWP;
	s.h.wr_id = 0xa4;
	s.h.wr.atomic.compare_add = 1042;
	s.h.wr.atomic.swap = 7;
	CHECK_EQ(post_send(&ga, &sa.qp, &s, 1), 0);
	CHECK_EQ(reap_cqe(&ga, &sa.cq, &e), 0);
	CHECK_EQ(e.status, 0);
	CHECK_EQ(e.opcode, VIRTIO_RDMA_WC_COMP_SWAP);
	mr_io(&gb, &sb.mr, 16384, &v, 8, false);
	CHECK_EQ(v, 7);
	return 0;
}

/* Inline send; an unsignalled one completes silently before it. */
static int t_inline_unsignaled(void)
{
	struct {
		struct virtio_rdma_sq_wqe h;
		uint8_t data[100];
	} in = { 0 };
	struct virtio_rdma_cqe e;
	struct send_el s = { 0 };
	uint8_t got[100];

	CHECK_EQ(post_recv(&gb, &sb.qp, 0xb2, sb.mr.iova + 30000, 200,
			   sb.mr.lkey),
		 0);
	CHECK_EQ(post_recv(&gb, &sb.qp, 0xb3, sb.mr.iova + 31000, 200,
			   sb.mr.lkey),
		 0);
	s.h.opcode = VIRTIO_RDMA_WR_SEND;
	s.h.wr_id = 0xa5; /* not SIGNALED: no CQE on A */
	s.s[0] = (struct virtio_rdma_sge){ sa.mr.iova, 10, sa.mr.lkey };
	CHECK_EQ(post_send(&ga, &sa.qp, &s, 1), 0);
	in.h.opcode = VIRTIO_RDMA_WR_SEND;
	in.h.send_flags = VIRTIO_RDMA_SEND_SIGNALED | VIRTIO_RDMA_SEND_INLINE;
	in.h.wr_id = 0xa6;
	pattern(in.data, sizeof(in.data), 99);
	CHECK_EQ(post(&ga, &sa.qp, sa.qp.sq, &in, sizeof(in.h) + 100), 0);
	CHECK_EQ(reap_cqe(&ga, &sa.cq, &e), 0);
	CHECK_EQ(e.wr_id, 0xa6); /* the unsignalled one emitted nothing */
	CHECK_EQ(e.status, 0);
	/*
	 * both SQ descriptors are back, with no wait: the worker returns
	 * each before its CQE (and the earlier cases' before theirs, so
	 * post_el() reaped those)
	 */
	{
		struct guest_used u;
		unsigned int n = 0;

		while (guest_vq_reap(sa.qp.sq, &u) == 0)
			n++;
		CHECK_EQ(n, 2);
	}
	CHECK_EQ(reap_cqe(&gb, &sb.cq, &e), 0);
	CHECK_EQ(e.wr_id, 0xb2);
	CHECK_EQ(e.byte_len, 10);
	CHECK_EQ(reap_cqe(&gb, &sb.cq, &e), 0);
	CHECK_EQ(e.wr_id, 0xb3);
	CHECK_EQ(e.byte_len, 100);
	mr_io(&gb, &sb.mr, 31000, got, sizeof(got), false);
	CHECK(!memcmp(got, in.data, sizeof(got)));
	return 0;
}

/* Interrupts only when armed, one-shot. */
static int t_arming(void)
{
	uint32_t arm[2] = { sb.cq.cqn, VIRTIO_RDMA_NOTIFY_NEXT_COMP };
	struct virtio_rdma_cqe e;
	struct send_el s = { 0 };

	while (guest_vq_take_call(sb.cq.q) == 0)
		;
	s.h.opcode = VIRTIO_RDMA_WR_SEND;
	s.h.send_flags = VIRTIO_RDMA_SEND_SIGNALED;
	s.s[0] = (struct virtio_rdma_sge){ sa.mr.iova, 8, sa.mr.lkey };
	/* unarmed: a CQE but no interrupt */
	CHECK_EQ(post_recv(&gb, &sb.qp, 1, sb.mr.iova, 64, sb.mr.lkey), 0);
	CHECK_EQ(post_send(&ga, &sa.qp, &s, 1), 0);
	CHECK_EQ(reap_cqe(&ga, &sa.cq, &e), 0);
	CHECK_EQ(reap_cqe(&gb, &sb.cq, &e), 0);
	CHECK_EQ(guest_vq_take_call(sb.cq.q), -EAGAIN);
	/* armed: one interrupt */
	CHECK_EQ(cmd(&gb, VIRTIO_RDMA_CMD_REQ_NOTIFY_CQ, arm, 8, NULL, 0), 0);
	CHECK_EQ(post_recv(&gb, &sb.qp, 2, sb.mr.iova, 64, sb.mr.lkey), 0);
	CHECK_EQ(post_send(&ga, &sa.qp, &s, 1), 0);
	CHECK_EQ(guest_vq_wait_call(sb.cq.q, TMO), 0);
	CHECK_EQ(reap_cqe(&ga, &sa.cq, &e), 0);
	CHECK_EQ(reap_cqe(&gb, &sb.cq, &e), 0);
	CHECK_EQ(e.wr_id, 2);
	/* one-shot: the next completion does not interrupt */
	CHECK_EQ(post_recv(&gb, &sb.qp, 3, sb.mr.iova, 64, sb.mr.lkey), 0);
	CHECK_EQ(post_send(&ga, &sa.qp, &s, 1), 0);
	CHECK_EQ(reap_cqe(&ga, &sa.cq, &e), 0);
	CHECK_EQ(reap_cqe(&gb, &sb.cq, &e), 0);
	CHECK_EQ(guest_vq_take_call(sb.cq.q), -EAGAIN);
	return 0;
}

/* Hostile commands: each refused with its status, the worker serves on. */
static int t_hostile_cmds(void)
{
	struct virtio_rdma_cmd_reg_user_mr m = { 0 };
	struct virtio_rdma_rsp_mr rsp;
	uint64_t l1, entry;
	uint32_t port = 1, bad = 4242;
	struct virtio_rdma_port_attr pa;
	/* asserts on a guest-caused line: start a fresh rate window */
	vt_peer_log_window();

	CHECK_EQ(guest_ram_alloc_in(&ga.d.ram, 0, PAGE, PAGE, &l1), 0);
	m.pdn = sa.pdn;
	m.access_flags = VIRTIO_RDMA_ACCESS_LOCAL_WRITE;
	m.length = 8192;
	m.virt_addr = 0x5000;
	m.npages = 2;
	/* page table root outside guest RAM */
	m.pages = 64ull << 30;
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_REG_USER_MR, &m, sizeof(m), &rsp,
		     sizeof(rsp)),
		 EFAULT);
	/* a level-2 entry pointing outside guest RAM */
	entry = 64ull << 30;
	guest_ram_write(&ga.d.ram, l1, &entry, 8);
	m.pages = l1;
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_REG_USER_MR, &m, sizeof(m), &rsp,
		     sizeof(rsp)),
		 EFAULT);
	/* huge counts, zero pages */
	m.npages = 0x7fffffff;
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_REG_USER_MR, &m, sizeof(m), &rsp,
		     sizeof(rsp)),
		 EINVAL);
	m.npages = 0;
	m.length = 0;
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_REG_USER_MR, &m, sizeof(m), &rsp,
		     sizeof(rsp)),
		 EINVAL);
	/* unknown PD, CQ, QP, MR, SRQ */
	m.pdn = 99;
	m.npages = 2;
	m.length = 8192;
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_REG_USER_MR, &m, sizeof(m), &rsp,
		     sizeof(rsp)),
		 EINVAL);
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_DESTROY_CQ, &bad, 4, NULL, 0),
		 ENOENT);
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_DESTROY_QP, &bad, 4, NULL, 0),
		 ENOENT);
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_DEREG_MR, &bad, 4, NULL, 0), ENOENT);
	{
		struct gqp qp;

		CHECK_EQ(
			create_qp(&ga, sa.pdn, VIRTIO_RDMA_QPT_RC, 77, 77, &qp),
			ENOENT);
	}
	{
		uint32_t cqe = 1u << 20, cqn;

		CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_CREATE_CQ, &cqe, 4, &cqn, 4),
			 EINVAL);
	}
	/* destroy in use */
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_DESTROY_CQ, &sa.cq.cqn, 4, NULL, 0),
		 EBUSY);
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_DESTROY_PD, &sa.pdn, 4, NULL, 0),
		 EBUSY);
	/* an unknown command, a refused one */
	CHECK_EQ(cmd(&ga, 200, &port, 4, NULL, 0), EOPNOTSUPP);
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_CREATE_MR, (uint32_t[3]){ 1, 1, 1 },
		     12, NULL, 0),
		 EOPNOTSUPP);
	CHECK(vt_proc_log_has(&wa, "REG_USER_MR"));
	CHECK(vt_proc_alive(&wa));
	CHECK_EQ(
		cmd(&ga, VIRTIO_RDMA_CMD_QUERY_PORT, &port, 4, &pa, sizeof(pa)),
		0);
	return 0;
}

/* Hostile work requests: error CQEs, the worker and the good QP go on. */
/*
 * A guest flooding refused commands gets LOG_PEER_BURST lines per window
 * in the log, then a count of what was left out.
 */
static int t_log_flood(void)
{
	uint32_t mrn = 32343;
	int i, n;

	vt_peer_log_window();
	for (i = 0; i < 100; i++)
		CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_DEREG_MR, &mrn, 4, NULL, 0),
			 ENOENT);
	CHECK(vt_proc_alive(&wa));
	n = vt_proc_log_count(&wa, "unknown MR 32343");
	printf("# 100 refused commands: %d lines\n", n);
	CHECK(n >= 1 && n <= (int)LOG_PEER_BURST);
	vt_peer_log_window();
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_DEREG_MR, &mrn, 4, NULL, 0), ENOENT);
	CHECK(vt_proc_log_has(&wa,
			      "similar lines suppressed by the rate limit"));
	return 0;
}

static int t_hostile_wrs(void)
{
	struct virtio_rdma_cqe e;
	struct send_el s = { 0 };
	struct gqp qp;

	/* a post to a QP in RESET */
	CHECK_EQ(create_qp(&ga, sa.pdn, VIRTIO_RDMA_QPT_RC, sa.cq.cqn,
			   sa.cq.cqn, &qp),
		 0);
	s.h.opcode = VIRTIO_RDMA_WR_SEND;
	s.h.send_flags = VIRTIO_RDMA_SEND_SIGNALED;
	s.h.wr_id = 0xbad1;
	s.s[0] = (struct virtio_rdma_sge){ sa.mr.iova, 8, sa.mr.lkey };
	CHECK_EQ(post_send(&ga, &qp, &s, 1), 0);
	CHECK_EQ(reap_cqe(&ga, &sa.cq, &e), 0);
	CHECK_EQ(e.wr_id, 0xbad1);
	CHECK(e.status != 0);
	printf("# post to a RESET QP: status %u\n", e.status);
	/* a refused opcode, too many SGEs, a short element */
	s.h.opcode = VIRTIO_RDMA_WR_LOCAL_INV;
	s.h.wr_id = 0xbad2;
	CHECK_EQ(post_send(&ga, &qp, &s, 1), 0);
	CHECK_EQ(reap_cqe(&ga, &sa.cq, &e), 0);
	CHECK_EQ(e.wr_id, 0); /* not decoded: the guest wr_id is unknown */
	CHECK_EQ(e.status, VIRTIO_RDMA_WC_LOC_QP_OP_ERR);
	s.h.opcode = VIRTIO_RDMA_WR_SEND;
	CHECK_EQ(post(&ga, &qp, qp.sq, &s, 40), 0);
	CHECK_EQ(reap_cqe(&ga, &sa.cq, &e), 0);
	CHECK_EQ(e.status, VIRTIO_RDMA_WC_LOC_QP_OP_ERR);
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_DESTROY_QP, &qp.qpn, 4, NULL, 0), 0);

	/* a bad lkey on the connected QP: the host reports it */
	s.h.opcode = VIRTIO_RDMA_WR_RDMA_WRITE;
	s.h.wr_id = 0xbad3;
	s.h.wr.rdma.remote_addr = sb.mr.iova;
	s.h.wr.rdma.rkey = sb.mr.rkey;
	s.s[0] = (struct virtio_rdma_sge){ sa.mr.iova, 8, sa.mr.lkey ^ 0x5500 };
	CHECK_EQ(post_send(&ga, &sa.qp, &s, 1), 0);
	CHECK_EQ(reap_cqe(&ga, &sa.cq, &e), 0);
	CHECK_EQ(e.wr_id, 0xbad3);
	printf("# bad lkey: status %u\n", e.status);
	CHECK(e.status != 0);
	/* an SGE outside the MR */
	CHECK(vt_proc_alive(&wa));
	CHECK(vt_proc_alive(&wb));
	return 0;
}

/*
 * A CQ without buffers overflows: counted, logged, its QPs go to ERR.  B
 * reaps nothing: CQ_BUFS receive completions fill its CQ's CQ_BUFS
 * buffers, and the completion of B's own signaled WRITE then has nowhere
 * to go.  (Not CQ_BUFS + 1 receives: B's QP holds 32, and receives past
 * that are refused as soon as a worker takes them, which a spinning worker
 * does before any send arrives.)
 */
static int t_cq_overflow(void)
{
	struct virtio_rdma_qp_attr qa;
	struct virtio_rdma_cmd_query_qp qq = { sb.qp.qpn,
					       VIRTIO_RDMA_QP_STATE };
	struct send_el s = { 0 };
	struct virtio_rdma_cqe e;
	int i;
	/* asserts on a guest-caused line: start a fresh rate window */
	vt_peer_log_window();

	for (i = 0; i < CQ_BUFS; i++)
		CHECK_EQ(post_recv(&gb, &sb.qp, 100 + i, sb.mr.iova, 64,
				   sb.mr.lkey),
			 0);
	s.h.opcode = VIRTIO_RDMA_WR_SEND;
	s.s[0] = (struct virtio_rdma_sge){ sa.mr.iova, 8, sa.mr.lkey };
	for (i = 0; i < CQ_BUFS; i++) {
		s.h.send_flags =
			i == CQ_BUFS - 1 ? VIRTIO_RDMA_SEND_SIGNALED : 0;
		s.h.wr_id = 0x5e00 + i;
		CHECK_EQ(post_send(&ga, &sa.qp, &s, 1), 0);
	}
	/*
	 * every send found its receive: B's host CQ holds CQ_BUFS of them.
	 * A's CQ may still hold an earlier case's late completions: past them
	 */
	for (i = 0; i < 2 * CQ_BUFS; i++) {
		CHECK_EQ(reap_cqe(&ga, &sa.cq, &e), 0);
		if (e.wr_id == 0x5e00 + CQ_BUFS - 1)
			break;
		printf("# A's CQ: an earlier completion, wr_id %llu\n",
		       (unsigned long long)e.wr_id);
	}
	CHECK_EQ(e.wr_id, 0x5e00 + CQ_BUFS - 1);
	CHECK_EQ(e.status, VIRTIO_RDMA_WC_SUCCESS);
	s.h.opcode = VIRTIO_RDMA_WR_RDMA_WRITE;
	s.h.send_flags = VIRTIO_RDMA_SEND_SIGNALED;
	s.h.wr_id = 0x5eff;
	s.h.wr.rdma.remote_addr = sa.mr.iova + 4096;
	s.h.wr.rdma.rkey = sa.mr.rkey;
	s.s[0] = (struct virtio_rdma_sge){ sb.mr.iova, 8, sb.mr.lkey };
	CHECK_EQ(post_send(&gb, &sb.qp, &s, 1), 0);
	for (i = 0; i < TMO / 10 && !vt_proc_log_has(&wb, "overflowed"); i++)
		usleep(10000);
	CHECK(vt_proc_log_has(&wb, "overflowed"));
	CHECK_EQ(cmd(&gb, VIRTIO_RDMA_CMD_QUERY_QP, &qq, sizeof(qq), &qa,
		     sizeof(qa)),
		 0);
	CHECK_EQ(qa.qp_state, VIRTIO_RDMA_QPS_ERR);
	CHECK(vt_proc_alive(&wb));
	return 0;
}

/* UD: the AV travels in the element; host AHs cached by AV contents. */
static int ud_qp(struct g *g, struct side *sd, struct gqp *qp)
{
	struct virtio_rdma_qp_attr a = { 0 };
	int r = create_qp(g, sd->pdn, VIRTIO_RDMA_QPT_UD, sd->cq.cqn,
			  sd->cq.cqn, qp);

	if (r)
		return r;
	a.qp_state = VIRTIO_RDMA_QPS_INIT;
	a.port_num = 1;
	a.qkey = 0x1234;
	r = modify(g, qp->qpn,
		   VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_PKEY_INDEX |
			   VIRTIO_RDMA_QP_PORT | VIRTIO_RDMA_QP_QKEY,
		   &a);
	a.qp_state = VIRTIO_RDMA_QPS_RTR;
	if (!r)
		r = modify(g, qp->qpn, VIRTIO_RDMA_QP_STATE, &a);
	a.qp_state = VIRTIO_RDMA_QPS_RTS;
	a.sq_psn = 7;
	if (!r)
		r = modify(g, qp->qpn,
			   VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_SQ_PSN, &a);
	return r;
}

static int t_ud(void)
{
	struct gqp qa, qb;
	struct send_el s = { 0 };
	struct virtio_rdma_cqe e;
	uint8_t src[256], dst[256];
	/* asserts on a guest-caused line: start a fresh rate window */
	vt_peer_log_window();

	CHECK_EQ(ud_qp(&ga, &sa, &qa), 0);
	CHECK_EQ(ud_qp(&gb, &sb, &qb), 0);
	pattern(src, sizeof(src), 5);
	mr_io(&ga, &sa.mr, 50000, src, sizeof(src), true);
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(post_recv(&gb, &qb, 0xc0 + i, sb.mr.iova + 50000,
				   40 + 256, sb.mr.lkey),
			 0);
		memset(&s, 0, sizeof(s));
		s.h.opcode = i == 2 ? VIRTIO_RDMA_WR_SEND_WITH_IMM
				    : VIRTIO_RDMA_WR_SEND;
		s.h.imm_data = 0x01020304;
		s.h.send_flags = VIRTIO_RDMA_SEND_SIGNALED;
		s.h.wr_id = 0xd0 + i;
		s.h.wr.ud.remote_qpn = qb.qpn;
		s.h.wr.ud.remote_qkey = 0x1234;
		s.h.wr.ud.av.port = 1;
		s.h.wr.ud.av.pdn = sa.pdn;
		memcpy(s.h.wr.ud.av.dgid, gid_b, 16);
		s.h.wr.ud.av.gid_index = 0;
		s.h.wr.ud.av.hop_limit = 64;
		s.s[0] = (struct virtio_rdma_sge){ sa.mr.iova + 50000, 256,
						   sa.mr.lkey };
		/*
		 * UD is unreliable: a datagram that arrives before B's worker
		 * has posted the receive (its RQ kick is asynchronous) is
		 * dropped, as on hardware. Send again then, at most 3 times.
		 */
		for (int t = 0;; t++) {
			CHECK(t < 3);
			CHECK_EQ(post_send(&ga, &qa, &s, 1), 0);
			CHECK_EQ(reap_cqe(&ga, &sa.cq, &e), 0);
			CHECK_EQ(e.status, 0);
			CHECK_EQ(e.wr_id, 0xd0 + i);
			if (reap_cqe_tmo(&gb, &sb.cq, &e, 1000) == 0)
				break;
			printf("# UD message %d dropped; sending again\n", i);
		}
		CHECK_EQ(e.status, 0);
		CHECK_EQ(e.wr_id, 0xc0 + i);
		CHECK_EQ(e.byte_len, 40 + 256);
		CHECK_EQ(e.src_qp, qa.qpn);
		CHECK(e.wc_flags & VIRTIO_RDMA_WC_GRH);
		if (i == 2) {
			CHECK(e.wc_flags & VIRTIO_RDMA_WC_WITH_IMM);
			CHECK_EQ(e.imm_data, 0x01020304);
		}
		memset(dst, 0, sizeof(dst));
		mr_io(&gb, &sb.mr, 50000 + 40, dst, sizeof(dst), false);
		CHECK(!memcmp(src, dst, sizeof(src)));
	}
	/* an AV naming a GID index the guest never added */
	s.h.wr.ud.av.gid_index = 9;
	s.h.wr_id = 0xdead;
	CHECK_EQ(post_send(&ga, &qa, &s, 1), 0);
	CHECK_EQ(reap_cqe(&ga, &sa.cq, &e), 0);
	CHECK_EQ(e.wr_id, 0xdead);
	CHECK_EQ(e.status, VIRTIO_RDMA_WC_LOC_QP_OP_ERR);
	CHECK(vt_proc_log_has(&wa, "never added"));
	/* privileged Q_Keys stay with the emulated QP1 (issue 26 item 6) */
	{
		struct virtio_rdma_qp_attr a = { .qkey = 0x80010000u };

		CHECK_EQ(modify(&ga, qa.qpn, VIRTIO_RDMA_QP_QKEY, &a), EPERM);
		CHECK(vt_proc_log_has(&wa, "is privileged"));
		a.qkey = 0x4321; /* an ordinary one still reaches rxe */
		CHECK_EQ(modify(&ga, qa.qpn, VIRTIO_RDMA_QP_QKEY, &a), 0);
	}
	s.h.wr.ud.av.gid_index = 0;
	s.h.wr.ud.remote_qpn = 1;
	s.h.wr.ud.remote_qkey = 0x80010000u;
	s.h.wr_id = 0xbeef;
	CHECK_EQ(post_send(&ga, &qa, &s, 1), 0);
	CHECK_EQ(reap_cqe(&ga, &sa.cq, &e), 0);
	CHECK_EQ(e.wr_id, 0xbeef);
	CHECK_EQ(e.status, VIRTIO_RDMA_WC_LOC_QP_OP_ERR);
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_DESTROY_QP, &qa.qpn, 4, NULL, 0), 0);
	CHECK_EQ(cmd(&gb, VIRTIO_RDMA_CMD_DESTROY_QP, &qb.qpn, 4, NULL, 0), 0);
	return 0;
}

/* SRQ: receives posted on the SRQ's slot, completions on the QP's CQ. */
static int t_srq(void)
{
	struct virtio_rdma_cmd_create_srq cs = { sb.pdn, 64, 2, 0 };
	struct virtio_rdma_rsp_create_srq rs;
	struct virtio_rdma_cmd_modify_srq ms = { 0 };
	struct virtio_rdma_rsp_query_srq qs;
	struct virtio_rdma_cmd_create_qp_ext c = { 0 };
	struct virtio_rdma_rsp_create_qp rq;
	struct gqp srq = { 0 }, qa, qb = { 0 };
	struct send_el s = { 0 };
	struct virtio_rdma_cqe e;
	uint8_t src[64], dst[64];

	CHECK_EQ(cmd(&gb, VIRTIO_RDMA_CMD_CREATE_SRQ, &cs, sizeof(cs), &rs,
		     sizeof(rs)),
		 0);
	printf("# SRQ %u on slot %u\n", rs.srq_handle, rs.slot);
	srq.slot = rs.slot;
	srq.rq = gb.d.vq[virtio_rdma_rq_vq(gb.cfg.max_cq, rs.slot)];
	if (!srq.rq)
		CHECK_EQ(guest_dev_add_queue(
				 &gb.d,
				 virtio_rdma_rq_vq(gb.cfg.max_cq, rs.slot),
				 RING, &srq.rq),
			 0);
	CHECK_EQ(guest_ram_alloc_in(&gb.d.ram, 0, 2 * RING * 1024, PAGE,
				    &srq.wqes),
		 0);
	ms.srq_handle = rs.srq_handle;
	ms.attr_mask = VIRTIO_RDMA_SRQ_LIMIT;
	ms.srq_limit = 4;
	CHECK_EQ(cmd(&gb, VIRTIO_RDMA_CMD_MODIFY_SRQ, &ms, sizeof(ms), NULL, 0),
		 0);
	CHECK_EQ(cmd(&gb, VIRTIO_RDMA_CMD_QUERY_SRQ, &rs.srq_handle, 4, &qs,
		     sizeof(qs)),
		 0);
	CHECK(qs.max_wr >= 64);
	CHECK_EQ(qs.srq_limit, 4);
	c.base = (struct virtio_rdma_cmd_create_qp){
		.pdn = sb.pdn,
		.qp_type = VIRTIO_RDMA_QPT_RC,
		.sq_sig_type = VIRTIO_RDMA_SIG_REQ_WR,
		.max_send_wr = 8,
		.max_send_sge = 1,
		.send_cqn = sb.cq.cqn,
		.recv_cqn = sb.cq.cqn,
	};
	c.flags = VIRTIO_RDMA_CREATE_QP_F_SRQ;
	c.srq_handle = rs.srq_handle;
	CHECK_EQ(cmd(&gb, VIRTIO_RDMA_CMD_CREATE_QP, &c, sizeof(c), &rq,
		     sizeof(rq)),
		 0);
	qb.qpn = rq.qpn;
	CHECK_EQ(create_qp(&ga, sa.pdn, VIRTIO_RDMA_QPT_RC, sa.cq.cqn,
			   sa.cq.cqn, &qa),
		 0);
	CHECK_EQ(connect_qp(&ga, qa.qpn, qb.qpn, gid_b), 0);
	CHECK_EQ(connect_qp(&gb, qb.qpn, qa.qpn, gid_a), 0);
	CHECK_EQ(post_recv(&gb, &srq, 0xe1, sb.mr.iova + 60000, 64, sb.mr.lkey),
		 0);
	pattern(src, sizeof(src), 77);
	mr_io(&ga, &sa.mr, 60000, src, sizeof(src), true);
	s.h.opcode = VIRTIO_RDMA_WR_SEND;
	s.h.send_flags = VIRTIO_RDMA_SEND_SIGNALED;
	s.s[0] = (struct virtio_rdma_sge){ sa.mr.iova + 60000, 64, sa.mr.lkey };
	CHECK_EQ(post_send(&ga, &qa, &s, 1), 0);
	CHECK_EQ(reap_cqe(&ga, &sa.cq, &e), 0);
	CHECK_EQ(e.status, 0);
	CHECK_EQ(reap_cqe(&gb, &sb.cq, &e), 0);
	CHECK_EQ(e.status, 0);
	CHECK_EQ(e.wr_id, 0xe1);
	CHECK_EQ(e.qp_num, qb.qpn);
	CHECK_EQ(e.byte_len, 64);
	mr_io(&gb, &sb.mr, 60000, dst, sizeof(dst), false);
	CHECK(!memcmp(src, dst, sizeof(src)));
	/*
	 * The receive took the SRQ below its limit (4): the host raised
	 * SRQ_LIMIT_REACHED on its async fd, which the worker reads, maps to
	 * this SRQ and logs (Profile A has no event queue for the guest).
	 */
	CHECK(vt_proc_log_has(&wb,
			      "host async event SRQ limit reached on SRQ") ||
	      vt_proc_log_has(&wb,
			      "host async event SRQ limit reached on SRQ"));
	CHECK_EQ(cmd(&gb, VIRTIO_RDMA_CMD_DESTROY_SRQ, &rs.srq_handle, 4, NULL,
		     0),
		 EBUSY);
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_DESTROY_QP, &qa.qpn, 4, NULL, 0), 0);
	CHECK_EQ(cmd(&gb, VIRTIO_RDMA_CMD_DESTROY_QP, &qb.qpn, 4, NULL, 0), 0);
	CHECK_EQ(cmd(&gb, VIRTIO_RDMA_CMD_DESTROY_SRQ, &rs.srq_handle, 4, NULL,
		     0),
		 0);
	return 0;
}

/* GET_DMA_MR: SGEs carry GPAs with the one virtual DMA lkey. */
static int t_dma_mr(void)
{
	uint32_t req[2] = { sa.pdn, VIRTIO_RDMA_ACCESS_LOCAL_WRITE };
	struct virtio_rdma_rsp_mr r;
	struct virtio_rdma_cqe e;
	struct send_el s = { 0 };
	uint8_t src[3000], dst[3000];
	uint64_t lo, hi;

	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_GET_DMA_MR, req, 8, &r, sizeof(r)),
		 0);
	CHECK_EQ(guest_ram_alloc_in(&ga.d.ram, 0, 1000, 8, &lo), 0);
	CHECK_EQ(guest_ram_alloc_in(&ga.d.ram, 1, 2000, 8, &hi), 0);
	pattern(src, sizeof(src), 3);
	guest_ram_write(&ga.d.ram, lo, src, 1000);
	guest_ram_write(&ga.d.ram, hi, src + 1000, 2000);
	CHECK_EQ(post_recv(&gb, &sb.qp, 0xf1, sb.mr.iova + 20000, 4000,
			   sb.mr.lkey),
		 0);
	s.h.opcode = VIRTIO_RDMA_WR_SEND;
	s.h.send_flags = VIRTIO_RDMA_SEND_SIGNALED;
	s.h.wr_id = 0xf0;
	s.s[0] = (struct virtio_rdma_sge){ lo, 1000, r.lkey };
	s.s[1] = (struct virtio_rdma_sge){ hi, 2000, r.lkey };
	CHECK_EQ(post_send(&ga, &sa.qp, &s, 2), 0);
	CHECK_EQ(reap_cqe(&ga, &sa.cq, &e), 0);
	CHECK_EQ(e.status, 0);
	CHECK_EQ(reap_cqe(&gb, &sb.cq, &e), 0);
	CHECK_EQ(e.status, 0);
	CHECK_EQ(e.byte_len, 3000);
	mr_io(&gb, &sb.mr, 20000, dst, sizeof(dst), false);
	CHECK(!memcmp(src, dst, sizeof(src)));
	/* a second DMA MR on the same PD is refused */
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_GET_DMA_MR, req, 8, NULL, 12),
		 EEXIST);
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_DEREG_MR, &r.mrn, 4, NULL, 0), 0);
	return 0;
}

/*
 * One signalled RDMA work request on qp (one SGE), its completion reaped
 * from cq into e; 0, or the failed step's error.
 */
static int rdma_op(struct g *g, struct gqp *qp, struct gcq *cq, uint8_t opcode,
		   uint64_t wr_id, uint64_t raddr, uint32_t rkey,
		   struct virtio_rdma_sge sge, struct virtio_rdma_cqe *e)
{
	struct send_el s = { 0 };
	int r;

	s.h.opcode = opcode;
	s.h.send_flags = VIRTIO_RDMA_SEND_SIGNALED;
	s.h.wr_id = wr_id;
	s.h.wr.rdma.remote_addr = raddr;
	s.h.wr.rdma.rkey = rkey;
	s.s[0] = sge;
	r = post_send(g, qp, &s, 1);
	r = r ? r : reap_cqe(g, cq, e);
	return r ? r : (e->wr_id == wr_id ? 0 : -EPROTO);
}

/* A fresh RC pair A <-> B on the sides' PDs and CQs: a case may break it. */
static int fresh_pair(struct gqp *qa, struct gqp *qb)
{
	int r = create_qp(&ga, sa.pdn, VIRTIO_RDMA_QPT_RC, sa.cq.cqn, sa.cq.cqn,
			  qa);

	r = r ? r
	      : create_qp(&gb, sb.pdn, VIRTIO_RDMA_QPT_RC, sb.cq.cqn, sb.cq.cqn,
			  qb);
	r = r ? r : connect_qp(&ga, qa->qpn, qb->qpn, gid_b);
	return r ? r : connect_qp(&gb, qb->qpn, qa->qpn, gid_a);
}

/*
 * The DMA MR stands for all of guest RAM and the guest is told rkey 0: a
 * peer that uses its lkey as an rkey (on rxe they are equal) must not read
 * guest memory, whatever access flags the guest asked for.
 */
static int t_dma_mr_local(void)
{
	uint32_t req[2] = { sa.pdn, ACC_ALL };
	struct virtio_rdma_rsp_mr r;
	struct virtio_rdma_cqe e;
	uint8_t secret[256], got[256];
	struct gqp qa, qb;
	uint64_t gpa;

	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_GET_DMA_MR, req, 8, &r, sizeof(r)),
		 0);
	CHECK_EQ(r.rkey, 0);
	CHECK_EQ(guest_ram_alloc_in(&ga.d.ram, 0, sizeof(secret), 8, &gpa), 0);
	pattern(secret, sizeof(secret), 9);
	guest_ram_write(&ga.d.ram, gpa, secret, sizeof(secret));
	/* a fresh connected pair: the refused READ puts it in error */
	CHECK_EQ(fresh_pair(&qa, &qb), 0);
	memset(got, 0, sizeof(got));
	mr_io(&gb, &sb.mr, 0, got, sizeof(got), true);
	CHECK_EQ(rdma_op(&gb, &qb, &sb.cq, VIRTIO_RDMA_WR_RDMA_READ, 0xd1, gpa,
			 r.lkey,
			 (struct virtio_rdma_sge){ sb.mr.iova, sizeof(got),
						   sb.mr.lkey },
			 &e),
		 0);
	mr_io(&gb, &sb.mr, 0, got, sizeof(got), false);
	CHECK(memcmp(got, secret, sizeof(got)) != 0);
	CHECK_EQ(e.status, VIRTIO_RDMA_WC_REM_ACCESS_ERR);
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_DESTROY_QP, &qa.qpn, 4, NULL, 0), 0);
	CHECK_EQ(cmd(&gb, VIRTIO_RDMA_CMD_DESTROY_QP, &qb.qpn, 4, NULL, 0), 0);
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_DEREG_MR, &r.mrn, 4, NULL, 0), 0);
	return 0;
}

/*
 * Receives made available on a QP's ring without a kick, then MODIFY_QP:
 * the worker takes them then, but its answer to the command must still
 * go to the command's own chain on the control queue.
 */
static int t_modify_pending_recv(void)
{
	struct virtio_rdma_port_attr pa;
	uint32_t port = 1;
	struct guest_used u;
	unsigned int i, n = 0;
	struct gqp qp;

	CHECK_EQ(create_qp(&ga, sa.pdn, VIRTIO_RDMA_QPT_RC, sa.cq.cqn,
			   sa.cq.cqn, &qp),
		 0);
	/*
	 * The worker runs the QP's rings once it has read their vhost-user
	 * messages, which travel on another fd than the control kicks: a
	 * round trip and a pause make sure the receive ring is running.
	 */
	CHECK_EQ(
		cmd(&ga, VIRTIO_RDMA_CMD_QUERY_PORT, &port, 4, &pa, sizeof(pa)),
		0);
	vt_sleep_ms(100);
	for (i = 0; i < 3; i++)
		CHECK_EQ(post_recv_64(&ga, &qp, 0xc0 + i, false), 0);
	CHECK_EQ(to_init(&ga, qp.qpn), 0);
	/* the control queue answers in order, each command its own chain */
	CHECK_EQ(
		cmd(&ga, VIRTIO_RDMA_CMD_QUERY_PORT, &port, 4, &pa, sizeof(pa)),
		0);
	/* the three were taken: destroying the QP returns them */
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_DESTROY_QP, &qp.qpn, 4, NULL, 0), 0);
	for (i = 0; i < 100 && n < 3; i++) {
		while (guest_vq_reap(qp.rq, &u) == 0)
			n++;
		if (n < 3)
			vt_sleep_ms(20);
	}
	CHECK_EQ(n, 3);
	CHECK(vt_proc_alive(&wa));
	return 0;
}

/*
 * One kick for more elements than the worker takes per kick (32): the
 * rest must be taken in its next rounds without another kick.
 */
static int t_kick_budget(void)
{
	const unsigned int want = 50;
	struct guest_used u;
	unsigned int i, n = 0;
	struct gqp qp;

	CHECK_EQ(create_qp_n(&ga, sa.pdn, VIRTIO_RDMA_QPT_RC, sa.cq.cqn,
			     sa.cq.cqn, 64, &qp),
		 0);
	CHECK_EQ(to_init(&ga, qp.qpn), 0);
	for (i = 0; i < want; i++)
		CHECK_EQ(post_recv_64(&ga, &qp, 0x500 + i, i == want - 1), 0);
	vt_sleep_ms(300);
	/* all were posted to the host: destroying the QP returns them all */
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_DESTROY_QP, &qp.qpn, 4, NULL, 0), 0);
	for (i = 0; i < 100 && n < want; i++) {
		while (guest_vq_reap(qp.rq, &u) == 0)
			n++;
		if (n < want)
			vt_sleep_ms(20);
	}
	CHECK_EQ(n, want);
	return 0;
}

/* Lines of /proc/PID/maps that map a memfd (guest RAM). */
static int memfd_maps(pid_t pid)
{
	char path[64], line[512];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "memfd:") != NULL;
	fclose(f);
	return n;
}

/*
 * Mappings of a memfd (guest RAM: the regions and the MRs' own mappings)
 * in /proc/PID/smaps without "dd" in their VmFlags, or -1.
 */
static int memfd_dumpable(pid_t pid)
{
	char path[64], line[512];
	bool in_memfd = false;
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "VmFlags:", 8)) {
			n += in_memfd && !strstr(line, " dd");
			in_memfd = false;
		} else if (strchr(line, '-') && strstr(line, "memfd:")) {
			in_memfd = true;
		}
	}
	fclose(f);
	return n;
}

/* A SIGSYS core must not write guest RAM (an MR's mapping) to disk. */
static int t_mr_dontdump(void)
{
	CHECK(memfd_maps(wa.pid) > 1); /* the regions and sa's MR */
	CHECK_EQ(memfd_dumpable(wa.pid), 0);
	CHECK_EQ(memfd_dumpable(wb.pid), 0);
	return 0;
}

static int set_hugepages(long n)
{
	FILE *f = fopen("/proc/sys/vm/nr_hugepages", "we");

	if (!f)
		return -errno;
	fprintf(f, "%ld\n", n);
	return fclose(f) ? -errno : 0;
}

/* An MR of npages contiguous pages at gpa (any count, 2-level table). */
static int reg_contig(struct g *g, uint32_t pdn, uint64_t gpa, uint32_t npages,
		      uint64_t iova, struct gmr *mr)
{
	uint32_t nl2 = (npages + 511) / 512;
	uint64_t l1;
	int r = guest_ram_alloc_in(&g->d.ram, 0, (1 + nl2) * PAGE, PAGE, &l1);

	if (r)
		return r;
	for (uint32_t k = 0; k < nl2; k++) {
		uint64_t l2 = l1 + (1 + k) * PAGE;

		guest_ram_write(&g->d.ram, l1 + 8 * k, &l2, 8);
	}
	for (uint32_t i = 0; i < npages; i++) {
		uint64_t p = gpa + i * PAGE;

		guest_ram_write(&g->d.ram, l1 + PAGE + 8ull * i, &p, 8);
	}
	return reg_user_mr(g, pdn, ACC_ALL, 0x10000, npages, iova, l1, mr);
}

/*
 * Disconnect unmaps everything; then a guest with hugetlb RAM: 2 MiB runs
 * register (loopback RDMA_WRITE verified), unaligned runs are refused.
 */
/*
 * The VMM takes a RAM region out of the table (REM_MEM_REG): an MR with
 * pages there is revoked before the worker unmaps it. A peer's RDMA WRITE
 * with its old rkey completes with REM_ACCESS_ERR and writes nothing into
 * the memory the guest gave up; the worker says what it revoked. The
 * region is given back at the end (the MR stays dead).
 */
static int t_mem_gone(void)
{
	static uint8_t src[4096], got[4096], before[4096];
	struct virtio_rdma_cqe e;
	struct virtio_rdma_sge sge = { sa.mr.iova, sizeof(src), sa.mr.lkey };
	struct gqp qa, qb;
	struct gmr m;

	vt_peer_log_window();
	CHECK_EQ(reg_mr(&gb, sb.pdn, 4, 0x300000000ull, ACC_ALL, &m), 0);
	CHECK(m.pages[2] >= RAM_HI); /* pages 2 and 3: the second region */
	CHECK_EQ(fresh_pair(&qa, &qb), 0);
	/* a WRITE into the page in the second region works while it is there */
	pattern(src, sizeof(src), 11);
	mr_io(&ga, &sa.mr, 0, src, sizeof(src), true);
	CHECK_EQ(rdma_op(&ga, &qa, &sa.cq, VIRTIO_RDMA_WR_RDMA_WRITE, 0xe1,
			 m.iova + 2 * PAGE, m.rkey, sge, &e),
		 0);
	CHECK_EQ(e.status, 0);
	mr_io(&gb, &m, 2 * PAGE, got, sizeof(got), false);
	CHECK(!memcmp(got, src, sizeof(got)));

	/*
	 * the VMM removes the second region: the MRs with pages there are
	 * revoked (this one, and B's side MR from t_rc_setup)
	 */
	CHECK_EQ(vhost_client_rem_mem_reg(&gb.d.vc, &gb.d.ram, 1), 0);
	CHECK(vt_proc_log_has(&wb, "memory registrations revoked"));
	mr_io(&gb, &m, 2 * PAGE, before, sizeof(before), false);
	pattern(src, sizeof(src), 12);
	mr_io(&ga, &sa.mr, 0, src, sizeof(src), true);
	CHECK_EQ(rdma_op(&ga, &qa, &sa.cq, VIRTIO_RDMA_WR_RDMA_WRITE, 0xe2,
			 m.iova + 2 * PAGE, m.rkey, sge, &e),
		 0);
	CHECK_EQ(e.status, VIRTIO_RDMA_WC_REM_ACCESS_ERR);
	mr_io(&gb, &m, 2 * PAGE, got, sizeof(got), false);
	CHECK(!memcmp(got, before, sizeof(got)));

	CHECK_EQ(vhost_client_add_mem_reg(&gb.d.vc, &gb.d.ram, 1), 0);
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_DESTROY_QP, &qa.qpn, 4, NULL, 0), 0);
	CHECK_EQ(cmd(&gb, VIRTIO_RDMA_CMD_DESTROY_QP, &qb.qpn, 4, NULL, 0), 0);
	CHECK_EQ(cmd(&gb, VIRTIO_RDMA_CMD_DEREG_MR, &m.mrn, 4, NULL, 0), 0);
	return 0;
}

static int t_disconnect_hugetlb(void)
{
	struct vhost_client_opts o = {
		.protocol_features = VHOST_CLIENT_PROTOCOL_FEATURES,
		.config_size = sizeof(struct virtio_rdma_config),
		.timeout_ms = TMO,
	};
	uint64_t buf1, buf2, odd;
	struct side h = { 0 };
	struct gqp q2;
	struct gmr m1, m2, bad;
	struct send_el s = { 0 };
	struct virtio_rdma_cqe e;
	static uint8_t src[1 << 20], dst[1 << 20];
	int before = memfd_maps(wa.pid), after = -1;
	/* asserts on a guest-caused line: start a fresh rate window */
	vt_peer_log_window();

	guest_dev_release(&ga.d);
	for (int t = 0; t < 100 && after != 0; t++) {
		vt_sleep_ms(10);
		after = memfd_maps(wa.pid);
	}
	printf("# worker A memfd mappings: %d with the guest, %d after it "
	       "left\n",
	       before, after);
	CHECK(before > 2);
	CHECK_EQ(after, 0);
	CHECK(vt_proc_log_has(&wa, "device stats"));

	if (set_hugepages(64)) {
		printf("# cannot reserve huge pages\n");
		return 1;
	}
	guest_dev_init(&ga.d);
	CHECK_EQ(guest_dev_connect(&ga.d, wa.sock, &o), 0);
	CHECK(guest_ram_add_region(&ga.d.ram, 0, RAM_SIZE, GUEST_PAGE_4K) >= 0);
	CHECK(guest_ram_add_region(&ga.d.ram, RAM_HI, 32ull << 20,
				   GUEST_PAGE_2M) >= 0);
	CHECK_EQ(guest_dev_start(&ga.d,
				 (1ull << GUEST_F_VERSION_1) |
					 (1ull << GUEST_F_RING_INDIRECT_DESC)),
		 0);
	CHECK_EQ(guest_dev_add_queue(&ga.d, 0, RING, &ga.ctrl), 0);
	CHECK_EQ(guest_dev_driver_ok(&ga.d), 0);
	CHECK_EQ(guest_ram_alloc_in(&ga.d.ram, 0, PAGE, PAGE, &ga.scratch), 0);
	CHECK_EQ(add_gid(&ga, gid_a, 0), 0);
	/* (side_setup's scattered 4 KiB MR would be refused here) */
	CHECK_EQ(create_pd(&ga, &h.pdn), 0);
	CHECK_EQ(create_cq(&ga, &h.cq), 0);
	CHECK_EQ(create_qp(&ga, h.pdn, VIRTIO_RDMA_QPT_RC, h.cq.cqn, h.cq.cqn,
			   &h.qp),
		 0);
	CHECK_EQ(create_qp(&ga, h.pdn, VIRTIO_RDMA_QPT_RC, h.cq.cqn, h.cq.cqn,
			   &q2),
		 0);
	CHECK_EQ(connect_qp(&ga, h.qp.qpn, q2.qpn, gid_a), 0);
	CHECK_EQ(connect_qp(&ga, q2.qpn, h.qp.qpn, gid_a), 0);

	CHECK_EQ(
		guest_ram_alloc_in(&ga.d.ram, 1, 4ull << 20, 2ull << 20, &buf1),
		0);
	CHECK_EQ(
		guest_ram_alloc_in(&ga.d.ram, 1, 4ull << 20, 2ull << 20, &buf2),
		0);
	CHECK_EQ(reg_contig(&ga, h.pdn, buf1, 1024, 0x40000000, &m1), 0);
	CHECK_EQ(reg_contig(&ga, h.pdn, buf2, 1024, 0x80000000, &m2), 0);
	CHECK(vt_proc_log_has(&wa, "in 1 runs"));
	/* a run that starts 4 KiB into a huge page is refused */
	odd = buf1 + PAGE;
	CHECK_EQ(reg_contig(&ga, h.pdn, odd, 16, 0x90000000, &bad), EINVAL);
	CHECK(vt_proc_log_has(&wa, "hugetlb"));

	pattern(src, sizeof(src), 11);
	guest_ram_write(&ga.d.ram, buf1 + (1 << 20), src, sizeof(src));
	s.h.opcode = VIRTIO_RDMA_WR_RDMA_WRITE;
	s.h.send_flags = VIRTIO_RDMA_SEND_SIGNALED;
	s.h.wr_id = 0x77;
	s.h.wr.rdma.remote_addr = m2.iova + (3 << 20) - 100;
	s.h.wr.rdma.rkey = m2.rkey;
	s.s[0] = (struct virtio_rdma_sge){ m1.iova + (1 << 20), sizeof(src),
					   m1.lkey };
	CHECK_EQ(post_send(&ga, &h.qp, &s, 1), 0);
	CHECK_EQ(reap_cqe(&ga, &h.cq, &e), 0);
	CHECK_EQ(e.status, 0);
	guest_ram_read(&ga.d.ram, buf2 + (3 << 20) - 100, dst, sizeof(dst));
	CHECK(!memcmp(src, dst, sizeof(src)));
	return 0;
}

/* A figure, not a pass criterion: 64-byte SEND ping-pong round trips. */
static int t_pingpong(void)
{
	const unsigned int iters = 200;
	struct virtio_rdma_cqe e;
	struct send_el s = { 0 };
	uint64_t t0, t1;

	s.h.opcode = VIRTIO_RDMA_WR_SEND;
	s.h.send_flags = VIRTIO_RDMA_SEND_SIGNALED;
	t0 = mono_us();
	for (unsigned int i = 0; i < iters; i++) {
		CHECK_EQ(post_recv(&gb, &sb.qp, i, sb.mr.iova, 64, sb.mr.lkey),
			 0);
		CHECK_EQ(post_recv(&ga, &sa.qp, i, sa.mr.iova + 8192, 64,
				   sa.mr.lkey),
			 0);
		s.s[0] = (struct virtio_rdma_sge){ sa.mr.iova + 4096, 64,
						   sa.mr.lkey };
		CHECK_EQ(post_send(&ga, &sa.qp, &s, 1), 0);
		CHECK_EQ(reap_cqe(&gb, &sb.cq, &e), 0);
		CHECK_EQ(e.status, 0);
		s.s[0] = (struct virtio_rdma_sge){ sb.mr.iova + 4096, 64,
						   sb.mr.lkey };
		CHECK_EQ(post_send(&gb, &sb.qp, &s, 1), 0);
		CHECK_EQ(reap_cqe(&ga, &sa.cq, &e), 0);
		CHECK_EQ(e.status, 0);
		/* the two send completions */
		CHECK_EQ(reap_cqe(&ga, &sa.cq, &e), 0);
		CHECK_EQ(reap_cqe(&gb, &sb.cq, &e), 0);
	}
	t1 = mono_us();
	printf("# %u round trips of 64-byte SENDs between the two workers: "
	       "%.1f us each (TCG VM, %s)\n",
	       iters, (double)(t1 - t0) / iters,
	       extra_args[0] ? extra_args[0] : "completion channel");
	return 0;
}

/*
 * A guest registering scattered memory over and over hits the worker's
 * mapping budget (ENOMEM) instead of exhausting vm.max_map_count; DEREG_MR
 * gives the budget back.
 */
static int t_mapping_budget(void)
{
	const uint32_t npages = 4096; /* alternating regions: 4096 runs */
	struct virtio_rdma_cmd_reg_user_mr c = { 0 };
	struct virtio_rdma_rsp_mr rsp;
	uint32_t mrns[8], n = 0, i;
	uint64_t l1;
	int r = 0;

	CHECK_EQ(guest_ram_alloc_in(&ga.d.ram, 0, 9 * PAGE, PAGE, &l1), 0);
	for (i = 0; i < 8; i++) {
		uint64_t l2 = l1 + (1 + i) * PAGE;

		guest_ram_write(&ga.d.ram, l1 + 8 * i, &l2, 8);
	}
	for (i = 0; i < npages; i++) {
		uint64_t p = (i % 2 ? RAM_HI : PAGE) + (i / 2) * PAGE;

		guest_ram_write(&ga.d.ram, l1 + PAGE + 8ull * i, &p, 8);
	}
	c.pdn = sa.pdn;
	c.access_flags = VIRTIO_RDMA_ACCESS_LOCAL_WRITE;
	c.length = npages * PAGE;
	c.virt_addr = 0x6000000000ull;
	c.pages = l1;
	c.npages = npages;
	vt_peer_log_window(); /* the refusal's line is not rate limited away */
	while (n < 8) {
		r = cmd(&ga, VIRTIO_RDMA_CMD_REG_USER_MR, &c, sizeof(c), &rsp,
			sizeof(rsp));
		if (r)
			break;
		mrns[n++] = rsp.mrn;
	}
	printf("# %u MRs of %u scattered pages registered, then status %d\n", n,
	       npages, r);
	CHECK_EQ(r, ENOMEM);
	CHECK_EQ(n, 5);
	CHECK(vt_proc_log_has(&wa, "host mappings"));
	for (i = 0; i < n; i++)
		CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_DEREG_MR, &mrns[i], 4, NULL,
			     0),
			 0);
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_REG_USER_MR, &c, sizeof(c), &rsp,
		     sizeof(rsp)),
		 0);
	CHECK_EQ(cmd(&ga, VIRTIO_RDMA_CMD_DEREG_MR, &rsp.mrn, 4, NULL, 0), 0);
	return 0;
}

/* Runs the worker with argv, waits for its exit; its stderr in *ret_log. */
static int run_worker(char *const argv[], char *log, size_t len)
{
	int p[2], status;
	ssize_t n, got = 0;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid == 0) {
		dup2(p[1], 2);
		execv(worker_path, argv);
		_exit(127);
	}
	close(p[1]);
	while (got < (ssize_t)len - 1 &&
	       (n = read(p[0], log + got, len - 1 - (size_t)got)) > 0)
		got += n;
	log[got] = 0;
	close(p[0]);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/*
 * Device open: a missing device is one line and a non-zero exit; no
 * device option at all is refused. Limits: the config advertises them and
 * every table is bounded (ENOSPC past the limit).
 */
static int t_open_and_limits(void)
{
	char *bad[] = { (char *)worker_path, "--socket", "/tmp/x.sock",
			"--device",	     "nosuch0",	 NULL };
	char *none[] = { (char *)worker_path, "--socket", "/tmp/x.sock", NULL };
	char *lim[] = { "--max-qp", "2", "--max-cq",  "3",  "--max-mr", "1",
			"--max-pd", "1", "--max-cqe", "32", NULL };
	char log[1024];
	struct vt_proc w;
	struct g g;
	struct gcq cq;
	struct gqp q1, q2, q3;
	struct gmr m1, m2;
	uint32_t pdn, pdn2, cqe = 33, cqn;
	char **saved = extra_args;
	int st;

	st = run_worker(bad, log, sizeof(log));
	printf("# exit %d: %s", st, log);
	CHECK_EQ(st, 1);
	CHECK(strstr(log, "no verbs device named 'nosuch0'"));
	CHECK(strchr(log, '\n') == log + strlen(log) - 1); /* one line */
	st = run_worker(none, log, sizeof(log));
	printf("# exit %d: %s", st, log);
	CHECK_EQ(st, 1);
	CHECK(strstr(log, "no device to serve"));

	extra_args = lim;
	st = worker_start(&w, getenv("RDMAGATE_VM_DEV0"), "vm-lim");
	extra_args = saved;
	CHECK_EQ(st, 0);
	CHECK_EQ(g_open(&g, &w), 0);
	CHECK_EQ(g.cfg.max_qp, 2);
	CHECK_EQ(g.cfg.max_cq, 3);
	CHECK_EQ(g.cfg.max_mr, 1);
	CHECK_EQ(g.cfg.max_pd, 1);
	CHECK_EQ(g.cfg.max_cqe, 32);
	CHECK_EQ(cmd(&g, VIRTIO_RDMA_CMD_CREATE_CQ, &cqe, 4, &cqn, 4), EINVAL);
	CHECK_EQ(create_pd(&g, &pdn), 0);
	CHECK_EQ(create_pd(&g, &pdn2), ENOSPC);
	CHECK_EQ(create_cq(&g, &cq), 0);
	CHECK_EQ(create_qp(&g, pdn, VIRTIO_RDMA_QPT_RC, cq.cqn, cq.cqn, &q1),
		 0);
	CHECK_EQ(create_qp(&g, pdn, VIRTIO_RDMA_QPT_UD, cq.cqn, cq.cqn, &q2),
		 0);
	CHECK_EQ(create_qp(&g, pdn, VIRTIO_RDMA_QPT_RC, cq.cqn, cq.cqn, &q3),
		 ENOSPC);
	CHECK_EQ(
		reg_mr(&g, pdn, 2, 0x1000, VIRTIO_RDMA_ACCESS_LOCAL_WRITE, &m1),
		0);
	CHECK_EQ(
		reg_mr(&g, pdn, 2, 0x9000, VIRTIO_RDMA_ACCESS_LOCAL_WRITE, &m2),
		ENOSPC);
	guest_dev_release(&g.d);
	vt_sleep_ms(50);
	vt_proc_stop(&w, false);
	return 0;
}

struct tcase {
	const char *name;
	int (*fn)(void);
};

static const struct tcase cases[] = {
	{ "config space is Profile A with rdmagate's limits", t_config },
	{ "device open errors; --max-* limits advertised and enforced",
	  t_open_and_limits },
	{ "control path: every object, in-use and unknown refused", t_control },
	{ "RC QPs of two workers connect (rxe0 <-> rxe1)", t_rc_setup },
	{ "SEND/RECV across pages and RAM regions, data verified",
	  t_send_recv },
	{ "RDMA_WRITE_WITH_IMM and RDMA_READ, data verified",
	  t_write_imm_read },
	{ "FETCH_AND_ADD and CMP_AND_SWP", t_atomics },
	{ "inline send; unsignalled WR emits no CQE; descriptors returned",
	  t_inline_unsignaled },
	{ "CQ interrupts only when armed, one-shot", t_arming },
	{ "SEND ping-pong latency (a figure)", t_pingpong },
	{ "UD with the AV in the element (AH cache), immediate data", t_ud },
	{ "SRQ: create/modify/query, receives, limit event, destroy in use",
	  t_srq },
	{ "GET_DMA_MR: GPAs in two RAM regions with one lkey", t_dma_mr },
	{ "the DMA MR has no remote access, whatever the guest asked",
	  t_dma_mr_local },
	{ "MR mappings of guest RAM are kept out of core dumps",
	  t_mr_dontdump },
	{ "MODIFY_QP with receives waiting unkicked: the answer is its own",
	  t_modify_pending_recv },
	{ "a kick's elements past the per-kick budget taken without a kick",
	  t_kick_budget },
	{ "hostile commands refused, worker keeps serving", t_hostile_cmds },
	{ "a flood of refused commands: its log lines are rate limited",
	  t_log_flood },
	{ "mapping budget: scattered MRs refused with ENOMEM, not a crash",
	  t_mapping_budget },
	{ "CQ overflow: counted, logged, QPs to error", t_cq_overflow },
	{ "hostile work requests complete in error", t_hostile_wrs },
	{ "a RAM region the VMM removes: MRs over it revoked (REM_ACCESS_ERR)",
	  t_mem_gone },
	{ "disconnect unmaps all; hugetlb RAM in 2 MiB runs, unaligned refused",
	  t_disconnect_hugetlb },
};

int main(int argc, char **argv)
{
	const char *d0 = getenv("RDMAGATE_VM_DEV0"),
		   *d1 = getenv("RDMAGATE_VM_DEV1");
	unsigned int n = sizeof(cases) / sizeof(cases[0]), i, failed = 0;
	bool prev_ok = true;

	if (vt_worker_argv(argc, argv, &worker_path, &extra_args))
		return 2;
	if (!getenv("RDMAGATE_VM") || !d0 || !d1) {
		printf("1..0 # SKIP needs the test VM with two rxe devices "
		       "(tests/vm/rdmagate-vm -n 2)\n");
		return 77;
	}
	printf("1..%u\n", n);
	if (vt_gid_find(d0, true, gid_a) < 0 ||
	    vt_gid_find(d1, true, gid_b) < 0) {
		printf("Bail out! no RoCE v2 IPv4 GID on %s/%s\n", d0, d1);
		return 1;
	}
	if (worker_start(&wa, d0, "vm-a") || worker_start(&wb, d1, "vm-b") ||
	    g_open(&ga, &wa) || g_open(&gb, &wb)) {
		printf("Bail out! cannot start the workers\n");
		vt_proc_stop(&wa, true);
		vt_proc_stop(&wb, true);
		return 1;
	}
	for (i = 0; i < n; i++) {
		int r = prev_ok || i < 3 ? cases[i].fn() : 1;

		printf("%sok %u - %s\n", r ? "not " : "", i + 1, cases[i].name);
		if (r)
			failed++;
		if (i == 2)
			prev_ok = r == 0;
	}
	guest_dev_release(&ga.d);
	guest_dev_release(&gb.d);
	vt_sleep_ms(100);
	vt_proc_stop(&wa, failed);
	vt_proc_stop(&wb, failed);
	return failed ? 1 : 0;
}
