// SPDX-License-Identifier: MIT
/* Table-driven decoder and encoder of virtio-rdma control commands. */
#include "cmd.h"

#include <errno.h>
#include <string.h>

#include "common/cleanup.h"
#include "worker/virtio_rdma/mr_pt.h"

typedef int (*cmd_check_fn)(const struct rdma_cmd *c, const char *name,
			    struct reason *why);

/* Refused with EOPNOTSUPP before any other check. */
#define CMD_F_UNSUPPORTED 1u

struct cmd_desc {
	const char *name;
	uint16_t req_size;  /* documented (minimum) request size */
	uint16_t copy_size; /* bytes taken into the args union */
	uint16_t rsp_min;   /* response bytes the guest must make room for */
	uint16_t rsp_size;  /* response bytes written when there is room */
	uint8_t flags;
	const char *why_unsupported;
	cmd_check_fn check; /* field checks needing no device state */
};

/* ---- field checks shared by several commands ---- */

static int check_port(const char *name, const char *field, uint32_t port,
		      struct reason *why)
{
	if (port != VIRTIO_RDMA_PORT)
		return reason_fail(why, -EINVAL,
				   "%s: %s %u, the only port is 1", name, field,
				   port);
	return 0;
}

static int check_handle(const char *name, const char *field, uint32_t h,
			struct reason *why)
{
	if (h == 0)
		return reason_fail(why, -EINVAL, "%s: %s 0 is never allocated",
				   name, field);
	return 0;
}

static int check_mr_access(const char *name, uint32_t acc, struct reason *why)
{
	uint32_t needs_lw = VIRTIO_RDMA_ACCESS_REMOTE_WRITE |
			    VIRTIO_RDMA_ACCESS_REMOTE_ATOMIC;

	if (acc & ~VIRTIO_RDMA_ACCESS_MR_SUPPORTED)
		return reason_fail(
			why, -EINVAL,
			"%s: access flags 0x%x have unsupported bits "
			"0x%x",
			name, acc, acc & ~VIRTIO_RDMA_ACCESS_MR_SUPPORTED);
	/* IB: remote write or atomic access needs local write. */
	if ((acc & needs_lw) && !(acc & VIRTIO_RDMA_ACCESS_LOCAL_WRITE))
		return reason_fail(why, -EINVAL,
				   "%s: access flags 0x%x give remote write or "
				   "atomic without local write",
				   name, acc);
	return 0;
}

static int check_gid_index(const char *name, uint32_t index, struct reason *why)
{
	if (index >= VIRTIO_RDMA_GID_TBL_LEN)
		return reason_fail(why, -EINVAL,
				   "%s: GID index %u, table has %u entries",
				   name, index, VIRTIO_RDMA_GID_TBL_LEN);
	return 0;
}

/* ---- per-command checks ---- */

static int check_query_port(const struct rdma_cmd *c, const char *name,
			    struct reason *why)
{
	return check_port(name, "port", c->u.query_port.port, why);
}

static int check_create_cq(const struct rdma_cmd *c, const char *name,
			   struct reason *why)
{
	if (c->u.create_cq.cqe == 0)
		return reason_fail(why, -EINVAL, "%s: cqe 0", name);
	return 0;
}

static int check_destroy_pd(const struct rdma_cmd *c, const char *name,
			    struct reason *why)
{
	return check_handle(name, "pdn", c->u.destroy_pd.pdn, why);
}

static int check_get_dma_mr(const struct rdma_cmd *c, const char *name,
			    struct reason *why)
{
	int r = check_handle(name, "pdn", c->u.get_dma_mr.pdn, why);

	return r ? r : check_mr_access(name, c->u.get_dma_mr.access_flags, why);
}

static int check_reg_user_mr(const struct rdma_cmd *c, const char *name,
			     struct reason *why)
{
	const struct virtio_rdma_cmd_reg_user_mr *m = &c->u.reg_user_mr;
	struct rdma_mr_pt_args pt = {
		.root = m->pages,
		.npages = m->npages,
		.start = m->start,
		.length = m->length,
		.virt_addr = m->virt_addr,
	};
	int r;

	r = check_handle(name, "pdn", m->pdn, why);
	if (!r)
		r = check_mr_access(name, m->access_flags, why);
	return r ? r : rdma_mr_pt_check_args(&pt, why);
}

