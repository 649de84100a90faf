// SPDX-License-Identifier: MIT
/*
 * GID ownership: a guest's GID is an address on the netdev behind its RDMA
 * port, and only the broker puts it there.  A worker's GID_ADD is checked
 * against the policy (may this VM claim the address?) and the ownership
 * table (does another VM own it?); the broker then adds the address with
 * rtnetlink (libmnl), waits (bounded, without blocking the other clients)
 * for the kernel to list the GID in the device's table, and answers with
 * the host GID index.  GID_DEL, the worker's death and its STOP remove the
 * address again.  docs/broker.md ("GID ownership") has the rules.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <infiniband/verbs.h>
#include <libmnl/libmnl.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>

#include "broker/broker.h"
#include "broker/gid_rules.h"
#include "common/cleanup.h"
#include "common/log.h"
#include "common/probes.h"

/* Verbs contexts the broker keeps open to read GID tables (ioctl path). */
#define MAX_DEVS 16
#define MAX_GIDS 1024

static struct {
	char name[BP_DEVICE_SIZE];
	struct ibv_context *ctx;
} devs[MAX_DEVS];

static struct ibv_context *dev_ctx(const char *name)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	unsigned int i, free_slot = MAX_DEVS;
	int n;

	for (i = 0; i < MAX_DEVS; i++) {
		if (devs[i].ctx && !strcmp(devs[i].name, name))
			return devs[i].ctx;
		if (!devs[i].ctx && free_slot == MAX_DEVS)
			free_slot = i;
	}
	if (free_slot == MAX_DEVS)
		return NULL;
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < (unsigned int)n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name)) {
			ctx = ibv_open_device(list[i]);
			break;
		}
	if (list)
		ibv_free_device_list(list);
	if (!ctx)
		return NULL;
	snprintf(devs[free_slot].name, sizeof(devs[free_slot].name), "%s",
		 name);
	devs[free_slot].ctx = ctx;
	return ctx;
}

/* A device that went away (its context fails): opened anew next time. */
static void dev_forget(const char *name)
{
	unsigned int i;

	for (i = 0; i < MAX_DEVS; i++)
		if (devs[i].ctx && !strcmp(devs[i].name, name)) {
			ibv_close_device(devs[i].ctx);
			devs[i].ctx = NULL;
		}
}

/*
 * The host GID index of (gid, type) on device/port, -ENOENT if it is not
 * (yet) there; with gid NULL, the netdev ifindex of the port's first GID.
 */
static int gid_lookup(const char *device, uint32_t port, const uint8_t *gid,
		      uint32_t type, int *ret_ifindex)
{
	static struct ibv_gid_entry ent[MAX_GIDS];
	struct ibv_context *ctx = dev_ctx(device);
	ssize_t n, i;

	if (!ctx)
		return -ENODEV;
	n = ibv_query_gid_table(ctx, ent, MAX_GIDS, 0);
	if (n < 0) {
		dev_forget(device);
		return (int)n;
	}
	for (i = 0; i < n; i++) {
		if (ent[i].port_num != port)
			continue;
		if (!gid) {
			*ret_ifindex = (int)ent[i].ndev_ifindex;
			return ent[i].ndev_ifindex ? 0 : -ENODEV;
		}
		if (ent[i].gid_type == type && !memcmp(ent[i].gid.raw, gid, 16))
			return (int)ent[i].gid_index;
	}
	return -ENOENT;
}

int gids_host_index(const char *device, uint32_t port, const uint8_t gid[16],
		    uint32_t type)
{
	return gid_lookup(device, port, gid, type, NULL);
}

/* ---- rtnetlink --------------------------------------------------------- */

/*
 * The address watch: RTM_DELADDR of every IPv4 and IPv6 address, so that
 * an address the broker granted and someone else removed (ip addr del, a
 * netdev going down) is noticed: its GID table slot may be another VM's
 * next.  Non-blocking, read from the loop; without it (logged) workers are
 * still protected by their own GID_CHANGE handling.
 */
