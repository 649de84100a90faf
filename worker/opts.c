// SPDX-License-Identifier: MIT
/* The worker's numeric options (worker/opts.h): names, fields, ranges. */
#include "worker/opts.h"

#include "policy/policy.h" /* the polling ceilings */

#define ROW(f, n, lo, hi) OPT_NUM_ROW(struct worker_opts, f, n, lo, hi)
/* A quota of 0 is allowed: none of that object. */
#define LIMIT(f, n) ROW(lim.f, n, 0, 1u << 20)
/* UINT32_MAX is (uid_t)-1, which is nobody's id */
#define ID_MAX (UINT32_MAX - 1)

const struct opt_num worker_opt_nums[WO_COUNT] = {
	[WO_FD] = ROW(fd, "fd", 0, 65535),
	[WO_BROKER_FD] = ROW(broker_fd, "broker-fd", 0, 65535),
	[WO_PORT] = ROW(port, "port", 1, 255),
	[WO_POLL_BUDGET] = ROW(poll_budget_us, "poll-budget-us", 0,
			       POLICY_POLL_BUDGET_MAX_US),
	[WO_DOORBELL_POLL] = ROW(doorbell_poll_ms, "doorbell-poll-ms", 0,
				 POLICY_DOORBELL_POLL_MAX_MS),
	[WO_PEER_UID] = ROW(peer_uid, "peer-uid", 0, ID_MAX),
	[WO_PEER_GID] = ROW(peer_gid, "peer-gid", 0, ID_MAX),
	[WO_MAX_QP] = LIMIT(max_qp, "max-qp"),
	[WO_MAX_CQ] = LIMIT(max_cq, "max-cq"),
	[WO_MAX_MR] = LIMIT(max_mr, "max-mr"),
	[WO_MAX_PD] = LIMIT(max_pd, "max-pd"),
	[WO_MAX_SRQ] = LIMIT(max_srq, "max-srq"),
	[WO_MAX_AH] = LIMIT(max_ah, "max-ah"),
	[WO_MAX_CQE] = LIMIT(max_cqe, "max-cqe"),
	[WO_MAX_QP_WR] = LIMIT(max_qp_wr, "max-qp-wr"),
	[WO_MAX_SRQ_WR] = LIMIT(max_srq_wr, "max-srq-wr"),
	[WO_MAX_SGE] = LIMIT(max_sge, "max-sge"),
};
