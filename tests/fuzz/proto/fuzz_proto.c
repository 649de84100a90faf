// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for a SEQPACKET protocol decoder that root runs on input
 * from less-privileged peers: common/msg_frame.c under one protocol's table,
 * built once per protocol (-DFUZZ_PROTO = 1 control/broker_proto, 2 worker
 * channel/worker_proto, 3 mux/mux_proto).
 *
 * Input: one control byte, then the datagram.  The byte's bits 0-1 choose
 * the sender (mux: enum mp_from, as the broker, mux and worker each decode
 * what the others send; control and worker channel: which side receives),
 * bits 2-3 the number of fds that came with the datagram, bit 4 whether
 * the connection's HELLO came already, bit 5 a peer that is not root: the
 * receive helper's rules (msg_conn_decode()) run on the same datagram.
 * Beyond "no crash, no sanitizer report" it checks the decoder's contract:
 * - a refusal leaves the output untouched and says what was wrong in one
 *   NUL-terminated line (it reaches logs: no newline a peer could forge);
 * - an accepted message is a type of the table with its exact size, and
 *   decodes again, from the bytes a sender puts on the wire (header + len
 *   payload bytes), to the same container: nothing past len was read and
 *   nothing depends on state;
 * - the receive helper accepts only what the decoder accepts, to the same
 *   container, and only with the table's fd count, a sender the peer may
 *   be, a root peer for root's types and HELLO first and once.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/broker_proto.h"
#include "common/msg_frame.h"
#include "common/mux_proto.h"
#include "common/worker_proto.h"

#if FUZZ_PROTO == 1
typedef struct bp_msg container;
#define DECODE(b, n, from, m, err) bp_decode(b, n, m, err)
#define type_info		   bp_type_info
#define PROTOCOL		   bp_protocol
/* the broker's side (a client's requests) or a client's (the replies) */
#define PEER_MASK(from)                                                        \
	((from)&1 ? 1u << BP_FROM_BROKER                                       \
		  : (1u << BP_FROM_CALLER) | (1u << BP_FROM_ROOT))
#elif FUZZ_PROTO == 2
typedef struct wp_msg container;
#define DECODE(b, n, from, m, err) wp_decode(b, n, m, err)
#define type_info		   wp_type_info
#define PROTOCOL		   wp_protocol
#define PEER_MASK(from)		   ((from)&1 ? 1u << WP_FROM_BROKER : 1u << WP_FROM_WORKER)
#elif FUZZ_PROTO == 3
typedef struct mp_msg container;
/* every sender the protocol has: broker, mux, worker */
#define SENDER(from) (((from)&3) % 3 + 1)
#define DECODE(b, n, from, m, err)                                             \
	mp_decode(b, n, (enum mp_from)SENDER(from), m, err)
#define type_info	mp_type_info
#define PROTOCOL	mp_protocol
#define PEER_MASK(from) (1u << SENDER(from))
#else
#error "FUZZ_PROTO must be 1, 2 or 3"
#endif

static int decode(const void *b, size_t n, uint8_t from, container *m,
		  struct reason *err)
{
	return DECODE(b, n, from, m, err);
}

#define PAYLOAD offsetof(container, u)

static void check_refusal(const container *m, const container *before,
			  const char *err)
{
	size_t n = strnlen(err, REASON_LEN);

	if (memcmp(m, before, sizeof(*m)) != 0)
		abort(); /* output touched on failure */
	if (n == 0 || n == REASON_LEN || strchr(err, '\n') || strchr(err, '\r'))
		abort(); /* no reason, unterminated, or several lines */
}

static void check_accepted(const container *m, uint8_t from)
{
	const struct msg_type *t = type_info(m->h.type);
	uint8_t wire[sizeof(struct msg_header) + sizeof(*m)];
	container again;
	struct reason err;

	if (!t || t->size != m->h.len || m->h.len > sizeof(*m) - PAYLOAD)
		abort();
	memcpy(wire, &m->h, sizeof(m->h));
	memcpy(wire + sizeof(m->h), (const uint8_t *)m + PAYLOAD, m->h.len);
	memset(&again, 0xa5, sizeof(again));
	if (decode(wire, sizeof(m->h) + m->h.len, from, &again, &err) != 0)
		abort(); /* what it accepted, re-sent, is refused */
	if (memcmp(&again.h, &m->h, sizeof(m->h)) ||
	    memcmp((const uint8_t *)&again + PAYLOAD,
		   (const uint8_t *)m + PAYLOAD, m->h.len))
		abort(); /* decodes to something else */
}

/*
 * The receive helper on the same datagram (ctl: the control byte), given
 * the plain decoder's verdict (rc, and *plain when it accepted).
 */
static void check_conn(const uint8_t *b, size_t n, uint8_t ctl, int rc,
		       const container *plain)
{
	struct msg_conn c = {
		.p = &PROTOCOL,
		.from_mask = PEER_MASK(ctl),
		.uid = ctl & 0x20 ? 1000 : 0,
		.started = ctl & 0x10,
	};
	unsigned int nfds = (ctl >> 2) & 3;
	const struct msg_type *t;
	container m, before;
	struct reason why;
	int ret;

	memset(&m, 0xa5, sizeof(m));
	before = m;
	memset(&why, 0, sizeof(why));
	ret = msg_conn_decode(&c, b, n, nfds, &m, &why);
	if (ret != 0) {
		check_refusal(&m, &before, why.msg);
		if (c.started != !!(ctl & 0x10))
			abort(); /* a refusal moved the phase */
		return;
	}
	if (rc != 0 || memcmp(&m, plain, sizeof(m)))
		abort(); /* accepted what the decoder refused, or otherwise */
	t = type_info(m.h.type);
	if (t->fds != nfds || !(c.from_mask & (1u << t->from)))
		abort();
	if ((PROTOCOL.root_from & (1u << t->from)) && c.uid)
		abort();
	if (t->phase == MSG_FIRST && ((ctl & 0x10) || !c.started))
		abort(); /* a second HELLO, or the phase did not move */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	container m, before;
	struct reason err;
	uint8_t *copy;
	uint8_t from;
	int ret;

	if (size < 1)
		return 0;
	from = data[0];
	/* An exact-size heap copy: ASan sees any read past the datagram. */
	copy = malloc(size - 1 ? size - 1 : 1);
	if (!copy)
		return 0;
	memcpy(copy, data + 1, size - 1);
	memset(&m, 0xa5, sizeof(m));
	before = m;
	memset(&err, 0, sizeof(err));
	ret = decode(copy, size - 1, from, &m, &err);
	if (ret == 0)
		check_accepted(&m, from);
	else
		check_refusal(&m, &before, err.msg);
	check_conn(copy, size - 1, from, ret, &m);
	free(copy);
	return 0;
}
