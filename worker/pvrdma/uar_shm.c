// SPDX-License-Identifier: MIT
/*
 * Runs before the sandbox: the PVRDMA function's UAR BAR as shared memory
 * (a sealed memfd) that the vfio-user client maps straight into the
 * guest, so that a doorbell is a store with no exit and no message
 * (docs/pvrdma.md, "Doorbells in shared memory").  The device reads it
 * in dev_data.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/pvrdma_abi.h"
#include "worker/pvrdma/pvrdma.h"

int pvrdma_uar_shm_open(struct pvrdma_cfg *cfg, struct reason *why)
{
	_cleanup_close_ int fd = -1;
	void *p;

	fd = memfd_create("rdmagate-pvrdma-uar",
			  MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return reason_fail(why, -errno, "memfd_create: %m");
	if (ftruncate(fd, PVRDMA_BAR2_UAR_SIZE) < 0)
		return reason_fail(why, -errno, "sizing the UAR memfd: %m");
	/*
	 * The client gets this fd: a client that could shrink it would make
	 * the worker's next doorbell read a SIGBUS.
	 */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) <
	    0)
		return reason_fail(why, -errno, "sealing the UAR memfd: %m");
	p = mmap(NULL, PVRDMA_BAR2_UAR_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		 fd, 0);
	if (p == MAP_FAILED)
		return reason_fail(why, -errno, "mapping the UAR memfd: %m");
	cfg->uar = p;
	cfg->uar_fd = TAKE_FD(fd);
	return 0;
}
