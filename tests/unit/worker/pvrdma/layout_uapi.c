// SPDX-License-Identifier: MIT
/* The layout table of the kernel's own <rdma/vmw_pvrdma-abi.h>. */
#include <rdma/vmw_pvrdma-abi.h>

#include "layout.h"

const size_t pvrdma_layout_uapi[] = { PVRDMA_LAYOUT_LIST(PVRDMA_LAYOUT_ENTRY) };
const size_t pvrdma_layout_uapi_count =
	sizeof(pvrdma_layout_uapi) / sizeof(pvrdma_layout_uapi[0]);
