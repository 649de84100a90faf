// SPDX-License-Identifier: MIT
/*
 * vm test of rdmagate-mux (docs/mux.md), run inside rdmagate-vm by
 * mux-vm.sh.  It plays the broker (root, on the control socket) and two
 * workers (the other ends of the socketpairs it attaches), and starts
 * the mux itself, so that it can also kill and restart it.
 *
 *   mux-vm-check route MUX     (--no-cm -n 2; fd99::10 on veth0 and
 *                              fd99::11 on veth1 set up by mux-vm.sh)
 *     CM REQ A -> B with the GRH fields, REP B -> A by comm id, a spoof
 *     refused and counted, an unknown GID dropped and counted, a worker
 *     that never reads does not stop the other, then kill -9 of the mux,
 *     restart, replay of the broker's messages, and routes work again.
 *   mux-vm-check cm-taken MUX  (default VM: ib_cm loaded)
 *     --port and PORT_ADD both end the mux with exit status 3 and one
 *     line that says the kernel's ib_cm holds the class.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/mux_proto.h"
#include "common/probes.h"
#include "mux_check_lib.h"

/* ---- route --------------------------------------------------------------- */

struct setup {
	const char *dev0, *dev1;
	uint8_t ga[16], gb[16], host1[16];
	uint32_t ia, ib;
};

/* The broker's part: ports, workers, GIDs (first start and replay). */
static void broker_setup(int c, const struct setup *s, int *wa, int *wb)
{
	struct mp_msg rep;
	char g[46];

	if (port_add(c, s->dev0, &rep) || port_add(c, s->dev1, &rep))
		die("PORT_ADD: %s", rep.u.status.text);
	*wa = attach(c, 1, "vm-a");
	*wb = attach(c, 2, "vm-b");
	if (gid_add(c, 1, s->dev0, s->ga, s->ia, &rep))
		die("GID_ADD %s: %s", gs(s->ga, g), rep.u.status.text);
	if (gid_add(c, 2, s->dev1, s->gb, s->ib, &rep))
		die("GID_ADD %s: %s", gs(s->gb, g), rep.u.status.text);
}

/* REQ A -> B, REP B -> A; returns true when both arrived intact. */
static bool connect_ab(const struct setup *s, int wa, int wb, uint32_t id,
		       bool verbose)
{
	struct mp_mad_recv r;
	uint8_t mad[256];
	char g1[46], g2[46];
	bool good = true;

	req_mad(mad, id, id, s->ga, s->gb);
	mad_send(wa, s->ga, s->gb, mad);
	if (!mad_recv(wb, 10000, &r)) {
		fail("REQ A -> B (comm id 0x%x): B received nothing in 10 s",
		     id);
		return false;
	}
	if (verbose) {
		EXPECT(!memcmp(r.sgid, s->ga, 16) && !memcmp(r.dgid, s->gb, 16),
		       "REQ at B: GRH source %s (A), destination %s (B)",
		       gs(r.sgid, g1), gs(r.dgid, g2));
		EXPECT(r.src_qpn == 1 && r.pkey_index == 0,
		       "REQ at B: from QP %u, P_Key index %u", r.src_qpn,
		       r.pkey_index);
		/* rxe puts the traffic class in the IPv6 header and takes
		 * the hop limit from the route (64); it sends flow label 0 */
		EXPECT(r.hop_limit == 64 && r.traffic_class == send_tclass &&
			       r.flow_label <= 0xfffff,
		       "REQ at B: hop limit %u (the route's), traffic class "
		       "0x%x (A sent 0x%x), flow label 0x%x (A sent 0x%x)",
		       r.hop_limit, r.traffic_class, send_tclass, r.flow_label,
		       send_flow_label);
		EXPECT(r.mad_len == 256 && same_mad(r.mad, mad),
		       "REQ at B: 256 MAD bytes as A sent them (TID's upper "
		       "half excepted: the kernel sets it)");
	} else if (memcmp(r.sgid, s->ga, 16) || !same_mad(r.mad, mad)) {
		fail("REQ at B differs from what A sent");
		good = false;
	}
	cm_mad(mad, 0x0013, id + 1, id + 0x1000, id);
	mad_send(wb, s->gb, s->ga, mad);
	if (!mad_recv(wa, 10000, &r)) {
		fail("REP B -> A (remote comm id 0x%x): A received nothing "
		     "in 10 s",
		     id);
		return false;
	}
	if (verbose) {
		EXPECT(!memcmp(r.sgid, s->gb, 16) &&
			       !memcmp(r.dgid, s->ga, 16) && r.mad_len == 256 &&
			       same_mad(r.mad, mad) && get32(r.mad + 28) == id,
		       "REP at A (routed by comm id 0x%x): from %s to %s, "
		       "bytes intact",
		       id, gs(r.sgid, g1), gs(r.dgid, g2));
	} else if (!same_mad(r.mad, mad)) {
		fail("REP at A differs from what B sent");
		good = false;
	}
	return good;
}

