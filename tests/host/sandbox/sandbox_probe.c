// SPDX-License-Identifier: MIT
/*
 * Test-only program (never installed): sets up fds like a worker's, drops
 * privileges if asked, installs the worker's seccomp filter and performs
 * ONE operation named on the command line.  Forbidden operations must be
 * killed by SIGSYS; if one returns, the probe exits 3.  Allowed operations
 * check their results and exit 0 (2 when a result is wrong).  Exit 1: bad
 * usage or setup.
 *
 *   sandbox_probe [--debug] [--listen] [--drop UID:GID] OP
 *   sandbox_probe --bare OP       (an ABI probe without the filter: what
 *                                 the bare kernel does with it)
 *   sandbox_probe --export-pfc    (the golden file: see worker-filter.pfc)
 *   sandbox_probe --list          (every OP: allowed, forbidden, or
 *                                 forbidden-abi: a forbidden op whose
 *                                 syscall ABI the kernel may lack)
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/privdrop.h"
#include "worker/sandbox/sandbox.h"

#if defined(__SANITIZE_ADDRESS__)
/*
 * An ASan build (./dev test --asan): LeakSanitizer's check at exit stops
 * the process with prctl + clone + ptrace, which the filter forbids, as it
 * must.  The probe checks the filter, not leaks: turn that check off.
 */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "detect_leaks=0";
}
#endif

#define PAGE	4096
#define HDR	"hdr!"
#define PAYLOAD "payload!"

struct probe {
	int cmd;     /* stands in for the verbs cmd_fd (an eventfd) */
	int call;    /* a call/kick eventfd */
	int ep;	     /* the epoll instance */
	int vu;	     /* our end of the vhost-user socket (or accepted) */
	int peer;    /* the frontend's end */
	int memfd;   /* guest RAM: page 0 is 'A', page 1 is 'B' */
	int devnull; /* a file fd the filter does not allow writes to */
	int lfd;     /* --listen: the listening socket */
	int client;  /* --listen: a connected frontend in the backlog */
};

static int fail(const char *what)
{
	log_warnx("probe: %s", what);
	return 2;
}

/* ---- forbidden operations: each must die of SIGSYS ------------------- */

static long forbidden_page(void)
{
	/* mmap of a plain anonymous page is allowed: the setup step */
	void *m = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return m == MAP_FAILED ? 0 : (long)(uintptr_t)m;
}

#define F(name, expr)                                                          \
	static long f_##name(struct probe *p)                                  \
	{                                                                      \
		(void)p;                                                       \
		return (long)(expr);                                           \
	}

static const struct sockaddr_un abs_sa = { .sun_family = AF_UNIX,
					   .sun_path = "\0rdmagate-probe-x" };

F(openat_new, openat(AT_FDCWD, "/tmp/rdmagate-sandbox-probe-new",
		     O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600))
F(open_passwd, open("/etc/passwd", O_RDONLY | O_CLOEXEC))
#ifdef SYS_open
F(open_legacy, syscall(SYS_open, "/etc/passwd", O_RDONLY))
#endif
F(stat_path, ({
	  struct stat st;
	  stat("/etc/passwd", &st);
  }))
F(socket_inet, socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0))
F(socket_unix, socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0))
F(socketpair, ({
	  int sp[2];
	  socketpair(AF_UNIX, SOCK_STREAM, 0, sp);
  }))
F(connect, connect(p->vu, (const struct sockaddr *)&abs_sa, sizeof(abs_sa)))
F(execve,
  execve("/nonexistent-rdmagate", (char *[]){ NULL }, (char *[]){ NULL }))
