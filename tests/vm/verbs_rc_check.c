// SPDX-License-Identifier: MIT
/*
 * verbs-rc-check: checks the test VM's Soft-RoCE devices end to end with
 * libibverbs: two RC QPs connected to each other (on one device, and from
 * the first device to the second when there are two), SEND/RECV and RDMA
 * WRITE of a known pattern, every byte and every completion field checked.
 *
 * Usage: verbs-rc-check [DEV_A [DEV_B]]
 * Defaults: $RDMAGATE_VM_DEV0 (else rxe0) and $RDMAGATE_VM_DEV1 (if set).
 * Exit: 0 all checks passed, 1 a check failed, 77 no RDMA device at all.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>

#include <infiniband/verbs.h>

#include "common/clock.h"
#include "tests/vm/lib/vm_ibv.h"

/* several KiB, not a page multiple; then bytes that must stay unchanged */
#define MSG_LEN	  (12 * 1024 + 345)
#define GUARD_LEN 256
#define BUF_LEN	  (MSG_LEN + GUARD_LEN)
/* where an RDMA WRITE lands in the peer's buffer */
#define WRITE_OFF	1000
#define GUARD_BYTE	0xa5
#define POLL_TIMEOUT_NS (10ULL * 1000 * 1000 * 1000)
#define PORT		1

enum gid_kind { GID_IPV4, GID_IPV6 };

static const char *const gid_kind_name[] = {
	[GID_IPV4] = "RoCE v2, IPv4-mapped",
	[GID_IPV6] = "RoCE v2, IPv6",
};

/* One opened device: shared by both ends of a loopback pair. */
struct dev {
	const char *name;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_port_attr port;
};

/* One end of a connection: its own CQ, QP and registered buffer. */
struct end {
	struct dev *dev;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	int gid_index;
	union ibv_gid gid;
};

static int failures;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("verbs-rc-check: FAIL: ", stdout);
	vprintf(fmt, ap);
	fputc('\n', stdout);
	va_end(ap);
	failures++;
}

/* Byte i of pattern seed: varies with i and seed, never a constant run. */
static uint8_t pattern(size_t i, unsigned int seed)
{
	return (uint8_t)((i * 131u + (i >> 8) * 7u + seed * 29u + 1u) ^
			 (i >> 13));
}

static void fill(uint8_t *p, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = pattern(i, seed);
}

/*
 * Checks that buf[off, off+len) holds pattern seed and that every other byte
 * of the BUF_LEN buffer is still GUARD_BYTE. Reports the first bad byte.
 */
static bool check_bytes(const char *what, const uint8_t *buf, size_t off,
			size_t len, unsigned int seed)
{
	size_t bad = 0, first = 0;
	unsigned int want = 0, got = 0;

	for (size_t i = 0; i < BUF_LEN; i++) {
		bool in = i >= off && i < off + len;
		uint8_t expect = in ? pattern(i - off, seed) : GUARD_BYTE;

		if (buf[i] == expect)
			continue;
		if (!bad++) {
			first = i;
			want = expect;
			got = buf[i];
		}
	}
	if (bad) {
		fail("%s: %zu of %d bytes wrong; first at offset %zu: expected "
		     "0x%02x, got 0x%02x",
		     what, bad, BUF_LEN, first, want, got);
		return false;
	}
	printf("  ok  %s: all %zu bytes match the pattern, the %zu bytes "
	       "around unchanged\n",
	       what, len, (size_t)BUF_LEN - len);
	return true;
}

static bool gid_matches(const struct ibv_gid_entry *e, enum gid_kind kind)
{
	static const uint8_t v4_prefix[12] = { [10] = 0xff, [11] = 0xff };
	const uint8_t *raw = e->gid.raw;

	if (e->gid_type != IBV_GID_TYPE_ROCE_V2)
		return false;
	if (kind == GID_IPV4)
		return !memcmp(raw, v4_prefix, sizeof(v4_prefix));
	/* a global IPv6 address: not IPv4-mapped, not link-local fe80::/10 */
	return memcmp(raw, v4_prefix, sizeof(v4_prefix)) &&
	       !(raw[0] == 0xfe && (raw[1] & 0xc0) == 0x80) &&
	       memcmp(raw, (uint8_t[16]){ 0 }, 16);
}

