// SPDX-License-Identifier: MIT
/*
 * The pure parts of the guest simulator's PVRDMA provider: ring indices,
 * WQE encoders, the CQE decoder, attribute translations (no I/O).
 */
#include "guest/pvrdma_wqe.h"

#include <errno.h>
#include <string.h>

#include "common/cleanup.h"

/* ---- ring indices (pure) ---- */

bool pvrdma_idx_valid(uint32_t idx, uint32_t n)
{
	/* the driver's test: no bit above the wrap bit */
	return (idx & ~((n << 1) - 1)) == 0;
}

static uint32_t load_idx(const int32_t *p)
{
	return (uint32_t)__atomic_load_n(p, __ATOMIC_ACQUIRE);
}

int pvrdma_ring_has_space(const struct pvrdma_ring *r, uint32_t n,
			  uint32_t *ret_tail)
{
	uint32_t tail = load_idx(&r->prod_tail);
	uint32_t head = load_idx(&r->cons_head);

	if (!pvrdma_idx_valid(tail, n) || !pvrdma_idx_valid(head, n))
		return -1;
	*ret_tail = tail & (n - 1);
	return tail != (head ^ n);
}

int pvrdma_ring_has_data(const struct pvrdma_ring *r, uint32_t n,
			 uint32_t *ret_head)
{
	uint32_t tail = load_idx(&r->prod_tail);
	uint32_t head = load_idx(&r->cons_head);

	if (!pvrdma_idx_valid(tail, n) || !pvrdma_idx_valid(head, n))
		return -1;
	*ret_head = head & (n - 1);
	return tail != head;
}

void pvrdma_ring_inc(int32_t *idx, uint32_t n)
{
	uint32_t v = (load_idx(idx) + 1) & ((n << 1) - 1);

	__atomic_store_n(idx, (int32_t)v, __ATOMIC_RELEASE);
}

/* ---- pure parts ---- */

uint32_t pvrdma_pow2(uint32_t v)
{
	uint32_t p = 1;

	while (p < v && p < (1u << 31))
		p <<= 1;
	return p;
}

uint32_t pvrdma_sq_wqe_size(uint32_t max_sge)
{
	return pvrdma_pow2((uint32_t)pvrdma_sq_wqe_bytes(max_sge));
}

uint32_t pvrdma_rq_wqe_size(uint32_t max_sge)
{
	return pvrdma_pow2((uint32_t)pvrdma_rq_wqe_bytes(max_sge));
}

int pvrdma_wr_opcode(uint32_t op)
{
	switch (op) {
	case VIRTIO_RDMA_WR_RDMA_WRITE:
		return PVRDMA_WR_RDMA_WRITE;
	case VIRTIO_RDMA_WR_RDMA_WRITE_WITH_IMM:
		return PVRDMA_WR_RDMA_WRITE_WITH_IMM;
	case VIRTIO_RDMA_WR_SEND:
		return PVRDMA_WR_SEND;
	case VIRTIO_RDMA_WR_SEND_WITH_IMM:
		return PVRDMA_WR_SEND_WITH_IMM;
	case VIRTIO_RDMA_WR_RDMA_READ:
		return PVRDMA_WR_RDMA_READ;
	case VIRTIO_RDMA_WR_ATOMIC_CMP_AND_SWP:
		return PVRDMA_WR_ATOMIC_CMP_AND_SWP;
	case VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD:
		return PVRDMA_WR_ATOMIC_FETCH_AND_ADD;
	default:
		return -EINVAL; /* the provider has no other verbs path */
	}
}

int pvrdma_qp_type(uint8_t t)
{
	switch (t) {
	case VIRTIO_RDMA_QPT_GSI:
		return PVRDMA_QPT_GSI;
	case VIRTIO_RDMA_QPT_RC:
		return PVRDMA_QPT_RC;
	case VIRTIO_RDMA_QPT_UD:
		return PVRDMA_QPT_UD;
	default:
		return -EOPNOTSUPP; /* vmw_pvrdma: RC, UD and GSI only */
	}
}

