// SPDX-License-Identifier: MIT
/*
 * vm test of the worker's QP1 (GSI) emulation (worker/rdma/qp1.c): this
 * program plays the broker (the worker's --broker-fd channel: HELLO,
 * GID_ADD answered with the host GID index read from sysfs, STATS,
 * MUX_CHANNEL with one end of a socketpair), the mux (the other end of
 * that socketpair: it reads MAD_SEND and writes MAD_RECV) and the guest
 * (the guest simulator's verbs and its CM transport on QP1,
 * guest/cm_qp1.c).  Cases: guest sends become MAD_SEND with the address
 * vector's GIDs and the MAD's bytes; MAD_RECV lands in the guest's QP1
 * receive behind the GRH area (IPv6 and IPv4 forms) with the CQE right;
 * hostile datagrams are refused and counted while the worker keeps
 * serving; with no receive posted a MAD is dropped and counted; a gone
 * mux fails sends (counted) until a new channel replaces it; a full mux
 * queue fails sends without blocking.  TAP; argv[1] is the worker binary.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/msg_frame.h"
#include "common/mux_proto.h"
#include "common/worker_proto.h"
#include "guest/cm.h"
#include "guest/cm_qp1.h"
#include "guest/verbs.h"
#include "tests/check.h"
#include "tests/vm/lib/vm_test.h"

static const char *worker_path;
static char **extra_args;
static const char *dev0;

static struct vt_proc w;
static char bsock[96]; /* the broker's listening socket */

/* the guest's GIDs: 0 an IPv6 one, 1 an IPv4-mapped one (both RoCE v2) */
static uint8_t gid6[16], gid4[16];

/* ---- the worker ---- */

static int worker_start(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char fdstr[16];
	const char *head[] = { worker_path, "--socket", w.sock, "--device",
			       dev0,	    "--vm",	"qp1",	"--broker-fd",
			       fdstr,	    "-v",	NULL };
	int lfd, r = vt_proc_dir(&w, "rdmagate-qp1");

	if (r)
		return r;
	snprintf(bsock, sizeof(bsock), "%s/b.sock", w.dir);
	/* the broker's listening socket, inherited by the worker */
	lfd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	if (lfd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", bsock);
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(lfd, 4) < 0) {
		close(lfd);
		return -errno;
	}
	snprintf(fdstr, sizeof(fdstr), "%d", lfd);
	r = vt_proc_start(&w, head, extra_args);
	close(lfd);
	return r;
}

/* ---- the broker: a thread on the worker channel ---- */

static struct {
	int fd;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool hello, stop, want_stats, have_stats;
	uint32_t seq;
	struct wp_counters stats;
	unsigned int gid_adds, gid_dels;
	int host_index; /* > 0: GID_ADD is granted at this host index */
} br = { .fd = -1,
	 .mu = PTHREAD_MUTEX_INITIALIZER,
	 .cv = PTHREAD_COND_INITIALIZER };

static void broker_answer_gid(const struct wp_msg *m)
{
	struct wp_msg r;
	int idx = 0;

	wp_init(&r, m->h.type + 1);
	r.u.gid_reply.seq = m->u.gid.seq;
	if (m->h.type == WP_GID_ADD && br.host_index > 0) {
		r.u.gid_reply.host_index = (uint32_t)br.host_index;
		br.gid_adds++;
	} else if (m->h.type == WP_GID_ADD) {
		idx = vt_gid_index(dev0, m->u.gid.gid);
		if (idx < 0 || m->u.gid.gid_type != WP_GID_ROCE_V2) {
			r.u.gid_reply.status = ENOENT;
			snprintf(r.u.gid_reply.text, sizeof(r.u.gid_reply.text),
				 "not in %s's table", dev0);
		} else {
			r.u.gid_reply.host_index = (uint32_t)idx;
		}
		br.gid_adds++;
	} else {
		br.gid_dels++;
	}
	if (wp_send(br.fd, &r) < 0)
		printf("# broker: cannot answer %s\n", wp_type_name(m->h.type));
}

