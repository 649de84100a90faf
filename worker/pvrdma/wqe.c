// SPDX-License-Identifier: MIT
/* PVRDMA WQE decoders and CQE encoder (see wqe.h). */
#include <errno.h>
#include <string.h>

#include "worker/pvrdma/wqe.h"

/* Opcodes offered, and on which QP types (bit 1 << be_qp_type). */
#define QPT(t) (1u << (t))
#define ON_ALL                                                                 \
	(QPT(BE_QPT_GSI) | QPT(BE_QPT_RC) | QPT(BE_QPT_UC) | QPT(BE_QPT_UD))
#define ON_CONN (QPT(BE_QPT_RC) | QPT(BE_QPT_UC))

struct op_desc {
	enum ibv_wr_opcode ibv;
	enum ibv_wc_opcode wc;
	uint32_t qp_types;
	uint8_t kind; /* which union member of the WQE it uses */
};

enum { K_NONE, K_RDMA, K_ATOMIC };

static const struct op_desc ops[] = {
	[PVRDMA_WR_RDMA_WRITE] = { IBV_WR_RDMA_WRITE, IBV_WC_RDMA_WRITE,
				   ON_CONN, K_RDMA },
	[PVRDMA_WR_RDMA_WRITE_WITH_IMM] = { IBV_WR_RDMA_WRITE_WITH_IMM,
					    IBV_WC_RDMA_WRITE, ON_CONN,
					    K_RDMA },
	[PVRDMA_WR_SEND] = { IBV_WR_SEND, IBV_WC_SEND, ON_ALL, K_NONE },
	[PVRDMA_WR_SEND_WITH_IMM] = { IBV_WR_SEND_WITH_IMM, IBV_WC_SEND, ON_ALL,
				      K_NONE },
	[PVRDMA_WR_RDMA_READ] = { IBV_WR_RDMA_READ, IBV_WC_RDMA_READ,
				  QPT(BE_QPT_RC), K_RDMA },
	[PVRDMA_WR_ATOMIC_CMP_AND_SWP] = { IBV_WR_ATOMIC_CMP_AND_SWP,
					   IBV_WC_COMP_SWAP, QPT(BE_QPT_RC),
					   K_ATOMIC },
	[PVRDMA_WR_ATOMIC_FETCH_AND_ADD] = { IBV_WR_ATOMIC_FETCH_AND_ADD,
					     IBV_WC_FETCH_ADD, QPT(BE_QPT_RC),
					     K_ATOMIC },
};
#define N_OPS (sizeof(ops) / sizeof(ops[0]))

/* PVRDMA send flags rdmagate passes (INLINE: max_inline_data is 0). */
#define SEND_FLAGS_OK                                                          \
	(PVRDMA_SEND_FENCE | PVRDMA_SEND_SIGNALED | PVRDMA_SEND_SOLICITED)

enum ibv_wc_opcode pvrdma_send_wc_opcode(uint32_t op)
{
	return op < N_OPS && ops[op].qp_types ? ops[op].wc : IBV_WC_SEND;
}

static unsigned int send_flags(uint32_t f)
{
	return ((f & PVRDMA_SEND_FENCE) ? IBV_SEND_FENCE : 0) |
	       ((f & PVRDMA_SEND_SIGNALED) ? IBV_SEND_SIGNALED : 0) |
	       ((f & PVRDMA_SEND_SOLICITED) ? IBV_SEND_SOLICITED : 0);
}

static int copy_sges(const uint8_t *p, size_t len, size_t hdr, uint32_t n,
		     uint32_t max, struct be_sge *out, struct reason *why)
{
	struct pvrdma_sge s;
	uint32_t i;

	if (n > max || n > BE_MAX_SGE)
		return reason_fail(why, -EINVAL, "%u SGEs (the queue has %u)",
				   n, max);
	if ((uint64_t)n * sizeof(s) > len - hdr)
		return reason_fail(why, -EINVAL,
				   "%u SGEs overrun the %zu-byte WQE", n, len);
	for (i = 0; i < n; i++) {
		memcpy(&s, p + hdr + (size_t)i * sizeof(s), sizeof(s));
		out[i].addr = s.addr;
		out[i].length = s.length;
		out[i].lkey = s.lkey;
	}
	return 0;
}

