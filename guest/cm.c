// SPDX-License-Identifier: MIT
/*
 * The guest simulator's CM MAD codec (see guest/cm.h): IBTA vol. 1
 * ch. 12 messages and the annex A11 RDMA-CM IP private data, as a guest
 * kernel's ib_cm/rdma_cm writes them. Pure; run by rdmagate-guest and the
 * tests.
 *
 * Offsets below are those of the IBTA tables, counted from the start of
 * the message (byte 24 of the MAD); "hi(n)" is a field in the n most
 * significant bits of its byte or word.
 */
#include <errno.h>
#include <string.h>

#include "guest/cm.h"

/* ---- byte access (network order) ---- */

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

/* A 24-bit field in the high bits of the word at p; p[3] is untouched. */
static void put24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

static uint32_t get24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static bool is_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* ---- names ---- */

const char *cm_attr_name(uint16_t attr_id)
{
	switch (attr_id) {
	case CM_ATTR_CLASS_PORT_INFO:
		return "ClassPortInfo";
	case CM_ATTR_REQ:
		return "REQ";
	case CM_ATTR_MRA:
		return "MRA";
	case CM_ATTR_REJ:
		return "REJ";
	case CM_ATTR_REP:
		return "REP";
	case CM_ATTR_RTU:
		return "RTU";
	case CM_ATTR_DREQ:
		return "DREQ";
	case CM_ATTR_DREP:
		return "DREP";
	case CM_ATTR_SIDR_REQ:
		return "SIDR_REQ";
	case CM_ATTR_SIDR_REP:
		return "SIDR_REP";
	case CM_ATTR_LAP:
		return "LAP";
	case CM_ATTR_APR:
		return "APR";
	default:
		return "UNKNOWN";
	}
}

const char *cm_rej_reason_name(uint16_t reason)
{
	static const char *const names[] = {
		[CM_REJ_NO_QP] = "no QP",
		[2] = "no EEC",
		[CM_REJ_NO_RESOURCES] = "no resources",
		[CM_REJ_TIMEOUT] = "timeout",
		[CM_REJ_UNSUPPORTED] = "unsupported request",
		[CM_REJ_INVALID_COMM_ID] = "invalid communication id",
		[CM_REJ_INVALID_COMM_INSTANCE] =
			"invalid communication instance",
		[CM_REJ_INVALID_SERVICE_ID] = "invalid service id",
		[CM_REJ_INVALID_TRANSPORT_TYPE] = "invalid transport type",
		[CM_REJ_STALE_CONN] = "stale connection",
		[11] = "RDC does not exist",
		[CM_REJ_INVALID_GID] = "invalid GID",
		[13] = "invalid LID",
		[14] = "invalid SL",
		[15] = "invalid traffic class",
		[16] = "invalid hop limit",
		[17] = "invalid packet rate",
		[CM_REJ_INVALID_MTU] = "invalid MTU",
		[27] = "insufficient responder resources",
		[CM_REJ_CONSUMER_DEFINED] = "consumer defined",
		[29] = "invalid RNR retry count",
		[30] = "duplicate local communication id",
		[CM_REJ_INVALID_CLASS_VERSION] = "invalid class version",
	};

	if (reason < sizeof(names) / sizeof(names[0]) && names[reason])
		return names[reason];
	return "other reason";
}

/* ---- the header ---- */

void cm_mad_hdr_init(struct cm_mad_hdr *h, uint16_t attr_id, uint64_t tid)
{
	memset(h, 0, sizeof(*h));
	h->base_version = CM_BASE_VERSION;
	h->mgmt_class = CM_MGMT_CLASS;
	h->class_version = CM_CLASS_VERSION;
	h->method = CM_METHOD_SEND;
	h->tid = tid;
	h->attr_id = attr_id;
}

static void hdr_put(uint8_t *p, const struct cm_mad_hdr *h)
{
	p[0] = h->base_version;
	p[1] = h->mgmt_class;
	p[2] = h->class_version;
	p[3] = h->method;
	put16(p + 4, h->status);
	put16(p + 6, h->class_specific);
	put64(p + 8, h->tid);
	put16(p + 16, h->attr_id);
	put32(p + 20, h->attr_mod);
}

