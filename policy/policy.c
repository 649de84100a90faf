// SPDX-License-Identifier: MIT
/*
 * The policy parser: INI-style text (docs/policy.md) to a validated,
 * immutable struct policy, with every error named by file and line.
 *
 * Pure: only policy_load*() touch the file system.  The file is hostile
 * enough (hand-edited, possibly generated) that every bound is checked:
 * line length, file size, VM count, addresses per VM, number ranges.
 *
 * A small own tokenizer instead of inih: Debian's inih truncates section
 * names to 49 bytes, passes no line numbers to the handler, never reports
 * empty sections and turns indented lines into continuations; working
 * around each needed a second parse of every line.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/broker_proto.h"
#include "common/cleanup.h"
#include "common/reason.h"
#include "policy/policy.h"

#define COUNT_LIMIT 65536 /* objects of one kind: generous but finite */
#define PINNED_MIN  (4ull << 10)
#define PINNED_MAX  (1ull << 50)
#define MEMORY_MIN  (16ull << 20) /* below this a worker cannot start */
#define PIDS_LIMIT  4096
#define ID_MAX	    4294967294u /* (uid_t)-1 means "no change" */
#define SHOW_MAX    60

enum key_id {
	K_CONTROL_SOCKET,
	K_CONTROL_GROUP,
	K_WORKER_IDS,
	K_CGROUP_PARENT,
	K_DEVICE,
	K_PORT,
	K_MAX_PD,
	K_MAX_CQ,
	K_MAX_QP,
	K_MAX_MR,
	K_MAX_SRQ,
	K_MAX_AH,
	K_MAX_CQE,
	K_MAX_QP_WR,
	K_MAX_SRQ_WR,
	K_MAX_SGE,
	K_MAX_PINNED,
	K_ADDRESSES,
	K_UID,
	K_GID,
	K_SOCKET_DIR,
	K_FRONTEND,
	K_VMM_UID,
	K_VMM_GID,
	K_MAX_MEMORY,
	K_MAX_PIDS,
	K_POLL_BUDGET_US,
	K_DOORBELL_POLL_MS,
	K_WORKER_NICE,
	K_COUNT
};

enum sec_kind { SEC_NONE, SEC_BROKER, SEC_DEFAULTS, SEC_VM, SEC_SKIP };
#define IN_BROKER   (1u << SEC_BROKER)
#define IN_DEFAULTS (1u << SEC_DEFAULTS)
#define IN_VM	    (1u << SEC_VM)

/* What one section wrote, for duplicates, merging and printing. */
struct section {
	unsigned line;
	uint32_t set; /* keys written */
	uint32_t bad; /* keys written with an invalid value */
	unsigned key_line[K_COUNT];
};

struct vm_entry {
	struct policy_vm vm;
	struct section sec;
};

struct policy {
	struct policy_broker broker;
	struct section broker_sec;
	struct vm_entry defaults;
	struct vm_entry *vms;
	size_t n_vms;
	size_t cap_vms;
};

struct parser {
	const char *name;
	struct policy *p;
	struct policy_error *err;
	unsigned lineno;
	enum sec_kind sec;
	struct section *cur_sec;
	void *cur_base; /* struct policy_broker or struct policy_vm */
	char label[POLICY_VM_NAME_MAX + 8]; /* "[vm a]", for messages */
	uint16_t *index; /* VM names while parsing: 1 + position, 0 = free */
	bool oom;
	bool stop;
};

enum key_type {
	T_PATH,
	T_GROUP,
	T_IDRANGE,
	T_DEVICE,
	T_U32,
	T_U8,
	T_SIZE,
	T_ADDRS,
	T_ID,
	T_FRONTEND,
	T_NICE,
};

struct key_desc {
	const char *name;
	enum key_type type;
	unsigned sections;
	size_t off;	 /* into struct policy_broker / policy_vm */
	size_t len;	 /* string fields: buffer size */
	size_t flag_off; /* T_ID: the has_ flag */
	uint64_t min, max;
	const char *why_max; /* why max is the limit */
};

#define BROKER_STR(k, f, ty)                                                   \
	{                                                                      \
		.name = k, .type = ty, .sections = IN_BROKER,                  \
		.off = offsetof(struct policy_broker, f),                      \
		.len = sizeof(((struct policy_broker *)0)->f)                  \
	}
#define QUOTA(k, f, lo, hi, why)                                               \
	{                                                                      \
		.name = k, .type = T_U32, .sections = IN_DEFAULTS | IN_VM,     \
		.off = offsetof(struct policy_vm, quota.f), .min = lo,         \
		.max = hi, .why_max = why                                      \
	}
#define VM_ID(k, f, hf)                                                        \
	{                                                                      \
		.name = k, .type = T_ID, .sections = IN_VM,                    \
		.off = offsetof(struct policy_vm, f),                          \
		.flag_off = offsetof(struct policy_vm, hf), .min = 1,          \
		.max = ID_MAX, .why_max = "(uid_t)-1 is reserved"              \
	}

static const char LAYOUT[] = "the queue layout's limit";
static const char RING[] = "the virtqueue ring size";
static const char CEILING[] = "rdmagate's ceiling";

static const struct key_desc keys[K_COUNT] = {
	[K_CONTROL_SOCKET] =
		BROKER_STR("control_socket", control_socket, T_PATH),
	[K_CONTROL_GROUP] = BROKER_STR("control_group", control_group, T_GROUP),
	[K_WORKER_IDS] = { .name = "worker_ids",
			   .type = T_IDRANGE,
			   .sections = IN_BROKER },
	[K_CGROUP_PARENT] = BROKER_STR("cgroup_parent", cgroup_parent, T_PATH),
	[K_DEVICE] = { .name = "device",
		       .type = T_DEVICE,
		       .sections = IN_DEFAULTS | IN_VM,
		       .off = offsetof(struct policy_vm, device),
		       .len = sizeof(((struct policy_vm *)0)->device) },
	[K_PORT] = { .name = "port",
		     .type = T_U8,
		     .sections = IN_DEFAULTS | IN_VM,
		     .off = offsetof(struct policy_vm, port),
		     .min = 1,
		     .max = 255,
		     .why_max = "ports are numbered 1 to 255" },
	[K_MAX_PD] = QUOTA("max_pd", max_pd, 1, COUNT_LIMIT, CEILING),
	[K_MAX_CQ] = QUOTA("max_cq", max_cq, 1, POLICY_CQ_LIMIT, LAYOUT),
	[K_MAX_QP] = QUOTA("max_qp", max_qp, 1, POLICY_QP_LIMIT, LAYOUT),
	[K_MAX_MR] = QUOTA("max_mr", max_mr, 1, COUNT_LIMIT, CEILING),
	[K_MAX_SRQ] = QUOTA("max_srq", max_srq, 0, COUNT_LIMIT, CEILING),
	[K_MAX_AH] = QUOTA("max_ah", max_ah, 0, COUNT_LIMIT, CEILING),
	/* a virtio-rdma VM's depths are checked against its rings once its
	 * frontend is known (check_depths) */
	[K_MAX_CQE] = QUOTA("max_cqe", max_cqe, 1, POLICY_PVRDMA_DEPTH_LIMIT,
			    CEILING),
	[K_MAX_QP_WR] = QUOTA("max_qp_wr", max_qp_wr, 1,
			      POLICY_PVRDMA_DEPTH_LIMIT, CEILING),
	[K_MAX_SRQ_WR] = QUOTA("max_srq_wr", max_srq_wr, 1,
			       POLICY_PVRDMA_DEPTH_LIMIT, CEILING),
	[K_MAX_SGE] = QUOTA("max_sge", max_sge, 1, POLICY_SGE_LIMIT,
			    "the SGE limit of a virtio-rdma work request"),
	[K_MAX_PINNED] = { .name = "max_pinned",
			   .type = T_SIZE,
			   .sections = IN_DEFAULTS | IN_VM,
			   .off = offsetof(struct policy_vm, quota.max_pinned),
			   .min = PINNED_MIN,
			   .max = PINNED_MAX,
			   .why_max = CEILING },
	[K_ADDRESSES] = { .name = "addresses",
			  .type = T_ADDRS,
			  .sections = IN_VM },
	[K_UID] = VM_ID("uid", uid, has_uid),
	[K_GID] = VM_ID("gid", gid, has_gid),
	[K_SOCKET_DIR] = BROKER_STR("socket_dir", socket_dir, T_PATH),
	[K_FRONTEND] = { .name = "frontend",
			 .type = T_FRONTEND,
			 .sections = IN_DEFAULTS | IN_VM,
			 .off = offsetof(struct policy_vm, frontend) },
	[K_VMM_UID] = VM_ID("vmm_uid", vmm_uid, has_vmm_uid),
	[K_VMM_GID] = VM_ID("vmm_gid", vmm_gid, has_vmm_gid),
	[K_MAX_MEMORY] = { .name = "max_memory",
			   .type = T_SIZE,
			   .sections = IN_DEFAULTS | IN_VM,
			   .off = offsetof(struct policy_vm, quota.max_memory),
			   .min = MEMORY_MIN,
			   .max = PINNED_MAX,
			   .why_max = CEILING },
	[K_MAX_PIDS] = QUOTA("max_pids", max_pids, 1, PIDS_LIMIT, CEILING),
	[K_POLL_BUDGET_US] = { .name = "poll_budget_us",
			       .type = T_U32,
			       .sections = IN_DEFAULTS | IN_VM,
			       .off = offsetof(struct policy_vm,
					       poll_budget_us),
			       .min = 0,
			       .max = POLICY_POLL_BUDGET_MAX_US,
			       .why_max = "a CPU is shared by many VMs" },
	[K_DOORBELL_POLL_MS] = { .name = "doorbell_poll_ms",
				 .type = T_U32,
				 .sections = IN_DEFAULTS | IN_VM,
				 .off = offsetof(struct policy_vm,
						 doorbell_poll_ms),
				 .min = 0,
				 .max = POLICY_DOORBELL_POLL_MAX_MS,
				 .why_max = "an idle doorbell would wait over "
					    "a second" },
	[K_WORKER_NICE] = { .name = "worker_nice",
			    .type = T_NICE,
			    .sections = IN_DEFAULTS | IN_VM,
			    .off = offsetof(struct policy_vm, worker_nice) },
};

