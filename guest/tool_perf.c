// SPDX-License-Identifier: MIT
/*
 * rdmagate-guest perf: latency, bandwidth and message rate over RC SEND,
 * WRITE and READ between two simulated guests (both sides run this
 * command; the client names the server's host), and the time to register
 * a large MR (no peer). The tests follow perftest's: send_lat and
 * write_lat are ping-pongs reporting half the round trip, write_bw /
 * read_bw / send_bw keep a window of work requests in flight.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "guest/opts.h"
#include "guest/tools.h"

/* After the pingpong's address: our buffer, "AAAAAAAAAAAAAAAA:RRRRRRRR". */
#define PERF_MR_LEN sizeof("0000000000000000:00000000")
#define CQ_DEPTH    512
#define RX_DEPTH    500
#define CQ_MOD_BW   16 /* default -Q of the bandwidth tests */
#define POST_LIST   32 /* WRs per post call (one kick) */

static const char *const test_names[] = {
	[T_SEND_LAT] = "send_lat", [T_WRITE_LAT] = "write_lat",
	[T_READ_LAT] = "read_lat", [T_WRITE_BW] = "write_bw",
	[T_READ_BW] = "read_bw",   [T_SEND_BW] = "send_bw",
	[T_REG] = "reg",
};

/* The pingpong's address, and the buffer the peer may write and read. */
struct perf_dest {
	struct gv_tool_dest d;
	uint64_t addr;
	uint32_t rkey;
};

struct perf {
	struct perf_opts o;
	struct gv_context *ctx;
	/* buf: [0, size): source; [size, 2 size): the peer's target */
	struct gv_tool_res res;
	struct gv_qp *qp;
	struct perf_dest my, rem;
	int sock;
	unsigned int routs;
	double *samples;
};

/* in fractional microseconds: a latency sample may be under 1 us */
static double now_us(void)
{
	return (double)mono_ns() / 1e3;
}

/* ---- setup and exchange ---- */

#define PERF_ACCESS                                                            \
	(VIRTIO_RDMA_ACCESS_LOCAL_WRITE | VIRTIO_RDMA_ACCESS_REMOTE_WRITE |    \
	 VIRTIO_RDMA_ACCESS_REMOTE_READ)

static int perf_init(struct perf *p)
{
	struct gv_qp_init_attr qa = { 0 };
	int r = gv_tool_res_init(p->ctx, &p->res, 2 * p->o.size, 0, PERF_ACCESS,
				 CQ_DEPTH);

	if (r)
		return r;
	qa.send_cq = qa.recv_cq = p->res.cq;
	qa.max_send_wr = p->o.depth;
	qa.max_recv_wr = RX_DEPTH;
	qa.max_send_sge = qa.max_recv_sge = 1;
	qa.qp_type = VIRTIO_RDMA_QPT_RC;
	return gv_tool_create_qp(p->res.pd, &qa, 1,
				 VIRTIO_RDMA_ACCESS_REMOTE_WRITE |
					 VIRTIO_RDMA_ACCESS_REMOTE_READ,
				 &p->qp);
}

static int perf_connect(void *arg, const struct gv_tool_dest *my,
			const struct gv_tool_dest *rem)
{
	struct perf *p = arg;
	struct gv_tool_path path = { .mtu = VIRTIO_RDMA_MTU_1024,
				     .port = 1,
				     .sgid_index = (uint8_t)p->o.c.gidx,
				     .rd_atomic = 16,
				     .grh = true };

	return gv_tool_rc_connect(p->qp, &path, my, rem);
}

/* Both send their buffer's address and rkey, then read the peer's. */
static int perf_exchange_mr(struct perf *p)
{
	char msg[PERF_MR_LEN];
	unsigned long long addr;
	int r;

	snprintf(msg, sizeof(msg), "%016llx:%08x",
		 (unsigned long long)p->my.addr, p->my.rkey);
	r = gv_tool_write_full(p->sock, msg, sizeof(msg));
	if (!r)
		r = gv_tool_read_full(p->sock, msg, sizeof(msg));
	if (r)
		return r;
	msg[sizeof(msg) - 1] = '\0';
	if (sscanf(msg, "%16llx:%8x", &addr, &p->rem.rkey) != 2) {
		fprintf(stderr, "perf: bad buffer address from the peer\n");
		return -EINVAL;
	}
	p->rem.addr = addr;
	return 0;
}

