/* SPDX-License-Identifier: MIT */
/*
 * The virtio-rdma device ABI as rdmagate implements it: "Profile A" of
 * shared/spec/virtio-rdma-abi.md (device ID 42, 1-byte control header,
 * commands 1..18, IB numbering) plus rdmagate's versioned deltas, which
 * docs/virtio-rdma-abi.md lists one by one. This is the one definition
 * shared by the worker (device) and the guest simulator (driver).
 *
 * Every struct below is the wire layout: natural C alignment, explicit
 * padding, little-endian integers (we only build on little-endian hosts).
 * Each struct says where it comes from: "Profile A" (spec §4.x) or
 * "rdmagate delta vN". Padding and reserved bytes are zero when sent and
 * ignored when received.
 */
#ifndef RDMAGATE_COMMON_VIRTIO_RDMA_H
#define RDMAGATE_COMMON_VIRTIO_RDMA_H

#include <stddef.h>
#include <stdint.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "the structs below are the little-endian wire format");

/*
 * Version of rdmagate's deltas from Profile A. Bump it whenever a delta is
 * added or changed, and say in docs/virtio-rdma-abi.md what the new
 * version adds. The guest finds it in the config space (below).
 */
#define RDMAGATE_VIRTIO_RDMA_ABI_VERSION 3
/* "rdgt" in config bytes 131..134: the deltas below are in force. */
#define RDMAGATE_VIRTIO_RDMA_MAGIC 0x74676472u

#define VIRTIO_ID_RDMA		  42
#define VIRTIO_RDMA_PCI_DEVICE_ID 0x106a /* 0x1040 + 42, modern only */
#define VIRTIO_RDMA_PCI_CLASS	  0x0280 /* network, other */

/* Profile A geometry (§4.1, §2.8). */
#define VIRTIO_RDMA_PAGE_SIZE	 4096u
#define VIRTIO_RDMA_PAGE_SHIFT	 12
#define VIRTIO_RDMA_NUM_QUEUES	 256 /* created by the VMM */
#define VIRTIO_RDMA_RING_SIZE	 512 /* entries per virtqueue */
#define VIRTIO_RDMA_PORT	 1   /* the only port number */
#define VIRTIO_RDMA_GID_TBL_LEN	 512
#define VIRTIO_RDMA_PKEY_TBL_LEN 1
#define VIRTIO_RDMA_DEFAULT_PKEY 0xffffu
#define VIRTIO_RDMA_GSI_QPN	 1 /* QP1 is virtual in rdmagate */
#define VIRTIO_RDMA_GSI_QKEY	 0x80010000u
/* rdmagate bound on max_send_sge / max_recv_sge / SRQ max_sge. */
#define VIRTIO_RDMA_MAX_SGE 32
/* §4.6: two levels of 512 u64 entries: at most 512 * 512 pages (1 GiB). */
#define VIRTIO_RDMA_PT_ENTRIES 512u
#define VIRTIO_RDMA_MR_MAX_PAGES                                               \
	(VIRTIO_RDMA_PT_ENTRIES * VIRTIO_RDMA_PT_ENTRIES)
/* IB wire widths. */
#define VIRTIO_RDMA_QPN_MASK	   0xffffffu
#define VIRTIO_RDMA_PSN_MASK	   0xffffffu
#define VIRTIO_RDMA_FLOW_LABEL_MAX 0xfffffu

/*
 * Virtqueue map (Profile A §4.3): control queue 0, CQ c on 1 + c, queue
 * slot q on SQ 1 + max_cq + 2q and RQ 2 + max_cq + 2q. In Profile A the
 * slot is the guest QPN; in rdmagate it is the `slot` that CREATE_QP and
 * CREATE_SRQ return (delta 1). An SRQ owns a slot and receives on that
 * slot's RQ virtqueue; its SQ virtqueue stays unused.
 */
#define VIRTIO_RDMA_CTRL_VQ 0u

static inline uint32_t virtio_rdma_cq_vq(uint32_t cqn)
{
	return 1 + cqn;
}

static inline uint32_t virtio_rdma_sq_vq(uint32_t max_cq, uint32_t slot)
{
	return 1 + max_cq + 2 * slot;
}

static inline uint32_t virtio_rdma_rq_vq(uint32_t max_cq, uint32_t slot)
{
	return 2 + max_cq + 2 * slot;
}

/* How many virtqueues the guest initializes: 1 + max_cq + 2 max_qp. */
static inline uint64_t virtio_rdma_num_vqs(uint32_t max_cq, uint32_t max_qp)
{
	return 1 + (uint64_t)max_cq + 2 * (uint64_t)max_qp;
}

enum virtio_rdma_vq_kind {
	VIRTIO_RDMA_VQ_INVALID = 0,
	VIRTIO_RDMA_VQ_CTRL,
	VIRTIO_RDMA_VQ_CQ,
	VIRTIO_RDMA_VQ_SQ,
	VIRTIO_RDMA_VQ_RQ,
};

/*
 * Which queue a virtqueue index is, and its CQ number or slot in *ret_num.
 * Indices past 1 + max_cq + 2 max_qp are VIRTIO_RDMA_VQ_INVALID.
 */
static inline enum virtio_rdma_vq_kind
virtio_rdma_vq_classify(uint32_t vq, uint32_t max_cq, uint32_t max_qp,
			uint32_t *ret_num)
{
	uint64_t rel;

	if (vq == VIRTIO_RDMA_CTRL_VQ) {
		*ret_num = 0;
		return VIRTIO_RDMA_VQ_CTRL;
	}
	if ((uint64_t)vq < 1 + (uint64_t)max_cq) {
		*ret_num = vq - 1;
		return VIRTIO_RDMA_VQ_CQ;
	}
	if ((uint64_t)vq >= virtio_rdma_num_vqs(max_cq, max_qp))
		return VIRTIO_RDMA_VQ_INVALID;
	rel = (uint64_t)vq - 1 - max_cq;
	*ret_num = (uint32_t)(rel / 2);
	return rel % 2 ? VIRTIO_RDMA_VQ_RQ : VIRTIO_RDMA_VQ_SQ;
}

