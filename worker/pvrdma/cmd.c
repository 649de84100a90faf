// SPDX-License-Identifier: MIT
/* The PVRDMA command decoder (see cmd.h): one table, one check each. */
#include <errno.h>
#include <string.h>

#include "worker/pvrdma/cmd.h"
#include "worker/pvrdma/pdir.h"
#include "worker/pvrdma/ring.h"

typedef int (*cmd_check_fn)(const union pvrdma_cmd_req *c,
			    const struct pvrdma_cmd_limits *lim,
			    struct reason *why);

struct cmd_desc {
	const char *name;
	size_t size;
	cmd_check_fn check; /* NULL: nothing to check without state */
};

static int pow2_in(uint32_t v, uint32_t max)
{
	return v != 0 && v <= max && (v & (v - 1)) == 0;
}

static uint32_t round_pow2(uint64_t v)
{
	uint64_t p = 1;

	while (p < v)
		p <<= 1;
	return p > UINT32_MAX ? 0 : (uint32_t)p;
}

uint32_t pvrdma_sq_wqe_size(uint32_t max_sge)
{
	return round_pow2(pvrdma_sq_wqe_bytes(max_sge));
}

uint32_t pvrdma_rq_wqe_size(uint32_t max_sge)
{
	return round_pow2(pvrdma_rq_wqe_bytes(max_sge));
}

uint32_t pvrdma_ring_pages(uint32_t n, uint32_t size)
{
	uint64_t bytes = (uint64_t)n * size;

	return (uint32_t)((bytes + PVRDMA_PAGE_SIZE - 1) / PVRDMA_PAGE_SIZE);
}

static int check_port(uint8_t port, struct reason *why)
{
	if (port != 1)
		return reason_fail(why, -EINVAL, "port %u (only port 1)", port);
	return 0;
}

static int check_query_port(const union pvrdma_cmd_req *c,
			    const struct pvrdma_cmd_limits *lim,
			    struct reason *why)
{
	(void)lim;
	return check_port(c->query_port.port_num, why);
}

static int check_query_pkey(const union pvrdma_cmd_req *c,
			    const struct pvrdma_cmd_limits *lim,
			    struct reason *why)
{
	if (c->query_pkey.index >= lim->max_pkeys)
		return reason_fail(why, -EINVAL, "P_Key index %u (table of %u)",
				   c->query_pkey.index, lim->max_pkeys);
	return check_port(c->query_pkey.port_num, why);
}

#define MR_ACCESS_OK                                                           \
	(PVRDMA_ACCESS_LOCAL_WRITE | PVRDMA_ACCESS_REMOTE_WRITE |              \
	 PVRDMA_ACCESS_REMOTE_READ | PVRDMA_ACCESS_REMOTE_ATOMIC)

uint32_t pvrdma_mr_access(uint32_t flags)
{
	/* relaxed ordering is a hint the host's verbs take or drop; the
	 * other optional bits name nothing we know: ignored, as allowed */
	return flags & (MR_ACCESS_OK | PVRDMA_ACCESS_RELAXED_ORDERING);
}

static int check_create_mr(const union pvrdma_cmd_req *c,
			   const struct pvrdma_cmd_limits *lim,
			   struct reason *why)
{
	const struct pvrdma_cmd_create_mr *m = &c->create_mr;
	uint64_t need;