/* The pingpong's exchange (the server connects before answering). */
static int perf_exchange(struct perf *p)
{
	p->sock = gv_tool_exchange(p->o.c.server, p->o.c.port, &p->my.d,
				   &p->rem.d, 1, perf_connect, p);
	if (p->sock < 0)
		return p->sock;
	if (p->o.c.server) {
		int r = perf_connect(p, &p->my.d, &p->rem.d);

		if (r)
			return r;
	}
	return perf_exchange_mr(p);
}

/* Both sides ready (receives posted) before the clock starts. */
static int perf_sync(struct perf *p)
{
	char b[sizeof(GV_TOOL_DONE)];

	if (gv_tool_write_full(p->sock, GV_TOOL_DONE, sizeof(GV_TOOL_DONE)))
		return -EIO;
	return gv_tool_read_full(p->sock, b, sizeof(b));
}

/* ---- completions ---- */

/* Spins a little, then yields: the worker needs a CPU too. */
static void relax(unsigned int *spins)
{
	if (++*spins > 64)
		sched_yield();
	else
		__builtin_ia32_pause();
}

/* One completion: busy polling, or sleeping on the CQ's interrupt. */
static int perf_wait_wc(struct perf *p, struct gv_wc *wc)
{
	double end = now_us() + 1e6 * 20;
	unsigned int spins = 0;
	int n, r;

	for (;;) {
		n = gv_poll_cq(p->res.cq, 1, wc);
		if (n)
			break;
		if (now_us() > end)
			return -ETIMEDOUT;
		if (!p->o.c.events) {
			relax(&spins);
			continue;
		}
		r = gv_req_notify_cq(p->res.cq, false);
		if (r)
			return r;
		n = gv_poll_cq(p->res.cq, 1, wc); /* arrived before arming */
		if (n)
			break;
		r = gv_get_cq_event(p->res.cq, 20000);
		if (r)
			return r;
	}
	if (n < 0)
		return n;
	if (wc->status != VIRTIO_RDMA_WC_SUCCESS) {
		fprintf(stderr, "perf: completion wr_id %llu: %s (%u)\n",
			(unsigned long long)wc->wr_id,
			gv_wc_status_str(wc->status), wc->status);
		return -EIO;
	}
	return 0;
}

/* Receives into the target half, in lists of up to POST_LIST (one kick). */
static int post_recvs(struct perf *p, unsigned int n)
{
	struct gv_sge sge = { (uintptr_t)p->res.buf + p->o.size,
			      (uint32_t)p->o.size, p->res.mr->lkey };
	struct gv_recv_wr wr[POST_LIST], *bad;

	while (n) {
		unsigned int k = n < POST_LIST ? n : POST_LIST;
		int r;

		for (unsigned int i = 0; i < k; i++)
			wr[i] = (struct gv_recv_wr){
				.wr_id = UINT64_MAX,
				.next = i + 1 < k ? &wr[i + 1] : NULL,
				.sg_list = &sge,
				.num_sge = 1,
			};
		bad = NULL;
		r = gv_post_recv(p->qp, wr, &bad);
		p->routs += r ? (unsigned int)(bad - wr) : k;
		if (r)
			return r;
		n -= k;
	}
	return 0;
}

static int post_op(struct perf *p, uint32_t opcode, uint64_t wr_id,
		   bool signaled)
{
	struct gv_sge sge = { (uintptr_t)p->res.buf, (uint32_t)p->o.size,
			      p->res.mr->lkey };
	struct gv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = opcode,
		.send_flags = signaled ? VIRTIO_RDMA_SEND_SIGNALED : 0
	};

	if (opcode == VIRTIO_RDMA_WR_RDMA_WRITE) /* into the peer's target */
		wr.wr.rdma.remote_addr = p->rem.addr + p->o.size;
	else
		wr.wr.rdma.remote_addr = p->rem.addr;
	wr.wr.rdma.rkey = p->rem.rkey;
	return gv_post_send(p->qp, &wr, NULL);
}

