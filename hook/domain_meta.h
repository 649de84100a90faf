/* SPDX-License-Identifier: MIT */
/*
 * The libvirt hook's pure part: reads a libvirt domain XML document (what
 * libvirtd writes to a hook's stdin) and extracts the domain's name and
 * rdmagate's metadata element, in our namespace, as the SPAWN request the
 * hook sends to the broker.  Runs in rdmagate-libvirt-hook (root, started
 * by libvirtd); docs/libvirt-hook.md documents the namespace.
 *
 *   <metadata>
 *     <rdmagate:device xmlns:rdmagate="https://rdmagate.dev/xmlns/libvirt/1"
 *                      name="rxe0" port="1"
 *                      socket="/run/rdmagate/vm/NAME.sock">
 *       <rdmagate:address>10.99.0.10</rdmagate:address>
 *     </rdmagate:device>
 *   </metadata>
 *
 * and the level of <seclabel model='selinux'>'s <label> (libvirt's sVirt:
 * "system_u:system_r:svirt_t:s0:c1,c2"), which the worker runs at.
 *
 * The document is bounded (DOMAIN_XML_MAX) and parsed without network
 * access, DTD loading or entity substitution; a document with a DOCTYPE is
 * refused before its internal subset is read.
 */
#ifndef RDMAGATE_HOOK_DOMAIN_META_H
#define RDMAGATE_HOOK_DOMAIN_META_H

#include <stdbool.h>
#include <stddef.h>

#include "common/broker_proto.h"

#define RDMAGATE_XMLNS "https://rdmagate.dev/xmlns/libvirt/1"
#define DOMAIN_XML_MAX (4u << 20) /* bytes */

struct domain_meta {
	bool present; /* the domain has <rdmagate:device> */
	long line;    /* where that element is */
	/* <seclabel type='dynamic' model='selinux'>: libvirt's sVirt picks
	 * the QEMU's level after "prepare begin"; s.selinux_level is its
	 * <label>'s level once there, else "" */
	bool svirt_dynamic;
	struct bp_spawn s; /* vm = the domain's <name>; only if present */
};

/*
 * Parses len bytes of domain XML.  Returns 0 with *ret filled (present
 * false for a domain without our metadata: nothing else is checked then),
 * or a negative errno with why saying what is wrong and where ("domain
 * XML line 12: <rdmagate:device>: port '0': not 1..255"): -EFBIG for a
 * document over DOMAIN_XML_MAX, -EINVAL for anything else wrong, -ENOMEM.
 */
int domain_meta_parse(const char *xml, size_t len, struct domain_meta *ret,
		      struct reason *why);

#endif
