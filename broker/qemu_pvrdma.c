// SPDX-License-Identifier: MIT
/*
 * The broker's side of a VM whose QEMU runs its own pvrdma device (frontend
 * qemu-pvrdma: QEMU <= 9.0, Debian 12's 7.2), in rdmagate-broker.  There is
 * no worker to spawn: QEMU drives the host device itself and only needs a
 * MAD multiplexer speaking its rdmacm-mux protocol, which rdmagate-mux
 * serves (docs/mux.md).  The broker stays the policy authority: SPAWN makes
 * the VM's listening socket as it makes a worker's (a root-only directory,
 * owned by the VM's QEMU identity), grants the VM its addresses (on the
 * netdev, so their RoCE v2 GIDs are listed) and attaches the VM to the mux
 * (RDMACM_ATTACH with that socket and vmm_uid, GID_ADD of each GID), so
 * that QEMU may register only those GIDs; STOP detaches it.  The row in the
 * worker table gives it a mux id and the replay like any worker's.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "broker/broker.h"
#include "common/log.h"

static bool single(const struct policy_addr *a)
{
	return a->prefix_len == (a->family == AF_INET ? 32 : 128);
}

/*
 * The GIDs the VM gets: the addresses SPAWN names (check_request() let
 * the policy allow each), else every single address of its policy entry.
 * QEMU's pvrdma has no channel to ask for an address when its guest binds
 * one, so a prefix is granted only through an address SPAWN names in it.
 */
static int grant_all(struct broker *b, struct worker *w,
		     const struct policy_vm *vm, const struct bp_spawn *req,
		     struct reason *why)
{
	char txt[POLICY_ADDR_STRLEN];
	unsigned int i;
	int ret;

	for (i = 0; i < req->n_addrs; i++) {
		ret = gids_grant(b, w, (int)req->addrs[i].family,
				 req->addrs[i].addr, why);
		if (ret < 0)
			return ret;
	}
	for (i = 0; !req->n_addrs && i < vm->n_addrs; i++) {
		if (!single(&vm->addrs[i])) {
			policy_format_addr(&vm->addrs[i], txt);
			log_info("vm %s: %s is a prefix: granted only through "
				 "an address SPAWN names in it (--address)",
				 w->vm, txt);
			continue;
		}
		ret = gids_grant(b, w, vm->addrs[i].family, vm->addrs[i].addr,
				 why);
		if (ret < 0)
			return ret;
	}
	return 0;
}

int qemu_pvrdma_attach(struct broker *b, struct worker *w,
		       const struct policy_vm *vm, const struct bp_spawn *req,
		       int lfd, struct reason *why)
{
	int ret;

	if (!b->mux_path)
		return reason_fail(
			why, -EOPNOTSUPP,
			"frontend qemu-pvrdma needs rdmagate-mux (the broker "
			"runs without --mux): QEMU's pvrdma does not start "
			"without a MAD multiplexer");
	if (req->flags || req->test_syscall[0])
		return reason_fail(
			why, -EINVAL,
			"test hooks are a worker's: frontend qemu-pvrdma has "
			"none");
	/* the mux lets only QEMU's uid connect (root without vmm_uid) */
	w->uid = vm->has_vmm_uid ? vm->vmm_uid : 0;
	w->gid = vm->has_vmm_gid ? vm->vmm_gid : 0;
	ret = grant_all(b, w, vm, req, why);
	if (ret < 0) {
		/* the mux was told nothing yet (no mux id before the
		 * attach): only the addresses go */
		gids_release_vm(b, w->vm);
		return ret;
	}
	w->rdmacm_fd = lfd;
	return 0;
}

void qemu_pvrdma_attached(struct broker *b, struct worker *w,
			  struct bp_spawn_reply *rep)
{
	unsigned int i, n = 0;

	for (i = 0; i < BROKER_MAX_GIDS; i++)
		n += b->gids[i].used && !strcmp(b->gids[i].vm, w->vm);
	w->start = time(NULL);
	w->state = BP_STATE_RUNNING;
	mux_link_worker_add(b, w);
	log_info("vm %s: QEMU's own pvrdma: socket %s for uid %u, %s port %u, "
		 "%u addresses granted; attaching it to the mux",
		 w->vm, w->socket, (unsigned int)w->uid, w->device, w->port, n);
	bp_set_status(&rep->st, 0,
		      "vm %s: QEMU pvrdma attached to the mux, socket %s, %u "
		      "addresses",
		      w->vm, w->socket, n);
	rep->pid = 0;
	rep->uid = w->uid;
	rep->gid = w->gid;
}