static int check_dereg_mr(const struct rdma_cmd *c, const char *name,
			  struct reason *why)
{
	return check_handle(name, "mrn", c->u.dereg_mr.mrn, why);
}

static int check_create_qp_ext(const struct rdma_cmd *c, const char *name,
			       struct reason *why)
{
	const struct virtio_rdma_cmd_create_qp_ext *q = &c->u.create_qp;

	if (q->flags & ~VIRTIO_RDMA_CREATE_QP_F_SRQ)
		return reason_fail(why, -EINVAL, "%s: unknown flags 0x%x", name,
				   q->flags & ~VIRTIO_RDMA_CREATE_QP_F_SRQ);
	if (!(q->flags & VIRTIO_RDMA_CREATE_QP_F_SRQ)) {
		if (q->srq_handle)
			return reason_fail(why, -EINVAL,
					   "%s: srq_handle %u without the SRQ "
					   "flag",
					   name, q->srq_handle);
		return 0;
	}
	if (q->base.qp_type == VIRTIO_RDMA_QPT_GSI)
		return reason_fail(why, -EINVAL,
				   "%s: the GSI QP cannot use an SRQ", name);
	return check_handle(name, "srq_handle", q->srq_handle, why);
}

static int check_create_qp(const struct rdma_cmd *c, const char *name,
			   struct reason *why)
{
	const struct virtio_rdma_cmd_create_qp *q = &c->u.create_qp.base;
	int r = check_handle(name, "pdn", q->pdn, why);

	if (r)
		return r;
	switch (q->qp_type) {
	case VIRTIO_RDMA_QPT_GSI:
	case VIRTIO_RDMA_QPT_RC:
	case VIRTIO_RDMA_QPT_UC:
	case VIRTIO_RDMA_QPT_UD:
		break;
	case VIRTIO_RDMA_QPT_SMI:
		return reason_fail(why, -EINVAL, "%s: qp_type SMI (0) refused",
				   name);
	default:
		return reason_fail(why, -EINVAL, "%s: unknown qp_type %u", name,
				   q->qp_type);
	}
	if (q->sq_sig_type > VIRTIO_RDMA_SIG_REQ_WR)
		return reason_fail(why, -EINVAL,
				   "%s: sq_sig_type %u not 0 or 1", name,
				   q->sq_sig_type);
	if (q->max_send_sge > VIRTIO_RDMA_MAX_SGE ||
	    q->max_recv_sge > VIRTIO_RDMA_MAX_SGE)
		return reason_fail(
			why, -EINVAL,
			"%s: max_send_sge %u / max_recv_sge %u above "
			"%u",
			name, q->max_send_sge, q->max_recv_sge,
			VIRTIO_RDMA_MAX_SGE);
	return check_create_qp_ext(c, name, why);
}

static int check_ah(const char *name, const struct virtio_rdma_ah_attr *ah,
		    struct reason *why)
{
	if (ah->port_num > VIRTIO_RDMA_PORT)
		return reason_fail(
			why, -EINVAL,
			"%s: ah_attr.port_num %u, the only port is 1", name,
			ah->port_num);
	if (ah->ah_flags & ~VIRTIO_RDMA_AH_GRH)
		return reason_fail(why, -EINVAL, "%s: ah_flags 0x%x unknown",
				   name, ah->ah_flags);
	if (ah->sl > 15)
		return reason_fail(why, -EINVAL, "%s: sl %u above 15", name,
				   ah->sl);
	if (ah->grh.flow_label > VIRTIO_RDMA_FLOW_LABEL_MAX)
		return reason_fail(why, -EINVAL,
				   "%s: flow_label 0x%x above 20 bits", name,
				   ah->grh.flow_label);
	/* A u8 sgid_index is always inside the 512-entry GID table. */
	return 0;
}

/* One range rule of MODIFY_QP: applies when `bit` is in attr_mask. */
struct qp_range {
	uint32_t bit;
	const char *field;
	size_t off;	 /* in struct virtio_rdma_qp_attr */
	uint8_t size;	 /* 1, 2 or 4 */
	uint8_t is_mask; /* max is the mask of allowed bits */
	uint32_t min, max;
};

#define QR_(b, f, m, lo, hi)                                                   \
	{                                                                      \
		VIRTIO_RDMA_QP_##b, #f,                                        \
			offsetof(struct virtio_rdma_qp_attr, f),               \
			sizeof(((struct virtio_rdma_qp_attr *)0)->f), m, lo,   \
			hi                                                     \
	}
