/* SPDX-License-Identifier: MIT */
/*
 * QP1 (GSI) emulation of the verbs backend, in the sandboxed
 * rdmagate-worker: the guest's QP1 sends become MAD_SEND messages to
 * rdmagate-mux over the worker's mux channel (common/mux_proto.h), and the
 * mux's MAD_RECV messages land in the guest's QP1 receive buffers behind a
 * 40-byte GRH area written as a RoCE device would, completing on its
 * receive CQ.  docs/worker.md ("QP1") says what is counted and refused.
 *
 * The channel belongs to the process (main.c watches it; the broker hands
 * a new one with WP_MUX_CHANNEL when the mux restarts); the backend of the
 * connected frontend, if any, registers itself on it.
 */
#ifndef RDMAGATE_WORKER_BACKEND_QP1_H
#define RDMAGATE_WORKER_BACKEND_QP1_H

#include <stdint.h>

#include "common/mux_proto.h"
#include "worker/backend/backend.h"

struct wp_counters;

/* The GRH area in front of every UD receive's payload. */
#define QP1_GRH_LEN 40
/* Datagrams read from the mux per readable event (the loop stays fair). */
#define QP1_RECV_BATCH 64

struct qp1_chan {
	int fd;			      /* the worker's end, or -1: no mux */
	uint32_t mux_worker_id;	      /* what the mux calls us (logs) */
	struct be *be;		      /* the connected backend, or NULL */
	struct wp_counters *counters; /* the process's (dropped MADs) */
};

#define QP1_CHAN_NONE                                                          \
	{                                                                      \
		.fd = -1                                                       \
	}

/*
 * A guest's QP1 send w (on the GSI QP, handle h) as MAD_SEND on the mux
 * channel, without blocking.  Returns IBV_WC_SUCCESS, or the
 * status of the guest's completion with *why saying what went wrong (no
 * mux, its queue full, a bad address vector or length, an SGE outside
 * the guest's memory).  Counts mads_sent or mad_errors.
 */
enum ibv_wc_status qp1_send(struct be *be, uint32_t h,
			    const struct be_send_wr *w, struct reason *why);

/*
 * The mux channel is readable: reads up to QP1_RECV_BATCH datagrams and
 * delivers each MAD_RECV to the device's QP1, dropping (and counting)
 * what does not decode, what has no device, QP1 or receive buffer to go
 * to.  Returns 0, or -EPIPE (closed) or -errno (broken): the
 * caller stops watching and closes it.
 */
int qp1_chan_readable(struct qp1_chan *c);

/*
 * The GRH area of a MAD received from r->sgid to r->dgid, as a RoCE
 * device writes it: an IPv6 header (next header UDP for RoCE v2, the IB
 * GRH's 0x1b for v1) when the GIDs are IPv6, else 20 zero bytes and the
 * IPv4 header (with its checksum).  Returns 0, or -EINVAL when one GID is
 * IPv4-mapped and the other is not.  Pure.
 */
int qp1_grh_build(uint8_t grh[QP1_GRH_LEN], const struct mp_mad_recv *r,
		  bool roce_v1);

#endif