/* Waits until cond(STATS) holds or 10 s pass. */
static struct mp_stats
wait_stats(int c, uint32_t id, bool (*cond)(const struct mp_stats *, uint64_t),
	   uint64_t arg)
{
	uint64_t end = mono_ms() + 15000;
	struct mp_stats st = stats(c, id);

	while (!cond(&st, arg) && mono_ms() < end) {
		usleep(100000);
		st = stats(c, id);
	}
	return st;
}

static bool unknown_gid_at_least(const struct mp_stats *st, uint64_t n)
{
	return st->dropped[RDMAGATE_MUX_DROP_UNKNOWN_GID] >= n;
}

static bool unknown_id_at_least(const struct mp_stats *st, uint64_t n)
{
	return st->dropped[RDMAGATE_MUX_DROP_UNKNOWN_ID] >= n;
}

static bool all_accounted(const struct mp_stats *st, uint64_t n)
{
	return st->routed_in + st->dropped[RDMAGATE_MUX_DROP_WORKER_FULL] >= n;
}

/* Hostile or wrong control messages: refused by name, the mux serves on. */
static void control_checks(int c, const struct setup *s, pid_t pid)
{
	uint8_t buf[MP_MSG_MAX + 1];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct mp_msg m, rep;
	struct reason why = { "" };
	int ret, fd, pfd[2], status;
	uint8_t other[16];
	ssize_t n;
	pid_t child;

	/* a datagram that is no message */
	memset(buf, 0xee, 40);
	if (send(c, buf, 40, 0) != 40)
		die("send: %s", strerror(errno));
	n = recv(c, buf, sizeof(buf), 0);
	ret = n > 0 ? mp_decode(buf, (size_t)n, MP_FROM_MUX, &rep, &why) : -1;
	EXPECT(ret == 0 && rep.h.type == MP_ERROR_REPLY &&
		       rep.u.status.status == EPROTONOSUPPORT,
	       "40 bytes of 0xee: ERROR_REPLY '%s'",
	       ret == 0 ? rep.u.status.text : "?");
	/* WORKER_ATTACH with a pipe instead of a socketpair, and without fd */
	if (pipe(pfd) < 0)
		die("pipe");
	mp_init(&m, MP_WORKER_ATTACH);
	m.u.attach.worker_id = 9;
	msg_set_str(m.u.attach.vm, MP_VM_SIZE, "vm-x");
	ret = ctl(c, &m, pfd[0], &rep);
	EXPECT(ret == EINVAL && strstr(rep.u.status.text, "SOCK_SEQPACKET"),
	       "WORKER_ATTACH with a pipe: refused ('%s')", rep.u.status.text);
	close(pfd[0]);
	close(pfd[1]);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, pfd) < 0)
		die("socketpair");
	ret = ctl(c, &m, pfd[0], &rep);
	EXPECT(ret == EINVAL && strstr(rep.u.status.text, "SOCK_SEQPACKET"),
	       "WORKER_ATTACH with a SOCK_STREAM pair: refused ('%s')",
	       rep.u.status.text);
	close(pfd[0]);
	close(pfd[1]);
	/* the table's fd column (common/msg_frame.c) */
	ret = ctl_refused(c, &m, -1, &rep);
	EXPECT(ret == EBADMSG && strstr(rep.u.status.text, "0 fds"),
	       "WORKER_ATTACH without an fd: ERROR_REPLY '%s'",
	       rep.u.status.text);
	/* an fd where none belongs */
	mp_init(&m, MP_HELLO);
	ret = ctl_refused(c, &m, 0, &rep);
	EXPECT(ret == EBADMSG && strstr(rep.u.status.text, "HELLO: 1 fds"),
	       "HELLO with an fd: ERROR_REPLY '%s'", rep.u.status.text);
	/* worker 1 attached again for another VM */
	ret = socketpair(AF_UNIX, SOCK_SEQPACKET, 0, pfd);
	mp_init(&m, MP_WORKER_ATTACH);
	m.u.attach.worker_id = 1;
	msg_set_str(m.u.attach.vm, MP_VM_SIZE, "vm-z");
	ret = ctl(c, &m, pfd[0], &rep);
	EXPECT(ret == EEXIST, "WORKER_ATTACH 1 for vm-z: EEXIST ('%s')",
	       rep.u.status.text);
	close(pfd[0]);
	close(pfd[1]);
	/* GIDs: the wrong index, another worker's, no such port */
	ret = gid_add(c, 1, s->dev0, s->ga, s->ia + 1, &rep);
	EXPECT(ret == EINVAL || ret == ENOENT,
	       "GID_ADD A at index %u: refused ('%s')", s->ia + 1,
	       rep.u.status.text);
	ret = gid_add(c, 1, s->dev1, s->gb, s->ib, &rep);
	EXPECT(ret == EEXIST,
	       "GID_ADD of B (worker 2's) to worker 1: EEXIST "
	       "('%s')",
	       rep.u.status.text);
	memcpy(other, s->ga, 16);
	ret = gid_add(c, 1, "mlx5_9", other, 1, &rep);
	EXPECT(ret == ENOENT && strstr(rep.u.status.text, "PORT_ADD first"),
	       "GID_ADD on a port never added: ENOENT ('%s')",
	       rep.u.status.text);
	mp_init(&m, MP_STATS);
	m.u.ref.worker_id = 42;
	ret = ctl(c, &m, -1, &rep);
	EXPECT(ret == ENOENT, "STATS of worker 42: ENOENT");
	/* a connection from a uid other than 0 is closed at once */
	strcpy(sa.sun_path, CONTROL);
	child = fork();
	if (child == 0) {
		struct pollfd p;

		if (setgid(65534) || setuid(65534))
			_exit(3);
		fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			_exit(0); /* refused outright: fine too */
		mp_init(&m, MP_HELLO);
		mp_send(fd, &m, 0, -1);
		p.fd = fd;
		p.events = POLLIN;
		if (poll(&p, 1, 10000) != 1)
			_exit(4);
		_exit(recv(fd, buf, sizeof(buf), 0) <= 0 ? 0 : 5);
	}
	waitpid(child, &status, 0);
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "a control connection from uid 65534: closed unanswered "
	       "(status 0x%x)",
	       status);
	/* WORKER_DETACH, twice */
	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, pfd) < 0)
		die("socketpair");
	mp_init(&m, MP_WORKER_ATTACH);
	m.u.attach.worker_id = 9;
	msg_set_str(m.u.attach.vm, MP_VM_SIZE, "vm-x");
	ret = ctl(c, &m, pfd[0], &rep);
	close(pfd[0]);
	EXPECT(ret == 0, "WORKER_ATTACH 9 (vm-x): '%s'", rep.u.status.text);
	mp_init(&m, MP_WORKER_DETACH);
	m.u.ref.worker_id = 9;
	ret = ctl(c, &m, -1, &rep);
	EXPECT(ret == 0, "WORKER_DETACH 9: '%s'", rep.u.status.text);
	n = recv(pfd[1], buf, sizeof(buf), MSG_DONTWAIT);
	EXPECT(n == 0, "... its channel is closed (the worker sees EOF)");
	close(pfd[1]);
	ret = ctl(c, &m, -1, &rep);
	EXPECT(ret == ENOENT, "WORKER_DETACH 9 again: ENOENT ('%s')",
	       rep.u.status.text);
	mp_init(&m, MP_GID_DEL);
	m.u.gid_del.worker_id = 1;
	memcpy(m.u.gid_del.gid, s->gb, 16);
	ret = ctl(c, &m, -1, &rep);
	EXPECT(ret == ENOENT, "GID_DEL of B from worker 1: ENOENT ('%s')",
	       rep.u.status.text);
	/* HELLO opens a connection, once */
	mp_init(&m, MP_HELLO);
	ret = ctl_refused(c, &m, -1, &rep);
	EXPECT(ret == EPROTO && strstr(rep.u.status.text, "a second HELLO"),
	       "a second HELLO: ERROR_REPLY '%s'", rep.u.status.text);
	/* and the broker's connection still works */
	mp_init(&m, MP_STATS);
	m.u.ref.worker_id = 0;
	ret = ctl(c, &m, -1, &rep);
	EXPECT(ret == 0, "STATS of the whole mux still answered: '%s'",
	       rep.u.status.text);
	(void)pid;
}

