// SPDX-License-Identifier: MIT
/* The guest simulator's vmw_pvrdma kernel driver over the vfio-user client. */
#include "guest/pvrdma_drv.h"

#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "guest/pvrdma_wqe.h"

#define PG PVRDMA_PAGE_SIZE

/* PCI config space (type 0 header). */
#define CFG_VENDOR  0x00
#define CFG_DEVICE  0x02
#define CFG_COMMAND 0x04
#define CFG_BAR0    0x10
#define CMD_MEMORY  0x2u
#define CMD_MASTER  0x4u
#define BAR_IO	    0x1u
#define BAR_TYPE64  0x4u
#define BAR_MASK    (~0xfull)

/*
 * Where the simulated firmware places the BARs: a 32-bit MMIO window
 * below 4 GiB for BAR0 and BAR1, above guest RAM for the 64-bit BAR2,
 * each aligned to its size as PCI requires.
 */
#define MMIO32_BASE 0xe0000000ull
#define MMIO64_BASE (1ull << 40)

/* ---- page directories ---- */

void pvrdma_pdir_free(struct pvrdma_drv *drv, struct pvrdma_pdir *pd)
{
	for (uint32_t i = 0; i < pd->ntables; i++)
		drv->pages.put(drv->pages.arg, pd->table_gpa[i]);
	if (pd->dir_gpa)
		drv->pages.put(drv->pages.arg, pd->dir_gpa);
	memset(pd, 0, sizeof(*pd));
}

int pvrdma_pdir_build(struct pvrdma_drv *drv, const uint64_t *pages,
		      uint32_t npages, struct pvrdma_pdir *ret)
{
	struct pvrdma_pdir pd = { 0 };
	uint64_t *dir;
	int r;

	if (!npages || npages > PVRDMA_PAGE_DIR_MAX_PAGES)
		return -EINVAL;
	r = drv->pages.get(drv->pages.arg, &pd.dir_gpa);
	if (r)
		return r;
	dir = guest_ram_ptr(&drv->ram, pd.dir_gpa, PG);
	pd.npages = npages;
	for (uint32_t t = 0; t <= PVRDMA_PAGE_DIR_TABLE(npages - 1); t++) {
		uint32_t first = t * PVRDMA_PDIR_ENTRIES, n = npages - first;
		uint64_t *tbl;

		r = drv->pages.get(drv->pages.arg, &pd.table_gpa[t]);
		if (r) {
			pvrdma_pdir_free(drv, &pd);
			return r;
		}
		pd.ntables++;
		tbl = guest_ram_ptr(&drv->ram, pd.table_gpa[t], PG);
		if (n > PVRDMA_PDIR_ENTRIES)
			n = PVRDMA_PDIR_ENTRIES;
		memcpy(tbl, pages + first, n * sizeof(*tbl));
		dir[t] = pd.table_gpa[t];
	}
	*ret = pd;
	return 0;
}

/* ---- registers ---- */

static int reg_read(struct pvrdma_drv *drv, uint32_t reg, uint32_t *ret)
{
	uint64_t v;
	int r = vfio_user_client_bar_read(&drv->vc, PVRDMA_PCI_RESOURCE_REG,
					  reg, 4, &v);

	if (!r)
		*ret = (uint32_t)v;
	return r;
}

static int reg_write(struct pvrdma_drv *drv, uint32_t reg, uint32_t val)
{
	/* guest RAM stores before the doorbell-like register write */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return vfio_user_client_bar_write(&drv->vc, PVRDMA_PCI_RESOURCE_REG,
					  reg, 4, val);
}

int pvrdma_drv_doorbell(struct pvrdma_drv *drv, uint32_t off, uint32_t val)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return vfio_user_client_bar_write(&drv->vc, PVRDMA_PCI_RESOURCE_UAR,
					  (uint64_t)drv->uar_index * PG + off,
					  4, val);
}

/* ---- commands ---- */

int pvrdma_drv_cmd(struct pvrdma_drv *drv, const union pvrdma_cmd_req *req,
		   union pvrdma_cmd_resp *rsp)
{
	void *slot = guest_ram_ptr(&drv->ram, drv->cmd_gpa, PG);
	void *rslot = guest_ram_ptr(&drv->ram, drv->resp_gpa, PG);
	uint32_t err, want = PVRDMA_CMD_RESP(req->hdr.cmd);
	union pvrdma_cmd_resp got;
	uint64_t t0;
	int r;

