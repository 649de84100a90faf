// SPDX-License-Identifier: MIT
/*
 * The virtio-rdma device's create path when memory runs out: every
 * allocation before the first verbs call fails in turn (calloc wrapped at
 * link time), and each time the device is refused with -ENOMEM, cleanly,
 * never a NULL dereference in the unwinding.  No verbs device is needed:
 * the allocations all come before the backend's first verbs call.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#define RDMAGATE_PROBES_DEFINE /* the probes' semaphores, as main.c has */
#include "common/probes.h"
#include "worker/virtio_rdma/vrdma.h"

void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);

static int calls, fail_at; /* fail_at: the n-th call fails (1-based) */

void *__wrap_calloc(size_t n, size_t size)
{
	if (fail_at && ++calls == fail_at)
		return NULL;
	return __real_calloc(n, size);
}

static int watch(void *ctx, int fd, void (*cb)(void *), void *arg)
{
	return 0;
}

static void test_every_allocation_failure_is_refused(void **state)
{
	static struct rdma_hca hca;
	struct vrdma_cfg cfg = { 0 };
	struct dev_env env = { .watch_fd = watch, .cfg = &cfg };
	void *priv;

	hca.dev.max_qp = hca.dev.max_cq = hca.dev.max_mr = 1 << 16;
	hca.dev.max_pd = hca.dev.max_srq = hca.dev.max_ah = 1 << 16;
	hca.dev.max_cqe = hca.dev.max_qp_wr = hca.dev.max_srq_wr = 1 << 16;
	hca.dev.max_sge = hca.dev.max_srq_sge = 32;
	hca.port_attr.gid_tbl_len = 16;
	cfg.be.hca = &hca;
	be_limits_default(&cfg.be.lim);
	cfg.be.lim.max_mr = 1 << 20;
	/*
	 * The device, its slots, the backend, its six tables: nine
	 * allocations before the completion channel (a verbs call).
	 */
	for (fail_at = 1; fail_at <= 9; fail_at++) {
		calls = 0;
		priv = (void *)&priv;
		assert_int_equal(rdma_device_ops.create(&env, &priv), -ENOMEM);
		assert_ptr_equal(priv, (void *)&priv); /* untouched */
		assert_true(calls >= fail_at);	       /* it was reached */
	}
	fail_at = 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_allocation_failure_is_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
