// SPDX-License-Identifier: MIT
/* The policy parser: semantics of the API, and every error path by name. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "policy/policy.h"

#define DEV	 "[defaults]\ndevice = rxe0\n"
#define SENTINEL ((struct policy *)0x1)

static struct policy *parse_ok(const char *text)
{
	struct policy_error err;
	struct policy *p = NULL;
	int r;

	r = policy_parse_string(text, "t.conf", &p, &err);
	if (r < 0)
		policy_error_print(&err, stderr);
	assert_int_equal(r, 0);
	assert_non_null(p);
	return p;
}

/* Fails with -EINVAL, leaves *ret alone, and says first_msg first. */
static void parse_bad(const char *text, const char *first_msg,
		      struct policy_error *err)
{
	struct policy *p = SENTINEL;

	assert_int_equal(policy_parse_string(text, "t.conf", &p, err), -EINVAL);
	assert_ptr_equal(p, SENTINEL);
	assert_true(err->n >= 1 && err->kept >= 1);
	assert_string_equal(err->e[0].msg, first_msg);
}

/* ---- semantics ----------------------------------------------------- */

static void test_vm_section_inherits_defaults(void **state)
{
	struct policy *p = parse_ok("[defaults]\ndevice = rxe0\nmax_qp = 8\n"
				    "[vm a]\n");
	const struct policy_vm *vm = policy_lookup_vm(p, "a");

	assert_non_null(vm);
	assert_string_equal(vm->device, "rxe0");
	assert_int_equal(vm->port, 1);
	assert_int_equal(vm->quota.max_qp, 8);
	assert_int_equal(vm->quota.max_cq, 16); /* built in */
	assert_int_equal(vm->quota.max_cqe, 512);
	assert_true(vm->quota.max_pinned == 1ull << 30);
	assert_int_equal(vm->n_addrs, 0);
	assert_false(vm->has_uid);
	assert_false(vm->has_gid);
	assert_false(vm->has_vmm_uid);
	assert_false(vm->has_vmm_gid);
	assert_int_equal(vm->frontend, POLICY_FRONTEND_VIRTIO_RDMA);
	assert_true(vm->quota.max_memory == 1ull << 30);
	assert_int_equal(vm->quota.max_pids, 16);
	assert_int_equal(vm->poll_budget_us, POLICY_POLL_BUDGET_DEFAULT_US);
	assert_int_equal(vm->doorbell_poll_ms, POLICY_DOORBELL_POLL_DEFAULT_MS);
	policy_free(p);
}

/*
 * A u32 polling key (at off in struct policy_vm): 0 and the ceiling are
 * both valid, a VM without it inherits the defaults' value.
 */
static void check_u32_inherited(const char *key, size_t off, uint32_t dflt,
				uint32_t ceiling)
{
	char text[256];
	struct policy *p;

	snprintf(text, sizeof(text),
		 DEV "%s = %u\n[vm a]\n%s = 0\n[vm b]\n[vm c]\n%s = %u\n", key,
		 dflt, key, key, ceiling);
	p = parse_ok(text);
#define FIELD(vm) (*(const uint32_t *)((const char *)(vm) + off))
	assert_int_equal(FIELD(policy_lookup_vm(p, "a")), 0);
	assert_int_equal(FIELD(policy_lookup_vm(p, "b")), dflt);
	assert_int_equal(FIELD(policy_lookup_vm(p, "c")), ceiling);
	assert_int_equal(FIELD(policy_defaults(p)), dflt);
#undef FIELD
	policy_free(p);
}

/* poll_budget_us 0 sleeps at once; doorbell_poll_ms 0: by message. */
static void test_polling_bounds_and_inheritance(void **state)
{
	(void)state;
	check_u32_inherited("poll_budget_us",
			    offsetof(struct policy_vm, poll_budget_us), 200,
			    POLICY_POLL_BUDGET_MAX_US);
	check_u32_inherited("doorbell_poll_ms",
			    offsetof(struct policy_vm, doorbell_poll_ms), 20,
			    POLICY_DOORBELL_POLL_MAX_MS);
}

