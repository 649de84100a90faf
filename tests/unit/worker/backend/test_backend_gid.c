// SPDX-License-Identifier: MIT
/*
 * A guest GID maps to a host GID table slot fixed at claim time; when the
 * address leaves the host and the slot is reused (another VM's claim), a
 * path or a cached AH on it would send with another tenant's source GID.
 * The backend, made by be_create() on a fake host (libibverbs calls
 * wrapped at link time: the GID query, AHs, MODIFY_QP, the completion
 * channel, async events), sees its slot rewritten: on IBV_EVENT_GID_CHANGE,
 * before a new AH, before a MODIFY_QP with an address vector, and when the
 * broker says the address went (WP_GID_GONE).  Each time the GID dies: its
 * cached AHs go (one still named by a send when that send is done), UD
 * sends and RTR/RTS transitions with it are refused, a QP whose path uses
 * it goes to the error state and the frontend hears QP_FATAL.
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
#include "worker/backend/be_impl.h"
#include "worker/broker_link.h"
#include "fake_host.h"

enum { QP_UD = 1, QP_RC = 2, HOST_IDX = 3 };

static const uint8_t G_OURS[16] = { 0xfd, 0x99, [15] = 0x10 };
static const uint8_t G_OTHER[16] = { 0xfd, 0x99, [15] = 0x11 };

static struct {
	struct { /* the host's GID table */
		bool set;
		uint8_t gid[16];
		uint32_t type;
	} slot[8];
	unsigned int queries, ah_live, ah_created;
	enum ibv_qp_state qp_state[3];
	unsigned int gid_change_events; /* queued for the async fd */
	unsigned int completions, errors;
	struct be_async_event last_event;
	unsigned int events, rc_fatal;
	void (*async_cb)(void *);
	void *async_arg;
} hw;

static int fake_gid_at(uint32_t index, struct ibv_gid_entry *e)
{
	hw.queries++;
	if (index >= 8 || !hw.slot[index].set)
		return ENODATA;
	memcpy(e->gid.raw, hw.slot[index].gid, 16);
	e->gid_type = hw.slot[index].type;
	return 0;
}

struct ibv_ah *__wrap_ibv_create_ah(struct ibv_pd *pd,
				    struct ibv_ah_attr *attr);
struct ibv_ah *__wrap_ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	(void)pd;
	assert_int_equal(attr->grh.sgid_index, HOST_IDX);
	hw.ah_live++;
	hw.ah_created++;
	return calloc(1, sizeof(struct ibv_ah));
}

int __wrap_ibv_destroy_ah(struct ibv_ah *ah);
int __wrap_ibv_destroy_ah(struct ibv_ah *ah)
{
	hw.ah_live--;
	free(ah);
	return 0;
}

static struct ibv_qp hqp[3];

int __wrap_ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
int __wrap_ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	if (mask & IBV_QP_AV)
		assert_int_equal(attr->ah_attr.grh.sgid_index, HOST_IDX);
	if (mask & IBV_QP_STATE)
		hw.qp_state[qp - hqp] = attr->qp_state;
	return 0;
}

struct ibv_comp_channel *__wrap_ibv_create_comp_channel(struct ibv_context *c);
struct ibv_comp_channel *__wrap_ibv_create_comp_channel(struct ibv_context *c)
{
	struct ibv_comp_channel *ch = calloc(1, sizeof(*ch));

	ch->context = c;
	ch->fd = eventfd(0, EFD_CLOEXEC);
	return ch;
}

int __wrap_ibv_destroy_comp_channel(struct ibv_comp_channel *ch);
int __wrap_ibv_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	close(ch->fd);
	free(ch);
	return 0;
}

int __wrap_ibv_get_async_event(struct ibv_context *c,
			       struct ibv_async_event *e);
int __wrap_ibv_get_async_event(struct ibv_context *c, struct ibv_async_event *e)
{
	(void)c;
	if (!hw.gid_change_events) {
		errno = EAGAIN;
		return -1;
	}
	hw.gid_change_events--;
	memset(e, 0, sizeof(*e));
	e->event_type = IBV_EVENT_GID_CHANGE;
	e->element.port_num = 1;
	return 0;
}

void __wrap_ibv_ack_async_event(struct ibv_async_event *e);
void __wrap_ibv_ack_async_event(struct ibv_async_event *e)
{
	(void)e;
}

