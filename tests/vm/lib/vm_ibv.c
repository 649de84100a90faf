// SPDX-License-Identifier: MIT
/* The native-verbs vm test programs' device open (vm_ibv.h). */
#include "vm_ibv.h"

#include <errno.h>
#include <string.h>

struct ibv_context *vt_ibv_open(const char *name)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	int err = ENODEV;

	if (!l)
		return NULL;
	for (int i = 0; l[i]; i++) {
		if (strcmp(ibv_get_device_name(l[i]), name))
			continue;
		ctx = ibv_open_device(l[i]);
		err = ctx ? 0 : errno;
		break;
	}
	ibv_free_device_list(l);
	errno = err;
	return ctx;
}