static const struct policy_broker builtin_broker = {
	.control_socket = RDMAGATE_CTL_DEFAULT_SOCKET,
	.control_group = "",
	.worker_id_first = 60000,
	.worker_id_last = 60999,
	.cgroup_parent = "/rdmagate",
	.socket_dir = RDMAGATE_DEFAULT_SOCKET_DIR,
};

static const struct policy_vm builtin_defaults = {
	.port = 1,
	.quota = {
		.max_pd = 16,
		.max_cq = 16,
		.max_qp = 16,
		.max_mr = 1024,
		.max_srq = 8,
		.max_ah = 64,
		/* max_cqe, max_qp_wr, max_srq_wr: 0 = the frontend's
		 * (depth_defaults) */
		.max_sge = 16,
		.max_pinned = 1ull << 30,
		/* the worker's own memory: guest RAM is the VMM's */
		.max_memory = 1ull << 30,
		/* one process; room for what a library may start */
		.max_pids = 16,
	},
	.frontend = POLICY_FRONTEND_VIRTIO_RDMA,
	.poll_budget_us = POLICY_POLL_BUDGET_DEFAULT_US,
	.doorbell_poll_ms = POLICY_DOORBELL_POLL_DEFAULT_MS,
};

/* Ranges no VM may claim, or that overlap what the host owns. */
static const struct reserved {
	struct policy_addr net;
	const char *what;
} reserved[] = {
	{ { AF_INET, 8, { 0 } }, "\"this network\"" },
	{ { AF_INET, 8, { 127 } }, "loopback" },
	{ { AF_INET, 4, { 224 } }, "multicast" },
	{ { AF_INET, 4, { 240 } }, "reserved and broadcast" },
	{ { AF_INET6, 128, { 0 } }, "the unspecified address" },
	{ { AF_INET6, 128, { [15] = 1 } }, "loopback" },
	{ { AF_INET6, 96, { [10] = 0xff, [11] = 0xff } },
	  "IPv4-mapped; write the IPv4 address" },
	{ { AF_INET6, 10, { 0xfe, 0x80 } },
	  "link-local: the host's own default GIDs" },
	{ { AF_INET6, 8, { 0xff } }, "multicast" },
};

/* ---- errors ---------------------------------------------------------- */

struct shown {
	char s[SHOW_MAX + 4];
};

/* A value quoted in a message: bounded, and no terminal control bytes. */
static struct shown show(const char *v)
{
	struct shown r;
	size_t i;

	for (i = 0; v[i] && i < SHOW_MAX; i++)
		r.s[i] = (v[i] >= 0x20 && v[i] < 0x7f) ? v[i] : '?';
	if (v[i])
		memcpy(r.s + i, "...", 3), i += 3;
	r.s[i] = '\0';
	return r;
}

/* Keeps the POLICY_ERRORS_KEPT errors with the lowest line numbers. */
static void error_add(struct policy_error *err, unsigned line, const char *msg)
{
	unsigned i;

	if (!err)
		return;
	err->n++;
	i = err->kept;
	if (i == POLICY_ERRORS_KEPT) {
		if (err->e[i - 1].line <= line)
			return;
		i--;
	} else {
		err->kept++;
	}
	for (; i > 0 && err->e[i - 1].line > line; i--)
		err->e[i] = err->e[i - 1];
	err->e[i].line = line;
	snprintf(err->e[i].msg, sizeof(err->e[i].msg), "%s", msg);
}

static void error_v(struct policy_error *err, const char *name, unsigned line,
		    const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));
static void error_v(struct policy_error *err, const char *name, unsigned line,
		    const char *fmt, va_list ap)
{
	char msg[POLICY_ERROR_LEN];
	int n;

	if (line)
		n = snprintf(msg, sizeof(msg), "%s:%u: ", name, line);
	else
		n = snprintf(msg, sizeof(msg), "%s: ", name);
	if (n < 0 || (size_t)n >= sizeof(msg))
		n = 0;
	vsnprintf(msg + n, sizeof(msg) - n, fmt, ap);
	error_add(err, line, msg);
}