static int decode_av(const struct pvrdma_av *av, uint32_t gid_tbl_len,
		     struct be_ah_attr *out, struct reason *why)
{
	if ((av->port_pd >> 24) != 1)
		return reason_fail(why, -EINVAL, "address vector on port %u",
				   av->port_pd >> 24);
	if (av->gid_index >= gid_tbl_len)
		return reason_fail(why, -EINVAL, "address vector GID index %u",
				   av->gid_index);
	memset(out, 0, sizeof(*out));
	memcpy(out->dgid, av->dgid, sizeof(out->dgid));
	out->flow_label = av->sl_tclass_flowlabel & 0xfffff;
	out->traffic_class = (av->sl_tclass_flowlabel >> 20) & 0xff;
	out->sl = av->sl_tclass_flowlabel >> 28;
	out->sgid_index = av->gid_index;
	out->hop_limit = av->hop_limit;
	out->static_rate = av->stat_rate;
	out->global = true;
	return 0;
}

static int decode_send_body(const struct pvrdma_sq_wqe_hdr *h,
			    const struct op_desc *d,
			    const struct pvrdma_sq_limits *lim,
			    struct be_send_wr *wr, struct reason *why)
{
	if (d->kind == K_RDMA) {
		wr->wr.rdma.remote_addr = h->wr.rdma.remote_addr;
		wr->wr.rdma.rkey = h->wr.rdma.rkey;
	} else if (d->kind == K_ATOMIC) {
		if (h->wr.atomic.remote_addr & 7)
			return reason_fail(
				why, -EINVAL, "atomic at unaligned 0x%llx",
				(unsigned long long)h->wr.atomic.remote_addr);
		wr->wr.atomic.remote_addr = h->wr.atomic.remote_addr;
		wr->wr.atomic.compare_add = h->wr.atomic.compare_add;
		wr->wr.atomic.swap = h->wr.atomic.swap;
		wr->wr.atomic.rkey = h->wr.atomic.rkey;
	}
	if (lim->qp_type != BE_QPT_UD && lim->qp_type != BE_QPT_GSI)
		return 0;
	wr->ud.remote_qpn = h->wr.ud.remote_qpn & 0xffffff;
	wr->ud.remote_qkey = h->wr.ud.remote_qkey;
	return decode_av(&h->wr.ud.av, lim->gid_tbl_len, &wr->ud.av, why);
}

int pvrdma_sq_wqe_decode(const void *buf, size_t len,
			 const struct pvrdma_sq_limits *lim,
			 struct pvrdma_send *ret, uint64_t *ret_wr_id,
			 struct reason *why)
{
	struct pvrdma_sq_wqe_hdr h;
	struct pvrdma_send s;
	const struct op_desc *d;
	int r;

	if (len < sizeof(h))
		return reason_fail(why, -EINVAL, "send WQE slot of %zu bytes",
				   len);
	memcpy(&h, buf, sizeof(h));
	*ret_wr_id = h.wr_id;
	if (h.opcode >= N_OPS || !ops[h.opcode].qp_types)
		return reason_fail(why, -EOPNOTSUPP, "send opcode %u",
				   h.opcode);
	d = &ops[h.opcode];
	if (!(d->qp_types & QPT(lim->qp_type)))
		return reason_fail(why, -EOPNOTSUPP,
				   "send opcode %u on QP type %u", h.opcode,
				   lim->qp_type);
	if (h.send_flags & ~SEND_FLAGS_OK)
		return reason_fail(why, -EOPNOTSUPP, "send flags 0x%x",
				   h.send_flags);
	memset(&s, 0, sizeof(s));
	r = copy_sges(buf, len, sizeof(h), h.num_sge, lim->max_send_sge, s.sge,
		      why);
	if (r < 0)
		return r;
	s.wr.cookie = h.wr_id;
	s.wr.opcode = d->ibv;
	s.wr.send_flags = send_flags(h.send_flags);
	if (h.opcode == PVRDMA_WR_SEND_WITH_IMM ||
	    h.opcode == PVRDMA_WR_RDMA_WRITE_WITH_IMM)
		s.wr.imm_data = h.ex.imm_data;
	r = decode_send_body(&h, d, lim, &s.wr, why);
	if (r < 0)
		return r;
	s.wr.num_sge = h.num_sge;
	*ret = s;
	ret->wr.sge = ret->sge;
	return 0;
}