	/* a device that answers nothing leaves an ack no command has */
	memset(rslot, 0, sizeof(got));
	memcpy(slot, req, sizeof(*req)); /* the whole union, as the driver */
	drv->commands++;
	t0 = mono_ms();
	r = reg_write(drv, PVRDMA_REG_REQUEST, 0);
	if (!r)
		r = reg_read(drv, PVRDMA_REG_ERR, &err);
	if (r)
		return r;
	if (err) {
		/* the driver: "failed to write request error reg" */
		fprintf(stderr, "pvrdma: command %u: ERR %u after REQUEST\n",
			req->hdr.cmd, err);
		return -EIO;
	}
	if (!rsp)
		return 0;
	r = vfio_user_client_irq_wait(&drv->vc, PVRDMA_INTR_VECTOR_RESPONSE,
				      drv->timeout_ms);
	if (r < 0) {
		fprintf(stderr,
			"pvrdma: command %u: no response interrupt (%s)\n",
			req->hdr.cmd, strerror(-r));
		return r;
	}
	/* the figure docs/pvrdma.md quotes for slow commands under TCG */
	if (mono_ms() - t0 >= PVRDMA_DRV_SLOW_CMD_MS)
		fprintf(stderr, "pvrdma: command %u took %llu ms\n",
			req->hdr.cmd, (unsigned long long)(mono_ms() - t0));
	/* one copy out of shared memory, then look at the copy */
	memcpy(&got, rslot, sizeof(got));
	if (got.hdr.ack != want) {
		fprintf(stderr,
			"pvrdma: command %u: response ack %#x, not %#x\n",
			req->hdr.cmd, got.hdr.ack, want);
		return -EPROTO;
	}
	if (got.hdr.err)
		return -(int)got.hdr.err;
	*rsp = got;
	return 0;
}

/* ---- probe ---- */

/*
 * Sizes BAR `bar` as firmware does (all ones, read back) and places it at
 * the next size-aligned address of its window: 32-bit BARs below 4 GiB,
 * 64-bit ones above guest RAM. An I/O or unimplemented BAR gets size 0.
 * *ret_is64: it took the next BAR register as its upper half.
 */
static int place_bar(struct pvrdma_drv *drv, unsigned int bar, uint64_t *b32,
		     uint64_t *b64, uint64_t *ret_size, bool *ret_is64)
{
	uint32_t off = CFG_BAR0 + 4 * bar;
	uint64_t lo, hi = 0, mask, *base;
	bool is64;
	int r;

	*ret_size = 0;
	*ret_is64 = false;
	r = vfio_user_client_cfg_read(&drv->vc, off, 4, &lo);
	if (r || (lo & BAR_IO))
		return r; /* firmware leaves I/O space alone here */
	is64 = (lo & 0x6u) == BAR_TYPE64 && bar < 5;
	r = vfio_user_client_cfg_write(&drv->vc, off, 4, 0xffffffffu);
	if (!r && is64)
		r = vfio_user_client_cfg_write(&drv->vc, off + 4, 4,
					       0xffffffffu);
	if (!r)
		r = vfio_user_client_cfg_read(&drv->vc, off, 4, &lo);
	if (!r && is64)
		r = vfio_user_client_cfg_read(&drv->vc, off + 4, 4, &hi);
	if (r)
		return r;
	mask = (hi << 32 | (lo & 0xffffffffu)) & BAR_MASK;
	if (!is64)
		mask |= 0xffffffff00000000ull;
	*ret_is64 = is64;
	if (!(mask & (is64 ? ~0ull : 0xffffffffull)))
		return 0; /* not implemented: reads back zero */
	*ret_size = ~mask + 1;
	base = is64 ? b64 : b32;
	*base = (*base + *ret_size - 1) & ~(*ret_size - 1);
	r = vfio_user_client_cfg_write(&drv->vc, off, 4, (uint32_t)*base);
	if (!r && is64)
		r = vfio_user_client_cfg_write(&drv->vc, off + 4, 4,
					       (uint32_t)(*base >> 32));
	*base += *ret_size;
	return r;
}

/*
 * What firmware does before any driver runs: every BAR sized and placed;
 * then the config space is read again (the client caches it).
 */
static int firmware_place_bars(struct pvrdma_drv *drv, uint64_t size[6])
{
	uint64_t b32 = MMIO32_BASE, b64 = MMIO64_BASE;
	bool is64;
	int r;

	for (unsigned int bar = 0; bar < 6; bar++) {
		r = place_bar(drv, bar, &b32, &b64, &size[bar], &is64);
		if (r)
			return r;
		if (is64 && bar < 5)
			size[++bar] = 0;
	}
	r = vfio_user_client_region_read(&drv->vc, VFIO_USER_PCI_CONFIG,
					 CFG_BAR0, drv->vc.config + CFG_BAR0,
					 24);
	return r < 0 ? r : 0;
}