	if (m->access_flags & ~(MR_ACCESS_OK | PVRDMA_ACCESS_OPTIONAL_RANGE))
		return reason_fail(why, -EOPNOTSUPP, "MR access flags 0x%x",
				   m->access_flags);
	if (m->flags & PVRDMA_MR_FLAG_FRMR)
		return reason_fail(why, -EOPNOTSUPP,
				   "fast-register MRs are not offered");
	if (m->flags & ~PVRDMA_MR_FLAG_DMA)
		return reason_fail(why, -EINVAL, "MR flags 0x%x", m->flags);
	if (m->flags & PVRDMA_MR_FLAG_DMA)
		return 0;
	if (m->length == 0 || m->start > UINT64_MAX - m->length)
		return reason_fail(why, -EINVAL, "MR [0x%llx, +0x%llx) wraps",
				   (unsigned long long)m->start,
				   (unsigned long long)m->length);
	need = ((m->start & (PVRDMA_PAGE_SIZE - 1)) + m->length +
		PVRDMA_PAGE_SIZE - 1) /
	       PVRDMA_PAGE_SIZE;
	if (need != m->nchunks || m->nchunks > lim->max_mr_pages)
		return reason_fail(
			why, -EINVAL,
			"MR of 0x%llx bytes in %u pages (needs %llu, "
			"at most %u)",
			(unsigned long long)m->length, m->nchunks,
			(unsigned long long)need, lim->max_mr_pages);
	if (!pvrdma_page_addr_ok(m->pdir_dma))
		return reason_fail(why, -EINVAL, "MR directory 0x%llx",
				   (unsigned long long)m->pdir_dma);
	return 0;
}

/*
 * A ring of pages: 1 state page + entries, within the device's bound and
 * at most twice what the ring needs (the provider allocates an SRQ's
 * entries twice over; QPs and CQs come exact): a guest cannot make the
 * device keep a long page list for a short ring.
 */
static int check_ring_pages(uint32_t have, uint32_t need, uint64_t pdir,
			    const struct pvrdma_cmd_limits *lim,
			    const char *what, struct reason *why)
{
	if (have < need || have > 2 * (uint64_t)need ||
	    have > lim->max_ring_pages)
		return reason_fail(why, -EINVAL,
				   "%s ring of %u pages (needs %u, at most %u)",
				   what, have, need, lim->max_ring_pages);
	if (!pvrdma_page_addr_ok(pdir))
		return reason_fail(why, -EINVAL, "%s directory 0x%llx", what,
				   (unsigned long long)pdir);
	return 0;
}

static int check_create_cq(const union pvrdma_cmd_req *c,
			   const struct pvrdma_cmd_limits *lim,
			   struct reason *why)
{
	const struct pvrdma_cmd_create_cq *q = &c->create_cq;

	if (!pow2_in(q->cqe, lim->max_cqe))
		return reason_fail(why, -EINVAL,
				   "CQ of %u entries (a power of 2 <= %u)",
				   q->cqe, lim->max_cqe);
	return check_ring_pages(
		q->nchunks,
		1 + pvrdma_ring_pages(q->cqe, sizeof(struct pvrdma_cqe)),
		q->pdir_dma, lim, "CQ", why);
}

static int check_resize_cq(const union pvrdma_cmd_req *c,
			   const struct pvrdma_cmd_limits *lim,
			   struct reason *why)
{
	if (!pow2_in(c->resize_cq.cqe, lim->max_cqe))
		return reason_fail(why, -EINVAL,
				   "CQ of %u entries (a power of 2 <= %u)",
				   c->resize_cq.cqe, lim->max_cqe);
	return 0;
}

static int check_qp_caps(const struct pvrdma_cmd_create_qp *q,
			 const struct pvrdma_cmd_limits *lim,
			 struct reason *why)
{
	if (!pow2_in(q->max_send_wr, lim->max_qp_wr) || q->max_send_sge == 0 ||
	    q->max_send_sge > lim->max_sge)
		return reason_fail(why, -EINVAL,
				   "send queue of %u WRs x %u SGEs (limits %u, "
				   "%u)",
				   q->max_send_wr, q->max_send_sge,
				   lim->max_qp_wr, lim->max_sge);
	/*
	 * The device offers no inline data (INLINE sends are refused) and
	 * answers max_inline_data 0, but vmw_pvrdma passes the application's
	 * wish on (perftest asks for 236 bytes): up to what a WQE slot could
	 * ever hold, a page, it is clamped to 0 as QEMU's device did; more is
	 * refused like every other size out of range.
	 */
	if (q->max_inline_data > PVRDMA_PAGE_SIZE)
		return reason_fail(why, -EINVAL,
				   "%u bytes of inline data (none offered, at "
				   "most %u asked)",
				   q->max_inline_data, PVRDMA_PAGE_SIZE);
	if (q->is_srq)
		return 0;
	if (!pow2_in(q->max_recv_wr, lim->max_qp_wr) || q->max_recv_sge == 0 ||
	    q->max_recv_sge > lim->max_sge)
		return reason_fail(why, -EINVAL,
				   "receive queue of %u WRs x %u SGEs (limits "
				   "%u, %u)",
				   q->max_recv_wr, q->max_recv_sge,
				   lim->max_qp_wr, lim->max_sge);
	return 0;
}

