// SPDX-License-Identifier: MIT
/* MR page-table walk over a fake guest RAM: checks, bounds, coalescing. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/virtio_rdma.h"
#include "worker/virtio_rdma/mr_pt.h"

#define PG	  4096ull
#define RAM_BASE  0x100000ull  /* GPA of the backed bytes */
#define MEM_LEN	  (4ull << 20) /* backed: page tables live here */
#define RAM_LEN	  (4ull << 30) /* declared guest RAM */
#define L1_GPA	  RAM_BASE
#define L2_GPA(i) (RAM_BASE + PG * (1 + (i)))
#define DATA_BASE (RAM_BASE + (1ull << 30)) /* data pages: checked only */

struct fake_ram {
	uint8_t *mem;
	uint64_t bytes_read;
	unsigned reads;
};

static int fake_read(void *ctx, uint64_t gpa, void *buf, size_t len)
{
	struct fake_ram *r = ctx;

	if (gpa < RAM_BASE || gpa - RAM_BASE > MEM_LEN ||
	    len > MEM_LEN - (gpa - RAM_BASE))
		return -EFAULT;
	memcpy(buf, r->mem + (gpa - RAM_BASE), len);
	r->bytes_read += len;
	r->reads++;
	return 0;
}

static int fake_check(void *ctx, uint64_t gpa, uint64_t len)
{
	if (gpa < RAM_BASE || gpa - RAM_BASE > RAM_LEN ||
	    len > RAM_LEN - (gpa - RAM_BASE))
		return -EFAULT;
	return 0;
}

static const struct rdma_mr_pt_ops ops = { fake_read, fake_check };

static void put(struct fake_ram *r, uint64_t gpa, uint64_t val)
{
	memcpy(r->mem + (gpa - RAM_BASE), &val, sizeof(val));
}

typedef uint64_t (*page_gpa_fn)(uint32_t page);

/* Writes a two-level table for npages whose page i is at gpa_of(i). */
static void build(struct fake_ram *r, uint32_t npages, page_gpa_fn gpa_of)
{
	uint32_t i;

	for (i = 0; i < (npages + 511) / 512; i++)
		put(r, L1_GPA + 8 * i, L2_GPA(i));
	for (i = 0; i < npages; i++)
		put(r, L2_GPA(i / 512) + 8 * (i % 512), gpa_of(i));
}

static uint64_t contiguous(uint32_t page)
{
	return DATA_BASE + PG * page;
}

static uint64_t reversed(uint32_t page)
{
	return DATA_BASE + PG * (100 - page);
}

/* Pages 0-2 contiguous, 3 elsewhere, 4-5 contiguous again elsewhere. */
static uint64_t three_runs(uint32_t page)
{
	if (page < 3)
		return DATA_BASE + PG * page;
	if (page == 3)
		return DATA_BASE + PG * 50;
	return DATA_BASE + PG * (200 + page);
}

static int setup(void **state)
{
	struct fake_ram *r = calloc(1, sizeof(*r));

	if (!r)
		return -1;
	r->mem = calloc(1, MEM_LEN);
	if (!r->mem) {
		free(r);
		return -1;
	}
	*state = r;
	return 0;
}

static int teardown(void **state)
{
	struct fake_ram *r = *state;

	free(r->mem);
	free(r);
	return 0;
}

static struct rdma_mr_pt_args args_for(uint64_t start, uint64_t length)
{
	struct rdma_mr_pt_args a = {
		.root = L1_GPA,
		.start = start,
		.length = length,
		.virt_addr = start,
	};

	a.npages = (uint32_t)(((start & (PG - 1)) + length + PG - 1) / PG);
	return a;
}

static void walk_fail(struct fake_ram *r, const struct rdma_mr_pt_args *a,
		      int err, const char *msg)
{
	struct rdma_mr_layout l;
	struct reason why = { "" };

	memset(&l, 0x77, sizeof(l));
	assert_int_equal(rdma_mr_pt_walk(a, &ops, r, &l, &why), err);
	if (!strstr(why.msg, msg))
		fail_msg("reason \"%s\" lacks \"%s\"", why.msg, msg);
	assert_int_equal(l.nruns, 0x77777777); /* untouched */
}

