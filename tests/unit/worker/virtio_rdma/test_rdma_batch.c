// SPDX-License-Identifier: MIT
/*
 * The data path's rounds, counted: the virtio-rdma frontend and the verbs
 * backend over a fake host HCA (ibv_post_send / ibv_post_recv /
 * ibv_poll_cq are inline calls through the context's ops table, so a fake
 * context counts them) and split rings in a memfd guest RAM.  One kick's
 * elements must reach the host as one list, a list the host refuses at
 * position k must complete the first k and report the rest in order, and
 * a round of completions must signal each touched ring once.  While the
 * worker's loop spins (adaptive polling) the rings are polled with kicks
 * off, and kicks come back on when the spin ends.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <cmocka.h>

#define RDMAGATE_PROBES_DEFINE /* the probes' semaphores, as main.c has */
#include "common/log.h"
#include "common/probes.h"
#include "tests/unit/guest_ram.h"
#include "worker/backend/be_impl.h"
#include "worker/virtio_rdma/vrdma.h"

/* Guest-physical layout: one region [0, 1 MiB); rings of NUM entries. */
#define RAM	 0x100000ull
#define SQ_DESC	 0x1000ull
#define SQ_AVAIL 0x2000ull
#define SQ_USED	 0x3000ull
#define CQ_DESC	 0x4000ull
#define CQ_AVAIL 0x5000ull
#define CQ_USED	 0x6000ull
#define RQ_DESC	 0x7000ull
#define RQ_AVAIL 0x8000ull
#define RQ_USED	 0x9000ull
#define WQE_BUF	 0x10000ull /* 128 bytes per element */
#define CQE_BUF	 0x20000ull /* 64 bytes per CQE buffer */
#define NUM	 64
#define QPN	 100

/* ---- the fake host HCA ---- */

static struct {
	unsigned int posts, recv_posts, polls;
	unsigned int longest; /* WRs in the longest list posted */
	int fail_at;	      /* refuse the list at this WR (-1: never) */
	uint64_t q[4 * NUM];  /* wr_ids on the host queue, oldest first */
	unsigned int qn;
	uint16_t used_flags_at_post; /* the SQ ring's flags at post time */
} hw;

static struct ring *post_ring; /* whose flags the fake samples */

/*
 * The host QP moved to the error state (a CQ overflow), with the SQ's used
 * index at that moment: the overflow is found while the CQE is written.
 */
static struct {
	unsigned int calls;
	enum ibv_qp_state state;
	uint16_t sq_used[8];
} modify;

int __wrap_ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
int __wrap_ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	(void)qp;
	assert_int_equal(mask, IBV_QP_STATE);
	modify.state = attr->qp_state;
	if (modify.calls < 8 && post_ring)
		modify.sq_used[modify.calls] = ring_used_idx(post_ring);
	modify.calls++;
	return 0;
}

static int fk_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
			struct ibv_send_wr **bad)
{
	unsigned int n = 0;

	hw.posts++;
	if (post_ring)
		memcpy(&hw.used_flags_at_post, post_ring->used, 2);
	for (; wr; wr = wr->next, n++) {
		if ((int)n == hw.fail_at) {
			*bad = wr;
			return EINVAL;
		}
		hw.q[hw.qn++] = wr->wr_id;
	}
	if (n > hw.longest)
		hw.longest = n;
	return 0;
}

static int fk_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad)
{
	unsigned int n = 0;

	hw.recv_posts++;
	for (; wr; wr = wr->next, n++)
		hw.q[hw.qn++] = wr->wr_id;
	if (n > hw.longest)
		hw.longest = n;
	return 0;
}

/* Completes the oldest WRs, num_entries at most per call. */
static int fk_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
	int n = 0;

	hw.polls++;
	while (n < num_entries && hw.qn > 0) {
		memset(&wc[n], 0, sizeof(wc[n]));
		wc[n].wr_id = hw.q[0];
		wc[n].status = IBV_WC_SUCCESS;
		wc[n].opcode = IBV_WC_RDMA_WRITE;
		wc[n].qp_num = QPN;
		memmove(hw.q, hw.q + 1, --hw.qn * sizeof(hw.q[0]));
		n++;
	}
	return n;
}

