/* SPDX-License-Identifier: MIT */
/*
 * The PVRDMA device ABI (VMware paravirtual RDMA, PCI 15ad:0820) as the
 * upstream Linux vmw_pvrdma driver and rdma-core's vmw_pvrdma provider use
 * it, and as rdmagate's worker presents it over vfio-user. This is the one
 * definition shared by the worker (device) and the guest simulator
 * (driver + provider). Learned from the driver's pvrdma_dev_api.h,
 * pvrdma_verbs.h, pvrdma_ring.h and include/uapi/rdma/vmw_pvrdma-abi.h;
 * written for rdmagate (fixed-width types, no bitfields, sizes asserted).
 *
 * Everything is little-endian and in guest memory or BARs; structs are the
 * exact wire layout (natural alignment unless marked packed). Do not
 * include this together with <rdma/vmw_pvrdma-abi.h>: the uapi part below
 * uses the same names on purpose, so the two can be compared field by
 * field (tests/unit/worker/pvrdma/test_pvrdma_abi.c).
 */
#ifndef RDMAGATE_COMMON_PVRDMA_ABI_H
#define RDMAGATE_COMMON_PVRDMA_ABI_H

#include <stddef.h>
#include <stdint.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "the structs below are the little-endian device layout");

/*
 * Version of this header's contents as rdmagate implements them. Bump it
 * when anything below changes, and say what changed in docs/pvrdma.md.
 */
#define RDMAGATE_PVRDMA_ABI_VERSION 1

/* ------------------------------------------------------------------ */
/* PCI identity and BARs                                               */
/* ------------------------------------------------------------------ */

#define PVRDMA_PCI_VENDOR_ID 0x15ad /* VMware */
#define PVRDMA_PCI_DEVICE_ID 0x0820
#define PVRDMA_PCI_CLASS     0x0280 /* network, other (as QEMU's) */
#define PVRDMA_PCI_REVISION  0x00

/*
 * Device (register) versions. The driver reads PVRDMA_REG_VERSION and
 * adapts: >= 18 RoCE v2 GIDs, >= 19 64-bit UAR PFNs (DSR uar_pfn64 and
 * CREATE_UC pfn64), >= 20 CREATE_QP answers with a QP handle distinct from
 * the QPN (struct pvrdma_cmd_create_qp_resp_v2). rdmagate's device is
 * version 20 (QEMU's was 17): small handles index the driver's tables and
 * the guest sees the host's real QPN (docs/pvrdma.md).
 */
#define PVRDMA_ROCEV1_VERSION	17
#define PVRDMA_ROCEV2_VERSION	18
#define PVRDMA_PPN64_VERSION	19
#define PVRDMA_QPHANDLE_VERSION 20
#define PVRDMA_DEVICE_VERSION	PVRDMA_QPHANDLE_VERSION
#define PVRDMA_FW_VERSION	14 /* reported in caps.fw_ver, as QEMU's */

#define PVRDMA_BOARD_ID 1
#define PVRDMA_REV_ID	1

enum pvrdma_pci_resource {
	PVRDMA_PCI_RESOURCE_MSIX = 0, /* BAR0: MSI-X table and PBA */
	PVRDMA_PCI_RESOURCE_REG = 1,  /* BAR1: registers */
	PVRDMA_PCI_RESOURCE_UAR = 2,  /* BAR2: UAR (doorbell) pages */
	PVRDMA_PCI_RESOURCE_LAST,
};

#define PVRDMA_PAGE_SIZE  4096u
#define PVRDMA_PAGE_SHIFT 12

/* BAR0: MSI-X (table at 0, PBA at 0x2000, as QEMU laid it out). */
#define PVRDMA_BAR0_MSIX_SIZE	 (16u * 1024u)
#define PVRDMA_MSIX_TABLE_OFFSET 0x0000u
#define PVRDMA_MSIX_PBA_OFFSET	 0x2000u
/* BAR1: the registers below; one page. */
#define PVRDMA_BAR1_REGS_SIZE 4096u
/*
 * BAR2: one 4 KiB UAR page per user context; page 0 is the driver's own.
 * caps.max_uar reports the page count (the driver's UAR allocator needs a
 * power of two).
 */
#define PVRDMA_UAR_PAGES     512u
#define PVRDMA_BAR2_UAR_SIZE (PVRDMA_UAR_PAGES * PVRDMA_PAGE_SIZE)

/*
 * MSI-X vectors: 0 command response, 1 async events, 2 CQ notifications.
 * The driver asks for at most PVRDMA_MAX_INTERRUPTS.
 */
#define PVRDMA_MAX_INTERRUPTS 3
enum pvrdma_intr_vector {
	PVRDMA_INTR_VECTOR_RESPONSE = 0,
	PVRDMA_INTR_VECTOR_ASYNC = 1,
	PVRDMA_INTR_VECTOR_CQ = 2,
};
/* PVRDMA_REG_ICR bits (legacy interrupts): 1 << vector. */
enum pvrdma_intr_cause {
	PVRDMA_INTR_CAUSE_RESPONSE = 1u << PVRDMA_INTR_VECTOR_RESPONSE,
	PVRDMA_INTR_CAUSE_ASYNC = 1u << PVRDMA_INTR_VECTOR_ASYNC,
	PVRDMA_INTR_CAUSE_CQ = 1u << PVRDMA_INTR_VECTOR_CQ,
};

/* ------------------------------------------------------------------ */
/* BAR1 registers (32-bit accesses)                                    */
/* ------------------------------------------------------------------ */

#define PVRDMA_REG_VERSION 0x00 /* R: device version */
#define PVRDMA_REG_DSRLOW  0x04 /* W: DSR guest physical address, low */
#define PVRDMA_REG_DSRHIGH 0x08 /* W: ... high; the DSR is loaded here */
#define PVRDMA_REG_CTL	   0x0c /* W: enum pvrdma_device_ctl */
#define PVRDMA_REG_REQUEST 0x10 /* W: 0 = execute the command slot */
#define PVRDMA_REG_ERR	   0x14 /* R: 0 = last request/activation ok */
#define PVRDMA_REG_ICR	   0x18 /* R: interrupt cause, cleared on read */
#define PVRDMA_REG_IMR	   0x1c /* R/W: interrupt mask, 0 = all enabled */
#define PVRDMA_REG_MACL	   0x20 /* R/W: MAC address bytes 0..3 */
#define PVRDMA_REG_MACH	   0x24 /* R/W: MAC address bytes 4..5 */
#define PVRDMA_REG_COUNT   10	/* registers at 0x00..0x24 */

enum pvrdma_device_ctl {
	PVRDMA_DEVICE_CTL_ACTIVATE = 0,
	PVRDMA_DEVICE_CTL_UNQUIESCE = 1,
	PVRDMA_DEVICE_CTL_RESET = 2,
};