static int check_create_qp(const union pvrdma_cmd_req *c,
			   const struct pvrdma_cmd_limits *lim,
			   struct reason *why)
{
	const struct pvrdma_cmd_create_qp *q = &c->create_qp;
	uint32_t sq, rq = 0;
	int r;

	if (q->qp_type != PVRDMA_QPT_GSI && q->qp_type != PVRDMA_QPT_RC &&
	    q->qp_type != PVRDMA_QPT_UC && q->qp_type != PVRDMA_QPT_UD)
		return reason_fail(why, -EOPNOTSUPP, "QP type %u", q->qp_type);
	if (q->is_srq > 1)
		return reason_fail(why, -EINVAL, "is_srq %u", q->is_srq);
	r = check_qp_caps(q, lim, why);
	if (r < 0)
		return r;
	/* send_chunks: the SQ's pages, without the ring-state page 0 */
	sq = pvrdma_ring_pages(q->max_send_wr,
			       pvrdma_sq_wqe_size(q->max_send_sge));
	if (!q->is_srq)
		rq = pvrdma_ring_pages(q->max_recv_wr,
				       pvrdma_rq_wqe_size(q->max_recv_sge));
	if (q->send_chunks < sq ||
	    (uint32_t)q->send_chunks + 1 > q->total_chunks ||
	    (uint32_t)q->total_chunks - 1 - q->send_chunks < rq)
		return reason_fail(why, -EINVAL,
				   "QP ring pages %u (send %u), needs send %u "
				   "and receive %u",
				   q->total_chunks, q->send_chunks, sq, rq);
	return check_ring_pages(q->total_chunks, 1 + sq + rq, q->pdir_dma, lim,
				"QP", why);
}

static int check_state(uint32_t s, const char *what, struct reason *why)
{
	if (s > PVRDMA_QPS_ERR)
		return reason_fail(why, -EINVAL, "%s %u", what, s);
	return 0;
}

static int check_ah(const struct pvrdma_ah_attr *ah,
		    const struct pvrdma_cmd_limits *lim, struct reason *why)
{
	if (!(ah->ah_flags & PVRDMA_AH_GRH))
		return reason_fail(why, -EINVAL, "address without GRH (RoCE)");
	if (ah->grh.sgid_index >= lim->gid_tbl_len)
		return reason_fail(why, -EINVAL,
				   "source GID index %u (table "
				   "of %u)",
				   ah->grh.sgid_index, lim->gid_tbl_len);
	return 0;
}

static int check_modify_qp(const union pvrdma_cmd_req *c,
			   const struct pvrdma_cmd_limits *lim,
			   struct reason *why)
{
	const struct pvrdma_cmd_modify_qp *m = &c->modify_qp;
	const struct pvrdma_qp_attr *a = &m->attrs;
	int r = 0;