static uint64_t bar_base(const struct pvrdma_drv *drv, unsigned int bar)
{
	const uint8_t *c = drv->vc.config;
	uint32_t lo, hi = 0;

	memcpy(&lo, c + CFG_BAR0 + 4 * bar, 4);
	if ((lo & 0x6u) == BAR_TYPE64)
		memcpy(&hi, c + CFG_BAR0 + 4 * bar + 4, 4);
	return ((uint64_t)hi << 32 | lo) & BAR_MASK;
}

static int check_function(struct pvrdma_drv *drv)
{
	const uint8_t *bars = drv->vc.config + CFG_BAR0;
	uint64_t size[6];
	uint16_t vendor, device;
	int r;

	r = firmware_place_bars(drv, size);
	if (r)
		return r;
	/* the PCI core matches the IDs, then vmw_pvrdma probes */
	memcpy(&vendor, drv->vc.config + CFG_VENDOR, 2);
	memcpy(&device, drv->vc.config + CFG_DEVICE, 2);
	if (vendor != PVRDMA_PCI_VENDOR_ID || device != PVRDMA_PCI_DEVICE_ID) {
		fprintf(stderr, "pvrdma: function %04x:%04x is not 15ad:0820\n",
			vendor, device);
		return -ENODEV;
	}
	if (!size[0] || !size[1] || (bars[0] & BAR_IO) || (bars[4] & BAR_IO)) {
		fprintf(stderr, "pvrdma: PCI BAR region not MMIO\n");
		return -ENODEV;
	}
	if (size[1] < PVRDMA_REG_MACH + 4 || size[2] < 2 * PG) {
		fprintf(stderr, "pvrdma: BAR1 %#llx or BAR2 %#llx too small\n",
			(unsigned long long)size[1],
			(unsigned long long)size[2]);
		return -ENODEV;
	}
	/* pci_enable_device() + pci_set_master() */
	return vfio_user_client_cfg_write(&drv->vc, CFG_COMMAND, 2,
					  CMD_MEMORY | CMD_MASTER);
}

static int dev_ring_init(struct pvrdma_drv *drv, struct pvrdma_dev_ring *dr,
			 uint32_t elem_size, struct pvrdma_ring_page_info *info)
{
	int r;

	for (unsigned int i = 0; i < PVRDMA_NUM_RING_PAGES; i++) {
		r = drv->pages.get(drv->pages.arg, &dr->page_gpa[i]);
		if (r)
			return r;
	}
	r = pvrdma_pdir_build(drv, dr->page_gpa, PVRDMA_NUM_RING_PAGES,
			      &dr->pdir);
	if (r)
		return r;
	dr->elem_size = elem_size;
	dr->nelems = (PVRDMA_NUM_RING_PAGES - 1) * PG / elem_size;
	info->num_pages = PVRDMA_NUM_RING_PAGES;
	info->pdir_dma = dr->pdir.dir_gpa;
	return 0;
}

static void dev_ring_free(struct pvrdma_drv *drv, struct pvrdma_dev_ring *dr)
{
	pvrdma_pdir_free(drv, &dr->pdir);
	for (unsigned int i = 0; i < PVRDMA_NUM_RING_PAGES; i++)
		if (dr->page_gpa[i])
			drv->pages.put(drv->pages.arg, dr->page_gpa[i]);
	memset(dr, 0, sizeof(*dr));
}

/* The DSR as the driver fills it, before the device sees its address. */
static int setup_dsr(struct pvrdma_drv *drv)
{
	struct pvrdma_device_shared_region *dsr;
	uint64_t uar_pfn = bar_base(drv, PVRDMA_PCI_RESOURCE_UAR) / PG;
	struct pvrdma_ring_page_info info;
	int r;

	r = drv->pages.get(drv->pages.arg, &drv->dsr_gpa);
	if (!r)
		r = drv->pages.get(drv->pages.arg, &drv->cmd_gpa);
	if (!r)
		r = drv->pages.get(drv->pages.arg, &drv->resp_gpa);
	if (r)
		return r;
	dsr = guest_ram_ptr(&drv->ram, drv->dsr_gpa, sizeof(*dsr));
	dsr->driver_version = PVRDMA_DEVICE_VERSION;
	dsr->gos_info.bits = PVRDMA_GOS_INFO_MAKE(PVRDMA_GOS_BITS_64,
						  PVRDMA_GOS_TYPE_LINUX, 1);
	if (drv->version < PVRDMA_PPN64_VERSION)
		dsr->uar_pfn = (uint32_t)uar_pfn;
	else
		dsr->uar_pfn64 = uar_pfn;
	dsr->cmd_slot_dma = drv->cmd_gpa;
	dsr->resp_slot_dma = drv->resp_gpa;
	/* built aside: the DSR is packed, its members may be unaligned */
	r = dev_ring_init(drv, &drv->async, sizeof(struct pvrdma_eqe), &info);
	if (r)
		return r;
	memcpy(&dsr->async_ring_pages, &info, sizeof(info));
	r = dev_ring_init(drv, &drv->cqn, sizeof(struct pvrdma_cqne), &info);
	if (r)
		return r;
	memcpy(&dsr->cq_ring_pages, &info, sizeof(info));
	return 0;
}

