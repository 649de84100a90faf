/* SPDX-License-Identifier: MIT */
/*
 * The human-readable reason a pure decoder refused guest input, filled by
 * the decoder and logged by its caller (pure code does not log).
 */
#ifndef RDMAGATE_WORKER_BACKEND_REASON_H
#define RDMAGATE_WORKER_BACKEND_REASON_H

#define RDMA_REASON_LEN 160

struct rdma_reason {
	char msg[RDMA_REASON_LEN];
};

/*
 * Formats the reason into *why (if not NULL) and returns `err` (a negative
 * errno), so that decoders can write `return rdma_fail(why, -EINVAL, ...)`.
 */
int rdma_fail(struct rdma_reason *why, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
