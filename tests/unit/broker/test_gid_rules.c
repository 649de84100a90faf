// SPDX-License-Identifier: MIT
/*
 * The broker's GID_ADD admission (broker/gid_rules.c): another VM's
 * address, the per-VM limit, and one pending add per VM on both the new
 * address and the re-add branch.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "broker/broker.h"
#include "broker/gid_rules.h"

#define N 8

static struct gid_entry table[N];

static struct gid_entry *put(unsigned int i, const char *vm, uint8_t last,
			     bool pending)
{
	struct gid_entry *e = &table[i];

	memset(e, 0, sizeof(*e));
	e->used = true;
	e->pending = pending;
	snprintf(e->vm, sizeof(e->vm), "%s", vm);
	e->family = AF_INET;
	e->addr[0] = 10;
	e->addr[3] = last;
	return e;
}

static const uint8_t *v4(uint8_t last)
{
	static uint8_t a[16];

	memset(a, 0, sizeof(a));
	a[0] = 10;
	a[3] = last;
	return a;
}

static enum gid_verdict admit(const char *vm, uint8_t last, unsigned int max,
			      const struct gid_entry **e)
{
	return gid_rules_admit(table, N, vm, AF_INET, v4(last), max, e);
}

static int setup(void **state)
{
	(void)state;
	memset(table, 0, sizeof(table));
	return 0;
}

static void test_new_and_owned(void **state)
{
	const struct gid_entry *e;
	struct gid_entry *a1;

	(void)state;
	assert_int_equal(admit("a", 1, 4, &e), GID_NEW);
	assert_null(e);
	a1 = put(0, "a", 1, false);
	assert_int_equal(admit("a", 1, 4, &e), GID_OWNED);
	assert_ptr_equal(e, a1);
	assert_int_equal(admit("b", 1, 4, &e), GID_OTHER_VM);
	assert_ptr_equal(e, a1);
	assert_int_equal(admit("b", 2, 4, &e), GID_NEW);
}

static void test_limit(void **state)
{
	const struct gid_entry *e;

	(void)state;
	put(0, "a", 1, false);
	put(1, "a", 2, false);
	assert_int_equal(admit("a", 3, 2, &e), GID_VM_FULL);
	/* re-adding one it owns is no new address */
	assert_int_equal(admit("a", 2, 2, &e), GID_OWNED);
	assert_int_equal(admit("b", 3, 2, &e), GID_NEW);
}

static void test_one_pending(void **state)
{
	const struct gid_entry *e;

	(void)state;
	put(0, "a", 1, true);
	put(1, "a", 2, false);
	put(2, "b", 3, false);
	assert_int_equal(admit("a", 1, 4, &e), GID_SAME_PENDING);
	assert_int_equal(admit("a", 5, 4, &e), GID_OTHER_PENDING);
	/* the re-add branch (issue 15 item 5): 10.0.0.2 is a's, 10.0.0.1
	 * is pending, so no second poll starts */
	assert_int_equal(admit("a", 2, 4, &e), GID_OTHER_PENDING);
	/* another VM is not held up by a's pending add */
	assert_int_equal(admit("b", 3, 4, &e), GID_OWNED);
	assert_int_equal(admit("b", 6, 4, &e), GID_NEW);
	/* nor may a take b's address while busy */
	assert_int_equal(admit("a", 3, 4, &e), GID_OTHER_VM);
}

static void test_families(void **state)
{
	const struct gid_entry *e;
	uint8_t a6[16] = { 10, 0, 0, 1 };

	(void)state;
	put(0, "a", 1, false);
	/* an IPv6 address whose first bytes are an owned IPv4 one */
	assert_int_equal(gid_rules_admit(table, N, "b", AF_INET6, a6, 4, &e),
			 GID_NEW);
	table[0].used = false;
	assert_int_equal(admit("b", 1, 4, &e), GID_NEW);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_new_and_owned, setup),
		cmocka_unit_test_setup(test_limit, setup),
		cmocka_unit_test_setup(test_one_pending, setup),
		cmocka_unit_test_setup(test_families, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
