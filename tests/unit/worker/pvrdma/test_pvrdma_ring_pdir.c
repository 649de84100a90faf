// SPDX-License-Identifier: MIT
/* PVRDMA ring index math and page directory walks on hostile values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "worker/pvrdma/pdir.h"
#include "worker/pvrdma/ring.h"
#include "fake_ram.h"

static const struct pvrdma_pdir_ops ram_ops = { .read_gpa = fake_ram_read };

static void test_ring_empty_full_and_wrap(void **state)
{
	uint32_t slot = 99, t = 0, h = 0, i;

	(void)state;
	assert_int_equal(pvrdma_ring_has_data(t, h, 4, &slot), 0);
	assert_int_equal(pvrdma_ring_has_space(t, h, 4, &slot), 1);
	assert_int_equal(slot, 0);
	for (i = 0; i < 4; i++)
		t = pvrdma_idx_inc(t, 4);
	/* four entries: full, tail is head with the wrap bit flipped */
	assert_int_equal(t, 4);
	assert_int_equal(pvrdma_ring_has_space(t, h, 4, &slot), 0);
	assert_int_equal(pvrdma_ring_has_data(t, h, 4, &slot), 1);
	assert_int_equal(slot, 0);
	for (i = 0; i < 7; i++)
		h = pvrdma_idx_inc(h, 4);
	/* 7 increments of a 4-ring: index 7, slot 3 */
	assert_int_equal(h, 7);
	assert_int_equal(pvrdma_idx_inc(7, 4), 0);
}

static void test_ring_hostile_indices_refused(void **state)
{
	uint32_t slot = 1234;

	(void)state;
	/* CVE-2018-20216: an index outside [0, 2N) must not loop or index */
	assert_int_equal(pvrdma_ring_has_data(8, 0, 4, &slot), -EINVAL);
	assert_int_equal(pvrdma_ring_has_data(0, 0xffffffffu, 4, &slot),
			 -EINVAL);
	assert_int_equal(pvrdma_ring_has_space(0x80000000u, 0, 4, &slot),
			 -EINVAL);
	assert_int_equal(slot, 1234);
	/* ring sizes that are empty, not powers of two or too big */
	assert_false(pvrdma_ring_size_ok(0));
	assert_false(pvrdma_ring_size_ok(1536));
	assert_false(pvrdma_ring_size_ok(1u << 25));
	assert_false(pvrdma_ring_size_ok(1u << 31));
	assert_int_equal(pvrdma_ring_has_space(0, 0, 1u << 31, &slot), -EINVAL);
	assert_false(pvrdma_idx_valid(0, 0));
	assert_int_equal(pvrdma_ring_has_data(0, 0, 0, &slot), -EINVAL);
}

/* The driver's index math, as vmw_pvrdma's pvrdma_ring.h has it. */
static int drv_valid(uint32_t idx, uint32_t n)
{
	return (idx & ~((n << 1) - 1)) == 0;
}

static uint32_t drv_inc(uint32_t idx, uint32_t n)
{
	return (idx + 1) & ((n << 1) - 1);
}

/*
 * The driver's async ring: 3 pages of 8-byte events, 1536 entries to the
 * driver, 512 to the device. The device produces with its math, the
 * driver consumes with its own: they stay in step, every index the
 * device writes is valid to the driver, no unread event is overwritten.
 */
static void test_ring_of_1536_stays_in_step(void **state)
{
	const uint32_t n = 1536, s = n & -n;
	uint32_t t = 0, h = 0, slot, produced = 0, consumed = 0, i;
	uint32_t owner[1536], fulls = 0;
	int r;

	(void)state;
	assert_int_equal(s, 512);
	memset(owner, 0xff, sizeof(owner));
	for (i = 0; i < 20000; i++) {
		if ((i / 700) % 2 == 0) { /* device produces */
			r = pvrdma_ring_has_space(t, h, s, &slot);
			assert_true(r >= 0);
			if (r == 0) {
				fulls++;
				continue;
			}
			assert_int_equal(owner[slot], 0xffffffffu);
			owner[slot] = produced++;
			t = pvrdma_idx_inc(t, s);
			assert_true(drv_valid(t, n));
		} else if (i % 3 == 0 && t != h) { /* driver consumes */
			assert_true(drv_valid(h, n));
			slot = h & (n - 1);
			assert_int_equal(owner[slot], consumed++);
			owner[slot] = 0xffffffffu;
			h = drv_inc(h, n);
		}
	}
	/* the ring filled up (512 unread) many times over */
	assert_true(fulls > 1000);
	assert_true(produced > 3000);
	assert_true(consumed + 512 >= produced);
}

