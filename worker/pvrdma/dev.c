// SPDX-License-Identifier: MIT
/*
 * The PVRDMA function on vfio-user: BARs, registers, the DSR, guest
 * memory access and interrupts (docs/pvrdma.md). Commands are in
 * dev_cmd.c, doorbells, completions and events in dev_data.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "worker/pvrdma/dev.h"

void *pvrdma_dma_ptr(struct pvrdma_dev *d, uint64_t gpa, size_t len, bool write)
{
	const struct guest_mem *gm = pci_fn_mem(d->fn);

	/* No DMA while the guest has not enabled bus mastering. */
	if (!gm || !pci_fn_bus_master(d->fn))
		return NULL;
	/* never into a region the VMM mapped read-only (ROM) */
	return write ? gm_gpa_to_host_w(gm, gpa, len)
		     : gm_gpa_to_host(gm, gpa, len);
}

int pvrdma_dma_read(struct pvrdma_dev *d, uint64_t gpa, void *buf, size_t len)
{
	void *p = pvrdma_dma_ptr(d, gpa, len, false);

	if (!p)
		return -EFAULT;
	memcpy(buf, p, len);
	return 0;
}

int pvrdma_dma_write(struct pvrdma_dev *d, uint64_t gpa, const void *buf,
		     size_t len)
{
	void *p = pvrdma_dma_ptr(d, gpa, len, true);

	if (!p)
		return -EFAULT;
	memcpy(p, buf, len);
	return 0;
}

static int dma_read_cb(void *ctx, uint64_t gpa, void *buf, size_t len)
{
	return pvrdma_dma_read(ctx, gpa, buf, len);
}

/*
 * Every page of a ring must be guest memory now, not at first use, and
 * writable where the device writes: the state page (page 0: the device
 * stores its index there) of every ring, every page of a ring it
 * produces into.
 */
static int check_ring_pages(struct pvrdma_dev *d, const struct pvrdma_pages *p,
			    enum pvrdma_pages_use use)
{
	uint32_t i;

	for (i = 0; i < p->n; i++)
		if (!pvrdma_dma_ptr(d, p->gpa[i], PVRDMA_PAGE_SIZE,
				    i == 0 || use == PVRDMA_PAGES_RING_OUT))
			return -EFAULT;
	return 0;
}

int pvrdma_map_pages(struct pvrdma_dev *d, uint64_t pdir, uint32_t npages,
		     uint32_t max, const char *what, enum pvrdma_pages_use use,
		     struct pvrdma_pages *ret)
{
	static const struct pvrdma_pdir_ops ops = { .read_gpa = dma_read_cb };
	struct reason why;
	int r;

	r = pvrdma_pdir_walk(pdir, npages, max, &ops, d, ret, &why);
	if (r < 0) {
		log_peer_warnx("pvrdma: %s: page directory refused: %s", what,
			       why.msg);
		return r;
	}
	if (use != PVRDMA_PAGES_MR && check_ring_pages(d, ret, use) < 0) {
		log_peer_warnx("pvrdma: %s: a ring page is not guest memory "
			       "(or is read-only where the device writes)",
			       what);
		pvrdma_pages_release(ret);
		return -EFAULT;
	}
	return 0;
}

void pvrdma_raise(struct pvrdma_dev *d, unsigned int vector)
{
	d->icr |= 1u << vector;
	if (d->imr != 0 || !pci_fn_bus_master(d->fn))
		return;
	if (pci_fn_raise(d->fn, vector) == 0)
		d->stats.irqs++;
}

/* ---- DSR ---- */

static void forget_dsr(struct pvrdma_dev *d)
{
	pvrdma_pages_release(&d->async_pages);
	pvrdma_pages_release(&d->cqn_pages);
	memset(&d->async, 0, sizeof(d->async));
	memset(&d->cqn, 0, sizeof(d->cqn));
	d->dsr_ok = false;
}

static void dev_ring(struct pvrdma_ring_map *r, const struct pvrdma_pages *p,
		     uint32_t nelems, uint32_t esize)
{
	r->pages = p;
	r->state_off = PVRDMA_RING_STATE_DEV_OFFSET;
	r->data_off = PVRDMA_PAGE_SIZE;
	r->nelems = nelems;
	r->esize = esize;
}

