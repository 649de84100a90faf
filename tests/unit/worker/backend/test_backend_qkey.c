// SPDX-License-Identifier: MIT
/*
 * Privileged Q_Keys (bit 31 set: QP1's 0x80010000 among them) stay with
 * the emulated QP1: the backend refuses them in MODIFY_QP on every other
 * guest QP, and refuses a UD send that carries one to QP0 or QP1.  The
 * backend runs on a fake host QP; ibv_modify_qp() is wrapped (the link
 * has --wrap=ibv_modify_qp) to see what would reach the host.
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

enum { QP_UD = 1, QP_RC = 2, QP_GSI = 3, NQP = 3 };

static struct {
	unsigned int calls;
	uint32_t qkey;
	int mask;
} host;

int __wrap_ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
int __wrap_ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	(void)qp;
	host.calls++;
	host.qkey = attr->qkey;
	host.mask = mask;
	return 0;
}

struct fix {
	struct be be;
	struct rdma_hca hca;
	struct ibv_qp hqp[NQP + 1];
	struct be_qp qp[NQP + 1];
};

static void qp_on(struct fix *f, uint32_t h, enum be_qp_type t)
{
	struct be_qp *q = &f->qp[h];

	q->used = true;
	q->gen = 1;
	q->type = t;
	q->qp = t == BE_QPT_GSI ? NULL : &f->hqp[h]; /* QP1 is emulated */
	q->qpn = t == BE_QPT_GSI ? 1 : 0x100 + h;
	q->state = IBV_QPS_RTS;
	q->cap.max_send_sge = 1;
}

static int setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->hca.port = 1;
	f->be.hca = &f->hca;
	f->be.qp = f->qp;
	f->be.cfg.qp_handles = NQP;
	f->be.st = &f->be.own_st;
	qp_on(f, QP_UD, BE_QPT_UD);
	qp_on(f, QP_RC, BE_QPT_RC);
	qp_on(f, QP_GSI, BE_QPT_GSI);
	memset(&host, 0, sizeof(host));
	log_init("test", LOG_LVL_ERR);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	free(*state);
	return 0;
}

static int set_qkey(struct fix *f, uint32_t qp, uint32_t qkey, int mask)
{
	struct be_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.qkey = qkey;
	return be_qp_modify(&f->be, qp, &a, mask);
}

static void test_modify_qp_privileged_qkey_refused(void **state)
{
	struct fix *f = *state;

	assert_int_equal(set_qkey(f, QP_UD, 0x80010000u, IBV_QP_QKEY), -EPERM);
	assert_int_equal(
		set_qkey(f, QP_UD, 0x80000000u, IBV_QP_QKEY | IBV_QP_STATE),
		-EPERM);
	assert_int_equal(set_qkey(f, QP_RC, 0xffffffffu, IBV_QP_QKEY), -EPERM);
	assert_int_equal(host.calls, 0);
	/* an ordinary Q_Key goes through */
	assert_int_equal(set_qkey(f, QP_UD, 0x7fffffffu, IBV_QP_QKEY), 0);
	assert_int_equal(host.calls, 1);
	assert_int_equal(host.qkey, 0x7fffffffu);
	/* bit 31 in a field the mask does not name reaches nothing */
	assert_int_equal(set_qkey(f, QP_UD, 0x80010000u, IBV_QP_STATE), 0);
	assert_int_equal(host.calls, 2);
	assert_int_equal(host.qkey, 0);
	/* the emulated QP1 keeps its own */
	assert_int_equal(set_qkey(f, QP_GSI, 0x80010000u, IBV_QP_QKEY), 0);
	assert_int_equal(host.calls, 2);
}

static struct reason why;

static enum be_post ud_send(struct fix *f, uint32_t qp, uint32_t qpn,
			    uint32_t qkey, enum ibv_wc_status *st)
{
	struct be_send_wr w;

	memset(&w, 0, sizeof(w));
	w.opcode = IBV_WR_SEND;
	w.ud.av.global = true;
	w.ud.remote_qpn = qpn;
	w.ud.remote_qkey = qkey;
	return be_post_send(&f->be, qp, &w, st, &why);
}

static void test_ud_send_privileged_qkey_to_qp0_qp1_refused(void **state)
{
	struct fix *f = *state;
	enum ibv_wc_status st = IBV_WC_SUCCESS;

	assert_int_equal(ud_send(f, QP_UD, 1, 0x80010000u, &st), BE_DONE);
	assert_int_equal(st, IBV_WC_LOC_QP_OP_ERR);
	if (!strstr(why.msg, "Q_Key"))
		fail_msg("refused for another reason: %s", why.msg);
	st = IBV_WC_SUCCESS;
	assert_int_equal(ud_send(f, QP_UD, 0, 0x80000000u, &st), BE_DONE);
	assert_int_equal(st, IBV_WC_LOC_QP_OP_ERR);
	if (!strstr(why.msg, "Q_Key"))
		fail_msg("refused for another reason: %s", why.msg);
	assert_int_equal(f->be.st->send_errors, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_modify_qp_privileged_qkey_refused, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_ud_send_privileged_qkey_to_qp0_qp1_refused, setup,
			teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
