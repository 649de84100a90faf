/* SPDX-License-Identifier: MIT */
/* The native-verbs vm test programs' device open (vm_ibv.c). */
#ifndef RDMAGATE_TESTS_VM_LIB_VM_IBV_H
#define RDMAGATE_TESTS_VM_LIB_VM_IBV_H

#include <infiniband/verbs.h>

/* Opens the verbs device called name; NULL with errno set (ENODEV when
 * there is no such device). */
struct ibv_context *vt_ibv_open(const char *name);

#endif
