// SPDX-License-Identifier: MIT
/*
 * rdmagate-mux's control socket: the broker (root, one connection at a
 * time) and its requests (common/mux_proto.h), each answered at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "config.h"

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/mux_proto.h"
#include "common/probes.h"
#include "mux/mux.h"
#include "mux/router.h"
#include "common/unix_socket.h"

static int do_gid_add(struct mux *m, const struct mp_gid_add *g,
		      struct reason *why)
{
	int rid = router_port_find(m->r, g->device, g->port);
	uint8_t have[16];
	char s1[46], s2[46];
	int ret;

	if (rid < 0) {
		return reason_fail(why, -ENOENT,
				   "%s port %u: not added (PORT_ADD first)",
				   g->device, g->port);
	}
	ret = port_sysfs_gid(g->device, g->port, g->host_gid_index, have);
	if (ret < 0) {
		return reason_fail(why, ret, "%s port %u GID index %u: %s",
				   g->device, g->port, g->host_gid_index,
				   strerror(-ret));
	}
	if (memcmp(have, g->gid, 16)) {
		return reason_fail(why, -EINVAL,
				   "%s port %u GID index %u holds %s, not %s",
				   g->device, g->port, g->host_gid_index,
				   router_gid_str(have, s1),
				   router_gid_str(g->gid, s2));
	}
	ret = router_gid_add(m->r, g->worker_id, rid, g->gid,
			     g->host_gid_index);
	switch (ret) {
	case 0:
		reason_set(why, "%s (%s port %u index %u) is worker %u's",
			   router_gid_str(g->gid, s1), g->device, g->port,
			   g->host_gid_index, g->worker_id);
		log_info("%s", why->msg);
		return 0;
	case -ENOENT:
		return reason_fail(why, ret, "worker %u: not attached",
				   g->worker_id);
	case -EEXIST:
		return reason_fail(
			why, ret,
			"%s or index %u on %s port %u: owned already "
			"(GID_DEL first)",
			router_gid_str(g->gid, s1), g->host_gid_index,
			g->device, g->port);
	default:
		return reason_fail(why, ret, "%s", strerror(-ret));
	}
}

static void handle_broker_msg(struct mux *m, const struct mp_msg *in, int *fd)
{
	struct reason why = { "" };
	struct mp_msg out;
	uint32_t rtype = in->h.type + 1;
	struct worker *w;
	int ret = 0;
	char s1[46];

	mp_init(&out, rtype);
	switch (in->h.type) {
	case MP_HELLO:
		out.u.hello_reply.version = RDMAGATE_MUX_VERSION;
		reason_set(&why, "rdmagate-mux %s", RDMAGATE_VERSION);
		break;
	case MP_PORT_ADD:
		ret = port_open(m, in->u.port_add.device, in->u.port_add.port,
				&why);
		if (ret == -EBUSY) {
			reason_set(&why,
				   "the CM class on %s port %u is taken: the "
				   "kernel's ib_cm module is loaded",
				   in->u.port_add.device, in->u.port_add.port);
			mp_set_status(&out.u.status, EBUSY, "%s", why.msg);
			mp_send(m->bfd, &out, MSG_DONTWAIT, -1);
			port_cm_taken(in->u.port_add.device,
				      in->u.port_add.port);
		}
		break;
	case MP_WORKER_ATTACH:
		ret = worker_attach(m, &in->u.attach, fd, &why);
		break;
	case MP_RDMACM_ATTACH:
		ret = rdmacm_attach(m, &in->u.rdmacm_attach, fd, &why);
		break;
	case MP_WORKER_DETACH:
		ret = worker_detach(m, in->u.ref.worker_id, &why);
		break;
	case MP_GID_ADD:
		ret = do_gid_add(m, &in->u.gid_add, &why);
		break;
	case MP_GID_DEL:
		w = worker_by_id(m, in->u.gid_del.worker_id);
		if (w && w->fd < 0 && !w->rdmacm)
			worker_farewell(m, w); /* before its ids go */
		ret = router_gid_del(m->r, in->u.gid_del.worker_id,
				     in->u.gid_del.gid);
		reason_set(&why, "%s %s worker %u",
			   router_gid_str(in->u.gid_del.gid, s1),
			   ret ? "is not a GID of" : "removed from",
			   in->u.gid_del.worker_id);
		if (!ret)
			log_info("%s", why.msg);
		break;
	case MP_STATS:
		out.u.stats_reply.worker_id = in->u.ref.worker_id;
		ret = router_stats(m->r, in->u.ref.worker_id,
				   &out.u.stats_reply.s);
		if (ret < 0)
			memset(&out.u.stats_reply.s, 0,
			       sizeof(out.u.stats_reply.s));
		reason_set(&why, ret ? "worker %u: not attached" : "",
			   in->u.ref.worker_id);
		break;
	default:
		ret = -EOPNOTSUPP;
		reason_set(&why, "%s: not a request", mp_type_name(in->h.type));
	}
	/* every reply starts with the status */
	mp_set_status(&out.u.status, ret < 0 ? -ret : 0, "%s", why.msg);
	ret = mp_send(m->bfd, &out, MSG_DONTWAIT, -1);
	if (ret < 0)
		log_warnx("reply %s to the broker: %s", mp_type_name(rtype),
			  strerror(-ret));
}

