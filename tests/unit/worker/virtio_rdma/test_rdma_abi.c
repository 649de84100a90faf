// SPDX-License-Identifier: MIT
/* The ABI header's queue map and its inverse, and the config identity. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "common/virtio_rdma.h"

static void test_queue_map_matches_profile_a_defaults(void **state)
{
	/* Profile A with 64 CQs: CQs 1..64, slot q at 65 + 2q / 66 + 2q. */
	assert_int_equal(virtio_rdma_cq_vq(0), 1);
	assert_int_equal(virtio_rdma_cq_vq(63), 64);
	assert_int_equal(virtio_rdma_sq_vq(64, 0), 65);
	assert_int_equal(virtio_rdma_rq_vq(64, 0), 66);
	assert_int_equal(virtio_rdma_sq_vq(64, 63), 191);
	assert_int_equal(virtio_rdma_rq_vq(64, 63), 192);
	assert_int_equal(virtio_rdma_num_vqs(64, 64), 193);
}

static void test_classify_inverts_the_map(void **state)
{
	const uint32_t max_cq = 5, max_qp = 7;
	uint32_t vq, num, c, q;

	assert_int_equal(virtio_rdma_vq_classify(0, max_cq, max_qp, &num),
			 VIRTIO_RDMA_VQ_CTRL);
	for (c = 0; c < max_cq; c++) {
		vq = virtio_rdma_cq_vq(c);
		assert_int_equal(
			virtio_rdma_vq_classify(vq, max_cq, max_qp, &num),
			VIRTIO_RDMA_VQ_CQ);
		assert_int_equal(num, c);
	}
	for (q = 0; q < max_qp; q++) {
		vq = virtio_rdma_sq_vq(max_cq, q);
		assert_int_equal(
			virtio_rdma_vq_classify(vq, max_cq, max_qp, &num),
			VIRTIO_RDMA_VQ_SQ);
		assert_int_equal(num, q);
		vq = virtio_rdma_rq_vq(max_cq, q);
		assert_int_equal(
			virtio_rdma_vq_classify(vq, max_cq, max_qp, &num),
			VIRTIO_RDMA_VQ_RQ);
		assert_int_equal(num, q);
	}
}

static void test_classify_refuses_queues_past_the_map(void **state)
{
	uint32_t num = 0xabcd;

	assert_int_equal(virtio_rdma_vq_classify(1 + 5 + 2 * 7, 5, 7, &num),
			 VIRTIO_RDMA_VQ_INVALID);
	assert_int_equal(virtio_rdma_vq_classify(UINT32_MAX, UINT32_MAX,
						 UINT32_MAX, &num),
			 VIRTIO_RDMA_VQ_CQ);
	assert_int_equal(virtio_rdma_vq_classify(255, 0, 0, &num),
			 VIRTIO_RDMA_VQ_INVALID);
	assert_int_equal(virtio_rdma_vq_classify(3, 0, 1, &num),
			 VIRTIO_RDMA_VQ_INVALID);
	assert_int_equal(virtio_rdma_vq_classify(2, 0, 1, &num),
			 VIRTIO_RDMA_VQ_RQ);
}

static void test_config_identity_bytes(void **state)
{
	struct virtio_rdma_config cfg;
	uint8_t *b = (uint8_t *)&cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.rg_magic = RDMAGATE_VIRTIO_RDMA_MAGIC;
	cfg.rg_abi_version = RDMAGATE_VIRTIO_RDMA_ABI_VERSION;
	assert_memory_equal(b + 131, "rdgt", 4);
	assert_int_equal(b[135], 3); /* delta 14: descriptor before CQE */
	assert_int_equal(sizeof(cfg), 195);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_queue_map_matches_profile_a_defaults),
		cmocka_unit_test(test_classify_inverts_the_map),
		cmocka_unit_test(test_classify_refuses_queues_past_the_map),
		cmocka_unit_test(test_config_identity_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
