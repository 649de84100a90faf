/* SPDX-License-Identifier: MIT */
/*
 * The guest simulator's codec for InfiniBand connection-management MADs
 * (IBTA vol. 1 ch. 12, management class 0x07, class version 2) and for
 * the RDMA-CM IP private data of IBTA annex A11: what a guest kernel's
 * ib_cm and rdma_cm put on QP1. Pure: no I/O, no state; decoding works on
 * the caller's bytes and checks every length and field, naming what was
 * wrong. Run by rdmagate-guest (guest/cm_conn.c) and the unit and fuzz
 * tests.
 *
 * Bit-fields follow the IBTA numbering: within each big-endian word the
 * first field named takes the most significant bits. Reserved bits are
 * written as zero and ignored on receipt (IBTA's rule for receivers).
 */
#ifndef RDMAGATE_GUEST_CM_H
#define RDMAGATE_GUEST_CM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/ib_cm.h"

#include "common/reason.h"

#define CM_MAD_LEN	256 /* every MAD of base version 1 */
#define CM_MAD_HDR_LEN	24  /* common MAD header */
#define CM_MAD_DATA_LEN 232 /* the CM message after the header */
#define CM_GRH_LEN	40  /* GRH area before a UD receive's payload */

#define CM_BASE_VERSION	  1
#define CM_LID_PERMISSIVE 0xffff

/* Private data of each message: what is left of the 232 bytes. */
#define CM_REQ_PRIVATE_LEN	92
#define CM_MRA_PRIVATE_LEN	222
#define CM_REJ_PRIVATE_LEN	148
#define CM_REJ_ARI_LEN		72
#define CM_REP_PRIVATE_LEN	196
#define CM_RTU_PRIVATE_LEN	224
#define CM_DREQ_PRIVATE_LEN	220
#define CM_DREP_PRIVATE_LEN	224
#define CM_SIDR_REQ_PRIVATE_LEN 216
#define CM_SIDR_REP_PRIVATE_LEN 136
#define CM_SIDR_REP_INFO_LEN	72

/* REQ transport service type (with the extended type for XRC). */
enum cm_transport {
	CM_TRANSPORT_RC = 0,
	CM_TRANSPORT_UC = 1,
	CM_TRANSPORT_RD = 2,  /* refused: no RD anywhere */
	CM_TRANSPORT_EXT = 3, /* extended transport type 1: XRC */
};
#define CM_EXT_TRANSPORT_XRC 1

/* "Message REJected" / "Message MRAed". */
enum cm_msg_response {
	CM_MSG_RESPONSE_REQ = 0,
	CM_MSG_RESPONSE_REP = 1,
	CM_MSG_RESPONSE_OTHER = 2,
};

/* REJ reasons the simulator sends or names (IBTA table 112). */
enum cm_rej_reason {
	CM_REJ_NO_QP = 1,
	CM_REJ_NO_RESOURCES = 3,
	CM_REJ_TIMEOUT = 4,
	CM_REJ_UNSUPPORTED = 5,
	CM_REJ_INVALID_COMM_ID = 6,
	CM_REJ_INVALID_COMM_INSTANCE = 7,
	CM_REJ_INVALID_SERVICE_ID = 8,
	CM_REJ_INVALID_TRANSPORT_TYPE = 9,
	CM_REJ_STALE_CONN = 10,
	CM_REJ_INVALID_GID = 12,
	CM_REJ_INVALID_MTU = 26,
	CM_REJ_CONSUMER_DEFINED = 28,
	CM_REJ_INVALID_CLASS_VERSION = 31,
};

/* SIDR_REP's status (IBTA table 120; ib_cm's enum ib_cm_sidr_status). */
enum cm_sidr_status {
	CM_SIDR_SUCCESS = 0,
	CM_SIDR_UNSUPPORTED = 1, /* service id not supported: no listener */
};

/* The common MAD header (24 bytes). */
struct cm_mad_hdr {
	uint8_t base_version;
	uint8_t mgmt_class;
	uint8_t class_version;
	uint8_t method;
	uint16_t status;
	uint16_t class_specific;
	uint64_t tid;
	uint16_t attr_id;
	uint32_t attr_mod;
};

/* A path of the REQ (primary or alternate). */
struct cm_path {
	uint16_t local_lid, remote_lid;
	uint8_t local_gid[16], remote_gid[16];
	uint32_t flow_label; /* 20 bits */
	uint8_t packet_rate; /* 6 bits */
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint8_t sl;		   /* 4 bits */
	bool subnet_local;	   /* 1 bit */
	uint8_t local_ack_timeout; /* 5 bits */
};