/* worker_nice: nice(1)'s scale, signed, inherited, printed back as set. */
static void test_worker_nice(void **state)
{
	struct policy *p = parse_ok(DEV "worker_nice = 5\n[vm a]\n"
					"worker_nice = -20\n[vm b]\n[vm c]\n"
					"worker_nice = 19\n[vm d]\n"
					"worker_nice = -0\n");
	char *canon;

	(void)state;
	assert_int_equal(policy_lookup_vm(p, "a")->worker_nice, -20);
	assert_int_equal(policy_lookup_vm(p, "b")->worker_nice, 5);
	assert_int_equal(policy_lookup_vm(p, "c")->worker_nice, 19);
	assert_int_equal(policy_lookup_vm(p, "d")->worker_nice, 0);
	assert_int_equal(policy_defaults(p)->worker_nice, 5);
	canon = policy_canonical_string(p);
	assert_non_null(strstr(canon, "[vm a]\n"));
	assert_non_null(strstr(canon, "worker_nice = -20\n"));
	assert_non_null(strstr(canon, "worker_nice = 5\n"));
	free(canon);
	policy_free(p);
	p = parse_ok(DEV "[vm a]\n");
	assert_int_equal(policy_lookup_vm(p, "a")->worker_nice, 0);
	policy_free(p);
}

static void test_vmm_identity_frontend_and_limits(void **state)
{
	struct policy *p = parse_ok(DEV "frontend = pvrdma\nmax_pids = 4\n"
					"[vm a]\nvmm_uid = 1001\nvmm_gid = "
					"1002\nmax_memory = 64M\n"
					"[vm b]\nfrontend = virtio-rdma\n"
					"[vm c]\nfrontend = qemu-pvrdma\n");
	const struct policy_vm *a = policy_lookup_vm(p, "a");
	const struct policy_vm *b = policy_lookup_vm(p, "b");
	const struct policy_vm *c = policy_lookup_vm(p, "c");

	assert_true(a->has_vmm_uid && a->has_vmm_gid);
	assert_int_equal(a->vmm_uid, 1001);
	assert_int_equal(a->vmm_gid, 1002);
	assert_int_equal(a->frontend, POLICY_FRONTEND_PVRDMA);
	assert_true(a->quota.max_memory == 64ull << 20);
	assert_int_equal(a->quota.max_pids, 4);
	assert_false(b->has_vmm_uid);
	assert_int_equal(b->frontend, POLICY_FRONTEND_VIRTIO_RDMA);
	assert_int_equal(c->frontend, POLICY_FRONTEND_QEMU_PVRDMA);
	assert_string_equal(policy_frontend_name(a->frontend), "pvrdma");
	assert_null(policy_frontend_name(0));
	assert_string_equal(policy_frontend_name(3), "qemu-pvrdma");
	assert_null(policy_frontend_name(4));
	policy_free(p);
}

/* A VM's effective quotas; the VM must be in the policy. */
static const struct policy_quota *quota_of(const struct policy *p,
					   const char *vm)
{
	const struct policy_vm *v = policy_lookup_vm(p, vm);

	assert_non_null(v);
	return &v->quota;
}

/* Queue depths per frontend: a virtio-rdma VM's default and bound are its
 * 512-entry rings; a PVRDMA VM's default is the worker's own (a 1024-entry
 * CQ for ibv_srq_pingpong fits), bounded by rdmagate's ceiling only. */
