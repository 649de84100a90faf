// SPDX-License-Identifier: MIT
/*
 * Host tests of the worker's vfio-user transport: the real worker process
 * with its PCI test function (--frontend vfio-user --test-device pci-test),
 * driven by the guest simulator's vfio-user client as QEMU's vfio-user-pci
 * and a guest driver would drive it.  One fresh worker per case.
 */
#include <errno.h>
#include <linux/pci_regs.h>
#include <stdlib.h>
#include <time.h>

#include "tests/host/vfio_user/vfu_test.h"

#define NO_IRQ_MS 150

static uint32_t cfg32(const struct vfio_user_client *c, unsigned int off)
{
	uint32_t v;

	memcpy(&v, c->config + off, sizeof(v));
	return v;
}

static int handshake_describes_the_function(struct worker *w)
{
	const struct vfio_user_region_info *r;
	uint8_t cap;
	CLIENT(c);

	CHECK_OK(vft_connect(&c, w));
	printf("# server caps: max_fds %llu max_xfer %llu pgsizes %llu "
	       "max_dma_maps %llu\n",
	       (unsigned long long)c.max_fds, (unsigned long long)c.max_xfer,
	       (unsigned long long)c.pgsizes,
	       (unsigned long long)c.max_dma_maps);
	CHECK(c.major == 0 && c.minor == 0);
	CHECK(c.max_fds == VFIO_USER_MAX_FDS);
	CHECK(c.max_xfer == VFIO_USER_MAX_XFER);
	CHECK(c.pgsizes == 4096);
	CHECK(c.info.flags ==
	      (VFIO_USER_DEVICE_F_PCI | VFIO_USER_DEVICE_F_RESET));
	CHECK(c.info.num_regions == 9 && c.info.num_irqs == 3);
	r = c.regions;
	CHECK(r[0].size == TFN_BAR0_SIZE && r[2].size == TFN_BAR2_SIZE);
	CHECK(r[0].flags ==
	      (VFIO_USER_REGION_F_READ | VFIO_USER_REGION_F_WRITE));
	/* BAR3 is BAR2's upper half; ROM and VGA absent */
	CHECK(r[1].size == 0 && r[3].size == 0 && r[4].size == 0);
	CHECK(r[VFIO_USER_PCI_ROM].size == 0 && r[VFIO_USER_PCI_VGA].size == 0);
	CHECK(r[VFIO_USER_PCI_CONFIG].size == 256);
	CHECK(c.irqs[VFIO_USER_PCI_MSIX].count == TFN_VECTORS);
	CHECK(c.irqs[VFIO_USER_PCI_MSIX].flags & VFIO_USER_IRQ_INFO_F_EVENTFD);
	CHECK(c.irqs[VFIO_USER_PCI_INTX].count == 0);
	CHECK(c.irqs[VFIO_USER_PCI_MSI].count == 0);
	/* the config header */
	CHECK(cfg32(&c, PCI_VENDOR_ID) == (TFN_DEVICE << 16 | TFN_VENDOR));
	CHECK(cfg32(&c, PCI_CLASS_REVISION) == (TFN_CLASS << 8 | 1));
	CHECK(c.config[PCI_HEADER_TYPE] == 0);
	CHECK(c.config[PCI_INTERRUPT_PIN] == 0);
	CHECK(cfg32(&c, PCI_BASE_ADDRESS_0) == 0);
	CHECK(cfg32(&c, PCI_BASE_ADDRESS_2) ==
	      (PCI_BASE_ADDRESS_MEM_TYPE_64 | PCI_BASE_ADDRESS_MEM_PREFETCH));
	cap = c.msix_cap;
	CHECK(cap == 0x40);
	CHECK((c.config[cap + PCI_MSIX_FLAGS] |
	       c.config[cap + PCI_MSIX_FLAGS + 1] << 8) == TFN_VECTORS - 1);
	CHECK(cfg32(&c, cap + PCI_MSIX_TABLE) == (TFN_MSIX_TABLE | 2));
	CHECK(cfg32(&c, cap + PCI_MSIX_PBA) == (TFN_MSIX_PBA | 2));
	return 0;
}

