// SPDX-License-Identifier: MIT
/* rdmagate-guest: the guest simulator as a tool (probe, echo round trips). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "guest/guest_dev.h"
#include "guest/opts.h"
#include "guest/tools.h"

#define GPA_HIGH (4ull << 30) /* buffers live above a hole, like >4G RAM */

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: rdmagate-guest --socket PATH [OPTIONS] COMMAND [ARGS]\n"
		"Plays a VMM and a guest driver: virtio over vhost-user, or\n"
		"QEMU's vfio-user-pci and vmw_pvrdma (--transport pvrdma).\n"
		"\n"
		"Options:\n"
		"  --socket PATH       the backend's listening socket\n"
		"  --transport NAME    virtio-rdma (default) or pvrdma: the\n"
		"                      device the verbs commands and probe "
		"drive\n"
		"  --config-size N     config bytes to read (default 16: the "
		"echo\n"
		"                      device; virtio-rdma Profile A has 195)\n"
		"  --no-mem-slots      do not offer CONFIGURE_MEM_SLOTS\n"
		"                      (send SET_MEM_TABLE, not ADD_MEM_REG)\n"
		"  --no-reply-ack      do not offer REPLY_ACK\n"
		"  --timeout MS        per reply / per round trip (5000)\n"
		"  --gid I=GID[,v1]    virtio-rdma: ADD_GID at index I first\n"
		"                      (repeatable; RoCE v2 unless ,v1)\n"
		"  --scatter           virtio-rdma: scatter buffer pages in\n"
		"                      guest-physical memory\n"
		"  --ram SIZE          virtio-rdma: guest RAM for buffers\n"
		"                      (bytes, suffix M or G; default 64M)\n"
		"Commands:\n"
		"  probe               handshake; print features, queues, "
		"config\n"
		"                      (pvrdma: probe as vmw_pvrdma, print "
		"caps)\n"
		"  echo [-n N] [-s SIZE] [--queues Q] [--ring NUM]\n"
		"       [--hugepages] [--indirect] [--poll] [--event-idx]\n"
		"                      N round trips of SIZE bytes through "
		"the\n"
		"                      echo test device, data checked\n"
		"  rc_pingpong [OPTIONS] [HOST]\n"
		"                      ibv_rc_pingpong over virtio-rdma (-h)\n"
		"  ud_pingpong [OPTIONS] [HOST]\n"
		"                      ibv_ud_pingpong over virtio-rdma (-h)\n"
		"  srq_pingpong [OPTIONS] [HOST]\n"
		"                      ibv_srq_pingpong over virtio-rdma (-h)\n"
		"  cm_pingpong [OPTIONS] [HOST_IP]\n"
		"                      rc_pingpong connected through CM "
		"MADs on\n"
		"                      QP1 by IP address and port (-h); "
		"needs\n"
		"                      rdmagate-mux (the worker's QP1 goes "
		"through it)\n"
		"  cm_rping -g I [OPTIONS]\n"
		"                      rping's server on such a connection: "
		"RDMA\n"
		"                      READ, checked, and WRITE back (-h)\n"
		"  cm_udaddy -g I [OPTIONS]\n"
		"                      udaddy's server on a UD QP named by "
		"SIDR (-h)\n"
		"  perf [OPTIONS] [HOST]\n"
		"                      latency, bandwidth, message rate, MR\n"
		"                      registration time (-h)\n"
		"Example:\n"
		"  rdmagate-guest --socket /tmp/w.sock echo -n 10000 -s 64\n");
}

static const char *const feature_names[64] = {
	[24] = "NOTIFY_ON_EMPTY",    [27] = "ANY_LAYOUT",
	[28] = "RING_INDIRECT_DESC", [29] = "RING_EVENT_IDX",
	[30] = "PROTOCOL_FEATURES",  [32] = "VERSION_1",
	[33] = "ACCESS_PLATFORM",    [34] = "RING_PACKED",
	[35] = "IN_ORDER",
};

static const char *const protocol_names[64] = {
	[0] = "MQ",
	[1] = "LOG_SHMFD",
	[2] = "RARP",
	[3] = "REPLY_ACK",
	[4] = "NET_MTU",
	[5] = "BACKEND_REQ",
	[6] = "CROSS_ENDIAN",
	[7] = "CRYPTO_SESSION",
	[8] = "PAGEFAULT",
	[9] = "CONFIG",
	[10] = "BACKEND_SEND_FD",
	[11] = "HOST_NOTIFIER",
	[12] = "INFLIGHT_SHMFD",
	[13] = "RESET_DEVICE",
	[14] = "INBAND_NOTIFICATIONS",
	[15] = "CONFIGURE_MEM_SLOTS",
	[16] = "STATUS",
};