/* ---- fixture: a device with one RC QP (slot 0) and one CQ (cqn 0) ---- */

struct fix {
	struct vrdma_cfg cfg;
	struct ram ram;
	struct guest_mem gm;
	struct ibv_context ctx;
	struct ibv_qp qp;
	struct ibv_cq cq;
	struct be *be;
	struct vrdma *d;
	struct vq sq, cqv, rq;
	struct ring sqr, cqr, rqr;
};

static uint8_t *at(struct fix *f, uint64_t gpa)
{
	return f->ram.map + gpa;
}

static void vq_on(struct fix *f, struct vq *vq, struct ring *r,
		  unsigned int index, uint64_t desc, uint64_t avail,
		  uint64_t used)
{
	*r = (struct ring){ at(f, desc), at(f, avail), at(f, used), NUM, 0 };
	vq_init(vq, index);
	assert_int_equal(
		vq_setup(vq, &f->gm, NUM,
			 gm_gpa_to_host(&f->gm, desc, VQ_DESC_BYTES(NUM)),
			 gm_gpa_to_host(&f->gm, avail, VQ_AVAIL_BYTES(NUM) + 2),
			 gm_gpa_to_host(&f->gm, used, VQ_USED_BYTES(NUM) + 2),
			 0, false, NULL),
		0);
	vq->call_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	assert_true(vq->call_fd >= 0);
	f->d->vqs[index] = vq;
}

static void be_fake(struct fix *f)
{
	struct be *be = calloc(1, sizeof(*be));
	struct be_qp *q;

	assert_non_null(be);
	f->ctx.ops.post_send = fk_post_send;
	f->ctx.ops.post_recv = fk_post_recv;
	f->ctx.ops.poll_cq = fk_poll_cq;
	f->qp.context = &f->ctx;
	f->cq.context = &f->ctx;
	be->cfg.qp_handles = 1;
	be->attr.max_cq = 1;
	be->attr.max_pd = 1;
	be->pd = calloc(2, sizeof(*be->pd));
	be->mr = calloc(2, sizeof(*be->mr));
	be->cq = calloc(2, sizeof(*be->cq));
	be->qp = calloc(2, sizeof(*be->qp));
	assert_true(be->pd && be->mr && be->cq && be->qp);
	be->pd[1].used = true;
	be->cq[1] = (struct be_cq){ .used = true, .cq = &f->cq, .cqe = NUM };
	q = &be->qp[1];
	q->used = true;
	q->gen = 1;
	q->type = BE_QPT_RC;
	q->qp = &f->qp;
	q->qpn = QPN;
	q->pd = 1;
	q->send_cq = q->recv_cq = 1;
	q->state = IBV_QPS_RTS;
	q->cap.max_send_sge = q->cap.max_recv_sge = 4;
	q->cap.max_inline_data = 64;
	q->ctx = (void *)(uintptr_t)0; /* slot 0 */
	assert_int_equal(be_wq_init(&q->sq, NUM, false), 0);
	assert_int_equal(be_wq_init(&q->rq, NUM, false), 0);
	be->st = &be->own_st;
	be->ops = &vr_be_ops;
	f->be = be;
}