int pvrdma_rq_wqe_decode(const void *buf, size_t len, uint32_t max_sge,
			 struct pvrdma_recv *ret, uint64_t *ret_wr_id,
			 struct reason *why)
{
	struct pvrdma_rq_wqe_hdr h;
	struct pvrdma_recv rv;
	int r;

	if (len < sizeof(h))
		return reason_fail(why, -EINVAL,
				   "receive WQE slot of %zu bytes", len);
	memcpy(&h, buf, sizeof(h));
	*ret_wr_id = h.wr_id;
	memset(&rv, 0, sizeof(rv));
	r = copy_sges(buf, len, sizeof(h), h.num_sge, max_sge, rv.sge, why);
	if (r < 0)
		return r;
	rv.wr.cookie = h.wr_id;
	rv.wr.num_sge = h.num_sge;
	*ret = rv;
	ret->wr.sge = ret->sge;
	return 0;
}

static int wc_opcode(enum ibv_wc_opcode op, uint32_t *ret)
{
	switch (op) {
	case IBV_WC_SEND:
		*ret = PVRDMA_WC_SEND;
		return 0;
	case IBV_WC_RDMA_WRITE:
		*ret = PVRDMA_WC_RDMA_WRITE;
		return 0;
	case IBV_WC_RDMA_READ:
		*ret = PVRDMA_WC_RDMA_READ;
		return 0;
	case IBV_WC_COMP_SWAP:
		*ret = PVRDMA_WC_COMP_SWAP;
		return 0;
	case IBV_WC_FETCH_ADD:
		*ret = PVRDMA_WC_FETCH_ADD;
		return 0;
	case IBV_WC_BIND_MW:
		*ret = PVRDMA_WC_BIND_MW;
		return 0;
	case IBV_WC_LOCAL_INV:
		*ret = PVRDMA_WC_LOCAL_INV;
		return 0;
	case IBV_WC_TSO:
		*ret = PVRDMA_WC_LSO;
		return 0;
	case IBV_WC_RECV:
		*ret = PVRDMA_WC_RECV;
		return 0;
	case IBV_WC_RECV_RDMA_WITH_IMM:
		*ret = PVRDMA_WC_RECV_RDMA_WITH_IMM;
		return 0;
	default:
		return -EINVAL;
	}
}

static uint32_t wc_flags(unsigned int f)
{
	return ((f & IBV_WC_GRH) ? PVRDMA_WC_GRH : 0) |
	       ((f & IBV_WC_WITH_IMM) ? PVRDMA_WC_WITH_IMM : 0) |
	       ((f & IBV_WC_WITH_INV) ? PVRDMA_WC_WITH_INVALIDATE : 0) |
	       ((f & IBV_WC_IP_CSUM_OK) ? PVRDMA_WC_IP_CSUM_OK : 0);
}

int pvrdma_cqe_encode(const struct be_wc *wc, uint64_t wr_id,
		      uint32_t qp_handle, struct pvrdma_cqe *cqe)
{
	struct pvrdma_cqe c;
	uint32_t op;

	/* The ib_wc_status numbering is PVRDMA's up to GENERAL_ERR. */
	if ((unsigned int)wc->status > IBV_WC_GENERAL_ERR)
		return -EINVAL;
	if (wc_opcode(wc->opcode, &op) < 0)
		return -EINVAL;
	memset(&c, 0, sizeof(c));
	c.wr_id = wr_id;
	c.qp = qp_handle;
	c.opcode = op;
	c.status = (uint32_t)wc->status;
	c.byte_len = wc->byte_len;
	c.imm_data = wc->imm_data;
	c.src_qp = wc->src_qp;
	c.wc_flags = wc_flags(wc->wc_flags);
	c.vendor_err = wc->vendor_err;
	c.pkey_index = wc->pkey_index;
	c.slid = wc->slid;
	c.sl = wc->sl;
	c.dlid_path_bits = wc->dlid_path_bits;
	c.port_num = 1;
	*cqe = c;
	return 0;
}

enum ibv_wc_status pvrdma_refusal_status(int err)
{
	switch (err) {
	case -EOPNOTSUPP:
		return IBV_WC_LOC_QP_OP_ERR;
	case -EINVAL:
		return IBV_WC_LOC_LEN_ERR;
	default:
		return IBV_WC_GENERAL_ERR;
	}
}
