/* SPDX-License-Identifier: MIT */
/*
 * Test helpers for the backend's unit tests on a fake host (header-only,
 * static functions): a host send queue whose work requests complete in
 * order when the CQ is polled (a fake context's post_send and poll_cq),
 * and the host GID table query, wrapped at link time
 * (--wrap=_ibv_query_gid_ex), answered by the test's fake_gid_at().
 */
#ifndef RDMAGATE_TESTS_UNIT_RDMA_FAKE_HOST_H
#define RDMAGATE_TESTS_UNIT_RDMA_FAKE_HOST_H

#include <infiniband/verbs.h>
#include <stdint.h>
#include <string.h>

/* wr_ids posted and not yet polled, oldest first */
static uint64_t fake_sq[16];
static unsigned int fake_sq_n;

static inline int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
				 struct ibv_send_wr **bad)
{
	(void)qp;
	(void)bad;
	for (; wr; wr = wr->next) {
		assert_non_null(wr->wr.ud.ah);
		fake_sq[fake_sq_n++] = wr->wr_id;
	}
	return 0;
}

static inline int fake_poll_cq(struct ibv_cq *cq, int num_entries,
			       struct ibv_wc *wc)
{
	int n = 0;

	(void)cq;
	while (n < num_entries && fake_sq_n > 0) {
		memset(&wc[n], 0, sizeof(wc[n]));
		wc[n].wr_id = fake_sq[0];
		wc[n].opcode = IBV_WC_SEND;
		wc[n].qp_num = 0x101;
		memmove(fake_sq, fake_sq + 1, --fake_sq_n * sizeof(fake_sq[0]));
		n++;
	}
	return n;
}

/* The test's host GID table: fills e's GID and type for slot index, or
 * returns an errno (ENODATA: an empty slot). */
static int fake_gid_at(uint32_t index, struct ibv_gid_entry *e);

int __wrap__ibv_query_gid_ex(struct ibv_context *ctx, uint32_t port,
			     uint32_t index, struct ibv_gid_entry *e,
			     uint32_t flags, size_t size);
int __wrap__ibv_query_gid_ex(struct ibv_context *ctx, uint32_t port,
			     uint32_t index, struct ibv_gid_entry *e,
			     uint32_t flags, size_t size)
{
	(void)ctx;
	(void)flags;
	(void)size;
	memset(e, 0, sizeof(*e));
	e->gid_index = index;
	e->port_num = port;
	return fake_gid_at(index, e);
}

#endif
