/* SPDX-License-Identifier: MIT */
/*
 * Whether the broker takes up a worker's GID_ADD, decided over its address
 * table alone (pure, unit-tested): another VM's address, a VM's limit of
 * addresses, and one pending add per VM, whichever branch the add takes.
 */
#ifndef RDMAGATE_BROKER_GID_RULES_H
#define RDMAGATE_BROKER_GID_RULES_H

#include <stddef.h>
#include <stdint.h>

struct gid_entry;

enum gid_verdict {
	GID_NEW,	   /* add the address */
	GID_OWNED,	   /* the VM's already: answer for this GID */
	GID_OTHER_VM,	   /* EADDRINUSE */
	GID_SAME_PENDING,  /* EBUSY: this address is still being added */
	GID_OTHER_PENDING, /* EBUSY: another of the VM's is */
	GID_VM_FULL,	   /* ENOSPC */
};

/*
 * The verdict on vm claiming (family, addr) given the n entries of table
 * (max_per_vm addresses per VM); *ret_entry is the table's entry for the
 * address, or NULL.
 */
enum gid_verdict gid_rules_admit(const struct gid_entry *table, size_t n,
				 const char *vm, int family,
				 const uint8_t addr[16],
				 unsigned int max_per_vm,
				 const struct gid_entry **ret_entry);

/*
 * One rtnetlink message from the broker's address watch: 1 and the
 * interface, family and address (IFA_LOCAL, else IFA_ADDRESS; 4 bytes for
 * AF_INET) when it is an RTM_DELADDR of an IPv4 or IPv6 address, 0 for any
 * other message, -EINVAL when it is malformed (lengths).  Outputs written
 * only on 1.
 */
int gid_rules_deladdr(const void *msg, size_t len, int *ret_ifindex,
		      int *ret_family, uint8_t ret_addr[16]);

/*
 * The granted (not pending) entry of table for (family, addr) on ifindex:
 * the address the broker gave a VM, now removed from the host without the
 * broker's doing.  NULL when there is none (the broker's own removal, whose
 * entry is gone already; an address of nobody's).
 */
struct gid_entry *gid_rules_gone(struct gid_entry *table, size_t n, int ifindex,
				 int family, const uint8_t addr[16]);

#endif