/* The mux runs as nobody with no capabilities. */
static void check_dropped(pid_t pid)
{
	char path[64], line[256];
	unsigned uid = 1, cap_ok = 0, nnp = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		die("%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		unsigned long long v;

		if (sscanf(line, "Uid: %*u %u", &uid) == 1)
			continue;
		if (sscanf(line, "CapEff: %llx", &v) == 1 && v == 0)
			cap_ok++;
		if (sscanf(line, "CapPrm: %llx", &v) == 1 && v == 0)
			cap_ok++;
		if (sscanf(line, "CapBnd: %llx", &v) == 1 && v == 0)
			cap_ok++;
		if (sscanf(line, "NoNewPrivs: %u", &nnp) == 1)
			continue;
	}
	fclose(f);
	EXPECT(uid == 65534 && cap_ok == 3 && nnp == 1,
	       "--user nobody: the mux runs as uid %u, no capabilities "
	       "(effective, permitted, bounding: %u of 3 empty), "
	       "no_new_privs %u",
	       uid, cap_ok, nnp);
}

static int route(void)
{
	struct setup s = { 0 };
	struct mp_mad_recv r;
	struct mp_stats st, st0;
	uint8_t mad[256];
	int c, wa, wb, status;
	uint64_t before, got = 0, t0;
	uint32_t i;
	pid_t pid;
	const uint32_t flood = 400;

	s.dev0 = getenv("RDMAGATE_VM_DEV0");
	s.dev1 = getenv("RDMAGATE_VM_DEV1");
	if (!s.dev0 || !s.dev1 || !getenv("RDMAGATE_VM_NOCM"))
		die("needs rdmagate-vm --no-cm -n 2");
	inet_pton(AF_INET6, "fd99::10", s.ga);
	inet_pton(AF_INET6, "fd99::11", s.gb);
	inet_pton(AF_INET6, getenv("RDMAGATE_VM_IP6_1") ?: "fd99::2", s.host1);
	s.ia = gid_index(s.dev0, s.ga);
	s.ib = gid_index(s.dev1, s.gb);
	ok("GIDs: A fd99::10 = %s index %u, B fd99::11 = %s index %u", s.dev0,
	   s.ia, s.dev1, s.ib);

	pid = start_mux(NULL, -1);
	c = connect_mux(pid);
	broker_setup(c, &s, &wa, &wb);
	ok("the broker's part: PORT_ADD %s/1 %s/1, WORKER_ATTACH 1 (vm-a) "
	   "and 2 (vm-b), GID_ADD A to 1 and B to 2",
	   s.dev0, s.dev1);

	/* 1, 2: REQ by the path's GIDs, REP by comm id */
	send_tclass = 0x20;
	send_flow_label = 0x12345;
	connect_ab(&s, wa, wb, 0x1001, true);
	send_tclass = 0;
	send_flow_label = 0;
	st = stats(c, 1);
	EXPECT(st.routed_out == 1 && st.routed_in == 1,
	       "STATS 1: routed out 1, in 1 (got %llu, %llu)",
	       (unsigned long long)st.routed_out,
	       (unsigned long long)st.routed_in);

	/* 3: A sends with B's GID */
	req_mad(mad, 0x77, 0x3003, s.gb, s.ga);
	mad_send(wa, s.gb, s.ga, mad);
	st = stats(c, 1); /* the reply comes after the mux read the MAD */
	for (i = 0; i < 50 && !st.refused_spoofs; i++) {
		usleep(100000);
		st = stats(c, 1);
	}
	EXPECT(st.refused_spoofs == 1 &&
		       st.dropped[RDMAGATE_MUX_DROP_SPOOF] == 1 &&
		       st.routed_out == 1,
	       "a MAD_SEND from A with B's GID: refused, counted on worker 1 "
	       "(refused spoofs %llu)",
	       (unsigned long long)st.refused_spoofs);
	EXPECT(!mad_recv(wa, 1000, &r) && !mad_recv(wb, 1, &r),
	       "the spoofed MAD reached nobody");

	/* 4: to a GID nobody owns (rxe1's own fd99::2) */
	st0 = stats(c, 0);
	before = st0.dropped[RDMAGATE_MUX_DROP_UNKNOWN_GID];
	req_mad(mad, 0x88, 0x4004, s.ga, s.host1);
	mad_send(wa, s.ga, s.host1, mad);
	st0 = wait_stats(c, 0, unknown_gid_at_least, before + 1);
	EXPECT(st0.dropped[RDMAGATE_MUX_DROP_UNKNOWN_GID] == before + 1,
	       "a REQ to %s (nobody's): sent, then dropped at %s and counted "
	       "(unknown-gid %llu)",
	       getenv("RDMAGATE_VM_IP6_1") ?: "fd99::2", s.dev1,
	       (unsigned long long)st0.dropped[RDMAGATE_MUX_DROP_UNKNOWN_GID]);
	EXPECT(!mad_recv(wb, 500, &r) && !mad_recv(wa, 1, &r),
	       "... and reached no worker");

	/* hostile control messages, before the flood */
	control_checks(c, &s, pid);

	/* GID_DEL: B is nobody's, a REQ to it is dropped; GID_ADD again */
	{
		struct mp_msg m, rep;

		mp_init(&m, MP_GID_DEL);
		m.u.gid_del.worker_id = 2;
		memcpy(m.u.gid_del.gid, s.gb, 16);
		EXPECT(ctl(c, &m, -1, &rep) == 0,
		       "GID_DEL B from worker 2: '%s'", rep.u.status.text);
		st0 = stats(c, 0);
		before = st0.dropped[RDMAGATE_MUX_DROP_UNKNOWN_GID];
		req_mad(mad, 0x98, 0x4005, s.ga, s.gb);
		mad_send(wa, s.ga, s.gb, mad);
		st0 = wait_stats(c, 0, unknown_gid_at_least, before + 1);
		EXPECT(st0.dropped[RDMAGATE_MUX_DROP_UNKNOWN_GID] ==
				       before + 1 &&
			       !mad_recv(wb, 500, &r),
		       "a REQ to B after GID_DEL: dropped (unknown-gid), B "
		       "gets nothing");
		EXPECT(gid_add(c, 2, s.dev1, s.gb, s.ib, &rep) == 0,
		       "GID_ADD B to worker 2 again: '%s'", rep.u.status.text);
	}

	/* 5: B stops reading; A floods it */
	t0 = mono_ms();
	for (i = 0; i < flood; i++) {
		req_mad(mad, 0x10000 + i, 0x10000 + i, s.ga, s.gb);
		mad_send(wa, s.ga, s.gb, mad);
	}
	/* routed_in counts the REQ of step 1 too */
	st = wait_stats(c, 2, all_accounted, flood + 1);
	EXPECT(st.routed_in + st.dropped[RDMAGATE_MUX_DROP_WORKER_FULL] ==
			       flood + 1 &&
		       st.dropped[RDMAGATE_MUX_DROP_WORKER_FULL] > 0,
	       "%u REQs to B, which does not read: %llu queued for it, %llu "
	       "dropped (worker-full) and counted on worker 2, in %llu ms",
	       flood, (unsigned long long)st.routed_in - 1,
	       (unsigned long long)st.dropped[RDMAGATE_MUX_DROP_WORKER_FULL],
	       (unsigned long long)(mono_ms() - t0));
	/* B, still not reading, sends; A receives */
	req_mad(mad, 0x99, 0x5005, s.gb, s.ga);
	mad_send(wb, s.gb, s.ga, mad);
	EXPECT(mad_recv(wa, 10000, &r) && get32(r.mad + 24) == 0x5005,
	       "while B's channel is full, A still receives (B's REQ 0x5005)");
	/* B drains its queue */
	while (mad_recv(wb, 500, &r))
		got++;
	EXPECT(got == st.routed_in - 1,
	       "B then reads the %llu MADs queued for it (%llu)",
	       (unsigned long long)st.routed_in - 1, (unsigned long long)got);

	/* 6: kill -9 in the middle of a connection attempt: A's REQ has
	 * reached B, B has not answered yet */
	req_mad(mad, 0x7007, 0x7007, s.ga, s.gb);
	mad_send(wa, s.ga, s.gb, mad);
	EXPECT(mad_recv(wb, 10000, &r) && get32(r.mad + 24) == 0x7007,
	       "REQ 0x7007 A -> B delivered; now the mux dies before B's REP");
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	close(c);
	close(wa);
	close(wb);
	ok("mux killed with SIGKILL (status 0x%x)", status);
	t0 = mono_ms();
	{
		char p0[80], p1[80];
		const char *extra[] = { "--port", p0,	    "--port", p1,
					"--user", "nobody", NULL };

		snprintf(p0, sizeof(p0), "%s:1", s.dev0);
		snprintf(p1, sizeof(p1), "%s:1", s.dev1);
		pid = start_mux(extra, -1);
	}
	c = connect_mux(pid);
	broker_setup(c, &s, &wa, &wb);
	ok("restarted (with --port for both ports and --user nobody); the "
	   "broker replayed PORT_ADD, WORKER_ATTACH (new socketpairs) and "
	   "GID_ADD in %llu ms",
	   (unsigned long long)(mono_ms() - t0));
	check_dropped(pid);
	/* B's REP for the attempt the old mux saw: the new one never
	 * learned 0x7007 (no state on disk), so it drops it ... */
	cm_mad(mad, 0x0013, 0x7008, 0x8007, 0x7007);
	mad_send(wb, s.gb, s.ga, mad);
	EXPECT(!mad_recv(wa, 2000, &r),
	       "B's REP for 0x7007 after the restart: not delivered");
	st = wait_stats(c, 1, unknown_id_at_least, 1);
	EXPECT(st.dropped[RDMAGATE_MUX_DROP_UNKNOWN_ID] == 1,
	       "... dropped as unknown-id, counted on worker 1");
	/* ... until A's CM retransmits its REQ, as it does on a timeout */
	req_mad(mad, 0x7009, 0x7007, s.ga, s.gb);
	mad_send(wa, s.ga, s.gb, mad);
	EXPECT(mad_recv(wb, 10000, &r) && get32(r.mad + 24) == 0x7007,
	       "A's retransmitted REQ 0x7007 reaches B");
	cm_mad(mad, 0x0013, 0x700a, 0x8007, 0x7007);
	mad_send(wb, s.gb, s.ga, mad);
	EXPECT(mad_recv(wa, 10000, &r) && get32(r.mad + 28) == 0x7007,
	       "B's retransmitted REP reaches A: the attempt completes");
	EXPECT(connect_ab(&s, wa, wb, 0x6006, false),
	       "a new connection: REQ A -> B and REP B -> A routed");
	st = stats(c, 1);
	EXPECT(st.routed_out == 2 && st.routed_in == 2 && !st.refused_spoofs,
	       "the new mux's counters started from zero (worker 1: routed "
	       "out %llu, in %llu)",
	       (unsigned long long)st.routed_out,
	       (unsigned long long)st.routed_in);

	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "SIGTERM: the mux exits 0 (status 0x%x)", status);
	return failures ? 1 : 0;
}