#define QR(b, f, lo, hi) QR_(b, f, 0, lo, hi)
static const struct qp_range qp_ranges[] = {
	QR(STATE, qp_state, 0, VIRTIO_RDMA_QPS_ERR),
	QR(CUR_STATE, cur_qp_state, 0, VIRTIO_RDMA_QPS_ERR),
	QR(PATH_MTU, path_mtu, VIRTIO_RDMA_MTU_256, VIRTIO_RDMA_MTU_4096),
	QR(PATH_MIG_STATE, path_mig_state, 0, VIRTIO_RDMA_MIG_ARMED),
	QR(PKEY_INDEX, pkey_index, 0, VIRTIO_RDMA_PKEY_TBL_LEN - 1),
	QR(PORT, port_num, VIRTIO_RDMA_PORT, VIRTIO_RDMA_PORT),
	QR_(ACCESS_FLAGS, qp_access_flags, 1, 0,
	    VIRTIO_RDMA_ACCESS_QP_SUPPORTED),
	QR(TIMEOUT, timeout, 0, 31),
	QR(RETRY_CNT, retry_cnt, 0, 7),
	QR(RNR_RETRY, rnr_retry, 0, 7),
	QR(MIN_RNR_TIMER, min_rnr_timer, 0, 31),
	QR(RQ_PSN, rq_psn, 0, VIRTIO_RDMA_PSN_MASK),
	QR(SQ_PSN, sq_psn, 0, VIRTIO_RDMA_PSN_MASK),
	QR(DEST_QPN, dest_qp_num, 0, VIRTIO_RDMA_QPN_MASK),
	QR(EN_SQD_ASYNC_NOTIFY, en_sqd_async_notify, 0, 1),
};
#undef QR
#undef QR_

static uint32_t qp_field(const struct virtio_rdma_qp_attr *a,
			 const struct qp_range *r)
{
	const uint8_t *p = (const uint8_t *)a + r->off;
	uint16_t v16;
	uint32_t v32;

	switch (r->size) {
	case 1:
		return *p;
	case 2:
		memcpy(&v16, p, sizeof(v16));
		return v16;
	default:
		memcpy(&v32, p, sizeof(v32));
		return v32;
	}
}

static int check_qp_ranges(const char *name, uint32_t mask,
			   const struct virtio_rdma_qp_attr *a,
			   struct reason *why)
{
	const struct qp_range *r;
	uint32_t v;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(qp_ranges); i++) {
		r = &qp_ranges[i];
		if (!(mask & r->bit))
			continue;
		v = qp_field(a, r);
		if (r->is_mask ? (v & ~r->max) != 0 : v < r->min || v > r->max)
			return reason_fail(why, -EINVAL,
					   "%s: %s %u out of range", name,
					   r->field, v);
	}
	return 0;
}

static int check_modify_qp(const struct rdma_cmd *c, const char *name,
			   struct reason *why)
{
	const struct virtio_rdma_cmd_modify_qp *m = &c->u.modify_qp;
	int r;

	if (m->attr_mask & ~VIRTIO_RDMA_QP_ATTR_MASK_MODIFY)
		return reason_fail(
			why, -EINVAL,
			"%s: attr_mask 0x%x has unsupported bits 0x%x", name,
			m->attr_mask,
			m->attr_mask & ~VIRTIO_RDMA_QP_ATTR_MASK_MODIFY);
	if (m->attr_mask == 0)
		return reason_fail(why, -EINVAL, "%s: attr_mask 0", name);
	r = check_qp_ranges(name, m->attr_mask, &m->attr, why);
	if (!r && (m->attr_mask & VIRTIO_RDMA_QP_AV))
		r = check_ah(name, &m->attr.ah_attr, why);
	return r;
}

static int check_query_qp(const struct rdma_cmd *c, const char *name,
			  struct reason *why)
{
	uint32_t mask = c->u.query_qp.attr_mask;

	if (mask & ~VIRTIO_RDMA_QP_ATTR_MASK_KNOWN)
		return reason_fail(why, -EINVAL,
				   "%s: attr_mask 0x%x has unknown "
				   "bits 0x%x",
				   name, mask,
				   mask & ~VIRTIO_RDMA_QP_ATTR_MASK_KNOWN);
	return 0;
}

static int check_query_pkey(const struct rdma_cmd *c, const char *name,
			    struct reason *why)
{
	int r = check_port(name, "port", c->u.query_pkey.port, why);