static int bars_size_by_writing_ones(struct worker *w)
{
	uint64_t v;
	CLIENT(c);

	CHECK_OK(vft_connect(&c, w));
	CHECK_OK(vfio_user_client_cfg_write(&c, PCI_BASE_ADDRESS_0, 4,
					    0xffffffff));
	CHECK_OK(vfio_user_client_cfg_read(&c, PCI_BASE_ADDRESS_0, 4, &v));
	CHECK(v == (uint32_t) ~(TFN_BAR0_SIZE - 1));
	CHECK_OK(vfio_user_client_cfg_write(&c, PCI_BASE_ADDRESS_2, 4,
					    0xffffffff));
	CHECK_OK(vfio_user_client_cfg_write(&c, PCI_BASE_ADDRESS_3, 4,
					    0xffffffff));
	CHECK_OK(vfio_user_client_cfg_read(&c, PCI_BASE_ADDRESS_2, 8, &v));
	CHECK(v == (~(uint64_t)(TFN_BAR2_SIZE - 1) | 0xc));
	/* unimplemented BARs and read-only registers ignore writes */
	CHECK_OK(vfio_user_client_cfg_write(&c, PCI_BASE_ADDRESS_1, 4,
					    0xffffffff));
	CHECK_OK(vfio_user_client_cfg_read(&c, PCI_BASE_ADDRESS_1, 4, &v));
	CHECK(v == 0);
	CHECK_OK(vfio_user_client_cfg_write(&c, PCI_VENDOR_ID, 4, 0));
	CHECK_OK(vfio_user_client_cfg_read(&c, PCI_VENDOR_ID, 2, &v));
	CHECK(v == TFN_VENDOR);
	/* an address sticks, its low bits do not */
	CHECK_OK(vfio_user_client_cfg_write(&c, PCI_BASE_ADDRESS_0, 4,
					    0xfe001234));
	CHECK_OK(vfio_user_client_cfg_read(&c, PCI_BASE_ADDRESS_0, 4, &v));
	CHECK(v == 0xfe001000);
	/* byte-wise config reads agree with the dword */
	CHECK_OK(vfio_user_client_cfg_read(&c, PCI_BASE_ADDRESS_0 + 3, 1, &v));
	CHECK(v == 0xfe);
	return 0;
}

static int bar_registers_read_and_write(struct worker *w)
{
	uint64_t v;
	uint32_t r;
	int i;
	CLIENT(c);

	CHECK_OK(vft_connect(&c, w));
	CHECK_OK(vft_reg(&c, TFN_REG_MAGIC, &r));
	CHECK(r == TFN_MAGIC);
	CHECK_OK(vft_reg(&c, TFN_REG_VERSION, &r));
	CHECK(r == TFN_VERSION);
	/* every access size, and posted writes stay in order */
	CHECK_OK(vfio_user_client_bar_write(&c, 0, TFN_REG_SCRATCH, 8,
					    0x1122334455667788ull));
	CHECK_OK(vfio_user_client_bar_read(&c, 0, TFN_REG_SCRATCH, 8, &v));
	CHECK(v == 0x1122334455667788ull);
	CHECK_OK(vfio_user_client_bar_read(&c, 0, TFN_REG_SCRATCH + 2, 2, &v));
	CHECK(v == 0x5566);
	CHECK_OK(vfio_user_client_bar_write(&c, 0, TFN_REG_SCRATCH + 1, 1,
					    0xaa));
	CHECK_OK(vfio_user_client_bar_read(&c, 0, TFN_REG_SCRATCH, 4, &v));
	CHECK(v == 0x5566aa88);
	for (i = 0; i < 1000; i++)
		CHECK_OK(vft_reg_write(&c, TFN_REG_SCRATCH + 8, (uint32_t)i));
	CHECK_OK(vft_reg(&c, TFN_REG_SCRATCH + 8, &r));
	CHECK(r == 999);
	/* read-only registers */
	CHECK_OK(vft_reg_write(&c, TFN_REG_MAGIC, 0));
	CHECK_OK(vft_reg(&c, TFN_REG_MAGIC, &r));
	CHECK(r == TFN_MAGIC);
	/* a non-posted write is answered */
	{
		uint32_t val = 7;

		CHECK_OK(vfio_user_client_region_write(&c, 0, TFN_REG_SCRATCH,
						       &val, 4, false));
	}
	return 0;
}