/* err: -EPROTO when decoding, -EINVAL when encoding */
static int hdr_check(const struct cm_mad_hdr *h, int err, struct reason *why)
{
	if (h->base_version != CM_BASE_VERSION)
		return reason_fail(why, err, "MAD: base version %u, needs %u",
				   h->base_version, CM_BASE_VERSION);
	if (h->mgmt_class != CM_MGMT_CLASS)
		return reason_fail(
			why, err,
			"MAD: management class 0x%02x, not CM (0x%02x)",
			h->mgmt_class, CM_MGMT_CLASS);
	if (h->class_version != CM_CLASS_VERSION)
		return reason_fail(why, err,
				   "MAD: CM class version %u, needs %u",
				   h->class_version, CM_CLASS_VERSION);
	if (h->method != CM_METHOD_SEND)
		return reason_fail(why, err,
				   "MAD: method 0x%02x, CM messages are SEND "
				   "(0x%02x)",
				   h->method, CM_METHOD_SEND);
	if (h->status)
		return reason_fail(why, err,
				   "MAD: status 0x%04x, a CM SEND carries 0",
				   h->status);
	return 0;
}

/* ---- field range checks for the encoder ---- */

#define CHECK_BITS(v, bits, what)                                              \
	do {                                                                   \
		if ((uint64_t)(v) >> (bits))                                   \
			return reason_fail(why, -EINVAL,                       \
					   "%s: %s 0x%llx does not fit in %u " \
					   "bits",                             \
					   msg, what, (unsigned long long)(v), \
					   (unsigned int)(bits));              \
	} while (0)

/* ---- paths (REQ) ---- */

static int path_check(const char *msg, const struct cm_path *p,
		      struct reason *why)
{
	CHECK_BITS(p->flow_label, 20, "flow label");
	CHECK_BITS(p->packet_rate, 6, "packet rate");
	CHECK_BITS(p->sl, 4, "SL");
	CHECK_BITS(p->local_ack_timeout, 5, "local ACK timeout");
	return 0;
}

/* Writes a path at p (44 bytes: REQ offsets 52..95 or 96..139). */
static void path_put(uint8_t *p, const struct cm_path *path)
{
	put16(p, path->local_lid);
	put16(p + 2, path->remote_lid);
	memcpy(p + 4, path->local_gid, 16);
	memcpy(p + 20, path->remote_gid, 16);
	put32(p + 36, path->flow_label << 12 | path->packet_rate);
	p[40] = path->traffic_class;
	p[41] = path->hop_limit;
	p[42] = (uint8_t)(path->sl << 4 | (path->subnet_local ? 0x08 : 0));
	p[43] = (uint8_t)(path->local_ack_timeout << 3);
}

static void path_get(const uint8_t *p, struct cm_path *path)
{
	path->local_lid = get16(p);
	path->remote_lid = get16(p + 2);
	memcpy(path->local_gid, p + 4, 16);
	memcpy(path->remote_gid, p + 20, 16);
	path->flow_label = get32(p + 36) >> 12;
	path->packet_rate = p[39] & 0x3f;
	path->traffic_class = p[40];
	path->hop_limit = p[41];
	path->sl = p[42] >> 4;
	path->subnet_local = p[42] & 0x08;
	path->local_ack_timeout = p[43] >> 3;
}

/* ---- REQ (IBTA table 106 in the kernel's numbering) ---- */

static int req_check(const struct cm_req *r, struct reason *why)
{
	const char *msg = "REQ";
	int e;

	CHECK_BITS(r->local_qpn, 24, "local QPN");
	CHECK_BITS(r->local_eecn, 24, "local EECN");
	CHECK_BITS(r->remote_eecn, 24, "remote EECN");
	CHECK_BITS(r->remote_cm_response_timeout, 5,
		   "remote CM response timeout");
	CHECK_BITS(r->transport, 2, "transport service type");
	CHECK_BITS(r->starting_psn, 24, "starting PSN");
	CHECK_BITS(r->local_cm_response_timeout, 5,
		   "local CM response timeout");
	CHECK_BITS(r->retry_count, 3, "retry count");
	CHECK_BITS(r->path_mtu, 4, "path MTU");
	CHECK_BITS(r->rnr_retry_count, 3, "RNR retry count");
	CHECK_BITS(r->max_cm_retries, 4, "max CM retries");
	CHECK_BITS(r->ext_transport, 3, "extended transport type");
	e = path_check(msg, &r->primary, why);
	if (!e && r->has_alternate)
		e = path_check(msg, &r->alternate, why);
	return e;
}

