// SPDX-License-Identifier: MIT
/*
 * The worker's seccomp allow-list under the vfio-user frontend: a whole
 * vfio-user session (handshake, DMA regions, MSI-X through eventfds, the
 * test function's DMA engine, refused requests, reset, reconnect) against
 * a worker in --sandbox-debug mode must not log a single forbidden
 * syscall, i.e. the frontend needs nothing beyond the vhost-user one; and
 * with the forbidden-syscall test hook the vfio-user worker dies of SIGSYS
 * like the vhost-user one (docs/sandbox.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/pci_regs.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "tests/host/vfio_user/vfu_test.h"

static int session(struct worker *w)
{
	uint32_t status, magic;
	uint8_t pl[16] = { 0 };
	RAM(ram);
	CLIENT(c);

	CHECK_OK(vft_session(&c, &ram, w));
	CHECK_OK(vfio_user_client_msix_enable(&c, 8));
	/* an interrupt through an eventfd the client sent */
	CHECK_OK(vft_reg_write(&c, TFN_REG_RAISE, 3));
	CHECK(vfio_user_client_irq_wait(&c, 3, H_TIMEOUT_MS) == 1);
	/* DMA in guest memory, completion interrupt */
	CHECK_OK(guest_ram_write(&ram, 0x1000, "sandboxed", 10));
	CHECK_OK(vft_reg_write(&c, TFN_REG_DMA_VEC, 5));
	CHECK_OK(vft_dma_copy(&c, 0x1000, VFT_HIGH_GPA, 10, &status));
	CHECK(status == 0);
	CHECK(vfio_user_client_irq_wait(&c, 5, H_TIMEOUT_MS) == 1);
	CHECK(!memcmp(guest_ram_ptr(&ram, VFT_HIGH_GPA, 10), "sandboxed", 10));
	/* refusals log and reply */
	CHECK_OK(vft_refused(&c, 0x77, pl, sizeof(pl), NULL, 0, ENOTSUP));
	CHECK_OK(vft_refused(&c, VFIO_USER_DMA_MAP, pl, sizeof(pl), NULL, 0,
			     EINVAL));
	/* unmap, reset, and a new client after this one */
	CHECK_OK(vfio_user_client_dma_unmap(&c, VFT_HIGH_GPA, VFT_RAM_SIZE, 0));
	CHECK_OK(vfio_user_client_reset(&c));
	vfio_user_client_close(&c);
	CHECK_OK(vft_connect(&c, w));
	CHECK_OK(vft_reg(&c, TFN_REG_MAGIC, &magic));
	CHECK(magic == TFN_MAGIC);
	return 0;
}

static int session_needs_no_forbidden_syscall(struct worker *w)
{
	/* logged as the worker installs its filter, after it listens: a
	 * slow (sanitized) worker may not have got there yet */
	for (int t = 0; !worker_log_has(w, "sandbox in DEBUG mode"); t += 10) {
		CHECK(t < H_TIMEOUT_MS);
		usleep(10000);
	}
	CHECK_OK(session(w));
	CHECK(worker_alive(w));
	if (worker_log_has(w, "sandbox: debug: forbidden syscall ")) {
		worker_log_dump_since_mark(w);
		printf("# the vfio-user frontend made a syscall outside the "
		       "allow-list\n");
		return 1;
	}
	return 0;
}

/* Runs the worker with the test hook; 0 if it died of SIGSYS. */
static int dies_of_sigsys(const char *syscall_name)
{
	char dir[] = "/tmp/rdmagate-sbvu.XXXXXX", sock[64];
	int status;
	pid_t pid;

	if (!mkdtemp(dir))
		return -errno;
	snprintf(sock, sizeof(sock), "%s/s", dir);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0)
			dup2(null, STDERR_FILENO);
		execl(h_worker_path, h_worker_path, "--socket", sock,
		      "--frontend", "vfio-user", "--test-device", "pci-test",
		      "--test-forbidden-syscall", syscall_name, (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -errno;
	unlink(sock);
	rmdir(dir);
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS)
		return 0;
	printf("# %s: worker status 0x%x, not SIGSYS\n", syscall_name, status);
	return -EPERM;
}

static int forbidden_syscalls_kill_the_vfio_user_worker(struct worker *w)
{
	static const char *const calls[] = { "execve", "openat", "socket",
					     "ptrace", "connect" };
	size_t i;

	if (!RDMAGATE_TEST_HOOKS) {
		h_skip_reason("needs a -Dtest_hooks=true build (the "
			      "forbidden-syscall hook)");
		return H_SKIP;
	}
	for (i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		CHECK_OK(dies_of_sigsys(calls[i]));
	return 0;
}

static const struct h_case cases[] = {
	{ "session-needs-no-forbidden-syscall",
	  session_needs_no_forbidden_syscall },
	{ "forbidden-syscalls-kill-the-vfio-user-worker",
	  forbidden_syscalls_kill_the_vfio_user_worker },
};

int main(int argc, char **argv)
{
	static const char *const debug[] = { "--sandbox-debug", NULL };

	h_vfio_user = true;
	h_worker_extra_args = debug;
	return h_run(argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