static int dma_regions_map_and_unmap(struct worker *w)
{
	uint8_t src[4096], dst[4096];
	uint32_t maps, status;
	uint64_t cmd;
	size_t i;
	RAM(ram);
	CLIENT(c);

	CHECK_OK(vft_session(&c, &ram, w));
	CHECK_OK(vft_reg(&c, TFN_REG_MAPS, &maps));
	CHECK(maps == 2);
	for (i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 7 + 3);
	CHECK_OK(guest_ram_write(&ram, 0x10000, src, sizeof(src)));
	/* no bus mastering yet: the device must not DMA */
	CHECK_OK(vft_dma_copy(&c, 0x10000, VFT_HIGH_GPA + 0x2000, 4096,
			      &status));
	CHECK(status == EPERM);
	CHECK_OK(vfio_user_client_cfg_read(&c, PCI_COMMAND, 2, &cmd));
	CHECK_OK(vfio_user_client_cfg_write(&c, PCI_COMMAND, 2,
					    cmd | PCI_COMMAND_MASTER));
	CHECK_OK(vft_dma_copy(&c, 0x10000, VFT_HIGH_GPA + 0x2000, 4096,
			      &status));
	CHECK(status == 0);
	CHECK_OK(guest_ram_read(&ram, VFT_HIGH_GPA + 0x2000, dst, sizeof(dst)));
	CHECK(!memcmp(src, dst, sizeof(src)));
	/* a copy that runs off the end of a region fails cleanly */
	CHECK_OK(vft_dma_copy(&c, VFT_RAM_SIZE - 100, 0, 200, &status));
	CHECK(status == EFAULT);
	/* unmap the high region: the device loses it */
	CHECK_OK(vfio_user_client_dma_unmap(&c, VFT_HIGH_GPA, VFT_RAM_SIZE, 0));
	CHECK_OK(vft_reg(&c, TFN_REG_MAPS, &maps));
	CHECK(maps == 1);
	CHECK_OK(vft_dma_copy(&c, 0x10000, VFT_HIGH_GPA + 0x2000, 16, &status));
	CHECK(status == EFAULT);
	/* and it can come back; then UNMAP_ALL */
	CHECK_OK(vfio_user_client_dma_map(&c, &ram, 1));
	CHECK_OK(vft_dma_copy(&c, 0x10000, VFT_HIGH_GPA, 16, &status));
	CHECK(status == 0);
	CHECK_OK(vfio_user_client_dma_unmap(&c, 0, 0,
					    VFIO_USER_DMA_UNMAP_F_ALL));
	CHECK_OK(vft_reg(&c, TFN_REG_MAPS, &maps));
	CHECK(maps == 0);
	return 0;
}

static int no_irq(struct vfio_user_client *c, unsigned int vec)
{
	return vfio_user_client_irq_wait(c, vec, NO_IRQ_MS) == -ETIMEDOUT;
}

static int raise(struct vfio_user_client *c, unsigned int vec)
{
	uint32_t status;
	int r = vft_reg_write(c, TFN_REG_RAISE, vec);

	if (!r)
		r = vft_reg(c, TFN_REG_STATUS, &status);
	return r ? r : status ? -(int)status : 0;
}

static uint64_t pba_word(struct vfio_user_client *c, unsigned int w,
			 int *ret_err)
{
	uint64_t v = 0;

	*ret_err = vfio_user_client_bar_read(c, 2, TFN_MSIX_PBA + 8 * w, 8, &v);
	return v;
}

