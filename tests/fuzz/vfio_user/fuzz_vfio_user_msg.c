// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the worker's vfio-user core and PCI function layer:
 * the input is a script of client messages (with real fds: memfds for
 * DMA_MAP, eventfds otherwise), device interrupts and guest-memory writes,
 * run against a fresh transport test function (whose DMA engine walks the
 * mapped regions).  A leaked fd is reported as a crash.
 *
 * Script ops (first byte % 3):
 *   0 message: fd count byte, 16-byte header, then min(size - 16, rest)
 *              payload bytes (only the header when size is out of range,
 *              as the event loop does);
 *   1 raise:   2-byte MSI-X vector;
 *   2 write:   2-byte RAM offset, length byte, that many bytes.
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
#include "worker/vfio_user/vfu_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define RAM_SIZE 0x10000u

static int ram_fd = -1;
static uint8_t *ram;

static void init(void)
{
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

	ram_fd = memfd_create("fuzz-ram", MFD_CLOEXEC);
	if (null < 0 || ram_fd < 0 || ftruncate(ram_fd, RAM_SIZE) < 0)
		abort();
	ram = mmap(NULL, RAM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, ram_fd,
		   0);
	if (ram == MAP_FAILED)
		abort();
	log_init("fuzz", LOG_LVL_WARN);
	log_set_fd(null);
}

/* Lowest free fd number: unchanged across an input unless one leaked. */
static int lowest_free_fd(void)
{
	int fd = dup(0);

	if (fd < 0)
		abort();
	close(fd);
	return fd;
}

struct cursor {
	const uint8_t *p;
	size_t left;
};

static bool take(struct cursor *c, void *out, size_t n)
{
	if (c->left < n)
		return false;
	memcpy(out, c->p, n);
	c->p += n;
	c->left -= n;
	return true;
}

static void do_message(struct vfu_dev *dev, struct cursor *c,
		       struct vfu_result *res)
{
	static uint8_t buf[VFIO_USER_MAX_MSG];
	struct vfio_user_header h;
	int fds[VFIO_USER_MAX_FDS];
	unsigned int nfds, i;
	uint8_t b;
	size_t n = 0;

	if (!take(c, &b, 1) || !take(c, &h, sizeof(h)))
		return;
	nfds = b % (VFIO_USER_MAX_FDS + 1);
	if (h.size >= sizeof(h) && h.size <= VFIO_USER_MAX_MSG) {
		n = h.size - sizeof(h);
		if (n > c->left)
			n = c->left;
	}
	memcpy(buf, &h, sizeof(h));
	take(c, buf + sizeof(h), n);
	for (i = 0; i < nfds; i++) {
		fds[i] = h.command == VFIO_USER_DMA_MAP
				 ? dup(ram_fd)
				 : eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (fds[i] < 0)
			abort();
	}
	vfu_handle(dev, buf, sizeof(h) + n, fds, nfds, res);
	if (res->reply_len > sizeof(res->reply))
		abort();
	if (res->reply_len &&
	    (res->reply.hdr.size != res->reply_len ||
	     res->reply.hdr.msg_id != h.msg_id))
		abort();
}

static void do_write(struct cursor *c)
{
	uint16_t off;
	uint8_t len;

	if (!take(c, &off, 2) || !take(c, &len, 1))
		return;
	if (len > c->left)
		len = (uint8_t)c->left;
	if ((size_t)off + len > RAM_SIZE)
		len = (uint8_t)(RAM_SIZE - off);
	take(c, ram + off, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct vfu_result res;
	struct cursor c = { data, size };
	struct vfu_dev *dev;
	uint16_t vec;
	uint8_t op;
	int free_fd;

	if (!ram)
		init();
	free_fd = lowest_free_fd();
	memset(ram, 0, RAM_SIZE);
	if (vfu_dev_new(&pci_test_fn_ops, NULL, &dev) < 0)
		abort();
	while (take(&c, &op, 1)) {
		switch (op % 3) {
		case 0:
			do_message(dev, &c, &res);
			break;
		case 1:
			if (take(&c, &vec, 2))
				pci_fn_raise(&dev->fn, vec);
			break;
		default:
			do_write(&c);
			break;
		}
	}
	vfu_dev_free(dev);
	/* Every fd handed to the core must have been kept and now closed. */
	if (lowest_free_fd() != free_fd)
		abort();
	return 0;
}