/*
 * Values of PVRDMA_REG_ERR. The driver only tests for zero; rdmagate's
 * non-zero values say why (an errno), the reset value says "not active".
 */
#define PVRDMA_ERR_NOT_ACTIVE 0xffffu

/* ------------------------------------------------------------------ */
/* BAR2 UAR doorbells (32-bit writes at offset 0/4/8 of a UAR page)   */
/* ------------------------------------------------------------------ */

#define PVRDMA_UAR_HANDLE_MASK 0x00ffffffu /* handle in bits 0..23 */
#define PVRDMA_UAR_QP_OFFSET   0
#define PVRDMA_UAR_QP_SEND     (1u << 30)
#define PVRDMA_UAR_QP_RECV     (1u << 31)
#define PVRDMA_UAR_CQ_OFFSET   4
#define PVRDMA_UAR_CQ_ARM_SOL  (1u << 29)
#define PVRDMA_UAR_CQ_ARM      (1u << 30)
#define PVRDMA_UAR_CQ_POLL     (1u << 31)
#define PVRDMA_UAR_SRQ_OFFSET  8
#define PVRDMA_UAR_SRQ_RECV    (1u << 30)

/* ------------------------------------------------------------------ */
/* Page directories                                                    */
/* ------------------------------------------------------------------ */

/*
 * A page directory is one guest page of 512 u64 table addresses; a table
 * is one page of 512 u64 page addresses. Page i of the object is
 * table[i / 512][i % 512]. Only one directory level exists: at most
 * 512 * 512 pages (1 GiB).
 */
#define PVRDMA_PDIR_SHIFT	  18
#define PVRDMA_PTABLE_SHIFT	  9
#define PVRDMA_PDIR_ENTRIES	  512u
#define PVRDMA_PAGE_DIR_TABLE(x)  (((x) >> PVRDMA_PTABLE_SHIFT) & 0x1ff)
#define PVRDMA_PAGE_DIR_PAGE(x)	  ((x)&0x1ff)
#define PVRDMA_PAGE_DIR_MAX_PAGES (PVRDMA_PDIR_ENTRIES * PVRDMA_PDIR_ENTRIES)
#define PVRDMA_MAX_FAST_REG_PAGES 128

/* ------------------------------------------------------------------ */
/* Rings                                                               */
/* ------------------------------------------------------------------ */

/*
 * A ring of N entries (N a power of two) is described by two indices in
 * [0, 2N): bit log2(N) is a wrap ("generation") bit, so full (tail ==
 * head ^ N) and empty (tail == head) differ; slot = idx & (N - 1), and
 * idx advances as (idx + 1) & (2N - 1). An invalid index means the guest
 * wrote garbage: the ring is not touched.
 *
 * The driver sizes the async and CQ notification rings as (pages - 1) *
 * 4096 / entry size, which is not a power of two (1536 events in 3
 * pages). Its math then only ever uses indices below 2S and slots below
 * S, where S = n & -n (512 for 1536): the device runs those rings with S
 * entries, which keeps both sides in step and never overwrites an event
 * the driver has not read.
 *
 * The ring state lives in the first page of the ring's memory:
 *   QP: sq state at offset 0, rq state at offset 8; SQ WQEs from page 1,
 *       RQ WQEs from page 1 + send_chunks (send_chunks counts the SQ's
 *       pages, not the state page; total_chunks counts all).
 *   SRQ: the rx state (offset 8); WQEs from page 1.
 *   CQ: the rx state (offset 8; the device produces); CQEs from page 1.
 *   Async event and CQ notification rings: the rx state (offset 8);
 *       entries from page 1; the device produces.
 */
struct pvrdma_ring {
	int32_t prod_tail; /* producer tail */
	int32_t cons_head; /* consumer head */
};

struct pvrdma_ring_state {
	struct pvrdma_ring tx;
	struct pvrdma_ring rx;
};

#define PVRDMA_RING_STATE_SQ_OFFSET  0u
#define PVRDMA_RING_STATE_RQ_OFFSET  8u
#define PVRDMA_RING_STATE_SRQ_OFFSET 8u
#define PVRDMA_RING_STATE_CQ_OFFSET  8u
#define PVRDMA_RING_STATE_DEV_OFFSET 8u /* async and CQ notification */

/* ------------------------------------------------------------------ */
/* Device shared region (DSR)                                          */
/* ------------------------------------------------------------------ */

enum pvrdma_gos_bits {
	PVRDMA_GOS_BITS_UNK = 0,
	PVRDMA_GOS_BITS_32 = 1,
	PVRDMA_GOS_BITS_64 = 2,
};

enum pvrdma_gos_type {
	PVRDMA_GOS_TYPE_UNK = 0,
	PVRDMA_GOS_TYPE_LINUX = 1,
};

/*
 * Guest OS info: the driver's bitfields gos_bits:2, gos_type:4,
 * gos_ver:16, gos_misc:10, packed into one u32 (LSB first).
 */
struct pvrdma_gos_info {
	uint32_t bits; /* PVRDMA_GOS_* below */
	uint32_t pad;
};
#define PVRDMA_GOS_INFO_BITS(v) ((v)&0x3u)
#define PVRDMA_GOS_INFO_TYPE(v) (((v) >> 2) & 0xfu)
#define PVRDMA_GOS_INFO_VER(v)	(((v) >> 6) & 0xffffu)
#define PVRDMA_GOS_INFO_MAKE(bits, type, ver)                                  \
	(((uint32_t)(bits)&0x3u) | (((uint32_t)(type)&0xfu) << 2) |            \
	 (((uint32_t)(ver)&0xffffu) << 6))

enum pvrdma_device_mode {
	PVRDMA_DEVICE_MODE_ROCE = 0,
	PVRDMA_DEVICE_MODE_IWARP = 1,
	PVRDMA_DEVICE_MODE_IB = 2,
};

#define PVRDMA_ATOMIC_OP_COMP_SWAP	(1u << 0)
#define PVRDMA_ATOMIC_OP_FETCH_ADD	(1u << 1)
#define PVRDMA_ATOMIC_OP_MASK_COMP_SWAP (1u << 2)
#define PVRDMA_ATOMIC_OP_MASK_FETCH_ADD (1u << 3)

#define PVRDMA_BMME_FLAG_LOCAL_INV   (1u << 0)
#define PVRDMA_BMME_FLAG_REMOTE_INV  (1u << 1)
#define PVRDMA_BMME_FLAG_FAST_REG_WR (1u << 2)

/* caps.gid_types: for version >= 18 exactly one of these. */
#define PVRDMA_GID_TYPE_FLAG_ROCE_V1 (1u << 0)
#define PVRDMA_GID_TYPE_FLAG_ROCE_V2 (1u << 1)

