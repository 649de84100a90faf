/* SPDX-License-Identifier: MIT */
/*
 * The seam between the worker's event loop (main.c) and its two
 * transports: one const ops table per transport, like struct device_ops
 * (vhost_user/device.h) is one per device.  The loop owns the sockets,
 * epoll and the polling policy; a transport owns one VMM connection: it
 * reads and serves its messages, its device model's rings or doorbells,
 * and tells the loop when to poll.  All callbacks run on the worker's one
 * thread.
 *
 *   vhost_user_transport  vhost_user/conn.c  model: struct device_ops
 *                                            (virtio-rdma, echo)
 *   vfio_user_transport   vfio_user/conn.c   model: struct pci_fn_ops
 *                                            (PVRDMA, pci-test)
 *
 * The helpers below are the two transports' shared connection glue: one
 * way to read a framed message with its fds, one way to send a reply.
 */
#ifndef RDMAGATE_WORKER_TRANSPORT_H
#define RDMAGATE_WORKER_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "worker/dev_env.h"

/* What the loop gives a transport's connection. */
struct tp_env {
	const struct dev_env *dev; /* handed on to the device model */
	/* the loop's watching of ring kick eventfds (vhost-user) */
	int (*watch_kick)(void *loop_ctx, unsigned int q, int fd);
	void (*unwatch_kick)(void *loop_ctx, unsigned int q, int fd);
};

struct transport_ops {
	const char *name; /* "vhost-user", "vfio-user" */
	/*
	 * A connection on socket cfd (still the caller's) serving the device
	 * model (the transport's type, above).  0 or -errno.
	 */
	int (*open)(const void *model, const struct tp_env *env, int cfd,
		    void **ret_conn);
	/*
	 * Reads and serves one message.  0 to keep the connection, or -errno
	 * (-EPIPE: the peer hung up) when the loop must close it.
	 */
	int (*readable)(void *conn);
	/* Drops the device, guest memory and every fd but cfd; frees conn. */
	void (*close)(void *conn);
	/* Kick fd q fired (NULL: the transport watches none). */
	void (*kick)(void *conn, unsigned int q);
	/* How long the loop may sleep before poll(), in ns; -1: no limit. */
	int64_t (*poll_timeout_ns)(const void *conn);
	/* True: the loop must not sleep (the device busy-polls). */
	bool (*wants_poll)(const void *conn);
	/*
	 * After every round of events; timed: poll_timeout_ns() gave a limit
	 * before it.  Returns the work found (counted as events).
	 */
	unsigned int (*poll)(void *conn, bool timed);
};

extern const struct transport_ops vhost_user_transport;
extern const struct transport_ops vfio_user_transport;

/* Fds one message may carry, in either protocol (checked where each
 * protocol's limit is defined into its framing). */
#define TP_MAX_FDS 8

/* What a protocol core answers one message with. */
struct tp_reply {
	const void *bytes;
	size_t len; /* 0: nothing to send */
	int fd;	    /* sent with the reply, or -1 */
	bool disconnect;
};

/* How a transport frames and serves its messages, for tp_readable(). */
struct tp_framing {
	const char *peer; /* in log lines: "frontend", "vfio-user client" */
	size_t hdr_len;
	unsigned int max_fds; /* <= TP_MAX_FDS */
	/*
	 * The bytes after the header that header announces, or -1 if its
	 * size field is out of range (the protocol core reports that).
	 */
	ssize_t (*body_len)(const uint8_t *hdr);
	/*
	 * The protocol core: serves the len bytes in buf with the fds
	 * (now the core's), and says what to send back in *out.
	 */
	void (*handle)(void *conn, const uint8_t *buf, size_t len, int *fds,
		       unsigned int nfds, struct tp_reply *out);
};

/*
 * Reads one message off fd into buf (the header with its fds, then the
 * body unless the size field is out of range), has f->handle() serve it
 * and sends the reply.  Returns 0 to keep the connection, or -errno: the
 * peer hung up (-EPIPE), broke the framing or the core asked to
 * disconnect (-EPROTO), or a read or send failed (logged, with what the
 * peer did wrong).
 */
int tp_readable(int fd, uint8_t *buf, const struct tp_framing *f, void *conn);

#endif