static void req_put(uint8_t *d, const struct cm_req *r)
{
	put32(d + 0, r->local_comm_id);
	put64(d + 8, r->service_id);
	put64(d + 16, r->local_ca_guid);
	put32(d + 28, r->local_qkey);
	put24(d + 32, r->local_qpn);
	d[35] = r->responder_resources;
	put24(d + 36, r->local_eecn);
	d[39] = r->initiator_depth;
	put24(d + 40, r->remote_eecn);
	d[43] = (uint8_t)(r->remote_cm_response_timeout << 3 |
			  r->transport << 1 | (r->flow_control ? 1 : 0));
	put24(d + 44, r->starting_psn);
	d[47] = (uint8_t)(r->local_cm_response_timeout << 3 | r->retry_count);
	put16(d + 48, r->pkey);
	d[50] = (uint8_t)(r->path_mtu << 4 | (r->rdc_exists ? 0x08 : 0) |
			  r->rnr_retry_count);
	d[51] = (uint8_t)(r->max_cm_retries << 4 | (r->srq ? 0x08 : 0) |
			  r->ext_transport);
	path_put(d + 52, &r->primary);
	if (r->has_alternate)
		path_put(d + 96, &r->alternate);
	if (r->sap_supported)
		d[139] |= 0x04;
	memcpy(d + 140, r->private_data, CM_REQ_PRIVATE_LEN);
}

static int req_get(const uint8_t *d, struct cm_req *r, struct reason *why)
{
	r->local_comm_id = get32(d + 0);
	r->service_id = get64(d + 8);
	r->local_ca_guid = get64(d + 16);
	r->local_qkey = get32(d + 28);
	r->local_qpn = get24(d + 32);
	r->responder_resources = d[35];
	r->local_eecn = get24(d + 36);
	r->initiator_depth = d[39];
	r->remote_eecn = get24(d + 40);
	r->remote_cm_response_timeout = d[43] >> 3;
	r->transport = (d[43] >> 1) & 3;
	r->flow_control = d[43] & 1;
	r->starting_psn = get24(d + 44);
	r->local_cm_response_timeout = d[47] >> 3;
	r->retry_count = d[47] & 7;
	r->pkey = get16(d + 48);
	r->path_mtu = d[50] >> 4;
	r->rdc_exists = d[50] & 0x08;
	r->rnr_retry_count = d[50] & 7;
	r->max_cm_retries = d[51] >> 4;
	r->srq = d[51] & 0x08;
	r->ext_transport = d[51] & 7;
	path_get(d + 52, &r->primary);
	/* ib_cm's cm_req_has_alt_path(): a LID or a GID present */
	r->has_alternate = get16(d + 96) || !is_zero(d + 100, 16);
	if (r->has_alternate)
		path_get(d + 96, &r->alternate);
	else
		memset(&r->alternate, 0, sizeof(r->alternate));
	r->sap_supported = d[139] & 0x04;
	memcpy(r->private_data, d + 140, CM_REQ_PRIVATE_LEN);

	if (r->transport == CM_TRANSPORT_RD)
		return reason_fail(why, -EINVAL,
				   "REQ: transport service type 2 (RD) is not "
				   "supported");
	if (r->transport == CM_TRANSPORT_EXT &&
	    r->ext_transport != CM_EXT_TRANSPORT_XRC)
		return reason_fail(why, -EINVAL,
				   "REQ: extended transport type %u, only 1 "
				   "(XRC) exists",
				   r->ext_transport);
	if (r->transport != CM_TRANSPORT_EXT && r->ext_transport)
		return reason_fail(why, -EINVAL,
				   "REQ: extended transport type %u without "
				   "transport service type 3",
				   r->ext_transport);
	if (r->local_qpn <= 1)
		return reason_fail(why, -EINVAL,
				   "REQ: local QPN %u is a special QP",
				   r->local_qpn);
	if (r->path_mtu < 1 || r->path_mtu > 5)
		return reason_fail(why, -EINVAL,
				   "REQ: path MTU %u, valid are 1 (256) to 5 "
				   "(4096)",
				   r->path_mtu);
	if (is_zero(r->primary.local_gid, 16) ||
	    is_zero(r->primary.remote_gid, 16))
		return reason_fail(
			why, -EINVAL, "REQ: primary path %s port GID is zero",
			is_zero(r->primary.local_gid, 16) ? "local" : "remote");
	return 0;
}