static int setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));
	struct gm_desc r = { 0, RAM, 0x700000000000ull, 0,
			     PROT_READ | PROT_WRITE };
	struct reason why;
	struct vr_slot *s;

	assert_non_null(f);
	assert_int_equal(ram_open(&f->ram, RAM), 0);
	gm_init(&f->gm);
	assert_int_equal(gm_add_region(&f->gm, &r, f->ram.fd, &why), 0);
	f->d = calloc(1, sizeof(*f->d));
	assert_non_null(f->d);
	f->d->cfg = &f->cfg;
	be_fake(f);
	f->be->fe = f->d;
	f->d->be = f->be;
	f->d->st = &f->be->own_st;
	f->d->num_slots = 1;
	f->d->max_cq = 1;
	f->d->slot = calloc(1, sizeof(*f->d->slot));
	assert_non_null(f->d->slot);
	s = &f->d->slot[0];
	s->kind = VR_SLOT_QP;
	s->qpn = QPN;
	s->qp_type = VIRTIO_RDMA_QPT_RC;
	s->scqn = s->rcqn = 0;
	s->sq_lim = (struct rdma_sq_limits){ VIRTIO_RDMA_QPT_RC, 4, 64 };
	s->max_recv_sge = 4;
	f->d->cq[0].used = true;
	vq_on(f, &f->sq, &f->sqr, virtio_rdma_sq_vq(1, 0), SQ_DESC, SQ_AVAIL,
	      SQ_USED);
	vq_on(f, &f->rq, &f->rqr, virtio_rdma_rq_vq(1, 0), RQ_DESC, RQ_AVAIL,
	      RQ_USED);
	vq_on(f, &f->cqv, &f->cqr, virtio_rdma_cq_vq(0), CQ_DESC, CQ_AVAIL,
	      CQ_USED);
	memset(&hw, 0, sizeof(hw));
	memset(&modify, 0, sizeof(modify));
	hw.fail_at = -1;
	post_ring = &f->sqr;
	log_init("test", LOG_LVL_ERR);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;
	struct vq *vqs[3] = { &f->sq, &f->rq, &f->cqv };

	for (unsigned int i = 0; i < 3; i++) {
		close(vqs[i]->call_fd);
		vq_teardown(vqs[i]);
	}
	be_wq_free(&f->be->qp[1].sq);
	be_wq_free(&f->be->qp[1].rq);
	free(f->be->pd);
	free(f->be->mr);
	free(f->be->cq);
	free(f->be->qp);
	free(f->be);
	free(f->d->slot);
	free(f->d);
	gm_clear(&f->gm);
	ram_close(&f->ram);
	free(f);
	return 0;
}

/* ---- the guest's side ---- */

/* n RDMA WRITEs, signaled, wr_id = first + i, made available at once. */
static void post_writes(struct fix *f, unsigned int first, unsigned int n)
{
	for (unsigned int i = first; i < first + n; i++) {
		uint64_t gpa = WQE_BUF + (i % NUM) * 128ull;
		struct virtio_rdma_sq_wqe w = {
			.num_sge = 1,
			.send_flags = VIRTIO_RDMA_SEND_SIGNALED,
			.opcode = VIRTIO_RDMA_WR_RDMA_WRITE,
			.wr_id = i,
		};
		struct virtio_rdma_sge g = { 0x40000, 64, 0x1234 };

		w.wr.rdma.remote_addr = 0x1000;
		w.wr.rdma.rkey = 0x77;
		memcpy(at(f, gpa), &w, sizeof(w));
		memcpy(at(f, gpa) + sizeof(w), &g, sizeof(g));
		ring_desc(&f->sqr, i % NUM, gpa, sizeof(w) + sizeof(g), 0, 0);
		ring_publish(&f->sqr, (uint16_t)(i % NUM));
	}
}

/* n receives, one SGE each, wr_id = first + i. */
static void post_recvs(struct fix *f, unsigned int first, unsigned int n)
{
	for (unsigned int i = first; i < first + n; i++) {
		uint64_t gpa = WQE_BUF + 0x4000 + (i % NUM) * 64ull;
		struct virtio_rdma_rq_wqe w = { .num_sge = 1, .wr_id = i };
		struct virtio_rdma_sge g = { 0x50000, 256, 0x1234 };

		memcpy(at(f, gpa), &w, sizeof(w));
		memcpy(at(f, gpa) + sizeof(w), &g, sizeof(g));
		ring_desc(&f->rqr, i % NUM, gpa, sizeof(w) + sizeof(g), 0, 0);
		ring_publish(&f->rqr, (uint16_t)(i % NUM));
	}
}

