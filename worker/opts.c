// SPDX-License-Identifier: MIT
/* The worker's numeric options (worker/opts.h): names, fields, ranges. */
#include "worker/opts.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

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

static bool is(const char *s, const char *name)
{
	return s && strcmp(s, name) == 0;
}

/* vhost-user: virtio-rdma on --device NAME, or the echo test device. */
static int split_vhost_user(const struct worker_opts *o, enum worker_model *m,
			    struct reason *why)
{
	if (o->device && o->test_device)
		return reason_fail(why, -EINVAL,
				   "give one of --device NAME and "
				   "--test-device echo");
	if (!o->device && !o->test_device)
		return reason_fail(why, -EINVAL,
				   "no device to serve: give --device NAME (a "
				   "verbs device, e.g. rxe0)");
	if (o->device)
		*m = WM_VIRTIO_RDMA;
	else if (is(o->test_device, "echo"))
		*m = WM_ECHO;
	else
		return reason_fail(why, -EINVAL,
				   "unknown test device '%s' (only 'echo')",
				   o->test_device);
	return 0;
}

int worker_opts_split(const struct worker_opts *o, enum worker_transport *t,
		      enum worker_model *m, struct reason *why)
{
	const char *f = o->frontend;

	/* the broker names the guest's device, an operator the protocol */
	if (!f || is(f, "vhost-user") || is(f, "virtio-rdma")) {
		*t = WT_VHOST_USER;
		return split_vhost_user(o, m, why);
	}
	*t = WT_VFIO_USER;
	/* over vfio-user, a verbs device is served as the PVRDMA function */
	if (is(f, "pvrdma") || (is(f, "vfio-user") && o->device)) {
		if (!o->device || o->test_device)
			return reason_fail(why, -EINVAL,
					   "PVRDMA serves a verbs device: give "
					   "--device NAME (e.g. rxe0) and no "
					   "--test-device");
		*m = WM_PVRDMA;
		return 0;
	}
	if (!is(f, "vfio-user"))
		return reason_fail(why, -EINVAL,
				   "--frontend: '%s' is none of virtio-rdma "
				   "(vhost-user), pvrdma and vfio-user",
				   f);
	if (!o->test_device)
		return reason_fail(why, -EINVAL,
				   "--frontend vfio-user serves --device NAME "
				   "(PVRDMA) or --test-device pci-test");
	if (!is(o->test_device, "pci-test"))
		return reason_fail(why, -EINVAL,
				   "unknown vfio-user test device '%s' (only "
				   "'pci-test')",
				   o->test_device);
	*m = WM_PCI_TEST;
	return 0;
}