static void error_at(struct policy_error *err, const char *name, unsigned line,
		     const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void error_at(struct policy_error *err, const char *name, unsigned line,
		     const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	error_v(err, name, line, fmt, ap);
	va_end(ap);
}

static void perr(struct parser *ps, unsigned line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void perr(struct parser *ps, unsigned line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	error_v(ps->err, ps->name, line, fmt, ap);
	va_end(ap);
}

void policy_error_print(const struct policy_error *err, FILE *f)
{
	unsigned i;

	for (i = 0; i < err->kept; i++)
		fprintf(f, "%s\n", err->e[i].msg);
	if (err->n > err->kept)
		fprintf(f, "... and %u more error%s\n", err->n - err->kept,
			err->n - err->kept == 1 ? "" : "s");
}

/* ---- small lexical helpers ------------------------------------------- */

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static char *trim(char *s)
{
	char *e;

	while (is_blank(*s))
		s++;
	e = s + strlen(s);
	while (e > s && is_blank(e[-1]))
		*--e = '\0';
	return s;
}

static bool is_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

/* [A-Za-z0-9_.-]{1,max}, not starting with '.' or '-'. */
static const char *check_name(const char *s, size_t max)
{
	size_t i;

	if (!*s)
		return "empty";
	if (s[0] == '.' || s[0] == '-')
		return "starts with '.' or '-'";
	for (i = 0; s[i]; i++) {
		if (i == max)
			return "too long";
		if (!is_name_char(s[i]))
			return "has a character other than A-Z a-z 0-9 _ . -";
	}
	return NULL;
}

/* Decimal digits only: no sign, no blanks, no base prefix. */
static int parse_u64(const char *s, const char **end, uint64_t *ret)
{
	unsigned long long v;
	char *e;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &e, 10);
	*end = e;
	*ret = v; /* ULLONG_MAX on overflow */
	return errno == ERANGE ? -ERANGE : 0;
}

/* ---- value parsers, one per key type ------------------------------------ */

static void expect_range(struct parser *ps, const struct key_desc *k,
			 const char *v, const char *what)
{
	perr(ps, ps->lineno,
	     "%s = %s: %s (expected a whole number from "
	     "%llu to %llu)",
	     k->name, show(v).s, what, (unsigned long long)k->min,
	     (unsigned long long)k->max);
}

static int number_in_range(struct parser *ps, const struct key_desc *k,
			   const char *v, uint64_t *ret)
{
	const char *end;
	uint64_t n;
	int r;

	r = parse_u64(v, &end, &n);
	if (r == 0 && *end)
		r = -EINVAL;
	if (r == -EINVAL) {
		expect_range(ps, k, v, "not a number");
		return -1;
	}
	if (r == -ERANGE || n > k->max) {
		perr(ps, ps->lineno, "%s = %s: more than %llu (%s)", k->name,
		     show(v).s, (unsigned long long)k->max, k->why_max);
		return -1;
	}
	if (n < k->min) {
		expect_range(ps, k, v, "too small");
		return -1;
	}
	*ret = n;
	return 0;
}

static int parse_u32(struct parser *ps, const struct key_desc *k, const char *v,
		     void *base)
{
	uint64_t n;

	if (number_in_range(ps, k, v, &n) < 0)
		return -1;
	*(uint32_t *)((char *)base + k->off) = (uint32_t)n;
	return 0;
}

/* nice(1)'s scale: an optional '-', then decimal digits. */
static int parse_nice(struct parser *ps, const struct key_desc *k,
		      const char *v, void *base)
{
	bool neg = v[0] == '-';
	const char *end;
	uint64_t n;
	int r;

	r = parse_u64(v + neg, &end, &n);
	if (r == 0 && *end)
		r = -EINVAL;
	if (r == -EINVAL || r == -ERANGE ||
	    n > (uint64_t)(neg ? -POLICY_NICE_MIN : POLICY_NICE_MAX)) {
		perr(ps, ps->lineno,
		     "%s = %s: %s (expected a whole number from %d to %d, "
		     "the kernel's nice values)",
		     k->name, show(v).s,
		     r == -EINVAL ? "not a number" : "out of range",
		     POLICY_NICE_MIN, POLICY_NICE_MAX);
		return -1;
	}
	*(int32_t *)((char *)base + k->off) = neg ? -(int32_t)n : (int32_t)n;
	return 0;
}

static int parse_u8(struct parser *ps, const struct key_desc *k, const char *v,
		    void *base)
{
	uint64_t n;

	if (number_in_range(ps, k, v, &n) < 0)
		return -1;
	*(uint8_t *)((char *)base + k->off) = (uint8_t)n;
	return 0;
}

static int parse_id(struct parser *ps, const struct key_desc *k, const char *v,
		    void *base)
{
	uint64_t n;

	if (number_in_range(ps, k, v, &n) < 0)
		return -1;
	*(uint32_t *)((char *)base + k->off) = (uint32_t)n;
	*(bool *)((char *)base + k->flag_off) = true;
	return 0;
}

static const char size_suffixes[] = "KMGTP";
static void format_size(uint64_t n, char *buf, size_t len);

/* "4G" = 4 << 30; a bare number is bytes. */
static int size_value(const char *v, uint64_t *ret)
{
	const char *end, *suf;
	unsigned shift = 0;
	uint64_t n;
	int r;

	r = parse_u64(v, &end, &n);
	if (r < 0)
		return r;
	if (*end) {
		suf = end[0] ? strchr(size_suffixes, end[0] & ~0x20) : NULL;
		if (!suf || end[1])
			return -EINVAL;
		shift = 10 * (unsigned)(suf - size_suffixes + 1);
	}
	if (n > (UINT64_MAX >> shift))
		return -ERANGE;
	*ret = n << shift;
	return 0;
}

static int parse_size(struct parser *ps, const struct key_desc *k,
		      const char *v, void *base)
{
	uint64_t n;
	int r;

	r = size_value(v, &n);
	if (r == -EINVAL) {
		perr(ps, ps->lineno,
		     "%s = %s: not a size (expected bytes, "
		     "optionally with a K, M, G, T or P suffix, e.g. 4G)",
		     k->name, show(v).s);
		return -1;
	}
	if (r == -ERANGE || n > k->max) {
		perr(ps, ps->lineno, "%s = %s: more than 1P (%s)", k->name,
		     show(v).s, k->why_max);
		return -1;
	}
	if (n < k->min) {
		char min[32];

		format_size(k->min, min, sizeof(min));
		perr(ps, ps->lineno, "%s = %s: less than %s%s", k->name,
		     show(v).s, min,
		     k->min == PINNED_MIN ? " (one page)"
					  : " (what a worker needs)");
		return -1;
	}
	*(uint64_t *)((char *)base + k->off) = n;
	return 0;
}

static int parse_device(struct parser *ps, const struct key_desc *k,
			const char *v, void *base)
{
	const char *why = check_name(v, POLICY_DEVICE_NAME_MAX);

	if (why) {
		perr(ps, ps->lineno,
		     "%s = %s: %s (expected an RDMA device "
		     "name such as rxe0 or mlx5_0, at most %d bytes)",
		     k->name, show(v).s, why, POLICY_DEVICE_NAME_MAX);
		return -1;
	}
	snprintf((char *)base + k->off, k->len, "%s", v);
	return 0;
}

static int parse_group(struct parser *ps, const struct key_desc *k,
		       const char *v, void *base)
{
	const char *why = *v ? check_name(v, POLICY_GROUP_NAME_MAX) : NULL;

	if (!why && *v >= '0' && *v <= '9')
		why = "starts with a digit";
	if (why) {
		perr(ps, ps->lineno,
		     "%s = %s: %s (expected a group name of "
		     "at most %d bytes, or nothing for root only)",
		     k->name, show(v).s, why, POLICY_GROUP_NAME_MAX);
		return -1;
	}
	snprintf((char *)base + k->off, k->len, "%s", v);
	return 0;
}

static bool is_path_char(char c)
{
	return is_name_char(c) || c == '@' || c == ':' || c == '+';
}

/* Absolute, no empty, "." or ".." component, no trailing '/'. */
static const char *check_path(const char *s, size_t max)
{
	const char *c, *seg;

	if (s[0] != '/')
		return "not an absolute path";
	if (strlen(s) > max)
		return "too long";
	for (seg = c = s + 1;; c++) {
		if (*c == '/' || !*c) {
			if (c == seg)
				return "has an empty component";
			if ((c - seg == 1 && seg[0] == '.') ||
			    (c - seg == 2 && seg[0] == '.' && seg[1] == '.'))
				return "has a . or .. component";
			if (!*c)
				return NULL;
			seg = c + 1;
		} else if (!is_path_char(*c)) {
			return "has a character other than A-Z a-z 0-9 "
			       "_ . - @ : +";
		}
	}
}

static int parse_path(struct parser *ps, const struct key_desc *k,
		      const char *v, void *base)
{
	const char *why = check_path(v, k->len - 1);

	if (why) {
		perr(ps, ps->lineno,
		     "%s = %s: %s (expected an absolute path "
		     "of at most %zu bytes)",
		     k->name, show(v).s, why, k->len - 1);
		return -1;
	}
	snprintf((char *)base + k->off, k->len, "%s", v);
	return 0;
}

static const char *id_range_value(const char *v, uint32_t *first,
				  uint32_t *last)
{
	uint64_t a, b;
	const char *e;

	if (parse_u64(v, &e, &a) == -EINVAL)
		return "not a range"; /* -ERANGE: a is above ID_MAX */
	while (is_blank(*e))
		e++;
	if (*e != '-')
		return "not a range";
	for (e++; is_blank(*e);)
		e++;
	if (parse_u64(e, &e, &b) == -EINVAL || *e)
		return "not a range";
	if (a == 0 || a > ID_MAX || b > ID_MAX)
		return "outside 1-4294967294, and 0 is root";
	if (a > b)
		return "first id is above the last";
	if (a <= 65535 && b >= 65534)
		return "includes 65534 or 65535, nobody and the 16-bit -1";
	*first = (uint32_t)a;
	*last = (uint32_t)b;
	return NULL;
}

static int parse_idrange(struct parser *ps, const struct key_desc *k,
			 const char *v, void *base)
{
	struct policy_broker *b = base;
	const char *why;

	why = id_range_value(v, &b->worker_id_first, &b->worker_id_last);
	if (why) {
		perr(ps, ps->lineno,
		     "%s = %s: %s (expected FIRST-LAST, e.g. "
		     "60000-60999)",
		     k->name, show(v).s, why);
		return -1;
	}
	return 0;
}

/* ---- addresses -------------------------------------------------------- */

static unsigned addr_bytes(int family)
{
	return family == AF_INET ? 4 : 16;
}

/* Do the first bits bits of a and b agree? */
static bool bits_equal(const uint8_t *a, const uint8_t *b, unsigned bits)
{
	unsigned full = bits / 8, rest = bits % 8;
	uint8_t mask;

	if (memcmp(a, b, full))
		return false;
	if (!rest)
		return true;
	mask = (uint8_t)(0xff << (8 - rest));
	return ((a[full] ^ b[full]) & mask) == 0;
}

static bool addr_overlap(const struct policy_addr *a,
			 const struct policy_addr *b)
{
	unsigned bits =
		a->prefix_len < b->prefix_len ? a->prefix_len : b->prefix_len;

	return a->family == b->family && bits_equal(a->addr, b->addr, bits);
}

static bool host_bits_clear(const struct policy_addr *a)
{
	unsigned i, bits = a->prefix_len;

	for (i = 0; i < addr_bytes(a->family); i++) {
		uint8_t keep = bits >= 8 ? 0xff : (uint8_t)(0xff << (8 - bits));

		if (a->addr[i] & ~keep)
			return false;
		bits = bits > 8 ? bits - 8 : 0;
	}
	return true;
}

void policy_format_addr(const struct policy_addr *a,
			char buf[POLICY_ADDR_STRLEN])
{
	size_t n;

	if (!inet_ntop(a->family, a->addr, buf, POLICY_ADDR_STRLEN)) {
		snprintf(buf, POLICY_ADDR_STRLEN, "?");
		return;
	}
	if (a->prefix_len != addr_bytes(a->family) * 8) {
		n = strlen(buf);
		snprintf(buf + n, POLICY_ADDR_STRLEN - n, "/%u", a->prefix_len);
	}
}

/* Syntax only; *why says what is wrong on failure. */
static int addr_value(const char *s, struct policy_addr *ret,
		      struct reason *why)
{
	char buf[INET6_ADDRSTRLEN + 8], *slash;
	struct policy_addr a = { 0 };
	const char *end;
	uint64_t len;

	if (strlen(s) >= sizeof(buf))
		return reason_fail(why, -EINVAL, "too long");
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (slash)
		*slash = '\0';
	a.family = strchr(buf, ':') ? AF_INET6 : AF_INET;
	if (inet_pton(a.family, buf, a.addr) != 1)
		return reason_fail(why, -EINVAL, "not an IPv4 or IPv6 address");
	a.prefix_len = (uint8_t)(addr_bytes(a.family) * 8);
	if (slash) {
		if (parse_u64(slash + 1, &end, &len) < 0 || *end ||
		    end - slash > 4 || len > a.prefix_len)
			return reason_fail(why, -EINVAL, "bad prefix length");
		a.prefix_len = (uint8_t)len;
		if (!host_bits_clear(&a))
			return reason_fail(
				why, -EINVAL,
				"host bits set beyond the prefix length");
	}
	*ret = a;
	return 0;
}

int policy_parse_addr(const char *s, struct policy_addr *ret)
{
	return addr_value(s, ret, NULL);
}

static const struct reserved *addr_reserved(const struct policy_addr *a)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(reserved); i++)
		if (addr_overlap(a, &reserved[i].net))
			return &reserved[i];
	return NULL;
}