static void fe_completion(void *fe, const struct be_wc *wc)
{
	(void)fe;
	hw.completions++;
	hw.errors += wc->status != IBV_WC_SUCCESS;
}

static void fe_async_event(void *fe, const struct be_async_event *ev)
{
	(void)fe;
	hw.last_event = *ev;
	hw.events++;
	hw.rc_fatal += ev->type == IBV_EVENT_QP_FATAL && ev->obj == BE_OBJ_QP &&
		       ev->handle == QP_RC;
}

static const struct be_frontend_ops fe_ops = {
	.completion = fe_completion,
	.async_event = fe_async_event,
};

static int watch(void *ctx, int fd, void (*cb)(void *), void *arg)
{
	struct ibv_context *c = ctx;

	if (fd == c->async_fd) {
		hw.async_cb = cb;
		hw.async_arg = arg;
	}
	return 0;
}

struct fix {
	struct rdma_hca hca;
	struct ibv_context ctx;
	struct ibv_pd hpd;
	struct ibv_cq hcq;
	struct broker_link bl;
	struct be *be;
};

static void host_slot(const uint8_t gid[16])
{
	hw.slot[HOST_IDX].set = true;
	memcpy(hw.slot[HOST_IDX].gid, gid, 16);
	hw.slot[HOST_IDX].type = IBV_GID_TYPE_ROCE_V2;
}

static void qp_on(struct fix *f, uint32_t h, enum be_qp_type t)
{
	struct be_qp *q = &f->be->qp[h];

	q->used = true;
	q->gen = 1;
	q->type = t;
	q->qp = &hqp[h];
	hqp[h].context = &f->ctx;
	q->qpn = 0x100 + h;
	q->pd = 1;
	q->send_cq = q->recv_cq = 1;
	q->state = t == BE_QPT_UD ? IBV_QPS_RTS : IBV_QPS_INIT;
	q->av_gid = -1;
	q->cap.max_send_sge = 1;
	assert_int_equal(be_wq_init(&q->sq, 8, false), 0);
}

/* The guest GID table length the frontend asks for, the host port's. */
static uint32_t cfg_gids = 16, host_gids = 16;

static int setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));
	struct broker_link none = BROKER_LINK_NONE;
	struct be_cfg cfg;
	struct dev_env env = { .watch_fd = watch };
	struct be *be;

	assert_non_null(f);
	memset(&hw, 0, sizeof(hw));
	fake_sq_n = 0;
	log_init("test", LOG_LVL_ERR);
	f->ctx.ops.post_send = fake_post_send;
	f->ctx.ops.poll_cq = fake_poll_cq;
	f->ctx.async_fd = eventfd(0, EFD_CLOEXEC);
	f->hcq.context = &f->ctx;
	f->hca.ctx = &f->ctx;
	f->hca.port = 1;
	f->hca.dev.max_qp = f->hca.dev.max_cq = f->hca.dev.max_mr = 64;
	f->hca.dev.max_pd = f->hca.dev.max_srq = f->hca.dev.max_ah = 64;
	f->hca.dev.max_cqe = f->hca.dev.max_qp_wr = 1024;
	f->hca.dev.max_srq_wr = 1024;
	f->hca.dev.max_sge = f->hca.dev.max_srq_sge = 4;
	f->hca.port_attr.gid_tbl_len = (int)host_gids;
	/* the port as the worker cached it at start: our GID at slot 3 */
	f->hca.ngids = 1;
	memcpy(f->hca.gids[0].gid.raw, G_OURS, 16);
	f->hca.gids[0].index = HOST_IDX;
	f->hca.gids[0].gid_type = IBV_GID_TYPE_ROCE_V2;
	host_slot(G_OURS);
	f->bl = none; /* standalone: claims from the cached table */
	memset(&cfg, 0, sizeof(cfg));
	cfg.hca = &f->hca;
	be_limits_default(&cfg.lim);
	cfg.gid_tbl_len = cfg_gids;
	cfg.gids = &broker_link_gid_claims;
	cfg.gids_arg = &f->bl;
	env.loop_ctx = &f->ctx;
	assert_int_equal(be_create(&cfg, &env, &fe_ops, f, &be), 0);
	f->be = be;
	assert_non_null(hw.async_cb);
	assert_ptr_equal(f->bl.gid_gone_arg, be);
	be->pd[1].used = true;
	be->pd[1].pd = &f->hpd;
	be->cq[1] = (struct be_cq){ .used = true, .cq = &f->hcq, .cqe = 16 };
	qp_on(f, QP_UD, BE_QPT_UD);
	qp_on(f, QP_RC, BE_QPT_RC);
	/* guest GID index 0 and 1 are the same GID: host slot 3 */
	assert_int_equal(be_gid_add(be, 0, G_OURS, IBV_GID_TYPE_ROCE_V2, NULL),
			 0);
	assert_int_equal(be_gid_add(be, 1, G_OURS, IBV_GID_TYPE_ROCE_V2, NULL),
			 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;
	struct be *be = f->be;
	uint32_t h;

	/* the fake host objects are the test's: only the AHs are be's */
	for (h = QP_UD; h <= QP_RC; h++) {
		be_wq_drop_ahs(be, &be->qp[h].sq);
		be_wq_free(&be->qp[h].sq);
		memset(&be->qp[h], 0, sizeof(be->qp[h]));
	}
	be_ah_flush(be, 0);
	assert_int_equal(hw.ah_live, 0);
	be->cq[1].used = false;
	be->pd[1].used = false;
	be_destroy(be);
	assert_null(f->bl.gid_gone_arg);
	close(f->ctx.async_fd);
	free(f);
	return 0;
}