/* ---- latency ---- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Latencies: samples are round trips; ping-pongs report half of them. */
static void report_lat(struct perf *p, double total_us, bool half)
{
	unsigned int n = p->o.c.iters;
	double k = half ? 2 : 1;

	qsort(p->samples, n, sizeof(*p->samples), cmp_double);
	printf("perf: %s %llu B x %u%s: avg %.2f us, median %.2f us, "
	       "min %.2f us, p99 %.2f us (%s)\n",
	       test_names[p->o.test], (unsigned long long)p->o.size, n,
	       p->o.c.events ? " events" : "", total_us / n / k,
	       p->samples[n / 2] / k, p->samples[0] / k,
	       p->samples[(n * 99) / 100] / k,
	       half ? "half round trip" : "round trip");
}

/* Counts one completion of a ping-pong into *sent or *recvd. */
static int pong_wc(struct perf *p, unsigned int *sent, unsigned int *recvd)
{
	struct gv_wc wc;
	int r = perf_wait_wc(p, &wc);

	if (r)
		return r;
	if (wc.opcode == VIRTIO_RDMA_WC_RECV) {
		(*recvd)++;
		p->routs--;
		if (p->routs < RX_DEPTH / 2)
			return post_recvs(p, RX_DEPTH - p->routs);
	} else {
		(*sent)++;
	}
	return 0;
}

/* One send in cq_mod is signaled, and the last. */
static bool lat_signaled(const struct perf *p, unsigned int i)
{
	return (i + 1) % p->o.cq_mod == 0 || i + 1 == p->o.c.iters;
}

static unsigned int lat_nsignaled(const struct perf *p)
{
	return p->o.c.iters / p->o.cq_mod + (p->o.c.iters % p->o.cq_mod != 0);
}

/*
 * SEND ping-pong: the client sends and waits for the answer, the server
 * answers each message. The client reports.
 */
static int send_lat(struct perf *p)
{
	bool client = p->o.c.server != NULL;
	unsigned int sent = 0, recvd = 0;
	double t0, start = now_us();
	int r = 0;

	for (unsigned int i = 0; i < p->o.c.iters && !r; i++) {
		t0 = now_us();
		if (client)
			r = post_op(p, VIRTIO_RDMA_WR_SEND, i,
				    lat_signaled(p, i));
		while (!r && recvd <= i)
			r = pong_wc(p, &sent, &recvd);
		if (!r && !client)
			r = post_op(p, VIRTIO_RDMA_WR_SEND, i,
				    lat_signaled(p, i));
		p->samples[i] = now_us() - t0;
	}
	while (!r && sent < lat_nsignaled(p))
		r = pong_wc(p, &sent, &recvd);
	if (!r && client)
		report_lat(p, now_us() - start, true);
	return r;
}

static void wait_byte(volatile uint8_t *b, uint8_t v)
{
	unsigned int spins = 0;

	while (*b != v)
		relax(&spins);
}

/* Takes the send completions that are there; counts them in *done. */
static int drain_sends(struct perf *p, unsigned int *done)
{
	struct gv_wc wc[16];
	int n = gv_poll_cq(p->res.cq, 16, wc);

	for (int i = 0; i < n; i++) {
		if (wc[i].status != VIRTIO_RDMA_WC_SUCCESS) {
			fprintf(stderr, "perf: completion: %s\n",
				gv_wc_status_str(wc[i].status));
			return -EIO;
		}
		(*done)++;
	}
	return n < 0 ? n : 0;
}

/* WRITE ping-pong, polling the last byte of the target (ib_write_lat). */
static int write_lat(struct perf *p)
{
	bool client = p->o.c.server != NULL;
	volatile uint8_t *mine = p->res.buf + 2 * p->o.size - 1;
	double t0, start = now_us();
	unsigned int done = 0;
	int r = 0;

	for (unsigned int i = 0; i < p->o.c.iters && !r; i++) {
		uint8_t v = (uint8_t)(i + 1);

		t0 = now_us();
		if (!client)
			wait_byte(mine, v);
		p->res.buf[p->o.size - 1] = v;
		r = post_op(p, VIRTIO_RDMA_WR_RDMA_WRITE, i,
			    lat_signaled(p, i));
		if (!r && client)
			wait_byte(mine, v);
		if (!r)
			r = drain_sends(p, &done);
		p->samples[i] = now_us() - t0;
	}
	while (!r && done < lat_nsignaled(p)) {
		struct gv_wc wc;

		r = perf_wait_wc(p, &wc);
		done++;
	}
	if (!r)
		report_lat(p, now_us() - start, true);
	return r;
}