static void *broker_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct pollfd p = { br.fd, POLLIN, 0 };
		uint8_t buf[WP_MSG_MAX + 1];
		struct reason why = { "" };
		struct wp_msg m;
		ssize_t n;

		pthread_mutex_lock(&br.mu);
		if (br.stop) {
			pthread_mutex_unlock(&br.mu);
			return NULL;
		}
		if (br.want_stats) {
			wp_init(&m, WP_STATS);
			m.u.stats.seq = ++br.seq;
			br.want_stats = false;
			if (wp_send(br.fd, &m) < 0)
				printf("# broker: cannot send STATS\n");
		}
		pthread_mutex_unlock(&br.mu);
		if (poll(&p, 1, 20) <= 0)
			continue;
		n = msg_recv(br.fd, buf, sizeof(buf), NULL, MSG_DONTWAIT);
		if (n <= 0) {
			if (n == -EAGAIN || n == -EINTR)
				continue;
			return NULL; /* the worker went away */
		}
		if (wp_decode(buf, (size_t)n, &m, &why) < 0) {
			printf("# broker: bad message from the worker: %s\n",
			       why.msg);
			continue;
		}
		pthread_mutex_lock(&br.mu);
		switch (m.h.type) {
		case WP_HELLO:
			br.hello = true;
			break;
		case WP_GID_ADD:
		case WP_GID_DEL:
			broker_answer_gid(&m);
			break;
		case WP_STATS_REPLY:
			if (m.u.stats_reply.seq == br.seq) {
				br.stats = m.u.stats_reply.c;
				br.have_stats = true;
			}
			break;
		default:
			break;
		}
		pthread_cond_broadcast(&br.cv);
		pthread_mutex_unlock(&br.mu);
	}
}