static struct reason why;

static enum ibv_wc_status send_from(struct fix *f, uint8_t sgid, uint8_t peer)
{
	enum ibv_wc_status st = IBV_WC_SUCCESS;
	struct be_send_wr w;

	memset(&w, 0, sizeof(w));
	w.opcode = IBV_WR_SEND;
	w.ud.av.global = true;
	w.ud.av.sgid_index = sgid;
	w.ud.av.dgid[0] = 0xfd;
	w.ud.av.dgid[15] = peer;
	w.ud.remote_qpn = 0x200;
	w.ud.remote_qkey = 0x1111;
	if (be_post_send(f->be, QP_UD, &w, &st, &why) == BE_POSTED)
		return IBV_WC_SUCCESS;
	return st;
}

static int rc_modify(struct fix *f, enum ibv_qp_state to, bool av)
{
	struct be_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = to;
	a.ah_attr.global = true;
	a.ah_attr.sgid_index = 0;
	a.ah_attr.dgid[15] = 0x20;
	return be_qp_modify(f->be, QP_RC, &a,
			    IBV_QP_STATE | (av ? IBV_QP_AV : 0));
}

static void complete_all(struct fix *f)
{
	unsigned int n = fake_sq_n;

	assert_int_equal(be_cq_poll(f->be, 1, 16), (int)n);
}

/* RC on index 0 in RTR, a cached AH on it: the live setup every case uses */
static void live_path(struct fix *f)
{
	unsigned int q0 = hw.queries;

	assert_int_equal(rc_modify(f, IBV_QPS_RTR, true), 0);
	assert_true(hw.queries > q0); /* read again before the RTR */
	assert_int_equal(send_from(f, 0, 'A'), IBV_WC_SUCCESS);
	assert_int_equal(hw.ah_live, 1);
	complete_all(f);
	/* a cached AH costs no query; the same GID at index 1 shares it */
	q0 = hw.queries;
	assert_int_equal(send_from(f, 1, 'A'), IBV_WC_SUCCESS);
	assert_int_equal(hw.queries, q0);
	assert_int_equal(hw.ah_created, 1);
	complete_all(f);
}

/* Both guest entries of the slot are dead, and everything on them. */
static void all_dead(struct fix *f)
{
	assert_int_equal(hw.ah_live, 0);
	assert_int_equal(hw.qp_state[QP_RC], IBV_QPS_ERR);
	assert_int_equal(f->be->qp[QP_RC].state, IBV_QPS_ERR);
	assert_int_equal(hw.rc_fatal, 1);
	/* the UD QP stays up, but its sends from either index are refused */
	assert_int_equal(send_from(f, 0, 'A'), IBV_WC_LOC_QP_OP_ERR);
	if (!strstr(why.msg, "no longer"))
		fail_msg("refused for another reason: %s", why.msg);
	assert_int_equal(send_from(f, 1, 'B'), IBV_WC_LOC_QP_OP_ERR);
	assert_int_equal(hw.ah_created, 1);
	assert_int_equal(f->be->qp[QP_UD].state, IBV_QPS_RTS);
	/* no path on it comes back */
	assert_int_equal(rc_modify(f, IBV_QPS_RTR, true), -EADDRNOTAVAIL);
	assert_int_equal(rc_modify(f, IBV_QPS_RTS, false), -EADDRNOTAVAIL);
	/* re-adding the GID (the address is back at its slot) revives it */
	host_slot(G_OURS);
	assert_int_equal(
		be_gid_add(f->be, 0, G_OURS, IBV_GID_TYPE_ROCE_V2, NULL), 0);
	assert_int_equal(send_from(f, 0, 'A'), IBV_WC_SUCCESS);
	assert_int_equal(send_from(f, 1, 'A'), IBV_WC_LOC_QP_OP_ERR);
	complete_all(f);
}