/* Written by the device into the DSR when the DSR address is set. */
struct pvrdma_device_caps {
	uint64_t fw_ver;
	uint64_t node_guid;	 /* big-endian on the wire */
	uint64_t sys_image_guid; /* big-endian on the wire */
	uint64_t max_mr_size;
	uint64_t page_size_cap;
	uint64_t atomic_arg_sizes;
	uint32_t ex_comp_mask;
	uint32_t device_cap_flags2;
	uint32_t max_fa_bit_boundary;
	uint32_t log_max_atomic_inline_arg;
	uint32_t vendor_id;
	uint32_t vendor_part_id;
	uint32_t hw_ver;
	uint32_t max_qp;
	uint32_t max_qp_wr;
	uint32_t device_cap_flags;
	uint32_t max_sge;
	uint32_t max_sge_rd;
	uint32_t max_cq;
	uint32_t max_cqe;
	uint32_t max_mr;
	uint32_t max_pd;
	uint32_t max_qp_rd_atom;
	uint32_t max_ee_rd_atom;
	uint32_t max_res_rd_atom;
	uint32_t max_qp_init_rd_atom;
	uint32_t max_ee_init_rd_atom;
	uint32_t max_ee;
	uint32_t max_rdd;
	uint32_t max_mw;
	uint32_t max_raw_ipv6_qp;
	uint32_t max_raw_ethy_qp;
	uint32_t max_mcast_grp;
	uint32_t max_mcast_qp_attach;
	uint32_t max_total_mcast_qp_attach;
	uint32_t max_ah;
	uint32_t max_fmr;
	uint32_t max_map_per_fmr;
	uint32_t max_srq;
	uint32_t max_srq_wr;
	uint32_t max_srq_sge;
	uint32_t max_uar;
	uint32_t gid_tbl_len;
	uint16_t max_pkeys;
	uint8_t local_ca_ack_delay;
	uint8_t phys_port_cnt;
	uint8_t mode;	    /* enum pvrdma_device_mode */
	uint8_t atomic_ops; /* PVRDMA_ATOMIC_OP_* */
	uint8_t bmme_flags; /* PVRDMA_BMME_FLAG_* */
	uint8_t gid_types;  /* PVRDMA_GID_TYPE_FLAG_* */
	uint32_t max_fast_reg_page_list_len;
};
_Static_assert(sizeof(struct pvrdma_device_caps) == 208, "caps size");
_Static_assert(offsetof(struct pvrdma_device_caps, ex_comp_mask) == 48, "");
_Static_assert(offsetof(struct pvrdma_device_caps, max_qp) == 76, "");
_Static_assert(offsetof(struct pvrdma_device_caps, max_uar) == 188, "");
_Static_assert(offsetof(struct pvrdma_device_caps, max_pkeys) == 196, "");
_Static_assert(offsetof(struct pvrdma_device_caps, gid_types) == 203, "");

struct pvrdma_ring_page_info {
	uint32_t num_pages; /* pages including the ring-state page */
	uint32_t reserved;
	uint64_t pdir_dma; /* page directory address */
};
_Static_assert(sizeof(struct pvrdma_ring_page_info) == 16, "");

/* The DSR: one guest page, written by the driver, caps by the device. */
struct __attribute__((packed)) pvrdma_device_shared_region {
	uint32_t driver_version; /* W */
	uint32_t pad;
	struct pvrdma_gos_info gos_info;	       /* W */
	uint64_t cmd_slot_dma;			       /* W: one page */
	uint64_t resp_slot_dma;			       /* W: one page */
	struct pvrdma_ring_page_info async_ring_pages; /* W */
	struct pvrdma_ring_page_info cq_ring_pages;    /* W */
	union {
		uint32_t uar_pfn;   /* W: version < 19 */
		uint64_t uar_pfn64; /* W: version >= 19 */
	};
	struct pvrdma_device_caps caps; /* R: written by the device */
};
_Static_assert(sizeof(struct pvrdma_device_shared_region) == 280, "DSR size");
_Static_assert(offsetof(struct pvrdma_device_shared_region, cmd_slot_dma) == 16,
	       "");
_Static_assert(offsetof(struct pvrdma_device_shared_region, async_ring_pages) ==
		       32,
	       "");
_Static_assert(offsetof(struct pvrdma_device_shared_region, cq_ring_pages) ==
		       48,
	       "");
_Static_assert(offsetof(struct pvrdma_device_shared_region, uar_pfn64) == 64,
	       "");
_Static_assert(offsetof(struct pvrdma_device_shared_region, caps) == 72, "");

/* The driver gives the async and CQ notification rings this many pages. */
#define PVRDMA_NUM_RING_PAGES 4
/* rdmagate's bound on those rings (1 state page + up to 63 entry pages). */
#define PVRDMA_DEV_RING_MAX_PAGES 64

/* ------------------------------------------------------------------ */
/* Async events and CQ notifications                                   */
/* ------------------------------------------------------------------ */

enum pvrdma_eqe_type {
	PVRDMA_EVENT_CQ_ERR = 0,
	PVRDMA_EVENT_QP_FATAL,
	PVRDMA_EVENT_QP_REQ_ERR,
	PVRDMA_EVENT_QP_ACCESS_ERR,
	PVRDMA_EVENT_COMM_EST,
	PVRDMA_EVENT_SQ_DRAINED,
	PVRDMA_EVENT_PATH_MIG,
	PVRDMA_EVENT_PATH_MIG_ERR,
	PVRDMA_EVENT_DEVICE_FATAL,
	PVRDMA_EVENT_PORT_ACTIVE,
	PVRDMA_EVENT_PORT_ERR,
	PVRDMA_EVENT_LID_CHANGE,
	PVRDMA_EVENT_PKEY_CHANGE,
	PVRDMA_EVENT_SM_CHANGE,
	PVRDMA_EVENT_SRQ_ERR,
	PVRDMA_EVENT_SRQ_LIMIT_REACHED,
	PVRDMA_EVENT_QP_LAST_WQE_REACHED,
	PVRDMA_EVENT_CLIENT_REREGISTER,
	PVRDMA_EVENT_GID_CHANGE,
	PVRDMA_EVENT_MAX,
};

/* Async event ring entry; info is the QP/CQ/SRQ handle or port number. */
struct pvrdma_eqe {
	uint32_t type; /* enum pvrdma_eqe_type */
	uint32_t info;
};
_Static_assert(sizeof(struct pvrdma_eqe) == 8, "");

/* CQ notification ring entry: the CQ handle that has new completions. */
struct pvrdma_cqne {
	uint32_t info;
};
_Static_assert(sizeof(struct pvrdma_cqne) == 4, "");

/* ------------------------------------------------------------------ */
/* Verbs attribute structs used inside commands                        */
/* ------------------------------------------------------------------ */

union pvrdma_gid {
	uint8_t raw[16];
	struct {
		uint64_t subnet_prefix;
		uint64_t interface_id;
	} global;
};
_Static_assert(sizeof(union pvrdma_gid) == 16, "");

