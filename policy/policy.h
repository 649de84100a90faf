/* SPDX-License-Identifier: MIT */
/*
 * The broker's policy: which VMs may be served, on which RDMA device and
 * port, which addresses (hence GIDs) each may claim, its quotas, and the
 * broker's own settings.  A pure parser over text (docs/policy.md documents
 * the format); only policy_load*() read a file.
 *
 * A parse either returns a whole policy or fails with line-numbered errors
 * and leaves *ret untouched, so a reload can keep the old policy.
 */
#ifndef RDMAGATE_POLICY_POLICY_H
#define RDMAGATE_POLICY_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define POLICY_VM_NAME_MAX     64 /* bytes; [A-Za-z0-9_.-], no leading . or - */
#define POLICY_DEVICE_NAME_MAX 63 /* an RDMA device name, e.g. rxe0 */
#define POLICY_GROUP_NAME_MAX  32 /* a group name, as useradd allows */
#define POLICY_SOCKET_PATH_MAX 107 /* sun_path less its NUL */
#define POLICY_CGROUP_PATH_MAX 255
#define POLICY_MAX_VMS	       4096
#define POLICY_MAX_ADDRS       64   /* per VM */
#define POLICY_LINE_MAX	       1024 /* bytes, without the newline */
#define POLICY_FILE_MAX	       (16u << 20)
#define POLICY_ERRORS_KEPT     16
#define POLICY_ERROR_LEN       320

/* Limits that come from the virtio-rdma queue layout (Profile A). */
#define POLICY_QP_LIMIT	   63  /* usable QP slots */
#define POLICY_CQ_LIMIT	   64  /* CQ virtqueues */
#define POLICY_DEPTH_LIMIT 512 /* ring entries per virtqueue */
#define POLICY_SGE_LIMIT   32  /* SGEs per work request */

/*
 * poll_budget_us: how long a worker spins on its rings and host CQs after
 * activity before it sleeps (docs/benchmarks.md, "Adaptive polling", says
 * how the default was chosen).  The ceiling keeps one VM from holding a
 * CPU for long on a machine shared by many.
 */
#define POLICY_POLL_BUDGET_DEFAULT_US 50
#define POLICY_POLL_BUDGET_MAX_US     10000

/*
 * doorbell_poll_ms: a PVRDMA worker offers its doorbell BAR as shared
 * memory and, once idle, looks for doorbells at least this often (docs/
 * pvrdma.md, "Doorbells in shared memory"): the first doorbell after an
 * idle spell waits up to this long; 1000 / N wake-ups a second when idle.
 * 0: doorbells as vfio-user messages (a round trip each).
 */
#define POLICY_DOORBELL_POLL_DEFAULT_MS 50
#define POLICY_DOORBELL_POLL_MAX_MS	1000

/*
 * worker_nice: the worker's CPU priority, nice(1)'s scale, set by the broker
 * before the worker drops its privileges (docs/policy.md).  A worker that
 * polls shares the host's CPUs with its guest's vCPUs: where they are
 * oversubscribed, a doorbell waits until the worker gets one
 * (docs/benchmarks.md).  0: the worker keeps the broker's own.
 */
#define POLICY_NICE_MIN (-20)
#define POLICY_NICE_MAX 19

/*
 * A PVRDMA device's rings are in guest memory, sized by its driver: its
 * queue depths are bounded by rdmagate's ceiling only, and unset they
 * default to the worker's own (room for ibv_srq_pingpong's 1024-entry CQ).
 * A virtio-rdma VM's depths stay within its 512-entry rings.
 */
#define POLICY_PVRDMA_DEPTH_LIMIT 65536
#define POLICY_PVRDMA_MAX_CQE	  4096
#define POLICY_PVRDMA_MAX_WR	  1024 /* max_qp_wr and max_srq_wr */

struct policy_quota {
	uint32_t max_pd;
	uint32_t max_cq;
	uint32_t max_qp;
	uint32_t max_mr;
	uint32_t max_srq;
	uint32_t max_ah;
	uint32_t max_cqe;    /* entries per CQ */
	uint32_t max_qp_wr;  /* work requests per send or receive queue */
	uint32_t max_srq_wr; /* work requests per SRQ */
	uint32_t max_sge;    /* scatter/gather entries per work request */
	uint64_t max_pinned; /* bytes of guest memory registered at once */
	uint64_t max_memory; /* the worker's cgroup memory.max, bytes */
	uint32_t max_pids;   /* the worker's cgroup pids.max */
};

/* The device a VM's guest sees (one backend, two frontends), or QEMU's
 * own pvrdma with no worker (the broker only attaches it to the mux). */
enum policy_frontend {
	POLICY_FRONTEND_VIRTIO_RDMA = 1, /* vhost-user, virtio ID 42 */
	POLICY_FRONTEND_PVRDMA = 2,	 /* vfio-user, VMware PVRDMA */
	POLICY_FRONTEND_QEMU_PVRDMA = 3, /* QEMU <= 9.0's in-process pvrdma */
};
/* "virtio-rdma", "pvrdma", "qemu-pvrdma", or NULL for anything else. */
const char *policy_frontend_name(uint32_t frontend);

/* One address or prefix a VM may claim.  addr is in network byte order:
 * the first 4 bytes for AF_INET, all 16 for AF_INET6.  A single address has
 * prefix_len 32 or 128. */
struct policy_addr {
	int family;
	uint8_t prefix_len;
	uint8_t addr[16];
};

/* The effective settings of one VM: [defaults] merged with its section.
 * For policy_defaults() the name is empty and there are no addresses. */
