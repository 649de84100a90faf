// SPDX-License-Identifier: MIT
/* Test double of the backend and the vfio-user services (fake_be.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "worker/vfio_user/pci_fn.h"
#include "fake_be.h"

struct be *fake_be_last;

static int take(struct fake_obj *t, void *ctx, uint32_t *ret)
{
	uint32_t i;

	for (i = 1; i < FAKE_MAX; i++) {
		if (!t[i].live) {
			memset(&t[i], 0, sizeof(t[i]));
			t[i].live = true;
			t[i].ctx = ctx;
			*ret = i;
			return 0;
		}
	}
	return -ENOSPC;
}

static int drop(struct fake_obj *t, uint32_t h)
{
	if (h == 0 || h >= FAKE_MAX || !t[h].live)
		return -EINVAL;
	t[h].live = false;
	return 0;
}

static bool live(const struct fake_obj *t, uint32_t h)
{
	return h && h < FAKE_MAX && t[h].live;
}

unsigned int fake_be_live(const struct be *be)
{
	unsigned int i, n = 0;

	for (i = 0; i < FAKE_MAX; i++)
		n += be->pd[i].live + be->mr[i].live + be->cq[i].live +
		     be->qp[i].live + be->srq[i].live;
	return n;
}

int be_create(const struct be_cfg *cfg, const struct dev_env *env,
	      const struct be_frontend_ops *ops, void *fe, struct be **ret_be)
{
	struct be *be = calloc(1, sizeof(*be));

	(void)cfg;
	(void)env;
	if (!be)
		return -ENOMEM;
	be->ops = ops;
	be->fe = fe;
	be->attr.max_qp = FAKE_MAX - 1;
	be->attr.max_cq = FAKE_MAX - 1;
	be->attr.max_srq = FAKE_MAX - 1;
	be->attr.max_pd = FAKE_MAX - 1;
	be->attr.max_mr = FAKE_MAX - 1;
	be->attr.max_qp_wr = 1024;
	be->attr.max_cqe = 4096;
	be->attr.max_sge = 8;
	be->attr.max_srq_wr = 1024;
	be->attr.max_srq_sge = 8;
	be->attr.max_mr_size = 1ull << 32;
	be->attr.atomic_cap = IBV_ATOMIC_HCA;
	be->post_result = BE_POSTED;
	fake_be_last = be;
	*ret_be = be;
	return 0;
}

void be_destroy(struct be *be)
{
	if (fake_be_last == be)
		fake_be_last = NULL;
	free(be);
}

void be_reset(struct be *be)
{
	struct be_frontend_ops const *ops = be->ops;
	void *fe = be->fe;
	struct ibv_device_attr a = be->attr;
	unsigned int resets = be->resets + 1;

	memset(be, 0, sizeof(*be));
	be->ops = ops;
	be->fe = fe;
	be->attr = a;
	be->resets = resets;
	be->post_result = BE_POSTED;
}

void be_set_mem(struct be *be, const struct guest_mem *gm)
{
	(void)be;
	(void)gm;
}

/* Counts the call; MRs stay (what the real one revokes is its own). */
unsigned int be_mem_revoke(struct be *be, uint64_t gpa, uint64_t size)
{
	be->revokes++;
	be->revoke_gpa = gpa;
	be->revoke_size = size;
	return 0;
}

const struct ibv_device_attr *be_device_attr(const struct be *be)
{
	return &be->attr;
}

void be_query_port(struct be *be, struct ibv_port_attr *ret)
{
	(void)be;
	memset(ret, 0, sizeof(*ret));
	ret->state = IBV_PORT_ACTIVE;
	ret->max_mtu = IBV_MTU_4096;
	ret->active_mtu = IBV_MTU_1024;
	ret->max_msg_sz = 1u << 31;
	ret->port_cap_flags = 0x04010000; /* IP_BASED_GIDS | CM_SUP */
}

int be_query_pkey(struct be *be, uint32_t index, uint16_t *ret_pkey)
{
	(void)be;
	if (index != 0)
		return -EINVAL;
	*ret_pkey = 0xffff;
	return 0;
}

int be_gid_add(struct be *be, uint32_t index, const uint8_t gid[16],
	       uint32_t gid_type, void *cookie)
{
	(void)gid;
	(void)cookie;
	if (index >= BE_MAX_GIDS || gid_type != IBV_GID_TYPE_ROCE_V2)
		return -EINVAL;
	if (be->gid_add_result < 0)
		return be->gid_add_result;
	be->gid[index] = true;
	return be->gid_add_result;
}

int be_gid_del(struct be *be, uint32_t index)
{
	if (index >= BE_MAX_GIDS || !be->gid[index])
		return -ENOENT;
	be->gid[index] = false;
	return 0;
}

