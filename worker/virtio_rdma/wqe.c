// SPDX-License-Identifier: MIT
/* Decoders of send/receive elements and the completion encoder. */
#include "wqe.h"

#include <errno.h>
#include <string.h>

#include "common/cleanup.h"

enum wr_kind { WR_SEND, WR_WRITE, WR_READ, WR_ATOMIC };

#define QPT(t)	  (1u << VIRTIO_RDMA_QPT_##t)
#define QPT_DGRAM (QPT(UD) | QPT(GSI))

/* What each opcode needs; `refused` set means rdmagate refuses it. */
struct op_desc {
	const char *name;
	uint8_t qp_types; /* QPT() mask of the types that may post it */
	uint8_t kind;	  /* enum wr_kind */
	uint8_t has_imm;
	const char *refused;
};

#define OP(o, types, k, imm) [VIRTIO_RDMA_WR_##o] = { #o, types, k, imm, NULL }
#define OP_REFUSED(o, why)   [VIRTIO_RDMA_WR_##o] = { #o, 0, 0, 0, why }
static const struct op_desc op_table[VIRTIO_RDMA_WR_REG_MR + 1] = {
	OP(RDMA_WRITE, QPT(RC) | QPT(UC), WR_WRITE, 0),
	OP(RDMA_WRITE_WITH_IMM, QPT(RC) | QPT(UC), WR_WRITE, 1),
	OP(SEND, QPT(RC) | QPT(UC) | QPT_DGRAM, WR_SEND, 0),
	OP(SEND_WITH_IMM, QPT(RC) | QPT(UC) | QPT_DGRAM, WR_SEND, 1),
	OP(RDMA_READ, QPT(RC), WR_READ, 0),
	OP(ATOMIC_CMP_AND_SWP, QPT(RC), WR_ATOMIC, 0),
	OP(ATOMIC_FETCH_AND_ADD, QPT(RC), WR_ATOMIC, 0),
	OP_REFUSED(LOCAL_INV, "no memory management extensions"),
	OP_REFUSED(BIND_MW, "no memory windows"),
	OP_REFUSED(SEND_WITH_INV, "no remote invalidation in ABI v1"),
	OP_REFUSED(TSO, "no TSO"),
	OP_REFUSED(RDMA_READ_WITH_INV, "no remote invalidation in ABI v1"),
	OP_REFUSED(MASKED_ATOMIC_CMP_AND_SWP, "no masked atomics"),
	OP_REFUSED(MASKED_ATOMIC_FETCH_AND_ADD, "no masked atomics"),
	OP_REFUSED(REG_MR, "no memory management extensions"),
};
#undef OP
#undef OP_REFUSED

static const char *const qpt_names[] = {
	[VIRTIO_RDMA_QPT_SMI] = "SMI", [VIRTIO_RDMA_QPT_GSI] = "GSI",
	[VIRTIO_RDMA_QPT_RC] = "RC",   [VIRTIO_RDMA_QPT_UC] = "UC",
	[VIRTIO_RDMA_QPT_UD] = "UD",
};

static const char *qpt_name(uint32_t t)
{
	return t < ARRAY_SIZE(qpt_names) ? qpt_names[t] : "UNKNOWN";
}

static const struct op_desc *op_lookup(uint32_t opcode)
{
	if (opcode >= ARRAY_SIZE(op_table) || !op_table[opcode].name)
		return NULL;
	return &op_table[opcode];
}

const char *rdma_wr_opcode_name(uint32_t opcode)
{
	const struct op_desc *d = op_lookup(opcode);

	return d ? d->name : "UNKNOWN";
}

static uint32_t sge_cap(uint32_t limit)
{
	return limit < VIRTIO_RDMA_MAX_SGE ? limit : VIRTIO_RDMA_MAX_SGE;
}

/*
 * Copies num_sge SGEs that start at byte `off` of buf into sge[],
 * checking they lie within desc_len and that no address range or the
 * total wraps. *ret_total gets the sum of the lengths.
 */
static int take_sges(const char *what, const uint8_t *buf, size_t desc_len,
		     size_t off, uint32_t num_sge, uint32_t max_sge,
		     struct virtio_rdma_sge *sge, uint64_t *ret_total,
		     struct reason *why)
{
	uint64_t need = off + (uint64_t)num_sge * sizeof(*sge);
	uint64_t total = 0;
	uint32_t i;