/* ---- Config space (Profile A §4.4, packed, 195 bytes, read-only) ---- */

/*
 * Profile A's 64 reserved bytes at offset 131 carry rdmagate's identity
 * and the limits of its extensions (delta 4). Profile A guests ignore
 * them; a guest uses the deltas only if `rg_magic` matches and
 * `rg_abi_version` >= the version that introduced them.
 */
struct virtio_rdma_config {
	uint32_t phys_port_cnt;
	uint64_t sys_image_guid;
	uint32_t vendor_id;
	uint32_t vendor_part_id;
	uint32_t hw_ver;
	uint64_t max_mr_size;
	uint64_t page_size_cap;
	uint32_t max_qp;
	uint32_t max_qp_wr;
	uint64_t device_cap_flags;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_sge_rd;
	uint32_t max_cq;
	uint32_t max_cqe;
	uint32_t max_mr;
	uint32_t max_pd;
	uint32_t max_qp_rd_atom;
	uint32_t max_res_rd_atom;
	uint32_t max_qp_init_rd_atom;
	uint32_t atomic_cap;
	uint32_t max_mw;
	uint32_t max_mcast_grp;
	uint32_t max_mcast_qp_attach;
	uint32_t max_total_mcast_qp_attach;
	uint32_t max_ah;
	uint32_t max_fast_reg_page_list_len;
	uint32_t max_pi_fast_reg_page_list_len;
	uint16_t max_pkeys;
	uint8_t local_ca_ack_delay;
	/* Profile A: u8 reserved[64]. rdmagate delta v1 uses the first 24. */
	uint32_t rg_magic;	 /* RDMAGATE_VIRTIO_RDMA_MAGIC */
	uint32_t rg_abi_version; /* RDMAGATE_VIRTIO_RDMA_ABI_VERSION */
	uint32_t rg_max_srq;
	uint32_t rg_max_srq_wr;
	uint32_t rg_max_srq_sge;
	uint32_t rg_num_slots; /* queue slots (SQ/RQ pairs) */
	uint8_t reserved[40];
} __attribute__((packed));
_Static_assert(sizeof(struct virtio_rdma_config) == 195, "config size");
_Static_assert(offsetof(struct virtio_rdma_config, sys_image_guid) == 4, "");
_Static_assert(offsetof(struct virtio_rdma_config, max_qp) == 40, "");
_Static_assert(offsetof(struct virtio_rdma_config, device_cap_flags) == 48, "");
_Static_assert(offsetof(struct virtio_rdma_config, max_cq) == 68, "");
_Static_assert(offsetof(struct virtio_rdma_config, max_cqe) == 72, "");
_Static_assert(offsetof(struct virtio_rdma_config, atomic_cap) == 96, "");
_Static_assert(offsetof(struct virtio_rdma_config, max_ah) == 116, "");
_Static_assert(offsetof(struct virtio_rdma_config, max_pkeys) == 128, "");
_Static_assert(offsetof(struct virtio_rdma_config, local_ca_ack_delay) == 130,
	       "");
_Static_assert(offsetof(struct virtio_rdma_config, rg_magic) == 131, "");
_Static_assert(offsetof(struct virtio_rdma_config, rg_abi_version) == 135, "");
_Static_assert(offsetof(struct virtio_rdma_config, rg_num_slots) == 151, "");

/* device_cap_flags (IB numbering, §4.4). MEM_MGT_EXTENSIONS is never set. */
#define VIRTIO_RDMA_DEVICE_BAD_PKEY_CNTR	    (1ull << 1)
#define VIRTIO_RDMA_DEVICE_BAD_QKEY_CNTR	    (1ull << 2)
#define VIRTIO_RDMA_DEVICE_CHANGE_PHY_PORT	    (1ull << 5)
#define VIRTIO_RDMA_DEVICE_UD_AV_PORT_ENFORCE	    (1ull << 6)
#define VIRTIO_RDMA_DEVICE_SYS_IMAGE_GUID	    (1ull << 11)
#define VIRTIO_RDMA_DEVICE_RC_RNR_NAK_GEN	    (1ull << 12)
#define VIRTIO_RDMA_DEVICE_SRQ_RESIZE		    (1ull << 13)
#define VIRTIO_RDMA_DEVICE_MEM_MGT_EXTENSIONS	    (1ull << 21)
#define VIRTIO_RDMA_DEVICE_BLOCK_MULTICAST_LOOPBACK (1ull << 22)
#define VIRTIO_RDMA_DEVICE_SG_GAPS_REG		    (1ull << 32)

enum virtio_rdma_atomic_cap {
	VIRTIO_RDMA_ATOMIC_NONE = 0,
	VIRTIO_RDMA_ATOMIC_HCA = 1,
	VIRTIO_RDMA_ATOMIC_GLOB = 2,
};

/* ---- Control queue (Profile A §4.5) ---- */

/*
 * A control chain: [code u8 (R, its own element)] [request (R)]
 * [status u8 (W)] [response (W)]. Requests longer than documented are
 * accepted and the tail ignored.
 */