/* ---- MRA, REJ ---- */

static int mra_check(const struct cm_mra *m, struct reason *why)
{
	const char *msg = "MRA";

	CHECK_BITS(m->service_timeout, 5, "service timeout");
	if (m->msg_mraed > CM_MSG_RESPONSE_OTHER)
		return reason_fail(why, -EINVAL, "MRA: message MRAed %u",
				   m->msg_mraed);
	return 0;
}

static void mra_put(uint8_t *d, const struct cm_mra *m)
{
	put32(d, m->local_comm_id);
	put32(d + 4, m->remote_comm_id);
	d[8] = (uint8_t)(m->msg_mraed << 6);
	d[9] = (uint8_t)(m->service_timeout << 3);
	memcpy(d + 10, m->private_data, CM_MRA_PRIVATE_LEN);
}

static int mra_get(const uint8_t *d, struct cm_mra *m, struct reason *why)
{
	m->local_comm_id = get32(d);
	m->remote_comm_id = get32(d + 4);
	m->msg_mraed = d[8] >> 6;
	m->service_timeout = d[9] >> 3;
	memcpy(m->private_data, d + 10, CM_MRA_PRIVATE_LEN);
	if (m->msg_mraed > CM_MSG_RESPONSE_OTHER)
		return reason_fail(why, -EINVAL,
				   "MRA: message MRAed 3 is reserved");
	return 0;
}

static int rej_check(const struct cm_rej *r, struct reason *why)
{
	if (r->msg_rejected > CM_MSG_RESPONSE_OTHER)
		return reason_fail(why, -EINVAL, "REJ: message rejected %u",
				   r->msg_rejected);
	if (r->ari_length > CM_REJ_ARI_LEN)
		return reason_fail(why, -EINVAL,
				   "REJ: rejection info length %u, at most %u",
				   r->ari_length, CM_REJ_ARI_LEN);
	return 0;
}

static void rej_put(uint8_t *d, const struct cm_rej *r)
{
	put32(d, r->local_comm_id);
	put32(d + 4, r->remote_comm_id);
	d[8] = (uint8_t)(r->msg_rejected << 6);
	d[9] = (uint8_t)(r->ari_length << 1);
	put16(d + 10, r->reason);
	memcpy(d + 12, r->ari, CM_REJ_ARI_LEN);
	memcpy(d + 84, r->private_data, CM_REJ_PRIVATE_LEN);
}

static int rej_get(const uint8_t *d, struct cm_rej *r, struct reason *why)
{
	r->local_comm_id = get32(d);
	r->remote_comm_id = get32(d + 4);
	r->msg_rejected = d[8] >> 6;
	r->ari_length = d[9] >> 1;
	r->reason = get16(d + 10);
	memcpy(r->ari, d + 12, CM_REJ_ARI_LEN);
	memcpy(r->private_data, d + 84, CM_REJ_PRIVATE_LEN);
	if (r->msg_rejected > CM_MSG_RESPONSE_OTHER)
		return reason_fail(why, -EINVAL,
				   "REJ: message rejected 3 is reserved");
	if (r->ari_length > CM_REJ_ARI_LEN)
		return reason_fail(why, -EINVAL,
				   "REJ: rejection info length %u, at most %u",
				   r->ari_length, CM_REJ_ARI_LEN);
	return 0;
}

/* ---- REP ---- */

static int rep_check(const struct cm_rep *r, struct reason *why)
{
	const char *msg = "REP";

	CHECK_BITS(r->local_qpn, 24, "local QPN");
	CHECK_BITS(r->local_eecn, 24, "local EECN");
	CHECK_BITS(r->starting_psn, 24, "starting PSN");
	CHECK_BITS(r->target_ack_delay, 5, "target ACK delay");
	CHECK_BITS(r->rnr_retry_count, 3, "RNR retry count");
	if (r->failover_accepted > 2)
		return reason_fail(why, -EINVAL, "REP: failover accepted %u",
				   r->failover_accepted);
	return 0;
}

