// SPDX-License-Identifier: MIT
/*
 * The shared framing of rdmagate's SOCK_SEQPACKET protocols: the table
 * lookup, the one decoder, send and receive (see common/msg_frame.h).
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/msg_frame.h"

int msg_fail(struct reason *why, int err, const char *fmt, ...)
{
	va_list ap;

	if (!why)
		return err;
	va_start(ap, fmt);
	vsnprintf(why->msg, sizeof(why->msg), fmt, ap);
	va_end(ap);
	/*
	 * A reason quotes what a peer sent and ends up in a log line and in
	 * replies: every byte outside printable ASCII becomes '?', so a
	 * peer's field can neither start a forged line nor carry a terminal
	 * escape sequence.
	 */
	for (char *c = why->msg; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e)
			*c = '?';
	return err;
}

int msg_set_str(char *field, size_t size, const char *s)
{
	size_t n = strlen(s);

	if (n >= size)
		return -ENAMETOOLONG;
	memset(field, 0, size);
	memcpy(field, s, n);
	return 0;
}

void msg_vset_text(char *field, size_t size, const char *fmt, va_list ap)
{
	memset(field, 0, size);
	vsnprintf(field, size, fmt, ap);
}

int msg_field_len(const char *f, size_t size)
{
	const char *nul = memchr(f, '\0', size);
	size_t i;

	if (!nul)
		return -EINVAL;
	for (i = (size_t)(nul - f); i < size; i++)
		if (f[i])
			return -EINVAL;
	return (int)(nul - f);
}

bool msg_all_zero(const void *p, size_t len)
{
	const uint8_t *b = p;

	while (len--)
		if (*b++)
			return false;
	return true;
}

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

bool msg_name_ok(const char *s, size_t max)
{
	size_t i;

	if (!s[0] || s[0] == '.' || s[0] == '-')
		return false;
	for (i = 0; s[i]; i++)
		if (i >= max || !name_char(s[i]))
			return false;
	return true;
}

const struct msg_type *msg_type_of(const struct msg_proto *p, uint32_t type)
{
	size_t i;

	for (i = 0; i < p->n_types; i++)
		if (p->types[i].type == type)
			return &p->types[i];
	return NULL;
}

static const char *sender(const struct msg_proto *p, uint32_t from)
{
	return p->from_name ? p->from_name(from) : "another sender";
}

int msg_decode(const struct msg_proto *p, const void *buf, size_t len,
	       void *ret, struct reason *why)
{
	return msg_decode_from(p, buf, len, 0, ret, why);
}

int msg_decode_from(const struct msg_proto *p, const void *buf, size_t len,
		    uint32_t from, void *ret, struct reason *why)
{
	_Alignas(16) uint8_t m[MSG_CONTAINER_MAX];
	const struct msg_type *t;
	struct msg_header h;
	int rc;

	if (p->container_size > sizeof(m) || p->payload_offset < sizeof(h))
		return msg_fail(why, -EINVAL, "%s: bad protocol description",
				p->name);
	if (len < sizeof(h))
		return msg_fail(why, -EBADMSG,
				"short message: %zu bytes, the header is %zu",
				len, sizeof(h));
	if (len > p->max_datagram)
		return msg_fail(why, -EMSGSIZE,
				"long message: %zu bytes, at most %zu", len,
				p->max_datagram);
	memcpy(&h, buf, sizeof(h));
	if (h.version != p->version)
		return msg_fail(why, -EPROTONOSUPPORT,
				"protocol version %u, this side speaks %u",
				h.version, p->version);
	t = msg_type_of(p, h.type);
	if (!t)
		return msg_fail(why, -EOPNOTSUPP, "unknown message type %u",
				h.type);
	if (from && t->from != from)
		return msg_fail(why, -EOPNOTSUPP, "%s: sent by %s, not by %s",
				t->name, sender(p, t->from), sender(p, from));
	if (h.len != len - sizeof(h))
		return msg_fail(why, -EBADMSG,
				"%s: header says %u payload bytes, the message "
				"has %zu",
				t->name, h.len, len - sizeof(h));
	if (h.len != t->size || p->payload_offset + t->size > p->container_size)
		return msg_fail(why, -EBADMSG,
				"%s: payload of %u bytes, it has %u", t->name,
				h.len, t->size);
	memset(m, 0, p->container_size);
	memcpy(m, &h, sizeof(h));
	memcpy(m + p->payload_offset, (const uint8_t *)buf + sizeof(h), h.len);
	rc = t->check ? t->check(m, why) : 0;
	if (rc < 0)
		return rc;
	memcpy(ret, m, p->container_size);
	return 0;
}