static void print_bits(const char *what, uint64_t v,
		       const char *const names[64])
{
	printf("%-20s 0x%016" PRIx64, what, v);
	for (unsigned int b = 0; b < 64; b++) {
		if (!(v & (1ull << b)))
			continue;
		if (names[b])
			printf(" %s", names[b]);
		else
			printf(" bit%u", b);
	}
	printf("\n");
}

static void print_config(const struct vhost_client *c)
{
	printf("%-20s %u bytes:", "config", c->config_size);
	for (uint32_t i = 0; i < c->config_size; i++)
		printf("%s%02x", i % 16 ? " " : "\n  ", c->config[i]);
	printf("\n  \"");
	for (uint32_t i = 0; i < c->config_size && c->config[i]; i++)
		putchar(c->config[i] >= 0x20 && c->config[i] < 0x7f
				? c->config[i]
				: '.');
	printf("\"\n");
}

/* Probe of a verbs device: bring it up as its driver would, describe it. */
static int probe_verbs(struct tool *t)
{
	struct virtio_rdma_port_attr pa;
	struct gv_context *ctx;
	int r;

	t->gt.socket = t->socket;
	t->gt.timeout_ms = t->vc.timeout_ms;
	if (gv_tool_open(&t->gt, &ctx))
		return 1;
	gv_describe(ctx, stdout);
	r = gv_query_port(ctx, &pa);
	if (r)
		fprintf(stderr, "rdmagate-guest: QUERY_PORT: %s\n",
			strerror(-r));
	else
		printf("%-20s state %u, mtu %u (max %u), gids %d, pkeys %u\n",
		       "port 1", pa.state, gv_mtu_to_bytes(pa.active_mtu),
		       gv_mtu_to_bytes(pa.max_mtu), pa.gid_tbl_len,
		       pa.pkey_tbl_len);
	gv_close(ctx);
	return r ? 1 : 0;
}

static int cmd_probe(struct tool *t, int argc, char **argv)
{
	struct guest_dev d;
	int r;

	if (t->gt.transport != GV_TRANSPORT_VIRTIO_RDMA)
		return probe_verbs(t);
	guest_dev_init(&d);
	r = guest_dev_connect(&d, t->socket, &t->vc);
	if (r) {
		fprintf(stderr, "rdmagate-guest: handshake with %s: %s\n",
			t->socket, strerror(-r));
		guest_dev_release(&d);
		return 1;
	}
	print_bits("features", d.vc.device_features, feature_names);
	print_bits("protocol offered", d.vc.device_protocol, protocol_names);
	print_bits("protocol agreed", d.vc.protocol_features, protocol_names);
	printf("%-20s %" PRIu64 "\n", "queues", d.vc.queue_num);
	printf("%-20s %" PRIu64 "\n", "max mem slots", d.vc.max_mem_slots);
	if (d.vc.config_size)
		print_config(&d.vc);
	guest_dev_release(&d);
	return 0;
}

struct echo_q {
	struct guest_vq *q;
	uint64_t out_gpa, in_gpa;
	uint64_t *out, *in; /* our view of the buffers */
};

/* Low slot for the rings at GPA 0; buffers above a hole at 4 GiB. */
static int echo_layout(struct tool *t, struct guest_dev *d)
{
	uint64_t page = t->hugepages ? GUEST_PAGE_2M : GUEST_PAGE_4K;
	uint64_t ring = 16ull * GUEST_VQ_INDIRECT_MAX * t->ring +
			32ull * t->ring + 4096;
	uint64_t low = ring * t->queues + (1 << 20);
	uint64_t high = (2ull * ((t->size + 63) & ~63ull) + 64) * t->queues;
	int r;

	low = (low + page - 1) & ~(page - 1);
	high = (high + page - 1) & ~(page - 1);
	r = guest_ram_add_region(&d->ram, 0, low, page);
	if (r >= 0)
		r = guest_ram_add_region(&d->ram, GPA_HIGH, high, page);
	if (r == -ENOMEM && t->hugepages)
		fprintf(stderr, "rdmagate-guest: no free 2 MiB pages "
				"(see /proc/sys/vm/nr_hugepages)\n");
	return r < 0 ? r : 0;
}

