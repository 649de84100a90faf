/* SPDX-License-Identifier: MIT */
/*
 * The register map of the vfio-user transport test function (test_fn.c),
 * shared with the tests that drive it (tests/unit/worker/vfio_user,
 * tests/host/vfio_user).  BAR0: registers; BAR2 (64-bit): the MSI-X table
 * and PBA.
 */
#ifndef RDMAGATE_WORKER_VFIO_USER_TEST_FN_H
#define RDMAGATE_WORKER_VFIO_USER_TEST_FN_H

#define TFN_VENDOR 0x1b36 /* Red Hat's range for virtual devices */
#define TFN_DEVICE 0x7e57 /* not assigned: a test function */
#define TFN_CLASS  0xff0000u

#define TFN_BAR0_SIZE  4096u
#define TFN_BAR2_SIZE  8192u
#define TFN_VECTORS    80 /* more than 64: the PBA has two words */
#define TFN_MSIX_TABLE 0x0u
#define TFN_MSIX_PBA   0x1000u

#define TFN_MAGIC     0x54474452u /* "RDGT" */
#define TFN_VERSION   1u
#define TFN_NO_VECTOR 0xffffffffu
#define TFN_DMA_MAX   65536u

/* BAR0 registers (little-endian). */
#define TFN_REG_MAGIC	   0x00 /* RO 32 */
#define TFN_REG_VERSION	   0x04 /* RO 32 */
#define TFN_REG_SCRATCH	   0x08 /* RW, 16 bytes: 0x08..0x17 */
#define TFN_REG_RAISE	   0x18 /* WO 32: raise MSI-X vector N */
#define TFN_REG_STATUS	   0x1c /* RO 32: -errno of the last RAISE/DMA_GO */
#define TFN_REG_DMA_SRC	   0x20 /* RW 64: guest-physical source */
#define TFN_REG_DMA_DST	   0x28 /* RW 64: guest-physical destination */
#define TFN_REG_DMA_LEN	   0x30 /* RW 32: bytes, <= TFN_DMA_MAX */
#define TFN_REG_DMA_GO	   0x34 /* WO 32: copy, then raise DMA_VEC */
#define TFN_REG_DMA_VEC	   0x38 /* RW 32: vector raised after a copy */
#define TFN_REG_MAPS	   0x40 /* RO 32: DMA regions mapped (callbacks) */
#define TFN_REG_RESETS	   0x44 /* RO 32: device resets seen */
#define TFN_REG_MASTER_OFF 0x48 /* RO 32: bus mastering cleared (callbacks) */

#endif