/* PVRDMA_SUPPORTED() of the driver, on the caps copied out once. */
static int check_caps(struct pvrdma_drv *drv)
{
	const struct pvrdma_device_caps *c = &drv->caps;
	bool v17 = drv->version == PVRDMA_ROCEV1_VERSION &&
		   c->gid_types == PVRDMA_GID_TYPE_FLAG_ROCE_V1;
	bool v18 = drv->version >= PVRDMA_ROCEV2_VERSION &&
		   (c->gid_types == PVRDMA_GID_TYPE_FLAG_ROCE_V1 ||
		    c->gid_types == PVRDMA_GID_TYPE_FLAG_ROCE_V2);

	if (c->mode != PVRDMA_DEVICE_MODE_ROCE || !(v17 || v18)) {
		fprintf(stderr,
			"pvrdma: driver needs RoCE v1 or v2 support "
			"(version %u, mode %u, gid_types %#x)\n",
			drv->version, c->mode, c->gid_types);
		return -EPROTO;
	}
	/* what the driver's tables and UAR allocator rely on */
	if (!c->max_qp || !c->max_cq || !c->gid_tbl_len || c->max_uar < 2 ||
	    (c->max_uar & (c->max_uar - 1))) {
		fprintf(stderr,
			"pvrdma: caps unusable (max_qp %u, max_cq %u, "
			"gid_tbl_len %u, max_uar %u)\n",
			c->max_qp, c->max_cq, c->gid_tbl_len, c->max_uar);
		return -EPROTO;
	}
	return 0;
}

static int activate(struct pvrdma_drv *drv)
{
	const struct pvrdma_device_shared_region *dsr =
		guest_ram_ptr(&drv->ram, drv->dsr_gpa, sizeof(*dsr));
	uint32_t err, v;
	int r;

	r = reg_write(drv, PVRDMA_REG_DSRLOW, (uint32_t)drv->dsr_gpa);
	if (!r)
		r = reg_write(drv, PVRDMA_REG_DSRHIGH,
			      (uint32_t)(drv->dsr_gpa >> 32));
	/*
	 * Deliberate difference: the driver reads the caps right after the
	 * DSRHIGH write, which QEMU posts; a register read first makes sure
	 * the device has handled it (docs/guest-simulator.md).
	 */
	if (!r)
		r = reg_read(drv, PVRDMA_REG_VERSION, &v);
	if (r)
		return r;
	memcpy(&drv->caps, &dsr->caps, sizeof(drv->caps));
	r = check_caps(drv);
	if (r)
		return r;
	drv->nvec = drv->vc.irqs[VFIO_USER_PCI_MSIX].count;
	if (drv->nvec > PVRDMA_MAX_INTERRUPTS)
		drv->nvec = PVRDMA_MAX_INTERRUPTS;
	if (!drv->nvec) {
		fprintf(stderr, "pvrdma: no MSI-X vectors (INTx is not "
				"simulated)\n");
		return -ENODEV;
	}
	r = vfio_user_client_msix_enable(&drv->vc, drv->nvec);
	if (!r)
		r = reg_write(drv, PVRDMA_REG_IMR, 0);
	if (!r)
		r = reg_write(drv, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_ACTIVATE);
	if (!r)
		r = reg_read(drv, PVRDMA_REG_ERR, &err);
	if (r)
		return r;
	if (err) {
		fprintf(stderr, "pvrdma: failed to activate device (ERR %u)\n",
			err);
		return -EIO;
	}
	drv->active = true;
	return 0;
}

void pvrdma_drv_init(struct pvrdma_drv *drv, const struct pvrdma_pages *p)
{
	memset(drv, 0, sizeof(*drv));
	guest_ram_init(&drv->ram);
	drv->pages = *p;
	drv->vc.fd = -1;
	drv->uar_index = 0; /* the driver's own page until CREATE_UC */
}