static void rep_put(uint8_t *d, const struct cm_rep *r)
{
	put32(d, r->local_comm_id);
	put32(d + 4, r->remote_comm_id);
	put32(d + 8, r->local_qkey);
	put24(d + 12, r->local_qpn);
	put24(d + 16, r->local_eecn);
	put24(d + 20, r->starting_psn);
	d[24] = r->responder_resources;
	d[25] = r->initiator_depth;
	d[26] = (uint8_t)(r->target_ack_delay << 3 | r->failover_accepted << 1 |
			  (r->flow_control ? 1 : 0));
	d[27] = (uint8_t)(r->rnr_retry_count << 5 | (r->srq ? 0x10 : 0));
	put64(d + 28, r->local_ca_guid);
	memcpy(d + 36, r->private_data, CM_REP_PRIVATE_LEN);
}

static int rep_get(const uint8_t *d, struct cm_rep *r, struct reason *why)
{
	r->local_comm_id = get32(d);
	r->remote_comm_id = get32(d + 4);
	r->local_qkey = get32(d + 8);
	r->local_qpn = get24(d + 12);
	r->local_eecn = get24(d + 16);
	r->starting_psn = get24(d + 20);
	r->responder_resources = d[24];
	r->initiator_depth = d[25];
	r->target_ack_delay = d[26] >> 3;
	r->failover_accepted = (d[26] >> 1) & 3;
	r->flow_control = d[26] & 1;
	r->rnr_retry_count = d[27] >> 5;
	r->srq = d[27] & 0x10;
	r->local_ca_guid = get64(d + 28);
	memcpy(r->private_data, d + 36, CM_REP_PRIVATE_LEN);
	if (r->failover_accepted == 3)
		return reason_fail(why, -EINVAL,
				   "REP: failover accepted 3 is reserved");
	if (r->local_qpn <= 1)
		return reason_fail(why, -EINVAL,
				   "REP: local QPN %u is a special QP",
				   r->local_qpn);
	return 0;
}

/* ---- RTU, DREQ, DREP (ids + private data) ---- */

static void ids_put(uint8_t *d, uint32_t local, uint32_t remote)
{
	put32(d, local);
	put32(d + 4, remote);
}

static int dreq_check(const struct cm_dreq *r, struct reason *why)
{
	const char *msg = "DREQ";

	CHECK_BITS(r->remote_qpn, 24, "remote QPN");
	return 0;
}

/* ---- SIDR ---- */

static int sidr_rep_check(const struct cm_sidr_rep *r, struct reason *why)
{
	const char *msg = "SIDR_REP";

	CHECK_BITS(r->qpn, 24, "QPN");
	if (r->status > 5)
		return reason_fail(why, -EINVAL, "SIDR_REP: status %u",
				   r->status);
	if (r->info_length > CM_SIDR_REP_INFO_LEN)
		return reason_fail(why, -EINVAL,
				   "SIDR_REP: additional info length %u, at "
				   "most %u",
				   r->info_length, CM_SIDR_REP_INFO_LEN);
	return 0;
}

static void sidr_rep_put(uint8_t *d, const struct cm_sidr_rep *r)
{
	put32(d, r->request_id);
	d[4] = r->status;
	d[5] = r->info_length;
	put24(d + 8, r->qpn);
	put64(d + 12, r->service_id);
	put32(d + 20, r->qkey);
	memcpy(d + 24, r->info, CM_SIDR_REP_INFO_LEN);
	memcpy(d + 96, r->private_data, CM_SIDR_REP_PRIVATE_LEN);
}

static int sidr_rep_get(const uint8_t *d, struct cm_sidr_rep *r,
			struct reason *why)
{
	r->request_id = get32(d);
	r->status = d[4];
	r->info_length = d[5];
	r->qpn = get24(d + 8);
	r->service_id = get64(d + 12);
	r->qkey = get32(d + 20);
	memcpy(r->info, d + 24, CM_SIDR_REP_INFO_LEN);
	memcpy(r->private_data, d + 96, CM_SIDR_REP_PRIVATE_LEN);
	return sidr_rep_check(r, why);
}

/* ---- encode / decode ---- */

