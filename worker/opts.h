/* SPDX-License-Identifier: MIT */
/*
 * The worker's command line as data: what main() runs with, and the table
 * of its numeric options (common/opt_num.h), exported for the unit test.
 */
#ifndef RDMAGATE_WORKER_OPTS_H
#define RDMAGATE_WORKER_OPTS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/opt_num.h"
#include "common/reason.h"
#include "worker/backend/limits.h"

struct worker_opts {
	const char *socket_path;
	int fd;
	int broker_fd; /* the broker channel's listening socket, or -1 */
	bool print_caps;
	const char *vm;
	const char *test_device;
	const char *device;
	const char *frontend; /* vhost-user|virtio-rdma, vfio-user|pvrdma */
	uint8_t port;
	bool busy_poll;
	bool poll_budget_set;
	uint32_t poll_budget_us;      /* with poll_budget_set */
	uint32_t doorbell_poll_ms;    /* PVRDMA: 0 = doorbells as messages */
	long long peer_uid, peer_gid; /* the VM's QEMU identity, or -1 */
	bool sandbox_debug; /* trap and log forbidden syscalls, never kill */
	const char *test_syscall; /* test builds: made once sandboxed */
	struct be_limits lim;
	bool verbose;
};

/* The rows of worker_opt_nums, one per numeric option. */
enum worker_opt_num {
	WO_FD,
	WO_BROKER_FD,
	WO_PORT,
	WO_POLL_BUDGET,
	WO_DOORBELL_POLL,
	WO_PEER_UID,
	WO_PEER_GID,
	WO_MAX_QP,
	WO_MAX_CQ,
	WO_MAX_MR,
	WO_MAX_PD,
	WO_MAX_SRQ,
	WO_MAX_AH,
	WO_MAX_CQE,
	WO_MAX_QP_WR,
	WO_MAX_SRQ_WR,
	WO_MAX_SGE,
	WO_COUNT
};

/* Fields of struct worker_opts. */
extern const struct opt_num worker_opt_nums[WO_COUNT];

/*
 * What the worker serves, in two parts: the transport the VMM speaks
 * (worker/transport.h) and the device model on it.  The command line
 * names them with --frontend (the broker passes the guest's device,
 * virtio-rdma or pvrdma; an operator may name the protocol, vhost-user or
 * vfio-user), --device NAME (a verbs device: the RDMA model of the
 * transport) and --test-device NAME (a transport's test model).
 */
enum worker_transport {
	WT_VHOST_USER,
	WT_VFIO_USER,
};

enum worker_model {
	WM_VIRTIO_RDMA, /* vhost-user, --device NAME */
	WM_ECHO,	/* vhost-user, --test-device echo */
	WM_PVRDMA,	/* vfio-user, --device NAME */
	WM_PCI_TEST,	/* vfio-user, --test-device pci-test */
};

/*
 * The transport and model o's --frontend, --device and --test-device
 * name.  0, or -EINVAL with why: what the command line lacks or has too
 * much of.
 */
int worker_opts_split(const struct worker_opts *o, enum worker_transport *t,
		      enum worker_model *m, struct reason *why);

#endif
