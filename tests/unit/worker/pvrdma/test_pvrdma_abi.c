// SPDX-License-Identifier: MIT
/*
 * common/pvrdma_abi.h against the kernel's uapi header field by field, and
 * the device-side facts the driver relies on.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "common/pvrdma_abi.h"
#include "layout.h"

static const size_t layout_ours[] = { PVRDMA_LAYOUT_LIST(PVRDMA_LAYOUT_ENTRY) };

static void test_uapi_layout_matches_the_kernel(void **state)
{
	size_t i, n = sizeof(layout_ours) / sizeof(layout_ours[0]);

	(void)state;
	assert_int_equal(n, pvrdma_layout_uapi_count);
	for (i = 0; i < n; i++) {
		if (layout_ours[i] != pvrdma_layout_uapi[i])
			fail_msg("layout entry %zu: ours %zu, kernel %zu", i,
				 layout_ours[i], pvrdma_layout_uapi[i]);
	}
}

static void test_response_codes(void **state)
{
	(void)state;
	/* The driver compares hdr.ack with these (pvrdma_dev_api.h). */
	assert_int_equal(PVRDMA_CMD_RESP(PVRDMA_CMD_QUERY_PORT), 0x80000000u);
	assert_int_equal(PVRDMA_CMD_RESP(PVRDMA_CMD_CREATE_QP), 0x80000009u);
	assert_int_equal(PVRDMA_CMD_RESP(PVRDMA_CMD_DESTROY_SRQ), 0x80000014u);
	assert_int_equal(PVRDMA_CMD_MAX, 21);
}

static void test_gos_info_packing(void **state)
{
	uint32_t v = PVRDMA_GOS_INFO_MAKE(PVRDMA_GOS_BITS_64,
					  PVRDMA_GOS_TYPE_LINUX, 0x0605);

	(void)state;
	assert_int_equal(PVRDMA_GOS_INFO_BITS(v), PVRDMA_GOS_BITS_64);
	assert_int_equal(PVRDMA_GOS_INFO_TYPE(v), PVRDMA_GOS_TYPE_LINUX);
	assert_int_equal(PVRDMA_GOS_INFO_VER(v), 0x0605);
	/* The kernel's bitfield order: bits:2 at bit 0, type:4 at bit 2. */
	assert_int_equal(v & 0x3f, 2 | (1 << 2));
}

static void test_pdir_geometry(void **state)
{
	(void)state;
	assert_int_equal(PVRDMA_PAGE_DIR_MAX_PAGES, 512 * 512);
	assert_int_equal(PVRDMA_PAGE_DIR_TABLE(511u), 0);
	assert_int_equal(PVRDMA_PAGE_DIR_TABLE(512u), 1);
	assert_int_equal(PVRDMA_PAGE_DIR_PAGE(513u), 1);
	assert_int_equal(PVRDMA_BAR2_UAR_SIZE / PVRDMA_PAGE_SIZE,
			 PVRDMA_UAR_PAGES);
	/* The driver's UAR allocator wants a power of two. */
	assert_int_equal(PVRDMA_UAR_PAGES & (PVRDMA_UAR_PAGES - 1), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_uapi_layout_matches_the_kernel),
		cmocka_unit_test(test_response_codes),
		cmocka_unit_test(test_gos_info_packing),
		cmocka_unit_test(test_pdir_geometry),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