/* READ round trips (client only). */
static int read_lat(struct perf *p)
{
	double t0, start = now_us();
	struct gv_wc wc;
	int r;

	for (unsigned int i = 0; i < p->o.c.iters; i++) {
		t0 = now_us();
		r = post_op(p, VIRTIO_RDMA_WR_RDMA_READ, i, true);
		if (!r)
			r = perf_wait_wc(p, &wc);
		if (r)
			return r;
		/* a READ's latency is one round trip: report it whole */
		p->samples[i] = now_us() - t0;
	}
	report_lat(p, now_us() - start, false);
	return 0;
}

/* ---- bandwidth and message rate ---- */

static void report_bw(struct perf *p, double us, const char *side)
{
	double bytes = (double)p->o.size * p->o.c.iters;

	printf("perf: %s %llu B x %u%s%s: %.2f MiB/s, %.3f Gbit/s, "
	       "%.4f Mpps, %.3f s\n",
	       test_names[p->o.test], (unsigned long long)p->o.size,
	       p->o.c.iters, side, p->o.c.events ? " events" : "",
	       bytes / us * 1e6 / (1 << 20), bytes * 8 / us / 1e3,
	       p->o.c.iters / us, us / 1e6);
}

/*
 * Posts as much of the window as is free, up to POST_LIST WRs in one list:
 * one kick per list, as a provider rings its doorbell once per post call.
 */
static int post_window(struct perf *p, uint32_t opcode, unsigned int *posted,
		       unsigned int done)
{
	struct gv_sge sge = { (uintptr_t)p->res.buf, (uint32_t)p->o.size,
			      p->res.mr->lkey };
	unsigned int k = p->o.depth - (*posted - done);
	struct gv_send_wr wr[POST_LIST], *bad = NULL;
	int r;

	if (k > p->o.c.iters - *posted)
		k = p->o.c.iters - *posted;
	if (k > POST_LIST)
		k = POST_LIST;
	for (unsigned int i = 0; i < k; i++) {
		wr[i] = (struct gv_send_wr){
			.wr_id = *posted + i,
			.next = i + 1 < k ? &wr[i + 1] : NULL,
			.sg_list = &sge,
			.num_sge = 1,
			.opcode = opcode,
			.send_flags = lat_signaled(p, *posted + i)
					      ? VIRTIO_RDMA_SEND_SIGNALED
					      : 0,
		};
		wr[i].wr.rdma.remote_addr =
			p->rem.addr +
			(opcode == VIRTIO_RDMA_WR_RDMA_WRITE ? p->o.size : 0);
		wr[i].wr.rdma.rkey = p->rem.rkey;
	}
	r = gv_post_send(p->qp, wr, &bad);
	*posted += r ? (unsigned int)(bad - wr) : k;
	return r;
}

/* The client keeps `depth` WRs in flight, one in cq_mod signaled. */
static int bw_client(struct perf *p, uint32_t opcode)
{
	unsigned int posted = 0, done = 0;
	double start = now_us();
	struct gv_wc wc;
	int r;

	while (done < p->o.c.iters) {
		while (posted < p->o.c.iters && posted - done < p->o.depth) {
			r = post_window(p, opcode, &posted, done);
			if (r)
				return r;
		}
		r = perf_wait_wc(p, &wc);
		if (r)
			return r;
		done = (unsigned int)wc.wr_id + 1;
	}
	report_bw(p, now_us() - start, "");
	return 0;
}

