// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: PVRDMA ring indices. Input: records of [nelems u32]
 * [tail u32] [head u32]; for each, the producer and consumer answers must
 * agree with a slow model, name a slot inside the ring, and stepping a
 * valid index must keep it valid. Then the WQE decoders on the rest.
 */
#include <stdint.h>
#include <string.h>

#include "worker/pvrdma/ring.h"
#include "worker/pvrdma/wqe.h"
#include "tests/fuzz/fuzz_check.h"

static void one(uint32_t n, uint32_t t, uint32_t h)
{
	uint32_t slot = 0xdeadbeef;
	int d = pvrdma_ring_has_data(t, h, n, &slot);
	int s;
	uint64_t cnt;

	if (!pvrdma_ring_size_ok(n) || (uint64_t)t >= 2ull * n ||
	    (uint64_t)h >= 2ull * n) {
		FUZZ_CHECK(d == -EINVAL);
		FUZZ_CHECK(pvrdma_ring_has_space(t, h, n, &slot) == -EINVAL);
		FUZZ_CHECK(slot == 0xdeadbeef);
		return;
	}
	cnt = ((uint64_t)t + 2ull * n - h) % (2ull * n);
	FUZZ_CHECK(d == (cnt != 0));
	if (d)
		FUZZ_CHECK(slot < n && slot == h % n);
	s = pvrdma_ring_has_space(t, h, n, &slot);
	FUZZ_CHECK(s == (cnt != n));
	if (s)
		FUZZ_CHECK(slot < n && slot == t % n);
	FUZZ_CHECK(pvrdma_idx_valid(pvrdma_idx_inc(t, n), n));
}

static void wqes(const uint8_t *data, size_t size)
{
	struct pvrdma_sq_limits lim = { BE_QPT_RC, 8, 16 };
	struct pvrdma_send s;
	struct pvrdma_recv r;
	struct reason why;
	uint64_t wr_id;

	if (size && (data[0] & 1))
		lim.qp_type = BE_QPT_UD;
	if (pvrdma_sq_wqe_decode(data, size, &lim, &s, &wr_id, &why) == 0)
		FUZZ_CHECK(s.wr.num_sge <= 8 && s.wr.sge == s.sge &&
			   sizeof(struct pvrdma_sq_wqe_hdr) +
					   16ull * s.wr.num_sge <=
				   size);
	if (pvrdma_rq_wqe_decode(data, size, 4, &r, &wr_id, &why) == 0)
		FUZZ_CHECK(r.wr.num_sge <= 4 &&
			   16 + 16ull * r.wr.num_sge <= size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t v[3];
	size_t off;

	for (off = 0; off + 12 <= size && off < 12 * 64; off += 12) {
		memcpy(v, data + off, 12);
		one(v[0], v[1], v[2]);
		/* the same indices on small rings, where collisions happen */
		one(1u << (v[0] % 25), v[1] % 64, v[2] % 64);
	}
	wqes(data, size);
	return 0;
}