static int addr_item(struct parser *ps, const char *item,
		     struct policy_addr *ret)
{
	char net[POLICY_ADDR_STRLEN];
	const struct reserved *r;
	struct reason why;

	if (addr_value(item, ret, &why) < 0) {
		perr(ps, ps->lineno,
		     "addresses: %s: %s (expected an address "
		     "such as 10.99.0.10 or fd99::10, or a prefix such as "
		     "fd99:0:0:1::/64)",
		     show(item).s, why.msg);
		return -1;
	}
	r = addr_reserved(ret);
	if (r) {
		policy_format_addr(&r->net, net);
		perr(ps, ps->lineno,
		     "addresses: %s: overlaps %s (%s), which "
		     "no VM may claim",
		     show(item).s, net, r->what);
		return -1;
	}
	return 0;
}

static int parse_addrs(struct parser *ps, const struct key_desc *k,
		       const char *v, void *base)
{
	struct policy_addr list[POLICY_MAX_ADDRS], *copy;
	struct policy_vm *vm = base;
	char buf[POLICY_LINE_MAX + 1], *item, *next;
	size_t n = 0;
	int bad = 0;

	snprintf(buf, sizeof(buf), "%s", v);
	for (next = buf; *v && next; n++) {
		item = next;
		next = strchr(item, ',');
		if (next)
			*next++ = '\0';
		item = trim(item);
		if (!*item) {
			perr(ps, ps->lineno,
			     "addresses: empty item in the "
			     "list (expected addresses separated by commas)");
			return -1;
		}
		if (n == POLICY_MAX_ADDRS) {
			perr(ps, ps->lineno,
			     "addresses: more than %d entries "
			     "(use a prefix)",
			     POLICY_MAX_ADDRS);
			return -1;
		}
		bad |= addr_item(ps, item, &list[n]);
	}
	if (bad)
		return -1;
	copy = n ? malloc(n * sizeof(*copy)) : NULL;
	if (n && !copy)
		return ps->oom = true, -1;
	if (n)
		memcpy(copy, list, n * sizeof(*copy));
	free((void *)vm->addrs);
	vm->addrs = copy;
	vm->n_addrs = n;
	return 0;
}

/* the control protocol's names and numbers */
_Static_assert((int)POLICY_FRONTEND_VIRTIO_RDMA ==
			       (int)BP_FRONTEND_VIRTIO_RDMA &&
		       (int)POLICY_FRONTEND_PVRDMA == (int)BP_FRONTEND_PVRDMA &&
		       (int)POLICY_FRONTEND_QEMU_PVRDMA ==
			       (int)BP_FRONTEND_QEMU_PVRDMA,
	       "frontend numbers");

const char *policy_frontend_name(uint32_t frontend)
{
	return bp_frontend_name(frontend);
}

static int parse_frontend(struct parser *ps, const struct key_desc *k,
			  const char *v, void *base)
{
	if (bp_frontend_parse(v, (uint32_t *)((char *)base + k->off)) == 0)
		return 0;
	perr(ps, ps->lineno,
	     "%s = %s: not a frontend (expected virtio-rdma, pvrdma or "
	     "qemu-pvrdma)",
	     k->name, show(v).s);
	return -1;
}

typedef int (*parse_fn)(struct parser *ps, const struct key_desc *k,
			const char *v, void *base);

static const parse_fn parsers[] = {
	[T_PATH] = parse_path,	     [T_GROUP] = parse_group,
	[T_IDRANGE] = parse_idrange, [T_DEVICE] = parse_device,
	[T_U32] = parse_u32,	     [T_U8] = parse_u8,
	[T_SIZE] = parse_size,	     [T_ADDRS] = parse_addrs,
	[T_ID] = parse_id,	     [T_FRONTEND] = parse_frontend,
	[T_NICE] = parse_nice,
};

/* ---- lines and sections ------------------------------------------------ */

static const char *const section_names[] = {
	[SEC_BROKER] = "[broker]",
	[SEC_DEFAULTS] = "[defaults]",
	[SEC_VM] = "[vm NAME]",
};

static void where_allowed(unsigned mask, char *buf, size_t len)
{
	const char *sep = "";
	size_t n = 0;
	int s;

	buf[0] = '\0';
	for (s = SEC_BROKER; s <= SEC_VM; s++) {
		if (!(mask & (1u << s)) || n >= len)
			continue;
		n += snprintf(buf + n, len - n, "%s%s", sep, section_names[s]);
		sep = " or ";
	}
}

