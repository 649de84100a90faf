// SPDX-License-Identifier: MIT
/*
 * What the mux's vm test programs share (tests/vm/mux/): TAP-like
 * ok/FAIL lines, starting the mux, playing the broker on its control
 * socket, a worker's MAD channel, GIDs from sysfs, CM MADs.
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

#include "mux_check_lib.h"
#include "tests/vm/lib/vm_test.h"

int failures;
const char *mux_path;

void ok(const char *fmt, ...)
{
	va_list ap;

	printf("ok: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

void fail(const char *fmt, ...)
{
	va_list ap;

	printf("FAIL: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	failures++;
}

void die(const char *fmt, ...)
{
	va_list ap;

	printf("FAIL (fatal): ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(1);
}

/* ---- the mux process ----------------------------------------------------- */

/* Starts the mux with extra args; its stderr goes to err_fd (or ours). */
pid_t start_mux(const char *const *extra, int err_fd)
{
	const char *argv[16] = { mux_path, "--control", CONTROL };
	size_t n = 3;
	pid_t pid;

	while (extra && *extra && n < 15)
		argv[n++] = *extra++;
	argv[n] = NULL;
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		if (err_fd >= 0)
			dup2(err_fd, 2);
		execv(mux_path, (char *const *)argv);
		_exit(127);
	}
	return pid;
}

/* HELLO, the first message on every connection (as the broker says it). */
static int hello(int fd)
{
	struct mp_msg m, rep;

	mp_init(&m, MP_HELLO);
	if (ctl(fd, &m, -1, &rep) ||
	    rep.u.hello_reply.version != RDMAGATE_MUX_VERSION)
		die("HELLO: '%s', version %u", rep.u.status.text,
		    rep.u.hello_reply.version);
	return fd;
}

/* Connects to the control socket, retrying while the mux starts, and
 * says HELLO. */
int connect_mux(pid_t pid)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	uint64_t end = mono_ms() + 20000;

	strcpy(sa.sun_path, CONTROL);
	while (mono_ms() < end) {
		int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		int st;

		if (fd < 0)
			die("socket: %s", strerror(errno));
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return hello(fd);
		close(fd);
		if (pid > 0 && waitpid(pid, &st, WNOHANG) == pid)
			die("the mux exited (status 0x%x) before listening",
			    st);
		usleep(50000);
	}
	die("the mux did not listen on %s within 20 s", CONTROL);
}

/* One request, its reply (decoded); returns the reply's status. */
int ctl(int fd, struct mp_msg *req, int fd_pass, struct mp_msg *rep)
{
	uint8_t buf[MP_MSG_MAX + 1];
	struct reason why = { "" };
	struct pollfd p = { fd, POLLIN, 0 };
	ssize_t n;
	int ret;

	ret = mp_send(fd, req, 0, fd_pass);
	if (ret < 0)
		die("sending %s: %s", mp_type_name(req->h.type),
		    strerror(-ret));
	if (poll(&p, 1, 20000) != 1)
		die("no reply to %s within 20 s", mp_type_name(req->h.type));
	n = recv(fd, buf, sizeof(buf), 0);
	if (n <= 0)
		return -EPIPE;
	ret = mp_decode(buf, (size_t)n, MP_FROM_MUX, rep, &why);
	if (ret < 0)
		die("reply to %s: %s", mp_type_name(req->h.type), why.msg);
	if (rep->h.type != req->h.type + 1)
		die("reply to %s is %s (%s)", mp_type_name(req->h.type),
		    mp_type_name(rep->h.type), rep->u.status.text);
	return rep->u.status.status;
}

int ctl_refused(int fd, struct mp_msg *req, int fd_pass, struct mp_msg *rep)
{
	uint8_t buf[MP_MSG_MAX + 1];
	struct reason why = { "" };
	ssize_t n;

	if (mp_send(fd, req, 0, fd_pass) < 0)
		die("send: %s", strerror(errno));
	n = recv(fd, buf, sizeof(buf), 0);
	strcpy(rep->u.status.text, "?");
	if (n <= 0 || mp_decode(buf, (size_t)n, MP_FROM_MUX, rep, &why) < 0 ||
	    rep->h.type != MP_ERROR_REPLY)
		return -1;
	return rep->u.status.status;
}

int port_add(int fd, const char *dev, struct mp_msg *rep)
{
	struct mp_msg m;

	mp_init(&m, MP_PORT_ADD);
	msg_set_str(m.u.port_add.device, MP_DEVICE_SIZE, dev);
	m.u.port_add.port = 1;
	return ctl(fd, &m, -1, rep);
}

/* Attaches worker id; returns the worker's end of its socketpair. */
int attach(int fd, uint32_t id, const char *vm)
{
	struct mp_msg m, rep;
	int sv[2], ret;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		die("socketpair: %s", strerror(errno));
	mp_init(&m, MP_WORKER_ATTACH);
	m.u.attach.worker_id = id;
	msg_set_str(m.u.attach.vm, MP_VM_SIZE, vm);
	ret = ctl(fd, &m, sv[0], &rep);
	close(sv[0]);
	if (ret)
		die("WORKER_ATTACH %u: %s", id, rep.u.status.text);
	return sv[1];
}

