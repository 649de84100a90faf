// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the MR page-table walk over a fake guest RAM made of
 * the input itself. Input: [npages u16] [page offset u16] [shrink u8]
 * [flags u8] [RAM bytes, at GPA 0x1000]. Declared RAM extends far past
 * the backed bytes so that data pages need not be backed. A successful
 * walk is checked page by page against a direct table lookup.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "common/virtio_rdma.h"
#include "worker/virtio_rdma/mr_pt.h"
#include "tests/fuzz/fuzz_check.h"

#define PG	 4096ull
#define RAM_BASE 0x1000ull
#define RAM_LEN	 (16ull << 30)

static int ram_check(void *ctx, uint64_t gpa, uint64_t len)
{
	if (gpa < RAM_BASE || gpa - RAM_BASE > RAM_LEN ||
	    len > RAM_LEN - (gpa - RAM_BASE))
		return -EFAULT;
	return 0;
}

static void verify(const struct fuzz_ram *r, const struct rdma_mr_pt_args *a,
		   const struct rdma_mr_layout *l)
{
	uint64_t covered = 0, l2, gpa, iova;
	uint32_t i, p;

	for (i = 0; i < l->nruns; i++) {
		FUZZ_CHECK(l->runs[i].first_page == covered);
		FUZZ_CHECK(l->runs[i].npages > 0 && l->runs[i].gpa % PG == 0);
		covered += l->runs[i].npages;
	}
	FUZZ_CHECK(covered == a->npages);
	for (p = 0; p < a->npages; p++) {
		l2 = fuzz_ram_u64(r, a->root + 8ull * (p / 512));
		/* IOVA of byte 0 of page p (byte start & 0xfff of page 0). */
		iova = a->virt_addr + (uint64_t)p * PG -
		       (p ? a->start % PG : 0);
		if (rdma_mr_iova_to_gpa(l, iova, &gpa) != 0) {
			FUZZ_CHECK(iova - a->virt_addr >= a->length);
			continue;
		}
		FUZZ_CHECK(gpa == fuzz_ram_u64(r, l2 + 8ull * (p % 512)) +
					  (p ? 0 : a->start % PG));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rdma_mr_pt_ops ops = { fuzz_ram_read, ram_check };
	struct reason why = { "" };
	struct rdma_mr_pt_args a;
	struct rdma_mr_layout l;
	struct fuzz_ram ram = { .base = RAM_BASE };
	uint64_t off, max_len, span;
	int r;

	if (size < 6)
		return 0;
	memset(&a, 0, sizeof(a));
	a.npages = 1 + (uint32_t)(data[0] | data[1] << 8) % 2048;
	off = (uint64_t)(data[2] | data[3] << 8) & (PG - 1);
	a.start = 0x7f0000000000ull + off;
	max_len = a.npages * PG - off;
	span = max_len -
	       ((a.npages - 1) * PG > off ? (a.npages - 1) * PG - off : 0);
	a.length = max_len - data[4] % span;
	if (data[5] & 1)
		a.npages ^= 1; /* inconsistent on purpose */
	a.root = RAM_BASE + PG * ((data[5] >> 1) & 7);
	a.virt_addr = data[5] & 0x10 ? a.start : 0x10000000ull + off;
	ram.mem = data + 6;
	ram.len = size - 6;
	r = rdma_mr_pt_walk(&a, &ops, &ram, &l, &why);
	if (r) {
		FUZZ_CHECK(r < 0 && why.msg[0] != '\0');
		return 0;
	}
	verify(&ram, &a, &l);
	rdma_mr_layout_release(&l);
	return 0;
}