static const struct key_desc *key_find(const char *name)
{
	size_t i;

	for (i = 0; i < K_COUNT; i++)
		if (!strcmp(keys[i].name, name))
			return &keys[i];
	return NULL;
}

static void parse_key(struct parser *ps, char *line, char *eq)
{
	const struct key_desc *k;
	struct section *sec = ps->cur_sec;
	char where[64];
	char *key, *v;
	uint32_t bit;

	*eq = '\0';
	key = trim(line);
	v = trim(eq + 1);
	if (ps->sec == SEC_SKIP)
		return;
	if (ps->sec == SEC_NONE) {
		perr(ps, ps->lineno,
		     "%s: outside any section (start with "
		     "[broker], [defaults] or [vm NAME])",
		     show(key).s);
		return;
	}
	k = key_find(key);
	if (!k) {
		perr(ps, ps->lineno,
		     "unknown key \"%s\" in %s (see "
		     "docs/policy.md)",
		     show(key).s, ps->label);
		return;
	}
	if (!(k->sections & (1u << ps->sec))) {
		where_allowed(k->sections, where, sizeof(where));
		perr(ps, ps->lineno,
		     "%s is not allowed in %s (it belongs in "
		     "%s)",
		     k->name, ps->label, where);
		return;
	}
	bit = 1u << (k - keys);
	if (sec->set & bit) {
		perr(ps, ps->lineno,
		     "%s set twice in this section (first on "
		     "line %u)",
		     k->name, sec->key_line[k - keys]);
		return;
	}
	sec->set |= bit;
	sec->key_line[k - keys] = ps->lineno;
	if (parsers[k->type](ps, k, v, ps->cur_base) < 0)
		sec->bad |= bit;
}

static void enter(struct parser *ps, enum sec_kind kind, struct section *sec,
		  void *base)
{
	ps->sec = kind;
	ps->cur_sec = sec;
	ps->cur_base = base;
	sec->line = ps->lineno;
	if (kind == SEC_VM)
		snprintf(ps->label, sizeof(ps->label), "[vm %s]",
			 ((struct policy_vm *)base)->name);
	else
		snprintf(ps->label, sizeof(ps->label), "%s",
			 section_names[kind]);
}

#define INDEX_SLOTS (2 * POLICY_MAX_VMS) /* a power of two, half full */
_Static_assert((INDEX_SLOTS & (INDEX_SLOTS - 1)) == 0 &&
		       POLICY_MAX_VMS < UINT16_MAX,
	       "the VM name index needs a power of two and 16-bit positions");

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	while (*s)
		h = (h ^ (uint8_t)*s++) * 16777619u;
	return h;
}

/* The index slot of name: where it is, or the free slot it would take.
 * Duplicate headers are checked in O(1), not against every VM. */
static uint16_t *vm_slot(struct parser *ps, const char *name)
{
	uint32_t i = name_hash(name) & (INDEX_SLOTS - 1);

	while (ps->index[i] &&
	       strcmp(ps->p->vms[ps->index[i] - 1].vm.name, name))
		i = (i + 1) & (INDEX_SLOTS - 1);
	return &ps->index[i];
}

static struct vm_entry *vm_find(struct parser *ps, const char *name)
{
	uint16_t *slot;

	if (!ps->index) {
		ps->index = calloc(INDEX_SLOTS, sizeof(*ps->index));
		if (!ps->index)
			return ps->oom = true, NULL;
	}
	slot = vm_slot(ps, name);
	return *slot ? &ps->p->vms[*slot - 1] : NULL;
}

static struct vm_entry *vm_add(struct parser *ps, const char *name)
{
	struct policy *p = ps->p;
	struct vm_entry *v;
	size_t cap;

	if (p->n_vms == p->cap_vms) {
		cap = p->cap_vms ? 2 * p->cap_vms : 16;
		v = reallocarray(p->vms, cap, sizeof(*v));
		if (!v)
			return ps->oom = true, NULL;
		p->vms = v;
		p->cap_vms = cap;
	}
	v = &p->vms[p->n_vms++];
	memset(v, 0, sizeof(*v));
	snprintf(v->vm.name, sizeof(v->vm.name), "%s", name);
	*vm_slot(ps, name) = (uint16_t)p->n_vms;
	return v;
}

static void header_vm(struct parser *ps, const char *name)
{
	struct vm_entry *v;
	const char *why;

	if (!*name) {
		perr(ps, ps->lineno,
		     "[vm] without a name (expected "
		     "[vm NAME])");
		return;
	}
	why = check_name(name, POLICY_VM_NAME_MAX);
	if (why) {
		perr(ps, ps->lineno,
		     "[vm %s]: name %s (expected 1 to %d of "
		     "A-Z a-z 0-9 _ . -, not starting with . or -)",
		     show(name).s, why, POLICY_VM_NAME_MAX);
		return;
	}
	v = vm_find(ps, name);
	if (ps->oom)
		return;
	if (v) {
		perr(ps, ps->lineno,
		     "[vm %s]: second section for this VM "
		     "(first on line %u)",
		     name, v->sec.line);
		return;
	}
	if (ps->p->n_vms == POLICY_MAX_VMS) {
		perr(ps, ps->lineno, "[vm %s]: more than %d VMs", name,
		     POLICY_MAX_VMS);
		ps->stop = true;
		return;
	}
	v = vm_add(ps, name);
	if (v)
		enter(ps, SEC_VM, &v->sec, &v->vm);
}

static void header_single(struct parser *ps, enum sec_kind kind,
			  struct section *sec, void *base)
{
	if (sec->line) {
		perr(ps, ps->lineno, "%s: second section (first on line %u)",
		     section_names[kind], sec->line);
		return;
	}
	enter(ps, kind, sec, base);
}

static void parse_header(struct parser *ps, char *line)
{
	char *close = strchr(line, ']'), *in;

	ps->sec = SEC_SKIP; /* until the header proves good */
	if (!close) {
		perr(ps, ps->lineno,
		     "section header without ] (expected "
		     "[broker], [defaults] or [vm NAME])");
		return;
	}
	if (*trim(close + 1)) {
		perr(ps, ps->lineno, "text after the section header's ]");
		return;
	}
	*close = '\0';
	in = trim(line + 1);
	if (!strcmp(in, "broker"))
		header_single(ps, SEC_BROKER, &ps->p->broker_sec,
			      &ps->p->broker);
	else if (!strcmp(in, "defaults"))
		header_single(ps, SEC_DEFAULTS, &ps->p->defaults.sec,
			      &ps->p->defaults.vm);
	else if (!strncmp(in, "vm", 2) && (is_blank(in[2]) || !in[2]))
		header_vm(ps, trim(in + 2));
	else
		perr(ps, ps->lineno,
		     "unknown section [%s] (expected "
		     "[broker], [defaults] or [vm NAME])",
		     show(in).s);
}

/* A comment starts a line, or follows a blank: "x = 1 # one". */
static void strip_comment(char *s)
{
	char *c;

	for (c = s; *c; c++) {
		if ((*c == '#' || *c == ';') && (c == s || is_blank(c[-1]))) {
			*c = '\0';
			return;
		}
	}
}

static void parse_line(struct parser *ps, char *line)
{
	char *eq, *c;

	for (c = line; *c; c++) {
		if ((unsigned char)*c < 0x20 && *c != '\t') {
			perr(ps, ps->lineno,
			     "control character 0x%02x in the "
			     "line",
			     (unsigned char)*c);
			return;
		}
		if (*c == 0x7f) {
			perr(ps, ps->lineno,
			     "control character 0x7f in the "
			     "line");
			return;
		}
	}
	strip_comment(line);
	line = trim(line);
	if (!*line)
		return;
	if (*line == '[')
		return parse_header(ps, line);
	eq = strchr(line, '=');
	if (!eq) {
		perr(ps, ps->lineno, "%s: expected KEY = VALUE or [SECTION]",
		     show(line).s);
		return;
	}
	parse_key(ps, line, eq);
}