int pvrdma_drv_probe(struct pvrdma_drv *drv, const char *socket,
		     const struct pvrdma_drv_opts *o)
{
	int r;

	/*
	 * The device runs a command within the REQUEST write; the DMA MR
	 * pins all guest RAM, which takes seconds under TCG (see
	 * docs/pvrdma.md), so no command wait is shorter than this.
	 */
	drv->timeout_ms = o && o->timeout_ms > PVRDMA_DRV_CMD_TIMEOUT_MS
				  ? o->timeout_ms
				  : PVRDMA_DRV_CMD_TIMEOUT_MS;
	r = vfio_user_client_connect(&drv->vc, socket, drv->timeout_ms);
	if (r)
		return r;
	drv->connected = true;
	/* a client that maps no BAR: every doorbell a message (tests) */
	drv->vc.no_mmap = getenv("RDMAGATE_GUEST_NO_BAR_MMAP") != NULL;
	r = vfio_user_client_init(&drv->vc);
	if (!r)
		r = vfio_user_client_map_ram(&drv->vc, &drv->ram);
	if (!r)
		r = check_function(drv);
	if (!r)
		r = reg_read(drv, PVRDMA_REG_VERSION, &drv->version);
	if (!r)
		r = setup_dsr(drv);
	if (!r)
		r = activate(drv);
	return r;
}

void pvrdma_drv_remove(struct pvrdma_drv *drv)
{
	if (drv->connected && drv->active) {
		/* best effort: the worker may be gone */
		reg_write(drv, PVRDMA_REG_IMR, ~0u);
		vfio_user_client_msix_disable(&drv->vc);
		reg_write(drv, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_RESET);
	}
	dev_ring_free(drv, &drv->cqn);
	dev_ring_free(drv, &drv->async);
	if (drv->connected)
		vfio_user_client_close(&drv->vc);
	drv->connected = drv->active = false;
	guest_ram_release(&drv->ram);
}

/* ---- device-produced rings ---- */

static struct pvrdma_ring *dev_ring_state(struct pvrdma_drv *drv,
					  struct pvrdma_dev_ring *dr)
{
	uint8_t *p = guest_ram_ptr(&drv->ram, dr->page_gpa[0], PG);

	return (struct pvrdma_ring *)(p + PVRDMA_RING_STATE_DEV_OFFSET);
}

/* Entry i: entries start at page 1 of the ring. */
static const void *dev_ring_elem(struct pvrdma_drv *drv,
				 struct pvrdma_dev_ring *dr, uint32_t i)
{
	uint64_t off = PG + (uint64_t)i * dr->elem_size;

	return (const uint8_t *)guest_ram_ptr(&drv->ram, dr->page_gpa[off / PG],
					      PG) +
	       off % PG;
}

int pvrdma_drv_async_events(struct pvrdma_drv *drv)
{
	struct pvrdma_dev_ring *dr = &drv->async;
	struct pvrdma_ring *ring;
	uint32_t head;
	int n = 0, r;

	if (!dr->nelems)
		return 0;
	ring = dev_ring_state(drv, dr);
	while ((r = pvrdma_ring_has_data(ring, dr->nelems, &head)) > 0) {
		struct pvrdma_eqe e;

		memcpy(&e, dev_ring_elem(drv, dr, head), sizeof(e));
		if (e.type < PVRDMA_EVENT_MAX)
			drv->events[e.type]++;
		drv->async_events++;
		pvrdma_ring_inc(&ring->cons_head, dr->nelems);
		n++;
	}
	return r < 0 ? -EPROTO : n;
}

int pvrdma_drv_cq_notifications(struct pvrdma_drv *drv, int ms,
				void (*fn)(void *arg, uint32_t handle),
				void *arg)
{
	struct pvrdma_dev_ring *dr = &drv->cqn;
	struct pvrdma_ring *ring = dev_ring_state(drv, dr);
	uint32_t head;
	int n = 0, r;

	if (drv->nvec <= PVRDMA_INTR_VECTOR_CQ)
		return -EOPNOTSUPP; /* the driver gets none either */
	r = vfio_user_client_irq_wait(&drv->vc, PVRDMA_INTR_VECTOR_CQ, ms);
	if (r < 0)
		return r; /* -ETIMEDOUT: no interrupt within ms */
	while ((r = pvrdma_ring_has_data(ring, dr->nelems, &head)) > 0) {
		struct pvrdma_cqne e;

		memcpy(&e, dev_ring_elem(drv, dr, head), sizeof(e));
		drv->cq_notifications++;
		fn(arg, e.info);
		pvrdma_ring_inc(&ring->cons_head, dr->nelems);
		n++;
	}
	return r < 0 ? -EPROTO : n;
}