static uint32_t wc_opcode(uint32_t op)
{
	static const uint32_t map[] = {
		[PVRDMA_WC_SEND] = VIRTIO_RDMA_WC_SEND,
		[PVRDMA_WC_RDMA_WRITE] = VIRTIO_RDMA_WC_RDMA_WRITE,
		[PVRDMA_WC_RDMA_READ] = VIRTIO_RDMA_WC_RDMA_READ,
		[PVRDMA_WC_COMP_SWAP] = VIRTIO_RDMA_WC_COMP_SWAP,
		[PVRDMA_WC_FETCH_ADD] = VIRTIO_RDMA_WC_FETCH_ADD,
		[PVRDMA_WC_BIND_MW] = VIRTIO_RDMA_WC_BIND_MW,
		[PVRDMA_WC_LSO] = VIRTIO_RDMA_WC_TSO,
		[PVRDMA_WC_LOCAL_INV] = VIRTIO_RDMA_WC_LOCAL_INV,
		[PVRDMA_WC_FAST_REG_MR] = VIRTIO_RDMA_WC_REG_MR,
		[PVRDMA_WC_MASKED_COMP_SWAP] = VIRTIO_RDMA_WC_MASKED_COMP_SWAP,
		[PVRDMA_WC_MASKED_FETCH_ADD] = VIRTIO_RDMA_WC_MASKED_FETCH_ADD,
	};

	if (op == PVRDMA_WC_RECV)
		return VIRTIO_RDMA_WC_RECV;
	if (op == PVRDMA_WC_RECV_RDMA_WITH_IMM)
		return VIRTIO_RDMA_WC_RECV_RDMA_WITH_IMM;
	/* unknown: keep the value, the caller sees an opcode it never asked
	 * for (the provider's default maps to IBV_WC_SEND, hiding it) */
	return op < ARRAY_SIZE(map) ? map[op] : op;
}

static void encode_wr_union(const struct gv_send_wr *wr, uint8_t qp_type,
			    const struct pvrdma_av *av,
			    struct pvrdma_sq_wqe_hdr *h)
{
	if (qp_type == VIRTIO_RDMA_QPT_UD || qp_type == VIRTIO_RDMA_QPT_GSI) {
		h->wr.ud.remote_qpn = wr->wr.ud.remote_qpn;
		h->wr.ud.remote_qkey = wr->wr.ud.remote_qkey;
		if (av)
			h->wr.ud.av = *av;
	} else if (gv_wr_is_rdma(wr->opcode)) {
		h->wr.rdma.remote_addr = wr->wr.rdma.remote_addr;
		h->wr.rdma.rkey = wr->wr.rdma.rkey;
	} else if (gv_wr_is_atomic(wr->opcode)) {
		h->wr.atomic.remote_addr = wr->wr.atomic.remote_addr;
		h->wr.atomic.rkey = wr->wr.atomic.rkey;
		h->wr.atomic.compare_add = wr->wr.atomic.compare_add;
		if (wr->opcode == VIRTIO_RDMA_WR_ATOMIC_CMP_AND_SWP)
			h->wr.atomic.swap = wr->wr.atomic.swap;
	}
}