/* NUM writable CQE buffers on the CQ ring. */
static void post_cqe_bufs(struct fix *f)
{
	for (unsigned int i = 0; i < NUM; i++) {
		ring_desc(&f->cqr, i, CQE_BUF + i * 64ull, 64,
			  VRING_DESC_F_WRITE, 0);
		ring_publish(&f->cqr, (uint16_t)i);
	}
}

/* Signals on a ring since the last look (the eventfd's counter). */
static uint64_t calls(const struct vq *vq)
{
	uint64_t v = 0;

	if (read(vq->call_fd, &v, sizeof(v)) != sizeof(v))
		return 0;
	return v;
}

static struct virtio_rdma_cqe cqe_at(struct fix *f, unsigned int i)
{
	struct virtio_rdma_cqe c;
	uint32_t id;

	memcpy(&id, f->cqr.used + 4 + 8 * i, 4);
	memcpy(&c, at(f, CQE_BUF + id * 64ull), sizeof(c));
	return c;
}

static uint16_t used_flags(const struct ring *r)
{
	uint16_t v;

	memcpy(&v, r->used, 2);
	return v;
}

static uint16_t avail_event(const struct ring *r)
{
	uint16_t v;

	memcpy(&v, r->used + VQ_USED_BYTES(NUM), 2);
	return v;
}

/* What the completion channel's handler does: read, then end the round. */
static int host_round(struct fix *f)
{
	int n = be_cq_poll(f->be, 1, BE_POLL_BUDGET);

	vr_be_ops.round_done(f->d);
	return n;
}

/* ---- tests ---- */

/* n writes in one kick, the host refusing the list at fail_at (-1: no). */
static void kick_writes(struct fix *f, unsigned int n, int fail_at)
{
	post_cqe_bufs(f);
	post_writes(f, 0, n);
	hw.fail_at = fail_at;
	vr_sq_kicked(f->d, 0, &f->sq);
	vr_notify_flush(f->d);
}

static void test_one_kick_is_one_host_post(void **state)
{
	struct fix *f = *state;

	f->d->cq[0].armed = true;
	kick_writes(f, 20, -1);
	assert_int_equal(hw.posts, 1);
	assert_int_equal(hw.longest, 20);
	assert_int_equal(hw.qn, 20);
	assert_int_equal(f->be->own_st.sends, 20);
	/* nothing finished yet: nothing signalled */
	assert_int_equal(ring_used_idx(&f->sqr), 0);
	assert_int_equal(calls(&f->sq), 0);

	/* one round of 20 host completions: read 32 at a time */
	assert_int_equal(host_round(f), 20);
	assert_int_equal(hw.polls, 1);
	assert_int_equal(ring_used_idx(&f->cqr), 20);
	assert_int_equal(ring_used_idx(&f->sqr), 20);
	/* every CQE written, then each ring signalled once */
	assert_int_equal(calls(&f->cqv), 1);
	assert_int_equal(calls(&f->sq), 1);
	for (unsigned int i = 0; i < 20; i++) {
		struct virtio_rdma_cqe c = cqe_at(f, i);

		assert_int_equal(c.wr_id, i);
		assert_int_equal(c.status, VIRTIO_RDMA_WC_SUCCESS);
	}
}