static struct rdma_mr_layout walk_ok(struct fake_ram *r,
				     const struct rdma_mr_pt_args *a)
{
	struct rdma_mr_layout l;
	struct reason why = { "" };
	int ret = rdma_mr_pt_walk(a, &ops, r, &l, &why);

	if (ret)
		fail_msg("walk failed (%d): %s", ret, why.msg);
	return l;
}

static void test_single_page_mr_is_one_run(void **state)
{
	struct fake_ram *r = *state;
	struct rdma_mr_pt_args a = args_for(0x7f0000000100, 100);
	struct rdma_mr_layout l;

	build(r, 1, contiguous);
	l = walk_ok(r, &a);
	assert_int_equal(l.npages, 1);
	assert_int_equal(l.nruns, 1);
	assert_int_equal(l.runs[0].gpa, DATA_BASE);
	assert_int_equal(l.runs[0].npages, 1);
	rdma_mr_layout_release(&l);
}

static void test_contiguous_pages_coalesce_into_one_run(void **state)
{
	struct fake_ram *r = *state;
	struct rdma_mr_pt_args a = args_for(0x400000, 1000 * PG);
	struct rdma_mr_layout l;

	build(r, 1000, contiguous);
	l = walk_ok(r, &a);
	assert_int_equal(l.nruns, 1);
	assert_int_equal(l.runs[0].first_page, 0);
	assert_int_equal(l.runs[0].npages, 1000);
	rdma_mr_layout_release(&l);
}

static void test_non_contiguous_pages_give_several_runs(void **state)
{
	struct fake_ram *r = *state;
	struct rdma_mr_pt_args a = args_for(0x400000, 6 * PG);
	struct rdma_mr_layout l;

	build(r, 6, three_runs);
	l = walk_ok(r, &a);
	assert_int_equal(l.nruns, 3);
	assert_int_equal(l.runs[0].npages, 3);
	assert_int_equal(l.runs[1].first_page, 3);
	assert_int_equal(l.runs[1].gpa, DATA_BASE + 50 * PG);
	assert_int_equal(l.runs[1].npages, 1);
	assert_int_equal(l.runs[2].first_page, 4);
	assert_int_equal(l.runs[2].npages, 2);
	rdma_mr_layout_release(&l);

	a = args_for(0x400000, 40 * PG);
	build(r, 40, reversed);
	l = walk_ok(r, &a);
	assert_int_equal(l.nruns, 40);
	assert_int_equal(l.runs[39].gpa, DATA_BASE + 61 * PG);
	rdma_mr_layout_release(&l);
}

static void test_one_gib_mr_is_one_run(void **state)
{
	struct fake_ram *r = *state;
	struct rdma_mr_pt_args a = args_for(0x40000000, 1ull << 30);
	struct rdma_mr_layout l;

	assert_int_equal(a.npages, VIRTIO_RDMA_MR_MAX_PAGES);
	build(r, a.npages, contiguous);
	l = walk_ok(r, &a);
	assert_int_equal(l.nruns, 1);
	assert_int_equal(l.runs[0].npages, VIRTIO_RDMA_MR_MAX_PAGES);
	/* One L1 read and one read per L2 page, no more. */
	assert_int_equal(r->reads, 1 + 512);
	assert_int_equal(r->bytes_read, 4096 * 513);
	rdma_mr_layout_release(&l);
}

static void test_reads_bounded_by_npages(void **state)
{
	struct fake_ram *r = *state;
	struct rdma_mr_pt_args a = args_for(0x400000, 513 * PG);
	struct rdma_mr_layout l;

	build(r, 513, contiguous);
	/* Junk after what npages needs must never be read. */
	put(r, L1_GPA + 16, 0x13);
	put(r, L2_GPA(1) + 8, 0x13);
	l = walk_ok(r, &a);
	assert_int_equal(r->reads, 3);
	assert_int_equal(r->bytes_read, 16 + 4096 + 8);
	assert_int_equal(l.nruns, 1);
	rdma_mr_layout_release(&l);
}

