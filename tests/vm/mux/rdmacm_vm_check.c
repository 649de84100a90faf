// SPDX-License-Identifier: MIT
/*
 * vm test of rdmagate-mux's rdmacm-mux endpoint (docs/mux.md), run inside
 * rdmagate-vm --no-cm -n 2 by mux-vm.sh (fd99::10 on veth0/rxe0, fd99::11
 * on veth1/rxe1).  It starts the mux, plays the broker (PORT_ADD, a worker
 * "vm-b" owning fd99::11, RDMACM_ATTACH of "pv1" owning fd99::10), then:
 *
 *  1. plays QEMU itself on pv1's socket, record by record: REG of its own
 *     GID accepted, REG of another VM's GID refused (EACCES, counted as a
 *     spoof), a CM handshake with the worker through the router in both
 *     directions (the RTU's destination found from the REP's sender), a
 *     send from another VM's GID refused, a second connection refused;
 *  2. runs bookworm's QEMU 7.2 with its in-process pvrdma device against
 *     the endpoint: without a mux it does not start; with it, it starts,
 *     and pvrdma-bind (a bare-metal program in place of a guest OS) binds
 *     the VM's GID, which QEMU REGs and the mux accepts, then binds the
 *     other VM's GID, which the mux refuses, then unbinds both.
 *
 *   rdmacm-vm-check MUX PVRDMA_BIND_ELF
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/probes.h"
#include "common/rdmacm_mux_proto.h"
#include "mux_check_lib.h"

#define DIR	"/run/rdmagate-test"
#define PV_SOCK DIR "/pv1.sock"
#define MUX_LOG DIR "/mux.log"
#define PV_ID	7
#define B_ID	2

static const char *bind_elf;

/* A listening socket of type at path (the broker's part). */
/* The mux, its stderr in MUX_LOG; returns a control connection to it. */
static int mux_up(pid_t *ret_pid)
{
	int log = open(MUX_LOG, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (log < 0)
		die("%s: %s", MUX_LOG, strerror(errno));
	*ret_pid = start_mux(NULL, log);
	close(log);
	return connect_mux(*ret_pid);
}

static int listener(const char *path, int type)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);

	if (fd < 0)
		die("socket: %s", strerror(errno));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 4) < 0)
		die("%s: %s", path, strerror(errno));
	return fd;
}

static int rdmacm_attach(int c, uint32_t id, const char *vm, int fd,
			 struct mp_msg *rep)
{
	struct mp_msg m;

	mp_init(&m, MP_RDMACM_ATTACH);
	m.u.rdmacm_attach.worker_id = id;
	msg_set_str(m.u.rdmacm_attach.vm, MP_VM_SIZE, vm);
	m.u.rdmacm_attach.uid = getuid();
	return ctl(c, &m, fd, rep);
}

static int qemu_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	strcpy(sa.sun_path, PV_SOCK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("connecting to %s: %s", PV_SOCK, strerror(errno));
	return fd;
}