static int echo_setup(struct tool *t, struct guest_dev *d, struct echo_q *eq)
{
	uint64_t drv = (1ull << GUEST_F_VERSION_1) |
		       (1ull << GUEST_F_RING_INDIRECT_DESC) |
		       (t->event_idx ? 1ull << GUEST_F_RING_EVENT_IDX : 0);
	int r = echo_layout(t, d);

	if (!r)
		r = guest_dev_start(d, drv);
	if (!r && t->indirect &&
	    !(d->vc.features & (1ull << GUEST_F_RING_INDIRECT_DESC)))
		r = -EOPNOTSUPP;
	if (!r && t->event_idx &&
	    !(d->vc.features & (1ull << GUEST_F_RING_EVENT_IDX)))
		r = -EOPNOTSUPP;
	for (unsigned int i = 0; !r && i < t->queues; i++) {
		r = guest_dev_add_queue(d, i, t->ring, &eq[i].q);
		if (!r)
			r = guest_ram_alloc_in(&d->ram, 1, t->size, 64,
					       &eq[i].out_gpa);
		if (!r)
			r = guest_ram_alloc_in(&d->ram, 1, t->size, 64,
					       &eq[i].in_gpa);
		if (r)
			break;
		eq[i].out = guest_ram_ptr(&d->ram, eq[i].out_gpa, t->size);
		eq[i].in = guest_ram_ptr(&d->ram, eq[i].in_gpa, t->size);
		guest_vq_set_no_interrupt(eq[i].q, t->poll);
	}
	if (!r)
		r = guest_dev_driver_ok(d);
	return r;
}

static void fill(uint64_t *p, uint32_t size, uint64_t seed)
{
	uint8_t tail[8];

	for (uint32_t i = 0; i < size / 8; i++)
		p[i] = seed * 0x9e3779b97f4a7c15ull + i;
	memset(tail, (int)(seed & 0xff), sizeof(tail));
	memcpy((uint8_t *)p + (size & ~7u), tail, size & 7u);
}

static int echo_one(struct tool *t, struct guest_dev *d, struct echo_q *e,
		    unsigned long n)
{
	struct guest_sg out = { e->out_gpa, t->size };
	struct guest_sg in = { e->in_gpa, t->size };
	uint32_t len;
	int r;

	fill(e->out, t->size, n + 1);
	r = guest_dev_exchange(d, e->q, &out, 1, &in, 1, t->indirect,
			       t->vc.timeout_ms, &len);
	if (r)
		return r;
	if (len != t->size || memcmp(e->in, e->out, t->size)) {
		fprintf(stderr,
			"rdmagate-guest: round trip %lu on queue %u: "
			"len %u, data %s\n",
			n, e->q->index, len,
			memcmp(e->in, e->out, t->size) ? "differs" : "ok");
		return -EPROTO;
	}
	return 0;
}

static int echo_run(struct tool *t, struct guest_dev *d, struct echo_q *eq)
{
	unsigned long kicks = 0, suppressed = 0;
	uint64_t t0 = mono_ns();
	double dt;
	int r;

	for (unsigned long n = 0; n < t->count; n++) {
		r = echo_one(t, d, &eq[n % t->queues], n);
		if (r)
			return r;
	}
	dt = (double)(mono_ns() - t0) / 1e9;
	for (unsigned int i = 0; i < t->queues; i++) {
		kicks += eq[i].q->kicks;
		suppressed += eq[i].q->kicks_suppressed;
	}
	printf("echo: %lu round trips of %u B on %u queue(s), ring %u, "
	       "%s, %s, %s pages%s\n",
	       t->count, t->size, t->queues, t->ring,
	       t->indirect ? "indirect" : "direct",
	       t->poll ? "polled" : "interrupts",
	       t->hugepages ? "2 MiB" : "4 KiB",
	       t->event_idx ? ", event index" : "");
	printf("echo: %.3f s, %.0f round trips/s, %.1f us each, "
	       "%.1f MB/s each way, %lu kicks (%lu suppressed)\n",
	       dt, t->count / dt, dt * 1e6 / t->count,
	       t->count * (double)t->size / dt / 1e6, kicks, suppressed);
	return 0;
}

static int cmd_echo(struct tool *t, int argc, char **argv);