	if (!r && c->u.query_pkey.index >= VIRTIO_RDMA_PKEY_TBL_LEN)
		r = reason_fail(why, -EINVAL,
				"%s: index %u, the table has 1 "
				"entry",
				name, c->u.query_pkey.index);
	return r;
}

static int check_add_gid(const struct rdma_cmd *c, const char *name,
			 struct reason *why)
{
	const struct virtio_rdma_cmd_add_gid *g = &c->u.add_gid;
	int r = check_port(name, "port_num", g->port_num, why);

	if (!r)
		r = check_gid_index(name, g->index, why);
	if (!r && g->gid_type != VIRTIO_RDMA_GID_TYPE_ROCE_V1 &&
	    g->gid_type != VIRTIO_RDMA_GID_TYPE_ROCE_V2)
		r = reason_fail(why, -EINVAL,
				"%s: gid_type %u is not RoCE v1 (1) "
				"or v2 (2)",
				name, g->gid_type);
	return r;
}

static int check_del_gid(const struct rdma_cmd *c, const char *name,
			 struct reason *why)
{
	int r = check_port(name, "port_num", c->u.del_gid.port_num, why);

	return r ? r : check_gid_index(name, c->u.del_gid.index, why);
}

static int check_req_notify(const struct rdma_cmd *c, const char *name,
			    struct reason *why)
{
	uint32_t f = c->u.req_notify_cq.flags;

	if (f != VIRTIO_RDMA_NOTIFY_SOLICITED &&
	    f != VIRTIO_RDMA_NOTIFY_NEXT_COMP)
		return reason_fail(why, -EINVAL,
				   "%s: flags %u, not 1 (SOLICITED) or 2 "
				   "(NEXT_COMP)",
				   name, f);
	return 0;
}

static int check_srq_sizes(const char *name, uint32_t max_wr,
			   uint32_t srq_limit, struct reason *why)
{
	if (max_wr == 0)
		return reason_fail(why, -EINVAL, "%s: max_wr 0", name);
	if (srq_limit > max_wr)
		return reason_fail(why, -EINVAL,
				   "%s: srq_limit %u above max_wr "
				   "%u",
				   name, srq_limit, max_wr);
	return 0;
}

static int check_create_srq(const struct rdma_cmd *c, const char *name,
			    struct reason *why)
{
	const struct virtio_rdma_cmd_create_srq *s = &c->u.create_srq;
	int r = check_handle(name, "pdn", s->pdn, why);

	if (r)
		return r;
	if (s->max_sge == 0 || s->max_sge > VIRTIO_RDMA_MAX_SGE)
		return reason_fail(why, -EINVAL, "%s: max_sge %u not in 1..%u",
				   name, s->max_sge, VIRTIO_RDMA_MAX_SGE);
	return check_srq_sizes(name, s->max_wr, s->srq_limit, why);
}

static int check_modify_srq(const struct rdma_cmd *c, const char *name,
			    struct reason *why)
{
	const struct virtio_rdma_cmd_modify_srq *s = &c->u.modify_srq;
	int r = check_handle(name, "srq_handle", s->srq_handle, why);

	if (r)
		return r;
	if (s->attr_mask == 0 ||
	    (s->attr_mask & ~VIRTIO_RDMA_SRQ_ATTR_MASK_KNOWN))
		return reason_fail(why, -EINVAL,
				   "%s: attr_mask 0x%x not a "
				   "non-empty subset of 0x3",
				   name, s->attr_mask);
	if (s->attr_mask == VIRTIO_RDMA_SRQ_ATTR_MASK_KNOWN)
		return check_srq_sizes(name, s->max_wr, s->srq_limit, why);
	if ((s->attr_mask & VIRTIO_RDMA_SRQ_MAX_WR) && s->max_wr == 0)
		return reason_fail(why, -EINVAL, "%s: max_wr 0", name);
	return 0;
}

static int check_srq_handle(const struct rdma_cmd *c, const char *name,
			    struct reason *why)
{
	return check_handle(name, "srq_handle", c->u.query_srq.srq_handle, why);
}

/* ---- the table ---- */