F(ptrace, ptrace(PTRACE_TRACEME, 0, NULL, NULL))
F(mount, mount("none", "/nonexistent-rdmagate", "tmpfs", 0, NULL))
F(umount2, umount2("/nonexistent-rdmagate", MNT_DETACH))
F(bpf, syscall(SYS_bpf, 0, NULL, 0))
F(perf_event_open, syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0))
F(setuid, syscall(SYS_setuid, 0))
F(setgid, syscall(SYS_setgid, 0))
F(setgroups, syscall(SYS_setgroups, 0, NULL))
F(kexec_load, syscall(SYS_kexec_load, 0, 0, NULL, 0xffffffffUL))
F(init_module, syscall(SYS_init_module, NULL, 0, ""))
F(finit_module, syscall(SYS_finit_module, -1, "", 0))
F(fork, fork())
F(clone3, syscall(SYS_clone3, NULL, 0))
F(unshare, unshare(CLONE_NEWUSER))
F(setns, setns(p->cmd, 0))
F(chroot, chroot("/nonexistent-rdmagate"))
F(ioctl_other_req, ({
	  int n;
	  ioctl(p->cmd, FIONREAD, &n);
  }))
F(ioctl_other_fd, ({
	  char b[24] = { 0 };
	  ioctl(p->memfd, SANDBOX_RDMA_VERBS_IOCTL, b);
  }))
F(ioctl_tiocsti, ioctl(2, TIOCSTI, "x"))
F(mmap_exec,
  mmap(NULL, PAGE, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))
F(mmap_wx_memfd,
  mmap(NULL, PAGE, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_SHARED, p->memfd, 0))
F(mprotect_exec,
  mprotect((void *)forbidden_page(), PAGE, PROT_READ | PROT_EXEC))
F(madvise_other, madvise((void *)forbidden_page(), PAGE, MADV_MERGEABLE))
F(write_file, write(p->devnull, "hello", 5))
F(writev_log, writev(2, &(struct iovec){ "x\n", 2 }, 1))
F(process_vm_readv, syscall(SYS_process_vm_readv, 1, NULL, 0, NULL, 0, 0))
F(process_vm_writev, syscall(SYS_process_vm_writev, 1, NULL, 0, NULL, 0, 0))
F(keyctl, syscall(SYS_keyctl, 0, -3, 0))
F(add_key, syscall(SYS_add_key, "user", "rdmagate", "x", 1, -3))
F(reboot, syscall(SYS_reboot, 0, 0, 0, NULL))
F(swapon, syscall(SYS_swapon, "/nonexistent-rdmagate", 0))
F(io_uring_setup, ({
	  struct io_uring_params up = { 0 };
	  syscall(SYS_io_uring_setup, 1, &up);
  }))
F(userfaultfd, syscall(SYS_userfaultfd, O_CLOEXEC))
F(memfd_create, syscall(SYS_memfd_create, "x", 0))
F(kill, kill(1, 0))
F(tgkill_other_signal, syscall(SYS_tgkill, getpid(), gettid(), SIGUSR1))
F(prctl, prctl(PR_SET_DUMPABLE, 1, 0, 0, 0))
F(epoll_ctl_other, ({
	  struct epoll_event ev = { .events = EPOLLIN };
	  epoll_ctl(p->cmd, EPOLL_CTL_ADD, p->call, &ev);
  }))
F(epoll_pwait2_other, ({
	  struct epoll_event ev;
	  struct timespec ts = { 0, 1000 };
	  epoll_pwait2(p->cmd, &ev, 1, &ts, NULL);
  }))
F(accept4_no_listen, accept4(p->vu, NULL, NULL, SOCK_CLOEXEC))
F(sendto_addr,
  sendto(p->vu, "x", 1, 0, (const struct sockaddr *)&abs_sa, sizeof(abs_sa)))