/*
 * The slots must be guest memory now (CVE-2021-3582: short mappings), the
 * response slot writable (the device writes every answer there).
 */
static int check_slots(struct pvrdma_dev *d, const struct pvrdma_dsr_info *i)
{
	if (!pvrdma_dma_ptr(d, i->cmd_slot_dma, sizeof(union pvrdma_cmd_req),
			    false) ||
	    !pvrdma_dma_ptr(d, i->resp_slot_dma, sizeof(union pvrdma_cmd_resp),
			    true))
		return -EFAULT;
	return 0;
}

static int load_dsr(struct pvrdma_dev *d, uint64_t gpa)
{
	struct pvrdma_device_shared_region dsr;
	struct reason why;
	struct pvrdma_dsr_info info;
	int r;

	forget_dsr(d);
	r = pvrdma_dma_read(d, gpa, &dsr, sizeof(dsr));
	if (r < 0) {
		log_peer_warnx("pvrdma: DSR at 0x%llx is not guest memory",
			       (unsigned long long)gpa);
		return r;
	}
	r = pvrdma_dsr_decode(&dsr, sizeof(dsr), PVRDMA_DEVICE_VERSION, &info,
			      &why);
	if (r < 0) {
		log_peer_warnx("pvrdma: DSR at 0x%llx refused: %s",
			       (unsigned long long)gpa, why.msg);
		return r;
	}
	r = check_slots(d, &info);
	if (r < 0) {
		log_peer_warnx("pvrdma: DSR command/response slot not in guest "
			       "memory (or the response slot is read-only)");
		return r;
	}
	r = pvrdma_map_pages(d, info.async.pdir_dma, info.async.num_pages,
			     PVRDMA_DEV_RING_MAX_PAGES, "async ring",
			     PVRDMA_PAGES_RING_OUT, &d->async_pages);
	if (r < 0)
		return r;
	r = pvrdma_map_pages(d, info.cqn.pdir_dma, info.cqn.num_pages,
			     PVRDMA_DEV_RING_MAX_PAGES, "CQ notification ring",
			     PVRDMA_PAGES_RING_OUT, &d->cqn_pages);
	if (r < 0) {
		pvrdma_pages_release(&d->async_pages);
		return r;
	}
	/* The capabilities, where the driver reads them right after. */
	r = pvrdma_dma_write(
		d, gpa + offsetof(struct pvrdma_device_shared_region, caps),
		&d->caps, sizeof(d->caps));
	if (r < 0) {
		forget_dsr(d);
		return r;
	}
	dev_ring(&d->async, &d->async_pages, info.async.nelems,
		 sizeof(struct pvrdma_eqe));
	dev_ring(&d->cqn, &d->cqn_pages, info.cqn.nelems,
		 sizeof(struct pvrdma_cqne));
	d->dsr = info;
	d->dsr_ok = true;
	return 0;
}

/* ---- control ---- */

/* Back to the state after power-on (objects, DSR, registers). */
static void reset_device(struct pvrdma_dev *d, bool regs)
{
	be_reset(d->be);
	pvrdma_free_objects(d);
	forget_dsr(d);
	d->active = false;
	d->err = PVRDMA_ERR_NOT_ACTIVE;
	d->icr = 0;
	if (!regs)
		return;
	d->dsr_low = d->dsr_high = 0;
	d->imr = ~0u;
	d->macl = (uint32_t)d->cfg->mac[0] | (uint32_t)d->cfg->mac[1] << 8 |
		  (uint32_t)d->cfg->mac[2] << 16 |
		  (uint32_t)d->cfg->mac[3] << 24;
	d->mach = (uint32_t)d->cfg->mac[4] | (uint32_t)d->cfg->mac[5] << 8;
}