int cm_encode(const struct cm_msg *m, uint8_t out[CM_MAD_LEN],
	      struct reason *why)
{
	uint8_t *d = out + CM_MAD_HDR_LEN;
	int e = hdr_check(&m->hdr, -EINVAL, why);

	if (e)
		return e;
	switch (m->hdr.attr_id) {
	case CM_ATTR_REQ:
		e = req_check(&m->req, why);
		break;
	case CM_ATTR_MRA:
		e = mra_check(&m->mra, why);
		break;
	case CM_ATTR_REJ:
		e = rej_check(&m->rej, why);
		break;
	case CM_ATTR_REP:
		e = rep_check(&m->rep, why);
		break;
	case CM_ATTR_DREQ:
		e = dreq_check(&m->dreq, why);
		break;
	case CM_ATTR_SIDR_REP:
		e = sidr_rep_check(&m->sidr_rep, why);
		break;
	case CM_ATTR_RTU:
	case CM_ATTR_DREP:
	case CM_ATTR_SIDR_REQ:
		break;
	default:
		return reason_fail(why, -EINVAL,
				   "encode: attribute 0x%04x (%s) is not a CM "
				   "message this codec writes",
				   m->hdr.attr_id,
				   cm_attr_name(m->hdr.attr_id));
	}
	if (e)
		return e;
	memset(out, 0, CM_MAD_LEN);
	hdr_put(out, &m->hdr);
	switch (m->hdr.attr_id) {
	case CM_ATTR_REQ:
		req_put(d, &m->req);
		break;
	case CM_ATTR_MRA:
		mra_put(d, &m->mra);
		break;
	case CM_ATTR_REJ:
		rej_put(d, &m->rej);
		break;
	case CM_ATTR_REP:
		rep_put(d, &m->rep);
		break;
	case CM_ATTR_RTU:
		ids_put(d, m->rtu.local_comm_id, m->rtu.remote_comm_id);
		memcpy(d + 8, m->rtu.private_data, CM_RTU_PRIVATE_LEN);
		break;
	case CM_ATTR_DREQ:
		ids_put(d, m->dreq.local_comm_id, m->dreq.remote_comm_id);
		put24(d + 8, m->dreq.remote_qpn);
		memcpy(d + 12, m->dreq.private_data, CM_DREQ_PRIVATE_LEN);
		break;
	case CM_ATTR_DREP:
		ids_put(d, m->drep.local_comm_id, m->drep.remote_comm_id);
		memcpy(d + 8, m->drep.private_data, CM_DREP_PRIVATE_LEN);
		break;
	case CM_ATTR_SIDR_REQ:
		put32(d, m->sidr_req.request_id);
		put16(d + 4, m->sidr_req.pkey);
		put64(d + 8, m->sidr_req.service_id);
		memcpy(d + 16, m->sidr_req.private_data,
		       CM_SIDR_REQ_PRIVATE_LEN);
		break;
	case CM_ATTR_SIDR_REP:
		sidr_rep_put(d, &m->sidr_rep);
		break;
	}
	return CM_MAD_LEN;
}

int cm_decode(const uint8_t *buf, size_t len, struct cm_msg *ret,
	      struct reason *why)
{
	const uint8_t *d = buf + CM_MAD_HDR_LEN;
	struct cm_msg m;
	int e;