F(setsockopt_other, ({
	  int v = 4096;
	  setsockopt(p->vu, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
  }))
F(fcntl_dupfd, fcntl(p->call, F_DUPFD, 0))
F(dup, dup(p->call))
#if defined(__x86_64__)
F(x32_abi, syscall(0x40000000 | SYS_getpid))
F(i386_int80, ({
	  long r = 20; /* i386 getpid */
	  __asm__ volatile("int $0x80" : "+a"(r) : : "memory");
	  r;
  }))
#endif

/* ---- allowed operations: each checks its result ---------------------- */

static int a_eventfd(struct probe *p)
{
	uint64_t v = 5;

	if (write(p->call, &v, sizeof(v)) != sizeof(v))
		return fail("eventfd write");
	v = 0;
	if (read(p->call, &v, sizeof(v)) != sizeof(v) || v != 5)
		return fail("eventfd read");
	return 0;
}

static int a_epoll(struct probe *p)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 42 };
	uint64_t one = 1;

	if (epoll_ctl(p->ep, EPOLL_CTL_ADD, p->call, &ev) < 0)
		return fail("epoll_ctl ADD");
	if (write(p->call, &one, sizeof(one)) != sizeof(one))
		return fail("eventfd write");
	memset(&ev, 0, sizeof(ev));
	if (epoll_wait(p->ep, &ev, 1, 1000) != 1 || ev.data.u64 != 42)
		return fail("epoll_wait");
	memset(&ev, 0, sizeof(ev));
	if (epoll_pwait(p->ep, &ev, 1, 1000, NULL) != 1 || ev.data.u64 != 42)
		return fail("epoll_pwait");
	memset(&ev, 0, sizeof(ev));
	{
		struct timespec ts = { 0, 50000 };

		if (epoll_pwait2(p->ep, &ev, 1, &ts, NULL) != 1 ||
		    ev.data.u64 != 42)
			return fail("epoll_pwait2");
	}
	if (epoll_ctl(p->ep, EPOLL_CTL_DEL, p->call, NULL) < 0)
		return fail("epoll_ctl DEL");
	return 0;
}

/* Receives HDR with one fd (a memfd), then PAYLOAD, like a vhost-user msg. */
static int recv_msg_fd(int fd, int *ret_fd)
{
	union {
		char b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	char hdr[sizeof(HDR) - 1], pl[sizeof(PAYLOAD) - 1];
	struct iovec iov = { hdr, sizeof(hdr) };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = ctl.b,
			     .msg_controllen = sizeof(ctl.b) };
	struct cmsghdr *c;

	if (recvmsg(fd, &mh, MSG_CMSG_CLOEXEC) != sizeof(hdr) ||
	    memcmp(hdr, HDR, sizeof(hdr)))
		return fail("recvmsg header");
	c = CMSG_FIRSTHDR(&mh);
	if (!c || c->cmsg_type != SCM_RIGHTS ||
	    c->cmsg_len != CMSG_LEN(sizeof(int)))
		return fail("recvmsg: no SCM_RIGHTS fd");
	memcpy(ret_fd, CMSG_DATA(c), sizeof(int));
	if (recv(fd, pl, sizeof(pl), MSG_WAITALL) != sizeof(pl) ||
	    memcmp(pl, PAYLOAD, sizeof(pl)))
		return fail("recv payload");
	return 0;
}

static int send_msg_fd(int fd, int pass)
{
	union {
		char b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { (void *)HDR, sizeof(HDR) - 1 };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = ctl.b,
			     .msg_controllen = sizeof(ctl.b) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);

	memset(ctl.b, 0, sizeof(ctl.b));
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &pass, sizeof(int));
	if (sendmsg(fd, &mh, MSG_NOSIGNAL) != (ssize_t)(sizeof(HDR) - 1))
		return -1;
	return send(fd, PAYLOAD, sizeof(PAYLOAD) - 1, MSG_NOSIGNAL) ==
			       sizeof(PAYLOAD) - 1
		       ? 0
		       : -1;
}