/* Finds a GID of the given kind in the port's table; -ENOENT if none. */
static int find_gid(struct dev *d, enum gid_kind kind, int *ret_index,
		    union ibv_gid *ret_gid)
{
	for (int i = 0; i < d->port.gid_tbl_len; i++) {
		struct ibv_gid_entry e;

		if (ibv_query_gid_ex(d->ctx, PORT, i, &e, 0))
			continue; /* empty slots fail with ENODATA */
		if (!gid_matches(&e, kind))
			continue;
		*ret_index = i;
		*ret_gid = e.gid;
		return 0;
	}
	return -ENOENT;
}

static const char *gid_str(const union ibv_gid *gid, char *s, size_t len)
{
	if (!inet_ntop(AF_INET6, gid->raw, s, len))
		snprintf(s, len, "?");
	return s;
}

static int dev_open(struct dev *d, const char *name)
{
	int ret;

	d->ctx = vt_ibv_open(name);
	if (!d->ctx)
		return -errno;
	d->name = name;
	if (ibv_query_port(d->ctx, PORT, &d->port)) {
		ret = -errno;
		goto err_close;
	}
	if (d->port.state != IBV_PORT_ACTIVE) {
		ret = -ENETDOWN;
		goto err_close;
	}
	d->pd = ibv_alloc_pd(d->ctx);
	if (!d->pd) {
		ret = -errno;
		goto err_close;
	}
	return 0;

err_close:
	ibv_close_device(d->ctx);
	d->ctx = NULL;
	return ret;
}

static void dev_close(struct dev *d)
{
	if (d->pd)
		ibv_dealloc_pd(d->pd);
	if (d->ctx)
		ibv_close_device(d->ctx);
	memset(d, 0, sizeof(*d));
}

static int end_create(struct end *e, struct dev *d)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4,
			 .max_recv_wr = 4,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;

	e->dev = d;
	e->buf = malloc(BUF_LEN);
	if (!e->buf)
		return -ENOMEM;
	e->cq = ibv_create_cq(d->ctx, 8, NULL, NULL, 0);
	if (!e->cq)
		return -errno;
	qa.send_cq = e->cq;
	qa.recv_cq = e->cq;
	e->qp = ibv_create_qp(d->pd, &qa);
	if (!e->qp)
		return -errno;
	e->mr = ibv_reg_mr(d->pd, e->buf, BUF_LEN, access);
	if (!e->mr)
		return -errno;
	return 0;
}

/* Tears down what end_create() made, in reverse; safe on a partial end. */
static void end_destroy(struct end *e)
{
	if (e->mr)
		ibv_dereg_mr(e->mr);
	if (e->qp)
		ibv_destroy_qp(e->qp);
	if (e->cq)
		ibv_destroy_cq(e->cq);
	free(e->buf);
	memset(e, 0, sizeof(*e));
}

/* RESET -> INIT -> RTR -> RTS, aimed at peer (reached through its GID). */
static int end_connect(struct end *e, const struct end *peer)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = PORT,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};
	enum ibv_mtu mtu = e->dev->port.active_mtu;

	if (peer->dev->port.active_mtu < mtu)
		mtu = peer->dev->port.active_mtu;
	if (ibv_modify_qp(e->qp, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_ACCESS_FLAGS))
		return -errno;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = peer->qp->qp_num;
	a.rq_psn = peer->qp->qp_num & 0xffffff;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = PORT;
	a.ah_attr.grh.dgid = peer->gid;
	a.ah_attr.grh.sgid_index = (uint8_t)e->gid_index;
	a.ah_attr.grh.hop_limit = 64;
	if (ibv_modify_qp(e->qp, &a,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				  IBV_QP_MAX_DEST_RD_ATOMIC |
				  IBV_QP_MIN_RNR_TIMER))
		return -errno;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = e->qp->qp_num & 0xffffff;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(e->qp, &a,
			  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				  IBV_QP_MAX_QP_RD_ATOMIC))
		return -errno;
	return 0;
}

