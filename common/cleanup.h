/* SPDX-License-Identifier: MIT */
/*
 * Scope-based cleanup helpers in systemd's style: _cleanup_free_ and
 * _cleanup_close_ release on every return path; TAKE_PTR()/TAKE_FD() hand
 * ownership out of the scope.
 */
#ifndef RDMAGATE_COMMON_CLEANUP_H
#define RDMAGATE_COMMON_CLEANUP_H

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

static inline void freep(void *p)
{
	free(*(void **)p);
}

/* close() that keeps errno, for cleanup paths. Returns -1 for reuse. */
static inline int safe_close(int fd)
{
	if (fd >= 0) {
		int saved = errno;
		close(fd);
		errno = saved;
	}
	return -1;
}

static inline void closep(int *fd)
{
	safe_close(*fd);
}

#define _cleanup_(f)	__attribute__((cleanup(f)))
#define _cleanup_free_	_cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)

#define TAKE_PTR(p)                                                            \
	({                                                                     \
		__typeof__(p) _tp_ = (p);                                      \
		(p) = NULL;                                                    \
		_tp_;                                                          \
	})
#define TAKE_FD(fd)                                                            \
	({                                                                     \
		int _tf_ = (fd);                                               \
		(fd) = -1;                                                     \
		_tf_;                                                          \
	})

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