int be_pd_create(struct be *be, uint32_t want, uint32_t *ret_pd)
{
	(void)want;
	return take(be->pd, NULL, ret_pd);
}

int be_pd_destroy(struct be *be, uint32_t pd)
{
	uint32_t i;

	for (i = 0; i < FAKE_MAX; i++)
		if ((be->mr[i].live && be->mr[i].pd == pd) ||
		    (be->qp[i].live && be->qp[i].pd == pd))
			return -EBUSY;
	return drop(be->pd, pd);
}

static int mr_take(struct be *be, uint32_t pd, struct be_mr_info *ret)
{
	uint32_t h;
	int r;

	if (!live(be->pd, pd))
		return -EINVAL;
	r = take(be->mr, NULL, &h);
	if (r < 0)
		return r;
	be->mr[h].pd = pd;
	ret->handle = h;
	ret->lkey = 0x100 + h;
	ret->rkey = 0x200 + h;
	return 0;
}

int be_mr_reg_dma(struct be *be, uint32_t pd, unsigned int access,
		  struct be_mr_info *ret)
{
	be->last_mr_access = access;
	return mr_take(be, pd, ret);
}

int be_mr_reg(struct be *be, uint32_t pd, const struct rdma_mr_layout *lay,
	      unsigned int access, struct be_mr_info *ret)
{
	if (!lay->npages || !lay->nruns)
		return -EINVAL;
	be->last_mr_access = access;
	return mr_take(be, pd, ret);
}

int be_mr_dereg(struct be *be, uint32_t mr)
{
	return drop(be->mr, mr);
}

int be_cq_create(struct be *be, uint32_t want, uint32_t cqe, void *ctx,
		 uint32_t *ret_cq, uint32_t *ret_cqe)
{
	(void)want;
	if (cqe > (uint32_t)be->attr.max_cqe)
		return -EINVAL;
	*ret_cqe = cqe;
	return take(be->cq, ctx, ret_cq);
}

int be_cq_resize(struct be *be, uint32_t cq, uint32_t cqe, uint32_t *ret_cqe)
{
	if (!live(be->cq, cq))
		return -EINVAL;
	*ret_cqe = cqe;
	return 0;
}

int be_cq_destroy(struct be *be, uint32_t cq)
{
	uint32_t i;

	for (i = 0; i < FAKE_MAX; i++)
		if (be->qp[i].live &&
		    (be->qp[i].scq == cq || be->qp[i].rcq == cq))
			return -EBUSY;
	return drop(be->cq, cq);
}

int be_cq_poll(struct be *be, uint32_t cq, unsigned int budget)
{
	(void)cq;
	(void)budget;
	be->polls++;
	return 0;
}

void be_poll(struct be *be)
{
	be->polls++;
}

void be_cq_error(struct be *be, uint32_t cq)
{
	(void)cq;
	be->cq_errors++;
}

int be_qp_create(struct be *be, uint32_t want, const struct be_qp_init *init,
		 struct be_qp_info *ret)
{
	uint32_t h;
	int r;

	(void)want;
	if (!live(be->pd, init->pd) || !live(be->cq, init->send_cq) ||
	    !live(be->cq, init->recv_cq) ||
	    (init->srq && !live(be->srq, init->srq)))
		return -EINVAL;
	r = take(be->qp, init->ctx, &h);
	if (r < 0)
		return r;
	be->qp[h].pd = init->pd;
	be->qp[h].scq = init->send_cq;
	be->qp[h].rcq = init->recv_cq;
	be->qp[h].qpn = init->type == BE_QPT_GSI ? 1 : 0x1000 + h;
	ret->handle = h;
	ret->qp_num = be->qp[h].qpn;
	ret->cap = init->cap;
	return 0;
}

int be_qp_modify(struct be *be, uint32_t qp, const struct be_qp_attr *attr,
		 int mask)
{
	(void)attr;
	(void)mask;
	return live(be->qp, qp) ? 0 : -EINVAL;
}

int be_qp_query(struct be *be, uint32_t qp, int mask, struct be_qp_attr *ret)
{
	(void)mask;
	if (!live(be->qp, qp))
		return -EINVAL;
	memset(ret, 0, sizeof(*ret));
	ret->qp_state = IBV_QPS_RTS;
	ret->dest_qp_num = 0x77;
	return 0;
}

int be_qp_destroy(struct be *be, uint32_t qp)
{
	return drop(be->qp, qp);
}

int be_srq_create(struct be *be, uint32_t want, const struct be_srq_init *in,
		  uint32_t *ret_srq, struct ibv_srq_attr *ret_attr)
{
	(void)want;
	if (!live(be->pd, in->pd))
		return -EINVAL;
	ret_attr->max_wr = in->max_wr;
	ret_attr->max_sge = in->max_sge;
	ret_attr->srq_limit = in->srq_limit;
	return take(be->srq, in->ctx, ret_srq);
}

