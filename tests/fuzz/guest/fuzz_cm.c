// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the guest simulator's CM MAD decoder (guest/cm.c).
 * Input: [mode u8][bytes]. Mode bit 0 set: the bytes are a UD receive
 * (40-byte GRH area, then the MAD) and go through cm_grh_parse() first.
 * The MAD is copied to a buffer of exactly its size, so that ASan reports
 * any read past it. Whatever decodes must encode again, and decode to the
 * same message (reserved bits dropped); a REQ's private data goes through
 * the CMA header decoder and its service id through the IP service one.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "guest/cm.h"
#include "tests/fuzz/fuzz_check.h"

static void mad_one(const uint8_t *buf, size_t len)
{
	struct reason why = { "" };
	struct cm_msg m, again;
	uint8_t out[CM_MAD_LEN];
	struct cm_ip_hdr ip;
	uint16_t ps, port;
	int r = cm_decode(buf, len, &m, &why);

	if (r) {
		FUZZ_CHECK(r == -EMSGSIZE || r == -EPROTO || r == -EOPNOTSUPP ||
			   r == -EINVAL);
		FUZZ_CHECK(why.msg[0] != '\0');
		return;
	}
	FUZZ_CHECK(len == CM_MAD_LEN);
	FUZZ_CHECK(strcmp(cm_attr_name(m.hdr.attr_id), "UNKNOWN") != 0);
	FUZZ_CHECK(cm_encode(&m, out, &why) == CM_MAD_LEN);
	FUZZ_CHECK(cm_decode(out, sizeof(out), &again, &why) == 0);
	FUZZ_CHECK(!memcmp(&m, &again, sizeof(m)));
	if (m.hdr.attr_id == CM_ATTR_REQ) {
		FUZZ_CHECK(m.req.local_qpn > 1 && m.req.path_mtu >= 1 &&
			   m.req.path_mtu <= 5);
		if (!cm_ip_decode(m.req.private_data, &ip, &why))
			FUZZ_CHECK(ip.ip_version == 4 || ip.ip_version == 6);
		if (!cm_ip_service_port(m.req.service_id, &ps, &port, &why))
			FUZZ_CHECK(cm_ip_service_id(ps, port) ==
				   m.req.service_id);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t sgid[16], dgid[16], hop, tc;
	struct reason why = { "" };
	uint32_t fl;
	uint8_t *copy;

	if (size < 1)
		return 0;
	if (data[0] & 1) {
		if (size < 1 + CM_GRH_LEN)
			return 0;
		if (!cm_grh_parse(data + 1, sgid, dgid, &hop, &tc, &fl, &why))
			FUZZ_CHECK(fl <= 0xfffff);
		data += CM_GRH_LEN;
		size -= CM_GRH_LEN;
	}
	copy = malloc(size - 1 ? size - 1 : 1);
	if (!copy)
		return 0;
	memcpy(copy, data + 1, size - 1);
	mad_one(copy, size - 1);
	free(copy);
	return 0;
}