static void test_depths_follow_the_frontend(void **state)
{
	struct policy *p =
		parse_ok(DEV "[vm v]\n"
			     "[vm p]\nfrontend = pvrdma\n"
			     "[vm q]\nfrontend = pvrdma\nmax_cqe = 65536\n"
			     "max_qp_wr = 2048\nmax_srq_wr = 300\n"
			     "[vm w]\nmax_cqe = 100\n");
	char *canon, *canon2;
	struct policy *p2;

	assert_int_equal(quota_of(p, "v")->max_cqe, POLICY_DEPTH_LIMIT);
	assert_int_equal(quota_of(p, "v")->max_qp_wr, POLICY_DEPTH_LIMIT);
	assert_int_equal(quota_of(p, "v")->max_srq_wr, POLICY_DEPTH_LIMIT);
	assert_int_equal(quota_of(p, "p")->max_cqe, 4096);
	assert_int_equal(quota_of(p, "p")->max_qp_wr, 1024);
	assert_int_equal(quota_of(p, "p")->max_srq_wr, 1024);
	assert_int_equal(quota_of(p, "q")->max_cqe, 65536);
	assert_int_equal(quota_of(p, "q")->max_qp_wr, 2048);
	assert_int_equal(quota_of(p, "q")->max_srq_wr, 300);
	assert_int_equal(quota_of(p, "w")->max_cqe, 100);
	assert_int_equal(quota_of(p, "w")->max_qp_wr, POLICY_DEPTH_LIMIT);
	/* unset depths are not written into [defaults]: the canonical form
	 * parses to the same depths for both frontends */
	canon = policy_canonical_string(p);
	assert_non_null(canon);
	assert_null(strstr(canon, "[defaults]\nport = 1\nmax_cqe"));
	p2 = parse_ok(canon);
	assert_int_equal(quota_of(p2, "p")->max_cqe, 4096);
	assert_int_equal(quota_of(p2, "v")->max_cqe, 512);
	canon2 = policy_canonical_string(p2);
	assert_string_equal(canon, canon2);
	free(canon);
	free(canon2);
	policy_free(p2);
	policy_free(p);
	/* [defaults] depths for PVRDMA VMs, with a virtio-rdma VM among
	 * them: set in [defaults] with its frontend */
	p = parse_ok(DEV "frontend = pvrdma\nmax_cqe = 2048\n"
			 "[vm p]\n[vm v]\nfrontend = virtio-rdma\n"
			 "max_cqe = 256\n");
	assert_int_equal(quota_of(p, "p")->max_cqe, 2048);
	assert_int_equal(quota_of(p, "p")->max_qp_wr, 1024);
	assert_int_equal(quota_of(p, "v")->max_cqe, 256);
	assert_int_equal(quota_of(p, "v")->max_qp_wr, 512);
	canon = policy_canonical_string(p);
	assert_non_null(strstr(canon, "max_cqe = 2048\n"));
	free(canon);
	policy_free(p);
	(void)state;
}

/* Depths above a virtio-rdma VM's rings are refused where they were
 * written, once: in the VM's section, in [defaults] for its own frontend,
 * or inherited across frontends (the VM is named). */
static void test_depths_above_the_rings_are_refused(void **state)
{
	struct policy_error err;

	parse_bad(DEV "[vm v]\nmax_cqe = 1024\n",
		  "t.conf:4: max_cqe = 1024: more than 512 (the virtqueue ring "
		  "size)",
		  &err);
	assert_int_equal(err.n, 1);
	parse_bad(DEV "max_srq_wr = 513\n[vm v]\n[vm w]\n",
		  "t.conf:3: max_srq_wr = 513: more than 512 (the virtqueue "
		  "ring size)",
		  &err);
	assert_int_equal(err.n, 1);
	parse_bad(DEV "frontend = pvrdma\nmax_qp_wr = 4096\n[vm p]\n"
		      "[vm v]\nfrontend = virtio-rdma\n",
		  "t.conf:6: [vm v]: max_qp_wr = 4096 (from [defaults], line "
		  "4): more than 512 (the virtqueue ring size of its frontend "
		  "virtio-rdma)",
		  &err);
	assert_int_equal(err.n, 1);
	parse_bad(DEV "[vm p]\nfrontend = pvrdma\nmax_cqe = 65537\n",
		  "t.conf:5: max_cqe = 65537: more than 65536 (rdmagate's "
		  "ceiling)",
		  &err);
	(void)state;
}