	if (num_sge > sge_cap(max_sge))
		return reason_fail(why, -EINVAL,
				   "%s: num_sge %u above the limit "
				   "%u",
				   what, num_sge, sge_cap(max_sge));
	if (need > desc_len)
		return reason_fail(why, -EINVAL,
				   "%s: %u SGEs need %llu bytes, "
				   "descriptor has %zu",
				   what, num_sge, (unsigned long long)need,
				   desc_len);
	memcpy(sge, buf + off, num_sge * sizeof(*sge));
	for (i = 0; i < num_sge; i++) {
		if (sge[i].addr + sge[i].length < sge[i].addr)
			return reason_fail(why, -EINVAL,
					   "%s: SGE %u address "
					   "0x%llx + length %u wraps",
					   what, i,
					   (unsigned long long)sge[i].addr,
					   sge[i].length);
		total += sge[i].length;
	}
	if (total > UINT32_MAX)
		return reason_fail(why, -EINVAL,
				   "%s: message of %llu bytes "
				   "exceeds 4 GiB",
				   what, (unsigned long long)total);
	*ret_total = total;
	return 0;
}

static int check_opcode(const struct virtio_rdma_sq_wqe *h,
			const struct rdma_sq_limits *lim,
			const struct op_desc **ret_op, struct reason *why)
{
	const struct op_desc *op = op_lookup(h->opcode);

	if (!op)
		return reason_fail(why, -EINVAL,
				   "SQ element: unknown opcode %u", h->opcode);
	if (op->refused)
		return reason_fail(why, -EOPNOTSUPP,
				   "SQ element: %s refused: %s", op->name,
				   op->refused);
	if (lim->qp_type >= 8 || !(op->qp_types & (1u << lim->qp_type)))
		return reason_fail(why, -EOPNOTSUPP,
				   "SQ element: %s not allowed on a %s QP",
				   op->name, qpt_name(lim->qp_type));
	if (h->send_flags & ~VIRTIO_RDMA_SEND_FLAGS_SUPPORTED)
		return reason_fail(
			why, -EOPNOTSUPP,
			"SQ element: send_flags 0x%x has unsupported "
			"bits 0x%x",
			h->send_flags,
			h->send_flags & ~VIRTIO_RDMA_SEND_FLAGS_SUPPORTED);
	*ret_op = op;
	return 0;
}

/* Inline payload: everything after the header, bounded by max_inline. */
static int take_inline(const struct op_desc *op, const uint8_t *buf,
		       size_t desc_len, const struct rdma_sq_limits *lim,
		       struct rdma_send_wr *wr, struct reason *why)
{
	size_t len = desc_len - sizeof(struct virtio_rdma_sq_wqe);

	if (op->kind != WR_SEND && op->kind != WR_WRITE)
		return reason_fail(why, -EINVAL,
				   "SQ element: %s cannot be "
				   "inline",
				   op->name);
	if (len > lim->max_inline)
		return reason_fail(why, -EINVAL,
				   "SQ element: inline payload of "
				   "%zu bytes, max_inline is %u",
				   len, lim->max_inline);
	wr->inline_data = len ? buf + sizeof(struct virtio_rdma_sq_wqe) : NULL;
	wr->inline_len = (uint32_t)len;
	wr->total_len = len;
	return 0;
}

static int check_av(const struct virtio_rdma_av *av, uint32_t remote_qpn,
		    struct reason *why)
{
	if (av->port != VIRTIO_RDMA_PORT)
		return reason_fail(why, -EINVAL,
				   "SQ element: AV port %u, the "
				   "only port is 1",
				   av->port);
	/* A u8 gid_index is always inside the 512-entry GID table. */
	if (remote_qpn > VIRTIO_RDMA_QPN_MASK)
		return reason_fail(why, -EINVAL,
				   "SQ element: remote_qpn 0x%x "
				   "above 24 bits",
				   remote_qpn);
	return 0;
}

/* Copies the opcode-specific part of the header, checking it. */
static int take_remote(const struct op_desc *op,
		       const struct virtio_rdma_sq_wqe *h,
		       const struct rdma_sq_limits *lim,
		       struct rdma_send_wr *wr, struct reason *why)
{
	switch (op->kind) {
	case WR_SEND:
		if (!((1u << lim->qp_type) & QPT_DGRAM))
			return 0;
		wr->wr.ud.remote_qpn = h->wr.ud.remote_qpn;
		wr->wr.ud.remote_qkey = h->wr.ud.remote_qkey;
		wr->wr.ud.av = h->wr.ud.av;
		return check_av(&h->wr.ud.av, h->wr.ud.remote_qpn, why);
	case WR_WRITE:
	case WR_READ:
		wr->wr.rdma.remote_addr = h->wr.rdma.remote_addr;
		wr->wr.rdma.rkey = h->wr.rdma.rkey;
		if (h->wr.rdma.remote_addr + wr->total_len <
		    h->wr.rdma.remote_addr)
			return reason_fail(
				why, -EINVAL,
				"SQ element: %s "
				"remote_addr 0x%llx + %llu wraps",
				op->name,
				(unsigned long long)h->wr.rdma.remote_addr,
				(unsigned long long)wr->total_len);
		return 0;
	default:
		break;
	}
	wr->wr.atomic.remote_addr = h->wr.atomic.remote_addr;
	wr->wr.atomic.compare_add = h->wr.atomic.compare_add;
	wr->wr.atomic.swap = h->wr.atomic.swap;
	wr->wr.atomic.rkey = h->wr.atomic.rkey;
	if (h->wr.atomic.remote_addr % 8)
		return reason_fail(
			why, -EINVAL,
			"SQ element: %s remote_addr "
			"0x%llx is not 8-byte aligned",
			op->name, (unsigned long long)h->wr.atomic.remote_addr);
	if (wr->num_sge != 1 || wr->sge[0].length != 8)
		return reason_fail(why, -EINVAL,
				   "SQ element: %s needs one SGE "
				   "of 8 bytes",
				   op->name);
	return 0;
}

