/* SPDX-License-Identifier: MIT */
/*
 * What the decoder fuzz targets share: FUZZ_CHECK (a failed property is a
 * crash libFuzzer keeps), the entry point's prototype, and a fake guest
 * RAM made of the input for the page-table walks (pvrdma pdir, mr_pt).
 * Header-only: each target compiles its own copy with its own flags.
 */
#ifndef RDMAGATE_TESTS_FUZZ_CHECK_H
#define RDMAGATE_TESTS_FUZZ_CHECK_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define FUZZ_CHECK(x)                                                          \
	do {                                                                   \
		if (!(x))                                                      \
			__builtin_trap();                                      \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Guest RAM: len input bytes at GPA base; nothing else is backed. */
struct fuzz_ram {
	const uint8_t *mem;
	size_t len;
	uint64_t base;
};

/* A read_gpa op over struct fuzz_ram: -EFAULT outside the backed bytes. */
static inline int fuzz_ram_read(void *ctx, uint64_t gpa, void *buf, size_t len)
{
	const struct fuzz_ram *r = ctx;

	if (gpa < r->base || gpa - r->base > r->len ||
	    len > r->len - (gpa - r->base))
		return -EFAULT;
	memcpy(buf, r->mem + (gpa - r->base), len);
	return 0;
}

/* The 8-byte table entry at gpa; it must be backed (the walk read it). */
static inline uint64_t fuzz_ram_u64(const struct fuzz_ram *r, uint64_t gpa)
{
	uint64_t v;

	FUZZ_CHECK(fuzz_ram_read((void *)r, gpa, &v, sizeof(v)) == 0);
	return v;
}

#endif