static int msix_delivers_masks_and_pends(struct worker *w)
{
	int err;
	CLIENT(c);

	CHECK_OK(vft_connect(&c, w));
	CHECK_OK(vfio_user_client_msix_enable(&c, TFN_VECTORS));
	/* every vector, both PBA words */
	CHECK_OK(raise(&c, 0));
	CHECK(vfio_user_client_irq_wait(&c, 0, H_TIMEOUT_MS) == 1);
	CHECK_OK(raise(&c, 79));
	CHECK(vfio_user_client_irq_wait(&c, 79, H_TIMEOUT_MS) == 1);
	CHECK_ERR(raise(&c, TFN_VECTORS), -EINVAL);
	/* a masked vector pends, and fires when unmasked */
	CHECK_OK(vfio_user_client_msix_mask(&c, 70, true));
	CHECK_OK(raise(&c, 70));
	CHECK(no_irq(&c, 70));
	CHECK(pba_word(&c, 1, &err) == 1ull << 6 && !err);
	CHECK_OK(vfio_user_client_msix_mask(&c, 70, false));
	CHECK(vfio_user_client_irq_wait(&c, 70, H_TIMEOUT_MS) == 1);
	CHECK(pba_word(&c, 1, &err) == 0 && !err);
	/* the function mask */
	CHECK_OK(vfio_user_client_cfg_write(&c, c.msix_cap + PCI_MSIX_FLAGS, 2,
					    PCI_MSIX_FLAGS_ENABLE |
						    PCI_MSIX_FLAGS_MASKALL));
	CHECK_OK(raise(&c, 3));
	CHECK(no_irq(&c, 3));
	CHECK(pba_word(&c, 0, &err) == 1ull << 3 && !err);
	CHECK_OK(vfio_user_client_cfg_write(&c, c.msix_cap + PCI_MSIX_FLAGS, 2,
					    PCI_MSIX_FLAGS_ENABLE));
	CHECK(vfio_user_client_irq_wait(&c, 3, H_TIMEOUT_MS) == 1);
	/* PBA writes are ignored */
	CHECK_OK(vfio_user_client_bar_write(&c, 2, TFN_MSIX_PBA, 8, ~0ull));
	CHECK(pba_word(&c, 0, &err) == 0 && !err);
	/* a vector without an eventfd pends until it gets one (QEMU) */
	CHECK_OK(vfio_user_client_set_irqs(
		&c, VFIO_USER_PCI_MSIX,
		VFIO_USER_IRQ_SET_DATA_EVENTFD |
			VFIO_USER_IRQ_SET_ACTION_TRIGGER,
		5, 1, NULL, 0));
	CHECK_OK(raise(&c, 5));
	CHECK(pba_word(&c, 0, &err) == 1ull << 5 && !err);
	CHECK_OK(vfio_user_client_set_irqs(
		&c, VFIO_USER_PCI_MSIX,
		VFIO_USER_IRQ_SET_DATA_EVENTFD |
			VFIO_USER_IRQ_SET_ACTION_TRIGGER,
		5, 1, &c.irq_fds[5], 1));
	CHECK(vfio_user_client_irq_wait(&c, 5, H_TIMEOUT_MS) == 1);
	/* SET_IRQS can trigger a vector itself (DATA_NONE, DATA_BOOL) */
	CHECK_OK(vfio_user_client_set_irqs(
		&c, VFIO_USER_PCI_MSIX,
		VFIO_USER_IRQ_SET_DATA_NONE | VFIO_USER_IRQ_SET_ACTION_TRIGGER,
		9, 1, NULL, 0));
	CHECK(vfio_user_client_irq_wait(&c, 9, H_TIMEOUT_MS) == 1);
	/* MSI-X disabled: the interrupt is lost, nothing pends */
	CHECK_OK(vfio_user_client_cfg_write(&c, c.msix_cap + PCI_MSIX_FLAGS, 2,
					    0));
	CHECK_OK(raise(&c, 1));
	CHECK(no_irq(&c, 1));
	CHECK(pba_word(&c, 0, &err) == 0 && !err);
	return 0;
}

static int dma_completion_raises_its_vector(struct worker *w)
{
	uint32_t status;
	RAM(ram);
	CLIENT(c);

	CHECK_OK(vft_session(&c, &ram, w));
	CHECK_OK(vfio_user_client_msix_enable(&c, 8));
	CHECK_OK(vft_reg_write(&c, TFN_REG_DMA_VEC, 4));
	CHECK_OK(vft_dma_copy(&c, 0, 0x1000, 64, &status));
	CHECK(status == 0);
	CHECK(vfio_user_client_irq_wait(&c, 4, H_TIMEOUT_MS) == 1);
	return 0;
}

