// SPDX-License-Identifier: MIT
/* Helpers of the vfio-user host tests (see vfu_test.h). */
#include "tests/host/vfio_user/vfu_test.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <sys/socket.h>

int vft_connect_raw(struct vfio_user_client *c, struct worker *w)
{
	return vfio_user_client_connect(c, w->sock, H_TIMEOUT_MS);
}

int vft_connect(struct vfio_user_client *c, struct worker *w)
{
	int r = vft_connect_raw(c, w);

	if (r)
		return r;
	r = vfio_user_client_init(c);
	if (r)
		vfio_user_client_close(c);
	return r;
}

int vft_ram(struct guest_ram *ram)
{
	int r;

	guest_ram_init(ram);
	r = guest_ram_add_region(ram, 0, VFT_RAM_SIZE, GUEST_PAGE_4K);
	if (r >= 0)
		r = guest_ram_add_region(ram, VFT_HIGH_GPA, VFT_RAM_SIZE,
					 GUEST_PAGE_4K);
	return r < 0 ? r : 0;
}

int vft_session(struct vfio_user_client *c, struct guest_ram *ram,
		struct worker *w)
{
	int r = vft_ram(ram);

	if (!r)
		r = vft_connect(c, w);
	if (!r)
		r = vfio_user_client_map_ram(c, ram);
	return r;
}

int vft_reg(struct vfio_user_client *c, uint64_t off, uint32_t *ret_val)
{
	uint64_t v;
	int r = vfio_user_client_bar_read(c, 0, off, 4, &v);

	if (!r)
		*ret_val = (uint32_t)v;
	return r;
}

int vft_reg_write(struct vfio_user_client *c, uint64_t off, uint32_t val)
{
	return vfio_user_client_bar_write(c, 0, off, 4, val);
}

int vft_dma_copy(struct vfio_user_client *c, uint64_t src, uint64_t dst,
		 uint32_t len, uint32_t *ret_status)
{
	int r = vfio_user_client_bar_write(c, 0, TFN_REG_DMA_SRC, 8, src);

	if (!r)
		r = vfio_user_client_bar_write(c, 0, TFN_REG_DMA_DST, 8, dst);
	if (!r)
		r = vft_reg_write(c, TFN_REG_DMA_LEN, len);
	if (!r)
		r = vft_reg_write(c, TFN_REG_DMA_GO, 1);
	if (!r)
		r = vft_reg(c, TFN_REG_STATUS, ret_status);
	return r;
}

int vft_refused(struct vfio_user_client *c, uint16_t command,
		const void *payload, uint32_t len, const int *fds,
		unsigned int nfds, uint32_t err)
{
	uint8_t reply[VFIO_USER_MAX_MSG];
	int r;

	c->last_error = 0;
	r = vfio_user_client_call(c, command, payload, len, fds, nfds, reply,
				  sizeof(reply), NULL);
	if (r != -EREMOTEIO) {
		printf("# %s (%u): expected a refusal, got %d\n",
		       vfio_user_command_name(command), command, r);
		return r ? r : -EPROTO;
	}
	if (c->last_error != err) {
		printf("# %s: refused with errno %u, expected %u\n",
		       vfio_user_command_name(command), c->last_error, err);
		return -EPROTO;
	}
	return 0;
}

bool vft_hung_up(struct vfio_user_client *c)
{
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	char b;

	ssize_t n;

	if (poll(&p, 1, H_TIMEOUT_MS) != 1)
		return false;
	/* unread bytes on the worker's side make its close a reset */
	n = recv(c->fd, &b, 1, MSG_DONTWAIT);
	return n == 0 || (n < 0 && errno == ECONNRESET);
}

int vft_fd_count(pid_t pid)
{
	char path[64];
	struct dirent *e;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}