static void test_refused_list_completes_first_k(void **state)
{
	struct fix *f = *state;

	kick_writes(f, 20, 5);
	assert_int_equal(hw.posts, 1);
	assert_int_equal(hw.qn, 5); /* the first five are on the host */
	assert_int_equal(f->be->own_st.sends, 5);
	assert_int_equal(f->be->own_st.send_errors, 15);
	/* in-order return: the refused wait behind the five running */
	assert_int_equal(ring_used_idx(&f->cqr), 0);
	assert_int_equal(ring_used_idx(&f->sqr), 0);

	assert_int_equal(host_round(f), 5);
	assert_int_equal(ring_used_idx(&f->sqr), 20);
	assert_int_equal(ring_used_idx(&f->cqr), 20);
	for (unsigned int i = 0; i < 20; i++) {
		struct virtio_rdma_cqe c = cqe_at(f, i);

		assert_int_equal(c.wr_id, i);
		assert_int_equal(c.status,
				 i < 5 ? VIRTIO_RDMA_WC_SUCCESS
				       : VIRTIO_RDMA_WC_LOC_QP_OP_ERR);
		assert_int_equal(c.opcode, VIRTIO_RDMA_WC_RDMA_WRITE);
	}
	/* the host queue's bookkeeping holds the five only */
	assert_int_equal(f->be->qp[1].sq.count, 0);
}

static void test_refused_first_wr_completes_none(void **state)
{
	struct fix *f = *state;

	kick_writes(f, 3, 0);
	assert_int_equal(hw.qn, 0);
	assert_int_equal(ring_used_idx(&f->sqr), 3);
	assert_int_equal(ring_used_idx(&f->cqr), 3);
	for (unsigned int i = 0; i < 3; i++)
		assert_int_equal(cqe_at(f, i).status,
				 VIRTIO_RDMA_WC_LOC_QP_OP_ERR);
	assert_int_equal(f->be->qp[1].sq.count, 0);
}

static void test_receives_are_one_host_post(void **state)
{
	struct fix *f = *state;

	post_recvs(f, 0, 12);
	vr_rq_kicked(f->d, 0, &f->rq);
	assert_int_equal(hw.recv_posts, 1);
	assert_int_equal(hw.longest, 12);
	assert_int_equal(f->be->own_st.recvs, 12);
}

/* Outside a batch (PVRDMA's way) a post is a list of one, as before. */
static void test_unbatched_post_is_immediate(void **state)
{
	struct fix *f = *state;
	struct be_sge sge = { 0x40000, 64, 0x1234 };
	struct be_send_wr w = { .cookie = 7,
				.opcode = IBV_WR_RDMA_WRITE,
				.num_sge = 1,
				.sge = &sge };
	enum ibv_wc_status st = IBV_WC_SUCCESS;
	struct reason why = { "" };

	assert_int_equal(be_post_send(f->be, 1, &w, &st, &why), BE_POSTED);
	assert_int_equal(hw.posts, 1);
	hw.fail_at = 0;
	assert_int_equal(be_post_send(f->be, 1, &w, &st, &why), BE_DONE);
	assert_int_equal(st, IBV_WC_LOC_QP_OP_ERR);
	assert_string_equal(why.msg, "the host refused it (QP state, or its "
				     "queue is full)");
	assert_int_equal(f->be->qp[1].sq.count, 1); /* the first only */
}

static void test_kicks_off_while_draining(void **state)
{
	struct fix *f = *state;

	post_writes(f, 0, 40);
	vr_sq_kicked(f->d, 0, &f->sq);
	/* the budget ran out: kicks stay off, the loop polls */
	assert_int_equal(hw.posts, 1);
	assert_int_equal(hw.longest, VR_KICK_BUDGET);
	assert_int_equal(used_flags(&f->sqr), VRING_USED_F_NO_NOTIFY);
	assert_int_equal(hw.used_flags_at_post, VRING_USED_F_NO_NOTIFY);
	assert_true(f->d->pending);
	vr_run_pending(f->d);
	assert_int_equal(hw.posts, 2);
	assert_int_equal(hw.qn, 40);
	/* drained: kicks back on */
	assert_int_equal(used_flags(&f->sqr), 0);
}