/* send_bw's server: count receives, keep the receive queue full. */
static int bw_server_recv(struct perf *p)
{
	double start = 0;
	struct gv_wc wc;
	int r;

	for (unsigned int i = 0; i < p->o.c.iters; i++) {
		r = perf_wait_wc(p, &wc);
		if (r)
			return r;
		if (!i)
			start = now_us();
		p->routs--;
		if (p->routs < RX_DEPTH / 2 &&
		    (r = post_recvs(p, RX_DEPTH - p->routs)))
			return r;
	}
	report_bw(p, now_us() - start, " (receiver, from the first)");
	return 0;
}

/* ---- registration ---- */

static int reg_test(struct perf *p)
{
	uint8_t *b = gv_alloc_buf(p->ctx, p->o.size, 0);
	int r = gv_alloc_pd(p->ctx, &p->res.pd);

	if (!b)
		return -errno;
	memset(b, 1, p->o.size); /* touched, as the native reference */
	for (unsigned int i = 0; !r && i < p->o.repeat; i++) {
		struct gv_mr *mr;
		double t0 = now_us();

		r = gv_reg_mr(p->res.pd, b, p->o.size, PERF_ACCESS, &mr);
		if (r)
			break;
		printf("perf: reg %llu MiB%s: %.3f ms\n",
		       (unsigned long long)(p->o.size >> 20),
		       p->ctx->scatter ? " (scattered)" : "",
		       (now_us() - t0) / 1e3);
		r = gv_dereg_mr(mr);
	}
	gv_free_buf(p->ctx, b);
	return r;
}

/* ---- command ---- */

static int run_test(struct perf *p)
{
	bool client = p->o.c.server != NULL;
	int r = 0;

	switch (p->o.test) {
	case T_SEND_LAT:
		r = send_lat(p);
		break;
	case T_WRITE_LAT:
		r = write_lat(p);
		break;
	case T_READ_LAT:
		r = client ? read_lat(p) : 0;
		break;
	case T_WRITE_BW:
		r = client ? bw_client(p, VIRTIO_RDMA_WR_RDMA_WRITE) : 0;
		break;
	case T_READ_BW:
		r = client ? bw_client(p, VIRTIO_RDMA_WR_RDMA_READ) : 0;
		break;
	case T_SEND_BW:
		r = client ? bw_client(p, VIRTIO_RDMA_WR_SEND)
			   : bw_server_recv(p);
		break;
	case T_REG:
		break;
	}
	/* the passive side of one-sided tests waits for the client here */
	if (!r)
		r = perf_sync(p);
	return r;
}

static int perf_run(struct perf *p)
{
	int r = perf_init(p);

	if (r)
		return r;
	p->my.d.qpn = p->qp->qp_num;
	p->my.d.psn = (uint32_t)lrand48() & 0xffffff;
	p->my.addr = (uintptr_t)p->res.buf;
	p->my.rkey = p->res.mr->rkey;
	r = gv_query_gid(p->ctx, (uint16_t)p->o.c.gidx, p->my.d.gid);
	if (r) {
		fprintf(stderr, "perf: no GID at index %d (--gid)\n",
			p->o.c.gidx);
		return r;
	}
	if (p->o.test == T_SEND_LAT || p->o.test == T_SEND_BW)
		r = post_recvs(p, RX_DEPTH);
	if (!r)
		r = perf_exchange(p);
	if (!r)
		r = perf_sync(p);
	return r ? r : run_test(p);
}

static void perf_close(struct perf *p)
{
	if (p->qp)
		gv_destroy_qp(p->qp);
	gv_tool_res_close(&p->res);
	gv_close(p->ctx);
}

static void perf_usage(void)
{
	fprintf(stderr,
		"Usage: rdmagate-guest --socket PATH --gid I=GID perf "
		"[OPTIONS] [HOST]\n"
		"  -t, --test NAME   send_lat write_lat read_lat write_bw "
		"read_bw send_bw reg\n"
		"  -s, --size BYTES  message size (64; reg: 1G), suffix K M G\n"
		"  -n, --iters N     iterations (1000)\n"
		"  -D, --depth N     WRs in flight, bandwidth tests (128)\n"
		"  -R, --repeat N    reg: registrations to time (3)\n"
		"  -Q, --cq-mod N    signal one send in N (latency 1, "
		"bandwidth 16)\n"
		"  -e, --events      sleep on CQ events instead of polling\n"
		"  -g, --gid-idx N   local GID index (1)\n"
		"  -p, --port N      TCP port of the exchange (18516)\n"
		"The server runs without HOST; reg needs no peer.\n");
}