struct policy_vm {
	char name[POLICY_VM_NAME_MAX + 1];
	char device[POLICY_DEVICE_NAME_MAX + 1]; /* "" only in defaults */
	uint8_t port;
	struct policy_quota quota;
	const struct policy_addr *addrs; /* sorted; owned by the policy */
	size_t n_addrs;
	bool has_uid, has_gid; /* fixed ids; else the broker picks */
	uint32_t uid, gid;
	uint32_t frontend; /* enum policy_frontend */
	/* the VM's QEMU identity: its socket is theirs, its worker accepts
	 * only them (and root), and a caller other than root must be them to
	 * spawn, stop or read this VM; neither: root only */
	bool has_vmm_uid, has_vmm_gid;
	uint32_t vmm_uid, vmm_gid;
	uint32_t poll_budget_us;   /* the worker's --poll-budget-us */
	uint32_t doorbell_poll_ms; /* the worker's --doorbell-poll-ms */
	int32_t worker_nice;	   /* POLICY_NICE_MIN..MAX; 0: inherited */
};

struct policy_broker {
	char control_socket[POLICY_SOCKET_PATH_MAX + 1];
	char control_group[POLICY_GROUP_NAME_MAX + 1];	/* "" = root only */
	uint32_t worker_id_first, worker_id_last;	/* uids and gids */
	char cgroup_parent[POLICY_CGROUP_PATH_MAX + 1]; /* under cgroup2 root */
	/* the VMs' sockets: the broker's directory, a VM names a file */
	char socket_dir[POLICY_SOCKET_PATH_MAX + 1];
};

/*
 * What went wrong.  n counts every error found; the first POLICY_ERRORS_KEPT
 * are kept, in line order.  Each msg is complete, e.g.
 * "policy.conf:12: max_qp = 100: more than 63 (the queue layout's limit)";
 * line is 0 for errors not tied to a line ("policy.conf: cannot open: ...").
 */
struct policy_error {
	unsigned n;
	unsigned kept;
	struct {
		unsigned line;
		char msg[POLICY_ERROR_LEN];
	} e[POLICY_ERRORS_KEPT];
};

struct policy;

/*
 * Parses text (NUL-terminated); name is what error messages call it.
 * Returns 0 and a new policy in *ret, or -EINVAL (errors in *err) or
 * -ENOMEM; *ret is untouched on failure.  err may be NULL.
 */
int policy_parse_string(const char *text, const char *name, struct policy **ret,
			struct policy_error *err);
/* The same over len bytes; a NUL byte inside them is an error. */
int policy_parse_buffer(const char *text, size_t len, const char *name,
			struct policy **ret, struct policy_error *err);

/* policy_load() flags */
enum {
	/* Refuse a file that is not owned by root or by the caller, or that
	 * its group or others may write: the broker's policy decides uids. */
	POLICY_LOAD_STRICT = 1u << 0,
};

/*
 * Reads and parses the regular file at path (at most POLICY_FILE_MAX
 * bytes).  Returns 0, -EINVAL (parse errors), or -errno of what failed
 * (-ENOENT, -EACCES, -EFBIG, -EPERM for STRICT, ...); *err always says why.
 */
int policy_load(const char *path, unsigned flags, struct policy **ret,
		struct policy_error *err);
/* The same from an open fd (a pipe or stdin too); name is for messages. */
int policy_load_fd(int fd, const char *name, unsigned flags,
		   struct policy **ret, struct policy_error *err);

void policy_free(struct policy *p);

const struct policy_broker *policy_broker(const struct policy *p);
const struct policy_vm *policy_defaults(const struct policy *p);
size_t policy_vm_count(const struct policy *p);
/* VMs sorted by name; NULL when i is out of range. */
const struct policy_vm *policy_vm_at(const struct policy *p, size_t i);
/* The VM's effective settings, or NULL: the policy serves named VMs only. */
const struct policy_vm *policy_lookup_vm(const struct policy *p,
					 const char *name);

/*
 * May VM vm_name claim the address (4 bytes for AF_INET, 16 for AF_INET6)?
 * An IPv4-mapped IPv6 address (a RoCE v2 GID of an IPv4 address) is checked
 * as the IPv4 address.  False for unknown VMs and other families.
 */
bool policy_vm_may_claim(const struct policy *p, const char *vm_name,
			 int family, const void *addr);

/*
 * Parses "10.99.0.10", "fd99::10" or a prefix "fd99:0:0:1::/64" as the
 * policy does.  Returns 0, or -EINVAL with *ret untouched.
 */
int policy_parse_addr(const char *s, struct policy_addr *ret);
/* Normalised text ("fd99:0:0:1::/64"; no /32 or /128). */
#define POLICY_ADDR_STRLEN 50 /* INET6_ADDRSTRLEN + "/128" */
void policy_format_addr(const struct policy_addr *a,
			char buf[POLICY_ADDR_STRLEN]);

/*
 * The canonical form: every [broker] and [defaults] key (the queue depths
 * only where set: unset, each VM gets its frontend's), then the VMs
 * sorted by name with only the keys their sections set, addresses sorted
 * and normalised, sizes with the largest exact suffix, no comments.
 * Parsing it gives the same policy and prints the same text.
 * Returns 0 or -EIO.
 */
int policy_print_canonical(const struct policy *p, FILE *f);
/* The same as a malloc'd string, or NULL (out of memory). */
char *policy_canonical_string(const struct policy *p);

/* Writes the kept error lines, then "... and N more" if some were not
 * kept. */
void policy_error_print(const struct policy_error *err, FILE *f);

#endif