#define REQ(t) sizeof(struct virtio_rdma_cmd_##t)
#define RSP(t) sizeof(struct virtio_rdma_##t)
#define CMD(code, rq, cp, rmin, rmax, fl, un, chk)                             \
	[VIRTIO_RDMA_CMD_##code] = { #code, rq, cp, rmin, rmax, fl, un, chk }

static const struct cmd_desc cmd_table[VIRTIO_RDMA_CMD_MAX] = {
	CMD(QUERY_PORT, REQ(query_port), REQ(query_port), RSP(port_attr),
	    RSP(port_attr), 0, NULL, check_query_port),
	CMD(CREATE_CQ, REQ(create_cq), REQ(create_cq), RSP(rsp_create_cq),
	    RSP(rsp_create_cq), 0, NULL, check_create_cq),
	CMD(DESTROY_CQ, REQ(destroy_cq), REQ(destroy_cq), 0, 0, 0, NULL, NULL),
	CMD(CREATE_PD, 0, 0, RSP(rsp_create_pd), RSP(rsp_create_pd), 0, NULL,
	    NULL),
	CMD(DESTROY_PD, REQ(destroy_pd), REQ(destroy_pd), 0, 0, 0, NULL,
	    check_destroy_pd),
	CMD(GET_DMA_MR, REQ(get_dma_mr), REQ(get_dma_mr), RSP(rsp_mr),
	    RSP(rsp_mr), 0, NULL, check_get_dma_mr),
	CMD(CREATE_MR, REQ(create_mr), REQ(create_mr), RSP(rsp_mr), RSP(rsp_mr),
	    CMD_F_UNSUPPORTED, "fast registration is not supported", NULL),
	CMD(MAP_MR_SG, REQ(map_mr_sg), REQ(map_mr_sg), RSP(rsp_map_mr_sg),
	    RSP(rsp_map_mr_sg), CMD_F_UNSUPPORTED,
	    "fast registration is not supported", NULL),
	CMD(REG_USER_MR, REQ(reg_user_mr), REQ(reg_user_mr), RSP(rsp_mr),
	    RSP(rsp_mr), 0, NULL, check_reg_user_mr),
	CMD(DEREG_MR, REQ(dereg_mr), REQ(dereg_mr), 0, 0, 0, NULL,
	    check_dereg_mr),
	/* Profile A guests leave room for the 4-byte qpn only. */
	CMD(CREATE_QP, REQ(create_qp), REQ(create_qp_ext), sizeof(uint32_t),
	    RSP(rsp_create_qp), 0, NULL, check_create_qp),
	CMD(MODIFY_QP, REQ(modify_qp), REQ(modify_qp), 0, 0, 0, NULL,
	    check_modify_qp),
	CMD(QUERY_QP, REQ(query_qp), REQ(query_qp), RSP(qp_attr), RSP(qp_attr),
	    0, NULL, check_query_qp),
	CMD(DESTROY_QP, REQ(destroy_qp), REQ(destroy_qp), 0, 0, 0, NULL, NULL),
	CMD(QUERY_PKEY, REQ(query_pkey), REQ(query_pkey), RSP(rsp_query_pkey),
	    RSP(rsp_query_pkey), 0, NULL, check_query_pkey),
	CMD(ADD_GID, REQ(add_gid), REQ(add_gid), 0, 0, 0, NULL, check_add_gid),
	CMD(DEL_GID, REQ(del_gid), REQ(del_gid), 0, 0, 0, NULL, check_del_gid),
	CMD(REQ_NOTIFY_CQ, REQ(req_notify_cq), REQ(req_notify_cq), 0, 0, 0,
	    NULL, check_req_notify),
	CMD(CREATE_SRQ, REQ(create_srq), REQ(create_srq), RSP(rsp_create_srq),
	    RSP(rsp_create_srq), 0, NULL, check_create_srq),
	CMD(MODIFY_SRQ, REQ(modify_srq), REQ(modify_srq), 0, 0, 0, NULL,
	    check_modify_srq),
	CMD(QUERY_SRQ, REQ(srq_handle), REQ(srq_handle), RSP(rsp_query_srq),
	    RSP(rsp_query_srq), 0, NULL, check_srq_handle),
	CMD(DESTROY_SRQ, REQ(srq_handle), REQ(srq_handle), 0, 0, 0, NULL,
	    check_srq_handle),
};
#undef CMD
#undef RSP
#undef REQ

_Static_assert(sizeof(union rdma_cmd_args) ==
		       sizeof(struct virtio_rdma_cmd_modify_qp),
	       "largest request is MODIFY_QP");

static const struct cmd_desc *cmd_lookup(uint32_t code)
{
	if (code >= VIRTIO_RDMA_CMD_MAX || !cmd_table[code].name)
		return NULL;
	return &cmd_table[code];
}

const char *rdma_cmd_name(uint32_t code)
{
	const struct cmd_desc *d = cmd_lookup(code);

	return d ? d->name : "UNKNOWN";
}

size_t rdma_cmd_rsp_len(uint32_t code, size_t rsp_space)
{
	const struct cmd_desc *d = cmd_lookup(code);

	if (!d)
		return 0;
	return rsp_space < d->rsp_size ? d->rsp_min : d->rsp_size;
}

/* Framing checks: header, status room, known and supported code. */
static int decode_frame(const uint8_t *out, size_t out_len, size_t first_len,
			size_t in_len, const struct cmd_desc **ret_d,
			struct reason *why)
{
	const struct cmd_desc *d;

	if (in_len == 0)
		return reason_fail(why, -ENOBUFS,
				   "control chain has no writable byte for the "
				   "status");
	if (out_len == 0 || first_len == 0)
		return reason_fail(why, -EBADMSG,
				   "control chain has no header");
	if (first_len != VIRTIO_RDMA_CMD_HDR_LEN || first_len > out_len)
		return reason_fail(
			why, -EBADMSG,
			"control header element is %zu bytes, must be "
			"1",
			first_len);
	d = cmd_lookup(out[0]);
	if (!d)
		return reason_fail(why, -EOPNOTSUPP, "unknown command code %u",
				   out[0]);
	if (d->flags & CMD_F_UNSUPPORTED)
		return reason_fail(why, -EOPNOTSUPP, "%s: %s", d->name,
				   d->why_unsupported);
	*ret_d = d;
	return 0;
}

int rdma_cmd_decode(const void *out, size_t out_len, size_t first_len,
		    size_t in_len, struct rdma_cmd *ret_cmd, struct reason *why)
{
	const uint8_t *bytes = out;
	const struct cmd_desc *d = NULL;
	struct rdma_cmd c;
	size_t req_len;
	int r;

	r = decode_frame(bytes, out_len, first_len, in_len, &d, why);
	if (r)
		return r;
	req_len = out_len - VIRTIO_RDMA_CMD_HDR_LEN;
	if (req_len < d->req_size)
		return reason_fail(why, -EINVAL,
				   "%s: request is %zu bytes, needs "
				   "%u",
				   d->name, req_len, d->req_size);
	if (in_len - 1 < d->rsp_min)
		return reason_fail(why, -ENOSPC,
				   "%s: response space is %zu bytes, needs %u",
				   d->name, in_len - 1, d->rsp_min);
	memset(&c, 0, sizeof(c));
	c.code = bytes[0];
	c.req_len = req_len > UINT32_MAX ? UINT32_MAX : (uint32_t)req_len;
	c.rsp_space =
		in_len - 1 > UINT32_MAX ? UINT32_MAX : (uint32_t)(in_len - 1);
	memcpy(&c.u, bytes + VIRTIO_RDMA_CMD_HDR_LEN,
	       req_len < d->copy_size ? req_len : d->copy_size);
	if (d->check) {
		r = d->check(&c, d->name, why);
		if (r)
			return r;
	}
	*ret_cmd = c;
	return 0;
}

uint8_t rdma_cmd_status(int err)
{
	if (err == 0)
		return VIRTIO_RDMA_STATUS_OK;
	if (err < 0)
		err = -err;
	return err > 255 ? 255 : (uint8_t)err;
}

int rdma_cmd_encode_error(int err, void *in, size_t in_len)
{
	uint8_t *p = in;

	if (in_len == 0)
		return -ENOSPC;
	p[0] = rdma_cmd_status(err ? err : -EIO);
	return 1;
}

int rdma_cmd_encode_ok(const struct rdma_cmd *cmd,
		       const union rdma_cmd_rsp *rsp, void *in, size_t in_len)
{
	uint8_t *p = in;
	size_t n;

	if (in_len == 0 || !cmd_lookup(cmd->code))
		return -ENOSPC;
	n = rdma_cmd_rsp_len(cmd->code, in_len - 1);
	if (n > in_len - 1 || n > sizeof(*rsp))
		return -ENOSPC;
	p[0] = VIRTIO_RDMA_STATUS_OK;
	if (n)
		memcpy(p + 1, rsp, n);
	return (int)(1 + n);
}
