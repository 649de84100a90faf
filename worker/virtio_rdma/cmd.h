/* SPDX-License-Identifier: MIT */
/*
 * Pure decoder of virtio-rdma control commands (common/virtio_rdma.h): a
 * control chain's device-readable bytes in, a validated typed request or
 * a refusal with a reason out; and the encoder of the status + response
 * bytes. No I/O, no device state: what needs state (does this CQ exist,
 * is max_cqe exceeded) is the worker's job.
 *
 * The caller must have copied the chain out of guest memory: the decoder
 * reads each byte once, but does not guard against concurrent change.
 */
#ifndef RDMAGATE_WORKER_VIRTIO_RDMA_CMD_H
#define RDMAGATE_WORKER_VIRTIO_RDMA_CMD_H

#include <stddef.h>
#include <stdint.h>

#include "common/virtio_rdma.h"
#include "common/reason.h"

/* Arguments of a decoded command; the member is named after the command. */
union rdma_cmd_args {
	struct virtio_rdma_cmd_query_port query_port;
	struct virtio_rdma_cmd_create_cq create_cq;
	struct virtio_rdma_cmd_destroy_cq destroy_cq;
	struct virtio_rdma_cmd_destroy_pd destroy_pd;
	struct virtio_rdma_cmd_get_dma_mr get_dma_mr;
	struct virtio_rdma_cmd_create_mr create_mr;
	struct virtio_rdma_cmd_map_mr_sg map_mr_sg;
	struct virtio_rdma_cmd_reg_user_mr reg_user_mr;
	struct virtio_rdma_cmd_dereg_mr dereg_mr;
	/* Always the extended form; 36..43-byte requests read flags = 0. */
	struct virtio_rdma_cmd_create_qp_ext create_qp;
	struct virtio_rdma_cmd_modify_qp modify_qp;
	struct virtio_rdma_cmd_query_qp query_qp;
	struct virtio_rdma_cmd_destroy_qp destroy_qp;
	struct virtio_rdma_cmd_query_pkey query_pkey;
	struct virtio_rdma_cmd_add_gid add_gid;
	struct virtio_rdma_cmd_del_gid del_gid;
	struct virtio_rdma_cmd_req_notify_cq req_notify_cq;
	struct virtio_rdma_cmd_create_srq create_srq;
	struct virtio_rdma_cmd_modify_srq modify_srq;
	struct virtio_rdma_cmd_srq_handle query_srq;
	struct virtio_rdma_cmd_srq_handle destroy_srq;
};

/* A validated control request. */
struct rdma_cmd {
	uint8_t code;	    /* enum virtio_rdma_cmd */
	uint32_t req_len;   /* request bytes after the header, as sent */
	uint32_t rsp_space; /* writable bytes after the status byte */
	union rdma_cmd_args u;
};

/* Responses, member named after the command (MR commands share `mr`). */
union rdma_cmd_rsp {
	struct virtio_rdma_port_attr query_port;
	struct virtio_rdma_rsp_create_cq create_cq;
	struct virtio_rdma_rsp_create_pd create_pd;
	struct virtio_rdma_rsp_mr mr;
	struct virtio_rdma_rsp_create_qp create_qp;
	struct virtio_rdma_qp_attr query_qp;
	struct virtio_rdma_rsp_query_pkey query_pkey;
	struct virtio_rdma_rsp_create_srq create_srq;
	struct virtio_rdma_rsp_query_srq query_srq;
};

/*
 * Decodes one control chain.
 *   out, out_len: the device-readable bytes of the chain, gathered flat
 *                 (header first);
 *   first_len:    length of the chain's first readable element, which must
 *                 be the 1-byte header alone;
 *   in_len:       total device-writable bytes (status + response space).
 * Returns 0 and fills *ret_cmd, or a negative errno with *why filled and
 * *ret_cmd untouched:
 *   -ENOBUFS     no writable byte: no status can be written;
 *   -EBADMSG     no header or a header element that is not 1 byte;
 *   -EOPNOTSUPP  unknown command code, or a command rdmagate refuses;
 *   -EINVAL      request shorter than documented, or a field out of range;
 *   -ENOSPC      response space smaller than the response.
 * All but -ENOBUFS are answered with rdma_cmd_encode_error().
 */
int rdma_cmd_decode(const void *out, size_t out_len, size_t first_len,
		    size_t in_len, struct rdma_cmd *ret_cmd,
		    struct reason *why);

/* "CREATE_CQ"; "UNKNOWN" for codes not in the table. */
const char *rdma_cmd_name(uint32_t code);

/*
 * Response bytes (after the status) a successful `code` writes into
 * rsp_space writable bytes: the full response, or for CREATE_QP the
 * Profile A 4-byte prefix when only that fits. 0 for unknown codes.
 */
size_t rdma_cmd_rsp_len(uint32_t code, size_t rsp_space);

/*
 * Writes status 0 and the response of a decoded command into the
 * writable bytes `in` (in_len >= 1 + rsp_space of the decoded command).
 * Returns the used length (bytes written) or -ENOSPC.
 */
int rdma_cmd_encode_ok(const struct rdma_cmd *cmd,
		       const union rdma_cmd_rsp *rsp, void *in, size_t in_len);

/*
 * Writes the failure status for `err` (a negative errno) into in[0].
 * Returns the used length (1) or -ENOSPC when in_len is 0.
 */
int rdma_cmd_encode_error(int err, void *in, size_t in_len);

/* Status byte for a result: 0 for 0, else the errno clamped to 1..255. */
uint8_t rdma_cmd_status(int err);

#endif