static void test_vm_override_beats_defaults_only_for_that_vm(void **state)
{
	struct policy *p = parse_ok(DEV "max_pinned = 2G\n"
					"[vm a]\nmax_pinned = 512M\ndevice = "
					"mlx5_0\nport = 2\n[vm b]\n");
	const struct policy_vm *a = policy_lookup_vm(p, "a");
	const struct policy_vm *b = policy_lookup_vm(p, "b");

	assert_true(a->quota.max_pinned == 512ull << 20);
	assert_string_equal(a->device, "mlx5_0");
	assert_int_equal(a->port, 2);
	assert_true(b->quota.max_pinned == 2ull << 30);
	assert_string_equal(b->device, "rxe0");
	assert_int_equal(b->port, 1);
	assert_true(policy_defaults(p)->quota.max_pinned == 2ull << 30);
	policy_free(p);
}

static void test_unlisted_vm_is_not_served(void **state)
{
	struct policy *p = parse_ok(DEV "[vm a]\naddresses = 10.0.0.1\n");
	uint8_t a4[4] = { 10, 0, 0, 1 };

	assert_null(policy_lookup_vm(p, "b"));
	assert_null(policy_lookup_vm(p, ""));
	assert_false(policy_vm_may_claim(p, "b", AF_INET, a4));
	assert_true(policy_vm_may_claim(p, "a", AF_INET, a4));
	policy_free(p);
}

static void test_broker_keys_and_builtin_broker(void **state)
{
	struct policy *p = parse_ok("");
	const struct policy_broker *b = policy_broker(p);

	assert_string_equal(b->control_socket, "/run/rdmagate/control");
	assert_string_equal(b->control_group, "");
	assert_int_equal(b->worker_id_first, 60000);
	assert_int_equal(b->worker_id_last, 60999);
	assert_string_equal(b->cgroup_parent, "/rdmagate");
	assert_string_equal(b->socket_dir, "/run/rdmagate/vm");
	assert_int_equal(policy_vm_count(p), 0);
	assert_null(policy_vm_at(p, 0));
	policy_free(p);

	p = parse_ok("[broker]\ncontrol_socket = /run/x.sock\ncontrol_group "
		     "= kvm\nworker_ids = 70000 - 70009\ncgroup_parent = "
		     "/machine.slice/rdmagate\n");
	b = policy_broker(p);
	assert_string_equal(b->control_socket, "/run/x.sock");
	assert_string_equal(b->control_group, "kvm");
	assert_int_equal(b->worker_id_first, 70000);
	assert_int_equal(b->worker_id_last, 70009);
	assert_string_equal(b->cgroup_parent, "/machine.slice/rdmagate");
	policy_free(p);
}

static void test_may_claim_exact_prefix_and_ipv4_mapped_gid(void **state)
{
	struct policy *p = parse_ok(DEV "[vm a]\naddresses = 10.99.0.10, "
					"fd99:0:0:1::/64\n[vm b]\naddresses = "
					"10.99.0.11\n");
	uint8_t v4[4] = { 10, 99, 0, 10 }, v4b[4] = { 10, 99, 0, 11 };
	uint8_t in[16], out[16],
		gid[16] = { [10] = 0xff, [11] = 0xff, 10, 99, 0, 10 };

	inet_pton(AF_INET6, "fd99:0:0:1::abcd", in);
	inet_pton(AF_INET6, "fd99:0:0:2::1", out);
	assert_true(policy_vm_may_claim(p, "a", AF_INET, v4));
	assert_false(policy_vm_may_claim(p, "a", AF_INET, v4b));
	assert_true(policy_vm_may_claim(p, "b", AF_INET, v4b));
	assert_true(policy_vm_may_claim(p, "a", AF_INET6, in));
	assert_false(policy_vm_may_claim(p, "a", AF_INET6, out));
	assert_false(policy_vm_may_claim(p, "b", AF_INET6, in));
	assert_true(policy_vm_may_claim(p, "a", AF_INET6, gid));
	assert_false(policy_vm_may_claim(p, "b", AF_INET6, gid));
	assert_false(policy_vm_may_claim(p, "a", AF_UNIX, v4));
	policy_free(p);
}

