// SPDX-License-Identifier: MIT
/*
 * CVE-2018-20123's class: QEMU's pvrdma_realize() leaked what it had
 * allocated when a later step failed.  Here the PVRDMA function's create
 * (pvrdma_fn_ops.create, the realize of a vfio-user connection) fails at
 * each of its allocations in turn (calloc wrapped at link time), on the
 * fake backend: each failure is -ENOMEM with the output untouched, and
 * every block it took is freed again (calloc and free wrapped: exact,
 * where the heap's own counters see the allocator's caches; under
 * AddressSanitizer LeakSanitizer checks again at exit).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "worker/pvrdma/pvrdma.h"
#include "fake_be.h"
#include "fake_ram.h"

void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);
void __real_free(void *p);
void __wrap_free(void *p);

static int calls, fail_at; /* fail_at: the n-th call fails (1-based) */
/* Blocks the code under test has from calloc and has not freed. */
static void *live[64];

void *__wrap_calloc(size_t n, size_t size)
{
	void *p;
	unsigned int i;

	if (fail_at && ++calls == fail_at)
		return NULL;
	p = __real_calloc(n, size);
	for (i = 0; p && i < 64; i++)
		if (!live[i]) {
			live[i] = p;
			break;
		}
	return p;
}

void __wrap_free(void *p)
{
	unsigned int i;

	for (i = 0; p && i < 64; i++)
		if (live[i] == p)
			live[i] = NULL;
	__real_free(p);
}

static unsigned int live_blocks(void)
{
	unsigned int i, n = 0;

	for (i = 0; i < 64; i++)
		n += live[i] != NULL;
	return n;
}

static void test_every_allocation_failure_leaks_nothing(void **state)
{
	static struct fake_ram ram;
	static struct pci_fn fn;
	struct pvrdma_cfg cfg;
	struct dev_env env = { .cfg = &cfg };
	void *priv;
	int n = 0;

	(void)state;
	assert_int_equal(fake_ram_init(&ram, 8), 0);
	fake_fn_init(&fn, &ram);
	memset(live, 0, sizeof(live)); /* the fake RAM is the test's */
	memset(&cfg, 0, sizeof(cfg));
	cfg.be.gid_tbl_len = 16;
	/* the device, the backend, its CQ, QP and SRQ tables: 5 callocs */
	for (fail_at = 1; fail_at <= 5; fail_at++) {
		calls = 0;
		priv = (void *)&priv;
		assert_int_equal(pvrdma_fn_ops.create(&fn, &env, &priv),
				 -ENOMEM);
		assert_ptr_equal(priv, (void *)&priv); /* untouched */
		assert_true(calls >= fail_at);	       /* it was reached */
		if (live_blocks())
			fail_msg("create failing at calloc %d left %u "
				 "blocks behind",
				 fail_at, live_blocks());
		n++;
	}
	/* past the last allocation it works, and its destroy frees all */
	fail_at = 6;
	calls = 0;
	assert_int_equal(pvrdma_fn_ops.create(&fn, &env, &priv), 0);
	assert_int_equal(calls, 5); /* the count above is the whole path */
	assert_int_equal(live_blocks(), 5);
	pvrdma_fn_ops.destroy(priv);
	assert_int_equal(live_blocks(), 0);
	fail_at = 0;
	assert_int_equal(n, 5);
	fake_ram_free(&ram);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_allocation_failure_leaks_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