static void write_ctl(struct pvrdma_dev *d, uint32_t val)
{
	switch (val) {
	case PVRDMA_DEVICE_CTL_ACTIVATE:
		if (!d->dsr_ok) {
			log_peer_warnx("pvrdma: ACTIVATE without a valid DSR");
			d->err = EINVAL;
			return;
		}
		d->active = true;
		d->err = 0;
		return;
	case PVRDMA_DEVICE_CTL_UNQUIESCE:
		/*
		 * The driver reads ERR right after (link up): it is this
		 * operation's outcome, not an earlier refused command's.
		 */
		if (d->active)
			d->err = 0;
		return;
	case PVRDMA_DEVICE_CTL_RESET:
		reset_device(d, false);
		return;
	default:
		log_peer_warnx("pvrdma: unknown CTL value %u", val);
		d->err = EINVAL;
	}
}

static void write_dsr_high(struct pvrdma_dev *d, uint32_t val)
{
	int r;

	d->dsr_high = val;
	if (d->active) {
		/* The rings of live objects hang off this DSR. */
		log_peer_warnx("pvrdma: DSR change while active refused (reset "
			       "first)");
		d->err = EBUSY;
		return;
	}
	r = load_dsr(d, (uint64_t)d->dsr_high << 32 | d->dsr_low);
	d->err = r < 0 ? (uint32_t)-r : PVRDMA_ERR_NOT_ACTIVE;
}

static int reg_write(struct pvrdma_dev *d, uint64_t off, uint32_t val)
{
	switch (off) {
	case PVRDMA_REG_DSRLOW:
		d->dsr_low = val;
		return 0;
	case PVRDMA_REG_DSRHIGH:
		write_dsr_high(d, val);
		return 0;
	case PVRDMA_REG_CTL:
		write_ctl(d, val);
		return 0;
	case PVRDMA_REG_REQUEST:
		if (val == 0)
			pvrdma_exec_cmd(d);
		return 0;
	case PVRDMA_REG_IMR:
		d->imr = val;
		return 0;
	case PVRDMA_REG_MACL:
		d->macl = val;
		return 0;
	case PVRDMA_REG_MACH:
		d->mach = val & 0xffff;
		return 0;
	default:
		return 0; /* read-only or unused: ignored, as hardware */
	}
}

static uint32_t reg_read(struct pvrdma_dev *d, uint64_t off)
{
	uint32_t v;

	switch (off) {
	case PVRDMA_REG_VERSION:
		return PVRDMA_DEVICE_VERSION;
	case PVRDMA_REG_DSRLOW:
		return d->dsr_low;
	case PVRDMA_REG_DSRHIGH:
		return d->dsr_high;
	case PVRDMA_REG_ERR:
		return d->err;
	case PVRDMA_REG_ICR:
		v = d->icr;
		d->icr = 0;
		return v;
	case PVRDMA_REG_IMR:
		return d->imr;
	case PVRDMA_REG_MACL:
		return d->macl;
	case PVRDMA_REG_MACH:
		return d->mach;
	default:
		return 0;
	}
}

/* ---- pci_fn ops ---- */

static int fn_bar_read(void *priv, unsigned int bar, uint64_t off,
		       unsigned int size, uint64_t *ret_val)
{
	struct pvrdma_dev *d = priv;

	if (bar == PVRDMA_PCI_RESOURCE_UAR) {
		/* Doorbells are write-only (CVE-2018-20191: no handler). */
		*ret_val = size == 8 ? ~0ull : (1ull << (8 * size)) - 1;
		return 0;
	}
	if (bar != PVRDMA_PCI_RESOURCE_REG || size != 4)
		return -EINVAL;
	*ret_val = reg_read(d, off);
	return 0;
}

static int fn_bar_write(void *priv, unsigned int bar, uint64_t off,
			unsigned int size, uint64_t val)
{
	struct pvrdma_dev *d = priv;

	if (size != 4)
		return -EINVAL;
	if (bar == PVRDMA_PCI_RESOURCE_REG)
		return reg_write(d, off, (uint32_t)val);
	if (bar == PVRDMA_PCI_RESOURCE_UAR) {
		pvrdma_uar_write(d, off, (uint32_t)val);
		return 0;
	}
	return -EINVAL;
}

static void fn_reset(void *priv)
{
	reset_device(priv, true);
}