	if (len != CM_MAD_LEN)
		return reason_fail(why, -EMSGSIZE, "MAD: %zu bytes, needs %u",
				   len, CM_MAD_LEN);
	memset(&m, 0, sizeof(m));
	m.hdr.base_version = buf[0];
	m.hdr.mgmt_class = buf[1];
	m.hdr.class_version = buf[2];
	m.hdr.method = buf[3];
	m.hdr.status = get16(buf + 4);
	m.hdr.class_specific = get16(buf + 6);
	m.hdr.tid = get64(buf + 8);
	m.hdr.attr_id = get16(buf + 16);
	m.hdr.attr_mod = get32(buf + 20);
	e = hdr_check(&m.hdr, -EPROTO, why);
	if (e)
		return e;
	switch (m.hdr.attr_id) {
	case CM_ATTR_REQ:
		e = req_get(d, &m.req, why);
		break;
	case CM_ATTR_MRA:
		e = mra_get(d, &m.mra, why);
		break;
	case CM_ATTR_REJ:
		e = rej_get(d, &m.rej, why);
		break;
	case CM_ATTR_REP:
		e = rep_get(d, &m.rep, why);
		break;
	case CM_ATTR_RTU:
		m.rtu.local_comm_id = get32(d);
		m.rtu.remote_comm_id = get32(d + 4);
		memcpy(m.rtu.private_data, d + 8, CM_RTU_PRIVATE_LEN);
		break;
	case CM_ATTR_DREQ:
		m.dreq.local_comm_id = get32(d);
		m.dreq.remote_comm_id = get32(d + 4);
		m.dreq.remote_qpn = get24(d + 8);
		memcpy(m.dreq.private_data, d + 12, CM_DREQ_PRIVATE_LEN);
		break;
	case CM_ATTR_DREP:
		m.drep.local_comm_id = get32(d);
		m.drep.remote_comm_id = get32(d + 4);
		memcpy(m.drep.private_data, d + 8, CM_DREP_PRIVATE_LEN);
		break;
	case CM_ATTR_SIDR_REQ:
		m.sidr_req.request_id = get32(d);
		m.sidr_req.pkey = get16(d + 4);
		m.sidr_req.service_id = get64(d + 8);
		memcpy(m.sidr_req.private_data, d + 16,
		       CM_SIDR_REQ_PRIVATE_LEN);
		break;
	case CM_ATTR_SIDR_REP:
		e = sidr_rep_get(d, &m.sidr_rep, why);
		break;
	case CM_ATTR_CLASS_PORT_INFO:
	case CM_ATTR_LAP:
	case CM_ATTR_APR:
		return reason_fail(why, -EOPNOTSUPP,
				   "MAD: CM attribute 0x%04x (%s) is not "
				   "supported",
				   m.hdr.attr_id, cm_attr_name(m.hdr.attr_id));
	default:
		return reason_fail(why, -EINVAL,
				   "MAD: unknown CM attribute 0x%04x",
				   m.hdr.attr_id);
	}
	if (e)
		return e;
	*ret = m;
	return 0;
}

/* ---- timers ---- */

uint32_t cm_time_to_ms(uint8_t iba_time)
{
	unsigned int t = iba_time & 31;

	return 1u << (t > 8 ? t - 8 : 0);
}

uint8_t cm_ack_timeout(uint8_t ca_ack_delay, uint8_t packet_life_time)
{
	int ack = packet_life_time + 1;

	if (ack >= ca_ack_delay)
		ack += ca_ack_delay >= ack - 1;
	else
		ack = ca_ack_delay + (ack >= ca_ack_delay - 1);
	return (uint8_t)(ack < 31 ? ack : 31);
}

/* ---- RDMA-CM IP addressing ---- */

#define CM_IP_SID_PREFIX 0x0000000001000000ull
#define CM_IP_SID_MASK	 0xffffffffff000000ull

uint64_t cm_ip_service_id(uint16_t port_space, uint16_t port)
{
	return (uint64_t)port_space << 16 | port;
}

int cm_ip_service_port(uint64_t service_id, uint16_t *ret_ps,
		       uint16_t *ret_port, struct reason *why)
{
	if ((service_id & CM_IP_SID_MASK) != CM_IP_SID_PREFIX)
		return reason_fail(why, -EINVAL,
				   "service id 0x%016llx is not an RDMA IP "
				   "service (0x0000000001PPpppp)",
				   (unsigned long long)service_id);
	*ret_ps = (uint16_t)(service_id >> 16);
	*ret_port = (uint16_t)service_id;
	return 0;
}