enum pvrdma_mtu {
	PVRDMA_MTU_256 = 1,
	PVRDMA_MTU_512 = 2,
	PVRDMA_MTU_1024 = 3,
	PVRDMA_MTU_2048 = 4,
	PVRDMA_MTU_4096 = 5,
};

enum pvrdma_port_state {
	PVRDMA_PORT_NOP = 0,
	PVRDMA_PORT_DOWN = 1,
	PVRDMA_PORT_INIT = 2,
	PVRDMA_PORT_ARMED = 3,
	PVRDMA_PORT_ACTIVE = 4,
	PVRDMA_PORT_ACTIVE_DEFER = 5,
};

#define PVRDMA_PORT_CM_SUP	  (1u << 16)
#define PVRDMA_PORT_IP_BASED_GIDS (1u << 26)

struct pvrdma_port_attr {
	uint32_t state;	     /* enum pvrdma_port_state */
	uint32_t max_mtu;    /* enum pvrdma_mtu */
	uint32_t active_mtu; /* enum pvrdma_mtu */
	uint32_t gid_tbl_len;
	uint32_t port_cap_flags;
	uint32_t max_msg_sz;
	uint32_t bad_pkey_cntr;
	uint32_t qkey_viol_cntr;
	uint16_t pkey_tbl_len;
	uint16_t lid;
	uint16_t sm_lid;
	uint8_t lmc;
	uint8_t max_vl_num;
	uint8_t sm_sl;
	uint8_t subnet_timeout;
	uint8_t init_type_reply;
	uint8_t active_width;
	uint8_t active_speed;
	uint8_t phys_state;
	uint8_t reserved[2];
};
_Static_assert(sizeof(struct pvrdma_port_attr) == 48, "");

struct pvrdma_global_route {
	union pvrdma_gid dgid;
	uint32_t flow_label;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint8_t reserved;
};
_Static_assert(sizeof(struct pvrdma_global_route) == 24, "");

#define PVRDMA_AH_GRH 1u

struct pvrdma_ah_attr {
	struct pvrdma_global_route grh;
	uint16_t dlid;
	uint16_t vlan_id;
	uint8_t sl;
	uint8_t src_path_bits;
	uint8_t static_rate;
	uint8_t ah_flags;
	uint8_t port_num;
	uint8_t dmac[6];
	uint8_t reserved;
};
_Static_assert(sizeof(struct pvrdma_ah_attr) == 40, "");

struct pvrdma_qp_cap {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
	uint32_t reserved;
};
_Static_assert(sizeof(struct pvrdma_qp_cap) == 24, "");

enum pvrdma_qp_type {
	PVRDMA_QPT_SMI = 0,
	PVRDMA_QPT_GSI = 1,
	PVRDMA_QPT_RC = 2,
	PVRDMA_QPT_UC = 3,
	PVRDMA_QPT_UD = 4,
	PVRDMA_QPT_RAW_IPV6 = 5,
	PVRDMA_QPT_RAW_ETHERTYPE = 6,
	PVRDMA_QPT_RAW_PACKET = 8,
	PVRDMA_QPT_XRC_INI = 9,
	PVRDMA_QPT_XRC_TGT = 10,
	PVRDMA_QPT_MAX,
};

/* attr_mask bits of MODIFY_QP / QUERY_QP (the IB numbering). */
enum pvrdma_qp_attr_mask {
	PVRDMA_QP_STATE = 1u << 0,
	PVRDMA_QP_CUR_STATE = 1u << 1,
	PVRDMA_QP_EN_SQD_ASYNC_NOTIFY = 1u << 2,
	PVRDMA_QP_ACCESS_FLAGS = 1u << 3,
	PVRDMA_QP_PKEY_INDEX = 1u << 4,
	PVRDMA_QP_PORT = 1u << 5,
	PVRDMA_QP_QKEY = 1u << 6,
	PVRDMA_QP_AV = 1u << 7,
	PVRDMA_QP_PATH_MTU = 1u << 8,
	PVRDMA_QP_TIMEOUT = 1u << 9,
	PVRDMA_QP_RETRY_CNT = 1u << 10,
	PVRDMA_QP_RNR_RETRY = 1u << 11,
	PVRDMA_QP_RQ_PSN = 1u << 12,
	PVRDMA_QP_MAX_QP_RD_ATOMIC = 1u << 13,
	PVRDMA_QP_ALT_PATH = 1u << 14,
	PVRDMA_QP_MIN_RNR_TIMER = 1u << 15,
	PVRDMA_QP_SQ_PSN = 1u << 16,
	PVRDMA_QP_MAX_DEST_RD_ATOMIC = 1u << 17,
	PVRDMA_QP_PATH_MIG_STATE = 1u << 18,
	PVRDMA_QP_CAP = 1u << 19,
	PVRDMA_QP_DEST_QPN = 1u << 20,
	PVRDMA_QP_ATTR_MASK_MAX = PVRDMA_QP_DEST_QPN,
};
#define PVRDMA_QP_ATTR_MASK_ALL ((PVRDMA_QP_ATTR_MASK_MAX << 1) - 1)

enum pvrdma_qp_state {
	PVRDMA_QPS_RESET = 0,
	PVRDMA_QPS_INIT,
	PVRDMA_QPS_RTR,
	PVRDMA_QPS_RTS,
	PVRDMA_QPS_SQD,
	PVRDMA_QPS_SQE,
	PVRDMA_QPS_ERR,
};

enum pvrdma_mig_state {
	PVRDMA_MIG_MIGRATED = 0,
	PVRDMA_MIG_REARM,
	PVRDMA_MIG_ARMED,
};

struct pvrdma_srq_attr {
	uint32_t max_wr;
	uint32_t max_sge;
	uint32_t srq_limit;
	uint32_t reserved;
};
_Static_assert(sizeof(struct pvrdma_srq_attr) == 16, "");

/* MODIFY_SRQ attr_mask bits (IB numbering). */
#define PVRDMA_SRQ_MAX_WR (1u << 0)
#define PVRDMA_SRQ_LIMIT  (1u << 1)

struct pvrdma_qp_attr {
	uint32_t qp_state;	 /* enum pvrdma_qp_state */
	uint32_t cur_qp_state;	 /* enum pvrdma_qp_state */
	uint32_t path_mtu;	 /* enum pvrdma_mtu */
	uint32_t path_mig_state; /* enum pvrdma_mig_state */
	uint32_t qkey;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t dest_qp_num;
	uint32_t qp_access_flags; /* PVRDMA_ACCESS_* */
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
	uint8_t reserved[5];
	struct pvrdma_qp_cap cap;
	struct pvrdma_ah_attr ah_attr;
	struct pvrdma_ah_attr alt_ah_attr;
};
_Static_assert(sizeof(struct pvrdma_qp_attr) == 160, "");
_Static_assert(offsetof(struct pvrdma_qp_attr, cap) == 56, "");
_Static_assert(offsetof(struct pvrdma_qp_attr, ah_attr) == 80, "");

