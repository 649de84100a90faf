// SPDX-License-Identifier: MIT
/*
 * The codec of QEMU's rdmacm-mux protocol (common/rdmacm_mux_proto.h):
 * pure, no I/O.  Every record comes from a QEMU process that a guest may
 * drive: it is copied once, then checked field by field.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/rdmacm_mux_proto.h"

int rcm_decode_request(const void *buf, size_t len, struct rcm_request *ret,
		       struct reason *why)
{
	struct rcm_request r;
	struct rcm_msg m;
	char on[16];

	if (len != RCM_MSG_SIZE)
		return msg_fail(why, -EBADMSG,
				"record of %zu bytes: QEMU's are %d", len,
				RCM_MSG_SIZE);
	memcpy(&m, buf, sizeof(m));
	if (m.msg_type != RCM_REQ)
		return msg_fail(why, -EPROTO,
				"msg_type %u: a client sends requests (%d)",
				m.msg_type, RCM_REQ);
	if (m.op_code > RCM_OP_MAD)
		return msg_fail(why, -EOPNOTSUPP, "%s: not REG, UNREG or MAD",
				rcm_op_name(m.op_code, on));
	if (msg_all_zero(m.sgid, RCM_GID_SIZE))
		return msg_fail(why, -EINVAL, "%s: the GID is all zero",
				rcm_op_name(m.op_code, on));
	memset(&r, 0, sizeof(r));
	r.op = m.op_code;
	memcpy(r.sgid, m.sgid, RCM_GID_SIZE);
	if (m.op_code == RCM_OP_MAD) {
		if (m.umad_len < RCM_MAD_HDR || m.umad_len > RCM_MAD_SIZE)
			return msg_fail(why, -EINVAL,
					"MAD: umad_len %d: not %d..%d",
					m.umad_len, RCM_MAD_HDR, RCM_MAD_SIZE);
		r.mad_len = (uint32_t)m.umad_len;
		memcpy(r.mad, m.mad, r.mad_len);
	}
	*ret = r;
	return 0;
}

void rcm_encode_response(struct rcm_msg *m, uint32_t op, const uint8_t *sgid,
			 enum rcm_err err)
{
	memset(m, 0, sizeof(*m));
	m->msg_type = RCM_RESP;
	m->op_code = op;
	if (sgid)
		memcpy(m->sgid, sgid, RCM_GID_SIZE);
	m->err_code = err;
}

int rcm_encode_incoming(struct rcm_msg *m, const struct rcm_incoming *in)
{
	if (in->mad_len < RCM_MAD_HDR || in->mad_len > RCM_MAD_SIZE)
		return -EINVAL;
	memset(m, 0, sizeof(*m));
	m->msg_type = RCM_REQ;
	m->op_code = RCM_OP_MAD;
	memcpy(m->sgid, in->dgid, RCM_GID_SIZE);
	m->umad_len = (int32_t)in->mad_len;
	m->length = (uint32_t)in->mad_len;
	m->addr.qpn_be = htonl(in->src_qpn & RCM_QPN_MASK);
	m->addr.grh_present = 1;
	m->addr.hop_limit = in->hop_limit;
	m->addr.traffic_class = in->traffic_class;
	memcpy(m->addr.gid, in->sgid, RCM_GID_SIZE);
	m->addr.flow_label_be = htonl(in->flow_label & RCM_FLOW_MASK);
	m->addr.pkey_index = in->pkey_index;
	memcpy(m->mad, in->mad, in->mad_len);
	return 0;
}

enum rcm_err rcm_err_of_errno(int e)
{
	switch (e < 0 ? -e : e) {
	case 0:
		return RCM_ERR_OK;
	case EEXIST:
		return RCM_ERR_EEXIST;
	case EACCES:
	case EPERM:
		return RCM_ERR_EACCES;
	case ENOENT:
		return RCM_ERR_ENOTFOUND;
	default:
		return RCM_ERR_EINVAL;
	}
}

const char *rcm_op_name(uint32_t op, char buf[16])
{
	static const char *const names[] = {
		[RCM_OP_REG] = "REG",
		[RCM_OP_UNREG] = "UNREG",
		[RCM_OP_MAD] = "MAD",
	};

	if (op < sizeof(names) / sizeof(names[0]))
		return names[op];
	snprintf(buf, 16, "op %u", op);
	return buf;
}
