// SPDX-License-Identifier: MIT
/* The worker's seccomp allow-list (see sandbox.h). */
#include "worker/sandbox/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <seccomp.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <ucontext.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"

/* ---- the allow-list -------------------------------------------------- */

/* An fd of SB_ANY_FD puts no condition on argument 0. */
#define SB_ANY_FD INT_MIN

static int sb_allow(scmp_filter_ctx ctx, int nr, const char *name, int fd,
		    unsigned int ncmp, const struct scmp_arg_cmp *cmp)
{
	struct scmp_arg_cmp all[6] = { { 0 } };
	unsigned int n = 0;
	int ret;

	if (fd < 0 && fd != SB_ANY_FD)
		return 0; /* that fd does not exist: no rule */
	if (fd != SB_ANY_FD)
		all[n++] = SCMP_A0_32(SCMP_CMP_EQ, (uint32_t)fd);
	if (ncmp > ARRAY_SIZE(all) - n) {
		log_warnx("sandbox: too many argument checks for %s", name);
		return -E2BIG;
	}
	memcpy(all + n, cmp, ncmp * sizeof(*cmp));
	n += ncmp;
	ret = seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, nr, n, all);
	if (ret < 0)
		log_warnx("sandbox: cannot add the rule for %s: %s", name,
			  strerror(-ret));
	return ret;
}

/*
 * A rule: the syscall, optionally an fd it must act on (argument 0), and
 * argument comparisons.  The leading { 0 } lets the list be empty.
 */
#define SB_CMPS(...)  ((const struct scmp_arg_cmp[]){ { 0 }, ##__VA_ARGS__ })
#define SB_NCMPS(...) (ARRAY_SIZE(SB_CMPS(__VA_ARGS__)) - 1)
#define ALLOW_ON(fd, sys, ...)                                                 \
	do {                                                                   \
		if (ret == 0)                                                  \
			ret = sb_allow(ctx, SCMP_SYS(sys), #sys, (fd),         \
				       SB_NCMPS(__VA_ARGS__),                  \
				       SB_CMPS(__VA_ARGS__) + 1);              \
	} while (0)
#define ALLOW(sys, ...) ALLOW_ON(SB_ANY_FD, sys, ##__VA_ARGS__)

#define NO_EXEC(argn) SCMP_CMP32(argn, SCMP_CMP_MASKED_EQ, PROT_EXEC, 0)

/* Memory: glibc's allocator, guest RAM and the verbs queues. */
static int allow_memory(scmp_filter_ctx ctx)
{
	int ret = 0;

	/* malloc's main arena */
	ALLOW(brk);
	/*
	 * Guest memfds (SET_MEM_TABLE, MR remaps with MAP_FIXED), the
	 * verbs queues on cmd_fd (MAP_SHARED), large mallocs.  The fds come
	 * from the frontend at run time, so only the protection is checked:
	 * nothing may become executable.
	 */
	ALLOW(mmap, NO_EXEC(2));
	ALLOW(mprotect, NO_EXEC(2));
	/* realloc of large blocks */
	ALLOW(mremap);
	/* memory table changes, queue and MR teardown, free() */
	ALLOW(munmap);
	/* free() trims with DONTNEED; rdma-core's fork protection */
	ALLOW(madvise, SCMP_A2_32(SCMP_CMP_EQ, MADV_DONTNEED));
	ALLOW(madvise, SCMP_A2_32(SCMP_CMP_EQ, MADV_FREE));
	ALLOW(madvise, SCMP_A2_32(SCMP_CMP_EQ, MADV_DONTFORK));
	ALLOW(madvise, SCMP_A2_32(SCMP_CMP_EQ, MADV_DOFORK));
	/* guest memory mapped at run time stays out of core dumps */
	ALLOW(madvise, SCMP_A2_32(SCMP_CMP_EQ, MADV_DONTDUMP));
	return ret;
}