void broker_readable(struct mux *m)
{
	struct reason why;
	struct mp_msg in;
	int fd = -1, ret;

	/* the table says which requests carry an fd, and that HELLO is
	 * first */
	ret = msg_conn_recv(&m->bconn, m->bfd, &in, &fd, MSG_DONTWAIT, &why);
	if (ret == 0)
		return;
	if (ret == -EPIPE) {
		log_info("broker disconnected: %s", why.msg);
		ep_del_close(m, &m->bfd);
		return;
	}
	if (ret < 0) {
		struct mp_msg out;

		log_warnx("broker: %s", why.msg);
		mp_init(&out, MP_ERROR_REPLY);
		mp_set_status(&out.u.status, -ret, "%s", why.msg);
		mp_send(m->bfd, &out, MSG_DONTWAIT, -1);
		return;
	}
	handle_broker_msg(m, &in, &fd);
	safe_close(fd);
}

void broker_accept(struct mux *m)
{
	_cleanup_close_ int fd = -1;
	struct msg_conn c;
	struct reason why;

	fd = accept4(m->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return;
	/* the broker's requests are root's in the table: only root (the
	 * broker) may connect */
	if (msg_conn_open(&c, &mp_protocol, fd, 1u << MP_FROM_BROKER, &why) <
	    0) {
		log_warnx("refused a control connection: %s", why.msg);
		return;
	}
	if (m->bfd >= 0)
		log_info("a new broker connection (pid %d) replaces the old "
			 "one",
			 (int)c.pid);
	ep_del_close(m, &m->bfd);
	if (ep_add(m, fd, TAG_BROKER) < 0) {
		log_warn("epoll");
		return;
	}
	m->bfd = TAKE_FD(fd);
	m->bconn = c;
	log_info("broker connected (pid %d)", (int)c.pid);
}

int control_open(struct mux *m)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[sizeof(sa.sun_path)], *slash;
	struct reason why;
	_cleanup_close_ int fd = -1;
	mode_t old;
	int ret;

	if (m->control_path[0] != '/' ||
	    strlen(m->control_path) >= sizeof(sa.sun_path))
		fatalx("--control %s: not an absolute path that fits",
		       m->control_path);
	strcpy(sa.sun_path, m->control_path);
	snprintf(dir, sizeof(dir), "%s", m->control_path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			fatal("creating %s", dir);
	}
	ret = unix_socket_remove_stale(AT_FDCWD, sa.sun_path, &why);
	if (ret == -EADDRINUSE)
		fatalx("%s: another rdmagate-mux listens there", sa.sun_path);
	if (ret < 0)
		fatalx("%s: %s", sa.sun_path, why.msg);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		fatal("socket");
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		fatal("bind %s", sa.sun_path);
	umask(old);
	if (listen(fd, 4) < 0 || ep_add(m, fd, TAG_LISTEN) < 0)
		fatal("listen %s", sa.sun_path);
	m->lfd = TAKE_FD(fd);
	log_info("control socket %s (root only)", m->control_path);
	return 0;
}