static void parse_lines(struct parser *ps, const char *text, size_t len)
{
	char line[POLICY_LINE_MAX + 1];
	const char *nl, *end = text + len;
	size_t n;

	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
		text += 3; /* a UTF-8 byte order mark */
	while (text < end && !ps->stop && !ps->oom) {
		ps->lineno++;
		nl = memchr(text, '\n', end - text);
		n = (nl ? nl : end) - text;
		if (n && text[n - 1] == '\r')
			n--; /* CRLF */
		if (n > POLICY_LINE_MAX)
			perr(ps, ps->lineno, "line longer than %d bytes",
			     POLICY_LINE_MAX);
		else if (memchr(text, '\0', n))
			perr(ps, ps->lineno, "NUL byte in the line");
		else {
			memcpy(line, text, n);
			line[n] = '\0';
			parse_line(ps, line);
		}
		text = nl ? nl + 1 : end;
	}
}

/* ---- whole-policy checks ---------------------------------------------- */

static size_t field_size(const struct key_desc *k)
{
	switch (k->type) {
	case T_DEVICE:
		return k->len;
	case T_U8:
		return sizeof(uint8_t);
	case T_SIZE:
		return sizeof(uint64_t);
	default:
		return sizeof(uint32_t);
	}
}

/* A VM inherits every [defaults] key its section does not set. */
static void merge_defaults(struct policy *p, struct vm_entry *v)
{
	const struct key_desc *k;

	for (k = keys; k < keys + K_COUNT; k++) {
		if (!(k->sections & IN_DEFAULTS) ||
		    (v->sec.set & (1u << (k - keys))))
			continue;
		memcpy((char *)&v->vm + k->off,
		       (const char *)&p->defaults.vm + k->off, field_size(k));
	}
}

/* ---- queue depths, per frontend ---- */

static const enum key_id depth_keys[] = { K_MAX_CQE, K_MAX_QP_WR,
					  K_MAX_SRQ_WR };

static bool is_depth_key(const struct key_desc *k)
{
	size_t i;

	for (i = 0; i < sizeof(depth_keys) / sizeof(depth_keys[0]); i++)
		if (k == &keys[depth_keys[i]])
			return true;
	return false;
}

static uint32_t *depth_field(struct policy_vm *vm, enum key_id k)
{
	return (uint32_t *)((char *)vm + keys[k].off);
}

/* An unset depth: the frontend's (virtio-rdma: its ring size). */
static uint32_t depth_default(uint32_t frontend, enum key_id k)
{
	if (frontend == POLICY_FRONTEND_VIRTIO_RDMA)
		return POLICY_DEPTH_LIMIT;
	return k == K_MAX_CQE ? POLICY_PVRDMA_MAX_CQE : POLICY_PVRDMA_MAX_WR;
}

/*
 * A virtio-rdma VM's depths fit its 512-entry rings.  [defaults] is
 * checked against its own frontend; a VM against its own, for what its
 * section sets or what it inherits across frontends (reported once, where
 * the value was written).
 */
static void check_depth(struct parser *ps, const struct vm_entry *v,
			enum key_id k, bool is_defaults)
{
	const struct vm_entry *d = &ps->p->defaults;
	uint32_t bit = 1u << k, val;
	bool own = v->sec.set & bit;

	memcpy(&val, (const char *)&v->vm + keys[k].off, sizeof(val));

	if (v->vm.frontend != POLICY_FRONTEND_VIRTIO_RDMA ||
	    val <= POLICY_DEPTH_LIMIT || ((v->sec.bad | d->sec.bad) & bit))
		return;
	if (own || is_defaults)
		perr(ps, v->sec.key_line[k], "%s = %u: more than %u (%s)",
		     keys[k].name, val, POLICY_DEPTH_LIMIT, RING);
	else if (d->vm.frontend != POLICY_FRONTEND_VIRTIO_RDMA)
		perr(ps, v->sec.line,
		     "[vm %s]: %s = %u (from [defaults], line %u): more than "
		     "%u (%s of its frontend virtio-rdma)",
		     v->vm.name, keys[k].name, val, d->sec.key_line[k],
		     POLICY_DEPTH_LIMIT, RING);
}

/* After merge_defaults: checks, then gives unset depths their frontend's. */
static void check_depths(struct parser *ps, struct vm_entry *v,
			 bool is_defaults)
{
	uint32_t *f;
	size_t i;

	for (i = 0; i < sizeof(depth_keys) / sizeof(depth_keys[0]); i++) {
		check_depth(ps, v, depth_keys[i], is_defaults);
		f = depth_field(&v->vm, depth_keys[i]);
		if (!*f && !is_defaults)
			*f = depth_default(v->vm.frontend, depth_keys[i]);
	}
}

static void check_device(struct parser *ps, struct vm_entry *v)
{
	uint32_t bit = 1u << K_DEVICE;

	if (v->vm.device[0] || (v->sec.bad & bit) ||
	    (ps->p->defaults.sec.bad & bit))
		return;
	perr(ps, v->sec.line,
	     "[vm %s]: no device (set device in [defaults] "
	     "or in this section)",
	     v->vm.name);
}

static void check_ids_in_range(struct parser *ps, struct vm_entry *v)
{
	const struct policy_broker *b = &ps->p->broker;
	const bool has[2] = { v->vm.has_uid, v->vm.has_gid };
	const uint32_t id[2] = { v->vm.uid, v->vm.gid };
	const enum key_id k[2] = { K_UID, K_GID };
	int i;

	if (ps->p->broker_sec.bad & (1u << K_WORKER_IDS))
		return;
	for (i = 0; i < 2; i++) {
		if (!has[i] ||
		    (id[i] >= b->worker_id_first && id[i] <= b->worker_id_last))
			continue;
		perr(ps, v->sec.key_line[k[i]],
		     "%s = %u: outside worker_ids "
		     "%u-%u",
		     keys[k[i]].name, id[i], b->worker_id_first,
		     b->worker_id_last);
	}
}

struct id_ref {
	uint32_t id;
	unsigned line;
	const char *vm;
};