static void test_event_idx_avail_event_after_drain(void **state)
{
	struct fix *f = *state;

	vq_set_event_idx(&f->sq, true);
	post_writes(f, 0, 40);
	vr_sq_kicked(f->d, 0, &f->sq);
	/* flags untouched with event index; avail_event left behind */
	assert_int_equal(used_flags(&f->sqr), 0);
	assert_int_equal(avail_event(&f->sqr), 0);
	vr_run_pending(f->d);
	assert_int_equal(avail_event(&f->sqr), 40);
}

/* An element made available between the drain and re-enabling kicks. */
static void test_element_racing_reenable_is_taken(void **state)
{
	struct fix *f = *state;

	post_writes(f, 0, 2);
	vr_sq_kicked(f->d, 0, &f->sq);
	assert_int_equal(hw.qn, 2);
	/* the guest published while kicks were off and did not kick */
	post_writes(f, 2, 1);
	assert_true(vq_enable_notify(&f->sq));
}

/* One round of the worker's loop as main.c runs it when it polls. */
static void loop_round(struct fix *f)
{
	assert_true(rdma_device_ops.wants_poll(f->d));
	rdma_device_ops.poll(f->d);
}

/*
 * Spinning: what the guest makes available is taken without a kick, and
 * the guest is told not to kick; the first round after the spin turns
 * kicks back on and takes what came in between.
 */
static void test_spin_polls_rings_kicks_off(void **state)
{
	struct fix *f = *state;

	post_cqe_bufs(f);
	f->cfg.busy_poll = true;
	loop_round(f); /* the spin begins: kicks off on every ring */
	assert_int_equal(used_flags(&f->sqr), VRING_USED_F_NO_NOTIFY);
	assert_int_equal(used_flags(&f->rqr), VRING_USED_F_NO_NOTIFY);
	assert_int_equal(hw.posts, 0);
	post_writes(f, 0, 3); /* no kick */
	loop_round(f);
	assert_int_equal(hw.posts, 1);
	assert_int_equal(f->be->own_st.sends, 3);
	/* and the host CQ is polled: the three completed in the round */
	assert_int_equal(hw.qn, 0);
	assert_int_equal(ring_used_idx(&f->cqr), 3);
	assert_int_equal(used_flags(&f->sqr), VRING_USED_F_NO_NOTIFY);
	post_recvs(f, 0, 2);
	loop_round(f);
	assert_int_equal(f->be->own_st.recvs, 2);
	/* the budget is spent; the guest publishes before the next round */
	f->cfg.busy_poll = false;
	post_writes(f, 3, 1);
	loop_round(f);
	assert_int_equal(f->be->own_st.sends, 4);
	assert_int_equal(used_flags(&f->sqr), 0);
	assert_int_equal(used_flags(&f->rqr), 0);
	/* kicks on everywhere: the loop may sleep */
	assert_false(rdma_device_ops.wants_poll(f->d));
}

/*
 * A spin that begins with a kick (the usual case: the kick is the
 * activity) still turns every ring's kicks off on its first poll round,
 * and later rounds leave the flag alone.
 */
static void test_spin_after_kick_turns_all_kicks_off(void **state)
{
	struct fix *f = *state;

	post_cqe_bufs(f);
	f->cfg.busy_poll = true;
	post_writes(f, 0, 1);
	vr_sq_kicked(f->d, 0, &f->sq);
	assert_int_equal(used_flags(&f->rqr), 0);
	loop_round(f);
	assert_int_equal(used_flags(&f->rqr), VRING_USED_F_NO_NOTIFY);
	/* cleared here only to see that a later round does not write it again
	 */
	memset(f->rqr.used, 0, 2);
	loop_round(f);
	assert_int_equal(used_flags(&f->rqr), 0);
}

