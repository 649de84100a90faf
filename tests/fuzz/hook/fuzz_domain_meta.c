// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the libvirt hook's domain XML parser
 * (hook/domain_meta.c), which runs as root under libvirtd.  Input: the
 * document.  Beyond "no crash, no sanitizer report, no leak" it checks the
 * parser's contract: a refusal leaves the output untouched and says what
 * was wrong in one line (control characters replaced); an accepted
 * document with our metadata names a VM the broker would accept.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/broker_proto.h"
#include "hook/domain_meta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct domain_meta m, before;
	struct reason why;
	size_t n;
	char *copy;

	/* An exact-size heap copy: ASan sees any read past the document. */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	memset(&m, 0xa5, sizeof(m));
	before = m;
	memset(&why, 0, sizeof(why));
	if (domain_meta_parse(copy, size, &m, &why) == 0) {
		if (m.present && !bp_vm_name_ok(m.s.vm))
			abort(); /* a name the broker would refuse */
	} else {
		if (memcmp(&m, &before, sizeof(m)))
			abort(); /* output touched on failure */
		n = strnlen(why.msg, sizeof(why.msg));
		if (n == 0 || n == sizeof(why.msg))
			abort(); /* no reason, or unterminated */
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)why.msg[i] < 0x20 ||
			    why.msg[i] == 0x7f)
				abort(); /* a control character in a log line */
	}
	free(copy);
	return 0;
}