static void test_npages_zero_refused(void **state)
{
	struct rdma_mr_pt_args a = args_for(0x400000, PG);

	a.npages = 0;
	walk_fail(*state, &a, -EINVAL, "npages 0 not in 1..262144");
}

static void test_npages_huge_refused(void **state)
{
	struct rdma_mr_pt_args a = args_for(0x400000, (1ull << 30) + PG);

	assert_int_equal(a.npages, VIRTIO_RDMA_MR_MAX_PAGES + 1);
	walk_fail(*state, &a, -EINVAL, "npages 262145 not in 1..262144");
	a.npages = UINT32_MAX;
	walk_fail(*state, &a, -EINVAL, "npages 4294967295");
	a = args_for(0, 1ull << 40);
	a.npages = 1;
	walk_fail(*state, &a, -EINVAL, "above 1 GiB");
}

static void test_npages_mismatch_refused(void **state)
{
	struct rdma_mr_pt_args a = args_for(0x400ff0, 32);

	assert_int_equal(a.npages, 2); /* crosses a page boundary */
	a.npages = 1;
	walk_fail(*state, &a, -EINVAL, "npages 1, but start and length span 2");
}

static void test_start_length_overflow_refused(void **state)
{
	struct rdma_mr_pt_args a = args_for(0x400000, PG);

	a.start = UINT64_MAX - 100;
	walk_fail(*state, &a, -EINVAL, "wraps");
	a = args_for(0x400000, PG);
	a.virt_addr = UINT64_MAX;
	walk_fail(*state, &a, -EINVAL, "virt_addr");
	a = args_for(0x400000, PG);
	a.length = 0;
	walk_fail(*state, &a, -EINVAL, "length 0");
}

static void test_root_unaligned_or_outside_ram_refused(void **state)
{
	struct rdma_mr_pt_args a = args_for(0x400000, PG);

	a.root = L1_GPA + 8;
	walk_fail(*state, &a, -EINVAL, "page table root");
	a.root = 0;
	walk_fail(*state, &a, -EINVAL, "page table root 0x0");
	a.root = RAM_BASE + MEM_LEN;
	walk_fail(*state, &a, -EFAULT, "level-1 page 0");
}

static void test_entry_outside_ram_refused(void **state)
{
	struct fake_ram *r = *state;
	struct rdma_mr_pt_args a = args_for(0x400000, 8 * PG);
	struct rdma_mr_layout l;

	build(r, 8, contiguous);
	put(r, L2_GPA(0) + 8 * 5, RAM_BASE + RAM_LEN);
	walk_fail(r, &a, -EFAULT, "pages 5..5");
	build(r, 8, contiguous);
	put(r, L2_GPA(0) + 8 * 7, RAM_BASE + RAM_LEN - PG);
	put(r, L2_GPA(0) + 8 * 6, RAM_BASE + RAM_LEN - 2 * PG);
	l = walk_ok(r, &a); /* the last pages of RAM are fine */
	assert_int_equal(l.nruns, 2);
	rdma_mr_layout_release(&l);
	a = args_for(0x400000, 8 * PG);
	build(r, 8, contiguous);
	put(r, L1_GPA, RAM_BASE + MEM_LEN + PG); /* RAM, but not backed */
	walk_fail(r, &a, -EFAULT, "level-2 page 0");
}

static void test_unaligned_entry_refused(void **state)
{
	struct fake_ram *r = *state;
	struct rdma_mr_pt_args a = args_for(0x400000, 8 * PG);

	build(r, 8, contiguous);
	put(r, L2_GPA(0) + 8 * 5, DATA_BASE + 8);
	walk_fail(r, &a, -EINVAL, "level-2 entry 5");
	build(r, 8, contiguous);
	put(r, L1_GPA, L2_GPA(0) + 0x10);
	walk_fail(r, &a, -EINVAL, "level-1 entry 0");
}