static void test_lookup_finds_every_vm_of_the_maximum(void **state)
{
	size_t cap = 64 + POLICY_MAX_VMS * 24, n, i;
	char *text = malloc(cap), name[16];
	struct policy *p;

	assert_non_null(text);
	n = (size_t)snprintf(text, cap,
			     DEV "[broker]\nworker_ids = "
				 "100000-200000\n");
	for (i = 0; i < POLICY_MAX_VMS; i++)
		n += (size_t)snprintf(text + n, cap - n, "[vm v%zu]\n",
				      POLICY_MAX_VMS - i);
	p = parse_ok(text);
	assert_int_equal(policy_vm_count(p), POLICY_MAX_VMS);
	for (i = 1; i <= POLICY_MAX_VMS; i++) {
		snprintf(name, sizeof(name), "v%zu", i);
		assert_non_null(policy_lookup_vm(p, name));
		assert_string_equal(policy_lookup_vm(p, name)->name, name);
	}
	for (i = 1; i < POLICY_MAX_VMS; i++)
		assert_true(strcmp(policy_vm_at(p, i - 1)->name,
				   policy_vm_at(p, i)->name) < 0);
	policy_free(p);
	free(text);
}

static void test_one_vm_more_than_the_maximum_stops_parsing(void **state)
{
	size_t cap = 64 + (POLICY_MAX_VMS + 2) * 24, n, i;
	char *text = malloc(cap), want[96];
	struct policy_error err;

	assert_non_null(text);
	n = (size_t)snprintf(text, cap,
			     DEV "[broker]\nworker_ids = "
				 "100000-200000\n");
	for (i = 0; i <= POLICY_MAX_VMS + 1; i++)
		n += (size_t)snprintf(text + n, cap - n, "[vm v%zu]\n", i);
	snprintf(want, sizeof(want), "t.conf:%d: [vm v%d]: more than %d VMs",
		 POLICY_MAX_VMS + 5, POLICY_MAX_VMS, POLICY_MAX_VMS);
	parse_bad(text, want, &err);
	assert_int_equal(err.n, 1); /* and the rest is not read */
	free(text);
}

static void test_sizes_take_suffixes_and_print_the_largest(void **state)
{
	static const struct {
		const char *in, *canon;
		uint64_t bytes;
	} cases[] = {
		{ "4096", "4K", 4096 },
		{ "4097", "4097", 4097 },
		{ "1536M", "1536M", 1536ull << 20 },
		{ "1073741824", "1G", 1ull << 30 },
		{ "4g", "4G", 4ull << 30 },
		{ "2t", "2T", 2ull << 40 },
		{ "1P", "1P", 1ull << 50 },
		{ "1024T", "1P", 1ull << 50 },
	};
	char text[128], line[64];
	struct policy *p;
	char *canon;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(text, sizeof(text), "[defaults]\nmax_pinned = %s\n",
			 cases[i].in);
		p = parse_ok(text);
		assert_true(policy_defaults(p)->quota.max_pinned ==
			    cases[i].bytes);
		canon = policy_canonical_string(p);
		snprintf(line, sizeof(line), "\nmax_pinned = %s\n",
			 cases[i].canon);
		assert_non_null(strstr(canon, line));
		free(canon);
		policy_free(p);
	}
}

static void test_layout_accepted_crlf_comments_indent_bom(void **state)
{
	struct policy *p = parse_ok("\xef\xbb\xbf# comment\r\n"
				    "  ; another\r\n"
				    "\t[ defaults ]   # trailing\r\n"
				    "\tdevice=rxe0 ;comment\r\n"
				    "  max_qp   =   7   ; seven\r\n"
				    "[vm\ta]\r\n"
				    "addresses = 10.0.0.1 # one\r\n");
	const struct policy_vm *vm = policy_lookup_vm(p, "a");

	assert_non_null(vm);
	assert_string_equal(policy_defaults(p)->device, "rxe0");
	assert_int_equal(vm->quota.max_qp, 7);
	assert_int_equal(vm->n_addrs, 1);
	policy_free(p);
}

static void test_addresses_are_normalised_and_sorted(void **state)
{
	struct policy *p = parse_ok(DEV "[vm a]\naddresses = fd99:0000:0::"
					"0010, 10.0.0.9,10.0.0.0/29 , "
					"FD99:0:0:1::/64\n");
	char *canon = policy_canonical_string(p);

	assert_non_null(strstr(canon, "\naddresses = 10.0.0.0/29, 10.0.0.9, "
				      "fd99::10, fd99:0:0:1::/64\n"));
	free(canon);
	policy_free(p);
}

