/* SPDX-License-Identifier: MIT */
/*
 * The checks of the C test cases that report TAP (tests/host/harness.h,
 * the rdma-worker vm tests): a case function returns 1 at the first failed
 * check, after a TAP comment naming it.
 */
#ifndef RDMAGATE_TESTS_CHECK_H
#define RDMAGATE_TESTS_CHECK_H

#include <stdio.h>
#include <string.h>

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			printf("# %s:%d: check failed: %s\n", __FILE__,        \
			       __LINE__, #cond);                               \
			return 1;                                              \
		}                                                              \
	} while (0)

/* expr returns 0 or -errno. */
#define CHECK_OK(expr)                                                         \
	do {                                                                   \
		int r_ = (expr);                                               \
		if (r_) {                                                      \
			printf("# %s:%d: %s: %s\n", __FILE__, __LINE__, #expr, \
			       strerror(r_ < 0 ? -r_ : r_));                   \
			return 1;                                              \
		}                                                              \
	} while (0)

#define CHECK_ERR(expr, err)                                                   \
	do {                                                                   \
		int r_ = (expr);                                               \
		if (r_ != (err)) {                                             \
			printf("# %s:%d: %s returned %d (%s), expected %s\n",  \
			       __FILE__, __LINE__, #expr, r_,                  \
			       strerror(r_ < 0 ? -r_ : r_), #err);             \
			return 1;                                              \
		}                                                              \
	} while (0)

#define CHECK_EQ(a, b)                                                         \
	do {                                                                   \
		long long a_ = (long long)(a), b_ = (long long)(b);            \
		if (a_ != b_) {                                                \
			printf("# %s:%d: %s = %lld, expected %s = %lld\n",     \
			       __FILE__, __LINE__, #a, a_, #b, b_);            \
			return 1;                                              \
		}                                                              \
	} while (0)

#endif
