/* SPDX-License-Identifier: MIT */
/*
 * The SELinux MCS level the broker gives each VM's worker (pure,
 * unit-tested): a category pair, s0:cA,cB as libvirt's sVirt gives each
 * QEMU, derived from the worker's uid, which no two running workers share
 * (docs/selinux.md, "Per-VM MCS categories").
 */
#ifndef RDMAGATE_BROKER_MCS_LEVEL_H
#define RDMAGATE_BROKER_MCS_LEVEL_H

#include <stddef.h>
#include <stdint.h>

/* Categories c0..c1023 (the reference policy's MCS); pairs A < B. */
#define MCS_CATEGORIES 1024u
#define MCS_PAIRS      (MCS_CATEGORIES * (MCS_CATEGORIES - 1) / 2)
/* "s0:c1023,c1023" and its NUL */
#define MCS_LEVEL_SIZE 16

/*
 * The pair of uid: the (uid mod MCS_PAIRS)-th pair in the order (0,1),
 * (0,2) .. (0,1023), (1,2) ..: distinct for any MCS_PAIRS consecutive
 * uids. Writes "s0:cA,cB" into buf; returns 0, or -ENOSPC when len is
 * shorter than MCS_LEVEL_SIZE (buf untouched).
 */
int mcs_level(uint32_t uid, char *buf, size_t len);

#endif