static void test_parse_addr_api(void **state)
{
	struct policy_addr a = { 0 }, keep = { .family = 77 };
	char buf[POLICY_ADDR_STRLEN];

	assert_int_equal(policy_parse_addr("fd99:0:0:1:0::/64", &a), 0);
	assert_int_equal(a.family, AF_INET6);
	assert_int_equal(a.prefix_len, 64);
	policy_format_addr(&a, buf);
	assert_string_equal(buf, "fd99:0:0:1::/64");
	assert_int_equal(policy_parse_addr("192.0.2.7/32", &a), 0);
	policy_format_addr(&a, buf);
	assert_string_equal(buf, "192.0.2.7");
	a = keep;
	assert_int_equal(policy_parse_addr("192.0.2.7/24", &a), -EINVAL);
	assert_int_equal(policy_parse_addr("192.0.2", &a), -EINVAL);
	assert_int_equal(policy_parse_addr("fd99::/129", &a), -EINVAL);
	assert_int_equal(policy_parse_addr("fd99::/-1", &a), -EINVAL);
	assert_int_equal(policy_parse_addr("fd99::/0064", &a), -EINVAL);
	assert_int_equal(policy_parse_addr("", &a), -EINVAL);
	assert_int_equal(a.family, 77); /* untouched on failure */
}

static void test_errors_beyond_the_cap_are_counted_in_line_order(void **state)
{
	char text[2048], first[64], last[64];
	struct policy_error err;
	size_t n = 0;
	int i;

	/* a cross-check error (line 2) found after 40 line errors */
	n += snprintf(text, sizeof(text), "[vm a]\n[vm b]\n");
	for (i = 0; i < 40; i++)
		n += snprintf(text + n, sizeof(text) - n, "bogus%d = 1\n", i);
	parse_bad(text,
		  "t.conf:1: [vm a]: no device (set device in "
		  "[defaults] or in this section)",
		  &err);
	assert_int_equal(err.n, 42);
	assert_int_equal(err.kept, POLICY_ERRORS_KEPT);
	for (i = 1; i < POLICY_ERRORS_KEPT; i++)
		assert_true(err.e[i - 1].line < err.e[i].line);
	snprintf(last, sizeof(last),
		 "t.conf:%d: unknown key \"bogus%d\" "
		 "in [vm b] (see docs/policy.md)",
		 POLICY_ERRORS_KEPT, POLICY_ERRORS_KEPT - 3);
	assert_string_equal(err.e[POLICY_ERRORS_KEPT - 1].msg, last);
	snprintf(first, sizeof(first), "... and %d more errors\n",
		 42 - POLICY_ERRORS_KEPT);
	{
		char *out = NULL;
		size_t len;
		FILE *f = open_memstream(&out, &len);

		policy_error_print(&err, f);
		fclose(f);
		assert_non_null(strstr(out, first));
		free(out);
	}
}

static void test_nul_byte_in_buffer_is_refused(void **state)
{
	static const char text[] = DEV "[vm a]\nport = 1\0\n";
	struct policy_error err;
	struct policy *p = SENTINEL;

	assert_int_equal(
		policy_parse_buffer(text, sizeof(text) - 1, "t.conf", &p, &err),
		-EINVAL);
	assert_ptr_equal(p, SENTINEL);
	assert_string_equal(err.e[0].msg, "t.conf:4: NUL byte in the line");
}

static void test_buffer_above_the_file_limit_is_refused(void **state)
{
	size_t len = POLICY_FILE_MAX + 1;
	char *text = malloc(len);
	struct policy_error err;
	struct policy *p = SENTINEL;

	assert_non_null(text);
	memset(text, '\n', len);
	assert_int_equal(policy_parse_buffer(text, len, "t.conf", &p, &err),
			 -EFBIG);
	assert_ptr_equal(p, SENTINEL);
	assert_string_equal(err.e[0].msg, "t.conf: larger than 16 MiB");
	free(text);
}

