// SPDX-License-Identifier: MIT
/* The backend's MR layout from a flat page list (PVRDMA's page directory). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "worker/backend/mr_layout.h"

#define PG 4096ull

static void test_contiguous_pages_are_one_run(void **state)
{
	uint64_t pages[3] = { 0x10000, 0x11000, 0x12000 };
	struct rdma_mr_layout l;
	struct reason why;

	assert_int_equal(rdma_mr_layout_from_pages(pages, 3, 0x10, 2 * PG,
						   0x7f0000000010, &l, &why),
			 0);
	assert_int_equal(l.nruns, 1);
	assert_int_equal(l.runs[0].gpa, 0x10000);
	assert_int_equal(l.runs[0].first_page, 0);
	assert_int_equal(l.runs[0].npages, 3);
	assert_int_equal(l.npages, 3);
	assert_int_equal(l.length, 2 * PG);
	assert_int_equal(l.virt_addr, 0x7f0000000010);
	rdma_mr_layout_release(&l);
	assert_null(l.runs);
}

static void test_scattered_pages_split_runs(void **state)
{
	uint64_t pages[4] = { 0x20000, 0x10000, 0x11000, 0x40000 };
	struct rdma_mr_layout l;
	struct reason why;

	assert_int_equal(
		rdma_mr_layout_from_pages(pages, 4, 0, 4 * PG, 0, &l, &why), 0);
	assert_int_equal(l.nruns, 3);
	assert_int_equal(l.runs[1].gpa, 0x10000);
	assert_int_equal(l.runs[1].first_page, 1);
	assert_int_equal(l.runs[1].npages, 2);
	assert_int_equal(l.runs[2].first_page, 3);
	rdma_mr_layout_release(&l);
}

static void test_bad_geometry_refused(void **state)
{
	uint64_t pages[2] = { 0x10000, 0x11000 };
	struct rdma_mr_layout l = { .nruns = 77 };
	struct reason why;

	/* length 0 */
	assert_int_equal(rdma_mr_layout_from_pages(pages, 1, 0, 0, 0, &l, &why),
			 -EINVAL);
	/* 2 pages for 1 page of data */
	assert_int_equal(
		rdma_mr_layout_from_pages(pages, 2, 0, PG, 0, &l, &why),
		-EINVAL);
	/* offset 1 + 4 KiB spills into a second page that is not given */
	assert_int_equal(
		rdma_mr_layout_from_pages(pages, 1, 1, PG, 0, &l, &why),
		-EINVAL);
	/* iova + length wraps */
	assert_int_equal(rdma_mr_layout_from_pages(pages, 1, 0, 16,
						   UINT64_MAX - 8, &l, &why),
			 -EINVAL);
	/* a huge length must not wrap the page count */
	assert_int_equal(
		rdma_mr_layout_from_pages(pages, 1, 0, UINT64_MAX, 0, &l, &why),
		-EINVAL);
	assert_int_equal(l.nruns, 77); /* untouched */
}

static void test_bad_pages_refused(void **state)
{
	uint64_t zero[2] = { 0x10000, 0 };
	uint64_t unaligned[2] = { 0x10000, 0x11008 };
	uint64_t wrapping[1] = { UINT64_MAX & ~(PG - 1) };
	struct rdma_mr_layout l;
	struct reason why;

	assert_int_equal(
		rdma_mr_layout_from_pages(zero, 2, 0, 2 * PG, 0, &l, &why),
		-EINVAL);
	assert_non_null(strstr(why.msg, "page 1"));
	assert_int_equal(
		rdma_mr_layout_from_pages(unaligned, 2, 0, 2 * PG, 0, &l, &why),
		-EINVAL);
	assert_int_equal(
		rdma_mr_layout_from_pages(wrapping, 1, 0, PG, 0, &l, &why),
		0); /* the last page of the space is a page */
	rdma_mr_layout_release(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_contiguous_pages_are_one_run),
		cmocka_unit_test(test_scattered_pages_split_runs),
		cmocka_unit_test(test_bad_geometry_refused),
		cmocka_unit_test(test_bad_pages_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