static int broker_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	br.fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (br.fd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", bsock);
	if (connect(br.fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	return -pthread_create(&br.th, NULL, broker_main, NULL);
}

/* The worker's counters (STATS): 0, or -ETIMEDOUT. */
static int stats(struct wp_counters *c)
{
	struct timespec end;
	int r = 0;

	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_sec += 3;
	pthread_mutex_lock(&br.mu);
	br.have_stats = false;
	br.want_stats = true;
	while (!br.have_stats && r == 0)
		r = pthread_cond_timedwait(&br.cv, &br.mu, &end);
	if (br.have_stats)
		*c = br.stats;
	r = br.have_stats ? 0 : -ETIMEDOUT;
	pthread_mutex_unlock(&br.mu);
	return r;
}

/* Asks STATS until mad_errors reaches want (2 s): the last value. */
static uint64_t wait_mad_errors(uint64_t want)
{
	struct wp_counters c = { 0 };

	for (int i = 0; i < 100; i++) {
		if (stats(&c) == 0 && c.mad_errors >= want)
			break;
		vt_sleep_ms(20);
	}
	return c.mad_errors;
}

/* MUX_CHANNEL with fd (or none: -1). */
static int send_mux_channel(int fd)
{
	struct wp_msg m;

	wp_init(&m, WP_MUX_CHANNEL);
	m.u.mux_channel.seq = 77;
	m.u.mux_channel.mux_worker_id = 9;
	return fd >= 0 ? wp_send_fd(br.fd, &m, fd) : wp_send(br.fd, &m);
}

/* ---- the mux: our end of the channel ---- */

static int mux_fd = -1;

/* A new socketpair; the worker's end goes with MUX_CHANNEL. */
static int mux_attach(int sndbuf)
{
	int sv[2], r;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	if (sndbuf)
		setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &sndbuf,
			   sizeof(sndbuf));
	r = send_mux_channel(sv[1]);
	close(sv[1]);
	if (r < 0) {
		close(sv[0]);
		return r;
	}
	if (mux_fd >= 0)
		close(mux_fd);
	mux_fd = sv[0];
	return 0;
}

/* Reads one MAD_SEND (waits up to ms): 0, -ETIMEDOUT, -EBADMSG. */
static int mux_read(struct mp_mad_send *ret, int ms)
{
	struct pollfd p = { mux_fd, POLLIN, 0 };
	uint8_t buf[MP_MSG_MAX + 1];
	struct reason why = { "" };
	struct mp_msg m;
	ssize_t n;

	if (poll(&p, 1, ms) <= 0)
		return -ETIMEDOUT;
	n = recv(mux_fd, buf, sizeof(buf), 0);
	if (n <= 0)
		return -EPIPE;
	if (mp_decode(buf, (size_t)n, MP_FROM_WORKER, &m, &why) < 0 ||
	    m.h.type != MP_MAD_SEND) {
		printf("# mux: not a MAD_SEND: %s\n", why.msg);
		return -EBADMSG;
	}
	*ret = m.u.mad_send;
	return 0;
}

static int mux_write_raw(const void *buf, size_t len)
{
	return send(mux_fd, buf, len, MSG_NOSIGNAL) == (ssize_t)len ? 0
								    : -errno;
}

static int mux_write(const struct mp_mad_recv *r)
{
	struct mp_msg m;

	mp_init(&m, MP_MAD_RECV);
	m.u.mad_recv = *r;
	return mp_send(mux_fd, &m, 0, -1);
}

/* ---- the guest ---- */

static struct gv_context *ctx;
static struct gv_pd *pd;
static struct cm_qp1 t;

static void pattern(uint8_t *b, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

/* A CM MAD header (base version 1, class 0x07 v2, Send) and filler. */
static void make_mad(uint8_t mad[CM_MAD_LEN], uint32_t seed)
{
	pattern(mad, CM_MAD_LEN, seed);
	mad[0] = 1;
	mad[1] = 0x07;
	mad[2] = 2;
	mad[3] = 0x03;
}

/* A MAD_RECV from sgid to the guest's dgid. */
static void make_recv(struct mp_mad_recv *r, const uint8_t sgid[16],
		      const uint8_t dgid[16], uint32_t seed)
{
	memset(r, 0, sizeof(*r));
	memcpy(r->sgid, sgid, 16);
	memcpy(r->dgid, dgid, 16);
	r->flow_label = vt_gid_is_v4(dgid) ? 0 : 0xabcde;
	r->traffic_class = 0x44;
	r->hop_limit = 33;
	r->pkey_index = 0;
	r->src_qpn = 1;
	r->mad_len = CM_MAD_LEN;
	make_mad(r->mad, seed);
}

/* Waits for one receive completion on QP1 (3 s): 1, 0 none. */
static int reap_recv(struct gv_wc *wc, int ms)
{
	uint64_t end = mono_ms() + (uint64_t)ms;

	do {
		int n = gv_poll_cq(t.recv_cq, 1, wc);

		if (n)
			return n;
		vt_sleep_ms(2);
	} while (mono_ms() < end);
	return 0;
}

static uint8_t *recv_slot(uint64_t i)
{
	return t.buf + i * CM_QP1_SLOT;
}

static int repost(uint64_t i)
{
	struct gv_sge sge = { (uintptr_t)recv_slot(i), CM_QP1_SLOT,
			      t.mr->lkey };
	struct gv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 };

	memset(recv_slot(i), 0xee, CM_QP1_SLOT);
	return gv_post_recv(t.qp, &wr, NULL);
}

/* Checks one delivered MAD_RECV r: the CQE and the slot's bytes. */
static int check_delivered(const struct mp_mad_recv *r, bool reap_repost)
{
	struct reason why = { "" };
	uint8_t sgid[16], dgid[16], hop, tc;
	uint32_t fl;
	struct gv_wc wc;
	uint8_t *s;

	CHECK_EQ(reap_recv(&wc, 3000), 1);
	CHECK_EQ(wc.status, VIRTIO_RDMA_WC_SUCCESS);
	CHECK_EQ(wc.opcode, VIRTIO_RDMA_WC_RECV);
	CHECK_EQ(wc.byte_len, CM_GRH_LEN + r->mad_len);
	CHECK_EQ(wc.src_qp, r->src_qpn);
	CHECK_EQ(wc.qp_num, 1);
	CHECK(wc.wc_flags & VIRTIO_RDMA_WC_GRH);
	CHECK_EQ(wc.pkey_index, r->pkey_index);
	CHECK(wc.wr_id < CM_QP1_RECV_DEPTH);
	s = recv_slot(wc.wr_id);
	/* the guest's own GRH reader, both forms */
	CHECK_EQ(cm_grh_parse(s, sgid, dgid, &hop, &tc, &fl, &why), 0);
	CHECK(!memcmp(sgid, r->sgid, 16));
	CHECK(!memcmp(dgid, r->dgid, 16));
	CHECK_EQ(hop, r->hop_limit);
	CHECK_EQ(tc, r->traffic_class);
	CHECK_EQ(fl, r->flow_label);
	if (vt_gid_is_v4(r->dgid)) {
		uint32_t sum = 0;

		for (int i = 0; i < 20; i++)
			CHECK_EQ(s[i], 0);
		CHECK_EQ(s[20], 0x45);
		CHECK_EQ(s[29], 17); /* UDP */
		CHECK_EQ((s[22] << 8 | s[23]),
			 20 + 8 + 12 + 8 + r->mad_len + 4);
		for (int i = 20; i < 40; i += 2)
			sum += (uint32_t)(s[i] << 8 | s[i + 1]);
		while (sum >> 16)
			sum = (sum & 0xffff) + (sum >> 16);
		CHECK_EQ(sum, 0xffff); /* the header checksum holds */
	} else {
		CHECK_EQ(s[0] >> 4, 6);
		CHECK_EQ(s[6], 17); /* next header: UDP (RoCE v2) */
		CHECK_EQ((s[4] << 8 | s[5]), 8 + 12 + 8 + r->mad_len + 4);
	}
	CHECK(!memcmp(s + CM_GRH_LEN, r->mad, r->mad_len));
	if (reap_repost)
		CHECK_EQ(repost(wc.wr_id), 0);
	return 0;
}

static const uint8_t peer6[16] = { 0xfd, 0x00, 0x12, 0x34, 0, 0, 0, 0,
				   0,	 0,    0,    0,	   0, 0, 0, 0x42 };
static const uint8_t peer4[16] = { 0, 0, 0,    0,    0,	 0,   0, 0,
				   0, 0, 0xff, 0xff, 10, 200, 0, 42 };

/* ---- cases ---- */

static int t_channel(void)
{
	CHECK_EQ(broker_connect(), 0);
	for (int i = 0; i < 300 && !br.hello; i++)
		vt_sleep_ms(10);
	CHECK(br.hello);
	/* without its fd: refused, said */
	CHECK_EQ(send_mux_channel(-1), 0);
	CHECK(vt_proc_log_has(&w, "MUX_CHANNEL: 0 fds, it carries 1"));
	CHECK_EQ(mux_attach(0), 0);
	CHECK(vt_proc_log_has(&w, "new mux channel (mux worker id 9)"));
	CHECK(vt_proc_alive(&w));
	return 0;
}

static int t_guest_up(void)
{
	struct gv_opts o = { 0 };

	CHECK_EQ(gv_open(w.sock, &o, &ctx), 0);
	/* through the worker to our broker, which finds them in sysfs */
	CHECK_EQ(gv_add_gid(ctx, 0, gid6, WP_GID_ROCE_V2), 0);
	CHECK_EQ(gv_add_gid(ctx, 1, gid4, WP_GID_ROCE_V2), 0);
	CHECK_EQ(br.gid_adds, 2);
	CHECK_EQ(gv_alloc_pd(ctx, &pd), 0);
	CHECK_EQ(cm_qp1_open(&t, ctx, pd, 0), 0);
	return 0;
}

static int send_and_check(uint8_t sgid_index, const uint8_t *dgid,
			  const uint8_t *sgid, uint32_t seed)
{
	struct cm_peer to = { .qpn = 1,
			      .hop_limit = 64,
			      .traffic_class = 0x20,
			      .flow_label = vt_gid_is_v4(dgid) ? 0 : 0x12345 };
	uint8_t mad[CM_MAD_LEN];
	struct mp_mad_send ms;

	memcpy(to.gid, dgid, 16);
	if (t.sgid_index != sgid_index) {
		t.sgid_index = sgid_index;
		gv_destroy_ah(t.ah); /* its AV names the old GID index */
		t.ah = NULL;
	}
	make_mad(mad, seed);
	CHECK_EQ(cm_qp1_ops.send_mad(&t, &to, mad), 0);
	CHECK_EQ(mux_read(&ms, 3000), 0);
	CHECK(!memcmp(ms.sgid, sgid, 16));
	CHECK(!memcmp(ms.dgid, dgid, 16));
	CHECK_EQ(ms.flow_label, to.flow_label);
	CHECK_EQ(ms.traffic_class, to.traffic_class);
	CHECK_EQ(ms.hop_limit, to.hop_limit);
	CHECK_EQ(ms.pkey_index, 0);
	CHECK_EQ(ms.remote_qpn, 1);
	CHECK_EQ(ms.remote_qkey, 0x80010000u);
	CHECK_EQ(ms.mad_len, CM_MAD_LEN);
	CHECK(!memcmp(ms.mad, mad, CM_MAD_LEN));
	return 0;
}

static int t_send(void)
{
	struct wp_counters c0, c1;

	CHECK_EQ(stats(&c0), 0);
	CHECK_EQ(send_and_check(0, peer6, gid6, 1), 0);
	CHECK_EQ(send_and_check(1, peer4, gid4, 2), 0);
	CHECK_EQ(send_and_check(0, peer6, gid6, 3), 0);
	CHECK_EQ(stats(&c1), 0);
	CHECK_EQ(c1.mads_sent - c0.mads_sent, 3);
	CHECK_EQ(c1.mad_errors, c0.mad_errors);
	return 0;
}

static int t_recv6(void)
{
	struct wp_counters c0, c1;
	struct mp_mad_recv r;

	CHECK_EQ(stats(&c0), 0);
	make_recv(&r, peer6, gid6, 10);
	CHECK_EQ(mux_write(&r), 0);
	CHECK_EQ(check_delivered(&r, true), 0);
	/* a shorter MAD, another P_Key-less source QPN */
	make_recv(&r, peer6, gid6, 11);
	r.mad_len = 100;
	memset(r.mad + 100, 0, MP_MAD_SIZE - 100);
	r.src_qpn = 0x123456;
	CHECK_EQ(mux_write(&r), 0);
	CHECK_EQ(check_delivered(&r, true), 0);
	CHECK_EQ(stats(&c1), 0);
	CHECK_EQ(c1.mads_received - c0.mads_received, 2);
	return 0;
}

static int t_recv4(void)
{
	struct mp_mad_recv r;

	make_recv(&r, peer4, gid4, 20);
	CHECK_EQ(mux_write(&r), 0);
	return check_delivered(&r, true);
}

static int t_hostile(void)
{
	struct wp_counters c0, c1;
	struct mp_mad_recv r;
	struct mp_msg m;
	uint8_t raw[MP_MSG_MAX + 64];
	size_t len;
	int bad = 0, sv[2];

	CHECK_EQ(stats(&c0), 0);
	/* 1: shorter than a header */
	CHECK_EQ(mux_write_raw("\1\0\0\0\x21", 5), 0);
	bad++;
	/* 2: garbage of a MAD_RECV's length */
	len = mp_init(&m, MP_MAD_RECV);
	memset(raw, 0xa5, len);
	CHECK_EQ(mux_write_raw(raw, len), 0);
	bad++;
	/* 3: too long */
	memset(raw, 0, sizeof(raw));
	memcpy(raw, &m.h, sizeof(m.h));
	CHECK_EQ(mux_write_raw(raw, sizeof(raw)), 0);
	bad++;
	/* 4: a MAD_SEND (the worker's message) from the mux */
	mp_init(&m, MP_MAD_SEND);
	m.u.mad_send.mad_len = 24;
	CHECK_EQ(mp_send(mux_fd, &m, 0, -1), 0);
	bad++;
	/* 5..7: mad_len 300, 10; bytes after mad_len */
	make_recv(&r, peer6, gid6, 30);
	r.mad_len = 300;
	mp_init(&m, MP_MAD_RECV);
	m.u.mad_recv = r;
	CHECK_EQ(mp_send(mux_fd, &m, 0, -1), 0);
	bad++;
	m.u.mad_recv.mad_len = 10;
	CHECK_EQ(mp_send(mux_fd, &m, 0, -1), 0);
	bad++;
	m.u.mad_recv.mad_len = 100; /* mad[100..] is not zero */
	CHECK_EQ(mp_send(mux_fd, &m, 0, -1), 0);
	bad++;
	/* 8: to a GID that is not the guest's */
	make_recv(&r, peer6, peer6, 31);
	CHECK_EQ(mux_write(&r), 0);
	bad++;
	/* 9: a P_Key index outside the table */
	make_recv(&r, peer6, gid6, 32);
	r.pkey_index = 3;
	CHECK_EQ(mux_write(&r), 0);
	bad++;
	/* 10: an IPv4-mapped source to an IPv6 GID */
	make_recv(&r, peer4, gid6, 33);
	CHECK_EQ(mux_write(&r), 0);
	bad++;
	/* 11: a source QPN over 24 bits */
	make_recv(&r, peer6, gid6, 34);
	r.src_qpn = 0x1000000;
	CHECK_EQ(mux_write(&r), 0);
	bad++;
	/* 12: a good MAD with an fd along: the fd is discarded, the MAD
	 * delivered */
	CHECK_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	make_recv(&r, peer6, gid6, 35);
	mp_init(&m, MP_MAD_RECV);
	m.u.mad_recv = r;
	CHECK_EQ(mp_send(mux_fd, &m, 0, sv[0]), 0);
	close(sv[0]);
	close(sv[1]);
	CHECK_EQ(check_delivered(&r, true), 0);
	/* and the worker still serves: one more, both ways */
	make_recv(&r, peer6, gid6, 36);
	CHECK_EQ(mux_write(&r), 0);
	CHECK_EQ(check_delivered(&r, true), 0);
	CHECK_EQ(send_and_check(0, peer6, gid6, 37), 0);
	CHECK_EQ(wait_mad_errors(c0.mad_errors + (uint64_t)bad),
		 c0.mad_errors + (uint64_t)bad);
	CHECK_EQ(stats(&c1), 0);
	CHECK_EQ(c1.mads_received - c0.mads_received, 2);
	CHECK(vt_proc_log_has(&w, "dropped a MAD"));
	CHECK(vt_proc_alive(&w));
	return 0;
}

static int t_no_buffer(void)
{
	struct wp_counters c0, c1;
	struct mp_mad_recv r;
	uint64_t taken[CM_QP1_RECV_DEPTH];
	struct gv_wc wc;
	int i;
	/* asserts on a guest-caused line: start a fresh rate window */
	vt_peer_log_window();

	CHECK_EQ(stats(&c0), 0);
	/* use up every posted receive, one at a time (the CQ holds 32) */
	for (i = 0; i < CM_QP1_RECV_DEPTH; i++) {
		make_recv(&r, peer6, gid6, 100 + (uint32_t)i);
		CHECK_EQ(mux_write(&r), 0);
		CHECK_EQ(reap_recv(&wc, 3000), 1);
		CHECK_EQ(wc.status, VIRTIO_RDMA_WC_SUCCESS);
		taken[i] = wc.wr_id;
	}
	/* nothing posted: dropped, counted, nothing completes (a second
	 * after the last logged drop: this one is logged too) */
	vt_sleep_ms(1100);
	for (i = 0; i < 3; i++) {
		make_recv(&r, peer6, gid6, 200 + (uint32_t)i);
		CHECK_EQ(mux_write(&r), 0);
	}
	CHECK_EQ(wait_mad_errors(c0.mad_errors + 3), c0.mad_errors + 3);
	CHECK_EQ(reap_recv(&wc, 200), 0);
	/* the worker does not stall: sends go on */
	CHECK_EQ(send_and_check(0, peer6, gid6, 201), 0);
	/* buffers back: MADs land again */
	for (i = 0; i < CM_QP1_RECV_DEPTH; i++)
		CHECK_EQ(repost(taken[i]), 0);
	make_recv(&r, peer6, gid6, 202);
	CHECK_EQ(mux_write(&r), 0);
	CHECK_EQ(check_delivered(&r, true), 0);
	CHECK_EQ(stats(&c1), 0);
	CHECK_EQ(c1.mads_received - c0.mads_received, CM_QP1_RECV_DEPTH + 1);
	CHECK_EQ(c1.mad_errors - c0.mad_errors, 3);
	CHECK(vt_proc_log_has(&w, "no QP1 receive buffer posted"));
	return 0;
}

static int t_mux_gone(void)
{
	struct cm_peer to = { .qpn = 1, .hop_limit = 64 };
	uint8_t mad[CM_MAD_LEN];
	struct wp_counters c0, c1;

	memcpy(to.gid, peer6, 16);
	make_mad(mad, 300);
	CHECK_EQ(stats(&c0), 0);
	close(mux_fd);
	mux_fd = -1;
	CHECK(vt_proc_log_has(&w, "mux channel closed"));
	CHECK_EQ(cm_qp1_ops.send_mad(&t, &to, mad), -EIO);
	CHECK_EQ(stats(&c1), 0);
	CHECK_EQ(c1.mad_errors - c0.mad_errors, 1);
	CHECK_EQ(c1.mads_sent, c0.mads_sent);
	/* the broker hands a new channel: sends work again */
	CHECK_EQ(mux_attach(0), 0);
	/* STATS after MUX_CHANNEL on the same channel: the new one is in */
	CHECK_EQ(stats(&c1), 0);
	CHECK_EQ(send_and_check(0, peer6, gid6, 301), 0);
	return 0;
}

static int t_mux_full(void)
{
	struct cm_peer to = { .qpn = 1, .hop_limit = 64 };
	uint8_t mad[CM_MAD_LEN];
	struct wp_counters c0, c1;
	struct mp_mad_send ms;
	int i, sent = 0, failed = 0;
	/* asserts on a guest-caused line: start a fresh rate window */
	vt_peer_log_window();

	memcpy(to.gid, peer6, 16);
	/* a small send buffer on the worker's end; we do not read */
	CHECK_EQ(mux_attach(4096), 0);
	CHECK_EQ(stats(&c0), 0);
	for (i = 0; i < 200 && !failed; i++) {
		int r;

		make_mad(mad, 400 + (uint32_t)i);
		r = cm_qp1_ops.send_mad(&t, &to, mad);
		if (r == 0)
			sent++;
		else if (r == -EIO)
			failed++;
		else
			CHECK_EQ(r, 0);
	}
	printf("# %d MADs queued before the mux's queue was full\n", sent);
	CHECK(failed == 1 && sent > 0);
	CHECK(vt_proc_log_has(&w, "the mux's queue is full"));
	CHECK_EQ(stats(&c1), 0);
	CHECK_EQ(c1.mad_errors - c0.mad_errors, 1);
	CHECK_EQ(c1.mads_sent - c0.mads_sent, sent);
	/* the mux reads: everything queued arrives, in order */
	for (i = 0; i < sent; i++) {
		CHECK_EQ(mux_read(&ms, 2000), 0);
		make_mad(mad, 400 + (uint32_t)i);
		CHECK(!memcmp(ms.mad, mad, CM_MAD_LEN));
	}
	CHECK_EQ(send_and_check(0, peer6, gid6, 999), 0);
	return 0;
}

/*
 * A host GID table index the host's address vector cannot hold (it has 8
 * bits): the worker must refuse the GID and give it back, not cut the
 * index to 300 & 0xff = 44 and send from whatever GID sits there.
 */
static int t_gid_index_wide(void)
{
	unsigned int adds = br.gid_adds, dels = br.gid_dels;
	int r;
	/* asserts on a guest-caused line: start a fresh rate window */
	vt_peer_log_window();

	br.host_index = 300;
	r = gv_add_gid(ctx, 2, peer6, WP_GID_ROCE_V2);
	br.host_index = 0;
	CHECK_EQ(r, -ERANGE);
	CHECK_EQ(br.gid_adds, adds + 1);
	for (int i = 0; i < 100 && br.gid_dels == dels; i++)
		vt_sleep_ms(20);
	CHECK_EQ(br.gid_dels, dels + 1); /* given back to the broker */
	CHECK(vt_proc_log_has(&w, "does not fit an address vector"));
	/* index 2 stays empty: a MAD from it is refused */
	CHECK_EQ(gv_del_gid(ctx, 2), -ENOENT);
	CHECK(vt_proc_alive(&w));
	return 0;
}

static int t_close(void)
{
	cm_qp1_close(&t);
	gv_dealloc_pd(pd);
	gv_close(ctx);
	ctx = NULL;
	CHECK(vt_proc_log_has(&w, "device stats"));
	CHECK(vt_proc_alive(&w));
	return 0;
}

struct tcase {
	const char *name;
	int (*fn)(void);
};

static const struct tcase cases[] = {
	{ "the broker hands the mux channel (and one without its fd is "
	  "refused)",
	  t_channel },
	{ "guest QP1 up, GIDs through the broker", t_guest_up },
	{ "guest QP1 sends become MAD_SEND (IPv6 and IPv4 GIDs)", t_send },
	{ "MAD_RECV lands behind an IPv6 GRH, CQE fields right", t_recv6 },
	{ "MAD_RECV to an IPv4-mapped GID: the IPv4 header at 20", t_recv4 },
	{ "hostile MAD_RECVs refused and counted; the worker serves on",
	  t_hostile },
	{ "no receive posted: dropped, counted, no stall", t_no_buffer },
	{ "mux gone: sends fail and count; a new channel replaces it",
	  t_mux_gone },
	{ "mux queue full: sends fail without blocking", t_mux_full },
	{ "a host GID index above 255 is refused and given back",
	  t_gid_index_wide },
	{ "guest closes; the worker logs its stats", t_close },
};

int main(int argc, char **argv)
{
	unsigned int n = sizeof(cases) / sizeof(cases[0]), i, failed = 0;
	int i6, i4;

	if (vt_worker_argv(argc, argv, &worker_path, &extra_args))
		return 2;
	dev0 = getenv("RDMAGATE_VM_DEV0");
	if (!getenv("RDMAGATE_VM") || !dev0) {
		printf("1..0 # SKIP needs the test VM with an rxe device "
		       "(tests/vm/rdmagate-vm)\n");
		return 77;
	}
	signal(SIGPIPE, SIG_IGN);
	printf("1..%u\n", n);
	i6 = vt_gid_find(dev0, false, gid6);
	i4 = vt_gid_find(dev0, true, gid4);
	if (i6 < 0 || i4 < 0) {
		printf("Bail out! %s has no RoCE v2 %s GID\n", dev0,
		       i6 < 0 ? "IPv6" : "IPv4-mapped");
		return 1;
	}
	printf("# host GIDs: IPv6 at %d, IPv4-mapped at %d\n", i6, i4);
	if (worker_start()) {
		printf("Bail out! cannot start the worker\n");
		vt_proc_dump_log(&w);
		return 1;
	}
	for (i = 0; i < n; i++) {
		/* later cases need the earlier ones' state */
		int r = failed ? 1 : cases[i].fn();

		printf("%sok %u - %s\n", r ? "not " : "", i + 1, cases[i].name);
		if (r)
			failed++;
	}
	if (ctx)
		gv_close(ctx);
	vt_proc_kill(&w);
	pthread_mutex_lock(&br.mu);
	br.stop = true;
	pthread_mutex_unlock(&br.mu);
	if (br.fd >= 0) {
		pthread_join(br.th, NULL);
		close(br.fd);
	}
	unlink(bsock);
	vt_proc_stop(&w, failed);
	return failed ? 1 : 0;
}
