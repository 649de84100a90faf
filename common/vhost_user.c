// SPDX-License-Identifier: MIT
/* Names of vhost-user requests, for both ends' log lines. */
#include "vhost_user.h"

#include <stddef.h>

#define N(x) [VHOST_USER_##x] = #x
static const char *const request_names[VHOST_USER_MAX_REQUEST] = {
	N(NONE),
	N(GET_FEATURES),
	N(SET_FEATURES),
	N(SET_OWNER),
	N(RESET_OWNER),
	N(SET_MEM_TABLE),
	N(SET_LOG_BASE),
	N(SET_LOG_FD),
	N(SET_VRING_NUM),
	N(SET_VRING_ADDR),
	N(SET_VRING_BASE),
	N(GET_VRING_BASE),
	N(SET_VRING_KICK),
	N(SET_VRING_CALL),
	N(SET_VRING_ERR),
	N(GET_PROTOCOL_FEATURES),
	N(SET_PROTOCOL_FEATURES),
	N(GET_QUEUE_NUM),
	N(SET_VRING_ENABLE),
	N(SEND_RARP),
	N(NET_SET_MTU),
	N(SET_BACKEND_REQ_FD),
	N(IOTLB_MSG),
	N(SET_VRING_ENDIAN),
	N(GET_CONFIG),
	N(SET_CONFIG),
	N(CREATE_CRYPTO_SESSION),
	N(CLOSE_CRYPTO_SESSION),
	N(POSTCOPY_ADVISE),
	N(POSTCOPY_LISTEN),
	N(POSTCOPY_END),
	N(GET_INFLIGHT_FD),
	N(SET_INFLIGHT_FD),
	N(GPU_SET_SOCKET),
	N(RESET_DEVICE),
	N(VRING_KICK),
	N(GET_MAX_MEM_SLOTS),
	N(ADD_MEM_REG),
	N(REM_MEM_REG),
	N(SET_STATUS),
	N(GET_STATUS),
};
#undef N

const char *vhost_user_request_name(uint32_t request)
{
	if (request < VHOST_USER_MAX_REQUEST && request_names[request])
		return request_names[request];
	return "UNKNOWN";
}
