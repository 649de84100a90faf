// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the vhost-user protocol core: the input is a
 * script of frontend messages (with real fds: memfds for memory requests,
 * eventfds otherwise), kicks, guest-memory writes and polls, run against a
 * fresh echo device.  A leaked fd is reported as a crash.
 *
 * Script ops (first byte % 4):
 *   0 message: fd count byte, 12-byte header, then min(size, rest) bytes;
 *   1 kick:    queue byte;
 *   2 write:   2-byte RAM offset, length byte, that many bytes;
 *   3 poll: the rings without a kick fd, then the device's own poll
 *     round (the echo device's chains left over its per-kick budget).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/log.h"
#include "tests/fuzz/fuzz_script.h"
#include "worker/vhost_user/device.h"
#include "worker/vhost_user/vu_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define RAM_SIZE 0x10000u

static int ram_fd = -1;
static uint8_t *ram;

static int watch(void *ctx, unsigned int q, int fd)
{
	return (q & 7) == 7 ? -EPERM : 0; /* exercise the failure path too */
}

static void unwatch(void *ctx, unsigned int q, int fd)
{
}

static const struct vu_host_ops host = { watch, unwatch };

static bool is_mem_request(uint32_t req)
{
	return req == VHOST_USER_SET_MEM_TABLE ||
	       req == VHOST_USER_ADD_MEM_REG || req == VHOST_USER_REM_MEM_REG;
}

static void do_message(struct vu_dev *dev, struct cursor *c)
{
	uint8_t buf[sizeof(struct vhost_user_msg)];
	struct vhost_user_header h;
	int fds[VHOST_USER_MAX_FDS];
	struct vu_result res;
	unsigned int nfds, i;
	uint8_t b;
	size_t n;

	if (!take(c, &b, 1) || !take(c, &h, sizeof(h)))
		return;
	nfds = b % (VHOST_USER_MAX_FDS + 1);
	n = h.size < c->left ? h.size : c->left;
	if (n > VHOST_USER_MAX_PAYLOAD)
		n = 0; /* the event loop passes only the header then */
	memcpy(buf, &h, sizeof(h));
	take(c, buf + sizeof(h), n);
	for (i = 0; i < nfds; i++) {
		fds[i] = is_mem_request(h.request) ? dup(ram_fd)
						   : eventfd(0, EFD_CLOEXEC);
		if (fds[i] < 0)
			abort();
	}
	vu_handle(dev, buf, sizeof(h) + n, fds, nfds, &res);
	if (res.reply_len > sizeof(res.reply))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cursor c = { data, size };
	struct vu_dev *dev;
	uint8_t op, q;
	int free_fd;

	if (!ram)
		ram = fuzz_ram_init(RAM_SIZE, &ram_fd);
	free_fd = lowest_free_fd();
	memset(ram, 0, RAM_SIZE);
	if (vu_dev_new(&echo_device_ops, &host, NULL, &dev) < 0)
		abort();
	while (take(&c, &op, 1)) {
		switch (op % 4) {
		case 0:
			do_message(dev, &c);
			break;
		case 1:
			if (take(&c, &q, 1))
				vu_kick(dev, q);
			break;
		case 2:
			fuzz_ram_write(&c, ram, RAM_SIZE);
			break;
		default:
			vu_poll(dev);
			if (dev->ops->wants_poll &&
			    dev->ops->wants_poll(dev->priv))
				dev->ops->poll(dev->priv);
			break;
		}
	}
	vu_dev_free(dev);
	/* Every fd handed to the core must have been kept and now closed. */
	if (lowest_free_fd() != free_fd)
		abort();
	return 0;
}
