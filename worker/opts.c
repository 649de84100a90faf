// SPDX-License-Identifier: MIT
/* The worker's numeric options (worker/opts.h): names, fields, ranges. */
#include "worker/opts.h"

#include "policy/policy.h" /* the polling ceilings */

/* A quota of 0 is allowed: none of that object. */
#define LIMIT_MAX (1u << 20)

#define FIELD(f) .off = offsetof(struct worker_opts, f)
#define LIMIT(n, f)                                                            \
	{                                                                      \
		.name = n, FIELD(lim.f), .type = OPT_NUM_U32, .min = 0,        \
		.max = LIMIT_MAX                                               \
	}

const struct opt_num worker_opt_nums[WO_COUNT] = {
	[WO_FD] = { .name = "fd",
		    FIELD(fd),
		    .type = OPT_NUM_INT,
		    .min = 0,
		    .max = 65535 },
	[WO_BROKER_FD] = { .name = "broker-fd",
			   FIELD(broker_fd),
			   .type = OPT_NUM_INT,
			   .min = 0,
			   .max = 65535 },
	[WO_PORT] = { .name = "port",
		      FIELD(port),
		      .type = OPT_NUM_U8,
		      .min = 1,
		      .max = 255 },
	[WO_POLL_BUDGET] = { .name = "poll-budget-us",
			     FIELD(poll_budget_us),
			     .type = OPT_NUM_U32,
			     .min = 0,
			     .max = POLICY_POLL_BUDGET_MAX_US },
	[WO_DOORBELL_POLL] = { .name = "doorbell-poll-ms",
			       FIELD(doorbell_poll_ms),
			       .type = OPT_NUM_U32,
			       .min = 0,
			       .max = POLICY_DOORBELL_POLL_MAX_MS },
	/* (uid_t)-1 means "no change" to the kernel: never a peer */
	[WO_PEER_UID] = { .name = "peer-uid",
			  FIELD(peer_uid),
			  .type = OPT_NUM_I64,
			  .min = 0,
			  .max = UINT32_MAX - 1 },
	[WO_PEER_GID] = { .name = "peer-gid",
			  FIELD(peer_gid),
			  .type = OPT_NUM_I64,
			  .min = 0,
			  .max = UINT32_MAX - 1 },
	[WO_MAX_QP] = LIMIT("max-qp", max_qp),
	[WO_MAX_CQ] = LIMIT("max-cq", max_cq),
	[WO_MAX_MR] = LIMIT("max-mr", max_mr),
	[WO_MAX_PD] = LIMIT("max-pd", max_pd),
	[WO_MAX_SRQ] = LIMIT("max-srq", max_srq),
	[WO_MAX_AH] = LIMIT("max-ah", max_ah),
	[WO_MAX_CQE] = LIMIT("max-cqe", max_cqe),
	[WO_MAX_QP_WR] = LIMIT("max-qp-wr", max_qp_wr),
	[WO_MAX_SRQ_WR] = LIMIT("max-srq-wr", max_srq_wr),
	[WO_MAX_SGE] = LIMIT("max-sge", max_sge),
};