static void fn_dma_map(void *priv, uint64_t gpa, uint64_t size)
{
	struct pvrdma_dev *d = priv;

	(void)gpa;
	(void)size;
	be_set_mem(d->be, pci_fn_mem(d->fn));
}

/*
 * The VMM takes [gpa, gpa + size) back: the HCA must not reach it either
 * (peers' rkeys, local lkeys), so every MR over it is revoked before the
 * region is unmapped.  The device's own rings and slots are reached by GPA
 * per access and simply stop translating.
 */
static void fn_dma_unmap(void *priv, uint64_t gpa, uint64_t size)
{
	struct pvrdma_dev *d = priv;

	be_mem_revoke(d->be, gpa, size);
	be_set_mem(d->be, pci_fn_mem(d->fn));
}

/*
 * Bus mastering off: no DMA at all.  The device's own accesses stop
 * (pvrdma_dma_ptr, pvrdma_raise check the bit); the HCA's are revoked as
 * for an unmap of all guest memory: every MR is deregistered (dead until
 * the guest deregisters it or resets the device), so no peer or local
 * work request reaches guest memory, and work requests complete in error.
 * Turning it on again revives nothing: the driver resets or re-registers
 * (Linux's vmw_pvrdma clears it only when it has finished with the
 * device: remove, shutdown, a failed probe).
 */
static void fn_bus_master(void *priv, bool on)
{
	struct pvrdma_dev *d = priv;

	if (!on)
		be_mem_revoke(d->be, 0, UINT64_MAX);
}

static bool fn_wants_poll(void *priv)
{
	struct pvrdma_dev *d = priv;

	return d->cfg->busy_poll && d->active;
}

/*
 * Busy polling (while the loop spins) polls the host CQs; with doorbells
 * in shared memory every round also takes the guest's doorbells.
 */
static unsigned int fn_poll(void *priv)
{
	struct pvrdma_dev *d = priv;
	bool busy = d->cfg->busy_poll && d->active;
	unsigned int n = pvrdma_uar_scan(d, !busy);

	if (busy)
		be_poll(d->be);
	return n;
}

static int fn_bar_shm(void *priv, unsigned int bar, int *ret_fd)
{
	struct pvrdma_dev *d = priv;

	if (bar != PVRDMA_PCI_RESOURCE_UAR || !d->cfg->uar)
		return -ENOENT;
	*ret_fd = d->cfg->uar_fd;
	return 0;
}

/*
 * After activity, look for doorbells every WARM_POLL_NS for WARM_NS, then
 * every COOL_NS until IDLE_NS: a request-response guest's next doorbell
 * waits WARM_POLL_NS at most, without the loop spinning (a spin competes
 * with the guest's own vCPU for the host's cores).
 */
#define WARM_POLL_NS (50ull * 1000)
#define WARM_NS	     (100ull * 1000 * 1000)
#define COOL_NS	     (10ull * 1000 * 1000)
#define IDLE_NS	     (1000ull * 1000 * 1000)

/*
 * How long the loop may sleep: doorbells in shared memory wake nothing.
 * Within WARM_NS of the last doorbell or CQE every WARM_POLL_NS, within
 * IDLE_NS every COOL_NS, then every doorbell_poll_ms (if that is shorter,
 * always that): an idle device costs 1000 / doorbell_poll_ms wake-ups a
 * second.  A held-back CQ notification shortens the sleep to its due time.
 */
static int64_t fn_poll_timeout_ns(void *priv)
{
	struct pvrdma_dev *d = priv;
	uint64_t now, quiet, idle, t;

	if (!pvrdma_uar_shared(d) || !d->active)
		return -1;
	now = mono_ns();
	quiet = now - d->active_ns;
	idle = (uint64_t)d->cfg->doorbell_poll_ms * 1000000u;
	if (quiet < WARM_NS)
		t = WARM_POLL_NS;
	else if (quiet < IDLE_NS && idle > COOL_NS)
		t = COOL_NS;
	else
		t = idle;
	if (d->deferred_any && d->deferred_due_ns <= now)
		t = 0;
	else if (d->deferred_any && d->deferred_due_ns - now < t)
		t = d->deferred_due_ns - now;
	return (int64_t)t;
}