	if (m->attr_mask & ~PVRDMA_QP_ATTR_MASK_ALL)
		return reason_fail(why, -EINVAL, "QP attribute mask 0x%x",
				   m->attr_mask);
	if (m->attr_mask & PVRDMA_QP_ALT_PATH)
		return reason_fail(why, -EOPNOTSUPP, "alternate paths");
	if (m->attr_mask & PVRDMA_QP_STATE)
		r = check_state(a->qp_state, "QP state", why);
	if (!r && (m->attr_mask & PVRDMA_QP_CUR_STATE))
		r = check_state(a->cur_qp_state, "current QP state", why);
	if (!r && (m->attr_mask & PVRDMA_QP_PATH_MTU) &&
	    (a->path_mtu < PVRDMA_MTU_256 || a->path_mtu > PVRDMA_MTU_4096))
		r = reason_fail(why, -EINVAL, "path MTU %u", a->path_mtu);
	if (!r && (m->attr_mask & PVRDMA_QP_PATH_MIG_STATE) &&
	    a->path_mig_state > PVRDMA_MIG_ARMED)
		r = reason_fail(why, -EINVAL, "migration state %u",
				a->path_mig_state);
	if (!r && (m->attr_mask & PVRDMA_QP_PORT))
		r = check_port(a->port_num, why);
	if (!r && (m->attr_mask & PVRDMA_QP_PKEY_INDEX) &&
	    a->pkey_index >= lim->max_pkeys)
		r = reason_fail(why, -EINVAL, "P_Key index %u", a->pkey_index);
	if (!r && (m->attr_mask & PVRDMA_QP_ACCESS_FLAGS) &&
	    (a->qp_access_flags & ~MR_ACCESS_OK))
		r = reason_fail(why, -EINVAL, "QP access flags 0x%x",
				a->qp_access_flags);
	if (!r && (m->attr_mask & PVRDMA_QP_AV))
		r = check_ah(&a->ah_attr, lim, why);
	return r;
}

static int check_query_qp(const union pvrdma_cmd_req *c,
			  const struct pvrdma_cmd_limits *lim,
			  struct reason *why)
{
	(void)lim;
	if (c->query_qp.attr_mask & ~PVRDMA_QP_ATTR_MASK_ALL)
		return reason_fail(why, -EINVAL, "QP attribute mask 0x%x",
				   c->query_qp.attr_mask);
	return 0;
}

static int check_bind_index(uint32_t index, const struct pvrdma_cmd_limits *lim,
			    struct reason *why)
{
	if (index >= lim->gid_tbl_len)
		return reason_fail(why, -EINVAL, "GID index %u (table of %u)",
				   index, lim->gid_tbl_len);
	return 0;
}

static int check_create_bind(const union pvrdma_cmd_req *c,
			     const struct pvrdma_cmd_limits *lim,
			     struct reason *why)
{
	uint8_t t = c->create_bind.gid_type;

	if (t != PVRDMA_GID_TYPE_FLAG_ROCE_V1 &&
	    t != PVRDMA_GID_TYPE_FLAG_ROCE_V2)
		return reason_fail(why, -EINVAL, "GID type 0x%x", t);
	return check_bind_index(c->create_bind.index, lim, why);
}

static int check_destroy_bind(const union pvrdma_cmd_req *c,
			      const struct pvrdma_cmd_limits *lim,
			      struct reason *why)
{
	return check_bind_index(c->destroy_bind.index, lim, why);
}

static int check_srq_attr(const struct pvrdma_srq_attr *a,
			  const struct pvrdma_cmd_limits *lim,
			  struct reason *why)
{
	if (!pow2_in(a->max_wr, lim->max_srq_wr) || a->max_sge == 0 ||
	    a->max_sge > lim->max_srq_sge || a->srq_limit >= a->max_wr)
		return reason_fail(why, -EINVAL,
				   "SRQ of %u WRs x %u SGEs, limit %u (limits "
				   "%u, %u)",
				   a->max_wr, a->max_sge, a->srq_limit,
				   lim->max_srq_wr, lim->max_srq_sge);
	return 0;
}

static int check_create_srq(const union pvrdma_cmd_req *c,
			    const struct pvrdma_cmd_limits *lim,
			    struct reason *why)
{
	const struct pvrdma_cmd_create_srq *s = &c->create_srq;
	int r;

	if (s->srq_type != 0)
		return reason_fail(why, -EOPNOTSUPP, "SRQ type %u",
				   s->srq_type);
	r = check_srq_attr(&s->attrs, lim, why);
	if (r < 0)
		return r;
	return check_ring_pages(
		s->nchunks,
		1 + pvrdma_ring_pages(s->attrs.max_wr,
				      pvrdma_rq_wqe_size(s->attrs.max_sge)),
		s->pdir_dma, lim, "SRQ", why);
}

