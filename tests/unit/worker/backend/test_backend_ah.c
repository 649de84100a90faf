// SPDX-License-Identifier: MIT
/*
 * The backend's host AH cache under a guest that addresses more UD peers
 * than it holds: when full, the least recently used entry that no send on
 * a host queue names is destroyed and reused; entries in flight are never
 * destroyed (a host AH must outlive the work requests that name it), and
 * a QP's destruction lets go of its sends' entries.  The backend runs on
 * a fake host (post and poll through a fake context's ops table;
 * ibv_create_ah(), ibv_destroy_ah() and the GID query wrapped at link
 * time).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#define RDMAGATE_PROBES_DEFINE /* the probes' semaphores, as main.c has */
#include "common/log.h"
#include "common/probes.h"
#include "worker/backend/be_impl.h"
#include "fake_host.h"

#define MAX_AH 2

static struct {
	unsigned int created, destroyed, live;
	uint8_t last_dgid; /* dgid[15] of the last AH created */
	unsigned int completions;
} hw;

struct ibv_ah *__wrap_ibv_create_ah(struct ibv_pd *pd,
				    struct ibv_ah_attr *attr);
struct ibv_ah *__wrap_ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	(void)pd;
	hw.created++;
	hw.live++;
	hw.last_dgid = attr->grh.dgid.raw[15];
	return calloc(1, sizeof(struct ibv_ah));
}

int __wrap_ibv_destroy_ah(struct ibv_ah *ah);
int __wrap_ibv_destroy_ah(struct ibv_ah *ah)
{
	hw.destroyed++;
	hw.live--;
	free(ah);
	return 0;
}

/* The host's GID table: every slot holds what the guest claimed (zeros). */
static int fake_gid_at(uint32_t index, struct ibv_gid_entry *e)
{
	(void)index;
	(void)e;
	return 0;
}

static void fe_completion(void *fe, const struct be_wc *wc)
{
	(void)fe;
	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	hw.completions++;
}

static const struct be_frontend_ops fe_ops = { .completion = fe_completion };

struct fix {
	struct be be;
	struct rdma_hca hca;
	struct ibv_context ctx;
	struct ibv_qp hqp;
	struct ibv_cq hcq;
	struct be_pd pd[2];
	struct be_cq cq[2];
	struct be_qp qp[2];
	struct be_ah ah[MAX_AH];
};

static int setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));
	struct be_qp *q;
	uint32_t i;

	assert_non_null(f);
	f->ctx.ops.post_send = fake_post_send;
	f->ctx.ops.poll_cq = fake_poll_cq;
	f->hqp.context = &f->ctx;
	f->hcq.context = &f->ctx;
	f->hca.port = 1;
	f->be.hca = &f->hca;
	f->be.attr.max_ah = MAX_AH;
	f->be.attr.max_cq = 1;
	f->be.attr.max_pd = 1;
	f->be.cfg.qp_handles = 1;
	f->be.ah = f->ah;
	f->be.pd = f->pd;
	f->be.cq = f->cq;
	f->be.qp = f->qp;
	f->be.gid_tbl_len = 4;
	for (i = 0; i < 4; i++)
		f->be.guest_gid[i] = (int32_t)i;
	f->be.st = &f->be.own_st;
	f->be.ops = &fe_ops;
	f->pd[1].used = true;
	f->cq[1] = (struct be_cq){ .used = true, .cq = &f->hcq, .cqe = 16 };
	q = &f->qp[1];
	q->used = true;
	q->gen = 1;
	q->type = BE_QPT_UD;
	q->qp = &f->hqp;
	q->qpn = 0x101;
	q->pd = 1;
	q->send_cq = q->recv_cq = 1;
	q->state = IBV_QPS_RTS;
	q->cap.max_send_sge = 1;
	assert_int_equal(be_wq_init(&q->sq, 8, false), 0);
	memset(&hw, 0, sizeof(hw));
	fake_sq_n = 0;
	log_init("test", LOG_LVL_ERR);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;

	be_wq_drop_ahs(&f->be, &f->qp[1].sq);
	be_wq_free(&f->qp[1].sq);
	be_ah_flush(&f->be, 0);
	assert_int_equal(hw.live, 0);
	free(f);
	return 0;
}