enum virtio_rdma_cmd {
	VIRTIO_RDMA_CMD_ILLEGAL = 0,
	VIRTIO_RDMA_CMD_QUERY_PORT = 1,
	VIRTIO_RDMA_CMD_CREATE_CQ = 2,
	VIRTIO_RDMA_CMD_DESTROY_CQ = 3,
	VIRTIO_RDMA_CMD_CREATE_PD = 4,
	VIRTIO_RDMA_CMD_DESTROY_PD = 5,
	VIRTIO_RDMA_CMD_GET_DMA_MR = 6,
	VIRTIO_RDMA_CMD_CREATE_MR = 7, /* not supported: error status */
	VIRTIO_RDMA_CMD_MAP_MR_SG = 8, /* not supported: error status */
	VIRTIO_RDMA_CMD_REG_USER_MR = 9,
	VIRTIO_RDMA_CMD_DEREG_MR = 10,
	VIRTIO_RDMA_CMD_CREATE_QP = 11,
	VIRTIO_RDMA_CMD_MODIFY_QP = 12,
	VIRTIO_RDMA_CMD_QUERY_QP = 13,
	VIRTIO_RDMA_CMD_DESTROY_QP = 14,
	VIRTIO_RDMA_CMD_QUERY_PKEY = 15,
	VIRTIO_RDMA_CMD_ADD_GID = 16,
	VIRTIO_RDMA_CMD_DEL_GID = 17,
	VIRTIO_RDMA_CMD_REQ_NOTIFY_CQ = 18,
	/* rdmagate delta v1: shared receive queues. */
	VIRTIO_RDMA_CMD_CREATE_SRQ = 19,
	VIRTIO_RDMA_CMD_MODIFY_SRQ = 20,
	VIRTIO_RDMA_CMD_QUERY_SRQ = 21,
	VIRTIO_RDMA_CMD_DESTROY_SRQ = 22,
	VIRTIO_RDMA_CMD_MAX
};

#define VIRTIO_RDMA_CMD_HDR_LEN 1

/*
 * Status byte. Profile A writes the low byte of the handler's -errno and
 * its guests only test for 0. rdmagate (delta v1) writes 0 for success or
 * the positive Linux errno of the failure (EINVAL 22, EOPNOTSUPP 95, ...),
 * which is also non-zero.
 */
#define VIRTIO_RDMA_STATUS_OK 0

/* QUERY_PORT (Profile A §4.6): request u32 port (must be 1). */
struct virtio_rdma_cmd_query_port {
	uint32_t port;
};
_Static_assert(sizeof(struct virtio_rdma_cmd_query_port) == 4, "");

enum virtio_rdma_port_state {
	VIRTIO_RDMA_PORT_NOP = 0,
	VIRTIO_RDMA_PORT_DOWN = 1,
	VIRTIO_RDMA_PORT_INIT = 2,
	VIRTIO_RDMA_PORT_ARMED = 3,
	VIRTIO_RDMA_PORT_ACTIVE = 4,
	VIRTIO_RDMA_PORT_ACTIVE_DEFER = 5,
};

#define VIRTIO_RDMA_PORT_CM_SUP	       (1u << 16)
#define VIRTIO_RDMA_PHYS_STATE_LINK_UP 5

/* QUERY_PORT response (Profile A §4.6, 172 bytes, 4-byte enums). */
struct virtio_rdma_port_attr {
	uint32_t state;	     /* enum virtio_rdma_port_state */
	uint32_t max_mtu;    /* enum virtio_rdma_mtu */
	uint32_t active_mtu; /* enum virtio_rdma_mtu */
	uint32_t phys_mtu;
	int32_t gid_tbl_len;
	uint32_t port_cap_flags;
	uint32_t max_msg_sz;
	uint32_t bad_pkey_cntr;
	uint32_t qkey_viol_cntr;
	uint16_t pkey_tbl_len;
	uint8_t active_width;
	uint8_t pad0;
	uint16_t active_speed;
	uint8_t phys_state;
	uint8_t pad1;
	uint32_t reserved[32];
};
_Static_assert(sizeof(struct virtio_rdma_port_attr) == 172, "port_attr");
_Static_assert(offsetof(struct virtio_rdma_port_attr, pkey_tbl_len) == 36, "");
_Static_assert(offsetof(struct virtio_rdma_port_attr, active_width) == 38, "");
_Static_assert(offsetof(struct virtio_rdma_port_attr, active_speed) == 40, "");
_Static_assert(offsetof(struct virtio_rdma_port_attr, phys_state) == 42, "");
_Static_assert(offsetof(struct virtio_rdma_port_attr, reserved) == 44, "");

/* CREATE_CQ (Profile A): request u32 cqe, response u32 cqn. */
struct virtio_rdma_cmd_create_cq {
	uint32_t cqe;
};
struct virtio_rdma_rsp_create_cq {
	uint32_t cqn;
};

/* DESTROY_CQ (Profile A). */
struct virtio_rdma_cmd_destroy_cq {
	uint32_t cqn;
};

/* CREATE_PD (Profile A): no request, response u32 pdn (>= 1). */
struct virtio_rdma_rsp_create_pd {
	uint32_t pdn;
};

/* DESTROY_PD (Profile A). */
struct virtio_rdma_cmd_destroy_pd {
	uint32_t pdn;
};

/* GET_DMA_MR (Profile A): SGEs using its key carry GPAs. */
struct virtio_rdma_cmd_get_dma_mr {
	uint32_t pdn;
	uint32_t access_flags;
};
_Static_assert(sizeof(struct virtio_rdma_cmd_get_dma_mr) == 8, "");

/* Response of GET_DMA_MR, CREATE_MR, REG_USER_MR (Profile A, 12 bytes). */
struct virtio_rdma_rsp_mr {
	uint32_t mrn;
	uint32_t lkey; /* rdmagate delta v1: the host's lkey */
	uint32_t rkey; /* rdmagate delta v1: the host's rkey (0: no remote) */
};
_Static_assert(sizeof(struct virtio_rdma_rsp_mr) == 12, "");

/* CREATE_MR (Profile A): fast registration, refused by rdmagate. */
struct virtio_rdma_cmd_create_mr {
	uint32_t pdn;
	uint32_t access_flags;
	uint32_t max_num_sg;
};
_Static_assert(sizeof(struct virtio_rdma_cmd_create_mr) == 12, "");