int rdma_sq_wqe_decode(const void *buf, size_t desc_len,
		       const struct rdma_sq_limits *lim,
		       struct rdma_send_wr *ret_wr, struct reason *why)
{
	const size_t hlen = sizeof(struct virtio_rdma_sq_wqe);
	struct virtio_rdma_sq_wqe h;
	struct rdma_send_wr w;
	struct rdma_send_wr *wr = &w;
	const struct op_desc *op = NULL;
	int r;

	if (desc_len < hlen)
		return reason_fail(why, -EINVAL,
				   "SQ element is %zu bytes, the "
				   "header needs %zu",
				   desc_len, hlen);
	memcpy(&h, buf, hlen);
	r = check_opcode(&h, lim, &op, why);
	if (r)
		return r;
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = h.wr_id;
	wr->opcode = h.opcode;
	wr->send_flags = h.send_flags;
	wr->imm_data = op->has_imm ? h.imm_data : 0;
	if (h.send_flags & VIRTIO_RDMA_SEND_INLINE)
		r = take_inline(op, buf, desc_len, lim, wr, why);
	else
		r = take_sges("SQ element", buf, desc_len, hlen, h.num_sge,
			      lim->max_send_sge, wr->sge, &wr->total_len, why);
	if (r)
		return r;
	if (!(h.send_flags & VIRTIO_RDMA_SEND_INLINE))
		wr->num_sge = h.num_sge;
	r = take_remote(op, &h, lim, wr, why);
	if (r)
		return r;
	*ret_wr = w;
	return 0;
}

int rdma_rq_wqe_decode(const void *buf, size_t desc_len, uint32_t max_recv_sge,
		       struct rdma_recv_wr *ret_wr, struct reason *why)
{
	const size_t hlen = sizeof(struct virtio_rdma_rq_wqe);
	struct virtio_rdma_rq_wqe h;
	struct rdma_recv_wr wr;
	int r;

	if (desc_len < hlen)
		return reason_fail(why, -EINVAL,
				   "RQ element is %zu bytes, the "
				   "header needs %zu",
				   desc_len, hlen);
	memcpy(&h, buf, hlen);
	memset(&wr, 0, sizeof(wr));
	r = take_sges("RQ element", buf, desc_len, hlen, h.num_sge,
		      max_recv_sge, wr.sge, &wr.total_len, why);
	if (r)
		return r;
	wr.wr_id = h.wr_id;
	wr.num_sge = h.num_sge;
	*ret_wr = wr;
	return 0;
}

static int wc_opcode_known(uint32_t op)
{
	return op <= VIRTIO_RDMA_WC_MASKED_FETCH_ADD ||
	       op == VIRTIO_RDMA_WC_RECV ||
	       op == VIRTIO_RDMA_WC_RECV_RDMA_WITH_IMM;
}

int rdma_cqe_encode(const struct rdma_completion *c, void *buf, size_t len)
{
	struct virtio_rdma_cqe e;

	if (len < sizeof(e))
		return -ENOSPC;
	if ((uint32_t)c->status > VIRTIO_RDMA_WC_GENERAL_ERR ||
	    !wc_opcode_known(c->opcode) ||
	    (c->wc_flags & ~VIRTIO_RDMA_WC_FLAGS_KNOWN))
		return -EINVAL;
	memset(&e, 0, sizeof(e));
	e.wr_id = c->wr_id;
	e.status = c->status;
	e.opcode = c->opcode;
	e.vendor_err = c->vendor_err;
	e.byte_len = c->byte_len;
	e.imm_data = c->imm_data;
	e.qp_num = c->qp_num;
	e.src_qp = c->src_qp;
	e.wc_flags = c->wc_flags;
	e.pkey_index = c->pkey_index;
	e.slid = c->slid;
	e.sl = c->sl;
	e.dlid_path_bits = c->dlid_path_bits;
	e.port_num = c->port_num;
	memcpy(buf, &e, sizeof(e));
	return (int)sizeof(e);
}
