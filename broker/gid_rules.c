// SPDX-License-Identifier: MIT
/* The broker's admission rules for a GID_ADD (see broker/gid_rules.h). */
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