/* The same with event index: avail_event left behind, then caught up. */
static void test_spin_event_idx(void **state)
{
	struct fix *f = *state;

	vq_set_event_idx(&f->sq, true);
	post_cqe_bufs(f);
	f->cfg.busy_poll = true;
	post_writes(f, 0, 5);
	vr_sq_kicked(f->d, 0, &f->sq); /* the one kick of the spin */
	assert_int_equal(f->be->own_st.sends, 5);
	assert_int_equal(avail_event(&f->sqr), 0); /* no further kicks */
	post_writes(f, 5, 2);
	loop_round(f);
	assert_int_equal(f->be->own_st.sends, 7);
	assert_int_equal(avail_event(&f->sqr), 0);
	f->cfg.busy_poll = false;
	loop_round(f);
	assert_int_equal(avail_event(&f->sqr), 7);
	assert_false(rdma_device_ops.wants_poll(f->d));
}

static void test_unarmed_cq_is_not_signalled(void **state)
{
	struct fix *f = *state;

	kick_writes(f, 4, -1);
	assert_int_equal(host_round(f), 4);
	assert_int_equal(ring_used_idx(&f->cqr), 4);
	assert_int_equal(calls(&f->cqv), 0);
}

/*
 * Event index on the CQ queue: a driver that read 5 of 20 CQEs and arms
 * the CQ again still gets the next completion's signal, although the used
 * index passed its used_event long ago (the CQ's arming decides).
 */
static void test_armed_cq_signalled_despite_stale_used_event(void **state)
{
	struct fix *f = *state;
	uint16_t ue = 5;

	vq_set_event_idx(&f->cqv, true);
	f->d->cq[0].armed = true;
	kick_writes(f, 20, -1);
	assert_int_equal(host_round(f), 20);
	assert_int_equal(calls(&f->cqv), 1);
	memcpy(f->cqr.avail + VQ_AVAIL_BYTES(NUM), &ue, 2);
	f->d->cq[0].armed = true;
	post_writes(f, 20, 1);
	vr_sq_kicked(f->d, 0, &f->sq);
	assert_int_equal(host_round(f), 1);
	assert_int_equal(ring_used_idx(&f->cqr), 21);
	assert_int_equal(calls(&f->cqv), 1);
}

/*
 * Each SQ descriptor goes back before its CQE is written, so a driver that
 * has read a CQE finds the WQE slots up to it free (verbs' promise).  Seen
 * at the CQE's write: with no CQE buffer on the CQ, each write overflows
 * and moves the QP to the error state, and the wrapped ibv_modify_qp
 * samples the SQ's used index then.
 */
static void test_descriptor_returned_before_its_cqe(void **state)
{
	struct fix *f = *state;

	post_writes(f, 0, 3); /* no CQE buffers: every CQE overflows */
	vr_sq_kicked(f->d, 0, &f->sq);
	assert_int_equal(hw.qn, 3);
	assert_int_equal(host_round(f), 3);
	assert_int_equal(modify.calls, 3);
	assert_int_equal(modify.state, IBV_QPS_ERR);
	for (unsigned int i = 0; i < 3; i++)
		assert_int_equal(modify.sq_used[i], i + 1);
	assert_int_equal(ring_used_idx(&f->sqr), 3);
	assert_int_equal(ring_used_idx(&f->cqr), 0);
	assert_int_equal(f->d->cq[0].overflows, 3);
	assert_int_equal(f->be->qp[1].state, IBV_QPS_ERR);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_one_kick_is_one_host_post,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_refused_list_completes_first_k, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_refused_first_wr_completes_none, setup, teardown),
		cmocka_unit_test_setup_teardown(test_receives_are_one_host_post,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_unbatched_post_is_immediate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kicks_off_while_draining,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_event_idx_avail_event_after_drain, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_element_racing_reenable_is_taken, setup, teardown),
		cmocka_unit_test_setup_teardown(test_spin_polls_rings_kicks_off,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_spin_event_idx, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_spin_after_kick_turns_all_kicks_off, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_unarmed_cq_is_not_signalled, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_armed_cq_signalled_despite_stale_used_event, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_descriptor_returned_before_its_cqe, setup,
			teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
