// SPDX-License-Identifier: MIT
/*
 * The vfio-user transport test function: a BAR of registers (magic,
 * scratch, counters), a register whose write raises an MSI-X vector, and a
 * DMA engine that copies between two guest addresses.  It exists to test
 * the vfio-user layer end to end without PVRDMA; it is selected only with
 * --frontend vfio-user --test-device pci-test.  Register map in
 * docs/vfio-user.md and tests/host/vfio_user/.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "worker/vfio_user/pci_fn.h"
#include "worker/vfio_user/test_fn.h"

struct test_fn {
	struct pci_fn *fn;
	uint8_t regs[TFN_BAR0_SIZE];
	uint32_t maps;	     /* DMA regions mapped now */
	uint32_t resets;     /* reset() calls */
	uint32_t master_off; /* bus_master(false) calls */
	uint8_t bounce[TFN_DMA_MAX];
};

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, sizeof(v));
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static void power_on(struct test_fn *t)
{
	memset(t->regs, 0, sizeof(t->regs));
	put32(t->regs + TFN_REG_MAGIC, TFN_MAGIC);
	put32(t->regs + TFN_REG_VERSION, TFN_VERSION);
	put32(t->regs + TFN_REG_DMA_VEC, TFN_NO_VECTOR);
}

static int tfn_create(struct pci_fn *fn, const struct dev_env *env,
		      void **ret_priv)
{
	struct test_fn *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->fn = fn;
	power_on(t);
	*ret_priv = t;
	return 0;
}

static void tfn_destroy(void *priv)
{
	free(priv);
}

static void tfn_reset(void *priv)
{
	struct test_fn *t = priv;

	power_on(t);
	t->resets++;
}

static void tfn_dma_map(void *priv, uint64_t gpa, uint64_t size)
{
	((struct test_fn *)priv)->maps++;
}

static void tfn_dma_unmap(void *priv, uint64_t gpa, uint64_t size)
{
	((struct test_fn *)priv)->maps--;
}

static void tfn_bus_master(void *priv, bool on)
{
	if (!on)
		((struct test_fn *)priv)->master_off++;
}

static int tfn_bar_read(void *priv, unsigned int bar, uint64_t off,
			unsigned int size, uint64_t *ret_val)
{
	struct test_fn *t = priv;
	uint64_t v = 0;

	if (bar != 0)
		return -EINVAL;
	put32(t->regs + TFN_REG_MAPS, t->maps);
	put32(t->regs + TFN_REG_RESETS, t->resets);
	put32(t->regs + TFN_REG_MASTER_OFF, t->master_off);
	memcpy(&v, t->regs + off, size);
	*ret_val = v;
	return 0;
}

/* Copies through a bounce buffer: the guest may make the ranges overlap. */
static int dma_copy(struct test_fn *t)
{
	const struct guest_mem *gm = pci_fn_mem(t->fn);
	uint64_t src = get64(t->regs + TFN_REG_DMA_SRC);
	uint64_t dst = get64(t->regs + TFN_REG_DMA_DST);
	uint32_t len = get32(t->regs + TFN_REG_DMA_LEN);
	struct iovec iov[GM_TABLE_REGIONS];
	unsigned int n = 0, i;
	size_t done = 0;
	int ret;

	if (!pci_fn_bus_master(t->fn))
		return -EPERM;
	if (len > TFN_DMA_MAX)
		return -E2BIG;
	ret = gm_gpa_to_iov(gm, src, len, iov, GM_TABLE_REGIONS, &n);
	for (i = 0; ret == 0 && i < n; i++) {
		memcpy(t->bounce + done, iov[i].iov_base, iov[i].iov_len);
		done += iov[i].iov_len;
	}
	n = 0;
	if (ret == 0)
		ret = gm_gpa_to_iov_w(gm, dst, len, iov, GM_TABLE_REGIONS, &n);
	for (i = 0, done = 0; ret == 0 && i < n; i++) {
		memcpy(iov[i].iov_base, t->bounce + done, iov[i].iov_len);
		done += iov[i].iov_len;
	}
	return ret;
}

static void set_status(struct test_fn *t, int err)
{
	put32(t->regs + TFN_REG_STATUS, (uint32_t)-err);
}

static int tfn_bar_write(void *priv, unsigned int bar, uint64_t off,
			 unsigned int size, uint64_t val)
{
	struct test_fn *t = priv;
	uint32_t vec;

	if (bar != 0)
		return -EINVAL;
	if (off == TFN_REG_RAISE && size == 4) {
		set_status(t, pci_fn_raise(t->fn, (uint32_t)val));
		return 0;
	}
	if (off == TFN_REG_DMA_GO && size == 4) {
		set_status(t, dma_copy(t));
		vec = get32(t->regs + TFN_REG_DMA_VEC);
		if (vec != TFN_NO_VECTOR)
			pci_fn_raise(t->fn, vec);
		return 0;
	}
	/* the writable registers; writes elsewhere are ignored */
	if ((off >= TFN_REG_SCRATCH && off + size <= TFN_REG_RAISE) ||
	    (off >= TFN_REG_DMA_SRC && off + size <= TFN_REG_DMA_GO) ||
	    (off >= TFN_REG_DMA_VEC && off + size <= TFN_REG_DMA_VEC + 4))
		memcpy(t->regs + off, &val, size);
	return 0;
}

const struct pci_fn_ops pci_test_fn_ops = {
	.name = "pci-test",
	.ids = { .vendor = TFN_VENDOR,
		 .device = TFN_DEVICE,
		 .subsys_vendor = TFN_VENDOR,
		 .subsys_device = TFN_DEVICE,
		 .class_code = TFN_CLASS,
		 .revision = 1 },
	.bars = { [0] = { .size = TFN_BAR0_SIZE },
		  [2] = { .size = TFN_BAR2_SIZE,
			  .flags = PCI_FN_BAR_MEM64 | PCI_FN_BAR_PREFETCH } },
	.msix = { .vectors = TFN_VECTORS,
		  .bar = 2,
		  .table_offset = TFN_MSIX_TABLE,
		  .pba_offset = TFN_MSIX_PBA },
	.create = tfn_create,
	.destroy = tfn_destroy,
	.bar_read = tfn_bar_read,
	.bar_write = tfn_bar_write,
	.reset = tfn_reset,
	.dma_map = tfn_dma_map,
	.dma_unmap = tfn_dma_unmap,
	.bus_master = tfn_bus_master,
};