static struct reason why;

/* A UD send to the peer whose GID ends in `peer`. */
static enum ibv_wc_status send_to(struct fix *f, uint8_t peer)
{
	enum ibv_wc_status st = IBV_WC_SUCCESS;
	struct be_send_wr w;

	memset(&w, 0, sizeof(w));
	w.opcode = IBV_WR_SEND;
	w.ud.av.global = true;
	w.ud.av.dgid[0] = 0xfe;
	w.ud.av.dgid[1] = 0x80;
	w.ud.av.dgid[15] = peer;
	w.ud.remote_qpn = 0x200;
	w.ud.remote_qkey = 0x1111;
	if (be_post_send(&f->be, 1, &w, &st, &why) == BE_POSTED)
		return IBV_WC_SUCCESS;
	return st;
}

static void complete_all(struct fix *f)
{
	unsigned int n = fake_sq_n;

	assert_int_equal(be_cq_poll(&f->be, 1, 16), (int)n);
}

static void test_full_cache_evicts_lru_not_in_flight(void **state)
{
	struct fix *f = *state;

	assert_int_equal(send_to(f, 'A'), IBV_WC_SUCCESS);
	assert_int_equal(send_to(f, 'B'), IBV_WC_SUCCESS);
	/* both entries in flight: a third peer waits, nothing destroyed */
	assert_int_equal(send_to(f, 'C'), IBV_WC_LOC_QP_OP_ERR);
	if (!strstr(why.msg, "in flight"))
		fail_msg("refused for another reason: %s", why.msg);
	assert_int_equal(hw.destroyed, 0);
	complete_all(f);
	/* A used again: B is now the least recently used */
	assert_int_equal(send_to(f, 'A'), IBV_WC_SUCCESS);
	complete_all(f);
	assert_int_equal(hw.created, 2);
	assert_int_equal(send_to(f, 'C'), IBV_WC_SUCCESS);
	assert_int_equal(hw.destroyed, 1);
	assert_int_equal(hw.created, 3);
	assert_int_equal(send_to(f, 'A'), IBV_WC_SUCCESS); /* still cached */
	assert_int_equal(hw.created, 3);
	/* A and C in flight: B cannot come back yet */
	assert_int_equal(send_to(f, 'B'), IBV_WC_LOC_QP_OP_ERR);
	complete_all(f);
	assert_int_equal(send_to(f, 'B'), IBV_WC_SUCCESS);
	assert_int_equal(hw.last_dgid, 'B');
	assert_int_equal(hw.live, MAX_AH);
	assert_int_equal(f->pd[1].refs, MAX_AH);
	complete_all(f);
	assert_int_equal(hw.completions, 6);
}

/* A QP going away lets go of its sends' entries: they can be evicted. */
static void test_destroyed_qp_releases_its_entries(void **state)
{
	struct fix *f = *state;
	unsigned int i;

	assert_int_equal(send_to(f, 'A'), IBV_WC_SUCCESS);
	assert_int_equal(send_to(f, 'B'), IBV_WC_SUCCESS);
	be_wq_drop_ahs(&f->be, &f->qp[1].sq);
	for (i = 0; i < MAX_AH; i++)
		assert_int_equal(f->ah[i].inflight, 0);
	assert_int_equal(f->qp[1].sq.count, 0);
	fake_sq_n = 0; /* their completions never come */
	assert_int_equal(send_to(f, 'C'), IBV_WC_SUCCESS);
	assert_int_equal(hw.destroyed, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_full_cache_evicts_lru_not_in_flight, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_destroyed_qp_releases_its_entries, setup,
			teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