/* MAP_MR_SG (Profile A): refused by rdmagate. */
struct virtio_rdma_cmd_map_mr_sg {
	uint32_t mrn;
	uint32_t npages;
	uint64_t start;
	uint64_t length;
	uint64_t pages;
};
_Static_assert(sizeof(struct virtio_rdma_cmd_map_mr_sg) == 32, "");
struct virtio_rdma_rsp_map_mr_sg {
	uint32_t npages;
};

/*
 * REG_USER_MR (Profile A §4.6, 48 bytes). `pages` is the GPA of the
 * level-1 page-table page; see worker/virtio_rdma/mr_pt.h for the walk.
 */
struct virtio_rdma_cmd_reg_user_mr {
	uint32_t pdn;
	uint32_t access_flags;
	uint64_t start; /* user VA; start & 0xfff = offset in page 0 */
	uint64_t length;
	uint64_t virt_addr; /* IOVA used in SGEs and remote addresses */
	uint64_t pages;
	uint32_t npages;
	uint32_t pad;
};
_Static_assert(sizeof(struct virtio_rdma_cmd_reg_user_mr) == 48, "");
_Static_assert(offsetof(struct virtio_rdma_cmd_reg_user_mr, pages) == 32, "");
_Static_assert(offsetof(struct virtio_rdma_cmd_reg_user_mr, npages) == 40, "");

/* DEREG_MR (Profile A). */
struct virtio_rdma_cmd_dereg_mr {
	uint32_t mrn;
};

enum virtio_rdma_qp_type {
	VIRTIO_RDMA_QPT_SMI = 0, /* refused */
	VIRTIO_RDMA_QPT_GSI = 1,
	VIRTIO_RDMA_QPT_RC = 2,
	VIRTIO_RDMA_QPT_UC = 3,
	VIRTIO_RDMA_QPT_UD = 4,
};

/* sq_sig_type: 0 = every WR completes, 1 = only SIGNALED WRs. */
#define VIRTIO_RDMA_SIG_ALL_WR 0
#define VIRTIO_RDMA_SIG_REQ_WR 1

/* CREATE_QP (Profile A §4.6, 36 bytes). Spec v1 guests send 68. */
struct virtio_rdma_cmd_create_qp {
	uint32_t pdn;
	uint8_t qp_type;     /* enum virtio_rdma_qp_type */
	uint8_t sq_sig_type; /* VIRTIO_RDMA_SIG_* */
	uint8_t pad[2];
	uint32_t max_send_wr;
	uint32_t max_send_sge;
	uint32_t send_cqn;
	uint32_t max_recv_wr;
	uint32_t max_recv_sge;
	uint32_t recv_cqn;
	uint32_t max_inline_data;
};
_Static_assert(sizeof(struct virtio_rdma_cmd_create_qp) == 36, "");
_Static_assert(offsetof(struct virtio_rdma_cmd_create_qp, max_send_wr) == 8,
	       "");
_Static_assert(offsetof(struct virtio_rdma_cmd_create_qp, recv_cqn) == 28, "");

#define VIRTIO_RDMA_CREATE_QP_F_SRQ (1u << 0)

/*
 * CREATE_QP with rdmagate's extension (delta v1, 44 bytes). Requests of
 * 36..43 bytes have no extension (no SRQ); from 44 bytes on the extension
 * is read. Spec v1's zero reserved words read as "no SRQ".
 */
struct virtio_rdma_cmd_create_qp_ext {
	struct virtio_rdma_cmd_create_qp base;
	uint32_t flags;	     /* VIRTIO_RDMA_CREATE_QP_F_* */
	uint32_t srq_handle; /* with F_SRQ: the SRQ receiving for this QP */
};
_Static_assert(sizeof(struct virtio_rdma_cmd_create_qp_ext) == 44, "");
_Static_assert(offsetof(struct virtio_rdma_cmd_create_qp_ext, flags) == 36, "");

/*
 * CREATE_QP response (rdmagate delta v1, 8 bytes). Profile A answers
 * only u32 qpn, which is also the queue slot. A Profile A guest reading 4
 * bytes gets the host QPN. GSI answers qpn 1.
 */
struct virtio_rdma_rsp_create_qp {
	uint32_t qpn;  /* host QPN: what peers target */
	uint32_t slot; /* selects SQ/RQ virtqueues */
};
_Static_assert(sizeof(struct virtio_rdma_rsp_create_qp) == 8, "");

enum virtio_rdma_qp_state {
	VIRTIO_RDMA_QPS_RESET = 0,
	VIRTIO_RDMA_QPS_INIT = 1,
	VIRTIO_RDMA_QPS_RTR = 2,
	VIRTIO_RDMA_QPS_RTS = 3,
	VIRTIO_RDMA_QPS_SQD = 4,
	VIRTIO_RDMA_QPS_SQE = 5,
	VIRTIO_RDMA_QPS_ERR = 6,
};

enum virtio_rdma_mtu {
	VIRTIO_RDMA_MTU_256 = 1,
	VIRTIO_RDMA_MTU_512 = 2,
	VIRTIO_RDMA_MTU_1024 = 3,
	VIRTIO_RDMA_MTU_2048 = 4,
	VIRTIO_RDMA_MTU_4096 = 5,
};

enum virtio_rdma_mig_state {
	VIRTIO_RDMA_MIG_MIGRATED = 0,
	VIRTIO_RDMA_MIG_REARM = 1,
	VIRTIO_RDMA_MIG_ARMED = 2,
};