struct cm_req {
	uint32_t local_comm_id;
	uint64_t service_id;
	uint64_t local_ca_guid;
	uint32_t local_qkey;
	uint32_t local_qpn; /* 24 bits */
	uint8_t responder_resources;
	uint32_t local_eecn; /* 24 bits */
	uint8_t initiator_depth;
	uint32_t remote_eecn;		    /* 24 bits */
	uint8_t remote_cm_response_timeout; /* 5 bits */
	uint8_t transport;		    /* enum cm_transport, 2 bits */
	bool flow_control;
	uint32_t starting_psn;		   /* 24 bits */
	uint8_t local_cm_response_timeout; /* 5 bits */
	uint8_t retry_count;		   /* 3 bits */
	uint16_t pkey;
	uint8_t path_mtu; /* IB enum 1..5, 4 bits */
	bool rdc_exists;
	uint8_t rnr_retry_count; /* 3 bits */
	uint8_t max_cm_retries;	 /* 4 bits */
	bool srq;
	uint8_t ext_transport; /* 3 bits */
	struct cm_path primary;
	bool has_alternate; /* decode: alternate LID or GID non-zero */
	struct cm_path alternate;
	bool sap_supported;
	uint8_t private_data[CM_REQ_PRIVATE_LEN];
};

struct cm_mra {
	uint32_t local_comm_id, remote_comm_id;
	uint8_t msg_mraed;	 /* enum cm_msg_response, 2 bits */
	uint8_t service_timeout; /* 5 bits */
	uint8_t private_data[CM_MRA_PRIVATE_LEN];
};

struct cm_rej {
	uint32_t local_comm_id, remote_comm_id;
	uint8_t msg_rejected; /* enum cm_msg_response, 2 bits */
	uint8_t ari_length;   /* 7 bits, at most 72 */
	uint16_t reason;      /* enum cm_rej_reason */
	uint8_t ari[CM_REJ_ARI_LEN];
	uint8_t private_data[CM_REJ_PRIVATE_LEN];
};

struct cm_rep {
	uint32_t local_comm_id, remote_comm_id;
	uint32_t local_qkey;
	uint32_t local_qpn;    /* 24 bits */
	uint32_t local_eecn;   /* 24 bits */
	uint32_t starting_psn; /* 24 bits */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t target_ack_delay;  /* 5 bits */
	uint8_t failover_accepted; /* 2 bits, 0..2 */
	bool flow_control;
	uint8_t rnr_retry_count; /* 3 bits */
	bool srq;
	uint64_t local_ca_guid;
	uint8_t private_data[CM_REP_PRIVATE_LEN];
};

/* RTU and DREP: the two ids and private data. */
struct cm_rtu {
	uint32_t local_comm_id, remote_comm_id;
	uint8_t private_data[CM_RTU_PRIVATE_LEN];
};

struct cm_dreq {
	uint32_t local_comm_id, remote_comm_id;
	uint32_t remote_qpn; /* 24 bits: the receiver's QPN */
	uint8_t private_data[CM_DREQ_PRIVATE_LEN];
};

struct cm_drep {
	uint32_t local_comm_id, remote_comm_id;
	uint8_t private_data[CM_DREP_PRIVATE_LEN];
};

struct cm_sidr_req {
	uint32_t request_id;
	uint16_t pkey;
	uint64_t service_id;
	uint8_t private_data[CM_SIDR_REQ_PRIVATE_LEN];
};

struct cm_sidr_rep {
	uint32_t request_id;
	uint8_t status;	     /* 0..5 */
	uint8_t info_length; /* at most 72 */
	uint32_t qpn;	     /* 24 bits */
	uint64_t service_id;
	uint32_t qkey;
	uint8_t info[CM_SIDR_REP_INFO_LEN];
	uint8_t private_data[CM_SIDR_REP_PRIVATE_LEN];
};

/* One CM MAD: the header's attr_id says which member is valid. */
struct cm_msg {
	struct cm_mad_hdr hdr;
	union {
		struct cm_req req;
		struct cm_mra mra;
		struct cm_rej rej;
		struct cm_rep rep;
		struct cm_rtu rtu;
		struct cm_dreq dreq;
		struct cm_drep drep;
		struct cm_sidr_req sidr_req;
		struct cm_sidr_rep sidr_rep;
	};
};

/*
 * A header for a CM SEND of attribute `attr_id` with transaction id
 * `tid` (base version 1, class 0x07, class version 2, status 0, attribute
 * modifier 0), as the kernel's cm_format_mad_hdr() fills it.
 */
void cm_mad_hdr_init(struct cm_mad_hdr *h, uint16_t attr_id, uint64_t tid);

/*
 * Encodes m into the 256 bytes at out (reserved bits zero). Refuses, with
 * -EINVAL and a reason, a header other than a CM SEND, an attribute this
 * codec does not know, or a field wider than its bit-field (nothing is
 * silently truncated). Returns CM_MAD_LEN.
 */