/* The vhost-user exchange: message with an fd in, use it, reply with one. */
static int a_vhost_user(struct probe *p)
{
	struct timeval tv = { .tv_sec = 5 };
	_cleanup_close_ int got = -1;
	char *m;
	int ret;

	if (setsockopt(p->vu, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    setsockopt(p->vu, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
		return fail("setsockopt SO_RCVTIMEO/SO_SNDTIMEO");
	ret = recv_msg_fd(p->vu, &got);
	if (ret)
		return ret;
	m = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, got, 0);
	if (m == MAP_FAILED || m[0] != 'A')
		return fail("mmap of the received memfd");
	munmap(m, PAGE);
	if (send_msg_fd(p->vu, p->call) < 0)
		return fail("sendmsg with SCM_RIGHTS / send");
	return 0;
}

/* Guest RAM: map a memfd, remap another page of it MAP_FIXED, unmap. */
static int a_memfd_map(struct probe *p)
{
	struct stat st;
	char *m, *r;

	if (fstat(p->memfd, &st) < 0 || st.st_size != 2 * PAGE)
		return fail("fstat of the memfd");
	m = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, p->memfd,
		 0);
	if (m == MAP_FAILED || m[0] != 'A' || m[PAGE] != 'B')
		return fail("mmap MAP_SHARED of the memfd");
	r = mmap(m, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
		 p->memfd, PAGE);
	if (r != m || m[0] != 'B')
		return fail("MAP_FIXED remap of the memfd");
	if (mprotect(m, PAGE, PROT_READ) < 0)
		return fail("mprotect PROT_READ");
	if (munmap(m, 2 * PAGE) < 0)
		return fail("munmap");
	return 0;
}

/* glibc's allocator: brk, large mmap, mremap on realloc, munmap on free. */
static int a_malloc(struct probe *p)
{
	size_t big = 8u << 20;
	char *small[64], *b, *nb;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(small); i++) {
		small[i] = malloc(64 * 1024);
		if (!small[i])
			return fail("malloc (brk)");
		memset(small[i], (int)i, 64 * 1024);
	}
	for (i = 0; i < ARRAY_SIZE(small); i++)
		free(small[i]);
	b = malloc(big);
	if (!b)
		return fail("malloc (mmap)");
	memset(b, 1, big);
	nb = realloc(b, 2 * big);
	if (!nb)
		free(b);
	if (!nb || nb[big - 1] != 1)
		return fail("realloc (mremap)");
	free(nb);
	return 0;
}

static int a_fcntl(struct probe *p)
{
	int fl = fcntl(p->call, F_GETFL);

	if (fl < 0 || fcntl(p->call, F_SETFL, fl | O_NONBLOCK) < 0 ||
	    !(fcntl(p->call, F_GETFL) & O_NONBLOCK))
		return fail("fcntl F_GETFL/F_SETFL");
	if (!(fcntl(p->call, F_GETFD) & FD_CLOEXEC) ||
	    fcntl(p->call, F_SETFD, FD_CLOEXEC) < 0)
		return fail("fcntl F_GETFD/F_SETFD");
	/* guest_mem's own copy of a region's memfd */
	{
		int copy = fcntl(p->call, F_DUPFD_CLOEXEC, 3);

		if (copy < 0 || !(fcntl(copy, F_GETFD) & FD_CLOEXEC) ||
		    close(copy) < 0)
			return fail("fcntl F_DUPFD_CLOEXEC");
	}
	/* guest_mem's shared-memory check: a memfd has seals, an eventfd not */
	if (fcntl(p->memfd, F_GET_SEALS) < 0 ||
	    fcntl(p->call, F_GET_SEALS) != -1 || errno != EINVAL)
		return fail("fcntl F_GET_SEALS");
	return 0;
}

static int a_log(struct probe *p)
{
	static const char line[] = "probe: a raw line on stderr\n";

	if (write(2, line, sizeof(line) - 1) != sizeof(line) - 1)
		return fail("write to stderr");
	log_info("probe: log_info under the filter");
	errno = EBADF;
	log_warn("probe: log_warn (with strerror) under the filter");
	return 0;
}

static int a_clock(struct probe *p)
{
	struct timespec a, b;
	struct timeval tv;

	if (clock_gettime(CLOCK_MONOTONIC, &a) < 0 ||
	    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &b) < 0 ||
	    gettimeofday(&tv, NULL) < 0)
		return fail("clock_gettime/gettimeofday");
	if (b.tv_sec < a.tv_sec)
		return fail("the clock went back");
	return 0;
}