static void test_long_line_is_refused_and_parsing_goes_on(void **state)
{
	char text[POLICY_LINE_MAX + 64];
	struct policy_error err;
	size_t n;

	n = (size_t)snprintf(text, sizeof(text), "[defaults]\n# ");
	memset(text + n, 'x', POLICY_LINE_MAX - 1);
	n += POLICY_LINE_MAX - 1;
	snprintf(text + n, sizeof(text) - n, "\nport = 0\n");
	parse_bad(text, "t.conf:2: line longer than 1024 bytes", &err);
	assert_int_equal(err.n, 2);
	assert_string_equal(err.e[1].msg,
			    "t.conf:3: port = 0: too small "
			    "(expected a whole number from 1 to 255)");
}

static void test_line_of_exactly_the_limit_is_accepted(void **state)
{
	char text[POLICY_LINE_MAX + 64];
	struct policy *p;
	size_t n;

	n = (size_t)snprintf(text, sizeof(text), "[defaults]\n#");
	memset(text + n, 'x', POLICY_LINE_MAX - 1);
	n += POLICY_LINE_MAX - 1;
	snprintf(text + n, sizeof(text) - n, "\r\n");
	p = parse_ok(text);
	policy_free(p);
}

static void test_null_err_is_allowed(void **state)
{
	struct policy *p = SENTINEL;

	assert_int_equal(policy_parse_string("x", "t", &p, NULL), -EINVAL);
	assert_ptr_equal(p, SENTINEL);
}

/* ---- policy_load --------------------------------------------------- */

static char tmpdir[64];

