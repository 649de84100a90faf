/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the script-driven libFuzzer targets (fuzz_vu_msg.c,
 * vfio_user/fuzz_vfio_user_msg.c): a cursor over the input, a memfd guest
 * RAM, guest-memory write ops, logs to /dev/null, and the fd-leak check.
 * Header-only: each target compiles its own copy with its own flags.
 */
#ifndef RDMAGATE_TESTS_FUZZ_SCRIPT_H
#define RDMAGATE_TESTS_FUZZ_SCRIPT_H

#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/log.h"

struct cursor {
	const uint8_t *p;
	size_t left;
};

/* Copies the next n input bytes to out; false (nothing taken) at the end. */
static inline bool take(struct cursor *c, void *out, size_t n)
{
	if (c->left < n)
		return false;
	memcpy(out, c->p, n);
	c->p += n;
	c->left -= n;
	return true;
}

/* Lowest free fd number: unchanged across an input unless one leaked. */
static inline int lowest_free_fd(void)
{
	int fd = dup(0);

	if (fd < 0)
		abort();
	close(fd);
	return fd;
}

/* Once per process: a shared memfd RAM of size bytes, logs silenced. */
static inline uint8_t *fuzz_ram_init(size_t size, int *ret_fd)
{
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	int fd = memfd_create("fuzz-ram", MFD_CLOEXEC);
	uint8_t *ram;

	if (null < 0 || fd < 0 || ftruncate(fd, (off_t)size) < 0)
		abort();
	ram = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (ram == MAP_FAILED)
		abort();
	log_init("fuzz", LOG_LVL_WARN);
	log_set_fd(null);
	*ret_fd = fd;
	return ram;
}

/* The write op: 2-byte RAM offset, length byte, that many bytes. */
static inline void fuzz_ram_write(struct cursor *c, uint8_t *ram, size_t size)
{
	uint16_t off;
	uint8_t len;

	if (!take(c, &off, 2) || !take(c, &len, 1))
		return;
	if (len > c->left)
		len = (uint8_t)c->left;
	if ((size_t)off + len > size)
		len = (uint8_t)(size - off);
	take(c, ram + off, len);
}

#endif
