// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the broker's state record parser
 * (broker/state_record.c), which a restarted broker runs as root before it
 * signals and re-adopts workers: any bytes must parse or fail cleanly, and
 * whatever parses must write a text that parses to the same record and is
 * written again byte for byte.  A version 2 record parses with no frontend
 * and no level; the broker gives it both before it writes the record again
 * (broker/state.c adopt, adopted_level), and so does this target.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "broker/state_record.h"
#include "common/broker_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char text[STATE_RECORD_MAX + 1], again[STATE_RECORD_MAX + 1];
	struct state_record r, q;
	struct reason why;
	int n;

	if (state_record_parse((const char *)data, size, &r, &why) < 0)
		return 0;
	if (!r.frontend)
		r.frontend = BP_FRONTEND_VIRTIO_RDMA;
	if (!r.level[0])
		memcpy(r.level, "s0:c0,c1", sizeof("s0:c0,c1"));
	n = state_record_format(&r, text, sizeof(text));
	/* escaping may make a record that fitted too long to write */
	if (n == -ENOSPC)
		return 0;
	if (n < 0 || state_record_parse(text, (size_t)n, &q, &why) < 0)
		abort();
	if (state_record_format(&q, again, sizeof(again)) != n ||
	    memcmp(text, again, (size_t)n))
		abort();
	return 0;
}