/* Tables of objects by handle, as many as the caps allow. */
static int alloc_tables(struct pvrdma_dev *d)
{
	d->ncqs = d->caps.max_cq + 1;
	d->nqps = d->caps.max_qp ? d->caps.max_qp : 1;
	d->nsrqs = d->caps.max_srq + 1;
	d->cqs = calloc(d->ncqs, sizeof(*d->cqs));
	d->qps = calloc(d->nqps, sizeof(*d->qps));
	d->srqs = calloc(d->nsrqs, sizeof(*d->srqs));
	if (!d->cqs || !d->qps || !d->srqs)
		return -ENOMEM;
	return 0;
}

static void set_limits(struct pvrdma_dev *d)
{
	struct pvrdma_caps_in in = {
		.attr = be_device_attr(d->be),
		.gid_tbl_len = d->gid_tbl_len,
		.max_uar = PVRDMA_UAR_PAGES,
		.max_mr_pages = PVRDMA_PAGE_DIR_MAX_PAGES,
	};
	const uint8_t *m = d->cfg->mac;
	/* EUI-64 of the MAC (U/L bit flipped), as QEMU's node GUID; the
	 * caps carry it big-endian, i.e. in this byte order in memory */
	const uint8_t eui[8] = { m[0] ^ 0x02, m[1], m[2], 0xff,
				 0xfe,	      m[3], m[4], m[5] };

	memcpy(&in.node_guid, eui, sizeof(eui));
	pvrdma_caps_encode(&in, &d->caps);
	d->lim.max_cqe = d->caps.max_cqe;
	d->lim.max_qp_wr = d->caps.max_qp_wr;
	d->lim.max_sge = d->caps.max_sge;
	d->lim.max_srq_wr = d->caps.max_srq_wr;
	d->lim.max_srq_sge = d->caps.max_srq_sge;
	d->lim.gid_tbl_len = d->caps.gid_tbl_len;
	d->lim.max_pkeys = d->caps.max_pkeys;
	d->lim.max_mr_pages = PVRDMA_PAGE_DIR_MAX_PAGES;
	/* a QP ring: state + SQ + RQ at the device's limits (u16 counts) */
	d->lim.max_ring_pages = 0xffff;
}

/* What this connection's guest made the device do (the bench reads it). */
static void log_stats(const struct pvrdma_dev *d)
{
	const struct pvrdma_stats *s = &d->stats;

	log_info("device stats: %llu commands (%llu refused), %llu doorbells "
		 "(QP send %llu, QP recv %llu, CQ arm %llu, CQ poll %llu, "
		 "SRQ %llu, other %llu), %llu CQEs (%llu notifications "
		 "not needed), %llu CQ overflows, "
		 "%llu WQEs refused, %llu events (%llu dropped), %llu "
		 "interrupts, longest polled-CQ wait %llu us; "
		 "request-response: %llu rounds, device %llu us, guest %llu "
		 "us per round; median device %llu us, guest %llu us; 90th "
		 "percentile device %llu us, guest %llu us; the SEND's own "
		 "completion after median %llu us, 90th percentile %llu us",
		 (unsigned long long)s->commands,
		 (unsigned long long)s->command_errors,
		 (unsigned long long)s->doorbells,
		 (unsigned long long)s->db[PVRDMA_DB_QP_SEND],
		 (unsigned long long)s->db[PVRDMA_DB_QP_RECV],
		 (unsigned long long)s->db[PVRDMA_DB_CQ_ARM],
		 (unsigned long long)s->db[PVRDMA_DB_CQ_POLL],
		 (unsigned long long)s->db[PVRDMA_DB_SRQ],
		 (unsigned long long)s->db[PVRDMA_DB_OTHER],
		 (unsigned long long)s->cqes,
		 (unsigned long long)s->notifies_saved,
		 (unsigned long long)s->cq_overflows,
		 (unsigned long long)s->wqe_refused,
		 (unsigned long long)s->events,
		 (unsigned long long)s->events_dropped,
		 (unsigned long long)s->irqs,
		 (unsigned long long)(s->poller_wait_max_ns / 1000),
		 (unsigned long long)s->rr_rounds,
		 (unsigned long long)(s->rr_rounds ? s->rr_device_ns /
							     s->rr_rounds / 1000
						   : 0),
		 (unsigned long long)(s->rr_rounds ? s->rr_guest_ns /
							     s->rr_rounds / 1000
						   : 0),
		 (unsigned long long)lat_hist_quantile(&s->rr_device_us, 50),
		 (unsigned long long)lat_hist_quantile(&s->rr_guest_us, 50),
		 (unsigned long long)lat_hist_quantile(&s->rr_device_us, 90),
		 (unsigned long long)lat_hist_quantile(&s->rr_guest_us, 90),
		 (unsigned long long)lat_hist_quantile(&s->rr_ack_us, 50),
		 (unsigned long long)lat_hist_quantile(&s->rr_ack_us, 90));
}