static int id_ref_cmp(const void *a, const void *b)
{
	const struct id_ref *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

/* The id key k (K_UID, K_GID, K_VMM_UID, K_VMM_GID) of vm, if set. */
static bool vm_id(const struct policy_vm *vm, enum key_id k, uint32_t *ret)
{
	const struct key_desc *d = &keys[k];

	if (!*(const bool *)((const char *)vm + d->flag_off))
		return false;
	*ret = *(const uint32_t *)((const char *)vm + d->off);
	return true;
}

/* A VM's QEMU identity is never a worker's: a worker must not reach
 * another VM's socket, nor a VMM a worker's files. */
static void check_vmm_ids(struct parser *ps, struct vm_entry *v)
{
	const struct policy_broker *b = &ps->p->broker;
	const enum key_id k[2] = { K_VMM_UID, K_VMM_GID };
	uint32_t id;
	int i;

	if (ps->p->broker_sec.bad & (1u << K_WORKER_IDS))
		return;
	for (i = 0; i < 2; i++)
		if (vm_id(&v->vm, k[i], &id) && id >= b->worker_id_first &&
		    id <= b->worker_id_last)
			perr(ps, v->sec.key_line[k[i]],
			     "%s = %u: inside worker_ids %u-%u (a QEMU "
			     "identity is never a worker's)",
			     keys[k[i]].name, id, b->worker_id_first,
			     b->worker_id_last);
}

/* No two VMs may share a fixed uid (or gid), nor a QEMU identity:
 * isolation rests on it. */
static void check_ids_unique(struct parser *ps, enum key_id k)
{
	struct policy *p = ps->p;
	_cleanup_free_ struct id_ref *refs = NULL;
	size_t i, n = 0;

	refs = calloc(p->n_vms ? p->n_vms : 1, sizeof(*refs));
	if (!refs) {
		ps->oom = true;
		return;
	}
	for (i = 0; i < p->n_vms; i++) {
		struct vm_entry *v = &p->vms[i];

		uint32_t id;

		if (!vm_id(&v->vm, k, &id))
			continue;
		refs[n++] =
			(struct id_ref){ id, v->sec.key_line[k], v->vm.name };
	}
	qsort(refs, n, sizeof(*refs), id_ref_cmp);
	for (i = 1; i < n; i++)
		if (refs[i].id == refs[i - 1].id)
			perr(ps, refs[i].line,
			     "%s = %u: also the %s of [vm %s] "
			     "(line %u)",
			     keys[k].name, refs[i].id, keys[k].name,
			     refs[i - 1].vm, refs[i - 1].line);
}

static void check_id_count(struct parser *ps)
{
	const struct policy_broker *b = &ps->p->broker;
	uint64_t ids = (uint64_t)b->worker_id_last - b->worker_id_first + 1;
	unsigned line = ps->p->broker_sec.key_line[K_WORKER_IDS];

	if (ps->p->n_vms <= ids ||
	    (ps->p->broker_sec.bad & (1u << K_WORKER_IDS)))
		return;
	if (!(ps->p->broker_sec.set & (1u << K_WORKER_IDS)))
		line = ps->p->vms[ids].sec.line;
	perr(ps, line,
	     "worker_ids %u-%u: %llu ids for %zu VMs (each worker "
	     "needs its own uid)",
	     b->worker_id_first, b->worker_id_last, (unsigned long long)ids,
	     ps->p->n_vms);
}

struct addr_ref {
	struct policy_addr a;
	uint8_t last[16]; /* the highest address the entry covers */
	unsigned line;
	const struct vm_entry *v;
};

static int addr_cmp(const struct policy_addr *x, const struct policy_addr *y)
{
	int r;

	if (x->family != y->family)
		return x->family == AF_INET ? -1 : 1;
	r = memcmp(x->addr, y->addr, 16);
	if (r)
		return r;
	return (x->prefix_len > y->prefix_len) -
	       (x->prefix_len < y->prefix_len);
}

static int addr_ref_cmp(const void *a, const void *b)
{
	const struct addr_ref *x = a, *y = b;
	int r = addr_cmp(&x->a, &y->a);

	if (r)
		return r;
	return (x->line > y->line) - (x->line < y->line);
}

static void addr_last(const struct policy_addr *a, uint8_t last[16])
{
	unsigned i, bits = a->prefix_len;

	memcpy(last, a->addr, 16);
	for (i = 0; i < addr_bytes(a->family); i++) {
		if (bits < 8)
			last[i] |= (uint8_t)(0xff >> bits);
		bits = bits > 8 ? bits - 8 : 0;
	}
}

static void report_overlap(struct parser *ps, const struct addr_ref *x,
			   const struct addr_ref *y)
{
	char xs[POLICY_ADDR_STRLEN], ys[POLICY_ADDR_STRLEN];
	const struct addr_ref *t;

	if (x->line < y->line)
		t = x, x = y, y = t; /* report on the later line */
	policy_format_addr(&x->a, xs);
	policy_format_addr(&y->a, ys);
	if (x->v == y->v && x->line == y->line)
		perr(ps, x->line,
		     "addresses: %s overlaps %s in the same "
		     "list",
		     xs, ys);
	else
		perr(ps, x->line,
		     "addresses: %s overlaps %s of [vm %s] "
		     "(line %u)",
		     xs, ys, y->v->vm.name, y->line);
}

/*
 * Prefixes nest or are disjoint.  Sorted by start (shorter prefix first),
 * the entries still open when one starts all contain it: report it against
 * the innermost, so each entry costs one comparison and one message.
 */
static void check_addresses(struct parser *ps)
{
	struct policy *p = ps->p;
	_cleanup_free_ struct addr_ref *refs = NULL;
	_cleanup_free_ size_t *open = NULL;
	size_t i, j, n = 0, depth = 0;

	for (i = 0; i < p->n_vms; i++)
		n += p->vms[i].vm.n_addrs;
	if (!n)
		return;
	refs = calloc(n, sizeof(*refs));
	open = calloc(n, sizeof(*open));
	if (!refs || !open) {
		ps->oom = true;
		return;
	}
	for (n = 0, i = 0; i < p->n_vms; i++) {
		for (j = 0; j < p->vms[i].vm.n_addrs; j++, n++) {
			refs[n].a = p->vms[i].vm.addrs[j];
			refs[n].line = p->vms[i].sec.key_line[K_ADDRESSES];
			refs[n].v = &p->vms[i];
			addr_last(&refs[n].a, refs[n].last);
		}
	}
	qsort(refs, n, sizeof(*refs), addr_ref_cmp);
	for (i = 0; i < n; i++) {
		while (depth) {
			const struct addr_ref *top = &refs[open[depth - 1]];

			if (top->a.family == refs[i].a.family &&
			    memcmp(refs[i].a.addr, top->last, 16) <= 0)
				break;
			depth--;
		}
		if (depth)
			report_overlap(ps, &refs[i], &refs[open[depth - 1]]);
		open[depth++] = i;
	}
}

static int addr_qsort_cmp(const void *a, const void *b)
{
	return addr_cmp(a, b);
}

static int vm_cmp(const void *a, const void *b)
{
	const struct vm_entry *x = a, *y = b;

	return strcmp(x->vm.name, y->vm.name);
}

static void finish(struct parser *ps)
{
	struct policy *p = ps->p;
	size_t i;

	check_depths(ps, &p->defaults, true);
	for (i = 0; i < p->n_vms; i++) {
		merge_defaults(p, &p->vms[i]);
		check_depths(ps, &p->vms[i], false);
		check_device(ps, &p->vms[i]);
		check_ids_in_range(ps, &p->vms[i]);
		check_vmm_ids(ps, &p->vms[i]);
	}
	check_ids_unique(ps, K_UID);
	check_ids_unique(ps, K_GID);
	check_ids_unique(ps, K_VMM_UID);
	check_ids_unique(ps, K_VMM_GID);
	check_id_count(ps);
	check_addresses(ps);
	for (i = 0; i < p->n_vms; i++)
		if (p->vms[i].vm.n_addrs)
			qsort((void *)p->vms[i].vm.addrs, p->vms[i].vm.n_addrs,
			      sizeof(struct policy_addr), addr_qsort_cmp);
	if (p->n_vms)
		qsort(p->vms, p->n_vms, sizeof(*p->vms), vm_cmp);
}

/* ---- entry points ------------------------------------------------------ */

void policy_free(struct policy *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->n_vms; i++)
		free((void *)p->vms[i].vm.addrs);
	free(p->vms);
	free(p);
}

static struct policy *policy_new(void)
{
	struct policy *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->broker = builtin_broker;
	p->defaults.vm = builtin_defaults;
	return p;
}

int policy_parse_buffer(const char *text, size_t len, const char *name,
			struct policy **ret, struct policy_error *err)
{
	struct parser ps = { .name = name, .err = err };
	struct policy_error local;

	if (!err)
		err = ps.err = &local;
	memset(err, 0, sizeof(*err));
	if (len > POLICY_FILE_MAX) {
		error_at(err, name, 0, "larger than %u MiB",
			 POLICY_FILE_MAX >> 20);
		return -EFBIG;
	}
	ps.p = policy_new();
	if (!ps.p)
		goto oom;
	parse_lines(&ps, text, len);
	if (!ps.oom && !ps.stop)
		finish(&ps);
	free(ps.index);
	if (ps.oom)
		goto oom;
	if (err->n) {
		policy_free(ps.p);
		return -EINVAL;
	}
	*ret = ps.p;
	return 0;
oom:
	policy_free(ps.p);
	memset(err, 0, sizeof(*err));
	error_at(err, name, 0, "out of memory");
	return -ENOMEM;
}

int policy_parse_string(const char *text, const char *name, struct policy **ret,
			struct policy_error *err)
{
	return policy_parse_buffer(text, strlen(text), name, ret, err);
}

static int strict_check(int fd, const char *name, struct policy_error *err)
{
	struct stat st;
	int r;

	if (fstat(fd, &st) < 0) {
		r = -errno;
		error_at(err, name, 0, "cannot stat: %s", strerror(-r));
		return r;
	}
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		error_at(err, name, 0, "owned by uid %u, not root: refused",
			 (unsigned)st.st_uid);
		return -EPERM;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		error_at(err, name, 0,
			 "mode %04o lets group or others write "
			 "it: refused (chmod go-w)",
			 st.st_mode & 07777);
		return -EPERM;
	}
	return 0;
}