size_t msg_init(const struct msg_proto *p, void *m, uint32_t type)
{
	const struct msg_type *t = msg_type_of(p, type);
	struct msg_header h;

	if (!t)
		return 0;
	memset(m, 0, p->container_size);
	h.version = p->version;
	h.type = type;
	h.len = t->size;
	memcpy(m, &h, sizeof(h));
	return sizeof(h) + t->size;
}

int msg_send(const struct msg_proto *p, int fd, const void *m, int pass_fd,
	     int flags)
{
	const struct msg_header *h = m;
	struct iovec iov[2] = {
		{ (void *)m, sizeof(*h) },
		{ (uint8_t *)m + p->payload_offset, h->len },
	};
	union {
		struct cmsghdr c;
		char buf[CMSG_SPACE(sizeof(int))];
	} cm;
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
	ssize_t n;

	if (p->payload_offset + h->len > p->container_size)
		return -EINVAL;
	if (pass_fd >= 0) {
		memset(&cm, 0, sizeof(cm));
		mh.msg_control = cm.buf;
		mh.msg_controllen = sizeof(cm.buf);
		cm.c.cmsg_level = SOL_SOCKET;
		cm.c.cmsg_type = SCM_RIGHTS;
		cm.c.cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(&cm.c), &pass_fd, sizeof(int));
	}
	do
		n = sendmsg(fd, &mh, MSG_NOSIGNAL | flags);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : 0;
}

/*
 * recvmsg() of one datagram: the first max fds that came with it go to
 * fds[] (close-on-exec), the others are closed; *ret_nfds counts them all.
 * A truncated datagram closes every fd and is -EMSGSIZE.
 */
static ssize_t recv_fds(int fd, void *buf, size_t size, int *fds,
			unsigned int max, unsigned int *ret_nfds, int flags)
{
	struct iovec iov = { buf, size };
	union {
		struct cmsghdr c;
		char buf[CMSG_SPACE(4 * sizeof(int))];
	} cm;
	struct msghdr mh = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cm.buf,
		.msg_controllen = sizeof(cm.buf),
	};
	struct cmsghdr *c;
	unsigned int n_fds = 0, i;
	ssize_t n;

	do
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | flags);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	/* every fd that came along is either handed over or closed */
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		size_t j, nfd;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (j = 0; j < nfd; j++, n_fds++) {
			int f;

			memcpy(&f, CMSG_DATA(c) + j * sizeof(int), sizeof(f));
			if (n_fds < max)
				fds[n_fds] = f;
			else
				close(f);
		}
	}
	if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
		for (i = 0; i < n_fds && i < max; i++)
			close(fds[i]);
		*ret_nfds = 0;
		return -EMSGSIZE;
	}
	*ret_nfds = n_fds;
	return n;
}

ssize_t msg_recv(int fd, void *buf, size_t size, int *ret_fd, int flags)
{
	unsigned int nfds;
	int f = -1;
	ssize_t n;

	n = recv_fds(fd, buf, size, &f, ret_fd ? 1 : 0, &nfds, flags);
	if (ret_fd)
		*ret_fd = n >= 0 && nfds ? f : -1;
	return n;
}

int msg_conn_open(struct msg_conn *c, const struct msg_proto *p, int fd,
		  uint32_t from_mask, struct reason *why)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
		return msg_fail(why, -errno, "%s: SO_PEERCRED: %s", p->name,
				strerror(errno));
	if (cr.uid != 0 && from_mask && !(from_mask & ~p->root_from))
		return msg_fail(why, -EPERM,
				"%s: peer pid %d uid %u is not root", p->name,
				(int)cr.pid, (unsigned int)cr.uid);
	*c = (struct msg_conn){
		.p = p,
		.from_mask = from_mask,
		.uid = (uint32_t)cr.uid,
		.gid = (uint32_t)cr.gid,
		.pid = (int32_t)cr.pid,
	};
	return 0;
}

void msg_conn_restart(struct msg_conn *c)
{
	c->started = false;
}

/* The protocol's MSG_FIRST type, or NULL when it has none. */
static const struct msg_type *first_type(const struct msg_proto *p)
{
	size_t i;

	for (i = 0; i < p->n_types; i++)
		if (p->types[i].phase == MSG_FIRST)
			return &p->types[i];
	return NULL;
}