static void fn_destroy(void *priv)
{
	struct pvrdma_dev *d = priv;

	if (!d)
		return;
	log_stats(d);
	be_destroy(d->be);
	pvrdma_free_objects(d);
	forget_dsr(d);
	free(d->cqs);
	free(d->qps);
	free(d->srqs);
	free(d);
}

static int fn_create(struct pci_fn *fn, const struct dev_env *env,
		     void **ret_priv)
{
	const struct pvrdma_cfg *cfg = env->cfg;
	struct be_cfg bc = cfg->be;
	struct pvrdma_dev *d;
	int r;

	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->fn = fn;
	d->cfg = cfg;
	d->env = *env;
	pvrdma_refusal_log_init(d);
	/* QP handles index the driver's and provider's u16 tables. */
	if (bc.lim.max_qp > 0xffff)
		bc.lim.max_qp = 0xffff;
	/* the AV's gid_index is a u8: never offer an index it cannot name */
	if (bc.gid_tbl_len == 0 || bc.gid_tbl_len > BE_AV_GIDS)
		bc.gid_tbl_len = BE_AV_GIDS;
	d->gid_tbl_len = bc.gid_tbl_len;
	r = be_create(&bc, env, &pvrdma_be_ops, d, &d->be);
	if (r < 0) {
		free(d);
		return r;
	}
	be_set_mem(d->be, pci_fn_mem(fn));
	set_limits(d);
	r = alloc_tables(d);
	if (r < 0) {
		fn_destroy(d);
		return r;
	}
	reset_device(d, true);
	*ret_priv = d;
	return 0;
}

const struct pci_fn_ops pvrdma_fn_ops = {
	.name = "pvrdma",
	.ids = {
		.vendor = PVRDMA_PCI_VENDOR_ID,
		.device = PVRDMA_PCI_DEVICE_ID,
		.subsys_vendor = PVRDMA_PCI_VENDOR_ID,
		.subsys_device = PVRDMA_PCI_DEVICE_ID,
		.class_code = (uint32_t)PVRDMA_PCI_CLASS << 8,
		.revision = PVRDMA_PCI_REVISION,
	},
	.bars = {
		[PVRDMA_PCI_RESOURCE_MSIX] = { PVRDMA_BAR0_MSIX_SIZE, 0 },
		[PVRDMA_PCI_RESOURCE_REG] = { PVRDMA_BAR1_REGS_SIZE, 0 },
		[PVRDMA_PCI_RESOURCE_UAR] = { PVRDMA_BAR2_UAR_SIZE, 0 },
	},
	.msix = {
		.vectors = PVRDMA_MAX_INTERRUPTS,
		.bar = PVRDMA_PCI_RESOURCE_MSIX,
		.table_offset = PVRDMA_MSIX_TABLE_OFFSET,
		.pba_offset = PVRDMA_MSIX_PBA_OFFSET,
	},
	.create = fn_create,
	.destroy = fn_destroy,
	.bar_read = fn_bar_read,
	.bar_write = fn_bar_write,
	.reset = fn_reset,
	.dma_map = fn_dma_map,
	.dma_unmap = fn_dma_unmap,
	.bus_master = fn_bus_master,
	.wants_poll = fn_wants_poll,
	.poll = fn_poll,
	.bar_shm = fn_bar_shm,
	.poll_timeout_ns = fn_poll_timeout_ns,
};