/* Reads all of fd, at most POLICY_FILE_MAX bytes. */
static int read_all(int fd, const char *name, char **ret, size_t *ret_len,
		    struct policy_error *err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, cap = 0;
	ssize_t n;
	char *nb;

	for (;;) {
		if (len == cap) {
			cap = cap ? 2 * cap : 65536;
			if (cap > POLICY_FILE_MAX + 1)
				cap = POLICY_FILE_MAX + 1;
			if (len == cap) {
				error_at(err, name, 0, "larger than %u MiB",
					 POLICY_FILE_MAX >> 20);
				return -EFBIG;
			}
			nb = realloc(buf, cap);
			if (!nb) {
				error_at(err, name, 0, "out of memory");
				return -ENOMEM;
			}
			buf = nb;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int r = -errno;

			error_at(err, name, 0, "cannot read: %s", strerror(-r));
			return r;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	*ret = TAKE_PTR(buf);
	*ret_len = len;
	return 0;
}

int policy_load_fd(int fd, const char *name, unsigned flags,
		   struct policy **ret, struct policy_error *err)
{
	_cleanup_free_ char *text = NULL;
	struct policy_error local;
	size_t len = 0;
	int r;

	if (!err)
		err = &local;
	memset(err, 0, sizeof(*err));
	if (flags & POLICY_LOAD_STRICT) {
		r = strict_check(fd, name, err);
		if (r < 0)
			return r;
	}
	r = read_all(fd, name, &text, &len, err);
	if (r < 0)
		return r;
	return policy_parse_buffer(text, len, name, ret, err);
}

int policy_load(const char *path, unsigned flags, struct policy **ret,
		struct policy_error *err)
{
	_cleanup_close_ int fd = -1;
	struct policy_error local;
	struct stat st;
	int r;

	if (!err)
		err = &local;
	memset(err, 0, sizeof(*err));
	/* O_NONBLOCK: a FIFO planted at the path must not hang the broker. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		r = -errno;
		error_at(err, path, 0, "cannot open: %s", strerror(errno));
		return r;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		error_at(err, path, 0, "cannot stat: %s", strerror(errno));
		return r;
	}
	if (!S_ISREG(st.st_mode)) {
		error_at(err, path, 0, "not a regular file");
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	}
	return policy_load_fd(fd, path, flags, ret, err);
}

/* ---- queries ----------------------------------------------------------- */

const struct policy_broker *policy_broker(const struct policy *p)
{
	return &p->broker;
}

const struct policy_vm *policy_defaults(const struct policy *p)
{
	return &p->defaults.vm;
}

size_t policy_vm_count(const struct policy *p)
{
	return p->n_vms;
}

const struct policy_vm *policy_vm_at(const struct policy *p, size_t i)
{
	return i < p->n_vms ? &p->vms[i].vm : NULL;
}

static int vm_name_cmp(const void *key, const void *elem)
{
	const struct vm_entry *v = elem;

	return strcmp(key, v->vm.name);
}

const struct policy_vm *policy_lookup_vm(const struct policy *p,
					 const char *name)
{
	const struct vm_entry *v;

	if (!p->n_vms)
		return NULL;
	v = bsearch(name, p->vms, p->n_vms, sizeof(*p->vms), vm_name_cmp);
	return v ? &v->vm : NULL;
}

static const uint8_t v4_mapped[12] = { [10] = 0xff, [11] = 0xff };

bool policy_vm_may_claim(const struct policy *p, const char *vm_name,
			 int family, const void *addr)
{
	const struct policy_vm *vm = policy_lookup_vm(p, vm_name);
	struct policy_addr a = { .family = family };
	size_t i;

	if (!vm || (family != AF_INET && family != AF_INET6))
		return false;
	memcpy(a.addr, addr, addr_bytes(family));
	if (family == AF_INET6 && !memcmp(a.addr, v4_mapped, 12)) {
		a.family = AF_INET;
		memmove(a.addr, a.addr + 12, 4);
		memset(a.addr + 4, 0, 12);
	}
	a.prefix_len = (uint8_t)(addr_bytes(a.family) * 8);
	for (i = 0; i < vm->n_addrs; i++)
		if (vm->addrs[i].family == a.family &&
		    bits_equal(vm->addrs[i].addr, a.addr,
			       vm->addrs[i].prefix_len))
			return true;
	return false;
}

/* ---- the canonical form ----------------------------------------------- */

static void put_kv(FILE *f, const char *key, const char *value)
{
	if (*value)
		fprintf(f, "%s = %s\n", key, value);
	else
		fprintf(f, "%s =\n", key);
}

static void format_size(uint64_t n, char *buf, size_t len)
{
	int i = 0;

	while (i < 5 && n && !(n & 1023))
		n >>= 10, i++;
	if (i)
		snprintf(buf, len, "%llu%c", (unsigned long long)n,
			 size_suffixes[i - 1]);
	else
		snprintf(buf, len, "%llu", (unsigned long long)n);
}

static void print_addrs(FILE *f, const struct policy_vm *vm)
{
	char a[POLICY_ADDR_STRLEN];
	size_t i;

	fputs("addresses =", f);
	for (i = 0; i < vm->n_addrs; i++) {
		policy_format_addr(&vm->addrs[i], a);
		fprintf(f, "%s %s", i ? "," : "", a);
	}
	fputc('\n', f);
}

static void print_key(FILE *f, const struct key_desc *k, const void *base)
{
	const char *field = (const char *)base + k->off;
	const struct policy_broker *b = base;
	char buf[32];

	switch (k->type) {
	case T_PATH:
	case T_GROUP:
	case T_DEVICE:
		put_kv(f, k->name, field);
		return;
	case T_IDRANGE:
		fprintf(f, "%s = %u-%u\n", k->name, b->worker_id_first,
			b->worker_id_last);
		return;
	case T_U32:
	case T_ID:
		fprintf(f, "%s = %u\n", k->name, *(const uint32_t *)field);
		return;
	case T_U8:
		fprintf(f, "%s = %u\n", k->name, *(const uint8_t *)field);
		return;
	case T_NICE:
		fprintf(f, "%s = %d\n", k->name, *(const int32_t *)field);
		return;
	case T_SIZE:
		format_size(*(const uint64_t *)field, buf, sizeof(buf));
		put_kv(f, k->name, buf);
		return;
	case T_ADDRS:
		print_addrs(f, base);
		return;
	case T_FRONTEND:
		put_kv(f, k->name,
		       policy_frontend_name(*(const uint32_t *)field));
		return;
	}
}

/* Which keys a section prints: all it may hold, less what is unset. */
static bool printed(const struct key_desc *k, unsigned sec,
		    const struct vm_entry *v)
{
	uint32_t bit = 1u << (k - keys);

	if (!(k->sections & (1u << sec)))
		return false;
	if (sec == SEC_BROKER)
		return true;
	if (sec == SEC_DEFAULTS && is_depth_key(k) && !(v->sec.set & bit))
		return false; /* unset: each VM gets its frontend's */
	if (sec == SEC_DEFAULTS)
		return k->type != T_DEVICE || v->vm.device[0];
	if (k->type == T_ADDRS)
		return v->vm.n_addrs > 0;
	return v->sec.set & bit;
}

static void print_section(FILE *f, unsigned sec, const void *base,
			  const struct vm_entry *v)
{
	size_t i;

	for (i = 0; i < K_COUNT; i++)
		if (printed(&keys[i], sec, v))
			print_key(f, &keys[i], base);
}

int policy_print_canonical(const struct policy *p, FILE *f)
{
	size_t i;

	fputs("[broker]\n", f);
	print_section(f, SEC_BROKER, &p->broker, NULL);
	fputs("\n[defaults]\n", f);
	print_section(f, SEC_DEFAULTS, &p->defaults.vm, &p->defaults);
	for (i = 0; i < p->n_vms; i++) {
		fprintf(f, "\n[vm %s]\n", p->vms[i].vm.name);
		print_section(f, SEC_VM, &p->vms[i].vm, &p->vms[i]);
	}
	return ferror(f) ? -EIO : 0;
}

char *policy_canonical_string(const struct policy *p)
{
	char *buf = NULL;
	size_t len;
	FILE *f;
	int r;

	f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	r = policy_print_canonical(p, f);
	if (fclose(f) != 0 || r < 0) {
		free(buf);
		return NULL;
	}
	return buf;
}
