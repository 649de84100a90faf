/* SPDX-License-Identifier: MIT */
/*
 * The backend's per-VM quotas alone, for what sets them without driving
 * the backend (the worker's command line, worker/opts.h).
 */
#ifndef RDMAGATE_WORKER_BACKEND_LIMITS_H
#define RDMAGATE_WORKER_BACKEND_LIMITS_H

#include <stdint.h>

/* Quotas (worker options, later the broker's policy). */
struct be_limits {
	uint32_t max_qp, max_cq, max_mr, max_pd, max_srq, max_ah;
	uint32_t max_cqe, max_qp_wr, max_srq_wr, max_sge;
};

/* Fills the defaults of the worker's quotas. */
void be_limits_default(struct be_limits *lim);

#endif