/* attr_mask of MODIFY_QP / QUERY_QP (IB numbering, Profile A §4.6). */
#define VIRTIO_RDMA_QP_STATE		   (1u << 0)
#define VIRTIO_RDMA_QP_CUR_STATE	   (1u << 1)
#define VIRTIO_RDMA_QP_EN_SQD_ASYNC_NOTIFY (1u << 2)
#define VIRTIO_RDMA_QP_ACCESS_FLAGS	   (1u << 3)
#define VIRTIO_RDMA_QP_PKEY_INDEX	   (1u << 4)
#define VIRTIO_RDMA_QP_PORT		   (1u << 5)
#define VIRTIO_RDMA_QP_QKEY		   (1u << 6)
#define VIRTIO_RDMA_QP_AV		   (1u << 7)
#define VIRTIO_RDMA_QP_PATH_MTU		   (1u << 8)
#define VIRTIO_RDMA_QP_TIMEOUT		   (1u << 9)
#define VIRTIO_RDMA_QP_RETRY_CNT	   (1u << 10)
#define VIRTIO_RDMA_QP_RNR_RETRY	   (1u << 11)
#define VIRTIO_RDMA_QP_RQ_PSN		   (1u << 12)
#define VIRTIO_RDMA_QP_MAX_QP_RD_ATOMIC	   (1u << 13)
#define VIRTIO_RDMA_QP_ALT_PATH		   (1u << 14)
#define VIRTIO_RDMA_QP_MIN_RNR_TIMER	   (1u << 15)
#define VIRTIO_RDMA_QP_SQ_PSN		   (1u << 16)
#define VIRTIO_RDMA_QP_MAX_DEST_RD_ATOMIC  (1u << 17)
#define VIRTIO_RDMA_QP_PATH_MIG_STATE	   (1u << 18)
#define VIRTIO_RDMA_QP_CAP		   (1u << 19)
#define VIRTIO_RDMA_QP_DEST_QPN		   (1u << 20)
#define VIRTIO_RDMA_QP_RATE_LIMIT	   (1u << 25)
/* Every bit Profile A defines. */
#define VIRTIO_RDMA_QP_ATTR_MASK_KNOWN                                         \
	((1u << 21) - 1 + VIRTIO_RDMA_QP_RATE_LIMIT)
/* What rdmagate accepts in MODIFY_QP: no alternate path (no APM). */
#define VIRTIO_RDMA_QP_ATTR_MASK_MODIFY                                        \
	(VIRTIO_RDMA_QP_ATTR_MASK_KNOWN & ~VIRTIO_RDMA_QP_ALT_PATH)

/* Access flags (IB numbering, Profile A §4.6). */
#define VIRTIO_RDMA_ACCESS_LOCAL_WRITE	    (1u << 0)
#define VIRTIO_RDMA_ACCESS_REMOTE_WRITE	    (1u << 1)
#define VIRTIO_RDMA_ACCESS_REMOTE_READ	    (1u << 2)
#define VIRTIO_RDMA_ACCESS_REMOTE_ATOMIC    (1u << 3)
#define VIRTIO_RDMA_ACCESS_MW_BIND	    (1u << 4)
#define VIRTIO_RDMA_ACCESS_ZERO_BASED	    (1u << 5)
#define VIRTIO_RDMA_ACCESS_ON_DEMAND	    (1u << 6)
#define VIRTIO_RDMA_ACCESS_HUGETLB	    (1u << 7)
#define VIRTIO_RDMA_ACCESS_RELAXED_ORDERING (1u << 20)
/* Accepted for MRs: no memory windows, no ODP, no zero-based MRs. */
#define VIRTIO_RDMA_ACCESS_MR_SUPPORTED                                        \
	(VIRTIO_RDMA_ACCESS_LOCAL_WRITE | VIRTIO_RDMA_ACCESS_REMOTE_WRITE |    \
	 VIRTIO_RDMA_ACCESS_REMOTE_READ | VIRTIO_RDMA_ACCESS_REMOTE_ATOMIC |   \
	 VIRTIO_RDMA_ACCESS_HUGETLB | VIRTIO_RDMA_ACCESS_RELAXED_ORDERING)
/* Accepted as qp_access_flags. */
#define VIRTIO_RDMA_ACCESS_QP_SUPPORTED                                        \
	(VIRTIO_RDMA_ACCESS_LOCAL_WRITE | VIRTIO_RDMA_ACCESS_REMOTE_WRITE |    \
	 VIRTIO_RDMA_ACCESS_REMOTE_READ | VIRTIO_RDMA_ACCESS_REMOTE_ATOMIC)

#define VIRTIO_RDMA_AH_GRH 1u /* ah_attr.ah_flags */

/* Global route inside ah_attr (Profile A §4.6, 24 bytes). */
struct virtio_rdma_global_route {
	uint8_t dgid[16];
	uint32_t flow_label;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint8_t pad;
};
_Static_assert(sizeof(struct virtio_rdma_global_route) == 24, "");

/* ah_attr (Profile A §4.6, 40 bytes). */
struct virtio_rdma_ah_attr {
	struct virtio_rdma_global_route grh;
	uint8_t sl;
	uint8_t static_rate;
	uint8_t port_num;
	uint8_t ah_flags; /* VIRTIO_RDMA_AH_GRH */
	uint8_t dmac[6];
	uint8_t pad[6];
};
_Static_assert(sizeof(struct virtio_rdma_ah_attr) == 40, "ah_attr");
_Static_assert(offsetof(struct virtio_rdma_ah_attr, sl) == 24, "");
_Static_assert(offsetof(struct virtio_rdma_ah_attr, dmac) == 28, "");

/* qp_cap (Profile A §4.6, 20 bytes). */
struct virtio_rdma_qp_cap {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
};
_Static_assert(sizeof(struct virtio_rdma_qp_cap) == 20, "");