/* The fds the worker already holds: eventfds, channels, memfds. */
static int allow_fds(scmp_filter_ctx ctx, const struct sandbox_worker_params *p)
{
	int ret = 0;

	/* kick eventfds, completion channels, the verbs async fd */
	ALLOW(read);
	/* log lines: one write(2) each, any length */
	ALLOW_ON(p->log_fd, write);
	/* uverbs write commands on cmd_fd: rxe's send doorbell (32 bytes) */
	ALLOW_ON(p->cmd_fd, write);
	/* call eventfds arrive at run time: only an 8-byte counter write */
	ALLOW(write, SCMP_A2_64(SCMP_CMP_EQ, 8));
	/* every verbs command through rdma-core's ioctl path, on cmd_fd only */
	/* (the kernel reads the request as 32 bits: the high half is free) */
	ALLOW_ON(p->cmd_fd, ioctl,
		 SCMP_A1_64(SCMP_CMP_MASKED_EQ, 0xffffffffULL,
			    SANDBOX_RDMA_VERBS_IOCTL));
	/* the event loop, and only its own epoll instance */
	ALLOW_ON(p->epoll_fd, epoll_ctl);
	ALLOW_ON(p->epoll_fd, epoll_wait);
	ALLOW_ON(p->epoll_fd, epoll_pwait);
	/* the same with a timespec: the loop's sub-millisecond sleeps */
	ALLOW_ON(p->epoll_fd, epoll_pwait2);
	/* fds the frontend replaces or the worker tears down */
	ALLOW(close);
	/* guest memfd size checks: glibc's fstat() is fstatat(fd, "", ...) */
	ALLOW(fstat);
	ALLOW(newfstatat, SCMP_A3_32(SCMP_CMP_EQ, AT_EMPTY_PATH));
	/* O_NONBLOCK on received kick fds; FD_CLOEXEC checks */
	ALLOW(fcntl, SCMP_A1_32(SCMP_CMP_EQ, F_GETFL));
	ALLOW(fcntl, SCMP_A1_32(SCMP_CMP_EQ, F_SETFL));
	ALLOW(fcntl, SCMP_A1_32(SCMP_CMP_EQ, F_GETFD));
	ALLOW(fcntl, SCMP_A1_32(SCMP_CMP_EQ, F_SETFD));
	/*
	 * guest_mem keeps its own close-on-exec copy of each region's memfd
	 * for MR remapping; a copy of an fd already held grants nothing new
	 * (plain F_DUPFD, dup, dup2 and dup3 stay forbidden)
	 */
	ALLOW(fcntl, SCMP_A1_32(SCMP_CMP_EQ, F_DUPFD_CLOEXEC));
	/*
	 * guest memory must be shared memory: F_GET_SEALS succeeds on shmem
	 * (memfd, tmpfs) and hugetlbfs files only; reading an fd's seals
	 * grants nothing
	 */
	ALLOW(fcntl, SCMP_A1_32(SCMP_CMP_EQ, F_GET_SEALS));
	return ret;
}

/* The vhost-user channel: messages with SCM_RIGHTS, replies. */
static int allow_vhost_user(scmp_filter_ctx ctx,
			    const struct sandbox_worker_params *p)
{
	/* the broker's connection is accepted later: its fd is not known */
	int vu = p->vu_fd >= 0 && p->broker_fd < 0 ? p->vu_fd : SB_ANY_FD;
	int ret = 0;

	/* message headers with their fds */
	ALLOW_ON(vu, recvmsg);
	/* payloads (recv) */
	ALLOW_ON(vu, recvfrom, SCMP_A4_64(SCMP_CMP_EQ, 0));
	/* replies (send), with fds (sendmsg) for backend requests */
	ALLOW_ON(vu, sendto, SCMP_A4_64(SCMP_CMP_EQ, 0));
	ALLOW_ON(vu, sendmsg);
	/* a receive timeout so that a stalled frontend cannot wedge it */
	ALLOW_ON(vu, setsockopt, SCMP_A1_32(SCMP_CMP_EQ, SOL_SOCKET),
		 SCMP_A2_32(SCMP_CMP_EQ, SO_RCVTIMEO));
	ALLOW_ON(vu, setsockopt, SCMP_A1_32(SCMP_CMP_EQ, SOL_SOCKET),
		 SCMP_A2_32(SCMP_CMP_EQ, SO_SNDTIMEO));
	/* the next frontend, when the worker keeps its listening socket */
	ALLOW_ON(p->listen_fd, accept4);
	if (p->broker_fd < 0)
		return ret;
	/* the broker channel: a (re)connecting broker, checked to be root */
	ALLOW_ON(p->broker_fd, accept4);
	ALLOW(getsockopt, SCMP_A1_32(SCMP_CMP_EQ, SOL_SOCKET),
	      SCMP_A2_32(SCMP_CMP_EQ, SO_PEERCRED));
	/* a GID request waits on the channel alone, not the event loop */
	ALLOW(poll);
	ALLOW(ppoll);
	return ret;
}

