// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for a SEQPACKET protocol decoder that root runs on input
 * from less-privileged peers: common/msg_frame.c under one protocol's table,
 * built once per protocol (-DFUZZ_PROTO = 1 control/broker_proto, 2 worker
 * channel/worker_proto, 3 mux/mux_proto).
 *
 * Input: one byte choosing the sender (mux: enum mp_from, as the broker,
 * mux and worker each decode what the others send), then the datagram.
 * Beyond "no crash, no sanitizer report" it checks the decoder's contract:
 * - a refusal leaves the output untouched and says what was wrong in one
 *   NUL-terminated line (it reaches logs: no newline a peer could forge);
 * - an accepted message is a type of the table with its exact size, and
 *   decodes again, from the bytes a sender puts on the wire (header + len
 *   payload bytes), to the same container: nothing past len was read and
 *   nothing depends on state.
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
#elif FUZZ_PROTO == 2
typedef struct wp_msg container;
#define DECODE(b, n, from, m, err) wp_decode(b, n, m, err)
#define type_info		   wp_type_info
#elif FUZZ_PROTO == 3
typedef struct mp_msg container;
/* every sender the protocol has: broker, mux, worker */
#define DECODE(b, n, from, m, err)                                             \
	mp_decode(b, n, (enum mp_from)((from) % 3 + 1), m, err)
#define type_info mp_type_info
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	container m, before;
	struct reason err;
	uint8_t *copy;
	uint8_t from;

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
	if (decode(copy, size - 1, from, &m, &err) == 0)
		check_accepted(&m, from);
	else
		check_refusal(&m, &before, err.msg);
	free(copy);
	return 0;
}
