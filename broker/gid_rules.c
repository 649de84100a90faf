// SPDX-License-Identifier: MIT
/* The broker's admission rules for a GID_ADD (see broker/gid_rules.h). */
#include <errno.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>

#include "broker/broker.h"
#include "broker/gid_rules.h"

enum gid_verdict gid_rules_admit(const struct gid_entry *table, size_t n,
				 const char *vm, int family,
				 const uint8_t addr[16],
				 unsigned int max_per_vm,
				 const struct gid_entry **ret_entry)
{
	const struct gid_entry *same = NULL;
	size_t alen = family == AF_INET ? 4 : 16, i;
	unsigned int mine = 0;
	bool pending = false;

	for (i = 0; i < n; i++) {
		const struct gid_entry *e = &table[i];

		if (!e->used)
			continue;
		if (e->family == family && !memcmp(e->addr, addr, alen))
			same = e;
		if (!strcmp(e->vm, vm)) {
			mine++;
			pending |= e->pending;
		}
	}
	*ret_entry = same;
	if (same && strcmp(same->vm, vm))
		return GID_OTHER_VM;
	if (same && same->pending)
		return GID_SAME_PENDING;
	/* a worker waits for each answer: a second add while one is
	 * pending is not a guest's, whether it names a new address or
	 * re-adds one the VM owns (another GID type of it) */
	if (pending)
		return GID_OTHER_PENDING;
	if (same)
		return GID_OWNED;
	return mine >= max_per_vm ? GID_VM_FULL : GID_NEW;
}

int gid_rules_deladdr(const void *msg, size_t len, int *ret_ifindex,
		      int *ret_family, uint8_t ret_addr[16])
{
	const struct nlmsghdr *nlh = msg;
	const struct ifaddrmsg *ifa;
	const struct rtattr *rta;
	const uint8_t *local = NULL, *address = NULL;
	size_t alen;
	int rlen;

	if (len < sizeof(*nlh) || nlh->nlmsg_len < sizeof(*nlh) ||
	    nlh->nlmsg_len > len)
		return -EINVAL;
	if (nlh->nlmsg_type != RTM_DELADDR)
		return 0;
	if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(*ifa)))
		return -EINVAL;
	ifa = NLMSG_DATA(nlh);
	if (ifa->ifa_family != AF_INET && ifa->ifa_family != AF_INET6)
		return 0;
	alen = ifa->ifa_family == AF_INET ? 4 : 16;
	rlen = (int)(nlh->nlmsg_len - NLMSG_LENGTH(sizeof(*ifa)));
	for (rta = IFA_RTA(ifa); RTA_OK(rta, rlen); rta = RTA_NEXT(rta, rlen)) {
		if (RTA_PAYLOAD(rta) != alen)
			continue;
		if (rta->rta_type == IFA_LOCAL)
			local = RTA_DATA(rta);
		else if (rta->rta_type == IFA_ADDRESS)
			address = RTA_DATA(rta);
	}
	if (!local)
		local = address;
	if (!local)
		return 0;
	*ret_ifindex = (int)ifa->ifa_index;
	*ret_family = ifa->ifa_family;
	memset(ret_addr, 0, 16);
	memcpy(ret_addr, local, alen);
	return 1;
}

struct gid_entry *gid_rules_gone(struct gid_entry *table, size_t n, int ifindex,
				 int family, const uint8_t addr[16])
{
	size_t alen = family == AF_INET ? 4 : 16, i;

	for (i = 0; i < n; i++) {
		struct gid_entry *e = &table[i];

		if (e->used && !e->pending && e->family == family &&
		    e->ifindex == ifindex && !memcmp(e->addr, addr, alen))
			return e;
	}
	return NULL;
}