/* What glibc and the process itself need to run and to end. */
static int allow_process(scmp_filter_ctx ctx)
{
	int ret = 0;

	/* pthread mutexes in rdma-core when contended */
	ALLOW(futex);
	/* clock_gettime without the vDSO (the vDSO makes no syscall) */
	ALLOW(clock_gettime);
	ALLOW(gettimeofday);
	/* return from a signal handler (debug mode's SIGSYS, SIGPIPE) */
	ALLOW(rt_sigreturn);
	/* the kernel restarts interrupted sleeps through it */
	ALLOW(restart_syscall);
	/* abort(): block signals, find itself, SIGABRT to itself only */
	ALLOW(rt_sigprocmask);
	ALLOW(getpid);
	ALLOW(gettid);
	ALLOW(tgkill, SCMP_A2_32(SCMP_CMP_EQ, SIGABRT));
	/* exit() and the end of the process */
	ALLOW(exit_group);
	ALLOW(exit);
	return ret;
}

#if defined(__SANITIZE_ADDRESS__)
/*
 * ASan builds only (./dev test --asan; never a release build): the
 * sanitizer runtime's allocator and its error path.  The golden PFC test
 * skips in such a build, since these rules are not in the golden file.
 */
static int allow_sanitizer(scmp_filter_ctx ctx)
{
	int ret = 0;

	/* shadow memory of new allocations */
	ALLOW(madvise, SCMP_A2_32(SCMP_CMP_EQ, MADV_NOHUGEPAGE));
	/* (MADV_DONTDUMP, which it uses too, is in the normal list) */
	/* its SIGABRT/SIGSEGV handlers run on their own stack */
	ALLOW(sigaltstack);
	return ret;
}
#else
static int allow_sanitizer(scmp_filter_ctx ctx)
{
	return 0;
}
#endif

static int sb_native_arch_ok(void)
{
	uint32_t a = seccomp_arch_native();

	if (a == SCMP_ARCH_X86_64 || a == SCMP_ARCH_AARCH64)
		return 0;
	log_warnx("sandbox: the worker's syscall list was reviewed for "
		  "x86_64 and aarch64 only; refusing to build it for seccomp "
		  "arch %#x",
		  a);
	return -ENOTSUP;
}

static int sb_params_ok(const struct sandbox_worker_params *p)
{
	if (p->log_fd < 0 || p->epoll_fd < 0) {
		log_warnx("sandbox: log_fd and epoll_fd are required "
			  "(got %d and %d)",
			  p->log_fd, p->epoll_fd);
		return -EINVAL;
	}
	return 0;
}

/* Builds the filter of p; *ret_ctx is the caller's on success. */
static int sb_build(const struct sandbox_worker_params *p,
		    scmp_filter_ctx *ret_ctx)
{
	scmp_filter_ctx ctx;
	int ret;

	ret = sb_native_arch_ok();
	if (ret == 0)
		ret = sb_params_ok(p);
	if (ret < 0)
		return ret;
	ctx = seccomp_init(p->debug ? SCMP_ACT_TRAP : SCMP_ACT_KILL_PROCESS);
	if (!ctx) {
		log_warnx("sandbox: seccomp_init failed");
		return -ENOMEM;
	}
	/* Another ABI (i386 int 0x80, x32) never reaches the rules. */
	ret = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH,
			       SCMP_ACT_KILL_PROCESS);
	if (ret == 0)
		ret = allow_memory(ctx);
	if (ret == 0)
		ret = allow_fds(ctx, p);
	if (ret == 0)
		ret = allow_vhost_user(ctx, p);
	if (ret == 0)
		ret = allow_process(ctx);
	if (ret == 0)
		ret = allow_sanitizer(ctx);
	if (ret < 0) {
		seccomp_release(ctx);
		return ret;
	}
	*ret_ctx = ctx;
	return 0;
}

