/* SPDX-License-Identifier: MIT */
/*
 * QEMU's rdmacm-mux protocol (QEMU <= 9.0, `-device pvrdma,mad-chardev=`),
 * as rdmagate-mux speaks it on its second endpoint: the message layout
 * defined once, and a pure codec (docs/mux.md, "The rdmacm-mux endpoint").
 *
 * Learned from QEMU's contrib/rdmacm-mux/rdmacm-mux.h and its client
 * hw/rdma/rdma_backend.c; this is our own description of the bytes.  The
 * channel is a UNIX SOCK_STREAM socket (QEMU's chardev socket client);
 * every message, both ways, is one fixed 360-byte record in QEMU's native
 * layout (x86-64: little-endian integers, the C padding included), with
 * no header, no version and no length: the record size is the framing.
 *
 *  - QEMU sends requests (msg_type REQ): REG / UNREG of a GID (when the
 *    guest driver binds or unbinds a GID, and after a migration), and MAD
 *    (a MAD the guest sent on QP1; its destination is NOT in the message:
 *    QEMU fills the address with the source GID);
 *  - QEMU waits, blocking, for exactly one RESP per request (msg_type
 *    RESP, err_code);
 *  - the mux sends incoming MADs as msg_type REQ, op MAD: sgid = the
 *    guest's GID the MAD was sent to, umad.addr.gid = the sender's GID.
 */
#ifndef RDMAGATE_COMMON_RDMACM_MUX_PROTO_H
#define RDMAGATE_COMMON_RDMACM_MUX_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/msg_frame.h"

/* Not on the wire (the protocol has no version field): the revision of
 * this description, for logs and docs. */
#define RDMACM_MUX_PROTO_REVISION 1

#define RCM_MSG_SIZE  360 /* every record, both directions */
#define RCM_MAD_SIZE  256 /* QEMU's RDMA_MAX_PRIVATE_DATA */
#define RCM_MAD_HDR   24  /* the common MAD header: the shortest MAD */
#define RCM_GID_SIZE  16
#define RCM_QPN_MASK  0xffffffu
#define RCM_FLOW_MASK 0xfffffu

enum rcm_msg_type {
	RCM_REQ = 0,
	RCM_RESP = 1,
};

enum rcm_op {
	RCM_OP_REG = 0,
	RCM_OP_UNREG = 1,
	RCM_OP_MAD = 2,
};

/* err_code of a RESP.  QEMU only tests for OK (and logs the number). */
enum rcm_err {
	RCM_ERR_OK = 0,
	RCM_ERR_EINVAL = 1,
	RCM_ERR_EEXIST = 2,
	RCM_ERR_EACCES = 3,
	RCM_ERR_ENOTFOUND = 4,
};

/* libibumad's ib_mad_addr_t: network order where the wire is. */
struct rcm_mad_addr {
	uint32_t qpn_be;
	uint32_t qkey_be;
	uint16_t lid_be;
	uint8_t sl;
	uint8_t path_bits;
	uint8_t grh_present;
	uint8_t gid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint8_t gid[RCM_GID_SIZE];
	uint32_t flow_label_be;
	uint16_t pkey_index;
	uint8_t reserved[6];
};
_Static_assert(sizeof(struct rcm_mad_addr) == 44, "rcm_mad_addr");

/* The whole record, as QEMU's RdmaCmMuxMsg lays it out on x86-64. */
struct rcm_msg {
	uint32_t msg_type; /* enum rcm_msg_type */
	uint32_t op_code;  /* enum rcm_op */
	uint8_t sgid[RCM_GID_SIZE];
	uint32_t err_code; /* enum rcm_err */
	uint32_t pad0;	   /* union ibv_gid aligns the header to 8 */
	int32_t umad_len;
	/* struct ib_user_mad */
	uint32_t agent_id;
	uint32_t status;
	uint32_t timeout_ms;
	uint32_t retries;
	uint32_t length;
	struct rcm_mad_addr addr;
	uint8_t mad[RCM_MAD_SIZE];
	uint32_t pad1; /* the record's 8-byte alignment */
};
_Static_assert(sizeof(struct rcm_msg) == RCM_MSG_SIZE, "rcm_msg");
_Static_assert(offsetof(struct rcm_msg, sgid) == 8, "rcm_msg.sgid");
_Static_assert(offsetof(struct rcm_msg, err_code) == 24, "rcm_msg.err_code");
_Static_assert(offsetof(struct rcm_msg, umad_len) == 32, "rcm_msg.umad_len");
_Static_assert(offsetof(struct rcm_msg, addr) == 56, "rcm_msg.addr");
_Static_assert(offsetof(struct rcm_msg, mad) == 100, "rcm_msg.mad");

/* A decoded request from QEMU (a copy: nothing points into the input). */
struct rcm_request {
	uint32_t op; /* enum rcm_op */
	uint8_t sgid[RCM_GID_SIZE];
	uint32_t mad_len;	   /* MAD: RCM_MAD_HDR..RCM_MAD_SIZE; else 0 */
	uint8_t mad[RCM_MAD_SIZE]; /* zeros past mad_len */
};

/*
 * Decodes one record of len bytes that QEMU sent.  Checks: exactly
 * RCM_MSG_SIZE bytes (-EBADMSG), msg_type REQ (-EPROTO: a client sends
 * no responses), a known op (-EOPNOTSUPP), a non-zero sgid (-EINVAL),
 * and for MAD umad_len within RCM_MAD_HDR..RCM_MAD_SIZE (-EINVAL).
 * Fields QEMU leaves zero and the mux does not use (err_code, the
 * ib_user_mad header, the address QEMU fills with the source) are not
 * checked: they carry nothing the mux trusts.  Returns 0, or the
 * negative errno with why (may be NULL) naming what was wrong; *ret is
 * untouched on failure.
 */
int rcm_decode_request(const void *buf, size_t len, struct rcm_request *ret,
		       struct reason *why);

/* The RESP to a request of op: the op echoed, err_code, the sgid echoed,
 * no MAD (so that QEMU never mistakes it for an incoming MAD). */
void rcm_encode_response(struct rcm_msg *m, uint32_t op, const uint8_t *sgid,
			 enum rcm_err err);

/* What the mux knows of a MAD from the wire for QEMU. */
struct rcm_incoming {
	const uint8_t *dgid; /* the guest's GID it was sent to */
	const uint8_t *sgid; /* the sender's GID */
	uint32_t src_qpn;
	uint32_t flow_label;
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint16_t pkey_index;
	const uint8_t *mad;
	size_t mad_len; /* RCM_MAD_HDR..RCM_MAD_SIZE */
};

/* Fills m with an incoming MAD (msg_type REQ, op MAD).  0, or -EINVAL
 * for a MAD length out of range (m untouched). */
int rcm_encode_incoming(struct rcm_msg *m, const struct rcm_incoming *in);

/* The errno of a refusal as QEMU's error code (EACCES for EPERM too,
 * EINVAL for anything without a code of its own). */
enum rcm_err rcm_err_of_errno(int e);

/* "REG", "UNREG", "MAD", or "op N" in buf (16 bytes). */
const char *rcm_op_name(uint32_t op, char buf[16]);

#endif