int gid_add(int fd, uint32_t id, const char *dev, const uint8_t *gid,
	    uint32_t index, struct mp_msg *rep)
{
	struct mp_msg m;

	mp_init(&m, MP_GID_ADD);
	m.u.gid_add.worker_id = id;
	msg_set_str(m.u.gid_add.device, MP_DEVICE_SIZE, dev);
	m.u.gid_add.port = 1;
	memcpy(m.u.gid_add.gid, gid, 16);
	m.u.gid_add.host_gid_index = index;
	return ctl(fd, &m, -1, rep);
}

struct mp_stats stats(int fd, uint32_t id)
{
	struct mp_msg m, rep;

	mp_init(&m, MP_STATS);
	m.u.ref.worker_id = id;
	if (ctl(fd, &m, -1, &rep))
		die("STATS %u: %s", id, rep.u.status.text);
	return rep.u.stats_reply.s;
}

/* ---- GIDs ------------------------------------------------------------------
 */

/* The RoCE v2 GID index of addr on dev port 1 (waits for it: the kernel
 * adds GIDs for new addresses from a work queue). */
uint32_t gid_index(const char *dev, const uint8_t *addr)
{
	uint64_t end = mono_ms() + 10000;

	while (mono_ms() < end) {
		int i = vt_gid_index(dev, addr);

		if (i >= 0)
			return (uint32_t)i;
		usleep(100000);
	}
	die("no RoCE v2 GID for the address on %s after 10 s", dev);
}

/* ---- MADs ------------------------------------------------------------------
 */

void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

void cm_mad(uint8_t *mad, uint16_t attr, uint32_t tid, uint32_t local,
	    uint32_t remote)
{
	memset(mad, 0, 256);
	mad[0] = 1;
	mad[1] = 0x07;
	mad[2] = 2;
	mad[3] = 0x03;
	put32(mad + 12, tid); /* the kernel owns the TID's upper half */
	mad[16] = (uint8_t)(attr >> 8);
	mad[17] = (uint8_t)attr;
	put32(mad + 24, local);
	put32(mad + 28, remote);
	memset(mad + 200, 0xab, 56); /* "private data" to compare */
}

void req_mad(uint8_t *mad, uint32_t tid, uint32_t local, const uint8_t *from,
	     const uint8_t *to)
{
	cm_mad(mad, 0x0010, tid, local, 0);
	put32(mad + 28, 0);
	put32(mad + 24 + 8, 0x12345678); /* service id (part) */
	memcpy(mad + 80, from, 16);
	memcpy(mad + 96, to, 16);
}

/* A worker sends a MAD: from sgid to dgid, on QP1. */
uint8_t send_tclass; /* GRH fields of the next sends */
uint32_t send_flow_label;

void mad_send(int wfd, const uint8_t *sgid, const uint8_t *dgid,
	      const uint8_t *mad)
{
	struct mp_msg m;
	int ret;

	mp_init(&m, MP_MAD_SEND);
	memcpy(m.u.mad_send.sgid, sgid, 16);
	memcpy(m.u.mad_send.dgid, dgid, 16);
	m.u.mad_send.flow_label = send_flow_label;
	m.u.mad_send.traffic_class = send_tclass;
	m.u.mad_send.hop_limit = 64;
	m.u.mad_send.remote_qpn = 1;
	m.u.mad_send.remote_qkey = GSI_QKEY;
	m.u.mad_send.mad_len = 256;
	memcpy(m.u.mad_send.mad, mad, 256);
	ret = mp_send(wfd, &m, 0, -1);
	if (ret < 0)
		die("MAD_SEND: %s", strerror(-ret));
}

/* A worker's next MAD_RECV within ms; false on timeout. */
bool mad_recv(int wfd, int ms, struct mp_mad_recv *r)
{
	uint8_t buf[MP_MSG_MAX + 1];
	struct pollfd p = { wfd, POLLIN, 0 };
	struct reason why = { "" };
	struct mp_msg m;
	ssize_t n;

	if (poll(&p, 1, ms) != 1)
		return false;
	n = recv(wfd, buf, sizeof(buf), 0);
	if (n <= 0)
		die("worker channel: %s", n ? strerror(errno) : "closed");
	if (mp_decode(buf, (size_t)n, MP_FROM_MUX, &m, &why) < 0)
		die("MAD_RECV: %s", why.msg);
	if (m.h.type != MP_MAD_RECV)
		die("worker got %s", mp_type_name(m.h.type));
	*r = m.u.mad_recv;
	return true;
}

const char *gs(const uint8_t *g, char *buf)
{
	inet_ntop(AF_INET6, g, buf, 46);
	return buf;
}

/* mad as received equals what was sent, but for the TID's upper half. */
bool same_mad(const uint8_t *got, const uint8_t *sent)
{
	return !memcmp(got, sent, 8) && !memcmp(got + 12, sent + 12, 244);
}