/* The verbs ioctl and the doorbell write on cmd_fd reach the kernel. */
static int a_verbs_cmd_fd(struct probe *p)
{
	char cmd[32] = { 0 };
	ssize_t n;

	if (ioctl(p->cmd, SANDBOX_RDMA_VERBS_IOCTL, cmd) != -1 ||
	    errno != ENOTTY)
		return fail("verbs ioctl on cmd_fd did not reach the eventfd");
	/* eventfd takes the first 8 bytes (6.1) or refuses the size (6.18) */
	n = write(p->cmd, cmd, sizeof(cmd));
	if (n != 8 && !(n == -1 && errno == EINVAL))
		return fail("32-byte doorbell write did not reach the eventfd");
	return 0;
}

static int a_ids(struct probe *p)
{
	if (getpid() <= 0 || gettid() != getpid())
		return fail("getpid/gettid");
	return 0;
}

static int a_close(struct probe *p)
{
	if (close(p->devnull) < 0)
		return fail("close");
	p->devnull = -1;
	return 0;
}

/* --listen: accept the frontend waiting in the backlog and talk to it. */
static int a_accept(struct probe *p)
{
	_cleanup_close_ int got = -1;
	int ret;

	if (p->lfd < 0)
		return fail("accept needs --listen");
	p->vu = accept4(p->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (p->vu < 0)
		return fail("accept4 on the listening socket");
	ret = recv_msg_fd(p->vu, &got);
	if (ret)
		return ret;
	if (send_msg_fd(p->vu, p->call) < 0)
		return fail("sendmsg on the accepted socket");
	return 0;
}

/* --debug: a forbidden call fails with ENOSYS, and the run goes on. */
static int a_debug_trap(struct probe *p)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (s != -1 || errno != ENOSYS)
		return fail("socket() in debug mode did not fail with ENOSYS");
	return a_eventfd(p);
}

/* abort() must still end in SIGABRT, not in SIGSYS. */
static int a_abort(struct probe *p)
{
	abort();
}

/* ---- the table, setup, main ------------------------------------------ */

struct op {
	const char *name;
	long (*forbidden)(struct probe *p);
	int (*allowed)(struct probe *p);
	/*
	 * Enters the kernel through another syscall ABI (i386, x32), which
	 * a kernel may not have at all (CONFIG_IA32_EMULATION off, or
	 * ia32_emulation=0): its test asks the bare kernel first (--bare).
	 */
	bool abi;
};

#define FORBID(n)                                                              \
	{                                                                      \
#n, f_##n, NULL, false                                         \
	}
#define FORBID_ABI(n)                                                          \
	{                                                                      \
#n, f_##n, NULL, true                                          \
	}
#define PERMIT(n)                                                              \
	{                                                                      \
#n, NULL, a_##n, false                                         \
	}

