// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the control-command decoder and response encoder.
 * Input: [first_len selector u8] [writable length u16 LE] [chain bytes].
 * The chain bytes are copied to a buffer of exactly their size, so that
 * ASan reports any read past them.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "worker/virtio_rdma/cmd.h"
#include "tests/fuzz/fuzz_check.h"

static void check_reason(const struct reason *why)
{
	size_t n = strnlen(why->msg, sizeof(why->msg));

	FUZZ_CHECK(n > 0 && n < sizeof(why->msg));
}

static void encode(const struct rdma_cmd *cmd, size_t in_len,
		   const uint8_t *fill, size_t fill_len)
{
	union rdma_cmd_rsp rsp;
	uint8_t *in = malloc(in_len);
	int r;

	if (!in)
		return;
	memset(&rsp, 0, sizeof(rsp));
	memcpy(&rsp, fill, fill_len < sizeof(rsp) ? fill_len : sizeof(rsp));
	r = rdma_cmd_encode_ok(cmd, &rsp, in, in_len);
	FUZZ_CHECK(r >= 1 && (size_t)r <= in_len);
	FUZZ_CHECK((size_t)r == 1 + rdma_cmd_rsp_len(cmd->code, in_len - 1));
	FUZZ_CHECK(in[0] == 0);
	free(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct reason why = { "" };
	struct rdma_cmd cmd;
	size_t first_len, in_len, out_len;
	uint8_t *out, status[1];
	int r;

	if (size < 3)
		return 0;
	first_len = data[0] < 0xf0 ? 1 : data[0] - 0xf0;
	in_len = (size_t)(data[1] | data[2] << 8) % 1024;
	out_len = size - 3;
	out = malloc(out_len ? out_len : 1);
	if (!out)
		return 0;
	memcpy(out, data + 3, out_len);
	r = rdma_cmd_decode(out, out_len, first_len, in_len, &cmd, &why);
	if (r == 0) {
		FUZZ_CHECK(cmd.code == out[0] && first_len == 1);
		FUZZ_CHECK(cmd.req_len == out_len - 1);
		FUZZ_CHECK(strcmp(rdma_cmd_name(cmd.code), "UNKNOWN") != 0);
		encode(&cmd, in_len, data + 3, out_len);
	} else {
		FUZZ_CHECK(r < 0);
		check_reason(&why);
		if (in_len) {
			FUZZ_CHECK(rdma_cmd_encode_error(r, status, 1) == 1);
			FUZZ_CHECK(status[0] != 0);
		} else {
			FUZZ_CHECK(r == -ENOBUFS);
		}
	}
	free(out);
	return 0;
}