static int cmd_ud_pingpong(struct tool *t, int argc, char **argv)
{
	t->gt.socket = t->socket;
	t->gt.timeout_ms = t->vc.timeout_ms;
	return gv_tool_ud_pingpong(&t->gt, argc, argv);
}

static int cmd_srq_pingpong(struct tool *t, int argc, char **argv)
{
	t->gt.socket = t->socket;
	t->gt.timeout_ms = t->vc.timeout_ms;
	return gv_tool_srq_pingpong(&t->gt, argc, argv);
}

static int cmd_perf(struct tool *t, int argc, char **argv)
{
	t->gt.socket = t->socket;
	t->gt.timeout_ms = t->vc.timeout_ms;
	return gv_tool_perf(&t->gt, argc, argv);
}

static int cmd_cm_pingpong(struct tool *t, int argc, char **argv)
{
	t->gt.socket = t->socket;
	t->gt.timeout_ms = t->vc.timeout_ms;
	return gv_tool_cm_pingpong(&t->gt, argc, argv);
}

static int cmd_cm_rping(struct tool *t, int argc, char **argv)
{
	t->gt.socket = t->socket;
	t->gt.timeout_ms = t->vc.timeout_ms;
	return gv_tool_cm_rping(&t->gt, argc, argv);
}

static int cmd_cm_udaddy(struct tool *t, int argc, char **argv)
{
	t->gt.socket = t->socket;
	t->gt.timeout_ms = t->vc.timeout_ms;
	return gv_tool_cm_udaddy(&t->gt, argc, argv);
}

static int cmd_rc_pingpong(struct tool *t, int argc, char **argv)
{
	t->gt.socket = t->socket;
	t->gt.timeout_ms = t->vc.timeout_ms;
	return gv_tool_rc_pingpong(&t->gt, argc, argv);
}

struct command {
	const char *name;
	int (*run)(struct tool *t, int argc, char **argv);
};

static const struct command commands[] = {
	{ "probe", cmd_probe },
	{ "echo", cmd_echo },
	{ "rc_pingpong", cmd_rc_pingpong },
	{ "ud_pingpong", cmd_ud_pingpong },
	{ "srq_pingpong", cmd_srq_pingpong },
	{ "perf", cmd_perf },
	{ "cm_pingpong", cmd_cm_pingpong },
	{ "cm_rping", cmd_cm_rping },
	{ "cm_udaddy", cmd_cm_udaddy },
};

enum { OPT_HUGE = 256, OPT_INDIRECT, OPT_POLL, OPT_EVENT_IDX };

static int parse_echo(struct tool *t, int argc, char **argv)
{
	static const struct option fixed[] = {
		{ "hugepages", no_argument, NULL, OPT_HUGE },
		{ "indirect", no_argument, NULL, OPT_INDIRECT },
		{ "poll", no_argument, NULL, OPT_POLL },
		{ "event-idx", no_argument, NULL, OPT_EVENT_IDX },
		{ 0 },
	};
	/* -n, -s, --queues, --ring: guest/opts.c */
	struct option lo[ARRAY_SIZE(fixed) + GE_NUM];
	int c, li, r;

	if (opt_num_longopts(lo, ARRAY_SIZE(lo), fixed, guest_echo_nums,
			     GE_NUM) < 0)
		return -EINVAL;
	optind = 1;
	while ((c = getopt_long(argc, argv, "n:s:", lo, &li)) != -1) {
		r = guest_opt_num(guest_echo_nums, GE_NUM, t, NULL, c, lo, li,
				  optarg);
		if (r < 0)
			return r;
		if (r)
			continue;
		switch (c) {
		case OPT_HUGE:
			t->hugepages = true;
			break;
		case OPT_INDIRECT:
			t->indirect = true;
			break;
		case OPT_POLL:
			t->poll = true;
			break;
		case OPT_EVENT_IDX:
			t->event_idx = true;
			break;
		default:
			return -EINVAL;
		}
	}
	if (!t->count || !t->size || t->size > (64u << 20) || !t->queues ||
	    (uint64_t)t->size * t->queues > (1ull << 30) ||
	    t->queues > GUEST_DEV_MAX_QUEUES || !t->ring ||
	    (t->ring & (t->ring - 1)) || optind != argc)
		return -EINVAL;
	return 0;
}

