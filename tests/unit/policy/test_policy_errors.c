// SPDX-License-Identifier: MIT
/*
 * Every error the policy parser can report, one named test each: the text
 * must be refused with -EINVAL, *ret untouched, and this exact first line.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "policy/policy.h"

#define DEV "[defaults]\ndevice = rxe0\n" /* lines 1-2 */

struct bad_case {
	const char *name;
	const char *text;
	const char *msg;
};

static const struct bad_case cases[] = {
	/* syntax */
	{ "key_outside_any_section", "port = 1\n",
	  "t.conf:1: port: outside any section (start with [broker], "
	  "[defaults] or [vm NAME])" },
	{ "line_without_equals", DEV "max_qp 4\n",
	  "t.conf:3: max_qp 4: expected KEY = VALUE or [SECTION]" },
	{ "header_without_closing_bracket", "[defaults\n",
	  "t.conf:1: section header without ] (expected [broker], "
	  "[defaults] or [vm NAME])" },
	{ "text_after_header", "[defaults] x\n",
	  "t.conf:1: text after the section header's ]" },
	{ "control_character", DEV "port = 1\x1b[2J\n",
	  "t.conf:3: control character 0x1b in the line" },
	{ "delete_character", DEV "port = 1\x7f\n",
	  "t.conf:3: control character 0x7f in the line" },
	/* sections */
	{ "unknown_section", "[vms a]\n",
	  "t.conf:1: unknown section [vms a] (expected [broker], [defaults] "
	  "or [vm NAME])" },
	{ "vm_without_name", "[vm]\n",
	  "t.conf:1: [vm] without a name (expected [vm NAME])" },
	{ "vm_name_leading_dot", "[vm .a]\n",
	  "t.conf:1: [vm .a]: name starts with '.' or '-' (expected 1 to 64 "
	  "of A-Z a-z 0-9 _ . -, not starting with . or -)" },
	{ "vm_name_leading_dash", "[vm -a]\n",
	  "t.conf:1: [vm -a]: name starts with '.' or '-' (expected 1 to 64 "
	  "of A-Z a-z 0-9 _ . -, not starting with . or -)" },
	{ "vm_name_with_slash", "[vm a/b]\n",
	  "t.conf:1: [vm a/b]: name has a character other than A-Z a-z 0-9 "
	  "_ . - (expected 1 to 64 of A-Z a-z 0-9 _ . -, not starting with "
	  ". or -)" },
	{ "vm_name_with_blank", "[vm a b]\n",
	  "t.conf:1: [vm a b]: name has a character other than A-Z a-z 0-9 "
	  "_ . - (expected 1 to 64 of A-Z a-z 0-9 _ . -, not starting with "
	  ". or -)" },
	{ "vm_name_of_65_bytes",
	  "[vm 12345678901234567890123456789012345678901234567890123456789"
	  "012345]\n",
	  "t.conf:1: [vm 123456789012345678901234567890123456789012345678901"
	  "234567890...]: name too long (expected 1 to 64 of A-Z a-z 0-9 _ . "
	  "-, not starting with . or -)" },
	{ "second_vm_section", DEV "[vm a]\n[vm b]\n[vm a]\n",
	  "t.conf:5: [vm a]: second section for this VM (first on line 3)" },
	{ "second_defaults_section", DEV "[defaults]\n",
	  "t.conf:3: [defaults]: second section (first on line 1)" },
	{ "second_broker_section", "[broker]\n[broker]\n",
	  "t.conf:2: [broker]: second section (first on line 1)" },
	/* keys */
	{ "unknown_key_typo", DEV "[vm a]\nmax_qps = 4\n",
	  "t.conf:4: unknown key \"max_qps\" in [vm a] (see docs/policy.md)" },
	{ "key_set_twice", DEV "max_qp = 4\nmax_qp = 5\n",
	  "t.conf:4: max_qp set twice in this section (first on line 3)" },
	{ "broker_key_in_vm", DEV "[vm a]\ncontrol_group = kvm\n",
	  "t.conf:4: control_group is not allowed in [vm a] (it belongs in "
	  "[broker])" },
	{ "quota_in_broker", "[broker]\nmax_qp = 4\n",
	  "t.conf:2: max_qp is not allowed in [broker] (it belongs in "
	  "[defaults] or [vm NAME])" },
	{ "addresses_in_defaults", "[defaults]\naddresses = 10.0.0.1\n",
	  "t.conf:2: addresses is not allowed in [defaults] (it belongs in "
	  "[vm NAME])" },
	{ "uid_in_defaults", "[defaults]\nuid = 60000\n",
	  "t.conf:2: uid is not allowed in [defaults] (it belongs in "
	  "[vm NAME])" },
	/* numbers */
	{ "max_qp_above_the_queue_layout", DEV "max_qp = 100\n",
	  "t.conf:3: max_qp = 100: more than 63 (the queue layout's limit)" },
	{ "max_cq_above_the_queue_layout", DEV "max_cq = 65\n",
	  "t.conf:3: max_cq = 65: more than 64 (the queue layout's limit)" },
	{ "max_cqe_above_the_ring", DEV "max_cqe = 513\n",
	  "t.conf:3: max_cqe = 513: more than 512 (the virtqueue ring size)" },
	{ "max_qp_wr_above_the_ring", DEV "max_qp_wr = 1024\n",
	  "t.conf:3: max_qp_wr = 1024: more than 512 (the virtqueue ring "
	  "size)" },
	{ "max_srq_wr_zero", DEV "max_srq_wr = 0\n",
	  "t.conf:3: max_srq_wr = 0: too small (expected a whole number from "
	  "1 to 65536)" },
	{ "max_sge_above_the_wr_limit", DEV "max_sge = 33\n",
	  "t.conf:3: max_sge = 33: more than 32 (the SGE limit of a "
	  "virtio-rdma work request)" },
	{ "max_mr_above_the_ceiling", DEV "max_mr = 65537\n",
	  "t.conf:3: max_mr = 65537: more than 65536 (rdmagate's ceiling)" },
	{ "max_pd_zero", DEV "max_pd = 0\n",
	  "t.conf:3: max_pd = 0: too small (expected a whole number from 1 "
	  "to 65536)" },
	{ "negative_number", DEV "max_ah = -1\n",
	  "t.conf:3: max_ah = -1: not a number (expected a whole number from "
	  "0 to 65536)" },
	{ "plus_sign", DEV "max_srq = +1\n",
	  "t.conf:3: max_srq = +1: not a number (expected a whole number "
	  "from 0 to 65536)" },
	{ "hex_number", DEV "max_qp = 0x10\n",
	  "t.conf:3: max_qp = 0x10: not a number (expected a whole number "
	  "from 1 to 63)" },
	{ "empty_number", DEV "max_qp =\n",
	  "t.conf:3: max_qp = : not a number (expected a whole number from "
	  "1 to 63)" },
	{ "number_beyond_64_bits", DEV "max_qp = 99999999999999999999999\n",
	  "t.conf:3: max_qp = 99999999999999999999999: more than 63 (the "
	  "queue layout's limit)" },
	{ "number_wrapping_to_small_u32", DEV "max_qp = 4294967297\n",
	  "t.conf:3: max_qp = 4294967297: more than 63 (the queue layout's "
	  "limit)" },
	{ "port_zero", DEV "port = 0\n",
	  "t.conf:3: port = 0: too small (expected a whole number from 1 to "
	  "255)" },
	{ "port_256", DEV "port = 256\n",
	  "t.conf:3: port = 256: more than 255 (ports are numbered 1 to "
	  "255)" },
	/* sizes */
	{ "size_unknown_suffix", DEV "max_pinned = 4X\n",
	  "t.conf:3: max_pinned = 4X: not a size (expected bytes, optionally "
	  "with a K, M, G, T or P suffix, e.g. 4G)" },
	{ "size_two_letter_suffix", DEV "max_pinned = 4GB\n",
	  "t.conf:3: max_pinned = 4GB: not a size (expected bytes, optionally "
	  "with a K, M, G, T or P suffix, e.g. 4G)" },
	{ "size_blank_before_suffix", DEV "max_pinned = 4 G\n",
	  "t.conf:3: max_pinned = 4 G: not a size (expected bytes, optionally "
	  "with a K, M, G, T or P suffix, e.g. 4G)" },
	{ "size_shift_overflow", DEV "max_pinned = 17179869184P\n",
	  "t.conf:3: max_pinned = 17179869184P: more than 1P (rdmagate's "
	  "ceiling)" },
	{ "size_above_ceiling", DEV "max_pinned = 1025T\n",
	  "t.conf:3: max_pinned = 1025T: more than 1P (rdmagate's ceiling)" },
	{ "size_below_a_page", DEV "max_pinned = 4095\n",
	  "t.conf:3: max_pinned = 4095: less than 4K (one page)" },
	/* names and paths */
	{ "device_empty", DEV "[vm a]\ndevice =\n",
	  "t.conf:4: device = : empty (expected an RDMA device name such as "
	  "rxe0 or mlx5_0, at most 63 bytes)" },
	{ "device_leading_dot_dot", "[defaults]\ndevice = ../rxe0\n",
	  "t.conf:2: device = ../rxe0: starts with '.' or '-' (expected an "
	  "RDMA device name such as rxe0 or mlx5_0, at most 63 bytes)" },
	{ "control_group_starting_with_digit",
	  "[broker]\ncontrol_group = 1abc\n",
	  "t.conf:2: control_group = 1abc: starts with a digit (expected a "
	  "group name of at most 32 bytes, or nothing for root only)" },
	{ "control_socket_relative", "[broker]\ncontrol_socket = run/x\n",
	  "t.conf:2: control_socket = run/x: not an absolute path (expected "
	  "an absolute path of at most 107 bytes)" },
	{ "control_socket_too_long_for_sun_path",
	  "[broker]\ncontrol_socket = /12345678901234567890123456789012345678"
	  "9012345678901234567890123456789012345678901234567890123456789012"
	  "34567\n",
	  "t.conf:2: control_socket = /123456789012345678901234567890123456"
	  "78901234567890123456789...: too long (expected an absolute path "
	  "of at most 107 bytes)" },
	{ "cgroup_parent_dotdot", "[broker]\ncgroup_parent = /a/../b\n",
	  "t.conf:2: cgroup_parent = /a/../b: has a . or .. component "
	  "(expected an absolute path of at most 255 bytes)" },
	{ "cgroup_parent_root", "[broker]\ncgroup_parent = /\n",
	  "t.conf:2: cgroup_parent = /: has an empty component (expected an "
	  "absolute path of at most 255 bytes)" },
	{ "cgroup_parent_trailing_slash", "[broker]\ncgroup_parent = /a/\n",
	  "t.conf:2: cgroup_parent = /a/: has an empty component (expected "
	  "an absolute path of at most 255 bytes)" },
	{ "cgroup_parent_blank", "[broker]\ncgroup_parent = /a b\n",
	  "t.conf:2: cgroup_parent = /a b: has a character other than A-Z "
	  "a-z 0-9 _ . - @ : + (expected an absolute path of at most 255 "
	  "bytes)" },
	/* worker ids */
	{ "worker_ids_not_a_range", "[broker]\nworker_ids = 60000\n",
	  "t.conf:2: worker_ids = 60000: not a range (expected FIRST-LAST, "
	  "e.g. 60000-60999)" },
	{ "worker_ids_with_root", "[broker]\nworker_ids = 0-5\n",
	  "t.conf:2: worker_ids = 0-5: outside 1-4294967294, and 0 is root "
	  "(expected FIRST-LAST, e.g. 60000-60999)" },
	{ "worker_ids_with_minus_one",
	  "[broker]\nworker_ids = "
	  "70000-4294967295\n",
	  "t.conf:2: worker_ids = 70000-4294967295: outside 1-4294967294, "
	  "and 0 is root (expected FIRST-LAST, e.g. 60000-60999)" },
	{ "worker_ids_reversed", "[broker]\nworker_ids = 60010-60000\n",
	  "t.conf:2: worker_ids = 60010-60000: first id is above the last "
	  "(expected FIRST-LAST, e.g. 60000-60999)" },
	{ "worker_ids_with_nobody", "[broker]\nworker_ids = 60000-70000\n",
	  "t.conf:2: worker_ids = 60000-70000: includes 65534 or 65535, "
	  "nobody and the 16-bit -1 (expected FIRST-LAST, e.g. 60000-60999)" },
	{ "worker_ids_too_few_for_the_vms",
	  "[broker]\nworker_ids = 60000-60001\n" DEV "[vm a]\n[vm b]\n[vm c]\n",
	  "t.conf:2: worker_ids 60000-60001: 2 ids for 3 VMs (each worker "
	  "needs its own uid)" },
	{ "uid_outside_worker_ids", DEV "[vm a]\nuid = 1000\n",
	  "t.conf:4: uid = 1000: outside worker_ids 60000-60999" },
	{ "gid_outside_worker_ids_set_later",
	  DEV "[vm a]\ngid = 60000\n[broker]\nworker_ids = 61000-61999\n",
	  "t.conf:4: gid = 60000: outside worker_ids 61000-61999" },
	{ "uid_shared_by_two_vms",
	  DEV "[vm a]\nuid = 60005\n[vm b]\nuid = 60005\n",
	  "t.conf:6: uid = 60005: also the uid of [vm a] (line 4)" },
	{ "gid_shared_by_two_vms",
	  DEV "[vm b]\ngid = 60005\n[vm a]\ngid = 60005\n",
	  "t.conf:6: gid = 60005: also the gid of [vm b] (line 4)" },
	{ "uid_zero", DEV "[vm a]\nuid = 0\n",
	  "t.conf:4: uid = 0: too small (expected a whole number from 1 to "
	  "4294967294)" },
	/* the QEMU identity, the frontend, the worker's cgroup limits */
	{ "vmm_uid_in_worker_ids", DEV "[vm a]\nvmm_uid = 60010\n",
	  "t.conf:4: vmm_uid = 60010: inside worker_ids 60000-60999 (a QEMU "
	  "identity is never a worker's)" },
	{ "vmm_gid_shared_by_two_vms",
	  DEV "[vm a]\nvmm_gid = 1001\n[vm b]\nvmm_gid = 1001\n",
	  "t.conf:6: vmm_gid = 1001: also the vmm_gid of [vm a] (line 4)" },
	{ "vmm_uid_in_defaults", DEV "vmm_uid = 1001\n",
	  "t.conf:3: vmm_uid is not allowed in [defaults] (it belongs in "
	  "[vm NAME])" },
	{ "vmm_uid_root", DEV "[vm a]\nvmm_uid = 0\n",
	  "t.conf:4: vmm_uid = 0: too small (expected a whole number from 1 "
	  "to 4294967294)" },
	{ "frontend_unknown", DEV "frontend = virtio\n",
	  "t.conf:3: frontend = virtio: not a frontend (expected virtio-rdma, "
	  "pvrdma or qemu-pvrdma)" },
	{ "max_memory_too_small", DEV "max_memory = 1M\n",
	  "t.conf:3: max_memory = 1M: less than 16M (what a worker needs)" },
	{ "max_pids_zero", DEV "[vm a]\nmax_pids = 0\n",
	  "t.conf:4: max_pids = 0: too small (expected a whole number from 1 "
	  "to 4096)" },
	{ "poll_budget_above_ceiling", DEV "[vm a]\npoll_budget_us = 10001\n",
	  "t.conf:4: poll_budget_us = 10001: more than 10000 (a CPU is shared "
	  "by many VMs)" },
	{ "doorbell_poll_above_ceiling",
	  DEV "[vm a]\ndoorbell_poll_ms = 1001\n",
	  "t.conf:4: doorbell_poll_ms = 1001: more than 1000 (an idle "
	  "doorbell would wait over a second)" },
	{ "worker_nice_below", DEV "[vm a]\nworker_nice = -21\n",
	  "t.conf:4: worker_nice = -21: out of range (expected a whole number "
	  "from -20 to 19, the kernel's nice values)" },
	{ "worker_nice_above", DEV "worker_nice = 20\n",
	  "t.conf:3: worker_nice = 20: out of range (expected a whole number "
	  "from -20 to 19, the kernel's nice values)" },
	{ "worker_nice_huge", DEV "worker_nice = -99999999999999999999999\n",
	  "t.conf:3: worker_nice = -99999999999999999999999: out of range "
	  "(expected a whole number from -20 to 19, the kernel's nice "
	  "values)" },
	{ "worker_nice_plus", DEV "worker_nice = +5\n",
	  "t.conf:3: worker_nice = +5: not a number (expected a whole number "
	  "from -20 to 19, the kernel's nice values)" },
	{ "worker_nice_bare_minus", DEV "worker_nice = -\n",
	  "t.conf:3: worker_nice = -: not a number (expected a whole number "
	  "from -20 to 19, the kernel's nice values)" },
	{ "worker_nice_in_broker", "[broker]\nworker_nice = 1\n",
	  "t.conf:2: worker_nice is not allowed in [broker] (it belongs in "
	  "[defaults] or [vm NAME])" },
	{ "poll_budget_negative", DEV "poll_budget_us = -1\n",
	  "t.conf:3: poll_budget_us = -1: not a number (expected a whole "
	  "number from 0 to 10000)" },
	{ "poll_budget_with_unit", DEV "[vm a]\npoll_budget_us = 50us\n",
	  "t.conf:4: poll_budget_us = 50us: not a number (expected a whole "
	  "number from 0 to 10000)" },
	{ "poll_budget_in_broker", "[broker]\npoll_budget_us = 50\n",
	  "t.conf:2: poll_budget_us is not allowed in [broker] (it belongs in "
	  "[defaults] or [vm NAME])" },
	{ "socket_dir_relative", "[broker]\nsocket_dir = run/vm\n",
	  "t.conf:2: socket_dir = run/vm: not an absolute path (expected an "
	  "absolute path of at most 107 bytes)" },
	/* merged settings */
	{ "vm_without_device", "[vm a]\n",
	  "t.conf:1: [vm a]: no device (set device in [defaults] or in this "
	  "section)" },
	/* addresses */
	{ "address_not_an_address", DEV "[vm a]\naddresses = 10.0.0.256\n",
	  "t.conf:4: addresses: 10.0.0.256: not an IPv4 or IPv6 address "
	  "(expected an address such as 10.99.0.10 or fd99::10, or a prefix "
	  "such as fd99:0:0:1::/64)" },
	{ "address_hostname", DEV "[vm a]\naddresses = guest.example\n",
	  "t.conf:4: addresses: guest.example: not an IPv4 or IPv6 address "
	  "(expected an address such as 10.99.0.10 or fd99::10, or a prefix "
	  "such as fd99:0:0:1::/64)" },
	{ "address_host_bits_beyond_prefix",
	  DEV "[vm a]\naddresses = "
	      "10.99.0.10/24\n",
	  "t.conf:4: addresses: 10.99.0.10/24: host bits set beyond the "
	  "prefix length (expected an address such as 10.99.0.10 or "
	  "fd99::10, or a prefix such as fd99:0:0:1::/64)" },
	{ "address_prefix_too_long", DEV "[vm a]\naddresses = fd99::/129\n",
	  "t.conf:4: addresses: fd99::/129: bad prefix length (expected an "
	  "address such as 10.99.0.10 or fd99::10, or a prefix such as "
	  "fd99:0:0:1::/64)" },
	{ "address_empty_item", DEV "[vm a]\naddresses = 10.0.0.1,,10.0.0.2\n",
	  "t.conf:4: addresses: empty item in the list (expected addresses "
	  "separated by commas)" },
	{ "address_trailing_comma", DEV "[vm a]\naddresses = 10.0.0.1,\n",
	  "t.conf:4: addresses: empty item in the list (expected addresses "
	  "separated by commas)" },
	{ "address_loopback", DEV "[vm a]\naddresses = 127.0.0.2\n",
	  "t.conf:4: addresses: 127.0.0.2: overlaps 127.0.0.0/8 (loopback), "
	  "which no VM may claim" },
	{ "address_everything", DEV "[vm a]\naddresses = 0.0.0.0/0\n",
	  "t.conf:4: addresses: 0.0.0.0/0: overlaps 0.0.0.0/8 (\"this "
	  "network\"), which no VM may claim" },
	{ "address_multicast", DEV "[vm a]\naddresses = ff02::1\n",
	  "t.conf:4: addresses: ff02::1: overlaps ff00::/8 (multicast), which "
	  "no VM may claim" },
	{ "address_link_local_gid", DEV "[vm a]\naddresses = fe80::1\n",
	  "t.conf:4: addresses: fe80::1: overlaps fe80::/10 (link-local: the "
	  "host's own default GIDs), which no VM may claim" },
	{ "address_ipv4_mapped", DEV "[vm a]\naddresses = ::ffff:10.0.0.1\n",
	  "t.conf:4: addresses: ::ffff:10.0.0.1: overlaps ::ffff:0.0.0.0/96 "
	  "(IPv4-mapped; write the IPv4 address), which no VM may claim" },
	{ "address_broadcast", DEV "[vm a]\naddresses = 255.255.255.255\n",
	  "t.conf:4: addresses: 255.255.255.255: overlaps 240.0.0.0/4 "
	  "(reserved and broadcast), which no VM may claim" },
	{ "address_twice_in_one_vm",
	  DEV "[vm a]\naddresses = fd99::1, "
	      "FD99:0::1\n",
	  "t.conf:4: addresses: fd99::1 overlaps fd99::1 in the same list" },
	{ "address_inside_own_prefix",
	  DEV "[vm a]\naddresses = 10.0.0.0/24, "
	      "10.0.0.5\n",
	  "t.conf:4: addresses: 10.0.0.5 overlaps 10.0.0.0/24 in the same "
	  "list" },
	{ "address_claimed_by_two_vms",
	  DEV "[vm a]\naddresses = 10.0.0.5\n"
	      "[vm b]\naddresses = 10.0.0.5\n",
	  "t.conf:6: addresses: 10.0.0.5 overlaps 10.0.0.5 of [vm a] (line "
	  "4)" },
	{ "prefix_overlapping_other_vm_prefix",
	  DEV "[vm a]\naddresses = fd99:0:0:1::/64\n"
	      "[vm b]\naddresses = fd99::/48\n",
	  "t.conf:6: addresses: fd99::/48 overlaps fd99:0:0:1::/64 of [vm a] "
	  "(line 4)" },
	{ "address_inside_earlier_prefix_found_past_others",
	  DEV
	  "[vm a]\naddresses = 10.0.0.0/8\n"
	  "[vm b]\naddresses = 10.1.0.0/16\n[vm c]\naddresses = 10.200.0.1\n",
	  "t.conf:6: addresses: 10.1.0.0/16 overlaps 10.0.0.0/8 of [vm a] "
	  "(line 4)" },
	{ "addresses_more_than_64",
	  DEV "[vm a]\naddresses = "
	      "10.0.0.1,10.0.0.2,10.0.0.3,10.0.0.4,10.0.0.5,10.0.0.6,10.0.0.7,"
	      "10.0.0.8,10.0.0.9,10.0.0.10,10.0.0.11,10.0.0.12,10.0.0.13,"
	      "10.0.0.14,10.0.0.15,10.0.0.16,10.0.0.17,10.0.0.18,10.0.0.19,"
	      "10.0.0.20,10.0.0.21,10.0.0.22,10.0.0.23,10.0.0.24,10.0.0.25,"
	      "10.0.0.26,10.0.0.27,10.0.0.28,10.0.0.29,10.0.0.30,10.0.0.31,"
	      "10.0.0.32,10.0.0.33,10.0.0.34,10.0.0.35,10.0.0.36,10.0.0.37,"
	      "10.0.0.38,10.0.0.39,10.0.0.40,10.0.0.41,10.0.0.42,10.0.0.43,"
	      "10.0.0.44,10.0.0.45,10.0.0.46,10.0.0.47,10.0.0.48,10.0.0.49,"
	      "10.0.0.50,10.0.0.51,10.0.0.52,10.0.0.53,10.0.0.54,10.0.0.55,"
	      "10.0.0.56,10.0.0.57,10.0.0.58,10.0.0.59,10.0.0.60,10.0.0.61,"
	      "10.0.0.62,10.0.0.63,10.0.0.64,10.0.0.65\n",
	  "t.conf:4: addresses: more than 64 entries (use a prefix)" },
};

static void test_bad_case(void **state)
{
	const struct bad_case *c = *state;
	struct policy_error err;
	struct policy *p = (struct policy *)0x1;

	memset(&err, 0x5a, sizeof(err));
	assert_int_equal(policy_parse_string(c->text, "t.conf", &p, &err),
			 -EINVAL);
	assert_ptr_equal(p, (struct policy *)0x1);
	assert_true(err.n >= 1 && err.kept >= 1);
	if (strcmp(err.e[0].msg, c->msg))
		policy_error_print(&err, stderr);
	assert_string_equal(err.e[0].msg, c->msg);
}

int main(void)
{
	size_t i, n = sizeof(cases) / sizeof(cases[0]);
	struct CMUnitTest *tests = calloc(n, sizeof(*tests));
	int r;

	if (!tests)
		return 1;
	for (i = 0; i < n; i++) {
		tests[i].name = cases[i].name;
		tests[i].test_func = test_bad_case;
		tests[i].initial_state = (void *)&cases[i];
	}
	r = _cmocka_run_group_tests("policy-errors", tests, n, NULL, NULL);
	free(tests);
	return r;
}