static int check_modify_srq(const union pvrdma_cmd_req *c,
			    const struct pvrdma_cmd_limits *lim,
			    struct reason *why)
{
	(void)lim;
	if (c->modify_srq.attr_mask & ~(PVRDMA_SRQ_MAX_WR | PVRDMA_SRQ_LIMIT))
		return reason_fail(why, -EINVAL, "SRQ attribute mask 0x%x",
				   c->modify_srq.attr_mask);
	/* A PVRDMA SRQ ring cannot grow: its pages are fixed at create. */
	if (c->modify_srq.attr_mask & PVRDMA_SRQ_MAX_WR)
		return reason_fail(why, -EOPNOTSUPP, "resizing an SRQ");
	return 0;
}

#define CMD(code, st, fn)                                                      \
	[PVRDMA_CMD_##code] = { #code, sizeof(struct pvrdma_cmd_##st), fn }

static const struct cmd_desc cmds[PVRDMA_CMD_MAX] = {
	CMD(QUERY_PORT, query_port, check_query_port),
	CMD(QUERY_PKEY, query_pkey, check_query_pkey),
	CMD(CREATE_PD, create_pd, NULL),
	CMD(DESTROY_PD, destroy_pd, NULL),
	CMD(CREATE_MR, create_mr, check_create_mr),
	CMD(DESTROY_MR, destroy_mr, NULL),
	CMD(CREATE_CQ, create_cq, check_create_cq),
	CMD(RESIZE_CQ, resize_cq, check_resize_cq),
	CMD(DESTROY_CQ, destroy_cq, NULL),
	CMD(CREATE_QP, create_qp, check_create_qp),
	CMD(MODIFY_QP, modify_qp, check_modify_qp),
	CMD(QUERY_QP, query_qp, check_query_qp),
	CMD(DESTROY_QP, destroy_qp, NULL),
	CMD(CREATE_UC, create_uc, NULL),
	CMD(DESTROY_UC, destroy_uc, NULL),
	CMD(CREATE_BIND, create_bind, check_create_bind),
	CMD(DESTROY_BIND, destroy_bind, check_destroy_bind),
	CMD(CREATE_SRQ, create_srq, check_create_srq),
	CMD(MODIFY_SRQ, modify_srq, check_modify_srq),
	CMD(QUERY_SRQ, query_srq, NULL),
	CMD(DESTROY_SRQ, destroy_srq, NULL),
};

const char *pvrdma_cmd_name(uint32_t cmd)
{
	return cmd < PVRDMA_CMD_MAX ? cmds[cmd].name : "UNKNOWN";
}

size_t pvrdma_cmd_req_size(uint32_t cmd)
{
	return cmd < PVRDMA_CMD_MAX ? cmds[cmd].size : 0;
}

int pvrdma_cmd_decode(const void *slot, size_t len,
		      const struct pvrdma_cmd_limits *lim,
		      union pvrdma_cmd_req *ret, struct reason *why)
{
	union pvrdma_cmd_req c;
	struct pvrdma_cmd_hdr hdr;
	const struct cmd_desc *d;
	int r;

	if (len < sizeof(hdr))
		return reason_fail(why, -EINVAL, "command of %zu bytes", len);
	memcpy(&hdr, slot, sizeof(hdr));
	if (hdr.cmd >= PVRDMA_CMD_MAX)
		return reason_fail(why, -ENOSYS, "unknown command %u", hdr.cmd);
	d = &cmds[hdr.cmd];
	if (len < d->size)
		return reason_fail(why, -EINVAL, "%s in %zu bytes (needs %zu)",
				   d->name, len, d->size);
	memset(&c, 0, sizeof(c));
	memcpy(&c, slot, d->size);
	if (d->check) {
		r = d->check(&c, lim, why);
		if (r < 0)
			return r;
	}
	*ret = c;
	return (int)hdr.cmd;
}