static int cmd_echo(struct tool *t, int argc, char **argv)
{
	_cleanup_free_ struct echo_q *eq = NULL;
	struct guest_dev d;
	int r;

	if (parse_echo(t, argc, argv)) {
		usage(stderr);
		return 2;
	}
	eq = calloc(t->queues, sizeof(*eq));
	if (!eq)
		return 1;
	guest_dev_init(&d);
	r = guest_dev_connect(&d, t->socket, &t->vc);
	if (!r)
		r = echo_setup(t, &d, eq);
	if (!r)
		r = echo_run(t, &d, eq);
	if (!r)
		r = guest_dev_stop(&d);
	if (r)
		fprintf(stderr, "rdmagate-guest: echo: %s\n", strerror(-r));
	guest_dev_release(&d);
	return r ? 1 : 0;
}

enum {
	OPT_SOCKET = 256,
	OPT_NO_SLOTS,
	OPT_NO_ACK,
	OPT_GID,
	OPT_SCATTER,
	OPT_RAM,
	OPT_TRANSPORT,
};

static int parse_size(const char *s, uint64_t *ret)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);

	if (end == s)
		return -EINVAL;
	if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	else if (*end == 'G' || *end == 'g')
		v <<= 30, end++;
	if (*end || !v || v > (64ull << 30))
		return -EINVAL;
	*ret = v;
	return 0;
}

static int add_gid_opt(struct tool *t, const char *arg)
{
	if (t->gt.ngids == GV_TOOL_MAX_GIDS)
		return -ENOSPC;
	return gv_tool_parse_gid(arg, &t->gt.gids[t->gt.ngids++]);
}

static int parse_global(struct tool *t, int argc, char **argv)
{
	static const struct option fixed[] = {
		{ "socket", required_argument, NULL, OPT_SOCKET },
		{ "no-mem-slots", no_argument, NULL, OPT_NO_SLOTS },
		{ "no-reply-ack", no_argument, NULL, OPT_NO_ACK },
		{ "gid", required_argument, NULL, OPT_GID },
		{ "scatter", no_argument, NULL, OPT_SCATTER },
		{ "ram", required_argument, NULL, OPT_RAM },
		{ "transport", required_argument, NULL, OPT_TRANSPORT },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	uint64_t slots = 1ull << VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS;
	uint64_t ack = 1ull << VHOST_USER_PROTOCOL_F_REPLY_ACK;
	/* --config-size, --timeout: guest/opts.c */
	struct option lo[ARRAY_SIZE(fixed) + GG_COUNT];
	int c, li, r;

	if (opt_num_longopts(lo, ARRAY_SIZE(lo), fixed, guest_global_nums,
			     GG_COUNT) < 0)
		return -EINVAL;
	while ((c = getopt_long(argc, argv, "+h", lo, &li)) != -1) {
		r = guest_opt_num(guest_global_nums, GG_COUNT, t, NULL, c, lo,
				  li, optarg);
		if (r < 0)
			return r;
		if (r)
			continue;
		switch (c) {
		case OPT_SOCKET:
			t->socket = optarg;
			break;
		case OPT_NO_SLOTS:
			t->vc.protocol_features &= ~slots;
			break;
		case OPT_NO_ACK:
			t->vc.protocol_features &= ~ack;
			break;
		case OPT_GID:
			if (add_gid_opt(t, optarg))
				return -EINVAL;
			break;
		case OPT_SCATTER:
			t->gt.scatter = true;
			break;
		case OPT_RAM:
			if (parse_size(optarg, &t->gt.data_size))
				return -EINVAL;
			break;
		case OPT_TRANSPORT:
			if (gv_parse_transport(optarg, &t->gt.transport))
				return -EINVAL;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			return -EINVAL;
		}
	}
	if (!t->socket || optind >= argc ||
	    t->vc.config_size > VHOST_USER_CONFIG_MAX || t->vc.timeout_ms <= 0)
		return -EINVAL;
	return 0;
}

int main(int argc, char **argv)
{
	struct tool t = {
		.vc = { .protocol_features = VHOST_CLIENT_PROTOCOL_FEATURES,
			.config_size = 16,
			.timeout_ms = 5000 },
		.count = 1000,
		.size = 64,
		.queues = 1,
		.ring = 256,
	};

	if (parse_global(&t, argc, argv)) {
		usage(stderr);
		return 2;
	}
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (!strcmp(argv[optind], commands[i].name))
			return commands[i].run(&t, argc - optind,
					       argv + optind);
	fprintf(stderr, "rdmagate-guest: unknown command '%s'\n", argv[optind]);
	usage(stderr);
	return 2;
}
