// SPDX-License-Identifier: MIT
/*
 * rdmagate-mux's umad ports and the wire's side of the routing: opening a
 * port and registering the CM class, MADs from the wire to the worker the
 * router names, and a worker's MADs out on the port the router chose.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/umad.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/mux_proto.h"
#include "common/probes.h"
#include "mux/mux.h"
#include "mux/router.h"

void port_cm_taken(const char *device, uint32_t port)
{
	dprintf(2,
		"mux: error: the CM class on %s port %u is taken: the "
		"kernel's ib_cm module is loaded (modprobe -r rdma_ucm "
		"rdma_cm ib_cm, or blacklist them; rdmagate-mux must be the "
		"only CM agent)\n",
		device, port);
	exit(EXIT_CM_TAKEN);
}

static bool ib_cm_loaded(void)
{
	return access("/sys/module/ib_cm", F_OK) == 0;
}

/*
 * Opens umad on device/port and registers the CM class (0x07 v2, method
 * Send: the only method CM uses).  Exits with EXIT_CM_TAKEN when the
 * kernel's ib_cm holds the class.  Returns 0 or -errno with why.
 */
int port_open(struct mux *m, const char *device, uint32_t num,
	      struct reason *why)
{
	long mask[16 / sizeof(long)] = { 0 };
	struct port *p = NULL;
	umad_port_t info;
	uint32_t pkeys = 1;
	int fd, agent, rid, e;
	size_t i;

	for (i = 0; i < MAX_PORTS; i++) {
		if (m->ports[i].used && m->ports[i].num == num &&
		    !strcmp(m->ports[i].device, device)) {
			return reason_fail(why, 0, "%s port %u: open already",
					   device, num);
		}
		if (!m->ports[i].used && !p)
			p = &m->ports[i];
	}
	if (!p) {
		return reason_fail(why, -ENOSPC,
				   "%s port %u: %d ports open already", device,
				   num, MAX_PORTS);
	}
	if (umad_get_port(device, (int)num, &info) == 0) {
		pkeys = info.pkeys_size ? info.pkeys_size : 1;
		umad_release_port(&info);
	}
	errno = 0;
	fd = umad_open_port(device, (int)num);
	if (fd < 0) {
		e = errno ? errno : -fd;
		return reason_fail(
			why, -e, "%s port %u: opening its umad device: %s%s",
			device, num, strerror(e),
			e == EACCES ? " (a port opened after --user needs "
				      "--port at start)"
				    : "");
	}
	mask[ROUTER_METHOD_SEND / (8 * sizeof(long))] |=
		1L << (ROUTER_METHOD_SEND % (8 * sizeof(long)));
	errno = 0;
	agent = umad_register(fd, ROUTER_CM_CLASS, ROUTER_CM_CLASS_VERSION, 0,
			      mask);
	if (agent < 0) {
		e = errno ? errno : EPERM;
		umad_close_port(fd);
		if (ib_cm_loaded())
			return -EBUSY; /* the caller says so and exits */
		return reason_fail(why, -e,
				   "%s port %u: registering the CM class: %s",
				   device, num, strerror(e));
	}
	rid = router_port_add(m->r, device, num, pkeys);
	if (rid < 0) {
		umad_close_port(fd);
		return reason_fail(why, rid, "%s port %u: %s", device, num,
				   strerror(-rid));
	}
	memset(p, 0, sizeof(*p));
	p->used = true;
	snprintf(p->device, sizeof(p->device), "%s", device);
	p->num = num;
	p->fd = fd;
	p->agent = agent;
	p->router_id = rid;
	e = ep_add(m, fd, TAG_PORT | (uint64_t)(p - m->ports) << 8);
	if (e < 0) {
		umad_close_port(fd);
		p->used = false;
		return reason_fail(why, e, "epoll: %s", strerror(-e));
	}
	log_info("%s port %u: umad open, CM class registered (agent %d, %u "
		 "P_Keys)",
		 device, num, agent, pkeys);
	return reason_fail(why, 0, "%s port %u: open", device, num);
}