static void watch_open(struct broker *b)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = TAG_ADDRS };
	struct mnl_socket *nl =
		mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (!nl ||
	    mnl_socket_bind(nl, RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR,
			    MNL_SOCKET_AUTOPID) < 0 ||
	    epoll_ctl(b->ep, EPOLL_CTL_ADD, mnl_socket_get_fd(nl), &ev) < 0) {
		log_warn("rtnetlink address watch: addresses removed outside "
			 "the broker are not told to workers");
		if (nl)
			mnl_socket_close(nl);
		return;
	}
	b->mnl_watch = nl;
}

int gids_open(struct broker *b)
{
	struct mnl_socket *nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);

	if (!nl || mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		log_warn("rtnetlink");
		if (nl)
			mnl_socket_close(nl);
		return -errno;
	}
	b->mnl = nl;
	b->nl_seq = (uint32_t)time(NULL);
	watch_open(b);
	return 0;
}

void gids_close(struct broker *b)
{
	unsigned int i;

	if (b->mnl)
		mnl_socket_close(b->mnl);
	b->mnl = NULL;
	if (b->mnl_watch)
		mnl_socket_close(b->mnl_watch);
	b->mnl_watch = NULL;
	for (i = 0; i < MAX_DEVS; i++)
		if (devs[i].ctx) {
			ibv_close_device(devs[i].ctx);
			devs[i].ctx = NULL;
		}
}

static size_t addr_len(int family)
{
	return family == AF_INET ? 4 : 16;
}

/* RTM_NEWADDR (exclusive) or RTM_DELADDR of a host address (/32, /128). */
static int nl_addr(struct broker *b, int cmd, int ifindex, int family,
		   const uint8_t *addr)
{
	static char buf[8192]; /* MNL_SOCKET_BUFFER_SIZE is not a constant */
	struct mnl_socket *nl = b->mnl;
	struct nlmsghdr *nlh;
	struct ifaddrmsg *ifa;
	uint32_t seq;
	ssize_t n;
	int ret;

	if (!nl)
		return -ENOTCONN;
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = (uint16_t)cmd;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	if (cmd == RTM_NEWADDR)
		nlh->nlmsg_flags |= NLM_F_CREATE | NLM_F_EXCL;
	nlh->nlmsg_seq = seq = ++b->nl_seq;
	ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
	ifa->ifa_family = (uint8_t)family;
	ifa->ifa_prefixlen = family == AF_INET ? 32 : 128;
	ifa->ifa_index = (uint32_t)ifindex;
	/* fe80::/10 is link scope; everything else the guest may claim is
	 * global */
	ifa->ifa_scope = family == AF_INET6 && addr[0] == 0xfe &&
					 (addr[1] & 0xc0) == 0x80
				 ? RT_SCOPE_LINK
				 : RT_SCOPE_UNIVERSE;
	mnl_attr_put(nlh, IFA_LOCAL, addr_len(family), addr);
	mnl_attr_put(nlh, IFA_ADDRESS, addr_len(family), addr);
	if (family == AF_INET6 && cmd == RTM_NEWADDR)
		/* usable at once (no DAD), and no /128 prefix route */
		mnl_attr_put_u32(nlh, IFA_FLAGS,
				 IFA_F_NODAD | IFA_F_NOPREFIXROUTE);
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	do {
		n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
		if (n < 0)
			return -errno;
		ret = mnl_cb_run(buf, (size_t)n, seq, mnl_socket_get_portid(nl),
				 NULL, NULL);
	} while (ret > 0);
	return ret < 0 ? -errno : 0;
}