static int reset_returns_to_power_on(struct worker *w)
{
	uint32_t r, maps;
	uint64_t v;
	RAM(ram);
	CLIENT(c);

	CHECK_OK(vft_session(&c, &ram, w));
	CHECK_OK(vfio_user_client_msix_enable(&c, 4));
	CHECK_OK(vft_reg_write(&c, TFN_REG_SCRATCH, 0x5a5a));
	CHECK_OK(vfio_user_client_msix_mask(&c, 2, true));
	CHECK_OK(vfio_user_client_reset(&c));
	CHECK_OK(vft_reg(&c, TFN_REG_SCRATCH, &r));
	CHECK(r == 0);
	CHECK_OK(vft_reg(&c, TFN_REG_RESETS, &r));
	CHECK(r == 1);
	/* DMA regions survive a device reset, as in vfio */
	CHECK_OK(vft_reg(&c, TFN_REG_MAPS, &maps));
	CHECK(maps == 2);
	CHECK_OK(vfio_user_client_cfg_read(&c, PCI_COMMAND, 2, &v));
	CHECK(v == 0);
	CHECK_OK(vfio_user_client_cfg_read(&c, c.msix_cap + PCI_MSIX_FLAGS, 2,
					   &v));
	CHECK(v == TFN_VECTORS - 1);
	CHECK_OK(vfio_user_client_bar_read(
		&c, 2, TFN_MSIX_TABLE + 2 * 16 + PCI_MSIX_ENTRY_VECTOR_CTRL, 4,
		&v));
	CHECK(v == 0);
	/* and MSI-X works again from scratch */
	CHECK_OK(vfio_user_client_msix_enable(&c, 4));
	CHECK_OK(raise(&c, 2));
	CHECK(vfio_user_client_irq_wait(&c, 2, H_TIMEOUT_MS) == 1);
	return 0;
}

static int reconnect_starts_afresh(struct worker *w)
{
	uint32_t r;
	int before, after, i;
	RAM(ram);
	CLIENT(c);

	CHECK_OK(vft_ram(&ram));
	CHECK_OK(vft_connect(&c, w));
	before = vft_fd_count(w->pid);
	CHECK(before > 0);
	for (i = 0; i < 3; i++) {
		CHECK_OK(vfio_user_client_map_ram(&c, &ram));
		CHECK_OK(vfio_user_client_msix_enable(&c, TFN_VECTORS));
		CHECK_OK(vft_reg_write(&c, TFN_REG_SCRATCH, 0x77));
		vfio_user_client_close(&c);
		CHECK_OK(vft_connect(&c, w));
		CHECK_OK(vft_reg(&c, TFN_REG_MAPS, &r));
		CHECK(r == 0);
		CHECK_OK(vft_reg(&c, TFN_REG_SCRATCH, &r));
		CHECK(r == 0);
	}
	/* every region fd and irq eventfd of the old clients is gone */
	after = vft_fd_count(w->pid);
	printf("# worker fds: %d with a client before, %d after 3 more\n",
	       before, after);
	CHECK(after == before);
	return 0;
}

static int qemu_msix_sequence_is_accepted(struct worker *w)
{
	CLIENT(c);

	CHECK_OK(vft_connect(&c, w));
	/* vfio_msix_enable: vector 0 with fd -1 to switch MSI-X on */
	CHECK_OK(vfio_user_client_set_irqs(
		&c, VFIO_USER_PCI_MSIX,
		VFIO_USER_IRQ_SET_DATA_EVENTFD |
			VFIO_USER_IRQ_SET_ACTION_TRIGGER,
		0, 1, NULL, 0));
	/* vfio_disable_interrupts at reset: count 0 disables the index */
	CHECK_OK(vfio_user_client_set_irqs(
		&c, VFIO_USER_PCI_MSIX,
		VFIO_USER_IRQ_SET_DATA_NONE | VFIO_USER_IRQ_SET_ACTION_TRIGGER,
		0, 0, NULL, 0));
	CHECK_OK(vfio_user_client_set_irqs(
		&c, VFIO_USER_PCI_INTX,
		VFIO_USER_IRQ_SET_DATA_NONE | VFIO_USER_IRQ_SET_ACTION_TRIGGER,
		0, 0, NULL, 0));
	/* QEMU's own caps, then a DEVICE_RESET as at machine reset */
	CHECK_OK(vfio_user_client_reset(&c));
	return 0;
}

static const struct h_case cases[] = {
	{ "handshake-describes-the-function",
	  handshake_describes_the_function },
	{ "bars-size-by-writing-ones", bars_size_by_writing_ones },
	{ "bar-registers-read-and-write", bar_registers_read_and_write },
	{ "dma-regions-map-and-unmap", dma_regions_map_and_unmap },
	{ "msix-delivers-masks-and-pends", msix_delivers_masks_and_pends },
	{ "dma-completion-raises-its-vector",
	  dma_completion_raises_its_vector },
	{ "reset-returns-to-power-on", reset_returns_to_power_on },
	{ "reconnect-starts-afresh", reconnect_starts_afresh },
	{ "qemu-msix-sequence-is-accepted", qemu_msix_sequence_is_accepted },
};

int main(int argc, char **argv)
{
	h_vfio_user = true;
	return h_run(argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