int cm_ip_encode(const struct cm_ip_hdr *h, const void *user, size_t user_len,
		 uint8_t pd[CM_REQ_PRIVATE_LEN], struct reason *why)
{
	if (h->ip_version != 4 && h->ip_version != 6)
		return reason_fail(why, -EINVAL,
				   "CMA header: IP version %u, needs 4 or 6",
				   h->ip_version);
	if (h->ip_version == 4 &&
	    (!is_zero(h->src, 12) || !is_zero(h->dst, 12)))
		return reason_fail(why, -EINVAL,
				   "CMA header: IPv4 address with bytes before "
				   "its last 4");
	if (user_len > CM_IP_USER_LEN)
		return reason_fail(
			why, -EINVAL,
			"CMA header: %zu bytes of user data, at most "
			"%u",
			user_len, (unsigned int)CM_IP_USER_LEN);
	memset(pd, 0, CM_REQ_PRIVATE_LEN);
	pd[0] = CM_IP_CMA_VERSION;
	pd[1] = (uint8_t)(h->ip_version << 4);
	put16(pd + 2, h->src_port);
	memcpy(pd + 4, h->src, 16);
	memcpy(pd + 20, h->dst, 16);
	if (user_len)
		memcpy(pd + CM_IP_HDR_LEN, user, user_len);
	return 0;
}

int cm_ip_decode(const uint8_t pd[CM_REQ_PRIVATE_LEN], struct cm_ip_hdr *ret,
		 struct reason *why)
{
	uint8_t ver = pd[1] >> 4;

	if (pd[0] != CM_IP_CMA_VERSION)
		return reason_fail(why, -EINVAL,
				   "CMA header: version 0x%02x, needs 0x%02x",
				   pd[0], CM_IP_CMA_VERSION);
	if (ver != 4 && ver != 6)
		return reason_fail(why, -EINVAL,
				   "CMA header: IP version %u, needs 4 or 6",
				   ver);
	ret->ip_version = ver;
	ret->src_port = get16(pd + 2);
	memset(ret->src, 0, 16);
	memset(ret->dst, 0, 16);
	/* IPv4: the pad before the address is reserved, ignored */
	if (ver == 4) {
		memcpy(ret->src + 12, pd + 4 + 12, 4);
		memcpy(ret->dst + 12, pd + 20 + 12, 4);
	} else {
		memcpy(ret->src, pd + 4, 16);
		memcpy(ret->dst, pd + 20, 16);
	}
	return 0;
}

static const uint8_t v4_mapped[12] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
};

void cm_ip_to_gid(uint8_t ip_version, const uint8_t addr[16],
		  uint8_t ret_gid[16])
{
	if (ip_version == 4) {
		memcpy(ret_gid, v4_mapped, 12);
		memcpy(ret_gid + 12, addr + 12, 4);
	} else {
		memcpy(ret_gid, addr, 16);
	}
}

uint8_t cm_gid_to_ip(const uint8_t gid[16], uint8_t ret_addr[16])
{
	if (!memcmp(gid, v4_mapped, 12)) {
		memset(ret_addr, 0, 12);
		memcpy(ret_addr + 12, gid + 12, 4);
		return 4;
	}
	memcpy(ret_addr, gid, 16);
	return 6;
}

uint32_t cm_ip_flow_label(uint16_t src_port, uint16_t dst_port)
{
	return ((uint32_t)src_port * 31 + dst_port) & 0xfffff;
}

/* ---- the GRH area ---- */

int cm_grh_parse(const uint8_t grh[CM_GRH_LEN], uint8_t ret_sgid[16],
		 uint8_t ret_dgid[16], uint8_t *ret_hop_limit,
		 uint8_t *ret_traffic_class, uint32_t *ret_flow_label,
		 struct reason *why)
{
	uint32_t w = get32(grh);

	if (w >> 28 == 6) { /* IPv6 header = IB GRH */
		*ret_traffic_class = (uint8_t)(w >> 20);
		*ret_flow_label = w & 0xfffff;
		*ret_hop_limit = grh[7];
		memcpy(ret_sgid, grh + 8, 16);
		memcpy(ret_dgid, grh + 24, 16);
		return 0;
	}
	if (grh[20] == 0x45) { /* RoCE v2 over IPv4: the header at 20 */
		*ret_traffic_class = grh[21];
		*ret_flow_label = 0;
		*ret_hop_limit = grh[28];
		memcpy(ret_sgid, v4_mapped, 12);
		memcpy(ret_sgid + 12, grh + 32, 4);
		memcpy(ret_dgid, v4_mapped, 12);
		memcpy(ret_dgid + 12, grh + 36, 4);
		return 0;
	}
	return reason_fail(why, -EINVAL,
			   "GRH area: neither an IPv6 header (first byte "
			   "0x%02x) nor an IPv4 one at byte 20 (0x%02x)",
			   grh[0], grh[20]);
}