/* The rules of the table beyond one datagram's bytes: sender, fds, phase. */
static int conn_rules(const struct msg_conn *c, const struct msg_type *t,
		      unsigned int nfds, struct reason *why)
{
	const struct msg_proto *p = c->p;
	const struct msg_type *first = first_type(p);

	if (c->from_mask && !(c->from_mask & (1u << t->from)))
		return msg_fail(why, -EOPNOTSUPP, "%s: sent by %s", t->name,
				sender(p, t->from));
	if ((p->root_from & (1u << t->from)) && c->uid != 0)
		return msg_fail(why, -EPERM, "%s: not allowed for uid %u",
				t->name, (unsigned int)c->uid);
	if (nfds != t->fds)
		return msg_fail(why, -EBADMSG, "%s: %u fds, it carries %u",
				t->name, nfds, (unsigned int)t->fds);
	if (t->phase == MSG_FIRST && c->started)
		return msg_fail(why, -EPROTO, "a second %s", t->name);
	if (first && t != first && !c->started &&
	    (c->from_mask & (1u << first->from)))
		return msg_fail(why, -EPROTO, "%s before %s", t->name,
				first->name);
	return 0;
}

int msg_conn_decode(struct msg_conn *c, const void *buf, size_t len,
		    unsigned int nfds, void *ret, struct reason *why)
{
	_Alignas(16) uint8_t m[MSG_CONTAINER_MAX];
	const struct msg_type *t;
	int rc;

	rc = msg_decode(c->p, buf, len, m, why);
	if (rc < 0)
		return rc;
	t = msg_type_of(c->p, ((const struct msg_header *)m)->type);
	rc = conn_rules(c, t, nfds, why);
	if (rc < 0)
		return rc;
	if (t->phase == MSG_FIRST)
		c->started = true;
	memcpy(ret, m, c->p->container_size);
	return 0;
}

/*
 * After recv() returned 0: was it the end of the connection?  On a
 * SOCK_SEQPACKET socket recv() returns 0 both for a zero-length datagram
 * and at EOF, and EOF only once the peer shut down (closed, or SHUT_WR)
 * and the queue is empty.  POLLRDHUP says the peer shut down; a datagram
 * with bytes still queued (peeked) says the 0 was an empty one before it.
 * Checked on Linux 6.1 and 6.18: an empty datagram leaves POLLRDHUP
 * clear.  Only poll and recvmsg: the worker's seccomp filter allows them
 * on its channel (an ioctl(SIOCINQ) there would be SIGSYS).
 */
static bool peer_shut_down(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLRDHUP };
	char c;
	struct iovec iov = { &c, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (poll(&p, 1, 0) < 0)
		return true;
	if (!(p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
		return false;
	/* no control buffer: a peeked datagram's fds stay queued with it */
	return recvmsg(fd, &mh, MSG_PEEK | MSG_DONTWAIT) <= 0;
}

int msg_conn_recv(struct msg_conn *c, int fd, void *ret, int *ret_fd, int flags,
		  struct reason *why)
{
	uint8_t buf[MSG_CONTAINER_MAX + 1];
	int fds[MSG_FDS_MAX];
	unsigned int nfds = 0, i;
	size_t size = c->p->max_datagram + 1;
	ssize_t n;
	int rc;

	if (size > sizeof(buf))
		return msg_fail(why, -EINVAL, "%s: bad protocol description",
				c->p->name);
	/* without ret_fd every fd is closed at once, but still counted */
	n = recv_fds(fd, buf, size, fds, ret_fd ? MSG_FDS_MAX : 0, &nfds,
		     flags);
	if (n == -EMSGSIZE)
		return msg_fail(why, -EMSGSIZE,
				"long message: more than %zu bytes",
				c->p->max_datagram);
	if (n == -EAGAIN || n == -EWOULDBLOCK)
		return 0;
	if (n == 0 && !peer_shut_down(fd)) {
		for (i = 0; i < nfds && i < MSG_FDS_MAX && ret_fd; i++)
			close(fds[i]);
		return msg_fail(why, -EBADMSG, "an empty message");
	}
	if (n == 0)
		return msg_fail(why, -EPIPE, "connection closed");
	if (n < 0)
		return msg_fail(why, -EPIPE, "connection lost: %s",
				strerror((int)-n));
	rc = msg_conn_decode(c, buf, (size_t)n, nfds, ret, why);
	if (!ret_fd)
		return rc < 0 ? rc : 1;
	if (rc < 0) {
		for (i = 0; i < nfds && i < MSG_FDS_MAX; i++)
			close(fds[i]);
		return rc;
	}
	*ret_fd = nfds ? fds[0] : -1;
	return 1;
}
