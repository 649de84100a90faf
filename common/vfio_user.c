// SPDX-License-Identifier: MIT
/* Names of vfio-user commands, for both ends' log lines. */
#include "vfio_user.h"

#include <stddef.h>

#define N(x) [VFIO_USER_##x] = #x
static const char *const command_names[VFIO_USER_MAX_COMMAND] = {
	N(VERSION),
	N(DMA_MAP),
	N(DMA_UNMAP),
	N(DEVICE_GET_INFO),
	N(DEVICE_GET_REGION_INFO),
	N(DEVICE_GET_REGION_IO_FDS),
	N(DEVICE_GET_IRQ_INFO),
	N(DEVICE_SET_IRQS),
	N(REGION_READ),
	N(REGION_WRITE),
	N(DMA_READ),
	N(DMA_WRITE),
	N(DEVICE_RESET),
	N(DIRTY_PAGES),
	N(REGION_WRITE_MULTI),
	N(DEVICE_FEATURE),
	N(MIG_DATA_READ),
	N(MIG_DATA_WRITE),
};
#undef N

const char *vfio_user_command_name(uint32_t command)
{
	if (command < VFIO_USER_MAX_COMMAND && command_names[command])
		return command_names[command];
	return "UNKNOWN";
}