/* ---- debug mode ------------------------------------------------------ */

static int sb_trap_fd = 2;

/* Async-signal-safe decimal/hex formatting into a line. */
static size_t sb_put_num(char *b, size_t at, unsigned long v, unsigned int base)
{
	char tmp[24];
	size_t n = 0;

	do {
		tmp[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v && n < sizeof(tmp));
	while (n)
		b[at++] = tmp[--n];
	return at;
}

static size_t sb_put_str(char *b, size_t at, const char *s)
{
	size_t n = strlen(s);

	memcpy(b + at, s, n);
	return at + n;
}

static void sb_set_return(void *uctx, long v)
{
	ucontext_t *uc = uctx;

#if defined(__x86_64__)
	uc->uc_mcontext.gregs[REG_RAX] = v;
#elif defined(__aarch64__)
	uc->uc_mcontext.regs[0] = (unsigned long)v;
#else
	(void)uc;
	(void)v;
#endif
}

/*
 * Debug mode: say which syscall the filter refused, then let it fail with
 * ENOSYS so that the run goes on to the next missing one.
 */
static void sb_sigsys(int sig, siginfo_t *si, void *uctx)
{
	char b[160];
	size_t n = 0;
	int saved = errno;

	n = sb_put_str(b, n, "sandbox: debug: forbidden syscall ");
	n = sb_put_num(b, n, (unsigned int)si->si_syscall, 10);
	n = sb_put_str(b, n, " (arch 0x");
	n = sb_put_num(b, n, si->si_arch, 16);
	n = sb_put_str(b, n,
		       "); "
		       "failing it with ENOSYS\n");
	if (write(sb_trap_fd, b, n) < 0)
		saved = errno;
	sb_set_return(uctx, -ENOSYS);
	errno = saved;
}

static int sb_install_trap(int log_fd)
{
	struct sigaction sa = { .sa_flags = SA_SIGINFO };

	sb_trap_fd = log_fd;
	sa.sa_sigaction = sb_sigsys;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSYS, &sa, NULL) < 0) {
		log_warn("sandbox: SIGSYS handler");
		return -errno;
	}
	log_warnx("sandbox: DEBUG mode: forbidden syscalls are logged and "
		  "fail with ENOSYS instead of killing the worker");
	return 0;
}

/* ---- public entry points --------------------------------------------- */

int sandbox_install_worker_filter(const struct sandbox_worker_params *p)
{
	scmp_filter_ctx ctx;
	int ret;

	ret = sb_build(p, &ctx);
	if (ret < 0)
		return ret;
	if (p->debug) {
		ret = sb_install_trap(p->log_fd);
		if (ret < 0)
			goto out;
	}
	/* libseccomp sets no_new_privs first (SCMP_FLTATR_CTL_NNP). */
	ret = seccomp_load(ctx);
	if (ret < 0)
		log_warnx("sandbox: loading the seccomp filter: %s",
			  strerror(-ret));
out:
	seccomp_release(ctx);
	return ret;
}

int sandbox_export_pfc(const struct sandbox_worker_params *p, int fd)
{
	scmp_filter_ctx ctx;
	int ret;

	ret = sb_build(p, &ctx);
	if (ret < 0)
		return ret;
	ret = seccomp_export_pfc(ctx, fd);
	if (ret < 0)
		log_warnx("sandbox: exporting the filter: %s", strerror(-ret));
	seccomp_release(ctx);
	return ret;
}

void sandbox_worker_params_init(struct sandbox_worker_params *p)
{
	*p = (struct sandbox_worker_params){
		.cmd_fd = -1,
		.epoll_fd = -1,
		.vu_fd = -1,
		.listen_fd = -1,
		.broker_fd = -1,
		.log_fd = 2,
		.debug = false,
	};
}