static struct port *port_of_router_id(struct mux *m, int rid)
{
	size_t i;

	for (i = 0; i < MAX_PORTS; i++)
		if (m->ports[i].used && m->ports[i].router_id == rid)
			return &m->ports[i];
	return NULL;
}

static void deliver(struct mux *m, struct router_verdict *v,
		    const ib_mad_addr_t *a, const uint8_t *dgid,
		    const uint8_t *mad, size_t len)
{
	struct worker *w = worker_by_id(m, v->worker_id);
	struct mp_msg msg;
	struct mp_mad_recv *r = &msg.u.mad_recv;
	int ret;

	if (w && w->rdmacm) {
		rdmacm_deliver(m, w, v, a, dgid, mad, len);
		return;
	}
	if (!w || w->fd < 0) {
		v->reason = RDMAGATE_MUX_DROP_WORKER_GONE;
		snprintf(v->why, sizeof(v->why), "its channel is closed");
		return;
	}
	mp_init(&msg, MP_MAD_RECV);
	memcpy(r->sgid, a->gid, 16);
	memcpy(r->dgid, dgid, 16);
	r->flow_label = ntohl(a->flow_label) & MP_FLOW_LABEL_MAX;
	r->traffic_class = a->traffic_class;
	r->hop_limit = a->hop_limit;
	r->pkey_index = a->pkey_index;
	r->src_qpn = ntohl(a->qpn) & MP_QPN_MAX;
	r->mad_len = (uint32_t)len;
	memcpy(r->mad, mad, len);
	ret = mp_send(w->fd, &msg, MSG_DONTWAIT, -1);
	if (ret == -EAGAIN || ret == -ENOBUFS) {
		v->reason = RDMAGATE_MUX_DROP_WORKER_FULL;
		snprintf(v->why, sizeof(v->why),
			 "its channel is full (it does not read)");
	} else if (ret < 0) {
		v->reason = RDMAGATE_MUX_DROP_WORKER_GONE;
		snprintf(v->why, sizeof(v->why), "its channel: %s",
			 strerror(-ret));
		log_info("worker %u (%s): channel closed (%s)", w->id, w->vm,
			 strerror(-ret));
		ep_del_close(m, &w->fd);
		worker_farewell(m, w);
	}
}

/* The GID the kernel holds at index of device/port, from sysfs. */
int port_sysfs_gid(const char *device, uint32_t port, uint32_t index,
		   uint8_t gid[16])
{
	char path[PATH_MAX], text[64];
	_cleanup_close_ int fd = -1;
	ssize_t n;

	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/%u/gids/%u", device, port,
		 index);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, text, sizeof(text) - 1);
	if (n < 0)
		return -errno;
	text[n] = '\0';
	text[strcspn(text, "\n")] = '\0';
	return inet_pton(AF_INET6, text, gid) == 1 ? 0 : -EINVAL;
}

/*
 * The full GID of receive index `index` of p: a worker's (as the broker
 * gave it and the mux checked), else what sysfs holds there (the same
 * address's other RoCE type, or a GID nobody owns), else NULL.
 */
static const uint8_t *resolve_dgid(struct mux *m, struct port *p, uint8_t index)
{
	static const uint8_t zero[16];
	const uint8_t *g = router_gid_at(m->r, p->router_id, index);
	struct gid_cache *c = &p->idx[index];
	uint64_t now = mono_ms();

	if (g)
		return g;
	if (!c->read_ms || now - c->read_ms >= GID_CACHE_MS) {
		c->read_ms = now;
		c->valid =
			port_sysfs_gid(p->device, p->num, index, c->gid) == 0 &&
			memcmp(c->gid, zero, 16);
	}
	return c->valid ? c->gid : NULL;
}