/* qp_attr (Profile A §4.6, 160 bytes, 4-byte enums). */
struct virtio_rdma_qp_attr {
	uint32_t qp_state;	 /* enum virtio_rdma_qp_state */
	uint32_t cur_qp_state;	 /* enum virtio_rdma_qp_state */
	uint32_t path_mtu;	 /* enum virtio_rdma_mtu */
	uint32_t path_mig_state; /* enum virtio_rdma_mig_state */
	uint32_t qkey;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t dest_qp_num;
	uint32_t qp_access_flags;
	uint16_t pkey_index;
	uint16_t alt_pkey_index;
	uint8_t en_sqd_async_notify;
	uint8_t sq_draining;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint8_t min_rnr_timer;
	uint8_t port_num;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t alt_port_num;
	uint8_t alt_timeout;
	uint8_t pad0;
	uint32_t rate_limit;
	struct virtio_rdma_qp_cap cap;
	uint32_t pad1;
	struct virtio_rdma_ah_attr ah_attr;
	struct virtio_rdma_ah_attr alt_ah_attr;
};
_Static_assert(sizeof(struct virtio_rdma_qp_attr) == 160, "qp_attr");
_Static_assert(offsetof(struct virtio_rdma_qp_attr, qkey) == 16, "");
_Static_assert(offsetof(struct virtio_rdma_qp_attr, pkey_index) == 36, "");
_Static_assert(offsetof(struct virtio_rdma_qp_attr, en_sqd_async_notify) == 40,
	       "");
_Static_assert(offsetof(struct virtio_rdma_qp_attr, port_num) == 45, "");
_Static_assert(offsetof(struct virtio_rdma_qp_attr, alt_timeout) == 50, "");
_Static_assert(offsetof(struct virtio_rdma_qp_attr, rate_limit) == 52, "");
_Static_assert(offsetof(struct virtio_rdma_qp_attr, cap) == 56, "");
_Static_assert(offsetof(struct virtio_rdma_qp_attr, ah_attr) == 80, "");
_Static_assert(offsetof(struct virtio_rdma_qp_attr, alt_ah_attr) == 120, "");

/* MODIFY_QP (Profile A §4.6, 168 bytes). */
struct virtio_rdma_cmd_modify_qp {
	uint32_t qpn; /* rdmagate: the host QPN CREATE_QP returned */
	uint32_t attr_mask;
	struct virtio_rdma_qp_attr attr;
};
_Static_assert(sizeof(struct virtio_rdma_cmd_modify_qp) == 168, "");
_Static_assert(offsetof(struct virtio_rdma_cmd_modify_qp, attr) == 8, "");

/* QUERY_QP (Profile A): response is a qp_attr. */
struct virtio_rdma_cmd_query_qp {
	uint32_t qpn;
	uint32_t attr_mask;
};
_Static_assert(sizeof(struct virtio_rdma_cmd_query_qp) == 8, "");

/* DESTROY_QP (Profile A). */
struct virtio_rdma_cmd_destroy_qp {
	uint32_t qpn;
};

/* QUERY_PKEY (Profile A): only index 0, answer 0xffff. */
struct virtio_rdma_cmd_query_pkey {
	uint32_t port;
	uint16_t index;
	uint16_t pad;
};
_Static_assert(sizeof(struct virtio_rdma_cmd_query_pkey) == 8, "");
struct virtio_rdma_rsp_query_pkey {
	uint16_t pkey;
};
_Static_assert(sizeof(struct virtio_rdma_rsp_query_pkey) == 2, "");

enum virtio_rdma_gid_type {
	VIRTIO_RDMA_GID_TYPE_IB = 0, /* refused: the port is RoCE */
	VIRTIO_RDMA_GID_TYPE_ROCE_V1 = 1,
	VIRTIO_RDMA_GID_TYPE_ROCE_V2 = 2,
};

/* ADD_GID (Profile A §4.6, 28 bytes). */
struct virtio_rdma_cmd_add_gid {
	uint8_t gid[16];
	uint32_t gid_type; /* enum virtio_rdma_gid_type */
	uint16_t index;
	uint16_t pad;
	uint32_t port_num;
};
_Static_assert(sizeof(struct virtio_rdma_cmd_add_gid) == 28, "");
_Static_assert(offsetof(struct virtio_rdma_cmd_add_gid, index) == 20, "");
_Static_assert(offsetof(struct virtio_rdma_cmd_add_gid, port_num) == 24, "");

/* DEL_GID (Profile A, 8 bytes). */
struct virtio_rdma_cmd_del_gid {
	uint16_t index;
	uint16_t pad;
	uint32_t port_num;
};
_Static_assert(sizeof(struct virtio_rdma_cmd_del_gid) == 8, "");

/* REQ_NOTIFY_CQ flags: one of these values, not a mask (Profile A). */
#define VIRTIO_RDMA_NOTIFY_SOLICITED 1u
#define VIRTIO_RDMA_NOTIFY_NEXT_COMP 2u

struct virtio_rdma_cmd_req_notify_cq {
	uint32_t cqn;
	uint32_t flags;
};
_Static_assert(sizeof(struct virtio_rdma_cmd_req_notify_cq) == 8, "");

/*
 * Shared receive queues (rdmagate delta v1). SRQ handles start at 1. An
 * SRQ owns a queue slot; its receive elements (struct virtio_rdma_rq_wqe)
 * are posted on that slot's RQ virtqueue. Completions of its receives go
 * to the recv CQ of the QP that consumed them. There is no asynchronous
 * event queue in Profile A, so reaching srq_limit raises no event.
 */
#define VIRTIO_RDMA_SRQ_MAX_WR (1u << 0) /* MODIFY_SRQ attr_mask */
#define VIRTIO_RDMA_SRQ_LIMIT  (1u << 1)
#define VIRTIO_RDMA_SRQ_ATTR_MASK_KNOWN                                        \
	(VIRTIO_RDMA_SRQ_MAX_WR | VIRTIO_RDMA_SRQ_LIMIT)

struct virtio_rdma_cmd_create_srq {
	uint32_t pdn;
	uint32_t max_wr;
	uint32_t max_sge;
	uint32_t srq_limit;
};
_Static_assert(sizeof(struct virtio_rdma_cmd_create_srq) == 16, "");

struct virtio_rdma_rsp_create_srq {
	uint32_t srq_handle;
	uint32_t slot;
};
_Static_assert(sizeof(struct virtio_rdma_rsp_create_srq) == 8, "");