/* One whole record within ms: 1, 0 on timeout, -1 when the mux closed. */
static int rec_read(int fd, int ms, struct rcm_msg *m)
{
	uint8_t *p = (uint8_t *)m;
	size_t got = 0;

	while (got < sizeof(*m)) {
		struct pollfd pf = { fd, POLLIN, 0 };
		ssize_t n;

		if (poll(&pf, 1, ms) != 1)
			return 0;
		n = read(fd, p + got, sizeof(*m) - got);
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return 1;
}

/* Sends a request as QEMU does and returns the RESP's err_code. */
static int request(int q, uint32_t op, const uint8_t *gid, const uint8_t *mad,
		   uint32_t msg_type)
{
	struct rcm_msg m;

	memset(&m, 0, sizeof(m));
	m.msg_type = msg_type;
	m.op_code = op;
	memcpy(m.sgid, gid, 16);
	if (mad) {
		m.umad_len = 256;
		m.addr.qpn_be = htonl(1);
		m.addr.grh_present = 1;
		m.addr.hop_limit = 0xff;
		memcpy(m.addr.gid, gid, 16); /* QEMU puts the source here */
		memcpy(m.mad, mad, 256);
	}
	if (write(q, &m, sizeof(m)) != (ssize_t)sizeof(m))
		die("writing a record: %s", strerror(errno));
	if (rec_read(q, 10000, &m) != 1)
		die("no response to op %u within 10 s", op);
	if (m.msg_type != RCM_RESP)
		die("a record of type %u where the response was due",
		    m.msg_type);
	return (int)m.err_code;
}

static bool file_has(const char *path, const char *needle)
{
	char buf[65536];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return strstr(buf, needle) != NULL;
}

static bool wait_log(const char *needle, int ms)
{
	uint64_t end = mono_ms() + (uint64_t)ms;

	while (!file_has(MUX_LOG, needle)) {
		if (mono_ms() >= end)
			return false;
		usleep(50000);
	}
	return true;
}

struct gids {
	const char *dev0, *dev1;
	uint8_t ga[16], gb[16];
};

static void control_checks(int c)
{
	struct mp_msg m, rep;
	int fd, ret;

	fd = listener(DIR "/seq.sock", SOCK_SEQPACKET);
	ret = rdmacm_attach(c, 8, "pv2", fd, &rep);
	close(fd);
	EXPECT(ret == EINVAL && strstr(rep.u.status.text, "SOCK_STREAM"),
	       "RDMACM_ATTACH with a SEQPACKET socket: EINVAL (%s)",
	       rep.u.status.text);
	/* the table's fd column (common/msg_frame.c) */
	mp_init(&m, MP_RDMACM_ATTACH);
	m.u.rdmacm_attach.worker_id = 8;
	msg_set_str(m.u.rdmacm_attach.vm, MP_VM_SIZE, "pv2");
	m.u.rdmacm_attach.uid = getuid();
	ret = ctl_refused(c, &m, -1, &rep);
	EXPECT(ret == EBADMSG && strstr(rep.u.status.text, "0 fds"),
	       "RDMACM_ATTACH without an fd: ERROR_REPLY EBADMSG (%s)",
	       rep.u.status.text);
	fd = listener(DIR "/x.sock", SOCK_STREAM);
	ret = rdmacm_attach(c, B_ID, "vm-b", fd, &rep);
	EXPECT(ret == EEXIST, "RDMACM_ATTACH of a worker's id: EEXIST (%s)",
	       rep.u.status.text);
	ret = rdmacm_attach(c, PV_ID, "other", fd, &rep);
	EXPECT(ret == EEXIST,
	       "RDMACM_ATTACH of pv1's id for another VM: "
	       "EEXIST (%s)",
	       rep.u.status.text);
	close(fd);
	mp_init(&m, MP_WORKER_ATTACH);
	m.u.attach.worker_id = PV_ID;
	msg_set_str(m.u.attach.vm, MP_VM_SIZE, "pv1");
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	ret = ctl(c, &m, fd, &rep);
	close(fd);
	EXPECT(ret == EEXIST, "WORKER_ATTACH of pv1's id: EEXIST (%s)",
	       rep.u.status.text);
}

/* Part 1: this program is QEMU. */
static void raw_client(int c, const struct gids *g, int wb)
{
	static const uint8_t nobody[16] = { 0xfd, 0x99, [15] = 0x99 };
	struct mp_mad_recv r;
	struct mp_stats st;
	struct rcm_msg in;
	uint8_t mad[256];
	char s1[46], s2[46];
	int q, q2, ret;

	q = qemu_connect();
	ret = request(q, RCM_OP_REG, g->ga, NULL, RCM_REQ);
	EXPECT(ret == RCM_ERR_OK, "REG of its own GID fd99::10: OK (%d)", ret);
	ret = request(q, RCM_OP_REG, g->gb, NULL, RCM_REQ);
	EXPECT(ret == RCM_ERR_EACCES, "REG of vm-b's GID fd99::11: EACCES (%d)",
	       ret);
	st = stats(c, PV_ID);
	EXPECT(st.refused_spoofs == 1,
	       "STATS pv1: the REG counted as a "
	       "refused spoof (%llu)",
	       (unsigned long long)st.refused_spoofs);
	ret = request(q, RCM_OP_UNREG, nobody, NULL, RCM_REQ);
	EXPECT(ret == RCM_ERR_ENOTFOUND,
	       "UNREG of a GID not its own: "
	       "ENOTFOUND (%d)",
	       ret);
	ret = request(q, RCM_OP_REG, g->ga, NULL, RCM_RESP);
	EXPECT(ret == RCM_ERR_EINVAL,
	       "a response from the client: EINVAL, "
	       "and the connection stays (%d)",
	       ret);

	/* a handshake with the worker, both ways through the router */
	req_mad(mad, 0x11, 0x501, g->ga, g->gb);
	ret = request(q, RCM_OP_MAD, g->ga, mad, RCM_REQ);
	EXPECT(ret == RCM_ERR_OK, "MAD REQ fd99::10 -> fd99::11: OK (%d)", ret);
	if (mad_recv(wb, 10000, &r))
		EXPECT(!memcmp(r.sgid, g->ga, 16) &&
			       !memcmp(r.dgid, g->gb, 16) &&
			       same_mad(r.mad, mad),
		       "the worker got the REQ from %s to %s, bytes as sent",
		       gs(r.sgid, s1), gs(r.dgid, s2));
	else
		fail("the worker got no REQ within 10 s");
	cm_mad(mad, 0x0013, 0x12, 0x601, 0x501);
	mad_send(wb, g->gb, g->ga, mad);
	ret = rec_read(q, 10000, &in);
	EXPECT(ret == 1 && in.msg_type == RCM_REQ && in.op_code == RCM_OP_MAD &&
		       !memcmp(in.sgid, g->ga, 16) &&
		       !memcmp(in.addr.gid, g->gb, 16) && in.umad_len == 256 &&
		       same_mad(in.mad, mad) && in.addr.grh_present,
	       "QEMU got the worker's REP: a MAD record for %s from %s",
	       gs(in.sgid, s1), gs(in.addr.gid, s2));
	cm_mad(mad, 0x0014, 0x13, 0x501, 0x601);
	ret = request(q, RCM_OP_MAD, g->ga, mad, RCM_REQ);
	EXPECT(ret == RCM_ERR_OK && mad_recv(wb, 10000, &r) &&
		       !memcmp(r.dgid, g->gb, 16) && same_mad(r.mad, mad),
	       "the RTU (no GID in it) went to the REP's sender, fd99::11");

	/* another VM's GID as the source; a SIDR_REQ names no destination */
	req_mad(mad, 0x14, 0x502, g->gb, g->ga);
	ret = request(q, RCM_OP_MAD, g->gb, mad, RCM_REQ);
	EXPECT(ret == RCM_ERR_EACCES && !mad_recv(wb, 500, &r),
	       "a MAD from vm-b's GID: EACCES, nothing sent (%d)", ret);
	cm_mad(mad, 0x0017, 0x15, 0x503, 0);
	ret = request(q, RCM_OP_MAD, g->ga, mad, RCM_REQ);
	EXPECT(ret == RCM_ERR_EINVAL && !mad_recv(wb, 500, &r),
	       "a SIDR_REQ not from rdma_cm (no destination): EINVAL (%d)",
	       ret);
	/* rdma_cm's: its header names the destination IP, fd99::11 */
	mad[36] = 0x01; /* service id: RDMA_PS_UDP, port 0x1234 */
	mad[37] = 0x11;
	mad[38] = 0x12;
	mad[39] = 0x34;
	memset(mad + 40, 0, 36);
	mad[41] = 0x60; /* IPv6 */
	memcpy(mad + 44, g->ga, 16);
	memcpy(mad + 60, g->gb, 16);
	ret = request(q, RCM_OP_MAD, g->ga, mad, RCM_REQ);
	EXPECT(ret == RCM_ERR_OK && mad_recv(wb, 10000, &r) &&
		       !memcmp(r.dgid, g->gb, 16) && same_mad(r.mad, mad),
	       "an rdma_cm SIDR_REQ went to its header's destination, "
	       "fd99::11 (%d)",
	       ret);
	st = stats(c, PV_ID);
	EXPECT(st.routed_out == 3 && st.routed_in == 1 &&
		       st.refused_spoofs == 2 &&
		       st.dropped[RDMAGATE_MUX_DROP_ADDRESS] == 1,
	       "STATS pv1: routed out 3, in 1, spoofs 2, address 1 (%llu, "
	       "%llu, %llu, %llu)",
	       (unsigned long long)st.routed_out,
	       (unsigned long long)st.routed_in,
	       (unsigned long long)st.refused_spoofs,
	       (unsigned long long)st.dropped[RDMAGATE_MUX_DROP_ADDRESS]);

	q2 = qemu_connect();
	EXPECT(rec_read(q2, 5000, &in) == -1,
	       "a second connection while QEMU is connected: closed");
	close(q2);
	close(q);
	EXPECT(wait_log("QEMU pid", 5000) && wait_log("disconnected", 5000),
	       "the mux logged the connection and its end");
}

/* Runs QEMU 7.2 with pvrdma; returns its exit status, -1 on a timeout. */
static int run_qemu(const char *sock, const char *append, const char *err,
		    const char *dbg)
{
	char chardev[128], kernel[64], debugcon[128];
	const char *ib = getenv("RDMAGATE_VM_DEV0");
	char pvrdma[160];
	pid_t pid;
	int st, i;

	snprintf(chardev, sizeof(chardev), "socket,id=mad,path=%s", sock);
	snprintf(pvrdma, sizeof(pvrdma),
		 "pvrdma,addr=3.1,ibdev=%s,ibport=1,netdev=%s,"
		 "mad-chardev=mad",
		 ib, getenv("RDMAGATE_VM_NETDEV0"));
	snprintf(debugcon, sizeof(debugcon), "file:%s", dbg);
	snprintf(kernel, sizeof(kernel), "%s", bind_elf);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
			      0600);

		if (fd >= 0)
			dup2(fd, 2);
		execlp("qemu-system-x86_64", "qemu-system-x86_64", "-machine",
		       "pc,accel=tcg,memory-backend=mem", "-object",
		       "memory-backend-ram,id=mem,size=128M,share=on", "-m",
		       "128M", "-nodefaults", "-no-user-config", "-display",
		       "none", "-kernel", kernel, "-append", append,
		       "-debugcon", debugcon, "-device",
		       "isa-debug-exit,iobase=0xf4,iosize=4", "-chardev",
		       chardev, "-device", "vmxnet3,addr=3.0,multifunction=on",
		       "-device", pvrdma, (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 1200; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
		usleep(100000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

static void hex(const uint8_t *g, char *out)
{
	int i;

	for (i = 0; i < 16; i++)
		sprintf(out + 2 * i, "%02x", g[i]);
}

/* Part 2: the real QEMU 7.2 and its pvrdma device. */
static void real_qemu(int c, const struct gids *g)
{
	const char *err = DIR "/qemu.err", *dbg = DIR "/debugcon.txt";
	char ha[33], hb[33], append[160];
	struct mp_stats before, after;
	int st;

	if (access("/usr/bin/qemu-system-x86_64", X_OK) < 0) {
		fail("no /usr/bin/qemu-system-x86_64 in the test VM");
		return;
	}
	unlink(dbg);
	st = run_qemu(DIR "/nobody.sock", "u:0", err, dbg);
	EXPECT(st != -1 && !file_has(dbg, "pvrdma-bind") &&
		       file_has(err, "nobody.sock"),
	       "QEMU 7.2 with pvrdma and no mux on its mad-chardev: does not "
	       "start (status %d)",
	       st);

	hex(g->ga, ha);
	hex(g->gb, hb);
	snprintf(append, sizeof(append), "b:0:%s b:1:%s u:1 u:0", ha, hb);
	before = stats(c, PV_ID);
	unlink(dbg);
	st = run_qemu(PV_SOCK, append, err, dbg);
	/* isa-debug-exit: 1 is pvrdma-bind's "done" */
	EXPECT(st == 1 && file_has(dbg, "pvrdma-bind: done"),
	       "QEMU 7.2 started with pvrdma against the endpoint, ran "
	       "pvrdma-bind and exited (status %d)",
	       st);
	if (st != 1) {
		system("cat " DIR "/qemu.err " DIR "/debugcon.txt");
		return;
	}
	EXPECT(file_has(dbg, "CREATE_BIND index 00 err 0000"),
	       "the guest's CREATE_BIND of fd99::10 completed");
	EXPECT(wait_log("QEMU registered fd99::10", 5000),
	       "QEMU REGistered fd99::10 through the endpoint, the mux "
	       "accepted it");
	EXPECT(wait_log("QEMU's REG of fd99::11: not a GID the broker gave "
			"this VM",
			5000),
	       "QEMU's REG of vm-b's fd99::11: refused by the mux");
	EXPECT(file_has(err, "error code 3"),
	       "QEMU logged the mux's refusal (EACCES, its error code 3)");
	EXPECT(wait_log("QEMU unregistered fd99::10", 5000),
	       "DESTROY_BIND: QEMU UNREGistered fd99::10");
	after = stats(c, PV_ID);
	EXPECT(after.refused_spoofs == before.refused_spoofs + 1,
	       "STATS pv1: one more refused spoof (%llu -> %llu)",
	       (unsigned long long)before.refused_spoofs,
	       (unsigned long long)after.refused_spoofs);
}

/*
 * rdmacm-vm-check --serve MUX [GID...] -- COMMAND...: the broker's part for
 * one QEMU pvrdma VM (pv1 on rxe0, its socket PV_SOCK, the GIDs given, each
 * found in rxe0's table), then COMMAND (e.g. a nested guest under QEMU
 * 7.2), then pv1's counters and the mux's log.  Exits with COMMAND's
 * status.  For experiments by hand; the test is the default mode.
 */
static int serve(int argc, char **argv)
{
	const char *dev0 = getenv("RDMAGATE_VM_DEV0");
	struct mp_msg rep;
	struct mp_stats st;
	int c, lfd, i, status = 125;
	pid_t pid, cmd;

	if (!dev0)
		die("needs rdmagate-vm");
	mkdir(DIR, 0700);
	c = mux_up(&pid);
	if (port_add(c, dev0, &rep))
		die("PORT_ADD: %s", rep.u.status.text);
	lfd = listener(PV_SOCK, SOCK_STREAM);
	if (rdmacm_attach(c, PV_ID, "pv1", lfd, &rep))
		die("RDMACM_ATTACH: %s", rep.u.status.text);
	close(lfd);
	for (i = 0; i < argc && strcmp(argv[i], "--"); i++) {
		uint8_t g[16];

		if (inet_pton(AF_INET6, argv[i], g) != 1)
			die("%s: not a GID", argv[i]);
		if (gid_add(c, PV_ID, dev0, g, gid_index(dev0, g), &rep))
			die("GID_ADD %s: %s", argv[i], rep.u.status.text);
	}
	if (i + 1 >= argc)
		die("usage: --serve MUX [GID...] -- COMMAND...");
	cmd = fork();
	if (cmd == 0) {
		execvp(argv[i + 1], argv + i + 1);
		_exit(127);
	}
	if (cmd > 0 && waitpid(cmd, &status, 0) == cmd)
		status = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
	st = stats(c, PV_ID);
	printf("pv1: routed in %llu, out %llu, refused spoofs %llu\n",
	       (unsigned long long)st.routed_in,
	       (unsigned long long)st.routed_out,
	       (unsigned long long)st.refused_spoofs);
	fflush(stdout);
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	system("cat " MUX_LOG);
	return status;
}

int main(int argc, char **argv)
{
	struct gids g;
	struct mp_msg rep;
	uint32_t ia, ib;
	int c, lfd, wb, ret;
	pid_t pid;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if (argc >= 3 && !strcmp(argv[1], "--serve")) {
		mux_path = argv[2];
		return serve(argc - 3, argv + 3);
	}
	if (argc != 3) {
		fprintf(stderr, "usage: rdmacm-vm-check MUX PVRDMA_BIND_ELF\n");
		return 2;
	}
	mux_path = argv[1];
	bind_elf = argv[2];
	g.dev0 = getenv("RDMAGATE_VM_DEV0");
	g.dev1 = getenv("RDMAGATE_VM_DEV1");
	if (!g.dev0 || !g.dev1 || !getenv("RDMAGATE_VM_NOCM"))
		die("needs rdmagate-vm --no-cm -n 2");
	mkdir(DIR, 0700);
	inet_pton(AF_INET6, "fd99::10", g.ga);
	inet_pton(AF_INET6, "fd99::11", g.gb);
	ia = gid_index(g.dev0, g.ga);
	ib = gid_index(g.dev1, g.gb);

	c = mux_up(&pid);
	if (port_add(c, g.dev0, &rep) || port_add(c, g.dev1, &rep))
		die("PORT_ADD: %s", rep.u.status.text);
	wb = attach(c, B_ID, "vm-b");
	if (gid_add(c, B_ID, g.dev1, g.gb, ib, &rep))
		die("GID_ADD fd99::11: %s", rep.u.status.text);
	lfd = listener(PV_SOCK, SOCK_STREAM);
	ret = rdmacm_attach(c, PV_ID, "pv1", lfd, &rep);
	close(lfd);
	EXPECT(ret == 0,
	       "RDMACM_ATTACH pv1 (worker id %d) with its listening "
	       "socket: %s",
	       PV_ID, rep.u.status.text);
	ret = gid_add(c, PV_ID, g.dev0, g.ga, ia, &rep);
	EXPECT(ret == 0, "GID_ADD fd99::10 (%s index %u) to pv1: %s", g.dev0,
	       ia, rep.u.status.text);
	control_checks(c);
	raw_client(c, &g, wb);
	real_qemu(c, &g);

	kill(pid, SIGTERM);
	waitpid(pid, &ret, 0);
	EXPECT(WIFEXITED(ret) && WEXITSTATUS(ret) == 0, "SIGTERM: the mux "
							"exits 0");
	if (failures)
		system("cat " MUX_LOG);
	return failures ? 1 : 0;
}