enum pvrdma_access_flags {
	PVRDMA_ACCESS_LOCAL_WRITE = 1u << 0,
	PVRDMA_ACCESS_REMOTE_WRITE = 1u << 1,
	PVRDMA_ACCESS_REMOTE_READ = 1u << 2,
	PVRDMA_ACCESS_REMOTE_ATOMIC = 1u << 3,
	PVRDMA_ACCESS_MW_BIND = 1u << 4,
	PVRDMA_ZERO_BASED = 1u << 5,
	PVRDMA_ACCESS_ON_DEMAND = 1u << 6,
	PVRDMA_ACCESS_FLAGS_MAX = PVRDMA_ACCESS_ON_DEMAND,
};

/*
 * Linux's optional access bits (IB_ACCESS_OPTIONAL_*, bits 20..29): hints a
 * device may ignore.  vmw_pvrdma copies a user's access flags into
 * CREATE_MR as they are, so they arrive here (perftest's bandwidth and
 * send tests ask for relaxed ordering by default).
 */
#define PVRDMA_ACCESS_RELAXED_ORDERING (1u << 20)
#define PVRDMA_ACCESS_OPTIONAL_RANGE   (((1u << 30) - 1) & ~((1u << 20) - 1))

/* Object flags of CREATE_MR. */
#define PVRDMA_MR_FLAG_DMA  (1u << 0) /* all of guest memory, no pages */
#define PVRDMA_MR_FLAG_FRMR (1u << 1) /* fast-register MR */

/* ------------------------------------------------------------------ */
/* Commands (cmd_slot) and responses (resp_slot)                       */
/* ------------------------------------------------------------------ */

enum pvrdma_cmd_code {
	PVRDMA_CMD_QUERY_PORT = 0,
	PVRDMA_CMD_QUERY_PKEY = 1,
	PVRDMA_CMD_CREATE_PD = 2,
	PVRDMA_CMD_DESTROY_PD = 3,
	PVRDMA_CMD_CREATE_MR = 4,
	PVRDMA_CMD_DESTROY_MR = 5,
	PVRDMA_CMD_CREATE_CQ = 6,
	PVRDMA_CMD_RESIZE_CQ = 7,
	PVRDMA_CMD_DESTROY_CQ = 8,
	PVRDMA_CMD_CREATE_QP = 9,
	PVRDMA_CMD_MODIFY_QP = 10,
	PVRDMA_CMD_QUERY_QP = 11,
	PVRDMA_CMD_DESTROY_QP = 12,
	PVRDMA_CMD_CREATE_UC = 13,
	PVRDMA_CMD_DESTROY_UC = 14,
	PVRDMA_CMD_CREATE_BIND = 15,
	PVRDMA_CMD_DESTROY_BIND = 16,
	PVRDMA_CMD_CREATE_SRQ = 17,
	PVRDMA_CMD_MODIFY_SRQ = 18,
	PVRDMA_CMD_QUERY_SRQ = 19,
	PVRDMA_CMD_DESTROY_SRQ = 20,
	PVRDMA_CMD_MAX,
};

/* A command's response code (resp hdr.ack) is its code | this bit. */
#define PVRDMA_CMD_RESP_BIT  0x80000000u
#define PVRDMA_CMD_RESP(cmd) ((uint32_t)(cmd) | PVRDMA_CMD_RESP_BIT)

struct pvrdma_cmd_hdr {
	uint64_t response; /* echoed in the response */
	uint32_t cmd;	   /* enum pvrdma_cmd_code */
	uint32_t reserved;
};
_Static_assert(sizeof(struct pvrdma_cmd_hdr) == 16, "");

struct pvrdma_cmd_resp_hdr {
	uint64_t response; /* from the command */
	uint32_t ack;	   /* PVRDMA_CMD_RESP(cmd) */
	uint8_t err;	   /* 0 or a positive errno (rdmagate) */
	uint8_t reserved[3];
};
_Static_assert(sizeof(struct pvrdma_cmd_resp_hdr) == 16, "");

struct pvrdma_cmd_query_port {
	struct pvrdma_cmd_hdr hdr;
	uint8_t port_num;
	uint8_t reserved[7];
};
struct pvrdma_cmd_query_port_resp {
	struct pvrdma_cmd_resp_hdr hdr;
	struct pvrdma_port_attr attrs;
};

struct pvrdma_cmd_query_pkey {
	struct pvrdma_cmd_hdr hdr;
	uint8_t port_num;
	uint8_t index;
	uint8_t reserved[6];
};
struct pvrdma_cmd_query_pkey_resp {
	struct pvrdma_cmd_resp_hdr hdr;
	uint16_t pkey;
	uint8_t reserved[6];
};

struct pvrdma_cmd_create_uc {
	struct pvrdma_cmd_hdr hdr;
	union {
		uint32_t pfn;	/* version < 19 */
		uint64_t pfn64; /* version >= 19 */
	};
};
struct pvrdma_cmd_create_uc_resp {
	struct pvrdma_cmd_resp_hdr hdr;
	uint32_t ctx_handle;
	uint8_t reserved[4];
};
struct pvrdma_cmd_destroy_uc {
	struct pvrdma_cmd_hdr hdr;
	uint32_t ctx_handle;
	uint8_t reserved[4];
};

struct pvrdma_cmd_create_pd {
	struct pvrdma_cmd_hdr hdr;
	uint32_t ctx_handle; /* 0: the kernel's */
	uint8_t reserved[4];
};
struct pvrdma_cmd_create_pd_resp {
	struct pvrdma_cmd_resp_hdr hdr;
	uint32_t pd_handle;
	uint8_t reserved[4];
};
struct pvrdma_cmd_destroy_pd {
	struct pvrdma_cmd_hdr hdr;
	uint32_t pd_handle;
	uint8_t reserved[4];
};

struct pvrdma_cmd_create_mr {
	struct pvrdma_cmd_hdr hdr;
	uint64_t start; /* guest virtual address (iova) */
	uint64_t length;
	uint64_t pdir_dma; /* page directory, unless PVRDMA_MR_FLAG_DMA */
	uint32_t pd_handle;
	uint32_t access_flags; /* PVRDMA_ACCESS_* */
	uint32_t flags;	       /* PVRDMA_MR_FLAG_* */
	uint32_t nchunks;      /* pages in the directory */
};
struct pvrdma_cmd_create_mr_resp {
	struct pvrdma_cmd_resp_hdr hdr;
	uint32_t mr_handle;
	uint32_t lkey;
	uint32_t rkey;
	uint8_t reserved[4];
};
struct pvrdma_cmd_destroy_mr {
	struct pvrdma_cmd_hdr hdr;
	uint32_t mr_handle;
	uint8_t reserved[4];
};

