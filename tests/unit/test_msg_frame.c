// SPDX-License-Identifier: MIT
/*
 * The shared SEQPACKET framing (common/msg_frame.c): a decoder's error
 * quotes peer bytes and is logged by root, so it is always one line of
 * printable ASCII, whichever protocol refused the message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "common/broker_proto.h"
#include "common/msg_frame.h"
#include "common/mux_proto.h"

static void assert_one_printable_line(const char *err)
{
	for (const char *c = err; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e)
			fail_msg("byte 0x%02x at %zu in '%s'",
				 (unsigned char)*c, (size_t)(c - err), err);
}

static void test_set_err_replaces_control_and_high_bytes(void **state)
{
	char err[MSG_ERR_LEN];

	msg_set_err(err, "name '%s'", "a\nb\x1b[31m\xc2\x85z");
	assert_string_equal(err, "name 'a?b?[31m??z'");
}

/* The datagram a sender puts on the wire: header, then len payload bytes. */
static size_t wire(uint8_t *out, const struct msg_header *h, const void *pl)
{
	memcpy(out, h, sizeof(*h));
	memcpy(out + sizeof(*h), pl, h->len);
	return sizeof(*h) + h->len;
}

/* The fuzzer's first finds: a newline in a STATS vm name and a PORT_ADD
 * device name came back verbatim in the error the broker logs. */
static void test_decoders_quote_hostile_names_on_one_line(void **state)
{
	uint8_t buf[1024];
	struct bp_msg b, bout;
	struct mp_msg m, mout;
	char err[MSG_ERR_LEN];
	size_t len;

	assert_true(bp_init(&b, BP_STATS) > 0);
	memcpy(b.u.stats.vm, "vm\nbroker: forged line", 22);
	len = wire(buf, &b.h, &b.u);
	assert_int_not_equal(bp_decode(buf, len, &bout, err), 0);
	assert_non_null(strstr(err, "vm?broker: forged line"));
	assert_one_printable_line(err);

	assert_true(mp_init(&m, MP_PORT_ADD) > 0);
	memcpy(m.u.port_add.device, "rxe0\x1b]0;x\a", 10);
	m.u.port_add.port = 1;
	len = wire(buf, &m.h, &m.u);
	assert_int_not_equal(mp_decode(buf, len, MP_FROM_BROKER, &mout, err),
			     0);
	assert_non_null(strstr(err, "rxe0?]0;x?"));
	assert_one_printable_line(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_err_replaces_control_and_high_bytes),
		cmocka_unit_test(test_decoders_quote_hostile_names_on_one_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