/* Waits for one completion on cq; -ETIMEDOUT after POLL_TIMEOUT_NS. */
static int poll_one(struct ibv_cq *cq, struct ibv_wc *ret_wc)
{
	uint64_t deadline = mono_ns() + POLL_TIMEOUT_NS;
	const struct timespec nap = { .tv_nsec = 50 * 1000 };
	struct ibv_wc wc;

	for (;;) {
		int n = ibv_poll_cq(cq, 1, &wc);

		if (n < 0)
			return -EIO;
		if (n == 1) {
			*ret_wc = wc;
			return 0;
		}
		if (mono_ns() > deadline)
			return -ETIMEDOUT;
		nanosleep(&nap, NULL);
	}
}

static const char *wc_opcode_name(enum ibv_wc_opcode op)
{
	switch (op) {
	case IBV_WC_SEND:
		return "SEND";
	case IBV_WC_RDMA_WRITE:
		return "RDMA_WRITE";
	case IBV_WC_RECV:
		return "RECV";
	default:
		return "other";
	}
}

/* Names the first completion field that differs from what was posted. */
static bool wc_fields_ok(const char *what, const struct ibv_wc *wc,
			 const struct end *e, uint64_t wr_id,
			 enum ibv_wc_opcode opcode, uint32_t byte_len)
{
	if (wc->wr_id != wr_id)
		fail("%s: completion wr_id %" PRIu64 ", expected %" PRIu64,
		     what, wc->wr_id, wr_id);
	else if (wc->opcode != opcode)
		fail("%s: completion opcode %s (%d), expected %s", what,
		     wc_opcode_name(wc->opcode), wc->opcode,
		     wc_opcode_name(opcode));
	else if (wc->qp_num != e->qp->qp_num)
		fail("%s: completion qp_num %u, expected %u", what, wc->qp_num,
		     e->qp->qp_num);
	else if (opcode == IBV_WC_RECV && wc->byte_len != byte_len)
		fail("%s: completion byte_len %u, expected %u", what,
		     wc->byte_len, byte_len);
	else
		return true;
	return false;
}

/* Polls one completion and checks every field we can predict. */
static bool expect_wc(const char *what, struct end *e, uint64_t wr_id,
		      enum ibv_wc_opcode opcode, uint32_t byte_len)
{
	struct ibv_wc wc;
	int r = poll_one(e->cq, &wc);

	if (r) {
		fail("%s: no completion within %llu s (%s)", what,
		     POLL_TIMEOUT_NS / 1000000000ULL, strerror(-r));
		return false;
	}
	if (wc.status != IBV_WC_SUCCESS) {
		fail("%s: completion status %s (%d), vendor_err 0x%x", what,
		     ibv_wc_status_str(wc.status), wc.status, wc.vendor_err);
		return false;
	}
	if (!wc_fields_ok(what, &wc, e, wr_id, opcode, byte_len))
		return false;
	printf("  ok  %s: %s completion SUCCESS, wr_id and qp_num match%s\n",
	       what, wc_opcode_name(opcode),
	       opcode == IBV_WC_RECV ? ", byte_len matches" : "");
	return true;
}