void port_readable(struct mux *m, struct port *p)
{
	uint8_t buf[sizeof(struct ib_user_mad) + MP_MAD_SIZE];
	int n;

	for (n = 0; n < BATCH; n++) {
		struct router_verdict v;
		const ib_mad_addr_t *a;
		const uint8_t *dgid;
		int len = MP_MAD_SIZE, ret;

		memset(buf, 0, sizeof(buf));
		ret = umad_recv(p->fd, buf, &len, 0);
		if (ret == -EAGAIN || ret == -EWOULDBLOCK || ret == -EINTR)
			return;
		if (ret < 0) {
			/* the device went away (or worse): stop polling it
			 * rather than spin; PORT_ADD opens it again */
			log_warnx("%s port %u: umad_recv: %s; port closed",
				  p->device, p->num, strerror(-ret));
			epoll_ctl(m->ep, EPOLL_CTL_DEL, p->fd, NULL);
			umad_close_port(p->fd);
			p->fd = -1;
			p->used = false;
			return;
		}
		if (umad_status(buf))
			continue; /* a send's timeout: the mux sets none */
		a = umad_get_mad_addr(buf);
		if (len < 0 || len > MP_MAD_SIZE)
			len = MP_MAD_SIZE;
		if (!a->grh_present) {
			memset(&v, 0, sizeof(v));
			v.direction = RDMAGATE_MUX_IN;
			v.reason = RDMAGATE_MUX_DROP_MALFORMED;
			snprintf(v.why, sizeof(v.why),
				 "on %s port %u without a GRH (RoCE has one)",
				 p->device, p->num);
			outcome(m, &v);
			continue;
		}
		dgid = resolve_dgid(m, p, a->gid_index);
		router_incoming(m->r, p->router_id, a->gid, dgid,
				umad_get_mad(buf), (size_t)len, mono_ms(), &v);
		if (!dgid && v.reason == RDMAGATE_MUX_DROP_UNKNOWN_GID) {
			char g[46];

			snprintf(v.why, sizeof(v.why),
				 "to %s port %u GID index %u, which holds no "
				 "worker's GID (from %s)",
				 p->device, p->num, a->gid_index,
				 router_gid_str(a->gid, g));
		}
		if (!v.reason)
			deliver(m, &v, a, dgid, umad_get_mad(buf), (size_t)len);
		outcome(m, &v);
	}
}

void send_out(struct mux *m, struct router_verdict *v,
	      const struct mp_mad_send *s)
{
	uint8_t buf[sizeof(struct ib_user_mad) + MP_MAD_SIZE];
	struct port *p = port_of_router_id(m, v->port_id);
	ib_mad_addr_t grh;
	int ret;

	if (!p) {
		v->reason = RDMAGATE_MUX_DROP_SEND_FAILED;
		snprintf(v->why, sizeof(v->why), "port %d is not open",
			 v->port_id);
		return;
	}
	memset(buf, 0, sizeof(buf));
	/* always a whole 256-byte MAD: the rest stays zero */
	memcpy(umad_get_mad(buf), s->mad, s->mad_len);
	umad_set_addr(buf, 0, ROUTER_GSI_QPN, 0, (int)ROUTER_GSI_QKEY);
	memset(&grh, 0, sizeof(grh));
	memcpy(grh.gid, s->dgid, 16);
	grh.flow_label = s->flow_label; /* host order: umad_set_grh swaps */
	grh.hop_limit = s->hop_limit;
	grh.traffic_class = s->traffic_class;
	umad_set_grh(buf, &grh);
	/* umad_set_grh() leaves the source GID index alone */
	umad_get_mad_addr(buf)->gid_index = (uint8_t)v->host_gid_index;
	umad_set_pkey(buf, s->pkey_index);
	errno = 0;
	ret = umad_send(p->fd, p->agent, buf, MP_MAD_SIZE, 0, 0);
	if (ret < 0) {
		v->reason = RDMAGATE_MUX_DROP_SEND_FAILED;
		snprintf(v->why, sizeof(v->why), "umad_send on %s port %u: %s",
			 p->device, p->num, strerror(errno ? errno : EIO));
	}
}