struct pvrdma_cmd_create_cq {
	struct pvrdma_cmd_hdr hdr;
	uint64_t pdir_dma;
	uint32_t ctx_handle;
	uint32_t cqe;	  /* entries, a power of two */
	uint32_t nchunks; /* pages including the ring-state page */
	uint8_t reserved[4];
};
struct pvrdma_cmd_create_cq_resp {
	struct pvrdma_cmd_resp_hdr hdr;
	uint32_t cq_handle;
	uint32_t cqe;
};
struct pvrdma_cmd_resize_cq {
	struct pvrdma_cmd_hdr hdr;
	uint32_t cq_handle;
	uint32_t cqe;
};
struct pvrdma_cmd_resize_cq_resp {
	struct pvrdma_cmd_resp_hdr hdr;
	uint32_t cqe;
	uint8_t reserved[4];
};
struct pvrdma_cmd_destroy_cq {
	struct pvrdma_cmd_hdr hdr;
	uint32_t cq_handle;
	uint8_t reserved[4];
};

struct pvrdma_cmd_create_srq {
	struct pvrdma_cmd_hdr hdr;
	uint64_t pdir_dma;
	uint32_t pd_handle;
	uint32_t nchunks; /* pages including the ring-state page */
	struct pvrdma_srq_attr attrs;
	uint8_t srq_type; /* 0: basic (IB_SRQT_BASIC) */
	uint8_t reserved[7];
};
struct pvrdma_cmd_create_srq_resp {
	struct pvrdma_cmd_resp_hdr hdr;
	uint32_t srqn; /* the SRQ handle */
	uint8_t reserved[4];
};
struct pvrdma_cmd_modify_srq {
	struct pvrdma_cmd_hdr hdr;
	uint32_t srq_handle;
	uint32_t attr_mask; /* PVRDMA_SRQ_MAX_WR / PVRDMA_SRQ_LIMIT */
	struct pvrdma_srq_attr attrs;
};
struct pvrdma_cmd_query_srq {
	struct pvrdma_cmd_hdr hdr;
	uint32_t srq_handle;
	uint8_t reserved[4];
};
struct pvrdma_cmd_query_srq_resp {
	struct pvrdma_cmd_resp_hdr hdr;
	struct pvrdma_srq_attr attrs;
};
struct pvrdma_cmd_destroy_srq {
	struct pvrdma_cmd_hdr hdr;
	uint32_t srq_handle;
	uint8_t reserved[4];
};

struct pvrdma_cmd_create_qp {
	struct pvrdma_cmd_hdr hdr;
	uint64_t pdir_dma;
	uint32_t pd_handle;
	uint32_t send_cq_handle;
	uint32_t recv_cq_handle;
	uint32_t srq_handle;
	uint32_t max_send_wr; /* a power of two */
	uint32_t max_recv_wr; /* a power of two, 0 with an SRQ */
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
	uint32_t lkey;
	uint32_t access_flags;
	uint16_t total_chunks; /* pages: state + SQ + RQ */
	uint16_t send_chunks;  /* pages: SQ only (not the state page) */
	uint16_t max_atomic_arg;
	uint8_t sq_sig_all;
	uint8_t qp_type; /* enum pvrdma_qp_type */
	uint8_t is_srq;
	uint8_t reserved[3];
};
/* Version < 20: the QPN is also the handle. */
struct pvrdma_cmd_create_qp_resp {
	struct pvrdma_cmd_resp_hdr hdr;
	uint32_t qpn;
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
};
/*
 * Version >= 20 (rdmagate): the QPN on the wire and the device handle.
 * Handles are never 0 (the provider reads 0 as "no handle, use the QPN")
 * and stay below caps.max_qp: the driver and the provider index their QP
 * tables with handle % max_qp and handle & 0xffff, and CQEs carry the
 * handle in pvrdma_cqe.qp.
 */
struct pvrdma_cmd_create_qp_resp_v2 {
	struct pvrdma_cmd_resp_hdr hdr;
	uint32_t qpn;
	uint32_t qp_handle;
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
};
struct pvrdma_cmd_modify_qp {
	struct pvrdma_cmd_hdr hdr;
	uint32_t qp_handle;
	uint32_t attr_mask; /* enum pvrdma_qp_attr_mask */
	struct pvrdma_qp_attr attrs;
};
struct pvrdma_cmd_query_qp {
	struct pvrdma_cmd_hdr hdr;
	uint32_t qp_handle;
	uint32_t attr_mask;
};
struct pvrdma_cmd_query_qp_resp {
	struct pvrdma_cmd_resp_hdr hdr;
	struct pvrdma_qp_attr attrs;
};
struct pvrdma_cmd_destroy_qp {
	struct pvrdma_cmd_hdr hdr;
	uint32_t qp_handle;
	uint8_t reserved[4];
};
struct pvrdma_cmd_destroy_qp_resp {
	struct pvrdma_cmd_resp_hdr hdr;
	uint32_t events_reported; /* async events sent for this QP */
	uint8_t reserved[4];
};

struct pvrdma_cmd_create_bind {
	struct pvrdma_cmd_hdr hdr;
	uint32_t mtu;
	uint32_t vlan;
	uint32_t index; /* GID table index */
	uint8_t new_gid[16];
	uint8_t gid_type; /* PVRDMA_GID_TYPE_FLAG_* */
	uint8_t reserved[3];
};
struct pvrdma_cmd_destroy_bind {
	struct pvrdma_cmd_hdr hdr;
	uint32_t index;
	uint8_t dest_gid[16];
	uint8_t reserved[4];
};

/*
 * The command slot holds one union pvrdma_cmd_req (the driver always
 * copies the whole union); the response slot one union pvrdma_cmd_resp.
 * Both live in one guest page each.
 */
union pvrdma_cmd_req {
	struct pvrdma_cmd_hdr hdr;
	struct pvrdma_cmd_query_port query_port;
	struct pvrdma_cmd_query_pkey query_pkey;
	struct pvrdma_cmd_create_uc create_uc;
	struct pvrdma_cmd_destroy_uc destroy_uc;
	struct pvrdma_cmd_create_pd create_pd;
	struct pvrdma_cmd_destroy_pd destroy_pd;
	struct pvrdma_cmd_create_mr create_mr;
	struct pvrdma_cmd_destroy_mr destroy_mr;
	struct pvrdma_cmd_create_cq create_cq;
	struct pvrdma_cmd_resize_cq resize_cq;
	struct pvrdma_cmd_destroy_cq destroy_cq;
	struct pvrdma_cmd_create_qp create_qp;
	struct pvrdma_cmd_modify_qp modify_qp;
	struct pvrdma_cmd_query_qp query_qp;
	struct pvrdma_cmd_destroy_qp destroy_qp;
	struct pvrdma_cmd_create_bind create_bind;
	struct pvrdma_cmd_destroy_bind destroy_bind;
	struct pvrdma_cmd_create_srq create_srq;
	struct pvrdma_cmd_modify_srq modify_srq;
	struct pvrdma_cmd_query_srq query_srq;
	struct pvrdma_cmd_destroy_srq destroy_srq;
};