int pvrdma_encode_send(const struct gv_send_wr *wr, uint8_t qp_type,
		       const struct pvrdma_av *av, uint32_t max_sge, void *slot,
		       size_t wqe_size)
{
	struct pvrdma_sq_wqe_hdr h = { 0 };
	struct pvrdma_sge *sge =
		(struct pvrdma_sge *)((uint8_t *)slot + sizeof(h));
	int op = pvrdma_wr_opcode(wr->opcode);

	if (op < 0 || wr->num_sge > max_sge || (wr->num_sge && !wr->sg_list) ||
	    (wr->send_flags & VIRTIO_RDMA_SEND_INLINE) ||
	    pvrdma_sq_wqe_bytes(wr->num_sge) > wqe_size)
		return -EINVAL;
	h.wr_id = wr->wr_id;
	h.num_sge = wr->num_sge;
	h.opcode = (uint32_t)op;
	/* IB send flags and PVRDMA's share their bits */
	h.send_flags =
		wr->send_flags & (PVRDMA_SEND_FENCE | PVRDMA_SEND_SIGNALED |
				  PVRDMA_SEND_SOLICITED);
	if (wr->opcode == VIRTIO_RDMA_WR_SEND_WITH_IMM ||
	    wr->opcode == VIRTIO_RDMA_WR_RDMA_WRITE_WITH_IMM)
		h.ex.imm_data = wr->imm_data;
	encode_wr_union(wr, qp_type, av, &h);
	memcpy(slot, &h, sizeof(h));
	for (uint32_t i = 0; i < wr->num_sge; i++) {
		struct pvrdma_sge s = { .addr = wr->sg_list[i].addr,
					.length = wr->sg_list[i].length,
					.lkey = wr->sg_list[i].lkey };

		memcpy(&sge[i], &s, sizeof(s));
	}
	return 0;
}

int pvrdma_encode_recv(const struct gv_recv_wr *wr, uint32_t max_sge,
		       void *slot, size_t wqe_size)
{
	struct pvrdma_rq_wqe_hdr h = { .wr_id = wr->wr_id,
				       .num_sge = wr->num_sge };
	struct pvrdma_sge *sge =
		(struct pvrdma_sge *)((uint8_t *)slot + sizeof(h));

	if (wr->num_sge > max_sge || (wr->num_sge && !wr->sg_list) ||
	    pvrdma_rq_wqe_bytes(wr->num_sge) > wqe_size)
		return -EINVAL;
	memcpy(slot, &h, sizeof(h));
	for (uint32_t i = 0; i < wr->num_sge; i++) {
		struct pvrdma_sge s = { .addr = wr->sg_list[i].addr,
					.length = wr->sg_list[i].length,
					.lkey = wr->sg_list[i].lkey };

		memcpy(&sge[i], &s, sizeof(s));
	}
	return 0;
}

void pvrdma_decode_cqe(const struct pvrdma_cqe *c, uint32_t qp_num,
		       struct gv_wc *w)
{
	memset(w, 0, sizeof(*w));
	w->wr_id = c->wr_id;
	/* wc status values are the IB ones on both sides */
	w->status = c->status;
	w->opcode = wc_opcode(c->opcode);
	w->qp_num = qp_num;
	w->byte_len = c->byte_len;
	w->imm_data = c->imm_data;
	w->src_qp = c->src_qp;
	w->wc_flags = c->wc_flags;
	w->pkey_index = c->pkey_index;
	w->slid = c->slid;
	w->sl = c->sl;
	w->dlid_path_bits = c->dlid_path_bits;
	w->port_num = c->port_num;
	w->vendor_err = 0; /* the provider drops it */
}

void pvrdma_fill_av(const struct gv_ah_attr *a, uint32_t pd_handle,
		    struct pvrdma_av *av)
{
	memset(av, 0, sizeof(*av));
	av->port_pd = pd_handle | (uint32_t)VIRTIO_RDMA_PORT << 24;
	av->src_path_bits = 0x80; /* path bits 0, GRH present */
	av->gid_index = a->sgid_index;
	av->hop_limit = a->hop_limit;
	/* no SL here: pvrdma_create_ah() leaves it out of the AV */
	av->sl_tclass_flowlabel =
		(uint32_t)a->traffic_class << 20 | a->flow_label;
	memcpy(av->dgid, a->dgid, 16);
}