static int make_tmpdir(void **state)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/policy-test.XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmpdir(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static void test_load_reads_a_file_and_names_it_in_errors(void **state)
{
	char path[128], want[256];
	struct policy_error err;
	struct policy *p = NULL;

	snprintf(path, sizeof(path), "%s/good.conf", tmpdir);
	write_file(path, DEV "[vm a]\n", 0644);
	assert_int_equal(policy_load(path, POLICY_LOAD_STRICT, &p, &err), 0);
	assert_non_null(policy_lookup_vm(p, "a"));
	policy_free(p);

	snprintf(path, sizeof(path), "%s/bad.conf", tmpdir);
	write_file(path, DEV "[vm a]\nmax_qp = 64\n", 0644);
	p = SENTINEL;
	assert_int_equal(policy_load(path, 0, &p, &err), -EINVAL);
	assert_ptr_equal(p, SENTINEL);
	snprintf(want, sizeof(want),
		 "%s:4: max_qp = 64: more than 63 (the "
		 "queue layout's limit)",
		 path);
	assert_string_equal(err.e[0].msg, want);
}

static void test_load_missing_file_says_why(void **state)
{
	char path[128], want[256];
	struct policy_error err;
	struct policy *p = SENTINEL;

	snprintf(path, sizeof(path), "%s/none.conf", tmpdir);
	assert_int_equal(policy_load(path, 0, &p, &err), -ENOENT);
	assert_ptr_equal(p, SENTINEL);
	snprintf(want, sizeof(want),
		 "%s: cannot open: No such file or "
		 "directory",
		 path);
	assert_string_equal(err.e[0].msg, want);
}

static void test_load_refuses_directory_and_fifo_without_hanging(void **state)
{
	char path[128];
	struct policy_error err;
	struct policy *p = SENTINEL;

	assert_int_equal(policy_load(tmpdir, 0, &p, &err), -EISDIR);
	snprintf(path, sizeof(path), "%s/fifo", tmpdir);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(policy_load(path, 0, &p, &err), -EINVAL);
	assert_non_null(strstr(err.e[0].msg, ": not a regular file"));
	assert_ptr_equal(p, SENTINEL);
}

static void test_strict_load_refuses_group_or_world_writable(void **state)
{
	char path[128];
	struct policy_error err;
	struct policy *p = SENTINEL;

	snprintf(path, sizeof(path), "%s/open.conf", tmpdir);
	write_file(path, DEV, 0666);
	assert_int_equal(policy_load(path, POLICY_LOAD_STRICT, &p, &err),
			 -EPERM);
	assert_ptr_equal(p, SENTINEL);
	assert_non_null(strstr(err.e[0].msg, "mode 0666 lets group or "
					     "others write it"));
	write_file(path, DEV, 0620);
	assert_int_equal(policy_load(path, POLICY_LOAD_STRICT, &p, &err),
			 -EPERM);
	/* without STRICT, as the checker does by default */
	assert_int_equal(policy_load(path, 0, &p, &err), 0);
	policy_free(p);
}

static void test_strict_load_refuses_a_file_of_another_owner(void **state)
{
	char path[128];
	struct policy_error err;
	struct policy *p = SENTINEL;

	if (geteuid() != 0) {
		print_message("skipped: chown to another uid needs root\n");
		skip();
	}
	snprintf(path, sizeof(path), "%s/other.conf", tmpdir);
	write_file(path, DEV, 0644);
	assert_int_equal(chown(path, 4242, 0), 0);
	assert_int_equal(policy_load(path, POLICY_LOAD_STRICT, &p, &err),
			 -EPERM);
	assert_ptr_equal(p, SENTINEL);
	assert_non_null(strstr(err.e[0].msg, "owned by uid 4242, not root"));
}

static void test_load_fd_reads_a_pipe(void **state)
{
	static const char text[] = DEV "[vm a]\n";
	struct policy_error err;
	struct policy *p = NULL;
	int fds[2];

	assert_int_equal(pipe(fds), 0);
	assert_int_equal(write(fds[1], text, sizeof(text) - 1),
			 (ssize_t)sizeof(text) - 1);
	close(fds[1]);
	assert_int_equal(policy_load_fd(fds[0], "<stdin>", 0, &p, &err), 0);
	close(fds[0]);
	assert_int_equal(policy_vm_count(p), 1);
	policy_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vm_section_inherits_defaults),
		cmocka_unit_test(
			test_vm_override_beats_defaults_only_for_that_vm),
		cmocka_unit_test(test_unlisted_vm_is_not_served),
		cmocka_unit_test(test_depths_follow_the_frontend),
		cmocka_unit_test(test_depths_above_the_rings_are_refused),
		cmocka_unit_test(test_vmm_identity_frontend_and_limits),
		cmocka_unit_test(test_polling_bounds_and_inheritance),
		cmocka_unit_test(test_worker_nice),
		cmocka_unit_test(test_broker_keys_and_builtin_broker),
		cmocka_unit_test(
			test_may_claim_exact_prefix_and_ipv4_mapped_gid),
		cmocka_unit_test(test_lookup_finds_every_vm_of_the_maximum),
		cmocka_unit_test(
			test_one_vm_more_than_the_maximum_stops_parsing),
		cmocka_unit_test(
			test_sizes_take_suffixes_and_print_the_largest),
		cmocka_unit_test(test_layout_accepted_crlf_comments_indent_bom),
		cmocka_unit_test(test_addresses_are_normalised_and_sorted),
		cmocka_unit_test(test_parse_addr_api),
		cmocka_unit_test(
			test_errors_beyond_the_cap_are_counted_in_line_order),
		cmocka_unit_test(test_nul_byte_in_buffer_is_refused),
		cmocka_unit_test(test_buffer_above_the_file_limit_is_refused),
		cmocka_unit_test(test_long_line_is_refused_and_parsing_goes_on),
		cmocka_unit_test(test_line_of_exactly_the_limit_is_accepted),
		cmocka_unit_test(test_null_err_is_allowed),
		cmocka_unit_test(test_load_reads_a_file_and_names_it_in_errors),
		cmocka_unit_test(test_load_missing_file_says_why),
		cmocka_unit_test(
			test_load_refuses_directory_and_fifo_without_hanging),
		cmocka_unit_test(
			test_strict_load_refuses_group_or_world_writable),
		cmocka_unit_test(
			test_strict_load_refuses_a_file_of_another_owner),
		cmocka_unit_test(test_load_fd_reads_a_pipe),
	};

	return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
