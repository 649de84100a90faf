/* SPDX-License-Identifier: MIT */
/*
 * The broker's state record (what a restarted broker needs to take back
 * one running worker): its text form and its pure parser, no I/O, so the
 * parser can be unit-tested and fuzzed.  broker/state.c reads and writes
 * the files; docs/broker.md ("Restarts") describes the format.
 *
 * The text is "rdmagate-broker-state 3" then one "key value" line per
 * field.  A version 2 record (a broker before 3 wrote it) is read too: it
 * has no frontend and no level line, and the fields are 0 and "".  Every value
 * is escaped (bytes outside 0x21..0x7e, and '%', as %XX), so no field's content
 * can end its line or start another: a record says what the broker wrote,
 * whatever a caller put in a field.
 */
#ifndef RDMAGATE_BROKER_STATE_RECORD_H
#define RDMAGATE_BROKER_STATE_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "common/broker_proto.h"
#include "common/reason.h"

#define STATE_RECORD_VERSION 3
#define STATE_RECORD_MAX     8192 /* bytes of text */
#define STATE_CGROUP_MAX     512  /* a cgroup path with its NUL */
#define STATE_ADDRS_MAX	     16	  /* addresses one VM may hold */

struct state_record {
	char vm[BP_VM_SIZE];
	char socket[BP_PATH_SIZE];
	char device[BP_DEVICE_SIZE];
	char cgroup[STATE_CGROUP_MAX]; /* "" when it has none */
	char channel[BP_PATH_SIZE];
	int32_t pid;	    /* 2 .. 2^22-1 */
	uint64_t pid_start; /* /proc/PID/stat starttime */
	uint32_t uid, gid;  /* not (uint32_t)-1 */
	uint32_t port;	    /* 1..255 */
	int64_t start;	    /* seconds since the epoch, >= 0 */
	/* enum bp_frontend of a worker (virtio-rdma or pvrdma); 0 in a
	 * version 2 record */
	uint32_t frontend;
	/* its SELinux MCS level, s0:cA,cB (bp_mcs_level_check); "" in a
	 * version 2 record */
	char level[BP_LEVEL_SIZE];
	unsigned int n_addrs;
	struct {
		int family; /* AF_INET or AF_INET6 */
		uint8_t addr[16];
	} addrs[STATE_ADDRS_MAX];
};

/*
 * Writes r's text into buf (len bytes, NUL-terminated).  Returns its
 * length, or -EINVAL (r is not a valid record: the parser would refuse
 * it) or -ENOSPC.
 */
int state_record_format(const struct state_record *r, char *buf, size_t len);

/*
 * Parses len bytes of text.  Checks the header and version (2 or 3), that
 * each key is known to that version and appears once (addr up to
 * STATE_ADDRS_MAX times), every escape, and each value: the VM and device
 * names, paths absolute and without control characters, numbers in range,
 * addresses.  Returns 0, or -EINVAL with *why (may be NULL) naming the line;
 * *ret is untouched on failure.
 */
int state_record_parse(const char *buf, size_t len, struct state_record *ret,
		       struct reason *why);

#endif