int cm_encode(const struct cm_msg *m, uint8_t out[CM_MAD_LEN],
	      struct reason *why);

/*
 * Decodes len bytes. Errors: -EMSGSIZE (len is not 256), -EPROTO (base
 * version, class, class version, method or status not those of a CM
 * SEND), -EOPNOTSUPP (LAP, APR, ClassPortInfo: known, not supported),
 * -EINVAL (unknown attribute; a field out of range). *ret is written only
 * on success.
 */
int cm_decode(const uint8_t *buf, size_t len, struct cm_msg *ret,
	      struct reason *why);

/* "REQ", "DREP", ...; "UNKNOWN" otherwise. */
const char *cm_attr_name(uint16_t attr_id);
/* "timeout", "invalid service id", ...; "reason N" for the rest. */
const char *cm_rej_reason_name(uint16_t reason);

/* ---- timers (IBTA 4.096 us * 2^t values) ---- */

/* The kernel's approximation: 2^(t - 8) ms, at least 1 ms. */
uint32_t cm_time_to_ms(uint8_t iba_time);
/* IBTA 12.7.34: the local ACK timeout from the CA's ACK delay and the
 * path's packet life time (both 5-bit exponents), as ib_cm computes it. */
uint8_t cm_ack_timeout(uint8_t ca_ack_delay, uint8_t packet_life_time);

/* ---- RDMA-CM IP addressing (IBTA annex A11) ---- */

#define CM_IP_PS_TCP	  0x0106 /* RDMA_PS_TCP */
#define CM_IP_PS_UDP	  0x0111 /* RDMA_PS_UDP */
#define CM_IP_HDR_LEN	  36	 /* the "CMA header" before user data */
#define CM_IP_USER_LEN	  (CM_REQ_PRIVATE_LEN - CM_IP_HDR_LEN)
#define CM_IP_CMA_VERSION 0x00

/* The CMA header: addresses in network order; IPv4 in the last 4 bytes. */
struct cm_ip_hdr {
	uint8_t ip_version; /* 4 or 6 */
	uint16_t src_port;
	uint8_t src[16], dst[16];
};

/* 0x0000000001PPpppp: port space PP, port pppp. */
uint64_t cm_ip_service_id(uint16_t port_space, uint16_t port);
/* The port space and port of an IP service id; -EINVAL if it is not one. */
int cm_ip_service_port(uint64_t service_id, uint16_t *ret_ps,
		       uint16_t *ret_port, struct reason *why);

/*
 * Writes the CMA header and user_len bytes of user data (at most 56) into
 * a REQ's private data, the rest zero. -EINVAL (IP version not 4/6, an
 * IPv4 address with bytes before the last 4, too much user data).
 */
int cm_ip_encode(const struct cm_ip_hdr *h, const void *user, size_t user_len,
		 uint8_t pd[CM_REQ_PRIVATE_LEN], struct reason *why);
/* Reads it back: CMA version 0 and IP version 4 or 6, else -EINVAL. */
int cm_ip_decode(const uint8_t pd[CM_REQ_PRIVATE_LEN], struct cm_ip_hdr *ret,
		 struct reason *why);

/*
 * An address as rdma_cm's rdma_ip2gid() turns it into a RoCE v2 GID:
 * IPv4 -> ::ffff:a.b.c.d, IPv6 -> itself.
 */
void cm_ip_to_gid(uint8_t ip_version, const uint8_t addr[16],
		  uint8_t ret_gid[16]);
/*
 * The reverse, for a GID of our table: an IPv4-mapped GID gives version 4
 * (the address in the last 4 bytes, the rest zero), any other version 6.
 */
uint8_t cm_gid_to_ip(const uint8_t gid[16], uint8_t ret_addr[16]);

/* The RoCE v2 flow label rdma_cm derives from the ports (sport*31+dport). */
uint32_t cm_ip_flow_label(uint16_t src_port, uint16_t dst_port);

/* ---- the GRH area of a UD receive ---- */

/*
 * Source and destination GIDs of the 40-byte GRH area as a RoCE device
 * fills it: an IPv6 header (version 6 in the first nibble) gives them
 * directly; an IPv4 header in the last 20 bytes (0x45 first) gives
 * IPv4-mapped GIDs. -EINVAL (and a reason) for anything else.
 */
int cm_grh_parse(const uint8_t grh[CM_GRH_LEN], uint8_t ret_sgid[16],
		 uint8_t ret_dgid[16], uint8_t *ret_hop_limit,
		 uint8_t *ret_traffic_class, uint32_t *ret_flow_label,
		 struct reason *why);

#endif