static void ah_to_dev(const struct virtio_rdma_ah_attr *a,
		      struct pvrdma_ah_attr *p)
{
	memcpy(p->grh.dgid.raw, a->grh.dgid, 16);
	p->grh.flow_label = a->grh.flow_label;
	p->grh.sgid_index = a->grh.sgid_index;
	p->grh.hop_limit = a->grh.hop_limit;
	p->grh.traffic_class = a->grh.traffic_class;
	p->sl = a->sl;
	p->static_rate = a->static_rate;
	p->ah_flags = a->ah_flags;
	p->port_num = a->port_num;
	memcpy(p->dmac, a->dmac, 6);
}

static void ah_from_dev(const struct pvrdma_ah_attr *p,
			struct virtio_rdma_ah_attr *a)
{
	memcpy(a->grh.dgid, p->grh.dgid.raw, 16);
	a->grh.flow_label = p->grh.flow_label;
	a->grh.sgid_index = p->grh.sgid_index;
	a->grh.hop_limit = p->grh.hop_limit;
	a->grh.traffic_class = p->grh.traffic_class;
	a->sl = p->sl;
	a->static_rate = p->static_rate;
	a->ah_flags = p->ah_flags;
	a->port_num = p->port_num;
	memcpy(a->dmac, p->dmac, 6);
}

/* The scalar fields, in the order both structs share (IB's). */
#define QP_ATTR_SCALARS(X)                                                     \
	X(qp_state)                                                            \
	X(cur_qp_state)                                                        \
	X(path_mtu)                                                            \
	X(path_mig_state)                                                      \
	X(qkey)                                                                \
	X(rq_psn)                                                              \
	X(sq_psn)                                                              \
	X(dest_qp_num)                                                         \
	X(qp_access_flags)                                                     \
	X(pkey_index)                                                          \
	X(alt_pkey_index)                                                      \
	X(en_sqd_async_notify)                                                 \
	X(sq_draining)                                                         \
	X(max_rd_atomic)                                                       \
	X(max_dest_rd_atomic)                                                  \
	X(min_rnr_timer)                                                       \
	X(port_num)                                                            \
	X(timeout)                                                             \
	X(retry_cnt)                                                           \
	X(rnr_retry)                                                           \
	X(alt_port_num)                                                        \
	X(alt_timeout)                                                         \
	X(cap.max_send_wr)                                                     \
	X(cap.max_recv_wr)                                                     \
	X(cap.max_send_sge)                                                    \
	X(cap.max_recv_sge)                                                    \
	X(cap.max_inline_data)

void pvrdma_qp_attr_to_dev(const struct virtio_rdma_qp_attr *a,
			   struct pvrdma_qp_attr *p)
{
	memset(p, 0, sizeof(*p));
#define TO_DEV(f) p->f = a->f;
	QP_ATTR_SCALARS(TO_DEV)
#undef TO_DEV
	ah_to_dev(&a->ah_attr, &p->ah_attr);
	ah_to_dev(&a->alt_ah_attr, &p->alt_ah_attr);
}

void pvrdma_qp_attr_from_dev(const struct pvrdma_qp_attr *p,
			     struct virtio_rdma_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
#define FROM_DEV(f) a->f = p->f;
	QP_ATTR_SCALARS(FROM_DEV)
#undef FROM_DEV
	ah_from_dev(&p->ah_attr, &a->ah_attr);
	ah_from_dev(&p->alt_ah_attr, &a->alt_ah_attr);
}

void pvrdma_port_attr_from_dev(const struct pvrdma_port_attr *p,
			       struct virtio_rdma_port_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->state = p->state;
	a->max_mtu = p->max_mtu;
	a->active_mtu = p->active_mtu;
	a->gid_tbl_len = (int32_t)p->gid_tbl_len;
	a->port_cap_flags = p->port_cap_flags;
	a->max_msg_sz = p->max_msg_sz;
	a->bad_pkey_cntr = p->bad_pkey_cntr;
	a->qkey_viol_cntr = p->qkey_viol_cntr;
	a->pkey_tbl_len = p->pkey_tbl_len;
	a->active_width = p->active_width;
	a->active_speed = p->active_speed;
	a->phys_state = p->phys_state;
}