static const struct op ops[] = {
	FORBID(openat_new),
	FORBID(open_passwd),
#ifdef SYS_open
	FORBID(open_legacy),
#endif
	FORBID(stat_path),
	FORBID(socket_inet),
	FORBID(socket_unix),
	FORBID(socketpair),
	FORBID(connect),
	FORBID(execve),
	FORBID(ptrace),
	FORBID(mount),
	FORBID(umount2),
	FORBID(bpf),
	FORBID(perf_event_open),
	FORBID(setuid),
	FORBID(setgid),
	FORBID(setgroups),
	FORBID(kexec_load),
	FORBID(init_module),
	FORBID(finit_module),
	FORBID(fork),
	FORBID(clone3),
	FORBID(unshare),
	FORBID(setns),
	FORBID(chroot),
	FORBID(ioctl_other_req),
	FORBID(ioctl_other_fd),
	FORBID(ioctl_tiocsti),
	FORBID(mmap_exec),
	FORBID(mmap_wx_memfd),
	FORBID(mprotect_exec),
	FORBID(madvise_other),
	FORBID(write_file),
	FORBID(writev_log),
	FORBID(process_vm_readv),
	FORBID(process_vm_writev),
	FORBID(keyctl),
	FORBID(add_key),
	FORBID(reboot),
	FORBID(swapon),
	FORBID(io_uring_setup),
	FORBID(userfaultfd),
	FORBID(memfd_create),
	FORBID(kill),
	FORBID(tgkill_other_signal),
	FORBID(prctl),
	FORBID(epoll_ctl_other),
	FORBID(epoll_pwait2_other),
	FORBID(accept4_no_listen),
	FORBID(sendto_addr),
	FORBID(setsockopt_other),
	FORBID(fcntl_dupfd),
	FORBID(dup),
#if defined(__x86_64__)
	FORBID_ABI(x32_abi),
	FORBID_ABI(i386_int80),
#endif
	PERMIT(eventfd),
	PERMIT(epoll),
	PERMIT(vhost_user),
	PERMIT(memfd_map),
	PERMIT(malloc),
	PERMIT(fcntl),
	PERMIT(log),
	PERMIT(clock),
	PERMIT(verbs_cmd_fd),
	PERMIT(ids),
	PERMIT(close),
	PERMIT(accept),
	PERMIT(debug_trap),
	PERMIT(abort),
};

static const struct op *find_op(const char *name)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ops); i++)
		if (!strcmp(ops[i].name, name))
			return &ops[i];
	return NULL;
}

static int setup_memfd(void)
{
	char page[PAGE];
	int fd = memfd_create("probe-guest-ram", MFD_CLOEXEC);

	if (fd < 0 || ftruncate(fd, 2 * PAGE) < 0)
		return -1;
	memset(page, 'A', PAGE);
	if (pwrite(fd, page, PAGE, 0) != PAGE)
		return -1;
	memset(page, 'B', PAGE);
	if (pwrite(fd, page, PAGE, PAGE) != PAGE)
		return -1;
	return fd;
}

/* A frontend waiting in the backlog of an abstract listening socket. */
static int setup_listen(struct probe *p)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t len;

	snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "rdmagate-probe-%d",
		 (int)getpid());
	len = offsetof(struct sockaddr_un, sun_path) + 1 +
	      strlen(sa.sun_path + 1);
	p->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	p->client = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (p->lfd < 0 || p->client < 0 ||
	    bind(p->lfd, (struct sockaddr *)&sa, len) < 0 ||
	    listen(p->lfd, 1) < 0 ||
	    connect(p->client, (struct sockaddr *)&sa, len) < 0)
		return -1;
	return send_msg_fd(p->client, p->memfd);
}