static void test_gid_change_event_kills_the_reused_slot(void **state)
{
	struct fix *f = *state;

	live_path(f);
	/* a GID_CHANGE that leaves our slot alone changes nothing */
	hw.gid_change_events = 1;
	hw.async_cb(hw.async_arg);
	assert_int_equal(hw.ah_live, 1);
	assert_int_equal(hw.events, 1); /* the port event, handed on */
	assert_int_equal(send_from(f, 0, 'A'), IBV_WC_SUCCESS);
	complete_all(f);
	/* the address left and another VM's claim took the slot */
	host_slot(G_OTHER);
	hw.gid_change_events = 1;
	hw.async_cb(hw.async_arg);
	assert_int_equal(hw.last_event.type, IBV_EVENT_GID_CHANGE);
	all_dead(f);
}

static void test_checked_again_before_a_new_ah(void **state)
{
	struct fix *f = *state;

	live_path(f);
	/* no event (yet): the slot emptied, then a send to a new peer */
	hw.slot[HOST_IDX].set = false;
	assert_int_equal(send_from(f, 0, 'B'), IBV_WC_LOC_QP_OP_ERR);
	all_dead(f);
}

static void test_checked_again_before_rtr(void **state)
{
	struct fix *f = *state;

	host_slot(G_OTHER);
	assert_int_equal(rc_modify(f, IBV_QPS_RTR, true), -EADDRNOTAVAIL);
	assert_int_equal(hw.qp_state[QP_RC], 0); /* nothing reached the host */
	assert_int_equal(send_from(f, 0, 'A'), IBV_WC_LOC_QP_OP_ERR);
	assert_int_equal(hw.ah_created, 0);
}

/* An AH a send still names dies when the send is done, not before. */
static void test_broker_gone_flushes_after_the_last_send(void **state)
{
	struct fix *f = *state;

	live_path(f);
	assert_int_equal(send_from(f, 0, 'A'), IBV_WC_SUCCESS); /* in flight */
	f->bl.on_gid_gone(f->bl.gid_gone_arg, G_OTHER);		/* not ours */
	assert_int_equal(hw.ah_live, 1);
	assert_int_equal(send_from(f, 0, 'A'), IBV_WC_SUCCESS);
	f->bl.on_gid_gone(f->bl.gid_gone_arg, G_OURS);
	assert_int_equal(hw.ah_live, 1); /* two sends name it */
	assert_int_equal(hw.qp_state[QP_RC], IBV_QPS_ERR);
	complete_all(f);
	assert_int_equal(hw.ah_live, 0);
	/* the slot may even hold our GID again: the broker's word stands
	 * until the guest adds the GID anew */
	all_dead(f);
}

/*
 * virtio-rdma's ABI numbers 512 entries, a host may have 1024: the guest
 * is offered the 256 an address vector's 8-bit index can name.
 */
static int setup_long(void **state)
{
	cfg_gids = BE_MAX_GIDS;
	host_gids = 1024;
	return setup(state);
}

static void test_table_no_longer_than_an_av_names(void **state)
{
	struct fix *f = *state;

	cfg_gids = host_gids = 16;
	assert_int_equal(f->be->gid_tbl_len, 256);
	assert_int_equal(
		be_gid_add(f->be, 255, G_OURS, IBV_GID_TYPE_ROCE_V2, NULL), 0);
	assert_int_equal(
		be_gid_add(f->be, 256, G_OURS, IBV_GID_TYPE_ROCE_V2, NULL),
		-EINVAL);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_gid_change_event_kills_the_reused_slot),
		T(test_checked_again_before_a_new_ah),
		T(test_checked_again_before_rtr),
		T(test_broker_gone_flushes_after_the_last_send),
		cmocka_unit_test_setup_teardown(
			test_table_no_longer_than_an_av_names, setup_long,
			teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
