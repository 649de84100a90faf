// SPDX-License-Identifier: MIT
/*
 * rdmagate-mux: closes a dead worker's CM connections on its behalf.  A
 * guest's CM runs in the guest, its QPs in its worker: when the worker
 * dies (its channel closes) nobody is left to send the DREQ, so the peer
 * would keep a half of the connection until its own timers or traffic
 * noticed.  The mux knows the connections from the messages it routed
 * (mux/router.c, router_farewell()) and sends what the guest's CM would
 * have sent, through the same checks as the guest's own sends.
 */
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "mux/mux.h"
#include "mux/router.h"

/* The high half of the transaction ids of the mux's own MADs: "rdmg". */
#define FAREWELL_TID_HI 0x72646d67ull

void worker_farewell(struct mux *m, struct worker *w)
{
	static uint32_t tid_lo;
	struct mp_mad_send s;
	uint32_t cursor = 0, sent = 0, refused = 0;

	while (router_farewell(m->r, w->id, FAREWELL_TID_HI << 32 | ++tid_lo,
			       mono_ms(), &cursor, &s)) {
		struct router_verdict v;

		router_outgoing(m->r, w->id, &s, mono_ms(), &v);
		if (!v.reason)
			send_out(m, &v, &s);
		if (v.reason)
			refused++;
		else
			sent++;
		outcome(m, &v);
	}
	if (sent || refused)
		log_info("worker %u (%s): closed %u of its connections on its "
			 "behalf (DREQ or REJ to the peer)%s",
			 w->id, w->vm, sent,
			 refused ? "; some could not be sent (logged)" : "");
}