struct virtio_rdma_cmd_modify_srq {
	uint32_t srq_handle;
	uint32_t attr_mask; /* VIRTIO_RDMA_SRQ_MAX_WR | _LIMIT */
	uint32_t max_wr;
	uint32_t srq_limit;
};
_Static_assert(sizeof(struct virtio_rdma_cmd_modify_srq) == 16, "");

struct virtio_rdma_cmd_srq_handle {
	uint32_t srq_handle;
};

/* QUERY_SRQ response. */
struct virtio_rdma_rsp_query_srq {
	uint32_t max_wr;
	uint32_t max_sge;
	uint32_t srq_limit;
};
_Static_assert(sizeof(struct virtio_rdma_rsp_query_srq) == 12, "");

/* ---- Data queues (Profile A §4.7-§4.9) ---- */

/* Scatter/gather element (16 bytes): addr is an IOVA of the MR `lkey`. */
struct virtio_rdma_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};
_Static_assert(sizeof(struct virtio_rdma_sge) == 16, "");

/* Send opcodes (IB numbering, Profile A §4.7). */
enum virtio_rdma_wr_opcode {
	VIRTIO_RDMA_WR_RDMA_WRITE = 0,
	VIRTIO_RDMA_WR_RDMA_WRITE_WITH_IMM = 1,
	VIRTIO_RDMA_WR_SEND = 2,
	VIRTIO_RDMA_WR_SEND_WITH_IMM = 3,
	VIRTIO_RDMA_WR_RDMA_READ = 4,
	VIRTIO_RDMA_WR_ATOMIC_CMP_AND_SWP = 5,
	VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD = 6,
	VIRTIO_RDMA_WR_LOCAL_INV = 7,			 /* refused */
	VIRTIO_RDMA_WR_BIND_MW = 8,			 /* refused */
	VIRTIO_RDMA_WR_SEND_WITH_INV = 9,		 /* refused in v1 */
	VIRTIO_RDMA_WR_TSO = 10,			 /* refused */
	VIRTIO_RDMA_WR_RDMA_READ_WITH_INV = 11,		 /* refused */
	VIRTIO_RDMA_WR_MASKED_ATOMIC_CMP_AND_SWP = 12,	 /* refused */
	VIRTIO_RDMA_WR_MASKED_ATOMIC_FETCH_AND_ADD = 13, /* refused */
	VIRTIO_RDMA_WR_REG_MR = 0x20,			 /* refused */
};

/* send_flags (IB numbering). */
#define VIRTIO_RDMA_SEND_FENCE	   (1u << 0)
#define VIRTIO_RDMA_SEND_SIGNALED  (1u << 1)
#define VIRTIO_RDMA_SEND_SOLICITED (1u << 2)
#define VIRTIO_RDMA_SEND_INLINE	   (1u << 3)
#define VIRTIO_RDMA_SEND_IP_CSUM   (1u << 4) /* refused */
#define VIRTIO_RDMA_SEND_FLAGS_SUPPORTED                                       \
	(VIRTIO_RDMA_SEND_FENCE | VIRTIO_RDMA_SEND_SIGNALED |                  \
	 VIRTIO_RDMA_SEND_SOLICITED | VIRTIO_RDMA_SEND_INLINE)

/*
 * sl_tclass_flowlabel of the address vector: Profile A documents
 * traffic_class << 20 | flow_label; rdmagate reads the service level
 * from the top 4 bits (0 from Profile A guests).
 */
#define VIRTIO_RDMA_AV_FLOW_LABEL(v) ((v)&0xfffffu)
#define VIRTIO_RDMA_AV_TCLASS(v)     (((v) >> 20) & 0xffu)
#define VIRTIO_RDMA_AV_SL(v)	     (((v) >> 28) & 0xfu)

/* Address vector inside UD/GSI send elements (Profile A §4.7, 44 bytes). */
struct virtio_rdma_av {
	uint32_t port;
	uint32_t pdn;
	uint32_t sl_tclass_flowlabel;
	uint8_t dgid[16];
	uint8_t gid_index; /* source GID table index */
	uint8_t stat_rate;
	uint8_t hop_limit;
	uint8_t dmac[6];
	uint8_t reserved[7]; /* 6 named + 1 of alignment in Profile A */
};
_Static_assert(sizeof(struct virtio_rdma_av) == 44, "av");
_Static_assert(offsetof(struct virtio_rdma_av, dgid) == 12, "");
_Static_assert(offsetof(struct virtio_rdma_av, gid_index) == 28, "");
_Static_assert(offsetof(struct virtio_rdma_av, dmac) == 31, "");

/*
 * Send-queue element header (Profile A §4.7, 88 bytes), followed in the
 * same descriptor by num_sge SGEs or, with SEND_INLINE, by the payload
 * (descriptor length - 88 bytes).
 */
struct virtio_rdma_sq_wqe {
	uint32_t num_sge;
	uint32_t send_flags;
	uint32_t opcode; /* enum virtio_rdma_wr_opcode */
	uint32_t pad0;
	uint64_t wr_id;
	uint32_t imm_data; /* network order, or invalidate_rkey */
	uint32_t pad1;
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
			uint32_t pad;
		} rdma;
		struct {
			uint64_t remote_addr;
			uint64_t compare_add;
			uint64_t swap;
			uint32_t rkey;
			uint32_t pad;
		} atomic;
		struct {
			uint32_t remote_qpn;
			uint32_t remote_qkey;
			struct virtio_rdma_av av;
		} ud;
		struct {
			uint32_t mrn;
			uint32_t key;
			uint32_t access;
		} reg;
		uint8_t raw[56];
	} wr;
};
_Static_assert(sizeof(struct virtio_rdma_sq_wqe) == 88, "sq element");
_Static_assert(offsetof(struct virtio_rdma_sq_wqe, wr_id) == 16, "");
_Static_assert(offsetof(struct virtio_rdma_sq_wqe, imm_data) == 24, "");
_Static_assert(offsetof(struct virtio_rdma_sq_wqe, wr.rdma.rkey) == 40, "");
_Static_assert(offsetof(struct virtio_rdma_sq_wqe, wr.atomic.swap) == 48, "");
_Static_assert(offsetof(struct virtio_rdma_sq_wqe, wr.atomic.rkey) == 56, "");
_Static_assert(offsetof(struct virtio_rdma_sq_wqe, wr.ud.remote_qkey) == 36,
	       "");