int be_srq_modify(struct be *be, uint32_t srq, const struct ibv_srq_attr *attr,
		  int mask)
{
	(void)attr;
	(void)mask;
	return live(be->srq, srq) ? 0 : -EINVAL;
}

int be_srq_query(struct be *be, uint32_t srq, struct ibv_srq_attr *ret)
{
	if (!live(be->srq, srq))
		return -EINVAL;
	memset(ret, 0, sizeof(*ret));
	ret->srq_limit = 3;
	return 0;
}

int be_srq_destroy(struct be *be, uint32_t srq)
{
	return drop(be->srq, srq);
}

/* The fake posts at once: a batch changes nothing it records. */
void be_batch_begin(struct be *be)
{
	(void)be;
}

void be_batch_end(struct be *be)
{
	(void)be;
}

enum be_post be_post_send(struct be *be, uint32_t qp,
			  const struct be_send_wr *wr,
			  enum ibv_wc_status *ret_status, struct reason *why)
{
	if (!live(be->qp, qp)) {
		*ret_status = IBV_WC_LOC_QP_OP_ERR;
		reason_set(why, "no such QP");
		return BE_DONE;
	}
	be->sends++;
	be->last_send = *wr;
	memcpy(be->last_send_sge, wr->sge, wr->num_sge * sizeof(*wr->sge));
	*ret_status = be->post_status;
	return be->post_result;
}

enum be_post be_post_recv(struct be *be, uint32_t qp,
			  const struct be_recv_wr *wr,
			  enum ibv_wc_status *ret_status, struct reason *why)
{
	(void)why;
	if (!live(be->qp, qp))
		return BE_DONE;
	be->recvs++;
	be->last_recv = *wr;
	*ret_status = be->post_status;
	return be->post_result;
}

enum be_post be_post_srq_recv(struct be *be, uint32_t srq,
			      const struct be_recv_wr *wr,
			      enum ibv_wc_status *ret_status,
			      struct reason *why)
{
	(void)why;
	(void)ret_status;
	if (!live(be->srq, srq))
		return BE_DONE;
	be->srq_recvs++;
	be->last_recv = *wr;
	return BE_POSTED;
}

void fake_be_complete(struct be *be, uint32_t qp, bool recv, uint64_t cookie,
		      enum ibv_wc_status status, enum ibv_wc_opcode op,
		      uint32_t byte_len)
{
	struct be_wc wc;

	memset(&wc, 0, sizeof(wc));
	/* the test's QP knows its CQs: the device's qp ctx leads there */
	wc.wq_ctx = be->qp[qp].ctx;
	wc.cq_ctx = be->cq[recv ? be->qp[qp].rcq : be->qp[qp].scq].ctx;
	wc.qp = qp;
	wc.qp_num = be->qp[qp].qpn;
	wc.recv = recv;
	wc.signaled = true;
	wc.cookie = cookie;
	wc.status = status;
	wc.opcode = op;
	wc.byte_len = byte_len;
	be->ops->completion(be->fe, &wc);
}

void fake_be_event(struct be *be, enum ibv_event_type type, enum be_obj obj,
		   uint32_t handle)
{
	struct be_async_event ev = { type, obj, handle, NULL };
	const struct fake_obj *t = obj == BE_OBJ_QP    ? be->qp
				   : obj == BE_OBJ_CQ  ? be->cq
				   : obj == BE_OBJ_SRQ ? be->srq
						       : NULL;

	/*
	 * As the real backend (objects.c, async_ready): an event reaches
	 * the frontend only for a live object of ours; ibv_destroy_qp
	 * waits for its events to be acked, so none follows a destroy.
	 */
	if (t) {
		if (!live(t, handle))
			return;
		ev.ctx = t[handle].ctx;
	}
	be->ops->async_event(be->fe, &ev);
}

/* ---- vfio-user services ---- */

void fake_fn_init(struct pci_fn *fn, struct fake_ram *ram)
{
	memset(fn, 0, sizeof(*fn));
	fn->gm.nregions = 1;
	fn->gm.regions[0].gpa = FAKE_RAM_BASE;
	fn->gm.regions[0].size = ram->pages * PVRDMA_PAGE_SIZE;
	fn->gm.regions[0].host = ram->mem;
	fn->gm.regions[0].fd = -1;
	fn->gm.regions[0].prot = PROT_READ | PROT_WRITE;
	fn->bus_master = true;
}

int pci_fn_raise(struct pci_fn *fn, unsigned int vector)
{
	if (vector >= 3)
		return -EINVAL;
	fn->raised[vector]++;
	return 0;
}

const struct guest_mem *pci_fn_mem(const struct pci_fn *fn)
{
	return &fn->gm;
}

bool pci_fn_bus_master(const struct pci_fn *fn)
{
	return fn->bus_master;
}
