/* SPDX-License-Identifier: MIT */
/*
 * What the mux's vm test programs share (mux_check_lib.c): result lines,
 * the mux process, the broker's control requests, a worker's MAD
 * channel, GIDs from sysfs, CM MADs.
 */
#ifndef RDMAGATE_TESTS_VM_MUX_CHECK_LIB_H
#define RDMAGATE_TESTS_VM_MUX_CHECK_LIB_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/clock.h"
#include "common/mux_proto.h"

#define CONTROL	 "/run/rdmagate-test/mux.sock"
#define GSI_QKEY 0x80010000u

extern int failures;
extern const char *mux_path;
/* GRH fields of mad_send()'s next sends */
extern uint8_t send_tclass;
extern uint32_t send_flow_label;

/* "ok: ..." and "FAIL: ..." lines; die() exits 1. */
void ok(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* An "ok:" or "FAIL:" line, and on to the next check (tests/check.h's
 * CHECK returns from the TAP case instead). */
#define EXPECT(cond, ...)                                                      \
	do {                                                                   \
		if (cond)                                                      \
			ok(__VA_ARGS__);                                       \
		else                                                           \
			fail(__VA_ARGS__);                                     \
	} while (0)

/* Starts mux_path --control CONTROL with extra args; its stderr goes to
 * err_fd (or ours when -1). */
pid_t start_mux(const char *const *extra, int err_fd);
/* Connects to the control socket, retrying while the mux starts. */
int connect_mux(pid_t pid);
/* One request (with fd_pass unless -1), its reply decoded; returns the
 * reply's status. */
int ctl(int fd, struct mp_msg *req, int fd_pass, struct mp_msg *rep);
/* One request the mux must refuse as undecodable or against its table:
 * the ERROR_REPLY's status, or -1 for any other answer (rep's text says
 * why). */
int ctl_refused(int fd, struct mp_msg *req, int fd_pass, struct mp_msg *rep);
int port_add(int fd, const char *dev, struct mp_msg *rep);
/* Attaches worker id; returns the worker's end of its socketpair. */
int attach(int fd, uint32_t id, const char *vm);
int gid_add(int fd, uint32_t id, const char *dev, const uint8_t *gid,
	    uint32_t index, struct mp_msg *rep);
struct mp_stats stats(int fd, uint32_t id);

/* The RoCE v2 GID index of addr on dev port 1 (waits up to 10 s). */
uint32_t gid_index(const char *dev, const uint8_t *addr);

void put32(uint8_t *p, uint32_t v);
uint32_t get32(const uint8_t *p);
void cm_mad(uint8_t *mad, uint16_t attr, uint32_t tid, uint32_t local,
	    uint32_t remote);
void req_mad(uint8_t *mad, uint32_t tid, uint32_t local, const uint8_t *from,
	     const uint8_t *to);
/* A worker sends a MAD: from sgid to dgid, on QP1. */
void mad_send(int wfd, const uint8_t *sgid, const uint8_t *dgid,
	      const uint8_t *mad);
/* A worker's next MAD_RECV within ms; false on timeout. */
bool mad_recv(int wfd, int ms, struct mp_mad_recv *r);
const char *gs(const uint8_t *g, char *buf);
/* mad as received equals what was sent, but for the TID's upper half. */
bool same_mad(const uint8_t *got, const uint8_t *sent);

#endif
