/* SPDX-License-Identifier: MIT */
/*
 * The checks of the rdma-worker vm test programs: a case function returns
 * 1 at the first failed check, after a TAP comment naming it.
 */
#ifndef RDMAGATE_TESTS_VM_RDMA_WORKER_CHECK_H
#define RDMAGATE_TESTS_VM_RDMA_WORKER_CHECK_H

#include <stdio.h>

#define CHECK(c)                                                               \
	do {                                                                   \
		if (!(c)) {                                                    \
			printf("# %s:%d: check failed: %s\n", __FILE__,        \
			       __LINE__, #c);                                  \
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