_Static_assert(offsetof(struct virtio_rdma_sq_wqe, wr.ud.av) == 40, "");

/* Receive element header (Profile A §4.8, 16 bytes) + num_sge SGEs. */
struct virtio_rdma_rq_wqe {
	uint32_t num_sge;
	uint32_t pad;
	uint64_t wr_id;
};
_Static_assert(sizeof(struct virtio_rdma_rq_wqe) == 16, "rq element");

enum virtio_rdma_wc_status {
	VIRTIO_RDMA_WC_SUCCESS = 0,
	VIRTIO_RDMA_WC_LOC_LEN_ERR = 1,
	VIRTIO_RDMA_WC_LOC_QP_OP_ERR = 2,
	VIRTIO_RDMA_WC_LOC_EEC_OP_ERR = 3,
	VIRTIO_RDMA_WC_LOC_PROT_ERR = 4,
	VIRTIO_RDMA_WC_WR_FLUSH_ERR = 5,
	VIRTIO_RDMA_WC_MW_BIND_ERR = 6,
	VIRTIO_RDMA_WC_BAD_RESP_ERR = 7,
	VIRTIO_RDMA_WC_LOC_ACCESS_ERR = 8,
	VIRTIO_RDMA_WC_REM_INV_REQ_ERR = 9,
	VIRTIO_RDMA_WC_REM_ACCESS_ERR = 10,
	VIRTIO_RDMA_WC_REM_OP_ERR = 11,
	VIRTIO_RDMA_WC_RETRY_EXC_ERR = 12,
	VIRTIO_RDMA_WC_RNR_RETRY_EXC_ERR = 13,
	VIRTIO_RDMA_WC_LOC_RDD_VIOL_ERR = 14,
	VIRTIO_RDMA_WC_REM_INV_RD_REQ_ERR = 15,
	VIRTIO_RDMA_WC_REM_ABORT_ERR = 16,
	VIRTIO_RDMA_WC_INV_EECN_ERR = 17,
	VIRTIO_RDMA_WC_INV_EEC_STATE_ERR = 18,
	VIRTIO_RDMA_WC_FATAL_ERR = 19,
	VIRTIO_RDMA_WC_RESP_TIMEOUT_ERR = 20,
	VIRTIO_RDMA_WC_GENERAL_ERR = 21,
};

enum virtio_rdma_wc_opcode {
	VIRTIO_RDMA_WC_SEND = 0,
	VIRTIO_RDMA_WC_RDMA_WRITE = 1,
	VIRTIO_RDMA_WC_RDMA_READ = 2,
	VIRTIO_RDMA_WC_COMP_SWAP = 3,
	VIRTIO_RDMA_WC_FETCH_ADD = 4,
	VIRTIO_RDMA_WC_BIND_MW = 5,
	VIRTIO_RDMA_WC_LOCAL_INV = 6,
	VIRTIO_RDMA_WC_TSO = 7,
	VIRTIO_RDMA_WC_REG_MR = 8,
	VIRTIO_RDMA_WC_MASKED_COMP_SWAP = 9,
	VIRTIO_RDMA_WC_MASKED_FETCH_ADD = 10,
	VIRTIO_RDMA_WC_RECV = 128,
	VIRTIO_RDMA_WC_RECV_RDMA_WITH_IMM = 129,
};

/* wc_flags (IB numbering). */
#define VIRTIO_RDMA_WC_GRH		     (1u << 0)
#define VIRTIO_RDMA_WC_WITH_IMM		     (1u << 1)
#define VIRTIO_RDMA_WC_WITH_INVALIDATE	     (1u << 2)
#define VIRTIO_RDMA_WC_IP_CSUM_OK	     (1u << 3)
#define VIRTIO_RDMA_WC_WITH_SMAC	     (1u << 4)
#define VIRTIO_RDMA_WC_WITH_VLAN	     (1u << 5)
#define VIRTIO_RDMA_WC_WITH_NETWORK_HDR_TYPE (1u << 6)
#define VIRTIO_RDMA_WC_FLAGS_KNOWN	     ((1u << 7) - 1)

/* Completion element (Profile A §4.9, 48 bytes). */
struct virtio_rdma_cqe {
	uint64_t wr_id;
	uint32_t status; /* enum virtio_rdma_wc_status */
	uint32_t opcode; /* enum virtio_rdma_wc_opcode */
	uint32_t vendor_err;
	uint32_t byte_len;
	uint32_t imm_data; /* network order, or invalidate_rkey */
	uint32_t qp_num;   /* rdmagate: host QPN (1 for GSI) */
	uint32_t src_qp;
	uint32_t wc_flags;
	uint16_t pkey_index;
	uint16_t slid;
	uint8_t sl;
	uint8_t dlid_path_bits;
	uint8_t port_num;
	uint8_t pad;
};
_Static_assert(sizeof(struct virtio_rdma_cqe) == 48, "cqe");
_Static_assert(offsetof(struct virtio_rdma_cqe, imm_data) == 24, "");
_Static_assert(offsetof(struct virtio_rdma_cqe, wc_flags) == 36, "");
_Static_assert(offsetof(struct virtio_rdma_cqe, pkey_index) == 40, "");
_Static_assert(offsetof(struct virtio_rdma_cqe, sl) == 44, "");
_Static_assert(offsetof(struct virtio_rdma_cqe, port_num) == 46, "");

#endif