union pvrdma_cmd_resp {
	struct pvrdma_cmd_resp_hdr hdr;
	struct pvrdma_cmd_query_port_resp query_port_resp;
	struct pvrdma_cmd_query_pkey_resp query_pkey_resp;
	struct pvrdma_cmd_create_uc_resp create_uc_resp;
	struct pvrdma_cmd_create_pd_resp create_pd_resp;
	struct pvrdma_cmd_create_mr_resp create_mr_resp;
	struct pvrdma_cmd_create_cq_resp create_cq_resp;
	struct pvrdma_cmd_resize_cq_resp resize_cq_resp;
	struct pvrdma_cmd_create_qp_resp create_qp_resp;
	struct pvrdma_cmd_create_qp_resp_v2 create_qp_resp_v2;
	struct pvrdma_cmd_query_qp_resp query_qp_resp;
	struct pvrdma_cmd_destroy_qp_resp destroy_qp_resp;
	struct pvrdma_cmd_create_srq_resp create_srq_resp;
	struct pvrdma_cmd_query_srq_resp query_srq_resp;
};

_Static_assert(sizeof(struct pvrdma_cmd_query_port) == 24, "");
_Static_assert(sizeof(struct pvrdma_cmd_query_port_resp) == 64, "");
_Static_assert(sizeof(struct pvrdma_cmd_query_pkey) == 24, "");
_Static_assert(sizeof(struct pvrdma_cmd_query_pkey_resp) == 24, "");
_Static_assert(sizeof(struct pvrdma_cmd_create_uc) == 24, "");
_Static_assert(sizeof(struct pvrdma_cmd_create_uc_resp) == 24, "");
_Static_assert(sizeof(struct pvrdma_cmd_destroy_uc) == 24, "");
_Static_assert(sizeof(struct pvrdma_cmd_create_pd) == 24, "");
_Static_assert(sizeof(struct pvrdma_cmd_create_pd_resp) == 24, "");
_Static_assert(sizeof(struct pvrdma_cmd_destroy_pd) == 24, "");
_Static_assert(sizeof(struct pvrdma_cmd_create_mr) == 56, "");
_Static_assert(sizeof(struct pvrdma_cmd_create_mr_resp) == 32, "");
_Static_assert(sizeof(struct pvrdma_cmd_destroy_mr) == 24, "");
_Static_assert(sizeof(struct pvrdma_cmd_create_cq) == 40, "");
_Static_assert(sizeof(struct pvrdma_cmd_create_cq_resp) == 24, "");
_Static_assert(sizeof(struct pvrdma_cmd_resize_cq) == 24, "");
_Static_assert(sizeof(struct pvrdma_cmd_resize_cq_resp) == 24, "");
_Static_assert(sizeof(struct pvrdma_cmd_destroy_cq) == 24, "");
_Static_assert(sizeof(struct pvrdma_cmd_create_srq) == 56, "");
_Static_assert(sizeof(struct pvrdma_cmd_create_srq_resp) == 24, "");
_Static_assert(sizeof(struct pvrdma_cmd_modify_srq) == 40, "");
_Static_assert(sizeof(struct pvrdma_cmd_query_srq) == 24, "");
_Static_assert(sizeof(struct pvrdma_cmd_query_srq_resp) == 32, "");
_Static_assert(sizeof(struct pvrdma_cmd_destroy_srq) == 24, "");
_Static_assert(sizeof(struct pvrdma_cmd_create_qp) == 80, "");
_Static_assert(sizeof(struct pvrdma_cmd_create_qp_resp) == 40, "");
_Static_assert(sizeof(struct pvrdma_cmd_create_qp_resp_v2) == 48, "");
_Static_assert(sizeof(struct pvrdma_cmd_modify_qp) == 184, "");
_Static_assert(sizeof(struct pvrdma_cmd_query_qp) == 24, "");
_Static_assert(sizeof(struct pvrdma_cmd_query_qp_resp) == 176, "");
_Static_assert(sizeof(struct pvrdma_cmd_destroy_qp) == 24, "");
_Static_assert(sizeof(struct pvrdma_cmd_destroy_qp_resp) == 24, "");
_Static_assert(sizeof(struct pvrdma_cmd_create_bind) == 48, "");
_Static_assert(sizeof(struct pvrdma_cmd_destroy_bind) == 40, "");
/* The driver builds with BUILD_BUG_ON(req union == modify_qp). */
_Static_assert(sizeof(union pvrdma_cmd_req) == 184, "cmd slot size");
_Static_assert(sizeof(union pvrdma_cmd_resp) == 176, "resp slot size");

/* ------------------------------------------------------------------ */
/* Work requests and completions (the provider's uapi layout)          */
/* ------------------------------------------------------------------ */

#define PVRDMA_UVERBS_ABI_VERSION 3

enum pvrdma_wr_opcode {
	PVRDMA_WR_RDMA_WRITE = 0,
	PVRDMA_WR_RDMA_WRITE_WITH_IMM,
	PVRDMA_WR_SEND,
	PVRDMA_WR_SEND_WITH_IMM,
	PVRDMA_WR_RDMA_READ,
	PVRDMA_WR_ATOMIC_CMP_AND_SWP,
	PVRDMA_WR_ATOMIC_FETCH_AND_ADD,
	PVRDMA_WR_LSO,
	PVRDMA_WR_SEND_WITH_INV,
	PVRDMA_WR_RDMA_READ_WITH_INV,
	PVRDMA_WR_LOCAL_INV,
	PVRDMA_WR_FAST_REG_MR,
	PVRDMA_WR_MASKED_ATOMIC_CMP_AND_SWP,
	PVRDMA_WR_MASKED_ATOMIC_FETCH_AND_ADD,
	PVRDMA_WR_BIND_MW,
	PVRDMA_WR_REG_SIG_MR,
	PVRDMA_WR_ERROR, /* the provider's "no such opcode" */
};

enum pvrdma_wc_status {
	PVRDMA_WC_SUCCESS = 0,
	PVRDMA_WC_LOC_LEN_ERR,
	PVRDMA_WC_LOC_QP_OP_ERR,
	PVRDMA_WC_LOC_EEC_OP_ERR,
	PVRDMA_WC_LOC_PROT_ERR,
	PVRDMA_WC_WR_FLUSH_ERR,
	PVRDMA_WC_MW_BIND_ERR,
	PVRDMA_WC_BAD_RESP_ERR,
	PVRDMA_WC_LOC_ACCESS_ERR,
	PVRDMA_WC_REM_INV_REQ_ERR,
	PVRDMA_WC_REM_ACCESS_ERR,
	PVRDMA_WC_REM_OP_ERR,
	PVRDMA_WC_RETRY_EXC_ERR,
	PVRDMA_WC_RNR_RETRY_EXC_ERR,
	PVRDMA_WC_LOC_RDD_VIOL_ERR,
	PVRDMA_WC_REM_INV_RD_REQ_ERR,
	PVRDMA_WC_REM_ABORT_ERR,
	PVRDMA_WC_INV_EECN_ERR,
	PVRDMA_WC_INV_EEC_STATE_ERR,
	PVRDMA_WC_FATAL_ERR,
	PVRDMA_WC_RESP_TIMEOUT_ERR,
	PVRDMA_WC_GENERAL_ERR,
};