static void test_zero_or_wrapping_entry_refused(void **state)
{
	struct fake_ram *r = *state;
	struct rdma_mr_pt_args a = args_for(0x400000, 600 * PG);

	build(r, 600, contiguous);
	put(r, L2_GPA(1) + 8 * 3, 0);
	walk_fail(r, &a, -EINVAL, "level-2 entry 515 is 0x0");
	build(r, 600, contiguous);
	put(r, L2_GPA(0), 0xfffffffffffff000ull);
	walk_fail(r, &a, -EINVAL, "level-2 entry 0");
	build(r, 600, contiguous);
	put(r, L1_GPA + 8, 0);
	walk_fail(r, &a, -EINVAL, "level-1 entry 1 is 0x0");
}

static void test_translation_helpers(void **state)
{
	struct fake_ram *r = *state;
	struct rdma_mr_pt_args a = args_for(0x7f0000000100, 700 * PG);
	struct rdma_mr_layout l;
	struct rdma_mr_pt_pos pos;
	uint64_t gpa;

	a.virt_addr = 0x10000100; /* IOVA differs from the user VA */
	build(r, a.npages, three_runs);
	l = walk_ok(r, &a);
	assert_int_equal(l.npages, 701);

	assert_int_equal(rdma_mr_pt_locate(&l, 0x10000100, 1, &pos), 0);
	assert_int_equal(pos.page, 0);
	assert_int_equal(pos.in_page, 0x100);
	assert_int_equal(rdma_mr_iova_to_gpa(&l, 0x10000100, &gpa), 0);
	assert_int_equal(gpa, DATA_BASE + 0x100);

	/* First byte of page 3, which lies elsewhere. */
	assert_int_equal(rdma_mr_iova_to_gpa(&l, 0x10003000, &gpa), 0);
	assert_int_equal(gpa, DATA_BASE + 50 * PG);
	/* Page 600: level-1 index 1, level-2 index 88. */
	assert_int_equal(
		rdma_mr_pt_locate(&l, 0x10000000 + 600 * PG + 5, 1, &pos), 0);
	assert_int_equal(pos.l1, 1);
	assert_int_equal(pos.l2, 88);
	assert_int_equal(pos.in_page, 5);
	assert_int_equal(
		rdma_mr_iova_to_gpa(&l, 0x10000000 + 600 * PG + 5, &gpa), 0);
	assert_int_equal(gpa, DATA_BASE + (200 + 600) * PG + 5);

	/* Outside [virt_addr, virt_addr + length). */
	assert_int_equal(rdma_mr_iova_to_gpa(&l, 0x100000ff, &gpa), -ERANGE);
	assert_int_equal(rdma_mr_iova_to_gpa(&l, 0x10000100 + 700 * PG, &gpa),
			 -ERANGE);
	assert_int_equal(
		rdma_mr_pt_locate(&l, 0x10000100 + 700 * PG - 1, 1, &pos), 0);
	assert_int_equal(
		rdma_mr_pt_locate(&l, 0x10000100 + 700 * PG - 1, 2, &pos),
		-ERANGE);
	assert_int_equal(rdma_mr_pt_locate(&l, 0x10000100, UINT64_MAX, &pos),
			 -ERANGE);
	rdma_mr_layout_release(&l);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_single_page_mr_is_one_run),
		T(test_contiguous_pages_coalesce_into_one_run),
		T(test_non_contiguous_pages_give_several_runs),
		T(test_one_gib_mr_is_one_run),
		T(test_reads_bounded_by_npages),
		T(test_npages_zero_refused),
		T(test_npages_huge_refused),
		T(test_npages_mismatch_refused),
		T(test_start_length_overflow_refused),
		T(test_root_unaligned_or_outside_ram_refused),
		T(test_entry_outside_ram_refused),
		T(test_unaligned_entry_refused),
		T(test_zero_or_wrapping_entry_refused),
		T(test_translation_helpers),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
