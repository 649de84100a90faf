/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the vfio-user host tests (prefix vft_; tests/vm/lib's vt_ is
 * the VM tests'): a client on the worker's test function
 * (worker/vfio_user/test_fn.h), guest RAM, expected refusals.
 */
#ifndef RDMAGATE_TESTS_HOST_VFIO_USER_VFU_TEST_H
#define RDMAGATE_TESTS_HOST_VFIO_USER_VFU_TEST_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "guest/guest_ram.h"
#include "guest/vfio_user_client.h"
#include "tests/host/harness.h"
#include "worker/vfio_user/test_fn.h"

/* Guest RAM layout: 4 MiB at GPA 0, 4 MiB at 4 GiB (slots 0 and 1). */
#define VFT_RAM_SIZE (4ull << 20)
#define VFT_HIGH_GPA (4ull << 30)

/* A client closed, and guest RAM released, on every return path. */
static inline void vft_client_close(struct vfio_user_client *c)
{
	vfio_user_client_close(c);
}
#define CLIENT(c)                                                              \
	__attribute__((cleanup(                                                \
		vft_client_close))) struct vfio_user_client c = { .fd = -1 }
static inline void vft_ram_release(struct guest_ram *r)
{
	guest_ram_release(r);
}
#define RAM(r) __attribute__((cleanup(vft_ram_release))) struct guest_ram r

/* Connects to w and runs QEMU's realize sequence (vfio_user_client_init). */
int vft_connect(struct vfio_user_client *c, struct worker *w);
/* Connects without any message (for tests that start with garbage). */
int vft_connect_raw(struct vfio_user_client *c, struct worker *w);
/* The RAM layout above. */
int vft_ram(struct guest_ram *ram);
/* vft_ram, vft_connect, then the RAM mapped for DMA: a working session. */
int vft_session(struct vfio_user_client *c, struct guest_ram *ram,
		struct worker *w);
/* A test function register (BAR0) read / posted write. */
int vft_reg(struct vfio_user_client *c, uint64_t off, uint32_t *ret_val);
int vft_reg_write(struct vfio_user_client *c, uint64_t off, uint32_t val);
/*
 * Copies len bytes src -> dst with the test function's DMA engine (then
 * raises TFN_REG_DMA_VEC if set); *ret_status is its STATUS (-errno).
 */
int vft_dma_copy(struct vfio_user_client *c, uint64_t src, uint64_t dst,
		 uint32_t len, uint32_t *ret_status);
/*
 * Sends a request with `len` payload bytes and `nfds` fds and checks that
 * the worker answered it with an error reply carrying errno `err`.
 */
int vft_refused(struct vfio_user_client *c, uint16_t command,
		const void *payload, uint32_t len, const int *fds,
		unsigned int nfds, uint32_t err);
/* True if the worker closed the connection within the timeout. */
bool vft_hung_up(struct vfio_user_client *c);
/* Open fds of process pid, or -errno. */
int vft_fd_count(pid_t pid);

/* Fails the case unless expr refused with errno err (-EREMOTEIO). */
#define CHECK_REFUSED(c, expr, err)                                            \
	do {                                                                   \
		CHECK_ERR((expr), -EREMOTEIO);                                 \
		if ((c)->last_error != (uint32_t)(err)) {                      \
			printf("# %s:%d: refused with errno %u, expected "     \
			       "%s\n",                                         \
			       __FILE__, __LINE__, (c)->last_error, #err);     \
			return 1;                                              \
		}                                                              \
	} while (0)

#endif