static void addr_text(int family, const uint8_t *addr, char *buf, size_t len)
{
	if (!inet_ntop(family, addr, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

/* ---- the table ----------------------------------------------------------- */

static bool same_addr(const struct gid_entry *e, int family,
		      const uint8_t *addr)
{
	return e->used && e->family == family &&
	       !memcmp(e->addr, addr, addr_len(family));
}

const struct gid_entry *gids_owner(const struct broker *b, int family,
				   const uint8_t addr[16])
{
	unsigned int i;

	for (i = 0; i < BROKER_MAX_GIDS; i++)
		if (same_addr(&b->gids[i], family, addr))
			return &b->gids[i];
	return NULL;
}

static struct gid_entry *new_entry(struct broker *b)
{
	unsigned int i;

	for (i = 0; i < BROKER_MAX_GIDS; i++)
		if (!b->gids[i].used) {
			memset(&b->gids[i], 0, sizeof(b->gids[i]));
			b->gids[i].used = true;
			return &b->gids[i];
		}
	return NULL;
}

static void reply(struct broker *b, struct worker *w, uint32_t type,
		  uint32_t seq, int status, uint32_t index, const char *fmt,
		  ...) __attribute__((format(printf, 7, 8)));
static void reply(struct broker *b, struct worker *w, uint32_t type,
		  uint32_t seq, int status, uint32_t index, const char *fmt,
		  ...)
{
	struct wp_msg m;
	va_list ap;

	wp_init(&m, type);
	m.u.gid_reply.seq = seq;
	m.u.gid_reply.status = status;
	m.u.gid_reply.host_index = index;
	va_start(ap, fmt);
	vsnprintf(m.u.gid_reply.text, sizeof(m.u.gid_reply.text), fmt, ap);
	va_end(ap);
	channel_send(b, w, &m);
}

static struct worker *owner_worker(struct broker *b, const char *vm)
{
	return workers_find(b, vm);
}

/* Answers a GID request of w whose address is in the table: now if the GID
 * is listed, else when gids_poll() sees it (pending). */
static void answer_when_listed(struct broker *b, struct worker *w,
			       struct gid_entry *e, const struct wp_gid *g)
{
	int idx = gid_lookup(e->device, e->port, g->gid, g->gid_type, NULL);

	if (idx >= 0) {
		e->granted = true;
		RDMAGATE_GID_ADD(w->vm, e->port, (uint32_t)idx, g->gid);
		reply(b, w, WP_GID_ADD_REPLY, g->seq, 0, (uint32_t)idx, "ok");
		mux_link_gid_ready(b, e);
		return;
	}
	e->pending = true;
	memcpy(e->gid, g->gid, 16);
	e->gid_type = g->gid_type;
	e->req_seq = g->seq;
	e->deadline = mono_ms() + BROKER_GID_WAIT_MS;
}

/* The RoCE v2 GID of an address: itself, or ::ffff:a.b.c.d. */
static void addr_gid(int family, const uint8_t *addr, uint8_t gid[16])
{
	memset(gid, 0, 16);
	if (family == AF_INET) {
		gid[10] = gid[11] = 0xff;
		memcpy(gid + 12, addr, 4);
	} else {
		memcpy(gid, addr, 16);
	}
}

/* A worker of ours (not a QEMU pvrdma VM's row): it waits for answers. */
static bool answers(const struct worker *w)
{
	return w && w->frontend != BP_FRONTEND_QEMU_PVRDMA;
}

/*
 * Admits the address for w (the policy, the ownership table) and adds it
 * to the netdev behind w's port.  Returns 0 with *ret_e (a new entry, its
 * gid to be filled, or one the VM owns already: *ret_new false), or
 * -errno and why.  grant: the broker's own grant of several
 * addresses at once (a QEMU pvrdma VM), so another of the VM's pending is
 * no worker's second request.
 */
static int claim(struct broker *b, struct worker *w, int family,
		 const uint8_t *addr, bool grant, struct gid_entry **ret_e,
		 bool *ret_new, struct reason *why)
{
	const struct gid_entry *other;
	struct gid_entry *e;
	char txt[INET6_ADDRSTRLEN];
	int ifindex, ret;

	addr_text(family, addr, txt, sizeof(txt));
	if (!policy_vm_may_claim(b->pol, w->vm, family, addr)) {
		worker_logx(w, LOG_LVL_WARN,
			    "worker/%s: GID %s refused: the policy does not "
			    "let this VM claim it",
			    w->vm, txt);
		RDMAGATE_POLICY_REFUSE(w->vm, RDMAGATE_POLICY_GID,
				       "address not allowed");
		return reason_fail(why, -EPERM,
				   "the policy does not let vm %s claim %s",
				   w->vm, txt);
	}
	switch (gid_rules_admit(b->gids, BROKER_MAX_GIDS, w->vm, family, addr,
				BROKER_GIDS_PER_VM, &other)) {
	case GID_OTHER_VM:
		worker_logx(w, LOG_LVL_WARN,
			    "worker/%s: GID %s refused: vm %s owns it", w->vm,
			    txt, other->vm);
		RDMAGATE_POLICY_REFUSE(w->vm, RDMAGATE_POLICY_GID,
				       "address owned by another VM");
		return reason_fail(why, -EADDRINUSE,
				   "%s is owned by another VM", txt);
	case GID_SAME_PENDING:
		return reason_fail(why, -EBUSY, "%s is still being added", txt);
	case GID_OTHER_PENDING:
		if (grant)
			break;
		return reason_fail(
			why, -EBUSY,
			"another address of vm %s is still being added", w->vm);
	case GID_VM_FULL:
		return reason_fail(why, -ENOSPC,
				   "vm %s holds %u addresses already", w->vm,
				   BROKER_GIDS_PER_VM);
	case GID_OWNED:
		/* ours already (another GID type, or the guest re-adds) */
		*ret_e = (struct gid_entry *)other;
		*ret_new = false;
		return 0;
	case GID_NEW:
		break;
	}
	ret = gid_lookup(w->device, w->port, NULL, 0, &ifindex);
	if (ret < 0) {
		worker_logx(w, LOG_LVL_WARN,
			    "worker/%s: no netdev behind %s port %u: %s", w->vm,
			    w->device, w->port, strerror(-ret));
		return reason_fail(why, -ENODEV, "no netdev behind %s port %u",
				   w->device, w->port);
	}
	e = new_entry(b);
	if (!e) {
		return reason_fail(why, -ENOSPC,
				   "the broker's address table is full");
	}
	ret = nl_addr(b, RTM_NEWADDR, ifindex, family, addr);
	if (ret < 0) {
		e->used = false;
		worker_logx(w, LOG_LVL_WARN,
			    "worker/%s: adding %s to ifindex %d: %s", w->vm,
			    txt, ifindex, strerror(-ret));
		return reason_fail(
			why, ret == -EEXIST ? -EADDRINUSE : ret, "%s%s", txt,
			ret == -EEXIST ? " is already configured on the host "
					 "(not by rdmagate): not taken over"
				       : ": the broker could not add it");
	}
	snprintf(e->vm, sizeof(e->vm), "%s", w->vm);
	e->family = family;
	memcpy(e->addr, addr, 16);
	snprintf(e->device, sizeof(e->device), "%s", w->device);
	e->port = w->port;
	e->ifindex = ifindex;
	worker_logx(w, LOG_LVL_INFO,
		    "worker/%s: added %s to ifindex %d (%s port %u)", w->vm,
		    txt, ifindex, w->device, w->port);
	*ret_e = e;
	*ret_new = true;
	return 0;
}

void gids_add(struct broker *b, struct worker *w, const struct wp_gid *g)
{
	struct gid_entry *e;
	uint8_t addr[16];
	struct reason why;
	int family = wp_gid_to_addr(g->gid, addr), st;
	bool fresh;

	st = claim(b, w, family, addr, false, &e, &fresh, &why);
	if (st) {
		reply(b, w, WP_GID_ADD_REPLY, g->seq, -st, 0, "%s", why.msg);
		return;
	}
	if (fresh) {
		memcpy(e->gid, g->gid, 16);
		state_save(b, w);
	}
	answer_when_listed(b, w, e, g);
}

int gids_grant(struct broker *b, struct worker *w, int family,
	       const uint8_t addr[16], struct reason *why)
{
	struct gid_entry *e;
	bool fresh;
	int st, idx;

	st = claim(b, w, family, addr, true, &e, &fresh, why);
	if (st)
		return st;
	addr_gid(family, addr, e->gid);
	e->gid_type = WP_GID_ROCE_V2;
	idx = gid_lookup(e->device, e->port, e->gid, e->gid_type, NULL);
	if (idx >= 0) {
		e->granted = true;
		RDMAGATE_GID_ADD(w->vm, e->port, (uint32_t)idx, e->gid);
		mux_link_gid_ready(b, e);
		return 0;
	}
	/* the mux is told when gids_poll() sees it listed */
	e->pending = true;
	e->deadline = mono_ms() + BROKER_GID_WAIT_MS;
	return 0;
}

/* by: the worker whose request removes it (its lines go through its
 * limiter), or NULL (its end, STOP, a reload: the broker's own doing). */
static void remove_entry(struct broker *b, struct gid_entry *e,
			 struct worker *by)
{
	char txt[INET6_ADDRSTRLEN];
	int ret;

	addr_text(e->family, e->addr, txt, sizeof(txt));
	ret = nl_addr(b, RTM_DELADDR, e->ifindex, e->family, e->addr);
	if (ret < 0 && ret != -EADDRNOTAVAIL && ret != -ENODEV) {
		if (by)
			worker_logx(by, LOG_LVL_WARN,
				    "vm %s: removing %s from ifindex %d: %s",
				    e->vm, txt, e->ifindex, strerror(-ret));
		else
			log_warnx("vm %s: removing %s from ifindex %d: %s",
				  e->vm, txt, e->ifindex, strerror(-ret));
	} else if (by) {
		worker_logx(by, LOG_LVL_INFO,
			    "vm %s: removed %s from ifindex %d", e->vm, txt,
			    e->ifindex);
	} else {
		log_info("vm %s: removed %s from ifindex %d", e->vm, txt,
			 e->ifindex);
	}
	RDMAGATE_GID_DEL(e->vm, e->port, 0, e->gid);
	mux_link_gid_gone(b, e);
	e->used = false;
	/* our own RTM_DELADDR's notification is queued by now: read it
	 * while no entry holds the address, so that a re-add of it never
	 * takes it for someone else's removal */
	gids_watch_read(b);
}

void gids_del(struct broker *b, struct worker *w, const struct wp_gid *g)
{
	uint8_t addr[16];
	int family = wp_gid_to_addr(g->gid, addr);
	struct gid_entry *e = (struct gid_entry *)gids_owner(b, family, addr);

	if (!e || strcmp(e->vm, w->vm)) {
		reply(b, w, WP_GID_DEL_REPLY, g->seq, ENOENT, 0,
		      "vm %s does not own that address", w->vm);
		return;
	}
	remove_entry(b, e, w);
	state_save(b, w);
	reply(b, w, WP_GID_DEL_REPLY, g->seq, 0, 0, "removed");
}

void gids_release_vm(struct broker *b, const char *vm)
{
	unsigned int i;

	for (i = 0; i < BROKER_MAX_GIDS; i++)
		if (b->gids[i].used && !strcmp(b->gids[i].vm, vm))
			remove_entry(b, &b->gids[i], NULL);
}

void gids_poll(struct broker *b)
{
	uint64_t now = mono_ms();
	unsigned int i;

	for (i = 0; i < BROKER_MAX_GIDS; i++) {
		struct gid_entry *e = &b->gids[i];
		struct worker *w;
		char txt[INET6_ADDRSTRLEN];
		int idx;

		if (!e->used || !e->pending)
			continue;
		w = owner_worker(b, e->vm);
		idx = gid_lookup(e->device, e->port, e->gid, e->gid_type, NULL);
		if (idx >= 0) {
			e->pending = false;
			e->granted = true;
			if (w) {
				RDMAGATE_GID_ADD(w->vm, e->port, (uint32_t)idx,
						 e->gid);
				if (answers(w))
					reply(b, w, WP_GID_ADD_REPLY,
					      e->req_seq, 0, (uint32_t)idx,
					      "ok");
				mux_link_gid_ready(b, e);
			}
			continue;
		}
		if (now < e->deadline)
			continue;
		addr_text(e->family, e->addr, txt, sizeof(txt));
		if (e->granted) {
			/* a re-claim (e.g. RoCE v1 of a v2 address) the port
			 * does not list: refused; what is granted stays */
			e->pending = false;
			if (answers(w)) {
				worker_logx(w, LOG_LVL_WARN,
					    "worker/%s: GID %s refused: no "
					    "RoCE v%u GID for it in %s port "
					    "%u within %d ms; the address "
					    "stays",
					    w->vm, txt, e->gid_type, e->device,
					    e->port, BROKER_GID_WAIT_MS);
				reply(b, w, WP_GID_ADD_REPLY, e->req_seq,
				      ETIMEDOUT, 0,
				      "%s has no RoCE v%u GID on %s port %u "
				      "(the address stays)",
				      txt, e->gid_type, e->device, e->port);
			}
			continue;
		}
		if (w)
			worker_logx(
				w, LOG_LVL_WARN,
				"vm %s: the GID of %s did not appear in %s "
				"port %u within %d ms; removing the address",
				e->vm, txt, e->device, e->port,
				BROKER_GID_WAIT_MS);
		else
			log_warnx("vm %s: the GID of %s did not appear in %s "
				  "port %u within %d ms; removing the address",
				  e->vm, txt, e->device, e->port,
				  BROKER_GID_WAIT_MS);
		if (answers(w))
			reply(b, w, WP_GID_ADD_REPLY, e->req_seq, ETIMEDOUT, 0,
			      "the GID of %s did not appear in %d ms", txt,
			      BROKER_GID_WAIT_MS);
		remove_entry(b, e, w);
		if (w)
			state_save(b, w);
	}
}

int gids_timeout(struct broker *b)
{
	unsigned int i;

	for (i = 0; i < BROKER_MAX_GIDS; i++)
		if (b->gids[i].used && b->gids[i].pending)
			return BROKER_GID_POLL_MS;
	return -1;
}

int gids_restore(struct broker *b, const char *vm, int family,
		 const uint8_t addr[16], const char *device, uint32_t port)
{
	struct gid_entry *e;
	char txt[INET6_ADDRSTRLEN];
	int ifindex, ret;

	addr_text(family, addr, txt, sizeof(txt));
	if (gids_owner(b, family, addr)) {
		log_warnx("vm %s: %s is claimed twice in the state files; "
			  "dropped",
			  vm, txt);
		return -EEXIST;
	}
	ret = gid_lookup(device, port, NULL, 0, &ifindex);
	if (ret < 0)
		return ret;
	e = new_entry(b);
	if (!e)
		return -ENOSPC;
	snprintf(e->vm, sizeof(e->vm), "%s", vm);
	e->family = family;
	memcpy(e->addr, addr, 16);
	snprintf(e->device, sizeof(e->device), "%s", device);
	e->port = port;
	e->ifindex = ifindex;
	/* the GID of the address, for the gid_del probe */
	addr_gid(family, addr, e->gid);
	/* the VM held it before the restart: a failed re-claim keeps it */
	e->granted = true;
	ret = nl_addr(b, RTM_NEWADDR, ifindex, family, addr);
	if (ret == 0)
		log_warnx("vm %s: %s had vanished from ifindex %d; added again",
			  vm, txt, ifindex);
	else if (ret != -EEXIST)
		log_warnx("vm %s: restoring %s: %s", vm, txt, strerror(-ret));
	return 0;
}

void gids_drop(struct broker *b, int family, const uint8_t addr[16],
	       const char *device, uint32_t port)
{
	char txt[INET6_ADDRSTRLEN];
	int ifindex, ret;

	if (gids_owner(b, family, addr))
		return; /* another VM's now: never taken from it */
	if (gid_lookup(device, port, NULL, 0, &ifindex) < 0)
		return;
	addr_text(family, addr, txt, sizeof(txt));
	ret = nl_addr(b, RTM_DELADDR, ifindex, family, addr);
	if (ret < 0 && ret != -EADDRNOTAVAIL)
		log_warnx("removing %s from ifindex %d: %s", txt, ifindex,
			  strerror(-ret));
}

/* ---- addresses that go away behind the broker's back ------------------- */

static void addr_gone(struct broker *b, struct gid_entry *e)
{
	struct worker *w = owner_worker(b, e->vm);
	char txt[INET6_ADDRSTRLEN];
	struct wp_msg m;

	addr_text(e->family, e->addr, txt, sizeof(txt));
	/* not a worker's doing, but bounded as if it were: its limiter */
	if (w)
		worker_logx(w, LOG_LVL_WARN,
			    "vm %s: %s was removed from ifindex %d outside the "
			    "broker; forgotten, the worker told",
			    e->vm, txt, e->ifindex);
	else
		log_warnx("vm %s: %s was removed from ifindex %d outside the "
			  "broker; forgotten",
			  e->vm, txt, e->ifindex);
	RDMAGATE_GID_DEL(e->vm, e->port, 0, e->gid);
	mux_link_gid_gone(b, e);
	if (answers(w)) {
		wp_init(&m, WP_GID_GONE);
		m.u.gid.seq = ++b->nl_seq;
		m.u.gid.gid_type = WP_GID_ROCE_V2;
		addr_gid(e->family, e->addr, m.u.gid.gid);
		channel_send(b, w, &m);
	}
	e->used = false;
	if (w)
		state_save(b, w);
}

/* Notifications were lost (ENOBUFS): a granted address whose GID the
 * port no longer lists is taken as gone. */
static void watch_resync(struct broker *b)
{
	unsigned int i;

	log_warnx("rtnetlink address watch: notifications lost; checking "
		  "every granted address");
	for (i = 0; i < BROKER_MAX_GIDS; i++) {
		struct gid_entry *e = &b->gids[i];
		uint8_t gid[16];

		if (!e->used || e->pending || !e->granted)
			continue;
		addr_gid(e->family, e->addr, gid);
		if (gid_lookup(e->device, e->port, gid, WP_GID_ROCE_V2, NULL) ==
		    -ENOENT)
			addr_gone(b, e);
	}
}

void gids_watch_read(struct broker *b)
{
	static char buf[8192];
	struct mnl_socket *nl = b->mnl_watch;
	ssize_t n;

	if (!nl)
		return;
	while ((n = recv(mnl_socket_get_fd(nl), buf, sizeof(buf),
			 MSG_DONTWAIT)) != 0) {
		const struct nlmsghdr *nlh = (const struct nlmsghdr *)buf;
		int left;

		if (n < 0) {
			if (errno == ENOBUFS)
				watch_resync(b);
			else if (errno != EINTR)
				return;
			continue;
		}
		left = (int)n;
		for (; mnl_nlmsg_ok(nlh, left);
		     nlh = mnl_nlmsg_next(nlh, &left)) {
			struct gid_entry *e;
			uint8_t addr[16];
			int ifindex, family;

			if (gid_rules_deladdr(nlh, nlh->nlmsg_len, &ifindex,
					      &family, addr) != 1)
				continue;
			e = gid_rules_gone(b->gids, BROKER_MAX_GIDS, ifindex,
					   family, addr);
			if (e)
				addr_gone(b, e);
		}
	}
}
