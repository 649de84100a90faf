// SPDX-License-Identifier: MIT
/*
 * The client side of the broker's control protocol (common/ctl_client.h,
 * docs/control-protocol.md): connect, peer check, HELLO, one request and
 * its reply.  Runs in rdmagatectl and in rdmagate-libvirt-hook.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/ctl_client.h"
#include "policy/policy.h"

/*
 * A broker that turns a caller away closes the connection; whether that
 * reads as EOF, a reset or a broken pipe depends on whether our request
 * was still unread in its socket.
 */
static int closed(const struct ctl_conn *c, struct reason *why)
{
	return reason_fail(
		why, -ECONNRESET,
		"the broker closed the connection (not allowed to use %s?)",
		c->path);
}

void ctl_close(struct ctl_conn *c)
{
	c->fd = safe_close(c->fd);
}

int ctl_send(struct ctl_conn *c, const struct bp_msg *m, struct reason *why)
{
	int ret = bp_send(c->fd, m);

	if (ret == -EPIPE || ret == -ECONNRESET)
		return closed(c, why);
	if (ret == -EAGAIN)
		return reason_fail(
			why, -ETIMEDOUT,
			"the broker did not take the %s request within %u s",
			bp_type_name(m->h.type), c->timeout_s);
	if (ret < 0)
		reason_set(why, "sending to the broker: %s", strerror(-ret));
	return ret;
}

int ctl_status(const struct bp_status *st, struct reason *why)
{
	if (!st->status)
		return 0;
	reason_set(why, "broker: %s (%s)", st->text, strerror(st->status));
	return -st->status;
}

int ctl_recv(struct ctl_conn *c, uint32_t want, struct bp_msg *m,
	     struct reason *why)
{
	uint8_t buf[BP_MSG_MAX + 1];
	struct reason derr;
	ssize_t n;
	int ret;

	do
		n = recv(c->fd, buf, sizeof(buf), MSG_TRUNC);
	while (n < 0 && errno == EINTR);
	if (n == 0 || (n < 0 && errno == ECONNRESET))
		return closed(c, why);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return reason_fail(
			why, -ETIMEDOUT,
			"the broker did not answer within %u s (waiting "
			"for %s)",
			c->timeout_s, bp_type_name(want));
	if (n < 0) {
		ret = -errno;
		reason_set(why, "reading from the broker: %s", strerror(errno));
		return ret;
	}
	ret = bp_decode(buf, (size_t)n, m, &derr);
	if (ret < 0) {
		reason_set(why, "bad message from the broker: %s", derr.msg);
		return ret;
	}
	if (m->h.type == BP_ERROR_REPLY) {
		ret = ctl_status(&m->u.status, why);
		if (ret == 0) { /* an ERROR_REPLY is a refusal, status or not */
			reason_set(why, "broker: %s (no error code)",
				   m->u.status.text);
			ret = -EPROTO;
		}
		return ret;
	}
	if (m->h.type != want)
		return reason_fail(why, -EPROTO,
				   "the broker answered %s to a request for %s",
				   bp_type_name(m->h.type), bp_type_name(want));
	return 0;
}

int ctl_request(struct ctl_conn *c, struct bp_msg *m, struct reason *why)
{
	uint32_t want = m->h.type + 1;
	int ret = ctl_send(c, m, why);

	if (ret < 0)
		return ret;
	return ctl_recv(c, want, m, why);
}

static int set_timeouts(int fd, unsigned int timeout_s)
{
	struct timeval tv = { .tv_sec = timeout_s };

	if (!timeout_s)
		return 0;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
		return -errno;
	return 0;
}

int ctl_connect(struct ctl_conn *c, const char *path, unsigned int timeout_s,
		struct reason *why)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ucred cr;
	socklen_t len = sizeof(cr);
	struct bp_msg m;
	int ret;

	c->fd = -1;
	c->timeout_s = timeout_s;
	if (strlen(path) >= sizeof(sa.sun_path))
		return reason_fail(why, -ENAMETOOLONG,
				   "control socket %s: path too long", path);
	_Static_assert(sizeof(c->path) == sizeof(sa.sun_path), "path size");
	strcpy(c->path, path);
	strcpy(sa.sun_path, path);
	c->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		ret = -errno;
		reason_set(why, "socket: %s", strerror(errno));
		return ret;
	}
	/* SO_SNDTIMEO also bounds a connect() to a full backlog */
	ret = set_timeouts(c->fd, timeout_s);
	if (ret < 0) {
		reason_set(why, "setting the socket's timeouts: %s",
			   strerror(-ret));
		goto fail;
	}
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		ret = -errno;
		if (errno == EAGAIN)
			reason_set(why,
				   "cannot reach the broker at %s: it did not "
				   "accept the connection within %u s",
				   path, timeout_s);
		else
			reason_set(why, "cannot reach the broker at %s: %s",
				   path, strerror(errno));
		goto fail;
	}
	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 ||
	    cr.uid != 0) {
		reason_set(why,
			   "%s is not served by root: refusing to talk to it",
			   path);
		ret = -EPERM;
		goto fail;
	}
	bp_init(&m, BP_HELLO);
	ret = ctl_request(c, &m, why);
	if (ret < 0)
		goto fail;
	if (m.u.hello_reply.version != RDMAGATE_CTL_VERSION) {
		reason_set(why, "the broker speaks protocol %u, this %s %u",
			   m.u.hello_reply.version,
			   program_invocation_short_name, RDMAGATE_CTL_VERSION);
		ret = -EPROTONOSUPPORT;
		goto fail;
	}
	return 0;
fail:
	ctl_close(c);
	return ret;
}

int ctl_check(const struct bp_msg *m, struct reason *why)
{
	uint8_t buf[BP_MSG_MAX];
	struct bp_msg out;

	if (m->h.len > sizeof(buf) - sizeof(m->h) || m->h.len > sizeof(m->u))
		return reason_fail(why, -EMSGSIZE,
				   "payload of %u bytes: too long", m->h.len);
	/* the wire form: the payload right after the 12-byte header */
	memcpy(buf, &m->h, sizeof(m->h));
	memcpy(buf + sizeof(m->h), &m->u, m->h.len);
	return bp_decode(buf, sizeof(m->h) + m->h.len, &out, why);
}

int ctl_spawn_add_address(struct bp_spawn *s, const char *text)
{
	struct policy_addr pa;
	struct bp_addr *a;

	if (policy_parse_addr(text, &pa) < 0 ||
	    pa.prefix_len != (pa.family == AF_INET ? 32 : 128))
		return -EINVAL;
	if (s->n_addrs >= BP_SPAWN_ADDRS_MAX)
		return -E2BIG;
	a = &s->addrs[s->n_addrs++];
	memset(a, 0, sizeof(*a));
	a->family = (uint32_t)pa.family;
	memcpy(a->addr, pa.addr, pa.family == AF_INET ? 4 : 16);
	return 0;
}