static void test_pdir_walk_two_tables(void **state)
{
	struct fake_ram r;
	struct pvrdma_pages p;
	struct reason why;
	uint64_t dir, gpa;

	(void)state;
	assert_int_equal(fake_ram_init(&r, 8), 0);
	dir = fake_ram_pdir(&r, 0, 1, 3, 600); /* data pages are fake GPAs */
	assert_int_equal(
		pvrdma_pdir_walk(dir, 600, 1024, &ram_ops, &r, &p, &why), 0);
	assert_int_equal(p.n, 600);
	assert_int_equal(p.gpa[0], fake_ram_gpa(3));
	assert_int_equal(p.gpa[599], fake_ram_gpa(602));
	/* only what 600 pages need: 2 directory entries + 600 entries */
	assert_int_equal(r.reads, (2 + 600) * 8);
	assert_int_equal(pvrdma_pages_gpa(&p, 4096 * 512 + 16, 64, &gpa), 0);
	assert_int_equal(gpa, fake_ram_gpa(3 + 512) + 16);
	/* no access across a page or past the object */
	assert_int_equal(pvrdma_pages_gpa(&p, 4090, 8, &gpa), -ERANGE);
	assert_int_equal(pvrdma_pages_gpa(&p, 600ull * 4096, 1, &gpa), -ERANGE);
	pvrdma_pages_release(&p);
	fake_ram_free(&r);
}

static void test_pdir_counts_bounded_before_reading(void **state)
{
	struct fake_ram r;
	struct pvrdma_pages p = { NULL, 77 };
	struct reason why;
	uint64_t dir;

	(void)state;
	assert_int_equal(fake_ram_init(&r, 4), 0);
	dir = fake_ram_pdir(&r, 0, 1, 2, 2);
	/* CVE-2018-20125 / CVE-2023-1544: huge page counts, nothing read */
	assert_int_equal(pvrdma_pdir_walk(dir, 0, 64, &ram_ops, &r, &p, &why),
			 -EINVAL);
	assert_int_equal(pvrdma_pdir_walk(dir, 65, 64, &ram_ops, &r, &p, &why),
			 -EINVAL);
	assert_int_equal(pvrdma_pdir_walk(dir, UINT32_MAX, UINT32_MAX, &ram_ops,
					  &r, &p, &why),
			 -EINVAL);
	assert_int_equal(r.reads, 0);
	assert_int_equal(p.n, 77);
	assert_non_null(strstr(why.msg, "pages"));
	fake_ram_free(&r);
}

static void test_pdir_bad_entries_refused(void **state)
{
	struct fake_ram r;
	struct pvrdma_pages p = { NULL, 77 };
	struct reason why;
	uint64_t dir;

	(void)state;
	assert_int_equal(fake_ram_init(&r, 4), 0);
	/* directory not a page, outside RAM */
	assert_int_equal(pvrdma_pdir_walk(0, 1, 8, &ram_ops, &r, &p, &why),
			 -EINVAL);
	assert_int_equal(pvrdma_pdir_walk(fake_ram_gpa(1) + 8, 1, 8, &ram_ops,
					  &r, &p, &why),
			 -EINVAL);
	assert_int_equal(pvrdma_pdir_walk(fake_ram_gpa(100), 1, 8, &ram_ops, &r,
					  &p, &why),
			 -EFAULT);
	dir = fake_ram_pdir(&r, 0, 1, 2, 2);
	/* a table outside guest memory (CVE-2021-3582 is an MR page run
	 * past a region's end: unit test backend-mr-edge) */
	fake_ram_put64(&r, dir, fake_ram_gpa(1000));
	assert_int_equal(pvrdma_pdir_walk(dir, 2, 8, &ram_ops, &r, &p, &why),
			 -EFAULT);
	/* unaligned, zero and wrapping page entries */
	fake_ram_put64(&r, dir, fake_ram_gpa(1));
	fake_ram_put64(&r, fake_ram_gpa(1) + 8, 0x1234);
	assert_int_equal(pvrdma_pdir_walk(dir, 2, 8, &ram_ops, &r, &p, &why),
			 -EINVAL);
	fake_ram_put64(&r, fake_ram_gpa(1) + 8, 0);
	assert_int_equal(pvrdma_pdir_walk(dir, 2, 8, &ram_ops, &r, &p, &why),
			 -EINVAL);
	fake_ram_put64(&r, fake_ram_gpa(1) + 8, 0xfffffffffffff000ull);
	assert_int_equal(pvrdma_pdir_walk(dir, 2, 8, &ram_ops, &r, &p, &why),
			 -EINVAL);
	assert_non_null(strstr(why.msg, "entry 1"));
	assert_int_equal(p.n, 77);
	fake_ram_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring_empty_full_and_wrap),
		cmocka_unit_test(test_ring_hostile_indices_refused),
		cmocka_unit_test(test_ring_of_1536_stays_in_step),
		cmocka_unit_test(test_pdir_walk_two_tables),
		cmocka_unit_test(test_pdir_counts_bounded_before_reading),
		cmocka_unit_test(test_pdir_bad_entries_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