/* from SENDs MSG_LEN bytes of pattern seed; to receives them at offset 0. */
static void check_send(struct end *from, struct end *to, unsigned int seed)
{
	struct ibv_sge rsge = { (uintptr_t)to->buf, BUF_LEN, to->mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 100 + seed,
				   .sg_list = &rsge,
				   .num_sge = 1 };
	struct ibv_sge ssge = { (uintptr_t)from->buf, MSG_LEN, from->mr->lkey };
	struct ibv_send_wr swr = {
		.wr_id = 200 + seed,
		.sg_list = &ssge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_recv_wr *bad_r;
	struct ibv_send_wr *bad_s;
	char what[96];

	memset(to->buf, GUARD_BYTE, BUF_LEN);
	fill(from->buf, MSG_LEN, seed);
	snprintf(what, sizeof(what), "SEND %d bytes %s -> %s", MSG_LEN,
		 from->dev->name, to->dev->name);
	if (ibv_post_recv(to->qp, &rwr, &bad_r)) {
		fail("%s: ibv_post_recv: %s", what, strerror(errno));
		return;
	}
	if (ibv_post_send(from->qp, &swr, &bad_s)) {
		fail("%s: ibv_post_send: %s", what, strerror(errno));
		return;
	}
	if (expect_wc(what, from, swr.wr_id, IBV_WC_SEND, MSG_LEN) &&
	    expect_wc(what, to, rwr.wr_id, IBV_WC_RECV, MSG_LEN))
		check_bytes(what, to->buf, 0, MSG_LEN, seed);
}

/* from RDMA WRITEs MSG_LEN - WRITE_OFF bytes into to's buffer at WRITE_OFF. */
static void check_write(struct end *from, struct end *to, unsigned int seed)
{
	struct ibv_sge sge = { (uintptr_t)from->buf, MSG_LEN - WRITE_OFF,
			       from->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 300 + seed,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { (uintptr_t)to->buf + WRITE_OFF, to->mr->rkey },
	};
	struct ibv_send_wr *bad;
	char what[96];

	memset(to->buf, GUARD_BYTE, BUF_LEN);
	fill(from->buf, MSG_LEN - WRITE_OFF, seed);
	snprintf(
		what, sizeof(what), "RDMA WRITE %d bytes %s -> %s at offset %d",
		MSG_LEN - WRITE_OFF, from->dev->name, to->dev->name, WRITE_OFF);
	if (ibv_post_send(from->qp, &wr, &bad)) {
		fail("%s: ibv_post_send: %s", what, strerror(errno));
		return;
	}
	/* an RC WRITE completes once the peer acknowledged it: data is there */
	if (expect_wc(what, from, wr.wr_id, IBV_WC_RDMA_WRITE, 0))
		check_bytes(what, to->buf, WRITE_OFF, MSG_LEN - WRITE_OFF,
			    seed);
}

static bool setup_pair(struct end *a, struct end *b, enum gid_kind kind)
{
	char sa[INET6_ADDRSTRLEN], sb[INET6_ADDRSTRLEN];
	struct end *ends[2] = { a, b };
	int r;

	for (int i = 0; i < 2; i++) {
		struct end *e = ends[i];

		r = find_gid(e->dev, kind, &e->gid_index, &e->gid);
		if (r) {
			fail("%s has no %s GID in its table", e->dev->name,
			     gid_kind_name[kind]);
			return false;
		}
	}
	printf("%s gid[%d] %s -> %s gid[%d] %s (%s), QPs %u -> %u\n",
	       a->dev->name, a->gid_index, gid_str(&a->gid, sa, sizeof(sa)),
	       b->dev->name, b->gid_index, gid_str(&b->gid, sb, sizeof(sb)),
	       gid_kind_name[kind], a->qp->qp_num, b->qp->qp_num);
	if ((r = end_connect(a, b)) || (r = end_connect(b, a))) {
		fail("connecting the RC QPs (INIT/RTR/RTS): %s", strerror(-r));
		return false;
	}
	printf("  ok  both RC QPs in RTS\n");
	return true;
}

/* Every check over one pair of connected ends; seed varies the data. */
static void run_pair(struct dev *da, struct dev *db, enum gid_kind kind,
		     unsigned int seed)
{
	struct end a = { 0 }, b = { 0 };
	int r;

	if ((r = end_create(&a, da)) || (r = end_create(&b, db))) {
		fail("creating CQs, QPs and MRs on %s/%s: %s", da->name,
		     db->name, strerror(-r));
		goto out;
	}
	if (!setup_pair(&a, &b, kind))
		goto out;
	check_send(&a, &b, seed);
	check_send(&b, &a, seed + 1);
	check_write(&a, &b, seed + 2);
out:
	end_destroy(&b);
	end_destroy(&a);
}

/* A netdev's packet counter from sysfs; -1 if unreadable. */
static long long net_counter(const char *netdev, const char *counter)
{
	char path[256];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/net/%s/statistics/%s", netdev,
		 counter);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/*
 * Runs the cross-device pairs and, when the VM named the netdevs, checks
 * that the packets really crossed the veth pair (not a shortcut through lo).
 */
static void run_cross(struct dev *da, struct dev *db)
{
	const char *nd0 = getenv("RDMAGATE_VM_NETDEV0");
	const char *nd1 = getenv("RDMAGATE_VM_NETDEV1");
	long long tx0 = -1, rx1 = -1, dtx, drx;

	if (nd0 && nd1) {
		tx0 = net_counter(nd0, "tx_packets");
		rx1 = net_counter(nd1, "rx_packets");
	}
	printf("== %s -> %s across the wire, IPv4 GIDs ==\n", da->name,
	       db->name);
	run_pair(da, db, GID_IPV4, 11);
	printf("== %s -> %s across the wire, IPv6 GIDs ==\n", da->name,
	       db->name);
	run_pair(da, db, GID_IPV6, 21);
	if (tx0 < 0 || rx1 < 0)
		return;
	dtx = net_counter(nd0, "tx_packets") - tx0;
	drx = net_counter(nd1, "rx_packets") - rx1;
	/* two messages of >11 KiB per pair: far more than 6 packets */
	if (dtx < 6 || drx < 6)
		fail("only %lld packets left %s and %lld reached %s: the "
		     "traffic did not cross the veth pair",
		     dtx, nd0, drx, nd1);
	else
		printf("  ok  the traffic crossed the wire: %s sent %lld "
		       "packets, %s received %lld\n",
		       nd0, dtx, nd1, drx);
}

static int device_count(void)
{
	struct ibv_device **list;
	int n = 0;

	list = ibv_get_device_list(&n);
	if (!list)
		return 0;
	ibv_free_device_list(list);
	return n;
}

int main(int argc, char **argv)
{
	const char *env0 = getenv("RDMAGATE_VM_DEV0");
	const char *env1 = getenv("RDMAGATE_VM_DEV1");
	const char *name_a = argc > 1 ? argv[1] : env0 ? env0 : "rxe0";
	const char *name_b = argc > 2 ? argv[2] : argc > 1 ? NULL : env1;
	struct dev da = { 0 }, db = { 0 };
	int r;

	if (argc > 3) {
		fprintf(stderr, "usage: %s [DEV_A [DEV_B]]\n", argv[0]);
		return 2;
	}
	if (device_count() == 0) {
		printf("verbs-rc-check: SKIP: no RDMA device (libibverbs lists "
		       "none)\n");
		return 77;
	}
	r = dev_open(&da, name_a);
	if (r) {
		fail("cannot open %s (or its port %d is not ACTIVE): %s",
		     name_a, PORT, strerror(-r));
		return 1;
	}
	printf("verbs-rc-check: %s opened, PD allocated, port %d %s, MTU %d\n",
	       name_a, PORT, ibv_port_state_str(da.port.state),
	       128 << da.port.active_mtu);

	printf("== loopback on %s: two CQs, two RC QPs on one PD ==\n", name_a);
	run_pair(&da, &da, GID_IPV4, 1);
	if (name_b) {
		r = dev_open(&db, name_b);
		if (r) {
			fail("cannot open %s (or its port %d is not ACTIVE): "
			     "%s",
			     name_b, PORT, strerror(-r));
		} else {
			run_cross(&da, &db);
			dev_close(&db);
		}
	}
	dev_close(&da);
	if (failures) {
		printf("verbs-rc-check: %d check(s) FAILED\n", failures);
		return 1;
	}
	printf("verbs-rc-check: all checks passed\n");
	return 0;
}