static int parse_size(const char *s, uint64_t *ret)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);

	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	else if (*end == 'G' || *end == 'g')
		v <<= 30, end++;
	if (*end || !v || v > (1ull << 30))
		return -EINVAL;
	*ret = v;
	return 0;
}

static int find_test(const char *name)
{
	for (size_t i = 0; i < sizeof(test_names) / sizeof(*test_names); i++)
		if (!strcmp(name, test_names[i]))
			return (int)i;
	return -1;
}

/* perf's options that are no plain number (guest/opts.c has those). */
static int perf_opt(struct perf_opts *o, int c, const char *arg, bool *sized)
{
	int t;

	switch (c) {
	case 't':
		t = find_test(arg);
		if (t < 0)
			return -EINVAL;
		o->test = (enum perf_test)t;
		return 0;
	case 's':
		*sized = true;
		return parse_size(arg, &o->size);
	default:
		return -EINVAL;
	}
}

static int perf_parse(struct perf_opts *o, int argc, char **argv)
{
	static const struct option fixed[] = {
		{ "test", 1, NULL, 't' },
		{ "size", 1, NULL, 's' },
		{ 0 },
	};
	/* the numbers: guest/opts.c */
	struct option lo[GUEST_TOOL_LONGOPTS(fixed, GF_COUNT)];
	bool sized = false;
	int c, li, r;

	if (guest_tool_longopts(lo, ARRAY_SIZE(lo), fixed, guest_perf_nums,
				GF_COUNT) < 0)
		return -EINVAL;
	optind = 1;
	while ((c = getopt_long(argc, argv, "t:s:n:D:R:eg:p:Q:", lo, &li)) !=
	       -1) {
		r = guest_opt_num(guest_perf_nums, GF_COUNT, o, &o->c, c, lo,
				  li, optarg);
		if (!r)
			r = gv_tool_cli_opt(&o->c, c);
		if (!r)
			r = perf_opt(o, c, optarg, &sized);
		if (r < 0)
			return r;
	}
	if (o->test == T_REG && !sized)
		o->size = 1ull << 30;
	if (!o->cq_mod)
		o->cq_mod = o->test == T_WRITE_BW || o->test == T_READ_BW ||
					    o->test == T_SEND_BW
				    ? CQ_MOD_BW
				    : 1;
	if (gv_tool_cli_host(&o->c, argc, argv) || !o->depth ||
	    o->depth > VIRTIO_RDMA_RING_SIZE || !o->repeat || o->c.gidx < 0 ||
	    (o->test != T_REG && o->size > (256u << 20)))
		return -EINVAL;
	return 0;
}

int gv_tool_perf(const struct gv_tool_opts *go, int argc, char **argv)
{
	struct perf p = {
		.o = { .c = { .port = 18516, .iters = 1000, .gidx = 1 },
		       .test = T_SEND_LAT,
		       .depth = 128,
		       .repeat = 3,
		       .size = 64 },
		.sock = -1
	};
	struct gv_tool_opts o = *go;
	int r;

	if (perf_parse(&p.o, argc, argv)) {
		perf_usage();
		return 2;
	}
	srand48((long)getpid() * time(NULL));
	if (!o.data_size) /* the buffers, with room for the rest */
		o.data_size =
			(p.o.test == T_REG ? 1 : 2) * p.o.size + (16ull << 20);
	p.samples = calloc(p.o.c.iters, sizeof(*p.samples));
	if (!p.samples || gv_tool_open(&o, &p.ctx)) {
		free(p.samples);
		return 1;
	}
	r = p.o.test == T_REG ? reg_test(&p) : perf_run(&p);
	if (r)
		fprintf(stderr, "perf: %s: %s\n", test_names[p.o.test],
			strerror(-r));
	if (p.sock >= 0)
		close(p.sock);
	perf_close(&p);
	free(p.samples);
	return r ? 1 : 0;
}