static int setup(struct probe *p, bool listen_mode)
{
	int sp[2];

	*p = (struct probe){ .lfd = -1, .client = -1 };
	p->cmd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	p->call = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	p->ep = epoll_create1(EPOLL_CLOEXEC);
	p->memfd = setup_memfd();
	p->devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (p->cmd < 0 || p->call < 0 || p->ep < 0 || p->memfd < 0 ||
	    p->devnull < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
		return -1;
	p->vu = sp[0];
	p->peer = sp[1];
	/* The frontend's first message is queued before the filter. */
	if (send_msg_fd(p->peer, p->memfd) < 0)
		return -1;
	return listen_mode ? setup_listen(p) : 0;
}

static void params_of(const struct probe *p, bool listen_mode, bool debug,
		      struct sandbox_worker_params *sp)
{
	sandbox_worker_params_init(sp);
	sp->cmd_fd = p->cmd;
	sp->epoll_fd = p->ep;
	sp->vu_fd = listen_mode ? -1 : p->vu;
	sp->listen_fd = listen_mode ? p->lfd : -1;
	sp->log_fd = 2;
	sp->debug = debug;
}

/* The golden file: fixed fd numbers so that the text is reproducible. */
static int export_pfc(void)
{
	struct sandbox_worker_params sp;
	const struct scmp_version *v = seccomp_version();

	sandbox_worker_params_init(&sp);
	sp.cmd_fd = 5;
	sp.epoll_fd = 6;
	sp.vu_fd = 7;
	printf("# rdmagate worker filter: cmd_fd 5, epoll_fd 6, vu_fd 7, "
	       "listen_fd -1, log_fd 2\n"
	       "# libseccomp %u.%u.%u\n"
	       "# regenerate (then review the diff): BUILD/tests/host/sandbox/"
	       "sandbox_probe --export-pfc > tests/host/sandbox/"
	       "worker-filter.pfc\n",
	       v->major, v->minor, v->micro);
	fflush(stdout);
	return sandbox_export_pfc(&sp, 1) < 0 ? 1 : 0;
}

static int parse_drop(const char *s, uid_t *uid, gid_t *gid)
{
	unsigned int u, g;
	char c;

	if (sscanf(s, "%u:%u%c", &u, &g, &c) != 2)
		return -1;
	*uid = u;
	*gid = g;
	return 0;
}

static int run(const struct op *op, struct probe *p, bool bare)
{
	long r;

	if (op->allowed)
		return op->allowed(p);
	r = op->forbidden(p);
	if (bare)
		log_warnx("probe: '%s' without the filter returned %ld (errno "
			  "%d): the kernel has this syscall ABI",
			  op->name, r, errno);
	else
		log_warnx("probe: forbidden operation '%s' returned %ld (errno "
			  "%d) instead of being killed",
			  op->name, r, errno);
	return 3;
}

int main(int argc, char **argv)
{
	bool debug = false, listen_mode = false, drop = false, bare = false;
	struct sandbox_worker_params sp;
	const struct op *op;
	struct probe p;
	uid_t uid = 0;
	gid_t gid = 0;
	int i;

	log_init("sandbox-probe", LOG_LVL_INFO);
	for (i = 1; i < argc - 1; i++) {
		if (!strcmp(argv[i], "--debug"))
			debug = true;
		else if (!strcmp(argv[i], "--listen"))
			listen_mode = true;
		else if (!strcmp(argv[i], "--bare"))
			bare = true;
		else if (!strcmp(argv[i], "--drop") && i + 1 < argc - 1 &&
			 parse_drop(argv[i + 1], &uid, &gid) == 0)
			drop = true, i++;
		else
			break;
	}
	if (argc == 2 && !strcmp(argv[1], "--export-pfc"))
		return export_pfc();
	if (argc == 2 && !strcmp(argv[1], "--list")) {
		for (i = 0; i < (int)ARRAY_SIZE(ops); i++)
			printf("%s %s\n",
			       ops[i].allowed ? "allowed"
			       : ops[i].abi   ? "forbidden-abi"
					      : "forbidden",
			       ops[i].name);
		return 0;
	}
	op = argc >= 2 && i == argc - 1 ? find_op(argv[argc - 1]) : NULL;
	if (!op) {
		log_warnx("usage: sandbox_probe [--debug] [--listen] "
			  "[--drop UID:GID] OP | --bare OP | --export-pfc | "
			  "--list");
		return 1;
	}
	/*
	 * A kernel without the ABI answers with SIGSEGV: let it end the
	 * process as it would (an ASan build's handler would turn it into
	 * an exit status instead)
	 */
	if (op->abi)
		signal(SIGSEGV, SIG_DFL);
	if (bare && !op->abi) {
		/* never a forbidden syscall unfiltered, as root, by mistake */
		log_warnx("probe: --bare runs only ABI probes, not '%s'",
			  op->name);
		return 1;
	}
	if (setup(&p, listen_mode) < 0) {
		log_warn("probe: setup");
		return 1;
	}
	if (bare)
		return run(op, &p,
			   true); /* 3 if the kernel ran it; else a signal */
	if (drop && privdrop_to(uid, gid) < 0)
		return 1;
	params_of(&p, listen_mode, debug, &sp);
	if (sandbox_install_worker_filter(&sp) < 0)
		return 1;
	return run(op, &p, false);
}
