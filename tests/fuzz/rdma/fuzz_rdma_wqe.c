// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the send/receive element decoders and the CQE
 * encoder. Input: [mode u8] [max_sge u8] [max_inline u16 LE] [element].
 * mode bit 0: receive element; bits 1..3: the QP type. The element is
 * copied to a buffer of exactly its size, so that ASan reports any read
 * past the descriptor.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "worker/virtio_rdma/wqe.h"
#include "tests/fuzz/fuzz_check.h"

static uint64_t sge_sum(const struct virtio_rdma_sge *sge, uint32_t n)
{
	uint64_t total = 0;
	uint32_t i;

	for (i = 0; i < n; i++)
		total += sge[i].length;
	return total;
}

static void send_one(const uint8_t *buf, size_t len,
		     const struct rdma_sq_limits *lim)
{
	struct reason why = { "" };
	struct rdma_send_wr wr;
	int r = rdma_sq_wqe_decode(buf, len, lim, &wr, &why);

	if (r) {
		FUZZ_CHECK(r < 0 && why.msg[0] != '\0');
		return;
	}
	FUZZ_CHECK(strcmp(rdma_wr_opcode_name(wr.opcode), "UNKNOWN") != 0);
	FUZZ_CHECK(wr.num_sge <= lim->max_send_sge &&
		   wr.num_sge <= VIRTIO_RDMA_MAX_SGE);
	FUZZ_CHECK(sizeof(struct virtio_rdma_sq_wqe) +
			   (uint64_t)wr.num_sge *
				   sizeof(struct virtio_rdma_sge) <=
		   len);
	if (wr.inline_data) {
		FUZZ_CHECK(wr.num_sge == 0 && wr.inline_len <= lim->max_inline);
		FUZZ_CHECK(wr.inline_data + wr.inline_len == buf + len);
		FUZZ_CHECK(wr.total_len == wr.inline_len);
	} else {
		FUZZ_CHECK(wr.total_len == sge_sum(wr.sge, wr.num_sge));
	}
	FUZZ_CHECK(wr.total_len <= UINT32_MAX);
}

static void recv_one(const uint8_t *buf, size_t len, uint32_t max_sge)
{
	struct reason why = { "" };
	struct rdma_recv_wr wr;
	int r = rdma_rq_wqe_decode(buf, len, max_sge, &wr, &why);

	if (r) {
		FUZZ_CHECK(r < 0 && why.msg[0] != '\0');
		return;
	}
	FUZZ_CHECK(wr.num_sge <= max_sge && wr.num_sge <= VIRTIO_RDMA_MAX_SGE);
	FUZZ_CHECK(16 + (uint64_t)wr.num_sge * 16 <= len);
	FUZZ_CHECK(wr.total_len == sge_sum(wr.sge, wr.num_sge));
}

/* The CQE encoder never writes past 48 bytes and refuses bad values. */
static void cqe_one(const uint8_t *data, size_t size)
{
	struct rdma_completion c;
	uint8_t out[64];
	int r;

	memset(&c, 0, sizeof(c));
	memcpy(&c, data, size < sizeof(c) ? size : sizeof(c));
	memset(out, 0xab, sizeof(out));
	r = rdma_cqe_encode(&c, out, 48);
	FUZZ_CHECK(r == 48 || r == -EINVAL);
	FUZZ_CHECK(out[48] == 0xab);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rdma_sq_limits lim;
	uint8_t *buf;
	size_t len;

	if (size < 4)
		return 0;
	lim.qp_type = (data[0] >> 1) & 7;
	lim.max_send_sge = data[1];
	lim.max_inline = (uint32_t)(data[2] | data[3] << 8);
	len = size - 4;
	buf = malloc(len ? len : 1);
	if (!buf)
		return 0;
	memcpy(buf, data + 4, len);
	if (data[0] & 1)
		recv_one(buf, len, lim.max_send_sge);
	else
		send_one(buf, len, &lim);
	cqe_one(data + 4, len);
	free(buf);
	return 0;
}