enum pvrdma_wc_opcode {
	PVRDMA_WC_SEND = 0,
	PVRDMA_WC_RDMA_WRITE,
	PVRDMA_WC_RDMA_READ,
	PVRDMA_WC_COMP_SWAP,
	PVRDMA_WC_FETCH_ADD,
	PVRDMA_WC_BIND_MW,
	PVRDMA_WC_LSO,
	PVRDMA_WC_LOCAL_INV,
	PVRDMA_WC_FAST_REG_MR,
	PVRDMA_WC_MASKED_COMP_SWAP,
	PVRDMA_WC_MASKED_FETCH_ADD,
	PVRDMA_WC_RECV = 1 << 7,
	PVRDMA_WC_RECV_RDMA_WITH_IMM,
};

enum pvrdma_wc_flags {
	PVRDMA_WC_GRH = 1u << 0,
	PVRDMA_WC_WITH_IMM = 1u << 1,
	PVRDMA_WC_WITH_INVALIDATE = 1u << 2,
	PVRDMA_WC_IP_CSUM_OK = 1u << 3,
	PVRDMA_WC_WITH_SMAC = 1u << 4,
	PVRDMA_WC_WITH_VLAN = 1u << 5,
	PVRDMA_WC_FLAGS_MAX = PVRDMA_WC_WITH_VLAN,
};

enum pvrdma_send_flags {
	PVRDMA_SEND_FENCE = 1u << 0,
	PVRDMA_SEND_SIGNALED = 1u << 1,
	PVRDMA_SEND_SOLICITED = 1u << 2,
	PVRDMA_SEND_INLINE = 1u << 3,
	PVRDMA_SEND_IP_CSUM = 1u << 4,
	PVRDMA_SEND_FLAGS_MAX = PVRDMA_SEND_IP_CSUM,
};

/* Provider <-> guest kernel udata (for the guest simulator). */
struct pvrdma_alloc_ucontext_resp {
	uint32_t qp_tab_size;
	uint32_t reserved;
};
struct pvrdma_create_qp_resp {
	uint32_t qpn;
	uint32_t qp_handle;
};

struct pvrdma_ex_cmp_swap {
	uint64_t swap_val;
	uint64_t compare_val;
	uint64_t swap_mask;
	uint64_t compare_mask;
};

struct pvrdma_ex_fetch_add {
	uint64_t add_val;
	uint64_t field_boundary;
};

/* Address vector of a UD send (the provider's copy of the AH). */
struct pvrdma_av {
	uint32_t port_pd;	      /* port << 24 | pd handle */
	uint32_t sl_tclass_flowlabel; /* sl << 28 | tclass << 20 | flow */
	uint8_t dgid[16];
	uint8_t src_path_bits;
	uint8_t gid_index;
	uint8_t stat_rate;
	uint8_t hop_limit;
	uint8_t dmac[6];
	uint8_t reserved[6];
};
_Static_assert(sizeof(struct pvrdma_av) == 40, "");

struct pvrdma_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};
_Static_assert(sizeof(struct pvrdma_sge) == 16, "");

/* Receive WQE: this header, then num_sge struct pvrdma_sge. */
struct pvrdma_rq_wqe_hdr {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t total_len;
};
_Static_assert(sizeof(struct pvrdma_rq_wqe_hdr) == 16, "");

/* Send WQE: this header, then num_sge struct pvrdma_sge. */
struct pvrdma_sq_wqe_hdr {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t total_len;
	uint32_t opcode;     /* enum pvrdma_wr_opcode */
	uint32_t send_flags; /* enum pvrdma_send_flags */
	union {
		uint32_t imm_data; /* network byte order */
		uint32_t invalidate_rkey;
	} ex;
	uint32_t reserved;
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
			uint8_t reserved[4];
		} rdma;
		struct {
			uint64_t remote_addr;
			uint64_t compare_add;
			uint64_t swap;
			uint32_t rkey;
			uint32_t reserved;
		} atomic;
		struct {
			uint64_t remote_addr;
			uint32_t log_arg_sz;
			uint32_t rkey;
			union {
				struct pvrdma_ex_cmp_swap cmp_swap;
				struct pvrdma_ex_fetch_add fetch_add;
			} wr_data;
		} masked_atomics;
		struct {
			uint64_t iova_start;
			uint64_t pl_pdir_dma;
			uint32_t page_shift;
			uint32_t page_list_len;
			uint32_t length;
			uint32_t access_flags;
			uint32_t rkey;
		} fast_reg;
		struct {
			uint32_t remote_qpn;
			uint32_t remote_qkey;
			struct pvrdma_av av;
		} ud;
	} wr;
};
_Static_assert(sizeof(struct pvrdma_sq_wqe_hdr) == 80, "");
_Static_assert(offsetof(struct pvrdma_sq_wqe_hdr, wr) == 32, "");

/* Completion queue element (64 bytes). */
struct pvrdma_cqe {
	uint64_t wr_id;
	uint64_t qp;	 /* the QP handle (the provider masks 0xffff) */
	uint32_t opcode; /* enum pvrdma_wc_opcode */
	uint32_t status; /* enum pvrdma_wc_status */
	uint32_t byte_len;
	uint32_t imm_data; /* network byte order */
	uint32_t src_qp;
	uint32_t wc_flags; /* enum pvrdma_wc_flags */
	uint32_t vendor_err;
	uint16_t pkey_index;
	uint16_t slid;
	uint8_t sl;
	uint8_t dlid_path_bits;
	uint8_t port_num;
	uint8_t smac[6];
	uint8_t reserved2[7];
};
_Static_assert(sizeof(struct pvrdma_cqe) == 64, "");

/* A WQE slot is this rounded up to a power of two. */
static inline uint64_t pvrdma_sq_wqe_bytes(uint32_t max_sge)
{
	return sizeof(struct pvrdma_sq_wqe_hdr) +
	       (uint64_t)max_sge * sizeof(struct pvrdma_sge);
}

static inline uint64_t pvrdma_rq_wqe_bytes(uint32_t max_sge)
{
	return sizeof(struct pvrdma_rq_wqe_hdr) +
	       (uint64_t)max_sge * sizeof(struct pvrdma_sge);
}

#endif
