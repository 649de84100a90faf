// SPDX-License-Identifier: MIT
/*
 * worker/pvrdma/dev_cmd.c built with a hole in its handler table: the
 * slot of DESTROY_SRQ, a command the decoder accepts, holds no handler
 * (DESTROY_SRQ's entry lands on QUERY_SRQ's), as a decoder that learns a
 * command before dev_cmd.c has a handler for it would leave the table.
 * unit-pvrdma-cmd-hole links this instead of the library's dev_cmd.o.
 */
#include "common/pvrdma_abi.h"

#pragma GCC diagnostic ignored "-Woverride-init"
#define PVRDMA_CMD_DESTROY_SRQ PVRDMA_CMD_QUERY_SRQ
#include "worker/pvrdma/dev_cmd.c"