/* ---- cm-taken ------------------------------------------------------------ */

static void read_all(int fd, char *buf, size_t size)
{
	size_t n = 0;
	ssize_t r;

	while (n + 1 < size && (r = read(fd, buf + n, size - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = '\0';
}

static void expect_cm_taken(const char *what, pid_t pid, int rfd,
			    const char *dev, bool only_line)
{
	char out[4096], want[128];
	int status, lines = 0;
	char *p;

	waitpid(pid, &status, 0);
	read_all(rfd, out, sizeof(out));
	close(rfd);
	for (p = out; *p; p++)
		lines += *p == '\n';
	/* libibumad's own warnings are not ours; count the mux's lines */
	snprintf(want, sizeof(want), "the CM class on %s port 1 is taken", dev);
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 3,
	       "%s: exit status 3 (got 0x%x)", what, status);
	EXPECT(strstr(out, want) && strstr(out, "ib_cm module is loaded") &&
		       strstr(out, "modprobe -r rdma_ucm rdma_cm ib_cm"),
	       "%s: the line says so and what to do", what);
	if (only_line) {
		EXPECT(lines == 1 && !strncmp(out, "mux: error: ", 12),
		       "%s: exactly one line on stderr (%s)", what, out);
	} else {
		/* after the start's info lines: one error line, the last */
		p = strstr(out, "mux: error: ");
		EXPECT(p && !strstr(p + 12, "error") && strchr(p, '\n') &&
			       !strchr(p, '\n')[1],
		       "%s: one error line, the last (stderr: %s)", what, out);
	}
}

static int cm_taken(void)
{
	const char *dev = getenv("RDMAGATE_VM_DEV0");
	char port[80];
	const char *extra[] = { "--port", port, NULL };
	struct mp_msg rep;
	int pfd[2], c, ret;
	pid_t pid;

	if (!dev || access("/sys/module/ib_cm", F_OK) != 0)
		die("needs the default VM (ib_cm loaded)");
	snprintf(port, sizeof(port), "%s:1", dev);
	/* at start */
	if (pipe(pfd) < 0)
		die("pipe");
	pid = start_mux(extra, pfd[1]);
	close(pfd[1]);
	expect_cm_taken("--port at start", pid, pfd[0], dev, true);
	/* on the broker's PORT_ADD */
	if (pipe(pfd) < 0)
		die("pipe");
	pid = start_mux(NULL, pfd[1]);
	close(pfd[1]);
	c = connect_mux(pid);
	ret = port_add(c, dev, &rep);
	EXPECT(ret == EBUSY && strstr(rep.u.status.text, "ib_cm"),
	       "PORT_ADD: the broker gets EBUSY and why ('%s')",
	       rep.u.status.text);
	expect_cm_taken("PORT_ADD", pid, pfd[0], dev, false);
	close(c);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if (argc != 3) {
		fprintf(stderr, "usage: mux-vm-check route|cm-taken MUX\n");
		return 2;
	}
	mux_path = argv[2];
	mkdir("/run/rdmagate-test", 0700);
	if (!strcmp(argv[1], "route"))
		return route();
	if (!strcmp(argv[1], "cm-taken"))
		return cm_taken();
	fprintf(stderr, "mux-vm-check: unknown mode %s\n", argv[1]);
	return 2;
}
